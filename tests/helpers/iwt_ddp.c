#include "iwt_ddp.h"

#include <string.h>

#include "iw_bytes.h"

size_t iwt_ddp_tagged(uint8_t *buf, uint8_t ulp_ctrl, uint32_t stag, uint64_t to, bool last,
		      uint8_t version)
{
	buf[0] = (uint8_t)(IW_DDP_CTRL_TAGGED | (last ? IW_DDP_CTRL_LAST : 0) |
			   (version & IW_DDP_CTRL_DV_MASK));
	buf[1] = ulp_ctrl;
	iw_put_be32(buf + 2, stag);
	iw_put_be64(buf + 6, to);
	return IW_DDP_TAGGED_HDR_LEN;
}

size_t iwt_ddp_untagged(uint8_t *buf, uint8_t ulp_ctrl, uint32_t ulp_word, uint32_t qn,
			uint32_t msn, uint32_t mo, bool last, uint8_t version)
{
	buf[0] = (uint8_t)((last ? IW_DDP_CTRL_LAST : 0) | (version & IW_DDP_CTRL_DV_MASK));
	buf[1] = ulp_ctrl;
	iw_put_be32(buf + 2, ulp_word);
	iw_put_be32(buf + 6, qn);
	iw_put_be32(buf + 10, msn);
	iw_put_be32(buf + 14, mo);
	return IW_DDP_UNTAGGED_HDR_LEN;
}

static enum iw_stag_status env_tagged(void *ctx, uint32_t stag, uint64_t to, size_t len,
				      uint8_t ulp_ctrl, uint8_t **dest)
{
	struct iwt_ddp_env *e = ctx;
	struct iwt_mr *mr = NULL;

	e->tagged_calls++;
	e->last_tagged_len = len;
	for (int i = 0; i < e->nmr; i++)
		if (e->mr[i].stag >> 8 == stag >> 8)
			mr = &e->mr[i];
	if (!mr || mr->stag != stag || !mr->valid) /* unknown index, wrong key, invalidated */
		return IW_STAG_INVALID;
	if (mr->pd != e->pd)
		return IW_STAG_NOT_ASSOC;
	/* Subtractions only: to + len may not be representable. */
	if (to < mr->to || len > mr->len || to - mr->to > mr->len - len)
		return IW_STAG_BOUNDS;
	if (!(mr->opmask & (1u << (ulp_ctrl & 0x0F))))
		return IW_STAG_ACCESS;
	*dest = mr->base + (to - mr->to);
	return IW_STAG_OK;
}

static int env_untagged(void *ctx, uint32_t qn, uint32_t msn, const struct iovec **sgl, int *nsge,
			struct iw_term_cause *cause)
{
	struct iwt_ddp_env *e = ctx;
	struct iwt_rq *rq;
	uint32_t k;

	e->untagged_calls++;
	if (e->fail_untagged) {
		if (e->fail_sets_cause)
			*cause = e->fail_cause;
		return -1;
	}
	if (qn >= IW_DDP_NUM_QN)
		return -1;
	rq = &e->rq[qn];
	k = msn - rq->base_msn; /* modulo 2^32, like MSNs */
	if (k >= rq->count)
		return -1;
	*sgl = rq->buf[(rq->head + k) % IWT_RQ_MAX].sgl;
	*nsge = rq->buf[(rq->head + k) % IWT_RQ_MAX].nsge;
	return 0;
}

const struct iw_ddp_rx_ops iwt_ddp_rx_ops = {
	.tagged = env_tagged,
	.untagged = env_untagged,
};

void iwt_ddp_env_init(struct iwt_ddp_env *e, uint32_t pd)
{
	memset(e, 0, sizeof(*e));
	e->pd = pd;
	for (int i = 0; i < IW_DDP_NUM_QN; i++)
		e->rq[i].base_msn = 1;
}

struct iwt_mr *iwt_ddp_mr_add(struct iwt_ddp_env *e, uint32_t stag, uint8_t *base, uint64_t to,
			      size_t len, uint32_t opmask, uint32_t pd)
{
	struct iwt_mr *mr;

	if (e->nmr >= IWT_MR_MAX)
		return NULL;
	mr = &e->mr[e->nmr++];
	mr->stag = stag;
	mr->base = base;
	mr->to = to;
	mr->len = len;
	mr->opmask = opmask;
	mr->pd = pd;
	mr->valid = true;
	return mr;
}

int iwt_ddp_rq_post(struct iwt_ddp_env *e, uint32_t qn, const struct iovec *sgl, int nsge)
{
	struct iwt_rq *rq;

	if (qn >= IW_DDP_NUM_QN || e->rq[qn].count >= IWT_RQ_MAX)
		return -1;
	rq = &e->rq[qn];
	rq->buf[(rq->head + rq->count) % IWT_RQ_MAX] = (struct iwt_rq_buf){ sgl, nsge };
	rq->count++;
	return 0;
}

void iwt_ddp_rq_consume(struct iwt_ddp_env *e, uint32_t qn)
{
	struct iwt_rq *rq;

	if (qn >= IW_DDP_NUM_QN || e->rq[qn].count == 0)
		return;
	rq = &e->rq[qn];
	rq->head = (rq->head + 1) % IWT_RQ_MAX;
	rq->count--;
	rq->base_msn++;
}
