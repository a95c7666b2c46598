/* Seeds for fuzz_qp_live from captures:
 *   fuzz_pcap_seeds <out-dir> <file.pcap>...
 * reassembles every TCP connection of each capture (classic pcap;
 * Ethernet, Linux cooked v1/v2, raw IP or BSD loopback; IPv4 / IPv6),
 * finds its MPA Request and Reply, and writes two inputs per connection
 * (qp_live.h format): one where we play the responder (the peer's frame is
 * the captured Request, the stream what the initiator sent after it) and
 * one where we play the initiator (the captured Reply and what the
 * responder sent after it). The mode byte makes our side agree to what the
 * capture shows (CRC, markers), so the real FPDUs pass the deframer; their
 * STags and TOs are the capture's, which is what mutation starts from.
 * Streams are cut at MAX_STREAM bytes. Prints one line per seed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cap_frame.h"
#include "common/iw_bytes.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_wire.h"
#include "qp_live.h"

#define MAX_STREAM (32u * 1024u)
#define MAX_FLOWS 256
#define MAX_PENDING 64

/* One direction of a TCP connection, reassembled in sequence order. */
struct dir {
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	int af; /* 4 or 6 */
	bool syn, synack, started;
	uint32_t next; /* next expected sequence number */
	uint8_t *data;
	size_t len, cap;
	struct {
		uint32_t seq;
		uint8_t *p;
		size_t n;
	} pend[MAX_PENDING];
	int npend;
};

static struct dir flows[MAX_FLOWS];
static int nflows;

static void append(struct dir *d, const uint8_t *p, size_t n)
{
	if (d->len + n > d->cap) {
		size_t cap = d->cap ? d->cap : 4096;
		while (cap < d->len + n)
			cap *= 2;
		uint8_t *q = realloc(d->data, cap);
		if (!q) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		d->data = q;
		d->cap = cap;
	}
	memcpy(d->data + d->len, p, n);
	d->len += n;
	d->next += (uint32_t)n;
}

/* Take what of [seq, seq+n) lies at or after next; return false if it
 * starts beyond next (a gap: keep it for later). */
static bool place(struct dir *d, uint32_t seq, const uint8_t *p, size_t n)
{
	int32_t ahead = (int32_t)(seq - d->next);
	if (ahead > 0)
		return false;
	size_t skip = (size_t)(-(int64_t)ahead);
	if (skip < n)
		append(d, p + skip, n - skip);
	return true;
}

static void segment(struct dir *d, uint32_t seq, const uint8_t *p, size_t n)
{
	if (!d->started) {
		d->started = true;
		d->next = seq;
	}
	if (!place(d, seq, p, n)) {
		if (d->npend < MAX_PENDING) {
			uint8_t *c = malloc(n);
			if (!c)
				exit(1);
			memcpy(c, p, n);
			d->pend[d->npend].seq = seq;
			d->pend[d->npend].p = c;
			d->pend[d->npend].n = n;
			d->npend++;
		}
		return;
	}
	for (bool moved = true; moved;) {
		moved = false;
		for (int i = 0; i < d->npend; i++) {
			if (place(d, d->pend[i].seq, d->pend[i].p, d->pend[i].n)) {
				free(d->pend[i].p);
				d->pend[i] = d->pend[--d->npend];
				moved = true;
				break;
			}
		}
	}
}

static struct dir *flow(int af, const uint8_t *src, const uint8_t *dst, uint16_t sport, uint16_t dport)
{
	size_t alen = af == 4 ? 4 : 16;
	for (int i = 0; i < nflows; i++) {
		struct dir *d = &flows[i];
		if (d->af == af && d->sport == sport && d->dport == dport && !memcmp(d->src, src, alen) &&
		    !memcmp(d->dst, dst, alen))
			return d;
	}
	if (nflows == MAX_FLOWS)
		return NULL;
	struct dir *d = &flows[nflows++];
	memset(d, 0, sizeof(*d));
	d->af = af;
	memcpy(d->src, src, alen);
	memcpy(d->dst, dst, alen);
	d->sport = sport;
	d->dport = dport;
	return d;
}

/* One captured frame: TCP segments of whole (not cut) packets only, since
 * a cut one would leave a hole in the reassembled stream. */
