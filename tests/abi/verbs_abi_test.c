/* Our own program against Debian's <infiniband/verbs.h> and
 * <rdma/rdma_cma.h>, linked with our libibverbs.so.1/librdmacm.so.1:
 * each call and semantic verbs programs rely on, error paths included.
 * Connections run over kernel TCP on loopback inside the process (both
 * ends share the engine, as two programs' objects never do; the wire
 * does not know). Each test forks (Check), so each gets a fresh engine.
 *
 * Waiting is done with poll() on the channel fds and never in a verb, so
 * every test also shows that connections progress while the program
 * calls nothing of ours. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "iwt_check.h"

#define WAIT_MS 20000 /* generous bound for anything to happen */
#define BUF 65536

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The next event of ch, which must be `want` (waits in poll). */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = NULL;
	ck_assert_msg(readable(ch->fd, WAIT_MS), "no CM event (wanted %s)", rdma_event_str(want));
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_msg(ev->event == want, "got %s (status %d), wanted %s", rdma_event_str(ev->event), ev->status,
		      rdma_event_str(want));
	return ev;
}

/* Poll a CQ until n completions arrived (spinning in ibv_poll_cq, as
 * perftest does). */
static void poll_n(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k = 0;
	uint64_t end = now_ms() + WAIT_MS;
	while (k < n) {
		int r = ibv_poll_cq(cq, n - k, wc + k);
		ck_assert_int_ge(r, 0);
		k += r;
		ck_assert_msg(now_ms() < end, "only %d of %d completions", k, n);
	}
}

/* ------------------------------------------------------------------ */
/* A connected pair through rdma_cm                                    */

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct pair {
	struct side s, c;
	struct rdma_cm_id *listen;
	struct ibv_qp_cap cap; /* the client's QP as created */
};

static void side_objects(struct side *x, struct ibv_context *verbs, bool srq)
{
	x->pd = ibv_alloc_pd(verbs);
	ck_assert_ptr_nonnull(x->pd);
	x->cc = ibv_create_comp_channel(verbs);
	ck_assert_ptr_nonnull(x->cc);
	x->cq = ibv_create_cq(verbs, 256, x, x->cc, 0);
	ck_assert_ptr_nonnull(x->cq);
	x->buf = calloc(1, BUF);
	x->mr = ibv_reg_mr(x->pd, x->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(x->mr);
	ck_assert_uint_eq(x->mr->lkey, x->mr->rkey);
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };
		x->srq = ibv_create_srq(x->pd, &sa);
		ck_assert_ptr_nonnull(x->srq);
	}
}

static void side_qp(struct side *x, struct rdma_cm_id *id, struct ibv_qp_cap *cap_out)
{
	struct ibv_qp_init_attr a = {
		.send_cq = x->cq,
		.recv_cq = x->cq,
		.srq = x->srq,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 128 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	ck_assert_int_eq(rdma_create_qp(id, x->pd, &a), 0);
	ck_assert_ptr_nonnull(id->qp);
	ck_assert_uint_ge(a.cap.max_inline_data, 128);
	if (cap_out)
		*cap_out = a.cap;
}

static void post_recv(struct side *x, struct ibv_qp *qp, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)x->buf + off, .length = len, .lkey = x->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;
	if (x->srq)
		ck_assert_int_eq(ibv_post_srq_recv(x->srq, &w, &bad), 0);
	else
		ck_assert_int_eq(ibv_post_recv(qp, &w, &bad), 0);
}

