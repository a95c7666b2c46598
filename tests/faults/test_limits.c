/* Enforced limits: max QPs and MRs per context, IRD/ORD (at post time
 * and on the wire, both directions), private data sizes, the largest
 * FPDU accepted, pending connections per listener, and the receive
 * path's memory (no allocation driven by the peer). docs/limits.md lists
 * every limit these tests check. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fx.h"
#include "iwt_common.h"
#include "iwt_ddp.h"
#include "iwt_fpdu.h"
#include "iwt_handshake.h"
#include "rdmap/rdmap_wire.h"

#define MIB (1024u * 1024u)
#define ACC_ALL (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ)

/* ------------------------------------------------------------------ */
/* Context object limits                                               */

START_TEST(test_max_qp)
{
	struct iw_context_attr a = { .max_qp = 3 };
	struct iw_context *c;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp[4];

	ck_assert_int_eq(iw_context_create(&a, &c), 0);
	ck_assert_int_eq(iw_alloc_pd(c, &pd), 0);
	ck_assert_int_eq(iw_create_cq(c, 64, NULL, &cq), 0);
	struct iw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq };
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iw_create_qp(pd, &qa, &qp[i]), 0);
	ck_assert_int_eq(iw_create_qp(pd, &qa, &qp[3]), -ENOSPC);
	ck_assert_int_eq(iw_destroy_qp(qp[1]), 0);
	ck_assert_int_eq(iw_create_qp(pd, &qa, &qp[1]), 0);
	ck_assert_int_eq(iw_create_qp(pd, &qa, &qp[3]), -ENOSPC);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iw_destroy_qp(qp[i]), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(c), 0);
}
END_TEST

START_TEST(test_max_mr)
{
	struct iw_context_attr a = { .max_mr = 4 };
	struct iw_context *c;
	struct iw_pd *pd;
	struct iw_mr *mr[5];
	static uint8_t buf[4096];

	ck_assert_int_eq(iw_context_create(&a, &c), 0);
	ck_assert_int_eq(iw_alloc_pd(c, &pd), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr[i]), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr[4]), -ENOSPC);
	/* Re-registration keeps the slot. */
	ck_assert_int_eq(iw_rereg_mr(mr[0], buf, 16, ACC_ALL), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr[4]), -ENOSPC);
	ck_assert_int_eq(iw_dereg_mr(mr[2]), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr[2]), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(c), 0);

	/* The STag index has 24 bits. */
	a.max_mr = 0x1000000;
	ck_assert_int_eq(iw_context_create(&a, &c), -EINVAL);
	a.max_mr = 0xFFFFFF;
	ck_assert_int_eq(iw_context_create(&a, &c), 0);
	ck_assert_int_eq(iw_context_destroy(c), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Connected pairs                                                     */

struct pair {
	struct iw_cm_channel *sch, *cch;
	struct iw_cm_id *l;
	struct fx_ep c, s;
	struct sockaddr_storage a;
};

static long long heap_before_connect; /* set by pair_connect once the QPs exist */

static void pair_connect(struct pair *p, const struct iw_conn_param *cp, const struct iw_conn_param *sp)
{
	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &p->sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &p->cch), 0);
	p->l = fx_listen(p->sch, NULL, &p->a);
	fx_ep_init(&p->c);
	fx_ep_init(&p->s);
	ck_assert_int_eq(iw_cm_create_id(p->cch, NULL, &p->c.id), 0);
	heap_before_connect = fx_heap_bytes();
	ck_assert_int_eq(iw_cm_connect(p->c.id, p->c.qp, (struct sockaddr *)&p->a, cp), 0);
	struct iw_cm_event *ev = fx_ev_expect(p->sch, IW_CM_EVENT_CONNECT_REQUEST);
	p->s.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(p->s.id, p->s.qp, sp), 0);
	fx_ev_expect_ack(p->sch, IW_CM_EVENT_ESTABLISHED);
	fx_ev_expect_ack(p->cch, IW_CM_EVENT_ESTABLISHED);
}

