/* What libfabric's verbs provider and Open MPI over it needed from our
 * libibverbs.so.1/librdmacm.so.1 (issue 15), each piece on its own:
 * rdma_getaddrinfo answering from the hints' addresses, the 0xFF
 * "device maximum" depths, regions with remote atomic access, a
 * deregistration that leaves the other regions' STags alone,
 * rdma_migrate_id waiting for the id's events to be acked, and
 * IWARP_STATS. Linked like verbs_abi_test, against Debian's headers;
 * connections over kernel TCP on loopback inside the process. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "iwt_check.h"

#define WAIT_MS 20000
#define BUF 8192

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;
	ck_assert_msg(poll(&p, 1, WAIT_MS) == 1, "no CM event (wanted %s)", rdma_event_str(want));
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_msg(ev->event == want, "got %s (status %d), wanted %s", rdma_event_str(ev->event), ev->status,
		      rdma_event_str(want));
	return ev;
}

static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;
	int r;
	while ((r = ibv_poll_cq(cq, 1, wc)) == 0)
		ck_assert_msg(now_ms() < end, "no completion");
	ck_assert_int_eq(r, 1);
}

/* ------------------------------------------------------------------ */
/* A pair with rdma_cm's own CQs (rdma_create_qp without CQs)          */

struct pair {
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *listen, *s, *c;
	struct ibv_pd *pd;
	uint8_t *sbuf, *cbuf;
	struct ibv_mr *smr, *smr2, *cmr;
};

static void make_qp(struct rdma_cm_id *id, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	ck_assert_int_eq(rdma_create_qp(id, pd, &a), 0);
}

