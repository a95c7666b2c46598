/* MPA negotiation (RFC 5044 sec. 7, RFC 6581) as pure functions; the
 * rules, including what a Linux siw peer needs, are in mpa_negotiate.h. */
#include "mpa_negotiate.h"

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

static uint16_t clamp_ird_ord(uint16_t v)
{
	return min16(v, IW_MPA_V2_IRD_ORD_MASK);
}

void iw_mpa_settings_default(struct iw_mpa_settings *s)
{
	*s = (struct iw_mpa_settings){
		.rev = IW_MPA_REV2,
		.min_rev = IW_MPA_REV1,
		.crc = IW_MPA_CRC_ON,
		.markers_wanted = false,
		.markers_refused = false,
		.ird = 16,
		.ord = 16,
		.p2p = false,
		.rtr_allowed = IW_MPA_RTR_ALL,
	};
}

void iw_mpa_make_request(const struct iw_mpa_settings *local, const uint8_t *pdata,
			 uint16_t pdata_len, struct iw_mpa_frame *req)
{
	/* A rev 2 Request is always enhanced: siw responders and RFC 6581
	 * peers expect the IRD/ORD words. */
	bool enhanced = local->rev == IW_MPA_REV2;
	*req = (struct iw_mpa_frame){
		.kind = IW_MPA_REQUEST,
		.rev = local->rev,
		.markers = local->markers_wanted,
		.crc = local->crc != IW_MPA_CRC_OFF,
		.enhanced = enhanced,
		.p2p = enhanced && local->p2p,
		.rtr = (enhanced && local->p2p) ? (uint8_t)(local->rtr_allowed & IW_MPA_RTR_ALL) : 0,
		.ird = enhanced ? clamp_ird_ord(local->ird) : 0,
		.ord = enhanced ? clamp_ird_ord(local->ord) : 0,
		.pdata = pdata,
		.pdata_len = pdata_len,
		.rfc7306 = local->rfc7306,
	};
}

/* One RTR type from a non-empty set, preferring WRITE, READ, SEND. */
static uint8_t pick_rtr(uint8_t set)
{
	if (set & IW_MPA_RTR_WRITE)
		return IW_MPA_RTR_WRITE;
	if (set & IW_MPA_RTR_READ)
		return IW_MPA_RTR_READ;
	if (set & IW_MPA_RTR_SEND)
		return IW_MPA_RTR_SEND;
	return 0;
}

static bool is_enhanced(const struct iw_mpa_frame *f)
{
	return f->rev == IW_MPA_REV2 && f->enhanced;
}

/* The Reply fields every answer to req shares, accept or reject. */
static void reply_base(const struct iw_mpa_settings *local, const struct iw_mpa_frame *req,
		       uint8_t rev, struct iw_mpa_frame *reply)
{
	bool enhanced = rev == IW_MPA_REV2 && is_enhanced(req);
	*reply = (struct iw_mpa_frame){
		.kind = IW_MPA_REPLY,
		.rev = rev,
		.crc = req->crc || local->crc != IW_MPA_CRC_OFF,
		.enhanced = enhanced,
		/* Mirror: never offer more than the peer can take or will use. */
		.ird = enhanced ? min16(clamp_ird_ord(local->ird), clamp_ird_ord(req->ord)) : 0,
		.ord = enhanced ? min16(clamp_ird_ord(local->ord), clamp_ird_ord(req->ird)) : 0,
	};
}

/* A reject echoes the request's revision (siw does the same); a decoded
 * request is always rev 1 or 2, anything else falls back to ours. */
static uint8_t reject_rev(const struct iw_mpa_settings *local, const struct iw_mpa_frame *req)
{
	if (req->rev == IW_MPA_REV1 || req->rev == IW_MPA_REV2)
		return req->rev;
	return local->rev == IW_MPA_REV2 ? IW_MPA_REV2 : IW_MPA_REV1;
}

void iw_mpa_make_reject(const struct iw_mpa_settings *local, const struct iw_mpa_frame *req,
			const uint8_t *pdata, uint16_t pdata_len, struct iw_mpa_frame *reply)
{
	reply_base(local, req, reject_rev(local, req), reply);
	reply->reject = true;
	/* Tell a p2p initiator that we are p2p too, with no RTR chosen. */
	reply->p2p = reply->enhanced && req->p2p && local->p2p;
	reply->pdata = pdata;
	reply->pdata_len = pdata_len;
}

static enum iw_mpa_reject_reason respond_check(const struct iw_mpa_settings *local,
					       const struct iw_mpa_frame *req, uint8_t *rtr)
{
	*rtr = 0;
	if ((req->rev != IW_MPA_REV1 && req->rev != IW_MPA_REV2) || req->rev < local->min_rev)
		return IW_MPA_REJ_REV;
	/* min_rev 2 asks for RFC 6581 features; a plain rev 2 Request has none. */
	if (local->min_rev >= IW_MPA_REV2 && local->rev >= IW_MPA_REV2 && !is_enhanced(req))
		return IW_MPA_REJ_NOT_ENHANCED;
	if (req->markers && local->markers_refused)
		return IW_MPA_REJ_MARKERS;
	if (local->rev >= IW_MPA_REV2 && is_enhanced(req) && req->p2p && local->p2p) {
		*rtr = pick_rtr(req->rtr & local->rtr_allowed & IW_MPA_RTR_ALL);
		if (!*rtr)
			return IW_MPA_REJ_NO_RTR;
	}
	return IW_MPA_OK;
}

