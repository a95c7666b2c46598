/* RDMAP stream endpoint: see rdmap_conn.h for the model. */
#include "rdmap_conn.h"

#include <errno.h>
#include <string.h>

#include "iw_bytes.h"

enum sq_state { SQ_FREE = 0, SQ_QUEUED, SQ_SENDING, SQ_WAIT_ACK, SQ_WAIT_RESP, SQ_DONE };
enum ird_state { IRD_FREE = 0, IRD_RECEIVING, IRD_READY, IRD_SENDING, IRD_WAIT_ACK };
enum tx_kind { TX_NONE = 0, TX_SQ, TX_RESP, TX_TERM };

#define TERM_MSN 1 /* the one Terminate a stream carries (siw sends MSN 1 too) */

static struct iw_rdmap_sq_entry *sq_at(struct iw_rdmap_conn *c, uint32_t abs)
{
	return &c->mem.sq[abs % c->mem.sq_depth];
}

static struct iw_rdmap_ird_entry *ird_at(struct iw_rdmap_conn *c, uint32_t abs)
{
	return &c->mem.ird[abs % c->mem.n_ird];
}

static void emit(struct iw_rdmap_conn *c, const struct iw_rdmap_event *ev)
{
	if (c->ops.event)
		c->ops.event(c->ctx, ev);
}

static size_t sgl_len(const struct iovec *sgl, int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += sgl[i].iov_len;
	return len;
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */

/* Stop the stream: queue the Terminate describing cause, copying what
 * the RFC asks for from the offending ULPDU (avail bytes of it). */
static void fail_with(struct iw_rdmap_conn *c, struct iw_term_cause cause, const uint8_t *ulpdu,
		      size_t avail, uint16_t ulpdu_len)
{
	if (c->state != IW_RDMAP_ST_RTS)
		return;
	c->state = IW_RDMAP_ST_TERMINATING;
	c->error = cause;
	iw_rdmap_term_prepare(&c->term_out, cause, ulpdu, avail, ulpdu_len);
	c->term_len = iw_rdmap_term_encode(&c->term_out, c->term_buf);
	c->term_queued = true;
	struct iw_rdmap_event ev = { .type = IW_RDMAP_EV_ERROR, .cause = cause };
	emit(c, &ev);
}

/* The received ULP header, copied out of the deframer only when a
 * Terminate or a Read Request needs it (MPA keeps it until the next FPDU's
 * header): most segments never do. */
static uint8_t *rx_head(struct iw_rdmap_conn *c)
{
	if (c->rx.hdr_src) {
		memcpy(c->rx.ulpdu_head, c->rx.hdr_src, c->rx.hdr_len);
		c->rx.hdr_src = NULL;
	}
	return c->rx.ulpdu_head;
}

static void fail_rx(struct iw_rdmap_conn *c, struct iw_term_cause cause)
{
	fail_with(c, cause, rx_head(c), c->rx.hdr_len, c->rx.ulpdu_len);
}

void iw_rdmap_fail(struct iw_rdmap_conn *c, struct iw_term_cause cause)
{
	fail_with(c, cause, NULL, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Send-queue completion, strictly in posting order                    */

static void sq_retire(struct iw_rdmap_conn *c)
{
	while (c->sq_head != c->sq_tail) {
		struct iw_rdmap_sq_entry *e = sq_at(c, c->sq_head);
		if (e->state != SQ_DONE)
			break;
		struct iw_rdmap_event ev = {
			.type = IW_RDMAP_EV_SQ_DONE,
			.cookie = e->wr.cookie,
			.wr_opcode = e->wr.opcode,
			.byte_len = (uint32_t)sgl_len(e->wr.sgl, e->wr.nsge),
		};
		e->state = SQ_FREE;
		c->sq_head++;
		emit(c, &ev);
	}
}

/* ------------------------------------------------------------------ */
/* Receive: DDP callbacks                                              */

static enum iw_stag_status ddp_tagged(void *ctx, uint32_t stag, uint64_t to, size_t len,
				      uint8_t ulp_ctrl, uint8_t **dest)
{
	struct iw_rdmap_conn *c = ctx;
	uint8_t op = iw_rdmap_opcode_of(ulp_ctrl);

	/* A zero-length segment touches no memory; RFC 6581's zero-length
	 * WRITE RTR relies on it being accepted whatever its STag. */
	if (len == 0) {
		*dest = NULL;
		return IW_STAG_OK;
	}
	unsigned access = op == IW_OP_READ_RESP ? IW_RDMAP_ACC_LOCAL_WRITE : IW_RDMAP_ACC_REMOTE_WRITE;
	return c->ops.stag(c->ctx, stag, to, len, access, dest);
}

static int ddp_untagged(void *ctx, uint32_t qn, uint32_t msn, const struct iovec **sgl, int *nsge,
			struct iw_term_cause *cause)
{
	struct iw_rdmap_conn *c = ctx;
	(void)msn;   /* DDP already checked it against the queue's expected MSN */
	/* DDP's default cause, "no buffer", fits every refusal here but an
	 * unknown queue. */

	switch (qn) {
	case IW_DDP_QN_SEND:
		if (c->rx.opcode == IW_OP_IMM_DATA || c->rx.opcode == IW_OP_IMM_DATA_SE) {
			/* Immediate Data consumes the head receive (RFC 7306) but
			 * its 8 bytes go to the completion, not the buffer. */
			const struct iovec *rsgl;
			int rn;
			if (c->ops.recv_buf(c->ctx, &rsgl, &rn) < 0)
				return -1;
			c->rx_iov.iov_base = c->imm_in;
			c->rx_iov.iov_len = sizeof(c->imm_in);
			*sgl = &c->rx_iov;
			*nsge = 1;
			return 0;
		}
		return c->ops.recv_buf(c->ctx, sgl, nsge);
	case IW_DDP_QN_READ_REQ: {
		struct iw_rdmap_ird_entry *e;
		/* Exactly the body's room: a longer request is DDP's "too long". */
		size_t body = c->rx.opcode == IW_OP_ATOMIC_REQ ? IW_RDMAP_ATOMIC_REQ_LEN : IW_RDMAP_READ_REQ_LEN;
		uint32_t held = c->ird_tail - c->ird_head;
		if (held && ird_at(c, c->ird_tail - 1)->state == IRD_RECEIVING) {
			e = ird_at(c, c->ird_tail - 1); /* a later segment of the same request */
		} else {
			if (held >= c->cfg.ird) {
				/* Beyond IRD. Take the body anyway so our Terminate can
				 * copy it; on_fpdu fails the stream. */
				c->rx.ird_overflow = true;
				c->rx_iov.iov_base = c->ird_overflow;
				c->rx_iov.iov_len = body;
				*sgl = &c->rx_iov;
				*nsge = 1;
				return 0;
			}
			e = ird_at(c, c->ird_tail++);
			memset(e, 0, sizeof(*e));
			e->state = IRD_RECEIVING;
		}
		c->rx_iov.iov_base = e->raw;
		c->rx_iov.iov_len = body;
		*sgl = &c->rx_iov;
		*nsge = 1;
		return 0;
	}
	case IW_DDP_QN_ATOMIC_RESP:
		c->rx_iov.iov_base = c->atomic_resp_in;
		c->rx_iov.iov_len = sizeof(c->atomic_resp_in);
		*sgl = &c->rx_iov;
		*nsge = 1;
		return 0;
	case IW_DDP_QN_TERMINATE:
		c->rx_iov.iov_base = c->term_in_buf;
		c->rx_iov.iov_len = sizeof(c->term_in_buf);
		*sgl = &c->rx_iov;
		*nsge = 1;
		return 0;
	default:
		*cause = IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_INV_QN);
		return -1;
	}
}

static const struct iw_ddp_rx_ops ddp_ops = {
	.tagged = ddp_tagged,
	.untagged = ddp_untagged,
};

/* ------------------------------------------------------------------ */
/* Receive: per-segment processing                                     */

/* RDMAP checks that must precede placement. Returns 0 or fails the stream. */
static int rdmap_precheck(struct iw_rdmap_conn *c, const struct iw_ddp_hdr *h, size_t payload_len)
{
	uint8_t op = iw_rdmap_opcode_of(h->ulp_ctrl);
	const struct iw_rdmap_opinfo *info = &iw_rdmap_optable[op];

	if (iw_rdmap_version_of(h->ulp_ctrl) != IW_RDMAP_VERSION) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_INV_VERSION));
		return -1;
	}
	if (!(info->flags & IW_OPF_VALID) || info->tagged != h->tagged ||
	    ((info->flags & IW_OPF_RFC7306) && !c->cfg.rfc7306)) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNEXP_OPCODE));
		return -1;
	}
	if (!h->tagged && h->qn != info->qn) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_INV_QN));
		return -1;
	}
	if (op == IW_OP_READ_RESP || op == IW_OP_ATOMIC_RESP) {
		/* Responses come in request order: match the oldest READ or
		 * atomic, whichever kind this response is. */
		bool atomic_head = c->reads_out &&
				   sq_at(c, c->ord_ring[c->ord_head % IW_RDMAP_MAX_IRD_ORD])->wr.opcode !=
					   IW_RDMAP_WR_READ;
		if (c->reads_out == 0 || atomic_head != (op == IW_OP_ATOMIC_RESP)) {
			fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP,
						 IW_ECODE_RDMAP_UNEXP_OPCODE));
			return -1;
		}
		if (op == IW_OP_ATOMIC_RESP)
			return 0;
		struct iw_rdmap_sq_entry *e = sq_at(c, c->ord_ring[c->ord_head % IW_RDMAP_MAX_IRD_ORD]);
		size_t want = sgl_len(e->wr.sgl, e->wr.nsge);
		if (h->stag != e->wr.local_stag) {
			fail_rx(c, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_STAG));
			return -1;
		}
		if (h->to != e->wr.local_to + e->placed || e->placed + payload_len > want) {
			fail_rx(c, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_BASE_BOUNDS));
			return -1;
		}
	}
	return 0;
}

