/* Fuzz two honest net/ hosts joined by a link the input controls: it
 * delivers, drops, duplicates, reorders and delays frames, flips a bit in
 * one (where a checksum covers it or in the Ethernet header: an ARP body
 * has none, see OP_FLIP), steps the clock and drives both applications.
 * Then the link turns honest (FIFO, fixed delay) and both applications
 * send the rest, close, and read to the end.
 *
 * Input: byte 0 configures the hosts (CFG_* below), bytes 1-2 how much
 * each side sends (in 512-byte units); then operations (enum op), each an
 * opcode byte (bit 7: which host, for application calls), a byte picking
 * a queued frame, and its arguments (missing bytes read as 0).
 *
 * Checked: every frame either host sends is well formed (net_fuzz.h);
 * every byte an application reads is the other side's byte at that
 * stream offset; once the link is honest, both transfers complete, both
 * sides see the end of the stream and close without error within
 * HONEST_LIMIT_US of simulated time. A frame gets at most one flipped
 * bit (two can cancel in the Internet checksum), and the misbehaving
 * phase lasts at most FUZZ_TIME_US so no connection may rightly give up
 * (SYN retries take over 2 minutes). */
#include <errno.h>
#include <stdbool.h>

#include "net/net.h"
#include "net/seq.h"
#include "net_fuzz.h"

#define PORT 4791
#define QCAP 256
#define FRAME_MAX 1600
#define START_US 1000000000ull
#define LINK_DELAY_US 100
#define FUZZ_TIME_US 10000000ull      /* the misbehaving phase */
#define HONEST_LIMIT_US 600000000ull  /* RTO backoff and a poisoned ARP entry heal well within */
#define HONEST_EVENTS 400000
#define MAX_OPS 3000

/* Configuration byte. */
#define CFG_NO_SACK 0x01
#define CFG_NO_TS 0x02
#define CFG_NO_WS 0x04
#define CFG_SMALL_RCVBUF 0x08 /* 4 KiB on host 1 */
#define CFG_BIG_RCVBUF 0x10   /* 256 KiB on host 0 */
#define CFG_RECORDS 0x20      /* host 0 sends records */
#define CFG_DELACK 0x40
#define CFG_SMALL_MTU 0x80

enum op {
	OP_DELIVER, /* one queued frame, any of them: reordering */
	OP_DROP,
	OP_DUP,
	OP_FLIP,    /* one bit of one frame */
	OP_CLOCK,   /* time passes (frames stay queued), timers run */
	OP_SEND,
	OP_RECV,
	OP_FLUSH,   /* deliver everything queued, in order */
	OP_CLOSE,
	OP_COUNT
};

struct qframe {
	uint8_t data[FRAME_MAX];
	uint32_t len;
	int to;
	bool flipped;
	uint64_t at; /* honest phase: delivery time */
};

struct side {
	struct iwn_net net;
	uint8_t mac[6];
	uint32_t ip;
	uint16_t mtu;
	struct iwn_tcp_conn *c;
	uint64_t key;
	uint64_t total, written, read;
	bool closed, eof;
};

static struct {
	struct side s[2];
	struct qframe q[QCAP];
	uint32_t nq;
	uint64_t now;
	uint64_t fuzz_end;
	bool honest;
	bool records;
} W;

static void host_tx(void *arg, const uint8_t *f, uint32_t len)
{
	struct side *me = arg;
	int from = me == &W.s[0] ? 0 : 1;
	struct nf_tx t;
	nf_check_tx(f, len, me->mac, me->ip, me->mtu, &t);
	if (W.nq == QCAP || len > FRAME_MAX)
		return; /* the link is full: lost */
	struct qframe *q = &W.q[W.nq++];
	memcpy(q->data, f, len);
	q->len = len;
	q->to = 1 - from;
	q->flipped = false;
	q->at = W.now + LINK_DELAY_US;
}

static void remove_frame(uint32_t i)
{
	memmove(&W.q[i], &W.q[i + 1], (W.nq - i - 1) * sizeof(W.q[0]));
	W.nq--;
}

static void deliver(uint32_t i)
{
	static struct qframe f;
	f = W.q[i];
	remove_frame(i);
	iwn_net_input(&W.s[f.to].net, f.data, f.len, W.now);
}

/* ---- applications ---- */

static void app_send(struct side *s, uint32_t n)
{
	if (!s->c || s->closed || s->written >= s->total)
		return;
	if (n > s->total - s->written)
		n = (uint32_t)(s->total - s->written);
	static uint8_t buf[65536];
	if (n > sizeof(buf))
		n = sizeof(buf);
	if (n == 0)
		return;
	nf_fill(s->key, s->written, buf, n);
	int r;
	if (W.records && s == &W.s[0]) {
		/* Records of at most 3000 bytes, as an MPA sender would cut. */
		if (n > 3000)
			n = 3000;
		r = iwn_tcp_send_record(s->c, buf, n, W.now);
		if (r == -EAGAIN)
			r = 0;
	} else {
		r = iwn_tcp_send(s->c, buf, n, W.now);
	}
	FUZZ_CHECK(r >= 0 && (uint32_t)r <= n);
	s->written += (uint32_t)r;
}

