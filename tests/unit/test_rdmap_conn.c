/* Back-to-back suite: two RDMAP engines wired in memory exchange every
 * opcode at the sizes around MULPDU and 1 MiB, CRC on/off, markers on/off,
 * in random chunkings; every error class of the RFC tables produces the
 * right Terminate and stops the stream. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/iw_bytes.h"
#include "ddp/ddp_wire.h"
#include "iwt_b2b.h"
#include "iwt_common.h"
#include "mpa/mpa_wire.h"
#include "rdmap/rdmap_wire.h"
#include "iwt_check.h"

#define MULPDU 1442 /* what siw uses at MSS 1448 */
#define GUARD 64
#define GUARD_BYTE 0xA5

static struct iw_rdmap_conn_cfg make_cfg(bool crc, bool markers)
{
	struct iw_rdmap_conn_cfg cfg = {
		.crc = crc,
		.markers_tx = markers,
		.markers_rx = markers,
		.mulpdu = MULPDU,
		.ird = 8,
		.ord = 8,
	};
	return cfg;
}

/* A buffer with guard zones on both sides. */
struct gbuf {
	uint8_t *raw;
	uint8_t *p;
	size_t len;
};

static struct gbuf gbuf_new(size_t len)
{
	struct gbuf g = { .len = len };
	g.raw = malloc(len + 2 * GUARD);
	ck_assert_ptr_nonnull(g.raw);
	memset(g.raw, GUARD_BYTE, len + 2 * GUARD);
	g.p = g.raw + GUARD;
	return g;
}

static void gbuf_check_guards(const struct gbuf *g)
{
	for (size_t i = 0; i < GUARD; i++) {
		ck_assert_uint_eq(g->raw[i], GUARD_BYTE);
		ck_assert_uint_eq(g->raw[GUARD + g->len + i], GUARD_BYTE);
	}
}

static void gbuf_free(struct gbuf *g)
{
	free(g->raw);
	g->raw = g->p = NULL;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static struct iw_rdmap_wr wr_one(enum iw_rdmap_wr_opcode op, uint64_t cookie, void *buf, size_t len)
{
	struct iw_rdmap_wr wr = { .cookie = cookie, .opcode = op, .nsge = len ? 1 : 0 };
	wr.sgl[0].iov_base = buf;
	wr.sgl[0].iov_len = len;
	return wr;
}

static void expect_sq_done(const struct iwt_ep *ep, unsigned n, uint64_t cookie, uint32_t len)
{
	const struct iwt_event *e = iwt_ep_find(ep, IW_RDMAP_EV_SQ_DONE, n);
	ck_assert_msg(e != NULL, "%s: no SQ_DONE #%u", ep->name, n);
	ck_assert_uint_eq(e->ev.cookie, cookie);
	ck_assert_uint_eq(e->ev.byte_len, len);
}

static void no_errors(const struct iwt_b2b *t)
{
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_ERROR), 0);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_ERROR), 0);
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_TERM_RECV), 0);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_TERM_RECV), 0);
}

/* ------------------------------------------------------------------ */
/* Every opcode at every size                                          */

static const size_t sizes_fixed[] = { 0, 1, 3, 4, MULPDU - 1, MULPDU, MULPDU + 1, 1u << 20 };
static const size_t write_cap = MULPDU - IW_DDP_TAGGED_HDR_LEN;  /* payload per WRITE FPDU */
static const size_t send_cap = MULPDU - IW_DDP_UNTAGGED_HDR_LEN; /* payload per SEND FPDU */

static void do_write(struct iwt_b2b *t, size_t len, uint64_t *seed)
{
	struct gbuf src = gbuf_new(len), dst = gbuf_new(len + 16);
	iwt_fill_random(seed, src.p, len);
	memset(dst.p, 0, len + 16);
	uint32_t stag = iwt_mem_reg(&t->b.mem, dst.p, len + 16, IW_RDMAP_ACC_REMOTE_WRITE, 1, 0x5a);
	struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_WRITE, 77, src.p, len);
	wr.remote_stag = stag;
	wr.remote_to = va(dst.p) + 7; /* unaligned placement */
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wr), 0);
	ck_assert(iwt_b2b_pump(t, 10000));
	no_errors(t);
	expect_sq_done(&t->a, iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE) - 1, 77, (uint32_t)len);
	ck_assert(memcmp(dst.p + 7, src.p, len) == 0);
	for (size_t i = 0; i < 7; i++)
		ck_assert_uint_eq(dst.p[i], 0);
	for (size_t i = len + 7; i < len + 16; i++)
		ck_assert_uint_eq(dst.p[i], 0);
	gbuf_check_guards(&dst);
	iwt_mem_find(&t->b.mem, stag)->used = false;
	gbuf_free(&src);
	gbuf_free(&dst);
}

static void do_read(struct iwt_b2b *t, size_t len, uint64_t *seed)
{
	struct gbuf src = gbuf_new(len), sink = gbuf_new(len);
	iwt_fill_random(seed, src.p, len);
	memset(sink.p, 0, len);
	uint32_t src_stag = iwt_mem_reg(&t->b.mem, src.p, len, IW_RDMAP_ACC_REMOTE_READ, 1, 0x11);
	uint32_t sink_stag = iwt_mem_reg(&t->a.mem, sink.p, len, IW_RDMAP_ACC_LOCAL_WRITE, 1, 0x22);
	struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_READ, 88, sink.p, len);
	wr.remote_stag = src_stag;
	wr.remote_to = va(src.p);
	wr.local_stag = sink_stag;
	wr.local_to = va(sink.p);
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wr), 0);
	ck_assert(iwt_b2b_pump(t, 10000));
	no_errors(t);
	expect_sq_done(&t->a, iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE) - 1, 88, (uint32_t)len);
	ck_assert(memcmp(sink.p, src.p, len) == 0);
	gbuf_check_guards(&sink);
	ck_assert_uint_eq(t->b.conn.ird_head, t->b.conn.ird_tail); /* IRD slot released */
	iwt_mem_find(&t->b.mem, src_stag)->used = false;
	iwt_mem_find(&t->a.mem, sink_stag)->used = false;
	gbuf_free(&src);
	gbuf_free(&sink);
}

