/* MPA wire format (RFC 5044, RFC 6581): constants and layouts only. */
#ifndef IW_MPA_WIRE_H
#define IW_MPA_WIRE_H

#include <stdint.h>

#define IW_MPA_KEY_LEN 16
#define IW_MPA_KEY_REQ "MPA ID Req Frame"
#define IW_MPA_KEY_REP "MPA ID Rep Frame"

/* Request/Reply frame header: key, flags, revision, PD_Length. */
struct iw_mpa_frame_hdr {
	uint8_t key[IW_MPA_KEY_LEN];
	uint8_t flags;
	uint8_t rev;
	uint8_t pd_len[2]; /* big-endian; includes the RFC 6581 words */
};
_Static_assert(sizeof(struct iw_mpa_frame_hdr) == 20, "MPA frame header is 20 bytes");
#define IW_MPA_FRAME_HDR_LEN 20

/* PD_Length of a frame header at the start of buf (IW_MPA_FRAME_HDR_LEN
 * bytes at least): how many bytes follow the header. */
static inline uint16_t iw_mpa_hdr_pd_len(const uint8_t *buf)
{
	const struct iw_mpa_frame_hdr *h = (const struct iw_mpa_frame_hdr *)(const void *)buf;
	return (uint16_t)(h->pd_len[0] << 8 | h->pd_len[1]);
}

#define IW_MPA_FLAG_MARKERS 0x80
#define IW_MPA_FLAG_CRC 0x40
#define IW_MPA_FLAG_REJECT 0x20
#define IW_MPA_FLAG_ENHANCED 0x10 /* RFC 6581: IRD/ORD words lead the private data */
#define IW_MPA_FLAG_RESERVED_V1 0x1F
#define IW_MPA_FLAG_RESERVED_V2 0x0F
/* libiwarp's RFC 7306 capability, in reserved flag bits (MPA negotiates
 * nothing for it; docs/rfc7306.md): ASK in a Request, ACK in a Reply.
 * They differ because Linux siw echoes a Request's reserved bits in its
 * Reply, so an echoed ASK must not read as an ACK. */
#define IW_MPA_FLAG_RFC7306_ASK 0x08
#define IW_MPA_FLAG_RFC7306_ACK 0x04

#define IW_MPA_REV1 1
#define IW_MPA_REV2 2
#define IW_MPA_PD_MAX 512 /* RFC 5044 limit on PD_Length */

/* RFC 6581 enhanced words: two big-endian u16 at the start of private data. */
#define IW_MPA_V2_WORDS_LEN 4
#define IW_MPA_V2_W1_P2P 0x8000       /* A: peer-to-peer */
#define IW_MPA_V2_W1_RTR_SEND 0x4000  /* B: zero-length SEND RTR */
#define IW_MPA_V2_W2_RTR_WRITE 0x8000 /* C: zero-length WRITE RTR */
#define IW_MPA_V2_W2_RTR_READ 0x4000  /* D: zero-length READ RTR */
#define IW_MPA_V2_IRD_ORD_MASK 0x3FFF

/* FPDU framing. */
#define IW_MPA_LEN_FIELD 2
#define IW_MPA_CRC_LEN 4
#define IW_MPA_PAD_MAX 3
#define IW_MPA_MARKER_LEN 4
#define IW_MPA_MARKER_INTERVAL 512
#define IW_MPA_ULPDU_MAX 65535

/* Marker: 16 reserved bits, then the FPDU pointer (FPDUPTR). */
struct iw_mpa_marker {
	uint8_t rsvd[2];
	uint8_t fpduptr[2]; /* big-endian */
};
_Static_assert(sizeof(struct iw_mpa_marker) == IW_MPA_MARKER_LEN, "marker is 4 bytes");

/* Pad so that ULPDU_LENGTH field + ULPDU + pad is a multiple of 4. */
static inline unsigned iw_mpa_pad_len(unsigned ulpdu_len)
{
	return (4u - ((ulpdu_len + IW_MPA_LEN_FIELD) & 3u)) & 3u;
}

/* FPDU bytes on the wire without markers. */
static inline unsigned iw_mpa_fpdu_len(unsigned ulpdu_len)
{
	return IW_MPA_LEN_FIELD + ulpdu_len + iw_mpa_pad_len(ulpdu_len) + IW_MPA_CRC_LEN;
}

#endif
