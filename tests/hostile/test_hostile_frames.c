/* Hostile peer, malformed FPDUs after a valid handshake. Each case: the
 * Terminate (layer, etype, ecode) the peer must receive, our close, the
 * application's DISCONNECTED event and QP cause, every WR completed once,
 * and the guarded arena unchanged except where the test allows. Where the
 * right triple is debatable the RFC section is cited. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp/ddp_wire.h"
#include "hp_env.h"
#include "iwt_check.h"
#include "iwt_common.h"
#include "iwt_ddp.h"
#include "iwt_handshake.h"
#include "rdmap/rdmap_wire.h"

static struct hp_env E;

#define T(l, e, c) IW_TERM_CAUSE((l), (e), (c))

/* Default connection: the peer initiates, rev 2, CRC on, IRD = ORD = 4. */
static void up(void)
{
	hp_env_up(&E, false);
}

static void down(void)
{
	hp_env_fini(&E);
}

/* The four framings: peer as initiator or responder, markers on or off. */
static void up_mode(int mode)
{
	bool resp = mode & 1, markers = mode & 2;
	struct hp_mpa m = { .flags = (uint8_t)(0x50 | (markers ? 0x80 : 0)), .rev = 2, .ird = 4, .ord = 4 };
	struct iw_conn_param cp = { .markers = markers, .crc = IW_CRC_ON };

	hp_env_init(&E);
	if (resp)
		hp_env_peer_responds(&E, &m, 0, &cp);
	else
		hp_env_peer_initiates(&E, &m, &cp);
	ck_assert(E.peer->crc);
	ck_assert_int_eq(E.peer->markers_tx, markers);
	ck_assert_int_eq(E.peer->markers_rx, markers);
}

/* Eight framings: bit 0 peer as responder, bit 1 markers, bit 2 CRC off. */
static void up_mode8(int mode)
{
	bool resp = mode & 1, markers = mode & 2, crc = !(mode & 4);
	struct hp_mpa m = { .flags = (uint8_t)(0x10 | (markers ? 0x80 : 0) | (crc ? 0x40 : 0)), .rev = 2, .ird = 4,
			    .ord = 4 };
	struct iw_conn_param cp = { .markers = markers, .crc = crc ? IW_CRC_ON : IW_CRC_OFF };

	hp_env_init(&E);
	if (resp)
		hp_env_peer_responds(&E, &m, 0, &cp);
	else
		hp_env_peer_initiates(&E, &m, &cp);
	ck_assert_int_eq(E.peer->crc, crc);
	ck_assert_int_eq(E.peer->markers_tx, markers);
	ck_assert_int_eq(E.peer->markers_rx, markers);
}

/* A valid SEND lands in the first receive buffer: allowed in the shadow. */
static void good_send(const char *msg)
{
	size_t len = strlen(msg);
	ck_assert_int_eq(hp_send_send(E.peer, msg, len), 0);
	hp_env_allow(&E, E.arena + E.recv_off + (size_t)(E.peer->send_msn - 2) * HP_RECV_LEN, msg, len);
	/* That receive may succeed (it is the one the SEND consumed). */
	E.may_succeed[E.peer->send_msn - 2] = true;
}

/* ------------------------------------------------------------------ */
/* MPA layer                                                           */

START_TEST(test_bad_crc)
{
	uint8_t h[18], buf[256];
	const char msg[] = "a SEND whose CRC is broken";

	up_mode(_i);
	good_send("fine first");
	hp_hdr_untagged(h, IW_OP_SEND, 0, E.peer->send_msn, 0, true, 0);
	ssize_t n = hp_build(E.peer, h, sizeof(h), msg, sizeof(msg), buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	buf[n - 1] ^= 0x01;
	ck_assert_int_eq(hp_send_raw(E.peer, buf, (size_t)n, 2000), 0);
	/* Payload is placed as it streams in (zero copy), before the CRC is
	 * known: the broken SEND may reach the receive buffer its MSN names,
	 * which is then flushed, never completed. Nothing else may change. */
	hp_env_allow_either(&E, E.arena + E.recv_off + HP_RECV_LEN, msg, sizeof(msg));
	/* MPA errors copy no header (RFC 5040 sec. 4.8: the headers cannot be trusted). */
	hp_env_expect_term(&E, T(2, 0, 0x02), NULL, 0);
	down();
}
END_TEST

/* In every framing: a valid SEND, a valid 1000-byte WRITE (crosses a
 * marker position), then a WRITE past the region's end. */
START_TEST(test_modes_bounds)
{
	uint8_t h[14], data[1000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5A);
	up_mode8(_i);
	good_send("mode check");
	ck_assert_int_eq(hp_send_write(E.peer, hp_mr_stag(&E, HP_MR_ALL), hp_mr_to(&E, HP_MR_ALL) + 3, data,
				       sizeof(data)), 0);
	hp_env_allow(&E, hp_mr_ptr(&E, HP_MR_ALL) + 3, data, sizeof(data));
	hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_ALL), hp_mr_to(&E, HP_MR_ALL) + HP_MR_LEN - 10, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, 11), 0);
	hp_env_expect_term(&E, T(1, 1, 0x01), h, sizeof(h));
	down();
}
END_TEST

/* Markers on: a marker whose FPDU pointer is wrong (RFC 5044 sec. 5:
 * (2,0,0x03) marker/ULPDU_LENGTH error), CRC on and off. The peer's first
 * FPDU starts with a marker (pointer 0); the test breaks it. */
START_TEST(test_bad_marker)
{
	uint8_t h[18], buf[256];
	up_mode8(2 | (_i ? 4 : 0));
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ssize_t n = hp_build(E.peer, h, sizeof(h), "marked", 6, buf, sizeof(buf));
	ck_assert_int_gt(n, 4);
	ck_assert_uint_eq(buf[2], 0);
	ck_assert_uint_eq(buf[3], 0);
	buf[3] = 4;
	ck_assert_int_eq(hp_send_raw(E.peer, buf, (size_t)n, 2000), 0);
	hp_env_expect_term(&E, T(2, 0, 0x03), NULL, 0);
	down();
}
END_TEST

/* Marker reserved bits are ignored on receipt (RFC 5044 sec. 5): a SEND
 * behind a marker with 0xFFFF reserved bits is accepted (CRC off, so the
 * changed bytes do not break the CRC). */
