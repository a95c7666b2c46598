/* One RDMAP stream endpoint, sans-I/O: MPA framing + DDP placement + RDMAP
 * semantics for one connection (the protocol half of a QP).
 *
 * Transmit: the owner posts work requests (SEND variants, RDMA WRITE,
 * RDMA READ); the engine also answers inbound Read Requests and sends the
 * Terminate after a violation. iw_rdmap_tx_pull() hands out gather lists
 * of whole FPDUs (header | application memory | pad + CRC) that the
 * transport writes; iw_rdmap_tx_ack() says how many bytes it wrote.
 * RFC 7306 (cfg.rfc7306): Atomic Requests share QN 1, the IRD/ORD limits
 * and the response order with Read Requests (an atomic executes once, when
 * every earlier response has been handed to the transport, and answers on
 * QN 3); Write with Immediate is an RDMA Write followed by an Immediate
 * Data message on QN 0, which consumes the head receive buffer and
 * completes it with the 8 immediate bytes (RECV_DONE, opcode IMM_DATA).
 * Messages are scheduled whole: Read Responses and send-queue messages
 * interleave only between messages (RFC 5040 sec. 5.5); a pending
 * Terminate goes out at the next FPDU boundary and nothing follows it.
 *
 * Receive: bytes go in by copy (iw_rdmap_rx_feed) or zero-copy
 * (iw_rdmap_rx_prepare + readv + iw_rdmap_rx_commit): payload lands
 * directly in the registered memory (tagged) or the posted receive buffer
 * (untagged) after the headers were validated. Violations are detected at
 * the layer that knows, carried as (layer, etype, ecode) into our
 * Terminate, reported as an ERROR event, and the stream stops.
 *
 * Completions (events through ops->event, in order per queue):
 *   SQ_DONE    a posted WR finished: SEND/WRITE when the transport accepted
 *              its last byte, READ when its last response byte was placed.
 *              Reported strictly in posting order.
 *   RECV_DONE  a SEND message arrived whole in the head receive buffer (the
 *              owner pops it); Send with Invalidate invalidated first.
 *   TERM_RECV  the peer's Terminate (decoded, siw layout accepted).
 *   ERROR      we detected a violation; our Terminate is queued.
 *   TERM_SENT  our Terminate was fully handed to the transport: close now.
 *   SQ_FLUSH   from iw_rdmap_flush(): a WR that will never complete.
 *
 * Memory: all per-connection storage is given by the caller at init
 * (iw_rdmap_conn_mem); nothing is allocated, nothing a peer sends makes the
 * engine allocate. Not thread-safe: one progress context owns a conn. */
#ifndef IW_RDMAP_CONN_H
#define IW_RDMAP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <iwarp/term.h>

#include "../ddp/ddp_rx.h"
#include "../ddp/ddp_tx.h"
#include "../mpa/mpa_rx.h"
#include "../mpa/mpa_tx.h"
#include "rdmap_term.h"
#include "rdmap_wire.h"

#define IW_RDMAP_MAX_SGE 16
#define IW_RDMAP_MAX_IRD_ORD 128

/* Access rights a tagged lookup must check. */
enum {
	IW_RDMAP_ACC_LOCAL_WRITE = 1,  /* Read Response into our sink buffer */
	IW_RDMAP_ACC_REMOTE_WRITE = 2, /* inbound RDMA WRITE */
	IW_RDMAP_ACC_REMOTE_READ = 4,  /* inbound RDMA READ source */
	IW_RDMAP_ACC_REMOTE_ATOMIC = 8, /* inbound RFC 7306 Atomic target */
};

enum iw_rdmap_wr_opcode {
	IW_RDMAP_WR_SEND,
	IW_RDMAP_WR_SEND_SE,
	IW_RDMAP_WR_SEND_INV,
	IW_RDMAP_WR_SEND_SE_INV,
	IW_RDMAP_WR_WRITE,
	IW_RDMAP_WR_READ,
	/* RFC 7306: need cfg.rfc7306 (else post fails -EOPNOTSUPP) */
	IW_RDMAP_WR_ATOMIC_FETCH_ADD, /* sgl: one 8-byte buffer for the original value */
	IW_RDMAP_WR_ATOMIC_CMP_SWAP,
	IW_RDMAP_WR_WRITE_IMM,        /* RDMA Write of sgl, then Immediate Data */
	IW_RDMAP_WR_OPCODE_MAX = IW_RDMAP_WR_WRITE_IMM,
};

