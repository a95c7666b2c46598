/* Verbs suite: object lifecycles and every refusal path; the STag table
 * (random keys, re-registration, lookups); two QPs of one context joined
 * by the in-memory pipe transport exchanging every operation (CRC and
 * markers on/off), signaled and unsignaled, fences, an SRQ shared by
 * three QPs, CQ notification through the channel fd, CQ overflow,
 * protection errors ending in Terminates, flush statuses, disconnects,
 * and the progress-thread variant. */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "stack/internal.h"
#include "stack/transport/pipe/pipe_transport.h"

#define MULPDU 1442

static uint64_t rng;

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static struct iw_qp_conn_params params(bool crc, bool markers, uint32_t mulpdu)
{
	struct iw_qp_conn_params p = {
		.crc = crc,
		.markers_tx = markers,
		.markers_rx = markers,
		.ird = 16,
		.ord = 16,
		.mulpdu = mulpdu ? mulpdu : MULPDU,
	};
	return p;
}

/* ------------------------------------------------------------------ */
/* A connected pair                                                    */

struct pair {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq_a, *cq_b;
	struct iw_qp *a, *b;
	struct iw_comp_channel *ch;
};

static void pair_objects2(struct pair *p, unsigned ctx_flags, int cqe_a, int cqe_b, struct iw_comp_channel **ch,
			  const struct iw_qp_cap *cap, bool sig_all)
{
	struct iw_context_attr ca = { .flags = ctx_flags };
	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(iw_context_create(&ca, &p->ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(p->ctx, &p->pd), 0);
	if (ch) {
		ck_assert_int_eq(iw_create_comp_channel(p->ctx, ch), 0);
		p->ch = *ch;
	}
	ck_assert_int_eq(iw_create_cq(p->ctx, cqe_a, ch ? *ch : NULL, &p->cq_a), 0);
	ck_assert_int_eq(iw_create_cq(p->ctx, cqe_b, ch ? *ch : NULL, &p->cq_b), 0);
	struct iw_qp_init_attr qa = { .send_cq = p->cq_a, .recv_cq = p->cq_a, .sq_sig_all = sig_all };
	if (cap)
		qa.cap = *cap;
	ck_assert_int_eq(iw_create_qp(p->pd, &qa, &p->a), 0);
	qa.send_cq = qa.recv_cq = p->cq_b;
	ck_assert_int_eq(iw_create_qp(p->pd, &qa, &p->b), 0);
}

static void pair_objects(struct pair *p, unsigned ctx_flags, int cqe, const struct iw_qp_cap *cap,
			 bool sig_all)
{
	pair_objects2(p, ctx_flags, cqe, cqe, NULL, cap, sig_all);
}

static void pair_connect(struct pair *p, const struct iw_qp_conn_params *cp, const struct iw_pipe_opts *o)
{
	ck_assert_int_eq(iw_pipe_connect_opts(p->a, p->b, cp, o), 0);
	ck_assert_int_eq(iw_qp_state(p->a), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_state(p->b), IW_QPS_RTS);
}

static void pair_init(struct pair *p, bool crc, bool markers)
{
	struct iw_qp_conn_params cp = params(crc, markers, 0);
	pair_objects(p, 0, 256, NULL, true);
	pair_connect(p, &cp, NULL);
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
	if (p->ch)
		ck_assert_int_eq(iw_destroy_comp_channel(p->ch), 0);
	ck_assert_int_eq(iw_context_destroy(p->ctx), 0);
}

/* Progress until nothing happens. */
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

/* Exactly n completions (after pumping), and no more. */
static void expect_wc(struct iw_context *ctx, struct iw_cq *cq, struct iw_wc *wc, int n)
{
	pump(ctx);
	struct iw_wc extra[4];
	int got = n ? iw_poll_cq(cq, n, wc) : 0;
	ck_assert_int_eq(got, n);
	ck_assert_int_eq(iw_poll_cq(cq, 4, extra), 0);
}

struct mbuf {
	uint8_t *p;
	size_t len;
	struct iw_mr *mr;
};

static struct mbuf mbuf_new(struct iw_pd *pd, size_t len, unsigned access)
{
	struct mbuf m = { .len = len };
	m.p = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(m.p);
	memset(m.p, 0, len);
	ck_assert_int_eq(iw_reg_mr(pd, m.p, len, access, &m.mr), 0);
	return m;
}

static void mbuf_free(struct mbuf *m)
{
	ck_assert_int_eq(iw_dereg_mr(m->mr), 0);
	free(m->p);
}

#define ACC_ALL (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ)

static struct iw_sge sge(const struct mbuf *m, size_t off, uint32_t len)
{
	struct iw_sge s = { .addr = va(m->p + off), .length = len, .lkey = iw_mr_stag(m->mr) };
	return s;
}

static int post_recv1(struct iw_qp *qp, uint64_t id, struct iw_sge *s, int n)
{
	struct iw_recv_wr wr = { .wr_id = id, .sg_list = s, .num_sge = n }, *bad;
	return iw_post_recv(qp, &wr, &bad);
}

static int post_send1(struct iw_qp *qp, uint64_t id, enum iw_wr_opcode op, struct iw_sge *s, int n,
		      unsigned flags, uint64_t raddr, uint32_t rkey)
{
	struct iw_send_wr wr = {
		.wr_id = id, .sg_list = s, .num_sge = n, .opcode = op, .send_flags = flags,
		.remote_addr = raddr, .rkey = rkey,
	}, *bad;
	return iw_post_send(qp, &wr, &bad);
}

static enum iw_stag_status lookup(struct iw_context *ctx, struct iw_pd *pd, uint32_t stag, uint64_t to,
				  size_t len, unsigned acc)
{
	uint8_t *addr;
	iw_ctx_lock(ctx);
	enum iw_stag_status st = iw_mr_lookup(ctx, pd, stag, to, len, acc, NULL, &addr);
	iw_ctx_unlock(ctx);
	return st;
}

static bool cause_is(struct iw_term_cause c, uint8_t l, uint8_t e, uint8_t code)
{
	return iw_term_cause_eq(c, IW_TERM_CAUSE(l, e, code));
}

/* ------------------------------------------------------------------ */
/* Lifecycles and refusals                                             */

START_TEST(context_lifecycle)
{
	struct iw_context *ctx;
	struct iw_context_attr bad = { .flags = 0x80 };
	ck_assert_int_eq(iw_context_create(&bad, &ctx), -EINVAL);
	struct iw_context_attr big = { .max_mr = 1u << 24 };
	ck_assert_int_eq(iw_context_create(&big, &ctx), -EINVAL);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_ge(iw_context_fd(ctx), 0);
	ck_assert_int_eq(iw_progress(ctx, 0), 0);
	ck_assert_int_eq(iw_progress(ctx, 5), 0); /* waits, nothing happens */

	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_comp_channel *ch;
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), -EBUSY);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_create_comp_channel(ctx, &ch), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), -EBUSY);
	ck_assert_int_eq(iw_create_cq(ctx, 0, ch, &cq), -EINVAL);
	ck_assert_int_eq(iw_create_cq(ctx, -1, ch, &cq), -EINVAL);
	ck_assert_int_eq(iw_create_cq(ctx, 8, ch, &cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), -EBUSY);
	struct iw_cq *got;
	ck_assert_int_eq(iw_get_cq_event(ch, &got), -EAGAIN);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 8, NULL, &cq), 0);
	ck_assert_int_eq(iw_req_notify_cq(cq, false), -EINVAL); /* no channel */
	ck_assert_int_eq(iw_context_destroy(ctx), -EBUSY);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* Busy polling: the attribute, else IWARP_BUSY_POLL_US (a whole decimal
 * number; anything else is ignored), capped at IW_BUSY_POLL_MAX_US. A
 * busy-polling context with nothing to do returns from a timed progress
 * call as before (the spin is bounded by the timeout). */
