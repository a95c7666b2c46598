/* iwperf server: accepts iWARP connections on PORT (and, through
 * iwperf_tcp.c, plain TCP on the TCP port) and serves every client that
 * comes, until interrupted (or, with --once, until the first one is done).
 *
 * Per iWARP connection: R receives posted (each: a PERF_SLOT slot of its
 * own, then the shared data buffer), R = 4 x the client's queue depth
 * (at least 8) for the SEND test, 4 otherwise; control SENDs from a
 * small ring of slots. RDMA WRITE / READ tests target one data buffer shared by all
 * connections whose sizes fit it. Each connection has its own CQ so it can
 * be torn down alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwperf.h"
#include "tool_common.h"

#define KIND_RECV 1ull
#define KIND_CTRL 2ull
#define KIND_ECHO 3ull
#define WRID(kind, slot) ((kind) << 56 | (uint64_t)(slot))
#define MAX_POLLFDS 4100

struct sbuf {
	uint8_t *mem;
	size_t len;
	struct iw_mr *mr;
	unsigned refs;
};

enum sc_state { SC_ACCEPTING, SC_READY, SC_CLOSING, SC_CLOSED };

struct sconn {
	struct iw_cm_id *id;
	struct iw_qp *qp;
	struct iw_cq *cq;
	struct sbuf *buf;
	uint8_t *slots; /* R receive slots, then PERF_SERVER_CSENDS send slots */
	struct iw_mr *slot_mr;
	struct perf_hello h;
	uint32_t R;
	uint64_t reposted, credit_adv;
	uint64_t row_msgs, row_bytes, tot_msgs, tot_bytes;
	uint32_t ctrl_out, ctrl_posted, echo_out;
	bool ack_pending;
	uint32_t ack_row;
	enum sc_state state;
	bool failed, counted_lat;
	uint64_t t_start;
	char name[80];
	struct sconn *next;
};

struct srv {
	const struct perf_opts *o;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id;
	struct sconn *conns;
	unsigned nconns, lat_conns;
	struct sbuf *cur;
	struct perf_tcp_server *tcp;
	bool had_client;
	/* Last turn found completions: our posts transmit (and may complete)
	 * inline, so the next turn must not sleep before polling again. */
	bool hot;
};

/* ------------------------------------------------------------------ */
/* Shared data buffers                                                 */

static void buf_put(struct srv *s, struct sbuf *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	if (s->cur == b)
		s->cur = NULL;
	iw_dereg_mr(b->mr);
	free(b->mem);
	free(b);
}

static struct sbuf *buf_get(struct srv *s, size_t need)
{
	const unsigned rw = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct sbuf *b;

