/* MPA Request/Reply frame encode/decode (mpa/mpa_frame.h). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"
#include "iwt_handshake.h"
#include "mpa/mpa_frame.h"
#include "iwt_check.h"

static uint8_t bufa[IWT_MPA_FRAME_MAX];
static uint8_t bufb[IWT_MPA_FRAME_MAX];
static uint8_t pd[IWT_MPA_FRAME_MAX];

/* Decode from a heap copy of exactly len bytes so ASan sees any over-read. */
static ssize_t decode_exact(const uint8_t *src, size_t len, enum iw_mpa_frame_kind kind,
			    uint16_t max_pd, unsigned flags, struct iw_mpa_frame *out,
			    enum iw_mpa_frame_error *why)
{
	uint8_t *copy = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, src, len);
	struct iw_mpa_frame f;
	ssize_t r = iw_mpa_frame_decode(copy, len, kind, max_pd, flags, &f, why);
	if (r > 0 && out) {
		/* Re-point pdata at the caller's bytes before freeing the copy. */
		ck_assert(f.pdata >= copy && f.pdata + f.pdata_len <= copy + len);
		*out = f;
		out->pdata = src + (f.pdata - copy);
	}
	free(copy);
	return r;
}

static void assert_same_frame(const struct iw_mpa_frame *a, const struct iw_mpa_frame *b)
{
	ck_assert_int_eq(a->kind, b->kind);
	ck_assert_uint_eq(a->rev, b->rev);
	ck_assert_int_eq(a->markers, b->markers);
	ck_assert_int_eq(a->crc, b->crc);
	ck_assert_int_eq(a->reject, b->reject);
	ck_assert_int_eq(a->enhanced, b->enhanced);
	if (a->enhanced) {
		ck_assert_int_eq(a->p2p, b->p2p);
		ck_assert_uint_eq(a->rtr, b->rtr);
		ck_assert_uint_eq(a->ird, b->ird);
		ck_assert_uint_eq(a->ord, b->ord);
	}
	ck_assert_uint_eq(a->pdata_len, b->pdata_len);
	if (a->pdata_len)
		ck_assert_mem_eq(a->pdata, b->pdata, a->pdata_len);
}

START_TEST(siw_rping_request_decodes)
{
	struct iw_mpa_frame f;
	enum iw_mpa_frame_error why = IW_MPA_FE_BAD_ARGS;
	for (unsigned strict = 0; strict <= 1; strict++) {
		ssize_t r = decode_exact(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST, 0,
					 strict ? IW_MPA_DECODE_STRICT : 0, &f, &why);
		ck_assert_int_eq(r, IWT_SIW_RPING_REQ_LEN);
		ck_assert_int_eq(why, IW_MPA_FE_NONE);
		ck_assert_int_eq(f.kind, IW_MPA_REQUEST);
		ck_assert_uint_eq(f.rev, 2);
		ck_assert(f.enhanced);
		ck_assert(!f.crc);
		ck_assert(!f.markers);
		ck_assert(!f.reject);
		ck_assert(!f.p2p);
		ck_assert_uint_eq(f.rtr, 0);
		ck_assert_uint_eq(f.ird, 1);
		ck_assert_uint_eq(f.ord, 1);
		ck_assert_uint_eq(f.reserved, 0);
		ck_assert_uint_eq(f.pdata_len, 0);
	}
	ck_assert_int_eq(iw_mpa_frame_decode(iwt_siw_req_crc, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST,
					     0, 0, &f, NULL),
			 IWT_SIW_RPING_REQ_LEN);
	ck_assert(f.crc && f.enhanced && f.ird == 1 && f.ord == 1);
	/* As a Reply it is the wrong key. */
	ck_assert_int_eq(iw_mpa_frame_decode(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN, IW_MPA_REPLY,
					     0, 0, &f, &why),
			 -1);
	ck_assert_int_eq(why, IW_MPA_FE_BAD_KEY);
}
END_TEST

