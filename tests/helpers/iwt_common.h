/* Small shared test utilities: a seeded PRNG so failures reproduce, and
 * byte-pattern helpers. */
#ifndef IWT_COMMON_H
#define IWT_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Seed from IWT_SEED in the environment, else a fixed default; the seed is
 * printed once so a failing run can be repeated. */
uint64_t iwt_seed(void);

/* xorshift64* PRNG. */
uint64_t iwt_rand(uint64_t *state);
/* Uniform in [lo, hi]. */
uint64_t iwt_rand_range(uint64_t *state, uint64_t lo, uint64_t hi);
void iwt_fill_random(uint64_t *state, void *buf, size_t len);
/* Deterministic pattern derived from (tag, offset), checkable later. */
void iwt_fill_pattern(void *buf, size_t len, uint32_t tag);
/* Index of the first byte that differs from the pattern, or len. */
size_t iwt_check_pattern(const void *buf, size_t len, uint32_t tag);

#endif
