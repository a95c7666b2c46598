/* Test helpers: MPA Request/Reply frames as raw bytes, built without the
 * library's encoder so that any field value, valid or not, can be sent. */
#ifndef IWT_HANDSHAKE_H
#define IWT_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest frame the helpers can build: header, words, 16-bit PD_Length. */
#define IWT_MPA_FRAME_MAX (20 + 65535)

/* The Request rping on Linux siw sends: rev 2, enhanced, C=0, M=0, IRD 1,
 * ORD 1, no application private data (facts sheet sec. 3). */
#define IWT_SIW_RPING_REQ_LEN 24
extern const uint8_t iwt_siw_rping_req[IWT_SIW_RPING_REQ_LEN];
/* The same with C=1 (flags 0x50); siw answers it with the same 8 bytes. */
extern const uint8_t iwt_siw_req_crc[IWT_SIW_RPING_REQ_LEN];

/* RFC 6581 words from their parts; ird/ord are masked to 14 bits. */
uint16_t iwt_mpa_w1(bool p2p, bool rtr_send, uint16_t ird);
uint16_t iwt_mpa_w2(bool rtr_write, bool rtr_read, uint16_t ord);

/* Fully raw frame: key (16 bytes, need not be a valid key), flags, rev and
 * a PD_Length field independent of the body that follows. Returns the
 * bytes written (20 + body_len). */
size_t iwt_mpa_raw_bytes(const char *key16, uint8_t flags, uint8_t rev, uint16_t pd_len_field,
			 const uint8_t *body, size_t body_len, uint8_t *out);

/* Request / Reply: when flags has 0x10 (on any revision) the words w1, w2
 * lead the private data; PD_Length counts them. out must hold
 * 24 + pdlen bytes; pdlen + 4 must fit in 16 bits. */
size_t iwt_mpa_req_bytes(uint8_t flags, uint8_t rev, uint16_t w1, uint16_t w2,
			 const uint8_t *pdata, size_t pdlen, uint8_t *out);
size_t iwt_mpa_rep_bytes(uint8_t flags, uint8_t rev, uint16_t w1, uint16_t w2,
			 const uint8_t *pdata, size_t pdlen, uint8_t *out);

#endif
