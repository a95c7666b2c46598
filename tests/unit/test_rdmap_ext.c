/* RFC 7306 in the RDMAP core: Atomic Request/Response and Immediate Data
 * wire formats (the layout Wireshark 4.0's iwarp_ddp_rdmap decodes), the
 * masked atomic semantics, and two engines back to back exchanging
 * atomics and Write with Immediate; every malformed, misdirected,
 * duplicated or unauthorised request earns its Terminate and changes no
 * memory. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/iw_bytes.h"
#include "ddp/ddp_wire.h"
#include "iwt_b2b.h"
#include "iwt_check.h"
#include "iwt_common.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"
#include "mpa/mpa_wire.h"
#include "rdmap/rdmap_check.h"
#include "rdmap/rdmap_wire.h"

#define MULPDU 1442

static struct iw_rdmap_conn_cfg make_cfg(bool crc, bool markers, bool ext)
{
	struct iw_rdmap_conn_cfg cfg = {
		.crc = crc,
		.markers_tx = markers,
		.markers_rx = markers,
		.mulpdu = MULPDU,
		.ird = 8,
		.ord = 8,
		.rfc7306 = ext,
	};
	return cfg;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ------------------------------------------------------------------ */
/* Wire formats                                                        */

START_TEST(atomic_req_exact_bytes)
{
	const struct iw_rdmap_atomic_req r = {
		.op = IW_ATOMIC_CMP_SWAP,
		.req_id = 0x01020304,
		.stag = 0xDEADBE00,
		.to = 0x1122334455667788ULL,
		.add_swap = 0xA1A2A3A4A5A6A7A8ULL,
		.add_swap_mask = 0xB1B2B3B4B5B6B7B8ULL,
		.compare = 0xC1C2C3C4C5C6C7C8ULL,
		.compare_mask = 0xD1D2D3D4D5D6D7D8ULL,
	};
	static const uint8_t want[IW_RDMAP_ATOMIC_REQ_LEN] = {
		0x00, 0x00, 0x00, 0x02,                         /* reserved | AOpCode */
		0x01, 0x02, 0x03, 0x04,                         /* request identifier */
		0xDE, 0xAD, 0xBE, 0x00,                         /* remote STag */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* remote TO */
		0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, /* add or swap data */
		0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, /* add or swap mask */
		0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, /* compare data */
		0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, /* compare mask */
	};
	uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN + 4];
	memset(out, 0xEE, sizeof(out));
	iw_rdmap_atomic_req_encode(&r, out);
	ck_assert_mem_eq(out, want, sizeof(want));
	for (size_t i = IW_RDMAP_ATOMIC_REQ_LEN; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xEE);
	struct iw_rdmap_atomic_req d;
	iw_rdmap_atomic_req_decode(want, &d);
	ck_assert(memcmp(&d.req_id, &r.req_id, 4) == 0);
	ck_assert_uint_eq(d.op, r.op);
	ck_assert_uint_eq(d.rsvd, 0);
	ck_assert_uint_eq(d.stag, r.stag);
	ck_assert_uint_eq(d.to, r.to);
	ck_assert_uint_eq(d.add_swap, r.add_swap);
	ck_assert_uint_eq(d.add_swap_mask, r.add_swap_mask);
	ck_assert_uint_eq(d.compare, r.compare);
	ck_assert_uint_eq(d.compare_mask, r.compare_mask);
	/* Reserved bits above the opcode are kept apart from it. */
	uint8_t odd[IW_RDMAP_ATOMIC_REQ_LEN];
	memcpy(odd, want, sizeof(odd));
	odd[0] = 0x80;
	odd[3] = 0x30;
	iw_rdmap_atomic_req_decode(odd, &d);
	ck_assert_uint_eq(d.op, 0);
	ck_assert_uint_eq(d.rsvd, 0x80000030u);
}
END_TEST

