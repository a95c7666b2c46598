/* CM suite: the connection manager over the in-memory pipe network
 * (stack/transport/pipe/pipe_conn.h), no sockets. Connect, accept and
 * reject with private data, event order, disconnect from either side,
 * data over the established stream (with and without the RFC 6581 RTR),
 * the backlog, the connect, Reply and Request timeouts, protocol errors
 * from a scripted peer (a bare pipe connection), a QP destroyed during
 * the handshake, events that survive an allocation failure, and the
 * parameter checks. Waits block in iw_progress
 * (the CM's timers), bounded; nothing sleeps. */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/cm.h>

#include "iwt_check.h"
#include "mpa/mpa_frame.h"
#include "stack/internal.h"
#include "stack/transport/pipe/pipe_conn.h"

/* The sanitizers own malloc: the allocation-failure test needs its own. */
#if defined(__SANITIZE_ADDRESS__)
#define NO_ALLOC_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_ALLOC_HOOK 1
#endif
#endif

#ifndef NO_ALLOC_HOOK
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
static bool alloc_fails;
void *malloc(size_t n)
{
	return alloc_fails ? NULL : __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
	return alloc_fails ? NULL : __libc_calloc(n, m);
}
#endif

#define PORT 4791
#define WAIT_MS 5000 /* bound of every wait; the pipe answers at once */

struct env {
	struct iw_context *ctx;
	struct iw_pipe_net *net;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_channel *ch;
	struct iw_cm_id *lid;
};

static struct sockaddr_in addr(uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };
	s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return s;
}

static void env_init(struct env *e, const struct iw_pipe_net_opts *o)
{
	memset(e, 0, sizeof(*e));
	ck_assert_int_eq(iw_context_create(NULL, &e->ctx), 0);
	ck_assert_int_eq(iw_pipe_net_attach(e->ctx, o, &e->net), 0);
	ck_assert_int_eq(iw_alloc_pd(e->ctx, &e->pd), 0);
	ck_assert_int_eq(iw_create_cq(e->ctx, 256, NULL, &e->cq), 0);
	ck_assert_int_eq(iw_cm_create_channel(e->ctx, &e->ch), 0);
}

static void env_listen(struct env *e, const struct iw_listen_param *lp)
{
	struct sockaddr_in a = addr(PORT);
	ck_assert_int_eq(iw_cm_create_id(e->ch, NULL, &e->lid), 0);
	ck_assert_int_eq(iw_cm_listen_param(e->lid, (struct sockaddr *)&a, lp), 0);
}

static void env_up(struct env *e, const struct iw_pipe_net_opts *o, const struct iw_listen_param *lp)
{
	env_init(e, o);
	env_listen(e, lp);
}

