/* siwrw: the guest side of the interop READ/WRITE, private data, error and
 * disconnect tests, on libibverbs + librdmacm (the Linux siw device). The
 * protocol engine is rw_proto.c, shared with iwrw (libiwarp) on the host.
 *
 *   siwrw -s [-p PORT] [OPTIONS]            server (all addresses)
 *   siwrw -c ADDR [-p PORT] [OPTIONS]       client
 *
 * Built on the host against Debian's rdma-core headers and handed to the
 * guest (which carries the same libibverbs/librdmacm) by the interop
 * scripts. Everything is bounded by --timeout. If work requests are still
 * outstanding 1 s after the connection ended, the QP is moved to ERROR so
 * siw flushes them (reported). Some are never completed by siw at all
 * (posted after its flush; or queued behind the request in progress when
 * siw itself disconnected): the engine reports them (tolerate_lost_wrs).
 * Exit: 0 pass, 1 fail, 2 usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rw_proto.h"

struct be {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr_exp, *mr_loc, *mr_ctl;
	uint8_t *exp, *loc, *ctl;
	size_t exp_len, loc_len;
	bool qp_made, forced_flush;
};

struct opts {
	bool server;
	const char *addr, *port;
	double timeout_s;
	unsigned ird, ord;
};

static struct rw eng;
static struct be B;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t lkey_of(struct be *b, const void *p)
{
	const uint8_t *a = p;

	if (a >= b->exp && a < b->exp + b->exp_len)
		return b->mr_exp->lkey;
	if (a >= b->loc && a < b->loc + b->loc_len)
		return b->mr_loc->lkey;
	return b->mr_ctl->lkey;
}

static int be_post_send(void *v, uint64_t wr_id, enum rw_wr_op op, void *laddr, uint32_t len, uint64_t raddr,
			uint32_t rkey)
{
	struct be *b = v;
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey_of(b, laddr) };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.opcode = op == RW_OP_SEND ? IBV_WR_SEND : op == RW_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return -ibv_post_send(b->id->qp, &wr, &bad);
}

static int be_post_recv(void *v, uint64_t wr_id, void *laddr, uint32_t len)
{
	struct be *b = v;
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey_of(b, laddr) };
	struct ibv_recv_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return -ibv_post_recv(b->id->qp, &wr, &bad);
}

static int be_disconnect(void *v)
{
	struct be *b = v;

	return rdma_disconnect(b->id) ? -errno : 0;
}

static const struct rw_ops ops = { be_post_send, be_post_recv, be_disconnect };

static void *alloc_buf(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* PD, CQ, QP and the three regions, on the device the id is bound to. */
static int setup_qp(struct be *b, struct rdma_cm_id *id, const struct rw_cfg *cfg)
{
	struct ibv_qp_init_attr qa;
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	b->pd = ibv_alloc_pd(id->verbs);
	if (!b->pd)
		return -ENOMEM;
	b->cc = ibv_create_comp_channel(id->verbs);
	if (!b->cc || set_nonblock(b->cc->fd))
		return -ENOMEM;
	b->cq = ibv_create_cq(id->verbs, 256, NULL, b->cc, 0);
	if (!b->cq || ibv_req_notify_cq(b->cq, 0))
		return -ENOMEM;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = b->cq;
	qa.recv_cq = b->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = RW_RECV_SLOTS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	if (rdma_create_qp(id, b->pd, &qa))
		return -errno;
	b->qp_made = true;
	b->exp_len = rw_exposed_len(cfg);
	b->loc_len = rw_local_len(cfg);
	b->exp = alloc_buf(b->exp_len);
	b->loc = alloc_buf(b->loc_len);
	b->ctl = alloc_buf(RW_CTL_LEN);
	if (!b->exp || !b->loc || !b->ctl)
		return -ENOMEM;
	b->mr_exp = ibv_reg_mr(b->pd, b->exp, b->exp_len, acc);
	b->mr_loc = ibv_reg_mr(b->pd, b->loc, b->loc_len, IBV_ACCESS_LOCAL_WRITE);
	b->mr_ctl = ibv_reg_mr(b->pd, b->ctl, RW_CTL_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!b->mr_exp || !b->mr_loc || !b->mr_ctl)
		return -errno;
	rw_set_buffers(&eng, b->exp, b->loc, b->ctl, b->mr_exp->rkey);
	return rw_start(&eng, now_ms());
}

