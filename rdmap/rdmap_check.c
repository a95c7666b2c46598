/* Passive RDMAP stream checker (see rdmap_check.h). */
#include "rdmap_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "iw_bytes.h"

#define MARKER_MASK (IW_MPA_MARKER_INTERVAL - 1u)

/* ---- violations ------------------------------------------------------- */

static const struct iw_term_cause code_causes[IW_CHK_CODE_COUNT] = {
	[IW_CHK_MPA_CRC] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_CRC, true },
	[IW_CHK_MPA_MARKER] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_MARKER_LEN, true },
	[IW_CHK_MPA_LEN_SMALL] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_MARKER_LEN, true },
	[IW_CHK_MPA_LEN_LARGE] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_MARKER_LEN, true },
	[IW_CHK_TRUNCATED] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_STREAM_LOST, true },
	[IW_CHK_MPA_FRAME] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_BAD_FRAME, true },
	[IW_CHK_MPA_REPLY] = { IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_BAD_FRAME, true },
	[IW_CHK_DDP_VERSION_T] = { IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_VERSION, true },
	[IW_CHK_DDP_VERSION_U] = { IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_INV_VERSION, true },
	[IW_CHK_RDMAP_VERSION] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_INV_VERSION, true },
	[IW_CHK_OPCODE] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNEXP_OPCODE, true },
	[IW_CHK_QN] = { IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_INV_QN, true },
	[IW_CHK_MSN] = { IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_MSN_RANGE, true },
	[IW_CHK_MO] = { IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_INV_MO, true },
	[IW_CHK_RESP_UNEXPECTED] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNEXP_OPCODE, true },
	/* As the receive path in rdmap_conn.c answers a mismatching response. */
	[IW_CHK_RESP_STAG] = { IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_STAG, true },
	[IW_CHK_RESP_TO] = { IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_BASE_BOUNDS, true },
	[IW_CHK_RESP_TOO_LONG] = { IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_BASE_BOUNDS, true },
	[IW_CHK_RESP_SHORT] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED, true },
	[IW_CHK_READ_REQ_LEN] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED, true },
	[IW_CHK_IRD] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_CATA_STREAM, true },
	/* The receiver places a Read Request body in a 28-byte buffer. */
	[IW_CHK_READ_REQ_LONG] = { IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_TOO_LONG, true },
	[IW_CHK_EXT_NOT_NEGOTIATED] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNEXP_OPCODE, true },
	[IW_CHK_BODY_LONG] = { IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_TOO_LONG, true },
	[IW_CHK_BODY_LEN] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED, true },
	[IW_CHK_ATOMIC_OP] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED, true },
	[IW_CHK_ATOMIC_UNEXPECTED] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNEXP_OPCODE, true },
	[IW_CHK_ATOMIC_ID] = { IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_OP, IW_ECODE_RDMAP_UNSPECIFIED, true },
};

struct iw_term_cause iw_rdmap_check_code_cause(enum iw_rdmap_check_code code)
{
	if ((unsigned)code >= IW_CHK_CODE_COUNT || code == IW_CHK_OK)
		return IW_TERM_CAUSE_NONE;
	return code_causes[code];
}

void iw_rdmap_violation_set(struct iw_rdmap_violation *v, enum iw_rdmap_check_code code, uint64_t got,
			    uint64_t want)
{
	memset(v, 0, sizeof(*v));
	v->code = code;
	v->cause = iw_rdmap_check_code_cause(code);
	v->got = got;
	v->want = want;
}

