/* FPDU builder (mpa_tx) and deframer (mpa_rx): byte-exact frames, the
 * reference encoder cross-check, random chunkings in copy and zero-copy
 * mode, and every error class. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iw_bytes.h"
#include "iwt_common.h"
#include "iwt_fpdu.h"
#include "mpa/crc32c.h"
#include "mpa/mpa_rx.h"
#include "mpa/mpa_tx.h"
#include "iwt_check.h"

#define CAUSE_CRC IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_CRC)
#define CAUSE_LEN IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_MARKER_LEN)

static uint64_t rng;

static void setup(void)
{
	rng = iwt_seed();
}

static void rx_init(struct iw_mpa_rx *rx, bool crc, bool markers, uint16_t max)
{
	struct iw_mpa_rx_config cfg = {
		.crc = crc, .markers = markers, .max_ulpdu = max, .ulp_lens = iwt_fpdu_ulp_lens
	};
	iw_mpa_rx_init(rx, &cfg);
}

/* A tagged (14-byte) or untagged (18-byte) header the test callback likes. */
static size_t make_hdr(uint64_t *r, uint8_t *h, bool tagged, uint8_t opcode)
{
	size_t n = tagged ? 14 : 18;

	iwt_fill_random(r, h, n);
	h[0] = (uint8_t)((tagged ? 0x80 : 0x00) | (h[0] & 0x40) | 0x01);
	h[1] = (uint8_t)(0x40 | opcode);
	return n;
}

/* Rewrite the CRC of a flat FPDU (covers all preceding bytes). */
static void fix_crc(uint8_t *fpdu, size_t wire_len)
{
	iw_crc32c_put_wire(fpdu + wire_len - 4, iw_crc32c(fpdu, wire_len - 4));
}

/* ---------- random streams ---------- */

struct gen {
	struct iwt_fpdu_msg *msgs;
	int n;
	uint8_t *hdrs;
	uint8_t *payload;
	size_t wire_cap;
};

static size_t pick_size(uint64_t *r, size_t lo)
{
	uint64_t k = iwt_rand(r) % 100;
	size_t s;

	if (k < 70)
		s = (size_t)iwt_rand_range(r, 2, 600);
	else if (k < 92)
		s = (size_t)iwt_rand_range(r, 600, 9000);
	else
		s = (size_t)iwt_rand_range(r, 9000, 65535);
	return s < lo ? lo : s;
}

/* rx_valid: headers follow iwt_fpdu_ulp_lens; else any header 0..64
 * bytes. Sizes (ULPDU) 2..65535; the first is 65535, the second minimal. */
static void gen_stream(uint64_t *r, int n, bool rx_valid, size_t max_size, struct gen *g)
{
	size_t *sizes = malloc(sizeof(*sizes) * (size_t)n);
	size_t total = 0, off = 0;

	ck_assert_ptr_nonnull(sizes);
	g->n = n;
	g->msgs = calloc((size_t)n, sizeof(*g->msgs));
	g->hdrs = malloc((size_t)n * 64);
	ck_assert_ptr_nonnull(g->msgs);
	ck_assert_ptr_nonnull(g->hdrs);
	for (int i = 0; i < n; i++) {
		uint8_t *h = g->hdrs + 64 * i;
		size_t hl = 0, lo = 2;

		if (rx_valid) {
			bool tagged = iwt_rand(r) % 2;
			uint8_t op = (uint8_t)(iwt_rand(r) % 8);

			hl = make_hdr(r, h, tagged, op);
			lo = (!tagged && op == 1) ? 46 : hl;
		}
		sizes[i] = i == 0 ? 65535 : i == 1 ? lo : pick_size(r, lo);
		if (sizes[i] > max_size)
			sizes[i] = max_size > lo ? max_size : lo;
		if (!rx_valid) {
			hl = (size_t)iwt_rand_range(r, 0, 64);
			if (hl > sizes[i])
				hl = sizes[i];
			iwt_fill_random(r, h, hl);
		}
		g->msgs[i].hdr = h;
		g->msgs[i].hdr_len = hl;
		g->msgs[i].payload_len = sizes[i] - hl;
		total += sizes[i] - hl;
	}
	g->payload = malloc(total + 1);
	ck_assert_ptr_nonnull(g->payload);
	iwt_fill_random(r, g->payload, total);
	for (int i = 0; i < n; i++) {
		g->msgs[i].payload = g->payload + off;
		off += g->msgs[i].payload_len;
	}
	/* Content plus at most one marker per 508 bytes. */
	g->wire_cap = 0;
	for (int i = 0; i < n; i++)
		g->wire_cap += sizes[i] + 12;
	g->wire_cap += g->wire_cap / 100 + 64;
	free(sizes);
}

static void gen_free(struct gen *g)
{
	free(g->msgs);
	free(g->hdrs);
	free(g->payload);
	memset(g, 0, sizeof(*g));
}

/* The log must show HEADER+FPDU per message, in order, with the right
 * offsets, headers and payload bytes; guards and API rules intact. */
static void check_log(const struct gen *g, const uint32_t *offs, const struct iwt_fpdu_log *log,
                      size_t stream_len)
{
	size_t ppos = 0;

	ck_assert_int_eq(log->bad_guard, 0);
	ck_assert_int_eq(log->bad_contract, 0);
	ck_assert_int_eq(log->nrec, 2 * g->n);
	ck_assert_uint_eq(log->consumed, stream_len);
	for (int i = 0; i < g->n; i++) {
		const struct iwt_fpdu_msg *m = &g->msgs[i];
		const struct iwt_fpdu_rec *h = &log->rec[2 * i], *f = &log->rec[2 * i + 1];

		ck_assert_int_eq(h->type, IW_MPA_RX_HEADER);
		ck_assert_int_eq(f->type, IW_MPA_RX_FPDU);
		ck_assert_uint_eq(h->fpdu_off, offs[i]);
		ck_assert_uint_eq(f->fpdu_off, offs[i]);
		ck_assert_uint_eq(h->hdr_len, m->hdr_len);
		ck_assert_uint_eq(f->hdr_len, m->hdr_len);
		ck_assert_uint_eq(h->ulpdu_len, m->hdr_len + m->payload_len);
		ck_assert_uint_eq(f->ulpdu_len, m->hdr_len + m->payload_len);
		ck_assert_uint_eq(h->payload_len, m->payload_len);
		ck_assert_uint_eq(f->payload_len, m->payload_len);
		ck_assert(memcmp(h->hdr, m->hdr, m->hdr_len) == 0);
		ck_assert(memcmp(f->hdr, m->hdr, m->hdr_len) == 0);
		if (h->dropped)
			continue;
		ck_assert_uint_eq(f->payload_at, ppos);
		ck_assert_msg(memcmp(log->payload + ppos, m->payload, m->payload_len) == 0,
		              "payload of FPDU %d differs", i);
		ppos += m->payload_len;
	}
	ck_assert_uint_eq(log->payload_len, ppos);
}

static void run_and_check(bool crc, bool markers, const struct gen *g, const uint8_t *wire,
                          size_t len, const uint32_t *offs, const struct iwt_fpdu_rx_opts *o)
{
	struct iw_mpa_rx rx;
	struct iwt_fpdu_log log;

	rx_init(&rx, crc, markers, 0);
	iwt_fpdu_log_init(&log);
	ck_assert(iw_mpa_rx_at_boundary(&rx));
	iwt_fpdu_rx_run(&rx, wire, len, o, &log);
	check_log(g, offs, &log, len);
	ck_assert(iw_mpa_rx_at_boundary(&rx));
	ck_assert_uint_eq(rx.stream_off, len);
	iwt_fpdu_log_free(&log);
}

/* ---------- tx: sizes and byte-exact frames ---------- */

