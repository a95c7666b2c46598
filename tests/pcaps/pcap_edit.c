/* pcap_edit: the TCP trouble real captures contain, made on purpose from a
 * real capture, for tests/pcaps/tcp-variants.
 *
 *   pcap_edit IN list               one line per packet: N DIR LEN SEQ
 *                                   (DIR = src:port>dst:port, LEN = TCP
 *                                   payload; non-TCP packets: N - 0 0)
 *   pcap_edit IN OUT drop K         without packet K (1-based)
 *   pcap_edit IN OUT dup K          packet K twice (a retransmission)
 *   pcap_edit IN OUT swap K         packets K and K+1 swapped
 *   pcap_edit IN OUT overlap K      before packet K, a copy of it cut to
 *                                   the first half of its payload (K then
 *                                   overlaps what was already seen)
 *   pcap_edit IN OUT from K         packets K.. only (starts mid-stream)
 *
 * Ethernet + IPv4 + TCP (what QEMU's filter-dump writes). Exit 0, or 2 on
 * bad usage or input. */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pkt {
	struct pcap_pkthdr h;
	uint8_t *data;
};

static struct pkt *pkts;
static size_t npkts;

static int load(const char *path, int *dlt, int *snap)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	size_t cap = 0;
	pcap_t *p = pcap_open_offline(path, err);
	int rc;

	if (!p) {
		fprintf(stderr, "pcap_edit: %s\n", err);
		return -1;
	}
	*dlt = pcap_datalink(p);
	*snap = pcap_snapshot(p);
	while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
		if (npkts == cap) {
			struct pkt *n;

			cap = cap ? cap * 2 : 256;
			n = realloc(pkts, cap * sizeof(*n));
			if (!n)
				goto oom;
			pkts = n;
		}
		pkts[npkts].h = *h;
		pkts[npkts].data = malloc(h->caplen ? h->caplen : 1);
		if (!pkts[npkts].data)
			goto oom;
		memcpy(pkts[npkts].data, d, h->caplen);
		npkts++;
	}
	pcap_close(p);
	return rc == PCAP_ERROR ? -1 : 0;
oom:
	fprintf(stderr, "pcap_edit: out of memory\n");
	pcap_close(p);
	return -1;
}

/* Offsets of the TCP header and payload of an Ethernet/IPv4/TCP frame. */
static int tcp_of(const struct pkt *k, size_t *ip, size_t *tcp, size_t *pl, size_t *plen)
{
	const uint8_t *b = k->data;
	size_t n = k->h.caplen, ihl, thl, tot;

	if (n < 14 + 20 || b[12] != 0x08 || b[13] != 0x00)
		return -1;
	*ip = 14;
	ihl = (size_t)(b[14] & 0x0f) * 4;
	tot = (size_t)b[16] << 8 | b[17];
	if ((b[14] >> 4) != 4 || ihl < 20 || b[23] != 6 || tot < ihl + 20 || 14 + tot > n)
		return -1;
	*tcp = 14 + ihl;
	thl = (size_t)(b[*tcp + 12] >> 4) * 4;
	if (thl < 20 || ihl + thl > tot)
		return -1;
	*pl = *tcp + thl;
	*plen = tot - ihl - thl;
	return 0;
}

static void list(void)
{
	for (size_t i = 0; i < npkts; i++) {
		size_t ip, tcp, pl, plen;
		const uint8_t *b = pkts[i].data;
		char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

		if (tcp_of(&pkts[i], &ip, &tcp, &pl, &plen) < 0) {
			printf("%zu - 0 0\n", i + 1);
			continue;
		}
		inet_ntop(AF_INET, b + ip + 12, s, sizeof(s));
		inet_ntop(AF_INET, b + ip + 16, d, sizeof(d));
		printf("%zu %s:%u>%s:%u %zu %u\n", i + 1, s, (unsigned)(b[tcp] << 8 | b[tcp + 1]), d,
		       (unsigned)(b[tcp + 2] << 8 | b[tcp + 3]), plen,
		       (unsigned)((uint32_t)b[tcp + 4] << 24 | (uint32_t)b[tcp + 5] << 16 | (uint32_t)b[tcp + 6] << 8 |
				  b[tcp + 7]));
	}
}

