/* TCP connections and per-direction reassembly.
 *
 * A connection is keyed by its address/port pair; its initiator (index 0)
 * is the side that sent the SYN, else the side whose SYN-ACK answer came
 * back, else the side whose first payload is an MPA Request. Each
 * direction delivers bytes in sequence order exactly once: retransmitted
 * and overlapping bytes are trimmed, segments ahead of the next expected
 * byte wait (bounded by --reorder-max) until the hole is filled. A hole
 * that cannot be filled (buffer bound, snapshot length, end of capture
 * with later bytes seen, ACKed or FIN'd) is a gap: the direction stops.
 * Sequence numbers compare modulo 2^32. */
#include <stdlib.h>
#include <string.h>

#include "iwdump.h"

#define NBUCKETS 4096

struct iwd_table {
	const struct iwd_opts *o;
	struct iwd_conn **all;
	size_t n, cap;
	struct iwd_conn *bucket[NBUCKETS];
};

static bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static bool seq_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* Order-independent hash of the two endpoints. */
static unsigned tuple_hash(const struct iwd_pkt *p)
{
	uint32_t h1 = 2166136261u, h2 = 2166136261u;

	for (int i = 0; i < 16; i++) {
		h1 = (h1 ^ p->src[i]) * 16777619u;
		h2 = (h2 ^ p->dst[i]) * 16777619u;
	}
	h1 = (h1 ^ p->sport) * 16777619u;
	h2 = (h2 ^ p->dport) * 16777619u;
	return (h1 ^ h2) % NBUCKETS;
}

static bool side_is(const struct iwd_conn *c, int side, const uint8_t *addr, uint16_t port)
{
	return c->port[side] == port && memcmp(c->addr[side], addr, sizeof(c->addr[side])) == 0;
}

/* The connection of p, and p's direction in it. */
static struct iwd_conn *lookup(struct iwd_table *t, const struct iwd_pkt *p, int *dir)
{
	for (struct iwd_conn *c = t->bucket[tuple_hash(p)]; c; c = c->hnext) {
		if (c->family != p->family)
			continue;
		if (side_is(c, 0, p->src, p->sport) && side_is(c, 1, p->dst, p->dport)) {
			*dir = 0;
			return c;
		}
		if (side_is(c, 1, p->src, p->sport) && side_is(c, 0, p->dst, p->dport)) {
			*dir = 1;
			return c;
		}
	}
	return NULL;
}

static void unhash(struct iwd_table *t, struct iwd_conn *c, const struct iwd_pkt *p)
{
	struct iwd_conn **pp = &t->bucket[tuple_hash(p)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	c->hnext = NULL;
}

struct iwd_table *iwd_table_new(const struct iwd_opts *o)
{
	struct iwd_table *t = calloc(1, sizeof(*t));

	if (t)
		t->o = o;
	return t;
}

static struct iwd_conn *create(struct iwd_table *t, const struct iwd_pkt *p, const struct iwd_where *w)
{
	struct iwd_conn *c;
	unsigned h = tuple_hash(p);

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct iwd_conn **a = realloc(t->all, cap * sizeof(*a));

		if (!a)
			return NULL;
		t->all = a;
		t->cap = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = (unsigned)t->n + 1;
	c->family = p->family;
	memcpy(c->addr[0], p->src, 16);
	memcpy(c->addr[1], p->dst, 16);
	c->port[0] = p->sport;
	c->port[1] = p->dport;
	c->first_frame = w->frame;
	c->opts = t->o;
	iwd_sess_init(&c->sess);
	c->hnext = t->bucket[h];
	t->bucket[h] = c;
	t->all[t->n++] = c;
	iwd_totals.conns++;
	return c;
}

static void swap_sides(struct iwd_conn *c)
{
	uint8_t a[16];
	uint16_t port = c->port[0];

	memcpy(a, c->addr[0], 16);
	memcpy(c->addr[0], c->addr[1], 16);
	memcpy(c->addr[1], a, 16);
	c->port[0] = c->port[1];
	c->port[1] = port;
}

static void set_base(struct iwd_stream *s, uint32_t seq)
{
	if (s->have_base)
		return;
	s->have_base = true;
	s->next = seq;
}

static bool starts_like_request(const struct iwd_pkt *p)
{
	size_t n = p->len < IW_MPA_KEY_LEN ? p->len : IW_MPA_KEY_LEN;

	return n > 0 && memcmp(p->data, IW_MPA_KEY_REQ, n) == 0;
}

/* Decide who initiated the connection. Returns false while unknown. */
static bool roles(struct iwd_conn *c, const struct iwd_pkt *p, const struct iwd_where *w)
{
	bool from0 = side_is(c, 0, p->src, p->sport);

	if ((p->flags & IWD_TCP_SYN) && !(p->flags & IWD_TCP_ACK)) {
		if (!from0)
			swap_sides(c);
		c->syn_seen = true;
		c->syn_seq = p->seq;
		set_base(&c->s[0], p->seq + 1);
	} else if ((p->flags & IWD_TCP_SYN) && (p->flags & IWD_TCP_ACK)) {
		if (from0)
			swap_sides(c);
		c->syn_seen = true;
		c->syn_seq = p->ack - 1;
		set_base(&c->s[1], p->seq + 1);
		set_base(&c->s[0], p->ack);
	} else if (p->len > 0 && !(p->flags & IWD_TCP_RST)) {
		if (!starts_like_request(p)) {
			c->state = IWD_C_SKIPPED;
			c->skip_reason = "capture starts mid-connection";
			iwd_out_warning(c, -1, w,
					"capture starts mid-connection (no SYN or MPA Request seen); connection skipped");
			return false;
		}
		if (!from0)
			swap_sides(c);
		c->no_syn = true;
		set_base(&c->s[0], p->seq);
	} else {
		return false;
	}
	c->state = IWD_C_ACTIVE;
	iwd_out_conn(c, w);
	return true;
}

static void free_pending(struct iwd_stream *s)
{
	while (s->pend) {
		struct iwd_seg *g = s->pend;

		s->pend = g->next;
		free(g);
	}
	s->pend_bytes = 0;
}

/* Where the hole at s->next ends: the next segment held, else limit. */
static uint32_t hole_end(const struct iwd_stream *s, uint32_t limit)
{
	if (s->pend && seq_lt(s->pend->seq, limit))
		return s->pend->seq;
	return limit;
}

static void gap(struct iwd_conn *c, int dir, uint32_t seq, uint32_t n, const struct iwd_where *w, const char *why)
{
	struct iwd_stream *s = &c->s[dir];

	s->gap = true;
	free_pending(s);
	/* Bytes nobody decodes any more are no capture problem. */
	if (!iwd_sess_wants(c, dir))
		return;
	iwd_out_warning(c, dir, w, "gap of %u bytes at seq %u%s; rest of this direction not decoded", n, seq, why);
	iwd_sess_stop(c, dir);
}

static void deliver(struct iwd_conn *c, int dir, const uint8_t *data, size_t len, const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];

	s->next += (uint32_t)len;
	s->bytes += len;
	iwd_sess_data(c, dir, data, len, w);
}

