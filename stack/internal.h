/* Internal object layouts and the interfaces between the stack's parts:
 *   ctx.c        context, lock, epoll watches, timers, progress, thread
 *   pd_mr.c      protection domains, memory regions, the STag table
 *   cq.c         completion queues and channels
 *   srq.c        shared receive queues
 *   qp.c         queue pairs: verbs WRs <-> the RDMAP engine, completions
 *   qp_state.c   the QP state machine (legal edges, debug lines)
 *   qp_modify.c  application-driven QP state changes (modify to ERROR)
 *   transport/   what a transport implements (transport.h), the FPDU-stream
 *                core they share (stream.c, tp_guard.c) and the three
 *                transports: tcp/ (kernel sockets), raw/ (our TCP, net/,
 *                over AF_PACKET), pipe/ (in memory, for tests)
 *   qp_mem.c     page-backed storage of a QP's per-WR arrays
 *   cm.c         connection manager: listen/connect, MPA handshake
 *   cm_event.c   CM channels and their event queues (cm_internal.h:
 *                what cm.c and cm_event.c share)
 *   cm_admit.c   admission of passive connections: eviction, deadlines,
 *                per-address cap, counters
 *   errstr.c     error strings
 *   trace.c      pcap tracing of live connections
 * Locking: one mutex per context guards every object of that context.
 * Public entry points take it; callbacks from the progress loop run with
 * it held. Internal functions below assume it is held. */
#ifndef IW_STACK_INTERNAL_H
#define IW_STACK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#include "../rdmap/rdmap_conn.h"

/* ------------------------------------------------------------------ */
/* Context                                                             */

/* An fd the progress loop watches; embed it in the owning object. */
struct iw_watch {
	int fd;
	uint32_t events; /* EPOLLIN / EPOLLOUT ... currently registered */
	void (*cb)(struct iw_watch *w, uint32_t revents);
};

/* A one-shot timer; embed it in the owning object. */
struct iw_timer {
	uint64_t deadline_ms; /* CLOCK_MONOTONIC milliseconds */
	bool armed;
	void (*cb)(struct iw_timer *t);
	struct iw_timer *next;
};

/* A source the progress loop can check in memory, without a syscall
 * (e.g. an mmap'ed receive ring). Before epoll_wait, iw_progress asks
 * ready(); when true it calls run() and skips epoll_wait for that turn.
 * A call with timeout 0 (a spinning caller) skips it too. At most
 * IW_PEEK_SKIP_MAX turns in a row skip it, so other fds are still seen.
 * A call that would block first spins on ready() for up to spin_us
 * (0: no spin), dropping the lock between checks. Embed in the owner. */
struct iw_peek {
	bool (*ready)(struct iw_peek *p); /* called with the lock held */
	void (*run)(struct iw_peek *p);
	uint32_t spin_us;
	struct iw_peek *next;
};
#define IW_PEEK_SKIP_MAX 16

struct iw_trace;
struct iw_rawdev;

struct iw_context {
	pthread_mutex_t lock;
	int epfd;
	int wake_fd; /* eventfd: wakes iw_progress for deferred work */
	bool thread_on;
	bool thread_stop;
	pthread_t thread;
	uint32_t max_qp, max_mr;
	uint32_t busy_poll_us; /* iw_context_attr.busy_poll_us (fixed at create) */
	uint32_t n_pd, n_cq, n_chan, n_cm_chan, n_qp, n_mr;
	/* STag table: index = stag >> 8; slot 0 unused. */
	struct iw_mr **mr_table;
	uint32_t mr_cap;
	uint32_t mr_free; /* head of the free-index list (0 = none), linked through mr_next_free */
	uint32_t *mr_next_free;
	struct iw_timer *timers; /* sorted by deadline */
	struct iw_trace *trace;  /* NULL: not tracing */
	/* QPs with deferred work (completions to flush into CQs, kicks). */
	struct iw_qp *deferred;
	struct iw_qp *qps; /* every QP of the context (qp->ctx_next) */
	struct iw_cm_linger *lingers; /* rejected sockets waiting to close (transport/tcp/tcp_conn.c) */

