/* RDMAP wire format (RFC 5040): control byte, opcodes, Read Request body,
 * RFC 7306 Immediate Data and Atomic Request/Response bodies, and the
 * opcode table that tells every layer what an opcode looks like. The RFC
 * 7306 opcodes are valid only on a connection that negotiated them
 * (docs/rfc7306.md); the table marks them IW_OPF_RFC7306. */
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
	/* RFC 7306 (12..15 stay reserved) */
	IW_OP_IMM_DATA = 8,
	IW_OP_IMM_DATA_SE = 9,
	IW_OP_ATOMIC_REQ = 10,
	IW_OP_ATOMIC_RESP = 11,
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

/* RFC 7306 untagged queue of Atomic Responses (requests share QN 1 with
 * Read Requests, and with them the IRD/ORD limits). */
#define IW_RDMAP_QN_ATOMIC_RESP 3

/* Immediate Data body: 8 opaque bytes (QN 0, consumes a receive). */
#define IW_RDMAP_IMM_LEN 8

/* Atomic Request body (after the untagged DDP header, QN 1). Word 0 is
 * 28 reserved bits and the Atomic Operation code in the low nibble. */
struct iw_rdmap_atomic_req_body {
	uint8_t opword[4];
	uint8_t req_id[4];
	uint8_t stag[4];
	uint8_t to[8];
	uint8_t add_swap[8];
	uint8_t add_swap_mask[8];
	uint8_t compare[8];
	uint8_t compare_mask[8];
};
_Static_assert(sizeof(struct iw_rdmap_atomic_req_body) == 52, "atomic request body is 52 bytes");
#define IW_RDMAP_ATOMIC_REQ_LEN 52
#define IW_RDMAP_ATOMIC_OP_MASK 0x0000000Fu
#define IW_RDMAP_ATOMIC_RSVD_MASK 0xFFFFFFF0u

/* Atomic Operation codes (Wireshark 4.0's iwarp_ddp_rdmap agrees). */
enum {
	IW_ATOMIC_FETCH_ADD = 0,
	IW_ATOMIC_CMP_SWAP = 2,
};

struct iw_rdmap_atomic_req {
	uint8_t op;
	uint32_t rsvd; /* word 0 bits above the opcode, as received */
	uint32_t req_id;
	uint32_t stag;
	uint64_t to;
	uint64_t add_swap;
	uint64_t add_swap_mask;
	uint64_t compare;
	uint64_t compare_mask;
};

/* Atomic Response body (QN 3): the request's identifier and the value
 * the target held before the operation. */
struct iw_rdmap_atomic_resp_body {
	uint8_t req_id[4];
	uint8_t orig[8];
};
_Static_assert(sizeof(struct iw_rdmap_atomic_resp_body) == 12, "atomic response body is 12 bytes");
#define IW_RDMAP_ATOMIC_RESP_LEN 12

struct iw_rdmap_atomic_resp {
	uint32_t req_id;
	uint64_t orig;
};

/* Largest fixed RDMAP part after a DDP header. */
#define IW_RDMAP_MAX_BODY IW_RDMAP_ATOMIC_REQ_LEN

void iw_rdmap_atomic_req_encode(const struct iw_rdmap_atomic_req *r, uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN]);
void iw_rdmap_atomic_req_decode(const uint8_t in[IW_RDMAP_ATOMIC_REQ_LEN], struct iw_rdmap_atomic_req *r);
void iw_rdmap_atomic_resp_encode(const struct iw_rdmap_atomic_resp *r, uint8_t out[IW_RDMAP_ATOMIC_RESP_LEN]);
void iw_rdmap_atomic_resp_decode(const uint8_t in[IW_RDMAP_ATOMIC_RESP_LEN], struct iw_rdmap_atomic_resp *r);

/* The value an atomic leaves in the target given what it held (RFC 7306
 * masked semantics). FetchAdd: a set add mask bit ends a field, so the
 * carry out of that bit is dropped (mask 0: plain 64-bit add). CmpSwap:
 * swap when the compare-masked bits match, then replace only the bits of
 * the swap mask (all-ones masks: plain compare-and-swap). Sets *changed
 * to whether anything is written. */
uint64_t iw_rdmap_atomic_apply(const struct iw_rdmap_atomic_req *r, uint64_t orig, bool *changed);

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
	IW_OPF_RFC7306 = 0x10, /* valid only where RFC 7306 was negotiated */
};

struct iw_rdmap_opinfo {
	const char *name;
	uint8_t flags;
	bool tagged;
	uint8_t qn;          /* untagged queue */
	uint8_t ulp_hdr_len; /* RDMAP bytes after the DDP header (Read Request: 28, Atomic Request: 52) */
	uint16_t min_ulpdu;  /* DDP header + RDMAP fixed part */
};

extern const struct iw_rdmap_opinfo iw_rdmap_optable[IW_OP_MAX];

const char *iw_rdmap_opcode_name(uint8_t opcode);

/* For the MPA deframer (iw_mpa_ulp_lens_fn): from the DDP and RDMAP control
 * bytes, the header length to deliver (the DDP header) and the minimum
 * ULPDU length (DDP header + the opcode's fixed RDMAP part, when the
 * opcode is valid for that model; anything else is judged by RDMAP). */
void iw_rdmap_ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu);
/* The same where RFC 7306 was negotiated: its opcodes have minimums too
 * (elsewhere they are unknown opcodes, judged by RDMAP, not by length). */
void iw_rdmap_ulp_lens_7306(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu);

#endif