static void pair_free(struct pair *p)
{
	fx_ep_fini(&p->c);
	fx_ep_fini(&p->s);
	ck_assert_int_eq(iw_cm_destroy_id(p->l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(p->sch), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(p->cch), 0);
}

static void pair_close(struct pair *p)
{
	ck_assert_int_eq(iw_cm_disconnect(p->c.id), 0);
	fx_ev_expect_ack(p->cch, IW_CM_EVENT_DISCONNECTED);
	fx_ev_expect_ack(p->sch, IW_CM_EVENT_DISCONNECTED);
	pair_free(p);
}

/* ------------------------------------------------------------------ */
/* Private data                                                        */

START_TEST(test_private_data_limits)
{
	static uint8_t pd[600];
	struct iw_conn_param cp = { .private_data = pd, .private_data_len = 508 };
	struct iw_conn_param sp = { .private_data = pd + 1, .private_data_len = 508 };
	struct iw_cm_channel *ch;
	struct iw_cm_id *id;
	struct fx_ep e;
	struct sockaddr_storage a;

	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i * 7);
	/* MPA rev 2: 512 minus the 4 bytes of RFC 6581 words, both ways. */
	struct pair p;
	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &p.sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &p.cch), 0);
	p.l = fx_listen(p.sch, NULL, &p.a);
	fx_ep_init(&p.c);
	fx_ep_init(&p.s);
	ck_assert_int_eq(iw_cm_create_id(p.cch, NULL, &p.c.id), 0);
	cp.private_data_len = 509;
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.a, &cp), -EINVAL);
	cp.private_data_len = 508;
	ck_assert_int_eq(iw_cm_connect(p.c.id, p.c.qp, (struct sockaddr *)&p.a, &cp), 0);
	struct iw_cm_event *ev = fx_ev_expect(p.sch, IW_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, pd, 508);
	p.s.id = ev->id;
	iw_cm_ack_event(ev);
	sp.private_data_len = 509;
	ck_assert_int_eq(iw_cm_accept(p.s.id, p.s.qp, &sp), -EINVAL);
	ck_assert_int_eq(iw_cm_reject(p.s.id, pd, 509), -EINVAL);
	sp.private_data_len = 508;
	ck_assert_int_eq(iw_cm_accept(p.s.id, p.s.qp, &sp), 0);
	fx_ev_expect_ack(p.sch, IW_CM_EVENT_ESTABLISHED);
	ev = fx_ev_expect(p.cch, IW_CM_EVENT_ESTABLISHED);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, pd + 1, 508);
	iw_cm_ack_event(ev);
	pair_close(&p);

	/* MPA rev 1: all 512. */
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	fx_loopback(AF_INET, &a);
	struct iw_conn_param r1 = { .private_data = pd, .private_data_len = 513, .mpa_rev = 1 };
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &r1), -EINVAL);
	fx_ep_fini(&e);

	/* A peer's Request claiming more than 512 bytes: dropped unseen. */
	id = fx_listen(ch, NULL, &a);
	uint8_t frame[20 + 600];
	size_t fl = iwt_mpa_raw_bytes("MPA ID Req Frame", 0x40, 1, 513, pd, 513, frame);
	int fd = fx_raw_connect(&a);
	ck_assert_int_eq(send(fd, frame, fl, 0), (ssize_t)fl);
	ck_assert(fx_raw_dropped(fd, 2000));
	close(fd);
	/* 512 in rev 1 is fine. */
	fl = iwt_mpa_raw_bytes("MPA ID Req Frame", 0x40, 1, 512, pd, 512, frame);
	fd = fx_raw_connect(&a);
	ck_assert_int_eq(send(fd, frame, fl, 0), (ssize_t)fl);
	ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->private_data_len, 512);
	struct iw_cm_id *child = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_reject(child, pd, 512), 0); /* rev 1: 512 in the reject too */
	ck_assert_int_eq(iw_cm_destroy_id(child), 0);
	close(fd);
	ck_assert_ptr_null(fx_ev_wait(ch, 20));
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Largest FPDU accepted                                               */

