/* Floods against the host (issue 19): spoofed SYNs answered with SYN
 * cookies (tcp_cookie.c) so a legitimate handshake still succeeds at
 * once, cookie ACK validation, spoofed on-link sources that cannot fill
 * the ARP cache with victims, and the RST / ICMP echo token buckets. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "common/iw_bytes.h"
#include "net/cksum.h"
#include "net/ipv4.h"
#include "net/net.h"
#include "net/tcp_cookie.h"
#include "net/tcp_seg.h"
#include "netsim.h"

#define SRV 1 /* netsim host 1 (10.0.0.2) serves, host 0 (10.0.0.1) is the client */
#define PORT 4791
#define BACKLOG 4

static const uint8_t srv_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

/* Ethernet + IPv4 + TCP from src (mac smac) to the server. */
static uint32_t tcp_from(uint8_t *f, uint32_t src, const uint8_t smac[6], const struct iwn_tcp_hdr *h,
			 uint32_t plen)
{
	iwn_eth_build(f, srv_mac, smac, IWN_ETHERTYPE_IPV4);
	uint8_t *seg = f + 34;
	size_t hl = iwn_tcp_build(seg, h);
	memset(seg + hl, 'x', plen);
	iwn_tcp_set_csum(seg, hl + plen, src, NETSIM_IP(SRV));
	iwn_ip4_build(f + 14, src, NETSIM_IP(SRV), IWN_IPPROTO_TCP, 1, 64, (uint16_t)(hl + plen));
	return (uint32_t)(34 + hl + plen);
}

static uint32_t syn_from(uint8_t *f, uint32_t src, const uint8_t smac[6], uint16_t sport, uint32_t seq, bool opts)
{
	struct iwn_tcp_hdr h;
	memset(&h, 0, sizeof(h));
	h.sport = sport;
	h.dport = PORT;
	h.seq = seq;
	h.flags = IWN_TCP_SYN;
	h.win = 65535;
	if (opts) {
		h.opt.has_mss = true;
		h.opt.mss = 1460;
		h.opt.has_ws = true;
		h.opt.ws = 7;
		h.opt.sack_ok = true;
		h.opt.has_ts = true;
		h.opt.tsval = 12345;
	}
	return tcp_from(f, src, smac, &h, 0);
}

/* Spoofed on-link sources 10.0.0.100.. with made-up MACs. */
static void spoof_syns(struct iwn_net *net, uint32_t n, uint32_t first, uint64_t now)
{
	uint8_t f[128];
	for (uint32_t i = 0; i < n; i++) {
		uint8_t mac[6] = {0x02, 0xee, 0, 0, (uint8_t)((first + i) >> 8), (uint8_t)(first + i)};
		iwn_net_input(net, f, syn_from(f, 0x0A000064u + first + i, mac, (uint16_t)(1024 + i), 777 * i, true),
			      now);
	}
}