static void on_header(struct iw_rdmap_conn *c, const struct iw_mpa_rx_event *ev)
{
	struct iw_ddp_hdr h;
	struct iw_term_cause cause;

	c->rx.ird_overflow = false;
	c->rx.dest_gone = false;
	c->rx.hdr_src = ev->hdr;
	c->rx.hdr_len = ev->hdr_len;
	c->rx.ulpdu_len = ev->ulpdu_len;
	/* MPA delivers the length the control field asks for, so this
	 * cannot fail; if it did it is our bug, reported as DDP would. */
	if (iw_ddp_hdr_decode(ev->hdr, ev->hdr_len, &h) == 0) {
		c->rx.seg.ndest = 0;
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_LOCAL_CATA, 0x00));
		return;
	}
	c->rx.opcode = iw_rdmap_opcode_of(h.ulp_ctrl);

	/* A bad DDP version makes every other field meaningless: let DDP
	 * report it before RDMAP looks at anything. */
	if (h.version == IW_DDP_VERSION && rdmap_precheck(c, &h, ev->payload_len) < 0)
		return;
	if (iw_ddp_rx_begin_decoded(&c->ddp_rx, &h, ev->payload_len, &c->rx.seg, &cause) < 0) {
		fail_rx(c, cause);
		return;
	}
	if (ev->payload_len)
		iw_mpa_rx_set_sink(&c->mpa_rx, c->rx.seg.dest, c->rx.seg.ndest);
	else
		iw_mpa_rx_set_sink(&c->mpa_rx, NULL, 0);
}

