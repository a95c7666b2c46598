/* Sending: segments built from the send buffer, the send loop with its
 * congestion, window and silly-window limits, retransmissions, and the
 * RTO/persist arming that goes with them (lwIP's tcp_out.c). */
#include "tcp_internal.h"

#include "gso.h"

#include <string.h>

static uint16_t window_field(struct iwn_tcp_conn *c, bool syn)
{
	uint32_t free = iwn_rcvbuf_window(&c->rb);
	if (syn)
		return (uint16_t)(free > 0xFFFF ? 0xFFFF : free);
	/* Never move the right edge back (RFC 9293 sec. 3.8.6.2.1). */
	uint32_t adv = iwn_tcp_rcv_wnd(c);
	if (free < adv)
		free = adv + ((1u << c->rcv_ws) - 1);
	uint32_t f = free >> c->rcv_ws;
	return (uint16_t)(f > 0xFFFF ? 0xFFFF : f);
}

/* SACK blocks for an ACK (RFC 2018 sec. 4): the block holding the newest
 * out-of-order arrival first, then the others; as many as fit the option
 * space and, on a data segment, the MSS next to len data bytes. */
static void sack_blocks(struct iwn_tcp_conn *c, struct iwn_tcp_opts *o, uint32_t len)
{
	uint32_t room = c->eff_mss > len ? c->eff_mss - len : 0;
	uint32_t max = c->ts_on ? 3 : IWN_TCP_MAX_SACK;
	if (room < 12)
		return;
	if ((room - 4) / 8 < max)
		max = (room - 4) / 8;
	const struct iwn_rcvbuf *rb = &c->rb;
	uint32_t first = 0;
	for (uint32_t i = 0; i < rb->n_ooo; i++)
		if (rb->ooo[i].start <= c->last_ooo && c->last_ooo < rb->ooo[i].end)
			first = i;
	uint8_t n = 0;
	for (uint32_t k = 0; k < rb->n_ooo && n < max; k++) {
		uint32_t i = k == 0 ? first : (k <= first ? k - 1 : k);
		o->sack[n][0] = c->rcv_nxt + (uint32_t)(rb->ooo[i].start - rb->nxt);
		o->sack[n][1] = c->rcv_nxt + (uint32_t)(rb->ooo[i].end - rb->nxt);
		n++;
	}
	o->n_sack = n;
	c->stats.sack_blocks_sent += n;
}

/* Build and hand out one segment; len data bytes from the send buffer at
 * sequence seq. */
