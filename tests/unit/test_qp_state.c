/* The QP state machine (stack/qp_state.c): the table's legal edges and
 * nothing else, refusal leaving the state alone, the public projection,
 * the debug line per transition, and the edges real QPs take over the
 * pipe transport (connect, disconnect, drain, moved to error from IDLE
 * and from CLOSING). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwt_check.h"
#include "stack/internal.h"
#include "stack/transport/pipe/pipe_transport.h"

#define N IW_QP_ST_COUNT

/* The edges the QP needs, written out independently of the table. */
static bool expected_edge(enum iw_qp_st from, enum iw_qp_st to)
{
	switch (from) {
	case IW_QP_ST_IDLE:
		return to == IW_QP_ST_RTS || to == IW_QP_ST_ERROR;
	case IW_QP_ST_RTS:
		return to == IW_QP_ST_CLOSING || to == IW_QP_ST_ERROR || to == IW_QP_ST_CLOSED;
	case IW_QP_ST_CLOSING:
		return to == IW_QP_ST_ERROR || to == IW_QP_ST_CLOSED;
	default:
		return false; /* ERROR and CLOSED are final */
	}
}

START_TEST(table_is_exactly_the_legal_edges)
{
	int legal = 0;
	for (int f = 0; f < N; f++)
		for (int t = 0; t < N; t++) {
			bool want = expected_edge((enum iw_qp_st)f, (enum iw_qp_st)t);
			ck_assert_msg(iw_qp_edge_legal((enum iw_qp_st)f, (enum iw_qp_st)t) == want, "%s -> %s",
				      iw_qp_st_name((enum iw_qp_st)f), iw_qp_st_name((enum iw_qp_st)t));
			legal += want;
		}
	ck_assert_int_eq(legal, 7);
	/* Out of range on either side is never an edge. */
	ck_assert(!iw_qp_edge_legal(IW_QP_ST_COUNT, IW_QP_ST_ERROR));
	ck_assert(!iw_qp_edge_legal(IW_QP_ST_IDLE, IW_QP_ST_COUNT));
	ck_assert(!iw_qp_edge_legal((enum iw_qp_st)-1, IW_QP_ST_RTS));
}
END_TEST

/* Every pair through iw_qp_transition: a legal edge moves, any other is
 * -EINVAL and the state stays. */
START_TEST(transition_moves_or_refuses)
{
	for (int f = 0; f < N; f++)
		for (int t = 0; t < N; t++) {
			struct iw_qp q;
			memset(&q, 0, sizeof(q));
			q.st = (enum iw_qp_st)f;
			ck_assert(iw_qp_may(&q, (enum iw_qp_st)t) == expected_edge((enum iw_qp_st)f, (enum iw_qp_st)t));
			int rc = iw_qp_transition(&q, (enum iw_qp_st)t, "test");
			if (expected_edge((enum iw_qp_st)f, (enum iw_qp_st)t)) {
				ck_assert_int_eq(rc, 0);
				ck_assert_int_eq(q.st, t);
			} else {
				ck_assert_int_eq(rc, -EINVAL);
				ck_assert_int_eq(q.st, f);
			}
		}
	struct iw_qp q;
	memset(&q, 0, sizeof(q));
	ck_assert_int_eq(iw_qp_transition(&q, IW_QP_ST_COUNT, "test"), -EINVAL);
	ck_assert_int_eq(q.st, IW_QP_ST_IDLE);
}
END_TEST

START_TEST(public_projection)
{
	ck_assert_int_eq(iw_qp_public_state(IW_QP_ST_IDLE), IW_QPS_INIT);
	ck_assert_int_eq(iw_qp_public_state(IW_QP_ST_RTS), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_public_state(IW_QP_ST_CLOSING), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_public_state(IW_QP_ST_ERROR), IW_QPS_ERROR);
	ck_assert_int_eq(iw_qp_public_state(IW_QP_ST_CLOSED), IW_QPS_CLOSED);
	for (int s = 0; s < N; s++)
		ck_assert_str_ne(iw_qp_st_name((enum iw_qp_st)s), "?");
	ck_assert_str_eq(iw_qp_st_name(IW_QP_ST_COUNT), "?");
}
END_TEST

/* With IWARP_DEBUG set (main sets it), each transition and each refusal
 * is one line on stderr. */
START_TEST(debug_line_per_transition)
{
	char path[] = "/tmp/iwt_qp_state_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);

	struct iw_qp q;
	memset(&q, 0, sizeof(q));
	int rc1 = iw_qp_transition(&q, IW_QP_ST_RTS, "why one");
	int rc2 = iw_qp_transition(&q, IW_QP_ST_IDLE, "why two");
	int rc3 = iw_qp_transition(&q, IW_QP_ST_CLOSING, "why three");
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);

	char buf[1024] = { 0 };
	ck_assert_int_gt(pread(fd, buf, sizeof(buf) - 1, 0), 0);
	close(fd);
	ck_assert_int_eq(rc1, 0);
	ck_assert_int_eq(rc2, -EINVAL);
	ck_assert_int_eq(rc3, 0);
	char l1[128], l2[128], l3[128];
	snprintf(l1, sizeof(l1), "iwarp: qp %p: IDLE -> RTS (why one)\n", (void *)&q);
	snprintf(l2, sizeof(l2), "iwarp: qp %p: RTS -> IDLE refused (why two)\n", (void *)&q);
	snprintf(l3, sizeof(l3), "iwarp: qp %p: RTS -> CLOSING (why three)\n", (void *)&q);
	char want[400];
	snprintf(want, sizeof(want), "%s%s%s", l1, l2, l3);
	ck_assert_str_eq(buf, want);
}
END_TEST