START_TEST(context_busy_poll)
{
	struct iw_context *ctx;
	struct iw_context_attr a = { .busy_poll_us = 5000000 };

	unsetenv("IWARP_BUSY_POLL_US");
	ck_assert_int_eq(iw_context_create(&a, &ctx), 0);
	ck_assert_uint_eq(ctx->busy_poll_us, IW_BUSY_POLL_MAX_US);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_uint_eq(ctx->busy_poll_us, 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);

	ck_assert_int_eq(setenv("IWARP_BUSY_POLL_US", "250", 1), 0);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_uint_eq(ctx->busy_poll_us, 250);
	ck_assert_int_eq(iw_progress(ctx, 0), 0);
	ck_assert_int_eq(iw_progress(ctx, 2), 0); /* spins, then waits: nothing happens */
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	a.busy_poll_us = 300; /* the attribute wins */
	ck_assert_int_eq(iw_context_create(&a, &ctx), 0);
	ck_assert_uint_eq(ctx->busy_poll_us, 300);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(setenv("IWARP_BUSY_POLL_US", "12x", 1), 0);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_uint_eq(ctx->busy_poll_us, 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	unsetenv("IWARP_BUSY_POLL_US");
}
END_TEST

static struct iw_timer timers[3];
static int timer_order[8], timer_n;

static void timer_cb(struct iw_timer *t)
{
	if (timer_n < 8)
		timer_order[timer_n++] = (int)(t - timers);
}

START_TEST(context_timers)
{
	struct iw_context *ctx;
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	memset(timers, 0, sizeof(timers));
	timer_n = 0;
	for (int i = 0; i < 3; i++)
		timers[i].cb = timer_cb;
	uint64_t start = iw_now_ms();
	iw_ctx_lock(ctx);
	iw_ctx_timer_arm(ctx, &timers[0], 60);
	iw_ctx_timer_arm(ctx, &timers[1], 20);
	iw_ctx_timer_arm(ctx, &timers[2], 40);
	iw_ctx_timer_cancel(ctx, &timers[2]);
	iw_ctx_unlock(ctx);
	/* A blocking progress wakes for the earliest deadline. */
	while (timer_n < 2 && iw_now_ms() - start < 5000)
		ck_assert_int_ge(iw_progress(ctx, -1), 0);
	ck_assert_int_eq(timer_n, 2);
	ck_assert_int_eq(timer_order[0], 1);
	ck_assert_int_eq(timer_order[1], 0);
	ck_assert_uint_ge(iw_now_ms() - start, 60);
	ck_assert(!timers[0].armed && !timers[1].armed && !timers[2].armed);

	/* The context fd turns readable when a timer is due. */
	iw_ctx_lock(ctx);
	iw_ctx_timer_arm(ctx, &timers[2], 10);
	iw_ctx_unlock(ctx);
	struct pollfd pfd = { .fd = iw_context_fd(ctx), .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	ck_assert_int_eq(iw_progress(ctx, 0), 1);
	ck_assert_int_eq(timer_n, 3);
	ck_assert_int_eq(timer_order[2], 2);
	pfd.revents = 0;
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

START_TEST(pd_mr_lifecycle)
{
	struct iw_context *ctx;
	struct iw_pd *pd1, *pd2;
	struct iw_mr *mr;
	uint8_t buf[256];
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd1), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd2), 0);
	ck_assert_uint_ne(pd1->handle, pd2->handle);

	ck_assert_int_eq(iw_reg_mr(pd1, buf, sizeof(buf), IW_ACCESS_REMOTE_WRITE, &mr), -EINVAL);
	ck_assert_int_eq(iw_reg_mr(pd1, buf, sizeof(buf), 0x40, &mr), -EINVAL);
	ck_assert_int_eq(iw_reg_mr(pd1, NULL, 16, 0, &mr), -EINVAL);
	ck_assert_int_eq(iw_reg_mr(pd1, (void *)(UINTPTR_MAX - 8), 64, 0, &mr), -EINVAL);
	ck_assert_int_eq(iw_reg_mr(pd1, buf, sizeof(buf), ACC_ALL, &mr), 0);
	ck_assert_ptr_eq(iw_mr_addr(mr), buf);
	ck_assert_uint_eq(iw_mr_length(mr), sizeof(buf));
	ck_assert_uint_ne(iw_mr_stag(mr) >> 8, 0);
	ck_assert_int_eq(iw_dealloc_pd(pd1), -EBUSY);
	ck_assert_int_eq(iw_rereg_mr(mr, buf, 16, IW_ACCESS_REMOTE_WRITE), -EINVAL);

	/* Regions in use by posted WRs cannot go. */
	mr->in_use = 1;
	ck_assert_int_eq(iw_dereg_mr(mr), -EBUSY);
	ck_assert_int_eq(iw_rereg_mr(mr, buf, 16, 0), -EBUSY);
	mr->in_use = 0;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd1), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

START_TEST(mr_limit)
{
	struct iw_context_attr ca = { .max_mr = 3 };
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_mr *mr[4];
	uint8_t buf[64];
	ck_assert_int_eq(iw_context_create(&ca, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), 0, &mr[i]), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), 0, &mr[3]), -ENOSPC);
	uint32_t old = iw_mr_stag(mr[1]);
	ck_assert_int_eq(iw_dereg_mr(mr[1]), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), 0, &mr[1]), 0);
	/* The freed index is reused first, with another key. */
	ck_assert_uint_eq(iw_mr_stag(mr[1]) >> 8, old >> 8);
	ck_assert_uint_ne(iw_mr_stag(mr[1]), old);
	ck_assert_int_eq(lookup(ctx, pd, old, va(buf), 1, 0), IW_STAG_INVALID);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

START_TEST(stag_keys)
{
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	uint8_t buf[64];
	bool seen[256] = { false };
	unsigned distinct = 0;
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), 0, &mr), 0);
	uint32_t prev = iw_mr_stag(mr);
	for (int i = 0; i < 400; i++) {
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
		ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), 0, &mr), 0);
		uint32_t s = iw_mr_stag(mr);
		ck_assert_uint_eq(s >> 8, prev >> 8);
		ck_assert_uint_ne(s & 0xFF, prev & 0xFF);
		if (!seen[s & 0xFF]) {
			seen[s & 0xFF] = true;
			distinct++;
		}
		prev = s;
	}
	/* Random keys cover most of the space in 400 draws (expected ~202). */
	ck_assert_uint_gt(distinct, 150);

	/* Re-registration changes the key: the old STag stops matching. */
	for (int i = 0; i < 50; i++) {
		uint32_t old = iw_mr_stag(mr);
		ck_assert_int_eq(iw_rereg_mr(mr, buf + 8, 32, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_READ), 0);
		ck_assert_uint_ne(iw_mr_stag(mr), old);
		ck_assert_uint_eq(iw_mr_stag(mr) >> 8, old >> 8);
		ck_assert_int_eq(lookup(ctx, pd, old, va(buf + 8), 4, 0), IW_STAG_INVALID);
		ck_assert_int_eq(lookup(ctx, pd, iw_mr_stag(mr), va(buf + 8), 32, IW_RDMAP_ACC_REMOTE_READ),
				 IW_STAG_OK);
		ck_assert_int_eq(lookup(ctx, pd, iw_mr_stag(mr), va(buf), 4, 0), IW_STAG_BOUNDS);
	}
	ck_assert_ptr_eq(iw_mr_addr(mr), buf + 8);
	ck_assert_uint_eq(iw_mr_length(mr), 32);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

