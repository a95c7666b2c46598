/* RDMAP Terminate body (RFC 5040 sec. 4.8): choose what to copy, encode
 * the RFC layout, decode both the RFC and the Linux siw layouts. */
#include "rdmap_term.h"

#include <string.h>

#include "iw_bytes.h"

/* siw's header-copy bits in byte 2 (RFC: M 0x80, D 0x40, R 0x20). */
#define SIW_FLAG_M 0x01
#define SIW_FLAG_D 0x02
#define SIW_FLAG_R 0x04
#define SIW_FLAGS (SIW_FLAG_M | SIW_FLAG_D | SIW_FLAG_R)
#define RFC_FLAGS (IW_RDMAP_TERM_FLAG_M | IW_RDMAP_TERM_FLAG_D | IW_RDMAP_TERM_FLAG_R)

#define SEG_LEN_LEN 2

void iw_rdmap_term_prepare(struct iw_rdmap_term *t, struct iw_term_cause cause, const uint8_t *ulpdu,
			   size_t avail, uint16_t ulpdu_len)
{
	memset(t, 0, sizeof(*t));
	t->cause = cause;
	/* MPA errors: the headers cannot be trusted (RFC 5040 sec. 7). */
	if (cause.layer != IW_LAYER_RDMAP && cause.layer != IW_LAYER_DDP)
		return;
	if (!ulpdu)
		return;
	t->has_seg_len = true;
	t->seg_len = ulpdu_len;
	if (avail < 1)
		return;
	size_t hlen = iw_ddp_hdr_len_ctrl(ulpdu[0]);
	if (avail < hlen)
		return;
	t->has_ddp_hdr = true;
	t->ddp_hdr_len = (uint8_t)hlen;
	memcpy(t->ddp_hdr, ulpdu, hlen);
	if (hlen != IW_DDP_UNTAGGED_HDR_LEN || iw_rdmap_opcode_of(ulpdu[1]) != IW_OP_READ_REQ)
		return;
	if (avail < hlen + IW_RDMAP_READ_REQ_LEN)
		return;
	t->has_rdmap_hdr = true;
	t->rdmap_hdr_len = IW_RDMAP_READ_REQ_LEN;
	memcpy(t->rdmap_hdr, ulpdu + hlen, IW_RDMAP_READ_REQ_LEN);
}

size_t iw_rdmap_term_encode(const struct iw_rdmap_term *t, uint8_t *out)
{
	out[0] = (uint8_t)((t->cause.layer & 0x0F) << 4 | (t->cause.etype & 0x0F));
	out[1] = t->cause.ecode;
	out[2] = (uint8_t)((t->has_seg_len ? IW_RDMAP_TERM_FLAG_M : 0) | (t->has_ddp_hdr ? IW_RDMAP_TERM_FLAG_D : 0) |
			   (t->has_rdmap_hdr ? IW_RDMAP_TERM_FLAG_R : 0));
	out[3] = 0;
	size_t n = IW_RDMAP_TERM_CTRL_LEN;
	if (t->has_seg_len || t->has_ddp_hdr) {
		iw_put_be16(out + n, t->has_seg_len ? t->seg_len : 0);
		n += SEG_LEN_LEN;
	}
	if (t->has_ddp_hdr) {
		/* The peer sizes the copy by its T bit, so we must too. */
		size_t hlen = iw_ddp_hdr_len_ctrl(t->ddp_hdr[0]);
		memcpy(out + n, t->ddp_hdr, hlen);
		n += hlen;
	}
	if (t->has_rdmap_hdr) {
		memcpy(out + n, t->rdmap_hdr, IW_RDMAP_READ_REQ_LEN);
		n += IW_RDMAP_READ_REQ_LEN;
	}
	return n;
}

/* Whether (layer, etype, ecode) is one of the causes the RFCs define. */
static bool cause_known(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	/* Bit n of a mask: ecode n is defined (all defined codes but 0xFF are < 16). */
	static const uint16_t masks[3][3] = {
		[IW_LAYER_RDMAP] = { 0x0001, 0x021F, 0x03E0 },
		[IW_LAYER_DDP] = { 0x0001, 0x001F, 0x007E },
		[IW_LAYER_MPA] = { 0x00FE, 0, 0 },
	};
	if (layer > IW_LAYER_MPA || etype > 2)
		return false;
	if (ecode == 0xFF)
		return layer == IW_LAYER_RDMAP && etype != IW_ETYPE_RDMAP_LOCAL_CATA;
	return ecode < 16 && (masks[layer][etype] >> ecode & 1);
}

static uint8_t swap_nibbles(uint8_t b)
{
	return (uint8_t)(b << 4 | b >> 4);
}

int iw_rdmap_term_decode(const uint8_t *body, size_t len, struct iw_rdmap_term *t)
{
	memset(t, 0, sizeof(*t));
	if (len < IW_RDMAP_TERM_CTRL_LEN)
		return -1;

	uint8_t b0 = body[0], ecode = body[1], flags = body[2];
	bool want_seg, want_ddp, want_rdmap;
	if ((flags & SIW_FLAGS) && !(flags & RFC_FLAGS)) {
		t->siw_layout = true;
		want_seg = flags & SIW_FLAG_M;
		want_ddp = flags & SIW_FLAG_D;
		want_rdmap = flags & SIW_FLAG_R;
	} else {
		want_seg = flags & IW_RDMAP_TERM_FLAG_M;
		want_ddp = flags & IW_RDMAP_TERM_FLAG_D;
		want_rdmap = flags & IW_RDMAP_TERM_FLAG_R;
		/* No flags, no hint: take siw's layout only when the RFC
		 * reading is impossible (layer > 2, or no defined cause) and
		 * the swapped one is not. */
		if (!(flags & (SIW_FLAGS | RFC_FLAGS))) {
			uint8_t sw = swap_nibbles(b0);
			if ((b0 >> 4 > IW_LAYER_MPA && sw >> 4 <= IW_LAYER_MPA) ||
			    (!cause_known(b0 >> 4, b0 & 0x0F, ecode) && cause_known(sw >> 4, sw & 0x0F, ecode)))
				t->siw_layout = true;
		}
	}
	if (t->siw_layout)
		b0 = swap_nibbles(b0);
	t->cause = IW_TERM_CAUSE(b0 >> 4, b0 & 0x0F, ecode);

	/* has_* end up true only for what is really present, so a short
	 * body never leaves claims about missing bytes. */
	size_t off = IW_RDMAP_TERM_CTRL_LEN;
	if (want_seg || want_ddp) {
		if (len - off < SEG_LEN_LEN)
			return -1;
		/* Without M the field is a placeholder, not a length. */
		if (want_seg) {
			t->seg_len = iw_get_be16(body + off);
			t->has_seg_len = true;
		}
		off += SEG_LEN_LEN;
	}
	if (want_ddp) {
		if (len - off < 1)
			return -1;
		size_t hlen = iw_ddp_hdr_len_ctrl(body[off]);
		if (len - off < hlen)
			return -1;
		memcpy(t->ddp_hdr, body + off, hlen);
		t->ddp_hdr_len = (uint8_t)hlen;
		t->has_ddp_hdr = true;
		off += hlen;
	}
	if (want_rdmap) {
		if (len - off < IW_RDMAP_READ_REQ_LEN)
			return -1;
		memcpy(t->rdmap_hdr, body + off, IW_RDMAP_READ_REQ_LEN);
		t->rdmap_hdr_len = IW_RDMAP_READ_REQ_LEN;
		t->has_rdmap_hdr = true;
	}
	return 0;
}
