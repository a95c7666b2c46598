/* DDP header encode / decode (RFC 5041 sec. 4). Pure byte shuffling: no
 * validation here, that is ddp_rx.c's job. */
#include "ddp_wire.h"

#include <string.h>

#include "iw_bytes.h"

size_t iw_ddp_hdr_encode(const struct iw_ddp_hdr *h, uint8_t *out)
{
	uint8_t c = IW_DDP_VERSION; /* reserved bits go out as zero */

	if (h->tagged)
		c |= IW_DDP_CTRL_TAGGED;
	if (h->last)
		c |= IW_DDP_CTRL_LAST;
	out[0] = c;
	out[1] = h->ulp_ctrl;
	if (h->tagged) {
		iw_put_be32(out + 2, h->stag);
		iw_put_be64(out + 6, h->to);
		return IW_DDP_TAGGED_HDR_LEN;
	}
	iw_put_be32(out + 2, h->ulp_word);
	iw_put_be32(out + 6, h->qn);
	iw_put_be32(out + 10, h->msn);
	iw_put_be32(out + 14, h->mo);
	return IW_DDP_UNTAGGED_HDR_LEN;
}

size_t iw_ddp_hdr_decode(const uint8_t *in, size_t len, struct iw_ddp_hdr *h)
{
	size_t need;

	if (len < 1)
		return 0;
	need = iw_ddp_hdr_len_ctrl(in[0]);
	if (len < need)
		return 0;
	memset(h, 0, sizeof(*h));
	h->tagged = (in[0] & IW_DDP_CTRL_TAGGED) != 0;
	h->last = (in[0] & IW_DDP_CTRL_LAST) != 0;
	h->rsvd = in[0] & IW_DDP_CTRL_RSVD;
	h->version = in[0] & IW_DDP_CTRL_DV_MASK;
	h->ulp_ctrl = in[1];
	if (h->tagged) {
		h->stag = iw_get_be32(in + 2);
		h->to = iw_get_be64(in + 6);
	} else {
		h->ulp_word = iw_get_be32(in + 2);
		h->qn = iw_get_be32(in + 6);
		h->msn = iw_get_be32(in + 10);
		h->mo = iw_get_be32(in + 14);
	}
	return need;
}
