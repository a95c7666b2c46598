/* stack/transport/raw/pktio.c on a veth pair (run-in-netns sets it up): the raw side
 * talks to the namespace's kernel with hand-built ARP and ICMP frames, in
 * both receive-ring modes; the BPF filter admits only our address; no
 * CAP_NET_RAW gives -EPERM with an explanation. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iwt_check.h"
#include "stack/transport/raw/pktio.h"

#define OUR_IP 0x0a4d0001u   /* 10.77.0.1, nobody's on this host */
#define PEER_IP 0x0a4d0002u  /* 10.77.0.2, the kernel on pk1 */
#define OTHER_IP 0x0a4d0003u /* 10.77.0.3, neighbour entry -> pk0, not ours */
#define ICMP_ID 0x4957

static uint8_t peer_mac[6];

static const char *ifname(void)
{
	const char *s = getenv("IWT_PK_IF");
	return s ? s : "pk0";
}

static void load_peer_mac(void)
{
	const char *s = getenv("IWT_PK_PEER_MAC");
	unsigned m[6];
	ck_assert_msg(s && sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6,
		      "run me through tests/pktio/run-in-netns");
	for (int i = 0; i < 6; i++)
		peer_mac[i] = (uint8_t)m[i];
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint16_t inet_sum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += get16(p + i);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static size_t eth_hdr(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
	return 14;
}

/* An echo request with plen payload bytes. */
static size_t build_echo_len(uint8_t *f, const uint8_t *our_mac, uint16_t seq, uint16_t plen)
{
	size_t o = eth_hdr(f, peer_mac, our_mac, 0x0800);
	uint8_t *ip = f + o, *icmp = ip + 20;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + 8 + plen));
	put16(ip + 4, seq);
	ip[8] = 64;
	ip[9] = 1;
	put32(ip + 12, OUR_IP);
	put32(ip + 16, PEER_IP);
	put16(ip + 10, inet_sum(ip, 20));
	memset(icmp, 0, 8);
	icmp[0] = 8;
	put16(icmp + 4, ICMP_ID);
	put16(icmp + 6, seq);
	for (int i = 0; i < plen; i++)
		icmp[8 + i] = (uint8_t)(seq + i);
	put16(icmp + 2, inet_sum(icmp, 8u + plen));
	return o + 20 + 8 + plen;
}

static size_t build_echo(uint8_t *f, const uint8_t *our_mac, uint16_t seq)
{
	return build_echo_len(f, our_mac, seq, 32);
}

static size_t build_arp_request(uint8_t *f, const uint8_t *our_mac)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	size_t o = eth_hdr(f, bcast, our_mac, 0x0806);
	uint8_t *a = f + o;
	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, 1);
	memcpy(a + 8, our_mac, 6);
	put32(a + 14, OUR_IP);
	memset(a + 18, 0, 6);
	put32(a + 24, PEER_IP);
	return o + 28;
}

struct seen {
	int echo_replies, arp_replies, udp_ours, udp_other, other;
	uint8_t seq_seen[256];
};

static void on_frame(void *arg, const uint8_t *f, uint32_t len)
{
	struct seen *s = arg;
	if (len < 14) {
		s->other++;
		return;
	}
	uint16_t type = get16(f + 12);
	if (type == 0x0806 && len >= 42 && get16(f + 20) == 2 && get32(f + 28) == PEER_IP) {
		s->arp_replies++;
		return;
	}
	if (type != 0x0800 || len < 34) {
		s->other++;
		return;
	}
	const uint8_t *ip = f + 14;
	uint32_t dst = get32(ip + 16);
	if (ip[9] == 1 && len >= 42 && ip[20] == 0 && get16(ip + 24) == ICMP_ID && dst == OUR_IP) {
		s->echo_replies++;
		s->seq_seen[get16(ip + 26) & 0xff]++;
	} else if (ip[9] == 17) {
		if (dst == OUR_IP)
			s->udp_ours++;
		else
			s->udp_other++;
	} else {
		s->other++;
	}
}

