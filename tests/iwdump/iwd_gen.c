/* Session generator for the iwdump tests (see iwd_gen.h). */
#include "iwd_gen.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp/ddp_tx.h"
#include "iw_bytes.h"
#include "iwd_run.h"
#include "iwt_common.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"

#define A IWT_TCP_A
#define B IWT_TCP_B
#define EMSS 1460
/* Both streams wrap their sequence numbers during the session. */
#define ISN_A 0xFFFFF000u
#define ISN_B 0xFFFFE000u

static const size_t seg_plan[] = {700, 1300, 90, 1460, 37, 517};
#define SEG_PLAN_N (sizeof(seg_plan) / sizeof(seg_plan[0]))

static void append(struct iwd_gen *g, int dir, const void *p, size_t n)
{
	ck_assert_msg(g->len[dir] + n <= IWD_GEN_STREAM_MAX, "generator stream full");
	memcpy(g->stream[dir] + g->len[dir], p, n);
	g->len[dir] += n;
}

/* Write stream bytes [off, off + n) of dir as one segment. */
static void put_seg(struct iwd_gen *g, int dir, size_t off, size_t n, uint8_t flags)
{
	uint32_t seq = g->base[dir] + (uint32_t)off;

	g->tcp.snd_nxt[dir] = seq;
	ck_assert_int_eq(iwt_tcp_segment(&g->tcp, dir, flags, g->stream[dir] + off, n), 0);
	if ((int32_t)(seq + (uint32_t)n - g->hw[dir]) > 0)
		g->hw[dir] = seq + (uint32_t)n;
	/* Later packets (and the peer's ACKs) carry the high-water mark. */
	g->tcp.snd_nxt[dir] = g->hw[dir];
	ck_assert_int_lt(g->nsegs[dir], IWD_GEN_MAX_SEGS);
	g->segs[dir][g->nsegs[dir]].end = off + n;
	g->segs[dir][g->nsegs[dir]].frame = g->pcap.packets;
	g->nsegs[dir]++;
}

uint64_t iwd_gen_frame_of(const struct iwd_gen *g, int dir, size_t off)
{
	for (int i = 0; i < g->nsegs[dir]; i++)
		if (g->segs[dir][i].end > off)
			return g->segs[dir][i].frame;
	ck_abort_msg("offset %zu of dir %d was never sent", off, dir);
	return 0;
}

uint64_t iwd_gen_last_frame(const struct iwd_gen *g)
{
	return g->pcap.packets;
}

void iwd_gen_flush(struct iwd_gen *g, int dir)
{
	size_t cuts[IWD_GEN_MAX_SEGS][2];
	size_t n = 0, off = g->flushed[dir], end = g->len[dir];
	enum iwd_tcp_mode mode = g->o.mode[dir];

	while (off < end) {
		size_t z = seg_plan[g->data_segs[dir] % SEG_PLAN_N];

		if (z > end - off)
			z = end - off;
		ck_assert_uint_lt(n, IWD_GEN_MAX_SEGS);
		cuts[n][0] = off;
		cuts[n][1] = z;
		n++;
		off += z;
		g->data_segs[dir]++;
	}
	for (size_t i = 0; i < n; i++) {
		size_t o = cuts[i][0], z = cuts[i][1];
		uint8_t psh = i + 1 == n ? IWT_TCP_PSH : 0;

		switch (mode) {
		case IWD_TCP_NORMAL:
			put_seg(g, dir, o, z, psh);
			break;
		case IWD_TCP_RETRANSMIT:
			put_seg(g, dir, o, z, psh);
			if (i % 3 == 1)
				put_seg(g, dir, o, z, psh); /* immediate duplicate */
			if (i % 4 == 3)
				put_seg(g, dir, cuts[i - 2][0], cuts[i - 2][1], 0); /* a late one */
			break;
		case IWD_TCP_OVERLAP:
			if (i > 0 && o >= 100)
				put_seg(g, dir, o - 100, z + 100, psh);
			else
				put_seg(g, dir, o, z, psh);
			break;
		case IWD_TCP_REORDER:
			if (i % 2 == 0 && i + 1 < n) {
				put_seg(g, dir, cuts[i + 1][0], cuts[i + 1][1], i + 2 == n ? IWT_TCP_PSH : 0);
				put_seg(g, dir, o, z, 0);
				i++;
			} else {
				put_seg(g, dir, o, z, psh);
			}
			break;
		case IWD_TCP_DROP:
			if (g->data_segs[dir] - n + i == 2 && !g->gap_len) {
				/* Left out: the sequence space still advances. */
				g->gap_seq = g->base[dir] + (uint32_t)o;
				g->gap_len = z;
				if ((int32_t)(g->base[dir] + (uint32_t)(o + z) - g->hw[dir]) > 0)
					g->hw[dir] = g->base[dir] + (uint32_t)(o + z);
				g->tcp.snd_nxt[dir] = g->hw[dir];
			} else {
				put_seg(g, dir, o, z, psh);
			}
			break;
		}
	}
	g->flushed[dir] = end;
}

