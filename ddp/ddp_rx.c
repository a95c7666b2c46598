/* DDP receive validation and placement (RFC 5041 sec. 5, 7). The order of
 * checks decides which Terminate a broken segment earns; it follows the
 * contract in ddp_rx.h. */
#include "ddp_rx.h"

#include <string.h>

#define CAUSE_LOCAL_CATA IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_LOCAL_CATA, 0x00)
#define CAUSE_T(c) IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, (c))
#define CAUSE_U(c) IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, (c))

void iw_ddp_rx_init(struct iw_ddp_rx *rx, const struct iw_ddp_rx_ops *ops, void *ctx)
{
	memset(rx, 0, sizeof(*rx));
	rx->ops = ops;
	rx->ctx = ctx;
	for (int i = 0; i < IW_DDP_RX_NUM_QN; i++)
		rx->q[i].msn = 1;
}

struct iw_term_cause iw_ddp_stag_cause(enum iw_stag_status st)
{
	switch (st) {
	case IW_STAG_INVALID:
		return CAUSE_T(IW_ECODE_DDP_T_INV_STAG);
	case IW_STAG_BOUNDS:
		return CAUSE_T(IW_ECODE_DDP_T_BASE_BOUNDS);
	case IW_STAG_NOT_ASSOC:
		return CAUSE_T(IW_ECODE_DDP_T_STAG_NOT_ASSOC);
	case IW_STAG_ACCESS:
		return IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT,
				     IW_ECODE_RDMAP_ACCESS);
	case IW_STAG_OK:
	default:
		/* Not an error (or a status we do not know): asking is a local bug. */
		return CAUSE_LOCAL_CATA;
	}
}

static int rx_tagged(struct iw_ddp_rx *rx, struct iw_ddp_segment *seg, struct iw_term_cause *cause)
{
	size_t len = seg->payload_len;
	uint8_t *dest = NULL;
	enum iw_stag_status st;

	/* The payload occupies [TO, TO + len); its last byte must still be
	 * addressable in 64 bits. Checked before the lookup so a lookup never
	 * has to reason about a wrapping range. */
	if (len > 0 && (uint64_t)(len - 1) > UINT64_MAX - seg->hdr.to) {
		*cause = CAUSE_T(IW_ECODE_DDP_T_TO_WRAP);
		return -1;
	}
	if (!rx->ops || !rx->ops->tagged) {
		*cause = CAUSE_LOCAL_CATA;
		return -1;
	}
	/* A zero-length segment still proves the STag is valid for the ULP. */
	st = rx->ops->tagged(rx->ctx, seg->hdr.stag, seg->hdr.to, len, seg->hdr.ulp_ctrl, &dest);
	if (st != IW_STAG_OK) {
		*cause = iw_ddp_stag_cause(st);
		return -1;
	}
	if (len > 0) {
		if (!dest) { /* lookup said OK but gave no memory */
			*cause = CAUSE_LOCAL_CATA;
			return -1;
		}
		seg->dest[0].iov_base = dest;
		seg->dest[0].iov_len = len;
		seg->ndest = 1;
	}
	return 0;
}

static int rx_untagged(struct iw_ddp_rx *rx, struct iw_ddp_segment *seg,
		       struct iw_term_cause *cause)
{
	const struct iw_ddp_hdr *h = &seg->hdr;
	const struct iovec *sgl = NULL;
	struct iw_ddp_rx_queue *q;
	size_t total = 0, len = seg->payload_len;
	int nsge = 0;

