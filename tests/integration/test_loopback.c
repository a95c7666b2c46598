/* Loopback integration tests: the connection manager, the kernel TCP
 * transport and tracing, with verbs traffic between two QPs of this
 * process over 127.0.0.1 / ::1. One context drives both ends (iw_progress
 * is called from the waiting loops); every wait is bounded. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "iwt_handshake.h"
#include "mpa/mpa_wire.h"
#include "tshark_run.h"

#define WAIT_MS 10000
#define MIB (1024u * 1024u)

static struct iw_context *ctx;
static bool threaded; /* ctx runs its own progress thread: just wait */

/* Let the stack work for a moment. */
static void pump(int ms)
{
	if (threaded)
		usleep((useconds_t)ms * 1000u);
	else
		iw_progress(ctx, ms);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void setup(void)
{
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
}

static void teardown(void)
{
	if (ctx)
		ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ctx = NULL;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */

static struct iw_cm_event *ev_wait(struct iw_cm_channel *ch, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct iw_cm_event *ev;

	for (;;) {
		if (iw_cm_get_event(ch, &ev) == 0)
			return ev;
		if (now_ms() > end)
			return NULL;
		pump(2);
	}
}

static struct iw_cm_event *ev_expect(struct iw_cm_channel *ch, enum iw_cm_event_type type)
{
	struct iw_cm_event *ev = ev_wait(ch, WAIT_MS);

	ck_assert_msg(ev != NULL, "no CM event, expected %d", type);
	ck_assert_msg(ev->type == type, "CM event %d (status %d), expected %d", ev->type, ev->status, type);
	return ev;
}

static void ev_expect_ack(struct iw_cm_channel *ch, enum iw_cm_event_type type)
{
	iw_cm_ack_event(ev_expect(ch, type));
}

/* ------------------------------------------------------------------ */
/* Endpoints and connected pairs                                       */

struct ep {
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
};

struct pair {
	struct iw_cm_channel *sch, *cch; /* server (listener + children), client */
	struct iw_cm_id *listen;
	struct ep c, s;
	struct sockaddr_storage addr;
};

static void ep_init(struct ep *e)
{
	struct iw_qp_init_attr qa = { 0 };

	memset(e, 0, sizeof(*e));
	ck_assert_int_eq(iw_alloc_pd(ctx, &e->pd), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 1024, NULL, &e->cq), 0);
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.cap.max_send_wr = 256;
	qa.cap.max_recv_wr = 256;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	qa.sq_sig_all = true;
	ck_assert_int_eq(iw_create_qp(e->pd, &qa, &e->qp), 0);
}

static void ep_fini(struct ep *e)
{
	if (e->qp)
		ck_assert_int_eq(iw_destroy_qp(e->qp), 0);
	if (e->id)
		ck_assert_int_eq(iw_cm_destroy_id(e->id), 0);
	if (e->cq)
		ck_assert_int_eq(iw_destroy_cq(e->cq), 0);
	if (e->pd)
		ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	memset(e, 0, sizeof(*e));
}

static void loopback_addr(int family, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
}

static uint16_t ss_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Channels and a listener on the loopback address of family, port 0. */
static void pair_listen(struct pair *p, int family, int backlog)
{
	struct sockaddr_storage any;

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(iw_cm_create_channel(ctx, &p->sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(ctx, &p->cch), 0);
	ck_assert_int_eq(iw_cm_create_id(p->sch, p, &p->listen), 0);
	loopback_addr(family, &any);
	ck_assert_int_eq(iw_cm_listen(p->listen, (struct sockaddr *)&any, backlog), 0);
	ck_assert_int_eq(iw_cm_local_addr(p->listen, &p->addr), 0);
	ck_assert_int_ne(ss_port(&p->addr), 0);
}

/* The server's side of one connection request: accept with sparam. */
static void pair_accept(struct pair *p, const struct iw_conn_param *sparam)
{
	struct iw_cm_event *ev = ev_expect(p->sch, IW_CM_EVENT_CONNECT_REQUEST);

	ck_assert_ptr_eq(ev->listen_id, p->listen);
	p->s.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(p->s.id, p->s.qp, sparam), 0);
}

static void pair_connect(struct pair *p, int family, const struct iw_conn_param *cparam,
			 const struct iw_conn_param *sparam)
{
	pair_listen(p, family, 8);
	ep_init(&p->c);
	ep_init(&p->s);
	ck_assert_int_eq(iw_cm_create_id(p->cch, NULL, &p->c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p->c.id, p->c.qp, (struct sockaddr *)&p->addr, cparam), 0);
	pair_accept(p, sparam);
	ev_expect_ack(p->sch, IW_CM_EVENT_ESTABLISHED);
	ev_expect_ack(p->cch, IW_CM_EVENT_ESTABLISHED);
	ck_assert_int_eq(iw_qp_state(p->c.qp), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_state(p->s.qp), IW_QPS_RTS);
}

static void pair_free(struct pair *p)
{
	ep_fini(&p->c);
	ep_fini(&p->s);
	if (p->listen)
		ck_assert_int_eq(iw_cm_destroy_id(p->listen), 0);
	p->listen = NULL;
	if (p->sch)
		ck_assert_int_eq(iw_cm_destroy_channel(p->sch), 0);
	if (p->cch)
		ck_assert_int_eq(iw_cm_destroy_channel(p->cch), 0);
	p->sch = p->cch = NULL;
}

/* Disconnect from the client; both sides see DISCONNECTED. */
static void pair_close(struct pair *p)
{
	ck_assert_int_eq(iw_cm_disconnect(p->c.id), 0);
	ev_expect_ack(p->cch, IW_CM_EVENT_DISCONNECTED);
	ev_expect_ack(p->sch, IW_CM_EVENT_DISCONNECTED);
	pair_free(p);
}

/* ------------------------------------------------------------------ */
/* Work requests                                                       */

static int poll_n(struct iw_cq *cq, struct iw_wc *wc, int n, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int got = 0;

	while (got < n) {
		int k = iw_poll_cq(cq, n - got, wc + got);
		ck_assert_int_ge(k, 0);
		got += k;
		if (got == n || now_ms() > end)
			break;
		if (!k)
			pump(2);
	}
	return got;
}

static struct iw_wc wait_wc(struct iw_cq *cq)
{
	struct iw_wc wc;

	ck_assert_msg(poll_n(cq, &wc, 1, WAIT_MS) == 1, "no completion");
	return wc;
}

static void post_recv(struct ep *e, void *buf, size_t len, struct iw_mr *mr, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, iw_mr_stag(mr) };
	struct iw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	ck_assert_int_eq(iw_post_recv(e->qp, &wr, &bad), 0);
}

static void post_op(struct ep *e, enum iw_wr_opcode op, void *buf, size_t len, struct iw_mr *mr, uint64_t raddr,
		    uint32_t rkey, uint32_t inv, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, mr ? iw_mr_stag(mr) : 0 };
	struct iw_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = op == IW_WR_LOCAL_INV ? NULL : &sge,
		.num_sge = op == IW_WR_LOCAL_INV ? 0 : 1,
		.opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.remote_addr = raddr,
		.rkey = rkey,
		.invalidate_rkey = inv,
	}, *bad = NULL;

	ck_assert_int_eq(iw_post_send(e->qp, &wr, &bad), 0);
}

static void expect_ok(struct iw_wc wc, uint64_t wr_id, enum iw_wc_opcode op)
{
	ck_assert_msg(wc.status == IW_WC_SUCCESS, "wr %llu: status %s", (unsigned long long)wc.wr_id,
		      iw_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, wr_id);
	ck_assert_int_eq(wc.opcode, op);
}

/* Two completions in either order (sends and receives share the CQ). */
static void expect_two(struct iw_cq *cq, uint64_t id_a, enum iw_wc_opcode op_a, uint64_t id_b,
		       enum iw_wc_opcode op_b)
{
	struct iw_wc wc[2];

	ck_assert_int_eq(poll_n(cq, wc, 2, WAIT_MS), 2);
	if (wc[0].wr_id != id_a) {
		struct iw_wc t = wc[0];
		wc[0] = wc[1];
		wc[1] = t;
	}
	expect_ok(wc[0], id_a, op_a);
	expect_ok(wc[1], id_b, op_b);
}

/* ------------------------------------------------------------------ */
/* Connection management                                               */

static void check_pdata_roundtrip(int family)
{
	static const char creq[] = "hello from the initiator", crep[] = "and back from the responder";
	struct iw_conn_param cp = { .private_data = creq, .private_data_len = sizeof(creq) };
	struct iw_conn_param sp = { .private_data = crep, .private_data_len = sizeof(crep), .ird = 8, .ord = 4 };
	struct pair p;
	struct iw_cm_event *ev;
	struct sockaddr_storage a;

	pair_listen(&p, family, 8);
	ep_init(&p.c);
	ep_init(&p.s);
	ck_assert_int_eq(iw_cm_create_id(p.cch, &p, &p.c.id), 0);
	ck_assert_ptr_eq(iw_cm_id_context(p.c.id), &p);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, &cp), 0);

	ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->private_data_len, sizeof(creq));
	ck_assert_mem_eq(ev->private_data, creq, sizeof(creq));
	ck_assert_uint_eq(ev->ird, 16);
	ck_assert_uint_eq(ev->ord, 16);
	ck_assert_uint_eq(ev->mpa_rev, 2);
	ck_assert(ev->crc);
	p.s.id = ev->id;
	ck_assert_ptr_eq(iw_cm_id_context(p.s.id), &p); /* the listener's context */
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_peer_addr(p.s.id, &a), 0);
	ck_assert_int_eq(a.ss_family, family);
	ck_assert_int_eq(iw_cm_accept(p.s.id, p.s.qp, &sp), 0);

	ev = ev_expect(p.cch, IW_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, p.c.id);
	ck_assert_uint_eq(ev->private_data_len, sizeof(crep));
	ck_assert_mem_eq(ev->private_data, crep, sizeof(crep));
	/* Initiator: ORD = min(16, responder IRD 8), IRD = its own 16. */
	ck_assert_uint_eq(ev->ord, 8);
	ck_assert(ev->crc);
	iw_cm_ack_event(ev);
	ev = ev_expect(p.sch, IW_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, p.s.id);
	ck_assert_uint_eq(ev->ird, 8);
	ck_assert_uint_eq(ev->ord, 4);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_peer_addr(p.c.id, &a), 0);
	ck_assert_uint_eq(ss_port(&a), ss_port(&p.addr));
	pair_close(&p);
}

START_TEST(test_connect_ipv4_pdata)
{
	check_pdata_roundtrip(AF_INET);
}
END_TEST

START_TEST(test_connect_ipv6_pdata)
{
	check_pdata_roundtrip(AF_INET6);
}
END_TEST

