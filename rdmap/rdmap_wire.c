/* RDMAP opcode table and Read Request body (RFC 5040 sec. 4). */
#include "rdmap_wire.h"

#include <stddef.h>

#include "iw_bytes.h"

#define TAGGED_MIN IW_DDP_TAGGED_HDR_LEN
#define UNTAGGED_MIN IW_DDP_UNTAGGED_HDR_LEN

/* Every layer asks this table what an opcode looks like. The RFC 7306
 * opcodes carry IW_OPF_RFC7306: RDMAP refuses them on a connection that
 * did not negotiate the extensions, exactly as it refuses reserved ones. */
const struct iw_rdmap_opinfo iw_rdmap_optable[IW_OP_MAX] = {
	[IW_OP_WRITE] = { "RDMA Write", IW_OPF_VALID | IW_OPF_PAYLOAD, true, 0, 0, TAGGED_MIN },
	[IW_OP_READ_REQ] = { "RDMA Read Request", IW_OPF_VALID, false, IW_DDP_QN_READ_REQ,
			     IW_RDMAP_READ_REQ_LEN, UNTAGGED_MIN + IW_RDMAP_READ_REQ_LEN },
	[IW_OP_READ_RESP] = { "RDMA Read Response", IW_OPF_VALID | IW_OPF_PAYLOAD, true, 0, 0, TAGGED_MIN },
	[IW_OP_SEND] = { "Send", IW_OPF_VALID | IW_OPF_PAYLOAD, false, IW_DDP_QN_SEND, 0, UNTAGGED_MIN },
	[IW_OP_SEND_INV] = { "Send with Invalidate", IW_OPF_VALID | IW_OPF_INV | IW_OPF_PAYLOAD, false,
			     IW_DDP_QN_SEND, 0, UNTAGGED_MIN },
	[IW_OP_SEND_SE] = { "Send with SE", IW_OPF_VALID | IW_OPF_SE | IW_OPF_PAYLOAD, false,
			    IW_DDP_QN_SEND, 0, UNTAGGED_MIN },
	[IW_OP_SEND_SE_INV] = { "Send with SE and Invalidate",
				IW_OPF_VALID | IW_OPF_SE | IW_OPF_INV | IW_OPF_PAYLOAD, false, IW_DDP_QN_SEND,
				0, UNTAGGED_MIN },
	/* ulp_hdr_len is the control word only; copied headers follow it. */
	[IW_OP_TERMINATE] = { "Terminate", IW_OPF_VALID, false, IW_DDP_QN_TERMINATE, IW_RDMAP_TERM_CTRL_LEN,
			      UNTAGGED_MIN + IW_RDMAP_TERM_CTRL_LEN },
	[IW_OP_IMM_DATA] = { "Immediate Data", IW_OPF_VALID | IW_OPF_RFC7306, false, IW_DDP_QN_SEND,
			     IW_RDMAP_IMM_LEN, UNTAGGED_MIN + IW_RDMAP_IMM_LEN },
	[IW_OP_IMM_DATA_SE] = { "Immediate Data with SE", IW_OPF_VALID | IW_OPF_RFC7306 | IW_OPF_SE, false,
				IW_DDP_QN_SEND, IW_RDMAP_IMM_LEN, UNTAGGED_MIN + IW_RDMAP_IMM_LEN },
	[IW_OP_ATOMIC_REQ] = { "Atomic Request", IW_OPF_VALID | IW_OPF_RFC7306, false, IW_DDP_QN_READ_REQ,
			       IW_RDMAP_ATOMIC_REQ_LEN, UNTAGGED_MIN + IW_RDMAP_ATOMIC_REQ_LEN },
	[IW_OP_ATOMIC_RESP] = { "Atomic Response", IW_OPF_VALID | IW_OPF_RFC7306, false, IW_RDMAP_QN_ATOMIC_RESP,
				IW_RDMAP_ATOMIC_RESP_LEN, UNTAGGED_MIN + IW_RDMAP_ATOMIC_RESP_LEN },
};

const char *iw_rdmap_opcode_name(uint8_t opcode)
{
	/* Logs print whatever arrived, so never hand back NULL. */
	if (opcode >= IW_OP_MAX || !iw_rdmap_optable[opcode].name)
		return "unknown opcode";
	return iw_rdmap_optable[opcode].name;
}

/* Field offsets come from the wire struct so the two cannot drift apart. */
#define RR_OFF(f) offsetof(struct iw_rdmap_read_req_body, f)

void iw_rdmap_read_req_encode(const struct iw_rdmap_read_req *r, uint8_t out[IW_RDMAP_READ_REQ_LEN])
{
	iw_put_be32(out + RR_OFF(sink_stag), r->sink_stag);
	iw_put_be64(out + RR_OFF(sink_to), r->sink_to);
	iw_put_be32(out + RR_OFF(size), r->size);
	iw_put_be32(out + RR_OFF(src_stag), r->src_stag);
	iw_put_be64(out + RR_OFF(src_to), r->src_to);
}

