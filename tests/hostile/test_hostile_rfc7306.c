/* Hostile peers and RFC 7306: a scripted peer that negotiated the
 * extensions (ASK bit in its MPA Request, our Reply ACKs) sends Atomic
 * Requests that are valid, unaligned, unregistered, read-only, without
 * the atomic right, malformed, out of order or replayed, unsolicited
 * Atomic Responses and bad Immediate Data; every bad one earns its exact
 * Terminate, changes no byte of our memory and leaves every WR completed
 * once. A peer that did not ask gets no ACK, our atomic posts fail at
 * once, and its RFC 7306 opcodes are unknown opcodes. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/iw_bytes.h"
#include "hp_env.h"
#include "iwt_check.h"
#include "mpa/mpa_wire.h"
#include "rdmap/rdmap_wire.h"

#define T(l, e, c) IW_TERM_CAUSE(l, e, c)

static struct hp_env E;
static struct iw_mr *amr; /* HP_MR_ALL's memory, registered again with REMOTE_ATOMIC */

static void up_flags(uint8_t flags)
{
	struct hp_mpa m = { .flags = flags, .rev = 2, .ird = 4, .ord = 4 };
	hp_env_init(&E);
	ck_assert_int_eq(iw_reg_mr(E.pd, hp_mr_ptr(&E, HP_MR_ALL), HP_MR_LEN,
				   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ |
					   IW_ACCESS_REMOTE_ATOMIC,
				   &amr),
			 0);
	hp_env_peer_initiates(&E, &m, NULL);
}

/* C, enhanced and the RFC 7306 ASK bit: our Reply must ACK. */
static void up(void)
{
	up_flags(0x50 | IW_MPA_FLAG_RFC7306_ASK);
	ck_assert_uint_eq(E.peer->frame[16] & 0x0F, IW_MPA_FLAG_RFC7306_ACK);
	ck_assert(iw_qp_rfc7306(E.qp));
}

static void down(void)
{
	ck_assert_int_eq(iw_dereg_mr(amr), 0);
	hp_env_fini(&E);
}

static uint64_t atomic_to(int off)
{
	return hp_mr_to(&E, HP_MR_ALL) + (uint64_t)off;
}

/* Header (18 bytes) + body of an Atomic Request. */
static size_t atomic_req(uint8_t *h, uint8_t *body, uint32_t msn, uint8_t aop, uint32_t stag, uint64_t to,
			 uint64_t add_swap, uint64_t compare)
{
	struct iw_rdmap_atomic_req r = { .op = aop,
					 .req_id = 0x7000 + msn,
					 .stag = stag,
					 .to = to,
					 .add_swap = add_swap,
					 .add_swap_mask = aop == IW_ATOMIC_CMP_SWAP ? UINT64_MAX : 0,
					 .compare = compare,
					 .compare_mask = UINT64_MAX };
	iw_rdmap_atomic_req_encode(&r, body);
	return hp_hdr_untagged(h, IW_OP_ATOMIC_REQ, IW_DDP_QN_READ_REQ, msn, 0, true, 0);
}

