/* Internal interface of the verbs ABI layer (libibverbs.so.1 and
 * librdmacm.so.1 built on libiwarp). Not installed.
 *
 * Context model: one process-wide libiwarp context (the "engine") behind
 * every ibv_context the program opens and every rdma_cm id, created on
 * first use and destroyed when the last user goes. Verbs objects of
 * different ibv_contexts therefore work together (a QP from one context
 * with a CQ of another, an id's QP from the program's own context), as
 * programs expect from one device.
 *
 * Progress model. Who moves the connections when the program is not in
 * a call of ours matters most: perftest spins in ibv_poll_cq, but
 * ib_write_lat's responder spins on memory and rping sleeps in its own
 * code. So:
 *  - a helper thread sleeps in epoll on the context's fd (edge-triggered:
 *    woken by an arrival, a timer or deferred work, never by a clock) and
 *    progresses at once; it never spins, so a 2-core machine running two
 *    spinning programs still has its cores for them;
 *  - ibv_poll_cq progresses itself when the CQ looked empty: a program
 *    spinning there is the one that drives, with no hand-off latency;
 *    still empty, it yields the CPU (sched_yield): our device is
 *    software, and on a busy machine perftest's spinning otherwise takes
 *    the CPU its peer and our helper need (ib_write_bw 64 KiB under
 *    load: 310-820 MB/s without, 720-1140 MB/s with, same run);
 *  - both go through one gate (engine.c drive()): whoever finds it taken
 *    does not queue on the context lock. A program thread simply returns
 *    (the helper is mid-pass); the helper leaves a note and the holder
 *    runs one more pass (the arrival may be newer than its epoll_wait);
 *  - a post (ibv_post_send/recv) first lets a helper pass end, spinning
 *    up to 20 us: the responder sees the data in memory before the
 *    helper's pass is over, and a futex sleep on the context lock behind
 *    it cost more than the pass itself;
 *  - blocking calls (ibv_get_cq_event, rdma_get_cm_event, synchronous
 *    rdma_cm calls) progress once and then sleep on their own fd: later
 *    arrivals are the helper's.
 * The price is one thread wake-up per arrival while nobody else drives:
 * that is the latency left between ib_write_lat and iwperf's spinning
 * ping-pong (docs/bench.md); a spinning helper would remove it but, with
 * both programs spinning already, needs a third and fourth core. The
 * earlier design (the helper kept out for 20 us after any verb, then
 * backed off up to 1 ms) cost a memory-spinning responder tens of
 * microseconds per message.
 */
#ifndef IWABI_H
#define IWABI_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#define IWABI_DEV_NAME "iwarp0"

/* The ibverbs objects: the ABI struct first, so the program's pointer is
 * ours. */
struct iwabi_context {
	struct verbs_context vctx; /* vctx.context is what programs see */
	int async_efd;
};

struct iwabi_pd {
	struct ibv_pd pd;
	struct iw_pd *iw;
};

struct iwabi_mr {
	struct ibv_mr mr;
	struct iw_mr *iw;
	unsigned iw_access;
	struct iwabi_mr *retired_next; /* dereg'ed while a WR still held it */
};

struct iwabi_comp_channel {
	struct ibv_comp_channel ch;
	struct iw_comp_channel *iw;
	struct iwabi_cq *cqs; /* CQs using the channel (map iw_cq -> ours) */
};

struct iwabi_flush {
	struct ibv_wc wc;
	struct iwabi_flush *next;
};

struct iwabi_cq {
	struct ibv_cq cq;
	struct iw_cq *iw;
	struct iwabi_cq *ch_next;
	uint32_t events_delivered; /* under cq.mutex; destroy waits for acks */
	struct iw_qp *last_iw_qp;  /* qp_num cache for completions */
	uint32_t last_qp_num;
	/* Work posted to a QP already in error completes with
	 * IBV_WC_WR_FLUSH_ERR (verbs semantics; libiwarp refuses it with
	 * -EPIPE): queued here, after libiwarp's own completions. */
	pthread_mutex_t flush_lock;
	struct iwabi_flush *flush_head, *flush_tail;
	bool has_flush;
};

struct iwabi_srq {
	struct ibv_srq srq;
	struct iw_srq *iw;
	uint32_t max_wr, max_sge, limit;
};

struct iwabi_qp {
	struct ibv_qp qp;
	struct iw_qp *iw;
	struct ibv_qp_cap cap;   /* what create gave */
	bool sq_sig_all;
	struct ibv_qp_attr attr; /* last modify (rdma_cm / program) */
	struct iwabi_qp *all_next; /* every live QP (qp_num lookup) */
};
void iwabi_mr_retry_retired(void);

/* Engine (engine.c). */
int iwabi_engine_get(struct iw_context **ctx); /* 0 or -errno; one reference */
void iwabi_engine_put(void);
struct iw_context *iwabi_engine_ctx(void);     /* NULL unless referenced */
/* One progress pass from a program's verb, unless a thread is in one
 * already; true if this call ran it. */
bool iwabi_engine_drive(void);
/* Before a post: let a progress pass of the helper end (bounded) rather
 * than sleep on the context lock behind it. */
