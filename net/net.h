/* The host: one Ethernet interface with one IPv4 address, on-link peers
 * only (no routing), ARP, ICMP echo, and a table of TCP connections and
 * listeners. Frames in via iwn_net_input, frames out via the tx callback
 * (a frame is only valid during the call), time injected in microseconds.
 * Everything is allocated by iwn_net_init and per connection at connect
 * or SYN arrival; the data path does not allocate. */
#ifndef IWN_NET_H
#define IWN_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "arp.h"
#include "eth.h"
#include "ratelimit.h"
#include "tcp_conn.h"

#define IWN_NET_MAX_LISTEN 8
#define IWN_NET_HEADROOM (IWN_ETH_HLEN + 20) /* Ethernet + IPv4 before a segment */

typedef void (*iwn_net_tx_fn)(void *arg, const uint8_t *frame, uint32_t len);

struct iwn_net_cfg {
	uint8_t mac[IWN_ETH_ALEN];
	uint32_t ip; /* host order */
	uint16_t mtu; /* IP MTU; TCP MSS = mtu - 40 */
	uint8_t isn_key[IWN_ISN_KEY_LEN];
	uint32_t max_conns;
	struct iwn_tcp_cfg tcp; /* per connection; mss is derived from mtu */
	uint32_t arp_entries;
	uint64_t arp_reachable_us, arp_retry_us;
	uint8_t arp_tries;
	/* Answers to unsolicited traffic, per host (token buckets; rate 0:
	 * unlimited): RSTs for segments matching no connection, ICMP echo
	 * replies. */
	uint32_t rst_rate, rst_burst, icmp_rate, icmp_burst;
	iwn_net_tx_fn tx;
	void *tx_arg;
	/* Optional: where the next TCP frame may be built in place (at least
	 * cap bytes; NULL: none free). tx then gets that same pointer. */
	uint8_t *(*tx_slot)(void *tx_arg, uint32_t cap);
	/* Optional transmit offload. When set, the frames of TCP
	 * connections go out here instead of tx, with the TCP checksum left
	 * to the sender's offload (only the pseudo-header sum: Linux's
	 * CHECKSUM_PARTIAL, at IWN_NET_HEADROOM + 16); gso_size not 0 makes
	 * the frame a super-segment for the kernel to cut into wire
	 * segments of gso_size payload bytes (net/gso.h). gso_max: the
	 * largest super-segment payload (0: checksum offload only; at most
	 * IWN_GSO_MAX_PAYLOAD). */
	void (*tx_off)(void *tx_arg, const uint8_t *frame, uint32_t len, uint32_t gso_size);
	uint32_t gso_max;
	/* Connections batch their output (iwn_tcp_cfg.batch_output): call
	 * iwn_net_output_pending after a batch of input and after the
	 * readers ran (the timers send it too, at the latest). */
	bool batch_output;
};
/* Defaults: MTU 1500, 64 connections, 16 ARP entries living 60 s,
 * requests every 1 s, 3 tries; RSTs and ICMP echo replies 1000/s with
 * bursts of 50 each (Linux's ICMP defaults); tcp from iwn_tcp_cfg_default. */
void iwn_net_cfg_default(struct iwn_net_cfg *cfg);

struct iwn_net_stats {
	uint64_t rx_frames, rx_not_for_us, rx_bad, rx_unknown_type;
	uint64_t arp_in, arp_replies_sent;
	uint64_t ip_bad, ip_bad_csum, ip_frags, ip_not_for_us, ip_unknown_proto;
	uint64_t ip_src_ours; /* from our own address: a land attack or a loop */
	uint64_t icmp_echo_replies;
	uint64_t tcp_bad, tcp_bad_csum, tcp_resets_sent, tcp_syn_dropped;
	/* SYN cookies: SYN-ACKs sent with a cookie; ACKs whose cookie was
	 * good and made a connection; ACKs with a bad or stale cookie;
	 * good ones dropped because the accept queue or table was full. */
	uint64_t tcp_cookies_sent, tcp_cookies_ok, tcp_cookies_bad, tcp_cookies_dropped;
	/* waiting connections of an address holding most of a full accept
	 * queue, reset to let another address's handshake in */
	uint64_t tcp_accept_evicted;
	/* answers the token buckets held back */
	uint64_t tcp_resets_limited, icmp_limited;
	uint64_t tx_frames, tx_too_big;
	uint64_t rx_csum_trusted;   /* TCP segments taken without a checksum pass (IWN_NET_RX_CSUM_OK) */
	uint64_t tx_gso_unresolved; /* super-segments dropped for want of the peer's MAC (TCP resends) */
};

