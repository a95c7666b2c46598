/* Session generator for the iwdump tests: one TCP connection written to a
 * pcap (tests/helpers/iwt_pcap.h) carrying an MPA handshake made by our
 * negotiation code and FPDUs made by our DDP and MPA encoders, or raw
 * FPDUs with any header. It remembers what iwdump must report: per
 * direction FPDU / message / byte counts, payload per STag, and for every
 * stream octet the frame in which it was sent, so tests can name the frame
 * of an expected violation.
 *
 * A = IWT_TCP_A is the initiator, B the responder. Stream offsets count
 * the direction's TCP payload from its first byte (the MPA frame). */
#ifndef IWD_GEN_H
#define IWD_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwt_pcap.h"
#include "mpa/mpa_tx.h"
#include "rdmap/rdmap_term.h"
#include "rdmap/rdmap_wire.h"

#define IWD_GEN_STREAM_MAX (128 * 1024)
#define IWD_GEN_MAX_SEGS 1024
#define IWD_GEN_MAX_STAGS 16

/* How a direction's bytes are put on the wire. */
enum iwd_tcp_mode {
	IWD_TCP_NORMAL,
	IWD_TCP_RETRANSMIT, /* some segments are sent twice, one again later */
	IWD_TCP_OVERLAP,    /* every segment repeats the last 100 octets of the one before */
	IWD_TCP_REORDER,    /* segment pairs swapped */
	IWD_TCP_DROP,       /* the 3rd data segment is never written */
};

struct iwd_gen_opts {
	bool crc;
	bool markers;
	bool ipv6;
	uint16_t b_ird; /* the responder's IRD (0: 8) */
	enum iwd_tcp_mode mode[2];
};

struct iwd_gen_seg {
	size_t end;     /* stream offset after the segment */
	uint64_t frame; /* its frame number (1-based) */
};

struct iwd_gen_stag {
	uint32_t stag;
	uint64_t bytes;
};

#define IWD_GEN_MAX_SIZES 64

struct iwd_gen_size {
	int op;
	uint64_t size, count;
};

struct iwd_gen {
	struct iwd_gen_opts o;
	char path[1024];
	struct iwt_pcap pcap;
	struct iwt_tcp tcp;
	struct iw_mpa_tx tx[2];
	size_t mulpdu[2];
	uint32_t msn[2][IW_DDP_NUM_QN];
	uint8_t stream[2][IWD_GEN_STREAM_MAX];
	size_t len[2];     /* generated */
	size_t flushed[2]; /* handed to TCP */
	size_t hs_len[2];  /* the MPA frame: FPDU stream offset = stream offset - hs_len */
	uint32_t base[2];  /* sequence number of stream offset 0 */
	uint32_t hw[2];    /* highest sequence number written + 1 */
	unsigned data_segs[2];
	struct iwd_gen_seg segs[2][IWD_GEN_MAX_SEGS];
	int nsegs[2];
	uint64_t gap_seq, gap_len; /* IWD_TCP_DROP: what was left out */
	uint64_t first_ack_frame;  /* iwd_gen_clean: B's ACK of A's first flight */
	/* expectations */
	uint64_t fpdus[2], msgs[2], payload[2];
	uint64_t fpdus_op[2][IW_OP_MAX], msgs_op[2][IW_OP_MAX];
	struct iwd_gen_stag stags[2][IWD_GEN_MAX_STAGS];
	int nstags[2];
	/* completed messages per (opcode, size), sorted; a Read Request's
	 * size is the size it asks for */
	struct iwd_gen_size sizes[2][IWD_GEN_MAX_SIZES];
	int nsizes[2];
	uint64_t reads_req[2], reads_ans[2]; /* Read Requests dir sent / answered */
	uint8_t msgbuf[8192];
};

/* Where the last FPDU built went, in stream offsets. */
struct iwd_gen_fpdu {
	size_t start, end;
};

/* Open name in the test output directory, TCP handshake, MPA Request and
 * Reply (each in its own segment). Ends the test on failure. */
struct iwd_gen *iwd_gen_open(const char *name, const struct iwd_gen_opts *o);

/* A whole message from dir, cut into FPDUs by DDP and MPA (sizes up to
 * the MULPDU). op: any defined opcode; len is the payload (ignored for
 * READ_REQ and TERMINATE); stag/to: the tagged buffer, or the STag to
 * invalidate. READ_REQ sends *rr; TERMINATE reports *term with a copy of
 * a made-up Read Request. Returns the last FPDU's position. */
struct iwd_gen_fpdu iwd_gen_msg(struct iwd_gen *g, int dir, uint8_t op, uint32_t len, uint32_t stag, uint64_t to,
				const struct iw_rdmap_read_req *rr, const struct iw_term_cause *term);

/* One FPDU with this exact ULPDU: hdr (hdr_len bytes) then payload.
 * Counted as an FPDU of opcode op_for_stats; no message is expected. */
struct iwd_gen_fpdu iwd_gen_raw(struct iwd_gen *g, int dir, const void *hdr, size_t hdr_len, const void *payload,
				size_t plen, int op_for_stats);

/* Send what dir generated since the last flush (cut at 700/1300/90/1460/
 * 37/517 octets in turn, mangled per the direction's mode). */
void iwd_gen_flush(struct iwd_gen *g, int dir);
/* Flush A, B ACKs; flush B, A ACKs. */
void iwd_gen_flight(struct iwd_gen *g);
/* Frame of the segment carrying stream offset off of dir (NORMAL mode). */
uint64_t iwd_gen_frame_of(const struct iwd_gen *g, int dir, size_t off);
/* Frame number of the last packet written. */
uint64_t iwd_gen_last_frame(const struct iwd_gen *g);
/* Orderly close started by A, then write the file. */
void iwd_gen_close(struct iwd_gen *g);
/* Close the file without a FIN. */
void iwd_gen_end(struct iwd_gen *g);
void iwd_gen_free(struct iwd_gen *g);

/* The clean session: every opcode both ways, multi-FPDU messages, Read
 * Requests answered, a zero-length Send, A's Terminate last; closed. */
struct iwd_gen *iwd_gen_clean(const char *name, const struct iwd_gen_opts *o);

/* The SUMMARY lines iwdump must print for the generated session (the
 * indented per-direction lines, dup/out-of-order counts as given),
 * appended to buf. */
void iwd_gen_summary_lines(const struct iwd_gen *g, int dir, uint64_t dup, uint64_t ooo, char *buf, size_t cap);

#endif
