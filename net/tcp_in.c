/* Segment arrival (RFC 9293 sec. 3.10.7), the entry point, like lwIP's
 * tcp_input: the checks every segment of a synchronized connection
 * passes (RST, SYN, PAWS, the receive window) before tcp_process.c
 * handles it by state. */
#include "tcp_internal.h"

/* PAWS (RFC 7323 sec. 5.3): an older timestamp marks an old duplicate.
 * false: dropped (answered with an ACK). */
static bool paws_ok(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint32_t seq, uint64_t now)
{
	if (!c->ts_on || !h->opt.has_ts)
		return true;
	if (iwn_seq_lt(h->opt.tsval, c->ts_recent)) {
		c->stats.paws_dropped++;
		c->ack_now = true;
		iwn_tcp_output(c, now, false);
		return false;
	}
	if (iwn_seq_le(seq, c->last_ack_sent))
		c->ts_recent = h->opt.tsval; /* sec. 4.3: only from the left window edge */
	return true;
}

/* Trim s to the receive window (RFC 9293 sec. 3.10.7.4 first check).
 * false: nothing of it is acceptable (answered with an ACK). */
static bool trim_to_window(struct iwn_tcp_conn *c, struct iwn_tcp_in *s, uint64_t now)
{
	uint32_t wnd = iwn_tcp_rcv_wnd(c);

	if (iwn_seq_lt(s->seq, c->rcv_nxt)) {
		uint32_t d = c->rcv_nxt - s->seq;
		if (d > s->plen || (d == s->plen && !s->fin)) {
			/* Entirely old: only its ACK field is of use. An empty
			 * one before rcv_nxt (a keepalive probe) is not
			 * acceptable either and is answered with an ACK too
			 * (RFC 9293 sec. 3.10.7.4). */
			if (s->plen || s->fin)
				c->stats.dup_segs++;
			c->ack_now = true;
			s->plen = 0;
			s->fin = false;
		} else {
			s->data += d;
			s->plen -= d;
		}
		s->seq = c->rcv_nxt;
	}
	uint32_t right = c->rcv_nxt + wnd;
	if (iwn_seq_gt(s->seq + s->plen, right)) {
		if (iwn_seq_gt(s->seq, right) || (s->seq == right && s->seq != c->rcv_nxt)) {
			c->ack_now = true;
			iwn_tcp_output(c, now, false);
			return false;
		}
		s->plen = right - s->seq; /* zero-window probe: keep its ACK */
		s->fin = false;
		c->ack_now = true;
	}
	return true;
}

void iwn_tcp_input(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
{
	if (c->state == IWN_TCP_CLOSED)
		return;
	c->stats.segs_in++;
	c->heard_at = now;
	c->ka_sent = 0;
	if (c->state == IWN_TCP_SYN_SENT) {
		iwn_tcp_syn_sent_input(c, h, now);
		return;
	}
	struct iwn_tcp_in s = { .seq = h->seq, .plen = h->plen, .data = h->payload, .fin = h->flags & IWN_TCP_FIN };

	if (h->flags & IWN_TCP_RST) {
		iwn_tcp_rst_input(c, s.seq, now);
		return;
	}
	if ((h->flags & IWN_TCP_SYN) && !iwn_tcp_syn_input(c, h, &s.seq, now))
		return;
	if (!paws_ok(c, h, s.seq, now) || !trim_to_window(c, &s, now))
		return;
	if (!(h->flags & IWN_TCP_ACK))
		return;
	iwn_tcp_process(c, h, &s, now);
}
