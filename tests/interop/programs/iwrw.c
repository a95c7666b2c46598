/* iwrw: the libiwarp side of the interop READ/WRITE, private data, error
 * and disconnect tests (protocol: rw_proto.h; the guest runs siwrw, the
 * same engine over libibverbs + librdmacm).
 *
 *   iwrw -s [-a ADDR] -p PORT [OPTIONS]      server
 *   iwrw -c ADDR -p PORT [OPTIONS]           client
 *
 * Beyond the engine's checks, --expect-cause L,E,C checks how our QP saw
 * the error: iw_qp_error() must be that triple, and every failed
 * completion must carry it in wc.cause. --expect-status NAME checks the
 * status of the first failed completion (e.g. REM_ACCESS_ERR).
 * --reject-count N: a rejecting server serves N attempts, until --timeout
 * (the siw initiator sometimes loses a reject's private data; the guest
 * tries N times).
 * Exit: 0 pass, 1 fail, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rw_proto.h"
#include "tool_common.h"

struct be {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id, *id;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_mr *mr_exp, *mr_loc, *mr_ctl;
	uint8_t *exp, *loc, *ctl;
	size_t exp_len, loc_len;
	bool connected_once;
	/* --expect-cause bookkeeping */
	bool cause_mismatch;
	struct iw_term_cause first_cause, bad_cause;
	enum iw_wc_status first_status;
	bool have_first;
	unsigned rejects;
};

struct opts {
	bool server;
	const char *addr, *port, *trace;
	enum iw_crc_policy crc;
	double timeout_s;
	uint16_t ird, ord;
	bool expect_cause;
	struct iw_term_cause cause;
	const char *expect_status;
	unsigned reject_count; /* rejects to serve (--reject-count) */
	struct tc_transport tr; /* --transport/--dev/--ip (raw: docs/raw.md) */
	bool try_rfc7306; /* once established: RFC 7306 posts must fail EOPNOTSUPP */
};

static struct rw eng; /* large (work request table): static */
static struct be B;

static uint32_t lkey_of(struct be *b, const void *p)
{
	const uint8_t *a = p;

	if (a >= b->exp && a < b->exp + b->exp_len)
		return iw_mr_stag(b->mr_exp);
	if (a >= b->loc && a < b->loc + b->loc_len)
		return iw_mr_stag(b->mr_loc);
	return iw_mr_stag(b->mr_ctl);
}

static int be_post_send(void *v, uint64_t wr_id, enum rw_wr_op op, void *laddr, uint32_t len, uint64_t raddr,
			uint32_t rkey)
{
	struct be *b = v;
	struct iw_sge sge = { (uintptr_t)laddr, len, lkey_of(b, laddr) };
	struct iw_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .send_flags = IW_SEND_SIGNALED,
				 .remote_addr = raddr, .rkey = rkey };
	struct iw_send_wr *bad;

	wr.opcode = op == RW_OP_SEND ? IW_WR_SEND : op == RW_OP_WRITE ? IW_WR_RDMA_WRITE : IW_WR_RDMA_READ;
	return iw_post_send(b->qp, &wr, &bad);
}

static int be_post_recv(void *v, uint64_t wr_id, void *laddr, uint32_t len)
{
	struct be *b = v;
	struct iw_sge sge = { (uintptr_t)laddr, len, lkey_of(b, laddr) };
	struct iw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct iw_recv_wr *bad;

	return iw_post_recv(b->qp, &wr, &bad);
}

static int be_disconnect(void *v)
{
	struct be *b = v;

	return iw_cm_disconnect(b->id);
}

static const struct rw_ops ops = { be_post_send, be_post_recv, be_disconnect };

static uint64_t now_ms(void)
{
	return tc_now_ns() / 1000000u;
}