struct iw_rdmap_wr {
	uint64_t cookie; /* returned in the completion (wr_id) */
	enum iw_rdmap_wr_opcode opcode;
	bool fence; /* wait until every earlier READ has completed */
	struct iovec sgl[IW_RDMAP_MAX_SGE]; /* local memory: source, or READ sink */
	int nsge;
	uint32_t remote_stag; /* WRITE / READ: the peer's STag */
	uint64_t remote_to;
	uint32_t local_stag; /* READ: our sink STag, sent in the request */
	uint64_t local_to;   /* READ: our sink TO (sgl[0] must be that memory) */
	uint32_t inv_stag;   /* SEND_INV / SEND_SE_INV */
	/* ATOMIC_*: add or swap value and compare value (host order); the
	 * request carries plain masks (FetchAdd 0, CmpSwap all-ones), as
	 * verbs do. WRITE_IMM: imm, and solicited for the Immediate Data
	 * with SE variant. */
	uint64_t add_swap, compare;
	uint64_t imm;
	bool solicited;
};

enum iw_rdmap_event_type {
	IW_RDMAP_EV_SQ_DONE = 1,
	IW_RDMAP_EV_RECV_DONE,
	IW_RDMAP_EV_TERM_RECV,
	IW_RDMAP_EV_ERROR,
	IW_RDMAP_EV_TERM_SENT,
	IW_RDMAP_EV_SQ_FLUSH,
};

struct iw_rdmap_event {
	enum iw_rdmap_event_type type;
	uint64_t cookie;             /* SQ_DONE / SQ_FLUSH */
	enum iw_rdmap_wr_opcode wr_opcode; /* SQ_DONE / SQ_FLUSH */
	uint8_t opcode;              /* RECV_DONE: the RDMAP opcode received */
	uint32_t byte_len;           /* SQ_DONE (READ: bytes read) / RECV_DONE */
	bool solicited;              /* RECV_DONE */
	bool invalidated;            /* RECV_DONE: inv_stag was invalidated */
	uint32_t inv_stag;
	bool has_imm;                /* RECV_DONE of Immediate Data: imm is valid */
	uint64_t imm;
	struct iw_term_cause cause;  /* ERROR / TERM_RECV */
	const struct iw_rdmap_term *term; /* TERM_RECV */
};

struct iw_rdmap_conn_ops {
	/* Resolve len bytes at TO of stag with the given access right. */
	enum iw_stag_status (*stag)(void *ctx, uint32_t stag, uint64_t to, size_t len,
				    unsigned access, uint8_t **addr);
	/* The head posted receive buffer (same one until RECV_DONE pops it):
	 * 0 and its iovecs, or -1 when none is posted. */
	int (*recv_buf)(void *ctx, const struct iovec **sgl, int *nsge);
	/* Invalidate a local STag on behalf of the peer: 0, or -1 when it
	 * cannot be invalidated (unknown, other PD, not invalidatable). */
	int (*invalidate)(void *ctx, uint32_t stag);
	void (*event)(void *ctx, const struct iw_rdmap_event *ev);
};

struct iw_rdmap_conn_cfg {
	bool crc;
	bool markers_tx;
	bool markers_rx;
	uint32_t mulpdu;        /* largest ULPDU we send (iw_mpa_mulpdu) */
	uint16_t max_ulpdu_rx;  /* largest ULPDU we accept (0 = 65535) */
	uint16_t ird;           /* inbound reads we accept at once (<= mem.n_ird) */
	uint16_t ord;           /* reads we issue at once (<= 128) */
	bool rfc7306;           /* RFC 7306 opcodes negotiated for this stream */
};

/* A posted WR as the send queue keeps it: its SGEs live in
 * mem.sgl_pool (mem.max_sge per slot), not in a maximum-sized array. */
struct iw_rdmap_sq_wr {
	uint64_t cookie;
	struct iovec *sgl;
	uint64_t remote_to;
	/* Fields no opcode uses together share room: the send queue is
	 * per-WR memory of every QP. */
	union {
		uint64_t local_to; /* READ */
		uint64_t compare;  /* ATOMIC_CMP_SWAP */
	};
	union {
		uint64_t add_swap; /* ATOMIC_* */
		uint64_t imm;      /* WRITE_IMM */
	};
	uint32_t remote_stag;
	uint32_t local_stag;
	uint32_t inv_stag;
	int nsge;
	enum iw_rdmap_wr_opcode opcode;
	bool fence;
	bool solicited;
};

