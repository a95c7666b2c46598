/* DDP transmit segmentation (RFC 5041 sec. 5): one ULP message becomes a
 * run of segments, each at most one MULPDU, whose payloads are slices of
 * the caller's iovecs (zero copy). */
#include "ddp_tx.h"

#include <errno.h>
#include <string.h>

#include "iw_bytes.h"

static void msg_common(struct iw_ddp_tx_msg *m, uint8_t ulp_ctrl, const struct iovec *sgl,
		       int nsge)
{
	memset(m, 0, sizeof(*m));
	m->ulp_ctrl = ulp_ctrl;
	m->sgl = sgl;
	m->nsge = (sgl && nsge > 0) ? nsge : 0;
	for (int i = 0; i < m->nsge; i++)
		m->len += sgl[i].iov_len;
}

void iw_ddp_tx_msg_tagged(struct iw_ddp_tx_msg *m, uint8_t ulp_ctrl, uint32_t stag, uint64_t to,
			  const struct iovec *sgl, int nsge)
{
	msg_common(m, ulp_ctrl, sgl, nsge);
	m->tagged = true;
	m->stag = stag;
	m->to = to;
}

void iw_ddp_tx_msg_untagged(struct iw_ddp_tx_msg *m, uint8_t ulp_ctrl, uint32_t ulp_word,
			    uint32_t qn, uint32_t msn, const struct iovec *sgl, int nsge)
{
	msg_common(m, ulp_ctrl, sgl, nsge);
	m->tagged = false;
	m->ulp_word = ulp_word;
	m->qn = qn;
	m->msn = msn;
}

static void *slice_base(const struct iovec *v, size_t off)
{
	/* NULL + 0 is undefined in C; only a non-empty entry gets an offset. */
	return off ? (uint8_t *)v->iov_base + off : v->iov_base;
}

/* The header straight into hdr, the bytes iw_ddp_hdr_encode writes
 * (version IW_DDP_VERSION, reserved bits zero), without building a struct
 * iw_ddp_hdr per segment (unit_ddp_tx checks both agree). */
static inline void put_hdr(const struct iw_ddp_tx_msg *m, uint8_t *hdr, size_t base_len, bool last)
{
	hdr[0] = (uint8_t)(IW_DDP_VERSION | (m->tagged ? IW_DDP_CTRL_TAGGED : 0) | (last ? IW_DDP_CTRL_LAST : 0));
	hdr[1] = m->ulp_ctrl;
	if (m->tagged) {
		iw_put_be32(hdr + 2, m->stag);
		/* a wrap is the ULP's bug; the peer catches it */
		iw_put_be64(hdr + 6, m->to + (uint64_t)m->off);
	} else {
		iw_put_be32(hdr + 2, m->ulp_word);
		iw_put_be32(hdr + 6, m->qn);
		iw_put_be32(hdr + 10, m->msn);
		iw_put_be32(hdr + 14, (uint32_t)m->off);
	}
	if (m->ulp_ext_len)
		memcpy(hdr + base_len, m->ulp_ext, m->ulp_ext_len);
}

int iw_ddp_tx_next(struct iw_ddp_tx_msg *m, size_t mulpdu, uint8_t *hdr, size_t *hdr_len,
		   struct iovec *iov, int iov_cap, size_t *payload_len)
{
	size_t base_len = m->tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
	size_t htot = base_len + m->ulp_ext_len;
	size_t remaining, budget, take = 0, soff = m->sge_off;
	int idx = m->sge_idx, n = 0;

	/* Every small message: one segment carrying the whole message from at
	 * most one iovec. The general path's checks hold by the conditions
	 * (len fits the MULPDU, so MO cannot overflow); no slicing to do. Only
	 * this function moves the progress fields, together with started:
	 * before the first segment they are all zero. */
	if (!m->started && m->nsge <= 1 && htot <= IW_DDP_TX_MAX_HDR &&
	    (!m->ulp_ext_len || m->ulp_ext) && mulpdu >= htot && m->len <= mulpdu - htot &&
	    (m->nsge == 0 ? m->len == 0 : (m->sgl[0].iov_len == m->len && (m->len == 0 || iov_cap >= 1)))) {
		if (m->len) {
			iov[0] = m->sgl[0];
			n = 1;
		}
		put_hdr(m, hdr, base_len, true);
		*hdr_len = htot;
		*payload_len = m->len;
		m->off = m->len;
		m->sge_idx = m->nsge;
		m->started = true;
		return n;
	}

	if (iw_ddp_tx_done(m) || m->off > m->len)
		return -EINVAL;
	if (htot > IW_DDP_TX_MAX_HDR || (m->ulp_ext_len && !m->ulp_ext))
		return -EINVAL;
	/* MO is 32 bits: an untagged message cannot exceed 4 GiB - 1. */
	if (!m->tagged && m->len > UINT32_MAX)
		return -EINVAL;
	remaining = m->len - m->off;
	if (mulpdu < htot || (remaining > 0 && mulpdu - htot < 1))
		return -EINVAL;
	budget = remaining;
	if (remaining > mulpdu - htot) {
		/* The fewest segments, of near-equal size (multiples of 4: no
		 * pad but in the last), rather than full ones and a small
		 * remainder: a tiny trailing FPDU costs the receiver an extra
		 * read or a copy. Recomputed per segment, so the count still
		 * drops by one each time. */
		size_t cap = mulpdu - htot, nseg = (remaining + cap - 1) / cap;

		budget = ((remaining + nseg - 1) / nseg + 3) & ~(size_t)3;
		if (budget > cap)
			budget = cap;
	}

	while (take < budget && idx < m->nsge) {
		const struct iovec *v = &m->sgl[idx];
		size_t avail = v->iov_len - soff, chunk;

		if (avail == 0) { /* zero-length entry, or this one is used up */
			idx++;
			soff = 0;
			continue;
		}
		if (n >= iov_cap)
			break;
		chunk = avail < budget - take ? avail : budget - take;
		iov[n].iov_base = slice_base(v, soff);
		iov[n].iov_len = chunk;
		n++;
		take += chunk;
		soff += chunk;
		if (soff == v->iov_len) {
			idx++;
			soff = 0;
		}
	}
	if (take == 0 && budget > 0)
		/* Out of iovec room, or m->len claims more than sgl holds. */
		return idx < m->nsge ? -ENOBUFS : -EINVAL;

	put_hdr(m, hdr, base_len, m->off + take == m->len);
	*hdr_len = htot;
	*payload_len = take;

	m->off += take;
	m->sge_idx = idx;
	m->sge_off = soff;
	m->started = true;
	return n;
}
