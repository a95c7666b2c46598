/* CRC-32C: known answers, incremental/iov equivalence, and agreement of
 * the dispatched and portable implementations. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "iwt_common.h"
#include "mpa/crc32c.h"
#include "iwt_check.h"

typedef uint32_t (*crc_update_fn)(uint32_t, const void *, size_t);

static const struct {
	const char *name;
	crc_update_fn fn;
} impls[] = {
	{"dispatch", iw_crc32c_update},
	{"portable", iw_crc32c_update_portable},
	{"short", iw_crc32c_update_short},
};
#define N_IMPLS ((int)(sizeof(impls) / sizeof(impls[0])))

static uint32_t crc_with(crc_update_fn fn, const void *buf, size_t len)
{
	return iw_crc32c_final(fn(iw_crc32c_init(), buf, len));
}

/* Bit-at-a-time reference, written from the definition, independent of
 * both implementations under test. */
static uint32_t crc_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
	}
	return ~c;
}

START_TEST(test_impl_name)
{
	const char *n = iw_crc32c_impl();
	ck_assert_ptr_nonnull(n);
	ck_assert(strcmp(n, "isa-l") == 0 || strcmp(n, "portable") == 0);
	fprintf(stderr, "crc32c impl: %s\n", n);
}
END_TEST

START_TEST(test_known_answers)
{
	uint8_t zeros[32], ones[32], up[32], down[32];
	memset(zeros, 0x00, sizeof(zeros));
	memset(ones, 0xFF, sizeof(ones));
	for (int i = 0; i < 32; i++) {
		up[i] = (uint8_t)i;
		down[i] = (uint8_t)(31 - i);
	}
	const struct {
		const void *buf;
		size_t len;
		uint32_t crc;
	} kat[] = {
		{"123456789", 9, 0xE3069283u},
		{zeros, 32, 0x8A9136AAu},
		{ones, 32, 0x62A8AB43u},
		{up, 32, 0x46DD794Eu},
		{down, 32, 0x113FDB5Cu},
	};
	for (int m = 0; m < N_IMPLS; m++)
		for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
			uint32_t got = crc_with(impls[m].fn, kat[i].buf, kat[i].len);
			ck_assert_msg(got == kat[i].crc, "%s kat %zu: got %#x want %#x",
				      impls[m].name, i, got, kat[i].crc);
			ck_assert_uint_eq(crc_bitwise(kat[i].buf, kat[i].len), kat[i].crc);
		}
	ck_assert_uint_eq(iw_crc32c("123456789", 9), 0xE3069283u);
}
END_TEST

START_TEST(test_wire_bytes)
{
	uint8_t w[4];
	static const uint8_t want[4] = {0x83, 0x92, 0x06, 0xe3};
	iw_crc32c_put_wire(w, iw_crc32c("123456789", 9));
	ck_assert_mem_eq(w, want, 4);
	ck_assert_uint_eq(iw_crc32c_get_wire(want), 0xE3069283u);
}
END_TEST

START_TEST(test_len0_identity)
{
	static const uint32_t states[] = {0xFFFFFFFFu, 0u, 0x12345678u, 0xE3069283u};
	uint8_t b = 0xAB;
	for (int m = 0; m < N_IMPLS; m++)
		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
			ck_assert_uint_eq(impls[m].fn(states[i], NULL, 0), states[i]);
			ck_assert_uint_eq(impls[m].fn(states[i], &b, 0), states[i]);
		}
	ck_assert_uint_eq(iw_crc32c_update_iov(0x1234u, NULL, 0), 0x1234u);
	ck_assert_uint_eq(iw_crc32c(NULL, 0), 0u);
}
END_TEST

START_TEST(test_split_points)
{
	enum { LEN = 333 };
	uint8_t buf[LEN];
	uint64_t rs = iwt_seed();
	iwt_fill_random(&rs, buf, sizeof(buf));
	uint32_t whole = crc_bitwise(buf, LEN);
	for (int m = 0; m < N_IMPLS; m++) {
		ck_assert_uint_eq(crc_with(impls[m].fn, buf, LEN), whole);
		for (size_t s = 0; s <= LEN; s++) {
			uint32_t st = impls[m].fn(iw_crc32c_init(), buf, s);
			st = impls[m].fn(st, buf + s, LEN - s);
			ck_assert_msg(iw_crc32c_final(st) == whole, "%s split %zu",
				      impls[m].name, s);
		}
	}
}
END_TEST

START_TEST(test_iov_equals_flat)
{
	enum { LEN = 4096, MAXIOV = 16 };
	static uint8_t buf[LEN];
	uint64_t rs = iwt_seed() ^ 0x10f;
	iwt_fill_random(&rs, buf, sizeof(buf));
	for (int it = 0; it < 500; it++) {
		struct iovec iov[MAXIOV];
		size_t len = (size_t)iwt_rand_range(&rs, 0, LEN);
		int cnt = (int)iwt_rand_range(&rs, 1, MAXIOV);
		size_t off = 0;
		for (int i = 0; i < cnt; i++) {
			/* Last entry takes the rest; others may be empty. */
			size_t n = i == cnt - 1 ? len - off
						: (size_t)iwt_rand_range(&rs, 0, len - off);
			iov[i].iov_base = buf + off;
			iov[i].iov_len = n;
			off += n;
		}
		uint32_t flat = iw_crc32c_update(iw_crc32c_init(), buf, len);
		ck_assert_uint_eq(iw_crc32c_update_iov(iw_crc32c_init(), iov, cnt), flat);
	}
	/* iovcnt 0 and negative leave the state alone. */
	struct iovec one = {buf, 8};
	ck_assert_uint_eq(iw_crc32c_update_iov(7u, &one, 0), 7u);
	ck_assert_uint_eq(iw_crc32c_update_iov(7u, &one, -1), 7u);
}
END_TEST

