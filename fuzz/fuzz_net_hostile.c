/* Fuzz one net/ host (Ethernet, ARP, IPv4, ICMP, TCP) from a hostile
 * peer on its link. The harness first runs an honest handshake to a
 * listener and leaves data in flight both ways; then the input is a
 * program of operations (see enum op): frames built from raw bytes or
 * from header fields relative to the connection's current sequence
 * numbers (so in-window attacks are reachable; checksums right unless a
 * flag keeps them wrong), clock steps with timers, application calls, an
 * active open, SYNs, ARP and ICMP.
 *
 * Input: byte 0 configures both ends (CFG_* below), then operations, each
 * an opcode byte and its arguments (missing bytes read as 0).
 *
 * Checked after every operation and on every transmitted frame:
 *  - each frame the host sends is well formed (net_fuzz.h) and the data
 *    it carries is what its application wrote at that stream offset, a
 *    FIN only after all of it;
 *  - the application reads only bytes the peer sent at those sequence
 *    numbers, and the very bytes where the harness built them honestly;
 *  - readable bytes within the receive buffer; nothing received beyond
 *    the right edge the host announced; the peer's ISN never changes;
 *  - the next deadline is neither in the past nor absurdly far, and after
 *    timers ran none is due;
 *  - live connections <= max_conns; the ARP table within its slots.
 *
 * NF_TRACE=1 in the environment prints each operation as it runs. */
#include <errno.h>
#include <stdbool.h>

#include "net/net.h"
#include "net/seq.h"
#include "net_fuzz.h"

#define H_IP 0x0A000001u
#define P_IP 0x0A000002u
#define LPORT 4791
#define PPORT 40000
#define P_ISS 0xFFFFF000u /* the peer's stream crosses 2^32 after 4 KiB */
#define KEY_H 0x4855u     /* what the host's application writes */
#define KEY_P 0x5050u     /* what the honest peer sends */
#define STREAM_MAX (256u * 1024)
#define MAX_CONNS 8
#define N_EXTRA 6
#define START_US 1000000000ull
#define DEADLINE_SLACK_US 121000000ull /* RTO max, 2 MSL, FIN-WAIT-2, ARP: all <= 60 s */
#define TIMER_ROUNDS 20000