static void env_fini(struct env *e)
{
	if (e->lid)
		ck_assert_int_eq(iw_cm_destroy_id(e->lid), 0);
	struct iw_cm_event *ev;
	while (iw_cm_get_event(e->ch, &ev) == 0)
		iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_destroy_channel(e->ch), 0);
	ck_assert_int_eq(iw_destroy_cq(e->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	iw_pipe_net_detach(e->net);
	ck_assert_int_eq(iw_context_destroy(e->ctx), 0);
}

static struct iw_qp *new_qp(struct env *e)
{
	struct iw_qp *qp;
	struct iw_qp_init_attr qa = { .send_cq = e->cq, .recv_cq = e->cq, .sq_sig_all = true };
	ck_assert_int_eq(iw_create_qp(e->pd, &qa, &qp), 0);
	return qp;
}

/* The next CM event, progressing (and blocking in iw_progress for the
 * CM's timers) until it comes; NULL after WAIT_MS. */
static struct iw_cm_event *next_event(struct env *e)
{
	struct iw_cm_event *ev;
	uint64_t end = iw_now_ms() + WAIT_MS;

	while (iw_cm_get_event(e->ch, &ev) != 0) {
		if (iw_now_ms() > end)
			return NULL;
		ck_assert_int_ge(iw_progress(e->ctx, 50), 0);
	}
	return ev;
}

/* The next event must be of this type (and status); it is acked unless
 * kept. */
static struct iw_cm_event *expect_event(struct env *e, enum iw_cm_event_type type, int status, bool keep)
{
	struct iw_cm_event *ev = next_event(e);
	ck_assert_msg(ev != NULL, "no CM event (expected %d)", type);
	ck_assert_int_eq(ev->type, type);
	ck_assert_int_eq(ev->status, status);
	if (!keep) {
		iw_cm_ack_event(ev);
		return NULL;
	}
	return ev;
}

/* Progress until nothing is left to do now. */
static void pump(struct env *e)
{
	for (int i = 0; i < 10000; i++)
		if (iw_progress(e->ctx, 0) == 0)
			return;
	ck_abort_msg("progress never quiesced");
}

static void no_event(struct env *e)
{
	struct iw_cm_event *ev;
	pump(e);
	ck_assert_int_eq(iw_cm_get_event(e->ch, &ev), -EAGAIN);
}

/* An established pair: a connects to the listener, b accepts. */
struct conn {
	struct iw_cm_id *a, *b;
	struct iw_qp *qa, *qb;
};

static void connect_until_request(struct env *e, struct conn *c, const struct iw_conn_param *pa)
{
	struct sockaddr_in a = addr(PORT);
	c->qa = new_qp(e);
	c->qb = new_qp(e);
	ck_assert_int_eq(iw_cm_create_id(e->ch, NULL, &c->a), 0);
	ck_assert_int_eq(iw_cm_connect(c->a, c->qa, (struct sockaddr *)&a, pa), 0);
	struct iw_cm_event *ev = expect_event(e, IW_CM_EVENT_CONNECT_REQUEST, 0, true);
	ck_assert_ptr_eq(ev->listen_id, e->lid);
	c->b = ev->id;
	iw_cm_ack_event(ev);
}

static void connect_pair(struct env *e, struct conn *c, const struct iw_conn_param *pa,
			 const struct iw_conn_param *pb)
{
	connect_until_request(e, c, pa);
	ck_assert_int_eq(iw_cm_accept(c->b, c->qb, pb), 0);
}

static void conn_fini(struct env *e, struct conn *c)
{
	if (c->a)
		ck_assert_int_eq(iw_cm_destroy_id(c->a), 0);
	if (c->b)
		ck_assert_int_eq(iw_cm_destroy_id(c->b), 0);
	if (c->qa)
		ck_assert_int_eq(iw_destroy_qp(c->qa), 0);
	if (c->qb)
		ck_assert_int_eq(iw_destroy_qp(c->qb), 0);
	pump(e);
}

/* A SEND from qa lands in qb's receive: the stream works both ways. */
static void send_one(struct env *e, struct iw_qp *from, struct iw_qp *to)
{
	static char src[64] = "through the pipe", dst[64];
	struct iw_mr *ms, *md;
	ck_assert_int_eq(iw_reg_mr(e->pd, src, sizeof(src), IW_ACCESS_LOCAL_WRITE, &ms), 0);
	ck_assert_int_eq(iw_reg_mr(e->pd, dst, sizeof(dst), IW_ACCESS_LOCAL_WRITE, &md), 0);
	memset(dst, 0, sizeof(dst));
	struct iw_sge rs = { (uint64_t)(uintptr_t)dst, sizeof(dst), iw_mr_stag(md) };
	struct iw_recv_wr rw = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
	ck_assert_int_eq(iw_post_recv(to, &rw, NULL), 0);
	struct iw_sge ss = { (uint64_t)(uintptr_t)src, sizeof(src), iw_mr_stag(ms) };
	struct iw_send_wr sw = { .wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IW_WR_SEND };
	ck_assert_int_eq(iw_post_send(from, &sw, NULL), 0);
	int got = 0;
	struct iw_wc wc[2];
	uint64_t end = iw_now_ms() + WAIT_MS;
	while (got < 2 && iw_now_ms() < end) {
		ck_assert_int_ge(iw_progress(e->ctx, 50), 0);
		int n = iw_poll_cq(e->cq, 2 - got, wc + got);
		ck_assert_int_ge(n, 0);
		got += n;
	}
	ck_assert_int_eq(got, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
	ck_assert_str_eq(dst, src);
	ck_assert_int_eq(iw_dereg_mr(ms), 0);
	ck_assert_int_eq(iw_dereg_mr(md), 0);
}

/* ------------------------------------------------------------------ */
/* A scripted peer: a bare pipe connection the test drives             */

static void peer_ready(void *arg)
{
	(void)arg; /* polled by the test */
}

static struct iw_conn *peer_connect(struct env *e, uint16_t port)
{
	struct sockaddr_in a = addr(port);
	struct iw_conn *c;
	iw_ctx_lock(e->ctx);
	ck_assert_int_eq(e->ctx->conn_factory->open(e->ctx->conn_factory, e->ctx, &c), 0);
	c->ready = peer_ready;
	ck_assert_int_eq(c->ops->connect(c, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(c->ops->connected(c), 1);
	iw_ctx_unlock(e->ctx);
	return c;
}

static struct iw_conn *peer_listen(struct env *e, uint16_t port)
{
	struct sockaddr_in a = addr(port);
	struct iw_conn *c;
	iw_ctx_lock(e->ctx);
	ck_assert_int_eq(e->ctx->conn_factory->open(e->ctx->conn_factory, e->ctx, &c), 0);
	c->ready = peer_ready;
	ck_assert_int_eq(c->ops->listen(c, (struct sockaddr *)&a, 4), 0);
	iw_ctx_unlock(e->ctx);
	return c;
}

static struct iw_conn *peer_accept(struct env *e, struct iw_conn *l)
{
	struct iw_conn *c;
	pump(e);
	iw_ctx_lock(e->ctx);
	ck_assert_int_eq(l->ops->accept(l, &c), 0);
	c->ready = peer_ready;
	iw_ctx_unlock(e->ctx);
	return c;
}

static void peer_send(struct env *e, struct iw_conn *c, const void *b, size_t n)
{
	iw_ctx_lock(e->ctx);
	ck_assert_int_eq(c->ops->send(c, b, n), (ssize_t)n);
	iw_ctx_unlock(e->ctx);
}

static ssize_t peer_recv(struct env *e, struct iw_conn *c, void *b, size_t n)
{
	iw_ctx_lock(e->ctx);
	ssize_t r = c->ops->recv(c, b, n);
	iw_ctx_unlock(e->ctx);
	return r;
}

/* The CM's end went away: the peer reads the end of the stream. */
static void peer_expect_end(struct env *e, struct iw_conn *c)
{
	uint8_t b[256];
	uint64_t end = iw_now_ms() + WAIT_MS;
	ssize_t r;
	while ((r = peer_recv(e, c, b, sizeof(b))) >= 0) {
		ck_assert_msg(iw_now_ms() < end, "the CM never closed");
		ck_assert_int_ge(iw_progress(e->ctx, 50), 0);
	}
	ck_assert_int_eq(r, -ECONNRESET);
}

static void peer_close(struct env *e, struct iw_conn *c, enum iw_conn_close how)
{
	iw_ctx_lock(e->ctx);
	c->ops->close(c, how);
	iw_ctx_unlock(e->ctx);
}

/* An MPA Request (rev 2, CRC) as an initiator sends it. */
static size_t request_bytes(uint8_t *buf, size_t cap, const char *pd)
{
	struct iw_mpa_frame f = {
		.kind = IW_MPA_REQUEST, .rev = 2, .crc = true, .enhanced = true, .ird = 4, .ord = 4,
		.pdata = (const uint8_t *)pd, .pdata_len = (uint16_t)strlen(pd),
	};
	ssize_t n = iw_mpa_frame_encode(&f, buf, cap, NULL);
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* Our initiator against a scripted responder (x->s: its end). */
struct active {
	struct iw_conn *l, *s;
	struct iw_cm_id *id;
	struct iw_qp *qp;
};

static void active_start(struct env *e, struct active *x, const struct iw_conn_param *p)
{
	struct sockaddr_in a = addr(PORT);

	if (!x->l)
		x->l = peer_listen(e, PORT);
	if (!x->qp)
		x->qp = new_qp(e);
	ck_assert_int_eq(iw_cm_create_id(e->ch, NULL, &x->id), 0);
	ck_assert_int_eq(iw_cm_connect(x->id, x->qp, (struct sockaddr *)&a, p), 0);
	x->s = peer_accept(e, x->l);
}

/* This connection is over; the listener and the QP stay. */
static void active_end(struct env *e, struct active *x)
{
	if (x->s)
		peer_close(e, x->s, IW_CONN_ABORT);
	x->s = NULL;
	ck_assert_int_eq(iw_cm_destroy_id(x->id), 0);
}

static void active_fini(struct env *e, struct active *x)
{
	active_end(e, x);
	peer_close(e, x->l, IW_CONN_ABORT);
	ck_assert_int_eq(iw_destroy_qp(x->qp), 0);
}

/* A scripted initiator whose Request is out. */
static struct iw_conn *peer_request(struct env *e, const char *pd)
{
	uint8_t buf[600];
	struct iw_conn *p = peer_connect(e, PORT);
	peer_send(e, p, buf, request_bytes(buf, sizeof(buf), pd));
	return p;
}

/* The next event is a CONNECT_REQUEST: its new id. */
static struct iw_cm_id *fetch_request(struct env *e)
{
	struct iw_cm_event *ev = expect_event(e, IW_CM_EVENT_CONNECT_REQUEST, 0, true);
	struct iw_cm_id *id = ev->id;
	iw_cm_ack_event(ev);
	return id;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

START_TEST(test_connect_accept_private_data)
{
	struct env e;
	struct conn c;
	static const char rq[] = "hello from a", rp[] = "and from b";
	struct iw_conn_param pa = { .private_data = rq, .private_data_len = sizeof(rq) };
	struct iw_conn_param pb = { .private_data = rp, .private_data_len = sizeof(rp) };

	env_up(&e, NULL, NULL);
	struct sockaddr_in a = addr(PORT);
	c.qa = new_qp(&e);
	c.qb = new_qp(&e);
	ck_assert_int_eq(iw_cm_create_id(e.ch, NULL, &c.a), 0);
	ck_assert_int_eq(iw_cm_connect(c.a, c.qa, (struct sockaddr *)&a, &pa), 0);
	struct iw_cm_event *ev = expect_event(&e, IW_CM_EVENT_CONNECT_REQUEST, 0, true);
	ck_assert_int_eq(ev->private_data_len, sizeof(rq));
	ck_assert_mem_eq(ev->private_data, rq, sizeof(rq));
	ck_assert_int_eq(ev->mpa_rev, 2);
	ck_assert(ev->crc);
	c.b = ev->id;
	iw_cm_ack_event(ev);
	/* Both ends know their addresses. */
	struct sockaddr_storage la, pa2;
	ck_assert_int_eq(iw_cm_peer_addr(c.b, &pa2), 0);
	ck_assert_int_eq(iw_cm_local_addr(c.a, &la), 0);
	ck_assert_int_eq(((struct sockaddr_in *)&pa2)->sin_port, ((struct sockaddr_in *)&la)->sin_port);
	ck_assert_int_eq(iw_cm_accept(c.b, c.qb, &pb), 0);
	/* The responder is established first (its Reply went out), then the
	 * initiator with the responder's private data. */
	ev = expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, true);
	ck_assert_ptr_eq(ev->id, c.b);
	ck_assert_int_eq(ev->private_data_len, sizeof(rq));
	iw_cm_ack_event(ev);
	ev = expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, true);
	ck_assert_ptr_eq(ev->id, c.a);
	ck_assert_int_eq(ev->private_data_len, sizeof(rp));
	ck_assert_mem_eq(ev->private_data, rp, sizeof(rp));
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_qp_state(c.qa), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_state(c.qb), IW_QPS_RTS);
	send_one(&e, c.qa, c.qb);
	send_one(&e, c.qb, c.qa);
	no_event(&e);
	conn_fini(&e, &c);
	env_fini(&e);
}
END_TEST

/* Peer-to-peer: the initiator's zero-length WRITE RTR opens the
 * responder's gate; markers and no CRC take the other framing path. */
START_TEST(test_p2p_rtr_markers)
{
	struct env e;
	struct conn c;
	struct iw_conn_param p = { .p2p = true, .rtr_types = IW_RTR_WRITE, .markers = true, .crc = IW_CRC_OFF,
				   .first_fpdu_delay_ms = -1 };

	env_up(&e, NULL, NULL);
	connect_pair(&e, &c, &p, &p);
	expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
	struct iw_cm_event *ev = expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, true);
	ck_assert(ev->markers_tx);
	ck_assert(!ev->crc);
	iw_cm_ack_event(ev);
	send_one(&e, c.qb, c.qa); /* the responder may only talk after the RTR */
	send_one(&e, c.qa, c.qb);
	conn_fini(&e, &c);
	env_fini(&e);
}
END_TEST

START_TEST(test_disconnect_both_sides_told)
{
	for (int side = 0; side < 2; side++) {
		struct env e;
		struct conn c;
		env_up(&e, NULL, NULL);
		connect_pair(&e, &c, NULL, NULL);
		expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
		expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
		ck_assert_int_eq(iw_cm_disconnect(side ? c.b : c.a), 0);
		ck_assert_int_eq(iw_cm_disconnect(side ? c.b : c.a), 0); /* again: nothing new */
		struct iw_cm_event *e1 = expect_event(&e, IW_CM_EVENT_DISCONNECTED, 0, true);
		struct iw_cm_event *e2 = expect_event(&e, IW_CM_EVENT_DISCONNECTED, 0, true);
		ck_assert(e1->id != e2->id);
		ck_assert(e1->id == c.a || e1->id == c.b);
		ck_assert(e2->id == c.a || e2->id == c.b);
		iw_cm_ack_event(e1);
		iw_cm_ack_event(e2);
		no_event(&e);
		ck_assert_int_eq(iw_cm_disconnect(c.a), 0);
		conn_fini(&e, &c);
		env_fini(&e);
	}
}
END_TEST

/* Destroying one end's QP resets the stream: the other end hears of it. */
START_TEST(test_qp_destroyed_peer_disconnected)
{
	struct env e;
	struct conn c;
	env_up(&e, NULL, NULL);
	connect_pair(&e, &c, NULL, NULL);
	expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
	expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
	ck_assert_int_eq(iw_destroy_qp(c.qb), 0);
	c.qb = NULL;
	/* b's id loses its transport (DISCONNECTED, status 0); a sees the reset. */
	struct iw_cm_event *e1 = expect_event(&e, IW_CM_EVENT_DISCONNECTED, 0, true);
	ck_assert_ptr_eq(e1->id, c.b);
	iw_cm_ack_event(e1);
	e1 = expect_event(&e, IW_CM_EVENT_DISCONNECTED, -ECONNRESET, true);
	ck_assert_ptr_eq(e1->id, c.a);
	iw_cm_ack_event(e1);
	conn_fini(&e, &c);
	env_fini(&e);
}
END_TEST

START_TEST(test_reject_private_data)
{
	struct env e;
	struct conn c;
	static const char why[] = "not today";

	env_up(&e, NULL, NULL);
	connect_until_request(&e, &c, NULL);
	ck_assert_int_eq(iw_cm_reject(c.b, why, sizeof(why)), 0);
	struct iw_cm_event *ev = expect_event(&e, IW_CM_EVENT_REJECTED, -ECONNREFUSED, true);
	ck_assert_ptr_eq(ev->id, c.a);
	ck_assert_int_eq(ev->private_data_len, sizeof(why));
	ck_assert_mem_eq(ev->private_data, why, sizeof(why));
	iw_cm_ack_event(ev);
	/* Decided: neither accept nor a second reject. */
	ck_assert_int_eq(iw_cm_accept(c.b, c.qb, NULL), -ECONNABORTED);
	ck_assert_int_eq(iw_cm_reject(c.b, NULL, 0), -ECONNABORTED);
	ck_assert_int_eq(iw_qp_state(c.qa), IW_QPS_INIT);
	no_event(&e);
	conn_fini(&e, &c);
	env_fini(&e);
}
END_TEST

START_TEST(test_refused_without_listener)
{
	struct env e;
	struct iw_cm_id *id;
	struct sockaddr_in a = addr(PORT + 1);

	env_init(&e, NULL);
	struct iw_qp *qp = new_qp(&e);
	ck_assert_int_eq(iw_cm_create_id(e.ch, NULL, &id), 0);
	ck_assert_int_eq(iw_cm_connect(id, qp, (struct sockaddr *)&a, NULL), 0);
	struct iw_cm_event *ev = expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ECONNREFUSED, true);
	ck_assert_ptr_eq(ev->id, id);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	env_fini(&e);
}
END_TEST

START_TEST(test_connect_timeout)
{
	struct env e;
	struct iw_cm_id *id;
	struct sockaddr_in a = addr(PORT);
	struct iw_pipe_net_opts o = { .connect_hangs = true };
	struct iw_conn_param p = { .timeout_ms = 30 };

	env_init(&e, &o);
	struct iw_qp *qp = new_qp(&e);
	ck_assert_int_eq(iw_cm_create_id(e.ch, NULL, &id), 0);
	ck_assert_int_eq(iw_cm_connect(id, qp, (struct sockaddr *)&a, &p), 0);
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, false);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	env_fini(&e);
}
END_TEST