int iw_rdmap_violation_str(const struct iw_rdmap_violation *v, char *buf, size_t cap)
{
	const char *opname = iw_rdmap_opcode_name(v->opcode);

	switch (v->code) {
	case IW_CHK_OK:
		return snprintf(buf, cap, "no violation");
	case IW_CHK_MPA_CRC:
		return snprintf(buf, cap, "CRC error");
	case IW_CHK_MPA_MARKER:
		return snprintf(buf, cap, "marker FPDUPTR %" PRIu64 ", expected %" PRIu64, v->got, v->want);
	case IW_CHK_MPA_LEN_SMALL:
		return snprintf(buf, cap, "ULPDU_LENGTH %" PRIu64 " too small (minimum %" PRIu64 ")", v->got,
				v->want);
	case IW_CHK_MPA_LEN_LARGE:
		return snprintf(buf, cap, "ULPDU_LENGTH %" PRIu64 " too large (maximum %" PRIu64 ")", v->got,
				v->want);
	case IW_CHK_TRUNCATED:
		return snprintf(buf, cap, "truncated FPDU at end of stream");
	case IW_CHK_MPA_FRAME:
		return snprintf(buf, cap, "invalid MPA %s: %s", v->want == IW_MPA_REPLY ? "Reply" : "Request",
				iw_mpa_frame_error_str((enum iw_mpa_frame_error)v->got));
	case IW_CHK_MPA_REPLY:
		return snprintf(buf, cap, "MPA Reply refused: %s",
				iw_mpa_reject_reason_str((enum iw_mpa_reject_reason)v->got));
	case IW_CHK_DDP_VERSION_T:
	case IW_CHK_DDP_VERSION_U:
		return snprintf(buf, cap, "DDP version %" PRIu64 ", expected %d", v->got, IW_DDP_VERSION);
	case IW_CHK_RDMAP_VERSION:
		return snprintf(buf, cap, "RDMAP version %" PRIu64 ", expected %d", v->got, IW_RDMAP_VERSION);
	case IW_CHK_OPCODE:
		if (v->want)
			return snprintf(buf, cap, "opcode %u (%s) with T=%" PRIu64, v->opcode, opname, v->got);
		return snprintf(buf, cap, "unknown opcode %u", v->opcode);
	case IW_CHK_QN:
		return snprintf(buf, cap, "%s on QN %" PRIu64 ", expected QN %" PRIu64, opname, v->got, v->want);
	case IW_CHK_MSN:
		return snprintf(buf, cap, "MSN %" PRIu64 " on QN %u, expected %" PRIu64, v->got, v->qn, v->want);
	case IW_CHK_MO:
		return snprintf(buf, cap, "MO %" PRIu64 " on QN %u MSN %u, expected %" PRIu64, v->got, v->qn, v->msn,
				v->want);
	case IW_CHK_RESP_UNEXPECTED:
		return snprintf(buf, cap, "Read Response without an outstanding Read Request");
	case IW_CHK_RESP_STAG:
		return snprintf(buf, cap, "Read Response STag 0x%08" PRIx64 ", expected sink STag 0x%08" PRIx64,
				v->got, v->want);
	case IW_CHK_RESP_TO:
		return snprintf(buf, cap, "Read Response TO 0x%" PRIx64 ", expected 0x%" PRIx64, v->got, v->want);
	case IW_CHK_RESP_TOO_LONG:
		return snprintf(buf, cap, "Read Response of %" PRIu64 " bytes exceeds the requested %" PRIu64,
				v->got, v->want);
	case IW_CHK_RESP_SHORT:
		return snprintf(buf, cap, "Read Response ended after %" PRIu64 " of %" PRIu64 " bytes", v->got,
				v->want);
	case IW_CHK_READ_REQ_LEN:
		return snprintf(buf, cap, "Read Request body of %" PRIu64 " bytes, expected %d at MO 0", v->got,
				IW_RDMAP_READ_REQ_LEN);
	case IW_CHK_READ_REQ_LONG:
		return snprintf(buf, cap, "Read Request body of %" PRIu64 " bytes, longer than %d", v->got,
				IW_RDMAP_READ_REQ_LEN);
	case IW_CHK_IRD:
		return snprintf(buf, cap, "Read Request beyond IRD %" PRIu64 " (%" PRIu64 " outstanding)", v->want,
				v->got);
	case IW_CHK_EXT_NOT_NEGOTIATED:
		return snprintf(buf, cap, "%s, but RFC 7306 was not negotiated", opname);
	case IW_CHK_BODY_LONG:
		return snprintf(buf, cap, "%s body of %" PRIu64 " bytes, longer than %" PRIu64, opname, v->got,
				v->want);
	case IW_CHK_BODY_LEN:
		return snprintf(buf, cap, "%s body of %" PRIu64 " bytes, expected %" PRIu64 " at MO 0", opname, v->got,
				v->want);
	case IW_CHK_ATOMIC_OP:
		return snprintf(buf, cap, "unknown Atomic Operation code %" PRIu64, v->got);
	case IW_CHK_ATOMIC_UNEXPECTED:
		return snprintf(buf, cap, "%s, but the oldest outstanding request is %s", opname,
				v->want ? "an Atomic Request" : (v->got ? "a Read Request" : "none"));
	case IW_CHK_ATOMIC_ID:
		return snprintf(buf, cap, "Atomic Response for request %" PRIu64 ", expected %" PRIu64, v->got,
				v->want);
	case IW_CHK_CODE_COUNT:
		break;
	}
	return snprintf(buf, cap, "unknown violation %d", (int)v->code);
}

