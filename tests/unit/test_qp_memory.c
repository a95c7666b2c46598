/* QP memory suite: what an idle connected QP costs, counted
 * deterministically (heap bytes in use, the library's page accounting,
 * mincore residency of the QP's queue storage), and the lazy path: queue
 * storage that an idle QP never touches must still serve a QP filled to
 * full depth (twice, so every ring wraps), with markers on and off, and
 * a QP destroyed with WRs outstanding must give back every page and every
 * region reference. */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <iwarp/cm.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "stack/internal.h"
#include "stack/transport/pipe/pipe_transport.h"
#include "stack/qp_mem.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IWT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define IWT_ASAN 1
#endif
#ifdef IWT_ASAN
/* Declared here, not from <sanitizer/allocator_interface.h>: gcc ships no
 * such header, but both compilers' ASan runtimes export the function. */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* Default caps (iw_create_qp with a zeroed cap). */
#define DEF_WR 128
#define DEF_SGE 4
#define DEF_INLINE 64

/* Heap bytes per idle connected QP end over kernel TCP, everything the
 * library mallocs for it: the QP struct (~2.6 KiB, the protocol engine's
 * state inside), its IRD table (16 x 80 B), the CM id (~2.1 KiB), the TCP
 * transport without its iovec backlog (~0.3 KiB) and allocator overhead:
 * 6.2 KiB when this bound was set (12.9 KiB with the backlog in the
 * struct, 73 KiB before queue storage moved to pages). The target is
 * 32 KiB resident per QP (bench/qp_memory); 10 KiB keeps it with a wide
 * margin and still catches a per-WR array or the backlog coming back to
 * the heap (128 WRs x even 32 B = 4 KiB). */
#define IDLE_HEAP_BOUND (10u * 1024u)
/* Page-backed bytes per connection besides the QP's queues: the TCP
 * transport's iovec backlog (424 iovecs: two pages). */
#define TRANSPORT_PAGES_BOUND (8u * 1024u)
/* What iw_create_qp itself may take from the heap: the struct only. */
#define CREATE_HEAP_BOUND 4096u
/* Queue storage (virtual, resident only where used) at the default
 * caps: 59 KiB when set; per send WR a 72 B engine slot, 4 SGEs, 4
 * region pointers, 24 B meta, 24 B local-invalidate slot and 64 B inline
 * room; per receive WR a 32 B entry, 4 SGEs and 4 region pointers. */
#define QMEM_BOUND (64u * 1024u)

static uint64_t rng;

