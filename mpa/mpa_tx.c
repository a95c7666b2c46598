/* FPDU transmit builder: a gather list around the caller's header and
 * payload, with ULPDU_LENGTH, markers, pad and CRC in per-FPDU scratch.
 *
 * Wire layout rules (see mpa_tx.h): markers sit at stream offsets that are
 * multiples of 512; the CRC covers every FPDU byte in stream order except
 * the CRC field itself (so markers before the CRC are covered). Because
 * FPDUs start 4-aligned and markers are 4 bytes, a marker never splits the
 * length field or the CRC; the code does not rely on that. */
#include "mpa_tx.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "iw_bytes.h"

#define MARKER_MASK (IW_MPA_MARKER_INTERVAL - 1u)

void iw_mpa_tx_init(struct iw_mpa_tx *tx, bool crc, bool markers)
{
	tx->crc = crc;
	tx->markers = markers;
	tx->stream_off = 0;
}

size_t iw_mpa_mulpdu(size_t emss, bool markers)
{
	size_t m;

	if (emss < 64)
		return 0;
	/* RFC 5044 sec. 4.1: the FPDU must be a multiple of 4 and fit emss;
	 * with markers assume the most markers a window of emss can hold. */
	m = emss - (IW_MPA_LEN_FIELD + IW_MPA_CRC_LEN) - (emss & 3u);
	if (markers)
		m -= IW_MPA_MARKER_LEN *
		     ((emss + IW_MPA_MARKER_INTERVAL - 1) / IW_MPA_MARKER_INTERVAL);
	return m > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : m;
}

/* Bytes of an FPDU without markers (the pad depends on ulpdu_len mod 4). */
static size_t content_len(size_t ulpdu_len)
{
	return IW_MPA_LEN_FIELD + ulpdu_len + iw_mpa_pad_len((unsigned)(ulpdu_len & 3u)) +
	       IW_MPA_CRC_LEN;
}

size_t iw_mpa_tx_wire_len(const struct iw_mpa_tx *tx, size_t ulpdu_len)
{
	size_t rem = content_len(ulpdu_len);
	size_t wire = rem;
	uint32_t pos = tx->stream_off;

	if (!tx->markers)
		return wire;
	/* A marker goes in wherever a 512 boundary is reached with FPDU bytes
	 * still to send (one at the very end belongs to the next FPDU). */
	while (rem) {
		size_t run;

		if ((pos & MARKER_MASK) == 0) {
			pos += IW_MPA_MARKER_LEN;
			wire += IW_MPA_MARKER_LEN;
			continue;
		}
		run = IW_MPA_MARKER_INTERVAL - (pos & MARKER_MASK);
		if (run > rem)
			run = rem;
		pos += (uint32_t)run;
		rem -= run;
	}
	return wire;
}

/* One walk over the FPDU in stream order. With iov == NULL it only counts
 * iovecs (nothing is written anywhere); otherwise it fills iov, the
 * markers and the running CRC. Adjacent pieces that are contiguous in
 * memory share one iovec. */
struct tx_walk {
	struct iw_mpa_tx_frame *f;
	struct iovec *iov;
	int n;
	const uint8_t *end; /* end of the last iovec, for merging */
	uint32_t start;
	uint32_t pos;
	uint16_t n_markers;
	bool markers;
	bool crc;
	uint32_t crc_state;
};

static void emit(struct tx_walk *w, const uint8_t *p, size_t len)
{
	if (w->n > 0 && p == w->end) {
		if (w->iov)
			w->iov[w->n - 1].iov_len += len;
	} else {
		if (w->iov) {
			w->iov[w->n].iov_base = (void *)(uintptr_t)p;
			w->iov[w->n].iov_len = len;
		}
		w->n++;
	}
	w->end = p + len;
}

static int walk_seg(struct tx_walk *w, const uint8_t *p, size_t len, bool crc_field)
{
	const uint8_t *seg = p;

	while (len) {
		size_t run = len;

		if (w->markers) {
			uint32_t in = w->pos & MARKER_MASK;

			if (in == 0) {
				uint8_t *mk;

				if (w->n_markers >= w->f->markers_cap || !w->f->markers)
					return -EINVAL;
				mk = w->f->markers[w->n_markers++];
				if (w->iov) {
					mk[0] = 0;
					mk[1] = 0;
					/* 16-bit field: a marker beyond 64 KiB into a
					 * (non-RFC-sized) FPDU wraps. */
					iw_put_be16(mk + 2, (uint16_t)(w->pos - w->start));
					/* A marker inside the CRC field is not covered. */
					if (w->crc && !(crc_field && p != seg))
						w->crc_state = iw_crc32c_update(w->crc_state, mk,
						                                IW_MPA_MARKER_LEN);
				}
				emit(w, mk, IW_MPA_MARKER_LEN);
				w->pos += IW_MPA_MARKER_LEN;
				continue;
			}
			if (run > IW_MPA_MARKER_INTERVAL - in)
				run = IW_MPA_MARKER_INTERVAL - in;
		}
		if (w->iov && w->crc && !crc_field)
			w->crc_state = iw_crc32c_update(w->crc_state, p, run);
		emit(w, p, run);
		p += run;
		len -= run;
		w->pos += (uint32_t)run;
	}
	return 0;
}

