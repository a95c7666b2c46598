/* Deterministic simulation: two hosts (ARP + IPv4 + TCP) over a link with
 * seeded loss, duplication, reordering and delay. Random data flows both
 * ways; every byte must arrive exactly once and in order, and both sides
 * must close cleanly. IWT_NET_SEEDS sets the seeds per scenario (default
 * 250); IWT_SEED changes them all; a failure prints its seed. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "netsim.h"
#include "net/tcp_seg.h"

#define PORT 4791
#define VTIME_LIMIT (6ULL * 3600 * 1000000) /* virtual */
#define EVENT_LIMIT 4000000

static uint8_t pat(uint64_t key, uint64_t off)
{
	uint64_t x = (off >> 3) * 0x9E3779B97F4A7C15ULL ^ key;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off & 7)));
}

struct side {
	struct iwn_tcp_conn *c;
	uint64_t key;      /* pattern of the bytes this side sends */
	uint64_t total, sent;
	uint64_t got;      /* bytes received from the other side */
	uint64_t peer_key;
	uint64_t bad_at;   /* first wrong byte + 1, 0: none */
	bool closed, eof;
	uint32_t read_ppm; /* chance the application reads at a step */
	uint32_t max_chunk;
	uint32_t fixed_chunk; /* most writes this size (FPDUs filling a segment), 0: random */
	bool records;
};

/* Record mode: where the client's records end (stream offsets), to check
 * that every data segment it sends, retransmissions included, ends on
 * one. */
struct rec_check {
	struct iwn_tcp_conn *c;
	uint64_t *ends;
	uint32_t n, cap;
	uint64_t segs, misaligned;
};