static void frame(uint32_t linktype, const uint8_t *p, size_t n)
{
	struct iwc_frame f;

	if (iwc_parse((int)linktype, p, n, &f) != IWC_TCP || f.missing)
		return;
	struct dir *d = flow(f.family, f.src, f.dst, f.sport, f.dport);
	if (!d)
		return;
	if (f.flags & 0x02) { /* SYN: data starts one past it */
		if (f.flags & 0x10)
			d->synack = true;
		else
			d->syn = true;
		d->started = true;
		d->next = f.seq + 1;
		return;
	}
	if (f.pay_len)
		segment(d, f.seq, p + f.pay_off, f.pay_len);
}

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static int read_pcap(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	uint8_t gh[24];
	if (fread(gh, 1, 24, f) != 24) {
		fprintf(stderr, "%s: too short\n", path);
		fclose(f);
		return -1;
	}
	uint32_t magic;
	memcpy(&magic, gh, 4);
	bool swap;
	if (magic == 0xA1B2C3D4u || magic == 0xA1B23C4Du)
		swap = false;
	else if (magic == 0xD4C3B2A1u || magic == 0x4D3CB2A1u)
		swap = true;
	else {
		fprintf(stderr, "%s: not a classic pcap file (pcapng is not read)\n", path);
		fclose(f);
		return -1;
	}
	uint32_t linktype = rd32(gh + 20, swap) & 0xFFFF;
	static uint8_t buf[262144];
	uint8_t rh[16];
	while (fread(rh, 1, 16, f) == 16) {
		uint32_t caplen = rd32(rh + 8, swap);
		if (caplen > sizeof(buf)) {
			fprintf(stderr, "%s: record of %u bytes: stopping\n", path, caplen);
			break;
		}
		if (fread(buf, 1, caplen, f) != caplen)
			break;
		frame(linktype, buf, caplen);
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------ */

static struct dir *reverse(const struct dir *d)
{
	size_t alen = d->af == 4 ? 4 : 16;
	for (int i = 0; i < nflows; i++) {
		struct dir *r = &flows[i];
		if (r->af == d->af && r->sport == d->dport && r->dport == d->sport && !memcmp(r->src, d->dst, alen) &&
		    !memcmp(r->dst, d->src, alen))
			return r;
	}
	return NULL;
}

static uint8_t clamp15(uint16_t v)
{
	return v > 15 ? 15 : (uint8_t)v;
}

static int write_seed(const char *dir, const char *name, uint8_t mode, uint8_t irdord, const uint8_t *fr,
		      size_t flen, const uint8_t *stream, size_t slen)
{
	char path[4096];
	if (slen > MAX_STREAM)
		slen = MAX_STREAM;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	uint8_t hdr[QPL_HDR_LEN] = { mode, irdord, 0 };
	if (!f || fwrite(hdr, 1, sizeof(hdr), f) != sizeof(hdr) || fwrite(fr, 1, flen, f) != flen ||
	    fwrite(stream, 1, slen, f) != slen || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	printf("%s: mode 0x%02x, %zu stream bytes\n", path, mode, slen);
	return 0;
}

/* d: the initiator's direction (its stream starts with the Request). */
static int connection(const char *out, const char *base, int n, struct dir *d, struct dir *r)
{
	struct iw_mpa_frame req, rep;
	enum iw_mpa_frame_error why;
	ssize_t ql = iw_mpa_frame_decode(d->data, d->len, IW_MPA_REQUEST, 0, 0, &req, &why);
	ssize_t pl = iw_mpa_frame_decode(r->data, r->len, IW_MPA_REPLY, 0, 0, &rep, &why);
	if (ql <= 0 || pl <= 0 || rep.reject)
		return 0;
	char name[512];
	int rc = 0;
	bool crc = rep.crc;
	/* Responder: the initiator's stream has markers iff our Reply asks. */
	uint8_t mode = (uint8_t)((crc ? 0 : QPL_MODE_CRC_OFF) | (rep.markers ? QPL_MODE_MARKERS : 0) |
				 (n & 1 ? QPL_MODE_FEED : 0));
	uint8_t irdord = rep.enhanced ? (uint8_t)(clamp15(rep.ird) | clamp15(rep.ord) << 4) : 0x44;
	snprintf(name, sizeof(name), "pcap_%s_%d_resp", base, n);
	rc |= write_seed(out, name, mode, irdord, d->data, (size_t)ql, d->data + ql, d->len - (size_t)ql);
	/* Initiator: the responder's stream has markers iff our Request asked. */
	mode = (uint8_t)(QPL_MODE_INITIATOR | (crc ? 0 : QPL_MODE_CRC_OFF) | (req.markers ? QPL_MODE_MARKERS : 0) |
			 (n & 1 ? 0 : QPL_MODE_FEED));
	irdord = req.enhanced ? (uint8_t)(clamp15(req.ird) | clamp15(req.ord) << 4) : 0x44;
	snprintf(name, sizeof(name), "pcap_%s_%d_init", base, n);
	rc |= write_seed(out, name, mode, irdord, r->data, (size_t)pl, r->data + pl, r->len - (size_t)pl);
	return rc ? -1 : 1;
}

static bool starts_with(const struct dir *d, const char *key)
{
	return d->len >= IW_MPA_KEY_LEN && !memcmp(d->data, key, IW_MPA_KEY_LEN);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s <out-dir> <file.pcap>...\n", argv[0]);
		return 2;
	}
	if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
		perror(argv[1]);
		return 1;
	}
	int failed = 0, seeds = 0;
	for (int a = 2; a < argc; a++) {
		nflows = 0;
		if (read_pcap(argv[a]) < 0) {
			failed++;
			continue;
		}
		char base[256];
		const char *slash = strrchr(argv[a], '/');
		snprintf(base, sizeof(base), "%s", slash ? slash + 1 : argv[a]);
		char *dot = strrchr(base, '.');
		if (dot)
			*dot = 0;
		int n = 0;
		for (int i = 0; i < nflows; i++) {
			struct dir *d = &flows[i], *r = reverse(d);
			if (!r || !starts_with(d, IW_MPA_KEY_REQ) || !starts_with(r, IW_MPA_KEY_REP))
				continue;
			int rc = connection(argv[1], base, n, d, r);
			if (rc < 0)
				failed++;
			else if (rc > 0)
				seeds += 2, n++;
		}
		for (int i = 0; i < nflows; i++) {
			free(flows[i].data);
			for (int k = 0; k < flows[i].npend; k++)
				free(flows[i].pend[k].p);
		}
		if (!n)
			fprintf(stderr, "%s: no MPA connection found\n", argv[a]);
	}
	printf("%d seeds written\n", seeds);
	return failed ? 1 : 0;
}