/* Hand over waiting segments that the in-order point has reached. */
static void drain(struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];

	while (s->pend && !s->gap && !seq_gt(s->pend->seq, s->next)) {
		struct iwd_seg *g = s->pend;
		uint32_t skip = s->next - g->seq;

		s->pend = g->next;
		s->pend_bytes -= g->len;
		if (skip < g->len)
			deliver(c, dir, g->data + skip, g->len - skip, w);
		free(g);
	}
}

static void hold(struct iwd_conn *c, int dir, uint32_t seq, const uint8_t *data, size_t len,
		 const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];
	struct iwd_seg **pp = &s->pend, *g;

	while (*pp && seq_lt((*pp)->seq, seq))
		pp = &(*pp)->next;
	if (*pp && (*pp)->seq == seq && (*pp)->len >= len) {
		s->dup_segs++;
		return;
	}
	g = malloc(sizeof(*g) + len);
	if (!g) {
		gap(c, dir, s->next, seq - s->next, w, " (out of memory)");
		return;
	}
	g->seq = seq;
	g->len = (uint32_t)len;
	memcpy(g->data, data, len);
	g->next = *pp;
	*pp = g;
	s->pend_bytes += len;
	s->ooo_segs++;
	if (s->pend_bytes > c->opts->reorder_max)
		gap(c, dir, s->next, s->pend->seq - s->next, w, " (reorder buffer full)");
}

static void segment_data(struct iwd_conn *c, int dir, uint32_t seq, const uint8_t *data, size_t len,
			 const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];
	uint32_t skip;

	if (!len || s->gap || s->ended)
		return;
	if (!iwd_sess_wants(c, dir)) {
		/* Not decoded: follow the sequence space, keep nothing. */
		free_pending(s);
		if (seq_gt(seq + (uint32_t)len, s->next)) {
			s->bytes += seq + (uint32_t)len - s->next;
			s->next = seq + (uint32_t)len;
		}
		return;
	}
	if (seq_gt(seq, s->next)) {
		hold(c, dir, seq, data, len, w);
		return;
	}
	skip = s->next - seq;
	if (skip >= len) {
		s->dup_segs++; /* a retransmission of what we have */
		return;
	}
	if (skip)
		s->dup_segs++; /* overlaps what we have */
	deliver(c, dir, data + skip, len - skip, w);
	drain(c, dir, w);
}

static void end_stream(struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];

	if (s->ended || s->gap)
		return;
	s->ended = true;
	iwd_sess_end(c, dir, w);
}

static void check_fin(struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];

	if (s->fin && !s->pend && s->next == s->fin_seq)
		end_stream(c, dir, w);
}

/* The stream can get no more bytes: a hole left is a gap, else it ended. */
static void close_stream(struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir];

	if (s->ended || s->gap)
		return;
	if (s->have_base) {
		if (s->pend) {
			gap(c, dir, s->next, s->pend->seq - s->next, w, "");
			return;
		}
		if (s->fin && seq_lt(s->next, s->fin_seq)) {
			gap(c, dir, s->next, s->fin_seq - s->next, w, "");
			return;
		}
		/* The peer acknowledged bytes the capture does not have (a FIN
		 * not seen would count one too many: tolerate it). */
		if (s->have_ack && seq_gt(s->max_ack, s->next + 1)) {
			gap(c, dir, s->next, hole_end(s, s->max_ack) - s->next, w, "");
			return;
		}
	}
	end_stream(c, dir, w);
}

