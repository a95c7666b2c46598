/* One connection's iWARP session: the MPA Request and Reply (decoded with
 * mpa_frame, negotiated with mpa_negotiate's rules through rdmap_check),
 * then both FPDU streams through the passive checker. Bytes a direction
 * sends before the handshake is complete wait in a small buffer. */
#include <stdlib.h>
#include <string.h>

#include "iwdump.h"

#define HS_MAX (IW_MPA_FRAME_HDR_LEN + 65535) /* largest frame a PD_Length allows */

void iwd_sess_init(struct iwd_sess *s)
{
	memset(s, 0, sizeof(*s));
	s->state = IWD_S_HANDSHAKE;
}

void iwd_sess_release(struct iwd_sess *s)
{
	for (int d = 0; d < 2; d++) {
		free(s->hs[d]);
		s->hs[d] = NULL;
		s->hs_len[d] = s->hs_cap[d] = 0;
	}
	free(s->chk);
	s->chk = NULL;
}

void iwd_sess_free(struct iwd_sess *s)
{
	iwd_sess_release(s);
	for (int d = 0; d < 2; d++) {
		free(s->st[d].stags);
		s->st[d].stags = NULL;
	}
}

static void stag_add(struct iwd_dir_stats *st, uint32_t stag, uint64_t bytes)
{
	for (size_t i = 0; i < st->nstags; i++) {
		if (st->stags[i].stag == stag) {
			st->stags[i].bytes += bytes;
			return;
		}
	}
	if (st->nstags == IWD_MAX_STAGS) {
		st->stags_truncated = true;
		return;
	}
	if (st->nstags == st->stag_cap) {
		size_t cap = st->stag_cap ? st->stag_cap * 2 : 8;
		struct iwd_stag_bytes *a = realloc(st->stags, cap * sizeof(*a));

		if (!a) {
			st->stags_truncated = true;
			return;
		}
		st->stags = a;
		st->stag_cap = cap;
	}
	st->stags[st->nstags].stag = stag;
	st->stags[st->nstags].bytes = bytes;
	st->nstags++;
}

/* Counted in place; past IWD_MAX_SIZES pairs the rest are only flagged. */
static void size_add(struct iwd_dir_stats *st, uint8_t op, uint64_t size)
{
	size_t i = 0;

	while (i < st->nsizes && (st->sizes[i].op < op || (st->sizes[i].op == op && st->sizes[i].size < size)))
		i++;
	if (i < st->nsizes && st->sizes[i].op == op && st->sizes[i].size == size) {
		st->sizes[i].count++;
		return;
	}
	if (st->nsizes == IWD_MAX_SIZES) {
		st->sizes_truncated = true;
		return;
	}
	memmove(&st->sizes[i + 1], &st->sizes[i], (st->nsizes - i) * sizeof(st->sizes[0]));
	st->sizes[i] = (struct iwd_size_count){.op = op, .size = size, .count = 1};
	st->nsizes++;
}

static void msg_stats(struct iwd_sess *s, int dir, const struct iw_rdmap_check_msg *m)
{
	struct iwd_dir_stats *st = &s->st[dir];
	uint8_t op = m->opcode & (IW_OP_MAX - 1);

	st->msgs++;
	st->msgs_op[op]++;
	size_add(st, op, op == IW_OP_READ_REQ ? m->rr.size : m->len);
	if (op == IW_OP_READ_RESP) {
		/* Charged to the requester's direction. */
		if (m->rr_known)
			s->st[!dir].reads_answered++;
		else
			s->st[!dir].resp_unmatched++;
	}
}

static void violation(struct iwd_conn *c, int dir, enum iw_rdmap_check_code code, uint64_t got, uint64_t want,
		      const struct iwd_where *w)
{
	struct iw_rdmap_violation v;

	iw_rdmap_violation_set(&v, code, got, want);
	iwd_out_violation(c, dir, &v, w);
}

static void handle_ev(struct iwd_conn *c, int dir, const struct iw_rdmap_check_ev *ev, const struct iwd_where *w)
{
	struct iwd_dir_stats *st = &c->sess.st[dir];

	if (ev->has_fpdu) {
		const struct iw_rdmap_check_fpdu *f = &ev->fpdu;

		st->fpdus++;
		st->fpdus_op[f->opcode & (IW_OP_MAX - 1)]++;
		st->payload += f->payload_len;
		if (f->hdr.tagged)
			stag_add(st, f->hdr.stag, f->payload_len);
		iwd_out_fpdu(c, dir, f, w);
	}
	if (ev->has_violation)
		iwd_out_violation(c, dir, &ev->viol, w);
	if (ev->has_msg) {
		msg_stats(&c->sess, dir, &ev->msg);
		iwd_out_msg(c, dir, &ev->msg, w);
	}
	if (ev->type == IW_CHK_EV_STOP && ev->viol.code != IW_CHK_TRUNCATED)
		iwd_out_note(c, dir, w, "MPA framing lost: rest of this direction not decoded");
}

