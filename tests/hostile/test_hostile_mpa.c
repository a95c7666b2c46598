/* Hostile peer, MPA handshake: private data at and beyond the 512-byte
 * limit, bad keys, revisions and reserved bits, truncated frames, in both
 * directions. A frame we cannot accept is refused cleanly: the connection
 * is closed promptly (well before the 5 s request timeout), the
 * application is told what it needs to know (nothing for a listener's
 * refused request, CONNECT_ERROR or REJECTED for our connect), and the
 * listener keeps working. */
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
static uint8_t pdata[1024];

static void fill_pdata(void)
{
	for (size_t i = 0; i < sizeof(pdata); i++)
		pdata[i] = (uint8_t)(i * 13 + 7);
}

/* Our listener; returns its address. */
static void listen_here(struct sockaddr_storage *ss)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(iw_cm_create_id(E.ch, &E, &E.listen), 0);
	ck_assert_int_eq(iw_cm_listen(E.listen, (struct sockaddr *)&a, 4), 0);
	ck_assert_int_eq(iw_cm_local_addr(E.listen, ss), 0);
}

/* No CM event arrives for ms. */
static void no_event(int ms)
{
	struct iw_cm_event *ev;
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	while (hp_now_ms() < end) {
		if (iw_cm_get_event(E.ch, &ev) == 0)
			ck_abort_msg("unexpected CM event %d (status %d)", ev->type, ev->status);
		usleep(2000);
	}
}

/* After a refused request the listener still accepts a valid one and the
 * connection carries a SEND. */
static void listener_still_works(const struct sockaddr_storage *ss)
{
	struct hp_peer *p = hp_peer_new();
	struct hp_mpa m = { HP_MPA_DEFAULT };
	struct iw_wc wc;

	ck_assert_int_eq(hp_connect(p, ss, 0), 0);
	ck_assert_int_eq(hp_send_request(p, &m), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_CONNECT_REQUEST, HP_WAIT_MS);
	E.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(E.id, E.qp, NULL), 0);
	ck_assert_int_eq(hp_read_reply(p, false, HP_WAIT_MS), 0);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));
	ck_assert_int_eq(hp_send_send(p, "still here", 10), 0);
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1000);
	ck_assert_mem_eq(E.arena + E.recv_off, "still here", 10);
	hp_peer_free(p);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
}

/* A raw Request (any bytes) that our listener must refuse. */
static void refused_request(const uint8_t *frame, size_t len, bool then_close)
{
	struct sockaddr_storage ss;
	hp_env_init(&E);
	listen_here(&ss);
	ck_assert_int_eq(hp_connect(E.peer, &ss, 0), 0);
	ck_assert_int_eq(hp_send_raw(E.peer, frame, len, 2000), 0);
	if (then_close)
		ck_assert_int_eq(shutdown(E.peer->fd, SHUT_WR), 0);
	uint64_t t0 = hp_now_ms();
	ck_assert_msg(hp_wait_closed(E.peer, 4000) == 0, "the refused connection stayed open");
	ck_assert_uint_lt(hp_now_ms() - t0, 3000); /* refused, not timed out */
	no_event(100);
	listener_still_works(&ss);
	hp_env_fini(&E);
}

/* ------------------------------------------------------------------ */
/* The peer initiates                                                  */

