/* iwping: an rping-compatible ping over libiwarp.
 *
 * Per iteration, exactly like rdma-core's rping (so either side can be a
 * real rping on a siw device):
 *   client SENDs the advert of its source buffer (16 bytes, big-endian:
 *   u64 address, u32 rkey, u32 size); the server RDMA READs the source;
 *   the server SENDs a go-ahead (16 zero bytes); the client SENDs the
 *   advert of its sink buffer; the server RDMA WRITEs the data there; the
 *   server SENDs a go-ahead; the client checks the sink (-V).
 * The data is "rdma-ping-%d: " and then printable ASCII cycling 'A'..'z'
 * from a start character that advances by one per iteration, NUL-ended.
 * IRD = ORD = 1. The client disconnects at the end.
 *
 * One thread, one event loop over iw_progress(); each connection has its
 * own CQ so a closed connection can be torn down without touching others. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_common.h"

#define PING_PORT "7174"
/* rping's minimum: sizeof "INT_MAX" (8) + sizeof "rdma-ping-%d: " (15). */
#define PING_MIN_SIZE 23u
#define PING_MAX_SIZE 65535u
#define PING_DEF_SIZE 64u
#define PING_SRV_BUF 65536u /* the server takes any client size */
#define ADV_LEN 16u
#define MSG_FMT "rdma-ping-%d: "

/* Offsets in the small control region: one receive, two send buffers. */
#define CTL_RECV 0u
#define CTL_SEND_SRC 16u
#define CTL_SEND_SINK 32u
#define CTL_GO 48u
#define CTL_LEN 64u

enum { WR_RECV = 1, WR_SEND, WR_READ, WR_WRITE };

enum conn_state {
	ST_CONNECTING,
	/* client */
	ST_WAIT_GO1, /* source advert sent, waiting for the first go-ahead */
	ST_WAIT_GO2, /* sink advert sent, waiting for the second go-ahead */
	/* server */
	ST_WAIT_SRC,  /* waiting for the source advert */
	ST_READING,   /* RDMA READ of the source in flight */
	ST_WAIT_SINK, /* waiting for the sink advert */
	ST_WRITING,   /* RDMA WRITE to the sink in flight */
	/* both */
	ST_CLOSING, /* disconnect requested, waiting for DISCONNECTED */
	ST_CLOSED,
};

/* For messages: what a connection is doing, in words. */
static const char *state_words(enum conn_state st)
{
	switch (st) {
	case ST_CONNECTING: return "while connecting";
	case ST_WAIT_GO1: return "waiting for the server to read the ping (first go-ahead)";
	case ST_WAIT_GO2: return "waiting for the server to write the ping back (second go-ahead)";
	case ST_WAIT_SRC: return "waiting for the client's source advert";
	case ST_READING: return "reading the client's data (RDMA READ)";
	case ST_WAIT_SINK: return "waiting for the client's sink advert";
	case ST_WRITING: return "writing the data back (RDMA WRITE)";
	case ST_CLOSING: return "while disconnecting";
	case ST_CLOSED: return "after the connection closed";
	}
	return "";
}

struct opts {
	bool server, client, verbose, verify, debug, persistent, markers;
	const char *addr;
	const char *port;
	uint32_t size;
	uint64_t count; /* 0: forever */
	enum iw_crc_policy crc;
	const char *trace;
	double timeout_s;
	double dead_peer_s; /* 0: the transport's defaults */
	struct tc_transport tr;
};

struct conn {
	struct iw_cm_id *id;
	struct iw_qp *qp;
	struct iw_cq *cq;
	struct iw_mr *data_mr, *src_mr, *ctl_mr;
	uint8_t *data, *src, *ctl;
	uint32_t data_len;
	enum conn_state state;
	bool failed;      /* an error was reported: the connection ends badly */
	bool established;
	uint64_t iter;
	uint64_t raddr;
	uint32_t rkey, rlen;
	struct tc_watchdog wd;
	char name[80];
	struct conn *next;
};

struct app {
	struct opts o;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id;
	struct iw_listen_stats listen_seen; /* last printed with -d */
	struct conn *conns;
	bool done;
	bool stopping; /* client: interrupted, finishing the current ping */
	int result;    /* exit status */
	uint64_t served;
};