static const uint8_t H_MAC[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t P_MAC[6] = {0x02, 0, 0, 0, 0, 0x02};

/* Configuration byte. */
#define CFG_TS 0x01
#define CFG_SACK 0x02
#define CFG_WS 0x04
#define CFG_RCVBUF_SHIFT 3 /* 2 bits: 4, 16, 64, 256 KiB */
#define CFG_NO_DELACK 0x20 /* and keepalive + user timeout on */
#define CFG_SMALL_SNDBUF 0x40
#define CFG_SMALL_MTU 0x80

enum op {
	OP_SEG,         /* a TCP segment from header fields (see op_seg) */
	OP_DATA,        /* honest: the peer's next bytes, within the window */
	OP_ACK,         /* honest: the peer acknowledges what it has */
	OP_CLOCK,       /* advance time, run timers */
	OP_SEND,        /* application writes */
	OP_RECV,        /* application reads and checks */
	OP_CLOSE,
	OP_ABORT,
	OP_RELEASE,
	OP_CONNECT,     /* active open to the peer */
	OP_SYN,         /* a SYN to the listener from another port */
	OP_ARP,
	OP_ICMP,
	OP_RAW,         /* a frame from raw bytes */
	OP_RAW_TCP,     /* raw TCP bytes in honest Ethernet + IPv4 */
	OP_RELEASE_EXTRA,
	OP_COUNT
};

/* One connection as the peer sees it. */
struct model {
	struct iwn_tcp_conn *c; /* NULL once released */
	uint16_t hport, pport;
	bool h_iss_known, p_iss_known;
	uint32_t h_iss, p_iss;
	uint32_t p_nxt;        /* the peer's next sequence number */
	uint32_t p_rcv;        /* what the peer has of the host's data, in order */
	uint32_t h_max;        /* highest sequence number the host sent, + 1 */
	bool h_ack_known;
	uint32_t h_ack, h_edge; /* the host's last ACK and announced right edge */
	uint32_t h_tsval, p_ts;
	uint64_t written;      /* bytes the host's application queued */
	uint32_t writing;      /* bytes offered by a send in progress */
	uint64_t read;         /* bytes it read */
	uint8_t sent[STREAM_MAX / 8];  /* peer stream offsets ever covered */
	uint8_t taint[STREAM_MAX / 8]; /* ... with bytes not from the pattern */
};

struct harness {
	struct iwn_net net;
	struct iwn_net_cfg cfg;
	uint8_t cfgbyte;
	uint64_t now;
	struct model m[2]; /* 0: the accepted connection, 1: an active open */
	struct iwn_tcp_conn *extra[N_EXTRA];
	uint32_t last_syn_seq; /* the latest SYN the host sent, any connection */
};

static struct harness H;

static bool bit_get(const uint8_t *map, uint32_t off)
{
	return map[off / 8] >> (off % 8) & 1;
}

static void bit_set(uint8_t *map, uint32_t off)
{
	map[off / 8] |= (uint8_t)(1u << (off % 8));
}

/* ---- what the host transmits ---- */

static struct model *model_for(uint16_t hport, uint16_t pport)
{
	/* A closed connection sends nothing and takes nothing; a new one
	 * may reuse its ports. */
	for (int i = 0; i < 2; i++)
		if (H.m[i].c && H.m[i].c->state != IWN_TCP_CLOSED && H.m[i].hport == hport && H.m[i].pport == pport)
			return &H.m[i];
	return NULL;
}

static void host_tx(void *arg, const uint8_t *f, uint32_t len)
{
	(void)arg;
	struct nf_tx t;
	nf_check_tx(f, len, H_MAC, H_IP, H.cfg.mtu, &t);
	if (!t.is_tcp)
		return;
	if (t.flags & 0x02)
		H.last_syn_seq = t.seq;
	struct model *m = t.dst == P_IP ? model_for(t.sport, t.dport) : NULL;
	if (!m || (t.flags & 0x04))
		return;
	bool syn = t.flags & 0x02, fin = t.flags & 0x01;
	if (syn) {
		/* Our SYN (or SYN-ACK) repeats its ISN. */
		FUZZ_CHECK(!m->h_iss_known || t.seq == m->h_iss);
		m->h_iss = t.seq;
		m->h_iss_known = true;
		m->p_rcv = t.seq + 1;
	}
	if (!m->h_iss_known)
		return;
	uint32_t off = t.seq - (m->h_iss + 1);
	if (t.plen) {
		FUZZ_CHECK((uint64_t)off + t.plen <= m->written + m->writing);
		for (uint32_t k = 0; k < t.plen; k++)
			FUZZ_CHECK(t.payload[k] == nf_pat(KEY_H, (uint64_t)off + k));
	}
	if (fin)
		FUZZ_CHECK((uint64_t)off + t.plen == m->written);
	uint32_t end = t.seq + syn + t.plen + fin;
	if (iwn_seq_gt(end, m->h_max) || m->h_max == 0)
		m->h_max = end;
	if (iwn_seq_le(t.seq, m->p_rcv) && iwn_seq_gt(end, m->p_rcv))
		m->p_rcv = end;
	if (t.flags & 0x10) {
		uint8_t ws = syn || !m->c->ws_on ? 0 : m->c->rcv_ws;
		m->h_ack_known = true;
		m->h_ack = t.ack;
		m->h_edge = t.ack + ((uint32_t)t.win << ws);
	}
	if (t.has_ts)
		m->h_tsval = t.tsval;
}

/* ---- frames from the peer ---- */

static void inject(const uint8_t *f, uint32_t len)
{
	iwn_net_input(&H.net, f, len, H.now);
}

struct seg {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	uint8_t opt[40];
	uint8_t olen;
	const uint8_t *data;
	uint32_t dlen;
};

/* Builds and sends a segment from P_IP (or src) to the host. */
static void send_seg(const struct seg *s, uint32_t src, bool bad_csum)
{
	static uint8_t f[14 + 20 + 60 + 65536];
	uint32_t hl = 20 + s->olen;
	uint32_t len = hl + s->dlen;
	if (20 + len > 0xFFFF)
		return;
	uint8_t *t = f + 34;
	iw_put_be16(t, s->sport);
	iw_put_be16(t + 2, s->dport);
	iw_put_be32(t + 4, s->seq);
	iw_put_be32(t + 8, s->ack);
	t[12] = (uint8_t)(hl / 4 << 4);
	t[13] = s->flags;
	iw_put_be16(t + 14, s->win);
	iw_put_be16(t + 18, 0);
	memcpy(t + 20, s->opt, s->olen);
	if (s->dlen)
		memcpy(t + hl, s->data, s->dlen);
	nf_tcp_csum(t, len, src, H_IP);
	if (bad_csum)
		t[16] ^= 0x5A;
	nf_ip4(f + 14, src, H_IP, 6, (uint16_t)len);
	nf_eth(f, H_MAC, P_MAC, 0x0800);
	inject(f, 34 + len);
}

/* Option bytes: NOP-padded, as peers usually send them. */
static void opt_mss(struct seg *s, uint16_t mss)
{
	uint8_t *o = s->opt + s->olen;
	o[0] = 2;
	o[1] = 4;
	iw_put_be16(o + 2, mss);
	s->olen += 4;
}

static void opt_ws(struct seg *s, uint8_t ws)
{
	uint8_t *o = s->opt + s->olen;
	o[0] = 1;
	o[1] = 3;
	o[2] = 3;
	o[3] = ws;
	s->olen += 4;
}

static void opt_sack_ok(struct seg *s)
{
	uint8_t *o = s->opt + s->olen;
	o[0] = 1;
	o[1] = 1;
	o[2] = 4;
	o[3] = 2;
	s->olen += 4;
}

static void opt_ts(struct seg *s, uint32_t val, uint32_t ecr)
{
	uint8_t *o = s->opt + s->olen;
	o[0] = 1;
	o[1] = 1;
	o[2] = 8;
	o[3] = 10;
	iw_put_be32(o + 4, val);
	iw_put_be32(o + 8, ecr);
	s->olen += 12;
}

static void opt_sack(struct seg *s, const uint32_t (*b)[2], uint8_t n)
{
	uint8_t *o = s->opt + s->olen;
	o[0] = 1;
	o[1] = 1;
	o[2] = 5;
	o[3] = (uint8_t)(2 + 8 * n);
	for (uint8_t k = 0; k < n; k++) {
		iw_put_be32(o + 4 + 8 * k, b[k][0]);
		iw_put_be32(o + 8 + 8 * k, b[k][1]);
	}
	s->olen = (uint8_t)(s->olen + 4 + 8 * n);
}

static bool ts_on(const struct model *m)
{
	return m->c && m->c->ts_on;
}

/* An active open learns the peer's ISN from the connection once it is
 * synchronized (the harness's SYN-ACK may have been any of several). */
static void learn_peer_iss(struct model *m)
{
	if (m->p_iss_known || !m->c || m->c->state == IWN_TCP_SYN_SENT || m->c->state == IWN_TCP_CLOSED)
		return;
	m->p_iss = m->c->irs;
	m->p_iss_known = true;
	m->p_nxt = m->c->irs + 1;
}

/* Marks which peer stream offsets a segment covers (data after a SYN
 * starts one later) and whether with pattern bytes. */
static void mark_sent(struct model *m, uint32_t seq, bool syn, uint32_t n, bool honest)
{
	if (!m->p_iss_known)
		return;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t off = seq + (syn ? 1 : 0) + k - (m->p_iss + 1);
		if (off >= STREAM_MAX)
			continue;
		bit_set(m->sent, off);
		if (!honest)
			bit_set(m->taint, off);
	}
}

