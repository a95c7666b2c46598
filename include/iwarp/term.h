/* Terminate causes: the (layer, etype, ecode) triple of RFC 5040 sec. 7,
 * RFC 5041 sec. 7 and RFC 5044 / 6581. A protocol violation is described by
 * one of these from the point where it is detected to the Terminate that
 * reports it, and the application sees the same triple. */
#ifndef IWARP_TERM_H
#define IWARP_TERM_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum iw_term_layer {
	IW_LAYER_RDMAP = 0,
	IW_LAYER_DDP = 1,
	IW_LAYER_MPA = 2, /* the LLP layer of RFC 5040 */
};

/* Error types per layer. */
enum {
	IW_ETYPE_RDMAP_LOCAL_CATA = 0,
	IW_ETYPE_RDMAP_REMOTE_PROT = 1,
	IW_ETYPE_RDMAP_REMOTE_OP = 2,
	IW_ETYPE_DDP_LOCAL_CATA = 0,
	IW_ETYPE_DDP_TAGGED = 1,
	IW_ETYPE_DDP_UNTAGGED = 2,
	IW_ETYPE_MPA = 0,
};

/* RDMAP error codes (etype 1 remote protection, etype 2 remote operation). */
enum {
	IW_ECODE_RDMAP_INV_STAG = 0x00,
	IW_ECODE_RDMAP_BASE_BOUNDS = 0x01,
	IW_ECODE_RDMAP_ACCESS = 0x02,
	IW_ECODE_RDMAP_STAG_NOT_ASSOC = 0x03,
	IW_ECODE_RDMAP_TO_WRAP = 0x04,
	IW_ECODE_RDMAP_INV_VERSION = 0x05,
	IW_ECODE_RDMAP_UNEXP_OPCODE = 0x06,
	IW_ECODE_RDMAP_CATA_STREAM = 0x07,
	IW_ECODE_RDMAP_CATA_GLOBAL = 0x08,
	IW_ECODE_RDMAP_CANT_INVALIDATE = 0x09,
	IW_ECODE_RDMAP_UNSPECIFIED = 0xFF,
};

/* DDP error codes (etype 1 tagged buffer, etype 2 untagged buffer). */
enum {
	IW_ECODE_DDP_T_INV_STAG = 0x00,
	IW_ECODE_DDP_T_BASE_BOUNDS = 0x01,
	IW_ECODE_DDP_T_STAG_NOT_ASSOC = 0x02,
	IW_ECODE_DDP_T_TO_WRAP = 0x03,
	IW_ECODE_DDP_T_INV_VERSION = 0x04,
	IW_ECODE_DDP_U_INV_QN = 0x01,
	IW_ECODE_DDP_U_NO_BUFFER = 0x02,
	IW_ECODE_DDP_U_MSN_RANGE = 0x03,
	IW_ECODE_DDP_U_INV_MO = 0x04,
	IW_ECODE_DDP_U_TOO_LONG = 0x05,
	IW_ECODE_DDP_U_INV_VERSION = 0x06,
};

/* MPA (LLP) error codes, etype 0. */
enum {
	IW_ECODE_MPA_STREAM_LOST = 0x01,
	IW_ECODE_MPA_CRC = 0x02,
	IW_ECODE_MPA_MARKER_LEN = 0x03, /* marker or ULPDU_LENGTH invalid */
	IW_ECODE_MPA_BAD_FRAME = 0x04,
	IW_ECODE_MPA_LOCAL_CATA = 0x05,
	IW_ECODE_MPA_INSUFF_IRD = 0x06,
	IW_ECODE_MPA_NO_RTR = 0x07,
};

/* A cause, or no cause. (0,0,0x00) is a real Terminate triple (RDMAP
 * local catastrophic error), so "no cause" is told by valid == false: a
 * healthy QP (iw_qp_error), a successful completion, a flush after a clean
 * disconnect. A zero-initialised struct is "no cause"; IW_TERM_CAUSE()
 * makes a real one. */
struct iw_term_cause {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
	bool valid; /* false: no cause (layer, etype, ecode are then 0) */
};

#define IW_TERM_CAUSE(l, e, c) ((struct iw_term_cause){ (l), (e), (c), true })
#define IW_TERM_CAUSE_NONE ((struct iw_term_cause){ 0, 0, 0, false })

static inline bool iw_term_cause_is_set(struct iw_term_cause c)
{
	return c.valid;
}

/* Same triple, or both "no cause". */
static inline bool iw_term_cause_eq(struct iw_term_cause a, struct iw_term_cause b)
{
	return a.valid == b.valid && a.layer == b.layer && a.etype == b.etype && a.ecode == b.ecode;
}

/* Human-readable name of a cause, e.g. "DDP tagged: invalid STag";
 * "no cause" when !valid. Never NULL; unknown triples get a generic text. */
const char *iw_term_cause_str(struct iw_term_cause c);

#ifdef __cplusplus
}
#endif
#endif
