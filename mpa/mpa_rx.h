/* FPDU receive deframer: a byte-resumable state machine (RFC 5044).
 *
 * It accepts the byte stream in any chunking and reports, per FPDU:
 *   HEADER  the ULP header (DDP/RDMAP, hdr_len bytes) is complete; the
 *           caller validates it and calls iw_mpa_rx_set_sink() to say where
 *           the payload goes (or NULL to drop it);
 *   FPDU    pad and CRC checked (when negotiated): the FPDU is complete;
 *   ERROR   a violation, with its Terminate cause; the deframer is dead.
 *
 * Two ways to supply bytes:
 *   feed    the caller has a chunk; payload bytes are copied to the sink.
 *   prepare/commit  zero-copy: prepare() returns the iovecs the next
 *           stream bytes must land in (internal header/marker/trailer
 *           buffers, or the caller's sink for payload); the transport reads
 *           straight into them (readv) and calls commit(n). A prepared list
 *           never extends past the next event, so one commit produces at
 *           most one event.
 * Markers (when negotiated for this direction) are stripped and their
 * FPDUPTR checked (see mpa_tx.h for the placement rule); CRC covers them.
 *
 * The ULP header length is learnt from the first two ULPDU bytes through
 * a callback supplied by the layer above, which also gives the minimum
 * ULPDU length for that control field (e.g. an RDMA Read Request must
 * carry its 28-byte body). ULPDU_LENGTH below that minimum, or above the
 * configured maximum, is (2,0,0x03).
 */
#ifndef IW_MPA_RX_H
#define IW_MPA_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <iwarp/term.h>

#include "mpa_wire.h"

#define IW_MPA_RX_MAX_HDR 64 /* largest ULP header the deframer buffers */

/* From the first two ULPDU bytes (DDP control, RDMAP control): the
 * header length to deliver in the HEADER event (<= IW_MPA_RX_MAX_HDR, >= 2)
 * and the minimum acceptable ULPDU_LENGTH. */
typedef void (*iw_mpa_ulp_lens_fn)(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu);

struct iw_mpa_rx_config {
	bool crc;
	bool markers;
	uint16_t max_ulpdu; /* 0 means IW_MPA_ULPDU_MAX */
	iw_mpa_ulp_lens_fn ulp_lens;
	/* Verified placement (with crc only): a caller buffer of at least
	 * max_ulpdu bytes. Payload is staged here and copied to the sink only
	 * after the FPDU's CRC matched, so no unverified byte reaches the
	 * sink (a whole FPDU fed in one chunk is checked in place and copied
	 * once). NULL: payload streams into the sink before the CRC is known. */
	uint8_t *stage;
	size_t stage_len;
};

enum iw_mpa_rx_event_type {
	IW_MPA_RX_NONE = 0, /* all given bytes consumed, no event */
	IW_MPA_RX_HEADER,
	IW_MPA_RX_FPDU,
	IW_MPA_RX_ERROR,
};

struct iw_mpa_rx_event {
	enum iw_mpa_rx_event_type type;
	const uint8_t *hdr; /* HEADER/FPDU: the ULP header (valid until the next call) */
	uint16_t hdr_len;
	uint16_t ulpdu_len;
	uint16_t payload_len; /* ulpdu_len - hdr_len */
	uint32_t fpdu_off;    /* stream offset where this FPDU started */
	struct iw_term_cause cause; /* ERROR */
};

enum iw_mpa_rx_state {
	IW_MPA_RX_S_LEN,
	IW_MPA_RX_S_HDR,
	IW_MPA_RX_S_SINK, /* HEADER reported, waiting for set_sink */
	IW_MPA_RX_S_PAYLOAD,
	IW_MPA_RX_S_TRAILER,
	IW_MPA_RX_S_DEAD,
};

struct iw_mpa_rx {
	struct iw_mpa_rx_config cfg;
	enum iw_mpa_rx_state state;
	uint32_t stream_off; /* octets consumed since the peer's first FPDU */
	uint32_t fpdu_start; /* stream offset where the current FPDU began */
	uint32_t crc;        /* running CRC state */
	uint8_t len_buf[IW_MPA_LEN_FIELD];
	uint8_t hdr[IW_MPA_RX_MAX_HDR];
	uint8_t marker[IW_MPA_MARKER_LEN];
	uint8_t trailer[IW_MPA_PAD_MAX + IW_MPA_CRC_LEN];
	uint8_t discard[256];
	uint16_t have;       /* bytes of the current field collected */
	uint16_t ulpdu_len;
	uint16_t hdr_len;
	uint16_t min_ulpdu;
	uint32_t payload_done;
	const struct iovec *sink;
	int nsink;
	/* Verified placement: the caller's sink, written only after the CRC
	 * check (nvsink 0: nothing pending); sink then points at stage_iov. */
	const struct iovec *vsink;
	int nvsink;
	struct iovec stage_iov;
	int sink_idx;
	size_t sink_off;
	struct iw_term_cause cause;
	/* Copy mode, a whole FPDU in one chunk: its CRC was computed over all
	 * of it with the header (one pass); crc_whole is the final value and
	 * whole_tail where the chunk's payload starts. Used when the rest is
	 * fed from there; any other path first restarts rx->crc from the
	 * header (kept in hdr), so the result never depends on it. */
	bool whole_pending;
	uint32_t crc_whole;
	const uint8_t *whole_tail;
};

void iw_mpa_rx_init(struct iw_mpa_rx *rx, const struct iw_mpa_rx_config *cfg);

/* Copy-mode input: consume bytes from data until an event or the end.
 * Returns the number of bytes consumed and sets *ev. After a HEADER event
 * the caller feeds the rest of the same chunk (data + consumed) or other
 * memory, never bytes rewritten in place at data + consumed. */
size_t iw_mpa_rx_feed(struct iw_mpa_rx *rx, const void *data, size_t len, struct iw_mpa_rx_event *ev);

/* Zero-copy input: where the next stream bytes go. Returns the number of
 * iovecs filled (>= 1 unless the deframer waits for set_sink or is dead,
 * then 0). cap must be >= 1. */
int iw_mpa_rx_prepare(struct iw_mpa_rx *rx, struct iovec *iov, int cap);

/* n bytes were written, in order, into the last prepared iovecs. */
void iw_mpa_rx_commit(struct iw_mpa_rx *rx, size_t n, struct iw_mpa_rx_event *ev);

/* After HEADER: where the payload_len payload bytes go, as an iovec list
 * whose total length is at least payload_len (the list must stay valid
 * until the FPDU event). NULL/0 drops the payload (it is still CRC-checked). */
void iw_mpa_rx_set_sink(struct iw_mpa_rx *rx, const struct iovec *sink, int nsink);

/* The sink given for the current FPDU must no longer be written (its
 * memory is going away): the rest of this payload is dropped (still
 * CRC-checked). Returns true if a payload was in progress (with verified
 * placement also while a staged payload waits for its CRC). */
bool iw_mpa_rx_drop_sink(struct iw_mpa_rx *rx);

/* True between FPDUs (no partial FPDU buffered): a clean place to stop. */
static inline bool iw_mpa_rx_at_boundary(const struct iw_mpa_rx *rx)
{
	return rx->state == IW_MPA_RX_S_LEN && rx->have == 0 && rx->stream_off == rx->fpdu_start;
}

#endif