START_TEST(stag_lookups)
{
	struct iw_context *ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *ro, *rw, *lw;
	uint8_t *buf = malloc(4096);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd2), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, 1024, IW_ACCESS_REMOTE_READ, &ro), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf + 1024, 1024, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &rw), 0);
	ck_assert_int_eq(iw_reg_mr(pd2, buf + 2048, 1024, IW_ACCESS_LOCAL_WRITE, &lw), 0);
	uint32_t s_ro = iw_mr_stag(ro), s_rw = iw_mr_stag(rw), s_lw = iw_mr_stag(lw);
	uint64_t b = va(buf);

	/* bounds */
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b, 1024, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_OK);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b + 1023, 1, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_OK);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b - 1, 2, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_BOUNDS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b + 1, 1024, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_BOUNDS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b + 1024, 1, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_BOUNDS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, UINT64_MAX - 2, 8, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_BOUNDS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b + 16, SIZE_MAX, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_BOUNDS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b + 1024, 0, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_OK);
	/* access */
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b, 8, IW_RDMAP_ACC_REMOTE_WRITE), IW_STAG_ACCESS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b, 8, IW_RDMAP_ACC_LOCAL_WRITE), IW_STAG_ACCESS);
	ck_assert_int_eq(lookup(ctx, pd, s_ro, b, 8, 0), IW_STAG_OK); /* local read: always */
	ck_assert_int_eq(lookup(ctx, pd, s_rw, b + 1024, 8, IW_RDMAP_ACC_REMOTE_WRITE), IW_STAG_OK);
	ck_assert_int_eq(lookup(ctx, pd, s_rw, b + 1024, 8, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_ACCESS);
	ck_assert_int_eq(lookup(ctx, pd, s_rw, b + 1024, 0, IW_RDMAP_ACC_REMOTE_READ), IW_STAG_OK);
	/* PD */
	ck_assert_int_eq(lookup(ctx, pd, s_lw, b + 2048, 8, IW_RDMAP_ACC_LOCAL_WRITE), IW_STAG_NOT_ASSOC);
	ck_assert_int_eq(lookup(ctx, pd2, s_lw, b + 2048, 8, IW_RDMAP_ACC_LOCAL_WRITE), IW_STAG_OK);
	ck_assert_int_eq(lookup(ctx, pd2, s_ro, b, 0, 0), IW_STAG_NOT_ASSOC);
	/* key / index */
	ck_assert_int_eq(lookup(ctx, pd, s_ro ^ 0x01, b, 8, 0), IW_STAG_INVALID);
	ck_assert_int_eq(lookup(ctx, pd, s_ro & 0xFF, b, 8, 0), IW_STAG_INVALID);
	ck_assert_int_eq(lookup(ctx, pd, 0xFFFFFF00u | (s_ro & 0xFF), b, 8, 0), IW_STAG_INVALID);
	/* invalidation */
	iw_ctx_lock(ctx);
	ck_assert_int_eq(iw_mr_invalidate(ctx, pd2, s_rw), -1);
	ck_assert_int_eq(iw_mr_invalidate(ctx, pd, s_rw ^ 0x80), -1);
	ck_assert_int_eq(iw_mr_invalidate(ctx, pd, s_rw), 0);
	ck_assert_int_eq(iw_mr_invalidate(ctx, pd, s_rw), -1);
	iw_ctx_unlock(ctx);
	ck_assert_int_eq(lookup(ctx, pd, s_rw, b + 1024, 8, IW_RDMAP_ACC_REMOTE_WRITE), IW_STAG_INVALID);
	ck_assert_int_eq(lookup(ctx, pd, s_rw, b + 1024, 0, 0), IW_STAG_INVALID);
	/* re-registration validates it again under a new key */
	ck_assert_int_eq(iw_rereg_mr(rw, buf + 1024, 1024, IW_ACCESS_LOCAL_WRITE), 0);
	ck_assert_int_eq(lookup(ctx, pd, iw_mr_stag(rw), b + 1024, 8, IW_RDMAP_ACC_LOCAL_WRITE), IW_STAG_OK);

	ck_assert_int_eq(iw_dereg_mr(ro), 0);
	ck_assert_int_eq(iw_dereg_mr(rw), 0);
	ck_assert_int_eq(iw_dereg_mr(lw), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	free(buf);
}
END_TEST

START_TEST(qp_lifecycle)
{
	struct iw_context_attr ca = { .max_qp = 2 };
	struct iw_context *ctx, *ctx2;
	struct iw_pd *pd, *pd2;
	struct iw_cq *cq, *cq_other;
	struct iw_srq *srq, *srq2;
	struct iw_qp *qp, *qp2, *qp3;
	ck_assert_int_eq(iw_context_create(&ca, &ctx), 0);
	ck_assert_int_eq(iw_context_create(NULL, &ctx2), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd2), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 16, NULL, &cq), 0);
	ck_assert_int_eq(iw_create_cq(ctx2, 16, NULL, &cq_other), 0);

	struct iw_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_context = &ca };
	struct iw_qp_init_attr bad = a;
	bad.recv_cq = NULL;
	ck_assert_int_eq(iw_create_qp(pd, &bad, &qp), -EINVAL);
	bad = a;
	bad.send_cq = cq_other;
	ck_assert_int_eq(iw_create_qp(pd, &bad, &qp), -EINVAL);
	const struct iw_qp_cap caps[] = {
		{ .max_send_wr = IW_MAX_WR + 1 },  { .max_recv_wr = IW_MAX_WR + 1 },
		{ .max_send_sge = 17 },            { .max_recv_sge = 33 },
		{ .max_inline_data = 4097 },
	};
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		bad = a;
		bad.cap = caps[i];
		ck_assert_int_eq(iw_create_qp(pd, &bad, &qp), -EINVAL);
	}
	/* the limits themselves are accepted */
	bad = a;
	bad.cap = (struct iw_qp_cap){ 16, 16, 16, 32, 4096 };
	ck_assert_int_eq(iw_create_qp(pd, &bad, &qp), 0);
	ck_assert_uint_eq(qp->cap.max_inline_data, 4096);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);

	ck_assert_int_eq(iw_create_qp(pd, &a, &qp), 0);
	ck_assert_uint_eq(qp->cap.max_send_wr, 128);
	ck_assert_uint_eq(qp->cap.max_recv_wr, 128);
	ck_assert_uint_eq(qp->cap.max_send_sge, 4);
	ck_assert_uint_eq(qp->cap.max_recv_sge, 4);
	ck_assert_uint_eq(qp->cap.max_inline_data, 64);
	ck_assert_ptr_eq(iw_qp_context(qp), &ca);
	ck_assert_int_eq(iw_qp_state(qp), IW_QPS_INIT);
	ck_assert(iw_term_cause_eq(iw_qp_error(qp), IW_TERM_CAUSE_NONE)); /* healthy: no cause */

	/* SRQ: same PD only; busy while used */
	struct iw_srq_init_attr sa = { .max_wr = IW_MAX_WR + 1 };
	ck_assert_int_eq(iw_create_srq(pd, &sa, &srq), -EINVAL);
	sa = (struct iw_srq_init_attr){ .max_wr = 8, .max_sge = 33 };
	ck_assert_int_eq(iw_create_srq(pd, &sa, &srq), -EINVAL);
	sa.max_sge = 2;
	ck_assert_int_eq(iw_create_srq(pd, &sa, &srq), 0);
	ck_assert_int_eq(iw_create_srq(pd2, &sa, &srq2), 0);
	bad = a;
	bad.srq = srq2;
	ck_assert_int_eq(iw_create_qp(pd, &bad, &qp2), -EINVAL);
	bad.srq = srq;
	ck_assert_int_eq(iw_create_qp(pd, &bad, &qp2), 0);
	ck_assert_int_eq(iw_create_qp(pd, &a, &qp3), -ENOSPC); /* max_qp = 2 */
	ck_assert_int_eq(iw_destroy_srq(srq), -EBUSY);
	ck_assert_int_eq(iw_destroy_cq(cq), -EBUSY);
	ck_assert_int_eq(iw_dealloc_pd(pd), -EBUSY);

	/* Sends need a connection; receives with an SRQ go to the SRQ. */
	uint8_t buf[64];
	struct iw_mr *mr;
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), ACC_ALL, &mr), 0);
	struct iw_sge s = { va(buf), 8, iw_mr_stag(mr) };
	struct iw_send_wr swr = { .sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND }, *sbad = NULL;
	ck_assert_int_eq(iw_post_send(qp, &swr, &sbad), -EPIPE);
	ck_assert_ptr_eq(sbad, &swr);
	struct iw_recv_wr rwr = { .sg_list = &s, .num_sge = 1 }, *rbad = NULL;
	ck_assert_int_eq(iw_post_recv(qp2, &rwr, &rbad), -EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);
	ck_assert_int_eq(iw_post_srq_recv(srq, &rwr, &rbad), 0);
	ck_assert_ptr_null(rbad);
	ck_assert_int_eq(iw_post_recv(qp, &rwr, &rbad), 0); /* before connecting: fine */
	ck_assert_uint_eq(mr->in_use, 2);
	ck_assert_int_eq(iw_dereg_mr(mr), -EBUSY);

	ck_assert_int_eq(iw_destroy_qp(qp2), 0);
	ck_assert_int_eq(iw_destroy_srq(srq), 0); /* drops its receive */
	ck_assert_int_eq(iw_destroy_srq(srq2), 0);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);   /* drops its receive, releases mr */
	ck_assert_uint_eq(mr->in_use, 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_cq(cq_other), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(iw_context_destroy(ctx2), 0);
}
END_TEST

START_TEST(post_recv_validation)
{
	struct pair p;
	struct iw_qp_cap cap = { .max_recv_wr = 4, .max_recv_sge = 2 };
	pair_objects(&p, 0, 64, &cap, true);
	struct iw_pd *pd2;
	ck_assert_int_eq(iw_alloc_pd(p.ctx, &pd2), 0);
	struct mbuf ok = mbuf_new(p.pd, 256, IW_ACCESS_LOCAL_WRITE);
	struct mbuf ro = mbuf_new(p.pd, 256, IW_ACCESS_REMOTE_READ);
	struct mbuf other = mbuf_new(pd2, 256, IW_ACCESS_LOCAL_WRITE);
	struct iw_sge good = sge(&ok, 0, 64);

	struct iw_sge bads[][1] = {
		{ { va(ok.p), 64, iw_mr_stag(ok.mr) ^ 0x1 } },     /* wrong key */
		{ { va(ok.p) + 200, 64, iw_mr_stag(ok.mr) } },     /* beyond the end */
		{ { va(ok.p) - 1, 8, iw_mr_stag(ok.mr) } },        /* before the start */
		{ { va(ro.p), 64, iw_mr_stag(ro.mr) } },           /* no LOCAL_WRITE */
		{ { va(ro.p), 0, iw_mr_stag(ro.mr) } },            /* no LOCAL_WRITE, empty */
		{ { va(other.p), 64, iw_mr_stag(other.mr) } },     /* other PD */
	};
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct iw_recv_wr w2 = { .wr_id = 2, .sg_list = bads[i], .num_sge = 1 };
		struct iw_recv_wr w1 = { .wr_id = 1, .next = &w2, .sg_list = &good, .num_sge = 1 };
		struct iw_recv_wr *bad = NULL;
		ck_assert_int_eq(iw_post_recv(p.a, &w1, &bad), -EINVAL);
		ck_assert_ptr_eq(bad, &w2);
		ck_assert_uint_eq(p.a->rq.count, i + 1); /* w1 went in each time */
		if (i == 2)
			break;
	}
	struct iw_sge three[3] = { good, good, good };
	struct iw_recv_wr w = { .sg_list = three, .num_sge = 3 }, *bad;
	ck_assert_int_eq(iw_post_recv(p.a, &w, &bad), -EINVAL); /* max_recv_sge 2 */
	w.num_sge = -1;
	ck_assert_int_eq(iw_post_recv(p.a, &w, &bad), -EINVAL);
	w.num_sge = 0; /* an empty receive is fine (zero-length SEND) */
	ck_assert_int_eq(iw_post_recv(p.a, &w, &bad), 0);
	ck_assert_int_eq(iw_post_recv(p.a, &w, &bad), -ENOSPC); /* depth 4 */
	ck_assert_ptr_eq(bad, &w);
	ck_assert_uint_eq(ok.mr->in_use, 3);
	ck_assert_int_eq(iw_destroy_qp(p.a), 0);
	p.a = NULL;
	ck_assert_uint_eq(ok.mr->in_use, 0);

	/* the remaining refusals, on b */
	for (size_t i = 3; i < sizeof(bads) / sizeof(bads[0]); i++)
		ck_assert_int_eq(post_recv1(p.b, 9, bads[i], 1), -EINVAL);
	ck_assert_uint_eq(p.b->rq.count, 0);
	mbuf_free(&ok);
	mbuf_free(&ro);
	mbuf_free(&other);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	pair_fini(&p);
}
END_TEST

