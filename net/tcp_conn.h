/* One TCP connection per RFC 9293, sans-I/O: segments in (parsed by
 * tcp_seg), segments out through a callback, time passed in by the
 * caller (microseconds) and a next-deadline query for the timers. All
 * buffers are allocated by iwn_tcp_conn_init; nothing allocates later. */
#ifndef IWN_TCP_CONN_H
#define IWN_TCP_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp_cc.h"
#include "tcp_isn.h"
#include "tcp_rcvbuf.h"
#include "tcp_rtt.h"
#include "tcp_sack.h"
#include "tcp_seg.h"
#include "tcp_sndbuf.h"

enum iwn_tcp_state {
	IWN_TCP_CLOSED = 0,
	IWN_TCP_SYN_SENT,
	IWN_TCP_SYN_RCVD,
	IWN_TCP_ESTABLISHED,
	IWN_TCP_FIN_WAIT_1,
	IWN_TCP_FIN_WAIT_2,
	IWN_TCP_CLOSE_WAIT,
	IWN_TCP_CLOSING,
	IWN_TCP_LAST_ACK,
	IWN_TCP_TIME_WAIT,
};
const char *iwn_tcp_state_name(enum iwn_tcp_state s);

struct iwn_tcp_cfg {
	uint32_t sndbuf, rcvbuf; /* bytes; rcvbuf > 65535 turns on window scaling */
	uint32_t max_records;    /* record boundaries kept by the send buffer */
	uint16_t mss;            /* what we announce (MTU - 40) */
	bool wscale;             /* offer RFC 7323 window scaling */
	bool timestamps;         /* offer RFC 7323 timestamps (RTTM, PAWS) */
	bool sack;               /* offer RFC 2018 selective acknowledgments */
	bool nodelay;            /* no Nagle: send short segments at once */
	uint64_t rto_min_us, rto_max_us;
	uint64_t delack_us;      /* 0: acknowledge every segment at once */
	uint64_t msl_us;         /* TIME_WAIT lasts 2 MSL */
	uint64_t fin_wait2_us;   /* an orphan waits this long for the peer's FIN */
	uint32_t max_retries;    /* RTO expiries in a row before giving up */
	uint32_t syn_retries;
	/* Dead-peer detection (0: off). user_timeout_us: data of ours that
	 * waits for the peer (unacknowledged, or held back by its zero
	 * window) this long without progress closes the connection with
	 * -ETIMEDOUT (like Linux's TCP_USER_TIMEOUT). keepalive_us: after
	 * that much silence from the peer while nothing of ours waits, probe
	 * it every keepalive_us; keepalive_probes unanswered probes close it
	 * with -ETIMEDOUT. */
	uint64_t user_timeout_us;
	uint64_t keepalive_us;
	uint32_t keepalive_probes;
	/* Transmit offload (0/false: off). gso_max: super-segments of up to
	 * this many payload bytes go out as one frame for the kernel to cut
	 * into wire segments (net/gso.h); csum_offload: segments leave with
	 * only the pseudo-header sum in the checksum field, for the kernel
	 * or NIC to complete. Set by the host from its transmit path. */
	uint32_t gso_max;
	bool csum_offload;
	/* Batched output: what an arriving segment or a read lets out (new
	 * data, the ACK, a window update) is only marked (out_pending) and
	 * sent by iwn_net_output_pending, or by the timers 1 ms later at the
	 * latest (IWN_TCP_BATCH_US). The owner calls that after a batch of frames and
	 * after its readers ran: one ACK per batch carrying the window after
	 * the reads, and one super-segment for all the room the ACKs opened,
	 * instead of one small segment and one ACK per frame. */
	bool batch_output;
};
/* Defaults: 64 KiB buffers, MSS 1460, window scaling, timestamps, SACK,
 * nodelay, RTO
 * 200 ms .. 60 s, delayed ACK 40 ms, MSL 30 s, FIN-WAIT-2 orphan 60 s,
 * 12 / 6 retries. */
void iwn_tcp_cfg_default(struct iwn_tcp_cfg *cfg);

struct iwn_tcp_stats {
	uint64_t segs_in, segs_out, bytes_in, bytes_out;
	uint64_t rto_expired, fast_retransmits, retransmitted_segs, dupacks;
	uint64_t ooo_segs, ooo_dropped, dup_segs, window_probes, bad_acks, paws_dropped;
	uint64_t sack_rexmits, sack_blocks_sent;
	uint64_t keepalives_sent, user_timeouts;
	uint64_t gso_sends, gso_wire_segs; /* super-segments, and the wire segments they became */
};