static void fpdu_data(struct iwd_conn *c, int dir, const uint8_t *data, size_t len, const struct iwd_where *w)
{
	struct iwd_sess *s = &c->sess;

	if (dir == IW_CHK_I2R) {
		s->i2r_fpdu_seen = true;
	} else if (!s->i2r_fpdu_seen && !s->lockstep_noted) {
		/* RFC 5044 sec. 7.1.2; a siw initiator fails the connection. */
		s->lockstep_noted = true;
		iwd_out_note(c, dir, w, "responder sent FPDU bytes before the initiator's first FPDU (lock-step)");
	}
	while (len && !s->dead[dir]) {
		struct iw_rdmap_check_ev ev;
		size_t n = iw_rdmap_check_feed(s->chk, dir, data, len, &ev);

		data += n;
		len -= n;
		handle_ev(c, dir, &ev, w);
		if (iw_rdmap_check_stopped(s->chk, dir))
			s->dead[dir] = true;
		if (!n && ev.type == IW_CHK_EV_NONE)
			break;
	}
}

static void negotiate(struct iwd_conn *c, const struct iwd_where *w)
{
	struct iwd_sess *s = &c->sess;

	s->reason = iw_rdmap_check_cfg_from_mpa(&s->req, &s->rep, &s->cfg);
	s->cfg.max_ulpdu = c->opts->max_ulpdu;
	if (s->reason != IW_MPA_OK)
		violation(c, IW_CHK_R2I, IW_CHK_MPA_REPLY, s->reason, 0, w);
	s->chk = malloc(sizeof(*s->chk));
	if (!s->chk) {
		iwd_out_warning(c, -1, w, "out of memory: connection not decoded");
		s->state = IWD_S_FAILED;
		return;
	}
	iw_rdmap_check_init(s->chk, &s->cfg);
	s->state = IWD_S_FPDU;
	iwd_out_negotiated(c, w);
	/* Whatever followed the frames in their segments, initiator first
	 * (it must speak first). */
	for (int d = 0; d < 2; d++) {
		if (s->hs_len[d] > s->frame_len[d])
			fpdu_data(c, d, s->hs[d] + s->frame_len[d], s->hs_len[d] - s->frame_len[d], w);
		free(s->hs[d]);
		s->hs[d] = NULL;
		s->hs_len[d] = s->hs_cap[d] = 0;
	}
}

static bool hs_append(struct iwd_conn *c, int dir, const uint8_t *data, size_t len, const struct iwd_where *w)
{
	struct iwd_sess *s = &c->sess;
	size_t limit = (s->have_frame[dir] ? s->frame_len[dir] : HS_MAX) + c->opts->reorder_max;

	if (len > limit - s->hs_len[dir]) {
		iwd_out_warning(c, dir, w, "more than %zu bytes before the MPA handshake completed; direction not decoded",
				limit);
		s->dead[dir] = true;
		return false;
	}
	if (s->hs_len[dir] + len > s->hs_cap[dir]) {
		size_t cap = s->hs_cap[dir] ? s->hs_cap[dir] : 256;
		uint8_t *b;

		while (cap < s->hs_len[dir] + len)
			cap *= 2;
		b = realloc(s->hs[dir], cap);
		if (!b) {
			iwd_out_warning(c, dir, w, "out of memory: direction not decoded");
			s->dead[dir] = true;
			return false;
		}
		s->hs[dir] = b;
		s->hs_cap[dir] = cap;
	}
	memcpy(s->hs[dir] + s->hs_len[dir], data, len);
	s->hs_len[dir] += len;
	return true;
}

