/* FPDU test helpers (see iwt_fpdu.h). */
#include "iwt_fpdu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"

#define GUARD 16
#define GUARD_BYTE 0xA5

void iwt_fpdu_ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	if (ctrl[0] & 0x80) {
		*hdr_len = 14;
		*min_ulpdu = 14;
		return;
	}
	*hdr_len = 18;
	*min_ulpdu = (ctrl[1] & 0x0F) == 1 ? 46 : 18;
}

uint32_t iwt_fpdu_crc32c_ref(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
	}
	return ~c;
}

int iwt_fpdu_split(uint64_t *rng, const void *base, size_t len, struct iovec *iov, int max)
{
	const uint8_t *p = base;
	size_t rem = len;
	int k = (int)iwt_rand_range(rng, 1, (uint64_t)max);

	for (int i = 0; i < k; i++) {
		size_t take;

		if (i == k - 1)
			take = rem;
		else if (iwt_rand(rng) % 4 == 0)
			take = 0;
		else
			take = (size_t)iwt_rand_range(rng, 0, 2 * rem / (size_t)(k - i));
		if (take > rem)
			take = rem;
		iov[i].iov_base = (take == 0 && iwt_rand(rng) % 2) ? NULL : (void *)(uintptr_t)p;
		iov[i].iov_len = take;
		p += take;
		rem -= take;
	}
	return k;
}

ssize_t iwt_fpdu_build_flat(struct iw_mpa_tx *tx, const void *hdr, size_t hdr_len,
                            const struct iovec *payload, int npayload, uint8_t *out, size_t cap)
{
	struct iw_mpa_tx_fpdu f;
	int iov_cap = 2 * (npayload + 2) + 2 * IW_MPA_TX_MAX_MARKERS;
	struct iovec *iov = malloc(sizeof(*iov) * (size_t)iov_cap);
	size_t want = 0, pos = 0;
	int n;

	if (!iov)
		return -ENOMEM;
	for (int i = 0; i < npayload; i++)
		want += payload[i].iov_len;
	if (hdr_len + want <= IW_MPA_ULPDU_MAX && iw_mpa_tx_wire_len(tx, hdr_len + want) > cap) {
		free(iov);
		return -ENOSPC;
	}
	n = iw_mpa_tx_build(tx, &f, hdr, hdr_len, payload, npayload, iov, iov_cap);
	if (n < 0) {
		free(iov);
		return n;
	}
	for (int i = 0; i < n; i++) {
		memcpy(out + pos, iov[i].iov_base, iov[i].iov_len);
		pos += iov[i].iov_len;
	}
	free(iov);
	return pos == f.f.wire_len ? (ssize_t)pos : -EPROTO;
}

ssize_t iwt_fpdu_stream(bool crc, bool markers, const struct iwt_fpdu_msg *msgs, int n,
                        uint8_t *out, size_t cap, uint32_t *offs, uint64_t *split_rng)
{
	struct iw_mpa_tx tx;
	struct iovec pl[16];
	size_t pos = 0;

	iw_mpa_tx_init(&tx, crc, markers);
	for (int i = 0; i < n; i++) {
		int npl = 1;
		ssize_t r;

		if (split_rng) {
			npl =
			    iwt_fpdu_split(split_rng, msgs[i].payload, msgs[i].payload_len, pl, 16);
		} else {
			pl[0].iov_base = (void *)(uintptr_t)msgs[i].payload;
			pl[0].iov_len = msgs[i].payload_len;
		}
		if (offs)
			offs[i] = tx.stream_off;
		r = iwt_fpdu_build_flat(&tx, msgs[i].hdr, msgs[i].hdr_len, pl, npl, out + pos,
		                        cap - pos);
		if (r < 0)
			return r;
		pos += (size_t)r;
	}
	return (ssize_t)pos;
}

/* Reference encoder: emits bytes one at a time and drops a marker in
 * whenever the stream offset reaches a multiple of 512. */