/* ---- configuration ---------------------------------------------------- */

enum iw_mpa_reject_reason iw_rdmap_check_cfg_from_mpa(const struct iw_mpa_frame *req,
						      const struct iw_mpa_frame *rep,
						      struct iw_rdmap_check_cfg *cfg)
{
	struct iw_mpa_settings local;
	struct iw_mpa_outcome out;
	bool enhanced = req->rev == IW_MPA_REV2 && req->enhanced && rep->rev == IW_MPA_REV2 && rep->enhanced;
	enum iw_mpa_reject_reason r;

	/* What the initiator must have wanted, given the Request it sent;
	 * min_rev 1 and no refusals, so only a Reply that no initiator could
	 * accept is refused. */
	iw_mpa_settings_default(&local);
	local.rev = req->rev;
	local.min_rev = IW_MPA_REV1;
	local.crc = req->crc ? IW_MPA_CRC_ON : IW_MPA_CRC_OFF;
	local.markers_wanted = req->markers;
	local.markers_refused = false;
	local.ird = req->ird;
	local.ord = req->ord;
	local.p2p = req->p2p;
	local.rtr_allowed = req->p2p ? req->rtr : IW_MPA_RTR_ALL;

	memset(cfg, 0, sizeof(*cfg));
	r = iw_mpa_initiator_check(&local, req, rep, &out);
	if (r == IW_MPA_OK) {
		cfg->crc = out.crc;
		cfg->markers[IW_CHK_I2R] = out.markers_tx;
		cfg->markers[IW_CHK_R2I] = out.markers_rx;
	} else {
		/* Best effort for whatever follows a refused handshake. */
		cfg->crc = rep->crc;
		cfg->markers[IW_CHK_I2R] = rep->markers;
		cfg->markers[IW_CHK_R2I] = req->markers;
	}
	cfg->rfc7306 = req->rfc7306 && rep->rfc7306;
	if (enhanced) {
		cfg->reads_known[IW_CHK_I2R] = true;
		cfg->max_reads[IW_CHK_I2R] = rep->ird;
		cfg->reads_known[IW_CHK_R2I] = true;
		cfg->max_reads[IW_CHK_R2I] = req->ird;
	}
	return r;
}

void iw_rdmap_check_init(struct iw_rdmap_check *c, const struct iw_rdmap_check_cfg *cfg)
{
	memset(c, 0, sizeof(*c));
	if (cfg)
		c->cfg = *cfg;
	for (int dir = 0; dir < 2; dir++) {
		struct iw_rdmap_check_dir *d = &c->d[dir];
		struct iw_mpa_rx_config rc = {
			.crc = c->cfg.crc,
			.markers = c->cfg.markers[dir],
			.max_ulpdu = c->cfg.max_ulpdu,
			.ulp_lens = c->cfg.rfc7306 ? iw_rdmap_ulp_lens_7306 : iw_rdmap_ulp_lens,
		};

		iw_mpa_rx_init(&d->rx, &rc);
		for (int q = 0; q < IW_DDP_RX_NUM_QN; q++)
			d->q[q].msn = 1;
	}
}

bool iw_rdmap_check_stopped(const struct iw_rdmap_check *c, int dir)
{
	return c->d[dir & 1].stopped;
}

void iw_rdmap_check_stop(struct iw_rdmap_check *c, int dir)
{
	c->d[dir & 1].stopped = true;
	c->d[dir & 1].lost = true;
}

/* ---- segment level ---------------------------------------------------- */

static void violate(struct iw_rdmap_check_ev *ev, enum iw_rdmap_check_code code, uint64_t got, uint64_t want)
{
	iw_rdmap_violation_set(&ev->viol, code, got, want);
	ev->viol.opcode = ev->fpdu.opcode;
	ev->has_violation = true;
}

/* Keep up to IW_RDMAP_CHECK_BODY_MAX bytes of an untagged body at mo. */
static void body_keep(uint8_t *dst, uint32_t mo, const uint8_t *body, size_t body_len)
{
	if (!body || mo >= IW_RDMAP_CHECK_BODY_MAX)
		return;
	if (body_len > IW_RDMAP_CHECK_BODY_MAX - mo)
		body_len = IW_RDMAP_CHECK_BODY_MAX - mo;
	memcpy(dst + mo, body, body_len);
}