	if (s->cur && s->cur->len >= need) {
		s->cur->refs++;
		return s->cur;
	}
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->mem = tc_alloc_buf(need);
	if (b->mem == NULL || iw_reg_mr(s->pd, b->mem, need, rw, &b->mr) != 0) {
		free(b->mem);
		free(b);
		return NULL;
	}
	memset(b->mem, PERF_FILL, need);
	b->len = need;
	b->refs = 1;
	s->cur = b; /* a previous one lives on while its connections do */
	return b;
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static uint8_t *slot_ptr(const struct sconn *c, uint32_t slot)
{
	return c->slots + (size_t)slot * PERF_SLOT;
}

static int post_recv(struct sconn *c, uint32_t slot)
{
	struct iw_sge sge[2] = {
		{ (uintptr_t)slot_ptr(c, slot), PERF_SLOT, iw_mr_stag(c->slot_mr) },
		{ (uintptr_t)c->buf->mem, (uint32_t)c->buf->len, iw_mr_stag(c->buf->mr) },
	};
	struct iw_recv_wr wr = {
		.wr_id = WRID(KIND_RECV, slot),
		.sg_list = sge,
		.num_sge = c->h.test == PT_SEND || c->h.test == PT_LAT ? 2 : 1,
	};
	struct iw_recv_wr *bad;
	int rc = iw_post_recv(c->qp, &wr, &bad);

	if (rc)
		tc_err("%s: post receive: %s", c->name, strerror(-rc));
	return rc;
}

static void conn_fail(struct srv *s, struct sconn *c)
{
	(void)s;
	c->failed = true;
	if (c->state == SC_CLOSING || c->state == SC_CLOSED)
		return;
	tc_report_qp_error(c->name, c->qp);
	if (c->state == SC_READY && iw_cm_disconnect(c->id) == 0)
		c->state = SC_CLOSING;
	else
		c->state = SC_CLOSED;
}

static int post_ctrl(struct srv *s, struct sconn *c, const struct perf_ctrl *m)
{
	uint32_t slot = c->R + c->ctrl_posted % PERF_SERVER_CSENDS;
	struct iw_sge sge = { (uintptr_t)slot_ptr(c, slot), PERF_CTRL_LEN, iw_mr_stag(c->slot_mr) };
	struct iw_send_wr wr = { .wr_id = WRID(KIND_CTRL, slot), .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND };
	struct iw_send_wr *bad;
	int rc;

	perf_ctrl_encode(slot_ptr(c, slot), m);
	rc = iw_post_send(c->qp, &wr, &bad);
	if (rc) {
		tc_err("%s: post control SEND: %s", c->name, strerror(-rc));
		conn_fail(s, c);
		return rc;
	}
	c->ctrl_posted++;
	c->ctrl_out++;
	c->credit_adv = c->R + c->reposted;
	return 0;
}

/* Acknowledge a finished row; hand back SEND credits in SEND tests. */
static void service(struct srv *s, struct sconn *c)
{
	uint64_t credits = c->R + c->reposted;

	if (c->state != SC_READY)
		return;
	if (c->ack_pending && c->ctrl_out < PERF_SERVER_CSENDS) {
		struct perf_ctrl m = { PC_ROW_ACK, c->ack_row, credits, c->row_msgs, c->row_bytes };

		if (post_ctrl(s, c, &m))
			return;
		c->tot_msgs += c->row_msgs;
		c->tot_bytes += c->row_bytes;
		c->row_msgs = c->row_bytes = 0;
		c->ack_pending = false;
	}
	if (c->h.test == PT_SEND && credits - c->credit_adv >= c->R / 4 && c->ctrl_out < PERF_SERVER_CSENDS) {
		struct perf_ctrl m = { PC_CREDIT, 0, credits, 0, 0 };

		post_ctrl(s, c, &m);
	}
}

static void on_recv(struct srv *s, struct sconn *c, uint32_t slot, uint32_t len)
{
	struct perf_ctrl m;
	bool ctrl = len == PERF_CTRL_LEN && perf_ctrl_decode(slot_ptr(c, slot), len, &m) == 0;

	if (ctrl) {
		if (m.type != PC_ROW_END) {
			tc_err("%s: unexpected control message %u", c->name, m.type);
			conn_fail(s, c);
			return;
		}
		c->ack_pending = true;
		c->ack_row = m.row;
	} else {
		c->row_msgs++;
		c->row_bytes += len;
	}
	if (post_recv(c, slot)) {
		conn_fail(s, c);
		return;
	}
	c->reposted++;
	if (c->h.test == PT_LAT && !ctrl) {
		struct iw_sge sge = { (uintptr_t)c->buf->mem, len, iw_mr_stag(c->buf->mr) };
		struct iw_send_wr wr = { .wr_id = WRID(KIND_ECHO, 0), .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND };
		struct iw_send_wr *bad;
		int rc = iw_post_send(c->qp, &wr, &bad);

		if (rc) {
			tc_err("%s: post echo: %s", c->name, strerror(-rc));
			conn_fail(s, c);
			return;
		}
		c->echo_out++;
	}
}

static void on_wc(struct srv *s, struct sconn *c, const struct iw_wc *wc)
{
	uint64_t kind = wc->wr_id >> 56;

	if (wc->status != IW_WC_SUCCESS) {
		/* Flushes mean the connection is going; its DISCONNECTED event
		 * follows. Anything else is an error worth reporting. */
		if (c->state != SC_READY || wc->status == IW_WC_WR_FLUSH_ERR)
			return;
		tc_report_wc(c->name, wc);
		conn_fail(s, c);
		return;
	}
	switch (kind) {
	case KIND_RECV:
		on_recv(s, c, (uint32_t)wc->wr_id, wc->byte_len);
		break;
	case KIND_CTRL:
		c->ctrl_out--;
		break;
	case KIND_ECHO:
		c->echo_out--;
		break;
	default:
		break;
	}
}

static void conn_free(struct srv *s, struct sconn *c)
{
	if (c->qp)
		iw_destroy_qp(c->qp);
	if (c->id)
		iw_cm_destroy_id(c->id);
	if (c->cq)
		iw_destroy_cq(c->cq);
	if (c->slot_mr)
		iw_dereg_mr(c->slot_mr);
	free(c->slots);
	buf_put(s, c->buf);
	if (c->counted_lat)
		s->lat_conns--;
	s->nconns--;
	free(c);
}

static int conn_setup(struct srv *s, struct sconn *c)
{
	struct iw_qp_init_attr qa;
	size_t slots_len;
	uint32_t i;
	int rc;

	c->R = 4;
	if (c->h.test == PT_SEND) {
		/* Credits come back every R/4 reposts. The client's completed
		 * SENDs may still sit in the socket buffers (~10 MiB on
		 * loopback, ten 1 MiB messages), so with the former R = 2 x
		 * depth the credits, not the depth, throttled 1 MiB rows. */
		c->R = 4 * c->h.qd;
		if (c->R < 8)
			c->R = 8;
	}
	c->buf = buf_get(s, c->h.max_size < PERF_SLOT ? PERF_SLOT : c->h.max_size);
	if (c->buf == NULL)
		return -ENOMEM;
	slots_len = (size_t)(c->R + PERF_SERVER_CSENDS) * PERF_SLOT;
	c->slots = tc_alloc_buf(slots_len);
	if (c->slots == NULL)
		return -ENOMEM;
	rc = iw_reg_mr(s->pd, c->slots, slots_len, IW_ACCESS_LOCAL_WRITE, &c->slot_mr);
	if (!rc)
		rc = iw_create_cq(s->ctx, (int)(c->R + PERF_SERVER_CSENDS + 8), NULL, &c->cq);
	if (rc)
		return rc;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = PERF_SERVER_CSENDS + 2;
	qa.cap.max_recv_wr = c->R;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 2;
	qa.sq_sig_all = true;
	qa.qp_context = c;
	rc = iw_create_qp(s->pd, &qa, &c->qp);
	for (i = 0; !rc && i < c->R; i++)
		rc = post_recv(c, i);
	return rc;
}

static void reject(struct iw_cm_id *id, const char *why)
{
	iw_cm_reject(id, why, (uint16_t)(strlen(why) + 1));
	iw_cm_destroy_id(id);
}

static void on_connect_request(struct srv *s, struct iw_cm_event *ev)
{
	const struct perf_opts *o = s->o;
	struct iw_cm_id *id = ev->id;
	struct sockaddr_storage ss;
	struct iw_conn_param p;
	struct perf_advert adv;
	uint8_t pd[PERF_ADVERT_LEN];
	struct sconn *c;
	int rc;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		reject(id, "iwperf: server out of memory");
		return;
	}
	snprintf(c->name, sizeof(c->name), "client");
	if (iw_cm_peer_addr(id, &ss) == 0)
		tc_addr_str((struct sockaddr *)&ss, c->name, sizeof(c->name));
	if (perf_hello_decode(ev->private_data, ev->private_data_len, &c->h) != 0) {
		tc_err("%s: not an iwperf client (or another version); rejected", c->name);
		free(c);
		reject(id, "iwperf: bad hello (version mismatch?)");
		return;
	}
	c->id = id;
	c->state = SC_ACCEPTING;
	c->t_start = tc_now_ns();
	c->next = s->conns;
	s->conns = c;
	s->nconns++;
	iw_cm_id_set_context(id, c);
	rc = conn_setup(s, c);
	if (rc) {
		tc_err("%s: cannot set up: %s", c->name, strerror(-rc));
		iw_cm_reject(id, "iwperf: server out of resources", sizeof("iwperf: server out of resources"));
		c->state = SC_CLOSED;
		return;
	}
	adv.recv_depth = c->R;
	adv.addr = (uintptr_t)c->buf->mem;
	adv.rkey = iw_mr_stag(c->buf->mr);
	adv.len = (uint32_t)c->buf->len;
	perf_advert_encode(pd, &adv);
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = sizeof(pd);
	p.ird = ev->ord ? (ev->ord > 128 ? 128 : ev->ord) : 1;
	p.ord = ev->ird ? (ev->ird > 128 ? 128 : ev->ird) : 1;
	p.crc = o->crc_set ? o->crc : (enum iw_crc_policy)c->h.crc;
	p.markers = o->markers;
	p.max_ulpdu = c->h.max_ulpdu;
	p.timeout_ms = (int)(o->timeout_s * 1000);
	rc = iw_cm_accept(id, c->qp, &p);
	if (rc) {
		tc_err("%s: accept: %s", c->name, strerror(-rc));
		c->state = SC_CLOSED;
	}
}