/* Receive until cond holds or ms pass. */
static void pump(struct iw_pktio *p, struct seen *s, int ms, int (*done)(const struct seen *))
{
	uint64_t end = now_ms() + (uint64_t)ms;
	while (now_ms() < end && !(done && done(s))) {
		struct pollfd pfd = { iw_pktio_fd(p), POLLIN, 0 };
		poll(&pfd, 1, 5);
		ck_assert_int_ge(iw_pktio_recv(p, 64, on_frame, s), 0);
	}
}

static int all_echoes(const struct seen *s)
{
	return s->echo_replies >= 100;
}

static struct iw_pktio *open_ring(enum iw_pktio_rx_ring ring, uint32_t ip)
{
	struct iw_pktio_cfg cfg = { .ifname = ifname(), .ipv4 = ip, .rx_ring = ring };
	struct iw_pktio *p = NULL;
	const char *why = NULL;
	int rc = iw_pktio_open(&cfg, &p, &why);
	ck_assert_msg(rc == 0, "open %s: %d (%s)", ifname(), rc, why ? why : "?");
	return p;
}

/* 100 echo requests queued, one flush, 100 replies, each once. */
static void echo_batch(enum iw_pktio_rx_ring ring)
{
	load_peer_mac();
	struct iw_pktio *p = open_ring(ring, OUR_IP);
	uint8_t mac[6], f[128];
	struct seen s = { 0 };
	iw_pktio_mac(p, mac);
	ck_assert_uint_ge(iw_pktio_mtu(p), 1280);
	for (uint16_t i = 0; i < 100; i++) {
		size_t n = build_echo(f, mac, i);
		ck_assert_int_eq(iw_pktio_send(p, f, (uint32_t)n), 0);
	}
	ck_assert_int_eq(iw_pktio_flush(p), 0);
	pump(p, &s, 3000, all_echoes);
	ck_assert_int_eq(s.echo_replies, 100);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(s.seq_seen[i], 1);
	struct iw_pktio_stats st;
	iw_pktio_get_stats(p, &st);
	ck_assert_uint_eq(st.tx_frames, 100);
	ck_assert_uint_eq(st.tx_flushes, 1);
	ck_assert_uint_ge(st.rx_frames, 100);
	ck_assert_uint_eq(st.rx_truncated, 0);
	iw_pktio_close(p);
}

START_TEST(echo_v2)
{
	echo_batch(IW_PKTIO_RX_V2);
}
END_TEST

START_TEST(echo_v3)
{
	echo_batch(IW_PKTIO_RX_V3);
}
END_TEST

static int jumbo_echoes(const struct seen *s)
{
	return s->echo_replies >= 20;
}

static void set_mtu(const char *dev, int mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
	ifr.ifr_mtu = mtu;
	ck_assert_msg(ioctl(fd, SIOCSIFMTU, &ifr) == 0, "MTU %d on %s: %s", mtu, dev, strerror(errno));
	close(fd);
}

/* Frames of a jumbo MTU arrive whole in both ring modes: the V2 ring had
 * fixed 2 KiB slots and truncated (dropped) every frame above an MTU of
 * about 1980, which stalled raw<->raw TCP at MTU 4000 and 9000 (issue 11). */