/* A responder that takes the Request and never replies. */
START_TEST(test_reply_timeout)
{
	struct env e;
	struct active x = { 0 };
	struct iw_conn_param p = { .timeout_ms = 30 };
	uint8_t buf[600];

	env_init(&e, NULL);
	active_start(&e, &x, &p);
	ck_assert_int_eq(peer_recv(&e, x.s, buf, sizeof(buf)), IW_MPA_FRAME_HDR_LEN + 4); /* Request, rev 2 words */
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, false);
	peer_expect_end(&e, x.s);
	active_fini(&e, &x);
	env_fini(&e);
}
END_TEST

/* A Reply that is not one: the initiator fails with -EPROTO. */
START_TEST(test_bad_reply)
{
	struct env e;
	struct active x = { 0 };
	uint8_t buf[600];

	env_init(&e, NULL);
	active_start(&e, &x, NULL);
	ck_assert_int_gt(peer_recv(&e, x.s, buf, sizeof(buf)), 0);
	size_t n = request_bytes(buf, sizeof(buf), "x"); /* a Request where the Reply belongs */
	peer_send(&e, x.s, buf, n);
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -EPROTO, false);
	active_end(&e, &x);
	/* PD_Length beyond the RFC's 512 fails before the data arrives. */
	active_start(&e, &x, NULL);
	memset(buf, 0, IW_MPA_FRAME_HDR_LEN);
	memcpy(buf, IW_MPA_KEY_REP, IW_MPA_KEY_LEN);
	buf[17] = 2;
	buf[18] = 0x02; /* 513 */
	buf[19] = 0x01;
	peer_send(&e, x.s, buf, IW_MPA_FRAME_HDR_LEN);
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -EPROTO, false);
	active_fini(&e, &x);
	env_fini(&e);
}
END_TEST

