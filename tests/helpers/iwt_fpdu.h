/* FPDU test helpers: flatten iw_mpa_tx output, an independent slow
 * reference encoder, and a driver that pushes a byte stream through an
 * iw_mpa_rx in random chunkings (copy or zero-copy) while recording every
 * event and payload byte and watching guard bytes around the sinks. */
#ifndef IWT_FPDU_H
#define IWT_FPDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "mpa/mpa_rx.h"
#include "mpa/mpa_tx.h"

/* ulp_lens callback for tests: ctrl[0] & 0x80 (tagged) -> 14-byte header,
 * else 18; min ULPDU = header, except untagged opcode 1 (Read Request): 46. */
void iwt_fpdu_ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu);

/* Bitwise CRC-32C (final value), independent of mpa/crc32c.c. */
uint32_t iwt_fpdu_crc32c_ref(const void *buf, size_t len);

/* One FPDU through tx, gather list flattened into out. Returns the wire
 * length, -ENOSPC if cap is too small, or iw_mpa_tx_build's error. */
ssize_t iwt_fpdu_build_flat(struct iw_mpa_tx *tx, const void *hdr, size_t hdr_len,
                            const struct iovec *payload, int npayload, uint8_t *out, size_t cap);

struct iwt_fpdu_msg {
	const void *hdr;
	size_t hdr_len;
	const void *payload;
	size_t payload_len;
};

/* A stream of FPDUs through a fresh tx (crc, markers), flattened. offs
 * (optional, n entries) gets each FPDU's stream offset; with split_rng the
 * payloads are handed over as random iovec lists (up to 16 pieces).
 * Returns the length or a negative errno. */
ssize_t iwt_fpdu_stream(bool crc, bool markers, const struct iwt_fpdu_msg *msgs, int n,
                        uint8_t *out, size_t cap, uint32_t *offs, uint64_t *split_rng);

/* Cuts [base, base + len) into at most max iovecs in order, some of them
 * empty (with base NULL or not) when rng says so. Returns the count. */
int iwt_fpdu_split(uint64_t *rng, const void *base, size_t len, struct iovec *iov, int max);

/* Reference encoder, byte at a time: one FPDU starting at stream_off
 * (4-aligned). Same return convention. */
ssize_t iwt_fpdu_ref_encode(uint32_t stream_off, bool crc, bool markers, const void *hdr,
                            size_t hdr_len, const void *payload, size_t payload_len, uint8_t *out,
                            size_t cap);
ssize_t iwt_fpdu_ref_stream(bool crc, bool markers, const struct iwt_fpdu_msg *msgs, int n,
                            uint8_t *out, size_t cap);

/* Receive driver. */
struct iwt_fpdu_rec {
	enum iw_mpa_rx_event_type type;
	uint16_t hdr_len;
	uint16_t ulpdu_len;
	uint16_t payload_len;
	uint32_t fpdu_off;
	uint8_t hdr[IW_MPA_RX_MAX_HDR];
	struct iw_term_cause cause;
	bool dropped;      /* HEADER: payload sent to set_sink(NULL) */
	size_t payload_at; /* FPDU: where its payload starts in log->payload */
};

struct iwt_fpdu_log {
	struct iwt_fpdu_rec *rec;
	int nrec;
	int rec_cap;
	uint8_t *payload; /* payloads of non-dropped FPDUs, concatenated */
	size_t payload_len;
	size_t payload_cap;
	size_t consumed;  /* stream bytes accepted */
	int bad_guard;    /* bytes written outside a sink */
	int bad_contract; /* API rules broken (event placement, stalls) */
};

enum iwt_fpdu_rx_mode {
	IWT_FPDU_FEED,  /* iw_mpa_rx_feed with random chunk sizes */
	IWT_FPDU_READV, /* prepare + copy a random short count + commit */
};

struct iwt_fpdu_rx_opts {
	enum iwt_fpdu_rx_mode mode;
	size_t max_chunk;  /* chunk / short-count upper bound (>= 1) */
	int max_iov;       /* READV: prepare cap drawn from 1..max_iov */
	int max_sink_iov;  /* sink split into up to this many iovecs (some empty) */
	unsigned drop_pct; /* share of FPDUs whose payload is dropped */
	size_t sink_short; /* make sinks this many bytes short (caller bug test) */
	uint64_t *rng;
};

void iwt_fpdu_log_init(struct iwt_fpdu_log *log);
void iwt_fpdu_log_free(struct iwt_fpdu_log *log);

/* Pushes buf through rx until it ends or an ERROR; returns the number of
 * records. A HEADER is always answered with set_sink. */
int iwt_fpdu_rx_run(struct iw_mpa_rx *rx, const uint8_t *buf, size_t len,
                    const struct iwt_fpdu_rx_opts *o, struct iwt_fpdu_log *log);

#endif
