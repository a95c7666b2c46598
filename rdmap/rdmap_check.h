/* Passive RDMAP stream checker, sans-I/O: an observer's view of both
 * directions of one iWARP connection (MPA FPDUs, DDP, RDMAP), for iwdump,
 * replay tests and pcap conformance tests.
 *
 * Directions: IW_CHK_I2R is what the MPA initiator sends, IW_CHK_R2I what
 * the responder sends. A Read Request travels one way and its Read
 * Response the other, so the checker keeps both directions together; feed
 * them in capture order.
 *
 * Two levels:
 *  - stream: iw_rdmap_check_feed() takes each direction's reassembled TCP
 *    bytes after the MPA Reply (resp. Request) and deframes them with the
 *    real MPA receiver (mpa_rx: CRC, markers, ULPDU_LENGTH), then checks
 *    each complete FPDU; iw_rdmap_check_end() says the stream ended.
 *  - segment: iw_rdmap_check_segment() checks one already deframed DDP
 *    segment (header + payload length + the first payload bytes).
 *
 * Every complete FPDU yields an event with its decoded header, at most one
 * violation and at most one completed message. A violation names the
 * Terminate (layer, etype, ecode) the receiver should send, in the order
 * the receive path (rdmap_conn.c) checks, and with its causes (the
 * tests hold the two together): DDP version, RDMAP version, opcode, QN,
 * Read Response match, MSN, MO, Read Request body, IRD.
 * After a DDP/RDMAP violation the checker adopts what it saw (e.g. the
 * MSN) and goes on, so one bad segment is one violation. An MPA-level
 * violation (CRC, marker, ULPDU_LENGTH, truncated FPDU) stops that
 * direction: the framing can no longer be trusted.
 *
 * The checker only judges what a receiver can see on the wire: it does not
 * know STags or posted buffers, so it checks no placement rights. A
 * Terminate is decoded (RFC and siw layouts) and reported as a message,
 * not as a violation. Nothing is allocated; the struct is large (it holds
 * IW_RDMAP_CHECK_MAX_READS outstanding Read Requests per direction). */
#ifndef IW_RDMAP_CHECK_H
#define IW_RDMAP_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <iwarp/term.h>

#include "../ddp/ddp_wire.h"
#include "../mpa/mpa_frame.h"
#include "../mpa/mpa_negotiate.h"
#include "../mpa/mpa_rx.h"
#include "rdmap_term.h"
#include "rdmap_wire.h"

enum { IW_CHK_I2R = 0, IW_CHK_R2I = 1 };

/* Outstanding Read Requests tracked per direction (RFC 6581 allows IRD
 * up to 16383; siw and this stack use at most 128). */
#define IW_RDMAP_CHECK_MAX_READS 1024
/* Bytes of an untagged message body kept (Read Request, Terminate). */
#define IW_RDMAP_CHECK_BODY_MAX 64

enum iw_rdmap_check_code {
	IW_CHK_OK = 0,
	/* MPA (stream level; the direction stops) */
	IW_CHK_MPA_CRC,        /* (2,0,2) */
	IW_CHK_MPA_MARKER,     /* FPDUPTR wrong (2,0,3); got/want the pointer */
	IW_CHK_MPA_LEN_SMALL,  /* ULPDU_LENGTH below the header / opcode minimum (2,0,3) */
	IW_CHK_MPA_LEN_LARGE,  /* ULPDU_LENGTH above max_ulpdu (2,0,3) */
	IW_CHK_TRUNCATED,      /* stream ended inside an FPDU (2,0,1) */
	IW_CHK_MPA_FRAME,      /* bad Request/Reply frame (2,0,4); got = enum iw_mpa_frame_error, want = kind */
	IW_CHK_MPA_REPLY,      /* Reply an initiator must refuse (2,0,4); got = enum iw_mpa_reject_reason */
	/* DDP / RDMAP (segment level) */
	IW_CHK_DDP_VERSION_T,  /* (1,1,4) */
	IW_CHK_DDP_VERSION_U,  /* (1,2,6) */
	IW_CHK_RDMAP_VERSION,  /* (0,2,5) */
	IW_CHK_OPCODE,         /* undefined opcode, or T bit wrong for it (0,2,6) */
	IW_CHK_QN,             /* untagged QN not the opcode's queue (1,2,1) */
	IW_CHK_MSN,            /* (1,2,3) */
	IW_CHK_MO,             /* (1,2,4) */
	IW_CHK_RESP_UNEXPECTED, /* Read Response, no Read Request outstanding (0,2,6) */
	IW_CHK_RESP_STAG,      /* not the sink STag of the oldest request (1,1,0) */
	IW_CHK_RESP_TO,        /* TO not where the response has got to (1,1,1) */
	IW_CHK_RESP_TOO_LONG,  /* more bytes than requested (1,1,1) */
	IW_CHK_RESP_SHORT,     /* L=1 before the requested size (0,2,0xFF) */
	IW_CHK_READ_REQ_LEN,   /* body shorter than 28 bytes, or not at MO 0 (0,2,0xFF) */
	IW_CHK_IRD,            /* more Read Requests outstanding than the receiver's IRD (0,2,7) */
	IW_CHK_READ_REQ_LONG,  /* body beyond its 28 bytes: too long for the buffer (1,2,5) */
	/* RFC 7306 */
	IW_CHK_EXT_NOT_NEGOTIATED, /* RFC 7306 opcode on a connection that did not negotiate it (0,2,6) */
	IW_CHK_BODY_LONG,      /* Atomic / Immediate body beyond its fixed size (1,2,5) */
	IW_CHK_BODY_LEN,       /* Atomic / Immediate body not its fixed size at MO 0 (0,2,0xFF) */
	IW_CHK_ATOMIC_OP,      /* unknown Atomic Operation code (0,2,0xFF) */
	IW_CHK_ATOMIC_UNEXPECTED, /* Atomic Response with no Atomic Request oldest outstanding,
				   * or Read Response where an Atomic Response is due (0,2,6) */
	IW_CHK_ATOMIC_ID,      /* Atomic Response for another request identifier (0,2,0xFF) */
	IW_CHK_CODE_COUNT,
};

