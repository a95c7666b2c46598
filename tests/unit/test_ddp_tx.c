/* DDP transmit segmentation shape: a message longer than one MULPDU is
 * cut into the fewest segments of near-equal size, not full segments and
 * a small remainder (the receiver pays per FPDU). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ddp/ddp_tx.h"
#include "ddp/ddp_wire.h"
#include "iwt_check.h"
#include "iwt_common.h"

#define CTRL_WRITE ((uint8_t)0x40)
#define CTRL_SEND ((uint8_t)0x43)

/* Cut one message; check the segment count and sizes and that the
 * payload comes out whole and in order. */
static void check_shape(bool tagged, size_t len, size_t mulpdu, uint8_t *data)
{
	size_t htot = tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
	size_t cap = mulpdu - htot, want_n = len ? (len + cap - 1) / cap : 1;
	size_t seen = 0, smallest = SIZE_MAX, largest = 0;
	struct iovec sgl = { data, len };
	struct iw_ddp_tx_msg m;
	size_t nseg = 0, last = 0;

	if (tagged)
		iw_ddp_tx_msg_tagged(&m, CTRL_WRITE, 5, 1000, &sgl, 1);
	else
		iw_ddp_tx_msg_untagged(&m, CTRL_SEND, 0, 0, 1, &sgl, 1);
	while (!iw_ddp_tx_done(&m)) {
		uint8_t hdr[IW_DDP_TX_MAX_HDR];
		struct iovec iov[4];
		size_t hl, pl;
		int n = iw_ddp_tx_next(&m, mulpdu, hdr, &hl, iov, 4, &pl);

		ck_assert_int_ge(n, 0);
		ck_assert_uint_le(hl + pl, mulpdu);
		if (n > 0)
			ck_assert_ptr_eq(iov[0].iov_base, data + seen);
		seen += pl;
		nseg++;
		if (seen < len) {
			/* no pad but in the last (or a full segment of an odd MULPDU) */
			ck_assert(pl % 4 == 0 || pl == cap);
			if (pl < smallest)
				smallest = pl;
		}
		if (pl > largest)
			largest = pl;
		last = pl;
		ck_assert_uint_le(nseg, want_n);
	}
	ck_assert_uint_eq(seen, len);
	ck_assert_uint_eq(nseg, want_n);
	/* Equal up to the rounding to 4, and no small remainder: even the
	 * last is within the accumulated rounding of the mean. */
	if (nseg > 2)
		ck_assert_uint_le(largest - smallest, 4);
	if (nseg > 1)
		ck_assert_uint_ge(last + 4 * nseg, len / nseg);
}

START_TEST(test_tx_equal_known)
{
	static uint8_t data[1 << 20];

	/* 64 KiB at the loopback MULPDU: three ~21.8 KiB segments, not 2 x 32748 + 40. */
	check_shape(true, 65536, 32762, data);
	check_shape(true, 1 << 20, 32762, data);
	check_shape(false, 65536, 32762, data);
	/* fits one segment: one segment, whatever its size */
	check_shape(true, 32748, 32762, data);
	check_shape(true, 5, 32762, data);
	check_shape(true, 0, 32762, data);
	/* tiny MULPDUs */
	check_shape(true, 10, 15, data);
	check_shape(false, 10, 19, data);
	check_shape(true, 1000, 14 + 7, data);
}
END_TEST

START_TEST(test_tx_equal_random)
{
	static uint8_t data[300000];
	uint64_t s = iwt_seed();

	for (int i = 0; i < 2000; i++) {
		size_t len = (size_t)iwt_rand_range(&s, 0, sizeof(data));
		size_t mulpdu = (size_t)iwt_rand_range(&s, 19, 65535);

		if (i % 3 == 0)
			mulpdu = (size_t)iwt_rand_range(&s, 19, 200);
		if (i % 3 == 0 && len > 20000)
			len %= 20000;
		check_shape(i & 1, len, mulpdu, data);
	}
}
END_TEST

/* Every segment header is what iw_ddp_hdr_encode writes for the fields
 * the segment should carry (the transmit path writes it directly). */
static void check_headers(bool tagged, size_t len, size_t mulpdu, const struct iovec *sgl, int nsge,
			  size_t ext_len, uint64_t *s)
{
	uint8_t ext[28];
	struct iw_ddp_tx_msg m;
	uint32_t stag = (uint32_t)iwt_rand(s), qn = (uint32_t)iwt_rand_range(s, 0, 2);
	uint32_t msn = (uint32_t)iwt_rand(s), word = (uint32_t)iwt_rand(s);
	uint64_t to = iwt_rand(s);
	uint8_t ctrl = (uint8_t)iwt_rand(s);
	size_t off = 0;

	iwt_fill_random(s, ext, sizeof(ext));
	if (tagged)
		iw_ddp_tx_msg_tagged(&m, ctrl, stag, to, sgl, nsge);
	else
		iw_ddp_tx_msg_untagged(&m, ctrl, word, qn, msn, sgl, nsge);
	m.ulp_ext = ext;
	m.ulp_ext_len = (uint8_t)ext_len;
	ck_assert_uint_eq(m.len, len);
	while (!iw_ddp_tx_done(&m)) {
		uint8_t hdr[IW_DDP_TX_MAX_HDR], want[IW_DDP_TX_MAX_HDR];
		struct iovec iov[8];
		size_t hl, pl;
		int n = iw_ddp_tx_next(&m, mulpdu, hdr, &hl, iov, 8, &pl);
		struct iw_ddp_hdr h = {
			.tagged = tagged,
			.last = off + pl == len,
			.ulp_ctrl = ctrl,
			.stag = stag,
			.to = to + off,
			.ulp_word = word,
			.qn = qn,
			.msn = msn,
			.mo = (uint32_t)off,
		};
		size_t base = iw_ddp_hdr_encode(&h, want);

		ck_assert_int_ge(n, 0);
		ck_assert_uint_eq(hl, base + ext_len);
		memcpy(want + base, ext, ext_len);
		ck_assert_mem_eq(hdr, want, hl);
		off += pl;
	}
	ck_assert_uint_eq(off, len);
}

START_TEST(test_tx_headers_match_encode)
{
	static uint8_t data[5000];
	uint64_t s = iwt_seed() ^ 0xdd9;

	for (int i = 0; i < 3000; i++) {
		struct iovec sgl[3];
		int nsge = (int)iwt_rand_range(&s, 0, 3);
		size_t len = 0;
		bool tagged = i & 1;
		size_t ext_len = tagged ? 0 : (size_t)iwt_rand_range(&s, 0, 28);
		size_t htot = (tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN) + ext_len;

		for (int k = 0; k < nsge; k++) {
			size_t l = (size_t)iwt_rand_range(&s, 0, sizeof(data) / 3);
			sgl[k] = (struct iovec){ data + len, l };
			len += l;
		}
		check_headers(tagged, len, htot + (size_t)iwt_rand_range(&s, 1, 3000), sgl, nsge,
			      ext_len, &s);
	}
}
END_TEST

static Suite *ddp_tx_suite(void)
{
	Suite *s = suite_create("ddp_tx");
	TCase *t = tcase_create("segment_shape");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_tx_equal_known);
	tcase_add_test(t, test_tx_equal_random);
	tcase_add_test(t, test_tx_headers_match_encode);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(ddp_tx_suite());
}
