/* tools/capture: captured frames down to TCP segments, for every link
 * type iwdump reads, with the traps captures hold (VLAN tags, Ethernet
 * padding, snapshot cuts, TSO length 0, IPv6 extension headers,
 * fragments), and every truncation of a good frame. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cap_frame.h"
#include "iw_bytes.h"
#include "iwt_check.h"

#define PAYLOAD 10

/* Builds [link header][IPv4 or IPv6 (+ ext)][TCP 20 + 12 options][payload][pad]. */
struct built {
	uint8_t b[256];
	size_t len, ip_off, tcp_off, pay_off;
};

static void put_tcp(struct built *f)
{
	uint8_t *t = f->b + f->tcp_off;

	iw_put_be16(t, 4791);
	iw_put_be16(t + 2, 7174);
	iw_put_be32(t + 4, 0x11223344);
	iw_put_be32(t + 8, 0x55667788);
	t[12] = 8 << 4; /* 32-byte header: options */
	t[13] = 0x18;   /* PSH ACK */
	f->pay_off = f->tcp_off + 32;
	for (int i = 0; i < PAYLOAD; i++)
		f->b[f->pay_off + (size_t)i] = (uint8_t)('a' + i);
	f->len = f->pay_off + PAYLOAD;
}

static void build4(struct built *f, size_t link, uint16_t frag, uint8_t proto, bool tso)
{
	uint8_t *ip;

	memset(f, 0, sizeof(*f));
	f->ip_off = link;
	ip = f->b + link;
	ip[0] = 0x45;
	iw_put_be16(ip + 2, tso ? 0 : 20 + 32 + PAYLOAD);
	iw_put_be16(ip + 6, frag);
	ip[8] = 64;
	ip[9] = proto;
	memcpy(ip + 12, (uint8_t[]){10, 0, 0, 1}, 4);
	memcpy(ip + 16, (uint8_t[]){10, 0, 0, 2}, 4);
	f->tcp_off = link + 20;
	put_tcp(f);
}

static void build6(struct built *f, size_t link, bool hopopts)
{
	uint8_t *ip;
	size_t ext = hopopts ? 8 : 0;

	memset(f, 0, sizeof(*f));
	f->ip_off = link;
	ip = f->b + link;
	ip[0] = 0x60;
	iw_put_be16(ip + 4, (uint16_t)(ext + 32 + PAYLOAD));
	ip[6] = hopopts ? 0 : 6;
	ip[7] = 64;
	ip[8 + 15] = 1;
	ip[24 + 15] = 2;
	if (hopopts) {
		ip[40] = 6; /* next header TCP, length 0 (8 bytes) */
		ip[41] = 0;
	}
	f->tcp_off = link + 40 + ext;
	put_tcp(f);
}

static void expect_tcp(int lt, const struct built *f, size_t caplen)
{
	struct iwc_frame o;

	ck_assert_int_eq(iwc_parse(lt, f->b, caplen, &o), IWC_TCP);
	ck_assert_uint_eq(o.ip_off, f->ip_off);
	ck_assert_uint_eq(o.tcp_off, f->tcp_off);
	ck_assert_uint_eq(o.pay_off, f->pay_off);
	ck_assert_uint_eq(o.sport, 4791);
	ck_assert_uint_eq(o.dport, 7174);
	ck_assert_uint_eq(o.seq, 0x11223344u);
	ck_assert_uint_eq(o.ack, 0x55667788u);
	ck_assert_uint_eq(o.flags, 0x18);
	ck_assert_uint_eq(o.pay_len + o.missing, PAYLOAD);
	ck_assert_uint_eq(o.pay_len, caplen >= f->len ? PAYLOAD : caplen - f->pay_off);
}

START_TEST(ethernet_ipv4_and_padding)
{
	struct built f;
	struct iwc_frame o;

	build4(&f, 14, 0x4000 /* DF */, 6, false);
	iw_put_be16(f.b + 12, 0x0800);
	expect_tcp(1, &f, f.len);
	/* Ethernet padding after the IP packet is not payload. */
	expect_tcp(1, &f, f.len + 12);
	ck_assert_int_eq(iwc_parse(1, f.b, f.len + 12, &o), IWC_TCP);
	ck_assert_uint_eq(o.family, 4);
	ck_assert_int_eq(o.src[0], 10);
	ck_assert_int_eq(o.dst[3], 2);
	ck_assert_int_eq(o.src[4], 0);
}
END_TEST

START_TEST(vlan_tags)
{
	struct built f;

	build4(&f, 22, 0, 6, false);
	iw_put_be16(f.b + 12, 0x88A8);
	iw_put_be16(f.b + 16, 0x8100);
	iw_put_be16(f.b + 20, 0x0800);
	expect_tcp(1, &f, f.len);
}
END_TEST