static bool is_record_end(const struct rec_check *rc, uint64_t off)
{
	uint32_t lo = 0, hi = rc->n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (rc->ends[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rc->n && rc->ends[lo] == off;
}

static bool rec_filter(void *arg, int from, uint8_t *f, uint32_t len)
{
	struct rec_check *rc = arg;
	if (from != 0 || !rc->c || len < 14 + 20 + 20 || f[12] != 0x08 || f[13] != 0x00 || f[14 + 9] != 6)
		return true;
	const uint8_t *ip = f + 14;
	uint32_t iphl = (ip[0] & 15u) * 4, tot = (uint32_t)ip[2] << 8 | ip[3];
	const uint8_t *t = ip + iphl;
	uint32_t thl = (t[12] >> 4) * 4u;
	if (tot < iphl + thl || (t[13] & 0x02))
		return true;
	uint32_t plen = tot - iphl - thl;
	if (plen == 0)
		return true;
	uint32_t seq = (uint32_t)t[4] << 24 | (uint32_t)t[5] << 16 | (uint32_t)t[6] << 8 | t[7];
	/* Offsets stay below 4 GiB in these runs. */
	uint64_t end = (uint64_t)(uint32_t)(seq + plen - (rc->c->iss + 1));
	rc->segs++;
	/* A 1-byte zero-window probe may split a record; nothing else may. */
	if (!is_record_end(rc, end) && plen != 1) {
		rc->misaligned++;
		if (getenv("IWT_NET_DBG"))
			fprintf(stderr, "misaligned: offset %llu len %u wnd %u\n", (unsigned long long)(end - plen), plen,
				rc->c->snd_wnd);
	}
	return true;
}

/* The out-of-order hook: payload and stream offset before delivery. */
struct ooo_check {
	uint64_t key;
	uint64_t calls, bytes, bad;
};

static uint8_t pat(uint64_t key, uint64_t off);

static void ooo_hook(void *arg, struct iwn_tcp_conn *c, uint64_t off, const uint8_t *p, uint32_t len)
{
	struct ooo_check *oc = arg;
	(void)c;
	oc->calls++;
	oc->bytes += len;
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pat(oc->key, off + i)) {
			oc->bad++;
			break;
		}
}

/* Hostile link: rewrites TCP header fields of some frames (and fixes
 * the checksum) so the state machine sees arbitrary seq/ack/flags/window/
 * options. TCP cannot detect such data corruption, so only termination
 * and memory safety are checked. */
struct mangle {
	uint64_t rng;
	uint32_t ppm;
	uint64_t mangled;
};

static void fix_tcp_csum(uint8_t *f, uint32_t len)
{
	const uint8_t *ip = f + 14;
	uint32_t iphl = (ip[0] & 15u) * 4, tot = (uint32_t)ip[2] << 8 | ip[3];
	if (tot > len - 14 || tot < iphl + 20)
		return;
	uint32_t src = (uint32_t)ip[12] << 24 | (uint32_t)ip[13] << 16 | (uint32_t)ip[14] << 8 | ip[15];
	uint32_t dst = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
	iwn_tcp_set_csum(f + 14 + iphl, tot - iphl, src, dst);
}

static bool mangle_filter(void *arg, int from, uint8_t *f, uint32_t len)
{
	struct mangle *m = arg;
	(void)from;
	if (len < 14 + 20 + 20 || f[12] != 0x08 || f[13] != 0x00 || f[14 + 9] != 6)
		return true;
	if (iwt_rand(&m->rng) % 1000000u >= m->ppm)
		return true;
	uint8_t *t = f + 14 + (f[14] & 15u) * 4;
	uint32_t tlen = len - (uint32_t)(t - f);
	switch (iwt_rand(&m->rng) % 6) {
	case 0: /* sequence number nearby or anywhere */
		t[4 + iwt_rand(&m->rng) % 4] ^= (uint8_t)iwt_rand(&m->rng);
		break;
	case 1: /* acknowledgment number */
		t[8 + iwt_rand(&m->rng) % 4] ^= (uint8_t)iwt_rand(&m->rng);
		break;
	case 2: /* flags */
		t[13] = (uint8_t)iwt_rand(&m->rng);
		break;
	case 3: /* window */
		t[14] = (uint8_t)iwt_rand(&m->rng);
		t[15] = (uint8_t)iwt_rand(&m->rng);
		break;
	case 4: /* option bytes or data offset */
		if (tlen > 20 && (t[12] >> 4) > 5)
			t[20 + iwt_rand(&m->rng) % (uint32_t)((t[12] >> 4) * 4 - 20)] = (uint8_t)iwt_rand(&m->rng);
		else
			t[12] = (uint8_t)((iwt_rand(&m->rng) % 16) << 4);
		break;
	default: /* all of it */
		for (int i = 4; i < 16; i++)
			t[i] = (uint8_t)iwt_rand(&m->rng);
		break;
	}
	fix_tcp_csum(f, len);
	m->mangled++;
	return true;
}

struct scenario {
	const char *name;
	struct netsim_link link;
	uint32_t rcvbuf[2], sndbuf[2];
	uint64_t max_bytes[2];
	uint32_t read_ppm[2];
	bool lossy_ok; /* very high loss: a timeout is an acceptable end */
	uint16_t mtu;
	bool records;  /* the client writes records (segment boundaries) */
	bool no_delack;
	bool no_ts[2]; /* host i offers neither timestamps nor SACK */
	bool wrap;     /* client ISN just below 2^32: its stream crosses the wrap */
	uint32_t mangle_ppm; /* hostile link: header rewrites, only termination checked */
	unsigned gso;  /* hosts (bit i) with transmit offload: super-segments cut by the link */
	bool full_records; /* most records fill a segment (eff_mss), as FPDUs do */
};

struct result {
	bool done_ok;    /* both directions complete, both CLOSED with err 0 */
	bool quiescent;  /* ran out of events within the bounds */
	bool corrupt;
	int err[2];
	enum iwn_tcp_state state[2];
	uint64_t got[2], total[2];
	uint64_t vtime, events;
	struct iwn_tcp_stats st[2];
	uint64_t rec_segs, rec_misaligned, ooo_calls, ooo_bad;
	uint64_t gso_frames, gso_pieces, gso_oversize;
};

static void app_io(struct netsim *s, struct side *sd, bool force_read, struct rec_check *rc)
{
	struct iwn_tcp_conn *c = sd->c;
	if (!c)
		return;
	uint8_t buf[8192];
	if (sd->sent < sd->total && !sd->closed && c->state != IWN_TCP_CLOSED) {
		uint32_t n = 1 + (uint32_t)(netsim_rand(s) % sd->max_chunk);
		if (sd->fixed_chunk && netsim_rand(s) % 8 != 0)
			n = sd->fixed_chunk;
		if (n > sd->total - sd->sent)
			n = (uint32_t)(sd->total - sd->sent);
		for (uint32_t i = 0; i < n; i++)
			buf[i] = pat(sd->key, sd->sent + i);
		if (rc) {
			/* Known before the call: the segment leaves inside it. */
			if (rc->n == rc->cap) {
				rc->cap = rc->cap ? 2 * rc->cap : 1024;
				rc->ends = realloc(rc->ends, rc->cap * sizeof(*rc->ends));
				ck_assert_ptr_nonnull(rc->ends);
			}
			rc->ends[rc->n++] = sd->sent + n;
		}
		int r = sd->records ? iwn_tcp_send_record(c, buf, n, s->now) : iwn_tcp_send(c, buf, n, s->now);
		if (r > 0)
			sd->sent += (uint64_t)r;
		else if (rc)
			rc->n--;
	}
	if (sd->sent == sd->total && !sd->closed &&
	    (c->state == IWN_TCP_ESTABLISHED || c->state == IWN_TCP_CLOSE_WAIT)) {
		iwn_tcp_close(c, s->now);
		sd->closed = true;
	}
	while (force_read || netsim_rand(s) % 1000000u < sd->read_ppm) {
		uint32_t want = 1 + (uint32_t)(netsim_rand(s) % sizeof(buf));
		uint32_t n = iwn_tcp_recv(c, buf, want, s->now);
		for (uint32_t i = 0; i < n; i++)
			if (!sd->bad_at && buf[i] != pat(sd->peer_key, sd->got + i))
				sd->bad_at = sd->got + i + 1;
		sd->got += n;
		if (n < want)
			break;
	}
	if (iwn_tcp_eof(c))
		sd->eof = true;
}

static void tcp_cfg(const struct scenario *sc, int i, struct iwn_tcp_cfg *t)
{
	iwn_tcp_cfg_default(t);
	if (sc->rcvbuf[i])
		t->rcvbuf = sc->rcvbuf[i];
	if (sc->sndbuf[i])
		t->sndbuf = sc->sndbuf[i];
	if (sc->no_delack)
		t->delack_us = 0;
	if (sc->no_ts[i]) {
		t->timestamps = false;
		t->sack = false;
	}
}

static void run(const struct scenario *sc, uint64_t seed, struct result *res)
{
	memset(res, 0, sizeof(*res));
	struct netsim *s = malloc(sizeof(*s));
	ck_assert_ptr_nonnull(s);
	struct iwn_tcp_cfg t0, t1;
	tcp_cfg(sc, 0, &t0);
	tcp_cfg(sc, 1, &t1);
	netsim_init_gso(s, seed, &sc->link, &t0, &t1, sc->mtu, sc->gso);
	ck_assert_int_eq(iwn_net_listen(&s->net[1], PORT, 4), 0);

	struct side sd[2];
	memset(sd, 0, sizeof(sd));
	for (int i = 0; i < 2; i++) {
		sd[i].key = netsim_rand(s);
		sd[i].total = sc->max_bytes[i] ? netsim_rand(s) % (sc->max_bytes[i] + 1) : 0;
		sd[i].read_ppm = sc->read_ppm[i] ? sc->read_ppm[i] : 1000000;
		sd[i].max_chunk = 1 + (uint32_t)(netsim_rand(s) % 8192);
	}
	sd[0].peer_key = sd[1].key;
	sd[1].peer_key = sd[0].key;
	sd[0].records = sc->records;
	/* Records fit a segment: the MSS less the timestamp option. */
	if (sc->records && sd[0].max_chunk > s->net[0].cfg.tcp.mss - 12u)
		sd[0].max_chunk = s->net[0].cfg.tcp.mss - 12u;
	if (sc->full_records)
		sd[0].fixed_chunk = sd[0].max_chunk;
	int err = 0;
	struct rec_check rc = {0};
	struct ooo_check oc = {.key = sd[0].key};
	struct mangle mg = {.rng = seed ^ 0x5555, .ppm = sc->mangle_ppm};
	if (sc->records) {
		s->filter = rec_filter;
		s->filter_arg = &rc;
	} else if (sc->mangle_ppm) {
		s->filter = mangle_filter;
		s->filter_arg = &mg;
	}
	uint16_t lport = 0;
	if (sc->wrap) {
		/* ISN = now / 4 + F(tuple): pick the clock that puts it just
		 * below the wrap (RFC 6528 makes that a matter of time). */
		lport = 50000;
		uint32_t f = iwn_tcp_isn(s->net[0].cfg.isn_key, NETSIM_IP(0), lport, NETSIM_IP(1), PORT, 0);
		uint32_t target = 0u - 1u - (uint32_t)(netsim_rand(s) % 100000);
		s->now &= ~(uint64_t)3;
		uint32_t k = target - f - (uint32_t)(s->now / 4);
		s->now += 4 * (uint64_t)k;
	}
	sd[0].c = iwn_net_connect(&s->net[0], NETSIM_IP(1), PORT, lport, s->now, &err);
	if (sc->wrap)
		ck_assert_uint_gt(sd[0].c->iss, 0xFFFFFFFFu - 100001u);
	ck_assert_ptr_nonnull(sd[0].c);
	rc.c = sd[0].c;
	uint64_t start = s->now, limit = s->now + VTIME_LIMIT;
	for (;;) {
		if (!sd[1].c) {
			sd[1].c = iwn_net_accept(&s->net[1], PORT);
			if (sd[1].c) {
				sd[1].c->ooo = ooo_hook;
				sd[1].c->ooo_arg = &oc;
			}
		}
		uint64_t next = netsim_next(s);
		bool idle = next == UINT64_MAX;
		app_io(s, &sd[0], idle, sc->records ? &rc : NULL);
		app_io(s, &sd[1], idle, NULL);
		next = netsim_next(s);
		if (next == UINT64_MAX) {
			res->quiescent = true;
			break;
		}
		if (next > limit || ++res->events > EVENT_LIMIT)
			break;
		netsim_step(s, limit);
	}
	res->vtime = s->now - start;
	res->gso_frames = s->gso_frames;
	res->gso_pieces = s->gso_pieces;
	res->gso_oversize = s->gso_oversize;
	res->rec_segs = rc.segs;
	res->rec_misaligned = rc.misaligned;
	res->ooo_calls = oc.calls;
	res->ooo_bad = oc.bad;
	free(rc.ends);
	for (int i = 0; i < 2; i++) {
		struct iwn_tcp_conn *c = sd[i].c;
		res->got[i] = sd[i].got;
		res->total[i] = sd[i].total;
		if (sd[i].bad_at || sd[i].got > sd[1 - i].total)
			res->corrupt = true;
		res->err[i] = c ? c->err : -ENOTCONN;
		res->state[i] = c ? c->state : IWN_TCP_CLOSED;
		if (c)
			res->st[i] = c->stats;
	}
	res->done_ok = res->quiescent && !res->corrupt && sd[0].c && sd[1].c && sd[0].got == sd[1].total &&
		       sd[1].got == sd[0].total && sd[0].eof && sd[1].eof && res->err[0] == 0 && res->err[1] == 0 &&
		       res->state[0] == IWN_TCP_CLOSED && res->state[1] == IWN_TCP_CLOSED;
	for (int i = 0; i < 2; i++)
		if (sd[i].c)
			iwn_net_release(&s->net[i], sd[i].c, s->now);
	/* Orphans finish their closing handshakes and timers. */
	for (uint64_t k = 0; k < EVENT_LIMIT && netsim_next(s) != UINT64_MAX; k++)
		netsim_step(s, UINT64_MAX - 1);
	for (int i = 0; i < 2; i++)
		for (uint32_t k = 0; k < s->net[i].cfg.max_conns; k++)
			if (s->net[i].socks[k]) {
				struct iwn_tcp_conn *c = (struct iwn_tcp_conn *)s->net[i].socks[k];
				fprintf(stderr, "left: host %d %s err %d deadline %llu\n", i, iwn_tcp_state_name(c->state),
					c->err, (unsigned long long)iwn_tcp_next_deadline(c));
			}
	ck_assert_msg(iwn_net_conn_count(&s->net[0]) + iwn_net_conn_count(&s->net[1]) == 0,
		      "%s seed %#llx: connections left in the tables", sc->name, (unsigned long long)seed);
	netsim_fini(s);
	free(s);
}

static uint32_t n_seeds(void)
{
	const char *e = getenv("IWT_NET_SEEDS");
	long v = e ? strtol(e, NULL, 0) : 500;
	return v > 0 ? (uint32_t)v : 1;
}

static void report(const struct scenario *sc, uint64_t seed, const struct result *r)
{
	fprintf(stderr,
		"%s seed %#llx: ok=%d quiescent=%d corrupt=%d err %d/%d state %s/%s got %llu/%llu of %llu/%llu "
		"vtime %.1fs events %llu rto %llu/%llu fr %llu/%llu records %llu/%llu misaligned ooo-hook %llu/%llu bad\n",
		sc->name, (unsigned long long)seed, r->done_ok, r->quiescent, r->corrupt, r->err[0], r->err[1],
		iwn_tcp_state_name(r->state[0]), iwn_tcp_state_name(r->state[1]), (unsigned long long)r->got[0],
		(unsigned long long)r->got[1], (unsigned long long)r->total[1], (unsigned long long)r->total[0],
		(double)r->vtime / 1e6, (unsigned long long)r->events, (unsigned long long)r->st[0].rto_expired,
		(unsigned long long)r->st[1].rto_expired, (unsigned long long)r->st[0].fast_retransmits,
		(unsigned long long)r->st[1].fast_retransmits, (unsigned long long)r->rec_misaligned,
		(unsigned long long)r->rec_segs, (unsigned long long)r->ooo_bad, (unsigned long long)r->ooo_calls);
}

/* FNV-1a: each scenario gets its own seeds. */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ULL;
	return h;
}

