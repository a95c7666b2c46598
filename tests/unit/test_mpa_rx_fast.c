/* The deframer's whole-field fast paths (copy mode, no markers) against
 * its general path: the same stream fed whole, split at every byte, one
 * byte at a time (never fast: the general path is the reference), in
 * random chunks, and through prepare/commit must give identical events,
 * identical stream positions for them, and identical sink memory. Valid
 * streams, bad CRCs, bad lengths and random bit flips. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "iw_bytes.h"
#include "iwt_common.h"
#include "iwt_fpdu.h"
#include "mpa/crc32c.h"
#include "mpa/mpa_rx.h"
#include "iwt_check.h"

#define CAUSE_CRC IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_CRC)
#define CAUSE_LEN IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_MARKER_LEN)

#define MAX_FPDUS 8
#define MAX_PAYLOAD 300
#define STREAM_CAP (MAX_FPDUS * (2 + 18 + MAX_PAYLOAD + 3 + 4))
#define SINK_SLOT (MAX_PAYLOAD + 32)
#define MAX_ULPDU 1000

static uint64_t rng;

static void setup(void)
{
	rng = iwt_seed();
}

struct rec {
	enum iw_mpa_rx_event_type type;
	uint16_t hdr_len, ulpdu_len, payload_len;
	uint32_t fpdu_off;
	uint8_t hdr[IW_MPA_RX_MAX_HDR];
	struct iw_term_cause cause;
	size_t at; /* stream bytes consumed when the event was reported */
};

struct run {
	struct iw_mpa_rx rx;
	struct rec r[2 * MAX_FPDUS + 2];
	int n;
	int headers;
	struct iovec sink[3];
	uint8_t mem[MAX_FPDUS + 1][SINK_SLOT];
	size_t pos;
	bool stop;
};

/* Verified placement for the runs initialised while set (the reference
 * never uses it). */
static bool verified;
static uint8_t stage[MAX_ULPDU];

static void run_init(struct run *R, bool crc)
{
	struct iw_mpa_rx_config cfg = {
		.crc = crc, .markers = false, .max_ulpdu = MAX_ULPDU, .ulp_lens = iwt_fpdu_ulp_lens,
		.stage = verified ? stage : NULL, .stage_len = sizeof(stage),
	};

	memset(R, 0, sizeof(*R));
	memset(R->mem, 0xEE, sizeof(R->mem));
	iw_mpa_rx_init(&R->rx, &cfg);
}

/* The k-th FPDU's sink: one of several shapes, decided by k alone so every
 * run of a stream sees the same ones. */
static void give_sink(struct run *R, uint16_t plen)
{
	int k = R->headers++;
	uint8_t *m = R->mem[k < MAX_FPDUS ? k : MAX_FPDUS] + 8;
	size_t a = plen / 3, b = plen / 3;

	switch (k % 5) {
	case 0: /* one iovec, room to spare */
		R->sink[0] = (struct iovec){ m, (size_t)plen + 8 };
		iw_mpa_rx_set_sink(&R->rx, R->sink, 1);
		break;
	case 1: /* three pieces, the middle one empty */
		R->sink[0] = (struct iovec){ m, a };
		R->sink[1] = (struct iovec){ m + a, 0 };
		R->sink[2] = (struct iovec){ m + a, (size_t)plen - a };
		iw_mpa_rx_set_sink(&R->rx, R->sink, 3);
		break;
	case 2: /* short: the rest is dropped */
		R->sink[0] = (struct iovec){ m, (size_t)plen / 2 };
		iw_mpa_rx_set_sink(&R->rx, R->sink, 1);
		break;
	case 3: /* no sink */
		iw_mpa_rx_set_sink(&R->rx, NULL, 0);
		break;
	default: /* a NULL-based piece, then two real ones */
		R->sink[0] = (struct iovec){ NULL, 5 };
		R->sink[1] = (struct iovec){ m, b };
		R->sink[2] = (struct iovec){ m + b + 3, (size_t)plen - b };
		iw_mpa_rx_set_sink(&R->rx, R->sink, 3);
		break;
	}
}