START_TEST(post_send_validation)
{
	struct pair p;
	struct iw_qp_cap cap = { .max_send_wr = 4, .max_send_sge = 2, .max_inline_data = 16 };
	struct iw_qp_conn_params cp = params(false, false, 0);
	pair_objects(&p, 0, 64, &cap, true);
	pair_connect(&p, &cp, NULL);
	struct iw_pd *pd2;
	ck_assert_int_eq(iw_alloc_pd(p.ctx, &pd2), 0);
	struct mbuf m = mbuf_new(p.pd, 256, ACC_ALL);
	struct mbuf ro = mbuf_new(p.pd, 256, IW_ACCESS_REMOTE_READ);
	struct mbuf other = mbuf_new(pd2, 256, ACC_ALL);
	struct iw_sge s1 = sge(&m, 0, 8), s3[3] = { s1, s1, s1 };
	struct iw_sge sbad_key = { va(m.p), 8, iw_mr_stag(m.mr) ^ 2 };
	struct iw_sge sbad_bounds = { va(m.p) + 250, 8, iw_mr_stag(m.mr) };
	struct iw_sge sother = sge(&other, 0, 8);
	struct iw_sge sro = sge(&ro, 0, 8);
	uint8_t big[32] = { 0 };
	struct iw_sge sinl = { va(big), 17, 0 };

	ck_assert_int_eq(post_send1(p.a, 1, (enum iw_wr_opcode)77, &s1, 1, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, &s1, 1, 0x100, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, s3, 3, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, &sbad_key, 1, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, &sbad_bounds, 1, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_WRITE, &sother, 1, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, s3, 2, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, &sro, 1, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, &s1, 1, IW_SEND_INLINE, 0, 0), -EINVAL);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, &sinl, 1, IW_SEND_INLINE, 0, 0), -EMSGSIZE);
	sinl.length = 16;
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_WRITE, &sinl, 1, IW_SEND_INLINE, va(m.p),
				    iw_mr_stag(m.mr)), 0);
	/* sources need no rights beyond existing; a READ-only region is fine */
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_RDMA_WRITE, &sro, 1, 0, va(m.p), iw_mr_stag(m.mr)), 0);
	ck_assert_uint_eq(ro.mr->in_use, 1);

	/* a chain stops at the first bad WR; SQ depth 4 */
	struct iw_send_wr w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct iw_send_wr){ .wr_id = 10 + i, .sg_list = &s1, .num_sge = 1,
					    .opcode = IW_WR_RDMA_WRITE, .remote_addr = va(m.p),
					    .rkey = iw_mr_stag(m.mr), .next = i < 3 ? &w[i + 1] : NULL };
	}
	struct iw_send_wr *bad = NULL;
	ck_assert_int_eq(iw_post_send(p.a, &w[0], &bad), -ENOSPC);
	ck_assert_ptr_eq(bad, &w[2]);
	struct iw_wc wc[8];
	expect_wc(p.ctx, p.cq_a, wc, 4);
	static const uint64_t ids[] = { 1, 2, 10, 11 };
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, ids[i]);
		ck_assert_int_eq(wc[i].opcode, IW_WC_RDMA_WRITE);
	}
	ck_assert_uint_eq(wc[0].byte_len, 16);
	ck_assert_uint_eq(ro.mr->in_use, 0);
	ck_assert_uint_eq(m.mr->in_use, 0);

	mbuf_free(&m);
	mbuf_free(&ro);
	mbuf_free(&other);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	pair_fini(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Data transfer                                                       */

/* _i: bit 0 CRC, bit 1 markers, bit 2 zero-copy receive with small chunks */
START_TEST(all_ops)
{
	bool crc = _i & 1, markers = _i & 2;
	struct iw_pipe_opts o = { .zerocopy = (_i & 4) != 0, .max_chunk = (_i & 4) ? 777 : 0 };
	struct iw_qp_conn_params cp = params(crc, markers, 0);
	struct pair p;
	pair_objects(&p, 0, 256, NULL, true);
	pair_connect(&p, &cp, &o);

	const size_t N = 1 << 20;
	struct mbuf sa = mbuf_new(p.pd, N, ACC_ALL), ra = mbuf_new(p.pd, N, ACC_ALL);
	struct mbuf sb = mbuf_new(p.pd, N, ACC_ALL), rb = mbuf_new(p.pd, N, ACC_ALL);
	struct mbuf inv = mbuf_new(p.pd, 64, ACC_ALL);
	iwt_fill_pattern(sa.p, N, 1);
	iwt_fill_pattern(sb.p, N, 2);
	struct iw_wc wc[16];

	/* SEND, three SGEs, into a receive of two SGEs */
	struct iw_sge ss[3] = { sge(&sa, 100, 3000), sge(&sa, 5000, 1), sge(&sa, 9000, 20000) };
	struct iw_sge rs[2] = { sge(&rb, 0, 10000), sge(&rb, 20000, 20000) };
	ck_assert_int_eq(post_recv1(p.b, 7, rs, 2), 0);
	struct pollfd pfd = { .fd = iw_context_fd(p.ctx), .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, ss, 3, 0, 0, 0), 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 1); /* deferred work wakes the context fd */
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_SEND);
	ck_assert_uint_eq(wc[0].byte_len, 23001);
	ck_assert_ptr_eq(wc[0].qp, p.a);
	expect_wc(p.ctx, p.cq_b, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);
	ck_assert_uint_eq(wc[0].wr_id, 7);
	ck_assert_uint_eq(wc[0].byte_len, 23001);
	ck_assert_uint_eq(wc[0].flags, 0);
	ck_assert_ptr_eq(wc[0].qp, p.b);
	ck_assert_mem_eq(rb.p, sa.p + 100, 3000);
	ck_assert_mem_eq(rb.p + 3000, sa.p + 5000, 1);
	ck_assert_mem_eq(rb.p + 3001, sa.p + 9000, 6999);
	ck_assert_mem_eq(rb.p + 20000, sa.p + 9000 + 6999, 13001);

	/* inline SEND: the source may change right after posting */
	uint8_t tmp[40];
	memcpy(tmp, "inline data, copied at post time......!", 40);
	struct iw_sge is[2] = { { va(tmp), 10, 0xdead }, { va(tmp + 10), 30, 0 } };
	ck_assert_int_eq(post_recv1(p.b, 8, rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_SEND, is, 2, IW_SEND_INLINE | IW_SEND_SOLICITED, 0, 0), 0);
	memset(tmp, 'X', sizeof(tmp));
	expect_wc(p.ctx, p.cq_b, wc, 1);
	ck_assert_uint_eq(wc[0].byte_len, 40);
	ck_assert_uint_eq(wc[0].flags, IW_WC_SOLICITED);
	ck_assert_mem_eq(rb.p, "inline data, copied at post time......!", 40);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 2);

	/* SEND_WITH_SE and SEND_WITH_INV (b's region `inv` is invalidated) */
	struct iw_sge s16 = sge(&sa, 0, 16);
	ck_assert_int_eq(post_recv1(p.b, 9, rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 10, rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 11, rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 3, IW_WR_SEND_WITH_SE, &s16, 1, 0, 0, 0), 0);
	struct iw_send_wr w = { .wr_id = 4, .sg_list = &s16, .num_sge = 1, .opcode = IW_WR_SEND_WITH_INV,
				.invalidate_rkey = iw_mr_stag(inv.mr) }, *bad;
	ck_assert_int_eq(iw_post_send(p.a, &w, &bad), 0);
	w.wr_id = 5;
	w.opcode = IW_WR_SEND_WITH_SE_INV;
	expect_wc(p.ctx, p.cq_b, wc, 2);
	ck_assert_uint_eq(wc[0].flags, IW_WC_SOLICITED);
	ck_assert_uint_eq(wc[1].flags, IW_WC_WITH_INV);
	ck_assert_uint_eq(wc[1].invalidated_stag, iw_mr_stag(inv.mr));
	ck_assert_uint_eq(wc[1].byte_len, 16);
	ck_assert_int_eq(lookup(p.ctx, p.pd, iw_mr_stag(inv.mr), va(inv.p), 8, 0), IW_STAG_INVALID);
	ck_assert_int_eq(iw_rereg_mr(inv.mr, inv.p, 64, ACC_ALL), 0);
	w.invalidate_rkey = iw_mr_stag(inv.mr);
	ck_assert_int_eq(iw_post_send(p.a, &w, &bad), 0);
	expect_wc(p.ctx, p.cq_b, wc, 1);
	ck_assert_uint_eq(wc[0].flags, IW_WC_WITH_INV | IW_WC_SOLICITED);
	expect_wc(p.ctx, p.cq_a, wc, 3);

	/* RDMA WRITE, two SGEs */
	struct iw_sge ws[2] = { sge(&sa, 0, 70000), sge(&sa, 200000, 5) };
	ck_assert_int_eq(post_send1(p.a, 6, IW_WR_RDMA_WRITE, ws, 2, 0, va(rb.p) + 1000, iw_mr_stag(rb.mr)), 0);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RDMA_WRITE);
	ck_assert_uint_eq(wc[0].byte_len, 70005);
	ck_assert_mem_eq(rb.p + 1000, sa.p, 70000);
	ck_assert_mem_eq(rb.p + 71000, sa.p + 200000, 5);
	expect_wc(p.ctx, p.cq_b, wc, 0); /* WRITEs are silent at the target */

	/* RDMA READ of 1 MiB */
	struct iw_sge rd = sge(&ra, 0, (uint32_t)N);
	ck_assert_int_eq(post_send1(p.a, 7, IW_WR_RDMA_READ, &rd, 1, 0, va(sb.p), iw_mr_stag(sb.mr)), 0);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc[0].byte_len, N);
	ck_assert_uint_eq(iwt_check_pattern(ra.p, N, 2), N);

	/* zero-length SEND, WRITE (any rkey), READ (no SGE, and one empty SGE) */
	ck_assert_int_eq(post_recv1(p.b, 12, NULL, 0), 0);
	ck_assert_int_eq(post_send1(p.a, 8, IW_WR_SEND, NULL, 0, 0, 0, 0), 0);
	ck_assert_int_eq(post_send1(p.a, 9, IW_WR_RDMA_WRITE, NULL, 0, 0, 0, 0x12345678), 0);
	ck_assert_int_eq(post_send1(p.a, 10, IW_WR_RDMA_READ, NULL, 0, 0, 0, 0x12345678), 0);
	struct iw_sge empty = sge(&ra, 0, 0);
	ck_assert_int_eq(post_send1(p.a, 11, IW_WR_RDMA_READ, &empty, 1, 0, va(sb.p), iw_mr_stag(sb.mr)), 0);
	expect_wc(p.ctx, p.cq_a, wc, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].byte_len, 0);
		ck_assert_uint_eq(wc[i].wr_id, 8 + (uint64_t)i);
	}
	expect_wc(p.ctx, p.cq_b, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 12);
	ck_assert_uint_eq(wc[0].byte_len, 0);

	/* and the other direction, b -> a */
	struct iw_sge bs = sge(&sb, 0, 5000), ar = sge(&ra, 0, 5000);
	ck_assert_int_eq(post_recv1(p.a, 13, &ar, 1), 0);
	ck_assert_int_eq(post_send1(p.b, 14, IW_WR_SEND, &bs, 1, 0, 0, 0), 0);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 13);
	ck_assert_uint_eq(iwt_check_pattern(ra.p, 5000, 2), 5000);
	expect_wc(p.ctx, p.cq_b, wc, 1);

	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_RTS);
	struct iw_qp_stats st;
	iw_qp_get_stats(p.a, &st);
	ck_assert_uint_gt(st.fpdus_tx, 0);
	ck_assert_uint_gt(st.fpdus_rx, 700); /* 1 MiB of read responses */
	ck_assert_uint_gt(st.bytes_rx, N);
	ck_assert_uint_gt(st.bytes_placed, N);
	ck_assert_uint_gt(st.tx_syscalls, 0);
	ck_assert_uint_gt(st.rx_syscalls, 0);
	for (struct mbuf *m = &sa; m; m = m == &sa ? &ra : m == &ra ? &sb : m == &sb ? &rb : NULL)
		ck_assert_uint_eq(m->mr->in_use, 0);
	mbuf_free(&sa);
	mbuf_free(&ra);
	mbuf_free(&sb);
	mbuf_free(&rb);
	mbuf_free(&inv);
	pair_fini(&p);
}
END_TEST

