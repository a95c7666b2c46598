/* iwhello: rdma-core's rdma_server / rdma_client protocol on libiwarp, to
 * talk to those example programs in the siw guest.
 *
 * Their protocol (librdmacm/examples, port 7471): one 16-byte SEND each
 * way. rdma_client posts a 16-byte receive, connects, SENDs its 16-byte
 * buffer (zeros), waits for its send and receive completions, disconnects.
 * rdma_server posts a receive, accepts, waits for the client's SEND, SENDs
 * 16 bytes (zeros) back, disconnects. Both leave IRD/ORD to librdmacm,
 * which asks for the device maximum (siw: 128).
 *
 *   iwhello -s [-a ADDR] -p PORT [--expect-ird-ord N] [--trace FILE]
 *   iwhello -c ADDR -p PORT [--expect-ird-ord N] [--trace FILE]
 *
 * We offer IRD = ORD = 128, SEND a recognisable 16-byte pattern, require
 * the peer's 16 bytes to be zeros, and wait for the connection to end
 * cleanly: the client lets rdma_server disconnect, the server lets
 * rdma_client disconnect. --expect-ird-ord N: the negotiated IRD and ORD
 * (and the peer's offer) must be N. Exit 0 pass, 1 fail, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_common.h"

#define MSG 16u

enum { WR_RECV = 1, WR_SEND = 2 };

struct hello {
	bool server;
	const char *addr, *port, *trace;
	int expect_ird_ord; /* -1: no check */
	double timeout_s;

	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id, *id;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_mr *mr;
	uint8_t *buf; /* [recv 16][send 16] */

	bool established, got_recv, send_done, disconnected, failed;
	int flushed;
};

static void fail(struct hello *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct hello *h, const char *fmt, ...)
{
	va_list ap;

	fputs("iwhello: FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	h->failed = true;
}

static int post_recv(struct hello *h)
{
	struct iw_sge sge = { (uintptr_t)h->buf, MSG, iw_mr_stag(h->mr) };
	struct iw_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 };
	struct iw_recv_wr *bad;

	return iw_post_recv(h->qp, &wr, &bad);
}

static int post_send(struct hello *h)
{
	struct iw_sge sge = { (uintptr_t)(h->buf + MSG), MSG, iw_mr_stag(h->mr) };
	struct iw_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND };
	struct iw_send_wr *bad;

	for (unsigned i = 0; i < MSG; i++)
		h->buf[MSG + i] = (uint8_t)(0xa0 + i);
	return iw_post_send(h->qp, &wr, &bad);
}

static int make_qp(struct hello *h)
{
	struct iw_qp_init_attr qa;
	int rc;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = h->cq;
	qa.recv_cq = h->cq;
	qa.cap.max_send_wr = 2;
	qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = true;
	rc = iw_create_qp(h->pd, &qa, &h->qp);
	if (!rc)
		rc = post_recv(h);
	return rc;
}

static void param(struct iw_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->ird = 128;
	p->ord = 128;
	p->crc = IW_CRC_ON;
}

static void check_ird_ord(struct hello *h, const char *what, unsigned ird, unsigned ord)
{
	printf("iwhello: %s: IRD %u ORD %u\n", what, ird, ord);
	if (h->expect_ird_ord >= 0 && (ird != (unsigned)h->expect_ird_ord || ord != (unsigned)h->expect_ird_ord))
		fail(h, "%s: IRD %u ORD %u, expected %d", what, ird, ord, h->expect_ird_ord);
}

static void on_event(struct hello *h, struct iw_cm_event *ev)
{
	struct iw_conn_param p;
	int rc;

	switch (ev->type) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		if (h->id) {
			struct iw_cm_id *extra = ev->id;

			iw_cm_ack_event(ev);
			iw_cm_reject(extra, NULL, 0);
			iw_cm_destroy_id(extra);
			return;
		}
		h->id = ev->id;
		check_ird_ord(h, "connect request (peer's offer)", ev->ird, ev->ord);
		iw_cm_ack_event(ev);
		rc = make_qp(h);
		param(&p);
		if (!rc)
			rc = iw_cm_accept(h->id, h->qp, &p);
		if (rc)
			fail(h, "accept: %s", strerror(-rc));
		return;
	case IW_CM_EVENT_ESTABLISHED:
		h->established = true;
		check_ird_ord(h, "established (agreed)", ev->ird, ev->ord);
		printf("iwhello: CRC %s, MPA rev %u\n", ev->crc ? "on" : "off", ev->mpa_rev);
		if (!h->server && (rc = post_send(h)) != 0)
			fail(h, "post SEND: %s", strerror(-rc));
		break;
	case IW_CM_EVENT_DISCONNECTED:
		h->disconnected = true;
		printf("iwhello: disconnected by the peer\n");
		break;
	case IW_CM_EVENT_REJECTED:
	case IW_CM_EVENT_CONNECT_ERROR:
		fail(h, "connection failed: %s (status %d)", iw_cm_event_str(ev->type), ev->status);
		break;
	default:
		break;
	}
	iw_cm_ack_event(ev);
}

