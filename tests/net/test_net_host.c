/* The host layer (net.c) frame by frame: ARP answers and resolution,
 * ICMP echo, IPv4 drops and their counters, resets for closed ports; and
 * the regressions found by fuzz_net_hostile. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "net/cksum.h"
#include "net/ipv4.h"
#include "net/net.h"
#include "net/tcp_seg.h"

#define OUR_IP 0x0a000002u
#define PEER_IP 0x0a000001u
static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x01};

static struct {
	uint8_t f[8][1600];
	uint32_t len[8];
	int n;
} cap;

static void cap_tx(void *arg, const uint8_t *frame, uint32_t len)
{
	(void)arg;
	ck_assert_int_lt(cap.n, 8);
	ck_assert_uint_le(len, sizeof(cap.f[0]));
	memcpy(cap.f[cap.n], frame, len);
	cap.len[cap.n++] = len;
}

static void host(struct iwn_net *net)
{
	struct iwn_net_cfg cfg;
	iwn_net_cfg_default(&cfg);
	memcpy(cfg.mac, our_mac, 6);
	cfg.ip = OUR_IP;
	cfg.tx = cap_tx;
	ck_assert_int_eq(iwn_net_init(net, &cfg), 0);
	memset(&cap, 0, sizeof(cap));
}

/* An ARP packet from sender hardware address sha. */
static uint32_t arp_frame_from(uint8_t *f, uint16_t oper, const uint8_t *dst, const uint8_t *sha, uint32_t spa,
			       uint32_t tpa)
{
	memset(f, 0, 60);
	iwn_eth_build(f, dst, sha, IWN_ETHERTYPE_ARP);
	struct iwn_arp_pkt a = {.oper = oper, .spa = spa, .tpa = tpa};
	memcpy(a.sha, sha, 6);
	if (oper == IWN_ARP_REPLY)
		memcpy(a.tha, our_mac, 6);
	iwn_arp_build(f + 14, &a);
	return 60;
}

static uint32_t arp_frame(uint8_t *f, uint16_t oper, const uint8_t *dst, uint32_t spa, uint32_t tpa)
{
	return arp_frame_from(f, oper, dst, peer_mac, spa, tpa);
}

/* An IPv4 frame from the peer carrying payload (already built). */
static uint32_t ip_frame(uint8_t *f, uint8_t proto, const uint8_t *payload, uint32_t plen)
{
	iwn_eth_build(f, our_mac, peer_mac, IWN_ETHERTYPE_IPV4);
	iwn_ip4_build(f + 14, PEER_IP, OUR_IP, proto, 7, 64, (uint16_t)plen);
	memcpy(f + 34, payload, plen);
	return 34 + plen;
}

START_TEST(test_arp_reply)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[60];
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 1000);
	ck_assert_int_eq(cap.n, 1);
	const uint8_t want[42] = {
		0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x06, /* Ethernet */
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,              /* ARP reply */
		0x02, 0, 0, 0, 0, 0x02, 0x0a, 0x00, 0x00, 0x02,             /* we */
		0x02, 0, 0, 0, 0, 0x01, 0x0a, 0x00, 0x00, 0x01,             /* they */
	};
	ck_assert_uint_eq(cap.len[0], 60);
	ck_assert_mem_eq(cap.f[0], want, 42);
	/* The requester was learned (the request was for us). */
	ck_assert_mem_eq(iwn_arp_lookup(&net.arp, PEER_IP, 1000), peer_mac, 6);
	/* A request for another address: no answer, nothing learned. */
	cap.n = 0;
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, 0x0a000005, 0x0a000009), 1000);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_ptr_null(iwn_arp_lookup(&net.arp, 0x0a000005, 1000));
	ck_assert_uint_eq(net.stats.arp_replies_sent, 1);
	iwn_net_fini(&net);
}
END_TEST

static uint32_t echo_request(uint8_t *f)
{
	uint8_t m[] = {0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, 'a', 'b', 'c', 'd'};
	return ip_frame(f, IWN_IPPROTO_ICMP, m, sizeof(m));
}

