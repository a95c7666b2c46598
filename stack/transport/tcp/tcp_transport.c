/* Kernel TCP transport: moves a QP's FPDUs over a non-blocking socket.
 *
 * Transmit: iw_rdmap_tx_pull() hands out gather lists of whole FPDUs that
 * stay valid until acknowledged; they are written with one sendmsg() for
 * many FPDUs. What the kernel did not take stays in the backlog (the tail
 * of the pulled list) and only what it took is acknowledged. EPOLLOUT is
 * watched only while there is a backlog; when the peer stops reading the
 * engine runs out of tx slots and pulling stops, so nothing spins.
 *
 * Receive policy (one readv per step, until EAGAIN or a short read):
 *   - the engine says where the next stream bytes go (rx_prepare): the
 *     rest of the current FPDU lands directly in its final place (posted
 *     receive buffer or registered memory);
 *   - behind that list a staging buffer catches what follows in the same
 *     syscall, and is fed to the engine in copy mode. After small FPDUs it
 *     is 16 KiB, so a burst of small FPDUs costs one syscall; after a
 *     large FPDU (>= 8 KiB) it is only 64 bytes, so the next large FPDU's
 *     payload still goes direct and only its header is copied;
 *   - with markers towards us the deframer prepares at most one marker
 *     interval per list, so that direction always uses copy mode.
 *
 * Responder lock-step (RFC 5044, siw): after the MPA Reply nothing may be
 * sent before the initiator's first FPDU arrived: a tx gate that opens on
 * the first received byte. The initiator's gate opens after a short delay
 * (iw_conn_param.first_fpdu_delay_ms): a Linux siw responder can miss
 * FPDUs that arrive before its QP reached RTS. Peer-to-peer initiators send the RFC 6581
 * zero-length RDMA WRITE RTR first; it is built here in the engine's MPA
 * stream (so markers and the peer's deframer stay in step) and is neither
 * a work request nor counted by the engine.
 *
 * Re-entrancy: engine events run QP code that may kick, shut down or even
 * destroy this transport; such calls made while the transport is inside
 * one of its own steps are recorded and run when the step unwinds
 * (tp_guard.h, shared with the raw transport). */
#include "tcp_transport.h"
#include "stack/qp_mem.h"
#include "stack/transport/tp_guard.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ddp/ddp_wire.h"
#include "mpa/mpa_tx.h"
#include "rdmap/rdmap_wire.h"

/* Backlog iovecs: room for one worst-case FPDU (every SGE split by
 * markers) plus a batch of small ones; was IOV_MAX, 16 KiB per QP. */
#define TP_IOV_WORST (2 * (IW_RDMAP_MAX_SGE + 2) + 2 * IW_MPA_TX_MAX_MARKERS)
#define TP_IOV_MAX (TP_IOV_WORST + 128)
#define TP_TX_BUDGET (1024 * 1024) /* bytes pulled ahead of the kernel */
#define TP_STAGE 65536            /* copy-mode staging buffer (ctx->tcp_rx_stage, one per context) */
#define TP_SMALL_TAIL 64          /* staging behind a large FPDU: the next header */
#define TP_BIG_FPDU 8192          /* ULPDU size from which direct reads pay off */
#define TP_RX_PREP 64             /* iovecs one prepare may fill */
#define TP_RX_STEPS 64            /* readv calls per wakeup (fairness between QPs) */
#define TP_CLOSE_TIMEOUT_MS 5000  /* graceful close: wait this long for the peer's FIN */

enum tp_state { TP_INIT, TP_OPEN, TP_DRAINING, TP_WR_SHUT, TP_CLOSED };

struct tcp_transport {
	struct iw_transport base;
	struct iw_context *ctx;
	struct iw_watch watch;
	struct iw_timer timer;
	struct iw_timer delay_timer; /* initiator: first-FPDU delay */
	uint32_t tx_delay_ms;
	enum tp_state state;
	bool watching;
	bool gated;
	bool send_rtr;
	size_t rtr_left; /* RTR bytes at the front of the backlog */
	uint32_t trace_conn;
	struct iw_cm_id *cm_id;