struct ref_out {
	uint8_t *out;
	size_t cap;
	size_t n;
	uint32_t start;
	bool markers;
};

static void raw_put(struct ref_out *o, uint8_t b)
{
	if (o->n < o->cap)
		o->out[o->n] = b;
	o->n++;
}

static void marker_if_due(struct ref_out *o)
{
	uint32_t off = o->start + (uint32_t)o->n;
	uint16_t ptr = (uint16_t)(off - o->start);

	if (!o->markers || off % 512 != 0)
		return;
	raw_put(o, 0);
	raw_put(o, 0);
	raw_put(o, (uint8_t)(ptr >> 8));
	raw_put(o, (uint8_t)ptr);
}

static void ref_put(struct ref_out *o, uint8_t b)
{
	marker_if_due(o);
	raw_put(o, b);
}

ssize_t iwt_fpdu_ref_encode(uint32_t stream_off, bool crc, bool markers, const void *hdr,
                            size_t hdr_len, const void *payload, size_t payload_len, uint8_t *out,
                            size_t cap)
{
	struct ref_out o = { out, cap, 0, stream_off, markers };
	const uint8_t *h = hdr, *p = payload;
	size_t ulpdu = hdr_len + payload_len;
	uint32_t c = 0;

	if (ulpdu > 65535)
		return -EMSGSIZE;
	ref_put(&o, (uint8_t)(ulpdu >> 8));
	ref_put(&o, (uint8_t)ulpdu);
	for (size_t i = 0; i < hdr_len; i++)
		ref_put(&o, h[i]);
	for (size_t i = 0; i < payload_len; i++)
		ref_put(&o, p[i]);
	while ((2 + ulpdu) % 4 != 0) {
		ref_put(&o, 0);
		ulpdu++;
	}
	/* A marker right before the CRC is covered by it. */
	marker_if_due(&o);
	if (o.n > cap)
		return -ENOSPC;
	if (crc)
		c = iwt_fpdu_crc32c_ref(out, o.n);
	for (int i = 0; i < 4; i++)
		ref_put(&o, (uint8_t)(c >> (8 * i)));
	if (o.n > cap)
		return -ENOSPC;
	return (ssize_t)o.n;
}

ssize_t iwt_fpdu_ref_stream(bool crc, bool markers, const struct iwt_fpdu_msg *msgs, int n,
                            uint8_t *out, size_t cap)
{
	size_t pos = 0;

	for (int i = 0; i < n; i++) {
		ssize_t r =
		    iwt_fpdu_ref_encode((uint32_t)pos, crc, markers, msgs[i].hdr, msgs[i].hdr_len,
		                        msgs[i].payload, msgs[i].payload_len, out + pos, cap - pos);
		if (r < 0)
			return r;
		pos += (size_t)r;
	}
	return (ssize_t)pos;
}

/* Receive driver. */

void iwt_fpdu_log_init(struct iwt_fpdu_log *log)
{
	memset(log, 0, sizeof(*log));
}

void iwt_fpdu_log_free(struct iwt_fpdu_log *log)
{
	free(log->rec);
	free(log->payload);
	memset(log, 0, sizeof(*log));
}

static struct iwt_fpdu_rec *log_add(struct iwt_fpdu_log *log, const struct iw_mpa_rx_event *ev)
{
	struct iwt_fpdu_rec *r;