/* Honest segment header from the peer of m. */
static void seg_init(struct seg *s, const struct model *m, uint32_t seq, uint8_t flags)
{
	memset(s, 0, sizeof(*s));
	s->sport = m->pport;
	s->dport = m->hport;
	s->seq = seq;
	s->ack = m->p_rcv;
	s->flags = flags;
	s->win = 0xFFFF;
}

static void seg_ts(struct seg *s, struct model *m)
{
	if (ts_on(m))
		opt_ts(s, ++m->p_ts, m->h_tsval);
}

static void honest_data(struct model *m, uint32_t want)
{
	if (!m->c || !m->h_ack_known || !m->p_iss_known)
		return;
	uint32_t room = iwn_seq_gt(m->h_edge, m->p_nxt) ? m->h_edge - m->p_nxt : 0;
	uint32_t off = m->p_nxt - (m->p_iss + 1);
	uint32_t n = want < room ? want : room;
	uint32_t mss = H.cfg.mtu - 40u - 12u;
	if (n > mss)
		n = mss;
	if (off >= STREAM_MAX || n == 0)
		return;
	if (n > STREAM_MAX - off)
		n = STREAM_MAX - off;
	static uint8_t buf[1500];
	nf_fill(KEY_P, off, buf, n);
	struct seg s;
	seg_init(&s, m, m->p_nxt, 0x18);
	seg_ts(&s, m);
	s.data = buf;
	s.dlen = n;
	mark_sent(m, s.seq, false, n, true);
	m->p_nxt += n;
	send_seg(&s, P_IP, false);
}

static void honest_ack(struct model *m)
{
	if (!m->c || !m->p_iss_known)
		return;
	struct seg s;
	seg_init(&s, m, m->p_nxt, 0x10);
	seg_ts(&s, m);
	send_seg(&s, P_IP, false);
}

/* A segment from header fields. Sequence and acknowledgment numbers are
 * picked relative to the connection (so the window is within reach),
 * options from a mask, the payload honest (pattern at its offsets) or
 * raw. */