START_TEST(test_pdata_limit)
{
	static uint8_t big[IW_CM_PRIVATE_DATA_MAX];
	struct iw_conn_param cp = { .private_data = big, .private_data_len = 509 };
	struct pair p;
	struct iw_cm_event *ev;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 1);
	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ep_init(&p.s);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	/* 509 application bytes + 4 enhanced bytes exceed 512. */
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, &cp), -EINVAL);
	cp.private_data_len = 508;
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, &cp), 0);
	ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, big, 508);
	p.s.id = ev->id;
	iw_cm_ack_event(ev);
	struct iw_conn_param sp = { .private_data = big + 1, .private_data_len = 509 };
	ck_assert_int_eq(iw_cm_accept(p.s.id, p.s.qp, &sp), -EINVAL);
	sp.private_data_len = 508;
	ck_assert_int_eq(iw_cm_accept(p.s.id, p.s.qp, &sp), 0);
	ev = ev_expect(p.cch, IW_CM_EVENT_ESTABLISHED);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, big + 1, 508);
	iw_cm_ack_event(ev);
	ev_expect_ack(p.sch, IW_CM_EVENT_ESTABLISHED);
	pair_close(&p);
}
END_TEST

START_TEST(test_reject_pdata)
{
	static const char why[] = "go away";
	struct pair p;
	struct iw_cm_event *ev;

	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, NULL), 0);
	ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	p.s.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_reject(p.s.id, why, sizeof(why)), 0);
	ev = ev_expect(p.cch, IW_CM_EVENT_REJECTED);
	ck_assert_uint_eq(ev->private_data_len, sizeof(why));
	ck_assert_mem_eq(ev->private_data, why, sizeof(why));
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_qp_state(p.c.qp), IW_QPS_INIT);
	/* Nothing more for the server's id. */
	ck_assert_ptr_null(ev_wait(p.sch, 100));
	pair_free(&p);
}
END_TEST

START_TEST(test_connect_closed_port)
{
	struct pair p;
	struct iw_cm_event *ev;
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* A port nobody listens on: bind one, then let it go. */
	loopback_addr(AF_INET, &a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(iw_cm_create_channel(ctx, &p.cch), 0);
	ep_init(&p.c);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&a, NULL), 0);
	ev = ev_expect(p.cch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_int_eq(ev->status, -ECONNREFUSED);
	iw_cm_ack_event(ev);
	pair_free(&p);
}
END_TEST

/* iw_conn_param.src_addr: the connection comes from that address and
 * port (bind before connect: rdma_cm ids bound before rdma_connect);
 * an address that is not ours is refused at once. */
START_TEST(test_connect_from_source)
{
	struct pair p;
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1) };
	socklen_t len = sizeof(src);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&src, &len), 0);
	close(fd); /* a port that was free just now */
	struct iw_conn_param cp = { .src_addr = (struct sockaddr *)&src };
	pair_connect(&p, AF_INET, &cp, NULL);
	struct sockaddr_storage lo, pe;
	ck_assert_int_eq(iw_cm_local_addr(p.c.id, &lo), 0);
	ck_assert_int_eq(iw_cm_peer_addr(p.s.id, &pe), 0);
	ck_assert_mem_eq(&((struct sockaddr_in *)&lo)->sin_addr, &src.sin_addr, sizeof(src.sin_addr));
	ck_assert_uint_eq(ss_port(&lo), ntohs(src.sin_port));
	ck_assert_mem_eq(&((struct sockaddr_in *)&pe)->sin_addr, &src.sin_addr, sizeof(src.sin_addr));
	ck_assert_uint_eq(ss_port(&pe), ntohs(src.sin_port));
	pair_close(&p);

	/* Not an address of this machine (TEST-NET-3): refused, nothing
	 * started, the id and QP still usable. */
	struct sockaddr_in foreign = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0xcb007101) };
	cp.src_addr = (struct sockaddr *)&foreign;
	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, &cp), -EADDRNOTAVAIL);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, NULL), 0);
	ep_init(&p.s);
	pair_accept(&p, NULL);
	ev_expect_ack(p.sch, IW_CM_EVENT_ESTABLISHED);
	ev_expect_ack(p.cch, IW_CM_EVENT_ESTABLISHED);
	pair_close(&p);
}
END_TEST

/* The responder's own policy refuses: it sends a reject frame (the
 * initiator sees REJECTED) and reports CONNECT_ERROR on its id. */
START_TEST(test_accept_policy_reject)
{
	struct iw_conn_param cp = { .p2p = true }, sp = { .p2p = true, .rtr_types = IW_RTR_READ };
	struct pair p;
	struct iw_cm_event *ev;

	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ep_init(&p.s);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, &cp), 0);
	/* The initiator offers only the WRITE RTR, this responder only READ. */
	pair_accept(&p, &sp);
	ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_ptr_eq(ev->id, p.s.id);
	ck_assert_int_eq(ev->status, -EPROTO);
	iw_cm_ack_event(ev);
	ev = ev_expect(p.cch, IW_CM_EVENT_REJECTED);
	ck_assert_uint_eq(ev->private_data_len, 0);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_qp_state(p.s.qp), IW_QPS_INIT);
	/* The QPs are still usable for another connection. */
	ck_assert_int_eq(iw_cm_destroy_id(p.c.id), 0);
	ck_assert_int_eq(iw_cm_destroy_id(p.s.id), 0);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, NULL), 0);
	pair_accept(&p, NULL);
	ev_expect_ack(p.sch, IW_CM_EVENT_ESTABLISHED);
	ev_expect_ack(p.cch, IW_CM_EVENT_ESTABLISHED);
	pair_close(&p);
}
END_TEST

/* A TCP listener that never answers the Request: the initiator gives up
 * after its timeout. */
START_TEST(test_reply_timeout)
{
	struct iw_conn_param cp = { .timeout_ms = 300 };
	struct pair p;
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	struct iw_cm_event *ev;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	uint64_t t0;

	loopback_addr(AF_INET, &a);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(iw_cm_create_channel(ctx, &p.cch), 0);
	ep_init(&p.c);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	t0 = now_ms();
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&a, &cp), 0);
	ev = ev_expect(p.cch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	ck_assert_uint_ge(now_ms() - t0, 290);
	iw_cm_ack_event(ev);
	/* The id is spent; the QP can be reused. */
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&a, &cp), -EINVAL);
	close(lfd);
	pair_free(&p);
}
END_TEST

/* Ids destroyed mid-handshake, a listener destroyed with requests
 * pending: nothing leaks or fires later. */
START_TEST(test_destroy_midway)
{
	struct pair p;
	struct iw_cm_id *ids[4];

	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &ids[i]), 0);
	/* One connects and goes away at once; the next waits for a request
	 * the application never answers; then the listener goes. */
	ck_assert_int_eq(iw_cm_connect(ids[0], p.c.qp, (struct sockaddr *)&p.addr, NULL), 0);
	ck_assert_int_eq(iw_cm_destroy_id(ids[0]), 0);
	iw_progress(ctx, 20);
	struct ep e2;
	ep_init(&e2);
	ck_assert_int_eq(iw_cm_connect(ids[1], e2.qp, (struct sockaddr *)&p.addr, NULL), 0);
	struct iw_cm_event *ev = ev_wait(p.sch, WAIT_MS);
	ck_assert_ptr_nonnull(ev);
	/* The first connection may or may not have got that far. */
	while (ev && ev->type != IW_CM_EVENT_CONNECT_REQUEST) {
		iw_cm_ack_event(ev);
		ev = ev_wait(p.sch, WAIT_MS);
	}
	ck_assert_ptr_nonnull(ev);
	struct iw_cm_id *pending = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_destroy_id(p.listen), 0);
	p.listen = NULL;
	ck_assert_int_eq(iw_cm_destroy_id(ids[1]), 0);
	ck_assert_int_eq(iw_cm_destroy_id(pending), 0);
	for (int i = 2; i < 4; i++)
		ck_assert_int_eq(iw_cm_destroy_id(ids[i]), 0);
	iw_progress(ctx, 20);
	/* Children the application fetched are its own to destroy. */
	while ((ev = ev_wait(p.sch, 100)) != NULL) {
		struct iw_cm_id *child = ev->id;
		enum iw_cm_event_type t = ev->type;
		iw_cm_ack_event(ev);
		if (t == IW_CM_EVENT_CONNECT_REQUEST || t == IW_CM_EVENT_CONNECT_ERROR)
			iw_cm_destroy_id(child);
	}
	ep_fini(&e2);
	pair_free(&p);
}
END_TEST


/* The client QP is destroyed while its connection is still in the MPA
 * exchange: the connection fails cleanly, nothing touches the freed QP. */
START_TEST(test_destroy_qp_while_connecting)
{
	struct pair p;

	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ep_init(&p.s);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, NULL), 0);
	struct iw_cm_event *ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	p.s.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_destroy_qp(p.c.qp), 0);
	p.c.qp = NULL;
	ck_assert_int_eq(iw_cm_accept(p.s.id, p.s.qp, NULL), 0);
	ev = ev_wait(p.cch, WAIT_MS);
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(ev->type, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_int_eq(ev->status, -ECANCELED);
	iw_cm_ack_event(ev);
	pair_free(&p);
}
END_TEST


/* The initiator holds its first FPDU for first_fpdu_delay_ms after the
 * Reply (a siw responder can miss earlier ones); -1 sends at once. */
static uint64_t first_send_delay(int delay_param)
{
	struct pair p;
	struct iw_conn_param cp = { .first_fpdu_delay_ms = delay_param };
	static uint8_t sbuf[64], rbuf[64];

	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ep_init(&p.s);
	struct iw_mr *smr, *rmr;
	ck_assert_int_eq(iw_reg_mr(p.c.pd, sbuf, sizeof(sbuf), IW_ACCESS_LOCAL_WRITE, &smr), 0);
	ck_assert_int_eq(iw_reg_mr(p.s.pd, rbuf, sizeof(rbuf), IW_ACCESS_LOCAL_WRITE, &rmr), 0);
	post_recv(&p.s, rbuf, sizeof(rbuf), rmr, 7);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.addr, &cp), 0);
	pair_accept(&p, NULL);
	ev_expect_ack(p.cch, IW_CM_EVENT_ESTABLISHED);
	uint64_t t0 = now_ms();
	post_op(&p.c, IW_WR_SEND, sbuf, 8, smr, 0, 0, 0, 1);
	expect_ok(wait_wc(p.s.cq), 7, IW_WC_RECV);
	uint64_t dt = now_ms() - t0;
	ev_expect_ack(p.sch, IW_CM_EVENT_ESTABLISHED);
	expect_ok(wait_wc(p.c.cq), 1, IW_WC_SEND);
	ck_assert_int_eq(iw_dereg_mr(smr), 0);
	ck_assert_int_eq(iw_dereg_mr(rmr), 0);
	pair_close(&p);
	return dt;
}

