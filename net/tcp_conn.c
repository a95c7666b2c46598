/* The connection state machine. Segment arrival follows RFC 9293 sec.
 * 3.10.7 (with RFC 5961 challenge ACKs for in-window RST/SYN); sending,
 * RTO, persist and delayed ACK timers live in the same file because they
 * share the sequence variables. */
#include "tcp_conn.h"

#include <errno.h>
#include <string.h>

#include "seq.h"

#define NEVER UINT64_MAX
#define DEFAULT_PEER_MSS 536 /* RFC 9293 sec. 3.7.1 */

static const char *const state_names[] = {
	"CLOSED",     "SYN-SENT",   "SYN-RECEIVED", "ESTABLISHED", "FIN-WAIT-1",
	"FIN-WAIT-2", "CLOSE-WAIT", "CLOSING",      "LAST-ACK",    "TIME-WAIT",
};

const char *iwn_tcp_state_name(enum iwn_tcp_state s)
{
	return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

void iwn_tcp_cfg_default(struct iwn_tcp_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->sndbuf = 65536;
	cfg->rcvbuf = 65536;
	cfg->max_records = 256;
	cfg->mss = 1460;
	cfg->wscale = true;
	cfg->timestamps = true;
	cfg->sack = true;
	cfg->nodelay = true;
	cfg->rto_min_us = 200000;
	cfg->rto_max_us = 60000000;
	cfg->delack_us = 40000;
	cfg->msl_us = 30000000;
	cfg->fin_wait2_us = 60000000;
	cfg->max_retries = 12;
	cfg->syn_retries = 6;
}

int iwn_tcp_conn_init(struct iwn_tcp_conn *c, const struct iwn_tcp_cfg *cfg, uint8_t *txbuf, uint32_t headroom,
		      iwn_tcp_out_fn out, void *out_arg, const uint8_t *isn_key)
{
	memset(c, 0, sizeof(*c));
	if (!cfg || !txbuf || !out || !isn_key || cfg->mss == 0 || cfg->rcvbuf == 0 || cfg->sndbuf == 0)
		return -EINVAL;
	c->cfg = *cfg;
	int r = iwn_sndbuf_init(&c->sb, cfg->sndbuf, cfg->max_records);
	if (r)
		return r;
	r = iwn_rcvbuf_init(&c->rb, cfg->rcvbuf);
	if (r) {
		iwn_sndbuf_fini(&c->sb);
		return r;
	}
	c->txbuf = txbuf;
	c->headroom = headroom;
	c->out = out;
	c->out_arg = out_arg;
	c->isn_key = isn_key;
	c->rto_at = c->delack_at = c->tw_at = NEVER;
	iwn_rtt_init(&c->rtt, cfg->rto_min_us, cfg->rto_max_us);
	return 0;
}

void iwn_tcp_conn_fini(struct iwn_tcp_conn *c)
{
	iwn_sndbuf_fini(&c->sb);
	iwn_rcvbuf_fini(&c->rb);
}

/* ---- helpers ---- */

static uint32_t data_end(const struct iwn_tcp_conn *c)
{
	return c->iss + 1 + (uint32_t)(c->sb.base + c->sb.len);
}

static bool fin_acked(const struct iwn_tcp_conn *c)
{
	return c->fin_queued && iwn_seq_gt(c->snd_una, data_end(c));
}

static uint8_t our_wscale(uint32_t rcvbuf)
{
	uint8_t s = 0;
	while (s < IWN_TCP_WS_MAX && (rcvbuf >> s) > 0xFFFF)
		s++;
	return s;
}

static void close_with(struct iwn_tcp_conn *c, int err)
{
	c->state = IWN_TCP_CLOSED;
	c->err = err;
	c->rto_at = c->delack_at = c->tw_at = NEVER;
	c->persist = false;
}

static void enter_time_wait(struct iwn_tcp_conn *c, uint64_t now)
{
	c->state = IWN_TCP_TIME_WAIT;
	c->rto_at = NEVER;
	c->persist = false;
	c->tw_at = now + 2 * c->cfg.msl_us;
}

/* RFC 7323 timestamp clock: 1 ms ticks from a per-connection offset. */
static uint32_t ts_now(const struct iwn_tcp_conn *c, uint64_t now)
{
	return (uint32_t)(now / 1000) + c->ts_offset;
}

static uint16_t window_field(struct iwn_tcp_conn *c, bool syn)
{
	uint32_t free = iwn_rcvbuf_window(&c->rb);
	if (syn)
		return (uint16_t)(free > 0xFFFF ? 0xFFFF : free);
	/* Never move the right edge back (RFC 9293 sec. 3.8.6.2.1). */
	uint32_t adv = iwn_seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
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
static void send_seg(struct iwn_tcp_conn *c, uint64_t now, uint32_t seq, uint8_t flags, uint32_t len)
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
		h.opt.tsval = ts_now(c, now);
		h.opt.tsecr = (flags & IWN_TCP_ACK) ? c->ts_recent : 0;
	}
	/* A reset carries no options beyond what identifies it (as with
	 * timestamps above): SACK blocks on an abort's RST|ACK are noise. */
	if (!syn && (flags & IWN_TCP_ACK) && !(flags & IWN_TCP_RST) && c->sack_on && c->rb.n_ooo)
		sack_blocks(c, &h.opt, len);
	h.win = (flags & IWN_TCP_RST) ? 0 : window_field(c, syn);
	size_t hlen = iwn_tcp_build(seg, &h);
	if (len)
		iwn_sndbuf_copy(&c->sb, seq - (c->iss + 1 + (uint32_t)c->sb.base), seg + hlen, len);
	iwn_tcp_set_csum(seg, hlen + len, c->laddr, c->raddr);
	if (flags & IWN_TCP_ACK) {
		c->last_ack_sent = c->rcv_nxt;
		c->ack_now = false;
		c->delack_at = NEVER;
		c->unacked_bytes = 0;
		uint32_t edge = c->rcv_nxt + ((uint32_t)h.win << (syn ? 0 : c->rcv_ws));
		if (iwn_seq_gt(edge, c->rcv_adv))
			c->rcv_adv = edge;
	}
	c->stats.segs_out++;
	c->stats.bytes_out += len;
	c->out_now = now;
	c->out(c->out_arg, c, c->laddr, c->raddr, seg, (uint32_t)(hlen + len));
}

