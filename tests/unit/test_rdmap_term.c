/* RDMAP Terminate body: prepare, encode (RFC layout), decode (RFC and siw
 * layouts), robustness against short and random input, cause names. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"
#include "rdmap/rdmap_term.h"
#include "iwt_check.h"

/* Every cause of the facts table (RFC 5040/5041 sec. 7, RFC 5044/6581). */
static const struct iw_term_cause causes[] = {
	{ 0, 0, 0x00, true }, { 0, 1, 0x00, true }, { 0, 1, 0x01, true }, { 0, 1, 0x02, true }, { 0, 1, 0x03, true },
	{ 0, 1, 0x04, true }, { 0, 1, 0x09, true }, { 0, 1, 0xFF, true }, { 0, 2, 0x05, true }, { 0, 2, 0x06, true },
	{ 0, 2, 0x07, true }, { 0, 2, 0x08, true }, { 0, 2, 0x09, true }, { 0, 2, 0xFF, true }, { 1, 0, 0x00, true },
	{ 1, 1, 0x00, true }, { 1, 1, 0x01, true }, { 1, 1, 0x02, true }, { 1, 1, 0x03, true }, { 1, 1, 0x04, true },
	{ 1, 2, 0x01, true }, { 1, 2, 0x02, true }, { 1, 2, 0x03, true }, { 1, 2, 0x04, true }, { 1, 2, 0x05, true },
	{ 1, 2, 0x06, true }, { 2, 0, 0x01, true }, { 2, 0, 0x02, true }, { 2, 0, 0x03, true }, { 2, 0, 0x04, true },
	{ 2, 0, 0x05, true }, { 2, 0, 0x06, true }, { 2, 0, 0x07, true },
};
#define NCAUSES (sizeof(causes) / sizeof(causes[0]))

/* Offending segments (ULPDUs) the tests prepare Terminates for. */
enum seg_kind { SEG_NONE, SEG_TAGGED, SEG_SEND, SEG_READ_REQ, SEG_KINDS };

#define PAYLOAD_LEN 16
#define SEG_BUF (IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN + PAYLOAD_LEN)

