/* The FPDU-stream core: see stream.h. */
#include "stream.h"

#include <errno.h>
#include <stddef.h>

#include "rdmap/rdmap_wire.h"

#define STREAM_RTR_IOV 16 /* pieces of the RTR frame: header, markers, CRC */

uint32_t iw_stream_mulpdu(size_t mss, bool markers_tx, uint32_t max_ulpdu)
{
	size_t m = max_ulpdu ? max_ulpdu : iw_mpa_mulpdu(mss, markers_tx);

	return m > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : (uint32_t)m;
}

void iw_stream_finish(struct iw_stream *s, int err, bool notify_qp, bool abortive)
{
	if (s->state == IW_STREAM_CLOSED)
		return;
	s->state = IW_STREAM_CLOSED;
	iw_ctx_timer_cancel(s->ctx, &s->close_timer);
	iw_ctx_timer_cancel(s->ctx, &s->delay_timer);
	s->io->close(s, err, abortive);
	if (notify_qp && s->base.qp)
		iw_qp_transport_closed(s->base.qp, err);
	if (s->cm_id)
		iw_cm_conn_closed(s->cm_id, err);
}

void iw_stream_tx(struct iw_stream *s)
{
	if (s->state != IW_STREAM_OPEN && s->state != IW_STREAM_DRAINING)
		return;
	s->io->tx(s);
	if (s->state == IW_STREAM_CLOSED)
		return;
	/* Graceful close: FIN once everything queued went out (or nothing
	 * ever can, while the gate is shut). */
	if (s->state == IW_STREAM_DRAINING &&
	    (s->gated || (s->io->tx_idle(s) && !iw_rdmap_tx_pending(iw_stream_conn(s))))) {
		s->state = IW_STREAM_WR_SHUT;
		s->io->shut_wr(s); /* may fail the stream */
	}
}

void iw_stream_rx_seen(struct iw_stream *s)
{
	if (s->gated) {
		s->gated = false; /* the initiator is in FPDU mode: we may talk */
		s->guard.kick_req = true;
	}
}

static void stream_shutdown(struct iw_stream *s, bool abortive)
{
	if (s->state == IW_STREAM_CLOSED)
		return;
	if (abortive || s->state == IW_STREAM_INIT) {
		iw_stream_finish(s, 0, false, true);
		return;
	}
	if (s->state != IW_STREAM_OPEN)
		return;
	s->state = IW_STREAM_DRAINING;
	iw_ctx_timer_arm(s->ctx, &s->close_timer, IW_STREAM_CLOSE_TIMEOUT_MS);
	iw_stream_tx(s);
}

static void stream_free(struct iw_stream *s)
{
	if (s->state != IW_STREAM_CLOSED)
		iw_stream_finish(s, 0, false, true); /* the QP is going away: no call back */
	if (s->cm_id)
		iw_cm_transport_gone(s->cm_id);
	s->io->free(s);
}

static void guard_tx(void *s)
{
	iw_stream_tx(s);
}

static void guard_shutdown(void *s, bool abortive)
{
	stream_shutdown(s, abortive);
}

static void guard_free(void *s)
{
	stream_free(s);
}

static const struct iw_tp_guard_ops guard_ops = {
	.tx = guard_tx, .shutdown = guard_shutdown, .free = guard_free,
};

bool iw_stream_unwind(struct iw_stream *s)
{
	return iw_tp_guard_leave(&s->guard, &guard_ops, s);
}

static void close_timer_cb(struct iw_timer *tm)
{
	struct iw_stream *s = (struct iw_stream *)((char *)tm - offsetof(struct iw_stream, close_timer));

	iw_stream_enter(s);
	if (s->state == IW_STREAM_DRAINING || s->state == IW_STREAM_WR_SHUT)
		iw_stream_finish(s, -ETIMEDOUT, true, true); /* the peer never closed its side */
	iw_stream_leave(s);
}

/* The initiator's first-FPDU delay is over. */
static void delay_timer_cb(struct iw_timer *tm)
{
	struct iw_stream *s = (struct iw_stream *)((char *)tm - offsetof(struct iw_stream, delay_timer));

	iw_stream_enter(s);
	if (s->gated) {
		s->gated = false;
		iw_stream_tx(s);
	}
	iw_stream_leave(s);
}

/* The RFC 6581 RTR goes out before any FPDU of the engine's. */
static int stream_queue_rtr(struct iw_stream *s)
{
	struct iovec iov[STREAM_RTR_IOV];
	int n = iw_rdmap_build_rtr(iw_stream_conn(s), &s->rtr_fpdu, s->rtr_markers, s->rtr_hdr, iov, STREAM_RTR_IOV);

	if (n < 0)
		return n;
	return s->io->queue_rtr(s, iov, n, s->rtr_fpdu.wire_len);
}

static void op_kick(struct iw_transport *t)
{
	struct iw_stream *s = iw_stream_of(t);

	if (iw_tp_guard_defer_kick(&s->guard))
		return;
	iw_stream_enter(s);
	iw_stream_tx(s);
	iw_stream_leave(s);
}

static void op_shutdown(struct iw_transport *t, bool abortive)
{
	struct iw_stream *s = iw_stream_of(t);

	if (iw_tp_guard_defer_shutdown(&s->guard, abortive))
		return;
	iw_stream_enter(s);
	stream_shutdown(s, abortive);
	iw_stream_leave(s);
}

static void op_destroy(struct iw_transport *t)
{
	struct iw_stream *s = iw_stream_of(t);

	if (iw_tp_guard_defer_destroy(&s->guard))
		return;
	stream_free(s);
}

static int op_start(struct iw_transport *t)
{
	struct iw_stream *s = iw_stream_of(t);
	int rc;

	if (s->state != IW_STREAM_INIT)
		return -EINVAL;
	if (s->send_rtr && (rc = stream_queue_rtr(s)) < 0)
		return rc;
	if ((rc = s->io->open(s)) < 0)
		return rc;
	s->state = IW_STREAM_OPEN;
	if (s->tx_delay_ms)
		iw_ctx_timer_arm(s->ctx, &s->delay_timer, s->tx_delay_ms);
	iw_stream_enter(s);
	s->io->rx(s); /* bytes may have arrived behind the MPA exchange */
	iw_stream_tx(s);
	iw_stream_leave(s);
	return 0;
}

static void op_detach(struct iw_transport *t)
{
	iw_stream_of(t)->cm_id = NULL;
}

static const struct iw_transport_ops stream_ops = {
	.kick = op_kick, .kick_from_post = true, .shutdown = op_shutdown, .destroy = op_destroy,
	.start = op_start, .detach = op_detach,
};

static const struct iw_transport_ops stream_ops_deferred_kick = {
	.kick = op_kick, .kick_from_post = false, .shutdown = op_shutdown, .destroy = op_destroy,
	.start = op_start, .detach = op_detach,
};

void iw_stream_init(struct iw_stream *s, struct iw_context *ctx, struct iw_qp *qp, const struct iw_stream_io *io,
		    const struct iw_stream_cfg *cfg)
{
	s->base.ops = io->kick_deferred ? &stream_ops_deferred_kick : &stream_ops;
	s->base.qp = qp;
	s->io = io;
	s->ctx = ctx;
	s->state = IW_STREAM_INIT;
	s->gated = cfg->tx_gate || cfg->tx_delay_ms;
	s->tx_delay_ms = cfg->tx_delay_ms;
	s->send_rtr = cfg->send_rtr;
	s->cm_id = cfg->cm_id;
	s->close_timer.cb = close_timer_cb;
	s->delay_timer.cb = delay_timer_cb;
}
