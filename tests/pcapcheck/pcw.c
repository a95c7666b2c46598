/* pcw: loading a capture, connections, per-direction reassembly and the
 * FPDU walk (see pcw.h). */
#include "pcw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iw_bytes.h"
#include "mpa/crc32c.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_wire.h"
#include "pcw_int.h"
#include "rdmap/rdmap_check.h"

#define STREAM_MAX (256u << 20) /* larger streams are not handled */
#define NONE UINT32_MAX

/* ---- connections ------------------------------------------------------- */

static int side_of(const struct pcw_conn *c, const struct pcw_pkt *p)
{
	int alen = p->family == 4 ? 4 : 16;

	if (c->family != p->family)
		return -1;
	if (c->port[0] == p->sport && c->port[1] == p->dport && !memcmp(c->addr[0], p->src, (size_t)alen) &&
	    !memcmp(c->addr[1], p->dst, (size_t)alen))
		return 0;
	if (c->port[1] == p->sport && c->port[0] == p->dport && !memcmp(c->addr[1], p->src, (size_t)alen) &&
	    !memcmp(c->addr[0], p->dst, (size_t)alen))
		return 1;
	return -1;
}

/* The connection p belongs to (creating it as iwdump would), and p's side. */
static int conn_of(struct pcw_cap *cap, const struct pcw_pkt *p, int *side)
{
	bool syn_only = (p->flags & 0x02) && !(p->flags & 0x10);
	struct pcw_conn *c = NULL;
	int idx = -1;

	for (size_t i = cap->nconns; i-- > 0;) {
		int s = side_of(&cap->conns[i], p);

		if (s >= 0) {
			idx = (int)i;
			*side = s;
			break;
		}
	}
	if (idx >= 0) {
		c = &cap->conns[idx];
		if (!syn_only || !(c->syn_seen || c->any_payload) ||
		    (!c->closed && c->syn_seen && c->syn_seq == p->seq))
			return idx;
	}
	c = realloc(cap->conns, (cap->nconns + 1) * sizeof(*c));
	if (!c)
		return -1;
	cap->conns = c;
	c = &cap->conns[cap->nconns];
	memset(c, 0, sizeof(*c));
	c->family = p->family;
	memcpy(c->addr[0], p->src, 16);
	memcpy(c->addr[1], p->dst, 16);
	c->port[0] = p->sport;
	c->port[1] = p->dport;
	*side = 0;
	return (int)cap->nconns++;
}

static void swap_sides(struct pcw_cap *cap, int ci)
{
	struct pcw_conn *c = &cap->conns[ci];
	uint8_t a[16];
	uint16_t port = c->port[0];

	memcpy(a, c->addr[0], 16);
	memcpy(c->addr[0], c->addr[1], 16);
	memcpy(c->addr[1], a, 16);
	c->port[0] = c->port[1];
	c->port[1] = port;
	for (size_t i = 0; i < cap->npkts; i++)
		if (cap->pkts[i].conn == ci)
			cap->pkts[i].dir ^= 1;
}

/* ---- reassembly ---------------------------------------------------------- */

static int reassemble(struct pcw_cap *cap, int ci, int dir, char *err, size_t errlen)
{
	struct pcw_dir *d = &cap->conns[ci].d[dir];
	uint64_t len = 0;

	for (size_t i = 0; i < cap->npkts; i++) {
		const struct pcw_pkt *p = &cap->pkts[i];
		int64_t off;

		if (p->conn != ci || p->dir != dir)
			continue;
		if (p->flags & 0x02) {
			if (!d->have_base) {
				d->have_base = true;
				d->base = p->seq + 1;
			}
			continue;
		}
		if (!p->pay_len)
			continue;
		if (!d->have_base) {
			d->have_base = true;
			d->base = p->seq;
		}
		off = (int32_t)(p->seq - d->base);
		if (off < 0 || (uint64_t)off + p->pay_len > STREAM_MAX)
			continue; /* before the stream start, or absurd */
		if ((uint64_t)off + p->pay_len > len)
			len = (uint64_t)off + p->pay_len;
	}
	d->len = len;
	if (!len)
		return 0;
	d->buf = calloc(len, 1);
	d->owner = malloc(len * sizeof(*d->owner));
	if (!d->buf || !d->owner) {
		snprintf(err, errlen, "out of memory (stream of %llu bytes)", (unsigned long long)len);
		return -1;
	}
	for (uint64_t i = 0; i < len; i++)
		d->owner[i] = NONE;
	for (size_t i = 0; i < cap->npkts; i++) {
		const struct pcw_pkt *p = &cap->pkts[i];
		int64_t off;

		if (p->conn != ci || p->dir != dir || !p->pay_len || (p->flags & 0x02))
			continue;
		off = (int32_t)(p->seq - d->base);
		if (off < 0 || (uint64_t)off + p->pay_len > len)
			continue;
		for (size_t k = 0; k < p->pay_len; k++) {
			if (d->owner[off + (int64_t)k] == NONE) {
				d->owner[off + (int64_t)k] = (uint32_t)i;
				d->buf[off + (int64_t)k] = p->data[p->pay_off + k];
			}
		}
	}
	while (d->contig < len && d->owner[d->contig] != NONE)
		d->contig++;
	return 0;
}