void iwabi_engine_await_helper(void);
/* ibv_poll_cq found nothing even after progress: give the CPU to
 * whoever else is runnable (the peer, a helper) before the program spins
 * back. A no-op syscall on an idle core. */
void iwabi_engine_idle_yield(void);
/* Block until fd is readable (or timeout_ms passes; -1 forever),
 * progressing the engine meanwhile. 0: readable, -ETIMEDOUT, -errno. */
int iwabi_engine_wait(int fd, int timeout_ms);
/* Run once from blocking waits and the helper after progress: lets
 * librdmacm move CM events to its channels. */
void iwabi_engine_set_cm_pump(void (*pump)(void), int cm_fd);
const char *iwabi_engine_raw_ip(void); /* NULL: kernel transport */

static inline struct iwabi_qp *iwabi_qp(struct ibv_qp *qp)
{
	return (struct iwabi_qp *)qp;
}
struct iw_qp *iwabi_qp_of(struct ibv_qp *qp);

/* The plain attributes of an extended QP request (only the PD extension
 * is supported, by both libraries). */
static inline struct ibv_qp_init_attr iwabi_qp_attr_of_ex(const struct ibv_qp_init_attr_ex *ax)
{
	return (struct ibv_qp_init_attr){
		.qp_context = ax->qp_context,
		.send_cq = ax->send_cq,
		.recv_cq = ax->recv_cq,
		.srq = ax->srq,
		.cap = ax->cap,
		.qp_type = ax->qp_type,
		.sq_sig_all = ax->sq_sig_all,
	};
}
struct ibv_qp *iwabi_qp_by_num(uint32_t qp_num);

/* What librdmacm needs from libibverbs: the one device's context and
 * the engine, through a single private entry point so that libiwarp
 * exists once in the process (linked into libibverbs.so.1 only). */
struct iwabi_bridge {
	unsigned version;
	struct ibv_context *(*device_context)(void); /* opened on first call */
	int (*engine_get)(struct iw_context **ctx);
	void (*engine_put)(void);
	bool (*engine_drive)(void);
	int (*engine_wait)(int fd, int timeout_ms);
	void (*set_cm_pump)(void (*pump)(void), int cm_fd);
	struct iw_qp *(*qp_of)(struct ibv_qp *qp);
	/* A live QP by number (rdma_connect/accept with conn_param->qp_num
	 * for a QP the program created itself); NULL if none. */
	struct ibv_qp *(*qp_by_num)(uint32_t qp_num);
	/* libiwarp's CM, whose symbols libibverbs.so.1 does not export. */
	int (*cm_create_channel)(struct iw_context *ctx, struct iw_cm_channel **out);
	int (*cm_destroy_channel)(struct iw_cm_channel *ch);
	int (*cm_channel_fd)(const struct iw_cm_channel *ch);
	int (*cm_get_event)(struct iw_cm_channel *ch, struct iw_cm_event **ev);
	void (*cm_ack_event)(struct iw_cm_event *ev);
	int (*cm_create_id)(struct iw_cm_channel *ch, void *context, struct iw_cm_id **out);
	int (*cm_destroy_id)(struct iw_cm_id *id);
	void *(*cm_id_context)(const struct iw_cm_id *id);
	void (*cm_id_set_context)(struct iw_cm_id *id, void *context);
	int (*cm_listen_param)(struct iw_cm_id *id, const struct sockaddr *addr, const struct iw_listen_param *p);
	int (*cm_local_addr)(const struct iw_cm_id *id, struct sockaddr_storage *out);
	int (*cm_peer_addr)(const struct iw_cm_id *id, struct sockaddr_storage *out);
	int (*cm_connect)(struct iw_cm_id *id, struct iw_qp *qp, const struct sockaddr *dst,
			  const struct iw_conn_param *param);
	int (*cm_accept)(struct iw_cm_id *id, struct iw_qp *qp, const struct iw_conn_param *param);
	int (*cm_reject)(struct iw_cm_id *id, const void *private_data, uint16_t len);
	int (*cm_disconnect)(struct iw_cm_id *id);
	/* The raw transport's own address (NULL: kernel transport). */
	const char *(*raw_ip)(void);
};
#define IWABI_BRIDGE_VERSION 2

/* The program's choice for a channel fd (fcntl O_NONBLOCK). */
static inline bool iwabi_fd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}
const struct iwabi_bridge *__iwarp_abi_bridge(void);

/* IWARP_STATS (stats.c): counters of QPs created, destroyed, live. */
void iwabi_stats_qp_made(void);
void iwabi_stats_qp_gone(const struct iw_qp_stats *s);
void iwabi_stats_add(struct iw_qp_stats *to, const struct iw_qp_stats *s);
/* Adds every live QP's counters to *t; returns how many had traffic. */
uint64_t iwabi_qp_stats_sum_live(struct iw_qp_stats *t);
int iwabi_stats_format(char *buf, size_t len, long pid, bool raw, uint64_t qps, uint64_t active,
		       const struct iw_qp_stats *t);
int iwabi_stats_write(const char *path);

#endif