static void send_rst(struct iwn_tcp_conn *c, uint32_t seq, uint64_t now)
{
	send_seg(c, now, seq, IWN_TCP_RST, 0);
}

/* Data of ours waits for the peer: unacknowledged sequence space (data,
 * SYN, FIN) or data its zero window holds back. */
static bool waiting_on_peer(const struct iwn_tcp_conn *c)
{
	return c->snd_una != c->snd_max || (c->snd_wnd == 0 && iwn_seq_lt(c->snd_nxt, data_end(c)));
}

/* The user timeout counts from when waiting began or last moved on. */
static void track_wait(struct iwn_tcp_conn *c, uint64_t now)
{
	bool w = waiting_on_peer(c);
	if (w && !c->waiting)
		c->progress_at = now;
	c->waiting = w;
}

/* An RTO or persist deadline, not later than the user timeout. */
static uint64_t retransmit_at(const struct iwn_tcp_conn *c, uint64_t now)
{
	uint64_t at = now + c->rtt.rto;
	if (c->cfg.user_timeout_us && c->waiting && c->progress_at + c->cfg.user_timeout_us < at)
		at = c->progress_at + c->cfg.user_timeout_us;
	return at;
}

static void arm_rto(struct iwn_tcp_conn *c, uint64_t now)
{
	track_wait(c, now);
	c->rto_at = retransmit_at(c, now);
	c->persist = false;
}

/* Send what the windows allow; force sends one segment even into a
 * closed window (RTO retransmission, zero-window probe). */
