/* iwn_gso_plan: a super-segment cut by the kernel into gso_size pieces
 * must give wire segments that each start on a record boundary, hold
 * whole records only, fit the MSS, and stay within the limit; unequal
 * records, a record larger than the MSS, or too little data fall back to
 * a plain segment. A random model check covers the rest. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "net/gso.h"

#define CAP (1u << 20)

static uint8_t junk[CAP];

static void put_records(struct iwn_sndbuf *sb, uint32_t n, uint32_t size)
{
	for (uint32_t i = 0; i < n; i++)
		ck_assert_int_eq(iwn_sndbuf_write_record(sb, junk, size), (int)size);
}

START_TEST(equal_records)
{
	struct iwn_sndbuf sb;
	uint32_t g;
	ck_assert_int_eq(iwn_sndbuf_init(&sb, CAP, 1024), 0);
	put_records(&sb, 100, 1448);
	/* 45 records of 1448 fit 65455 bytes. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 45u * 1448);
	ck_assert_uint_eq(g, 1448);
	/* The window allows 3.5 records: 3 go. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1448 * 3 + 700, 1448, &g), 3u * 1448);
	/* One record's room: a plain segment. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 2000, 1448, &g), 0);
	ck_assert_uint_eq(g, 0);
	/* From a record boundary further on. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 1448 * 98, 1u << 20, 1448, &g), 2u * 1448);
	ck_assert_uint_eq(g, 1448);
	iwn_sndbuf_fini(&sb);
}
END_TEST

START_TEST(small_records_pack)
{
	struct iwn_sndbuf sb;
	uint32_t g;
	ck_assert_int_eq(iwn_sndbuf_init(&sb, CAP, 1024), 0);
	put_records(&sb, 50, 400);
	/* 3 records of 400 per 1448-byte segment. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 50u * 400);
	ck_assert_uint_eq(g, 1200);
	iwn_sndbuf_fini(&sb);
}
END_TEST

START_TEST(short_last_record)
{
	struct iwn_sndbuf sb;
	uint32_t g;
	ck_assert_int_eq(iwn_sndbuf_init(&sb, CAP, 1024), 0);
	put_records(&sb, 5, 1000);
	put_records(&sb, 1, 300);
	put_records(&sb, 4, 1000);
	/* The shorter record is the last of the super-segment. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 5300);
	ck_assert_uint_eq(g, 1000);
	/* A longer record ends the run before it. */
	iwn_sndbuf_consume(&sb, 5300);
	put_records(&sb, 1, 1400);
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 4000);
	/* A record larger than the MSS: plain (it is cut anyway). */
	iwn_sndbuf_consume(&sb, 4000);
	put_records(&sb, 3, 3000);
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 0);
	iwn_sndbuf_fini(&sb);
}
END_TEST

START_TEST(plain_stream)
{
	struct iwn_sndbuf sb;
	uint32_t g;
	ck_assert_int_eq(iwn_sndbuf_init(&sb, CAP, 0), 0);
	ck_assert_uint_eq(iwn_sndbuf_write(&sb, junk, 10000), 10000);
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 10000);
	ck_assert_uint_eq(g, 1448);
	/* Limited by the window: whole MSS pieces only. */
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 5000, 1448, &g), 3u * 1448);
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1448, 1448, &g), 0);
	ck_assert_uint_eq(iwn_sndbuf_write(&sb, junk, 100000), 100000);
	ck_assert_uint_eq(iwn_gso_plan(&sb, 0, 1u << 20, 1448, &g), 65455u - 65455u % 1448);
	iwn_sndbuf_fini(&sb);
}
END_TEST

/* Model: random records and limits; check every property of a plan. */
START_TEST(random_plans)
{
	struct iwn_sndbuf sb;
	uint64_t st = iwt_seed();
	ck_assert_int_eq(iwn_sndbuf_init(&sb, CAP, 4096), 0);
	static uint64_t ends[1u << 16];
	uint32_t nends = 0, first = 0;
	uint64_t plans = 0;
	for (int iter = 0; iter < 20000; iter++) {
		/* Runs of equal records, sometimes broken. */
		uint32_t size = 1 + (uint32_t)(iwt_rand(&st) % 3000), n = 1 + (uint32_t)(iwt_rand(&st) % 40);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t sz = iwt_rand(&st) % 10 == 0 ? 1 + (uint32_t)(iwt_rand(&st) % 3000) : size;
			if (iwn_sndbuf_write_record(&sb, junk, sz) != (int)sz)
				break;
			ends[nends++ % (1u << 16)] = sb.base + sb.len;
		}
		uint32_t mss = 536 + (uint32_t)(iwt_rand(&st) % 8500);
		uint32_t max = (uint32_t)(iwt_rand(&st) % 200000);
		/* From a record boundary (as TCP sends). */
		uint32_t g, len = iwn_gso_plan(&sb, 0, max, mss, &g);
		if (len) {
			plans++;
			ck_assert_uint_gt(len, g);
			ck_assert_uint_le(g, mss);
			ck_assert_uint_le(len, max);
			ck_assert_uint_le(len, IWN_GSO_MAX_PAYLOAD);
			/* Every wire segment starts on a boundary, and the
			 * super-segment ends on one. */
			uint32_t j = first;
			for (uint32_t at = 0; at <= len; at += g) {
				uint64_t want = sb.base + (at < len ? at : len);
				if (at == 0)
					continue;
				while (j < nends && ends[j % (1u << 16)] < want)
					j++;
				ck_assert_msg(j < nends && ends[j % (1u << 16)] == want, "cut at %u of %u (gso %u) inside a record",
					      at, len, g);
			}
			uint64_t endw = sb.base + len;
			while (j < nends && ends[j % (1u << 16)] < endw)
				j++;
			ck_assert(j < nends && ends[j % (1u << 16)] == endw);
		} else {
			ck_assert_uint_eq(g, 0);
		}
		/* Consume some records (as ACKs would). */
		uint32_t drop = (uint32_t)(iwt_rand(&st) % 30);
		while (drop-- && first < nends) {
			iwn_sndbuf_consume(&sb, (uint32_t)(ends[first % (1u << 16)] - sb.base));
			first++;
		}
	}
	ck_assert_uint_gt(plans, 1000);
	iwn_sndbuf_fini(&sb);
}
END_TEST

static Suite *gso_suite(void)
{
	Suite *s = suite_create("net_gso");
	TCase *t = tcase_create("plan");
	tcase_add_test(t, equal_records);
	tcase_add_test(t, small_records_pack);
	tcase_add_test(t, short_last_record);
	tcase_add_test(t, plain_stream);
	tcase_add_test(t, random_plans);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(gso_suite());
}