START_TEST(test_marker_reserved_ignored)
{
	uint8_t buf[256], h[18];
	struct iw_wc wc;
	up_mode8(2 | 4);
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ssize_t n = hp_build(E.peer, h, sizeof(h), "marked", 6, buf, sizeof(buf));
	ck_assert_int_gt(n, 4);
	buf[0] = buf[1] = 0xFF;
	E.peer->send_msn = 2;
	ck_assert_int_eq(hp_send_raw(E.peer, buf, (size_t)n, 2000), 0);
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int k;
	while ((k = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(k, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 6);
	E.ndone[0] = 1;
	hp_env_allow(&E, E.arena + E.recv_off, "marked", 6);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* ULPDU_LENGTH 0 and 1: below any DDP header. */
START_TEST(test_ulpdu_tiny)
{
	uint8_t raw[8] = { 0, (uint8_t)_i, 0, 0, 0, 0, 0, 0 };
	up();
	ck_assert_int_eq(hp_send_raw(E.peer, raw, sizeof(raw), 2000), 0);
	hp_env_expect_term(&E, T(2, 0, 0x03), NULL, 0);
	down();
}
END_TEST

/* ULPDU_LENGTH shorter than the header its control field announces
 * (10 bytes of an 18-byte untagged header), with a valid CRC. */
START_TEST(test_ulpdu_short_header)
{
	uint8_t h[18];
	up();
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, 10, NULL, 0), 0);
	hp_env_expect_term(&E, T(2, 0, 0x03), NULL, 0);
	down();
}
END_TEST

/* A Read Request whose ULPDU cannot hold its 28-byte body. */
START_TEST(test_ulpdu_short_read_req)
{
	uint8_t h[18], body[10] = { 0 };
	up();
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	hp_env_expect_term(&E, T(2, 0, 0x03), NULL, 0);
	down();
}
END_TEST

/* ULPDU_LENGTH claims more than is sent; CRC on, so the trailer lands on
 * the next FPDU's bytes: a CRC error (what a receiver can see). */
START_TEST(test_ulpdu_too_large)
{
	uint8_t h[18], buf[512];
	const char a[] = "first", b[] = "second message behind it";
	up();
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ssize_t n1 = hp_build(E.peer, h, sizeof(h), a, sizeof(a), buf, sizeof(buf));
	hp_hdr_untagged(h, IW_OP_SEND, 0, 2, 0, true, 0);
	ssize_t n2 = hp_build(E.peer, h, sizeof(h), b, sizeof(b), buf + n1, sizeof(buf) - (size_t)n1);
	ck_assert(n1 > 0 && n2 > 0);
	buf[1] = (uint8_t)(buf[1] + 8); /* ULPDU_LENGTH + 8: swallows 8 bytes of the next FPDU */
	ck_assert_int_eq(hp_send_raw(E.peer, buf, (size_t)(n1 + n2), 2000), 0);
	/* The first receive may have been written (placement before CRC):
	 * its own bytes, then the next FPDU's first 8. */
	hp_env_allow_either(&E, E.arena + E.recv_off, buf + 2 + sizeof(h), sizeof(a) + 8);
	hp_env_expect_term(&E, T(2, 0, 0x02), NULL, 0);
	down();
}
END_TEST

/* The largest ULPDU (65535) as a SEND: longer than the 256-byte receive
 * buffer, (1,2,0x05) (RFC 5041 sec. 7.2). Nothing is placed. */
START_TEST(test_ulpdu_max_send)
{
	uint8_t h[18];
	size_t plen = 65535 - 18;
	uint8_t *big = malloc(plen);
	ck_assert_ptr_nonnull(big);
	memset(big, 0x77, plen);
	up();
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), big, plen), 0);
	hp_env_expect_term(&E, T(1, 2, 0x05), h, sizeof(h));
	free(big);
	down();
}
END_TEST

/* A SEND one byte longer than the receive buffer. */
START_TEST(test_send_too_long)
{
	uint8_t h[18], data[HP_RECV_LEN + 1];
	memset(data, 0x5C, sizeof(data));
	up();
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(1, 2, 0x05), h, sizeof(h));
	down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Versions and opcodes                                                */

/* DDP version 0, 2, 3: tagged (1,1,0x04), untagged (1,2,0x06). */
START_TEST(test_bad_ddp_version)
{
	uint8_t h[18], data[16] = { 1 };
	uint8_t ver = (uint8_t)(_i / 2 == 0 ? 0 : _i / 2 + 1); /* 0, 2, 3 */
	bool tagged = _i & 1;
	up();
	size_t hl = tagged ? iwt_ddp_tagged(h, iw_rdmap_ctrl(IW_OP_WRITE), hp_mr_stag(&E, HP_MR_W),
					    hp_mr_to(&E, HP_MR_W), true, ver)
			   : iwt_ddp_untagged(h, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 1, 0, true, ver);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, hl, data, sizeof(data)), 0);
	hp_env_expect_term(&E, tagged ? T(1, 1, 0x04) : T(1, 2, 0x06), h, hl);
	down();
}
END_TEST

/* RDMAP version 0, 2, 3 (RFC 5040 sec. 7: remote operation, 0x05). */
START_TEST(test_bad_rdmap_version)
{
	uint8_t h[18], data[16] = { 1 };
	uint8_t ver = (uint8_t)(_i == 0 ? 0 : _i + 1);
	up();
	size_t hl = iwt_ddp_untagged(h, (uint8_t)(ver << 6 | IW_OP_SEND), 0, 0, 1, 0, true, IW_DDP_VERSION);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, hl, data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(0, 2, 0x05), h, hl);
	down();
}
END_TEST

/* Opcodes 8..15 (RFC 7306 and unassigned: not enabled), untagged and
 * tagged: (0,2,0x06). */
START_TEST(test_unknown_opcode)
{
	uint8_t h[18], data[8] = { 0 };
	uint8_t op = (uint8_t)(8 + _i / 2);
	bool tagged = _i & 1;
	up();
	size_t hl = tagged ? hp_hdr_tagged(h, op, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W), true)
			   : hp_hdr_untagged(h, op, 0, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, hl, data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(0, 2, 0x06), h, hl);
	down();
}
END_TEST

/* Known opcodes with the wrong DDP model: a tagged SEND, an untagged
 * WRITE, a tagged Terminate, an untagged Read Response. */
START_TEST(test_opcode_wrong_model)
{
	static const uint8_t ops[] = { IW_OP_SEND, IW_OP_WRITE, IW_OP_TERMINATE, IW_OP_READ_RESP, IW_OP_READ_REQ };
	uint8_t h[18], data[28] = { 0 };
	uint8_t op = ops[_i];
	bool tagged = op == IW_OP_SEND || op == IW_OP_TERMINATE || op == IW_OP_READ_REQ;
	up();
	size_t hl = tagged ? hp_hdr_tagged(h, op, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W), true)
			   : hp_hdr_untagged(h, op, 0, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, hl, data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(0, 2, 0x06), h, hl);
	down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Untagged: QN, MSN, MO                                               */

