/* iwperf iWARP client: connects QPS connections, runs one row per size and
 * reports it, then disconnects. One thread; iw_progress() drives it all.
 *
 * Memory: one data buffer (the largest size) and one region of receive /
 * control slots are shared by all QPs, so 1024 QPs cost little; the data
 * content does not matter for bandwidth. One CQ serves every QP; work
 * request ids carry (kind, QP index, slot) so no lookup is needed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwperf.h"
#include "tool_common.h"

#define KIND_DATA 1ull
#define KIND_CTRL 2ull
#define KIND_RECV 3ull
#define WRID(kind, q, slot) ((kind) << 56 | (uint64_t)(q) << 32 | (uint64_t)(slot))
#define MAX_CONNECTING 32u
#define LAT_WARMUP 8u

enum qstate { Q_IDLE, Q_CONNECTING, Q_READY, Q_CLOSING, Q_CLOSED };

struct cqp {
	struct iw_cm_id *id;
	struct iw_qp *qp;
	uint32_t idx;
	enum qstate state;
	struct perf_advert adv;
	uint64_t sends_total;  /* SENDs ever posted (data and control) */
	uint64_t credit_limit; /* SENDs the server can take in all */
	uint64_t posted, done; /* data work requests in this row */
	uint32_t data_out;     /* data work requests outstanding */
	bool ctrl_busy, end_posted, acked, echo;
	struct perf_ctrl ack;
	uint8_t *slots; /* PERF_CLIENT_RECVS receive slots, then the control send slot */
};

struct client {
	const struct perf_opts *o;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *ch;
	struct iw_cq *cq;
	uint8_t *buf, *slots;
	size_t buf_len, slots_len;
	struct iw_mr *buf_mr, *slot_mr;
	struct cqp *q;
	uint32_t nq, max_size, cur_size, row;
	uint32_t ready, connecting, next_connect;
	struct sockaddr_storage dst;
	char peer[80];
	struct iw_send_wr *wrs; /* scratch for chains of up to qd WRs */
	struct iw_sge *sges;
	struct tc_watchdog wd;
	bool failed;
	uint64_t row_done, last_done_ns;
	struct perf_total total;
};

static uint8_t *slot_ptr(const struct cqp *q, uint32_t slot)
{
	return q->slots + (size_t)slot * PERF_SLOT;
}

