/* DDP (RFC 5041): header wire format, transmit segmentation, receive
 * validation (every Terminate cause), MSN/MO state and placement. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ddp/ddp_rx.h"
#include "ddp/ddp_tx.h"
#include "ddp/ddp_wire.h"
#include "iw_bytes.h"
#include "iwt_common.h"
#include "iwt_ddp.h"
#include "iwt_check.h"

#define CTRL(op) ((uint8_t)(0x40 | (op))) /* RDMAP v1 + opcode */
#define OP_WRITE 0
#define OP_READ_REQ 1
#define OP_READ_RESP 2
#define OP_SEND 3
#define OP_TERM 7

#define ck_assert_cause(c, l, e, code)                                                   \
	do {                                                                             \
		struct iw_term_cause c_ = (c);                                           \
		ck_assert_msg(c_.layer == (l) && c_.etype == (e) && c_.ecode == (code),  \
			      "cause (%u,%u,0x%02x), want (%u,%u,0x%02x)", c_.layer,     \
			      c_.etype, c_.ecode, (unsigned)(l), (unsigned)(e),          \
			      (unsigned)(code));                                         \
	} while (0)

/* ---------------------------------------------------------------- wire */

START_TEST(test_wire_tagged_known_bytes)
{
	/* The WRITE header siw copied into its Terminate (facts sheet sec. 3). */
	static const uint8_t want[14] = { 0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00, 0x00,
					  0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00 };
	struct iw_ddp_hdr h = { .tagged = true, .last = true, .ulp_ctrl = CTRL(OP_WRITE),
				.stag = 0xdeadbe00, .to = 0x1000 };
	uint8_t out[IW_DDP_UNTAGGED_HDR_LEN], raw[14];
	struct iw_ddp_hdr d;

	ck_assert_uint_eq(iw_ddp_hdr_encode(&h, out), 14);
	ck_assert_mem_eq(out, want, 14);
	ck_assert_uint_eq(iwt_ddp_tagged(raw, CTRL(OP_WRITE), 0xdeadbe00, 0x1000, true, 1), 14);
	ck_assert_mem_eq(raw, want, 14);
	ck_assert_uint_eq(iw_ddp_hdr_decode(want, sizeof(want), &d), 14);
	ck_assert(d.tagged && d.last);
	ck_assert_uint_eq(d.version, 1);
	ck_assert_uint_eq(d.rsvd, 0);
	ck_assert_uint_eq(d.ulp_ctrl, 0x40);
	ck_assert_uint_eq(d.stag, 0xdeadbe00);
	ck_assert_uint_eq(d.to, 0x1000);
}
END_TEST