static void flood_then_legit(bool timestamps)
{
	struct netsim s;
	struct netsim_link link = {.delay_us = 100};
	struct iwn_tcp_cfg cli;
	iwn_tcp_cfg_default(&cli);
	cli.timestamps = timestamps;
	netsim_init(&s, iwt_seed(), &link, &cli, NULL, 0);
	struct iwn_net *srv = &s.net[SRV];
	ck_assert_int_eq(iwn_net_listen(srv, PORT, BACKLOG), 0);
	/* 10x the backlog of spoofed SYNs: BACKLOG half-open, the rest cookies. */
	spoof_syns(srv, 10 * BACKLOG, 0, s.now);
	ck_assert_uint_eq(iwn_net_conn_count(srv), BACKLOG);
	ck_assert_uint_eq(srv->stats.tcp_cookies_sent, 9 * BACKLOG);
	ck_assert_uint_eq(srv->stats.tcp_syn_dropped, 0);
	netsim_run_for(&s, 10000);
	/* The legitimate client: one round trip, no retransmission. */
	int err;
	uint64_t t0 = s.now;
	struct iwn_tcp_conn *c = iwn_net_connect(&s.net[0], NETSIM_IP(SRV), PORT, 0, s.now, &err);
	ck_assert_ptr_nonnull(c);
	while (c->state == IWN_TCP_SYN_SENT && s.now < t0 + 100000)
		ck_assert(netsim_step(&s, t0 + 100000));
	ck_assert_int_eq(c->state, IWN_TCP_ESTABLISHED);
	ck_assert_uint_le(s.now - t0, 1000); /* ARP + SYN: two round trips of 200 us */
	ck_assert_uint_eq(c->stats.rto_expired, 0);
	netsim_run_for(&s, 1000);
	struct iwn_tcp_conn *a = iwn_net_accept(srv, PORT);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(srv->stats.tcp_cookies_ok, 1);
	/* The options survived the cookie, or fell back on both sides. */
	ck_assert_int_eq(a->ts_on, timestamps);
	ck_assert_int_eq(c->ts_on, timestamps);
	ck_assert_int_eq(a->ws_on, timestamps);
	ck_assert_int_eq(c->ws_on, timestamps);
	ck_assert_int_eq(a->sack_on, timestamps);
	ck_assert_int_eq(c->sack_on, timestamps);
	if (timestamps) {
		ck_assert_uint_eq(a->snd_ws, c->rcv_ws);
		ck_assert_uint_eq(c->snd_ws, a->rcv_ws);
	}
	ck_assert_uint_eq(a->eff_mss, c->eff_mss);
	/* Data both ways, more than one unscaled window. */
	static uint8_t buf[100000];
	memset(buf, 'a', sizeof(buf));
	uint32_t sent = 0, got = 0;
	uint64_t end = s.now + 5000000;
	while ((sent < sizeof(buf) || got < sizeof(buf)) && s.now < end) {
		if (sent < sizeof(buf)) {
			int n = iwn_tcp_send(c, buf + sent, (uint32_t)sizeof(buf) - sent, s.now);
			ck_assert_int_ge(n, 0);
			sent += (uint32_t)n;
		}
		/* Read all that waits: the loop must not depend on a window
		 * update after each read to keep the simulation stepping. */
		uint8_t in[4096];
		for (uint32_t k; (k = iwn_tcp_recv(a, in, sizeof(in), s.now)) > 0;)
			got += k;
		netsim_step(&s, end);
	}
	ck_assert_uint_eq(got, sizeof(buf));
	ck_assert_int_eq(a->state, IWN_TCP_ESTABLISHED);
	netsim_fini(&s);
}

START_TEST(test_syn_flood_then_legit) { flood_then_legit(true); }
END_TEST

START_TEST(test_syn_flood_then_legit_no_timestamps) { flood_then_legit(false); }
END_TEST

/* ---- the server alone, frames by hand ---- */

static struct {
	uint8_t last[256];
	uint32_t last_len;
	uint64_t n, rst, synack, arp_req, icmp;
} out;

static void count_tx(void *arg, const uint8_t *f, uint32_t len)
{
	(void)arg;
	out.n++;
	if (len <= sizeof(out.last)) {
		memcpy(out.last, f, len);
		out.last_len = len;
	}
	if (len >= 14 + 28 && f[12] == 0x08 && f[13] == 0x06 && f[14 + 7] == IWN_ARP_REQUEST)
		out.arp_req++;
	if (len >= 34 + 20 && f[12] == 0x08 && f[13] == 0x00 && f[23] == IWN_IPPROTO_TCP) {
		uint8_t fl = f[34 + IWN_TCP_OFF_FLAGS];
		out.rst += (fl & IWN_TCP_RST) != 0;
		out.synack += (fl & (IWN_TCP_SYN | IWN_TCP_ACK)) == (IWN_TCP_SYN | IWN_TCP_ACK);
	}
	if (len >= 34 && f[12] == 0x08 && f[13] == 0x00 && f[23] == IWN_IPPROTO_ICMP)
		out.icmp++;
}

#define PEER 0x0A000001u
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x01};

static void server(struct iwn_net *net)
{
	struct iwn_net_cfg cfg;
	iwn_net_cfg_default(&cfg);
	memcpy(cfg.mac, srv_mac, 6);
	cfg.ip = NETSIM_IP(SRV);
	for (int k = 0; k < IWN_ISN_KEY_LEN; k++)
		cfg.isn_key[k] = (uint8_t)(k * 7 + 1);
	cfg.tx = count_tx;
	ck_assert_int_eq(iwn_net_init(net, &cfg), 0);
	memset(&out, 0, sizeof(out));
}

