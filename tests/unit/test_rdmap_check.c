/* Passive RDMAP stream checker: configuration from the MPA frames, the
 * segment-level checks (every violation code with its Terminate cause and
 * text, resynchronisation, Read Request / Response matching, IRD), and the
 * stream level through mpa_rx (clean streams in random chunkings with and
 * without CRC and markers, CRC / marker / ULPDU_LENGTH errors, truncation,
 * random input). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "iwt_b2b.h"
#include "iwt_common.h"
#include "iw_bytes.h"
#include "iwt_fpdu.h"
#include "rdmap/rdmap_check.h"

#define I2R IW_CHK_I2R
#define R2I IW_CHK_R2I

/* Raw DDP headers with any field value (tests/helpers/iwt_ddp.h has the
 * same, but its struct iwt_mr clashes with iwt_b2b.h's). */
static size_t hdr_t(uint8_t *b, uint8_t ulp_ctrl, uint32_t stag, uint64_t to, bool last, uint8_t version)
{
	b[0] = (uint8_t)(IW_DDP_CTRL_TAGGED | (last ? IW_DDP_CTRL_LAST : 0) | (version & IW_DDP_CTRL_DV_MASK));
	b[1] = ulp_ctrl;
	iw_put_be32(b + 2, stag);
	iw_put_be64(b + 6, to);
	return IW_DDP_TAGGED_HDR_LEN;
}

static size_t hdr_u(uint8_t *b, uint8_t ulp_ctrl, uint32_t ulp_word, uint32_t qn, uint32_t msn, uint32_t mo,
		    bool last, uint8_t version)
{
	b[0] = (uint8_t)((last ? IW_DDP_CTRL_LAST : 0) | (version & IW_DDP_CTRL_DV_MASK));
	b[1] = ulp_ctrl;
	iw_put_be32(b + 2, ulp_word);
	iw_put_be32(b + 6, qn);
	iw_put_be32(b + 10, msn);
	iw_put_be32(b + 14, mo);
	return IW_DDP_UNTAGGED_HDR_LEN;
}

static struct iw_rdmap_check *new_check(const struct iw_rdmap_check_cfg *cfg)
{
	struct iw_rdmap_check *c = malloc(sizeof(*c));

	ck_assert_ptr_nonnull(c);
	iw_rdmap_check_init(c, cfg);
	return c;
}

/* An untagged segment; body (len bytes) is handed over when given. */
static void seg_u(struct iw_rdmap_check *c, int dir, uint8_t ctrl, uint32_t qn, uint32_t msn, uint32_t mo,
		  bool last, const void *body, size_t len, struct iw_rdmap_check_ev *ev)
{
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];

	hdr_u(h, ctrl, 0, qn, msn, mo, last, IW_DDP_VERSION);
	iw_rdmap_check_segment(c, dir, h, sizeof(h), body, body ? len : 0, len, ev);
}

static void seg_t(struct iw_rdmap_check *c, int dir, uint8_t ctrl, uint32_t stag, uint64_t to, bool last,
		  size_t len, struct iw_rdmap_check_ev *ev)
{
	uint8_t h[IW_DDP_TAGGED_HDR_LEN];

	hdr_t(h, ctrl, stag, to, last, IW_DDP_VERSION);
	iw_rdmap_check_segment(c, dir, h, sizeof(h), NULL, 0, len, ev);
}

static void send_msg(struct iw_rdmap_check *c, int dir, uint32_t msn, size_t len, struct iw_rdmap_check_ev *ev)
{
	seg_u(c, dir, iw_rdmap_ctrl(IW_OP_SEND), IW_DDP_QN_SEND, msn, 0, true, NULL, len, ev);
}

static void read_req(struct iw_rdmap_check *c, int dir, uint32_t msn, uint32_t sink_stag, uint64_t sink_to,
		     uint32_t size, struct iw_rdmap_check_ev *ev)
{
	struct iw_rdmap_read_req rr = {
		.sink_stag = sink_stag, .sink_to = sink_to, .size = size, .src_stag = 0x5500, .src_to = 0x77000};
	uint8_t body[IW_RDMAP_READ_REQ_LEN];

	iw_rdmap_read_req_encode(&rr, body);
	seg_u(c, dir, iw_rdmap_ctrl(IW_OP_READ_REQ), IW_DDP_QN_READ_REQ, msn, 0, true, body, sizeof(body), ev);
}

static void read_resp(struct iw_rdmap_check *c, int dir, uint32_t stag, uint64_t to, bool last, size_t len,
		      struct iw_rdmap_check_ev *ev)
{
	seg_t(c, dir, iw_rdmap_ctrl(IW_OP_READ_RESP), stag, to, last, len, ev);
}

static void assert_clean(const struct iw_rdmap_check_ev *ev)
{
	char t[200];

	if (ev->has_violation)
		iw_rdmap_violation_str(&ev->viol, t, sizeof(t));
	ck_assert_msg(!ev->has_violation, "unexpected violation: %s", ev->has_violation ? t : "");
	ck_assert_int_eq(ev->type, IW_CHK_EV_FPDU);
}

static void assert_violation(const struct iw_rdmap_check_ev *ev, enum iw_rdmap_check_code code, uint8_t layer,
			     uint8_t etype, uint8_t ecode, const char *text)
{
	char t[200];

	ck_assert_msg(ev->has_violation, "expected violation %d (%s)", code, text);
	iw_rdmap_violation_str(&ev->viol, t, sizeof(t));
	ck_assert_msg(ev->viol.code == code, "code %d, expected %d (%s)", ev->viol.code, code, t);
	ck_assert_msg(iw_term_cause_eq(ev->viol.cause, IW_TERM_CAUSE(layer, etype, ecode)),
		      "cause (%u,%u,%#x) for %s", ev->viol.cause.layer, ev->viol.cause.etype, ev->viol.cause.ecode, t);
	ck_assert_str_eq(t, text);
}

/* ---- configuration --------------------------------------------------- */

START_TEST(test_ulp_lens)
{
	static const struct {
		uint8_t c0, c1;
		uint16_t hl, min;
	} v[] = {
		{0xC1, 0x40, 14, 14},  /* WRITE */
		{0x81, 0x42, 14, 14},  /* READ RESP */
		{0x41, 0x43, 18, 18},  /* SEND */
		{0x41, 0x41, 18, 46},  /* READ REQ */
		{0xC1, 0x41, 14, 14},  /* READ REQ with T=1: no known minimum */
		{0x41, 0x47, 18, 22},  /* TERMINATE */
		{0x41, 0x4C, 18, 18},  /* undefined opcode */
		{0x41, 0x49, 18, 18},  /* RFC 7306 Immediate Data with SE: not negotiated, no minimum */
		{0x42, 0x41, 18, 46},  /* DDP version 2: still the opcode's minimum */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t ctrl[2] = {v[i].c0, v[i].c1};
		uint16_t hl = 0, min = 0;

		iw_rdmap_ulp_lens(ctrl, &hl, &min);
		ck_assert_uint_eq(hl, v[i].hl);
		ck_assert_uint_eq(min, v[i].min);
	}
}
END_TEST

static struct iw_mpa_frame frame(enum iw_mpa_frame_kind k, uint8_t rev, bool m, bool crc, bool enh, uint16_t ird,
				 uint16_t ord)
{
	struct iw_mpa_frame f = {.kind = k, .rev = rev, .markers = m, .crc = crc, .enhanced = enh, .ird = ird, .ord = ord};
	return f;
}