void iwd_gen_flight(struct iwd_gen *g)
{
	for (int dir = 0; dir < 2; dir++) {
		if (g->flushed[dir] == g->len[dir])
			continue;
		iwd_gen_flush(g, dir);
		ck_assert_int_eq(iwt_tcp_ack(&g->tcp, !dir), 0);
	}
}

static void count_fpdu(struct iwd_gen *g, int dir, int op, size_t payload, bool tagged, uint32_t stag)
{
	g->fpdus[dir]++;
	g->fpdus_op[dir][op & (IW_OP_MAX - 1)]++;
	g->payload[dir] += payload;
	if (!tagged)
		return;
	for (int i = 0; i < g->nstags[dir]; i++) {
		if (g->stags[dir][i].stag == stag) {
			g->stags[dir][i].bytes += payload;
			return;
		}
	}
	ck_assert_int_lt(g->nstags[dir], IWD_GEN_MAX_STAGS);
	g->stags[dir][g->nstags[dir]].stag = stag;
	g->stags[dir][g->nstags[dir]].bytes = payload;
	g->nstags[dir]++;
}

/* Frame one ULPDU (hdr + payload iovecs) into dir's stream. */
static struct iwd_gen_fpdu build(struct iwd_gen *g, int dir, const void *hdr, size_t hdr_len, const struct iovec *pl,
				 int npl)
{
	struct iovec wiov[2 * (8 + 2) + 2 * IW_MPA_TX_MAX_MARKERS];
	struct iw_mpa_tx_fpdu fp;
	struct iwd_gen_fpdu pos = {.start = g->len[dir]};
	int nw = iw_mpa_tx_build(&g->tx[dir], &fp, hdr, hdr_len, pl, npl, wiov, (int)(sizeof(wiov) / sizeof(wiov[0])));

	ck_assert_msg(nw > 0, "iw_mpa_tx_build: %d", nw);
	for (int i = 0; i < nw; i++)
		append(g, dir, wiov[i].iov_base, wiov[i].iov_len);
	pos.end = g->len[dir];
	ck_assert_uint_eq(pos.end - pos.start, fp.f.wire_len);
	return pos;
}

struct iwd_gen_fpdu iwd_gen_raw(struct iwd_gen *g, int dir, const void *hdr, size_t hdr_len, const void *payload,
				size_t plen, int op_for_stats)
{
	struct iovec pl = {(void *)(uintptr_t)payload, plen};
	const uint8_t *h = hdr;
	bool tagged = hdr_len >= 1 && (h[0] & IW_DDP_CTRL_TAGGED);
	size_t ddp_len = tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;

	if (op_for_stats >= 0)
		count_fpdu(g, dir, op_for_stats, hdr_len + plen - ddp_len, tagged, tagged ? iw_get_be32(h + 2) : 0);
	return build(g, dir, hdr, hdr_len, &pl, plen ? 1 : 0);
}

static void count_size(struct iwd_gen *g, int dir, int op, uint64_t size)
{
	struct iwd_gen_size *z = g->sizes[dir];
	int i = 0, n = g->nsizes[dir];

	while (i < n && (z[i].op < op || (z[i].op == op && z[i].size < size)))
		i++;
	if (i < n && z[i].op == op && z[i].size == size) {
		z[i].count++;
		return;
	}
	ck_assert_int_lt(n, IWD_GEN_MAX_SIZES);
	memmove(&z[i + 1], &z[i], (size_t)(n - i) * sizeof(*z));
	z[i] = (struct iwd_gen_size){.op = op, .size = size, .count = 1};
	g->nsizes[dir]++;
}

