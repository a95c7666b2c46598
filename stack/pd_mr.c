/* Protection domains, memory regions and the STag table.
 *
 * STag = index << 8 | key. The index comes from a free list (LIFO, so a
 * freed index is reused first); the table grows by doubling up to max_mr.
 * The key is random and never equal to the key the index had before, so
 * an STag that was deregistered or re-registered never matches again
 * (until the 8-bit key space comes round, which randomness spreads out).
 * The TO space of a region is its virtual address, like siw.
 *
 * Deregistration and re-registration fail with -EBUSY while posted WRs
 * reference the region or a peer's RDMA READ is still being answered from
 * its memory (the response is sent zero copy); destroying or disconnecting
 * the QP ends the latter.
 *
 * Lookup order: existence/key/validity (IW_STAG_INVALID), PD
 * (IW_STAG_NOT_ASSOC), access rights (IW_STAG_ACCESS), bounds
 * (IW_STAG_BOUNDS). Rights before bounds: a region the peer may not
 * touch at all is reported as such whatever the range. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define STAG_INDEX(s) ((s) >> 8)
#define STAG_KEY(s) ((uint8_t)((s) & 0xFF))

static uint8_t random_byte(void)
{
	uint8_t b;
	if (getrandom(&b, 1, GRND_NONBLOCK) == 1)
		return b;
	/* No entropy source: a clock-seeded mix still changes the key. */
	static uint64_t x;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	x ^= (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL + (uint64_t)ts.tv_sec;
	x ^= x >> 29;
	return (uint8_t)(x >> 17);
}

unsigned iw_mr_rights_for(unsigned rdmap_access)
{
	unsigned r = 0;
	if (rdmap_access & IW_RDMAP_ACC_LOCAL_WRITE)
		r |= IW_ACCESS_LOCAL_WRITE;
	if (rdmap_access & IW_RDMAP_ACC_REMOTE_WRITE)
		r |= IW_ACCESS_REMOTE_WRITE;
	if (rdmap_access & IW_RDMAP_ACC_REMOTE_READ)
		r |= IW_ACCESS_REMOTE_READ;
	if (rdmap_access & IW_RDMAP_ACC_REMOTE_ATOMIC)
		r |= IW_ACCESS_REMOTE_ATOMIC;
	return r;
}

/* ------------------------------------------------------------------ */
/* Protection domains                                                  */

int iw_alloc_pd(struct iw_context *ctx, struct iw_pd **out)
{
	if (!ctx || !out)
		return -EINVAL;
	struct iw_pd *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	iw_ctx_lock(ctx);
	pd->ctx = ctx;
	pd->handle = ++ctx->pd_next_handle;
	ctx->n_pd++;
	iw_ctx_unlock(ctx);
	*out = pd;
	return 0;
}