static void app_recv(struct side *s, uint32_t n)
{
	if (!s->c)
		return;
	const struct side *o = s == &W.s[0] ? &W.s[1] : &W.s[0];
	static uint8_t buf[65536];
	if (n > sizeof(buf))
		n = sizeof(buf);
	uint32_t k = iwn_tcp_recv(s->c, buf, n, W.now);
	FUZZ_CHECK(k <= n);
	for (uint32_t i = 0; i < k; i++)
		FUZZ_CHECK(buf[i] == nf_pat(o->key, s->read + i));
	s->read += k;
	FUZZ_CHECK(s->read <= o->written);
	if (iwn_tcp_eof(s->c))
		s->eof = true;
}

static void app_close(struct side *s)
{
	/* A close in SYN-SENT cancels the connection: only close one that
	 * exists. */
	if (!s->c || s->closed || s->c->state == IWN_TCP_SYN_SENT)
		return;
	iwn_tcp_close(s->c, W.now);
	s->closed = true;
	s->total = s->written; /* nothing more will come */
}

static void accept_conn(void)
{
	if (!W.s[1].c)
		W.s[1].c = iwn_net_accept(&W.s[1].net, PORT);
}

/* ---- time ---- */

static uint64_t next_deadline(void)
{
	uint64_t a = iwn_net_next_deadline(&W.s[0].net), b = iwn_net_next_deadline(&W.s[1].net);
	return a < b ? a : b;
}

static void timers_at(uint64_t t)
{
	if (t > W.now)
		W.now = t;
	for (int i = 0; i < 2; i++)
		if (iwn_net_next_deadline(&W.s[i].net) <= W.now)
			iwn_net_timers(&W.s[i].net, W.now);
}

static void clock_to(uint64_t target)
{
	for (int rounds = 0; next_deadline() <= target; rounds++) {
		FUZZ_CHECK(rounds < 100000);
		timers_at(next_deadline());
	}
	W.now = target;
}

/* ---- setup ---- */

static void host_init(int i, uint8_t cfgbyte)
{
	struct side *s = &W.s[i];
	struct iwn_net_cfg cfg;
	iwn_net_cfg_default(&cfg);
	uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)(0x10 + i)};
	memcpy(s->mac, mac, 6);
	memcpy(cfg.mac, mac, 6);
	s->ip = 0x0A000001u + (uint32_t)i;
	cfg.ip = s->ip;
	cfg.mtu = cfgbyte & CFG_SMALL_MTU ? 576 : 1500;
	s->mtu = cfg.mtu;
	cfg.max_conns = 4;
	for (int k = 0; k < IWN_ISN_KEY_LEN; k++)
		cfg.isn_key[k] = (uint8_t)(k * 13 + i);
	cfg.tcp.sack = !(cfgbyte & CFG_NO_SACK);
	cfg.tcp.timestamps = !(cfgbyte & CFG_NO_TS);
	cfg.tcp.wscale = !(cfgbyte & CFG_NO_WS);
	if (i == 1 && (cfgbyte & CFG_SMALL_RCVBUF))
		cfg.tcp.rcvbuf = 4096;
	if (i == 0 && (cfgbyte & CFG_BIG_RCVBUF))
		cfg.tcp.rcvbuf = 256 * 1024;
	if (!(cfgbyte & CFG_DELACK))
		cfg.tcp.delack_us = 0;
	cfg.tx = host_tx;
	cfg.tx_arg = s;
	FUZZ_CHECK(iwn_net_init(&s->net, &cfg) == 0);
	s->key = 0xA11CE + (uint64_t)i * 0x10001;
}

/* ---- the honest end ---- */

static bool done(void)
{
	for (int i = 0; i < 2; i++) {
		const struct side *s = &W.s[i], *o = &W.s[1 - i];
		if (!s->c || !s->eof || s->read != o->total || !s->closed)
			return false;
		if (s->c->state != IWN_TCP_CLOSED && s->c->state != IWN_TCP_TIME_WAIT)
			return false;
	}
	return true;
}

static void pump_apps(void)
{
	accept_conn();
	for (int i = 0; i < 2; i++) {
		struct side *s = &W.s[i];
		if (!s->c)
			continue;
		while (s->written < s->total && iwn_tcp_writable(s->c) > 0) {
			uint64_t before = s->written;
			app_send(s, 65536);
			if (s->written == before)
				break;
		}
		if (s->written == s->total)
			app_close(s);
		while (iwn_tcp_readable(s->c))
			app_recv(s, 65536);
		if (iwn_tcp_eof(s->c))
			s->eof = true;
	}
}

