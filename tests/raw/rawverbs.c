/* Test tool: two QPs talking through the raw transport, one on each end
 * of a veth pair (our TCP/IP on both: pk0 10.77.0.1 and pk1 10.77.0.4, an
 * address the namespace's kernel does not have), both driven by one
 * context. The MPA exchange runs over our TCP (raw_mpa), then each side
 * RDMA WRITEs --mb MiB of pattern to the other, RDMA READs --mb MiB back,
 * SENDs --mb MiB (with --sends) and a closing message; every byte is
 * checked. --size sets the bytes per WR (default 256 KiB), --v2 the
 * receive ring a context uses (V2; default V3). Under impairment
 * (--drop/--reorder ppm) --expect-ooo requires out-of-order placements.
 * --expect-peek requires that the progress loop found frames in the
 * receive rings without a syscall (on either side: one context polls
 * both), and that each side's context timer moved at
 * most once per 4 flushes (plus one per 4 ms for timer expiries).
 * --rfc7306 negotiates RFC 7306 and, before the closing SEND, each side
 * does a Write with Immediate, a fetch-and-add and a compare-and-swap on
 * the other's atomic words; values and immediates are checked.
 *   rawverbs [--mb N] [--size BYTES] [--sends] [--v2] [--drop PPM]
 *            [--reorder PPM] [--seed S] [--no-ooo] [--expect-ooo]
 *            [--expect-peek] [--no-crc] [--rfc7306] [--timeout SEC]
 * Exit 0 on success, 77 without CAP_NET_RAW, 1 on any failure. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "raw_mpa.h"

#define CHUNK (256u << 10) /* default bytes per WR */
#define PORT 7000

/* Work request ids: WRITE i is 100 + i, READ i 100000 + i, SEND i
 * 200000 + i (at most 4096 each), the RFC 7306 ones from WR_WRITE_IMM.
 * The Write with Immediate was 300, which is also WRITE 200's id: with
 * --mb 64 (256 WRITEs) that WRITE's completion was counted as the
 * Immediate's and the run never finished. */
#define WR_WRITE_IMM 300000u

struct side {
	const char *name;
	struct iw_rawdev *dev;
	uint32_t ip;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iwn_tcp_conn *c;
	struct iw_raw_mpa mpa;
	struct iw_transport *t;
	uint8_t *src, *dst, *rd, *rx, *rxd;
	struct iw_mr *src_mr, *dst_mr, *rd_mr, *rx_mr, *rxd_mr;
	uint64_t seed;
	uint32_t writes_done, reads_done, sends_done, recvs;
	uint8_t write_seen[4096]; /* by WRITE index: completions seen (each must be 1) */
	bool failed;
	/* --rfc7306: words the peer's atomics target, our atomics' results */
	uint64_t *aw, *ares;
	struct iw_mr *aw_mr, *ares_mr;
	uint32_t ext_done; /* fetch-add, compare-and-swap, immediate received */
	uint64_t imm_want; /* the immediate the peer sends us */
};

static size_t total, chunk = CHUNK;
static bool sends; /* data SENDs too, chunk bytes each, into posted receives */
static bool ext;   /* --rfc7306 */
#define AW_INIT(seed) (0x1000000000ull * (seed) + 5)
#define IMM_OF(seed) (0xA5A5A5A500000000ull | (seed))