static const char *status_name(enum iw_wc_status s)
{
	static const char *const n[] = { "SUCCESS", "LOC_LEN_ERR", "LOC_PROT_ERR", "LOC_QP_OP_ERR",
					 "WR_FLUSH_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "REM_INV_REQ_ERR",
					 "FATAL_ERR" };

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static bool cause_set(struct iw_term_cause c)
{
	return iw_term_cause_is_set(c);
}

static int setup_buffers(struct be *b, const struct rw_cfg *cfg)
{
	int rc;

	b->exp_len = rw_exposed_len(cfg);
	b->loc_len = rw_local_len(cfg);
	b->exp = tc_alloc_buf(b->exp_len);
	b->loc = tc_alloc_buf(b->loc_len);
	b->ctl = tc_alloc_buf(RW_CTL_LEN);
	if (!b->exp || !b->loc || !b->ctl)
		return -ENOMEM;
	rc = iw_reg_mr(b->pd, b->exp, b->exp_len,
		       IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ, &b->mr_exp);
	if (!rc)
		rc = iw_reg_mr(b->pd, b->loc, b->loc_len, IW_ACCESS_LOCAL_WRITE, &b->mr_loc);
	if (!rc)
		rc = iw_reg_mr(b->pd, b->ctl, RW_CTL_LEN, IW_ACCESS_LOCAL_WRITE, &b->mr_ctl);
	return rc;
}

static int create_qp(struct be *b)
{
	struct iw_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = b->cq;
	qa.recv_cq = b->cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = RW_RECV_SLOTS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = true;
	return iw_create_qp(b->pd, &qa, &b->qp);
}

static void conn_param(const struct opts *o, const struct rw_cfg *cfg, struct iw_conn_param *p, uint8_t *pd,
		       uint32_t tag)
{
	memset(p, 0, sizeof(*p));
	p->ird = o->ird;
	p->ord = o->ord;
	p->crc = o->crc;
	p->timeout_ms = 10000;
	if (cfg->pdata_len) {
		rw_pattern(pd, cfg->pdata_len, tag, 0, cfg->pdata_len);
		p->private_data = pd;
		p->private_data_len = cfg->pdata_len;
	}
}

static void on_connect_request(struct be *b, const struct opts *o, struct rw_cfg *cfg, struct iw_cm_event *ev)
{
	static uint8_t pd[RW_MAX_PDATA];
	struct iw_cm_id *id = ev->id;
	struct iw_conn_param p;
	bool pd_ok;
	int rc;

	if (b->id && cfg->reject_len >= 0 && b->rejects < o->reject_count) {
		/* Another attempt of a client we keep rejecting. */
		iw_cm_destroy_id(b->id);
		b->id = NULL;
	}
	if (b->id) { /* one client per run */
		iw_cm_ack_event(ev);
		iw_cm_reject(id, NULL, 0);
		iw_cm_destroy_id(id);
		return;
	}
	b->id = id;
	printf("iwrw: connect request: %u bytes of private data, peer IRD %u ORD %u, MPA rev %u, CRC %s\n",
	       ev->private_data_len, ev->ird, ev->ord, ev->mpa_rev, ev->crc ? "on" : "off");
	pd_ok = rw_pdata_ok(ev->private_data, ev->private_data_len, cfg->pdata_len, RW_PD_C);
	iw_cm_ack_event(ev);
	if (!pd_ok) {
		rw_fail(&eng, "connect private data: expected %u bytes of the client's pattern", cfg->pdata_len);
		iw_cm_reject(id, NULL, 0);
		return;
	}
	if (cfg->pdata_len)
		printf("iwrw: connect private data verified (%u bytes)\n", cfg->pdata_len);
	if (cfg->reject_len >= 0) {
		rw_pattern(pd, (size_t)cfg->reject_len, RW_PD_R, 0, (uint32_t)cfg->reject_len);
		rc = iw_cm_reject(id, pd, (uint16_t)cfg->reject_len);
		b->rejects++;
		if (rc)
			rw_fail(&eng, "reject: %s", strerror(-rc));
		else if (b->rejects == 1)
			rw_reject_sent(&eng);
		else
			printf("iwrw: rejected attempt %u too\n", b->rejects);
		return;
	}
	rc = create_qp(b);
	if (!rc)
		rc = rw_start(&eng, now_ms());
	if (rc) {
		rw_fail(&eng, "QP setup: %s", strerror(-rc));
		iw_cm_reject(id, NULL, 0);
		return;
	}
	conn_param(o, cfg, &p, pd, RW_PD_S);
	rc = iw_cm_accept(id, b->qp, &p);
	if (rc)
		rw_fail(&eng, "accept: %s", strerror(-rc));
}

/* Toward a peer that did not ACK RFC 7306 (siw): an atomic and a Write
 * with Immediate must fail at post time with -EOPNOTSUPP, sending nothing;
 * the test then runs as usual on the same connection. */
static void try_rfc7306(struct be *b)
{
	uint8_t *res = b->loc;
	struct iw_sge sg = { (uint64_t)(uintptr_t)res, 8, iw_mr_stag(b->mr_loc) };
	struct iw_send_wr w = { .wr_id = 0x7306, .sg_list = &sg, .num_sge = 1,
				.opcode = IW_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IW_SEND_SIGNALED,
				.remote_addr = 0x1000, .rkey = 0x100, .compare_add = 1 }, *bad = NULL;
	if (iw_qp_rfc7306(b->qp)) {
		rw_fail(&eng, "the peer accepted RFC 7306");
		return;
	}
	int a = iw_post_send(b->qp, &w, &bad);
	w.opcode = IW_WR_RDMA_WRITE_WITH_IMM;
	int i = iw_post_send(b->qp, &w, &bad);
	if (a != -EOPNOTSUPP || i != -EOPNOTSUPP) {
		rw_fail(&eng, "RFC 7306 posts: atomic %d, write with immediate %d (want %d)", a, i, -EOPNOTSUPP);
		return;
	}
	printf("iwrw: RFC 7306 not negotiated; atomic and write-with-immediate posts refused: %s\n",
	       strerror(EOPNOTSUPP));
}

static void on_cm_event(struct be *b, const struct opts *o, struct rw_cfg *cfg, struct iw_cm_event *ev)
{
	switch (ev->type) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		on_connect_request(b, o, cfg, ev);
		return;
	case IW_CM_EVENT_ESTABLISHED:
		b->connected_once = true;
		printf("iwrw: established: CRC %s, IRD %u ORD %u, MPA rev %u, %u bytes of private data\n",
		       ev->crc ? "on" : "off", ev->ird, ev->ord, ev->mpa_rev, ev->private_data_len);
		if (o->try_rfc7306)
			try_rfc7306(b);
		rw_established(&eng, ev->private_data, ev->private_data_len);
		break;
	case IW_CM_EVENT_REJECTED:
		printf("iwrw: rejected (status %d, %u bytes of private data)\n", ev->status, ev->private_data_len);
		rw_rejected(&eng, ev->private_data, ev->private_data_len);
		break;
	case IW_CM_EVENT_CONNECT_ERROR:
		rw_conn_error(&eng, ev->status ? strerror(-ev->status) : "TCP or MPA failure");
		break;
	case IW_CM_EVENT_DISCONNECTED:
		rw_disconnected(&eng);
		break;
	default:
		break;
	}
	iw_cm_ack_event(ev);
}