START_TEST(test_first_fpdu_delay)
{
	ck_assert_uint_ge(first_send_delay(150), 140);
	ck_assert_uint_lt(first_send_delay(-1), 140);
}
END_TEST

/* A raw TCP client toward the listener. */
static int raw_connect(const struct sockaddr_storage *a)
{
	int fd = socket(a->ss_family, SOCK_STREAM, 0);
	socklen_t len = a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)a, len), 0);
	return fd;
}

/* Wait until the server side drops fd (EOF or reset). */
static bool raw_dropped(int fd, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	char b[64];

	while (now_ms() < end) {
		iw_progress(ctx, 10);
		ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return true;
	}
	return false;
}


/* After a reject the responder keeps the socket open until the initiator
 * closes it (a siw initiator loses the reject's private data when a FIN
 * follows the frame at once); the reject frame itself arrives at once. */
START_TEST(test_reject_lingers)
{
	static const uint8_t req[] = "MPA ID Req Frame\x50\x02\x00\x04\x00\x01\x00\x01";
	struct pair p;
	uint8_t buf[600];

	pair_listen(&p, AF_INET, 8);
	int fd = raw_connect(&p.addr);
	ck_assert_int_eq(send(fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	struct iw_cm_event *ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	struct iw_cm_id *child = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_reject(child, "no thanks", 9), 0);
	ck_assert_int_eq(iw_cm_destroy_id(child), 0); /* the linger outlives the id */
	/* The whole reject frame arrives. */
	size_t got = 0;
	uint64_t end = now_ms() + WAIT_MS;
	while (got < 20 + 4 + 9 && now_ms() < end) {
		pump(5);
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
	}
	ck_assert_uint_eq(got, 33);
	ck_assert(memcmp(buf, "MPA ID Rep Frame", 16) == 0);
	ck_assert_uint_eq(buf[16] & IW_MPA_FLAG_REJECT, IW_MPA_FLAG_REJECT);
	ck_assert(memcmp(buf + 24, "no thanks", 9) == 0);
	/* No FIN for a while ... */
	for (int i = 0; i < 20; i++) {
		pump(10);
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		ck_assert_msg(n < 0 && errno == EAGAIN, "socket closed behind the reject (recv %zd)", n);
	}
	/* ... until we close; without that it would go after about 1 s. */
	close(fd);
	pump(50);
	pair_free(&p);
}
END_TEST

START_TEST(test_request_timeout)
{
	struct pair p;
	uint64_t t0;
	int fd;

	pair_listen(&p, AF_INET, 8);
	fd = raw_connect(&p.addr);
	t0 = now_ms();
	/* siw waits 5 s for the Request; so do we once a byte of it came. */
	ck_assert_int_eq(send(fd, "M", 1, 0), 1);
	ck_assert(!raw_dropped(fd, 3000));
	ck_assert(raw_dropped(fd, 4000));
	ck_assert_uint_ge(now_ms() - t0, 4900);
	close(fd);
	/* A peer that sends nothing goes by the first-byte deadline (2 s,
	 * issue 19: idle-connection floods). */
	fd = raw_connect(&p.addr);
	t0 = now_ms();
	ck_assert(!raw_dropped(fd, 1500));
	ck_assert(raw_dropped(fd, 3000));
	ck_assert_uint_ge(now_ms() - t0, 1900);
	close(fd);
	ck_assert_ptr_null(ev_wait(p.sch, 50));
	pair_free(&p);
}
END_TEST

START_TEST(test_request_with_trailing_data)
{
	/* rev 2, C=1, enhanced, PD_Length 4, IRD 1 ORD 1; then one byte the
	 * initiator may not send before the Reply. */
	static const uint8_t req[] = "MPA ID Req Frame\x50\x02\x00\x04\x00\x01\x00\x01X";
	struct pair p;
	int fd;

	pair_listen(&p, AF_INET, 8);
	fd = raw_connect(&p.addr);
	ck_assert_int_eq(send(fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	ck_assert(raw_dropped(fd, 3000));
	close(fd);
	ck_assert_ptr_null(ev_wait(p.sch, 50));

	/* The same Request without the extra byte is fine. */
	fd = raw_connect(&p.addr);
	ck_assert_int_eq(send(fd, req, sizeof(req) - 2, 0), (ssize_t)sizeof(req) - 2);
	struct iw_cm_event *ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->ird, 1);
	ck_assert_uint_eq(ev->ord, 1);
	struct iw_cm_id *child = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_reject(child, NULL, 0), 0);
	ck_assert_int_eq(iw_cm_destroy_id(child), 0);
	close(fd);
	pair_free(&p);
}
END_TEST

START_TEST(test_backlog)
{
	struct pair p;
	int fd[3];

	pair_listen(&p, AF_INET, 2);
	for (int i = 0; i < 3; i++)
		fd[i] = raw_connect(&p.addr);
	/* Two wait in the MPA exchange; the third is refused. */
	ck_assert(raw_dropped(fd[2], 2000));
	ck_assert(!raw_dropped(fd[0], 200));
	ck_assert(!raw_dropped(fd[1], 10));
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	pair_free(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Data transfer over the real transport                               */

struct bufs {
	uint8_t *cbuf, *sbuf;
	size_t len;
	struct iw_mr *cmr, *smr;
};

static void bufs_init(struct pair *p, struct bufs *b, size_t len)
{
	unsigned acc = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | IW_ACCESS_REMOTE_ATOMIC;

	b->len = len >= 8 ? len : 8; /* room for an atomic's word */
	b->cbuf = malloc(b->len);
	b->sbuf = malloc(b->len);
	ck_assert(b->cbuf && b->sbuf);
	memset(b->cbuf, 0, b->len);
	memset(b->sbuf, 0, b->len);
	ck_assert_int_eq(iw_reg_mr(p->c.pd, b->cbuf, b->len, acc, &b->cmr), 0);
	ck_assert_int_eq(iw_reg_mr(p->s.pd, b->sbuf, b->len, acc, &b->smr), 0);
}

static void bufs_fini(struct bufs *b)
{
	ck_assert_int_eq(iw_dereg_mr(b->cmr), 0);
	ck_assert_int_eq(iw_dereg_mr(b->smr), 0);
	free(b->cbuf);
	free(b->sbuf);
}

static const enum iw_wr_opcode all_ops[] = {
	IW_WR_SEND, IW_WR_SEND_WITH_SE, IW_WR_SEND_WITH_INV, IW_WR_SEND_WITH_SE_INV, IW_WR_RDMA_WRITE, IW_WR_RDMA_READ,
	IW_WR_LOCAL_INV, IW_WR_RDMA_WRITE_WITH_IMM, IW_WR_ATOMIC_FETCH_AND_ADD, IW_WR_ATOMIC_CMP_AND_SWP,
};

/* An RFC 7306 atomic from the client on the server's first word (both
 * ends are libiwarp: the capability is negotiated). */
static void post_atomic(struct ep *e, enum iw_wr_opcode op, uint64_t *res, struct iw_mr *mr, uint64_t *target,
			uint32_t rkey, uint64_t compare_add, uint64_t swap, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)res, 8, iw_mr_stag(mr) };
	struct iw_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.remote_addr = (uint64_t)(uintptr_t)target,
		.rkey = rkey,
		.compare_add = compare_add,
		.swap = swap,
	}, *bad = NULL;
	ck_assert_int_eq(iw_post_send(e->qp, &wr, &bad), 0);
}

