/* Hostile peer, timing: a valid stream delivered one byte per write
 * (slowloris) must still work in every framing; a stream that stalls in
 * the middle of an FPDU must not hang anything: our side keeps sending
 * and serving the application meanwhile, finishes the message when the
 * bytes come, and reports a lost stream when the peer closes instead. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hp_env.h"
#include "iwt_check.h"
#include "iwt_handshake.h"
#include "rdmap/rdmap_wire.h"

static struct hp_env E;

#define T(l, e, c) IW_TERM_CAUSE((l), (e), (c))
#define GAP_US 100

static struct iw_wc wait_wc(int ms)
{
	struct iw_wc wc;
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(500);
	ck_assert_msg(n == 1, "no completion within %d ms", ms);
	return wc;
}

/* Framing per _i: bit 0 markers, bit 1 CRC off. The whole handshake and
 * a SEND, a 700-byte WRITE (past a marker boundary) and a Read Request,
 * one byte per write. */
START_TEST(test_slowloris_valid)
{
	bool markers = _i & 1, crc = !(_i & 2);
	static uint8_t pd[100];
	struct hp_mpa m = { .flags = (uint8_t)((markers ? 0x80 : 0) | (crc ? 0x40 : 0) | 0x10), .rev = 2,
			    .ird = 4, .ord = 4, .pdata = pd, .pdata_len = sizeof(pd) };
	struct iw_conn_param ap = { .markers = markers, .crc = crc ? IW_CRC_ON : IW_CRC_OFF };
	struct sockaddr_storage ss;
	uint8_t *buf = malloc(4096), h[18], w[700], body[28];
	ck_assert_ptr_nonnull(buf);

	memset(pd, 0x2D, sizeof(pd));
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = (uint8_t)(i * 3 + 1);
	hp_env_init(&E);
	ck_assert_int_eq(iw_cm_create_id(E.ch, &E, &E.listen), 0);
	{
		struct sockaddr_storage any;
		memset(&any, 0, sizeof(any));
		((struct sockaddr_in *)&any)->sin_family = AF_INET;
		((struct sockaddr_in *)&any)->sin_addr.s_addr = htonl(0x7F000001);
		ck_assert_int_eq(iw_cm_listen(E.listen, (struct sockaddr *)&any, 4), 0);
	}
	ck_assert_int_eq(iw_cm_local_addr(E.listen, &ss), 0);
	ck_assert_int_eq(hp_connect(E.peer, &ss, 0), 0);

	/* The Request, byte by byte. */
	size_t n = iwt_mpa_req_bytes(m.flags, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), pd,
				     sizeof(pd), buf);
	ck_assert_int_eq(hp_send_slow(E.peer, buf, n, 1, GAP_US, 4000), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_CONNECT_REQUEST, HP_WAIT_MS);
	ck_assert_uint_eq(ev->private_data_len, sizeof(pd));
	E.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(E.id, E.qp, &ap), 0);
	ck_assert_int_eq(hp_read_reply(E.peer, markers, HP_WAIT_MS), 0);
	ck_assert_int_eq(E.peer->crc, crc);
	ck_assert_int_eq(E.peer->markers_tx, markers);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));

	/* SEND, WRITE, Read Request: one stream, one byte per write. */
	size_t len = 0;
	ssize_t k;
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	k = hp_build(E.peer, h, 18, "slow but valid", 14, buf, 4096);
	ck_assert_int_gt(k, 0);
	len += (size_t)k;
	hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W) + 10, true);
	k = hp_build(E.peer, h, 14, w, sizeof(w), buf + len, 4096 - len);
	ck_assert_int_gt(k, 0);
	len += (size_t)k;
	struct iw_rdmap_read_req rr = { 0x4400u, 0x10, 300, hp_mr_stag(&E, HP_MR_R), hp_mr_to(&E, HP_MR_R) + 5 };
	iw_rdmap_read_req_encode(&rr, body);
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, 1, 0, true, 0);
	k = hp_build(E.peer, h, 18, body, sizeof(body), buf + len, 4096 - len);
	ck_assert_int_gt(k, 0);
	len += (size_t)k;
	ck_assert_int_eq(hp_send_slow(E.peer, buf, len, 1, GAP_US, 10000), 0);

	struct iw_wc wc = wait_wc(HP_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1000);
	ck_assert_uint_eq(wc.byte_len, 14);
	E.ndone[0] = 1;
	hp_env_allow(&E, E.arena + E.recv_off, "slow but valid", 14);
	struct hp_fpdu f;
	size_t got = 0;
	while (got < rr.size) {
		ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
		ck_assert(f.tagged);
		ck_assert_uint_eq(f.opcode, IW_OP_READ_RESP);
		ck_assert_uint_eq(f.to, rr.sink_to + got);
		ck_assert_mem_eq(f.payload, hp_mr_ptr(&E, HP_MR_R) + 5 + got, f.payload_len);
		got += f.payload_len;
	}
	ck_assert_uint_eq(got, rr.size);
	ck_assert(f.last);
	/* The WRITE came before the Read Request, so it is placed by now. */
	hp_env_allow(&E, hp_mr_ptr(&E, HP_MR_W) + 10, w, sizeof(w));
	hp_env_check_guards(&E);
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_RTS);
	free(buf);
	hp_env_fini(&E);
}
END_TEST

