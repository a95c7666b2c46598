/* iw_raw_ooo_place: out-of-order FPDUs are placed only when whole, with a
 * good CRC, as valid tagged RDMA WRITEs that pass the STag lookup; all
 * else is left to the in-order path, and nothing is written outside the
 * region the lookup returns. */
#include <check.h>
#include <string.h>

#include "ddp/ddp_wire.h"
#include "iwt_check.h"
#include "iwt_common.h"
#include "mpa/crc32c.h"
#include "rdmap/rdmap_wire.h"
#include "stack/transport/raw/raw_transport.h"

#define STAG 0x1234u
#define REGION 4096

static uint8_t mem[3 * REGION]; /* guard | region | guard */
static uint8_t *region = mem + REGION;

static enum iw_stag_status fake_stag(void *ctx, uint32_t stag, uint64_t to, size_t len, unsigned access,
				     uint8_t **addr)
{
	(void)ctx;
	if (stag != STAG)
		return IW_STAG_INVALID;
	if (!(access & IW_RDMAP_ACC_REMOTE_WRITE))
		return IW_STAG_ACCESS;
	if (to > REGION || len > REGION - to)
		return IW_STAG_BOUNDS;
	*addr = region + to;
	return IW_STAG_OK;
}

static struct iw_rdmap_conn conn;
static struct iw_raw_stats st;

static void setup(void)
{
	memset(&conn, 0, sizeof(conn));
	memset(&st, 0, sizeof(st));
	memset(mem, 0xEE, sizeof(mem));
	conn.state = IW_RDMAP_ST_RTS;
	conn.cfg.crc = true;
	conn.ops.stag = fake_stag;
}

/* An FPDU at out: ULPDU_LENGTH, DDP header, payload, pad, CRC. */
static uint32_t fpdu(uint8_t *out, bool tagged, uint8_t op, uint32_t stag, uint64_t to, const uint8_t *pl,
		     uint32_t plen)
{
	struct iw_ddp_hdr h = { .tagged = tagged, .last = true, .ulp_ctrl = iw_rdmap_ctrl(op), .stag = stag, .to = to };
	size_t hl = iw_ddp_hdr_encode(&h, out + 2);
	uint32_t ulen = (uint32_t)hl + plen;
	out[0] = (uint8_t)(ulen >> 8);
	out[1] = (uint8_t)ulen;
	memcpy(out + 2 + hl, pl, plen);
	uint32_t pad = iw_mpa_pad_len(ulen);
	memset(out + 2 + ulen, 0, pad);
	uint32_t n = 2 + ulen + pad;
	iw_crc32c_put_wire(out + n, iw_crc32c(out, n));
	return n + 4;
}

static bool guards_intact(void)
{
	for (int i = 0; i < REGION; i++)
		if (mem[i] != 0xEE || mem[2 * REGION + i] != 0xEE)
			return false;
	return true;
}

START_TEST(write_is_placed)
{
	uint8_t seg[2048], pl[100];
	for (int i = 0; i < 100; i++)
		pl[i] = (uint8_t)i;
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG, 200, pl, 100);
	iw_raw_ooo_place(&conn, seg, n, &st);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 1);
	ck_assert_uint_eq(st.ooo_bytes_placed, 100);
	ck_assert_mem_eq(region + 200, pl, 100);
	ck_assert(guards_intact());
}
END_TEST

START_TEST(two_fpdus_and_a_send_in_one_segment)
{
	uint8_t seg[4096], a[64], b[33];
	memset(a, 0xA1, sizeof(a));
	memset(b, 0xB2, sizeof(b));
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG, 0, a, sizeof(a));
	n += fpdu(seg + n, false, IW_OP_SEND, 0, 0, b, sizeof(b));
	n += fpdu(seg + n, true, IW_OP_WRITE, STAG, 1000, b, sizeof(b));
	iw_raw_ooo_place(&conn, seg, n, &st);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 2);
	ck_assert_uint_eq(st.ooo_skipped, 1);
	ck_assert_mem_eq(region, a, sizeof(a));
	ck_assert_mem_eq(region + 1000, b, sizeof(b));
}
END_TEST

START_TEST(bad_crc_places_nothing)
{
	uint8_t seg[2048], pl[50];
	memset(pl, 0x5A, sizeof(pl));
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG, 0, pl, sizeof(pl));
	seg[20] ^= 1;
	iw_raw_ooo_place(&conn, seg, n, &st);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 0);
	ck_assert_uint_eq(st.ooo_bad_crc, 1);
	ck_assert_uint_eq(region[0], 0xEE);
}
END_TEST

