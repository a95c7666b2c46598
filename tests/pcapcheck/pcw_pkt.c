/* pcw: link layer / IP / TCP offsets of a packet (so it can be
 * rewritten), Internet checksums, and writing the capture back out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap_frame.h"
#include "iw_bytes.h"
#include "pcw.h"
#include "net/cksum.h"
#include "pcw_int.h"

/* The parsing is tools/capture's (iwdump reads frames the same way). */
void pcw_parse(int dlt, struct pcw_pkt *p)
{
	struct iwc_frame f;

	p->tcp = false;
	if (iwc_parse(dlt, p->data, p->h.caplen, &f) != IWC_TCP)
		return;
	p->family = f.family;
	p->ip_off = f.ip_off;
	p->tcp_off = f.tcp_off;
	memcpy(p->src, f.src, sizeof(p->src));
	memcpy(p->dst, f.dst, sizeof(p->dst));
	p->sport = f.sport;
	p->dport = f.dport;
	p->seq = f.seq;
	p->ack = f.ack;
	p->flags = f.flags;
	/* Bytes the snapshot cut off are not ours to rewrite. */
	p->pay_off = f.pay_off;
	p->pay_len = f.pay_len;
	p->tcp = true;
}

/* ---- checksums --------------------------------------------------------- */

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
		s = iwn_cksum_add(s, ip + 12, 8);
	} else {
		s = iwn_cksum_add(s, ip + 8, 32);
		s += (uint32_t)(n >> 16);
	}
	s += 6;
	s += (uint32_t)(n & 0xFFFF);
	s = iwn_cksum_add(s, p->data + p->tcp_off, n);
	return iwn_cksum_fold(s);
}

static uint16_t ip4_sum(const struct pcw_pkt *p)
{
	const uint8_t *ip = p->data + p->ip_off;

	return iwn_cksum_fold(iwn_cksum_add(0, ip, (size_t)(ip[0] & 0x0F) * 4));
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