/* 16 MiB each way with large FPDUs, CRC on. */
START_TEST(big_read_write)
{
	struct iw_qp_conn_params cp = params(true, _i != 0, 65000);
	struct pair p;
	pair_objects(&p, 0, 16, NULL, true);
	pair_connect(&p, &cp, NULL);
	const size_t N = 16u << 20;
	struct mbuf x = mbuf_new(p.pd, N, ACC_ALL), y = mbuf_new(p.pd, N, ACC_ALL);
	iwt_fill_pattern(y.p, N, 33);
	struct iw_wc wc[2];
	struct iw_sge s = sge(&x, 0, (uint32_t)N);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, &s, 1, 0, va(y.p), iw_mr_stag(y.mr)), 0);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].byte_len, N);
	ck_assert_uint_eq(iwt_check_pattern(x.p, N, 33), N);
	iwt_fill_pattern(x.p, N, 34);
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_RDMA_WRITE, &s, 1, 0, va(y.p), iw_mr_stag(y.mr)), 0);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_uint_eq(iwt_check_pattern(y.p, N, 34), N);
	mbuf_free(&x);
	mbuf_free(&y);
	pair_fini(&p);
}
END_TEST

START_TEST(unsignaled)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(true, false, 0);
	pair_objects(&p, 0, 64, NULL, false);
	pair_connect(&p, &cp, NULL);
	struct mbuf m = mbuf_new(p.pd, 4096, ACC_ALL), r = mbuf_new(p.pd, 4096, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 100), rs = sge(&r, 0, 4096);
	struct iw_wc wc[16];
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(post_recv1(p.b, 100 + (uint64_t)i, &rs, 1), 0);
		unsigned f = (i == 4 || i == 9) ? IW_SEND_SIGNALED : 0;
		ck_assert_int_eq(post_send1(p.a, (uint64_t)i, IW_WR_SEND, &s, 1, f, 0, 0), 0);
	}
	ck_assert_uint_eq(m.mr->in_use, 10);
	struct iw_sge rd = sge(&m, 0, 64);
	ck_assert_int_eq(post_send1(p.a, 10, IW_WR_RDMA_READ, &rd, 1, 0, va(r.p), iw_mr_stag(r.mr)), 0);
	expect_wc(p.ctx, p.cq_a, wc, 2);
	ck_assert_uint_eq(wc[0].wr_id, 4);
	ck_assert_uint_eq(wc[1].wr_id, 9);
	/* Receives always complete. */
	expect_wc(p.ctx, p.cq_b, wc, 10);
	ck_assert_uint_eq(m.mr->in_use, 0);
	ck_assert_uint_eq(r.mr->in_use, 0);
	mbuf_free(&m);
	mbuf_free(&r);
	pair_fini(&p);
}
END_TEST

/* A fenced SEND of a READ's sink carries what the READ brought. */
START_TEST(fence)
{
	struct pair p;
	pair_init(&p, false, false);
	const size_t N = 300000;
	struct mbuf x = mbuf_new(p.pd, N, ACC_ALL), y = mbuf_new(p.pd, N, ACC_ALL);
	struct mbuf r = mbuf_new(p.pd, N, ACC_ALL);
	struct iw_wc wc[4];
	for (int fenced = 1; fenced >= 0; fenced--) {
		memset(x.p, 'o', N); /* old content */
		iwt_fill_pattern(y.p, N, 40 + (uint32_t)fenced);
		struct iw_sge sx = sge(&x, 0, (uint32_t)N), rs = sge(&r, 0, (uint32_t)N);
		ck_assert_int_eq(post_recv1(p.b, 1, &rs, 1), 0);
		ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, &sx, 1, 0, va(y.p), iw_mr_stag(y.mr)), 0);
		ck_assert_int_eq(post_send1(p.a, 2, IW_WR_SEND, &sx, 1, fenced ? IW_SEND_FENCE : 0, 0, 0), 0);
		expect_wc(p.ctx, p.cq_a, wc, 2);
		ck_assert_uint_eq(wc[0].wr_id, 1);
		ck_assert_uint_eq(wc[1].wr_id, 2);
		expect_wc(p.ctx, p.cq_b, wc, 1);
		if (fenced)
			ck_assert_uint_eq(iwt_check_pattern(r.p, N, 41), N);
		else
			ck_assert_uint_eq(r.p[0], 'o'); /* went out before the response */
	}
	mbuf_free(&x);
	mbuf_free(&y);
	mbuf_free(&r);
	pair_fini(&p);
}
END_TEST