	/* Calls made from inside our own steps, run when they unwind. */
	struct iw_tp_guard guard;

	/* Backlog: pulled, not yet taken by the kernel. TP_IOV_MAX entries
	 * in page-backed storage (qp_mem.h): kept at the front, so an idle
	 * connection has none of it resident and a busy one mostly a page. */
	struct iovec *iov;
	int iov_head, iov_cnt;
	size_t tx_pending;

	struct iw_mpa_tx_frame rtr_fpdu;
	uint8_t rtr_markers[2][IW_MPA_MARKER_LEN]; /* 20 bytes cross at most one marker position */
	uint8_t rtr_hdr[IW_DDP_UNTAGGED_HDR_LEN];
};

static struct tcp_transport *tp_of(struct iw_transport *t)
{
	return (struct tcp_transport *)((char *)t - offsetof(struct tcp_transport, base));
}

static int tp_fd(const struct tcp_transport *t)
{
	return t->watch.fd;
}

static struct iw_rdmap_conn *tp_conn(struct tcp_transport *t)
{
	return &t->base.qp->conn;
}

static void tp_set_events(struct tcp_transport *t, uint32_t ev)
{
	if (t->watching && t->watch.events != ev)
		iw_ctx_watch_mod(t->ctx, &t->watch, ev);
}

/* The stream is over: close the socket and tell the QP (unless it asked
 * for this itself) and the CM. */
static void tp_finish(struct tcp_transport *t, int err, bool notify_qp, bool abortive)
{
	int fd = tp_fd(t);

	if (t->state == TP_CLOSED)
		return;
	t->state = TP_CLOSED;
	iw_ctx_timer_cancel(t->ctx, &t->timer);
	iw_ctx_timer_cancel(t->ctx, &t->delay_timer);
	if (t->watching)
		iw_ctx_watch_del(t->ctx, &t->watch);
	t->watching = false;
	if (abortive) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(fd);
	t->watch.fd = -1;
	iw_trace_conn_close(t->ctx, t->trace_conn, abortive || err != 0);
	t->trace_conn = 0;
	t->iov_cnt = 0;
	t->iov_head = 0;
	t->tx_pending = 0;
	t->rtr_left = 0;
	if (notify_qp && t->base.qp)
		iw_qp_transport_closed(t->base.qp, err);
	if (t->cm_id)
		iw_cm_conn_closed(t->cm_id, err);
}

/* n bytes of the backlog went out. */
static void tp_consume(struct tcp_transport *t, size_t n)
{
	t->tx_pending -= n;
	while (n > 0) {
		struct iovec *v = &t->iov[t->iov_head];
		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		t->iov_head++;
		t->iov_cnt--;
	}
	/* Skip empty entries so the head is always real data. */
	while (t->iov_cnt > 0 && t->iov[t->iov_head].iov_len == 0) {
		t->iov_head++;
		t->iov_cnt--;
	}
	if (t->iov_cnt == 0)
		t->iov_head = 0;
}

/* Top up the backlog from the engine. */
static void tp_pull(struct tcp_transport *t)
{
	struct iw_rdmap_conn *c = tp_conn(t);
	size_t bytes = 0;

	if (t->tx_pending >= TP_TX_BUDGET)
		return;
	if (t->iov_head > 0) {
		memmove(t->iov, t->iov + t->iov_head, (size_t)t->iov_cnt * sizeof(t->iov[0]));
		t->iov_head = 0;
	}
	int n = iw_rdmap_tx_pull(c, t->iov + t->iov_cnt, TP_IOV_MAX - t->iov_cnt, TP_TX_BUDGET - t->tx_pending,
				 &bytes);
	/* -ENOBUFS: the next FPDU does not fit behind the backlog; it goes
	 * once the backlog drained (an empty list always holds one FPDU). */
	if (n > 0) {
		t->iov_cnt += n;
		t->tx_pending += bytes;
	}
}

