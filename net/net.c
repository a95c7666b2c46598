#include "net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gso.h"
#include "ipv4.h"
#include "tcp_cookie.h"
#include "tcp_internal.h"
#include "tcp_seg.h"

struct iwn_net_sock {
	struct iwn_tcp_conn c;
	bool accepted; /* handed to the application (always for active opens) */
	bool released; /* the application let go: free once CLOSED */
};

void iwn_net_cfg_default(struct iwn_net_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = 1500;
	cfg->max_conns = 64;
	iwn_tcp_cfg_default(&cfg->tcp);
	cfg->arp_entries = 16;
	cfg->arp_reachable_us = 60000000;
	cfg->arp_retry_us = 1000000;
	cfg->arp_tries = 3;
	cfg->rst_rate = 1000;
	cfg->rst_burst = 50;
	cfg->icmp_rate = 1000;
	cfg->icmp_burst = 50;
}

int iwn_net_init(struct iwn_net *net, const struct iwn_net_cfg *cfg)
{
	memset(net, 0, sizeof(*net));
	if (!cfg->tx || cfg->mtu < 68 || cfg->max_conns == 0)
		return -EINVAL;
	net->cfg = *cfg;
	net->cfg.tcp.mss = (uint16_t)(cfg->mtu - 40);
	net->cfg.tcp.csum_offload = cfg->tx_off != NULL;
	net->cfg.tcp.batch_output = cfg->batch_output;
	net->cfg.tcp.gso_max = cfg->tx_off ? (cfg->gso_max < IWN_GSO_MAX_PAYLOAD ? cfg->gso_max : IWN_GSO_MAX_PAYLOAD) : 0;
	uint32_t most = net->cfg.tcp.gso_max > net->cfg.tcp.mss ? net->cfg.tcp.gso_max : net->cfg.tcp.mss;
	net->frame_cap = IWN_NET_HEADROOM + IWN_TCP_MAX_HLEN + most;
	net->frame = calloc(1, net->frame_cap);
	net->socks = calloc(cfg->max_conns, sizeof(*net->socks));
	int r = -ENOMEM;
	if (!net->frame || !net->socks)
		goto fail;
	r = iwn_arp_cache_init(&net->arp, cfg->arp_entries, IWN_ETH_HLEN + cfg->mtu, cfg->arp_reachable_us,
			       cfg->arp_retry_us, cfg->arp_tries);
	if (r)
		goto fail;
	net->next_port = 49152;
	iwn_bucket_init(&net->rst_bucket, cfg->rst_rate, cfg->rst_burst, 0);
	iwn_bucket_init(&net->icmp_bucket, cfg->icmp_rate, cfg->icmp_burst, 0);
	return 0;
fail:
	free(net->frame);
	free(net->socks);
	net->frame = NULL;
	net->socks = NULL;
	return r;
}

static void sock_free(struct iwn_net *net, uint32_t i)
{
	iwn_tcp_conn_fini(&net->socks[i]->c);
	free(net->socks[i]);
	net->socks[i] = NULL;
	while (net->socks_hi && !net->socks[net->socks_hi - 1])
		net->socks_hi--;
}

void iwn_net_fini(struct iwn_net *net)
{
	if (net->socks)
		for (uint32_t i = 0; i < net->cfg.max_conns; i++)
			if (net->socks[i])
				sock_free(net, i);
	iwn_arp_cache_fini(&net->arp);
	free(net->socks);
	free(net->frame);
	net->socks = NULL;
	net->frame = NULL;
}

/* ---- output ---- */

static void tx(struct iwn_net *net, const uint8_t *frame, uint32_t len)
{
	net->stats.tx_frames++;
	net->cfg.tx(net->cfg.tx_arg, frame, len);
}

static void send_arp(struct iwn_net *net, uint16_t oper, const uint8_t dst_mac[IWN_ETH_ALEN],
		     const uint8_t tha[IWN_ETH_ALEN], uint32_t tpa)
{
	/* Padded to the 60-byte Ethernet minimum (without FCS). */
	uint8_t f[60];
	memset(f, 0, sizeof(f));
	iwn_eth_build(f, dst_mac, net->cfg.mac, IWN_ETHERTYPE_ARP);
	struct iwn_arp_pkt a;
	a.oper = oper;
	memcpy(a.sha, net->cfg.mac, IWN_ETH_ALEN);
	a.spa = net->cfg.ip;
	memcpy(a.tha, tha, IWN_ETH_ALEN);
	a.tpa = tpa;
	iwn_arp_build(f + IWN_ETH_HLEN, &a);
	tx(net, f, sizeof(f));
}