static void output(struct iwn_tcp_conn *c, uint64_t now, bool force)
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
			send_seg(c, now, c->iss, fl, 0);
			c->snd_nxt = c->iss + 1;
			c->snd_max = iwn_seq_max(c->snd_max, c->snd_nxt);
			if (c->rto_at == NEVER)
				arm_rto(c, now);
		}
		return;
	case IWN_TCP_TIME_WAIT:
		if (c->ack_now)
			send_seg(c, now, c->snd_nxt, IWN_TCP_ACK, 0);
		return;
	default:
		break;
	}
	bool sent = false;
	for (;;) {
		uint32_t dend = data_end(c);
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
		if (want > c->eff_mss)
			want = c->eff_mss;
		if (force && want == 0 && avail > 0)
			want = 1;
		uint32_t len = want;
		if (len)
			len = iwn_sndbuf_seglen(&c->sb, c->snd_nxt - (c->iss + 1 + (uint32_t)c->sb.base), len);
		bool fin = c->fin_queued && iwn_seq_le(c->snd_nxt, dend) && c->snd_nxt + len == dend;
		if (len == 0 && !fin)
			break;
		if (len > 0 && !force) {
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
		send_seg(c, now, c->snd_nxt, IWN_TCP_ACK | (len ? IWN_TCP_PSH : 0) | (fin ? IWN_TCP_FIN : 0), len);
		c->snd_nxt += len + (fin ? 1 : 0);
		c->snd_max = iwn_seq_max(c->snd_max, c->snd_nxt);
		if (c->rto_at == NEVER || c->persist)
			arm_rto(c, now);
		sent = true;
		force = false;
	}
	if (!sent && c->ack_now)
		send_seg(c, now, c->snd_nxt, IWN_TCP_ACK, 0);
	track_wait(c, now);
	/* Zero window with data waiting and nothing in flight: probe later. */
	if (c->snd_una == c->snd_max && c->snd_wnd == 0 && iwn_seq_lt(c->snd_nxt, data_end(c)) &&
	    c->rto_at == NEVER) {
		c->rto_at = retransmit_at(c, now);
		c->persist = true;
	}
}

/* Resend the first unacknowledged segment (fast retransmit, NewReno
 * partial ACK) without moving snd_nxt. */
static void retransmit_first(struct iwn_tcp_conn *c, uint64_t now)
{
	uint32_t dend = data_end(c);
	uint32_t inflight_data = iwn_seq_lt(c->snd_una, dend) ? iwn_seq_min(c->snd_max, dend) - c->snd_una : 0;
	uint32_t len = inflight_data < c->eff_mss ? inflight_data : c->eff_mss;
	if (len)
		len = iwn_sndbuf_seglen(&c->sb, c->snd_una - (c->iss + 1 + (uint32_t)c->sb.base), len);
	bool fin = c->fin_queued && iwn_seq_gt(c->snd_max, dend) && c->snd_una + len == dend;
	if (len == 0 && !fin)
		return;
	c->rtt_on = false; /* Karn */
	c->stats.retransmitted_segs++;
	send_seg(c, now, c->snd_una, IWN_TCP_ACK | (len ? IWN_TCP_PSH : 0) | (fin ? IWN_TCP_FIN : 0), len);
	c->rexmit_nxt = iwn_seq_max(c->rexmit_nxt, c->snd_una + len);
	arm_rto(c, now);
}

/* In recovery with SACK: resend the next hole below the highest SACKed
 * byte not resent yet. true when one went out. */
static bool retransmit_hole(struct iwn_tcp_conn *c, uint64_t now)
{
	uint32_t hs, he;
	if (!c->sack_on || !iwn_sack_next_hole(&c->sacked, c->snd_una, c->rexmit_nxt, &hs, &he))
		return false;
	uint32_t dend = data_end(c);
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
	send_seg(c, now, hs, IWN_TCP_ACK | IWN_TCP_PSH, len);
	c->rexmit_nxt = hs + len;
	return true;
}

