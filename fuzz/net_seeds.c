/* Seeds for the net/ fuzz targets:
 *   fuzz_net_seeds <hostile-dir> <pair-dir> <file.pcap>...
 * From each capture, the first TCP connection becomes a fuzz_net_hostile
 * program: the initiator's segments replayed as OP_SEG against the
 * harness's connection (its flags, window, option bytes, payload length
 * and sequence offsets relative to what it sent before, so
 * retransmissions and out-of-order segments stay so), the responder's
 * data as application sends answered by honest ACKs, and the capture's
 * pauses as clock steps. Then hand-written programs for both targets: a
 * clean exchange, in-window RST and SYN, SACK blocks beyond what was
 * sent, a zero window held, window scale 14, ARP and ICMP floods; for
 * the pair, loss, duplication, reordering, bit flips and delay. Prints
 * one line per seed. The op numbers match the targets' enums. */
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap_frame.h"

#define MAX_SEED 4096
#define MAX_SEGS 80

enum { H_SEG, H_DATA, H_ACK, H_CLOCK, H_SEND, H_RECV, H_CLOSE, H_ABORT, H_RELEASE, H_CONNECT, H_SYN, H_ARP,
       H_ICMP, H_RAW, H_RAW_TCP, H_RELEASE_EXTRA };
enum { P_DELIVER, P_DROP, P_DUP, P_FLIP, P_CLOCK, P_SEND, P_RECV, P_FLUSH, P_CLOSE };

struct seed {
	uint8_t b[MAX_SEED];
	size_t n;
};

static void put(struct seed *s, uint8_t v)
{
	if (s->n < MAX_SEED)
		s->b[s->n++] = v;
}

static void put16(struct seed *s, uint16_t v)
{
	put(s, (uint8_t)(v >> 8));
	put(s, (uint8_t)v);
}

static void put32(struct seed *s, uint32_t v)
{
	put16(s, (uint16_t)(v >> 16));
	put16(s, (uint16_t)v);
}

static int write_seed(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	printf("%s (%zu bytes)\n", path, s->n);
	return 0;
}

/* fuzz_net_hostile OP_SEG: sel, flags, modes (seq mode 0: the peer's next
 * + delta << shift; ack mode 1: the host's highest + delta), deltas,
 * window, option mask, payload length, misc (0: honest payload). */
static void h_seg(struct seed *s, uint8_t flags, int32_t seqd, uint16_t win, const uint8_t *opt, uint8_t olen,
		  uint16_t dlen)
{
	uint8_t shift = 0;
	while (shift < 7 && (seqd > 32767 || seqd < -32768)) {
		seqd /= 2;
		shift++;
	}
	put(s, H_SEG);
	put(s, 0);
	put(s, flags);
	put(s, (uint8_t)(shift << 4 | 1 << 2));
	put16(s, (uint16_t)(int16_t)seqd);
	put16(s, 0);
	put16(s, win);
	put(s, olen ? 0x20 : 0);
	put16(s, dlen);
	put(s, 0);
	if (olen) {
		put(s, olen);
		for (uint8_t k = 0; k < olen; k++)
			put(s, opt[k]);
	}
}

static void h_clock(struct seed *s, uint64_t us)
{
	uint8_t sh = 0;
	while ((us >> sh) > 65536 && sh < 15)
		sh++;
	uint64_t v = us >> sh;
	put(s, H_CLOCK);
	put(s, sh);
	put16(s, (uint16_t)(v ? v - 1 : 0));
}

/* ---- captures ---- */

struct conv {
	bool have;
	uint8_t cli[16], srv[16];
	uint16_t cport, sport;
	uint32_t cnext; /* the initiator's next sequence number */
	uint64_t last_us;
	int segs;
	uint8_t cfg;
	struct seed s;
};

static uint8_t cfg_from_syn(const uint8_t *opt, size_t olen)
{
	uint8_t cfg = 2 << 3; /* 64 KiB receive buffer */
	for (size_t i = 0; i < olen;) {
		uint8_t k = opt[i];
		if (k == 0)
			break;
		if (k == 1) {
			i++;
			continue;
		}
		if (i + 1 >= olen || opt[i + 1] < 2)
			break;
		cfg |= k == 8 ? 0x01 : k == 4 ? 0x02 : k == 3 ? 0x04 : 0;
		i += opt[i + 1];
	}
	return cfg;
}