static void honest_phase(void)
{
	W.honest = true;
	uint64_t start = W.now;
	/* What is still on the link arrives, in order. */
	for (uint32_t i = 0; i < W.nq; i++)
		W.q[i].at = W.now + LINK_DELAY_US;
	pump_apps();
	for (int events = 0; !done(); events++) {
		FUZZ_CHECK(events < HONEST_EVENTS);
		uint64_t t = next_deadline();
		if (W.nq && W.q[0].at < t)
			t = W.q[0].at;
		if (t == UINT64_MAX || t > start + HONEST_LIMIT_US) {
			for (int i = 0; i < 2; i++) {
				const struct side *s = &W.s[i];
				fprintf(stderr, "side %d: %s err %d written %llu/%llu read %llu eof %d closed %d\n", i,
					s->c ? iwn_tcp_state_name(s->c->state) : "-", s->c ? s->c->err : 0,
					(unsigned long long)s->written, (unsigned long long)s->total,
					(unsigned long long)s->read, s->eof, s->closed);
			}
			FUZZ_CHECK(!"transfer did not complete over an honest link");
		}
		if (t > W.now)
			W.now = t;
		while (W.nq && W.q[0].at <= W.now)
			deliver(0);
		timers_at(W.now);
		pump_apps();
	}
	for (int i = 0; i < 2; i++)
		FUZZ_CHECK(W.s[i].c->err == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_in in = {data, size, 0};
	memset(&W, 0, sizeof(W));
	W.now = START_US;
	W.fuzz_end = START_US + FUZZ_TIME_US;
	uint8_t cfgbyte = nf_u8(&in);
	W.records = cfgbyte & CFG_RECORDS;
	for (int i = 0; i < 2; i++)
		host_init(i, cfgbyte);
	W.s[0].total = 512u * nf_u8(&in);
	W.s[1].total = 512u * nf_u8(&in);
	FUZZ_CHECK(iwn_net_listen(&W.s[1].net, PORT, 2) == 0);
	int err;
	W.s[0].c = iwn_net_connect(&W.s[0].net, W.s[1].ip, PORT, 0, W.now, &err);
	FUZZ_CHECK(W.s[0].c);

	for (int ops = 0; nf_more(&in) && ops < MAX_OPS; ops++) {
		uint8_t op = nf_u8(&in);
		struct side *s = &W.s[op >> 7];
		uint8_t pick = nf_u8(&in); /* read always: the layout stays fixed */
		uint32_t i = W.nq ? pick % W.nq : 0;
		switch (op % OP_COUNT) {
		case OP_DELIVER:
			if (W.nq)
				deliver(i);
			break;
		case OP_DROP:
			if (W.nq)
				remove_frame(i);
			break;
		case OP_DUP:
			if (W.nq && W.nq < QCAP)
				W.q[W.nq++] = W.q[i];
			break;
		case OP_FLIP: {
			uint16_t bit = nf_u16(&in);
			if (W.nq && !W.q[i].flipped) {
				struct qframe *q = &W.q[i];
				uint32_t at = (bit / 8u) % q->len;
				/* An ARP body has no checksum: a flip there is
				 * corruption nothing can detect (it may teach a wrong
				 * address for a whole ARP lifetime, longer than a SYN
				 * is retried). Move it into the Ethernet header, where
				 * it costs the frame at most. */
				if (q->len >= 42 && q->data[12] == 0x08 && q->data[13] == 0x06 && at >= 14 && at < 42)
					at %= 14;
				q->data[at] ^= (uint8_t)(1u << (bit % 8));
				q->flipped = true;
			}
			break;
		}
		case OP_CLOCK: {
			uint8_t sh = nf_u8(&in);
			uint64_t step = (uint64_t)(1 + nf_u8(&in)) << (sh % 16);
			uint64_t target = W.now + step;
			clock_to(target < W.fuzz_end ? target : W.fuzz_end);
			break;
		}
		case OP_SEND:
			app_send(s, nf_u16(&in));
			break;
		case OP_RECV:
			app_recv(s, nf_u16(&in));
			break;
		case OP_FLUSH: {
			uint32_t n = W.nq;
			for (uint32_t k = 0; k < n && W.nq; k++)
				deliver(0);
			break;
		}
		case OP_CLOSE:
			app_close(s);
			break;
		}
		accept_conn();
	}
	honest_phase();
	for (int i = 0; i < 2; i++)
		iwn_net_fini(&W.s[i].net);
	return 0;
}
