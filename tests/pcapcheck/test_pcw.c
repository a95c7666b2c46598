/* pcw and pcapmut on damaged input: a capture built here (our MPA and
 * FPDU encoders, markers on in one direction, FPDUs spanning segments) is
 * walked and checked against what was built, then loaded again after
 * random byte damage, random truncation of the file and random
 * resegmentation: the loader must never crash or read out of bounds
 * (run it under ASan), and every FPDU it reports must lie inside the
 * reassembled stream; every mutation is applied to random FPDUs of the
 * damaged captures as well. Argument: a scratch directory. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwt_common.h"
#include "iwt_pcap.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_tx.h"
#include "mpa/mpa_wire.h"
#include "iw_bytes.h"
#include "mut.h"
#include "pcw.h"

static const char *outdir = ".";
static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(iwt_rand(&rng) % n);
}

#define NFPDU 24
#define STREAM_MAX (64 * 1024)

struct built {
	uint8_t stream[2][STREAM_MAX];
	size_t len[2];
	size_t frame_len[2];
	size_t fpdu_start[NFPDU], fpdu_end[NFPDU]; /* direction 1 (markers) */
	int n;
};

static void path(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", outdir, name);
}

/* MPA Request (M=1: the responder inserts markers) and Reply (C=1). */
static void handshake(struct built *b)
{
	struct iw_mpa_frame req = {.kind = IW_MPA_REQUEST, .rev = 2, .markers = true, .crc = true,
				   .enhanced = true, .ird = 1, .ord = 1};
	struct iw_mpa_frame rep = {.kind = IW_MPA_REPLY, .rev = 2, .markers = false, .crc = true,
				   .enhanced = true, .ird = 1, .ord = 1};
	ssize_t n;

	n = iw_mpa_frame_encode(&req, b->stream[0], STREAM_MAX, NULL);
	ck_assert_int_gt(n, 0);
	b->len[0] = b->frame_len[0] = (size_t)n;
	n = iw_mpa_frame_encode(&rep, b->stream[1], STREAM_MAX, NULL);
	ck_assert_int_gt(n, 0);
	b->len[1] = b->frame_len[1] = (size_t)n;
}

/* Untagged SEND FPDUs of varied sizes from the responder, with markers. */
static void fpdus(struct built *b)
{
	struct iw_mpa_tx tx;

	iw_mpa_tx_init(&tx, true, true);
	for (int i = 0; i < NFPDU; i++) {
		uint8_t hdr[18] = {0x41, 0x43, 0}; /* L, DV 1; RV 1, SEND */
		uint8_t payload[1500];
		size_t plen = 1 + rnd((uint32_t)sizeof(payload));
		struct iovec pl = {payload, plen};
		struct iw_mpa_tx_fpdu fp;
		struct iovec iov[2 * (2 + 2) + 2 * IW_MPA_TX_MAX_MARKERS];
		int niov;

		iw_put_be32(hdr + 10, 1 + (uint32_t)i); /* MSN */
		iwt_fill_pattern(payload, plen, (uint32_t)i);
		niov = iw_mpa_tx_build(&tx, &fp, hdr, sizeof(hdr), &pl, 1, iov, (int)(sizeof(iov) / sizeof(iov[0])));
		ck_assert_int_gt(niov, 0);
		b->fpdu_start[i] = b->len[1];
		for (int k = 0; k < niov; k++) {
			ck_assert_uint_le(b->len[1] + iov[k].iov_len, STREAM_MAX);
			memcpy(b->stream[1] + b->len[1], iov[k].iov_base, iov[k].iov_len);
			b->len[1] += iov[k].iov_len;
		}
		b->fpdu_end[i] = b->len[1];
	}
	b->n = NFPDU;
}

/* Write the session, cutting each direction into random segment sizes. */
/* Options of write_pcap. */
static bool use_ipv6;
static int resend_seg = -1; /* this segment of B's FPDU bytes is sent twice */