/* SEND on QN 1, 2, 3, 0xFFFFFFFF; Read Request on QN 0 and 2; Terminate
 * on QN 0 and 1: (1,2,0x01). */
START_TEST(test_wrong_qn)
{
	static const struct {
		uint8_t op;
		uint32_t qn;
	} c[] = { { IW_OP_SEND, 1 }, { IW_OP_SEND, 2 }, { IW_OP_SEND, 3 }, { IW_OP_SEND, 0xFFFFFFFFu },
		  { IW_OP_READ_REQ, 0 }, { IW_OP_READ_REQ, 2 }, { IW_OP_TERMINATE, 0 }, { IW_OP_TERMINATE, 1 } };
	uint8_t h[18], data[28] = { 0 };
	up();
	hp_hdr_untagged(h, c[_i].op, c[_i].qn, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(1, 2, 0x01), h, sizeof(h));
	down();
}
END_TEST

/* MSN 0, 2 (ahead), 0xFFFFFFFF on the first SEND: out of range. */
START_TEST(test_msn_out_of_range)
{
	static const uint32_t msn[] = { 0, 2, 0xFFFFFFFFu };
	uint8_t h[18], data[16] = { 0 };
	up();
	hp_hdr_untagged(h, IW_OP_SEND, 0, msn[_i], 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
	down();
}
END_TEST

/* A completed message's MSN sent again. */
START_TEST(test_msn_replayed)
{
	uint8_t h[18];
	const char again[] = "replay";
	up();
	good_send("original");
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), again, sizeof(again)), 0);
	hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
	ck_assert_int_eq(E.status[0], IW_WC_SUCCESS);
	down();
}
END_TEST

/* MO: a first segment with MO 4; a second segment with a gap. */
START_TEST(test_wrong_mo)
{
	uint8_t h[18], data[16];
	memset(data, 0x3C, sizeof(data));
	up();
	if (_i == 0) {
		hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 4, true, 0);
	} else {
		hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, false, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
		hp_env_allow(&E, E.arena + E.recv_off, data, sizeof(data)); /* the first segment was placed */
		hp_hdr_untagged(h, IW_OP_SEND, 0, 1, sizeof(data) + 4, true, 0);
	}
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(1, 2, 0x04), h, sizeof(h));
	down();
}
END_TEST

/* More SENDs than receives posted: (1,2,0x02) on the first without one. */
START_TEST(test_no_receive_buffer)
{
	uint8_t h[18];
	char m[8] = "msg";
	up();
	for (int i = 0; i < HP_RECV_N; i++) {
		m[3] = (char)('0' + i);
		good_send(m);
	}
	hp_hdr_untagged(h, IW_OP_SEND, 0, HP_RECV_N + 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "x", 1), 0);
	hp_env_expect_term(&E, T(1, 2, 0x02), h, sizeof(h));
	for (int i = 0; i < HP_RECV_N; i++)
		ck_assert_int_eq(E.status[i], IW_WC_SUCCESS);
	down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Tagged: bounds, rights, STags                                        */

static void bad_write(int mr, uint32_t stag, uint64_t to, size_t len, struct iw_term_cause want)
{
	uint8_t h[14];
	uint8_t *data = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(data);
	memset(data, 0xEE, len);
	(void)mr;
	hp_hdr_tagged(h, IW_OP_WRITE, stag, to, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, len), 0);
	hp_env_expect_term(&E, want, h, sizeof(h));
	free(data);
}

/* A WRITE that starts inside the region and runs 1..16 bytes past it. */
START_TEST(test_write_overlaps_end)
{
	size_t over = (size_t)_i + 1;
	up();
	bad_write(HP_MR_W, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W) + HP_MR_LEN - 16, 16 + over,
		  T(1, 1, 0x01));
	down();
}
END_TEST

START_TEST(test_write_before_start)
{
	up();
	bad_write(HP_MR_W, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W) - 1, 16, T(1, 1, 0x01));
	down();
}
END_TEST

/* Twice the region, from its start (one FPDU of 8 KiB). */
START_TEST(test_write_oversized)
{
	up();
	bad_write(HP_MR_W, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W), 2 * HP_MR_LEN, T(1, 1, 0x01));
	down();
}
END_TEST

/* TO + length wraps the 64-bit space (RFC 5041 sec. 7.1: TO wrap). */
START_TEST(test_write_to_wrap)
{
	up();
	bad_write(HP_MR_W, hp_mr_stag(&E, HP_MR_W), UINT64_MAX - 7, 16, T(1, 1, 0x03));
	down();
}
END_TEST

/* Regions without REMOTE_WRITE: RDMAP remote protection, access rights
 * (RFC 5040 sec. 7, 0x02; the STag exists, the operation is not allowed). */
START_TEST(test_write_no_right)
{
	static const int mrs[] = { HP_MR_NONE, HP_MR_LW, HP_MR_R, HP_MR_LW_R };
	up();
	bad_write(mrs[_i], hp_mr_stag(&E, mrs[_i]), hp_mr_to(&E, mrs[_i]), 16, T(0, 1, 0x02));
	down();
}
END_TEST

/* A deregistered region's STag. */
START_TEST(test_write_deregistered)
{
	struct iw_mr *tmp;
	up();
	ck_assert_int_eq(iw_reg_mr(E.pd, hp_mr_ptr(&E, HP_MR_W), HP_MR_LEN,
				   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &tmp), 0);
	uint32_t stag = iw_mr_stag(tmp);
	ck_assert_int_eq(iw_dereg_mr(tmp), 0);
	bad_write(HP_MR_W, stag, hp_mr_to(&E, HP_MR_W), 16, T(1, 1, 0x00));
	down();
}
END_TEST

/* STag index 0, an index never handed out, and a random STag. */
START_TEST(test_write_unknown_stag)
{
	static const uint32_t stags[] = { 0x00000000u, 0x000000FFu, 0x00FFFF00u, 0xDEADBE00u };
	up();
	bad_write(HP_MR_W, stags[_i], hp_mr_to(&E, HP_MR_W), 16, T(1, 1, 0x00));
	down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Reads                                                               */

/* A valid Read Request first (the response carries the region's bytes),
 * so the failing cases below are known to fail for their own reason. */
START_TEST(test_read_ok)
{
	static const int mrs[] = { HP_MR_R, HP_MR_LW_R, HP_MR_ALL };
	int mr = mrs[_i];
	struct hp_fpdu f;
	up();
	ck_assert_int_eq(hp_send_read_req(E.peer, 0x1234500u, 0x1000, 64, hp_mr_stag(&E, mr), hp_mr_to(&E, mr) + 8),
			 0);
	ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	ck_assert(f.tagged);
	ck_assert_uint_eq(f.opcode, IW_OP_READ_RESP);
	ck_assert_uint_eq(f.stag, 0x1234500u);
	ck_assert_uint_eq(f.to, 0x1000);
	ck_assert_uint_eq(f.payload_len, 64);
	ck_assert(f.last);
	ck_assert_mem_eq(f.payload, hp_mr_ptr(&E, mr) + 8, 64);
	/* Then a protocol error to end it the usual way. */
	uint8_t h[18];
	hp_hdr_untagged(h, IW_OP_SEND, 0, 7, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "x", 1), 0);
	hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
	down();
}
END_TEST