static uint32_t arp_req_from(uint8_t *f, uint32_t spa, const uint8_t sha[6])
{
	memset(f, 0, 60);
	iwn_eth_build(f, iwn_eth_broadcast, sha, IWN_ETHERTYPE_ARP);
	struct iwn_arp_pkt a = {.oper = IWN_ARP_REQUEST, .spa = spa, .tpa = NETSIM_IP(SRV)};
	memcpy(a.sha, sha, 6);
	iwn_arp_build(f + 14, &a);
	return 60;
}

/* The last frame sent, parsed as TCP to PEER. */
static struct iwn_tcp_hdr last_tcp(void)
{
	struct iwn_tcp_hdr h;
	ck_assert_int_eq(iwn_tcp_parse(out.last + 34, out.last_len - 34, NETSIM_IP(SRV), PEER, &h), 0);
	return h;
}

static uint32_t ack_from_host(uint8_t *f, uint32_t src, const uint8_t smac[6], uint16_t sport, uint32_t seq,
			      uint32_t ack, uint32_t tsecr, uint32_t plen)
{
	struct iwn_tcp_hdr h;
	memset(&h, 0, sizeof(h));
	h.sport = sport;
	h.dport = PORT;
	h.seq = seq;
	h.ack = ack;
	h.flags = IWN_TCP_ACK;
	h.win = 512; /* scaled by 7: 64 KiB */
	h.opt.has_ts = true;
	h.opt.tsval = 12346;
	h.opt.tsecr = tsecr;
	return tcp_from(f, src, smac, &h, plen);
}

static uint32_t ack_from(uint8_t *f, uint16_t sport, uint32_t seq, uint32_t ack, uint32_t tsecr, uint32_t plen)
{
	return ack_from_host(f, PEER, peer_mac, sport, seq, ack, tsecr, plen);
}

/* The last frame sent, parsed as TCP to addr. */
static struct iwn_tcp_hdr last_tcp_to(uint32_t addr)
{
	struct iwn_tcp_hdr h;
	ck_assert_int_eq(iwn_tcp_parse(out.last + 34, out.last_len - 34, NETSIM_IP(SRV), addr, &h), 0);
	return h;
}