	/* --- verbs additions --- */
	uint32_t n_srq;
	uint32_t pd_next_handle;
	uint8_t *mr_key;        /* last key handed out per STag index */
	bool wake_pending;      /* wake_fd written, not yet drained */
	int timer_fd;           /* timerfd armed at the earliest deadline */
	struct iw_watch wake_watch, timer_watch;
	/* Watches deleted while a progress call waits or dispatches: their
	 * stale epoll events are skipped. */
	unsigned n_waiters;
	struct iw_watch **dead;
	uint32_t n_dead, cap_dead;
	/* Kernel TCP transports read small FPDUs through this buffer. One per
	 * context, not per connection: reads run under the lock and feed
	 * everything they read before returning. Allocated with the first
	 * transport. */
	uint8_t *tcp_rx_stage;
	/* Completions queued outside iw_progress (a post sent and completed
	 * inline) must not leave a caller asleep in iw_progress or epoll. */
	uint64_t cq_pushes;  /* completions queued into any CQ, ever */
	unsigned n_blocked;  /* threads inside epoll_wait with the lock dropped */
	bool no_wait_once;   /* the next progress call returns without waiting */
	/* IW_TRANSPORT_RAW: the raw device every connection uses (stack/transport/raw). */
	struct iw_rawdev *raw;
	/* Where the CM's connections come from (kernel sockets, the raw
	 * device, or a test's pipe network). */
	struct iw_conn_factory *conn_factory;
	struct iw_peek *peeks;  /* in-memory sources checked before epoll_wait */
	uint32_t peek_skips;    /* epoll_wait calls skipped in a row */
};

/* CLOCK_MONOTONIC: the one clock of the stack (timers, spins, our TCP). */
uint64_t iw_now_ns(void);
uint64_t iw_now_ms(void);
void iw_ctx_lock(struct iw_context *ctx);
void iw_ctx_unlock(struct iw_context *ctx);
int iw_ctx_watch_add(struct iw_context *ctx, struct iw_watch *w, uint32_t events);
int iw_ctx_watch_mod(struct iw_context *ctx, struct iw_watch *w, uint32_t events);
void iw_ctx_watch_del(struct iw_context *ctx, struct iw_watch *w);
void iw_ctx_timer_arm(struct iw_context *ctx, struct iw_timer *t, uint64_t delay_ms);
void iw_ctx_timer_cancel(struct iw_context *ctx, struct iw_timer *t);
void iw_ctx_peek_add(struct iw_context *ctx, struct iw_peek *p);
void iw_ctx_peek_del(struct iw_context *ctx, struct iw_peek *p);
/* Make the next iw_progress() run soon (e.g. a QP has work to kick). */
void iw_ctx_wake(struct iw_context *ctx);
/* Completions were queued outside iw_progress: a thread blocked in it is
 * woken, else the next call does not wait. */
void iw_ctx_completed_outside(struct iw_context *ctx);

/* Limits (verbs.h documents the defaults). */
#define IW_MAX_QP_DEFAULT 4096
#define IW_MAX_MR_DEFAULT 65536
#define IW_MAX_MR_LIMIT 0xFFFFFFu /* 24-bit STag index; index 0 is never used */
#define IW_MAX_WR 16384           /* send / receive / SRQ depth */
#define IW_MAX_CQE (1u << 20)
#define IW_MAX_SEND_SGE 16
#define IW_MAX_RECV_SGE 32
#define IW_MAX_INLINE 4096
#define IW_QP_TX_SLOTS 64     /* FPDUs in flight per connection */
#define IW_BUSY_POLL_MAX_US 1000000u /* iw_context_attr.busy_poll_us bound */
#define IW_QP_RX_STAGE 65536  /* verified placement's staging buffer (>= any ULPDU) */
/* The Terminate bound: from our Terminate being queued (a local protocol
 * error) to DISCONNECTED and the flush of every WR, at most this long,
 * whatever the socket buffers hold and whether or not the peer reads or
 * closes: if the Terminate cannot be written, or was written but the peer
 * does not close in time, the connection is reset at this deadline.
 * Also bounds a disconnect's drain. docs/limits.md, "Timeouts". */
#define IW_QP_LINGER_MS 3000
#define IW_QP_DRAIN_POLL_MS 20 /* re-check a draining disconnect this often */

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions                               */