START_TEST(test_cfg_from_mpa)
{
	struct iw_rdmap_check_cfg cfg;
	struct iw_mpa_frame req, rep;

	/* rping on siw with a C=1 Reply: CRC both ways, no markers. */
	req = frame(IW_MPA_REQUEST, 2, false, false, true, 1, 1);
	rep = frame(IW_MPA_REPLY, 2, false, true, true, 1, 1);
	ck_assert_int_eq(iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg), IW_MPA_OK);
	ck_assert(cfg.crc);
	ck_assert(!cfg.markers[I2R] && !cfg.markers[R2I]);
	ck_assert(cfg.reads_known[I2R] && cfg.reads_known[R2I]);
	ck_assert_uint_eq(cfg.max_reads[I2R], 1);
	ck_assert_uint_eq(cfg.max_reads[R2I], 1);
	ck_assert_uint_eq(cfg.max_ulpdu, 0);

	/* CRC iff the Reply has C=1, whatever the Request said. */
	req = frame(IW_MPA_REQUEST, 2, false, true, true, 16, 8);
	rep = frame(IW_MPA_REPLY, 2, false, false, true, 4, 16);
	ck_assert_int_eq(iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg), IW_MPA_OK);
	ck_assert(!cfg.crc);
	ck_assert_uint_eq(cfg.max_reads[I2R], 4);  /* the responder's IRD */
	ck_assert_uint_eq(cfg.max_reads[R2I], 16); /* the initiator's IRD */

	/* M in a frame: its receiver inserts markers. */
	req = frame(IW_MPA_REQUEST, 1, true, true, false, 0, 0);
	rep = frame(IW_MPA_REPLY, 1, false, true, false, 0, 0);
	ck_assert_int_eq(iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg), IW_MPA_OK);
	ck_assert(!cfg.markers[I2R] && cfg.markers[R2I]);
	ck_assert(!cfg.reads_known[I2R] && !cfg.reads_known[R2I]); /* rev 1: no IRD/ORD */
	rep.markers = true;
	req.markers = false;
	ck_assert_int_eq(iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg), IW_MPA_OK);
	ck_assert(cfg.markers[I2R] && !cfg.markers[R2I]);

	/* A reject and an impossible Reply still give a best-effort cfg. */
	req = frame(IW_MPA_REQUEST, 2, false, true, true, 1, 1);
	rep = frame(IW_MPA_REPLY, 2, true, true, true, 1, 1);
	rep.reject = true;
	ck_assert_int_eq(iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg), IW_MPA_REJ_PEER);
	ck_assert(cfg.crc && cfg.markers[I2R]);
	req = frame(IW_MPA_REQUEST, 1, false, false, false, 0, 0);
	rep = frame(IW_MPA_REPLY, 2, false, false, false, 0, 0);
	ck_assert_int_eq(iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg), IW_MPA_REJ_BAD_REPLY);
}
END_TEST

/* ---- segment level ----------------------------------------------------- */

START_TEST(test_clean_session)
{
	struct iw_rdmap_check *c = new_check(NULL);
	struct iw_rdmap_check_ev ev;
	struct iw_rdmap_term t, *got;
	uint8_t tb[IW_RDMAP_TERM_MAX_LEN], bad[IW_DDP_TAGGED_HDR_LEN + 4];
	size_t tl;

	/* Two-segment SEND. */
	seg_u(c, I2R, iw_rdmap_ctrl(IW_OP_SEND), 0, 1, 0, false, NULL, 100, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_fpdu && !ev.has_msg);
	ck_assert_uint_eq(ev.fpdu.opcode, IW_OP_SEND);
	ck_assert_uint_eq(ev.fpdu.payload_len, 100);
	ck_assert_uint_eq(ev.fpdu.ulpdu_len, 118);
	seg_u(c, I2R, iw_rdmap_ctrl(IW_OP_SEND), 0, 1, 100, true, NULL, 50, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg);
	ck_assert_uint_eq(ev.msg.opcode, IW_OP_SEND);
	ck_assert_uint_eq(ev.msg.msn, 1);
	ck_assert_uint_eq(ev.msg.len, 150);
	ck_assert_uint_eq(ev.msg.fpdus, 2);

	/* Zero-length Send with SE and Invalidate. */
	{
		uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];

		hdr_u(h, iw_rdmap_ctrl(IW_OP_SEND_SE_INV), 0xabcd01, 0, 2, 0, true, 1);
		iw_rdmap_check_segment(c, I2R, h, sizeof(h), NULL, 0, 0, &ev);
		assert_clean(&ev);
		ck_assert(ev.has_msg);
		ck_assert_uint_eq(ev.msg.inv_stag, 0xabcd01);
		ck_assert_uint_eq(ev.msg.len, 0);
	}

	/* WRITE in two segments. */
	seg_t(c, I2R, iw_rdmap_ctrl(IW_OP_WRITE), 0x1200, 0x9000, false, 1000, &ev);
	assert_clean(&ev);
	ck_assert(!ev.has_msg);
	seg_t(c, I2R, iw_rdmap_ctrl(IW_OP_WRITE), 0x1200, 0x9000 + 1000, true, 24, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg && ev.msg.tagged);
	ck_assert_uint_eq(ev.msg.stag, 0x1200);
	ck_assert_uint_eq(ev.msg.to, 0x9000);
	ck_assert_uint_eq(ev.msg.len, 1024);

	/* READ: request from A, answered by B in three segments. */
	read_req(c, I2R, 1, 0x3300, 0x10000, 2500, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg && ev.msg.rr_known);
	ck_assert_uint_eq(ev.msg.opcode, IW_OP_READ_REQ);
	ck_assert_uint_eq(ev.msg.rr.sink_stag, 0x3300);
	ck_assert_uint_eq(ev.msg.rr.size, 2500);
	ck_assert_uint_eq(ev.msg.rr.src_stag, 0x5500);
	read_resp(c, R2I, 0x3300, 0x10000, false, 1000, &ev);
	assert_clean(&ev);
	read_resp(c, R2I, 0x3300, 0x10000 + 1000, false, 1000, &ev);
	assert_clean(&ev);
	read_resp(c, R2I, 0x3300, 0x10000 + 2000, true, 500, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg && ev.msg.rr_known);
	ck_assert_uint_eq(ev.msg.opcode, IW_OP_READ_RESP);
	ck_assert_uint_eq(ev.msg.len, 2500);
	ck_assert_uint_eq(ev.msg.fpdus, 3);
	ck_assert_uint_eq(ev.msg.rr.src_to, 0x77000);

	/* Zero-length READ: one empty response segment. */
	read_req(c, I2R, 2, 0x3301, 0x20, 0, &ev);
	assert_clean(&ev);
	read_resp(c, R2I, 0x3301, 0x20, true, 0, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg);
	ck_assert_uint_eq(ev.msg.len, 0);

	/* B's own Send numbering is independent of A's. */
	send_msg(c, R2I, 1, 16, &ev);
	assert_clean(&ev);

	/* A Terminate (siw layout) is a message, not a violation. */
	hdr_t(bad, iw_rdmap_ctrl(IW_OP_WRITE), 0xdeadbe00, 0x1000, true, 1);
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(1, 1, 0), bad, IW_DDP_TAGGED_HDR_LEN, 16);
	tl = iw_rdmap_term_encode(&t, tb);
	tb[0] = 0x11; /* siw: etype << 4 | layer */
	tb[2] = 0x03; /* siw: M, D */
	seg_u(c, R2I, iw_rdmap_ctrl(IW_OP_TERMINATE), IW_DDP_QN_TERMINATE, 1, 0, true, tb, tl, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg);
	got = &ev.msg.term;
	ck_assert(ev.msg.term_ok && got->siw_layout);
	ck_assert(iw_term_cause_eq(got->cause, IW_TERM_CAUSE(1, 1, 0)));
	ck_assert(got->has_seg_len && got->has_ddp_hdr && !got->has_rdmap_hdr);
	ck_assert_uint_eq(got->seg_len, 16);
	free(c);
}
END_TEST

/* One violation per case, on a fresh checker after an optional setup. */
enum setup { S_NONE, S_SEND1, S_READ, S_IRD1 };

struct vcase {
	const char *name;
	enum setup setup;
	int dir;
	bool tagged;
	uint8_t version;
	uint8_t ctrl;
	uint32_t stag_or_qn;
	uint64_t to_or_msn;
	uint32_t mo;
	bool last;
	size_t len;
	bool rr_body;
	enum iw_rdmap_check_code code;
	struct iw_term_cause cause;
	const char *text;
};

