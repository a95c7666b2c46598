/* What the engine's owner may ask (rdmap/rdmap_query.c) and the RTR
 * builder (rdmap/rdmap_rtr.c), over two engines back to back: each
 * answer checked against what the test itself posted, pulled and
 * delivered. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/verbs.h>

#include "iwt_b2b.h"
#include "iwt_check.h"
#include "rdmap/rdmap_wire.h"

static struct iwt_b2b *b2b_new(bool crc, bool markers, uint16_t ord)
{
	struct iw_rdmap_conn_cfg cfg = {
		.crc = crc, .markers_tx = markers, .markers_rx = markers, .mulpdu = 1442, .ird = 8, .ord = ord,
	};
	struct iwt_b2b *t = calloc(1, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	iwt_b2b_init(t, &cfg, 7);
	return t;
}

static void b2b_free(struct iwt_b2b *t)
{
	iwt_b2b_fini(t);
	free(t);
}

static struct iw_rdmap_wr wr_one(enum iw_rdmap_wr_opcode op, uint64_t cookie, void *buf, size_t len)
{
	struct iw_rdmap_wr wr = { .cookie = cookie, .opcode = op, .nsge = 1 };
	wr.sgl[0].iov_base = buf;
	wr.sgl[0].iov_len = len;
	return wr;
}

START_TEST(fresh_connection)
{
	struct iwt_b2b *t = b2b_new(true, false, 5);
	const struct iw_rdmap_conn *c = &t->a.conn;
	uint64_t cookie = 99;

	ck_assert(iw_rdmap_running(c));
	ck_assert_uint_eq(iw_rdmap_sq_next_index(c), 0);
	ck_assert_uint_eq(iw_rdmap_sq_outstanding(c), 0);
	ck_assert(iw_rdmap_tx_drained(c));
	ck_assert_uint_eq(iw_rdmap_ord(c), 5);
	ck_assert(!iw_rdmap_oldest_read(c, &cookie));
	ck_assert(!iw_rdmap_oldest_started(c, IW_RDMAP_WR_ANY, &cookie));
	ck_assert_uint_eq(cookie, 99); /* untouched when there is none */
	ck_assert(!iw_rdmap_rx_mid_fpdu(c));
	ck_assert_uint_eq(iw_rdmap_tx_in_flight(c), 0);
	ck_assert_uint_eq(iw_rdmap_rx_last_ulpdu_len(c), 0);
	ck_assert(iw_rdmap_config(c)->crc);
	ck_assert(!iw_rdmap_config(c)->markers_rx);
	ck_assert_uint_eq(iw_rdmap_config(c)->mulpdu, 1442);
	struct iw_rdmap_stats st = iw_rdmap_get_stats(c);
	ck_assert_uint_eq(st.fpdus_tx + st.fpdus_rx + st.bytes_placed, 0);
	b2b_free(t);
}
END_TEST

/* A READ and a SEND in flight: the oldest READ, the oldest started WR by
 * opcode, the SQ indices, the drain; the receiver's view of the SEND. */
