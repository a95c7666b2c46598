/* Hostile peer against verified placement (iw_qp_init_attr
 * verified_placement, IWARP_VERIFIED_PLACEMENT=1): FPDUs with a bad CRC
 * (the corruption in the payload's first, middle or last byte, in the pad,
 * in the CRC field) as single- and multi-FPDU RDMA WRITE, Read Response
 * and SEND messages, delivered whole, split inside the bad FPDU, or a few
 * bytes at a time. In this mode no byte of a bad FPDU may reach memory:
 * unlike hostile_frames' bad-CRC case nothing is allowed to hold "old or
 * new" bytes; the FPDUs before the bad one were verified and must be
 * placed exactly. The rest of the verdict is hp_env_expect_term's:
 * Terminate (2,0,0x02), close, DISCONNECTED, every WR completed once. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hp_env.h"
#include "iwt_check.h"
#include "iwt_common.h"
#include "rdmap/rdmap_wire.h"

static struct hp_env E;

#define T(l, e, c) IW_TERM_CAUSE((l), (e), (c))
#define CAUSE_CRC T(2, 0, 0x02)
#define NSEG 3

/* Where in the bad FPDU the bit flips. */
enum pos { P_PAY_FIRST, P_PAY_MID, P_PAY_LAST, P_PAD, P_CRC, P_N };
/* How the bytes arrive. */
enum how { D_WHOLE, D_SPLIT, D_SLOW, D_N };

static void up_verified(bool responder)
{
	struct hp_mpa m = { HP_MPA_DEFAULT };

	hp_env_verified = true;
	hp_env_init(&E);
	if (responder)
		hp_env_peer_responds(&E, &m, 0, NULL);
	else
		hp_env_peer_initiates(&E, &m, NULL);
	ck_assert(E.peer->crc);
	ck_assert(!E.peer->markers_tx);
}

static void down(void)
{
	hp_env_fini(&E);
	hp_env_verified = false;
}

/* The stream being built: FPDUs back to back, with where each starts. */
struct burst {
	uint8_t buf[3 * 65600];
	size_t len;
	size_t start[NSEG + 1];
	size_t hdr_len[NSEG];
	size_t plen[NSEG];
};

static void add_fpdu(struct burst *b, int j, const uint8_t *h, size_t hl, const uint8_t *pl, size_t plen)
{
	ssize_t n = hp_build(E.peer, h, hl, pl, plen, b->buf + b->len, sizeof(b->buf) - b->len);

	ck_assert_int_gt(n, 0);
	b->start[j] = b->len;
	b->hdr_len[j] = hl;
	b->plen[j] = plen;
	b->len += (size_t)n;
	b->start[j + 1] = b->len;
}

/* Flip one bit of FPDU k at position p (markers off: length, header,
 * payload, pad, CRC). Returns the offset flipped. */
static size_t corrupt(struct burst *b, int k, enum pos p)
{
	size_t pay = b->start[k] + 2 + b->hdr_len[k], end = b->start[k + 1], at;

	switch (p) {
	case P_PAY_FIRST:
		at = pay;
		break;
	case P_PAY_MID:
		at = pay + b->plen[k] / 2;
		break;
	case P_PAY_LAST:
		at = pay + b->plen[k] - 1;
		break;
	case P_PAD:
		ck_assert_uint_gt(end - 4, pay + b->plen[k]); /* the test sizes give a pad */
		at = end - 5;
		break;
	default:
		at = end - 1;
		break;
	}
	b->buf[at] ^= 0x04;
	return at;
}

static void deliver(struct burst *b, int k, enum how how)
{
	switch (how) {
	case D_WHOLE:
		ck_assert_int_eq(hp_send_raw(E.peer, b->buf, b->len, HP_WAIT_MS), 0);
		break;
	case D_SPLIT: {
		/* Our side takes the first half of the bad FPDU before the rest
		 * exists: the streaming (prepare/readv) path, not the
		 * whole-FPDU fast path. */
		size_t cut = b->start[k] + (b->start[k + 1] - b->start[k]) / 2;
		ck_assert_int_eq(hp_send_raw(E.peer, b->buf, cut, HP_WAIT_MS), 0);
		usleep(50 * 1000);
		ck_assert_int_eq(hp_send_raw(E.peer, b->buf + cut, b->len - cut, HP_WAIT_MS), 0);
		break;
	}
	default:
		ck_assert_int_eq(hp_send_slow(E.peer, b->buf, b->len, 97, 300, 20000), 0);
		break;
	}
}