/* A copy of packet k with only the first half of its payload (IP total
 * length adjusted; checksums are not looked at by iwdump). */
static int half_copy(const struct pkt *k, struct pkt *out)
{
	size_t ip, tcp, pl, plen, keep, tot;

	if (tcp_of(k, &ip, &tcp, &pl, &plen) < 0 || plen < 2 || pl + plen > k->h.caplen)
		return -1;
	keep = plen / 2;
	out->h = k->h;
	out->h.caplen = out->h.len = (bpf_u_int32)(pl + keep);
	out->data = malloc(out->h.caplen);
	if (!out->data)
		return -1;
	memcpy(out->data, k->data, out->h.caplen);
	tot = pl + keep - ip;
	out->data[ip + 2] = (uint8_t)(tot >> 8);
	out->data[ip + 3] = (uint8_t)tot;
	return 0;
}

static struct pkt extra;

static int done(int rc)
{
	for (size_t i = 0; i < npkts; i++)
		free(pkts[i].data);
	free(pkts);
	free(extra.data);
	return rc;
}

int main(int argc, char **argv)
{
	int dlt, snap, rc = 0;
	char *end;
	unsigned long k;
	pcap_t *dead;
	pcap_dumper_t *dp;

	if (argc == 3 && !strcmp(argv[2], "list")) {
		if (load(argv[1], &dlt, &snap) < 0)
			return done(2);
		list();
		return done(0);
	}
	if (argc != 5) {
		fprintf(stderr, "usage: pcap_edit IN list | IN OUT drop|dup|swap|overlap|from K\n");
		return 2;
	}
	if (load(argv[1], &dlt, &snap) < 0)
		return done(2);
	k = strtoul(argv[4], &end, 10);
	if (*end || k < 1 || k > npkts || (!strcmp(argv[3], "swap") && k == npkts)) {
		fprintf(stderr, "pcap_edit: no packet %s (or no next one)\n", argv[4]);
		return done(2);
	}
	k--; /* 0-based from here */
	if (!strcmp(argv[3], "overlap") && half_copy(&pkts[k], &extra) < 0) {
		fprintf(stderr, "pcap_edit: packet %lu has no TCP payload to split\n", k + 1);
		return done(2);
	}
	if (strcmp(argv[3], "drop") && strcmp(argv[3], "dup") && strcmp(argv[3], "swap") &&
	    strcmp(argv[3], "overlap") && strcmp(argv[3], "from")) {
		fprintf(stderr, "pcap_edit: unknown operation %s\n", argv[3]);
		return done(2);
	}
	dead = pcap_open_dead(dlt, snap);
	dp = dead ? pcap_dump_open(dead, argv[2]) : NULL;
	if (!dp) {
		fprintf(stderr, "pcap_edit: cannot write %s: %s\n", argv[2], dead ? pcap_geterr(dead) : "pcap_open_dead");
		if (dead)
			pcap_close(dead);
		return done(2);
	}
	for (size_t i = 0; i < npkts; i++) {
		size_t j = i;

		if (!strcmp(argv[3], "from") && i < k)
			continue;
		if (!strcmp(argv[3], "drop") && i == k)
			continue;
		if (!strcmp(argv[3], "swap") && (i == k || i == k + 1))
			j = i == k ? k + 1 : k;
		if (!strcmp(argv[3], "overlap") && i == k)
			pcap_dump((u_char *)dp, &extra.h, extra.data);
		pcap_dump((u_char *)dp, &pkts[j].h, pkts[j].data);
		if (!strcmp(argv[3], "dup") && i == k)
			pcap_dump((u_char *)dp, &pkts[j].h, pkts[j].data);
	}
	if (pcap_dump_flush(dp) < 0)
		rc = 2;
	pcap_dump_close(dp);
	pcap_close(dead);
	return done(rc);
}
