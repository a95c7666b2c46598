/* pcapmut's mutations (see mut.h). Header fields are located by their
 * logical offset in the FPDU (markers skipped) and never beyond it. */
#include "mut.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "iw_bytes.h"
#include "mpa/crc32c.h"
#include "mpa/mpa_wire.h"
#include "rdmap/rdmap_wire.h"

const char *const mut_names[M_COUNT] = {
	"flip-bit", "msn", "mo", "ddp-version", "rdmap-version", "opcode", "ulpdu-small", "truncate",
	"read-req-to-write", "marker",
};

/* Logical FPDU bytes; nothing outside the FPDU is ever touched (reads
 * there give 0, writes are dropped; the callers check lengths first). */
static uint8_t lget(const struct sel *s, uint32_t i)
{
	if (i >= iw_mpa_fpdu_len(s->f->ulpdu_len))
		return 0;
	return s->d->buf[pcw_logical_off(s->d, s->f->start, i)];
}

static void lset(struct sel *s, uint32_t i, uint8_t v)
{
	if (i < iw_mpa_fpdu_len(s->f->ulpdu_len))
		s->d->buf[pcw_logical_off(s->d, s->f->start, i)] = v;
}

static uint32_t lget32(const struct sel *s, uint32_t i)
{
	return (uint32_t)lget(s, i) << 24 | (uint32_t)lget(s, i + 1) << 16 | (uint32_t)lget(s, i + 2) << 8 |
	       lget(s, i + 3);
}

static void lset32(struct sel *s, uint32_t i, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		lset(s, i + (uint32_t)k, (uint8_t)(v >> (24 - 8 * k)));
}

static void recompute_crc(struct sel *s)
{
	uint32_t at = 2u + s->f->ulpdu_len + iw_mpa_pad_len(s->f->ulpdu_len);
	uint8_t b[4];

	iw_crc32c_put_wire(b, pcw_fpdu_crc(s->d, s->f));
	for (uint32_t i = 0; i < 4; i++)
		lset(s, at + i, b[i]);
}

static bool seq_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* Cut the packet's payload to keep bytes (it stays the frame's tail). */
static void shorten(struct pcw_pkt *p, size_t keep)
{
	size_t cut = p->pay_len - keep;
	uint8_t *ip = p->data + p->ip_off;

	if (p->family == 4)
		iw_put_be16(ip + 2, (uint16_t)(iw_get_be16(ip + 2) - cut));
	else
		iw_put_be16(ip + 4, (uint16_t)(iw_get_be16(ip + 4) - cut));
	p->pay_len = keep;
	p->h.len -= p->h.caplen - (bpf_u_int32)(p->pay_off + keep);
	p->h.caplen = (bpf_u_int32)(p->pay_off + keep);
}

static int truncate_stream(struct sel *s, uint32_t keep, char *msg, size_t msglen)
{
	struct pcw_dir *d = s->d;
	uint64_t x = s->f->start + keep;
	uint32_t cut = d->owner[x - 1], fin_seq = d->base + (uint32_t)x, clamped = 0, dropped = 0;
	struct pcw_pkt *cp = &s->cap.pkts[cut];
	bool ip_ok, tcp_ok;

	s->at_pkt = cut;
	for (size_t i = 0; i < s->cap.npkts; i++) {
		struct pcw_pkt *p = &s->cap.pkts[i];
		int64_t a;

		if (p->conn != s->ci || i == cut)
			continue;
		if (p->dir != s->dir) {
			/* The peer cannot have acknowledged what was never sent. */
			if ((p->flags & 0x10) && seq_gt(p->ack, fin_seq + 1)) {
				pcw_csum_state(p, &ip_ok, &tcp_ok);
				iw_put_be32(p->data + p->tcp_off + 8, fin_seq + 1);
				p->ack = fin_seq + 1;
				pcw_csum_fix(p, false, tcp_ok);
				clamped++;
			}
			continue;
		}
		if (p->flags & 0x02)
			continue;
		a = (int32_t)(p->seq - d->base);
		if ((p->pay_len && (uint64_t)a + p->pay_len > x) || (!p->pay_len && i > cut)) {
			p->drop = true;
			dropped++;
		}
	}
	pcw_csum_state(cp, &ip_ok, &tcp_ok);
	shorten(cp, (size_t)(x - (uint64_t)(int32_t)(cp->seq - d->base)));
	cp->flags |= 0x01;
	cp->data[cp->tcp_off + 13] = cp->flags;
	pcw_csum_fix(cp, ip_ok, tcp_ok);
	snprintf(msg, msglen,
		 "stream ends with FIN after %u of the FPDU's %u bytes (frame %zu shortened, %u later packets of "
		 "this direction removed, %u peer ACKs clamped)",
		 keep, s->f->wire_len, (size_t)cut + 1, dropped, clamped);
	return 0;
}