/* src: rdma_bind_addr the client's id to it first (NULL: no bind). */
static void pair_up_from(struct pair *p, bool srq, const struct sockaddr_in *src)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	memset(p, 0, sizeof(*p));
	p->s.ch = rdma_create_event_channel();
	p->c.ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(p->s.ch);
	ck_assert_ptr_nonnull(p->c.ch);
	ck_assert_int_eq(rdma_create_id(p->s.ch, &p->listen, p, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(p->listen, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(rdma_listen(p->listen, 8), 0);
	a.sin_port = rdma_get_src_port(p->listen);
	ck_assert_uint_ne(a.sin_port, 0);

	ck_assert_int_eq(rdma_create_id(p->c.ch, &p->c.id, p, RDMA_PS_TCP), 0);
	if (src)
		ck_assert_int_eq(rdma_bind_addr(p->c.id, (struct sockaddr *)src), 0);
	ck_assert_int_eq(rdma_resolve_addr(p->c.id, NULL, (struct sockaddr *)&a, 2000), 0);
	rdma_ack_cm_event(expect_event(p->c.ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_ptr_nonnull(p->c.id->verbs);
	ck_assert_int_eq(rdma_resolve_route(p->c.id, 2000), 0);
	rdma_ack_cm_event(expect_event(p->c.ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	side_objects(&p->c, p->c.id->verbs, false);
	side_qp(&p->c, p->c.id, &p->cap);
	for (int i = 0; i < 8; i++)
		post_recv(&p->c, p->c.id->qp, 100 + (uint64_t)i, 0, 4096);
	struct rdma_conn_param cp = { .responder_resources = 4, .initiator_depth = 4, .private_data = "hello",
				      .private_data_len = 6 };
	ck_assert_int_eq(rdma_connect(p->c.id, &cp), 0);

	struct rdma_cm_event *ev = expect_event(p->s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(ev->listen_id, p->listen);
	ck_assert_int_ge(ev->param.conn.private_data_len, 6);
	ck_assert_str_eq(ev->param.conn.private_data, "hello");
	p->s.id = ev->id;
	ck_assert_ptr_eq(p->s.id->context, p); /* inherited from the listener */
	side_objects(&p->s, p->s.id->verbs, srq);
	side_qp(&p->s, p->s.id, NULL);
	for (int i = 0; i < 8; i++)
		post_recv(&p->s, p->s.id->qp, 200 + (uint64_t)i, (uint32_t)i * 4096, 4096);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_accept(p->s.id, &cp), 0);
	rdma_ack_cm_event(expect_event(p->s.ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(expect_event(p->c.ch, RDMA_CM_EVENT_ESTABLISHED));
}

static void pair_up(struct pair *p, bool srq)
{
	pair_up_from(p, srq, NULL);
}

static void side_down(struct side *x)
{
	if (x->id && x->id->qp)
		rdma_destroy_qp(x->id);
	if (x->srq)
		ck_assert_int_eq(ibv_destroy_srq(x->srq), 0);
	ck_assert_int_eq(ibv_dereg_mr(x->mr), 0);
	ck_assert_int_eq(ibv_destroy_cq(x->cq), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(x->cc), 0);
	ck_assert_int_eq(ibv_dealloc_pd(x->pd), 0);
	free(x->buf);
	if (x->id)
		ck_assert_int_eq(rdma_destroy_id(x->id), 0);
}

/* Disconnect from the client: both get DISCONNECTED, nothing after it
 * (iWARP has no TIMEWAIT_EXIT: the kernel's iw_cm gives none either). */
static void pair_down(struct pair *p)
{
	ck_assert_int_eq(rdma_disconnect(p->c.id), 0);
	rdma_ack_cm_event(expect_event(p->c.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(p->s.ch, RDMA_CM_EVENT_DISCONNECTED));
	ck_assert(!readable(p->c.ch->fd, 50));
	side_down(&p->c);
	side_down(&p->s);
	ck_assert_int_eq(rdma_destroy_id(p->listen), 0);
	rdma_destroy_event_channel(p->s.ch);
	rdma_destroy_event_channel(p->c.ch);
}

static int post_send(struct side *x, struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op, uint32_t off,
		     uint32_t len, unsigned flags, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)x->buf + off, .length = len, .lkey = x->mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = op, .send_flags = flags };
	struct ibv_send_wr *bad = NULL;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &w, &bad);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */

START_TEST(device)
{
	int n = -1;
	struct ibv_device **l = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_null(l[1]);
	ck_assert_str_eq(ibv_get_device_name(l[0]), "iwarp0");
	ck_assert_int_eq(l[0]->node_type, IBV_NODE_RNIC);
	ck_assert_int_eq(l[0]->transport_type, IBV_TRANSPORT_IWARP);
	ck_assert_uint_ne(ibv_get_device_guid(l[0]), 0);
	struct ibv_context *ctx = ibv_open_device(l[0]);
	ck_assert_ptr_nonnull(ctx);
	ibv_free_device_list(l);

	struct ibv_device_attr da;
	ck_assert_int_eq(ibv_query_device(ctx, &da), 0);
	ck_assert_int_eq(da.phys_port_cnt, 1);
	ck_assert_int_ge(da.max_qp, 1024);
	ck_assert_int_ge(da.max_qp_wr, 1024);
	ck_assert_int_ge(da.max_sge, 4);
	ck_assert_int_ge(da.max_qp_rd_atom, 1);
	/* RFC 7306 atomics (toward libiwarp peers; docs/rfc7306.md) */
	ck_assert_int_eq(da.atomic_cap, IBV_ATOMIC_GLOB);
	/* Outside perftest's Mellanox table (4099..4131, 41682, 53314...). */
	ck_assert(da.vendor_part_id < 4099 || da.vendor_part_id > 4131);
	struct ibv_device_attr_ex dx;
	ck_assert_int_eq(ibv_query_device_ex(ctx, NULL, &dx), 0);
	ck_assert_int_eq(dx.orig_attr.max_qp, da.max_qp);

	struct ibv_port_attr pa;
	ck_assert_int_eq(ibv_query_port(ctx, 1, &pa), 0);
	ck_assert_int_eq(pa.state, IBV_PORT_ACTIVE);
	ck_assert_int_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	ck_assert_int_ne(ibv_query_port(ctx, 2, &pa), 0);
	union ibv_gid gid;
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid), 0);
	ck_assert_int_ne(ibv_query_gid(ctx, 1, 1, &gid), 0);
	__be16 pkey;
	ck_assert_int_eq(ibv_query_pkey(ctx, 1, 0, &pkey), 0);

	ck_assert_str_eq(ibv_node_type_str(IBV_NODE_RNIC), "iWARP NIC");
	ck_assert_str_eq(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	ck_assert_str_eq(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
	ck_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");

	/* The async fd exists and, with nothing to report, blocks. */
	int fl = fcntl(ctx->async_fd, F_GETFL);
	ck_assert_int_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	struct ibv_async_event ae;
	ck_assert_int_eq(ibv_get_async_event(ctx, &ae), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(ibv_close_device(ctx), 0);
}
END_TEST

/* What libiwarp does not have fails cleanly. */
START_TEST(unsupported)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	static uint8_t buf[4096];
	errno = 0;
	/* Remote atomic access: RFC 7306 atomics may target it (libfabric also
	 * asks for it on every region; tests/abi/fabric_abi_test.c). */
	struct ibv_mr *amr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_ptr_nonnull(amr);
	ck_assert_int_eq(ibv_dereg_mr(amr), 0);
	/* Remote atomic needs local write, as in verbs. */
	ck_assert_ptr_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_ATOMIC));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_ptr_null(ibv_reg_mr_iova(pd, buf, sizeof(buf), 0x1000, IBV_ACCESS_LOCAL_WRITE));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* Remote write without local write: invalid, as in verbs. */
	ck_assert_ptr_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE));
	ck_assert_int_eq(errno, EINVAL);
	/* Optional flags are ignored. */
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	ck_assert_ptr_nonnull(mr);

	struct ibv_ah_attr aa = { .port_num = 1 };
	ck_assert_ptr_null(ibv_create_ah(pd, &aa));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(ibv_resize_cq(cq, 32), EOPNOTSUPP);
	ck_assert_ptr_null(ibv_create_cq(ctx, 16, NULL, NULL, 5)); /* no such vector */
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .cap = { 4, 4, 1, 1, 0 }, .qp_type = IBV_QPT_UD };
	ck_assert_ptr_null(ibv_create_qp(pd, &qa));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	qa.qp_type = IBV_QPT_UC;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(pd, &qa));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_inline_data = 1u << 20; /* beyond the limit */
	ck_assert_ptr_null(ibv_create_qp(pd, &qa));
	qa.cap.max_inline_data = 0;
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);
	ck_assert_ptr_nonnull(qp);
	union ibv_gid gid = { 0 };
	ck_assert_int_eq(ibv_attach_mcast(qp, &gid, 0), EOPNOTSUPP);
	/* Sends before a connection: refused, not queued. */
	struct ibv_sge sg = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_send_wr w = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad = NULL;
	ck_assert_int_eq(ibv_post_send(qp, &w, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w);
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; /* known, but not before a connection either */
	ck_assert_int_eq(ibv_post_send(qp, &w, &bad), EINVAL);
	w.opcode = IBV_WR_SEND_WITH_IMM; /* RFC 7306 has no one-message Send with Immediate */
	ck_assert_int_eq(ibv_post_send(qp, &w, &bad), EOPNOTSUPP);
	ck_assert_ptr_null(ibv_qp_to_qp_ex(qp));
	/* In use: refused until the user goes. */
	ck_assert_int_eq(ibv_destroy_cq(cq), EBUSY);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);

	/* rdma_cm: UD port spaces, multicast, rsockets. */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(rdma_join_multicast(id, (struct sockaddr *)&a, NULL), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* Connecting needs a QP; binding needs one of our addresses. */
	ck_assert_int_eq(rdma_connect(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	struct sockaddr_in other = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0xC0000201) }; /* 192.0.2.1 */
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&other), -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(errno, ENOSYS);
	struct pollfd pf = { .fd = 0 };
	ck_assert_int_eq(rpoll(&pf, 1, 0), -1);
	ck_assert_int_eq(ibv_close_device(ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Data path                                                           */

START_TEST(send_recv_write_read)
{
	struct pair p;
	struct ibv_wc wc[16];
	pair_up(&p, false);
	struct ibv_qp *cq = p.c.id->qp, *sq = p.s.id->qp;

	/* SEND: byte_len, qp_num, opcode, wc_flags on both sides. */
	memset(p.c.buf + 8192, 'x', 1000);
	ck_assert_int_eq(post_send(&p.c, cq, 1, IBV_WR_SEND, 8192, 1000, IBV_SEND_SIGNALED, 0, 0), 0);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_uint_eq(wc[0].qp_num, cq->qp_num);
	poll_n(p.s.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc[0].byte_len, 1000);
	ck_assert_uint_eq(wc[0].wr_id, 200);
	ck_assert_uint_eq(wc[0].qp_num, sq->qp_num);
	ck_assert_uint_eq(wc[0].wc_flags, 0);
	ck_assert_int_eq(p.s.buf[999], 'x');

	/* Inline: from a stack buffer, no key, up to max_inline_data. */
	char msg[128];
	memset(msg, 'i', sizeof(msg));
	struct ibv_sge isg = { (uintptr_t)msg, (uint32_t)p.cap.max_inline_data, 0 };
	struct ibv_send_wr iw = { .wr_id = 2, .sg_list = &isg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_INLINE }, *bad;
	ck_assert_int_eq(ibv_post_send(cq, &iw, &bad), 0);
	memset(msg, 0, sizeof(msg)); /* copied at post time */
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	poll_n(p.s.cq, 1, wc);
	ck_assert_uint_eq(wc[0].byte_len, p.cap.max_inline_data);
	ck_assert_int_eq(p.s.buf[4096 + 127], 'i');
	isg.length = p.cap.max_inline_data + 1;
	ck_assert_int_ne(ibv_post_send(cq, &iw, &bad), 0);

	/* RDMA WRITE into the server's buffer, RDMA READ back. */
	for (int i = 0; i < 4096; i++)
		p.c.buf[16384 + i] = (uint8_t)(i * 7);
	uint64_t sraddr = (uintptr_t)p.s.buf + 32768;
	ck_assert_int_eq(post_send(&p.c, cq, 3, IBV_WR_RDMA_WRITE, 16384, 4096, 0, sraddr, p.s.mr->rkey), 0);
	ck_assert_int_eq(post_send(&p.c, cq, 4, IBV_WR_RDMA_READ, 20480, 4096, 0, sraddr, p.s.mr->rkey), 0);
	poll_n(p.c.cq, 2, wc);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RDMA_WRITE);
	ck_assert_int_eq(wc[1].opcode, IBV_WC_RDMA_READ);
	ck_assert_int_eq(wc[1].status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc[1].byte_len, 4096);
	ck_assert_int_eq(memcmp(p.c.buf + 16384, p.c.buf + 20480, 4096), 0);
	ck_assert_int_eq(memcmp(p.c.buf + 16384, p.s.buf + 32768, 4096), 0);
	pair_down(&p);
}
END_TEST

/* RFC 7306 through the verbs ABI between two libiwarp ends: atomics on a
 * REMOTE_ATOMIC region (original value returned in host order), Write
 * with Immediate (verbs' big-endian imm_data arrives exactly as sent and
 * consumes a receive), an unaligned atomic refused by the peer; with
 * IWARP_RFC7306=0 the same posts fail EOPNOTSUPP at once and the
 * connection goes on. */
START_TEST(rfc7306_atomics_and_imm)
{
	struct pair p;
	struct ibv_wc wc[4];
	if (_i)
		setenv("IWARP_RFC7306", "0", 1);
	pair_up(&p, false);
	struct ibv_qp *cq = p.c.id->qp;
	static _Alignas(8) uint64_t target[2];
	struct ibv_mr *amr = ibv_reg_mr(p.s.pd, target, sizeof(target),
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(amr);
	target[0] = 1000;
	uint64_t *res = (uint64_t *)(void *)(p.c.buf + 64);
	*res = 0;
	struct ibv_sge sg = { (uintptr_t)res, 8, p.c.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				 .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	w.wr.atomic.remote_addr = (uintptr_t)&target[0];
	w.wr.atomic.rkey = amr->rkey;
	w.wr.atomic.compare_add = 5;
	if (_i) {
		ck_assert_int_eq(ibv_post_send(cq, &w, &bad), EOPNOTSUPP);
		ck_assert_ptr_eq(bad, &w);
		w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		ck_assert_int_eq(ibv_post_send(cq, &w, &bad), EOPNOTSUPP);
		ck_assert_uint_eq(target[0], 1000);
		/* The connection is unharmed. */
		ck_assert_int_eq(post_send(&p.c, cq, 8, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED, 0, 0), 0);
		poll_n(p.c.cq, 1, wc);
		ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
		poll_n(p.s.cq, 1, wc);
		ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV);
		ck_assert_int_eq(ibv_dereg_mr(amr), 0);
		pair_down(&p);
		unsetenv("IWARP_RFC7306");
		return;
	}
	ck_assert_int_eq(ibv_post_send(cq, &w, &bad), 0);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_FETCH_ADD);
	ck_assert_uint_eq(wc[0].byte_len, 8);
	ck_assert_uint_eq(*res, 1000);
	ck_assert_uint_eq(target[0], 1005);
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w.wr.atomic.compare_add = 1005;
	w.wr.atomic.swap = 0xFEEDFACECAFEBEEFULL;
	ck_assert_int_eq(ibv_post_send(cq, &w, &bad), 0);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_COMP_SWAP);
	ck_assert_uint_eq(*res, 1005);
	ck_assert_uint_eq(target[0], 0xFEEDFACECAFEBEEFULL);

	memset(p.c.buf + 128, 0x5C, 64);
	struct ibv_sge ws = { (uintptr_t)p.c.buf + 128, 64, p.c.mr->lkey };
	struct ibv_send_wr wi = { .wr_id = 9, .sg_list = &ws, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(0x11223344) };
	wi.wr.rdma.remote_addr = (uintptr_t)p.s.buf + 40000;
	wi.wr.rdma.rkey = p.s.mr->rkey;
	ck_assert_int_eq(ibv_post_send(cq, &wi, &bad), 0);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RDMA_WRITE);
	poll_n(p.s.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert(wc[0].wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(wc[0].imm_data, htonl(0x11223344));
	ck_assert_uint_eq(wc[0].byte_len, 64);
	ck_assert_uint_eq(wc[0].wr_id, 200);
	ck_assert_int_eq(memcmp(p.s.buf + 40000, p.c.buf + 128, 64), 0);

	/* Unaligned: the peer Terminates (RDMAP, remote protection, base or
	 * bounds); the WR completes with a remote access error, the target is
	 * untouched and the connection ends. */
	w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	w.wr.atomic.remote_addr = (uintptr_t)&target[0] + 4;
	ck_assert_int_eq(ibv_post_send(cq, &w, &bad), 0);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_FETCH_ADD);
	ck_assert_int_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(wc[0].vendor_err, 0x000101);
	ck_assert_uint_eq(target[0], 0xFEEDFACECAFEBEEFULL);
	ck_assert_int_eq(ibv_dereg_mr(amr), 0);
	rdma_ack_cm_event(expect_event(p.c.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(p.s.ch, RDMA_CM_EVENT_DISCONNECTED));
	side_down(&p.c);
	side_down(&p.s);
	rdma_destroy_id(p.listen);
	rdma_destroy_event_channel(p.s.ch);
	rdma_destroy_event_channel(p.c.ch);
}
END_TEST

/* A protection error: the peer's Terminate completes the WR with
 * IBV_WC_REM_ACCESS_ERR, what follows is flushed, and work posted after
 * that is flushed too (not refused). An RDMA READ, because a WRITE has
 * completed (its data left) before the peer can object, as with siw. */
START_TEST(remote_access_error_and_flush)
{
	struct pair p;
	struct ibv_wc wc[16];
	pair_up(&p, false);
	struct ibv_qp *qp = p.c.id->qp;
	ck_assert_int_eq(post_send(&p.c, qp, 1, IBV_WR_RDMA_READ, 0, 64, 0, (uintptr_t)p.s.buf,
				   p.s.mr->rkey ^ 0x55),
			 0);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_uint_ne(wc[0].vendor_err, 0); /* the Terminate's cause */
	/* The client's 8 posted receives are flushed as well. */
	poll_n(p.c.cq, 8, wc);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(wc[i].opcode, IBV_WC_RECV);
	}
	ck_assert_int_eq(post_send(&p.c, qp, 3, IBV_WR_SEND, 0, 64, 0, 0, 0), 0);
	post_recv(&p.c, qp, 4, 0, 64);
	poll_n(p.c.cq, 2, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[0].wr_id, 3);
	ck_assert_int_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[1].wr_id, 4);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	ck_assert_int_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	ck_assert_int_eq(qa.qp_state, IBV_QPS_ERR);
	/* Both sides see the connection end. */
	rdma_ack_cm_event(expect_event(p.c.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(p.s.ch, RDMA_CM_EVENT_DISCONNECTED));
	side_down(&p.c);
	side_down(&p.s);
	rdma_destroy_id(p.listen);
	rdma_destroy_event_channel(p.s.ch);
	rdma_destroy_event_channel(p.c.ch);
}
END_TEST

START_TEST(srq)
{
	struct pair p;
	struct ibv_wc wc[4];
	pair_up(&p, true);
	ck_assert_ptr_eq(p.s.id->qp->srq, p.s.srq);
	struct ibv_srq_attr sa;
	ck_assert_int_eq(ibv_query_srq(p.s.srq, &sa), 0);
	ck_assert_uint_eq(sa.max_wr, 64);
	ck_assert_int_eq(ibv_modify_srq(p.s.srq, &sa, IBV_SRQ_LIMIT), EOPNOTSUPP);
	memset(p.c.buf, 's', 300);
	ck_assert_int_eq(post_send(&p.c, p.c.id->qp, 1, IBV_WR_SEND, 0, 300, 0, 0, 0), 0);
	poll_n(p.s.cq, 1, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].byte_len, 300);
	ck_assert_uint_eq(wc[0].qp_num, p.s.id->qp->qp_num);
	poll_n(p.c.cq, 1, wc);
	ck_assert_int_eq(ibv_destroy_srq(p.s.srq), EBUSY); /* a QP uses it */
	pair_down(&p);
}
END_TEST