struct iw_pd {
	struct iw_context *ctx;
	uint32_t handle; /* unique per context, never reused while alive */
	uint32_t n_users; /* MRs, QPs, SRQs */
};

struct iw_mr {
	struct iw_pd *pd;
	uint32_t stag; /* index << 8 | key */
	uint8_t *addr;
	size_t length;
	unsigned access;
	bool valid;      /* false after an invalidation */
	uint32_t in_use; /* posted WRs referencing it */
};

/* Look an STag up for placement or local use. Checks the key, validity,
 * the PD, bounds (64-bit overflow safe) and the access rights (each
 * IW_RDMAP_ACC_* bit maps to the IW_ACCESS_* right; LOCAL_WRITE for local
 * sinks). For len == 0 only existence, key and PD are checked. */
static inline enum iw_stag_status iw_mr_lookup(struct iw_context *ctx, struct iw_pd *pd, uint32_t stag,
						uint64_t to, size_t len, unsigned rdmap_access, struct iw_mr **mrp,
						uint8_t **addr)
{
	/* Inline: it runs for every SGE of every post and every tagged
	 * placement; at each call site the constant arguments (access, which
	 * outputs are wanted) fold away. */
	uint32_t idx = stag >> 8;
	struct iw_mr *mr = idx && idx < ctx->mr_cap ? ctx->mr_table[idx] : NULL;

	if (mr && mr->stag != stag)
		mr = NULL;
	if (mrp)
		*mrp = NULL;
	if (addr)
		*addr = NULL;
	if (!mr || !mr->valid)
		return IW_STAG_INVALID;
	if (mr->pd != pd)
		return IW_STAG_NOT_ASSOC;
	uint64_t base = (uint64_t)(uintptr_t)mr->addr;
	if (len == 0) {
		if (mrp)
			*mrp = mr;
		if (addr && to >= base && to - base <= mr->length)
			*addr = mr->addr + (to - base);
		return IW_STAG_OK;
	}
	unsigned need = ((rdmap_access & IW_RDMAP_ACC_LOCAL_WRITE) ? IW_ACCESS_LOCAL_WRITE : 0u) |
			((rdmap_access & IW_RDMAP_ACC_REMOTE_WRITE) ? IW_ACCESS_REMOTE_WRITE : 0u) |
			((rdmap_access & IW_RDMAP_ACC_REMOTE_READ) ? IW_ACCESS_REMOTE_READ : 0u) |
			((rdmap_access & IW_RDMAP_ACC_REMOTE_ATOMIC) ? IW_ACCESS_REMOTE_ATOMIC : 0u);
	if ((mr->access & need) != need)
		return IW_STAG_ACCESS;
	if (to < base)
		return IW_STAG_BOUNDS;
	uint64_t off = to - base;
	if (off > mr->length || len > mr->length - off)
		return IW_STAG_BOUNDS;
	if (mrp)
		*mrp = mr;
	if (addr)
		*addr = mr->addr + off;
	return IW_STAG_OK;
}
/* A region (its STag and memory) is going away: no QP may go on placing
 * through that STag. */
void iw_qp_all_memory_gone(struct iw_context *ctx, uint32_t stag, const void *addr, size_t len);
/* Invalidate for a peer's Send with Invalidate: 0, or -1 if the STag is
 * unknown, of another PD, or already invalid. */
int iw_mr_invalidate(struct iw_context *ctx, struct iw_pd *pd, uint32_t stag);
/* Convert IW_RDMAP_ACC_* bits to the IW_ACCESS_* rights they need. */
unsigned iw_mr_rights_for(unsigned rdmap_access);

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */

struct iw_comp_channel {
	struct iw_context *ctx;
	int fd; /* eventfd, readable when a CQ fired */
	uint32_t n_cq;
	struct iw_cq *fired_head, *fired_tail; /* CQs that fired, FIFO */
};

struct iw_cq {
	struct iw_context *ctx;
	struct iw_comp_channel *ch;
	struct iw_wc *ring;
	uint32_t cap, head, count;
	uint32_t n_qp;
	bool armed, solicited_only, fired_queued;
	struct iw_cq *fired_next;
	bool overflow; /* a completion was lost: reported as IW_WC_FATAL_ERR */
	/* --- verbs additions --- */
	/* The newest ring entry is the IW_WC_FATAL_ERR marker standing for
	 * completions lost in a row (its byte_len counts them). */
	bool tail_fatal;
	uint64_t lost; /* completions lost over the CQ's life */
};