#define C(l, e, c) {l, e, c, true}
static const struct vcase vcases[] = {
	{"ddp version tagged", S_NONE, I2R, true, 0, 0x40, 0x10, 0x0, 0, true, 8, false, IW_CHK_DDP_VERSION_T,
	 C(1, 1, 4), "DDP version 0, expected 1"},
	{"ddp version untagged", S_NONE, I2R, false, 2, 0x43, 0, 1, 0, true, 8, false, IW_CHK_DDP_VERSION_U,
	 C(1, 2, 6), "DDP version 2, expected 1"},
	{"rdmap version", S_NONE, I2R, false, 1, 0x83, 0, 1, 0, true, 8, false, IW_CHK_RDMAP_VERSION, C(0, 2, 5),
	 "RDMAP version 2, expected 1"},
	{"rdmap version 0", S_NONE, I2R, true, 1, 0x00, 0x10, 0, 0, true, 8, false, IW_CHK_RDMAP_VERSION,
	 C(0, 2, 5), "RDMAP version 0, expected 1"},
	{"unknown opcode", S_NONE, I2R, false, 1, 0x4C, 0, 1, 0, true, 8, false, IW_CHK_OPCODE, C(0, 2, 6),
	 "unknown opcode 12"},
	{"rfc7306 not negotiated", S_NONE, I2R, false, 1, 0x49, 0, 1, 0, true, 8, false, IW_CHK_EXT_NOT_NEGOTIATED,
	 C(0, 2, 6), "Immediate Data with SE, but RFC 7306 was not negotiated"},
	{"opcode 15 tagged", S_NONE, I2R, true, 1, 0x4F, 0x10, 0, 0, true, 8, false, IW_CHK_OPCODE, C(0, 2, 6),
	 "unknown opcode 15"},
	{"send tagged", S_NONE, I2R, true, 1, 0x43, 0x10, 0, 0, true, 8, false, IW_CHK_OPCODE, C(0, 2, 6),
	 "opcode 3 (Send) with T=1"},
	{"write untagged", S_NONE, I2R, false, 1, 0x40, 0, 1, 0, true, 8, false, IW_CHK_OPCODE, C(0, 2, 6),
	 "opcode 0 (RDMA Write) with T=0"},
	{"send on qn 1", S_NONE, I2R, false, 1, 0x43, 1, 1, 0, true, 8, false, IW_CHK_QN, C(1, 2, 1),
	 "Send on QN 1, expected QN 0"},
	{"read req on qn 0", S_NONE, I2R, false, 1, 0x41, 0, 1, 0, true, 28, true, IW_CHK_QN, C(1, 2, 1),
	 "RDMA Read Request on QN 0, expected QN 1"},
	{"terminate on qn 7", S_NONE, R2I, false, 1, 0x47, 7, 1, 0, true, 4, false, IW_CHK_QN, C(1, 2, 1),
	 "Terminate on QN 7, expected QN 2"},
	{"msn starts at 1", S_NONE, I2R, false, 1, 0x43, 0, 0, 0, true, 8, false, IW_CHK_MSN, C(1, 2, 3),
	 "MSN 0 on QN 0, expected 1"},
	{"msn skips", S_SEND1, I2R, false, 1, 0x43, 0, 3, 0, true, 8, false, IW_CHK_MSN, C(1, 2, 3),
	 "MSN 3 on QN 0, expected 2"},
	{"msn repeats", S_SEND1, I2R, false, 1, 0x45, 0, 1, 0, true, 8, false, IW_CHK_MSN, C(1, 2, 3),
	 "MSN 1 on QN 0, expected 2"},
	{"read req msn", S_SEND1, I2R, false, 1, 0x41, 1, 2, 0, true, 28, true, IW_CHK_MSN, C(1, 2, 3),
	 "MSN 2 on QN 1, expected 1"},
	{"mo not 0", S_NONE, I2R, false, 1, 0x43, 0, 1, 5, true, 8, false, IW_CHK_MO, C(1, 2, 4),
	 "MO 5 on QN 0 MSN 1, expected 0"},
	{"resp unexpected", S_NONE, R2I, true, 1, 0x42, 0x3300, 0x10000, 0, true, 8, false, IW_CHK_RESP_UNEXPECTED,
	 C(0, 2, 6), "Read Response without an outstanding Read Request"},
	{"resp same direction", S_READ, I2R, true, 1, 0x42, 0x3300, 0x10000, 0, true, 100, false,
	 IW_CHK_RESP_UNEXPECTED, C(0, 2, 6), "Read Response without an outstanding Read Request"},
	{"resp stag", S_READ, R2I, true, 1, 0x42, 0x3301, 0x10000, 0, true, 100, false, IW_CHK_RESP_STAG, C(1, 1, 0),
	 "Read Response STag 0x00003301, expected sink STag 0x00003300"},
	{"resp to", S_READ, R2I, true, 1, 0x42, 0x3300, 0x10004, 0, true, 100, false, IW_CHK_RESP_TO, C(1, 1, 1),
	 "Read Response TO 0x10004, expected 0x10000"},
	{"resp too long", S_READ, R2I, true, 1, 0x42, 0x3300, 0x10000, 0, true, 101, false, IW_CHK_RESP_TOO_LONG,
	 C(1, 1, 1), "Read Response of 101 bytes exceeds the requested 100"},
	{"resp short", S_READ, R2I, true, 1, 0x42, 0x3300, 0x10000, 0, true, 99, false, IW_CHK_RESP_SHORT,
	 C(0, 2, 0xFF), "Read Response ended after 99 of 100 bytes"},
	{"read req long", S_NONE, I2R, false, 1, 0x41, 1, 1, 0, true, 30, true, IW_CHK_READ_REQ_LONG, C(1, 2, 5),
	 "Read Request body of 30 bytes, longer than 28"},
	{"read req short", S_NONE, I2R, false, 1, 0x41, 1, 1, 0, true, 20, true, IW_CHK_READ_REQ_LEN, C(0, 2, 0xFF),
	 "Read Request body of 20 bytes, expected 28 at MO 0"},
	{"read req ird", S_IRD1, I2R, false, 1, 0x41, 1, 2, 0, true, 28, true, IW_CHK_IRD, C(0, 2, 7),
	 "Read Request beyond IRD 1 (1 outstanding)"},
};

static void setup(struct iw_rdmap_check *c, enum setup s)
{
	struct iw_rdmap_check_ev ev;

	switch (s) {
	case S_SEND1:
		send_msg(c, I2R, 1, 8, &ev);
		break;
	case S_READ:
		read_req(c, I2R, 1, 0x3300, 0x10000, 100, &ev);
		break;
	case S_IRD1:
		read_req(c, I2R, 1, 0x3300, 0x10000, 100, &ev);
		break;
	case S_NONE:
		return;
	}
	assert_clean(&ev);
}

START_TEST(test_violation_cases)
{
	const struct vcase *v = &vcases[_i];
	struct iw_rdmap_check_cfg cfg = {0};
	struct iw_rdmap_check *c;
	struct iw_rdmap_check_ev ev;
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], body[64] = {0};
	size_t hl;

	if (v->setup == S_IRD1) {
		cfg.reads_known[I2R] = true;
		cfg.max_reads[I2R] = 1;
	}
	c = new_check(&cfg);
	setup(c, v->setup);
	if (v->tagged)
		hl = hdr_t(h, v->ctrl, v->stag_or_qn, v->to_or_msn, v->last, v->version);
	else
		hl = hdr_u(h, v->ctrl, 0, v->stag_or_qn, (uint32_t)v->to_or_msn, v->mo, v->last,
				      v->version);
	iw_rdmap_check_segment(c, v->dir, h, hl, v->rr_body ? body : NULL, v->rr_body ? v->len : 0, v->len, &ev);
	ck_assert_int_eq(ev.type, IW_CHK_EV_FPDU);
	ck_assert(ev.has_fpdu);
	assert_violation(&ev, v->code, v->cause.layer, v->cause.etype, v->cause.ecode, v->text);
	free(c);
}
END_TEST

