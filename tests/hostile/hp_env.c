/* Our side of a hostile-peer test (see hp_env.h). */
#include "hp_env.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwt_common.h"
#include "rdmap/rdmap_wire.h"

#define ARENA_TAG 0xA5E1u

const char *hp_cause(struct iw_term_cause c, int slot)
{
	static char buf[4][40];
	snprintf(buf[slot & 3], sizeof(buf[0]), "%u/%u/0x%02x (%s)", c.layer, c.etype, c.ecode,
		 c.valid ? "set" : "none");
	return buf[slot & 3];
}

static void sleep_ms(unsigned ms)
{
	usleep(ms * 1000u);
}

bool hp_env_verified;

/* A fresh QP with HP_RECV_N receives posted, and a fresh peer. */
static void qp_up(struct hp_env *e)
{
	struct iw_qp_init_attr qa = { 0 };
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.cap.max_send_wr = 32;
	qa.cap.max_recv_wr = 32;
	qa.sq_sig_all = true;
	qa.srq = e->srq;
	qa.verified_placement = hp_env_verified;
	ck_assert_int_eq(iw_create_qp(e->pd, &qa, &e->qp), 0);
	for (int i = 0; i < HP_RECV_N && !e->srq; i++) {
		struct iw_sge sge = { (uint64_t)(uintptr_t)(e->arena + e->recv_off + (size_t)i * HP_RECV_LEN), HP_RECV_LEN,
				      iw_mr_stag(e->rmr) };
		struct iw_recv_wr wr = { .wr_id = 1000u + (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
		ck_assert_int_eq(iw_post_recv(e->qp, &wr, &bad), 0);
		hp_env_track(e, wr.wr_id, false);
	}
	e->peer = hp_peer_new();
	ck_assert_ptr_nonnull(e->peer);
}

static void env_init(struct hp_env *e, bool srq);

void hp_env_init(struct hp_env *e)
{
	env_init(e, false);
}

void hp_env_init_srq(struct hp_env *e)
{
	env_init(e, true);
}

static void env_init(struct hp_env *e, bool srq)
{
	static const unsigned acc[HP_NMR] = {
		[HP_MR_NONE] = 0,
		[HP_MR_LW] = IW_ACCESS_LOCAL_WRITE,
		[HP_MR_W] = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE,
		[HP_MR_R] = IW_ACCESS_REMOTE_READ,
		[HP_MR_LW_R] = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_READ,
		[HP_MR_ALL] = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ,
	};
	struct iw_context_attr ca = { .flags = IW_CTX_PROGRESS_THREAD };
	memset(e, 0, sizeof(*e));
	e->lfd = -1;
	ck_assert_int_eq(iw_context_create(&ca, &e->ctx), 0);
	ck_assert_int_eq(iw_cm_create_channel(e->ctx, &e->ch), 0);
	ck_assert_int_eq(iw_alloc_pd(e->ctx, &e->pd), 0);
	ck_assert_int_eq(iw_create_cq(e->ctx, 256, NULL, &e->cq), 0);

	/* [gap][mr0][gap][mr1]...[gap][recv][gap][sink][gap] */
	size_t off = HP_GAP;
	for (int i = 0; i < HP_NMR; i++) {
		e->mr_off[i] = off;
		off += HP_MR_LEN + HP_GAP;
	}
	e->recv_off = off;
	off += HP_RECV_N * HP_RECV_LEN + HP_GAP;
	e->sink_off = off;
	off += HP_MR_LEN + HP_GAP;
	e->arena_len = off;
	e->arena = malloc(off);
	e->shadow = malloc(off);
	ck_assert(e->arena && e->shadow);
	iwt_fill_pattern(e->arena, off, ARENA_TAG);
	memcpy(e->shadow, e->arena, off);

	for (int i = 0; i < HP_NMR; i++)
		ck_assert_int_eq(iw_reg_mr(e->pd, e->arena + e->mr_off[i], HP_MR_LEN, acc[i], &e->mr[i]), 0);
	ck_assert_int_eq(iw_reg_mr(e->pd, e->arena + e->recv_off, HP_RECV_N * HP_RECV_LEN, IW_ACCESS_LOCAL_WRITE,
				   &e->rmr), 0);
	ck_assert_int_eq(iw_reg_mr(e->pd, e->arena + e->sink_off, HP_MR_LEN, IW_ACCESS_LOCAL_WRITE, &e->smr), 0);
	if (srq) {
		struct iw_srq_init_attr sa = { .max_wr = 64, .max_sge = 4 };
		ck_assert_int_eq(iw_create_srq(e->pd, &sa, &e->srq), 0);
		for (int i = 0; i < HP_RECV_N; i++) {
			struct iw_sge sge = { (uint64_t)(uintptr_t)(e->arena + e->recv_off + (size_t)i * HP_RECV_LEN),
					      HP_RECV_LEN, iw_mr_stag(e->rmr) };
			struct iw_recv_wr wr = { .wr_id = 1000u + (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
			ck_assert_int_eq(iw_post_srq_recv(e->srq, &wr, &bad), 0);
			hp_env_track(e, wr.wr_id, false);
			e->optional[e->n_wr - 1] = true;
		}
	}

	qp_up(e);
}

void hp_env_up(struct hp_env *e, bool srq)
{
	struct hp_mpa m = { HP_MPA_DEFAULT };
	if (srq)
		hp_env_init_srq(e);
	else
		hp_env_init(e);
	hp_env_peer_initiates(e, &m, NULL);
}

void hp_env_reconnect(struct hp_env *e)
{
	struct hp_mpa m = { HP_MPA_DEFAULT };
	hp_env_new_qp(e);
	hp_env_peer_initiates(e, &m, NULL);
}

void hp_env_new_qp(struct hp_env *e)
{
	struct iw_wc wc;
	hp_peer_free(e->peer);
	e->peer = NULL;
	ck_assert_int_eq(iw_destroy_qp(e->qp), 0);
	e->qp = NULL;
	if (e->id)
		ck_assert_int_eq(iw_cm_destroy_id(e->id), 0);
	e->id = NULL;
	ck_assert_int_eq(iw_poll_cq(e->cq, 1, &wc), 0); /* everything was drained */
	if (e->srq) {
		/* SRQ entries not yet completed stay posted: keep tracking them. */
		int k = 0;
		for (int i = 0; i < e->n_wr; i++) {
			if (e->optional[i] && !e->ndone[i]) {
				e->wr_id[k] = e->wr_id[i];
				e->may_succeed[k] = false;
				e->optional[k] = true;
				e->ndone[k] = 0;
				k++;
			}
		}
		e->n_wr = k;
	} else {
		e->n_wr = 0;
	}
	e->n_either = 0;
	qp_up(e);
}

void hp_env_fini(struct hp_env *e)
{
	hp_peer_free(e->peer);
	e->peer = NULL;
	if (e->lfd >= 0)
		close(e->lfd);
	ck_assert_int_eq(iw_destroy_qp(e->qp), 0);
	if (e->srq)
		ck_assert_int_eq(iw_destroy_srq(e->srq), 0);
	if (e->id)
		ck_assert_int_eq(iw_cm_destroy_id(e->id), 0);
	if (e->listen)
		ck_assert_int_eq(iw_cm_destroy_id(e->listen), 0);
	for (int i = 0; i < HP_NMR; i++)
		ck_assert_int_eq(iw_dereg_mr(e->mr[i]), 0);
	ck_assert_int_eq(iw_dereg_mr(e->rmr), 0);
	ck_assert_int_eq(iw_dereg_mr(e->smr), 0);
	ck_assert_int_eq(iw_destroy_cq(e->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(e->ch), 0);
	ck_assert_int_eq(iw_context_destroy(e->ctx), 0);
	free(e->arena);
	free(e->shadow);
	memset(e, 0, sizeof(*e));
	e->lfd = -1;
}

uint8_t *hp_mr_ptr(struct hp_env *e, int i)
{
	return e->arena + e->mr_off[i];
}

uint64_t hp_mr_to(struct hp_env *e, int i)
{
	return (uint64_t)(uintptr_t)hp_mr_ptr(e, i);
}

uint32_t hp_mr_stag(struct hp_env *e, int i)
{
	return iw_mr_stag(e->mr[i]);
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

struct iw_cm_event *hp_env_event(struct hp_env *e, enum iw_cm_event_type type, int ms)
{
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	struct iw_cm_event *ev = NULL;

	while (iw_cm_get_event(e->ch, &ev) != 0) {
		ck_assert_msg(hp_now_ms() < end, "no CM event (expected %d)", type);
		sleep_ms(1);
	}
	ck_assert_msg(ev->type == type, "CM event %d status %d, expected %d", ev->type, ev->status, type);
	return ev;
}

void hp_env_peer_initiates(struct hp_env *e, const struct hp_mpa *m, const struct iw_conn_param *ap)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;

	if (!e->listen) {
		ck_assert_int_eq(iw_cm_create_id(e->ch, e, &e->listen), 0);
		ck_assert_int_eq(iw_cm_listen(e->listen, (struct sockaddr *)&a, 4), 0);
	}
	ck_assert_int_eq(iw_cm_local_addr(e->listen, &ss), 0);
	ck_assert_int_eq(hp_connect(e->peer, &ss, m->rcvbuf), 0);
	ck_assert_int_eq(hp_send_request(e->peer, m), 0);
	struct iw_cm_event *ev = hp_env_event(e, IW_CM_EVENT_CONNECT_REQUEST, HP_WAIT_MS);
	e->id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(e->id, e->qp, ap), 0);
	ck_assert_int_eq(hp_read_reply(e->peer, (m->flags & 0x80) != 0, HP_WAIT_MS), 0);
	iw_cm_ack_event(hp_env_event(e, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));
	ck_assert_int_eq(iw_qp_state(e->qp), IW_QPS_RTS);
}

void hp_env_peer_responds(struct hp_env *e, const struct hp_mpa *m, unsigned rflags,
			  const struct iw_conn_param *cp)
{
	struct sockaddr_storage ss;

	e->lfd = hp_listen(&ss);
	ck_assert_int_ge(e->lfd, 0);
	ck_assert_int_eq(iw_cm_create_id(e->ch, e, &e->id), 0);
	ck_assert_int_eq(iw_cm_connect(e->id, e->qp, (struct sockaddr *)&ss, cp), 0);
	ck_assert_int_eq(hp_accept(e->peer, e->lfd, HP_WAIT_MS, m->rcvbuf), 0);
	ck_assert_int_eq(hp_respond(e->peer, m, rflags, HP_WAIT_MS), 0);
	iw_cm_ack_event(hp_env_event(e, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));
	ck_assert_int_eq(iw_qp_state(e->qp), IW_QPS_RTS);
}

/* ------------------------------------------------------------------ */
/* Work requests                                                       */

void hp_env_track(struct hp_env *e, uint64_t wr_id, bool may_succeed)
{
	ck_assert_int_lt(e->n_wr, HP_MAX_WR);
	e->wr_id[e->n_wr] = wr_id;
	e->may_succeed[e->n_wr] = may_succeed;
	e->optional[e->n_wr] = false;
	e->ndone[e->n_wr] = 0;
	e->n_wr++;
}

void hp_env_post_read(struct hp_env *e, uint64_t wr_id, uint32_t stag, uint64_t to, uint32_t len)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)(e->arena + e->sink_off), len, iw_mr_stag(e->smr) };
	struct iw_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_READ,
		.remote_addr = to, .rkey = stag,
	}, *bad = NULL;
	ck_assert_int_eq(iw_post_send(e->qp, &wr, &bad), 0);
	hp_env_track(e, wr_id, false);
}