/* A whole handshake from src: true if the server answered the SYN. */
static bool handshake_from(struct iwn_net *net, uint32_t src, const uint8_t smac[6], uint16_t sport, uint64_t now)
{
	uint8_t f[256];
	uint64_t n = out.n;
	iwn_net_input(net, f, syn_from(f, src, smac, sport, 1000, true), now);
	if (out.n == n)
		return false;
	struct iwn_tcp_hdr sa = last_tcp_to(src);
	ck_assert_uint_eq(sa.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	iwn_net_input(net, f, ack_from_host(f, src, smac, sport, 1001, sa.seq + 1, sa.opt.tsval, 0), now);
	return true;
}

START_TEST(test_cookie_validation)
{
	struct iwn_net net;
	server(&net);
	uint8_t f[256];
	uint64_t now = 5000000000ull;
	iwn_net_input(&net, f, arp_req_from(f, PEER, peer_mac), now); /* peer known: answers leave at once */
	ck_assert_int_eq(iwn_net_listen(&net, PORT, 1), 0);
	/* An ACK for a listener while no cookies were sent: a plain RST. */
	iwn_net_input(&net, f, ack_from(f, 40000, 1, 2, 0, 0), now);
	ck_assert_uint_eq(out.rst, 1);
	ck_assert_uint_eq(net.stats.tcp_cookies_bad, 0);
	/* One half-open fills backlog 1; the next SYN gets a cookie. */
	iwn_net_input(&net, f, syn_from(f, PEER, peer_mac, 39999, 5, true), now);
	iwn_net_input(&net, f, syn_from(f, PEER, peer_mac, 40000, 1000, true), now);
	ck_assert_uint_eq(net.stats.tcp_cookies_sent, 1);
	struct iwn_tcp_hdr sa = last_tcp();
	ck_assert_uint_eq(sa.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(sa.ack, 1001);
	ck_assert(sa.opt.has_ws && sa.opt.sack_ok && sa.opt.has_ts && sa.opt.has_mss);
	ck_assert_uint_eq(sa.opt.tsecr, 12345);
	uint32_t cookie = sa.seq;
	/* Wrong cookie, wrong sequence number, forged option echo: RST, no state. */
	iwn_net_input(&net, f, ack_from(f, 40000, 1001, cookie + 2, sa.opt.tsval, 0), now + 10);
	iwn_net_input(&net, f, ack_from(f, 40000, 1002, cookie + 1, sa.opt.tsval, 0), now + 10);
	iwn_net_input(&net, f, ack_from(f, 40000, 1001, cookie + 1, sa.opt.tsval + 1000000, 0), now + 10);
	ck_assert_uint_eq(net.stats.tcp_cookies_bad, 3);
	ck_assert_uint_eq(out.rst, 4);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 1);
	/* The right ACK, with data: a connection, established, data taken. */
	iwn_net_input(&net, f, ack_from(f, 40000, 1001, cookie + 1, sa.opt.tsval, 10), now + 20);
	ck_assert_uint_eq(net.stats.tcp_cookies_ok, 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 2);
	struct iwn_tcp_conn *c = iwn_net_accept(&net, PORT);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->state, IWN_TCP_ESTABLISHED);
	ck_assert_uint_eq(c->rport, 40000);
	ck_assert(c->ws_on && c->sack_on && c->ts_on);
	ck_assert_uint_eq(c->snd_ws, 7);
	ck_assert_uint_eq(c->snd_wnd, 512u << 7);
	ck_assert_uint_eq(c->peer_mss, 1460);
	ck_assert_uint_eq(iwn_tcp_readable(c), 10);
	/* Replay of the same ACK: it reaches that connection, no second one. */
	iwn_net_input(&net, f, ack_from(f, 40000, 1001, cookie + 1, sa.opt.tsval, 0), now + 30);
	ck_assert_uint_eq(net.stats.tcp_cookies_ok, 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 2);
	/* Stale: a cookie from three counter steps ago fails even while
	 * cookies are being sent. */
	iwn_net_input(&net, f, syn_from(f, PEER, peer_mac, 40001, 2000, true), now + 40);
	struct iwn_tcp_hdr old = last_tcp();
	uint64_t later = now + 40 + (3ull << IWN_COOKIE_PERIOD_SHIFT);
	uint16_t mss;
	ck_assert_int_eq(iwn_syn_cookie_check(net.cfg.isn_key, NETSIM_IP(SRV), PORT, PEER, 40001, 2000, old.seq, later,
					      &mss),
			 -ETIMEDOUT);
	ck_assert_int_eq(iwn_syn_cookie_check(net.cfg.isn_key, NETSIM_IP(SRV), PORT, PEER, 40001, 2000, old.seq,
					      now + 40 + (1ull << IWN_COOKIE_PERIOD_SHIFT), &mss),
			 0);
	iwn_net_input(&net, f, syn_from(f, PEER, peer_mac, 40002, 3000, true), later); /* cookies in use now */
	uint64_t bad = net.stats.tcp_cookies_bad;
	iwn_net_input(&net, f, ack_from(f, 40001, 2001, old.seq + 1, old.opt.tsval, 0), later);
	ck_assert_uint_eq(net.stats.tcp_cookies_bad, bad + 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 2);
	/* Brute force: random cookies for one 4-tuple never pass (27-bit MAC). */
	uint64_t st = iwt_seed();
	for (int i = 0; i < 2000; i++) {
		uint32_t guess;
		iwt_fill_random(&st, &guess, sizeof(guess));
		iwn_net_input(&net, f, ack_from(f, 40002, 3001, guess, old.opt.tsval, 0), later);
	}
	ck_assert_uint_eq(iwn_net_conn_count(&net), 2);
	iwn_net_fini(&net);
}
END_TEST

/* One address that fills the accept queue faster than the application
 * accepts must not lock others out: its SYNs are dropped, another
 * address's SYN gets a cookie (no state, no eviction: it may be
 * spoofed), and that address's completed handshake resets one of the
 * flood's waiting connections and takes its place. Before, every other
 * address's SYN and cookie ACK were dropped while the queue was full
 * (the flood suite's short-pd row: retransmissions of 200 ms and 1 s). */