static void arp_request(void *arg, uint32_t ip)
{
	static const uint8_t zero[IWN_ETH_ALEN];
	send_arp(arg, IWN_ARP_REQUEST, iwn_eth_broadcast, zero, ip);
}

/* How a TCP frame leaves: plain, or through the offload path with its
 * checksum partial (and maybe as a super-segment). */
struct tx_off {
	bool on;
	uint32_t gso_size;
};

/* Send the IPv4 packet whose header starts IWN_ETH_HLEN bytes into
 * frame: resolve the next hop, or park the frame until ARP answers. */
static void ip_output_off(struct iwn_net *net, uint8_t *frame, uint32_t len, uint32_t dst, uint64_t now,
			  struct tx_off off)
{
	if (len > IWN_ETH_HLEN + (uint32_t)net->cfg.mtu && !off.gso_size) {
		net->stats.tx_too_big++;
		return;
	}
	const uint8_t *mac = iwn_arp_lookup(&net->arp, dst, now);
	static const uint8_t unknown[IWN_ETH_ALEN];
	iwn_eth_build(frame, mac ? mac : unknown, net->cfg.mac, IWN_ETHERTYPE_IPV4);
	if (mac) {
		if (off.on) {
			net->stats.tx_frames++;
			net->cfg.tx_off(net->cfg.tx_arg, frame, len, off.gso_size);
		} else {
			tx(net, frame, len);
		}
		return;
	}
	if (off.gso_size) {
		/* Too big to park: TCP resends it as it would a lost one. */
		net->stats.tx_gso_unresolved++;
		return;
	}
	if (off.on) {
		/* Parked frames leave through tx: complete the checksum. */
		uint32_t ihl = (uint32_t)(frame[IWN_ETH_HLEN] & 0x0F) * 4;
		uint32_t src = (uint32_t)frame[IWN_ETH_HLEN + 12] << 24 | (uint32_t)frame[IWN_ETH_HLEN + 13] << 16 |
			       (uint32_t)frame[IWN_ETH_HLEN + 14] << 8 | frame[IWN_ETH_HLEN + 15];
		iwn_tcp_set_csum(frame + IWN_ETH_HLEN + ihl, len - IWN_ETH_HLEN - ihl, src, dst);
	}
	if (iwn_arp_enqueue(&net->arp, dst, frame, len, now) == 1)
		arp_request(net, dst);
}

static void ip_output(struct iwn_net *net, uint8_t *frame, uint32_t len, uint32_t dst, uint64_t now)
{
	ip_output_off(net, frame, len, dst, now, (struct tx_off){ 0 });
}

static void tcp_out(void *arg, struct iwn_tcp_conn *c, uint32_t laddr, uint32_t raddr, uint8_t *seg, uint32_t len)
{
	struct iwn_net *net = arg;
	/* Application calls (send, close, abort, recv) reach the connection
	 * without passing through the host: take their time, or ARP would
	 * resolve and queue with the time of the last frame or timer. */
	if (c && c->out_now > net->now)
		net->now = c->out_now;
	uint8_t *ip = seg - 20;
	struct tx_off off = { .on = c && c->cfg.csum_offload, .gso_size = c ? c->out_gso : 0 };
	iwn_ip4_build(ip, laddr, raddr, IWN_IPPROTO_TCP, net->ip_id, 64, (uint16_t)len);
	/* The kernel numbers a super-segment's pieces from its ID on. */
	net->ip_id = (uint16_t)(net->ip_id + (off.gso_size ? iwn_gso_segs(len - (uint32_t)(seg[12] >> 4) * 4, off.gso_size) : 1));
	ip_output_off(net, ip - IWN_ETH_HLEN, IWN_ETH_HLEN + 20 + len, raddr, net->now, off);
}

/* Build TCP frames in the owner's slot when it has one (tcp_out gets
 * the same memory back, already framed). */
static uint8_t *tcp_txbuf(void *arg)
{
	struct iwn_net *net = arg;
	return net->cfg.tx_slot(net->cfg.tx_arg, net->frame_cap);
}

