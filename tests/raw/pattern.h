/* The byte at stream offset i of a test stream with seed s: both ends of
 * the raw TCP tests compute it, so every byte is checked in place (a lost,
 * repeated or moved byte shows up at its offset). */
#ifndef IWT_RAW_PATTERN_H
#define IWT_RAW_PATTERN_H

#include <stdint.h>

static inline uint8_t iwt_pattern_byte(uint64_t s, uint64_t i)
{
	uint64_t z = s * 0x9e3779b97f4a7c15ull + (i >> 3) + 1;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint8_t)(z >> ((i & 7) * 8));
}

static inline void iwt_pattern_fill(uint64_t s, uint64_t off, uint8_t *p, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		p[k] = iwt_pattern_byte(s, off + k);
}

/* Offset of the first mismatch in p (n bytes at stream offset off), or -1. */
static inline int64_t iwt_pattern_check(uint64_t s, uint64_t off, const uint8_t *p, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (p[k] != iwt_pattern_byte(s, off + k))
			return (int64_t)(off + k);
	return -1;
}

#endif