static void dbg(const struct app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dbg(const struct app *a, const char *fmt, ...)
{
	va_list ap;

	if (!a->o.debug)
		return;
	fputs("iwping: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* Data pattern (rping's)                                              */

static void fill_ping(uint8_t *buf, uint32_t size, uint64_t iter)
{
	unsigned c = 'A' + (unsigned)(iter % 58); /* start advances 'A'..'z' */
	int cc = snprintf((char *)buf, size, MSG_FMT, (int)(iter & INT_MAX));
	uint32_t i;

	for (i = cc < 0 ? 0 : (uint32_t)cc; i < size; i++) {
		buf[i] = (uint8_t)c;
		if (++c > 'z')
			c = 'A';
	}
	buf[size - 1] = 0;
}

/* ------------------------------------------------------------------ */
/* Connection resources                                                */

static void conn_free(struct app *a, struct conn *c)
{
	int rc;

	(void)a;
	if (c->qp && (rc = iw_destroy_qp(c->qp)) != 0)
		tc_err("%s: destroy QP: %s", c->name, strerror(-rc));
	if (c->id && (rc = iw_cm_destroy_id(c->id)) != 0)
		tc_err("%s: destroy CM id: %s", c->name, strerror(-rc));
	if (c->cq && (rc = iw_destroy_cq(c->cq)) != 0)
		tc_err("%s: destroy CQ: %s", c->name, strerror(-rc));
	if (c->data_mr)
		iw_dereg_mr(c->data_mr);
	if (c->src_mr)
		iw_dereg_mr(c->src_mr);
	if (c->ctl_mr)
		iw_dereg_mr(c->ctl_mr);
	free(c->data);
	free(c->src);
	free(c->ctl);
	free(c);
}

static int reg(struct app *a, uint8_t **buf, size_t len, unsigned access, struct iw_mr **mr)
{
	int rc;

	*buf = tc_alloc_buf(len);
	if (*buf == NULL)
		return -ENOMEM;
	rc = iw_reg_mr(a->pd, *buf, len, access, mr);
	if (rc)
		tc_err("register %zu bytes: %s", len, strerror(-rc));
	return rc;
}

static int post_recv(struct conn *c)
{
	struct iw_sge sge = { (uintptr_t)(c->ctl + CTL_RECV), ADV_LEN, iw_mr_stag(c->ctl_mr) };
	struct iw_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 };
	struct iw_recv_wr *bad;
	int rc = iw_post_recv(c->qp, &wr, &bad);

	if (rc)
		tc_err("%s: post receive: %s", c->name, strerror(-rc));
	return rc;
}

/* rping's conn: IRD/ORD of 1; all buffers remotely accessible like rping's. */
static int conn_setup(struct app *a, struct conn *c, struct iw_cm_id *id)
{
	const unsigned rw = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_qp_init_attr qa;
	int rc;

	c->id = id;
	iw_cm_id_set_context(id, c);
	tc_watchdog_init(&c->wd, a->o.timeout_s);
	rc = iw_create_cq(a->ctx, 16, NULL, &c->cq);
	if (rc) {
		tc_err("create CQ: %s", strerror(-rc));
		return rc;
	}
	c->data_len = a->o.server ? PING_SRV_BUF : a->o.size;
	rc = reg(a, &c->data, c->data_len, rw, &c->data_mr);
	if (!rc && a->o.client)
		rc = reg(a, &c->src, a->o.size, rw, &c->src_mr);
	if (!rc)
		rc = reg(a, &c->ctl, CTL_LEN, IW_ACCESS_LOCAL_WRITE, &c->ctl_mr);
	if (rc)
		return rc;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = true;
	qa.qp_context = c;
	rc = iw_create_qp(a->pd, &qa, &c->qp);
	if (rc) {
		tc_err("create QP: %s", strerror(-rc));
		return rc;
	}
	return post_recv(c);
}

static void conn_param(const struct app *a, struct iw_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->ird = 1;
	p->ord = 1;
	p->crc = a->o.crc;
	p->markers = a->o.markers;
	p->timeout_ms = (int)(a->o.timeout_s * 1000);
	p->dead_peer_timeout_ms = (int)(a->o.dead_peer_s * 1000);
}

static int post_send(struct conn *c, uint32_t off)
{
	struct iw_sge sge = { (uintptr_t)(c->ctl + off), ADV_LEN, iw_mr_stag(c->ctl_mr) };
	struct iw_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND };
	struct iw_send_wr *bad;
	int rc = iw_post_send(c->qp, &wr, &bad);

	if (rc)
		tc_err("%s: post SEND: %s", c->name, strerror(-rc));
	return rc;
}

static int post_rdma(struct conn *c, bool read, uint32_t len)
{
	struct iw_sge sge = { (uintptr_t)c->data, len, iw_mr_stag(c->data_mr) };
	struct iw_send_wr wr = {
		.wr_id = read ? WR_READ : WR_WRITE,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = read ? IW_WR_RDMA_READ : IW_WR_RDMA_WRITE,
		.remote_addr = c->raddr,
		.rkey = c->rkey,
	};
	struct iw_send_wr *bad;
	int rc = iw_post_send(c->qp, &wr, &bad);

	if (rc)
		tc_err("%s: post RDMA %s: %s", c->name, read ? "READ" : "WRITE", strerror(-rc));
	return rc;
}

static void encode_advert(uint8_t *p, const void *buf, uint32_t rkey, uint32_t size)
{
	tc_put_be64(p, (uint64_t)(uintptr_t)buf);
	tc_put_be32(p + 8, rkey);
	tc_put_be32(p + 12, size);
}

/* Something went wrong on c: say so once, then close it. */
static void conn_fail(struct app *a, struct conn *c)
{
	c->failed = true;
	if (c->state == ST_CLOSING || c->state == ST_CLOSED)
		return;
	tc_report_qp_error(c->name, c->qp);
	if (c->established && iw_cm_disconnect(c->id) == 0) {
		c->state = ST_CLOSING;
		tc_watchdog_init(&c->wd, 3.0);
	} else {
		c->state = ST_CLOSED;
	}
	dbg(a, "%s: closing after an error", c->name);
}

/* ------------------------------------------------------------------ */
/* Client                                                              */

static int client_start_iter(struct app *a, struct conn *c)
{
	(void)a;
	fill_ping(c->src, a->o.size, c->iter);
	memset(c->data, 0, a->o.size); /* a stale sink must not verify */
	encode_advert(c->ctl + CTL_SEND_SRC, c->src, iw_mr_stag(c->src_mr), a->o.size);
	if (post_send(c, CTL_SEND_SRC))
		return -1;
	c->state = ST_WAIT_GO1;
	return 0;
}

static void client_recv(struct app *a, struct conn *c)
{
	if (post_recv(c)) {
		conn_fail(a, c);
		return;
	}
	if (c->state == ST_WAIT_GO1) {
		encode_advert(c->ctl + CTL_SEND_SINK, c->data, iw_mr_stag(c->data_mr), a->o.size);
		if (post_send(c, CTL_SEND_SINK)) {
			conn_fail(a, c);
			return;
		}
		c->state = ST_WAIT_GO2;
		return;
	}
	if (c->state != ST_WAIT_GO2) {
		tc_err("%s: unexpected message from the server", c->name);
		conn_fail(a, c);
		return;
	}
	if (a->o.verbose)
		printf("ping data: %.*s\n", (int)strnlen((const char *)c->data, a->o.size), (const char *)c->data);
	if (a->o.verify && memcmp(c->src, c->data, a->o.size) != 0) {
		tc_err("data mismatch! (iteration %llu)", (unsigned long long)c->iter);
		conn_fail(a, c);
		return;
	}
	c->iter++;
	if (a->o.count && c->iter >= a->o.count) {
		dbg(a, "%llu pings done, disconnecting", (unsigned long long)c->iter);
		if (iw_cm_disconnect(c->id) != 0) {
			tc_err("%s: disconnect failed", c->name);
			c->failed = true;
			c->state = ST_CLOSED;
			return;
		}
		c->state = ST_CLOSING;
		return;
	}
	if (client_start_iter(a, c))
		conn_fail(a, c);
}

/* ------------------------------------------------------------------ */
/* Server                                                              */

static void server_recv(struct app *a, struct conn *c)
{
	const uint8_t *m = c->ctl + CTL_RECV;

	c->raddr = tc_get_be64(m);
	c->rkey = tc_get_be32(m + 8);
	c->rlen = tc_get_be32(m + 12);
	if (post_recv(c)) {
		conn_fail(a, c);
		return;
	}
	dbg(a, "%s: advert addr 0x%llx rkey 0x%08x len %u", c->name, (unsigned long long)c->raddr, c->rkey,
	    c->rlen);
	if (c->rlen == 0 || c->rlen > c->data_len) {
		tc_err("%s: advertised size %u outside 1..%u", c->name, c->rlen, c->data_len);
		conn_fail(a, c);
		return;
	}
	if (c->state == ST_WAIT_SRC) {
		if (post_rdma(c, true, c->rlen)) {
			conn_fail(a, c);
			return;
		}
		c->state = ST_READING;
	} else if (c->state == ST_WAIT_SINK) {
		/* rping writes strlen + 1 bytes of what it read. */
		uint32_t len = (uint32_t)strnlen((const char *)c->data, c->data_len) + 1;

		if (len > c->rlen)
			len = c->rlen;
		if (post_rdma(c, false, len)) {
			conn_fail(a, c);
			return;
		}
		c->state = ST_WRITING;
	} else {
		tc_err("%s: advert out of turn", c->name);
		conn_fail(a, c);
	}
}

static void server_rdma_done(struct app *a, struct conn *c, bool read)
{
	if (read && c->state == ST_READING) {
		if (a->o.verbose)
			printf("server ping data: %.*s\n", (int)strnlen((const char *)c->data, c->rlen),
			       (const char *)c->data);
		c->state = ST_WAIT_SINK;
	} else if (!read && c->state == ST_WRITING) {
		c->state = ST_WAIT_SRC;
		c->iter++;
	} else {
		return;
	}
	memset(c->ctl + CTL_GO, 0, ADV_LEN);
	if (post_send(c, CTL_GO))
		conn_fail(a, c);
}

/* ------------------------------------------------------------------ */
/* Completions and CM events                                           */

static void handle_wc(struct app *a, struct conn *c, const struct iw_wc *wc)
{
	tc_watchdog_kick(&c->wd);
	if (wc->status != IW_WC_SUCCESS) {
		if (c->state == ST_CLOSING || c->state == ST_CLOSED || c->failed)
			return; /* flushes after a disconnect are expected */
		if (wc->status == IW_WC_WR_FLUSH_ERR) {
			/* Flushed: the connection is going away; the
			 * DISCONNECTED event decides whether that was clean. */
			dbg(a, "%s: %s flushed", c->name, tc_wc_opcode_str(wc->opcode));
			return;
		}
		tc_report_wc(c->name, wc);
		conn_fail(a, c);
		return;
	}
	if (c->state == ST_CLOSING || c->state == ST_CLOSED)
		return;
	switch (wc->wr_id) {
	case WR_RECV:
		if (wc->byte_len != ADV_LEN) {
			tc_err("%s: message of %u bytes, expected %u", c->name, wc->byte_len, ADV_LEN);
			conn_fail(a, c);
		} else if (a->o.server) {
			server_recv(a, c);
		} else {
			client_recv(a, c);
		}
		break;
	case WR_READ:
		server_rdma_done(a, c, true);
		break;
	case WR_WRITE:
		server_rdma_done(a, c, false);
		break;
	default:
		break; /* SEND done */
	}
}

static struct conn *conn_new(struct app *a, const char *name)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->state = ST_CONNECTING;
	c->next = a->conns;
	a->conns = c;
	(void)a;
	return c;
}