/* PD_Length exactly 512: rev 2 (4 enhanced bytes + 508) and rev 1 (512). */
START_TEST(test_request_pdata_512)
{
	struct sockaddr_storage ss;
	bool rev1 = _i;
	size_t app = rev1 ? 512 : 508;
	struct hp_mpa m = { .flags = (uint8_t)(rev1 ? 0x40 : 0x50), .rev = (uint8_t)(rev1 ? 1 : 2), .ird = 4,
			    .ord = 4, .pdata = pdata, .pdata_len = app };
	fill_pdata();
	hp_env_init(&E);
	listen_here(&ss);
	ck_assert_int_eq(hp_connect(E.peer, &ss, 0), 0);
	ck_assert_int_eq(hp_send_request(E.peer, &m), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_CONNECT_REQUEST, HP_WAIT_MS);
	ck_assert_uint_eq(ev->private_data_len, app);
	ck_assert_mem_eq(ev->private_data, pdata, app);
	ck_assert_uint_eq(ev->mpa_rev, rev1 ? 1 : 2);
	E.id = ev->id;
	iw_cm_ack_event(ev);
	/* Our Reply at the limit too (rev 1: 512 bytes fit, no enhanced words). */
	struct iw_conn_param ap = { .private_data = pdata + 1, .private_data_len = (uint16_t)app,
				    .mpa_rev = (uint8_t)(rev1 ? 1 : 0) };
	ck_assert_int_eq(iw_cm_accept(E.id, E.qp, &ap), 0);
	ck_assert_int_eq(hp_read_reply(E.peer, false, HP_WAIT_MS), 0);
	ck_assert_uint_eq(E.peer->frame_len, 20 + 512);
	ck_assert_mem_eq(E.peer->frame + 20 + (rev1 ? 0 : 4), pdata + 1, app);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));
	hp_env_fini(&E);
}
END_TEST

/* PD_Length 513 with 513 bytes, and 0xFFFF with 600 bytes. */
START_TEST(test_request_pdata_over)
{
	uint8_t *f = malloc(20 + 1024);
	uint16_t pdl = _i ? 0xFFFF : 513;
	size_t body = _i ? 600 : 513;
	fill_pdata();
	size_t n = iwt_mpa_raw_bytes("MPA ID Req Frame", 0x50, 2, pdl, pdata, body, f);
	refused_request(f, n, false);
	free(f);
}
END_TEST

/* Keys: one byte off, the Reply key, all zeros. */
START_TEST(test_request_bad_key)
{
	static const char *keys[] = { "MPA ID Req Fram3", "MPA ID Rep Frame", "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0" };
	uint8_t f[64];
	struct hp_mpa m = { HP_MPA_DEFAULT };
	size_t n = iwt_mpa_req_bytes(m.flags, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL, 0, f);
	memcpy(f, keys[_i], 16);
	refused_request(f, n, false);
}
END_TEST

/* Rev 2 with the enhanced bit but PD_Length 2: too short for the two
 * RFC 6581 words. */
START_TEST(test_request_enhanced_short)
{
	uint8_t f[64], body[2] = { 0, 1 };
	size_t n = iwt_mpa_raw_bytes("MPA ID Req Frame", 0x50, 2, 2, body, 2, f);
	refused_request(f, n, false);
}
END_TEST

/* Revisions 0, 3 and 255 (RFC 5044 sec. 7.1: a receiver that cannot
 * interoperate with the revision closes the connection). */
START_TEST(test_request_bad_rev)
{
	static const uint8_t revs[] = { 0, 3, 255 };
	uint8_t f[64];
	size_t n = iwt_mpa_req_bytes(0x50, revs[_i], iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL,
				     0, f);
	refused_request(f, n, false);
}
END_TEST

/* A Request cut short (inside the key, the header, the private data),
 * then the peer's FIN. */
START_TEST(test_request_truncated)
{
	static const size_t cut[] = { 5, 19, 30 };
	uint8_t f[128];
	struct hp_mpa m = { HP_MPA_DEFAULT };
	fill_pdata();
	size_t n = iwt_mpa_req_bytes(m.flags, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), pdata, 40,
				     f);
	ck_assert_uint_gt(n, cut[_i]);
	refused_request(f, cut[_i], true);
}
END_TEST

/* Reserved flag bits set (rev 2: 0x0F; rev 1: 0x1F). RFC 5044 sec. 7.1:
 * Res bits are sent as zero and not checked on receipt: the Request is
 * accepted, and our Reply carries zero reserved bits but the RFC 7306
 * ACK (0x04), the answer to the ASK bit (0x08) among them. */