/* Send queue slot. */
struct iw_rdmap_sq_entry {
	struct iw_rdmap_sq_wr wr;
	uint8_t state;
	bool write_sent; /* WRITE_IMM: the Write part is built */
	union {
		uint32_t placed; /* READ: response bytes placed */
		uint32_t req_id; /* ATOMIC: identifier sent in the request */
	};
};

/* Inbound Read Request slot. */
struct iw_rdmap_ird_entry {
	union {
		uint8_t raw[IW_RDMAP_MAX_BODY]; /* body as received; ATOMIC: then its response */
		struct iw_rdmap_read_req req;   /* READ, once decoded */
	};
	uint8_t *src; /* READ source / ATOMIC target */
	uint8_t state;
	bool is_atomic;
	bool executed; /* ATOMIC: applied; raw holds the response */
};

/* Payload bytes an FPDU always carries copied into its tx slot (one
 * iovec, one CRC pass) instead of pointing at the caller's memory, when
 * the connection has no markers. Chosen small: the slot ring is per QP. */
#define IW_RDMAP_TX_INLINE_MAX 64

/* One FPDU handed to the transport and not yet acknowledged. */
struct iw_rdmap_tx_slot {
	/* ULPDU_LENGTH room, then the DDP header, then for a small FPDU its
	 * payload, pad and CRC (iw_mpa_tx_build_frame_inl). */
	uint8_t head[IW_MPA_LEN_FIELD + IW_DDP_TX_MAX_HDR + IW_RDMAP_TX_INLINE_MAX + IW_MPA_PAD_MAX +
		     IW_MPA_CRC_LEN];
	struct iw_mpa_tx_frame fpdu; /* marker room from mem.tx_markers */
	uint32_t wire_len;
	uint8_t done_kind; /* what finishing this FPDU completes */
	uint16_t done_idx;
};

struct iw_rdmap_conn_mem {
	struct iw_rdmap_sq_entry *sq;
	uint32_t sq_depth;
	struct iw_rdmap_ird_entry *ird;
	uint32_t n_ird;
	struct iw_rdmap_tx_slot *tx;
	uint32_t n_tx; /* FPDUs in flight at most (>= 1) */
	struct iovec *sgl_pool; /* sq_depth * max_sge */
	uint32_t max_sge;       /* 1..IW_RDMAP_MAX_SGE; posts with more SGEs fail */
	/* With cfg.markers_tx: n_tx * IW_MPA_TX_MAX_MARKERS entries (marker
	 * scratch of the FPDUs in flight); unused (may be NULL) without. */
	uint8_t (*tx_markers)[IW_MPA_MARKER_LEN];
	/* Verified placement (with CRC): rx_stage_len (>= the largest ULPDU
	 * accepted) bytes where received payload waits for its CRC check
	 * before it is copied to its destination (mpa_rx.h). NULL: off. */
	uint8_t *rx_stage;
	size_t rx_stage_len;
	/* The storage above is known to be zero (e.g. fresh anonymous pages):
	 * init leaves it untouched, so pages no WR or FPDU ever uses are never
	 * made resident. False: init zeroes it. */
	bool zeroed;
};

/* The message being cut into FPDUs. */
struct iw_rdmap_tx_cur {
	bool active;
	uint8_t kind; /* SQ, read response, terminate */
	uint16_t idx;
	struct iw_ddp_tx_msg ddp;
	struct iovec one; /* single-buffer payload (read response, terminate) */
	uint8_t ext[IW_RDMAP_MAX_BODY];
	bool more; /* SQ: the WR has another message after this one */
};

/* Receive-side state for the segment being processed. */
struct iw_rdmap_rx_cur {
	struct iw_ddp_segment seg;
	uint8_t ulpdu_head[IW_MPA_RX_MAX_HDR + IW_RDMAP_MAX_BODY]; /* for a Terminate copy */
	const uint8_t *hdr_src; /* the header in the deframer, not yet copied to ulpdu_head */
	uint16_t hdr_len;
	uint16_t ulpdu_len;
	uint8_t opcode;
	bool ird_overflow; /* a Read Request beyond IRD is being received */
	bool dest_gone;    /* the tagged destination was deregistered mid-FPDU */
};

