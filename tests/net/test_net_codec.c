/* Codecs of net/ against hand-computed bytes: the Internet checksum,
 * Ethernet II, ARP, IPv4, ICMP echo, TCP header/options/checksum. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "net/arp.h"
#include "net/cksum.h"
#include "net/eth.h"
#include "net/ipv4.h"
#include "net/tcp_seg.h"

START_TEST(test_cksum_rfc1071)
{
	/* RFC 1071 sec. 3 example: the sum is ddf2, the checksum its complement. */
	const uint8_t d[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, d, sizeof(d))), 0x220d);
	/* Pieces of even length give the same sum. */
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(iwn_cksum_add(0, d, 2), d + 2, 6)), 0x220d);
	/* Odd tail padded with zero. */
	const uint8_t o[] = {0x01};
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, o, 1)), 0xfeff);
	ck_assert_uint_eq(iwn_cksum_fold(0), 0xffff);
	/* Many carries. */
	uint8_t ff[4096];
	memset(ff, 0xff, sizeof(ff));
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, ff, sizeof(ff))), 0x0000);
}
END_TEST

START_TEST(test_eth)
{
	const uint8_t f[] = {1, 2, 3, 4, 5, 6, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 0x08, 0x06};
	struct iwn_eth e;
	ck_assert_int_eq(iwn_eth_parse(f, 13, &e), -EINVAL);
	ck_assert_int_eq(iwn_eth_parse(f, sizeof(f), &e), 0);
	ck_assert_uint_eq(e.type, IWN_ETHERTYPE_ARP);
	ck_assert_mem_eq(e.dst, f, 6);
	ck_assert_mem_eq(e.src, f + 6, 6);
	uint8_t b[14];
	iwn_eth_build(b, e.dst, e.src, e.type);
	ck_assert_mem_eq(b, f, 14);
	ck_assert(iwn_eth_is_broadcast(iwn_eth_broadcast));
	ck_assert(!iwn_eth_is_broadcast(e.dst));
}
END_TEST

START_TEST(test_arp_codec)
{
	/* who-has 10.0.0.2 tell 10.0.0.1 (02:00:00:00:00:01) */
	const uint8_t req[28] = {0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00,
				 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
				 0x0a, 0x00, 0x00, 0x02};
	struct iwn_arp_pkt a;
	ck_assert_int_eq(iwn_arp_parse(req, sizeof(req), &a), 0);
	ck_assert_uint_eq(a.oper, IWN_ARP_REQUEST);
	ck_assert_uint_eq(a.spa, 0x0a000001);
	ck_assert_uint_eq(a.tpa, 0x0a000002);
	ck_assert_uint_eq(a.sha[5], 1);
	uint8_t out[28];
	iwn_arp_build(out, &a);
	ck_assert_mem_eq(out, req, 28);
	ck_assert_int_eq(iwn_arp_parse(req, 27, &a), -EINVAL);
	uint8_t bad[28];
	memcpy(bad, req, 28);
	bad[1] = 6; /* htype IEEE 802 */
	ck_assert_int_eq(iwn_arp_parse(bad, 28, &a), -EINVAL);
	memcpy(bad, req, 28);
	bad[5] = 16; /* plen */
	ck_assert_int_eq(iwn_arp_parse(bad, 28, &a), -EINVAL);
	memcpy(bad, req, 28);
	bad[7] = 3; /* RARP */
	ck_assert_int_eq(iwn_arp_parse(bad, 28, &a), -EINVAL);
}
END_TEST

/* The classic example header: 192.168.0.1 -> 192.168.0.199, UDP, 115
 * bytes, DF, TTL 64, checksum b861. */
static const uint8_t ip_example[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
				       0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};

START_TEST(test_ipv4_build_parse)
{
	uint8_t p[0x73];
	memset(p, 0, sizeof(p));
	iwn_ip4_build(p, 0xc0a80001, 0xc0a800c7, 17, 0, 64, 0x73 - 20);
	ck_assert_mem_eq(p, ip_example, 20);
	struct iwn_ip4 h;
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), 0);
	ck_assert_uint_eq(h.hlen, 20);
	ck_assert_uint_eq(h.totlen, 0x73);
	ck_assert_uint_eq(h.proto, 17);
	ck_assert_uint_eq(h.src, 0xc0a80001);
	ck_assert_uint_eq(h.dst, 0xc0a800c7);
	ck_assert_uint_eq(h.ttl, 64);
	/* Link padding after the packet is fine; truncation is not. */
	uint8_t big[0x80];
	memset(big, 0, sizeof(big));
	memcpy(big, p, sizeof(p));
	ck_assert_int_eq(iwn_ip4_parse(big, sizeof(big), &h), 0);
	ck_assert_int_eq(iwn_ip4_parse(p, 0x72, &h), IWN_IP4_EBAD);
	ck_assert_int_eq(iwn_ip4_parse(p, 19, &h), IWN_IP4_EBAD);
}
END_TEST