static void take_syn_options(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h)
{
	c->peer_mss = h->opt.has_mss && h->opt.mss ? h->opt.mss : DEFAULT_PEER_MSS;
	c->eff_mss = c->peer_mss < c->cfg.mss ? c->peer_mss : c->cfg.mss;
	c->ws_on = c->cfg.wscale && h->opt.has_ws;
	if (c->ws_on) {
		c->snd_ws = h->opt.ws;
		c->rcv_ws = our_wscale(c->cfg.rcvbuf);
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

static void set_window(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, bool syn)
{
	c->snd_wnd = (uint32_t)h->win << (syn ? 0 : c->snd_ws);
	c->snd_wl1 = h->seq;
	c->snd_wl2 = h->ack;
	if (c->snd_wnd > c->max_sndwnd)
		c->max_sndwnd = c->snd_wnd;
}

static void new_ack(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now)
{
	uint32_t ack = h->ack;
	uint32_t flight = c->snd_max - c->snd_una;
	uint32_t acked = ack - c->snd_una;
	uint32_t data = acked;
	uint32_t dend = data_end(c);
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
		uint32_t ms = ts_now(c, now) - h->opt.tsecr;
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
		c->rto_at = NEVER;
		c->persist = false;
		track_wait(c, now);
	} else {
		arm_rto(c, now);
	}
	/* NewReno partial ACK: resend the next hole unless SACK recovery
	 * already did. */
	if (a == IWN_CC_RETRANSMIT && !(c->sack_on && iwn_seq_lt(c->snd_una, c->rexmit_nxt)))
		retransmit_first(c, now);
}

static void established(struct iwn_tcp_conn *c)
{
	/* A close in SYN-RECEIVED waited for this (RFC 9293 sec. 3.10.4). */
	c->state = c->fin_queued ? IWN_TCP_FIN_WAIT_1 : IWN_TCP_ESTABLISHED;
	iwn_cc_init(&c->cc, c->eff_mss);
}

/* ---- opening ---- */

int iwn_tcp_connect(struct iwn_tcp_conn *c, uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport,
		    uint64_t now)
{
	if (c->state != IWN_TCP_CLOSED || c->snd_max != 0 || c->passive)
		return -EISCONN;
	c->laddr = laddr;
	c->lport = lport;
	c->raddr = raddr;
	c->rport = rport;
	c->iss = iwn_tcp_isn(c->isn_key, laddr, lport, raddr, rport, now);
	c->ts_offset = iwn_tcp_isn(c->isn_key, raddr, rport, laddr, lport, 0);
	c->snd_una = c->snd_nxt = c->snd_max = c->rexmit_nxt = c->iss;
	c->rcv_ws = c->cfg.wscale ? our_wscale(c->cfg.rcvbuf) : 0;
	c->eff_mss = c->cfg.mss;
	c->state = IWN_TCP_SYN_SENT;
	output(c, now, false);
	return 0;
}

int iwn_tcp_accept_syn(struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, const struct iwn_tcp_hdr *h,
		       uint64_t now)
{
	if (c->state != IWN_TCP_CLOSED || !(h->flags & IWN_TCP_SYN) || (h->flags & (IWN_TCP_ACK | IWN_TCP_RST)))
		return -EINVAL;
	c->passive = true;
	c->laddr = laddr;
	c->lport = h->dport;
	c->raddr = raddr;
	c->rport = h->sport;
	c->stats.segs_in++;
	take_syn_options(c, h);
	set_window(c, h, true);
	c->iss = iwn_tcp_isn(c->isn_key, laddr, c->lport, raddr, c->rport, now);
	c->ts_offset = iwn_tcp_isn(c->isn_key, raddr, c->rport, laddr, c->lport, 0);
	c->snd_una = c->snd_nxt = c->snd_max = c->rexmit_nxt = c->iss;
	c->state = IWN_TCP_SYN_RCVD;
	output(c, now, false);
	return 0;
}

/* ---- input ---- */

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
			close_with(c, -ECONNREFUSED);
		return;
	}
	if (!(h->flags & IWN_TCP_SYN))
		return;
	take_syn_options(c, h);
	if (ack) {
		established(c);
		set_window(c, h, true);
		new_ack(c, h, now);
		c->ack_now = true;
		output(c, now, false);
	} else {
		/* Simultaneous open: answer with SYN-ACK. */
		set_window(c, h, true);
		c->state = IWN_TCP_SYN_RCVD;
		c->snd_nxt = c->iss;
		c->rto_at = NEVER;
		output(c, now, false);
	}
}

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
		if (fin_acked(c))
			enter_time_wait(c, now);
		else
			c->state = IWN_TCP_CLOSING;
		break;
	case IWN_TCP_FIN_WAIT_2:
		enter_time_wait(c, now);
		break;
	default:
		break;
	}
}