START_TEST(test_pad_lengths)
{
	static const unsigned want[8] = { 2, 1, 0, 3, 2, 1, 0, 3 };
	uint8_t hdr[8], out[64];

	iwt_fill_random(&rng, hdr, sizeof(hdr));
	for (unsigned u = 0; u < 8; u++) {
		struct iw_mpa_tx tx;
		size_t wire = 2 + u + want[u] + 4;
		ssize_t r;

		ck_assert_uint_eq(iw_mpa_pad_len(u), want[u]);
		ck_assert_uint_eq(iw_mpa_fpdu_len(u), wire);
		ck_assert_uint_eq(wire % 4, 0);
		iw_mpa_tx_init(&tx, true, false);
		ck_assert_uint_eq(iw_mpa_tx_wire_len(&tx, u), wire);
		r = iwt_fpdu_build_flat(&tx, hdr, u, NULL, 0, out, sizeof(out));
		ck_assert_int_eq(r, (ssize_t)wire);
		ck_assert_uint_eq(iw_get_be16(out), u);
		ck_assert(memcmp(out + 2, hdr, u) == 0);
		for (unsigned p = 0; p < want[u]; p++)
			ck_assert_uint_eq(out[2 + u + p], 0);
		ck_assert_uint_eq(iw_crc32c_get_wire(out + wire - 4), iw_crc32c(out, wire - 4));
		ck_assert_uint_eq(tx.stream_off, wire);
	}
}
END_TEST

START_TEST(test_mulpdu_values)
{
	size_t m = iw_mpa_mulpdu(1448, false);

	/* siw: MSS 1448 -> WRITE 1428, SEND 1424 payload bytes. */
	ck_assert_uint_eq(m, 1442);
	ck_assert_uint_eq(m - 14, 1428);
	ck_assert_uint_eq(m - 18, 1424);
	ck_assert_uint_eq(iw_mpa_fpdu_len((unsigned)m), 1448);
	ck_assert_uint_eq(iw_mpa_mulpdu(1449, false), 1442);
	ck_assert_uint_eq(iw_mpa_mulpdu(1451, false), 1442);
	ck_assert_uint_eq(iw_mpa_mulpdu(1452, false), 1446);
	ck_assert_uint_eq(iw_mpa_mulpdu(63, false), 0);
	ck_assert_uint_eq(iw_mpa_mulpdu(0, true), 0);
	ck_assert_uint_eq(iw_mpa_mulpdu(64, false), 58);
	/* RFC 5044: EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4). */
	ck_assert_uint_eq(iw_mpa_mulpdu(1448, true), 1448 - 6 - 12);
	ck_assert_uint_eq(iw_mpa_mulpdu(512, true), 512 - 6 - 4);
	ck_assert_uint_eq(iw_mpa_mulpdu(513, true), 513 - 6 - 8 - 1);
	ck_assert_uint_eq(iw_mpa_mulpdu(9000, true), 9000 - 6 - 72);
	ck_assert_uint_eq(iw_mpa_mulpdu(200000, false), 65535);
	ck_assert_uint_eq(iw_mpa_mulpdu(200000, true), 65535);
}
END_TEST

/* MULPDU's FPDU fits emss at every aligned stream position; without
 * markers one more byte would not. */
START_TEST(test_mulpdu_fits)
{
	for (size_t emss = 64; emss <= 2200; emss++) {
		size_t m0 = iw_mpa_mulpdu(emss, false), m1 = iw_mpa_mulpdu(emss, true);

		ck_assert_uint_le(iw_mpa_fpdu_len((unsigned)m0), emss);
		ck_assert_uint_gt(iw_mpa_fpdu_len((unsigned)m0 + 1), emss);
		for (uint32_t off = 0; off < 512; off += 4) {
			struct iw_mpa_tx tx;

			iw_mpa_tx_init(&tx, true, true);
			tx.stream_off = off;
			ck_assert_uint_le(iw_mpa_tx_wire_len(&tx, m1), emss);
		}
	}
}
END_TEST

static const uint8_t write_hdr[14] = { 0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00, 0,
	                               0,    0,    0,    0,    0,    0x10, 0x00 };

/* A 16-byte RDMA WRITE, CRC on: 36 bytes, CRC over the first 32. */
START_TEST(test_known_write_crc)
{
	static const uint8_t want[36] = {
		0x00, 0x1e, 0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x10, 0x00, '0',  '1',  '2',  '3',  '4',  '5',  '6',  '7',
		'8',  '9',  'a',  'b',  'c',  'd',  'e',  'f',  0x77, 0x78, 0x8c, 0xba,
	};
	struct iw_mpa_tx tx;
	struct iovec pl = { (void *)"0123456789abcdef", 16 };
	uint8_t out[64], ref[64];

	iw_mpa_tx_init(&tx, true, false);
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, write_hdr, 14, &pl, 1, out, sizeof(out)), 36);
	ck_assert(memcmp(out, want, 36) == 0);
	/* CRC computed independently: one-shot, bitwise, and the constant. */
	ck_assert_uint_eq(iw_crc32c_get_wire(out + 32), iw_crc32c(out, 32));
	ck_assert_uint_eq(iw_crc32c_get_wire(out + 32), iwt_fpdu_crc32c_ref(out, 32));
	ck_assert_uint_eq(iw_crc32c_get_wire(out + 32), 0xba8c7877u);
	ck_assert_int_eq(
	    iwt_fpdu_ref_encode(0, true, false, write_hdr, 14, pl.iov_base, 16, ref, sizeof(ref)),
	    36);
	ck_assert(memcmp(ref, want, 36) == 0);

	/* CRC off: same frame, zero CRC field. */
	iw_mpa_tx_init(&tx, false, false);
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, write_hdr, 14, &pl, 1, out, sizeof(out)), 36);
	ck_assert(memcmp(out, want, 32) == 0);
	ck_assert_uint_eq(iw_crc32c_get_wire(out + 32), 0);
}
END_TEST

/* The Terminate siw sent (facts sheet): ULPDU 38 -> 44-byte FPDU. */
START_TEST(test_known_terminate_len)
{
	static const uint8_t term[38] = { 0x41, 0x47, 0,    0,    0,    0,    0,    0,
		                          0,    2,    0,    0,    0,    1,    0,    0,
		                          0,    0,    0x11, 0x00, 0x03, 0x00, 0x00, 0x10,
		                          0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00, 0,    0,
		                          0,    0,    0,    0,    0x10, 0x00 };
	struct iw_mpa_tx tx;
	uint8_t out[64];

	iw_mpa_tx_init(&tx, true, false);
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, term, 38, NULL, 0, out, sizeof(out)), 44);
	ck_assert_uint_eq(out[0], 0x00);
	ck_assert_uint_eq(out[1], 0x26);
	ck_assert(memcmp(out + 2, term, 38) == 0);
	ck_assert_uint_eq(iw_crc32c_get_wire(out + 40), iwt_fpdu_crc32c_ref(out, 40));
}
END_TEST

/* Markers, hand-placed: leading marker; marker inside the header; marker
 * between pad and CRC; marker exactly after an FPDU. */