static void on_wc(struct hello *h, const struct iw_wc *wc)
{
	int rc;

	if (wc->status != IW_WC_SUCCESS) {
		if (wc->status == IW_WC_WR_FLUSH_ERR && h->disconnected) {
			h->flushed++;
			return;
		}
		fail(h, "%s failed: %s", tc_wc_opcode_str(wc->opcode), iw_wc_status_str(wc->status));
		return;
	}
	if (wc->wr_id == WR_SEND) {
		h->send_done = true;
		return;
	}
	if (wc->byte_len != MSG) {
		fail(h, "received %u bytes, expected %u", wc->byte_len, MSG);
		return;
	}
	for (unsigned i = 0; i < MSG; i++) {
		if (h->buf[i] != 0) {
			fail(h, "received byte %u = 0x%02x, expected the peer's zeros", i, h->buf[i]);
			return;
		}
	}
	h->got_recv = true;
	printf("iwhello: received the peer's 16-byte message (16 zero bytes)\n");
	if (h->server && (rc = post_send(h)) != 0)
		fail(h, "post SEND: %s", strerror(-rc));
}

static int run(struct hello *h)
{
	uint64_t deadline = tc_now_ns() + (uint64_t)(h->timeout_s * 1e9);

	while (!h->failed && !(h->disconnected && h->got_recv && h->send_done)) {
		struct iw_cm_event *ev;
		struct iw_wc wc[4];
		int n;

		if (tc_now_ns() > deadline) {
			fail(h, "timeout (established %d, received %d, sent %d, disconnected %d)", h->established,
			     h->got_recv, h->send_done, h->disconnected);
			break;
		}
		if (iw_progress(h->ctx, 20) < 0)
			break;
		while (iw_cm_get_event(h->ch, &ev) == 0)
			on_event(h, ev);
		while ((n = iw_poll_cq(h->cq, 4, wc)) > 0)
			for (int i = 0; i < n; i++)
				on_wc(h, &wc[i]);
		if (h->disconnected && (!h->got_recv || !h->send_done)) {
			/* Let the last completions surface before judging. */
			iw_progress(h->ctx, 50);
			while ((n = iw_poll_cq(h->cq, 4, wc)) > 0)
				for (int i = 0; i < n; i++)
					on_wc(h, &wc[i]);
			if (!h->got_recv || !h->send_done)
				fail(h, "disconnected before the exchange finished (received %d, sent %d)", h->got_recv,
				     h->send_done);
		}
	}
	if (!h->failed)
		printf("iwhello: RESULT PASS: 16 bytes each way, disconnected by the peer\n");
	else
		printf("iwhello: RESULT FAIL\n");
	return h->failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "expect-ird-ord", 1, NULL, 'I' }, { "trace", 1, NULL, 'T' },
					    { "timeout", 1, NULL, 'W' }, { NULL, 0, NULL, 0 } };
	struct hello h;
	struct iw_context_attr ca;
	struct sockaddr_storage ss;
	struct iw_conn_param p;
	uint64_t v;
	int ch, rc, status;

	memset(&h, 0, sizeof(h));
	h.expect_ird_ord = -1;
	h.timeout_s = 20;
	tc_set_progname("iwhello");
	while ((ch = getopt_long(argc, argv, "sc:a:p:", lo, NULL)) != -1) {
		switch (ch) {
		case 's': h.server = true; break;
		case 'c': h.addr = optarg; break;
		case 'a': h.addr = optarg; break;
		case 'p': h.port = optarg; break;
		case 'I':
			if (tc_parse_uint(optarg, 1, 128, &v))
				goto usage;
			h.expect_ird_ord = (int)v;
			break;
		case 'T': h.trace = optarg; break;
		case 'W':
			if (tc_parse_seconds(optarg, &h.timeout_s))
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (optind != argc || !h.port || (!h.server && !h.addr))
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&ca, 0, sizeof(ca));
	ca.trace_path = h.trace;
	rc = iw_context_create(&ca, &h.ctx);
	if (!rc)
		rc = iw_alloc_pd(h.ctx, &h.pd);
	if (!rc)
		rc = iw_cm_create_channel(h.ctx, &h.ch);
	if (!rc)
		rc = iw_create_cq(h.ctx, 8, NULL, &h.cq);
	if (!rc && !(h.buf = tc_alloc_buf(2 * MSG)))
		rc = -ENOMEM;
	if (!rc)
		rc = iw_reg_mr(h.pd, h.buf, 2 * MSG, IW_ACCESS_LOCAL_WRITE, &h.mr);
	if (!rc)
		rc = tc_resolve(h.addr, h.port, h.server, &ss, NULL);
	if (!rc && h.server) {
		rc = iw_cm_create_id(h.ch, NULL, &h.listen_id);
		if (!rc)
			rc = iw_cm_listen(h.listen_id, (struct sockaddr *)&ss, 4);
	} else if (!rc) {
		rc = iw_cm_create_id(h.ch, NULL, &h.id);
		if (!rc)
			rc = make_qp(&h);
		param(&p);
		if (!rc)
			rc = iw_cm_connect(h.id, h.qp, (struct sockaddr *)&ss, &p);
	}
	if (rc) {
		fprintf(stderr, "iwhello: setup: %s\n", strerror(-rc));
		return 1;
	}
	status = run(&h);
	if (h.qp)
		iw_destroy_qp(h.qp);
	if (h.id)
		iw_cm_destroy_id(h.id);
	if (h.listen_id)
		iw_cm_destroy_id(h.listen_id);
	iw_dereg_mr(h.mr);
	iw_destroy_cq(h.cq);
	iw_cm_destroy_channel(h.ch);
	iw_dealloc_pd(h.pd);
	iw_context_destroy(h.ctx);
	free(h.buf);
	return status;
usage:
	fputs("usage: iwhello -s [-a ADDR] -p PORT | -c ADDR -p PORT [--expect-ird-ord N] [--trace FILE]"
	      " [--timeout SEC]\n", stderr);
	return 2;
}
