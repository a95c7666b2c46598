#include "cksum.h"

#include <string.h>

/* RFC 1071 sec. 2: the one's-complement sum does not depend on byte
 * order (sum native words, swap the folded result) and 2^16 == 1 mod
 * 0xFFFF, so 32-bit words summed into 64 bits fold to the same value as
 * 16-bit big-endian words. This runs per payload byte on every segment
 * sent and received: 4-8x fewer instructions than 16-bit steps. */
static uint64_t sum_native(const uint8_t *p, size_t len)
{
	uint64_t s = 0;
	size_t i = 0;
	for (; i + 16 <= len; i += 16) {
		uint32_t w[4];
		memcpy(w, p + i, sizeof(w));
		s += (uint64_t)w[0] + w[1] + w[2] + w[3];
	}
	for (; i + 4 <= len; i += 4) {
		uint32_t w;
		memcpy(&w, p + i, sizeof(w));
		s += w;
	}
	for (; i + 2 <= len; i += 2) {
		uint16_t h;
		memcpy(&h, p + i, sizeof(h));
		s += h;
	}
	if (i < len) {
		/* Padded with a zero byte: the byte is the word's first. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		s += p[i];
#else
		s += (uint64_t)p[i] << 8;
#endif
	}
	return s;
}

uint32_t iwn_cksum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	uint64_t s = sum_native(p, len);
	while (s >> 16)
		s = (s & 0xFFFFu) + (s >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	s = ((s >> 8) | (s << 8)) & 0xFFFFu;
#endif
	s += sum;
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