static void echo_jumbo(enum iw_pktio_rx_ring ring, int mtu)
{
	enum { N = 20 };
	load_peer_mac();
	set_mtu("pk1", mtu);
	set_mtu(ifname(), mtu);
	struct iw_pktio *p = open_ring(ring, OUR_IP);
	uint8_t mac[6];
	uint8_t *f = malloc(14 + (size_t)mtu);
	struct seen s = { 0 };
	ck_assert_ptr_nonnull(f);
	iw_pktio_mac(p, mac);
	ck_assert_uint_eq(iw_pktio_mtu(p), (unsigned)mtu);
	for (uint16_t i = 0; i < N; i++) {
		size_t n = build_echo_len(f, mac, i, (uint16_t)(mtu - 28));
		ck_assert_int_eq(iw_pktio_send(p, f, (uint32_t)n), 0);
	}
	ck_assert_int_eq(iw_pktio_flush(p), 0);
	pump(p, &s, 3000, jumbo_echoes);
	struct iw_pktio_stats st;
	iw_pktio_get_stats(p, &st);
	ck_assert_uint_eq(st.rx_truncated, 0);
	ck_assert_int_eq(s.echo_replies, N);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(s.seq_seen[i], 1);
	iw_pktio_close(p);
	free(f);
	set_mtu(ifname(), 1500);
	set_mtu("pk1", 1500);
}

START_TEST(jumbo_v2)
{
	echo_jumbo(IW_PKTIO_RX_V2, _i == 0 ? 4000 : 9000);
}
END_TEST

START_TEST(jumbo_v3)
{
	echo_jumbo(IW_PKTIO_RX_V3, _i == 0 ? 4000 : 9000);
}
END_TEST

static struct iw_pktio *open_cfg(struct iw_pktio_cfg *cfg)
{
	struct iw_pktio *p = NULL;
	const char *why = NULL;
	cfg->ifname = ifname();
	int rc = iw_pktio_open(cfg, &p, &why);
	ck_assert_msg(rc == 0, "open %s: %d (%s)", ifname(), rc, why ? why : "?");
	return p;
}

/* Frames built in the transmit ring's slots (iw_pktio_tx_slot), mixed
 * with copied ones, all arrive once; iw_pktio_rx_ready sees the replies
 * in ring memory before iw_pktio_recv takes them. */
START_TEST(tx_in_place_and_rx_ready)
{
	load_peer_mac();
	struct iw_pktio_cfg cfg = { .ipv4 = OUR_IP, .rx_ring = IW_PKTIO_RX_V2, .tx_frames = 128 };
	struct iw_pktio *p = open_cfg(&cfg);
	uint8_t mac[6], f[128];
	struct seen s = { 0 };
	iw_pktio_mac(p, mac);
	int in_place = 0;
	for (uint16_t i = 0; i < 100; i++) {
		uint32_t cap = 0;
		uint8_t *slot = i % 3 ? iw_pktio_tx_slot(p, &cap) : NULL;
		if (i % 3) {
			ck_assert_ptr_nonnull(slot);
			ck_assert_uint_ge(cap, sizeof(f));
			in_place++;
		}
		uint8_t *b = slot ? slot : f;
		size_t n = build_echo(b, mac, i);
		ck_assert_int_eq(iw_pktio_send(p, b, (uint32_t)n), 0);
	}
	ck_assert_int_eq(in_place, 66);
	ck_assert_int_eq(iw_pktio_flush(p), 0);
	uint64_t end = now_ms() + 3000;
	while (!iw_pktio_rx_ready(p) && now_ms() < end) {
		struct pollfd pfd = { iw_pktio_fd(p), POLLIN, 0 };
		poll(&pfd, 1, 5);
	}
	ck_assert(iw_pktio_rx_ready(p));
	pump(p, &s, 3000, all_echoes);
	ck_assert_int_eq(s.echo_replies, 100);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(s.seq_seen[i], 1);
	iw_pktio_close(p);
}
END_TEST

/* Offload (issue 13). A sender pktio on pk1 (offload on) sends a TCP
 * super-segment of 30000 payload bytes with gso_size 1448 and a partial
 * checksum; pk1 has TSO, so the veth passes it whole:
 *  - a receiver on pk0 with the offload gets it whole, flagged GSO and
 *    CSUM_OK (a local sender left the checksum to offload), bytes intact;
 *  - one without (2 KiB V2 slots) sees it truncated (the reason receive
 *    slots are 68 KiB with the offload);
 *  - a plain frame with a wrong TCP checksum (no offload flags) arrives
 *    without CSUM_OK: only a checksum the kernel verified, or one a local
 *    sender left partial, skips the software check. */