/* A Read or Atomic Request beyond the IRD is a violation; it is still
 * tracked while the table has room, so that its response matches. False
 * when there is no room. */
static bool ird_admits(struct iw_rdmap_check *c, int dir, struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *d = &c->d[dir];

	if ((c->cfg.reads_known[dir] && d->rd_count >= c->cfg.max_reads[dir]) ||
	    d->rd_count >= IW_RDMAP_CHECK_MAX_READS) {
		uint64_t lim = c->cfg.reads_known[dir] ? c->cfg.max_reads[dir] : IW_RDMAP_CHECK_MAX_READS;

		violate(ev, IW_CHK_IRD, d->rd_count, lim < IW_RDMAP_CHECK_MAX_READS ? lim : IW_RDMAP_CHECK_MAX_READS);
		if (d->rd_count >= IW_RDMAP_CHECK_MAX_READS)
			return false;
	}
	return true;
}

static void on_read_request(struct iw_rdmap_check *c, int dir, const struct iw_ddp_hdr *h, uint64_t total,
			    struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *d = &c->d[dir];
	struct iw_rdmap_read_req rr;

	if (h->mo != 0 || total != IW_RDMAP_READ_REQ_LEN) {
		violate(ev, IW_CHK_READ_REQ_LEN, total, IW_RDMAP_READ_REQ_LEN);
		return;
	}
	iw_rdmap_read_req_decode(d->body[IW_DDP_QN_READ_REQ], &rr);
	ev->has_msg = true;
	ev->msg.rr = rr;
	ev->msg.rr_known = true;
	/* The responder's direction lost bytes: the Read Responses that
	 * retire requests may be among them, so the IRD cannot be judged and
	 * this request's response will never be seen. */
	if (c->d[!dir].lost)
		return;
	if (!ird_admits(c, dir, ev))
		return;
	d->reads[(d->rd_head + d->rd_count) % IW_RDMAP_CHECK_MAX_READS] = rr;
	d->is_atomic[(d->rd_head + d->rd_count) % IW_RDMAP_CHECK_MAX_READS] = false;
	if (d->rd_count == 0) {
		d->resp_placed = 0;
		d->resp_fpdus = 0;
	}
	d->rd_count++;
}

/* Fixed body length of an RFC 7306 untagged message, 0 for others. */
static uint32_t ext_body_len(uint8_t op)
{
	switch (op) {
	case IW_OP_IMM_DATA:
	case IW_OP_IMM_DATA_SE:
		return IW_RDMAP_IMM_LEN;
	case IW_OP_ATOMIC_REQ:
		return IW_RDMAP_ATOMIC_REQ_LEN;
	case IW_OP_ATOMIC_RESP:
		return IW_RDMAP_ATOMIC_RESP_LEN;
	default:
		return 0;
	}
}

static void on_atomic_request(struct iw_rdmap_check *c, int dir, struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *d = &c->d[dir];
	struct iw_rdmap_atomic_req ar;

	iw_rdmap_atomic_req_decode(d->body[IW_DDP_QN_READ_REQ], &ar);
	ev->msg.atomic = ar;
	ev->msg.atomic_known = true;
	if (ar.op != IW_ATOMIC_FETCH_ADD && ar.op != IW_ATOMIC_CMP_SWAP) {
		violate(ev, IW_CHK_ATOMIC_OP, ar.op, 0);
		return; /* the receiver Terminates: no response will follow */
	}
	if (c->d[!dir].lost)
		return;
	if (!ird_admits(c, dir, ev))
		return;
	uint32_t i = (d->rd_head + d->rd_count) % IW_RDMAP_CHECK_MAX_READS;
	d->is_atomic[i] = true;
	d->atomics[i] = ar;
	if (d->rd_count == 0) {
		d->resp_placed = 0;
		d->resp_fpdus = 0;
	}
	d->rd_count++;
}

static void on_atomic_response(struct iw_rdmap_check *c, int dir, struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *r = &c->d[!dir]; /* the requester */
	struct iw_rdmap_atomic_resp ar;

	iw_rdmap_atomic_resp_decode(c->d[dir].body[IW_DDP_QN_ATOMIC_RESP], &ar);
	ev->msg.aresp = ar;
	if (r->rd_count == 0 && r->lost)
		return;
	uint32_t i = r->rd_head % IW_RDMAP_CHECK_MAX_READS;
	if (r->rd_count == 0 || !r->is_atomic[i]) {
		violate(ev, IW_CHK_ATOMIC_UNEXPECTED, r->rd_count != 0, 0);
		return;
	}
	ev->msg.atomic = r->atomics[i];
	ev->msg.atomic_known = true;
	if (ar.req_id != r->atomics[i].req_id)
		violate(ev, IW_CHK_ATOMIC_ID, ar.req_id, r->atomics[i].req_id);
	r->rd_head = (r->rd_head + 1) % IW_RDMAP_CHECK_MAX_READS;
	r->rd_count--;
	r->resp_placed = 0;
	r->resp_fpdus = 0;
}