static void run_scenario(const struct scenario *sc, uint32_t scale_div)
{
	uint64_t base = iwt_seed();
	uint32_t n = n_seeds() / scale_div;
	if (n == 0)
		n = 1;
	const char *only = getenv("IWT_NET_ONLY_SEED");
	uint32_t ok = 0, timeouts = 0;
	uint64_t rto = 0, fr = 0, ooo = 0, probes = 0, hook = 0, recsegs = 0, paws = 0, sackrx = 0;
	uint64_t gso_frames = 0, gso_pieces = 0, rexmit = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seed = base * 1000003u + i * 0x9E3779B97F4A7C15ULL + name_hash(sc->name);
		if (only)
			seed = strtoull(only, NULL, 0);
		struct result r;
		run(sc, seed, &r);
		if (getenv("IWT_NET_VERBOSE"))
			report(sc, seed, &r);
		bool hostile = sc->mangle_ppm != 0; /* corruption cannot be detected by TCP */
		if ((!hostile && (r.corrupt || r.ooo_bad)) || !r.quiescent || (!r.done_ok && !sc->lossy_ok) ||
		    r.rec_misaligned || r.gso_oversize) {
			report(sc, seed, &r);
			ck_abort_msg("%s: seed %#llx failed (rerun with IWT_NET_ONLY_SEED)", sc->name,
				     (unsigned long long)seed);
		}
		ok += r.done_ok;
		timeouts += !r.done_ok;
		for (int k = 0; k < 2; k++) {
			rto += r.st[k].rto_expired;
			fr += r.st[k].fast_retransmits;
			ooo += r.st[k].ooo_segs;
			probes += r.st[k].window_probes;
			paws += r.st[k].paws_dropped;
			sackrx += r.st[k].sack_rexmits;
		}
		hook += r.ooo_calls;
		gso_frames += r.gso_frames;
		gso_pieces += r.gso_pieces;
		rexmit += r.st[0].retransmitted_segs + r.st[1].retransmitted_segs;
		recsegs += r.rec_segs;
		if (only)
			break;
	}
	fprintf(stderr,
		"%s: %u seeds, %u complete, %u ended early (reset or timeout); rto %llu fast-rexmit %llu ooo %llu "
		"(hook saw %llu) probes %llu paws %llu sack-rexmit %llu aligned-record-segs %llu\n",
		sc->name, only ? 1 : n, ok, timeouts, (unsigned long long)rto, (unsigned long long)fr,
		(unsigned long long)ooo, (unsigned long long)hook, (unsigned long long)probes, (unsigned long long)paws,
		(unsigned long long)sackrx, (unsigned long long)recsegs);
	if (sc->records)
		ck_assert_uint_gt(recsegs, 0);
	if (sc->gso) {
		fprintf(stderr, "%s: %llu super-segments cut into %llu wire segments, %llu retransmitted segments\n",
			sc->name, (unsigned long long)gso_frames, (unsigned long long)gso_pieces,
			(unsigned long long)rexmit);
		ck_assert_uint_gt(gso_frames, 0);
	}
	if (sc->lossy_ok)
		ck_assert_uint_gt(ok, 0);
}