/* One operation from the client of size len; checks the data arrived. */
static void one_op(struct pair *p, struct bufs *b, enum iw_wr_opcode op, size_t len, uint32_t tag)
{
	uint64_t id = (uint64_t)tag << 8;
	struct iw_wc wc;

	switch (op) {
	case IW_WR_SEND:
	case IW_WR_SEND_WITH_SE:
	case IW_WR_SEND_WITH_INV:
	case IW_WR_SEND_WITH_SE_INV: {
		bool inv = op == IW_WR_SEND_WITH_INV || op == IW_WR_SEND_WITH_SE_INV;
		uint8_t scratch[8];
		struct iw_mr *victim = NULL;
		if (inv)
			ck_assert_int_eq(iw_reg_mr(p->s.pd, scratch, sizeof(scratch),
						   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &victim), 0);
		iwt_fill_pattern(b->cbuf, len, tag);
		post_recv(&p->s, b->sbuf, b->len, b->smr, id + 1);
		post_op(&p->c, op, b->cbuf, len, b->cmr, 0, 0, victim ? iw_mr_stag(victim) : 0, id + 2);
		expect_ok(wait_wc(p->c.cq), id + 2, IW_WC_SEND);
		wc = wait_wc(p->s.cq);
		expect_ok(wc, id + 1, IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, len);
		ck_assert_uint_eq(!!(wc.flags & IW_WC_WITH_INV), inv);
		if (inv)
			ck_assert_uint_eq(wc.invalidated_stag, iw_mr_stag(victim));
		ck_assert_uint_eq(!!(wc.flags & IW_WC_SOLICITED), op == IW_WR_SEND_WITH_SE || op == IW_WR_SEND_WITH_SE_INV);
		ck_assert_uint_eq(iwt_check_pattern(b->sbuf, len, tag), len);
		if (victim)
			ck_assert_int_eq(iw_dereg_mr(victim), 0);
		break;
	}
	case IW_WR_RDMA_WRITE:
		iwt_fill_pattern(b->cbuf, len, tag);
		post_op(&p->c, op, b->cbuf, len, b->cmr, (uint64_t)(uintptr_t)b->sbuf, iw_mr_stag(b->smr), 0, id + 2);
		/* A zero-length SEND behind it: placed means the WRITE was too. */
		post_recv(&p->s, b->sbuf, 0, b->smr, id + 1);
		post_op(&p->c, IW_WR_SEND, b->cbuf, 0, b->cmr, 0, 0, 0, id + 3);
		expect_ok(wait_wc(p->c.cq), id + 2, IW_WC_RDMA_WRITE);
		expect_ok(wait_wc(p->c.cq), id + 3, IW_WC_SEND);
		expect_ok(wait_wc(p->s.cq), id + 1, IW_WC_RECV);
		ck_assert_uint_eq(iwt_check_pattern(b->sbuf, len, tag), len);
		break;
	case IW_WR_LOCAL_INV: {
		/* Behind a WRITE of len bytes it completes second, and the region
		 * is unusable once its completion is seen; invalidating it again
		 * fails locally and the QP goes on. */
		uint8_t scratch[8];
		struct iw_mr *victim;
		ck_assert_int_eq(iw_reg_mr(p->c.pd, scratch, sizeof(scratch),
					   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &victim), 0);
		iwt_fill_pattern(b->cbuf, len, tag);
		post_op(&p->c, IW_WR_RDMA_WRITE, b->cbuf, len, b->cmr, (uint64_t)(uintptr_t)b->sbuf,
			iw_mr_stag(b->smr), 0, id + 2);
		post_op(&p->c, IW_WR_LOCAL_INV, NULL, 0, NULL, 0, 0, iw_mr_stag(victim), id + 3);
		expect_ok(wait_wc(p->c.cq), id + 2, IW_WC_RDMA_WRITE);
		expect_ok(wait_wc(p->c.cq), id + 3, IW_WC_LOCAL_INV);
		struct iw_sge sg = { (uint64_t)(uintptr_t)scratch, sizeof(scratch), iw_mr_stag(victim) };
		struct iw_send_wr w = { .wr_id = id + 4, .sg_list = &sg, .num_sge = 1, .opcode = IW_WR_SEND }, *bad;
		ck_assert_int_eq(iw_post_send(p->c.qp, &w, &bad), -EINVAL);
		post_op(&p->c, IW_WR_LOCAL_INV, NULL, 0, NULL, 0, 0, iw_mr_stag(victim), id + 5);
		wc = wait_wc(p->c.cq);
		ck_assert_uint_eq(wc.wr_id, id + 5);
		ck_assert_int_eq(wc.opcode, IW_WC_LOCAL_INV);
		ck_assert_int_eq(wc.status, IW_WC_LOC_PROT_ERR);
		ck_assert_int_eq(iw_qp_state(p->c.qp), IW_QPS_RTS);
		/* The QP goes on: a zero-length SEND behind it proves the WRITE placed. */
		post_recv(&p->s, b->sbuf, 0, b->smr, id + 1);
		post_op(&p->c, IW_WR_SEND, b->cbuf, 0, b->cmr, 0, 0, 0, id + 6);
		expect_ok(wait_wc(p->c.cq), id + 6, IW_WC_SEND);
		expect_ok(wait_wc(p->s.cq), id + 1, IW_WC_RECV);
		ck_assert_uint_eq(iwt_check_pattern(b->sbuf, len, tag), len);
		ck_assert_int_eq(iw_dereg_mr(victim), 0);
		break;
	}
	case IW_WR_RDMA_WRITE_WITH_IMM: {
		ck_assert(iw_qp_rfc7306(p->c.qp) && iw_qp_rfc7306(p->s.qp));
		iwt_fill_pattern(b->cbuf, len, tag);
		post_recv(&p->s, b->sbuf, 0, b->smr, id + 1);
		struct iw_sge sge = { (uint64_t)(uintptr_t)b->cbuf, (uint32_t)len, iw_mr_stag(b->cmr) };
		struct iw_send_wr w = { .wr_id = id + 2, .sg_list = &sge, .num_sge = 1, .opcode = op,
					.send_flags = IW_SEND_SIGNALED | (tag & 1 ? IW_SEND_SOLICITED : 0),
					.remote_addr = (uint64_t)(uintptr_t)b->sbuf, .rkey = iw_mr_stag(b->smr),
					.imm_data = 0xA5A5000000000000ULL | tag }, *bad;
		ck_assert_int_eq(iw_post_send(p->c.qp, &w, &bad), 0);
		expect_ok(wait_wc(p->c.cq), id + 2, IW_WC_RDMA_WRITE);
		wc = wait_wc(p->s.cq);
		expect_ok(wc, id + 1, IW_WC_RECV_RDMA_WITH_IMM);
		ck_assert(wc.flags & IW_WC_WITH_IMM);
		ck_assert_uint_eq(!!(wc.flags & IW_WC_SOLICITED), tag & 1);
		ck_assert_uint_eq(wc.imm_data, 0xA5A5000000000000ULL | tag);
		ck_assert_uint_eq(wc.byte_len, len);
		ck_assert_uint_eq(iwt_check_pattern(b->sbuf, len, tag), len);
		break;
	}
	case IW_WR_ATOMIC_FETCH_AND_ADD:
	case IW_WR_ATOMIC_CMP_AND_SWP: {
		uint64_t *target = (uint64_t *)(void *)b->sbuf, *res = (uint64_t *)(void *)b->cbuf;
		uint64_t start = (uint64_t)tag << 32 | (uint64_t)len;
		*target = start;
		*res = 0;
		if (op == IW_WR_ATOMIC_FETCH_AND_ADD) {
			post_atomic(&p->c, op, res, b->cmr, target, iw_mr_stag(b->smr), len + 1, 0, id + 2);
			expect_ok(wait_wc(p->c.cq), id + 2, IW_WC_FETCH_ADD);
			ck_assert_uint_eq(*res, start);
			ck_assert_uint_eq(*target, start + len + 1);
		} else {
			ck_assert_uint_ge(b->len, 16);
			res[1] = 0;
			post_atomic(&p->c, op, res, b->cmr, target, iw_mr_stag(b->smr), start, ~start, id + 2);
			post_atomic(&p->c, op, res + 1, b->cmr, target, iw_mr_stag(b->smr), start, 7, id + 3);
			expect_ok(wait_wc(p->c.cq), id + 2, IW_WC_COMP_SWAP);
			expect_ok(wait_wc(p->c.cq), id + 3, IW_WC_COMP_SWAP);
			ck_assert_uint_eq(res[0], start);  /* matched: swapped */
			ck_assert_uint_eq(res[1], ~start); /* no match: unchanged */
			ck_assert_uint_eq(*target, ~start);
		}
		break;
	}
	case IW_WR_RDMA_READ:
		iwt_fill_pattern(b->sbuf, len, tag);
		memset(b->cbuf, 0, len);
		post_op(&p->c, op, b->cbuf, len, b->cmr, (uint64_t)(uintptr_t)b->sbuf, iw_mr_stag(b->smr), 0, id + 2);
		wc = wait_wc(p->c.cq);
		expect_ok(wc, id + 2, IW_WC_RDMA_READ);
		ck_assert_uint_eq(wc.byte_len, len);
		ck_assert_uint_eq(iwt_check_pattern(b->cbuf, len, tag), len);
		break;
	}
}

static const size_t sizes[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 100, 1000, 1427, 1428, 1429, 4095, 4096, 8191, 8192, 65471, 65472,
	65535, 65536, 65537, 262147, MIB + 13, 4 * MIB, 16 * MIB,
};

static void run_all_ops(const struct iw_conn_param *cp, const struct iw_conn_param *sp, size_t max)
{
	struct pair p;
	struct bufs b;
	uint32_t tag = 1;

	pair_connect(&p, AF_INET, cp, sp);
	bufs_init(&p, &b, max);
	for (size_t o = 0; o < sizeof(all_ops) / sizeof(all_ops[0]); o++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && sizes[i] <= max; i++)
			one_op(&p, &b, all_ops[o], sizes[i], tag++);
	struct iw_qp_stats cs, ss;
	iw_qp_get_stats(p.c.qp, &cs);
	iw_qp_get_stats(p.s.qp, &ss);
	fprintf(stderr,
		"  crc policy %d, markers %d, max_ulpdu %u: client tx %llu FPDUs / %llu syscalls, rx %llu FPDUs / %llu "
		"syscalls; server rx %llu FPDUs / %llu syscalls\n",
		cp->crc, cp->markers, cp->max_ulpdu, (unsigned long long)cs.fpdus_tx,
		(unsigned long long)cs.tx_syscalls, (unsigned long long)cs.fpdus_rx,
		(unsigned long long)cs.rx_syscalls, (unsigned long long)ss.fpdus_rx,
		(unsigned long long)ss.rx_syscalls);
	ck_assert_uint_gt(cs.tx_syscalls, 0);
	ck_assert_uint_gt(ss.rx_syscalls, 0);
	ck_assert_uint_eq(cs.bytes_tx, ss.bytes_rx);
	bufs_fini(&b);
	pair_close(&p);
}

START_TEST(test_ops_crc_on)
{
	struct iw_conn_param cp = { .crc = IW_CRC_ON }, sp = { .crc = IW_CRC_ON };
	run_all_ops(&cp, &sp, 16 * MIB);
}
END_TEST

START_TEST(test_ops_crc_off)
{
	struct iw_conn_param cp = { .crc = IW_CRC_OFF }, sp = { .crc = IW_CRC_OFF };
	run_all_ops(&cp, &sp, 16 * MIB);
}
END_TEST

/* Busy polling (iw_context_attr.busy_poll_us): every blocking
 * iw_progress() of this test polls first; all operations still work. */
START_TEST(test_ops_busy_poll)
{
	struct iw_context_attr ca = { .busy_poll_us = 200 };
	struct iw_conn_param cp = { .crc = IW_CRC_ON }, sp = { .crc = IW_CRC_ON };

	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(iw_context_create(&ca, &ctx), 0);
	run_all_ops(&cp, &sp, 4 * MIB);
}
END_TEST

/* Verified placement on both ends (IWARP_VERIFIED_PLACEMENT=1: QPs made
 * while it is set), the peers asking for no CRC (verified QPs insist on
 * it): every operation and size places the same data as without. */
START_TEST(test_ops_verified)
{
	struct iw_conn_param cp = { .crc = IW_CRC_OFF }, sp = { .crc = IW_CRC_OFF };

	ck_assert_int_eq(setenv("IWARP_VERIFIED_PLACEMENT", "1", 1), 0);
	run_all_ops(&cp, &sp, 4 * MIB);
	unsetenv("IWARP_VERIFIED_PLACEMENT");
}
END_TEST

START_TEST(test_ops_markers)
{
	struct iw_conn_param cp = { .markers = true }, sp = { .markers = true };
	run_all_ops(&cp, &sp, 4 * MIB);
}
END_TEST

START_TEST(test_ops_small_fpdus)
{
	/* siw-sized FPDUs (MSS 1448): many small FPDUs per receive syscall. */
	struct iw_conn_param cp = { .max_ulpdu = 1442 }, sp = { .max_ulpdu = 1442 };
	run_all_ops(&cp, &sp, 4 * MIB);
}
END_TEST

