/* pcw: link layer / IP / TCP parsing with offsets (so packets can be
 * rewritten), Internet checksums, and writing the capture back out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iw_bytes.h"
#include "pcw.h"
#include "pcw_int.h"

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD

static bool parse_tcp(struct pcw_pkt *p, size_t off, size_t tcp_len)
{
	size_t have = p->h.caplen, hl;
	const uint8_t *t = p->data + off;

	if (off + 20 > have || tcp_len < 20)
		return false;
	hl = (size_t)(t[12] >> 4) * 4;
	if (hl < 20 || hl > tcp_len || off + hl > have)
		return false;
	p->tcp_off = off;
	p->sport = iw_get_be16(t);
	p->dport = iw_get_be16(t + 2);
	p->seq = iw_get_be32(t + 4);
	p->ack = iw_get_be32(t + 8);
	p->flags = t[13];
	p->pay_off = off + hl;
	p->pay_len = tcp_len - hl;
	/* Bytes the snapshot cut off are not ours to rewrite. */
	if (p->pay_off + p->pay_len > have)
		p->pay_len = have - p->pay_off;
	p->tcp = true;
	return true;
}

static bool parse_ip(struct pcw_pkt *p, size_t off)
{
	const uint8_t *ip = p->data + off;
	size_t have = p->h.caplen;

	if (off + 20 > have)
		return false;
	if ((ip[0] >> 4) == 4) {
		size_t ihl = (size_t)(ip[0] & 0x0F) * 4, total = iw_get_be16(ip + 2);

		if (ihl < 20 || off + ihl > have || ip[9] != 6 || (iw_get_be16(ip + 6) & 0x3FFF))
			return false;
		if (total == 0) /* TSO capture */
			total = have - off;
		if (total < ihl)
			return false;
		p->family = 4;
		p->ip_off = off;
		memcpy(p->src, ip + 12, 4);
		memcpy(p->dst, ip + 16, 4);
		return parse_tcp(p, off + ihl, total - ihl);
	}
	if ((ip[0] >> 4) == 6) {
		size_t plen;

		if (off + 40 > have || ip[6] != 6) /* extension headers: not handled */
			return false;
		plen = iw_get_be16(ip + 4);
		if (plen == 0)
			plen = have - off - 40;
		p->family = 6;
		p->ip_off = off;
		memcpy(p->src, ip + 8, 16);
		memcpy(p->dst, ip + 24, 16);
		return parse_tcp(p, off + 40, plen);
	}
	return false;
}

void pcw_parse(int dlt, struct pcw_pkt *p)
{
	size_t have = p->h.caplen, off;
	uint16_t type;

	p->tcp = false;
	switch (dlt) {
	case DLT_EN10MB:
		off = 12;
		if (have < 14)
			return;
		type = iw_get_be16(p->data + off);
		for (int i = 0; i < 2 && (type == 0x8100 || type == 0x88A8 || type == 0x9100); i++) {
			off += 4;
			if (off + 2 > have)
				return;
			type = iw_get_be16(p->data + off);
		}
		if (type == ETHERTYPE_IPV4 || type == ETHERTYPE_IPV6)
			parse_ip(p, off + 2);
		return;
	case DLT_LINUX_SLL:
		if (have >= 16)
			parse_ip(p, 16);
		return;
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
		if (have >= 20)
			parse_ip(p, 20);
		return;
#endif
	case DLT_RAW:
#ifdef DLT_IPV4
	case DLT_IPV4:
	case DLT_IPV6:
#endif
		parse_ip(p, 0);
		return;
	case DLT_NULL:
	case DLT_LOOP:
		if (have >= 4)
			parse_ip(p, 4);
		return;
	default:
		return;
	}
}

/* ---- checksums --------------------------------------------------------- */

static uint32_t sum16(uint32_t s, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

/* Length of the TCP segment as the IP header states it (within caplen). */
static size_t tcp_seg_len(const struct pcw_pkt *p)
{
	return p->pay_off + p->pay_len - p->tcp_off;
}

static uint16_t tcp_sum(const struct pcw_pkt *p)
{
	const uint8_t *ip = p->data + p->ip_off;
	size_t n = tcp_seg_len(p);
	uint32_t s = 0;

	if (p->family == 4) {
		s = sum16(s, ip + 12, 8);
	} else {
		s = sum16(s, ip + 8, 32);
		s += (uint32_t)(n >> 16);
	}
	s += 6;
	s += (uint32_t)(n & 0xFFFF);
	s = sum16(s, p->data + p->tcp_off, n);
	return fold(s);
}

static uint16_t ip4_sum(const struct pcw_pkt *p)
{
	const uint8_t *ip = p->data + p->ip_off;

	return fold(sum16(0, ip, (size_t)(ip[0] & 0x0F) * 4));
}

void pcw_csum_state(const struct pcw_pkt *p, bool *ip_ok, bool *tcp_ok)
{
	/* A segment the snapshot cut cannot be summed: leave it alone. */
	bool whole = p->family == 6 ? p->ip_off + 40 + iw_get_be16(p->data + p->ip_off + 4) == p->pay_off + p->pay_len
				    : p->ip_off + iw_get_be16(p->data + p->ip_off + 2) == p->pay_off + p->pay_len;

	*ip_ok = p->family == 4 && ip4_sum(p) == 0;
	*tcp_ok = whole && tcp_sum(p) == 0;
}

void pcw_csum_fix(struct pcw_pkt *p, bool ip_ok, bool tcp_ok)
{
	if (ip_ok) {
		uint8_t *ip = p->data + p->ip_off;

		ip[10] = ip[11] = 0;
		iw_put_be16(ip + 10, ip4_sum(p));
	}
	if (tcp_ok) {
		uint8_t *t = p->data + p->tcp_off;

		t[16] = t[17] = 0;
		iw_put_be16(t + 16, tcp_sum(p));
	}
}

/* ---- output ------------------------------------------------------------ */

int pcw_write(const struct pcw_cap *cap, const char *path, char *err, size_t errlen)
{
	pcap_t *pd = pcap_open_dead(cap->dlt, cap->snaplen);
	pcap_dumper_t *dump;

	if (!pd) {
		snprintf(err, errlen, "pcap_open_dead failed");
		return -1;
	}
	dump = pcap_dump_open(pd, path);
	if (!dump) {
		snprintf(err, errlen, "%s: %s", path, pcap_geterr(pd));
		pcap_close(pd);
		return -1;
	}
	for (size_t i = 0; i < cap->npkts; i++)
		if (!cap->pkts[i].drop)
			pcap_dump((u_char *)dump, &cap->pkts[i].h, cap->pkts[i].data);
	if (pcap_dump_flush(dump) != 0) {
		snprintf(err, errlen, "%s: write failed", path);
		pcap_dump_close(dump);
		pcap_close(pd);
		return -1;
	}
	pcap_dump_close(dump);
	pcap_close(pd);
	return 0;
}
