#include "iwt_mem.h"

#include <string.h>

void iwt_mem_init(struct iwt_mem *m, uint32_t pd)
{
	memset(m, 0, sizeof(*m));
	m->pd = pd;
}

uint32_t iwt_mem_reg(struct iwt_mem *m, void *base, size_t len, unsigned access, uint32_t pd, uint8_t key)
{
	for (unsigned i = 1; i < IWT_MAX_MR; i++) {
		struct iwt_mr *r = &m->mr[i];
		if (r->used)
			continue;
		r->used = true;
		r->valid = true;
		r->stag = i << 8 | key;
		r->pd = pd;
		r->access = access;
		r->base = base;
		r->va = (uint64_t)(uintptr_t)base;
		r->len = len;
		return r->stag;
	}
	return 0;
}

struct iwt_mr *iwt_mem_find(struct iwt_mem *m, uint32_t stag)
{
	uint32_t idx = stag >> 8;
	if (idx == 0 || idx >= IWT_MAX_MR || !m->mr[idx].used)
		return NULL;
	return &m->mr[idx];
}

enum iw_stag_status iwt_mem_stag(void *ctx, uint32_t stag, uint64_t to, size_t len, unsigned access,
				 uint8_t **addr)
{
	struct iwt_mem *m = ctx;
	struct iwt_mr *r = iwt_mem_find(m, stag);

	m->lookups++;
	if (!r || !r->valid || r->stag != stag)
		return IW_STAG_INVALID;
	if (r->pd != m->pd)
		return IW_STAG_NOT_ASSOC;
	if (to < r->va || to - r->va > r->len || len > r->len - (to - r->va))
		return IW_STAG_BOUNDS;
	if ((r->access & access) != access)
		return IW_STAG_ACCESS;
	*addr = r->base + (to - r->va);
	return IW_STAG_OK;
}

void iwt_mem_post_recv(struct iwt_mem *m, uint64_t id, const struct iovec *sgl, int nsge)
{
	struct iwt_recv *r = &m->rq[(m->rq_head + m->rq_count++) % IWT_MAX_RECV];
	r->id = id;
	r->nsge = nsge;
	memcpy(r->sgl, sgl, (size_t)nsge * sizeof(*sgl));
}

void iwt_mem_pop_recv(struct iwt_mem *m, struct iwt_recv *out)
{
	if (!m->rq_count)
		return;
	if (out)
		*out = m->rq[m->rq_head % IWT_MAX_RECV];
	m->rq_head++;
	m->rq_count--;
}

int iwt_mem_recv_buf(void *ctx, const struct iovec **sgl, int *nsge)
{
	struct iwt_mem *m = ctx;
	if (!m->rq_count)
		return -1;
	struct iwt_recv *r = &m->rq[m->rq_head % IWT_MAX_RECV];
	*sgl = r->sgl;
	*nsge = r->nsge;
	return 0;
}

int iwt_mem_invalidate(void *ctx, uint32_t stag)
{
	struct iwt_mem *m = ctx;
	struct iwt_mr *r = iwt_mem_find(m, stag);
	if (!r || !r->valid || r->stag != stag || r->pd != m->pd)
		return -1;
	r->valid = false;
	m->invalidations++;
	return 0;
}
