/* Transmit offload end to end in the simulation (the link cuts
 * super-segments as the kernel's GSO does):
 *  - partial_retransmit: one wire segment of a super-segment is lost;
 *    the receiver SACKs the rest of that super-segment, and the sender
 *    resends exactly the lost piece (same sequence number and length,
 *    so still one whole FPDU), nothing else of it;
 *  - csum_partial: frames leave our TCP with only the pseudo-header sum
 *    (the offload completes it); a receiver told the checksum was
 *    verified (IWN_NET_RX_CSUM_OK) takes a segment whose checksum field
 *    is wrong, one not told drops it. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "netsim.h"
#include "common/iw_bytes.h"
#include "net/ipv4.h"
#include "net/tcp_seg.h"

#define PORT 4791
#define REC 1448 /* eff_mss at MTU 1500 with timestamps: one FPDU per wire segment */
#define NREC 40

struct watch {
	struct iwn_tcp_conn *c;
	uint32_t drop_seq; /* piece to lose once (absolute sequence number), 0: pick one */
	bool dropped;
	uint32_t seen[4 * NREC][2]; /* data pieces from host 0: seq, len */
	uint32_t nseen;
	bool sack_of_part; /* host 1 SACKed bytes right after the lost piece */
	uint32_t misaligned;
};

static bool watch_filter(void *arg, int from, uint8_t *f, uint32_t len)
{
	struct watch *w = arg;
	if (len < 14 + 20 + 20 || !w->c)
		return true;
	const uint8_t *ip = f + 14;
	uint32_t ihl = (ip[0] & 15u) * 4, tot = iw_get_be16(ip + 2);
	struct iwn_tcp_hdr h;
	if (iwn_tcp_parse(ip + ihl, tot - ihl, iw_get_be32(ip + 12), iw_get_be32(ip + 16), &h) != 0) {
		w->misaligned++; /* a bad checksum after the cut counts as a failure too */
		return true;
	}
	if (from == 1) {
		for (uint8_t i = 0; i < h.opt.n_sack; i++)
			if (w->dropped && h.opt.sack[i][0] == w->drop_seq + REC)
				w->sack_of_part = true;
		return true;
	}
	if (h.plen == 0)
		return true;
	if ((h.seq - (w->c->iss + 1)) % REC != 0 || (h.plen != REC && h.plen != 1))
		w->misaligned++;
	if (w->nseen < 4 * NREC) {
		w->seen[w->nseen][0] = h.seq;
		w->seen[w->nseen][1] = h.plen;
		w->nseen++;
	}
	/* Lose the third record once: it goes inside the first super-segment. */
	if (!w->dropped && h.seq == w->c->iss + 1 + 2 * REC) {
		w->drop_seq = h.seq;
		w->dropped = true;
		return false;
	}
	return true;
}

START_TEST(partial_retransmit)
{
	struct netsim *s = malloc(sizeof(*s));
	ck_assert_ptr_nonnull(s);
	struct netsim_link link = {.delay_us = 100};
	netsim_init_gso(s, iwt_seed(), &link, NULL, NULL, 1500, 3);
	ck_assert_int_eq(iwn_net_listen(&s->net[1], PORT, 1), 0);
	int err;
	struct watch w = {0};
	s->filter = watch_filter;
	s->filter_arg = &w;
	struct iwn_tcp_conn *c = iwn_net_connect(&s->net[0], NETSIM_IP(1), PORT, 0, s->now, &err);
	ck_assert_ptr_nonnull(c);
	netsim_run_for(s, 10000);
	struct iwn_tcp_conn *a = iwn_net_accept(&s->net[1], PORT);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(c->eff_mss, REC);
	w.c = c;
	static uint8_t data[NREC * REC], got[NREC * REC];
	uint64_t st = iwt_seed();
	for (uint32_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)iwt_rand(&st);
	for (int i = 0; i < NREC; i++)
		ck_assert_int_eq(iwn_tcp_send_record(c, data + i * REC, REC, s->now), REC);
	uint32_t n = 0;
	for (int k = 0; k < 100000 && n < sizeof(got); k++) {
		netsim_step(s, s->now + 10000000);
		n += iwn_tcp_recv(a, got + n, (uint32_t)sizeof(got) - n, s->now);
	}
	ck_assert_uint_eq(n, sizeof(got));
	ck_assert(memcmp(data, got, sizeof(got)) == 0);
	ck_assert(w.dropped);
	ck_assert_uint_eq(w.misaligned, 0);
	ck_assert_uint_gt(c->stats.gso_sends, 0);
	ck_assert_uint_gt(s->gso_frames, 0);
	ck_assert_msg(w.sack_of_part, "no SACK block for the rest of the super-segment");
	/* The lost piece went twice, whole; no other piece went twice. */
	uint32_t lost_sends = 0;
	for (uint32_t i = 0; i < w.nseen; i++) {
		if (w.seen[i][0] == w.drop_seq) {
			ck_assert_uint_eq(w.seen[i][1], REC);
			lost_sends++;
			continue;
		}
		for (uint32_t j = i + 1; j < w.nseen; j++)
			ck_assert_msg(w.seen[i][0] != w.seen[j][0], "piece at %u sent twice",
				      w.seen[i][0] - (c->iss + 1));
	}
	ck_assert_uint_eq(lost_sends, 2);
	ck_assert_uint_eq(c->stats.retransmitted_segs, 1);
	ck_assert_uint_eq(c->stats.rto_expired, 0);
	netsim_fini(s);
	free(s);
}
END_TEST