/* ---- connections ---- */

static struct iwn_net_sock *sock_of(struct iwn_net *net, const struct iwn_tcp_conn *c, uint32_t *idx)
{
	for (uint32_t i = 0; i < net->socks_hi; i++)
		if (net->socks[i] && &net->socks[i]->c == c) {
			if (idx)
				*idx = i;
			return net->socks[i];
		}
	return NULL;
}

static struct iwn_tcp_conn *find_conn(struct iwn_net *net, uint32_t raddr, uint16_t rport, uint16_t lport)
{
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		struct iwn_net_sock *s = net->socks[i];
		if (s && s->c.state != IWN_TCP_CLOSED && s->c.raddr == raddr && s->c.rport == rport &&
		    s->c.lport == lport)
			return &s->c;
	}
	return NULL;
}

static int new_sock(struct iwn_net *net, uint32_t *idx)
{
	for (uint32_t i = 0; i < net->cfg.max_conns; i++) {
		if (net->socks[i])
			continue;
		struct iwn_net_sock *s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		int r = iwn_tcp_conn_init(&s->c, &net->cfg.tcp, net->frame, IWN_NET_HEADROOM, tcp_out, net,
					  net->cfg.isn_key);
		if (r) {
			free(s);
			return r;
		}
		if (net->cfg.tx_slot)
			s->c.txbuf_get = tcp_txbuf;
		net->socks[i] = s;
		if (i >= net->socks_hi)
			net->socks_hi = i + 1;
		*idx = i;
		return 0;
	}
	return -EMFILE;
}

/* Free closed connections nobody will look at any more. */
static void reap(struct iwn_net *net)
{
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		struct iwn_net_sock *s = net->socks[i];
		if (s && s->c.state == IWN_TCP_CLOSED && (s->released || !s->accepted))
			sock_free(net, i);
	}
}

static bool port_in_use(struct iwn_net *net, uint16_t port)
{
	for (uint32_t i = 0; i < IWN_NET_MAX_LISTEN; i++)
		if (net->listen[i].on && net->listen[i].port == port)
			return true;
	for (uint32_t i = 0; i < net->socks_hi; i++)
		if (net->socks[i] && net->socks[i]->c.lport == port)
			return true;
	return false;
}

int iwn_net_listen(struct iwn_net *net, uint16_t port, uint32_t backlog)
{
	if (port == 0 || backlog == 0)
		return -EINVAL;
	int freei = -1;
	for (int i = 0; i < IWN_NET_MAX_LISTEN; i++) {
		if (net->listen[i].on && net->listen[i].port == port)
			return -EADDRINUSE;
		if (!net->listen[i].on && freei < 0)
			freei = i;
	}
	if (freei < 0)
		return -ENOSPC;
	net->listen[freei].on = true;
	net->listen[freei].port = port;
	net->listen[freei].backlog = backlog;
	return 0;
}

/* The next port of the dynamic range nobody uses; 0 when all are. */
static uint16_t free_port(struct iwn_net *net)
{
	for (uint32_t tries = 0; tries < 16384; tries++) {
		uint16_t p = net->next_port;
		net->next_port = p == 65535 ? 49152 : (uint16_t)(p + 1);
		if (!port_in_use(net, p))
			return p;
	}
	return 0;
}

int iwn_net_listen_ephemeral(struct iwn_net *net, uint32_t backlog, uint16_t *port)
{
	if (backlog == 0 || !port)
		return -EINVAL;
	uint16_t p = free_port(net);
	if (p == 0)
		return -EADDRINUSE;
	int rc = iwn_net_listen(net, p, backlog);
	if (rc == 0)
		*port = p;
	return rc;
}

void iwn_net_unlisten(struct iwn_net *net, uint16_t port, uint64_t now)
{
	for (int i = 0; i < IWN_NET_MAX_LISTEN; i++)
		if (net->listen[i].on && net->listen[i].port == port)
			net->listen[i].on = false;
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		struct iwn_net_sock *s = net->socks[i];
		if (s && !s->accepted && s->c.lport == port)
			iwn_net_release(net, &s->c, now);
	}
}

/* Established (or already closing) and not yet accepted: waiting in the
 * listener's accept queue. */
