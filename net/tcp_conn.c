/* One TCP connection: configuration, opening, the application's calls
 * and the timers (RTO, persist, delayed ACK, keepalive, TIME-WAIT).
 * Segment arrival is in tcp_in.c, sending in tcp_out.c (tcp_internal.h). */
#include "tcp_internal.h"

#include <errno.h>
#include <string.h>

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
	c->rto_at = c->delack_at = c->tw_at = IWN_TCP_NEVER;
	iwn_rtt_init(&c->rtt, cfg->rto_min_us, cfg->rto_max_us);
	return 0;
}

void iwn_tcp_conn_fini(struct iwn_tcp_conn *c)
{
	iwn_sndbuf_fini(&c->sb);
	iwn_rcvbuf_fini(&c->rb);
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
	c->rcv_ws = c->cfg.wscale ? iwn_tcp_our_wscale(c->cfg.rcvbuf) : 0;
	c->eff_mss = c->cfg.mss;
	c->state = IWN_TCP_SYN_SENT;
	iwn_tcp_output(c, now, false);
	return 0;
}

/* The state a SYN h that reached a listener sets up, our ISN iss. */
static void passive_open(struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, const struct iwn_tcp_hdr *h,
			 uint32_t iss)
{
	c->passive = true;
	c->laddr = laddr;
	c->lport = h->dport;
	c->raddr = raddr;
	c->rport = h->sport;
	c->stats.segs_in++;
	iwn_tcp_take_syn_options(c, h);
	iwn_tcp_set_window(c, h, true);
	c->iss = iss;
	c->ts_offset = iwn_tcp_isn(c->isn_key, raddr, c->rport, laddr, c->lport, 0);
	c->snd_una = c->snd_nxt = c->snd_max = c->rexmit_nxt = c->iss;
	c->state = IWN_TCP_SYN_RCVD;
}

int iwn_tcp_accept_syn(struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, const struct iwn_tcp_hdr *h,
		       uint64_t now)
{
	if (c->state != IWN_TCP_CLOSED || !(h->flags & IWN_TCP_SYN) || (h->flags & (IWN_TCP_ACK | IWN_TCP_RST)))
		return -EINVAL;
	passive_open(c, laddr, raddr, h, iwn_tcp_isn(c->isn_key, laddr, h->dport, raddr, h->sport, now));
	iwn_tcp_output(c, now, false);
	return 0;
}

int iwn_tcp_accept_cookie(struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, const struct iwn_tcp_hdr *syn,
			  uint32_t cookie)
{
	if (c->state != IWN_TCP_CLOSED || !(syn->flags & IWN_TCP_SYN))
		return -EINVAL;
	passive_open(c, laddr, raddr, syn, cookie);
	/* As if our SYN-ACK (iwn_tcp_send_cookie_synack) had gone out. */
	c->snd_nxt = c->snd_max = c->iss + 1;
	c->last_ack_sent = c->rcv_nxt;
	uint32_t wnd = c->cfg.rcvbuf > 0xFFFF ? 0xFFFF : c->cfg.rcvbuf;
	c->rcv_adv = c->rcv_nxt + wnd;
	return 0;
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

/* New data queued: send it, or (batched output) let it gather with what
 * else the caller queues until its flush, so it leaves as one
 * super-segment rather than one segment per write. */
static void send_now(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->cfg.batch_output)
		iwn_tcp_mark_output(c, now);
	else
		iwn_tcp_output(c, now, false);
}

int iwn_tcp_send(struct iwn_tcp_conn *c, const void *p, uint32_t n, uint64_t now)
{
	int r = send_check(c);
	if (r)
		return r;
	if (n > INT32_MAX)
		n = INT32_MAX;
	if (n && iwn_sndbuf_reserve(&c->sb))
		return -ENOMEM;
	uint32_t k = iwn_sndbuf_write(&c->sb, p, n);
	if (k)
		send_now(c, now);
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
		send_now(c, now);
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
		send_now(c, now);
	return r;
}

uint32_t iwn_tcp_recv(struct iwn_tcp_conn *c, void *p, uint32_t n, uint64_t now)
{
	uint32_t k = iwn_rcvbuf_read(&c->rb, p, n);
	if (k && iwn_tcp_accepts_data(c) && !c->fin_rcvd) {
		/* Window update when the right edge moves by enough (receiver
		 * silly-window avoidance, RFC 9293 sec. 3.8.6.2.2). */
		uint32_t thresh = c->rb.cap / 2 < c->cfg.mss ? c->rb.cap / 2 : c->cfg.mss;
		if (thresh == 0)
			thresh = 1;
		uint32_t edge = c->rcv_nxt + iwn_rcvbuf_window(&c->rb);
		/* And only while the window the peer knows is at most half
		 * the buffer and this at least doubles it (as Linux's
		 * tcp_cleanup_rbuf): a reader taking each FPDU as it comes
		 * made one update per segment read, more ACKs than data
		 * segments, when the data ACKs already carry the window. */
		uint32_t known = iwn_seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
		uint32_t now_wnd = edge - c->rcv_nxt;
		bool worth = known <= c->rb.cap / 2 && now_wnd >= 2 * known;
		if (worth && iwn_seq_ge(edge, c->rcv_adv + thresh)) {
			c->ack_now = true;
			if (c->cfg.batch_output)
				iwn_tcp_mark_output(c, now);
			else
				iwn_tcp_output(c, now, false);
		}
	}
	return k;
}

