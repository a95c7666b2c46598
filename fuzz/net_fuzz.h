/* Shared by the net/ fuzz targets (fuzz_net_hostile, fuzz_net_pair): an
 * input reader, the byte patterns the honest endpoints send, and a check
 * of every frame a host transmits, written independently of net/'s own
 * codecs so a codec bug cannot hide itself. */
#ifndef IW_FUZZ_NET_FUZZ_H
#define IW_FUZZ_NET_FUZZ_H

#include <stdbool.h>
#include <stdint.h>

#include "common/iw_bytes.h"
#include "fuzz_common.h"

/* ---- input ---- */

/* Reads past the end give zeros, so every input is a complete program. */
struct nf_in {
	const uint8_t *p;
	size_t n, i;
};

static inline bool nf_more(const struct nf_in *in)
{
	return in->i < in->n;
}

static inline uint8_t nf_u8(struct nf_in *in)
{
	return in->i < in->n ? in->p[in->i++] : 0;
}

static inline uint16_t nf_u16(struct nf_in *in)
{
	uint16_t hi = nf_u8(in);
	return (uint16_t)(hi << 8 | nf_u8(in));
}

static inline uint32_t nf_u32(struct nf_in *in)
{
	uint32_t hi = nf_u16(in);
	return hi << 16 | nf_u16(in);
}

/* Up to n input bytes into dst, zeros for the rest. */
static inline void nf_bytes(struct nf_in *in, uint8_t *dst, size_t n)
{
	for (size_t k = 0; k < n; k++)
		dst[k] = nf_u8(in);
}

/* ---- stream contents ---- */

/* Byte off of the stream keyed key: what honest senders write. */
static inline uint8_t nf_pat(uint64_t key, uint64_t off)
{
	uint64_t x = (off >> 3) * 0x9E3779B97F4A7C15ull ^ key;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off & 7)));
}

static inline void nf_fill(uint64_t key, uint64_t off, uint8_t *dst, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		dst[k] = nf_pat(key, off + k);
}

/* ---- checksums (RFC 1071), independent of net/cksum.c ---- */

static inline uint32_t nf_sum(uint32_t s, const uint8_t *p, size_t len)
{
	for (size_t k = 0; k + 1 < len; k += 2)
		s += (uint32_t)p[k] << 8 | p[k + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	return s;
}

static inline uint16_t nf_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

static inline uint32_t nf_pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint32_t len)
{
	return (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + proto + len;
}

/* Builders for what the peers send: Ethernet + IPv4 headers around a
 * payload already at frame + 34, checksums right. */
static inline void nf_eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	iw_put_be16(f + 12, type);
}

static inline void nf_ip4(uint8_t *ip, uint32_t src, uint32_t dst, uint8_t proto, uint16_t paylen)
{
	ip[0] = 0x45;
	ip[1] = 0;
	iw_put_be16(ip + 2, (uint16_t)(20 + paylen));
	iw_put_be16(ip + 4, 0);
	iw_put_be16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = proto;
	iw_put_be16(ip + 10, 0);
	iw_put_be32(ip + 12, src);
	iw_put_be32(ip + 16, dst);
	iw_put_be16(ip + 10, nf_fold(nf_sum(0, ip, 20)));
}

static inline void nf_tcp_csum(uint8_t *seg, uint32_t len, uint32_t src, uint32_t dst)
{
	iw_put_be16(seg + 16, 0);
	iw_put_be16(seg + 16, nf_fold(nf_sum(nf_pseudo(src, dst, 6, len), seg, len)));
}

/* ---- what a host transmits ---- */

struct nf_tx {
	bool is_tcp, is_arp, is_icmp;
	uint32_t src, dst; /* IPv4 */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	bool has_ws, has_ts;
	uint8_t ws;
	uint32_t tsval, tsecr;
	const uint8_t *payload;
	uint32_t plen;
};

/* Every frame a host sends must be well formed: Ethernet from its own MAC
 * to a real one, an ARP packet about itself, or IPv4 without options or
 * fragments within the MTU, from its address, with right checksums and a
 * TCP segment or ICMP echo reply inside. Aborts otherwise. */