static bool accepts_data(const struct iwn_tcp_conn *c)
{
	return c->state == IWN_TCP_ESTABLISHED || c->state == IWN_TCP_FIN_WAIT_1 || c->state == IWN_TCP_FIN_WAIT_2;
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
	uint32_t seq = h->seq, plen = h->plen;
	const uint8_t *data = h->payload;
	bool fin = h->flags & IWN_TCP_FIN;
	uint32_t wnd = iwn_seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;

	if (h->flags & IWN_TCP_RST) {
		if (seq == c->rcv_nxt) {
			if (c->state == IWN_TCP_TIME_WAIT || c->state == IWN_TCP_CLOSING || c->state == IWN_TCP_LAST_ACK)
				close_with(c, 0);
			else
				close_with(c, c->passive && c->state == IWN_TCP_SYN_RCVD ? -ECONNREFUSED : -ECONNRESET);
		} else if (iwn_seq_gt(seq, c->rcv_nxt) && iwn_seq_lt(seq, c->rcv_nxt + (wnd ? wnd : 1))) {
			c->ack_now = true; /* RFC 5961 challenge ACK */
			output(c, now, false);
		}
		return;
	}
	if (h->flags & IWN_TCP_SYN) {
		if (c->state == IWN_TCP_SYN_RCVD && seq == c->irs && (h->flags & IWN_TCP_ACK)) {
			seq++; /* simultaneous open: the SYN is old news, its ACK is not */
		} else if (c->state == IWN_TCP_SYN_RCVD && seq == c->irs) {
			c->snd_nxt = c->iss; /* our SYN-ACK was lost */
			output(c, now, false);
			return;
		} else {
			c->ack_now = true; /* RFC 5961 challenge ACK */
			output(c, now, false);
			return;
		}
	}

	/* PAWS (RFC 7323 sec. 5.3): an older timestamp marks an old duplicate. */
	if (c->ts_on && h->opt.has_ts && iwn_seq_lt(h->opt.tsval, c->ts_recent)) {
		c->stats.paws_dropped++;
		c->ack_now = true;
		output(c, now, false);
		return;
	}
	if (c->ts_on && h->opt.has_ts && iwn_seq_le(seq, c->last_ack_sent))
		c->ts_recent = h->opt.tsval; /* sec. 4.3: only from the left window edge */

	/* Trim to the receive window (RFC 9293 sec. 3.10.7.4 first check). */
	if (iwn_seq_lt(seq, c->rcv_nxt)) {
		uint32_t d = c->rcv_nxt - seq;
		if (d > plen || (d == plen && !fin)) {
			/* Entirely old: only its ACK field is of use. An empty
			 * one before rcv_nxt (a keepalive probe) is not
			 * acceptable either and is answered with an ACK too
			 * (RFC 9293 sec. 3.10.7.4). */
			if (plen || fin)
				c->stats.dup_segs++;
			c->ack_now = true;
			plen = 0;
			fin = false;
		} else {
			data += d;
			plen -= d;
		}
		seq = c->rcv_nxt;
	}
	uint32_t right = c->rcv_nxt + wnd;
	if (iwn_seq_gt(seq + plen, right)) {
		if (iwn_seq_gt(seq, right) || (seq == right && seq != c->rcv_nxt)) {
			c->ack_now = true;
			output(c, now, false);
			return;
		}
		plen = right - seq; /* zero-window probe: keep its ACK */
		fin = false;
		c->ack_now = true;
	}
	if (!(h->flags & IWN_TCP_ACK))
		return;

	if (c->state == IWN_TCP_SYN_RCVD) {
		if (iwn_seq_gt(h->ack, c->snd_una) && iwn_seq_le(h->ack, c->snd_max)) {
			established(c);
			set_window(c, h, false);
		} else {
			send_rst(c, h->ack, now);
			return;
		}
	}
	if (iwn_seq_gt(h->ack, c->snd_max)) {
		c->stats.bad_acks++;
		c->ack_now = true;
		output(c, now, false);
		return;
	}
	uint32_t win = (uint32_t)h->win << c->snd_ws;
	bool advanced = iwn_seq_gt(h->ack, c->snd_una);
	if (advanced)
		new_ack(c, h, now);
	if (c->sack_on && h->opt.n_sack)
		iwn_sack_add(&c->sacked, (const uint32_t(*)[2])h->opt.sack, h->opt.n_sack, c->snd_una, c->snd_max);
	/* RFC 5681 duplicate ACK; the segment as sent (before trimming) must
	 * carry no data, and a closed window does not count. */
	bool bare_ack = h->plen == 0 && !(h->flags & IWN_TCP_FIN);
	if (!advanced && bare_ack && h->ack == c->snd_una && win == c->snd_wnd && c->snd_max != c->snd_una &&
	    c->snd_wnd != 0) {
		c->stats.dupacks++;
		uint32_t flight = c->snd_max - c->snd_una;
		bool was = c->cc.in_recovery;
		if (iwn_cc_on_dupack(&c->cc, c->snd_una, c->snd_max, flight) == IWN_CC_RETRANSMIT) {
			c->stats.fast_retransmits++;
			c->rexmit_nxt = c->snd_una;
			retransmit_first(c, now);
		} else if (was) {
			retransmit_hole(c, now); /* the inflation pays for it */
		}
	}
	if (iwn_seq_lt(c->snd_wl1, seq) || (c->snd_wl1 == seq && iwn_seq_le(c->snd_wl2, h->ack))) {
		uint32_t old_wnd = c->snd_wnd;
		set_window(c, h, false);
		if (c->snd_wnd == 0 && h->ack == c->snd_una)
			c->retries = 0; /* a probe was answered: the peer lives */
		if (c->snd_wnd && c->persist) {
			c->persist = false;
			c->rto_at = NEVER;
		}
		if (old_wnd == 0 && c->snd_wnd && h->ack == c->snd_una && c->snd_nxt != c->snd_una) {
			/* The window reopened while a probe byte, dropped by the
			 * closed window, counts as in flight: resend from snd_una
			 * now instead of after a backed-off RTO, whose backoff
			 * came from probing and not from loss. */
			c->snd_nxt = c->snd_una;
			c->rtt_on = false;
			iwn_rtt_reset_backoff(&c->rtt);
			arm_rto(c, now);
		}
	}

	switch (c->state) {
	case IWN_TCP_FIN_WAIT_1:
		if (fin_acked(c)) {
			c->state = IWN_TCP_FIN_WAIT_2;
			if (c->orphan)
				c->tw_at = now + c->cfg.fin_wait2_us;
		}
		break;
	case IWN_TCP_CLOSING:
		if (fin_acked(c))
			enter_time_wait(c, now);
		break;
	case IWN_TCP_LAST_ACK:
		if (fin_acked(c)) {
			close_with(c, 0);
			return;
		}
		break;
	case IWN_TCP_TIME_WAIT:
		if (fin || h->flags & IWN_TCP_FIN) {
			c->ack_now = true;
			enter_time_wait(c, now);
		}
		break;
	default:
		break;
	}

	if (plen && accepts_data(c) && !c->fin_rcvd) {
		uint64_t off = c->rb.nxt + (seq - c->rcv_nxt);
		c->stats.bytes_in += plen;
		if (seq != c->rcv_nxt) {
			c->stats.ooo_segs++;
			c->last_ooo = off;
			if (c->ooo)
				c->ooo(c->ooo_arg, c, off, data, plen);
			if (iwn_rcvbuf_insert(&c->rb, off, data, plen) < 0)
				c->stats.ooo_dropped++;
			c->ack_now = true; /* duplicate ACK for the sender's fast retransmit */
		} else {
			bool had_holes = c->rb.n_ooo > 0;
			int64_t adv = iwn_rcvbuf_insert(&c->rb, off, data, plen);
			if (adv > 0) {
				c->rcv_nxt += (uint32_t)adv;
				c->unacked_bytes += (uint32_t)adv;
			}
			if (had_holes || c->unacked_bytes >= 2u * c->cfg.mss || c->cfg.delack_us == 0)
				c->ack_now = true;
			else if (c->delack_at == NEVER)
				c->delack_at = now + c->cfg.delack_us;
		}
	}
	if (fin && accepts_data(c) && !c->fin_rcvd) {
		c->fin_pending = true;
		c->fin_seq = seq + plen;
	}
	consume_fin(c, now);
	output(c, now, false);
}