/* The responder resets during the exchange. */
START_TEST(test_reset_during_exchange)
{
	struct env e;
	struct active x = { 0 };

	env_init(&e, NULL);
	active_start(&e, &x, NULL);
	peer_close(&e, x.s, IW_CONN_ABORT);
	x.s = NULL;
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ECONNRESET, false);
	active_fini(&e, &x);
	env_fini(&e);
}
END_TEST

/* Passive side: no Request in time, garbage, or bytes behind the
 * Request: the connection is reset and the application never hears of
 * it. */
START_TEST(test_request_timeout_and_garbage)
{
	struct env e;
	struct iw_listen_param lp = { .request_timeout_ms = 30 };
	uint8_t buf[600];

	env_up(&e, NULL, &lp);
	struct iw_conn *p = peer_connect(&e, PORT);
	peer_expect_end(&e, p); /* the request timeout */
	peer_close(&e, p, IW_CONN_ABORT);

	p = peer_connect(&e, PORT);
	memset(buf, 'G', 64);
	peer_send(&e, p, buf, 64);
	peer_expect_end(&e, p);
	peer_close(&e, p, IW_CONN_ABORT);

	p = peer_connect(&e, PORT);
	size_t n = request_bytes(buf, sizeof(buf), "early");
	buf[n++] = 0; /* an FPDU byte before our Reply */
	peer_send(&e, p, buf, n);
	peer_expect_end(&e, p);
	peer_close(&e, p, IW_CONN_ABORT);
	no_event(&e);
	env_fini(&e);
}
END_TEST