#define LINK(loss, dup, reo, delay, jit) {(loss), (dup), (reo), (delay), (jit)}

static const struct scenario clean = {
	.name = "clean", .link = LINK(0, 0, 0, 100, 0), .max_bytes = {200000, 200000},
};
static const struct scenario one_pct = {
	.name = "loss1-reorder1-dup1", .link = LINK(10000, 10000, 10000, 500, 3000),
	.max_bytes = {150000, 150000},
};
static const struct scenario mixed = {
	.name = "loss3-reorder10-dup3", .link = LINK(30000, 30000, 100000, 200, 5000),
	.max_bytes = {100000, 100000},
};
static const struct scenario mixed_nots = {
	.name = "loss3-reorder10-dup3-no-ts-no-sack", .link = LINK(30000, 30000, 100000, 200, 5000),
	.max_bytes = {100000, 100000}, .no_ts = {false, true},
};
static const struct scenario tiny = {
	.name = "one-byte-window", .link = LINK(10000, 10000, 10000, 300, 2000),
	.rcvbuf = {0, 1}, .max_bytes = {1500, 20000},
};
static const struct scenario slow = {
	.name = "slow-reader", .link = LINK(10000, 0, 10000, 300, 2000),
	.rcvbuf = {0, 3000}, .read_ppm = {0, 30000}, .max_bytes = {30000, 30000},
};
static const struct scenario bigwin = {
	.name = "window-scale", .link = LINK(10000, 0, 10000, 2000, 3000),
	.rcvbuf = {1 << 20, 1 << 20}, .sndbuf = {1 << 20, 1 << 20}, .max_bytes = {600000, 600000},
	.no_delack = true,
};
static const struct scenario records = {
	.name = "records", .link = LINK(10000, 5000, 20000, 300, 2000), .max_bytes = {150000, 20000},
	.records = true, .mtu = 9000,
};
/* A slow reader with a small window against a record sender: a window
 * that opens by less than a record while nothing is in flight must not
 * make the sender cut a record (only 1-byte probes may). */