START_TEST(atomic_resp_exact_bytes)
{
	const struct iw_rdmap_atomic_resp r = { .req_id = 0xCAFEBABE, .orig = 0x0102030405060708ULL };
	static const uint8_t want[IW_RDMAP_ATOMIC_RESP_LEN] = { 0xCA, 0xFE, 0xBA, 0xBE, 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t out[IW_RDMAP_ATOMIC_RESP_LEN];
	iw_rdmap_atomic_resp_encode(&r, out);
	ck_assert_mem_eq(out, want, sizeof(want));
	struct iw_rdmap_atomic_resp d;
	iw_rdmap_atomic_resp_decode(want, &d);
	ck_assert_uint_eq(d.req_id, r.req_id);
	ck_assert_uint_eq(d.orig, r.orig);
}
END_TEST

START_TEST(atomic_apply_semantics)
{
	bool ch;
	struct iw_rdmap_atomic_req fa = { .op = IW_ATOMIC_FETCH_ADD, .add_swap = 5 };
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&fa, 10, &ch), 15);
	ck_assert(ch);
	fa.add_swap = 1;
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&fa, UINT64_MAX, &ch), 0); /* wraps */
	fa.add_swap = 0;
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&fa, 42, &ch), 42);
	ck_assert(!ch);
	/* Masked add: two 32-bit fields, the carry out of the low one
	 * (mask bit 31) is dropped. */
	fa.add_swap = 0x0000000100000001ULL;
	fa.add_swap_mask = 0x0000000080000000ULL;
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&fa, 0x00000005FFFFFFFFULL, &ch), 0x0000000600000000ULL);
	fa.add_swap_mask = 0;
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&fa, 0x00000005FFFFFFFFULL, &ch), 0x0000000700000000ULL);

	struct iw_rdmap_atomic_req cs = { .op = IW_ATOMIC_CMP_SWAP,
					  .compare = 7,
					  .compare_mask = UINT64_MAX,
					  .add_swap = 99,
					  .add_swap_mask = UINT64_MAX };
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&cs, 7, &ch), 99);
	ck_assert(ch);
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&cs, 8, &ch), 8);
	ck_assert(!ch);
	/* Masked: compare only the low byte, swap only the high byte. */
	cs.compare = 0x07;
	cs.compare_mask = 0xFF;
	cs.add_swap = 0xAB00000000000000ULL;
	cs.add_swap_mask = 0xFF00000000000000ULL;
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&cs, 0x1234000000000F07ULL, &ch), 0xAB34000000000F07ULL);
	ck_assert_uint_eq(iw_rdmap_atomic_apply(&cs, 0x1234000000000F08ULL, &ch), 0x1234000000000F08ULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Back to back                                                        */

static struct iw_rdmap_wr atomic_wr(enum iw_rdmap_wr_opcode op, uint64_t cookie, uint64_t *res, uint32_t stag,
				    uint64_t to, uint64_t add_swap, uint64_t compare)
{
	struct iw_rdmap_wr wr = { .cookie = cookie, .opcode = op, .nsge = 1, .remote_stag = stag, .remote_to = to };
	wr.sgl[0].iov_base = res;
	wr.sgl[0].iov_len = sizeof(*res);
	wr.add_swap = add_swap;
	wr.compare = compare;
	return wr;
}

static void no_errors(const struct iwt_b2b *t)
{
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_ERROR), 0);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_ERROR), 0);
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_TERM_RECV), 0);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_TERM_RECV), 0);
}

START_TEST(atomics_b2b)
{
	struct iwt_b2b *t = calloc(1, sizeof(*t));
	struct iw_rdmap_conn_cfg cfg = make_cfg(_i & 1, _i & 2, true);
	iwt_b2b_init(t, &cfg, iwt_seed());
	_Alignas(8) static uint64_t target[4];
	target[0] = 100;
	target[1] = 7;
	uint32_t stag = iwt_mem_reg(&t->b.mem, target, sizeof(target), IW_RDMAP_ACC_REMOTE_ATOMIC, 1, 0x11);
	uint64_t res[40];
	memset(res, 0xEE, sizeof(res));
	/* 32 FetchAdds (more than ORD 8 and IRD 8: the queue limits pace them). */
	for (int i = 0; i < 32; i++) {
		struct iw_rdmap_wr wr = atomic_wr(IW_RDMAP_WR_ATOMIC_FETCH_ADD, (uint64_t)i, &res[i], stag,
						  va(&target[0]), 3, 0);
		ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wr), 0);
		if (i % 7 == 6)
			ck_assert(iwt_b2b_pump(t, 10000));
	}
	struct iw_rdmap_wr cs_hit = atomic_wr(IW_RDMAP_WR_ATOMIC_CMP_SWAP, 100, &res[32], stag, va(&target[1]), 55, 7);
	struct iw_rdmap_wr cs_miss =
		atomic_wr(IW_RDMAP_WR_ATOMIC_CMP_SWAP, 101, &res[33], stag, va(&target[1]), 66, 7);
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &cs_hit), 0);
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &cs_miss), 0);
	ck_assert(iwt_b2b_pump(t, 10000));
	no_errors(t);
	for (int i = 0; i < 32; i++)
		ck_assert_uint_eq(res[i], 100 + 3 * (uint64_t)i); /* each applied once, in order */
	ck_assert_uint_eq(target[0], 100 + 3 * 32);
	ck_assert_uint_eq(res[32], 7);
	ck_assert_uint_eq(res[33], 55); /* the miss returns the current value */
	ck_assert_uint_eq(target[1], 55);
	ck_assert_uint_eq(target[2], 0);
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE), 34);
	for (unsigned n = 0; n < 34; n++) {
		const struct iwt_event *e = iwt_ep_find(&t->a, IW_RDMAP_EV_SQ_DONE, n);
		ck_assert_uint_eq(e->ev.cookie, n < 32 ? n : 100 + (n - 32));
		ck_assert_uint_eq(e->ev.byte_len, 8);
	}
	iwt_b2b_fini(t);
	free(t);
}
END_TEST