static void tp_tx(struct tcp_transport *t)
{
	struct iw_rdmap_conn *c;
	int fd = tp_fd(t);

	if (t->state != TP_OPEN && t->state != TP_DRAINING)
		return;
	c = tp_conn(t);
	while (!t->gated) {
		/* Engine bytes held but the engine holds none in flight: it was
		 * flushed, the memory behind them is no longer ours to send. */
		if (t->tx_pending > t->rtr_left && c->tx_count == 0) {
			t->iov_cnt = 0;
			t->iov_head = 0;
			t->tx_pending = 0;
			t->rtr_left = 0;
		}
		tp_pull(t);
		if (t->tx_pending == 0)
			break;
		struct msghdr mh = { .msg_iov = t->iov + t->iov_head, .msg_iovlen = (size_t)t->iov_cnt };
		size_t offered = t->tx_pending;
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		t->base.qp->stats.tx_syscalls++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			tp_finish(t, -errno, true, true);
			return;
		}
		t->base.qp->stats.bytes_tx += (uint64_t)n;
		if (t->trace_conn) /* 0: not traced; skip the call per send */
			iw_trace_data(t->ctx, t->trace_conn, true, t->iov + t->iov_head, t->iov_cnt, (size_t)n);
		tp_consume(t, (size_t)n);
		size_t rtr = (size_t)n < t->rtr_left ? (size_t)n : t->rtr_left;
		t->rtr_left -= rtr;
		if ((size_t)n > rtr)
			iw_rdmap_tx_ack(c, (size_t)n - rtr); /* may complete WRs */
		if (t->state == TP_CLOSED)
			return;
		if ((size_t)n < offered)
			break; /* socket buffer full */
		if (!iw_rdmap_tx_pending(c))
			break; /* all sent and nothing to pull: skip an empty pull */
	}
	tp_set_events(t, EPOLLIN | (t->tx_pending ? EPOLLOUT : 0u));
	/* Graceful close: FIN once everything queued went out (or nothing
	 * ever can, while the gate is shut). */
	if (t->state == TP_DRAINING && (t->gated || (t->tx_pending == 0 && !iw_rdmap_tx_pending(c)))) {
		shutdown(fd, SHUT_WR);
		t->state = TP_WR_SHUT;
		tp_set_events(t, EPOLLIN);
	}
}

static void tp_rx(struct tcp_transport *t)
{
	struct iw_rdmap_conn *c = tp_conn(t);
	int fd = tp_fd(t);

	for (int step = 0; step < TP_RX_STEPS; step++) {
		struct iovec v[TP_RX_PREP + 1];
		int n = 0;
		size_t prep = 0;

		if (t->state == TP_INIT || t->state == TP_CLOSED)
			return;
		/* Between FPDUs after a small one the whole next FPDU is likely
		 * in the socket: read it all into the stage, where the
		 * deframer's whole-FPDU fast path takes it. */
		if (!c->cfg.markers_rx && !(c->rx.ulpdu_len < TP_BIG_FPDU && iw_mpa_rx_at_boundary(&c->mpa_rx)))
			n = iw_rdmap_rx_prepare(c, v, TP_RX_PREP);
		for (int i = 0; i < n; i++)
			prep += v[i].iov_len;
		/* n == 0: copy mode, or the stream stopped (then the bytes are
		 * read and dropped so the peer's FIN is still seen). */
		size_t tail = (n > 0 && c->rx.ulpdu_len >= TP_BIG_FPDU) ? TP_SMALL_TAIL : TP_STAGE;
		v[n].iov_base = t->ctx->tcp_rx_stage;
		v[n].iov_len = tail;

		ssize_t r = readv(fd, v, n + 1);
		t->base.qp->stats.rx_syscalls++;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			tp_finish(t, -errno, true, true);
			return;
		}
		if (r == 0) {
			tp_finish(t, 0, true, false); /* peer FIN: answer with ours */
			return;
		}
		t->base.qp->stats.bytes_rx += (uint64_t)r;
		if (t->trace_conn)
			iw_trace_data(t->ctx, t->trace_conn, false, v, n + 1, (size_t)r);
		if (t->gated) {
			t->gated = false; /* the initiator is in FPDU mode: we may talk */
			t->guard.kick_req = true;
		}
		size_t direct = (size_t)r < prep ? (size_t)r : prep;
		if (direct)
			iw_rdmap_rx_commit(c, direct);
		if (t->state == TP_CLOSED)
			return;
		if ((size_t)r > direct)
			(void)iw_rdmap_rx_feed(c, t->ctx->tcp_rx_stage, (size_t)r - direct); /* a stopped stream drops the rest */
		if (t->state == TP_CLOSED)
			return;
		if ((size_t)r < prep + tail)
			return; /* drained for now */
	}
}