static void on_cm_event(struct srv *s, struct iw_cm_event *ev)
{
	struct sconn *c;

	if (ev->type == IW_CM_EVENT_CONNECT_REQUEST) {
		on_connect_request(s, ev);
		iw_cm_ack_event(ev);
		return;
	}
	c = ev->id ? iw_cm_id_context(ev->id) : NULL;
	if (c == NULL) {
		iw_cm_ack_event(ev);
		return;
	}
	switch (ev->type) {
	case IW_CM_EVENT_ESTABLISHED:
		c->state = SC_READY;
		s->had_client = true;
		if (c->h.test == PT_LAT && !(c->h.flags & PERF_HELLO_WAIT)) {
			c->counted_lat = true;
			s->lat_conns++;
		}
		if (s->o->verbose)
			printf("%s: connected, test %s, QP %u/%u, max size %u, queue depth %u, CRC %s\n", c->name,
			       perf_test_name((enum perf_test)c->h.test), c->h.qp_index + 1, c->h.nqps, c->h.max_size,
			       c->h.qd, ev->crc ? "on" : "off");
		break;
	case IW_CM_EVENT_DISCONNECTED:
		if (c->state == SC_READY && s->o->verbose)
			printf("%s: disconnected, %llu messages, %llu bytes received in %.3f s\n", c->name,
			       (unsigned long long)(c->tot_msgs + c->row_msgs),
			       (unsigned long long)(c->tot_bytes + c->row_bytes),
			       (double)(tc_now_ns() - c->t_start) / 1e9);
		c->state = SC_CLOSED;
		break;
	case IW_CM_EVENT_CONNECT_ERROR:
	case IW_CM_EVENT_REJECTED:
		tc_report_cm_event(c->name, ev);
		c->state = SC_CLOSED;
		break;
	default:
		break;
	}
	iw_cm_ack_event(ev);
}