START_TEST(encode_matches_siw_bytes)
{
	struct iw_mpa_frame f = {
		.kind = IW_MPA_REQUEST, .rev = 2, .enhanced = true, .ird = 1, .ord = 1,
	};
	ck_assert_uint_eq(iw_mpa_frame_wire_len(&f), IWT_SIW_RPING_REQ_LEN);
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), IWT_SIW_RPING_REQ_LEN);
	ck_assert_mem_eq(bufa, iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN);
	f.crc = true;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, IWT_SIW_RPING_REQ_LEN, NULL),
			 IWT_SIW_RPING_REQ_LEN);
	ck_assert_mem_eq(bufa, iwt_siw_req_crc, IWT_SIW_RPING_REQ_LEN);
}
END_TEST

START_TEST(encode_rev1_never_has_words)
{
	const uint8_t app[3] = { 0xAA, 0xBB, 0xCC };
	struct iw_mpa_frame f = {
		.kind = IW_MPA_REPLY, .rev = 1, .crc = true, .markers = true,
		.p2p = true, .rtr = 7, .ird = 5, .ord = 6, /* ignored without enhanced */
		.pdata = app, .pdata_len = 3,
	};
	ssize_t n = iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL);
	ck_assert_int_eq(n, 23);
	size_t m = iwt_mpa_rep_bytes(0xC0, 1, 0, 0, app, 3, bufb);
	ck_assert_uint_eq(m, 23);
	ck_assert_mem_eq(bufa, bufb, m);
	/* enhanced on rev 1 cannot be encoded */
	enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
	f.enhanced = true;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), &why), -1);
	ck_assert_int_eq(why, IW_MPA_FE_BAD_ARGS);
}
END_TEST

START_TEST(roundtrip_matrix)
{
	static const uint16_t iro[] = { 0, 1, 127, 0x3FFF };
	static const uint16_t lens[] = { 0, 1, 3, 251, 508, 512 };
	iwt_fill_pattern(pd, sizeof(pd), 0x1234);
	unsigned count = 0;
	for (int kind = IW_MPA_REQUEST; kind <= IW_MPA_REPLY; kind++)
	for (unsigned rev = 1; rev <= 2; rev++)
	for (unsigned enh = 0; enh <= (rev == 2 ? 1u : 0u); enh++)
	for (unsigned mcr = 0; mcr < 8; mcr++) {
		bool reject = mcr & 4;
		if (reject && kind == IW_MPA_REQUEST)
			continue;
		for (unsigned p = 0; p < (enh ? 16u : 1u); p++) /* p2p x rtr */
		for (unsigned i = 0; i < (enh ? 4u : 1u); i++)
		for (unsigned o = 0; o < (enh ? 4u : 1u); o++)
		for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			if (lens[l] + (enh ? 4u : 0u) > IW_MPA_PD_MAX)
				continue;
			struct iw_mpa_frame f = {
				.kind = (enum iw_mpa_frame_kind)kind, .rev = (uint8_t)rev,
				.markers = mcr & 1, .crc = mcr & 2, .reject = reject,
				.enhanced = enh, .p2p = p & 8, .rtr = (uint8_t)(p & 7),
				.ird = iro[i], .ord = iro[(o + i) & 3],
				.pdata = pd + l, .pdata_len = lens[l],
			};
			ssize_t n = iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL);
			ck_assert_int_eq(n, (ssize_t)iw_mpa_frame_wire_len(&f));
			/* Independent byte-level check against the raw helper. */
			uint8_t flags = (uint8_t)((f.markers ? 0x80 : 0) | (f.crc ? 0x40 : 0) |
						  (f.reject ? 0x20 : 0) | (enh ? 0x10 : 0));
			uint16_t w1 = iwt_mpa_w1(f.p2p, f.rtr & IW_MPA_RTR_SEND, f.ird);
			uint16_t w2 = iwt_mpa_w2(f.rtr & IW_MPA_RTR_WRITE, f.rtr & IW_MPA_RTR_READ, f.ord);
			size_t m = kind == IW_MPA_REQUEST
					   ? iwt_mpa_req_bytes(flags, (uint8_t)rev, w1, w2, f.pdata, f.pdata_len, bufb)
					   : iwt_mpa_rep_bytes(flags, (uint8_t)rev, w1, w2, f.pdata, f.pdata_len, bufb);
			ck_assert_uint_eq(m, (size_t)n);
			ck_assert_mem_eq(bufa, bufb, m);

			struct iw_mpa_frame g;
			enum iw_mpa_frame_error why;
			ck_assert_int_eq(iw_mpa_frame_decode(bufa, (size_t)n, f.kind, 0,
							     IW_MPA_DECODE_STRICT, &g, &why), n);
			assert_same_frame(&f, &g);
			ck_assert_uint_eq(g.reserved, 0);
			ck_assert_ptr_eq(g.pdata, bufa + 20 + (enh ? 4 : 0));
			count++;
		}
	}
	ck_assert_uint_gt(count, 5000);
}
END_TEST