/* The Terminate copies the DDP header and the Read Request body (RFC
 * 5040 sec. 4.8: errors about a Read Request set R). */
static void bad_read(uint32_t stag, uint64_t to, uint32_t size, struct iw_term_cause want)
{
	uint8_t h[18], body[IW_RDMAP_READ_REQ_LEN];
	struct iw_rdmap_read_req rr = { 0x1234500u, 0x1000, size, stag, to };
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, 1, 0, true, 0);
	iw_rdmap_read_req_encode(&rr, body);
	ck_assert_int_eq(hp_send_read_req(E.peer, rr.sink_stag, rr.sink_to, size, stag, to), 0);
	E.want_rdmap_hdr = body;
	hp_env_expect_term(&E, want, h, sizeof(h));
}

/* Regions without REMOTE_READ. */
START_TEST(test_read_no_right)
{
	static const int mrs[] = { HP_MR_NONE, HP_MR_LW, HP_MR_W };
	up();
	bad_read(hp_mr_stag(&E, mrs[_i]), hp_mr_to(&E, mrs[_i]), 16, T(0, 1, 0x02));
	down();
}
END_TEST

/* Out of bounds: past the end, before the start, far too long, wrap. */
START_TEST(test_read_out_of_bounds)
{
	up();
	uint64_t base = hp_mr_to(&E, HP_MR_R);
	switch (_i) {
	case 0:
		bad_read(hp_mr_stag(&E, HP_MR_R), base + HP_MR_LEN - 8, 16, T(0, 1, 0x01));
		break;
	case 1:
		bad_read(hp_mr_stag(&E, HP_MR_R), base - 8, 16, T(0, 1, 0x01));
		break;
	case 2:
		bad_read(hp_mr_stag(&E, HP_MR_R), base, 0xFFFFFFFFu, T(0, 1, 0x01));
		break;
	default:
		bad_read(hp_mr_stag(&E, HP_MR_R), UINT64_MAX - 7, 16, T(0, 1, 0x04));
		break;
	}
	down();
}
END_TEST

START_TEST(test_read_unknown_stag)
{
	up();
	bad_read(hp_mr_stag(&E, HP_MR_R) ^ 0x01, hp_mr_to(&E, HP_MR_R), 16, T(0, 1, 0x00));
	down();
}
END_TEST

/* More Read Requests than the IRD we granted (1): the responses cannot
 * drain (the peer's receive buffer is tiny and it does not read), so the
 * second request is beyond IRD: (0,2,0x07) as siw does; RFC 5040 sec.
 * 5.3 leaves the code to the implementation ("catastrophic, localized"). */
START_TEST(test_read_beyond_ird)
{
	struct hp_mpa m = { .flags = 0x50, .rev = 2, .ird = 1, .ord = 1, .rcvbuf = 4096 };
	struct iw_conn_param ap = { .ird = 1, .ord = 1 };
	uint8_t h[18];

	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, &ap);
	ck_assert_uint_eq(E.peer->peer_ird, 1);
	/* Eight requests in one write: they arrive before any response
	 * could have gone out. */
	uint8_t buf[8 * 64], body[28];
	size_t len = 0;
	for (uint32_t i = 0; i < 8; i++) {
		struct iw_rdmap_read_req rr = { 0x1234500u, 0x1000, HP_MR_LEN, hp_mr_stag(&E, HP_MR_R),
						hp_mr_to(&E, HP_MR_R) };
		iw_rdmap_read_req_encode(&rr, body);
		hp_hdr_untagged(h, IW_OP_READ_REQ, 1, i + 1, 0, true, 0);
		ssize_t n = hp_build(E.peer, h, sizeof(h), body, sizeof(body), buf + len, sizeof(buf) - len);
		ck_assert_int_gt(n, 0);
		len += (size_t)n;
	}
	ck_assert_int_eq(hp_send_raw(E.peer, buf, len, 2000), 0);
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, 2, 0, true, 0);
	hp_env_expect_term(&E, T(0, 2, 0x07), h, sizeof(h));
	down();
}
END_TEST

/* A Read Response nobody asked for (no READ outstanding). */
START_TEST(test_read_response_unsolicited)
{
	uint8_t h[14], data[16] = { 0 };
	up();
	hp_hdr_tagged(h, IW_OP_READ_RESP, hp_mr_stag(&E, HP_MR_ALL), hp_mr_to(&E, HP_MR_ALL), true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(0, 2, 0x06), h, sizeof(h));
	down();
}
END_TEST

/* We have a READ outstanding; the response names another sink STag, or
 * runs past what we asked for. The READ completes once, with an error. */
START_TEST(test_read_response_mismatch)
{
	struct hp_fpdu f;
	uint8_t h[14], data[64] = { 0 };
	up();
	/* Our first FPDU may go out only after the peer's (lock-step rule
	 * for the responder side); send a harmless SEND first. */
	good_send("go");
	hp_env_post_read(&E, 1, 0xABCD00u, 0x5000, 32);
	ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	ck_assert_uint_eq(f.opcode, IW_OP_READ_REQ);
	struct iw_rdmap_read_req rr;
	iw_rdmap_read_req_decode(f.payload, &rr);
	ck_assert_uint_eq(rr.size, 32);
	if (_i == 0) {
		hp_hdr_tagged(h, IW_OP_READ_RESP, rr.sink_stag ^ 0x100, rr.sink_to, true);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, 32), 0);
		hp_env_expect_term(&E, T(1, 1, 0x00), h, sizeof(h));
	} else {
		hp_hdr_tagged(h, IW_OP_READ_RESP, rr.sink_stag, rr.sink_to, true);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, 64), 0);
		hp_env_expect_term(&E, T(1, 1, 0x01), h, sizeof(h));
	}
	down();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Terminates at odd times; truncation                                 */

/* The peer's Terminate: no Terminate back (RFC 5040 sec. 5.4: a
 * Terminate is not answered), we close, the QP carries the peer's cause,
 * everything outstanding is flushed. */
