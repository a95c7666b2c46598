/* Queue pairs and the data path: ibv work requests and completions
 * translated to libiwarp's. */
#include "iwabi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define POST_BATCH 32 /* send WRs translated per libiwarp call */
#define POLL_BATCH 16

static pthread_mutex_t qps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iwabi_qp *all_qps;
static uint32_t next_qp_num = 1;

/* ------------------------------------------------------------------ */
/* Create / destroy                                                    */

static uint32_t cap_or(uint32_t v, uint32_t dflt)
{
	return v ? v : dflt;
}

static struct ibv_qp *create(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct iwabi_qp *q;
	int rc;

	if (!pd || !a || !a->send_cq || !a->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	if (a->qp_type != IBV_QPT_RC) {
		errno = EOPNOTSUPP; /* iWARP is reliable-connected only */
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	struct iw_qp_init_attr ia = {
		.send_cq = ((struct iwabi_cq *)a->send_cq)->iw,
		.recv_cq = ((struct iwabi_cq *)a->recv_cq)->iw,
		.srq = a->srq ? ((struct iwabi_srq *)a->srq)->iw : NULL,
		.cap = {
			.max_send_wr = a->cap.max_send_wr,
			.max_recv_wr = a->srq ? 0 : a->cap.max_recv_wr,
			.max_send_sge = a->cap.max_send_sge,
			.max_recv_sge = a->cap.max_recv_sge,
			.max_inline_data = a->cap.max_inline_data,
		},
		.sq_sig_all = a->sq_sig_all != 0,
		.qp_context = q,
	};
	rc = iw_create_qp(((struct iwabi_pd *)pd)->iw, &ia, &q->iw);
	if (rc < 0) {
		free(q);
		errno = -rc;
		return NULL;
	}
	/* What the QP really has: libiwarp's defaults fill zeros. */
	a->cap.max_send_wr = cap_or(ia.cap.max_send_wr, 128);
	a->cap.max_recv_wr = a->srq ? 0 : cap_or(ia.cap.max_recv_wr, 128);
	a->cap.max_send_sge = cap_or(ia.cap.max_send_sge, 4);
	a->cap.max_recv_sge = cap_or(ia.cap.max_recv_sge, 4);
	a->cap.max_inline_data = cap_or(ia.cap.max_inline_data, 64);
	q->cap = a->cap;
	q->sq_sig_all = a->sq_sig_all != 0;
	q->qp.context = ctx;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.srq = a->srq;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	pthread_mutex_lock(&qps_lock);
	q->qp.qp_num = q->qp.handle = next_qp_num++;
	if (next_qp_num > 0xFFFFFF)
		next_qp_num = 1; /* 24-bit like IB QP numbers */
	q->all_next = all_qps;
	all_qps = q;
	pthread_mutex_unlock(&qps_lock);
	iwabi_stats_qp_made();
	return &q->qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return create(pd ? pd->context : NULL, pd, attr);
}

struct ibv_qp *iwabi_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *ax)
{
	if (!ax || !(ax->comp_mask & IBV_QP_INIT_ATTR_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if (ax->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD) {
		errno = EOPNOTSUPP; /* no XRC, RSS, TSO, new post-send API */
		return NULL;
	}
	struct ibv_qp_init_attr a = iwabi_qp_attr_of_ex(ax);
	struct ibv_qp *qp = create(ctx, ax->pd, &a);
	if (qp)
		ax->cap = a.cap;
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct iwabi_qp *q = iwabi_qp(qp);
	if (!qp)
		return EINVAL;
	struct iw_qp_stats st;
	iw_qp_get_stats(q->iw, &st);
	int rc = iw_destroy_qp(q->iw);
	if (rc < 0)
		return -rc;
	iwabi_stats_qp_gone(&st);
	pthread_mutex_lock(&qps_lock);
	for (struct iwabi_qp **pp = &all_qps; *pp; pp = &(*pp)->all_next)
		if (*pp == q) {
			*pp = q->all_next;
			break;
		}
	pthread_mutex_unlock(&qps_lock);
	/* Completions still queued no longer map to it. */
	if (qp->send_cq)
		((struct iwabi_cq *)qp->send_cq)->last_iw_qp = NULL;
	if (qp->recv_cq)
		((struct iwabi_cq *)qp->recv_cq)->last_iw_qp = NULL;
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(q);
	iwabi_mr_retry_retired(); /* the QP let go of its regions */
	return 0;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	(void)qp;
	errno = EOPNOTSUPP; /* the ibv_wr_* post API needs create_qp_ex's send_ops_flags */
	return NULL;
}

/* ------------------------------------------------------------------ */
/* State                                                               */

static enum ibv_qp_state current_state(struct iwabi_qp *q)
{
	switch (iw_qp_state(q->iw)) {
	case IW_QPS_RTS:
		return IBV_QPS_RTS;
	case IW_QPS_ERROR:
	case IW_QPS_CLOSED:
		return IBV_QPS_ERR;
	case IW_QPS_INIT:
	default:
		return q->qp.state == IBV_QPS_ERR ? IBV_QPS_ERR : q->qp.state;
	}
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct iwabi_qp *q = iwabi_qp(qp);
	if (!qp || !attr)
		return EINVAL;
	if (mask & IBV_QP_CAP)
		return EOPNOTSUPP; /* no resizing */
	if (mask & IBV_QP_STATE) {
		enum ibv_qp_state cur = current_state(q);
		switch (attr->qp_state) {
		case IBV_QPS_RESET:
			/* Only before a connection: libiwarp QPs are not reused. */
			if (cur == IBV_QPS_RTS || cur == IBV_QPS_ERR)
				return EINVAL;
			break;
		case IBV_QPS_INIT:
		case IBV_QPS_RTR:
		case IBV_QPS_RTS:
			/* The connection (rdma_cm) takes an iWARP QP to RTS;
			 * the states before it only record attributes. */
			if (cur == IBV_QPS_ERR)
				return EINVAL;
			break;
		case IBV_QPS_ERR: {
			int rc = iw_qp_to_error(q->iw);
			if (rc < 0)
				return -rc;
			break;
		}
		case IBV_QPS_SQD:
		case IBV_QPS_SQE:
		default:
			return EOPNOTSUPP;
		}
		qp->state = attr->qp_state;
	}
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_PORT)
		q->attr.port_num = attr->port_num;
	if (mask & IBV_QP_PKEY_INDEX)
		q->attr.pkey_index = attr->pkey_index;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	struct iwabi_qp *q = iwabi_qp(qp);
	(void)mask;
	if (!qp || !attr || !init)
		return EINVAL;
	*attr = q->attr;
	attr->qp_state = attr->cur_qp_state = current_state(q);
	attr->cap = q->cap;
	attr->port_num = 1;
	attr->path_mtu = IBV_MTU_4096;
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->cap = q->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = q->sq_sig_all;
	return 0;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0; /* not known to be in order: the program must wait for completions */
}

/* ------------------------------------------------------------------ */
/* Posting                                                             */

/* The QP is in error (or disconnecting): verbs take the WR and flush
 * it. */
static int flush_wr(struct iwabi_qp *q, struct ibv_cq *ibcq, uint64_t wr_id, enum ibv_wc_opcode op)
{
	struct iwabi_cq *cq = (struct iwabi_cq *)ibcq;
	struct iwabi_flush *f = calloc(1, sizeof(*f));
	if (!f)
		return ENOMEM;
	f->wc.wr_id = wr_id;
	f->wc.status = IBV_WC_WR_FLUSH_ERR;
	f->wc.opcode = op;
	f->wc.qp_num = q->qp.qp_num;
	pthread_mutex_lock(&cq->flush_lock);
	if (cq->flush_tail)
		cq->flush_tail->next = f;
	else
		cq->flush_head = f;
	cq->flush_tail = f;
	__atomic_store_n(&cq->has_flush, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cq->flush_lock);
	return 0;
}

static bool qp_in_error(struct iwabi_qp *q)
{
	/* -EPIPE from libiwarp: not connected yet (INIT: a program error,
	 * EINVAL) or stopped (error, closed, disconnecting: flush). */
	return iw_qp_state(q->iw) != IW_QPS_INIT || q->qp.state == IBV_QPS_ERR;
}

static enum ibv_wc_opcode wr_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static int send_opcode(enum ibv_wr_opcode op, enum iw_wr_opcode *out)
{
	switch (op) {
	case IBV_WR_SEND:
		*out = IW_WR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*out = IW_WR_SEND_WITH_INV;
		return 0;
	case IBV_WR_RDMA_WRITE:
		*out = IW_WR_RDMA_WRITE;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = IW_WR_RDMA_READ;
		return 0;
	case IBV_WR_LOCAL_INV:
		*out = IW_WR_LOCAL_INV;
		return 0;
	/* RFC 7306: libiwarp posts them only toward a libiwarp peer that
	 * accepted the extensions; otherwise iw_post_send fails EOPNOTSUPP. */
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = IW_WR_ATOMIC_CMP_AND_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = IW_WR_ATOMIC_FETCH_AND_ADD;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = IW_WR_RDMA_WRITE_WITH_IMM;
		return 0;
	default:
		/* Send with Immediate (RFC 7306 has no one-message form), MW
		 * binds, TSO */
		return EOPNOTSUPP;
	}
}

int iwabi_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct iwabi_qp *q = iwabi_qp(qp);
	struct iw_send_wr w[POST_BATCH];
	struct ibv_send_wr *src[POST_BATCH];

	iwabi_engine_await_helper();
	while (wr) {
		int n = 0, rc = 0;
		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			enum iw_wr_opcode op;
			rc = send_opcode(wr->opcode, &op);
			if (rc)
				break;
			unsigned f = 0;
			if (wr->send_flags & IBV_SEND_SIGNALED)
				f |= IW_SEND_SIGNALED;
			if (wr->send_flags & IBV_SEND_INLINE)
				f |= IW_SEND_INLINE;
			if (wr->send_flags & IBV_SEND_FENCE)
				f |= IW_SEND_FENCE;
			if (wr->send_flags & IBV_SEND_SOLICITED)
				f |= IW_SEND_SOLICITED;
			if (wr->send_flags & ~(unsigned)(IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_FENCE |
							 IBV_SEND_SOLICITED)) {
				rc = EOPNOTSUPP; /* IP checksum offload */
				break;
			}
			w[n] = (struct iw_send_wr){
				.wr_id = wr->wr_id,
				.next = NULL,
				.sg_list = (struct iw_sge *)wr->sg_list, /* same layout (objects.c) */
				.num_sge = wr->num_sge,
				.opcode = op,
				.send_flags = f,
				.remote_addr = wr->wr.rdma.remote_addr,
				.rkey = wr->wr.rdma.rkey,
				.invalidate_rkey = wr->invalidate_rkey,
			};
			if (op == IW_WR_ATOMIC_CMP_AND_SWP || op == IW_WR_ATOMIC_FETCH_AND_ADD) {
				w[n].remote_addr = wr->wr.atomic.remote_addr;
				w[n].rkey = wr->wr.atomic.rkey;
				w[n].compare_add = wr->wr.atomic.compare_add;
				w[n].swap = wr->wr.atomic.swap;
			} else if (op == IW_WR_RDMA_WRITE_WITH_IMM) {
				/* verbs' 4 immediate bytes end the 8 RFC 7306 ones */
				w[n].imm_data = ntohl(wr->imm_data);
			}
			if (n)
				w[n - 1].next = &w[n];
			src[n] = wr;
		}
		if (n) {
			struct iw_send_wr *ibad = NULL;
			int prc = iw_post_send(q->iw, w, &ibad);
			if (prc == -EPIPE && qp_in_error(q)) {
				for (int i = ibad ? (int)(ibad - w) : 0; i < n; i++) {
					int frc = flush_wr(q, qp->send_cq, src[i]->wr_id, wr_wc_opcode(src[i]->opcode));
					if (frc) {
						if (bad)
							*bad = src[i];
						return frc;
					}
				}
				prc = 0;
			}
			if (prc < 0) {
				if (bad)
					*bad = ibad ? src[ibad - w] : src[0];
				return prc == -EPIPE ? EINVAL : -prc;
			}
		}
		if (rc) {
			if (bad)
				*bad = wr;
			return rc;
		}
	}
	return 0;
}