enum iw_rdmap_conn_state {
	IW_RDMAP_ST_RTS,         /* running */
	IW_RDMAP_ST_TERMINATING, /* violation found; Terminate pending */
	IW_RDMAP_ST_CLOSED,      /* Terminate sent or received, or flushed */
};

struct iw_rdmap_conn {
	struct iw_rdmap_conn_cfg cfg;
	struct iw_rdmap_conn_ops ops;
	void *ctx;
	struct iw_rdmap_conn_mem mem;
	enum iw_rdmap_conn_state state;

	/* transmit */
	struct iw_mpa_tx mpa_tx;
	/* Free-running counters; index = counter % size. */
	uint32_t sq_head;                    /* oldest WR not yet completed */
	uint32_t sq_next;                    /* next WR to transmit */
	uint32_t sq_tail;                    /* next free slot */
	uint32_t send_msn;                   /* next MSN on QN 0 */
	uint32_t readreq_msn;                /* next MSN on QN 1 */
	uint32_t atomic_resp_msn;            /* next MSN on QN 3 */
	uint32_t atomic_req_id;              /* next Atomic Request identifier */
	uint32_t reads_out;                  /* READs sent, awaiting responses */
	uint16_t ord_ring[IW_RDMAP_MAX_IRD_ORD]; /* SQ indices of outstanding READs, oldest first */
	uint32_t ord_head;
	uint32_t ird_head;                   /* oldest inbound read held */
	uint32_t ird_next;                   /* next one to answer */
	uint32_t ird_tail;                   /* next free slot */
	bool prefer_response;                /* alternate response / SQ messages */
	struct iw_rdmap_tx_cur cur;
	uint32_t tx_head, tx_count;          /* tx slots in flight */
	uint32_t tx_pulled_unacked;          /* bytes handed out, not acked */
	size_t tx_ack_partial;               /* bytes of the oldest slot already acked */
	struct iw_rdmap_term term_out;
	uint8_t term_buf[IW_RDMAP_TERM_MAX_LEN];
	size_t term_len;
	bool term_queued;  /* Terminate waiting for the next FPDU boundary */
	bool term_started; /* Terminate built: nothing may follow it */

	/* receive */
	struct iw_mpa_rx mpa_rx;
	struct iw_ddp_rx ddp_rx;
	struct iw_rdmap_rx_cur rx;
	uint8_t term_in_buf[IW_RDMAP_TERM_MAX_LEN + 64];
	struct iovec rx_iov; /* untagged buffer handed to DDP for QN 1 / 2 */
	uint8_t ird_overflow[IW_RDMAP_MAX_BODY];
	uint8_t imm_in[IW_RDMAP_IMM_LEN];             /* Immediate Data body */
	uint8_t atomic_resp_in[IW_RDMAP_ATOMIC_RESP_LEN]; /* Atomic Response body */
	uint32_t write_bytes;      /* inbound RDMA Write message in progress */
	uint32_t last_write_len;   /* the last whole one (Write with Immediate's length) */
	struct iw_rdmap_term term_in;
	struct iw_term_cause error;

	/* statistics */
	uint64_t fpdus_tx, fpdus_rx, bytes_placed;
};

/* Bytes of caller memory init needs for these sizes (for the owner's allocation). */
size_t iw_rdmap_conn_mem_size(uint32_t sq_depth, uint32_t max_sge, uint32_t n_ird, uint32_t n_tx, bool markers_tx);

/* Initialise with caller storage (zeroed by init unless mem->zeroed; per-slot
 * pointers into the pools are set when a slot is used, not here). Returns 0
 * or -EINVAL. */
int iw_rdmap_conn_init(struct iw_rdmap_conn *c, const struct iw_rdmap_conn_cfg *cfg,
		       const struct iw_rdmap_conn_ops *ops, void *ctx,
		       const struct iw_rdmap_conn_mem *mem);

/* Post a work request (copied). 0, or -ENOSPC (send queue full), -EINVAL
 * (bad SGE count or opcode; an atomic needs one 8-byte SGE and ORD > 0),
 * -EOPNOTSUPP (RFC 7306 WR without cfg.rfc7306), -EPIPE (stream no longer
 * running). */
int iw_rdmap_post(struct iw_rdmap_conn *c, const struct iw_rdmap_wr *wr);