static void die(const char *what, int rc)
{
	fprintf(stderr, "rawverbs: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static int open_side(struct side *s, const char *ifname, uint32_t ip, const struct iw_rawdev_cfg *base,
		     uint64_t impair_seed, struct iw_context *ctx)
{
	struct iw_rawdev_cfg cfg = *base;
	cfg.ifname = ifname;
	cfg.ip = ip;
	cfg.prefix = 24;
	cfg.impair_seed = impair_seed;
	const char *why = NULL;
	int rc = iw_rawdev_open(&cfg, &s->dev, &why);
	if (rc) {
		fprintf(stderr, "rawverbs: %s: %s (%s)\n", ifname, strerror(-rc), why ? why : "?");
		return rc;
	}
	s->ip = ip;
	if ((rc = iw_rawdev_attach(s->dev, ctx)))
		die("attach", rc);
	/* Room for every WR posted at once: n WRITEs, n READs, n SENDs, one
	 * closing SEND, and as many receives. */
	uint32_t n = (uint32_t)(total / chunk);
	if ((rc = iw_alloc_pd(ctx, &s->pd)) || (rc = iw_create_cq(ctx, (int)(5 * n + 16), NULL, &s->cq)))
		die("pd/cq", rc);
	struct iw_qp_init_attr qa = { .send_cq = s->cq,
				      .recv_cq = s->cq,
				      .cap = { .max_send_wr = 3 * n + 4, .max_recv_wr = n + 2 } };
	if ((rc = iw_create_qp(s->pd, &qa, &s->qp)))
		die("qp", rc);
	s->src = malloc(total);
	s->dst = calloc(1, total);
	s->rd = calloc(1, total);
	s->rx = calloc(1, 4096);
	s->rxd = calloc(1, total);
	if (!s->src || !s->dst || !s->rd || !s->rx || !s->rxd)
		die("malloc", ENOMEM);
	iwt_pattern_fill(s->seed, 0, s->src, (uint32_t)total);
	unsigned rw = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE;
	if ((rc = iw_reg_mr(s->pd, s->src, total, IW_ACCESS_REMOTE_READ, &s->src_mr)) ||
	    (rc = iw_reg_mr(s->pd, s->dst, total, rw, &s->dst_mr)) ||
	    (rc = iw_reg_mr(s->pd, s->rd, total, IW_ACCESS_LOCAL_WRITE, &s->rd_mr)) ||
	    (rc = iw_reg_mr(s->pd, s->rx, 4096, IW_ACCESS_LOCAL_WRITE, &s->rx_mr)) ||
	    (rc = iw_reg_mr(s->pd, s->rxd, total, IW_ACCESS_LOCAL_WRITE, &s->rxd_mr)))
		die("reg_mr", rc);
	if (ext) {
		s->aw = aligned_alloc(64, 64);
		s->ares = aligned_alloc(64, 64);
		if (!s->aw || !s->ares)
			die("malloc", ENOMEM);
		s->aw[0] = AW_INIT(s->seed);
		s->aw[1] = AW_INIT(s->seed) + 1;
		s->ares[0] = s->ares[1] = 0;
		if ((rc = iw_reg_mr(s->pd, s->aw, 64, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_ATOMIC, &s->aw_mr)) ||
		    (rc = iw_reg_mr(s->pd, s->ares, 64, IW_ACCESS_LOCAL_WRITE, &s->ares_mr)))
			die("reg_mr", rc);
	}
	/* Data receives first: SENDs land in posting order, "done" last. */
	for (uint32_t i = 0; sends && i < n; i++) {
		struct iw_sge dsge = { (uint64_t)(uintptr_t)(s->rxd + (size_t)i * chunk), (uint32_t)chunk,
				       iw_mr_stag(s->rxd_mr) };
		struct iw_recv_wr dwr = { .wr_id = 2000 + i, .sg_list = &dsge, .num_sge = 1 };
		if ((rc = iw_post_recv(s->qp, &dwr, NULL)))
			die("post_recv", rc);
	}
	struct iw_sge sge = { (uint64_t)(uintptr_t)s->rx, 4096, iw_mr_stag(s->rx_mr) };
	struct iw_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	if (ext) { /* the peer's Immediate Data consumes this one */
		struct iw_recv_wr iwr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 };
		if ((rc = iw_post_recv(s->qp, &iwr, NULL)))
			die("post_recv", rc);
	}
	if ((rc = iw_post_recv(s->qp, &rwr, NULL)))
		die("post_recv", rc);
	return 0;
}

static void post(struct side *s, uint64_t id, enum iw_wr_opcode op, void *local, struct iw_mr *lmr, size_t len,
		 void *remote, struct iw_mr *rmr)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)local, (uint32_t)len, iw_mr_stag(lmr) };
	struct iw_send_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.remote_addr = (uint64_t)(uintptr_t)remote,
		.rkey = rmr ? iw_mr_stag(rmr) : 0,
	};
	int rc = iw_post_send(s->qp, &wr, NULL);
	if (rc)
		die("post_send", rc);
}

/* Everything goes out at once: WRITEs to the peer's dst, READs of the
 * peer's src into rd, then an inline SEND. */