/* Stall inside an FPDU for 1.5 s: meanwhile our side sends (a SEND of
 * ours reaches the peer), the context serves other calls, the QP stays
 * in RTS. Then: _i == 0 the rest arrives and the message completes;
 * _i == 1 the peer closes and the stream is reported lost. */
START_TEST(test_stall_mid_fpdu)
{
	struct hp_mpa m = { HP_MPA_DEFAULT };
	uint8_t h[18], buf[512], msg[200];
	struct hp_fpdu f;

	memset(msg, 0x71, sizeof(msg));
	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, NULL);
	/* A first whole SEND (our responder side may send after it). */
	ck_assert_int_eq(hp_send_send(E.peer, "first", 5), 0);
	struct iw_wc wc = wait_wc(HP_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	E.ndone[0] = 1;
	hp_env_allow(&E, E.arena + E.recv_off, "first", 5);

	hp_hdr_untagged(h, IW_OP_SEND, 0, 2, 0, true, 0);
	ssize_t n = hp_build(E.peer, h, sizeof(h), msg, sizeof(msg), buf, sizeof(buf));
	ck_assert_int_gt(n, 100);
	ck_assert_int_eq(hp_send_raw(E.peer, buf, 100, 2000), 0);

	uint64_t t0 = hp_now_ms();
	/* Our transmit path works while the receive path waits. */
	memcpy(E.arena + E.sink_off, "ours", 4);
	memcpy(E.shadow + E.sink_off, "ours", 4);
	hp_env_post_send(&E, 1, 4, true);
	ck_assert_int_eq(hp_recv_fpdu(E.peer, 1000, &f), 1);
	ck_assert_uint_eq(f.opcode, IW_OP_SEND);
	ck_assert_mem_eq(f.payload, "ours", 4);
	wc = wait_wc(1000);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	E.ndone[E.n_wr - 1] = 1;
	/* Other calls on the context are served at once. */
	for (int i = 0; i < 20; i++) {
		struct iw_pd *pd;
		uint64_t a = hp_now_ms();
		ck_assert_int_eq(iw_alloc_pd(E.ctx, &pd), 0);
		ck_assert_int_eq(iw_dealloc_pd(pd), 0);
		ck_assert_uint_lt(hp_now_ms() - a, 500); /* a lock wait, not the stall (load: 2 shared cores) */
		ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_RTS);
		usleep(50000);
	}
	ck_assert_uint_ge(hp_now_ms() - t0, 1000);
	ck_assert_int_eq(iw_poll_cq(E.cq, 1, &wc), 0); /* the stalled message is not complete */

	if (_i == 0) {
		ck_assert_int_eq(hp_send_raw(E.peer, buf + 100, (size_t)n - 100, 2000), 0);
		wc = wait_wc(HP_WAIT_MS);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 1001);
		ck_assert_uint_eq(wc.byte_len, sizeof(msg));
		E.ndone[1] = 1;
		hp_env_allow(&E, E.arena + E.recv_off + HP_RECV_LEN, msg, sizeof(msg));
		hp_env_check_guards(&E);
		ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_RTS);
	} else {
		ck_assert_int_eq(shutdown(E.peer->fd, SHUT_WR), 0);
		ck_assert_int_eq(hp_wait_closed(E.peer, HP_WAIT_MS), 0);
		iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
		ck_assert(iw_term_cause_eq(iw_qp_error(E.qp), T(2, 0, 0x01)));
		hp_env_drain(&E, NULL);
		hp_env_allow_either(&E, E.arena + E.recv_off + HP_RECV_LEN, msg, 100 - 2 - sizeof(h));
		hp_env_check_guards(&E);
	}
	hp_env_fini(&E);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_slow");
	TCase *tc = tcase_create("slow");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_slowloris_valid, 0, 4);
	tcase_add_loop_test(tc, test_stall_mid_fpdu, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