static void fix_csum(uint8_t *p)
{
	p[10] = p[11] = 0;
	uint16_t c = iwn_cksum_fold(iwn_cksum_add(0, p, (size_t)(p[0] & 15) * 4));
	p[10] = (uint8_t)(c >> 8);
	p[11] = (uint8_t)c;
}

START_TEST(test_ipv4_errors)
{
	uint8_t p[0x73];
	memset(p, 0, sizeof(p));
	memcpy(p, ip_example, 20);
	struct iwn_ip4 h;
	p[11] ^= 1;
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), IWN_IP4_ECSUM);
	p[11] ^= 1;
	/* More-fragments flag, then a nonzero offset: both dropped. */
	p[6] = 0x20;
	fix_csum(p);
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), IWN_IP4_EFRAG);
	p[6] = 0x00;
	p[7] = 0x10;
	fix_csum(p);
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), IWN_IP4_EFRAG);
	p[7] = 0;
	p[6] = 0x40;
	fix_csum(p);
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), 0);
	/* Version 6, IHL 4, IHL beyond the buffer, total length < IHL. */
	p[0] = 0x65;
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), IWN_IP4_EBAD);
	p[0] = 0x44;
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), IWN_IP4_EBAD);
	p[0] = 0x4f;
	ck_assert_int_eq(iwn_ip4_parse(p, 40, &h), IWN_IP4_EBAD);
	/* Options: IHL 6 with a NOP word is accepted, payload after it. */
	p[0] = 0x46;
	p[20] = p[21] = p[22] = p[23] = 1;
	fix_csum(p);
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), 0);
	ck_assert_uint_eq(h.hlen, 24);
	p[2] = 0;
	p[3] = 20; /* totlen 20 < hlen 24 */
	fix_csum(p);
	ck_assert_int_eq(iwn_ip4_parse(p, sizeof(p), &h), IWN_IP4_EBAD);
}
END_TEST

START_TEST(test_icmp_echo)
{
	/* id 0x1234 seq 1 "abcd"; checksums computed by hand. */
	uint8_t m[] = {0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, 'a', 'b', 'c', 'd'};
	const uint8_t want[] = {0x00, 0x00, 0x29, 0x04, 0x12, 0x34, 0x00, 0x01, 'a', 'b', 'c', 'd'};
	ck_assert_uint_eq(iwn_cksum_fold(iwn_cksum_add(0, m, sizeof(m))), 0);
	ck_assert_int_eq(iwn_icmp_echo_reply(m, sizeof(m)), 0);
	ck_assert_mem_eq(m, want, sizeof(want));
	/* A reply is not answered, nor a bad checksum, nor a short message. */
	ck_assert_int_eq(iwn_icmp_echo_reply(m, sizeof(m)), -EINVAL);
	uint8_t r[] = {0x08, 0x00, 0x21, 0x05, 0x12, 0x34, 0x00, 0x01, 'a', 'b', 'c', 'd'};
	ck_assert_int_eq(iwn_icmp_echo_reply(r, sizeof(r)), -EINVAL);
	ck_assert_int_eq(iwn_icmp_echo_reply(r, 7), -EINVAL);
}
END_TEST

/* SYN 10.0.0.1:4660 -> 10.0.0.2:4791, seq 0x01020304, MSS 1460, WS 7,
 * window 65535; checksum 0x4725 computed independently. */
static const uint8_t syn_bytes[28] = {0x12, 0x34, 0x12, 0xb7, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00,
				      0x00, 0x00, 0x70, 0x02, 0xff, 0xff, 0x47, 0x25, 0x00, 0x00,
				      0x02, 0x04, 0x05, 0xb4, 0x01, 0x03, 0x03, 0x07};

START_TEST(test_tcp_build_syn)
{
	struct iwn_tcp_hdr h;
	memset(&h, 0, sizeof(h));
	h.sport = 0x1234;
	h.dport = 4791;
	h.seq = 0x01020304;
	h.flags = IWN_TCP_SYN;
	h.win = 0xffff;
	h.opt.has_mss = true;
	h.opt.mss = 1460;
	h.opt.has_ws = true;
	h.opt.ws = 7;
	ck_assert_uint_eq(iwn_tcp_opts_len(&h.opt), 8);
	uint8_t seg[60];
	size_t n = iwn_tcp_build(seg, &h);
	ck_assert_uint_eq(n, 28);
	iwn_tcp_set_csum(seg, n, 0x0a000001, 0x0a000002);
	ck_assert_mem_eq(seg, syn_bytes, 28);

	struct iwn_tcp_hdr p;
	ck_assert_int_eq(iwn_tcp_parse(seg, n, 0x0a000001, 0x0a000002, &p), 0);
	ck_assert_uint_eq(p.sport, 0x1234);
	ck_assert_uint_eq(p.dport, 4791);
	ck_assert_uint_eq(p.seq, 0x01020304);
	ck_assert_uint_eq(p.flags, IWN_TCP_SYN);
	ck_assert_uint_eq(p.hlen, 28);
	ck_assert(p.opt.has_mss && p.opt.mss == 1460);
	ck_assert(p.opt.has_ws && p.opt.ws == 7);
	ck_assert(!p.opt.has_ts && !p.opt.sack_ok);
	ck_assert_uint_eq(p.plen, 0);
	/* Wrong pseudo-header (other destination) fails the checksum. */
	ck_assert_int_eq(iwn_tcp_parse(seg, n, 0x0a000001, 0x0a000003, &p), -EBADMSG);
}
END_TEST