START_TEST(test_known_markers)
{
	static const uint8_t send_hdr[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0,
		                              0,    0,    0, 0, 1, 0, 0, 0, 0 };
	static const uint8_t want1[32] = {
		0, 0, 0, 0, 0x00, 0x14, 0x41, 0x43, 0,   0,   0, 0, 0,    0,    0,    0,
		0, 0, 0, 1, 0,    0,    0,    0,    'h', 'i', 0, 0, 0x8c, 0x11, 0x81, 0xe1,
	};
	static const uint8_t hdr2[14] = { 0xc1, 0x40, 0x12, 0x34, 0x56, 0x78, 0,
		                          0,    0,    0,    0,    0,    0x20, 0x00 };
	static const uint8_t want2[28] = {
		0x00, 0x12, 0xc1, 0x40, 0,    0,    0,   4,   0x12, 0x34, 0x56, 0x78, 0,    0,
		0,    0,    0,    0,    0x20, 0x00, 'W', 'X', 'Y',  'Z',  0xd8, 0x35, 0x60, 0x0b,
	};
	static const uint8_t hdr3[14] = { 0x81, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t want3[28] = {
		0x00, 0x0f, 0x81, 0x40, 0, 0, 0, 1, 0, 0,  0,    0,    0,    0,
		0,    0,    'Q',  0,    0, 0, 0, 0, 0, 20, 0x83, 0x68, 0x20, 0xa3,
	};
	struct iw_mpa_tx tx;
	struct iw_mpa_tx_fpdu f;
	struct iovec pl, iov[300];
	uint8_t out[64], ref[64];
	int n;

	/* 1: stream offset 0, so the FPDU starts with a marker (FPDUPTR 0). */
	iw_mpa_tx_init(&tx, true, true);
	pl = (struct iovec){ (void *)"hi", 2 };
	ck_assert_uint_eq(iw_mpa_tx_wire_len(&tx, 20), 32);
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, send_hdr, 18, &pl, 1, out, sizeof(out)), 32);
	ck_assert(memcmp(out, want1, 32) == 0);
	ck_assert_uint_eq(iw_crc32c_get_wire(out + 28), iw_crc32c(out, 28));
	ck_assert_int_eq(iwt_fpdu_ref_encode(0, true, true, send_hdr, 18, "hi", 2, ref, 64), 32);
	ck_assert(memcmp(ref, want1, 32) == 0);

	/* 2: at 508 the marker at 512 lands after two ULPDU bytes, FPDUPTR 4. */
	tx.stream_off = 508;
	pl = (struct iovec){ (void *)"WXYZ", 4 };
	n = iw_mpa_tx_build(&tx, &f, hdr2, 14, &pl, 1, iov, 300);
	/* len | hdr[0..2) | marker | hdr rest | payload | crc (some may merge) */
	ck_assert_int_ge(n, 4);
	ck_assert_int_le(n, 6);
	ck_assert_uint_eq(f.f.n_markers, 1);
	ck_assert_uint_eq(f.f.wire_len, 28);
	ck_assert_uint_eq(tx.stream_off, 536);
	tx.stream_off = 508;
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, hdr2, 14, &pl, 1, out, sizeof(out)), 28);
	ck_assert(memcmp(out, want2, 28) == 0);
	ck_assert_int_eq(iwt_fpdu_ref_encode(508, true, true, hdr2, 14, "WXYZ", 4, ref, 64), 28);
	ck_assert(memcmp(ref, want2, 28) == 0);

	/* 3: at 492 the marker falls between pad and CRC (FPDUPTR 20) and is
	 * covered by the CRC. */
	tx.stream_off = 492;
	pl = (struct iovec){ (void *)"Q", 1 };
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, hdr3, 14, &pl, 1, out, sizeof(out)), 28);
	ck_assert(memcmp(out, want3, 28) == 0);
	ck_assert_uint_eq(tx.stream_off, 520);

	/* 4: at 488 the FPDU ends exactly at 512: no marker in it; the next
	 * FPDU starts with one. */
	tx.stream_off = 488;
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, hdr3, 14, &pl, 1, out, sizeof(out)), 24);
	ck_assert_uint_eq(tx.stream_off, 512);
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, hdr3, 14, &pl, 1, out, sizeof(out)), 28);
	ck_assert_uint_eq(iw_get_be32(out), 0);
	ck_assert_uint_eq(iw_get_be16(out + 4), 15);
}
END_TEST

/* ---------- tx: errors and zero copy ---------- */

START_TEST(test_tx_errors)
{
	static uint8_t big[65536];
	struct iw_mpa_tx tx;
	struct iw_mpa_tx_fpdu f, snap;
	struct iovec pl[40], iov[400], iov_snap[400];
	uint8_t hdr[18] = { 0 };
	int n, np;

	iw_mpa_tx_init(&tx, true, true);
	tx.stream_off = 1000;
	/* -EMSGSIZE above 65535, nothing changes. */
	pl[0] = (struct iovec){ big, 65536 - 10 };
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 10, pl, 1, iov, 400), -EMSGSIZE);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, big, 65536, NULL, 0, iov, 400), -EMSGSIZE);
	pl[0] = (struct iovec){ big, 100 };
	pl[1] = (struct iovec){ big, SIZE_MAX };
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 10, pl, 2, iov, 400), -EMSGSIZE);
	ck_assert_uint_eq(tx.stream_off, 1000);
	/* 65535 exactly is fine. */
	pl[0] = (struct iovec){ big, 65535 - 18 };
	n = iw_mpa_tx_build(&tx, &f, hdr, 18, pl, 1, iov, 400);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(iw_get_be16(f.f.len_be), 65535);
	ck_assert_uint_eq(tx.stream_off, 1000 + f.f.wire_len);

	/* -EINVAL. */
	ck_assert_int_eq(iw_mpa_tx_build(NULL, &f, hdr, 18, NULL, 0, iov, 400), -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, NULL, hdr, 18, NULL, 0, iov, 400), -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, NULL, 3, NULL, 0, iov, 400), -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, pl, -1, iov, 400), -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, NULL, 2, iov, 400), -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, NULL, 0, NULL, 5), -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, NULL, 0, iov, -1), -EINVAL);
	pl[0] = (struct iovec){ NULL, 5 };
	ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, pl, 1, iov, 400), -EINVAL);

	/* -ENOBUFS: with one iovec too few nothing is touched; with exactly
	 * enough it works. Markers on, payload in many pieces. */
	for (int round = 0; round < 20; round++) {
		uint32_t off = (uint32_t)iwt_rand_range(&rng, 0, 4000) * 4;
		size_t plen = (size_t)iwt_rand_range(&rng, 0, 5000);
		bool markers = round % 2;

		iw_mpa_tx_init(&tx, true, markers);
		tx.stream_off = off;
		np = iwt_fpdu_split(&rng, big, plen, pl, 40);
		n = iw_mpa_tx_build(&tx, &f, hdr, 18, pl, np, iov, 400);
		ck_assert_int_gt(n, 0);
		ck_assert_int_le(n, markers ? 2 * (np + 2) + 2 * IW_MPA_TX_MAX_MARKERS : np + 3);
		tx.stream_off = off;
		memset(&f, 0xEE, sizeof(f));
		memcpy(&snap, &f, sizeof(f));
		memset(iov, 0x77, sizeof(iov));
		memcpy(iov_snap, iov, sizeof(iov));
		ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, pl, np, iov, n - 1), -ENOBUFS);
		ck_assert_uint_eq(tx.stream_off, off);
		ck_assert(memcmp(&f, &snap, sizeof(f)) == 0);
		ck_assert(memcmp(iov, iov_snap, sizeof(iov)) == 0);
		ck_assert_int_eq(iw_mpa_tx_build(&tx, &f, hdr, 18, pl, np, iov, n), n);
		ck_assert_uint_eq(tx.stream_off, off + f.f.wire_len);
	}
}
END_TEST

static bool inside(const void *p, size_t len, const void *base, size_t blen)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

	return a >= b && a + len <= b + blen;
}

/* The gather list points at the caller's memory (no payload copy) and at
 * the per-FPDU scratch, nothing else. */
/* A frame with its own marker room: the bytes match the full-size fpdu,
 * too little room is refused, and no room is needed without markers. */
static size_t gather(const struct iovec *iov, int n, uint8_t *out)
{
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return off;
}

START_TEST(test_tx_frame_marker_room)
{
	static uint8_t pay[3000];
	uint8_t hdr[18] = { 0 }, room[8][IW_MPA_MARKER_LEN];
	struct iw_mpa_tx tx_a, tx_b;
	struct iw_mpa_tx_fpdu full;
	struct iw_mpa_tx_frame fr = { 0 };
	struct iovec pl = { pay, sizeof(pay) }, iov_a[64], iov_b[64];
	uint8_t wire_a[4096], wire_b[4096];

	iwt_fill_pattern(pay, sizeof(pay), 7);
	iw_mpa_tx_init(&tx_a, true, true);
	iw_mpa_tx_init(&tx_b, true, true);
	tx_a.stream_off = tx_b.stream_off = 100;
	int na = iw_mpa_tx_build(&tx_a, &full, hdr, 18, &pl, 1, iov_a, 64);
	fr.markers = room;
	fr.markers_cap = 8;
	int nb = iw_mpa_tx_build_frame(&tx_b, &fr, hdr, 18, &pl, 1, iov_b, 64);
	ck_assert_int_gt(na, 0);
	ck_assert_int_eq(na, nb);
	ck_assert_uint_eq(full.f.n_markers, fr.n_markers);
	ck_assert_uint_eq(full.f.wire_len, fr.wire_len);
	ck_assert_uint_le(fr.wire_len, sizeof(wire_a));
	ck_assert_uint_eq(gather(iov_a, na, wire_a), full.f.wire_len);
	ck_assert_uint_eq(gather(iov_b, nb, wire_b), fr.wire_len);
	ck_assert_mem_eq(wire_a, wire_b, fr.wire_len);

	fr.markers_cap = (uint16_t)(fr.n_markers - 1);
	tx_b.stream_off = 100;
	ck_assert_int_eq(iw_mpa_tx_build_frame(&tx_b, &fr, hdr, 18, &pl, 1, iov_b, 64), -EINVAL);
	ck_assert_uint_eq(tx_b.stream_off, 100);
	fr.markers = NULL;
	fr.markers_cap = 0;
	ck_assert_int_eq(iw_mpa_tx_build_frame(&tx_b, &fr, hdr, 18, &pl, 1, iov_b, 64), -EINVAL);
	iw_mpa_tx_init(&tx_b, true, false);
	ck_assert_int_gt(iw_mpa_tx_build_frame(&tx_b, &fr, hdr, 18, &pl, 1, iov_b, 64), 0);
	ck_assert_uint_eq(fr.n_markers, 0);
}
END_TEST