/* Three senders, one SRQ on the receiving side. */
START_TEST(srq_shared)
{
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cqs, *cqr;
	struct iw_srq *srq;
	struct iw_qp *snd[3], *rcv[3];
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 64, NULL, &cqs), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 64, NULL, &cqr), 0);
	struct iw_srq_init_attr sa = { .max_wr = 32, .max_sge = 1 };
	ck_assert_int_eq(iw_create_srq(pd, &sa, &srq), 0);
	struct iw_qp_conn_params cp = params(true, true, 0);
	for (int i = 0; i < 3; i++) {
		struct iw_qp_init_attr a = { .send_cq = cqs, .recv_cq = cqs, .sq_sig_all = true };
		ck_assert_int_eq(iw_create_qp(pd, &a, &snd[i]), 0);
		a = (struct iw_qp_init_attr){ .send_cq = cqr, .recv_cq = cqr, .srq = srq };
		ck_assert_int_eq(iw_create_qp(pd, &a, &rcv[i]), 0);
		/* small rings: the three messages interleave FPDU by FPDU */
		struct iw_pipe_opts o = { .buf_bytes = 3000 };
		ck_assert_int_eq(iw_pipe_connect_opts(snd[i], rcv[i], &cp, &o), 0);
	}
	const size_t L = 20000;
	struct mbuf src = mbuf_new(pd, 3 * L, ACC_ALL), dst = mbuf_new(pd, 12 * L, ACC_ALL);
	for (int i = 0; i < 3; i++)
		iwt_fill_pattern(src.p + i * L, L, 50 + (uint32_t)i);
	for (int k = 0; k < 12; k++) {
		struct iw_sge s = sge(&dst, (size_t)k * L, (uint32_t)L);
		struct iw_recv_wr w = { .wr_id = (uint64_t)k, .sg_list = &s, .num_sge = 1 }, *bad;
		ck_assert_int_eq(iw_post_srq_recv(srq, &w, &bad), 0);
	}
	/* Each message is many FPDUs; the pipes take turns. */
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 3; i++) {
			struct iw_sge s = sge(&src, (size_t)i * L, (uint32_t)(L - (size_t)round));
			ck_assert_int_eq(post_send1(snd[i], (uint64_t)(i * 10 + round), IW_WR_SEND, &s, 1, 0, 0, 0), 0);
		}
	/* A few rounds by hand: all three receivers are mid-message at once,
	 * each in its own SRQ entry. */
	iw_ctx_lock(ctx);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 3; i++)
			snd[i]->transport->ops->kick(snd[i]->transport);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_eq(rcv[i]->rx_cur, &rcv[i]->rx_slot);
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(rcv[i]->rx_slot.wr_id, rcv[j]->rx_slot.wr_id);
	}
	ck_assert_uint_eq(srq->rq.count, 9);
	iw_ctx_unlock(ctx);
	struct iw_wc wc[16];
	expect_wc(ctx, cqs, wc, 9);
	expect_wc(ctx, cqr, wc, 9);
	bool used[12] = { false };
	for (int n = 0; n < 9; n++) {
		ck_assert_int_eq(wc[n].status, IW_WC_SUCCESS);
		int i = -1;
		for (int q = 0; q < 3; q++)
			if (wc[n].qp == rcv[q])
				i = q;
		ck_assert_int_ge(i, 0);
		ck_assert(!used[wc[n].wr_id]);
		used[wc[n].wr_id] = true;
		ck_assert_uint_ge(wc[n].byte_len, L - 2);
		ck_assert_uint_eq(iwt_check_pattern(dst.p + wc[n].wr_id * L, wc[n].byte_len, 50 + (uint32_t)i),
				  wc[n].byte_len);
	}
	ck_assert_uint_eq(srq->rq.count, 3);
	ck_assert_uint_eq(dst.mr->in_use, 3);
	ck_assert_int_eq(iw_destroy_srq(srq), -EBUSY);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(iw_destroy_qp(snd[i]), 0);
		ck_assert_int_eq(iw_destroy_qp(rcv[i]), 0);
	}
	pump(ctx);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	ck_assert_uint_eq(dst.mr->in_use, 0);
	mbuf_free(&src);
	mbuf_free(&dst);
	ck_assert_int_eq(iw_destroy_cq(cqs), 0);
	ck_assert_int_eq(iw_destroy_cq(cqr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

START_TEST(cq_notify)
{
	struct pair p;
	struct iw_comp_channel *ch;
	struct iw_qp_conn_params cp = params(false, false, 0);
	pair_objects2(&p, 0, 64, 64, &ch, NULL, true);
	pair_connect(&p, &cp, NULL);
	int fd = iw_comp_channel_fd(ch);
	struct mbuf m = mbuf_new(p.pd, 4096, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 64), r = sge(&m, 1024, 1024);
	struct iw_wc wc[4];
	struct iw_cq *got;

	ck_assert(!readable(fd));
	/* both CQs armed: they fire in completion order, once each */
	ck_assert_int_eq(iw_req_notify_cq(p.cq_a, false), 0);
	ck_assert_int_eq(iw_req_notify_cq(p.cq_b, false), 0);
	ck_assert_int_eq(post_recv1(p.b, 1, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(post_recv1(p.b, 3, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 4, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	pump(p.ctx);
	ck_assert(readable(fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got), 0);
	ck_assert_ptr_eq(got, p.cq_a);
	ck_assert(readable(fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got), 0);
	ck_assert_ptr_eq(got, p.cq_b);
	ck_assert_int_eq(iw_get_cq_event(ch, &got), -EAGAIN);
	ck_assert(!readable(fd));
	ck_assert_int_eq(iw_poll_cq(p.cq_a, 4, wc), 2);
	ck_assert_int_eq(iw_poll_cq(p.cq_b, 4, wc), 2);

	/* not armed: no event */
	ck_assert_int_eq(post_recv1(p.b, 5, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 6, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	pump(p.ctx);
	ck_assert(!readable(fd));
	ck_assert_int_eq(iw_poll_cq(p.cq_b, 4, wc), 1);
	ck_assert_int_eq(iw_poll_cq(p.cq_a, 4, wc), 1);

	/* solicited only: a plain SEND does not fire, one with SE does */
	ck_assert_int_eq(iw_req_notify_cq(p.cq_b, true), 0);
	ck_assert_int_eq(post_recv1(p.b, 7, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 8, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	pump(p.ctx);
	ck_assert(!readable(fd));
	ck_assert_int_eq(post_recv1(p.b, 9, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 10, IW_WR_SEND, &s, 1, IW_SEND_SOLICITED, 0, 0), 0);
	pump(p.ctx);
	ck_assert(readable(fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got), 0);
	ck_assert_ptr_eq(got, p.cq_b);
	ck_assert_int_eq(iw_poll_cq(p.cq_b, 4, wc), 2);
	ck_assert_uint_eq(wc[1].flags, IW_WC_SOLICITED);
	ck_assert_int_eq(iw_poll_cq(p.cq_a, 4, wc), 2);

	/* solicited only fires on an error completion too */
	ck_assert_int_eq(iw_req_notify_cq(p.cq_b, true), 0);
	ck_assert_int_eq(post_recv1(p.b, 11, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 12, IW_WR_RDMA_WRITE, &s, 1, 0, va(m.p), iw_mr_stag(m.mr) ^ 0x10), 0);
	pump(p.ctx);
	ck_assert(readable(fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got), 0);
	ck_assert_int_eq(iw_poll_cq(p.cq_b, 4, wc), 1);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[0].wr_id, 11);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), -EBUSY);
	mbuf_free(&m);
	pair_fini(&p);
}
END_TEST

START_TEST(cq_overflow)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(true, false, 0);
	pair_objects2(&p, 0, 4, 64, NULL, NULL, true);
	pair_connect(&p, &cp, NULL);
	struct mbuf m = mbuf_new(p.pd, 4096, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 64), r = sge(&m, 1024, 1024);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(post_recv1(p.b, 100 + (uint64_t)i, &r, 1), 0);
		ck_assert_int_eq(post_send1(p.a, (uint64_t)i, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	}
	struct iw_wc wc[16];
	pump(p.ctx);
	ck_assert_int_eq(iw_poll_cq(p.cq_a, 16, wc), 5);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
	}
	/* the marker: first lost WR, how many were lost */
	ck_assert_int_eq(wc[4].status, IW_WC_FATAL_ERR);
	ck_assert_uint_eq(wc[4].wr_id, 4);
	ck_assert_uint_eq(wc[4].byte_len, 4);
	ck_assert_ptr_eq(wc[4].qp, p.a);
	ck_assert(!p.cq_a->overflow);
	ck_assert_uint_eq(p.cq_a->lost, 4);
	ck_assert_int_eq(iw_poll_cq(p.cq_a, 16, wc), 0);
	/* the QP that lost completions stopped, and told its peer */
	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_ERROR);
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_ERROR);
	ck_assert(cause_is(p.b->error, 0, 0, 0));
	/* (0,0,0) is a real cause here, not "no cause" (issue 17) */
	ck_assert(iw_term_cause_is_set(iw_qp_error(p.a)));
	ck_assert(cause_is(iw_qp_error(p.a), 0, 0, 0));
	ck_assert(cause_is(iw_qp_error(p.b), 0, 0, 0));
	ck_assert_int_eq(iw_poll_cq(p.cq_b, 16, wc), 8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
	ck_assert_uint_eq(m.mr->in_use, 0);
	mbuf_free(&m);
	pair_fini(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors, Terminates, flushing                                        */

static int count_id(const struct iw_wc *wc, int n, uint64_t id)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		k += wc[i].wr_id == id;
	return k;
}

static const struct iw_wc *find_id(const struct iw_wc *wc, int n, uint64_t id)
{
	for (int i = 0; i < n; i++)
		if (wc[i].wr_id == id)
			return &wc[i];
	return NULL;
}

/* A WRITE to a bad STag. _i 0: small (already completed when the
 * Terminate comes back); 1: larger than the pipe (still outstanding). */
START_TEST(write_bad_stag)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(true, false, 0);
	struct iw_pipe_opts o = { .buf_bytes = 65536 };
	pair_objects(&p, 0, 64, NULL, true);
	pair_connect(&p, &cp, &o);
	const size_t N = _i ? 1 << 20 : 100;
	struct mbuf m = mbuf_new(p.pd, N, ACC_ALL), r = mbuf_new(p.pd, 64, ACC_ALL);
	struct iw_sge s = sge(&m, 0, (uint32_t)N), rs = sge(&r, 0, 64);
	ck_assert_int_eq(post_recv1(p.a, 50, &rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 60, &rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_WRITE, &s, 1, 0, va(m.p), iw_mr_stag(m.mr) ^ 0x5500), 0);
	struct iw_wc wc[8];
	expect_wc(p.ctx, p.cq_a, wc, 2);
	const struct iw_wc *w = find_id(wc, 2, 1), *rcv = find_id(wc, 2, 50);
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(rcv);
	if (_i) {
		ck_assert_int_eq(w->status, IW_WC_REM_ACCESS_ERR);
		ck_assert(cause_is(w->cause, 1, 1, 0));
	} else {
		ck_assert_int_eq(w->status, IW_WC_SUCCESS);
	}
	ck_assert_int_eq(rcv->status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(rcv->opcode, IW_WC_RECV);
	ck_assert(cause_is(rcv->cause, 1, 1, 0));
	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_ERROR);
	ck_assert(cause_is(iw_qp_error(p.a), 1, 1, 0));
	/* the target detected it and is in ERROR too */
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_ERROR);
	ck_assert(cause_is(iw_qp_error(p.b), 1, 1, 0));
	expect_wc(p.ctx, p.cq_b, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 60);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert(cause_is(wc[0].cause, 1, 1, 0));
	/* nothing more can be posted */
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_SEND, &rs, 1, 0, 0, 0), -EPIPE);
	ck_assert_int_eq(post_send1(p.b, 2, IW_WR_SEND, &rs, 1, 0, 0, 0), -EPIPE);
	ck_assert_int_eq(post_recv1(p.a, 3, &rs, 1), -EPIPE);
	ck_assert_int_eq(post_recv1(p.b, 3, &rs, 1), -EPIPE);
	ck_assert_uint_eq(m.mr->in_use, 0);
	ck_assert_uint_eq(r.mr->in_use, 0);
	mbuf_free(&m);
	mbuf_free(&r);
	pair_fini(&p);
}
END_TEST

/* READ of a region without REMOTE_READ; everything outstanding flushes,
 * each WR exactly once, unsignaled ones included. */
START_TEST(read_no_access_and_flush)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(false, true, 0);
	pair_objects(&p, 0, 64, NULL, false);
	pair_connect(&p, &cp, NULL);
	struct mbuf x = mbuf_new(p.pd, 8192, ACC_ALL);
	struct mbuf y = mbuf_new(p.pd, 8192, IW_ACCESS_LOCAL_WRITE);
	struct iw_sge sx = sge(&x, 0, 4096), rs = sge(&x, 4096, 64);
	ck_assert_int_eq(post_recv1(p.a, 20, &rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.a, 21, &rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 30, &rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, &sx, 1, IW_SEND_SIGNALED, va(y.p), iw_mr_stag(y.mr)), 0);
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_SEND, &rs, 1, IW_SEND_FENCE, 0, 0), 0);
	ck_assert_int_eq(post_send1(p.a, 3, IW_WR_RDMA_WRITE, &rs, 1, IW_SEND_SIGNALED, va(y.p),
				    iw_mr_stag(y.mr)), 0);
	ck_assert_uint_eq(x.mr->in_use, 6);
	struct iw_wc wc[8];
	expect_wc(p.ctx, p.cq_a, wc, 5);
	for (uint64_t id = 1; id <= 3; id++)
		ck_assert_int_eq(count_id(wc, 5, id), 1);
	ck_assert_int_eq(count_id(wc, 5, 20), 1);
	ck_assert_int_eq(count_id(wc, 5, 21), 1);
	/* send WRs first, in order, then the receives */
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RDMA_READ);
	ck_assert(cause_is(wc[0].cause, 0, 1, 2));
	for (int i = 1; i < 5; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
		ck_assert(cause_is(wc[i].cause, 0, 1, 2));
	}
	ck_assert_int_eq(find_id(wc, 5, 2)->opcode, IW_WC_SEND);
	ck_assert_int_eq(find_id(wc, 5, 3)->opcode, IW_WC_RDMA_WRITE);
	ck_assert_int_eq(find_id(wc, 5, 20)->opcode, IW_WC_RECV);
	ck_assert(cause_is(iw_qp_error(p.a), 0, 1, 2));
	ck_assert(cause_is(iw_qp_error(p.b), 0, 1, 2));
	expect_wc(p.ctx, p.cq_b, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(x.mr->in_use, 0);
	ck_assert_uint_eq(y.mr->in_use, 0);
	mbuf_free(&x);
	mbuf_free(&y);
	pair_fini(&p);
}
END_TEST