static const struct scenario records_slow = {
	.name = "records-slow-reader", .link = LINK(10000, 0, 10000, 300, 2000),
	.rcvbuf = {0, 3000}, .read_ppm = {0, 30000}, .max_bytes = {60000, 20000}, .records = true,
};
/* Transmit offload: super-segments of whole records (or of MSS pieces of
 * a plain stream) cut by the link; the pieces are lost and reordered
 * one by one, so retransmission and SACK work on parts of them. */
static const struct scenario gso_records = {
	.name = "gso-records", .link = LINK(10000, 5000, 20000, 300, 2000), .max_bytes = {300000, 50000},
	.rcvbuf = {1 << 18, 1 << 18}, .sndbuf = {1 << 18, 1 << 18}, .records = true, .gso = 3, .full_records = true,
};
static const struct scenario gso_records_jumbo = {
	.name = "gso-records-mtu9000", .link = LINK(10000, 5000, 20000, 300, 2000), .max_bytes = {600000, 50000},
	.rcvbuf = {1 << 18, 1 << 18}, .sndbuf = {1 << 18, 1 << 18}, .records = true, .mtu = 9000, .gso = 3, .full_records = true,
};
static const struct scenario gso_slow = {
	.name = "gso-records-slow-reader", .link = LINK(10000, 0, 10000, 300, 2000),
	.rcvbuf = {0, 6000}, .read_ppm = {0, 30000}, .max_bytes = {60000, 20000}, .records = true, .gso = 3, .full_records = true,
};
static const struct scenario gso_stream = {
	.name = "gso-stream", .link = LINK(30000, 10000, 50000, 300, 3000), .max_bytes = {300000, 300000},
	.rcvbuf = {1 << 18, 1 << 18}, .sndbuf = {1 << 18, 1 << 18}, .gso = 1,
};
static const struct scenario wrap = {
	.name = "seq-wrap", .link = LINK(10000, 10000, 10000, 500, 3000), .max_bytes = {300000, 50000},
	.wrap = true,
};
static const struct scenario hostile = {
	.name = "hostile-headers", .link = LINK(10000, 10000, 10000, 300, 2000), .max_bytes = {30000, 30000},
	.lossy_ok = true, .mangle_ppm = 20000,
};
static const struct scenario lossy = {
	.name = "loss20-reorder20", .link = LINK(200000, 20000, 200000, 300, 5000),
	.max_bytes = {20000, 20000}, .lossy_ok = true,
};
static const struct scenario awful = {
	.name = "loss50", .link = LINK(500000, 0, 100000, 300, 5000), .max_bytes = {5000, 5000},
	.lossy_ok = true,
};