static void untagged_end(struct iw_rdmap_check *c, int dir, const struct iw_ddp_hdr *h, size_t payload_len,
			 struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *d = &c->d[dir];
	struct iw_rdmap_check_queue *q = &d->q[h->qn];
	uint64_t total = (uint64_t)h->mo + payload_len;
	struct iw_rdmap_check_msg *m = &ev->msg;

	q->fpdus++;
	q->mo = h->mo + (uint32_t)payload_len;
	if (!h->last)
		return;
	memset(m, 0, sizeof(*m));
	m->opcode = ev->fpdu.opcode;
	m->qn = h->qn;
	m->msn = h->msn;
	m->len = total;
	m->fpdus = q->fpdus;
	if (iw_rdmap_optable[m->opcode].flags & IW_OPF_INV)
		m->inv_stag = h->ulp_word;
	q->msn = h->msn + 1; /* wraps modulo 2^32 */
	q->mo = 0;
	q->fpdus = 0;

	uint32_t ext = ext_body_len(m->opcode);
	if (ext && (h->mo != 0 || total != ext)) {
		ev->has_msg = true;
		if (total < ext || h->mo != 0)
			violate(ev, IW_CHK_BODY_LEN, total, ext);
		return;
	}
	switch (m->opcode) {
	case IW_OP_READ_REQ:
		on_read_request(c, dir, h, total, ev);
		break;
	case IW_OP_ATOMIC_REQ:
		ev->has_msg = true;
		on_atomic_request(c, dir, ev);
		break;
	case IW_OP_ATOMIC_RESP:
		ev->has_msg = true;
		on_atomic_response(c, dir, ev);
		break;
	case IW_OP_IMM_DATA:
	case IW_OP_IMM_DATA_SE:
		ev->has_msg = true;
		m->imm = iw_get_be64(d->body[IW_DDP_QN_SEND]);
		break;
	case IW_OP_TERMINATE: {
		size_t n = total < IW_RDMAP_CHECK_BODY_MAX ? (size_t)total : IW_RDMAP_CHECK_BODY_MAX;

		m->term_ok = iw_rdmap_term_decode(d->body[IW_DDP_QN_TERMINATE], n, &m->term) == 0;
		ev->has_msg = true;
		break;
	}
	default:
		ev->has_msg = true;
		break;
	}
}

static void check_untagged(struct iw_rdmap_check *c, int dir, const struct iw_ddp_hdr *h, const uint8_t *body,
			   size_t body_len, size_t payload_len, struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_queue *q = &c->d[dir].q[h->qn];

	if (h->msn != q->msn) {
		violate(ev, IW_CHK_MSN, h->msn, q->msn);
		ev->viol.qn = h->qn;
		/* Adopt the sender's numbering so the next segment is judged on its own. */
		q->msn = h->msn;
		q->mo = h->mo;
		q->fpdus = 0;
	} else if (h->mo != q->mo) {
		violate(ev, IW_CHK_MO, h->mo, q->mo);
		ev->viol.qn = h->qn;
		ev->viol.msn = h->msn;
		q->mo = h->mo;
	} else if (ext_body_len(ev->fpdu.opcode) && (uint64_t)h->mo + payload_len > ext_body_len(ev->fpdu.opcode)) {
		violate(ev, IW_CHK_BODY_LONG, (uint64_t)h->mo + payload_len, ext_body_len(ev->fpdu.opcode));
	} else if (ev->fpdu.opcode == IW_OP_READ_REQ && (uint64_t)h->mo + payload_len > IW_RDMAP_READ_REQ_LEN) {
		violate(ev, IW_CHK_READ_REQ_LONG, (uint64_t)h->mo + payload_len, IW_RDMAP_READ_REQ_LEN);
	}
	if (h->qn != IW_DDP_QN_SEND || ext_body_len(ev->fpdu.opcode)) {
		/* A new body: bytes the caller does not hand over read as 0. */
		if (h->mo == 0)
			memset(c->d[dir].body[h->qn], 0, IW_RDMAP_CHECK_BODY_MAX);
		body_keep(c->d[dir].body[h->qn], h->mo, body, body_len);
	}
	if (ev->has_violation) {
		/* A violation and a message can share one event, but never two
		 * violations: hold the Read Request checks back. */
		struct iw_rdmap_violation keep = ev->viol;

		untagged_end(c, dir, h, payload_len, ev);
		ev->viol = keep;
		return;
	}
	untagged_end(c, dir, h, payload_len, ev);
}