void hp_env_post_send(struct hp_env *e, uint64_t wr_id, uint32_t len, bool may_succeed)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)(e->arena + e->sink_off), len, iw_mr_stag(e->smr) };
	struct iw_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND,
	}, *bad = NULL;
	ck_assert_int_eq(iw_post_send(e->qp, &wr, &bad), 0);
	hp_env_track(e, wr_id, may_succeed);
}

void hp_env_allow(struct hp_env *e, const uint8_t *p, const void *data, size_t len)
{
	ck_assert(p >= e->arena && p + len <= e->arena + e->arena_len);
	memcpy(e->shadow + (p - e->arena), data, len);
}

void hp_env_allow_either(struct hp_env *e, const uint8_t *p, const void *data, size_t len)
{
	ck_assert(p >= e->arena && p + len <= e->arena + e->arena_len);
	ck_assert_int_lt(e->n_either, HP_MAX_EITHER);
	ck_assert_uint_le(len, sizeof(e->either[0].data));
	e->either[e->n_either].off = (size_t)(p - e->arena);
	e->either[e->n_either].len = len;
	memcpy(e->either[e->n_either].data, data, len);
	e->n_either++;
}

static void apply_either(struct hp_env *e)
{
	for (int k = 0; k < e->n_either; k++) {
		size_t off = e->either[k].off;
		for (size_t i = 0; i < e->either[k].len; i++) {
			uint8_t a = e->arena[off + i];
			if (a != e->shadow[off + i] && a != e->either[k].data[i])
				ck_abort_msg("arena byte %zu holds neither the old nor the sent byte", off + i);
			e->shadow[off + i] = a;
		}
	}
	e->n_either = 0;
}