START_TEST(test_tx_zero_copy)
{
	static uint8_t payload[20000];
	uint8_t hdr[14];
	struct iw_mpa_tx tx;
	struct iw_mpa_tx_fpdu f;
	struct iovec pl[32], iov[400];

	iwt_fill_random(&rng, payload, sizeof(payload));
	iwt_fill_random(&rng, hdr, sizeof(hdr));
	for (int round = 0; round < 40; round++) {
		size_t plen = (size_t)iwt_rand_range(&rng, 0, sizeof(payload));
		int np = iwt_fpdu_split(&rng, payload, plen, pl, 32);
		size_t from_payload = 0, from_hdr = 0, total = 0;
		int n;

		iw_mpa_tx_init(&tx, round % 2, round % 4 >= 2);
		tx.stream_off = (uint32_t)iwt_rand_range(&rng, 0, 1000) * 4;
		n = iw_mpa_tx_build(&tx, &f, hdr, 14, pl, np, iov, 400);
		ck_assert_int_gt(n, 0);
		for (int i = 0; i < n; i++) {
			ck_assert_uint_gt(iov[i].iov_len, 0);
			total += iov[i].iov_len;
			if (inside(iov[i].iov_base, iov[i].iov_len, payload, sizeof(payload)))
				from_payload += iov[i].iov_len;
			else if (inside(iov[i].iov_base, iov[i].iov_len, hdr, sizeof(hdr)))
				from_hdr += iov[i].iov_len;
			else
				ck_assert(inside(iov[i].iov_base, iov[i].iov_len, &f, sizeof(f)));
		}
		ck_assert_uint_eq(from_payload, plen);
		ck_assert_uint_eq(from_hdr, 14);
		ck_assert_uint_eq(total, f.f.wire_len);
	}
}
END_TEST

/* The builder against the byte-at-a-time reference over long streams:
 * CRC on/off x markers on/off, random headers, sizes 2..65535, payload as
 * random iovec lists with empty pieces; wire_len predicted in advance. */
START_TEST(test_tx_vs_ref)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool crc = cfg & 1, markers = cfg & 2;
		struct gen g;
		struct iw_mpa_tx tx;
		uint8_t *a, *b;
		size_t pos = 0;
		ssize_t rlen;

		gen_stream(&rng, 50, false, 65535, &g);
		a = malloc(g.wire_cap);
		b = malloc(g.wire_cap);
		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		iw_mpa_tx_init(&tx, crc, markers);
		for (int i = 0; i < g.n; i++) {
			struct iovec pl[24];
			int np =
			    iwt_fpdu_split(&rng, g.msgs[i].payload, g.msgs[i].payload_len, pl, 24);
			size_t want =
			    iw_mpa_tx_wire_len(&tx, g.msgs[i].hdr_len + g.msgs[i].payload_len);
			ssize_t r = iwt_fpdu_build_flat(&tx, g.msgs[i].hdr, g.msgs[i].hdr_len, pl,
			                                np, a + pos, g.wire_cap - pos);

			ck_assert_int_eq(r, (ssize_t)want);
			pos += (size_t)r;
			ck_assert_uint_eq(tx.stream_off, pos);
		}
		rlen = iwt_fpdu_ref_stream(crc, markers, g.msgs, g.n, b, g.wire_cap);
		ck_assert_int_eq(rlen, (ssize_t)pos);
		ck_assert(memcmp(a, b, pos) == 0);
		if (markers)
			ck_assert_uint_gt(pos / 512, 100);
		free(a);
		free(b);
		gen_free(&g);
	}
}
END_TEST

/* Without markers (the one-pass builder): an iov_cap one short of what
 * the FPDU needs changes nothing, the exact count works and gives the
 * same list and bytes as a roomy one; contiguous pieces share an iovec. */
START_TEST(test_tx_plain_iov_cap)
{
	static uint8_t buf[9000];

	iwt_fill_random(&rng, buf, sizeof(buf));
	for (int round = 0; round < 200; round++) {
		bool crc = round & 1;
		size_t hl = (size_t)iwt_rand_range(&rng, 0, 80);
		size_t plen = (size_t)iwt_rand_range(&rng, 0, sizeof(buf) - 100);
		/* Every 4th round the payload directly follows the header. */
		const uint8_t *hdr = buf, *pay = round % 4 ? buf + 90 : buf + hl;
		struct iovec pl[16], iov[32], iov2[32];
		int np = iwt_fpdu_split(&rng, pay, plen, pl, 16);
		struct iw_mpa_tx tx, tx2;
		struct iw_mpa_tx_fpdu f, f2;
		int n, n2;

		iw_mpa_tx_init(&tx, crc, false);
		tx.stream_off = (uint32_t)iwt_rand_range(&rng, 0, 100000) * 4;
		tx2 = tx;
		n = iw_mpa_tx_build(&tx, &f, hdr, hl, pl, np, iov, 32);
		ck_assert_int_gt(n, 0);
		ck_assert_int_le(n, np + 3);
		if (round % 4 == 0)
			ck_assert_int_le(n, 3); /* length field; header + payload; trailer */
		memset(&f2, 0x5a, sizeof(f2));
		for (int cap = 0; cap < n; cap++) {
			struct iw_mpa_tx_fpdu before = f2;
			struct iw_mpa_tx t = tx2;

			ck_assert_int_eq(iw_mpa_tx_build(&t, &f2, hdr, hl, pl, np, cap ? iov2 : NULL, cap),
					 -ENOBUFS);
			ck_assert_uint_eq(t.stream_off, tx2.stream_off);
			ck_assert(memcmp(&before, &f2, sizeof(f2)) == 0);
		}
		n2 = iw_mpa_tx_build(&tx2, &f2, hdr, hl, pl, np, iov2, n);
		ck_assert_int_eq(n2, n);
		ck_assert_uint_eq(tx2.stream_off, tx.stream_off);
		ck_assert_uint_eq(f2.f.wire_len, f.f.wire_len);
		ck_assert_uint_eq(f.f.wire_len, 2 + hl + plen + iw_mpa_pad_len((unsigned)(hl + plen)) + 4);
		for (int i = 0; i < n; i++) {
			ck_assert_uint_eq(iov[i].iov_len, iov2[i].iov_len);
			ck_assert(memcmp(iov[i].iov_base, iov2[i].iov_base, iov[i].iov_len) == 0);
		}
	}
}
END_TEST

static size_t flatten(const struct iovec *iov, int n, uint8_t *out)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	return len;
}

/* Header with length room: the same bytes as without, one iovec fewer
 * without markers (length and header merged), the same list with
 * markers; exact iov_cap works, one less fails and changes nothing. */