static void server_connect_request(struct app *a, struct iw_cm_id *id, uint16_t peer_ord)
{
	struct sockaddr_storage ss;
	struct iw_conn_param p;
	char name[80] = "client";
	struct conn *c;
	int rc;

	if (iw_cm_peer_addr(id, &ss) == 0)
		tc_addr_str((struct sockaddr *)&ss, name, sizeof(name));
	if (!a->o.persistent && (a->conns != NULL || a->served > 0)) {
		dbg(a, "%s: busy, rejecting", name);
		iw_cm_reject(id, "iwping: busy", 13);
		iw_cm_destroy_id(id);
		return;
	}
	c = conn_new(a, name);
	if (c == NULL) {
		iw_cm_reject(id, NULL, 0);
		iw_cm_destroy_id(id);
		return;
	}
	a->served++;
	dbg(a, "%s: connect request", name);
	if (conn_setup(a, c, id) != 0) {
		iw_cm_reject(id, NULL, 0);
		c->failed = true;
		c->state = ST_CLOSED;
		return;
	}
	conn_param(a, &p);
	if (peer_ord > p.ird)
		p.ird = peer_ord > 128 ? 128 : peer_ord;
	rc = iw_cm_accept(id, c->qp, &p);
	if (rc) {
		tc_err("%s: accept: %s", name, strerror(-rc));
		c->failed = true;
		c->state = ST_CLOSED;
	}
}

