/* The one-piece small-FPDU builder (iw_mpa_tx_build_frame_inl) against the
 * gather builder (iw_mpa_tx_build_frame_hr) on the same inputs: identical
 * wire bytes, return values, stream positions and frame fields, with and
 * without CRC and markers, for every payload length from 0 to past what
 * the room holds, split over 1-3 payload iovecs; nothing written outside
 * the room; bad arguments reported as the general path reports them. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"
#include "mpa/mpa_tx.h"
#include "iwt_check.h"

#define ROOM (64 + 64 + IW_MPA_PAD_MAX + IW_MPA_CRC_LEN) /* as a tx slot has */
#define CANARY 32
#define MAX_PL (ROOM + 8)
#define IOV_CAP 400

static uint64_t rng;

static void setup(void)
{
	rng = iwt_seed();
}

/* Concatenate a gather list. */
static size_t flatten(const struct iovec *iov, int n, uint8_t *out, size_t cap)
{
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		ck_assert_uint_le(off + iov[i].iov_len, cap);
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return off;
}

struct side {
	struct iw_mpa_tx tx;
	struct iw_mpa_tx_frame fr;
	uint8_t markers[IW_MPA_TX_MAX_MARKERS][IW_MPA_MARKER_LEN];
	uint8_t buf[IW_MPA_LEN_FIELD + ROOM + CANARY];
	struct iovec iov[IOV_CAP];
};

static void side_init(struct side *s, bool crc, bool markers, uint32_t stream_off)
{
	memset(s, 0, sizeof(*s));
	iw_mpa_tx_init(&s->tx, crc, markers);
	s->tx.stream_off = stream_off;
	s->fr.markers = s->markers;
	s->fr.markers_cap = IW_MPA_TX_MAX_MARKERS;
	memset(s->buf, 0xA5, sizeof(s->buf));
}

/* Build one FPDU both ways and compare everything observable. */
static void compare_one(bool crc, bool markers, uint32_t stream_off, size_t hdr_len,
			const uint8_t *pl, size_t pl_len, int nsplit)
{
	static struct side g, f;
	static uint8_t wg[IW_MPA_LEN_FIELD + MAX_PL + 200 + 1024], wf[sizeof(wg)];
	struct iovec payload[3];
	int np = 0;
	size_t cut1 = nsplit > 1 ? pl_len / 3 : pl_len, cut2 = nsplit > 2 ? 2 * pl_len / 3 : pl_len;

	payload[np++] = (struct iovec){ (void *)(uintptr_t)pl, cut1 };
	if (nsplit > 1)
		payload[np++] = (struct iovec){ (void *)(uintptr_t)(pl + cut1), cut2 - cut1 };
	if (nsplit > 2)
		payload[np++] = (struct iovec){ (void *)(uintptr_t)(pl + cut2), pl_len - cut2 };

	side_init(&g, crc, markers, stream_off);
	side_init(&f, crc, markers, stream_off);
	for (size_t i = 0; i < hdr_len; i++)
		g.buf[IW_MPA_LEN_FIELD + i] = f.buf[IW_MPA_LEN_FIELD + i] = (uint8_t)(0x40 + i);

	int ng = iw_mpa_tx_build_frame_hr(&g.tx, &g.fr, g.buf + IW_MPA_LEN_FIELD, hdr_len, payload, np,
					  g.iov, IOV_CAP);
	int nf = iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + IW_MPA_LEN_FIELD, hdr_len, ROOM,
					   payload, np, f.iov, IOV_CAP);
	ck_assert_int_gt(ng, 0);
	ck_assert_int_gt(nf, 0);
	size_t lg = flatten(g.iov, ng, wg, sizeof(wg)), lf = flatten(f.iov, nf, wf, sizeof(wf));
	ck_assert_msg(lg == lf && memcmp(wg, wf, lg) == 0,
		      "wire differs: crc %d markers %d off %u hdr %zu pl %zu split %d", crc, markers,
		      stream_off, hdr_len, pl_len, nsplit);
	ck_assert_uint_eq(g.tx.stream_off, f.tx.stream_off);
	ck_assert_uint_eq(g.fr.wire_len, f.fr.wire_len);
	ck_assert_uint_eq(f.fr.wire_len, lf);
	ck_assert_uint_eq(g.fr.n_markers, f.fr.n_markers);
	ck_assert_mem_eq(g.fr.len_be, f.fr.len_be, IW_MPA_LEN_FIELD);
	ck_assert_mem_eq(g.fr.trailer, f.fr.trailer, sizeof(g.fr.trailer));
	bool fits = !markers && hdr_len + pl_len + iw_mpa_pad_len((unsigned)(hdr_len + pl_len)) +
					    IW_MPA_CRC_LEN <= ROOM;
	if (fits)
		ck_assert_int_eq(nf, 1); /* one iovec, inside the room */
	else
		ck_assert_int_eq(nf, ng); /* the general path ran */
	if (fits) {
		/* The contiguous framer (the engine copies the payload behind
		 * the header itself) gives the same FPDU and records. */
		static struct side c;
		static uint8_t wc[sizeof(wg)];
		side_init(&c, crc, markers, stream_off);
		for (size_t i = 0; i < hdr_len; i++)
			c.buf[IW_MPA_LEN_FIELD + i] = (uint8_t)(0x40 + i);
		if (pl_len)
			memcpy(c.buf + IW_MPA_LEN_FIELD + hdr_len, pl, pl_len);
		iw_mpa_tx_frame_contig(&c.tx, &c.fr, c.buf + IW_MPA_LEN_FIELD, hdr_len + pl_len, c.iov);
		size_t lc = flatten(c.iov, 1, wc, sizeof(wc));
		ck_assert_msg(lc == lf && memcmp(wc, wf, lc) == 0, "contig wire differs: crc %d off %u hdr %zu pl %zu",
			      crc, stream_off, hdr_len, pl_len);
		ck_assert_uint_eq(c.tx.stream_off, f.tx.stream_off);
		ck_assert_uint_eq(c.fr.wire_len, f.fr.wire_len);
		ck_assert_uint_eq(c.fr.n_markers, f.fr.n_markers);
		ck_assert_mem_eq(c.fr.len_be, f.fr.len_be, IW_MPA_LEN_FIELD);
		ck_assert_mem_eq(c.fr.trailer, f.fr.trailer, sizeof(c.fr.trailer));
		for (size_t i = 0; i < CANARY; i++)
			ck_assert_uint_eq(c.buf[IW_MPA_LEN_FIELD + ROOM + i], 0xA5);
	}
	for (size_t i = 0; i < CANARY; i++)
		ck_assert_uint_eq(f.buf[IW_MPA_LEN_FIELD + ROOM + i], 0xA5);
}