/* A READ posted before an atomic on the same word returns the value from
 * before the atomic; one posted after returns it updated. */
START_TEST(atomic_ordered_with_reads)
{
	struct iwt_b2b *t = calloc(1, sizeof(*t));
	struct iw_rdmap_conn_cfg cfg = make_cfg(true, false, true);
	iwt_b2b_init(t, &cfg, iwt_seed());
	_Alignas(8) static uint64_t target;
	target = 1000;
	uint32_t stag = iwt_mem_reg(&t->b.mem, &target, sizeof(target),
				    IW_RDMAP_ACC_REMOTE_ATOMIC | IW_RDMAP_ACC_REMOTE_READ, 1, 0x12);
	_Alignas(8) static uint64_t before, after, res;
	uint32_t sink = iwt_mem_reg(&t->a.mem, &before, sizeof(before), IW_RDMAP_ACC_LOCAL_WRITE, 1, 0x13);
	uint32_t sink2 = iwt_mem_reg(&t->a.mem, &after, sizeof(after), IW_RDMAP_ACC_LOCAL_WRITE, 1, 0x14);
	for (int round = 0; round < 20; round++) {
		uint64_t start = target;
		struct iw_rdmap_wr rd = { .cookie = 1, .opcode = IW_RDMAP_WR_READ, .nsge = 1, .remote_stag = stag,
					  .remote_to = va(&target), .local_stag = sink, .local_to = va(&before) };
		rd.sgl[0].iov_base = &before;
		rd.sgl[0].iov_len = 8;
		struct iw_rdmap_wr at = atomic_wr(IW_RDMAP_WR_ATOMIC_FETCH_ADD, 2, &res, stag, va(&target), 1, 0);
		struct iw_rdmap_wr rd2 = rd;
		rd2.cookie = 3;
		rd2.local_stag = sink2;
		rd2.local_to = va(&after);
		rd2.sgl[0].iov_base = &after;
		ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &rd), 0);
		ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), 0);
		ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &rd2), 0);
		ck_assert(iwt_b2b_pump(t, 10000));
		no_errors(t);
		ck_assert_uint_eq(before, start);
		ck_assert_uint_eq(res, start);
		ck_assert_uint_eq(after, start + 1);
	}
	iwt_b2b_fini(t);
	free(t);
}
END_TEST

START_TEST(write_with_imm_b2b)
{
	struct iwt_b2b *t = calloc(1, sizeof(*t));
	struct iw_rdmap_conn_cfg cfg = make_cfg(_i & 1, _i & 2, true);
	iwt_b2b_init(t, &cfg, iwt_seed());
	static uint8_t src[5000], dst[5000];
	uint64_t seed = 9;
	iwt_fill_random(&seed, src, sizeof(src));
	memset(dst, 0, sizeof(dst));
	uint32_t stag = iwt_mem_reg(&t->b.mem, dst, sizeof(dst), IW_RDMAP_ACC_REMOTE_WRITE, 1, 0x21);
	static uint8_t rbuf[3][16];
	for (int i = 0; i < 3; i++) {
		struct iovec v = { rbuf[i], sizeof(rbuf[i]) };
		memset(rbuf[i], 0x5A, sizeof(rbuf[i]));
		iwt_mem_post_recv(&t->b.mem, 500 + (uint64_t)i, &v, 1);
	}
	const size_t lens[3] = { 4321, 0, 1 };
	for (int i = 0; i < 3; i++) {
		struct iw_rdmap_wr wr = { .cookie = (uint64_t)i, .opcode = IW_RDMAP_WR_WRITE_IMM, .nsge = lens[i] ? 1 : 0,
					  .remote_stag = stag, .remote_to = va(dst), .imm = 0x0102030405060708ULL + (uint64_t)i,
					  .solicited = i == 2 };
		wr.sgl[0].iov_base = src;
		wr.sgl[0].iov_len = lens[i];
		ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wr), 0);
	}
	ck_assert(iwt_b2b_pump(t, 10000));
	no_errors(t);
	ck_assert(memcmp(dst, src, 4321) == 0);
	ck_assert_uint_eq(iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE), 3);
	ck_assert_uint_eq(iwt_ep_count(&t->b, IW_RDMAP_EV_RECV_DONE), 3);
	for (unsigned i = 0; i < 3; i++) {
		const struct iwt_event *e = iwt_ep_find(&t->b, IW_RDMAP_EV_RECV_DONE, i);
		ck_assert(e->ev.has_imm);
		ck_assert_uint_eq(e->ev.imm, 0x0102030405060708ULL + i);
		ck_assert_uint_eq(e->ev.opcode, i == 2 ? IW_OP_IMM_DATA_SE : IW_OP_IMM_DATA);
		ck_assert_int_eq(e->ev.solicited, i == 2);
		ck_assert_uint_eq(e->ev.byte_len, lens[i]);
		ck_assert_uint_eq(e->recv_id, 500 + i);
		for (size_t k = 0; k < sizeof(rbuf[i]); k++)
			ck_assert_uint_eq(rbuf[i][k], 0x5A); /* the buffer is consumed, not written */
	}
	iwt_b2b_fini(t);
	free(t);
}
END_TEST

