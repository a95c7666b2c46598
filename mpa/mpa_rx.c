/* FPDU receive deframer.
 *
 * The stream is cut into regions: a run of bytes that all go to one place
 * (length field, ULP header, sink iovec, discard buffer, pad, CRC, marker)
 * and end at the next field end or marker boundary. rx_region() says where
 * the next region is for a cursor position; rx_consume() accounts for bytes
 * that landed in it (CRC, checks, state changes, events). feed() copies
 * into regions, prepare() lists regions ahead of the real state (a cursor
 * copy) and commit() consumes them. Work is per region, not per byte.
 *
 * CRC coverage matches the transmitter: every FPDU byte in stream order
 * except the CRC field (markers before the CRC are covered).
 *
 * Details the header leaves open:
 * - feed() while a HEADER waits for set_sink() takes nothing (returns 0,
 *   NONE); a sink shorter than payload_len gets what fits, the rest is
 *   dropped (still CRC-checked).
 * - A prepared list holds at most one marker and one discard iovec (single
 *   internal buffers that commit() must read before they are reused). It
 *   may run past the length field into the two control bytes; if the
 *   length is invalid that ERROR comes first and the rest of the commit is
 *   dropped, as are any bytes committed after an ERROR.
 * - The marker position follows from stream_off: no marker state is kept. */
#include "mpa_rx.h"

#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "iw_bytes.h"

#define MARKER_MASK (IW_MPA_MARKER_INTERVAL - 1u)

enum rx_kind {
	K_MARKER,
	K_LEN,
	K_CTRL, /* first two ULPDU bytes: they decide the header length */
	K_HDR,
	K_SINK,
	K_DISCARD,
	K_PAD,
	K_CRC,
};

/* The position-related part of the state, so prepare() can look ahead. */
struct rx_cur {
	enum iw_mpa_rx_state state;
	uint32_t off;
	uint16_t have;
	uint32_t done;
	int idx;
	size_t soff;
};

static struct rx_cur cur_get(const struct iw_mpa_rx *rx)
{
	struct rx_cur c = {
		.state = rx->state,
		.off = rx->stream_off,
		.have = rx->have,
		.done = rx->payload_done,
		.idx = rx->sink_idx,
		.soff = rx->sink_off,
	};
	return c;
}

static uint16_t payload_len(const struct iw_mpa_rx *rx)
{
	return (uint16_t)(rx->ulpdu_len - rx->hdr_len);
}

static unsigned pad_len(const struct iw_mpa_rx *rx)
{
	return iw_mpa_pad_len(rx->ulpdu_len);
}

/* Skip exhausted and empty sink iovecs. */
static void sink_norm(const struct iw_mpa_rx *rx, int *idx, size_t *soff)
{
	while (*idx < rx->nsink && (*soff >= rx->sink[*idx].iov_len || !rx->sink[*idx].iov_base)) {
		(*idx)++;
		*soff = 0;
	}
}

/* Where the next bytes go at cursor c, and how many may go there before a
 * field or marker boundary (0: none accepted now). */
