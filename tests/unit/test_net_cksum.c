/* iwn_cksum_add (word-at-a-time, native order) folds to exactly what the
 * RFC 1071 definition (16-bit big-endian words, one at a time) gives: for
 * random lengths, offsets (unaligned), running sums and pieces, and for
 * the all-zero and all-0xFF edge cases. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "net/cksum.h"

/* The definition, written plainly. */
static uint32_t ref_add(uint32_t sum, const uint8_t *p, size_t len)
{
	uint64_t s = sum;
	size_t i = 0;
	for (; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < len)
		s += (uint32_t)p[i] << 8;
	while (s >> 32)
		s = (s & 0xFFFFFFFFu) + (s >> 32);
	return (uint32_t)s;
}

static uint8_t buf[9100];

START_TEST(cksum_matches_definition)
{
	uint64_t st = iwt_seed();
	for (int iter = 0; iter < 20000; iter++) {
		size_t off = (size_t)(iwt_rand(&st) % 8), len = (size_t)(iwt_rand(&st) % (sizeof(buf) - 8));
		int mode = (int)(iwt_rand(&st) % 4);
		for (size_t i = 0; i < off + len; i++)
			buf[i] = mode == 0 ? 0 : mode == 1 ? 0xFF : (uint8_t)iwt_rand(&st);
		uint32_t sum0 = iwt_rand(&st) % 2 ? (uint32_t)iwt_rand(&st) : 0;
		uint16_t want = iwn_cksum_fold(ref_add(sum0, buf + off, len));
		ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(sum0, buf + off, len)), want);
		/* In pieces: all but the last even. */
		size_t cut = (size_t)(iwt_rand(&st) % (len + 1)) & ~(size_t)1;
		uint32_t s = iwn_cksum_add(sum0, buf + off, cut);
		s = iwn_cksum_add(s, buf + off + cut, len - cut);
		ck_assert_uint_eq(iwn_cksum_fold(s), want);
	}
}
END_TEST

START_TEST(cksum_known_values)
{
	/* RFC 1071 sec. 3 example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2. */
	const uint8_t ex[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, ex, sizeof(ex))), (uint16_t)~0xddf2u);
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, ex, 0)), 0xFFFFu);
	const uint8_t odd[] = { 0xab };
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, odd, 1)), (uint16_t)~0xab00u);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_cksum");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, cksum_matches_definition);
	tcase_add_test(tc, cksum_known_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