static void fill(uint8_t *d, size_t n, uint8_t salt)
{
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)(i * 7u + salt);
}

static struct burst B;

/* A 3-FPDU RDMA WRITE of 3 x 1001 bytes (ULPDU 1015: three pad bytes) into
 * the all-rights region; FPDU k is bad. The FPDUs before it are placed. */
static void write_case(int k, enum pos p, enum how how)
{
	static uint8_t data[NSEG * 1001];
	uint8_t h[14];
	uint8_t *dst = hp_mr_ptr(&E, HP_MR_ALL) + 40;
	uint64_t to = hp_mr_to(&E, HP_MR_ALL) + 40;

	fill(data, sizeof(data), (uint8_t)(k * 31 + p));
	memset(&B, 0, sizeof(B));
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_ALL), to + (uint64_t)j * 1001, j == NSEG - 1);
		add_fpdu(&B, j, h, sizeof(h), data + j * 1001, 1001);
	}
	corrupt(&B, k, p);
	deliver(&B, k, how);
	if (k > 0)
		hp_env_allow(&E, dst, data, (size_t)k * 1001); /* verified, placed */
	hp_env_expect_term(&E, CAUSE_CRC, NULL, 0);
}

START_TEST(test_write_bad_crc)
{
	up_verified(false);
	write_case(_i / P_N, (enum pos)(_i % P_N), (enum how)(_i % D_N));
	down();
}
END_TEST

/* Our READ of 3003 bytes, answered with a 3-FPDU Read Response whose FPDU
 * k is bad: the READ fails once, the sink holds only the verified FPDUs. */
START_TEST(test_read_response_bad_crc)
{
	static uint8_t data[NSEG * 1001];
	int k = _i % NSEG;
	enum pos p = (enum pos)((_i * 2) % P_N);
	struct hp_fpdu f;
	uint8_t h[14];

	up_verified(false);
	ck_assert_int_eq(hp_send_send(E.peer, "go", 2), 0); /* lock-step: the peer's FPDU first */
	hp_env_allow(&E, E.arena + E.recv_off, "go", 2);
	E.may_succeed[0] = true;
	hp_env_post_read(&E, 1, 0xABCD00u, 0x5000, sizeof(data));
	ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	ck_assert_uint_eq(f.opcode, IW_OP_READ_REQ);
	struct iw_rdmap_read_req rr;
	iw_rdmap_read_req_decode(f.payload, &rr);
	ck_assert_uint_eq(rr.size, sizeof(data));

	fill(data, sizeof(data), (uint8_t)(0x40 + _i));
	memset(&B, 0, sizeof(B));
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_tagged(h, IW_OP_READ_RESP, rr.sink_stag, rr.sink_to + (uint64_t)j * 1001, j == NSEG - 1);
		add_fpdu(&B, j, h, sizeof(h), data + j * 1001, 1001);
	}
	corrupt(&B, k, p);
	deliver(&B, k, (enum how)(_i % D_N));
	if (k > 0)
		hp_env_allow(&E, E.arena + E.sink_off, data, (size_t)k * 1001);
	hp_env_expect_term(&E, CAUSE_CRC, NULL, 0);
	down();
}
END_TEST

/* A 3-FPDU SEND (3 x 81 bytes: ULPDU 99, three pad bytes) into the first
 * 256-byte receive; FPDU k is bad. The receive is flushed, never
 * completed; it holds exactly the verified FPDUs' bytes. */