static size_t rx_region(const struct iw_mpa_rx *rx, const struct rx_cur *c, size_t discard_cap,
                        uint8_t **dst, enum rx_kind *kind)
{
	size_t lim = SIZE_MAX;
	size_t n;

	if (c->state == IW_MPA_RX_S_SINK || c->state == IW_MPA_RX_S_DEAD)
		return 0;
	if (rx->cfg.markers) {
		uint32_t in = c->off & MARKER_MASK;

		if (in < IW_MPA_MARKER_LEN) {
			*dst = (uint8_t *)rx->marker + in;
			*kind = K_MARKER;
			return IW_MPA_MARKER_LEN - in;
		}
		lim = IW_MPA_MARKER_INTERVAL - in;
	}
	switch (c->state) {
	case IW_MPA_RX_S_LEN:
		*dst = (uint8_t *)rx->len_buf + c->have;
		*kind = K_LEN;
		n = IW_MPA_LEN_FIELD - c->have;
		break;
	case IW_MPA_RX_S_HDR:
		*dst = (uint8_t *)rx->hdr + c->have;
		if (c->have < 2) {
			*kind = K_CTRL;
			n = 2u - c->have;
		} else {
			*kind = K_HDR;
			n = (size_t)rx->hdr_len - c->have;
		}
		break;
	case IW_MPA_RX_S_PAYLOAD:
		n = payload_len(rx) - c->done;
		if (c->idx < rx->nsink) {
			const struct iovec *v = &rx->sink[c->idx];

			*dst = (uint8_t *)v->iov_base + c->soff;
			*kind = K_SINK;
			if (n > v->iov_len - c->soff)
				n = v->iov_len - c->soff;
		} else {
			*dst = (uint8_t *)rx->discard;
			*kind = K_DISCARD;
			if (n > discard_cap)
				n = discard_cap;
		}
		break;
	case IW_MPA_RX_S_TRAILER: {
		unsigned pad = pad_len(rx);

		*dst = (uint8_t *)rx->trailer + c->have;
		if (c->have < pad) {
			*kind = K_PAD;
			n = pad - c->have;
		} else {
			*kind = K_CRC;
			n = pad + IW_MPA_CRC_LEN - c->have;
		}
		break;
	}
	default:
		return 0;
	}
	return n < lim ? n : lim;
}

/* Moves a look-ahead cursor over a whole region. Returns true where the
 * list must end: the next region depends on bytes not yet seen, or an
 * event follows. */
static bool cur_skip(const struct iw_mpa_rx *rx, struct rx_cur *c, enum rx_kind k, size_t n)
{
	c->off += (uint32_t)n;
	switch (k) {
	case K_MARKER:
		return false;
	case K_LEN:
		c->have = (uint16_t)(c->have + n);
		if (c->have == IW_MPA_LEN_FIELD) {
			/* A bad length is an error; reading the control bytes
			 * behind it then does no harm. */
			c->state = IW_MPA_RX_S_HDR;
			c->have = 0;
		}
		return false;
	case K_CTRL:
		c->have = (uint16_t)(c->have + n);
		return c->have == 2;
	case K_HDR:
		c->have = (uint16_t)(c->have + n);
		return c->have == rx->hdr_len;
	case K_SINK:
	case K_DISCARD:
		c->done += (uint32_t)n;
		if (k == K_SINK) {
			c->soff += n;
			sink_norm(rx, &c->idx, &c->soff);
		}
		if (c->done == payload_len(rx)) {
			c->state = IW_MPA_RX_S_TRAILER;
			c->have = 0;
		}
		return false;
	case K_PAD:
		c->have = (uint16_t)(c->have + n);
		return false;
	case K_CRC:
		c->have = (uint16_t)(c->have + n);
		return c->have == pad_len(rx) + IW_MPA_CRC_LEN;
	}
	return true;
}

static void ev_fill(const struct iw_mpa_rx *rx, struct iw_mpa_rx_event *ev,
                    enum iw_mpa_rx_event_type type)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->fpdu_off = rx->fpdu_start;
	ev->ulpdu_len = rx->ulpdu_len;
	if (type == IW_MPA_RX_ERROR) {
		ev->cause = rx->cause;
		return;
	}
	ev->hdr = rx->hdr;
	ev->hdr_len = rx->hdr_len;
	ev->payload_len = payload_len(rx);
}

/* Scatter len bytes from src over the caller's sink list (what does not
 * fit is dropped, as in the streaming path). */