static void op_seg(struct nf_in *in)
{
	uint8_t sel = nf_u8(in);
	struct model *m = &H.m[sel & 1];
	uint8_t flags = nf_u8(in);
	uint8_t modes = nf_u8(in);
	uint32_t seqd = (uint32_t)(int32_t)(int16_t)nf_u16(in) << (modes >> 4 & 7);
	uint32_t ackd = (uint32_t)(int32_t)(int16_t)nf_u16(in);
	uint16_t win = nf_u16(in);
	uint8_t omask = nf_u8(in);
	uint16_t dlen = nf_u16(in) % 1600;
	uint8_t misc = nf_u8(in);

	struct seg s;
	seg_init(&s, m, 0, flags);
	switch (modes & 3) {
	case 0:
		s.seq = m->p_nxt + seqd;
		break;
	case 1:
		s.seq = m->h_ack + seqd; /* the host's rcv_nxt as it last told us */
		break;
	case 2:
		s.seq = m->h_edge + seqd; /* around the right edge */
		break;
	default:
		s.seq = nf_u32(in);
		break;
	}
	switch (modes >> 2 & 3) {
	case 0:
		s.ack = m->p_rcv + ackd;
		break;
	case 1:
		s.ack = m->h_max + ackd;
		break;
	case 2:
		s.ack = H.last_syn_seq + 1 + ackd;
		break;
	default:
		s.ack = nf_u32(in);
		break;
	}
	s.win = win;
	if (misc & 0x01) {
		/* Another port: the listener from a new source, or anywhere. */
		s.sport = nf_u16(in);
		s.dport = misc & 0x02 ? nf_u16(in) : LPORT;
	}
	if (omask & 0x01)
		opt_mss(&s, nf_u16(in));
	if (omask & 0x02)
		opt_ws(&s, nf_u8(in));
	if (omask & 0x04)
		opt_sack_ok(&s);
	if (omask & 0x08) {
		uint32_t v = m->p_ts + (uint32_t)(int32_t)(int16_t)nf_u16(in);
		uint32_t e = m->h_tsval + (uint32_t)(int32_t)(int8_t)nf_u8(in);
		if (misc & 0x04) {
			v = nf_u32(in);
			e = nf_u32(in);
		}
		opt_ts(&s, v, e);
		if (iwn_seq_gt(v, m->p_ts))
			m->p_ts = v;
	}
	if (omask & 0x10) {
		/* SACK blocks over the host's data: relative to what the peer
		 * has, any length. */
		uint8_t n = (uint8_t)(1 + nf_u8(in) % 4);
		if (s.olen + 4 + 8 * n > 40)
			n = (uint8_t)((40 - s.olen - 4) / 8);
		uint32_t b[4][2];
		for (uint8_t k = 0; k < n; k++) {
			b[k][0] = m->p_rcv + ((uint32_t)(int32_t)(int16_t)nf_u16(in) << (omask >> 6));
			b[k][1] = b[k][0] + nf_u16(in);
		}
		if (n)
			opt_sack(&s, (const uint32_t(*)[2])b, n);
	}
	if (omask & 0x20) {
		/* Raw option bytes after the structured ones. */
		uint8_t k = (uint8_t)(nf_u8(in) % (41 - s.olen));
		nf_bytes(in, s.opt + s.olen, k);
		s.olen = (uint8_t)((s.olen + k + 3) & ~3u);
	}
	/* Which tracked connection it reaches, if any: its bytes are
	 * marked, honest ones are the pattern at their offsets. */
	uint32_t src = misc & 0x10 ? nf_u32(in) : P_IP;
	struct model *tm = src == P_IP ? model_for(s.dport, s.sport) : NULL;
	if (tm)
		learn_peer_iss(tm);
	static uint8_t buf[1600];
	bool syn = flags & 0x02;
	bool honest = !(misc & 0x08) && tm && tm->p_iss_known;
	if (honest) {
		/* Offsets modulo 2^32, as mark_sent counts them: a segment may
		 * start before the stream does. */
		uint32_t off = s.seq + (syn ? 1 : 0) - (tm->p_iss + 1);
		for (uint32_t k = 0; k < dlen; k++)
			buf[k] = nf_pat(KEY_P, (uint32_t)(off + k));
	}
	else
		nf_bytes(in, buf, dlen);
	s.data = buf;
	s.dlen = dlen;
	if (tm) {
		mark_sent(tm, s.seq, syn, dlen, honest);
		/* The peer's stream goes on past anything it sent. */
		uint32_t end = s.seq + syn + dlen;
		if (tm->p_iss_known && iwn_seq_gt(end, tm->p_nxt) && end - tm->p_nxt < 0x10000)
			tm->p_nxt = end;
	}
	send_seg(&s, src, misc & 0x20);
}

/* ---- other frames ---- */

static void op_arp(struct nf_in *in)
{
	uint8_t mode = nf_u8(in);
	uint8_t f[60];
	memset(f, 0, sizeof(f));
	uint8_t sha[6];
	memcpy(sha, P_MAC, 6);
	if (mode & 0x01)
		nf_bytes(in, sha, 6);
	nf_eth(f, mode & 0x02 ? H_MAC : (const uint8_t *)"\xff\xff\xff\xff\xff\xff", sha, 0x0806);
	uint8_t *a = f + 14;
	iw_put_be16(a, 1);
	iw_put_be16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	iw_put_be16(a + 6, mode & 0x04 ? 2 : 1);
	memcpy(a + 8, sha, 6);
	uint32_t spa = P_IP;
	switch (mode >> 3 & 3) {
	case 1:
		spa = 0x0A000000u | nf_u8(in); /* floods the table */
		break;
	case 2:
		spa = H_IP; /* someone claims our address */
		break;
	case 3:
		spa = nf_u32(in);
		break;
	default:
		break;
	}
	iw_put_be32(a + 14, spa);
	iw_put_be32(a + 24, mode & 0x20 ? nf_u32(in) : H_IP);
	if (mode & 0x40)
		nf_bytes(in, a, 8); /* hardware/protocol types, lengths, operation */
	inject(f, mode & 0x80 ? 14u + nf_u8(in) % 47 : sizeof(f));
}