START_TEST(test_tx_build_hr)
{
	static uint8_t buf[6000], wa[8000], wb[8000];

	iwt_fill_random(&rng, buf, sizeof(buf));
	for (int round = 0; round < 200; round++) {
		bool crc = round & 1, markers = round & 2;
		size_t hl = (size_t)iwt_rand_range(&rng, 0, 90);
		size_t plen = (size_t)iwt_rand_range(&rng, 0, 5000);
		uint8_t room[2 + 90];
		struct iovec pl[8], ia[300], ib[300];
		int np = iwt_fpdu_split(&rng, buf + 500, plen, pl, 8);
		struct iw_mpa_tx ta, tb;
		struct iw_mpa_tx_fpdu fa, fb;
		int na, nb;

		iwt_fill_random(&rng, room, sizeof(room));
		iw_mpa_tx_init(&ta, crc, markers);
		ta.stream_off = (uint32_t)iwt_rand_range(&rng, 0, 100000) * 4;
		tb = ta;
		na = iw_mpa_tx_build(&ta, &fa, room + 2, hl, pl, np, ia, 300);
		ck_assert_int_gt(na, 0);
		fb.f.markers = fb.markers;
		fb.f.markers_cap = IW_MPA_TX_MAX_MARKERS;
		{
			struct iw_mpa_tx t0 = tb;
			uint8_t keep[sizeof(room)];
			int need;

			/* count: a roomy build on a copy, then retry one short */
			memcpy(keep, room, sizeof(room));
			need = iw_mpa_tx_build_frame_hr(&t0, &fb.f, room + 2, hl, pl, np, ib, 300);
			ck_assert_int_gt(need, 0);
			memcpy(room, keep, sizeof(room));
			t0 = tb;
			ck_assert_int_eq(iw_mpa_tx_build_frame_hr(&t0, &fb.f, room + 2, hl, pl, np, ib, need - 1),
					 -ENOBUFS);
			ck_assert_uint_eq(t0.stream_off, tb.stream_off);
			nb = iw_mpa_tx_build_frame_hr(&tb, &fb.f, room + 2, hl, pl, np, ib, need);
			ck_assert_int_eq(nb, need);
		}
		ck_assert_uint_eq(tb.stream_off, ta.stream_off);
		ck_assert_uint_eq(fb.f.wire_len, fa.f.wire_len);
		if (markers || hl == 0)
			ck_assert_int_eq(nb, na);
		else
			ck_assert_int_eq(nb, na - 1);
		ck_assert_uint_eq(flatten(ia, na, wa), fa.f.wire_len);
		ck_assert_uint_eq(flatten(ib, nb, wb), fa.f.wire_len);
		ck_assert(memcmp(wa, wb, fa.f.wire_len) == 0);
	}
	ck_assert_int_eq(iw_mpa_tx_build_frame_hr(NULL, NULL, NULL, 0, NULL, 0, NULL, 0), -EINVAL);
}
END_TEST

/* ---------- rx: round trips ---------- */

static void roundtrip(bool crc, bool markers, int nmsg, size_t max_size,
                      const struct iwt_fpdu_rx_opts *opts, int nopts)
{
	struct gen g;
	uint32_t *offs;
	uint8_t *wire;
	ssize_t len;

	gen_stream(&rng, nmsg, true, max_size, &g);
	offs = malloc(sizeof(*offs) * (size_t)g.n);
	wire = malloc(g.wire_cap);
	ck_assert_ptr_nonnull(offs);
	ck_assert_ptr_nonnull(wire);
	len = iwt_fpdu_stream(crc, markers, g.msgs, g.n, wire, g.wire_cap, offs, &rng);
	ck_assert_int_gt(len, 0);
	for (int i = 0; i < nopts; i++)
		run_and_check(crc, markers, &g, wire, (size_t)len, offs, &opts[i]);
	free(offs);
	free(wire);
	gen_free(&g);
}

START_TEST(test_rx_feed_chunks)
{
	bool crc = _i & 1, markers = _i & 2;
	struct iwt_fpdu_rx_opts o[] = {
		{ .mode = IWT_FPDU_FEED, .max_chunk = 7, .max_sink_iov = 3, .rng = &rng },
		{ .mode = IWT_FPDU_FEED, .max_chunk = 600, .max_sink_iov = 8, .rng = &rng },
		{ .mode = IWT_FPDU_FEED,
		  .max_chunk = 5000,
		  .max_sink_iov = 20,
		  .drop_pct = 20,
		  .rng = &rng },
		{ .mode = IWT_FPDU_FEED, .max_chunk = SIZE_MAX, .max_sink_iov = 1, .rng = &rng },
	};

	roundtrip(crc, markers, 40, 65535, o, 4);
}
END_TEST

START_TEST(test_rx_readv_chunks)
{
	bool crc = _i & 1, markers = _i & 2;
	struct iwt_fpdu_rx_opts o[] = {
		{ .mode = IWT_FPDU_READV,
		  .max_chunk = 9,
		  .max_iov = 4,
		  .max_sink_iov = 3,
		  .rng = &rng },
		{ .mode = IWT_FPDU_READV,
		  .max_chunk = 2000,
		  .max_iov = 1,
		  .max_sink_iov = 6,
		  .rng = &rng },
		{ .mode = IWT_FPDU_READV,
		  .max_chunk = 70000,
		  .max_iov = 64,
		  .max_sink_iov = 20,
		  .drop_pct = 25,
		  .rng = &rng },
		{ .mode = IWT_FPDU_READV,
		  .max_chunk = 70000,
		  .max_iov = 16,
		  .max_sink_iov = 1,
		  .rng = &rng },
	};

	roundtrip(crc, markers, 40, 65535, o, 4);
}
END_TEST

/* One byte at a time, both ways, on a stream of small FPDUs. */
START_TEST(test_rx_one_byte)
{
	bool crc = _i & 1, markers = _i & 2;
	struct iwt_fpdu_rx_opts o[] = {
		{ .mode = IWT_FPDU_FEED,
		  .max_chunk = 1,
		  .max_sink_iov = 4,
		  .drop_pct = 10,
		  .rng = &rng },
		{ .mode = IWT_FPDU_READV,
		  .max_chunk = 1,
		  .max_iov = 8,
		  .max_sink_iov = 4,
		  .drop_pct = 10,
		  .rng = &rng },
	};

	roundtrip(crc, markers, 60, 1200, o, 2);
}
END_TEST

/* Stream offsets wrap at 2^32 (a multiple of 512, so markers stay put). */
START_TEST(test_rx_wrap)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool crc = cfg & 1, markers = cfg & 2;
		const uint32_t start = 0xFFFFF000u + 8;
		struct gen g;
		struct iw_mpa_tx tx;
		struct iw_mpa_rx rx;
		struct iwt_fpdu_log log;
		struct iwt_fpdu_rx_opts o = { .mode = cfg < 2 ? IWT_FPDU_FEED : IWT_FPDU_READV,
			                      .max_chunk = 300,
			                      .max_iov = 8,
			                      .max_sink_iov = 4,
			                      .rng = &rng };
		uint32_t offs[30];
		uint8_t *wire, *ref;
		size_t pos = 0;

		gen_stream(&rng, 30, true, 3000, &g);
		wire = malloc(g.wire_cap);
		ref = malloc(g.wire_cap);
		ck_assert_ptr_nonnull(wire);
		ck_assert_ptr_nonnull(ref);
		iw_mpa_tx_init(&tx, crc, markers);
		tx.stream_off = start;
		for (int i = 0; i < g.n; i++) {
			struct iovec pl = { (void *)(uintptr_t)g.msgs[i].payload,
				            g.msgs[i].payload_len };
			ssize_t r, rr;

			offs[i] = tx.stream_off;
			r = iwt_fpdu_build_flat(&tx, g.msgs[i].hdr, g.msgs[i].hdr_len, &pl, 1,
			                        wire + pos, g.wire_cap - pos);
			rr = iwt_fpdu_ref_encode(
			    offs[i], crc, markers, g.msgs[i].hdr, g.msgs[i].hdr_len,
			    g.msgs[i].payload, g.msgs[i].payload_len, ref + pos, g.wire_cap - pos);
			ck_assert_int_gt(r, 0);
			ck_assert_int_eq(r, rr);
			pos += (size_t)r;
		}
		ck_assert(memcmp(wire, ref, pos) == 0);
		ck_assert_uint_lt(tx.stream_off, start);
		rx_init(&rx, crc, markers, 0);
		rx.stream_off = rx.fpdu_start = start;
		iwt_fpdu_log_init(&log);
		iwt_fpdu_rx_run(&rx, wire, pos, &o, &log);
		check_log(&g, offs, &log, pos);
		iwt_fpdu_log_free(&log);
		free(wire);
		free(ref);
		gen_free(&g);
	}
}
END_TEST

/* ---------- rx: API details ---------- */

/* HEADER before any payload byte; nothing moves until set_sink; exact
 * consumed counts; at_boundary only between FPDUs. */