static void on_wc(struct be *b, const struct iw_wc *wc)
{
	char st[48];

	if (wc->status != IW_WC_SUCCESS) {
		if (cause_set(wc->cause))
			snprintf(st, sizeof(st), "%s (%u,%u,0x%02x)", status_name(wc->status), wc->cause.layer,
				 wc->cause.etype, wc->cause.ecode);
		else
			snprintf(st, sizeof(st), "%s", status_name(wc->status));
		if (!b->have_first) {
			b->have_first = true;
			b->first_status = wc->status;
			b->first_cause = wc->cause;
		}
		if (!iw_term_cause_eq(wc->cause, b->first_cause) && !b->cause_mismatch) {
			b->cause_mismatch = true;
			b->bad_cause = wc->cause;
		}
	} else {
		snprintf(st, sizeof(st), "OK");
	}
	rw_completion(&eng, wc->wr_id, wc->status == IW_WC_SUCCESS, st, wc->byte_len);
}

/* --expect-cause / --expect-status, after the engine's verdict. */
static int check_cause(const struct be *b, const struct opts *o)
{
	struct iw_term_cause q = b->qp ? iw_qp_error(b->qp) : IW_TERM_CAUSE_NONE;
	int bad = 0;

	if (b->qp)
		printf("iwrw: QP state %d, error cause (%u,%u,0x%02x) %s\n", (int)iw_qp_state(b->qp), q.layer,
		       q.etype, q.ecode, cause_set(q) ? iw_term_cause_str(q) : "none");
	if (o->expect_cause) {
		if (!iw_term_cause_eq(q, o->cause)) {
			printf("iwrw: FAIL: QP error cause (%u,%u,0x%02x), expected (%u,%u,0x%02x)\n", q.layer, q.etype,
			       q.ecode, o->cause.layer, o->cause.etype, o->cause.ecode);
			bad = 1;
		}
		if (!b->have_first) {
			printf("iwrw: FAIL: no failed completion carried the cause\n");
			bad = 1;
		} else if (!iw_term_cause_eq(b->first_cause, o->cause) || b->cause_mismatch) {
			struct iw_term_cause c = b->cause_mismatch ? b->bad_cause : b->first_cause;

			printf("iwrw: FAIL: a failed completion carried cause (%u,%u,0x%02x)\n", c.layer, c.etype,
			       c.ecode);
			bad = 1;
		} else {
			printf("iwrw: every failed completion carried cause (%u,%u,0x%02x)\n", o->cause.layer,
			       o->cause.etype, o->cause.ecode);
		}
	}
	if (o->expect_status) {
		const char *got = b->have_first ? status_name(b->first_status) : "none";

		if (strcmp(got, o->expect_status) != 0) {
			printf("iwrw: FAIL: first failed completion %s, expected %s\n", got, o->expect_status);
			bad = 1;
		} else {
			printf("iwrw: first failed completion %s as expected\n", got);
		}
	}
	return bad;
}