void iwn_tcp_send_seg(struct iwn_tcp_conn *c, uint64_t now, uint32_t seq, uint8_t flags, uint32_t len)
{
	uint8_t *base = c->txbuf_get ? c->txbuf_get(c->out_arg) : NULL;
	uint8_t *seg = (base ? base : c->txbuf) + c->headroom;
	struct iwn_tcp_hdr h;
	memset(&h, 0, sizeof(h));
	h.sport = c->lport;
	h.dport = c->rport;
	h.seq = seq;
	h.flags = flags;
	bool syn = flags & IWN_TCP_SYN;
	if (flags & IWN_TCP_ACK)
		h.ack = c->rcv_nxt;
	if (syn) {
		h.opt.has_mss = true;
		h.opt.mss = c->cfg.mss;
		/* Passive side: echo the option only when the peer sent it. */
		if (c->cfg.wscale && (!c->passive || c->ws_on)) {
			h.opt.has_ws = true;
			h.opt.ws = c->rcv_ws;
		}
	}
	if (syn && c->cfg.sack && (!c->passive || c->sack_on))
		h.opt.sack_ok = true;
	if (!(flags & IWN_TCP_RST) &&
	    (c->ts_on || (syn && c->cfg.timestamps && c->state == IWN_TCP_SYN_SENT))) {
		h.opt.has_ts = true;
		h.opt.tsval = iwn_tcp_ts_now(c, now);
		h.opt.tsecr = (flags & IWN_TCP_ACK) ? c->ts_recent : 0;
	}
	/* A reset carries no options beyond what identifies it (as with
	 * timestamps above): SACK blocks on an abort's RST|ACK are noise. */
	/* A super-segment's options repeat on each wire segment of out_gso
	 * bytes: that is what they must fit next to. */
	if (!syn && (flags & IWN_TCP_ACK) && !(flags & IWN_TCP_RST) && c->sack_on && c->rb.n_ooo)
		sack_blocks(c, &h.opt, c->out_gso ? c->out_gso : len);
	h.win = (flags & IWN_TCP_RST) ? 0 : window_field(c, syn);
	size_t hlen = iwn_tcp_build(seg, &h);
	if (len)
		iwn_sndbuf_copy(&c->sb, seq - (c->iss + 1 + (uint32_t)c->sb.base), seg + hlen, len);
	if (c->cfg.csum_offload)
		iwn_tcp_set_csum_partial(seg, hlen + len, c->laddr, c->raddr);
	else
		iwn_tcp_set_csum(seg, hlen + len, c->laddr, c->raddr);
	if (flags & IWN_TCP_ACK) {
		c->last_ack_sent = c->rcv_nxt;
		c->ack_now = false;
		c->delack_at = IWN_TCP_NEVER;
		c->unacked_bytes = 0;
		uint32_t edge = c->rcv_nxt + ((uint32_t)h.win << (syn ? 0 : c->rcv_ws));
		if (iwn_seq_gt(edge, c->rcv_adv))
			c->rcv_adv = edge;
	}
	c->stats.segs_out++;
	c->stats.bytes_out += len;
	if (c->out_gso) {
		c->stats.gso_sends++;
		c->stats.gso_wire_segs += iwn_gso_segs(len, c->out_gso);
	}
	c->out_now = now;
	c->out(c->out_arg, c, c->laddr, c->raddr, seg, (uint32_t)(hlen + len));
	c->out_gso = 0;
}

/* Data of ours waits for the peer: unacknowledged sequence space (data,
 * SYN, FIN) or data its zero window holds back. */
static bool waiting_on_peer(const struct iwn_tcp_conn *c)
{
	return c->snd_una != c->snd_max || (c->snd_wnd == 0 && iwn_seq_lt(c->snd_nxt, iwn_tcp_data_end(c)));
}

/* The user timeout counts from when waiting began or last moved on. */
void iwn_tcp_track_wait(struct iwn_tcp_conn *c, uint64_t now)
{
	bool w = waiting_on_peer(c);
	if (w && !c->waiting)
		c->progress_at = now;
	c->waiting = w;
}

/* An RTO or persist deadline, not later than the user timeout. */
uint64_t iwn_tcp_retransmit_at(const struct iwn_tcp_conn *c, uint64_t now)
{
	uint64_t at = now + c->rtt.rto;
	if (c->cfg.user_timeout_us && c->waiting && c->progress_at + c->cfg.user_timeout_us < at)
		at = c->progress_at + c->cfg.user_timeout_us;
	return at;
}

void iwn_tcp_arm_rto(struct iwn_tcp_conn *c, uint64_t now)
{
	iwn_tcp_track_wait(c, now);
	c->rto_at = iwn_tcp_retransmit_at(c, now);
	c->persist = false;
}

/* A segment of len bytes at send-buffer offset off would end inside a
 * record that could go whole: one no longer than a segment and than the
 * largest window the peer has offered (a record that never fits is cut
 * as plain bytes are, or nothing would ever move). */
static bool record_cut(const struct iwn_tcp_conn *c, uint32_t off, uint32_t len)
{
	uint32_t rec = iwn_sndbuf_reclen(&c->sb, off);
	return rec > len && rec <= c->eff_mss && rec <= c->max_sndwnd;
}

/* Send what the windows allow; force sends one segment even into a
 * closed window (RTO retransmission, zero-window probe). */