START_TEST(test_ops_ipv6_rev1)
{
	struct iw_conn_param cp = { .mpa_rev = 1 }, sp = { .mpa_rev = 1 };
	struct pair p;
	struct bufs b;

	pair_connect(&p, AF_INET6, &cp, &sp);
	bufs_init(&p, &b, MIB);
	for (size_t o = 0; o < sizeof(all_ops) / sizeof(all_ops[0]); o++)
		one_op(&p, &b, all_ops[o], 300000, (uint32_t)o + 1);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST

/* Many small SENDs posted at once: the receiver batches them. */
START_TEST(test_small_sends_batched)
{
	enum { N = 200 };
	struct pair p;
	struct bufs b;
	struct iw_wc wc[N];
	struct iw_qp_stats st;

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, N * 64);
	for (int i = 0; i < N; i++)
		post_recv(&p.s, b.sbuf + i * 64, 64, b.smr, (uint64_t)i);
	for (int i = 0; i < N; i++) {
		memset(b.cbuf + i * 64, i, 64);
		post_op(&p.c, IW_WR_SEND, b.cbuf + i * 64, 64, b.cmr, 0, 0, 0, 1000u + (uint64_t)i);
		if (i % 100 == 99)
			ck_assert_int_eq(poll_n(p.c.cq, wc, 100, WAIT_MS), 100);
	}
	ck_assert_int_eq(poll_n(p.s.cq, wc, N, WAIT_MS), N);
	for (int i = 0; i < N; i++) {
		expect_ok(wc[i], (uint64_t)i, IW_WC_RECV);
		ck_assert_uint_eq(wc[i].byte_len, 64);
		ck_assert_uint_eq(b.sbuf[i * 64 + 63], (uint8_t)i);
	}
	iw_qp_get_stats(p.s.qp, &st);
	ck_assert_uint_eq(st.fpdus_rx, N);
	ck_assert_uint_lt(st.rx_syscalls, N);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST

/* On a connected QP a post goes to the socket in the poster's call, not
 * on the next progress turn (the deferred path cost an eventfd round
 * trip per message). */
START_TEST(test_post_sends_inline)
{
	struct pair p;
	struct bufs b;
	struct iw_wc wc[2];
	struct iw_qp_stats before, after;

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, 4096);
	for (int i = 0; i < 2; i++)
		post_recv(&p.s, b.sbuf + i * 64, 64, b.smr, (uint64_t)i);
	/* the first SEND opens the responder's gate and passes the delay */
	post_op(&p.c, IW_WR_SEND, b.cbuf, 64, b.cmr, 0, 0, 0, 100);
	ck_assert_int_eq(poll_n(p.s.cq, wc, 1, WAIT_MS), 1);
	ck_assert_int_eq(poll_n(p.c.cq, wc, 1, WAIT_MS), 1);
	iw_qp_get_stats(p.c.qp, &before);
	post_op(&p.c, IW_WR_SEND, b.cbuf + 64, 64, b.cmr, 0, 0, 0, 101);
	iw_qp_get_stats(p.c.qp, &after); /* no iw_progress in between */
	ck_assert_uint_eq(after.fpdus_tx, before.fpdus_tx + 1);
	ck_assert_uint_gt(after.bytes_tx, before.bytes_tx);
	ck_assert_int_eq(poll_n(p.s.cq, wc, 1, WAIT_MS), 1);
	expect_ok(wc[0], 1, IW_WC_RECV);
	ck_assert_int_eq(poll_n(p.c.cq, wc, 1, WAIT_MS), 1);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST

/* The responder sends nothing before the initiator's first FPDU. */
START_TEST(test_responder_lockstep)
{
	struct pair p;
	struct bufs b;
	struct iw_wc wc;
	struct iw_qp_stats st;

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, 4096);
	post_recv(&p.c, b.cbuf, 4096, b.cmr, 1);
	post_op(&p.s, IW_WR_SEND, b.sbuf, 100, b.smr, 0, 0, 0, 2);
	ck_assert_int_eq(poll_n(p.s.cq, &wc, 1, 200), 0);
	iw_qp_get_stats(p.s.qp, &st);
	ck_assert_uint_eq(st.bytes_tx, 0);
	/* The initiator talks: the responder may now. */
	post_recv(&p.s, b.sbuf + 2048, 2048, b.smr, 3);
	post_op(&p.c, IW_WR_SEND, b.cbuf + 2048, 10, b.cmr, 0, 0, 0, 4);
	expect_two(p.s.cq, 2, IW_WC_SEND, 3, IW_WC_RECV);
	expect_two(p.c.cq, 4, IW_WC_SEND, 1, IW_WC_RECV);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST

/* Peer-to-peer: the initiator's zero-length WRITE RTR opens the
 * responder's gate without any application traffic. */
START_TEST(test_p2p_rtr)
{
	struct iw_conn_param cp = { .p2p = true }, sp = { .p2p = true };
	struct iw_conn_param bad = { .p2p = true, .rtr_types = IW_RTR_SEND };
	struct pair p;
	struct bufs b;
	struct iw_cm_id *tmp;

	/* An initiator can only send the WRITE RTR. */
	pair_listen(&p, AF_INET, 8);
	ep_init(&p.c);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &tmp), 0);
	ck_assert_int_eq(iw_cm_connect(tmp, p.c.qp, (struct sockaddr *)&p.addr, &bad), -EOPNOTSUPP);
	ck_assert_int_eq(iw_cm_destroy_id(tmp), 0);
	ep_fini(&p.c);
	pair_free(&p);

	pair_connect(&p, AF_INET, &cp, &sp);
	bufs_init(&p, &b, 4096);
	post_recv(&p.c, b.cbuf, 4096, b.cmr, 1);
	post_op(&p.s, IW_WR_SEND, b.sbuf, 100, b.smr, 0, 0, 0, 2);
	expect_ok(wait_wc(p.s.cq), 2, IW_WC_SEND);
	expect_ok(wait_wc(p.c.cq), 1, IW_WC_RECV);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST

START_TEST(test_many_qps)
{
	enum { N = 100 };
	struct pair p;
	static struct ep c[N], s[N];
	static uint8_t cbuf[N][256], sbuf[N][256];
	struct iw_mr *cmr[N], *smr[N];
	int est = 0;

	pair_listen(&p, AF_INET, N);
	for (int i = 0; i < N; i++) {
		ep_init(&c[i]);
		ep_init(&s[i]);
		ck_assert_int_eq(iw_reg_mr(c[i].pd, cbuf[i], 256, IW_ACCESS_LOCAL_WRITE, &cmr[i]), 0);
		ck_assert_int_eq(iw_reg_mr(s[i].pd, sbuf[i], 256, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE,
					   &smr[i]),
				 0);
		ck_assert_int_eq(iw_cm_create_id(p.cch, &c[i], &c[i].id), 0);
		ck_assert_int_eq(iw_cm_connect(c[i].id, c[i].qp, (struct sockaddr *)&p.addr, NULL), 0);
	}
	/* Accept in arrival order; the connector is not known per request, so
	 * servers are matched to clients through the first SEND's payload. */
	for (int req = 0; req < N || est < N;) {
		struct iw_cm_event *ev = ev_wait(p.sch, WAIT_MS);
		ck_assert_ptr_nonnull(ev);
		if (ev->type == IW_CM_EVENT_CONNECT_REQUEST) {
			ck_assert_int_lt(req, N);
			s[req].id = ev->id;
			post_recv(&s[req], sbuf[req], 256, smr[req], (uint64_t)req);
			ck_assert_int_eq(iw_cm_accept(s[req].id, s[req].qp, NULL), 0);
			req++;
		} else {
			ck_assert_int_eq(ev->type, IW_CM_EVENT_ESTABLISHED);
			est++;
		}
		iw_cm_ack_event(ev);
	}
	for (est = 0; est < N; est++)
		ev_expect_ack(p.cch, IW_CM_EVENT_ESTABLISHED);
	for (int i = 0; i < N; i++) {
		snprintf((char *)cbuf[i], 256, "client %d", i);
		post_op(&c[i], IW_WR_SEND, cbuf[i], 256, cmr[i], 0, 0, 0, (uint64_t)i);
	}
	bool seen[N] = { false };
	for (int i = 0; i < N; i++) {
		expect_ok(wait_wc(c[i].cq), (uint64_t)i, IW_WC_SEND);
		expect_ok(wait_wc(s[i].cq), (uint64_t)i, IW_WC_RECV);
		int k = -1;
		ck_assert_int_eq(sscanf((char *)sbuf[i], "client %d", &k), 1);
		ck_assert(k >= 0 && k < N && !seen[k]);
		seen[k] = true;
	}
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(iw_cm_disconnect(c[i].id), 0);
	for (int i = 0; i < 2 * N; i++) {
		struct iw_cm_event *ev = ev_wait(i < N ? p.cch : p.sch, WAIT_MS);
		ck_assert_ptr_nonnull(ev);
		ck_assert_int_eq(ev->type, IW_CM_EVENT_DISCONNECTED);
		iw_cm_ack_event(ev);
	}
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(iw_dereg_mr(cmr[i]), 0);
		ck_assert_int_eq(iw_dereg_mr(smr[i]), 0);
		ep_fini(&c[i]);
		ep_fini(&s[i]);
	}
	pair_free(&p);
}
END_TEST

/* A hand-made responder that accepts the MPA exchange and then stops
 * reading: the initiator fills the socket and waits without spinning;
 * once the peer reads, everything goes out. */
START_TEST(test_peer_stops_reading)
{
	enum { N = 48 };
	struct pair p;
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	uint8_t frame[64], *buf = malloc(MIB), *sink = malloc(MIB);
	struct iw_mr *mr;
	struct iw_wc wc;
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd;

	ck_assert(buf && sink);
	loopback_addr(AF_INET, &a);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
	/* "Fills the socket" must not depend on the machine's tcp_rmem: a
	 * fixed, small receive buffer (inherited by the accepted socket). */
	int rcvbuf = 256 * 1024;
	ck_assert_int_eq(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(iw_cm_create_channel(ctx, &p.cch), 0);
	ep_init(&p.c);
	ck_assert_int_eq(iw_reg_mr(p.c.pd, buf, MIB, IW_ACCESS_LOCAL_WRITE, &mr), 0);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&a, NULL), 0);
	iw_progress(ctx, 10);
	fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	/* Default Request: rev 2, C=1, enhanced, RFC 7306 ASK, IRD = ORD = 16, no data. */
	ck_assert_int_eq(recv(fd, frame, 24, MSG_WAITALL), 24);
	ck_assert_mem_eq(frame, "MPA ID Req Frame\x58\x02\x00\x04", 20);
	size_t rl = iwt_mpa_rep_bytes(0x50, 2, iwt_mpa_w1(false, false, 16), iwt_mpa_w2(false, false, 16), NULL, 0,
				      frame);
	ck_assert_int_eq(send(fd, frame, rl, 0), (ssize_t)rl);
	ev_expect_ack(p.cch, IW_CM_EVENT_ESTABLISHED);

	for (int i = 0; i < N; i++)
		post_op(&p.c, IW_WR_RDMA_WRITE, buf, MIB, mr, 0x1000, 0x100, 0, (uint64_t)i);
	/* Fill the socket: progress until nothing moves. How long that
	 * takes depends on the machine's tcp_wmem: with a small one (4096
	 * 8192 131072 here) the kernel's send queue is short, and a zero
	 * window probe (200 ms, then backing off) that finds room at the
	 * peer drains it and wakes us once more. So: until 500 ms in a row
	 * pass with nothing sent (it was 250 ms of progress in all, enough
	 * only with a large tcp_wmem). */
	struct iw_qp_stats st0, st1;
	int quiet = 0;
	for (uint64_t fill_end = now_ms() + WAIT_MS; quiet < 5 && now_ms() < fill_end;) {
		iw_qp_get_stats(p.c.qp, &st0);
		int n = iw_progress(ctx, 100);
		iw_qp_get_stats(p.c.qp, &st1);
		quiet = n == 0 && st1.bytes_tx == st0.bytes_tx ? quiet + 1 : 0;
	}
	ck_assert_int_eq(quiet, 5);
	iw_qp_get_stats(p.c.qp, &st0);
	ck_assert_uint_gt(st0.bytes_tx, 0);
	ck_assert_uint_lt(st0.bytes_tx, (uint64_t)N * MIB);
	/* Stuck, not spinning: a progress call sleeps its full timeout. */
	uint64_t t0 = now_ms();
	ck_assert_int_eq(iw_progress(ctx, 200), 0);
	ck_assert_uint_ge(now_ms() - t0, 150);
	iw_qp_get_stats(p.c.qp, &st1);
	ck_assert_uint_eq(st1.tx_syscalls, st0.tx_syscalls);

	/* The peer reads again: every WRITE completes, in order. */
	uint64_t got = 0;
	int done = 0;
	uint64_t end = now_ms() + WAIT_MS;
	while (done < N && now_ms() < end) {
		ssize_t n = recv(fd, sink, MIB, MSG_DONTWAIT);
		if (n > 0)
			got += (uint64_t)n;
		iw_progress(ctx, 0);
		while (iw_poll_cq(p.c.cq, 1, &wc) == 1) {
			expect_ok(wc, (uint64_t)done, IW_WC_RDMA_WRITE);
			done++;
		}
	}
	ck_assert_int_eq(done, N);
	iw_qp_get_stats(p.c.qp, &st1);
	while (got < st1.bytes_tx && now_ms() < end) {
		ssize_t n = recv(fd, sink, MIB, MSG_DONTWAIT);
		if (n > 0)
			got += (uint64_t)n;
	}
	ck_assert_uint_eq(got, st1.bytes_tx);
	ck_assert_uint_gt(got, (uint64_t)N * MIB);

	close(fd);
	close(lfd);
	ev_expect_ack(p.cch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	free(buf);
	free(sink);
	pair_free(&p);
}
END_TEST