/* ibv_modify_qp: the states before RTS are recorded; ERR flushes. */
START_TEST(modify_qp)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	struct side x = { 0 };
	struct ibv_wc wc[8];
	side_objects(&x, ctx, false);
	struct ibv_qp_init_attr qa = { .send_cq = x.cq, .recv_cq = x.cq, .cap = { 8, 8, 1, 1, 0 },
				       .qp_type = IBV_QPT_RC };
	struct ibv_qp *qp = ibv_create_qp(x.pd, &qa);
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(qp->state, IBV_QPS_RESET);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE, .port_num = 1 };
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	ck_assert_int_eq(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_RTS);
	ck_assert_int_eq(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	ck_assert_uint_eq(qi.cap.max_send_wr, 8);
	a.qp_state = IBV_QPS_SQD;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), EOPNOTSUPP);
	post_recv(&x, qp, 1, 0, 64);
	post_recv(&x, qp, 2, 64, 64);
	a.qp_state = IBV_QPS_ERR;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	poll_n(x.cq, 2, wc);
	ck_assert_int_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_uint_eq(wc[1].wr_id, 2);
	ck_assert_uint_eq(wc[0].qp_num, qp->qp_num);
	ck_assert_int_eq(ibv_query_qp(qp, &q, IBV_QP_STATE, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_ERR);
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	side_down(&x);
	ck_assert_int_eq(ibv_close_device(ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Completion channels                                                 */

struct waiter {
	struct ibv_comp_channel *cc;
	struct ibv_cq *got;
	int rc;
	volatile bool done;
};

static void *wait_cq_event(void *arg)
{
	struct waiter *w = arg;
	void *ctx;
	w->rc = ibv_get_cq_event(w->cc, &w->got, &ctx);
	w->done = true;
	return NULL;
}

struct destroyer {
	struct ibv_cq *cq;
	int rc;
	volatile bool done;
};

static void *destroy_cq_thread(void *arg)
{
	struct destroyer *d = arg;
	d->rc = ibv_destroy_cq(d->cq);
	d->done = true;
	return NULL;
}

START_TEST(cq_events)
{
	struct pair p;
	struct ibv_wc wc[8];
	pair_up(&p, false);
	struct ibv_comp_channel *cc = p.s.cc;

	/* Blocking by default: a thread waits in ibv_get_cq_event until a
	 * completion fires the armed CQ. */
	ck_assert(!(fcntl(cc->fd, F_GETFL) & O_NONBLOCK));
	ck_assert_int_eq(ibv_req_notify_cq(p.s.cq, 0), 0);
	struct waiter w = { .cc = cc };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, wait_cq_event, &w), 0);
	usleep(100000);
	ck_assert(!w.done); /* nothing happened yet: still blocked */
	ck_assert_int_eq(post_send(&p.c, p.c.id->qp, 1, IBV_WR_SEND, 0, 10, 0, 0, 0), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_ptr_eq(w.got, p.s.cq);
	poll_n(p.s.cq, 1, wc);
	poll_n(p.c.cq, 1, wc);

	/* epoll on the channel fd; one event per arm; O_NONBLOCK gives
	 * EAGAIN. */
	int ep = epoll_create1(0);
	struct epoll_event ee = { .events = EPOLLIN };
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, cc->fd, &ee), 0);
	ck_assert_int_eq(fcntl(cc->fd, F_SETFL, fcntl(cc->fd, F_GETFL) | O_NONBLOCK), 0);
	struct ibv_cq *got;
	void *cctx;
	ck_assert_int_eq(ibv_get_cq_event(cc, &got, &cctx), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(ibv_req_notify_cq(p.s.cq, 0), 0);
	ck_assert_int_eq(post_send(&p.c, p.c.id->qp, 2, IBV_WR_SEND, 0, 10, 0, 0, 0), 0);
	ck_assert_int_eq(post_send(&p.c, p.c.id->qp, 3, IBV_WR_SEND, 0, 10, 0, 0, 0), 0);
	ck_assert_int_eq(epoll_wait(ep, &ee, 1, WAIT_MS), 1);
	ck_assert_int_eq(ibv_get_cq_event(cc, &got, &cctx), 0);
	ck_assert_ptr_eq(got, p.s.cq);
	ck_assert_ptr_eq(cctx, &p.s);
	poll_n(p.s.cq, 2, wc);
	poll_n(p.c.cq, 2, wc);
	ck_assert_int_eq(ibv_get_cq_event(cc, &got, &cctx), -1); /* one per arm */
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(epoll_wait(ep, &ee, 1, 0), 0);
	close(ep);

	/* Two events delivered, one acked: destroying the CQ waits for the
	 * second ack. */
	ck_assert_int_eq(ibv_req_notify_cq(p.s.cq, 0), 0);
	ck_assert_int_eq(post_send(&p.c, p.c.id->qp, 4, IBV_WR_SEND, 0, 10, 0, 0, 0), 0);
	ck_assert(readable(cc->fd, WAIT_MS));
	ck_assert_int_eq(ibv_get_cq_event(cc, &got, &cctx), 0);
	poll_n(p.s.cq, 1, wc);
	poll_n(p.c.cq, 1, wc);
	ibv_ack_cq_events(p.s.cq, 2); /* the first wait's event and the epoll one */
	/* Take the server's QP down so the CQ can go. */
	ck_assert_int_eq(rdma_disconnect(p.c.id), 0);
	rdma_ack_cm_event(expect_event(p.c.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(p.s.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(p.s.id);
	struct destroyer d = { .cq = p.s.cq };
	ck_assert_int_eq(pthread_create(&t, NULL, destroy_cq_thread, &d), 0);
	usleep(100000);
	ck_assert(!d.done); /* one event still unacked */
	ibv_ack_cq_events(p.s.cq, 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(d.rc, 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(p.s.cc), 0);
	ck_assert_int_eq(ibv_dereg_mr(p.s.mr), 0);
	ck_assert_int_eq(ibv_dealloc_pd(p.s.pd), 0);
	free(p.s.buf);
	rdma_destroy_id(p.s.id);
	side_down(&p.c);
	rdma_destroy_id(p.listen);
	rdma_destroy_event_channel(p.s.ch);
	rdma_destroy_event_channel(p.c.ch);
}
END_TEST

/* A program that spins in ibv_poll_cq progresses the engine itself, and
 * the helper thread stands aside meanwhile (abi/ibverbs/engine.c). When
 * the program then stops calling us, spinning on memory for an RDMA
 * Write as ib_write_lat does, or blocks in ibv_get_cq_event, arrivals
 * must still be placed: the helper comes back. */
static void spin_polling_while_writes_arrive(struct pair *p, int ms)
{
	struct ibv_wc wc[8];
	uint64_t end = now_ms() + (uint64_t)ms;
	uint64_t id = 1000;
	while (now_ms() < end) {
		ck_assert_int_eq(post_send(&p->c, p->c.id->qp, id++, IBV_WR_RDMA_WRITE, 0, 4096, 0,
					   (uintptr_t)p->s.buf + 8192, p->s.mr->rkey),
				 0);
		poll_n(p->c.cq, 1, wc);
		for (int i = 0; i < 200; i++)
			ck_assert_int_eq(ibv_poll_cq(p->s.cq, 8, wc), 0); /* WRITEs complete nothing there */
	}
}

START_TEST(helper_returns_after_polling)
{
	struct pair p;
	struct ibv_wc wc[8];
	pair_up(&p, false);
	volatile uint8_t *mark = p.s.buf + 40000;

	for (uint8_t round = 1; round <= 3; round++) {
		spin_polling_while_writes_arrive(&p, 50);
		/* Nothing of ours runs from here on but the helper. */
		p.c.buf[100] = round;
		ck_assert_int_eq(post_send(&p.c, p.c.id->qp, round, IBV_WR_RDMA_WRITE, 100, 1, IBV_SEND_INLINE,
					   (uintptr_t)mark, p.s.mr->rkey),
				 0);
		uint64_t end = now_ms() + WAIT_MS;
		while (*mark != round)
			ck_assert_msg(now_ms() < end, "round %u: the RDMA Write was never placed", round);
		poll_n(p.c.cq, 1, wc);
	}

	/* Polling, then blocking in ibv_get_cq_event while another thread
	 * sends. */
	spin_polling_while_writes_arrive(&p, 50);
	ck_assert_int_eq(ibv_req_notify_cq(p.s.cq, 0), 0);
	struct waiter w = { .cc = p.s.cc };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, wait_cq_event, &w), 0);
	usleep(20000);
	ck_assert_int_eq(post_send(&p.c, p.c.id->qp, 7, IBV_WR_SEND, 0, 10, 0, 0, 0), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.rc, 0);
	ibv_ack_cq_events(p.s.cq, 1);
	poll_n(p.s.cq, 1, wc);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV);
	poll_n(p.c.cq, 1, wc);
	pair_down(&p);
}
END_TEST

/* rping's order: deregister regions that posted receives still hold,
 * then destroy the QP. */
START_TEST(dereg_before_destroy_qp)
{
	struct pair p;
	pair_up(&p, false);
	ck_assert_int_eq(rdma_disconnect(p.c.id), 0);
	rdma_ack_cm_event(expect_event(p.c.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(p.s.ch, RDMA_CM_EVENT_DISCONNECTED));
	ck_assert_int_eq(ibv_dereg_mr(p.c.mr), 0);
	ck_assert_int_eq(ibv_dereg_mr(p.s.mr), 0);
	rdma_destroy_qp(p.c.id);
	rdma_destroy_qp(p.s.id);
	for (struct side *x = &p.c; x; x = x == &p.c ? &p.s : NULL) {
		ck_assert_int_eq(ibv_destroy_cq(x->cq), 0);
		ck_assert_int_eq(ibv_destroy_comp_channel(x->cc), 0);
		ck_assert_int_eq(ibv_dealloc_pd(x->pd), 0); /* the retired regions went with the QP */
		free(x->buf);
		ck_assert_int_eq(rdma_destroy_id(x->id), 0);
	}
	rdma_destroy_id(p.listen);
	rdma_destroy_event_channel(p.s.ch);
	rdma_destroy_event_channel(p.c.ch);
}
END_TEST

/* ------------------------------------------------------------------ */
/* rdma_cm                                                             */

START_TEST(cm_blocking_and_nonblocking)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	ck_assert(!(fcntl(ch->fd, F_GETFL) & O_NONBLOCK));
	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* Refused: nobody listens on the port. */
	struct rdma_cm_id *id;
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* A port nobody uses: bind one, close it. */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t len = sizeof(a);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
	close(s);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 1000), 0);
	rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(id, 1000), 0);
	rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	struct side x = { 0 };
	side_objects(&x, id->verbs, false);
	side_qp(&x, id, NULL);
	ck_assert_int_eq(rdma_connect(id, NULL), 0);
	ev = expect_event(ch, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(ev->status, -ECONNREFUSED);
	rdma_ack_cm_event(ev);
	x.id = id;
	side_down(&x);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* A listener on sch, a client id on cch (with x's objects and QP) that
 * connects to it; returns the listener's CONNECT_REQUEST, not acked. */
static struct rdma_cm_event *request_to_listener(struct rdma_event_channel *sch, struct rdma_event_channel *cch,
						 struct rdma_cm_id **l, struct rdma_cm_id **c, struct side *x)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(rdma_create_id(sch, l, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(*l, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(rdma_listen(*l, 1), 0);
	a.sin_port = rdma_get_src_port(*l);
	ck_assert_int_eq(rdma_create_id(cch, c, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(*c, NULL, (struct sockaddr *)&a, 1000), 0);
	rdma_ack_cm_event(expect_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(*c, 1000), 0);
	rdma_ack_cm_event(expect_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	side_objects(x, (*c)->verbs, false);
	side_qp(x, *c, NULL);
	ck_assert_int_eq(rdma_connect(*c, NULL), 0);
	return expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
}

START_TEST(cm_reject_with_private_data)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(), *cch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	struct side x = { 0 };
	struct rdma_cm_event *ev = request_to_listener(sch, cch, &l, &c, &x);
	struct rdma_cm_id *child = ev->id;
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_reject(child, "busy", 5), 0);
	ev = expect_event(cch, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(ev->param.conn.private_data_len, 5);
	ck_assert_str_eq(ev->param.conn.private_data, "busy");
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_destroy_id(child), 0);
	x.id = c;
	side_down(&x);
	ck_assert_int_eq(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}
END_TEST

/* An id moved to another channel takes its events along. */
START_TEST(cm_migrate)
{
	struct pair p;
	pair_up(&p, false);
	struct rdma_event_channel *other = rdma_create_event_channel();
	ck_assert_int_eq(rdma_migrate_id(p.s.id, other), 0);
	ck_assert_ptr_eq(p.s.id->channel, other);
	ck_assert_int_eq(rdma_disconnect(p.c.id), 0);
	rdma_ack_cm_event(expect_event(p.c.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(other, RDMA_CM_EVENT_DISCONNECTED));
	ck_assert(!readable(p.s.ch->fd, 50));
	side_down(&p.c);
	side_down(&p.s);
	rdma_destroy_id(p.listen);
	rdma_destroy_event_channel(other);
	rdma_destroy_event_channel(p.s.ch);
	rdma_destroy_event_channel(p.c.ch);
}
END_TEST

/* Synchronous ids, as rdma_server/rdma_client use them. */
struct sync_srv {
	struct rdma_addrinfo *res;
	struct rdma_cm_id *listen;
	char got[64];
	int rc;
};

static void *sync_server(void *arg)
{
	struct sync_srv *s = arg;
	struct rdma_cm_id *id;
	struct ibv_wc wc;
	s->rc = -1;
	if (rdma_get_request(s->listen, &id))
		return NULL;
	struct ibv_mr *mr = rdma_reg_msgs(id, s->got, sizeof(s->got));
	if (!mr || rdma_post_recv(id, NULL, s->got, sizeof(s->got), mr) || rdma_accept(id, NULL))
		return NULL;
	if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return NULL;
	if (rdma_post_send(id, NULL, s->got, wc.byte_len, NULL, IBV_SEND_INLINE) ||
	    rdma_get_send_comp(id, &wc) <= 0)
		return NULL;
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	s->rc = 0;
	return NULL;
}

START_TEST(cm_sync_endpoints)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res;
	struct sync_srv s = { 0 };
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "0", &hints, &s.res), 0);
	ck_assert_int_eq(s.res->ai_qp_type, IBV_QPT_RC);
	struct ibv_qp_init_attr attr = { .cap = { 1, 1, 1, 1, 16 }, .sq_sig_all = 1 };
	ck_assert_int_eq(rdma_create_ep(&s.listen, s.res, NULL, &attr), 0);
	ck_assert_int_eq(rdma_listen(s.listen, 0), 0);
	char port[16];
	snprintf(port, sizeof(port), "%u", ntohs(rdma_get_src_port(s.listen)));
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, sync_server, &s), 0);

	struct rdma_addrinfo ch = { .ai_port_space = RDMA_PS_TCP };
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", port, &ch, &res), 0);
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr ca = { .cap = { 1, 1, 1, 1, 16 }, .sq_sig_all = 1 };
	ck_assert_int_eq(rdma_create_ep(&id, res, NULL, &ca), 0);
	ck_assert_ptr_nonnull(id->qp);
	ck_assert_ptr_nonnull(id->send_cq);
	ck_assert_uint_ge(ca.cap.max_inline_data, 16);
	char msg[16] = "sync hello", back[64] = { 0 }; /* within the 16 inline bytes */
	struct ibv_mr *mr = rdma_reg_msgs(id, back, sizeof(back));
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(rdma_post_recv(id, NULL, back, sizeof(back), mr), 0);
	ck_assert_int_eq(rdma_connect(id, NULL), 0); /* returns once established */
	ck_assert_int_eq(rdma_post_send(id, NULL, msg, strlen(msg) + 1, NULL, IBV_SEND_INLINE), 0);
	struct ibv_wc wc;
	ck_assert_int_eq(rdma_get_send_comp(id, &wc), 1);
	ck_assert_int_eq(rdma_get_recv_comp(id, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_str_eq(back, msg);
	pthread_join(t, NULL);
	ck_assert_int_eq(s.rc, 0);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(s.listen);
	rdma_freeaddrinfo(res);
	rdma_freeaddrinfo(s.res);
	/* Names that do not resolve fail cleanly. */
	ck_assert_int_ne(rdma_getaddrinfo("no-such-host.invalid", "1", &ch, &res), 0);
}
END_TEST

/* rdma_get_cm_event blocks (no O_NONBLOCK) until an event comes; the
 * fd works in epoll; rdma_destroy_id waits for the ack of an event the
 * program holds for the id (librdmacm's rule: the event points at it). */
struct cm_waiter {
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	int rc;
	volatile bool done;
};

static void *wait_cm_event(void *arg)
{
	struct cm_waiter *w = arg;
	w->rc = rdma_get_cm_event(w->ch, &w->ev);
	w->done = true;
	return NULL;
}

struct id_destroyer {
	struct rdma_cm_id *id;
	int rc;
	volatile bool done;
};

static void *destroy_id_thread(void *arg)
{
	struct id_destroyer *d = arg;
	d->rc = rdma_destroy_id(d->id);
	d->done = true;
	return NULL;
}

START_TEST(cm_blocking_epoll_and_destroy_waits_for_ack)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	int ep = epoll_create1(0);
	struct epoll_event ee = { .events = EPOLLIN };
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ee), 0);
	ck_assert_int_eq(epoll_wait(ep, &ee, 1, 0), 0);

	struct cm_waiter w = { .ch = ch };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, wait_cm_event, &w), 0);
	usleep(100000);
	ck_assert(!w.done); /* nothing queued: blocked */
	struct rdma_cm_id *id;
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(9) };
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 1000), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_int_eq(w.ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	ck_assert_ptr_eq(w.ev->id, id);

	struct id_destroyer d = { .id = id };
	ck_assert_int_eq(pthread_create(&t, NULL, destroy_id_thread, &d), 0);
	usleep(100000);
	ck_assert(!d.done); /* the event is not acked yet */
	ck_assert_int_eq(rdma_ack_cm_event(w.ev), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(d.rc, 0);

	/* epoll sees the next event; an acked one does not hold destroy. */
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 1000), 0);
	ck_assert_int_eq(epoll_wait(ep, &ee, 1, WAIT_MS), 1);
	struct rdma_cm_event *ev;
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);
	ck_assert_int_eq(epoll_wait(ep, &ee, 1, 0), 0);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	close(ep);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* A listener's CONNECT_REQUEST counts for the listener: destroying it
 * waits for that ack (the new id does not). */
