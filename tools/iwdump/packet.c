/* Link layer (Ethernet with VLAN tags, Linux cooked SLL/SLL2, raw IP, BSD
 * loopback), IPv4 / IPv6 and TCP header parsing. Lengths come from the IP
 * header, so Ethernet padding is never taken for payload; bytes the
 * snapshot length cut off are counted as missing. */
#include <pcap/pcap.h>
#include <string.h>
#include <sys/socket.h>

#include "iw_bytes.h"
#include "iwdump.h"

#define ETH_HLEN 14
#define SLL_HLEN 16
#define SLL2_HLEN 20
#define NULL_HLEN 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88A8
#define ETHERTYPE_QINQ_OLD 0x9100
#define IPPROTO_TCP_NUM 6
#define IP6_HOPOPTS 0
#define IP6_ROUTING 43
#define IP6_FRAGMENT 44
#define IP6_AH 51
#define IP6_DSTOPTS 60

bool iwd_dlt_supported(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
#endif
	case DLT_RAW:
#ifdef DLT_IPV4
	case DLT_IPV4:
	case DLT_IPV6:
#endif
	case DLT_NULL:
	case DLT_LOOP:
		return true;
	default:
		return false;
	}
}

const char *iwd_dlt_name(int dlt)
{
	const char *n = pcap_datalink_val_to_name(dlt);

	return n ? n : "unknown";
}

static enum iwd_parse_result parse_tcp(const uint8_t *p, size_t have, size_t tcp_len, struct iwd_pkt *pkt)
{
	size_t hlen;

	if (tcp_len < 20 || have < 20)
		return IWD_PKT_BAD;
	hlen = (size_t)(p[12] >> 4) * 4;
	if (hlen < 20 || hlen > tcp_len || hlen > have)
		return IWD_PKT_BAD;
	pkt->sport = iw_get_be16(p);
	pkt->dport = iw_get_be16(p + 2);
	pkt->seq = iw_get_be32(p + 4);
	pkt->ack = iw_get_be32(p + 8);
	pkt->flags = p[13];
	pkt->data = p + hlen;
	pkt->len = (have < tcp_len ? have : tcp_len) - hlen;
	pkt->missing = tcp_len - hlen - pkt->len;
	return IWD_PKT_TCP;
}

static enum iwd_parse_result parse_ip4(const uint8_t *p, size_t have, struct iwd_pkt *pkt)
{
	size_t ihl, total;
	uint16_t frag;

	if (have < 20 || (p[0] >> 4) != 4)
		return IWD_PKT_BAD;
	ihl = (size_t)(p[0] & 0x0F) * 4;
	total = iw_get_be16(p + 2);
	if (ihl < 20 || total < ihl || have < ihl)
		return IWD_PKT_BAD;
	if (p[9] != IPPROTO_TCP_NUM)
		return IWD_PKT_OTHER;
	frag = iw_get_be16(p + 6);
	if (frag & 0x3FFF) /* MF or a fragment offset: not reassembled */
		return IWD_PKT_OTHER;
	pkt->family = AF_INET;
	memset(pkt->src, 0, sizeof(pkt->src));
	memset(pkt->dst, 0, sizeof(pkt->dst));
	memcpy(pkt->src, p + 12, 4);
	memcpy(pkt->dst, p + 16, 4);
	/* TSO captures can carry total length 0: trust what was captured. */
	if (total == 0)
		total = have;
	return parse_tcp(p + ihl, have - ihl, total - ihl, pkt);
}

static enum iwd_parse_result parse_ip6(const uint8_t *p, size_t have, struct iwd_pkt *pkt)
{
	size_t off = 40, plen;
	uint8_t nh;

