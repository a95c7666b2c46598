/* The TCP building blocks on their own: SipHash/ISN (RFC 6528), the RTO
 * estimator (RFC 6298), send buffer with record cuts, receive reassembly,
 * NewReno (RFC 5681/6582), and the ARP cache timers. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "net/arp.h"
#include "net/tcp_cc.h"
#include "net/tcp_isn.h"
#include "net/tcp_rcvbuf.h"
#include "net/tcp_rtt.h"
#include "net/tcp_sack.h"
#include "net/tcp_sndbuf.h"

START_TEST(test_siphash_vectors)
{
	/* Reference vectors of SipHash-2-4: key 00..0f, messages 00..(n-1). */
	uint8_t key[16], msg[64];
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	ck_assert_uint_eq(iwn_siphash24(key, msg, 0), 0x726fdb47dd0e0e31ULL);
	ck_assert_uint_eq(iwn_siphash24(key, msg, 15), 0xa129ca6149be45e5ULL);
}
END_TEST

START_TEST(test_isn)
{
	uint8_t k1[16] = {1}, k2[16] = {2};
	uint32_t a = iwn_tcp_isn(k1, 0x0a000001, 1000, 0x0a000002, 80, 0);
	/* The clock part: 1 per 4 us. */
	ck_assert_uint_eq(iwn_tcp_isn(k1, 0x0a000001, 1000, 0x0a000002, 80, 4000) - a, 1000);
	/* Another tuple or key: another offset. */
	ck_assert_uint_ne(iwn_tcp_isn(k1, 0x0a000001, 1001, 0x0a000002, 80, 0), a);
	ck_assert_uint_ne(iwn_tcp_isn(k1, 0x0a000001, 1000, 0x0a000003, 80, 0), a);
	ck_assert_uint_ne(iwn_tcp_isn(k2, 0x0a000001, 1000, 0x0a000002, 80, 0), a);
	ck_assert_uint_eq(iwn_tcp_isn(k1, 0x0a000001, 1000, 0x0a000002, 80, 0), a);
}
END_TEST

START_TEST(test_rtt_rfc6298)
{
	struct iwn_tcp_rtt r;
	iwn_rtt_init(&r, 200000, 60000000);
	ck_assert_uint_eq(r.rto, 1000000); /* sec. 2.1 */
	iwn_rtt_sample(&r, 100000);        /* sec. 2.2 */
	ck_assert_uint_eq(r.srtt, 100000);
	ck_assert_uint_eq(r.rttvar, 50000);
	ck_assert_uint_eq(r.rto, 300000);
	iwn_rtt_sample(&r, 200000); /* sec. 2.3 */
	ck_assert_uint_eq(r.rttvar, 62500);
	ck_assert_uint_eq(r.srtt, 112500);
	ck_assert_uint_eq(r.rto, 362500);
	iwn_rtt_backoff(&r);
	ck_assert_uint_eq(r.rto, 725000);
	for (int i = 0; i < 20; i++)
		iwn_rtt_backoff(&r);
	ck_assert_uint_eq(r.rto, 60000000); /* capped */
	/* Tiny RTTs: the minimum; zero variance: the granularity G. */
	iwn_rtt_init(&r, 200000, 60000000);
	for (int i = 0; i < 50; i++)
		iwn_rtt_sample(&r, 1000);
	ck_assert_uint_eq(r.rto, 200000);
	iwn_rtt_init(&r, 0, 60000000);
	for (int i = 0; i < 100; i++)
		iwn_rtt_sample(&r, 50000);
	ck_assert_uint_eq(r.rttvar, 0);
	ck_assert_uint_eq(r.rto, 50000 + IWN_RTO_GRANULARITY_US);
	/* RFC 6298's 1 s minimum when asked for. */
	iwn_rtt_init(&r, 1000000, 60000000);
	iwn_rtt_sample(&r, 10000);
	ck_assert_uint_eq(r.rto, 1000000);
}
END_TEST