/* The WRITE of the observed siw Terminate: STag 0xdeadbe00, TO 0x1000. */
static const uint8_t tagged_hdr[IW_DDP_TAGGED_HDR_LEN] = {
	0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void make_untagged(uint8_t *p, uint8_t opcode, uint32_t qn, uint32_t msn, uint32_t mo)
{
	p[0] = 0x41; /* L, DDP version 1 */
	p[1] = iw_rdmap_ctrl(opcode);
	put32(p + 2, 0);
	put32(p + 6, qn);
	put32(p + 10, msn);
	put32(p + 14, mo);
}

/* Fill buf with a segment of the given kind; returns its ULPDU length. */
static uint16_t make_seg(enum seg_kind k, uint8_t *buf)
{
	memset(buf, 0, SEG_BUF);
	switch (k) {
	case SEG_TAGGED:
		memcpy(buf, tagged_hdr, sizeof(tagged_hdr));
		iwt_fill_pattern(buf + IW_DDP_TAGGED_HDR_LEN, PAYLOAD_LEN, 1);
		return IW_DDP_TAGGED_HDR_LEN + PAYLOAD_LEN;
	case SEG_SEND:
		make_untagged(buf, IW_OP_SEND, 0, 7, 0);
		iwt_fill_pattern(buf + IW_DDP_UNTAGGED_HDR_LEN, PAYLOAD_LEN, 2);
		return IW_DDP_UNTAGGED_HDR_LEN + PAYLOAD_LEN;
	case SEG_READ_REQ:
		make_untagged(buf, IW_OP_READ_REQ, 1, 3, 0);
		iwt_fill_pattern(buf + IW_DDP_UNTAGGED_HDR_LEN, IW_RDMAP_READ_REQ_LEN, 3);
		return IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN;
	default:
		return 0;
	}
}

/* Decode from an exact-size heap copy so ASan flags any over-read. */
static int decode_exact(const uint8_t *body, size_t len, struct iw_rdmap_term *t)
{
	uint8_t *p = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(p);
	if (len)
		memcpy(p, body, len);
	int rc = iw_rdmap_term_decode(p, len, t);
	free(p);
	return rc;
}

static void assert_same_term(const struct iw_rdmap_term *a, const struct iw_rdmap_term *b)
{
	ck_assert(iw_term_cause_eq(a->cause, b->cause));
	ck_assert_int_eq(a->has_seg_len, b->has_seg_len);
	ck_assert_int_eq(a->has_ddp_hdr, b->has_ddp_hdr);
	ck_assert_int_eq(a->has_rdmap_hdr, b->has_rdmap_hdr);
	if (a->has_seg_len)
		ck_assert_uint_eq(a->seg_len, b->seg_len);
	if (a->has_ddp_hdr) {
		ck_assert_uint_eq(a->ddp_hdr_len, b->ddp_hdr_len);
		ck_assert_mem_eq(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len);
	}
	if (a->has_rdmap_hdr) {
		ck_assert_uint_eq(a->rdmap_hdr_len, b->rdmap_hdr_len);
		ck_assert_mem_eq(a->rdmap_hdr, b->rdmap_hdr, IW_RDMAP_READ_REQ_LEN);
	}
}

START_TEST(test_cause_str_distinct)
{
	static const char *const generic[] = { "RDMAP: unknown error", "DDP: unknown error", "MPA: unknown error",
					       "unknown layer" };
	for (size_t i = 0; i < NCAUSES; i++) {
		const char *a = iw_term_cause_str(causes[i]);
		ck_assert_ptr_nonnull(a);
		for (size_t g = 0; g < sizeof(generic) / sizeof(generic[0]); g++)
			ck_assert_msg(strcmp(a, generic[g]) != 0, "cause %zu has only a generic name", i);
		for (size_t j = i + 1; j < NCAUSES; j++)
			ck_assert_msg(strcmp(a, iw_term_cause_str(causes[j])) != 0, "causes %zu and %zu share \"%s\"",
				      i, j, a);
	}
	ck_assert_ptr_nonnull(iw_term_cause_str(IW_TERM_CAUSE(9, 9, 9)));
}
END_TEST

START_TEST(test_encode_rfc_exact_tagged)
{
	uint8_t seg[SEG_BUF], out[IW_RDMAP_TERM_MAX_LEN];
	uint16_t ulen = make_seg(SEG_TAGGED, seg);
	struct iw_rdmap_term t;
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_STAG), seg,
			      ulen, ulen);
	static const uint8_t want[] = {
		0x10 | 0x01, 0x00, 0x80 | 0x40, 0x00, /* layer 1 etype 1, ecode 0, M D */
		0x00, 0x1e,                           /* segment length 30 */
		0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	size_t n = iw_rdmap_term_encode(&t, out);
	ck_assert_uint_eq(n, sizeof(want));
	ck_assert_mem_eq(out, want, sizeof(want));
}
END_TEST

START_TEST(test_encode_rfc_exact_read_req)
{
	uint8_t seg[SEG_BUF], out[IW_RDMAP_TERM_MAX_LEN + 8];
	uint16_t ulen = make_seg(SEG_READ_REQ, seg);
	struct iw_rdmap_term t;
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, IW_ECODE_RDMAP_ACCESS),
			      seg, ulen, ulen);
	memset(out, 0xEE, sizeof(out));
	size_t n = iw_rdmap_term_encode(&t, out);
	ck_assert_uint_eq(n, IW_RDMAP_TERM_MAX_LEN);
	static const uint8_t ctrl[] = { 0x01, 0x02, 0xE0, 0x00, 0x00, 46 };
	ck_assert_mem_eq(out, ctrl, sizeof(ctrl));
	ck_assert_mem_eq(out + 6, seg, IW_DDP_UNTAGGED_HDR_LEN);
	ck_assert_uint_eq(out[7], 0x41); /* copied RDMAP control: Read Request */
	ck_assert_mem_eq(out + 6 + IW_DDP_UNTAGGED_HDR_LEN, seg + IW_DDP_UNTAGGED_HDR_LEN, IW_RDMAP_READ_REQ_LEN);
	for (size_t i = n; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xEE);
}
END_TEST