/* depth: responder_resources and initiator_depth of both sides. */
static void pair_up(struct pair *p, uint8_t depth)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	memset(p, 0, sizeof(*p));
	p->sch = rdma_create_event_channel();
	p->cch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(p->sch, &p->listen, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(p->listen, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(rdma_listen(p->listen, 4), 0);
	a.sin_port = rdma_get_src_port(p->listen);
	ck_assert_int_eq(rdma_create_id(p->cch, &p->c, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(p->c, NULL, (struct sockaddr *)&a, 2000), 0);
	rdma_ack_cm_event(expect_event(p->cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(p->c, 2000), 0);
	rdma_ack_cm_event(expect_event(p->cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	p->pd = ibv_alloc_pd(p->c->verbs);
	ck_assert_ptr_nonnull(p->pd);
	p->sbuf = calloc(1, BUF);
	p->cbuf = calloc(1, BUF);
	unsigned acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	p->cmr = ibv_reg_mr(p->pd, p->cbuf, BUF, (int)acc);
	/* As libfabric registers: remote atomic access included. */
	p->smr = ibv_reg_mr(p->pd, p->sbuf, BUF / 2, (int)(acc | IBV_ACCESS_REMOTE_ATOMIC));
	p->smr2 = ibv_reg_mr(p->pd, p->sbuf + BUF / 2, BUF / 2, (int)(acc | IBV_ACCESS_REMOTE_ATOMIC));
	ck_assert_ptr_nonnull(p->cmr);
	ck_assert_ptr_nonnull(p->smr);
	ck_assert_ptr_nonnull(p->smr2);
	ck_assert_uint_ne(p->smr->rkey, p->smr2->rkey);
	make_qp(p->c, p->pd);
	struct rdma_conn_param cp = { .responder_resources = depth, .initiator_depth = depth };
	ck_assert_int_eq(rdma_connect(p->c, &cp), 0);
	struct rdma_cm_event *ev = expect_event(p->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	p->s = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(p->s, p->pd);
	struct ibv_sge sg = { .addr = (uintptr_t)p->sbuf, .length = 64, .lkey = p->smr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 }, *bad;
	ck_assert_int_eq(ibv_post_recv(p->s->qp, &rw, &bad), 0);
	ck_assert_int_eq(rdma_accept(p->s, &cp), 0);
	rdma_ack_cm_event(expect_event(p->sch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(expect_event(p->cch, RDMA_CM_EVENT_ESTABLISHED));
}

static void pair_down(struct pair *p)
{
	ck_assert_int_eq(rdma_disconnect(p->c), 0);
	rdma_ack_cm_event(expect_event(p->cch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(expect_event(p->sch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(p->c);
	rdma_destroy_qp(p->s);
	ck_assert_int_eq(ibv_dereg_mr(p->cmr), 0);
	if (p->smr)
		ck_assert_int_eq(ibv_dereg_mr(p->smr), 0);
	ck_assert_int_eq(ibv_dereg_mr(p->smr2), 0);
	ck_assert_int_eq(ibv_dealloc_pd(p->pd), 0);
	ck_assert_int_eq(rdma_destroy_id(p->c), 0);
	ck_assert_int_eq(rdma_destroy_id(p->s), 0);
	ck_assert_int_eq(rdma_destroy_id(p->listen), 0);
	rdma_destroy_event_channel(p->sch);
	rdma_destroy_event_channel(p->cch);
	free(p->sbuf);
	free(p->cbuf);
}

/* The initiator's completion says sent, not placed: wait (bounded) for
 * the byte at *b to become v. */
static bool placed(const volatile uint8_t *b, uint8_t v)
{
	uint64_t end = now_ms() + WAIT_MS;
	while (*b != v && now_ms() < end)
		usleep(100);
	return *b == v;
}

/* RDMA WRITE of len bytes from the client's buffer to (addr, rkey). */
static enum ibv_wc_status write_to(struct pair *p, uint64_t addr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)p->cbuf, .length = len, .lkey = p->cmr->lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE }, *bad;
	w.wr.rdma.remote_addr = addr;
	w.wr.rdma.rkey = rkey;
	ck_assert_int_eq(ibv_post_send(p->c->qp, &w, &bad), 0);
	struct ibv_wc wc;
	poll_one(p->c->send_cq, &wc);
	return wc.status;
}

/* ------------------------------------------------------------------ */

/* libfabric's verbs provider asks with node and service NULL and the
 * addresses in the hints (vrb_get_rai_id); rdma-core answers with them. */
START_TEST(getaddrinfo_from_hints)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(4791) };
	struct rdma_addrinfo h = { .ai_port_space = RDMA_PS_TCP, .ai_qp_type = IBV_QPT_RC }, *r = NULL;

	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	h.ai_dst_addr = (struct sockaddr *)&dst;
	h.ai_dst_len = sizeof(dst);
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &h, &r), 0);
	ck_assert_int_eq(r->ai_family, AF_INET);
	ck_assert_int_eq(r->ai_qp_type, IBV_QPT_RC);
	ck_assert_int_eq(r->ai_port_space, RDMA_PS_TCP);
	ck_assert_uint_eq(r->ai_src_len, sizeof(src));
	ck_assert_uint_eq(r->ai_dst_len, sizeof(dst));
	ck_assert_mem_eq(r->ai_src_addr, &src, sizeof(src));
	ck_assert_mem_eq(r->ai_dst_addr, &dst, sizeof(dst));
	ck_assert_ptr_ne(r->ai_dst_addr, &dst); /* copies, freed with it */
	rdma_freeaddrinfo(r);

	/* Passive, a source only (a listener's address). */
	struct rdma_addrinfo hp = { .ai_flags = RAI_PASSIVE, .ai_src_addr = (struct sockaddr *)&src,
				    .ai_src_len = sizeof(src) };
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hp, &r), 0);
	ck_assert(r->ai_flags & RAI_PASSIVE);
	ck_assert_ptr_null(r->ai_dst_addr);
	ck_assert_mem_eq(r->ai_src_addr, &src, sizeof(src));
	rdma_freeaddrinfo(r);

	/* A name for the destination and the hints' source. */
	h.ai_dst_addr = NULL;
	h.ai_dst_len = 0;
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "7471", &h, &r), 0);
	ck_assert_uint_eq(ntohs(((struct sockaddr_in *)r->ai_dst_addr)->sin_port), 7471);
	ck_assert_mem_eq(r->ai_src_addr, &src, sizeof(src));
	rdma_freeaddrinfo(r);

	/* Nothing to answer with: EINVAL; a family we cannot route:
	 * EAFNOSUPPORT; no leak either way (ASan). */
	struct rdma_addrinfo none = { 0 };
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &none, &r), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, NULL, &r), -1);
	ck_assert_int_eq(errno, EINVAL);
	struct sockaddr unix_sa = { .sa_family = AF_UNIX };
	struct rdma_addrinfo hu = { .ai_dst_addr = &unix_sa, .ai_dst_len = sizeof(unix_sa) };
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hu, &r), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
}
END_TEST

/* RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (0xFF): the device's maximum
 * (libfabric sends them); an explicit depth above it is EINVAL. */
START_TEST(depth_max_marker)
{
	struct pair p;
	pair_up(&p, 0xFF);
	struct ibv_device_attr da;
	ck_assert_int_eq(ibv_query_device(p.c->verbs, &da), 0);
	ck_assert_int_eq(da.max_qp_rd_atom, 128);
	/* A READ needs the negotiated depth. */
	memset(p.sbuf + 100, 0x3c, 200);
	struct ibv_sge sg = { .addr = (uintptr_t)p.cbuf, .length = 200, .lkey = p.cmr->lkey };
	struct ibv_send_wr w = { .wr_id = 9, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_READ }, *bad;
	w.wr.rdma.remote_addr = (uintptr_t)p.sbuf + 100;
	w.wr.rdma.rkey = p.smr->rkey;
	ck_assert_int_eq(ibv_post_send(p.c->qp, &w, &bad), 0);
	struct ibv_wc wc;
	poll_one(p.c->send_cq, &wc);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(p.cbuf[0], 0x3c);
	ck_assert_int_eq(p.cbuf[199], 0x3c);
	pair_down(&p);

	/* 129..254: more than the device has. */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(9) };
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	make_qp(id, NULL);
	struct rdma_conn_param cp = { .responder_resources = 129, .initiator_depth = 4 };
	errno = 0;
	ck_assert_int_eq(rdma_connect(id, &cp), -1);
	ck_assert_int_eq(errno, EINVAL);
	cp.responder_resources = 4;
	cp.initiator_depth = 254;
	ck_assert_int_eq(rdma_connect(id, &cp), -1);
	ck_assert_int_eq(errno, EINVAL);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* Deregistering one region leaves every other region's STag working
 * (libfabric's MR cache deregisters while others are in use); the gone
 * one is refused with a protection error. */
START_TEST(dereg_leaves_other_stags)
{
	struct pair p;
	pair_up(&p, 4);
	uint32_t gone_rkey = p.smr->rkey;
	memset(p.cbuf, 0xa5, 256);
	ck_assert_int_eq(write_to(&p, (uintptr_t)p.sbuf, p.smr->rkey, 256), IBV_WC_SUCCESS);
	/* p.smr has a receive posted on it (pair_up): its STag must still
	 * stop answering at once; p.smr2's must not. */
	ck_assert_int_eq(ibv_dereg_mr(p.smr), 0);
	p.smr = NULL;
	memset(p.cbuf, 0x5a, 256);
	ck_assert_int_eq(write_to(&p, (uintptr_t)p.sbuf + BUF / 2, p.smr2->rkey, 256), IBV_WC_SUCCESS);
	ck_assert(placed(&p.sbuf[BUF / 2 + 255], 0x5a));
	ck_assert_int_eq(p.sbuf[BUF / 2], 0x5a);
	/* A fresh region after the dereg: a new STag, and it works. */
	uint8_t *extra = calloc(1, 512);
	struct ibv_mr *m3 = ibv_reg_mr(p.pd, extra, 512, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(m3);
	ck_assert_int_eq(write_to(&p, (uintptr_t)extra, m3->rkey, 64), IBV_WC_SUCCESS);
	ck_assert(placed(&extra[63], 0x5a));
	ck_assert_int_eq(write_to(&p, (uintptr_t)p.sbuf + BUF / 2, p.smr2->rkey, 8), IBV_WC_SUCCESS);
	ck_assert_int_eq(ibv_dereg_mr(m3), 0);
	free(extra);
	(void)gone_rkey;
	pair_down(&p);
}
END_TEST

/* rdma_migrate_id waits until the program acked the events it got for
 * the id (they point at its old channel), as librdmacm does. */
struct mig {
	struct rdma_cm_id *id;
	struct rdma_event_channel *to;
	int rc;
	volatile bool done;
};

static void *migrate_thread(void *arg)
{
	struct mig *m = arg;
	m->rc = rdma_migrate_id(m->id, m->to);
	m->done = true;
	return NULL;
}

START_TEST(migrate_waits_for_ack)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *to = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(9) };
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	struct rdma_cm_event *ev = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	struct mig m = { .id = id, .to = to, .rc = -2 };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, migrate_thread, &m), 0);
	usleep(100000);
	ck_assert(!m.done); /* still waiting for the ack */
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(m.rc, 0);
	ck_assert_ptr_eq(id->channel, to);
	/* Later events come on the new channel. */
	ck_assert_int_eq(rdma_resolve_route(id, 1000), 0);
	rdma_ack_cm_event(expect_event(to, RDMA_CM_EVENT_ROUTE_RESOLVED));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(to);
}
END_TEST

