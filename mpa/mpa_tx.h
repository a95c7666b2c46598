/* FPDU transmit builder (RFC 5044 sec. 4, 5, 6).
 *
 * Wraps a ULP header and a payload iovec list with ULPDU_LENGTH, pad and
 * CRC without copying anything: the result is a gather list pointing at
 * the caller's header, the caller's payload and a small per-FPDU scratch
 * (length field, markers, pad + CRC). The CRC is computed in place over
 * the caller's memory.
 *
 * Markers: when negotiated, a 4-byte marker sits at every 512th octet of
 * the sender's TCP stream counted from where its first FPDU starts (so the
 * first FPDU starts with a marker). A marker that falls exactly where an
 * FPDU starts belongs to that FPDU (it comes before ULPDU_LENGTH). The
 * marker's FPDUPTR is the distance in octets from the start of the FPDU
 * containing it (its leading marker, if it has one, else its ULPDU_LENGTH
 * field) to the marker. Markers inside an FPDU are covered by its CRC and
 * are not counted in ULPDU_LENGTH.
 */
#ifndef IW_MPA_TX_H
#define IW_MPA_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mpa_wire.h"

/* A 64 KiB FPDU with markers spans at most this many marker positions. */
#define IW_MPA_TX_MAX_MARKERS 130

struct iw_mpa_tx {
	bool crc;
	bool markers;
	uint32_t stream_off; /* octets emitted since our first FPDU started */
};

/* Per-FPDU scratch referenced by the gather list: keep it alive (and
 * unmodified) until the FPDU's bytes have been handed to the transport.
 * Marker bytes go to caller-provided room (markers_cap entries; none is
 * needed without markers), so a connection without markers does not carry
 * half a KiB of marker scratch per FPDU in flight. */
struct iw_mpa_tx_frame {
	uint8_t len_be[IW_MPA_LEN_FIELD];
	uint8_t trailer[IW_MPA_PAD_MAX + IW_MPA_CRC_LEN]; /* pad, then CRC */
	uint16_t n_markers;
	uint16_t markers_cap;
	uint8_t (*markers)[IW_MPA_MARKER_LEN];
	uint32_t wire_len; /* total bytes of this FPDU including markers */
};

/* A frame with room for the most markers any FPDU can have. */
struct iw_mpa_tx_fpdu {
	struct iw_mpa_tx_frame f;
	uint8_t markers[IW_MPA_TX_MAX_MARKERS][IW_MPA_MARKER_LEN];
};

void iw_mpa_tx_init(struct iw_mpa_tx *tx, bool crc, bool markers);

/* Largest ULPDU (MULPDU) whose FPDU fits into emss octets of TCP payload,
 * assuming worst-case marker placement when markers is set (RFC 5044
 * sec. 4.1 formula). emss below 64 returns 0. */
size_t iw_mpa_mulpdu(size_t emss, bool markers);

/* Wire length an FPDU carrying ulpdu_len would have if built now (markers
 * depend on the current stream position). */
size_t iw_mpa_tx_wire_len(const struct iw_mpa_tx *tx, size_t ulpdu_len);

/* Build one FPDU from hdr (hdr_len bytes, e.g. the DDP/RDMAP header) and
 * the payload list. Writes at most iov_cap iovecs to iov and returns how
 * many, or -EMSGSIZE when hdr_len + payload exceeds IW_MPA_ULPDU_MAX,
 * -ENOBUFS when iov_cap is too small (nothing is changed then), -EINVAL on
 * bad arguments. On success tx->stream_off advances by fpdu->wire_len.
 * Worst case iovecs needed: 2 * (npayload + 2) + 2 * IW_MPA_TX_MAX_MARKERS
 * with markers, npayload + 3 without. */
int iw_mpa_tx_build(struct iw_mpa_tx *tx, struct iw_mpa_tx_fpdu *fpdu, const void *hdr,
		    size_t hdr_len, const struct iovec *payload, int npayload, struct iovec *iov,
		    int iov_cap);
/* The same into a frame with its own marker room (fr->markers,
 * fr->markers_cap): -EINVAL when the FPDU needs more markers than that. */
int iw_mpa_tx_build_frame(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fr, const void *hdr,
			  size_t hdr_len, const struct iovec *payload, int npayload, struct iovec *iov,
			  int iov_cap);

/* The same, with IW_MPA_LEN_FIELD writable bytes right before hdr that
 * the FPDU may use (hdr must not be NULL): without markers ULPDU_LENGTH
 * is written there (and to fr->len_be), so length field and header leave
 * as one iovec and one CRC call; with markers it builds exactly what
 * iw_mpa_tx_build_frame does. Keep the room unmodified like the frame. */
int iw_mpa_tx_build_frame_hr(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fr, uint8_t *hdr,
			     size_t hdr_len, const struct iovec *payload, int npayload,
			     struct iovec *iov, int iov_cap);

/* Small FPDU in one piece. hdr has IW_MPA_LEN_FIELD writable bytes
 * before it and room writable bytes from hdr on. Without markers, when
 * hdr_len + payload + pad + CRC fits room, the payload is copied behind
 * the header and pad and CRC behind it: the FPDU leaves as one iovec
 * (fr->len_be and fr->trailer hold copies of the length field and pad +
 * CRC) and its CRC is one pass over contiguous bytes. Otherwise (markers,
 * or too big) it is exactly iw_mpa_tx_build_frame_hr. Same returns and
 * wire bytes as that function either way; the payload is read now, not at
 * send time. Keep the room unmodified until the FPDU is sent. */
int iw_mpa_tx_build_frame_inl(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fr, uint8_t *hdr,
			      size_t hdr_len, size_t room, const struct iovec *payload,
			      int npayload, struct iovec *iov, int iov_cap);

/* The small FPDU of iw_mpa_tx_build_frame_inl when the caller already has
 * the whole ULPDU (header and payload, ulpdu_len bytes) contiguous at
 * ulpdu: no markers (the caller checks), IW_MPA_LEN_FIELD writable bytes
 * before ulpdu and pad + CRC writable bytes after it. Writes one iovec to
 * iov; the same wire bytes, frame record and stream position as the
 * inline builder, without its argument checks and payload copy. */
void iw_mpa_tx_frame_contig(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fr, uint8_t *ulpdu, size_t ulpdu_len,
			    struct iovec *iov);

#endif