/* Add one completion; fires the channel when armed. Returns -ENOSPC on
 * overflow (the CQ is then marked overflowed). Overflow: the ring has one
 * spare slot; the first completion that does not fit becomes an
 * IW_WC_FATAL_ERR entry (its wr_id, opcode and qp, byte_len = how many
 * were lost in a row) and later ones only increment that count, so the
 * application learns about every loss at the position it happened. */
int iw_cq_push(struct iw_cq *cq, const struct iw_wc *wc);

/* ------------------------------------------------------------------ */
/* Receive queues (the QP's own, or an SRQ)                            */

/* An entry's SGEs live in pools of its queue, max_sge per entry: sized by
 * the queue's own limit, not the library's, since idle QPs are many. The
 * pointers are set when the entry is posted (nothing touches a slot
 * before its first use). */
struct iw_rq_entry {
	uint64_t wr_id;
	int nsge;
	struct iovec *sgl;
	struct iw_mr **mr; /* referenced regions (in_use held) */
};

struct iw_rq {
	struct iw_rq_entry *ring;
	struct iovec *sgl_pool;
	struct iw_mr **mr_pool;
	uint32_t cap, head, count, max_sge;
	bool ext_mem; /* storage owned by the caller of iw_rq_init_at */
};

struct iw_srq {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_rq rq;
	uint32_t n_qp;
};

/* Receive queue helpers (srq.c), shared by QPs and SRQs. */
int iw_rq_init(struct iw_rq *rq, uint32_t cap, uint32_t max_sge);
/* Same over caller storage (cap entries, cap * max_sge SGEs and region
 * pointers), which iw_rq_fini leaves alone. */
void iw_rq_init_at(struct iw_rq *rq, uint32_t cap, uint32_t max_sge, struct iw_rq_entry *ring,
		   struct iovec *sgl_pool, struct iw_mr **mr_pool);
/* Drop every entry (releasing its regions) and free the ring. */
void iw_rq_fini(struct iw_rq *rq);
/* A stand-alone entry with room for max_sge SGEs (a QP's slot for the
 * SRQ entry its message in progress took). */
int iw_rq_slot_init(struct iw_rq_entry *e, uint32_t max_sge);
void iw_rq_slot_fini(struct iw_rq_entry *e);
/* Move src's contents (and its region references) into dst, which has
 * room for src->nsge SGEs; src is left empty. */
void iw_rq_entry_move(struct iw_rq_entry *dst, struct iw_rq_entry *src);
/* Validate and append a chain of receive WRs against pd (all-or-prefix:
 * stops at the first bad WR, *bad_wr points at it). */
int iw_rq_post(struct iw_context *ctx, struct iw_pd *pd, struct iw_rq *rq, struct iw_recv_wr *wr,
	       struct iw_recv_wr **bad_wr);
/* Inline: each runs once per received message. */
static inline struct iw_rq_entry *iw_rq_head(struct iw_rq *rq)
{
	return rq->count ? &rq->ring[rq->head] : NULL;
}

static inline void iw_rq_pop(struct iw_rq *rq)
{
	if (!rq->count)
		return;
	rq->head = rq->head + 1 == rq->cap ? 0 : rq->head + 1;
	rq->count--;
}

/* Release the regions an entry holds. */
static inline void iw_rq_entry_release(struct iw_rq_entry *e)
{
	for (int i = 0; i < e->nsge; i++) {
		if (e->mr[i])
			e->mr[i]->in_use--;
		e->mr[i] = NULL;
	}
	e->nsge = 0;
}

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */

struct iw_transport;

/* Per send-queue slot bookkeeping next to the engine's WR copy. Slot i's
 * referenced regions (in_use held) are qp->sq_mr_pool[i * max_send_sge ..]
 * and its inline room qp->inline_mem[i * max_inline_data ..]. */
struct iw_sq_meta {
	uint64_t wr_id;
	enum iw_wc_opcode opcode;
	bool signaled;
	int nmr;
};

