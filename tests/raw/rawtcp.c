/* Test tool: our TCP/IPv4 (net/) over a raw device (stack/transport/raw),
 * driven by a context's progress loop, against any TCP peer. Full duplex:
 * sends --bytes of pattern --tx-seed (plain stream, or --record N: MPA-
 * style records of N bytes, each ending on a segment boundary), closes,
 * and reads until EOF, checking every byte against pattern --rx-seed.
 * Bytes reported by the out-of-order hook are checked too.
 *   rawtcp --dev IF --ip A.B.C.D[/P] (--listen PORT | --connect IP:PORT)
 *          [--bytes N] [--tx-seed S] [--rx-seed S] [--record N]
 *          [--drop PPM] [--reorder PPM] [--impair-seed S] [--mtu M]
 *          [--v2] [--timeout SEC]
 * Exit 0 only when every byte went out and came in exactly once, intact,
 * and the connection closed without error. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "stack/transport/raw/rawdev.h"

struct app {
	struct iw_rawdev_user u; /* first: the callback's pointer is the app */
	struct iw_rawdev *d;
	struct iwn_tcp_conn *c;
	bool listening;
	uint16_t port;
	uint32_t raddr;
	uint64_t bytes, txs, rxs, sent, got;
	uint32_t record;
	bool shut, eof, failed;
	uint64_t ooo_calls, ooo_bytes;
	int refused;
	uint8_t buf[65536];
};

static void on_ooo(void *arg, struct iwn_tcp_conn *c, uint64_t off, const uint8_t *p, uint32_t len)
{
	struct app *a = arg;
	(void)c;
	a->ooo_calls++;
	a->ooo_bytes += len;
	int64_t bad = iwt_pattern_check(a->rxs, off, p, len);
	if (bad >= 0) {
		fprintf(stderr, "rawtcp: out-of-order hook: wrong byte at stream offset %" PRId64 "\n", bad);
		a->failed = true;
	}
}

static void step(struct app *a)
{
	uint64_t now = iw_rawdev_now_us();
	if (!a->c && a->listening) {
		a->c = iwn_net_accept(&a->d->net, a->port);
		if (a->c) {
			a->c->ooo = on_ooo;
			a->c->ooo_arg = a;
		}
	}
	/* Nothing is queued before the handshake: a refused connect is retried
	 * and must not have taken bytes. */
	if (!a->c || a->c->state == IWN_TCP_SYN_SENT || a->c->state == IWN_TCP_SYN_RCVD ||
	    (a->c->state == IWN_TCP_CLOSED && a->sent == 0))
		return;
	while (!a->shut && a->sent < a->bytes) {
		uint64_t left = a->bytes - a->sent;
		uint32_t n = a->record ? a->record : sizeof(a->buf);
		if (n > left)
			n = (uint32_t)left;
		iwt_pattern_fill(a->txs, a->sent, a->buf, n);
		int r = a->record ? iwn_tcp_send_record(a->c, a->buf, n, now) : iwn_tcp_send(a->c, a->buf, n, now);
		if (r == -EAGAIN || r == 0)
			break;
		if (r < 0) {
			if (!(r == -EPIPE || r == -ENOTCONN) || a->c->state != IWN_TCP_CLOSED) {
				fprintf(stderr, "rawtcp: send: %s\n", strerror(-r));
				a->failed = true;
			}
			break;
		}
		a->sent += (uint64_t)r;
	}
	if (!a->shut && a->sent == a->bytes && a->c->state != IWN_TCP_SYN_SENT && a->c->state != IWN_TCP_CLOSED) {
		iwn_tcp_close(a->c, now);
		a->shut = true;
	}
	uint32_t n;
	while ((n = iwn_tcp_recv(a->c, a->buf, sizeof(a->buf), now)) > 0) {
		int64_t bad = iwt_pattern_check(a->rxs, a->got, a->buf, n);
		if (bad >= 0 || a->got + n > a->bytes) {
			fprintf(stderr, "rawtcp: corrupt or extra byte at offset %" PRId64 "\n",
				bad >= 0 ? bad : (int64_t)a->bytes);
			a->failed = true;
			return;
		}
		a->got += n;
	}
	if (iwn_tcp_eof(a->c))
		a->eof = true;
}