size_t mut_out_frame(const struct pcw_cap *cap, size_t idx)
{
	size_t n = 1;

	for (size_t i = 0; i < idx; i++)
		n += !cap->pkts[i].drop;
	return n;
}

int mut_find(struct sel *s, int conn, const char *dir, int op, unsigned nth, char *err, size_t errlen)
{
	unsigned seen = 0;

	if (conn > 0) {
		if ((size_t)conn > s->cap.nconns) {
			snprintf(err, errlen, "no connection %d (capture has %zu)", conn, s->cap.nconns);
			return -1;
		}
		s->ci = conn - 1;
	} else {
		/* The first MPA connection with such an FPDU, else the first
		 * MPA connection (the search below then says what is missing). */
		int first = -1, d = strcmp(dir, "B>A") && strcmp(dir, "b2a") ? 0 : 1;

		s->ci = -1;
		for (size_t i = 0; i < s->cap.nconns && s->ci < 0; i++) {
			const struct pcw_conn *c = &s->cap.conns[i];

			if (!c->mpa)
				continue;
			if (first < 0)
				first = (int)i;
			seen = 0;
			for (size_t k = 0; k < c->d[d].nfpdus && seen < nth; k++)
				seen += op < 0 || c->d[d].fpdus[k].opcode == op;
			if (seen == nth)
				s->ci = (int)i;
		}
		if (s->ci < 0)
			s->ci = first;
		seen = 0;
		if (s->ci < 0) {
			snprintf(err, errlen, "no MPA connection in the capture");
			return -1;
		}
	}
	s->c = &s->cap.conns[s->ci];
	if (!s->c->mpa) {
		snprintf(err, errlen, "connection %d has no decodable MPA handshake", s->ci + 1);
		return -1;
	}
	if (!strcmp(dir, "A>B") || !strcmp(dir, "a2b"))
		s->dir = 0;
	else if (!strcmp(dir, "B>A") || !strcmp(dir, "b2a"))
		s->dir = 1;
	else {
		snprintf(err, errlen, "bad direction '%s'", dir);
		return -1;
	}
	s->d = &s->c->d[s->dir];
	for (size_t i = 0; i < s->d->nfpdus; i++) {
		if (op >= 0 && s->d->fpdus[i].opcode != op)
			continue;
		if (++seen == nth) {
			s->fi = i;
			s->f = &s->d->fpdus[i];
			return 0;
		}
	}
	snprintf(err, errlen, "conn %d dir %s has %u matching FPDUs, not %u", s->ci + 1, dir, seen, nth);
	return -1;
}

