/* Queue pairs: verbs work requests <-> the RDMAP engine, completions,
 * errors, flushing.
 *
 * States (qp_state.c has the table of edges): IDLE (created) -> RTS
 * (iw_qp_connect_start) -> CLOSING (a disconnect drains the SQ) -> ERROR
 * (a Terminate sent or received, the stream lost, a completion lost) or
 * CLOSED (graceful disconnect by either side). Leaving RTS flushes: every
 * outstanding send WR and every posted receive (with an SRQ: only the
 * entry a message was being received into) completes exactly once, with
 * IW_WC_WR_FLUSH_ERR unless it is the WR the error is about:
 *
 *   cause detected here (we send the Terminate), wc.cause = that cause:
 *     receive in progress, DDP untagged "too long" (1,2,0x05)  LOC_LEN_ERR
 *     receive in progress, RDMAP protection (0,1,*)            LOC_PROT_ERR
 *     receive in progress, any other DDP/RDMAP cause           LOC_QP_OP_ERR
 *     READ whose response broke: DDP tagged (1,1,*) or
 *       RDMAP protection (0,1,*)                               LOC_PROT_ERR
 *     READ whose response broke, other causes                  LOC_QP_OP_ERR
 *     MPA-layer and local catastrophic causes blame no WR.
 *   Terminate received, wc.cause = its cause; the WR is found from the
 *   copied DDP header (READ_REQ: the oldest outstanding READ; WRITE /
 *   SEND: the oldest such WR already started and not yet completed; no
 *   header, e.g. MPA causes: no WR):
 *     RDMAP protection (0,1,*), DDP tagged (1,1,*)             REM_ACCESS_ERR
 *     DDP untagged (1,2,*)                                     REM_INV_REQ_ERR
 *     RDMAP operation (0,2,*), catastrophic (*,0,*)            REM_OP_ERR
 *   (a WRITE or SEND the transport already took completed successfully:
 *   iWARP completes them locally; the error then shows as the QP state,
 *   iw_qp_error() and the cause on every flushed completion.)
 *   stream lost (2,0,0x01): the oldest started send WR and the receive
 *     in progress get IW_WC_FATAL_ERR.
 * Flushed completions carry wc.cause = the QP's error cause (no cause,
 * valid == false, after a graceful close). Unsignaled WRs report errors too; successful
 * unsignaled ones release their regions without a completion.
 *
 * A lost completion (CQ overflow) is a catastrophic error of the QP: the
 * stream is terminated with RDMAP (0,0,0x00) "local catastrophic", the
 * RFC 5040 sec. 7.4.1 cause for a local failure the peer did not cause
 * ((0,2,0x07) would blame the peer's operation); iw_qp_error() returns it
 * as a real cause, distinct from "no cause".
 *
 * Engine callbacks never call transport ops: they record state and defer
 * (iw_qp_defer); iw_progress runs the deferred work. */
#include "internal.h"
#include "qp_mem.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CAUSE_STREAM_LOST IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_STREAM_LOST)
#define CAUSE_LOCAL_CATA IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_LOCAL_CATA, 0x00)

static const struct iw_term_cause no_cause;

/* ------------------------------------------------------------------ */
/* Status mapping                                                      */

static bool cause_is_protection(struct iw_term_cause c)
{
	return (c.layer == IW_LAYER_RDMAP && c.etype == IW_ETYPE_RDMAP_REMOTE_PROT) ||
	       (c.layer == IW_LAYER_DDP && c.etype == IW_ETYPE_DDP_TAGGED);
}

static enum iw_wc_status remote_status(struct iw_term_cause c)
{
	if (cause_is_protection(c))
		return IW_WC_REM_ACCESS_ERR;
	if (c.layer == IW_LAYER_DDP && c.etype == IW_ETYPE_DDP_UNTAGGED)
		return IW_WC_REM_INV_REQ_ERR;
	return IW_WC_REM_OP_ERR;
}

static enum iw_wc_status local_recv_status(struct iw_term_cause c)
{
	if (c.layer == IW_LAYER_DDP && c.etype == IW_ETYPE_DDP_UNTAGGED && c.ecode == IW_ECODE_DDP_U_TOO_LONG)
		return IW_WC_LOC_LEN_ERR;
	if (c.layer == IW_LAYER_RDMAP && c.etype == IW_ETYPE_RDMAP_REMOTE_PROT)
		return IW_WC_LOC_PROT_ERR;
	return IW_WC_LOC_QP_OP_ERR;
}

static enum iw_wc_opcode wc_opcode_of(enum iw_rdmap_wr_opcode op)
{
	switch (op) {
	case IW_RDMAP_WR_WRITE:
	case IW_RDMAP_WR_WRITE_IMM:
		return IW_WC_RDMA_WRITE;
	case IW_RDMAP_WR_ATOMIC_CMP_SWAP:
		return IW_WC_COMP_SWAP;
	case IW_RDMAP_WR_ATOMIC_FETCH_ADD:
		return IW_WC_FETCH_ADD;
	case IW_RDMAP_WR_READ:
		return IW_WC_RDMA_READ;
	default:
		return IW_WC_SEND;
	}
}

/* ------------------------------------------------------------------ */
/* Deferred work                                                       */

void iw_qp_defer(struct iw_qp *qp, unsigned work)
{
	qp->work |= work;
	if (qp->deferred)
		return;
	qp->deferred = true;
	qp->deferred_next = qp->ctx->deferred;
	qp->ctx->deferred = qp;
	iw_ctx_wake(qp->ctx);
}

