/* Test-only LD_PRELOAD shim for interop_abi: before a TCP connect() to
 * the port IWARP_TEST_WAIT_LISTEN_PORT, wait until a server listens
 * behind QEMU's hostfwd. perftest -R connects twice to one port (the
 * parameter exchange, then the test connection) and its client makes the
 * second connect as soon as the exchange is done; the server in the slow
 * guest may not listen again yet, and perftest's own retry then reuses
 * the rdma_cm ids it has just destroyed (rdma_resolve_addr on freed
 * memory, a crash). The unmodified client cannot be paused from outside,
 * so the wait happens here, in the test, not in libiwarp.
 *
 * QEMU accepts every hostfwd connection at once and closes it when the
 * guest refuses: a probe that stays open PROBE_MS is taken as a listener.
 * siw ignores a connection closed before its MPA Request. Every wait is
 * logged on stderr; after WAIT_MAX_MS the connect goes ahead anyway. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROBE_MS 400
#define PAUSE_MS 100
#define WAIT_MAX_MS 20000

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* 1: something accepted and kept the probe open; 0: refused or closed. */
static int probe(connect_fn real, const struct sockaddr *sa, socklen_t len)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int up = 0;

	if (s < 0)
		return 1; /* cannot probe: do not hold the program up */
	if (real(s, sa, len) == 0) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		up = poll(&p, 1, PROBE_MS) == 0;
	}
	close(s);
	return up;
}

static void wait_listen(connect_fn real, const struct sockaddr *sa, socklen_t len, int port)
{
	int refused = 0;

	for (long waited = 0; waited < WAIT_MAX_MS; waited += PROBE_MS + PAUSE_MS) {
		if (probe(real, sa, len)) {
			if (refused)
				fprintf(stderr, "wait_listen_shim: port %d listens after %d refused probe(s)\n", port,
					refused);
			return;
		}
		refused++;
		pause_ms(PAUSE_MS);
	}
	fprintf(stderr, "wait_listen_shim: nothing listens on port %d after %d probes; connecting anyway\n", port,
		refused);
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	static connect_fn real;
	const char *want = getenv("IWARP_TEST_WAIT_LISTEN_PORT");
	int type = 0;
	socklen_t tl = sizeof(type);

	if (!real)
		real = (connect_fn)dlsym(RTLD_NEXT, "connect");
	if (want && sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in) &&
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM) {
		int port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
		if (port == atoi(want))
			wait_listen(real, sa, len, port);
	}
	return real(fd, sa, len);
}