START_TEST(test_rx_header_wait)
{
	struct iw_mpa_tx tx;
	struct iw_mpa_rx rx;
	struct iw_mpa_rx_event ev;
	struct iovec pl = { (void *)"0123456789abcdef", 16 }, iov[4];
	uint8_t wire[128], sink[16];
	ssize_t len;
	size_t c;

	iw_mpa_tx_init(&tx, true, true);
	len = iwt_fpdu_build_flat(&tx, write_hdr, 14, &pl, 1, wire, sizeof(wire));
	ck_assert_int_eq(len, 40); /* leading marker + 36 */
	rx_init(&rx, true, true, 0);
	ck_assert(iw_mpa_rx_at_boundary(&rx));
	c = iw_mpa_rx_feed(&rx, wire, 4, &ev); /* the leading marker only */
	ck_assert_uint_eq(c, 4);
	ck_assert_int_eq(ev.type, IW_MPA_RX_NONE);
	ck_assert(!iw_mpa_rx_at_boundary(&rx));
	c = iw_mpa_rx_feed(&rx, wire + 4, (size_t)len - 4, &ev);
	ck_assert_uint_eq(c, 16); /* length field + 14-byte header */
	ck_assert_int_eq(ev.type, IW_MPA_RX_HEADER);
	ck_assert_uint_eq(ev.hdr_len, 14);
	ck_assert_uint_eq(ev.ulpdu_len, 30);
	ck_assert_uint_eq(ev.payload_len, 16);
	ck_assert_uint_eq(ev.fpdu_off, 0);
	ck_assert(memcmp(ev.hdr, write_hdr, 14) == 0);
	/* Waiting for set_sink: nothing is taken. */
	c = iw_mpa_rx_feed(&rx, wire + 20, (size_t)len - 20, &ev);
	ck_assert_uint_eq(c, 0);
	ck_assert_int_eq(ev.type, IW_MPA_RX_NONE);
	ck_assert_int_eq(iw_mpa_rx_prepare(&rx, iov, 4), 0);
	ck_assert(!iw_mpa_rx_at_boundary(&rx));
	iw_mpa_rx_set_sink(&rx, &(struct iovec){ sink, sizeof(sink) }, 1);
	c = iw_mpa_rx_feed(&rx, wire + 20, (size_t)len - 20, &ev);
	ck_assert_uint_eq(c, 20);
	ck_assert_int_eq(ev.type, IW_MPA_RX_FPDU);
	ck_assert_uint_eq(ev.fpdu_off, 0);
	ck_assert(memcmp(sink, pl.iov_base, 16) == 0);
	ck_assert(iw_mpa_rx_at_boundary(&rx));
	/* set_sink outside the SINK state is ignored. */
	iw_mpa_rx_set_sink(&rx, NULL, 0);
	ck_assert(iw_mpa_rx_at_boundary(&rx));
}
END_TEST

/* prepare() lists: [len][ctrl], then the header rest, then sink pieces
 * and the trailer; each ends at the point the next depends on data. */
START_TEST(test_rx_prepare_lists)
{
	struct iw_mpa_tx tx;
	struct iw_mpa_rx rx;
	struct iw_mpa_rx_event ev;
	struct iovec pl = { (void *)"0123456789abcdef", 16 }, iov[8], sink[3];
	uint8_t wire[64], s0[5], s1[11];
	size_t pos = 0;
	int n;

	iw_mpa_tx_init(&tx, true, false);
	ck_assert_int_eq(iwt_fpdu_build_flat(&tx, write_hdr, 14, &pl, 1, wire, sizeof(wire)), 36);
	rx_init(&rx, true, false, 0);

	n = iw_mpa_rx_prepare(&rx, iov, 8);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(iov[0].iov_len, 2);
	ck_assert_uint_eq(iov[1].iov_len, 2);
	ck_assert_int_eq(iw_mpa_rx_prepare(&rx, iov, 1), 1); /* cap respected */
	memcpy(iov[0].iov_base, wire, 2);
	n = iw_mpa_rx_prepare(&rx, iov, 8);
	memcpy(iov[0].iov_base, wire, 2);
	memcpy(iov[1].iov_base, wire + 2, 2);
	iw_mpa_rx_commit(&rx, 4, &ev);
	ck_assert_int_eq(ev.type, IW_MPA_RX_NONE);
	pos = 4;

	n = iw_mpa_rx_prepare(&rx, iov, 8);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(iov[0].iov_len, 12);
	memcpy(iov[0].iov_base, wire + pos, 12);
	iw_mpa_rx_commit(&rx, 12, &ev);
	pos += 12;
	ck_assert_int_eq(ev.type, IW_MPA_RX_HEADER);

	sink[0] = (struct iovec){ s0, sizeof(s0) };
	sink[1] = (struct iovec){ NULL, 0 };
	sink[2] = (struct iovec){ s1, sizeof(s1) };
	iw_mpa_rx_set_sink(&rx, sink, 3);
	n = iw_mpa_rx_prepare(&rx, iov, 8);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_eq(iov[0].iov_base, s0);
	ck_assert_uint_eq(iov[0].iov_len, 5);
	ck_assert_ptr_eq(iov[1].iov_base, s1);
	ck_assert_uint_eq(iov[1].iov_len, 11);
	ck_assert_uint_eq(iov[2].iov_len, 4); /* no pad, CRC */
	/* Short count: only part of the first piece. */
	memcpy(s0, wire + pos, 3);
	iw_mpa_rx_commit(&rx, 3, &ev);
	pos += 3;
	ck_assert_int_eq(ev.type, IW_MPA_RX_NONE);
	n = iw_mpa_rx_prepare(&rx, iov, 8);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_eq(iov[0].iov_base, s0 + 3);
	ck_assert_uint_eq(iov[0].iov_len, 2);
	for (int i = 0; i < n; i++) {
		memcpy(iov[i].iov_base, wire + pos, iov[i].iov_len);
		pos += iov[i].iov_len;
	}
	ck_assert_uint_eq(pos, 36);
	iw_mpa_rx_commit(&rx, 17, &ev);
	ck_assert_int_eq(ev.type, IW_MPA_RX_FPDU);
	ck_assert(memcmp(s0, "01234", 5) == 0);
	ck_assert(memcmp(s1, "56789abcdef", 11) == 0);
}
END_TEST

static void lens_2(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	(void)ctrl;
	*hdr_len = 2;
	*min_ulpdu = 2;
}

static void lens_bad(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	(void)ctrl;
	*hdr_len = IW_MPA_RX_MAX_HDR + 1;
	*min_ulpdu = 2;
}

/* A 2-byte header: HEADER right after the control bytes, empty payload
 * still goes through set_sink; no callback behaves the same. A callback
 * breaking its contract kills the stream instead of overrunning. */
START_TEST(test_rx_small_header)
{
	for (int k = 0; k < 3; k++) {
		struct iw_mpa_rx_config cfg = { .crc = true,
			                        .ulp_lens = k == 0   ? lens_2
			                                    : k == 1 ? NULL
			                                             : lens_bad };
		struct iw_mpa_tx tx;
		struct iw_mpa_rx rx;
		struct iw_mpa_rx_event ev;
		uint8_t wire[16];
		size_t c;

		iw_mpa_tx_init(&tx, true, false);
		ck_assert_int_eq(iwt_fpdu_build_flat(&tx, "\x01\x02", 2, NULL, 0, wire, 16), 8);
		iw_mpa_rx_init(&rx, &cfg);
		c = iw_mpa_rx_feed(&rx, wire, 8, &ev);
		ck_assert_uint_eq(c, 4);
		if (k == 2) {
			ck_assert_int_eq(ev.type, IW_MPA_RX_ERROR);
			ck_assert_uint_eq(ev.cause.layer, IW_LAYER_MPA);
			ck_assert_uint_eq(ev.cause.ecode, IW_ECODE_MPA_LOCAL_CATA);
			continue;
		}
		ck_assert_int_eq(ev.type, IW_MPA_RX_HEADER);
		ck_assert_uint_eq(ev.hdr_len, 2);
		ck_assert_uint_eq(ev.payload_len, 0);
		iw_mpa_rx_set_sink(&rx, NULL, 0);
		c = iw_mpa_rx_feed(&rx, wire + 4, 4, &ev);
		ck_assert_uint_eq(c, 4);
		ck_assert_int_eq(ev.type, IW_MPA_RX_FPDU);
	}
}
END_TEST

/* A sink shorter than payload_len (a caller bug): no write past it, the
 * rest is dropped, the FPDU still completes. */
