#include "iwt_common.h"

#include <stdio.h>
#include <stdlib.h>

uint64_t iwt_seed(void)
{
	static int printed;
	const char *env = getenv("IWT_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x1badc0ffee15ULL;
	if (!printed) {
		fprintf(stderr, "IWT_SEED=%#llx\n", (unsigned long long)seed);
		printed = 1;
	}
	return seed ? seed : 1;
}

uint64_t iwt_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t iwt_rand_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + iwt_rand(s) % (hi - lo + 1);
}

void iwt_fill_random(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(iwt_rand(s) >> 56);
}

static uint8_t pattern_byte(size_t off, uint32_t tag)
{
	uint32_t x = (uint32_t)off * 2654435761u ^ tag * 40503u;
	return (uint8_t)(x >> 13 ^ x);
}

void iwt_fill_pattern(void *buf, size_t len, uint32_t tag)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(i, tag);
}

size_t iwt_check_pattern(const void *buf, size_t len, uint32_t tag)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(i, tag))
			return i;
	return len;
}
