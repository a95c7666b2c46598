/* floodgen: the attacker of the flood suite (run-floods), run inside the
 * client's network namespace for a bounded time. Modes:
 *   syn IFACE DST_MAC DST_IP PORT onlink|offlink RATE SECONDS
 *       SYNs with spoofed sources (on-link: 10.77.0.100-249; off-link:
 *       198.18.0.0/15) sent as raw Ethernet frames on IFACE (AF_PACKET);
 *   idle|slow|short|rst SRC_IP DST_IP PORT N SECONDS
 *       N kernel TCP connections from SRC_IP kept open (refilled when the server
 *       drops one): idle sends nothing; slow sends an MPA Request one
 *       byte per 500 ms; short sends a Request announcing 512 bytes of
 *       private data and 16 of them; rst connects and at once resets
 *       (SO_LINGER 0), N at a time, in a loop. New connections are
 *       opened at up to REFILL_PER_S a second (a bounded flood: the
 *       suite measures the server's rules, not a CPU race on a 2-core
 *       test machine).
 * Prints what it did on stdout when the time is up or on SIGTERM. Exit 0,
 * or 2 on bad usage / setup. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/iw_bytes.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static uint16_t csum(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

static int syn_flood(char **av)
{
	const char *ifname = av[0];
	unsigned mac[6];
	if (sscanf(av[1], "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) != 6)
		return 2;
	struct in_addr dst;
	if (inet_pton(AF_INET, av[2], &dst) != 1)
		return 2;
	uint16_t port = (uint16_t)atoi(av[3]);
	int offlink = strcmp(av[4], "offlink") == 0;
	double rate = atof(av[5]), secs = atof(av[6]);
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (fd < 0) {
		perror("AF_PACKET");
		return 2;
	}
	struct sockaddr_ll sll;
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	sll.sll_halen = 6;
	for (int i = 0; i < 6; i++)
		sll.sll_addr[i] = (uint8_t)mac[i];
	if (!sll.sll_ifindex) {
		perror(ifname);
		return 2;
	}
	uint8_t f[14 + 20 + 40];
	memset(f, 0, sizeof(f));
	for (int i = 0; i < 6; i++)
		f[i] = (uint8_t)mac[i];
	f[12] = 0x08;
	uint64_t t0 = now_us(), end = t0 + (uint64_t)(secs * 1e6), sent = 0;
	while (!stop && now_us() < end) {
		uint64_t due = t0 + (uint64_t)((double)sent * 1e6 / rate);
		uint64_t t = now_us();
		if (t < due) {
			usleep((useconds_t)(due - t));
			continue;
		}
		uint32_t src = offlink ? 0xC6120000u | (rnd() & 0x1FFFF) : 0x0A4D0064u + rnd() % 150;
		uint8_t smac[6] = {0x02, 0xee, (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd()};
		memcpy(f + 6, smac, 6);
		uint8_t *ip = f + 14, *tcp = ip + 20;
		memset(ip, 0, 60);
		ip[0] = 0x45;
		iw_put_be16(ip + 2, 20 + 40);
		iw_put_be16(ip + 4, (uint16_t)rnd());
		ip[8] = 64;
		ip[9] = 6;
		iw_put_be32(ip + 12, src);
		memcpy(ip + 16, &dst, 4);
		iw_put_be16(ip + 10, csum(0, ip, 20));
		iw_put_be16(tcp, (uint16_t)(1024 + rnd() % 60000));
		iw_put_be16(tcp + 2, port);
		iw_put_be32(tcp + 4, rnd() << 16 ^ rnd());
		tcp[12] = 10 << 4; /* 40 bytes: MSS, SACK-permitted, timestamps, window scale */
		tcp[13] = 0x02;
		iw_put_be16(tcp + 14, 64240);
		const uint8_t opts[20] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
		memcpy(tcp + 20, opts, 20);
		uint32_t ps = (src >> 16) + (src & 0xFFFF) + ((uint32_t)ip[16] << 8 | ip[17]) +
			      ((uint32_t)ip[18] << 8 | ip[19]) + 6 + 40;
		iw_put_be16(tcp + 16, csum(ps, tcp, 40));
		if (sendto(fd, f, sizeof(f), 0, (struct sockaddr *)&sll, sizeof(sll)) < 0 && errno != ENOBUFS) {
			perror("sendto");
			return 2;
		}
		sent++;
	}
	printf("syn %s: %llu SYNs in %.1f s\n", offlink ? "offlink" : "onlink", (unsigned long long)sent,
	       (double)(now_us() - t0) / 1e6);
	close(fd);
	return 0;
}