static void send_once(struct pair *p, uint8_t *buf, struct iw_mr *cmr, struct iw_mr *smr, size_t len,
		      struct iw_wc *cwc, struct iw_wc *swc)
{
	struct fx_track tc, ts;

	fx_post_recv(&p->s, buf + MIB, 65536, smr, 0);
	fx_post_send(&p->c, IW_WR_SEND, buf, len, cmr, 0, 0, 0);
	fx_track_init(&tc, 1);
	fx_track_init(&ts, 1);
	ck_assert(fx_track_wait(&ts, p->s.cq, FX_WAIT_MS));
	ck_assert(fx_track_wait(&tc, p->c.cq, FX_WAIT_MS));
	cwc->status = tc.status[0];
	swc->status = ts.status[0];
}

START_TEST(test_max_ulpdu_rx)
{
	struct iw_conn_param cp = { .max_ulpdu = 1024 }, sp = { .max_ulpdu_rx = 1024 };
	struct pair p;
	uint8_t *buf = calloc(1, 2 * MIB);
	struct iw_mr *cmr, *smr;
	struct iw_wc cwc, swc;

	ck_assert_ptr_nonnull(buf);
	/* Out of range. */
	struct iw_conn_param bad = { .max_ulpdu_rx = 63 };
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	fx_loopback(AF_INET, &a);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &bad), -EINVAL);
	bad.max_ulpdu_rx = 65536;
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &bad), -EINVAL);
	fx_ep_fini(&e);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);

	/* A sender within the limit: fine. */
	pair_connect(&p, &cp, &sp);
	ck_assert_int_eq(iw_reg_mr(p.c.pd, buf, 2 * MIB, ACC_ALL, &cmr), 0);
	ck_assert_int_eq(iw_reg_mr(p.s.pd, buf, 2 * MIB, ACC_ALL, &smr), 0);
	send_once(&p, buf, cmr, smr, 8000, &cwc, &swc);
	ck_assert_int_eq(cwc.status, IW_WC_SUCCESS);
	ck_assert_int_eq(swc.status, IW_WC_SUCCESS);
	ck_assert_int_eq(iw_dereg_mr(cmr), 0);
	ck_assert_int_eq(iw_dereg_mr(smr), 0);
	pair_close(&p);

	/* A sender above it: the receiver terminates with (2,0,0x03). */
	cp.max_ulpdu = 2048;
	pair_connect(&p, &cp, &sp);
	ck_assert_int_eq(iw_reg_mr(p.c.pd, buf, 2 * MIB, ACC_ALL, &cmr), 0);
	ck_assert_int_eq(iw_reg_mr(p.s.pd, buf, 2 * MIB, ACC_ALL, &smr), 0);
	send_once(&p, buf, cmr, smr, 8000, &cwc, &swc);
	ck_assert_int_eq(swc.status, IW_WC_WR_FLUSH_ERR); /* MPA causes blame no WR */
	struct iw_term_cause want = IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_MARKER_LEN);
	struct iw_term_cause got = iw_qp_error(p.s.qp);
	ck_assert_int_eq(iw_qp_state(p.s.qp), IW_QPS_ERROR);
	ck_assert_uint_eq(got.layer, want.layer);
	ck_assert_uint_eq(got.etype, want.etype);
	ck_assert_uint_eq(got.ecode, want.ecode);
	struct iw_cm_event *ev = fx_ev_expect(p.sch, IW_CM_EVENT_DISCONNECTED);
	iw_cm_ack_event(ev);
	ev = fx_ev_expect(p.cch, IW_CM_EVENT_DISCONNECTED);
	iw_cm_ack_event(ev);
	/* The sender got our Terminate. */
	ck_assert_int_eq(iw_qp_state(p.c.qp), IW_QPS_ERROR);
	got = iw_qp_error(p.c.qp);
	ck_assert_uint_eq(got.layer, want.layer);
	ck_assert_uint_eq(got.ecode, want.ecode);
	ck_assert_int_eq(iw_dereg_mr(cmr), 0);
	ck_assert_int_eq(iw_dereg_mr(smr), 0);
	pair_free(&p);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------ */