START_TEST(test_ird_zero_and_release)
{
	struct iw_rdmap_check_cfg cfg = {0};
	struct iw_rdmap_check *c;
	struct iw_rdmap_check_ev ev;

	/* An enhanced IRD of 0 allows no read at all. */
	cfg.reads_known[R2I] = true;
	cfg.max_reads[R2I] = 0;
	cfg.reads_known[I2R] = true;
	cfg.max_reads[I2R] = 1;
	c = new_check(&cfg);
	read_req(c, R2I, 1, 1, 0, 4, &ev);
	assert_violation(&ev, IW_CHK_IRD, 0, 2, 7, "Read Request beyond IRD 0 (0 outstanding)");
	ck_assert(ev.has_msg); /* still decoded and reported */
	/* The limit counts outstanding reads: a completed one frees its slot. */
	for (uint32_t i = 1; i <= 3; i++) {
		read_req(c, I2R, i, 0x40, 0x1000, 10, &ev);
		assert_clean(&ev);
		read_resp(c, R2I, 0x40, 0x1000, true, 10, &ev);
		assert_clean(&ev);
	}
	/* Unknown limits: only the checker's own capacity. */
	free(c);
	c = new_check(NULL);
	for (uint32_t i = 1; i <= IW_RDMAP_CHECK_MAX_READS; i++) {
		read_req(c, I2R, i, 0x40, 0x1000, 1, &ev);
		assert_clean(&ev);
	}
	read_req(c, I2R, IW_RDMAP_CHECK_MAX_READS + 1, 0x40, 0x1000, 1, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_IRD);
	/* Responses still match in order. */
	for (uint32_t i = 1; i <= IW_RDMAP_CHECK_MAX_READS; i++) {
		read_resp(c, R2I, 0x40, 0x1000, true, 1, &ev);
		assert_clean(&ev);
	}
	read_resp(c, R2I, 0x40, 0x1000, true, 1, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_RESP_UNEXPECTED);
	free(c);
}
END_TEST

START_TEST(test_resync)
{
	struct iw_rdmap_check *c = new_check(NULL);
	struct iw_rdmap_check_ev ev;

	send_msg(c, I2R, 1, 10, &ev);
	assert_clean(&ev);
	/* One wrong MSN is one violation: the checker follows the sender. */
	send_msg(c, I2R, 5, 10, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_MSN);
	ck_assert(ev.has_msg && ev.msg.msn == 5);
	send_msg(c, I2R, 6, 10, &ev);
	assert_clean(&ev);
	/* A wrong MO inside a message, then the message goes on from there. */
	seg_u(c, I2R, iw_rdmap_ctrl(IW_OP_SEND), 0, 7, 0, false, NULL, 100, &ev);
	assert_clean(&ev);
	seg_u(c, I2R, iw_rdmap_ctrl(IW_OP_SEND), 0, 7, 150, false, NULL, 100, &ev);
	assert_violation(&ev, IW_CHK_MO, 1, 2, 4, "MO 150 on QN 0 MSN 7, expected 100");
	seg_u(c, I2R, iw_rdmap_ctrl(IW_OP_SEND), 0, 7, 250, true, NULL, 50, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg);
	ck_assert_uint_eq(ev.msg.len, 300);
	/* A new message before the last one ended: MSN skips ahead of the
	 * unfinished one. */
	seg_u(c, I2R, iw_rdmap_ctrl(IW_OP_SEND), 0, 8, 0, false, NULL, 100, &ev);
	assert_clean(&ev);
	send_msg(c, I2R, 9, 10, &ev);
	assert_violation(&ev, IW_CHK_MSN, 1, 2, 3, "MSN 9 on QN 0, expected 8");
	/* Segments whose header is unusable change no state. */
	{
		uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];

		hdr_u(h, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 77, 0, true, 3);
		iw_rdmap_check_segment(c, I2R, h, sizeof(h), NULL, 0, 1, &ev);
		ck_assert(ev.has_violation && ev.viol.code == IW_CHK_DDP_VERSION_U && !ev.has_msg);
	}
	send_msg(c, I2R, 10, 10, &ev);
	assert_clean(&ev);
	/* MSN wraps modulo 2^32. */
	send_msg(c, R2I, 1, 1, &ev);
	c->d[R2I].q[0].msn = UINT32_MAX;
	send_msg(c, R2I, UINT32_MAX, 1, &ev);
	assert_clean(&ev);
	send_msg(c, R2I, 0, 1, &ev);
	assert_clean(&ev);
	free(c);
}
END_TEST

START_TEST(test_short_header)
{
	struct iw_rdmap_check *c = new_check(NULL);
	struct iw_rdmap_check_ev ev;
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];

	/* A caller that frames less than the T bit announces. */
	hdr_u(h, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 1, 0, true, 1);
	iw_rdmap_check_segment(c, I2R, h, 10, NULL, 0, 0, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_MPA_LEN_SMALL);
	iw_rdmap_check_segment(c, I2R, NULL, 0, NULL, 0, 0, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_MPA_LEN_SMALL);
	free(c);
}
END_TEST

START_TEST(test_unmatched_after_stop)
{
	struct iw_rdmap_check *c = new_check(NULL);
	struct iw_rdmap_check_ev ev;

	read_req(c, I2R, 1, 0x10, 0x100, 10, &ev);
	assert_clean(&ev);
	/* A's direction lost bytes: the tracked request still matches... */
	iw_rdmap_check_stop(c, I2R);
	ck_assert(iw_rdmap_check_stopped(c, I2R));
	read_resp(c, R2I, 0x10, 0x100, true, 10, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg && ev.msg.rr_known);
	/* ...and responses to requests it may have lost are not judged. */
	read_resp(c, R2I, 0x99, 0x5000, false, 10, &ev);
	assert_clean(&ev);
	ck_assert(!ev.has_msg);
	read_resp(c, R2I, 0x99, 0x500a, true, 5, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg && !ev.msg.rr_known);
	ck_assert_uint_eq(ev.msg.opcode, IW_OP_READ_RESP);
	ck_assert_uint_eq(ev.msg.stag, 0x99);
	ck_assert_uint_eq(ev.msg.to, 0x5000);
	ck_assert_uint_eq(ev.msg.len, 15);
	free(c);

	/* A direction that merely ended lost nothing: still judged. */
	c = new_check(NULL);
	ck_assert(!iw_rdmap_check_end(c, I2R, &ev));
	ck_assert(iw_rdmap_check_stopped(c, I2R));
	read_resp(c, R2I, 0x99, 0x5000, true, 10, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_RESP_UNEXPECTED);
	free(c);

	/* An MPA error loses the rest of the stream. */
	c = new_check(NULL);
	{
		uint8_t junk[8] = {0, 1};

		ck_assert_uint_eq(iw_rdmap_check_feed(c, I2R, junk, sizeof(junk), &ev), sizeof(junk));
		ck_assert_int_eq(ev.type, IW_CHK_EV_STOP);
	}
	read_resp(c, R2I, 0x99, 0x5000, true, 10, &ev);
	assert_clean(&ev);
	ck_assert(ev.has_msg && !ev.msg.rr_known);
	free(c);
}
END_TEST

START_TEST(test_violation_texts)
{
	char t[256];

	for (int code = 0; code < IW_CHK_CODE_COUNT; code++) {
		struct iw_rdmap_violation v;
		struct iw_term_cause cause = iw_rdmap_check_code_cause((enum iw_rdmap_check_code)code);
		int n;

		iw_rdmap_violation_set(&v, (enum iw_rdmap_check_code)code, 1, 2);
		ck_assert(iw_term_cause_eq(v.cause, cause));
		n = iw_rdmap_violation_str(&v, t, sizeof(t));
		ck_assert_int_gt(n, 5);
		ck_assert_int_lt(n, (int)sizeof(t));
		ck_assert(strstr(t, "unknown violation") == NULL);
		if (code != IW_CHK_OK)
			ck_assert_msg(strcmp(iw_term_cause_str(cause), "RDMAP local catastrophic error") != 0,
				      "code %d has no cause", code);
	}
	{
		struct iw_rdmap_violation v;

		iw_rdmap_violation_set(&v, IW_CHK_CODE_COUNT, 0, 0);
		iw_rdmap_violation_str(&v, t, sizeof(t));
		ck_assert_str_eq(t, "unknown violation 29");
		iw_rdmap_violation_set(&v, IW_CHK_MPA_FRAME, IW_MPA_FE_BAD_REV, IW_MPA_REPLY);
		iw_rdmap_violation_str(&v, t, sizeof(t));
		ck_assert_str_eq(t, "invalid MPA Reply: MPA revision not 1 or 2");
		iw_rdmap_violation_set(&v, IW_CHK_MPA_REPLY, IW_MPA_REJ_BAD_REPLY, 0);
		iw_rdmap_violation_str(&v, t, sizeof(t));
		ck_assert_str_eq(t, "MPA Reply refused: MPA Reply inconsistent with the Request");
		ck_assert(iw_term_cause_eq(v.cause, IW_TERM_CAUSE(2, 0, 4)));
	}
}
END_TEST

