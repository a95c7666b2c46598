/* RDMAP opcode table and Read Request body (RFC 5040 sec. 4). */
#include "rdmap_wire.h"

#include <stddef.h>

#include "iw_bytes.h"

#define TAGGED_MIN IW_DDP_TAGGED_HDR_LEN
#define UNTAGGED_MIN IW_DDP_UNTAGGED_HDR_LEN

/* Every layer asks this table what an opcode looks like, so enabling the
 * RFC 7306 opcodes later is a table edit: they have names now but no
 * IW_OPF_VALID and no layout (fill in tagged/qn/lengths when enabling). */
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
	[IW_OP_IMM_DATA] = { "Immediate Data", 0, false, 0, 0, 0 },
	[IW_OP_IMM_DATA_SE] = { "Immediate Data with SE", 0, false, 0, 0, 0 },
	[IW_OP_ATOMIC_REQ] = { "Atomic Request", 0, false, 0, 0, 0 },
	[IW_OP_ATOMIC_RESP] = { "Atomic Response", 0, false, 0, 0, 0 },
	[IW_OP_WRITE_IMM] = { "RDMA Write with Immediate Data", 0, false, 0, 0, 0 },
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

void iw_rdmap_ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	bool tagged = ctrl[0] & IW_DDP_CTRL_TAGGED;
	const struct iw_rdmap_opinfo *op = &iw_rdmap_optable[iw_rdmap_opcode_of(ctrl[1])];

	*hdr_len = (uint16_t)iw_ddp_hdr_len_ctrl(ctrl[0]);
	*min_ulpdu = *hdr_len;
	if ((op->flags & IW_OPF_VALID) && op->tagged == tagged)
		*min_ulpdu = op->min_ulpdu;
}