static void write_pcap(const struct built *b, const char *file, size_t max_seg)
{
	static struct iwt_pcap pc;
	struct iwt_endpoint a, z;
	struct iwt_tcp tcp;
	size_t off;
	int nseg = 0;

	ck_assert_int_eq(iwt_pcap_open(&pc, file), 0);
	ck_assert_int_eq(iwt_endpoint_set(&a, "02:00:00:00:00:01", use_ipv6 ? "fd00::1" : "10.0.0.1", 40001), 0);
	ck_assert_int_eq(iwt_endpoint_set(&z, "02:00:00:00:00:02", use_ipv6 ? "fd00::2" : "10.0.0.2", 7174), 0);
	iwt_tcp_init(&tcp, &pc, &a, &z, 1000, 0xFFFFF000u); /* B's sequence numbers wrap */
	ck_assert_int_eq(iwt_tcp_handshake(&tcp), 0);
	ck_assert_int_eq(iwt_tcp_send(&tcp, IWT_TCP_A, b->stream[0], b->len[0], 1460), 0);
	ck_assert_int_eq(iwt_tcp_send(&tcp, IWT_TCP_B, b->stream[1], b->frame_len[1], 1460), 0);
	for (off = b->frame_len[1]; off < b->len[1];) {
		size_t n = 1 + rnd((uint32_t)max_seg);

		if (n > b->len[1] - off)
			n = b->len[1] - off;
		if (nseg++ == resend_seg) {
			/* A retransmission: the same bytes at the same sequence number. */
			uint32_t seq = tcp.snd_nxt[IWT_TCP_B];

			ck_assert_int_eq(iwt_tcp_send(&tcp, IWT_TCP_B, b->stream[1] + off, n, n), 0);
			tcp.snd_nxt[IWT_TCP_B] = seq;
		}
		ck_assert_int_eq(iwt_tcp_send(&tcp, IWT_TCP_B, b->stream[1] + off, n, n), 0);
		off += n;
	}
	ck_assert_int_eq(iwt_tcp_close(&tcp, IWT_TCP_A), 0);
	ck_assert_int_eq(iwt_pcap_close(&pc), 0);
}