START_TEST(test_sndbuf_ring)
{
	struct iwn_sndbuf sb;
	ck_assert_int_eq(iwn_sndbuf_init(&sb, 10, 4), 0);
	uint8_t in[16], out[16];
	for (int i = 0; i < 16; i++)
		in[i] = (uint8_t)(i + 1);
	ck_assert_uint_eq(iwn_sndbuf_write(&sb, in, 16), 10);
	ck_assert_uint_eq(iwn_sndbuf_space(&sb), 0);
	iwn_sndbuf_consume(&sb, 7);
	ck_assert_uint_eq(sb.base, 7);
	ck_assert_uint_eq(iwn_sndbuf_write(&sb, in + 10, 6), 6); /* wraps */
	iwn_sndbuf_copy(&sb, 0, out, 9);
	ck_assert_mem_eq(out, in + 7, 9);
	iwn_sndbuf_copy(&sb, 4, out, 5);
	ck_assert_mem_eq(out, in + 11, 5);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 0, 4), 4);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 6, 100), 3);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 9, 100), 0);
	iwn_sndbuf_fini(&sb);
}
END_TEST

/* The ring comes with the first write: a connection that never sends
 * (a flood's) costs no send buffer (1 MiB each on the raw transport, an
 * mmap, page faults and a munmap per connection before). */
START_TEST(test_sndbuf_lazy)
{
	struct iwn_sndbuf sb;
	uint8_t d[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
	ck_assert_int_eq(iwn_sndbuf_init(&sb, 1u << 20, 256), 0);
	ck_assert_ptr_null(sb.buf);
	ck_assert_ptr_null(sb.marks);
	ck_assert_uint_eq(iwn_sndbuf_space(&sb), 1u << 20);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 0, 100), 0);
	ck_assert_uint_eq(iwn_sndbuf_reclen(&sb, 0), 0);
	iwn_sndbuf_copy(&sb, 0, out, 0);
	iwn_sndbuf_consume(&sb, 0);
	ck_assert_uint_eq(iwn_sndbuf_write(&sb, d, 0), 0);
	ck_assert_ptr_null(sb.buf);
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 0), -EINVAL);
	ck_assert_ptr_null(sb.buf);
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 8), 8);
	ck_assert_ptr_nonnull(sb.buf);
	ck_assert_ptr_nonnull(sb.marks);
	iwn_sndbuf_copy(&sb, 0, out, 8);
	ck_assert_mem_eq(out, d, 8);
	iwn_sndbuf_fini(&sb);
	/* Never written: nothing to free. */
	ck_assert_int_eq(iwn_sndbuf_init(&sb, 4096, 0), 0);
	iwn_sndbuf_fini(&sb);
}
END_TEST

START_TEST(test_sndbuf_records)
{
	struct iwn_sndbuf sb;
	ck_assert_int_eq(iwn_sndbuf_init(&sb, 1000, 3), 0);
	uint8_t d[600] = {0};
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 0), -EINVAL);
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 100), 100); /* ends 100 */
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 200), 200); /* ends 300 */
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 500), 500); /* ends 800 */
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 10), -EAGAIN); /* table full */
	/* The farthest boundary within the limit. */
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 0, 350), 300);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 0, 299), 100);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 100, 1000), 700);
	/* A record longer than the limit is cut at the limit. */
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 300, 200), 200);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 500, 200), 200);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 700, 200), 100);
	/* Acknowledging frees boundaries; a retransmission from a boundary
	 * cuts where the first transmission did. */
	iwn_sndbuf_consume(&sb, 100);
	ck_assert_uint_eq(sb.mlen, 2);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 0, 350), 200);
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 301), -EAGAIN); /* 300 bytes free */
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 300), 300);    /* ends 1100 */
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 1), -EAGAIN);
	ck_assert_int_eq(iwn_sndbuf_write_record(&sb, d, 1001), -EMSGSIZE);
	/* Unrecorded bytes after the last record: plain cuts. */
	iwn_sndbuf_consume(&sb, 700);
	ck_assert_uint_eq(sb.mlen, 1);
	ck_assert_uint_eq(iwn_sndbuf_write(&sb, d, 50), 50);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 0, 1000), 300);
	ck_assert_uint_eq(iwn_sndbuf_seglen(&sb, 300, 1000), 50);
	iwn_sndbuf_fini(&sb);
}
END_TEST

static void fill(uint8_t *p, uint64_t off, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)((off + i) * 7 + 3);
}