static void do_send(struct iwt_b2b *t, enum iw_rdmap_wr_opcode op, size_t len, uint64_t *seed)
{
	static const uint8_t wire_op[] = {
		[IW_RDMAP_WR_SEND] = IW_OP_SEND, [IW_RDMAP_WR_SEND_SE] = IW_OP_SEND_SE,
		[IW_RDMAP_WR_SEND_INV] = IW_OP_SEND_INV, [IW_RDMAP_WR_SEND_SE_INV] = IW_OP_SEND_SE_INV,
	};
	struct gbuf src = gbuf_new(len), dst = gbuf_new(len + 100);
	iwt_fill_random(seed, src.p, len);
	memset(dst.p, 0, len + 100);

	/* The receive buffer is split into up to three SGEs. */
	struct iovec sgl[3];
	size_t total = len + 100, a = (size_t)iwt_rand_range(seed, 0, total), b2 = (size_t)iwt_rand_range(seed, a, total);
	sgl[0] = (struct iovec){ dst.p, a };
	sgl[1] = (struct iovec){ dst.p + a, b2 - a };
	sgl[2] = (struct iovec){ dst.p + b2, total - b2 };
	iwt_mem_post_recv(&t->b.mem, 4242, sgl, 3);

	uint8_t victim[8];
	uint32_t inv = iwt_mem_reg(&t->b.mem, victim, sizeof(victim), IW_RDMAP_ACC_REMOTE_WRITE, 1, 0x33);
	struct iw_rdmap_wr wr = wr_one(op, 99, src.p, len);
	wr.inv_stag = inv;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wr), 0);
	ck_assert(iwt_b2b_pump(t, 10000));
	no_errors(t);
	expect_sq_done(&t->a, iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE) - 1, 99, (uint32_t)len);
	const struct iwt_event *e = iwt_ep_find(&t->b, IW_RDMAP_EV_RECV_DONE,
						iwt_ep_count(&t->b, IW_RDMAP_EV_RECV_DONE) - 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->recv_id, 4242);
	ck_assert_uint_eq(e->ev.byte_len, len);
	ck_assert_uint_eq(e->ev.opcode, wire_op[op]);
	bool want_se = op == IW_RDMAP_WR_SEND_SE || op == IW_RDMAP_WR_SEND_SE_INV;
	bool want_inv = op == IW_RDMAP_WR_SEND_INV || op == IW_RDMAP_WR_SEND_SE_INV;
	ck_assert_int_eq(e->ev.solicited, want_se);
	ck_assert_int_eq(e->ev.invalidated, want_inv);
	ck_assert_int_eq(iwt_mem_find(&t->b.mem, inv)->valid, !want_inv);
	if (want_inv)
		ck_assert_uint_eq(e->ev.inv_stag, inv);
	ck_assert(memcmp(dst.p, src.p, len) == 0);
	for (size_t i = len; i < len + 100; i++)
		ck_assert_uint_eq(dst.p[i], 0);
	gbuf_check_guards(&dst);
	iwt_mem_find(&t->b.mem, inv)->used = false;
	gbuf_free(&src);
	gbuf_free(&dst);
}

static void run_all_ops(bool crc, bool markers, enum iwt_rx_mode mode)
{
	uint64_t seed = iwt_seed() ^ (crc * 3 + markers * 5 + mode * 7);
	struct iw_rdmap_conn_cfg cfg = make_cfg(crc, markers);
	struct iwt_b2b t;
	iwt_b2b_init(&t, &cfg, seed);
	t.rx_mode = mode;

	size_t sizes[sizeof(sizes_fixed) / sizeof(sizes_fixed[0]) + 6];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(sizes_fixed) / sizeof(sizes_fixed[0]); i++)
		sizes[n++] = sizes_fixed[i];
	/* The boundaries that matter per opcode: payload per FPDU +-1. */
	sizes[n++] = write_cap - 1;
	sizes[n++] = write_cap;
	sizes[n++] = write_cap + 1;
	sizes[n++] = send_cap - 1;
	sizes[n++] = send_cap;
	sizes[n++] = send_cap + 1;

	for (size_t i = 0; i < n; i++) {
		t.max_chunk = (size_t)iwt_rand_range(&seed, 1, i % 3 == 0 ? 64 : 9000);
		do_write(&t, sizes[i], &seed);
		do_read(&t, sizes[i], &seed);
		for (enum iw_rdmap_wr_opcode op = IW_RDMAP_WR_SEND; op <= IW_RDMAP_WR_SEND_SE_INV; op++)
			do_send(&t, op, sizes[i], &seed);
	}
	ck_assert_int_eq(t.a.conn.state, IW_RDMAP_ST_RTS);
	ck_assert_int_eq(t.b.conn.state, IW_RDMAP_ST_RTS);
	iwt_b2b_fini(&t);
}

START_TEST(all_ops_plain)
{
	run_all_ops(false, false, IWT_RX_MIXED);
}
END_TEST

START_TEST(all_ops_crc)
{
	run_all_ops(true, false, IWT_RX_MIXED);
}
END_TEST

START_TEST(all_ops_markers)
{
	run_all_ops(false, true, IWT_RX_FEED);
}
END_TEST