static void send_case(int k, enum pos p, enum how how)
{
	uint8_t data[NSEG * 81], h[18];

	fill(data, sizeof(data), (uint8_t)(0x90 + k + p));
	memset(&B, 0, sizeof(B));
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_untagged(h, IW_OP_SEND, 0, E.peer->send_msn, (uint32_t)j * 81, j == NSEG - 1, 0);
		add_fpdu(&B, j, h, sizeof(h), data + j * 81, 81);
	}
	E.peer->send_msn++;
	corrupt(&B, k, p);
	deliver(&B, k, how);
	if (k > 0)
		hp_env_allow(&E, E.arena + E.recv_off, data, (size_t)k * 81);
	hp_env_expect_term(&E, CAUSE_CRC, NULL, 0);
}

START_TEST(test_send_bad_crc)
{
	up_verified(false);
	send_case(_i % NSEG, (enum pos)((_i * 3) % P_N), (enum how)(_i % D_N));
	down();
}
END_TEST

/* Our side as the initiator (the peer responds): the same checks. */
START_TEST(test_responder_peer)
{
	up_verified(true);
	if (_i == 0)
		write_case(1, P_PAY_MID, D_SPLIT);
	else
		send_case(0, P_PAY_FIRST, D_WHOLE);
	down();
}
END_TEST

/* Large FPDUs (60000-byte payloads) into a 192 KiB region of the test's
 * own: after the first, our transport reads payload straight into the
 * placement target (readv); in this mode that target is the stage. FPDU 1
 * or 2 is bad; the region holds exactly FPDU 0 (and 1) afterwards. */
START_TEST(test_large_fpdus)
{
	const size_t seg = 60000, len = 3 * 65536;
	int k = 1 + (_i & 1);
	enum pos p = (enum pos)(_i % 4 == 3 ? P_CRC : _i % 4);
	uint8_t *mem = malloc(len), *want = malloc(len), *data = malloc(NSEG * seg);
	struct iw_mr *mr;
	uint8_t h[14];

	ck_assert(mem && want && data);
	iwt_fill_pattern(mem, len, 0xB16u);
	memcpy(want, mem, len);
	up_verified(false);
	ck_assert_int_eq(iw_reg_mr(E.pd, mem, len, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &mr), 0);
	fill(data, NSEG * seg, (uint8_t)_i);
	memset(&B, 0, sizeof(B));
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_tagged(h, IW_OP_WRITE, iw_mr_stag(mr), (uint64_t)(uintptr_t)mem + 100 + (uint64_t)j * seg,
			      j == NSEG - 1);
		add_fpdu(&B, j, h, sizeof(h), data + (size_t)j * seg, seg);
	}
	/* 60014-byte ULPDU: no pad (positions: payload first/middle/last, CRC). */
	corrupt(&B, k, p);
	deliver(&B, k, _i < 4 ? D_WHOLE : D_SPLIT);
	memcpy(want + 100, data, (size_t)k * seg);
	hp_env_expect_term(&E, CAUSE_CRC, NULL, 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert(memcmp(mem, want, len) == 0);
	down();
	free(mem);
	free(want);
	free(data);
}
END_TEST

/* The environment variable turns the mode on for a QP created without
 * the attribute (how programs on the verbs ABI libraries get it). */
START_TEST(test_env_variable)
{
	ck_assert_int_eq(setenv("IWARP_VERIFIED_PLACEMENT", "1", 1), 0);
	hp_env_up(&E, false);
	write_case(0, P_PAY_LAST, D_SPLIT);
	hp_env_fini(&E);
	unsetenv("IWARP_VERIFIED_PLACEMENT");
}
END_TEST

/* Control: without the mode the same bad FPDU's payload does reach the
 * region (placed as it streams in, then the Terminate), which is what
 * makes the cases above meaningful. */