/* The buffer starts at 64 KiB and doubles, up to its size, each time as
 * many bytes as it holds have passed: the ring is laid out again with
 * unread and out-of-order bytes (straddling the wrap) kept in place, and
 * the window never shrinks (a connection flood costs 64 KiB each, not
 * the whole 1 MiB: floods_raw under ASan). */
START_TEST(test_rcvbuf_grows)
{
	struct iwn_rcvbuf rb;
	const uint32_t max = 1u << 20;
	ck_assert_int_eq(iwn_rcvbuf_init(&rb, max), 0);
	ck_assert_uint_eq(rb.cap, IWN_RCV_INITIAL);
	ck_assert_uint_eq(iwn_rcvbuf_window(&rb), IWN_RCV_INITIAL);
	static uint8_t d[4096], out[8192], want[8192];
	/* Always an out-of-order piece pending (100 bytes past nxt) when a
	 * growth comes, and about 3000 bytes unread so the ring wraps with
	 * data in it. */
	uint64_t g = 0, rd = 0;
	uint32_t last_cap = rb.cap, growths = 0;
	fill(d, 100, 500);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 100, d, 500), 0);
	while (rb.cap < max || g < 4u * max) {
		uint32_t n = 1000 + (uint32_t)(g % 3000);
		uint64_t edge = rb.nxt + iwn_rcvbuf_window(&rb);
		uint64_t next_g = g + 600 + n;
		fill(d, next_g + 100, 500);
		ck_assert_int_eq(iwn_rcvbuf_insert(&rb, next_g + 100, d, 500), 0);
		fill(d, g, 100);
		ck_assert_int_eq(iwn_rcvbuf_insert(&rb, g, d, 100), 600);
		fill(d, g + 600, n);
		ck_assert_int_eq(iwn_rcvbuf_insert(&rb, g + 600, d, n), n);
		g = next_g;
		ck_assert_uint_eq(rb.n_ooo, 1);
		ck_assert_uint_ge(rb.nxt + iwn_rcvbuf_window(&rb), edge); /* never shrinks */
		if (rb.cap != last_cap) {
			ck_assert_uint_eq(rb.cap, last_cap * 2 > max ? max : last_cap * 2);
			last_cap = rb.cap;
			growths++;
		}
		while (rb.used > 3000) {
			uint32_t k = iwn_rcvbuf_read(&rb, out, rb.used - 3000 < sizeof(out) ? rb.used - 3000 : sizeof(out));
			fill(want, rd, k);
			ck_assert_mem_eq(out, want, k);
			rd += k;
		}
	}
	ck_assert_uint_eq(growths, 4); /* 64 KiB -> 128 -> 256 -> 512 -> 1 MiB */
	ck_assert_uint_eq(rb.cap, max);
	uint32_t k = iwn_rcvbuf_read(&rb, out, sizeof(out));
	fill(want, rd, k);
	ck_assert_mem_eq(out, want, k);
	ck_assert_uint_eq(rd + k, g);
	fill(d, g, 100); /* the last gap: the pending piece becomes readable */
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, g, d, 100), 600);
	ck_assert_uint_eq(iwn_rcvbuf_read(&rb, out, sizeof(out)), 600);
	fill(want, g, 600);
	ck_assert_mem_eq(out, want, 600);
	iwn_rcvbuf_fini(&rb);
	/* Asked for less than 64 KiB: that size from the start, no growth. */
	ck_assert_int_eq(iwn_rcvbuf_init(&rb, 100), 0);
	ck_assert_uint_eq(rb.cap, 100);
	ck_assert_uint_eq(rb.max, 100);
	iwn_rcvbuf_fini(&rb);
}
END_TEST