/* Gather list of whole FPDUs ready to send: at most iov_cap iovecs and
 * about max_bytes bytes (at least one FPDU if any is ready). Returns the
 * number of iovecs (0: nothing to send now), or -ENOBUFS when iov_cap
 * cannot hold even one FPDU (with markers, up to ~300 iovecs). The memory stays valid until
 * acknowledged. Calls are cumulative: a second pull continues after the
 * first. */
int iw_rdmap_tx_pull(struct iw_rdmap_conn *c, struct iovec *iov, int iov_cap, size_t max_bytes,
		     size_t *bytes);

/* The transport wrote n more bytes of what was pulled (in order). */
void iw_rdmap_tx_ack(struct iw_rdmap_conn *c, size_t n);

/* A queued response or WR may start now (its fence, ORD and the response
 * order allow it). */
bool iw_rdmap_tx_ready(const struct iw_rdmap_conn *c);

/* True when something could be pulled now. Inline: transports ask after
 * every write and every read, and the answer is usually in the counters. */
static inline bool iw_rdmap_tx_pending(const struct iw_rdmap_conn *c)
{
	if (c->tx_count >= c->mem.n_tx)
		return false;
	if (c->term_queued)
		return true;
	if (c->state != IW_RDMAP_ST_RTS)
		return false;
	if (c->cur.active)
		return true;
	if (c->ird_next == c->ird_tail && c->sq_next == c->sq_tail)
		return false; /* nothing queued at all: the common answer after a send */
	return iw_rdmap_tx_ready(c);
}

/* Copy-mode receive. Returns bytes consumed (< len only once the stream
 * has stopped). */
size_t iw_rdmap_rx_feed(struct iw_rdmap_conn *c, const void *data, size_t len);

/* Zero-copy receive: where the next bytes go (0 when the stream stopped). */
int iw_rdmap_rx_prepare(struct iw_rdmap_conn *c, struct iovec *iov, int cap);
void iw_rdmap_rx_commit(struct iw_rdmap_conn *c, size_t n);

/* The region [addr, addr + len) of STag stag is about to disappear (it
 * is being deregistered or re-registered). If the segment being received
 * is placing into it through that STag, the rest of that payload is
 * dropped and, when the FPDU ends, the stream fails with (1,1,0x00)
 * invalid STag: the STag stopped existing under the peer's WRITE or Read
 * Response. A placement through another STag that covers the same memory
 * goes on: that region is still registered (libfabric registers one
 * buffer again for each READ and deregisters the older registration while
 * the newer one receives). */
void iw_rdmap_rx_memory_gone(struct iw_rdmap_conn *c, uint32_t stag, const void *addr, size_t len);

/* Whether an inbound RDMA READ held by the engine (waiting to be answered,
 * or with Read Response bytes not yet all acknowledged by the transport)
 * reads from memory overlapping [addr, addr + len). While it does, that
 * memory must stay valid: the engine reads it when it builds and the
 * transport when it writes the response FPDUs. */
bool iw_rdmap_tx_reads_from(const struct iw_rdmap_conn *c, const void *addr, size_t len);

/* Report a violation detected outside the engine (e.g. the transport lost
 * the stream): queue the Terminate and stop. */
void iw_rdmap_fail(struct iw_rdmap_conn *c, struct iw_term_cause cause);

/* Stop and report SQ_FLUSH for every WR not yet completed, in order. */
void iw_rdmap_flush(struct iw_rdmap_conn *c);

/* Build the RFC 6581 Ready-to-Receive FPDU (a zero-length tagged RDMA
 * WRITE) in the connection's MPA transmit stream, so markers and the
 * peer's deframer stay in step; it is no work request and no engine
 * statistic counts it. The caller owns fr, markers
 * (IW_RDMAP_RTR_MARKERS entries) and hdr (IW_DDP_UNTAGGED_HDR_LEN bytes,
 * the room iw_ddp_hdr_encode asks)
 * until the FPDU is written, and writes it before anything the engine
 * hands out. Returns the iovecs filled, or a negative errno. */
#define IW_RDMAP_RTR_MARKERS 2 /* the FPDU crosses at most one marker position */
int iw_rdmap_build_rtr(struct iw_rdmap_conn *c, struct iw_mpa_tx_frame *fr,
		       uint8_t (*markers)[IW_MPA_MARKER_LEN], uint8_t *hdr, struct iovec *iov, int iov_cap);

/* ------------------------------------------------------------------ */
/* What the owner may ask (one-liners inline here: they sit on the post and
 * receive paths; the rest in rdmap_query.c): the owner reads no field of
 * struct iw_rdmap_conn, so the engine may change its bookkeeping freely. */

