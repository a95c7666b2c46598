/* Regressions from fuzz_net_hostile: one host facing frames built by
 * hand, each test the smallest form of a finding. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "iwt_check.h"
#include "net/ipv4.h"
#include "net/net.h"
#include "net/tcp_seg.h"

#define OUR_IP 0x0a000001u
#define PEER_IP 0x0a000002u
#define PORT 4791
#define PEER_PORT 40000
static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

static struct {
	uint8_t f[16][1600];
	uint32_t len[16];
	int n;
} cap;

static void cap_tx(void *arg, const uint8_t *frame, uint32_t len)
{
	(void)arg;
	ck_assert_int_lt(cap.n, 16);
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

static uint32_t arp_frame(uint8_t *f, uint16_t oper, const uint8_t *sha, uint32_t spa, uint32_t tpa)
{
	memset(f, 0, 60);
	iwn_eth_build(f, iwn_eth_broadcast, sha, IWN_ETHERTYPE_ARP);
	struct iwn_arp_pkt a = {.oper = oper, .spa = spa, .tpa = tpa};
	memcpy(a.sha, sha, 6);
	iwn_arp_build(f + 14, &a);
	return 60;
}

/* A TCP segment from the peer in a frame. */
static uint32_t tcp_frame(uint8_t *f, const struct iwn_tcp_hdr *h, uint32_t plen)
{
	uint8_t *seg = f + 34;
	size_t hl = iwn_tcp_build(seg, h);
	memset(seg + hl, 'x', plen);
	iwn_tcp_set_csum(seg, hl + plen, PEER_IP, OUR_IP);
	iwn_eth_build(f, our_mac, peer_mac, IWN_ETHERTYPE_IPV4);
	iwn_ip4_build(f + 14, PEER_IP, OUR_IP, IWN_IPPROTO_TCP, 1, 64, (uint16_t)(hl + plen));
	return (uint32_t)(34 + hl + plen);
}

static void last_seg(struct iwn_tcp_hdr *h)
{
	ck_assert_int_gt(cap.n, 0);
	const uint8_t *f = cap.f[cap.n - 1];
	ck_assert_uint_eq(f[12], 0x08);
	ck_assert_uint_eq(f[13], 0x00);
	ck_assert_int_eq(iwn_tcp_parse(f + 34, cap.len[cap.n - 1] - 34, OUR_IP, PEER_IP, h), 0);
}

/* The peer (known by ARP) opens a connection with SACK to a listener;
 * returns it accepted, *peer_nxt its next sequence number. */
static struct iwn_tcp_conn *handshake(struct iwn_net *net, uint32_t *peer_nxt)
{
	uint8_t f[1600];
	iwn_net_input(net, f, arp_frame(f, IWN_ARP_REQUEST, peer_mac, PEER_IP, OUR_IP), 0);
	ck_assert_int_eq(iwn_net_listen(net, PORT, 4), 0);
	struct iwn_tcp_hdr s = {.sport = PEER_PORT, .dport = PORT, .seq = 1000, .flags = IWN_TCP_SYN, .win = 65535};
	s.opt.has_mss = true;
	s.opt.mss = 1460;
	s.opt.sack_ok = true;
	iwn_net_input(net, f, tcp_frame(f, &s, 0), 0);
	struct iwn_tcp_hdr sa;
	last_seg(&sa);
	ck_assert_uint_eq(sa.flags, IWN_TCP_SYN | IWN_TCP_ACK);
	struct iwn_tcp_hdr a = {.sport = PEER_PORT, .dport = PORT, .seq = 1001, .ack = sa.seq + 1,
				.flags = IWN_TCP_ACK, .win = 65535};
	iwn_net_input(net, f, tcp_frame(f, &a, 0), 10);
	struct iwn_tcp_conn *c = iwn_net_accept(net, PORT);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->sack_on);
	*peer_nxt = 1001;
	return c;
}

/* Port 0 names no connection: a segment from or to it is dropped, not
 * answered with a reset (which would carry port 0 on the wire). */
START_TEST(test_port_zero_dropped)
{
	struct iwn_net net;
	host(&net);
	uint8_t f[128];
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, peer_mac, PEER_IP, OUR_IP), 0);
	cap.n = 0;
	struct iwn_tcp_hdr h = {.sport = 0, .dport = 80, .seq = 5, .flags = IWN_TCP_SYN, .win = 100};
	iwn_net_input(&net, f, tcp_frame(f, &h, 0), 0);
	h.sport = 1234;
	h.dport = 0;
	iwn_net_input(&net, f, tcp_frame(f, &h, 0), 0);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_uint_eq(net.stats.tcp_bad, 2);
	ck_assert_uint_eq(net.stats.tcp_resets_sent, 0);
	/* Any other closed port still gets its reset. */
	h.dport = 80;
	iwn_net_input(&net, f, tcp_frame(f, &h, 0), 0);
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
	iwn_net_input(&net, f, tcp_frame(f, &d, 50), 20);
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
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, zero, PEER_IP, OUR_IP), 0);
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, group, PEER_IP, OUR_IP), 0);
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, iwn_eth_broadcast, PEER_IP, OUR_IP), 0);
	ck_assert_int_eq(cap.n, 0);
	ck_assert_ptr_null(iwn_arp_lookup(&net.arp, PEER_IP, 0));
	ck_assert_uint_eq(net.stats.rx_bad, 3);
	/* A learned entry is not overwritten by one either. */
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REQUEST, peer_mac, PEER_IP, OUR_IP), 0);
	ck_assert_int_eq(cap.n, 1);
	iwn_net_input(&net, f, arp_frame(f, IWN_ARP_REPLY, zero, PEER_IP, OUR_IP), 1);
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

int main(void)
{
	Suite *s = suite_create("net_hostile");
	TCase *t = tcase_create("regressions");
	tcase_add_test(t, test_port_zero_dropped);
	tcase_add_test(t, test_rst_without_sack);
	tcase_add_test(t, test_arp_bad_sender_mac);
	tcase_add_test(t, test_app_call_time_reaches_arp);
	suite_add_tcase(s, t);
	return iwt_run_suite(s);
}