/* A valid FetchAdd then CmpSwap: answered on QN 3 in order, applied once. */
static void good_atomics(void)
{
	uint8_t h[18], body[IW_RDMAP_ATOMIC_REQ_LEN];
	struct hp_fpdu f;
	uint64_t *word = (uint64_t *)(void *)(hp_mr_ptr(&E, HP_MR_ALL) + 64), before = *word;

	atomic_req(h, body, 1, IW_ATOMIC_FETCH_ADD, iw_mr_stag(amr), atomic_to(64), 10, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	atomic_req(h, body, 2, IW_ATOMIC_CMP_SWAP, iw_mr_stag(amr), atomic_to(64), 0x0123456789ABCDEFULL,
		   before + 10);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	for (uint32_t i = 1; i <= 2; i++) {
		ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
		ck_assert(!f.tagged && f.last);
		ck_assert_uint_eq(f.opcode, IW_OP_ATOMIC_RESP);
		ck_assert_uint_eq(f.qn, IW_RDMAP_QN_ATOMIC_RESP);
		ck_assert_uint_eq(f.msn, i);
		ck_assert_uint_eq(f.payload_len, IW_RDMAP_ATOMIC_RESP_LEN);
		struct iw_rdmap_atomic_resp r;
		iw_rdmap_atomic_resp_decode(f.payload, &r);
		ck_assert_uint_eq(r.req_id, 0x7000 + i);
		ck_assert_uint_eq(r.orig, i == 1 ? before : before + 10);
	}
	uint64_t now = 0x0123456789ABCDEFULL;
	ck_assert_uint_eq(*word, now);
	hp_env_allow(&E, (uint8_t *)word, &now, sizeof(now));
	E.peer->rreq_msn = 3;
}

START_TEST(test_atomic_ok_then_violation)
{
	up();
	good_atomics();
	uint8_t h[18];
	hp_hdr_untagged(h, IW_OP_SEND, 0, 7, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "x", 1), 0);
	hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
	down();
}
END_TEST

/* Each bad request: the Terminate, and no byte changed. */
START_TEST(test_atomic_refused)
{
	uint8_t h[18], body[IW_RDMAP_ATOMIC_REQ_LEN + 8];
	up();
	struct {
		uint32_t stag;
		uint64_t to;
		uint8_t aop;
		struct iw_term_cause want;
	} c[] = {
		{ iw_mr_stag(amr), atomic_to(4), IW_ATOMIC_FETCH_ADD, T(0, 1, 0x01) },      /* unaligned */
		{ iw_mr_stag(amr), atomic_to(HP_MR_LEN), IW_ATOMIC_FETCH_ADD, T(0, 1, 0x01) }, /* past the end */
		{ 0x7777700u, atomic_to(0), IW_ATOMIC_CMP_SWAP, T(0, 1, 0x00) },             /* unregistered */
		{ hp_mr_stag(&E, HP_MR_R), hp_mr_to(&E, HP_MR_R), IW_ATOMIC_FETCH_ADD, T(0, 1, 0x02) }, /* read-only */
		{ hp_mr_stag(&E, HP_MR_ALL), atomic_to(0), IW_ATOMIC_FETCH_ADD, T(0, 1, 0x02) }, /* no atomic right */
		{ iw_mr_stag(amr), atomic_to(0), 1, T(0, 2, 0xFF) },                        /* unknown AOpCode */
		{ iw_mr_stag(amr), UINT64_MAX - 3, IW_ATOMIC_FETCH_ADD, T(0, 1, 0x04) },     /* TO wrap */
	};
	int i = _i;
	memset(body, 0, sizeof(body));
	atomic_req(h, body, 1, c[i].aop, c[i].stag, c[i].to, 1, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, IW_RDMAP_ATOMIC_REQ_LEN), 0);
	hp_env_expect_term(&E, c[i].want, h, sizeof(h));
	down();
}
END_TEST

/* Malformed: too long for its body, on the Send queue, a replayed MSN
 * after a good request (applied once), an MSN from the future. */
START_TEST(test_atomic_malformed)
{
	uint8_t h[18], body[IW_RDMAP_ATOMIC_REQ_LEN + 8];
	up();
	memset(body, 0, sizeof(body));
	switch (_i) {
	case 0:
		atomic_req(h, body, 1, IW_ATOMIC_FETCH_ADD, iw_mr_stag(amr), atomic_to(0), 1, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, IW_RDMAP_ATOMIC_REQ_LEN + 8), 0);
		hp_env_expect_term(&E, T(1, 2, 0x05), h, sizeof(h));
		break;
	case 1:
		atomic_req(h, body, 1, IW_ATOMIC_FETCH_ADD, iw_mr_stag(amr), atomic_to(0), 1, 0);
		iw_put_be32(h + 6, IW_DDP_QN_SEND);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, IW_RDMAP_ATOMIC_REQ_LEN), 0);
		hp_env_expect_term(&E, T(1, 2, 0x01), h, sizeof(h));
		break;
	case 2:
		good_atomics();
		atomic_req(h, body, 2, IW_ATOMIC_FETCH_ADD, iw_mr_stag(amr), atomic_to(64), 1, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, IW_RDMAP_ATOMIC_REQ_LEN), 0);
		hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
		break;
	case 3:
		atomic_req(h, body, 2, IW_ATOMIC_FETCH_ADD, iw_mr_stag(amr), atomic_to(0), 1, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, IW_RDMAP_ATOMIC_REQ_LEN), 0);
		hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
		break;
	}
	down();
}
END_TEST