	if (h->qn >= IW_DDP_RX_NUM_QN) {
		*cause = CAUSE_U(IW_ECODE_DDP_U_INV_QN);
		return -1;
	}
	q = &rx->q[h->qn];
	/* TCP delivers in order, so only the expected MSN is in range. */
	if (h->msn != q->msn) {
		*cause = CAUSE_U(IW_ECODE_DDP_U_MSN_RANGE);
		return -1;
	}
	if (!rx->ops || !rx->ops->untagged) {
		*cause = CAUSE_LOCAL_CATA;
		return -1;
	}
	*cause = CAUSE_U(IW_ECODE_DDP_U_NO_BUFFER); /* the lookup may refine it */
	if (rx->ops->untagged(rx->ctx, h->qn, h->msn, &sgl, &nsge, cause) != 0)
		return -1;
	if (h->mo != q->mo) {
		*cause = CAUSE_U(IW_ECODE_DDP_U_INV_MO);
		return -1;
	}
	/* The ULP handed us a buffer we cannot describe: its bug, not the peer's. */
	if (nsge < 0 || nsge > IW_DDP_MAX_SGE || (nsge > 0 && !sgl)) {
		*cause = CAUSE_LOCAL_CATA;
		return -1;
	}
	/* One pass: check each iovec, sum the buffer and slice [MO, MO + len)
	 * out of it into seg->dest (nsge <= IW_DDP_MAX_SGE, so it fits). The
	 * slices are only used when the range lies within the buffer, checked
	 * after the pass; on failure rx_begin drops them. */
	size_t mo = h->mo, want = len;
	for (int i = 0; i < nsge; i++) {
		size_t l = sgl[i].iov_len, chunk;

		if (l > SIZE_MAX - total || (l && !sgl[i].iov_base)) {
			*cause = CAUSE_LOCAL_CATA;
			return -1;
		}
		total += l;
		if (want == 0)
			continue;
		if (mo >= l) { /* wholly before the offset, or empty */
			mo -= l;
			continue;
		}
		chunk = l - mo < want ? l - mo : want;
		seg->dest[seg->ndest].iov_base = (uint8_t *)sgl[i].iov_base + mo;
		seg->dest[seg->ndest].iov_len = chunk;
		seg->ndest++;
		want -= chunk;
		mo = 0;
	}
	if (len > total || h->mo > total - len) {
		*cause = CAUSE_U(IW_ECODE_DDP_U_TOO_LONG);
		return -1;
	}
	return 0;
}

/* Checks from the version on; seg->hdr is decoded. */
static int rx_begin(struct iw_ddp_rx *rx, size_t payload_len, struct iw_ddp_segment *seg,
		    struct iw_term_cause *cause)
{
	int rc;

	seg->payload_len = payload_len;
	/* Reserved control bits are ignored on receive (RFC 5041 sec. 4.1). */
	if (seg->hdr.version != IW_DDP_VERSION) {
		*cause = seg->hdr.tagged ? CAUSE_T(IW_ECODE_DDP_T_INV_VERSION)
					 : CAUSE_U(IW_ECODE_DDP_U_INV_VERSION);
		return -1;
	}
	rc = seg->hdr.tagged ? rx_tagged(rx, seg, cause) : rx_untagged(rx, seg, cause);
	if (rc != 0)
		seg->ndest = 0;
	return rc;
}

int iw_ddp_rx_begin(struct iw_ddp_rx *rx, const uint8_t *hdr, size_t hdr_len, size_t payload_len,
		    struct iw_ddp_segment *seg, struct iw_term_cause *cause)
{
	/* dest[] is written only as far as ndest says; no need to clear it. */
	memset(&seg->hdr, 0, sizeof(seg->hdr));
	seg->payload_len = 0;
	seg->ndest = 0;
	/* MPA framed the ULPDU, so a header shorter than T announces is our
	 * caller's accounting error, not something the peer can be blamed for. */
	if (!hdr || iw_ddp_hdr_decode(hdr, hdr_len, &seg->hdr) == 0) {
		*cause = CAUSE_LOCAL_CATA;
		return -1;
	}
	return rx_begin(rx, payload_len, seg, cause);
}

int iw_ddp_rx_begin_decoded(struct iw_ddp_rx *rx, const struct iw_ddp_hdr *h, size_t payload_len,
			    struct iw_ddp_segment *seg, struct iw_term_cause *cause)
{
	seg->hdr = *h;
	seg->ndest = 0;
	return rx_begin(rx, payload_len, seg, cause);
}