START_TEST(post_rules)
{
	struct iwt_b2b *t = calloc(1, sizeof(*t));
	struct iw_rdmap_conn_cfg cfg = make_cfg(false, false, false);
	iwt_b2b_init(t, &cfg, iwt_seed());
	uint64_t res;
	struct iw_rdmap_wr at = atomic_wr(IW_RDMAP_WR_ATOMIC_FETCH_ADD, 1, &res, 0x100, 0, 1, 0);
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EOPNOTSUPP);
	at.opcode = IW_RDMAP_WR_ATOMIC_CMP_SWAP;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EOPNOTSUPP);
	struct iw_rdmap_wr wi = { .opcode = IW_RDMAP_WR_WRITE_IMM };
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &wi), -EOPNOTSUPP);
	ck_assert_uint_eq(iw_rdmap_sq_outstanding(&t->a.conn), 0);
	iwt_b2b_fini(t);

	cfg = make_cfg(false, false, true);
	iwt_b2b_init(t, &cfg, iwt_seed());
	at.sgl[0].iov_len = 4;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EINVAL);
	at.sgl[0].iov_len = 8;
	at.nsge = 2;
	at.sgl[1] = at.sgl[0];
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EINVAL);
	at.nsge = 0;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EINVAL);
	at.opcode = (enum iw_rdmap_wr_opcode)(IW_RDMAP_WR_OPCODE_MAX + 1);
	at.nsge = 1;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EINVAL);
	iwt_b2b_fini(t);

	cfg = make_cfg(false, false, true);
	cfg.ord = 0;
	iwt_b2b_init(t, &cfg, iwt_seed());
	at.opcode = IW_RDMAP_WR_ATOMIC_FETCH_ADD;
	ck_assert_int_eq(iw_rdmap_post(&t->a.conn, &at), -EINVAL); /* no ORD: it could never be issued */
	iwt_b2b_fini(t);
	free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hostile input at the responder                                      */

static uint8_t inj[128];

static size_t untagged(uint8_t op, uint32_t qn, uint32_t msn, uint32_t mo, bool last)
{
	inj[0] = (uint8_t)((last ? IW_DDP_CTRL_LAST : 0) | IW_DDP_VERSION);
	inj[1] = iw_rdmap_ctrl(op);
	iw_put_be32(inj + 2, 0);
	iw_put_be32(inj + 6, qn);
	iw_put_be32(inj + 10, msn);
	iw_put_be32(inj + 14, mo);
	return IW_DDP_UNTAGGED_HDR_LEN;
}

struct fx {
	struct iwt_b2b t;
	_Alignas(8) uint8_t mem[64];
	uint32_t stag_atomic, stag_ro, stag_rw;
};

static struct fx *fx_new(bool b_ext)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct iw_rdmap_conn_cfg cfg = make_cfg(true, false, true);
	iwt_b2b_init(&f->t, &cfg, iwt_seed());
	f->t.b.conn.cfg.rfc7306 = b_ext;
	f->stag_atomic = iwt_mem_reg(&f->t.b.mem, f->mem, 32, IW_RDMAP_ACC_REMOTE_ATOMIC, 1, 0x31);
	f->stag_ro = iwt_mem_reg(&f->t.b.mem, f->mem + 32, 16, IW_RDMAP_ACC_REMOTE_READ, 1, 0x32);
	f->stag_rw = iwt_mem_reg(&f->t.b.mem, f->mem + 48, 16,
				 IW_RDMAP_ACC_REMOTE_READ | IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_LOCAL_WRITE, 1, 0x33);
	for (size_t i = 0; i < sizeof(f->mem); i++)
		f->mem[i] = (uint8_t)i;
	return f;
}

static void inject_atomic(struct fx *f, uint32_t msn, uint8_t aop, uint32_t stag, uint64_t to, size_t body_len)
{
	size_t n = untagged(IW_OP_ATOMIC_REQ, IW_DDP_QN_READ_REQ, msn, 0, true);
	struct iw_rdmap_atomic_req r = { .op = aop, .req_id = msn, .stag = stag, .to = to, .add_swap = 1 };
	uint8_t body[IW_RDMAP_ATOMIC_REQ_LEN + 8] = { 0 };
	iw_rdmap_atomic_req_encode(&r, body);
	iwt_ep_inject(&f->t.a, inj, n, body, body_len);
}

/* B found cause and Terminated; A got it; no byte of B's memory moved
 * unless `changed` allows one word. */