/* An Atomic Response nobody asked for; one where a Read Response is due
 * (our READ outstanding): unexpected opcode. */
START_TEST(test_atomic_response_unexpected)
{
	uint8_t h[18], resp[IW_RDMAP_ATOMIC_RESP_LEN] = { 0 };
	up();
	if (_i)
		hp_env_post_read(&E, 1, 0x1234500u, 0x1000, 64);
	hp_hdr_untagged(h, IW_OP_ATOMIC_RESP, IW_RDMAP_QN_ATOMIC_RESP, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), resp, sizeof(resp)), 0);
	hp_env_expect_term(&E, T(0, 2, 0x06), h, sizeof(h));
	down();
}
END_TEST

/* Immediate Data consumes a receive and completes it with the value;
 * a too long one is DDP's message-too-long. */
START_TEST(test_immediate)
{
	uint8_t h[18], imm[16] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	up();
	hp_hdr_untagged(h, IW_OP_IMM_DATA_SE, IW_DDP_QN_SEND, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), imm, 8), 0);
	struct iw_wc wc;
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n = 0;
	while (n == 0 && hp_now_ms() < end)
		n = iw_poll_cq(E.cq, 1, &wc);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IW_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.flags, IW_WC_WITH_IMM | IW_WC_SOLICITED);
	ck_assert_uint_eq(wc.imm_data, 0x0102030405060708ULL);
	ck_assert_uint_eq(wc.byte_len, 0);
	/* Account for it as hp_env would: the head receive, completed once. */
	int k = 0;
	while (k < E.n_wr && E.wr_id[k] != wc.wr_id)
		k++;
	ck_assert_int_lt(k, E.n_wr);
	ck_assert_int_eq(E.ndone[k], 0);
	E.ndone[k] = 1;
	E.status[k] = wc.status;
	hp_hdr_untagged(h, IW_OP_IMM_DATA, IW_DDP_QN_SEND, 2, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), imm, 16), 0);
	hp_env_expect_term(&E, T(1, 2, 0x05), h, sizeof(h));
	down();
}
END_TEST

/* A peer that did not ask: no ACK, our RFC 7306 posts fail at once (the
 * QP goes on), and its Atomic Request is an unknown opcode. */
START_TEST(test_peer_without_rfc7306)
{
	uint8_t h[18], body[IW_RDMAP_ATOMIC_REQ_LEN];
	up_flags(0x50);
	ck_assert_uint_eq(E.peer->frame[16] & 0x0F, 0);
	ck_assert(!iw_qp_rfc7306(E.qp));
	uint64_t *res = (uint64_t *)(void *)hp_mr_ptr(&E, HP_MR_LW);
	struct iw_sge sg = { (uint64_t)(uintptr_t)res, 8, hp_mr_stag(&E, HP_MR_LW) };
	struct iw_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IW_WR_ATOMIC_FETCH_AND_ADD,
				.send_flags = IW_SEND_SIGNALED, .remote_addr = 0x1000, .rkey = 0x100 }, *bad = NULL;
	ck_assert_int_eq(iw_post_send(E.qp, &w, &bad), -EOPNOTSUPP);
	ck_assert_ptr_eq(bad, &w);
	w.opcode = IW_WR_RDMA_WRITE_WITH_IMM;
	ck_assert_int_eq(iw_post_send(E.qp, &w, &bad), -EOPNOTSUPP);
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_RTS);
	atomic_req(h, body, 1, IW_ATOMIC_FETCH_ADD, iw_mr_stag(amr), atomic_to(0), 1, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	hp_env_expect_term(&E, T(0, 2, 0x06), h, sizeof(h));
	down();
}
END_TEST