static int walk(struct tx_walk *w, const void *hdr, size_t hdr_len, const struct iovec *payload,
                int npayload, unsigned pad)
{
	int rc = walk_seg(w, w->f->len_be, IW_MPA_LEN_FIELD, false);

	if (!rc && hdr_len)
		rc = walk_seg(w, hdr, hdr_len, false);
	for (int i = 0; !rc && i < npayload; i++)
		if (payload[i].iov_len)
			rc = walk_seg(w, payload[i].iov_base, payload[i].iov_len, false);
	if (!rc)
		rc = walk_seg(w, w->f->trailer, pad, false);
	if (!rc)
		rc = walk_seg(w, w->f->trailer + pad, IW_MPA_CRC_LEN, true);
	return rc;
}

int iw_mpa_tx_build(struct iw_mpa_tx *tx, struct iw_mpa_tx_fpdu *fpdu, const void *hdr,
                    size_t hdr_len, const struct iovec *payload, int npayload, struct iovec *iov,
                    int iov_cap)
{
	if (!fpdu)
		return -EINVAL;
	/* On failure the fpdu is left as it was, marker room fields too. */
	struct iw_mpa_tx_frame old = fpdu->f;
	fpdu->f.markers = fpdu->markers;
	fpdu->f.markers_cap = IW_MPA_TX_MAX_MARKERS;
	int rc = iw_mpa_tx_build_frame(tx, &fpdu->f, hdr, hdr_len, payload, npayload, iov, iov_cap);
	if (rc < 0) {
		fpdu->f.markers = old.markers;
		fpdu->f.markers_cap = old.markers_cap;
	}
	return rc;
}

/* Append [p, p + len) to a gather list (iov NULL: only count), merging
 * with the previous entry when contiguous (the same rule as emit()). */
static int plain_put(struct iovec *iov, int n, const uint8_t **end, const uint8_t *p, size_t len)
{
	if (len == 0)
		return n;
	if (n > 0 && *end == p) {
		if (iov)
			iov[n - 1].iov_len += len;
	} else {
		if (iov) {
			iov[n].iov_base = (void *)(uintptr_t)p;
			iov[n].iov_len = len;
		}
		n++;
	}
	*end = p + len;
	return n;
}

static int plain_list(struct iovec *iov, const struct iw_mpa_tx_frame *fpdu, const uint8_t *len_at,
		      const uint8_t *hdr, size_t hdr_len, const struct iovec *payload, int npayload,
		      unsigned pad)
{
	const uint8_t *end = NULL;
	int n = plain_put(iov, 0, &end, len_at, IW_MPA_LEN_FIELD);

	n = plain_put(iov, n, &end, hdr, hdr_len);
	for (int i = 0; i < npayload; i++)
		n = plain_put(iov, n, &end, payload[i].iov_base, payload[i].iov_len);
	return plain_put(iov, n, &end, fpdu->trailer, pad + IW_MPA_CRC_LEN);
}

/* No markers (the common case): length field, header, payload, pad + CRC
 * in stream order, so one pass builds the list and the CRC without the
 * marker walk. ULPDU_LENGTH goes to len_at (fpdu->len_be, or the
 * caller's room right before hdr). Arguments are validated by the
 * caller; with len_at == fpdu->len_be the output is exactly walk()'s. */
