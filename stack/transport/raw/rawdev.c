/* The raw device: pktio + the TCP/IPv4 host, stand-alone or in a
 * context's progress loop. See rawdev.h. */
#include "rawdev.h"

#include "net/gso.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>

#define RX_BATCH 64 /* frames (V2) or blocks (V3) per pktio call */
#define RX_ROUNDS 16 /* bound one poll, so users and timers get a turn */

uint64_t iw_rawdev_now_us(void)
{
	return iw_now_ns() / 1000u;
}

static void dev_tx(void *arg, const uint8_t *frame, uint32_t len)
{
	struct iw_rawdev *d = arg;
	if (d->ctx && d->ctx->trace) /* no call per frame when not tracing */
		iw_trace_frame(d->ctx, frame, len);
	int rc = iw_pktio_send(d->pio, frame, len);
	if (rc == -ENOBUFS) {
		/* Ring full: push it out and retry once; else the frame is lost
		 * and TCP resends it. */
		(void)iw_pktio_flush(d->pio);
		rc = iw_pktio_send(d->pio, frame, len);
	}
	if (rc)
		d->st.tx_dropped++;
}

/* A TCP frame with its checksum left to the kernel, maybe a GSO
 * super-segment. */
static void dev_tx_off(void *arg, const uint8_t *frame, uint32_t len, uint32_t gso_size)
{
	struct iw_rawdev *d = arg;
	if (d->ctx && d->ctx->trace)
		iw_trace_frame(d->ctx, frame, len);
	int rc = iw_pktio_send_tcp(d->pio, frame, len, gso_size);
	if (rc == -ENOBUFS) {
		(void)iw_pktio_flush(d->pio);
		rc = iw_pktio_send_tcp(d->pio, frame, len, gso_size);
	}
	if (rc)
		d->st.tx_dropped++;
}

/* TCP builds its frames straight in the transmit ring's next slot. */
static uint8_t *dev_slot(void *arg, uint32_t need)
{
	struct iw_rawdev *d = arg;
	uint32_t cap = 0;
	uint8_t *s = iw_pktio_tx_slot(d->pio, &cap);
	return s && cap >= need ? s : NULL;
}

int iw_rawdev_open(const struct iw_rawdev_cfg *cfg, struct iw_rawdev **out, const char **why)
{
	const char *w = "bad configuration";
	int rc = -EINVAL;

	if (!cfg || !out || !cfg->ifname || cfg->ip == 0 || cfg->prefix > 32)
		goto fail_early;
	struct iw_rawdev *d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		w = "out of memory";
		goto fail_early;
	}
	uint8_t prefix = cfg->prefix ? cfg->prefix : 24;
	d->netmask = prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix);
	d->watch.fd = -1;
	d->peek.spin_us = cfg->spin_us == IW_RAWDEV_SPIN_OFF ? 0 : cfg->spin_us ? cfg->spin_us : IW_RAWDEV_SPIN_DEFAULT_US;
	const char *spin = getenv("IWARP_RAW_SPIN_US");
	if (spin && *spin) {
		char *end;
		unsigned long v = strtoul(spin, &end, 10);
		if (*end || v > 1000000u) {
			free(d);
			w = "IWARP_RAW_SPIN_US: not a number of microseconds (0..1000000)";
			goto fail_early;
		}
		d->peek.spin_us = (uint32_t)v;
	}
	iw_rawdev_spin_init(&d->spin, d->peek.spin_us);

	bool offload = !cfg->no_offload;
	const char *off_env = getenv("IWARP_RAW_OFFLOAD");
	if (off_env && *off_env) {
		if (strcmp(off_env, "0") && strcmp(off_env, "1")) {
			free(d);
			w = "IWARP_RAW_OFFLOAD: 0 (off) or 1 (on)";
			goto fail_early;
		}
		offload = off_env[0] == '1';
	}
	struct iw_pktio_cfg pc = {
		.offload = offload,
		.ifname = cfg->ifname,
		.ipv4 = cfg->ip,
		.rx_ring = cfg->rx_ring,
		.drop_ppm = cfg->drop_ppm,
		.reorder_ppm = cfg->reorder_ppm,
		.impair_seed = cfg->impair_seed,
	};
	rc = iw_pktio_open(&pc, &d->pio, &w);
	if (rc)
		goto fail;

	struct iwn_net_cfg nc;
	iwn_net_cfg_default(&nc);
	iw_pktio_mac(d->pio, nc.mac);
	nc.ip = cfg->ip;
	uint32_t mtu = iw_pktio_mtu(d->pio);
	if (cfg->mtu && cfg->mtu < mtu)
		mtu = cfg->mtu;
	if (mtu < 576 || mtu > 65535) {
		rc = -EINVAL;
		w = "interface MTU out of range (576..65535)";
		goto fail;
	}
	nc.mtu = (uint16_t)mtu;
	if (cfg->max_conns)
		nc.max_conns = cfg->max_conns;
	/* 1 MiB in flight: at 9000-byte frames, 256 KiB made 3x more flushes
	 * (send syscalls) and ACKs per MiB, and deferred FPDUs. */
	nc.tcp.sndbuf = cfg->sndbuf ? cfg->sndbuf : 1u << 20;
	/* A 1 MiB window too: with 256 KiB a kernel sender (whose own
	 * windows grow to megabytes) waited on ours for READ responses. */
	nc.tcp.rcvbuf = cfg->rcvbuf ? cfg->rcvbuf : 1u << 20;
	/* One record per FPDU: enough marks to fill the send buffer with
	 * MTU-1500 FPDUs (the default 256 capped it near 370 KB). */
	if (nc.tcp.max_records < nc.tcp.sndbuf / 1024)
		nc.tcp.max_records = nc.tcp.sndbuf / 1024;
	if (getrandom(nc.isn_key, sizeof(nc.isn_key), 0) != (ssize_t)sizeof(nc.isn_key)) {
		rc = -EIO;
		w = "no random bytes for the ISN key";
		goto fail;
	}
	nc.tx = dev_tx;
	nc.tx_arg = d;
	nc.tx_slot = dev_slot;
	nc.batch_output = getenv("IWARP_RAW_NOBATCH") == NULL;
	if (iw_pktio_offload(d->pio)) {
		nc.tx_off = dev_tx_off;
		nc.gso_max = IWN_GSO_MAX_PAYLOAD;
	}
	rc = iwn_net_init(&d->net, &nc);
	if (rc) {
		w = "cannot set up the TCP/IP host";
		goto fail;
	}
	*out = d;
	return 0;