void hp_env_check_guards(struct hp_env *e)
{
	apply_either(e);
	/* memcmp first: a Check assertion per byte costs a syscall in fork mode. */
	if (memcmp(e->arena, e->shadow, e->arena_len) == 0)
		return;
	for (size_t i = 0; i < e->arena_len; i++)
		if (e->arena[i] != e->shadow[i])
			ck_abort_msg("arena byte %zu changed (0x%02x, expected 0x%02x)", i, e->arena[i], e->shadow[i]);
}

static int find_wr(struct hp_env *e, uint64_t wr_id)
{
	for (int i = 0; i < e->n_wr; i++)
		if (e->wr_id[i] == wr_id)
			return i;
	return -1;
}

void hp_env_require(struct hp_env *e, uint64_t wr_id)
{
	int i = find_wr(e, wr_id);
	ck_assert_int_ge(i, 0);
	e->optional[i] = false;
}

static bool all_done(struct hp_env *e)
{
	for (int i = 0; i < e->n_wr; i++)
		if (!e->ndone[i] && !e->optional[i])
			return false;
	return true;
}

static void take(struct hp_env *e, const struct iw_wc *wc, const struct iw_term_cause *want)
{
	int i = find_wr(e, wc->wr_id);
	ck_assert_msg(i >= 0, "completion for unknown wr %llu", (unsigned long long)wc->wr_id);
	e->ndone[i]++;
	e->status[i] = wc->status;
	ck_assert_msg(e->ndone[i] == 1, "wr %llu completed twice", (unsigned long long)wc->wr_id);
	ck_assert_msg(e->may_succeed[i] || wc->status != IW_WC_SUCCESS, "wr %llu succeeded",
		      (unsigned long long)wc->wr_id);
	bool has = iw_term_cause_is_set(wc->cause);
	if (want && has && wc->status != IW_WC_SUCCESS)
		ck_assert_msg(iw_term_cause_eq(wc->cause, *want), "wr %llu status %s cause %s, expected %s",
			      (unsigned long long)wc->wr_id, iw_wc_status_str(wc->status), hp_cause(wc->cause, 0),
			      hp_cause(*want, 1));
}