static void expect_term(struct fx *f, struct iw_term_cause cause)
{
	ck_assert(iwt_b2b_pump(&f->t, 1000));
	const struct iwt_event *e = iwt_ep_find(&f->t.b, IW_RDMAP_EV_ERROR, 0);
	ck_assert_msg(e != NULL, "B detected nothing");
	ck_assert_msg(iw_term_cause_eq(e->ev.cause, cause), "B detected (%u,%u,%#x), want (%u,%u,%#x)",
		      e->ev.cause.layer, e->ev.cause.etype, e->ev.cause.ecode, cause.layer, cause.etype, cause.ecode);
	const struct iwt_event *tr = iwt_ep_find(&f->t.a, IW_RDMAP_EV_TERM_RECV, 0);
	ck_assert_ptr_nonnull(tr);
	ck_assert(iw_term_cause_eq(tr->ev.cause, cause));
	ck_assert_int_eq(f->t.b.conn.state, IW_RDMAP_ST_CLOSED);
}

static void mem_untouched(const struct fx *f)
{
	for (size_t i = 0; i < sizeof(f->mem); i++)
		ck_assert_uint_eq(f->mem[i], (uint8_t)i);
}

static void fx_free(struct fx *f)
{
	iwt_b2b_fini(&f->t);
	free(f);
}

#define C(l, e, c) IW_TERM_CAUSE(l, e, c)

START_TEST(hostile_atomic_requests)
{
	struct fx *f;
	/* Unregistered STag */
	f = fx_new(true);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, 0x7777700, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(0, 1, 0x00));
	mem_untouched(f);
	fx_free(f);
	/* Unaligned target inside an atomic-enabled region */
	f = fx_new(true);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem) + 4, IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(0, 1, 0x01));
	mem_untouched(f);
	fx_free(f);
	/* Beyond the region */
	f = fx_new(true);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem) + 32, IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(0, 1, 0x01));
	mem_untouched(f);
	fx_free(f);
	/* Read-only region, and a writable one without the atomic right */
	for (int k = 0; k < 2; k++) {
		f = fx_new(true);
		inject_atomic(f, 1, IW_ATOMIC_CMP_SWAP, k ? f->stag_rw : f->stag_ro, va(f->mem) + (k ? 48 : 32),
			      IW_RDMAP_ATOMIC_REQ_LEN);
		expect_term(f, C(0, 1, 0x02));
		mem_untouched(f);
		fx_free(f);
	}
	/* Unknown atomic operation code */
	f = fx_new(true);
	inject_atomic(f, 1, 1, f->stag_atomic, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(0, 2, 0xFF));
	mem_untouched(f);
	fx_free(f);
	/* TO wrap */
	f = fx_new(true);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, f->stag_atomic, UINT64_MAX - 3, IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(0, 1, 0x04));
	mem_untouched(f);
	fx_free(f);
	/* Body too long for the request: DDP's message-too-long */
	f = fx_new(true);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN + 8);
	expect_term(f, C(1, 2, 0x05));
	mem_untouched(f);
	fx_free(f);
	/* Out-of-order and duplicated requests: the MSN says so */
	f = fx_new(true);
	inject_atomic(f, 2, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(1, 2, 0x03));
	mem_untouched(f);
	fx_free(f);
	f = fx_new(true);
	uint64_t before;
	memcpy(&before, f->mem, 8);
	_Alignas(8) static uint64_t res;
	struct iw_rdmap_wr at = atomic_wr(IW_RDMAP_WR_ATOMIC_FETCH_ADD, 1, &res, f->stag_atomic, va(f->mem), 1, 0);
	ck_assert_int_eq(iw_rdmap_post(&f->t.a.conn, &at), 0);
	ck_assert(iwt_b2b_pump(&f->t, 1000)); /* executed and answered */
	ck_assert_uint_eq(res, before);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(1, 2, 0x03));
	uint64_t now;
	memcpy(&now, f->mem, 8);
	ck_assert_uint_eq(now, before + 1); /* applied exactly once */
	for (size_t i = 8; i < sizeof(f->mem); i++)
		ck_assert_uint_eq(f->mem[i], (uint8_t)i);
	fx_free(f);
	/* Beyond IRD (8): the ninth held request */
	f = fx_new(true);
	f->t.b.conn.cfg.ird = 2;
	for (uint32_t m = 1; m <= 3; m++)
		inject_atomic(f, m, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN);
	iwt_ep_deliver(&f->t, &f->t.a, &f->t.b, SIZE_MAX); /* all three before B answers any */
	expect_term(f, C(0, 2, 0x07));
	fx_free(f);
	/* A peer that did not negotiate RFC 7306 refuses the opcode */
	f = fx_new(false);
	inject_atomic(f, 1, IW_ATOMIC_FETCH_ADD, f->stag_atomic, va(f->mem), IW_RDMAP_ATOMIC_REQ_LEN);
	expect_term(f, C(0, 2, 0x06));
	mem_untouched(f);
	fx_free(f);
}
END_TEST