static uint32_t collect_len;
static uint8_t collect[2048];
static void collect_tx(void *arg, const uint8_t *frame, uint32_t len)
{
	(void)arg;
	if (len <= sizeof(collect)) {
		memcpy(collect, frame, len);
		collect_len = len;
	}
}

static void collect_tx_off(void *arg, const uint8_t *frame, uint32_t len, uint32_t gso)
{
	ck_assert_uint_eq(gso, 0);
	collect_tx(arg, frame, len);
}

START_TEST(csum_partial)
{
	/* A host with offload sends a SYN: its checksum field holds the
	 * pseudo-header sum only, which completes to the right checksum. */
	struct iwn_net net;
	struct iwn_net_cfg cfg;
	iwn_net_cfg_default(&cfg);
	cfg.ip = 0x0A000001u;
	cfg.tx = collect_tx;
	cfg.tx_off = collect_tx_off;
	cfg.gso_max = 65000;
	ck_assert_int_eq(iwn_net_init(&net, &cfg), 0);
	/* The peer's MAC is known, so the SYN leaves through tx_off. */
	uint8_t arp[60] = {0};
	static const uint8_t peer_mac[6] = {2, 0, 0, 0, 0, 9};
	memset(arp, 0xff, 6);
	memcpy(arp + 6, peer_mac, 6);
	arp[12] = 0x08, arp[13] = 0x06;
	uint8_t *a = arp + 14;
	a[1] = 1, a[2] = 8, a[4] = 6, a[5] = 4, a[7] = 1;
	memcpy(a + 8, peer_mac, 6);
	iw_put_be32(a + 14, 0x0A000002u);
	iw_put_be32(a + 24, cfg.ip);
	iwn_net_input(&net, arp, sizeof(arp), 1000);
	int err;
	struct iwn_tcp_conn *c = iwn_net_connect(&net, 0x0A000002u, 80, 0, 1000, &err);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_gt(collect_len, 14 + 20 + 20);
	uint8_t *seg = collect + 14 + 20;
	uint32_t slen = collect_len - 14 - 20;
	struct iwn_tcp_hdr h;
	ck_assert_int_eq(iwn_tcp_parse(seg, slen, cfg.ip, 0x0A000002u, &h), -EBADMSG); /* partial */
	uint16_t partial = iw_get_be16(seg + IWN_TCP_OFF_CSUM);
	iwn_tcp_set_csum_partial(seg, slen, cfg.ip, 0x0A000002u);
	ck_assert_uint_eq(iw_get_be16(seg + IWN_TCP_OFF_CSUM), partial);
	iwn_tcp_set_csum(seg, slen, cfg.ip, 0x0A000002u); /* what the offload does */
	ck_assert_int_eq(iwn_tcp_parse(seg, slen, cfg.ip, 0x0A000002u, &h), 0);
	ck_assert(h.flags & IWN_TCP_SYN);

	/* The peer answers with a SYN-ACK whose checksum field is wrong: a
	 * plain input drops it; one flagged as verified by the kernel takes
	 * it (no checksum pass), and the connection is established. */
	uint8_t f[128];
	memset(f, 0, sizeof(f));
	memcpy(f, cfg.mac, 6);
	memcpy(f + 6, peer_mac, 6);
	f[12] = 0x08, f[13] = 0x00;
	struct iwn_tcp_hdr r = {0};
	r.sport = 80;
	r.dport = c->lport;
	r.seq = 5000;
	r.ack = c->iss + 1;
	r.flags = IWN_TCP_SYN | IWN_TCP_ACK;
	r.win = 65535;
	r.opt.has_mss = true;
	r.opt.mss = 1460;
	size_t thl = iwn_tcp_build(f + 34, &r);
	iwn_ip4_build(f + 14, 0x0A000002u, cfg.ip, 6, 1, 64, (uint16_t)thl);
	iwn_tcp_set_csum(f + 34, thl, 0x0A000002u, cfg.ip);
	f[34 + IWN_TCP_OFF_CSUM] ^= 0x5a;
	iwn_net_input(&net, f, (uint32_t)(34 + thl), 2000);
	ck_assert_uint_eq(net.stats.tcp_bad_csum, 1);
	ck_assert_int_eq(c->state, IWN_TCP_SYN_SENT);
	iwn_net_input_flags(&net, f, (uint32_t)(34 + thl), 2000, IWN_NET_RX_CSUM_OK);
	ck_assert_uint_eq(net.stats.rx_csum_trusted, 1);
	ck_assert_int_eq(c->state, IWN_TCP_ESTABLISHED);
	iwn_net_fini(&net);
}
END_TEST

static Suite *gso_sim_suite(void)
{
	Suite *s = suite_create("net_gso_sim");
	TCase *t = tcase_create("gso");
	tcase_add_test(t, partial_retransmit);
	tcase_add_test(t, csum_partial);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(gso_sim_suite());
}