START_TEST(cm_listener_destroy_waits_for_request_ack)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(), *cch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	struct side x = { 0 };
	struct rdma_cm_event *ev = request_to_listener(sch, cch, &l, &c, &x);
	struct rdma_cm_id *child = ev->id;
	ck_assert_int_eq(rdma_reject(child, NULL, 0), 0);
	ck_assert_int_eq(rdma_destroy_id(child), 0); /* not held by the request */
	struct id_destroyer d = { .id = l };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, destroy_id_thread, &d), 0);
	usleep(100000);
	ck_assert(!d.done);
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(d.rc, 0);
	rdma_ack_cm_event(expect_event(cch, RDMA_CM_EVENT_REJECTED));
	x.id = c;
	side_down(&x);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}
END_TEST

/* rdma_bind_addr with a specific source address before resolving and
 * connecting: the connection comes from it, and both ends agree on the
 * client's address and port, also for an address or port the route
 * would not have picked. */
START_TEST(cm_bind_source_then_connect)
{
	struct pair p;
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	pair_up_from(&p, false, &src);
	struct sockaddr_in *cl = (struct sockaddr_in *)rdma_get_local_addr(p.c.id);
	struct sockaddr_in *sp = (struct sockaddr_in *)rdma_get_peer_addr(p.s.id);
	ck_assert_int_eq(cl->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(cl->sin_addr.s_addr), INADDR_LOOPBACK);
	ck_assert_uint_eq(cl->sin_addr.s_addr, sp->sin_addr.s_addr);
	ck_assert_uint_ne(cl->sin_port, 0);
	ck_assert_uint_eq(cl->sin_port, sp->sin_port);
	ck_assert_uint_eq(rdma_get_src_port(p.c.id), sp->sin_port);
	pair_down(&p);

	/* A source the route would not take (another loopback address) and
	 * a fixed port: the connection comes from exactly there (libiwarp
	 * binds before connecting, iw_conn_param.src_addr). */
	struct sockaddr_in other = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1) };
	int probe = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t sl = sizeof(other);
	ck_assert_int_eq(bind(probe, (struct sockaddr *)&other, sizeof(other)), 0);
	ck_assert_int_eq(getsockname(probe, (struct sockaddr *)&other, &sl), 0);
	close(probe); /* a port that was free just now */
	pair_up_from(&p, false, &other);
	sp = (struct sockaddr_in *)rdma_get_peer_addr(p.s.id);
	cl = (struct sockaddr_in *)rdma_get_local_addr(p.c.id);
	ck_assert_uint_eq(ntohl(sp->sin_addr.s_addr), INADDR_LOOPBACK + 1);
	ck_assert_uint_eq(sp->sin_port, other.sin_port);
	ck_assert_uint_eq(cl->sin_addr.s_addr, sp->sin_addr.s_addr);
	ck_assert_uint_eq(cl->sin_port, other.sin_port);
	pair_down(&p);

	/* An address of another family than the destination's: refused. */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(9) };
	struct sockaddr_in6 six = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, (struct sockaddr *)&six, (struct sockaddr *)&dst, 1000), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert(!readable(ch->fd, 0));
	rdma_destroy_event_channel(ch);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verbs_abi");
	TCase *t = tcase_create("abi");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, device);
	tcase_add_test(t, unsupported);
	tcase_add_test(t, send_recv_write_read);
	tcase_add_loop_test(t, rfc7306_atomics_and_imm, 0, 2);
	tcase_add_test(t, remote_access_error_and_flush);
	tcase_add_test(t, srq);
	tcase_add_test(t, modify_qp);
	tcase_add_test(t, cq_events);
	tcase_add_test(t, helper_returns_after_polling);
	tcase_add_test(t, dereg_before_destroy_qp);
	tcase_add_test(t, cm_blocking_and_nonblocking);
	tcase_add_test(t, cm_reject_with_private_data);
	tcase_add_test(t, cm_migrate);
	tcase_add_test(t, cm_sync_endpoints);
	tcase_add_test(t, cm_blocking_epoll_and_destroy_waits_for_ack);
	tcase_add_test(t, cm_listener_destroy_waits_for_request_ack);
	tcase_add_test(t, cm_bind_source_then_connect);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