static void conn_close(struct iwd_conn *c, const struct iwd_where *w)
{
	close_stream(c, 0, w);
	close_stream(c, 1, w);
	free_pending(&c->s[0]);
	free_pending(&c->s[1]);
	c->state = IWD_C_CLOSED;
	iwd_sess_release(&c->sess);
}

static void stream_packet(struct iwd_conn *c, int dir, const struct iwd_pkt *p, const struct iwd_where *w)
{
	struct iwd_stream *s = &c->s[dir], *o = &c->s[!dir];

	if (p->flags & IWD_TCP_ACK) {
		if (!o->have_ack || seq_gt(p->ack, o->max_ack))
			o->max_ack = p->ack;
		o->have_ack = true;
		/* Before the peer sent anything, our ACK is where it starts. */
		set_base(o, p->ack);
	}
	/* Acknowledged bytes the capture does not have passed the capture
	 * point unseen: that hole will not be filled. Say so before this
	 * side's data (replies that may depend on them) is judged without
	 * them. A pure ACK may reach the capture before the data it
	 * acknowledges: a receiver that busy-polls its own packet ring
	 * answers while the kernel still copies the frame to the capture's
	 * (wire-capture, both ends raw); the data then fills the hole, and a
	 * hole never filled is reported when the stream closes. (One octet
	 * more may be a FIN the capture missed.) */
	if ((p->len || p->missing) && o->have_ack && o->have_base && !o->gap && !o->ended &&
	    seq_gt(o->max_ack, o->next + 1))
		gap(c, !dir, o->next, hole_end(o, o->max_ack) - o->next, w, "");
	if (p->flags & IWD_TCP_RST) {
		c->reset = true;
		conn_close(c, w);
		return;
	}
	if (p->flags & IWD_TCP_SYN) {
		set_base(s, p->seq + 1);
		return;
	}
	if (p->len || p->missing) {
		set_base(s, p->seq);
		segment_data(c, dir, p->seq, p->data, p->len, w);
		if (p->missing && !s->gap && !s->ended) {
			uint32_t from = p->seq + (uint32_t)p->len, to = from + (uint32_t)p->missing;

			if (seq_gt(to, s->next))
				gap(c, dir, seq_gt(from, s->next) ? from : s->next,
				    to - (seq_gt(from, s->next) ? from : s->next), w, " (cut by the snapshot length)");
		}
	}
	if ((p->flags & IWD_TCP_FIN) && !s->fin) {
		s->fin = true;
		s->fin_seq = p->seq + (uint32_t)(p->len + p->missing);
	}
	check_fin(c, dir, w);
	if ((s->ended || s->gap) && (o->ended || o->gap)) {
		c->state = IWD_C_CLOSED;
		iwd_sess_release(&c->sess);
	}
}

void iwd_table_packet(struct iwd_table *t, const struct iwd_pkt *p, const struct iwd_where *w)
{
	struct iwd_conn *c;
	int dir = 0;
	bool syn_only = (p->flags & IWD_TCP_SYN) && !(p->flags & IWD_TCP_ACK);

	if (t->o->port >= 0 && p->sport != t->o->port && p->dport != t->o->port)
		return;
	c = lookup(t, p, &dir);
	/* A new SYN on a finished, skipped or different connection of the
	 * same address pair starts a new connection. */
	if (c && syn_only && c->state != IWD_C_NEW && (c->state == IWD_C_CLOSED || c->state == IWD_C_SKIPPED || !c->syn_seen ||
			      c->syn_seq != p->seq)) {
		if (c->state == IWD_C_ACTIVE)
			conn_close(c, w);
		unhash(t, c, p);
		c = NULL;
	}
	if (!c) {
		c = create(t, p, w);
		if (!c)
			return;
	}
	if (c->state == IWD_C_NEW && !roles(c, p, w))
		return;
	if (c->state != IWD_C_ACTIVE)
		return;
	dir = side_is(c, 0, p->src, p->sport) ? 0 : 1;
	stream_packet(c, dir, p, w);
}

void iwd_table_finish(struct iwd_table *t, const struct iwd_where *w)
{
	for (size_t i = 0; i < t->n; i++) {
		struct iwd_conn *c = t->all[i];

		if (c->state == IWD_C_ACTIVE)
			conn_close(c, w);
	}
}

size_t iwd_table_count(const struct iwd_table *t)
{
	return t->n;
}

struct iwd_conn *iwd_table_get(struct iwd_table *t, size_t i)
{
	return i < t->n ? t->all[i] : NULL;
}

void iwd_table_free(struct iwd_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free_pending(&t->all[i]->s[0]);
		free_pending(&t->all[i]->s[1]);
		iwd_sess_free(&t->all[i]->sess);
		free(t->all[i]);
	}
	free(t->all);
	free(t);
}