START_TEST(all_ops_crc_markers)
{
	run_all_ops(true, true, IWT_RX_ZEROCOPY);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Queues, ordering, limits                                            */

START_TEST(mixed_traffic_both_ways)
{
	uint64_t seed = iwt_seed() + 11;
	struct iw_rdmap_conn_cfg cfg = make_cfg(true, _i & 1);
	struct iwt_b2b t;
	iwt_b2b_init(&t, &cfg, seed);
	t.max_chunk = 777;

	enum { N = 60, LEN = 5000 };
	static uint8_t a_src[N][LEN], b_mem[N][LEN], a_sink[N][LEN], b_recv[N][LEN];
	uint32_t b_stag = iwt_mem_reg(&t.b.mem, b_mem, sizeof(b_mem),
				      IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ, 1, 1);
	uint32_t a_sink_stag = iwt_mem_reg(&t.a.mem, a_sink, sizeof(a_sink), IW_RDMAP_ACC_LOCAL_WRITE, 1, 2);
	iwt_fill_random(&seed, a_src, sizeof(a_src));
	iwt_fill_random(&seed, b_mem, sizeof(b_mem));
	memset(a_sink, 0, sizeof(a_sink));

	/* A: alternating WRITE i / READ i (of a region A does not write) / SEND i.
	 * B: SENDs back at the same time. */
	for (int i = 0; i < N; i++) {
		struct iovec r = { b_recv[i], LEN };
		iwt_mem_post_recv(&t.b.mem, 1000 + i, &r, 1);
	}
	static uint8_t a_recv[N][64], b_src[N][64];
	for (int i = 0; i < N; i++) {
		struct iovec r = { a_recv[i], 64 };
		iwt_mem_post_recv(&t.a.mem, 2000 + i, &r, 1);
		memset(b_src[i], i, 64);
	}
	int posted = 0, b_posted = 0;
	while (posted < N || b_posted < N) {
		while (posted < N) {
			int i = posted;
			struct iw_rdmap_wr wr;
			size_t len = (size_t)iwt_rand_range(&seed, 0, LEN);
			switch (i % 3) {
			case 0:
				wr = wr_one(IW_RDMAP_WR_WRITE, (uint64_t)i, a_src[i], len);
				wr.remote_stag = b_stag;
				wr.remote_to = va(b_mem[i]);
				break;
			case 1:
				wr = wr_one(IW_RDMAP_WR_READ, (uint64_t)i, a_sink[i], len);
				wr.remote_stag = b_stag;
				wr.remote_to = va(b_mem[i]);
				wr.local_stag = a_sink_stag;
				wr.local_to = va(a_sink[i]);
				break;
			default:
				wr = wr_one(IW_RDMAP_WR_SEND, (uint64_t)i, a_src[i], len);
				break;
			}
			int rc = iw_rdmap_post(&t.a.conn, &wr);
			if (rc == -ENOSPC)
				break;
			ck_assert_int_eq(rc, 0);
			posted++;
		}
		while (b_posted < N) {
			struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_SEND_SE, (uint64_t)b_posted, b_src[b_posted], 64);
			if (iw_rdmap_post(&t.b.conn, &wr) == -ENOSPC)
				break;
			b_posted++;
		}
		iwt_ep_pull(&t, &t.a);
		iwt_ep_pull(&t, &t.b);
		ck_assert_uint_le(t.a.conn.reads_out, cfg.ord);
		iwt_ep_deliver(&t, &t.a, &t.b, (size_t)iwt_rand_range(&seed, 1, 20000));
		iwt_ep_deliver(&t, &t.b, &t.a, (size_t)iwt_rand_range(&seed, 1, 20000));
	}
	ck_assert(iwt_b2b_pump(&t, 100000));
	no_errors(&t);

	/* Completions arrive in posting order with the right lengths. */
	ck_assert_uint_eq(iwt_ep_count(&t.a, IW_RDMAP_EV_SQ_DONE), N);
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(iwt_ep_find(&t.a, IW_RDMAP_EV_SQ_DONE, (unsigned)i)->ev.cookie, (uint64_t)i);
	ck_assert_uint_eq(iwt_ep_count(&t.b, IW_RDMAP_EV_RECV_DONE), N / 3);
	ck_assert_uint_eq(iwt_ep_count(&t.a, IW_RDMAP_EV_RECV_DONE), N);
	for (int i = 0; i < N; i++) {
		const struct iwt_event *e = iwt_ep_find(&t.a, IW_RDMAP_EV_RECV_DONE, (unsigned)i);
		ck_assert_uint_eq(e->recv_id, 2000u + (unsigned)i);
		ck_assert(e->ev.solicited);
		ck_assert(memcmp(a_recv[i], b_src[i], 64) == 0);
	}
	for (int i = 0; i < N; i++) {
		const struct iwt_event *e = iwt_ep_find(&t.a, IW_RDMAP_EV_SQ_DONE, (unsigned)i);
		size_t len = e->ev.byte_len;
		if (i % 3 == 0)
			ck_assert(memcmp(b_mem[i], a_src[i], len) == 0);
		else if (i % 3 == 1)
			ck_assert(memcmp(a_sink[i], b_mem[i], len) == 0);
		else {
			const struct iwt_event *r = iwt_ep_find(&t.b, IW_RDMAP_EV_RECV_DONE, (unsigned)(i / 3));
			ck_assert_uint_eq(r->ev.byte_len, len);
			ck_assert(memcmp(b_recv[i / 3], a_src[i], len) == 0);
		}
	}
	iwt_b2b_fini(&t);
}
END_TEST

/* Count the FPDUs on a wire with no markers (walks ULPDU_LENGTH fields). */
static unsigned count_fpdus(const uint8_t *w, size_t len, unsigned *reads)
{
	unsigned n = 0;
	size_t off = 0;
	while (off + 2 <= len) {
		unsigned ulpdu = iw_get_be16(w + off);
		if (reads && iw_rdmap_opcode_of(w[off + 3]) == IW_OP_READ_REQ)
			(*reads)++;
		off += iw_mpa_fpdu_len(ulpdu);
		n++;
	}
	return n;
}

START_TEST(ord_limit_and_fence)
{
	struct iw_rdmap_conn_cfg cfg = make_cfg(true, false);
	cfg.ord = 2;
	struct iwt_b2b t;
	iwt_b2b_init(&t, &cfg, iwt_seed());
	static uint8_t src[4096], sink[6][512];
	uint32_t s = iwt_mem_reg(&t.b.mem, src, sizeof(src), IW_RDMAP_ACC_REMOTE_READ, 1, 9);
	uint32_t k = iwt_mem_reg(&t.a.mem, sink, sizeof(sink), IW_RDMAP_ACC_LOCAL_WRITE, 1, 8);
	for (int i = 0; i < 5; i++) {
		struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_READ, (uint64_t)i, sink[i], 512);
		wr.remote_stag = s;
		wr.remote_to = va(src + 512 * i);
		wr.local_stag = k;
		wr.local_to = va(sink[i]);
		ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), 0);
	}
	struct iw_rdmap_wr fenced = wr_one(IW_RDMAP_WR_SEND, 5, sink[5], 8);
	fenced.fence = true;
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &fenced), 0);
	struct iovec rv = { src, 8 };
	iwt_mem_post_recv(&t.b.mem, 1, &rv, 1);

	/* Only ORD (2) requests leave before responses come back. */
	iwt_ep_pull(&t, &t.a);
	unsigned reads = 0;
	ck_assert_uint_eq(count_fpdus(t.a.wire, t.a.wire_len, &reads), 2);
	ck_assert_uint_eq(reads, 2);
	ck_assert(!iw_rdmap_tx_pending(&t.a.conn));
	ck_assert(iwt_b2b_pump(&t, 1000));
	no_errors(&t);
	/* The fenced SEND completes last, after every READ. */
	for (unsigned i = 0; i < 6; i++)
		expect_sq_done(&t.a, i, i, i < 5 ? 512 : 8);
	ck_assert(memcmp(sink, src, 5 * 512) == 0);
	iwt_b2b_fini(&t);
}
END_TEST