/* After the application fetched the CONNECT_REQUEST the peer must stay
 * silent; bytes now fail the id with CONNECT_ERROR, a reset too. */
START_TEST(test_peer_talks_before_accept)
{
	struct env e;

	env_up(&e, NULL, NULL);
	for (int reset = 0; reset < 2; reset++) {
		struct iw_conn *p = peer_request(&e, "req");
		struct iw_cm_id *id = fetch_request(&e);
		if (reset) {
			peer_close(&e, p, IW_CONN_ABORT);
			expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ECONNRESET, false);
		} else {
			peer_send(&e, p, "x", 1);
			expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -EPROTO, false);
			peer_expect_end(&e, p);
			peer_close(&e, p, IW_CONN_ABORT);
		}
		struct iw_qp *qp = new_qp(&e);
		ck_assert_int_eq(iw_cm_accept(id, qp, NULL), -ECONNABORTED);
		ck_assert_int_eq(iw_destroy_qp(qp), 0);
		ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	}
	env_fini(&e);
}
END_TEST

/* A Request whose peer leaves before the application fetched it: the
 * event goes with the id. */
START_TEST(test_unfetched_request_dropped)
{
	struct env e;

	env_up(&e, NULL, NULL);
	struct iw_conn *p = peer_request(&e, "bye");
	pump(&e);
	peer_close(&e, p, IW_CONN_ABORT);
	no_event(&e);
	env_fini(&e);
}
END_TEST

