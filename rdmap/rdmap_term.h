/* RDMAP Terminate message body (RFC 5040 sec. 4.8): encode (RFC layout)
 * and decode (RFC layout, and the Linux siw layout with swapped nibbles in
 * byte 0 and flag bits 0x01/0x02/0x04 for M/D/R in byte 2).
 *
 * The body follows the untagged DDP header (QN 2). Layout we send:
 *   byte 0: layer << 4 | etype; byte 1: ecode; byte 2: M|D|R; byte 3: 0
 *   if M or D: u16 DDP segment length (the ULPDU_LENGTH of the offending
 *              segment: DDP header + payload)
 *   if D: the offending DDP header (14 or 18 bytes)
 *   if R: the offending RDMAP header (the 28-byte Read Request body)
 * What is copied (RFC 5040 sec. 7): MPA-layer errors copy nothing (the
 * headers cannot be trusted); DDP and RDMAP errors copy the DDP header
 * with its segment length; errors about a Read Request also copy its
 * body. */
#ifndef IW_RDMAP_TERM_H
#define IW_RDMAP_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <iwarp/term.h>

#include "rdmap_wire.h"

struct iw_rdmap_term {
	struct iw_term_cause cause;
	bool has_seg_len; /* M */
	bool has_ddp_hdr; /* D */
	bool has_rdmap_hdr; /* R */
	uint16_t seg_len;
	uint8_t ddp_hdr[IW_DDP_UNTAGGED_HDR_LEN];
	uint8_t ddp_hdr_len; /* 14 or 18 */
	uint8_t rdmap_hdr[IW_RDMAP_READ_REQ_LEN];
	uint8_t rdmap_hdr_len;
	bool siw_layout; /* decode: the peer used siw's bit layout */
};

/* Fill t for a violation detected on the segment whose ULPDU (DDP header
 * and following bytes, avail of them) is given: chooses which headers to
 * copy per the rules above. ulpdu may be NULL (nothing to copy). */
void iw_rdmap_term_prepare(struct iw_rdmap_term *t, struct iw_term_cause cause, const uint8_t *ulpdu,
			   size_t avail, uint16_t ulpdu_len);

/* Encode the body into out (room for IW_RDMAP_TERM_MAX_LEN). Returns its length. */
size_t iw_rdmap_term_encode(const struct iw_rdmap_term *t, uint8_t *out);

/* Decode a body of len bytes. Returns 0, or -1 when it is too short for
 * what its flags announce (the cause is still filled when len >= 4). */
int iw_rdmap_term_decode(const uint8_t *body, size_t len, struct iw_rdmap_term *t);

#endif
