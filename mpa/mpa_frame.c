/* MPA Request/Reply/Reject frames (RFC 5044 sec. 7.1, RFC 6581 sec. 5):
 * encode and incremental decode over caller buffers, no allocation. */
#include "mpa_frame.h"

#include <string.h>

#include "iw_bytes.h"

#define FLAG_RESERVED_MASK(rev) ((rev) == IW_MPA_REV1 ? IW_MPA_FLAG_RESERVED_V1 : IW_MPA_FLAG_RESERVED_V2)
/* The reserved bit libiwarp gives a meaning in this kind of frame. */
#define FLAG_RFC7306(kind) ((kind) == IW_MPA_REQUEST ? IW_MPA_FLAG_RFC7306_ASK : IW_MPA_FLAG_RFC7306_ACK)

static const char *key_for(enum iw_mpa_frame_kind kind)
{
	switch (kind) {
	case IW_MPA_REQUEST: return IW_MPA_KEY_REQ;
	case IW_MPA_REPLY: return IW_MPA_KEY_REP;
	}
	return NULL;
}

static ssize_t fail(enum iw_mpa_frame_error *why, enum iw_mpa_frame_error e)
{
	if (why)
		*why = e;
	return -1;
}

size_t iw_mpa_frame_wire_len(const struct iw_mpa_frame *f)
{
	return IW_MPA_FRAME_HDR_LEN + (f->enhanced ? IW_MPA_V2_WORDS_LEN : 0u) + f->pdata_len;
}

ssize_t iw_mpa_frame_encode(const struct iw_mpa_frame *f, uint8_t *buf, size_t cap,
			    enum iw_mpa_frame_error *why)
{
	const char *key = key_for(f->kind);
	size_t words = f->enhanced ? IW_MPA_V2_WORDS_LEN : 0u;
	size_t pd_len = words + f->pdata_len;

	if (!key || (f->rev != IW_MPA_REV1 && f->rev != IW_MPA_REV2))
		return fail(why, IW_MPA_FE_BAD_ARGS);
	/* The R bit is defined for Replies only (RFC 5044: zero in a Request). */
	if (f->reject && f->kind != IW_MPA_REPLY)
		return fail(why, IW_MPA_FE_BAD_ARGS);
	if (f->enhanced && (f->rev != IW_MPA_REV2 || f->ird > IW_MPA_V2_IRD_ORD_MASK ||
			    f->ord > IW_MPA_V2_IRD_ORD_MASK || (f->rtr & ~IW_MPA_RTR_ALL)))
		return fail(why, IW_MPA_FE_BAD_ARGS);
	if (pd_len > IW_MPA_PD_MAX)
		return fail(why, IW_MPA_FE_PD_TOO_LONG);
	if (f->pdata_len && !f->pdata)
		return fail(why, IW_MPA_FE_BAD_ARGS);
	if (cap < IW_MPA_FRAME_HDR_LEN + pd_len)
		return fail(why, IW_MPA_FE_NO_SPACE);

	uint8_t flags = 0;
	if (f->markers)
		flags |= IW_MPA_FLAG_MARKERS;
	if (f->crc)
		flags |= IW_MPA_FLAG_CRC;
	if (f->reject)
		flags |= IW_MPA_FLAG_REJECT;
	if (f->enhanced)
		flags |= IW_MPA_FLAG_ENHANCED;
	if (f->rfc7306)
		flags |= FLAG_RFC7306(f->kind);

	/* Private data first: memmove tolerates pdata already inside buf. */
	if (f->pdata_len)
		memmove(buf + IW_MPA_FRAME_HDR_LEN + words, f->pdata, f->pdata_len);
	memcpy(buf, key, IW_MPA_KEY_LEN);
	buf[16] = flags;
	buf[17] = f->rev;
	iw_put_be16(buf + 18, (uint16_t)pd_len);
	if (f->enhanced) {
		uint16_t w1 = f->ird, w2 = f->ord;
		if (f->p2p)
			w1 |= IW_MPA_V2_W1_P2P;
		if (f->rtr & IW_MPA_RTR_SEND)
			w1 |= IW_MPA_V2_W1_RTR_SEND;
		if (f->rtr & IW_MPA_RTR_WRITE)
			w2 |= IW_MPA_V2_W2_RTR_WRITE;
		if (f->rtr & IW_MPA_RTR_READ)
			w2 |= IW_MPA_V2_W2_RTR_READ;
		iw_put_be16(buf + IW_MPA_FRAME_HDR_LEN, w1);
		iw_put_be16(buf + IW_MPA_FRAME_HDR_LEN + 2, w2);
	}
	return (ssize_t)(IW_MPA_FRAME_HDR_LEN + pd_len);
}

/* Header checks, made as soon as the bytes they need are present so that
 * a hopeless stream fails early; bytes not yet received are never read.
 * Returns 0 to go on, -1 with *why on error. */