/* Disconnect with work outstanding: everything completes, the
 * unmatched receives as flushed. */
START_TEST(test_disconnect_flushes)
{
	enum { NW = 32, NR = 8 };
	struct pair p;
	struct bufs b;
	struct iw_wc wc[NW + NR];
	int flushed = 0;

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, 4 * MIB);
	for (int i = 0; i < NR; i++) {
		post_recv(&p.s, b.sbuf, 16, b.smr, 100u + (uint64_t)i);
		post_recv(&p.c, b.cbuf, 16, b.cmr, 200u + (uint64_t)i);
	}
	for (int i = 0; i < NW; i++)
		post_op(&p.c, IW_WR_RDMA_WRITE, b.cbuf, 4 * MIB, b.cmr, (uint64_t)(uintptr_t)b.sbuf,
			iw_mr_stag(b.smr), 0, (uint64_t)i);
	ck_assert_int_eq(iw_cm_disconnect(p.c.id), 0);
	ev_expect_ack(p.cch, IW_CM_EVENT_DISCONNECTED);
	ev_expect_ack(p.sch, IW_CM_EVENT_DISCONNECTED);
	/* Client: the WRITEs (done or flushed, in order) and its receives. */
	ck_assert_int_eq(poll_n(p.c.cq, wc, NW + NR, WAIT_MS), NW + NR);
	for (int i = 0; i < NW + NR; i++) {
		ck_assert(wc[i].status == IW_WC_SUCCESS || wc[i].status == IW_WC_WR_FLUSH_ERR);
		if (wc[i].status == IW_WC_WR_FLUSH_ERR)
			flushed++;
		if (wc[i].opcode == IW_WC_RECV)
			ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
	}
	ck_assert_int_ge(flushed, NR);
	ck_assert_int_eq(poll_n(p.s.cq, wc, NR, WAIT_MS), NR);
	for (int i = 0; i < NR; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
		ck_assert_uint_eq(wc[i].wr_id, 100u + (uint64_t)i);
	}
	ck_assert_int_ne(iw_qp_state(p.c.qp), IW_QPS_RTS);
	ck_assert_int_ne(iw_qp_state(p.s.qp), IW_QPS_RTS);
	bufs_fini(&b);
	pair_free(&p);
}
END_TEST

/* A WRITE to a bad STag: the target sends a Terminate, the initiator's
 * WRITE fails with the cause, both QPs stop and both ids disconnect. */
START_TEST(test_peer_terminate)
{
	struct pair p;
	struct bufs b;
	struct iw_wc wc;
	struct iw_term_cause want = IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_STAG);

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, 4096);
	post_recv(&p.s, b.sbuf, 16, b.smr, 7);
	post_op(&p.c, IW_WR_RDMA_WRITE, b.cbuf, 16, b.cmr, (uint64_t)(uintptr_t)b.sbuf, iw_mr_stag(b.smr) ^ 0x5Au,
		0, 1);
	/* The WRITE may complete before the Terminate arrives (it completes
	 * once sent); either way it completes. */
	wc = wait_wc(p.c.cq);
	ck_assert_uint_eq(wc.wr_id, 1);
	ev_expect_ack(p.cch, IW_CM_EVENT_DISCONNECTED);
	ev_expect_ack(p.sch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_int_ne(iw_qp_state(p.c.qp), IW_QPS_RTS);
	ck_assert_int_ne(iw_qp_state(p.s.qp), IW_QPS_RTS);
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(p.c.qp), want), "initiator cause: %s",
		      iw_term_cause_str(iw_qp_error(p.c.qp)));
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(p.s.qp), want), "target cause: %s",
		      iw_term_cause_str(iw_qp_error(p.s.qp)));
	/* The target's posted receive was flushed. */
	wc = wait_wc(p.s.cq);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, IW_WC_WR_FLUSH_ERR);
	bufs_fini(&b);
	pair_free(&p);
}
END_TEST


/* Protection over the real transport: each violation gets its Terminate
 * (layer, etype, ecode) on both QPs, and a READ that caused it fails with
 * IW_WC_REM_ACCESS_ERR carrying the cause. */
START_TEST(test_protection_errors)
{
	static const struct iw_term_cause want[] = {
		IW_TERM_CAUSE(1, 1, 0x00), /* unknown STag */
		IW_TERM_CAUSE(1, 1, 0x00), /* the STag from before a re-registration */
		IW_TERM_CAUSE(0, 1, 0x02), /* no REMOTE_WRITE right */
		IW_TERM_CAUSE(1, 1, 0x01), /* beyond the region's end */
		IW_TERM_CAUSE(1, 1, 0x02), /* a region of another PD */
		IW_TERM_CAUSE(0, 1, 0x02), /* READ without REMOTE_READ */
		IW_TERM_CAUSE(1, 1, 0x00), /* invalidated by the target's LOCAL_INV */
	};
	struct pair p;
	struct bufs b;
	struct iw_pd *other_pd = NULL;
	struct iw_mr *target = NULL;
	uint8_t *tbuf = calloc(1, 4096);
	uint32_t rkey;
	uint64_t raddr = (uint64_t)(uintptr_t)tbuf;

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, 4096);
	post_recv(&p.s, b.sbuf, 16, b.smr, 7);
	switch (_i) {
	case 0:
		ck_assert_int_eq(iw_reg_mr(p.s.pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &target), 0);
		rkey = 0x00ABCD00u | ((iw_mr_stag(target) + 1) & 0xFF);
		rkey = (iw_mr_stag(target) & ~0xFFu) == (rkey & ~0xFFu) ? rkey ^ 0x100u : rkey;
		break;
	case 1:
		ck_assert_int_eq(iw_reg_mr(p.s.pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &target), 0);
		rkey = iw_mr_stag(target);
		ck_assert_int_eq(iw_rereg_mr(target, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE), 0);
		ck_assert_uint_ne(iw_mr_stag(target), rkey);
		break;
	case 2:
		ck_assert_int_eq(iw_reg_mr(p.s.pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_READ, &target), 0);
		rkey = iw_mr_stag(target);
		break;
	case 3:
		ck_assert_int_eq(iw_reg_mr(p.s.pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &target), 0);
		rkey = iw_mr_stag(target);
		raddr += 4096 - 8;
		break;
	case 4:
		ck_assert_int_eq(iw_alloc_pd(ctx, &other_pd), 0);
		ck_assert_int_eq(iw_reg_mr(other_pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &target), 0);
		rkey = iw_mr_stag(target);
		break;
	case 6: {
		/* Invalid from the moment the LOCAL_INV completion is seen. */
		ck_assert_int_eq(iw_reg_mr(p.s.pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &target), 0);
		rkey = iw_mr_stag(target);
		post_op(&p.s, IW_WR_LOCAL_INV, NULL, 0, NULL, 0, 0, rkey, 8);
		struct iw_wc inv = wait_wc(p.s.cq);
		ck_assert_uint_eq(inv.wr_id, 8);
		expect_ok(inv, 8, IW_WC_LOCAL_INV);
		break;
	}
	default:
		ck_assert_int_eq(iw_reg_mr(p.s.pd, tbuf, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &target), 0);
		rkey = iw_mr_stag(target);
		break;
	}
	memset(b.cbuf, 0xEE, 16);
	post_op(&p.c, _i == 5 ? IW_WR_RDMA_READ : IW_WR_RDMA_WRITE, b.cbuf, 16, b.cmr, raddr, rkey, 0, 1);
	struct iw_wc wc = wait_wc(p.c.cq);
	ck_assert_uint_eq(wc.wr_id, 1);
	if (_i == 5) {
		ck_assert_int_eq(wc.status, IW_WC_REM_ACCESS_ERR);
		ck_assert(iw_term_cause_eq(wc.cause, want[_i]));
	}
	ev_expect_ack(p.cch, IW_CM_EVENT_DISCONNECTED);
	ev_expect_ack(p.sch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(p.c.qp), want[_i]), "case %d initiator: %s", _i,
		      iw_term_cause_str(iw_qp_error(p.c.qp)));
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(p.s.qp), want[_i]), "case %d target: %s", _i,
		      iw_term_cause_str(iw_qp_error(p.s.qp)));
	wc = wait_wc(p.s.cq);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, IW_WC_WR_FLUSH_ERR);
	for (int i = 0; i < 4096; i++)
		ck_assert_uint_eq(tbuf[i], 0); /* nothing was placed */
	ck_assert_int_eq(iw_dereg_mr(target), 0);
	if (other_pd)
		ck_assert_int_eq(iw_dealloc_pd(other_pd), 0);
	free(tbuf);
	bufs_fini(&b);
	pair_free(&p);
}
END_TEST

/* Multi-SGE SEND and WRITE, an inline SEND whose buffer is reused at once,
 * and ORD 2 with eight READs outstanding, over the real transport. */