static int build_plain(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fpdu, uint8_t *len_at,
		       const uint8_t *hdr, size_t hdr_len, const struct iovec *payload, int npayload,
		       size_t ulpdu_len, unsigned pad, struct iovec *iov, int iov_cap)
{
	int n;

	/* Count exactly first unless the worst case fits: nothing may change
	 * on -ENOBUFS. */
	if (iov_cap < npayload + 3 &&
	    plain_list(NULL, fpdu, len_at, hdr, hdr_len, payload, npayload, pad) > iov_cap)
		return -ENOBUFS;
	iw_put_be16(fpdu->len_be, (uint16_t)ulpdu_len);
	if (len_at != fpdu->len_be)
		memcpy(len_at, fpdu->len_be, IW_MPA_LEN_FIELD);
	memset(fpdu->trailer, 0, sizeof(fpdu->trailer));
	n = plain_list(iov, fpdu, len_at, hdr, hdr_len, payload, npayload, pad);
	if (tx->crc) {
		uint32_t st;
		uint8_t head[IW_MPA_LEN_FIELD + 64];

		/* Length field and header in one CRC call. */
		if (len_at + IW_MPA_LEN_FIELD == hdr || hdr_len == 0) {
			st = iw_crc32c_update(iw_crc32c_init(), len_at, IW_MPA_LEN_FIELD + hdr_len);
		} else if (hdr_len <= 64) {
			memcpy(head, len_at, IW_MPA_LEN_FIELD);
			memcpy(head + IW_MPA_LEN_FIELD, hdr, hdr_len);
			st = iw_crc32c_update(iw_crc32c_init(), head, IW_MPA_LEN_FIELD + hdr_len);
		} else {
			st = iw_crc32c_update(iw_crc32c_init(), len_at, IW_MPA_LEN_FIELD);
			st = iw_crc32c_update(st, hdr, hdr_len);
		}
		for (int i = 0; i < npayload; i++)
			if (payload[i].iov_len)
				st = iw_crc32c_update(st, payload[i].iov_base, payload[i].iov_len);
		if (pad)
			st = iw_crc32c_update(st, fpdu->trailer, pad);
		iw_crc32c_put_wire(fpdu->trailer + pad, iw_crc32c_final(st));
	}
	fpdu->n_markers = 0;
	fpdu->wire_len = (uint32_t)(IW_MPA_LEN_FIELD + ulpdu_len + pad + IW_MPA_CRC_LEN);
	tx->stream_off += fpdu->wire_len;
	return n;
}

static int build_frame(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fpdu, uint8_t *len_room,
		       const void *hdr, size_t hdr_len, const struct iovec *payload, int npayload,
		       struct iovec *iov, int iov_cap);

int iw_mpa_tx_build_frame(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fpdu, const void *hdr,
			  size_t hdr_len, const struct iovec *payload, int npayload, struct iovec *iov,
			  int iov_cap)
{
	return build_frame(tx, fpdu, NULL, hdr, hdr_len, payload, npayload, iov, iov_cap);
}

int iw_mpa_tx_build_frame_hr(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fpdu, uint8_t *hdr,
			     size_t hdr_len, const struct iovec *payload, int npayload,
			     struct iovec *iov, int iov_cap)
{
	if (!hdr)
		return -EINVAL;
	return build_frame(tx, fpdu, hdr - IW_MPA_LEN_FIELD, hdr, hdr_len, payload, npayload, iov,
			   iov_cap);
}

static int build_frame(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fpdu, uint8_t *len_room,
		       const void *hdr, size_t hdr_len, const struct iovec *payload, int npayload,
		       struct iovec *iov, int iov_cap)
{
	struct tx_walk w;
	size_t ulpdu_len = hdr_len;
	unsigned pad;
	long long worst;
	int rc;

	if (!tx || !fpdu || (!hdr && hdr_len) || npayload < 0 || (!payload && npayload) ||
	    iov_cap < 0 || (!iov && iov_cap))
		return -EINVAL;
	if (hdr_len > IW_MPA_ULPDU_MAX)
		return -EMSGSIZE;
	for (int i = 0; i < npayload; i++) {
		if (!payload[i].iov_base && payload[i].iov_len)
			return -EINVAL;
		if (payload[i].iov_len > IW_MPA_ULPDU_MAX - ulpdu_len)
			return -EMSGSIZE;
		ulpdu_len += payload[i].iov_len;
	}
	pad = iw_mpa_pad_len((unsigned)ulpdu_len);
	if (!tx->markers)
		return build_plain(tx, fpdu, len_room ? len_room : fpdu->len_be, hdr, hdr_len, payload,
				   npayload, ulpdu_len, pad, iov, iov_cap);

	memset(&w, 0, sizeof(w));
	w.f = fpdu;
	w.start = tx->stream_off;
	w.pos = tx->stream_off;
	w.markers = tx->markers;

	/* Count first (no side effects) unless iov_cap covers the worst case. */
	worst = tx->markers ? 2LL * (npayload + 2) + 2LL * IW_MPA_TX_MAX_MARKERS : npayload + 3LL;
	if (iov_cap < worst) {
		rc = walk(&w, hdr, hdr_len, payload, npayload, pad);
		if (rc)
			return rc;
		if (w.n > iov_cap)
			return -ENOBUFS;
		w.n = 0;
		w.end = NULL;
		w.pos = tx->stream_off;
		w.n_markers = 0;
	}

	iw_put_be16(fpdu->len_be, (uint16_t)ulpdu_len);
	memset(fpdu->trailer, 0, sizeof(fpdu->trailer));
	w.iov = iov;
	w.crc = tx->crc;
	w.crc_state = iw_crc32c_init();
	rc = walk(&w, hdr, hdr_len, payload, npayload, pad);
	if (rc)
		return rc;
	if (tx->crc)
		iw_crc32c_put_wire(fpdu->trailer + pad, iw_crc32c_final(w.crc_state));
	fpdu->n_markers = w.n_markers;
	fpdu->wire_len = w.pos - w.start;
	tx->stream_off = w.pos;
	return w.n;
}