START_TEST(test_rcvbuf_reassembly)
{
	struct iwn_rcvbuf rb;
	ck_assert_int_eq(iwn_rcvbuf_init(&rb, 100), 0);
	uint8_t d[200], out[200];
	fill(d, 30, 20);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 30, d, 20), 0); /* hole 0..30 */
	ck_assert_uint_eq(rb.n_ooo, 1);
	fill(d, 60, 10);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 60, d, 10), 0);
	fill(d, 45, 20); /* bridges the two ranges */
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 45, d, 20), 0);
	ck_assert_uint_eq(rb.n_ooo, 1);
	ck_assert_uint_eq(rb.ooo[0].start, 30);
	ck_assert_uint_eq(rb.ooo[0].end, 70);
	fill(d, 0, 30);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 0, d, 30), 70); /* hole filled */
	ck_assert_uint_eq(rb.n_ooo, 0);
	ck_assert_uint_eq(iwn_rcvbuf_window(&rb), 30);
	/* Beyond the window is cut off; old bytes change nothing. */
	fill(d, 70, 50);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 70, d, 50), 30);
	ck_assert_uint_eq(iwn_rcvbuf_window(&rb), 0);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 10, d, 20), 0);
	ck_assert_uint_eq(iwn_rcvbuf_read(&rb, out, 200), 100);
	uint8_t want[100];
	fill(want, 0, 100);
	ck_assert_mem_eq(out, want, 100);
	/* The ring wraps. */
	fill(d, 100, 80);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 100, d, 80), 80);
	ck_assert_uint_eq(iwn_rcvbuf_read(&rb, out, 50), 50);
	fill(d, 180, 60);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 180, d, 60), 60);
	ck_assert_uint_eq(iwn_rcvbuf_read(&rb, out + 50, 150), 90);
	fill(want, 100, 100);
	ck_assert_mem_eq(out, want, 100);
	ck_assert_mem_eq(out + 100, d + 20, 40);
	iwn_rcvbuf_fini(&rb);
}
END_TEST

START_TEST(test_rcvbuf_holes_full)
{
	struct iwn_rcvbuf rb;
	ck_assert_int_eq(iwn_rcvbuf_init(&rb, 1000), 0);
	uint8_t d[1000];
	fill(d, 0, 1000);
	for (int i = 0; i < IWN_RCV_MAX_HOLES; i++)
		ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 10 + 20 * (uint64_t)i, d + 10 + 20 * i, 5), 0);
	ck_assert_uint_eq(rb.n_ooo, IWN_RCV_MAX_HOLES);
	/* A new disjoint range does not fit; one touching a range merges. */
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 900, d + 900, 5), -ENOSPC);
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 15, d + 15, 5), 0);
	ck_assert_uint_eq(rb.n_ooo, IWN_RCV_MAX_HOLES);
	/* One segment covering everything collapses them all. */
	ck_assert_int_eq(iwn_rcvbuf_insert(&rb, 0, d, 400), 400);
	ck_assert_uint_eq(rb.n_ooo, 0);
	uint8_t out[400];
	ck_assert_uint_eq(iwn_rcvbuf_read(&rb, out, 400), 400);
	ck_assert_mem_eq(out, d, 400);
	iwn_rcvbuf_fini(&rb);
}
END_TEST

START_TEST(test_rcvbuf_random)
{
	/* Random segments of a stream in random order, duplicated: what is
	 * read is exactly the stream. */
	uint64_t st = iwt_seed();
	for (int round = 0; round < 200; round++) {
		uint32_t cap = (uint32_t)iwt_rand_range(&st, 1, 300);
		struct iwn_rcvbuf rb;
		ck_assert_int_eq(iwn_rcvbuf_init(&rb, cap), 0);
		uint8_t stream[2000], out[2000], seg[400];
		fill(stream, 0, sizeof(stream));
		uint64_t got = 0;
		for (int k = 0; k < 3000 && got < sizeof(stream); k++) {
			uint64_t off = rb.nxt + iwt_rand_range(&st, 0, cap + 20) - (k % 3 == 0 ? 10 : 0);
			if (off > rb.nxt + cap + 20)
				off = rb.nxt;
			uint32_t len = (uint32_t)iwt_rand_range(&st, 1, 80);
			if (off + len > sizeof(stream))
				continue;
			memcpy(seg, stream + off, len);
			(void)iwn_rcvbuf_insert(&rb, off, seg, len);
			uint32_t n = iwn_rcvbuf_read(&rb, out + got, (uint32_t)iwt_rand_range(&st, 0, 100));
			got += n;
		}
		got += iwn_rcvbuf_read(&rb, out + got, (uint32_t)(sizeof(out) - got));
		ck_assert_mem_eq(out, stream, got);
		iwn_rcvbuf_fini(&rb);
	}
}
END_TEST

