#include "cap_frame.h"

#include <string.h>

#include "iw_bytes.h"

/* Numeric, so that users need not include libpcap's headers. */
enum {
	LT_NULL = 0,
	LT_EN10MB = 1,
	LT_RAW_DLT = 12,
	LT_RAW_DLT_OPENBSD = 14,
	LT_RAW = 101,
	LT_LOOP = 108,
	LT_LINUX_SLL = 113,
	LT_IPV4 = 228,
	LT_IPV6 = 229,
	LT_LINUX_SLL2 = 276,
};

#define ETH_HLEN 14
#define SLL_HLEN 16
#define SLL2_HLEN 20
#define NULL_HLEN 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88A8
#define ETHERTYPE_QINQ_OLD 0x9100
#define PROTO_TCP 6
#define IP6_HOPOPTS 0
#define IP6_ROUTING 43
#define IP6_FRAGMENT 44
#define IP6_AH 51
#define IP6_DSTOPTS 60

bool iwc_link_supported(int linktype)
{
	switch (linktype) {
	case LT_NULL:
	case LT_EN10MB:
	case LT_RAW_DLT:
	case LT_RAW_DLT_OPENBSD:
	case LT_RAW:
	case LT_LOOP:
	case LT_LINUX_SLL:
	case LT_IPV4:
	case LT_IPV6:
	case LT_LINUX_SLL2:
		return true;
	default:
		return false;
	}
}

/* f: the frame, have: captured bytes, off: where TCP starts, tcp_len: TCP
 * header + payload as the IP header says. */
static enum iwc_kind parse_tcp(const uint8_t *f, size_t have, size_t off, size_t tcp_len, struct iwc_frame *o)
{
	const uint8_t *t = f + off;
	size_t hlen, cap;

	if (tcp_len < 20 || have < off + 20)
		return IWC_BAD;
	hlen = (size_t)(t[12] >> 4) * 4;
	if (hlen < 20 || hlen > tcp_len || off + hlen > have)
		return IWC_BAD;
	o->tcp_off = off;
	o->sport = iw_get_be16(t);
	o->dport = iw_get_be16(t + 2);
	o->seq = iw_get_be32(t + 4);
	o->ack = iw_get_be32(t + 8);
	o->flags = t[13];
	o->pay_off = off + hlen;
	cap = have - off < tcp_len ? have - off : tcp_len;
	o->pay_len = cap - hlen;
	o->missing = tcp_len - hlen - o->pay_len;
	return IWC_TCP;
}

static enum iwc_kind parse_ip4(const uint8_t *f, size_t have, size_t off, struct iwc_frame *o)
{
	const uint8_t *p = f + off;
	size_t ihl, total;

	if (have < off + 20 || (p[0] >> 4) != 4)
		return IWC_BAD;
	ihl = (size_t)(p[0] & 0x0F) * 4;
	total = iw_get_be16(p + 2);
	if (total == 0) /* TSO capture: trust what was captured */
		total = have - off;
	if (ihl < 20 || total < ihl || have < off + ihl)
		return IWC_BAD;
	if (p[9] != PROTO_TCP)
		return IWC_OTHER;
	if (iw_get_be16(p + 6) & 0x3FFF) /* MF or a fragment offset: not reassembled */
		return IWC_OTHER;
	o->family = 4;
	o->ip_off = off;
	memcpy(o->src, p + 12, 4);
	memcpy(o->dst, p + 16, 4);
	return parse_tcp(f, have, off + ihl, total - ihl, o);
}

static enum iwc_kind parse_ip6(const uint8_t *f, size_t have, size_t off, struct iwc_frame *o)
{
	const uint8_t *p = f + off;
	size_t ext = 40, plen;
	uint8_t nh;

	if (have < off + 40 || (p[0] >> 4) != 6)
		return IWC_BAD;
	plen = iw_get_be16(p + 4);
	if (plen == 0) /* jumbogram or TSO: take what was captured */
		plen = have - off - 40;
	nh = p[6];
	for (int i = 0; i < 8 && nh != PROTO_TCP; i++) {
		size_t l;

		if (nh == IP6_FRAGMENT)
			return IWC_OTHER;
		if (nh != IP6_HOPOPTS && nh != IP6_ROUTING && nh != IP6_DSTOPTS && nh != IP6_AH)
			return IWC_OTHER;
		if (have < off + ext + 8 || plen < ext - 40 + 8)
			return IWC_BAD;
		l = nh == IP6_AH ? ((size_t)p[ext + 1] + 2) * 4 : ((size_t)p[ext + 1] + 1) * 8;
		nh = p[ext];
		ext += l;
		if (ext - 40 > plen || off + ext > have)
			return IWC_BAD;
	}
	if (nh != PROTO_TCP)
		return IWC_OTHER;
	o->family = 6;
	o->ip_off = off;
	memcpy(o->src, p + 8, 16);
	memcpy(o->dst, p + 24, 16);
	return parse_tcp(f, have, off + ext, plen - (ext - 40), o);
}

static enum iwc_kind parse_l3(uint16_t ethertype, const uint8_t *f, size_t have, size_t off, struct iwc_frame *o)
{
	if (ethertype == ETHERTYPE_IPV4)
		return parse_ip4(f, have, off, o);
	if (ethertype == ETHERTYPE_IPV6)
		return parse_ip6(f, have, off, o);
	return IWC_OTHER;
}

/* Raw IP: the version nibble decides. */
static enum iwc_kind parse_raw(const uint8_t *f, size_t have, size_t off, struct iwc_frame *o)
{
	if (have < off + 1)
		return IWC_BAD;
	switch (f[off] >> 4) {
	case 4:
		return parse_ip4(f, have, off, o);
	case 6:
		return parse_ip6(f, have, off, o);
	default:
		return IWC_OTHER;
	}
}

static enum iwc_kind parse_ether(const uint8_t *f, size_t have, struct iwc_frame *o)
{
	size_t off = 12;
	uint16_t type;

	if (have < ETH_HLEN)
		return IWC_BAD;
	type = iw_get_be16(f + off);
	/* Up to two VLAN tags (802.1Q, 802.1ad). */
	for (int i = 0; i < 2 && (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ || type == ETHERTYPE_QINQ_OLD);
	     i++) {
		off += 4;
		if (have < off + 2)
			return IWC_BAD;
		type = iw_get_be16(f + off);
	}
	return parse_l3(type, f, have, off + 2, o);
}

enum iwc_kind iwc_parse(int linktype, const uint8_t *f, size_t caplen, struct iwc_frame *o)
{
	memset(o, 0, sizeof(*o));
	switch (linktype) {
	case LT_EN10MB:
		return parse_ether(f, caplen, o);
	case LT_LINUX_SLL:
		if (caplen < SLL_HLEN)
			return IWC_BAD;
		return parse_l3(iw_get_be16(f + 14), f, caplen, SLL_HLEN, o);
	case LT_LINUX_SLL2:
		if (caplen < SLL2_HLEN)
			return IWC_BAD;
		return parse_l3(iw_get_be16(f), f, caplen, SLL2_HLEN, o);
	case LT_RAW_DLT:
	case LT_RAW_DLT_OPENBSD:
	case LT_RAW:
	case LT_IPV4:
	case LT_IPV6:
		return parse_raw(f, caplen, 0, o);
	case LT_NULL:
	case LT_LOOP:
		/* The address family's byte order varies; the IP version
		 * nibble that follows does not. */
		if (caplen < NULL_HLEN)
			return IWC_BAD;
		return parse_raw(f, caplen, NULL_HLEN, o);
	default:
		return IWC_OTHER;
	}
}
