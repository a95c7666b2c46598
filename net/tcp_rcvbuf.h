/* Receive buffer with reassembly: a byte ring indexed by stream offset.
 * In-order bytes wait for the application at the front; out-of-order
 * bytes are stored at their final place in the window behind them and
 * tracked as a small set of intervals, so filling a hole makes them
 * readable without copying. Sized at creation. */
#ifndef IWN_TCP_RCVBUF_H
#define IWN_TCP_RCVBUF_H

#include <stdint.h>

#define IWN_RCV_MAX_HOLES 16 /* out-of-order intervals tracked */

struct iwn_rcv_range {
	uint64_t start, end; /* stream offsets, [start, end) */
};

struct iwn_rcvbuf {
	uint8_t *buf;
	uint32_t cap, head, used; /* used in-order bytes unread, from head */
	uint64_t nxt;             /* stream offset of the next in-order byte */
	struct iwn_rcv_range ooo[IWN_RCV_MAX_HOLES]; /* sorted, disjoint, > nxt */
	uint32_t n_ooo;
};

int iwn_rcvbuf_init(struct iwn_rcvbuf *rb, uint32_t cap);
void iwn_rcvbuf_fini(struct iwn_rcvbuf *rb);
/* Free space from nxt on: the receive window. */
static inline uint32_t iwn_rcvbuf_window(const struct iwn_rcvbuf *rb)
{
	return rb->cap - rb->used;
}
/* Store len bytes at stream offset off. Bytes outside [nxt, nxt + window)
 * are ignored. Returns how far nxt advanced (bytes that became readable),
 * or -ENOSPC when an out-of-order piece could not be tracked (dropped: the
 * peer will resend it). */
int64_t iwn_rcvbuf_insert(struct iwn_rcvbuf *rb, uint64_t off, const uint8_t *p, uint32_t len);
/* Copy out and release up to n in-order bytes. */
uint32_t iwn_rcvbuf_read(struct iwn_rcvbuf *rb, uint8_t *dst, uint32_t n);

#endif