static void handle_cm_event(struct app *a, struct iw_cm_event *ev)
{
	struct conn *c = ev->id ? iw_cm_id_context(ev->id) : NULL;
	enum iw_cm_event_type type = ev->type;

	dbg(a, "CM event %s (status %d)", iw_cm_event_str(type), ev->status);
	if (type == IW_CM_EVENT_CONNECT_REQUEST) {
		struct iw_cm_id *id = ev->id;
		uint16_t ord = ev->ord;

		iw_cm_ack_event(ev);
		server_connect_request(a, id, ord);
		return;
	}
	if (c == NULL) {
		iw_cm_ack_event(ev);
		return;
	}
	tc_watchdog_kick(&c->wd);
	switch (type) {
	case IW_CM_EVENT_ESTABLISHED:
		c->established = true;
		dbg(a, "%s: established (crc %s, markers tx %d rx %d, ird %u ord %u)", c->name,
		    ev->crc ? "on" : "off", ev->markers_tx, ev->markers_rx, ev->ird, ev->ord);
		iw_cm_ack_event(ev);
		if (a->o.server) {
			c->state = ST_WAIT_SRC;
		} else if (client_start_iter(a, c)) {
			conn_fail(a, c);
		}
		return;
	case IW_CM_EVENT_REJECTED:
	case IW_CM_EVENT_CONNECT_ERROR:
		tc_report_cm_event(c->name, ev);
		c->failed = true;
		c->state = ST_CLOSED;
		break;
	case IW_CM_EVENT_DISCONNECTED: {
		/* Clean: the client asked for it after its last iteration, or
		 * the server sees the client leave between iterations. */
		bool clean = (c->state == ST_CLOSING && !c->failed) ||
			     (a->o.server && c->state == ST_WAIT_SRC && !c->failed);

		/* A Terminate (e.g. the peer refused our RDMA WRITE: that WRITE
		 * completed successfully here, as iWARP does) shows only in
		 * iw_qp_error(); DISCONNECTED then has status 0. */
		if (clean && iw_term_cause_is_set(iw_qp_error(c->qp)))
			clean = false;

		if (!clean && !c->failed) {
			tc_report_cm_event(c->name, ev);
			tc_report_qp_error(c->name, c->qp);
			if (a->o.client)
				tc_err("%s: disconnected after %llu complete pings", c->name,
				       (unsigned long long)c->iter);
			c->failed = true;
		}
		dbg(a, "%s: disconnected after %llu pings", c->name, (unsigned long long)c->iter);
		c->state = ST_CLOSED;
		break;
	}
	default:
		break;
	}
	iw_cm_ack_event(ev);
}