START_TEST(test_rx_short_sink)
{
	struct gen g;
	uint32_t offs[20];
	uint8_t *wire;
	ssize_t len;

	gen_stream(&rng, 20, true, 4000, &g);
	wire = malloc(g.wire_cap);
	ck_assert_ptr_nonnull(wire);
	for (int cfg = 0; cfg < 2; cfg++) {
		struct iw_mpa_rx rx;
		struct iwt_fpdu_log log;
		struct iwt_fpdu_rx_opts o = { .mode = cfg ? IWT_FPDU_READV : IWT_FPDU_FEED,
			                      .max_chunk = 700,
			                      .max_iov = 8,
			                      .max_sink_iov = 5,
			                      .sink_short = 7,
			                      .rng = &rng };
		size_t ppos = 0;

		len = iwt_fpdu_stream(true, true, g.msgs, g.n, wire, g.wire_cap, offs, NULL);
		ck_assert_int_gt(len, 0);
		rx_init(&rx, true, true, 0);
		iwt_fpdu_log_init(&log);
		iwt_fpdu_rx_run(&rx, wire, (size_t)len, &o, &log);
		ck_assert_int_eq(log.bad_guard, 0);
		ck_assert_int_eq(log.bad_contract, 0);
		ck_assert_int_eq(log.nrec, 2 * g.n);
		for (int i = 0; i < g.n; i++) {
			size_t pl = g.msgs[i].payload_len, got = pl > 7 ? pl - 7 : 0;

			ck_assert_int_eq(log.rec[2 * i + 1].type, IW_MPA_RX_FPDU);
			ck_assert(memcmp(log.payload + ppos, g.msgs[i].payload, got) == 0);
			ppos += got;
		}
		ck_assert_uint_eq(log.payload_len, ppos);
		iwt_fpdu_log_free(&log);
	}
	free(wire);
	gen_free(&g);
}
END_TEST

/* ---------- rx: errors ---------- */

/* After an error every call reports it again and takes nothing. */
static void check_dead(struct iw_mpa_rx *rx, struct iw_term_cause cause)
{
	struct iw_mpa_rx_event ev;
	struct iovec iov[4];
	uint8_t b[8] = { 0 };

	ck_assert_uint_eq(iw_mpa_rx_feed(rx, b, sizeof(b), &ev), 0);
	ck_assert_int_eq(ev.type, IW_MPA_RX_ERROR);
	ck_assert(iw_term_cause_eq(ev.cause, cause));
	ck_assert_int_eq(iw_mpa_rx_prepare(rx, iov, 4), 0);
	iw_mpa_rx_commit(rx, 4, &ev);
	ck_assert_int_eq(ev.type, IW_MPA_RX_ERROR);
	ck_assert(iw_term_cause_eq(ev.cause, cause));
	ck_assert(!iw_mpa_rx_at_boundary(rx));
}

/* Runs wire through a fresh rx (both modes) and expects `good` complete
 * FPDUs and then an ERROR with cause (any MPA CRC/length cause if
 * any_mpa). */
static void expect_error(const uint8_t *wire, size_t len, bool crc, bool markers, uint16_t max,
                         int good, struct iw_term_cause cause, bool any_mpa)
{
	for (int mode = 0; mode < 2; mode++) {
		struct iw_mpa_rx rx;
		struct iwt_fpdu_log log;
		struct iwt_fpdu_rx_opts o = { .mode = mode ? IWT_FPDU_READV : IWT_FPDU_FEED,
			                      .max_chunk = (size_t)iwt_rand_range(&rng, 1, 100),
			                      .max_iov = 6,
			                      .max_sink_iov = 3,
			                      .rng = &rng };
		const struct iwt_fpdu_rec *last;
		int fpdus = 0;

		rx_init(&rx, crc, markers, max);
		iwt_fpdu_log_init(&log);
		iwt_fpdu_rx_run(&rx, wire, len, &o, &log);
		ck_assert_int_eq(log.bad_guard, 0);
		ck_assert_int_eq(log.bad_contract, 0);
		ck_assert_int_gt(log.nrec, 0);
		last = &log.rec[log.nrec - 1];
		ck_assert_int_eq(last->type, IW_MPA_RX_ERROR);
		for (int i = 0; i < log.nrec; i++)
			fpdus += log.rec[i].type == IW_MPA_RX_FPDU;
		ck_assert_int_eq(fpdus, good);
		if (any_mpa)
			ck_assert(iw_term_cause_eq(last->cause, CAUSE_CRC) ||
			          iw_term_cause_eq(last->cause, CAUSE_LEN));
		else
			ck_assert(iw_term_cause_eq(last->cause, cause));
		check_dead(&rx, last->cause);
		iwt_fpdu_log_free(&log);
	}
}

/* Layout for corruption tests: A (good), B (victim, straddling 512 with
 * markers: its marker sits inside the ULP header), C (good), zeros. */
struct victim {
	uint8_t *wire;
	size_t len;
	size_t b_off, b_len;
	size_t end; /* end of C */
	uint32_t offs[3];
};

static void make_victim(struct victim *v, bool crc, bool markers)
{
	static uint8_t pa[490], pb[20], pc[100];
	uint8_t ha[18], hb[18], hc[14];
	struct iwt_fpdu_msg m[3];
	ssize_t n;

	iwt_fill_random(&rng, pa, sizeof(pa));
	iwt_fill_random(&rng, pb, sizeof(pb));
	iwt_fill_random(&rng, pc, sizeof(pc));
	make_hdr(&rng, ha, false, 3);
	make_hdr(&rng, hb, false, 0);
	make_hdr(&rng, hc, true, 0);
	m[0] = (struct iwt_fpdu_msg){ ha, 18, pa, 490 - 18 };
	m[1] = (struct iwt_fpdu_msg){ hb, 18, pb, 20 };
	m[2] = (struct iwt_fpdu_msg){ hc, 14, pc, 100 };
	v->len = 80000;
	v->wire = calloc(1, v->len);
	ck_assert_ptr_nonnull(v->wire);
	n = iwt_fpdu_stream(crc, markers, m, 3, v->wire, v->len, v->offs, NULL);
	ck_assert_int_gt(n, 0);
	v->end = (size_t)n;
	v->b_off = v->offs[1];
	v->b_len = v->offs[2] - v->offs[1];
	if (markers) {
		ck_assert_uint_eq(v->b_off, 500);
		ck_assert_uint_eq(v->b_len, 48);
		ck_assert_uint_eq(iw_get_be16(v->wire + 514), 12); /* FPDUPTR */
	}
}

/* Every byte of B corrupted (several masks): always an MPA CRC or length
 * error, never an FPDU event for B, never a crash or stray write. */
START_TEST(test_rx_byte_flips)
{
	static const uint8_t masks[] = { 0x01, 0x80, 0xFF, 0x10 };
	bool markers = _i;
	struct victim v;

	make_victim(&v, true, markers);
	for (size_t i = 0; i < v.b_len; i++) {
		for (size_t k = 0; k < sizeof(masks); k++) {
			v.wire[v.b_off + i] ^= masks[k];
			expect_error(v.wire, v.len, true, markers, 0, 1, CAUSE_CRC, true);
			v.wire[v.b_off + i] ^= masks[k];
		}
	}
	free(v.wire);
}
END_TEST

/* Marker errors: wrong FPDUPTR in a leading or inner marker, CRC on or
 * off; reserved bits are ignored. */
START_TEST(test_rx_marker_errors)
{
	for (int crc = 0; crc < 2; crc++) {
		struct victim v;
		size_t clean_len;

		make_victim(&v, crc, true);
		clean_len = v.len;
		/* Leading marker of A (stream offset 0) must point at 0. */
		v.wire[3] = 4;
		expect_error(v.wire, clean_len, crc, true, 0, 0, CAUSE_LEN, false);
		v.wire[3] = 0;
		/* Inner marker of B points 12 back; 8 or 0x100C is wrong. */
		v.wire[515] = 8;
		expect_error(v.wire, clean_len, crc, true, 0, 1, CAUSE_LEN, false);
		v.wire[515] = 12;
		v.wire[514] = 0x10;
		expect_error(v.wire, clean_len, crc, true, 0, 1, CAUSE_LEN, false);
		v.wire[514] = 0;
		/* Reserved bits set: ignored (the CRC, if on, is fixed up). */
		v.wire[512] = 0xAB;
		v.wire[513] = 0xCD;
		if (crc)
			fix_crc(v.wire + v.b_off, v.b_len);
		{
			struct iw_mpa_rx rx;
			struct iwt_fpdu_log log;
			struct iwt_fpdu_rx_opts o = { .mode = IWT_FPDU_FEED,
				                      .max_chunk = 13,
				                      .max_sink_iov = 2,
				                      .rng = &rng };

			rx_init(&rx, crc, true, 0);
			iwt_fpdu_log_init(&log);
			iwt_fpdu_rx_run(&rx, v.wire, v.end, &o, &log);
			ck_assert_int_eq(log.nrec, 6);
			ck_assert_int_eq(log.rec[5].type, IW_MPA_RX_FPDU);
			ck_assert_uint_eq(log.rec[5].fpdu_off, v.offs[2]);
			iwt_fpdu_log_free(&log);
		}
		free(v.wire);
	}
}
END_TEST