static void undefer(struct iw_qp *qp)
{
	if (!qp->deferred)
		return;
	for (struct iw_qp **pp = &qp->ctx->deferred; *pp; pp = &(*pp)->deferred_next) {
		if (*pp == qp) {
			*pp = qp->deferred_next;
			break;
		}
	}
	qp->deferred = false;
	qp->deferred_next = NULL;
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */

static void complete(struct iw_qp *qp, struct iw_cq *cq, const struct iw_wc *wc)
{
	/* A lost completion leaves the application unable to account for
	 * its WRs: stop the QP (outside this callback). */
	if (iw_cq_push(cq, wc) < 0 && iw_qp_live(qp))
		iw_qp_defer(qp, IW_QPW_FAIL);
}

/* Send-queue slot of an engine cookie (the free-running SQ counter). */
static inline uint32_t sq_slot(const struct iw_qp *qp, uint64_t cookie)
{
	return (uint32_t)(cookie % qp->cap.max_send_wr);
}

/* A slot's region references and inline room, by index (no per-slot
 * pointers: nothing touches a slot before its first WR). */
static inline struct iw_mr **meta_mrs(struct iw_qp *qp, uint32_t slot)
{
	return qp->sq_mr_pool + (size_t)slot * qp->cap.max_send_sge;
}

static inline uint8_t *meta_inline(struct iw_qp *qp, uint32_t slot)
{
	return qp->inline_mem + (size_t)slot * qp->cap.max_inline_data;
}

static inline void meta_release(struct iw_qp *qp, uint32_t slot)
{
	struct iw_sq_meta *m = &qp->sq_meta[slot];
	struct iw_mr **mr = meta_mrs(qp, slot);

	for (int i = 0; i < m->nmr; i++)
		mr[i]->in_use--;
	m->nmr = 0;
}

/* Run the local invalidates whose turn has come (every engine WR posted
 * before them completed); once the QP left RTS they are flushed. */
static void run_local_invs(struct iw_qp *qp)
{
	while (qp->linv_count) {
		struct iw_local_inv *l = &qp->linv[qp->linv_head];
		if ((int32_t)(qp->sq_completed - l->after) < 0)
			return;
		struct iw_wc wc = { .wr_id = l->wr_id, .opcode = IW_WC_LOCAL_INV, .qp = qp };
		if (!iw_qp_live(qp)) {
			wc.status = IW_WC_WR_FLUSH_ERR;
			wc.cause = qp->flush_cause;
		} else if (iw_mr_invalidate(qp->ctx, qp->pd, l->stag) < 0) {
			wc.status = IW_WC_LOC_PROT_ERR;
		}
		bool report = wc.status != IW_WC_SUCCESS || l->signaled || qp->sq_sig_all;
		qp->linv_head = (qp->linv_head + 1) % qp->cap.max_send_wr;
		qp->linv_count--;
		if (report)
			complete(qp, qp->scq, &wc);
	}
}

static void on_sq_event(struct iw_qp *qp, const struct iw_rdmap_event *ev)
{
	uint32_t slot = sq_slot(qp, ev->cookie);
	struct iw_sq_meta *m = &qp->sq_meta[slot];
	bool ok = ev->type == IW_RDMAP_EV_SQ_DONE;

	qp->sq_completed++;
	meta_release(qp, slot);
	if (ok && (IW_RDMAP_WR_BIT(ev->wr_opcode) & (IW_RDMAP_WR_BIT(IW_RDMAP_WR_READ) | IW_RDMAP_WR_ATOMICS)))
		iw_qp_defer(qp, IW_QPW_KICK); /* fenced WRs / ORD may proceed */
	if (qp->st == IW_QP_ST_CLOSING)
		iw_qp_defer(qp, IW_QPW_DRAIN);
	if (ok && !m->signaled && !qp->sq_sig_all) {
		run_local_invs(qp);
		return;
	}
	struct iw_wc wc = {
		.wr_id = m->wr_id,
		.status = IW_WC_SUCCESS,
		.opcode = m->opcode,
		.byte_len = ok ? ev->byte_len : 0,
		.qp = qp,
	};
	if (!ok) {
		bool blamed = qp->blame_sq && qp->blame_sq_cookie == ev->cookie;
		wc.status = blamed ? qp->blame_sq_status : IW_WC_WR_FLUSH_ERR;
		wc.cause = qp->flush_cause;
		if (blamed)
			qp->blame_sq = false;
	}
	complete(qp, qp->scq, &wc);
	run_local_invs(qp);
}

static void on_recv_done(struct iw_qp *qp, const struct iw_rdmap_event *ev)
{
	struct iw_rq_entry *e = qp->rx_cur;
	if (!e && !qp->srq)
		e = iw_rq_head(&qp->rq);
	if (!e)
		return; /* the engine had no buffer from us: cannot happen */
	struct iw_wc wc = {
		.wr_id = e->wr_id,
		.status = IW_WC_SUCCESS,
		.opcode = IW_WC_RECV,
		.byte_len = ev->byte_len,
		.qp = qp,
	};
	if (ev->solicited)
		wc.flags |= IW_WC_SOLICITED;
	if (ev->invalidated) {
		wc.flags |= IW_WC_WITH_INV;
		wc.invalidated_stag = ev->inv_stag;
	}
	if (ev->has_imm) {
		/* RFC 7306 Immediate Data: a Write with Immediate's notice. */
		wc.opcode = IW_WC_RECV_RDMA_WITH_IMM;
		wc.flags |= IW_WC_WITH_IMM;
		wc.imm_data = ev->imm;
	}
	iw_rq_entry_release(e);
	if (!qp->srq)
		iw_rq_pop(&qp->rq);
	qp->rx_cur = NULL;
	complete(qp, qp->rcq, &wc);
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */

/* Once in ERROR or CLOSED the first outcome stands. */
static void enter_error(struct iw_qp *qp, struct iw_term_cause cause, const char *why)
{
	if (!iw_qp_may(qp, IW_QP_ST_ERROR))
		return;
	iw_qp_transition(qp, IW_QP_ST_ERROR, why);
	qp->error = cause;
	qp->flush_cause = cause;
}

static bool is_send_opcode(uint8_t op)
{
	return op == IW_OP_SEND || op == IW_OP_SEND_INV || op == IW_OP_SEND_SE || op == IW_OP_SEND_SE_INV;
}

/* Untagged messages that consume a receive WR. */
static bool is_recv_opcode(uint8_t op)
{
	return is_send_opcode(op) || op == IW_OP_IMM_DATA || op == IW_OP_IMM_DATA_SE;
}

static void blame_sq(struct iw_qp *qp, uint64_t cookie, enum iw_wc_status st)
{
	qp->blame_sq = true;
	qp->blame_sq_cookie = cookie;
	qp->blame_sq_status = st;
}

/* We detected the violation: which of our WRs is it about? The engine
 * reports ERROR while it still holds the offending segment's state. */
static void blame_local(struct iw_qp *qp, struct iw_term_cause c)
{
	uint64_t cookie;

	if (qp->error_local || c.layer == IW_LAYER_MPA || c.etype == 0)
		return; /* framing or local failures: no particular WR */
	uint8_t op = iw_rdmap_rx_opcode(&qp->conn);
	if (is_recv_opcode(op) && qp->rx_cur) {
		qp->blame_rq = true;
		qp->blame_rq_status = local_recv_status(c);
	} else if ((op == IW_OP_READ_RESP || op == IW_OP_ATOMIC_RESP) && iw_rdmap_oldest_read(&qp->conn, &cookie)) {
		blame_sq(qp, cookie, cause_is_protection(c) ? IW_WC_LOC_PROT_ERR : IW_WC_LOC_QP_OP_ERR);
	}
}

/* The peer's Terminate: find our WR from the header it copied. */
static void blame_remote(struct iw_qp *qp, const struct iw_rdmap_term *t, struct iw_term_cause c)
{
	uint64_t cookie;
	bool found = false;

	if (!t || !t->has_ddp_hdr || t->ddp_hdr_len < 2)
		return;
	uint8_t op = iw_rdmap_opcode_of(t->ddp_hdr[1]);
	const struct iw_rdmap_conn *conn = &qp->conn;
	if (op == IW_OP_READ_REQ)
		found = iw_rdmap_oldest_read(conn, &cookie) ||
			iw_rdmap_oldest_started(conn, IW_RDMAP_WR_BIT(IW_RDMAP_WR_READ), &cookie);
	else if (op == IW_OP_WRITE)
		found = iw_rdmap_oldest_started(conn, IW_RDMAP_WR_BIT(IW_RDMAP_WR_WRITE), &cookie);
	else if (is_send_opcode(op))
		found = iw_rdmap_oldest_started(conn, IW_RDMAP_WR_SENDS, &cookie);
	else if (op == IW_OP_ATOMIC_REQ)
		found = iw_rdmap_oldest_read(conn, &cookie) || iw_rdmap_oldest_started(conn, IW_RDMAP_WR_ATOMICS, &cookie);
	else if (op == IW_OP_IMM_DATA || op == IW_OP_IMM_DATA_SE)
		found = iw_rdmap_oldest_started(conn, IW_RDMAP_WR_BIT(IW_RDMAP_WR_WRITE_IMM), &cookie);
	if (found) {
		/* A peer that does not know the opcode (it never ACKed RFC 7306
		 * but got one anyway): the request was invalid for it. */
		bool unknown_op = c.layer == IW_LAYER_RDMAP && c.etype == IW_ETYPE_RDMAP_REMOTE_OP &&
				  c.ecode == IW_ECODE_RDMAP_UNEXP_OPCODE;
		blame_sq(qp, cookie, unknown_op ? IW_WC_REM_INV_REQ_ERR : remote_status(c));
	}
}

static void linger_start(struct iw_qp *qp, uint64_t first_check_ms)
{
	qp->linger_deadline = iw_now_ms() + IW_QP_LINGER_MS;
	iw_ctx_timer_arm(qp->ctx, &qp->linger, first_check_ms);
}

/* Waiting for our Terminate to go out, or for a disconnect to drain. A
 * draining QP is re-checked periodically (a transport does not report
 * every acknowledged byte to the QP); past the deadline we abort. */
static void linger_expired(struct iw_timer *t)
{
	struct iw_qp *qp = (struct iw_qp *)((char *)t - offsetof(struct iw_qp, linger));
	uint64_t now = iw_now_ms();
	if (qp->flushed && !qp->term_closing)
		return;
	if (now < qp->linger_deadline) {
		uint64_t left = qp->linger_deadline - now;
		if (qp->st == IW_QP_ST_CLOSING) {
			iw_qp_defer(qp, IW_QPW_DRAIN);
			left = left < IW_QP_DRAIN_POLL_MS ? left : IW_QP_DRAIN_POLL_MS;
		}
		iw_ctx_timer_arm(qp->ctx, &qp->linger, left);
		return;
	}
	if (iw_qp_live(qp))
		iw_qp_transition(qp, IW_QP_ST_CLOSED, "disconnect did not drain in time");
	iw_qp_defer(qp, IW_QPW_ABORT | IW_QPW_FLUSH);
}

/* Errors and Terminates: out of line, so the per-message events below
 * do not pay for their registers. */
static __attribute__((noinline)) void on_rare_event(struct iw_qp *qp, const struct iw_rdmap_event *ev)
{
	switch (ev->type) {
	case IW_RDMAP_EV_SQ_DONE:
	case IW_RDMAP_EV_SQ_FLUSH:
	case IW_RDMAP_EV_RECV_DONE:
		break;
	case IW_RDMAP_EV_ERROR:
		/* Our Terminate is queued: send it, then close (TERM_SENT). */
		enter_error(qp, ev->cause, "violation found: our Terminate queued");
		blame_local(qp, ev->cause);
		linger_start(qp, IW_QP_LINGER_MS);
		iw_qp_defer(qp, IW_QPW_KICK);
		break;
	case IW_RDMAP_EV_TERM_SENT:
		/* Flush now; the linger keeps running: a peer that does not
		 * answer our FIN is reset at the Terminate bound, not after
		 * the transport's longer graceful-close timeout. */
		qp->term_closing = true;
		iw_qp_defer(qp, IW_QPW_CLOSE | IW_QPW_FLUSH);
		break;
	case IW_RDMAP_EV_TERM_RECV:
		enter_error(qp, ev->cause, "Terminate received");
		blame_remote(qp, ev->term, ev->cause);
		iw_qp_defer(qp, IW_QPW_ABORT | IW_QPW_FLUSH);
		break;
	}
}

static void on_event(void *ctx, const struct iw_rdmap_event *ev)
{
	struct iw_qp *qp = ctx;

	if (ev->type == IW_RDMAP_EV_RECV_DONE)
		on_recv_done(qp, ev);
	else if (ev->type == IW_RDMAP_EV_SQ_DONE || ev->type == IW_RDMAP_EV_SQ_FLUSH)
		on_sq_event(qp, ev);
	else
		on_rare_event(qp, ev);
}

/* ------------------------------------------------------------------ */
/* Engine callbacks                                                    */

static enum iw_stag_status op_stag(void *ctx, uint32_t stag, uint64_t to, size_t len, unsigned access,
				   uint8_t **addr)
{
	struct iw_qp *qp = ctx;
	return iw_mr_lookup(qp->ctx, qp->pd, stag, to, len, access, NULL, addr);
}

static int op_recv_buf(void *ctx, const struct iovec **sgl, int *nsge)
{
	struct iw_qp *qp = ctx;

	if (!qp->rx_cur) {
		if (qp->srq) {
			/* Take the entry off the shared queue: other QPs' messages
			 * must not land in it; later segments reuse rx_cur. */
			struct iw_rq_entry *e = iw_rq_head(&qp->srq->rq);
			if (!e)
				return -1;
			iw_rq_entry_move(&qp->rx_slot, e);
			iw_rq_pop(&qp->srq->rq);
			qp->rx_cur = &qp->rx_slot;
		} else {
			/* Stays at the head of our ring until RECV_DONE. */
			qp->rx_cur = iw_rq_head(&qp->rq);
			if (!qp->rx_cur)
				return -1;
		}
	}
	*sgl = qp->rx_cur->sgl;
	*nsge = qp->rx_cur->nsge;
	return 0;
}

static int op_invalidate(void *ctx, uint32_t stag)
{
	struct iw_qp *qp = ctx;
	return iw_mr_invalidate(qp->ctx, qp->pd, stag);
}

static const struct iw_rdmap_conn_ops engine_ops = {
	.stag = op_stag,
	.recv_buf = op_recv_buf,
	.invalidate = op_invalidate,
	.event = on_event,
};

/* ------------------------------------------------------------------ */
/* Flush, close                                                        */

static void flush_recv(struct iw_qp *qp, struct iw_rq_entry *e, enum iw_wc_status st)
{
	struct iw_wc wc = {
		.wr_id = e->wr_id,
		.status = st,
		.opcode = IW_WC_RECV,
		.qp = qp,
		.cause = qp->flush_cause,
	};
	iw_rq_entry_release(e);
	complete(qp, qp->rcq, &wc);
}

static void qp_flush(struct iw_qp *qp)
{
	if (qp->flushed)
		return;
	qp->flushed = true;
	if (!qp->term_closing)
		iw_ctx_timer_cancel(qp->ctx, &qp->linger);
	if (qp->connected)
		iw_rdmap_flush(&qp->conn); /* SQ_FLUSH (or late SQ_DONE) per WR, in order */
	run_local_invs(qp); /* those behind every engine WR */
	qp->blame_sq = false;
	if (qp->rx_cur) {
		struct iw_rq_entry *e = qp->rx_cur;
		qp->rx_cur = NULL;
		flush_recv(qp, e, qp->blame_rq ? qp->blame_rq_status : IW_WC_WR_FLUSH_ERR);
		if (!qp->srq)
			iw_rq_pop(&qp->rq);
	}
	qp->blame_rq = false;
	if (!qp->srq) {
		struct iw_rq_entry *e;
		while ((e = iw_rq_head(&qp->rq))) {
			flush_recv(qp, e, IW_WC_WR_FLUSH_ERR);
			iw_rq_pop(&qp->rq);
		}
	}
}

void iw_qp_run_deferred(struct iw_qp *qp)
{
	unsigned w = qp->work;
	struct iw_transport *t = qp->transport;

	qp->work = 0;
	if ((w & IW_QPW_FAIL) && qp->connected && iw_rdmap_running(&qp->conn)) {
		qp->error_local = true;
		iw_rdmap_fail(&qp->conn, CAUSE_LOCAL_CATA); /* -> ERROR event */
		w |= IW_QPW_KICK;
	}
	if ((w & IW_QPW_KICK) && t && !qp->shut)
		t->ops->kick(t);
	if ((w & (IW_QPW_DRAIN | IW_QPW_KICK)) && qp->st == IW_QP_ST_CLOSING && !qp->flushed &&
	    iw_rdmap_tx_drained(&qp->conn)) {
		iw_qp_transition(qp, IW_QP_ST_CLOSED, "send queue drained");
		w |= IW_QPW_CLOSE | IW_QPW_FLUSH;
	}
	if ((w & (IW_QPW_CLOSE | IW_QPW_ABORT)) && t && !qp->shut) {
		qp->shut = true;
		t->ops->shutdown(t, (w & IW_QPW_ABORT) != 0);
	} else if ((w & IW_QPW_ABORT) && t && qp->term_closing) {
		t->ops->shutdown(t, true); /* Terminate bound passed: a no-op if already closed */
	}
	if (w & IW_QPW_FLUSH)
		qp_flush(qp);
}

int iw_qp_connect_start(struct iw_qp *qp, const struct iw_qp_conn_params *p, struct iw_transport *t)
{
	if (!qp || !p || !t || !t->ops || !iw_qp_idle(qp))
		return -EINVAL;
	if (p->ird > IW_RDMAP_MAX_IRD_ORD || p->ord > IW_RDMAP_MAX_IRD_ORD)
		return -EINVAL;
	uint32_t n_ird = p->ird ? p->ird : 1;
	struct iw_rdmap_ird_entry *ird = calloc(n_ird, sizeof(*ird));
	uint8_t(*markers)[IW_MPA_MARKER_LEN] = NULL;
	if (p->markers_tx)
		markers = calloc((size_t)IW_QP_TX_SLOTS * IW_MPA_TX_MAX_MARKERS, sizeof(*markers));
	/* Verified placement needs CRC to verify (the CM insists on it). */
	uint8_t *stage = NULL;
	if (qp->verified && p->crc && !qp->rx_stage)
		stage = iw_pages_alloc(IW_QP_RX_STAGE);
	if (!ird || (p->markers_tx && !markers) || (qp->verified && p->crc && !qp->rx_stage && !stage)) {
		free(ird);
		free(markers);
		iw_pages_free(stage, IW_QP_RX_STAGE);
		return -ENOMEM;
	}
	if (stage)
		qp->rx_stage = stage;
	struct iw_rdmap_conn_cfg cfg = {
		.crc = p->crc,
		.markers_tx = p->markers_tx,
		.markers_rx = p->markers_rx,
		.mulpdu = p->mulpdu,
		.max_ulpdu_rx = p->max_ulpdu_rx,
		.ird = p->ird,
		.ord = p->ord,
		.rfc7306 = p->rfc7306,
	};
	struct iw_rdmap_conn_mem mem = {
		.sq = qp->sq,
		.sq_depth = qp->cap.max_send_wr,
		.ird = ird,
		.n_ird = n_ird,
		.tx = qp->tx,
		.n_tx = IW_QP_TX_SLOTS,
		.sgl_pool = qp->sq_sgl_pool,
		.max_sge = qp->cap.max_send_sge,
		.tx_markers = markers,
		.rx_stage = qp->verified && p->crc ? qp->rx_stage : NULL,
		.rx_stage_len = IW_QP_RX_STAGE,
		/* qmem is fresh zero pages, untouched: keep it so; the IRD
		 * table is calloc'd. */
		.zeroed = true,
	};
	int rc = iw_rdmap_conn_init(&qp->conn, &cfg, &engine_ops, qp, &mem);
	if (rc < 0) {
		free(ird);
		free(markers);
		return rc;
	}
	qp->ird = ird;
	qp->tx_markers = markers;
	qp->n_tx = IW_QP_TX_SLOTS;
	qp->sq_posted = 0;
	qp->sq_completed = 0;
	qp->transport = t;
	t->qp = qp;
	qp->connected = true;
	iw_qp_transition(qp, IW_QP_ST_RTS, "connected");
	return 0;
}

/* The peer's FIN is graceful only between messages: a stream that ends
 * inside an FPDU or inside a SEND message lost data (an LLP failure,
 * reported as (2,0,0x01) TCP stream lost). */
static bool rx_mid_message(const struct iw_qp *qp)
{
	return iw_rdmap_rx_mid_fpdu(&qp->conn) || qp->rx_cur;
}

void iw_qp_transport_closed(struct iw_qp *qp, int err)
{
	if (qp && qp->term_closing) {
		qp->term_closing = false; /* closed within the Terminate bound */
		iw_ctx_timer_cancel(qp->ctx, &qp->linger);
	}
	if (!qp || !qp->connected || qp->flushed)
		return;
	qp->shut = true; /* nothing left to shut down */
	if (err == 0 && iw_qp_live(qp) && rx_mid_message(qp))
		err = -EPIPE;
	if (err == 0) {
		if (iw_qp_live(qp))
			iw_qp_transition(qp, IW_QP_ST_CLOSED, "peer closed between messages");
	} else if (iw_qp_live(qp)) {
		uint64_t cookie;
		enter_error(qp, CAUSE_STREAM_LOST, "stream lost");
		if (iw_rdmap_oldest_started(&qp->conn, IW_RDMAP_WR_ANY, &cookie))
			blame_sq(qp, cookie, IW_WC_FATAL_ERR);
		if (qp->rx_cur) {
			qp->blame_rq = true;
			qp->blame_rq_status = IW_WC_FATAL_ERR;
		}
	}
	iw_qp_defer(qp, IW_QPW_FLUSH);
}

void iw_qp_disconnect(struct iw_qp *qp)
{
	if (!qp || qp->st != IW_QP_ST_RTS)
		return;
	iw_qp_transition(qp, IW_QP_ST_CLOSING, "disconnect");
	linger_start(qp, IW_QP_DRAIN_POLL_MS);
	iw_qp_defer(qp, IW_QPW_DRAIN | IW_QPW_KICK);
}

/* ------------------------------------------------------------------ */
/* Create / destroy                                                    */

/* IWARP_VERIFIED_PLACEMENT=1: every QP places only verified data. */
static bool env_verified_placement(void)
{
	const char *v = getenv("IWARP_VERIFIED_PLACEMENT");

	return v && v[0] == '1' && v[1] == '\0';
}

static void qp_free(struct iw_qp *qp)
{
	if (!qp)
		return;
	free(qp->ird);
	free(qp->tx_markers);
	iw_pages_free(qp->rx_stage, IW_QP_RX_STAGE);
	iw_rq_fini(&qp->rq); /* releases posted entries: before qmem goes */
	iw_rq_slot_fini(&qp->rx_slot);
	iw_pages_free(qp->qmem, qp->qmem_len);
	free(qp);
}

/* Where each per-WR array and the tx slots sit in qmem. */
struct qp_layout {
	size_t sq, sq_sgl, meta, sq_mr, linv, inl, tx, rq, rq_sgl, rq_mr, len;
};

static size_t layout_take(size_t *off, size_t n, size_t size)
{
	size_t at = (*off + 63) & ~(size_t)63; /* each array on its own cache line */
	*off = at + n * size;
	return at;
}

/* Sized by the QP's caps, not the library's maxima (SGE room, inline room
 * only as asked; no receive ring with an SRQ: then max_recv_wr is 0). */
static struct qp_layout qp_layout_of(const struct iw_qp_cap *cap)
{
	struct qp_layout l;
	size_t off = 0, nsw = cap->max_send_wr, nrw = cap->max_recv_wr;

	l.sq = layout_take(&off, nsw, sizeof(struct iw_rdmap_sq_entry));
	l.sq_sgl = layout_take(&off, nsw * cap->max_send_sge, sizeof(struct iovec));
	l.meta = layout_take(&off, nsw, sizeof(struct iw_sq_meta));
	l.sq_mr = layout_take(&off, nsw * cap->max_send_sge, sizeof(struct iw_mr *));
	l.linv = layout_take(&off, nsw, sizeof(struct iw_local_inv));
	l.inl = layout_take(&off, nsw, cap->max_inline_data);
	l.tx = layout_take(&off, IW_QP_TX_SLOTS, sizeof(struct iw_rdmap_tx_slot));
	l.rq = layout_take(&off, nrw, sizeof(struct iw_rq_entry));
	l.rq_sgl = layout_take(&off, nrw * cap->max_recv_sge, sizeof(struct iovec));
	l.rq_mr = layout_take(&off, nrw * cap->max_recv_sge, sizeof(struct iw_mr *));
	l.len = off;
	return l;
}

/* One mapping for all of it, left untouched: an idle QP keeps none of it
 * resident, and a slot's page becomes resident when a WR first uses it. */
static int qp_mem_setup(struct iw_qp *qp, const struct iw_qp_cap *cap)
{
	struct qp_layout l = qp_layout_of(cap);
	uint8_t *m = iw_pages_alloc(l.len);

	if (!m)
		return -ENOMEM;
	qp->qmem = m;
	qp->qmem_len = l.len;
	qp->sq = (struct iw_rdmap_sq_entry *)(void *)(m + l.sq);
	qp->sq_sgl_pool = (struct iovec *)(void *)(m + l.sq_sgl);
	qp->sq_meta = (struct iw_sq_meta *)(void *)(m + l.meta);
	qp->sq_mr_pool = (struct iw_mr **)(void *)(m + l.sq_mr);
	qp->linv = (struct iw_local_inv *)(void *)(m + l.linv);
	qp->inline_mem = m + l.inl;
	qp->tx = (struct iw_rdmap_tx_slot *)(void *)(m + l.tx);
	if (cap->max_recv_wr)
		iw_rq_init_at(&qp->rq, cap->max_recv_wr, cap->max_recv_sge, (struct iw_rq_entry *)(void *)(m + l.rq),
			      (struct iovec *)(void *)(m + l.rq_sgl), (struct iw_mr **)(void *)(m + l.rq_mr));
	return 0;
}

size_t iw_qp_mem_len(const struct iw_qp_cap *cap)
{
	return qp_layout_of(cap).len;
}

int iw_create_qp(struct iw_pd *pd, const struct iw_qp_init_attr *attr, struct iw_qp **out)
{
	if (!pd || !attr || !out || !attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	struct iw_context *ctx = pd->ctx;
	if (attr->send_cq->ctx != ctx || attr->recv_cq->ctx != ctx)
		return -EINVAL;
	if (attr->srq && (attr->srq->ctx != ctx || attr->srq->pd != pd))
		return -EINVAL;

	struct iw_qp_cap cap = attr->cap;
	if (!cap.max_send_wr)
		cap.max_send_wr = 128;
	if (!cap.max_recv_wr)
		cap.max_recv_wr = 128;
	if (!cap.max_send_sge)
		cap.max_send_sge = 4;
	if (!cap.max_recv_sge)
		cap.max_recv_sge = 4;
	if (!cap.max_inline_data)
		cap.max_inline_data = 64;
	if (cap.max_send_wr > IW_MAX_WR || cap.max_recv_wr > IW_MAX_WR || cap.max_send_sge > IW_MAX_SEND_SGE ||
	    cap.max_recv_sge > IW_MAX_RECV_SGE || cap.max_inline_data > IW_MAX_INLINE)
		return -EINVAL;
	if (attr->srq)
		cap.max_recv_wr = cap.max_recv_sge = 0; /* receives come from the SRQ */

	struct iw_qp *qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	if (qp_mem_setup(qp, &cap) < 0 ||
	    (attr->srq && iw_rq_slot_init(&qp->rx_slot, attr->srq->rq.max_sge) < 0)) {
		qp_free(qp);
		return -ENOMEM;
	}
	qp->ctx = ctx;
	qp->pd = pd;
	qp->scq = attr->send_cq;
	qp->rcq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->cap = cap;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->verified = attr->verified_placement || env_verified_placement();
	qp->user_context = attr->qp_context;
	qp->st = IW_QP_ST_IDLE; /* where every QP starts: no edge leads here */
	qp->linger.cb = linger_expired;

	iw_ctx_lock(ctx);
	if (ctx->n_qp >= ctx->max_qp) {
		iw_ctx_unlock(ctx);
		qp_free(qp);
		return -ENOSPC;
	}
	ctx->n_qp++;
	qp->ctx_next = ctx->qps;
	ctx->qps = qp;
	pd->n_users++;
	qp->scq->n_qp++;
	qp->rcq->n_qp++;
	if (qp->srq)
		qp->srq->n_qp++;
	iw_ctx_unlock(ctx);
	*out = qp;
	return 0;
}

void iw_qp_all_memory_gone(struct iw_context *ctx, uint32_t stag, const void *addr, size_t len)
{
	for (struct iw_qp *qp = ctx->qps; qp; qp = qp->ctx_next)
		if (qp->connected)
			iw_rdmap_rx_memory_gone(&qp->conn, stag, addr, len);
}

int iw_destroy_qp(struct iw_qp *qp)
{
	if (!qp)
		return -EINVAL;
	struct iw_context *ctx = qp->ctx;
	iw_ctx_lock(ctx);
	struct iw_transport *t = qp->transport;
	if (t) {
		if (!qp->shut) {
			qp->shut = true;
			t->ops->shutdown(t, true);
		}
		qp->transport = NULL;
		t->qp = NULL;
		t->ops->destroy(t);
	}
	undefer(qp);
	iw_cm_qp_gone(qp);
	iw_ctx_timer_cancel(ctx, &qp->linger);
	/* Outstanding WRs are dropped without completions; their regions
	 * are released. */
	if (qp->connected) {
		uint32_t end = iw_rdmap_sq_next_index(&qp->conn);
		for (uint32_t i = end - iw_rdmap_sq_outstanding(&qp->conn); i != end; i++)
			meta_release(qp, sq_slot(qp, i));
	}
	if (qp->srq && qp->rx_cur)
		iw_rq_entry_release(qp->rx_cur);
	qp->rx_cur = NULL;
	iw_rq_fini(&qp->rq);
	ctx->n_qp--;
	for (struct iw_qp **pp = &ctx->qps; *pp; pp = &(*pp)->ctx_next)
		if (*pp == qp) {
			*pp = qp->ctx_next;
			break;
		}
	qp->pd->n_users--;
	qp->scq->n_qp--;
	qp->rcq->n_qp--;
	if (qp->srq)
		qp->srq->n_qp--;
	iw_ctx_unlock(ctx);
	qp_free(qp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Posting                                                             */

/* How a verbs opcode is posted: the function, the engine opcode (and the
 * one IW_SEND_SOLICITED turns it into), the send_flags it accepts, and
 * which of the WR's remote fields it carries. */
struct send_op {
	int (*post)(struct iw_qp *qp, const struct iw_send_wr *wr, const struct send_op *o);
	enum iw_rdmap_wr_opcode op, op_se;
	unsigned flags;
	bool remote;    /* names the peer's memory: rkey, remote_addr */
	bool inv;       /* carries invalidate_rkey to the peer */
	bool read_sink; /* the SGE is a local sink: one, LOCAL_WRITE, no inline, ORD > 0 */
	bool rfc7306;   /* needs the peer's RFC 7306 ACK */
	bool atomic;    /* read_sink of exactly 8 bytes; carries compare_add / swap */
};

/* Local invalidates wait in SQ order behind the engine's WRs; no engine
 * WR, no data. */
static int post_local_inv(struct iw_qp *qp, const struct iw_send_wr *wr, const struct send_op *o)
{
	(void)o;
	if (wr->num_sge)
		return -EINVAL;
	struct iw_local_inv *l = &qp->linv[(qp->linv_head + qp->linv_count) % qp->cap.max_send_wr];
	*l = (struct iw_local_inv){
		.wr_id = wr->wr_id,
		.stag = wr->invalidate_rkey,
		.after = qp->sq_posted,
		.signaled = wr->send_flags & IW_SEND_SIGNALED,
	};
	qp->linv_count++;
	run_local_invs(qp); /* at once when nothing is ahead of it */
	return 0;
}

/* IW_SEND_INLINE: the data is copied into the WR's slot now (the SQ has
 * room, so the slot is free): the caller may reuse its buffers at once. */
static int gather_inline(struct iw_qp *qp, const struct iw_send_wr *wr, struct iw_rdmap_wr *w)
{
	uint64_t total = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		total += wr->sg_list[i].length;
		if (wr->sg_list[i].length && !wr->sg_list[i].addr)
			return -EINVAL;
	}
	if (total > qp->cap.max_inline_data)
		return -EMSGSIZE;
	uint8_t *inl_buf = meta_inline(qp, iw_rdmap_sq_next_index(&qp->conn) % qp->cap.max_send_wr);
	size_t off = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct iw_sge *s = &wr->sg_list[i];
		if (s->length)
			memcpy(inl_buf + off, (const void *)(uintptr_t)s->addr, s->length);
		off += s->length;
	}
	if (total) {
		w->sgl[0].iov_base = inl_buf;
		w->sgl[0].iov_len = (size_t)total;
		w->nsge = 1;
	}
	return 0;
}

/* Registered SGEs: each looked up (a READ sink needs LOCAL_WRITE); the
 * regions are returned in mrs for the WR to hold. */
static int gather_sges(struct iw_qp *qp, const struct iw_send_wr *wr, const struct send_op *o, struct iw_rdmap_wr *w,
		       struct iw_mr **mrs, int *nmr)
{
	unsigned acc = o->read_sink ? IW_RDMAP_ACC_LOCAL_WRITE : 0;
	uint64_t total = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		const struct iw_sge *s = &wr->sg_list[i];
		struct iw_mr *mr;
		uint8_t *p;
		if (iw_mr_lookup(qp->ctx, qp->pd, s->lkey, s->addr, s->length, acc, &mr, &p) != IW_STAG_OK)
			return -EINVAL;
		if (o->read_sink && !(mr->access & IW_ACCESS_LOCAL_WRITE))
			return -EINVAL; /* zero-length sinks too */
		total += s->length;
		/* Empty SGEs carry nothing; a READ keeps its one sink. */
		if (s->length || o->read_sink) {
			w->sgl[w->nsge].iov_base = p;
			w->sgl[w->nsge].iov_len = s->length;
			w->nsge++;
			mrs[(*nmr)++] = mr;
		}
	}
	if (total > UINT32_MAX)
		return -EMSGSIZE;
	if (o->read_sink && wr->num_sge == 1) {
		w->local_stag = wr->sg_list[0].lkey;
		w->local_to = wr->sg_list[0].addr;
	}
	return 0;
}

/* What completing the WR needs: its id, opcode, signalling and the
 * regions it holds, in the slot of its engine cookie. */
static void sq_meta_record(struct iw_qp *qp, const struct iw_send_wr *wr, const struct iw_rdmap_wr *w,
			   struct iw_mr *const *mrs, int nmr)
{
	uint32_t slot = (uint32_t)w->cookie % qp->cap.max_send_wr;
	struct iw_sq_meta *m = &qp->sq_meta[slot];
	m->wr_id = wr->wr_id;
	m->opcode = wc_opcode_of(w->opcode);
	m->signaled = wr->send_flags & IW_SEND_SIGNALED;
	m->nmr = nmr;
	struct iw_mr **mr = meta_mrs(qp, slot);
	for (int i = 0; i < nmr; i++) {
		mr[i] = mrs[i];
		mrs[i]->in_use++;
	}
}

/* SENDs, WRITE and READ: an engine WR. */
static int post_engine_wr(struct iw_qp *qp, const struct iw_send_wr *wr, const struct send_op *o)
{
	struct iw_rdmap_conn *c = &qp->conn;
	struct iw_rdmap_wr w;
	struct iw_mr *mrs[IW_RDMAP_MAX_SGE];
	int nmr = 0;

	if (o->rfc7306 && !iw_rdmap_config(c)->rfc7306)
		return -EOPNOTSUPP; /* the peer did not accept RFC 7306 (e.g. siw) */
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (o->atomic && (wr->num_sge != 1 || wr->sg_list[0].length != 8))
		return -EINVAL;
	/* An iWARP READ sink is one STag: one SGE. */
	if (o->read_sink && (wr->num_sge > 1 || iw_rdmap_ord(c) == 0))
		return -EINVAL;
	/* Only the scalar fields and sgl[0..nsge) are read by iw_rdmap_post:
	 * no memset of the whole WR (16 SGE slots) per post. */
	w.nsge = 0;
	w.local_stag = 0;
	w.local_to = 0;
	w.opcode = (wr->send_flags & IW_SEND_SOLICITED) ? o->op_se : o->op;
	int rc = (wr->send_flags & IW_SEND_INLINE) ? gather_inline(qp, wr, &w) : gather_sges(qp, wr, o, &w, mrs, &nmr);
	if (rc < 0)
		return rc;
	w.cookie = iw_rdmap_sq_next_index(c);
	w.fence = wr->send_flags & IW_SEND_FENCE;
	w.remote_stag = o->remote ? wr->rkey : 0;
	w.remote_to = o->remote ? wr->remote_addr : 0;
	w.inv_stag = o->inv ? wr->invalidate_rkey : 0;
	if (o->atomic) {
		/* The engine's fields follow RFC 7306: "add or swap", "compare". */
		bool cs = o->op == IW_RDMAP_WR_ATOMIC_CMP_SWAP;
		w.add_swap = cs ? wr->swap : wr->compare_add;
		w.compare = cs ? wr->compare_add : 0;
	}
	w.imm = wr->imm_data;
	w.solicited = o->op == IW_RDMAP_WR_WRITE_IMM && (wr->send_flags & IW_SEND_SOLICITED);
	if ((rc = iw_rdmap_post(c, &w)) < 0)
		return rc;
	sq_meta_record(qp, wr, &w, mrs, nmr);
	qp->sq_posted++;
	return 0;
}

#define SEND_FLAGS (IW_SEND_SIGNALED | IW_SEND_INLINE | IW_SEND_FENCE | IW_SEND_SOLICITED)

/* Per verbs opcode. */
#define ENGINE_WR(o, o_se) .post = post_engine_wr, .op = (o), .op_se = (o_se)
static const struct send_op send_ops[] = {
	[IW_WR_SEND] = { ENGINE_WR(IW_RDMAP_WR_SEND, IW_RDMAP_WR_SEND_SE), .flags = SEND_FLAGS },
	[IW_WR_SEND_WITH_SE] = { ENGINE_WR(IW_RDMAP_WR_SEND_SE, IW_RDMAP_WR_SEND_SE), .flags = SEND_FLAGS },
	[IW_WR_SEND_WITH_INV] = { ENGINE_WR(IW_RDMAP_WR_SEND_INV, IW_RDMAP_WR_SEND_SE_INV), .flags = SEND_FLAGS,
				  .inv = true },
	[IW_WR_SEND_WITH_SE_INV] = { ENGINE_WR(IW_RDMAP_WR_SEND_SE_INV, IW_RDMAP_WR_SEND_SE_INV), .flags = SEND_FLAGS,
				     .inv = true },
	[IW_WR_RDMA_WRITE] = { ENGINE_WR(IW_RDMAP_WR_WRITE, IW_RDMAP_WR_WRITE), .flags = SEND_FLAGS, .remote = true },
	[IW_WR_RDMA_READ] = { ENGINE_WR(IW_RDMAP_WR_READ, IW_RDMAP_WR_READ), .flags = SEND_FLAGS & ~(unsigned)IW_SEND_INLINE,
			      .remote = true, .read_sink = true },
	[IW_WR_ATOMIC_CMP_AND_SWP] = { ENGINE_WR(IW_RDMAP_WR_ATOMIC_CMP_SWAP, IW_RDMAP_WR_ATOMIC_CMP_SWAP),
				       .flags = IW_SEND_SIGNALED | IW_SEND_FENCE, .remote = true, .read_sink = true,
				       .rfc7306 = true, .atomic = true },
	[IW_WR_ATOMIC_FETCH_AND_ADD] = { ENGINE_WR(IW_RDMAP_WR_ATOMIC_FETCH_ADD, IW_RDMAP_WR_ATOMIC_FETCH_ADD),
					 .flags = IW_SEND_SIGNALED | IW_SEND_FENCE, .remote = true, .read_sink = true,
					 .rfc7306 = true, .atomic = true },
	/* SOLICITED sends the Immediate Data with SE. */
	[IW_WR_RDMA_WRITE_WITH_IMM] = { ENGINE_WR(IW_RDMAP_WR_WRITE_IMM, IW_RDMAP_WR_WRITE_IMM), .flags = SEND_FLAGS,
					.remote = true, .rfc7306 = true },
	/* invalidate_rkey names our own STag here: nothing goes to the peer */
	[IW_WR_LOCAL_INV] = { .post = post_local_inv, .flags = IW_SEND_SIGNALED | IW_SEND_FENCE },
};
#undef ENGINE_WR

static int post_one(struct iw_qp *qp, const struct iw_send_wr *wr)
{
	if (qp->st != IW_QP_ST_RTS)
		return -EPIPE;
	if (iw_rdmap_sq_outstanding(&qp->conn) + qp->linv_count >= qp->cap.max_send_wr)
		return -ENOSPC;
	if ((unsigned)wr->opcode >= sizeof(send_ops) / sizeof(send_ops[0]) || !send_ops[wr->opcode].post)
		return -EINVAL;
	const struct send_op *o = &send_ops[wr->opcode];
	if (wr->send_flags & ~o->flags)
		return -EINVAL;
	return o->post(qp, wr, o);
}

/* New send WRs on a healthy QP go to the transport from the caller's
 * thread: deferring costs an eventfd write, a wake-up of the progress loop
 * and an eventfd read per message, most of the latency gap to plain TCP.
 * A transport that allows it accepts a kick at any time under the context
 * lock (one arriving inside its own step runs when the step unwinds);
 * anything else pending for the QP keeps the deferred path so its order
 * holds. */
static void kick_now(struct iw_qp *qp)
{
	struct iw_transport *t = qp->transport;

	if (t && t->ops->kick_from_post && !qp->shut && qp->st == IW_QP_ST_RTS && !(qp->work & ~IW_QPW_KICK)) {
		qp->work &= ~IW_QPW_KICK;
		t->ops->kick(t);
		return;
	}
	iw_qp_defer(qp, IW_QPW_KICK);
}

int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr, struct iw_send_wr **bad_wr)
{
	if (!qp) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL;
	}
	int rc = 0, posted = 0;
	iw_ctx_lock(qp->ctx);
	uint64_t pushes = qp->ctx->cq_pushes;
	for (; wr; wr = wr->next, posted++)
		if ((rc = post_one(qp, wr)) < 0)
			break;
	if (posted)
		kick_now(qp);
	/* Sent and completed in this call (or a local invalidate ran). */
	if (qp->ctx->cq_pushes != pushes)
		iw_ctx_completed_outside(qp->ctx);
	iw_ctx_unlock(qp->ctx);
	if (bad_wr)
		*bad_wr = rc ? wr : NULL;
	return rc;
}