struct iw_rdmap_violation {
	enum iw_rdmap_check_code code;
	struct iw_term_cause cause;
	uint64_t got, want; /* code-specific values for the text */
	uint32_t qn, msn;   /* MSN / MO / QN violations */
	uint8_t opcode;
};

enum iw_rdmap_check_crc {
	IW_CHK_CRC_NONE = 0, /* CRC not negotiated */
	IW_CHK_CRC_OK,
	IW_CHK_CRC_BAD,
};

/* One FPDU as decoded. */
struct iw_rdmap_check_fpdu {
	struct iw_ddp_hdr hdr;
	uint8_t opcode;
	uint16_t ulpdu_len;
	uint16_t payload_len; /* ULPDU after the DDP header (a Read Request's body counts) */
	uint32_t stream_off;  /* where it began in the sender's FPDU stream (stream level) */
	enum iw_rdmap_check_crc crc;
};

/* A message whose last segment (L=1) was seen. */
struct iw_rdmap_check_msg {
	uint8_t opcode;
	bool tagged;
	uint32_t qn, msn;    /* untagged */
	uint32_t stag;       /* tagged: STag of its first segment */
	uint64_t to;         /* tagged: TO of its first segment */
	uint32_t inv_stag;   /* Send with Invalidate */
	uint64_t len;        /* payload bytes (Read Request: its 28-byte body) */
	struct iw_rdmap_atomic_req atomic;  /* Atomic Request; Atomic Response: the request */
	struct iw_rdmap_atomic_resp aresp;  /* Atomic Response */
	bool atomic_known;
	uint64_t imm;        /* Immediate Data */
	uint32_t fpdus;
	struct iw_rdmap_read_req rr; /* Read Request; Read Response: the request it answered */
	bool rr_known;       /* rr is valid (a Read Response is unmatched when the
			      * requester's direction stopped before its request) */
	struct iw_rdmap_term term;   /* Terminate */
	bool term_ok;        /* the Terminate body decoded completely */
};

enum iw_rdmap_check_ev_type {
	IW_CHK_EV_NONE = 0, /* input consumed, nothing to report */
	IW_CHK_EV_FPDU,     /* an FPDU completed (has_fpdu) */
	IW_CHK_EV_STOP,     /* MPA-level violation: the direction stopped */
};

struct iw_rdmap_check_ev {
	enum iw_rdmap_check_ev_type type;
	bool has_fpdu; /* FPDU; STOP after a CRC error (the failed FPDU) */
	bool has_violation;
	bool has_msg;
	struct iw_rdmap_check_fpdu fpdu;
	struct iw_rdmap_violation viol;
	struct iw_rdmap_check_msg msg;
};

struct iw_rdmap_check_cfg {
	bool crc;            /* both directions */
	bool markers[2];     /* the sender of that direction inserts markers */
	uint16_t max_ulpdu;  /* largest ULPDU accepted, 0 = 65535 */
	/* Read Requests sent in direction d that its receiver accepts
	 * outstanding (the receiver's IRD), when reads_known[d]. */
	bool reads_known[2];
	uint16_t max_reads[2];
	bool rfc7306; /* both ends negotiated RFC 7306 (docs/rfc7306.md) */
};

/* Untagged queue state: the message in progress or the next one. */
struct iw_rdmap_check_queue {
	uint32_t msn;
	uint32_t mo;
	uint32_t fpdus;
};

/* A tagged message in progress (RDMA Write). */
struct iw_rdmap_check_tmsg {
	bool active;
	uint32_t stag;
	uint64_t to;
	uint64_t len;
	uint32_t fpdus;
};