/* A SEND longer than the receive buffer: the receiver's WR gets
 * LOC_LEN_ERR, the sender's (still outstanding) REM_INV_REQ_ERR. */
START_TEST(recv_too_small)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(true, true, 0);
	struct iw_pipe_opts o = { .buf_bytes = 65536 };
	pair_objects(&p, 0, 64, NULL, true);
	pair_connect(&p, &cp, &o);
	struct mbuf m = mbuf_new(p.pd, 300000, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 300000), rs = sge(&m, 0, 100);
	ck_assert_int_eq(post_recv1(p.b, 9, &rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 10, &rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	struct iw_wc wc[4];
	expect_wc(p.ctx, p.cq_b, wc, 2);
	ck_assert_uint_eq(wc[0].wr_id, 9);
	ck_assert_int_eq(wc[0].status, IW_WC_LOC_LEN_ERR);
	ck_assert(cause_is(wc[0].cause, 1, 2, 5));
	ck_assert_uint_eq(wc[1].wr_id, 10);
	ck_assert_int_eq(wc[1].status, IW_WC_WR_FLUSH_ERR);
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_REM_INV_REQ_ERR);
	ck_assert(cause_is(wc[0].cause, 1, 2, 5));
	ck_assert_uint_eq(m.mr->in_use, 0);
	mbuf_free(&m);
	pair_fini(&p);
}
END_TEST

/* No receive posted: (1,2,0x02) both sides. */
START_TEST(no_recv_posted)
{
	struct pair p;
	pair_init(&p, false, false);
	struct mbuf m = mbuf_new(p.pd, 64, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 10);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	struct iw_wc wc[2];
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS); /* it left before the Terminate came */
	expect_wc(p.ctx, p.cq_b, wc, 0);
	ck_assert(cause_is(iw_qp_error(p.a), 1, 2, 2));
	ck_assert(cause_is(iw_qp_error(p.b), 1, 2, 2));
	mbuf_free(&m);
	pair_fini(&p);
}
END_TEST

/* Graceful disconnect: both sides CLOSED, receives flushed, no cause. */
START_TEST(disconnect)
{
	struct pair p;
	pair_init(&p, true, false);
	struct mbuf m = mbuf_new(p.pd, 4096, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 64), r = sge(&m, 1024, 1024);
	ck_assert_int_eq(post_recv1(p.a, 1, &r, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 2, &r, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 3, &r, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 4, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	iw_ctx_lock(p.ctx);
	iw_qp_disconnect(p.a);
	iw_ctx_unlock(p.ctx);
	ck_assert_int_eq(post_send1(p.a, 5, IW_WR_SEND, &s, 1, 0, 0, 0), -EPIPE);
	struct iw_wc wc[4];
	expect_wc(p.ctx, p.cq_a, wc, 2);
	ck_assert_uint_eq(wc[0].wr_id, 4); /* drained first */
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc[1].wr_id, 1);
	ck_assert_int_eq(wc[1].status, IW_WC_WR_FLUSH_ERR);
	ck_assert(iw_term_cause_eq(wc[1].cause, IW_TERM_CAUSE_NONE)); /* clean close: no cause */
	expect_wc(p.ctx, p.cq_b, wc, 2);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IW_WC_WR_FLUSH_ERR);
	ck_assert(iw_term_cause_eq(wc[1].cause, IW_TERM_CAUSE_NONE)); /* clean close: no cause */
	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_CLOSED);
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_CLOSED);
	ck_assert(!p.a->linger.armed);
	mbuf_free(&m);
	pair_fini(&p);
}
END_TEST

/* A disconnect that cannot drain before the deadline is aborted: the
 * READ still running is flushed, the peer sees the stream reset. */
START_TEST(disconnect_linger)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(false, false, 0);
	struct iw_pipe_opts o = { .buf_bytes = 4096 };
	pair_objects(&p, 0, 64, NULL, true);
	pair_connect(&p, &cp, &o);
	const size_t N = 16u << 20;
	struct mbuf x = mbuf_new(p.pd, N, ACC_ALL), y = mbuf_new(p.pd, N, ACC_ALL);
	struct iw_sge s = sge(&x, 0, (uint32_t)N);
	ck_assert_int_eq(post_send1(p.a, 1, IW_WR_RDMA_READ, &s, 1, 0, va(y.p), iw_mr_stag(y.mr)), 0);
	iw_ctx_lock(p.ctx);
	iw_qp_disconnect(p.a);
	ck_assert(p.a->linger.armed);
	p.a->linger_deadline = iw_now_ms(); /* as if the 3 s had passed */
	iw_ctx_unlock(p.ctx);
	struct pollfd pfd = { .fd = -1 };
	poll(&pfd, 0, 30); /* past the first drain check */
	struct iw_wc wc[2];
	expect_wc(p.ctx, p.cq_a, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_CLOSED);
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_ERROR);
	ck_assert(cause_is(iw_qp_error(p.b), 2, 0, 1));
	ck_assert_uint_eq(x.mr->in_use, 0);
	mbuf_free(&x);
	mbuf_free(&y);
	pair_fini(&p);
}
END_TEST