/* IWARP_STATS=FILE: a process that moved data appends one line of its
 * counters at exit; one without QPs writes qps=0. */
static void stats_child(const char *path, bool traffic)
{
	setenv("IWARP_STATS", path, 1);
	if (traffic) {
		struct pair p;
		pair_up(&p, 4);
		memset(p.cbuf, 1, 1000);
		if (write_to(&p, (uintptr_t)p.sbuf, p.smr->rkey, 1000) != IBV_WC_SUCCESS)
			exit(3);
		pair_down(&p);
	} else {
		int n;
		struct ibv_device **l = ibv_get_device_list(&n);
		ibv_free_device_list(l);
	}
	exit(0); /* the destructor writes the line */
}

START_TEST(stats_at_exit)
{
	char path[] = "/tmp/iwarp-stats-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (int k = 0; k < 2; k++) {
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			stats_child(path, k == 0);
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char line[512], tp[16];
	long pid;
	uint64_t qps, active, ftx, frx, btx, brx, placed;
	for (int k = 0; k < 2; k++) {
		ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
		ck_assert_int_eq(sscanf(line,
					"iwarp-stats pid=%ld transport=%15s qps=%" SCNu64 " qps_with_traffic=%" SCNu64
					" fpdus_tx=%" SCNu64 " fpdus_rx=%" SCNu64 " bytes_tx=%" SCNu64
					" bytes_rx=%" SCNu64 " bytes_placed=%" SCNu64,
					&pid, tp, &qps, &active, &ftx, &frx, &btx, &brx, &placed),
				 9);
		ck_assert_str_eq(tp, "kernel");
		if (k == 0) {
			/* Both ends lived in this process: two QPs, one WRITE
			 * of 1000 bytes placed (and the disconnect's own). */
			ck_assert_uint_eq(qps, 2);
			ck_assert_uint_eq(active, 2);
			ck_assert_uint_ge(ftx, 1);
			ck_assert_uint_ge(frx, 1);
			ck_assert_uint_ge(placed, 1000);
			ck_assert_uint_gt(btx, placed);
		} else {
			ck_assert_uint_eq(qps, 0);
			ck_assert_uint_eq(ftx + frx + btx + brx + placed, 0);
		}
	}
	ck_assert_ptr_null(fgets(line, sizeof(line), f));
	fclose(f);
	unlink(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fabric_abi");
	TCase *t = tcase_create("fabric_abi");
	tcase_add_test(t, getaddrinfo_from_hints);
	tcase_add_test(t, depth_max_marker);
	tcase_add_test(t, dereg_leaves_other_stags);
	tcase_add_test(t, migrate_waits_for_ack);
	tcase_add_test(t, stats_at_exit);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
