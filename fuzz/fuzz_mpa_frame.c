/* MPA Request/Reply decode (both kinds, strict and lenient) and the
 * negotiation functions on whatever decodes.
 *
 * Properties: decode never reads past len and reports a length that the
 * input holds; a decoded frame re-encodes and decodes to the same fields;
 * a responder's reply and an initiator's request always encode. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"

static void check_frame_sane(const struct iw_mpa_frame *f, const uint8_t *buf, size_t len,
			     enum iw_mpa_frame_kind kind)
{
	FUZZ_CHECK(f->kind == kind);
	FUZZ_CHECK(f->rev == 1 || f->rev == 2);
	FUZZ_CHECK(!f->enhanced || f->rev == 2);
	FUZZ_CHECK(f->ird <= IW_MPA_V2_IRD_ORD_MASK && f->ord <= IW_MPA_V2_IRD_ORD_MASK);
	FUZZ_CHECK(f->pdata_len <= IW_MPA_PD_MAX);
	if (f->pdata_len)
		FUZZ_CHECK(fuzz_within(f->pdata, f->pdata_len, buf, len));
}

static bool same_frame(const struct iw_mpa_frame *a, const struct iw_mpa_frame *b)
{
	if (a->kind != b->kind || a->rev != b->rev || a->markers != b->markers ||
	    a->crc != b->crc || a->reject != b->reject || a->enhanced != b->enhanced ||
	    a->pdata_len != b->pdata_len)
		return false;
	if (a->enhanced && (a->p2p != b->p2p || a->rtr != b->rtr || a->ird != b->ird ||
			    a->ord != b->ord))
		return false;
	return a->pdata_len == 0 || memcmp(a->pdata, b->pdata, a->pdata_len) == 0;
}

/* Encoding must succeed for frames the library itself produced, and the
 * bytes must decode (strictly) to the same frame. */
static void check_encodes(const struct iw_mpa_frame *f, bool must)
{
	static uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
	ssize_t n = iw_mpa_frame_encode(f, out, sizeof(out), &why);

	if (n < 0) {
		FUZZ_CHECK(!must);
		FUZZ_CHECK(why != IW_MPA_FE_NONE);
		FUZZ_CHECK(iw_mpa_frame_error_str(why) != NULL);
		return;
	}
	FUZZ_CHECK((size_t)n == iw_mpa_frame_wire_len(f));
	FUZZ_CHECK((size_t)n <= sizeof(out));

	struct iw_mpa_frame g;
	ssize_t m = iw_mpa_frame_decode(out, (size_t)n, f->kind, 0, IW_MPA_DECODE_STRICT, &g, &why);
	FUZZ_CHECK(m == n);
	FUZZ_CHECK(same_frame(f, &g));
	FUZZ_CHECK(g.reserved == 0);
	/* One byte short is "need more", never an error or a frame. */
	m = iw_mpa_frame_decode(out, (size_t)n - 1, f->kind, 0, IW_MPA_DECODE_STRICT, &g, &why);
	FUZZ_CHECK(m == 0);
}

/* Local settings varied by a few input bits, clamped to what the
 * negotiation header allows. */
static void settings_from(uint8_t sel, struct iw_mpa_settings *s)
{
	iw_mpa_settings_default(s);
	s->rev = (sel & 1) ? 1 : 2;
	s->min_rev = (sel & 2) ? 1 : s->rev;
	s->crc = (enum iw_mpa_crc_policy)((sel >> 2) % 3);
	s->markers_wanted = sel & 0x10;
	s->markers_refused = sel & 0x20;
	s->p2p = sel & 0x40;
	s->rtr_allowed = (sel & 0x80) ? IW_MPA_RTR_ALL : IW_MPA_RTR_READ;
	s->ird = (uint16_t)(1u << (sel & 7));
	s->ord = (uint16_t)(128u >> (sel & 7));
}