static void op_icmp(struct nf_in *in)
{
	uint8_t mode = nf_u8(in);
	uint16_t n = (uint16_t)(8 + nf_u16(in) % 1600);
	static uint8_t f[14 + 20 + 8 + 1600];
	uint8_t *m = f + 34;
	memset(m, 0, n);
	m[0] = mode & 0x01 ? nf_u8(in) : 8;
	m[1] = mode & 0x02 ? nf_u8(in) : 0;
	iw_put_be16(m + 4, nf_u16(in));
	iw_put_be16(m + 6, nf_u16(in));
	for (uint32_t k = 8; k < n; k++)
		m[k] = (uint8_t)k;
	iw_put_be16(m + 2, nf_fold(nf_sum(0, m, n)));
	if (mode & 0x04)
		m[2] ^= 0x33;
	uint32_t src = P_IP;
	if (mode & 0x08)
		src = 0x0A000000u | nf_u8(in);
	nf_ip4(f + 14, src, H_IP, 1, n);
	nf_eth(f, H_MAC, P_MAC, 0x0800);
	inject(f, 34u + n);
}

/* Marks the data of a raw frame that may reach a tracked connection:
 * any IPv4/TCP from the peer, read leniently (checksums unchecked). */
static void mark_raw(const uint8_t *f, uint32_t len)
{
	if (len < 34 || iw_get_be16(f + 12) != 0x0800 || f[14 + 9] != 6 || iw_get_be32(f + 26) != P_IP)
		return;
	uint32_t ihl = (uint32_t)(f[14] & 15) * 4, tot = iw_get_be16(f + 16);
	if (tot > len - 14)
		tot = len - 14;
	if (ihl < 20 || tot < ihl + 20)
		return;
	const uint8_t *t = f + 14 + ihl;
	uint32_t slen = tot - ihl, hl = (uint32_t)(t[12] >> 4) * 4;
	struct model *m = model_for(iw_get_be16(t + 2), iw_get_be16(t));
	if (!m || hl < 20 || hl > slen)
		return;
	learn_peer_iss(m);
	mark_sent(m, iw_get_be32(t + 4), t[13] & 0x02, slen - hl, false);
}

static void op_raw(struct nf_in *in, bool wrap)
{
	uint8_t mode = nf_u8(in);
	uint16_t n = nf_u16(in) % 1600;
	static uint8_t f[34 + 1600];
	if (!wrap) {
		nf_bytes(in, f, n);
		mark_raw(f, n);
		inject(f, n);
		return;
	}
	/* Raw TCP bytes in honest Ethernet and IPv4, the TCP checksum fixed
	 * unless mode says keep it; optionally an IP length that lies. */
	uint8_t *t = f + 34;
	nf_bytes(in, t, n);
	if (n >= 20 && !(mode & 0x01))
		nf_tcp_csum(t, n, P_IP, H_IP);
	nf_ip4(f + 14, P_IP, H_IP, 6, n);
	if (mode & 0x02) {
		iw_put_be16(f + 16, (uint16_t)(20 + n + (mode >> 4)));
		iw_put_be16(f + 24, 0);
		iw_put_be16(f + 24, nf_fold(nf_sum(0, f + 14, 20)));
	}
	nf_eth(f, H_MAC, P_MAC, 0x0800);
	mark_raw(f, 34u + n);
	inject(f, 34u + n);
}

/* ---- time ---- */

/* When a timer check fails: every timer the harness can see. */
static void dump_timers(void)
{
	const struct iwn_arp_cache *a = &H.net.arp;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->e[i].state)
			fprintf(stderr, "  arp %u: state %u deadline %llu refresh %llu used %llu learned %llu\n", i,
				a->e[i].state, (unsigned long long)a->e[i].deadline,
				(unsigned long long)a->e[i].refresh_at, (unsigned long long)a->e[i].used,
				(unsigned long long)a->e[i].learned);
	struct iwn_tcp_conn *cs[2 + N_EXTRA] = {H.m[0].c, H.m[1].c};
	memcpy(cs + 2, H.extra, sizeof(H.extra));
	for (int i = 0; i < 2 + N_EXTRA; i++)
		if (cs[i])
			fprintf(stderr, "  conn %d: %s rto %llu%s delack %llu tw %llu next %llu\n", i,
				iwn_tcp_state_name(cs[i]->state), (unsigned long long)cs[i]->rto_at,
				cs[i]->persist ? " (persist)" : "", (unsigned long long)cs[i]->delack_at,
				(unsigned long long)cs[i]->tw_at, (unsigned long long)iwn_tcp_next_deadline(cs[i]));
}