int iw_mpa_tx_build_frame_inl(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fpdu, uint8_t *hdr,
			      size_t hdr_len, size_t room, const struct iovec *payload,
			      int npayload, struct iovec *iov, int iov_cap)
{
	size_t ulpdu_len = hdr_len, wire;
	unsigned pad;
	uint8_t *len_at, *p;

	/* Anything unusual (markers, bad arguments, no iovec room, too big)
	 * takes the general path, which validates and reports. */
	if (!tx || !fpdu || !hdr || tx->markers || npayload < 0 || (!payload && npayload) ||
	    iov_cap < 1 || !iov || hdr_len > room)
		return iw_mpa_tx_build_frame_hr(tx, fpdu, hdr, hdr_len, payload, npayload, iov,
						iov_cap);
	for (int i = 0; i < npayload; i++) {
		if ((!payload[i].iov_base && payload[i].iov_len) ||
		    payload[i].iov_len > room - ulpdu_len)
			return iw_mpa_tx_build_frame_hr(tx, fpdu, hdr, hdr_len, payload, npayload,
							iov, iov_cap);
		ulpdu_len += payload[i].iov_len;
	}
	pad = iw_mpa_pad_len((unsigned)ulpdu_len);
	if (room - ulpdu_len < pad + IW_MPA_CRC_LEN || ulpdu_len > IW_MPA_ULPDU_MAX)
		return iw_mpa_tx_build_frame_hr(tx, fpdu, hdr, hdr_len, payload, npayload, iov,
						iov_cap);

	len_at = hdr - IW_MPA_LEN_FIELD;
	iw_put_be16(len_at, (uint16_t)ulpdu_len);
	memcpy(fpdu->len_be, len_at, IW_MPA_LEN_FIELD);
	p = hdr + hdr_len;
	for (int i = 0; i < npayload; i++)
		if (payload[i].iov_len) {
			memcpy(p, payload[i].iov_base, payload[i].iov_len);
			p += payload[i].iov_len;
		}
	memset(fpdu->trailer, 0, sizeof(fpdu->trailer));
	/* Pad (0..3 bytes) zeroed with one fixed store: room holds pad + CRC
	 * behind p (checked above) and the CRC overwrites the rest. */
	memset(p, 0, IW_MPA_CRC_LEN);
	if (tx->crc)
		iw_crc32c_put_wire(fpdu->trailer + pad,
				   iw_crc32c_final(iw_crc32c_update(iw_crc32c_init(), len_at,
								    IW_MPA_LEN_FIELD + ulpdu_len + pad)));
	memcpy(p + pad, fpdu->trailer + pad, IW_MPA_CRC_LEN);
	wire = IW_MPA_LEN_FIELD + ulpdu_len + pad + IW_MPA_CRC_LEN;
	iov[0].iov_base = len_at;
	iov[0].iov_len = wire;
	fpdu->n_markers = 0;
	fpdu->wire_len = (uint32_t)wire;
	tx->stream_off += fpdu->wire_len;
	return 1;
}

void iw_mpa_tx_frame_contig(struct iw_mpa_tx *tx, struct iw_mpa_tx_frame *fr, uint8_t *ulpdu, size_t ulpdu_len,
			    struct iovec *iov)
{
	uint8_t *len_at = ulpdu - IW_MPA_LEN_FIELD, *p = ulpdu + ulpdu_len;
	unsigned pad = iw_mpa_pad_len((unsigned)ulpdu_len);
	size_t wire = IW_MPA_LEN_FIELD + ulpdu_len + pad + IW_MPA_CRC_LEN;

	iw_put_be16(len_at, (uint16_t)ulpdu_len);
	memcpy(fr->len_be, len_at, IW_MPA_LEN_FIELD);
	memset(fr->trailer, 0, sizeof(fr->trailer));
	memset(p, 0, IW_MPA_CRC_LEN); /* pad; the CRC overwrites the rest */
	if (tx->crc)
		iw_crc32c_put_wire(fr->trailer + pad, iw_crc32c_final(iw_crc32c_update(
							      iw_crc32c_init(), len_at, IW_MPA_LEN_FIELD + ulpdu_len + pad)));
	memcpy(p + pad, fr->trailer + pad, IW_MPA_CRC_LEN);
	iov[0].iov_base = len_at;
	iov[0].iov_len = wire;
	fr->n_markers = 0;
	fr->wire_len = (uint32_t)wire;
	tx->stream_off += fr->wire_len;
}