int iw_dealloc_pd(struct iw_pd *pd)
{
	if (!pd)
		return -EINVAL;
	struct iw_context *ctx = pd->ctx;
	iw_ctx_lock(ctx);
	if (pd->n_users) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	ctx->n_pd--;
	iw_ctx_unlock(ctx);
	free(pd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* STag table                                                          */

static int table_grow(struct iw_context *ctx)
{
	/* Indices 1 .. max_mr are usable; slot 0 stays empty. */
	uint32_t limit = ctx->max_mr + 1;
	if (ctx->mr_cap >= limit)
		return -ENOSPC;
	uint32_t cap = ctx->mr_cap ? ctx->mr_cap * 2 : 64;
	if (cap > limit || cap < ctx->mr_cap)
		cap = limit;
	struct iw_mr **t = realloc(ctx->mr_table, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	ctx->mr_table = t;
	uint32_t *nf = realloc(ctx->mr_next_free, cap * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	ctx->mr_next_free = nf;
	uint8_t *k = realloc(ctx->mr_key, cap);
	if (!k)
		return -ENOMEM;
	ctx->mr_key = k;
	uint32_t first = ctx->mr_cap ? ctx->mr_cap : 1;
	if (!ctx->mr_cap) {
		t[0] = NULL;
		nf[0] = 0;
		k[0] = 0;
	}
	/* New indices go on the free list in ascending order. */
	for (uint32_t i = cap; i-- > first;) {
		t[i] = NULL;
		k[i] = 0;
		nf[i] = ctx->mr_free;
		ctx->mr_free = i;
	}
	ctx->mr_cap = cap;
	return 0;
}

static uint8_t new_key(struct iw_context *ctx, uint32_t idx)
{
	uint8_t key;
	do
		key = random_byte();
	while (key == ctx->mr_key[idx]);
	ctx->mr_key[idx] = key;
	return key;
}

/* A peer's RDMA READ is still being answered from this memory on a QP
 * whose transport may write: the memory must not go away yet (the
 * response FPDUs are gathered from it, zero copy). */
static bool read_response_pending(struct iw_context *ctx, const void *addr, size_t len)
{
	for (struct iw_qp *qp = ctx->qps; qp; qp = qp->ctx_next)
		if (qp->connected && !qp->shut && iw_rdmap_tx_reads_from(&qp->conn, addr, len))
			return true;
	return false;
}

static int check_reg(void *addr, size_t length, unsigned access)
{
	if (access & ~(unsigned)(IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ |
				 IW_ACCESS_REMOTE_ATOMIC))
		return -EINVAL;
	/* Like verbs: remote write implies the right to write locally. */
	if ((access & (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC)) && !(access & IW_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (!addr && length)
		return -EINVAL;
	if (length > UINTPTR_MAX - (uintptr_t)addr)
		return -EINVAL;
	return 0;
}

int iw_reg_mr(struct iw_pd *pd, void *addr, size_t length, unsigned access, struct iw_mr **out)
{
	if (!pd || !out)
		return -EINVAL;
	int rc = check_reg(addr, length, access);
	if (rc < 0)
		return rc;
	struct iw_mr *mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	struct iw_context *ctx = pd->ctx;
	iw_ctx_lock(ctx);
	if (ctx->n_mr >= ctx->max_mr) {
		rc = -ENOSPC;
		goto fail;
	}
	if (!ctx->mr_free && (rc = table_grow(ctx)) < 0)
		goto fail;
	uint32_t idx = ctx->mr_free;
	ctx->mr_free = ctx->mr_next_free[idx];
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->valid = true;
	mr->stag = idx << 8 | new_key(ctx, idx);
	ctx->mr_table[idx] = mr;
	ctx->n_mr++;
	pd->n_users++;
	iw_ctx_unlock(ctx);
	*out = mr;
	return 0;
fail:
	iw_ctx_unlock(ctx);
	free(mr);
	return rc;
}

int iw_rereg_mr(struct iw_mr *mr, void *addr, size_t length, unsigned access)
{
	if (!mr)
		return -EINVAL;
	int rc = check_reg(addr, length, access);
	if (rc < 0)
		return rc;
	struct iw_context *ctx = mr->pd->ctx;
	iw_ctx_lock(ctx);
	if (mr->in_use || read_response_pending(ctx, mr->addr, mr->length)) {
		/* Posted WRs, or a Read Response being sent, hold iovecs into
		 * the old region. */
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	uint32_t idx = STAG_INDEX(mr->stag);
	iw_qp_all_memory_gone(ctx, mr->stag, mr->addr, mr->length);
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->valid = true;
	mr->stag = idx << 8 | new_key(ctx, idx);
	iw_ctx_unlock(ctx);
	return 0;
}

int iw_dereg_mr(struct iw_mr *mr)
{
	if (!mr)
		return -EINVAL;
	struct iw_context *ctx = mr->pd->ctx;
	iw_ctx_lock(ctx);
	if (mr->in_use || read_response_pending(ctx, mr->addr, mr->length)) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	uint32_t idx = STAG_INDEX(mr->stag);
	iw_qp_all_memory_gone(ctx, mr->stag, mr->addr, mr->length);
	ctx->mr_table[idx] = NULL;
	ctx->mr_next_free[idx] = ctx->mr_free;
	ctx->mr_free = idx;
	ctx->n_mr--;
	mr->pd->n_users--;
	iw_ctx_unlock(ctx);
	free(mr);
	return 0;
}

uint32_t iw_mr_stag(const struct iw_mr *mr)
{
	return mr ? mr->stag : 0;
}

void *iw_mr_addr(const struct iw_mr *mr)
{
	return mr ? mr->addr : NULL;
}

size_t iw_mr_length(const struct iw_mr *mr)
{
	return mr ? mr->length : 0;
}

/* ------------------------------------------------------------------ */
/* Lookup and invalidation (lock held)                                 */

static struct iw_mr *find(struct iw_context *ctx, uint32_t stag)
{
	uint32_t idx = STAG_INDEX(stag);
	if (idx == 0 || idx >= ctx->mr_cap)
		return NULL;
	struct iw_mr *mr = ctx->mr_table[idx];
	if (!mr || mr->stag != stag)
		return NULL;
	return mr;
}

int iw_mr_invalidate(struct iw_context *ctx, struct iw_pd *pd, uint32_t stag)
{
	struct iw_mr *mr = find(ctx, stag);
	if (!mr || !mr->valid || mr->pd != pd)
		return -1;
	mr->valid = false;
	return 0;
}
