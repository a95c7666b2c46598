/* Out-of-order direct placement (RFC 5041 allows placement out of order;
 * delivery stays in order): see iw_raw_ooo_place in raw_transport.h. */
#include "raw_transport.h"

#include <string.h>

#include "ddp/ddp_wire.h"
#include "mpa/crc32c.h"
#include "rdmap/rdmap_wire.h"

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void iw_raw_ooo_place(struct iw_rdmap_conn *rc, const uint8_t *p, uint32_t len, struct iw_raw_stats *st)
{
	st->ooo_calls++;
	st->ooo_bytes += len;
	/* Without CRC an FPDU boundary cannot be told from payload; with
	 * markers towards us the FPDU is not contiguous. */
	const struct iw_rdmap_conn_cfg *cfg = iw_rdmap_config(rc);
	if (!iw_rdmap_running(rc) || !cfg->crc || cfg->markers_rx) {
		st->ooo_skipped++;
		return;
	}
	unsigned max_ulpdu = cfg->max_ulpdu_rx ? cfg->max_ulpdu_rx : IW_MPA_ULPDU_MAX;
	while (len >= IW_MPA_LEN_FIELD) {
		unsigned ulen = be16(p), flen = iw_mpa_fpdu_len(ulen);
		if (flen > len) {
			st->ooo_partial++;
			return;
		}
		if (ulen > max_ulpdu ||
		    iw_crc32c(p, flen - IW_MPA_CRC_LEN) != iw_crc32c_get_wire(p + flen - IW_MPA_CRC_LEN)) {
			st->ooo_bad_crc++;
			return; /* no boundary we can trust: stop here */
		}
		struct iw_ddp_hdr h;
		size_t hl = iw_ddp_hdr_decode(p + IW_MPA_LEN_FIELD, ulen, &h);
		/* Only what the engine would place without further state: a
		 * tagged RDMA WRITE segment with valid versions whose STag, TO
		 * range and REMOTE_WRITE right pass the engine's own lookup.
		 * Everything else waits for the in-order path, which also
		 * reports any error. */
		uint8_t *dst = NULL;
		size_t plen = hl ? ulen - hl : 0;
		if (hl && h.tagged && h.version == IW_DDP_VERSION && h.rsvd == 0 &&
		    (h.ulp_ctrl >> IW_RDMAP_CTRL_RV_SHIFT) == IW_RDMAP_VERSION &&
		    (h.ulp_ctrl & IW_RDMAP_CTRL_OPCODE_MASK) == IW_OP_WRITE &&
		    iw_rdmap_stag(rc, h.stag, h.to, plen, IW_RDMAP_ACC_REMOTE_WRITE, &dst) == IW_STAG_OK &&
		    (dst || plen == 0)) {
			if (plen)
				memcpy(dst, p + IW_MPA_LEN_FIELD + hl, plen);
			st->ooo_fpdus_placed++;
			st->ooo_bytes_placed += plen;
		} else {
			st->ooo_skipped++;
		}
		p += flen;
		len -= flen;
	}
}