START_TEST(fence_waits_for_reads)
{
	struct iw_rdmap_conn_cfg cfg = make_cfg(false, false);
	struct iwt_b2b t;
	iwt_b2b_init(&t, &cfg, iwt_seed());
	static uint8_t src[100], sink[100], msg[10];
	uint32_t s = iwt_mem_reg(&t.b.mem, src, sizeof(src), IW_RDMAP_ACC_REMOTE_READ, 1, 9);
	uint32_t k = iwt_mem_reg(&t.a.mem, sink, sizeof(sink), IW_RDMAP_ACC_LOCAL_WRITE, 1, 8);
	struct iw_rdmap_wr rd = wr_one(IW_RDMAP_WR_READ, 1, sink, 100);
	rd.remote_stag = s;
	rd.remote_to = va(src);
	rd.local_stag = k;
	rd.local_to = va(sink);
	struct iw_rdmap_wr snd = wr_one(IW_RDMAP_WR_SEND, 2, msg, 10);
	snd.fence = true;
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &rd), 0);
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &snd), 0);
	struct iovec rv = { src, 10 };
	iwt_mem_post_recv(&t.b.mem, 1, &rv, 1);
	iwt_ep_pull(&t, &t.a);
	ck_assert_uint_eq(count_fpdus(t.a.wire, t.a.wire_len, NULL), 1); /* only the READ */
	ck_assert(iwt_b2b_pump(&t, 100));
	no_errors(&t);
	expect_sq_done(&t.a, 0, 1, 100);
	expect_sq_done(&t.a, 1, 2, 10);
	iwt_b2b_fini(&t);
}
END_TEST