/* A tagged message nothing is known about: sum its segments up to L=1. */
static void check_tagged(struct iw_rdmap_check_tmsg *w, uint8_t opcode, const struct iw_ddp_hdr *h,
			 size_t payload_len, struct iw_rdmap_check_ev *ev)
{
	if (!w->active) {
		w->active = true;
		w->stag = h->stag;
		w->to = h->to;
		w->len = 0;
		w->fpdus = 0;
	}
	w->len += payload_len;
	w->fpdus++;
	if (!h->last)
		return;
	ev->has_msg = true;
	ev->msg.opcode = opcode;
	ev->msg.tagged = true;
	ev->msg.stag = w->stag;
	ev->msg.to = w->to;
	ev->msg.len = w->len;
	ev->msg.fpdus = w->fpdus;
	w->active = false;
}

static void check_read_resp(struct iw_rdmap_check *c, int dir, const struct iw_ddp_hdr *h, size_t payload_len,
			    struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *r = &c->d[!dir]; /* the requester */
	const struct iw_rdmap_read_req *rr;
	uint64_t want_to;

	if (r->rd_count == 0 && r->lost) {
		/* The request may be in what the requester's direction lost:
		 * report the message, judge nothing. */
		check_tagged(&c->d[dir].resp_unknown, IW_OP_READ_RESP, h, payload_len, ev);
		return;
	}
	if (r->rd_count == 0) {
		violate(ev, IW_CHK_RESP_UNEXPECTED, 0, 0);
		return;
	}
	if (r->is_atomic[r->rd_head % IW_RDMAP_CHECK_MAX_READS]) {
		violate(ev, IW_CHK_ATOMIC_UNEXPECTED, 1, 1);
		return;
	}
	rr = &r->reads[r->rd_head % IW_RDMAP_CHECK_MAX_READS];
	want_to = rr->sink_to + r->resp_placed;
	if (h->stag != rr->sink_stag)
		violate(ev, IW_CHK_RESP_STAG, h->stag, rr->sink_stag);
	else if (h->to != want_to)
		violate(ev, IW_CHK_RESP_TO, h->to, want_to);
	else if (r->resp_placed + payload_len > rr->size)
		violate(ev, IW_CHK_RESP_TOO_LONG, r->resp_placed + payload_len, rr->size);
	r->resp_placed += payload_len;
	r->resp_fpdus++;
	if (!h->last)
		return;
	if (!ev->has_violation && r->resp_placed != rr->size)
		violate(ev, IW_CHK_RESP_SHORT, r->resp_placed, rr->size);
	ev->has_msg = true;
	ev->msg.opcode = IW_OP_READ_RESP;
	ev->msg.tagged = true;
	ev->msg.stag = rr->sink_stag;
	ev->msg.to = rr->sink_to;
	ev->msg.len = r->resp_placed;
	ev->msg.fpdus = r->resp_fpdus;
	ev->msg.rr = *rr;
	ev->msg.rr_known = true;
	r->rd_head = (r->rd_head + 1) % IW_RDMAP_CHECK_MAX_READS;
	r->rd_count--;
	r->resp_placed = 0;
	r->resp_fpdus = 0;
}