/* ---- stream level -------------------------------------------------------- */

#define NMSG 40
#define STREAM_CAP (NMSG * 4096)

struct smsg {
	uint8_t hdr[IW_DDP_UNTAGGED_HDR_LEN];
	uint8_t payload[3000];
	struct iwt_fpdu_msg m;
};

/* A random stream of FPDUs for direction A: Sends (single and multi
 * segment), Writes and Read Requests; fills the expected message count. */
static int make_msgs(uint64_t *rng, struct smsg *s, int n, int *nmsgs, int *nreads)
{
	uint32_t msn = 1, rmsn = 1, mo = 0;
	int done = 0;

	*nmsgs = 0;
	*nreads = 0;
	for (int i = 0; i < n; i++) {
		unsigned kind = (unsigned)iwt_rand_range(rng, 0, 3);
		size_t len = (size_t)iwt_rand_range(rng, 0, sizeof(s[i].payload));
		size_t hl;

		iwt_fill_random(rng, s[i].payload, len);
		if (kind == 0 || (mo && kind != 3)) {
			bool last = i == n - 1 || iwt_rand(rng) % 2;

			hl = hdr_u(s[i].hdr, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, msn, mo, last, 1);
			mo += (uint32_t)len;
			if (last) {
				msn++;
				mo = 0;
				(*nmsgs)++;
			}
		} else if (kind == 1 || kind == 3) {
			bool last = kind == 1;

			hl = hdr_t(s[i].hdr, iw_rdmap_ctrl(IW_OP_WRITE), 0x77, 0x1000, last, 1);
			*nmsgs += last;
		} else {
			struct iw_rdmap_read_req rr = {.sink_stag = 1, .size = 5};

			len = IW_RDMAP_READ_REQ_LEN;
			iw_rdmap_read_req_encode(&rr, s[i].payload);
			hl = hdr_u(s[i].hdr, iw_rdmap_ctrl(IW_OP_READ_REQ), 0, 1, rmsn++, 0, true, 1);
			(*nmsgs)++;
			(*nreads)++;
		}
		s[i].m = (struct iwt_fpdu_msg){s[i].hdr, hl, s[i].payload, len};
		done++;
	}
	/* A write left open at the end is fine: nothing judges it. */
	return done;
}

struct tally {
	int fpdus, msgs, violations, stops, reads;
	struct iw_rdmap_check_ev last;
	struct iw_rdmap_violation first; /* first violation seen */
};

static void run_stream(struct iw_rdmap_check *c, int dir, const uint8_t *buf, size_t len, uint64_t *rng,
		       size_t max_chunk, struct tally *t)
{
	size_t off = 0;

	while (off < len) {
		size_t chunk = (size_t)iwt_rand_range(rng, 1, max_chunk), done = 0;

		if (chunk > len - off)
			chunk = len - off;
		while (done < chunk) {
			struct iw_rdmap_check_ev ev;
			size_t n = iw_rdmap_check_feed(c, dir, buf + off + done, chunk - done, &ev);

			ck_assert_uint_le(n, chunk - done);
			ck_assert_msg(n > 0 || ev.type != IW_CHK_EV_NONE, "no progress");
			done += n;
			if (ev.type == IW_CHK_EV_NONE)
				continue;
			t->last = ev;
			t->fpdus += ev.has_fpdu;
			t->msgs += ev.has_msg;
			t->violations += ev.has_violation;
			t->stops += ev.type == IW_CHK_EV_STOP;
			t->reads += ev.has_msg && ev.msg.opcode == IW_OP_READ_REQ;
		}
		off += chunk;
	}
}

START_TEST(test_stream_clean)
{
	uint64_t rng = iwt_seed() + (uint64_t)_i;
	bool crc = _i & 1, markers = _i & 2;
	struct smsg *s = calloc(NMSG, sizeof(*s));
	uint8_t *buf = malloc(STREAM_CAP);
	struct iwt_fpdu_msg m[NMSG];
	struct iw_rdmap_check_cfg cfg = {.crc = crc};
	struct iw_rdmap_check *c;
	struct tally t = {0};
	struct iw_rdmap_check_ev ev;
	int nmsgs, nreads;
	ssize_t len;

	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(buf);
	cfg.markers[I2R] = markers;
	make_msgs(&rng, s, NMSG, &nmsgs, &nreads);
	for (int i = 0; i < NMSG; i++)
		m[i] = s[i].m;
	len = iwt_fpdu_stream(crc, markers, m, NMSG, buf, STREAM_CAP, NULL, &rng);
	ck_assert_int_gt(len, 0);
	for (int round = 0; round < 3; round++) {
		size_t max_chunk = round == 0 ? 1 : round == 1 ? 7 : 5000;

		memset(&t, 0, sizeof(t));
		c = new_check(&cfg);
		run_stream(c, I2R, buf, (size_t)len, &rng, max_chunk, &t);
		ck_assert_int_eq(t.fpdus, NMSG);
		ck_assert_int_eq(t.msgs, nmsgs);
		ck_assert_int_eq(t.reads, nreads);
		ck_assert_int_eq(t.violations, 0);
		ck_assert_int_eq(t.stops, 0);
		ck_assert_int_eq(t.last.fpdu.crc, crc ? IW_CHK_CRC_OK : IW_CHK_CRC_NONE);
		ck_assert(!iw_rdmap_check_end(c, I2R, &ev));
		ck_assert(iw_rdmap_check_stopped(c, I2R));
		/* An ended direction swallows anything after. */
		ck_assert_uint_eq(iw_rdmap_check_feed(c, I2R, buf, 10, &ev), 10);
		ck_assert_int_eq(ev.type, IW_CHK_EV_NONE);
		free(c);
	}
	free(buf);
	free(s);
}
END_TEST

/* One FPDU stream of three Sends for the error cases. */
static size_t three_sends(bool crc, bool markers, uint8_t *buf, size_t cap, uint32_t offs[3], size_t plen)
{
	static uint8_t pl[3][2000];
	static uint8_t h[3][IW_DDP_UNTAGGED_HDR_LEN];
	struct iwt_fpdu_msg m[3];
	ssize_t len;

	ck_assert_uint_le(plen, sizeof(pl[0]));
	for (int i = 0; i < 3; i++) {
		memset(pl[i], 0x30 + i, plen);
		hdr_u(h[i], iw_rdmap_ctrl(IW_OP_SEND), 0, 0, (uint32_t)i + 1, 0, true, 1);
		m[i] = (struct iwt_fpdu_msg){h[i], sizeof(h[i]), pl[i], plen};
	}
	len = iwt_fpdu_stream(crc, markers, m, 3, buf, cap, offs, NULL);
	ck_assert_int_gt(len, 0);
	return (size_t)len;
}

static struct iw_rdmap_check *stream_check(bool crc, bool markers, uint16_t max_ulpdu)
{
	struct iw_rdmap_check_cfg cfg = {.crc = crc, .max_ulpdu = max_ulpdu};

	cfg.markers[I2R] = markers;
	return new_check(&cfg);
}