START_TEST(test_icmp_echo_with_arp)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[128];
	/* Unknown sender: the reply waits for ARP. */
	iwn_net_input(&net, f, echo_request(f), 1000);
	ck_assert_int_eq(cap.n, 1);
	ck_assert_uint_eq(cap.f[0][12], 0x08);
	ck_assert_uint_eq(cap.f[0][13], 0x06);
	ck_assert_mem_eq(cap.f[0], iwn_eth_broadcast, 6);
	ck_assert_uint_eq(cap.f[0][21], IWN_ARP_REQUEST);
	ck_assert_uint_eq(iwn_arp_next_deadline(&net.arp), 1000 + net.cfg.arp_retry_us);
	/* The reply flushes the queued echo reply. */
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REPLY, our_mac, PEER_IP, OUR_IP), 2000);
	ck_assert_int_eq(cap.n, 2);
	const uint8_t *r = cap.f[1];
	ck_assert_mem_eq(r, peer_mac, 6);
	ck_assert_uint_eq(cap.len[1], 34 + 12);
	struct iwn_ip4 ip;
	ck_assert_int_eq(iwn_ip4_parse(r + 14, cap.len[1] - 14, &ip), 0);
	ck_assert_uint_eq(ip.src, OUR_IP);
	ck_assert_uint_eq(ip.dst, PEER_IP);
	ck_assert_uint_eq(ip.proto, IWN_IPPROTO_ICMP);
	const uint8_t want[] = {0x00, 0x00, 0x29, 0x04, 0x12, 0x34, 0x00, 0x01, 'a', 'b', 'c', 'd'};
	ck_assert_mem_eq(r + 34, want, sizeof(want));
	/* Known now: the next echo is answered at once. */
	iwn_net_input(&net, f, echo_request(f), 3000);
	ck_assert_int_eq(cap.n, 3);
	ck_assert_uint_eq(net.stats.icmp_echo_replies, 2);
	iwn_net_fini(&net);
}
END_TEST

START_TEST(test_arp_gives_up)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[128];
	iwn_net_input(&net, f, echo_request(f), 0);
	ck_assert_int_eq(cap.n, 1);
	for (uint64_t t = 0; t <= 10 * net.cfg.arp_retry_us; t += 1000) {
		if (iwn_net_next_deadline(&net) <= t)
			iwn_net_timers(&net, t);
	}
	ck_assert_int_eq(cap.n, net.cfg.arp_tries); /* requests only */
	ck_assert_uint_eq(net.arp.stats.resolve_failed, 1);
	ck_assert_uint_eq(net.arp.stats.pending_dropped, 1);
	ck_assert_uint_eq(iwn_net_next_deadline(&net), UINT64_MAX);
	iwn_net_fini(&net);
}
END_TEST

START_TEST(test_ip_drops)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[128];
	uint32_t n = echo_request(f);
	/* Fragment (MF): counted and dropped. */
	f[14 + 6] |= 0x20;
	f[14 + 10] = f[14 + 11] = 0;
	uint16_t c = iwn_cksum_fold(iwn_cksum_add(0, f + 14, 20));
	f[14 + 10] = (uint8_t)(c >> 8);
	f[14 + 11] = (uint8_t)c;
	iwn_net_input(&net, f, n, 0);
	ck_assert_uint_eq(net.stats.ip_frags, 1);
	/* Bad header checksum. */
	n = echo_request(f);
	f[14 + 8] ^= 1;
	iwn_net_input(&net, f, n, 0);
	ck_assert_uint_eq(net.stats.ip_bad_csum, 1);
	/* Another destination MAC, another IP, another ethertype. */
	n = echo_request(f);
	f[0] ^= 0x10;
	iwn_net_input(&net, f, n, 0);
	ck_assert_uint_eq(net.stats.rx_not_for_us, 1);
	n = echo_request(f);
	iwn_ip4_build(f + 14, PEER_IP, OUR_IP + 1, IWN_IPPROTO_ICMP, 1, 64, (uint16_t)(n - 34));
	iwn_net_input(&net, f, n, 0);
	ck_assert_uint_eq(net.stats.ip_not_for_us, 1);
	n = echo_request(f);
	f[12] = 0x86;
	f[13] = 0xdd;
	iwn_net_input(&net, f, n, 0);
	ck_assert_uint_eq(net.stats.rx_unknown_type, 1);
	iwn_net_input(&net, f, 10, 0);
	ck_assert_uint_eq(net.stats.rx_bad, 1);
	ck_assert_int_eq(cap.n, 0);
	iwn_net_fini(&net);
}
END_TEST