static void segment(struct iw_rdmap_check *c, int dir, const uint8_t *hdr, size_t hdr_len, const uint8_t *body,
		    size_t body_len, size_t payload_len, struct iw_rdmap_check_ev *ev)
{
	struct iw_ddp_hdr *h = &ev->fpdu.hdr;
	const struct iw_rdmap_opinfo *op;
	size_t ulpdu;

	if (!hdr || (hdr_len = iw_ddp_hdr_decode(hdr, hdr_len, h)) == 0) {
		/* The caller framed less than the T bit announces: too short. */
		violate(ev, IW_CHK_MPA_LEN_SMALL, hdr_len + payload_len,
			hdr && hdr_len ? iw_ddp_hdr_len_ctrl(hdr[0]) : IW_DDP_TAGGED_HDR_LEN);
		return;
	}
	if (body_len > payload_len)
		body_len = payload_len;
	ev->fpdu.opcode = iw_rdmap_opcode_of(h->ulp_ctrl);
	ev->fpdu.payload_len = (uint16_t)(payload_len > UINT16_MAX ? UINT16_MAX : payload_len);
	ulpdu = hdr_len + payload_len;
	ev->fpdu.ulpdu_len = (uint16_t)(ulpdu > UINT16_MAX ? UINT16_MAX : ulpdu);
	op = &iw_rdmap_optable[ev->fpdu.opcode];

	/* The order of rdmap_conn.c's receive path: a bad DDP version makes
	 * every other field meaningless. */
	if (h->version != IW_DDP_VERSION) {
		violate(ev, h->tagged ? IW_CHK_DDP_VERSION_T : IW_CHK_DDP_VERSION_U, h->version, IW_DDP_VERSION);
		return;
	}
	if (iw_rdmap_version_of(h->ulp_ctrl) != IW_RDMAP_VERSION) {
		violate(ev, IW_CHK_RDMAP_VERSION, iw_rdmap_version_of(h->ulp_ctrl), IW_RDMAP_VERSION);
		return;
	}
	if (!(op->flags & IW_OPF_VALID) || op->tagged != h->tagged) {
		/* want != 0 marks a defined opcode with the wrong T bit. */
		violate(ev, IW_CHK_OPCODE, h->tagged, (op->flags & IW_OPF_VALID) ? 1 : 0);
		return;
	}
	if ((op->flags & IW_OPF_RFC7306) && !c->cfg.rfc7306) {
		violate(ev, IW_CHK_EXT_NOT_NEGOTIATED, 0, 0);
		return;
	}
	if (!h->tagged && h->qn != op->qn) {
		violate(ev, IW_CHK_QN, h->qn, op->qn);
		return;
	}
	if (ev->fpdu.opcode == IW_OP_READ_RESP)
		check_read_resp(c, dir, h, payload_len, ev);
	else if (h->tagged)
		check_tagged(&c->d[dir].write, IW_OP_WRITE, h, payload_len, ev);
	else
		check_untagged(c, dir, h, body, body_len, payload_len, ev);
}

void iw_rdmap_check_segment(struct iw_rdmap_check *c, int dir, const uint8_t *hdr, size_t hdr_len,
			    const uint8_t *body, size_t body_len, size_t payload_len,
			    struct iw_rdmap_check_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = IW_CHK_EV_FPDU;
	ev->has_fpdu = true;
	segment(c, dir & 1, hdr, hdr_len, body, body_len, payload_len, ev);
}

/* ---- stream level ----------------------------------------------------- */

/* Which MPA check failed: the deframer reports all of them as (2,0,0x03)
 * or (2,0,0x02); its position tells them apart. A marker region always
 * ends 4 octets past a marker boundary, a length or control region never
 * does (the marker before it ends there and the region is not empty). */
static void mpa_violation(struct iw_rdmap_check *c, int dir, const struct iw_mpa_rx_event *rev,
			  struct iw_rdmap_check_ev *ev)
{
	const struct iw_mpa_rx *rx = &c->d[dir].rx;

	if (rev->cause.ecode == IW_ECODE_MPA_CRC) {
		violate(ev, IW_CHK_MPA_CRC, 0, 0);
		return;
	}
	if (rev->cause.ecode != IW_ECODE_MPA_MARKER_LEN) {
		/* Only a broken ulp_lens callback gets here; keep its cause. */
		violate(ev, IW_CHK_MPA_LEN_SMALL, rx->ulpdu_len, 0);
		ev->viol.cause = rev->cause;
		return;
	}
	if (rx->cfg.markers && (rx->stream_off & MARKER_MASK) == IW_MPA_MARKER_LEN) {
		uint32_t at = rx->stream_off - IW_MPA_MARKER_LEN;

		violate(ev, IW_CHK_MPA_MARKER, iw_get_be16(rx->marker + 2), (uint16_t)(at - rx->fpdu_start));
		return;
	}
	if (rx->ulpdu_len > rx->cfg.max_ulpdu) {
		violate(ev, IW_CHK_MPA_LEN_LARGE, rx->ulpdu_len, rx->cfg.max_ulpdu);
		return;
	}
	if (rx->ulpdu_len < 2) {
		violate(ev, IW_CHK_MPA_LEN_SMALL, rx->ulpdu_len, 2);
		return;
	}
	violate(ev, IW_CHK_MPA_LEN_SMALL, rx->ulpdu_len,
		rx->hdr_len > rx->min_ulpdu ? rx->hdr_len : rx->min_ulpdu);
}

