/* The kernel's side of the raw TCP tests: a full-duplex pattern peer on a
 * kernel TCP socket. It sends --bytes of pattern --tx-seed, half-closes,
 * and reads until EOF checking every byte against pattern --rx-seed.
 *   ktcp listen PORT [opts] | ktcp connect IP PORT [opts]
 *   ktcp offload-off IFACE   (tx checksum, TSO, GSO off: frames on the
 *                             wire as the peer will see them)
 * Exit 0 only when exactly --bytes arrived intact and all were sent. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pattern.h"

static int offload_off(const char *ifname)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return 1;
	const uint32_t cmds[] = { ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_STXCSUM };
	int bad = 0;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct ethtool_value ev = { .cmd = cmds[i], .data = 0 };
		struct ifreq ifr;
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		ifr.ifr_data = (char *)&ev;
		if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
			fprintf(stderr, "ktcp: ethtool cmd %u on %s: %s\n", cmds[i], ifname, strerror(errno));
			bad = 1;
		}
	}
	close(fd);
	return bad;
}

int main(int argc, char **argv)
{
	alarm(100); /* never outlive the test */
	if (argc >= 3 && strcmp(argv[1], "offload-off") == 0)
		return offload_off(argv[2]);
	if (argc < 3) {
		fprintf(stderr, "usage: ktcp listen PORT | connect IP PORT [--bytes N] [--tx-seed S] [--rx-seed S]\n");
		return 2;
	}
	bool listening = strcmp(argv[1], "listen") == 0;
	int ai = listening ? 3 : 4;
	if (!listening && argc < 4)
		return 2;
	uint64_t bytes = 1 << 20, txs = 1, rxs = 2;
	for (int i = ai; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--bytes"))
			bytes = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--tx-seed"))
			txs = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--rx-seed"))
			rxs = strtoull(argv[i + 1], NULL, 0);
		else {
			fprintf(stderr, "ktcp: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd;
	if (listening) {
		int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		sa.sin_port = htons((uint16_t)atoi(argv[2]));
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0) {
			perror("ktcp: listen");
			return 1;
		}
		printf("ktcp: listening\n");
		fflush(stdout);
		fd = accept(ls, NULL, NULL);
		close(ls);
	} else {
		sa.sin_port = htons((uint16_t)atoi(argv[3]));
		if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
			return 2;
		/* The raw peer may not listen yet: retry refusals for 10 s. */
		for (int tries = 0;; tries++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				break;
			if (fd < 0 || errno != ECONNREFUSED || tries == 100) {
				perror("ktcp: connect");
				return 1;
			}
			close(fd);
			usleep(100000);
		}
	}
	if (fd < 0) {
		perror("ktcp: accept");
		return 1;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	static uint8_t buf[65536];
	uint64_t sent = 0, got = 0;
	bool eof = false, shut = false;
	while (!eof || !shut) {
		struct pollfd p = { .fd = fd, .events = (short)(POLLIN | (shut ? 0 : POLLOUT)) };
		if (poll(&p, 1, 1000) < 0 && errno != EINTR) {
			perror("ktcp: poll");
			return 1;
		}
		if (!shut) {
			uint32_t n = bytes - sent > sizeof(buf) ? sizeof(buf) : (uint32_t)(bytes - sent);
			if (n) {
				iwt_pattern_fill(txs, sent, buf, n);
				ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
				if (w > 0)
					sent += (uint64_t)w;
				else if (w < 0 && errno != EAGAIN) {
					perror("ktcp: send");
					return 1;
				}
			}
			if (sent == bytes) {
				shutdown(fd, SHUT_WR);
				shut = true;
			}
		}
		for (;;) {
			ssize_t r = recv(fd, buf, sizeof(buf), 0);
			if (r == 0) {
				eof = true;
				break;
			}
			if (r < 0) {
				if (errno == EAGAIN)
					break;
				perror("ktcp: recv");
				return 1;
			}
			int64_t bad = iwt_pattern_check(rxs, got, buf, (uint32_t)r);
			if (bad >= 0 || got + (uint64_t)r > bytes) {
				fprintf(stderr, "ktcp: corrupt or extra byte at offset %lld (got %llu)\n",
					(long long)(bad >= 0 ? bad : (int64_t)bytes), (unsigned long long)got);
				return 1;
			}
			got += (uint64_t)r;
		}
	}
	close(fd);
	printf("ktcp: sent %llu received %llu intact\n", (unsigned long long)sent, (unsigned long long)got);
	return got == bytes ? 0 : 1;
}