START_TEST(test_cc_newreno)
{
	struct iwn_tcp_cc cc;
	iwn_cc_init(&cc, 1460);
	ck_assert_uint_eq(cc.cwnd, 3 * 1460); /* RFC 5681 sec. 3.1 */
	iwn_cc_init(&cc, 536);
	ck_assert_uint_eq(cc.cwnd, 4 * 536);
	iwn_cc_init(&cc, 8960);
	ck_assert_uint_eq(cc.cwnd, 2 * 8960);
	iwn_cc_init(&cc, 1000);
	/* Slow start: at most one MSS per ACK. */
	iwn_cc_on_ack(&cc, 1000, 1000, 4000);
	ck_assert_uint_eq(cc.cwnd, 5000);
	iwn_cc_on_ack(&cc, 4000, 3000, 4000);
	ck_assert_uint_eq(cc.cwnd, 6000);
	/* Three duplicate ACKs: fast retransmit, ssthresh = flight / 2. */
	ck_assert_int_eq(iwn_cc_on_dupack(&cc, 4000, 10000, 6000), IWN_CC_NONE);
	ck_assert_int_eq(iwn_cc_on_dupack(&cc, 4000, 10000, 6000), IWN_CC_NONE);
	ck_assert_int_eq(iwn_cc_on_dupack(&cc, 4000, 10000, 6000), IWN_CC_RETRANSMIT);
	ck_assert(cc.in_recovery);
	ck_assert_uint_eq(cc.ssthresh, 3000);
	ck_assert_uint_eq(cc.cwnd, 6000);
	ck_assert_uint_eq(cc.recover, 10000);
	/* Inflation by further duplicates. */
	ck_assert_int_eq(iwn_cc_on_dupack(&cc, 4000, 10000, 6000), IWN_CC_NONE);
	ck_assert_uint_eq(cc.cwnd, 7000);
	/* Partial ACK: deflate, add one MSS back, resend the next hole. */
	ck_assert_int_eq(iwn_cc_on_ack(&cc, 6000, 2000, 6000), IWN_CC_RETRANSMIT);
	ck_assert_uint_eq(cc.cwnd, 6000);
	ck_assert(cc.in_recovery);
	/* Full ACK (reaching recover = snd_max at entry): out,
	 * cwnd = min(ssthresh, max(flight, MSS) + MSS). */
	ck_assert_int_eq(iwn_cc_on_ack(&cc, 10000, 4000, 4000), IWN_CC_NONE);
	ck_assert(!cc.in_recovery);
	ck_assert_uint_eq(cc.cwnd, 2000);
	/* Congestion avoidance: one MSS per cwnd of ACKed bytes. */
	cc.cwnd = 4000;
	cc.ssthresh = 3000;
	iwn_cc_on_ack(&cc, 12000, 1000, 4000);
	iwn_cc_on_ack(&cc, 14000, 2000, 4000);
	ck_assert_uint_eq(cc.cwnd, 4000);
	iwn_cc_on_ack(&cc, 15000, 1000, 4000);
	ck_assert_uint_eq(cc.cwnd, 5000);
	/* Duplicates not beyond recover do not start a new recovery. */
	iwn_cc_on_rto(&cc, 8000, 30000);
	ck_assert_uint_eq(cc.cwnd, 1000);
	ck_assert_uint_eq(cc.ssthresh, 4000);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iwn_cc_on_dupack(&cc, 20000, 30000, 8000), IWN_CC_NONE);
	ck_assert(!cc.in_recovery);
}
END_TEST

