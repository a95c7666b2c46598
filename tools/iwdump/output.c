/* iwdump output: one line per event, as text or as JSON objects (one per
 * line). The text formats are documented in --help and relied on by the
 * tests in tests/iwdump; change them together. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "iwdump.h"

struct iwd_totals iwd_totals;

static const struct iwd_opts *opts;

void iwd_out_init(const struct iwd_opts *o)
{
	opts = o;
}

const char *iwd_dir_name(int dir)
{
	return dir == IW_CHK_I2R ? "A>B" : "B>A";
}

const char *iwd_op_short(uint8_t opcode)
{
	static const char *const names[IW_OP_MAX] = {
		[IW_OP_WRITE] = "WRITE",
		[IW_OP_READ_REQ] = "READ_REQ",
		[IW_OP_READ_RESP] = "READ_RESP",
		[IW_OP_SEND] = "SEND",
		[IW_OP_SEND_INV] = "SEND_INV",
		[IW_OP_SEND_SE] = "SEND_SE",
		[IW_OP_SEND_SE_INV] = "SEND_SE_INV",
		[IW_OP_TERMINATE] = "TERMINATE",
		/* RFC 7306 */
		[IW_OP_IMM_DATA] = "IMM", [IW_OP_IMM_DATA_SE] = "IMM_SE",
		[IW_OP_ATOMIC_REQ] = "ATOMIC_REQ", [IW_OP_ATOMIC_RESP] = "ATOMIC_RESP",
		[12] = "OP12", [13] = "OP13", [14] = "OP14", [15] = "OP15",
	};
	return names[opcode & (IW_OP_MAX - 1)];
}