static uint32_t tcp_frame(uint8_t *f, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t dport, uint32_t plen)
{
	uint8_t seg[64];
	memset(seg, 0, sizeof(seg));
	struct iwn_tcp_hdr h;
	memset(&h, 0, sizeof(h));
	h.sport = 40000;
	h.dport = dport;
	h.seq = seq;
	h.ack = ack;
	h.flags = flags;
	h.win = 1000;
	size_t hl = iwn_tcp_build(seg, &h);
	iwn_tcp_set_csum(seg, hl + plen, PEER_IP, OUR_IP);
	return ip_frame(f, IWN_IPPROTO_TCP, seg, (uint32_t)hl + plen);
}

/* A segment from the peer with any header and options. */
static uint32_t tcp_frame_hdr(uint8_t *f, const struct iwn_tcp_hdr *h, uint32_t plen)
{
	uint8_t seg[IWN_TCP_MAX_HLEN + 1460];
	ck_assert_uint_le(plen, 1460);
	size_t hl = iwn_tcp_build(seg, h);
	memset(seg + hl, 'x', plen);
	iwn_tcp_set_csum(seg, hl + plen, PEER_IP, OUR_IP);
	return ip_frame(f, IWN_IPPROTO_TCP, seg, (uint32_t)hl + plen);
}

static void last_seg(struct iwn_tcp_hdr *h)
{
	ck_assert_int_gt(cap.n, 0);
	const uint8_t *f = cap.f[cap.n - 1];
	ck_assert_uint_eq(f[12], 0x08);
	ck_assert_uint_eq(f[13], 0x00);
	ck_assert_int_eq(iwn_tcp_parse(f + 34, cap.len[cap.n - 1] - 34, OUR_IP, PEER_IP, h), 0);
}

#define PORT 4791
#define PEER_PORT 40000

/* The peer (known by ARP) opens a connection with SACK to a listener;
 * returns it accepted, *peer_nxt its next sequence number. */