static bool waiting_accept(const struct iwn_net_sock *s, uint16_t port)
{
	return s && !s->accepted && s->c.lport == port && s->c.state != IWN_TCP_SYN_RCVD &&
	       s->c.state != IWN_TCP_CLOSED;
}

struct iwn_tcp_conn *iwn_net_accept(struct iwn_net *net, uint16_t port)
{
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		struct iwn_net_sock *s = net->socks[i];
		if (waiting_accept(s, port)) {
			s->accepted = true;
			return &s->c;
		}
	}
	return NULL;
}

struct iwn_tcp_conn *iwn_net_connect(struct iwn_net *net, uint32_t raddr, uint16_t rport, uint16_t lport,
				     uint64_t now, int *err)
{
	net->now = now;
	int dummy;
	if (!err)
		err = &dummy;
	if (lport == 0) {
		lport = free_port(net);
		if (lport == 0) {
			*err = -EADDRINUSE;
			return NULL;
		}
	} else if (port_in_use(net, lport)) {
		*err = -EADDRINUSE;
		return NULL;
	}
	uint32_t i;
	int r = new_sock(net, &i);
	if (r) {
		*err = r;
		return NULL;
	}
	struct iwn_net_sock *s = net->socks[i];
	s->accepted = true;
	iwn_tcp_connect(&s->c, net->cfg.ip, lport, raddr, rport, now);
	*err = 0;
	return &s->c;
}

void iwn_net_release(struct iwn_net *net, struct iwn_tcp_conn *c, uint64_t now)
{
	net->now = now;
	struct iwn_net_sock *s = sock_of(net, c, NULL);
	if (!s)
		return;
	s->released = true;
	s->accepted = true;
	if (!c->fin_queued && c->state != IWN_TCP_CLOSED && c->state != IWN_TCP_TIME_WAIT)
		iwn_tcp_abort(c, now);
	iwn_tcp_orphan(c, now);
	reap(net);
}

uint32_t iwn_net_conn_count(const struct iwn_net *net)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < net->socks_hi; i++)
		n += net->socks[i] != NULL;
	return n;
}

/* ---- input ---- */

static int listener(const struct iwn_net *net, uint16_t port)
{
	for (int li = 0; li < IWN_NET_MAX_LISTEN; li++)
		if (net->listen[li].on && net->listen[li].port == port)
			return li;
	return -1;
}

/* A listener's connections not yet accepted: half-open (SYN-RECEIVED)
 * and established; and the free slots of the table. */
struct queue_use {
	uint32_t half_open, ready, free;
};

static struct queue_use queue_use(const struct iwn_net *net, uint16_t port)
{
	struct queue_use q = {0, 0, 0};
	for (uint32_t i = 0; i < net->cfg.max_conns; i++) {
		const struct iwn_net_sock *s = net->socks[i];
		if (!s)
			q.free++;
		else if (!s->accepted && s->c.lport == port && s->c.state == IWN_TCP_SYN_RCVD)
			q.half_open++;
		else if (waiting_accept(s, port))
			q.ready++;
	}
	return q;
}

/* A full accept queue that one address holds more than half of (a flood
 * from one host, faster than the application accepts) gives way to
 * another address, as the connection manager's majority rule does for
 * MPA Requests (stack/cm_admit.c): else the flood's connections fill the
 * queue and every other host's SYN and ACK are dropped. Returns the
 * slot to reset, that address's last in accept order (its newest, or
 * one whose peer already closed), or -1 when addr is that address or no
 * address holds a majority. */
static int accept_queue_victim(const struct iwn_net *net, uint16_t port, uint32_t addr)
{
	uint32_t cand = 0, votes = 0, n = 0, held = 0;
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		const struct iwn_net_sock *s = net->socks[i];
		if (!waiting_accept(s, port))
			continue;
		n++;
		if (votes == 0) {
			cand = s->c.raddr;
			votes = 1;
		} else if (s->c.raddr == cand) {
			votes++;
		} else {
			votes--;
		}
	}
	if (votes == 0 || cand == addr)
		return -1;
	int victim = -1;
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		const struct iwn_net_sock *s = net->socks[i];
		if (!waiting_accept(s, port) || s->c.raddr != cand)
			continue;
		held++;
		if (victim < 0 || net->socks[victim]->c.state == IWN_TCP_ESTABLISHED)
			victim = (int)i;
	}
	return 2 * held > n ? victim : -1;
}

