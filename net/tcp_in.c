/* Segment arrival (RFC 9293 sec. 3.10.7), split as lwIP's tcp_in.c is:
 *   tcp_input   iwn_tcp_input: the checks every segment of a synchronized
 *               connection passes (RST, SYN, PAWS, the receive window);
 *   tcp_process per-state handling: the handshake, RST and SYN in a
 *               synchronized state (RFC 5961 challenge ACKs), the FIN states;
 *   tcp_receive ACKs (RTT, congestion control, duplicate ACKs and SACK
 *               recovery), window updates, in-order data and reassembly.
 * One file, so the compiler keeps the per-segment path inlined. */
#include "tcp_internal.h"

#include <errno.h>

#define DEFAULT_PEER_MSS 536 /* RFC 9293 sec. 3.7.1 */

/* What is left of an arriving segment once trimmed to the receive window. */
struct iwn_tcp_in {
	uint32_t seq, plen;
	const uint8_t *data;
	bool fin;
};

/* ---- tcp_receive: ACKs, the send window, data ---- */

/* An ACK for new sequence space: the send buffer, RTT, congestion
 * control and the retransmission timer move on. */
static void new_ack(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
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
static bool tcp_receive_ack(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint32_t seq, uint64_t now)
{
	if (iwn_seq_gt(h->ack, c->snd_max)) {
		c->stats.bad_acks++;
		c->ack_now = true;
		iwn_tcp_output(c, now, false);
		return false;
	}
	bool advanced = iwn_seq_gt(h->ack, c->snd_una);
	if (advanced)
		new_ack(c, h, now);
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
static void tcp_receive_data(struct iwn_tcp_conn *c, const struct iwn_tcp_in *s, uint64_t now)
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

/* ---- tcp_process: per state ---- */

static void send_rst(struct iwn_tcp_conn *c, uint32_t seq, uint64_t now)
{
	iwn_tcp_send_seg(c, now, seq, IWN_TCP_RST, 0);
}

static void challenge_ack(struct iwn_tcp_conn *c, uint64_t now)
{
	c->ack_now = true; /* RFC 5961 challenge ACK */
	iwn_tcp_output(c, now, false);
}

void iwn_tcp_take_syn_options(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h)
{
	c->peer_mss = h->opt.has_mss && h->opt.mss ? h->opt.mss : DEFAULT_PEER_MSS;
	c->eff_mss = c->peer_mss < c->cfg.mss ? c->peer_mss : c->cfg.mss;
	c->ws_on = c->cfg.wscale && h->opt.has_ws;
	if (c->ws_on) {
		c->snd_ws = h->opt.ws;
		c->rcv_ws = iwn_tcp_our_wscale(c->cfg.rcvbuf);
	} else {
		c->snd_ws = 0;
		c->rcv_ws = 0;
	}
	c->sack_on = c->cfg.sack && h->opt.sack_ok;
	c->ts_on = c->cfg.timestamps && h->opt.has_ts;
	if (c->ts_on) {
		c->ts_recent = h->opt.tsval;
		if (c->eff_mss > 12 + 1)
			c->eff_mss -= 12; /* every segment carries the option */
	}
	c->irs = h->seq;
	c->rcv_nxt = h->seq + 1;
	c->rcv_adv = c->rcv_nxt;
}

static void established(struct iwn_tcp_conn *c)
{
	/* A close in SYN-RECEIVED waited for this (RFC 9293 sec. 3.10.4). */
	c->state = c->fin_queued ? IWN_TCP_FIN_WAIT_1 : IWN_TCP_ESTABLISHED;
	iwn_cc_init(&c->cc, c->eff_mss);
}

/* SYN-SENT (RFC 9293 sec. 3.10.7.3): a SYN-ACK for our SYN completes
 * the handshake, a bare SYN is a simultaneous open. */
static void syn_sent_input(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
{
	bool ack = h->flags & IWN_TCP_ACK;
	if (ack && (iwn_seq_le(h->ack, c->iss) || iwn_seq_gt(h->ack, c->snd_max))) {
		if (!(h->flags & IWN_TCP_RST))
			send_rst(c, h->ack, now); /* seq = SEG.ACK, no ACK bit */
		return;
	}
	if (h->flags & IWN_TCP_RST) {
		if (ack)
			iwn_tcp_close_with(c, -ECONNREFUSED);
		return;
	}
	if (!(h->flags & IWN_TCP_SYN))
		return;
	iwn_tcp_take_syn_options(c, h);
	if (ack) {
		established(c);
		iwn_tcp_set_window(c, h, true);
		new_ack(c, h, now);
		c->ack_now = true;
		iwn_tcp_output(c, now, false);
	} else {
		/* Simultaneous open: answer with SYN-ACK. */
		iwn_tcp_set_window(c, h, true);
		c->state = IWN_TCP_SYN_RCVD;
		c->snd_nxt = c->iss;
		c->rto_at = IWN_TCP_NEVER;
		iwn_tcp_output(c, now, false);
	}
}

/* The peer's FIN, once every byte before it arrived. */
static void consume_fin(struct iwn_tcp_conn *c, uint64_t now)
{
	if (!c->fin_pending || c->fin_rcvd || c->fin_seq != c->rcv_nxt)
		return;
	c->fin_pending = false;
	c->fin_rcvd = true;
	c->rcv_nxt++;
	c->ack_now = true;
	switch (c->state) {
	case IWN_TCP_SYN_RCVD:
	case IWN_TCP_ESTABLISHED:
		c->state = IWN_TCP_CLOSE_WAIT;
		break;
	case IWN_TCP_FIN_WAIT_1:
		if (iwn_tcp_fin_acked(c))
			iwn_tcp_enter_time_wait(c, now);
		else
			c->state = IWN_TCP_CLOSING;
		break;
	case IWN_TCP_FIN_WAIT_2:
		iwn_tcp_enter_time_wait(c, now);
		break;
	default:
		break;
	}
}

/* A RST in a synchronized state: at rcv_nxt it closes the connection,
 * elsewhere in the window it earns a challenge ACK (RFC 5961 sec. 3). */
static void rst_input(struct iwn_tcp_conn *c, uint32_t seq, uint64_t now)
{
	uint32_t wnd = iwn_tcp_rcv_wnd(c);

	if (seq == c->rcv_nxt) {
		if (c->state == IWN_TCP_TIME_WAIT || c->state == IWN_TCP_CLOSING || c->state == IWN_TCP_LAST_ACK)
			iwn_tcp_close_with(c, 0);
		else
			iwn_tcp_close_with(c, c->passive && c->state == IWN_TCP_SYN_RCVD ? -ECONNREFUSED : -ECONNRESET);
	} else if (iwn_seq_gt(seq, c->rcv_nxt) && iwn_seq_lt(seq, c->rcv_nxt + (wnd ? wnd : 1))) {
		challenge_ack(c, now);
	}
}

/* A SYN in a synchronized state. true: go on with the segment (*seq
 * moved past a simultaneous open's SYN). */
static bool syn_input(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint32_t *seq, uint64_t now)
{
	if (c->state == IWN_TCP_SYN_RCVD && *seq == c->irs && (h->flags & IWN_TCP_ACK)) {
		(*seq)++; /* simultaneous open: the SYN is old news, its ACK is not */
		return true;
	}
	if (c->state == IWN_TCP_SYN_RCVD && *seq == c->irs) {
		c->snd_nxt = c->iss; /* our SYN-ACK was lost */
		iwn_tcp_output(c, now, false);
		return false;
	}
	challenge_ack(c, now);
	return false;
}

/* SYN-RECEIVED: an acceptable ACK completes the handshake. false: it
 * was not, a RST answered it. */
static bool syn_rcvd_acked(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
{
	if (iwn_seq_gt(h->ack, c->snd_una) && iwn_seq_le(h->ack, c->snd_max)) {
		established(c);
		iwn_tcp_set_window(c, h, false);
		return true;
	}
	send_rst(c, h->ack, now);
	return false;
}

/* The closing states move on once our FIN is acknowledged. false: the
 * connection is closed. */
static bool fin_states(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, bool fin, uint64_t now)
{
	switch (c->state) {
	case IWN_TCP_FIN_WAIT_1:
		if (iwn_tcp_fin_acked(c)) {
			c->state = IWN_TCP_FIN_WAIT_2;
			if (c->orphan)
				c->tw_at = now + c->cfg.fin_wait2_us;
		}
		break;
	case IWN_TCP_CLOSING:
		if (iwn_tcp_fin_acked(c))
			iwn_tcp_enter_time_wait(c, now);
		break;
	case IWN_TCP_LAST_ACK:
		if (iwn_tcp_fin_acked(c)) {
			iwn_tcp_close_with(c, 0);
			return false;
		}
		break;
	case IWN_TCP_TIME_WAIT:
		if (fin || h->flags & IWN_TCP_FIN) {
			c->ack_now = true;
			iwn_tcp_enter_time_wait(c, now);
		}
		break;
	default:
		break;
	}
	return true;
}

/* An acceptable segment with ACK in a synchronized state (or completing
 * SYN-RECEIVED), trimmed to the window. */
static void tcp_process(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, struct iwn_tcp_in *s, uint64_t now)
{
	if (c->state == IWN_TCP_SYN_RCVD && !syn_rcvd_acked(c, h, now))
		return;
	if (!tcp_receive_ack(c, h, s->seq, now))
		return;
	if (!fin_states(c, h, s->fin, now))
		return;
	tcp_receive_data(c, s, now);
	consume_fin(c, now);
	if (c->cfg.batch_output)
		iwn_tcp_mark_output(c, now);
	else
		iwn_tcp_output(c, now, false);
}

/* ---- tcp_input: the checks ---- */

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
		syn_sent_input(c, h, now);
		return;
	}
	struct iwn_tcp_in s = { .seq = h->seq, .plen = h->plen, .data = h->payload, .fin = h->flags & IWN_TCP_FIN };

	if (h->flags & IWN_TCP_RST) {
		rst_input(c, s.seq, now);
		return;
	}
	if ((h->flags & IWN_TCP_SYN) && !syn_input(c, h, &s.seq, now))
		return;
	if (!paws_ok(c, h, s.seq, now) || !trim_to_window(c, &s, now))
		return;
	if (!(h->flags & IWN_TCP_ACK))
		return;
	tcp_process(c, h, &s, now);
}