START_TEST(test_default_places_unverified)
{
	struct hp_mpa m = { HP_MPA_DEFAULT };
	static uint8_t data[NSEG * 1001];
	uint8_t h[14], *dst;

	unsetenv("IWARP_VERIFIED_PLACEMENT");
	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, NULL);
	dst = hp_mr_ptr(&E, HP_MR_ALL);
	fill(data, sizeof(data), 0x33);
	memset(&B, 0, sizeof(B));
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_ALL), hp_mr_to(&E, HP_MR_ALL) + (uint64_t)j * 1001,
			      j == NSEG - 1);
		add_fpdu(&B, j, h, sizeof(h), data + j * 1001, 1001);
	}
	corrupt(&B, 0, P_CRC);
	deliver(&B, 0, D_WHOLE);
	hp_env_allow_either(&E, dst, data, 1001);
	hp_env_expect_term(&E, CAUSE_CRC, NULL, 0);
	ck_assert(memcmp(dst, data, 1001) == 0);
	hp_env_fini(&E);
}
END_TEST

/* Valid traffic in the mode, in the four framings (peer initiator or
 * responder, markers off or on): a 3-FPDU WRITE, a 3-FPDU SEND and a
 * 3-FPDU Read Response are placed exactly and complete; then a WRITE past
 * the region's end ends the case with (1,1,0x01). */
START_TEST(test_valid_traffic)
{
	bool resp = _i & 1, markers = _i & 2;
	struct hp_mpa m = { .flags = (uint8_t)(0x50 | (markers ? 0x80 : 0)), .rev = 2, .ird = 4, .ord = 4 };
	struct iw_conn_param cp = { .markers = markers };
	static uint8_t data[NSEG * 1001];
	uint8_t h[18];
	struct hp_fpdu f;

	hp_env_verified = true;
	hp_env_init(&E);
	if (resp)
		hp_env_peer_responds(&E, &m, 0, &cp);
	else
		hp_env_peer_initiates(&E, &m, &cp);
	ck_assert_int_eq(E.peer->markers_tx, markers);
	fill(data, sizeof(data), 0x21);
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_untagged(h, IW_OP_SEND, 0, 1, (uint32_t)j * 80, j == NSEG - 1, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, 18, data + j * 80, 80), 0);
	}
	E.peer->send_msn = 2;
	hp_env_allow(&E, E.arena + E.recv_off, data, NSEG * 80);
	E.may_succeed[0] = true;
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_ALL), hp_mr_to(&E, HP_MR_ALL) + (uint64_t)j * 1001,
			      j == NSEG - 1);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, 14, data + j * 1001, 1001), 0);
	}
	hp_env_allow(&E, hp_mr_ptr(&E, HP_MR_ALL), data, sizeof(data));
	hp_env_post_read(&E, 1, 0xABCD00u, 0x5000, sizeof(data));
	E.may_succeed[E.n_wr - 1] = true;
	ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	ck_assert_uint_eq(f.opcode, IW_OP_READ_REQ);
	struct iw_rdmap_read_req rr;
	iw_rdmap_read_req_decode(f.payload, &rr);
	for (int j = 0; j < NSEG; j++) {
		hp_hdr_tagged(h, IW_OP_READ_RESP, rr.sink_stag, rr.sink_to + (uint64_t)j * 1001, j == NSEG - 1);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, 14, data + j * 1001, 1001), 0);
	}
	hp_env_allow(&E, E.arena + E.sink_off, data, sizeof(data));
	/* The READ and the receive completed successfully before the end. */
	struct iw_wc wc[4];
	int got = 0, ok = 0;
	for (uint64_t t0 = hp_now_ms(); got < 2 && hp_now_ms() - t0 < HP_WAIT_MS;) {
		int n = iw_poll_cq(E.cq, 4, wc);
		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++) {
			int w = 0;
			while (w < E.n_wr && E.wr_id[w] != wc[i].wr_id)
				w++;
			ck_assert_int_lt(w, E.n_wr); /* a known WR */
			ck_assert_int_eq(++E.ndone[w], 1);
			E.status[w] = wc[i].status;
			ok += wc[i].status == IW_WC_SUCCESS;
		}
		got += n;
		if (!n)
			usleep(1000);
	}
	ck_assert_int_eq(ok, 2);
	hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_ALL), hp_mr_to(&E, HP_MR_ALL) + HP_MR_LEN - 10, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, 14, data, 11), 0);
	hp_env_expect_term(&E, T(1, 1, 0x01), h, 14);
	down();
}
END_TEST