static void on_dev(struct iw_rawdev_user *u)
{
	step((struct app *)u);
}

static bool done(const struct app *a)
{
	if (!a->c || !a->shut || !a->eof || a->got != a->bytes)
		return false;
	/* Our FIN is acknowledged in TIME-WAIT and CLOSED (after LAST-ACK). */
	return a->c->state == IWN_TCP_TIME_WAIT || (a->c->state == IWN_TCP_CLOSED && a->c->err == 0);
}

static int parse_ip(const char *s, uint32_t *ip, uint8_t *prefix)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s", s);
	char *slash = strchr(tmp, '/');
	if (slash) {
		*slash = 0;
		if (prefix)
			*prefix = (uint8_t)atoi(slash + 1);
	}
	struct in_addr in;
	if (inet_pton(AF_INET, tmp, &in) != 1)
		return -1;
	*ip = ntohl(in.s_addr);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: rawtcp --dev IF --ip A.B.C.D[/P] (--listen PORT | --connect IP:PORT) [--bytes N]\n"
			"  [--tx-seed S] [--rx-seed S] [--record N] [--drop PPM] [--reorder PPM]\n"
			"  [--impair-seed S] [--mtu M] [--v2] [--timeout SEC]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct app a;
	struct iw_rawdev_cfg cfg = { 0 };
	unsigned timeout_s = 60;
	a.bytes = 1 << 20;
	a.txs = 2;
	a.rxs = 1;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(o, "--v2")) {
			cfg.rx_ring = IW_PKTIO_RX_V2;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(o, "--dev"))
			cfg.ifname = v;
		else if (!strcmp(o, "--ip")) {
			if (parse_ip(v, &cfg.ip, &cfg.prefix))
				return usage();
		} else if (!strcmp(o, "--listen")) {
			a.listening = true;
			a.port = (uint16_t)atoi(v);
		} else if (!strcmp(o, "--connect")) {
			const char *colon = strrchr(v, ':');
			char host[64];
			if (!colon || (size_t)(colon - v) >= sizeof(host))
				return usage();
			memcpy(host, v, (size_t)(colon - v));
			host[colon - v] = 0;
			if (parse_ip(host, &a.raddr, NULL))
				return usage();
			a.port = (uint16_t)atoi(colon + 1);
		} else if (!strcmp(o, "--bytes"))
			a.bytes = strtoull(v, NULL, 0);
		else if (!strcmp(o, "--tx-seed"))
			a.txs = strtoull(v, NULL, 0);
		else if (!strcmp(o, "--rx-seed"))
			a.rxs = strtoull(v, NULL, 0);
		else if (!strcmp(o, "--record"))
			a.record = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(o, "--drop"))
			cfg.drop_ppm = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(o, "--reorder"))
			cfg.reorder_ppm = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(o, "--impair-seed"))
			cfg.impair_seed = strtoull(v, NULL, 0);
		else if (!strcmp(o, "--mtu"))
			cfg.mtu = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(o, "--timeout"))
			timeout_s = (unsigned)strtoul(v, NULL, 0);
		else
			return usage();
	}
	if (!cfg.ifname || !cfg.ip || !a.port || a.record > sizeof(a.buf))
		return usage();

	const char *why = NULL;
	int rc = iw_rawdev_open(&cfg, &a.d, &why);
	if (rc) {
		fprintf(stderr, "rawtcp: %s: %s (%s)\n", cfg.ifname, strerror(-rc), why ? why : "?");
		return rc == -EPERM ? 77 : 1;
	}
	struct iw_context *ctx = NULL;
	rc = iw_context_create(NULL, &ctx);
	if (rc == 0)
		rc = iw_rawdev_attach(a.d, ctx);
	if (rc) {
		fprintf(stderr, "rawtcp: context: %s\n", strerror(-rc));
		return 1;
	}
	a.u.cb = on_dev;
	iw_rawdev_user_add(a.d, &a.u);
	if (a.listening && (rc = iwn_net_listen(&a.d->net, a.port, 1)) != 0) {
		fprintf(stderr, "rawtcp: listen: %s\n", strerror(-rc));
		return 1;
	}
	if (a.listening) {
		printf("rawtcp: listening\n");
		fflush(stdout);
	}

	uint64_t start = iw_rawdev_now_us(), end = start + (uint64_t)timeout_s * 1000000u;
	uint64_t next_try = start;
	while (!done(&a) && !a.failed && iw_rawdev_now_us() < end) {
		if (!a.listening && (!a.c || (a.c->state == IWN_TCP_CLOSED && a.c->err == -ECONNREFUSED &&
					       a.sent == 0 && a.got == 0))) {
			/* The peer may not listen yet: retry a refused connect. */
			if (iw_rawdev_now_us() >= next_try) {
				if (a.c) {
					iwn_net_release(&a.d->net, a.c, iw_rawdev_now_us());
					a.refused++;
				}
				a.c = iwn_net_connect(&a.d->net, a.raddr, a.port, 0, iw_rawdev_now_us(), &rc);
				if (!a.c) {
					fprintf(stderr, "rawtcp: connect: %s\n", strerror(-rc));
					a.failed = true;
					break;
				}
				a.c->ooo = on_ooo;
				a.c->ooo_arg = &a;
				next_try = iw_rawdev_now_us() + 100000;
				iw_rawdev_flush(a.d);
			}
		}
		step(&a);
		iw_rawdev_flush(a.d);
		if (a.c && a.c->state == IWN_TCP_CLOSED && a.c->err && a.c->err != -ECONNREFUSED) {
			fprintf(stderr, "rawtcp: connection failed: %s\n", strerror(-a.c->err));
			a.failed = true;
		}
		iw_progress(ctx, 20);
	}
	uint64_t us = iw_rawdev_now_us() - start;
	bool ok = done(&a) && !a.failed;
	struct iw_pktio_stats ps;
	iw_pktio_get_stats(a.d->pio, &ps);
	printf("rawtcp: %s: sent %" PRIu64 " received %" PRIu64 " of %" PRIu64 " in %.3f s, state %s err %d\n",
	       ok ? "ok" : "FAILED", a.sent, a.got, a.bytes, (double)us / 1e6,
	       a.c ? iwn_tcp_state_name(a.c->state) : "none", a.c ? a.c->err : 0);
	if (a.c) {
		const struct iwn_tcp_stats *s = &a.c->stats;
		printf("rawtcp: tcp segs in %" PRIu64 " out %" PRIu64 " rexmit %" PRIu64 " (rto %" PRIu64
		       ", fast %" PRIu64 ", sack %" PRIu64 ") ooo segs %" PRIu64 " dup %" PRIu64 " paws %" PRIu64
		       "; ooo hook %" PRIu64 " calls %" PRIu64 " bytes; eff mss %u\n",
		       s->segs_in, s->segs_out, s->retransmitted_segs, s->rto_expired, s->fast_retransmits,
		       s->sack_rexmits, s->ooo_segs, s->dup_segs, s->paws_dropped, a.ooo_calls, a.ooo_bytes,
		       a.c->eff_mss);
	}
	printf("rawtcp: pktio rx %" PRIu64 " tx %" PRIu64 " csum-completed %" PRIu64 " impair rx drop %" PRIu64
	       " reorder %" PRIu64 " tx drop %" PRIu64 " reorder %" PRIu64 " truncated %" PRIu64
	       " kernel-drops %" PRIu64 " ring-full %" PRIu64 "; dev tx dropped %" PRIu64 "\n",
	       ps.rx_frames, ps.tx_frames, ps.rx_csum_completed, ps.rx_impair_drops, ps.rx_impair_reorders,
	       ps.tx_impair_drops, ps.tx_impair_reorders, ps.rx_truncated, ps.rx_kernel_drops, ps.tx_ring_full,
	       a.d->st.tx_dropped);
	if (a.c)
		iwn_net_release(&a.d->net, a.c, iw_rawdev_now_us());
	iw_rawdev_user_del(a.d, &a.u);
	iw_rawdev_close(a.d);
	iw_context_destroy(ctx);
	return ok ? 0 : 1;
}