START_TEST(encode_errors)
{
	const uint8_t app[1] = { 1 };
	struct iw_mpa_frame ok = { .kind = IW_MPA_REPLY, .rev = 2, .enhanced = true, .ird = 1 };
	struct iw_mpa_frame f;
	enum iw_mpa_frame_error why;

#define EXPECT_ENC_ERR(stmt, err)                                                        \
	do {                                                                             \
		f = ok;                                                                  \
		stmt;                                                                    \
		why = IW_MPA_FE_NONE;                                                    \
		ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), &why), -1); \
		ck_assert_int_eq(why, err);                                              \
		ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), -1); \
	} while (0)

	EXPECT_ENC_ERR(f.kind = (enum iw_mpa_frame_kind)0, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.kind = (enum iw_mpa_frame_kind)3, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.rev = 0, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.rev = 3, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.rev = 1, IW_MPA_FE_BAD_ARGS); /* enhanced on rev 1 */
	EXPECT_ENC_ERR(f.ird = 0x4000, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.ord = 0xFFFF, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.rtr = 8, IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR(f.pdata_len = 1, IW_MPA_FE_BAD_ARGS); /* NULL pdata */
	EXPECT_ENC_ERR((f.kind = IW_MPA_REQUEST, f.reject = true), IW_MPA_FE_BAD_ARGS);
	EXPECT_ENC_ERR((f.pdata = pd, f.pdata_len = 509), IW_MPA_FE_PD_TOO_LONG);
	EXPECT_ENC_ERR((f.enhanced = false, f.pdata = pd, f.pdata_len = 513), IW_MPA_FE_PD_TOO_LONG);

	/* Out-of-range IRD/ORD words are irrelevant when not enhanced. */
	f = ok;
	f.enhanced = false;
	f.ird = 0xFFFF;
	f.rtr = 0xFF;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), 20);

	/* Output space: exact fits, one short fails without writing past cap. */
	f = ok;
	f.pdata = app;
	f.pdata_len = 1;
	size_t need = iw_mpa_frame_wire_len(&f);
	ck_assert_uint_eq(need, 25);
	for (size_t cap = 0; cap < need; cap++) {
		memset(bufa, 0xEE, sizeof(bufa));
		why = IW_MPA_FE_NONE;
		ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, cap, &why), -1);
		ck_assert_int_eq(why, IW_MPA_FE_NO_SPACE);
		ck_assert_uint_eq(bufa[0], 0xEE);
	}
	uint8_t *exact = malloc(need);
	ck_assert_ptr_nonnull(exact);
	ck_assert_int_eq(iw_mpa_frame_encode(&f, exact, need, NULL), (ssize_t)need);
	free(exact);
#undef EXPECT_ENC_ERR
}
END_TEST

START_TEST(encode_sends_reserved_as_zero)
{
	struct iw_mpa_frame f = { .kind = IW_MPA_REQUEST, .rev = 1, .reserved = 0x1F };
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), 20);
	ck_assert_uint_eq(bufa[16], 0);
	f.rev = 2;
	f.enhanced = true;
	f.reserved = 0xFF;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), 24);
	ck_assert_uint_eq(bufa[16], 0x10);
}
END_TEST