enum iw_mpa_reject_reason iw_mpa_respond(const struct iw_mpa_settings *local,
					 const struct iw_mpa_frame *req, const uint8_t *pdata,
					 uint16_t pdata_len, struct iw_mpa_frame *reply,
					 struct iw_mpa_outcome *out)
{
	uint8_t rtr;
	enum iw_mpa_reject_reason r = respond_check(local, req, &rtr);
	if (r != IW_MPA_OK) {
		/* The application's data was meant for an accept: send none. */
		iw_mpa_make_reject(local, req, NULL, 0, reply);
		return r;
	}

	uint8_t rev = req->rev < local->rev ? req->rev : local->rev;
	reply_base(local, req, rev, reply);
	reply->markers = local->markers_wanted;
	reply->p2p = rtr != 0;
	reply->rtr = rtr;
	reply->pdata = pdata;
	reply->pdata_len = pdata_len;
	reply->rfc7306 = local->rfc7306 && req->rfc7306;

	if (out) {
		*out = (struct iw_mpa_outcome){
			.rev = reply->rev,
			.enhanced = reply->enhanced,
			.crc = reply->crc,
			.markers_tx = req->markers,
			.markers_rx = reply->markers,
			.ird = reply->enhanced ? reply->ird : clamp_ird_ord(local->ird),
			.ord = reply->enhanced ? reply->ord : clamp_ird_ord(local->ord),
			.p2p = reply->p2p,
			.rtr = rtr,
			.wait_for_first_fpdu = true,
			.rfc7306 = reply->rfc7306,
		};
	}
	return IW_MPA_OK;
}

static bool one_bit(uint8_t v)
{
	return v && !(v & (v - 1));
}

enum iw_mpa_reject_reason iw_mpa_initiator_check(const struct iw_mpa_settings *local,
						 const struct iw_mpa_frame *sent_req,
						 const struct iw_mpa_frame *reply,
						 struct iw_mpa_outcome *out)
{
	if (reply->kind != IW_MPA_REPLY)
		return IW_MPA_REJ_BAD_REPLY;
	if (reply->reject)
		return IW_MPA_REJ_PEER;
	if (reply->rev != IW_MPA_REV1 && reply->rev != IW_MPA_REV2)
		return IW_MPA_REJ_REV;
	/* The responder answers with min(request rev, its rev): never higher. */
	if (reply->rev > sent_req->rev)
		return IW_MPA_REJ_BAD_REPLY;
	if (reply->rev < local->min_rev)
		return IW_MPA_REJ_REV;
	bool enhanced = is_enhanced(reply);
	if (enhanced && !is_enhanced(sent_req))
		return IW_MPA_REJ_BAD_REPLY;
	if (!enhanced && reply->rev == IW_MPA_REV2 && is_enhanced(sent_req) &&
	    local->min_rev >= IW_MPA_REV2)
		return IW_MPA_REJ_NOT_ENHANCED;
	if (!reply->crc && local->crc == IW_MPA_CRC_REQUIRED)
		return IW_MPA_REJ_CRC_REQUIRED;
	if (reply->markers && local->markers_refused)
		return IW_MPA_REJ_MARKERS;

	/* RTR bits count only with the p2p flag (RFC 6581 word 1, bit A). */
	bool p2p = enhanced && reply->p2p;
	uint8_t rtr = 0;
	if (p2p) {
		if (!sent_req->p2p)
			return IW_MPA_REJ_BAD_REPLY;
		if (!reply->rtr)
			return IW_MPA_REJ_NO_RTR;
		if (!one_bit(reply->rtr) || (reply->rtr & ~sent_req->rtr))
			return IW_MPA_REJ_BAD_REPLY;
		rtr = reply->rtr;
	}

	if (out) {
		*out = (struct iw_mpa_outcome){
			.rev = reply->rev,
			.enhanced = enhanced,
			.crc = reply->crc,
			.markers_tx = reply->markers,
			.markers_rx = sent_req->markers,
			.ird = clamp_ird_ord(local->ird),
			.ord = enhanced ? min16(clamp_ird_ord(local->ord), clamp_ird_ord(reply->ird))
					: clamp_ird_ord(local->ord),
			.p2p = p2p,
			.rtr = rtr,
			.wait_for_first_fpdu = false,
			.rfc7306 = local->rfc7306 && sent_req->rfc7306 && reply->rfc7306,
		};
	}
	return IW_MPA_OK;
}

const char *iw_mpa_reject_reason_str(enum iw_mpa_reject_reason r)
{
	switch (r) {
	case IW_MPA_OK: return "accepted";
	case IW_MPA_REJ_REV: return "MPA revision not acceptable";
	case IW_MPA_REJ_CRC_REQUIRED: return "CRC required but not agreed";
	case IW_MPA_REJ_MARKERS: return "peer asks for markers, which are refused";
	case IW_MPA_REJ_NO_RTR: return "peer-to-peer with no matching RTR type";
	case IW_MPA_REJ_IRD: return "insufficient IRD";
	case IW_MPA_REJ_PEER: return "rejected by the peer";
	case IW_MPA_REJ_NOT_ENHANCED: return "peer did not send the MPA v2 enhanced words";
	case IW_MPA_REJ_BAD_REPLY: return "MPA Reply inconsistent with the Request";
	case IW_MPA_REJ_APP: return "rejected by the application";
	}
	return "unknown MPA reject reason";
}

struct iw_term_cause iw_mpa_reject_cause(enum iw_mpa_reject_reason r)
{
	switch (r) {
	case IW_MPA_REJ_IRD: return IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_INSUFF_IRD);
	case IW_MPA_REJ_NO_RTR: return IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_NO_RTR);
	default: return IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_BAD_FRAME);
	}
}
