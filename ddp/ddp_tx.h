/* DDP transmit segmentation (RFC 5041 sec. 5).
 *
 * Cuts one ULP message into DDP segments that fit a MULPDU: sets T, L,
 * STag + TO (tagged, TO advancing per segment) or QN + MSN + MO
 * (untagged, MO advancing), and slices the message's payload iovecs
 * without copying. A zero-length message is one segment with L=1.
 * A message longer than one MULPDU's payload is cut into the fewest
 * segments, of near-equal size (multiples of 4 except possibly the last). */
#ifndef IW_DDP_TX_H
#define IW_DDP_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ddp_wire.h"

#define IW_DDP_TX_MAX_HDR 72 /* DDP header + ULP extension (Read Request or RFC 7306 Atomic Request body) */

struct iw_ddp_tx_msg {
	/* set by the caller (iw_ddp_tx_msg_init*) */
	bool tagged;
	uint8_t ulp_ctrl;
	uint32_t stag;
	uint64_t to;
	uint32_t ulp_word;
	uint32_t qn;
	uint32_t msn;
	const uint8_t *ulp_ext; /* bytes appended to every header (0..54), e.g. Read Request body */
	uint8_t ulp_ext_len;
	const struct iovec *sgl;
	int nsge;
	size_t len; /* total payload bytes in sgl */
	/* progress */
	size_t off;
	int sge_idx;
	size_t sge_off;
	bool started;
};

void iw_ddp_tx_msg_tagged(struct iw_ddp_tx_msg *m, uint8_t ulp_ctrl, uint32_t stag, uint64_t to,
			  const struct iovec *sgl, int nsge);
void iw_ddp_tx_msg_untagged(struct iw_ddp_tx_msg *m, uint8_t ulp_ctrl, uint32_t ulp_word,
			    uint32_t qn, uint32_t msn, const struct iovec *sgl, int nsge);

/* True once the segment carrying L=1 has been produced. Inline: the
 * engine asks once per FPDU built. */
static inline bool iw_ddp_tx_done(const struct iw_ddp_tx_msg *m)
{
	return m->started && m->off == m->len;
}

/* Produce the next segment: header (+ ulp_ext) into hdr (IW_DDP_TX_MAX_HDR
 * bytes), payload slices into iov. mulpdu is the largest ULPDU (header +
 * payload) allowed. Returns the number of payload iovecs (>= 0), or
 * -EINVAL when mulpdu cannot hold the header plus one byte (unless the
 * remaining payload is empty), -ENOBUFS when iov_cap is too small to make
 * progress. *hdr_len and *payload_len are set on success. */
int iw_ddp_tx_next(struct iw_ddp_tx_msg *m, size_t mulpdu, uint8_t *hdr, size_t *hdr_len,
		   struct iovec *iov, int iov_cap, size_t *payload_len);

#endif