void iw_rdmap_read_req_decode(const uint8_t in[IW_RDMAP_READ_REQ_LEN], struct iw_rdmap_read_req *r)
{
	r->sink_stag = iw_get_be32(in + RR_OFF(sink_stag));
	r->sink_to = iw_get_be64(in + RR_OFF(sink_to));
	r->size = iw_get_be32(in + RR_OFF(size));
	r->src_stag = iw_get_be32(in + RR_OFF(src_stag));
	r->src_to = iw_get_be64(in + RR_OFF(src_to));
}

#define AR_OFF(f) offsetof(struct iw_rdmap_atomic_req_body, f)
#define AS_OFF(f) offsetof(struct iw_rdmap_atomic_resp_body, f)

void iw_rdmap_atomic_req_encode(const struct iw_rdmap_atomic_req *r, uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN])
{
	iw_put_be32(out + AR_OFF(opword), (r->rsvd & IW_RDMAP_ATOMIC_RSVD_MASK) | (r->op & IW_RDMAP_ATOMIC_OP_MASK));
	iw_put_be32(out + AR_OFF(req_id), r->req_id);
	iw_put_be32(out + AR_OFF(stag), r->stag);
	iw_put_be64(out + AR_OFF(to), r->to);
	iw_put_be64(out + AR_OFF(add_swap), r->add_swap);
	iw_put_be64(out + AR_OFF(add_swap_mask), r->add_swap_mask);
	iw_put_be64(out + AR_OFF(compare), r->compare);
	iw_put_be64(out + AR_OFF(compare_mask), r->compare_mask);
}

void iw_rdmap_atomic_req_decode(const uint8_t in[IW_RDMAP_ATOMIC_REQ_LEN], struct iw_rdmap_atomic_req *r)
{
	uint32_t w = iw_get_be32(in + AR_OFF(opword));
	r->op = (uint8_t)(w & IW_RDMAP_ATOMIC_OP_MASK);
	r->rsvd = w & IW_RDMAP_ATOMIC_RSVD_MASK;
	r->req_id = iw_get_be32(in + AR_OFF(req_id));
	r->stag = iw_get_be32(in + AR_OFF(stag));
	r->to = iw_get_be64(in + AR_OFF(to));
	r->add_swap = iw_get_be64(in + AR_OFF(add_swap));
	r->add_swap_mask = iw_get_be64(in + AR_OFF(add_swap_mask));
	r->compare = iw_get_be64(in + AR_OFF(compare));
	r->compare_mask = iw_get_be64(in + AR_OFF(compare_mask));
}

void iw_rdmap_atomic_resp_encode(const struct iw_rdmap_atomic_resp *r, uint8_t out[IW_RDMAP_ATOMIC_RESP_LEN])
{
	iw_put_be32(out + AS_OFF(req_id), r->req_id);
	iw_put_be64(out + AS_OFF(orig), r->orig);
}

void iw_rdmap_atomic_resp_decode(const uint8_t in[IW_RDMAP_ATOMIC_RESP_LEN], struct iw_rdmap_atomic_resp *r)
{
	r->req_id = iw_get_be32(in + AS_OFF(req_id));
	r->orig = iw_get_be64(in + AS_OFF(orig));
}

uint64_t iw_rdmap_atomic_apply(const struct iw_rdmap_atomic_req *r, uint64_t orig, bool *changed)
{
	if (r->op == IW_ATOMIC_CMP_SWAP) {
		if ((orig ^ r->compare) & r->compare_mask) {
			*changed = false;
			return orig;
		}
		uint64_t v = (orig & ~r->add_swap_mask) | (r->add_swap & r->add_swap_mask);
		*changed = v != orig;
		return v;
	}
	uint64_t v;
	if (!r->add_swap_mask) {
		v = orig + r->add_swap;
	} else {
		/* Bit-serial add whose carry stops at every mask bit. */
		uint64_t carry = 0;
		v = 0;
		for (unsigned i = 0; i < 64; i++) {
			uint64_t a = orig >> i & 1, b = r->add_swap >> i & 1;
			v |= (a ^ b ^ carry) << i;
			carry = (a & b) | (carry & (a ^ b));
			if (r->add_swap_mask >> i & 1)
				carry = 0;
		}
	}
	*changed = v != orig;
	return v;
}

static void ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu, bool ext)
{
	bool tagged = ctrl[0] & IW_DDP_CTRL_TAGGED;
	const struct iw_rdmap_opinfo *op = &iw_rdmap_optable[iw_rdmap_opcode_of(ctrl[1])];

	*hdr_len = (uint16_t)iw_ddp_hdr_len_ctrl(ctrl[0]);
	*min_ulpdu = *hdr_len;
	if ((op->flags & IW_OPF_VALID) && op->tagged == tagged && (ext || !(op->flags & IW_OPF_RFC7306)))
		*min_ulpdu = op->min_ulpdu;
}

void iw_rdmap_ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	ulp_lens(ctrl, hdr_len, min_ulpdu, false);
}

void iw_rdmap_ulp_lens_7306(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	ulp_lens(ctrl, hdr_len, min_ulpdu, true);
}