struct iwd_gen_fpdu iwd_gen_msg(struct iwd_gen *g, int dir, uint8_t op, uint32_t len, uint32_t stag, uint64_t to,
				const struct iw_rdmap_read_req *rr, const struct iw_term_cause *term)
{
	const struct iw_rdmap_opinfo *oi = &iw_rdmap_optable[op];
	struct iw_ddp_tx_msg dm;
	struct iovec sgl[3];
	int nsge = 0;
	uint8_t rr_body[IW_RDMAP_READ_REQ_LEN], term_body[IW_RDMAP_TERM_MAX_LEN];
	struct iwd_gen_fpdu pos = {0};
	size_t done = 0;

	if (op == IW_OP_TERMINATE) {
		/* Report a made-up offending Read Request: M, D and R copied. */
		struct iw_ddp_hdr h = {.last = true, .ulp_ctrl = iw_rdmap_ctrl(IW_OP_READ_REQ), .qn = 1, .msn = 9};
		uint8_t bad[IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN];
		struct iw_rdmap_read_req fake = {.sink_stag = 0x11, .size = 64, .src_stag = 0x22};
		struct iw_rdmap_term t;

		iw_ddp_hdr_encode(&h, bad);
		iw_rdmap_read_req_encode(&fake, bad + IW_DDP_UNTAGGED_HDR_LEN);
		iw_rdmap_term_prepare(&t, *term, bad, sizeof(bad), (uint16_t)sizeof(bad));
		len = (uint32_t)iw_rdmap_term_encode(&t, term_body);
		sgl[nsge++] = (struct iovec){term_body, len};
	} else if (op == IW_OP_READ_REQ) {
		len = 0;
	} else if (len) {
		ck_assert_uint_le(len, sizeof(g->msgbuf));
		iwt_fill_pattern(g->msgbuf, len, (uint32_t)(g->fpdus[dir] * 7 + op));
		sgl[nsge++] = (struct iovec){g->msgbuf, len / 3};
		sgl[nsge++] = (struct iovec){g->msgbuf + len / 3, len - len / 3};
	}
	if (oi->tagged) {
		iw_ddp_tx_msg_tagged(&dm, iw_rdmap_ctrl(op), stag, to, sgl, nsge);
	} else {
		iw_ddp_tx_msg_untagged(&dm, iw_rdmap_ctrl(op), (oi->flags & IW_OPF_INV) ? stag : 0, oi->qn,
				       g->msn[dir][oi->qn]++, sgl, nsge);
		if (op == IW_OP_READ_REQ) {
			iw_rdmap_read_req_encode(rr, rr_body);
			dm.ulp_ext = rr_body;
			dm.ulp_ext_len = IW_RDMAP_READ_REQ_LEN;
		}
	}
	do {
		uint8_t hdr[IW_DDP_TX_MAX_HDR];
		struct iovec piov[8];
		size_t hdr_len = 0, plen = 0;
		int np = iw_ddp_tx_next(&dm, g->mulpdu[dir], hdr, &hdr_len, piov, 8, &plen);

		ck_assert_msg(np >= 0, "iw_ddp_tx_next: %d", np);
		/* iwdump counts a Read Request's body as payload. */
		count_fpdu(g, dir, op, hdr_len + plen - (oi->tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN),
			   oi->tagged, stag);
		pos = build(g, dir, hdr, hdr_len, piov, np);
		done += plen;
	} while (!iw_ddp_tx_done(&dm));
	ck_assert_uint_eq(done, len);
	g->msgs[dir]++;
	g->msgs_op[dir][op]++;
	count_size(g, dir, op, op == IW_OP_READ_REQ ? rr->size : len);
	if (op == IW_OP_READ_REQ)
		g->reads_req[dir]++;
	if (op == IW_OP_READ_RESP)
		g->reads_ans[!dir]++; /* the generator always answers in order */
	return pos;
}