fail:
	iw_pktio_close(d->pio);
	free(d);
fail_early:
	if (why)
		*why = w;
	return rc;
}

void iw_rawdev_close(struct iw_rawdev *d)
{
	if (!d)
		return;
	iw_rawdev_detach(d);
	/* Batched output still due (the last data or ACK) leaves first. */
	iwn_net_output_pending(&d->net, iw_rawdev_now_us());
	iwn_net_fini(&d->net);
	(void)iw_pktio_flush(d->pio);
	if (getenv("IWARP_RAW_STATS")) {
		/* Counts for benchmarking: per-frame and per-syscall costs. */
		struct iw_pktio_stats ps;
		iw_pktio_get_stats(d->pio, &ps);
		fprintf(stderr,
			"iwarp raw dev: polls %" PRIu64 ", flushes %" PRIu64 ", frames in %" PRIu64 ", timer runs %" PRIu64
			", timer rearms %" PRIu64 ", spin hits %" PRIu64 ", waits short %" PRIu64 " long %" PRIu64
			" unspun %" PRIu64 ", tx dropped %" PRIu64
			"; pktio rx %" PRIu64 " frames, kernel drops %" PRIu64 ", truncated %" PRIu64
			", tx %" PRIu64 " frames in %" PRIu64 " flushes, ring full %" PRIu64 "; offload %d: rx csum ok %" PRIu64
			", rx gso %" PRIu64 ", tx gso %" PRIu64 " (%" PRIu64 " bytes)\n",
			d->st.polls, d->st.flushes, d->st.frames_in, d->st.timer_runs, d->st.timer_rearms, d->st.spin_hits,
			d->st.waits_short, d->st.waits_long, d->st.waits_unspun, d->st.tx_dropped, ps.rx_frames,
			ps.rx_kernel_drops, ps.rx_truncated, ps.tx_frames,
			ps.tx_flushes, ps.tx_ring_full, (int)iw_pktio_offload(d->pio), ps.rx_csum_ok, ps.rx_gso, ps.tx_gso,
			ps.tx_gso_bytes);
		/* What the host did with unsolicited traffic (floods). */
		const struct iwn_net_stats *ns = &d->net.stats;
		fprintf(stderr,
			"iwarp raw net: SYN cookies sent %" PRIu64 ", ok %" PRIu64 ", bad %" PRIu64 ", dropped %" PRIu64
			"; SYNs dropped %" PRIu64 "; accept queue evicted %" PRIu64 "; RSTs sent %" PRIu64 ", rate-limited %" PRIu64
			"; ICMP echo replies %" PRIu64 ", rate-limited %" PRIu64 "; ARP evicted %" PRIu64
			", no room %" PRIu64 ", resolve failed %" PRIu64 "\n",
			ns->tcp_cookies_sent, ns->tcp_cookies_ok, ns->tcp_cookies_bad, ns->tcp_cookies_dropped,
			ns->tcp_syn_dropped, ns->tcp_accept_evicted, ns->tcp_resets_sent, ns->tcp_resets_limited, ns->icmp_echo_replies,
			ns->icmp_limited, d->net.arp.stats.evicted, d->net.arp.stats.no_room,
			d->net.arp.stats.resolve_failed);
	}
	iw_pktio_close(d->pio);
	free(d);
}