START_TEST(pdata_limits)
{
	struct iw_mpa_frame f = { .kind = IW_MPA_REQUEST, .rev = 1, .pdata = pd };
	struct iw_mpa_frame g;
	enum iw_mpa_frame_error why;
	iwt_fill_pattern(pd, sizeof(pd), 77);

	/* 512 without the words, 508 + 4 with them: both at the limit. */
	f.pdata_len = 512;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), 532);
	ck_assert_int_eq(decode_exact(bufa, 532, IW_MPA_REQUEST, 0, 0, &g, NULL), 532);
	ck_assert_uint_eq(g.pdata_len, 512);
	f.rev = 2;
	f.enhanced = true;
	f.pdata_len = 508;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), NULL), 532);
	ck_assert_int_eq(decode_exact(bufa, 532, IW_MPA_REQUEST, 0, 0, &g, NULL), 532);
	ck_assert_uint_eq(g.pdata_len, 508);
	ck_assert_mem_eq(g.pdata, pd, 508);
	f.pdata_len = 509;
	ck_assert_int_eq(iw_mpa_frame_encode(&f, bufa, sizeof(bufa), &why), -1);
	ck_assert_int_eq(why, IW_MPA_FE_PD_TOO_LONG);

	/* 513 on the wire: rejected as soon as PD_Length is readable. */
	size_t n = iwt_mpa_req_bytes(0x00, 1, 0, 0, pd, 513, bufa);
	for (size_t len = 20; len <= n; len += 493) {
		ck_assert_int_eq(decode_exact(bufa, len, IW_MPA_REQUEST, 0, 0, &g, &why), -1);
		ck_assert_int_eq(why, IW_MPA_FE_PD_TOO_LONG);
	}
	n = iwt_mpa_req_bytes(0x10, 2, 1, 1, pd, 509, bufa); /* PD_Length 513 */
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0, 0, &g, &why), -1);
	ck_assert_int_eq(why, IW_MPA_FE_PD_TOO_LONG);
	/* max_pd above 512 is clamped to 512 */
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 1000, 0, &g, &why), -1);
	ck_assert_int_eq(why, IW_MPA_FE_PD_TOO_LONG);
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0xFFFF, 0, &g, &why), -1);
	/* A smaller max_pd (siw drops requests above 256) */
	n = iwt_mpa_req_bytes(0x10, 2, 1, 1, pd, 252, bufa); /* PD_Length 256 */
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 256, 0, &g, &why), (ssize_t)n);
	n = iwt_mpa_req_bytes(0x10, 2, 1, 1, pd, 253, bufa); /* PD_Length 257 */
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 256, 0, &g, &why), -1);
	ck_assert_int_eq(why, IW_MPA_FE_PD_TOO_LONG);
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0, 0, &g, &why), (ssize_t)n);
	/* max_pd 4 still allows an enhanced frame without app data */
	ck_assert_int_eq(decode_exact(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST, 4, 0, &g, &why), IWT_SIW_RPING_REQ_LEN);
	ck_assert_int_eq(decode_exact(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST, 3, 0, &g, &why), -1);
	ck_assert_int_eq(why, IW_MPA_FE_PD_TOO_LONG);
}
END_TEST

static void expect_decode_err(const uint8_t *b, size_t len, enum iw_mpa_frame_kind kind,
			      unsigned flags, enum iw_mpa_frame_error err)
{
	enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
	struct iw_mpa_frame g;
	memset(&g, 0x5A, sizeof(g));
	ck_assert_int_eq(decode_exact(b, len, kind, 0, flags, &g, &why), -1);
	ck_assert_int_eq(why, err);
	ck_assert_int_eq(iw_mpa_frame_decode(b, len, kind, 0, flags, NULL, NULL), -1);
}