enum mode { IDLE, SLOW, SHORT, RST };

#define REFILL_PER_S 2000

struct slot {
	int fd;
	int sent; /* slow: Request bytes sent */
	uint64_t next;
};

static uint8_t req[20 + 512];

static int open_conn(const struct sockaddr_in *src, const struct sockaddr_in *sa, enum mode m)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (const struct sockaddr *)src, sizeof(*src)) < 0) {
		close(fd);
		return -1;
	}
	if (m == RST) {
		struct linger l = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static int conn_flood(enum mode m, char **av)
{
	struct sockaddr_in src, sa;
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	if (inet_pton(AF_INET, av[0], &src.sin_addr) != 1)
		return 2;
	av++;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	if (inet_pton(AF_INET, av[0], &sa.sin_addr) != 1)
		return 2;
	sa.sin_port = htons((uint16_t)atoi(av[1]));
	int n = atoi(av[2]);
	double secs = atof(av[3]);
	if (n < 1 || n > 4096)
		return 2;
	memcpy(req, "MPA ID Req Frame", 16);
	req[16] = 0x40; /* CRC wanted */
	req[17] = 1;    /* revision 1 */
	iw_put_be16(req + 18, 512);
	memset(req + 20, 'p', 512);
	struct slot *s = calloc((size_t)n, sizeof(*s));
	struct pollfd *pf = calloc((size_t)n, sizeof(*pf));
	if (!s || !pf)
		return 2;
	for (int i = 0; i < n; i++)
		s[i].fd = -1;
	uint64_t t0 = now_us(), end = t0 + (uint64_t)(secs * 1e6), opened = 0, dropped = 0;
	while (!stop && now_us() < end) {
		uint64_t t = now_us();
		for (int i = 0; i < n; i++) {
			if (s[i].fd < 0) {
				if (opened >= (t - t0) * REFILL_PER_S / 1000000 + (uint64_t)n)
					continue;
				s[i].fd = open_conn(&src, &sa, m);
				s[i].sent = 0;
				s[i].next = t + (m == SLOW ? 500000 : 0);
				opened += s[i].fd >= 0;
				if (m == SHORT && s[i].fd >= 0)
					s[i].next = t + 1000; /* once connected */
				continue;
			}
			if (m == RST) {
				int err = 0;
				socklen_t l = sizeof(err);
				struct pollfd p = {s[i].fd, POLLOUT, 0};
				if (poll(&p, 1, 0) == 1 || t > s[i].next + 200000) {
					getsockopt(s[i].fd, SOL_SOCKET, SO_ERROR, &err, &l);
					close(s[i].fd); /* linger 0: RST */
					s[i].fd = -1;
				}
				continue;
			}
			if (s[i].next && t >= s[i].next) {
				if (m == SLOW && s[i].sent < 20) {
					if (send(s[i].fd, req + s[i].sent, 1, MSG_NOSIGNAL) == 1)
						s[i].sent++;
					s[i].next = t + 500000;
				} else if (m == SHORT && s[i].sent == 0) {
					if (send(s[i].fd, req, 20 + 16, MSG_NOSIGNAL) == 20 + 16)
						s[i].sent = 1;
					else
						s[i].next = t + 1000;
				}
			}
		}
		for (int i = 0; i < n; i++) {
			pf[i].fd = m == RST ? -1 : s[i].fd;
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		poll(pf, (nfds_t)n, m == RST ? 1 : 20);
		for (int i = 0; i < n; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			char b[256];
			ssize_t r = recv(s[i].fd, b, sizeof(b), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				close(s[i].fd); /* the server let it go: refill */
				s[i].fd = -1;
				dropped++;
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (s[i].fd >= 0)
			close(s[i].fd);
	printf("%s: %d at a time, %llu connections opened, %llu dropped by the server, %.1f s\n", av[-2], n,
	       (unsigned long long)opened, (unsigned long long)dropped, (double)(now_us() - t0) / 1e6);
	free(s);
	free(pf);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 9 && strcmp(argv[1], "syn") == 0)
		return syn_flood(argv + 2);
	static const char *const names[] = {"idle", "slow", "short", "rst"};
	for (int m = 0; m < 4; m++)
		if (argc == 7 && strcmp(argv[1], names[m]) == 0)
			return conn_flood((enum mode)m, argv + 2);
	fprintf(stderr, "usage: floodgen syn IFACE DST_MAC DST_IP PORT onlink|offlink RATE SECONDS\n"
			"       floodgen idle|slow|short|rst SRC_IP DST_IP PORT N SECONDS\n");
	return 2;
}