static void mpa_handshake(struct iwd_gen *g)
{
	static const uint8_t pd_req[] = "iwdump test request";
	static const uint8_t pd_rep[] = "iwdump test reply";
	struct iw_mpa_settings sa, sb;
	struct iw_mpa_frame req, rep;
	struct iw_mpa_outcome out[2];
	enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	ssize_t n;

	iw_mpa_settings_default(&sa);
	sa.crc = g->o.crc ? IW_MPA_CRC_ON : IW_MPA_CRC_OFF;
	sa.markers_wanted = g->o.markers;
	sa.ird = 16;
	sa.ord = 16;
	sb = sa;
	sb.crc = IW_MPA_CRC_OFF; /* follows the Request */
	sb.ird = g->o.b_ird ? g->o.b_ird : 8;
	sb.ord = 4;

	iw_mpa_make_request(&sa, pd_req, (uint16_t)(sizeof(pd_req) - 1), &req);
	n = iw_mpa_frame_encode(&req, buf, sizeof(buf), &why);
	ck_assert_msg(n > 0, "request: %s", iw_mpa_frame_error_str(why));
	append(g, A, buf, (size_t)n);
	g->hs_len[A] = (size_t)n;
	ck_assert_int_eq(iw_mpa_respond(&sb, &req, pd_rep, (uint16_t)(sizeof(pd_rep) - 1), &rep, &out[B]), IW_MPA_OK);
	n = iw_mpa_frame_encode(&rep, buf, sizeof(buf), &why);
	ck_assert_msg(n > 0, "reply: %s", iw_mpa_frame_error_str(why));
	append(g, B, buf, (size_t)n);
	g->hs_len[B] = (size_t)n;
	ck_assert_int_eq(iw_mpa_initiator_check(&sa, &req, &rep, &out[A]), IW_MPA_OK);
	/* Each frame alone in its segment. */
	put_seg(g, A, 0, g->hs_len[A], IWT_TCP_PSH);
	put_seg(g, B, 0, g->hs_len[B], IWT_TCP_PSH);
	g->flushed[A] = g->hs_len[A];
	g->flushed[B] = g->hs_len[B];
	for (int dir = 0; dir < 2; dir++) {
		iw_mpa_tx_init(&g->tx[dir], out[dir].crc, out[dir].markers_tx);
		g->mulpdu[dir] = iw_mpa_mulpdu(EMSS, out[dir].markers_tx);
		for (int q = 0; q < IW_DDP_NUM_QN; q++)
			g->msn[dir][q] = 1;
	}
}

struct iwd_gen *iwd_gen_open(const char *name, const struct iwd_gen_opts *o)
{
	struct iwd_gen *g = calloc(1, sizeof(*g));
	struct iwt_endpoint ea, eb;

	ck_assert_ptr_nonnull(g);
	g->o = *o;
	iwd_path(g->path, sizeof(g->path), name);
	ck_assert_int_eq(iwt_pcap_open(&g->pcap, g->path), 0);
	ck_assert_int_eq(iwt_endpoint_set(&ea, "02:00:00:00:00:0a", o->ipv6 ? "fd00:77::a" : "192.168.77.10", 40001), 0);
	ck_assert_int_eq(iwt_endpoint_set(&eb, "02:00:00:00:00:0b", o->ipv6 ? "fd00:77::b" : "192.168.77.11", 7174), 0);
	iwt_tcp_init(&g->tcp, &g->pcap, &ea, &eb, ISN_A, ISN_B);
	ck_assert_int_eq(iwt_tcp_handshake(&g->tcp), 0);
	g->base[A] = g->hw[A] = ISN_A + 1;
	g->base[B] = g->hw[B] = ISN_B + 1;
	mpa_handshake(g);
	return g;
}

void iwd_gen_close(struct iwd_gen *g)
{
	ck_assert_int_eq(iwt_tcp_close(&g->tcp, A), 0);
	ck_assert_int_eq(iwt_pcap_close(&g->pcap), 0);
}

void iwd_gen_end(struct iwd_gen *g)
{
	ck_assert_int_eq(iwt_pcap_close(&g->pcap), 0);
}

void iwd_gen_free(struct iwd_gen *g)
{
	free(g);
}

#define RR(sk, st, sz, ss, so) (&(struct iw_rdmap_read_req){(sk), (st), (sz), (ss), (so)})