static void tp_do_shutdown(struct tcp_transport *t, bool abortive)
{
	if (t->state == TP_CLOSED)
		return;
	if (abortive || t->state == TP_INIT) {
		tp_finish(t, 0, false, true);
		return;
	}
	if (t->state != TP_OPEN)
		return;
	t->state = TP_DRAINING;
	iw_ctx_timer_arm(t->ctx, &t->timer, TP_CLOSE_TIMEOUT_MS);
	tp_tx(t);
}

static void tp_free(struct tcp_transport *t)
{
	/* The QP is going away: do not call it back. */
	if (t->state != TP_CLOSED)
		tp_finish(t, 0, false, true);
	if (t->cm_id)
		iw_cm_transport_gone(t->cm_id);
	iw_pages_free(t->iov, TP_IOV_MAX * sizeof(*t->iov));
	free(t);
}

static void tp_guard_tx(void *t)
{
	tp_tx(t);
}

static void tp_guard_shutdown(void *t, bool abortive)
{
	tp_do_shutdown(t, abortive);
}

static void tp_guard_free(void *t)
{
	tp_free(t);
}

static const struct iw_tp_guard_ops tp_guard_ops = {
	.tx = tp_guard_tx,
	.shutdown = tp_guard_shutdown,
	.free = tp_guard_free,
};

static void tp_enter(struct tcp_transport *t)
{
	iw_tp_guard_enter(&t->guard);
}

/* Returns false when the transport was freed. */
static bool tp_leave(struct tcp_transport *t)
{
	return iw_tp_guard_leave(&t->guard, &tp_guard_ops, t);
}

static void tp_watch_cb(struct iw_watch *w, uint32_t revents)
{
	struct tcp_transport *t = (struct tcp_transport *)((char *)w - offsetof(struct tcp_transport, watch));

	tp_enter(t);
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
		tp_rx(t);
	if ((revents & EPOLLOUT) || iw_rdmap_tx_pending(tp_conn(t)))
		tp_tx(t);
	tp_leave(t);
}

static void tp_timer_cb(struct iw_timer *tm)
{
	struct tcp_transport *t = (struct tcp_transport *)((char *)tm - offsetof(struct tcp_transport, timer));

	tp_enter(t);
	if (t->state == TP_DRAINING || t->state == TP_WR_SHUT)
		tp_finish(t, -ETIMEDOUT, true, true); /* the peer never closed its side */
	tp_leave(t);
}

/* The initiator's first-FPDU delay is over. */
static void tp_delay_cb(struct iw_timer *tm)
{
	struct tcp_transport *t = (struct tcp_transport *)((char *)tm - offsetof(struct tcp_transport, delay_timer));

	tp_enter(t);
	if (t->gated) {
		t->gated = false;
		tp_tx(t);
	}
	tp_leave(t);
}

static void op_kick(struct iw_transport *bt)
{
	struct tcp_transport *t = tp_of(bt);

	if (iw_tp_guard_defer_kick(&t->guard))
		return;
	tp_enter(t);
	tp_tx(t);
	tp_leave(t);
}

static void op_shutdown(struct iw_transport *bt, bool abortive)
{
	struct tcp_transport *t = tp_of(bt);

	if (iw_tp_guard_defer_shutdown(&t->guard, abortive))
		return;
	tp_enter(t);
	tp_do_shutdown(t, abortive);
	tp_leave(t);
}

