/* The raw transport: see raw_transport.h. Structure and re-entrancy rules
 * follow the kernel-socket transport (tcp/tcp_transport.c): engine events may
 * kick, shut down or destroy us from inside our own steps; such calls are
 * recorded and run when the outermost step unwinds. */
#include "raw_transport.h"
#include "stack/transport/tp_guard.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp/ddp_wire.h"
#include "mpa/mpa_tx.h"
#include "rdmap/rdmap_wire.h"

#define RT_IOV_MAX (2 * (IW_RDMAP_MAX_SGE + 2) + 2 * IW_MPA_TX_MAX_MARKERS)
/* One FPDU: the largest ULPDU, its headers, pad, CRC and markers. */
#define RT_SCRATCH (IW_MPA_ULPDU_MAX + 64 + IW_MPA_TX_MAX_MARKERS * IW_MPA_MARKER_LEN)
#define RT_STAGE 16384
#define RT_RX_PREP 64
#define RT_RX_STEPS 64
#define RT_CLOSE_TIMEOUT_MS 5000

enum rt_state { RT_INIT, RT_OPEN, RT_DRAINING, RT_WR_SHUT, RT_CLOSED };

struct raw_transport {
	struct iw_transport base;
	struct iw_context *ctx;
	struct iw_rawdev *dev;
	struct iwn_tcp_conn *c;
	struct iw_rawdev_user user;
	struct iw_timer timer;
	struct iw_timer delay_timer; /* initiator: first-FPDU delay */
	uint32_t tx_delay_ms;
	enum rt_state state;
	bool gated, send_rtr, place_ooo, user_on;
	struct iw_cm_id *cm_id;
	struct iw_tp_guard guard;
	/* The FPDU pulled but not yet taken by TCP (its send buffer was full). */
	uint8_t *scratch;
	uint32_t pend_len;
	bool pend_rtr; /* the pending bytes are our RTR, not the engine's */
	uint8_t *stage;
	struct iovec iov[RT_IOV_MAX];
	struct iw_raw_stats st;
};

static struct raw_transport *rt_of(struct iw_transport *t)
{
	return (struct raw_transport *)((char *)t - offsetof(struct raw_transport, base));
}

static struct iw_rdmap_conn *rt_conn(struct raw_transport *t)
{
	return &t->base.qp->conn;
}

uint32_t iw_raw_mulpdu(const struct iwn_tcp_conn *c, bool markers_tx, uint32_t max_ulpdu)
{
	if (max_ulpdu)
		return max_ulpdu > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : max_ulpdu;
	size_t emss = c->eff_mss >= 536 ? c->eff_mss : 536;
	size_t m = iw_mpa_mulpdu(emss, markers_tx);
	return m > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : (uint32_t)m;
}

/* ------------------------------------------------------------------ */
/* Out-of-order placement                                              */

/* Payload the TCP core accepted ahead of a hole, at stream offset off. */
static void rt_ooo(void *arg, struct iwn_tcp_conn *c, uint64_t off, const uint8_t *p, uint32_t len)
{
	struct raw_transport *t = arg;
	(void)c;
	(void)off; /* the peer's FPDU boundaries are unknown: the CRC decides */
	struct iw_rdmap_conn *rc = t->base.qp ? rt_conn(t) : NULL;
	uint64_t before = t->st.ooo_bytes_placed, fpdus = t->st.ooo_fpdus_placed;
	if (!t->place_ooo || t->state != RT_OPEN || !rc) {
		t->st.ooo_calls++;
		t->st.ooo_bytes += len;
		t->st.ooo_skipped++;
		return;
	}
	iw_raw_ooo_place(rc, p, len, &t->st);
	t->dev->st.ooo_fpdus_placed += t->st.ooo_fpdus_placed - fpdus;
	t->dev->st.ooo_bytes_placed += t->st.ooo_bytes_placed - before;
}

/* ------------------------------------------------------------------ */
/* Stream end                                                          */