START_TEST(test_sack_board)
{
	struct iwn_sack_board b;
	iwn_sack_clear(&b);
	const uint32_t una = 0xfffffc00u, max = una + 10000;
	const uint32_t blk[][2] = {
		{una + 3000, una + 4000}, {una + 1000, una + 2000}, {una + 2000, una + 2500}, /* merges */
		{una + 5000, una + 4000},                                                   /* inverted */
		{una - 100, una + 50},                                                      /* below snd_una */
		{una + 9000, max + 1},                                                      /* beyond snd_max */
	};
	iwn_sack_add(&b, blk, 6, una, max);
	ck_assert_uint_eq(b.n, 2);
	ck_assert_uint_eq(b.s[0], una + 1000);
	ck_assert_uint_eq(b.e[0], una + 2500);
	ck_assert_uint_eq(b.s[1], una + 3000);
	uint32_t hs, he;
	ck_assert(iwn_sack_next_hole(&b, una, una, &hs, &he));
	ck_assert_uint_eq(hs, una);
	ck_assert_uint_eq(he, una + 1000);
	ck_assert(iwn_sack_next_hole(&b, una, una + 1000, &hs, &he));
	ck_assert_uint_eq(hs, una + 2500);
	ck_assert_uint_eq(he, una + 3000);
	ck_assert(!iwn_sack_next_hole(&b, una, una + 3000, &hs, &he)); /* nothing known lost above */
	iwn_sack_prune(&b, una + 1500);
	ck_assert_uint_eq(b.n, 2);
	ck_assert_uint_eq(b.s[0], una + 1500);
	iwn_sack_prune(&b, una + 3500);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_uint_eq(b.s[0], una + 3500);
	/* A full board drops new disjoint reports. */
	iwn_sack_clear(&b);
	for (uint32_t k = 0; k < IWN_SACK_RANGES + 3; k++) {
		const uint32_t one[1][2] = {{una + 100 * (k + 1), una + 100 * (k + 1) + 10}};
		iwn_sack_add(&b, one, 1, una, max);
	}
	ck_assert_uint_eq(b.n, IWN_SACK_RANGES);
}
END_TEST

static uint32_t requested[16];
static int n_requested;
static void on_request(void *arg, uint32_t ip)
{
	(void)arg;
	if (n_requested < 16)
		requested[n_requested++] = ip;
}

START_TEST(test_arp_cache)
{
	struct iwn_arp_cache c;
	ck_assert_int_eq(iwn_arp_cache_init(&c, 2, 64, 1000, 100, 3), 0);
	const uint8_t mac1[6] = {2, 0, 0, 0, 0, 1}, mac2[6] = {2, 0, 0, 0, 0, 2}, mac3[6] = {2, 0, 0, 0, 0, 3};
	uint8_t *f;
	uint32_t fl;
	ck_assert_ptr_null(iwn_arp_lookup(&c, 1, 0));
	/* Not for us and unknown: not learned. */
	iwn_arp_learn(&c, 1, mac1, 0, false, &f, &fl);
	ck_assert_ptr_null(iwn_arp_lookup(&c, 1, 0));
	iwn_arp_learn(&c, 1, mac1, 0, true, &f, &fl);
	ck_assert_ptr_null(f);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 1000);
	ck_assert_mem_eq(iwn_arp_lookup(&c, 1, 999), mac1, 6);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 700); /* in use: refresh first */
	/* Expiry. */
	ck_assert_ptr_null(iwn_arp_lookup(&c, 1, 1000));
	n_requested = 0;
	iwn_arp_timers(&c, 1000, on_request, NULL);
	ck_assert_int_eq(n_requested, 0);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), UINT64_MAX);

	/* Queue a frame: one request, a second frame replaces the first. */
	uint8_t fr[64] = {0xaa}, fr2[64] = {0xbb};
	ck_assert_int_eq(iwn_arp_enqueue(&c, 2, fr, 40, 2000), 1);
	ck_assert_int_eq(iwn_arp_enqueue(&c, 2, fr2, 50, 2010), 0);
	ck_assert_uint_eq(c.stats.pending_dropped, 1);
	ck_assert_int_eq(iwn_arp_enqueue(&c, 2, fr2, 65, 2010), -EMSGSIZE);
	/* Retries every 100 us, up to 3 requests in all, then give up. */
	n_requested = 0;
	iwn_arp_timers(&c, 2099, on_request, NULL);
	ck_assert_int_eq(n_requested, 0);
	iwn_arp_timers(&c, 2100, on_request, NULL);
	iwn_arp_timers(&c, 2200, on_request, NULL);
	ck_assert_int_eq(n_requested, 2);
	ck_assert_uint_eq(requested[0], 2);
	iwn_arp_timers(&c, 2300, on_request, NULL);
	ck_assert_int_eq(n_requested, 2);
	ck_assert_uint_eq(c.stats.resolve_failed, 1);
	ck_assert_uint_eq(c.stats.pending_dropped, 2);

	/* Resolution hands the queued frame back once. */
	ck_assert_int_eq(iwn_arp_enqueue(&c, 3, fr2, 50, 3000), 1);
	iwn_arp_learn(&c, 3, mac3, 3050, false, &f, &fl);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fl, 50);
	ck_assert_uint_eq(f[0], 0xbb);
	ck_assert_mem_eq(iwn_arp_lookup(&c, 3, 3050), mac3, 6);
	iwn_arp_learn(&c, 3, mac3, 3060, false, &f, &fl);
	ck_assert_ptr_null(f);
	/* Full table: the least recently used resolved entry goes. */
	iwn_arp_learn(&c, 4, mac1, 3100, true, &f, &fl);
	iwn_arp_lookup(&c, 4, 3200);
	iwn_arp_learn(&c, 5, mac2, 3300, true, &f, &fl);
	ck_assert_ptr_null(iwn_arp_lookup(&c, 3, 3300));
	ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 4, 3300));
	ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 5, 3300));
	ck_assert_uint_eq(c.stats.evicted, 1);
	iwn_arp_cache_fini(&c);
}
END_TEST

