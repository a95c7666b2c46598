/* pcap tracing of live connections (classic pcap format written by hand,
 * no libpcap dependency).
 *
 * Each traced connection is rendered as a consistent, loss-free TCP
 * session between synthetic MACs and the real addresses/ports: SYN,
 * SYN-ACK, ACK when it opens, every byte either side moved (MPA handshake
 * and FPDUs alike) as ACK|PSH segments of at most TRACE_SEG bytes with
 * correct IPv4/IPv6 and TCP checksums, and FIN/FIN/ACK or a RST when it
 * closes. Each data segment acknowledges all the other side has sent, and
 * the SYNs carry a window-scale option so that bulk transfers without
 * pure ACKs never look like a full window to a decoder.
 *
 * A raw context (our own TCP/IP) has real frames: it records those
 * instead, as they left or arrived, so the capture shows its segments.
 *
 * Tracing is best effort: a write error stops the trace, never the
 * connection. All calls run under the context lock. */
#include "internal.h"

#include "iw_bytes.h"
#include "net/cksum.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define ETH_HLEN 14
#define IP4_HLEN 20
#define IP6_HLEN 40
#define TCP_HLEN 20
#define TCP_SYN_OPT 8 /* MSS (4), NOP (1), window scale (3) */
/* Largest TCP payload per frame: keeps the IPv4 total length and the IPv6
 * payload length below 65536. */
#define TRACE_SEG 65000
#define TRACE_FRAME_MAX (ETH_HLEN + IP6_HLEN + TCP_HLEN + TCP_SYN_OPT + TRACE_SEG)
#define TRACE_SNAPLEN 262144
#define TRACE_WSCALE 14
#define TRACE_MSS 65495

enum { F_FIN = 0x01, F_SYN = 0x02, F_RST = 0x04, F_PSH = 0x08, F_ACK = 0x10 };
enum { SIDE_LOCAL = 0, SIDE_PEER = 1 };

/* Frame boundaries of one side's stream. tshark's MPA dissector (4.0)
 * cannot reassemble an MPA frame or FPDU whose first TCP segment holds
 * fewer than 8 of its bytes (20 for a Request/Reply): it loses sync with
 * the stream. Real segments can end anywhere, but these are synthetic, so
 * a frame never ends that close after a start: those few bytes move to the
 * next frame. With markers, FPDU lengths are not enough to find starts:
 * the tracker switches itself off. */
#define TRACE_HEAD_MIN 8
struct trace_side {
	bool off;
	bool handshake;  /* the next start is the MPA Request/Reply */
	uint64_t pos;    /* stream bytes handed to the tracker */
	uint64_t next;   /* stream offset of the next frame start */
	uint8_t hold[IW_MPA_FRAME_HDR_LEN];
	unsigned nhold;
};

struct trace_conn {
	bool open;
	struct trace_side side[2];
	int family;
	uint8_t addr[2][16];
	uint16_t port[2];
	uint32_t nxt[2]; /* next sequence number each side sends */
	uint16_t ip_id[2];
};

struct iw_trace {
	FILE *f;
	bool failed;
	uint8_t *frame;
	uint8_t *scratch; /* held bytes + new bytes of one side, contiguous */
	size_t scratch_cap;
	uint64_t *starts;  /* frame starts inside scratch */
	size_t starts_cap;
	struct trace_conn *conns;
	uint32_t n_conns;
	uint32_t isn_seed;
};

static void trace_write(struct iw_trace *tr, const void *p, size_t len)
{
	if (tr->failed)
		return;
	if (fwrite(p, 1, len, tr->f) != len)
		tr->failed = true;
}

/* Record header + frame (cut to the snapshot length). Host byte order,
 * like every pcap writer. */