/* Try to decode direction dir's frame from what has arrived. */
static void hs_frame(struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	struct iwd_sess *s = &c->sess;
	enum iw_mpa_frame_kind kind = dir == IW_CHK_I2R ? IW_MPA_REQUEST : IW_MPA_REPLY;
	enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
	struct iw_mpa_frame f;
	ssize_t n = iw_mpa_frame_decode(s->hs[dir], s->hs_len[dir], kind, 0, 0, &f, &why);

	if (n == 0)
		return;
	if (n < 0) {
		if (dir == IW_CHK_I2R && why == IW_MPA_FE_BAD_KEY) {
			s->state = IWD_S_NOT_MPA;
			iwd_out_note(c, -1, w, "not an MPA connection (the initiator did not send an MPA Request); ignored");
		} else {
			violation(c, dir, IW_CHK_MPA_FRAME, why, kind, w);
			s->state = IWD_S_FAILED;
		}
		iwd_sess_release(s);
		return;
	}
	f.pdata = NULL; /* points into a buffer that goes away */
	s->have_frame[dir] = true;
	s->frame_len[dir] = (size_t)n;
	if (dir == IW_CHK_I2R)
		s->req = f;
	else
		s->rep = f;
	iwd_out_mpa(c, dir, &f, w);
	/* Linux siw echoes a Request's reserved flag bits in its Reply: the
	 * RFC 7306 ASK bit coming back is that echo (no ACK: the extensions
	 * are off), not a violation of the Reply's sender. */
	bool ask_echo = dir == IW_CHK_R2I && s->have_frame[IW_CHK_I2R] && s->req.rfc7306 &&
			f.reserved == IW_MPA_FLAG_RFC7306_ASK;
	if (ask_echo)
		iwd_out_note(c, dir, w, "Reply echoes the Request's RFC 7306 ASK flag bit (as siw echoes reserved bits); "
					"no ACK, RFC 7306 not in use");
	if (c->opts->check && !ask_echo &&
	    iw_mpa_frame_decode(s->hs[dir], s->hs_len[dir], kind, 0, IW_MPA_DECODE_STRICT, NULL, &why) < 0)
		violation(c, dir, IW_CHK_MPA_FRAME, why, kind, w);
	if (dir == IW_CHK_R2I && f.reject) {
		s->state = IWD_S_REJECTED;
		iwd_out_note(c, dir, w, "connection rejected by the responder (MPA Reply with R=1)");
		iwd_sess_release(s);
		return;
	}
	if (s->have_frame[0] && s->have_frame[1])
		negotiate(c, w);
}

void iwd_sess_data(struct iwd_conn *c, int dir, const uint8_t *data, size_t len, const struct iwd_where *w)
{
	struct iwd_sess *s = &c->sess;

	if (s->dead[dir] || !len)
		return;
	switch (s->state) {
	case IWD_S_HANDSHAKE:
		if (!hs_append(c, dir, data, len, w))
			return;
		if (!s->have_frame[dir])
			hs_frame(c, dir, w);
		break;
	case IWD_S_FPDU:
		fpdu_data(c, dir, data, len, w);
		break;
	default:
		break;
	}
}

void iwd_sess_end(struct iwd_conn *c, int dir, const struct iwd_where *w)
{
	struct iwd_sess *s = &c->sess;
	struct iw_rdmap_check_ev ev;

	if (s->ended[dir])
		return;
	s->ended[dir] = true;
	if (s->state == IWD_S_HANDSHAKE && !s->dead[dir] && s->hs_len[dir] && !s->have_frame[dir])
		iwd_out_note(c, dir, w, "stream ended inside the MPA %s", dir == IW_CHK_I2R ? "Request" : "Reply");
	if (s->state != IWD_S_FPDU || s->dead[dir] || !s->chk)
		return;
	if (iw_rdmap_check_end(s->chk, dir, &ev)) {
		/* Either side may abort a connection at any byte (a receiver
		 * that has what it needs often does): the FPDU the RST cut is
		 * no framing error of the sender's. A FIN inside an FPDU, or a
		 * capture ending there, still is reported. */
		if (c->reset && ev.has_violation && ev.viol.code == IW_CHK_TRUNCATED)
			iwd_out_note(c, dir, w, "connection reset inside an FPDU (abortive close)");
		else
			handle_ev(c, dir, &ev, w);
	}
	s->dead[dir] = true;
}

bool iwd_sess_wants(const struct iwd_conn *c, int dir)
{
	const struct iwd_sess *s = &c->sess;

	return (s->state == IWD_S_HANDSHAKE || s->state == IWD_S_FPDU) && !s->dead[dir];
}

void iwd_sess_stop(struct iwd_conn *c, int dir)
{
	c->sess.dead[dir] = true;
	if (c->sess.chk)
		iw_rdmap_check_stop(c->sess.chk, dir);
}