START_TEST(partial_fpdu_places_nothing)
{
	uint8_t seg[2048], pl[500];
	memset(pl, 1, sizeof(pl));
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG, 0, pl, sizeof(pl));
	iw_raw_ooo_place(&conn, seg, n - 1, &st);
	ck_assert_uint_eq(st.ooo_partial, 1);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 0);
	ck_assert_uint_eq(region[0], 0xEE);
}
END_TEST

START_TEST(lookup_failures_and_other_opcodes_are_skipped)
{
	uint8_t seg[8192], pl[64];
	memset(pl, 7, sizeof(pl));
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG + 1, 0, pl, sizeof(pl));           /* unknown STag */
	n += fpdu(seg + n, true, IW_OP_WRITE, STAG, REGION - 10, pl, sizeof(pl));         /* out of bounds */
	n += fpdu(seg + n, true, IW_OP_READ_RESP, STAG, 0, pl, sizeof(pl));               /* not a WRITE */
	n += fpdu(seg + n, true, IW_OP_WRITE, STAG, UINT64_MAX - 5, pl, sizeof(pl));      /* TO wraps */
	iw_raw_ooo_place(&conn, seg, n, &st);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 0);
	ck_assert_uint_eq(st.ooo_skipped, 4);
	ck_assert(guards_intact());
	for (int i = 0; i < REGION; i++)
		ck_assert_uint_eq(region[i], 0xEE);
}
END_TEST

START_TEST(no_crc_markers_or_stopped_stream_place_nothing)
{
	uint8_t seg[2048], pl[16];
	memset(pl, 3, sizeof(pl));
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG, 0, pl, sizeof(pl));
	conn.cfg.crc = false;
	iw_raw_ooo_place(&conn, seg, n, &st);
	conn.cfg.crc = true;
	conn.cfg.markers_rx = true;
	iw_raw_ooo_place(&conn, seg, n, &st);
	conn.cfg.markers_rx = false;
	conn.state = IW_RDMAP_ST_TERMINATING;
	iw_raw_ooo_place(&conn, seg, n, &st);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 0);
	ck_assert_uint_eq(st.ooo_skipped, 3);
	ck_assert_uint_eq(region[0], 0xEE);
}
END_TEST

START_TEST(max_ulpdu_rx_is_respected)
{
	uint8_t seg[2048], pl[200];
	memset(pl, 9, sizeof(pl));
	uint32_t n = fpdu(seg, true, IW_OP_WRITE, STAG, 0, pl, sizeof(pl));
	conn.cfg.max_ulpdu_rx = 100;
	iw_raw_ooo_place(&conn, seg, n, &st);
	ck_assert_uint_eq(st.ooo_fpdus_placed, 0);
	ck_assert_uint_eq(region[0], 0xEE);
}
END_TEST

/* Random bytes and randomly damaged valid FPDUs: never a write outside
 * the region; damaged FPDUs (CRC) are never placed. */
START_TEST(random_segments_stay_in_bounds)
{
	uint64_t rng = iwt_seed() ^ 0x0005eed;
	uint8_t seg[4096], pl[1500];
	for (int it = 0; it < 20000; it++) {
		uint32_t n;
		if (it & 1) {
			n = (uint32_t)iwt_rand_range(&rng, 0, sizeof(seg));
			for (uint32_t i = 0; i < n; i++)
				seg[i] = (uint8_t)iwt_rand(&rng);
		} else {
			uint32_t plen = (uint32_t)iwt_rand_range(&rng, 0, sizeof(pl));
			for (uint32_t i = 0; i < plen; i++)
				pl[i] = (uint8_t)iwt_rand(&rng);
			n = fpdu(seg, true, IW_OP_WRITE, STAG, iwt_rand_range(&rng, 0, REGION), pl, plen);
			seg[iwt_rand_range(&rng, 0, n - 1)] ^= (uint8_t)(1u << iwt_rand_range(&rng, 0, 7));
		}
		uint64_t placed = st.ooo_fpdus_placed;
		iw_raw_ooo_place(&conn, seg, n, &st);
		if (!(it & 1))
			ck_assert_msg(st.ooo_fpdus_placed == placed, "a damaged FPDU was placed (iteration %d)", it);
	}
	ck_assert(guards_intact());
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("raw_ooo");
	TCase *tc = tcase_create("place");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, write_is_placed);
	tcase_add_test(tc, two_fpdus_and_a_send_in_one_segment);
	tcase_add_test(tc, bad_crc_places_nothing);
	tcase_add_test(tc, partial_fpdu_places_nothing);
	tcase_add_test(tc, lookup_failures_and_other_opcodes_are_skipped);
	tcase_add_test(tc, no_crc_markers_or_stopped_stream_place_nothing);
	tcase_add_test(tc, max_ulpdu_rx_is_respected);
	tcase_add_test(tc, random_segments_stay_in_bounds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