static void post_all(struct side *s, struct side *peer)
{
	uint32_t n = (uint32_t)(total / chunk);
	for (uint32_t i = 0; i < n; i++)
		post(s, 100 + i, IW_WR_RDMA_WRITE, s->src + (size_t)i * chunk, s->src_mr, chunk,
		     peer->dst + (size_t)i * chunk, peer->dst_mr);
	for (uint32_t i = 0; i < n; i++)
		post(s, 100000 + i, IW_WR_RDMA_READ, s->rd + (size_t)i * chunk, s->rd_mr, chunk,
		     peer->src + (size_t)i * chunk, peer->src_mr);
	for (uint32_t i = 0; sends && i < n; i++)
		post(s, 200000 + i, IW_WR_SEND, s->src + (size_t)i * chunk, s->src_mr, chunk, NULL, NULL);
	if (ext) {
		if (!iw_qp_rfc7306(s->qp))
			die("RFC 7306 not negotiated", -EPROTO);
		peer->imm_want = IMM_OF(s->seed);
		struct iw_sge rs = { (uint64_t)(uintptr_t)s->ares, 8, iw_mr_stag(s->ares_mr) };
		struct iw_send_wr w[3] = {
			{ .wr_id = WR_WRITE_IMM, .sg_list = &rs, .num_sge = 0, .opcode = IW_WR_RDMA_WRITE_WITH_IMM,
			  .send_flags = IW_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)peer->dst,
			  .rkey = iw_mr_stag(peer->dst_mr), .imm_data = IMM_OF(s->seed) },
			{ .wr_id = WR_WRITE_IMM + 1, .sg_list = &rs, .num_sge = 1, .opcode = IW_WR_ATOMIC_FETCH_AND_ADD,
			  .send_flags = IW_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)&peer->aw[0],
			  .rkey = iw_mr_stag(peer->aw_mr), .compare_add = 3 },
		};
		struct iw_sge rs2 = { (uint64_t)(uintptr_t)&s->ares[1], 8, iw_mr_stag(s->ares_mr) };
		w[2] = (struct iw_send_wr){ .wr_id = WR_WRITE_IMM + 2, .sg_list = &rs2, .num_sge = 1,
					    .opcode = IW_WR_ATOMIC_CMP_AND_SWP, .send_flags = IW_SEND_SIGNALED,
					    .remote_addr = (uint64_t)(uintptr_t)&peer->aw[1], .rkey = iw_mr_stag(peer->aw_mr),
					    .compare_add = AW_INIT(peer->seed) + 1, .swap = ~AW_INIT(peer->seed) };
		for (int i = 0; i < 3; i++) {
			int rc = iw_post_send(s->qp, &w[i], NULL);
			if (rc)
				die("post_send (RFC 7306)", rc);
		}
	}
	static char msg[4] = { 'd', 'o', 'n', 'e' };
	struct iw_sge sge = { (uint64_t)(uintptr_t)msg, 4, 0 };
	struct iw_send_wr wr = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND,
		.send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE,
	};
	int rc = iw_post_send(s->qp, &wr, NULL);
	if (rc)
		die("post_send", rc);
}

static void poll_side(struct side *s)
{
	struct iw_wc wc[32];
	int n = iw_poll_cq(s->cq, 32, wc);
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IW_WC_SUCCESS) {
			fprintf(stderr, "rawverbs: %s: wr %" PRIu64 " status %s\n", s->name, wc[i].wr_id,
				iw_wc_status_str(wc[i].status));
			s->failed = true;
			continue;
		}
		switch (wc[i].opcode) {
		case IW_WC_RDMA_WRITE:
			if (wc[i].wr_id == WR_WRITE_IMM) /* our Write with Immediate */
				s->ext_done++;
			else {
				s->writes_done++;
				if (wc[i].wr_id >= 100 && wc[i].wr_id < 100 + 4096 && s->write_seen[wc[i].wr_id - 100]++) {
					fprintf(stderr, "rawverbs: %s: WRITE wr %" PRIu64 " completed twice\n", s->name,
						wc[i].wr_id);
					s->failed = true;
				}
			}
			break;
		case IW_WC_RDMA_READ:
			s->reads_done++;
			break;
		case IW_WC_SEND:
			s->sends_done++;
			break;
		case IW_WC_FETCH_ADD:
		case IW_WC_COMP_SWAP:
			s->ext_done++;
			break;
		case IW_WC_RECV_RDMA_WITH_IMM: /* the peer's seed is the other side's */
			s->ext_done++;
			if (wc[i].imm_data != s->imm_want || wc[i].byte_len != 0 || wc[i].wr_id != 3) {
				fprintf(stderr, "rawverbs: %s: immediate 0x%" PRIx64 " len %u wr %" PRIu64 "\n", s->name,
					wc[i].imm_data, wc[i].byte_len, wc[i].wr_id);
				s->failed = true;
			}
			break;
		case IW_WC_RECV:
			s->recvs++;
			if (wc[i].wr_id >= 2000) {
				if (wc[i].byte_len != chunk) {
					fprintf(stderr, "rawverbs: %s: receive %" PRIu64 " got %u bytes\n", s->name,
						wc[i].wr_id, wc[i].byte_len);
					s->failed = true;
				}
			} else if (wc[i].byte_len != 4 || memcmp(s->rx, "done", 4) != 0) {
				fprintf(stderr, "rawverbs: %s: wrong message\n", s->name);
				s->failed = true;
			}
			break;
		default:
			fprintf(stderr, "rawverbs: %s: unexpected completion opcode %d\n", s->name, (int)wc[i].opcode);
			s->failed = true;
			break;
		}
	}
}