START_TEST(test_wire_untagged_known_bytes)
{
	/* SEND, L=1, QN 0, MSN 1, MO 0 */
	static const uint8_t want[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0,
					  0,    0,    0, 1, 0, 0, 0, 0 };
	/* Send with Invalidate, middle segment, odd values in every field */
	static const uint8_t want2[18] = { 0x01, 0x44, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00,
					   0x00, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x01, 0x02, 0x03 };
	struct iw_ddp_hdr h = { .last = true, .ulp_ctrl = CTRL(OP_SEND), .msn = 1 };
	struct iw_ddp_hdr h2 = { .ulp_ctrl = CTRL(4), .ulp_word = 0x12345678,
				 .msn = 0x89abcdef, .mo = 0x00010203 };
	uint8_t out[IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr d;

	ck_assert_uint_eq(iw_ddp_hdr_encode(&h, out), 18);
	ck_assert_mem_eq(out, want, 18);
	ck_assert_uint_eq(iw_ddp_hdr_encode(&h2, out), 18);
	ck_assert_mem_eq(out, want2, 18);
	iwt_ddp_untagged(out, CTRL(4), 0x12345678, 0, 0x89abcdef, 0x00010203, false, 1);
	ck_assert_mem_eq(out, want2, 18);
	ck_assert_uint_eq(iw_ddp_hdr_decode(want2, 18, &d), 18);
	ck_assert(!d.tagged && !d.last);
	ck_assert_uint_eq(d.ulp_word, 0x12345678);
	ck_assert_uint_eq(d.qn, 0);
	ck_assert_uint_eq(d.msn, 0x89abcdef);
	ck_assert_uint_eq(d.mo, 0x00010203);
	ck_assert_uint_eq(d.stag, 0);
	ck_assert_uint_eq(d.to, 0);
}
END_TEST

START_TEST(test_wire_roundtrip_random)
{
	uint64_t s = iwt_seed();
	for (int i = 0; i < 5000; i++) {
		struct iw_ddp_hdr h, d;
		uint8_t out[IW_DDP_UNTAGGED_HDR_LEN + 4];
		size_t n;

		memset(&h, 0, sizeof(h));
		h.tagged = iwt_rand(&s) & 1;
		h.last = iwt_rand(&s) & 1;
		h.version = (uint8_t)iwt_rand(&s);     /* ignored by encode */
		h.rsvd = (uint8_t)iwt_rand(&s);        /* ignored by encode */
		h.ulp_ctrl = (uint8_t)iwt_rand(&s);
		if (h.tagged) {
			h.stag = (uint32_t)iwt_rand(&s);
			h.to = iwt_rand(&s);
		} else {
			h.ulp_word = (uint32_t)iwt_rand(&s);
			h.qn = (uint32_t)iwt_rand(&s);
			h.msn = (uint32_t)iwt_rand(&s);
			h.mo = (uint32_t)iwt_rand(&s);
		}
		n = iw_ddp_hdr_encode(&h, out);
		ck_assert_uint_eq(n, h.tagged ? 14 : 18);
		ck_assert_uint_eq(n, iw_ddp_hdr_len_ctrl(out[0]));
		ck_assert_uint_eq(out[0] & (IW_DDP_CTRL_RSVD | IW_DDP_CTRL_DV_MASK), 1);
		ck_assert_uint_eq(iw_ddp_hdr_decode(out, n, &d), n);
		h.version = 1;
		h.rsvd = 0;
		ck_assert(d.tagged == h.tagged && d.last == h.last);
		ck_assert_uint_eq(d.version, h.version);
		ck_assert_uint_eq(d.rsvd, 0);
		ck_assert_uint_eq(d.ulp_ctrl, h.ulp_ctrl);
		ck_assert_uint_eq(d.stag, h.stag);
		ck_assert_uint_eq(d.to, h.to);
		ck_assert_uint_eq(d.ulp_word, h.ulp_word);
		ck_assert_uint_eq(d.qn, h.qn);
		ck_assert_uint_eq(d.msn, h.msn);
		ck_assert_uint_eq(d.mo, h.mo);
	}
}
END_TEST

START_TEST(test_wire_decode_short_and_raw_bits)
{
	uint8_t buf[18] = { 0 };
	struct iw_ddp_hdr d;

	ck_assert_uint_eq(iw_ddp_hdr_decode(buf, 0, &d), 0);
	iwt_ddp_tagged(buf, 0x40, 1, 2, false, 1);
	for (size_t l = 1; l < 14; l++)
		ck_assert_uint_eq(iw_ddp_hdr_decode(buf, l, &d), 0);
	ck_assert_uint_eq(iw_ddp_hdr_decode(buf, 18, &d), 14); /* extra bytes are fine */
	iwt_ddp_untagged(buf, 0x43, 0, 0, 1, 0, true, 1);
	for (size_t l = 1; l < 18; l++)
		ck_assert_uint_eq(iw_ddp_hdr_decode(buf, l, &d), 0);
	/* Decode reports version and reserved bits as received. */
	buf[0] = 0x80 | 0x3C | 0x02;
	ck_assert_uint_eq(iw_ddp_hdr_decode(buf, 18, &d), 14);
	ck_assert(d.tagged && !d.last);
	ck_assert_uint_eq(d.version, 2);
	ck_assert_uint_eq(d.rsvd, 0x3C);
}
END_TEST

/* ---------------------------------------------------------------- transmit */

struct seg_check {
	const uint8_t *src; /* message bytes; slices must point into it */
	size_t len;
	uint8_t *concat; /* reassembled payload */
	size_t nseg;
};

/* Drive m to completion with the given mulpdu / iov_cap and check every
 * segment: header fields, size limits, zero-copy slices, L only at the end. */
static void run_tx(struct iw_ddp_tx_msg *m, size_t mulpdu, int iov_cap, struct seg_check *c)
{
	struct iovec iov[256];
	uint8_t hdr[IW_DDP_TX_MAX_HDR];
	size_t off = 0, htot = (m->tagged ? 14 : 18) + m->ulp_ext_len;
	const struct iw_ddp_tx_msg orig = *m;

	ck_assert_int_le(iov_cap, 256);
	c->nseg = 0;
	ck_assert(!iw_ddp_tx_done(m));
	while (!iw_ddp_tx_done(m)) {
		size_t hl = 0, pl = 0, sum = 0;
		struct iw_ddp_hdr d;
		int n = iw_ddp_tx_next(m, mulpdu, hdr, &hl, iov, iov_cap, &pl);

		ck_assert_int_ge(n, 0);
		ck_assert_int_le(n, iov_cap);
		ck_assert_uint_eq(hl, htot);
		ck_assert_uint_le(hl + pl, mulpdu);
		ck_assert_uint_eq(iw_ddp_hdr_decode(hdr, hl, &d), orig.tagged ? 14 : 18);
		ck_assert(d.tagged == orig.tagged);
		ck_assert_uint_eq(d.version, 1);
		ck_assert_uint_eq(d.rsvd, 0);
		ck_assert_uint_eq(d.ulp_ctrl, orig.ulp_ctrl);
		if (orig.tagged) {
			ck_assert_uint_eq(d.stag, orig.stag);
			ck_assert_uint_eq(d.to, orig.to + off);
		} else {
			ck_assert_uint_eq(d.ulp_word, orig.ulp_word);
			ck_assert_uint_eq(d.qn, orig.qn);
			ck_assert_uint_eq(d.msn, orig.msn);
			ck_assert_uint_eq(d.mo, off);
		}
		if (orig.ulp_ext_len)
			ck_assert_mem_eq(hdr + (orig.tagged ? 14 : 18), orig.ulp_ext, orig.ulp_ext_len);
		for (int i = 0; i < n; i++) {
			const uint8_t *b = iov[i].iov_base;
			ck_assert_uint_gt(iov[i].iov_len, 0);
			/* zero copy: a slice of the source, and in order */
			ck_assert_ptr_eq(b, c->src + off + sum);
			memcpy(c->concat + off + sum, b, iov[i].iov_len);
			sum += iov[i].iov_len;
		}
		ck_assert_uint_eq(sum, pl);
		off += pl;
		ck_assert(d.last == (off == c->len));
		ck_assert(d.last == iw_ddp_tx_done(m));
		if (!d.last)
			ck_assert_uint_gt(pl, 0);
		c->nseg++;
		ck_assert_uint_le(c->nseg, c->len + 1);
	}
	ck_assert_uint_eq(off, c->len);
	if (c->len)
		ck_assert_mem_eq(c->concat, c->src, c->len);
	/* Asking for more after the last segment is an error, not a new one. */
	{
		size_t hl, pl;
		ck_assert_int_eq(iw_ddp_tx_next(m, mulpdu, hdr, &hl, iov, iov_cap, &pl), -EINVAL);
	}
}

/* Split [0, len) of src into at most max_sge random pieces, with some
 * zero-length entries sprinkled in. Returns the entry count. */
static int random_sgl(uint64_t *s, const uint8_t *src, size_t len, struct iovec *sgl, int max_sge)
{
	int n = 0;
	size_t off = 0;

	while (off < len && n < max_sge - 2) {
		size_t left = len - off, piece;
		if (iwt_rand(s) % 8 == 0) {
			sgl[n++] = (struct iovec){ (void *)(src + off), 0 };
			continue;
		}
		piece = iwt_rand_range(s, 1, left < 4 ? left : left / 3 + 1);
		sgl[n++] = (struct iovec){ (void *)(src + off), piece };
		off += piece;
	}
	if (off < len)
		sgl[n++] = (struct iovec){ (void *)(src + off), len - off };
	if (iwt_rand(s) & 1)
		sgl[n++] = (struct iovec){ NULL, 0 }; /* trailing empty entry */
	return n;
}

START_TEST(test_tx_sizes)
{
	const size_t mulpdu = 1446; /* siw-like: 1448-byte FPDU minus ULPDU_LENGTH */
	uint64_t s = iwt_seed();
	for (int tagged = 0; tagged < 2; tagged++) {
		size_t room = mulpdu - (tagged ? 14 : 18);
		const size_t sizes[] = { 0, 1, 3, 4, room - 1, room, room + 1, 2 * room,
					 2 * room + 1, 7 * room - 3 };
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t len = sizes[k];
			uint8_t *src = malloc(len + 1), *cat = malloc(len + 1);
			struct iovec sgl[1] = { { src, len } };
			struct iw_ddp_tx_msg m;
			struct seg_check c = { src, len, cat, 0 };
			size_t want = len ? (len + room - 1) / room : 1;

			iwt_fill_random(&s, src, len);
			if (tagged)
				iw_ddp_tx_msg_tagged(&m, CTRL(OP_WRITE), 0x1234ab, 0x7f0000001000ull,
						     sgl, 1);
			else
				iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, IW_DDP_QN_SEND, 42, sgl,
						       1);
			ck_assert_uint_eq(m.len, len);
			run_tx(&m, mulpdu, 8, &c);
			ck_assert_msg(c.nseg == want, "len %zu: %zu segments, want %zu", len, c.nseg,
				      want);
			free(src);
			free(cat);
		}
	}
}
END_TEST

START_TEST(test_tx_zero_length)
{
	struct iovec empties[3] = { { NULL, 0 }, { NULL, 0 }, { NULL, 0 } };
	uint8_t hdr[IW_DDP_TX_MAX_HDR];
	struct iovec iov[1];
	struct iw_ddp_tx_msg m;
	struct iw_ddp_hdr d;
	size_t hl, pl;

	/* no sgl at all; no iovec room needed either */
	iw_ddp_tx_msg_tagged(&m, CTRL(OP_WRITE), 7, 99, NULL, 0);
	ck_assert(!iw_ddp_tx_done(&m));
	ck_assert_int_eq(iw_ddp_tx_next(&m, 14, hdr, &hl, NULL, 0, &pl), 0);
	ck_assert_uint_eq(hl, 14);
	ck_assert_uint_eq(pl, 0);
	ck_assert_uint_eq(iw_ddp_hdr_decode(hdr, hl, &d), 14);
	ck_assert(d.last && d.tagged);
	ck_assert_uint_eq(d.to, 99);
	ck_assert(iw_ddp_tx_done(&m));
	ck_assert_int_eq(iw_ddp_tx_next(&m, 14, hdr, &hl, NULL, 0, &pl), -EINVAL);

	/* only zero-length entries */
	iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, 0, 5, empties, 3);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 1000, hdr, &hl, iov, 1, &pl), 0);
	ck_assert_uint_eq(pl, 0);
	ck_assert_uint_eq(iw_ddp_hdr_decode(hdr, hl, &d), 18);
	ck_assert(d.last && !d.tagged);
	ck_assert_uint_eq(d.msn, 5);
	ck_assert_uint_eq(d.mo, 0);
	ck_assert(iw_ddp_tx_done(&m));

	/* mulpdu below the bare header: impossible even for an empty message */
	iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, 0, 5, NULL, 0);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 17, hdr, &hl, iov, 1, &pl), -EINVAL);
	ck_assert(!iw_ddp_tx_done(&m));
	ck_assert_int_eq(iw_ddp_tx_next(&m, 18, hdr, &hl, iov, 1, &pl), 0);
}
END_TEST