static size_t heap_in_use(void)
{
#ifdef IWT_ASAN
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#endif
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Pages of the QP's queue storage that are resident. */
static size_t resident_pages(const struct iw_qp *qp)
{
	size_t pg = page_size(), n = (qp->qmem_len + pg - 1) / pg, r = 0;
	unsigned char *vec = calloc(n ? n : 1, 1);
	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore(qp->qmem, n * pg, vec), 0);
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void pump(struct iw_context *ctx)
{
	for (int i = 0; i < 100000; i++) {
		int n = iw_progress(ctx, 0);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			return;
	}
	ck_abort_msg("progress never quiesced");
}

/* ------------------------------------------------------------------ */
/* Sizes by construction                                               */

START_TEST(layout_and_create)
{
	struct iw_qp_cap def = { .max_send_wr = DEF_WR, .max_recv_wr = DEF_WR, .max_send_sge = DEF_SGE,
				 .max_recv_sge = DEF_SGE, .max_inline_data = DEF_INLINE };
	struct iw_qp_cap on_srq = def;
	on_srq.max_recv_wr = on_srq.max_recv_sge = 0;
	struct iw_qp_cap one = { 1, 1, 1, 1, 1 };
	size_t len = iw_qp_mem_len(&def);

	ck_assert_uint_le(len, QMEM_BOUND);
	/* Receive storage only with a receive queue; sized by the caps. */
	ck_assert_uint_le(iw_qp_mem_len(&on_srq) +
				  DEF_WR * (sizeof(struct iw_rq_entry) + DEF_SGE * (sizeof(struct iovec) + sizeof(void *))),
			  len);
	/* One WR of each: little beyond the tx slots (fixed per connection). */
	ck_assert_uint_le(iw_qp_mem_len(&one), IW_QP_TX_SLOTS * sizeof(struct iw_rdmap_tx_slot) + 1024);

	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 16, NULL, &cq), 0);
	size_t mapped0 = iw_pages_mapped(), heap0 = heap_in_use();
	struct iw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq };
	ck_assert_int_eq(iw_create_qp(pd, &qa, &qp), 0);
	size_t heap = heap_in_use() - heap0;
	ck_assert_msg(heap <= CREATE_HEAP_BOUND, "iw_create_qp took %zu heap bytes", heap);
	ck_assert_uint_eq(qp->qmem_len, len);
	ck_assert_uint_eq(iw_pages_mapped() - mapped0, (len + page_size() - 1) / page_size() * page_size());
	ck_assert_uint_eq(resident_pages(qp), 0);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	ck_assert_uint_eq(iw_pages_mapped(), mapped0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Idle connected QPs over kernel TCP (127.0.0.1)                      */

#define LOOP_PAIRS 16

struct loop {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id;
	struct sockaddr_in addr;
	struct iw_cm_id *ids[2 * (LOOP_PAIRS + 1)];
	struct iw_qp *qps[2 * (LOOP_PAIRS + 1)];
	int n, established;
};

static struct iw_qp *loop_qp(struct loop *l)
{
	struct iw_qp_init_attr qa = { .send_cq = l->cq, .recv_cq = l->cq };
	ck_assert_int_lt(l->n, 2 * (LOOP_PAIRS + 1));
	ck_assert_int_eq(iw_create_qp(l->pd, &qa, &l->qps[l->n]), 0);
	return l->qps[l->n];
}

static void loop_events(struct loop *l)
{
	struct iw_cm_event *ev;
	struct iw_conn_param p;

	while (iw_cm_get_event(l->ch, &ev) == 0) {
		switch (ev->type) {
		case IW_CM_EVENT_CONNECT_REQUEST:
			memset(&p, 0, sizeof(p));
			l->ids[l->n] = ev->id;
			ck_assert_int_eq(iw_cm_accept(ev->id, loop_qp(l), &p), 0);
			l->n++;
			break;
		case IW_CM_EVENT_ESTABLISHED:
			l->established++;
			break;
		case IW_CM_EVENT_DISCONNECTED:
			break;
		default:
			ck_abort_msg("unexpected CM event %d (status %d)", (int)ev->type, ev->status);
		}
		iw_cm_ack_event(ev);
	}
}

/* Connect k more pairs and wait until all are established. */
static void loop_connect(struct loop *l, int k)
{
	int want = l->established + 2 * k;
	for (int i = 0; i < k; i++) {
		struct iw_conn_param p;
		memset(&p, 0, sizeof(p));
		ck_assert_int_eq(iw_cm_create_id(l->ch, NULL, &l->ids[l->n]), 0);
		struct iw_qp *qp = loop_qp(l);
		ck_assert_int_eq(iw_cm_connect(l->ids[l->n], qp, (const struct sockaddr *)&l->addr, &p), 0);
		l->n++;
	}
	for (int i = 0; i < 2000 && l->established < want; i++) {
		ck_assert_int_ge(iw_progress(l->ctx, 5), 0);
		loop_events(l);
	}
	ck_assert_int_eq(l->established, want);
	/* Idle for a while: past the initiator's first-FPDU delay (RTR). */
	for (int i = 0; i < 20; i++) {
		ck_assert_int_ge(iw_progress(l->ctx, 5), 0);
		loop_events(l);
	}
}

START_TEST(idle_connected_bytes)
{
	struct loop l;
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(iw_context_create(NULL, &l.ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(l.ctx, &l.pd), 0);
	ck_assert_int_eq(iw_create_cq(l.ctx, 256, NULL, &l.cq), 0);
	ck_assert_int_eq(iw_cm_create_channel(l.ctx, &l.ch), 0);
	ck_assert_int_eq(iw_cm_create_id(l.ch, NULL, &l.listen_id), 0);
	l.addr.sin_family = AF_INET;
	l.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(iw_cm_listen(l.listen_id, (struct sockaddr *)&l.addr, 64), 0);
	struct sockaddr_storage bound;
	ck_assert_int_eq(iw_cm_local_addr(l.listen_id, &bound), 0);
	l.addr.sin_port = ((struct sockaddr_in *)&bound)->sin_port;

	/* One pair first: per-context allocations (receive stage, epoll
	 * bookkeeping) are not per QP. */
	loop_connect(&l, 1);
	size_t heap0 = heap_in_use(), mapped0 = iw_pages_mapped();
	loop_connect(&l, LOOP_PAIRS);
	size_t per_qp = (heap_in_use() - heap0) / (2 * LOOP_PAIRS);
	size_t resident = 0;
	for (int i = 0; i < l.n; i++) {
		ck_assert_int_eq(iw_qp_state(l.qps[i]), IW_QPS_RTS);
		resident += resident_pages(l.qps[i]);
	}
	ck_assert_msg(per_qp <= IDLE_HEAP_BOUND, "%zu heap bytes per idle connected QP (bound %u)", per_qp,
		      IDLE_HEAP_BOUND);
	ck_assert_msg(resident == 0, "idle QPs keep %zu queue pages resident", resident);
	size_t qmem = (iw_qp_mem_len(&l.qps[0]->cap) + page_size() - 1) / page_size() * page_size();
	ck_assert_uint_ge(iw_pages_mapped() - mapped0, 2 * LOOP_PAIRS * qmem);
	ck_assert_uint_le(iw_pages_mapped() - mapped0, 2 * LOOP_PAIRS * (qmem + TRANSPORT_PAGES_BOUND));

	for (int i = 0; i < l.n; i++) {
		ck_assert_int_eq(iw_destroy_qp(l.qps[i]), 0);
		ck_assert_int_eq(iw_cm_destroy_id(l.ids[i]), 0);
	}
	ck_assert_uint_eq(iw_pages_mapped(), 0);
	ck_assert_int_eq(iw_cm_destroy_id(l.listen_id), 0);
	ck_assert_int_eq(iw_destroy_cq(l.cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(l.pd), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(l.ch), 0);
	iw_progress(l.ctx, 0);
	ck_assert_int_eq(iw_context_destroy(l.ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Full depth after idle, and destroy while partly used (pipe)          */

struct pair {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq_a, *cq_b;
	struct iw_qp *a, *b;
};

static void pair_init(struct pair *p, bool markers, size_t pipe_buf)
{
	struct iw_qp_conn_params cp = {
		.crc = true,
		.markers_tx = markers,
		.markers_rx = markers,
		.ird = 16,
		.ord = 16,
		.mulpdu = 1442,
	};
	struct iw_pipe_opts o = { .buf_bytes = pipe_buf };
	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(iw_context_create(NULL, &p->ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(p->ctx, &p->pd), 0);
	ck_assert_int_eq(iw_create_cq(p->ctx, 4 * DEF_WR, NULL, &p->cq_a), 0);
	ck_assert_int_eq(iw_create_cq(p->ctx, 4 * DEF_WR, NULL, &p->cq_b), 0);
	struct iw_qp_init_attr qa = { .send_cq = p->cq_a, .recv_cq = p->cq_a };
	ck_assert_int_eq(iw_create_qp(p->pd, &qa, &p->a), 0);
	qa.send_cq = qa.recv_cq = p->cq_b;
	ck_assert_int_eq(iw_create_qp(p->pd, &qa, &p->b), 0);
	ck_assert_int_eq(iw_pipe_connect_opts(p->a, p->b, &cp, &o), 0);
}

static void pair_fini(struct pair *p)
{
	if (p->a)
		ck_assert_int_eq(iw_destroy_qp(p->a), 0);
	if (p->b)
		ck_assert_int_eq(iw_destroy_qp(p->b), 0);
	ck_assert_int_eq(iw_destroy_cq(p->cq_a), 0);
	ck_assert_int_eq(iw_destroy_cq(p->cq_b), 0);
	ck_assert_int_eq(iw_dealloc_pd(p->pd), 0);
	ck_assert_int_eq(iw_context_destroy(p->ctx), 0);
}

#define ACC_ALL (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ)
#define MSG_MAX 1000 /* bytes per message: several FPDUs at MULPDU 1442 for some */

struct mbuf {
	uint8_t *p;
	size_t len;
	struct iw_mr *mr;
};

static struct mbuf mbuf_new(struct iw_pd *pd, size_t len)
{
	struct mbuf m = { .len = len };
	m.p = calloc(len, 1);
	ck_assert_ptr_nonnull(m.p);
	ck_assert_int_eq(iw_reg_mr(pd, m.p, len, ACC_ALL, &m.mr), 0);
	return m;
}

static void mbuf_free(struct mbuf *m)
{
	ck_assert_int_eq(iw_dereg_mr(m->mr), 0); /* -EBUSY if a WR still held it */
	free(m->p);
}

static struct iw_sge sge(const struct mbuf *m, size_t off, uint32_t len)
{
	struct iw_sge s = { .addr = va(m->p + off), .length = len, .lkey = iw_mr_stag(m->mr) };
	return s;
}

/* Split len bytes at off into n SGEs (the last takes the rest). */
static int split(const struct mbuf *m, size_t off, uint32_t len, int n, struct iw_sge *s)
{
	uint32_t each = len / (uint32_t)n;
	for (int i = 0; i < n; i++)
		s[i] = sge(m, off + (size_t)i * each, i == n - 1 ? len - each * (uint32_t)(n - 1) : each);
	return n;
}

static void drain_wc(struct iw_cq *cq, struct iw_wc *wc, int n)
{
	int got = 0;
	while (got < n) {
		int r = iw_poll_cq(cq, n - got, wc + got);
		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		got += r;
	}
	ck_assert_int_eq(got, n);
	struct iw_wc extra;
	ck_assert_int_eq(iw_poll_cq(cq, 1, &extra), 0);
}

/* _i: markers off / on. Round 1: 128 receives and 128 SENDs (inline and
 * gathered alternately); round 2 (every ring wraps): 128 WRITEs and READs
 * mixed, plus 128 more receives and SENDs. */
START_TEST(full_depth_after_idle)
{
	struct pair p;
	pair_init(&p, _i != 0, 0);
	pump(p.ctx);
	ck_assert_uint_eq(resident_pages(p.a), 0);
	ck_assert_uint_eq(resident_pages(p.b), 0);

	struct mbuf src = mbuf_new(p.pd, (size_t)DEF_WR * MSG_MAX);
	struct mbuf dst = mbuf_new(p.pd, (size_t)DEF_WR * MSG_MAX);
	struct iw_wc wc[DEF_WR + 1];
	uint32_t lens[DEF_WR];

	for (int round = 0; round < 2; round++) {
		memset(dst.p, 0, dst.len);
		for (int i = 0; i < DEF_WR; i++) {
			struct iw_sge s[DEF_SGE];
			struct iw_recv_wr rw = { .wr_id = 1000u * (unsigned)round + (unsigned)i, .sg_list = s };
			rw.num_sge = split(&dst, (size_t)i * MSG_MAX, MSG_MAX, 1 + i % DEF_SGE, s);
			ck_assert_int_eq(iw_post_recv(p.b, &rw, NULL), 0);
		}
		struct iw_sge s0 = sge(&dst, 0, 1);
		struct iw_recv_wr extra_rw = { .wr_id = 9, .sg_list = &s0, .num_sge = 1 };
		ck_assert_int_eq(iw_post_recv(p.b, &extra_rw, NULL), -ENOSPC);

		for (int i = 0; i < DEF_WR; i++) {
			bool inl = i % 2 == 0;
			uint32_t len = inl ? (uint32_t)iwt_rand_range(&rng, 0, DEF_INLINE)
					   : (uint32_t)iwt_rand_range(&rng, 1, MSG_MAX);
			lens[i] = len;
			iwt_fill_pattern(src.p + (size_t)i * MSG_MAX, len, (uint32_t)(round * 1000 + i));
			struct iw_sge s[DEF_SGE];
			int n = len >= DEF_SGE ? 1 + i % DEF_SGE : 1;
			struct iw_send_wr w = {
				.wr_id = 5000u * (unsigned)round + (unsigned)i,
				.sg_list = s,
				.num_sge = split(&src, (size_t)i * MSG_MAX, len, n, s),
				.opcode = IW_WR_SEND,
				.send_flags = IW_SEND_SIGNALED | (inl ? IW_SEND_INLINE : 0),
			};
			ck_assert_int_eq(iw_post_send(p.a, &w, NULL), 0);
		}
		/* The pipe sends from progress only: the SQ is at full depth. */
		struct iw_send_wr extra = { .wr_id = 9, .opcode = IW_WR_SEND };
		ck_assert_int_eq(iw_post_send(p.a, &extra, NULL), -ENOSPC);
		pump(p.ctx);
		drain_wc(p.cq_a, wc, DEF_WR);
		for (int i = 0; i < DEF_WR; i++) {
			ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
			ck_assert_int_eq(wc[i].opcode, IW_WC_SEND);
			ck_assert_uint_eq(wc[i].wr_id, 5000u * (unsigned)round + (unsigned)i);
		}
		drain_wc(p.cq_b, wc, DEF_WR);
		for (int i = 0; i < DEF_WR; i++) {
			ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
			ck_assert_int_eq(wc[i].opcode, IW_WC_RECV);
			ck_assert_uint_eq(wc[i].wr_id, 1000u * (unsigned)round + (unsigned)i);
			ck_assert_uint_eq(wc[i].byte_len, lens[i]);
			/* Scattered over 1 + i % 4 SGEs of MSG_MAX / n each. */
			int n = 1 + i % DEF_SGE;
			uint32_t each = MSG_MAX / (uint32_t)n;
			uint8_t got[MSG_MAX];
			size_t off = 0;
			for (int k = 0; k < n && off < lens[i]; k++) {
				uint32_t room = k == n - 1 ? MSG_MAX - each * (uint32_t)(n - 1) : each;
				size_t take = lens[i] - off < room ? lens[i] - off : room;
				memcpy(got + off, dst.p + (size_t)i * MSG_MAX + (size_t)k * each, take);
				off += take;
			}
			ck_assert_uint_eq(iwt_check_pattern(got, lens[i], (uint32_t)(round * 1000 + i)), lens[i]);
		}

		/* One-sided, full depth again: WRITE a -> b's dst, READ back into src. */
		for (int i = 0; i < DEF_WR; i++) {
			bool rd = i % 3 == 2;
			uint32_t len = (uint32_t)iwt_rand_range(&rng, 1, MSG_MAX);
			lens[i] = len;
			struct iw_sge s[DEF_SGE];
			if (rd) {
				iwt_fill_pattern(dst.p + (size_t)i * MSG_MAX, len, (uint32_t)(7000 + round * 1000 + i));
				memset(src.p + (size_t)i * MSG_MAX, 0, MSG_MAX);
			} else {
				iwt_fill_pattern(src.p + (size_t)i * MSG_MAX, len, (uint32_t)(7000 + round * 1000 + i));
			}
			struct iw_send_wr w = {
				.wr_id = 20000u + (unsigned)i,
				.sg_list = s,
				.num_sge = rd ? split(&src, (size_t)i * MSG_MAX, len, 1, s)
					      : split(&src, (size_t)i * MSG_MAX, len, len >= DEF_SGE ? 1 + i % DEF_SGE : 1, s),
				.opcode = rd ? IW_WR_RDMA_READ : IW_WR_RDMA_WRITE,
				.send_flags = IW_SEND_SIGNALED,
				.remote_addr = va(dst.p + (size_t)i * MSG_MAX),
				.rkey = iw_mr_stag(dst.mr),
			};
			ck_assert_int_eq(iw_post_send(p.a, &w, NULL), 0);
		}
		ck_assert_int_eq(iw_post_send(p.a, &extra, NULL), -ENOSPC);
		pump(p.ctx);
		drain_wc(p.cq_a, wc, DEF_WR);
		for (int i = 0; i < DEF_WR; i++) {
			bool rd = i % 3 == 2;
			ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
			ck_assert_uint_eq(wc[i].wr_id, 20000u + (unsigned)i);
			ck_assert_int_eq(wc[i].opcode, rd ? IW_WC_RDMA_READ : IW_WC_RDMA_WRITE);
			const uint8_t *at = (rd ? src.p : dst.p) + (size_t)i * MSG_MAX;
			ck_assert_uint_eq(iwt_check_pattern(at, lens[i], (uint32_t)(7000 + round * 1000 + i)), lens[i]);
		}
		ck_assert_int_eq(iw_poll_cq(p.cq_b, DEF_WR, wc), 0);
	}
	/* Storage untouched while idle became resident with use. */
	ck_assert_uint_gt(resident_pages(p.a), 0);
	ck_assert_uint_gt(resident_pages(p.b), 0);
	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_RTS);
	mbuf_free(&src); /* every WR released its regions */
	mbuf_free(&dst);
	pair_fini(&p);
	ck_assert_uint_eq(iw_pages_mapped(), 0);
}
END_TEST

/* _i: how many progress turns before destroy (0: nothing sent yet). */
START_TEST(destroy_partially_grown)
{
	struct pair p;
	pair_init(&p, _i == 2, 4096); /* a small pipe keeps WRs outstanding */
	struct mbuf src = mbuf_new(p.pd, 64 * 1024);
	struct mbuf dst = mbuf_new(p.pd, 64 * 1024);

	for (int i = 0; i < 10; i++) {
		struct iw_sge s = sge(&dst, (size_t)i * 4096, 4096);
		struct iw_recv_wr rw = { .wr_id = (unsigned)i, .sg_list = &s, .num_sge = 1 };
		ck_assert_int_eq(iw_post_recv(p.b, &rw, NULL), 0);
	}
	for (int i = 0; i < 20; i++) {
		struct iw_sge s[2] = { sge(&src, (size_t)i * 1024, 512), sge(&src, (size_t)i * 1024 + 512, 512) };
		struct iw_send_wr w = {
			.wr_id = (unsigned)i,
			.sg_list = s,
			.num_sge = i % 4 == 3 ? 1 : 2,
			.opcode = i % 2 ? IW_WR_SEND : IW_WR_RDMA_WRITE,
			.send_flags = IW_SEND_SIGNALED | (i % 4 == 3 ? IW_SEND_INLINE : 0),
			.remote_addr = va(dst.p + 48 * 1024),
			.rkey = iw_mr_stag(dst.mr),
		};
		if (i % 4 == 3)
			s[0].length = 48;
		ck_assert_int_eq(iw_post_send(p.a, &w, NULL), 0);
	}
	for (int t = 0; t < _i; t++)
		ck_assert_int_ge(iw_progress(p.ctx, 0), 0);
	ck_assert_uint_gt(resident_pages(p.a), 0);
	ck_assert_uint_gt(resident_pages(p.b), 0);
	ck_assert_uint_gt(iw_pages_mapped(), 0);
	ck_assert_int_eq(iw_destroy_qp(p.a), 0);
	ck_assert_int_eq(iw_destroy_qp(p.b), 0);
	p.a = p.b = NULL;
	ck_assert_uint_eq(iw_pages_mapped(), 0);
	mbuf_free(&src); /* the destroyed QPs released their references */
	mbuf_free(&dst);
	pair_fini(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("qp_memory");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, layout_and_create);
	tcase_add_test(tc, idle_connected_bytes);
	tcase_add_loop_test(tc, full_depth_after_idle, 0, 2);
	tcase_add_loop_test(tc, destroy_partially_grown, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	rng = iwt_seed();
	return iwt_run_suite(suite());
}