START_TEST(test_accept_queue_gives_way)
{
	enum { Q = 2 };
	const uint32_t other = 0x0A000009u;
	const uint8_t other_mac[6] = {0x02, 0, 0, 0, 0, 0x09};
	struct iwn_net net;
	server(&net);
	uint8_t f[256];
	uint64_t now = 5000000000ull;
	iwn_net_input(&net, f, arp_req_from(f, PEER, peer_mac), now);
	iwn_net_input(&net, f, arp_req_from(f, other, other_mac), now);
	ck_assert_int_eq(iwn_net_listen(&net, PORT, Q), 0);
	for (int i = 0; i < Q; i++)
		ck_assert(handshake_from(&net, PEER, peer_mac, (uint16_t)(41000 + i), now));
	ck_assert_uint_eq(iwn_net_conn_count(&net), Q);
	/* Full, and the SYN is from the address holding it: dropped. */
	ck_assert(!handshake_from(&net, PEER, peer_mac, 41100, now));
	ck_assert_uint_eq(net.stats.tcp_syn_dropped, 1);
	/* Another address's SYN: a cookie, nothing reset yet. */
	uint64_t rst = out.rst;
	iwn_net_input(&net, f, syn_from(f, other, other_mac, 42000, 1000, true), now);
	struct iwn_tcp_hdr sa = last_tcp_to(other);
	ck_assert_uint_eq(sa.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(net.stats.tcp_cookies_sent, 1);
	ck_assert_uint_eq(net.stats.tcp_accept_evicted, 0);
	ck_assert_uint_eq(out.rst, rst);
	ck_assert_uint_eq(iwn_net_conn_count(&net), Q);
	/* Its ACK: one of the flood's connections is reset for it. */
	iwn_net_input(&net, f, ack_from_host(f, other, other_mac, 42000, 1001, sa.seq + 1, sa.opt.tsval, 0), now);
	ck_assert_uint_eq(net.stats.tcp_cookies_ok, 1);
	ck_assert_uint_eq(net.stats.tcp_cookies_dropped, 0);
	ck_assert_uint_eq(net.stats.tcp_accept_evicted, 1);
	ck_assert_uint_eq(out.rst, rst + 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), Q);
	/* The application finds the newcomer and the flood's older one. */
	uint32_t from_other = 0, from_peer = 0;
	struct iwn_tcp_conn *c;
	while ((c = iwn_net_accept(&net, PORT)) != NULL) {
		ck_assert_int_eq(c->state, IWN_TCP_ESTABLISHED);
		ck_assert_ptr_null(c->sb.buf); /* nothing sent: no send buffer yet */
		from_other += c->raddr == other;
		from_peer += c->raddr == PEER && c->rport == 41000;
	}
	ck_assert_uint_eq(from_other, 1);
	ck_assert_uint_eq(from_peer, 1);
	/* No majority (one each, queue full again): a third address waits. */
	ck_assert(handshake_from(&net, PEER, peer_mac, 41200, now));
	ck_assert(handshake_from(&net, other, other_mac, 42100, now));
	const uint32_t third = 0x0A00000Au;
	const uint8_t third_mac[6] = {0x02, 0, 0, 0, 0, 0x0A};
	iwn_net_input(&net, f, arp_req_from(f, third, third_mac), now);
	ck_assert(!handshake_from(&net, third, third_mac, 43000, now));
	ck_assert_uint_eq(net.stats.tcp_accept_evicted, 1);
	iwn_net_fini(&net);
}
END_TEST

START_TEST(test_cookie_mss_and_ts_bits)
{
	uint8_t key[IWN_ISN_KEY_LEN] = {1, 2, 3};
	uint16_t mss;
	const uint16_t want[][2] = {{0, 536}, {500, 536}, {1460, 1460}, {1400, 1360}, {9000, 8960}, {65535, 8960}};
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint32_t ck = iwn_syn_cookie(key, 1, 2, 3, 4, 99, want[i][0], 7000000000ull);
		ck_assert_int_eq(iwn_syn_cookie_check(key, 1, 2, 3, 4, 99, ck, 7000000000ull, &mss), 0);
		ck_assert_uint_eq(mss, want[i][1]);
		ck_assert_int_eq(iwn_syn_cookie_check(key, 1, 2, 3, 5, 99, ck, 7000000000ull, &mss), -EINVAL);
	}
	struct iwn_tcp_opts o = {.has_ws = true, .ws = 14, .sack_ok = true}, d;
	for (uint32_t ts = 0; ts < 200; ts += 7) {
		uint32_t v = iwn_syn_cookie_tsval(ts, &o);
		ck_assert(v - ts >= 0x80000000u || v == ts);
		memset(&d, 0, sizeof(d));
		ck_assert(iwn_syn_cookie_ts_decode(v, ts + 5, &d));
		ck_assert(d.has_ws && d.ws == 14 && d.sack_ok);
	}
	o.has_ws = false;
	o.sack_ok = false;
	ck_assert(iwn_syn_cookie_ts_decode(iwn_syn_cookie_tsval(1000, &o), 1000, &d));
	ck_assert(!d.has_ws && !d.sack_ok);
	ck_assert(!iwn_syn_cookie_ts_decode(2000, 1000, &d)); /* from our future */
}
END_TEST