static const uint8_t rdmap_stag_code[] = {
	[IW_STAG_INVALID] = IW_ECODE_RDMAP_INV_STAG,
	[IW_STAG_BOUNDS] = IW_ECODE_RDMAP_BASE_BOUNDS,
	[IW_STAG_NOT_ASSOC] = IW_ECODE_RDMAP_STAG_NOT_ASSOC,
	[IW_STAG_ACCESS] = IW_ECODE_RDMAP_ACCESS,
};

static void on_atomic_request(struct iw_rdmap_conn *c, struct iw_rdmap_ird_entry *e);

static void on_read_request(struct iw_rdmap_conn *c)
{
	if (c->rx.ird_overflow) {
		/* Atomic Requests count against IRD like reads (RFC 7306). */
		if (c->rx.opcode == IW_OP_READ_REQ) {
			memcpy(rx_head(c) + c->rx.hdr_len, c->ird_overflow, IW_RDMAP_READ_REQ_LEN);
			c->rx.hdr_len = (uint16_t)(c->rx.hdr_len + IW_RDMAP_READ_REQ_LEN);
		}
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_CATA_STREAM));
		return;
	}
	struct iw_rdmap_ird_entry *e = ird_at(c, c->ird_tail - 1);
	if (c->rx.opcode == IW_OP_ATOMIC_REQ) {
		on_atomic_request(c, e);
		return;
	}
	struct iw_rdmap_read_req *r = &e->req, dec;

	/* Errors about a Read Request copy its body into the Terminate;
	 * the decoded form then takes the body's room. */
	memcpy(rx_head(c) + c->rx.hdr_len, e->raw, IW_RDMAP_READ_REQ_LEN);
	iw_rdmap_read_req_decode(e->raw, &dec);
	*r = dec;
	c->rx.hdr_len = (uint16_t)(c->rx.hdr_len + IW_RDMAP_READ_REQ_LEN);

	if (c->rx.seg.hdr.mo + c->rx.seg.payload_len != IW_RDMAP_READ_REQ_LEN) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	e->src = NULL;
	if (r->size) {
		if (r->src_to + r->size < r->src_to) {
			fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, IW_ECODE_RDMAP_TO_WRAP));
			return;
		}
		enum iw_stag_status st = c->ops.stag(c->ctx, r->src_stag, r->src_to, r->size,
						     IW_RDMAP_ACC_REMOTE_READ, &e->src);
		if (st != IW_STAG_OK) {
			fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, rdmap_stag_code[st]));
			return;
		}
	}
	e->state = IRD_READY;
}

/* An Atomic Request arrived whole: validate now, execute later (when it
 * is the oldest held request: see atomic_execute). */
static void on_atomic_request(struct iw_rdmap_conn *c, struct iw_rdmap_ird_entry *e)
{
	struct iw_rdmap_atomic_req req, *r = &req;

	e->is_atomic = true;
	e->executed = false;
	if (c->rx.seg.hdr.mo + c->rx.seg.payload_len != IW_RDMAP_ATOMIC_REQ_LEN) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	iw_rdmap_atomic_req_decode(e->raw, r);
	if (r->op != IW_ATOMIC_FETCH_ADD && r->op != IW_ATOMIC_CMP_SWAP) {
		/* RFC 5040 has no code for an unknown atomic operation. */
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	if (r->to + 8 < r->to) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, IW_ECODE_RDMAP_TO_WRAP));
		return;
	}
	enum iw_stag_status st = c->ops.stag(c->ctx, r->stag, r->to, 8, IW_RDMAP_ACC_REMOTE_ATOMIC, &e->src);
	if (st != IW_STAG_OK) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, rdmap_stag_code[st]));
		return;
	}
	if ((uintptr_t)e->src % 8) {
		/* Only a naturally aligned word can be updated atomically. */
		e->src = NULL;
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, IW_ECODE_RDMAP_BASE_BOUNDS));
		return;
	}
	e->state = IRD_READY; /* raw keeps the request until it executes */
}

/* Apply a held atomic exactly once. The compare-exchange makes it atomic
 * against every other QP and thread of this process using the word. */
static void atomic_execute(struct iw_rdmap_ird_entry *e)
{
	uint64_t *p = (uint64_t *)(void *)e->src;
	uint64_t old = __atomic_load_n(p, __ATOMIC_SEQ_CST), nv;
	struct iw_rdmap_atomic_req req;
	bool changed;

	iw_rdmap_atomic_req_decode(e->raw, &req);
	for (;;) {
		nv = iw_rdmap_atomic_apply(&req, old, &changed);
		if (!changed)
			break;
		if (__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			break;
	}
	struct iw_rdmap_atomic_resp resp = { .req_id = req.req_id, .orig = old };
	iw_rdmap_atomic_resp_encode(&resp, e->raw);
	e->executed = true;
}

static void on_atomic_response(struct iw_rdmap_conn *c)
{
	struct iw_rdmap_sq_entry *e = sq_at(c, c->ord_ring[c->ord_head % IW_RDMAP_MAX_IRD_ORD]);
	struct iw_rdmap_atomic_resp r;

	if (c->rx.seg.hdr.mo + c->rx.seg.payload_len != IW_RDMAP_ATOMIC_RESP_LEN) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	iw_rdmap_atomic_resp_decode(c->atomic_resp_in, &r);
	if (r.req_id != e->req_id) {
		/* Not the answer to our oldest request: out of order or forged. */
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	memcpy(e->wr.sgl[0].iov_base, &r.orig, sizeof(r.orig)); /* host order */
	e->state = SQ_DONE;
	c->ord_head++;
	c->reads_out--;
	sq_retire(c);
}

static void on_imm_data(struct iw_rdmap_conn *c, uint8_t op)
{
	const struct iw_ddp_segment *s = &c->rx.seg;

	if (s->hdr.mo + s->payload_len != IW_RDMAP_IMM_LEN) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	struct iw_rdmap_event ev = {
		.type = IW_RDMAP_EV_RECV_DONE,
		.opcode = op,
		.byte_len = c->last_write_len,
		.solicited = op == IW_OP_IMM_DATA_SE,
		.has_imm = true,
		.imm = iw_get_be64(c->imm_in),
	};
	c->last_write_len = 0;
	emit(c, &ev);
}

static void on_read_response(struct iw_rdmap_conn *c, bool last)
{
	struct iw_rdmap_sq_entry *e = sq_at(c, c->ord_ring[c->ord_head % IW_RDMAP_MAX_IRD_ORD]);

	e->placed += (uint32_t)c->rx.seg.payload_len;
	if (!last)
		return;
	if (e->placed != sgl_len(e->wr.sgl, e->wr.nsge)) {
		/* The responder ended the message short of what we asked. */
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED));
		return;
	}
	e->state = SQ_DONE;
	c->ord_head++;
	c->reads_out--;
	sq_retire(c);
}