	if (log->nrec == log->rec_cap) {
		int cap = log->rec_cap ? 2 * log->rec_cap : 64;
		struct iwt_fpdu_rec *nr = realloc(log->rec, sizeof(*nr) * (size_t)cap);

		if (!nr)
			abort();
		log->rec = nr;
		log->rec_cap = cap;
	}
	r = &log->rec[log->nrec++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	r->hdr_len = ev->hdr_len;
	r->ulpdu_len = ev->ulpdu_len;
	r->payload_len = ev->payload_len;
	r->fpdu_off = ev->fpdu_off;
	r->cause = ev->cause;
	if (ev->hdr && ev->hdr_len <= IW_MPA_RX_MAX_HDR)
		memcpy(r->hdr, ev->hdr, ev->hdr_len);
	return r;
}

static void log_payload(struct iwt_fpdu_log *log, const void *p, size_t n)
{
	if (log->payload_len + n > log->payload_cap) {
		size_t cap = log->payload_cap ? log->payload_cap : 4096;
		uint8_t *np;

		while (cap < log->payload_len + n)
			cap *= 2;
		np = realloc(log->payload, cap);
		if (!np)
			abort();
		log->payload = np;
		log->payload_cap = cap;
	}
	if (n)
		memcpy(log->payload + log->payload_len, p, n);
	log->payload_len += n;
}

/* Per-run sink state: one buffer, guard bytes before, between and after
 * the sink pieces, refilled for every FPDU. */
struct sink_state {
	uint8_t *mem;
	size_t mem_len;
	size_t span; /* bytes of mem in use for the current FPDU */
	struct iovec *iov;
	int niov;
	int max_iov;
	bool dropped;
	bool open; /* between HEADER and FPDU */
};

static void sink_setup(struct sink_state *s, const struct iwt_fpdu_rx_opts *o, uint16_t plen,
                       bool drop)
{
	size_t want = plen > o->sink_short ? plen - o->sink_short : 0;
	size_t pos = GUARD;
	int k = (int)iwt_rand_range(o->rng, 1, (uint64_t)s->max_iov);

	s->dropped = drop;
	s->niov = 0;
	/* Cut want bytes into up to k pieces, a guard gap after each. */
	k = iwt_fpdu_split(o->rng, s->mem, want, s->iov, k);
	s->span = want + (size_t)(k + 1) * GUARD;
	memset(s->mem, GUARD_BYTE, s->span);
	if (drop)
		return;
	for (int i = 0; i < k; i++) {
		size_t len = s->iov[i].iov_len;

		if (s->iov[i].iov_base || len)
			s->iov[i].iov_base = s->mem + pos; /* empty ones point at a guard */
		pos += len + GUARD;
	}
	s->niov = k;
}

static bool sink_guards_ok(const struct sink_state *s)
{
	size_t pos = 0;

	if (s->dropped) {
		for (size_t i = 0; i < s->span; i++)
			if (s->mem[i] != GUARD_BYTE)
				return false;
		return true;
	}
	for (int i = 0; i <= s->niov; i++) {
		for (size_t g = 0; g < GUARD; g++)
			if (s->mem[pos + g] != GUARD_BYTE)
				return false;
		if (i < s->niov)
			pos += GUARD + s->iov[i].iov_len;
	}
	return true;
}

/* Returns true when the run must stop (ERROR). */
static bool handle(struct iw_mpa_rx *rx, const struct iw_mpa_rx_event *ev,
                   const struct iwt_fpdu_rx_opts *o, struct sink_state *s, struct iwt_fpdu_log *log)
{
	struct iwt_fpdu_rec *r = log_add(log, ev);

	switch (ev->type) {
	case IW_MPA_RX_HEADER: {
		bool drop = o->drop_pct && iwt_rand(o->rng) % 100 < o->drop_pct;

		if (s->open)
			log->bad_contract++;
		s->open = true;
		r->dropped = drop;
		sink_setup(s, o, ev->payload_len, drop);
		if (drop && iwt_rand(o->rng) % 2)
			iw_mpa_rx_set_sink(rx, s->iov, 0);
		else
			iw_mpa_rx_set_sink(rx, drop ? NULL : s->iov, s->niov);
		return false;
	}
	case IW_MPA_RX_FPDU:
		if (!s->open)
			log->bad_contract++;
		s->open = false;
		if (!sink_guards_ok(s))
			log->bad_guard++;
		r->payload_at = log->payload_len;
		if (!s->dropped) {
			size_t left = ev->payload_len;

			for (int i = 0; i < s->niov && left; i++) {
				size_t n = s->iov[i].iov_len < left ? s->iov[i].iov_len : left;

				log_payload(log, s->iov[i].iov_base, n);
				left -= n;
			}
		}
		return false;
	case IW_MPA_RX_ERROR:
		if (s->open && !sink_guards_ok(s))
			log->bad_guard++;
		return true;
	default:
		log->bad_contract++;
		return true;
	}
}

static size_t run_feed(struct iw_mpa_rx *rx, const uint8_t *buf, size_t len,
                       const struct iwt_fpdu_rx_opts *o, struct sink_state *s,
                       struct iwt_fpdu_log *log)
{
	size_t pos = 0;