START_TEST(test_encode_no_copies)
{
	struct iw_rdmap_term t;
	uint8_t out[IW_RDMAP_TERM_MAX_LEN];
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_CRC), NULL, 0, 0);
	ck_assert_uint_eq(iw_rdmap_term_encode(&t, out), 4);
	static const uint8_t want[] = { 0x20, 0x02, 0x00, 0x00 };
	ck_assert_mem_eq(out, want, 4);
}
END_TEST

START_TEST(test_prepare_rules)
{
	uint8_t seg[SEG_BUF];
	struct iw_rdmap_term t;
	const struct iw_term_cause ddp = IW_TERM_CAUSE(1, 2, 0x03), rdmap = IW_TERM_CAUSE(0, 2, 0x06);

	/* MPA errors copy nothing, even with a segment at hand. */
	uint16_t ulen = make_seg(SEG_READ_REQ, seg);
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(2, 0, 0x02), seg, ulen, ulen);
	ck_assert(!t.has_seg_len && !t.has_ddp_hdr && !t.has_rdmap_hdr);
	ck_assert(iw_term_cause_eq(t.cause, IW_TERM_CAUSE(2, 0, 0x02)));

	/* No segment: nothing. */
	iw_rdmap_term_prepare(&t, ddp, NULL, 100, 100);
	ck_assert(!t.has_seg_len && !t.has_ddp_hdr && !t.has_rdmap_hdr);

	/* Tagged: M and D with 14 bytes; too few bytes -> length only. */
	ulen = make_seg(SEG_TAGGED, seg);
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(1, 1, 0x01), seg, IW_DDP_TAGGED_HDR_LEN, ulen);
	ck_assert(t.has_seg_len && t.has_ddp_hdr && !t.has_rdmap_hdr);
	ck_assert_uint_eq(t.seg_len, ulen);
	ck_assert_uint_eq(t.ddp_hdr_len, 14);
	ck_assert_mem_eq(t.ddp_hdr, tagged_hdr, 14);
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(1, 1, 0x01), seg, IW_DDP_TAGGED_HDR_LEN - 1, ulen);
	ck_assert(t.has_seg_len && !t.has_ddp_hdr && !t.has_rdmap_hdr);
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(1, 1, 0x01), seg, 0, ulen);
	ck_assert(t.has_seg_len && !t.has_ddp_hdr && !t.has_rdmap_hdr);

	/* A tagged segment whose opcode nibble is 1 is no Read Request. */
	seg[1] = iw_rdmap_ctrl(IW_OP_READ_REQ);
	iw_rdmap_term_prepare(&t, rdmap, seg, SEG_BUF, ulen);
	ck_assert(t.has_ddp_hdr && !t.has_rdmap_hdr);
	ck_assert_uint_eq(t.ddp_hdr_len, 14);

	/* Untagged Send: 18 bytes, no RDMAP header. */
	ulen = make_seg(SEG_SEND, seg);
	iw_rdmap_term_prepare(&t, ddp, seg, SEG_BUF, ulen);
	ck_assert(t.has_seg_len && t.has_ddp_hdr && !t.has_rdmap_hdr);
	ck_assert_uint_eq(t.ddp_hdr_len, 18);
	ck_assert_mem_eq(t.ddp_hdr, seg, 18);
	iw_rdmap_term_prepare(&t, ddp, seg, 17, ulen);
	ck_assert(t.has_seg_len && !t.has_ddp_hdr);

	/* Read Request: body copied only when all 28 bytes are there. */
	ulen = make_seg(SEG_READ_REQ, seg);
	for (size_t avail = 18; avail <= 18 + 28; avail++) {
		iw_rdmap_term_prepare(&t, rdmap, seg, avail, ulen);
		ck_assert(t.has_seg_len && t.has_ddp_hdr);
		ck_assert_int_eq(t.has_rdmap_hdr, avail == 18 + 28);
	}
	ck_assert_uint_eq(t.rdmap_hdr_len, 28);
	ck_assert_mem_eq(t.rdmap_hdr, seg + 18, 28);
	/* Also for DDP-layer errors about a Read Request (e.g. bad MSN). */
	iw_rdmap_term_prepare(&t, ddp, seg, ulen, ulen);
	ck_assert(t.has_rdmap_hdr);
	ck_assert(!t.siw_layout);
}
END_TEST