static void on_send(struct iw_rdmap_conn *c, uint8_t op)
{
	const struct iw_ddp_segment *s = &c->rx.seg;
	struct iw_rdmap_event ev = {
		.type = IW_RDMAP_EV_RECV_DONE,
		.opcode = op,
		.byte_len = (uint32_t)(s->hdr.mo + s->payload_len),
		.solicited = iw_rdmap_optable[op].flags & IW_OPF_SE,
	};
	if (iw_rdmap_optable[op].flags & IW_OPF_INV) {
		/* Invalidate before the completion is visible. */
		if (c->ops.invalidate(c->ctx, s->hdr.ulp_word) < 0) {
			fail_rx(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT,
						 IW_ECODE_RDMAP_CANT_INVALIDATE));
			return;
		}
		ev.invalidated = true;
		ev.inv_stag = s->hdr.ulp_word;
	}
	emit(c, &ev);
}

static void on_terminate(struct iw_rdmap_conn *c)
{
	size_t len = c->rx.seg.hdr.mo + c->rx.seg.payload_len;

	memset(&c->term_in, 0, sizeof(c->term_in));
	iw_rdmap_term_decode(c->term_in_buf, len, &c->term_in);
	c->state = IW_RDMAP_ST_CLOSED;
	struct iw_rdmap_event ev = {
		.type = IW_RDMAP_EV_TERM_RECV,
		.cause = c->term_in.cause,
		.term = &c->term_in,
	};
	emit(c, &ev);
}

static void on_fpdu(struct iw_rdmap_conn *c)
{
	const struct iw_ddp_segment *s = &c->rx.seg;

	if (c->rx.dest_gone) {
		fail_rx(c, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_STAG));
		return;
	}
	bool complete = iw_ddp_rx_end(&c->ddp_rx, s);

	c->fpdus_rx++;
	c->bytes_placed += s->payload_len;
	switch (c->rx.opcode) {
	case IW_OP_WRITE:
		/* Write with Immediate reports its Write's length. */
		c->write_bytes += (uint32_t)s->payload_len;
		if (s->hdr.last) {
			c->last_write_len = c->write_bytes;
			c->write_bytes = 0;
		}
		break;
	case IW_OP_ATOMIC_RESP:
		if (complete)
			on_atomic_response(c);
		break;
	case IW_OP_IMM_DATA:
	case IW_OP_IMM_DATA_SE:
		if (complete)
			on_imm_data(c, c->rx.opcode);
		break;
	case IW_OP_READ_RESP:
		on_read_response(c, s->hdr.last);
		break;
	case IW_OP_READ_REQ:
	case IW_OP_ATOMIC_REQ:
		if (complete)
			on_read_request(c);
		break;
	case IW_OP_SEND:
	case IW_OP_SEND_INV:
	case IW_OP_SEND_SE:
	case IW_OP_SEND_SE_INV:
		if (complete)
			on_send(c, c->rx.opcode);
		break;
	case IW_OP_TERMINATE:
		if (complete)
			on_terminate(c);
		break;
	default:
		break;
	}
}

static void on_rx_event(struct iw_rdmap_conn *c, const struct iw_mpa_rx_event *ev)
{
	switch (ev->type) {
	case IW_MPA_RX_HEADER:
		on_header(c, ev);
		break;
	case IW_MPA_RX_FPDU:
		on_fpdu(c);
		break;
	case IW_MPA_RX_ERROR:
		/* MPA errors copy no headers: they cannot be trusted. */
		fail_with(c, ev->cause, NULL, 0, 0);
		break;
	case IW_MPA_RX_NONE:
		break;
	}
}

void iw_rdmap_rx_memory_gone(struct iw_rdmap_conn *c, uint32_t stag, const void *addr, size_t len)
{
	const struct iw_ddp_segment *s = &c->rx.seg;
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;

	/* A staged payload (verified placement) is still pending in the
	 * trailer state: it too must not be copied to memory going away. */
	if (c->state != IW_RDMAP_ST_RTS || !s->hdr.tagged || s->hdr.stag != stag ||
	    (c->mpa_rx.state != IW_MPA_RX_S_PAYLOAD && !c->mpa_rx.nvsink))
		return;
	for (int i = 0; i < s->ndest; i++) {
		uintptr_t d = (uintptr_t)s->dest[i].iov_base;
		if (d < hi && d + s->dest[i].iov_len > lo) {
			iw_mpa_rx_drop_sink(&c->mpa_rx);
			c->rx.dest_gone = true;
			return;
		}
	}
}