/* Spoofed on-link sources: ARP requests and SYNs from 2000 addresses.
 * The cache stays at its size, the peer we talk to keeps its entry
 * (answers to it leave at once), and a new legitimate peer resolves. */
START_TEST(test_arp_flood)
{
	struct iwn_net net;
	server(&net);
	uint8_t f[256];
	uint64_t now = 1000000;
	ck_assert_int_eq(iwn_net_listen(&net, PORT, BACKLOG), 0);
	iwn_net_input(&net, f, arp_req_from(f, PEER, peer_mac), now);
	iwn_net_input(&net, f, syn_from(f, PEER, peer_mac, 40000, 1, true), now); /* in use now */
	ck_assert_uint_eq(out.synack, 1);
	for (uint32_t i = 0; i < 2000; i++) {
		uint8_t mac[6] = {0x02, 0xee, 0, 0, (uint8_t)(i >> 8), (uint8_t)i};
		uint32_t src = 0x0A000100u + i;
		now += 100;
		if (i % 2)
			iwn_net_input(&net, f, arp_req_from(f, src, mac), now);
		else
			iwn_net_input(&net, f, syn_from(f, src, mac, 1000, i, true), now);
		if (i % 97 == 0)
			iwn_net_timers(&net, now);
	}
	ck_assert_uint_eq(net.arp.n, net.cfg.arp_entries);
	uint32_t used = 0;
	for (uint32_t i = 0; i < net.arp.n; i++)
		used += net.arp.e[i].state != IWN_ARP_FREE;
	ck_assert_uint_le(used, net.cfg.arp_entries);
	ck_assert_uint_gt(net.arp.stats.evicted, 1000);
	ck_assert_ptr_nonnull(iwn_arp_lookup(&net.arp, PEER, now));
	/* The peer's next SYN is answered straight to its MAC. */
	out.synack = 0;
	uint64_t req = out.arp_req;
	iwn_net_input(&net, f, syn_from(f, PEER, peer_mac, 40001, 2, true), now);
	ck_assert_uint_eq(out.synack, 1);
	ck_assert_mem_eq(out.last, peer_mac, 6);
	ck_assert_uint_eq(out.arp_req, req);
	/* A new peer on the link asks for us and is answered, then its SYN too. */
	const uint8_t mac2[6] = {0x02, 0, 0, 0, 0, 0x09};
	iwn_net_input(&net, f, arp_req_from(f, 0x0A000009u, mac2), now);
	ck_assert_mem_eq(out.last, mac2, 6);
	out.synack = 0;
	iwn_net_input(&net, f, syn_from(f, 0x0A000009u, mac2, 40002, 3, true), now);
	ck_assert_uint_eq(out.synack, 1);
	ck_assert_mem_eq(out.last, mac2, 6);
	iwn_net_fini(&net);
}
END_TEST

START_TEST(test_arp_unresolved_never_evicts_in_use)
{
	struct iwn_arp_cache c;
	ck_assert_int_eq(iwn_arp_cache_init(&c, 4, 100, 60000000, 1000000, 3), 0);
	uint8_t mac[6] = {2, 0, 0, 0, 0, 1}, *fr;
	uint32_t fl;
	uint8_t frame[64] = {0};
	for (uint32_t i = 0; i < 4; i++) {
		iwn_arp_learn(&c, 100 + i, mac, 10, true, &fr, &fl);
		ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 100 + i, 11));
	}
	/* Every entry is a neighbour in use: a new address to resolve is refused. */
	ck_assert_int_eq(iwn_arp_enqueue(&c, 999, frame, sizeof(frame), 12), -ENOBUFS);
	ck_assert_uint_eq(c.stats.no_room, 1);
	for (uint32_t i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 100 + i, 13));
	/* A learned neighbour may take the least recently used one. */
	iwn_arp_learn(&c, 200, mac, 14, true, &fr, &fl);
	ck_assert_ptr_null(iwn_arp_lookup(&c, 100, 15));
	ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 101, 15));
	iwn_arp_cache_fini(&c);
}
END_TEST