/* IRD / ORD                                                           */

/* Count RDMA Read Requests in an FPDU stream with CRC, no markers. */
static int count_read_reqs(const uint8_t *s, size_t len)
{
	int n = 0;
	size_t off = 0;

	while (off + 4 <= len) {
		size_t ul = (size_t)s[off] << 8 | s[off + 1];
		size_t fl = (2 + ul + 3) / 4 * 4 + 4;
		if (off + fl > len || ul < 2)
			break;
		if ((s[off + 3] & 0x0F) == IW_OP_READ_REQ)
			n++;
		off += fl;
	}
	return n;
}

/* ORD: the peer's Reply grants IRD 2, so we keep at most 2 READs on the
 * wire whatever is posted; a Reply granting 0 makes READ posts fail. */
START_TEST(test_ord_enforced)
{
	enum { N = 6 };
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	static uint8_t buf[65536], stream[65536];
	struct iw_mr *mr;
	struct fx_track t;
	int lfd = fx_raw_listen(&a);

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	for (int grant = 2; grant >= 0; grant -= 2) {
		fx_ep_init(&e);
		ck_assert_int_eq(iw_reg_mr(e.pd, buf, sizeof(buf), ACC_ALL, &mr), 0);
		ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
		ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, NULL), 0);
		int fd = fx_raw_accept_reply(lfd, (uint16_t)grant, 16);
		struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_ESTABLISHED);
		ck_assert_uint_eq(ev->ord, (unsigned)grant);
		iw_cm_ack_event(ev);
		if (grant == 0) {
			struct iw_sge sge = { (uint64_t)(uintptr_t)buf, 64, iw_mr_stag(mr) };
			struct iw_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_READ,
						 .remote_addr = 0x1000, .rkey = 0x100 }, *bad;
			ck_assert_int_eq(iw_post_send(e.qp, &wr, &bad), -EINVAL);
			wr.opcode = IW_WR_RDMA_WRITE;
			ck_assert_int_eq(iw_post_send(e.qp, &wr, &bad), 0);
		} else {
			fx_track_init(&t, N);
			for (int i = 0; i < N; i++)
				fx_post_send(&e, IW_WR_RDMA_READ, buf, 4096, mr, 0x1000, 0x100, (uint64_t)i);
			size_t got = fx_raw_read(fd, stream, sizeof(stream), 300);
			ck_assert_int_eq(count_read_reqs(stream, got), 2);
			fx_track_poll(&t, e.cq);
			ck_assert_uint_eq(t.done, 0);
			fx_raw_rst(fd);
			fd = -1;
			ck_assert(fx_track_wait(&t, e.cq, FX_WAIT_MS));
			ck_assert_uint_eq(t.errors, N);
			fx_ev_expect_ack(ch, IW_CM_EVENT_DISCONNECTED);
		}
		if (fd >= 0)
			close(fd);
		ck_assert_int_eq(iw_destroy_qp(e.qp), 0);
		e.qp = NULL;
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
		fx_ep_fini(&e);
		struct iw_cm_event *left;
		while ((left = fx_ev_wait(ch, 20)))
			iw_cm_ack_event(left);
	}
	close(lfd);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* A Read Request FPDU (CRC on) for len bytes of (stag, to). */