static void accept_queue_evict(struct iwn_net *net, int victim, uint64_t now)
{
	net->stats.tcp_accept_evicted++;
	iwn_net_release(net, &net->socks[victim]->c, now); /* a reset to that peer */
}

/* A SYN for listener li: a connection in SYN-RECEIVED while the
 * half-open queue and the table have room, else a cookie SYN-ACK that
 * leaves nothing behind (RFC 4987 sec. 3.6), so spoofed SYNs cannot lock
 * legitimate ones out. Only a full accept queue drops the SYN, and not
 * when the queue would give way to this address (accept_queue_victim). */
static void syn_input(struct iwn_net *net, int li, const struct iwn_ip4 *ip, const struct iwn_tcp_hdr *h,
		      uint64_t now)
{
	struct queue_use q = queue_use(net, h->dport);
	uint32_t i;
	bool full = q.ready >= net->listen[li].backlog;
	/* Room is made only for a completed handshake (a cookie ACK proves
	 * the address): a spoofed SYN must not reset anyone. */
	if (full && accept_queue_victim(net, h->dport, ip->src) < 0) {
		net->stats.tcp_syn_dropped++;
		return;
	}
	if (!full && q.half_open < net->listen[li].backlog && q.free > net->cfg.max_conns / 8 &&
	    new_sock(net, &i) == 0) {
		iwn_tcp_accept_syn(&net->socks[i]->c, net->cfg.ip, ip->src, h, now);
		return;
	}
	uint32_t cookie = iwn_syn_cookie(net->cfg.isn_key, net->cfg.ip, h->dport, ip->src, h->sport, h->seq,
					 h->opt.has_mss ? h->opt.mss : 0, now);
	iwn_tcp_send_cookie_synack(net->frame, IWN_NET_HEADROOM, tcp_out, net, &net->cfg.tcp, net->cfg.isn_key,
				   net->cfg.ip, ip->src, h, cookie, now);
	net->listen[li].cookie_at = now;
	net->listen[li].cookies = true;
	net->stats.tcp_cookies_sent++;
}

/* A bare ACK for listener li that matched no connection: the third step
 * of a handshake answered with a cookie? Checked only while cookies were
 * sent in the last two counter steps (as Linux does), so guessing needs a
 * flood in progress. 0: taken (a connection, or dropped for lack of
 * room); else the cookie was bad and the caller resets. */
static int cookie_ack_input(struct iwn_net *net, int li, const struct iwn_ip4 *ip, const struct iwn_tcp_hdr *h,
			    uint64_t now)
{
	if (!net->listen[li].cookies || now - net->listen[li].cookie_at > (2ull << IWN_COOKIE_PERIOD_SHIFT))
		return -EINVAL;
	struct iwn_tcp_hdr syn;
	memset(&syn, 0, sizeof(syn));
	syn.sport = h->sport;
	syn.dport = h->dport;
	syn.seq = h->seq - 1;
	syn.flags = IWN_TCP_SYN;
	syn.win = h->win;
	syn.opt.has_mss = true;
	int r = iwn_syn_cookie_check(net->cfg.isn_key, net->cfg.ip, h->dport, ip->src, h->sport, syn.seq, h->ack - 1,
				     now, &syn.opt.mss);
	if (!r && h->opt.has_ts && net->cfg.tcp.timestamps) {
		uint32_t ts_now = iwn_syn_cookie_ts_clock(net->cfg.isn_key, net->cfg.ip, h->dport, ip->src, h->sport, now);
		if (iwn_syn_cookie_ts_decode(h->opt.tsecr, ts_now, &syn.opt)) {
			syn.opt.has_ts = true;
			syn.opt.tsval = h->opt.tsval;
		} else {
			r = -EINVAL;
		}
	}
	if (r) {
		net->stats.tcp_cookies_bad++;
		return r;
	}
	struct queue_use q = queue_use(net, h->dport);
	uint32_t i;
	if (q.ready >= net->listen[li].backlog) {
		int victim = accept_queue_victim(net, h->dport, ip->src);
		if (victim < 0) {
			net->stats.tcp_cookies_dropped++; /* the peer retransmits */
			return 0;
		}
		accept_queue_evict(net, victim, now);
	}
	if (new_sock(net, &i)) {
		net->stats.tcp_cookies_dropped++; /* the peer retransmits */
		return 0;
	}
	struct iwn_tcp_conn *c = &net->socks[i]->c;
	iwn_tcp_accept_cookie(c, net->cfg.ip, ip->src, &syn, h->ack - 1);
	iwn_tcp_input(c, h, now);
	net->stats.tcp_cookies_ok++;
	return 0;
}