static void trace_record_of(struct iw_trace *tr, const uint8_t *frame, size_t len)
{
	struct timespec ts;
	uint32_t hdr[4];
	size_t cap = len < TRACE_SNAPLEN ? len : TRACE_SNAPLEN;

	clock_gettime(CLOCK_REALTIME, &ts);
	hdr[0] = (uint32_t)ts.tv_sec;
	hdr[1] = (uint32_t)(ts.tv_nsec / 1000);
	hdr[2] = (uint32_t)cap;
	hdr[3] = (uint32_t)len;
	trace_write(tr, hdr, sizeof(hdr));
	trace_write(tr, frame, cap);
}

static void trace_record(struct iw_trace *tr, size_t len)
{
	trace_record_of(tr, tr->frame, len);
}

/* One segment from side `from` with flags and len payload bytes gathered
 * from iov (starting skip bytes in). */
static void trace_segment(struct iw_trace *tr, struct trace_conn *c, int from, uint8_t flags,
			  const struct iovec *iov, int iovcnt, size_t skip, size_t len)
{
	static const uint8_t mac[2][6] = { { 0x02, 0, 0, 0, 0, 0x01 }, { 0x02, 0, 0, 0, 0, 0x02 } };
	int to = from ^ 1;
	bool v6 = c->family == AF_INET6;
	size_t ip_hlen = v6 ? IP6_HLEN : IP4_HLEN;
	size_t tcp_hlen = TCP_HLEN + ((flags & F_SYN) ? TCP_SYN_OPT : 0);
	uint8_t *eth = tr->frame, *ip = eth + ETH_HLEN, *tcp = ip + ip_hlen, *data = tcp + tcp_hlen;
	size_t alen = v6 ? 16 : 4;

	/* Gather the payload. */
	size_t got = 0;
	for (int i = 0; i < iovcnt && got < len; i++) {
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t take = l - skip;
		if (take > len - got)
			take = len - got;
		memcpy(data + got, (const uint8_t *)iov[i].iov_base + skip, take);
		got += take;
		skip = 0;
	}
	len = got;

	memcpy(eth, mac[to], 6);
	memcpy(eth + 6, mac[from], 6);
	iw_put_be16(eth + 12, v6 ? 0x86DD : 0x0800);

	uint16_t tcp_len = (uint16_t)(tcp_hlen + len);
	if (v6) {
		iw_put_be32(ip, 0x60000000u);
		iw_put_be16(ip + 4, tcp_len);
		ip[6] = IPPROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, c->addr[from], 16);
		memcpy(ip + 24, c->addr[to], 16);
	} else {
		ip[0] = 0x45;
		ip[1] = 0;
		iw_put_be16(ip + 2, (uint16_t)(IP4_HLEN + tcp_len));
		iw_put_be16(ip + 4, c->ip_id[from]++);
		iw_put_be16(ip + 6, 0x4000); /* DF */
		ip[8] = 64;
		ip[9] = IPPROTO_TCP;
		iw_put_be16(ip + 10, 0);
		memcpy(ip + 12, c->addr[from], 4);
		memcpy(ip + 16, c->addr[to], 4);
		iw_put_be16(ip + 10, iwn_cksum_fold(iwn_cksum_add(0, ip, IP4_HLEN)));
	}

	iw_put_be16(tcp, c->port[from]);
	iw_put_be16(tcp + 2, c->port[to]);
	iw_put_be32(tcp + 4, c->nxt[from]);
	iw_put_be32(tcp + 8, (flags & F_ACK) ? c->nxt[to] : 0);
	tcp[12] = (uint8_t)((tcp_hlen / 4) << 4);
	tcp[13] = flags;
	iw_put_be16(tcp + 14, 0xFFFF);
	iw_put_be16(tcp + 16, 0);
	iw_put_be16(tcp + 18, 0);
	if (flags & F_SYN) {
		tcp[20] = 2; /* MSS */
		tcp[21] = 4;
		iw_put_be16(tcp + 22, TRACE_MSS);
		tcp[24] = 1; /* NOP */
		tcp[25] = 3; /* window scale */
		tcp[26] = 3;
		tcp[27] = TRACE_WSCALE;
	}

	/* Pseudo-header, then the segment. */
	uint32_t sum = iwn_cksum_add(0, ip + (v6 ? 8 : 12), 2 * alen);
	sum += IPPROTO_TCP;
	sum += tcp_len;
	sum = iwn_cksum_add(sum, tcp, tcp_len);
	iw_put_be16(tcp + 16, iwn_cksum_fold(sum));

	c->nxt[from] += (uint32_t)len + ((flags & (F_SYN | F_FIN)) ? 1u : 0u);
	trace_record(tr, ETH_HLEN + ip_hlen + tcp_len);
}