int iwabi_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct iwabi_qp *q = iwabi_qp(qp);
	iwabi_engine_await_helper();
	struct ibv_recv_wr *ibad = NULL;
	int rc = iw_post_recv(q->iw, (struct iw_recv_wr *)wr, (struct iw_recv_wr **)&ibad);
	if (rc == -EPIPE && qp_in_error(q)) {
		for (struct ibv_recv_wr *w = ibad ? ibad : wr; w; w = w->next) {
			int frc = flush_wr(q, qp->recv_cq, w->wr_id, IBV_WC_RECV);
			if (frc) {
				if (bad)
					*bad = w;
				return frc;
			}
		}
		return 0;
	}
	if (bad)
		*bad = ibad;
	return rc < 0 ? (rc == -EPIPE ? EINVAL : -rc) : 0;
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */

static enum ibv_wc_status wc_status(enum iw_wc_status s)
{
	switch (s) {
	case IW_WC_SUCCESS:
		return IBV_WC_SUCCESS;
	case IW_WC_LOC_LEN_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case IW_WC_LOC_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case IW_WC_LOC_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case IW_WC_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case IW_WC_REM_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case IW_WC_REM_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case IW_WC_REM_INV_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case IW_WC_FATAL_ERR:
	default:
		return IBV_WC_FATAL_ERR;
	}
}