void iwn_tcp_output(struct iwn_tcp_conn *c, uint64_t now, bool force)
{
	switch (c->state) {
	case IWN_TCP_CLOSED:
		return;
	case IWN_TCP_SYN_SENT:
	case IWN_TCP_SYN_RCVD:
		if (c->snd_nxt == c->iss) {
			uint8_t fl = IWN_TCP_SYN | (c->state == IWN_TCP_SYN_RCVD ? IWN_TCP_ACK : 0);
			if (c->snd_max == c->iss && !c->rtt_on) {
				c->rtt_on = true;
				c->rtt_seq = c->iss;
				c->rtt_start = now;
			}
			iwn_tcp_send_seg(c, now, c->iss, fl, 0);
			c->snd_nxt = c->iss + 1;
			c->snd_max = iwn_seq_max(c->snd_max, c->snd_nxt);
			if (c->rto_at == IWN_TCP_NEVER)
				iwn_tcp_arm_rto(c, now);
		}
		return;
	case IWN_TCP_TIME_WAIT:
		if (c->ack_now)
			iwn_tcp_send_seg(c, now, c->snd_nxt, IWN_TCP_ACK, 0);
		return;
	default:
		break;
	}
	bool sent = false, held = false;
	for (;;) {
		uint32_t dend = iwn_tcp_data_end(c);
		/* Limited transmit (RFC 3042): the first two duplicate ACKs each
		 * let one new segment out beyond cwnd. */
		uint32_t cwnd = c->cc.cwnd;
		if (!c->cc.in_recovery && c->cc.dupacks < IWN_DUPACK_THRESH)
			cwnd += c->cc.dupacks * c->eff_mss;
		uint32_t wnd = c->snd_wnd < cwnd ? c->snd_wnd : cwnd;
		uint32_t limit = c->snd_una + wnd;
		uint32_t usable = iwn_seq_lt(c->snd_nxt, limit) ? limit - c->snd_nxt : 0;
		uint32_t avail = iwn_seq_lt(c->snd_nxt, dend) ? dend - c->snd_nxt : 0;
		uint32_t want = avail < usable ? avail : usable;
		uint32_t room = want; /* before the one-segment limit */
		if (want > c->eff_mss)
			want = c->eff_mss;
		if (force && want == 0 && avail > 0)
			want = 1;
		uint32_t len = want;
		uint32_t off = c->snd_nxt - (c->iss + 1 + (uint32_t)c->sb.base);
		if (len)
			len = iwn_sndbuf_seglen(&c->sb, off, len);
		if (len && record_cut(c, off, len)) {
			/* The window would cut a record that fits a segment: hold
			 * it until the window takes it whole (the persist timer
			 * below keeps asking); a forced probe sends 1 byte, the
			 * least a record can be cut by. */
			if (!force) {
				held = true;
				break;
			}
			len = 1;
		}
		/* Several whole segments' worth may go as one super-segment,
		 * cut by the kernel into the same segments (net/gso.h). */
		uint32_t gso = 0;
		if (c->cfg.gso_max && !force && room > c->eff_mss) {
			uint32_t glen = iwn_gso_plan(&c->sb, off, room < c->cfg.gso_max ? room : c->cfg.gso_max,
						     c->eff_mss, &gso);
			if (glen)
				len = glen;
		}
		bool fin = c->fin_queued && iwn_seq_le(c->snd_nxt, dend) && c->snd_nxt + len == dend;
		if (len == 0 && !fin)
			break;
		if (len > 0 && !force && !gso) {
			/* Sender silly-window avoidance (RFC 9293 sec. 3.8.6.2.1);
			 * a cut at a record boundary always goes. */
			bool ok = len == c->eff_mss || len < want || c->snd_nxt == c->snd_una ||
				  (c->cfg.nodelay && c->snd_nxt + len == dend) || len >= c->max_sndwnd / 2;
			if (!ok)
				break;
		}
		if (!c->rtt_on && iwn_seq_ge(c->snd_nxt, c->snd_max)) {
			c->rtt_on = true;
			c->rtt_seq = c->snd_nxt;
			c->rtt_start = now;
		}
		if (iwn_seq_lt(c->snd_nxt, c->snd_max))
			c->stats.retransmitted_segs++;
		c->out_gso = gso;
		iwn_tcp_send_seg(c, now, c->snd_nxt, IWN_TCP_ACK | (len ? IWN_TCP_PSH : 0) | (fin ? IWN_TCP_FIN : 0), len);
		c->snd_nxt += len + (fin ? 1 : 0);
		c->snd_max = iwn_seq_max(c->snd_max, c->snd_nxt);
		if (c->rto_at == IWN_TCP_NEVER || c->persist)
			iwn_tcp_arm_rto(c, now);
		sent = true;
		force = false;
	}
	if (!sent && c->ack_now)
		iwn_tcp_send_seg(c, now, c->snd_nxt, IWN_TCP_ACK, 0);
	iwn_tcp_track_wait(c, now);
	/* Zero window (or a window too short for the next record) with data
	 * waiting and nothing in flight: probe later. */
	if (c->snd_una == c->snd_max && (c->snd_wnd == 0 || held) &&
	    iwn_seq_lt(c->snd_nxt, iwn_tcp_data_end(c)) && c->rto_at == IWN_TCP_NEVER) {
		c->rto_at = iwn_tcp_retransmit_at(c, now);
		c->persist = true;
	}
}