static bool addr_of(const struct sockaddr *sa, int *family, uint8_t addr[16], uint16_t *port)
{
	memset(addr, 0, 16);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		memcpy(addr, &s->sin_addr, 4);
		*port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		memcpy(addr, &s->sin6_addr, 16);
		*port = ntohs(s->sin6_port);
	} else {
		return false;
	}
	*family = sa->sa_family;
	return true;
}

int iw_trace_open(struct iw_context *ctx, const char *path)
{
	struct iw_trace *tr;

	if (!ctx || !path)
		return -EINVAL;
	if (ctx->trace)
		return -EBUSY;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->frame = malloc(TRACE_FRAME_MAX);
	tr->f = fopen(path, "wbe");
	if (!tr->frame || !tr->f) {
		int err = tr->f ? ENOMEM : errno;
		if (tr->f)
			fclose(tr->f);
		free(tr->frame);
		free(tr->scratch);
		free(tr->starts);
		free(tr);
		return -err;
	}
	/* Classic pcap global header: microsecond timestamps, Ethernet. */
	uint32_t gh[6] = { 0xa1b2c3d4u, 0, 0, 0, TRACE_SNAPLEN, 1 };
	memcpy(&gh[1], (uint16_t[2]){ 2, 4 }, 4);
	trace_write(tr, gh, sizeof(gh));
	fflush(tr->f);
	tr->isn_seed = (uint32_t)time(NULL) * 2654435761u;
	ctx->trace = tr;
	return tr->failed ? -EIO : 0;
}

void iw_trace_close(struct iw_context *ctx)
{
	struct iw_trace *tr = ctx ? ctx->trace : NULL;

	if (!tr)
		return;
	ctx->trace = NULL;
	fclose(tr->f);
	free(tr->conns);
	free(tr->frame);
	free(tr->scratch);
	free(tr->starts);
	free(tr);
}

static struct trace_conn *conn_get(struct iw_trace *tr, uint32_t h)
{
	if (!tr || h == 0 || h > tr->n_conns || !tr->conns[h - 1].open)
		return NULL;
	return &tr->conns[h - 1];
}