static enum ibv_wc_opcode wc_opcode(enum iw_wc_opcode o)
{
	switch (o) {
	case IW_WC_SEND:
		return IBV_WC_SEND;
	case IW_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case IW_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IW_WC_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IW_WC_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case IW_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case IW_WC_RECV_RDMA_WITH_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case IW_WC_RECV:
	default:
		return IBV_WC_RECV;
	}
}

/* The ABI QP a completion names; its number survives a destroyed QP
 * whose completions are still queued only as 0 (never a stale read). */
static uint32_t qp_num_of(struct iwabi_cq *cq, struct iw_qp *iq)
{
	if (cq->last_iw_qp == iq && iq)
		return cq->last_qp_num;
	uint32_t num = 0;
	pthread_mutex_lock(&qps_lock);
	for (struct iwabi_qp *q = all_qps; q; q = q->all_next)
		if (q->iw == iq) {
			num = q->qp.qp_num;
			break;
		}
	pthread_mutex_unlock(&qps_lock);
	if (num) {
		cq->last_iw_qp = iq;
		cq->last_qp_num = num;
	}
	return num;
}

static int poll_some(struct iwabi_cq *cq, int n, struct ibv_wc *out)
{
	struct iw_wc w[POLL_BATCH];
	int k = 0;

	while (k < n) {
		int want = n - k < POLL_BATCH ? n - k : POLL_BATCH;
		int got = iw_poll_cq(cq->iw, want, w);
		if (got < 0)
			return k ? k : got;
		for (int i = 0; i < got; i++) {
			struct ibv_wc *o = &out[k + i];
			o->wr_id = w[i].wr_id;
			o->status = wc_status(w[i].status);
			o->opcode = wc_opcode(w[i].opcode);
			/* The Terminate's (layer, etype, ecode) for errors. */
			o->vendor_err = (uint32_t)w[i].cause.layer << 16 | (uint32_t)w[i].cause.etype << 8 |
					w[i].cause.ecode;
			o->byte_len = w[i].byte_len;
			o->invalidated_rkey = (w[i].flags & IW_WC_WITH_INV) ? w[i].invalidated_stag : 0;
			o->qp_num = qp_num_of(cq, w[i].qp);
			o->src_qp = 0;
			o->wc_flags = (w[i].flags & IW_WC_WITH_INV) ? IBV_WC_WITH_INV : 0;
			if (w[i].flags & IW_WC_WITH_IMM) {
				o->wc_flags |= IBV_WC_WITH_IMM;
				o->imm_data = htonl((uint32_t)w[i].imm_data); /* shares room with invalidated_rkey */
			}
			o->pkey_index = 0;
			o->slid = 0;
			o->sl = 0;
			o->dlid_path_bits = 0;
		}
		k += got;
		if (got < want)
			break;
	}
	return k;
}