/* Connections beyond the backlog are reset at once. */
START_TEST(test_backlog)
{
	struct env e;
	struct iw_listen_param lp = { .backlog = 1 };

	env_up(&e, NULL, &lp);
	struct iw_conn *p1 = peer_request(&e, "one");
	struct iw_cm_id *id = fetch_request(&e);
	struct iw_conn *p2 = peer_connect(&e, PORT);
	peer_expect_end(&e, p2);
	peer_close(&e, p2, IW_CONN_ABORT);
	/* Rejecting the first frees its place. */
	ck_assert_int_eq(iw_cm_reject(id, NULL, 0), 0);
	struct iw_conn *p3 = peer_request(&e, "three");
	ck_assert_int_eq(iw_cm_destroy_id(fetch_request(&e)), 0);
	peer_close(&e, p3, IW_CONN_ABORT);
	peer_close(&e, p1, IW_CONN_ABORT);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	env_fini(&e);
}
END_TEST

/* Issue 19: a newcomer over the backlog never evicts a connection whose
 * Request arrived, nor one younger than the eviction grace; each refusal
 * is counted. */
START_TEST(test_backlog_eviction_rules)
{
	struct env e;
	struct iw_listen_param lp = { .backlog = 2 };
	struct iw_listen_stats st;

	env_up(&e, NULL, &lp);
	struct iw_conn *p1 = peer_request(&e, "one");
	struct iw_cm_id *id = fetch_request(&e);
	struct iw_conn *p2 = peer_connect(&e, PORT); /* silent, just born */
	pump(&e);
	struct iw_conn *p3 = peer_connect(&e, PORT);
	peer_expect_end(&e, p3);
	ck_assert_int_eq(iw_cm_listen_stats(e.lid, &st), 0);
	ck_assert_uint_eq(st.pending, 2);
	ck_assert_uint_eq(st.requests, 1);
	ck_assert_uint_eq(st.refused_backlog + st.refused_source, 1);
	ck_assert_uint_eq(st.evicted_backlog + st.evicted_source, 0);
	/* Not a listener; bad parameters. */
	ck_assert_int_eq(iw_cm_listen_stats(id, &st), -EINVAL);
	ck_assert_int_eq(iw_cm_listen_stats(e.lid, NULL), -EINVAL);
	peer_close(&e, p3, IW_CONN_ABORT);
	peer_close(&e, p2, IW_CONN_ABORT);
	peer_close(&e, p1, IW_CONN_ABORT);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	env_fini(&e);
}
END_TEST