static int check_header(const uint8_t *buf, size_t len, enum iw_mpa_frame_kind kind,
			uint16_t max_pd, unsigned flags, enum iw_mpa_frame_error *why)
{
	const char *key = key_for(kind);
	size_t n = len < IW_MPA_KEY_LEN ? len : IW_MPA_KEY_LEN;
	if (memcmp(buf, key, n) != 0)
		return (int)fail(why, IW_MPA_FE_BAD_KEY);
	if (len < 18)
		return 0;
	uint8_t rev = buf[17];
	if (rev != IW_MPA_REV1 && rev != IW_MPA_REV2)
		return (int)fail(why, IW_MPA_FE_BAD_REV);
	uint8_t fl = buf[16];
	if (flags & IW_MPA_DECODE_STRICT) {
		if (rev == IW_MPA_REV1 && (fl & IW_MPA_FLAG_ENHANCED))
			return (int)fail(why, IW_MPA_FE_ENHANCED_REV1);
		if (fl & FLAG_RESERVED_MASK(rev) & ~FLAG_RFC7306(kind))
			return (int)fail(why, IW_MPA_FE_RESERVED);
		/* RFC 5044: R is zero in a Request. */
		if ((fl & IW_MPA_FLAG_REJECT) && kind == IW_MPA_REQUEST)
			return (int)fail(why, IW_MPA_FE_RESERVED);
	}
	if (len < IW_MPA_FRAME_HDR_LEN)
		return 0;
	uint16_t pd_len = iw_get_be16(buf + 18);
	if (pd_len > max_pd)
		return (int)fail(why, IW_MPA_FE_PD_TOO_LONG);
	if (rev == IW_MPA_REV2 && (fl & IW_MPA_FLAG_ENHANCED) && pd_len < IW_MPA_V2_WORDS_LEN)
		return (int)fail(why, IW_MPA_FE_ENHANCED_SHORT);
	return 0;
}

ssize_t iw_mpa_frame_decode(const uint8_t *buf, size_t len, enum iw_mpa_frame_kind expected,
			    uint16_t max_pd, unsigned flags, struct iw_mpa_frame *out,
			    enum iw_mpa_frame_error *why)
{
	if (!key_for(expected))
		return fail(why, IW_MPA_FE_BAD_ARGS);
	if (max_pd == 0 || max_pd > IW_MPA_PD_MAX)
		max_pd = IW_MPA_PD_MAX;
	if (check_header(buf, len, expected, max_pd, flags, why) < 0)
		return -1;
	if (len < IW_MPA_FRAME_HDR_LEN)
		return 0;

	uint16_t pd_len = iw_get_be16(buf + 18);
	size_t total = IW_MPA_FRAME_HDR_LEN + (size_t)pd_len;
	if (len < total)
		return 0;

	uint8_t fl = buf[16];
	uint8_t rev = buf[17];
	struct iw_mpa_frame f = {
		.kind = expected,
		.rev = rev,
		.markers = (fl & IW_MPA_FLAG_MARKERS) != 0,
		.crc = (fl & IW_MPA_FLAG_CRC) != 0,
		.reject = (fl & IW_MPA_FLAG_REJECT) != 0,
		/* On rev 1 the 0x10 bit is just another reserved bit. */
		.enhanced = rev == IW_MPA_REV2 && (fl & IW_MPA_FLAG_ENHANCED),
		.reserved = fl & FLAG_RESERVED_MASK(rev) & ~FLAG_RFC7306(expected),
		.rfc7306 = (fl & FLAG_RFC7306(expected)) != 0,
	};
	size_t off = IW_MPA_FRAME_HDR_LEN;
	if (f.enhanced) {
		uint16_t w1 = iw_get_be16(buf + off);
		uint16_t w2 = iw_get_be16(buf + off + 2);
		f.p2p = (w1 & IW_MPA_V2_W1_P2P) != 0;
		f.rtr = (uint8_t)(((w1 & IW_MPA_V2_W1_RTR_SEND) ? IW_MPA_RTR_SEND : 0) |
				  ((w2 & IW_MPA_V2_W2_RTR_WRITE) ? IW_MPA_RTR_WRITE : 0) |
				  ((w2 & IW_MPA_V2_W2_RTR_READ) ? IW_MPA_RTR_READ : 0));
		f.ird = w1 & IW_MPA_V2_IRD_ORD_MASK;
		f.ord = w2 & IW_MPA_V2_IRD_ORD_MASK;
		off += IW_MPA_V2_WORDS_LEN;
	}
	f.pdata = buf + off;
	f.pdata_len = (uint16_t)(total - off);
	if (out)
		*out = f;
	if (why)
		*why = IW_MPA_FE_NONE;
	return (ssize_t)total;
}

const char *iw_mpa_frame_error_str(enum iw_mpa_frame_error e)
{
	switch (e) {
	case IW_MPA_FE_NONE: return "no error";
	case IW_MPA_FE_BAD_KEY: return "unexpected MPA key";
	case IW_MPA_FE_BAD_REV: return "MPA revision not 1 or 2";
	case IW_MPA_FE_RESERVED: return "reserved MPA flag bits set";
	case IW_MPA_FE_PD_TOO_LONG: return "private data length above the limit";
	case IW_MPA_FE_ENHANCED_SHORT: return "enhanced flag with private data shorter than 4 bytes";
	case IW_MPA_FE_ENHANCED_REV1: return "enhanced flag on a revision 1 frame";
	case IW_MPA_FE_BAD_ARGS: return "frame fields out of range";
	case IW_MPA_FE_NO_SPACE: return "output buffer too small";
	}
	return "unknown MPA frame error";
}