static void on_ev(struct run *R, const struct iw_mpa_rx_event *ev)
{
	struct rec *r;

	if (ev->type == IW_MPA_RX_NONE)
		return;
	ck_assert_int_lt(R->n, (int)(sizeof(R->r) / sizeof(R->r[0])));
	r = &R->r[R->n++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	r->ulpdu_len = ev->ulpdu_len;
	r->fpdu_off = ev->fpdu_off;
	r->at = R->pos;
	if (ev->type == IW_MPA_RX_ERROR) {
		r->cause = ev->cause;
		R->stop = true;
		return;
	}
	r->hdr_len = ev->hdr_len;
	r->payload_len = ev->payload_len;
	ck_assert_uint_le(ev->hdr_len, IW_MPA_RX_MAX_HDR);
	memcpy(r->hdr, ev->hdr, ev->hdr_len);
	if (ev->type == IW_MPA_RX_HEADER)
		give_sink(R, ev->payload_len);
}

/* Copy mode, chunk boundaries at cuts[] (ascending, inside (0, len)). */
static void feed_cuts(struct run *R, const uint8_t *s, size_t len, const size_t *cuts, int ncuts)
{
	for (int c = 0; c <= ncuts && !R->stop; c++) {
		size_t end = c < ncuts ? cuts[c] : len;

		while (R->pos < end && !R->stop) {
			struct iw_mpa_rx_event ev;
			size_t n = iw_mpa_rx_feed(&R->rx, s + R->pos, end - R->pos, &ev);

			R->pos += n;
			if (ev.type == IW_MPA_RX_NONE) {
				ck_assert_uint_eq(R->pos, end); /* NONE only when all was taken */
				break;
			}
			on_ev(R, &ev);
		}
	}
}

static void feed_step(struct run *R, const uint8_t *s, size_t len, size_t step)
{
	size_t cuts[STREAM_CAP];
	int n = 0;

	for (size_t at = step; at < len; at += step)
		cuts[n++] = at;
	feed_cuts(R, s, len, cuts, n);
}

static void feed_random(struct run *R, const uint8_t *s, size_t len, uint64_t *r)
{
	size_t cuts[STREAM_CAP];
	int n = 0;

	for (size_t at = 1 + iwt_rand(r) % 40; at < len; at += 1 + iwt_rand(r) % 40)
		cuts[n++] = at;
	feed_cuts(R, s, len, cuts, n);
}

/* Zero-copy mode: prepare, copy up to avail bytes into the list, commit. */
static void commit_random(struct run *R, const uint8_t *s, size_t len, uint64_t *r)
{
	int guard = 0;

	while (R->pos < len && !R->stop) {
		struct iovec iov[8];
		int cap = 1 + (int)(iwt_rand(r) % 8);
		int n = iw_mpa_rx_prepare(&R->rx, iov, cap);
		size_t avail = len - R->pos, lim = 1 + iwt_rand(r) % 64, k = 0;
		struct iw_mpa_rx_event ev;

		ck_assert_int_gt(n, 0);
		ck_assert_int_lt(guard++, 100000);
		if (lim > avail)
			lim = avail;
		for (int i = 0; i < n && k < lim; i++) {
			size_t m = iov[i].iov_len < lim - k ? iov[i].iov_len : lim - k;

			memcpy(iov[i].iov_base, s + R->pos + k, m);
			k += m;
		}
		R->pos += k;
		iw_mpa_rx_commit(&R->rx, k, &ev);
		on_ev(R, &ev);
	}
}

static void same_events(const struct run *a, const struct run *b, bool positions);

/* Reference a (streaming placement) against verified run b: the same
 * events, and the same memory except that an FPDU whose CRC failed left
 * its sink untouched in b (a may hold some of its bytes). */
static void same_verified(const struct run *a, const struct run *b, bool positions)
{
	same_events(a, b, positions);
	int bad = -1;
	if (b->n >= 2 && b->r[b->n - 1].type == IW_MPA_RX_ERROR && b->r[b->n - 2].type == IW_MPA_RX_HEADER &&
	    b->r[b->n - 1].cause.ecode == CAUSE_CRC.ecode)
		bad = b->headers - 1;
	for (int k = 0; k <= MAX_FPDUS; k++) {
		if (k == bad) {
			for (size_t i = 0; i < SINK_SLOT; i++)
				ck_assert_uint_eq(b->mem[k][i], 0xEE);
		} else {
			ck_assert_mem_eq(a->mem[k], b->mem[k], SINK_SLOT);
		}
	}
}

static void same(const struct run *a, const struct run *b, bool positions)
{
	same_events(a, b, positions);
	ck_assert_mem_eq(a->mem, b->mem, sizeof(a->mem));
}

static void same_events(const struct run *a, const struct run *b, bool positions)
{
	ck_assert_int_eq(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		const struct rec *x = &a->r[i], *y = &b->r[i];

		ck_assert_int_eq(x->type, y->type);
		ck_assert_uint_eq(x->hdr_len, y->hdr_len);
		ck_assert_uint_eq(x->ulpdu_len, y->ulpdu_len);
		ck_assert_uint_eq(x->payload_len, y->payload_len);
		ck_assert_uint_eq(x->fpdu_off, y->fpdu_off);
		ck_assert_mem_eq(x->hdr, y->hdr, x->hdr_len);
		ck_assert_uint_eq(x->cause.layer, y->cause.layer);
		ck_assert_uint_eq(x->cause.etype, y->cause.etype);
		ck_assert_uint_eq(x->cause.ecode, y->cause.ecode);
		if (positions)
			ck_assert_uint_eq(x->at, y->at);
	}
}

/* ---------- streams ---------- */

static size_t put_fpdu(uint8_t *out, bool crc, const uint8_t *hdr, size_t hl, const uint8_t *pl, size_t plen)
{
	size_t ulen = hl + plen, pad = iw_mpa_pad_len((unsigned)ulen), n = 2;

	iw_put_be16(out, (uint16_t)ulen);
	memcpy(out + n, hdr, hl);
	n += hl;
	memcpy(out + n, pl, plen);
	n += plen;
	memset(out + n, 0, pad);
	n += pad;
	iw_crc32c_put_wire(out + n, crc ? iw_crc32c(out, n) : 0);
	return n + 4;
}

/* Valid for iwt_fpdu_ulp_lens: tagged 14-byte or untagged 18-byte headers
 * (no Read Requests, whose 46-byte minimum random payloads miss). */
static size_t gen_stream(uint64_t *r, bool crc, uint8_t *out)
{
	int n = 1 + (int)(iwt_rand(r) % MAX_FPDUS);
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		uint8_t hdr[18], pl[MAX_PAYLOAD];
		bool tagged = iwt_rand(r) & 1;
		size_t hl = tagged ? 14 : 18;
		size_t plen = iwt_rand(r) % 4 == 0 ? iwt_rand(r) % 4 : (size_t)(iwt_rand(r) % MAX_PAYLOAD);

		iwt_fill_random(r, hdr, hl);
		hdr[0] = (uint8_t)((tagged ? 0x80 : 0x00) | 0x41);
		hdr[1] = (uint8_t)(0x40 | (tagged ? 0 : 3));
		iwt_fill_random(r, pl, plen);
		len += put_fpdu(out + len, crc, hdr, hl, pl, plen);
	}
	return len;
}