START_TEST(test_every_length)
{
	static uint8_t pl[MAX_PL];
	static const size_t hdrs[] = { 0, 14, 18, 46, 64 };
	iwt_fill_random(&rng, pl, sizeof(pl));
	for (int crc = 0; crc < 2; crc++)
		for (int mk = 0; mk < 2; mk++)
			for (size_t h = 0; h < sizeof(hdrs) / sizeof(hdrs[0]); h++)
				for (size_t len = 0; len <= MAX_PL; len++) {
					uint32_t off = mk ? (uint32_t)iwt_rand_range(&rng, 0, 1023) & ~3u : 0;
					compare_one(crc, mk, off, hdrs[h], pl, len,
						    (int)(len % 3) + 1);
				}
}
END_TEST

/* A few FPDUs in a row keep the stream position in step (markers depend
 * on it) and each is identical to the gather build. */
START_TEST(test_stream_sequence)
{
	static uint8_t pl[MAX_PL];
	iwt_fill_random(&rng, pl, sizeof(pl));
	for (int mk = 0; mk < 2; mk++)
		for (uint32_t off = 0; off < 2048; off += 4 + 4 * (uint32_t)iwt_rand_range(&rng, 0, 40))
			compare_one(true, mk, off, 18, pl, (size_t)iwt_rand_range(&rng, 0, MAX_PL),
				    (int)iwt_rand_range(&rng, 1, 3));
}
END_TEST

START_TEST(test_bad_args_like_general)
{
	static struct side g, f;
	uint8_t pl[8] = { 0 };
	struct iovec bad[2] = { { NULL, 4 }, { pl, 8 } };
	struct iovec ok = { pl, 8 };

	side_init(&g, true, false, 0);
	side_init(&f, true, false, 0);
	/* NULL base with a length */
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + 2, 18, ROOM, bad, 2, f.iov, IOV_CAP),
			 iw_mpa_tx_build_frame_hr(&g.tx, &g.fr, g.buf + 2, 18, bad, 2, g.iov, IOV_CAP));
	/* no header pointer */
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, NULL, 0, ROOM, &ok, 1, f.iov, IOV_CAP), -EINVAL);
	/* negative count, NULL list */
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + 2, 18, ROOM, &ok, -1, f.iov, IOV_CAP),
			 -EINVAL);
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + 2, 18, ROOM, NULL, 1, f.iov, IOV_CAP),
			 -EINVAL);
	/* no iovec room: nothing changes */
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + 2, 18, ROOM, &ok, 1, f.iov, 0),
			 -ENOBUFS);
	ck_assert_uint_eq(f.tx.stream_off, 0);
	/* header bigger than the room: the general path builds it */
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + 2, 18, 10, &ok, 1, f.iov, IOV_CAP),
			 iw_mpa_tx_build_frame_hr(&g.tx, &g.fr, g.buf + 2, 18, &ok, 1, g.iov, IOV_CAP));
	ck_assert_uint_eq(f.tx.stream_off, g.tx.stream_off);
	/* a payload over the ULPDU maximum is refused as by the general path */
	struct iovec huge = { pl, (size_t)IW_MPA_ULPDU_MAX + 1 };
	ck_assert_int_eq(iw_mpa_tx_build_frame_inl(&f.tx, &f.fr, f.buf + 2, 18, ROOM, &huge, 1, f.iov, IOV_CAP),
			 -EMSGSIZE);
}
END_TEST

static Suite *mpa_tx_inl_suite(void)
{
	Suite *s = suite_create("mpa_tx_inl");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_every_length);
	tcase_add_test(tc, test_stream_sequence);
	tcase_add_test(tc, test_bad_args_like_general);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(mpa_tx_inl_suite());
}
