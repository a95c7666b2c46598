/* Test tool: a TCP echo server on our TCP/IPv4 (net/) over a raw device,
 * for the hostile-frame suite (tests/raw/scapy-attacks): it serves any
 * number of clients, one after another or at once, and must stay up
 * whatever they send.
 *   rawecho --dev IF --ip A.B.C.D[/P] --listen PORT [--timeout SEC]
 * Echoes every byte back; closes after the client's FIN; frees closed
 * connections. Runs until SIGTERM/SIGINT or the timeout, then prints its
 * host counters and exits 0 (1 on an internal error). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/transport/raw/rawdev.h"

#define MAX_CLIENTS 32
#define BUF 65536

struct client {
	struct iwn_tcp_conn *c;
	uint8_t *pend; /* read but not yet taken by the send buffer */
	uint32_t npend;
	bool shut;
};

struct server {
	struct iw_rawdev_user u; /* first: the callback's pointer is the server */
	struct iw_rawdev *d;
	uint16_t port;
	struct client cl[MAX_CLIENTS];
	uint64_t served, echoed;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void serve(struct server *s, struct client *k, uint64_t now)
{
	struct iwn_tcp_conn *c = k->c;
	for (;;) {
		if (k->npend) {
			int r = iwn_tcp_send(c, k->pend, k->npend, now);
			if (r <= 0)
				break; /* full, or the connection is gone */
			memmove(k->pend, k->pend + r, k->npend - (uint32_t)r);
			k->npend -= (uint32_t)r;
			s->echoed += (uint64_t)r;
			continue;
		}
		uint32_t n = iwn_tcp_recv(c, k->pend, BUF, now);
		if (n == 0)
			break;
		k->npend = n;
	}
	if (!k->shut && k->npend == 0 && iwn_tcp_eof(c)) {
		iwn_tcp_close(c, now);
		k->shut = true;
	}
	if (c->state == IWN_TCP_CLOSED || c->state == IWN_TCP_TIME_WAIT) {
		iwn_net_release(&s->d->net, c, now);
		k->c = NULL;
		k->npend = 0;
		k->shut = false;
	}
}

static void step(struct server *s)
{
	uint64_t now = iw_rawdev_now_us();
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *k = &s->cl[i];
		if (!k->c) {
			k->c = iwn_net_accept(&s->d->net, s->port);
			if (k->c)
				s->served++;
		}
		if (k->c)
			serve(s, k, now);
	}
}

static void on_dev(struct iw_rawdev_user *u)
{
	step((struct server *)u);
}

static int usage(void)
{
	fprintf(stderr, "usage: rawecho --dev IF --ip A.B.C.D[/P] --listen PORT [--timeout SEC]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct server s;
	struct iw_rawdev_cfg cfg = {0};
	unsigned timeout_s = 120;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *o = argv[i], *v = argv[i + 1];
		if (!strcmp(o, "--dev")) {
			cfg.ifname = v;
		} else if (!strcmp(o, "--ip")) {
			char tmp[64];
			snprintf(tmp, sizeof(tmp), "%s", v);
			char *slash = strchr(tmp, '/');
			if (slash) {
				*slash = 0;
				cfg.prefix = (uint8_t)atoi(slash + 1);
			}
			struct in_addr in;
			if (inet_pton(AF_INET, tmp, &in) != 1)
				return usage();
			cfg.ip = ntohl(in.s_addr);
		} else if (!strcmp(o, "--listen")) {
			s.port = (uint16_t)atoi(v);
		} else if (!strcmp(o, "--timeout")) {
			timeout_s = (unsigned)strtoul(v, NULL, 0);
		} else {
			return usage();
		}
	}
	if (!cfg.ifname || !cfg.ip || !s.port || argc % 2 == 0)
		return usage();
	for (int i = 0; i < MAX_CLIENTS; i++) {
		s.cl[i].pend = malloc(BUF);
		if (!s.cl[i].pend)
			return 1;
	}
	const char *why = NULL;
	int rc = iw_rawdev_open(&cfg, &s.d, &why);
	if (rc) {
		fprintf(stderr, "rawecho: %s: %s (%s)\n", cfg.ifname, strerror(-rc), why ? why : "?");
		return rc == -EPERM ? 77 : 1;
	}
	struct iw_context *ctx = NULL;
	rc = iw_context_create(NULL, &ctx);
	if (rc == 0)
		rc = iw_rawdev_attach(s.d, ctx);
	if (rc == 0)
		rc = iwn_net_listen(&s.d->net, s.port, 16);
	if (rc) {
		fprintf(stderr, "rawecho: setup: %s\n", strerror(-rc));
		return 1;
	}
	s.u.cb = on_dev;
	iw_rawdev_user_add(s.d, &s.u);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("rawecho: listening\n");
	fflush(stdout);
	uint64_t end = iw_rawdev_now_us() + (uint64_t)timeout_s * 1000000u;
	while (!stop && iw_rawdev_now_us() < end) {
		step(&s);
		iw_rawdev_flush(s.d);
		iw_progress(ctx, 20);
	}
	const struct iwn_net_stats *st = &s.d->net.stats;
	printf("rawecho: served %" PRIu64 " clients, echoed %" PRIu64 " bytes; rx %" PRIu64 " bad %" PRIu64
	       " tcp bad %" PRIu64 " bad csum %" PRIu64 " resets sent %" PRIu64 " syn dropped %" PRIu64
	       "; connections left %u\n",
	       s.served, s.echoed, st->rx_frames, st->rx_bad, st->tcp_bad, st->tcp_bad_csum, st->tcp_resets_sent,
	       st->tcp_syn_dropped, iwn_net_conn_count(&s.d->net));
	struct iw_pktio_stats ps;
	iw_pktio_get_stats(s.d->pio, &ps);
	printf("rawecho: pktio rx %" PRIu64 " tx %" PRIu64 " kernel-drops %" PRIu64 " ring-full %" PRIu64
	       " truncated %" PRIu64 "; dev tx dropped %" PRIu64 "\n",
	       ps.rx_frames, ps.tx_frames, ps.rx_kernel_drops, ps.tx_ring_full, ps.rx_truncated, s.d->st.tx_dropped);
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (s.cl[i].c)
			iwn_net_release(&s.d->net, s.cl[i].c, iw_rawdev_now_us());
		free(s.cl[i].pend);
	}
	iw_rawdev_user_del(s.d, &s.u);
	iw_rawdev_close(s.d);
	iw_context_destroy(ctx);
	return 0;
}