START_TEST(test_tcp_data_csum)
{
	/* 192.168.1.1:49152 -> 192.168.1.2:4791 ACK|PSH "hello": 0x13e9. */
	uint8_t seg[25] = {0xc0, 0x00, 0x12, 0xb7, 0xff, 0xff, 0xff, 0xf0, 0x00, 0x00, 0x00, 0x10, 0x50,
			   0x18, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 'h',  'e',  'l',  'l',  'o'};
	iwn_tcp_set_csum(seg, sizeof(seg), 0xc0a80101, 0xc0a80102);
	ck_assert_uint_eq(seg[16], 0x13);
	ck_assert_uint_eq(seg[17], 0xe9);
	struct iwn_tcp_hdr h;
	ck_assert_int_eq(iwn_tcp_parse(seg, sizeof(seg), 0xc0a80101, 0xc0a80102, &h), 0);
	ck_assert_uint_eq(h.seq, 0xfffffff0);
	ck_assert_uint_eq(h.ack, 0x10);
	ck_assert_uint_eq(h.flags, IWN_TCP_ACK | IWN_TCP_PSH);
	ck_assert_uint_eq(h.win, 0x200);
	ck_assert_uint_eq(h.plen, 5);
	ck_assert_mem_eq(h.payload, "hello", 5);
	seg[22] ^= 0x20;
	ck_assert_int_eq(iwn_tcp_parse(seg, sizeof(seg), 0xc0a80101, 0xc0a80102, &h), -EBADMSG);
}
END_TEST

static int parse_with_opts(const uint8_t *opts, size_t olen, struct iwn_tcp_hdr *h)
{
	uint8_t seg[60];
	memset(seg, 0, sizeof(seg));
	seg[12] = (uint8_t)((20 + olen) / 4 << 4);
	memcpy(seg + 20, opts, olen);
	iwn_tcp_set_csum(seg, 20 + olen, 1, 2);
	return iwn_tcp_parse(seg, 20 + olen, 1, 2, h);
}

START_TEST(test_tcp_options)
{
	struct iwn_tcp_hdr h;
	/* Timestamps, SACK-permitted, window scale above 14 clamps. */
	const uint8_t a[] = {1, 1, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6, 4, 2, 3, 3, 20, 0, 0, 0};
	ck_assert_int_eq(parse_with_opts(a, sizeof(a), &h), 0);
	ck_assert(h.opt.has_ts && h.opt.tsval == 5 && h.opt.tsecr == 6);
	ck_assert(h.opt.sack_ok);
	ck_assert(h.opt.has_ws && h.opt.ws == 14);
	/* EOL stops parsing. */
	const uint8_t b[] = {0, 2, 4, 5, 0xb4, 0, 0, 0};
	ck_assert_int_eq(parse_with_opts(b, sizeof(b), &h), 0);
	ck_assert(!h.opt.has_mss);
	/* A zero length and an overrunning length stop parsing, no crash. */
	const uint8_t c[] = {2, 4, 5, 0xb4, 3, 0, 1, 1};
	ck_assert_int_eq(parse_with_opts(c, sizeof(c), &h), 0);
	ck_assert(h.opt.has_mss && h.opt.mss == 1460 && !h.opt.has_ws);
	const uint8_t d[] = {1, 1, 1, 2, 200, 0, 0, 0};
	ck_assert_int_eq(parse_with_opts(d, sizeof(d), &h), 0);
	ck_assert(!h.opt.has_mss);
	/* Wrong option lengths are skipped without effect. */
	const uint8_t e[] = {2, 3, 5, 3, 4, 1, 1, 1};
	ck_assert_int_eq(parse_with_opts(e, sizeof(e), &h), 0);
	ck_assert(!h.opt.has_mss && !h.opt.has_ws);
	/* Data offset below 5 or beyond the segment. */
	uint8_t seg[24];
	memset(seg, 0, sizeof(seg));
	seg[12] = 0x40;
	ck_assert_int_eq(iwn_tcp_parse(seg, sizeof(seg), 1, 2, &h), -EINVAL);
	seg[12] = 0x70;
	ck_assert_int_eq(iwn_tcp_parse(seg, sizeof(seg), 1, 2, &h), -EINVAL);
	ck_assert_int_eq(iwn_tcp_parse(seg, 19, 1, 2, &h), -EINVAL);
	/* Building every option: the parser reads back what was written. */
	struct iwn_tcp_hdr w;
	memset(&w, 0, sizeof(w));
	w.opt = (struct iwn_tcp_opts){.has_mss = true, .has_ws = true, .sack_ok = true, .has_ts = true,
				      .mss = 8960, .ws = 3, .tsval = 0xdeadbeef, .tsecr = 0x01020304};
	uint8_t out[60];
	size_t n = iwn_tcp_build(out, &w);
	ck_assert_uint_eq(n, 20 + 24);
	iwn_tcp_set_csum(out, n, 7, 9);
	ck_assert_int_eq(iwn_tcp_parse(out, n, 7, 9, &h), 0);
	ck_assert(h.opt.has_mss && h.opt.mss == 8960 && h.opt.has_ws && h.opt.ws == 3 && h.opt.sack_ok);
	ck_assert(h.opt.has_ts && h.opt.tsval == 0xdeadbeef && h.opt.tsecr == 0x01020304);
}
END_TEST

