/* libiwarp verbs: RDMA objects and data-path calls, shaped like libibverbs.
 *
 * Objects: a context (one progress engine), protection domains, memory
 * regions (STag = 24-bit index | 8-bit key; the key comes from getrandom()
 * and changes on every re-registration), completion queues with optional
 * completion channels (an fd for poll/epoll), shared receive queues, and
 * reliable-connected queue pairs. Connections are made with the connection
 * manager (iwarp/cm.h).
 *
 * Errors: functions returning int give 0 or a negative errno value
 * (-EINVAL bad argument, -ENOMEM, -EBUSY object in use, -ENOSPC queue
 * full, -EPIPE QP not connected / in error, -EMSGSIZE too long, ...).
 *
 * Progress: nothing happens on the wire unless the context progresses.
 * Either call iw_progress() (e.g. when iw_context_fd() polls readable;
 * the fd can go into the application's own epoll set), or create the
 * context with IW_CTX_PROGRESS_THREAD and an internal thread does it.
 *
 * Threads: every call is thread-safe; calls on objects of one context are
 * serialized by that context's lock (the data path holds it for a few
 * hundred nanoseconds per call). Use one context per thread for
 * independent scaling. Callbacks are not used: completions arrive through
 * CQs, connection events through CM channels. */
#ifndef IWARP_VERBS_H
#define IWARP_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <iwarp/term.h>