static bool side_done(const struct side *s)
{
	uint32_t n = (uint32_t)(total / chunk), m = sends ? n + 1 : 1;
	return s->writes_done == n && s->reads_done == n && s->sends_done == m && s->recvs == m &&
	       s->ext_done == (ext ? 4u : 0u); /* Write with Immediate sent and received, two atomics */
}

static uint64_t arg_u64(int argc, char **argv, const char *name, uint64_t def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return strtoull(argv[i + 1], NULL, 0);
	return def;
}

static bool arg_flag(int argc, char **argv, const char *name)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	total = (size_t)arg_u64(argc, argv, "--mb", 8) << 20;
	uint64_t seed = arg_u64(argc, argv, "--seed", 1), timeout_s = arg_u64(argc, argv, "--timeout", 60);
	bool no_ooo = arg_flag(argc, argv, "--no-ooo"), expect_ooo = arg_flag(argc, argv, "--expect-ooo");
	bool expect_peek = arg_flag(argc, argv, "--expect-peek");
	chunk = (size_t)arg_u64(argc, argv, "--size", CHUNK);
	sends = arg_flag(argc, argv, "--sends");
	ext = arg_flag(argc, argv, "--rfc7306");
	struct iw_rawdev_cfg base = {
		.rx_ring = arg_flag(argc, argv, "--v2") ? IW_PKTIO_RX_V2 : IW_PKTIO_RX_V3,
		.drop_ppm = (uint32_t)arg_u64(argc, argv, "--drop", 0),
		.reorder_ppm = (uint32_t)arg_u64(argc, argv, "--reorder", 0),
	};
	if (total > (1024u << 20))
		die("--mb", EINVAL);
	if (chunk == 0 || chunk > total || total % chunk || total / chunk > 4096)
		die("--size (must divide --mb MiB into at most 4096 WRs)", EINVAL);
	struct iw_context *ctx;
	int rc = iw_context_create(NULL, &ctx);
	if (rc)
		die("context", rc);
	static struct side a = { .name = "a", .seed = 101 }, b = { .name = "b", .seed = 202 };
	if ((rc = open_side(&a, "pk0", 0x0a4d0001u, &base, seed * 2 + 1, ctx)))
		return rc == -EPERM ? 77 : 1;
	if ((rc = open_side(&b, "pk1", 0x0a4d0004u, &base, seed * 2 + 2, ctx)))
		return rc == -EPERM ? 77 : 1;

	struct iw_mpa_settings ms;
	iw_mpa_settings_default(&ms);
	if (arg_flag(argc, argv, "--no-crc"))
		ms.crc = IW_MPA_CRC_OFF;
	ms.rfc7306 = ext;
	if ((rc = iwn_net_listen(&b.dev->net, PORT, 1)))
		die("listen", rc);
	a.c = iwn_net_connect(&a.dev->net, b.ip, PORT, 0, iw_rawdev_now_us(), &rc);
	if (!a.c)
		die("connect", rc);
	iw_rawdev_flush(a.dev);

	uint64_t start = iw_rawdev_now_us(), end = start + timeout_s * 1000000u;
	bool a_started = false, b_started = false, posted = false;
	enum { HANDSHAKE, RUNNING } phase = HANDSHAKE;
	while (iw_rawdev_now_us() < end) {
		iw_progress(ctx, 10);
		uint64_t now = iw_rawdev_now_us();
		if (phase == HANDSHAKE) {
			iw_ctx_lock(ctx);
			if (!b.c && (b.c = iwn_net_accept(&b.dev->net, PORT)) != NULL) {
				iw_raw_mpa_start(&b.mpa, b.c, false, &ms, NULL, 0, now);
				b_started = true;
			}
			if (!a_started && a.c->state == IWN_TCP_ESTABLISHED) {
				iw_raw_mpa_start(&a.mpa, a.c, true, &ms, NULL, 0, now);
				a_started = true;
			}
			enum iw_raw_mpa_state sa = a_started ? iw_raw_mpa_step(&a.mpa, now) : IW_RAW_MPA_RUNNING;
			enum iw_raw_mpa_state sb = b_started ? iw_raw_mpa_step(&b.mpa, now) : IW_RAW_MPA_RUNNING;
			iw_rawdev_flush(a.dev);
			iw_rawdev_flush(b.dev);
			if (sa == IW_RAW_MPA_FAILED || sb == IW_RAW_MPA_FAILED) {
				fprintf(stderr, "rawverbs: MPA failed: a %d b %d (%s / %s)\n", a.mpa.err, b.mpa.err,
					iw_mpa_reject_reason_str(a.mpa.reason), iw_mpa_reject_reason_str(b.mpa.reason));
				return 1;
			}
			if (sa == IW_RAW_MPA_DONE && sb == IW_RAW_MPA_DONE) {
				if ((rc = iw_raw_qp_establish(a.qp, a.dev, a.c, true, &a.mpa.outcome, 0, no_ooo, &a.t)) ||
				    (rc = iw_raw_qp_establish(b.qp, b.dev, b.c, false, &b.mpa.outcome, 0, no_ooo, &b.t)))
					die("establish", rc);
				printf("rawverbs: connected: crc %d, mulpdu %u / %u, eff mss %u\n", a.mpa.outcome.crc,
				       a.qp->conn.cfg.mulpdu, b.qp->conn.cfg.mulpdu, a.c->eff_mss);
				phase = RUNNING;
			}
			iw_ctx_unlock(ctx);
			continue;
		}
		if (!posted) {
			post_all(&a, &b);
			post_all(&b, &a);
			posted = true;
		}
		poll_side(&a);
		poll_side(&b);
		if (a.failed || b.failed || (side_done(&a) && side_done(&b)))
			break;
	}
	double secs = (double)(iw_rawdev_now_us() - start) / 1e6;
	for (int i = 0; i < 2; i++) {
		const struct side *s = i ? &b : &a;
		if (!side_done(s)) {
			fprintf(stderr, "rawverbs: %s: not done: writes %u reads %u sends %u recvs %u rfc7306 %u\n", s->name,
				s->writes_done, s->reads_done, s->sends_done, s->recvs, s->ext_done);
			for (uint32_t w = 0; w < (uint32_t)(total / chunk); w++)
				if (!s->write_seen[w])
					fprintf(stderr, "rawverbs: %s: no completion for WRITE wr %u\n", s->name, 100 + w);
		}
	}
	bool ok = phase == RUNNING && side_done(&a) && side_done(&b) && !a.failed && !b.failed;
	struct side *sides[2] = { &a, &b };
	uint64_t placed = 0;
	for (int i = 0; i < 2 && phase == RUNNING; i++) {
		struct side *s = sides[i], *peer = sides[1 - i];
		int64_t bad_w = iwt_pattern_check(peer->seed, 0, s->dst, (uint32_t)total);
		int64_t bad_r = iwt_pattern_check(peer->seed, 0, s->rd, (uint32_t)total);
		int64_t bad_s = sends ? iwt_pattern_check(peer->seed, 0, s->rxd, (uint32_t)total) : -1;
		if (ext && (s->ares[0] != AW_INIT(peer->seed) || s->ares[1] != AW_INIT(peer->seed) + 1 ||
			    peer->aw[0] != AW_INIT(peer->seed) + 3 || peer->aw[1] != ~AW_INIT(peer->seed))) {
			fprintf(stderr, "rawverbs: %s: atomics: results 0x%" PRIx64 " 0x%" PRIx64 ", peer words 0x%" PRIx64
				" 0x%" PRIx64 "\n", s->name, s->ares[0], s->ares[1], peer->aw[0], peer->aw[1]);
			ok = false;
		}
		if (bad_w >= 0 || bad_r >= 0 || bad_s >= 0) {
			fprintf(stderr,
				"rawverbs: %s: data wrong at write %" PRId64 " / read %" PRId64 " / send %" PRId64 "\n",
				s->name, bad_w, bad_r, bad_s);
			ok = false;
		}
		struct iw_raw_stats rs;
		struct iw_qp_stats qs;
		iw_raw_transport_get_stats(s->t, &rs);
		iw_qp_get_stats(s->qp, &qs);
		placed += rs.ooo_fpdus_placed;
		const struct iwn_tcp_stats *ts = s->c ? &s->c->stats : NULL;
		printf("rawverbs: %s: fpdus tx %" PRIu64 " deferred %" PRIu64 "; ooo calls %" PRIu64 " bytes %" PRIu64
		       " placed %" PRIu64 " fpdus %" PRIu64 " bytes, bad-crc %" PRIu64 " partial %" PRIu64
		       " skipped %" PRIu64 "; qp bytes placed %" PRIu64,
		       s->name, rs.fpdus_tx, rs.records_deferred, rs.ooo_calls, rs.ooo_bytes, rs.ooo_fpdus_placed,
		       rs.ooo_bytes_placed, rs.ooo_bad_crc, rs.ooo_partial, rs.ooo_skipped, qs.bytes_placed);
		if (ts)
			printf("; tcp rexmit %" PRIu64 " ooo segs %" PRIu64, ts->retransmitted_segs, ts->ooo_segs);
		printf("\n");
	}
	/* Both devices are polled by one context: with batched output and
	 * super-segments one side's frames may always arrive while the
	 * context sleeps (a: 0, b: 33 in one CI run), so the ring peek is
	 * judged for the pair; the timer rule stays per side. */
	uint64_t pair_spin_hits = sides[0]->dev->st.spin_hits + sides[1]->dev->st.spin_hits;
	if (expect_peek && pair_spin_hits == 0) {
		fprintf(stderr, "rawverbs: rings not busy-polled (no frame found without a syscall)\n");
		ok = false;
	}
	for (int i = 0; i < 2; i++) {
		const struct iw_rawdev_stats *ds = &sides[i]->dev->st;
		printf("rawverbs: %s: device polls %" PRIu64 ", from the ring without a syscall %" PRIu64
		       ", flushes %" PRIu64 ", timer rearms %" PRIu64 "\n",
		       sides[i]->name, ds->polls, ds->spin_hits, ds->flushes, ds->timer_rearms);
		/* The progress loop finds frames in the ring's memory, and the
		 * context timer is not moved on every flush (moving it on every
		 * flush was the old rule). Moves that come with time (the timer
		 * fired, a delayed ACK came due: a few per 40 ms) get an
		 * allowance, so a slow run does not fail. */
		uint64_t allowance = (uint64_t)(secs * 1000.0) / 4;
		if (expect_peek && ds->timer_rearms * 4 > ds->flushes + allowance) {
			fprintf(stderr, "rawverbs: %s: timer moved too often\n",
				sides[i]->name);
			ok = false;
		}
	}
	if (expect_ooo && placed == 0) {
		fprintf(stderr, "rawverbs: no out-of-order placement under impairment\n");
		ok = false;
	}
	printf("rawverbs: %s: %zu MiB written + read%s each way in %zu-byte WRs, MTU %u, in %.3f s\n",
	       ok ? "ok" : "FAILED", total >> 20, sends ? " + sent" : "", chunk, iw_pktio_mtu(a.dev->pio), secs);
	/* Teardown: QPs first (their transports release the connections). */
	for (int i = 0; i < 2; i++) {
		struct side *s = sides[i];
		iw_destroy_qp(s->qp);
		iw_dereg_mr(s->src_mr);
		iw_dereg_mr(s->dst_mr);
		iw_dereg_mr(s->rd_mr);
		iw_dereg_mr(s->rx_mr);
		iw_dereg_mr(s->rxd_mr);
		if (s->aw_mr)
			iw_dereg_mr(s->aw_mr);
		if (s->ares_mr)
			iw_dereg_mr(s->ares_mr);
		iw_destroy_cq(s->cq);
		iw_dealloc_pd(s->pd);
	}
	for (int i = 0; i < 2; i++) {
		iw_rawdev_close(sides[i]->dev);
		free(sides[i]->src);
		free(sides[i]->dst);
		free(sides[i]->rd);
		free(sides[i]->rx);
		free(sides[i]->rxd);
		free(sides[i]->aw);
		free(sides[i]->ares);
	}
	iw_context_destroy(ctx);
	return ok ? 0 : 1;
}