static void run_timers_until(uint64_t target)
{
	for (int rounds = 0;; rounds++) {
		uint64_t d = iwn_net_next_deadline(&H.net);
		if (d > target)
			break;
		FUZZ_CHECK(rounds < TIMER_ROUNDS);
		if (d > H.now)
			H.now = d;
		iwn_net_timers(&H.net, H.now);
		/* What was due has been handled. A segment sent by a TCP timer
		 * may make an ARP refresh due (it uses the entry after the ARP
		 * timers looked): one more call takes that. */
		if (iwn_net_next_deadline(&H.net) <= H.now)
			iwn_net_timers(&H.net, H.now);
		if (iwn_net_next_deadline(&H.net) <= H.now)
			dump_timers();
		FUZZ_CHECK(iwn_net_next_deadline(&H.net) > H.now);
	}
	H.now = target;
}

/* ---- application ---- */

static void app_send(struct model *m, uint32_t n, bool record)
{
	if (!m->c)
		return;
	static uint8_t buf[70000];
	if (n > sizeof(buf))
		n = sizeof(buf);
	nf_fill(KEY_H, m->written, buf, n);
	m->writing = n; /* segments leave during the call */
	int r = record ? iwn_tcp_send_record(m->c, buf, n, H.now) : iwn_tcp_send(m->c, buf, n, H.now);
	m->writing = 0;
	if (r > 0) {
		FUZZ_CHECK((uint32_t)r <= n);
		m->written += (uint32_t)r;
	}
}

static void app_recv(struct model *m, uint32_t n)
{
	if (!m->c)
		return;
	static uint8_t buf[70000];
	if (n > sizeof(buf))
		n = sizeof(buf);
	uint32_t before = iwn_tcp_readable(m->c);
	uint32_t k = iwn_tcp_recv(m->c, buf, n, H.now);
	FUZZ_CHECK(k <= n && k <= before);
	for (uint32_t i = 0; i < k; i++) {
		uint64_t off = m->read + i;
		if (off >= STREAM_MAX)
			break; /* beyond what the harness tracks */
		FUZZ_CHECK(bit_get(m->sent, (uint32_t)off));
		if (!bit_get(m->taint, (uint32_t)off))
			FUZZ_CHECK(buf[i] == nf_pat(KEY_P, off));
	}
	m->read += k;
}

static void release(struct model *m)
{
	if (!m->c)
		return;
	iwn_net_release(&H.net, m->c, H.now);
	m->c = NULL;
}

static void op_connect(struct nf_in *in)
{
	struct model *m = &H.m[1];
	uint16_t rport = nf_u16(in);
	if (m->c || rport == 0)
		return;
	memset(m, 0, sizeof(*m));
	int err;
	/* The model must exist before the SYN goes out. */
	m->pport = rport;
	m->p_ts = 7;
	struct iwn_tcp_conn *c = iwn_net_connect(&H.net, P_IP, rport, 0, H.now, &err);
	if (!c) {
		FUZZ_CHECK(err == -EMFILE || err == -EADDRINUSE || err == -ENOMEM);
		return;
	}
	/* Ports are known only now; its SYN went out before. */
	m->c = c;
	m->hport = c->lport;
	m->h_iss = c->iss;
	m->h_iss_known = true;
	m->h_max = c->iss + 1;
	m->p_rcv = c->iss + 1;
}

static void op_syn(struct nf_in *in)
{
	struct model *m = &H.m[0];
	struct seg s;
	seg_init(&s, m, nf_u32(in), 0x02);
	s.sport = (uint16_t)(1024 + nf_u16(in) % 60000);
	s.ack = 0;
	opt_mss(&s, 1460);
	if (H.cfgbyte & CFG_WS)
		opt_ws(&s, 7);
	if (H.cfgbyte & CFG_SACK)
		opt_sack_ok(&s);
	if (H.cfgbyte & CFG_TS)
		opt_ts(&s, 1, 0);
	send_seg(&s, P_IP, false);
}

static void accept_extras(void)
{
	struct iwn_tcp_conn *c;
	while ((c = iwn_net_accept(&H.net, LPORT)) != NULL) {
		int i = 0;
		while (i < N_EXTRA && H.extra[i])
			i++;
		if (i == N_EXTRA)
			iwn_net_release(&H.net, c, H.now);
		else
			H.extra[i] = c;
	}
}

/* ---- invariants ---- */