START_TEST(test_stream_crc_error)
{
	uint8_t buf[8192];
	uint32_t offs[3];
	size_t len = three_sends(true, false, buf, sizeof(buf), offs, 100);
	uint64_t rng = iwt_seed();
	struct iw_rdmap_check *c = stream_check(true, false, 0);
	struct tally t = {0};
	struct iw_rdmap_check_ev ev;

	buf[offs[1] + 2 + IW_DDP_UNTAGGED_HDR_LEN + 5] ^= 0x01;
	run_stream(c, I2R, buf, len, &rng, 13, &t);
	ck_assert_int_eq(t.fpdus, 2); /* the first, then the failed one */
	ck_assert_int_eq(t.msgs, 1);
	ck_assert_int_eq(t.stops, 1);
	ck_assert_int_eq(t.last.type, IW_CHK_EV_STOP);
	ck_assert(t.last.has_fpdu);
	ck_assert_int_eq(t.last.fpdu.crc, IW_CHK_CRC_BAD);
	ck_assert_uint_eq(t.last.fpdu.hdr.msn, 2);
	ck_assert_uint_eq(t.last.fpdu.stream_off, offs[1]);
	assert_violation(&t.last, IW_CHK_MPA_CRC, 2, 0, 2, "CRC error");
	ck_assert(iw_rdmap_check_stopped(c, I2R));
	ck_assert(!iw_rdmap_check_end(c, I2R, &ev));
	free(c);

	/* Without CRC the same damage goes unnoticed. */
	len = three_sends(false, false, buf, sizeof(buf), offs, 100);
	buf[offs[1] + 2 + IW_DDP_UNTAGGED_HDR_LEN + 5] ^= 0x01;
	c = stream_check(false, false, 0);
	memset(&t, 0, sizeof(t));
	run_stream(c, I2R, buf, len, &rng, 13, &t);
	ck_assert_int_eq(t.fpdus, 3);
	ck_assert_int_eq(t.violations, 0);
	ck_assert_int_eq(t.last.fpdu.crc, IW_CHK_CRC_NONE);
	free(c);
}
END_TEST

START_TEST(test_stream_marker_error)
{
	uint8_t buf[8192];
	uint32_t offs[3];
	bool crc = _i;
	size_t len = three_sends(crc, true, buf, sizeof(buf), offs, 1000);
	uint64_t rng = iwt_seed();
	struct iw_rdmap_check *c = stream_check(crc, true, 0);
	struct tally t = {0};
	uint16_t ptr;

	/* The marker at stream offset 512 lies in the first FPDU (about
	 * 1030 octets from offset 0, which carries the first marker). */
	ck_assert_uint_gt(offs[1], 1024);
	ptr = (uint16_t)(buf[512 + 2] << 8 | buf[512 + 3]);
	ck_assert_uint_eq(ptr, 512);
	buf[512 + 3] ^= 0x04;
	run_stream(c, I2R, buf, len, &rng, 50, &t);
	ck_assert_int_eq(t.fpdus, 0);
	ck_assert_int_eq(t.stops, 1);
	ck_assert(!t.last.has_fpdu);
	assert_violation(&t.last, IW_CHK_MPA_MARKER, 2, 0, 3, "marker FPDUPTR 516, expected 512");
	free(c);

	/* A marker at the start of an FPDU points at itself (0). */
	len = three_sends(crc, true, buf, sizeof(buf), offs, 1000);
	buf[1] = 0x01; /* reserved bits are not checked */
	buf[3] = 0x08;
	c = stream_check(crc, true, 0);
	memset(&t, 0, sizeof(t));
	run_stream(c, I2R, buf, len, &rng, 50, &t);
	assert_violation(&t.last, IW_CHK_MPA_MARKER, 2, 0, 3, "marker FPDUPTR 8, expected 0");
	free(c);
}
END_TEST

START_TEST(test_stream_length_errors)
{
	uint8_t buf[8192];
	uint32_t offs[3];
	uint64_t rng = iwt_seed();
	struct iw_rdmap_check *c;
	struct tally t = {0};
	size_t len;

	/* A Read Request without its body: ULPDU 18 < 46. */
	{
		uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];
		struct iwt_fpdu_msg m = {h, sizeof(h), NULL, 0};
		ssize_t l;

		hdr_u(h, iw_rdmap_ctrl(IW_OP_READ_REQ), 0, 1, 1, 0, true, 1);
		l = iwt_fpdu_stream(true, false, &m, 1, buf, sizeof(buf), NULL, NULL);
		ck_assert_int_gt(l, 0);
		c = stream_check(true, false, 0);
		run_stream(c, I2R, buf, (size_t)l, &rng, 3, &t);
		ck_assert_int_eq(t.stops, 1);
		assert_violation(&t.last, IW_CHK_MPA_LEN_SMALL, 2, 0, 3, "ULPDU_LENGTH 18 too small (minimum 46)");
		free(c);
	}
	/* ULPDU_LENGTH below the two control bytes. */
	memset(buf, 0, 64);
	buf[1] = 1;
	c = stream_check(false, false, 0);
	memset(&t, 0, sizeof(t));
	run_stream(c, I2R, buf, 64, &rng, 64, &t);
	assert_violation(&t.last, IW_CHK_MPA_LEN_SMALL, 2, 0, 3, "ULPDU_LENGTH 1 too small (minimum 2)");
	free(c);
	/* A tagged header longer than the ULPDU. */
	memset(buf, 0, 64);
	buf[1] = 10;
	buf[2] = 0xC1;
	buf[3] = 0x40;
	c = stream_check(false, false, 0);
	memset(&t, 0, sizeof(t));
	run_stream(c, I2R, buf, 64, &rng, 64, &t);
	assert_violation(&t.last, IW_CHK_MPA_LEN_SMALL, 2, 0, 3, "ULPDU_LENGTH 10 too small (minimum 14)");
	free(c);
	/* Above the configured maximum. */
	len = three_sends(true, true, buf, sizeof(buf), offs, 300);
	c = stream_check(true, true, 200);
	memset(&t, 0, sizeof(t));
	run_stream(c, I2R, buf, len, &rng, 64, &t);
	assert_violation(&t.last, IW_CHK_MPA_LEN_LARGE, 2, 0, 3, "ULPDU_LENGTH 318 too large (maximum 200)");
	free(c);
}
END_TEST

START_TEST(test_stream_truncated)
{
	uint8_t buf[8192];
	uint32_t offs[3];
	size_t len = three_sends(true, _i, buf, sizeof(buf), offs, 500);
	uint64_t rng = iwt_seed();
	/* Cut inside the last FPDU at several places, including its first
	 * octet and its last. */
	size_t cuts[] = {offs[2] + 1, offs[2] + 3, offs[2] + 30, len - 1};

	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		struct iw_rdmap_check *c = stream_check(true, _i, 0);
		struct iw_rdmap_check_ev ev;
		struct tally t = {0};

		run_stream(c, I2R, buf, cuts[k], &rng, 40, &t);
		ck_assert_int_eq(t.fpdus, 2);
		ck_assert(iw_rdmap_check_end(c, I2R, &ev));
		ck_assert_int_eq(ev.type, IW_CHK_EV_STOP);
		ck_assert(!ev.has_fpdu);
		assert_violation(&ev, IW_CHK_TRUNCATED, 2, 0, 1, "truncated FPDU at end of stream");
		/* Once. */
		ck_assert(!iw_rdmap_check_end(c, I2R, &ev));
		free(c);
	}
}
END_TEST