/* Resend the first unacknowledged segment (fast retransmit, NewReno
 * partial ACK) without moving snd_nxt. */
void iwn_tcp_retransmit_first(struct iwn_tcp_conn *c, uint64_t now)
{
	uint32_t dend = iwn_tcp_data_end(c);
	uint32_t inflight_data = iwn_seq_lt(c->snd_una, dend) ? iwn_seq_min(c->snd_max, dend) - c->snd_una : 0;
	uint32_t len = inflight_data < c->eff_mss ? inflight_data : c->eff_mss;
	if (len)
		len = iwn_sndbuf_seglen(&c->sb, c->snd_una - (c->iss + 1 + (uint32_t)c->sb.base), len);
	bool fin = c->fin_queued && iwn_seq_gt(c->snd_max, dend) && c->snd_una + len == dend;
	if (len == 0 && !fin)
		return;
	c->rtt_on = false; /* Karn */
	c->stats.retransmitted_segs++;
	iwn_tcp_send_seg(c, now, c->snd_una, IWN_TCP_ACK | (len ? IWN_TCP_PSH : 0) | (fin ? IWN_TCP_FIN : 0), len);
	c->rexmit_nxt = iwn_seq_max(c->rexmit_nxt, c->snd_una + len);
	iwn_tcp_arm_rto(c, now);
}

/* In recovery with SACK: resend the next hole below the highest SACKed
 * byte not resent yet. true when one went out. */
bool iwn_tcp_retransmit_hole(struct iwn_tcp_conn *c, uint64_t now)
{
	uint32_t hs, he;
	if (!c->sack_on || !iwn_sack_next_hole(&c->sacked, c->snd_una, c->rexmit_nxt, &hs, &he))
		return false;
	uint32_t dend = iwn_tcp_data_end(c);
	uint32_t lim = iwn_seq_min(he, iwn_seq_min(dend, c->snd_max));
	if (!iwn_seq_lt(hs, lim))
		return false;
	uint32_t len = lim - hs < c->eff_mss ? lim - hs : c->eff_mss;
	len = iwn_sndbuf_seglen(&c->sb, hs - (c->iss + 1 + (uint32_t)c->sb.base), len);
	if (len == 0)
		return false;
	c->rtt_on = false; /* Karn */
	c->stats.retransmitted_segs++;
	c->stats.sack_rexmits++;
	iwn_tcp_send_seg(c, now, hs, IWN_TCP_ACK | IWN_TCP_PSH, len);
	c->rexmit_nxt = hs + len;
	return true;
}