static struct iwn_tcp_conn *handshake(struct iwn_net *net, uint32_t *peer_nxt)
{
	uint8_t f[1600];
	iwn_net_input(net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	ck_assert_int_eq(iwn_net_listen(net, PORT, 4), 0);
	struct iwn_tcp_hdr s = {.sport = PEER_PORT, .dport = PORT, .seq = 1000, .flags = IWN_TCP_SYN, .win = 65535};
	s.opt.has_mss = true;
	s.opt.mss = 1460;
	s.opt.sack_ok = true;
	iwn_net_input(net, f, tcp_frame_hdr(f, &s, 0), 0);
	struct iwn_tcp_hdr sa;
	last_seg(&sa);
	ck_assert_uint_eq(sa.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	struct iwn_tcp_hdr a = {.sport = PEER_PORT, .dport = PORT, .seq = 1001, .ack = sa.seq + 1,
				.flags = IWN_TCP_ACK, .win = 65535};
	iwn_net_input(net, f, tcp_frame_hdr(f, &a, 0), 10);
	struct iwn_tcp_conn *c = iwn_net_accept(net, PORT);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->sack_on);
	*peer_nxt = 1001;
	return c;
}

START_TEST(test_tcp_resets)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[128];
	/* Known peer, so the reset leaves at once. */
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	cap.n = 0;
	iwn_net_input(&net, f, tcp_frame(f, IWN_TCP_SYN, 1000, 0, 80, 0), 0);
	ck_assert_int_eq(cap.n, 1);
	struct iwn_tcp_hdr h;
	ck_assert_int_eq(iwn_tcp_parse(cap.f[0] + 34, cap.len[0] - 34, OUR_IP, PEER_IP, &h), 0);
	ck_assert_uint_eq(h.flags, IWN_TCP_RST | IWN_TCP_ACK);
	ck_assert_uint_eq(h.seq, 0);
	ck_assert_uint_eq(h.ack, 1001);
	ck_assert_uint_eq(h.sport, 80);
	ck_assert_uint_eq(h.dport, 40000);
	/* With ACK: seq = the segment's ACK, no ACK bit; data counts. */
	iwn_net_input(&net, f, tcp_frame(f, IWN_TCP_ACK, 5000, 777, 80, 4), 0);
	ck_assert_int_eq(cap.n, 2);
	ck_assert_int_eq(iwn_tcp_parse(cap.f[1] + 34, cap.len[1] - 34, OUR_IP, PEER_IP, &h), 0);
	ck_assert_uint_eq(h.flags, IWN_TCP_RST);
	ck_assert_uint_eq(h.seq, 777);
	/* A reset is never answered; a bad checksum is counted. */
	iwn_net_input(&net, f, tcp_frame(f, IWN_TCP_RST, 5000, 0, 80, 0), 0);
	ck_assert_int_eq(cap.n, 2);
	uint32_t n = tcp_frame(f, IWN_TCP_SYN, 1, 0, 80, 0);
	f[34 + 4] ^= 1;
	iwn_net_input(&net, f, n, 0);
	ck_assert_int_eq(cap.n, 2);
	ck_assert_uint_eq(net.stats.tcp_bad_csum, 1);
	ck_assert_uint_eq(net.stats.tcp_resets_sent, 2);
	/* A listener answers a SYN with a SYN-ACK instead. */
	ck_assert_int_eq(iwn_net_listen(&net, 80, 1), 0);
	ck_assert_int_eq(iwn_net_listen(&net, 80, 1), -EADDRINUSE);
	iwn_net_input(&net, f, tcp_frame(f, IWN_TCP_SYN, 1000, 0, 80, 0), 0);
	ck_assert_int_eq(cap.n, 3);
	ck_assert_int_eq(iwn_tcp_parse(cap.f[2] + 34, cap.len[2] - 34, OUR_IP, PEER_IP, &h), 0);
	ck_assert_uint_eq(h.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(h.ack, 1001);
	ck_assert(h.opt.has_mss && h.opt.mss == 1460);
	ck_assert(!h.opt.has_ws); /* the SYN did not offer it */
	ck_assert_uint_eq(iwn_net_conn_count(&net), 1);
	ck_assert_ptr_null(iwn_net_accept(&net, 80)); /* not established yet */
	/* Backlog 1: a second SYN from another port gets a cookie SYN-ACK
	 * and leaves no state. */
	uint8_t seg[20];
	struct iwn_tcp_hdr s2 = {.sport = 40001, .dport = 80, .seq = 9, .flags = IWN_TCP_SYN, .win = 100};
	iwn_tcp_build(seg, &s2);
	iwn_tcp_set_csum(seg, 20, PEER_IP, OUR_IP);
	iwn_net_input(&net, f, ip_frame(f, IWN_IPPROTO_TCP, seg, 20), 0);
	ck_assert_int_eq(cap.n, 4);
	struct iwn_tcp_hdr ck;
	ck_assert_int_eq(iwn_tcp_parse(cap.f[3] + 34, cap.len[3] - 34, OUR_IP, PEER_IP, &ck), 0);
	ck_assert_uint_eq(ck.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(ck.ack, 10);
	ck_assert_uint_eq(net.stats.tcp_cookies_sent, 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 1);
	/* The handshake completes with the ACK. */
	iwn_net_input(&net, f, tcp_frame(f, IWN_TCP_ACK, 1001, h.seq + 1, 80, 0), 10);
	/* Accept queue full (1 established, not accepted): a SYN is dropped. */
	s2.sport = 40002;
	iwn_tcp_build(seg, &s2);
	iwn_tcp_set_csum(seg, 20, PEER_IP, OUR_IP);
	int before = cap.n;
	iwn_net_input(&net, f, ip_frame(f, IWN_IPPROTO_TCP, seg, 20), 10);
	ck_assert_int_eq(cap.n, before);
	ck_assert_uint_eq(net.stats.tcp_syn_dropped, 1);
	struct iwn_tcp_conn *c = iwn_net_accept(&net, 80);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->state, IWN_TCP_ESTABLISHED);
	ck_assert_uint_eq(c->snd_wnd, 1000);
	ck_assert_uint_eq(c->eff_mss, 536); /* no MSS option: RFC 9293 default */
	iwn_net_release(&net, c, 20); /* aborts: RST */
	ck_assert_int_eq(iwn_tcp_parse(cap.f[cap.n - 1] + 34, cap.len[cap.n - 1] - 34, OUR_IP, PEER_IP, &h), 0);
	ck_assert(h.flags & IWN_TCP_RST);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 0);
	iwn_net_fini(&net);
}
END_TEST