	while (pos < len) {
		size_t chunk = (size_t)iwt_rand_range(o->rng, 1, o->max_chunk);
		size_t off = 0;

		if (chunk > len - pos)
			chunk = len - pos;
		while (off < chunk) {
			struct iw_mpa_rx_event ev;
			size_t c = iw_mpa_rx_feed(rx, buf + pos + off, chunk - off, &ev);

			if (c > chunk - off)
				log->bad_contract++;
			off += c;
			if (ev.type == IW_MPA_RX_NONE) {
				if (off != chunk)
					log->bad_contract++;
				break;
			}
			if (handle(rx, &ev, o, s, log))
				return pos + off;
		}
		pos += off;
	}
	return pos;
}

static size_t run_readv(struct iw_mpa_rx *rx, const uint8_t *buf, size_t len,
                        const struct iwt_fpdu_rx_opts *o, struct sink_state *s,
                        struct iwt_fpdu_log *log)
{
	struct iovec iov[64];
	size_t pos = 0;
	int max_iov = o->max_iov < 1 ? 1 : (o->max_iov > 64 ? 64 : o->max_iov);

	while (pos < len) {
		int cap = (int)iwt_rand_range(o->rng, 1, (uint64_t)max_iov);
		int n = iw_mpa_rx_prepare(rx, iov, cap);
		size_t total = 0, want, done = 0;
		struct iw_mpa_rx_event ev;

		if (n < 1 || n > cap) {
			log->bad_contract++;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (!iov[i].iov_len)
				log->bad_contract++;
			total += iov[i].iov_len;
		}
		want = (size_t)iwt_rand_range(o->rng, 1, o->max_chunk);
		if (want > total)
			want = total;
		if (want > len - pos)
			want = len - pos;
		/* The "readv": a short count lands in order. */
		for (int i = 0; i < n && done < want; i++) {
			size_t k = iov[i].iov_len < want - done ? iov[i].iov_len : want - done;

			memcpy(iov[i].iov_base, buf + pos + done, k);
			done += k;
		}
		iw_mpa_rx_commit(rx, want, &ev);
		pos += want;
		if (ev.type == IW_MPA_RX_NONE)
			continue;
		/* Events only at the end of a prepared list. */
		if (ev.type != IW_MPA_RX_ERROR && want != total)
			log->bad_contract++;
		if (handle(rx, &ev, o, s, log))
			break;
	}
	return pos;
}

int iwt_fpdu_rx_run(struct iw_mpa_rx *rx, const uint8_t *buf, size_t len,
                    const struct iwt_fpdu_rx_opts *o, struct iwt_fpdu_log *log)
{
	struct sink_state s;

	memset(&s, 0, sizeof(s));
	s.max_iov = o->max_sink_iov < 1 ? 1 : o->max_sink_iov;
	s.mem_len = IW_MPA_ULPDU_MAX + (size_t)(s.max_iov + 1) * GUARD;
	s.mem = malloc(s.mem_len);
	s.iov = malloc(sizeof(*s.iov) * (size_t)s.max_iov);
	if (!s.mem || !s.iov)
		abort();
	if (o->mode == IWT_FPDU_READV)
		log->consumed += run_readv(rx, buf, len, o, &s, log);
	else
		log->consumed += run_feed(rx, buf, len, o, &s, log);
	free(s.mem);
	free(s.iov);
	return log->nrec;
}