struct gso_seen {
	struct iw_pktio *p;
	uint32_t gso_len, flags, bad_bytes, plain_flags, plain;
	uint32_t want_len;
};

static void on_gso_frame(void *arg, const uint8_t *f, uint32_t len)
{
	struct gso_seen *g = arg;
	if (len < 14 + 20 + 20 || get16(f + 12) != 0x0800 || f[14 + 9] != 6)
		return;
	const uint8_t *t = f + 14 + 20;
	if (get16(t + 2) == 7001) {
		g->plain++;
		g->plain_flags = iw_pktio_rx_flags(g->p);
		return;
	}
	if (get16(t + 2) != 7000)
		return;
	g->gso_len = len;
	g->flags = iw_pktio_rx_flags(g->p);
	for (uint32_t i = 14 + 40; i < len; i++)
		if (f[i] != (uint8_t)(i * 7))
			g->bad_bytes++;
}

static size_t build_tcp(uint8_t *f, const uint8_t *dst_mac, const uint8_t *src_mac, uint16_t dport, uint32_t plen,
			bool partial)
{
	size_t o = eth_hdr(f, dst_mac, src_mac, 0x0800);
	uint8_t *ip = f + o, *t = ip + 20;
	memset(ip, 0, 40);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(40 + plen));
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, OTHER_IP + 5);
	put32(ip + 16, OUR_IP);
	put16(ip + 10, inet_sum(ip, 20));
	put16(t, 40000);
	put16(t + 2, dport);
	put32(t + 4, 1000);
	put32(t + 8, 1);
	t[12] = 5 << 4;
	t[13] = 0x18;
	put16(t + 14, 65535);
	for (uint32_t i = 0; i < plen; i++)
		t[20 + i] = (uint8_t)((o + 40 + i) * 7);
	/* Pseudo-header sum only (partial), or a deliberately wrong one. */
	uint32_t ps = get16(ip + 12) + get16(ip + 14) + get16(ip + 16) + get16(ip + 18) + 6 + 20 + plen;
	while (ps >> 16)
		ps = (ps & 0xffff) + (ps >> 16);
	put16(t + 16, partial ? (uint16_t)ps : 0x1234);
	return o + 40 + plen;
}

