/* Receive queues: the ring shared by a QP's own RQ and an SRQ, post-time
 * validation of receive WRs, and the SRQ object. Every SGE is checked
 * when posted (lkey valid and of the queue's PD, LOCAL_WRITE, bounds), so
 * placement later needs no lookup; the regions stay referenced (in_use)
 * until the receive completes or is flushed. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

int iw_rq_init(struct iw_rq *rq, uint32_t cap, uint32_t max_sge)
{
	size_t n = (size_t)cap * max_sge;

	*rq = (struct iw_rq){ .cap = cap, .max_sge = max_sge };
	rq->ring = calloc(cap ? cap : 1, sizeof(*rq->ring));
	rq->sgl_pool = calloc(n ? n : 1, sizeof(*rq->sgl_pool));
	rq->mr_pool = calloc(n ? n : 1, sizeof(*rq->mr_pool));
	if (!rq->ring || !rq->sgl_pool || !rq->mr_pool) {
		iw_rq_fini(rq);
		return -ENOMEM;
	}
	return 0;
}

void iw_rq_init_at(struct iw_rq *rq, uint32_t cap, uint32_t max_sge, struct iw_rq_entry *ring,
		   struct iovec *sgl_pool, struct iw_mr **mr_pool)
{
	*rq = (struct iw_rq){
		.ring = ring,
		.sgl_pool = sgl_pool,
		.mr_pool = mr_pool,
		.cap = cap,
		.max_sge = max_sge,
		.ext_mem = true,
	};
}

int iw_rq_slot_init(struct iw_rq_entry *e, uint32_t max_sge)
{
	*e = (struct iw_rq_entry){ 0 };
	e->sgl = calloc(max_sge ? max_sge : 1, sizeof(*e->sgl));
	e->mr = calloc(max_sge ? max_sge : 1, sizeof(*e->mr));
	if (!e->sgl || !e->mr) {
		iw_rq_slot_fini(e);
		return -ENOMEM;
	}
	return 0;
}

void iw_rq_slot_fini(struct iw_rq_entry *e)
{
	free(e->sgl);
	free(e->mr);
	e->sgl = NULL;
	e->mr = NULL;
	e->nsge = 0;
}

void iw_rq_entry_move(struct iw_rq_entry *dst, struct iw_rq_entry *src)
{
	dst->wr_id = src->wr_id;
	dst->nsge = src->nsge;
	for (int i = 0; i < src->nsge; i++) {
		dst->sgl[i] = src->sgl[i];
		dst->mr[i] = src->mr[i];
		src->mr[i] = NULL;
	}
	src->nsge = 0;
}

void iw_rq_fini(struct iw_rq *rq)
{
	while (rq->ring && rq->count) {
		iw_rq_entry_release(iw_rq_head(rq));
		iw_rq_pop(rq);
	}
	if (!rq->ext_mem) {
		free(rq->ring);
		free(rq->sgl_pool);
		free(rq->mr_pool);
	}
	*rq = (struct iw_rq){ 0 };
}

/* Validate one WR into e (regions not yet referenced). */
static int check_wr(struct iw_context *ctx, struct iw_pd *pd, const struct iw_rq *rq,
		    const struct iw_recv_wr *wr, struct iw_rq_entry *e)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	uint64_t total = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct iw_sge *s = &wr->sg_list[i];
		struct iw_mr *mr;
		uint8_t *p;
		if (iw_mr_lookup(ctx, pd, s->lkey, s->addr, s->length, IW_RDMAP_ACC_LOCAL_WRITE, &mr, &p) !=
		    IW_STAG_OK)
			return -EINVAL;
		/* A zero-length SGE still needs the right: it names a sink. */
		if (!(mr->access & IW_ACCESS_LOCAL_WRITE))
			return -EINVAL;
		total += s->length;
		e->sgl[i].iov_base = p;
		e->sgl[i].iov_len = s->length;
		e->mr[i] = mr;
	}
	/* DDP message offsets are 32-bit. */
	if (total > UINT32_MAX)
		return -EMSGSIZE;
	e->nsge = wr->num_sge;
	e->wr_id = wr->wr_id;
	return 0;
}

int iw_rq_post(struct iw_context *ctx, struct iw_pd *pd, struct iw_rq *rq, struct iw_recv_wr *wr,
	       struct iw_recv_wr **bad_wr)
{
	int rc = 0;
	for (; wr; wr = wr->next) {
		if (rq->count >= rq->cap) {
			rc = -ENOSPC;
			break;
		}
		uint32_t idx = (rq->head + rq->count) % rq->cap;
		struct iw_rq_entry *e = &rq->ring[idx];
		/* The slot's SGE room, by index (slots are not set up at init). */
		e->sgl = rq->sgl_pool + (size_t)idx * rq->max_sge;
		e->mr = rq->mr_pool + (size_t)idx * rq->max_sge;
		if ((rc = check_wr(ctx, pd, rq, wr, e)) < 0) {
			e->nsge = 0;
			break;
		}
		for (int i = 0; i < e->nsge; i++)
			e->mr[i]->in_use++;
		rq->count++;
	}
	if (bad_wr)
		*bad_wr = rc ? wr : NULL;
	return rc;
}

/* ------------------------------------------------------------------ */
/* SRQ objects                                                         */

int iw_create_srq(struct iw_pd *pd, const struct iw_srq_init_attr *attr, struct iw_srq **out)
{
	if (!pd || !out)
		return -EINVAL;
	uint32_t max_wr = attr && attr->max_wr ? attr->max_wr : 128;
	uint32_t max_sge = attr && attr->max_sge ? attr->max_sge : 4;
	if (max_wr > IW_MAX_WR || max_sge > IW_MAX_RECV_SGE)
		return -EINVAL;
	struct iw_srq *srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	if (iw_rq_init(&srq->rq, max_wr, max_sge) < 0) {
		free(srq);
		return -ENOMEM;
	}
	struct iw_context *ctx = pd->ctx;
	srq->ctx = ctx;
	srq->pd = pd;
	iw_ctx_lock(ctx);
	pd->n_users++;
	ctx->n_srq++;
	iw_ctx_unlock(ctx);
	*out = srq;
	return 0;
}

int iw_destroy_srq(struct iw_srq *srq)
{
	if (!srq)
		return -EINVAL;
	struct iw_context *ctx = srq->ctx;
	iw_ctx_lock(ctx);
	if (srq->n_qp) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	iw_rq_fini(&srq->rq); /* posted receives are dropped with their references */
	srq->pd->n_users--;
	ctx->n_srq--;
	iw_ctx_unlock(ctx);
	free(srq);
	return 0;
}

int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr)
{
	if (!srq) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL;
	}
	iw_ctx_lock(srq->ctx);
	int rc = iw_rq_post(srq->ctx, srq->pd, &srq->rq, wr, bad_wr);
	iw_ctx_unlock(srq->ctx);
	return rc;
}