/* Regressions from fuzz_net_hostile. Port 0 names no connection: a segment from or to it is dropped, not
 * answered with a reset (which would carry port 0 on the wire). */
START_TEST(test_port_zero_dropped)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[128];
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	cap.n = 0;
	struct iwn_tcp_hdr h = {.sport = 0, .dport = 80, .seq = 5, .flags = IWN_TCP_SYN, .win = 100};
	iwn_net_input(&net, f, tcp_frame_hdr(f, &h, 0), 0);
	h.sport = 1234;
	h.dport = 0;
	iwn_net_input(&net, f, tcp_frame_hdr(f, &h, 0), 0);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_uint_eq(net.stats.tcp_bad, 2);
	ck_assert_uint_eq(net.stats.tcp_resets_sent, 0);
	/* Any other closed port still gets its reset. */
	h.dport = 80;
	iwn_net_input(&net, f, tcp_frame_hdr(f, &h, 0), 0);
	ck_assert_int_eq(cap.n, 1);
	iwn_net_fini(&net);
}
END_TEST

/* Found by scapy-attacks (land): a SYN from our own address and port to
 * a listener is dropped, not answered (the SYN-ACK would need ARP for
 * our own address) and makes no connection. */
START_TEST(test_land_dropped)
{
	struct iwn_net net;
	host(&net);
	ck_assert_int_eq(iwn_net_listen(&net, PORT, 4), 0);
	uint8_t f[128];
	struct iwn_tcp_hdr h = {.sport = PORT, .dport = PORT, .seq = 5, .flags = IWN_TCP_SYN, .win = 100};
	uint8_t seg[IWN_TCP_MAX_HLEN];
	size_t hl = iwn_tcp_build(seg, &h);
	iwn_tcp_set_csum(seg, hl, OUR_IP, OUR_IP);
	iwn_eth_build(f, our_mac, peer_mac, IWN_ETHERTYPE_IPV4);
	iwn_ip4_build(f + 14, OUR_IP, OUR_IP, IWN_IPPROTO_TCP, 7, 64, (uint16_t)hl);
	memcpy(f + 34, seg, hl);
	iwn_net_input(&net, f, 34 + (uint32_t)hl, 0);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_uint_eq(net.stats.ip_src_ours, 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 0);
	iwn_net_fini(&net);
}
END_TEST

/* Found by scapy-attacks (flag combinations): a segment with neither SYN
 * nor ACK (no flags, a bare FIN) to a listening port is dropped (RFC
 * 9293 sec. 3.10.7.2), not reset; a closed port still resets it. */
START_TEST(test_listener_drops_no_syn_no_ack)
{
	struct iwn_net net;
	host(&net);
	ck_assert_int_eq(iwn_net_listen(&net, PORT, 4), 0);
	uint8_t f[128];
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	cap.n = 0;
	struct iwn_tcp_hdr h = {.sport = 1234, .dport = PORT, .seq = 5, .flags = 0, .win = 100};
	iwn_net_input(&net, f, tcp_frame_hdr(f, &h, 10), 0);
	h.flags = IWN_TCP_FIN;
	iwn_net_input(&net, f, tcp_frame_hdr(f, &h, 0), 0);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 0);
	h.dport = PORT + 1;
	iwn_net_input(&net, f, tcp_frame_hdr(f, &h, 0), 0);
	ck_assert_int_eq(cap.n, 1);
	iwn_net_fini(&net);
}
END_TEST

/* An abort while out-of-order data waits: the RST|ACK carries no SACK
 * blocks (nor timestamps). */
START_TEST(test_rst_without_sack)
{
	struct iwn_net net;
	host(&net);
	uint32_t nxt;
	struct iwn_tcp_conn *c = handshake(&net, &nxt);
	uint8_t f[1600];
	struct iwn_tcp_hdr d = {.sport = PEER_PORT, .dport = PORT, .seq = nxt + 100, .ack = c->snd_nxt,
				.flags = IWN_TCP_ACK, .win = 65535};
	iwn_net_input(&net, f, tcp_frame_hdr(f, &d, 50), 20);
	struct iwn_tcp_hdr h;
	last_seg(&h);
	ck_assert_uint_eq(h.opt.n_sack, 1); /* the duplicate ACK reports it */
	iwn_net_release(&net, c, 30);
	last_seg(&h);
	ck_assert_uint_eq(h.flags, IWN_TCP_RST | IWN_TCP_ACK);
	ck_assert_uint_eq(h.opt.n_sack, 0);
	ck_assert_uint_eq(h.hlen, 20);
	iwn_net_fini(&net);
}
END_TEST

