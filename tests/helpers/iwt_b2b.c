#include "iwt_b2b.h"

#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"

static void ep_event(void *ctx, const struct iw_rdmap_event *ev)
{
	struct iwt_ep *ep = (struct iwt_ep *)((char *)ctx - offsetof(struct iwt_ep, mem));
	struct iwt_event *e = ep->nev < IWT_EP_MAX_EV ? &ep->ev[ep->nev++] : NULL;
	struct iwt_recv r = { 0 };

	if (ev->type == IW_RDMAP_EV_RECV_DONE)
		iwt_mem_pop_recv(&ep->mem, &r);
	if (!e)
		return;
	e->ev = *ev;
	e->recv_id = r.id;
	if (ev->type == IW_RDMAP_EV_TERM_RECV && ev->term) {
		e->term = *ev->term;
		e->ev.term = &e->term;
	}
}

static void ep_init(struct iwt_ep *ep, const char *name, const struct iw_rdmap_conn_cfg *cfg, uint32_t pd)
{
	static const struct iw_rdmap_conn_ops ops = {
		.stag = iwt_mem_stag,
		.recv_buf = iwt_mem_recv_buf,
		.invalidate = iwt_mem_invalidate,
		.event = ep_event,
	};
	struct iw_rdmap_conn_mem mem = {
		.sq = ep->sq, .sq_depth = IWT_EP_SQ,
		.ird = ep->ird, .n_ird = IWT_EP_IRD,
		.tx = ep->tx, .n_tx = IWT_EP_TX,
		.sgl_pool = ep->sq_sgl, .max_sge = IW_RDMAP_MAX_SGE,
		.tx_markers = ep->tx_markers,
	};
	ep->name = name;
	iwt_mem_init(&ep->mem, pd);
	/* ctx is the registry; the event callback finds the endpoint from it. */
	iw_rdmap_conn_init(&ep->conn, cfg, &ops, &ep->mem, &mem);
}

void iwt_b2b_init(struct iwt_b2b *t, const struct iw_rdmap_conn_cfg *cfg, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->rng = seed ? seed : 1;
	t->rx_mode = IWT_RX_MIXED;
	t->max_chunk = 4096;
	t->max_pull = 256 * 1024;
	t->iov_cap = 1024;
	ep_init(&t->a, "A", cfg, 1);
	ep_init(&t->b, "B", cfg, 1);
}

void iwt_b2b_fini(struct iwt_b2b *t)
{
	free(t->a.wire);
	free(t->b.wire);
	t->a.wire = t->b.wire = NULL;
}

static void wire_append(struct iwt_ep *ep, const void *p, size_t n)
{
	if (ep->wire_len + n > ep->wire_cap) {
		size_t cap = ep->wire_cap ? ep->wire_cap : 65536;
		while (cap < ep->wire_len + n)
			cap *= 2;
		ep->wire = realloc(ep->wire, cap);
		if (!ep->wire)
			abort();
		ep->wire_cap = cap;
	}
	memcpy(ep->wire + ep->wire_len, p, n);
	ep->wire_len += n;
	ep->wire_total += n;
}

void iwt_ep_pull(struct iwt_b2b *t, struct iwt_ep *ep)
{
	struct iovec iov[1024];
	int cap = t->iov_cap < 1024 ? t->iov_cap : 1024;

	for (;;) {
		size_t bytes = 0;
		int n = iw_rdmap_tx_pull(&ep->conn, iov, cap, t->max_pull, &bytes);
		if (n < 0)
			abort(); /* iov_cap can never hold one FPDU: a harness bug */
		if (n == 0)
			return;
		for (int i = 0; i < n; i++)
			wire_append(ep, iov[i].iov_base, iov[i].iov_len);
		/* Acknowledge in random pieces, as a transport with short writes would. */
		while (bytes) {
			size_t k = (size_t)iwt_rand_range(&t->rng, 1, bytes);
			iw_rdmap_tx_ack(&ep->conn, k);
			bytes -= k;
		}
	}
}