static void check_conn(struct model *m)
{
	struct iwn_tcp_conn *c = m->c;
	if (!c)
		return;
	FUZZ_CHECK(iwn_tcp_readable(c) <= c->cfg.rcvbuf);
	if (m->p_iss_known && c->state != IWN_TCP_SYN_SENT && c->state != IWN_TCP_CLOSED)
		FUZZ_CHECK(c->irs == m->p_iss);
	if (c->state == IWN_TCP_SYN_SENT || c->state == IWN_TCP_CLOSED)
		return;
	/* Nothing taken beyond the right edge announced (the peer's FIN may
	 * sit on it). */
	uint32_t edge = c->rcv_adv + (c->fin_rcvd ? 1 : 0);
	FUZZ_CHECK(iwn_seq_le(c->rcv_nxt, edge));
	/* The announced window is what the buffer holds free, up to the
	 * rounding of the window scale. */
	uint32_t wnd = c->rcv_adv - c->rcv_nxt;
	if (!c->fin_rcvd)
		FUZZ_CHECK(wnd <= iwn_rcvbuf_window(&c->rb) + (1u << c->rcv_ws));
	/* Everything in order that the app has not read is in the buffer. */
	if (m->p_iss_known && !c->fin_rcvd)
		FUZZ_CHECK(c->rcv_nxt - (m->p_iss + 1) == (uint32_t)(m->read + iwn_tcp_readable(c)));
}

static void check_all(void)
{
	for (int i = 0; i < 2; i++) {
		learn_peer_iss(&H.m[i]);
		check_conn(&H.m[i]);
	}
	for (int i = 0; i < N_EXTRA; i++)
		if (H.extra[i])
			FUZZ_CHECK(iwn_tcp_readable(H.extra[i]) <= H.extra[i]->cfg.rcvbuf);
	FUZZ_CHECK(iwn_net_conn_count(&H.net) <= H.cfg.max_conns);
	const struct iwn_arp_cache *a = &H.net.arp;
	FUZZ_CHECK(a->n == H.cfg.arp_entries);
	for (uint32_t i = 0; i < a->n; i++)
		FUZZ_CHECK(a->e[i].pending_len <= a->pending_cap);
	/* A deadline may fall due without time passing (an ARP entry
	 * used after its refresh point wants refreshing at once): a driver
	 * runs the timers then, and they must take it off. */
	uint64_t d = iwn_net_next_deadline(&H.net);
	if (d <= H.now) {
		iwn_net_timers(&H.net, H.now);
		d = iwn_net_next_deadline(&H.net);
		FUZZ_CHECK(d > H.now);
	}
	FUZZ_CHECK(d == UINT64_MAX || d <= H.now + DEADLINE_SLACK_US);
}

/* ---- setup ---- */