/* Verified placement has nothing to verify without CRC: such a QP asks
 * for CRC even when the connection parameter says IW_CRC_OFF, and a
 * Reply without CRC fails our connect (CONNECT_ERROR, socket closed). */
START_TEST(test_crc_required)
{
	struct hp_mpa m = { .flags = 0x10, .rev = 2, .ird = 4, .ord = 4 };
	struct iw_conn_param cp = { .crc = IW_CRC_OFF };
	struct sockaddr_storage ss;

	hp_env_verified = true;
	hp_env_init(&E);
	E.lfd = hp_listen(&ss);
	ck_assert_int_ge(E.lfd, 0);
	ck_assert_int_eq(iw_cm_create_id(E.ch, &E, &E.id), 0);
	ck_assert_int_eq(iw_cm_connect(E.id, E.qp, (struct sockaddr *)&ss, &cp), 0);
	ck_assert_int_eq(hp_accept(E.peer, E.lfd, HP_WAIT_MS, 0), 0);
	ck_assert_int_eq(hp_respond(E.peer, &m, 0, HP_WAIT_MS), 0);
	ck_assert_msg(E.peer->frame[16] & 0x40, "our Request did not ask for CRC");
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_CONNECT_ERROR, 3000);
	ck_assert_int_lt(ev->status, 0);
	iw_cm_ack_event(ev);
	ck_assert_msg(hp_wait_closed(E.peer, 3000) == 0, "our side kept the failed connection open");
	ck_assert_int_ne(iw_qp_state(E.qp), IW_QPS_RTS);
	down();
}
END_TEST

/* A WRITE's FPDU stalls (i 0: its whole payload is in the stage, two
 * CRC bytes missing; i 1: halfway through the payload); the application
 * deregisters the region and reuses the memory; the rest arrives. The
 * staged payload must never be copied out: (1,1,0x00), memory as reused. */
START_TEST(test_dereg_while_staged)
{
	enum { SZ = 8192 };
	uint8_t *mem = malloc(SZ), h[14], *data = malloc(4000), *buf = malloc(8192);
	struct iw_mr *mr;

	ck_assert(mem && data && buf);
	memset(mem, 0x22, SZ);
	memset(data, 0xD1, 4000);
	up_verified(false);
	ck_assert_int_eq(iw_reg_mr(E.pd, mem, SZ, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &mr), 0);
	hp_hdr_tagged(h, IW_OP_WRITE, iw_mr_stag(mr), (uint64_t)(uintptr_t)mem + 100, true);
	ssize_t n = hp_build(E.peer, h, sizeof(h), data, 4000, buf, 8192);
	ck_assert_int_gt(n, 3000);
	size_t cut = _i == 0 ? (size_t)n - 2 : 2000;
	ck_assert_int_eq(hp_send_raw(E.peer, buf, cut, 2000), 0);
	usleep(200000);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	memset(mem, 0xAB, SZ); /* reused by the application */
	ck_assert_int_eq(hp_send_raw(E.peer, buf + cut, (size_t)n - cut, 2000), 0);
	hp_env_expect_term(&E, T(1, 1, 0x00), h, sizeof(h));
	for (size_t i = 0; i < SZ; i++)
		if (mem[i] != 0xAB)
			ck_abort_msg("byte %zu written after deregistration", i);
	free(mem);
	free(data);
	free(buf);
	down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_verified");
	TCase *tc = tcase_create("verified");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_write_bad_crc, 0, NSEG * P_N);
	tcase_add_loop_test(tc, test_read_response_bad_crc, 0, 6);
	tcase_add_loop_test(tc, test_send_bad_crc, 0, 6);
	tcase_add_loop_test(tc, test_responder_peer, 0, 2);
	tcase_add_loop_test(tc, test_large_fpdus, 0, 6);
	tcase_add_test(tc, test_env_variable);
	tcase_add_test(tc, test_default_places_unverified);
	tcase_add_loop_test(tc, test_valid_traffic, 0, 4);
	tcase_add_test(tc, test_crc_required);
	tcase_add_loop_test(tc, test_dereg_while_staged, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