int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr)
{
	if (!qp || qp->srq) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL; /* a QP with an SRQ receives from the SRQ */
	}
	int rc;
	iw_ctx_lock(qp->ctx);
	if (!iw_qp_idle(qp) && qp->st != IW_QP_ST_RTS) {
		rc = -EPIPE;
		if (bad_wr)
			*bad_wr = wr;
	} else {
		rc = iw_rq_post(qp->ctx, qp->pd, &qp->rq, wr, bad_wr);
	}
	iw_ctx_unlock(qp->ctx);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Accessors                                                           */

bool iw_qp_rfc7306(const struct iw_qp *qp)
{
	if (!qp)
		return false;
	iw_ctx_lock(qp->ctx);
	bool on = qp->st != IW_QP_ST_IDLE && iw_rdmap_config(&qp->conn)->rfc7306;
	iw_ctx_unlock(qp->ctx);
	return on;
}

enum iw_qp_state iw_qp_state(const struct iw_qp *qp)
{
	if (!qp)
		return IW_QPS_ERROR;
	iw_ctx_lock(qp->ctx);
	enum iw_qp_state s = iw_qp_public_state(qp->st);
	iw_ctx_unlock(qp->ctx);
	return s;
}

void *iw_qp_context(const struct iw_qp *qp)
{
	return qp ? qp->user_context : NULL;
}

struct iw_term_cause iw_qp_error(const struct iw_qp *qp)
{
	if (!qp)
		return no_cause;
	iw_ctx_lock(qp->ctx);
	struct iw_term_cause c = qp->st == IW_QP_ST_ERROR ? qp->error : no_cause;
	iw_ctx_unlock(qp->ctx);
	return c;
}

void iw_qp_get_stats(const struct iw_qp *qp, struct iw_qp_stats *st)
{
	if (!qp || !st)
		return;
	iw_ctx_lock(qp->ctx);
	*st = qp->stats;
	struct iw_rdmap_stats es = iw_rdmap_get_stats(&qp->conn);
	st->fpdus_tx = es.fpdus_tx;
	st->fpdus_rx = es.fpdus_rx;
	st->bytes_placed = es.bytes_placed;
	iw_ctx_unlock(qp->ctx);
}