START_TEST(gso_rx_whole_and_csum_flags)
{
	load_peer_mac();
	struct iw_pktio_cfg rc = { .ipv4 = OUR_IP, .rx_ring = IW_PKTIO_RX_V2, .offload = true };
	struct iw_pktio *rx = open_cfg(&rc);
	ck_assert(iw_pktio_offload(rx));
	struct iw_pktio_cfg pc = { .ipv4 = OUR_IP, .rx_ring = IW_PKTIO_RX_V2 };
	struct iw_pktio *plain = open_cfg(&pc);
	ck_assert(!iw_pktio_offload(plain));
	struct iw_pktio_cfg sc = { .ifname = "pk1", .ipv4 = PEER_IP + 100, .rx_ring = IW_PKTIO_RX_V2, .offload = true };
	struct iw_pktio *tx = NULL;
	const char *why = NULL;
	ck_assert_int_eq(iw_pktio_open(&sc, &tx, &why), 0);
	uint8_t mac0[6], mac1[6];
	iw_pktio_mac(rx, mac0);
	iw_pktio_mac(tx, mac1);
	static uint8_t f[14 + 40 + 30000];
	size_t n = build_tcp(f, mac0, mac1, 7000, 30000, true);
	/* Not IPv4/TCP or no offload: refused. */
	ck_assert_int_eq(iw_pktio_send_tcp(plain, f, (uint32_t)n, 1448), -EINVAL);
	ck_assert_int_eq(iw_pktio_send_tcp(tx, f, 20, 1448), -EINVAL);
	ck_assert_int_eq(iw_pktio_send_tcp(tx, f, (uint32_t)n, 1448), 0);
	uint8_t g[128];
	size_t m = build_tcp(g, mac0, mac1, 7001, 40, false);
	ck_assert_int_eq(iw_pktio_send(tx, g, (uint32_t)m), 0);
	ck_assert_int_eq(iw_pktio_flush(tx), 0);
	struct gso_seen s = { .p = rx };
	struct gso_seen s2 = { .p = plain };
	uint64_t end = now_ms() + 3000;
	while ((s.gso_len == 0 || s.plain == 0) && now_ms() < end) {
		struct pollfd pfd = { iw_pktio_fd(rx), POLLIN, 0 };
		poll(&pfd, 1, 5);
		ck_assert_int_ge(iw_pktio_recv(rx, 64, on_gso_frame, &s), 0);
		ck_assert_int_ge(iw_pktio_recv(plain, 64, on_gso_frame, &s2), 0);
	}
	ck_assert_uint_eq(s.gso_len, n);
	ck_assert_uint_eq(s.bad_bytes, 0);
	ck_assert_uint_eq(s.flags & (IW_PKTIO_RX_GSO | IW_PKTIO_RX_CSUM_OK), IW_PKTIO_RX_GSO | IW_PKTIO_RX_CSUM_OK);
	ck_assert_uint_eq(s.plain, 1);
	ck_assert_uint_eq(s.plain_flags & IW_PKTIO_RX_CSUM_OK, 0);
	(void)iw_pktio_recv(plain, 64, on_gso_frame, &s2);
	struct iw_pktio_stats st;
	iw_pktio_get_stats(plain, &st);
	ck_assert_uint_eq(s2.gso_len, 0);
	ck_assert_uint_ge(st.rx_truncated, 1);
	iw_pktio_get_stats(rx, &st);
	ck_assert_uint_ge(st.rx_gso, 1);
	iw_pktio_get_stats(tx, &st);
	ck_assert_uint_eq(st.tx_gso, 1);
	iw_pktio_close(tx);
	iw_pktio_close(plain);
	iw_pktio_close(rx);
}
END_TEST

/* No slot when the ring is full (until the kernel sent the batch) or
 * while the reorder shim is on. */
START_TEST(tx_slot_none)
{
	load_peer_mac();
	struct iw_pktio_cfg cfg = { .ipv4 = OUR_IP, .rx_ring = IW_PKTIO_RX_V2, .tx_frames = 4 };
	struct iw_pktio *p = open_cfg(&cfg);
	uint8_t mac[6], f[128];
	iw_pktio_mac(p, mac);
	for (uint16_t i = 0; i < 4; i++) {
		size_t n = build_echo(f, mac, i);
		ck_assert_int_eq(iw_pktio_send(p, f, (uint32_t)n), 0);
	}
	ck_assert_ptr_null(iw_pktio_tx_slot(p, NULL));
	ck_assert_int_eq(iw_pktio_flush(p), 0);
	uint64_t end = now_ms() + 3000;
	while (!iw_pktio_tx_slot(p, NULL) && now_ms() < end)
		poll(NULL, 0, 1);
	ck_assert_ptr_nonnull(iw_pktio_tx_slot(p, NULL));
	iw_pktio_close(p);

	struct iw_pktio_cfg rc = { .ipv4 = OUR_IP, .rx_ring = IW_PKTIO_RX_V2, .reorder_ppm = 1000 };
	p = open_cfg(&rc);
	ck_assert_ptr_null(iw_pktio_tx_slot(p, NULL));
	iw_pktio_close(p);
}
END_TEST

static int got_arp(const struct seen *s)
{
	return s->arp_replies > 0;
}

