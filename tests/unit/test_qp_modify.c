/* Additions the verbs ABI layer needs from libiwarp: iw_qp_to_error
 * (verbs' modify to ERR) flushes every outstanding WR with
 * IW_WC_WR_FLUSH_ERR on a connected and on a never-connected QP, resets
 * the connection (the peer's WRs flush too), and is idempotent; and a
 * completion channel whose fd the application made blocking still fires
 * and drains without ever blocking libiwarp. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_check.h"
#include "stack/internal.h"
#include "stack/transport/pipe/pipe_transport.h"

static void pump(struct iw_context *ctx)
{
	for (int i = 0; i < 1000; i++)
		if (iw_progress(ctx, 0) == 0 && i > 10)
			break;
}

struct fix {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_comp_channel *ch;
	struct iw_cq *cq_a, *cq_b;
	struct iw_qp *a, *b;
	struct iw_mr *mr;
	uint8_t buf[4096];
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(iw_context_create(NULL, &f->ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(f->ctx, &f->pd), 0);
	ck_assert_int_eq(iw_create_comp_channel(f->ctx, &f->ch), 0);
	ck_assert_int_eq(iw_create_cq(f->ctx, 64, f->ch, &f->cq_a), 0);
	ck_assert_int_eq(iw_create_cq(f->ctx, 64, f->ch, &f->cq_b), 0);
	struct iw_qp_init_attr qa = { .send_cq = f->cq_a, .recv_cq = f->cq_a, .sq_sig_all = true };
	ck_assert_int_eq(iw_create_qp(f->pd, &qa, &f->a), 0);
	qa.send_cq = qa.recv_cq = f->cq_b;
	ck_assert_int_eq(iw_create_qp(f->pd, &qa, &f->b), 0);
	ck_assert_int_eq(iw_reg_mr(f->pd, f->buf, sizeof(f->buf), IW_ACCESS_LOCAL_WRITE, &f->mr), 0);
}

static void fix_fini(struct fix *f)
{
	ck_assert_int_eq(iw_destroy_qp(f->a), 0);
	ck_assert_int_eq(iw_destroy_qp(f->b), 0);
	ck_assert_int_eq(iw_dereg_mr(f->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(f->cq_a), 0);
	ck_assert_int_eq(iw_destroy_cq(f->cq_b), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(f->ch), 0);
	ck_assert_int_eq(iw_dealloc_pd(f->pd), 0);
	ck_assert_int_eq(iw_context_destroy(f->ctx), 0);
}

static void post_recvs(struct fix *f, struct iw_qp *qp, int n, uint64_t first_id)
{
	for (int i = 0; i < n; i++) {
		struct iw_sge s = { .addr = (uintptr_t)f->buf, .length = 64, .lkey = iw_mr_stag(f->mr) };
		struct iw_recv_wr w = { .wr_id = first_id + (uint64_t)i, .sg_list = &s, .num_sge = 1 };
		ck_assert_int_eq(iw_post_recv(qp, &w, NULL), 0);
	}
}

static int poll_all(struct iw_cq *cq, struct iw_wc *wc, int max)
{
	int k = 0, r;
	while (k < max && (r = iw_poll_cq(cq, max - k, wc + k)) > 0)
		k += r;
	return k;
}

START_TEST(error_unconnected_flushes_receives)
{
	struct fix f;
	struct iw_wc wc[8];
	fix_init(&f);
	post_recvs(&f, f.a, 3, 10);
	ck_assert_int_eq(iw_qp_to_error(f.a), 0);
	ck_assert_int_eq(iw_qp_state(f.a), IW_QPS_ERROR);
	pump(f.ctx);
	ck_assert_int_eq(poll_all(f.cq_a, wc, 8), 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(wc[i].opcode, IW_WC_RECV);
		ck_assert_uint_eq(wc[i].wr_id, 10u + (unsigned)i); /* in posting order */
	}
	/* Idempotent: nothing more, no second flush. */
	ck_assert_int_eq(iw_qp_to_error(f.a), 0);
	pump(f.ctx);
	ck_assert_int_eq(poll_all(f.cq_a, wc, 8), 0);
	/* An errored QP takes no new work. */
	struct iw_sge s = { .addr = (uintptr_t)f.buf, .length = 8, .lkey = iw_mr_stag(f.mr) };
	struct iw_recv_wr w = { .wr_id = 99, .sg_list = &s, .num_sge = 1 };
	ck_assert_int_eq(iw_post_recv(f.a, &w, NULL), -EPIPE);
	ck_assert_int_eq(iw_qp_to_error(NULL), -EINVAL);
	fix_fini(&f);
}
END_TEST