static size_t read_req_fpdu(uint8_t *out, size_t cap, uint32_t msn, uint32_t src_stag, uint64_t src_to, uint32_t len)
{
	uint8_t hdr[18], body[28];
	size_t hl = iwt_ddp_untagged(hdr, iw_rdmap_ctrl(IW_OP_READ_REQ), 0, 1, msn, 0, true, 1);
	uint64_t sink_to = 0x10000;
	uint32_t sink_stag = 0x4242;

	for (int i = 0; i < 4; i++)
		body[i] = (uint8_t)(sink_stag >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		body[4 + i] = (uint8_t)(sink_to >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		body[12 + i] = (uint8_t)(len >> (24 - 8 * i));
	for (int i = 0; i < 4; i++)
		body[16 + i] = (uint8_t)(src_stag >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		body[20 + i] = (uint8_t)(src_to >> (56 - 8 * i));
	ssize_t n = iwt_fpdu_ref_encode(0, true, false, hdr, hl, body, sizeof(body), out, cap);
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* IRD: we accept 2 inbound READs at once. A peer that sends a third
 * before our responses went out gets a Terminate (RDMAP, remote
 * operation); two at a time are served. */
START_TEST(test_ird_enforced)
{
	struct iw_conn_param sp = { .ird = 2 };
	struct iw_cm_channel *ch;
	struct sockaddr_storage a;
	size_t len = 8 * MIB;
	uint8_t *buf = malloc(len), req[32], rep[32], f[3 * 64];
	struct iw_mr *mr;
	struct fx_ep e;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x33, len);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	struct iw_cm_id *l = fx_listen(ch, NULL, &a);
	for (int reqs = 2; reqs <= 3; reqs++) {
		fx_ep_init(&e);
		ck_assert_int_eq(iw_reg_mr(e.pd, buf, len, ACC_ALL, &mr), 0);
		int fd = fx_raw_connect(&a);
		size_t rl = iwt_mpa_req_bytes(0x50, 2, iwt_mpa_w1(false, false, 16), iwt_mpa_w2(false, false, 16),
					      NULL, 0, req);
		ck_assert_int_eq(send(fd, req, rl, 0), (ssize_t)rl);
		struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
		e.id = ev->id;
		iw_cm_ack_event(ev);
		ck_assert_int_eq(iw_cm_accept(e.id, e.qp, &sp), 0);
		ev = fx_ev_expect(ch, IW_CM_EVENT_ESTABLISHED);
		ck_assert_uint_eq(ev->ird, 2);
		iw_cm_ack_event(ev);
		ck_assert_uint_eq(fx_raw_read(fd, rep, 24, 200), 24);
		/* Responses of 8 MiB each: more than the socket buffers hold
		 * while the peer does not read, so none finishes. */
		size_t fl = 0;
		for (int i = 0; i < reqs; i++)
			fl += read_req_fpdu(f + fl, sizeof(f) - fl, (uint32_t)i + 1, iw_mr_stag(mr),
					    (uint64_t)(uintptr_t)buf, (uint32_t)len);
		ck_assert_int_eq(send(fd, f, fl, 0), (ssize_t)fl);
		fx_pump(300);
		if (reqs == 2) {
			ck_assert_int_eq(iw_qp_state(e.qp), IW_QPS_RTS);
			/* Both are served once the peer reads. */
			uint64_t got = 0, end = fx_now_ms() + FX_WAIT_MS;
			static uint8_t sink[MIB];
			while (got < 2 * len && fx_now_ms() < end) {
				fx_pump(1);
				ssize_t n;
				while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
					got += (uint64_t)n;
			}
			ck_assert_uint_ge(got, 2 * len);
			ck_assert_int_eq(iw_qp_state(e.qp), IW_QPS_RTS);
			fx_raw_rst(fd);
		} else {
			ck_assert_int_eq(iw_qp_state(e.qp), IW_QPS_ERROR);
			struct iw_term_cause c = iw_qp_error(e.qp);
			ck_assert_uint_eq(c.layer, IW_LAYER_RDMAP);
			ck_assert_uint_eq(c.etype, IW_ETYPE_RDMAP_REMOTE_OP);
			close(fd);
		}
		fx_ev_expect_ack(ch, IW_CM_EVENT_DISCONNECTED);
		ck_assert_int_eq(iw_destroy_qp(e.qp), 0);
		e.qp = NULL;
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
		fx_ep_fini(&e);
	}
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Pending connections per listener                                    */

/* Requests the application has not answered count against the backlog
 * like connections still in the MPA exchange. */
START_TEST(test_pending_limit)
{
	struct iw_listen_param lp = { .backlog = 2 };
	struct iw_cm_channel *sch, *cch;
	struct sockaddr_storage a;
	struct fx_ep c[3], s;
	struct iw_cm_id *req[2];
	struct iw_cm_event *ev;

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &cch), 0);
	struct iw_cm_id *l = fx_listen(sch, &lp, &a);
	for (int i = 0; i < 3; i++) {
		fx_ep_init(&c[i]);
		ck_assert_int_eq(iw_cm_create_id(cch, NULL, &c[i].id), 0);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(iw_cm_connect(c[i].id, c[i].qp, (struct sockaddr *)&a, NULL), 0);
		ev = fx_ev_expect(sch, IW_CM_EVENT_CONNECT_REQUEST);
		req[i] = ev->id;
		iw_cm_ack_event(ev);
	}
	ck_assert_int_eq(iw_cm_connect(c[2].id, c[2].qp, (struct sockaddr *)&a, NULL), 0);
	ev = fx_ev_expect(cch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_ptr_eq(ev->id, c[2].id);
	iw_cm_ack_event(ev);
	ck_assert_ptr_null(fx_ev_wait(sch, 50));

	/* One answered: room for one more. */
	ck_assert_int_eq(iw_cm_reject(req[0], NULL, 0), 0);
	ev = fx_ev_expect(cch, IW_CM_EVENT_REJECTED);
	ck_assert_ptr_eq(ev->id, c[0].id);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_destroy_id(c[2].id), 0);
	ck_assert_int_eq(iw_cm_create_id(cch, NULL, &c[2].id), 0);
	ck_assert_int_eq(iw_cm_connect(c[2].id, c[2].qp, (struct sockaddr *)&a, NULL), 0);
	ev = fx_ev_expect(sch, IW_CM_EVENT_CONNECT_REQUEST);
	fx_ep_init(&s);
	s.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(s.id, s.qp, NULL), 0);
	fx_ev_expect_ack(sch, IW_CM_EVENT_ESTABLISHED);
	fx_ev_expect_ack(cch, IW_CM_EVENT_ESTABLISHED);

	fx_ep_fini(&s);
	ck_assert_int_eq(iw_cm_destroy_id(req[0]), 0);
	ck_assert_int_eq(iw_cm_destroy_id(req[1]), 0);
	for (int i = 0; i < 3; i++)
		fx_ep_fini(&c[i]);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	while ((ev = fx_ev_wait(sch, 20)))
		iw_cm_ack_event(ev);
	while ((ev = fx_ev_wait(cch, 20)))
		iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_destroy_channel(sch), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(cch), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Receive-path memory                                                 */

/* Establishing a connection costs a fixed amount per side (printed; see
 * docs/limits.md); after that no traffic the peer sends - SENDs, WRITEs,
 * READ requests of any size - allocates anything. */
START_TEST(test_receive_memory)
{
	enum { OPS = 3000 };
	struct pair p;
	uint8_t *cbuf = calloc(1, 2 * MIB), *sbuf = calloc(1, 2 * MIB);
	struct iw_mr *cmr, *smr;
	uint64_t rng = iwt_seed();

	ck_assert(cbuf && sbuf);
	pair_connect(&p, NULL, NULL);
	long long h0 = heap_before_connect, h1 = fx_heap_bytes();
	ck_assert_int_eq(iw_reg_mr(p.c.pd, cbuf, 2 * MIB, ACC_ALL, &cmr), 0);
	ck_assert_int_eq(iw_reg_mr(p.s.pd, sbuf, 2 * MIB, ACC_ALL, &smr), 0);
	for (uint32_t i = 0; i < 256; i++)
		fx_post_recv(&p.s, sbuf + (size_t)(i % 16) * 65536, 65536, smr, i);
	/* Warm up: one of each. */
	fx_post_send(&p.c, IW_WR_SEND, cbuf, 100, cmr, 0, 0, 0);
	fx_post_send(&p.c, IW_WR_RDMA_WRITE, cbuf, 100, cmr, (uint64_t)(uintptr_t)sbuf, iw_mr_stag(smr), 1);
	fx_post_send(&p.c, IW_WR_RDMA_READ, cbuf + MIB, 100, cmr, (uint64_t)(uintptr_t)sbuf, iw_mr_stag(smr), 2);
	struct fx_track tc;
	fx_track_init(&tc, 3);
	ck_assert(fx_track_wait(&tc, p.c.cq, FX_WAIT_MS));
	ck_assert_uint_eq(tc.ok, 3);
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(p.s.cq, 1, &wc), 1);
	long long h2 = fx_heap_bytes();

	uint32_t sends = 0, posted = 0, recv_id = 256, done = 0;
	uint64_t end = fx_now_ms() + 30000;
	while (done < OPS && fx_now_ms() < end) {
		while (posted < OPS && posted - done < 64) {
			uint32_t kind = (uint32_t)iwt_rand_range(&rng, 0, 2);
			size_t len = (size_t)iwt_rand_range(&rng, 0, 65536);
			if (kind == 0) {
				fx_post_send(&p.c, IW_WR_SEND, cbuf, len, cmr, 0, 0, posted);
				sends++;
			} else {
				fx_post_send(&p.c, kind == 1 ? IW_WR_RDMA_WRITE : IW_WR_RDMA_READ, cbuf + (kind - 1) * MIB,
					     len, cmr, (uint64_t)(uintptr_t)sbuf + MIB, iw_mr_stag(smr), posted);
			}
			posted++;
		}
		fx_pump(1);
		struct iw_wc w[32];
		int k;
		while ((k = iw_poll_cq(p.c.cq, 32, w)) > 0) {
			for (int i = 0; i < k; i++)
				ck_assert_msg(w[i].status == IW_WC_SUCCESS, "%s", iw_wc_status_str(w[i].status));
			done += (uint32_t)k;
		}
		while ((k = iw_poll_cq(p.s.cq, 32, w)) > 0) {
			for (int i = 0; i < k; i++) {
				ck_assert_int_eq(w[i].status, IW_WC_SUCCESS);
				fx_post_recv(&p.s, sbuf + (size_t)(recv_id % 16) * 65536, 65536, smr, recv_id);
				recv_id++;
			}
		}
	}
	ck_assert_uint_eq(done, OPS);
	struct iw_qp_stats st;
	iw_qp_get_stats(p.s.qp, &st);
	long long h3 = fx_heap_bytes();
	fprintf(stderr,
		"receive memory: connection setup %lld bytes (both sides), warm-up %lld, then %u ops "
		"(%u SENDs), %llu bytes received by the responder: %+lld bytes\n",
		h1 - h0, h2 - h1, OPS, sends, (unsigned long long)st.bytes_rx, h3 - h2);
	ck_assert_int_eq(h3 - h2, 0);
	/* Documented bound per connection and side (docs/limits.md). */
	ck_assert_int_lt(h1 - h0, 2 * 96 * 1024);
	/* Posted receives hold smr until their QP is gone. */
	ck_assert_int_eq(iw_cm_disconnect(p.c.id), 0);
	fx_ev_expect_ack(p.cch, IW_CM_EVENT_DISCONNECTED);
	fx_ev_expect_ack(p.sch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_int_eq(iw_destroy_qp(p.s.qp), 0);
	p.s.qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(cmr), 0);
	ck_assert_int_eq(iw_dereg_mr(smr), 0);
	pair_free(&p);
	free(cbuf);
	free(sbuf);
}
END_TEST

static Suite *limits_suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("limits");

	tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_max_qp);
	tcase_add_test(tc, test_max_mr);
	tcase_add_test(tc, test_private_data_limits);
	tcase_add_test(tc, test_max_ulpdu_rx);
	tcase_add_test(tc, test_ord_enforced);
	tcase_add_test(tc, test_ird_enforced);
	tcase_add_test(tc, test_pending_limit);
	tcase_add_test(tc, test_receive_memory);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(limits_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