START_TEST(test_arp_refresh)
{
	struct iwn_arp_cache c;
	ck_assert_int_eq(iwn_arp_cache_init(&c, 4, 64, 1000, 100, 3), 0);
	const uint8_t mac[6] = {2, 0, 0, 0, 0, 7};
	uint8_t *f;
	uint32_t fl;
	/* Unused since learned: simply expires. */
	iwn_arp_learn(&c, 7, mac, 0, true, &f, &fl);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 1000);
	n_requested = 0;
	iwn_arp_timers(&c, 999, on_request, NULL);
	ck_assert_int_eq(n_requested, 0);
	iwn_arp_timers(&c, 1000, on_request, NULL);
	ck_assert_ptr_null(iwn_arp_lookup(&c, 7, 1000));
	/* In use: requests from expiry - 3 * 100 on, the address stays usable,
	 * and an answer extends it without a gap. */
	iwn_arp_learn(&c, 7, mac, 2000, true, &f, &fl);
	ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 7, 2500));
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 2700);
	iwn_arp_timers(&c, 2700, on_request, NULL);
	ck_assert_int_eq(n_requested, 1);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 2800);
	iwn_arp_timers(&c, 2800, on_request, NULL);
	ck_assert_int_eq(n_requested, 2);
	ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 7, 2850));
	iwn_arp_learn(&c, 7, mac, 2850, false, &f, &fl);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 3850);
	ck_assert_uint_eq(c.stats.refreshes, 2);
	/* Used again, no answer this time: it expires on time. */
	iwn_arp_lookup(&c, 7, 3000);
	ck_assert_uint_eq(iwn_arp_next_deadline(&c), 3550);
	for (uint64_t t = 3550; t < 3850; t += 100)
		iwn_arp_timers(&c, t, on_request, NULL);
	ck_assert_int_eq(n_requested, 5);
	ck_assert_ptr_nonnull(iwn_arp_lookup(&c, 7, 3849));
	iwn_arp_timers(&c, 3850, on_request, NULL);
	ck_assert_ptr_null(iwn_arp_lookup(&c, 7, 3850));
	iwn_arp_cache_fini(&c);
}
END_TEST

static Suite *parts_suite(void)
{
	Suite *s = suite_create("net_parts");
	TCase *t = tcase_create("parts");
	tcase_add_test(t, test_siphash_vectors);
	tcase_add_test(t, test_isn);
	tcase_add_test(t, test_rtt_rfc6298);
	tcase_add_test(t, test_sndbuf_ring);
	tcase_add_test(t, test_sndbuf_lazy);
	tcase_add_test(t, test_sndbuf_records);
	tcase_add_test(t, test_rcvbuf_reassembly);
	tcase_add_test(t, test_rcvbuf_grows);
	tcase_add_test(t, test_rcvbuf_holes_full);
	tcase_add_test(t, test_rcvbuf_random);
	tcase_add_test(t, test_cc_newreno);
	tcase_add_test(t, test_sack_board);
	tcase_add_test(t, test_arp_cache);
	tcase_add_test(t, test_arp_refresh);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(parts_suite());
}