START_TEST(decode_errors)
{
	size_t n;
	const unsigned S = IW_MPA_DECODE_STRICT;

	/* BAD_KEY: other kind's key, garbage, one wrong byte anywhere */
	n = iwt_mpa_rep_bytes(0x40, 1, 0, 0, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REQUEST, 0, IW_MPA_FE_BAD_KEY);
	n = iwt_mpa_req_bytes(0x40, 1, 0, 0, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REPLY, 0, IW_MPA_FE_BAD_KEY);
	for (size_t i = 0; i < 16; i++) {
		memcpy(bufb, iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN);
		bufb[i] ^= 0x20; /* case flip: the key is case sensitive */
		expect_decode_err(bufb, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST, 0, IW_MPA_FE_BAD_KEY);
		/* detected as soon as the wrong byte is there */
		expect_decode_err(bufb, i + 1, IW_MPA_REQUEST, 0, IW_MPA_FE_BAD_KEY);
		if (i > 0) {
			ck_assert_int_eq(decode_exact(bufb, i, IW_MPA_REQUEST, 0, 0, NULL, NULL), 0);
		}
	}
	n = iwt_mpa_raw_bytes("GET / HTTP/1.1\r\n", 0, 1, 0, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REQUEST, 0, IW_MPA_FE_BAD_KEY);
	expect_decode_err(bufa, 1, IW_MPA_REPLY, 0, IW_MPA_FE_BAD_KEY);
	/* An invalid expected kind is an argument error, not a crash. */
	expect_decode_err(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN, (enum iw_mpa_frame_kind)0, 0, IW_MPA_FE_BAD_ARGS);

	/* BAD_REV: 0, 3, 255; detected once byte 17 is there */
	static const uint8_t bad_revs[] = { 0, 3, 4, 0x80, 0xFF };
	for (size_t i = 0; i < sizeof(bad_revs); i++) {
		n = iwt_mpa_req_bytes(0x10, bad_revs[i], 1, 1, NULL, 0, bufa);
		expect_decode_err(bufa, n, IW_MPA_REQUEST, 0, IW_MPA_FE_BAD_REV);
		expect_decode_err(bufa, 18, IW_MPA_REQUEST, S, IW_MPA_FE_BAD_REV);
		ck_assert_int_eq(decode_exact(bufa, 17, IW_MPA_REQUEST, 0, 0, NULL, NULL), 0);
	}

	/* RESERVED (strict only): every reserved bit on each revision, but
	 * the RFC 7306 bit of that kind of frame (ASK 0x08 in a Request, ACK
	 * 0x04 in a Reply), which decodes into rfc7306 */
	for (unsigned bit = 0; bit < 4; bit++) {
		uint8_t fl = (uint8_t)(1u << bit);
		struct iw_mpa_frame g;
		n = iwt_mpa_req_bytes((uint8_t)(0x10 | fl), 2, 1, 1, NULL, 0, bufa);
		if (fl == IW_MPA_FLAG_RFC7306_ASK) {
			ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0, S, &g, NULL), (ssize_t)n);
			ck_assert(g.rfc7306);
			ck_assert_uint_eq(g.reserved, 0);
		} else {
			expect_decode_err(bufa, n, IW_MPA_REQUEST, S, IW_MPA_FE_RESERVED);
			expect_decode_err(bufa, 18, IW_MPA_REQUEST, S, IW_MPA_FE_RESERVED);
		}
		n = iwt_mpa_rep_bytes(fl, 2, 0, 0, NULL, 0, bufa);
		if (fl == IW_MPA_FLAG_RFC7306_ACK) {
			ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REPLY, 0, S, &g, NULL), (ssize_t)n);
			ck_assert(g.rfc7306);
			ck_assert_uint_eq(g.reserved, 0);
			n = iwt_mpa_rep_bytes((uint8_t)(0xE0 | fl), 1, 0, 0, NULL, 0, bufa);
			ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REPLY, 0, S, &g, NULL), (ssize_t)n);
			ck_assert(g.rfc7306);
		} else {
			expect_decode_err(bufa, n, IW_MPA_REPLY, S, IW_MPA_FE_RESERVED);
			n = iwt_mpa_rep_bytes((uint8_t)(0xE0 | fl), 1, 0, 0, NULL, 0, bufa);
			expect_decode_err(bufa, n, IW_MPA_REPLY, S, IW_MPA_FE_RESERVED);
		}
	}
	/* R is zero in a Request (RFC 5044); strict decode checks it */
	n = iwt_mpa_req_bytes(0x20, 1, 0, 0, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REQUEST, S, IW_MPA_FE_RESERVED);

	/* ENHANCED_REV1 (strict only) */
	n = iwt_mpa_req_bytes(0x10, 1, 1, 1, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REQUEST, S, IW_MPA_FE_ENHANCED_REV1);
	n = iwt_mpa_rep_bytes(0x1F, 1, 1, 1, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REPLY, S, IW_MPA_FE_ENHANCED_REV1);

	/* ENHANCED_SHORT: rev 2 + 0x10 with PD_Length 0..3 (strict or not) */
	for (uint16_t l = 0; l < 4; l++) {
		n = iwt_mpa_raw_bytes(IW_MPA_KEY_REQ, 0x10, 2, l, pd, l, bufa);
		expect_decode_err(bufa, n, IW_MPA_REQUEST, 0, IW_MPA_FE_ENHANCED_SHORT);
		expect_decode_err(bufa, 20, IW_MPA_REQUEST, S, IW_MPA_FE_ENHANCED_SHORT);
	}

	/* PD_TOO_LONG */
	n = iwt_mpa_raw_bytes(IW_MPA_KEY_REP, 0x00, 1, 0xFFFF, NULL, 0, bufa);
	expect_decode_err(bufa, n, IW_MPA_REPLY, 0, IW_MPA_FE_PD_TOO_LONG);
}
END_TEST