/* Tear down closed connections; decide when the program is done. */
static void reap(struct app *a)
{
	struct conn **pp = &a->conns;

	while (*pp) {
		struct conn *c = *pp;

		if (c->state != ST_CLOSED) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		if (c->failed)
			a->result = 1;
		else if (a->o.server)
			dbg(a, "%s: done, %llu pings", c->name, (unsigned long long)c->iter);
		conn_free(a, c);
		if (!a->o.persistent)
			a->done = true;
	}
}

static void check_timeouts(struct app *a)
{
	struct conn *c;

	for (c = a->conns; c; c = c->next) {
		if (c->state == ST_CLOSED || !tc_watchdog_expired(&c->wd))
			continue;
		if (c->state == ST_CLOSING) {
			dbg(a, "%s: no DISCONNECTED event, closing anyway", c->name);
			c->state = ST_CLOSED;
			continue;
		}
		tc_err("%s: no progress for %g s %s (%llu pings done)", c->name, a->o.timeout_s, state_words(c->state),
		       (unsigned long long)c->iter);
		/* The peer is not answering: waiting for a DISCONNECTED on top
		 * of the timeout would overrun --timeout. Teardown aborts. */
		c->failed = true;
		tc_report_qp_error(c->name, c->qp);
		c->state = ST_CLOSED;
	}
}

