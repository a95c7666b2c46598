/* DDP wire format (RFC 5041): control field, tagged and untagged headers.
 * Offsets are within the ULPDU (after MPA's ULPDU_LENGTH). */
#ifndef IW_DDP_WIRE_H
#define IW_DDP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Byte 0: DDP control. Byte 1 belongs to the ULP (RDMAP control). */
#define IW_DDP_CTRL_TAGGED 0x80
#define IW_DDP_CTRL_LAST 0x40
#define IW_DDP_CTRL_RSVD 0x3C
#define IW_DDP_CTRL_DV_MASK 0x03
#define IW_DDP_VERSION 1

#define IW_DDP_TAGGED_HDR_LEN 14   /* ctrl(2) STag(4) TO(8) */
#define IW_DDP_UNTAGGED_HDR_LEN 18 /* ctrl(2) ULP word(4) QN(4) MSN(4) MO(4) */

struct iw_ddp_tagged_hdr {
	uint8_t ctrl[2];
	uint8_t stag[4];
	uint8_t to[8];
};
_Static_assert(sizeof(struct iw_ddp_tagged_hdr) == IW_DDP_TAGGED_HDR_LEN, "tagged header");

struct iw_ddp_untagged_hdr {
	uint8_t ctrl[2];
	uint8_t ulp_word[4]; /* RDMAP: the STag to invalidate, or 0 */
	uint8_t qn[4];
	uint8_t msn[4];
	uint8_t mo[4];
};
_Static_assert(sizeof(struct iw_ddp_untagged_hdr) == IW_DDP_UNTAGGED_HDR_LEN, "untagged header");

/* Untagged queues RDMAP uses (RFC 5040 sec. 5.1). */
enum {
	IW_DDP_QN_SEND = 0,
	IW_DDP_QN_READ_REQ = 1,
	IW_DDP_QN_TERMINATE = 2,
	IW_DDP_NUM_QN = 3,
	/* RFC 7306 adds QN 3 (Atomic Responses); DDP keeps MSN state for
	 * it too, RDMAP refuses it where RFC 7306 was not negotiated. */
	IW_DDP_QN_ATOMIC_RESP = 3,
	IW_DDP_RX_NUM_QN = 4,
};

/* A decoded DDP header. */
struct iw_ddp_hdr {
	bool tagged;
	bool last;
	uint8_t version;  /* DV bits */
	uint8_t rsvd;     /* reserved DDP control bits as received */
	uint8_t ulp_ctrl; /* byte 1: RDMAP version + opcode */
	uint32_t stag;    /* tagged */
	uint64_t to;      /* tagged */
	uint32_t ulp_word; /* untagged */
	uint32_t qn;       /* untagged */
	uint32_t msn;      /* untagged */
	uint32_t mo;       /* untagged */
};

static inline size_t iw_ddp_hdr_len_ctrl(uint8_t ddp_ctrl)
{
	return (ddp_ctrl & IW_DDP_CTRL_TAGGED) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
}

/* Encode h into out (room for IW_DDP_UNTAGGED_HDR_LEN). Returns the length
 * written; sends version IW_DDP_VERSION and zero reserved bits regardless
 * of h->version / h->rsvd. */
size_t iw_ddp_hdr_encode(const struct iw_ddp_hdr *h, uint8_t *out);

/* Decode from len bytes. Returns the header length, or 0 when len is too
 * short for the header the T bit announces. Does not validate. */
size_t iw_ddp_hdr_decode(const uint8_t *in, size_t len, struct iw_ddp_hdr *h);

#endif
