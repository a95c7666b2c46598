/* Transmit segmentation offload (GSO/TSO) decisions for the MPA-aware
 * sender: a super-segment is handed to the kernel with a gso_size, and
 * the kernel (or the NIC) cuts it into wire segments of gso_size bytes,
 * the last one possibly shorter. Each wire segment must start on a record
 * (FPDU) boundary (RFC 5044 sec. 8), so a super-segment is only planned
 * over records of one size s (the last one may be shorter), with gso_size
 * a multiple of s that fits the MSS. Anything else goes as plain
 * segments. Pure functions over the send buffer: no I/O. */
#ifndef IWN_GSO_H
#define IWN_GSO_H

#include <stdint.h>

#include "tcp_sndbuf.h"

/* Largest super-segment payload: an IPv4 total length of 65535 less the
 * IPv4 header and the largest TCP header. */
#define IWN_GSO_MAX_PAYLOAD (65535u - 20u - 60u)

/* Plan a super-segment of the bytes from send-buffer offset off, at most
 * max bytes of them (window, congestion window and size limits already
 * applied), for wire segments of at most mss payload bytes.
 * Returns its length and sets *gso_size (a multiple of the record size,
 * <= mss) when it spans more than one wire segment; 0 (and *gso_size 0)
 * when a plain segment should go instead: records of unequal size, a
 * record larger than mss, or not enough data or room for two wire
 * segments. Without record marks the bytes are a plain stream and the
 * wire segments are mss long. */
uint32_t iwn_gso_plan(const struct iwn_sndbuf *sb, uint32_t off, uint32_t max, uint32_t mss, uint32_t *gso_size);

/* How many wire segments a super-segment of len bytes becomes. */
static inline uint32_t iwn_gso_segs(uint32_t len, uint32_t gso_size)
{
	return gso_size ? (len + gso_size - 1) / gso_size : 1;
}

#endif