static void scatter(const struct iovec *v, int nv, const uint8_t *src, size_t len)
{
	for (int i = 0; i < nv && len; i++) {
		size_t n = v[i].iov_len < len ? v[i].iov_len : len;

		if (!v[i].iov_base)
			continue;
		memcpy(v[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

/* Verified placement: the CRC matched, the staged payload may go out. */
static void place_staged(struct iw_mpa_rx *rx)
{
	if (rx->nvsink)
		scatter(rx->vsink, rx->nvsink, rx->stage_iov.iov_base, rx->stage_iov.iov_len);
	rx->nvsink = 0;
}

static bool fail(struct iw_mpa_rx *rx, struct iw_mpa_rx_event *ev, uint8_t ecode)
{
	rx->nvsink = 0; /* a staged payload is never placed */
	rx->state = IW_MPA_RX_S_DEAD;
	rx->cause = IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, ecode);
	ev_fill(rx, ev, IW_MPA_RX_ERROR);
	return true;
}

static bool header_done(struct iw_mpa_rx *rx, struct iw_mpa_rx_event *ev)
{
	rx->state = IW_MPA_RX_S_SINK;
	ev_fill(rx, ev, IW_MPA_RX_HEADER);
	return true;
}

static bool ctrl_done(struct iw_mpa_rx *rx, struct iw_mpa_rx_event *ev)
{
	uint16_t hl = 2, min = 2;

	if (rx->cfg.ulp_lens)
		rx->cfg.ulp_lens(rx->hdr, &hl, &min);
	if (hl < 2 || hl > IW_MPA_RX_MAX_HDR)
		return fail(rx, ev, IW_ECODE_MPA_LOCAL_CATA); /* broken ULP callback */
	rx->hdr_len = hl;
	rx->min_ulpdu = min;
	if (rx->ulpdu_len < hl || rx->ulpdu_len < min)
		return fail(rx, ev, IW_ECODE_MPA_MARKER_LEN);
	if (rx->have == hl)
		return header_done(rx, ev);
	return false;
}

/* A whole-FPDU CRC is not going to be used: rx->crc covers the length
 * field and the header, as if they had been summed when they arrived. */
static void crc_unwhole(struct iw_mpa_rx *rx)
{
	uint8_t lb[IW_MPA_LEN_FIELD];

	if (!rx->whole_pending)
		return;
	rx->whole_pending = false;
	iw_put_be16(lb, rx->ulpdu_len);
	rx->crc = iw_crc32c_update(iw_crc32c_init(), lb, sizeof(lb));
	rx->crc = iw_crc32c_update(rx->crc, rx->hdr, rx->hdr_len);
}

/* n bytes of region kind k arrived; bytes points at them. Returns true
 * with *ev filled when an event happened. */
static bool rx_consume(struct iw_mpa_rx *rx, enum rx_kind k, const uint8_t *bytes, size_t n,
                       struct iw_mpa_rx_event *ev)
{
	crc_unwhole(rx);
	if (rx->cfg.crc && k != K_CRC &&
	    !(k == K_MARKER && rx->state == IW_MPA_RX_S_TRAILER && rx->have > pad_len(rx)))
		rx->crc = iw_crc32c_update(rx->crc, bytes, n);
	rx->stream_off += (uint32_t)n;

	switch (k) {
	case K_MARKER:
		if ((rx->stream_off & MARKER_MASK) == IW_MPA_MARKER_LEN) {
			uint32_t at = rx->stream_off - IW_MPA_MARKER_LEN;

			/* Reserved bits are ignored; FPDUPTR is a 16-bit field. */
			if (iw_get_be16(rx->marker + 2) != (uint16_t)(at - rx->fpdu_start))
				return fail(rx, ev, IW_ECODE_MPA_MARKER_LEN);
		}
		return false;
	case K_LEN:
		rx->have = (uint16_t)(rx->have + n);
		if (rx->have < IW_MPA_LEN_FIELD)
			return false;
		rx->ulpdu_len = iw_get_be16(rx->len_buf);
		rx->have = 0;
		rx->state = IW_MPA_RX_S_HDR;
		if (rx->ulpdu_len < 2 || rx->ulpdu_len > rx->cfg.max_ulpdu)
			return fail(rx, ev, IW_ECODE_MPA_MARKER_LEN);
		return false;
	case K_CTRL:
		rx->have = (uint16_t)(rx->have + n);
		return rx->have == 2 ? ctrl_done(rx, ev) : false;
	case K_HDR:
		rx->have = (uint16_t)(rx->have + n);
		return rx->have == rx->hdr_len ? header_done(rx, ev) : false;
	case K_SINK:
	case K_DISCARD:
		rx->payload_done += (uint32_t)n;
		if (k == K_SINK) {
			rx->sink_off += n;
			sink_norm(rx, &rx->sink_idx, &rx->sink_off);
		}
		if (rx->payload_done == payload_len(rx)) {
			rx->state = IW_MPA_RX_S_TRAILER;
			rx->have = 0;
		}
		return false;
	case K_PAD:
		/* Pad content is not checked (RFC 5044), only CRC-covered. */
		rx->have = (uint16_t)(rx->have + n);
		return false;
	case K_CRC: {
		unsigned pad = pad_len(rx);

		rx->have = (uint16_t)(rx->have + n);
		if (rx->have < pad + IW_MPA_CRC_LEN)
			return false;
		if (rx->cfg.crc &&
		    iw_crc32c_final(rx->crc) != iw_crc32c_get_wire(rx->trailer + pad))
			return fail(rx, ev, IW_ECODE_MPA_CRC);
		place_staged(rx);
		ev_fill(rx, ev, IW_MPA_RX_FPDU);
		rx->state = IW_MPA_RX_S_LEN;
		rx->have = 0;
		rx->fpdu_start = rx->stream_off;
		rx->crc = iw_crc32c_init();
		return true;
	}
	}
	return false;
}

void iw_mpa_rx_init(struct iw_mpa_rx *rx, const struct iw_mpa_rx_config *cfg)
{
	memset(rx, 0, sizeof(*rx));
	if (cfg)
		rx->cfg = *cfg;
	if (!rx->cfg.max_ulpdu)
		rx->cfg.max_ulpdu = IW_MPA_ULPDU_MAX;
	/* Every accepted payload must fit the stage. */
	if (rx->cfg.stage && rx->cfg.stage_len < rx->cfg.max_ulpdu)
		rx->cfg.max_ulpdu = (uint16_t)(rx->cfg.stage_len > 2 ? rx->cfg.stage_len : 2);
	rx->state = IW_MPA_RX_S_LEN;
	rx->crc = iw_crc32c_init();
}

static bool dead(const struct iw_mpa_rx *rx, struct iw_mpa_rx_event *ev)
{
	if (rx->state != IW_MPA_RX_S_DEAD)
		return false;
	ev_fill(rx, ev, IW_MPA_RX_ERROR);
	return true;
}

/* Fast paths for copy mode without markers, taken only when the chunk
 * holds the whole field run they cover and every check they skip cannot
 * fail; anything else (bad length, short chunk, markers) goes through the
 * general region machinery, which then reports exactly as before. They
 * cut the per-FPDU work to one CRC call per event instead of one per
 * region; a small FPDU that arrived whole costs two calls in all. */

/* At an FPDU boundary: length field and the whole ULP header. Returns the
 * bytes consumed (0: not taken). */
static size_t fast_head(struct iw_mpa_rx *rx, const uint8_t *p, size_t len, struct iw_mpa_rx_event *ev)
{
	uint16_t ulen, hl = 2, min = 2;

	if (len < IW_MPA_LEN_FIELD + 2)
		return 0;
	ulen = iw_get_be16(p);
	if (ulen < 2 || ulen > rx->cfg.max_ulpdu)
		return 0;
	if (rx->cfg.ulp_lens)
		rx->cfg.ulp_lens(p + IW_MPA_LEN_FIELD, &hl, &min);
	if (hl < 2 || hl > IW_MPA_RX_MAX_HDR || ulen < hl || ulen < min || len < (size_t)IW_MPA_LEN_FIELD + hl)
		return 0;
	rx->ulpdu_len = ulen;
	rx->hdr_len = hl;
	rx->min_ulpdu = min;
	rx->have = hl;
	/* Fixed sizes for the two common header lengths (18 and 14, DDP's
	 * untagged and tagged headers; only a copy hint, MPA does not depend
	 * on DDP): a few moves instead of a variable-length copy. */
	if (hl == 18)
		memcpy(rx->hdr, p + IW_MPA_LEN_FIELD, 18);
	else if (hl == 14)
		memcpy(rx->hdr, p + IW_MPA_LEN_FIELD, 14);
	else
		memcpy(rx->hdr, p + IW_MPA_LEN_FIELD, hl);
	if (rx->cfg.crc) {
		size_t body = (size_t)IW_MPA_LEN_FIELD + ulen + iw_mpa_pad_len(ulen);

		/* The whole FPDU is here: one CRC pass over all of it now. */
		if (len >= body + IW_MPA_CRC_LEN) {
			rx->crc_whole = iw_crc32c_final(iw_crc32c_update(rx->crc, p, body));
			rx->whole_tail = p + IW_MPA_LEN_FIELD + hl;
			rx->whole_pending = true;
		} else {
			rx->crc = iw_crc32c_update(rx->crc, p, (size_t)IW_MPA_LEN_FIELD + hl);
		}
	}
	rx->stream_off += (uint32_t)(IW_MPA_LEN_FIELD + hl);
	header_done(rx, ev);
	return (size_t)IW_MPA_LEN_FIELD + hl;
}

/* Payload (or what is left of it) plus pad and CRC, all in the chunk:
 * place into the sink, drop what does not fit, check the CRC. Returns the
 * bytes consumed (0: not taken). */
static size_t fast_tail(struct iw_mpa_rx *rx, const uint8_t *p, size_t len, struct iw_mpa_rx_event *ev)
{
	size_t left, pad = pad_len(rx), total;
	const uint8_t *q = p;

	if (rx->state == IW_MPA_RX_S_PAYLOAD)
		left = payload_len(rx) - rx->payload_done;
	else if (rx->state == IW_MPA_RX_S_TRAILER && rx->have == 0)
		left = 0;
	else
		return 0;
	total = left + pad + IW_MPA_CRC_LEN;
	if (len < total)
		return 0;
	uint32_t crc = 0;
	if (rx->cfg.crc) {
		if (rx->whole_pending && p == rx->whole_tail && rx->payload_done == 0) {
			crc = rx->crc_whole; /* these very bytes were summed with the header */
			rx->whole_pending = false;
		} else {
			crc_unwhole(rx);
			crc = iw_crc32c_final(iw_crc32c_update(rx->crc, p, left + pad));
		}
	}
	/* Verified placement of a payload wholly in this chunk: check the CRC
	 * on the input, then copy once, straight to the caller's sink. */
	bool direct = rx->nvsink && rx->payload_done == 0;
	rx->payload_done += (uint32_t)left;
	while (!direct && left && rx->sink_idx < rx->nsink) {
		const struct iovec *v = &rx->sink[rx->sink_idx];
		size_t n = v->iov_len - rx->sink_off;

		if (n > left)
			n = left;
		memcpy((uint8_t *)v->iov_base + rx->sink_off, q, n);
		q += n;
		left -= n;
		rx->sink_off += n;
		sink_norm(rx, &rx->sink_idx, &rx->sink_off);
	}
	/* Whatever is left has no sink: dropped, as in the general path. */
	rx->stream_off += (uint32_t)total;
	memcpy(rx->trailer, p + total - pad - IW_MPA_CRC_LEN, pad + IW_MPA_CRC_LEN);
	rx->have = (uint16_t)(pad + IW_MPA_CRC_LEN);
	rx->state = IW_MPA_RX_S_TRAILER;
	if (rx->cfg.crc && crc != iw_crc32c_get_wire(rx->trailer + pad)) {
		fail(rx, ev, IW_ECODE_MPA_CRC);
		return total;
	}
	if (direct) {
		scatter(rx->vsink, rx->nvsink, p, left);
		rx->nvsink = 0;
	} else {
		place_staged(rx);
	}
	ev_fill(rx, ev, IW_MPA_RX_FPDU);
	rx->state = IW_MPA_RX_S_LEN;
	rx->have = 0;
	rx->fpdu_start = rx->stream_off;
	rx->crc = iw_crc32c_init();
	return total;
}

size_t iw_mpa_rx_feed(struct iw_mpa_rx *rx, const void *data, size_t len,
                      struct iw_mpa_rx_event *ev)
{
	const uint8_t *p = data;
	size_t done = 0;

	if (dead(rx, ev))
		return 0;
	/* A fast path that takes the bytes fills *ev itself; one that does
	 * not has not touched it. */
	if (!rx->cfg.markers) {
		if (rx->state == IW_MPA_RX_S_LEN && rx->have == 0)
			done = fast_head(rx, p, len, ev);
		else
			done = fast_tail(rx, p, len, ev);
		if (done)
			return done;
	}
	memset(ev, 0, sizeof(*ev));
	while (done < len) {
		struct rx_cur c = cur_get(rx);
		enum rx_kind k;
		uint8_t *dst;
		size_t n = rx_region(rx, &c, SIZE_MAX, &dst, &k);

		if (!n)
			break;
		if (n > len - done)
			n = len - done;
		/* Dropped payload needs no copy: the CRC reads the input. */
		if (k != K_DISCARD)
			memcpy(dst, p + done, n);
		done += n;
		if (rx_consume(rx, k, p + done - n, n, ev))
			break;
	}
	return done;
}

int iw_mpa_rx_prepare(struct iw_mpa_rx *rx, struct iovec *iov, int cap)
{
	struct rx_cur c = cur_get(rx);
	bool marker = false;
	int n = 0;

	if (!iov)
		return 0;
	while (n < cap) {
		enum rx_kind k;
		uint8_t *dst;
		size_t len = rx_region(rx, &c, sizeof(rx->discard), &dst, &k);

		if (!len)
			break;
		/* One marker buffer: a second marker would overwrite the first
		 * before commit() checks it. */
		if (k == K_MARKER) {
			if (marker)
				break;
			marker = true;
		}
		iov[n].iov_base = dst;
		iov[n].iov_len = len;
		n++;
		/* Likewise one discard buffer per list. */
		if (k == K_DISCARD || cur_skip(rx, &c, k, len))
			break;
	}
	return n;
}

void iw_mpa_rx_commit(struct iw_mpa_rx *rx, size_t n, struct iw_mpa_rx_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (dead(rx, ev))
		return;
	/* Replays the regions prepare() listed, from the real state. */
	while (n) {
		struct rx_cur c = cur_get(rx);
		enum rx_kind k;
		uint8_t *dst;
		size_t r = rx_region(rx, &c, sizeof(rx->discard), &dst, &k);

		if (!r)
			break;
		if (r > n)
			r = n;
		n -= r;
		if (rx_consume(rx, k, dst, r, ev))
			break;
	}
}

void iw_mpa_rx_set_sink(struct iw_mpa_rx *rx, const struct iovec *sink, int nsink)
{
	if (rx->state != IW_MPA_RX_S_SINK)
		return;
	if (!sink || nsink <= 0) {
		sink = NULL;
		nsink = 0;
	}
	rx->nvsink = 0;
	if (sink && rx->cfg.stage && rx->cfg.crc && payload_len(rx)) {
		/* Verified placement: the payload goes to the stage first. */
		rx->vsink = sink;
		rx->nvsink = nsink;
		rx->stage_iov.iov_base = rx->cfg.stage;
		rx->stage_iov.iov_len = payload_len(rx) < rx->cfg.stage_len ? payload_len(rx) : rx->cfg.stage_len;
		sink = &rx->stage_iov;
		nsink = 1;
	}
	rx->sink = sink;
	rx->nsink = nsink;
	rx->sink_idx = 0;
	rx->sink_off = 0;
	sink_norm(rx, &rx->sink_idx, &rx->sink_off);
	rx->payload_done = 0;
	rx->have = 0;
	rx->state = payload_len(rx) ? IW_MPA_RX_S_PAYLOAD : IW_MPA_RX_S_TRAILER;
}

bool iw_mpa_rx_drop_sink(struct iw_mpa_rx *rx)
{
	bool staged = rx->nvsink != 0;

	rx->nvsink = 0; /* a staged payload is then never placed */
	if (rx->state != IW_MPA_RX_S_PAYLOAD)
		return staged;
	/* An index past the list sends the remaining bytes to discard. */
	rx->sink_idx = rx->nsink;
	rx->sink_off = 0;
	return true;
}