static int run(struct be *b, const struct opts *o, struct rw_cfg *cfg)
{
	uint64_t deadline = now_ms() + (uint64_t)(o->timeout_s * 1000);

	while (!rw_done(&eng)) {
		struct iw_cm_event *ev;
		struct iw_wc wc[16];
		int n;

		if (now_ms() > deadline) {
			rw_fail(&eng, "timeout after %.0f s (established %d, %llu of %llu work requests completed)",
				o->timeout_s, eng.established, (unsigned long long)eng.completed,
				(unsigned long long)eng.posted);
			break;
		}
		n = iw_progress(b->ctx, 20);
		if (n < 0) {
			rw_fail(&eng, "progress: %s", strerror(-n));
			break;
		}
		/* Completions first: a DISCONNECTED event should not overtake
		 * the messages that arrived before it. */
		while (b->cq && (n = iw_poll_cq(b->cq, 16, wc)) > 0)
			for (int i = 0; i < n; i++)
				on_wc(b, &wc[i]);
		while (iw_cm_get_event(b->ch, &ev) == 0)
			on_cm_event(b, o, cfg, ev);
		rw_tick(&eng, now_ms());
	}
	/* --reject-count: the client tries N times (siw sometimes drops a
	 * reject's private data); serve all N until the deadline. A quiet
	 * gap is no sign that the client is done: a guest under software
	 * emulation on a loaded host takes seconds to start each attempt. */
	while (o->server && cfg->reject_len >= 0 && !eng.failed && b->rejects < o->reject_count &&
	       now_ms() < deadline) {
		struct iw_cm_event *ev;

		iw_progress(b->ctx, 20);
		while (iw_cm_get_event(b->ch, &ev) == 0)
			on_cm_event(b, o, cfg, ev);
	}
	/* A reject frame or our last Terminate still on its way out. */
	for (uint64_t end = now_ms() + 200; now_ms() < end;)
		iw_progress(b->ctx, 20);
	return rw_verdict(&eng) | check_cause(b, o);
}

static int parse_cause(const char *s, struct iw_term_cause *c)
{
	unsigned l, e, x;

	if (sscanf(s, "%u,%u,%x", &l, &e, &x) != 3 || l > 15 || e > 15 || x > 255)
		return -1;
	*c = IW_TERM_CAUSE((uint8_t)l, (uint8_t)e, (uint8_t)x);
	return 0;
}

static void usage(void)
{
	fputs("usage: iwrw -s [-a ADDR] -p PORT | -c ADDR -p PORT\n"
	      "  [-t rw|badwrite|badread|victim|flood] [--sizes LIST] [--rounds N] [--try-rfc7306]\n"
	      "  [--pdata N] [--reject N] [--expect-reject N] [--flood-size N] [--flood-depth N]\n"
	      "  [--flood-ms MS] [--disconnect client|server] [--ird N] [--ord N]\n"
	      "  [--crc on|off|required] [--trace FILE] [--timeout SEC] [--expect-cause L,E,C]\n"
	      "  [--expect-status NAME] [--reject-count N] [-v]\n"
	      "  [--transport=kernel|raw --dev IFACE --ip ADDR/PREFIX]\n",
	      stderr);
}