static void reap(struct srv *s)
{
	struct sconn **pp = &s->conns;

	while (*pp) {
		struct sconn *c = *pp;

		if (c->state != SC_CLOSED) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		conn_free(s, c);
	}
}

/* ------------------------------------------------------------------ */
/* Loop                                                                */

static int turn(struct srv *s, struct pollfd *pfd, uint64_t *last_listen_poll)
{
	bool spin = s->o->busy || s->lat_conns > 0 || perf_tcp_server_wants_spin(s->tcp) || s->hot;
	struct iw_cm_event *ev;
	struct sconn *c;
	int rc, n;

	if (perf_tcp_server_active(s->tcp) > 0) {
		/* TCP connections open: one poll over them and the context. */
		s->had_client = true;
		pfd[0].fd = iw_context_fd(s->ctx);
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		n = perf_tcp_server_pollfds(s->tcp, pfd + 1, MAX_POLLFDS - 1);
		if (poll(pfd, (nfds_t)n + 1, spin ? 0 : 100) < 0 && errno != EINTR) {
			tc_err("poll: %s", strerror(errno));
			return -1;
		}
		perf_tcp_server_service(s->tcp, pfd + 1, n);
		rc = iw_progress(s->ctx, 0);
	} else {
		rc = iw_progress(s->ctx, spin ? 0 : 50);
		if (tc_now_ns() - *last_listen_poll > 20000000ull) {
			*last_listen_poll = tc_now_ns();
			n = perf_tcp_server_pollfds(s->tcp, pfd, MAX_POLLFDS);
			if (n > 0 && poll(pfd, (nfds_t)n, 0) > 0)
				perf_tcp_server_service(s->tcp, pfd, n);
		}
	}
	if (rc < 0) {
		tc_err("progress: %s", strerror(-rc));
		return -1;
	}
	while (iw_cm_get_event(s->ch, &ev) == 0)
		on_cm_event(s, ev);
	s->hot = false;
	for (c = s->conns; c; c = c->next) {
		struct iw_wc wc[32];
		int i;

		if (c->cq == NULL || c->state == SC_CLOSED)
			continue;
		while ((n = iw_poll_cq(c->cq, 32, wc)) > 0) {
			s->hot = true;
			for (i = 0; i < n; i++)
				on_wc(s, c, &wc[i]);
		}
		service(s, c);
	}
	reap(s);
	return 0;
}

