/* iwn_sndbuf_seglen (bisecting the record marks) cuts where a plain walk
 * of the marks cuts.
 * iwn_sndbuf_write_recordv (the raw transport gathers each FPDU straight
 * into TCP's send buffer) queues the same bytes and the same record
 * boundaries as iwn_sndbuf_write_record on a contiguous copy, across ring
 * wrap-around, and refuses what the contiguous call refuses. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "net/tcp_sndbuf.h"

#define CAP 10000

START_TEST(recordv_matches_record)
{
	struct iwn_sndbuf a, b;
	static uint8_t rec[CAP], ga[CAP], gb[CAP];
	uint64_t st = iwt_seed();
	ck_assert_int_eq(iwn_sndbuf_init(&a, CAP, 64), 0);
	ck_assert_int_eq(iwn_sndbuf_init(&b, CAP, 64), 0);
	for (int iter = 0; iter < 20000; iter++) {
		uint32_t n = 1 + (uint32_t)(iwt_rand(&st) % 3000);
		for (uint32_t i = 0; i < n; i++)
			rec[i] = (uint8_t)iwt_rand(&st);
		struct iovec v[6];
		int cnt = 0;
		uint32_t at = 0;
		while (at < n && cnt < 5) { /* some pieces empty */
			uint32_t k = (uint32_t)(iwt_rand(&st) % (n - at + 1));
			v[cnt++] = (struct iovec){ rec + at, k };
			at += k;
		}
		v[cnt++] = (struct iovec){ rec + at, n - at };
		int ra = iwn_sndbuf_write_record(&a, rec, n), rb = iwn_sndbuf_write_recordv(&b, v, cnt, n);
		ck_assert_int_eq(ra, rb);
		ck_assert_uint_eq(a.len, b.len);
		ck_assert_uint_eq(a.mlen, b.mlen);
		iwn_sndbuf_copy(&a, 0, ga, a.len);
		iwn_sndbuf_copy(&b, 0, gb, b.len);
		ck_assert_int_eq(memcmp(ga, gb, a.len), 0);
		for (uint32_t off = 0; off < a.len; off += 997)
			ck_assert_uint_eq(iwn_sndbuf_seglen(&a, off, 4000), iwn_sndbuf_seglen(&b, off, 4000));
		/* Acknowledge a random amount, the same on both. */
		uint32_t ack = (uint32_t)(iwt_rand(&st) % (a.len + 1));
		iwn_sndbuf_consume(&a, ack);
		iwn_sndbuf_consume(&b, ack);
	}
	iwn_sndbuf_fini(&a);
	iwn_sndbuf_fini(&b);
}
END_TEST

START_TEST(recordv_refusals)
{
	struct iwn_sndbuf b;
	static uint8_t x[CAP + 1];
	ck_assert_int_eq(iwn_sndbuf_init(&b, CAP, 4), 0);
	struct iovec v[2] = { { x, 10 }, { x, 20 } };
	ck_assert_int_eq(iwn_sndbuf_write_recordv(&b, v, 2, 31), -EINVAL); /* pieces do not add up */
	ck_assert_int_eq(iwn_sndbuf_write_recordv(&b, v, 0, 0), -EINVAL);
	struct iovec big = { x, CAP + 1 };
	ck_assert_int_eq(iwn_sndbuf_write_recordv(&b, &big, 1, CAP + 1), -EMSGSIZE);
	struct iovec most = { x, CAP - 10 };
	ck_assert_int_eq(iwn_sndbuf_write_recordv(&b, &most, 1, CAP - 10), CAP - 10);
	ck_assert_int_eq(iwn_sndbuf_write_recordv(&b, v, 2, 30), -EAGAIN); /* no room: nothing queued */
	ck_assert_uint_eq(b.len, CAP - 10);
	ck_assert_uint_eq(b.mlen, 1);
	iwn_sndbuf_fini(&b);
}
END_TEST

/* The segment cut, as tcp_sndbuf.h defines it, by a plain walk. */
static uint32_t ref_seglen(const struct iwn_sndbuf *sb, uint32_t off, uint32_t max)
{
	if (off >= sb->len)
		return 0;
	if (max > sb->len - off)
		max = sb->len - off;
	uint64_t from = sb->base + off, to = from + max, best = 0;
	for (uint32_t i = 0; i < sb->mlen; i++) {
		uint64_t m = sb->marks[(sb->mhead + i) % sb->mcap];
		if (m > from && m <= to)
			best = m;
	}
	return best ? (uint32_t)(best - from) : max;
}

/* Random records, writes without boundaries and acknowledgements; every
 * cut the bisecting iwn_sndbuf_seglen makes is the plain walk's. */
START_TEST(seglen_matches_walk)
{
	struct iwn_sndbuf sb;
	static uint8_t x[4096];
	uint64_t st = iwt_seed();
	ck_assert_int_eq(iwn_sndbuf_init(&sb, 50000, 300), 0);
	for (int iter = 0; iter < 20000; iter++) {
		uint32_t n = 1 + (uint32_t)(iwt_rand(&st) % 2000);
		if (iwt_rand(&st) % 8)
			(void)iwn_sndbuf_write_record(&sb, x, n);
		else
			(void)iwn_sndbuf_write(&sb, x, n);
		for (int k = 0; k < 8; k++) {
			uint32_t off = sb.len ? (uint32_t)(iwt_rand(&st) % (sb.len + 1)) : 0;
			uint32_t max = 1 + (uint32_t)(iwt_rand(&st) % 9000);
			ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, off, max), ref_seglen(&sb, off, max));
		}
		if (iwt_rand(&st) % 3 == 0)
			iwn_sndbuf_consume(&sb, (uint32_t)(iwt_rand(&st) % (sb.len + 1)));
	}
	iwn_sndbuf_fini(&sb);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_sndbuf");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, recordv_matches_record);
	tcase_add_test(tc, recordv_refusals);
	tcase_add_test(tc, seglen_matches_walk);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