bool iw_rdmap_tx_reads_from(const struct iw_rdmap_conn *c, const void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;

	for (uint32_t i = c->ird_head; i != c->ird_tail; i++) {
		const struct iw_rdmap_ird_entry *e = &c->mem.ird[i % c->mem.n_ird];
		if (e->state == IRD_FREE || e->state == IRD_RECEIVING || !e->src)
			continue;
		size_t n = e->is_atomic ? (e->executed ? 0 : 8) : e->req.size;
		uintptr_t s = (uintptr_t)e->src;
		if (n && s < hi && s + n > lo)
			return true;
	}
	return false;
}

size_t iw_rdmap_rx_feed(struct iw_rdmap_conn *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t done = 0;

	while (done < len && c->state == IW_RDMAP_ST_RTS) {
		struct iw_mpa_rx_event ev;
		done += iw_mpa_rx_feed(&c->mpa_rx, p + done, len - done, &ev);
		if (ev.type == IW_MPA_RX_NONE)
			break;
		on_rx_event(c, &ev);
	}
	return done;
}

int iw_rdmap_rx_prepare(struct iw_rdmap_conn *c, struct iovec *iov, int cap)
{
	if (c->state != IW_RDMAP_ST_RTS)
		return 0;
	return iw_mpa_rx_prepare(&c->mpa_rx, iov, cap);
}

void iw_rdmap_rx_commit(struct iw_rdmap_conn *c, size_t n)
{
	struct iw_mpa_rx_event ev;

	if (c->state != IW_RDMAP_ST_RTS)
		return;
	iw_mpa_rx_commit(&c->mpa_rx, n, &ev);
	on_rx_event(c, &ev);
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */

static inline bool response_ready(struct iw_rdmap_conn *c)
{
	if (c->ird_next == c->ird_tail)
		return false;
	const struct iw_rdmap_ird_entry *e = ird_at(c, c->ird_next);
	if (e->state != IRD_READY)
		return false;
	/* An atomic executes only once every earlier Read Response has been
	 * handed to the transport, so none of them can see its result. */
	return !e->is_atomic || e->executed || c->ird_head == c->ird_next;
}

static inline bool sq_ready(struct iw_rdmap_conn *c)
{
	if (c->sq_next == c->sq_tail)
		return false;
	const struct iw_rdmap_sq_entry *e = sq_at(c, c->sq_next);
	if (e->wr.fence && c->reads_out > 0)
		return false;
	if ((e->wr.opcode == IW_RDMAP_WR_READ || e->wr.opcode == IW_RDMAP_WR_ATOMIC_FETCH_ADD ||
	     e->wr.opcode == IW_RDMAP_WR_ATOMIC_CMP_SWAP) &&
	    c->reads_out >= c->cfg.ord)
		return false;
	return true;
}

static void start_sq(struct iw_rdmap_conn *c)
{
	struct iw_rdmap_sq_entry *e = sq_at(c, c->sq_next);
	struct iw_rdmap_sq_wr *wr = &e->wr;
	struct iw_rdmap_tx_cur *cur = &c->cur;

	cur->kind = TX_SQ;
	cur->idx = (uint16_t)(c->sq_next % c->mem.sq_depth);
	cur->more = false;
	e->state = SQ_SENDING;
	if (wr->opcode == IW_RDMAP_WR_WRITE_IMM && !e->write_sent) {
		/* First the Write; the WR stays next for its Immediate Data. */
		e->write_sent = true;
		cur->more = true;
		iw_ddp_tx_msg_tagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_WRITE), wr->remote_stag, wr->remote_to,
				     wr->sgl, wr->nsge);
		return;
	}
	c->sq_next++;
	switch (wr->opcode) {
	case IW_RDMAP_WR_WRITE_IMM:
		/* Bodies go as a header extension: copied into the FPDU's slot,
		 * so the next message may reuse cur->ext at once. */
		iw_put_be64(cur->ext, wr->imm);
		iw_ddp_tx_msg_untagged(&cur->ddp, iw_rdmap_ctrl(wr->solicited ? IW_OP_IMM_DATA_SE : IW_OP_IMM_DATA),
				       0, IW_DDP_QN_SEND, c->send_msn++, NULL, 0);
		cur->ddp.ulp_ext = cur->ext;
		cur->ddp.ulp_ext_len = IW_RDMAP_IMM_LEN;
		break;
	case IW_RDMAP_WR_ATOMIC_FETCH_ADD:
	case IW_RDMAP_WR_ATOMIC_CMP_SWAP: {
		struct iw_rdmap_atomic_req r = {
			.op = wr->opcode == IW_RDMAP_WR_ATOMIC_CMP_SWAP ? IW_ATOMIC_CMP_SWAP : IW_ATOMIC_FETCH_ADD,
			.req_id = c->atomic_req_id++,
			.stag = wr->remote_stag,
			.to = wr->remote_to,
			.add_swap = wr->add_swap,
			.compare = wr->compare,
		};
		if (r.op == IW_ATOMIC_CMP_SWAP)
			r.add_swap_mask = r.compare_mask = UINT64_MAX;
		e->req_id = r.req_id;
		iw_rdmap_atomic_req_encode(&r, cur->ext);
		/* Atomic Requests count MSNs on QN 1 together with Read Requests. */
		iw_ddp_tx_msg_untagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_ATOMIC_REQ), 0, IW_DDP_QN_READ_REQ,
				       c->readreq_msn++, NULL, 0);
		cur->ddp.ulp_ext = cur->ext;
		cur->ddp.ulp_ext_len = IW_RDMAP_ATOMIC_REQ_LEN;
		break;
	}
	case IW_RDMAP_WR_WRITE:
		iw_ddp_tx_msg_tagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_WRITE), wr->remote_stag, wr->remote_to,
				     wr->sgl, wr->nsge);
		break;
	case IW_RDMAP_WR_READ: {
		struct iw_rdmap_read_req r = {
			.sink_stag = wr->local_stag,
			.sink_to = wr->local_to,
			.size = (uint32_t)sgl_len(wr->sgl, wr->nsge),
			.src_stag = wr->remote_stag,
			.src_to = wr->remote_to,
		};
		iw_rdmap_read_req_encode(&r, cur->ext);
		iw_ddp_tx_msg_untagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_READ_REQ), 0, IW_DDP_QN_READ_REQ,
				       c->readreq_msn++, NULL, 0);
		cur->ddp.ulp_ext = cur->ext;
		cur->ddp.ulp_ext_len = IW_RDMAP_READ_REQ_LEN;
		break;
	}
	default: {
		static const uint8_t send_op[] = {
			[IW_RDMAP_WR_SEND] = IW_OP_SEND,
			[IW_RDMAP_WR_SEND_SE] = IW_OP_SEND_SE,
			[IW_RDMAP_WR_SEND_INV] = IW_OP_SEND_INV,
			[IW_RDMAP_WR_SEND_SE_INV] = IW_OP_SEND_SE_INV,
		};
		uint8_t op = send_op[wr->opcode];
		uint32_t inv = (iw_rdmap_optable[op].flags & IW_OPF_INV) ? wr->inv_stag : 0;
		iw_ddp_tx_msg_untagged(&cur->ddp, iw_rdmap_ctrl(op), inv, IW_DDP_QN_SEND, c->send_msn++,
				       wr->sgl, wr->nsge);
		break;
	}
	}
}