START_TEST(send_queue_in_flight)
{
	struct iwt_b2b *t = b2b_new(true, false, 4);
	static uint8_t src[3000], sink[3000], msg[100], rbuf[100];
	uint64_t cookie = 0;

	memset(src, 0x5A, sizeof(src));
	uint32_t src_stag = iwt_mem_reg(&t->b.mem, src, sizeof(src), IW_ACCESS_REMOTE_READ, 1, 1);
	uint32_t sink_stag = iwt_mem_reg(&t->a.mem, sink, sizeof(sink), IW_ACCESS_LOCAL_WRITE, 1, 2);
	struct iovec rv = { rbuf, sizeof(rbuf) };
	iwt_mem_post_recv(&t->b.mem, 1, &rv, 1);

	struct iw_rdmap_wr rd = wr_one(IW_RDMAP_WR_READ, 10, sink, sizeof(sink));
	rd.local_stag = sink_stag;
	rd.local_to = (uint64_t)(uintptr_t)sink;
	rd.remote_stag = src_stag;
	rd.remote_to = (uint64_t)(uintptr_t)src;
	struct iw_rdmap_wr sd = wr_one(IW_RDMAP_WR_SEND, 11, msg, sizeof(msg));
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &rd), 0);
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &sd), 0);
	const struct iw_rdmap_conn *a = &t->a.conn;
	ck_assert_uint_eq(iw_rdmap_sq_next_index(a), 2);
	ck_assert_uint_eq(iw_rdmap_sq_outstanding(a), 2);
	ck_assert(!iw_rdmap_tx_drained(a));
	/* Posted, not yet transmitted: nothing started. */
	ck_assert(!iw_rdmap_oldest_started(a, IW_RDMAP_WR_ANY, &cookie));
	ck_assert(!iw_rdmap_oldest_read(a, &cookie));

	iwt_ep_pull(t, &t->a);
	ck_assert_uint_eq(iw_rdmap_sq_outstanding(a), 2); /* sent, not completed */
	ck_assert(iw_rdmap_oldest_read(a, &cookie));
	ck_assert_uint_eq(cookie, 10);
	ck_assert(iw_rdmap_oldest_started(a, IW_RDMAP_WR_ANY, &cookie));
	ck_assert_uint_eq(cookie, 10);
	ck_assert(iw_rdmap_oldest_started(a, IW_RDMAP_WR_SENDS, &cookie));
	ck_assert_uint_eq(cookie, 11);
	ck_assert(!iw_rdmap_oldest_started(a, IW_RDMAP_WR_BIT(IW_RDMAP_WR_WRITE), &cookie));

	ck_assert(iwt_b2b_pump(t, 100));
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE), 2);
	ck_assert_uint_eq(iw_rdmap_sq_outstanding(a), 0);
	ck_assert_uint_eq(iw_rdmap_sq_next_index(a), 2);
	ck_assert(iw_rdmap_tx_drained(a));
	ck_assert_uint_eq(iw_rdmap_tx_in_flight(a), 0);
	ck_assert(!iw_rdmap_oldest_read(a, &cookie));
	ck_assert(!iw_rdmap_oldest_started(a, IW_RDMAP_WR_ANY, &cookie));
	ck_assert_mem_eq(sink, src, sizeof(sink));

	const struct iw_rdmap_conn *b = &t->b.conn;
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_RECV_DONE), 1);
	ck_assert_uint_eq(iw_rdmap_rx_opcode(b), IW_OP_SEND);
	ck_assert_uint_gt(iw_rdmap_rx_last_ulpdu_len(b), sizeof(msg));
	struct iw_rdmap_stats sa = iw_rdmap_get_stats(a), sb = iw_rdmap_get_stats(b);
	ck_assert_uint_eq(sa.fpdus_tx, t->a.conn.fpdus_tx);
	ck_assert_uint_eq(sb.fpdus_rx, t->b.conn.fpdus_rx);
	ck_assert_uint_eq(sa.bytes_placed, sizeof(sink));
	ck_assert_uint_eq(sb.bytes_placed, t->b.conn.bytes_placed);

	/* The STag callback, as the engine uses it. */
	uint8_t *addr = NULL;
	ck_assert_int_eq(iw_rdmap_stag(b, src_stag, (uint64_t)(uintptr_t)src + 8, 16, IW_RDMAP_ACC_REMOTE_READ, &addr),
			 IW_STAG_OK);
	ck_assert_ptr_eq(addr, src + 8);
	ck_assert_int_ne(iw_rdmap_stag(b, src_stag ^ 1, (uint64_t)(uintptr_t)src, 16, IW_RDMAP_ACC_REMOTE_READ, &addr),
			 IW_STAG_OK);

	iw_rdmap_fail(&t->a.conn, IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_LOCAL_CATA, 0));
	ck_assert(!iw_rdmap_running(a));
	b2b_free(t);
}
END_TEST