static inline void nf_check_tx(const uint8_t *f, uint32_t len, const uint8_t mac[6], uint32_t ip, uint16_t mtu,
			       struct nf_tx *t)
{
	static const uint8_t zero[6];
	memset(t, 0, sizeof(*t));
	FUZZ_CHECK(len >= 14);
	FUZZ_CHECK(memcmp(f + 6, mac, 6) == 0);
	FUZZ_CHECK(memcmp(f, zero, 6) != 0);
	uint16_t type = iw_get_be16(f + 12);
	if (type == 0x0806) {
		FUZZ_CHECK(len == 60);
		const uint8_t *a = f + 14;
		FUZZ_CHECK(iw_get_be16(a) == 1 && iw_get_be16(a + 2) == 0x0800 && a[4] == 6 && a[5] == 4);
		uint16_t oper = iw_get_be16(a + 6);
		FUZZ_CHECK(oper == 1 || oper == 2);
		FUZZ_CHECK(memcmp(a + 8, mac, 6) == 0 && iw_get_be32(a + 14) == ip);
		t->is_arp = true;
		return;
	}
	FUZZ_CHECK(type == 0x0800);
	FUZZ_CHECK(!(f[0] & 1)); /* IPv4 goes to one station */
	FUZZ_CHECK(len >= 14 + 20);
	const uint8_t *p = f + 14;
	FUZZ_CHECK(p[0] == 0x45);
	uint32_t tot = iw_get_be16(p + 2);
	FUZZ_CHECK(tot >= 20 && tot + 14 == len && tot <= mtu);
	FUZZ_CHECK((iw_get_be16(p + 6) & 0xBFFF) == 0); /* DF at most */
	FUZZ_CHECK(nf_fold(nf_sum(0, p, 20)) == 0);
	t->src = iw_get_be32(p + 12);
	t->dst = iw_get_be32(p + 16);
	FUZZ_CHECK(t->src == ip);
	const uint8_t *s = p + 20;
	uint32_t slen = tot - 20;
	if (p[9] == 1) {
		FUZZ_CHECK(slen >= 8 && s[0] == 0 && s[1] == 0);
		FUZZ_CHECK(nf_fold(nf_sum(0, s, slen)) == 0);
		t->is_icmp = true;
		return;
	}
	FUZZ_CHECK(p[9] == 6);
	FUZZ_CHECK(slen >= 20);
	uint32_t hl = (uint32_t)(s[12] >> 4) * 4;
	FUZZ_CHECK(hl >= 20 && hl <= slen && (s[12] & 0x0F) == 0);
	FUZZ_CHECK(nf_fold(nf_sum(nf_pseudo(t->src, t->dst, 6, slen), s, slen)) == 0);
	t->is_tcp = true;
	t->sport = iw_get_be16(s);
	t->dport = iw_get_be16(s + 2);
	t->seq = iw_get_be32(s + 4);
	t->ack = iw_get_be32(s + 8);
	t->flags = s[13];
	t->win = iw_get_be16(s + 14);
	t->payload = s + hl;
	t->plen = slen - hl;
	FUZZ_CHECK(t->sport != 0 && t->dport != 0);
	FUZZ_CHECK((t->flags & 0xE0) == 0); /* no URG, ECE, CWR */
	FUZZ_CHECK(iw_get_be16(s + 18) == 0);
	bool syn = t->flags & 0x02, rst = t->flags & 0x04;
	FUZZ_CHECK(!(syn && (rst || (t->flags & 0x01))));
	FUZZ_CHECK(!(rst && t->plen));
	FUZZ_CHECK(!(syn && t->plen));
	/* Options: well formed, known ones at their lengths, SYN-only ones
	 * only on a SYN. */
	const uint8_t *o = s + 20;
	uint32_t olen = hl - 20, i = 0;
	while (i < olen) {
		uint8_t kind = o[i];
		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		FUZZ_CHECK(i + 1 < olen);
		uint8_t l = o[i + 1];
		FUZZ_CHECK(l >= 2 && i + l <= olen);
		switch (kind) {
		case 2:
			FUZZ_CHECK(l == 4 && syn && iw_get_be16(o + i + 2) >= 1);
			break;
		case 3:
			FUZZ_CHECK(l == 3 && syn && o[i + 2] <= 14);
			t->has_ws = true;
			t->ws = o[i + 2];
			break;
		case 4:
			FUZZ_CHECK(l == 2 && syn);
			break;
		case 5:
			FUZZ_CHECK(l >= 10 && (l - 2) % 8 == 0 && !syn && !rst);
			break;
		case 8:
			FUZZ_CHECK(l == 10 && !rst);
			t->has_ts = true;
			t->tsval = iw_get_be32(o + i + 2);
			t->tsecr = iw_get_be32(o + i + 6);
			break;
		default:
			FUZZ_CHECK(!"unknown option sent");
		}
		i += l;
	}
}

#endif