static size_t deliver_zerocopy(struct iwt_b2b *t, struct iwt_ep *to, const uint8_t *src, size_t n)
{
	struct iovec iov[64];
	size_t done = 0;

	while (done < n) {
		int k = iw_rdmap_rx_prepare(&to->conn, iov, 64);
		if (k <= 0)
			break;
		/* Copy as much as a readv would, possibly short. */
		size_t want = (size_t)iwt_rand_range(&t->rng, 1, n - done), got = 0;
		for (int i = 0; i < k && got < want; i++) {
			size_t m = iov[i].iov_len < want - got ? iov[i].iov_len : want - got;
			memcpy(iov[i].iov_base, src + done + got, m);
			got += m;
		}
		iw_rdmap_rx_commit(&to->conn, got);
		done += got;
	}
	return done;
}

void iwt_ep_deliver(struct iwt_b2b *t, struct iwt_ep *from, struct iwt_ep *to, size_t max)
{
	size_t off = 0, total = from->wire_len < max ? from->wire_len : max;

	while (off < total) {
		size_t chunk = (size_t)iwt_rand_range(&t->rng, 1, t->max_chunk);
		if (chunk > total - off)
			chunk = total - off;
		enum iwt_rx_mode mode = t->rx_mode;
		if (mode == IWT_RX_MIXED)
			mode = iwt_rand(&t->rng) & 1 ? IWT_RX_FEED : IWT_RX_ZEROCOPY;
		size_t used = mode == IWT_RX_FEED ? iw_rdmap_rx_feed(&to->conn, from->wire + off, chunk)
						   : deliver_zerocopy(t, to, from->wire + off, chunk);
		off += chunk;
		if (used < chunk)
			break; /* the receiver stopped */
	}
	/* A stopped receiver never reads again: drop the rest, like bytes after a close. */
	if (to->conn.state != IW_RDMAP_ST_RTS)
		off = from->wire_len;
	if (off) {
		memmove(from->wire, from->wire + off, from->wire_len - off);
		from->wire_len -= off;
	}
}

bool iwt_b2b_pump(struct iwt_b2b *t, unsigned max_rounds)
{
	for (unsigned r = 0; r < max_rounds; r++) {
		iwt_ep_pull(t, &t->a);
		iwt_ep_pull(t, &t->b);
		if (!t->a.wire_len && !t->b.wire_len && !iw_rdmap_tx_pending(&t->a.conn) &&
		    !iw_rdmap_tx_pending(&t->b.conn))
			return true;
		iwt_ep_deliver(t, &t->a, &t->b, SIZE_MAX);
		iwt_ep_deliver(t, &t->b, &t->a, SIZE_MAX);
	}
	return false;
}

void iwt_ep_inject(struct iwt_ep *ep, const void *ulp_hdr, size_t hdr_len, const void *payload,
		   size_t payload_len)
{
	struct iw_mpa_tx_fpdu fpdu;
	struct iovec pl = { (void *)payload, payload_len };
	struct iovec iov[2 * IW_MPA_TX_MAX_MARKERS + 8];
	int n = iw_mpa_tx_build(&ep->conn.mpa_tx, &fpdu, ulp_hdr, hdr_len, &pl, payload_len ? 1 : 0, iov,
				(int)(sizeof(iov) / sizeof(iov[0])));
	if (n < 0)
		abort();
	for (int i = 0; i < n; i++)
		wire_append(ep, iov[i].iov_base, iov[i].iov_len);
}

const struct iwt_event *iwt_ep_find(const struct iwt_ep *ep, enum iw_rdmap_event_type type, unsigned n)
{
	for (unsigned i = 0; i < ep->nev; i++)
		if (ep->ev[i].ev.type == type && n-- == 0)
			return &ep->ev[i];
	return NULL;
}

unsigned iwt_ep_count(const struct iwt_ep *ep, enum iw_rdmap_event_type type)
{
	unsigned k = 0;
	for (unsigned i = 0; i < ep->nev; i++)
		k += ep->ev[i].ev.type == type;
	return k;
}