START_TEST(decode_nonstrict_records_reserved)
{
	struct iw_mpa_frame g;
	uint8_t app[8];
	iwt_fill_pattern(app, sizeof(app), 5);

	/* rev 2: 0x0F reserved, words still parsed */
	size_t n = iwt_mpa_req_bytes(0x1F, 2, iwt_mpa_w1(false, false, 9), iwt_mpa_w2(false, false, 3),
				     app, 8, bufa);
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0, 0, &g, NULL), (ssize_t)n);
	ck_assert_uint_eq(g.reserved, 0x0F & ~IW_MPA_FLAG_RFC7306_ASK); /* 0x08 is the RFC 7306 ASK */
	ck_assert(g.rfc7306);
	ck_assert(g.enhanced);
	ck_assert_uint_eq(g.ird, 9);
	ck_assert_uint_eq(g.ord, 3);
	ck_assert_uint_eq(g.pdata_len, 8);
	ck_assert_mem_eq(g.pdata, app, 8);

	/* rev 1: 0x10 is reserved, so the 4 bytes belong to the app data */
	n = iwt_mpa_rep_bytes(0x1F | 0x20, 1, 0x0102, 0x0304, app, 8, bufa);
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REPLY, 0, 0, &g, NULL), (ssize_t)n);
	ck_assert_uint_eq(g.reserved, 0x1F & ~IW_MPA_FLAG_RFC7306_ACK); /* 0x04 is the RFC 7306 ACK */
	ck_assert(g.rfc7306);
	ck_assert(!g.enhanced);
	ck_assert(g.reject);
	ck_assert_uint_eq(g.pdata_len, 12);
	ck_assert_uint_eq(g.pdata[0], 0x01);
	ck_assert_uint_eq(g.pdata[3], 0x04);
	ck_assert_mem_eq(g.pdata + 4, app, 8);

	/* rev 1 with 0x10 and PD_Length < 4 is fine: no words expected */
	n = iwt_mpa_raw_bytes(IW_MPA_KEY_REQ, 0x10, 1, 2, app, 2, bufa);
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0, 0, &g, NULL), 22);
	ck_assert_uint_eq(g.pdata_len, 2);

	/* R in a Request is reported as received, not an error */
	n = iwt_mpa_req_bytes(0x20, 1, 0, 0, NULL, 0, bufa);
	ck_assert_int_eq(decode_exact(bufa, n, IW_MPA_REQUEST, 0, 0, &g, NULL), 20);
	ck_assert(g.reject);
	ck_assert_uint_eq(g.reserved, 0);
}
END_TEST