static void conn_param(const struct opts *o, const struct rw_cfg *cfg, struct rdma_conn_param *p, uint8_t *pd,
		       uint32_t tag)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = (uint8_t)o->ird;
	p->initiator_depth = (uint8_t)o->ord;
	if (cfg->pdata_len) {
		rw_pattern(pd, cfg->pdata_len, tag, 0, cfg->pdata_len);
		p->private_data = pd;
		p->private_data_len = (uint8_t)cfg->pdata_len;
	}
}

static void on_connect_request(struct be *b, const struct opts *o, const struct rw_cfg *cfg,
			       struct rdma_cm_event *ev)
{
	static uint8_t pd[RW_MAX_PDATA];
	const struct rdma_conn_param *cp = &ev->param.conn;
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param p;
	int rc;

	if (b->id) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	b->id = id;
	printf("siwrw: connect request: %u bytes of private data, peer responder resources %u initiator depth %u\n",
	       cp->private_data_len, cp->responder_resources, cp->initiator_depth);
	if (!rw_pdata_ok(cp->private_data, cp->private_data_len, cfg->pdata_len, RW_PD_C)) {
		rw_fail(&eng, "connect private data: got %u bytes, expected %u bytes of the client's pattern",
			cp->private_data_len, cfg->pdata_len);
		rdma_reject(id, NULL, 0);
		return;
	}
	if (cfg->pdata_len)
		printf("siwrw: connect private data verified (%u bytes)\n", cfg->pdata_len);
	if (cfg->reject_len >= 0) {
		rw_pattern(pd, (size_t)cfg->reject_len, RW_PD_R, 0, (uint32_t)cfg->reject_len);
		if (rdma_reject(id, pd, (uint8_t)cfg->reject_len))
			rw_fail(&eng, "rdma_reject: %s", strerror(errno));
		else
			rw_reject_sent(&eng);
		return;
	}
	rc = setup_qp(b, id, cfg);
	if (rc) {
		rw_fail(&eng, "QP setup: %s", strerror(-rc));
		rdma_reject(id, NULL, 0);
		return;
	}
	conn_param(o, cfg, &p, pd, RW_PD_S);
	if (rdma_accept(id, &p))
		rw_fail(&eng, "rdma_accept: %s", strerror(errno));
}

static void on_cm_event(struct be *b, const struct opts *o, const struct rw_cfg *cfg, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *cp = &ev->param.conn;
	int rc;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(b->id, 5000))
			rw_fail(&eng, "rdma_resolve_route: %s", strerror(errno));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		static uint8_t pd[RW_MAX_PDATA];
		struct rdma_conn_param p;

		rc = setup_qp(b, b->id, cfg);
		if (rc) {
			rw_fail(&eng, "QP setup: %s", strerror(-rc));
			break;
		}
		conn_param(o, cfg, &p, pd, RW_PD_C);
		if (rdma_connect(b->id, &p))
			rw_fail(&eng, "rdma_connect: %s", strerror(errno));
		break;
	}
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		on_connect_request(b, o, cfg, ev);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		printf("siwrw: established: responder resources %u initiator depth %u, %u bytes of private data\n",
		       cp->responder_resources, cp->initiator_depth, cp->private_data_len);
		rw_established(&eng, cp->private_data, cp->private_data_len);
		break;
	case RDMA_CM_EVENT_REJECTED:
		printf("siwrw: rejected (status %d, %u bytes of private data)\n", ev->status, cp->private_data_len);
		rw_rejected(&eng, cp->private_data, cp->private_data_len);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rw_disconnected(&eng);
		if (!eng.disc_requested)
			rdma_disconnect(b->id);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default: {
		char why[96];

		snprintf(why, sizeof(why), "%s (status %d)", rdma_event_str(ev->event), ev->status);
		rw_conn_error(&eng, why);
		break;
	}
	}
	rdma_ack_cm_event(ev);
}