#define IWN_TCP_BATCH_US 1000

struct iwn_tcp_conn;
/* A segment from laddr to raddr is ready at seg (len bytes, checksum
 * filled); the owner prepends IPv4/Ethernet in the headroom it reserved
 * before seg. c is NULL for a reset answering a stray segment. */
typedef void (*iwn_tcp_out_fn)(void *arg, struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, uint8_t *seg,
			       uint32_t len);
/* Hook for an MPA-aware receiver: payload accepted out of order, with its
 * stream offset (0 = first byte after the SYN), before in-order delivery. */
typedef void (*iwn_tcp_ooo_fn)(void *arg, struct iwn_tcp_conn *c, uint64_t off, const uint8_t *p, uint32_t len);

struct iwn_tcp_conn {
	struct iwn_tcp_cfg cfg;
	enum iwn_tcp_state state;
	int err; /* why it closed: 0, -ECONNRESET, -ECONNREFUSED, -ETIMEDOUT, -ECONNABORTED */
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	bool passive;
	bool orphan;         /* the application let go: FIN-WAIT-2 is bounded */

	/* send sequence space */
	uint32_t iss, snd_una, snd_nxt, snd_max;
	uint32_t snd_wnd, max_sndwnd, snd_wl1, snd_wl2;
	uint8_t snd_ws, rcv_ws;
	bool ws_on;          /* both sides sent the window scale option */
	bool ts_on;          /* both sides sent timestamps */
	uint32_t ts_recent, ts_offset, last_ack_sent;
	bool sack_on;        /* both sides sent SACK-permitted */
	struct iwn_sack_board sacked; /* what the peer SACKed (sender side) */
	uint32_t rexmit_nxt; /* recovery: holes below this were resent */
	uint64_t last_ooo;   /* stream offset of the newest out-of-order arrival */
	uint16_t peer_mss, eff_mss;
	bool fin_queued;     /* the application closed its sending side */
	struct iwn_sndbuf sb;

	/* receive sequence space */
	uint32_t irs, rcv_nxt, rcv_adv; /* rcv_adv: right edge announced */
	bool fin_rcvd;       /* peer's FIN consumed in order */
	bool fin_pending;    /* peer's FIN seen ahead of a hole */
	uint32_t fin_seq;
	struct iwn_rcvbuf rb;

	/* timers (UINT64_MAX: off) */
	uint64_t rto_at, delack_at, tw_at;
	/* dead-peer detection: see iwn_tcp_cfg.user_timeout_us/keepalive_us */
	bool waiting;        /* data of ours waits for the peer */
	uint64_t progress_at; /* since then, while waiting */
	uint64_t heard_at;    /* the peer's last segment */
	uint32_t ka_sent;     /* keepalive probes unanswered */
	bool persist;        /* rto_at is the zero-window probe timer */
	uint32_t retries;
	bool ack_now;
	uint32_t unacked_bytes; /* received, not yet acknowledged */

	struct iwn_tcp_rtt rtt;
	bool rtt_on;
	uint32_t rtt_seq;
	uint64_t rtt_start;
	struct iwn_tcp_cc cc;

	/* output */
	uint8_t *txbuf;      /* owner's scratch: headroom + IWN_TCP_MAX_HLEN + mss */
	/* Optional (set by the owner after init): a buffer of the same size
	 * to build the next segment in, e.g. a transmit ring slot, so the
	 * frame is not copied again; NULL (or the hook unset): txbuf. */
	uint8_t *(*txbuf_get)(void *out_arg);
	uint32_t headroom;
	iwn_tcp_out_fn out;
	void *out_arg;
	uint64_t out_now;    /* time of the call sending the segment, for out */
	uint32_t out_gso;    /* the segment out gets is a super-segment of this gso_size (0: plain) */
	bool out_pending;    /* cfg.batch_output: output is due (see there) */
	uint64_t out_pending_at;
	iwn_tcp_ooo_fn ooo;
	void *ooo_arg;
	const uint8_t *isn_key;

	struct iwn_tcp_stats stats;
};

/* Allocates the buffers. txbuf (owner's, headroom + 60 + the larger of
 * cfg->mss and cfg->gso_max bytes)
 * and isn_key (16 bytes) must outlive the connection. */