/* What the connection manager negotiated, handed to the QP at connect. */
struct iw_qp_conn_params {
	bool crc;
	bool markers_tx, markers_rx;
	uint16_t ird, ord;
	bool rfc7306;          /* the peer ACKed RFC 7306 (docs/rfc7306.md) */
	uint32_t mulpdu;       /* largest ULPDU we send */
	uint16_t max_ulpdu_rx; /* largest we accept (0: 65535) */
};

/* A QP's state. Only iw_qp_transition (qp_state.c) changes it, along the
 * edges its table allows; the public enum iw_qp_state is a projection
 * (iw_qp_public_state). */
enum iw_qp_st {
	IW_QP_ST_IDLE,    /* created, no engine (the CM may be connecting it) */
	IW_QP_ST_RTS,     /* the engine runs */
	IW_QP_ST_CLOSING, /* disconnect asked: the SQ drains, then a graceful close */
	IW_QP_ST_ERROR,   /* Terminate sent or received, stream or completion lost, or asked for */
	IW_QP_ST_CLOSED,  /* graceful close by either side */
	IW_QP_ST_COUNT
};

struct iw_qp {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *scq, *rcq;
	struct iw_srq *srq;
	struct iw_rq rq; /* unused with an SRQ */
	struct iw_qp_cap cap;
	bool sq_sig_all;
	bool verified;    /* verified placement (verbs.h) */
	uint8_t *rx_stage; /* its staging buffer, IW_QP_RX_STAGE bytes, from connect */
	void *user_context;
	enum iw_qp_st st;
	struct iw_term_cause error;

	/* The protocol engine and its storage (sized at create / connect). */
	struct iw_rdmap_conn conn;
	struct iw_rdmap_sq_entry *sq;
	struct iw_sq_meta *sq_meta; /* indexed like the engine's SQ */
	/* Local invalidates wait here in SQ order: each runs once as many
	 * engine WRs have completed as had been posted before it. */
	struct iw_local_inv {
		uint64_t wr_id;
		uint32_t stag;
		uint32_t after; /* sq_posted when it was posted */
		bool signaled;
	} *linv;
	uint32_t linv_head, linv_count;
	uint32_t sq_completed; /* engine WRs completed or flushed (free-running) */
	struct iovec *sq_sgl_pool;  /* the engine's SQ SGEs: max_send_wr * max_send_sge */
	struct iw_mr **sq_mr_pool;  /* sq_meta[i].mr: max_send_wr * max_send_sge */
	uint8_t (*tx_markers)[IW_MPA_MARKER_LEN]; /* marker scratch, with markers only */
	uint32_t sq_posted;         /* free-running: meta index = sq_posted % max_send_wr */
	struct iw_rdmap_ird_entry *ird;
	struct iw_rdmap_tx_slot *tx;
	uint32_t n_tx;
	struct iw_rq_entry *rx_cur; /* receive being filled (own RQ or SRQ) */

	struct iw_transport *transport;
	struct iw_cm_id *cm_id;
	struct iw_qp_stats stats;
	struct iw_qp *deferred_next;
	bool deferred;
	struct iw_qp *ctx_next;

	/* --- verbs additions --- */
	unsigned work;       /* IW_QPW_* pending deferred work */
	/* Facts beside st, not states: each holds in more than one state.
	 * connected: conn holds an initialised engine (from
	 *   iw_qp_connect_start on); ERROR is reached with or without one.
	 * shut, flushed: records of one-shot actions that run deferred, after
	 *   the state changed (the transport's shutdown was called; every
	 *   outstanding WR was flushed).
	 * error_local: the error was raised by us (asked for, or a lost
	 *   completion): the engine's later ERROR blames no WR.
	 * term_closing: our Terminate went out, so the close must end by
	 *   linger_deadline (the Terminate bound). A violation can arrive
	 *   while a disconnect's FIN is still draining, so this holds in
	 *   CLOSED as well as in ERROR. */
	bool connected;
	bool shut;
	bool flushed;
	bool error_local;
	bool term_closing;
	struct iw_rq_entry rx_slot; /* SRQ entry taken by the message in progress */
	uint8_t *inline_mem; /* max_send_wr * max_inline_data bytes (in qmem) */
	/* Page-backed storage of every per-WR array above and the tx slots
	 * (stack/qp_mem.h): untouched, hence not resident, until used. */
	void *qmem;
	size_t qmem_len;
	struct iw_timer linger;
	uint64_t linger_deadline; /* give up (abort, flush) at this time */
	/* Which WRs get a specific status instead of IW_WC_WR_FLUSH_ERR. */
	bool blame_sq, blame_rq;
	uint64_t blame_sq_cookie;
	enum iw_wc_status blame_sq_status, blame_rq_status;
	struct iw_term_cause flush_cause; /* carried by error completions */
};