static void check_truncation(const uint8_t *frame, size_t n, enum iw_mpa_frame_kind kind)
{
	for (unsigned strict = 0; strict <= 1; strict++) {
		unsigned fl = strict ? IW_MPA_DECODE_STRICT : 0;
		for (size_t len = 0; len < n; len++) {
			enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
			ck_assert_msg(decode_exact(frame, len, kind, 0, fl, NULL, &why) == 0,
				      "len %zu of %zu", len, n);
		}
		ck_assert_int_eq(decode_exact(frame, n, kind, 0, fl, NULL, NULL), (ssize_t)n);
	}
	/* Bytes after the frame (e.g. the first FPDU) are not consumed. */
	memcpy(bufb, frame, n);
	memset(bufb + n, 0xA5, 64);
	ck_assert_int_eq(decode_exact(bufb, n + 64, kind, 0, 0, NULL, NULL), (ssize_t)n);
}

START_TEST(truncation_needs_more)
{
	uint8_t app[600];
	iwt_fill_pattern(app, sizeof(app), 9);
	check_truncation(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST);
	check_truncation(iwt_siw_req_crc, IWT_SIW_RPING_REQ_LEN, IW_MPA_REQUEST);
	size_t n = iwt_mpa_req_bytes(0xC0, 1, 0, 0, app, 37, bufa);
	check_truncation(bufa, n, IW_MPA_REQUEST);
	n = iwt_mpa_rep_bytes(0x60, 2, 0, 0, NULL, 0, bufa);
	check_truncation(bufa, n, IW_MPA_REPLY);
	n = iwt_mpa_rep_bytes(0x70, 2, iwt_mpa_w1(true, true, 0x3FFF), iwt_mpa_w2(true, true, 0),
			      app, 508, bufa);
	check_truncation(bufa, n, IW_MPA_REPLY);
	n = iwt_mpa_req_bytes(0x00, 2, 0, 0, app, 512, bufa);
	check_truncation(bufa, n, IW_MPA_REQUEST);
}
END_TEST

/* Random bytes behind a valid key: never a crash, an out-of-bounds read
 * (ASan) or an inconsistent answer. */