static void expect_peer_term(struct iw_term_cause want)
{
	struct hp_fpdu f;
	int r;
	while ((r = hp_recv_fpdu(E.peer, HP_WAIT_MS, &f)) == 1)
		ck_assert_msg(f.tagged || f.opcode != IW_OP_TERMINATE, "a Terminate answered a Terminate");
	ck_assert_msg(r == 0 || r == -ECONNRESET, "our side kept the connection open (%d)", r);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(E.qp), want), "QP cause %s, expected %s",
		      hp_cause(iw_qp_error(E.qp), 0), hp_cause(want, 1));
	ck_assert_int_ne(iw_qp_state(E.qp), IW_QPS_RTS);
	hp_env_drain(&E, &want);
	hp_env_check_guards(&E);
}

START_TEST(test_terminate_first)
{
	struct iw_term_cause c = T(0, 2, 0xFF);
	up();
	hp_env_post_send(&E, 1, 16, false); /* held back until the peer's first FPDU */
	ck_assert_int_eq(hp_send_terminate(E.peer, c), 0);
	expect_peer_term(c);
	down();
}
END_TEST

START_TEST(test_terminate_mid_message)
{
	uint8_t h[18], data[32];
	struct iw_term_cause c = T(1, 2, 0x05);
	memset(data, 0x42, sizeof(data));
	up();
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, false, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_allow(&E, E.arena + E.recv_off, data, sizeof(data));
	hp_env_post_read(&E, 2, 0x100u, 0x2000, 64);
	ck_assert_int_eq(hp_send_terminate(E.peer, c), 0);
	expect_peer_term(c);
	down();
}
END_TEST

START_TEST(test_terminate_twice)
{
	struct iw_term_cause c = T(0, 1, 0x00);
	up();
	good_send("hello");
	/* Both in one write: we abort the stream after the first. */
	uint8_t h[18], b1[64], b2[64], buf[256];
	struct iw_rdmap_term t;
	hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 0, true, 0);
	iw_rdmap_term_prepare(&t, c, NULL, 0, 0);
	size_t l1 = iw_rdmap_term_encode(&t, b1);
	iw_rdmap_term_prepare(&t, T(2, 0, 0x02), NULL, 0, 0);
	size_t l2 = iw_rdmap_term_encode(&t, b2);
	ssize_t n1 = hp_build(E.peer, h, sizeof(h), b1, l1, buf, sizeof(buf));
	ssize_t n2 = hp_build(E.peer, h, sizeof(h), b2, l2, buf + n1, sizeof(buf) - (size_t)n1);
	ck_assert(n1 > 0 && n2 > 0);
	ck_assert_int_eq(hp_send_raw(E.peer, buf, (size_t)(n1 + n2), 2000), 0);
	expect_peer_term(c);
	down();
}
END_TEST

/* A Terminate in siw's layout (swapped nibbles, flag bits 0x01..0x04) is
 * understood: the QP carries the RFC triple. */
START_TEST(test_terminate_siw_layout)
{
	uint8_t h[18], body[4] = { 0x11, 0x00, 0x00, 0x00 }; /* etype 1 << 4 | layer 1 */
	up();
	hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	expect_peer_term(T(1, 1, 0x00));
	down();
}
END_TEST

/* Part of an FPDU, then the peer closes its sending side: the stream is
 * lost mid-FPDU. We close, nothing is completed as a success, nothing
 * hangs. (RFC 5044 sec. 8: an incomplete FPDU at the end of the stream
 * is an LLP error; the application sees (2,0,0x01) TCP stream lost.) */
START_TEST(test_truncated_then_close)
{
	uint8_t h[18], buf[256];
	const char msg[] = "truncated message body";
	static const size_t cut[] = { 1, 2, 7, 20 };
	up();
	hp_env_post_send(&E, 1, 16, true);
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ssize_t n = hp_build(E.peer, h, sizeof(h), msg, sizeof(msg), buf, sizeof(buf));
	ck_assert_int_gt(n, (ssize_t)cut[_i]);
	ck_assert_int_eq(hp_send_raw(E.peer, buf, cut[_i], 2000), 0);
	ck_assert_int_eq(shutdown(E.peer->fd, SHUT_WR), 0);
	struct hp_fpdu f;
	int r;
	while ((r = hp_recv_fpdu(E.peer, HP_WAIT_MS, &f)) == 1)
		;
	ck_assert_msg(r == 0 || r == -ECONNRESET, "our side kept the connection open (%d)", r);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	ck_assert_int_ne(iw_qp_state(E.qp), IW_QPS_RTS);
	struct iw_term_cause want = T(2, 0, 0x01);
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(E.qp), want), "QP cause %s, expected %s",
		      hp_cause(iw_qp_error(E.qp), 0), hp_cause(want, 1));
	hp_env_drain(&E, NULL);
	/* The partial SEND may have reached the receive buffer's first bytes. */
	hp_env_allow_either(&E, E.arena + E.recv_off, msg, sizeof(msg));
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* The peer's FIN after whole FPDUs: inside a SEND message (first segment
 * only: stream lost) or between messages (a graceful close: no cause). */
START_TEST(test_close_between_fpdus)
{
	uint8_t h[18], data[16];
	bool mid = _i == 0;
	memset(data, 0x19, sizeof(data));
	up();
	good_send("whole");
	hp_hdr_untagged(h, IW_OP_SEND, 0, 2, 0, !mid, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	if (mid)
		hp_env_allow(&E, E.arena + E.recv_off + HP_RECV_LEN, data, sizeof(data));
	else {
		hp_env_allow(&E, E.arena + E.recv_off + HP_RECV_LEN, data, sizeof(data));
		E.may_succeed[1] = true;
	}
	ck_assert_int_eq(shutdown(E.peer->fd, SHUT_WR), 0);
	struct hp_fpdu f;
	int r;
	while ((r = hp_recv_fpdu(E.peer, HP_WAIT_MS, &f)) == 1)
		ck_assert(f.tagged || f.opcode != IW_OP_TERMINATE);
	ck_assert_msg(r == 0 || r == -ECONNRESET, "our side kept the connection open (%d)", r);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	struct iw_term_cause want = mid ? T(2, 0, 0x01) : IW_TERM_CAUSE_NONE; /* graceful: no cause */
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(E.qp), want), "QP cause %s, expected %s",
		      hp_cause(iw_qp_error(E.qp), 0), hp_cause(want, 1));
	ck_assert_int_ne(iw_qp_state(E.qp), IW_QPS_RTS);
	hp_env_drain(&E, NULL);
	ck_assert_int_eq(E.status[0], IW_WC_SUCCESS);
	if (!mid)
		ck_assert_int_eq(E.status[1], IW_WC_SUCCESS);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* After our Terminate and FIN the peer keeps its end open and silent: the
 * WRs are flushed at once, and the application still gets DISCONNECTED
 * within the Terminate bound (the connection is reset then), not after the
 * transport's 5 s graceful-close wait. */