/* For every cause and every kind of offending segment: prepare, encode,
 * check the length, decode, compare; then every truncation fails cleanly
 * and still reports the cause. */
START_TEST(test_round_trip_and_truncation)
{
	uint8_t seg[SEG_BUF], out[IW_RDMAP_TERM_MAX_LEN];
	for (size_t c = 0; c < NCAUSES; c++) {
		for (int k = SEG_NONE; k < SEG_KINDS; k++) {
			uint16_t ulen = make_seg((enum seg_kind)k, seg);
			struct iw_rdmap_term t, d;
			iw_rdmap_term_prepare(&t, causes[c], k == SEG_NONE ? NULL : seg, ulen, ulen);
			bool copies = k != SEG_NONE && causes[c].layer != IW_LAYER_MPA;
			ck_assert_int_eq(t.has_ddp_hdr, copies);
			ck_assert_int_eq(t.has_rdmap_hdr, copies && k == SEG_READ_REQ);

			size_t n = iw_rdmap_term_encode(&t, out);
			size_t want = 4;
			if (copies)
				want += 2 + (k == SEG_TAGGED ? 14u : 18u) + (k == SEG_READ_REQ ? 28u : 0u);
			ck_assert_uint_eq(n, want);

			ck_assert_int_eq(decode_exact(out, n, &d), 0);
			assert_same_term(&t, &d);
			ck_assert(!d.siw_layout);

			for (size_t len = 0; len < n; len++) {
				ck_assert_int_eq(decode_exact(out, len, &d), -1);
				if (len >= 4)
					ck_assert(iw_term_cause_eq(d.cause, causes[c]));
			}
		}
	}
}
END_TEST

/* M without D and D without M also survive a round trip. */
START_TEST(test_round_trip_partial_flags)
{
	uint8_t seg[SEG_BUF], out[IW_RDMAP_TERM_MAX_LEN];
	struct iw_rdmap_term t, d;
	uint16_t ulen = make_seg(SEG_SEND, seg);

	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(1, 2, 0x05), seg, 3, 1234);
	size_t n = iw_rdmap_term_encode(&t, out);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(out[2], IW_RDMAP_TERM_FLAG_M);
	ck_assert_int_eq(decode_exact(out, n, &d), 0);
	assert_same_term(&t, &d);
	ck_assert_uint_eq(d.seg_len, 1234);

	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(1, 2, 0x05), seg, ulen, ulen);
	t.has_seg_len = false;
	n = iw_rdmap_term_encode(&t, out);
	ck_assert_uint_eq(n, 4 + 2 + 18);
	ck_assert_uint_eq(out[2], IW_RDMAP_TERM_FLAG_D);
	ck_assert_int_eq(decode_exact(out, n, &d), 0);
	assert_same_term(&t, &d);

	/* Trailing bytes after what the flags announce are ignored. */
	uint8_t longer[IW_RDMAP_TERM_MAX_LEN + 4] = { 0 };
	memcpy(longer, out, n);
	ck_assert_int_eq(decode_exact(longer, n + 4, &d), 0);
	assert_same_term(&t, &d);
}
END_TEST