/* ---- FPDU walk ----------------------------------------------------------- */

static bool in_marker(const struct pcw_dir *d, uint64_t off)
{
	return d->markers && off >= d->frame_len &&
	       ((off - d->frame_len) & (IW_MPA_MARKER_INTERVAL - 1)) < IW_MPA_MARKER_LEN;
}

uint64_t pcw_logical_off(const struct pcw_dir *d, uint64_t start, uint32_t i)
{
	uint64_t o = start;

	if (!d->markers)
		return start + i;
	for (;;) {
		while (in_marker(d, o))
			o++;
		if (!i)
			return o;
		i--;
		o++;
	}
}

uint32_t pcw_fpdu_crc(const struct pcw_dir *d, const struct pcw_fpdu *f)
{
	uint32_t crc_at = (uint32_t)(2u + f->ulpdu_len + iw_mpa_pad_len(f->ulpdu_len));
	uint64_t stop = pcw_logical_off(d, f->start, crc_at);

	/* Markers up to the first CRC byte are covered (as mpa_rx does). */
	return iw_crc32c(d->buf + f->start, (size_t)(stop - f->start));
}

static uint32_t wire_crc(const struct pcw_dir *d, const struct pcw_fpdu *f)
{
	uint32_t crc_at = (uint32_t)(2u + f->ulpdu_len + iw_mpa_pad_len(f->ulpdu_len));
	uint8_t b[4];

	for (uint32_t i = 0; i < 4; i++)
		b[i] = d->buf[pcw_logical_off(d, f->start, crc_at + i)];
	return iw_crc32c_get_wire(b);
}

static int walk(struct pcw_conn *c, int dir, const struct pcw_cap *cap, char *err, size_t errlen)
{
	struct pcw_dir *d = &c->d[dir];
	uint64_t pos = d->frame_len;
	uint32_t maxown = 0;
	size_t capf = 0;

	for (uint64_t i = 0; i < d->frame_len && i < d->contig; i++)
		if (d->owner[i] > maxown)
			maxown = d->owner[i];
	while (pos < d->contig) {
		struct pcw_fpdu f;
		uint64_t lo, end, o;
		uint32_t n;

		memset(&f, 0, sizeof(f));
		f.start = pos;
		lo = pcw_logical_off(d, pos, 1);
		if (lo >= d->contig)
			break;
		f.ulpdu_len = (uint16_t)(d->buf[pcw_logical_off(d, pos, 0)] << 8 | d->buf[lo]);
		if (f.ulpdu_len < 2) {
			d->walk_stopped = true;
			break;
		}
		n = iw_mpa_fpdu_len(f.ulpdu_len);
		end = pcw_logical_off(d, pos, n - 1) + 1;
		if (end > d->contig) {
			d->walk_stopped = true; /* partial FPDU at the end */
			break;
		}
		f.end = end;
		f.wire_len = (uint32_t)(end - pos);
		for (uint32_t i = 0; i < PCW_HDR_MAX && i < n; i++)
			f.hdr[i] = d->buf[pcw_logical_off(d, pos, i)];
		f.tagged = (f.hdr[2] & 0x80) != 0;
		f.opcode = f.hdr[3] & 0x0F;
		for (o = pos; o < end; o++)
			if (d->owner[o] > maxown)
				maxown = d->owner[o];
		f.last_pkt = maxown;
		f.first_pkt = d->owner[pos];
		{
			const struct pcw_pkt *p = &cap->pkts[f.first_pkt];
			uint64_t pend = (uint64_t)(int32_t)(p->seq - d->base) + p->pay_len;

			f.first_seg_bytes = (uint32_t)((pend < end ? pend : end) - pos);
		}
		f.shares_mpa_segment = d->frame_len && d->owner[d->frame_len - 1] == f.first_pkt;
		f.crc_ok = pcw_fpdu_crc(d, &f) == wire_crc(d, &f);
		if (d->nfpdus == capf) {
			struct pcw_fpdu *a;

			capf = capf ? capf * 2 : 64;
			a = realloc(d->fpdus, capf * sizeof(*a));
			if (!a) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			d->fpdus = a;
		}
		d->fpdus[d->nfpdus++] = f;
		pos = end;
	}
	return 0;
}