/* ARP from a zero or group sender hardware address: nothing learned or
 * refreshed, no reply sent to it. */
START_TEST(test_arp_bad_sender_mac)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[60];
	static const uint8_t zero[6];
	static const uint8_t group[6] = {0x01, 0x00, 0x5e, 0, 0, 1};
	iwn_net_input(&net, f, arp_frame_from(f, IWN_ARP_REQUEST, iwn_eth_broadcast, zero, PEER_IP, OUR_IP), 0);
	iwn_net_input(&net, f, arp_frame_from(f, IWN_ARP_REQUEST, iwn_eth_broadcast, group, PEER_IP, OUR_IP), 0);
	iwn_net_input(&net, f,
		      arp_frame_from(f, IWN_ARP_REQUEST, iwn_eth_broadcast, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_ptr_null(iwn_arp_lookup(&net.arp, PEER_IP, 0));
	ck_assert_uint_eq(net.stats.rx_bad, 3);
	/* A learned entry is not overwritten by one either. */
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	ck_assert_int_eq(cap.n, 1);
	iwn_net_input(&net, f, arp_frame_from(f, IWN_ARP_REPLY, our_mac, zero, PEER_IP, OUR_IP), 1);
	ck_assert_mem_eq(iwn_arp_lookup(&net.arp, PEER_IP, 1), peer_mac, 6);
	iwn_net_fini(&net);
}
END_TEST

/* Application calls pass their time to the host: a segment sent by
 * iwn_tcp_send long after the last frame or timer finds the ARP entry
 * expired and queues a request with that time, not the old one. */
START_TEST(test_app_call_time_reaches_arp)
{
	struct iwn_net net;
	host(&net);
	uint32_t nxt;
	struct iwn_tcp_conn *c = handshake(&net, &nxt);
	uint64_t later = 10 + net.cfg.arp_reachable_us + 5000000; /* the entry has expired */
	cap.n = 0;
	ck_assert_int_eq(iwn_tcp_send(c, "hello", 5, later), 5);
	ck_assert_int_eq(cap.n, 1); /* an ARP request, the segment waits */
	ck_assert_uint_eq(cap.f[0][12], 0x08);
	ck_assert_uint_eq(cap.f[0][13], 0x06);
	ck_assert_uint_eq(iwn_arp_next_deadline(&net.arp), later + net.cfg.arp_retry_us);
	iwn_net_fini(&net);
}
END_TEST

/* The per-frame loops stop at the highest slot in use (socks_hi): a
 * connection in a high slot after the lower ones were freed is still
 * found by input, timers and batched output, and a freed slot is reused. */
START_TEST(test_table_high_slot)
{
	struct iwn_net net;
	struct iwn_net_cfg cfg;
	iwn_net_cfg_default(&cfg);
	memcpy(cfg.mac, our_mac, 6);
	cfg.ip = OUR_IP;
	cfg.tx = cap_tx;
	cfg.max_conns = 8;
	ck_assert_int_eq(iwn_net_init(&net, &cfg), 0);
	memset(&cap, 0, sizeof(cap));
	uint8_t f[1600];
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	int err;
	struct iwn_tcp_conn *c[3];
	for (int i = 0; i < 3; i++) {
		c[i] = iwn_net_connect(&net, PEER_IP, PEER_PORT, (uint16_t)(1001 + i), 0, &err);
		ck_assert_ptr_nonnull(c[i]);
	}
	ck_assert_uint_eq(net.socks_hi, 3);
	iwn_net_release(&net, c[0], 0);
	iwn_net_release(&net, c[1], 0);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 1);
	ck_assert_uint_eq(net.socks_hi, 3); /* c[2] is still in slot 2 */
	/* Timers: c[2]'s SYN is resent at its deadline. */
	uint64_t dl = iwn_tcp_next_deadline(c[2]);
	ck_assert_uint_ne(dl, UINT64_MAX);
	ck_assert_uint_le(iwn_net_next_deadline(&net), dl);
	cap.n = 0;
	iwn_net_timers(&net, dl);
	ck_assert_int_ge(cap.n, 1);
	struct iwn_tcp_hdr h;
	last_seg(&h);
	ck_assert_uint_eq(h.flags, IWN_TCP_SYN);
	ck_assert_uint_eq(h.sport, 1003);
	/* Input: the SYN-ACK reaches it. */
	struct iwn_tcp_hdr sa = {.sport = PEER_PORT, .dport = 1003, .seq = 5000, .ack = h.seq + 1,
				 .flags = IWN_TCP_SYN | IWN_TCP_ACK, .win = 65535};
	iwn_net_input(&net, f, tcp_frame_hdr(f, &sa, 0), dl);
	ck_assert_int_eq(c[2]->state, IWN_TCP_ESTABLISHED);
	/* Batched output: data marked for later leaves in output_pending. */
	cap.n = 0;
	ck_assert_int_eq(iwn_tcp_send(c[2], "hello", 5, dl), 5);
	iwn_net_output_pending(&net, dl);
	ck_assert_int_ge(cap.n, 1);
	last_seg(&h);
	ck_assert_uint_eq(h.sport, 1003);
	/* A new connection takes the lowest free slot; freeing the top one
	 * lowers the mark to it. */
	struct iwn_tcp_conn *d = iwn_net_connect(&net, PEER_IP, PEER_PORT, 1004, dl, &err);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(net.socks_hi, 3);
	iwn_net_release(&net, c[2], dl);
	ck_assert_uint_eq(net.socks_hi, 1);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 1);
	iwn_net_release(&net, d, dl);
	ck_assert_uint_eq(net.socks_hi, 0);
	ck_assert_uint_eq(iwn_net_conn_count(&net), 0);
	iwn_net_fini(&net);
}
END_TEST