#ifdef __cplusplus
extern "C" {
#endif

struct iw_context;
struct iw_pd;
struct iw_mr;
struct iw_cq;
struct iw_comp_channel;
struct iw_srq;
struct iw_qp;

/* ------------------------------------------------------------------ */
/* Context and progress                                                */

enum iw_context_flags {
	IW_CTX_PROGRESS_THREAD = 1, /* run an internal progress thread */
};

enum iw_transport_kind {
	IW_TRANSPORT_KERNEL = 0,
	IW_TRANSPORT_RAW = 1,
};

struct iw_context_attr {
	unsigned flags;
	/* Write every connection's traffic to this pcap file (Ethernet/IP/TCP
	 * framing that Wireshark/tshark decode). NULL: the environment
	 * variable IWARP_TRACE, if set, names the file; else no tracing. */
	const char *trace_path;
	/* Limits; 0 takes the default shown. */
	uint32_t max_qp; /* 4096 */
	uint32_t max_mr; /* 65536 */
	/* Transport of every connection of the context. KERNEL (0): kernel
	 * TCP sockets. RAW: our own TCP/IPv4 over raw frames on raw_dev, as
	 * address raw_ip ("A.B.C.D/prefix"; one the kernel does not have on
	 * that interface); IPv4 on-link peers only; needs CAP_NET_RAW
	 * (iw_context_create fails with -EPERM without it). For tests, the
	 * environment variable IWARP_RAW_IMPAIR="drop_ppm,reorder_ppm,seed"
	 * drops/reorders frames (docs/raw.md). */
	enum iw_transport_kind transport;
	const char *raw_dev;
	const char *raw_ip;
	/* Busy polling for latency-sensitive users, off (0) by default: a
	 * call that would block (iw_progress with a timeout, the progress
	 * thread) first polls the context's sockets without sleeping for up
	 * to busy_poll_us microseconds (yielding the core between polls, so
	 * a peer thread on the same core still runs). A message arriving within that time
	 * is seen without a sleep and wake-up; the price is CPU: each wait
	 * burns up to busy_poll_us of a core, so a thread waiting on a quiet
	 * connection uses up to one full core while messages keep arriving
	 * within busy_poll_us of each other (docs/bench.md, "Busy polling").
	 * 0: the environment variable IWARP_BUSY_POLL_US, if set, gives it
	 * (so verbs programs get it without changes); at most 1000000. */
	uint32_t busy_poll_us;
};

/* attr may be NULL: every default (kernel TCP, the limits shown, tracing
 * only if IWARP_TRACE is set). */
int iw_context_create(const struct iw_context_attr *attr, struct iw_context **out);
/* Fails with -EBUSY while objects (PDs, CQs, channels, CM ids) exist. */
int iw_context_destroy(struct iw_context *ctx);

/* A pollable fd: readable when iw_progress() has work to do. */
int iw_context_fd(struct iw_context *ctx);

/* Do pending work: socket I/O, connection management, completions. Waits
 * up to timeout_ms (0: do not wait, -1: until something happens).
 * Returns the number of events handled (>= 0) or a negative errno. */
int iw_progress(struct iw_context *ctx, int timeout_ms);

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions                               */

int iw_alloc_pd(struct iw_context *ctx, struct iw_pd **out);
int iw_dealloc_pd(struct iw_pd *pd); /* -EBUSY while MRs, QPs or SRQs use it */

enum iw_access {
	IW_ACCESS_LOCAL_WRITE = 1,
	IW_ACCESS_REMOTE_WRITE = 2, /* requires LOCAL_WRITE */
	IW_ACCESS_REMOTE_READ = 4,
	IW_ACCESS_REMOTE_ATOMIC = 8, /* RFC 7306 atomics may target it; requires LOCAL_WRITE */
};

int iw_reg_mr(struct iw_pd *pd, void *addr, size_t length, unsigned access, struct iw_mr **out);
/* New address/length/access and a new key: the old STag stops matching.
 * -EBUSY in the same cases as iw_dereg_mr. */
int iw_rereg_mr(struct iw_mr *mr, void *addr, size_t length, unsigned access);
/* -EBUSY while a posted work request references the region, or while a
 * peer's RDMA READ is still being answered from it (Read Responses are
 * sent from the region's memory without a copy; destroying, disconnecting
 * or resetting that QP releases it). */
int iw_dereg_mr(struct iw_mr *mr);

/* The region's STag, used as both lkey and rkey; the region's TO space is
 * its virtual address (like siw): remote_addr = (uintptr_t)addr + offset. */
uint32_t iw_mr_stag(const struct iw_mr *mr);
void *iw_mr_addr(const struct iw_mr *mr);
size_t iw_mr_length(const struct iw_mr *mr);

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */

enum iw_wc_status {
	IW_WC_SUCCESS = 0,
	IW_WC_LOC_LEN_ERR,      /* receive buffer too small (our side) */
	IW_WC_LOC_PROT_ERR,     /* local STag / bounds / rights problem */
	IW_WC_LOC_QP_OP_ERR,    /* our side detected a protocol violation */
	IW_WC_WR_FLUSH_ERR,     /* QP went to error or was disconnected */
	IW_WC_REM_ACCESS_ERR,   /* the peer refused: protection error */
	IW_WC_REM_OP_ERR,       /* the peer refused: operation error */
	IW_WC_REM_INV_REQ_ERR,  /* the peer refused: invalid request */
	IW_WC_FATAL_ERR,        /* connection lost */
};

enum iw_wc_opcode {
	IW_WC_SEND,
	IW_WC_RDMA_WRITE,
	IW_WC_RDMA_READ,
	IW_WC_RECV,
	IW_WC_LOCAL_INV,
	/* RFC 7306 (docs/rfc7306.md) */
	IW_WC_COMP_SWAP,          /* our compare-and-swap: the original value is in its buffer */
	IW_WC_FETCH_ADD,          /* our fetch-and-add: likewise */
	IW_WC_RECV_RDMA_WITH_IMM, /* a receive consumed by the peer's Write with Immediate */
};

enum iw_wc_flags {
	IW_WC_WITH_INV = 1,   /* RECV: the sender invalidated wc.invalidated_stag */
	IW_WC_SOLICITED = 2,  /* RECV: Send with Solicited Event */
	IW_WC_WITH_IMM = 4,   /* RECV_RDMA_WITH_IMM: imm_data is valid */
};

struct iw_wc {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	uint32_t byte_len;
	unsigned flags;
	uint32_t invalidated_stag;
	/* RFC 7306 Immediate Data: its 8 bytes as a big-endian number
	 * (byte_len: the length of the RDMA Write it followed). */
	uint64_t imm_data;
	struct iw_qp *qp;
	/* For error statuses caused by a Terminate (sent or received), and
	 * for flushes after one: the RFC cause (valid == true). Otherwise no
	 * cause (valid == false): successful completions, flushes after a
	 * clean disconnect, errors without a Terminate. */
	struct iw_term_cause cause;
};

int iw_create_comp_channel(struct iw_context *ctx, struct iw_comp_channel **out);
int iw_destroy_comp_channel(struct iw_comp_channel *ch); /* -EBUSY while CQs use it */
int iw_comp_channel_fd(const struct iw_comp_channel *ch);
/* Next CQ that fired (after iw_req_notify_cq). Non-blocking: -EAGAIN if none. */
int iw_get_cq_event(struct iw_comp_channel *ch, struct iw_cq **cq);

/* A CQ of cqe entries; ch may be NULL (no notification). Overflow: a
 * completion that finds the CQ full is lost. In its place the CQ reports
 * one IW_WC_FATAL_ERR entry (wr_id and qp of the first lost completion,
 * byte_len = how many were lost since), and the QP that lost it stops: it
 * sends the Terminate RDMAP (0,0,0x00) "local catastrophic error", goes
 * to IW_QPS_ERROR (iw_qp_error() returns that cause) and flushes. Size a
 * CQ for every WR that can be outstanding on the QPs that share it. */
int iw_create_cq(struct iw_context *ctx, int cqe, struct iw_comp_channel *ch, struct iw_cq **out);
int iw_destroy_cq(struct iw_cq *cq); /* -EBUSY while QPs use it */
/* Up to n completions into wc; returns how many (>= 0). */
int iw_poll_cq(struct iw_cq *cq, int n, struct iw_wc *wc);
/* Arm: the channel fires on the next completion (solicited_only: on the
 * next solicited receive or error). */
int iw_req_notify_cq(struct iw_cq *cq, bool solicited_only);

/* ------------------------------------------------------------------ */
/* Work requests                                                       */

struct iw_sge {
	uint64_t addr;   /* virtual address inside the region */
	uint32_t length;
	uint32_t lkey;   /* the region's STag (ignored for inline data) */
};

enum iw_wr_opcode {
	IW_WR_SEND,
	IW_WR_SEND_WITH_SE,
	IW_WR_SEND_WITH_INV,
	IW_WR_SEND_WITH_SE_INV,
	IW_WR_RDMA_WRITE,
	IW_WR_RDMA_READ,
	/* Invalidate our own STag invalidate_rkey (a region of this QP's PD)
	 * in send queue order: it runs once every WR posted before it has
	 * completed, and it has taken effect when its completion (opcode
	 * IW_WC_LOCAL_INV) is reported. No data, no sg_list. An STag that is
	 * unknown, of another PD or already invalid completes with
	 * IW_WC_LOC_PROT_ERR; the QP stays usable. */
	IW_WR_LOCAL_INV,
	/* RFC 7306, only on a connection whose peer accepted it
	 * (iw_qp_rfc7306(); otherwise post fails with -EOPNOTSUPP). Atomics:
	 * one 8-byte SGE of a LOCAL_WRITE region receives the target's
	 * original value (host order); remote_addr must be 8-byte aligned in
	 * a region of the peer registered with IW_ACCESS_REMOTE_ATOMIC; they
	 * count against ORD like RDMA READs and FENCE waits for them too.
	 * There is no Send with Immediate: RFC 7306 defines none as one
	 * message (docs/rfc7306.md). */
	IW_WR_ATOMIC_CMP_AND_SWP,   /* if *remote == compare_add: *remote = swap */
	IW_WR_ATOMIC_FETCH_AND_ADD, /* *remote += compare_add */
	IW_WR_RDMA_WRITE_WITH_IMM,  /* RDMA WRITE, then Immediate Data (imm_data) consuming a receive */
};

enum iw_send_flags {
	IW_SEND_SIGNALED = 1, /* completion even when the QP is not sq_sig_all */
	IW_SEND_INLINE = 2,   /* copy the data at post time; lkeys ignored */
	IW_SEND_FENCE = 4,    /* wait for earlier RDMA READs to complete */
	IW_SEND_SOLICITED = 8, /* alias: turns SEND into SEND_WITH_SE */
};

struct iw_send_wr {
	uint64_t wr_id;
	struct iw_send_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
	enum iw_wr_opcode opcode;
	unsigned send_flags;
	uint64_t remote_addr; /* RDMA WRITE / READ */
	uint32_t rkey;
	uint32_t invalidate_rkey; /* SEND_WITH_INV, LOCAL_INV */
	uint64_t compare_add; /* ATOMIC_*: compare value, or the value to add */
	uint64_t swap;        /* ATOMIC_CMP_AND_SWP */
	uint64_t imm_data;    /* RDMA_WRITE_WITH_IMM: the 8 Immediate Data bytes, big-endian */
};

struct iw_recv_wr {
	uint64_t wr_id;
	struct iw_recv_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
};

/* ------------------------------------------------------------------ */
/* Shared receive queues                                               */

struct iw_srq_init_attr {
	uint32_t max_wr;
	uint32_t max_sge;
};

/* attr may be NULL: 128 WRs of 4 SGEs (also for fields left 0). */
int iw_create_srq(struct iw_pd *pd, const struct iw_srq_init_attr *attr, struct iw_srq **out);
int iw_destroy_srq(struct iw_srq *srq); /* -EBUSY while QPs use it */
int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr);

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */

struct iw_qp_cap {
	uint32_t max_send_wr;     /* default 128 */
	uint32_t max_recv_wr;     /* default 128 */
	uint32_t max_send_sge;    /* default 4, at most 16 */
	uint32_t max_recv_sge;    /* default 4, at most 32 */
	uint32_t max_inline_data; /* default 64, at most 4096 */
};

struct iw_qp_init_attr {
	struct iw_cq *send_cq;
	struct iw_cq *recv_cq;
	struct iw_srq *srq; /* receives come from here instead of the QP */
	struct iw_qp_cap cap;
	bool sq_sig_all;    /* every send WR completes, signaled or not */
	void *qp_context;
	/* Verified placement: no received payload byte (WRITE, READ
	 * response, SEND) reaches application memory before its FPDU's MPA
	 * CRC matched; payload is staged in a 64 KiB per-QP buffer and copied
	 * after the check (cost: docs/bench.md). Such a QP insists on CRC
	 * (its connections ask for CRC as IW_CRC_REQUIRED does, whatever the
	 * connection parameter says). Also turned on for every QP by the
	 * environment variable IWARP_VERIFIED_PLACEMENT=1 (so programs using
	 * the verbs ABI libraries get it without changes). Default: payload
	 * is placed as it streams in, and a bad CRC ends the connection with
	 * a Terminate after the bytes were written. */
	bool verified_placement;
};