static void start_response(struct iw_rdmap_conn *c)
{
	struct iw_rdmap_ird_entry *e = ird_at(c, c->ird_next);
	struct iw_rdmap_tx_cur *cur = &c->cur;

	cur->kind = TX_RESP;
	cur->idx = (uint16_t)(c->ird_next % c->mem.n_ird);
	e->state = IRD_SENDING;
	c->ird_next++;
	if (e->is_atomic) {
		if (!e->executed)
			atomic_execute(e);
		cur->one.iov_base = e->raw;
		cur->one.iov_len = IW_RDMAP_ATOMIC_RESP_LEN;
		iw_ddp_tx_msg_untagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_ATOMIC_RESP), 0, IW_DDP_QN_ATOMIC_RESP,
				       c->atomic_resp_msn++, &cur->one, 1);
		return;
	}
	cur->one.iov_base = e->src;
	cur->one.iov_len = e->req.size;
	iw_ddp_tx_msg_tagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_READ_RESP), e->req.sink_stag, e->req.sink_to,
			     &cur->one, e->req.size ? 1 : 0);
}

static void start_terminate(struct iw_rdmap_conn *c)
{
	struct iw_rdmap_tx_cur *cur = &c->cur;

	cur->kind = TX_TERM;
	cur->idx = 0;
	cur->one.iov_base = c->term_buf;
	cur->one.iov_len = c->term_len;
	iw_ddp_tx_msg_untagged(&cur->ddp, iw_rdmap_ctrl(IW_OP_TERMINATE), 0, IW_DDP_QN_TERMINATE, TERM_MSN,
			       &cur->one, 1);
	c->term_queued = false;
	c->term_started = true;
}

/* Choose the next message; responses and SQ messages alternate. */
static bool pick_next(struct iw_rdmap_conn *c)
{
	if (c->term_queued) {
		start_terminate(c);
		return true;
	}
	if (c->state != IW_RDMAP_ST_RTS)
		return false;
	bool resp = response_ready(c), sq = sq_ready(c);
	if (resp && (!sq || c->prefer_response)) {
		c->prefer_response = false;
		start_response(c);
		return true;
	}
	if (sq) {
		c->prefer_response = true;
		start_sq(c);
		return true;
	}
	return false;
}

/* The last FPDU of the current message was built. */
static void message_built(struct iw_rdmap_conn *c, struct iw_rdmap_tx_slot *slot)
{
	struct iw_rdmap_tx_cur *cur = &c->cur;

	slot->done_kind = cur->kind;
	slot->done_idx = cur->idx;
	if (cur->kind == TX_SQ && cur->more) {
		/* Write part of a Write with Immediate: the WR goes on. */
		slot->done_kind = TX_NONE;
	} else if (cur->kind == TX_SQ) {
		struct iw_rdmap_sq_entry *e = &c->mem.sq[cur->idx];
		if (e->wr.opcode == IW_RDMAP_WR_READ || e->wr.opcode == IW_RDMAP_WR_ATOMIC_FETCH_ADD ||
		    e->wr.opcode == IW_RDMAP_WR_ATOMIC_CMP_SWAP) {
			/* Outstanding from now on: the response may overtake our ack. */
			e->state = SQ_WAIT_RESP;
			c->ord_ring[(c->ord_head + c->reads_out) % IW_RDMAP_MAX_IRD_ORD] =
				(uint16_t)(cur->idx);
			c->reads_out++;
			slot->done_kind = TX_NONE;
		} else {
			e->state = SQ_WAIT_ACK;
		}
	} else if (cur->kind == TX_RESP) {
		c->mem.ird[cur->idx].state = IRD_WAIT_ACK;
	}
	cur->active = false;
}

bool iw_rdmap_tx_ready(const struct iw_rdmap_conn *cc)
{
	struct iw_rdmap_conn *c = (struct iw_rdmap_conn *)cc;

	return response_ready(c) || sq_ready(c);
}