static void fail(struct client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct client *cl, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fputs("iwperf: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	cl->failed = true;
}

static int post_recv(struct client *cl, struct cqp *q, uint32_t slot)
{
	struct iw_sge sge[2] = {
		{ (uintptr_t)slot_ptr(q, slot), PERF_SLOT, iw_mr_stag(cl->slot_mr) },
		{ (uintptr_t)cl->buf, cl->max_size, iw_mr_stag(cl->buf_mr) },
	};
	struct iw_recv_wr wr = {
		.wr_id = WRID(KIND_RECV, q->idx, slot),
		.sg_list = sge,
		.num_sge = cl->o->test == PT_LAT ? 2 : 1, /* echoes land in the data buffer */
	};
	struct iw_recv_wr *bad;
	int rc = iw_post_recv(q->qp, &wr, &bad);

	if (rc)
		fail(cl, "QP %u: post receive: %s", q->idx, strerror(-rc));
	return rc;
}

static int post_ctrl(struct client *cl, struct cqp *q, const struct perf_ctrl *c)
{
	uint8_t *p = slot_ptr(q, PERF_CLIENT_RECVS);
	struct iw_sge sge = { (uintptr_t)p, PERF_CTRL_LEN, iw_mr_stag(cl->slot_mr) };
	struct iw_send_wr wr = {
		.wr_id = WRID(KIND_CTRL, q->idx, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IW_WR_SEND,
	};
	struct iw_send_wr *bad;
	int rc;

	perf_ctrl_encode(p, c);
	rc = iw_post_send(q->qp, &wr, &bad);
	if (rc) {
		fail(cl, "QP %u: post control SEND: %s", q->idx, strerror(-rc));
		return rc;
	}
	q->ctrl_busy = true;
	q->sends_total++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events and completions                                              */

static void on_recv(struct client *cl, struct cqp *q, uint32_t slot, uint32_t len)
{
	struct perf_ctrl c;

	if (len == PERF_CTRL_LEN && perf_ctrl_decode(slot_ptr(q, slot), len, &c) == 0) {
		if (c.credits > q->credit_limit)
			q->credit_limit = c.credits;
		if (c.type == PC_ROW_ACK) {
			if (c.row != cl->row) {
				fail(cl, "QP %u: acknowledgement for row %u, expected %u", q->idx, c.row, cl->row);
				return;
			}
			q->ack = c;
			q->acked = true;
		}
	} else if (cl->o->test == PT_LAT) {
		if (len != cl->cur_size) {
			fail(cl, "QP %u: echo of %u bytes, expected %u", q->idx, len, cl->cur_size);
			return;
		}
		q->echo = true;
		q->credit_limit++; /* the server reposted before echoing */
	} else {
		fail(cl, "QP %u: unexpected %u-byte message from the server", q->idx, len);
		return;
	}
	post_recv(cl, q, slot);
}

static void on_wc(struct client *cl, const struct iw_wc *wc, uint64_t now)
{
	uint64_t kind = wc->wr_id >> 56;
	uint32_t idx = (uint32_t)(wc->wr_id >> 32) & 0xFFFFFFu;
	struct cqp *q;
	char who[32];

	if (idx >= cl->nq)
		return;
	q = &cl->q[idx];
	if (wc->status != IW_WC_SUCCESS) {
		if (q->state >= Q_CLOSING && wc->status == IW_WC_WR_FLUSH_ERR)
			return;
		if (q->state >= Q_CLOSING && cl->failed)
			return;
		snprintf(who, sizeof(who), "QP %u", idx);
		tc_report_wc(who, wc);
		tc_report_qp_error(who, q->qp);
		fail(cl, NULL);
		return;
	}
	switch (kind) {
	case KIND_DATA:
		q->data_out--;
		q->done++;
		cl->row_done++;
		cl->last_done_ns = now;
		break;
	case KIND_CTRL:
		q->ctrl_busy = false;
		break;
	case KIND_RECV:
		on_recv(cl, q, (uint32_t)wc->wr_id, wc->byte_len);
		break;
	default:
		break;
	}
}

static void on_cm_event(struct client *cl, struct iw_cm_event *ev)
{
	struct cqp *q = ev->id ? iw_cm_id_context(ev->id) : NULL;
	char who[32];

	if (q == NULL) {
		iw_cm_ack_event(ev);
		return;
	}
	snprintf(who, sizeof(who), "QP %u", q->idx);
	switch (ev->type) {
	case IW_CM_EVENT_ESTABLISHED:
		if (perf_advert_decode(ev->private_data, ev->private_data_len, &q->adv) != 0) {
			fail(cl, "%s: the server's reply carries no iwperf advert (not an iwperf server?)", who);
		} else if (cl->o->test != PT_LAT && cl->o->test != PT_SEND && q->adv.len < cl->max_size) {
			fail(cl, "%s: server buffer of %u bytes, need %u", who, q->adv.len, cl->max_size);
		} else {
			q->credit_limit = q->adv.recv_depth;
			q->state = Q_READY;
			cl->ready++;
		}
		cl->connecting--;
		break;
	case IW_CM_EVENT_REJECTED:
	case IW_CM_EVENT_CONNECT_ERROR:
		tc_report_cm_event(who, ev);
		fail(cl, NULL);
		q->state = Q_CLOSED;
		cl->connecting--;
		break;
	case IW_CM_EVENT_DISCONNECTED:
		if (q->state != Q_CLOSING && !cl->failed) {
			tc_report_cm_event(who, ev);
			tc_report_qp_error(who, q->qp);
			fail(cl, NULL);
		} else if (!cl->failed && iw_term_cause_is_set(iw_qp_error(q->qp))) {
			/* Our WRITEs completed (iWARP completes them locally) but
			 * the server refused one: only iw_qp_error() says so. */
			tc_report_qp_error(who, q->qp);
			fail(cl, NULL);
		}
		q->state = Q_CLOSED;
		break;
	default:
		break;
	}
	iw_cm_ack_event(ev);
}

/* Completions already in the CQ; returns how many (or -1). */
static int drain_cq(struct client *cl)
{
	struct iw_wc wc[64];
	int i, n, total = 0;

	do {
		n = iw_poll_cq(cl->cq, 64, wc);
		if (n > 0) {
			uint64_t now = tc_now_ns();

			tc_watchdog_kick(&cl->wd);
			for (i = 0; i < n; i++)
				on_wc(cl, &wc[i], now);
			total += n;
		}
	} while (n == 64);
	if (n < 0) {
		fail(cl, "poll CQ: %s", strerror(-n));
		return -1;
	}
	return total;
}

/* One turn of the loop: progress, CM events, completions, watchdog. */
static int pump(struct client *cl, int timeout_ms)
{
	struct iw_cm_event *ev;
	int rc;

	/* A post on a TCP QP transmits from our thread, so its completions
	 * may be in the CQ already: never sleep in progress on top of them. */
	if (timeout_ms != 0) {
		rc = drain_cq(cl);
		if (rc < 0)
			return -1;
		if (rc > 0)
			timeout_ms = 0;
	}
	rc = iw_progress(cl->ctx, timeout_ms);
	if (rc < 0) {
		fail(cl, "progress: %s", strerror(-rc));
		return -1;
	}
	if (rc > 0)
		tc_watchdog_kick(&cl->wd);
	while (iw_cm_get_event(cl->ch, &ev) == 0) {
		tc_watchdog_kick(&cl->wd);
		on_cm_event(cl, ev);
	}
	(void)drain_cq(cl);
	if (tc_stop)
		fail(cl, "interrupted");
	if (!cl->failed && tc_watchdog_expired(&cl->wd))
		fail(cl, "no progress for %.3g s", cl->o->timeout_s);
	return cl->failed ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static int start_connect(struct client *cl, struct cqp *q)
{
	const struct perf_opts *o = cl->o;
	struct iw_qp_init_attr qa;
	struct iw_conn_param p;
	struct perf_hello h;
	uint8_t pd[PERF_HELLO_LEN];
	uint32_t i;
	int rc;

	rc = iw_cm_create_id(cl->ch, q, &q->id);
	if (rc) {
		fail(cl, "QP %u: create CM id: %s", q->idx, strerror(-rc));
		return rc;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = cl->cq;
	qa.recv_cq = cl->cq;
	qa.cap.max_send_wr = o->qd + 2;
	qa.cap.max_recv_wr = PERF_CLIENT_RECVS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 2;
	qa.sq_sig_all = true;
	qa.qp_context = q;
	rc = iw_create_qp(cl->pd, &qa, &q->qp);
	if (rc) {
		fail(cl, "QP %u: create QP: %s", q->idx, strerror(-rc));
		return rc;
	}
	for (i = 0; i < PERF_CLIENT_RECVS; i++)
		if (post_recv(cl, q, i))
			return -1;
	memset(&h, 0, sizeof(h));
	h.test = (uint8_t)o->test;
	h.crc = (uint8_t)o->crc;
	h.max_size = cl->max_size;
	h.qd = o->qd;
	h.qp_index = q->idx;
	h.nqps = cl->nq;
	h.max_ulpdu = o->max_fpdu;
	h.flags = o->wait ? PERF_HELLO_WAIT : 0;
	perf_hello_encode(pd, &h);
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = sizeof(pd);
	if (o->test == PT_READ) {
		uint16_t d = 1;

		while (d < o->qd && d < 128)
			d *= 2;
		p.ird = p.ord = d;
	} else {
		p.ird = p.ord = 16;
	}
	p.crc = o->crc;
	p.markers = o->markers;
	p.max_ulpdu = o->max_fpdu;
	p.timeout_ms = (int)(o->timeout_s * 1000);
	rc = iw_cm_connect(q->id, q->qp, (struct sockaddr *)&cl->dst, &p);
	if (rc) {
		fail(cl, "QP %u: connect to %s: %s", q->idx, cl->peer, strerror(-rc));
		return rc;
	}
	q->state = Q_CONNECTING;
	cl->connecting++;
	return 0;
}

static int connect_all(struct client *cl)
{
	tc_watchdog_init(&cl->wd, cl->o->timeout_s);
	while (cl->ready < cl->nq) {
		while (cl->connecting < MAX_CONNECTING && cl->next_connect < cl->nq)
			if (start_connect(cl, &cl->q[cl->next_connect++]))
				return -1;
		if (pump(cl, 100))
			return -1;
	}
	return 0;
}

static void disconnect_all(struct client *cl)
{
	struct tc_watchdog wd;
	uint32_t i, open = 0;

	for (i = 0; i < cl->nq; i++) {
		struct cqp *q = &cl->q[i];

		if (q->state != Q_READY)
			continue; /* connecting ones are aborted by the teardown */
		if (iw_cm_disconnect(q->id) == 0) {
			q->state = Q_CLOSING;
			open++;
		} else {
			q->state = Q_CLOSED;
		}
	}
	/* Wait for the DISCONNECTED events, briefly; not after a failure
	 * (a silent server would make --timeout late): teardown aborts. */
	if (cl->failed)
		return;
	tc_watchdog_init(&wd, 5.0);
	while (open && !tc_watchdog_expired(&wd)) {
		bool was_failed = cl->failed;

		pump(cl, 50);
		if (cl->failed && !was_failed)
			break;
		for (open = 0, i = 0; i < cl->nq; i++)
			open += cl->q[i].state == Q_CLOSING;
	}
	if (open && !cl->failed)
		fail(cl, "%u connection(s) did not report DISCONNECTED", open);
}

/* ------------------------------------------------------------------ */
/* Rows                                                                */

static bool all_acked(struct client *cl)
{
	uint32_t i;

	for (i = 0; i < cl->nq; i++)
		if (!cl->q[i].acked)
			return false;
	return true;
}

/* ROW_END / ROW_ACK on every QP: the server's counters for the row. */
static int end_row(struct client *cl)
{
	uint32_t i;

	for (i = 0; i < cl->nq; i++) {
		cl->q[i].end_posted = false;
		cl->q[i].acked = false;
	}
	while (!all_acked(cl)) {
		for (i = 0; i < cl->nq; i++) {
			struct cqp *q = &cl->q[i];
			struct perf_ctrl c = { PC_ROW_END, cl->row, 0, q->done, q->done * cl->cur_size };

			if (q->end_posted || q->ctrl_busy || q->sends_total >= q->credit_limit)
				continue;
			if (post_ctrl(cl, q, &c))
				return -1;
			q->end_posted = true;
		}
		if (pump(cl, cl->o->test == PT_LAT ? 0 : 100))
			return -1;
	}
	if (cl->o->test == PT_SEND || cl->o->test == PT_LAT) {
		for (i = 0; i < cl->nq; i++) {
			struct cqp *q = &cl->q[i];

			if (q->ack.msgs != q->done || q->ack.bytes != q->done * cl->cur_size) {
				fail(cl, "QP %u: server received %llu messages / %llu bytes, sent %llu / %llu", i,
				     (unsigned long long)q->ack.msgs, (unsigned long long)q->ack.bytes,
				     (unsigned long long)q->done, (unsigned long long)(q->done * cl->cur_size));
				return -1;
			}
		}
	}
	cl->row++;
	return 0;
}

/* Post up to room data work requests on q as one chain. */
static int post_data(struct client *cl, struct cqp *q, uint64_t room)
{
	const struct perf_opts *o = cl->o;
	struct iw_send_wr *bad;
	uint64_t i;
	int rc;

	if (room == 0)
		return 0;
	for (i = 0; i < room; i++) {
		struct iw_send_wr *w = &cl->wrs[i];
		struct iw_sge *s = &cl->sges[i];

		s->addr = (uintptr_t)cl->buf;
		s->length = cl->cur_size;
		s->lkey = iw_mr_stag(cl->buf_mr);
		memset(w, 0, sizeof(*w));
		w->wr_id = WRID(KIND_DATA, q->idx, 0);
		w->sg_list = s;
		w->num_sge = 1;
		w->next = i + 1 < room ? &cl->wrs[i + 1] : NULL;
		if (o->test == PT_WRITE || o->test == PT_READ) {
			w->opcode = o->test == PT_WRITE ? IW_WR_RDMA_WRITE : IW_WR_RDMA_READ;
			w->remote_addr = q->adv.addr;
			w->rkey = q->adv.rkey;
		} else {
			w->opcode = IW_WR_SEND;
		}
	}
	rc = iw_post_send(q->qp, cl->wrs, &bad);
	if (rc && bad)
		room = (uint64_t)(bad - cl->wrs);
	else if (rc)
		room = 0;
	q->posted += room;
	q->data_out += (uint32_t)room;
	if (o->test != PT_WRITE && o->test != PT_READ)
		q->sends_total += room;
	if (rc && rc != -ENOSPC) {
		fail(cl, "QP %u: post: %s", q->idx, strerror(-rc));
		return -1;
	}
	return 0;
}

static int run_bw_row(struct client *cl, uint32_t size)
{
	const struct perf_opts *o = cl->o;
	uint64_t iters = perf_default_iters(o, size), t0, deadline = 0, min_end;
	struct perf_bw_row row;
	struct perf_peak pk;
	struct perf_live live;
	double cpu0;
	bool stop = false;
	uint32_t i;

	cl->cur_size = size;
	cl->row_done = 0;
	for (i = 0; i < cl->nq; i++)
		cl->q[i].posted = cl->q[i].done = 0;
	cpu0 = tc_cpu_seconds();
	t0 = tc_now_ns();
	cl->last_done_ns = t0;
	if (o->duration > 0)
		deadline = t0 + (uint64_t)(o->duration * 1e9);
	min_end = perf_min_end(o, t0);
	perf_peak_init(&pk, o, iters * cl->nq, t0);
	perf_live_start(&live, o, size, t0);
	for (;;) {
		bool idle = true;

		if (!stop) {
			uint64_t now = tc_now_ns();
			/* Count mode: iters per QP, once a completion came after
			 * the minimum time (so the timed row covers it). */
			bool counting = !deadline && cl->last_done_ns >= min_end;
			bool all_posted = true;

			if (deadline && now >= deadline)
				stop = true;
			for (i = 0; i < cl->nq && !stop; i++) {
				struct cqp *q = &cl->q[i];
				uint64_t room = o->qd - q->data_out;

				if (counting && room > iters - (q->posted < iters ? q->posted : iters))
					room = iters - (q->posted < iters ? q->posted : iters);
				if (o->test == PT_SEND && room > q->credit_limit - q->sends_total)
					room = q->credit_limit - q->sends_total;
				if (post_data(cl, q, room))
					return -1;
				if (q->posted < iters)
					all_posted = false;
			}
			if (counting && all_posted)
				stop = true;
		}
		for (i = 0; i < cl->nq && idle; i++)
			idle = cl->q[i].data_out == 0;
		if (stop && idle)
			break;
		if (pump(cl, o->busy ? 0 : 100)) {
			perf_live_end(&live);
			return -1;
		}
		perf_peak_update(&pk, tc_now_ns(), cl->row_done, size);
		perf_live_bw(&live, tc_now_ns(), cl->row_done);
	}
	perf_live_end(&live);
	row.size = size;
	row.msgs = cl->row_done;
	row.ns = cl->last_done_ns - t0;
	row.peak_bps = pk.peak_bps;
	row.cpu_s = tc_cpu_seconds() - cpu0;
	if (end_row(cl))
		return -1;
	perf_report_bw(o, &row);
	perf_total_add(&cl->total, row.msgs, row.msgs * size, row.ns);
	return 0;
}

static int run_lat_row(struct client *cl, uint32_t size)
{
	const struct perf_opts *o = cl->o;
	uint64_t iters = perf_default_iters(o, size), deadline = 0, min_end = 0, sum = 0, i;
	struct perf_samples smp = { NULL, 0, 0 };
	struct perf_lat_row row;
	struct perf_live live;
	struct cqp *q = &cl->q[0];
	struct iw_sge sge = { (uintptr_t)cl->buf, size, iw_mr_stag(cl->buf_mr) };
	struct iw_send_wr wr = { .wr_id = WRID(KIND_DATA, 0, 0), .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND };
	int rc = -1;

	cl->cur_size = size;
	q->posted = q->done = 0;
	perf_live_start(&live, o, size, tc_now_ns());
	for (i = 0;; i++) {
		struct iw_send_wr *bad;
		uint64_t t0, t1;
		int prc;

		/* -D counts from the end of the warm-up: a slow warm-up (the
		 * first-FPDU delay, a loaded machine) must not eat the row. */
		if (i == LAT_WARMUP) {
			if (o->duration > 0)
				deadline = tc_now_ns() + (uint64_t)(o->duration * 1e9);
			min_end = perf_min_end(o, tc_now_ns());
		}
		if (o->duration > 0 ? (deadline && tc_now_ns() >= deadline)
				    : (i >= LAT_WARMUP + iters && tc_now_ns() >= min_end))
			break;
		while (q->data_out > 0 || q->sends_total >= q->credit_limit)
			if (pump(cl, o->wait ? 100 : 0))
				goto out;
		q->echo = false;
		t0 = tc_now_ns();
		prc = iw_post_send(q->qp, &wr, &bad);
		if (prc) {
			fail(cl, "post SEND: %s", strerror(-prc));
			goto out;
		}
		q->sends_total++;
		q->posted++;
		q->data_out++;
		while (!q->echo)
			if (pump(cl, o->wait ? 100 : 0))
				goto out;
		t1 = tc_now_ns();
		if (i >= LAT_WARMUP && perf_samples_push(&smp, t1 - t0)) {
			fail(cl, "out of memory for samples");
			goto out;
		}
		if (i >= LAT_WARMUP)
			sum += t1 - t0;
		perf_live_lat(&live, t1, smp.n, sum);
	}
	perf_live_end(&live);
	while (q->data_out > 0)
		if (pump(cl, o->wait ? 100 : 0))
			goto out;
	if (end_row(cl))
		goto out;
	row.size = size;
	row.iters = smp.n;
	row.rtt_ns = smp.v;
	perf_report_lat(o, &row);
	perf_total_add(&cl->total, row.iters, row.iters * size, perf_lat_sum_ns(&row));
	rc = 0;
out:
	perf_live_end(&live);
	free(smp.v);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */

static int setup(struct client *cl)
{
	const struct perf_opts *o = cl->o;
	const unsigned rw = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_context_attr ca;
	uint32_t i;
	int rc;

	memset(&ca, 0, sizeof(ca));
	ca.trace_path = o->trace;
	if (tc_transport_apply(&o->tr, &ca))
		return -EINVAL;
	ca.max_qp = cl->nq > 4096 ? cl->nq : 0;
	rc = iw_context_create(&ca, &cl->ctx);
	if (rc) {
		fail(cl, "create context: %s", strerror(-rc));
		return rc;
	}
	if ((rc = iw_alloc_pd(cl->ctx, &cl->pd)) || (rc = iw_cm_create_channel(cl->ctx, &cl->ch))) {
		fail(cl, "setup: %s", strerror(-rc));
		return rc;
	}
	rc = iw_create_cq(cl->ctx, (int)(cl->nq * (o->qd + 2 + PERF_CLIENT_RECVS) + 16), NULL, &cl->cq);
	if (rc) {
		fail(cl, "create CQ: %s", strerror(-rc));
		return rc;
	}
	cl->buf_len = cl->max_size < PERF_SLOT ? PERF_SLOT : cl->max_size;
	cl->slots_len = (size_t)cl->nq * (PERF_CLIENT_RECVS + 1) * PERF_SLOT;
	cl->buf = tc_alloc_buf(cl->buf_len);
	cl->slots = tc_alloc_buf(cl->slots_len);
	cl->q = calloc(cl->nq, sizeof(*cl->q));
	cl->wrs = calloc(o->qd, sizeof(*cl->wrs));
	cl->sges = calloc(o->qd, sizeof(*cl->sges));
	if (!cl->buf || !cl->slots || !cl->q || !cl->wrs || !cl->sges) {
		fail(cl, "out of memory");
		return -ENOMEM;
	}
	memset(cl->buf, PERF_FILL, cl->buf_len);
	if ((rc = iw_reg_mr(cl->pd, cl->buf, cl->buf_len, rw, &cl->buf_mr)) ||
	    (rc = iw_reg_mr(cl->pd, cl->slots, cl->slots_len, IW_ACCESS_LOCAL_WRITE, &cl->slot_mr))) {
		fail(cl, "register memory: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; i < cl->nq; i++) {
		cl->q[i].idx = i;
		cl->q[i].slots = cl->slots + (size_t)i * (PERF_CLIENT_RECVS + 1) * PERF_SLOT;
	}
	return 0;
}

static void teardown(struct client *cl)
{
	uint32_t i;

	for (i = 0; cl->q && i < cl->nq; i++) {
		if (cl->q[i].qp)
			iw_destroy_qp(cl->q[i].qp);
		if (cl->q[i].id)
			iw_cm_destroy_id(cl->q[i].id);
	}
	if (cl->cq)
		iw_destroy_cq(cl->cq);
	if (cl->buf_mr)
		iw_dereg_mr(cl->buf_mr);
	if (cl->slot_mr)
		iw_dereg_mr(cl->slot_mr);
	if (cl->ch)
		iw_cm_destroy_channel(cl->ch);
	if (cl->pd)
		iw_dealloc_pd(cl->pd);
	if (cl->ctx) {
		int rc = iw_context_destroy(cl->ctx);

		if (rc)
			tc_err("destroy context: %s", strerror(-rc));
	}
	free(cl->q);
	free(cl->wrs);
	free(cl->sges);
	free(cl->buf);
	free(cl->slots);
}

/* One untimed ROW_END / ROW_ACK exchange (an empty row 0) on every QP
 * before the first timed row: an initiator holds its first FPDU for
 * first_fpdu_delay_ms (siw), which would otherwise land inside row 1. */
static int warm_up(struct client *cl)
{
	uint32_t i;

	cl->cur_size = 0;
	for (i = 0; i < cl->nq; i++)
		cl->q[i].posted = cl->q[i].done = 0;
	return end_row(cl);
}

int perf_client_iwarp(const struct perf_opts *o)
{
	struct client cl;
	unsigned s;

	memset(&cl, 0, sizeof(cl));
	cl.o = o;
	cl.nq = o->nqps;
	for (s = 0; s < o->nsizes; s++)
		if (o->sizes[s] > cl.max_size)
			cl.max_size = o->sizes[s];
	if (tc_resolve(o->addr, o->port, false, &cl.dst, NULL))
		return 1;
	tc_addr_str((struct sockaddr *)&cl.dst, cl.peer, sizeof(cl.peer));
	if (setup(&cl) == 0 && connect_all(&cl) == 0 && warm_up(&cl) == 0) {
		perf_report_header(o, cl.peer);
		for (s = 0; s < o->nsizes && !cl.failed; s++) {
			tc_watchdog_kick(&cl.wd);
			if (o->test == PT_LAT)
				run_lat_row(&cl, o->sizes[s]);
			else
				run_bw_row(&cl, o->sizes[s]);
		}
		if (!cl.failed)
			perf_report_summary(o, &cl.total);
	}
	if (cl.ch)
		disconnect_all(&cl);
	teardown(&cl);
	return cl.failed ? 1 : 0;
}