START_TEST(post_errors)
{
	struct iw_rdmap_conn_cfg cfg = make_cfg(false, false);
	struct iwt_b2b t;
	iwt_b2b_init(&t, &cfg, iwt_seed());
	static uint8_t buf[16];
	struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_SEND, 1, buf, 16);
	wr.nsge = IW_RDMAP_MAX_SGE + 1;
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), -EINVAL);
	wr.nsge = -1;
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), -EINVAL);
	wr = wr_one(IW_RDMAP_WR_READ, 1, buf, 16);
	wr.nsge = 2;
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), -EINVAL);
	wr = wr_one((enum iw_rdmap_wr_opcode)99, 1, buf, 16);
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), -EINVAL);
	wr = wr_one(IW_RDMAP_WR_SEND, 1, buf, 16);
	for (int i = 0; i < IWT_EP_SQ; i++)
		ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), 0);
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), -ENOSPC);
	iw_rdmap_flush(&t.a.conn);
	ck_assert_uint_eq(iwt_ep_count(&t.a, IW_RDMAP_EV_SQ_FLUSH), IWT_EP_SQ);
	ck_assert_int_eq(iw_rdmap_post(&t.a.conn, &wr), -EPIPE);
	/* Bad configurations are refused. */
	struct iw_rdmap_conn c;
	struct iw_rdmap_conn_cfg bad = cfg;
	bad.mulpdu = 20;
	struct iw_rdmap_conn_ops ops = { .stag = iwt_mem_stag, .recv_buf = iwt_mem_recv_buf,
					 .invalidate = iwt_mem_invalidate };
	struct iw_rdmap_conn_mem mem = { .sq = t.a.sq, .sq_depth = 4, .ird = t.a.ird, .n_ird = 4,
					 .tx = t.a.tx, .n_tx = 4, .sgl_pool = t.a.sq_sgl, .max_sge = 4,
					 .tx_markers = t.a.tx_markers };
	ck_assert_int_eq(iw_rdmap_conn_init(&c, &bad, &ops, NULL, &mem), -EINVAL);
	/* SGE room is required, and at most IW_RDMAP_MAX_SGE per WR. */
	struct iw_rdmap_conn_mem bad_mem = mem;
	bad_mem.sgl_pool = NULL;
	ck_assert_int_eq(iw_rdmap_conn_init(&c, &cfg, &ops, NULL, &bad_mem), -EINVAL);
	bad_mem = mem;
	bad_mem.max_sge = IW_RDMAP_MAX_SGE + 1;
	ck_assert_int_eq(iw_rdmap_conn_init(&c, &cfg, &ops, NULL, &bad_mem), -EINVAL);
	bad_mem = mem;
	bad_mem.tx_markers = NULL;
	struct iw_rdmap_conn_cfg mk = cfg;
	mk.markers_tx = true;
	ck_assert_int_eq(iw_rdmap_conn_init(&c, &mk, &ops, NULL, &bad_mem), -EINVAL);
	bad = cfg;
	bad.ird = 5;
	ck_assert_int_eq(iw_rdmap_conn_init(&c, &bad, &ops, NULL, &mem), -EINVAL);
	bad = cfg;
	bad.ird = 4;
	ck_assert_int_eq(iw_rdmap_conn_init(&c, &bad, &ops, NULL, &mem), 0);
	iwt_b2b_fini(&t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors: each produces the right Terminate and stops the stream      */

static uint8_t inj_hdr[64];

static size_t tagged_hdr(uint8_t op, uint32_t stag, uint64_t to, bool last, uint8_t dv, uint8_t rv)
{
	inj_hdr[0] = (uint8_t)(IW_DDP_CTRL_TAGGED | (last ? IW_DDP_CTRL_LAST : 0) | (dv & 3));
	inj_hdr[1] = (uint8_t)(rv << 6 | op);
	iw_put_be32(inj_hdr + 2, stag);
	iw_put_be64(inj_hdr + 6, to);
	return IW_DDP_TAGGED_HDR_LEN;
}

static size_t untagged_hdr(uint8_t op, uint32_t word, uint32_t qn, uint32_t msn, uint32_t mo, bool last,
			   uint8_t dv, uint8_t rv)
{
	inj_hdr[0] = (uint8_t)((last ? IW_DDP_CTRL_LAST : 0) | (dv & 3));
	inj_hdr[1] = (uint8_t)(rv << 6 | op);
	iw_put_be32(inj_hdr + 2, word);
	iw_put_be32(inj_hdr + 6, qn);
	iw_put_be32(inj_hdr + 10, msn);
	iw_put_be32(inj_hdr + 14, mo);
	return IW_DDP_UNTAGGED_HDR_LEN;
}

/* A read request: untagged header + 28-byte body in inj_hdr. */
static size_t read_req_hdr(uint32_t msn, uint32_t sink_stag, uint64_t sink_to, uint32_t size, uint32_t src_stag,
			   uint64_t src_to)
{
	size_t n = untagged_hdr(IW_OP_READ_REQ, 0, IW_DDP_QN_READ_REQ, msn, 0, true, 1, 1);
	struct iw_rdmap_read_req r = { sink_stag, sink_to, size, src_stag, src_to };
	iw_rdmap_read_req_encode(&r, inj_hdr + n);
	return n + IW_RDMAP_READ_REQ_LEN;
}

struct err_fixture {
	struct iwt_b2b t;
	uint8_t mem_rw[256];
	uint8_t mem_ro[256];
	uint8_t mem_other_pd[256];
	uint8_t recv_small[50];
	uint32_t stag_rw, stag_ro, stag_other_pd;
};

static struct err_fixture *fx_new(bool crc, bool markers)
{
	struct err_fixture *f = calloc(1, sizeof(*f));
	struct iw_rdmap_conn_cfg cfg = make_cfg(crc, markers);
	iwt_b2b_init(&f->t, &cfg, iwt_seed());
	f->stag_rw = iwt_mem_reg(&f->t.b.mem, f->mem_rw, sizeof(f->mem_rw),
				 IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ, 1, 0x41);
	f->stag_ro = iwt_mem_reg(&f->t.b.mem, f->mem_ro, sizeof(f->mem_ro), IW_RDMAP_ACC_LOCAL_WRITE, 1, 0x42);
	f->stag_other_pd = iwt_mem_reg(&f->t.b.mem, f->mem_other_pd, sizeof(f->mem_other_pd),
				       IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ, 2, 0x43);
	return f;
}

/* B must have detected cause, sent it in its Terminate, and A decoded it;
 * B's stream is stopped and later valid traffic is ignored. */
static void expect_terminate(struct err_fixture *f, struct iw_term_cause cause, bool copies_ddp)
{
	struct iwt_b2b *t = &f->t;
	ck_assert(iwt_b2b_pump(t, 1000));
	const struct iwt_event *e = iwt_ep_find(&t->b, IW_RDMAP_EV_ERROR, 0);
	ck_assert_msg(e != NULL, "B detected nothing");
	ck_assert_msg(iw_term_cause_eq(e->ev.cause, cause), "B detected (%u,%u,%#x), want (%u,%u,%#x)",
		      e->ev.cause.layer, e->ev.cause.etype, e->ev.cause.ecode, cause.layer, cause.etype,
		      cause.ecode);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_ERROR), 1);
	ck_assert_ptr_nonnull(iwt_ep_find(&t->b, IW_RDMAP_EV_TERM_SENT, 0));
	const struct iwt_event *tr = iwt_ep_find(&t->a, IW_RDMAP_EV_TERM_RECV, 0);
	ck_assert_msg(tr != NULL, "A received no Terminate");
	ck_assert(iw_term_cause_eq(tr->ev.cause, cause));
	ck_assert(!tr->term.siw_layout);
	ck_assert_int_eq(tr->term.has_ddp_hdr, copies_ddp);
	ck_assert_int_eq(t->a.conn.state, IW_RDMAP_ST_CLOSED);
	ck_assert_int_eq(t->b.conn.state, IW_RDMAP_ST_CLOSED);

	/* Nothing after the Terminate is processed. */
	size_t n = tagged_hdr(IW_OP_WRITE, f->stag_rw, va(f->mem_rw), true, 1, 1);
	uint8_t junk[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	memset(f->mem_rw, 0, sizeof(f->mem_rw));
	iwt_ep_inject(&t->a, inj_hdr, n, junk, sizeof(junk));
	iwt_b2b_pump(t, 100);
	for (size_t i = 0; i < sizeof(f->mem_rw); i++)
		ck_assert_uint_eq(f->mem_rw[i], 0);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_ERROR), 1);
}

static void fx_free(struct err_fixture *f)
{
	iwt_b2b_fini(&f->t);
	free(f);
}

#define CAUSE(l, e, c) IW_TERM_CAUSE(l, e, c)

START_TEST(err_ddp_tagged)
{
	static const uint8_t payload[32];
	for (int k = 0; k < 5; k++) {
		struct err_fixture *f = fx_new(_i & 1, _i & 2);
		size_t n;
		struct iw_term_cause want;
		switch (k) {
		case 0:
			n = tagged_hdr(IW_OP_WRITE, 0xdeadbe00, 0x1000, true, 1, 1);
			want = CAUSE(1, 1, 0x00);
			break;
		case 1:
			n = tagged_hdr(IW_OP_WRITE, f->stag_rw, va(f->mem_rw) + 240, true, 1, 1);
			want = CAUSE(1, 1, 0x01);
			break;
		case 2:
			n = tagged_hdr(IW_OP_WRITE, f->stag_other_pd, va(f->mem_other_pd), true, 1, 1);
			want = CAUSE(1, 1, 0x02);
			break;
		case 3:
			n = tagged_hdr(IW_OP_WRITE, f->stag_rw, UINT64_MAX - 8, true, 1, 1);
			want = CAUSE(1, 1, 0x03);
			break;
		default:
			n = tagged_hdr(IW_OP_WRITE, f->stag_rw, va(f->mem_rw), true, 2, 1);
			want = CAUSE(1, 1, 0x04);
			break;
		}
		iwt_ep_inject(&f->t.a, inj_hdr, n, payload, sizeof(payload));
		expect_terminate(f, want, true);
		fx_free(f);
	}
}
END_TEST