START_TEST(test_walk_matches_built)
{
	static struct built b;
	struct pcw_cap cap;
	char file[1024], err[256];

	rng = iwt_seed() + 1000 + (uint64_t)_i;
	use_ipv6 = _i == 2;
	resend_seg = -1;
	memset(&b, 0, sizeof(b));
	handshake(&b);
	fpdus(&b);
	path(file, sizeof(file), "pcw_walk.pcap");
	write_pcap(&b, file, _i == 0 ? 65000 : 700);
	ck_assert_msg(pcw_load(file, &cap, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(cap.nconns, 1);
	ck_assert(cap.conns[0].mpa);
	ck_assert(cap.conns[0].crc);
	ck_assert(!cap.conns[0].d[0].markers);
	ck_assert(cap.conns[0].d[1].markers);
	ck_assert_uint_eq(cap.conns[0].d[1].nfpdus, NFPDU);
	for (int i = 0; i < NFPDU; i++) {
		const struct pcw_fpdu *f = &cap.conns[0].d[1].fpdus[i];

		ck_assert_uint_eq(f->start, b.fpdu_start[i] - b.frame_len[1] + cap.conns[0].d[1].frame_len);
		ck_assert_uint_eq(f->end, b.fpdu_end[i] - b.frame_len[1] + cap.conns[0].d[1].frame_len);
		ck_assert(f->crc_ok);
		ck_assert_uint_eq(f->opcode, 3);
		/* Logical byte 14.. is the MSN whatever markers sit in between. */
		ck_assert_uint_eq(f->hdr[15], (uint8_t)(i + 1));
	}
	pcw_free(&cap);
}
END_TEST

/* Bytes carried twice (a retransmission) are rewritten in both copies,
 * and the TCP checksums stay valid. */
START_TEST(test_store_retransmitted)
{
	static struct built b;
	struct pcw_cap cap;
	char file[1024], err[256];
	struct pcw_dir *d;
	size_t n, copies = 0;
	uint64_t at = UINT64_MAX;

	rng = iwt_seed() + 5;
	use_ipv6 = _i == 1;
	resend_seg = 6;
	memset(&b, 0, sizeof(b));
	handshake(&b);
	fpdus(&b);
	path(file, sizeof(file), "pcw_resend.pcap");
	write_pcap(&b, file, 300);
	resend_seg = -1;
	ck_assert_msg(pcw_load(file, &cap, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(cap.conns[0].d[1].nfpdus, NFPDU);
	d = &cap.conns[0].d[1];
	/* A byte of the resent segment: the 7th data segment of B after the Reply. */
	for (size_t i = 0, seen = 0; i < cap.npkts; i++) {
		const struct pcw_pkt *p = &cap.pkts[i];

		if (p->conn == 0 && p->dir == 1 && p->pay_len && (uint64_t)(int32_t)(p->seq - d->base) >= d->frame_len &&
		    seen++ == 6) {
			at = (uint64_t)(int32_t)(p->seq - d->base);
			break;
		}
	}
	ck_assert_uint_lt(at, d->len);
	d->buf[at] ^= 0x5A;
	n = pcw_store(&cap, 0, 1, at, at + 1);
	ck_assert_uint_eq(n, 2);
	for (size_t i = 0; i < cap.npkts; i++) {
		const struct pcw_pkt *p = &cap.pkts[i];
		uint64_t a = (uint64_t)(int32_t)(p->seq - d->base);
		bool ip_ok, tcp_ok;

		if (p->conn != 0 || p->dir != 1 || !p->pay_len || at < a || at >= a + p->pay_len)
			continue;
		copies++;
		ck_assert_uint_eq(p->data[p->pay_off + (at - a)], d->buf[at]);
		pcw_csum_state(p, &ip_ok, &tcp_ok);
		ck_assert(tcp_ok);
		ck_assert(ip_ok || use_ipv6);
	}
	ck_assert_uint_eq(copies, 2);
	pcw_free(&cap);
}
END_TEST

/* Every mutation on a random FPDU of a (damaged) capture, each on a fresh
 * load, the result written: no crash, no out-of-bounds access. */
static int applied;

static void mutate_all(const char *file)
{
	char out[1024], err[256], msg[512];

	path(out, sizeof(out), "pcw_mut.pcap");
	for (int m = 0; m < M_COUNT; m++) {
		struct sel s;
		int op = rnd(4) ? -1 : (int)rnd(16);
		bool have_v = rnd(2);
		long long v = (long long)rnd(70000) - 10;

		memset(&s, 0, sizeof(s));
		if (pcw_load(file, &s.cap, err, sizeof(err)) == 0 &&
		    mut_find(&s, 0, rnd(8) ? "B>A" : "A>B", op, 1 + rnd(NFPDU + 2), err, sizeof(err)) == 0 &&
		    mut_apply(&s, (enum mut)m, have_v, v, msg, sizeof(msg), err, sizeof(err)) == 0) {
			ck_assert_int_eq(pcw_write(&s.cap, out, err, sizeof(err)), 0);
			applied++;
		}
		pcw_free(&s.cap);
	}
}

/* Damage: flip random bytes anywhere in the file, or cut it short. */
START_TEST(test_damaged_captures)
{
	static struct built b;
	char file[1024], bad[1024], err[256];
	FILE *f;
	long size;
	uint8_t *buf;
	int loaded = 0;

	rng = iwt_seed() + 77;
	memset(&b, 0, sizeof(b));
	handshake(&b);
	fpdus(&b);
	path(file, sizeof(file), "pcw_good.pcap");
	path(bad, sizeof(bad), "pcw_bad.pcap");
	write_pcap(&b, file, 900);
	f = fopen(file, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	buf = malloc((size_t)size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	for (int round = 0; round < 300; round++) {
		uint8_t *copy = malloc((size_t)size);
		long len = size;
		struct pcw_cap cap;

		ck_assert_ptr_nonnull(copy);
		memcpy(copy, buf, (size_t)size);
		if (round % 3 == 2) {
			len = 24 + (long)rnd((uint32_t)(size - 24));
		} else {
			int flips = 1 + (int)rnd(20);

			for (int k = 0; k < flips; k++)
				copy[24 + rnd((uint32_t)(size - 24))] ^= (uint8_t)(1 + rnd(255));
		}
		f = fopen(bad, "wb");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(copy, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		free(copy);
		if (round % 3 == 0)
			mutate_all(bad);
		if (pcw_load(bad, &cap, err, sizeof(err)) == 0) {
			loaded++;
			for (size_t ci = 0; ci < cap.nconns; ci++) {
				for (int d = 0; d < 2; d++) {
					const struct pcw_dir *dd = &cap.conns[ci].d[d];

					for (size_t i = 0; i < dd->nfpdus; i++) {
						ck_assert_uint_le(dd->fpdus[i].end, dd->contig);
						ck_assert_uint_lt(dd->fpdus[i].start, dd->fpdus[i].end);
						ck_assert_uint_lt(dd->fpdus[i].last_pkt, cap.npkts);
					}
				}
			}
		}
		pcw_free(&cap);
	}
	/* Most damage leaves a readable file: the walk ran on it, and many
	 * mutations applied. */
	ck_assert_int_gt(loaded, 100);
	ck_assert_msg(applied > 150, "only %d mutations applied", applied);
	free(buf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pcw");
	TCase *tc = tcase_create("pcw");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_walk_matches_built, 0, 3);
	tcase_add_loop_test(tc, test_store_retransmitted, 0, 2);
	tcase_add_test(tc, test_damaged_captures);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1)
		outdir = argv[1];
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
