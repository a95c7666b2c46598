/* FPDU deframer (mpa/mpa_rx.h), fed the same stream two ways.
 *
 * Input byte 0 selects the configuration: bit 0 CRC, bit 1 markers,
 * bit 2 "fix up CRCs" (CRC on, markers off: the harness rewrites each
 * FPDU's CRC so mutations get past the check), bits 3-4 max_ulpdu, bits
 * 5-7 a seed for chunk sizes and sink shapes. The rest is the TCP stream.
 *
 * Mode A feeds it with iw_mpa_rx_feed() in random chunks; mode B uses
 * prepare/commit with random iovec caps and commit sizes. Both must give
 * the same events and payload. Sinks are bounded, surrounded by guard
 * bytes, sometimes longer than needed and sometimes NULL; the guards and
 * the unused sink tail must stay intact, and prepared iovecs must point
 * only into the deframer or the sink. Without markers the headers and
 * payload are also checked against the stream itself. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "common/iw_bytes.h"
#include "fuzz_common.h"
#include "mpa/crc32c.h"
#include "mpa/mpa_rx.h"

#define GUARD 16
#define MAX_PIECES 3
#define ARENA_LEN (IW_MPA_ULPDU_MAX + 64 + (MAX_PIECES + 1) * GUARD)

struct ev_rec {
	enum iw_mpa_rx_event_type type;
	uint16_t hdr_len, ulpdu_len, payload_len;
	uint32_t fpdu_off;
	uint8_t hdr[IW_MPA_RX_MAX_HDR];
	struct iw_term_cause cause;
	uint64_t payload_hash;
	bool dropped;
};

struct mode {
	struct iw_mpa_rx rx;
	uint8_t *arena;
	size_t span; /* arena bytes in use by the current sink, guards included */
	struct iovec sink[MAX_PIECES];
	int nsink;
	struct iovec eff[MAX_PIECES]; /* the first payload_len bytes of sink */
	int neff;
	uint16_t cur_hdr_len, cur_payload_len;
	uint32_t cur_off;
	bool in_fpdu;
	unsigned fpdu_idx;
	bool dead;
	struct ev_rec *evs;
	size_t nev, cap;
};

static uint8_t arena_a[ARENA_LEN], arena_b[ARENA_LEN];
static uint64_t g_seed;
static bool g_markers;
static const uint8_t *g_stream;
static size_t g_len;

/* RDMAP-like header lengths, as the layer above would report them. */
static void ulp_lens(const uint8_t ctrl[2], uint16_t *hdr_len, uint16_t *min_ulpdu)
{
	uint8_t op = ctrl[1] & 0x0F;

	if (ctrl[0] & 0x80) {
		*hdr_len = 14;
		*min_ulpdu = 14;
	} else if (op == 1) {
		*hdr_len = 18 + 28; /* Read Request body */
		*min_ulpdu = 46;
	} else {
		*hdr_len = 18;
		*min_ulpdu = op == 7 ? 22 : 18;
	}
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001B3ull;
	return h;
}

