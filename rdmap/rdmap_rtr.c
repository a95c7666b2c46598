/* The RFC 6581 RTR frame a connection's initiator or responder sends
 * first (see rdmap_conn.h). */
#include "rdmap_conn.h"

int iw_rdmap_build_rtr(struct iw_rdmap_conn *c, struct iw_mpa_tx_frame *fr,
		       uint8_t (*markers)[IW_MPA_MARKER_LEN], uint8_t *hdr, struct iovec *iov, int iov_cap)
{
	struct iw_ddp_hdr h = { .tagged = true, .last = true, .ulp_ctrl = iw_rdmap_ctrl(IW_OP_WRITE) };
	size_t hl = iw_ddp_hdr_encode(&h, hdr);

	fr->markers = markers;
	fr->markers_cap = IW_RDMAP_RTR_MARKERS;
	return iw_mpa_tx_build_frame(&c->mpa_tx, fr, hdr, hl, NULL, 0, iov, iov_cap);
}