int iw_rdmap_tx_pull(struct iw_rdmap_conn *c, struct iovec *iov, int iov_cap, size_t max_bytes,
		     size_t *bytes_out)
{
	int n_iov = 0;
	size_t bytes = 0;

	while (c->tx_count < c->mem.n_tx && (bytes == 0 || bytes < max_bytes)) {
		if (c->term_queued && c->cur.active)
			c->cur.active = false; /* the Terminate goes at the next FPDU boundary */
		if (!c->cur.active) {
			if (!pick_next(c))
				break;
			c->cur.active = true;
		}
		uint32_t si = (c->tx_head + c->tx_count) % c->mem.n_tx;
		struct iw_rdmap_tx_slot *slot = &c->mem.tx[si];
		if (c->cfg.markers_tx) { /* marker room by index, not set up at init */
			slot->fpdu.markers = c->mem.tx_markers + (size_t)si * IW_MPA_TX_MAX_MARKERS;
			slot->fpdu.markers_cap = IW_MPA_TX_MAX_MARKERS;
		}
		/* Only the progress fields change; a failed build rolls them back. */
		struct iw_ddp_tx_msg *m = &c->cur.ddp;
		size_t s_off = m->off, s_sge_off = m->sge_off;
		int s_sge_idx = m->sge_idx;
		bool s_started = m->started;
		struct iovec payload[IW_RDMAP_MAX_SGE + 1];
		size_t hdr_len, payload_len;
		uint8_t *hdr = slot->head + IW_MPA_LEN_FIELD;
		int np = iw_ddp_tx_next(m, c->cfg.mulpdu, hdr, &hdr_len, payload,
					IW_RDMAP_MAX_SGE + 1, &payload_len);
		if (np < 0) {
			/* Cannot happen with a valid mulpdu (and changed nothing);
			 * stop the stream loudly. */
			fail_with(c, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_LOCAL_CATA, 0), NULL, 0, 0);
			break;
		}
		/* Small FPDUs are copied whole into the slot (one iovec, one CRC
		 * pass); larger ones skip the inline builder's checks. */
		const size_t room = sizeof(slot->head) - IW_MPA_LEN_FIELD;
		bool small = hdr_len + payload_len + IW_MPA_PAD_MAX + IW_MPA_CRC_LEN <= room;
		int ni;
		if (small && np <= 1 && !c->cfg.markers_tx && n_iov < iov_cap) {
			/* The usual small message: the payload (one piece) goes
			 * behind the header here, MPA only frames it. */
			if (np)
				memcpy(hdr + hdr_len, payload[0].iov_base, payload_len);
			iw_mpa_tx_frame_contig(&c->mpa_tx, &slot->fpdu, hdr, hdr_len + payload_len, iov + n_iov);
			ni = 1;
		} else {
			ni = small ? iw_mpa_tx_build_frame_inl(&c->mpa_tx, &slot->fpdu, hdr, hdr_len, room, payload, np,
							       iov + n_iov, iov_cap - n_iov)
				   : iw_mpa_tx_build_frame_hr(&c->mpa_tx, &slot->fpdu, hdr, hdr_len, payload, np,
							      iov + n_iov, iov_cap - n_iov);
		}
		if (ni < 0) {
			m->off = s_off;
			m->sge_off = s_sge_off;
			m->sge_idx = s_sge_idx;
			m->started = s_started;
			if (n_iov == 0)
				return -ENOBUFS; /* not even one FPDU fits the caller's iov */
			break; /* the rest goes in the next pull */
		}
		n_iov += ni;
		slot->wire_len = slot->fpdu.wire_len;
		slot->done_kind = TX_NONE;
		bytes += slot->wire_len;
		c->tx_count++;
		c->fpdus_tx++;
		if (iw_ddp_tx_done(&c->cur.ddp))
			message_built(c, slot);
	}
	if (bytes_out)
		*bytes_out = bytes;
	return n_iov;
}

static void slot_acked(struct iw_rdmap_conn *c, struct iw_rdmap_tx_slot *slot)
{
	switch (slot->done_kind) {
	case TX_SQ:
		c->mem.sq[slot->done_idx].state = SQ_DONE;
		sq_retire(c);
		break;
	case TX_RESP:
		/* Responses finish in order, so this is the oldest held request. */
		ird_at(c, c->ird_head)->state = IRD_FREE;
		c->ird_head++;
		break;
	case TX_TERM: {
		c->state = IW_RDMAP_ST_CLOSED;
		struct iw_rdmap_event ev = { .type = IW_RDMAP_EV_TERM_SENT, .cause = c->error };
		emit(c, &ev);
		break;
	}
	default:
		break;
	}
}

void iw_rdmap_tx_ack(struct iw_rdmap_conn *c, size_t n)
{
	while (n > 0 && c->tx_count > 0) {
		struct iw_rdmap_tx_slot *slot = &c->mem.tx[c->tx_head % c->mem.n_tx];
		size_t rem = slot->wire_len - c->tx_ack_partial;
		if (n < rem) {
			c->tx_ack_partial += n;
			return;
		}
		n -= rem;
		c->tx_ack_partial = 0;
		c->tx_head++;
		c->tx_count--;
		slot_acked(c, slot);
	}
}

/* ------------------------------------------------------------------ */
/* Setup, posting, flush                                               */

size_t iw_rdmap_conn_mem_size(uint32_t sq_depth, uint32_t max_sge, uint32_t n_ird, uint32_t n_tx, bool markers_tx)
{
	return sq_depth * (sizeof(struct iw_rdmap_sq_entry) + max_sge * sizeof(struct iovec)) +
	       n_ird * sizeof(struct iw_rdmap_ird_entry) + n_tx * sizeof(struct iw_rdmap_tx_slot) +
	       (markers_tx ? n_tx * IW_MPA_TX_MAX_MARKERS * IW_MPA_MARKER_LEN : 0);
}

