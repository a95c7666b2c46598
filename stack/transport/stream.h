/* The FPDU-stream core every transport shares: a QP's FPDUs over one
 * byte stream. It owns the stream's states (open, draining, write side
 * shut, closed), graceful and abortive shutdown with the close timeout,
 * the responder's tx gate (nothing before the initiator's first FPDU,
 * RFC 5044 / siw lock-step), the initiator's first-FPDU delay, the RFC
 * 6581 RTR frame, the re-entrancy guard (tp_guard.h) and the transport
 * ops. A transport embeds struct iw_stream and implements only how bytes
 * move (struct iw_stream_io).
 *
 * Re-entrancy: engine events run QP code that may kick, shut down or
 * destroy the transport; such calls made while the transport is inside
 * one of its own steps (iw_stream_enter .. iw_stream_leave) are recorded
 * and run when the step unwinds. */
#ifndef IW_STREAM_H
#define IW_STREAM_H

#include "stack/internal.h"
#include "stack/transport/tp_guard.h"

#include "ddp/ddp_wire.h"
#include "mpa/mpa_tx.h"

#define IW_STREAM_CLOSE_TIMEOUT_MS 5000 /* graceful close: wait this long for the peer's FIN */

enum iw_stream_state { IW_STREAM_INIT, IW_STREAM_OPEN, IW_STREAM_DRAINING, IW_STREAM_WR_SHUT, IW_STREAM_CLOSED };

struct iw_stream;

/* What a transport does its own way. Called inside a step. */
struct iw_stream_io {
	/* Move the engine's FPDUs (and a queued RTR) to the wire while it
	 * takes them and the gate is open; the state is OPEN or DRAINING. */
	void (*tx)(struct iw_stream *s);
	/* Read what arrived, feed the engine; call iw_stream_rx_seen when
	 * bytes came, iw_stream_finish at the stream's end. */
	void (*rx)(struct iw_stream *s);
	/* Nothing pulled from the engine is still held back. */
	bool (*tx_idle)(struct iw_stream *s);
	/* Send our FIN after what was taken. */
	void (*shut_wr)(struct iw_stream *s);
	/* Hold the RTR frame (iov, n pieces, len bytes; pointing into the
	 * stream's own storage) to go out first. 0 or -errno. */
	int (*queue_rtr)(struct iw_stream *s, const struct iovec *iov, int n, size_t len);
	/* Start I/O (watch the stream). 0 or -errno. */
	int (*open)(struct iw_stream *s);
	/* The stream is over: release the byte stream (reset if abortive). */
	void (*close)(struct iw_stream *s, int err, bool abortive);
	/* Free the transport's memory (the stream is closed). */
	void (*free)(struct iw_stream *s);
	/* Kick only from deferred work, never inline from iw_post_send
	 * (iw_transport_ops.kick_from_post false). */
	bool kick_deferred;
};

struct iw_stream {
	struct iw_transport base; /* first: the QP's handle */
	const struct iw_stream_io *io;
	struct iw_context *ctx;
	enum iw_stream_state state;
	bool gated;    /* nothing goes out (responder before the first FPDU, initiator's delay) */
	bool send_rtr; /* the RTR goes first */
	uint32_t tx_delay_ms;
	struct iw_cm_id *cm_id;
	struct iw_timer close_timer;
	struct iw_timer delay_timer; /* initiator: first-FPDU delay */
	struct iw_tp_guard guard;
	/* The RTR frame's own bytes (the payload is empty). */
	struct iw_mpa_tx_frame rtr_fpdu;
	uint8_t rtr_markers[2][IW_MPA_MARKER_LEN]; /* 20 bytes cross at most one marker position */
	uint8_t rtr_hdr[IW_DDP_UNTAGGED_HDR_LEN];
};

/* MULPDU for a stream whose segments carry mss bytes: max_ulpdu when
 * nonzero (iw_conn_param asks for a size), else iw_mpa_mulpdu(mss);
 * never above IW_MPA_ULPDU_MAX. */
uint32_t iw_stream_mulpdu(size_t mss, bool markers_tx, uint32_t max_ulpdu);

/* Fill in the core for a transport of qp configured by cfg. */
void iw_stream_init(struct iw_stream *s, struct iw_context *ctx, struct iw_qp *qp, const struct iw_stream_io *io,
		    const struct iw_stream_cfg *cfg);

static inline struct iw_stream *iw_stream_of(struct iw_transport *t)
{
	return (struct iw_stream *)t; /* base is the first member */
}

static inline struct iw_rdmap_conn *iw_stream_conn(struct iw_stream *s)
{
	return &s->base.qp->conn;
}

static inline bool iw_stream_closed(const struct iw_stream *s)
{
	return s->state == IW_STREAM_CLOSED;
}

/* A step of the transport's own (I/O callback, timer). Leave returns
 * false when the transport was freed. */
static inline void iw_stream_enter(struct iw_stream *s)
{
	iw_tp_guard_enter(&s->guard);
}
bool iw_stream_unwind(struct iw_stream *s);
static inline bool iw_stream_leave(struct iw_stream *s)
{
	const struct iw_tp_guard *g = &s->guard;

	/* Inline, the usual case: the outermost step ends with nothing
	 * recorded (what iw_tp_guard_leave would do, without the call). */
	if (g->depth == 1 && !g->kick_req && !g->destroy_req && !g->shut_req) {
		s->guard.depth = 0;
		return true;
	}
	return iw_stream_unwind(s);
}

/* Send what can go (gate, drain and FIN included). */
void iw_stream_tx(struct iw_stream *s);
/* Bytes arrived: the initiator is in FPDU mode, a gated responder may talk. */
void iw_stream_rx_seen(struct iw_stream *s);
/* The stream is over: close it and tell the QP (unless it asked for this
 * itself) and the CM. err 0: the peer's FIN. */
void iw_stream_finish(struct iw_stream *s, int err, bool notify_qp, bool abortive);

#endif