/* SIGINT/SIGTERM. A client in mid-run finishes its iteration and
 * disconnects cleanly (rping's count reached); a second signal aborts. A
 * server (usually stopped this way) leaves with the status so far. True:
 * stop now. */
static bool interrupted(struct app *a)
{
	struct conn *c = a->conns;

	tc_stop = 0;
	if (a->o.client && !a->stopping && c && (c->state == ST_WAIT_GO1 || c->state == ST_WAIT_GO2)) {
		a->stopping = true;
		a->o.count = c->iter + 1;
		dbg(a, "interrupted: finishing ping %llu", (unsigned long long)c->iter);
		return false;
	}
	if (a->o.client || a->conns)
		tc_err("interrupted");
	return true;
}

/* -d on a server: the listener's admission decisions, when they change. */
static void debug_listener(struct app *a)
{
	struct iw_listen_stats st;

	if (!a->o.debug || !a->listen_id || iw_cm_listen_stats(a->listen_id, &st) < 0 ||
	    memcmp(&st, &a->listen_seen, sizeof(st)) == 0)
		return;
	a->listen_seen = st;
	dbg(a, "listener: %u pending, %llu requests; evicted %llu (backlog) %llu (per source) %llu (majority); "
	       "refused %llu (backlog) %llu (per source); timed out %llu (silent) %llu (no Request); "
	       "%llu not MPA, %llu peers gone",
	    st.pending, (unsigned long long)st.requests, (unsigned long long)st.evicted_backlog,
	    (unsigned long long)st.evicted_source, (unsigned long long)st.evicted_majority, (unsigned long long)st.refused_backlog,
	    (unsigned long long)st.refused_source, (unsigned long long)st.timeout_silent,
	    (unsigned long long)st.timeout_request, (unsigned long long)st.bad_request,
	    (unsigned long long)st.peer_gone);
}

static int run(struct app *a)
{
	while (!a->done) {
		struct iw_cm_event *ev;
		struct conn *c;
		int rc;

		if (tc_stop && interrupted(a))
			return a->o.server ? a->result : 1;
		rc = iw_progress(a->ctx, 100);
		if (rc < 0) {
			tc_err("progress: %s", strerror(-rc));
			return 1;
		}
		while (iw_cm_get_event(a->ch, &ev) == 0)
			handle_cm_event(a, ev);
		debug_listener(a);
		for (c = a->conns; c; c = c->next) {
			struct iw_wc wc[8];
			int i, n;

			if (c->cq == NULL)
				continue;
			while ((n = iw_poll_cq(c->cq, 8, wc)) > 0)
				for (i = 0; i < n; i++)
					handle_wc(a, c, &wc[i]);
		}
		check_timeouts(a);
		reap(a);
	}
	return a->result;
}

/* ------------------------------------------------------------------ */
/* Setup and options                                                   */

static int start_client(struct app *a)
{
	struct sockaddr_storage dst;
	struct iw_conn_param p;
	struct iw_cm_id *id;
	struct conn *c;
	char name[80];
	int rc;

	if (tc_resolve(a->o.addr, a->o.port, false, &dst, NULL))
		return -EINVAL;
	tc_addr_str((struct sockaddr *)&dst, name, sizeof(name));
	c = conn_new(a, name);
	if (c == NULL)
		return -ENOMEM;
	rc = iw_cm_create_id(a->ch, NULL, &id);
	if (rc) {
		tc_err("create CM id: %s", strerror(-rc));
		c->state = ST_CLOSED;
		return rc;
	}
	rc = conn_setup(a, c, id);
	if (rc) {
		c->state = ST_CLOSED;
		return rc;
	}
	conn_param(a, &p);
	rc = iw_cm_connect(id, c->qp, (struct sockaddr *)&dst, &p);
	if (rc) {
		tc_err("connect to %s: %s", name, strerror(-rc));
		c->state = ST_CLOSED;
	}
	return rc;
}