int iwn_tcp_conn_init(struct iwn_tcp_conn *c, const struct iwn_tcp_cfg *cfg, uint8_t *txbuf, uint32_t headroom,
		      iwn_tcp_out_fn out, void *out_arg, const uint8_t *isn_key);
void iwn_tcp_conn_fini(struct iwn_tcp_conn *c);

/* Active open: sends the SYN. */
int iwn_tcp_connect(struct iwn_tcp_conn *c, uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport,
		    uint64_t now);
/* Passive open from a SYN h that reached a listener; sends the SYN-ACK. */
int iwn_tcp_accept_syn(struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, const struct iwn_tcp_hdr *h,
		       uint64_t now);
/* Passive open from a SYN the listener answered with a cookie SYN-ACK
 * (tcp_cookie.h): syn is that SYN rebuilt from the cookie and the ACK
 * (sequence number, MSS, window scale, SACK, the ACK's TSval), cookie our
 * ISN. SYN-RECEIVED with the SYN-ACK sent; nothing is sent. The caller
 * passes the ACK to iwn_tcp_input next. */
int iwn_tcp_accept_cookie(struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, const struct iwn_tcp_hdr *syn,
			  uint32_t cookie);
/* A segment for this connection (4-tuple already matched). */
void iwn_tcp_input(struct iwn_tcp_conn *c, const struct iwn_tcp_hdr *h, uint64_t now);

/* Queue data: bytes taken (0 when full), -EPIPE after close or reset,
 * -ENOTCONN before connect, -ENOMEM when the first send finds no memory
 * for the send buffer (allocated then, not at creation). */
int iwn_tcp_send(struct iwn_tcp_conn *c, const void *p, uint32_t n, uint64_t now);
/* Queue one record (an FPDU): all n bytes, whose end is a segment
 * boundary, or the errors of iwn_sndbuf_write_record / iwn_tcp_send. */
int iwn_tcp_send_record(struct iwn_tcp_conn *c, const void *p, uint32_t n, uint64_t now);
/* The same, gathered from cnt pieces totalling n bytes (no contiguous
 * copy needed); -EINVAL when they do not add up to n. */
int iwn_tcp_send_recordv(struct iwn_tcp_conn *c, const struct iovec *iov, int cnt, uint32_t n, uint64_t now);
/* Read in-order bytes; 0 when none (see iwn_tcp_eof). */
uint32_t iwn_tcp_recv(struct iwn_tcp_conn *c, void *p, uint32_t n, uint64_t now);
static inline uint32_t iwn_tcp_readable(const struct iwn_tcp_conn *c)
{
	return c->rb.used;
}
static inline uint32_t iwn_tcp_writable(const struct iwn_tcp_conn *c)
{
	return iwn_sndbuf_space(&c->sb);
}
/* The peer closed and every byte before its FIN has been read. */
static inline bool iwn_tcp_eof(const struct iwn_tcp_conn *c)
{
	return c->fin_rcvd && c->rb.used == 0;
}
/* Graceful close: FIN after the queued bytes. */
void iwn_tcp_close(struct iwn_tcp_conn *c, uint64_t now);
/* Abortive close: RST, connection CLOSED with -ECONNABORTED. */
void iwn_tcp_abort(struct iwn_tcp_conn *c, uint64_t now);

/* The application will make no more calls: after our FIN, wait at most
 * cfg.fin_wait2_us for the peer's (RFC 9293 leaves FIN-WAIT-2 unbounded;
 * like common stacks we bound it for orphans). */
void iwn_tcp_orphan(struct iwn_tcp_conn *c, uint64_t now);

uint64_t iwn_tcp_next_deadline(const struct iwn_tcp_conn *c);
/* cfg.batch_output: output is due (see there). */
void iwn_tcp_mark_output(struct iwn_tcp_conn *c, uint64_t now);
void iwn_tcp_timers(struct iwn_tcp_conn *c, uint64_t now);

/* Send a RST answering segment h that matched no connection (RFC 9293
 * sec. 3.10.7.1), built in txbuf and passed to out with c == NULL. */
void iwn_tcp_send_reset_for(uint8_t *txbuf, uint32_t headroom, iwn_tcp_out_fn out, void *arg, uint32_t laddr,
			    uint32_t raddr, const struct iwn_tcp_hdr *h);

#endif