enum iw_qp_state {
	IW_QPS_INIT,  /* created, not connected */
	IW_QPS_RTS,   /* connected */
	IW_QPS_ERROR, /* protocol error or connection lost; WRs flushed */
	IW_QPS_CLOSED,
};

/* attr is required (send_cq and recv_cq at least); cap fields left 0
 * take the defaults shown. */
int iw_create_qp(struct iw_pd *pd, const struct iw_qp_init_attr *attr, struct iw_qp **out);
/* Also closes the connection (abortively if still connected). Work
 * requests still outstanding are dropped without completions (their
 * regions are released): to see every completion, disconnect, wait for
 * IW_CM_EVENT_DISCONNECTED and poll the flushes first. */
int iw_destroy_qp(struct iw_qp *qp);

enum iw_qp_state iw_qp_state(const struct iw_qp *qp);
/* Whether this connection may use RFC 7306 atomics and Write with
 * Immediate: both ends are libiwarp with it enabled (MPA ASK/ACK bits,
 * docs/rfc7306.md; IWARP_RFC7306=0 turns it off). False before the
 * connection is established. */
bool iw_qp_rfc7306(const struct iw_qp *qp);
void *iw_qp_context(const struct iw_qp *qp);
/* The Terminate cause that stopped the QP, sent or received; no cause
 * (valid == false) while healthy and after a clean disconnect.
 *
 * Remote protection errors on our RDMA WRITE (and SEND) show only here.
 * iWARP completes a WRITE locally once the transport has taken it (RFC
 * 5040 sec. 5.1), so its completion is IW_WC_SUCCESS even when the peer
 * then refuses it (bad STag, bounds, rights): the peer's Terminate moves
 * the QP to IW_QPS_ERROR, later WRs are flushed with this cause, and the
 * CM reports IW_CM_EVENT_DISCONNECTED with status 0. Check iw_qp_error()
 * when DISCONNECTED arrives to tell a refusal from a clean close. (An
 * RDMA READ the peer refuses completes with IW_WC_REM_ACCESS_ERR.) */
struct iw_term_cause iw_qp_error(const struct iw_qp *qp);

/* Move the QP to IW_QPS_ERROR at the application's request (verbs'
 * modify to ERR): a connection is reset, a handshake still running fails,
 * and every outstanding send and receive WR completes with
 * IW_WC_WR_FLUSH_ERR (on the next progress). Idempotent. */
int iw_qp_to_error(struct iw_qp *qp);

/* Receive WRs may be posted before the connection is established; send
 * WRs need an established connection (-EPIPE otherwise). On the first
 * failing WR *bad_wr points at it and nothing from it onwards is posted. */
int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr, struct iw_send_wr **bad_wr);
int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr);

/* Per-QP counters (for tools and tests). */
struct iw_qp_stats {
	uint64_t fpdus_tx, fpdus_rx;
	uint64_t bytes_tx, bytes_rx;  /* wire bytes */
	uint64_t bytes_placed;        /* payload placed */
	uint64_t tx_syscalls, rx_syscalls;
};
void iw_qp_get_stats(const struct iw_qp *qp, struct iw_qp_stats *st);

const char *iw_wc_status_str(enum iw_wc_status s);

#ifdef __cplusplus
}
#endif
#endif