static void check_outcome(const struct iw_mpa_outcome *o)
{
	FUZZ_CHECK(o->rev == 1 || o->rev == 2);
	FUZZ_CHECK(!o->enhanced || o->rev == 2);
	FUZZ_CHECK(o->ird <= IW_MPA_V2_IRD_ORD_MASK && o->ord <= IW_MPA_V2_IRD_ORD_MASK);
	FUZZ_CHECK(o->rtr == 0 || o->rtr == IW_MPA_RTR_SEND || o->rtr == IW_MPA_RTR_WRITE ||
		   o->rtr == IW_MPA_RTR_READ);
}

static void check_reason(enum iw_mpa_reject_reason r)
{
	FUZZ_CHECK(iw_mpa_reject_reason_str(r) != NULL);
	struct iw_term_cause c = iw_mpa_reject_cause(r);
	FUZZ_CHECK(c.layer == IW_LAYER_MPA);
}

static void negotiate(const struct iw_mpa_frame *f, uint8_t sel)
{
	struct iw_mpa_settings s;
	struct iw_mpa_outcome out;
	static const uint8_t pd[] = "app private data";

	settings_from(sel, &s);
	if (f->kind == IW_MPA_REQUEST) {
		struct iw_mpa_frame reply;
		memset(&out, 0, sizeof(out));
		enum iw_mpa_reject_reason r =
			iw_mpa_respond(&s, f, pd, (uint16_t)(sel & 15), &reply, &out);
		check_reason(r);
		FUZZ_CHECK(reply.kind == IW_MPA_REPLY);
		FUZZ_CHECK(reply.reject == (r != IW_MPA_OK));
		check_encodes(&reply, true);
		if (r == IW_MPA_OK)
			check_outcome(&out);

		iw_mpa_make_reject(&s, f, pd, 4, &reply);
		FUZZ_CHECK(reply.kind == IW_MPA_REPLY && reply.reject);
		check_encodes(&reply, true);
	} else {
		struct iw_mpa_frame req;
		iw_mpa_make_request(&s, NULL, 0, &req);
		FUZZ_CHECK(req.kind == IW_MPA_REQUEST);
		check_encodes(&req, true);
		memset(&out, 0, sizeof(out));
		enum iw_mpa_reject_reason r = iw_mpa_initiator_check(&s, &req, f, &out);
		check_reason(r);
		if (r == IW_MPA_OK)
			check_outcome(&out);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum iw_mpa_frame_kind kinds[] = {IW_MPA_REQUEST, IW_MPA_REPLY};
	static const unsigned flag_sets[] = {0, IW_MPA_DECODE_STRICT};
	/* Settings selector: a byte past any frame header, so mutating it
	 * changes the negotiation without breaking the key. */
	uint8_t sel = size ? data[size - 1] : 0;

	for (int k = 0; k < 2; k++) {
		for (int fl = 0; fl < 2; fl++) {
			for (int cap = 0; cap < 2; cap++) {
				struct iw_mpa_frame f;
				enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
				uint16_t max_pd = cap ? 256 : 0; /* 256: siw's limit */
				ssize_t n = iw_mpa_frame_decode(data, size, kinds[k], max_pd,
								flag_sets[fl], &f, &why);
				FUZZ_CHECK(n >= -1 && n <= (ssize_t)size);
				if (n < 0) {
					FUZZ_CHECK(why != IW_MPA_FE_NONE);
					FUZZ_CHECK(iw_mpa_frame_error_str(why) != NULL);
					continue;
				}
				if (n == 0)
					continue;
				FUZZ_CHECK(n >= IW_MPA_FRAME_HDR_LEN);
				check_frame_sane(&f, data, size, kinds[k]);
				FUZZ_CHECK(f.pdata_len + (f.enhanced ? IW_MPA_V2_WORDS_LEN : 0) <=
					   (cap ? 256 : IW_MPA_PD_MAX));
				if (flag_sets[fl] == IW_MPA_DECODE_STRICT)
					FUZZ_CHECK(f.reserved == 0);
				check_encodes(&f, false);
				if (cap == 0)
					negotiate(&f, sel);
			}
		}
	}
	return 0;
}