int iwabi_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct iwabi_cq *cq = (struct iwabi_cq *)ibcq;
	if (n < 0 || (n && !wc))
		return -1;
	int k = poll_some(cq, n, wc);
	if (k == 0 && n > 0) {
		/* Nothing yet: move the engine (a spinning program is the one
		 * driving progress), then look again. */
		if (iwabi_engine_drive())
			k = poll_some(cq, n, wc);
		if (k == 0)
			iwabi_engine_idle_yield();
	}
	if (k < n && __atomic_load_n(&cq->has_flush, __ATOMIC_ACQUIRE)) {
		/* Behind everything libiwarp completed: it flushed the QP's
		 * earlier WRs before refusing these. */
		pthread_mutex_lock(&cq->flush_lock);
		while (k < n && cq->flush_head) {
			struct iwabi_flush *f = cq->flush_head;
			cq->flush_head = f->next;
			wc[k++] = f->wc;
			free(f);
		}
		if (!cq->flush_head) {
			cq->flush_tail = NULL;
			cq->has_flush = false;
		}
		pthread_mutex_unlock(&cq->flush_lock);
	}
	return k;
}

struct iw_qp *iwabi_qp_of(struct ibv_qp *qp)
{
	return qp ? iwabi_qp(qp)->iw : NULL;
}

uint64_t iwabi_qp_stats_sum_live(struct iw_qp_stats *t)
{
	uint64_t active = 0;
	pthread_mutex_lock(&qps_lock);
	for (struct iwabi_qp *q = all_qps; q; q = q->all_next) {
		struct iw_qp_stats s;
		iw_qp_get_stats(q->iw, &s);
		iwabi_stats_add(t, &s);
		if (s.fpdus_tx || s.fpdus_rx)
			active++;
	}
	pthread_mutex_unlock(&qps_lock);
	return active;
}

struct ibv_qp *iwabi_qp_by_num(uint32_t qp_num)
{
	struct ibv_qp *found = NULL;
	pthread_mutex_lock(&qps_lock);
	for (struct iwabi_qp *q = all_qps; q; q = q->all_next)
		if (q->qp.qp_num == qp_num) {
			found = &q->qp;
			break;
		}
	pthread_mutex_unlock(&qps_lock);
	return found;
}