/* Decode the Request (dir 0) and Reply (dir 1), set CRC and markers. */
static void mpa(struct pcw_conn *c)
{
	struct iw_mpa_frame req, rep;
	struct iw_rdmap_check_cfg cfg;
	enum iw_mpa_frame_error why;
	ssize_t n0, n1;

	if (!c->d[0].contig || !c->d[1].contig)
		return;
	n0 = iw_mpa_frame_decode(c->d[0].buf, c->d[0].contig, IW_MPA_REQUEST, 0, 0, &req, &why);
	n1 = iw_mpa_frame_decode(c->d[1].buf, c->d[1].contig, IW_MPA_REPLY, 0, 0, &rep, &why);
	if (n0 <= 0 || n1 <= 0)
		return;
	c->d[0].frame_len = (uint64_t)n0;
	c->d[1].frame_len = (uint64_t)n1;
	if (rep.reject) {
		c->rejected = true;
		return;
	}
	iw_rdmap_check_cfg_from_mpa(&req, &rep, &cfg);
	c->mpa = true;
	c->crc = cfg.crc;
	c->d[0].markers = cfg.markers[0];
	c->d[1].markers = cfg.markers[1];
}

static bool starts_with_request(const struct pcw_dir *d)
{
	return d->contig >= IW_MPA_KEY_LEN && !memcmp(d->buf, IW_MPA_KEY_REQ, IW_MPA_KEY_LEN);
}