START_TEST(test_tx_mulpdu_too_small)
{
	uint8_t data[10] = { 0 }, hdr[IW_DDP_TX_MAX_HDR];
	struct iovec sgl[1] = { { data, sizeof(data) } }, iov[4];
	struct iw_ddp_tx_msg m;
	size_t hl, pl;

	iw_ddp_tx_msg_tagged(&m, CTRL(OP_WRITE), 1, 0, sgl, 1);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 14, hdr, &hl, iov, 4, &pl), -EINVAL);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 0, hdr, &hl, iov, 4, &pl), -EINVAL);
	ck_assert(!iw_ddp_tx_done(&m));
	ck_assert_uint_eq(m.off, 0);
	/* one payload byte per segment is the minimum that makes progress */
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(iw_ddp_tx_next(&m, 15, hdr, &hl, iov, 4, &pl), 1);
		ck_assert_uint_eq(pl, 1);
		ck_assert_ptr_eq(iov[0].iov_base, data + i);
	}
	ck_assert(iw_ddp_tx_done(&m));
}
END_TEST

START_TEST(test_tx_1mib_random_splits)
{
	const size_t len = 1u << 20;
	static const size_t mulpdus[] = { 15, 19, 100, 1446, 4096, 9000, 65535 };
	uint64_t s = iwt_seed();
	uint8_t *src = malloc(len), *cat = malloc(len);
	struct iovec *sgl = malloc(sizeof(*sgl) * 300);

	iwt_fill_random(&s, src, len);
	for (int round = 0; round < 14; round++) {
		int tagged = round & 1;
		size_t mulpdu = mulpdus[(round / 2) % 7];
		int nsge = random_sgl(&s, src, len, sgl, 300);
		int iov_cap = (int)iwt_rand_range(&s, 1, 64);
		struct iw_ddp_tx_msg m;
		struct seg_check c = { src, len, cat, 0 };
		size_t room;

		if (mulpdu < (tagged ? 15u : 19u))
			mulpdu = tagged ? 15 : 19; /* the smallest that makes progress */
		room = mulpdu - (tagged ? 14 : 18);
		if (mulpdu < 20) /* tiny MULPDUs take ages on 1 MiB: keep them short */
			c.len = 4099, sgl[0] = (struct iovec){ src, 4099 }, nsge = 1;
		memset(cat, 0, len);
		if (tagged)
			iw_ddp_tx_msg_tagged(&m, CTRL(OP_READ_RESP), 0xabcdef01,
					     UINT64_MAX - (len - 1), sgl, nsge);
		else
			iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, IW_DDP_QN_SEND, UINT32_MAX, sgl,
					       nsge);
		ck_assert_uint_eq(m.len, c.len);
		run_tx(&m, mulpdu, iov_cap, &c);
		/* iovec shortage may only add segments, never fewer than the budget allows */
		ck_assert_uint_ge(c.nseg, (c.len + room - 1) / room);
		if (iov_cap >= nsge)
			ck_assert_uint_eq(c.nseg, (c.len + room - 1) / room);
	}
	free(sgl);
	free(src);
	free(cat);
}
END_TEST

START_TEST(test_tx_iov_cap)
{
	uint8_t data[30], hdr[IW_DDP_TX_MAX_HDR];
	struct iovec sgl[12], iov[4];
	struct iw_ddp_tx_msg m, saved;
	struct iw_ddp_hdr d;
	size_t hl, pl;
	int n = 0;

	for (int i = 0; i < 30; i++)
		data[i] = (uint8_t)i;
	/* 10 x 3 bytes with two empty entries mixed in */
	for (int i = 0; i < 10; i++) {
		sgl[n++] = (struct iovec){ data + 3 * i, 3 };
		if (i == 1 || i == 6)
			sgl[n++] = (struct iovec){ data, 0 };
	}
	iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, 0, 1, sgl, n);
	ck_assert_uint_eq(m.len, 30);

	/* no iovec room: no progress, no state change */
	saved = m;
	ck_assert_int_eq(iw_ddp_tx_next(&m, 1000, hdr, &hl, iov, 0, &pl), -ENOBUFS);
	ck_assert_mem_eq(&m, &saved, sizeof(m));

	/* room for 4 slices: 12-byte segments ending at entry boundaries */
	for (int k = 0; k < 3; k++) {
		size_t want = k < 2 ? 12 : 6;
		int got = iw_ddp_tx_next(&m, 1000, hdr, &hl, iov, 4, &pl);
		ck_assert_int_eq(got, (int)(want / 3));
		ck_assert_uint_eq(pl, want);
		iw_ddp_hdr_decode(hdr, hl, &d);
		ck_assert_uint_eq(d.mo, 12 * k);
		ck_assert(d.last == (k == 2));
		for (int i = 0; i < got; i++) {
			ck_assert_ptr_eq(iov[i].iov_base, data + 12 * k + 3 * i);
			ck_assert_uint_eq(iov[i].iov_len, 3);
		}
	}
	ck_assert(iw_ddp_tx_done(&m));

	/* budget ends mid-entry, then the next segment resumes there */
	iw_ddp_tx_msg_tagged(&m, CTRL(OP_WRITE), 1, 1000, sgl, n);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 14 + 7, hdr, &hl, iov, 4, &pl), 3);
	ck_assert_uint_eq(pl, 7);
	ck_assert_uint_eq(iov[2].iov_len, 1);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 14 + 7, hdr, &hl, iov, 1, &pl), 1);
	ck_assert_ptr_eq(iov[0].iov_base, data + 7);
	ck_assert_uint_eq(pl, 2); /* cut short at the entry end by iov_cap 1 */
	iw_ddp_hdr_decode(hdr, hl, &d);
	ck_assert_uint_eq(d.to, 1007);
}
END_TEST