static void poll_cq(struct be *b)
{
	struct ibv_wc wc[16];
	int n;

	if (!b->cq)
		return;
	if (b->cc) {
		struct ibv_cq *cq;
		void *ctx;

		while (ibv_get_cq_event(b->cc, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(cq, 0);
		}
	}
	while ((n = ibv_poll_cq(b->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			const char *st = wc[i].status == IBV_WC_SUCCESS ? "OK" : ibv_wc_status_str(wc[i].status);

			rw_completion(&eng, wc[i].wr_id, wc[i].status == IBV_WC_SUCCESS, st, wc[i].byte_len);
		}
	}
}

/* siw leaves work requests outstanding after the connection ended: move
 * the QP to ERROR, which flushes them. */
static void force_flush(struct be *b)
{
	struct ibv_qp_attr a;

	if (b->forced_flush || !b->qp_made || !b->id || !b->id->qp)
		return;
	b->forced_flush = true;
	printf("siwrw: %llu work requests still outstanding 1 s after the end: moving the QP to ERROR\n",
	       (unsigned long long)rw_outstanding(&eng));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(b->id->qp, &a, IBV_QP_STATE))
		printf("siwrw: ibv_modify_qp(ERR): %s\n", strerror(errno));
}

static int run(struct be *b, const struct opts *o, const struct rw_cfg *cfg)
{
	uint64_t deadline = now_ms() + (uint64_t)(o->timeout_s * 1000);

	while (!rw_done(&eng)) {
		struct pollfd pf[2] = { { b->ch->fd, POLLIN, 0 }, { b->cc ? b->cc->fd : -1, POLLIN, 0 } };
		struct rdma_cm_event *ev;

		if (now_ms() > deadline) {
			rw_fail(&eng, "timeout after %.0f s (established %d, %llu of %llu work requests completed)",
				o->timeout_s, eng.established, (unsigned long long)eng.completed,
				(unsigned long long)eng.posted);
			break;
		}
		poll(pf, 2, 20);
		poll_cq(b); /* before CM events, see iwrw.c */
		while (rdma_get_cm_event(b->ch, &ev) == 0)
			on_cm_event(b, o, cfg, ev);
		rw_tick(&eng, now_ms());
		if (eng.finished && eng.established && rw_outstanding(&eng) && now_ms() > eng.end_ms + 1000)
			force_flush(b);
	}
	return rw_verdict(&eng);
}

static int start(struct be *b, const struct opts *o)
{
	struct addrinfo hints, *res;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = o->server ? AI_PASSIVE : 0;
	rc = getaddrinfo(o->server ? NULL : o->addr, o->port, &hints, &res);
	if (rc) {
		fprintf(stderr, "siwrw: %s: %s\n", o->addr ? o->addr : "*", gai_strerror(rc));
		return -EINVAL;
	}
	if (o->server) {
		rc = rdma_create_id(b->ch, &b->listen_id, NULL, RDMA_PS_TCP);
		if (!rc)
			rc = rdma_bind_addr(b->listen_id, res->ai_addr);
		if (!rc)
			rc = rdma_listen(b->listen_id, 4);
		if (!rc)
			printf("siwrw: listening on port %s (test %s)\n", o->port, rw_test_name(eng.cfg.test));
	} else {
		rc = rdma_create_id(b->ch, &b->id, NULL, RDMA_PS_TCP);
		if (!rc)
			rc = rdma_resolve_addr(b->id, NULL, res->ai_addr, 5000);
	}
	freeaddrinfo(res);
	return rc ? -errno : 0;
}

static int parse_u(const char *s, unsigned long min, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || *end || *v < min || *v > max ? -1 : 0;
}

static int parse(int argc, char **argv, struct opts *o, struct rw_cfg *cfg)
{
	enum { O_SIZES = 256, O_ROUNDS, O_PDATA, O_REJECT, O_XREJECT, O_FSIZE, O_FDEPTH, O_FMS, O_DISC,
	       O_TIMEOUT, O_IRD, O_ORD };
	static const struct option lo[] = {
		{ "sizes", 1, NULL, O_SIZES }, { "rounds", 1, NULL, O_ROUNDS }, { "pdata", 1, NULL, O_PDATA },
		{ "reject", 1, NULL, O_REJECT }, { "expect-reject", 1, NULL, O_XREJECT },
		{ "flood-size", 1, NULL, O_FSIZE }, { "flood-depth", 1, NULL, O_FDEPTH },
		{ "flood-ms", 1, NULL, O_FMS }, { "disconnect", 1, NULL, O_DISC },
		{ "timeout", 1, NULL, O_TIMEOUT }, { "ird", 1, NULL, O_IRD }, { "ord", 1, NULL, O_ORD },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->port = "7500";
	o->timeout_s = 30;
	o->ird = o->ord = 16;
	rw_cfg_defaults(cfg);
	cfg->role = RW_CLIENT;
	/* siw leaves some work requests outstanding for good (see
	 * rw_cfg.tolerate_lost_wrs); the guest side must only not hang. */
	cfg->tolerate_lost_wrs = true;
	cfg->drain_ms = 2000; /* the forced flush (at 1 s) is the last chance */
	while ((ch = getopt_long(argc, argv, "sc:p:t:v", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->server = true; cfg->role = RW_SERVER; break;
		case 'c': o->addr = optarg; break;
		case 'p': o->port = optarg; break;
		case 't': if (rw_parse_test(optarg, &cfg->test)) return -1; break;
		case 'v': cfg->verbose = true; break;
		case O_SIZES: if (rw_parse_sizes(optarg, cfg)) return -1; break;
		case O_ROUNDS: if (parse_u(optarg, 1, 1000, &v)) return -1; cfg->rounds = (unsigned)v; break;
		/* librdmacm carries at most 255 bytes; siw takes 251 of them. */
		case O_PDATA: if (parse_u(optarg, 0, 255, &v)) return -1; cfg->pdata_len = (uint16_t)v; break;
		case O_REJECT: if (parse_u(optarg, 0, 255, &v)) return -1; cfg->reject_len = (int)v; break;
		case O_XREJECT: if (parse_u(optarg, 0, 508, &v)) return -1; cfg->expect_reject = (int)v; break;
		case O_FSIZE: if (parse_u(optarg, 1, 16ul << 20, &v)) return -1; cfg->flood_size = (uint32_t)v; break;
		case O_FDEPTH: if (parse_u(optarg, 1, 48, &v)) return -1; cfg->flood_depth = (unsigned)v; break;
		case O_FMS: if (parse_u(optarg, 0, 60000, &v)) return -1; cfg->flood_ms = (unsigned)v; break;
		case O_DISC:
			if (strcmp(optarg, "client") == 0)
				cfg->disconnector = RW_CLIENT;
			else if (strcmp(optarg, "server") == 0)
				cfg->disconnector = RW_SERVER;
			else
				return -1;
			break;
		case O_TIMEOUT: if (parse_u(optarg, 1, 3600, &v)) return -1; o->timeout_s = (double)v; break;
		case O_IRD: if (parse_u(optarg, 1, 128, &v)) return -1; o->ird = (unsigned)v; break;
		case O_ORD: if (parse_u(optarg, 1, 128, &v)) return -1; o->ord = (unsigned)v; break;
		default: return -1;
		}
	}
	if (optind != argc || (!o->server && !o->addr))
		return -1;
	if (o->server && cfg->test != RW_T_RW && cfg->test != RW_T_VICTIM && cfg->test != RW_T_FLOOD)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct rw_cfg cfg;
	struct opts o;
	struct be *b = &B;
	int rc, status;

	if (parse(argc, argv, &o, &cfg)) {
		fputs("usage: siwrw -s [-p PORT] | -c ADDR [-p PORT] [-t TEST] [--sizes LIST] [--rounds N]\n"
		      "  [--pdata N] [--reject N] [--expect-reject N] [--flood-size N] [--flood-depth N]\n"
		      "  [--flood-ms MS] [--disconnect client|server] [--ird N] [--ord N] [--timeout SEC] [-v]\n",
		      stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rw_init(&eng, &cfg, &ops, b, o.server ? "siwrw-server" : "siwrw-client");
	b->ch = rdma_create_event_channel();
	if (!b->ch || set_nonblock(b->ch->fd)) {
		fprintf(stderr, "siwrw: rdma_create_event_channel: %s\n", strerror(errno));
		return 1;
	}
	rc = start(b, &o);
	if (rc) {
		fprintf(stderr, "siwrw: start: %s\n", strerror(-rc));
		return 1;
	}
	status = run(b, &o, &cfg);

	if (b->qp_made)
		rdma_destroy_qp(b->id);
	if (b->mr_exp)
		ibv_dereg_mr(b->mr_exp);
	if (b->mr_loc)
		ibv_dereg_mr(b->mr_loc);
	if (b->mr_ctl)
		ibv_dereg_mr(b->mr_ctl);
	if (b->cq)
		ibv_destroy_cq(b->cq);
	if (b->cc)
		ibv_destroy_comp_channel(b->cc);
	if (b->id)
		rdma_destroy_id(b->id);
	if (b->listen_id)
		rdma_destroy_id(b->listen_id);
	if (b->pd)
		ibv_dealloc_pd(b->pd);
	rdma_destroy_event_channel(b->ch);
	free(b->exp);
	free(b->loc);
	free(b->ctl);
	return status;
}