/* The stream runs: no violation found, no Terminate received, not flushed. */
static inline bool iw_rdmap_running(const struct iw_rdmap_conn *c)
{
	return c->state == IW_RDMAP_ST_RTS;
}

/* The free-running send-queue index the next posted WR gets (the owner
 * uses it as the WR's cookie), and how many posted WRs have not yet
 * completed (they hold the indices just below it). */
static inline uint32_t iw_rdmap_sq_next_index(const struct iw_rdmap_conn *c)
{
	return c->sq_tail;
}
static inline uint32_t iw_rdmap_sq_outstanding(const struct iw_rdmap_conn *c)
{
	return c->sq_tail - c->sq_head;
}

/* Nothing left to send: every posted WR completed, every FPDU handed out
 * acknowledged, nothing waiting to be pulled. */
bool iw_rdmap_tx_drained(const struct iw_rdmap_conn *c);

/* The READs this end may have outstanding (the negotiated ORD). */
static inline uint16_t iw_rdmap_ord(const struct iw_rdmap_conn *c)
{
	return c->cfg.ord;
}

/* Cookie of the oldest READ or atomic waiting for its response; false if none. */
bool iw_rdmap_oldest_read(const struct iw_rdmap_conn *c, uint64_t *cookie);

/* Cookie of the oldest WR already (partly) transmitted and not yet
 * completed whose opcode is in opmask (IW_RDMAP_WR_BIT(op) bits); false
 * if none. */
#define IW_RDMAP_WR_BIT(op) (1u << (op))
#define IW_RDMAP_WR_ANY 0x1FFu
#define IW_RDMAP_WR_ATOMICS                                                                                   \
	(IW_RDMAP_WR_BIT(IW_RDMAP_WR_ATOMIC_FETCH_ADD) | IW_RDMAP_WR_BIT(IW_RDMAP_WR_ATOMIC_CMP_SWAP))
#define IW_RDMAP_WR_SENDS                                                                                     \
	(IW_RDMAP_WR_BIT(IW_RDMAP_WR_SEND) | IW_RDMAP_WR_BIT(IW_RDMAP_WR_SEND_SE) |                           \
	 IW_RDMAP_WR_BIT(IW_RDMAP_WR_SEND_INV) | IW_RDMAP_WR_BIT(IW_RDMAP_WR_SEND_SE_INV))
bool iw_rdmap_oldest_started(const struct iw_rdmap_conn *c, unsigned opmask, uint64_t *cookie);

/* RDMAP opcode of the inbound message whose segment header came last
 * (what a violation found on receive is about). */
static inline uint8_t iw_rdmap_rx_opcode(const struct iw_rdmap_conn *c)
{
	return c->rx.opcode;
}

/* The inbound stream stopped inside an FPDU: the peer's end of stream
 * here lost data. */
static inline bool iw_rdmap_rx_mid_fpdu(const struct iw_rdmap_conn *c)
{
	return !iw_mpa_rx_at_boundary(&c->mpa_rx); /* inline: the kernel-TCP transport asks per read */
}

/* What the transports ask (they pick a receive mode and batch writes by
 * these): the configuration the connection was made with; FPDUs handed
 * out and not yet acknowledged; the ULPDU length of the inbound FPDU
 * whose header came last (0 before the first). */
static inline const struct iw_rdmap_conn_cfg *iw_rdmap_config(const struct iw_rdmap_conn *c)
{
	return &c->cfg;
}
static inline uint32_t iw_rdmap_tx_in_flight(const struct iw_rdmap_conn *c)
{
	return c->tx_count;
}
static inline uint16_t iw_rdmap_rx_last_ulpdu_len(const struct iw_rdmap_conn *c)
{
	return c->rx.ulpdu_len;
}
/* Resolve a tagged destination through the owner's STag callback, as the
 * engine does (for placement ahead of the engine, e.g. out of order). */
enum iw_stag_status iw_rdmap_stag(const struct iw_rdmap_conn *c, uint32_t stag, uint64_t to, size_t len,
				  unsigned access, uint8_t **addr);

struct iw_rdmap_stats {
	uint64_t fpdus_tx, fpdus_rx, bytes_placed;
};
struct iw_rdmap_stats iw_rdmap_get_stats(const struct iw_rdmap_conn *c);

#endif