START_TEST(arp_resolves_peer)
{
	load_peer_mac();
	struct iw_pktio *p = open_ring(IW_PKTIO_RX_V2, OUR_IP);
	uint8_t mac[6], f[64];
	struct seen s = { 0 };
	iw_pktio_mac(p, mac);
	size_t n = build_arp_request(f, mac);
	ck_assert_int_eq(iw_pktio_send(p, f, (uint32_t)n), 0);
	ck_assert_int_eq(iw_pktio_flush(p), 0);
	pump(p, &s, 3000, got_arp);
	ck_assert_int_eq(s.arp_replies, 1);
	iw_pktio_close(p);
}
END_TEST

/* The kernel sends UDP to our IP and to another IP that also maps to our
 * MAC: only ours passes the filter. */
START_TEST(filter_admits_only_our_ip)
{
	load_peer_mac();
	for (int ring = 0; ring < 2; ring++) {
		struct iw_pktio *p = open_ring((enum iw_pktio_rx_ring)ring, OUR_IP);
		struct seen s = { 0 };
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		ck_assert_int_ge(fd, 0);
		for (int i = 0; i < 5; i++) {
			struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
			a.sin_addr.s_addr = htonl(OTHER_IP);
			ck_assert_int_eq(sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)), 1);
			a.sin_addr.s_addr = htonl(OUR_IP);
			ck_assert_int_eq(sendto(fd, "y", 1, 0, (struct sockaddr *)&a, sizeof(a)), 1);
		}
		pump(p, &s, 500, NULL);
		ck_assert_int_eq(s.udp_ours, 5);
		ck_assert_int_eq(s.udp_other, 0);
		close(fd);
		iw_pktio_close(p);
	}
}
END_TEST

START_TEST(oversized_and_bad_args)
{
	load_peer_mac();
	struct iw_pktio *p = open_ring(IW_PKTIO_RX_V2, OUR_IP);
	static uint8_t big[20000];
	ck_assert_int_eq(iw_pktio_send(p, big, iw_pktio_mtu(p) + 15), -EMSGSIZE);
	ck_assert_int_eq(iw_pktio_send(p, big, 10), -EINVAL);
	ck_assert_int_eq(iw_pktio_recv(p, 0, on_frame, NULL), -EINVAL);
	ck_assert_int_eq(iw_pktio_flush(p), 0); /* nothing queued */
	iw_pktio_close(p);

	struct iw_pktio_cfg cfg = { .ifname = "iwnosuchif0" };
	const char *why = NULL;
	ck_assert_int_eq(iw_pktio_open(&cfg, &p, &why), -ENODEV);
	ck_assert_ptr_nonnull(why);
	cfg.ifname = NULL;
	ck_assert_int_eq(iw_pktio_open(&cfg, &p, &why), -EINVAL);
}
END_TEST

/* Without CAP_NET_RAW: -EPERM and a text that names the capability. */
START_TEST(no_cap_net_raw)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &h, d) != 0)
			_exit(10);
		d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
		if (syscall(SYS_capset, &h, d) != 0)
			_exit(11);
		struct iw_pktio_cfg cfg = { .ifname = ifname() };
		struct iw_pktio *p = NULL;
		const char *why = NULL;
		int rc = iw_pktio_open(&cfg, &p, &why);
		_exit(rc == -EPERM && why && strstr(why, "CAP_NET_RAW") ? 0 : 12);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pktio");
	TCase *tc = tcase_create("veth");
	tcase_add_test(tc, echo_v2);
	tcase_add_test(tc, echo_v3);
	tcase_add_loop_test(tc, jumbo_v2, 0, 2);
	tcase_add_loop_test(tc, jumbo_v3, 0, 2);
	tcase_add_test(tc, tx_in_place_and_rx_ready);
	tcase_add_test(tc, tx_slot_none);
	tcase_add_test(tc, gso_rx_whole_and_csum_flags);
	tcase_add_test(tc, arp_resolves_peer);
	tcase_add_test(tc, filter_admits_only_our_ip);
	tcase_add_test(tc, oversized_and_bad_args);
	tcase_add_test(tc, no_cap_net_raw);
	suite_add_tcase(s, tc);
	return iwt_run_suite(s);
}