START_TEST(test_peer_stays_open)
{
	uint8_t h[14], data[16] = { 0 };
	struct iw_term_cause want = T(1, 1, 0x00);
	struct iw_rdmap_term t;
	up();
	hp_hdr_tagged(h, IW_OP_WRITE, 0xDEADBE00u, 0x1000, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	ck_assert_int_eq(hp_expect_term(E.peer, HP_WAIT_MS, &t), 0);
	ck_assert(iw_term_cause_eq(t.cause, want));
	uint64_t t0 = hp_now_ms();
	hp_env_drain(&E, &want);
	ck_assert_uint_lt(hp_now_ms() - t0, 2000);
	ck_assert(iw_term_cause_eq(iw_qp_error(E.qp), want));
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_TERM_BOUND_MS + HP_TIMER_SLACK_MS));
	ck_assert_uint_lt(hp_now_ms() - t0, HP_TERM_BOUND_MS + HP_TIMER_SLACK_MS);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* Odd Terminates: an empty body (shorter than its 4-byte control word),
 * a 1000-byte body (longer than any Terminate), and one split over two
 * segments. Whatever we make of them, the stream stops, we close, the QP
 * is in error and everything is flushed. */
START_TEST(test_terminate_malformed)
{
	uint8_t h[18], body[1000];
	struct hp_fpdu f;
	int r;
	memset(body, 0, sizeof(body));
	body[0] = 0x11; /* DDP, tagged buffer */
	up();
	hp_env_post_read(&E, 5, 0x100u, 0x2000, 16);
	if (_i == 0) {
		hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 0, true, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), NULL, 0), 0);
	} else if (_i == 1) {
		hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 0, true, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	} else {
		hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 0, false, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, 2), 0);
		hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 2, true, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body + 2, 2), 0);
	}
	while ((r = hp_recv_fpdu(E.peer, HP_WAIT_MS, &f)) == 1)
		;
	ck_assert_msg(r == 0 || r == -ECONNRESET, "our side kept the connection open (%d)", r);
	shutdown(E.peer->fd, SHUT_WR);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_ERROR);
	if (getenv("HP_DEBUG"))
		fprintf(stderr, "malformed terminate %d: QP cause %s\n", _i, hp_cause(iw_qp_error(E.qp), 0));
	/* Empty, or split so that a segment cannot hold the 4-byte control
	 * word: below the minimum ULPDU, (2,0,0x03); too long for any
	 * Terminate: (1,2,0x05). */
	static const struct iw_term_cause want[] = { { 2, 0, 0x03, true }, { 1, 2, 0x05, true }, { 2, 0, 0x03, true } };
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(E.qp), want[_i]), "QP cause %s", hp_cause(iw_qp_error(E.qp), 0));
	hp_env_drain(&E, NULL);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* Zero-length operations: a zero-length Read Request gets a zero-length
 * Read Response; a zero-length WRITE touches no memory and is accepted
 * whatever its STag (RFC 6581's zero-length WRITE RTR relies on that; a
 * choice documented in rdmap_conn.c), so an MSN error ends the case. */
START_TEST(test_zero_length)
{
	struct hp_fpdu f;
	uint8_t h[14];
	up();
	ck_assert_int_eq(hp_send_read_req(E.peer, 0x7700u, 0x40, 0, hp_mr_stag(&E, HP_MR_R), hp_mr_to(&E, HP_MR_R)),
			 0);
	ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	ck_assert_uint_eq(f.opcode, IW_OP_READ_RESP);
	ck_assert_uint_eq(f.payload_len, 0);
	ck_assert_uint_eq(f.stag, 0x7700u);
	ck_assert(f.last);
	hp_hdr_tagged(h, IW_OP_WRITE, 0x00ABCD00u, 0, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), NULL, 0), 0);
	ck_assert(hp_quiet(E.peer, 100));
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_RTS);
	uint8_t u[18];
	hp_hdr_untagged(u, IW_OP_SEND, 0, 9, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, u, sizeof(u), "x", 1), 0);
	hp_env_expect_term(&E, T(1, 2, 0x03), u, sizeof(u));
	down();
}
END_TEST

/* Send with Invalidate naming an STag that does not exist, and STag 0. */
START_TEST(test_send_inv_unknown)
{
	uint8_t h[18];
	up();
	hp_hdr_untagged(h, IW_OP_SEND_INV, 0, 1, 0, true, _i ? 0u : 0x00FEDC00u);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "inv", 3), 0);
	hp_env_allow_either(&E, E.arena + E.recv_off, "inv", 3);
	hp_env_expect_term(&E, T(0, 1, 0x09), h, sizeof(h));
	down();
}
END_TEST

/* A Read Request with MSN 0, 2, 0xFFFFFFFF on QN 1 (first request). */
START_TEST(test_read_req_bad_msn)
{
	static const uint32_t msn[] = { 0, 2, 0xFFFFFFFFu };
	uint8_t h[18], body[28];
	struct iw_rdmap_read_req rr = { 0x100, 0, 16, 0, 0 };
	up();
	rr.src_stag = hp_mr_stag(&E, HP_MR_R);
	rr.src_to = hp_mr_to(&E, HP_MR_R);
	iw_rdmap_read_req_encode(&rr, body);
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, msn[_i], 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), body, sizeof(body)), 0);
	hp_env_expect_term(&E, T(1, 2, 0x03), h, sizeof(h));
	down();
}
END_TEST

/* Reserved bits: DDP control (0x3C) and RDMAP control (0x30) set on a
 * SEND and a WRITE are ignored on receipt (RFC 5041 sec. 4.1, RFC 5040
 * sec. 4.1); both are delivered. */
START_TEST(test_reserved_bits_ignored)
{
	uint8_t h[18], w[14];
	struct iw_wc wc;
	up();
	hp_hdr_tagged(w, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W) + 4, true);
	w[0] |= 0x3C;
	w[1] |= 0x30;
	ck_assert_int_eq(hp_send_fpdu(E.peer, w, sizeof(w), "rsvd-write", 10), 0);
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	h[0] |= 0x3C;
	h[1] |= 0x30;
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "rsvd-send", 9), 0);
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 9);
	E.ndone[0] = 1;
	hp_env_allow(&E, hp_mr_ptr(&E, HP_MR_W) + 4, "rsvd-write", 10);
	hp_env_allow(&E, E.arena + E.recv_off, "rsvd-send", 9);
	hp_env_check_guards(&E);
	ck_assert(hp_quiet(E.peer, 50));
	down();
}
END_TEST

