/* Shared by the files of one TCP connection's state machine, not part of
 * net/'s API: tcp_conn.c (opening, application calls, timers), tcp_out.c
 * (building and sending segments) and tcp_in.c (segment arrival, split
 * like lwIP's into tcp_input, tcp_process and tcp_receive). */
#ifndef IWN_TCP_INTERNAL_H
#define IWN_TCP_INTERNAL_H

#include "seq.h"
#include "tcp_conn.h"

#define IWN_TCP_NEVER UINT64_MAX

/* The sequence number just past our queued data (before our FIN). */
static inline uint32_t iwn_tcp_data_end(const struct iwn_tcp_conn *c)
{
	return c->iss + 1 + (uint32_t)(c->sb.base + c->sb.len);
}

static inline bool iwn_tcp_fin_acked(const struct iwn_tcp_conn *c)
{
	return c->fin_queued && iwn_seq_gt(c->snd_una, iwn_tcp_data_end(c));
}

static inline uint8_t iwn_tcp_our_wscale(uint32_t rcvbuf)
{
	uint8_t s = 0;
	while (s < IWN_TCP_WS_MAX && (rcvbuf >> s) > 0xFFFF)
		s++;
	return s;
}

static inline void iwn_tcp_close_with(struct iwn_tcp_conn *c, int err)
{
	c->state = IWN_TCP_CLOSED;
	c->err = err;
	c->rto_at = c->delack_at = c->tw_at = IWN_TCP_NEVER;
	c->persist = false;
}

static inline void iwn_tcp_enter_time_wait(struct iwn_tcp_conn *c, uint64_t now)
{
	c->state = IWN_TCP_TIME_WAIT;
	c->rto_at = IWN_TCP_NEVER;
	c->persist = false;
	c->tw_at = now + 2 * c->cfg.msl_us;
}

/* RFC 7323 timestamp clock: 1 ms ticks from a per-connection offset. */
static inline uint32_t iwn_tcp_ts_now(const struct iwn_tcp_conn *c, uint64_t now)
{
	return (uint32_t)(now / 1000) + c->ts_offset;
}

/* The receive window we advertised, left of its right edge. */
static inline uint32_t iwn_tcp_rcv_wnd(const struct iwn_tcp_conn *c)
{
	return iwn_seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
}

/* States in which arriving data is still taken. */
static inline bool iwn_tcp_accepts_data(const struct iwn_tcp_conn *c)
{
	return c->state == IWN_TCP_ESTABLISHED || c->state == IWN_TCP_FIN_WAIT_1 || c->state == IWN_TCP_FIN_WAIT_2;
}

/* The peer's send window from a segment (unscaled on a SYN). */
static inline void iwn_tcp_set_window(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, bool syn)
{
	c->snd_wnd = (uint32_t)h->win << (syn ? 0 : c->snd_ws);
	c->snd_wl1 = h->seq;
	c->snd_wl2 = h->ack;
	if (c->snd_wnd > c->max_sndwnd)
		c->max_sndwnd = c->snd_wnd;
}

/* tcp_out.c */
/* Build and hand out one segment; len data bytes from the send buffer at
 * sequence seq. */
void iwn_tcp_send_seg(struct iwn_tcp_conn *c, uint64_t now, uint32_t seq, uint8_t flags, uint32_t len);
/* Send what the windows allow; force sends one segment even into a
 * closed window (RTO retransmission, zero-window probe). */
void iwn_tcp_output(struct iwn_tcp_conn *c, uint64_t now, bool force);
void iwn_tcp_track_wait(struct iwn_tcp_conn *c, uint64_t now);
uint64_t iwn_tcp_retransmit_at(const struct iwn_tcp_conn *c, uint64_t now);
void iwn_tcp_arm_rto(struct iwn_tcp_conn *c, uint64_t now);
void iwn_tcp_retransmit_first(struct iwn_tcp_conn *c, uint64_t now);
bool iwn_tcp_retransmit_hole(struct iwn_tcp_conn *c, uint64_t now);

/* tcp_in.c */
/* A SYN's options, sequence number and the windows they set. */
void iwn_tcp_take_syn_options(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h);


#endif
