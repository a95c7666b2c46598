#include "cksum.h"

uint32_t iwn_cksum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	uint64_t s = sum;
	size_t i = 0;
	for (; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < len)
		s += (uint32_t)p[i] << 8;
	/* Keep the carries in 32 bits for the next piece. */
	while (s >> 32)
		s = (s & 0xFFFFFFFFu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t iwn_cksum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}