int iw_rawdev_fd(const struct iw_rawdev *d)
{
	return iw_pktio_fd(d->pio);
}

uint64_t iw_rawdev_next_deadline_us(const struct iw_rawdev *d)
{
	return iwn_net_next_deadline(&d->net);
}

bool iw_rawdev_on_link(const struct iw_rawdev *d, uint32_t addr)
{
	return (addr & d->netmask) == (d->net.cfg.ip & d->netmask);
}

struct rx_arg {
	struct iw_rawdev *d;
	uint64_t now;
};

static void dev_rx(void *arg, const uint8_t *frame, uint32_t len)
{
	struct rx_arg *a = arg;
	if (a->d->ctx && a->d->ctx->trace)
		iw_trace_frame(a->d->ctx, frame, len);
	uint32_t f = iw_pktio_rx_flags(a->d->pio);
	iwn_net_input_flags(&a->d->net, frame, len, a->now, (f & IW_PKTIO_RX_CSUM_OK) ? IWN_NET_RX_CSUM_OK : 0);
}

int iw_rawdev_poll(struct iw_rawdev *d)
{
	int total = 0;
	d->st.polls++;
	for (int round = 0; round < RX_ROUNDS; round++) {
		struct rx_arg a = { d, iw_rawdev_now_us() };
		int n = iw_pktio_recv(d->pio, RX_BATCH, dev_rx, &a);
		if (n <= 0)
			break;
		total += n;
		/* ACKs go out between batches, not after the whole backlog. */
		if (n == RX_BATCH)
			iwn_net_output_pending(&d->net, a.now);
		(void)iw_pktio_flush(d->pio);
	}
	d->st.frames_in += (uint64_t)total;
	uint64_t now = iw_rawdev_now_us();
	if (total && d->waiting) {
		/* A wait ended: does the spin pay? (See struct iw_rawdev_spin.) */
		uint64_t w = now > d->wait_t0 ? now - d->wait_t0 : 0;
		if (!d->peek.spin_us)
			d->st.waits_unspun++;
		if (w <= d->spin.max_us)
			d->st.waits_short++;
		else
			d->st.waits_long++;
		d->peek.spin_us = iw_rawdev_spin_wait_done(&d->spin, w);
		d->waiting = false;
	}
	if (iwn_net_next_deadline(&d->net) <= now) {
		d->st.timer_runs++;
		iwn_net_timers(&d->net, now);
	}
	/* In a context the users run next (tell_users), and the batched
	 * output (ACKs, window, new data) goes after their reads. */
	if (d->ctx) {
		(void)iw_pktio_flush(d->pio); /* tell_users' flush re-arms the timer */
	} else {
		iw_rawdev_flush(d);
	}
	return total;
}

/* The context timer only has to fire no later than the stack's next
 * deadline. Re-arming costs timerfd_settime syscalls (two when the timer
 * is the context's earliest), and the deadline moves on nearly every
 * flush (RTO and delayed-ACK timers), so the timer is moved only when the
 * deadline comes before it. A timer left earlier than needed fires, the
 * pass finds nothing due, and the timer is set again: one spurious wake
 * per armed period instead of syscalls per flush. */
static uint64_t ceil_ms(uint64_t us)
{
	return us / 1000u + (us % 1000u != 0);
}

void iw_rawdev_spin_init(struct iw_rawdev_spin *s, uint32_t max_us)
{
	s->max_us = max_us;
	s->hit_avg = 256; /* spin until the waits say otherwise */
}

uint32_t iw_rawdev_spin_wait_done(struct iw_rawdev_spin *s, uint64_t wait_us)
{
	if (!s->max_us)
		return 0;
	uint32_t hit = wait_us <= s->max_us ? 256u : 0u;
	/* avg += (hit - avg) / 8, in unsigned steps */
	if (hit > s->hit_avg)
		s->hit_avg += (hit - s->hit_avg + 7) / 8;
	else
		s->hit_avg -= (s->hit_avg - hit) / 8;
	return s->hit_avg >= 128 ? s->max_us : 0;
}

