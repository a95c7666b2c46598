/* TCP connection behaviour over the simulated link, one property per
 * test: handshake and options, refusal, closes (simultaneous, TIME-WAIT
 * length, abort), RTO backoff and give-up, zero-window probing, fast
 * retransmit, delayed ACKs, simultaneous open. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "iwt_check.h"
#include "netsim.h"
#include "net/ipv4.h"
#include "net/tcp_seg.h"

#define PORT 7000
#define MS 1000ULL
#define SEC 1000000ULL

/* Every TCP segment seen on the link, with a drop rule. */
struct seglog {
	struct {
		uint64_t at;
		int from;
		struct iwn_tcp_hdr h;
		uint32_t plen;
	} e[4096];
	int n;
	int drop_from;         /* -1: none */
	uint64_t drop_after;   /* drop matching segments after this time */
	bool drop_data_only;
	int drop_nth_data;     /* drop the nth data segment from host 0 once (1-based), 0: none */
	int drop_nth_data2;    /* and this one */
	int data_seen;
};

static bool log_filter(void *arg, int from, uint8_t *f, uint32_t len)
{
	struct seglog *L = arg;
	struct iwn_ip4 ip;
	if (len < 34 || f[12] != 0x08 || f[13] != 0x00 || iwn_ip4_parse(f + 14, len - 14, &ip) ||
	    ip.proto != IWN_IPPROTO_TCP)
		return true;
	extern uint64_t log_now;
	struct iwn_tcp_hdr h;
	if (iwn_tcp_parse(f + 14 + ip.hlen, ip.totlen - ip.hlen, ip.src, ip.dst, &h))
		return true;
	if (L->n < 4096) {
		L->e[L->n].at = log_now;
		L->e[L->n].from = from;
		L->e[L->n].h = h;
		L->e[L->n].plen = h.plen;
		L->n++;
	}
	if (from == 0 && h.plen && L->drop_nth_data) {
		++L->data_seen;
		if (L->data_seen == L->drop_nth_data || L->data_seen == L->drop_nth_data2)
			return false;
	}
	if (from == L->drop_from && log_now >= L->drop_after && (!L->drop_data_only || h.plen))
		return false;
	return true;
}
uint64_t log_now;

static struct netsim sim;
static struct seglog lg;

static void setup(const struct iwn_tcp_cfg *t0, const struct iwn_tcp_cfg *t1, uint16_t mtu)
{
	struct netsim_link link = {.delay_us = 1000};
	netsim_init(&sim, 42, &link, t0, t1, mtu);
	memset(&lg, 0, sizeof(lg));
	lg.drop_from = -1;
	sim.filter = log_filter;
	sim.filter_arg = &lg;
}

static void run_until(uint64_t t)
{
	while (netsim_next(&sim) <= t) {
		log_now = netsim_next(&sim);
		netsim_step(&sim, t);
	}
	sim.now = t;
	log_now = t;
}

static void step_all(uint64_t span)
{
	run_until(sim.now + span);
}

/* Connect host 0 to a listener on host 1; returns the two ends. */
static void connect_pair(struct iwn_tcp_conn **a, struct iwn_tcp_conn **b)
{
	ck_assert_int_eq(iwn_net_listen(&sim.net[1], PORT, 4), 0);
	int err;
	log_now = sim.now;
	*a = iwn_net_connect(&sim.net[0], NETSIM_IP(1), PORT, 0, sim.now, &err);
	ck_assert_ptr_nonnull(*a);
	step_all(100 * MS);
	*b = iwn_net_accept(&sim.net[1], PORT);
	ck_assert_ptr_nonnull(*b);
	ck_assert_int_eq((*a)->state, IWN_TCP_ESTABLISHED);
	ck_assert_int_eq((*b)->state, IWN_TCP_ESTABLISHED);
}