static void on_header(struct iw_rdmap_check_dir *d, const struct iw_mpa_rx_event *rev)
{
	struct iw_ddp_hdr h;

	memcpy(d->hdr, rev->hdr, rev->hdr_len);
	d->hdr_len = rev->hdr_len;
	d->in_fpdu = true;
	d->sink_used = false;
	/* Only Read Request and Terminate bodies are looked at; the rest of
	 * the payload is dropped (still CRC-checked). */
	if (rev->payload_len && iw_ddp_hdr_decode(d->hdr, d->hdr_len, &h) && !h.tagged) {
		uint8_t op = iw_rdmap_opcode_of(h.ulp_ctrl);

		if (op == IW_OP_READ_REQ || op == IW_OP_TERMINATE || ext_body_len(op)) {
			d->sink.iov_base = d->scratch;
			d->sink.iov_len = sizeof(d->scratch);
			d->sink_used = true;
			iw_mpa_rx_set_sink(&d->rx, &d->sink, 1);
			return;
		}
	}
	iw_mpa_rx_set_sink(&d->rx, NULL, 0);
}

static enum iw_rdmap_check_crc crc_verdict(const struct iw_rdmap_check *c, bool good)
{
	if (!c->cfg.crc)
		return IW_CHK_CRC_NONE;
	return good ? IW_CHK_CRC_OK : IW_CHK_CRC_BAD;
}

size_t iw_rdmap_check_feed(struct iw_rdmap_check *c, int dir, const void *data, size_t len,
			   struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *d = &c->d[dir & 1];
	const uint8_t *p = data;
	size_t done = 0;

	dir &= 1;
	memset(ev, 0, sizeof(*ev));
	if (d->stopped)
		return len;
	while (done < len) {
		struct iw_mpa_rx_event rev;
		size_t n = iw_mpa_rx_feed(&d->rx, p + done, len - done, &rev);

		done += n;
		switch (rev.type) {
		case IW_MPA_RX_HEADER:
			on_header(d, &rev);
			break;
		case IW_MPA_RX_FPDU: {
			size_t pl = rev.payload_len;
			size_t bl = d->sink_used ? (pl < sizeof(d->scratch) ? pl : sizeof(d->scratch)) : 0;

			d->in_fpdu = false;
			iw_rdmap_check_segment(c, dir, d->hdr, d->hdr_len, d->scratch, bl, pl, ev);
			ev->fpdu.stream_off = rev.fpdu_off;
			ev->fpdu.crc = crc_verdict(c, true);
			return done;
		}
		case IW_MPA_RX_ERROR:
			ev->type = IW_CHK_EV_STOP;
			if (d->in_fpdu && rev.cause.ecode == IW_ECODE_MPA_CRC) {
				/* Show the failed FPDU: its header was read. */
				ev->has_fpdu = true;
				iw_ddp_hdr_decode(d->hdr, d->hdr_len, &ev->fpdu.hdr);
				ev->fpdu.opcode = iw_rdmap_opcode_of(ev->fpdu.hdr.ulp_ctrl);
				ev->fpdu.ulpdu_len = rev.ulpdu_len;
				ev->fpdu.payload_len = (uint16_t)(rev.ulpdu_len - d->hdr_len);
				ev->fpdu.crc = crc_verdict(c, false);
			}
			ev->fpdu.stream_off = rev.fpdu_off;
			mpa_violation(c, dir, &rev, ev);
			d->stopped = true;
			d->lost = true;
			d->in_fpdu = false;
			return len;
		case IW_MPA_RX_NONE:
			if (n == 0) {
				/* Cannot happen: every HEADER gets its sink. */
				d->stopped = true;
				d->lost = true;
				return len;
			}
			break;
		}
	}
	return done;
}

bool iw_rdmap_check_end(struct iw_rdmap_check *c, int dir, struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_check_dir *d = &c->d[dir & 1];

	memset(ev, 0, sizeof(*ev));
	if (d->stopped)
		return false;
	d->stopped = true;
	if (iw_mpa_rx_at_boundary(&d->rx))
		return false;
	ev->type = IW_CHK_EV_STOP;
	ev->fpdu.stream_off = d->rx.fpdu_start;
	violate(ev, IW_CHK_TRUNCATED, 0, 0);
	return true;
}