START_TEST(err_ddp_untagged)
{
	static const uint8_t payload[100];
	for (int k = 0; k < 6; k++) {
		struct err_fixture *f = fx_new(_i & 1, _i & 2);
		struct iovec rv = { f->recv_small, sizeof(f->recv_small) };
		if (k != 1)
			iwt_mem_post_recv(&f->t.b.mem, 1, &rv, 1);
		size_t n, len = 10;
		struct iw_term_cause want;
		switch (k) {
		case 0:
			n = untagged_hdr(IW_OP_SEND, 0, 5, 1, 0, true, 1, 1);
			want = CAUSE(1, 2, 0x01);
			break;
		case 1:
			n = untagged_hdr(IW_OP_SEND, 0, 0, 1, 0, true, 1, 1);
			want = CAUSE(1, 2, 0x02);
			break;
		case 2:
			n = untagged_hdr(IW_OP_SEND, 0, 0, 7, 0, true, 1, 1);
			want = CAUSE(1, 2, 0x03);
			break;
		case 3:
			n = untagged_hdr(IW_OP_SEND, 0, 0, 1, 4, true, 1, 1);
			want = CAUSE(1, 2, 0x04);
			break;
		case 4:
			n = untagged_hdr(IW_OP_SEND, 0, 0, 1, 0, true, 1, 1);
			len = 100;
			want = CAUSE(1, 2, 0x05);
			break;
		default:
			n = untagged_hdr(IW_OP_SEND, 0, 0, 1, 0, true, 0, 1);
			want = CAUSE(1, 2, 0x06);
			break;
		}
		iwt_ep_inject(&f->t.a, inj_hdr, n, payload, len);
		expect_terminate(f, want, true);
		for (size_t i = 0; i < sizeof(f->recv_small); i++)
			ck_assert_uint_eq(f->recv_small[i], 0);
		fx_free(f);
	}
}
END_TEST

START_TEST(err_rdmap)
{
	static const uint8_t payload[16];
	for (int k = 0; k < 11; k++) {
		struct err_fixture *f = fx_new(_i & 1, _i & 2);
		size_t n, len = sizeof(payload);
		struct iw_term_cause want;
		switch (k) {
		case 0: /* WRITE into a region without REMOTE_WRITE */
			n = tagged_hdr(IW_OP_WRITE, f->stag_ro, va(f->mem_ro), true, 1, 1);
			want = CAUSE(0, 1, 0x02);
			break;
		case 1:
			n = tagged_hdr(IW_OP_WRITE, f->stag_rw, va(f->mem_rw), true, 1, 2);
			want = CAUSE(0, 2, 0x05);
			break;
		case 2: /* RFC 7306 opcode, not enabled */
			n = untagged_hdr(9, 0, 0, 1, 0, true, 1, 1);
			want = CAUSE(0, 2, 0x06);
			break;
		case 3: /* Read Response nobody asked for */
			n = tagged_hdr(IW_OP_READ_RESP, f->stag_rw, va(f->mem_rw), true, 1, 1);
			want = CAUSE(0, 2, 0x06);
			break;
		case 4: /* Send with Invalidate of an STag of another PD */
		{
			struct iovec rv = { f->recv_small, sizeof(f->recv_small) };
			iwt_mem_post_recv(&f->t.b.mem, 1, &rv, 1);
			n = untagged_hdr(IW_OP_SEND_INV, f->stag_other_pd, 0, 1, 0, true, 1, 1);
			want = CAUSE(0, 1, 0x09);
			break;
		}
		case 5: /* READ source without REMOTE_READ */
			n = read_req_hdr(1, 0x100, 0, 16, f->stag_ro, va(f->mem_ro));
			len = 0;
			want = CAUSE(0, 1, 0x02);
			break;
		case 6:
			n = read_req_hdr(1, 0x100, 0, 16, 0x7777700, 0);
			len = 0;
			want = CAUSE(0, 1, 0x00);
			break;
		case 7:
			n = read_req_hdr(1, 0x100, 0, 64, f->stag_rw, va(f->mem_rw) + 200);
			len = 0;
			want = CAUSE(0, 1, 0x01);
			break;
		case 8:
			n = read_req_hdr(1, 0x100, 0, 16, f->stag_other_pd, va(f->mem_other_pd));
			len = 0;
			want = CAUSE(0, 1, 0x03);
			break;
		case 9:
			n = read_req_hdr(1, 0x100, 0, 64, f->stag_rw, UINT64_MAX - 10);
			len = 0;
			want = CAUSE(0, 1, 0x04);
			break;
		default: /* Send on the Read Request queue */
			n = untagged_hdr(IW_OP_SEND, 0, 1, 1, 0, true, 1, 1);
			want = CAUSE(1, 2, 0x01);
			break;
		}
		uint8_t sent[64];
		memcpy(sent, inj_hdr, sizeof(sent));
		iwt_ep_inject(&f->t.a, inj_hdr, n, payload, len);
		expect_terminate(f, want, true);
		const struct iwt_event *tr = iwt_ep_find(&f->t.a, IW_RDMAP_EV_TERM_RECV, 0);
		if (k >= 5 && k <= 9) {
			/* Errors about a Read Request carry its body. */
			ck_assert(tr->term.has_rdmap_hdr);
			ck_assert(memcmp(tr->term.rdmap_hdr, sent + IW_DDP_UNTAGGED_HDR_LEN, 28) == 0);
		}
		ck_assert(memcmp(tr->term.ddp_hdr, sent, k == 2 || k == 4 || k >= 5 ? 18 : 14) == 0);
		ck_assert(iwt_mem_find(&f->t.b.mem, f->stag_other_pd)->valid);
		fx_free(f);
	}
}
END_TEST