struct fix {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *a, *b;
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(iw_context_create(NULL, &f->ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(f->ctx, &f->pd), 0);
	ck_assert_int_eq(iw_create_cq(f->ctx, 64, NULL, &f->cq), 0);
	struct iw_qp_init_attr qa = { .send_cq = f->cq, .recv_cq = f->cq };
	ck_assert_int_eq(iw_create_qp(f->pd, &qa, &f->a), 0);
	ck_assert_int_eq(iw_create_qp(f->pd, &qa, &f->b), 0);
}

static void fix_fini(struct fix *f)
{
	ck_assert_int_eq(iw_destroy_qp(f->a), 0);
	ck_assert_int_eq(iw_destroy_qp(f->b), 0);
	ck_assert_int_eq(iw_destroy_cq(f->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(f->pd), 0);
	ck_assert_int_eq(iw_context_destroy(f->ctx), 0);
}

static void pump(struct iw_context *ctx)
{
	for (int i = 0; i < 1000; i++)
		if (iw_progress(ctx, 0) == 0 && i > 10)
			break;
}

static enum iw_qp_st st_of(struct fix *f, struct iw_qp *qp)
{
	iw_ctx_lock(f->ctx);
	enum iw_qp_st s = qp->st;
	iw_ctx_unlock(f->ctx);
	return s;
}

static const struct iw_qp_conn_params cp = { .ird = 4, .ord = 4, .mulpdu = 1442 };

/* IDLE -> RTS -> CLOSING -> CLOSED on the side that disconnects; the peer
 * sees the stream end between messages: RTS -> CLOSED. */
START_TEST(disconnect_drains_then_closes)
{
	struct fix f;
	fix_init(&f);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_IDLE);
	ck_assert_int_eq(iw_pipe_connect(f.a, f.b, &cp), 0);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_RTS);
	ck_assert_int_eq(st_of(&f, f.b), IW_QP_ST_RTS);
	/* A connected QP is connected once. */
	ck_assert_int_eq(iw_pipe_connect(f.a, f.b, &cp), -EINVAL);

	iw_ctx_lock(f.ctx);
	iw_qp_disconnect(f.a);
	ck_assert_int_eq(f.a->st, IW_QP_ST_CLOSING);
	iw_qp_disconnect(f.a); /* asked twice: no second edge */
	ck_assert_int_eq(f.a->st, IW_QP_ST_CLOSING);
	iw_ctx_unlock(f.ctx);
	/* Draining still counts as RTS to the application, but takes no
	 * new work. */
	ck_assert_int_eq(iw_qp_state(f.a), IW_QPS_RTS);
	struct iw_send_wr w = { .wr_id = 1, .opcode = IW_WR_SEND };
	ck_assert_int_eq(iw_post_send(f.a, &w, NULL), -EPIPE);

	pump(f.ctx);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_CLOSED);
	ck_assert_int_eq(st_of(&f, f.b), IW_QP_ST_CLOSED);
	ck_assert_int_eq(iw_qp_state(f.a), IW_QPS_CLOSED);
	/* CLOSED is final: moving to error changes nothing. */
	ck_assert_int_eq(iw_qp_to_error(f.a), 0);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_CLOSED);
	fix_fini(&f);
}
END_TEST

/* iw_qp_to_error takes the IDLE -> ERROR edge on a QP never connected;
 * the QP cannot be connected afterwards. */
START_TEST(to_error_from_idle)
{
	struct fix f;
	fix_init(&f);
	ck_assert_int_eq(iw_qp_to_error(f.a), 0);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_ERROR);
	ck_assert_int_eq(iw_qp_state(f.a), IW_QPS_ERROR);
	ck_assert_int_eq(iw_pipe_connect(f.a, f.b, &cp), -EINVAL);
	ck_assert_int_eq(st_of(&f, f.b), IW_QP_ST_IDLE);
	pump(f.ctx);
	fix_fini(&f);
}
END_TEST

/* A draining QP moved to error: CLOSING -> ERROR. */
START_TEST(to_error_while_closing)
{
	struct fix f;
	fix_init(&f);
	ck_assert_int_eq(iw_pipe_connect(f.a, f.b, &cp), 0);
	iw_ctx_lock(f.ctx);
	iw_qp_disconnect(f.a);
	iw_ctx_unlock(f.ctx);
	ck_assert_int_eq(iw_qp_to_error(f.a), 0);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_ERROR);
	pump(f.ctx);
	ck_assert_int_eq(st_of(&f, f.a), IW_QP_ST_ERROR);
	/* The reset reaches the peer: it leaves RTS too. */
	ck_assert(st_of(&f, f.b) == IW_QP_ST_ERROR || st_of(&f, f.b) == IW_QP_ST_CLOSED);
	fix_fini(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("qp_state");
	TCase *t = tcase_create("table");
	tcase_add_test(t, table_is_exactly_the_legal_edges);
	tcase_add_test(t, transition_moves_or_refuses);
	tcase_add_test(t, public_projection);
	tcase_add_test(t, debug_line_per_transition);
	suite_add_tcase(s, t);
	t = tcase_create("qp");
	tcase_add_test(t, disconnect_drains_then_closes);
	tcase_add_test(t, to_error_from_idle);
	tcase_add_test(t, to_error_while_closing);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	setenv("IWARP_DEBUG", "1", 1);
	return iwt_run_suite(suite());
}