static struct ev_rec *record(struct mode *m, const struct iw_mpa_rx_event *ev)
{
	FUZZ_CHECK(m->nev < m->cap);
	struct ev_rec *r = &m->evs[m->nev++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	return r;
}

/* Shape of the sink for FPDU number idx: a function of the seed and idx
 * only, so both modes choose the same. */
static void set_sink(struct mode *m, uint16_t payload_len)
{
	uint64_t s = g_seed ^ ((uint64_t)m->fpdu_idx * 0x9E3779B97F4A7C15ull);
	unsigned shape = (unsigned)fuzz_range(&s, 0, 3);
	size_t extra = shape == 3 ? fuzz_range(&s, 1, 64) : 0;
	size_t pieces = shape == 2 ? MAX_PIECES : 1;
	size_t left = payload_len, pos = GUARD;

	m->nsink = m->neff = 0;
	m->span = 0;
	if (shape == 0 || (payload_len == 0 && shape != 3)) {
		iw_mpa_rx_set_sink(&m->rx, NULL, 0);
		return;
	}
	for (size_t i = 0; i < pieces; i++) {
		size_t len = i + 1 == pieces ? left : fuzz_range(&s, 0, left);
		m->eff[m->neff++] = (struct iovec){m->arena + pos, len};
		m->sink[m->nsink++] = (struct iovec){m->arena + pos, len + (i + 1 == pieces ? extra : 0)};
		pos += m->sink[i].iov_len + GUARD;
		left -= len;
	}
	m->span = pos;
	FUZZ_CHECK(m->span <= ARENA_LEN);
	memset(m->arena, FUZZ_GUARD_BYTE, m->span);
	iw_mpa_rx_set_sink(&m->rx, m->sink, m->nsink);
}

/* After the FPDU: hash the payload, compare it with the stream when the
 * layout is known, then blank it and require the whole span to be guard. */
static void finish_sink(struct mode *m, struct ev_rec *r)
{
	uint64_t h = 0xCBF29CE484222325ull;
	size_t src = (size_t)m->cur_off + IW_MPA_LEN_FIELD + m->cur_hdr_len;

	r->dropped = m->nsink == 0;
	for (int i = 0; i < m->neff; i++) {
		const uint8_t *p = m->eff[i].iov_base;
		size_t n = m->eff[i].iov_len;
		h = fnv(h, p, n);
		if (!g_markers) {
			FUZZ_CHECK(src + n <= g_len);
			FUZZ_CHECK(memcmp(p, g_stream + src, n) == 0);
		}
		src += n;
		memset(m->eff[i].iov_base, FUZZ_GUARD_BYTE, n);
	}
	r->payload_hash = h;
	FUZZ_CHECK(fuzz_guard_ok(m->arena, m->span));
}

static void handle(struct mode *m, const struct iw_mpa_rx_event *ev)
{
	struct ev_rec *r;

	switch (ev->type) {
	case IW_MPA_RX_NONE:
		return;
	case IW_MPA_RX_HEADER:
		FUZZ_CHECK(!m->in_fpdu);
		FUZZ_CHECK(ev->hdr != NULL);
		FUZZ_CHECK(ev->hdr_len >= 2 && ev->hdr_len <= IW_MPA_RX_MAX_HDR);
		FUZZ_CHECK(ev->ulpdu_len >= ev->hdr_len);
		FUZZ_CHECK(ev->payload_len == ev->ulpdu_len - ev->hdr_len);
		r = record(m, ev);
		r->hdr_len = ev->hdr_len;
		r->ulpdu_len = ev->ulpdu_len;
		r->payload_len = ev->payload_len;
		r->fpdu_off = ev->fpdu_off;
		memcpy(r->hdr, ev->hdr, ev->hdr_len);
		if (!g_markers) {
			FUZZ_CHECK((size_t)ev->fpdu_off + 2 + ev->hdr_len <= g_len);
			FUZZ_CHECK(iw_get_be16(g_stream + ev->fpdu_off) == ev->ulpdu_len);
			FUZZ_CHECK(memcmp(ev->hdr, g_stream + ev->fpdu_off + 2, ev->hdr_len) == 0);
		}
		m->in_fpdu = true;
		m->cur_hdr_len = ev->hdr_len;
		m->cur_payload_len = ev->payload_len;
		m->cur_off = ev->fpdu_off;
		set_sink(m, ev->payload_len);
		return;
	case IW_MPA_RX_FPDU:
		FUZZ_CHECK(m->in_fpdu);
		FUZZ_CHECK(ev->hdr_len == m->cur_hdr_len && ev->payload_len == m->cur_payload_len);
		FUZZ_CHECK(ev->fpdu_off == m->cur_off);
		FUZZ_CHECK(iw_mpa_rx_at_boundary(&m->rx));
		r = record(m, ev);
		r->hdr_len = ev->hdr_len;
		r->ulpdu_len = ev->ulpdu_len;
		r->payload_len = ev->payload_len;
		r->fpdu_off = ev->fpdu_off;
		finish_sink(m, r);
		m->nsink = m->neff = 0;
		m->span = 0;
		m->in_fpdu = false;
		m->fpdu_idx++;
		return;
	case IW_MPA_RX_ERROR:
		FUZZ_CHECK(ev->cause.layer == IW_LAYER_MPA);
		r = record(m, ev);
		r->cause = ev->cause;
		m->dead = true;
		/* The payload may be partial: only the guards are checked. */
		for (int i = 0; i < m->neff; i++)
			memset(m->eff[i].iov_base, FUZZ_GUARD_BYTE, m->eff[i].iov_len);
		FUZZ_CHECK(fuzz_guard_ok(m->arena, m->span));
		return;
	}
	FUZZ_CHECK(0 && "unknown event type");
}

static void run_feed(struct mode *m, uint64_t rng)
{
	size_t pos = 0, steps = 0;

	while (pos < g_len && !m->dead) {
		size_t chunk = fuzz_range(&rng, 1, g_len - pos < 700 ? g_len - pos : 700);
		size_t left = chunk;
		while (left > 0 && !m->dead) {
			struct iw_mpa_rx_event ev;
			memset(&ev, 0, sizeof(ev));
			size_t c = iw_mpa_rx_feed(&m->rx, g_stream + pos, left, &ev);
			FUZZ_CHECK(c <= left);
			if (ev.type == IW_MPA_RX_NONE)
				FUZZ_CHECK(c == left);
			pos += c;
			left -= c;
			handle(m, &ev);
			/* Every event but HEADER/FPDU/ERROR consumes: bound the loop. */
			FUZZ_CHECK(++steps <= 4 * g_len + 16);
		}
	}
}

static bool inside_allowed(const struct mode *m, const struct iovec *v)
{
	if (fuzz_within(v->iov_base, v->iov_len, &m->rx, sizeof(m->rx)))
		return true;
	for (int i = 0; i < m->neff; i++)
		if (fuzz_within(v->iov_base, v->iov_len, m->eff[i].iov_base, m->eff[i].iov_len))
			return true;
	return false;
}

static void run_prepare(struct mode *m, uint64_t rng)
{
	size_t pos = 0;

	while (pos < g_len && !m->dead) {
		struct iovec iov[8];
		int cap = (int)fuzz_range(&rng, 1, 8);
		int k = iw_mpa_rx_prepare(&m->rx, iov, cap);
		FUZZ_CHECK(k >= 1 && k <= cap);
		size_t total = 0;
		for (int i = 0; i < k; i++) {
			FUZZ_CHECK(inside_allowed(m, &iov[i]));
			total += iov[i].iov_len;
		}
		FUZZ_CHECK(total > 0);
		size_t want = fuzz_range(&rng, 1, total < g_len - pos ? total : g_len - pos);
		size_t left = want;
		for (int i = 0; i < k && left; i++) {
			size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
			memcpy(iov[i].iov_base, g_stream + pos, n);
			pos += n;
			left -= n;
		}
		struct iw_mpa_rx_event ev;
		memset(&ev, 0, sizeof(ev));
		iw_mpa_rx_commit(&m->rx, want, &ev);
		handle(m, &ev);
	}
}

static bool same_event(const struct ev_rec *a, const struct ev_rec *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == IW_MPA_RX_ERROR)
		return iw_term_cause_eq(a->cause, b->cause);
	return a->hdr_len == b->hdr_len && a->ulpdu_len == b->ulpdu_len &&
	       a->payload_len == b->payload_len && a->fpdu_off == b->fpdu_off &&
	       memcmp(a->hdr, b->hdr, a->hdr_len) == 0 && a->payload_hash == b->payload_hash &&
	       a->dropped == b->dropped;
}