/* Destroying a QP mid-transfer: its WRs vanish silently (regions
 * released); the peer loses the stream (2,0,0x01): the WR in flight gets
 * FATAL_ERR, the rest FLUSH_ERR. */
START_TEST(destroy_mid_transfer)
{
	struct pair p;
	struct iw_qp_conn_params cp = params(false, false, 0);
	struct iw_pipe_opts o = { .buf_bytes = 4096 };
	pair_objects(&p, 0, 64, NULL, true);
	pair_connect(&p, &cp, &o);
	const size_t N = 1 << 20;
	struct mbuf m = mbuf_new(p.pd, N, ACC_ALL), r = mbuf_new(p.pd, N, ACC_ALL);
	struct iw_sge s = sge(&m, 0, (uint32_t)N), rs = sge(&r, 0, (uint32_t)N);
	ck_assert_int_eq(post_recv1(p.b, 1, &rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.b, 2, &rs, 1), 0);
	ck_assert_int_eq(post_recv1(p.a, 3, &rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 4, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(post_send1(p.a, 5, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	ck_assert_int_gt(iw_progress(p.ctx, 0), 0); /* part of the first message */
	struct iw_wc wc[4];
	ck_assert_int_eq(iw_poll_cq(p.cq_b, 4, wc), 0);
	ck_assert_ptr_nonnull(p.b->rx_cur);
	ck_assert_int_eq(iw_destroy_qp(p.b), 0);
	p.b = NULL;
	ck_assert_uint_eq(r.mr->in_use, 1); /* a's receive only */
	expect_wc(p.ctx, p.cq_a, wc, 3);
	ck_assert_uint_eq(wc[0].wr_id, 4);
	ck_assert_int_eq(wc[0].status, IW_WC_FATAL_ERR);
	ck_assert(cause_is(wc[0].cause, 2, 0, 1));
	ck_assert_uint_eq(wc[1].wr_id, 5);
	ck_assert_int_eq(wc[1].status, IW_WC_WR_FLUSH_ERR);
	ck_assert(cause_is(wc[1].cause, 2, 0, 1));
	ck_assert_uint_eq(wc[2].wr_id, 3);
	ck_assert_int_eq(wc[2].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(iw_qp_state(p.a), IW_QPS_ERROR);
	ck_assert(cause_is(iw_qp_error(p.a), 2, 0, 1));
	expect_wc(p.ctx, p.cq_b, wc, 0);
	ck_assert_uint_eq(m.mr->in_use, 0);
	ck_assert_uint_eq(r.mr->in_use, 0);
	mbuf_free(&m);
	mbuf_free(&r);
	pair_fini(&p);
}
END_TEST

/* Destroying a QP with WRs outstanding produces no completions. */
START_TEST(destroy_silent)
{
	struct pair p;
	pair_init(&p, false, false);
	struct mbuf m = mbuf_new(p.pd, 4096, ACC_ALL);
	struct iw_sge s = sge(&m, 0, 64);
	ck_assert_int_eq(post_recv1(p.a, 1, &s, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_RDMA_READ, &s, 1, 0, va(m.p), iw_mr_stag(m.mr)), 0);
	ck_assert_int_eq(post_send1(p.a, 3, IW_WR_SEND, &s, 1, 0, 0, 0), 0);
	ck_assert_uint_eq(m.mr->in_use, 3);
	ck_assert_int_eq(iw_destroy_qp(p.a), 0);
	p.a = NULL;
	ck_assert_uint_eq(m.mr->in_use, 0);
	struct iw_wc wc[4];
	expect_wc(p.ctx, p.cq_a, wc, 0);
	ck_assert_int_eq(iw_qp_state(p.b), IW_QPS_ERROR);
	mbuf_free(&m);
	pair_fini(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Progress thread                                                     */

static int wait_n(struct iw_comp_channel *ch, struct iw_cq *cq, struct iw_wc *wc, int n)
{
	int got = 0;
	for (int tries = 0; got < n && tries < 200; tries++) {
		ck_assert_int_eq(iw_req_notify_cq(cq, false), 0);
		got += iw_poll_cq(cq, n - got, wc + got); /* after arming: nothing slips by */
		if (got >= n)
			break;
		struct pollfd pfd = { .fd = iw_comp_channel_fd(ch), .events = POLLIN };
		if (poll(&pfd, 1, 100) == 1) {
			struct iw_cq *c;
			while (iw_get_cq_event(ch, &c) == 0)
				;
		}
	}
	return got;
}

START_TEST(progress_thread)
{
	struct pair p;
	struct iw_comp_channel *ch;
	struct iw_qp_conn_params cp = params(true, false, 0);
	pair_objects2(&p, IW_CTX_PROGRESS_THREAD, 64, 64, &ch, NULL, true);
	pair_connect(&p, &cp, NULL);
	const size_t N = 1 << 20;
	struct mbuf x = mbuf_new(p.pd, N, ACC_ALL), y = mbuf_new(p.pd, N, ACC_ALL);
	iwt_fill_pattern(y.p, N, 77);
	iwt_fill_pattern(x.p, 100000, 78);
	struct iw_sge rs = sge(&y, N - 200000, 200000), ss = sge(&x, 0, 100000), rd = sge(&x, 0, (uint32_t)N);
	ck_assert_int_eq(post_recv1(p.b, 1, &rs, 1), 0);
	ck_assert_int_eq(post_send1(p.a, 2, IW_WR_SEND, &ss, 1, 0, 0, 0), 0);
	ck_assert_int_eq(post_send1(p.a, 3, IW_WR_RDMA_READ, &rd, 1, IW_SEND_FENCE, va(y.p), iw_mr_stag(y.mr)), 0);
	struct iw_wc wc[4];
	ck_assert_int_eq(wait_n(ch, p.cq_a, wc, 2), 2);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc[1].byte_len, N);
	ck_assert_int_eq(wait_n(ch, p.cq_b, wc, 1), 1);
	ck_assert_uint_eq(wc[0].byte_len, 100000);
	/* b serves requests in stream order: the READ saw what the SEND
	 * placed into the region it reads */
	ck_assert_uint_eq(iwt_check_pattern(x.p, N - 200000, 77), N - 200000);
	ck_assert_uint_eq(iwt_check_pattern(x.p + N - 200000, 100000, 78), 100000);
	mbuf_free(&x);
	mbuf_free(&y);
	pair_fini(&p);
}
END_TEST

START_TEST(status_strings)
{
	const char *seen[16];
	for (int s = IW_WC_SUCCESS; s <= IW_WC_FATAL_ERR; s++) {
		seen[s] = iw_wc_status_str((enum iw_wc_status)s);
		ck_assert_ptr_nonnull(seen[s]);
		ck_assert_str_ne(seen[s], "unknown status");
		for (int t = 0; t < s; t++)
			ck_assert_str_ne(seen[s], seen[t]);
	}
	ck_assert_str_eq(iw_wc_status_str((enum iw_wc_status)99), "unknown status");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tl = tcase_create("objects");
	tcase_add_test(tl, context_lifecycle);
	tcase_add_test(tl, context_busy_poll);
	tcase_add_test(tl, context_timers);
	tcase_add_test(tl, pd_mr_lifecycle);
	tcase_add_test(tl, mr_limit);
	tcase_add_test(tl, stag_keys);
	tcase_add_test(tl, stag_lookups);
	tcase_add_test(tl, qp_lifecycle);
	tcase_add_test(tl, post_recv_validation);
	tcase_add_test(tl, post_send_validation);
	tcase_add_test(tl, status_strings);
	suite_add_tcase(s, tl);

	TCase *td = tcase_create("data");
	tcase_set_timeout(td, 60);
	tcase_add_loop_test(td, all_ops, 0, 8);
	tcase_add_loop_test(td, big_read_write, 0, 2);
	tcase_add_test(td, unsignaled);
	tcase_add_test(td, fence);
	tcase_add_test(td, srq_shared);
	tcase_add_test(td, cq_notify);
	tcase_add_test(td, cq_overflow);
	tcase_add_test(td, progress_thread);
	suite_add_tcase(s, td);

	TCase *te = tcase_create("errors");
	tcase_add_loop_test(te, write_bad_stag, 0, 2);
	tcase_add_test(te, read_no_access_and_flush);
	tcase_add_test(te, recv_too_small);
	tcase_add_test(te, no_recv_posted);
	tcase_add_test(te, disconnect);
	tcase_add_test(te, disconnect_linger);
	tcase_add_test(te, destroy_mid_transfer);
	tcase_add_test(te, destroy_silent);
	suite_add_tcase(s, te);
	return s;
}

int main(void)
{
	rng = iwt_seed();
	(void)rng;
	return iwt_run_suite(suite());
}