static struct run ref_run, alt_run;

/* Every way of feeding s against the one-byte reference. */
static void check_all_ways(const uint8_t *s, size_t len, bool crc, bool every_split, uint64_t *r)
{
	run_init(&ref_run, crc);
	feed_step(&ref_run, s, len, 1);

	run_init(&alt_run, crc);
	feed_cuts(&alt_run, s, len, NULL, 0);
	same(&ref_run, &alt_run, true);

	for (int k = 0; k < 4; k++) {
		run_init(&alt_run, crc);
		feed_random(&alt_run, s, len, r);
		same(&ref_run, &alt_run, true);
		run_init(&alt_run, crc);
		commit_random(&alt_run, s, len, r);
		same(&ref_run, &alt_run, false);
	}
	for (size_t at = 1; every_split && at < len; at++) {
		run_init(&alt_run, crc);
		feed_cuts(&alt_run, s, len, &at, 1);
		same(&ref_run, &alt_run, true);
	}
}

static const struct rec *last_rec(const struct run *R)
{
	ck_assert_int_gt(R->n, 0);
	return &R->r[R->n - 1];
}

START_TEST(test_valid_streams)
{
	static uint8_t s[STREAM_CAP];
	bool crc = _i & 1;

	for (int it = 0; it < 60; it++) {
		size_t len = gen_stream(&rng, crc, s);

		check_all_ways(s, len, crc, it < 12, &rng);
		ck_assert_int_eq(last_rec(&ref_run)->type, IW_MPA_RX_FPDU);
		ck_assert_uint_eq(ref_run.pos, len);
		ck_assert(!ref_run.stop);
	}
}
END_TEST