/* The Terminate a real siw sent after a WRITE to an unknown STag. */
START_TEST(test_decode_siw_observed)
{
	static const uint8_t body[] = {
		0x11, 0x00, 0x03, 0x00, 0x00, 0x10, 0xc1, 0x40, 0xde, 0xad,
		0xbe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	struct iw_rdmap_term t;
	ck_assert_int_eq(decode_exact(body, sizeof(body), &t), 0);
	ck_assert(iw_term_cause_eq(t.cause, IW_TERM_CAUSE(1, 1, 0x00)));
	ck_assert(t.siw_layout);
	ck_assert(t.has_seg_len && t.has_ddp_hdr && !t.has_rdmap_hdr);
	ck_assert_uint_eq(t.seg_len, 16);
	ck_assert_uint_eq(t.ddp_hdr_len, 14);
	ck_assert_mem_eq(t.ddp_hdr, body + 6, 14);
	ck_assert_mem_eq(t.ddp_hdr, tagged_hdr, 14);
	for (size_t len = 0; len < sizeof(body); len++) {
		ck_assert_int_eq(decode_exact(body, len, &t), -1);
		if (len >= 4) {
			ck_assert(iw_term_cause_eq(t.cause, IW_TERM_CAUSE(1, 1, 0x00)));
			ck_assert(t.siw_layout);
		}
	}
}
END_TEST

/* An RDMAP error the way siw would send it: (0,2,0x06) with byte 0 = 0x20. */
START_TEST(test_decode_siw_rdmap_error)
{
	uint8_t body[4 + 2 + 18];
	body[0] = 0x20;
	body[1] = IW_ECODE_RDMAP_UNEXP_OPCODE;
	body[2] = 0x03;
	body[3] = 0;
	body[4] = 0;
	body[5] = 16;
	make_untagged(body + 6, 0x0E, 0, 1, 0);
	struct iw_rdmap_term t;
	ck_assert_int_eq(decode_exact(body, sizeof(body), &t), 0);
	ck_assert(iw_term_cause_eq(t.cause, IW_TERM_CAUSE(0, 2, 0x06)));
	ck_assert(t.siw_layout);
	ck_assert(t.has_seg_len && t.has_ddp_hdr && !t.has_rdmap_hdr);
	ck_assert_uint_eq(t.ddp_hdr_len, 18);
	ck_assert_mem_eq(t.ddp_hdr, body + 6, 18);
}
END_TEST

/* siw's R flag (0x04) brings the Read Request body along. */
START_TEST(test_decode_siw_read_req)
{
	uint8_t seg[SEG_BUF], body[IW_RDMAP_TERM_MAX_LEN];
	uint16_t ulen = make_seg(SEG_READ_REQ, seg);
	body[0] = 0x10; /* siw: etype 1 << 4 | layer 0 */
	body[1] = IW_ECODE_RDMAP_ACCESS;
	body[2] = 0x07;
	body[3] = 0;
	body[4] = 0;
	body[5] = (uint8_t)ulen;
	memcpy(body + 6, seg, 18 + 28);
	struct iw_rdmap_term t;
	ck_assert_int_eq(decode_exact(body, sizeof(body), &t), 0);
	ck_assert(iw_term_cause_eq(t.cause, IW_TERM_CAUSE(0, 1, 0x02)));
	ck_assert(t.siw_layout && t.has_seg_len && t.has_ddp_hdr && t.has_rdmap_hdr);
	ck_assert_uint_eq(t.seg_len, ulen);
	ck_assert_mem_eq(t.rdmap_hdr, seg + 18, 28);
	ck_assert_int_eq(decode_exact(body, sizeof(body) - 1, &t), -1);
	ck_assert(!t.has_rdmap_hdr && t.has_ddp_hdr); /* what was complete */
}
END_TEST

START_TEST(test_decode_layout_detection)
{
	static const struct {
		uint8_t b[4];
		struct iw_term_cause want;
		bool siw;
	} cases[] = {
		/* Flags present: the bit positions decide. */
		{ { 0x12, 0x01, 0x80, 0 }, { 1, 2, 0x01, true }, false }, /* RFC M */
		{ { 0x21, 0x01, 0x01, 0 }, { 1, 2, 0x01, true }, true },  /* siw M */
		{ { 0x12, 0x01, 0x81, 0 }, { 1, 2, 0x01, true }, false }, /* both: RFC wins */
		/* No flags: RFC unless that reading is impossible. */
		{ { 0x20, 0x02, 0x00, 0 }, { 2, 0, 0x02, true }, false },
		{ { 0x12, 0x01, 0x00, 0 }, { 1, 2, 0x01, true }, false },
		{ { 0x00, 0x00, 0x00, 0 }, { 0, 0, 0x00, true }, false },
		{ { 0x31, 0x04, 0x00, 0 }, { 1, 3, 0x04, true }, true }, /* RFC layer 3 */
		{ { 0xF0, 0x00, 0x00, 0 }, { 0, 15, 0x00, true }, true },
		{ { 0xFF, 0x00, 0x00, 0 }, { 15, 15, 0x00, true }, false }, /* both impossible */
		/* siw's header-less MPA errors: (0,2,0x02) is no RFC cause. */
		{ { 0x02, 0x02, 0x00, 0 }, { 2, 0, 0x02, true }, true },
		{ { 0x02, 0x01, 0x00, 0 }, { 2, 0, 0x01, true }, true },
		/* ...but (0,2,0x07) is, so it stays as read. */
		{ { 0x02, 0x07, 0x00, 0 }, { 0, 2, 0x07, true }, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct iw_rdmap_term t;
		uint8_t body[4 + 2 + 18] = { 0 };
		memcpy(body, cases[i].b, 4);
		make_untagged(body + 6, IW_OP_SEND, 0, 1, 0);
		ck_assert_int_eq(decode_exact(body, sizeof(body), &t), 0);
		ck_assert_msg(iw_term_cause_eq(t.cause, cases[i].want), "case %zu: got (%u,%u,%#x)", i, t.cause.layer,
			      t.cause.etype, t.cause.ecode);
		ck_assert_msg(t.siw_layout == cases[i].siw, "case %zu layout", i);
	}
}
END_TEST

START_TEST(test_decode_random_bodies)
{
	static const uint8_t flag_picks[] = { 0x00, 0x80, 0x40, 0x20, 0xC0, 0xE0, 0x01, 0x02, 0x03, 0x07, 0x47, 0xFF };
	uint64_t s = iwt_seed();
	for (int i = 0; i < 30000; i++) {
		uint8_t body[64], out[IW_RDMAP_TERM_MAX_LEN];
		size_t len = (size_t)iwt_rand_range(&s, 0, sizeof(body));
		iwt_fill_random(&s, body, sizeof(body));
		if (iwt_rand(&s) & 1)
			body[2] = flag_picks[iwt_rand(&s) % sizeof(flag_picks)];
		struct iw_rdmap_term t;
		int rc = decode_exact(body, len, &t);
		ck_assert(rc == 0 || rc == -1);
		if (len < 4)
			ck_assert_int_eq(rc, -1);
		ck_assert(t.ddp_hdr_len == 0 || t.ddp_hdr_len == 14 || t.ddp_hdr_len == 18);
		ck_assert_int_eq(t.has_ddp_hdr, t.ddp_hdr_len != 0);
		ck_assert_int_eq(t.has_rdmap_hdr, t.rdmap_hdr_len != 0);
		if (rc != 0)
			continue;
		/* Whatever decoded re-encodes (RFC layout) to the same meaning. */
		struct iw_rdmap_term d;
		size_t n = iw_rdmap_term_encode(&t, out);
		ck_assert_uint_le(n, IW_RDMAP_TERM_MAX_LEN);
		ck_assert_int_eq(decode_exact(out, n, &d), 0);
		assert_same_term(&t, &d);
	}
}
END_TEST

static Suite *rdmap_term_suite(void)
{
	Suite *s = suite_create("rdmap_term");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_cause_str_distinct);
	tcase_add_test(tc, test_encode_rfc_exact_tagged);
	tcase_add_test(tc, test_encode_rfc_exact_read_req);
	tcase_add_test(tc, test_encode_no_copies);
	tcase_add_test(tc, test_prepare_rules);
	tcase_add_test(tc, test_round_trip_and_truncation);
	tcase_add_test(tc, test_round_trip_partial_flags);
	tcase_add_test(tc, test_decode_siw_observed);
	tcase_add_test(tc, test_decode_siw_rdmap_error);
	tcase_add_test(tc, test_decode_siw_read_req);
	tcase_add_test(tc, test_decode_layout_detection);
	tcase_add_test(tc, test_decode_random_bodies);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(rdmap_term_suite());
}