void iwd_endpoint_str(const struct iwd_conn *c, int side, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(c->family, c->addr[side], a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	if (c->family == AF_INET6)
		snprintf(buf, cap, "[%s]:%u", a, c->port[side]);
	else
		snprintf(buf, cap, "%s:%u", a, c->port[side]);
}

/* ---- JSON helpers ------------------------------------------------------ */

static bool jfirst;

static void jstr_raw(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void jkey(const char *k)
{
	if (!jfirst)
		putchar(',');
	jfirst = false;
	jstr_raw(k);
	putchar(':');
}

static void jbegin(const char *type)
{
	putchar('{');
	jfirst = true;
	jkey("type");
	jstr_raw(type);
}

static void jend(void)
{
	puts("}");
}

static void jstr(const char *k, const char *v)
{
	jkey(k);
	jstr_raw(v);
}

static void ju64(const char *k, uint64_t v)
{
	jkey(k);
	printf("%" PRIu64, v);
}

static void jhex(const char *k, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%" PRIx64, v);
	jstr(k, b);
}

static void jbool(const char *k, bool v)
{
	jkey(k);
	fputs(v ? "true" : "false", stdout);
}

static void jwhere(const struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	ju64("conn", c->id);
	if (dir >= 0)
		jstr("dir", iwd_dir_name(dir));
	ju64("frame", w->frame);
	jkey("time");
	printf("%.6f", w->time);
}

/* ---- text helpers ------------------------------------------------------ */

/* "KIND conn N dir D frame F" */
static void tprefix(const char *kind, const struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	printf("%s conn %u", kind, c->id);
	if (dir >= 0)
		printf(" dir %s", iwd_dir_name(dir));
	printf(" frame %" PRIu64, w->frame);
}

static bool verbose(void)
{
	return !opts->quiet;
}

/* ---- events ------------------------------------------------------------ */

void iwd_out_conn(const struct iwd_conn *c, const struct iwd_where *w)
{
	char a[64], b[64];

	if (!verbose())
		return;
	iwd_endpoint_str(c, 0, a, sizeof(a));
	iwd_endpoint_str(c, 1, b, sizeof(b));
	if (opts->json) {
		jbegin("conn");
		jwhere(c, -1, w);
		jstr("initiator", a);
		jstr("responder", b);
		jbool("tcp_handshake_seen", !c->no_syn);
		jend();
		return;
	}
	printf("CONN %u frame %" PRIu64 ": %s > %s%s\n", c->id, w->frame, a, b,
	       c->no_syn ? " (no TCP handshake seen)" : "");
}

static void rtr_str(uint8_t rtr, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s%s", (rtr & IW_MPA_RTR_WRITE) ? "WRITE," : "", (rtr & IW_MPA_RTR_READ) ? "READ," : "",
		 (rtr & IW_MPA_RTR_SEND) ? "SEND," : "", rtr ? "" : "none");
	size_t n = strlen(buf);
	if (n && buf[n - 1] == ',')
		buf[n - 1] = 0;
}

void iwd_out_mpa(const struct iwd_conn *c, int dir, const struct iw_mpa_frame *f, const struct iwd_where *w)
{
	const char *what = f->kind == IW_MPA_REQUEST ? "Request" : "Reply";
	char rtr[32];

	if (!verbose())
		return;
	rtr_str(f->rtr, rtr, sizeof(rtr));
	if (opts->json) {
		jbegin("mpa");
		jwhere(c, dir, w);
		jstr("frame_type", what);
		ju64("rev", f->rev);
		jbool("M", f->markers);
		jbool("C", f->crc);
		jbool("R", f->reject);
		jbool("enhanced", f->enhanced);
		if (f->enhanced) {
			ju64("ird", f->ird);
			ju64("ord", f->ord);
			jbool("p2p", f->p2p);
			jstr("rtr", rtr);
		}
		ju64("pd_len", f->pdata_len);
		jbool("rfc7306", f->rfc7306);
		jend();
		return;
	}
	tprefix("MPA", c, dir, w);
	printf(": %s rev %u M=%d C=%d R=%d", what, f->rev, f->markers, f->crc, f->reject);
	if (f->enhanced) {
		printf(" enhanced ird %u ord %u", f->ird, f->ord);
		if (f->p2p)
			printf(" p2p rtr %s", rtr);
	}
	printf(" pd %u", f->pdata_len);
	/* libiwarp's RFC 7306 capability bit (ASK in a Request, ACK in a Reply). */
	if (f->rfc7306)
		printf(" rfc7306 %s", dir == IW_CHK_I2R ? "ask" : "ack");
	putchar('\n');
}

/* IRD/ORD each side ended up with (RFC 6581, mpa_negotiate.h). */
static void ird_ord(const struct iwd_sess *s, uint16_t v[4])
{
	v[0] = s->req.ird;
	v[1] = s->req.ord < s->rep.ird ? s->req.ord : s->rep.ird;
	v[2] = s->rep.ird;
	v[3] = s->rep.ord;
}

static bool sess_enhanced(const struct iwd_sess *s)
{
	return s->req.enhanced && s->rep.enhanced;
}

static void negotiated_text(const struct iwd_sess *s, char *buf, size_t cap)
{
	uint16_t v[4];
	size_t n;

	n = (size_t)snprintf(buf, cap, "rev %u%s, crc %s, markers A>B %s B>A %s", s->rep.rev,
			     sess_enhanced(s) ? " enhanced" : "", s->cfg.crc ? "on" : "off",
			     s->cfg.markers[0] ? "on" : "off", s->cfg.markers[1] ? "on" : "off");
	if (n >= cap)
		return;
	if (sess_enhanced(s)) {
		ird_ord(s, v);
		n += (size_t)snprintf(buf + n, cap - n, ", A ird %u ord %u, B ird %u ord %u%s", v[0], v[1], v[2], v[3],
				      s->rep.p2p ? ", p2p" : "");
	} else {
		n += (size_t)snprintf(buf + n, cap - n, ", ird/ord not negotiated");
	}
	if (n < cap && s->cfg.rfc7306)
		snprintf(buf + n, cap - n, ", rfc7306");
}

/* The negotiated parameters as JSON fields (shared by the per-event line
 * and the connection summary). */
static void json_negotiated(const struct iwd_sess *s)
{
	uint16_t v[4];

	ju64("rev", s->rep.rev);
	jbool("enhanced", sess_enhanced(s));
	jbool("crc", s->cfg.crc);
	jbool("markers_a2b", s->cfg.markers[0]);
	jbool("markers_b2a", s->cfg.markers[1]);
	jbool("rfc7306", s->cfg.rfc7306);
	if (sess_enhanced(s)) {
		ird_ord(s, v);
		ju64("a_ird", v[0]);
		ju64("a_ord", v[1]);
		ju64("b_ird", v[2]);
		ju64("b_ord", v[3]);
	}
}

void iwd_out_negotiated(const struct iwd_conn *c, const struct iwd_where *w)
{
	const struct iwd_sess *s = &c->sess;
	char t[256];

	if (!verbose())
		return;
	if (opts->json) {
		jbegin("negotiated");
		jwhere(c, -1, w);
		json_negotiated(s);
		jend();
		return;
	}
	negotiated_text(s, t, sizeof(t));
	printf("MPA conn %u frame %" PRIu64 ": negotiated %s\n", c->id, w->frame, t);
}

static const char *crc_name(enum iw_rdmap_check_crc crc)
{
	switch (crc) {
	case IW_CHK_CRC_OK: return "crc ok";
	case IW_CHK_CRC_BAD: return "crc BAD";
	default: return "no crc";
	}
}

void iwd_out_fpdu(const struct iwd_conn *c, int dir, const struct iw_rdmap_check_fpdu *f, const struct iwd_where *w)
{
	const struct iw_ddp_hdr *h = &f->hdr;
	bool inv = !h->tagged && (iw_rdmap_optable[f->opcode].flags & IW_OPF_INV);

	if (!verbose())
		return;
	if (opts->json) {
		jbegin("fpdu");
		jwhere(c, dir, w);
		jstr("op", iwd_op_short(f->opcode));
		ju64("T", h->tagged);
		ju64("L", h->last);
		if (h->tagged) {
			jhex("stag", h->stag);
			jhex("to", h->to);
		} else {
			ju64("qn", h->qn);
			ju64("msn", h->msn);
			ju64("mo", h->mo);
			if (inv)
				jhex("inv_stag", h->ulp_word);
		}
		ju64("ulpdu_len", f->ulpdu_len);
		ju64("len", f->payload_len);
		jstr("crc", f->crc == IW_CHK_CRC_OK ? "ok" : f->crc == IW_CHK_CRC_BAD ? "bad" : "none");
		jend();
		return;
	}
	printf("FPDU conn %u dir %s frame %" PRIu64 " time %.6f: %s T=%d L=%d", c->id, iwd_dir_name(dir), w->frame,
	       w->time, iwd_op_short(f->opcode), h->tagged, h->last);
	if (h->tagged)
		printf(" stag 0x%08" PRIx32 " to 0x%" PRIx64, h->stag, h->to);
	else
		printf(" qn %" PRIu32 " msn %" PRIu32 " mo %" PRIu32, h->qn, h->msn, h->mo);
	if (inv)
		printf(" inv 0x%08" PRIx32, h->ulp_word);
	printf(" len %u %s\n", f->payload_len, crc_name(f->crc));
}

static void term_text(const struct iw_rdmap_check_msg *m, char *buf, size_t cap)
{
	const struct iw_rdmap_term *t = &m->term;

	char fl[8] = "";

	if (t->has_seg_len)
		strcat(fl, " M");
	if (t->has_ddp_hdr)
		strcat(fl, " D");
	if (t->has_rdmap_hdr)
		strcat(fl, " R");
	snprintf(buf, cap, "layer %u etype %u ecode 0x%02x: %s%s%s%s%s", t->cause.layer, t->cause.etype,
		 t->cause.ecode, iw_term_cause_str(t->cause), fl[0] ? " [" : "", fl[0] ? fl + 1 : "",
		 fl[0] ? "]" : "", t->siw_layout ? " (siw layout)" : "");
	if (!m->term_ok) {
		size_t n = strlen(buf);

		snprintf(buf + n, cap > n ? cap - n : 0, " (body shorter than its flags announce)");
	}
}

static const char *atomic_op_name(uint8_t op)
{
	switch (op) {
	case IW_ATOMIC_FETCH_ADD: return "FetchAdd";
	case IW_ATOMIC_CMP_SWAP: return "CmpSwap";
	default: return "unknown";
	}
}

void iwd_out_msg(const struct iwd_conn *c, int dir, const struct iw_rdmap_check_msg *m, const struct iwd_where *w)
{
	const struct iw_rdmap_read_req *rr = &m->rr;
	char t[256];

	if (!verbose())
		return;
	if (opts->json) {
		jbegin("msg");
		jwhere(c, dir, w);
		jstr("op", iwd_op_short(m->opcode));
		ju64("len", m->len);
		ju64("fpdus", m->fpdus);
		switch (m->opcode) {
		case IW_OP_WRITE:
			jhex("stag", m->stag);
			jhex("to", m->to);
			break;
		case IW_OP_READ_REQ:
		case IW_OP_READ_RESP:
			if (m->opcode == IW_OP_READ_REQ)
				ju64("msn", m->msn);
			jbool("request_seen", m->rr_known);
			if (!m->rr_known) {
				jhex("stag", m->stag);
				jhex("to", m->to);
				break;
			}
			jhex("sink_stag", rr->sink_stag);
			jhex("sink_to", rr->sink_to);
			jhex("src_stag", rr->src_stag);
			jhex("src_to", rr->src_to);
			ju64("size", rr->size);
			break;
		case IW_OP_IMM_DATA:
		case IW_OP_IMM_DATA_SE:
			ju64("msn", m->msn);
			jhex("imm", m->imm);
			break;
		case IW_OP_ATOMIC_REQ:
		case IW_OP_ATOMIC_RESP:
			ju64("msn", m->msn);
			if (m->opcode == IW_OP_ATOMIC_RESP) {
				ju64("id", m->aresp.req_id);
				jhex("orig", m->aresp.orig);
			}
			jbool("request_seen", m->atomic_known);
			if (!m->atomic_known)
				break;
			if (m->opcode == IW_OP_ATOMIC_REQ)
				ju64("id", m->atomic.req_id);
			jstr("aop", atomic_op_name(m->atomic.op));
			jhex("stag", m->atomic.stag);
			jhex("to", m->atomic.to);
			jhex("add_swap", m->atomic.add_swap);
			jhex("add_swap_mask", m->atomic.add_swap_mask);
			jhex("compare", m->atomic.compare);
			jhex("compare_mask", m->atomic.compare_mask);
			break;
		case IW_OP_TERMINATE:
			ju64("layer", m->term.cause.layer);
			ju64("etype", m->term.cause.etype);
			ju64("ecode", m->term.cause.ecode);
			jstr("text", iw_term_cause_str(m->term.cause));
			jbool("siw_layout", m->term.siw_layout);
			jbool("complete", m->term_ok);
			break;
		default:
			ju64("msn", m->msn);
			if (iw_rdmap_optable[m->opcode].flags & IW_OPF_INV)
				jhex("inv_stag", m->inv_stag);
			break;
		}
		jend();
		return;
	}
	tprefix("MSG", c, dir, w);
	printf(": %s", iwd_op_short(m->opcode));
	switch (m->opcode) {
	case IW_OP_WRITE:
		printf(" stag 0x%08" PRIx32 " to 0x%" PRIx64 " %" PRIu64 " bytes\n", m->stag, m->to, m->len);
		break;
	case IW_OP_READ_REQ:
		printf(" msn %" PRIu32 " sink 0x%08" PRIx32 " to 0x%" PRIx64 " src 0x%08" PRIx32 " to 0x%" PRIx64
		       " size %" PRIu32 "\n",
		       m->msn, rr->sink_stag, rr->sink_to, rr->src_stag, rr->src_to, rr->size);
		break;
	case IW_OP_READ_RESP:
		printf(" stag 0x%08" PRIx32 " to 0x%" PRIx64 " %" PRIu64 " bytes complete", m->stag, m->to, m->len);
		if (m->rr_known)
			printf(" (src 0x%08" PRIx32 " to 0x%" PRIx64 ")\n", rr->src_stag, rr->src_to);
		else
			printf(" (request not seen)\n");
		break;
	case IW_OP_TERMINATE:
		term_text(m, t, sizeof(t));
		printf(" %s\n", t);
		break;
	case IW_OP_IMM_DATA:
	case IW_OP_IMM_DATA_SE:
		printf(" msn %" PRIu32 " imm 0x%016" PRIx64 "\n", m->msn, m->imm);
		break;
	case IW_OP_ATOMIC_REQ:
	case IW_OP_ATOMIC_RESP:
		printf(" msn %" PRIu32, m->msn);
		if (m->opcode == IW_OP_ATOMIC_RESP)
			printf(" id %" PRIu32 " orig 0x%016" PRIx64, m->aresp.req_id, m->aresp.orig);
		else
			printf(" id %" PRIu32, m->atomic.req_id);
		if (m->atomic_known)
			printf(" (%s stag 0x%08" PRIx32 " to 0x%" PRIx64 " add/swap 0x%" PRIx64 " mask 0x%" PRIx64
			       " compare 0x%" PRIx64 " mask 0x%" PRIx64 ")\n",
			       atomic_op_name(m->atomic.op), m->atomic.stag, m->atomic.to, m->atomic.add_swap,
			       m->atomic.add_swap_mask, m->atomic.compare, m->atomic.compare_mask);
		else
			printf(" (request not seen)\n");
		break;
	default:
		printf(" msn %" PRIu32 " %" PRIu64 " bytes", m->msn, m->len);
		if (iw_rdmap_optable[m->opcode].flags & IW_OPF_INV)
			printf(" inv 0x%08" PRIx32, m->inv_stag);
		putchar('\n');
		break;
	}
}

void iwd_out_violation(struct iwd_conn *c, int dir, const struct iw_rdmap_violation *v, const struct iwd_where *w)
{
	char t[256];

	iw_rdmap_violation_str(v, t, sizeof(t));
	iwd_totals.violations++;
	if (dir >= 0)
		c->sess.st[dir].violations++;
	if (opts->json) {
		jbegin("violation");
		jwhere(c, dir, w);
		jstr("text", t);
		ju64("layer", v->cause.layer);
		ju64("etype", v->cause.etype);
		ju64("ecode", v->cause.ecode);
		jstr("cause", iw_term_cause_str(v->cause));
		jend();
		return;
	}
	tprefix("VIOLATION", c, dir, w);
	printf(": %s (layer %u etype %u ecode 0x%02x)\n", t, v->cause.layer, v->cause.etype, v->cause.ecode);
}

static void vline(const char *kind, const struct iwd_conn *c, int dir, const struct iwd_where *w, const char *fmt,
		  va_list ap)
{
	char t[512];

	vsnprintf(t, sizeof(t), fmt, ap);
	if (opts->json) {
		jbegin(kind[0] == 'W' ? "warning" : "note");
		jwhere(c, dir, w);
		jstr("text", t);
		jend();
		return;
	}
	tprefix(kind, c, dir, w);
	printf(": %s\n", t);
}

void iwd_out_warning(struct iwd_conn *c, int dir, const struct iwd_where *w, const char *fmt, ...)
{
	va_list ap;

	iwd_totals.warnings++;
	c->conn_warnings++;
	if (dir >= 0)
		c->sess.st[dir].warnings++;
	va_start(ap, fmt);
	vline("WARNING", c, dir, w, fmt, ap);
	va_end(ap);
}

void iwd_out_file_warning(const struct iwd_where *w, const char *text)
{
	iwd_totals.warnings++;
	if (opts->json) {
		jbegin("warning");
		ju64("frame", w->frame);
		jstr("text", text);
		jend();
		return;
	}
	printf("WARNING frame %" PRIu64 ": %s\n", w->frame, text);
}

void iwd_out_note(const struct iwd_conn *c, int dir, const struct iwd_where *w, const char *fmt, ...)
{
	va_list ap;

	if (!verbose())
		return;
	va_start(ap, fmt);
	vline("NOTE", c, dir, w, fmt, ap);
	va_end(ap);
}

/* ---- summary ----------------------------------------------------------- */

static const char *conn_result(const struct iwd_conn *c)
{
	if (c->state == IWD_C_SKIPPED)
		return c->skip_reason ? c->skip_reason : "skipped";
	if (c->state == IWD_C_NEW)
		return "no payload seen";
	switch (c->sess.state) {
	case IWD_S_HANDSHAKE:
		return c->sess.have_frame[0] ? "no MPA Reply seen" : "no MPA Request seen";
	case IWD_S_REJECTED:
		return "rejected by the responder";
	case IWD_S_NOT_MPA:
		return "not MPA";
	case IWD_S_FAILED:
		return "MPA handshake invalid";
	case IWD_S_FPDU:
		break;
	}
	return "decoded";
}

static uint64_t conn_violations(const struct iwd_conn *c)
{
	return c->sess.st[0].violations + c->sess.st[1].violations;
}

static uint64_t reads_unanswered(const struct iwd_dir_stats *st)
{
	uint64_t req = st->msgs_op[IW_OP_READ_REQ];

	return req > st->reads_answered ? req - st->reads_answered : 0;
}

static void summary_json(const struct iwd_conn *c)
{
	const struct iwd_sess *s = &c->sess;
	char a[64], b[64];

	iwd_endpoint_str(c, 0, a, sizeof(a));
	iwd_endpoint_str(c, 1, b, sizeof(b));
	jbegin("summary");
	ju64("conn", c->id);
	jstr("initiator", a);
	jstr("responder", b);
	jstr("result", conn_result(c));
	ju64("violations", conn_violations(c));
	ju64("warnings", c->conn_warnings);
	if (s->state == IWD_S_FPDU) {
		jkey("mpa");
		putchar('{');
		jfirst = true;
		json_negotiated(s);
		putchar('}');
		jfirst = false;
	}
	for (int d = 0; d < 2; d++) {
		const struct iwd_dir_stats *st = &s->st[d];

		jkey(iwd_dir_name(d));
		putchar('{');
		jfirst = true;
		ju64("fpdus", st->fpdus);
		ju64("messages", st->msgs);
		ju64("payload", st->payload);
		ju64("tcp_bytes", c->s[d].bytes);
		ju64("dup_segments", c->s[d].dup_segs);
		ju64("ooo_segments", c->s[d].ooo_segs);
		jkey("ops");
		putchar('{');
		jfirst = true;
		for (int op = 0; op < IW_OP_MAX; op++) {
			if (!st->fpdus_op[op] && !st->msgs_op[op])
				continue;
			jkey(iwd_op_short((uint8_t)op));
			printf("{\"messages\":%" PRIu64 ",\"fpdus\":%" PRIu64 "}", st->msgs_op[op], st->fpdus_op[op]);
		}
		putchar('}');
		jfirst = false;
		jkey("sizes");
		putchar('[');
		for (size_t i = 0; i < st->nsizes; i++) {
			printf("%s{\"op\":\"%s\",\"size\":%" PRIu64 ",\"count\":%" PRIu64 "}", i ? "," : "",
			       iwd_op_short(st->sizes[i].op), st->sizes[i].size, st->sizes[i].count);
		}
		putchar(']');
		jbool("sizes_truncated", st->sizes_truncated);
		jkey("reads");
		printf("{\"requested\":%" PRIu64 ",\"answered\":%" PRIu64 ",\"unanswered\":%" PRIu64
		       ",\"unmatched_responses\":%" PRIu64 "}",
		       st->msgs_op[IW_OP_READ_REQ], st->reads_answered, reads_unanswered(st), st->resp_unmatched);
		jkey("stags");
		putchar('{');
		jfirst = true;
		for (size_t i = 0; i < st->nstags; i++) {
			char k[16];

			snprintf(k, sizeof(k), "0x%08" PRIx32, st->stags[i].stag);
			ju64(k, st->stags[i].bytes);
		}
		putchar('}');
		jfirst = false;
		putchar('}');
		jfirst = false;
	}
	jend();
}

void iwd_out_summary(const struct iwd_conn *c)
{
	const struct iwd_sess *s = &c->sess;
	char a[64], b[64], t[256];

	if (opts->json) {
		summary_json(c);
		return;
	}
	iwd_endpoint_str(c, 0, a, sizeof(a));
	iwd_endpoint_str(c, 1, b, sizeof(b));
	printf("SUMMARY conn %u: %s > %s: %s\n", c->id, a, b, conn_result(c));
	if (s->state == IWD_S_FPDU) {
		negotiated_text(s, t, sizeof(t));
		printf("  mpa: %s\n", t);
	}
	for (int d = 0; d < 2; d++) {
		const struct iwd_dir_stats *st = &s->st[d];
		const char *dn = iwd_dir_name(d);

		printf("  %s: %" PRIu64 " fpdus, %" PRIu64 " messages, %" PRIu64 " payload bytes, %" PRIu64
		       " tcp bytes (%" PRIu64 " dup, %" PRIu64 " out-of-order segments)\n",
		       dn, st->fpdus, st->msgs, st->payload, c->s[d].bytes, c->s[d].dup_segs, c->s[d].ooo_segs);
		if (st->fpdus) {
			printf("  %s ops (messages/fpdus):", dn);
			for (int op = 0; op < IW_OP_MAX; op++)
				if (st->fpdus_op[op] || st->msgs_op[op])
					printf(" %s %" PRIu64 "/%" PRIu64, iwd_op_short((uint8_t)op), st->msgs_op[op],
					       st->fpdus_op[op]);
			putchar('\n');
		}
		if (st->nsizes) {
			printf("  %s sizes (bytes x messages):", dn);
			for (size_t i = 0; i < st->nsizes; i++)
				printf(" %s %" PRIu64 "x%" PRIu64, iwd_op_short(st->sizes[i].op), st->sizes[i].size,
				       st->sizes[i].count);
			putchar('\n');
		}
		if (st->sizes_truncated)
			printf("  %s more than %d message sizes: the rest not listed\n", dn, IWD_MAX_SIZES);
		if (st->msgs_op[IW_OP_READ_REQ] || st->reads_answered || st->resp_unmatched) {
			printf("  %s reads: %" PRIu64 " requested, %" PRIu64 " answered, %" PRIu64 " unanswered", dn,
			       st->msgs_op[IW_OP_READ_REQ], st->reads_answered, reads_unanswered(st));
			if (st->resp_unmatched)
				printf(", %" PRIu64 " responses to unseen requests", st->resp_unmatched);
			putchar('\n');
		}
		for (size_t i = 0; i < st->nstags; i++)
			printf("  %s stag 0x%08" PRIx32 ": %" PRIu64 " bytes\n", dn, st->stags[i].stag,
			       st->stags[i].bytes);
		if (st->stags_truncated)
			printf("  %s more than %d STags: the rest not listed\n", dn, IWD_MAX_STAGS);
	}
	printf("  result: %" PRIu64 " violations, %" PRIu64 " warnings\n", conn_violations(c), c->conn_warnings);
}

void iwd_out_totals(void)
{
	if (opts->json) {
		jbegin("totals");
		ju64("connections", iwd_totals.conns);
		ju64("violations", iwd_totals.violations);
		ju64("warnings", iwd_totals.warnings);
		jend();
		return;
	}
	printf("TOTAL %" PRIu64 " connections, %" PRIu64 " violations, %" PRIu64 " warnings\n", iwd_totals.conns,
	       iwd_totals.violations, iwd_totals.warnings);
}