void hp_env_drain(struct hp_env *e, const struct iw_term_cause *want)
{
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	struct iw_wc wc[16];

	while (!all_done(e)) {
		int n = iw_poll_cq(e->cq, 16, wc);
		ck_assert_int_ge(n, 0);
		for (int k = 0; k < n; k++)
			take(e, &wc[k], want);
		if (!n) {
			if (hp_now_ms() > end)
				break;
			sleep_ms(1);
		}
	}
	for (int i = 0; i < e->n_wr; i++)
		ck_assert_msg(e->ndone[i] == 1 || (e->optional[i] && !e->ndone[i]), "wr %llu never completed",
			      (unsigned long long)e->wr_id[i]);
	/* No late duplicates. */
	for (int t = 0; t < 10; t++) {
		int n = iw_poll_cq(e->cq, 16, wc);
		for (int k = 0; k < n; k++)
			take(e, &wc[k], want);
		sleep_ms(2);
	}
}

void hp_env_expect_term(struct hp_env *e, struct iw_term_cause want, const uint8_t *bad_hdr, size_t bad_hdr_len)
{
	struct iw_rdmap_term t;
	uint64_t t00 = hp_now_ms();
	int r = hp_expect_term(e->peer, HP_WAIT_MS, &t);

	ck_assert_msg(r == 0, "no Terminate reached the peer (%d)", r);
	ck_assert_msg(iw_term_cause_eq(t.cause, want), "Terminate %s, expected %s", hp_cause(t.cause, 0),
		      hp_cause(want, 1));
	ck_assert(!t.siw_layout);
	if (bad_hdr) {
		ck_assert_msg(t.has_ddp_hdr, "Terminate without the offending DDP header");
		ck_assert_uint_eq(t.ddp_hdr_len, bad_hdr_len);
		ck_assert_mem_eq(t.ddp_hdr, bad_hdr, bad_hdr_len);
	}
	uint64_t t0 = hp_now_ms();
	if (e->want_rdmap_hdr) {
		ck_assert_msg(t.has_rdmap_hdr, "Terminate without the offending Read Request body");
		ck_assert_uint_eq(t.rdmap_hdr_len, IW_RDMAP_READ_REQ_LEN);
		ck_assert_mem_eq(t.rdmap_hdr, e->want_rdmap_hdr, IW_RDMAP_READ_REQ_LEN);
		e->want_rdmap_hdr = NULL;
	}
	ck_assert_msg(hp_wait_closed(e->peer, HP_WAIT_MS) == 0, "our side kept the connection open");
	uint64_t t1 = hp_now_ms();
	/* Like a real peer, close our end once the stack closed its end. */
	shutdown(e->peer->fd, SHUT_WR);
	iw_cm_ack_event(hp_env_event(e, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	if (getenv("HP_DEBUG"))
		fprintf(stderr, "close %llu ms, event %llu ms\n", (unsigned long long)(t1 - t0),
			(unsigned long long)(hp_now_ms() - t1));
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(e->qp), want), "QP cause %s, expected %s",
		      hp_cause(iw_qp_error(e->qp), 0), hp_cause(want, 1));
	ck_assert_int_eq(iw_qp_state(e->qp), IW_QPS_ERROR);
	uint64_t t2 = hp_now_ms();
	hp_env_drain(e, &want);
	if (getenv("HP_DEBUG"))
		fprintf(stderr, "term %llu ms, drain %llu ms\n", (unsigned long long)(t0 - t00),
			(unsigned long long)(hp_now_ms() - t2));
	hp_env_check_guards(e);
}
