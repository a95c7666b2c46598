/* Receive buffer with reassembly: a byte ring indexed by stream offset.
 * In-order bytes wait for the application at the front; out-of-order
 * bytes are stored at their final place in the window behind them and
 * tracked as a small set of intervals, so filling a hole makes them
 * readable without copying. It starts at IWN_RCV_INITIAL bytes and doubles
 * (up to the size asked for at creation) each time as many bytes as it
 * holds have passed through it: a flood of connections that send a few
 * bytes each costs 64 KiB apiece, not the full window (1 MiB on the raw
 * transport), while a data connection reaches the full window after
 * about a window's worth of bytes. The window only ever grows. */
#ifndef IWN_TCP_RCVBUF_H
#define IWN_TCP_RCVBUF_H

#include <stdint.h>

#define IWN_RCV_MAX_HOLES 16 /* out-of-order intervals tracked */
#define IWN_RCV_INITIAL (64u << 10) /* first allocation (>= the SYN's 65535 window) */

struct iwn_rcv_range {
	uint64_t start, end; /* stream offsets, [start, end) */
};

struct iwn_rcvbuf {
	uint8_t *buf;
	uint32_t cap, head, used; /* used in-order bytes unread, from head */
	uint32_t max;             /* cap grows up to this */
	uint64_t nxt;             /* stream offset of the next in-order byte */
	uint64_t grow_at;         /* nxt at which cap doubles next */
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