START_TEST(test_sge_inline_ord)
{
	struct pair p;
	struct bufs b;
	struct iw_conn_param cp = { .ord = 2 };

	pair_connect(&p, AF_INET, &cp, NULL);
	bufs_init(&p, &b, 1 << 20);
	for (size_t i = 0; i < b.len; i++)
		b.cbuf[i] = (uint8_t)(i * 7 + 3);
	uint32_t ck = iw_mr_stag(b.cmr), sk = iw_mr_stag(b.smr);

	/* SEND of 3 SGEs (5000 + 1 + 70000 bytes) into a 2-SGE receive. */
	struct iw_sge rs[2] = { { (uint64_t)(uintptr_t)b.sbuf, 30000, sk },
				{ (uint64_t)(uintptr_t)b.sbuf + 500000, 60000, sk } };
	struct iw_recv_wr rw = { .wr_id = 50, .sg_list = rs, .num_sge = 2 }, *rbad;
	ck_assert_int_eq(iw_post_recv(p.s.qp, &rw, &rbad), 0);
	struct iw_sge ss[3] = { { (uint64_t)(uintptr_t)b.cbuf, 5000, ck },
				{ (uint64_t)(uintptr_t)b.cbuf + 9000, 1, ck },
				{ (uint64_t)(uintptr_t)b.cbuf + 20000, 70000, ck } };
	struct iw_send_wr sw = { .wr_id = 51, .sg_list = ss, .num_sge = 3, .opcode = IW_WR_SEND,
				 .send_flags = IW_SEND_SIGNALED }, *sbad;
	ck_assert_int_eq(iw_post_send(p.c.qp, &sw, &sbad), 0);
	expect_ok(wait_wc(p.c.cq), 51, IW_WC_SEND);
	struct iw_wc wc = wait_wc(p.s.cq);
	expect_ok(wc, 50, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 75001);
	ck_assert(memcmp(b.sbuf, b.cbuf, 5000) == 0);
	ck_assert_uint_eq(b.sbuf[5000], b.cbuf[9000]);
	ck_assert(memcmp(b.sbuf + 5001, b.cbuf + 20000, 30000 - 5001) == 0);
	ck_assert(memcmp(b.sbuf + 500000, b.cbuf + 20000 + (30000 - 5001), 75001 - 30000) == 0);

	/* WRITE of 3 SGEs lands contiguously. */
	memset(b.sbuf, 0, b.len);
	sw = (struct iw_send_wr){ .wr_id = 52, .sg_list = ss, .num_sge = 3, .opcode = IW_WR_RDMA_WRITE,
				  .send_flags = IW_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)b.sbuf + 100,
				  .rkey = sk };
	ck_assert_int_eq(iw_post_send(p.c.qp, &sw, &sbad), 0);
	expect_ok(wait_wc(p.c.cq), 52, IW_WC_RDMA_WRITE);

	/* Inline SEND: the source is overwritten right after posting. */
	uint8_t inl[32];
	memset(inl, 0x42, sizeof(inl));
	post_recv(&p.s, b.sbuf + 800000, 64, b.smr, 53);
	struct iw_sge is = { (uint64_t)(uintptr_t)inl, sizeof(inl), 0 };
	sw = (struct iw_send_wr){ .wr_id = 54, .sg_list = &is, .num_sge = 1, .opcode = IW_WR_SEND,
				  .send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE };
	ck_assert_int_eq(iw_post_send(p.c.qp, &sw, &sbad), 0);
	memset(inl, 0, sizeof(inl));
	expect_ok(wait_wc(p.c.cq), 54, IW_WC_SEND);
	wc = wait_wc(p.s.cq);
	expect_ok(wc, 53, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 32);
	for (int i = 0; i < 32; i++)
		ck_assert_uint_eq(b.sbuf[800000 + i], 0x42);
	/* The WRITE before it was placed before the SEND arrived (in order). */
	ck_assert(memcmp(b.sbuf + 100, b.cbuf, 5000) == 0);
	ck_assert_uint_eq(b.sbuf[5100], b.cbuf[9000]);
	ck_assert(memcmp(b.sbuf + 5101, b.cbuf + 20000, 70000) == 0);

	/* Eight READs with ORD 2: all complete, in order, with their data. */
	for (int i = 0; i < 8; i++)
		post_op(&p.c, IW_WR_RDMA_READ, b.cbuf + 900000 + i * 4096, 4096, b.cmr,
			(uint64_t)(uintptr_t)b.sbuf + (uint64_t)i * 4096, sk, 0, 60u + (uint64_t)i);
	for (int i = 0; i < 8; i++)
		expect_ok(wait_wc(p.c.cq), 60u + (uint64_t)i, IW_WC_RDMA_READ);
	ck_assert(memcmp(b.cbuf + 900000, b.sbuf, 8 * 4096) == 0);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST


/* One SRQ feeds three server QPs over real sockets: every SEND lands in
 * some posted SRQ buffer, each buffer is used once, the data is right. */
START_TEST(test_srq_sockets)
{
	enum { N = 3, PER = 20, LEN = 3000 };
	struct pair p;
	struct ep c[N];
	struct iw_pd *spd;
	struct iw_cq *scq;
	struct iw_srq *srq;
	struct iw_qp *sqp[N];
	struct iw_cm_id *sid[N];
	static uint8_t cbuf[N][LEN], sbuf[N * PER][LEN];
	struct iw_mr *cmr[N], *smr;

	pair_listen(&p, AF_INET, 8);
	ck_assert_int_eq(iw_alloc_pd(ctx, &spd), 0);
	ck_assert_int_eq(iw_create_cq(ctx, 1024, NULL, &scq), 0);
	struct iw_srq_init_attr sa = { .max_wr = N * PER, .max_sge = 1 };
	ck_assert_int_eq(iw_create_srq(spd, &sa, &srq), 0);
	ck_assert_int_eq(iw_reg_mr(spd, sbuf, sizeof(sbuf), IW_ACCESS_LOCAL_WRITE, &smr), 0);
	for (int i = 0; i < N * PER; i++) {
		struct iw_sge sge = { (uint64_t)(uintptr_t)sbuf[i], LEN, iw_mr_stag(smr) };
		struct iw_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
		ck_assert_int_eq(iw_post_srq_recv(srq, &wr, &bad), 0);
	}
	for (int i = 0; i < N; i++) {
		struct iw_qp_init_attr qa = { .send_cq = scq, .recv_cq = scq, .srq = srq, .sq_sig_all = true };
		ck_assert_int_eq(iw_create_qp(spd, &qa, &sqp[i]), 0);
		ep_init(&c[i]);
		ck_assert_int_eq(iw_reg_mr(c[i].pd, cbuf[i], LEN, IW_ACCESS_LOCAL_WRITE, &cmr[i]), 0);
		ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &c[i].id), 0);
		ck_assert_int_eq(iw_cm_connect(c[i].id, c[i].qp, (struct sockaddr *)&p.addr, NULL), 0);
		struct iw_cm_event *ev = ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
		sid[i] = ev->id;
		iw_cm_ack_event(ev);
		ck_assert_int_eq(iw_cm_accept(sid[i], sqp[i], NULL), 0);
		ev_expect_ack(p.sch, IW_CM_EVENT_ESTABLISHED);
		ev_expect_ack(p.cch, IW_CM_EVENT_ESTABLISHED);
	}
	/* Interleaved SENDs from the three clients; byte 0 says who, byte 1 which. */
	for (int k = 0; k < PER; k++)
		for (int i = 0; i < N; i++) {
			memset(cbuf[i], 0x30 + i, LEN);
			cbuf[i][0] = (uint8_t)i;
			cbuf[i][1] = (uint8_t)k;
			post_op(&c[i], IW_WR_SEND, cbuf[i], LEN, cmr[i], 0, 0, 0, (uint64_t)k);
			expect_ok(wait_wc(c[i].cq), (uint64_t)k, IW_WC_SEND);
		}
	bool used[N * PER] = { false };
	int got[N] = { 0 };
	for (int n = 0; n < N * PER; n++) {
		struct iw_wc wc = wait_wc(scq);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
		ck_assert_int_eq(wc.opcode, IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, LEN);
		ck_assert_uint_lt(wc.wr_id, N * PER);
		ck_assert(!used[wc.wr_id]);
		used[wc.wr_id] = true;
		const uint8_t *b = sbuf[wc.wr_id];
		int who = b[0];
		ck_assert_int_lt(who, N);
		int qi = -1;
		for (int i = 0; i < N; i++)
			if (wc.qp == sqp[i])
				qi = i;
		ck_assert_int_ge(qi, 0);
		ck_assert_uint_eq(b[1], (unsigned)got[who]); /* in order per connection */
		got[who]++;
		for (int j = 2; j < LEN; j++)
			ck_assert_uint_eq(b[j], (unsigned)(0x30 + who));
	}
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(got[i], PER);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(iw_cm_disconnect(c[i].id), 0);
		ev_expect_ack(p.cch, IW_CM_EVENT_DISCONNECTED);
		ev_expect_ack(p.sch, IW_CM_EVENT_DISCONNECTED);
		ck_assert_int_eq(iw_destroy_qp(sqp[i]), 0);
		ck_assert_int_eq(iw_cm_destroy_id(sid[i]), 0);
		ck_assert_int_eq(iw_dereg_mr(cmr[i]), 0);
		ep_fini(&c[i]);
	}
	ck_assert_int_eq(iw_dereg_mr(smr), 0);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	ck_assert_int_eq(iw_destroy_cq(scq), 0);
	ck_assert_int_eq(iw_dealloc_pd(spd), 0);
	pair_free(&p);
}
END_TEST

/* RFC 7306 traffic traced: iwdump --check accepts the capture and shows
 * every new message; tshark (Wireshark 4.0 knows the atomic headers, not
 * Immediate Data) decodes the atomics with our request identifiers. */