static int start_server(struct app *a)
{
	struct sockaddr_storage ss;
	char name[80];
	int rc;

	if (tc_resolve(a->o.addr, a->o.port, true, &ss, NULL))
		return -EINVAL;
	rc = iw_cm_create_id(a->ch, NULL, &a->listen_id);
	if (rc) {
		tc_err("create CM id: %s", strerror(-rc));
		return rc;
	}
	rc = iw_cm_listen(a->listen_id, (struct sockaddr *)&ss, 16);
	if (rc) {
		tc_err("listen on %s: %s", tc_addr_str((struct sockaddr *)&ss, name, sizeof(name)), strerror(-rc));
		return rc;
	}
	if (iw_cm_local_addr(a->listen_id, &ss) == 0)
		tc_announce_listen((struct sockaddr *)&ss, NULL);
	return 0;
}

static void usage(FILE *f)
{
	fputs("NAME\n"
	      "    iwping - rping-compatible iWARP ping over libiwarp\n"
	      "\n"
	      "SYNOPSIS\n"
	      "    iwping -s [-a ADDR] [-p PORT] [-P] [-v] [-d] [OPTIONS]\n"
	      "    iwping -c [-a] ADDR [-p PORT] [-S SIZE] [-C COUNT] [-v] [-V] [-d] [OPTIONS]\n"
	      "\n"
	      "DESCRIPTION\n"
	      "    Each iteration the client advertises its source buffer with a SEND, the\n"
	      "    server RDMA READs it and answers with a go-ahead SEND, the client\n"
	      "    advertises its sink buffer, the server RDMA WRITEs the data back and\n"
	      "    sends a go-ahead. This is rdma-core's rping protocol and data pattern,\n"
	      "    so either side can be a real rping on a Linux siw device.\n"
	      "\n"
	      "OPTIONS\n"
	      "    -s, --server         run as the server\n"
	      "    -c, --client         run as the client (the server address follows,\n"
	      "                         as -c ADDR or -c -a ADDR)\n"
	      "    -a, --addr ADDR      server address (client: required; server: bind\n"
	      "                         address, default all IPv4 addresses); the server\n"
	      "                         prints \"listening on ADDR:PORT\" on stderr once up\n"
	      "    -p, --port PORT      TCP port (default 7174)\n"
	      "    -S, --size SIZE      ping size in bytes, 23..65535 (default 64)\n"
	      "    -C, --count COUNT    iterations (client; default: until interrupted)\n"
	      "    -v, --verbose        print the ping data\n"
	      "    -V, --validate       check that the data came back unchanged\n"
	      "    -d, --debug          print connection events and states, and (server) the\n"
	      "                         listener's admission counters when they change\n"
	      "    -P, --persistent     server: keep accepting connections\n"
	      "        --crc=on|off|required\n"
	      "                         MPA CRC policy (default on: ask for CRC)\n"
	      "        --markers        ask the peer to insert MPA markers\n"
	      "        --trace FILE     write a pcap of the traffic to FILE\n"
	      "        --timeout SEC    give up after SEC seconds without progress (10)\n"
	      "        --dead-peer SEC  the connection fails when the peer leaves data\n"
	      "                         unacknowledged, or stops answering keepalive\n"
	      "                         probes, for SEC seconds (>= 0.1; default: the\n"
	      "                         transport's, about 15 minutes)\n"
	      TC_TRANSPORT_HELP
	      "    -h, --help           this text\n"
	      "\n"
	      "EXIT STATUS\n"
	      "    0 when every iteration completed (and verified with -V) and the\n"
	      "    connection closed cleanly; 1 on any error; 2 on bad usage.\n",
	      f);
}