/* Negative silent deadline or per-source cap: -EINVAL. */
START_TEST(test_listen_param_bad)
{
	struct env e;
	struct sockaddr_in a = addr(PORT + 1);
	struct iw_cm_id *id;

	env_init(&e, NULL);
	ck_assert_int_eq(iw_cm_create_id(e.ch, NULL, &id), 0);
	struct iw_listen_param bad1 = { .silent_timeout_ms = -1 };
	struct iw_listen_param bad2 = { .per_source_max = -1 };
	ck_assert_int_eq(iw_cm_listen_param(id, (struct sockaddr *)&a, &bad1), -EINVAL);
	ck_assert_int_eq(iw_cm_listen_param(id, (struct sockaddr *)&a, &bad2), -EINVAL);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	env_fini(&e);
}
END_TEST

/* The QP goes away while its connection is still in the exchange. */
START_TEST(test_qp_destroyed_during_handshake)
{
	struct env e;
	struct conn c;

	env_up(&e, NULL, NULL);
	connect_until_request(&e, &c, NULL);
	ck_assert_int_eq(iw_destroy_qp(c.qa), 0);
	c.qa = NULL;
	ck_assert_int_eq(iw_cm_accept(c.b, c.qb, NULL), 0);
	/* b is established; a's Reply finds no QP: -ECANCELED, and b's
	 * stream is reset. */
	expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ECANCELED, false);
	expect_event(&e, IW_CM_EVENT_DISCONNECTED, -ECONNRESET, false);
	conn_fini(&e, &c);
	env_fini(&e);
}
END_TEST

/* A failing connection setup step after the exchange (dead-peer options)
 * fails the id instead of establishing it. */
START_TEST(test_dead_peer_setup_fails)
{
	struct env e;
	struct conn c;
	struct iw_pipe_net_opts o = { .dead_peer_err = -ENOPROTOOPT };
	struct iw_conn_param p = { .dead_peer_timeout_ms = 1000 };

	env_up(&e, &o, NULL);
	connect_until_request(&e, &c, &p);
	ck_assert_int_eq(iw_cm_accept(c.b, c.qb, NULL), 0); /* no dead-peer option on b */
	expect_event(&e, IW_CM_EVENT_ESTABLISHED, 0, false);
	expect_event(&e, IW_CM_EVENT_CONNECT_ERROR, -ENOPROTOOPT, false);
	expect_event(&e, IW_CM_EVENT_DISCONNECTED, -ECONNRESET, false);
	ck_assert_int_eq(iw_qp_state(c.qa), IW_QPS_INIT);
	conn_fini(&e, &c);
	env_fini(&e);
}
END_TEST

/* Out of memory when the exchange ends: both ids still hear of it (their
 * events were allocated with them; a lost event would leave the
 * application waiting forever). */