uint32_t iw_trace_conn_open(struct iw_context *ctx, const struct sockaddr *local, const struct sockaddr *peer,
			    bool local_is_initiator)
{
	struct iw_trace *tr = ctx ? ctx->trace : NULL;
	struct trace_conn c = { 0 };
	int fam_peer = 0;
	uint32_t slot;

	if (!tr || tr->failed || !local || !peer)
		return 0;
	/* A raw context records its real frames (iw_trace_frame) instead. */
	if (ctx->raw)
		return 0;
	if (!addr_of(local, &c.family, c.addr[SIDE_LOCAL], &c.port[SIDE_LOCAL]) ||
	    !addr_of(peer, &fam_peer, c.addr[SIDE_PEER], &c.port[SIDE_PEER]) || fam_peer != c.family)
		return 0;

	/* Both ends in this context (loopback): trace the connection once. */
	for (slot = 0; slot < tr->n_conns; slot++) {
		const struct trace_conn *o = &tr->conns[slot];
		if (o->open && o->family == c.family && o->port[0] == c.port[1] && o->port[1] == c.port[0] &&
		    !memcmp(o->addr[0], c.addr[1], 16) && !memcmp(o->addr[1], c.addr[0], 16))
			return 0;
	}
	for (slot = 0; slot < tr->n_conns && tr->conns[slot].open; slot++)
		;
	if (slot == tr->n_conns) {
		uint32_t cap = tr->n_conns ? tr->n_conns * 2 : 8;
		struct trace_conn *n = realloc(tr->conns, cap * sizeof(*n));
		if (!n)
			return 0;
		memset(n + tr->n_conns, 0, (cap - tr->n_conns) * sizeof(*n));
		tr->conns = n;
		tr->n_conns = cap;
	}

	c.open = true;
	c.side[0].handshake = c.side[1].handshake = true;
	tr->isn_seed = tr->isn_seed * 1664525u + 1013904223u;
	c.nxt[0] = tr->isn_seed;
	tr->isn_seed = tr->isn_seed * 1664525u + 1013904223u;
	c.nxt[1] = tr->isn_seed;
	c.ip_id[0] = (uint16_t)(slot * 7919u);
	c.ip_id[1] = (uint16_t)(slot * 7919u + 4099u);
	tr->conns[slot] = c;

	struct trace_conn *tc = &tr->conns[slot];
	int a = local_is_initiator ? SIDE_LOCAL : SIDE_PEER;
	trace_segment(tr, tc, a, F_SYN, NULL, 0, 0, 0);
	trace_segment(tr, tc, a ^ 1, F_SYN | F_ACK, NULL, 0, 0, 0);
	trace_segment(tr, tc, a, F_ACK, NULL, 0, 0, 0);
	return slot + 1;
}

/* Offsets (in buf, which starts at stream offset base) where MPA frames
 * and FPDUs start; advances the tracker past every start whose header is
 * complete. Returns how many starts were stored, or -1 to stop tracking. */
static long find_starts(struct iw_trace *tr, struct trace_side *sd, const uint8_t *buf, size_t len, uint64_t base)
{
	size_t n = 0;

	while (sd->next < base + len) {
		uint64_t at = sd->next - base;
		size_t need = sd->handshake ? IW_MPA_FRAME_HDR_LEN : IW_MPA_LEN_FIELD;
		if (n == tr->starts_cap) {
			size_t cap = tr->starts_cap ? tr->starts_cap * 2 : 256;
			uint64_t *ns = realloc(tr->starts, cap * sizeof(*ns));
			if (!ns)
				return -1;
			tr->starts = ns;
			tr->starts_cap = cap;
		}
		tr->starts[n++] = at;
		if (at + need > len)
			break; /* its header arrives later */
		if (sd->handshake) {
			if (buf[at + 16] & IW_MPA_FLAG_MARKERS)
				return -1;
			sd->next += IW_MPA_FRAME_HDR_LEN + iw_get_be16(buf + at + 18);
			sd->handshake = false;
		} else {
			sd->next += iw_mpa_fpdu_len(iw_get_be16(buf + at));
		}
	}
	return (long)n;
}

/* Data segments of at most TRACE_SEG bytes each. */
static void emit(struct iw_trace *tr, struct trace_conn *c, int from, const uint8_t *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };

	for (size_t off = 0; off < len;) {
		size_t n = len - off < TRACE_SEG ? len - off : TRACE_SEG;
		trace_segment(tr, c, from, F_ACK | F_PSH, &v, 1, off, n);
		off += n;
	}
}