START_TEST(test_request_reserved_bits)
{
	struct sockaddr_storage ss;
	bool rev1 = _i;
	struct hp_mpa m = { .flags = (uint8_t)(rev1 ? 0x40 | 0x1F : 0x50 | 0x0F), .rev = (uint8_t)(rev1 ? 1 : 2),
			    .ird = 4, .ord = 4 };
	hp_env_init(&E);
	listen_here(&ss);
	ck_assert_int_eq(hp_connect(E.peer, &ss, 0), 0);
	ck_assert_int_eq(hp_send_request(E.peer, &m), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_CONNECT_REQUEST, HP_WAIT_MS);
	ck_assert_uint_eq(ev->mpa_rev, rev1 ? 1 : 2);
	ck_assert(ev->crc);
	E.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(E.id, E.qp, NULL), 0);
	ck_assert_int_eq(hp_read_reply(E.peer, false, HP_WAIT_MS), 0);
	ck_assert_uint_eq(E.peer->frame[16] & (rev1 ? 0x1F : 0x0F), IW_MPA_FLAG_RFC7306_ACK);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));
	/* The connection works. */
	ck_assert_int_eq(hp_send_send(E.peer, "ok", 2), 0);
	struct iw_wc wc;
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	hp_env_fini(&E);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The peer responds to our connect                                    */

/* Connect toward the peer and read our Request there. */
static void connect_to_peer(const struct iw_conn_param *cp)
{
	struct sockaddr_storage ss;
	E.lfd = hp_listen(&ss);
	ck_assert_int_ge(E.lfd, 0);
	ck_assert_int_eq(iw_cm_create_id(E.ch, &E, &E.id), 0);
	ck_assert_int_eq(iw_cm_connect(E.id, E.qp, (struct sockaddr *)&ss, cp), 0);
	ck_assert_int_eq(hp_accept(E.peer, E.lfd, HP_WAIT_MS, 0), 0);
	uint8_t req[24];
	ck_assert_int_eq(hp_recv_exact(E.peer, req, sizeof(req), HP_WAIT_MS), 0);
	ck_assert_mem_eq(req, "MPA ID Req Frame", 16);
}

/* A Reply our connect must fail on: CONNECT_ERROR, the socket closed. */
static void bad_reply(const uint8_t *frame, size_t len, bool then_close)
{
	hp_env_init(&E);
	connect_to_peer(NULL);
	ck_assert_int_eq(hp_send_raw(E.peer, frame, len, 2000), 0);
	if (then_close)
		ck_assert_int_eq(shutdown(E.peer->fd, SHUT_WR), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_CONNECT_ERROR, 3000);
	ck_assert_int_lt(ev->status, 0);
	iw_cm_ack_event(ev);
	ck_assert_msg(hp_wait_closed(E.peer, 3000) == 0, "our side kept the failed connection open");
	ck_assert_int_ne(iw_qp_state(E.qp), IW_QPS_RTS);
	no_event(100);
	hp_env_fini(&E);
}

START_TEST(test_reply_bad_key)
{
	uint8_t f[64];
	size_t n = iwt_mpa_rep_bytes(0x50, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL, 0, f);
	memcpy(f, _i ? "MPA ID Req Frame" : "MPA ID Rep Fram_", 16);
	bad_reply(f, n, false);
}
END_TEST

START_TEST(test_reply_bad_rev)
{
	static const uint8_t revs[] = { 0, 3, 255 };
	uint8_t f[64];
	size_t n = iwt_mpa_rep_bytes(0x50, revs[_i], iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL,
				     0, f);
	bad_reply(f, n, false);
}
END_TEST

START_TEST(test_reply_pdata_over)
{
	uint8_t *f = malloc(20 + 1024);
	fill_pdata();
	size_t n = iwt_mpa_raw_bytes("MPA ID Rep Frame", 0x50, 2, _i ? 0xFFFF : 513, pdata, _i ? 600 : 513, f);
	bad_reply(f, n, false);
	free(f);
}
END_TEST