/* ---- application calls ---- */

static int send_check(const struct iwn_tcp_conn *c)
{
	switch (c->state) {
	case IWN_TCP_SYN_SENT:
	case IWN_TCP_SYN_RCVD:
	case IWN_TCP_ESTABLISHED:
	case IWN_TCP_CLOSE_WAIT:
		return c->fin_queued ? -EPIPE : 0;
	case IWN_TCP_CLOSED:
		return c->snd_max == 0 && !c->passive && c->err == 0 ? -ENOTCONN : -EPIPE;
	default:
		return -EPIPE;
	}
}

int iwn_tcp_send(struct iwn_tcp_conn *c, const void *p, uint32_t n, uint64_t now)
{
	int r = send_check(c);
	if (r)
		return r;
	if (n > INT32_MAX)
		n = INT32_MAX;
	uint32_t k = iwn_sndbuf_write(&c->sb, p, n);
	if (k)
		output(c, now, false);
	return (int)k;
}

int iwn_tcp_send_record(struct iwn_tcp_conn *c, const void *p, uint32_t n, uint64_t now)
{
	int r = send_check(c);
	if (r)
		return r;
	if (n > INT32_MAX)
		return -EMSGSIZE;
	r = iwn_sndbuf_write_record(&c->sb, p, n);
	if (r > 0)
		output(c, now, false);
	return r;
}