static int parse(int argc, char **argv, struct opts *o, struct rw_cfg *cfg)
{
	enum { O_SIZES = 256, O_ROUNDS, O_PDATA, O_REJECT, O_XREJECT, O_FSIZE, O_FDEPTH, O_FMS, O_DISC, O_CRC,
	       O_TRACE, O_TIMEOUT, O_XCAUSE, O_XSTATUS, O_IRD, O_ORD, O_RCOUNT,
	       O_TRANSPORT, O_DEV, O_IP, O_TRY7306 };
	static const struct option lo[] = {
		{ "sizes", 1, NULL, O_SIZES }, { "rounds", 1, NULL, O_ROUNDS }, { "pdata", 1, NULL, O_PDATA },
		{ "reject", 1, NULL, O_REJECT }, { "expect-reject", 1, NULL, O_XREJECT },
		{ "flood-size", 1, NULL, O_FSIZE }, { "flood-depth", 1, NULL, O_FDEPTH },
		{ "flood-ms", 1, NULL, O_FMS }, { "disconnect", 1, NULL, O_DISC }, { "crc", 1, NULL, O_CRC },
		{ "trace", 1, NULL, O_TRACE }, { "timeout", 1, NULL, O_TIMEOUT },
		{ "expect-cause", 1, NULL, O_XCAUSE }, { "expect-status", 1, NULL, O_XSTATUS },
		{ "ird", 1, NULL, O_IRD }, { "ord", 1, NULL, O_ORD }, { "reject-count", 1, NULL, O_RCOUNT },
		{ "transport", 1, NULL, O_TRANSPORT }, { "dev", 1, NULL, O_DEV }, { "ip", 1, NULL, O_IP },
		{ "try-rfc7306", 0, NULL, O_TRY7306 },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->crc = IW_CRC_ON;
	o->timeout_s = 30;
	o->ird = o->ord = 16;
	o->reject_count = 1;
	rw_cfg_defaults(cfg);
	cfg->role = RW_CLIENT;
	while ((ch = getopt_long(argc, argv, "sc:a:p:t:v", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->server = true; cfg->role = RW_SERVER; break;
		case 'c': o->addr = optarg; break;
		case 'a': o->addr = optarg; break;
		case 'p': o->port = optarg; break;
		case 't': if (rw_parse_test(optarg, &cfg->test)) return -1; break;
		case 'v': cfg->verbose = true; break;
		case O_SIZES: if (rw_parse_sizes(optarg, cfg)) return -1; break;
		case O_ROUNDS: if (tc_parse_uint(optarg, 1, 1000, &v)) return -1; cfg->rounds = (unsigned)v; break;
		case O_PDATA: if (tc_parse_uint(optarg, 0, 508, &v)) return -1; cfg->pdata_len = (uint16_t)v; break;
		case O_REJECT: if (tc_parse_uint(optarg, 0, 508, &v)) return -1; cfg->reject_len = (int)v; break;
		case O_XREJECT: if (tc_parse_uint(optarg, 0, 508, &v)) return -1; cfg->expect_reject = (int)v; break;
		case O_FSIZE: if (tc_parse_size(optarg, 1, 16u << 20, &v)) return -1; cfg->flood_size = (uint32_t)v; break;
		case O_FDEPTH: if (tc_parse_uint(optarg, 1, 48, &v)) return -1; cfg->flood_depth = (unsigned)v; break;
		case O_FMS: if (tc_parse_uint(optarg, 0, 60000, &v)) return -1; cfg->flood_ms = (unsigned)v; break;
		case O_DISC:
			if (strcmp(optarg, "client") == 0)
				cfg->disconnector = RW_CLIENT;
			else if (strcmp(optarg, "server") == 0)
				cfg->disconnector = RW_SERVER;
			else
				return -1;
			break;
		case O_CRC: if (tc_parse_crc(optarg, &o->crc)) return -1; break;
		case O_TRACE: o->trace = optarg; break;
		case O_TIMEOUT: if (tc_parse_seconds(optarg, &o->timeout_s)) return -1; break;
		case O_XCAUSE: if (parse_cause(optarg, &o->cause)) return -1; o->expect_cause = true; break;
		case O_XSTATUS: o->expect_status = optarg; break;
		case O_IRD: if (tc_parse_uint(optarg, 1, 128, &v)) return -1; o->ird = (uint16_t)v; break;
		case O_ORD: if (tc_parse_uint(optarg, 1, 128, &v)) return -1; o->ord = (uint16_t)v; break;
		case O_RCOUNT: if (tc_parse_uint(optarg, 1, 100, &v)) return -1; o->reject_count = (unsigned)v; break;
		case O_TRANSPORT: if (tc_parse_transport(optarg, &o->tr.kind)) return -1; break;
		case O_TRY7306: o->try_rfc7306 = true; break;
		case O_DEV: o->tr.dev = optarg; break;
		case O_IP: o->tr.ip = optarg; break;
		default: return -1;
		}
	}
	if (optind != argc || !o->port || (!o->server && !o->addr))
		return -1;
	if (o->server && cfg->test != RW_T_RW && cfg->test != RW_T_VICTIM && cfg->test != RW_T_FLOOD)
		return -1;
	return 0;
}

static int start(struct be *b, const struct opts *o, struct rw_cfg *cfg)
{
	static uint8_t pd[RW_MAX_PDATA];
	struct sockaddr_storage ss;
	struct iw_conn_param p;
	int rc;

	if (tc_resolve(o->addr, o->port, o->server, &ss, NULL))
		return -EINVAL;
	if (o->server) {
		rc = iw_cm_create_id(b->ch, NULL, &b->listen_id);
		if (!rc)
			rc = iw_cm_listen(b->listen_id, (struct sockaddr *)&ss, 4);
		if (!rc)
			printf("iwrw: listening on port %s (test %s)\n", o->port, rw_test_name(cfg->test));
		return rc;
	}
	rc = iw_cm_create_id(b->ch, NULL, &b->id);
	if (!rc)
		rc = create_qp(b);
	if (!rc)
		rc = rw_start(&eng, now_ms());
	if (rc)
		return rc;
	conn_param(o, cfg, &p, pd, RW_PD_C);
	return iw_cm_connect(b->id, b->qp, (struct sockaddr *)&ss, &p);
}

int main(int argc, char **argv)
{
	struct iw_context_attr ca;
	struct rw_cfg cfg;
	struct opts o;
	struct be *b = &B;
	int rc, status;

	tc_set_progname("iwrw");
	if (parse(argc, argv, &o, &cfg)) {
		usage();
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&ca, 0, sizeof(ca));
	ca.trace_path = o.trace;
	if (tc_transport_apply(&o.tr, &ca))
		return 2;
	rc = iw_context_create(&ca, &b->ctx);
	if (!rc)
		rc = iw_alloc_pd(b->ctx, &b->pd);
	if (!rc)
		rc = iw_cm_create_channel(b->ctx, &b->ch);
	if (!rc)
		rc = iw_create_cq(b->ctx, 256, NULL, &b->cq);
	if (!rc)
		rc = setup_buffers(b, &cfg);
	if (rc) {
		fprintf(stderr, "iwrw: setup: %s\n", strerror(-rc));
		return 1;
	}
	rw_init(&eng, &cfg, &ops, b, o.server ? "iwrw-server" : "iwrw-client");
	rw_set_buffers(&eng, b->exp, b->loc, b->ctl, iw_mr_stag(b->mr_exp));
	rc = start(b, &o, &cfg);
	if (rc) {
		fprintf(stderr, "iwrw: start: %s\n", strerror(-rc));
		return 1;
	}
	status = run(b, &o, &cfg);

	if (b->qp)
		iw_destroy_qp(b->qp);
	if (b->id)
		iw_cm_destroy_id(b->id);
	if (b->listen_id)
		iw_cm_destroy_id(b->listen_id);
	iw_destroy_cq(b->cq);
	iw_dereg_mr(b->mr_exp);
	iw_dereg_mr(b->mr_loc);
	iw_dereg_mr(b->mr_ctl);
	iw_cm_destroy_channel(b->ch);
	iw_dealloc_pd(b->pd);
	rc = iw_context_destroy(b->ctx);
	if (rc)
		fprintf(stderr, "iwrw: destroy context: %s\n", strerror(-rc));
	free(b->exp);
	free(b->loc);
	free(b->ctl);
	return status;
}
