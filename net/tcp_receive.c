/* ACK processing, the send window and arriving data (lwIP's
 * tcp_receive): new ACKs advance snd_una and feed RTT and congestion
 * control, duplicate ACKs drive fast retransmit (RFC 5681/6582) and SACK
 * recovery (RFC 6675), window updates follow RFC 9293 sec. 3.10.7.4, and
 * payload goes into the receive buffer in order or as out-of-order
 * reassembly. */
#include "tcp_internal.h"

void iwn_tcp_set_window(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, bool syn)
{
	c->snd_wnd = (uint32_t)h->win << (syn ? 0 : c->snd_ws);
	c->snd_wl1 = h->seq;
	c->snd_wl2 = h->ack;
	if (c->snd_wnd > c->max_sndwnd)
		c->max_sndwnd = c->snd_wnd;
}

void iwn_tcp_new_ack(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
{
	uint32_t ack = h->ack;
	uint32_t flight = c->snd_max - c->snd_una;
	uint32_t acked = ack - c->snd_una;
	uint32_t data = acked;
	uint32_t dend = iwn_tcp_data_end(c);
	if (c->snd_una == c->iss)
		data--; /* our SYN */
	if (c->fin_queued && iwn_seq_gt(ack, dend))
		data--; /* our FIN */
	iwn_sndbuf_consume(&c->sb, data);
	if (c->rtt_on && iwn_seq_gt(ack, c->rtt_seq)) {
		iwn_rtt_sample(&c->rtt, now - c->rtt_start);
		c->rtt_on = false;
	} else if (!c->rtt_on && c->ts_on && h->opt.has_ts && h->opt.tsecr) {
		/* RTTM (RFC 7323 sec. 4): the echoed timestamp dates the segment
		 * this ACK answers, even after retransmissions where Karn's rule
		 * leaves the precise timer without a sample. 1 ms ticks. */
		uint32_t ms = iwn_tcp_ts_now(c, now) - h->opt.tsecr;
		if (ms < 0x7FFFFFFFu)
			iwn_rtt_sample(&c->rtt, (uint64_t)ms * 1000);
	}
	c->retries = 0;
	c->progress_at = now;
	c->snd_una = ack;
	if (iwn_seq_lt(c->snd_nxt, c->snd_una))
		c->snd_nxt = c->snd_una;
	iwn_sack_prune(&c->sacked, c->snd_una);
	enum iwn_cc_action a = iwn_cc_on_ack(&c->cc, ack, acked, flight);
	if (c->snd_una == c->snd_max) {
		c->rto_at = IWN_TCP_NEVER;
		c->persist = false;
		iwn_tcp_track_wait(c, now);
	} else {
		iwn_tcp_arm_rto(c, now);
	}
	/* NewReno partial ACK: resend the next hole unless SACK recovery
	 * already did. */
	if (a == IWN_CC_RETRANSMIT && !(c->sack_on && iwn_seq_lt(c->snd_una, c->rexmit_nxt)))
		iwn_tcp_retransmit_first(c, now);
}

/* RFC 5681 duplicate ACK: the segment as sent (before trimming) carries
 * no data, and a closed window does not count. */
static void dup_ack(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, bool advanced, uint64_t now)
{
	uint32_t win = (uint32_t)h->win << c->snd_ws;
	bool bare_ack = h->plen == 0 && !(h->flags & IWN_TCP_FIN);
	if (advanced || !bare_ack || h->ack != c->snd_una || win != c->snd_wnd || c->snd_max == c->snd_una ||
	    c->snd_wnd == 0)
		return;
	c->stats.dupacks++;
	uint32_t flight = c->snd_max - c->snd_una;
	bool was = c->cc.in_recovery;
	if (iwn_cc_on_dupack(&c->cc, c->snd_una, c->snd_max, flight) == IWN_CC_RETRANSMIT) {
		c->stats.fast_retransmits++;
		c->rexmit_nxt = c->snd_una;
		iwn_tcp_retransmit_first(c, now);
	} else if (was) {
		iwn_tcp_retransmit_hole(c, now); /* the inflation pays for it */
	}
}

/* Take the peer's window from a segment newer than the last update. */
static void update_window(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint32_t seq, uint64_t now)
{
	if (!(iwn_seq_lt(c->snd_wl1, seq) || (c->snd_wl1 == seq && iwn_seq_le(c->snd_wl2, h->ack))))
		return;
	uint32_t old_wnd = c->snd_wnd;
	iwn_tcp_set_window(c, h, false);
	if (c->snd_wnd == 0 && h->ack == c->snd_una)
		c->retries = 0; /* a probe was answered: the peer lives */
	if (c->snd_wnd && c->persist) {
		c->persist = false;
		c->rto_at = IWN_TCP_NEVER;
	}
	if (old_wnd == 0 && c->snd_wnd && h->ack == c->snd_una && c->snd_nxt != c->snd_una) {
		/* The window reopened while a probe byte, dropped by the
		 * closed window, counts as in flight: resend from snd_una
		 * now instead of after a backed-off RTO, whose backoff
		 * came from probing and not from loss. */
		c->snd_nxt = c->snd_una;
		c->rtt_on = false;
		iwn_rtt_reset_backoff(&c->rtt);
		iwn_tcp_arm_rto(c, now);
	}
}

/* The ACK field of a segment at seq. false: it acknowledged what we
 * never sent (answered with an ACK; the segment is dropped). */
bool iwn_tcp_receive_ack(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint32_t seq, uint64_t now)
{
	if (iwn_seq_gt(h->ack, c->snd_max)) {
		c->stats.bad_acks++;
		c->ack_now = true;
		iwn_tcp_output(c, now, false);
		return false;
	}
	bool advanced = iwn_seq_gt(h->ack, c->snd_una);
	if (advanced)
		iwn_tcp_new_ack(c, h, now);
	if (c->sack_on && h->opt.n_sack)
		iwn_sack_add(&c->sacked, (const uint32_t(*)[2])h->opt.sack, h->opt.n_sack, c->snd_una, c->snd_max);
	dup_ack(c, h, advanced, now);
	update_window(c, h, seq, now);
	return true;
}

/* Payload ahead of a hole: kept for reassembly, the MPA-aware hook sees it. */
static void receive_ooo(struct iwn_tcp_conn *c, const struct iwn_tcp_in *s, uint64_t off)
{
	c->stats.ooo_segs++;
	c->last_ooo = off;
	if (c->ooo)
		c->ooo(c->ooo_arg, c, off, s->data, s->plen);
	if (iwn_rcvbuf_insert(&c->rb, off, s->data, s->plen) < 0)
		c->stats.ooo_dropped++;
	c->ack_now = true; /* duplicate ACK for the sender's fast retransmit */
}

/* In-order payload (it may fill holes); ACK now or delayed. */
static void receive_in_order(struct iwn_tcp_conn *c, const struct iwn_tcp_in *s, uint64_t off, uint64_t now)
{
	bool had_holes = c->rb.n_ooo > 0;
	int64_t adv = iwn_rcvbuf_insert(&c->rb, off, s->data, s->plen);
	if (adv > 0) {
		c->rcv_nxt += (uint32_t)adv;
		c->unacked_bytes += (uint32_t)adv;
	}
	if (had_holes || c->unacked_bytes >= 2u * c->cfg.mss || c->cfg.delack_us == 0)
		c->ack_now = true;
	else if (c->delack_at == IWN_TCP_NEVER)
		c->delack_at = now + c->cfg.delack_us;
}

/* The segment's payload and FIN, once its ACK was processed. */
void iwn_tcp_receive_data(struct iwn_tcp_conn *c, const struct iwn_tcp_in *s, uint64_t now)
{
	if (s->plen && iwn_tcp_accepts_data(c) && !c->fin_rcvd) {
		uint64_t off = c->rb.nxt + (s->seq - c->rcv_nxt);
		c->stats.bytes_in += s->plen;
		if (s->seq != c->rcv_nxt)
			receive_ooo(c, s, off);
		else
			receive_in_order(c, s, off, now);
	}
	if (s->fin && iwn_tcp_accepts_data(c) && !c->fin_rcvd) {
		c->fin_pending = true;
		c->fin_seq = s->seq + s->plen;
	}
}
