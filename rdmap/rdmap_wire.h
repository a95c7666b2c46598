/* RDMAP wire format (RFC 5040): control byte, opcodes, Read Request body,
 * and the opcode table that tells every layer what an opcode looks like.
 * RFC 7306 opcodes (8..12) have reserved slots; they are not enabled. */
#ifndef IW_RDMAP_WIRE_H
#define IW_RDMAP_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "../ddp/ddp_wire.h"

/* Byte 1 of the ULPDU. */
#define IW_RDMAP_CTRL_RV_MASK 0xC0
#define IW_RDMAP_CTRL_RV_SHIFT 6
#define IW_RDMAP_CTRL_RSVD 0x30
#define IW_RDMAP_CTRL_OPCODE_MASK 0x0F
#define IW_RDMAP_VERSION 1

enum iw_rdmap_opcode {
	IW_OP_WRITE = 0,
	IW_OP_READ_REQ = 1,
	IW_OP_READ_RESP = 2,
	IW_OP_SEND = 3,
	IW_OP_SEND_INV = 4,
	IW_OP_SEND_SE = 5,
	IW_OP_SEND_SE_INV = 6,
	IW_OP_TERMINATE = 7,
	/* RFC 7306, reserved for later */
	IW_OP_IMM_DATA = 8,
	IW_OP_IMM_DATA_SE = 9,
	IW_OP_ATOMIC_REQ = 10,
	IW_OP_ATOMIC_RESP = 11,
	IW_OP_WRITE_IMM = 12,
	IW_OP_MAX = 16,
};

static inline uint8_t iw_rdmap_ctrl(uint8_t opcode)
{
	return (uint8_t)(IW_RDMAP_VERSION << IW_RDMAP_CTRL_RV_SHIFT | (opcode & IW_RDMAP_CTRL_OPCODE_MASK));
}

static inline uint8_t iw_rdmap_opcode_of(uint8_t ctrl)
{
	return ctrl & IW_RDMAP_CTRL_OPCODE_MASK;
}

static inline uint8_t iw_rdmap_version_of(uint8_t ctrl)
{
	return (uint8_t)((ctrl & IW_RDMAP_CTRL_RV_MASK) >> IW_RDMAP_CTRL_RV_SHIFT);
}

/* RDMA Read Request body (after the untagged DDP header). */
struct iw_rdmap_read_req_body {
	uint8_t sink_stag[4];
	uint8_t sink_to[8];
	uint8_t size[4];
	uint8_t src_stag[4];
	uint8_t src_to[8];
};
_Static_assert(sizeof(struct iw_rdmap_read_req_body) == 28, "read request body is 28 bytes");
#define IW_RDMAP_READ_REQ_LEN 28

struct iw_rdmap_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

void iw_rdmap_read_req_encode(const struct iw_rdmap_read_req *r, uint8_t out[IW_RDMAP_READ_REQ_LEN]);
void iw_rdmap_read_req_decode(const uint8_t in[IW_RDMAP_READ_REQ_LEN], struct iw_rdmap_read_req *r);

/* Terminate control word, then optional copied headers (RFC 5040 4.8). */
#define IW_RDMAP_TERM_CTRL_LEN 4
#define IW_RDMAP_TERM_FLAG_M 0x80 /* DDP segment length valid */
#define IW_RDMAP_TERM_FLAG_D 0x40 /* terminated DDP header present */
#define IW_RDMAP_TERM_FLAG_R 0x20 /* terminated RDMAP header present */
#define IW_RDMAP_TERM_MAX_LEN (IW_RDMAP_TERM_CTRL_LEN + 2 + IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN)

/* What an opcode is on the wire. */
enum {
	IW_OPF_VALID = 0x01,   /* defined and enabled */
	IW_OPF_SE = 0x02,      /* solicited event */
	IW_OPF_INV = 0x04,     /* carries an STag to invalidate */
	IW_OPF_PAYLOAD = 0x08, /* carries application payload */
};

struct iw_rdmap_opinfo {
	const char *name;
	uint8_t flags;
	bool tagged;
	uint8_t qn;          /* untagged queue */
	uint8_t ulp_hdr_len; /* RDMAP bytes after the DDP header (Read Request: 28) */
	uint16_t min_ulpdu;  /* DDP header + RDMAP fixed part */
};

extern const struct iw_rdmap_opinfo iw_rdmap_optable[IW_OP_MAX];

const char *iw_rdmap_opcode_name(uint8_t opcode);

/* For the MPA deframer (iw_mpa_ulp_lens_fn): from the DDP and RDMAP control
 * bytes, the header length to deliver (the DDP header) and the minimum
 * ULPDU length (DDP header + the opcode's fixed RDMAP part, when the
 * opcode is valid for that model; anything else is judged by RDMAP). */
void iw_rdmap_ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu);

#endif