static void conv_frame(struct conv *cv, const uint8_t *p, const struct iwc_frame *f, uint64_t us)
{
	const uint8_t *t = p + f->tcp_off;
	size_t hl = (size_t)(t[12] >> 4) * 4;
	const uint8_t *opt = t + 20;
	uint8_t olen = (uint8_t)(hl > 20 && hl <= 60 ? hl - 20 : 0);
	uint16_t win = (uint16_t)(t[14] << 8 | t[15]);
	if (!cv->have) {
		if ((f->flags & 0x12) != 0x02)
			return;
		cv->have = true;
		memcpy(cv->cli, f->src, 16);
		memcpy(cv->srv, f->dst, 16);
		cv->cport = f->sport;
		cv->sport = f->dport;
		cv->cnext = f->seq + 1;
		cv->last_us = us;
		cv->cfg = cfg_from_syn(opt, olen);
		put(&cv->s, cv->cfg);
		return;
	}
	bool from_cli = f->sport == cv->cport && f->dport == cv->sport && !memcmp(f->src, cv->cli, 16);
	bool from_srv = f->sport == cv->sport && f->dport == cv->cport && !memcmp(f->src, cv->srv, 16);
	if ((!from_cli && !from_srv) || cv->segs >= MAX_SEGS || (f->flags & 0x02))
		return;
	if (us > cv->last_us + 1000)
		h_clock(&cv->s, us - cv->last_us);
	cv->last_us = us;
	cv->segs++;
	if (from_srv) {
		/* Our host plays the responder: its application sends as much,
		 * and the peer acknowledges what it got. */
		if (f->pay_len) {
			put(&cv->s, H_SEND);
			put(&cv->s, 0);
			put16(&cv->s, (uint16_t)(f->pay_len > 65535 ? 65535 : f->pay_len));
		}
		put(&cv->s, H_ACK);
		return;
	}
	size_t dlen = f->pay_len + f->missing;
	if (dlen > 1599)
		dlen = 1599;
	h_seg(&cv->s, f->flags, (int32_t)(f->seq - cv->cnext), win, opt, olen, (uint16_t)dlen);
	uint32_t end = f->seq + (uint32_t)(f->pay_len + f->missing) + (f->flags & 0x01 ? 1 : 0);
	if ((int32_t)(end - cv->cnext) > 0)
		cv->cnext = end;
	if (f->pay_len) {
		put(&cv->s, H_RECV);
		put16(&cv->s, 65535);
	}
}

static int from_pcap(const char *dir, const char *path, int *count)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	if (!pc) {
		fprintf(stderr, "%s: %s\n", path, err);
		return -1;
	}
	int lt = pcap_datalink(pc);
	static struct conv cv;
	memset(&cv, 0, sizeof(cv));
	struct pcap_pkthdr *h;
	const uint8_t *p;
	while (pcap_next_ex(pc, &h, &p) == 1) {
		struct iwc_frame f;
		if (iwc_parse(lt, p, h->caplen, &f) == IWC_TCP && f.family == 4)
			conv_frame(&cv, p, &f, (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec);
	}
	pcap_close(pc);
	if (!cv.have || cv.segs == 0)
		return 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char name[512];
	snprintf(name, sizeof(name), "pcap-%.*s", (int)(strcspn(base, ".")), base);
	(*count)++;
	return write_seed(dir, name, &cv.s);
}

/* ---- hand-written ---- */

