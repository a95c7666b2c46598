/* A bounded byte ring standing in for a socket buffer (the in-memory
 * transports). The caller checks room before iw_ring_put. */
#ifndef IW_BYTE_RING_H
#define IW_BYTE_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct iw_ring {
	uint8_t *buf;
	size_t size, head, used;
};

static inline void iw_ring_put(struct iw_ring *r, const void *src, size_t n)
{
	size_t tail = (r->head + r->used) % r->size;
	size_t first = n < r->size - tail ? n : r->size - tail;

	memcpy(r->buf + tail, src, first);
	memcpy(r->buf, (const uint8_t *)src + first, n - first);
	r->used += n;
}

static inline void iw_ring_take(struct iw_ring *r, size_t n)
{
	r->head = (r->head + n) % r->size;
	r->used -= n;
	if (!r->used)
		r->head = 0;
}

static inline void iw_ring_drop(struct iw_ring *r)
{
	r->head = r->used = 0;
}

/* Bytes readable in one piece at the head. */
static inline size_t iw_ring_chunk(const struct iw_ring *r)
{
	return r->size - r->head < r->used ? r->size - r->head : r->used;
}

#endif