/* Without markers, give every complete FPDU a correct CRC. */
static void fix_crcs(uint8_t *s, size_t n)
{
	size_t off = 0;

	while (off + IW_MPA_LEN_FIELD <= n) {
		unsigned ulpdu = iw_get_be16(s + off);
		size_t span = IW_MPA_LEN_FIELD + ulpdu + iw_mpa_pad_len(ulpdu);
		if (off + span + IW_MPA_CRC_LEN > n)
			break;
		iw_crc32c_put_wire(s + off + span, iw_crc32c(s + off, span));
		off += span + IW_MPA_CRC_LEN;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t max_ulpdus[] = {0, 1500, 256, 48};
	static struct mode ma, mb;

	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	struct iw_mpa_rx_config cfg = {
		.crc = sel & 1,
		.markers = sel & 2,
		.max_ulpdu = max_ulpdus[(sel >> 3) & 3],
		.ulp_lens = ulp_lens,
	};
	g_markers = cfg.markers;
	g_seed = (uint64_t)(sel >> 5) * 0x2545F4914F6CDD1Dull + size;
	g_len = size - 1;

	uint8_t *stream = malloc(g_len ? g_len : 1);
	FUZZ_CHECK(stream != NULL);
	if (g_len)
		memcpy(stream, data + 1, g_len);
	if (cfg.crc && !cfg.markers && (sel & 4))
		fix_crcs(stream, g_len);
	g_stream = stream;

	/* An FPDU is at least 8 bytes (length, 2-byte header, CRC): bounds
	 * the number of events, plus one error. */
	size_t cap = 2 * (g_len / 8) + 4;
	struct mode *modes[2] = {&ma, &mb};
	uint8_t *arenas[2] = {arena_a, arena_b};
	for (int i = 0; i < 2; i++) {
		memset(modes[i], 0, sizeof(*modes[i]));
		modes[i]->arena = arenas[i];
		modes[i]->cap = cap;
		modes[i]->evs = calloc(cap, sizeof(struct ev_rec));
		FUZZ_CHECK(modes[i]->evs != NULL);
		iw_mpa_rx_init(&modes[i]->rx, &cfg);
		FUZZ_CHECK(iw_mpa_rx_at_boundary(&modes[i]->rx));
	}

	run_feed(&ma, g_seed ^ 0xA);
	run_prepare(&mb, g_seed ^ 0xB);

	FUZZ_CHECK(ma.nev == mb.nev);
	for (size_t i = 0; i < ma.nev; i++)
		FUZZ_CHECK(same_event(&ma.evs[i], &mb.evs[i]));
	if (!ma.dead)
		FUZZ_CHECK(iw_mpa_rx_at_boundary(&ma.rx) == iw_mpa_rx_at_boundary(&mb.rx));

	free(ma.evs);
	free(mb.evs);
	free(stream);
	return 0;
}
