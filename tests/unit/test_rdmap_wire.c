/* RDMAP wire: opcode table, control byte helpers, Read Request body. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"
#include "rdmap/rdmap_wire.h"
#include "iwt_check.h"

struct expect_op {
	uint8_t op;
	const char *name;
	uint8_t flags;
	bool tagged;
	uint8_t qn;
	uint8_t ulp_hdr_len;
	uint16_t min_ulpdu;
};

static const struct expect_op expected[] = {
	{ 0, "RDMA Write", IW_OPF_VALID | IW_OPF_PAYLOAD, true, 0, 0, 14 },
	{ 1, "RDMA Read Request", IW_OPF_VALID, false, 1, 28, 46 },
	{ 2, "RDMA Read Response", IW_OPF_VALID | IW_OPF_PAYLOAD, true, 0, 0, 14 },
	{ 3, "Send", IW_OPF_VALID | IW_OPF_PAYLOAD, false, 0, 0, 18 },
	{ 4, "Send with Invalidate", IW_OPF_VALID | IW_OPF_INV | IW_OPF_PAYLOAD, false, 0, 0, 18 },
	{ 5, "Send with SE", IW_OPF_VALID | IW_OPF_SE | IW_OPF_PAYLOAD, false, 0, 0, 18 },
	{ 6, "Send with SE and Invalidate", IW_OPF_VALID | IW_OPF_SE | IW_OPF_INV | IW_OPF_PAYLOAD, false, 0, 0,
	  18 },
	{ 7, "Terminate", IW_OPF_VALID, false, 2, 4, 22 },
	/* RFC 7306, valid only where negotiated */
	{ 8, "Immediate Data", IW_OPF_VALID | IW_OPF_RFC7306, false, 0, 8, 26 },
	{ 9, "Immediate Data with SE", IW_OPF_VALID | IW_OPF_RFC7306 | IW_OPF_SE, false, 0, 8, 26 },
	{ 10, "Atomic Request", IW_OPF_VALID | IW_OPF_RFC7306, false, 1, 52, 70 },
	{ 11, "Atomic Response", IW_OPF_VALID | IW_OPF_RFC7306, false, 3, 12, 30 },
};

START_TEST(test_optable_valid_opcodes)
{
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		const struct expect_op *e = &expected[i];
		const struct iw_rdmap_opinfo *o = &iw_rdmap_optable[e->op];
		ck_assert_msg(o->name && strcmp(o->name, e->name) == 0, "opcode %u name", e->op);
		ck_assert_str_eq(iw_rdmap_opcode_name(e->op), e->name);
		ck_assert_msg(o->flags == e->flags, "opcode %u flags %#x want %#x", e->op, o->flags, e->flags);
		ck_assert_msg(o->tagged == e->tagged, "opcode %u tagged", e->op);
		ck_assert_msg(o->ulp_hdr_len == e->ulp_hdr_len, "opcode %u ulp_hdr_len", e->op);
		ck_assert_msg(o->min_ulpdu == e->min_ulpdu, "opcode %u min_ulpdu %u", e->op, o->min_ulpdu);
		if (!e->tagged)
			ck_assert_msg(o->qn == e->qn, "opcode %u qn %u", e->op, o->qn);
		/* min_ulpdu is always the DDP header plus the RDMAP fixed part. */
		ck_assert_uint_eq(o->min_ulpdu,
				  (e->tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN) + o->ulp_hdr_len);
	}
}
END_TEST

START_TEST(test_optable_reserved_and_unknown)
{
	/* RFC 7306 ends at 11 (Wireshark 4.0 knows no opcode 12 either). */
	for (unsigned op = 12; op < IW_OP_MAX; op++) {
		ck_assert_ptr_null(iw_rdmap_optable[op].name);
		ck_assert_uint_eq(iw_rdmap_optable[op].flags, 0);
	}
	/* Names are never NULL, even for garbage. */
	for (unsigned op = 0; op < 256; op++)
		ck_assert_ptr_nonnull(iw_rdmap_opcode_name((uint8_t)op));
	ck_assert_str_eq(iw_rdmap_opcode_name(12), iw_rdmap_opcode_name(200));
}
END_TEST