static void tcp_input(struct iwn_net *net, const struct iwn_ip4 *ip, const uint8_t *seg, uint32_t len,
		      uint64_t now, bool verified)
{
	struct iwn_tcp_hdr h;
	int r = verified ? iwn_tcp_parse_verified(seg, len, &h) : iwn_tcp_parse(seg, len, ip->src, ip->dst, &h);
	net->stats.rx_csum_trusted += verified;
	if (r == -EBADMSG) {
		net->stats.tcp_bad_csum++;
		return;
	}
	/* Port 0 is reserved (IANA): no connection uses it, and a reset
	 * to it would only serve scanners. */
	if (r || h.sport == 0 || h.dport == 0) {
		net->stats.tcp_bad++;
		return;
	}
	struct iwn_tcp_conn *c = find_conn(net, ip->src, h.sport, h.dport);
	if (c) {
		iwn_tcp_input(c, &h, now);
		return;
	}
	int li = listener(net, h.dport);
	uint8_t kind = h.flags & (IWN_TCP_SYN | IWN_TCP_ACK | IWN_TCP_RST);
	if (li >= 0 && kind == IWN_TCP_SYN) {
		syn_input(net, li, ip, &h, now);
		return;
	}
	if (li >= 0 && kind == IWN_TCP_ACK && cookie_ack_input(net, li, ip, &h, now) == 0)
		return;
	/* A listener drops what has neither SYN nor ACK (RFC 9293 sec.
	 * 3.10.7.2: no flags, a bare FIN): it names no connection attempt to
	 * refuse. */
	if (li >= 0 && !(h.flags & (IWN_TCP_SYN | IWN_TCP_ACK)))
		return;
	if (h.flags & IWN_TCP_RST)
		return;
	if (!iwn_bucket_take(&net->rst_bucket, now)) {
		net->stats.tcp_resets_limited++;
		return;
	}
	net->stats.tcp_resets_sent++;
	iwn_tcp_send_reset_for(net->frame, IWN_NET_HEADROOM, tcp_out, net, ip->dst, ip->src, &h);
}

static void icmp_input(struct iwn_net *net, const struct iwn_ip4 *ip, const uint8_t *msg, uint32_t len,
		       uint64_t now)
{
	uint32_t room = net->frame_cap - IWN_ETH_HLEN - IWN_IP4_HLEN;
	if (len > room || len > (uint32_t)net->cfg.mtu - IWN_IP4_HLEN)
		return;
	uint8_t *p = net->frame + IWN_ETH_HLEN + IWN_IP4_HLEN;
	memcpy(p, msg, len);
	if (iwn_icmp_echo_reply(p, len))
		return;
	if (!iwn_bucket_take(&net->icmp_bucket, now)) {
		net->stats.icmp_limited++;
		return;
	}
	iwn_ip4_build(net->frame + IWN_ETH_HLEN, net->cfg.ip, ip->src, IWN_IPPROTO_ICMP, net->ip_id++, 64,
		      (uint16_t)len);
	net->stats.icmp_echo_replies++;
	ip_output(net, net->frame, IWN_ETH_HLEN + IWN_IP4_HLEN + len, ip->src, now);
}