bool iw_rawdev_rearm_needed(bool armed, uint64_t armed_ms, uint64_t deadline_us)
{
	if (deadline_us == UINT64_MAX)
		return false; /* nothing due: an armed timer may stay (a spurious wake) */
	/* The context clock has milliseconds: compare the deadline rounded
	 * up, as it would be armed. */
	return !armed || ceil_ms(deadline_us) < armed_ms;
}

static void rearm(struct iw_rawdev *d)
{
	if (!d->ctx)
		return;
	uint64_t dl = iwn_net_next_deadline(&d->net);
	if (!iw_rawdev_rearm_needed(d->timer.armed, d->timer.deadline_ms, dl))
		return;
	d->st.timer_rearms++;
	/* Arm at the deadline rounded up to the context's millisecond clock
	 * (same CLOCK_MONOTONIC base), never before it. */
	uint64_t due_ms = ceil_ms(dl), now_ms = iw_now_ms();
	iw_ctx_timer_arm(d->ctx, &d->timer, due_ms > now_ms ? due_ms - now_ms : 0);
}

void iw_rawdev_flush(struct iw_rawdev *d)
{
	d->st.flushes++;
	iwn_net_output_pending(&d->net, iw_rawdev_now_us());
	(void)iw_pktio_flush(d->pio);
	rearm(d);
}

static void tell_users(struct iw_rawdev *d)
{
	if (d->in_pass)
		return;
	d->in_pass = true;
	for (struct iw_rawdev_user *u = d->users, *next; u; u = next) {
		next = u->next; /* u may unlink itself */
		u->cb(u);
	}
	d->in_pass = false;
	iw_rawdev_flush(d);
}

static void on_watch(struct iw_watch *w, uint32_t revents)
{
	(void)revents;
	struct iw_rawdev *d = (struct iw_rawdev *)((char *)w - offsetof(struct iw_rawdev, watch));
	iw_rawdev_poll(d);
	tell_users(d);
}

static void on_timer(struct iw_timer *t)
{
	struct iw_rawdev *d = (struct iw_rawdev *)((char *)t - offsetof(struct iw_rawdev, timer));
	iw_rawdev_poll(d);
	tell_users(d);
}

static bool peek_ready(struct iw_peek *p)
{
	struct iw_rawdev *d = (struct iw_rawdev *)((char *)p - offsetof(struct iw_rawdev, peek));
	if (iw_pktio_rx_ready(d->pio))
		return true;
	/* A wait begins: one clock read (not one per check of a spin). */
	if (!d->waiting && d->spin.max_us) {
		d->waiting = true;
		d->wait_t0 = iw_rawdev_now_us();
	}
	return false;
}

static void peek_run(struct iw_peek *p)
{
	struct iw_rawdev *d = (struct iw_rawdev *)((char *)p - offsetof(struct iw_rawdev, peek));
	d->st.spin_hits++;
	iw_rawdev_poll(d);
	tell_users(d);
}

int iw_rawdev_attach(struct iw_rawdev *d, struct iw_context *ctx)
{
	if (!d || !ctx || d->ctx)
		return -EINVAL;
	d->watch.fd = iw_pktio_fd(d->pio);
	d->watch.cb = on_watch;
	d->timer.cb = on_timer;
	int rc = iw_ctx_watch_add(ctx, &d->watch, EPOLLIN);
	if (rc)
		return rc;
	d->ctx = ctx;
	d->peek.ready = peek_ready;
	d->peek.run = peek_run;
	iw_ctx_peek_add(ctx, &d->peek);
	rearm(d);
	return 0;
}

void iw_rawdev_detach(struct iw_rawdev *d)
{
	if (!d || !d->ctx)
		return;
	iw_ctx_watch_del(d->ctx, &d->watch);
	iw_ctx_peek_del(d->ctx, &d->peek);
	iw_ctx_timer_cancel(d->ctx, &d->timer);
	d->ctx = NULL;
}

void iw_rawdev_user_add(struct iw_rawdev *d, struct iw_rawdev_user *u)
{
	u->next = d->users;
	d->users = u;
}

void iw_rawdev_user_del(struct iw_rawdev *d, struct iw_rawdev_user *u)
{
	for (struct iw_rawdev_user **pp = &d->users; *pp; pp = &(*pp)->next) {
		if (*pp == u) {
			*pp = u->next;
			u->next = NULL;
			return;
		}
	}
}