START_TEST(err_ird_exceeded)
{
	struct err_fixture *f = fx_new(true, false);
	f->t.b.conn.cfg.ird = 2;
	static uint8_t sink[3][16];
	uint32_t k = iwt_mem_reg(&f->t.a.mem, sink, sizeof(sink), IW_RDMAP_ACC_LOCAL_WRITE, 1, 3);
	for (int i = 0; i < 3; i++) {
		struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_READ, (uint64_t)i, sink[i], 16);
		wr.remote_stag = f->stag_rw;
		wr.remote_to = va(f->mem_rw);
		wr.local_stag = k;
		wr.local_to = va(sink[i]);
		ck_assert_int_eq(iw_rdmap_post(&f->t.a.conn, &wr), 0);
	}
	/* All three requests reach B before B answers any. */
	iwt_ep_pull(&f->t, &f->t.a);
	iwt_ep_deliver(&f->t, &f->t.a, &f->t.b, SIZE_MAX);
	expect_terminate(f, CAUSE(0, 2, 0x07), true);
	ck_assert(iwt_ep_find(&f->t.a, IW_RDMAP_EV_TERM_RECV, 0)->term.has_rdmap_hdr);
	/* A flushes what never completed. */
	iw_rdmap_flush(&f->t.a.conn);
	ck_assert_uint_eq(iwt_ep_count(&f->t.a, IW_RDMAP_EV_SQ_FLUSH) + iwt_ep_count(&f->t.a, IW_RDMAP_EV_SQ_DONE),
			  3);
	fx_free(f);
}
END_TEST

START_TEST(err_mpa_crc)
{
	struct err_fixture *f = fx_new(true, _i & 1);
	struct iovec rv = { f->recv_small, sizeof(f->recv_small) };
	iwt_mem_post_recv(&f->t.b.mem, 1, &rv, 1);
	static const uint8_t payload[40] = { 1, 2, 3 };
	size_t n = untagged_hdr(IW_OP_SEND, 0, 0, 1, 0, true, 1, 1);
	iwt_ep_inject(&f->t.a, inj_hdr, n, payload, 40);
	f->t.a.wire[f->t.a.wire_len - 10] ^= 0x10; /* a payload bit */
	expect_terminate(f, CAUSE(2, 0, 0x02), false);
	ck_assert_uint_eq(iwt_ep_count(&f->t.b, IW_RDMAP_EV_RECV_DONE), 0);
	fx_free(f);
}
END_TEST

START_TEST(err_mpa_marker)
{
	struct err_fixture *f = fx_new(_i & 1, true);
	static uint8_t payload[1500];
	size_t n = tagged_hdr(IW_OP_WRITE, f->stag_rw, va(f->mem_rw), true, 1, 1);
	uint64_t base = f->t.a.wire_total - f->t.a.wire_len;
	iwt_ep_inject(&f->t.a, inj_hdr, n, payload, 100);
	n = tagged_hdr(IW_OP_WRITE, f->stag_rw, va(f->mem_rw), true, 1, 1);
	(void)payload;
	/* Second FPDU spans the 512 boundary: corrupt that marker's pointer. */
	iwt_ep_inject(&f->t.a, inj_hdr, n, f->mem_rw, 250);
	iwt_ep_inject(&f->t.a, inj_hdr, n, f->mem_rw, 250);
	size_t at = (size_t)(512 - base % 512) % 512;
	if (at == 0)
		at = 512;
	ck_assert_uint_lt(at + 3, f->t.a.wire_len);
	f->t.a.wire[at + 3] ^= 0x04;
	expect_terminate(f, CAUSE(2, 0, 0x03), false);
	fx_free(f);
}
END_TEST

START_TEST(err_ulpdu_too_small)
{
	struct err_fixture *f = fx_new(_i & 1, false);
	/* A Read Request whose ULPDU holds only the DDP header. */
	size_t n = untagged_hdr(IW_OP_READ_REQ, 0, 1, 1, 0, true, 1, 1);
	iwt_ep_inject(&f->t.a, inj_hdr, n, NULL, 0);
	expect_terminate(f, CAUSE(2, 0, 0x03), false);
	fx_free(f);
}
END_TEST

/* B finds a violation while it is in the middle of a large WRITE: its
 * Terminate still arrives at an FPDU boundary and decodes. */
START_TEST(terminate_mid_message)
{
	struct err_fixture *f = fx_new(true, _i & 1);
	size_t big = 1 << 20;
	uint8_t *src = calloc(1, big), *dst = calloc(1, big);
	uint32_t d = iwt_mem_reg(&f->t.a.mem, dst, big, IW_RDMAP_ACC_REMOTE_WRITE, 1, 5);
	struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_WRITE, 1, src, big);
	wr.remote_stag = d;
	wr.remote_to = va(dst);
	ck_assert_int_eq(iw_rdmap_post(&f->t.b.conn, &wr), 0);
	f->t.max_pull = 10000;
	/* One pull: part of the WRITE is out. */
	size_t bytes;
	struct iovec iov[64];
	int k = iw_rdmap_tx_pull(&f->t.b.conn, iov, 64, 3000, &bytes);
	ck_assert_int_gt(k, 0);
	iw_rdmap_tx_ack(&f->t.b.conn, bytes);
	uint8_t *flat = malloc(bytes), *p = flat;
	for (int i = 0; i < k; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	ck_assert_uint_eq(iw_rdmap_rx_feed(&f->t.a.conn, flat, bytes), bytes);
	free(flat);
	/* Now A sends B a bad WRITE. */
	size_t n = tagged_hdr(IW_OP_WRITE, 0x12345600, 0, true, 1, 1);
	iwt_ep_inject(&f->t.a, inj_hdr, n, src, 8);
	iwt_ep_deliver(&f->t, &f->t.a, &f->t.b, SIZE_MAX); /* B finds it before sending more */
	expect_terminate(f, CAUSE(1, 1, 0x00), true);
	iw_rdmap_flush(&f->t.b.conn);
	const struct iwt_event *fl = iwt_ep_find(&f->t.b, IW_RDMAP_EV_SQ_FLUSH, 0);
	ck_assert_ptr_nonnull(fl);
	ck_assert_uint_eq(fl->ev.cookie, 1);
	free(src);
	free(dst);
	fx_free(f);
}
END_TEST