START_TEST(test_opcode_names_distinct)
{
	for (unsigned a = 0; a <= IW_OP_ATOMIC_RESP; a++)
		for (unsigned b = a + 1; b <= IW_OP_ATOMIC_RESP + 1; b++)
			ck_assert_msg(strcmp(iw_rdmap_opcode_name((uint8_t)a), iw_rdmap_opcode_name((uint8_t)b)) != 0,
				      "opcodes %u and %u share a name", a, b);
}
END_TEST

START_TEST(test_ctrl_byte)
{
	/* Version 1 in the top two bits, reserved zero, opcode low nibble. */
	ck_assert_uint_eq(iw_rdmap_ctrl(IW_OP_WRITE), 0x40);
	ck_assert_uint_eq(iw_rdmap_ctrl(IW_OP_SEND), 0x43);
	ck_assert_uint_eq(iw_rdmap_ctrl(IW_OP_TERMINATE), 0x47);
	ck_assert_uint_eq(iw_rdmap_ctrl(0xFF), 0x4F);
	ck_assert_uint_eq(iw_rdmap_opcode_of(0x47), 7);
	ck_assert_uint_eq(iw_rdmap_opcode_of(0xF1), 1);
	ck_assert_uint_eq(iw_rdmap_version_of(0x47), 1);
	ck_assert_uint_eq(iw_rdmap_version_of(0xC0), 3);
	ck_assert_uint_eq(iw_rdmap_version_of(0x3F), 0);
}
END_TEST

START_TEST(test_read_req_exact_bytes)
{
	const struct iw_rdmap_read_req r = {
		.sink_stag = 0x11223344,
		.sink_to = 0x0102030405060708ULL,
		.size = 0xA0B0C0D0,
		.src_stag = 0xDEADBE00,
		.src_to = 0x8877665544332211ULL,
	};
	static const uint8_t want[IW_RDMAP_READ_REQ_LEN] = {
		0x11, 0x22, 0x33, 0x44,                         /* sink STag */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* sink TO */
		0xA0, 0xB0, 0xC0, 0xD0,                         /* size */
		0xDE, 0xAD, 0xBE, 0x00,                         /* source STag */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* source TO */
	};
	uint8_t out[IW_RDMAP_READ_REQ_LEN + 4];
	memset(out, 0xEE, sizeof(out));
	iw_rdmap_read_req_encode(&r, out);
	ck_assert_mem_eq(out, want, sizeof(want));
	for (size_t i = IW_RDMAP_READ_REQ_LEN; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xEE); /* no write past 28 bytes */

	struct iw_rdmap_read_req d;
	iw_rdmap_read_req_decode(want, &d);
	ck_assert_uint_eq(d.sink_stag, r.sink_stag);
	ck_assert_uint_eq(d.sink_to, r.sink_to);
	ck_assert_uint_eq(d.size, r.size);
	ck_assert_uint_eq(d.src_stag, r.src_stag);
	ck_assert_uint_eq(d.src_to, r.src_to);
}
END_TEST

START_TEST(test_read_req_random_round_trip)
{
	uint64_t s = iwt_seed();
	for (int i = 0; i < 10000; i++) {
		uint8_t in[IW_RDMAP_READ_REQ_LEN], out[IW_RDMAP_READ_REQ_LEN];
		iwt_fill_random(&s, in, sizeof(in));
		/* Decode from an exact-size heap copy so ASan sees over-reads. */
		uint8_t *heap = malloc(sizeof(in));
		ck_assert_ptr_nonnull(heap);
		memcpy(heap, in, sizeof(in));
		struct iw_rdmap_read_req r;
		iw_rdmap_read_req_decode(heap, &r);
		free(heap);
		iw_rdmap_read_req_encode(&r, out);
		ck_assert_mem_eq(in, out, sizeof(in));
	}
}
END_TEST

static Suite *rdmap_wire_suite(void)
{
	Suite *s = suite_create("rdmap_wire");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_optable_valid_opcodes);
	tcase_add_test(tc, test_optable_reserved_and_unknown);
	tcase_add_test(tc, test_opcode_names_distinct);
	tcase_add_test(tc, test_ctrl_byte);
	tcase_add_test(tc, test_read_req_exact_bytes);
	tcase_add_test(tc, test_read_req_random_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(rdmap_wire_suite());
}