/* Random and mutated input must never crash, hang or overrun. */
START_TEST(test_stream_random)
{
	uint64_t rng = iwt_seed() ^ 0x5eed;
	struct smsg *s = calloc(NMSG, sizeof(*s));
	uint8_t *buf = malloc(STREAM_CAP);
	struct iwt_fpdu_msg m[NMSG];

	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(buf);
	for (int iter = 0; iter < 200; iter++) {
		bool crc = iwt_rand(&rng) & 1, markers = iwt_rand(&rng) & 1;
		struct iw_rdmap_check_cfg cfg = {.crc = crc, .max_ulpdu = (uint16_t)iwt_rand_range(&rng, 0, 4000)};
		struct iw_rdmap_check *c;
		struct iw_rdmap_check_ev ev;
		struct tally t = {0};
		int nmsgs, nreads, n = (int)iwt_rand_range(&rng, 1, 8);
		size_t len;

		cfg.markers[I2R] = markers;
		cfg.reads_known[I2R] = iwt_rand(&rng) & 1;
		cfg.max_reads[I2R] = (uint16_t)iwt_rand_range(&rng, 0, 2);
		if (iter % 4 == 0) {
			len = (size_t)iwt_rand_range(&rng, 1, 20000);
			iwt_fill_random(&rng, buf, len);
		} else {
			ssize_t l;

			make_msgs(&rng, s, n, &nmsgs, &nreads);
			for (int i = 0; i < n; i++)
				m[i] = s[i].m;
			l = iwt_fpdu_stream(crc, markers, m, n, buf, STREAM_CAP, NULL, NULL);
			ck_assert_int_gt(l, 0);
			len = (size_t)l;
			for (int k = (int)iwt_rand_range(&rng, 1, 4); k > 0; k--)
				buf[iwt_rand_range(&rng, 0, len - 1)] ^= (uint8_t)(1u << iwt_rand_range(&rng, 0, 7));
		}
		c = new_check(&cfg);
		run_stream(c, (int)(iter & 1), buf, len, &rng, 700, &t);
		ck_assert_int_le(t.stops, 1);
		iw_rdmap_check_end(c, (int)(iter & 1), &ev);
		free(c);
	}
	free(buf);
	free(s);
}
END_TEST

/* ---- against the real receive path ---------------------------------------- */

/* The checker watches two rdmap_conn engines back to back (tests/helpers
 * iwt_b2b): A's wire is I2R, B's is R2I. Bytes are tapped right after each
 * pull, before they are delivered, so the checker sees them in the order
 * they were sent. */
struct tap {
	struct iwt_b2b t;
	struct iw_rdmap_check *c;
	uint64_t fed[2];
	struct tally tl[2];
};

static void tap_pull(struct tap *x, int dir)
{
	struct iwt_ep *ep = dir == I2R ? &x->t.a : &x->t.b;
	uint64_t fresh;
	const uint8_t *p;

	iwt_ep_pull(&x->t, ep);
	fresh = ep->wire_total - x->fed[dir];
	ck_assert_uint_le(fresh, ep->wire_len);
	if (!fresh)
		return; /* the wire may not even be allocated yet */
	p = ep->wire + ep->wire_len - fresh;
	while (fresh) {
		struct iw_rdmap_check_ev ev;
		size_t n = iw_rdmap_check_feed(x->c, dir, p, (size_t)fresh, &ev);

		p += n;
		fresh -= n;
		x->fed[dir] += n;
		if (ev.type == IW_CHK_EV_NONE)
			continue;
		x->tl[dir].last = ev;
		if (ev.has_violation && !x->tl[dir].violations)
			x->tl[dir].first = ev.viol;
		x->tl[dir].fpdus += ev.has_fpdu;
		x->tl[dir].msgs += ev.has_msg;
		x->tl[dir].violations += ev.has_violation;
		x->tl[dir].stops += ev.type == IW_CHK_EV_STOP;
		x->tl[dir].reads += ev.has_msg && ev.msg.opcode == IW_OP_READ_REQ;
	}
}

static void tap_round(struct tap *x, size_t max_deliver)
{
	tap_pull(x, I2R);
	tap_pull(x, R2I);
	iwt_ep_deliver(&x->t, &x->t.a, &x->t.b, max_deliver);
	iwt_ep_deliver(&x->t, &x->t.b, &x->t.a, max_deliver);
}

static void tap_init(struct tap *x, bool crc, bool markers, uint16_t ird, uint64_t seed)
{
	struct iw_rdmap_conn_cfg cfg = {
		.crc = crc, .markers_tx = markers, .markers_rx = markers, .mulpdu = 1000, .ird = ird, .ord = ird};
	struct iw_rdmap_check_cfg cc = {.crc = crc};

	memset(x, 0, sizeof(*x));
	iwt_b2b_init(&x->t, &cfg, seed);
	x->t.max_chunk = 333;
	cc.markers[I2R] = cc.markers[R2I] = markers;
	cc.reads_known[I2R] = cc.reads_known[R2I] = true;
	cc.max_reads[I2R] = cc.max_reads[R2I] = ird;
	x->c = new_check(&cc);
}

static void tap_fini(struct tap *x)
{
	iwt_b2b_fini(&x->t);
	free(x->c);
}

static struct iw_rdmap_wr wr_of(enum iw_rdmap_wr_opcode op, void *buf, size_t len)
{
	struct iw_rdmap_wr wr = {.opcode = op, .nsge = len ? 1 : 0};

	wr.sgl[0].iov_base = buf;
	wr.sgl[0].iov_len = len;
	return wr;
}

/* What our own engines send passes, messages and all. */
START_TEST(test_engine_traffic_clean)
{
	enum { N = 45, LEN = 3000 };
	static uint8_t a_src[N][LEN], b_mem[N][LEN], a_sink[N][LEN], b_recv[N][LEN], a_recv[N][64], b_src[N][64];
	uint64_t seed = iwt_seed() + 5;
	struct tap x;
	uint32_t b_stag, a_sink_stag;
	int posted = 0, b_posted = 0, nread = 0;

	tap_init(&x, _i & 1, _i & 2, 4, seed);
	b_stag = iwt_mem_reg(&x.t.b.mem, b_mem, sizeof(b_mem), IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ,
			     1, 1);
	a_sink_stag = iwt_mem_reg(&x.t.a.mem, a_sink, sizeof(a_sink), IW_RDMAP_ACC_LOCAL_WRITE, 1, 2);
	for (int i = 0; i < N; i++) {
		struct iovec r = {b_recv[i], LEN}, q = {a_recv[i], 64};

		iwt_mem_post_recv(&x.t.b.mem, (uint64_t)i, &r, 1);
		iwt_mem_post_recv(&x.t.a.mem, (uint64_t)i, &q, 1);
	}
	while (posted < N || b_posted < N) {
		while (posted < N) {
			size_t len = (size_t)iwt_rand_range(&seed, 0, LEN);
			struct iw_rdmap_wr wr;
			int rc;

			switch (posted % 3) {
			case 0:
				wr = wr_of(IW_RDMAP_WR_WRITE, a_src[posted], len);
				wr.remote_stag = b_stag;
				wr.remote_to = (uint64_t)(uintptr_t)b_mem[posted];
				break;
			case 1:
				wr = wr_of(IW_RDMAP_WR_READ, a_sink[posted], len);
				wr.remote_stag = b_stag;
				wr.remote_to = (uint64_t)(uintptr_t)b_mem[posted];
				wr.local_stag = a_sink_stag;
				wr.local_to = (uint64_t)(uintptr_t)a_sink[posted];
				break;
			default:
				wr = wr_of(posted % 2 ? IW_RDMAP_WR_SEND_SE : IW_RDMAP_WR_SEND, a_src[posted], len);
				break;
			}
			rc = iw_rdmap_post(&x.t.a.conn, &wr);
			if (rc == -ENOSPC)
				break;
			ck_assert_int_eq(rc, 0);
			nread += posted % 3 == 1;
			posted++;
		}
		while (b_posted < N) {
			struct iw_rdmap_wr wr = wr_of(IW_RDMAP_WR_SEND, b_src[b_posted], 64);

			if (iw_rdmap_post(&x.t.b.conn, &wr) == -ENOSPC)
				break;
			b_posted++;
		}
		tap_round(&x, (size_t)iwt_rand_range(&seed, 1, 20000));
	}
	for (int r = 0; r < 10000 && (x.t.a.wire_len || x.t.b.wire_len || iw_rdmap_tx_pending(&x.t.a.conn) ||
				      iw_rdmap_tx_pending(&x.t.b.conn));
	     r++)
		tap_round(&x, SIZE_MAX);
	ck_assert_uint_eq(iwt_ep_count(&x.t.a, IW_RDMAP_EV_ERROR) + iwt_ep_count(&x.t.b, IW_RDMAP_EV_ERROR), 0);
	for (int d = 0; d < 2; d++) {
		ck_assert_int_eq(x.tl[d].violations, 0);
		ck_assert_int_eq(x.tl[d].stops, 0);
	}
	/* A: N/3 Writes, Read Requests and Sends; B: N Sends and N/3 Read
	 * Responses. */
	ck_assert_int_eq(x.tl[I2R].msgs, N);
	ck_assert_int_eq(x.tl[I2R].reads, nread);
	ck_assert_int_eq(x.tl[R2I].msgs, N + nread);
	tap_fini(&x);
}
END_TEST