/* The peer as responder puts a SEND right behind its Reply, before our
 * first FPDU (RFC 5044 sec. 7.1 forbids it for the responder; as the
 * receiver we may be lenient). The Reply is read exactly, the SEND is the
 * stream's first FPDU and is delivered. */
START_TEST(test_fpdu_behind_reply)
{
	uint8_t buf[256], h[18];
	struct iw_wc wc;
	struct sockaddr_storage ss;
	hp_env_init(&E);
	E.lfd = hp_listen(&ss);
	ck_assert_int_ge(E.lfd, 0);
	ck_assert_int_eq(iw_cm_create_id(E.ch, &E, &E.id), 0);
	ck_assert_int_eq(iw_cm_connect(E.id, E.qp, (struct sockaddr *)&ss, NULL), 0);
	ck_assert_int_eq(hp_accept(E.peer, E.lfd, HP_WAIT_MS, 0), 0);
	uint8_t req[24];
	ck_assert_int_eq(hp_recv_exact(E.peer, req, sizeof(req), HP_WAIT_MS), 0);
	size_t n = iwt_mpa_rep_bytes(0x50, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL, 0, buf);
	E.peer->crc = true;
	hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
	ssize_t k = hp_build(E.peer, h, sizeof(h), "early", 5, buf + n, sizeof(buf) - n);
	ck_assert_int_gt(k, 0);
	ck_assert_int_eq(hp_send_raw(E.peer, buf, n + (size_t)k, 2000), 0);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_ESTABLISHED, HP_WAIT_MS));
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int r;
	while ((r = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 5);
	E.ndone[0] = 1;
	hp_env_allow(&E, E.arena + E.recv_off, "early", 5);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* The peer's Request says ORD 0, so we grant IRD 0; it sends a Read
 * Request anyway: beyond IRD, (0,2,0x07). */
START_TEST(test_read_with_ird_zero)
{
	struct hp_mpa m = { .flags = 0x50, .rev = 2, .ird = 4, .ord = 0 };
	uint8_t h[18];
	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, NULL);
	ck_assert_uint_eq(E.peer->peer_ird, 0);
	ck_assert_int_eq(hp_send_read_req(E.peer, 0x100, 0, 16, hp_mr_stag(&E, HP_MR_R), hp_mr_to(&E, HP_MR_R)), 0);
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, 1, 0, true, 0);
	hp_env_expect_term(&E, T(0, 2, 0x07), h, sizeof(h));
	down();
}
END_TEST

/* The peer (responder) grants us ORD 0 (its Reply says IRD 0). A READ we
 * post must not go out (the peer never sees a Read Request); it is
 * refused at post time or flushed when the connection ends. */
START_TEST(test_our_read_with_ord_zero)
{
	struct hp_mpa m = { .flags = 0x50, .rev = 2, .ird = 0, .ord = 4 };
	struct hp_fpdu f;
	hp_env_init(&E);
	hp_env_peer_responds(&E, &m, 0, NULL);
	struct iw_sge sge = { (uint64_t)(uintptr_t)(E.arena + E.sink_off), 16, iw_mr_stag(E.smr) };
	struct iw_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_READ,
				 .remote_addr = 0x1000, .rkey = 0x100 }, *bad = NULL;
	int rc = iw_post_send(E.qp, &wr, &bad);
	if (rc == 0)
		hp_env_track(&E, 9, false);
	if (getenv("HP_DEBUG"))
		fprintf(stderr, "READ with ORD 0: post %d\n", rc);
	/* A SEND of the peer lets our side transmit (lock-step); nothing but
	 * a possible SEND of ours may come back. */
	good_send("hi");
	int r = hp_recv_fpdu(E.peer, 300, &f);
	ck_assert_msg(r == -ETIMEDOUT, "our side sent something (%d, opcode %u)", r, f.opcode);
	ck_assert_int_eq(shutdown(E.peer->fd, SHUT_WR), 0);
	ck_assert_int_eq(hp_wait_closed(E.peer, HP_WAIT_MS), 0);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	hp_env_drain(&E, NULL);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* Our READ of 32 bytes gets a 16-byte response marked last: the READ
 * fails, the stream stops with RDMAP remote operation, unspecified (RFC
 * 5040 sec. 7: no specific code for a short response). */
START_TEST(test_read_response_short)
{
	struct hp_fpdu f;
	uint8_t h[14], data[16];
	memset(data, 0x3A, sizeof(data));
	up();
	good_send("go");
	hp_env_post_read(&E, 1, 0xABCD00u, 0x5000, 32);
	ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
	ck_assert_uint_eq(f.opcode, IW_OP_READ_REQ);
	struct iw_rdmap_read_req rr;
	iw_rdmap_read_req_decode(f.payload, &rr);
	hp_hdr_tagged(h, IW_OP_READ_RESP, rr.sink_stag, rr.sink_to, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_allow(&E, E.arena + E.sink_off, data, sizeof(data)); /* placed into our sink before L said short */
	hp_env_expect_term(&E, T(0, 2, 0xFF), h, sizeof(h));
	down();
}
END_TEST

/* The peer never reads: our 16 MiB WRITE fills the socket and stalls.
 * Then the peer sends a bad FPDU. Our Terminate usually cannot get out
 * behind the stuck FPDUs (with large socket buffers it may, and then the
 * peer does not answer our FIN); either way within the Terminate bound
 * (3 s) we abort, tell the application, and complete the WRITE exactly
 * once with an error. */
START_TEST(test_error_while_tx_blocked)
{
	enum { SZ = 16 << 20 };
	struct hp_mpa m = { HP_MPA_DEFAULT, .rcvbuf = 4096 };
	uint8_t *mem = malloc(SZ), h[18];
	struct iw_mr *mr;
	ck_assert_ptr_nonnull(mem);
	memset(mem, 0x5D, SZ);
	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, NULL);
	ck_assert_int_eq(iw_reg_mr(E.pd, mem, SZ, 0, &mr), 0);
	good_send("go"); /* opens our lock-step transmit gate */
	struct iw_sge sge = { (uint64_t)(uintptr_t)mem, SZ, iw_mr_stag(mr) };
	struct iw_send_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_WRITE,
				 .remote_addr = 0x10000, .rkey = 0x4200 }, *bad = NULL;
	ck_assert_int_eq(iw_post_send(E.qp, &wr, &bad), 0);
	hp_env_track(&E, 77, false);
	usleep(200000);
	hp_hdr_untagged(h, IW_OP_SEND, 0, 9, 0, true, 0);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "x", 1), 0);
	uint64_t t0 = hp_now_ms();
	/* Whether the Terminate still fits into our socket depends on its
	 * buffer sizes (sysctls): either way the Terminate bound holds. */
	struct iw_cm_event *ev = hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_TERM_BOUND_MS + HP_TIMER_SLACK_MS);
	iw_cm_ack_event(ev);
	ck_assert_uint_lt(hp_now_ms() - t0, HP_TERM_BOUND_MS + HP_TIMER_SLACK_MS);
	struct iw_term_cause want = T(1, 2, 0x03);
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(E.qp), want), "QP cause %s", hp_cause(iw_qp_error(E.qp), 0));
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_ERROR);
	hp_env_drain(&E, &want);
	ck_assert_int_ne(E.status[E.n_wr - 1], IW_WC_SUCCESS);
	hp_env_check_guards(&E);
	/* The peer's side: the connection was aborted or closed. */
	ck_assert_int_eq(hp_wait_closed(E.peer, 3000), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	free(mem);
	down();
}
END_TEST