int iwn_tcp_send_recordv(struct iwn_tcp_conn *c, const struct iovec *iov, int cnt, uint32_t n, uint64_t now)
{
	int r = send_check(c);
	if (r)
		return r;
	if (n > INT32_MAX)
		return -EMSGSIZE;
	r = iwn_sndbuf_write_recordv(&c->sb, iov, cnt, n);
	if (r > 0)
		output(c, now, false);
	return r;
}

uint32_t iwn_tcp_recv(struct iwn_tcp_conn *c, void *p, uint32_t n, uint64_t now)
{
	uint32_t k = iwn_rcvbuf_read(&c->rb, p, n);
	if (k && accepts_data(c) && !c->fin_rcvd) {
		/* Window update when the right edge moves by enough (receiver
		 * silly-window avoidance, RFC 9293 sec. 3.8.6.2.2). */
		uint32_t thresh = c->rb.cap / 2 < c->cfg.mss ? c->rb.cap / 2 : c->cfg.mss;
		if (thresh == 0)
			thresh = 1;
		uint32_t edge = c->rcv_nxt + iwn_rcvbuf_window(&c->rb);
		if (iwn_seq_ge(edge, c->rcv_adv + thresh)) {
			c->ack_now = true;
			output(c, now, false);
		}
	}
	return k;
}

void iwn_tcp_close(struct iwn_tcp_conn *c, uint64_t now)
{
	switch (c->state) {
	case IWN_TCP_SYN_SENT:
		close_with(c, 0);
		return;
	case IWN_TCP_SYN_RCVD:
		c->fin_queued = true; /* the FIN follows once established */
		return;
	case IWN_TCP_ESTABLISHED:
		c->fin_queued = true;
		c->state = IWN_TCP_FIN_WAIT_1;
		break;
	case IWN_TCP_CLOSE_WAIT:
		c->fin_queued = true;
		c->state = IWN_TCP_LAST_ACK;
		break;
	default:
		return;
	}
	output(c, now, false);
}

void iwn_tcp_abort(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->state != IWN_TCP_CLOSED && c->state != IWN_TCP_SYN_SENT && c->state != IWN_TCP_TIME_WAIT)
		send_seg(c, now, c->snd_nxt, IWN_TCP_RST | IWN_TCP_ACK, 0);
	if (c->state != IWN_TCP_CLOSED)
		close_with(c, -ECONNABORTED);
}

void iwn_tcp_orphan(struct iwn_tcp_conn *c, uint64_t now)
{
	c->orphan = true;
	if (c->state == IWN_TCP_FIN_WAIT_2 && c->tw_at == NEVER)
		c->tw_at = now + c->cfg.fin_wait2_us;
}

/* ---- timers ---- */

/* Keepalive: only on a synchronized connection with nothing of ours
 * waiting (the user timeout covers that case). */