/* Only between FPDUs is the inbound stream at a clean end. */
START_TEST(mid_fpdu)
{
	struct iwt_b2b *t = b2b_new(true, false, 4);
	static uint8_t msg[64], rbuf[64];
	struct iovec rv = { rbuf, sizeof(rbuf) };
	iwt_mem_post_recv(&t->b.mem, 1, &rv, 1);
	struct iw_rdmap_wr sd = wr_one(IW_RDMAP_WR_SEND, 1, msg, sizeof(msg));
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &sd), 0);
	iwt_ep_pull(t, &t->a);
	ck_assert_uint_gt(t->a.wire_len, 10);
	iwt_ep_deliver(t, &t->a, &t->b, 10);
	ck_assert(iw_rdmap_rx_mid_fpdu(&t->b.conn));
	iwt_ep_deliver(t, &t->a, &t->b, SIZE_MAX);
	ck_assert(!iw_rdmap_rx_mid_fpdu(&t->b.conn));
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_RECV_DONE), 1);
	b2b_free(t);
}
END_TEST

static size_t flatten(const struct iovec *iov, int n, uint8_t *out, size_t cap)
{
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		ck_assert_uint_le(len + iov[i].iov_len, cap);
		memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	return len;
}

/* The RTR is a zero-length tagged RDMA WRITE (STag 0, TO 0) framed in the
 * connection's own MPA stream: the same bytes as that header injected by
 * hand, and what the engine sends next stays in step at the peer. */
static void rtr_case(bool crc, bool markers)
{
	/* DDP: T, L, DV 1; RDMAP: RV 1, WRITE; STag 0; TO 0. */
	static const uint8_t hdr_by_hand[14] = { 0xC1, 0x40 };
	struct iwt_b2b *t = b2b_new(crc, markers, 4), *ref = b2b_new(crc, markers, 4);
	struct iw_mpa_tx_frame fr;
	uint8_t markers_room[IW_RDMAP_RTR_MARKERS][IW_MPA_MARKER_LEN], hdr[IW_DDP_UNTAGGED_HDR_LEN];
	struct iovec iov[16];
	uint8_t wire[256];

	int n = iw_rdmap_build_rtr(&t->a.conn, &fr, markers_room, hdr, iov, 16);
	ck_assert_int_gt(n, 0);
	size_t len = flatten(iov, n, wire, sizeof(wire));
	ck_assert_uint_eq(len, fr.wire_len);
	iwt_ep_inject(&ref->a, hdr_by_hand, sizeof(hdr_by_hand), NULL, 0);
	ck_assert_uint_eq(len, ref->a.wire_len);
	ck_assert_mem_eq(wire, ref->a.wire, len);
	/* No work request, no statistic. */
	ck_assert_uint_eq(iw_rdmap_sq_next_index(&t->a.conn), 0);
	ck_assert_uint_eq(iw_rdmap_get_stats(&t->a.conn).fpdus_tx, 0);

	/* The peer takes it, then a WRITE the engine frames after it. */
	static uint8_t src[2000], dst[2000];
	memset(src, 0x3C, sizeof(src));
	uint32_t dst_stag = iwt_mem_reg(&t->b.mem, dst, sizeof(dst), IW_ACCESS_REMOTE_WRITE, 1, 3);
	ck_assert_uint_eq(iw_rdmap_rx_feed(&t->b.conn, wire, len), len);
	struct iw_rdmap_wr w = wr_one(IW_RDMAP_WR_WRITE, 1, src, sizeof(src));
	w.remote_stag = dst_stag;
	w.remote_to = (uint64_t)(uintptr_t)dst;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &w), 0);
	ck_assert(iwt_b2b_pump(t, 100));
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_ERROR), 0);
	ck_assert(iw_rdmap_running(&t->b.conn));
	ck_assert_mem_eq(dst, src, sizeof(dst));
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE), 1);
	b2b_free(t);
	b2b_free(ref);
}

START_TEST(rtr_frame)
{
	rtr_case(false, false);
	rtr_case(true, false);
	rtr_case(true, true);
	rtr_case(false, true);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rdmap_query");
	TCase *t = tcase_create("query");
	tcase_add_test(t, fresh_connection);
	tcase_add_test(t, send_queue_in_flight);
	tcase_add_test(t, mid_fpdu);
	tcase_add_test(t, rtr_frame);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