int mut_apply(struct sel *s, enum mut m, bool have_v, long long v, char *msg, size_t msglen, char *err,
	      size_t errlen)
{
	struct pcw_fpdu *f = s->f;
	uint32_t hl = f->tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
	uint32_t payload = f->ulpdu_len >= hl ? f->ulpdu_len - hl : 0;
	bool crc = s->c->crc;
	uint32_t old;

	s->at_pkt = f->last_pkt;
	switch (m) {
	case M_FLIP:
		if (v < 0 || (uint64_t)v >= payload) {
			snprintf(err, errlen, "payload byte %lld is outside the %u-byte payload", v, payload);
			return -1;
		}
		if (!crc) {
			snprintf(err, errlen, "flip-bit needs a connection with CRC on (else nothing can notice)");
			return -1;
		}
		old = lget(s, 2 + hl + (uint32_t)v);
		lset(s, 2 + hl + (uint32_t)v, (uint8_t)(old ^ 1));
		snprintf(msg, msglen, "payload byte %lld 0x%02x -> 0x%02x, CRC kept", v, old, old ^ 1);
		crc = false;
		break;
	case M_MSN:
	case M_MO: {
		uint32_t at = m == M_MSN ? 12 : 16; /* logical offsets of MSN, MO */

		if (f->tagged || f->ulpdu_len < IW_DDP_UNTAGGED_HDR_LEN) {
			snprintf(err, errlen, "%s needs an untagged FPDU", mut_names[m]);
			return -1;
		}
		if (!have_v)
			v = m == M_MSN ? 1 : 16;
		old = lget32(s, at);
		lset32(s, at, old + (uint32_t)v);
		snprintf(msg, msglen, "%s %u -> %u", m == M_MSN ? "MSN" : "MO", old, old + (uint32_t)v);
		break;
	}
	case M_DDPV:
		if (!have_v)
			v = 2;
		old = lget(s, 2);
		lset(s, 2, (uint8_t)((old & ~IW_DDP_CTRL_DV_MASK) | ((uint32_t)v & IW_DDP_CTRL_DV_MASK)));
		snprintf(msg, msglen, "DDP version %u -> %lld", old & IW_DDP_CTRL_DV_MASK, v & 3);
		break;
	case M_RDMAPV:
		if (!have_v)
			v = 2;
		old = lget(s, 3);
		lset(s, 3, (uint8_t)((old & 0x3F) | (((uint32_t)v & 3) << 6)));
		snprintf(msg, msglen, "RDMAP version %u -> %lld", old >> 6, v & 3);
		break;
	case M_OPCODE:
		if (!have_v)
			v = 13;
		old = lget(s, 3);
		lset(s, 3, (uint8_t)((old & 0xF0) | ((uint32_t)v & 0x0F)));
		snprintf(msg, msglen, "opcode %u -> %lld", old & 0x0F, v & 15);
		break;
	case M_ULPDU: {
		uint8_t ctrl[2] = {lget(s, 2), lget(s, 3)};
		uint16_t h, min;

		iw_rdmap_ulp_lens(ctrl, &h, &min);
		if (!have_v)
			v = (h > min ? h : min) - 1;
		if (v < 0 || v >= f->ulpdu_len) {
			snprintf(err, errlen, "ULPDU_LENGTH %lld is not below %u", v, f->ulpdu_len);
			return -1;
		}
		lset(s, 0, (uint8_t)(v >> 8));
		lset(s, 1, (uint8_t)v);
		/* Judged once the control bytes that set the minimum arrived. */
		s->at_pkt = pcw_delivered_pkt(s->d, pcw_logical_off(s->d, f->start, 3));
		snprintf(msg, msglen, "ULPDU_LENGTH %u -> %lld", f->ulpdu_len, v);
		crc = false;
		break;
	}
	case M_TRUNC:
		if (!have_v)
			v = f->wire_len / 2;
		if (v <= 0 || v >= f->wire_len) {
			snprintf(err, errlen, "keep %lld bytes: must be 1..%u", v, f->wire_len - 1);
			return -1;
		}
		return truncate_stream(s, (uint32_t)v, msg, msglen);
	case M_RR2W: {
		uint32_t stag;
		uint8_t to[8];

		if (f->tagged || f->opcode != IW_OP_READ_REQ || f->ulpdu_len < IW_DDP_UNTAGGED_HDR_LEN + 12) {
			snprintf(err, errlen, "read-req-to-write needs a Read Request FPDU");
			return -1;
		}
		stag = lget32(s, 20);
		for (uint32_t i = 0; i < 8; i++)
			to[i] = lget(s, 24 + i);
		lset(s, 2, (uint8_t)(IW_DDP_CTRL_TAGGED | IW_DDP_CTRL_LAST | (lget(s, 2) & IW_DDP_CTRL_DV_MASK)));
		lset(s, 3, (uint8_t)((lget(s, 3) & 0xC0) | IW_OP_WRITE));
		lset32(s, 4, stag);
		for (uint32_t i = 0; i < 8; i++)
			lset(s, 8 + i, to[i]);
		snprintf(msg, msglen, "Read Request -> RDMA Write stag 0x%08x of %u bytes", stag,
			 f->ulpdu_len - IW_DDP_TAGGED_HDR_LEN);
		/* The damage shows at the first Read Response completed after it. */
		{
			const struct pcw_dir *od = &s->c->d[!s->dir];

			for (size_t i = 0; i < od->nfpdus; i++) {
				if (od->fpdus[i].opcode == IW_OP_READ_RESP && od->fpdus[i].last_pkt >= f->last_pkt) {
					s->at_pkt = od->fpdus[i].last_pkt;
					break;
				}
			}
		}
		break;
	}
	case M_MARKER: {
		uint64_t o;

		if (!s->d->markers) {
			snprintf(err, errlen, "no markers in this direction");
			return -1;
		}
		if (!have_v)
			v = 4;
		for (o = f->start; o < f->end; o++)
			if (((o - s->d->frame_len) & (IW_MPA_MARKER_INTERVAL - 1)) == 0)
				break;
		if (o >= f->end) {
			snprintf(err, errlen, "the FPDU (%u bytes) holds no marker", f->wire_len);
			return -1;
		}
		old = iw_get_be16(s->d->buf + o + 2);
		s->at_pkt = pcw_delivered_pkt(s->d, o + IW_MPA_MARKER_LEN - 1);
		iw_put_be16(s->d->buf + o + 2, (uint16_t)(old + (uint32_t)v));
		snprintf(msg, msglen, "marker at FPDU byte %" PRIu64 ": FPDUPTR %u -> %u", o - f->start, old,
			 (uint16_t)(old + (uint32_t)v));
		break;
	}
	default:
		return -1;
	}
	if (crc)
		recompute_crc(s);
	{
		size_t n = strlen(msg);

		snprintf(msg + n, msglen - n, "%s; %zu packets carrying it rewritten", crc ? ", CRC recomputed" : "",
			 pcw_store(&s->cap, s->ci, s->dir, f->start, f->end));
	}
	return 0;
}