START_TEST(test_trace_rfc7306)
{
	char path[1024], cmd[3000], line[1024];
	struct iw_context_attr attr = { 0 };
	struct pair p;
	struct bufs b;
	struct iw_conn_param cp = { .crc = IW_CRC_ON }, sp = { 0 };

	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ts_path(path, sizeof(path), "loopback_rfc7306.pcap");
	attr.trace_path = path;
	ck_assert_int_eq(iw_context_create(&attr, &ctx), 0);
	pair_connect(&p, AF_INET, &cp, &sp);
	bufs_init(&p, &b, 100000);
	one_op(&p, &b, IW_WR_RDMA_WRITE_WITH_IMM, 3000, 1);
	one_op(&p, &b, IW_WR_RDMA_WRITE_WITH_IMM, 0, 2);
	one_op(&p, &b, IW_WR_ATOMIC_FETCH_AND_ADD, 8, 3);
	one_op(&p, &b, IW_WR_ATOMIC_CMP_AND_SWP, 8, 4);
	one_op(&p, &b, IW_WR_RDMA_READ, 2000, 5);
	bufs_fini(&b);
	pair_close(&p);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);

	snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD %s --check %s 2>&1", IWT_IWDUMP, path);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	int imm = 0, areq = 0, aresp = 0, ask = 0, ack = 0, negotiated = 0;
	while (fgets(line, sizeof(line), f)) {
		imm += strstr(line, "MSG ") && (strstr(line, ": IMM msn") || strstr(line, ": IMM_SE msn"));
		areq += strstr(line, "MSG ") && strstr(line, ": ATOMIC_REQ msn") != NULL;
		/* matched: the response line names its request's operation */
		aresp += strstr(line, "MSG ") && strstr(line, ": ATOMIC_RESP msn") &&
			 (strstr(line, "(FetchAdd") || strstr(line, "(CmpSwap"));
		ask += strstr(line, "rfc7306 ask") != NULL;
		ack += strstr(line, "rfc7306 ack") != NULL;
		negotiated += strstr(line, "negotiated") && strstr(line, ", rfc7306") != NULL;
	}
	ck_assert_int_eq(pclose(f), 0); /* --check: no violation */
	ck_assert_int_eq(imm, 2);
	ck_assert_int_eq(areq, 3);  /* one FetchAdd, two CmpSwaps */
	ck_assert_int_eq(aresp, 3); /* each answered, matched to its request */
	ck_assert_int_eq(ask, 1);
	ck_assert_int_eq(ack, 1);
	ck_assert_int_eq(negotiated, 1);

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -o tcp.try_heuristic_first:TRUE --disable-heuristic rpcrdma_iwarp "
		 "--disable-heuristic smb_direct_iwarp -T fields -e iwarp_rdma.opcode -e iwarp_rdma.atomic.opcode "
		 "-e iwarp_rdma.atomic.request_identifier -e iwarp_rdma.atomic.original_request_identifier "
		 "-Y iwarp_rdma.opcode 2>/dev/null",
		 path);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	int t_req = 0, t_resp = 0, t_fa = 0, t_cs = 0;
	while (fgets(line, sizeof(line), f)) {
		/* A frame with several FPDUs lists each field's values with ','. */
		char *tab = strchr(line, '\t'), *p;
		if (!tab)
			continue;
		*tab = '\0';
		for (p = line; (p = strstr(p, "0x0a")); p += 4)
			t_req++;
		for (p = line; (p = strstr(p, "0x0b")); p += 4)
			t_resp++;
		for (p = tab + 1; *p && *p != '\t'; p++) {
			if ((p == tab + 1 || p[-1] == ',') && (p[1] == ',' || p[1] == '\t' || p[1] == '\n')) {
				t_fa += *p == '0';
				t_cs += *p == '2';
			}
		}
	}
	pclose(f);
	ck_assert_int_eq(t_req, 3);
	ck_assert_int_eq(t_fa, 1);
	ck_assert_int_eq(t_cs, 2);
	ck_assert_int_eq(t_resp, 3);
}
END_TEST

/* The same traffic with the context's own progress thread. */
START_TEST(test_progress_thread)
{
	struct iw_context_attr attr = { .flags = IW_CTX_PROGRESS_THREAD };
	struct pair p;
	struct bufs b;

	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(iw_context_create(&attr, &ctx), 0);
	threaded = true;
	pair_connect(&p, AF_INET6, NULL, NULL);
	bufs_init(&p, &b, 4 * MIB);
	for (int r = 0; r < 3; r++)
		for (size_t o = 0; o < sizeof(all_ops) / sizeof(all_ops[0]); o++)
			one_op(&p, &b, all_ops[o], r == 2 ? 4 * MIB : 1000 + (size_t)r * 70000, (uint32_t)(r * 10 + o));
	bufs_fini(&b);
	pair_close(&p);
	threaded = false;
}
END_TEST

/* ------------------------------------------------------------------ */
/* Tracing                                                             */

START_TEST(test_trace_tshark)
{
	char path[1024];
	struct iw_context_attr attr = { 0 };
	struct pair p;
	struct bufs b;
	struct ts_result *r = calloc(1, sizeof(*r));
	static const char *const args[] = { "-T", "pdml", "-o", "tcp.try_heuristic_first:TRUE", NULL };
	struct iw_conn_param cp = { .crc = IW_CRC_ON, .max_ulpdu = 4000 }, sp = { .max_ulpdu = 4000 };
	uint16_t cport, sport;
	struct sockaddr_storage a;

	ck_assert_ptr_nonnull(r);
	/* This test's context traces. */
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ts_path(path, sizeof(path), "loopback_trace.pcap");
	attr.trace_path = path;
	ck_assert_int_eq(iw_context_create(&attr, &ctx), 0);

	pair_connect(&p, AF_INET, &cp, &sp);
	ck_assert_int_eq(iw_cm_local_addr(p.c.id, &a), 0);
	cport = ss_port(&a);
	sport = ss_port(&p.addr);
	bufs_init(&p, &b, 100000);
	one_op(&p, &b, IW_WR_SEND, 5000, 1);
	one_op(&p, &b, IW_WR_SEND_WITH_INV, 10, 2);
	one_op(&p, &b, IW_WR_RDMA_WRITE, 100000, 3);
	one_op(&p, &b, IW_WR_RDMA_READ, 20000, 4);
	bufs_fini(&b);
	pair_close(&p);
	/* Flush the file. */
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);

	ts_run("loopback_trace.pcap", "loopback_trace.pdml", args);
	ts_parse_pdml("loopback_trace.pdml", cport, sport, r);
	ck_assert_int_eq(r->n_req, 1);
	ck_assert_int_eq(r->n_rep, 1);
	ck_assert_int_eq(r->malformed, 0);
	ck_assert_int_eq(r->cksum_other, 0);
	ck_assert_int_gt(r->cksum_good, 0);
	/* SEND 5000 (2), SEND_INV (1), WRITE 100000 (26) + SEND 0, READ
	 * request + 20000 (6) at a 4000-byte MULPDU, plus the empty SENDs. */
	ck_assert_int_ge(r->n, 2 + 1 + 26 + 1 + 1 + 6);
	for (int i = 0; i < r->n; i++) {
		ck_assert_msg(r->f[i].have & TS_F_CRC, "FPDU %d (frame %u) without a CRC verdict", i, r->f[i].frame);
		ck_assert_msg(r->f[i].crc_good, "FPDU %d (frame %u): bad CRC", i, r->f[i].frame);
		ck_assert_int_ge(r->f[i].dir, 0);
	}
	free(r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A quick bandwidth figure (printed, not asserted)                    */

START_TEST(test_write_bandwidth)
{
	enum { MSG = MIB, N = 256, WINDOW = 16 };
	struct pair p;
	struct bufs b;
	struct iw_wc wc[WINDOW];
	int posted = 0, done = 0;

	pair_connect(&p, AF_INET, NULL, NULL);
	bufs_init(&p, &b, MSG);
	uint64_t t0 = now_ms();
	while (done < N) {
		while (posted < N && posted - done < WINDOW) {
			post_op(&p.c, IW_WR_RDMA_WRITE, b.cbuf, MSG, b.cmr, (uint64_t)(uintptr_t)b.sbuf,
				iw_mr_stag(b.smr), 0, (uint64_t)posted);
			posted++;
		}
		int k = poll_n(p.c.cq, wc, 1, WAIT_MS);
		ck_assert_int_eq(k, 1);
		ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
		done++;
	}
	/* A SEND behind the WRITEs: once it arrived every WRITE was placed
	 * and the target's buffer may go. */
	post_recv(&p.s, b.sbuf, 0, b.smr, 1);
	post_op(&p.c, IW_WR_SEND, b.cbuf, 0, b.cmr, 0, 0, 0, 2);
	expect_ok(wait_wc(p.s.cq), 1, IW_WC_RECV);
	expect_ok(wait_wc(p.c.cq), 2, IW_WC_SEND);
	uint64_t ms = now_ms() - t0;
	struct iw_qp_stats cs, ss;
	iw_qp_get_stats(p.c.qp, &cs);
	iw_qp_get_stats(p.s.qp, &ss);
	fprintf(stderr, "  WRITE %u x 1 MiB (CRC on): %llu ms, %.2f Gbit/s; tx syscalls %llu, rx syscalls %llu\n",
		(unsigned)N, (unsigned long long)ms, ms ? (double)N * MSG * 8 / ((double)ms * 1e6) : 0.0,
		(unsigned long long)cs.tx_syscalls, (unsigned long long)ss.rx_syscalls);
	bufs_fini(&b);
	pair_close(&p);
}
END_TEST

static Suite *loopback_suite(void)
{
	Suite *s = suite_create("loopback");
	TCase *tc = tcase_create("cm");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_connect_ipv4_pdata);
	tcase_add_test(tc, test_destroy_qp_while_connecting);
	tcase_add_test(tc, test_first_fpdu_delay);
	tcase_add_test(tc, test_reject_lingers);
	tcase_add_test(tc, test_connect_ipv6_pdata);
	tcase_add_test(tc, test_pdata_limit);
	tcase_add_test(tc, test_reject_pdata);
	tcase_add_test(tc, test_connect_closed_port);
	tcase_add_test(tc, test_connect_from_source);
	tcase_add_test(tc, test_request_timeout);
	tcase_add_test(tc, test_request_with_trailing_data);
	tcase_add_test(tc, test_backlog);
	tcase_add_test(tc, test_accept_policy_reject);
	tcase_add_test(tc, test_reply_timeout);
	tcase_add_test(tc, test_destroy_midway);
	suite_add_tcase(s, tc);

	tc = tcase_create("data");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ops_crc_on);
	tcase_add_test(tc, test_ops_crc_off);
	tcase_add_test(tc, test_ops_busy_poll);
	tcase_add_test(tc, test_ops_verified);
	tcase_add_test(tc, test_ops_markers);
	tcase_add_test(tc, test_ops_small_fpdus);
	tcase_add_test(tc, test_ops_ipv6_rev1);
	tcase_add_test(tc, test_small_sends_batched);
	tcase_add_test(tc, test_post_sends_inline);
	tcase_add_test(tc, test_responder_lockstep);
	tcase_add_test(tc, test_p2p_rtr);
	tcase_add_test(tc, test_many_qps);
	tcase_add_test(tc, test_peer_stops_reading);
	tcase_add_test(tc, test_disconnect_flushes);
	tcase_add_test(tc, test_peer_terminate);
	tcase_add_loop_test(tc, test_protection_errors, 0, 7);
	tcase_add_test(tc, test_sge_inline_ord);
	tcase_add_test(tc, test_srq_sockets);
	tcase_add_test(tc, test_progress_thread);
	tcase_add_test(tc, test_trace_tshark);
	tcase_add_test(tc, test_trace_rfc7306);
	tcase_add_test(tc, test_write_bandwidth);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	iwt_seed();
	return iwt_run_suite(loopback_suite());
}