/* The memory-gone tests' pair: loop variant i picks CRC (bit 0) and the
 * zero-copy receive (bit 1); 64-byte chunks, so an FPDU arrives in parts. */
static void b2b_in_chunks(struct iwt_b2b *t, int i)
{
	struct iw_rdmap_conn_cfg cfg = make_cfg(i & 1, false);
	iwt_b2b_init(t, &cfg, iwt_seed());
	t->rx_mode = i & 2 ? IWT_RX_ZEROCOPY : IWT_RX_FEED;
	t->max_chunk = 64;
}

/* A's WRITE of n bytes from src to dst (STag stag) reaches B only in
 * part: its header and some of the payload (b2b_in_chunks). */
static void write_half_delivered(struct iwt_b2b *t, uint8_t *src, uint8_t *dst, size_t n, uint32_t stag)
{
	struct iw_rdmap_wr wr = wr_one(IW_RDMAP_WR_WRITE, 1, src, n);
	wr.remote_stag = stag;
	wr.remote_to = va(dst);
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wr), 0);
	iwt_ep_pull(t, &t->a);
	iwt_ep_deliver(t, &t->a, &t->b, 300);
}

/* The target region is deregistered while a WRITE FPDU is half placed:
 * nothing more lands in it, and the stream ends with (1,1,0x00). */
START_TEST(memory_gone_mid_fpdu)
{
	struct iwt_b2b t;
	b2b_in_chunks(&t, _i);
	static uint8_t src[1000], dst[1000];
	memset(src, 0x77, sizeof(src));
	memset(dst, 0, sizeof(dst));
	uint32_t d = iwt_mem_reg(&t.b.mem, dst, sizeof(dst), IW_RDMAP_ACC_REMOTE_WRITE, 1, 4);
	write_half_delivered(&t, src, dst, sizeof(dst), d);
	size_t placed = 0;
	while (placed < sizeof(dst) && dst[placed] == 0x77)
		placed++;
	ck_assert_uint_gt(placed, 0);
	ck_assert_uint_lt(placed, sizeof(dst));
	iw_rdmap_rx_memory_gone(&t.b.conn, d, dst, sizeof(dst));
	iwt_mem_find(&t.b.mem, d)->valid = false;
	ck_assert(iwt_b2b_pump(&t, 100));
	for (size_t i = placed; i < sizeof(dst); i++)
		ck_assert_uint_eq(dst[i], 0);
	const struct iwt_event *e = iwt_ep_find(&t.b, IW_RDMAP_EV_ERROR, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert(iw_term_cause_eq(e->ev.cause, IW_TERM_CAUSE(1, 1, 0x00)));
	ck_assert_ptr_nonnull(iwt_ep_find(&t.a, IW_RDMAP_EV_TERM_RECV, 0));
	/* Memory going away elsewhere, or between FPDUs, changes nothing. */
	iw_rdmap_rx_memory_gone(&t.a.conn, d, src, sizeof(src));
	iwt_b2b_fini(&t);
}
END_TEST

/* The same memory registered twice (libfabric registers a buffer again
 * for each READ): the older registration goes away while a WRITE FPDU is
 * half placed through the newer one. The placement goes on and completes,
 * no Terminate (mpi_ofi_4 failed with (1,1,0x00) on a Read Response when
 * the memory check went by address alone). */
START_TEST(other_stag_gone_mid_fpdu)
{
	struct iwt_b2b t;
	b2b_in_chunks(&t, _i);
	static uint8_t src[1000], dst[1000];
	memset(src, 0x5a, sizeof(src));
	memset(dst, 0, sizeof(dst));
	uint32_t old = iwt_mem_reg(&t.b.mem, dst, sizeof(dst), IW_RDMAP_ACC_REMOTE_WRITE, 1, 3);
	uint32_t d = iwt_mem_reg(&t.b.mem, dst, sizeof(dst), IW_RDMAP_ACC_REMOTE_WRITE, 1, 4);
	ck_assert_uint_ne(old, d);
	write_half_delivered(&t, src, dst, sizeof(dst), d);
	ck_assert_uint_eq(dst[0], 0x5a);
	ck_assert_uint_eq(dst[sizeof(dst) - 1], 0);
	iw_rdmap_rx_memory_gone(&t.b.conn, old, dst, sizeof(dst));
	iwt_mem_find(&t.b.mem, old)->valid = false;
	ck_assert(iwt_b2b_pump(&t, 100));
	ck_assert_mem_eq(dst, src, sizeof(dst));
	ck_assert_ptr_null(iwt_ep_find(&t.b, IW_RDMAP_EV_ERROR, 0));
	ck_assert_ptr_null(iwt_ep_find(&t.a, IW_RDMAP_EV_TERM_RECV, 0));
	iwt_b2b_fini(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rdmap_conn");
	TCase *tc = tcase_create("exchange");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, all_ops_plain);
	tcase_add_test(tc, all_ops_crc);
	tcase_add_test(tc, all_ops_markers);
	tcase_add_test(tc, all_ops_crc_markers);
	tcase_add_loop_test(tc, mixed_traffic_both_ways, 0, 2);
	tcase_add_test(tc, ord_limit_and_fence);
	tcase_add_test(tc, fence_waits_for_reads);
	tcase_add_test(tc, post_errors);
	suite_add_tcase(s, tc);

	TCase *te = tcase_create("errors");
	tcase_set_timeout(te, 120);
	tcase_add_loop_test(te, err_ddp_tagged, 0, 4);
	tcase_add_loop_test(te, err_ddp_untagged, 0, 4);
	tcase_add_loop_test(te, err_rdmap, 0, 4);
	tcase_add_test(te, err_ird_exceeded);
	tcase_add_loop_test(te, err_mpa_crc, 0, 2);
	tcase_add_loop_test(te, err_mpa_marker, 0, 2);
	tcase_add_loop_test(te, err_ulpdu_too_small, 0, 2);
	tcase_add_loop_test(te, terminate_mid_message, 0, 2);
	tcase_add_loop_test(te, memory_gone_mid_fpdu, 0, 4);
	tcase_add_loop_test(te, other_stag_gone_mid_fpdu, 0, 4);
	suite_add_tcase(s, te);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