static uint64_t keepalive_at(const struct iwn_tcp_conn *c)
{
	if (!c->cfg.keepalive_us || c->waiting ||
	    (c->state != IWN_TCP_ESTABLISHED && c->state != IWN_TCP_CLOSE_WAIT))
		return NEVER;
	return c->heard_at + c->cfg.keepalive_us * (1 + (uint64_t)c->ka_sent);
}

static void keepalive_expired(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->ka_sent >= c->cfg.keepalive_probes) {
		close_with(c, -ETIMEDOUT);
		return;
	}
	c->ka_sent++;
	c->stats.keepalives_sent++;
	/* One below the peer's next expected byte: it must answer with an
	 * ACK (RFC 9293 sec. 3.8.4). */
	send_seg(c, now, c->snd_una - 1, IWN_TCP_ACK, 0);
}

uint64_t iwn_tcp_next_deadline(const struct iwn_tcp_conn *c)
{
	uint64_t d = c->rto_at;
	uint64_t k = keepalive_at(c);
	if (k < d)
		d = k;
	if (c->delack_at < d)
		d = c->delack_at;
	if (c->tw_at < d)
		d = c->tw_at;
	return d;
}

static void rto_expired(struct iwn_tcp_conn *c, uint64_t now)
{
	c->rto_at = NEVER;
	if (c->cfg.user_timeout_us && c->waiting && now - c->progress_at >= c->cfg.user_timeout_us) {
		c->stats.user_timeouts++;
		close_with(c, -ETIMEDOUT);
		return;
	}
	if (c->persist) {
		c->persist = false;
		c->stats.window_probes++;
		iwn_rtt_backoff(&c->rtt);
		output(c, now, true);
		return;
	}
	if (c->snd_una == c->snd_max)
		return;
	bool opening = c->state == IWN_TCP_SYN_SENT || c->state == IWN_TCP_SYN_RCVD;
	if (c->retries >= (opening ? c->cfg.syn_retries : c->cfg.max_retries)) {
		close_with(c, -ETIMEDOUT);
		return;
	}
	c->retries++;
	c->stats.rto_expired++;
	iwn_cc_on_rto(&c->cc, c->snd_max - c->snd_una, c->snd_max);
	iwn_rtt_backoff(&c->rtt);
	c->rtt_on = false; /* Karn: nothing outstanding is timed any more */
	iwn_sack_clear(&c->sacked); /* RFC 2018 sec. 8: the receiver may renege */
	c->rexmit_nxt = c->snd_una;
	c->snd_nxt = c->snd_una;
	output(c, now, true);
}

void iwn_tcp_timers(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->tw_at <= now) {
		c->tw_at = NEVER;
		if (c->state == IWN_TCP_TIME_WAIT || c->state == IWN_TCP_FIN_WAIT_2)
			close_with(c, 0);
	}
	if (c->rto_at <= now)
		rto_expired(c, now);
	if (c->delack_at <= now) {
		c->delack_at = NEVER;
		c->ack_now = true;
		output(c, now, false);
	}
	if (keepalive_at(c) <= now)
		keepalive_expired(c, now);
}

void iwn_tcp_send_reset_for(uint8_t *txbuf, uint32_t headroom, iwn_tcp_out_fn out, void *arg, uint32_t laddr,
			    uint32_t raddr, const struct iwn_tcp_hdr *h)
{
	if (h->flags & IWN_TCP_RST)
		return;
	uint8_t *seg = txbuf + headroom;
	struct iwn_tcp_hdr r;
	memset(&r, 0, sizeof(r));
	r.sport = h->dport;
	r.dport = h->sport;
	if (h->flags & IWN_TCP_ACK) {
		r.seq = h->ack;
		r.flags = IWN_TCP_RST;
	} else {
		r.seq = 0;
		r.ack = h->seq + h->plen + (h->flags & IWN_TCP_SYN ? 1 : 0) + (h->flags & IWN_TCP_FIN ? 1 : 0);
		r.flags = IWN_TCP_RST | IWN_TCP_ACK;
	}
	size_t hlen = iwn_tcp_build(seg, &r);
	iwn_tcp_set_csum(seg, hlen, laddr, raddr);
	out(arg, NULL, laddr, raddr, seg, (uint32_t)hlen);
}