static uint32_t icmp_from(uint8_t *f)
{
	uint8_t m[16] = {IWN_ICMP_ECHO_REQUEST, 0, 0, 0, 0, 1, 0, 1};
	iw_put_be16(m + 2, iwn_cksum_fold(iwn_cksum_add(0, m, sizeof(m))));
	iwn_eth_build(f, srv_mac, peer_mac, IWN_ETHERTYPE_IPV4);
	iwn_ip4_build(f + 14, PEER, NETSIM_IP(SRV), IWN_IPPROTO_ICMP, 1, 64, sizeof(m));
	memcpy(f + 34, m, sizeof(m));
	return 34 + sizeof(m);
}

START_TEST(test_rst_and_icmp_rate_limit)
{
	struct iwn_net net;
	server(&net);
	uint8_t f[256];
	uint64_t now = 1000000;
	iwn_net_input(&net, f, arp_req_from(f, PEER, peer_mac), now);
	/* 200 stray segments at once: a burst of 50 RSTs, the rest held back. */
	for (int i = 0; i < 200; i++)
		iwn_net_input(&net, f, ack_from(f, (uint16_t)(2000 + i), 1, 2, 0, 0), now);
	ck_assert_uint_eq(out.rst, 50);
	ck_assert_uint_eq(net.stats.tcp_resets_sent, 50);
	ck_assert_uint_eq(net.stats.tcp_resets_limited, 150);
	/* 1000/s: 20 ms later 20 more. */
	now += 20000;
	for (int i = 0; i < 100; i++)
		iwn_net_input(&net, f, ack_from(f, (uint16_t)(3000 + i), 1, 2, 0, 0), now);
	ck_assert_uint_eq(out.rst, 70);
	for (int i = 0; i < 200; i++)
		iwn_net_input(&net, f, icmp_from(f), now);
	ck_assert_uint_eq(out.icmp, 50);
	ck_assert_uint_eq(net.stats.icmp_echo_replies, 50);
	ck_assert_uint_eq(net.stats.icmp_limited, 150);
	/* An hour idle refills to the burst, no more. */
	now += 3600000000ull;
	iwn_net_input(&net, f, arp_req_from(f, PEER, peer_mac), now); /* the entry expired meanwhile */
	for (int i = 0; i < 100; i++)
		iwn_net_input(&net, f, icmp_from(f), now);
	ck_assert_uint_eq(out.icmp, 100);
	ck_assert_uint_eq(net.stats.icmp_limited, 200);
	iwn_net_fini(&net);
}
END_TEST

START_TEST(test_bucket_unlimited)
{
	struct iwn_bucket b;
	iwn_bucket_init(&b, 0, 1, 0);
	for (int i = 0; i < 1000; i++)
		ck_assert(iwn_bucket_take(&b, 0));
	iwn_bucket_init(&b, 10, 2, 0);
	ck_assert(iwn_bucket_take(&b, 0));
	ck_assert(iwn_bucket_take(&b, 0));
	ck_assert(!iwn_bucket_take(&b, 0));
	ck_assert(!iwn_bucket_take(&b, 99999));
	ck_assert(iwn_bucket_take(&b, 100000));
}
END_TEST

static Suite *flood_suite(void)
{
	Suite *s = suite_create("net_flood");
	TCase *t = tcase_create("flood");
	tcase_add_test(t, test_syn_flood_then_legit);
	tcase_add_test(t, test_syn_flood_then_legit_no_timestamps);
	tcase_add_test(t, test_cookie_validation);
	tcase_add_test(t, test_cookie_mss_and_ts_bits);
	tcase_add_test(t, test_accept_queue_gives_way);
	tcase_add_test(t, test_arp_flood);
	tcase_add_test(t, test_arp_unresolved_never_evicts_in_use);
	tcase_add_test(t, test_rst_and_icmp_rate_limit);
	tcase_add_test(t, test_bucket_unlimited);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(flood_suite());
}