void iwn_tcp_close(struct iwn_tcp_conn *c, uint64_t now)
{
	switch (c->state) {
	case IWN_TCP_SYN_SENT:
		iwn_tcp_close_with(c, 0);
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
	iwn_tcp_output(c, now, false);
}

void iwn_tcp_abort(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->state != IWN_TCP_CLOSED && c->state != IWN_TCP_SYN_SENT && c->state != IWN_TCP_TIME_WAIT)
		iwn_tcp_send_seg(c, now, c->snd_nxt, IWN_TCP_RST | IWN_TCP_ACK, 0);
	if (c->state != IWN_TCP_CLOSED)
		iwn_tcp_close_with(c, -ECONNABORTED);
}

void iwn_tcp_orphan(struct iwn_tcp_conn *c, uint64_t now)
{
	c->orphan = true;
	if (c->state == IWN_TCP_FIN_WAIT_2 && c->tw_at == IWN_TCP_NEVER)
		c->tw_at = now + c->cfg.fin_wait2_us;
}

/* ---- timers ---- */

/* Keepalive: only on a synchronized connection with nothing of ours
 * waiting (the user timeout covers that case). */
static uint64_t keepalive_at(const struct iwn_tcp_conn *c)
{
	if (!c->cfg.keepalive_us || c->waiting ||
	    (c->state != IWN_TCP_ESTABLISHED && c->state != IWN_TCP_CLOSE_WAIT))
		return IWN_TCP_NEVER;
	return c->heard_at + c->cfg.keepalive_us * (1 + (uint64_t)c->ka_sent);
}

static void keepalive_expired(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->ka_sent >= c->cfg.keepalive_probes) {
		iwn_tcp_close_with(c, -ETIMEDOUT);
		return;
	}
	c->ka_sent++;
	c->stats.keepalives_sent++;
	/* One below the peer's next expected byte: it must answer with an
	 * ACK (RFC 9293 sec. 3.8.4). */
	iwn_tcp_send_seg(c, now, c->snd_una - 1, IWN_TCP_ACK, 0);
}

uint64_t iwn_tcp_next_deadline(const struct iwn_tcp_conn *c)
{
	uint64_t d = c->rto_at;
	if (c->out_pending && c->out_pending_at + IWN_TCP_BATCH_US < d)
		d = c->out_pending_at + IWN_TCP_BATCH_US; /* the owner did not send it: the timers do */
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
	c->rto_at = IWN_TCP_NEVER;
	if (c->cfg.user_timeout_us && c->waiting && now - c->progress_at >= c->cfg.user_timeout_us) {
		c->stats.user_timeouts++;
		iwn_tcp_close_with(c, -ETIMEDOUT);
		return;
	}
	if (c->persist) {
		c->persist = false;
		c->stats.window_probes++;
		iwn_rtt_backoff(&c->rtt);
		iwn_tcp_output(c, now, true);
		return;
	}
	if (c->snd_una == c->snd_max)
		return;
	bool opening = c->state == IWN_TCP_SYN_SENT || c->state == IWN_TCP_SYN_RCVD;
	if (c->retries >= (opening ? c->cfg.syn_retries : c->cfg.max_retries)) {
		iwn_tcp_close_with(c, -ETIMEDOUT);
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
	iwn_tcp_output(c, now, true);
}

void iwn_tcp_mark_output(struct iwn_tcp_conn *c, uint64_t now)
{
	if (!c->out_pending)
		c->out_pending_at = now;
	c->out_pending = true;
}

void iwn_tcp_timers(struct iwn_tcp_conn *c, uint64_t now)
{
	if (c->out_pending && c->out_pending_at + IWN_TCP_BATCH_US <= now) {
		c->out_pending = false;
		iwn_tcp_output(c, now, false);
	}
	if (c->tw_at <= now) {
		c->tw_at = IWN_TCP_NEVER;
		if (c->state == IWN_TCP_TIME_WAIT || c->state == IWN_TCP_FIN_WAIT_2)
			iwn_tcp_close_with(c, 0);
	}
	if (c->rto_at <= now)
		rto_expired(c, now);
	if (c->delack_at <= now) {
		c->delack_at = IWN_TCP_NEVER;
		c->ack_now = true;
		iwn_tcp_output(c, now, false);
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