	if (have < 40 || (p[0] >> 4) != 6)
		return IWD_PKT_BAD;
	plen = iw_get_be16(p + 4);
	if (plen == 0) /* jumbogram or TSO: take what was captured */
		plen = have - 40;
	nh = p[6];
	for (int i = 0; i < 8; i++) {
		size_t l;

		if (nh == IPPROTO_TCP_NUM)
			break;
		if (nh == IP6_FRAGMENT)
			return IWD_PKT_OTHER;
		if (nh != IP6_HOPOPTS && nh != IP6_ROUTING && nh != IP6_DSTOPTS && nh != IP6_AH)
			return IWD_PKT_OTHER;
		if (have < off + 8 || plen < off - 40 + 8)
			return IWD_PKT_BAD;
		l = nh == IP6_AH ? ((size_t)p[off + 1] + 2) * 4 : ((size_t)p[off + 1] + 1) * 8;
		nh = p[off];
		off += l;
		if (off - 40 > plen || off > have)
			return IWD_PKT_BAD;
	}
	if (nh != IPPROTO_TCP_NUM)
		return IWD_PKT_OTHER;
	pkt->family = AF_INET6;
	memcpy(pkt->src, p + 8, 16);
	memcpy(pkt->dst, p + 24, 16);
	return parse_tcp(p + off, have - off, plen - (off - 40), pkt);
}

static enum iwd_parse_result parse_l3(uint16_t ethertype, const uint8_t *p, size_t have, struct iwd_pkt *pkt)
{
	if (ethertype == ETHERTYPE_IPV4)
		return parse_ip4(p, have, pkt);
	if (ethertype == ETHERTYPE_IPV6)
		return parse_ip6(p, have, pkt);
	return IWD_PKT_OTHER;
}

static enum iwd_parse_result parse_raw(const uint8_t *p, size_t have, struct iwd_pkt *pkt)
{
	if (have < 1)
		return IWD_PKT_BAD;
	switch (p[0] >> 4) {
	case 4:
		return parse_ip4(p, have, pkt);
	case 6:
		return parse_ip6(p, have, pkt);
	default:
		return IWD_PKT_OTHER;
	}
}

static enum iwd_parse_result parse_ether(const uint8_t *p, size_t have, struct iwd_pkt *pkt)
{
	size_t off = 12;
	uint16_t type;

	if (have < ETH_HLEN)
		return IWD_PKT_BAD;
	type = iw_get_be16(p + off);
	/* Up to two VLAN tags (802.1Q, 802.1ad). */
	for (int i = 0; i < 2 && (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ || type == ETHERTYPE_QINQ_OLD);
	     i++) {
		off += 4;
		if (have < off + 2)
			return IWD_PKT_BAD;
		type = iw_get_be16(p + off);
	}
	off += 2;
	return parse_l3(type, p + off, have - off, pkt);
}

enum iwd_parse_result iwd_parse(int dlt, const uint8_t *f, size_t caplen, struct iwd_pkt *pkt)
{
	memset(pkt, 0, sizeof(*pkt));
	switch (dlt) {
	case DLT_EN10MB:
		return parse_ether(f, caplen, pkt);
	case DLT_LINUX_SLL:
		if (caplen < SLL_HLEN)
			return IWD_PKT_BAD;
		return parse_l3(iw_get_be16(f + 14), f + SLL_HLEN, caplen - SLL_HLEN, pkt);
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
		if (caplen < SLL2_HLEN)
			return IWD_PKT_BAD;
		return parse_l3(iw_get_be16(f), f + SLL2_HLEN, caplen - SLL2_HLEN, pkt);
#endif
	case DLT_RAW:
#ifdef DLT_IPV4
	case DLT_IPV4:
	case DLT_IPV6:
#endif
		return parse_raw(f, caplen, pkt);
	case DLT_NULL:
	case DLT_LOOP:
		/* The address family's byte order varies; the IP version
		 * nibble that follows does not. */
		if (caplen < NULL_HLEN)
			return IWD_PKT_BAD;
		return parse_raw(f + NULL_HLEN, caplen - NULL_HLEN, pkt);
	default:
		return IWD_PKT_OTHER;
	}
}