void iw_trace_data(struct iw_context *ctx, uint32_t conn, bool tx, const struct iovec *iov, int iovcnt,
		   size_t len)
{
	struct iw_trace *tr = ctx ? ctx->trace : NULL;
	struct trace_conn *c = conn_get(tr, conn);
	int from = tx ? SIDE_LOCAL : SIDE_PEER;

	if (!c || tr->failed || !len)
		return;
	struct trace_side *sd = &c->side[from];
	if (sd->off) {
		for (size_t off = 0; off < len;) {
			size_t n = len - off < TRACE_SEG ? len - off : TRACE_SEG;
			trace_segment(tr, c, from, F_ACK | F_PSH, iov, iovcnt, off, n);
			off += n;
		}
		return;
	}
	/* Held bytes and the new ones, contiguous. */
	size_t total = sd->nhold + len;
	if (total > tr->scratch_cap) {
		uint8_t *ns = realloc(tr->scratch, total);
		if (!ns) {
			tr->failed = true;
			return;
		}
		tr->scratch = ns;
		tr->scratch_cap = total;
	}
	uint8_t *buf = tr->scratch;
	memcpy(buf, sd->hold, sd->nhold);
	size_t got = sd->nhold;
	for (int i = 0; i < iovcnt && got < total; i++) {
		size_t take = iov[i].iov_len < total - got ? iov[i].iov_len : total - got;
		if (take) /* empty entries may have no base */
			memcpy(buf + got, iov[i].iov_base, take);
		got += take;
	}
	uint64_t base = sd->pos - sd->nhold;
	sd->pos += len;
	sd->nhold = 0;
	long ns = find_starts(tr, sd, buf, total, base);
	if (ns < 0) {
		sd->off = true;
		emit(tr, c, from, buf, total);
		return;
	}
	/* Hold back a start too close to the end (a later call completes it). */
	size_t cut = total;
	if (ns > 0) {
		uint64_t last = tr->starts[ns - 1];
		/* Still in the handshake: the last start is the Request/Reply. */
		size_t head = sd->handshake ? IW_MPA_FRAME_HDR_LEN : TRACE_HEAD_MIN;
		if (total - last < head) {
			cut = (size_t)last;
			sd->nhold = (unsigned)(total - cut);
			memcpy(sd->hold, buf + cut, sd->nhold);
			ns--;
		}
	}
	/* Frames of at most TRACE_SEG bytes, none ending right after a start. */
	size_t off = 0;
	long k = 0;
	while (off < cut) {
		size_t end = cut - off > TRACE_SEG ? off + TRACE_SEG : cut;
		while (k < ns && tr->starts[k] <= off)
			k++;
		if (end < cut) {
			long j = k;
			while (j < ns && tr->starts[j] < end)
				j++;
			if (j > k && end - tr->starts[j - 1] < TRACE_HEAD_MIN && tr->starts[j - 1] > off)
				end = (size_t)tr->starts[j - 1];
		}
		emit(tr, c, from, buf + off, end - off);
		off = end;
	}
}

void iw_trace_conn_close(struct iw_context *ctx, uint32_t conn, bool reset)
{
	struct iw_trace *tr = ctx ? ctx->trace : NULL;
	struct trace_conn *c = conn_get(tr, conn);

	if (!c)
		return;
	/* Whatever was held back is part of the stream. */
	for (int side = 0; side < 2; side++)
		if (c->side[side].nhold) {
			emit(tr, c, side, c->side[side].hold, c->side[side].nhold);
			c->side[side].nhold = 0;
		}
	if (reset) {
		trace_segment(tr, c, SIDE_LOCAL, F_RST | F_ACK, NULL, 0, 0, 0);
	} else {
		trace_segment(tr, c, SIDE_LOCAL, F_FIN | F_ACK, NULL, 0, 0, 0);
		trace_segment(tr, c, SIDE_PEER, F_FIN | F_ACK, NULL, 0, 0, 0);
		trace_segment(tr, c, SIDE_LOCAL, F_ACK, NULL, 0, 0, 0);
	}
	c->open = false;
	/* A closed connection is complete on disk. */
	if (!tr->failed && fflush(tr->f) != 0)
		tr->failed = true;
}

void iw_trace_frame(struct iw_context *ctx, const uint8_t *frame, size_t len)
{
	struct iw_trace *tr = ctx ? ctx->trace : NULL;

	if (!tr || tr->failed)
		return;
	trace_record_of(tr, frame, len);
}