START_TEST(test_tcp_sack_option)
{
	struct iwn_tcp_hdr w, h;
	memset(&w, 0, sizeof(w));
	w.flags = IWN_TCP_ACK;
	w.opt.has_ts = true;
	w.opt.n_sack = 3;
	for (int k = 0; k < 3; k++) {
		w.opt.sack[k][0] = 0xfffffff0u + 100u * (uint32_t)k;
		w.opt.sack[k][1] = 0xfffffff0u + 100u * (uint32_t)k + 50u;
	}
	ck_assert_uint_eq(iwn_tcp_opts_len(&w.opt), 40);
	uint8_t out[60];
	size_t n = iwn_tcp_build(out, &w);
	ck_assert_uint_eq(n, 60);
	/* NOP NOP kind 5 length 26, then the blocks. */
	const uint8_t head[] = {1, 1, 5, 26, 0xff, 0xff, 0xff, 0xf0, 0x00, 0x00, 0x00, 0x22};
	ck_assert_mem_eq(out + 32, head, sizeof(head));
	iwn_tcp_set_csum(out, n, 3, 4);
	ck_assert_int_eq(iwn_tcp_parse(out, n, 3, 4, &h), 0);
	ck_assert_uint_eq(h.opt.n_sack, 3);
	ck_assert_uint_eq(h.opt.sack[2][0], 0xfffffff0u + 200u);
	ck_assert_uint_eq(h.opt.sack[2][1], 0xfffffff0u + 250u);
	/* Lengths that are not 2 + 8n are ignored. */
	const uint8_t bad[] = {5, 9, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1};
	ck_assert_int_eq(parse_with_opts(bad, sizeof(bad), &h), 0);
	ck_assert_uint_eq(h.opt.n_sack, 0);
}
END_TEST

START_TEST(test_random_never_crashes)
{
	uint64_t st = iwt_seed();
	uint8_t buf[128];
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)iwt_rand_range(&st, 0, sizeof(buf));
		iwt_fill_random(&st, buf, len);
		if (len > 12 && (i & 1))
			buf[12] = (uint8_t)(buf[12] & 0xF0) | 0x00;
		struct iwn_tcp_hdr h;
		struct iwn_ip4 ip;
		struct iwn_arp_pkt a;
		if (iwn_tcp_parse(buf, len, 1, 2, &h) == 0)
			ck_assert_uint_le(h.hlen + h.plen, len);
		if (iwn_ip4_parse(buf, len, &ip) == 0)
			ck_assert_uint_le(ip.totlen, len);
		(void)iwn_arp_parse(buf, len, &a);
		(void)iwn_icmp_echo_reply(buf, len);
	}
}
END_TEST

static Suite *codec_suite(void)
{
	Suite *s = suite_create("net_codec");
	TCase *t = tcase_create("codec");
	tcase_add_test(t, test_cksum_rfc1071);
	tcase_add_test(t, test_eth);
	tcase_add_test(t, test_arp_codec);
	tcase_add_test(t, test_ipv4_build_parse);
	tcase_add_test(t, test_ipv4_errors);
	tcase_add_test(t, test_icmp_echo);
	tcase_add_test(t, test_tcp_build_syn);
	tcase_add_test(t, test_tcp_data_csum);
	tcase_add_test(t, test_tcp_options);
	tcase_add_test(t, test_tcp_sack_option);
	tcase_add_test(t, test_random_never_crashes);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(codec_suite());
}