struct iwd_gen *iwd_gen_clean(const char *name, const struct iwd_gen_opts *o)
{
	struct iwd_gen *g = iwd_gen_open(name, o);
	struct iw_term_cause term = IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, IW_ECODE_RDMAP_INV_STAG);

	/* A speaks first (lock-step). */
	iwd_gen_msg(g, A, IW_OP_SEND, 3000, 0, 0, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_WRITE, 2600, 0x00b20101, 0x7f0000010000ull, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_READ_REQ, 0, 0, 0, RR(0x00a10201, 0x20000, 3500, 0x00b20301, 0x7f0000300000ull),
		    NULL);
	iwd_gen_msg(g, A, IW_OP_SEND_SE, 40, 0, 0, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_SEND_INV, 1200, 0x00b20401, 0, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_SEND_SE_INV, 0, 0x00b20501, 0, NULL, NULL);
	iwd_gen_flush(g, A);
	ck_assert_int_eq(iwt_tcp_ack(&g->tcp, B), 0);
	g->first_ack_frame = g->pcap.packets;
	iwd_gen_msg(g, B, IW_OP_READ_RESP, 3500, 0x00a10201, 0x20000, NULL, NULL);
	iwd_gen_msg(g, B, IW_OP_SEND, 100, 0, 0, NULL, NULL);
	iwd_gen_msg(g, B, IW_OP_WRITE, 2048, 0x00a10601, 0x1000, NULL, NULL);
	iwd_gen_msg(g, B, IW_OP_SEND_INV, 16, 0x00a10701, 0, NULL, NULL);
	iwd_gen_msg(g, B, IW_OP_SEND_SE, 2500, 0, 0, NULL, NULL);
	iwd_gen_msg(g, B, IW_OP_READ_REQ, 0, 0, 0, RR(0x00b20901, 0x9000, 2222, 0x00a10a01, 0x55aa0000ull), NULL);
	iwd_gen_flush(g, B);
	ck_assert_int_eq(iwt_tcp_ack(&g->tcp, A), 0);
	iwd_gen_msg(g, A, IW_OP_READ_RESP, 2222, 0x00b20901, 0x9000, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_SEND, 24, 0, 0, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_SEND, 4100, 0, 0, NULL, NULL);
	iwd_gen_msg(g, A, IW_OP_TERMINATE, 0, 0, 0, NULL, &term);
	iwd_gen_flight(g);
	iwd_gen_close(g);
	return g;
}

static const char *op_short(int op)
{
	static const char *const n[] = {"WRITE", "READ_REQ", "READ_RESP", "SEND", "SEND_INV", "SEND_SE", "SEND_SE_INV",
					"TERMINATE"};
	return op < 8 ? n[op] : "OP?";
}

void iwd_gen_summary_lines(const struct iwd_gen *g, int dir, uint64_t dup, uint64_t ooo, char *buf, size_t cap)
{
	const char *dn = dir == A ? "A>B" : "B>A";
	size_t n = strlen(buf);

#define PUT(...)                                                         \
	do {                                                             \
		int k_ = snprintf(buf + n, cap - n, __VA_ARGS__);        \
		ck_assert(k_ >= 0 && (size_t)k_ < cap - n);              \
		n += (size_t)k_;                                         \
	} while (0)
	PUT("  %s: %" PRIu64 " fpdus, %" PRIu64 " messages, %" PRIu64 " payload bytes, %zu tcp bytes (%" PRIu64
	    " dup, %" PRIu64 " out-of-order segments)\n",
	    dn, g->fpdus[dir], g->msgs[dir], g->payload[dir], g->len[dir], dup, ooo);
	if (g->fpdus[dir]) {
		PUT("  %s ops (messages/fpdus):", dn);
		for (int op = 0; op < IW_OP_MAX; op++)
			if (g->fpdus_op[dir][op] || g->msgs_op[dir][op])
				PUT(" %s %" PRIu64 "/%" PRIu64, op_short(op), g->msgs_op[dir][op], g->fpdus_op[dir][op]);
		PUT("\n");
	}
	if (g->nsizes[dir]) {
		PUT("  %s sizes (bytes x messages):", dn);
		for (int i = 0; i < g->nsizes[dir]; i++)
			PUT(" %s %" PRIu64 "x%" PRIu64, op_short(g->sizes[dir][i].op), g->sizes[dir][i].size,
			    g->sizes[dir][i].count);
		PUT("\n");
	}
	if (g->reads_req[dir] || g->reads_ans[dir])
		PUT("  %s reads: %" PRIu64 " requested, %" PRIu64 " answered, %" PRIu64 " unanswered\n", dn,
		    g->reads_req[dir], g->reads_ans[dir], g->reads_req[dir] - g->reads_ans[dir]);
	for (int i = 0; i < g->nstags[dir]; i++)
		PUT("  %s stag 0x%08" PRIx32 ": %" PRIu64 " bytes\n", dn, g->stags[dir][i].stag, g->stags[dir][i].bytes);
#undef PUT
}