/* A peer that ACKed RFC 7306 but Terminates our Atomic Request (or the
 * Immediate Data of a Write with Immediate) as an unknown opcode: that WR
 * completes with IW_WC_REM_INV_REQ_ERR and the peer's cause, the rest is
 * flushed, nothing is answered. */
START_TEST(test_peer_terminates_unknown_opcode)
{
	struct iw_term_cause c = T(0, 2, 0x06);
	struct hp_fpdu f;
	up();
	uint8_t *res = hp_mr_ptr(&E, HP_MR_LW);
	struct iw_sge sg = { (uint64_t)(uintptr_t)res, 8, hp_mr_stag(&E, HP_MR_LW) };
	struct iw_send_wr w = { .wr_id = 50, .sg_list = &sg, .num_sge = _i ? 0 : 1,
				.opcode = _i ? IW_WR_RDMA_WRITE_WITH_IMM : IW_WR_ATOMIC_FETCH_AND_ADD,
				.send_flags = IW_SEND_SIGNALED, .remote_addr = 0x1000, .rkey = 0x100, .compare_add = 1 },
			   *bad = NULL;
	ck_assert_int_eq(iw_post_send(E.qp, &w, &bad), 0);
	hp_env_track(&E, 50, _i); /* the Write with Immediate may complete first: the transport took it */
	hp_env_post_send(&E, 51, 16, true); /* may leave before the Terminate comes */
	/* We are the responder: nothing leaves before the peer's first FPDU
	 * (a zero-length WRITE, touching no memory). */
	uint8_t z[IW_DDP_TAGGED_HDR_LEN];
	hp_hdr_tagged(z, IW_OP_WRITE, 0, 0, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, z, sizeof(z), NULL, 0), 0);
	uint8_t want_op = _i ? IW_OP_IMM_DATA : IW_OP_ATOMIC_REQ;
	do
		ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	while (f.opcode != want_op);
	/* The Terminate copies the offending header, as siw's does. */
	struct iw_rdmap_term t;
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], body[IW_RDMAP_TERM_MAX_LEN];
	iw_rdmap_term_prepare(&t, c, f.hdr, f.hdr_len, f.ulpdu_len);
	size_t n = iw_rdmap_term_encode(&t, body);
	hp_hdr_untagged(h, IW_OP_TERMINATE, IW_DDP_QN_TERMINATE, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, n), 0);
	int r;
	while ((r = hp_recv_fpdu(E.peer, HP_WAIT_MS, &f)) == 1)
		ck_assert_msg(f.tagged || f.opcode != IW_OP_TERMINATE, "a Terminate answered a Terminate");
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	ck_assert(iw_term_cause_eq(iw_qp_error(E.qp), c));
	hp_env_drain(&E, &c);
	int k = 0;
	while (k < E.n_wr && E.wr_id[k] != 50)
		k++;
	ck_assert_int_lt(k, E.n_wr);
	if (!_i)
		ck_assert_int_eq(E.status[k], IW_WC_REM_INV_REQ_ERR);
	else /* completed when the transport took it, or refused */
		ck_assert(E.status[k] == IW_WC_SUCCESS || E.status[k] == IW_WC_REM_INV_REQ_ERR);
	hp_env_check_guards(&E);
	down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rfc7306");
	TCase *tc = tcase_create("rfc7306");
	tcase_add_test(tc, test_atomic_ok_then_violation);
	tcase_add_loop_test(tc, test_atomic_refused, 0, 7);
	tcase_add_loop_test(tc, test_atomic_malformed, 0, 4);
	tcase_add_loop_test(tc, test_atomic_response_unexpected, 0, 2);
	tcase_add_test(tc, test_immediate);
	tcase_add_test(tc, test_peer_without_rfc7306);
	tcase_add_loop_test(tc, test_peer_terminates_unknown_opcode, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