int iw_rdmap_conn_init(struct iw_rdmap_conn *c, const struct iw_rdmap_conn_cfg *cfg,
		       const struct iw_rdmap_conn_ops *ops, void *ctx,
		       const struct iw_rdmap_conn_mem *mem)
{
	if (!c || !cfg || !ops || !mem || !ops->stag || !ops->recv_buf || !ops->invalidate)
		return -EINVAL;
	if (!mem->sq || !mem->sq_depth || !mem->tx || !mem->n_tx || (cfg->ird && (!mem->ird || !mem->n_ird)))
		return -EINVAL;
	if (!mem->sgl_pool || !mem->max_sge || mem->max_sge > IW_RDMAP_MAX_SGE ||
	    (cfg->markers_tx && !mem->tx_markers))
		return -EINVAL;
	if (cfg->ird > mem->n_ird || cfg->ird > IW_RDMAP_MAX_IRD_ORD || cfg->ord > IW_RDMAP_MAX_IRD_ORD)
		return -EINVAL;
	if (cfg->mulpdu < IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN + 1 || cfg->mulpdu > IW_MPA_ULPDU_MAX)
		return -EINVAL;

	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->ops = *ops;
	c->ctx = ctx;
	c->mem = *mem;
	if (!mem->zeroed) {
		memset(mem->sq, 0, mem->sq_depth * sizeof(*mem->sq));
		if (mem->ird)
			memset(mem->ird, 0, mem->n_ird * sizeof(*mem->ird));
		memset(mem->tx, 0, mem->n_tx * sizeof(*mem->tx));
	}
	c->state = IW_RDMAP_ST_RTS;
	c->send_msn = 1;
	c->readreq_msn = 1;
	c->atomic_resp_msn = 1;

	iw_mpa_tx_init(&c->mpa_tx, cfg->crc, cfg->markers_tx);
	struct iw_mpa_rx_config rc = {
		.crc = cfg->crc,
		.markers = cfg->markers_rx,
		.max_ulpdu = cfg->max_ulpdu_rx,
		.ulp_lens = cfg->rfc7306 ? iw_rdmap_ulp_lens_7306 : iw_rdmap_ulp_lens,
		.stage = mem->rx_stage,
		.stage_len = mem->rx_stage_len,
	};
	iw_mpa_rx_init(&c->mpa_rx, &rc);
	iw_ddp_rx_init(&c->ddp_rx, &ddp_ops, c);
	return 0;
}

int iw_rdmap_post(struct iw_rdmap_conn *c, const struct iw_rdmap_wr *wr)
{
	if (c->state != IW_RDMAP_ST_RTS)
		return -EPIPE;
	if (wr->nsge < 0 || (uint32_t)wr->nsge > c->mem.max_sge || (unsigned)wr->opcode > IW_RDMAP_WR_OPCODE_MAX)
		return -EINVAL;
	bool atomic = wr->opcode == IW_RDMAP_WR_ATOMIC_FETCH_ADD || wr->opcode == IW_RDMAP_WR_ATOMIC_CMP_SWAP;
	if ((atomic || wr->opcode == IW_RDMAP_WR_WRITE_IMM) && !c->cfg.rfc7306)
		return -EOPNOTSUPP; /* the peer never said it knows these opcodes */
	if (atomic && (wr->nsge != 1 || wr->sgl[0].iov_len != 8 || c->cfg.ord == 0))
		return -EINVAL; /* the original value goes to one 8-byte buffer */
	if (wr->opcode == IW_RDMAP_WR_READ && wr->nsge > 1)
		return -EINVAL; /* an iWARP READ sink is one STag: one contiguous buffer */
	if (c->sq_tail - c->sq_head >= c->mem.sq_depth)
		return -ENOSPC;
	uint32_t si = c->sq_tail % c->mem.sq_depth;
	struct iw_rdmap_sq_entry *e = &c->mem.sq[si];
	/* The slot's SGE room, by index: nothing per slot is set up at init.
	 * The slot is free (checked above), so the SGEs are copied while
	 * summed; a refused WR leaves only dead bytes there. */
	struct iovec *sgl = c->mem.sgl_pool + (size_t)si * c->mem.max_sge;
	size_t len = 0;
	for (int i = 0; i < wr->nsge; i++) {
		sgl[i] = wr->sgl[i];
		len += wr->sgl[i].iov_len;
	}
	if (len > UINT32_MAX)
		return -EINVAL;
	e->wr = (struct iw_rdmap_sq_wr){
		.cookie = wr->cookie,
		.opcode = wr->opcode,
		.fence = wr->fence,
		.sgl = sgl,
		.nsge = wr->nsge,
		.remote_stag = wr->remote_stag,
		.remote_to = wr->remote_to,
		.local_stag = wr->local_stag,
		.inv_stag = wr->inv_stag,
		.solicited = wr->solicited,
	};
	if (atomic) {
		e->wr.add_swap = wr->add_swap;
		e->wr.compare = wr->compare;
	} else {
		e->wr.local_to = wr->local_to;
		e->wr.imm = wr->imm;
	}
	e->state = SQ_QUEUED;
	e->placed = 0;
	e->write_sent = false;
	c->sq_tail++;
	return 0;
}

void iw_rdmap_flush(struct iw_rdmap_conn *c)
{
	c->state = IW_RDMAP_ST_CLOSED;
	c->term_queued = false;
	c->cur.active = false;
	c->tx_count = 0;
	c->tx_ack_partial = 0;
	while (c->sq_head != c->sq_tail) {
		struct iw_rdmap_sq_entry *e = sq_at(c, c->sq_head);
		struct iw_rdmap_event ev = {
			.type = e->state == SQ_DONE ? IW_RDMAP_EV_SQ_DONE : IW_RDMAP_EV_SQ_FLUSH,
			.cookie = e->wr.cookie,
			.wr_opcode = e->wr.opcode,
			.byte_len = e->state == SQ_DONE ? (uint32_t)sgl_len(e->wr.sgl, e->wr.nsge) : 0,
		};
		e->state = SQ_FREE;
		c->sq_head++;
		emit(c, &ev);
	}
	c->sq_next = c->sq_tail = c->sq_head;
	c->reads_out = 0;
	c->ird_head = c->ird_next = c->ird_tail = 0;
}