START_TEST(test_random_agree)
{
	enum { MAXLEN = 64 * 1024, MAXALIGN = 64 };
	uint8_t *mem = malloc(MAXLEN + MAXALIGN);
	ck_assert_ptr_nonnull(mem);
	uint64_t rs = iwt_seed() ^ 0xa9e3;
	for (int it = 0; it < 300; it++) {
		size_t len = (size_t)iwt_rand_range(&rs, 0, MAXLEN);
		size_t align = (size_t)iwt_rand_range(&rs, 0, MAXALIGN - 1);
		uint8_t *p = mem + align;
		iwt_fill_random(&rs, p, len);
		uint32_t init = (it & 1) ? (uint32_t)iwt_rand(&rs) : iw_crc32c_init();
		uint32_t a = iw_crc32c_update(init, p, len);
		uint32_t b = iw_crc32c_update_portable(init, p, len);
		ck_assert_msg(a == b, "it %d len %zu align %zu: %#x vs %#x", it, len,
			      align, a, b);
		if (len <= 4096 && init == iw_crc32c_init())
			ck_assert_uint_eq(iw_crc32c_final(a), crc_bitwise(p, len));
	}
	free(mem);
}
END_TEST

/* The short path (SSE4.2 instruction when present) against the portable
 * code and the bitwise reference: every length 0..512 at every
 * misalignment 0..7, from the initial and from a random state, and the
 * dispatcher on both sides of IW_CRC32C_SHORT_MAX. */
START_TEST(test_short_every_len)
{
	enum { MAXLEN = 512, MAXALIGN = 8 };
	static uint8_t buf[MAXLEN + MAXALIGN];
	uint64_t rs = iwt_seed() ^ 0x5e42;
	iwt_fill_random(&rs, buf, sizeof(buf));
	fprintf(stderr, "crc32c short path: %s\n", iw_crc32c_short_hw() ? "sse4.2" : "portable");
	for (size_t align = 0; align < MAXALIGN; align++)
		for (size_t len = 0; len <= MAXLEN; len++) {
			const uint8_t *p = buf + align;
			uint32_t st = (uint32_t)iwt_rand(&rs);
			uint32_t want = iw_crc32c_update_portable(st, p, len);
			ck_assert_msg(iw_crc32c_update_short(st, p, len) == want,
				      "short len %zu align %zu", len, align);
			ck_assert_msg(iw_crc32c_update(st, p, len) == want,
				      "dispatch len %zu align %zu", len, align);
			uint32_t from0 = iw_crc32c_final(iw_crc32c_update_short(iw_crc32c_init(), p, len));
			ck_assert_msg(from0 == crc_bitwise(p, len), "short vs bitwise len %zu align %zu",
				      len, align);
		}
}
END_TEST

/* crc32_iscsi takes an int length: a buffer over INT_MAX must be fed in
 * pieces. 4 GiB + 5 so that a length truncated to 32 bits (5) cannot pass
 * by accident. Read-only anonymous memory is all zero pages, so this costs
 * page tables, not RAM. Only meaningful (and fast) on the ISA-L path. */
START_TEST(test_huge_len)
{
	if (sizeof(size_t) < 8 || strcmp(iw_crc32c_impl(), "isa-l") != 0)
		return;
	const size_t piece = (size_t)1 << 30;
	const size_t len = ((size_t)1 << 32) + 5;
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "test_huge_len: mmap failed, skipped\n");
		return;
	}
	const uint8_t *p = m;
	uint32_t whole = iw_crc32c_update(iw_crc32c_init(), p, len);
	uint32_t parts = iw_crc32c_init();
	for (size_t off = 0; off < len; off += piece)
		parts = iw_crc32c_update(parts, p + off, len - off < piece ? len - off : piece);
	munmap(m, len);
	ck_assert_uint_eq(whole, parts);
}
END_TEST

static Suite *crc32c_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_impl_name);
	tcase_add_test(tc, test_known_answers);
	tcase_add_test(tc, test_wire_bytes);
	tcase_add_test(tc, test_len0_identity);
	tcase_add_test(tc, test_split_points);
	tcase_add_test(tc, test_iov_equals_flat);
	tcase_add_test(tc, test_random_agree);
	tcase_add_test(tc, test_short_every_len);
	suite_add_tcase(s, tc);
	/* Scanning 4 GiB maps a million zero pages: about 3 s on an idle
	 * machine, 30-60 s at a load of 10-20 on 2 cores. The limit guards
	 * against a hang; it is not a speed check (that is crc32c_bench). */
	TCase *huge = tcase_create("huge");
	tcase_set_timeout(huge, 240);
	tcase_add_test(huge, test_huge_len);
	suite_add_tcase(s, huge);
	return s;
}

int main(void)
{
	return iwt_run_suite(crc32c_suite());
}