START_TEST(test_tx_ulp_ext)
{
	uint8_t body[28], big[40], hdr[IW_DDP_TX_MAX_HDR], data[100];
	struct iovec sgl[1] = { { data, sizeof(data) } }, iov[4];
	struct iw_ddp_tx_msg m;
	struct iw_ddp_hdr d;
	size_t hl, pl;

	for (int i = 0; i < 28; i++)
		body[i] = (uint8_t)(0xA0 + i);
	/* a Read Request: untagged QN 1, header + 28-byte body, no payload */
	iw_ddp_tx_msg_untagged(&m, CTRL(OP_READ_REQ), 0, IW_DDP_QN_READ_REQ, 1, NULL, 0);
	m.ulp_ext = body;
	m.ulp_ext_len = 28;
	ck_assert_int_eq(iw_ddp_tx_next(&m, 45, hdr, &hl, iov, 4, &pl), -EINVAL);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 46, hdr, &hl, iov, 4, &pl), 0);
	ck_assert_uint_eq(hl, 46);
	ck_assert_uint_eq(pl, 0);
	ck_assert_uint_eq(iw_ddp_hdr_decode(hdr, hl, &d), 18);
	ck_assert(d.last);
	ck_assert_uint_eq(d.qn, 1);
	ck_assert_mem_eq(hdr + 18, body, 28);

	/* the extension rides in every segment of a multi-segment message */
	{
		uint8_t cat[100];
		struct seg_check c = { data, sizeof(data), cat, 0 };
		for (int i = 0; i < 100; i++)
			data[i] = (uint8_t)i;
		iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, 0, 3, sgl, 1);
		m.ulp_ext = body;
		m.ulp_ext_len = 4;
		run_tx(&m, 18 + 4 + 30, 4, &c);
		ck_assert_uint_eq(c.nseg, 4);
	}

	/* header + extension beyond IW_DDP_TX_MAX_HDR, or a missing extension */
	memset(big, 0, sizeof(big));
	iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, 0, 1, sgl, 1);
	m.ulp_ext = big;
	m.ulp_ext_len = IW_DDP_TX_MAX_HDR - 18 + 1;
	ck_assert_int_eq(iw_ddp_tx_next(&m, 10000, hdr, &hl, iov, 4, &pl), -EINVAL);
	m.ulp_ext = NULL;
	m.ulp_ext_len = 4;
	ck_assert_int_eq(iw_ddp_tx_next(&m, 10000, hdr, &hl, iov, 4, &pl), -EINVAL);
}
END_TEST

START_TEST(test_tx_untagged_too_long)
{
#if SIZE_MAX > UINT32_MAX
	/* MO is 32 bits: refuse before touching the (fake, never read) memory. */
	static uint8_t one;
	struct iovec sgl[1] = { { &one, (size_t)UINT32_MAX + 1 } }, iov[4];
	uint8_t hdr[IW_DDP_TX_MAX_HDR];
	struct iw_ddp_tx_msg m;
	size_t hl, pl;

	iw_ddp_tx_msg_untagged(&m, CTRL(OP_SEND), 0, 0, 1, sgl, 1);
	ck_assert_int_eq(iw_ddp_tx_next(&m, 1446, hdr, &hl, iov, 4, &pl), -EINVAL);
#endif
}
END_TEST

/* ---------------------------------------------------------------- receive */

static struct iw_ddp_rx rx;
static struct iwt_ddp_env env;
static uint8_t mr_mem[4096];

#define PD 7
#define STAG_W 0x00012300u   /* index 0x123, key 0: WRITE allowed */
#define STAG_RR 0x00045605u  /* index 0x456, key 5: READ RESPONSE allowed */
#define STAG_OTHER 0x00078900u /* another PD */
#define MR_TO 0x10000ull

static void rx_setup(void)
{
	iwt_ddp_env_init(&env, PD);
	iw_ddp_rx_init(&rx, &iwt_ddp_rx_ops, &env);
	iwt_ddp_mr_add(&env, STAG_W, mr_mem, MR_TO, sizeof(mr_mem), 1u << OP_WRITE, PD);
	iwt_ddp_mr_add(&env, STAG_RR, mr_mem, MR_TO, sizeof(mr_mem), 1u << OP_READ_RESP, PD);
	iwt_ddp_mr_add(&env, STAG_OTHER, mr_mem, MR_TO, sizeof(mr_mem), 0xFFFF, PD + 1);
}

static int begin_tagged(uint8_t ulp_ctrl, uint32_t stag, uint64_t to, size_t len, uint8_t ver,
			struct iw_ddp_segment *seg, struct iw_term_cause *c)
{
	uint8_t h[14];
	iwt_ddp_tagged(h, ulp_ctrl, stag, to, true, ver);
	return iw_ddp_rx_begin(&rx, h, sizeof(h), len, seg, c);
}

static int begin_untagged(uint32_t qn, uint32_t msn, uint32_t mo, size_t len, bool last,
			  uint8_t ver, struct iw_ddp_segment *seg, struct iw_term_cause *c)
{
	uint8_t h[18];
	iwt_ddp_untagged(h, CTRL(OP_SEND), 0, qn, msn, mo, last, ver);
	return iw_ddp_rx_begin(&rx, h, sizeof(h), len, seg, c);
}

START_TEST(test_rx_init)
{
	rx_setup();
	for (int q = 0; q < IW_DDP_NUM_QN; q++) {
		ck_assert_uint_eq(rx.q[q].msn, 1);
		ck_assert_uint_eq(rx.q[q].mo, 0);
	}
	ck_assert_ptr_eq(rx.ops, &iwt_ddp_rx_ops);
	ck_assert_ptr_eq(rx.ctx, &env);
}
END_TEST

START_TEST(test_rx_stag_cause_map)
{
	ck_assert_cause(iw_ddp_stag_cause(IW_STAG_INVALID), 1, 1, 0x00);
	ck_assert_cause(iw_ddp_stag_cause(IW_STAG_BOUNDS), 1, 1, 0x01);
	ck_assert_cause(iw_ddp_stag_cause(IW_STAG_NOT_ASSOC), 1, 1, 0x02);
	ck_assert_cause(iw_ddp_stag_cause(IW_STAG_ACCESS), 0, 1, 0x02);
	ck_assert_cause(iw_ddp_stag_cause(IW_STAG_OK), 1, 0, 0x00);
	ck_assert_cause(iw_ddp_stag_cause((enum iw_stag_status)77), 1, 0, 0x00);
}
END_TEST

START_TEST(test_rx_bad_version)
{
	struct iw_ddp_segment seg;
	struct iw_term_cause c;
	struct iovec b = { mr_mem, 64 };
	uint8_t h[18];

	rx_setup();
	iwt_ddp_rq_post(&env, 0, &b, 1);
	for (uint8_t v = 0; v < 4; v++) {
		if (v == 1)
			continue;
		ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO, 8, v, &seg, &c), -1);
		ck_assert_cause(c, 1, 1, 0x04);
		ck_assert_int_eq(begin_untagged(0, 1, 0, 8, true, v, &seg, &c), -1);
		ck_assert_cause(c, 1, 2, 0x06);
		ck_assert_int_eq(seg.ndest, 0);
	}
	ck_assert_uint_eq(env.tagged_calls, 0);
	ck_assert_uint_eq(env.untagged_calls, 0);
	/* reserved control bits are ignored on receive */
	iwt_ddp_tagged(h, CTRL(OP_WRITE), STAG_W, MR_TO, true, 1);
	h[0] |= IW_DDP_CTRL_RSVD;
	ck_assert_int_eq(iw_ddp_rx_begin(&rx, h, 14, 8, &seg, &c), 0);
	iwt_ddp_untagged(h, CTRL(OP_SEND), 0, 0, 1, 0, true, 1);
	h[0] |= IW_DDP_CTRL_RSVD;
	ck_assert_int_eq(iw_ddp_rx_begin(&rx, h, 18, 8, &seg, &c), 0);
}
END_TEST