enum { OPT_CRC = 256, OPT_MARKERS, OPT_TRACE, OPT_TIMEOUT, OPT_DEAD_PEER, OPT_TRANSPORT, OPT_DEV, OPT_IP };

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", no_argument, NULL, 'c' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 'S' },
		{ "count", required_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "validate", no_argument, NULL, 'V' },
		{ "debug", no_argument, NULL, 'd' },
		{ "persistent", no_argument, NULL, 'P' },
		{ "crc", required_argument, NULL, OPT_CRC },
		{ "markers", no_argument, NULL, OPT_MARKERS },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "dead-peer", required_argument, NULL, OPT_DEAD_PEER },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "dev", required_argument, NULL, OPT_DEV },
		{ "ip", required_argument, NULL, OPT_IP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->port = PING_PORT;
	o->size = PING_DEF_SIZE;
	o->crc = IW_CRC_ON;
	o->timeout_s = 10.0;
	while ((ch = getopt_long(argc, argv, "sca:p:S:C:vVdPh", lopts, NULL)) != -1) {
		switch (ch) {
		case 's': o->server = true; break;
		case 'c': o->client = true; break;
		case 'a': o->addr = optarg; break;
		case 'p':
			if (tc_parse_uint(optarg, 1, 65535, &v))
				return tc_bad_value("-p/--port", optarg, "1..65535");
			o->port = optarg;
			break;
		case 'S':
			if (tc_parse_uint(optarg, PING_MIN_SIZE, PING_MAX_SIZE, &v))
				return tc_bad_value("-S/--size", optarg, "23..65535 bytes, rping's limits");
			o->size = (uint32_t)v;
			break;
		case 'C':
			if (tc_parse_uint(optarg, 1, UINT64_MAX, &o->count))
				return tc_bad_value("-C/--count", optarg, "1..18446744073709551615");
			break;
		case 'v': o->verbose = true; break;
		case 'V': o->verify = true; break;
		case OPT_TRANSPORT:
			if (tc_parse_transport(optarg, &o->tr.kind))
				return tc_bad_value("--transport", optarg, "kernel or raw");
			break;
		case OPT_DEV: o->tr.dev = optarg; break;
		case OPT_IP: o->tr.ip = optarg; break;
		case 'd': o->debug = true; break;
		case 'P': o->persistent = true; break;
		case OPT_CRC:
			if (tc_parse_crc(optarg, &o->crc))
				return tc_bad_value("--crc", optarg, "on, off or required");
			break;
		case OPT_MARKERS: o->markers = true; break;
		case OPT_TRACE: o->trace = optarg; break;
		case OPT_TIMEOUT:
			if (tc_parse_seconds(optarg, &o->timeout_s) || o->timeout_s < 0.1)
				return tc_bad_value("--timeout", optarg, "0.1..10000000 seconds");
			break;
		case OPT_DEAD_PEER:
			if (tc_parse_seconds(optarg, &o->dead_peer_s) || o->dead_peer_s < 0.1 || o->dead_peer_s > 86400)
				return tc_bad_value("--dead-peer", optarg, "0.1..86400 seconds");
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	/* "-c ADDR" like iwperf: the client's one operand is the address. */
	if (o->client && o->addr == NULL && optind < argc)
		o->addr = argv[optind++];
	if (optind < argc) {
		tc_err("unexpected argument %s%s", argv[optind],
		       o->client && o->addr ? " (the server address is given once: -c ADDR or -c -a ADDR)" : "");
		return -1;
	}
	if (o->server == o->client) {
		tc_err("give exactly one of -s (server) and -c (client)");
		return -1;
	}
	if (o->client && o->addr == NULL) {
		tc_err("the client needs the server's address: -c ADDR or -c -a ADDR");
		return -1;
	}
	if (o->persistent && o->client) {
		tc_err("-P is a server option");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct iw_context_attr ca;
	struct app a;
	int rc, status = 1;

	tc_set_progname("iwping");
	memset(&a, 0, sizeof(a));
	if (parse_opts(argc, argv, &a.o)) {
		fputs("Try 'iwping --help'.\n", stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	tc_install_signals();
	memset(&ca, 0, sizeof(ca));
	ca.trace_path = a.o.trace;
	if (tc_transport_apply(&a.o.tr, &ca))
		return 2;
	rc = iw_context_create(&ca, &a.ctx);
	if (rc) {
		tc_err("create context: %s", strerror(-rc));
		return 1;
	}
	rc = iw_alloc_pd(a.ctx, &a.pd);
	if (!rc)
		rc = iw_cm_create_channel(a.ctx, &a.ch);
	if (rc)
		tc_err("setup: %s", strerror(-rc));
	else if ((a.o.server ? start_server(&a) : start_client(&a)) == 0)
		status = run(&a);

	while (a.conns) {
		struct conn *c = a.conns;

		a.conns = c->next;
		conn_free(&a, c);
	}
	if (a.listen_id)
		iw_cm_destroy_id(a.listen_id);
	if (a.ch)
		iw_cm_destroy_channel(a.ch);
	if (a.pd)
		iw_dealloc_pd(a.pd);
	rc = iw_context_destroy(a.ctx);
	if (rc)
		tc_err("destroy context: %s", strerror(-rc));
	return status;
}