START_TEST(error_connected_resets_both_sides)
{
	struct fix f;
	struct iw_wc wc[8];
	struct iw_qp_conn_params cp = { .ird = 16, .ord = 16, .mulpdu = 1442 };
	fix_init(&f);
	post_recvs(&f, f.a, 2, 20);
	post_recvs(&f, f.b, 2, 30);
	ck_assert_int_eq(iw_pipe_connect(f.a, f.b, &cp), 0);
	ck_assert_int_eq(iw_qp_state(f.a), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_to_error(f.a), 0);
	pump(f.ctx);
	ck_assert_int_eq(iw_qp_state(f.a), IW_QPS_ERROR);
	int n = poll_all(f.cq_a, wc, 8);
	ck_assert_int_eq(n, 2);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
	/* The peer saw the reset: its receives are flushed too. */
	ck_assert(iw_qp_state(f.b) == IW_QPS_ERROR || iw_qp_state(f.b) == IW_QPS_CLOSED);
	n = poll_all(f.cq_b, wc, 8);
	ck_assert_int_eq(n, 2);
	for (int i = 0; i < n; i++)
		ck_assert_int_ne(wc[i].status, IW_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

START_TEST(blocking_channel_fd)
{
	struct fix f;
	struct iw_wc wc[8];
	struct iw_cq *got;
	struct iw_qp_conn_params cp = { .ird = 16, .ord = 16, .mulpdu = 1442 };
	fix_init(&f);
	int fd = iw_comp_channel_fd(f.ch);
	int fl = fcntl(fd, F_GETFL);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK), 0);
	ck_assert_int_eq(iw_pipe_connect(f.a, f.b, &cp), 0);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(iw_req_notify_cq(f.cq_a, false), 0);
		ck_assert_int_eq(iw_req_notify_cq(f.cq_b, false), 0);
		post_recvs(&f, f.b, 1, 40);
		struct iw_sge s = { .addr = (uintptr_t)f.buf, .length = 16, .lkey = iw_mr_stag(f.mr) };
		struct iw_send_wr w = { .wr_id = 50, .sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND };
		ck_assert_int_eq(iw_post_send(f.a, &w, NULL), 0);
		pump(f.ctx);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 0), 1);
		/* Two CQs fired: two events, and the last get drains the fd
		 * (a blocking read there would hang this test). */
		ck_assert_int_eq(iw_get_cq_event(f.ch, &got), 0);
		ck_assert_int_eq(iw_get_cq_event(f.ch, &got), 0);
		ck_assert_int_eq(iw_get_cq_event(f.ch, &got), -EAGAIN);
		ck_assert_int_eq(poll(&p, 1, 0), 0);
		ck_assert_int_eq(poll_all(f.cq_a, wc, 8), 1);
		ck_assert_int_eq(poll_all(f.cq_b, wc, 8), 1);
	}
	/* A fired CQ destroyed before its event was fetched: the unqueue
	 * drains the blocking fd without hanging. */
	ck_assert_int_eq(iw_req_notify_cq(f.cq_b, false), 0);
	post_recvs(&f, f.b, 1, 60);
	struct iw_sge s = { .addr = (uintptr_t)f.buf, .length = 16, .lkey = iw_mr_stag(f.mr) };
	struct iw_send_wr w = { .wr_id = 61, .sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND };
	ck_assert_int_eq(iw_post_send(f.a, &w, NULL), 0);
	pump(f.ctx);
	ck_assert_int_eq(poll_all(f.cq_a, wc, 8), 1);
	ck_assert_int_eq(poll_all(f.cq_b, wc, 8), 1);
	ck_assert_int_eq(iw_destroy_qp(f.b), 0);
	ck_assert_int_eq(iw_destroy_cq(f.cq_b), 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	struct iw_qp_init_attr qa = { .send_cq = f.cq_a, .recv_cq = f.cq_a };
	ck_assert_int_eq(iw_create_cq(f.ctx, 8, f.ch, &f.cq_b), 0);
	ck_assert_int_eq(iw_create_qp(f.pd, &qa, &f.b), 0);
	fix_fini(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("qp_modify");
	TCase *t = tcase_create("abi_support");
	tcase_add_test(t, error_unconnected_flushes_receives);
	tcase_add_test(t, error_connected_resets_both_sides);
	tcase_add_test(t, blocking_channel_fd);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