static int hostile_seeds(const char *dir)
{
	struct seed s;
	int r = 0;
	/* A clean exchange: data both ways, reads, a close. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x17);
	for (int k = 0; k < 4; k++) {
		put(&s, H_DATA);
		put16(&s, 1400);
		put(&s, H_SEND);
		put(&s, 0);
		put16(&s, 3000);
		put(&s, H_ACK);
		put(&s, H_RECV);
		put16(&s, 65535);
		h_clock(&s, 50000);
	}
	put(&s, H_CLOSE);
	h_clock(&s, 1000000);
	r |= write_seed(dir, "clean", &s);
	/* Blind RST and SYN inside the window (RFC 5961: challenge ACKs),
	 * then an exact RST. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x17);
	h_seg(&s, 0x04, 1000, 0, NULL, 0, 0);
	h_seg(&s, 0x02, 2000, 65535, NULL, 0, 0);
	h_seg(&s, 0x12, 10, 65535, NULL, 0, 0);
	put(&s, H_DATA);
	put16(&s, 500);
	h_seg(&s, 0x04, 0, 0, NULL, 0, 0);
	r |= write_seed(dir, "rst-syn-in-window", &s);
	/* Data beyond the window, overlapping retransmissions, a FIN
	 * ahead of a hole. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x1f);
	h_seg(&s, 0x18, 70000, 65535, NULL, 0, 1000);
	h_seg(&s, 0x18, 300, 65535, NULL, 0, 900);
	h_seg(&s, 0x19, 1500, 65535, NULL, 0, 100);
	h_seg(&s, 0x18, -300, 65535, NULL, 0, 1400);
	put(&s, H_RECV);
	put16(&s, 65535);
	r |= write_seed(dir, "window-edges", &s);
	/* SACK blocks beyond what was sent, and an ACK storm. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x1f);
	uint8_t sack[20] = {1, 1, 5, 18, 0x7f, 0, 0, 0, 0x7f, 0, 0x10, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
	h_seg(&s, 0x10, 0, 65535, sack, sizeof(sack), 0);
	for (int k = 0; k < 30; k++)
		put(&s, H_ACK);
	r |= write_seed(dir, "sack-ack-storm", &s);
	/* A zero window held while the host has data: probes for an hour. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x57);
	put(&s, H_SEND);
	put(&s, 0);
	put16(&s, 20000);
	h_seg(&s, 0x10, 0, 0, NULL, 0, 0);
	for (int k = 0; k < 6; k++)
		h_clock(&s, 600000000);
	r |= write_seed(dir, "zero-window", &s);
	/* Window scale 14 on an active open, answered by a SYN-ACK. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x17);
	put(&s, 0x80 | H_CONNECT);
	put16(&s, 5001);
	put(&s, 0x80 | H_SEG);
	put(&s, 1);
	put(&s, 0x12);
	put(&s, 3 | 1 << 2);
	put16(&s, 0);
	put16(&s, 0);
	put16(&s, 65535);
	put(&s, 0x0F);
	put16(&s, 0);
	put(&s, 0);
	put32(&s, 0x12345678);
	put16(&s, 1460);
	put(&s, 14);
	put16(&s, 5);
	put(&s, 0);
	r |= write_seed(dir, "wscale-14", &s);
	/* ARP from many addresses, and pings of every size. */
	memset(&s, 0, sizeof(s));
	put(&s, 0x17);
	for (int k = 0; k < 20; k++) {
		put(&s, H_ARP);
		put(&s, 0x08 | (k & 1 ? 0x04 : 0));
		put(&s, (uint8_t)(k + 3));
		put(&s, H_ICMP);
		put(&s, k & 1 ? 0x08 : 0);
		put16(&s, (uint16_t)(k * 97));
		put16(&s, 1);
		put16(&s, (uint16_t)k);
		if (k & 1)
			put(&s, (uint8_t)(k + 3));
	}
	r |= write_seed(dir, "arp-icmp", &s);
	return r;
}

static int pair_seeds(const char *dir)
{
	struct seed s;
	int r = 0;
	static const struct {
		const char *name;
		uint8_t cfg;
		uint8_t op;
	} kinds[] = {
		{"fifo", 0x00, P_FLUSH}, {"drops", 0x08, P_DROP},       {"dups", 0x20, P_DUP},
		{"reorder", 0x10, P_DELIVER}, {"flips", 0x40, P_FLIP}, {"small-mtu", 0x83, P_DELIVER},
	};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		memset(&s, 0, sizeof(s));
		put(&s, kinds[k].cfg);
		put(&s, 40);
		put(&s, 24);
		for (int i = 0; i < 60; i++) {
			put(&s, P_SEND);
			put(&s, 0);
			put16(&s, 4000);
			put(&s, 0x80 | P_SEND);
			put(&s, 0);
			put16(&s, 2000);
			put(&s, kinds[k].op);
			put(&s, (uint8_t)(i * 7));
			if (kinds[k].op == P_FLIP)
				put16(&s, (uint16_t)(i * 131));
			put(&s, P_FLUSH);
			put(&s, 0);
			put(&s, P_CLOCK);
			put(&s, 0);
			put(&s, 10);
			put(&s, 5);
			put(&s, 0x80 | P_RECV);
			put(&s, 0);
			put16(&s, 9000);
			put(&s, P_CLOCK);
			put(&s, 0);
			put(&s, 8);
			put(&s, 100);
		}
		r |= write_seed(dir, kinds[k].name, &s);
	}
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s <hostile-dir> <pair-dir> [file.pcap...]\n", argv[0]);
		return 2;
	}
	int r = hostile_seeds(argv[1]) | pair_seeds(argv[2]);
	int n = 0;
	for (int i = 3; i < argc; i++)
		r |= from_pcap(argv[1], argv[i], &n);
	printf("%d seeds from captures\n", n);
	return r ? 1 : 0;
}
