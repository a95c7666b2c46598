/* Shared bits of the fuzz targets: a check that aborts (asserts may be
 * compiled out), a small PRNG for chunking decisions, and guard bytes. */
#ifndef IW_FUZZ_COMMON_H
#define IW_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* splitmix64: deterministic per input, so a crash reproduces. */
static inline uint64_t fuzz_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform-ish in [lo, hi]. */
static inline size_t fuzz_range(uint64_t *s, size_t lo, size_t hi)
{
	return lo + (size_t)(fuzz_rand(s) % (uint64_t)(hi - lo + 1));
}

#define FUZZ_GUARD_BYTE 0xA5

static inline int fuzz_guard_ok(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != FUZZ_GUARD_BYTE)
			return 0;
	return 1;
}

/* True when [p, p+len) lies inside [base, base+cap). */
static inline int fuzz_within(const void *p, size_t len, const void *base, size_t cap)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
	return a >= b && a - b <= cap && len <= cap - (a - b);
}

#endif