START_TEST(test_reply_truncated)
{
	static const size_t cut[] = { 3, 19, 22 };
	uint8_t f[64];
	size_t n = iwt_mpa_rep_bytes(0x50, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), pdata, 8, f);
	ck_assert_uint_gt(n, cut[_i]);
	bad_reply(f, cut[_i], true);
}
END_TEST

/* A Reply with PD_Length 512 (508 application bytes) is accepted. */
START_TEST(test_reply_pdata_512)
{
	struct hp_mpa m = { HP_MPA_DEFAULT, .pdata = pdata, .pdata_len = 508 };
	fill_pdata();
	hp_env_init(&E);
	struct sockaddr_storage ss;
	E.lfd = hp_listen(&ss);
	ck_assert_int_ge(E.lfd, 0);
	ck_assert_int_eq(iw_cm_create_id(E.ch, &E, &E.id), 0);
	ck_assert_int_eq(iw_cm_connect(E.id, E.qp, (struct sockaddr *)&ss, NULL), 0);
	ck_assert_int_eq(hp_accept(E.peer, E.lfd, HP_WAIT_MS, 0), 0);
	ck_assert_int_eq(hp_respond(E.peer, &m, 0, HP_WAIT_MS), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, pdata, 508);
	iw_cm_ack_event(ev);
	hp_env_fini(&E);
}
END_TEST

/* A reject (R=1) with private data: REJECTED carrying it. */
START_TEST(test_reply_reject)
{
	uint8_t f[128];
	size_t n = iwt_mpa_rep_bytes(0x50 | 0x20, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4),
				     (const uint8_t *)"go away", 7, f);
	hp_env_init(&E);
	connect_to_peer(NULL);
	ck_assert_int_eq(hp_send_raw(E.peer, f, n, 2000), 0);
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_REJECTED, 3000);
	ck_assert_uint_eq(ev->private_data_len, 7);
	ck_assert_mem_eq(ev->private_data, "go away", 7);
	iw_cm_ack_event(ev);
	ck_assert_msg(hp_wait_closed(E.peer, 3000) == 0, "our side kept the rejected connection open");
	hp_env_fini(&E);
}
END_TEST

/* Reserved bits in the Reply are ignored (RFC 5044 sec. 7.1). */
START_TEST(test_reply_reserved_bits)
{
	struct hp_mpa m = { .flags = 0x50 | 0x0F, .rev = 2, .ird = 4, .ord = 4 };
	hp_env_init(&E);
	hp_env_peer_responds(&E, &m, 0, NULL);
	ck_assert_int_eq(hp_send_send(E.peer, "ok", 2), 0);
	struct iw_wc wc;
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	hp_env_fini(&E);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_mpa");
	TCase *tc = tcase_create("mpa");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_request_pdata_512, 0, 2);
	tcase_add_loop_test(tc, test_request_pdata_over, 0, 2);
	tcase_add_loop_test(tc, test_request_bad_key, 0, 3);
	tcase_add_loop_test(tc, test_request_bad_rev, 0, 3);
	tcase_add_test(tc, test_request_enhanced_short);
	tcase_add_loop_test(tc, test_request_truncated, 0, 3);
	tcase_add_loop_test(tc, test_request_reserved_bits, 0, 2);
	tcase_add_loop_test(tc, test_reply_bad_key, 0, 2);
	tcase_add_loop_test(tc, test_reply_bad_rev, 0, 3);
	tcase_add_loop_test(tc, test_reply_pdata_over, 0, 2);
	tcase_add_loop_test(tc, test_reply_truncated, 0, 3);
	tcase_add_test(tc, test_reply_pdata_512);
	tcase_add_test(tc, test_reply_reject);
	tcase_add_test(tc, test_reply_reserved_bits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