int pcw_load(const char *path, struct pcw_cap *cap, char *err, size_t errlen)
{
	char perr[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	size_t pcap_cap = 0;
	pcap_t *pd;
	int rc;

	memset(cap, 0, sizeof(*cap));
	pd = pcap_open_offline(path, perr);
	if (!pd) {
		snprintf(err, errlen, "%s", perr);
		return -1;
	}
	cap->dlt = pcap_datalink(pd);
	cap->snaplen = pcap_snapshot(pd);
	while ((rc = pcap_next_ex(pd, &h, &data)) == 1) {
		struct pcw_pkt *p;

		if (cap->npkts == pcap_cap) {
			pcap_cap = pcap_cap ? pcap_cap * 2 : 256;
			p = realloc(cap->pkts, pcap_cap * sizeof(*p));
			if (!p)
				goto oom;
			cap->pkts = p;
		}
		p = &cap->pkts[cap->npkts];
		memset(p, 0, sizeof(*p));
		p->h = *h;
		p->data = malloc(h->caplen ? h->caplen : 1);
		if (!p->data)
			goto oom;
		memcpy(p->data, data, h->caplen);
		p->conn = -1;
		cap->npkts++;
		pcw_parse(cap->dlt, p);
	}
	if (rc == PCAP_ERROR) {
		snprintf(err, errlen, "%s: %s", path, pcap_geterr(pd));
		pcap_close(pd);
		return -1;
	}
	pcap_close(pd);

	for (size_t i = 0; i < cap->npkts; i++) {
		struct pcw_pkt *p = &cap->pkts[i];
		struct pcw_conn *c;
		int side = 0, ci;

		if (!p->tcp)
			continue;
		ci = conn_of(cap, p, &side);
		if (ci < 0)
			goto oom;
		c = &cap->conns[ci];
		p->conn = ci;
		p->dir = side;
		if ((p->flags & 0x02) && !(p->flags & 0x10) && !c->syn_seen) {
			c->syn_seen = true;
			c->syn_seq = p->seq;
			if (side == 1)
				swap_sides(cap, ci);
		}
		if (p->pay_len)
			c->any_payload = true;
		if (p->flags & 0x04)
			c->rst = c->closed = true;
		if (p->flags & 0x01) {
			c->d[p->dir].fin = true;
			if (c->d[0].fin && c->d[1].fin)
				c->closed = true;
		}
	}
	for (size_t ci = 0; ci < cap->nconns; ci++) {
		struct pcw_conn *c = &cap->conns[ci];

		for (int d = 0; d < 2; d++)
			if (reassemble(cap, (int)ci, d, err, errlen) < 0)
				return -1;
		/* Without a SYN the initiator is the side whose first bytes
		 * are an MPA Request (iwdump's rule too). */
		if (!c->syn_seen && !starts_with_request(&c->d[0]) && starts_with_request(&c->d[1])) {
			struct pcw_dir t = c->d[0];

			c->d[0] = c->d[1];
			c->d[1] = t;
			swap_sides(cap, (int)ci);
		}
		mpa(c);
		if (!c->mpa)
			continue;
		for (int d = 0; d < 2; d++)
			if (walk(c, d, cap, err, errlen) < 0)
				return -1;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	pcap_close(pd);
	return -1;
}

void pcw_free(struct pcw_cap *cap)
{
	for (size_t i = 0; i < cap->npkts; i++)
		free(cap->pkts[i].data);
	free(cap->pkts);
	for (size_t i = 0; i < cap->nconns; i++) {
		for (int d = 0; d < 2; d++) {
			free(cap->conns[i].d[d].buf);
			free(cap->conns[i].d[d].owner);
			free(cap->conns[i].d[d].fpdus);
		}
	}
	free(cap->conns);
	memset(cap, 0, sizeof(*cap));
}

uint32_t pcw_delivered_pkt(const struct pcw_dir *d, uint64_t off)
{
	uint32_t m = 0;

	for (uint64_t i = 0; i <= off && i < d->contig; i++)
		if (d->owner[i] > m)
			m = d->owner[i];
	return m;
}

size_t pcw_store(struct pcw_cap *cap, int ci, int dir, uint64_t from, uint64_t to)
{
	const struct pcw_dir *d = &cap->conns[ci].d[dir];
	size_t changed = 0;

	for (size_t i = 0; i < cap->npkts; i++) {
		struct pcw_pkt *p = &cap->pkts[i];
		uint64_t a, b, lo, hi;
		int64_t off;
		bool ip_ok, tcp_ok;

		if (p->conn != ci || p->dir != dir || !p->pay_len || (p->flags & 0x02))
			continue;
		off = (int32_t)(p->seq - d->base);
		if (off < 0)
			continue;
		a = (uint64_t)off;
		b = a + p->pay_len;
		lo = a > from ? a : from;
		hi = b < to ? b : to;
		if (lo >= hi || hi > d->len)
			continue;
		pcw_csum_state(p, &ip_ok, &tcp_ok);
		memcpy(p->data + p->pay_off + (lo - a), d->buf + lo, (size_t)(hi - lo));
		pcw_csum_fix(p, false, tcp_ok); /* the IP header did not change */
		changed++;
	}
	return changed;
}

const char *pcw_op_name(uint8_t opcode)
{
	static const char *const names[16] = {
		"WRITE", "READ_REQ", "READ_RESP", "SEND", "SEND_INV", "SEND_SE", "SEND_SE_INV", "TERMINATE",
		"IMM", "IMM_SE", "ATOMIC_REQ", "ATOMIC_RESP", "OP12", "OP13", "OP14", "OP15", /* iwdump's names */
	};
	return names[opcode & 15];
}

int pcw_op_parse(const char *s)
{
	char *end;
	long v;

	for (int i = 0; i < 16; i++)
		if (!strcmp(s, pcw_op_name((uint8_t)i)))
			return i;
	/* OPn is still accepted for every n */
	if (s[0] == 'O' && s[1] == 'P')
		s += 2;
	v = strtol(s, &end, 0);
	if (end != s && !*end && v >= 0 && v < 16)
		return (int)v;
	return -1;
}