/* A hand-made FPDU from A: the Terminate cause the checker names is the
 * one B's engine reports. */
struct inject_case {
	const char *name;
	bool tagged;
	uint8_t ctrl, version;
	uint32_t qn, msn, mo;
	bool last;
	size_t len;
	int copies;    /* injected this many times, MSN counting up (0: once) */
	bool b_reads;  /* B has a 100-byte READ from A outstanding */
	int64_t to_off; /* tagged: TO relative to the sink buffer */
	bool rr_body;  /* payload is a valid Read Request body */
	bool wrong_stag; /* tagged: not the registered STag */
};

#define U(c, v, q, m, o, l) .ctrl = (c), .version = (v), .qn = (q), .msn = (m), .mo = (o), .len = (l), .last = true
static const struct inject_case inject_cases[] = {
	{"msn", U(0x43, 1, 0, 2, 0, 10)},
	{"msn 0", U(0x43, 1, 0, 0, 0, 10)},
	{"mo", U(0x43, 1, 0, 1, 4, 10)},
	{"qn", U(0x43, 1, 5, 1, 0, 10)},
	{"ddp version u", U(0x43, 2, 0, 1, 0, 10)},
	{"rdmap version", U(0x03, 1, 0, 1, 0, 10)},
	{"opcode", U(0x4A, 1, 0, 1, 0, 10)},
	{"read req long", U(0x41, 1, 1, 1, 0, 40)},
	{"ird", U(0x41, 1, 1, 1, 0, 28), .copies = 5, .rr_body = true},
	{"ddp version t", .tagged = true, .ctrl = 0x40, .version = 0, .last = true, .len = 10},
	{"opcode T", .tagged = true, .ctrl = 0x43, .version = 1, .last = true, .len = 10},
	{"read resp", .tagged = true, .ctrl = 0x42, .version = 1, .last = true, .len = 10},
	{"resp stag", .tagged = true, .ctrl = 0x42, .version = 1, .last = true, .len = 100, .b_reads = true,
	 .wrong_stag = true},
	{"resp to", .tagged = true, .ctrl = 0x42, .version = 1, .last = true, .len = 100, .b_reads = true, .to_off = 8},
	{"resp too long", .tagged = true, .ctrl = 0x42, .version = 1, .last = false, .len = 104, .b_reads = true},
	{"resp short", .tagged = true, .ctrl = 0x42, .version = 1, .last = true, .len = 60, .b_reads = true},
};
#undef U

START_TEST(test_engine_agrees)
{
	const struct inject_case *ic = &inject_cases[_i];
	static uint8_t recv[256], payload[128], mem[256];
	struct tap x;
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];
	size_t hl;
	struct iovec r = {recv, sizeof(recv)};
	const struct iwt_event *err;
	uint32_t stag;

	tap_init(&x, true, _i & 1, 4, iwt_seed());
	iwt_mem_post_recv(&x.t.b.mem, 1, &r, 1);
	stag = iwt_mem_reg(&x.t.b.mem, mem, sizeof(mem),
			   IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ | IW_RDMAP_ACC_LOCAL_WRITE, 1, 3);
	memset(payload, 0, sizeof(payload));
	if (ic->b_reads) {
		/* B reads from A; the injected response races A's real one. */
		static uint8_t a_src[128];
		uint32_t a_stag = iwt_mem_reg(&x.t.a.mem, a_src, sizeof(a_src), IW_RDMAP_ACC_REMOTE_READ, 1, 4);
		struct iw_rdmap_wr wr = wr_of(IW_RDMAP_WR_READ, mem, 100);

		wr.remote_stag = a_stag;
		wr.remote_to = (uint64_t)(uintptr_t)a_src;
		wr.local_stag = stag;
		wr.local_to = (uint64_t)(uintptr_t)mem;
		ck_assert_int_eq(iw_rdmap_post(&x.t.b.conn, &wr), 0);
		/* A speaks first (a Send), then B's request goes over. */
		{
			struct iw_rdmap_wr snd = wr_of(IW_RDMAP_WR_SEND, payload, 4);

			ck_assert_int_eq(iw_rdmap_post(&x.t.a.conn, &snd), 0);
		}
		tap_pull(&x, I2R);
		tap_pull(&x, R2I);
		iwt_ep_deliver(&x.t, &x.t.a, &x.t.b, SIZE_MAX);
		iwt_ep_deliver(&x.t, &x.t.b, &x.t.a, SIZE_MAX);
	}
	if (ic->rr_body) {
		struct iw_rdmap_read_req rr = {.sink_stag = 0x77, .size = 8, .src_stag = stag,
					       .src_to = (uint64_t)(uintptr_t)mem};

		iw_rdmap_read_req_encode(&rr, payload);
	}
	for (int k = 0; k < (ic->copies ? ic->copies : 1); k++) {
		if (ic->tagged)
			hl = hdr_t(h, ic->ctrl, ic->wrong_stag ? stag + 1 : stag,
				   (uint64_t)(uintptr_t)mem + (uint64_t)ic->to_off, ic->last, ic->version);
		else
			hl = hdr_u(h, ic->ctrl, 0, ic->qn, ic->msn + (uint32_t)k, ic->mo, ic->last, ic->version);
		iwt_ep_inject(&x.t.a, h, hl, payload, ic->len);
	}
	tap_round(&x, SIZE_MAX);
	err = iwt_ep_find(&x.t.b, IW_RDMAP_EV_ERROR, 0);
	ck_assert_msg(err != NULL, "%s: the engine accepted it", ic->name);
	/* The engine stops at the first; the checker goes on (A's real
	 * Read Response may follow an injected one). */
	ck_assert_msg(x.tl[I2R].violations >= 1, "%s: the checker saw nothing", ic->name);
	ck_assert_msg(iw_term_cause_eq(x.tl[I2R].first.cause, err->ev.cause),
		      "%s: checker (%u,%u,%#x), engine (%u,%u,%#x)", ic->name, x.tl[I2R].first.cause.layer,
		      x.tl[I2R].first.cause.etype, x.tl[I2R].first.cause.ecode, err->ev.cause.layer,
		      err->ev.cause.etype, err->ev.cause.ecode);
	ck_assert_uint_eq(iwt_ep_count(&x.t.b, IW_RDMAP_EV_ERROR), 1);
	tap_fini(&x);
}
END_TEST

static Suite *rdmap_check_suite(void)
{
	Suite *s = suite_create("rdmap_check");
	TCase *tc = tcase_create("segment");
	TCase *ts = tcase_create("stream");

	tcase_add_test(tc, test_ulp_lens);
	tcase_add_test(tc, test_cfg_from_mpa);
	tcase_add_test(tc, test_clean_session);
	tcase_add_loop_test(tc, test_violation_cases, 0, (int)(sizeof(vcases) / sizeof(vcases[0])));
	tcase_add_test(tc, test_ird_zero_and_release);
	tcase_add_test(tc, test_resync);
	tcase_add_test(tc, test_short_header);
	tcase_add_test(tc, test_unmatched_after_stop);
	tcase_add_test(tc, test_violation_texts);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(ts, test_stream_clean, 0, 4);
	tcase_add_test(ts, test_stream_crc_error);
	tcase_add_loop_test(ts, test_stream_marker_error, 0, 2);
	tcase_add_test(ts, test_stream_length_errors);
	tcase_add_loop_test(ts, test_stream_truncated, 0, 2);
	tcase_add_test(ts, test_stream_random);
	suite_add_tcase(s, ts);
	{
		TCase *te = tcase_create("engine");

		tcase_add_loop_test(te, test_engine_traffic_clean, 0, 4);
		tcase_add_loop_test(te, test_engine_agrees, 0, (int)(sizeof(inject_cases) / sizeof(inject_cases[0])));
		suite_add_tcase(s, te);
	}
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rdmap_check_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
