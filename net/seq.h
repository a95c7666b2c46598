/* TCP sequence-number arithmetic modulo 2^32 (RFC 9293 sec. 3.4). */
#ifndef IWN_SEQ_H
#define IWN_SEQ_H

#include <stdbool.h>
#include <stdint.h>

static inline bool iwn_seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}
static inline bool iwn_seq_le(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}
static inline bool iwn_seq_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}
static inline bool iwn_seq_ge(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}
static inline uint32_t iwn_seq_max(uint32_t a, uint32_t b)
{
	return iwn_seq_gt(a, b) ? a : b;
}
static inline uint32_t iwn_seq_min(uint32_t a, uint32_t b)
{
	return iwn_seq_lt(a, b) ? a : b;
}

#endif