START_TEST(test_events_survive_no_memory)
{
#ifdef NO_ALLOC_HOOK
	return;
#else
	struct env e;
	struct conn c;
	struct iw_cm_event *ev[2];

	env_up(&e, NULL, NULL);
	connect_until_request(&e, &c, NULL);
	/* No Check assertions while allocations fail: they allocate too. */
	alloc_fails = true;
	int rc = iw_cm_accept(c.b, c.qb, NULL), n = 0, prc = 0;
	uint64_t end = iw_now_ms() + WAIT_MS;
	ev[0] = ev[1] = NULL;
	while (n < 2 && prc >= 0 && iw_now_ms() < end) {
		if (iw_cm_get_event(e.ch, &ev[n]) == 0)
			n++;
		else
			prc = iw_progress(e.ctx, 50);
	}
	alloc_fails = false;
	ck_assert_int_eq(rc, 0);
	ck_assert_int_ge(prc, 0);
	ck_assert_ptr_nonnull(ev[0]);
	ck_assert_ptr_nonnull(ev[1]);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ev[i]->type, IW_CM_EVENT_CONNECT_ERROR);
		if (ev[i]->id == c.b)
			ck_assert_int_eq(ev[i]->status, -ENOMEM);
		else
			ck_assert(ev[i]->id == c.a && ev[i]->status < 0);
	}
	ck_assert(ev[0]->id != ev[1]->id);
	iw_cm_ack_event(ev[0]);
	iw_cm_ack_event(ev[1]);
	conn_fini(&e, &c);
	env_fini(&e);
#endif
}
END_TEST

START_TEST(test_parameters_refused)
{
	struct env e;
	struct iw_cm_id *id;
	struct sockaddr_in a = addr(PORT);
	static uint8_t pd[600];

	env_init(&e, NULL);
	struct iw_qp *qp = new_qp(&e);
	ck_assert_int_eq(iw_cm_create_id(e.ch, NULL, &id), 0);
	struct iw_conn_param bad[] = {
		{ .mpa_rev = 3 },
		{ .private_data = pd, .private_data_len = 509 },
		{ .private_data_len = 4 },
		{ .ird = 1000 },
		{ .crc = (enum iw_crc_policy)7 },
		{ .p2p = true, .mpa_rev = 1 },
		{ .max_ulpdu = 10 },
		{ .dead_peer_timeout_ms = 5 },
		{ .timeout_ms = -1 },
		{ .first_fpdu_delay_ms = -2 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(iw_cm_connect(id, qp, (struct sockaddr *)&a, &bad[i]), -EINVAL);
	struct sockaddr sa = { .sa_family = AF_UNIX };
	ck_assert_int_eq(iw_cm_connect(id, qp, &sa, NULL), -EINVAL);
	ck_assert_int_eq(iw_cm_listen(id, &sa, 1), -EINVAL);
	struct iw_listen_param lp = { .request_timeout_ms = -1 };
	ck_assert_int_eq(iw_cm_listen_param(id, (struct sockaddr *)&a, &lp), -EINVAL);
	ck_assert_int_eq(iw_cm_disconnect(id), -ENOTCONN);
	/* Two listeners on one port: the second is refused by the network. */
	env_listen(&e, NULL);
	struct iw_cm_id *l2;
	ck_assert_int_eq(iw_cm_create_id(e.ch, NULL, &l2), 0);
	ck_assert_int_eq(iw_cm_listen(l2, (struct sockaddr *)&a, 1), -EADDRINUSE);
	ck_assert_int_eq(iw_cm_listen(e.lid, (struct sockaddr *)&a, 1), -EINVAL); /* already listening */
	ck_assert_int_eq(iw_cm_destroy_id(l2), 0);
	no_event(&e);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	env_fini(&e);
}
END_TEST

static Suite *cm_suite(void)
{
	Suite *s = suite_create("cm");
	TCase *tc = tcase_create("pipe");
	tcase_add_test(tc, test_connect_accept_private_data);
	tcase_add_test(tc, test_p2p_rtr_markers);
	tcase_add_test(tc, test_disconnect_both_sides_told);
	tcase_add_test(tc, test_qp_destroyed_peer_disconnected);
	tcase_add_test(tc, test_reject_private_data);
	tcase_add_test(tc, test_refused_without_listener);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_reply_timeout);
	tcase_add_test(tc, test_bad_reply);
	tcase_add_test(tc, test_reset_during_exchange);
	tcase_add_test(tc, test_request_timeout_and_garbage);
	tcase_add_test(tc, test_peer_talks_before_accept);
	tcase_add_test(tc, test_unfetched_request_dropped);
	tcase_add_test(tc, test_backlog);
	tcase_add_test(tc, test_backlog_eviction_rules);
	tcase_add_test(tc, test_listen_param_bad);
	tcase_add_test(tc, test_qp_destroyed_during_handshake);
	tcase_add_test(tc, test_dead_peer_setup_fails);
	tcase_add_test(tc, test_events_survive_no_memory);
	tcase_add_test(tc, test_parameters_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(cm_suite());
}
