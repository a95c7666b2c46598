/* MPA Request / Reply / Reject frames, revision 1 (RFC 5044) and
 * revision 2 with the enhanced IRD/ORD words (RFC 6581): encode and decode.
 * Pure functions over caller buffers; nothing is allocated. */
#ifndef IW_MPA_FRAME_H
#define IW_MPA_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpa_wire.h"

enum iw_mpa_frame_kind {
	IW_MPA_REQUEST = 1,
	IW_MPA_REPLY = 2, /* accept or reject (reject = the R flag) */
};

/* RTR types of RFC 6581, as a bit set. */
enum {
	IW_MPA_RTR_SEND = 1,  /* zero-length SEND */
	IW_MPA_RTR_WRITE = 2, /* zero-length RDMA WRITE */
	IW_MPA_RTR_READ = 4,  /* zero-length RDMA READ */
	IW_MPA_RTR_ALL = 7,
};

struct iw_mpa_frame {
	enum iw_mpa_frame_kind kind;
	uint8_t rev; /* 1 or 2 */
	bool markers;
	bool crc;
	bool reject;
	bool enhanced;    /* rev 2 + ENHANCED flag: IRD/ORD words present */
	uint8_t reserved; /* reserved flag bits as received (but the RFC 7306 bit); encode sends 0 */
	bool rfc7306;     /* Request: RFC 7306 ASK bit; Reply: ACK bit (mpa_wire.h) */
	/* Enhanced words, meaningful only when enhanced is set. */
	bool p2p;
	uint8_t rtr; /* IW_MPA_RTR_* bits */
	uint16_t ird; /* <= IW_MPA_V2_IRD_ORD_MASK */
	uint16_t ord;
	/* The application's private data, excluding the enhanced words.
	 * Decode points into the caller's input buffer. */
	const uint8_t *pdata;
	uint16_t pdata_len;
};

enum iw_mpa_frame_error {
	IW_MPA_FE_NONE = 0,
	IW_MPA_FE_BAD_KEY,       /* not the expected key for this kind */
	IW_MPA_FE_BAD_REV,       /* revision not 1 or 2 */
	IW_MPA_FE_RESERVED,      /* reserved flag bits set (strict decode only) */
	IW_MPA_FE_PD_TOO_LONG,   /* PD_Length above the limit */
	IW_MPA_FE_ENHANCED_SHORT, /* ENHANCED set but PD_Length < 4 */
	IW_MPA_FE_ENHANCED_REV1, /* ENHANCED flag on a revision 1 frame (strict) */
	IW_MPA_FE_BAD_ARGS,      /* encode: fields out of range */
	IW_MPA_FE_NO_SPACE,      /* encode: output buffer too small */
};

/* Decode flags. RFC 5044 says reserved bits are not checked on receipt;
 * STRICT checks them anyway (iwdump --check, tests). */
#define IW_MPA_DECODE_STRICT 0x1

/* Bytes the frame occupies on the wire. */
size_t iw_mpa_frame_wire_len(const struct iw_mpa_frame *f);

/* Encode into buf. Returns the length written, or -1 with *why set
 * (NULL allowed) when fields are out of range or cap is too small.
 * Validates: rev 1 or 2, enhanced only with rev 2, IRD/ORD <= 0x3FFF,
 * total PD_Length <= IW_MPA_PD_MAX. */
ssize_t iw_mpa_frame_encode(const struct iw_mpa_frame *f, uint8_t *buf, size_t cap,
			    enum iw_mpa_frame_error *why);

/* Decode a frame of the expected kind from the first len bytes of buf.
 * Returns the frame's total length when it is complete, 0 when more bytes
 * are needed (never reads past len), or -1 with *why set when the bytes
 * can never become a valid frame. max_pd caps PD_Length (0 means
 * IW_MPA_PD_MAX; larger values are clamped to it). */
ssize_t iw_mpa_frame_decode(const uint8_t *buf, size_t len, enum iw_mpa_frame_kind expected,
			    uint16_t max_pd, unsigned flags, struct iw_mpa_frame *out,
			    enum iw_mpa_frame_error *why);

const char *iw_mpa_frame_error_str(enum iw_mpa_frame_error e);

#endif