START_TEST(test_handshake_options)
{
	struct iwn_tcp_cfg big;
	iwn_tcp_cfg_default(&big);
	big.rcvbuf = 1 << 20;
	setup(&big, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	ck_assert_ptr_null(iwn_net_accept(&sim.net[1], PORT));
	/* SYN, SYN-ACK, ACK on the wire. */
	ck_assert_int_ge(lg.n, 3);
	ck_assert_uint_eq(lg.e[0].h.flags, IWN_TCP_SYN);
	ck_assert(lg.e[0].h.opt.has_mss && lg.e[0].h.opt.mss == 1460);
	ck_assert(lg.e[0].h.opt.has_ws && lg.e[0].h.opt.ws == 5); /* 1 MiB >> 5 fits 16 bits */
	ck_assert_uint_eq(lg.e[0].h.win, 65535);
	ck_assert_uint_eq(lg.e[0].h.seq, a->iss);
	ck_assert_uint_eq(lg.e[1].h.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(lg.e[1].h.ack, a->iss + 1);
	ck_assert(lg.e[1].h.opt.has_ws && lg.e[1].h.opt.ws == 1); /* 64 KiB needs shift 1 */
	ck_assert_uint_eq(lg.e[2].h.flags, IWN_TCP_ACK);
	ck_assert_uint_eq(lg.e[2].h.ack, b->iss + 1);
	ck_assert(a->ws_on && b->ws_on);
	ck_assert_uint_eq(a->rcv_ws, 5);
	ck_assert_uint_eq(b->snd_ws, 5);
	/* Timestamps on both sides: 12 bytes of every segment go to them. */
	ck_assert(lg.e[0].h.opt.has_ts && lg.e[0].h.opt.tsecr == 0);
	ck_assert(lg.e[1].h.opt.has_ts && lg.e[1].h.opt.tsecr == lg.e[0].h.opt.tsval);
	ck_assert(lg.e[2].h.opt.has_ts && lg.e[2].h.opt.tsecr == lg.e[1].h.opt.tsval);
	ck_assert(a->ts_on && b->ts_on);
	ck_assert_uint_eq(a->eff_mss, 1448);
	/* The scaled window arrives intact: b may send up to what a's buffer
	 * holds so far (it starts at 64 KiB and grows towards 1 MiB with the
	 * bytes that pass: tcp_rcvbuf.h). */
	ck_assert_uint_ge(b->snd_wnd, IWN_RCV_INITIAL - 32);
	ck_assert_uint_le(b->snd_wnd, IWN_RCV_INITIAL);
	ck_assert_uint_eq(a->snd_wnd, 65535);
	/* Data both ways, then a clean close. */
	ck_assert_int_eq(iwn_tcp_send(a, "ping", 4, sim.now), 4);
	ck_assert_int_eq(iwn_tcp_send(b, "pong!", 5, sim.now), 5);
	step_all(100 * MS);
	char buf[16];
	ck_assert_uint_eq(iwn_tcp_recv(b, buf, sizeof(buf), sim.now), 4);
	ck_assert_mem_eq(buf, "ping", 4);
	ck_assert_uint_eq(iwn_tcp_recv(a, buf, sizeof(buf), sim.now), 5);
	ck_assert_mem_eq(buf, "pong!", 5);
	iwn_tcp_close(a, sim.now);
	step_all(100 * MS);
	ck_assert_int_eq(a->state, IWN_TCP_FIN_WAIT_2);
	ck_assert_int_eq(b->state, IWN_TCP_CLOSE_WAIT);
	ck_assert(iwn_tcp_eof(b));
	ck_assert_int_eq(iwn_tcp_send(a, "x", 1, sim.now), -EPIPE);
	/* Half-closed: b still sends. */
	ck_assert_int_eq(iwn_tcp_send(b, "late", 4, sim.now), 4);
	step_all(100 * MS);
	ck_assert_uint_eq(iwn_tcp_recv(a, buf, sizeof(buf), sim.now), 4);
	iwn_tcp_close(b, sim.now);
	step_all(100 * MS);
	ck_assert_int_eq(b->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(b->err, 0);
	ck_assert_int_eq(a->state, IWN_TCP_TIME_WAIT);
	netsim_fini(&sim);
}
END_TEST

/* The receive buffer starts at 64 KiB and grows with the bytes that pass
 * through it: after 2 MiB read by the application the window offered is
 * the whole 1 MiB again, and no byte was lost or changed. */
START_TEST(test_window_grows)
{
	struct iwn_tcp_cfg big;
	iwn_tcp_cfg_default(&big);
	big.rcvbuf = 1 << 20;
	big.sndbuf = 1 << 20;
	setup(&big, &big, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	ck_assert_uint_eq(a->rb.cap, IWN_RCV_INITIAL);
	static uint8_t chunk[65536], got[65536];
	uint64_t sent = 0, rcvd = 0, total = 2u << 20;
	for (int i = 0; i < 100000 && rcvd < total; i++) {
		while (sent < total) {
			uint32_t want = total - sent < sizeof(chunk) ? (uint32_t)(total - sent) : sizeof(chunk);
			for (uint32_t k = 0; k < want; k++)
				chunk[k] = (uint8_t)((sent + k) * 13 + 1);
			int n = iwn_tcp_send(b, chunk, want, sim.now);
			ck_assert_int_ge(n, 0);
			if (n == 0)
				break;
			sent += (uint64_t)n;
		}
		step_all(MS);
		uint32_t k;
		while ((k = iwn_tcp_recv(a, got, sizeof(got), sim.now)) > 0) {
			for (uint32_t j = 0; j < k; j++)
				ck_assert_uint_eq(got[j], (uint8_t)((rcvd + j) * 13 + 1));
			rcvd += k;
		}
	}
	ck_assert_uint_eq(rcvd, total);
	ck_assert_uint_eq(a->rb.cap, 1u << 20);
	/* The next ACK offers it all (a read alone updates the window only
	 * while the peer knows at most half the buffer: tcp_conn.c). */
	ck_assert_int_eq(iwn_tcp_send(b, "x", 1, sim.now), 1);
	step_all(100 * MS);
	ck_assert_uint_eq(iwn_tcp_recv(a, got, sizeof(got), sim.now), 1);
	ck_assert_uint_ge(b->snd_wnd, (1u << 20) - 32);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_mss_and_no_wscale)
{
	struct iwn_tcp_cfg nows;
	iwn_tcp_cfg_default(&nows);
	nows.wscale = false;
	nows.timestamps = false;
	nows.rcvbuf = 1 << 20; /* more than 16 bits can say without scaling */
	setup(NULL, &nows, 9000);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	ck_assert(lg.e[0].h.opt.has_ws);
	ck_assert(!lg.e[1].h.opt.has_ws); /* not offered back */
	ck_assert(!a->ws_on && !b->ws_on);
	ck_assert_uint_eq(a->snd_ws, 0);
	ck_assert_uint_eq(a->rcv_ws, 0);
	ck_assert_uint_eq(a->snd_wnd, 65535);
	ck_assert_uint_eq(a->eff_mss, 8960);
	ck_assert(!a->ts_on && !b->ts_on); /* host 1 does not do timestamps */
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_refused)
{
	setup(NULL, NULL, 0);
	int err;
	struct iwn_tcp_conn *a = iwn_net_connect(&sim.net[0], NETSIM_IP(1), 9, 0, sim.now, &err);
	ck_assert_ptr_nonnull(a);
	step_all(100 * MS);
	ck_assert_int_eq(a->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(a->err, -ECONNREFUSED);
	ck_assert_int_eq(iwn_tcp_send(a, "x", 1, sim.now), -EPIPE);
	iwn_net_release(&sim.net[0], a, sim.now);
	ck_assert_uint_eq(iwn_net_conn_count(&sim.net[0]), 0);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_syn_timeout)
{
	setup(NULL, NULL, 0);
	lg.drop_from = 0; /* everything host 0 sends is lost */
	int err;
	struct iwn_tcp_conn *a = iwn_net_connect(&sim.net[0], NETSIM_IP(1), PORT, 0, sim.now, &err);
	ck_assert_ptr_nonnull(a);
	step_all(600 * SEC);
	ck_assert_int_eq(a->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(a->err, -ETIMEDOUT);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_simultaneous_close)
{
	setup(NULL, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	iwn_tcp_close(a, sim.now);
	iwn_tcp_close(b, sim.now);
	ck_assert_int_eq(a->state, IWN_TCP_FIN_WAIT_1);
	ck_assert_int_eq(b->state, IWN_TCP_FIN_WAIT_1);
	step_all(1500); /* the FINs cross */
	ck_assert_int_eq(a->state, IWN_TCP_CLOSING);
	ck_assert_int_eq(b->state, IWN_TCP_CLOSING);
	step_all(2 * MS);
	ck_assert_int_eq(a->state, IWN_TCP_TIME_WAIT);
	ck_assert_int_eq(b->state, IWN_TCP_TIME_WAIT);
	/* TIME-WAIT lasts 2 MSL. */
	uint64_t tw = a->tw_at;
	ck_assert_uint_eq(tw - sim.now <= 2 * a->cfg.msl_us, 1);
	run_until(tw - 1);
	ck_assert_int_eq(a->state, IWN_TCP_TIME_WAIT);
	run_until(tw + 10 * MS);
	ck_assert_int_eq(a->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(b->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(a->err, 0);
	ck_assert_int_eq(b->err, 0);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_abort_resets_peer)
{
	setup(NULL, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	iwn_tcp_abort(a, sim.now);
	ck_assert_int_eq(a->err, -ECONNABORTED);
	step_all(10 * MS);
	ck_assert_int_eq(b->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(b->err, -ECONNRESET);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_rto_backoff_and_give_up)
{
	setup(NULL, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	uint64_t rto0 = a->rtt.rto;
	ck_assert_uint_eq(rto0, a->cfg.rto_min_us); /* 2 ms RTT: the minimum */
	sim.net[0].arp.reachable_us = 7200 * SEC; /* no re-resolution delays in the timing */
	iwn_arp_learn(&sim.net[0].arp, NETSIM_IP(1), sim.net[1].cfg.mac, sim.now, true, &(uint8_t *){0},
		      &(uint32_t){0});
	lg.drop_from = 0;
	lg.drop_after = sim.now;
	int first = lg.n;
	ck_assert_int_eq(iwn_tcp_send(a, "data", 4, sim.now), 4);
	step_all(3600 * SEC);
	ck_assert_int_eq(a->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(a->err, -ETIMEDOUT);
	/* One transmission and max_retries retransmissions, each interval
	 * twice the previous one up to the 60 s cap. */
	int n = 0;
	uint64_t t[32];
	for (int i = first; i < lg.n; i++)
		if (lg.e[i].from == 0 && lg.e[i].plen == 4 && n < 32)
			t[n++] = lg.e[i].at;
	ck_assert_int_eq(n, 1 + (int)a->cfg.max_retries);
	uint64_t want = rto0;
	for (int i = 1; i < n; i++) {
		ck_assert_uint_eq(t[i] - t[i - 1], want);
		want = want * 2 > a->cfg.rto_max_us ? a->cfg.rto_max_us : want * 2;
	}
	ck_assert_uint_eq(a->stats.rto_expired, a->cfg.max_retries);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_zero_window_probe)
{
	struct iwn_tcp_cfg small;
	iwn_tcp_cfg_default(&small);
	small.rcvbuf = 1000;
	setup(NULL, &small, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	static uint8_t d[5000], got[5000];
	for (int i = 0; i < 5000; i++)
		d[i] = (uint8_t)(i * 13);
	ck_assert_int_eq(iwn_tcp_send(a, d, 5000, sim.now), 5000);
	step_all(30 * SEC);
	/* b never read: a filled the window and probes it. */
	ck_assert_uint_eq(iwn_tcp_readable(b), 1000);
	ck_assert_uint_eq(a->snd_wnd, 0);
	ck_assert_uint_gt(a->stats.window_probes, 0);
	ck_assert_int_eq(a->state, IWN_TCP_ESTABLISHED); /* probes answered: no give-up */
	step_all(600 * SEC);
	ck_assert_int_eq(a->state, IWN_TCP_ESTABLISHED);
	/* Reading reopens the window; everything arrives. */
	uint32_t off = 0;
	for (int k = 0; k < 1000 && off < 5000; k++) {
		off += iwn_tcp_recv(b, got + off, 5000 - off, sim.now);
		step_all(10 * MS);
	}
	ck_assert_uint_eq(off, 5000);
	ck_assert_mem_eq(got, d, 5000);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_fast_retransmit)
{
	struct iwn_tcp_cfg t;
	iwn_tcp_cfg_default(&t);
	t.delack_us = 0;
	setup(&t, &t, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	lg.drop_nth_data = 3;
	static uint8_t d[40000], got[40000];
	for (int i = 0; i < 40000; i++)
		d[i] = (uint8_t)(i * 31 + 7);
	uint32_t sent = 0, off = 0;
	for (int k = 0; k < 2000 && off < sizeof(d); k++) {
		if (sent < sizeof(d)) {
			int r = iwn_tcp_send(a, d + sent, (uint32_t)sizeof(d) - sent, sim.now);
			ck_assert_int_ge(r, 0);
			sent += (uint32_t)r;
		}
		off += iwn_tcp_recv(b, got + off, (uint32_t)sizeof(got) - off, sim.now);
		step_all(MS);
	}
	ck_assert_uint_eq(off, sizeof(d));
	ck_assert_mem_eq(got, d, sizeof(d));
	ck_assert_uint_eq(a->stats.fast_retransmits, 1);
	ck_assert_uint_eq(a->stats.rto_expired, 0);
	ck_assert_uint_ge(a->stats.dupacks, 3);
	ck_assert(!a->cc.in_recovery);
	ck_assert_uint_gt(b->stats.ooo_segs, 0);
	netsim_fini(&sim);
}
END_TEST

/* Two segments of one window lost: SACK recovery resends both holes in
 * one round trip, with no timeout; without SACK NewReno needs a partial
 * ACK per hole. */
static void two_losses(bool sack, struct iwn_tcp_stats *st)
{
	struct iwn_tcp_cfg t;
	iwn_tcp_cfg_default(&t);
	t.delack_us = 0;
	t.sack = sack;
	setup(&t, &t, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	lg.drop_nth_data = 20; /* past slow start's first rounds: a window */
	lg.drop_nth_data2 = 24; /* large enough for dupacks after both */
	static uint8_t d[60000], got[60000];
	for (int i = 0; i < 60000; i++)
		d[i] = (uint8_t)(i * 29 + 1);
	uint32_t sent = 0, off = 0;
	for (int k = 0; k < 4000 && off < sizeof(d); k++) {
		if (sent < sizeof(d)) {
			int r = iwn_tcp_send(a, d + sent, (uint32_t)sizeof(d) - sent, sim.now);
			ck_assert_int_ge(r, 0);
			sent += (uint32_t)r;
		}
		off += iwn_tcp_recv(b, got + off, (uint32_t)sizeof(got) - off, sim.now);
		step_all(MS);
	}
	ck_assert_uint_eq(off, sizeof(d));
	ck_assert_mem_eq(got, d, sizeof(d));
	ck_assert_int_eq(a->sack_on, sack);
	*st = a->stats;
	netsim_fini(&sim);
}

START_TEST(test_sack_recovery)
{
	struct iwn_tcp_stats with, without;
	two_losses(true, &with);
	two_losses(false, &without);
	ck_assert_uint_eq(with.rto_expired, 0);
	ck_assert_uint_eq(with.fast_retransmits, 1);
	ck_assert_uint_ge(with.sack_rexmits, 1); /* the second hole, before any partial ACK */
	ck_assert_uint_eq(with.retransmitted_segs, 2);
	ck_assert_uint_eq(without.rto_expired, 0);
	ck_assert_uint_eq(without.sack_rexmits, 0);
	ck_assert_uint_eq(without.retransmitted_segs, 2); /* NewReno partial ACK */
}
END_TEST

START_TEST(test_delayed_ack)
{
	setup(NULL, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	int first = lg.n;
	uint64_t t0 = sim.now;
	ck_assert_int_eq(iwn_tcp_send(a, "x", 1, sim.now), 1);
	step_all(200 * MS);
	/* The single segment is acknowledged after the delayed-ACK timer. */
	uint64_t ack_at = 0;
	for (int i = first; i < lg.n; i++)
		if (lg.e[i].from == 1 && !ack_at)
			ack_at = lg.e[i].at;
	ck_assert_uint_eq(ack_at, t0 + 1000 + b->cfg.delack_us);
	/* Two full segments: acknowledged at once. */
	first = lg.n;
	static uint8_t d[2 * 1460];
	t0 = sim.now;
	ck_assert_int_eq(iwn_tcp_send(a, d, sizeof(d), sim.now), (int)sizeof(d));
	step_all(200 * MS);
	ack_at = 0;
	for (int i = first; i < lg.n; i++)
		if (lg.e[i].from == 1 && !ack_at)
			ack_at = lg.e[i].at;
	ck_assert_uint_eq(ack_at, t0 + 1000);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_simultaneous_open)
{
	setup(NULL, NULL, 0);
	int err;
	struct iwn_tcp_conn *a = iwn_net_connect(&sim.net[0], NETSIM_IP(1), 5001, 5000, sim.now, &err);
	struct iwn_tcp_conn *b = iwn_net_connect(&sim.net[1], NETSIM_IP(0), 5000, 5001, sim.now, &err);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	step_all(5 * SEC);
	ck_assert_int_eq(a->state, IWN_TCP_ESTABLISHED);
	ck_assert_int_eq(b->state, IWN_TCP_ESTABLISHED);
	ck_assert_int_eq(iwn_tcp_send(a, "hi", 2, sim.now), 2);
	step_all(100 * MS);
	char buf[4];
	ck_assert_uint_eq(iwn_tcp_recv(b, buf, 4, sim.now), 2);
	ck_assert_mem_eq(buf, "hi", 2);
	netsim_fini(&sim);
}
END_TEST

START_TEST(test_connect_errors)
{
	setup(NULL, NULL, 0);
	int err;
	ck_assert_int_eq(iwn_net_listen(&sim.net[0], 80, 1), 0);
	ck_assert_ptr_null(iwn_net_connect(&sim.net[0], NETSIM_IP(1), 80, 80, sim.now, &err));
	ck_assert_int_eq(err, -EADDRINUSE);
	struct iwn_tcp_conn *c[64];
	int n = 0;
	while (n < 64 && (c[n] = iwn_net_connect(&sim.net[0], NETSIM_IP(1), 80, 0, sim.now, &err)))
		n++;
	ck_assert_int_eq(n, (int)sim.net[0].cfg.max_conns);
	ck_assert_ptr_null(iwn_net_connect(&sim.net[0], NETSIM_IP(1), 80, 0, sim.now, &err));
	ck_assert_int_eq(err, -EMFILE);
	netsim_fini(&sim);
}
END_TEST

/* The connection core alone, no host layer: segments captured from the
 * output callback, crafted ones fed in. */
static struct {
	struct iwn_tcp_hdr h[16];
	uint8_t data[16][64];
	int n;
} bare;

static void bare_out(void *arg, struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, uint8_t *seg, uint32_t len)
{
	(void)arg;
	(void)c;
	ck_assert_int_lt(bare.n, 16);
	ck_assert_int_eq(iwn_tcp_parse(seg, len, laddr, raddr, &bare.h[bare.n]), 0);
	uint32_t pl = bare.h[bare.n].plen < 64 ? bare.h[bare.n].plen : 64;
	memcpy(bare.data[bare.n], bare.h[bare.n].payload, pl);
	bare.h[bare.n].payload = bare.data[bare.n];
	bare.n++;
}

START_TEST(test_bare_close_in_syn_received)
{
	static uint8_t txbuf[64 + 60 + 1460];
	static const uint8_t key[16] = {7};
	struct iwn_tcp_cfg cfg;
	iwn_tcp_cfg_default(&cfg);
	struct iwn_tcp_conn c;
	ck_assert_int_eq(iwn_tcp_conn_init(&c, &cfg, txbuf, 64, bare_out, NULL, key), 0);
	memset(&bare, 0, sizeof(bare));
	struct iwn_tcp_hdr syn = {.sport = 1234, .dport = 80, .seq = 5000, .flags = IWN_TCP_SYN, .win = 8192};
	syn.opt.has_mss = true;
	syn.opt.mss = 1000;
	ck_assert_int_eq(iwn_tcp_accept_syn(&c, 1, 2, &syn, 100), 0);
	ck_assert_int_eq(c.state, IWN_TCP_SYN_RCVD);
	ck_assert_int_eq(bare.n, 1);
	ck_assert_uint_eq(bare.h[0].flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(bare.h[0].ack, 5001);
	ck_assert(!bare.h[0].opt.has_ws && !bare.h[0].opt.has_ts && !bare.h[0].opt.sack_ok); /* not offered */
	ck_assert_uint_eq(c.eff_mss, 1000);
	/* Close before the handshake completes: nothing yet, the state stays. */
	iwn_tcp_close(&c, 200);
	ck_assert_int_eq(c.state, IWN_TCP_SYN_RCVD);
	ck_assert_int_eq(bare.n, 1);
	ck_assert_int_eq(iwn_tcp_send(&c, "x", 1, 200), -EPIPE);
	/* The SYN-ACK is lost: the RTO resends it, not a FIN. */
	iwn_tcp_timers(&c, iwn_tcp_next_deadline(&c));
	ck_assert_int_eq(bare.n, 2);
	ck_assert_uint_eq(bare.h[1].flags, IWN_TCP_SYN | IWN_TCP_ACK);
	/* The ACK arrives with 3 data bytes: FIN-WAIT-1, data acknowledged,
	 * FIN sent. */
	uint8_t three[3] = {'a', 'b', 'c'};
	struct iwn_tcp_hdr ack = {.sport = 1234, .dport = 80, .seq = 5001, .ack = c.iss + 1,
				  .flags = IWN_TCP_ACK | IWN_TCP_PSH, .win = 8192, .payload = three, .plen = 3};
	iwn_tcp_input(&c, &ack, 3000000);
	ck_assert_int_eq(c.state, IWN_TCP_FIN_WAIT_1);
	ck_assert_int_eq(bare.n, 3);
	ck_assert_uint_eq(bare.h[2].flags, IWN_TCP_ACK | IWN_TCP_FIN);
	ck_assert_uint_eq(bare.h[2].seq, c.iss + 1);
	ck_assert_uint_eq(bare.h[2].ack, 5004);
	char buf[8];
	ck_assert_uint_eq(iwn_tcp_recv(&c, buf, sizeof(buf), 3000000), 3);
	ck_assert_mem_eq(buf, "abc", 3);
	/* Peer ACKs our FIN and sends its own: TIME-WAIT. */
	struct iwn_tcp_hdr fin = {.sport = 1234, .dport = 80, .seq = 5004, .ack = c.iss + 2,
				  .flags = IWN_TCP_ACK | IWN_TCP_FIN, .win = 8192};
	iwn_tcp_input(&c, &fin, 3001000);
	ck_assert_int_eq(c.state, IWN_TCP_TIME_WAIT);
	ck_assert(iwn_tcp_eof(&c));
	ck_assert_uint_eq(bare.h[bare.n - 1].ack, 5005);
	/* A stale segment from before (old timestamp-free duplicate) is
	 * answered with an ACK and changes nothing. */
	int before = bare.n;
	iwn_tcp_input(&c, &ack, 3002000);
	ck_assert_int_eq(bare.n, before + 1);
	ck_assert_int_eq(c.state, IWN_TCP_TIME_WAIT);
	iwn_tcp_timers(&c, iwn_tcp_next_deadline(&c));
	ck_assert_int_eq(c.state, IWN_TCP_CLOSED);
	ck_assert_int_eq(c.err, 0);
	iwn_tcp_conn_fini(&c);
}
END_TEST

START_TEST(test_bare_rst_rules)
{
	static uint8_t txbuf[64 + 60 + 1460];
	static const uint8_t key[16] = {9};
	struct iwn_tcp_cfg cfg;
	iwn_tcp_cfg_default(&cfg);
	struct iwn_tcp_conn c;
	ck_assert_int_eq(iwn_tcp_conn_init(&c, &cfg, txbuf, 64, bare_out, NULL, key), 0);
	memset(&bare, 0, sizeof(bare));
	struct iwn_tcp_hdr syn = {.sport = 1, .dport = 2, .seq = 100, .flags = IWN_TCP_SYN, .win = 1000};
	ck_assert_int_eq(iwn_tcp_accept_syn(&c, 1, 2, &syn, 0), 0);
	struct iwn_tcp_hdr ack = {.sport = 1, .dport = 2, .seq = 101, .ack = c.iss + 1, .flags = IWN_TCP_ACK,
				  .win = 1000};
	iwn_tcp_input(&c, &ack, 10);
	ck_assert_int_eq(c.state, IWN_TCP_ESTABLISHED);
	/* RST in the window but not at rcv_nxt: challenge ACK (RFC 5961). */
	int n0 = bare.n;
	struct iwn_tcp_hdr rst = {.sport = 1, .dport = 2, .seq = 105, .flags = IWN_TCP_RST};
	iwn_tcp_input(&c, &rst, 20);
	ck_assert_int_eq(c.state, IWN_TCP_ESTABLISHED);
	ck_assert_int_eq(bare.n, n0 + 1);
	ck_assert_uint_eq(bare.h[n0].flags, IWN_TCP_ACK);
	/* Outside the window: ignored silently. */
	rst.seq = 100 + 70000;
	iwn_tcp_input(&c, &rst, 30);
	ck_assert_int_eq(bare.n, n0 + 1);
	/* A SYN on an established connection: challenge ACK, no reset. */
	struct iwn_tcp_hdr syn2 = {.sport = 1, .dport = 2, .seq = 7777, .flags = IWN_TCP_SYN, .win = 1000};
	iwn_tcp_input(&c, &syn2, 40);
	ck_assert_int_eq(c.state, IWN_TCP_ESTABLISHED);
	ck_assert_int_eq(bare.n, n0 + 2);
	/* An ACK for data never sent: ACK back, dropped. */
	struct iwn_tcp_hdr bad = {.sport = 1, .dport = 2, .seq = 101, .ack = c.iss + 500, .flags = IWN_TCP_ACK,
				  .win = 1000};
	iwn_tcp_input(&c, &bad, 50);
	ck_assert_uint_eq(c.stats.bad_acks, 1);
	ck_assert_uint_eq(c.snd_una, c.iss + 1);
	/* RST exactly at rcv_nxt: reset. */
	rst.seq = 101;
	iwn_tcp_input(&c, &rst, 60);
	ck_assert_int_eq(c.state, IWN_TCP_CLOSED);
	ck_assert_int_eq(c.err, -ECONNRESET);
	iwn_tcp_conn_fini(&c);
}
END_TEST

/* Step until a's state is CLOSED (or the limit); returns when it closed. */
static uint64_t run_until_closed(struct iwn_tcp_conn *a, uint64_t limit)
{
	while (a->state != IWN_TCP_CLOSED && sim.now < limit)
		step_all(5 * MS);
	return sim.now;
}

/* The peer goes silent with our data outstanding: the user timeout, not
 * 12 backed-off RTOs, ends the connection, on time. */
START_TEST(test_user_timeout)
{
	struct iwn_tcp_cfg ut;
	iwn_tcp_cfg_default(&ut);
	ut.user_timeout_us = 2 * SEC;
	setup(&ut, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	lg.drop_from = 1;
	lg.drop_after = sim.now;
	uint64_t t0 = sim.now;
	ck_assert_int_eq(iwn_tcp_send(a, "data", 4, sim.now), 4);
	uint64_t t = run_until_closed(a, t0 + 3600 * SEC);
	ck_assert_int_eq(a->state, IWN_TCP_CLOSED);
	ck_assert_int_eq(a->err, -ETIMEDOUT);
	ck_assert_uint_ge(t - t0, 2 * SEC);
	ck_assert_uint_le(t - t0, 2 * SEC + 10 * MS);
	ck_assert_uint_eq(a->stats.user_timeouts, 1);
	netsim_fini(&sim);
}
END_TEST

/* A peer that keeps acknowledging keeps the connection, however long the
 * transfer; one that answers probes but never opens its window does
 * not (no progress: Linux applies TCP_USER_TIMEOUT to this too). */
START_TEST(test_user_timeout_progress)
{
	struct iwn_tcp_cfg ut, small;
	iwn_tcp_cfg_default(&ut);
	ut.user_timeout_us = 2 * SEC;
	iwn_tcp_cfg_default(&small);
	small.rcvbuf = 1000;
	setup(&ut, &small, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	static uint8_t d[1000], got[1000];
	/* 10 s of 1000-byte sends, each read by b: progress all the time. */
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(iwn_tcp_send(a, d, 1000, sim.now), 1000);
		step_all(100 * MS);
		ck_assert_uint_eq(iwn_tcp_recv(b, got, sizeof(got), sim.now), 1000);
	}
	ck_assert_int_eq(a->state, IWN_TCP_ESTABLISHED);
	/* Now b stops reading: its window closes, probes are answered, no
	 * progress. */
	ck_assert_int_eq(iwn_tcp_send(a, d, 1000, sim.now), 1000);
	ck_assert_int_eq(iwn_tcp_send(a, d, 1000, sim.now), 1000);
	uint64_t t0 = sim.now;
	uint64_t t = run_until_closed(a, t0 + 600 * SEC);
	ck_assert_int_eq(a->err, -ETIMEDOUT);
	ck_assert_uint_ge(t - t0, 2 * SEC);
	ck_assert_uint_le(t - t0, 3 * SEC);
	netsim_fini(&sim);
}
END_TEST

/* Keepalive: an idle connection to a live peer (our own TCP answers the
 * probes) stays up; to a silent one it ends after the probes. */
START_TEST(test_keepalive)
{
	struct iwn_tcp_cfg ka;
	iwn_tcp_cfg_default(&ka);
	ka.keepalive_us = 1 * SEC;
	ka.keepalive_probes = 3;
	setup(&ka, NULL, 0);
	struct iwn_tcp_conn *a, *b;
	connect_pair(&a, &b);
	step_all(60 * SEC);
	ck_assert_int_eq(a->state, IWN_TCP_ESTABLISHED);
	ck_assert_int_eq(b->state, IWN_TCP_ESTABLISHED);
	ck_assert_uint_ge(a->stats.keepalives_sent, 55);
	ck_assert_uint_le(a->stats.keepalives_sent, 61);
	ck_assert_uint_eq(b->stats.keepalives_sent, 0); /* b has none configured */
	/* The peer vanishes. */
	lg.drop_from = 1;
	lg.drop_after = sim.now;
	uint64_t sent = a->stats.keepalives_sent, heard = a->heard_at;
	uint64_t t = run_until_closed(a, sim.now + 600 * SEC);
	ck_assert_int_eq(a->err, -ETIMEDOUT);
	ck_assert_uint_eq(a->stats.keepalives_sent - sent, 3);
	ck_assert_uint_ge(t - heard, 4 * SEC);
	ck_assert_uint_le(t - heard, 4 * SEC + 10 * MS);
	netsim_fini(&sim);
}
END_TEST

static Suite *tcp_suite(void)
{
	Suite *s = suite_create("net_tcp");
	TCase *t = tcase_create("tcp");
	tcase_add_test(t, test_handshake_options);
	tcase_add_test(t, test_window_grows);
	tcase_add_test(t, test_mss_and_no_wscale);
	tcase_add_test(t, test_refused);
	tcase_add_test(t, test_syn_timeout);
	tcase_add_test(t, test_simultaneous_close);
	tcase_add_test(t, test_abort_resets_peer);
	tcase_add_test(t, test_rto_backoff_and_give_up);
	tcase_add_test(t, test_zero_window_probe);
	tcase_add_test(t, test_fast_retransmit);
	tcase_add_test(t, test_sack_recovery);
	tcase_add_test(t, test_delayed_ack);
	tcase_add_test(t, test_simultaneous_open);
	tcase_add_test(t, test_connect_errors);
	tcase_add_test(t, test_bare_close_in_syn_received);
	tcase_add_test(t, test_bare_rst_rules);
	tcase_add_test(t, test_user_timeout);
	tcase_add_test(t, test_user_timeout_progress);
	tcase_add_test(t, test_keepalive);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(tcp_suite());
}