/* Nothing blocks our transmit, so the Terminate and our FIN are written at
 * once, but the peer never reads nor closes: the graceful close must not
 * outlast the Terminate bound (it waited the 5000 ms graceful-close
 * timeout; issue 11). The QP is flushed at once, DISCONNECTED follows
 * within the bound and the peer's connection is reset. */
START_TEST(test_term_written_peer_silent)
{
	uint8_t h[18];
	up();
	good_send("go");
	hp_env_post_send(&E, 1, 16, true);
	hp_hdr_untagged(h, IW_OP_SEND, 0, 9, 0, true, 0);
	uint64_t t0 = hp_now_ms();
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), "x", 1), 0);
	struct iw_term_cause want = T(1, 2, 0x03);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_TERM_BOUND_MS + HP_TIMER_SLACK_MS));
	ck_assert_uint_lt(hp_now_ms() - t0, HP_TERM_BOUND_MS + HP_TIMER_SLACK_MS);
	ck_assert_msg(iw_term_cause_eq(iw_qp_error(E.qp), want), "QP cause %s", hp_cause(iw_qp_error(E.qp), 0));
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_ERROR);
	hp_env_drain(&E, &want);
	hp_env_check_guards(&E);
	ck_assert_int_eq(hp_wait_closed(E.peer, HP_WAIT_MS), 0);
	down();
}
END_TEST

/* The peer initiates and then never sends an FPDU: as responder we may
 * not send first (RFC 5044 sec. 7.1), so our SEND waits. The application
 * disconnects: the SEND is flushed exactly once, the connection closes,
 * nothing hangs. */
START_TEST(test_silent_initiator_disconnect)
{
	up();
	hp_env_post_send(&E, 1, 16, false);
	ck_assert(hp_quiet(E.peer, 300));
	ck_assert_int_eq(iw_cm_disconnect(E.id), 0);
	ck_assert_int_eq(hp_wait_closed(E.peer, HP_WAIT_MS), 0);
	shutdown(E.peer->fd, SHUT_WR);
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	ck_assert_int_ne(iw_qp_state(E.qp), IW_QPS_RTS);
	hp_env_drain(&E, NULL);
	ck_assert_int_eq(E.status[E.n_wr - 1], IW_WC_WR_FLUSH_ERR);
	hp_env_check_guards(&E);
	down();
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_frames");
	TCase *tc = tcase_create("frames");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_bad_crc, 0, 4);
	tcase_add_loop_test(tc, test_modes_bounds, 0, 8);
	tcase_add_loop_test(tc, test_bad_marker, 0, 2);
	tcase_add_test(tc, test_marker_reserved_ignored);
	tcase_add_loop_test(tc, test_ulpdu_tiny, 0, 2);
	tcase_add_test(tc, test_ulpdu_short_header);
	tcase_add_test(tc, test_ulpdu_short_read_req);
	tcase_add_test(tc, test_ulpdu_too_large);
	tcase_add_test(tc, test_ulpdu_max_send);
	tcase_add_test(tc, test_send_too_long);
	tcase_add_loop_test(tc, test_bad_ddp_version, 0, 6);
	tcase_add_loop_test(tc, test_bad_rdmap_version, 0, 3);
	tcase_add_loop_test(tc, test_unknown_opcode, 0, 16);
	tcase_add_loop_test(tc, test_opcode_wrong_model, 0, 5);
	tcase_add_loop_test(tc, test_wrong_qn, 0, 8);
	tcase_add_loop_test(tc, test_msn_out_of_range, 0, 3);
	tcase_add_test(tc, test_msn_replayed);
	tcase_add_loop_test(tc, test_wrong_mo, 0, 2);
	tcase_add_test(tc, test_no_receive_buffer);
	tcase_add_loop_test(tc, test_write_overlaps_end, 0, 16);
	tcase_add_test(tc, test_write_before_start);
	tcase_add_test(tc, test_write_oversized);
	tcase_add_test(tc, test_write_to_wrap);
	tcase_add_loop_test(tc, test_write_no_right, 0, 4);
	tcase_add_test(tc, test_write_deregistered);
	tcase_add_loop_test(tc, test_write_unknown_stag, 0, 4);
	tcase_add_loop_test(tc, test_read_ok, 0, 3);
	tcase_add_loop_test(tc, test_read_no_right, 0, 3);
	tcase_add_loop_test(tc, test_read_out_of_bounds, 0, 4);
	tcase_add_test(tc, test_read_unknown_stag);
	tcase_add_test(tc, test_read_beyond_ird);
	tcase_add_test(tc, test_read_response_unsolicited);
	tcase_add_loop_test(tc, test_read_response_mismatch, 0, 2);
	tcase_add_test(tc, test_terminate_first);
	tcase_add_test(tc, test_terminate_mid_message);
	tcase_add_test(tc, test_terminate_twice);
	tcase_add_test(tc, test_terminate_siw_layout);
	tcase_add_loop_test(tc, test_truncated_then_close, 0, 4);
	tcase_add_loop_test(tc, test_close_between_fpdus, 0, 2);
	tcase_add_test(tc, test_peer_stays_open);
	tcase_add_loop_test(tc, test_terminate_malformed, 0, 3);
	tcase_add_test(tc, test_zero_length);
	tcase_add_loop_test(tc, test_send_inv_unknown, 0, 2);
	tcase_add_loop_test(tc, test_read_req_bad_msn, 0, 3);
	tcase_add_test(tc, test_reserved_bits_ignored);
	tcase_add_test(tc, test_fpdu_behind_reply);
	tcase_add_test(tc, test_read_with_ird_zero);
	tcase_add_test(tc, test_our_read_with_ord_zero);
	tcase_add_test(tc, test_read_response_short);
	tcase_add_test(tc, test_error_while_tx_blocked);
	tcase_add_test(tc, test_term_written_peer_silent);
	tcase_add_test(tc, test_silent_initiator_disconnect);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
