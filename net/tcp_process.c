/* Per-state handling of an arriving segment (lwIP's tcp_process): the
 * handshake (SYN-SENT, SYN-RECEIVED), RST and SYN in a synchronized
 * state (RFC 9293 sec. 3.10.7.4, RFC 5961 challenge ACKs), our FIN being
 * acknowledged and the peer's FIN being consumed. ACK processing, the
 * send window and data go to tcp_receive.c. */
#include "tcp_internal.h"

#include <errno.h>

#define DEFAULT_PEER_MSS 536 /* RFC 9293 sec. 3.7.1 */

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
void iwn_tcp_syn_sent_input(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
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
		iwn_tcp_new_ack(c, h, now);
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
void iwn_tcp_rst_input(struct iwn_tcp_conn *c, uint32_t seq, uint64_t now)
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
bool iwn_tcp_syn_input(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint32_t *seq, uint64_t now)
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
void iwn_tcp_process(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, struct iwn_tcp_in *s, uint64_t now)
{
	if (c->state == IWN_TCP_SYN_RCVD && !syn_rcvd_acked(c, h, now))
		return;
	if (!iwn_tcp_receive_ack(c, h, s->seq, now))
		return;
	if (!fin_states(c, h, s->fin, now))
		return;
	iwn_tcp_receive_data(c, s, now);
	consume_fin(c, now);
	iwn_tcp_output(c, now, false);
}