static void op_destroy(struct iw_transport *bt)
{
	struct tcp_transport *t = tp_of(bt);

	if (iw_tp_guard_defer_destroy(&t->guard))
		return;
	tp_free(t);
}

static const struct iw_transport_ops tcp_ops = {
	.kick = op_kick,
	.kick_from_post = true,
	.shutdown = op_shutdown,
	.destroy = op_destroy,
};

struct iw_transport *iw_tcp_transport_create(struct iw_context *ctx, struct iw_qp *qp, const struct iw_tcp_cfg *cfg)
{
	if (!ctx->tcp_rx_stage && !(ctx->tcp_rx_stage = malloc(TP_STAGE)))
		return NULL;
	struct tcp_transport *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->iov = iw_pages_alloc(TP_IOV_MAX * sizeof(*t->iov));
	if (!t->iov) {
		free(t);
		return NULL;
	}
	t->base.ops = &tcp_ops;
	t->base.qp = qp;
	t->ctx = ctx;
	t->watch.fd = cfg->fd;
	t->watch.cb = tp_watch_cb;
	t->timer.cb = tp_timer_cb;
	t->delay_timer.cb = tp_delay_cb;
	t->state = TP_INIT;
	t->gated = cfg->tx_gate || cfg->tx_delay_ms;
	t->tx_delay_ms = cfg->tx_delay_ms;
	t->send_rtr = cfg->send_rtr;
	t->trace_conn = cfg->trace_conn;
	t->cm_id = cfg->cm_id;
	return &t->base;
}

/* The RFC 6581 zero-length RDMA WRITE RTR, first in the backlog. */
static int tp_queue_rtr(struct tcp_transport *t)
{
	struct iw_ddp_hdr h = {
		.tagged = true,
		.last = true,
		.ulp_ctrl = iw_rdmap_ctrl(IW_OP_WRITE),
	};
	size_t hl = iw_ddp_hdr_encode(&h, t->rtr_hdr);
	t->rtr_fpdu.markers = t->rtr_markers;
	t->rtr_fpdu.markers_cap = 2;
	int n = iw_mpa_tx_build_frame(&tp_conn(t)->mpa_tx, &t->rtr_fpdu, t->rtr_hdr, hl, NULL, 0, t->iov,
				      TP_IOV_MAX);

	if (n < 0)
		return n;
	t->iov_head = 0;
	t->iov_cnt = n;
	t->tx_pending = t->rtr_fpdu.wire_len;
	t->rtr_left = t->rtr_fpdu.wire_len;
	return 0;
}

int iw_tcp_transport_start(struct iw_transport *bt)
{
	struct tcp_transport *t = tp_of(bt);
	int rc;

	if (t->state != TP_INIT)
		return -EINVAL;
	if (t->send_rtr && (rc = tp_queue_rtr(t)) < 0)
		return rc;
	rc = iw_ctx_watch_add(t->ctx, &t->watch, EPOLLIN);
	if (rc < 0)
		return rc;
	t->watching = true;
	t->state = TP_OPEN;
	if (t->tx_delay_ms)
		iw_ctx_timer_arm(t->ctx, &t->delay_timer, t->tx_delay_ms);
	tp_enter(t);
	tp_tx(t);
	tp_leave(t);
	return 0;
}

void iw_tcp_transport_detach_cm(struct iw_transport *bt)
{
	if (bt)
		tp_of(bt)->cm_id = NULL;
}

uint32_t iw_tcp_mulpdu(int fd, bool markers_tx, uint32_t max_ulpdu)
{
	int mss = 0;
	socklen_t len = sizeof(mss);
	size_t m;

	if (max_ulpdu)
		return max_ulpdu > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : max_ulpdu;
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 || mss < 536)
		mss = 536;
	mss &= ~7;
	m = iw_mpa_mulpdu((size_t)mss, markers_tx);
	return m > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : (uint32_t)m;
}