START_TEST(test_clean) { run_scenario(&clean, 5); }
END_TEST
START_TEST(test_one_pct) { run_scenario(&one_pct, 1); }
END_TEST
START_TEST(test_mixed) { run_scenario(&mixed, 1); }
END_TEST
START_TEST(test_mixed_nots) { run_scenario(&mixed_nots, 2); }
END_TEST
START_TEST(test_tiny_window) { run_scenario(&tiny, 2); }
END_TEST
START_TEST(test_slow_reader) { run_scenario(&slow, 2); }
END_TEST
START_TEST(test_window_scale) { run_scenario(&bigwin, 5); }
END_TEST
START_TEST(test_records) { run_scenario(&records, 2); }
END_TEST
START_TEST(test_records_slow_reader) { run_scenario(&records_slow, 2); }
END_TEST
START_TEST(test_gso_records) { run_scenario(&gso_records, 2); }
END_TEST
START_TEST(test_gso_records_jumbo) { run_scenario(&gso_records_jumbo, 5); }
END_TEST
START_TEST(test_gso_slow) { run_scenario(&gso_slow, 2); }
END_TEST
START_TEST(test_gso_stream) { run_scenario(&gso_stream, 2); }
END_TEST
START_TEST(test_wrap) { run_scenario(&wrap, 5); }
END_TEST
START_TEST(test_hostile) { run_scenario(&hostile, 2); }
END_TEST
START_TEST(test_lossy) { run_scenario(&lossy, 2); }
END_TEST
START_TEST(test_awful) { run_scenario(&awful, 5); }
END_TEST

static Suite *sim_suite(void)
{
	Suite *s = suite_create("net_sim");
	TCase *t = tcase_create("sim");
	tcase_set_timeout(t, 200);
	tcase_add_test(t, test_clean);
	tcase_add_test(t, test_one_pct);
	tcase_add_test(t, test_mixed);
	tcase_add_test(t, test_mixed_nots);
	tcase_add_test(t, test_tiny_window);
	tcase_add_test(t, test_slow_reader);
	tcase_add_test(t, test_window_scale);
	tcase_add_test(t, test_records);
	tcase_add_test(t, test_records_slow_reader);
	tcase_add_test(t, test_gso_records);
	tcase_add_test(t, test_gso_records_jumbo);
	tcase_add_test(t, test_gso_slow);
	tcase_add_test(t, test_gso_stream);
	tcase_add_test(t, test_wrap);
	tcase_add_test(t, test_hostile);
	tcase_add_test(t, test_lossy);
	tcase_add_test(t, test_awful);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return iwt_run_suite(sim_suite());
}