START_TEST(hostile_responses_and_imm)
{
	struct fx *f;
	uint8_t resp[IW_RDMAP_ATOMIC_RESP_LEN] = { 0 };
	uint8_t imm[16] = { 0 };
	/* An Atomic Response nobody asked for */
	f = fx_new(true);
	iwt_ep_inject(&f->t.a, inj, untagged(IW_OP_ATOMIC_RESP, IW_DDP_QN_ATOMIC_RESP, 1, 0, true), resp, sizeof(resp));
	expect_term(f, C(0, 2, 0x06));
	fx_free(f);
	/* An Atomic Response on the wrong queue */
	f = fx_new(true);
	iwt_ep_inject(&f->t.a, inj, untagged(IW_OP_ATOMIC_RESP, IW_DDP_QN_READ_REQ, 1, 0, true), resp, sizeof(resp));
	expect_term(f, C(1, 2, 0x01));
	fx_free(f);
	/* A Read Response where an Atomic Response is due, and an Atomic
	 * Response with another request's identifier */
	for (int k = 0; k < 2; k++) {
		f = fx_new(true);
		_Alignas(8) static uint64_t res;
		struct iw_rdmap_wr at =
			atomic_wr(IW_RDMAP_WR_ATOMIC_FETCH_ADD, 1, &res, 0x4400, 0x1000, 1, 0);
		ck_assert_int_eq(iw_rdmap_post(&f->t.b.conn, &at), 0);
		iwt_ep_pull(&f->t, &f->t.b);
		f->t.b.wire_len = 0; /* the request never reaches A */
		if (k == 0) {
			inj[0] = IW_DDP_CTRL_TAGGED | IW_DDP_CTRL_LAST | IW_DDP_VERSION;
			inj[1] = iw_rdmap_ctrl(IW_OP_READ_RESP);
			iw_put_be32(inj + 2, 0);
			iw_put_be64(inj + 6, 0);
			iwt_ep_inject(&f->t.a, inj, IW_DDP_TAGGED_HDR_LEN, resp, 8);
			expect_term(f, C(0, 2, 0x06));
		} else {
			iw_put_be32(resp, 12345);
			iwt_ep_inject(&f->t.a, inj, untagged(IW_OP_ATOMIC_RESP, IW_DDP_QN_ATOMIC_RESP, 1, 0, true), resp,
				      sizeof(resp));
			expect_term(f, C(0, 2, 0xFF));
		}
		fx_free(f);
	}
	/* Immediate Data with no receive posted, too long, too short */
	f = fx_new(true);
	iwt_ep_inject(&f->t.a, inj, untagged(IW_OP_IMM_DATA, IW_DDP_QN_SEND, 1, 0, true), imm, 8);
	expect_term(f, C(1, 2, 0x02));
	fx_free(f);
	for (int k = 0; k < 2; k++) {
		f = fx_new(true);
		static uint8_t rb[64];
		struct iovec v = { rb, sizeof(rb) };
		iwt_mem_post_recv(&f->t.b.mem, 1, &v, 1);
		iwt_ep_inject(&f->t.a, inj, untagged(IW_OP_IMM_DATA, IW_DDP_QN_SEND, 1, 0, true), imm, k ? 16 : 4);
		/* Shorter than its fixed part: the deframer's ULPDU check, as
		 * for a short Read Request. */
		expect_term(f, k ? C(1, 2, 0x05) : C(2, 0, 0x03));
		ck_assert_uint_eq(iwt_ep_count(&f->t.b, IW_RDMAP_EV_RECV_DONE), 0);
		fx_free(f);
	}
	/* Immediate Data where RFC 7306 was not negotiated */
	f = fx_new(false);
	iwt_ep_inject(&f->t.a, inj, untagged(IW_OP_IMM_DATA_SE, IW_DDP_QN_SEND, 1, 0, true), imm, 8);
	expect_term(f, C(0, 2, 0x06));
	fx_free(f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Capability: MPA ASK / ACK bits                                      */

/* Encode then decode, as the peer sees the frame. */
static struct iw_mpa_frame wire(const struct iw_mpa_frame *f)
{
	static uint8_t buf[600];
	ssize_t n = iw_mpa_frame_encode(f, buf, sizeof(buf), NULL);
	ck_assert_int_gt(n, 0);
	struct iw_mpa_frame g;
	ck_assert_int_eq(iw_mpa_frame_decode(buf, (size_t)n, f->kind, 0, IW_MPA_DECODE_STRICT, &g, NULL), n);
	return g;
}

START_TEST(mpa_capability)
{
	for (int ini = 0; ini < 2; ini++) {
		for (int resp = 0; resp < 2; resp++) {
			struct iw_mpa_settings li, lr;
			iw_mpa_settings_default(&li);
			iw_mpa_settings_default(&lr);
			li.rfc7306 = ini;
			lr.rfc7306 = resp;
			struct iw_mpa_frame req, rep;
			struct iw_mpa_outcome oi, orsp;
			iw_mpa_make_request(&li, NULL, 0, &req);
			struct iw_mpa_frame req_rx = wire(&req);
			ck_assert_int_eq(req_rx.rfc7306, ini);
			ck_assert_int_eq(iw_mpa_respond(&lr, &req_rx, NULL, 0, &rep, &orsp), IW_MPA_OK);
			struct iw_mpa_frame rep_rx = wire(&rep);
			ck_assert_int_eq(iw_mpa_initiator_check(&li, &req, &rep_rx, &oi), IW_MPA_OK);
			ck_assert_int_eq(oi.rfc7306, ini && resp);
			ck_assert_int_eq(orsp.rfc7306, ini && resp);
			struct iw_rdmap_check_cfg cc;
			iw_rdmap_check_cfg_from_mpa(&req_rx, &rep_rx, &cc);
			ck_assert_int_eq(cc.rfc7306, ini && resp);
		}
	}
	/* The bits on the wire: ASK 0x08 in the Request, ACK 0x04 in the Reply. */
	struct iw_mpa_settings l;
	iw_mpa_settings_default(&l);
	l.rfc7306 = true;
	struct iw_mpa_frame req;
	uint8_t buf[64];
	iw_mpa_make_request(&l, NULL, 0, &req);
	ck_assert_int_gt(iw_mpa_frame_encode(&req, buf, sizeof(buf), NULL), 0);
	ck_assert_uint_eq(buf[16] & 0x0F, IW_MPA_FLAG_RFC7306_ASK);
	/* A siw responder echoes the Request's reserved bits: an echoed ASK
	 * is no ACK, so the connection does not use RFC 7306. */
	static const char key[] = "MPA ID Rep Frame";
	uint8_t echo[24];
	memcpy(echo, key, 16);
	echo[16] = (uint8_t)(IW_MPA_FLAG_CRC | IW_MPA_FLAG_ENHANCED | IW_MPA_FLAG_RFC7306_ASK);
	echo[17] = 2;
	iw_put_be16(echo + 18, 4);
	iw_put_be16(echo + 20, 16);
	iw_put_be16(echo + 22, 16);
	struct iw_mpa_frame rep;
	ck_assert_int_eq(iw_mpa_frame_decode(echo, sizeof(echo), IW_MPA_REPLY, 0, 0, &rep, NULL), 24);
	ck_assert(!rep.rfc7306);
	ck_assert_uint_eq(rep.reserved, IW_MPA_FLAG_RFC7306_ASK);
	struct iw_mpa_outcome o;
	ck_assert_int_eq(iw_mpa_initiator_check(&l, &req, &rep, &o), IW_MPA_OK);
	ck_assert(!o.rfc7306);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Passive checker (iwdump --check)                                    */

static void seg(struct iw_rdmap_check *c, int dir, uint8_t op, uint32_t qn, uint32_t msn, const void *body,
		size_t len, struct iw_rdmap_check_ev *ev)
{
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];
	h[0] = IW_DDP_CTRL_LAST | IW_DDP_VERSION;
	h[1] = iw_rdmap_ctrl(op);
	iw_put_be32(h + 2, 0);
	iw_put_be32(h + 6, qn);
	iw_put_be32(h + 10, msn);
	iw_put_be32(h + 14, 0);
	iw_rdmap_check_segment(c, dir, h, sizeof(h), body, len, len, ev);
}

START_TEST(checker_rfc7306)
{
	static struct iw_rdmap_check c;
	struct iw_rdmap_check_cfg cfg = { .rfc7306 = true, .reads_known = { true, true }, .max_reads = { 2, 2 } };
	struct iw_rdmap_check_ev ev;
	uint8_t body[IW_RDMAP_ATOMIC_REQ_LEN], rb[IW_RDMAP_ATOMIC_RESP_LEN], imm[8] = { 0, 0, 0, 0, 1, 2, 3, 4 };
	char t[200];

	iw_rdmap_check_init(&c, &cfg);
	struct iw_rdmap_atomic_req ar = { .op = IW_ATOMIC_FETCH_ADD, .req_id = 7, .stag = 0x100, .to = 0x2000 };
	iw_rdmap_atomic_req_encode(&ar, body);
	seg(&c, IW_CHK_I2R, IW_OP_ATOMIC_REQ, 1, 1, body, sizeof(body), &ev);
	ck_assert(!ev.has_violation);
	ck_assert(ev.has_msg && ev.msg.atomic_known && ev.msg.atomic.req_id == 7);
	struct iw_rdmap_atomic_resp rs = { .req_id = 7, .orig = 42 };
	iw_rdmap_atomic_resp_encode(&rs, rb);
	seg(&c, IW_CHK_R2I, IW_OP_ATOMIC_RESP, 3, 1, rb, sizeof(rb), &ev);
	ck_assert(!ev.has_violation);
	ck_assert(ev.has_msg && ev.msg.aresp.orig == 42 && ev.msg.atomic.to == 0x2000);
	seg(&c, IW_CHK_I2R, IW_OP_IMM_DATA, 0, 1, imm, sizeof(imm), &ev);
	ck_assert(!ev.has_violation);
	ck_assert_uint_eq(ev.msg.imm, 0x01020304);
	/* Response nobody asked for */
	seg(&c, IW_CHK_R2I, IW_OP_ATOMIC_RESP, 3, 2, rb, sizeof(rb), &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_ATOMIC_UNEXPECTED);
	ck_assert(iw_term_cause_eq(ev.viol.cause, IW_TERM_CAUSE(0, 2, 6)));
	/* Wrong identifier */
	seg(&c, IW_CHK_I2R, IW_OP_ATOMIC_REQ, 1, 2, body, sizeof(body), &ev);
	rs.req_id = 8;
	iw_rdmap_atomic_resp_encode(&rs, rb);
	seg(&c, IW_CHK_R2I, IW_OP_ATOMIC_RESP, 3, 3, rb, sizeof(rb), &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_ATOMIC_ID);
	iw_rdmap_violation_str(&ev.viol, t, sizeof(t));
	ck_assert_str_eq(t, "Atomic Response for request 8, expected 7");
	/* Read Response where the Atomic Response is due */
	seg(&c, IW_CHK_I2R, IW_OP_ATOMIC_REQ, 1, 3, body, sizeof(body), &ev);
	{
		uint8_t h[IW_DDP_TAGGED_HDR_LEN] = { IW_DDP_CTRL_TAGGED | IW_DDP_CTRL_LAST | IW_DDP_VERSION,
						     iw_rdmap_ctrl(IW_OP_READ_RESP) };
		iw_rdmap_check_segment(&c, IW_CHK_R2I, h, sizeof(h), NULL, 0, 8, &ev);
		ck_assert(ev.has_violation && ev.viol.code == IW_CHK_ATOMIC_UNEXPECTED);
		iw_rdmap_violation_str(&ev.viol, t, sizeof(t));
		ck_assert_str_eq(t, "RDMA Read Response, but the oldest outstanding request is an Atomic Request");
	}
	/* Beyond IRD 2 (one still outstanding, plus two) */
	seg(&c, IW_CHK_I2R, IW_OP_ATOMIC_REQ, 1, 4, body, sizeof(body), &ev);
	ck_assert(!ev.has_violation);
	seg(&c, IW_CHK_I2R, IW_OP_ATOMIC_REQ, 1, 5, body, sizeof(body), &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_IRD);
	/* Bad atomic operation, short and long bodies */
	ar.op = 5;
	iw_rdmap_atomic_req_encode(&ar, body);
	seg(&c, IW_CHK_I2R, IW_OP_ATOMIC_REQ, 1, 6, body, sizeof(body), &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_ATOMIC_OP);
	seg(&c, IW_CHK_I2R, IW_OP_IMM_DATA_SE, 0, 2, imm, 4, &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_BODY_LEN);
	uint8_t big[16] = { 0 };
	seg(&c, IW_CHK_I2R, IW_OP_IMM_DATA, 0, 3, big, sizeof(big), &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_BODY_LONG);
	ck_assert(iw_term_cause_eq(ev.viol.cause, IW_TERM_CAUSE(1, 2, 5)));
	/* Not negotiated */
	cfg.rfc7306 = false;
	iw_rdmap_check_init(&c, &cfg);
	seg(&c, IW_CHK_I2R, IW_OP_IMM_DATA, 0, 1, imm, sizeof(imm), &ev);
	ck_assert(ev.has_violation && ev.viol.code == IW_CHK_EXT_NOT_NEGOTIATED);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rdmap_ext");
	TCase *tw = tcase_create("wire");
	tcase_add_test(tw, atomic_req_exact_bytes);
	tcase_add_test(tw, atomic_resp_exact_bytes);
	tcase_add_test(tw, atomic_apply_semantics);
	suite_add_tcase(s, tw);
	TCase *tn = tcase_create("negotiation_and_checker");
	tcase_add_test(tn, mpa_capability);
	tcase_add_test(tn, checker_rfc7306);
	suite_add_tcase(s, tn);
	TCase *tc = tcase_create("b2b");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, atomics_b2b, 0, 4);
	tcase_add_test(tc, atomic_ordered_with_reads);
	tcase_add_loop_test(tc, write_with_imm_b2b, 0, 4);
	tcase_add_test(tc, post_rules);
	suite_add_tcase(s, tc);
	TCase *th = tcase_create("hostile");
	tcase_set_timeout(th, 120);
	tcase_add_test(th, hostile_atomic_requests);
	tcase_add_test(th, hostile_responses_and_imm);
	suite_add_tcase(s, th);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