START_TEST(fuzz_random_frames)
{
	uint64_t rng = iwt_seed() ^ 0xF00D;
	static const uint8_t revs[] = { 1, 2, 0, 3 };
	static uint8_t frame[20 + 1024];
	for (unsigned iter = 0; iter < 20000; iter++) {
		enum iw_mpa_frame_kind kind = (iter & 1) ? IW_MPA_REPLY : IW_MPA_REQUEST;
		const char *key = (iwt_rand(&rng) % 16) ? (kind == IW_MPA_REQUEST ? IW_MPA_KEY_REQ
										     : IW_MPA_KEY_REP)
						      : (kind == IW_MPA_REQUEST ? IW_MPA_KEY_REP
										: IW_MPA_KEY_REQ);
		size_t body = (size_t)iwt_rand_range(&rng, 0, 1024);
		iwt_fill_random(&rng, frame, 20 + body);
		memcpy(frame, key, 16);
		if (iwt_rand(&rng) % 4)
			frame[17] = revs[iwt_rand(&rng) % 4];
		/* PD_Length mostly plausible, sometimes anything */
		if (iwt_rand(&rng) % 4) {
			uint16_t pl = (uint16_t)iwt_rand_range(&rng, 0, 600);
			frame[18] = (uint8_t)(pl >> 8);
			frame[19] = (uint8_t)pl;
		}
		uint16_t max_pd = (iwt_rand(&rng) % 3) ? 0 : (uint16_t)iwt_rand_range(&rng, 0, 700);
		unsigned fl = (unsigned)(iwt_rand(&rng) & 1);
		size_t len = (size_t)iwt_rand_range(&rng, 0, 20 + body);

		struct iw_mpa_frame g;
		enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
		ssize_t r = decode_exact(frame, len, kind, max_pd, fl, &g, &why);
		ck_assert(r == -1 || r == 0 || (r >= 20 && (size_t)r <= len));
		if (r == -1) {
			ck_assert_int_ne(why, IW_MPA_FE_NONE);
			ck_assert_ptr_nonnull(iw_mpa_frame_error_str(why));
			/* more bytes cannot repair it */
			enum iw_mpa_frame_error why2 = IW_MPA_FE_NONE;
			ck_assert_int_eq(iw_mpa_frame_decode(frame, 20 + body, kind, max_pd, fl, NULL,
							     &why2),
					 -1);
			ck_assert_int_eq(why2, why);
		} else if (r == 0) {
			/* every shorter prefix also needs more */
			if (len)
				ck_assert_int_eq(decode_exact(frame, len - 1, kind, max_pd, fl, NULL, NULL), 0);
		} else {
			uint16_t pl = (uint16_t)(frame[18] << 8 | frame[19]);
			ck_assert_int_eq(r, 20 + pl);
			ck_assert(g.rev == 1 || g.rev == 2);
			ck_assert_int_eq(g.kind, kind);
			ck_assert_uint_eq(g.pdata_len + (g.enhanced ? 4u : 0u), pl);
			ck_assert(g.ird <= 0x3FFF && g.ord <= 0x3FFF && g.rtr <= 7);
			ck_assert(!g.enhanced || g.rev == 2);
			/* same answer with extra bytes behind and in one shot */
			ck_assert_int_eq(iw_mpa_frame_decode(frame, 20 + body, kind, max_pd, fl, NULL,
							     NULL),
					 r);
			ck_assert_int_eq(decode_exact(frame, (size_t)r - 1, kind, max_pd, fl, NULL, NULL),
					 0);
			/* re-encoding gives the same bytes except reserved flag bits */
			if (!(g.reject && kind == IW_MPA_REQUEST)) {
				ck_assert_int_eq(iw_mpa_frame_encode(&g, bufa, sizeof(bufa), NULL), r);
				ck_assert_uint_eq(bufa[16], frame[16] & (uint8_t)~g.reserved);
				ck_assert_mem_eq(bufa + 17, frame + 17, (size_t)r - 17);
			}
		}
	}
}
END_TEST

START_TEST(error_strings)
{
	for (int e = IW_MPA_FE_NONE; e <= IW_MPA_FE_NO_SPACE; e++) {
		const char *s = iw_mpa_frame_error_str((enum iw_mpa_frame_error)e);
		ck_assert_ptr_nonnull(s);
		ck_assert_uint_gt(strlen(s), 3);
		for (int o = IW_MPA_FE_NONE; o < e; o++)
			ck_assert_str_ne(s, iw_mpa_frame_error_str((enum iw_mpa_frame_error)o));
	}
	ck_assert_ptr_nonnull(iw_mpa_frame_error_str((enum iw_mpa_frame_error)99));
}
END_TEST

static Suite *mpa_frame_suite(void)
{
	Suite *s = suite_create("mpa_frame");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, siw_rping_request_decodes);
	tcase_add_test(tc, encode_matches_siw_bytes);
	tcase_add_test(tc, encode_rev1_never_has_words);
	tcase_add_test(tc, roundtrip_matrix);
	tcase_add_test(tc, encode_errors);
	tcase_add_test(tc, encode_sends_reserved_as_zero);
	tcase_add_test(tc, pdata_limits);
	tcase_add_test(tc, decode_errors);
	tcase_add_test(tc, decode_nonstrict_records_reserved);
	tcase_add_test(tc, truncation_needs_more);
	tcase_add_test(tc, fuzz_random_frames);
	tcase_add_test(tc, error_strings);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(mpa_frame_suite());
}