static void setup(uint8_t cfgbyte)
{
	memset(&H, 0, sizeof(H));
	H.cfgbyte = cfgbyte;
	H.now = START_US;
	struct iwn_net_cfg *cfg = &H.cfg;
	iwn_net_cfg_default(cfg);
	memcpy(cfg->mac, H_MAC, 6);
	cfg->ip = H_IP;
	cfg->mtu = cfgbyte & CFG_SMALL_MTU ? 576 : 1500;
	cfg->max_conns = MAX_CONNS;
	for (int k = 0; k < IWN_ISN_KEY_LEN; k++)
		cfg->isn_key[k] = (uint8_t)(k * 7 + 1);
	cfg->tcp.rcvbuf = 4096u << (2 * (cfgbyte >> CFG_RCVBUF_SHIFT & 3));
	cfg->tcp.sndbuf = cfgbyte & CFG_SMALL_SNDBUF ? 4096 : 65536;
	if (cfgbyte & CFG_NO_DELACK) {
		/* And dead-peer detection on, so its timers are fuzzed too. */
		cfg->tcp.delack_us = 0;
		cfg->tcp.keepalive_us = 20000000;
		cfg->tcp.keepalive_probes = 3;
		cfg->tcp.user_timeout_us = 90000000;
	}
	cfg->tx = host_tx;
	FUZZ_CHECK(iwn_net_init(&H.net, cfg) == 0);
	FUZZ_CHECK(iwn_net_listen(&H.net, LPORT, 4) == 0);

	/* The peer introduces itself (ARP request for the host). */
	uint8_t f[60];
	memset(f, 0, sizeof(f));
	nf_eth(f, (const uint8_t *)"\xff\xff\xff\xff\xff\xff", P_MAC, 0x0806);
	iw_put_be16(f + 14, 1);
	iw_put_be16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	iw_put_be16(f + 20, 1);
	memcpy(f + 22, P_MAC, 6);
	iw_put_be32(f + 28, P_IP);
	iw_put_be32(f + 38, H_IP);
	inject(f, sizeof(f));

	/* Handshake. */
	struct model *m = &H.m[0];
	m->hport = LPORT;
	m->pport = PPORT;
	m->p_iss = P_ISS;
	m->p_iss_known = true;
	m->p_nxt = P_ISS;
	m->p_ts = 1000;
	/* The SYN-ACK goes to the model before accept: point it at a stand-in
	 * connection state for the window scale until then. */
	static struct iwn_tcp_conn pre;
	memset(&pre, 0, sizeof(pre));
	pre.state = IWN_TCP_SYN_RCVD;
	m->c = &pre;
	struct seg s;
	seg_init(&s, m, P_ISS, 0x02);
	s.ack = 0;
	opt_mss(&s, (uint16_t)(H.cfg.mtu - 40));
	if (cfgbyte & CFG_WS)
		opt_ws(&s, 7);
	if (cfgbyte & CFG_SACK)
		opt_sack_ok(&s);
	if (cfgbyte & CFG_TS)
		opt_ts(&s, m->p_ts, 0);
	send_seg(&s, P_IP, false);
	FUZZ_CHECK(m->h_iss_known);
	m->p_nxt = P_ISS + 1;
	m->c = NULL;
	/* The final ACK needs ts_on of the real connection: build it by hand. */
	seg_init(&s, m, m->p_nxt, 0x10);
	s.sport = PPORT;
	s.dport = LPORT;
	s.win = cfgbyte & CFG_WS ? 512 : 0xFFFF; /* 64 KiB either way */
	if (cfgbyte & CFG_TS)
		opt_ts(&s, ++m->p_ts, m->h_tsval);
	send_seg(&s, P_IP, false);
	m->c = iwn_net_accept(&H.net, LPORT);
	FUZZ_CHECK(m->c && m->c->state == IWN_TCP_ESTABLISHED);
	/* The window the SYN-ACK announced was unscaled; that stays valid. */

	/* Data in flight both ways: the host sends, the peer acknowledges
	 * part of it; the peer sends two segments in order and one beyond a
	 * hole; nobody reads yet. */
	app_send(m, 6000, false);
	struct seg a;
	seg_init(&a, m, m->p_nxt, 0x10);
	a.ack = m->h_iss + 1 + 700;
	a.win = s.win;
	seg_ts(&a, m);
	send_seg(&a, P_IP, false);
	honest_data(m, 400);
	honest_data(m, 400);
	uint32_t hole = m->p_nxt;
	m->p_nxt += 300;
	honest_data(m, 300);
	m->p_nxt = hole;
	check_all();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_in in = {data, size, 0};
	setup(nf_u8(&in));
	int ops = 0;
	static int trace = -1;
	if (trace < 0)
		trace = getenv("NF_TRACE") != NULL;
	while (nf_more(&in) && ops++ < 2000) {
		uint8_t op = nf_u8(&in);
		if (trace)
			fprintf(stderr, "op %u on %u at %llu (next deadline %llu)\n", op % OP_COUNT, op >> 7,
				(unsigned long long)H.now, (unsigned long long)iwn_net_next_deadline(&H.net));
		struct model *m = &H.m[op >> 7];
		switch (op % OP_COUNT) {
		case OP_SEG:
			op_seg(&in);
			break;
		case OP_DATA:
			honest_data(m, nf_u16(&in));
			break;
		case OP_ACK:
			honest_ack(m);
			break;
		case OP_CLOCK: {
			uint8_t sh = nf_u8(&in);
			/* At most about 36 minutes: probes of a window held shut
			 * go on forever, so a step must stay bounded. */
			uint64_t step = (uint64_t)(1 + nf_u16(&in)) << (sh % 16);
			run_timers_until(H.now + step);
			break;
		}
		case OP_SEND: {
			uint8_t mode = nf_u8(&in);
			app_send(m, nf_u16(&in), mode & 1);
			break;
		}
		case OP_RECV:
			app_recv(m, nf_u16(&in));
			break;
		case OP_CLOSE:
			if (m->c)
				iwn_tcp_close(m->c, H.now);
			break;
		case OP_ABORT:
			if (m->c)
				iwn_tcp_abort(m->c, H.now);
			break;
		case OP_RELEASE:
			release(m);
			break;
		case OP_CONNECT:
			op_connect(&in);
			break;
		case OP_SYN:
			op_syn(&in);
			break;
		case OP_ARP:
			op_arp(&in);
			break;
		case OP_ICMP:
			op_icmp(&in);
			break;
		case OP_RAW:
			op_raw(&in, false);
			break;
		case OP_RAW_TCP:
			op_raw(&in, true);
			break;
		case OP_RELEASE_EXTRA: {
			uint8_t i = nf_u8(&in) % N_EXTRA;
			if (H.extra[i])
				iwn_net_release(&H.net, H.extra[i], H.now);
			H.extra[i] = NULL;
			break;
		}
		}
		accept_extras();
		check_all();
	}
	/* The rest of the stream reads back right too. */
	for (int i = 0; i < 2; i++)
		while (H.m[i].c && iwn_tcp_readable(H.m[i].c))
			app_recv(&H.m[i], 1u << 16);
	iwn_net_fini(&H.net);
	return 0;
}