START_TEST(test_rx_short_header)
{
	struct iw_ddp_segment seg;
	struct iw_term_cause c;
	uint8_t h[18];

	rx_setup();
	ck_assert_int_eq(iw_ddp_rx_begin(&rx, NULL, 0, 0, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);
	iwt_ddp_tagged(h, CTRL(OP_WRITE), STAG_W, MR_TO, true, 1);
	for (size_t l = 0; l < 14; l++) {
		c = IW_TERM_CAUSE(9, 9, 9);
		ck_assert_int_eq(iw_ddp_rx_begin(&rx, h, l, 0, &seg, &c), -1);
		ck_assert_cause(c, 1, 0, 0x00);
	}
	iwt_ddp_untagged(h, CTRL(OP_SEND), 0, 0, 1, 0, true, 1);
	for (size_t l = 0; l < 18; l++) {
		c = IW_TERM_CAUSE(9, 9, 9);
		ck_assert_int_eq(iw_ddp_rx_begin(&rx, h, l, 0, &seg, &c), -1);
		ck_assert_cause(c, 1, 0, 0x00);
	}
	ck_assert_uint_eq(env.tagged_calls + env.untagged_calls, 0);
}
END_TEST

START_TEST(test_rx_tagged_errors)
{
	struct iw_ddp_segment seg;
	struct iw_term_cause c;
	struct iwt_mr *mr;

	rx_setup();
	/* unknown index, wrong key */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00999900, MR_TO, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x00);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W | 1, MR_TO, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x00);
	/* bounds: below base, past the end, overrunning the end */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO - 1, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x01);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO + 4096, 1, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x01);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO + 4090, 7, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x01);
	/* other protection domain */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_OTHER, MR_TO, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x02);
	/* access: WRITE into a READ RESPONSE-only region, and vice versa */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_RR, MR_TO, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 0, 1, 0x02);
	ck_assert_int_eq(begin_tagged(CTRL(OP_READ_RESP), STAG_W, MR_TO, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 0, 1, 0x02);
	ck_assert_int_eq(seg.ndest, 0);
	/* invalidated */
	mr = &env.mr[0];
	mr->valid = false;
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x00);
	mr->valid = true;

	/* success: exact tail of the region */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO + 4090, 6, 1, &seg, &c), 0);
	ck_assert_int_eq(seg.ndest, 1);
	ck_assert_ptr_eq(seg.dest[0].iov_base, mr_mem + 4090);
	ck_assert_uint_eq(seg.dest[0].iov_len, 6);
	ck_assert_uint_eq(seg.payload_len, 6);
	ck_assert(seg.hdr.tagged && seg.hdr.last);
	ck_assert_uint_eq(seg.hdr.stag, STAG_W);
	ck_assert_uint_eq(env.last_tagged_len, 6);
	ck_assert_int_eq(begin_tagged(CTRL(OP_READ_RESP), STAG_RR, MR_TO, 4096, 1, &seg, &c), 0);
	ck_assert_ptr_eq(seg.dest[0].iov_base, mr_mem);
	ck_assert_uint_eq(seg.dest[0].iov_len, 4096);
}
END_TEST

static enum iw_stag_status lie_ok(void *ctx, uint32_t stag, uint64_t to, size_t len, uint8_t uc,
				  uint8_t **dest)
{
	(void)ctx, (void)stag, (void)to, (void)len, (void)uc, (void)dest;
	return IW_STAG_OK; /* but no destination */
}

START_TEST(test_rx_ops_missing)
{
	static const struct iw_ddp_rx_ops none = { NULL, NULL };
	static const struct iw_ddp_rx_ops liar = { lie_ok, NULL };
	struct iw_ddp_segment seg;
	struct iw_term_cause c;

	iw_ddp_rx_init(&rx, &none, NULL);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 1, 0, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);
	iw_ddp_rx_init(&rx, &liar, NULL);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 1, 0, 8, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 1, 0, 0, 1, &seg, &c), 0);
	ck_assert_int_eq(seg.ndest, 0);
}
END_TEST

START_TEST(test_rx_tagged_zero_length)
{
	struct iw_ddp_segment seg;
	struct iw_term_cause c;

	rx_setup();
	env.last_tagged_len = 99;
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00bad000, MR_TO, 0, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x00);
	ck_assert_uint_eq(env.tagged_calls, 1);
	ck_assert_uint_eq(env.last_tagged_len, 0);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_RR, MR_TO, 0, 1, &seg, &c), -1);
	ck_assert_cause(c, 0, 1, 0x02);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, MR_TO + 4096, 0, 1, &seg, &c), 0);
	ck_assert_int_eq(seg.ndest, 0);
	ck_assert_uint_eq(seg.payload_len, 0);
	ck_assert(iw_ddp_rx_end(&rx, &seg));
}
END_TEST

START_TEST(test_rx_to_wrap)
{
	const uint64_t top = UINT64_MAX - 4095; /* region [2^64 - 4096, 2^64) */
	struct iw_ddp_segment seg;
	struct iw_term_cause c;

	rx_setup();
	iwt_ddp_mr_add(&env, 0x00aaaa00, mr_mem, top, 4096, 1u << OP_WRITE, PD);
	/* last byte exactly at 2^64 - 1: no wrap */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00aaaa00, UINT64_MAX - 15, 16, 1, &seg, &c),
			 0);
	ck_assert_ptr_eq(seg.dest[0].iov_base, mr_mem + 4080);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00aaaa00, UINT64_MAX, 1, 1, &seg, &c), 0);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00aaaa00, UINT64_MAX, 0, 1, &seg, &c), 0);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00aaaa00, top, 4096, 1, &seg, &c), 0);
	/* one byte more wraps; caught before the lookup, for any STag */
	env.tagged_calls = 0;
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00aaaa00, UINT64_MAX - 15, 17, 1, &seg, &c),
			 -1);
	ck_assert_cause(c, 1, 1, 0x03);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00aaaa00, UINT64_MAX, 2, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x03);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), 0x00bad000, UINT64_MAX - 1, 1000, 1, &seg, &c),
			 -1);
	ck_assert_cause(c, 1, 1, 0x03);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, 2, SIZE_MAX, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x03);
	ck_assert_uint_eq(env.tagged_calls, 0);
	/* [1, 2^64) and [0, 2^64 - 1) do not wrap: bounds decide */
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, 1, SIZE_MAX, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x01);
	ck_assert_int_eq(begin_tagged(CTRL(OP_WRITE), STAG_W, 0, SIZE_MAX, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 1, 0x01);
}
END_TEST

static int fail_with_qn_cause(void *ctx, uint32_t qn, uint32_t msn, const struct iovec **sgl,
			      int *nsge, struct iw_term_cause *cause)
{
	(void)ctx, (void)qn, (void)msn, (void)sgl, (void)nsge;
	*cause = IW_TERM_CAUSE(1, 2, 0x01);
	return -1;
}