static void sink_tx(void *arg, const uint8_t *frame, uint32_t len)
{
	(void)frame;
	*(uint64_t *)arg += len;
}

/* Random frames: valid Ethernet and IPv4 around random TCP/ICMP/ARP
 * bodies, checksums mostly right so the parsers and the state machine
 * see them. Must not crash (ASan build), and the table stays bounded. */
START_TEST(test_random_frames)
{
	struct iwn_net net;
	struct iwn_net_cfg cfg;
	iwn_net_cfg_default(&cfg);
	memcpy(cfg.mac, our_mac, 6);
	cfg.ip = OUR_IP;
	cfg.max_conns = 8;
	uint64_t out_bytes = 0;
	cfg.tx = sink_tx;
	cfg.tx_arg = &out_bytes;
	ck_assert_int_eq(iwn_net_init(&net, &cfg), 0);
	ck_assert_int_eq(iwn_net_listen(&net, 80, 4), 0);
	uint64_t st = iwt_seed();
	uint8_t f[1600];
	uint64_t now = 0;
	for (int i = 0; i < 30000; i++) {
		now += iwt_rand_range(&st, 0, 50000);
		uint32_t body = (uint32_t)iwt_rand_range(&st, 0, 120);
		uint8_t b[128];
		iwt_fill_random(&st, b, body);
		uint32_t kind = (uint32_t)(iwt_rand(&st) % 4), n;
		if (kind == 0) {
			n = arp_frame(f, (uint16_t)iwt_rand_range(&st, 1, 2), iwn_eth_broadcast,
				      PEER_IP + (uint32_t)(iwt_rand(&st) % 3), OUR_IP - 1 + (uint32_t)(iwt_rand(&st) % 3));
		} else if (kind == 1 && body >= 20) {
			/* A TCP header to port 80 with random everything else. */
			b[0] = 0x9c;
			b[1] = (uint8_t)(iwt_rand(&st) % 4);
			b[2] = 0;
			b[3] = 80;
			if (iwt_rand(&st) % 2)
				b[12] = (uint8_t)((5 + iwt_rand(&st) % ((body - 20) / 4 + 1)) << 4);
			if (iwt_rand(&st) % 3 == 0)
				b[13] = IWN_TCP_SYN;
			iwn_tcp_set_csum(b, body, PEER_IP, OUR_IP);
			n = ip_frame(f, IWN_IPPROTO_TCP, b, body);
		} else if (kind == 2) {
			if (body >= 4) {
				b[0] = IWN_ICMP_ECHO_REQUEST;
				b[1] = 0;
				b[2] = b[3] = 0;
				uint16_t c = iwn_cksum_fold(iwn_cksum_add(0, b, body));
				b[2] = (uint8_t)(c >> 8);
				b[3] = (uint8_t)c;
			}
			n = ip_frame(f, IWN_IPPROTO_ICMP, b, body);
		} else {
			n = ip_frame(f, (uint8_t)iwt_rand(&st), b, body);
			/* Now and then a broken IPv4 header (checksum fixed). */
			f[14 + iwt_rand(&st) % 20] ^= (uint8_t)iwt_rand(&st);
			f[24] = f[25] = 0;
			uint16_t c = iwn_cksum_fold(iwn_cksum_add(0, f + 14, 20));
			f[24] = (uint8_t)(c >> 8);
			f[25] = (uint8_t)c;
		}
		/* Sometimes truncated. */
		if (iwt_rand(&st) % 8 == 0)
			n = (uint32_t)iwt_rand_range(&st, 0, n);
		iwn_net_input(&net, f, n, now);
		if (iwn_net_next_deadline(&net) <= now)
			iwn_net_timers(&net, now);
		struct iwn_tcp_conn *c = iwn_net_accept(&net, 80);
		if (c && iwt_rand(&st) % 2)
			iwn_net_release(&net, c, now);
		ck_assert_uint_le(iwn_net_conn_count(&net), 8);
	}
	ck_assert_uint_gt(out_bytes, 0);
	iwn_net_fini(&net);
}
END_TEST