/* Deferred QP work, run by iw_progress outside any engine callback. */
enum {
	IW_QPW_KICK = 1,      /* the engine may have bytes to send */
	IW_QPW_FAIL = 2,      /* a completion was lost: terminate the stream */
	IW_QPW_CLOSE = 4,     /* shut the transport down (graceful after our Terminate) */
	IW_QPW_ABORT = 8,     /* shut the transport down abortively */
	IW_QPW_FLUSH = 16,    /* flush every outstanding WR */
	IW_QPW_DRAIN = 32,    /* closing: check whether the SQ has drained */
};
void iw_qp_defer(struct iw_qp *qp, unsigned work);
/* Called by iw_progress for a QP taken off ctx->deferred. */
void iw_qp_run_deferred(struct iw_qp *qp);

/* Move qp to state to: 0, or -EINVAL (state unchanged) when the table has
 * no such edge. why says what caused it, for the debug line. */
int iw_qp_transition(struct iw_qp *qp, enum iw_qp_st to, const char *why);
/* Whether the table has the edge from -> to / from qp's state to to. */
bool iw_qp_edge_legal(enum iw_qp_st from, enum iw_qp_st to);
bool iw_qp_may(const struct iw_qp *qp, enum iw_qp_st to);
enum iw_qp_state iw_qp_public_state(enum iw_qp_st st);
const char *iw_qp_st_name(enum iw_qp_st st);
/* Not connected, never was: the CM may connect it. */
static inline bool iw_qp_idle(const struct iw_qp *qp)
{
	return qp->st == IW_QP_ST_IDLE;
}
/* Connected and neither in error nor closed (a draining QP still is). */
static inline bool iw_qp_live(const struct iw_qp *qp)
{
	return qp->st == IW_QP_ST_RTS || qp->st == IW_QP_ST_CLOSING;
}

/* The CM established the connection: size and start the engine. */
int iw_qp_connect_start(struct iw_qp *qp, const struct iw_qp_conn_params *p, struct iw_transport *t);
/* RFC 7306 offered/accepted in MPA: on unless IWARP_RFC7306=0. */
bool iw_rfc7306_enabled(void);
/* The transport lost the stream (peer FIN, RST, error). err 0: graceful.
 * The QP goes to ERROR/CLOSED and flushes everything outstanding. */
void iw_qp_transport_closed(struct iw_qp *qp, int err);
/* The QP is being destroyed: an id still in its handshake forgets it
 * (the connection then fails with -ECANCELED). */
void iw_cm_qp_gone(struct iw_qp *qp);
/* The CM disconnects: graceful close after pending sends, then flush. */
void iw_qp_disconnect(struct iw_qp *qp);

#include "transport/transport.h"

/* ------------------------------------------------------------------ */
/* Tracing                                                             */

/* Open the context's trace (pcap). Connection handles number flows. */
int iw_trace_open(struct iw_context *ctx, const char *path);
void iw_trace_close(struct iw_context *ctx);
/* A traced connection between two socket addresses; 0 when not tracing. */
uint32_t iw_trace_conn_open(struct iw_context *ctx, const struct sockaddr *local, const struct sockaddr *peer,
			    bool local_is_initiator);
/* Bytes that went out (tx) or came in (rx) on the connection, in order. */
void iw_trace_data(struct iw_context *ctx, uint32_t conn, bool tx, const struct iovec *iov, int iovcnt,
		   size_t len);
void iw_trace_conn_close(struct iw_context *ctx, uint32_t conn, bool reset);
/* A raw context (IW_TRANSPORT_RAW) traces the Ethernet frames it really
 * sends and receives, ARP and retransmissions included, instead of
 * synthetic sessions: segment boundaries are what that transport is
 * about. */
void iw_trace_frame(struct iw_context *ctx, const uint8_t *frame, size_t len);

#endif
