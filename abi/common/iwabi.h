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
 * Progress model: every data-path verb drives the engine itself
 * (ibv_poll_cq progresses when the CQ looked empty; ibv_post_send kicks
 * the connection inline), blocking calls (ibv_get_cq_event,
 * rdma_get_cm_event, synchronous rdma_cm calls) progress while they wait,
 * and a helper thread progresses only while nobody else does: no verb
 * within the last IWABI_SPIN_GRACE_US and no thread waiting in a blocking
 * call. A program spinning in ibv_poll_cq therefore pays no wake-ups, and
 * one that sleeps in its own code (sem_wait, poll() on our fds) still
 * sees its connections advance. */
#ifndef IWABI_H
#define IWABI_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#define IWABI_DEV_NAME "iwarp0"
#define IWABI_SPIN_GRACE_US 20

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
/* A verb ran: the helper thread keeps out for a while. */
void iwabi_engine_touch(void);
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
	void (*engine_touch)(void);
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
#define IWABI_BRIDGE_VERSION 1

/* The program's choice for a channel fd (fcntl O_NONBLOCK). */
static inline bool iwabi_fd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}
const struct iwabi_bridge *__iwarp_abi_bridge(void);

#endif