static void arp_input(struct iwn_net *net, const uint8_t *p, uint32_t len, uint64_t now)
{
	struct iwn_arp_pkt a;
	if (iwn_arp_parse(p, len, &a)) {
		net->stats.rx_bad++;
		return;
	}
	/* A sender hardware address that is zero or a group address names
	 * no station: learning it would send our frames nowhere, and
	 * answering it would put it on the wire as a destination. */
	static const uint8_t zero[IWN_ETH_ALEN];
	if ((a.sha[0] & 1) || memcmp(a.sha, zero, IWN_ETH_ALEN) == 0) {
		net->stats.rx_bad++;
		return;
	}
	net->stats.arp_in++;
	if (a.spa == 0) /* probe (RFC 5227): nothing to learn */
		goto reply;
	bool for_us = a.tpa == net->cfg.ip;
	uint8_t *frame;
	uint32_t flen;
	iwn_arp_learn(&net->arp, a.spa, a.sha, now, for_us, &frame, &flen);
	if (frame) {
		memcpy(frame + IWN_ETH_OFF_DST, a.sha, IWN_ETH_ALEN);
		tx(net, frame, flen);
	}
reply:
	if (a.oper == IWN_ARP_REQUEST && a.tpa == net->cfg.ip) {
		net->stats.arp_replies_sent++;
		send_arp(net, IWN_ARP_REPLY, a.sha, a.sha, a.spa);
	}
}

void iwn_net_input(struct iwn_net *net, const uint8_t *frame, uint32_t len, uint64_t now)
{
	iwn_net_input_flags(net, frame, len, now, 0);
}

void iwn_net_input_flags(struct iwn_net *net, const uint8_t *frame, uint32_t len, uint64_t now, uint32_t flags)
{
	net->now = now;
	net->stats.rx_frames++;
	struct iwn_eth e;
	if (iwn_eth_parse(frame, len, &e)) {
		net->stats.rx_bad++;
		return;
	}
	if (memcmp(e.dst, net->cfg.mac, IWN_ETH_ALEN) != 0 && !iwn_eth_is_broadcast(e.dst)) {
		net->stats.rx_not_for_us++;
		return;
	}
	const uint8_t *p = frame + IWN_ETH_HLEN;
	uint32_t plen = len - IWN_ETH_HLEN;
	if (e.type == IWN_ETHERTYPE_ARP) {
		arp_input(net, p, plen, now);
		return;
	}
	if (e.type != IWN_ETHERTYPE_IPV4) {
		net->stats.rx_unknown_type++;
		return;
	}
	struct iwn_ip4 ip;
	int r = iwn_ip4_parse(p, plen, &ip);
	if (r == IWN_IP4_ECSUM) {
		net->stats.ip_bad_csum++;
		return;
	}
	if (r == IWN_IP4_EFRAG) {
		net->stats.ip_frags++;
		return;
	}
	if (r) {
		net->stats.ip_bad++;
		return;
	}
	if (ip.dst != net->cfg.ip) {
		net->stats.ip_not_for_us++;
		return;
	}
	/* Our own address never arrives from the wire: answering it (a land
	 * SYN) would resolve and talk to ourselves. */
	if (ip.src == net->cfg.ip) {
		net->stats.ip_src_ours++;
		return;
	}
	const uint8_t *payload = p + ip.hlen;
	uint32_t paylen = (uint32_t)ip.totlen - ip.hlen;
	if (ip.proto == IWN_IPPROTO_TCP)
		tcp_input(net, &ip, payload, paylen, now, (flags & IWN_NET_RX_CSUM_OK) != 0);
	else if (ip.proto == IWN_IPPROTO_ICMP)
		icmp_input(net, &ip, payload, paylen, now);
	else
		net->stats.ip_unknown_proto++;
	reap(net);
}

uint64_t iwn_net_next_deadline(const struct iwn_net *net)
{
	uint64_t d = iwn_arp_next_deadline(&net->arp);
	for (uint32_t i = 0; i < net->socks_hi; i++)
		if (net->socks[i]) {
			uint64_t t = iwn_tcp_next_deadline(&net->socks[i]->c);
			if (t < d)
				d = t;
		}
	return d;
}

void iwn_net_output_pending(struct iwn_net *net, uint64_t now)
{
	net->now = now;
	for (uint32_t i = 0; i < net->socks_hi; i++) {
		struct iwn_net_sock *s = net->socks[i];
		if (s && s->c.out_pending) {
			s->c.out_pending = false;
			iwn_tcp_output(&s->c, now, false);
		}
	}
	reap(net);
}

void iwn_net_timers(struct iwn_net *net, uint64_t now)
{
	net->now = now;
	iwn_arp_timers(&net->arp, now, arp_request, net);
	for (uint32_t i = 0; i < net->socks_hi; i++)
		if (net->socks[i] && iwn_tcp_next_deadline(&net->socks[i]->c) <= now)
			iwn_tcp_timers(&net->socks[i]->c, now);
	reap(net);
}