START_TEST(test_rx_untagged_errors)
{
	uint8_t buf[64];
	struct iovec b = { buf, sizeof(buf) };
	struct iw_ddp_segment seg;
	struct iw_term_cause c;

	rx_setup();
	/* invalid QN (0..3 exist: RFC 5040's three and RFC 7306's QN 3) */
	ck_assert_int_eq(begin_untagged(4, 1, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x01);
	ck_assert_int_eq(begin_untagged(UINT32_MAX, 1, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x01);
	ck_assert(!iw_ddp_rx_end(&rx, &seg)); /* harmless on a rejected QN */
	/* MSN out of range: behind, ahead */
	ck_assert_int_eq(begin_untagged(0, 0, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x03);
	ck_assert_int_eq(begin_untagged(0, 2, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x03);
	ck_assert_uint_eq(env.untagged_calls, 0);
	/* no buffer posted */
	for (uint32_t q = 0; q < IW_DDP_NUM_QN; q++) {
		ck_assert_int_eq(begin_untagged(q, 1, 0, 8, true, 1, &seg, &c), -1);
		ck_assert_cause(c, 1, 2, 0x02);
	}
	/* zero-length SEND with no buffer: still no buffer */
	ck_assert_int_eq(begin_untagged(0, 1, 0, 0, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x02);
	/* a lookup that names its own cause */
	env.fail_untagged = true;
	env.fail_sets_cause = true;
	env.fail_cause = IW_TERM_CAUSE(0, 2, 0x07);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 0, 2, 0x07);
	env.fail_sets_cause = false;
	ck_assert_int_eq(begin_untagged(0, 1, 0, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x02);
	env.fail_untagged = false;
	{
		static const struct iw_ddp_rx_ops ops = { NULL, fail_with_qn_cause };
		struct iw_ddp_rx r2;
		uint8_t h[18];
		iw_ddp_rx_init(&r2, &ops, NULL);
		iwt_ddp_untagged(h, CTRL(OP_SEND), 0, 0, 1, 0, true, 1);
		ck_assert_int_eq(iw_ddp_rx_begin(&r2, h, 18, 1, &seg, &c), -1);
		ck_assert_cause(c, 1, 2, 0x01);
	}

	iwt_ddp_rq_post(&env, 0, &b, 1);
	/* MO must be where the message left off (0 for a new message) */
	ck_assert_int_eq(begin_untagged(0, 1, 4, 8, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x04);
	/* message too long: one byte over, and a length that would overflow */
	ck_assert_int_eq(begin_untagged(0, 1, 0, 65, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x05);
	ck_assert_int_eq(begin_untagged(0, 1, 0, SIZE_MAX, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x05);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 40, false, 1, &seg, &c), 0);
	iw_ddp_rx_end(&rx, &seg);
	ck_assert_int_eq(begin_untagged(0, 1, 40, 25, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x05);
	ck_assert_int_eq(begin_untagged(0, 1, 39, 1, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x04);
	/* exactly filling the buffer is fine */
	ck_assert_int_eq(begin_untagged(0, 1, 40, 24, true, 1, &seg, &c), 0);
	ck_assert_int_eq(seg.ndest, 1);
	ck_assert_ptr_eq(seg.dest[0].iov_base, buf + 40);
	ck_assert_uint_eq(seg.dest[0].iov_len, 24);
	ck_assert(iw_ddp_rx_end(&rx, &seg));
	ck_assert_uint_eq(rx.q[0].msn, 2);
	ck_assert_uint_eq(rx.q[0].mo, 0);
	/* the completed MSN is now behind */
	ck_assert_int_eq(begin_untagged(0, 1, 0, 1, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x03);
}
END_TEST

START_TEST(test_rx_untagged_bad_buffer)
{
	static uint8_t mem[64];
	struct iovec many[IW_DDP_MAX_SGE + 1];
	struct iovec nullb = { NULL, 8 };
	struct iw_ddp_segment seg;
	struct iw_term_cause c;

	for (int i = 0; i <= IW_DDP_MAX_SGE; i++)
		many[i] = (struct iovec){ mem + i, 1 };
	rx_setup();
	iwt_ddp_rq_post(&env, 0, many, IW_DDP_MAX_SGE + 1);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 1, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);

	rx_setup();
	iwt_ddp_rq_post(&env, 0, many, IW_DDP_MAX_SGE); /* the limit itself works */
	ck_assert_int_eq(begin_untagged(0, 1, 0, IW_DDP_MAX_SGE, true, 1, &seg, &c), 0);
	ck_assert_int_eq(seg.ndest, IW_DDP_MAX_SGE);

	rx_setup();
	iwt_ddp_rq_post(&env, 0, many, -1);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 0, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);

	rx_setup();
	iwt_ddp_rq_post(&env, 0, &nullb, 1);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 1, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 0, 0x00);

	/* an empty buffer takes a zero-length message only */
	rx_setup();
	iwt_ddp_rq_post(&env, 0, NULL, 0);
	iwt_ddp_rq_post(&env, 0, NULL, 0);
	ck_assert_int_eq(begin_untagged(0, 1, 0, 0, true, 1, &seg, &c), 0);
	ck_assert_int_eq(seg.ndest, 0);
	ck_assert(iw_ddp_rx_end(&rx, &seg));
	ck_assert_int_eq(begin_untagged(0, 2, 0, 1, true, 1, &seg, &c), -1);
	ck_assert_cause(c, 1, 2, 0x05);
}
END_TEST

/* Check seg->dest is exactly the slice [mo, mo + len) of sgl. */
static void check_dest(const struct iovec *sgl, int nsge, size_t mo, size_t len,
		       const struct iw_ddp_segment *seg)
{
	size_t sum = 0;
	for (int k = 0; k < seg->ndest; k++) {
		const uint8_t *p = seg->dest[k].iov_base;
		size_t l = seg->dest[k].iov_len, base = 0;
		int hit = 0;
		ck_assert_uint_gt(l, 0);
		/* within one entry, at the right logical offset */
		for (int i = 0; i < nsge; i++) {
			const uint8_t *b = sgl[i].iov_base;
			if (sgl[i].iov_len && p >= b && p + l <= b + sgl[i].iov_len &&
			    base + (size_t)(p - b) == mo + sum) {
				hit = 1;
				break;
			}
			base += sgl[i].iov_len;
		}
		ck_assert_msg(hit, "dest[%d] is not the slice at %zu", k, mo + sum);
		sum += l;
	}
	ck_assert_uint_eq(sum, len);
	ck_assert_int_le(seg->ndest, IW_DDP_MAX_SGE);
}

START_TEST(test_rx_multi_sge_offsets)
{
	static uint8_t mem[80];
	const size_t lens[] = { 5, 0, 7, 1, 13, 0, 20, 2 };
	struct iovec sgl[8];
	size_t total = 0;
	struct iw_ddp_segment seg;
	struct iw_term_cause c;

	for (int i = 0; i < 8; i++) {
		/* gaps between entries so a slice running past one shows */
		sgl[i] = (struct iovec){ mem + total + (size_t)i, lens[i] };
		total += lens[i];
	}
	rx_setup();
	iwt_ddp_rq_post(&env, 0, sgl, 8);
	for (size_t mo = 0; mo <= total; mo++) {
		for (size_t len = 0; len <= total - mo + 1; len++) {
			int rc;
			rx.q[0].mo = (uint32_t)mo; /* as if earlier segments placed mo bytes */
			rc = begin_untagged(0, 1, (uint32_t)mo, len, false, 1, &seg, &c);
			if (mo + len > total) {
				ck_assert_int_eq(rc, -1);
				ck_assert_cause(c, 1, 2, 0x05);
				ck_assert_int_eq(seg.ndest, 0);
				continue;
			}
			ck_assert_int_eq(rc, 0);
			check_dest(sgl, 8, mo, len, &seg);
		}
	}
}
END_TEST

/* Send a message through tx on queue qn and receive it segment by segment
 * into the posted buffer; returns the number of segments. */
static size_t xfer_untagged(uint32_t qn, const uint8_t *src, size_t len, const struct iovec *dst,
			    int ndst, size_t mulpdu, int iov_cap)
{
	struct iovec sgl[1] = { { (void *)src, len } }, iov[64];
	uint8_t hdr[IW_DDP_TX_MAX_HDR];
	struct iw_ddp_tx_msg m;
	size_t nseg = 0;
	uint32_t msn = rx.q[qn].msn;

	iw_ddp_tx_msg_untagged(&m, CTRL(qn == 2 ? OP_TERM : OP_SEND), 0, qn, msn, sgl, 1);
	while (!iw_ddp_tx_done(&m)) {
		struct iw_ddp_segment seg;
		struct iw_term_cause c;
		size_t hl, pl, off = 0;
		uint32_t mo_before = rx.q[qn].mo;
		int n = iw_ddp_tx_next(&m, mulpdu, hdr, &hl, iov, iov_cap, &pl);

		ck_assert_int_ge(n, 0);
		ck_assert_int_eq(iw_ddp_rx_begin(&rx, hdr, hl, pl, &seg, &c), 0);
		check_dest(dst, ndst, mo_before, pl, &seg);
		for (int k = 0; k < seg.ndest; k++) {
			size_t l = seg.dest[k].iov_len;
			/* gather from the tx slices into the rx slices */
			for (size_t done = 0; done < l;) {
				size_t srcpos = off + done, acc = 0;
				int j = 0;
				while (acc + iov[j].iov_len <= srcpos)
					acc += iov[j++].iov_len;
				size_t avail = iov[j].iov_len - (srcpos - acc), step = l - done;
				if (avail < step)
					step = avail;
				memcpy((uint8_t *)seg.dest[k].iov_base + done,
				       (uint8_t *)iov[j].iov_base + (srcpos - acc), step);
				done += step;
			}
			off += l;
		}
		nseg++;
		ck_assert(iw_ddp_rx_end(&rx, &seg) == iw_ddp_tx_done(&m));
		if (!iw_ddp_tx_done(&m)) {
			ck_assert_uint_eq(rx.q[qn].msn, msn);
			ck_assert_uint_eq(rx.q[qn].mo, mo_before + pl);
		}
	}
	ck_assert_uint_eq(rx.q[qn].msn, msn + 1);
	ck_assert_uint_eq(rx.q[qn].mo, 0);
	iwt_ddp_rq_consume(&env, qn);
	return nseg;
}

START_TEST(test_rx_msn_mo_sequences)
{
	enum { MSGS = 150, MAXLEN = 3000 };
	uint64_t s = iwt_seed();
	static uint8_t src[MAXLEN], dstmem[IW_DDP_NUM_QN][MAXLEN + 64];
	struct iovec dsgl[IW_DDP_NUM_QN][6];
	uint32_t want_msn[IW_DDP_NUM_QN] = { 1, 1, 1 };

	rx_setup();
	for (int i = 0; i < MSGS * IW_DDP_NUM_QN; i++) {
		uint32_t qn = (uint32_t)iwt_rand_range(&s, 0, IW_DDP_NUM_QN - 1);
		size_t len = (size_t)iwt_rand_range(&s, 0, MAXLEN);
		size_t mulpdu = (size_t)iwt_rand_range(&s, 19, 700);
		int nd = 0;
		size_t cut = 0;

		if (iwt_rand(&s) % 4 == 0)
			len = 0;
		/* a receive buffer in up to 6 random pieces, with spare room */
		while (nd < 5) {
			size_t piece = (size_t)iwt_rand_range(&s, 0, (MAXLEN + 64 - cut) / 2);
			dsgl[qn][nd++] = (struct iovec){ dstmem[qn] + cut, piece };
			cut += piece;
		}
		dsgl[qn][nd++] = (struct iovec){ dstmem[qn] + cut, MAXLEN + 64 - cut };
		memset(dstmem[qn], 0, sizeof(dstmem[qn]));
		iwt_fill_random(&s, src, len);
		ck_assert_int_eq(iwt_ddp_rq_post(&env, qn, dsgl[qn], nd), 0);
		ck_assert_uint_eq(rx.q[qn].msn, want_msn[qn]);
		xfer_untagged(qn, src, len, dsgl[qn], nd, mulpdu, (int)iwt_rand_range(&s, 1, 64));
		want_msn[qn]++;
		if (len)
			ck_assert_mem_eq(dstmem[qn], src, len); /* pieces are contiguous */
	}
	for (int q = 0; q < IW_DDP_NUM_QN; q++)
		ck_assert_uint_eq(rx.q[q].msn, want_msn[q]);
}
END_TEST

START_TEST(test_rx_msn_wraps)
{
	uint8_t src[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, dst[10];
	struct iovec d = { dst, sizeof(dst) };

	rx_setup();
	rx.q[1].msn = UINT32_MAX;
	env.rq[1].base_msn = UINT32_MAX;
	for (int i = 0; i < 3; i++) {
		iwt_ddp_rq_post(&env, 1, &d, 1);
		xfer_untagged(1, src, sizeof(src), &d, 1, 18 + 4, 4);
		ck_assert_mem_eq(dst, src, sizeof(src));
	}
	ck_assert_uint_eq(rx.q[1].msn, 2);
	ck_assert_uint_eq(rx.q[0].msn, 1);
	ck_assert_uint_eq(rx.q[2].msn, 1);
}
END_TEST

START_TEST(test_rx_tagged_roundtrip)
{
	const size_t len = 1u << 20;
	uint64_t s = iwt_seed();
	uint8_t *src = malloc(len), *dst = calloc(1, len + 2);
	struct iovec *sgl = malloc(sizeof(*sgl) * 200), iov[16];
	uint8_t hdr[IW_DDP_TX_MAX_HDR];
	struct iw_ddp_tx_msg m;
	int nsge, nseg = 0;

	iwt_fill_random(&s, src, len);
	nsge = random_sgl(&s, src, len, sgl, 200);
	rx_setup();
	iwt_ddp_mr_add(&env, 0x00bbbb00, dst + 1, 0x4000000000ull, len, 1u << OP_READ_RESP, PD);
	iw_ddp_tx_msg_tagged(&m, CTRL(OP_READ_RESP), 0x00bbbb00, 0x4000000000ull, sgl, nsge);
	while (!iw_ddp_tx_done(&m)) {
		struct iw_ddp_segment seg;
		struct iw_term_cause c;
		size_t hl, pl, off = 0;
		int n = iw_ddp_tx_next(&m, 1446, hdr, &hl, iov, 16, &pl);

		ck_assert_int_ge(n, 0);
		ck_assert_int_eq(iw_ddp_rx_begin(&rx, hdr, hl, pl, &seg, &c), 0);
		ck_assert_int_eq(seg.ndest, 1);
		ck_assert_uint_eq(seg.dest[0].iov_len, pl);
		for (int i = 0; i < n; i++) {
			memcpy((uint8_t *)seg.dest[0].iov_base + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		ck_assert(iw_ddp_rx_end(&rx, &seg) == iw_ddp_tx_done(&m));
		nseg++;
	}
	ck_assert_int_ge(nseg, (int)(len / 1432));
	ck_assert_mem_eq(dst + 1, src, len);
	ck_assert_uint_eq(dst[0], 0);
	ck_assert_uint_eq(dst[len + 1], 0);
	/* tagged traffic leaves the untagged queues alone */
	for (int q = 0; q < IW_DDP_NUM_QN; q++) {
		ck_assert_uint_eq(rx.q[q].msn, 1);
		ck_assert_uint_eq(rx.q[q].mo, 0);
	}
	free(src);
	free(dst);
	free(sgl);
}
END_TEST

/* iw_ddp_rx_begin_decoded on a header the caller decoded gives exactly
 * what iw_ddp_rx_begin gives on its bytes. */
START_TEST(test_rx_begin_decoded_same)
{
	uint64_t s = iwt_seed();
	static uint8_t rbuf[100];
	struct iovec rsgl[3] = { { rbuf, 30 }, { rbuf + 30, 0 }, { rbuf + 40, 60 } };
	int ok = 0;

	for (int i = 0; i < 20000; i++) {
		uint8_t h[18];
		struct iw_ddp_segment a, b;
		struct iw_ddp_hdr d;
		struct iw_term_cause ca = IW_TERM_CAUSE_NONE, cb = IW_TERM_CAUSE_NONE;
		size_t pl = (size_t)iwt_rand_range(&s, 0, 120);
		int ra, rb;

		iwt_fill_random(&s, h, sizeof(h));
		if (iwt_rand(&s) & 1)
			h[0] = (uint8_t)((h[0] & 0xC0) | 1);
		if (iwt_rand(&s) & 1) {
			if (h[0] & 0x80) {
				iw_put_be32(h + 2, iwt_rand(&s) & 1 ? STAG_W : STAG_RR);
				iw_put_be64(h + 6, MR_TO + iwt_rand(&s) % 5000);
			} else {
				iw_put_be32(h + 6, (uint32_t)(iwt_rand(&s) % 4));
				iw_put_be32(h + 10, 1);
				iw_put_be32(h + 14, (uint32_t)(iwt_rand(&s) % 3 == 0 ? iwt_rand(&s) % 50 : 0));
			}
		}
		ck_assert_uint_gt(iw_ddp_hdr_decode(h, sizeof(h), &d), 0);
		memset(&a, 0xA5, sizeof(a));
		memset(&b, 0x5A, sizeof(b));
		rx_setup();
		for (int q = 0; q < IW_DDP_NUM_QN; q++)
			iwt_ddp_rq_post(&env, (uint32_t)q, rsgl, 3);
		ra = iw_ddp_rx_begin(&rx, h, sizeof(h), pl, &a, &ca);
		rx_setup();
		for (int q = 0; q < IW_DDP_NUM_QN; q++)
			iwt_ddp_rq_post(&env, (uint32_t)q, rsgl, 3);
		rb = iw_ddp_rx_begin_decoded(&rx, &d, pl, &b, &cb);
		ck_assert_int_eq(ra, rb);
		ck_assert_int_eq(a.ndest, b.ndest);
		ck_assert_mem_eq(&a.hdr, &b.hdr, sizeof(a.hdr));
		if (ra != 0) {
			ck_assert_uint_eq(ca.layer, cb.layer);
			ck_assert_uint_eq(ca.etype, cb.etype);
			ck_assert_uint_eq(ca.ecode, cb.ecode);
			continue;
		}
		ok++;
		ck_assert_uint_eq(a.payload_len, b.payload_len);
		for (int k = 0; k < a.ndest; k++) {
			ck_assert_ptr_eq(a.dest[k].iov_base, b.dest[k].iov_base);
			ck_assert_uint_eq(a.dest[k].iov_len, b.dest[k].iov_len);
		}
	}
	ck_assert_int_gt(ok, 100); /* both outcomes were exercised */
}
END_TEST

START_TEST(test_rx_random_headers)
{
	/* Hostile headers: any outcome but a crash, and success only with a
	 * destination inside the registered memory or posted buffer. */
	uint64_t s = iwt_seed();
	static uint8_t rbuf[100];
	struct iovec rsgl[3] = { { rbuf, 30 }, { rbuf + 30, 0 }, { rbuf + 40, 60 } };

	rx_setup();
	for (int q = 0; q < IW_DDP_NUM_QN; q++)
		iwt_ddp_rq_post(&env, (uint32_t)q, rsgl, 3);
	for (int i = 0; i < 200000; i++) {
		uint8_t h[18];
		struct iw_ddp_segment seg;
		struct iw_term_cause c;
		size_t hl = (size_t)iwt_rand_range(&s, 0, 18);
		size_t pl = (size_t)(iwt_rand(&s) % 5 == 0 ? iwt_rand(&s) : iwt_rand_range(&s, 0, 120));

		iwt_fill_random(&s, h, sizeof(h));
		if (iwt_rand(&s) & 1)
			h[0] = (uint8_t)((h[0] & 0xC0) | 1);
		if (iwt_rand(&s) & 1) { /* plausible fields more often */
			if (h[0] & 0x80) {
				iw_put_be32(h + 2, env.mr[iwt_rand(&s) % 3].stag);
				iw_put_be64(h + 6, MR_TO + iwt_rand(&s) % 5000);
			} else {
				iw_put_be32(h + 6, (uint32_t)(iwt_rand(&s) % 4));
				iw_put_be32(h + 10, 1);
				iw_put_be32(h + 14, 0);
			}
		}
		if (iw_ddp_rx_begin(&rx, h, hl, pl, &seg, &c) != 0) {
			ck_assert_int_eq(seg.ndest, 0);
			ck_assert_uint_le(c.layer, 2);
			continue;
		}
		if (seg.hdr.tagged) {
			ck_assert_int_le(seg.ndest, 1);
			if (seg.ndest) {
				uint8_t *p = seg.dest[0].iov_base;
				ck_assert(p >= mr_mem && p + seg.dest[0].iov_len <= mr_mem + 4096);
			}
		} else {
			check_dest(rsgl, 3, rx.q[seg.hdr.qn].mo, pl, &seg);
		}
	}
}
END_TEST

static Suite *ddp_suite(void)
{
	Suite *s = suite_create("ddp");
	TCase *w = tcase_create("wire"), *t = tcase_create("tx"), *r = tcase_create("rx");

	tcase_add_test(w, test_wire_tagged_known_bytes);
	tcase_add_test(w, test_wire_untagged_known_bytes);
	tcase_add_test(w, test_wire_roundtrip_random);
	tcase_add_test(w, test_wire_decode_short_and_raw_bits);
	suite_add_tcase(s, w);

	tcase_add_test(t, test_tx_sizes);
	tcase_add_test(t, test_tx_zero_length);
	tcase_add_test(t, test_tx_mulpdu_too_small);
	tcase_add_test(t, test_tx_1mib_random_splits);
	tcase_add_test(t, test_tx_iov_cap);
	tcase_add_test(t, test_tx_ulp_ext);
	tcase_add_test(t, test_tx_untagged_too_long);
	suite_add_tcase(s, t);

	tcase_add_test(r, test_rx_init);
	tcase_add_test(r, test_rx_stag_cause_map);
	tcase_add_test(r, test_rx_bad_version);
	tcase_add_test(r, test_rx_short_header);
	tcase_add_test(r, test_rx_tagged_errors);
	tcase_add_test(r, test_rx_ops_missing);
	tcase_add_test(r, test_rx_begin_decoded_same);
	tcase_add_test(r, test_rx_tagged_zero_length);
	tcase_add_test(r, test_rx_to_wrap);
	tcase_add_test(r, test_rx_untagged_errors);
	tcase_add_test(r, test_rx_untagged_bad_buffer);
	tcase_add_test(r, test_rx_multi_sge_offsets);
	tcase_add_test(r, test_rx_msn_mo_sequences);
	tcase_add_test(r, test_rx_msn_wraps);
	tcase_add_test(r, test_rx_tagged_roundtrip);
	tcase_add_test(r, test_rx_random_headers);
	suite_add_tcase(s, r);
	return s;
}

int main(void)
{
	return iwt_run_suite(ddp_suite());
}