START_TEST(cooked_raw_and_loopback)
{
	struct built f;

	build4(&f, 16, 0, 6, false);
	iw_put_be16(f.b + 14, 0x0800);
	expect_tcp(113, &f, f.len);
	build6(&f, 20, false);
	iw_put_be16(f.b, 0x86DD);
	expect_tcp(276, &f, f.len);
	build4(&f, 0, 0, 6, false);
	expect_tcp(12, &f, f.len);
	expect_tcp(101, &f, f.len);
	expect_tcp(228, &f, f.len);
	build6(&f, 4, false);
	expect_tcp(0, &f, f.len);
	expect_tcp(108, &f, f.len);
	ck_assert(iwc_link_supported(101));
	ck_assert(!iwc_link_supported(105)); /* 802.11 */
}
END_TEST

START_TEST(ipv6_extension_header)
{
	struct built f;
	struct iwc_frame o;

	build6(&f, 0, true);
	expect_tcp(101, &f, f.len);
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_TCP);
	ck_assert_uint_eq(o.family, 6);
	ck_assert_int_eq(o.dst[15], 2);
	f.b[6] = 44; /* a fragment header instead: not reassembled */
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_OTHER);
}
END_TEST

START_TEST(not_ours)
{
	struct built f;
	struct iwc_frame o;

	build4(&f, 0, 0x2000 /* MF */, 6, false);
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_OTHER);
	build4(&f, 0, 0x0005 /* offset */, 6, false);
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_OTHER);
	build4(&f, 0, 0, 17, false);
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_OTHER);
	build4(&f, 14, 0, 6, false);
	iw_put_be16(f.b + 12, 0x0806); /* ARP */
	ck_assert_int_eq(iwc_parse(1, f.b, f.len, &o), IWC_OTHER);
	ck_assert_int_eq(iwc_parse(105, f.b, f.len, &o), IWC_OTHER);
}
END_TEST

START_TEST(snapshot_cut_and_tso)
{
	struct built f;
	struct iwc_frame o;

	build4(&f, 0, 0, 6, false);
	ck_assert_int_eq(iwc_parse(101, f.b, f.len - 4, &o), IWC_TCP);
	ck_assert_uint_eq(o.pay_len, PAYLOAD - 4);
	ck_assert_uint_eq(o.missing, 4);
	build4(&f, 0, 0, 6, true); /* total length 0: what was captured */
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_TCP);
	ck_assert_uint_eq(o.pay_len, PAYLOAD);
	ck_assert_uint_eq(o.missing, 0);
}
END_TEST

START_TEST(bad_headers)
{
	struct built f;
	struct iwc_frame o;

	build4(&f, 0, 0, 6, false);
	f.b[f.tcp_off + 12] = 4 << 4; /* TCP header of 16 bytes */
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_BAD);
	build4(&f, 0, 0, 6, false);
	f.b[f.tcp_off + 12] = 15 << 4; /* 60 bytes: beyond the IP packet */
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_BAD);
	build4(&f, 0, 0, 6, false);
	f.b[0] = 0x44; /* IHL 16 */
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_BAD);
	build4(&f, 0, 0, 6, false);
	iw_put_be16(f.b + 2, 30); /* total length shorter than the headers */
	ck_assert_int_eq(iwc_parse(101, f.b, f.len, &o), IWC_BAD);
}
END_TEST

/* Every prefix of good frames: TCP (with missing bytes) or BAD, never a
 * read past caplen (the copy is exactly caplen bytes long, for ASan). */
START_TEST(every_truncation)
{
	struct built f[3];
	const int lt[3] = {1, 101, 276};

	build4(&f[0], 22, 0, 6, false);
	iw_put_be16(f[0].b + 12, 0x8100);
	iw_put_be16(f[0].b + 16, 0x8100);
	iw_put_be16(f[0].b + 20, 0x0800);
	build6(&f[1], 0, true);
	build6(&f[2], 20, true);
	iw_put_be16(f[2].b, 0x86DD);
	for (int k = 0; k < 3; k++) {
		for (size_t n = 0; n <= f[k].len; n++) {
			uint8_t *copy = malloc(n ? n : 1);
			struct iwc_frame o;
			enum iwc_kind r;

			memcpy(copy, f[k].b, n);
			r = iwc_parse(lt[k], copy, n, &o);
			if (n >= f[k].pay_off) {
				ck_assert_int_eq(r, IWC_TCP);
				ck_assert_uint_eq(o.pay_len, n - f[k].pay_off);
			} else {
				ck_assert_int_eq(r, IWC_BAD);
			}
			free(copy);
		}
	}
}
END_TEST

static Suite *capture_suite(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, ethernet_ipv4_and_padding);
	tcase_add_test(tc, vlan_tags);
	tcase_add_test(tc, cooked_raw_and_loopback);
	tcase_add_test(tc, ipv6_extension_header);
	tcase_add_test(tc, not_ours);
	tcase_add_test(tc, snapshot_cut_and_tso);
	tcase_add_test(tc, bad_headers);
	tcase_add_test(tc, every_truncation);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(capture_suite());
}