int perf_server(const struct perf_opts *o)
{
	struct sockaddr_storage ss;
	struct iw_context_attr ca;
	struct pollfd *pfd = NULL;
	struct srv s;
	uint64_t last = 0;
	char name[80];
	int rc, status = 1;

	memset(&s, 0, sizeof(s));
	s.o = o;
	memset(&ca, 0, sizeof(ca));
	ca.trace_path = o->trace;
	if (tc_transport_apply(&o->tr, &ca))
		return 2;
	rc = iw_context_create(&ca, &s.ctx);
	if (rc) {
		tc_err("create context: %s", strerror(-rc));
		return 1;
	}
	if ((rc = iw_alloc_pd(s.ctx, &s.pd)) || (rc = iw_cm_create_channel(s.ctx, &s.ch)) ||
	    (rc = iw_cm_create_id(s.ch, NULL, &s.listen_id))) {
		tc_err("setup: %s", strerror(-rc));
		goto out;
	}
	if (tc_resolve(o->bind, o->port, true, &ss, NULL))
		goto out;
	rc = iw_cm_listen(s.listen_id, (struct sockaddr *)&ss, 1024);
	if (rc) {
		tc_err("listen on %s: %s", tc_addr_str((struct sockaddr *)&ss, name, sizeof(name)), strerror(-rc));
		goto out;
	}
	/* The plain TCP baseline is kernel TCP: with the raw transport our
	 * address is not the kernel's, so it listens on every address. */
	struct perf_opts tcp_o = *o;
	if (o->tr.kind == IW_TRANSPORT_RAW)
		tcp_o.bind = NULL;
	if (perf_tcp_server_open(&tcp_o, &s.tcp))
		goto out;
	pfd = calloc(MAX_POLLFDS, sizeof(*pfd));
	if (pfd == NULL)
		goto out;
	if (o->verbose)
		printf("iwperf server: iWARP on port %s, TCP on port %s\n", o->port, o->tcp_port);
	/* Both ports are open now: say so (scripts wait for this line). */
	if (iw_cm_local_addr(s.listen_id, &ss) == 0) {
		char what[96];

		snprintf(what, sizeof(what), "(iWARP) and TCP port %s (plain TCP baseline)", o->tcp_port);
		tc_announce_listen((struct sockaddr *)&ss, what);
	}
	status = 0;
	while (!tc_stop) {
		if (turn(&s, pfd, &last)) {
			status = 1;
			break;
		}
		if (o->once && s.had_client && s.nconns == 0 && perf_tcp_server_active(s.tcp) == 0)
			break;
	}
out:
	free(pfd);
	while (s.conns) {
		struct sconn *c = s.conns;

		s.conns = c->next;
		conn_free(&s, c);
	}
	if (s.tcp)
		perf_tcp_server_close(s.tcp);
	if (s.listen_id)
		iw_cm_destroy_id(s.listen_id);
	if (s.ch)
		iw_cm_destroy_channel(s.ch);
	if (s.pd)
		iw_dealloc_pd(s.pd);
	rc = iw_context_destroy(s.ctx);
	if (rc)
		tc_err("destroy context: %s", strerror(-rc));
	return status;
}