/* A small SEND-like FPDU whole, then its CRC broken in each byte. */
START_TEST(test_bad_crc)
{
	static uint8_t s[STREAM_CAP];
	const uint8_t hdr[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	const uint8_t pl[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	size_t len = put_fpdu(s, true, hdr, sizeof(hdr), pl, sizeof(pl));

	for (size_t i = 0; i < len; i++) {
		/* Skip the length field: that is the bad-length test. */
		if (i < 2)
			continue;
		s[i] ^= 0x10;
		check_all_ways(s, len, true, true, &rng);
		ck_assert_int_eq(last_rec(&ref_run)->type, IW_MPA_RX_ERROR);
		ck_assert(last_rec(&ref_run)->cause.ecode == CAUSE_CRC.ecode);
		ck_assert_uint_eq(ref_run.pos, len);
		s[i] ^= 0x10;
	}
	/* Without CRC the same flips are accepted. */
	len = put_fpdu(s, false, hdr, sizeof(hdr), pl, sizeof(pl));
	s[len - 1] ^= 0xFF;
	check_all_ways(s, len, false, true, &rng);
	ck_assert_int_eq(last_rec(&ref_run)->type, IW_MPA_RX_FPDU);
}
END_TEST

/* ULPDU_LENGTH 0, 1, below the header, below the Read Request minimum,
 * above the maximum; each whole in the chunk (fast-path candidates). */
START_TEST(test_bad_length)
{
	static uint8_t s[STREAM_CAP];
	uint8_t hdr[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	const uint8_t pl[40] = { 0 };
	const uint16_t bad[] = { 0, 1, 10, 17, 30, MAX_ULPDU + 1, 0xFFFF };

	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		size_t len = put_fpdu(s, true, hdr, sizeof(hdr), pl, sizeof(pl));

		/* 30: valid for a SEND, short of a Read Request's 46. */
		hdr[1] = (uint8_t)(0x40 | (bad[b] == 30 ? 1 : 3));
		len = put_fpdu(s, true, hdr, sizeof(hdr), pl, bad[b] == 30 ? 12 : sizeof(pl));
		iw_put_be16(s, bad[b]);
		iw_crc32c_put_wire(s + len - 4, iw_crc32c(s, len - 4));
		check_all_ways(s, len, true, true, &rng);
		ck_assert_int_eq(last_rec(&ref_run)->type, IW_MPA_RX_ERROR);
		ck_assert(last_rec(&ref_run)->cause.ecode == CAUSE_LEN.ecode);
	}
}
END_TEST

/* Random bit flips anywhere in valid streams: whatever the outcome, all
 * ways agree. */
START_TEST(test_flips)
{
	static uint8_t s[STREAM_CAP];

	for (int it = 0; it < 150; it++) {
		bool crc = iwt_rand(&rng) & 1;
		size_t len = gen_stream(&rng, crc, s);
		int flips = 1 + (int)(iwt_rand(&rng) % 3);

		for (int f = 0; f < flips; f++)
			s[iwt_rand(&rng) % len] ^= (uint8_t)(1u << (iwt_rand(&rng) % 8));
		check_all_ways(s, len, crc, false, &rng);
	}
}
END_TEST

/* A valid FPDU followed by a partial one: the fast path takes the first,
 * the general path keeps the rest, and a later chunk finishes it. */
START_TEST(test_whole_then_partial)
{
	static uint8_t s[STREAM_CAP];
	const uint8_t hdr[14] = { 0xC1, 0x40, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0 };
	const uint8_t pl[100] = { 7 };
	size_t a = put_fpdu(s, true, hdr, sizeof(hdr), pl, 8);
	size_t len = a + put_fpdu(s + a, true, hdr, sizeof(hdr), pl, sizeof(pl));

	for (size_t cut = a; cut < len; cut++) {
		run_init(&ref_run, true);
		feed_step(&ref_run, s, len, 1);
		run_init(&alt_run, true);
		feed_cuts(&alt_run, s, len, &cut, 1);
		same(&ref_run, &alt_run, true);
		ck_assert_int_eq(alt_run.n, 4);
		ck_assert_uint_eq(alt_run.r[1].at, a);
	}
}
END_TEST

/* Verified placement (stage, then CRC, then copy) against streaming
 * placement: valid streams and streams with flipped bits, fed every way.
 * An FPDU with a bad CRC must leave its sink untouched. */
static void check_verified(const uint8_t *s, size_t len, bool every_split, uint64_t *r)
{
	verified = false;
	run_init(&ref_run, true);
	feed_step(&ref_run, s, len, 1);
	verified = true;
	run_init(&alt_run, true);
	feed_cuts(&alt_run, s, len, NULL, 0);
	same_verified(&ref_run, &alt_run, true);
	run_init(&alt_run, true);
	feed_step(&alt_run, s, len, 1);
	same_verified(&ref_run, &alt_run, true);
	for (int k = 0; k < 4; k++) {
		run_init(&alt_run, true);
		feed_random(&alt_run, s, len, r);
		same_verified(&ref_run, &alt_run, true);
		run_init(&alt_run, true);
		commit_random(&alt_run, s, len, r);
		same_verified(&ref_run, &alt_run, false);
	}
	for (size_t at = 1; every_split && at < len; at++) {
		run_init(&alt_run, true);
		feed_cuts(&alt_run, s, len, &at, 1);
		same_verified(&ref_run, &alt_run, true);
	}
	verified = false;
}

START_TEST(test_verified)
{
	static uint8_t s[STREAM_CAP];
	int bad = 0;

	for (int it = 0; it < 200; it++) {
		size_t len = gen_stream(&rng, true, s);

		if (it % 4) {
			/* Flip a payload-ish byte of a random FPDU (or anywhere). */
			s[iwt_rand(&rng) % len] ^= (uint8_t)(1u << (iwt_rand(&rng) % 8));
		}
		check_verified(s, len, it < 20, &rng);
		if (alt_run.n && alt_run.r[alt_run.n - 1].type == IW_MPA_RX_ERROR)
			bad++;
	}
	ck_assert_int_gt(bad, 50); /* the flips did exercise the error path */
}
END_TEST

/* The stage bounds the ULPDU accepted: a shorter stage lowers max_ulpdu. */
START_TEST(test_verified_stage_bounds_ulpdu)
{
	struct iw_mpa_rx rx;
	struct iw_mpa_rx_config cfg = { .crc = true, .max_ulpdu = 1000, .stage = stage, .stage_len = 300 };

	iw_mpa_rx_init(&rx, &cfg);
	ck_assert_uint_eq(rx.cfg.max_ulpdu, 300);
}
END_TEST

Suite *mpa_rx_fast_suite(void)
{
	Suite *s = suite_create("mpa_rx_fast");
	TCase *tc = tcase_create("fast_vs_general");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_valid_streams, 0, 2);
	tcase_add_test(tc, test_bad_crc);
	tcase_add_test(tc, test_bad_length);
	tcase_add_test(tc, test_flips);
	tcase_add_test(tc, test_whole_then_partial);
	tcase_add_test(tc, test_verified);
	tcase_add_test(tc, test_verified_stage_bounds_ulpdu);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(mpa_rx_fast_suite());
}
