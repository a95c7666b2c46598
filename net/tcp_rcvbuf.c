#include "tcp_rcvbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int iwn_rcvbuf_init(struct iwn_rcvbuf *rb, uint32_t cap)
{
	memset(rb, 0, sizeof(*rb));
	if (cap == 0)
		return -EINVAL;
	uint32_t first = cap < IWN_RCV_INITIAL ? cap : IWN_RCV_INITIAL;
	rb->buf = malloc(first);
	if (!rb->buf)
		return -ENOMEM;
	rb->cap = first;
	rb->max = cap;
	rb->grow_at = first;
	return 0;
}

/* Double cap (up to max), the ring laid out again from head so that every
 * byte keeps its distance from head (in-order and out-of-order alike).
 * Without memory it stays as it is, for good. */
static void grow(struct iwn_rcvbuf *rb)
{
	uint32_t ncap = rb->cap > rb->max / 2 ? rb->max : rb->cap * 2;
	uint8_t *nb = malloc(ncap);
	if (!nb) {
		rb->max = rb->cap;
		return;
	}
	uint32_t first = rb->cap - rb->head;
	memcpy(nb, rb->buf + rb->head, first);
	memcpy(nb + first, rb->buf, rb->head);
	free(rb->buf);
	rb->buf = nb;
	rb->head = 0;
	rb->grow_at = rb->nxt + ncap;
	rb->cap = ncap;
}

void iwn_rcvbuf_fini(struct iwn_rcvbuf *rb)
{
	free(rb->buf);
	rb->buf = NULL;
}

static void store(struct iwn_rcvbuf *rb, uint64_t off, const uint8_t *p, uint32_t n)
{
	/* The ring index of stream offset nxt is head + used. */
	uint32_t at = (uint32_t)((rb->head + rb->used + (off - rb->nxt)) % rb->cap);
	uint32_t first = rb->cap - at < n ? rb->cap - at : n;
	memcpy(rb->buf + at, p, first);
	memcpy(rb->buf, p + first, n - first);
}

/* Add [s, e) to the interval set, merging overlaps and neighbours. */
static int add_range(struct iwn_rcvbuf *rb, uint64_t s, uint64_t e)
{
	uint32_t i = 0;
	while (i < rb->n_ooo && rb->ooo[i].end < s)
		i++;
	uint32_t j = i;
	while (j < rb->n_ooo && rb->ooo[j].start <= e) {
		if (rb->ooo[j].start < s)
			s = rb->ooo[j].start;
		if (rb->ooo[j].end > e)
			e = rb->ooo[j].end;
		j++;
	}
	/* ranges [i, j) merge into one at i */
	if (i == j) {
		if (rb->n_ooo == IWN_RCV_MAX_HOLES)
			return -ENOSPC;
		memmove(&rb->ooo[i + 1], &rb->ooo[i], (rb->n_ooo - i) * sizeof(rb->ooo[0]));
		rb->n_ooo++;
	} else if (j - i > 1) {
		memmove(&rb->ooo[i + 1], &rb->ooo[j], (rb->n_ooo - j) * sizeof(rb->ooo[0]));
		rb->n_ooo -= j - i - 1;
	}
	rb->ooo[i].start = s;
	rb->ooo[i].end = e;
	return 0;
}

int64_t iwn_rcvbuf_insert(struct iwn_rcvbuf *rb, uint64_t off, const uint8_t *p, uint32_t len)
{
	if (rb->cap < rb->max && rb->nxt >= rb->grow_at)
		grow(rb);
	uint64_t lo = off, hi = off + len, edge = rb->nxt + iwn_rcvbuf_window(rb);
	if (lo < rb->nxt)
		lo = rb->nxt;
	if (hi > edge)
		hi = edge;
	if (lo >= hi)
		return 0;
	if (lo > rb->nxt) {
		int r = add_range(rb, lo, hi);
		if (r)
			return r;
		store(rb, lo, p + (lo - off), (uint32_t)(hi - lo));
		return 0;
	}
	store(rb, lo, p + (lo - off), (uint32_t)(hi - lo));
	uint64_t nxt = hi;
	uint32_t k = 0;
	while (k < rb->n_ooo && rb->ooo[k].start <= nxt) {
		if (rb->ooo[k].end > nxt)
			nxt = rb->ooo[k].end;
		k++;
	}
	memmove(&rb->ooo[0], &rb->ooo[k], (rb->n_ooo - k) * sizeof(rb->ooo[0]));
	rb->n_ooo -= k;
	uint64_t adv = nxt - rb->nxt;
	rb->used += (uint32_t)adv;
	rb->nxt = nxt;
	return (int64_t)adv;
}

uint32_t iwn_rcvbuf_read(struct iwn_rcvbuf *rb, uint8_t *dst, uint32_t n)
{
	if (n > rb->used)
		n = rb->used;
	uint32_t first = rb->cap - rb->head < n ? rb->cap - rb->head : n;
	memcpy(dst, rb->buf + rb->head, first);
	memcpy(dst + first, rb->buf, n - first);
	rb->head = (rb->head + n) % rb->cap;
	rb->used -= n;
	return n;
}