struct iw_rdmap_check_dir {
	struct iw_mpa_rx rx;
	bool stopped;
	bool lost;    /* stopped with bytes unseen (MPA error, caller's gap) */
	bool in_fpdu; /* stream level: a HEADER event was seen, FPDU pending */
	uint8_t hdr[IW_MPA_RX_MAX_HDR];
	uint16_t hdr_len;
	uint8_t scratch[IW_RDMAP_CHECK_BODY_MAX];
	struct iovec sink;
	bool sink_used;
	struct iw_rdmap_check_queue q[IW_DDP_RX_NUM_QN];
	uint8_t body[IW_DDP_RX_NUM_QN][IW_RDMAP_CHECK_BODY_MAX]; /* QN 1, 2, 3 bodies; QN 0 Immediate Data */
	struct iw_rdmap_check_tmsg write;
	struct iw_rdmap_check_tmsg resp_unknown; /* Read Response the checker cannot match */
	/* Read Requests this direction sent, oldest first, not yet answered
	 * completely by the other direction. */
	struct iw_rdmap_read_req reads[IW_RDMAP_CHECK_MAX_READS];
	/* RFC 7306 Atomic Requests share the ring (and the IRD) with reads:
	 * is_atomic marks them, atomics[] holds their requests. */
	bool is_atomic[IW_RDMAP_CHECK_MAX_READS];
	struct iw_rdmap_atomic_req atomics[IW_RDMAP_CHECK_MAX_READS];
	uint32_t rd_head, rd_count;
	uint64_t resp_placed;  /* bytes of the oldest request answered so far */
	uint32_t resp_fpdus;
};

struct iw_rdmap_check {
	struct iw_rdmap_check_cfg cfg;
	struct iw_rdmap_check_dir d[2];
};

/* The observer's configuration from the two handshake frames, with the
 * negotiation rules of mpa_negotiate.h applied as the initiator would
 * (its settings inferred from its Request): CRC iff the Reply has C=1;
 * the initiator inserts markers iff the Reply has M=1, the responder iff
 * the Request has; with rev 2 enhanced frames the reads the initiator may
 * have outstanding are limited by the Reply's IRD, the responder's by the
 * Request's IRD. Returns IW_MPA_OK, or why the initiator would refuse the
 * Reply (IW_MPA_REJ_PEER for a reject); cfg is filled either way.
 * max_ulpdu is left 0. */
enum iw_mpa_reject_reason iw_rdmap_check_cfg_from_mpa(const struct iw_mpa_frame *req,
						      const struct iw_mpa_frame *rep,
						      struct iw_rdmap_check_cfg *cfg);

void iw_rdmap_check_init(struct iw_rdmap_check *c, const struct iw_rdmap_check_cfg *cfg);

/* Stream level: consume bytes of direction dir until an event or the end.
 * Returns the bytes consumed (> 0 unless len is 0 or an event is
 * reported). A stopped direction swallows everything with no event. */
size_t iw_rdmap_check_feed(struct iw_rdmap_check *c, int dir, const void *data, size_t len,
			   struct iw_rdmap_check_ev *ev);

/* The direction's stream ended (FIN, RST or end of capture). Returns true
 * with a STOP event when it ended inside an FPDU. */
bool iw_rdmap_check_end(struct iw_rdmap_check *c, int dir, struct iw_rdmap_check_ev *ev);

/* True once an MPA-level violation or the end stopped the direction. */
bool iw_rdmap_check_stopped(const struct iw_rdmap_check *c, int dir);

/* The caller lost bytes of direction dir (a capture gap): nothing more is
 * fed there. Read Responses in the other direction for requests the
 * checker never saw are then reported unmatched (rr_known false) instead
 * of as violations. */
void iw_rdmap_check_stop(struct iw_rdmap_check *c, int dir);

/* Segment level: one deframed segment of direction dir. hdr holds the DDP
 * header (hdr_len at least the length its T bit announces; more is
 * ignored; less is reported as IW_CHK_MPA_LEN_SMALL); payload_len counts
 * the ULPDU bytes after the DDP header; body holds the first body_len of
 * them (body_len <= payload_len; only Read Request and Terminate bodies
 * are looked at, missing bytes read as 0). Fills an FPDU event (crc NONE,
 * stream_off 0). */
void iw_rdmap_check_segment(struct iw_rdmap_check *c, int dir, const uint8_t *hdr, size_t hdr_len,
			    const uint8_t *body, size_t body_len, size_t payload_len,
			    struct iw_rdmap_check_ev *ev);

/* Fill v for code with its Terminate cause and values. */
void iw_rdmap_violation_set(struct iw_rdmap_violation *v, enum iw_rdmap_check_code code, uint64_t got,
			    uint64_t want);

/* The cause a code maps to. */
struct iw_term_cause iw_rdmap_check_code_cause(enum iw_rdmap_check_code code);

/* One-line description without the cause, e.g. "MSN 5 on QN 0, expected 4".
 * snprintf semantics. */
int iw_rdmap_violation_str(const struct iw_rdmap_violation *v, char *buf, size_t cap);

#endif
