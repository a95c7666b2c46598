#include "tcp_isn.h"

#include "common/iw_bytes.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static void sipround(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

static void compress(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sipround(s);
	sipround(s);
	s->v0 ^= m;
}

uint64_t iwn_siphash24(const uint8_t key[IWN_ISN_KEY_LEN], const uint8_t *msg, size_t len)
{
	uint64_t k0 = get_le64(key), k1 = get_le64(key + 8);
	struct sip s = {
		k0 ^ 0x736f6d6570736575ULL,
		k1 ^ 0x646f72616e646f6dULL,
		k0 ^ 0x6c7967656e657261ULL,
		k1 ^ 0x7465646279746573ULL,
	};
	size_t i = 0;
	for (; i + 8 <= len; i += 8)
		compress(&s, get_le64(msg + i));
	uint64_t last = (uint64_t)(len & 0xFF) << 56;
	for (size_t j = 0; i + j < len; j++)
		last |= (uint64_t)msg[i + j] << (8 * j);
	compress(&s, last);
	s.v2 ^= 0xFF;
	for (int r = 0; r < 4; r++)
		sipround(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint32_t iwn_tcp_isn(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
		     uint16_t rport, uint64_t now_us)
{
	uint8_t t[12];
	iw_put_be32(t, laddr);
	iw_put_be16(t + 4, lport);
	iw_put_be32(t + 6, raddr);
	iw_put_be16(t + 10, rport);
	return (uint32_t)(now_us / 4) + (uint32_t)iwn_siphash24(key, t, sizeof(t));
}