/* ULPDU_LENGTH below 2, below the callback's minimum, or above max. */
START_TEST(test_rx_length_errors)
{
	uint8_t hdr[64], pay[64], wire[256];
	struct iw_mpa_tx tx;
	ssize_t n;

	iwt_fill_random(&rng, pay, sizeof(pay));
	for (int crc = 0; crc < 2; crc++) {
		/* 0 and 1: rejected at the length field. */
		for (size_t u = 0; u < 2; u++) {
			iw_mpa_tx_init(&tx, crc, false);
			n = iwt_fpdu_build_flat(&tx, pay, u, NULL, 0, wire, sizeof(wire));
			expect_error(wire, (size_t)n, crc, false, 0, 0, CAUSE_LEN, false);
		}
		/* Tagged needs 14, untagged 18, Read Request 46. */
		struct {
			bool tagged;
			uint8_t op;
			size_t ulpdu;
			bool ok;
		} cases[] = {
			{ true, 0, 13, false },  { true, 0, 14, true },   { false, 3, 17, false },
			{ false, 3, 18, true },  { false, 1, 45, false }, { false, 1, 46, true },
			{ false, 1, 18, false }, { true, 1, 14, true },
		};
		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			size_t hl = make_hdr(&rng, hdr, cases[k].tagged, cases[k].op);
			struct iovec pl;
			struct iw_mpa_rx rx;
			struct iw_mpa_rx_event ev;
			size_t c;

			memcpy(hdr + hl, pay, 64 - hl);
			pl = (struct iovec){ pay, 0 };
			iw_mpa_tx_init(&tx, crc, false);
			n = iwt_fpdu_build_flat(&tx, hdr, cases[k].ulpdu, &pl, 1, wire,
			                        sizeof(wire));
			ck_assert_int_gt(n, 0);
			if (!cases[k].ok) {
				expect_error(wire, (size_t)n, crc, false, 0, 0, CAUSE_LEN, false);
				continue;
			}
			rx_init(&rx, crc, false, 0);
			c = iw_mpa_rx_feed(&rx, wire, (size_t)n, &ev);
			ck_assert_int_eq(ev.type, IW_MPA_RX_HEADER);
			iw_mpa_rx_set_sink(&rx, NULL, 0);
			iw_mpa_rx_feed(&rx, wire + c, (size_t)n - c, &ev);
			ck_assert_int_eq(ev.type, IW_MPA_RX_FPDU);
		}
		/* max_ulpdu 1000: 1000 passes, 1001 does not. */
		for (size_t u = 1000; u <= 1001; u++) {
			static uint8_t body[1001];
			uint8_t big[1100];
			struct iw_mpa_rx rx;
			struct iwt_fpdu_log log;
			struct iwt_fpdu_rx_opts o = { .mode = IWT_FPDU_FEED,
				                      .max_chunk = 64,
				                      .max_sink_iov = 2,
				                      .rng = &rng };

			make_hdr(&rng, body, true, 0);
			iw_mpa_tx_init(&tx, crc, false);
			n = iwt_fpdu_build_flat(&tx, body, u, NULL, 0, big, sizeof(big));
			ck_assert_int_gt(n, 0);
			if (u == 1001) {
				expect_error(big, (size_t)n, crc, false, 1000, 0, CAUSE_LEN, false);
				continue;
			}
			rx_init(&rx, crc, false, 1000);
			iwt_fpdu_log_init(&log);
			iwt_fpdu_rx_run(&rx, big, (size_t)n, &o, &log);
			ck_assert_int_eq(log.nrec, 2);
			ck_assert_int_eq(log.rec[1].type, IW_MPA_RX_FPDU);
			iwt_fpdu_log_free(&log);
		}
	}
}
END_TEST

/* CRC mismatch reports (2,0,2); with CRC off a garbage CRC field and
 * nonzero pad are accepted; nonzero pad under a matching CRC too. */
START_TEST(test_rx_crc_and_pad)
{
	uint8_t hdr[18], pay[1] = { 'Q' }, wire[64];
	struct iw_mpa_tx tx;
	struct iovec pl = { pay, 1 };
	ssize_t n;

	make_hdr(&rng, hdr, false, 3);
	for (int crc = 0; crc < 2; crc++) {
		struct iw_mpa_rx rx;
		struct iw_mpa_rx_event ev;
		size_t c;

		iw_mpa_tx_init(&tx, crc, false);
		n = iwt_fpdu_build_flat(&tx, hdr, 18, &pl, 1, wire, sizeof(wire));
		ck_assert_int_eq(n, 2 + 19 + 3 + 4);
		wire[21] = 0x5A; /* pad */
		wire[23] = 0xFF;
		if (crc) {
			expect_error(wire, (size_t)n, true, false, 0, 0, CAUSE_CRC, false);
			fix_crc(wire, (size_t)n);
		} else {
			wire[n - 1] = 0x77; /* CRC field ignored */
		}
		rx_init(&rx, crc, false, 0);
		c = iw_mpa_rx_feed(&rx, wire, (size_t)n, &ev);
		ck_assert_int_eq(ev.type, IW_MPA_RX_HEADER);
		iw_mpa_rx_set_sink(&rx, &(struct iovec){ pay, 1 }, 1);
		c += iw_mpa_rx_feed(&rx, wire + c, (size_t)n - c, &ev);
		ck_assert_int_eq(ev.type, IW_MPA_RX_FPDU);
		ck_assert_uint_eq(c, (size_t)n);
	}
}
END_TEST

static Suite *mpa_fpdu_suite(void)
{
	Suite *s = suite_create("mpa_fpdu");
	TCase *tx = tcase_create("tx");
	TCase *rx = tcase_create("rx");
	TCase *err = tcase_create("errors");

	tcase_add_checked_fixture(tx, setup, NULL);
	tcase_add_checked_fixture(rx, setup, NULL);
	tcase_add_checked_fixture(err, setup, NULL);
	tcase_add_test(tx, test_pad_lengths);
	tcase_add_test(tx, test_mulpdu_values);
	tcase_add_test(tx, test_mulpdu_fits);
	tcase_add_test(tx, test_known_write_crc);
	tcase_add_test(tx, test_known_terminate_len);
	tcase_add_test(tx, test_known_markers);
	tcase_add_test(tx, test_tx_errors);
	tcase_add_test(tx, test_tx_frame_marker_room);
	tcase_add_test(tx, test_tx_zero_copy);
	tcase_add_test(tx, test_tx_vs_ref);
	tcase_add_test(tx, test_tx_plain_iov_cap);
	tcase_add_test(tx, test_tx_build_hr);
	tcase_add_loop_test(rx, test_rx_feed_chunks, 0, 4);
	tcase_add_loop_test(rx, test_rx_readv_chunks, 0, 4);
	tcase_add_loop_test(rx, test_rx_one_byte, 0, 4);
	tcase_add_test(rx, test_rx_wrap);
	tcase_add_test(rx, test_rx_header_wait);
	tcase_add_test(rx, test_rx_prepare_lists);
	tcase_add_test(rx, test_rx_small_header);
	tcase_add_test(rx, test_rx_short_sink);
	tcase_add_loop_test(err, test_rx_byte_flips, 0, 2);
	tcase_add_test(err, test_rx_marker_errors);
	tcase_add_test(err, test_rx_length_errors);
	tcase_add_test(err, test_rx_crc_and_pad);
	suite_add_tcase(s, tx);
	suite_add_tcase(s, rx);
	suite_add_tcase(s, err);
	return s;
}

int main(void)
{
	return iwt_run_suite(mpa_fpdu_suite());
}
