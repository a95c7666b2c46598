/* DDP receive validation and placement (RFC 5041 sec. 5, 7).
 *
 * For every segment header: check the DDP version, then
 *  tagged:   resolve STag + TO + length through the caller's lookup, which
 *            checks existence, key, protection domain / stream, bounds and
 *            access rights (64-bit TO + length overflow is caught here
 *            first);
 *  untagged: QN in range, MSN equal to the queue's expected MSN (the
 *            stream is in order), MO equal to the bytes already placed for
 *            that message, a buffer posted for it and large enough.
 * Each failure is mapped to its RFC 5041 / 5040 (layer, etype, ecode).
 * On success the destination is returned as iovecs for direct placement.
 * After the FPDU passed MPA's checks, iw_ddp_rx_end() advances MO / MSN. */
#ifndef IW_DDP_RX_H
#define IW_DDP_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <iwarp/term.h>

#include "ddp_wire.h"

#define IW_DDP_MAX_SGE 32 /* most iovecs an untagged buffer may have */

/* Result of a tagged-buffer lookup. */
enum iw_stag_status {
	IW_STAG_OK = 0,
	IW_STAG_INVALID,   /* unknown index, wrong key, invalidated -> (1,1,0x00) */
	IW_STAG_BOUNDS,    /* TO/length outside the region -> (1,1,0x01) */
	IW_STAG_NOT_ASSOC, /* other PD / stream -> (1,1,0x02) */
	IW_STAG_ACCESS,    /* right missing -> (0,1,0x02), an RDMAP remote protection error */
};

struct iw_ddp_rx_ops {
	/* Tagged: where len bytes at TO of stag go. ulp_ctrl (RDMAP control
	 * byte) tells which access right the ULP requires. */
	enum iw_stag_status (*tagged)(void *ctx, uint32_t stag, uint64_t to, size_t len,
				      uint8_t ulp_ctrl, uint8_t **dest);
	/* Untagged: the buffer posted for (qn, msn). Returns 0 and the
	 * buffer's iovecs, or -1 when there is none; *cause may then be set
	 * to a more specific error than the default (1,2,0x02). */
	int (*untagged)(void *ctx, uint32_t qn, uint32_t msn, const struct iovec **sgl, int *nsge,
			struct iw_term_cause *cause);
};

struct iw_ddp_rx_queue {
	uint32_t msn; /* expected MSN of the message in progress or next */
	uint32_t mo;  /* bytes of that message placed so far */
};

struct iw_ddp_rx {
	const struct iw_ddp_rx_ops *ops;
	void *ctx;
	struct iw_ddp_rx_queue q[IW_DDP_RX_NUM_QN];
};

/* A validated segment and where its payload goes. */
struct iw_ddp_segment {
	struct iw_ddp_hdr hdr;
	size_t payload_len;
	struct iovec dest[IW_DDP_MAX_SGE];
	int ndest;
};

/* MSNs start at 1 on every queue. */
void iw_ddp_rx_init(struct iw_ddp_rx *rx, const struct iw_ddp_rx_ops *ops, void *ctx);

/* Validate the header (hdr_len bytes as delivered by MPA) of a segment
 * carrying payload_len bytes. Returns 0 and fills *seg, or -1 and *cause. */
int iw_ddp_rx_begin(struct iw_ddp_rx *rx, const uint8_t *hdr, size_t hdr_len, size_t payload_len,
		    struct iw_ddp_segment *seg, struct iw_term_cause *cause);

/* The same for a header the caller has decoded already (with
 * iw_ddp_hdr_decode, which succeeded): saves the second decode. */
int iw_ddp_rx_begin_decoded(struct iw_ddp_rx *rx, const struct iw_ddp_hdr *h, size_t payload_len,
			    struct iw_ddp_segment *seg, struct iw_term_cause *cause);

/* The segment's FPDU completed cleanly: advance the queue state. Returns
 * true when it completed an untagged message (L=1) or a tagged message. */
static inline bool iw_ddp_rx_end(struct iw_ddp_rx *rx, const struct iw_ddp_segment *seg)
{
	struct iw_ddp_rx_queue *q; /* inline: once per received FPDU */

	if (seg->hdr.tagged)
		return seg->hdr.last;
	if (seg->hdr.qn >= IW_DDP_RX_NUM_QN) /* never passed rx_begin */
		return false;
	q = &rx->q[seg->hdr.qn];
	q->mo += (uint32_t)seg->payload_len;
	if (seg->hdr.last) {
		q->msn++; /* wraps modulo 2^32 */
		q->mo = 0;
		return true;
	}
	return false;
}

/* Map a lookup status to its Terminate cause. */
struct iw_term_cause iw_ddp_stag_cause(enum iw_stag_status st);

#endif