static void rt_finish(struct raw_transport *t, int err, bool notify_qp, bool abortive)
{
	if (t->state == RT_CLOSED)
		return;
	t->state = RT_CLOSED;
	iw_ctx_timer_cancel(t->ctx, &t->timer);
	iw_ctx_timer_cancel(t->ctx, &t->delay_timer);
	if (t->user_on)
		iw_rawdev_user_del(t->dev, &t->user);
	t->user_on = false;
	uint64_t now = iw_rawdev_now_us();
	if (t->c && getenv("IWARP_RAW_STATS")) {
		const struct iwn_tcp_stats *s = &t->c->stats;
		fprintf(stderr,
			"iwarp raw conn: segs in %" PRIu64 " out %" PRIu64 ", bytes in %" PRIu64 " out %" PRIu64
			", rto %" PRIu64 ", fast rexmit %" PRIu64 ", rexmit segs %" PRIu64 ", dupacks %" PRIu64
			", ooo segs %" PRIu64 ", probes %" PRIu64 "; fpdus tx %" PRIu64 " deferred %" PRIu64 "\n",
			s->segs_in, s->segs_out, s->bytes_in, s->bytes_out, s->rto_expired, s->fast_retransmits,
			s->retransmitted_segs, s->dupacks, s->ooo_segs, s->window_probes, t->st.fpdus_tx,
			t->st.records_deferred);
	}
	if (t->c) {
		t->c->ooo = NULL;
		t->c->ooo_arg = NULL;
		if (abortive)
			iwn_tcp_abort(t->c, now);
		else
			iwn_tcp_close(t->c, now); /* FIN after what is queued */
		iwn_net_release(&t->dev->net, t->c, now);
		t->c = NULL;
		iw_rawdev_flush(t->dev);
	}
	t->pend_len = 0;
	if (notify_qp && t->base.qp)
		iw_qp_transport_closed(t->base.qp, err);
	if (t->cm_id)
		iw_cm_conn_closed(t->cm_id, err);
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */

/* TCP's answer r to an FPDU of n bytes (engine bytes unless rtr): true
 * when taken and still open. -EAGAIN leaves it to the caller. */
static bool rt_taken(struct raw_transport *t, int r, uint32_t n, bool rtr)
{
	if (r < 0) {
		rt_finish(t, r == -EPIPE ? -ECONNRESET : r, true, true);
		return false;
	}
	t->st.fpdus_tx++;
	t->base.qp->stats.bytes_tx += n;
	if (!rtr)
		iw_rdmap_tx_ack(rt_conn(t), n); /* may complete WRs */
	return t->state != RT_CLOSED;
}

/* Hand the pending FPDU to TCP as one record: true when taken. */
static bool rt_push(struct raw_transport *t)
{
	int r = iwn_tcp_send_record(t->c, t->scratch, t->pend_len, iw_rawdev_now_us());
	if (r == -EAGAIN) {
		t->st.records_deferred++;
		return false;
	}
	uint32_t n = t->pend_len;
	bool rtr = t->pend_rtr;
	t->pend_len = 0;
	t->pend_rtr = false;
	return rt_taken(t, r, n, rtr);
}

static void rt_tx(struct raw_transport *t)
{
	if (t->state != RT_OPEN && t->state != RT_DRAINING)
		return;
	struct iw_rdmap_conn *c = rt_conn(t);
	while (!t->gated) {
		/* Engine bytes held while the engine holds none in flight: it
		 * was flushed, those bytes are no longer to be sent. */
		if (t->pend_len && !t->pend_rtr && c->tx_count == 0)
			t->pend_len = 0;
		if (t->pend_len) {
			if (!rt_push(t))
				break;
			continue;
		}
		size_t bytes = 0;
		/* max_bytes 1: exactly one FPDU, so it becomes one record. */
		int n = iw_rdmap_tx_pull(c, t->iov, RT_IOV_MAX, 1, &bytes);
		if (n <= 0 || bytes == 0)
			break;
		if (bytes > RT_SCRATCH) { /* cannot happen with MULPDU <= 65535 */
			rt_finish(t, -EMSGSIZE, true, true);
			return;
		}
		/* Gathered straight into TCP's send buffer; only an FPDU TCP
		 * has no room for yet is copied aside (the engine's pieces
		 * are not kept past this call). */
		int r = iwn_tcp_send_recordv(t->c, t->iov, n, (uint32_t)bytes, iw_rawdev_now_us());
		if (r != -EAGAIN) {
			if (!rt_taken(t, r, (uint32_t)bytes, false))
				break;
			continue;
		}
		t->st.records_deferred++;
		uint32_t k = 0;
		for (int i = 0; i < n; i++) {
			memcpy(t->scratch + k, t->iov[i].iov_base, t->iov[i].iov_len);
			k += (uint32_t)t->iov[i].iov_len;
		}
		t->pend_len = k;
		break; /* TCP just said no: retry on its next ACK */
	}
	if (t->state == RT_CLOSED)
		return;
	if (t->state == RT_DRAINING && (t->gated || (t->pend_len == 0 && !iw_rdmap_tx_pending(c)))) {
		iwn_tcp_close(t->c, iw_rawdev_now_us());
		t->state = RT_WR_SHUT;
	}
	iw_rawdev_flush(t->dev);
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */

static void rt_rx(struct raw_transport *t)
{
	struct iw_rdmap_conn *c = rt_conn(t);
	for (int step = 0; step < RT_RX_STEPS; step++) {
		if (t->state == RT_INIT || t->state == RT_CLOSED)
			return;
		if (!iwn_tcp_readable(t->c))
			break;
		uint64_t now = iw_rawdev_now_us();
		struct iovec v[RT_RX_PREP];
		int n = c->cfg.markers_rx ? 0 : iw_rdmap_rx_prepare(c, v, RT_RX_PREP);
		size_t direct = 0;
		for (int i = 0; i < n; i++) {
			uint32_t want = v[i].iov_len > UINT32_MAX ? UINT32_MAX : (uint32_t)v[i].iov_len;
			uint32_t k = iwn_tcp_recv(t->c, v[i].iov_base, want, now);
			direct += k;
			if (k < want)
				break;
		}
		if (direct) {
			t->base.qp->stats.bytes_rx += direct;
			iw_rdmap_rx_commit(c, direct);
			if (t->state == RT_CLOSED)
				return;
		}
		uint32_t k = iwn_tcp_recv(t->c, t->stage, RT_STAGE, now);
		if (k) {
			t->base.qp->stats.bytes_rx += k;
			(void)iw_rdmap_rx_feed(c, t->stage, k); /* a stopped stream drops the rest */
			if (t->state == RT_CLOSED)
				return;
		}
		if (direct + k && t->gated) {
			t->gated = false; /* the initiator is in FPDU mode: we may talk */
			t->guard.kick_req = true;
		}
		if (direct + k == 0)
			break;
	}
	if (iwn_tcp_eof(t->c)) {
		rt_finish(t, 0, true, false); /* peer FIN: answer with ours */
		return;
	}
	if (t->c->state == IWN_TCP_CLOSED)
		rt_finish(t, t->c->err ? t->c->err : -ECONNRESET, true, true);
}

/* ------------------------------------------------------------------ */
/* Re-entrancy and ops                                                 */

static void rt_do_shutdown(struct raw_transport *t, bool abortive)
{
	if (t->state == RT_CLOSED)
		return;
	if (abortive || t->state == RT_INIT) {
		rt_finish(t, 0, false, true);
		return;
	}
	if (t->state != RT_OPEN)
		return;
	t->state = RT_DRAINING;
	iw_ctx_timer_arm(t->ctx, &t->timer, RT_CLOSE_TIMEOUT_MS);
	rt_tx(t);
}

static void rt_free(struct raw_transport *t)
{
	if (t->state != RT_CLOSED)
		rt_finish(t, 0, false, true); /* the QP is going away: no call back */
	if (t->cm_id)
		iw_cm_transport_gone(t->cm_id);
	free(t->scratch);
	free(t->stage);
	free(t);
}

static void rt_guard_tx(void *t)
{
	rt_tx(t);
}

static void rt_guard_shutdown(void *t, bool abortive)
{
	rt_do_shutdown(t, abortive);
}

static void rt_guard_free(void *t)
{
	rt_free(t);
}

static const struct iw_tp_guard_ops rt_guard_ops = {
	.tx = rt_guard_tx,
	.shutdown = rt_guard_shutdown,
	.free = rt_guard_free,
};

static void rt_enter(struct raw_transport *t)
{
	iw_tp_guard_enter(&t->guard);
}

/* Returns false when the transport was freed. */
static bool rt_leave(struct raw_transport *t)
{
	return iw_tp_guard_leave(&t->guard, &rt_guard_ops, t);
}

/* The device received frames or ran timers: our connection may have
 * bytes, room, or news. */
static void rt_user_cb(struct iw_rawdev_user *u)
{
	struct raw_transport *t = (struct raw_transport *)((char *)u - offsetof(struct raw_transport, user));
	rt_enter(t);
	rt_rx(t);
	rt_tx(t);
	rt_leave(t);
}

static void rt_timer_cb(struct iw_timer *tm)
{
	struct raw_transport *t = (struct raw_transport *)((char *)tm - offsetof(struct raw_transport, timer));
	rt_enter(t);
	if (t->state == RT_DRAINING || t->state == RT_WR_SHUT)
		rt_finish(t, -ETIMEDOUT, true, true); /* the peer never closed its side */
	rt_leave(t);
}

/* The initiator's first-FPDU delay is over. */
static void rt_delay_cb(struct iw_timer *tm)
{
	struct raw_transport *t = (struct raw_transport *)((char *)tm - offsetof(struct raw_transport, delay_timer));
	rt_enter(t);
	if (t->gated) {
		t->gated = false;
		rt_tx(t);
	}
	rt_leave(t);
}

static void op_kick(struct iw_transport *bt)
{
	struct raw_transport *t = rt_of(bt);
	if (iw_tp_guard_defer_kick(&t->guard))
		return;
	rt_enter(t);
	rt_tx(t);
	rt_leave(t);
}

static void op_shutdown(struct iw_transport *bt, bool abortive)
{
	struct raw_transport *t = rt_of(bt);
	if (iw_tp_guard_defer_shutdown(&t->guard, abortive))
		return;
	rt_enter(t);
	rt_do_shutdown(t, abortive);
	rt_leave(t);
}

static void op_destroy(struct iw_transport *bt)
{
	struct raw_transport *t = rt_of(bt);
	if (iw_tp_guard_defer_destroy(&t->guard))
		return;
	rt_free(t);
}

static const struct iw_transport_ops raw_ops = {
	.kick = op_kick,
	.kick_from_post = true,
	.shutdown = op_shutdown,
	.destroy = op_destroy,
};

struct iw_transport *iw_raw_transport_create(struct iw_context *ctx, struct iw_qp *qp,
					     const struct iw_raw_tcfg *cfg)
{
	if (!cfg || !cfg->dev || !cfg->conn)
		return NULL;
	struct raw_transport *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->scratch = malloc(RT_SCRATCH);
	t->stage = malloc(RT_STAGE);
	if (!t->scratch || !t->stage) {
		free(t->scratch);
		free(t->stage);
		free(t);
		return NULL;
	}
	t->base.ops = &raw_ops;
	t->base.qp = qp;
	t->ctx = ctx;
	t->dev = cfg->dev;
	t->c = cfg->conn;
	t->user.cb = rt_user_cb;
	t->timer.cb = rt_timer_cb;
	t->delay_timer.cb = rt_delay_cb;
	t->state = RT_INIT;
	t->gated = cfg->tx_gate || cfg->tx_delay_ms;
	t->tx_delay_ms = cfg->tx_delay_ms;
	t->send_rtr = cfg->send_rtr;
	t->place_ooo = !cfg->no_ooo_place;
	t->cm_id = cfg->cm_id;
	return &t->base;
}

/* The RFC 6581 zero-length RDMA WRITE RTR, built in the engine's MPA
 * stream (markers stay in step) and queued before any engine FPDU. */
static int rt_queue_rtr(struct raw_transport *t)
{
	struct iw_ddp_hdr h = { .tagged = true, .last = true, .ulp_ctrl = iw_rdmap_ctrl(IW_OP_WRITE) };
	uint8_t hdr[IW_DDP_UNTAGGED_HDR_LEN];
	uint8_t markers[2][IW_MPA_MARKER_LEN];
	struct iw_mpa_tx_frame f = { .markers = markers, .markers_cap = 2 };
	size_t hl = iw_ddp_hdr_encode(&h, hdr);
	int n = iw_mpa_tx_build_frame(&rt_conn(t)->mpa_tx, &f, hdr, hl, NULL, 0, t->iov, RT_IOV_MAX);
	if (n < 0)
		return n;
	uint32_t k = 0;
	for (int i = 0; i < n; i++) {
		memcpy(t->scratch + k, t->iov[i].iov_base, t->iov[i].iov_len);
		k += (uint32_t)t->iov[i].iov_len;
	}
	t->pend_len = k;
	t->pend_rtr = true;
	return 0;
}

int iw_raw_transport_start(struct iw_transport *bt)
{
	struct raw_transport *t = rt_of(bt);
	int rc;
	if (t->state != RT_INIT)
		return -EINVAL;
	if (t->send_rtr && (rc = rt_queue_rtr(t)) < 0)
		return rc;
	t->c->ooo = rt_ooo;
	t->c->ooo_arg = t;
	iw_rawdev_user_add(t->dev, &t->user);
	t->user_on = true;
	t->state = RT_OPEN;
	if (t->tx_delay_ms)
		iw_ctx_timer_arm(t->ctx, &t->delay_timer, t->tx_delay_ms);
	rt_enter(t);
	rt_rx(t); /* bytes may have arrived behind the MPA exchange */
	rt_tx(t);
	rt_leave(t);
	return 0;
}

void iw_raw_transport_detach_cm(struct iw_transport *bt)
{
	if (bt)
		rt_of(bt)->cm_id = NULL;
}

void iw_raw_transport_forget_conn(struct iw_transport *bt)
{
	struct raw_transport *t = rt_of(bt);
	if (t->state == RT_INIT)
		t->c = NULL;
}

void iw_raw_transport_get_stats(struct iw_transport *bt, struct iw_raw_stats *st)
{
	*st = rt_of(bt)->st;
}