struct iwn_net_sock;

struct iwn_net {
	struct iwn_net_cfg cfg;
	struct iwn_arp_cache arp;
	uint8_t *frame; /* transmit scratch: headroom + TCP header + MSS */
	uint32_t frame_cap;
	uint16_t ip_id;
	uint64_t now; /* time of the current call, for output from TCP */
	uint16_t next_port;
	struct iwn_net_sock **socks;
	/* One past the highest slot in use: the loops that run per frame and
	 * per flush (deadlines, batched output, reaping) stop there instead of
	 * walking all max_conns slots (64 by default; with one or two
	 * connections those walks were most of the stack's instructions per
	 * 8-byte message). */
	uint32_t socks_hi;
	struct {
		uint16_t port;
		uint32_t backlog;
		bool on;
		uint64_t cookie_at; /* last cookie SYN-ACK (only then are cookie ACKs checked) */
		bool cookies;       /* any cookie sent yet */
	} listen[IWN_NET_MAX_LISTEN];
	struct iwn_bucket rst_bucket, icmp_bucket;
	struct iwn_net_stats stats;
};

int iwn_net_init(struct iwn_net *net, const struct iwn_net_cfg *cfg);
/* Frees every connection too. */
void iwn_net_fini(struct iwn_net *net);

void iwn_net_input(struct iwn_net *net, const uint8_t *frame, uint32_t len, uint64_t now);
/* The TCP/UDP checksum of this frame was verified by the receiving
 * kernel, or left to offload by a local sender (it never crossed a
 * wire): no checksum pass. */
#define IWN_NET_RX_CSUM_OK 1u
void iwn_net_input_flags(struct iwn_net *net, const uint8_t *frame, uint32_t len, uint64_t now, uint32_t flags);
uint64_t iwn_net_next_deadline(const struct iwn_net *net);
/* Send the output connections batched (iwn_net_cfg.batch_output). */
void iwn_net_output_pending(struct iwn_net *net, uint64_t now);
void iwn_net_timers(struct iwn_net *net, uint64_t now);

/* Accept connections on port: up to backlog established ones not yet
 * accepted, and up to backlog half-open ones (SYN-RECEIVED); SYNs beyond
 * those, or while the table is nearly full (1/8 of max_conns left), are
 * answered with SYN cookies (tcp_cookie.h). */
int iwn_net_listen(struct iwn_net *net, uint16_t port, uint32_t backlog);
/* The same on a free port of the dynamic range (49152..65535, shared
 * with connect's choice), written to *port: what bind(0) + listen give
 * a kernel socket (rdma_cm listeners on port 0: libfabric's). */
int iwn_net_listen_ephemeral(struct iwn_net *net, uint32_t backlog, uint16_t *port);
/* Stop accepting on port; connections not yet accepted there are reset. */
void iwn_net_unlisten(struct iwn_net *net, uint16_t port, uint64_t now);
/* A passively opened connection that reached ESTABLISHED (or beyond),
 * else NULL. */
struct iwn_tcp_conn *iwn_net_accept(struct iwn_net *net, uint16_t port);
/* Active open to raddr:rport from lport (0: an ephemeral port). NULL with
 * *err = -ENOMEM, -EADDRINUSE or -EMFILE (table full). */
struct iwn_tcp_conn *iwn_net_connect(struct iwn_net *net, uint32_t raddr, uint16_t rport, uint16_t lport,
				     uint64_t now, int *err);
/* The application is done with c: freed once CLOSED (at once if it is).
 * A connection not closed yet is aborted. */
void iwn_net_release(struct iwn_net *net, struct iwn_tcp_conn *c, uint64_t now);
/* Live connections in the table (released ones in TIME_WAIT count). */
uint32_t iwn_net_conn_count(const struct iwn_net *net);

#endif