/* Port 0 listeners (rdma_cm's, libfabric's): a free port of the dynamic
 * range each time, never one in use, and a SYN to it is answered. */
START_TEST(test_listen_ephemeral)
{
	struct iwn_net net;
	host(&net);
	uint16_t p1 = 0, p2 = 0;
	ck_assert_int_eq(iwn_net_listen_ephemeral(&net, 4, &p1), 0);
	ck_assert_int_eq(iwn_net_listen_ephemeral(&net, 4, &p2), 0);
	ck_assert_uint_ge(p1, 49152);
	ck_assert_uint_ge(p2, 49152);
	ck_assert_uint_ne(p1, p2);
	ck_assert_int_eq(iwn_net_listen(&net, p1, 1), -EADDRINUSE);
	ck_assert_int_eq(iwn_net_listen_ephemeral(&net, 0, &p1), -EINVAL);
	uint8_t f[128];
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	cap.n = 0;
	iwn_net_input(&net, f, tcp_frame(f, IWN_TCP_SYN, 1000, 0, p2, 0), 0);
	ck_assert_int_eq(cap.n, 1);
	struct iwn_tcp_hdr h;
	ck_assert_int_eq(iwn_tcp_parse(cap.f[0] + 34, cap.len[0] - 34, OUR_IP, PEER_IP, &h), 0);
	ck_assert_uint_eq(h.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	ck_assert_uint_eq(h.sport, p2);
	/* A connect's own port is never a listener's. */
	iwn_net_unlisten(&net, p1, 0);
	int err;
	struct iwn_tcp_conn *c = iwn_net_connect(&net, PEER_IP, 80, 0, 0, &err);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_ne(c->lport, p2);
	iwn_net_fini(&net);
}
END_TEST

static Suite *host_suite(void)
{
	Suite *s = suite_create("net_host");
	TCase *t = tcase_create("host");
	tcase_add_test(t, test_arp_reply);
	tcase_add_test(t, test_icmp_echo_with_arp);
	tcase_add_test(t, test_arp_gives_up);
	tcase_add_test(t, test_ip_drops);
	tcase_add_test(t, test_tcp_resets);
	tcase_add_test(t, test_random_frames);
	tcase_add_test(t, test_port_zero_dropped);
	tcase_add_test(t, test_land_dropped);
	tcase_add_test(t, test_listener_drops_no_syn_no_ack);
	tcase_add_test(t, test_rst_without_sack);
	tcase_add_test(t, test_arp_bad_sender_mac);
	tcase_add_test(t, test_app_call_time_reaches_arp);
	tcase_add_test(t, test_listen_ephemeral);
	tcase_add_test(t, test_table_high_slot);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(host_suite());
}
