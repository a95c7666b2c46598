/* MPA negotiation (mpa/mpa_negotiate.h): responder and initiator rules,
 * including the Linux siw cases from the facts sheet. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"
#include "iwt_handshake.h"
#include "mpa/mpa_negotiate.h"
#include "iwt_check.h"

static uint8_t wire[IWT_MPA_FRAME_MAX];

/* Encode f and decode it back (strict), as the peer would see it. */
static struct iw_mpa_frame over_wire(const struct iw_mpa_frame *f, uint8_t *buf, size_t cap)
{
	enum iw_mpa_frame_error why = IW_MPA_FE_NONE;
	ssize_t n = iw_mpa_frame_encode(f, buf, cap, &why);
	ck_assert_msg(n > 0, "encode: %s", iw_mpa_frame_error_str(why));
	struct iw_mpa_frame g;
	ck_assert_int_eq(iw_mpa_frame_decode(buf, (size_t)n, f->kind, 0, IW_MPA_DECODE_STRICT, &g,
					     &why),
			 n);
	return g;
}

static struct iw_mpa_frame decode_req(const uint8_t *b, size_t n)
{
	struct iw_mpa_frame f;
	ck_assert_int_eq(iw_mpa_frame_decode(b, n, IW_MPA_REQUEST, 0, 0, &f, NULL), (ssize_t)n);
	return f;
}

static struct iw_mpa_frame decode_rep(const uint8_t *b, size_t n)
{
	struct iw_mpa_frame f;
	ck_assert_int_eq(iw_mpa_frame_decode(b, n, IW_MPA_REPLY, 0, 0, &f, NULL), (ssize_t)n);
	return f;
}

START_TEST(settings_default)
{
	struct iw_mpa_settings s;
	memset(&s, 0xFF, sizeof(s));
	iw_mpa_settings_default(&s);
	ck_assert_uint_eq(s.rev, 2);
	ck_assert_uint_eq(s.min_rev, 1);
	ck_assert_int_eq(s.crc, IW_MPA_CRC_ON);
	ck_assert(!s.markers_wanted);
	ck_assert(!s.markers_refused);
	ck_assert_uint_eq(s.ird, 16);
	ck_assert_uint_eq(s.ord, 16);
	ck_assert(!s.p2p);
	ck_assert_uint_eq(s.rtr_allowed, IW_MPA_RTR_ALL);
}
END_TEST

START_TEST(make_request_fields)
{
	struct iw_mpa_settings s;
	struct iw_mpa_frame req;
	const uint8_t app[5] = { 'h', 'e', 'l', 'l', 'o' };
	iw_mpa_settings_default(&s);
	iw_mpa_make_request(&s, app, 5, &req);
	ck_assert_int_eq(req.kind, IW_MPA_REQUEST);
	ck_assert_uint_eq(req.rev, 2);
	ck_assert(req.enhanced && req.crc && !req.markers && !req.reject && !req.p2p);
	ck_assert_uint_eq(req.rtr, 0);
	ck_assert_uint_eq(req.ird, 16);
	ck_assert_uint_eq(req.ord, 16);
	ck_assert_ptr_eq(req.pdata, app);
	ck_assert_uint_eq(req.pdata_len, 5);
	ck_assert_int_eq(iw_mpa_frame_encode(&req, wire, sizeof(wire), NULL), 29);
	size_t m = iwt_mpa_req_bytes(0x50, 2, 16, 16, app, 5, wire + 100);
	ck_assert_mem_eq(wire, wire + 100, m);

	s.crc = IW_MPA_CRC_OFF;
	s.markers_wanted = true;
	s.ird = 0x4000;
	s.ord = 0xFFFF;
	s.p2p = true;
	s.rtr_allowed = 0xFF;
	iw_mpa_make_request(&s, NULL, 0, &req);
	ck_assert(!req.crc && req.markers && req.p2p);
	ck_assert_uint_eq(req.rtr, IW_MPA_RTR_ALL);
	ck_assert_uint_eq(req.ird, 0x3FFF);
	ck_assert_uint_eq(req.ord, 0x3FFF);
	ck_assert_int_eq(iw_mpa_frame_encode(&req, wire, sizeof(wire), NULL), 24);

	s.rev = 1;
	iw_mpa_make_request(&s, NULL, 0, &req);
	ck_assert_uint_eq(req.rev, 1);
	ck_assert(!req.enhanced && !req.p2p);
	ck_assert_int_eq(iw_mpa_frame_encode(&req, wire, sizeof(wire), NULL), 20);
	ck_assert_uint_eq(wire[16], 0x80);
}
END_TEST

START_TEST(siw_rping_request_default_reply)
{
	struct iw_mpa_settings s;
	struct iw_mpa_frame reply;
	struct iw_mpa_outcome out;
	iw_mpa_settings_default(&s);
	struct iw_mpa_frame req = decode_req(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, &out), IW_MPA_OK);
	ck_assert_int_eq(reply.kind, IW_MPA_REPLY);
	ck_assert_uint_eq(reply.rev, 2);
	ck_assert(reply.enhanced);
	ck_assert(reply.crc);
	ck_assert(!reply.markers);
	ck_assert(!reply.reject);
	ck_assert(!reply.p2p);
	ck_assert_uint_eq(reply.ird, 1); /* clamped from 16 to the request's ORD */
	ck_assert_uint_eq(reply.ord, 1); /* and to the request's IRD */
	ck_assert_uint_eq(reply.pdata_len, 0);

	/* On the wire: the Reply key, then 50 02 00 04 00 01 00 01. */
	static const uint8_t tail[8] = { 0x50, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01 };
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 24);
	ck_assert_mem_eq(wire, IW_MPA_KEY_REP, 16);
	ck_assert_mem_eq(wire + 16, tail, 8);

	ck_assert_uint_eq(out.rev, 2);
	ck_assert(out.enhanced && out.crc);
	ck_assert(!out.markers_tx && !out.markers_rx && !out.p2p);
	ck_assert_uint_eq(out.ird, 1);
	ck_assert_uint_eq(out.ord, 1);
	ck_assert_uint_eq(out.rtr, 0);
	ck_assert(out.wait_for_first_fpdu);

	/* With CRC OFF we follow the siw request: C=0. */
	s.crc = IW_MPA_CRC_OFF;
	ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, &out), IW_MPA_OK);
	ck_assert(!reply.crc && !out.crc);
}
END_TEST

START_TEST(siw_crc_request_gets_crc)
{
	static const enum iw_mpa_crc_policy pol[] = { IW_MPA_CRC_OFF, IW_MPA_CRC_ON,
						      IW_MPA_CRC_REQUIRED };
	struct iw_mpa_frame req = decode_req(iwt_siw_req_crc, IWT_SIW_RPING_REQ_LEN);
	for (unsigned i = 0; i < 3; i++) {
		struct iw_mpa_settings s;
		struct iw_mpa_frame reply;
		struct iw_mpa_outcome out;
		iw_mpa_settings_default(&s);
		s.crc = pol[i];
		ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, &out), IW_MPA_OK);
		ck_assert(reply.crc && out.crc);
		ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 24);
		/* the same eight bytes siw sends back */
		ck_assert_mem_eq(wire + 16, iwt_siw_req_crc + 16, 8);
	}
}
END_TEST

START_TEST(markers_refused_reject_echoes_rev)
{
	struct iw_mpa_settings s;
	struct iw_mpa_frame reply;
	struct iw_mpa_outcome out;
	const uint8_t app[4] = { 1, 2, 3, 4 };
	iw_mpa_settings_default(&s);
	s.markers_refused = true;
	for (uint8_t rev = 1; rev <= 2; rev++) {
		uint8_t flags = (uint8_t)(0x80 | (rev == 2 ? 0x10 : 0));
		size_t n = iwt_mpa_req_bytes(flags, rev, 4, 8, NULL, 0, wire);
		struct iw_mpa_frame req = decode_req(wire, n);
		ck_assert(req.markers);
		memset(&out, 0x77, sizeof(out));
		ck_assert_int_eq(iw_mpa_respond(&s, &req, app, 4, &reply, &out), IW_MPA_REJ_MARKERS);
		ck_assert(reply.reject);
		ck_assert_uint_eq(reply.rev, rev);
		ck_assert_int_eq(reply.enhanced, rev == 2);
		ck_assert_uint_eq(reply.pdata_len, 0);
		struct iw_mpa_frame g = over_wire(&reply, wire, sizeof(wire));
		ck_assert(g.reject);
		ck_assert_uint_eq(wire[16] & 0x20, 0x20);
		ck_assert_uint_eq(wire[17], rev);
		if (rev == 2) {
			/* rev 2 enhanced reject carries the IRD/ORD words */
			ck_assert_uint_eq(g.ird, 8);
			ck_assert_uint_eq(g.ord, 4);
		}
	}
	/* rev 2 without the enhanced flag: rev 2 reject without words */
	size_t n = iwt_mpa_req_bytes(0x80, 2, 0, 0, NULL, 0, wire);
	struct iw_mpa_frame req = decode_req(wire, n);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, NULL), IW_MPA_REJ_MARKERS);
	ck_assert(reply.reject && reply.rev == 2 && !reply.enhanced);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 20);

	/* Not refused: accepted, and we insert markers when sending. */
	s.markers_refused = false;
	n = iwt_mpa_req_bytes(0x90, 2, 4, 8, NULL, 0, wire);
	req = decode_req(wire, n);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, &out), IW_MPA_OK);
	ck_assert(out.markers_tx && !out.markers_rx && !reply.markers);
	s.markers_wanted = true;
	ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, &out), IW_MPA_OK);
	ck_assert(out.markers_tx && out.markers_rx && reply.markers);
}
END_TEST

START_TEST(revision_rules_responder)
{
	struct iw_mpa_settings s;
	struct iw_mpa_frame reply;
	struct iw_mpa_outcome out;
	const uint8_t app[3] = { 9, 8, 7 };
	iw_mpa_settings_default(&s);

	/* rev 1 request: rev 1 reply, no words, local IRD/ORD */
	size_t n = iwt_mpa_req_bytes(0x40, 1, 0, 0, app, 3, wire);
	struct iw_mpa_frame req = decode_req(wire, n);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, app, 3, &reply, &out), IW_MPA_OK);
	ck_assert(reply.rev == 1 && !reply.enhanced && !reply.reject);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 23);
	ck_assert_uint_eq(wire[16], 0x40);
	ck_assert(!out.enhanced);
	ck_assert_uint_eq(out.ird, 16);
	ck_assert_uint_eq(out.ord, 16);

	/* below min_rev: reject echoing rev 1 */
	s.min_rev = 2;
	n = iwt_mpa_req_bytes(0x40, 1, 0, 0, app, 3, wire);
	req = decode_req(wire, n);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, app, 3, &reply, &out), IW_MPA_REJ_REV);
	ck_assert(reply.reject && reply.rev == 1 && !reply.enhanced);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 20);

	/* rev 2 not enhanced: rev 2 reply without words (min_rev 1) */
	s.min_rev = 1;
	n = iwt_mpa_req_bytes(0x00, 2, 0, 0, app, 3, wire);
	req = decode_req(wire, n);
	ck_assert(!req.enhanced);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, app, 3, &reply, &out), IW_MPA_OK);
	ck_assert(reply.rev == 2 && !reply.enhanced);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire + 100, 200, NULL), 23);
	ck_assert_uint_eq(wire[116], 0x40);
	ck_assert_mem_eq(wire + 120, app, 3);
	/* ... with min_rev 2: not enhanced is a reject */
	s.min_rev = 2;
	ck_assert_int_eq(iw_mpa_respond(&s, &req, app, 3, &reply, &out), IW_MPA_REJ_NOT_ENHANCED);
	ck_assert(reply.reject && reply.rev == 2 && !reply.enhanced);

	/* local rev 1 answers a rev 2 enhanced request with rev 1 */
	iw_mpa_settings_default(&s);
	s.rev = 1;
	req = decode_req(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, NULL, 0, &reply, &out), IW_MPA_OK);
	ck_assert(reply.rev == 1 && !reply.enhanced);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 20);

	/* out may be NULL; the accept carries the application data */
	iw_mpa_settings_default(&s);
	ck_assert_int_eq(iw_mpa_respond(&s, &req, app, 3, &reply, NULL), IW_MPA_OK);
	ck_assert_ptr_eq(reply.pdata, app);
	ck_assert_uint_eq(reply.pdata_len, 3);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 27);
}
END_TEST

static uint8_t expected_pick(uint8_t set)
{
	if (set & IW_MPA_RTR_WRITE)
		return IW_MPA_RTR_WRITE;
	if (set & IW_MPA_RTR_READ)
		return IW_MPA_RTR_READ;
	return set & IW_MPA_RTR_SEND;
}

START_TEST(p2p_intersection)
{
	uint8_t reqbuf[64], repbuf[64];
	for (uint8_t offer = 0; offer <= 7; offer++)
	for (uint8_t allowed = 0; allowed <= 7; allowed++) {
		struct iw_mpa_settings is, rs;
		struct iw_mpa_frame req, reply;
		struct iw_mpa_outcome iout, rout;
		iw_mpa_settings_default(&is);
		iw_mpa_settings_default(&rs);
		is.p2p = rs.p2p = true;
		is.rtr_allowed = offer;
		rs.rtr_allowed = allowed;
		iw_mpa_make_request(&is, NULL, 0, &req);
		struct iw_mpa_frame wreq = over_wire(&req, reqbuf, sizeof(reqbuf));
		ck_assert(wreq.p2p);
		ck_assert_uint_eq(wreq.rtr, offer);
		enum iw_mpa_reject_reason r = iw_mpa_respond(&rs, &wreq, NULL, 0, &reply, &rout);
		struct iw_mpa_frame wrep = over_wire(&reply, repbuf, sizeof(repbuf));
		uint8_t want = expected_pick(offer & allowed);
		if (!want) {
			ck_assert_int_eq(r, IW_MPA_REJ_NO_RTR);
			ck_assert(wrep.reject && wrep.enhanced && wrep.p2p);
			ck_assert_uint_eq(wrep.rtr, 0);
			ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &wrep, &iout), IW_MPA_REJ_PEER);
			continue;
		}
		ck_assert_int_eq(r, IW_MPA_OK);
		ck_assert(wrep.p2p && !wrep.reject);
		ck_assert_uint_eq(wrep.rtr, want);
		ck_assert(rout.p2p);
		ck_assert_uint_eq(rout.rtr, want);
		ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &wrep, &iout), IW_MPA_OK);
		ck_assert(iout.p2p);
		ck_assert_uint_eq(iout.rtr, want);
	}

	/* Only one side wants p2p: no p2p, no reject. */
	struct iw_mpa_settings is, rs;
	struct iw_mpa_frame req, reply;
	struct iw_mpa_outcome iout, rout;
	iw_mpa_settings_default(&is);
	iw_mpa_settings_default(&rs);
	is.p2p = true;
	iw_mpa_make_request(&is, NULL, 0, &req);
	ck_assert_int_eq(iw_mpa_respond(&rs, &req, NULL, 0, &reply, &rout), IW_MPA_OK);
	ck_assert(!reply.p2p && !rout.p2p);
	ck_assert_uint_eq(reply.rtr, 0);
	ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &reply, &iout), IW_MPA_OK);
	ck_assert(!iout.p2p);
	ck_assert_uint_eq(iout.rtr, 0);
	is.p2p = false;
	rs.p2p = true;
	iw_mpa_make_request(&is, NULL, 0, &req);
	ck_assert_int_eq(iw_mpa_respond(&rs, &req, NULL, 0, &reply, &rout), IW_MPA_OK);
	ck_assert(!reply.p2p && !rout.p2p);
}
END_TEST

START_TEST(crc_policy_matrix)
{
	uint8_t reqbuf[64], repbuf[64];
	for (int ip = IW_MPA_CRC_OFF; ip <= IW_MPA_CRC_REQUIRED; ip++)
	for (int rp = IW_MPA_CRC_OFF; rp <= IW_MPA_CRC_REQUIRED; rp++)
	for (uint8_t irev = 1; irev <= 2; irev++) {
		struct iw_mpa_settings is, rs;
		struct iw_mpa_frame req, reply;
		struct iw_mpa_outcome iout, rout;
		iw_mpa_settings_default(&is);
		iw_mpa_settings_default(&rs);
		is.crc = (enum iw_mpa_crc_policy)ip;
		rs.crc = (enum iw_mpa_crc_policy)rp;
		is.rev = irev;
		iw_mpa_make_request(&is, NULL, 0, &req);
		ck_assert_int_eq(req.crc, ip != IW_MPA_CRC_OFF);
		struct iw_mpa_frame wreq = over_wire(&req, reqbuf, sizeof(reqbuf));
		ck_assert_int_eq(iw_mpa_respond(&rs, &wreq, NULL, 0, &reply, &rout), IW_MPA_OK);
		struct iw_mpa_frame wrep = over_wire(&reply, repbuf, sizeof(repbuf));
		ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &wrep, &iout), IW_MPA_OK);
		bool crc = ip != IW_MPA_CRC_OFF || rp != IW_MPA_CRC_OFF;
		ck_assert_int_eq(rout.crc, crc);
		ck_assert_int_eq(iout.crc, crc);
		ck_assert_int_eq(wrep.crc, crc);
	}

	/* A peer that answers C=0 regardless (not what RFC responders do):
	 * only an initiator with CRC REQUIRED rejects it. */
	for (int ip = IW_MPA_CRC_OFF; ip <= IW_MPA_CRC_REQUIRED; ip++) {
		struct iw_mpa_settings is;
		struct iw_mpa_frame req;
		struct iw_mpa_outcome iout;
		iw_mpa_settings_default(&is);
		is.crc = (enum iw_mpa_crc_policy)ip;
		iw_mpa_make_request(&is, NULL, 0, &req);
		size_t n = iwt_mpa_rep_bytes(0x10, 2, 16, 16, NULL, 0, repbuf);
		struct iw_mpa_frame rep = decode_rep(repbuf, n);
		enum iw_mpa_reject_reason r = iw_mpa_initiator_check(&is, &req, &rep, &iout);
		if (ip == IW_MPA_CRC_REQUIRED) {
			ck_assert_int_eq(r, IW_MPA_REJ_CRC_REQUIRED);
		} else {
			ck_assert_int_eq(r, IW_MPA_OK);
			ck_assert(!iout.crc);
		}
		/* C=1 in the reply is always accepted, even with policy OFF */
		n = iwt_mpa_rep_bytes(0x50, 2, 16, 16, NULL, 0, repbuf);
		rep = decode_rep(repbuf, n);
		ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &rep, &iout), IW_MPA_OK);
		ck_assert(iout.crc);
	}
}
END_TEST

START_TEST(ird_ord_clamping)
{
	static const uint16_t v[] = { 0, 1, 2, 16, 128, 0x3FFE, 0x3FFF, 0x4000, 0xFFFF };
	const size_t nv = sizeof(v) / sizeof(v[0]);
	uint8_t buf[64];
	for (size_t a = 0; a < nv; a++)
	for (size_t b = 0; b < nv; b++)
	for (size_t c = 0; c < nv; c += 2)
	for (size_t d = 0; d < nv; d += 2) {
		struct iw_mpa_settings is, rs;
		struct iw_mpa_frame req, reply;
		struct iw_mpa_outcome iout, rout;
		iw_mpa_settings_default(&is);
		iw_mpa_settings_default(&rs);
		is.ird = v[a];
		is.ord = v[b];
		rs.ird = v[c];
		rs.ord = v[d];
		iw_mpa_make_request(&is, NULL, 0, &req);
		struct iw_mpa_frame wreq = over_wire(&req, buf, sizeof(buf));
		uint16_t iird = v[a] > 0x3FFF ? 0x3FFF : v[a];
		uint16_t iord = v[b] > 0x3FFF ? 0x3FFF : v[b];
		uint16_t rird = v[c] > 0x3FFF ? 0x3FFF : v[c];
		uint16_t rord = v[d] > 0x3FFF ? 0x3FFF : v[d];
		ck_assert_uint_eq(wreq.ird, iird);
		ck_assert_uint_eq(wreq.ord, iord);
		ck_assert_int_eq(iw_mpa_respond(&rs, &wreq, NULL, 0, &reply, &rout), IW_MPA_OK);
		/* responder: IRD = min(local IRD, req ORD), ORD = min(local ORD, req IRD) */
		ck_assert_uint_eq(reply.ird, rird < iord ? rird : iord);
		ck_assert_uint_eq(reply.ord, rord < iird ? rord : iird);
		ck_assert_uint_eq(rout.ird, reply.ird);
		ck_assert_uint_eq(rout.ord, reply.ord);
		struct iw_mpa_frame wrep = over_wire(&reply, buf, sizeof(buf));
		ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &wrep, &iout), IW_MPA_OK);
		/* initiator: ORD = min(local ORD, reply IRD), IRD = local IRD */
		ck_assert_uint_eq(iout.ord, iord < wrep.ird ? iord : wrep.ird);
		ck_assert_uint_eq(iout.ird, iird);
		/* neither side issues more reads than the other accepts */
		ck_assert_uint_le(iout.ord, rout.ird);
		ck_assert_uint_le(rout.ord, iout.ird);
	}

	/* A Reply IRD above our ORD is clamped to our ORD. */
	struct iw_mpa_settings is;
	struct iw_mpa_frame req;
	struct iw_mpa_outcome iout;
	iw_mpa_settings_default(&is);
	iw_mpa_make_request(&is, NULL, 0, &req);
	size_t n = iwt_mpa_rep_bytes(0x50, 2, 0x3FFF, 3, NULL, 0, buf);
	struct iw_mpa_frame rep = decode_rep(buf, n);
	ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &rep, &iout), IW_MPA_OK);
	ck_assert_uint_eq(iout.ord, 16);
	ck_assert_uint_eq(iout.ird, 16);
	n = iwt_mpa_rep_bytes(0x50, 2, 2, 3, NULL, 0, buf);
	rep = decode_rep(buf, n);
	ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &rep, &iout), IW_MPA_OK);
	ck_assert_uint_eq(iout.ord, 2);
}
END_TEST

static enum iw_mpa_reject_reason check_reply_bytes(const struct iw_mpa_settings *is,
						   const struct iw_mpa_frame *req, uint8_t flags,
						   uint8_t rev, uint16_t w1, uint16_t w2,
						   struct iw_mpa_outcome *out)
{
	uint8_t buf[64];
	size_t n = iwt_mpa_rep_bytes(flags, rev, w1, w2, NULL, 0, buf);
	struct iw_mpa_frame rep = decode_rep(buf, n);
	return iw_mpa_initiator_check(is, req, &rep, out);
}

START_TEST(initiator_rejects)
{
	struct iw_mpa_settings is;
	struct iw_mpa_frame req;
	struct iw_mpa_outcome out;
	iw_mpa_settings_default(&is);
	iw_mpa_make_request(&is, NULL, 0, &req);
	uint16_t w1 = iwt_mpa_w1(false, false, 8), w2 = iwt_mpa_w2(false, false, 8);

	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x50, 2, w1, w2, &out), IW_MPA_OK);
	ck_assert(out.enhanced && out.crc && !out.wait_for_first_fpdu);
	ck_assert_uint_eq(out.rev, 2);
	ck_assert_uint_eq(out.ird, 16);
	ck_assert_uint_eq(out.ord, 8);

	/* R=1 */
	memset(&out, 0x33, sizeof(out));
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x70, 2, w1, w2, &out), IW_MPA_REJ_PEER);
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x20, 1, 0, 0, &out), IW_MPA_REJ_PEER);

	/* rev 1 reply to our rev 2 request: ok only with min_rev 1 */
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x40, 1, 0, 0, &out), IW_MPA_OK);
	ck_assert(!out.enhanced);
	ck_assert_uint_eq(out.rev, 1);
	ck_assert_uint_eq(out.ord, 16);
	is.min_rev = 2;
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x40, 1, 0, 0, &out), IW_MPA_REJ_REV);
	/* rev 2 without the words: NOT_ENHANCED with min_rev 2, else fine */
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x40, 2, 0, 0, &out), IW_MPA_REJ_NOT_ENHANCED);
	is.min_rev = 1;
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x40, 2, 0, 0, &out), IW_MPA_OK);
	ck_assert(!out.enhanced);
	ck_assert_uint_eq(out.rev, 2);

	/* reply revision above ours */
	struct iw_mpa_settings s1 = is;
	struct iw_mpa_frame req1;
	s1.rev = 1;
	iw_mpa_make_request(&s1, NULL, 0, &req1);
	ck_assert_int_eq(check_reply_bytes(&s1, &req1, 0x50, 2, w1, w2, &out), IW_MPA_REJ_BAD_REPLY);
	ck_assert_int_eq(check_reply_bytes(&s1, &req1, 0x40, 2, 0, 0, &out), IW_MPA_REJ_BAD_REPLY);
	ck_assert_int_eq(check_reply_bytes(&s1, &req1, 0x40, 1, 0, 0, &out), IW_MPA_OK);
	/* a hand-made reply with an impossible revision */
	struct iw_mpa_frame bad = { .kind = IW_MPA_REPLY, .rev = 3, .crc = true };
	ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &bad, &out), IW_MPA_REJ_REV);
	bad.rev = 0;
	ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &bad, &out), IW_MPA_REJ_REV);
	/* a Request is not a Reply */
	bad = req;
	ck_assert_int_eq(iw_mpa_initiator_check(&is, &req, &bad, &out), IW_MPA_REJ_BAD_REPLY);

	/* enhanced reply to a non-enhanced rev 2 request */
	struct iw_mpa_frame plain = req;
	plain.enhanced = false;
	ck_assert_int_eq(check_reply_bytes(&is, &plain, 0x50, 2, w1, w2, &out), IW_MPA_REJ_BAD_REPLY);

	/* markers */
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0xD0, 2, w1, w2, &out), IW_MPA_OK);
	ck_assert(out.markers_tx && !out.markers_rx);
	is.markers_refused = true;
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0xD0, 2, w1, w2, &out), IW_MPA_REJ_MARKERS);
	is.markers_refused = false;

	/* p2p: the reply chose something we did not offer */
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x50, 2, iwt_mpa_w1(true, false, 8),
					   iwt_mpa_w2(true, false, 8), &out),
			 IW_MPA_REJ_BAD_REPLY);
	struct iw_mpa_settings ps = is;
	struct iw_mpa_frame preq;
	ps.p2p = true;
	ps.rtr_allowed = IW_MPA_RTR_WRITE | IW_MPA_RTR_SEND;
	iw_mpa_make_request(&ps, NULL, 0, &preq);
	ck_assert_int_eq(check_reply_bytes(&ps, &preq, 0x50, 2, iwt_mpa_w1(true, false, 8),
					   iwt_mpa_w2(false, true, 8), &out),
			 IW_MPA_REJ_BAD_REPLY); /* READ not offered */
	ck_assert_int_eq(check_reply_bytes(&ps, &preq, 0x50, 2, iwt_mpa_w1(true, true, 8),
					   iwt_mpa_w2(true, false, 8), &out),
			 IW_MPA_REJ_BAD_REPLY); /* two bits */
	ck_assert_int_eq(check_reply_bytes(&ps, &preq, 0x50, 2, iwt_mpa_w1(true, false, 8),
					   iwt_mpa_w2(false, false, 8), &out),
			 IW_MPA_REJ_NO_RTR); /* both p2p, none chosen */
	ck_assert_int_eq(check_reply_bytes(&ps, &preq, 0x50, 2, iwt_mpa_w1(true, true, 8),
					   iwt_mpa_w2(false, false, 8), &out),
			 IW_MPA_OK);
	ck_assert(out.p2p);
	ck_assert_uint_eq(out.rtr, IW_MPA_RTR_SEND);
	/* RTR bits without the p2p flag mean nothing */
	ck_assert_int_eq(check_reply_bytes(&ps, &preq, 0x50, 2, iwt_mpa_w1(false, true, 8),
					   iwt_mpa_w2(true, true, 8), &out),
			 IW_MPA_OK);
	ck_assert(!out.p2p);
	ck_assert_uint_eq(out.rtr, 0);
	/* out may be NULL */
	ck_assert_int_eq(check_reply_bytes(&is, &req, 0x50, 2, w1, w2, NULL), IW_MPA_OK);
}
END_TEST

START_TEST(app_reject)
{
	struct iw_mpa_settings s;
	struct iw_mpa_frame reply;
	struct iw_mpa_outcome out;
	const uint8_t why[6] = "nope!";
	iw_mpa_settings_default(&s);

	struct iw_mpa_frame req = decode_req(iwt_siw_rping_req, IWT_SIW_RPING_REQ_LEN);
	iw_mpa_make_reject(&s, &req, why, 6, &reply);
	ck_assert(reply.reject && reply.enhanced && !reply.p2p);
	ck_assert_uint_eq(reply.rev, 2);
	ck_assert_uint_eq(reply.ird, 1);
	ck_assert_uint_eq(reply.ord, 1);
	struct iw_mpa_frame g = over_wire(&reply, wire, sizeof(wire));
	ck_assert_uint_eq(wire[16] & 0x30, 0x30);
	ck_assert_uint_eq(g.pdata_len, 6);
	ck_assert_mem_eq(g.pdata, why, 6);
	struct iw_mpa_frame sent;
	iw_mpa_settings_default(&s);
	iw_mpa_make_request(&s, NULL, 0, &sent);
	ck_assert_int_eq(iw_mpa_initiator_check(&s, &sent, &g, &out), IW_MPA_REJ_PEER);

	size_t n = iwt_mpa_req_bytes(0x00, 1, 0, 0, NULL, 0, wire);
	req = decode_req(wire, n);
	iw_mpa_make_reject(&s, &req, NULL, 0, &reply);
	ck_assert(reply.reject && !reply.enhanced);
	ck_assert_uint_eq(reply.rev, 1);
	ck_assert_int_eq(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 20);

	/* a hand-made request with a bad revision still yields an encodable reject */
	struct iw_mpa_frame odd = { .kind = IW_MPA_REQUEST, .rev = 7, .enhanced = true };
	ck_assert_int_eq(iw_mpa_respond(&s, &odd, NULL, 0, &reply, &out), IW_MPA_REJ_REV);
	ck_assert(reply.reject);
	ck_assert_int_gt(iw_mpa_frame_encode(&reply, wire, sizeof(wire), NULL), 0);
}
END_TEST

/* Random settings on both sides, through the wire: the two outcomes agree,
 * or the responder's reject shows up as REJ_PEER at the initiator. */
START_TEST(random_end_to_end)
{
	uint64_t rng = iwt_seed() ^ 0xBEEF;
	uint8_t reqbuf[600], repbuf[600], app[600];
	iwt_fill_pattern(app, sizeof(app), 3);
	unsigned ok = 0, rej = 0;
	for (unsigned it = 0; it < 20000; it++) {
		struct iw_mpa_settings s[2];
		for (int k = 0; k < 2; k++) {
			iw_mpa_settings_default(&s[k]);
			s[k].rev = (uint8_t)iwt_rand_range(&rng, 1, 2);
			s[k].min_rev = (uint8_t)iwt_rand_range(&rng, 1, s[k].rev);
			s[k].crc = (enum iw_mpa_crc_policy)iwt_rand_range(&rng, 0, 2);
			s[k].markers_wanted = iwt_rand(&rng) % 4 == 0;
			s[k].markers_refused = iwt_rand(&rng) % 4 == 0;
			s[k].ird = (uint16_t)iwt_rand_range(&rng, 0, 200);
			s[k].ord = (uint16_t)iwt_rand_range(&rng, 0, 200);
			s[k].p2p = iwt_rand(&rng) & 1;
			s[k].rtr_allowed = (uint8_t)iwt_rand_range(&rng, 0, 7);
		}
		uint16_t plen = (uint16_t)iwt_rand_range(&rng, 0, 508);
		struct iw_mpa_frame req, reply;
		struct iw_mpa_outcome io, ro;
		iw_mpa_make_request(&s[0], app, plen, &req);
		struct iw_mpa_frame wreq = over_wire(&req, reqbuf, sizeof(reqbuf));
		ck_assert_uint_eq(wreq.pdata_len, plen);
		enum iw_mpa_reject_reason rr = iw_mpa_respond(&s[1], &wreq, app, plen, &reply, &ro);
		struct iw_mpa_frame wrep = over_wire(&reply, repbuf, sizeof(repbuf));
		enum iw_mpa_reject_reason ir = iw_mpa_initiator_check(&s[0], &req, &wrep, &io);
		if (rr != IW_MPA_OK) {
			ck_assert(wrep.reject);
			ck_assert_uint_eq(wrep.rev, wreq.rev);
			ck_assert_int_eq(ir, IW_MPA_REJ_PEER);
			rej++;
			continue;
		}
		ck_assert(!wrep.reject);
		if (ir != IW_MPA_OK) {
			/* only the initiator's own policies can refuse an RFC reply */
			ck_assert_msg(ir == IW_MPA_REJ_MARKERS || ir == IW_MPA_REJ_REV ||
					      ir == IW_MPA_REJ_NOT_ENHANCED,
				      "unexpected %s", iw_mpa_reject_reason_str(ir));
			rej++;
			continue;
		}
		ok++;
		ck_assert_uint_eq(io.rev, ro.rev);
		ck_assert_int_eq(io.enhanced, ro.enhanced);
		ck_assert_int_eq(io.crc, ro.crc);
		ck_assert_int_eq(io.markers_tx, ro.markers_rx);
		ck_assert_int_eq(io.markers_rx, ro.markers_tx);
		ck_assert_int_eq(io.p2p, ro.p2p);
		ck_assert_uint_eq(io.rtr, ro.rtr);
		ck_assert(!io.wait_for_first_fpdu && ro.wait_for_first_fpdu);
		if (io.enhanced) {
			ck_assert_uint_le(io.ord, ro.ird);
			ck_assert_uint_le(ro.ord, io.ird);
		}
		if (s[0].crc == IW_MPA_CRC_REQUIRED || s[1].crc == IW_MPA_CRC_REQUIRED)
			ck_assert(io.crc);
	}
	ck_assert_uint_gt(ok, 1000);
	ck_assert_uint_gt(rej, 100);
}
END_TEST

START_TEST(reasons_and_causes)
{
	for (int r = IW_MPA_OK; r <= IW_MPA_REJ_APP; r++) {
		const char *s = iw_mpa_reject_reason_str((enum iw_mpa_reject_reason)r);
		ck_assert_ptr_nonnull(s);
		for (int o = IW_MPA_OK; o < r; o++)
			ck_assert_str_ne(s, iw_mpa_reject_reason_str((enum iw_mpa_reject_reason)o));
		struct iw_term_cause c = iw_mpa_reject_cause((enum iw_mpa_reject_reason)r);
		ck_assert_uint_eq(c.layer, IW_LAYER_MPA);
		ck_assert_uint_eq(c.etype, IW_ETYPE_MPA);
		uint8_t want = r == IW_MPA_REJ_IRD      ? 0x06
			       : r == IW_MPA_REJ_NO_RTR ? 0x07
							: 0x04;
		ck_assert_uint_eq(c.ecode, want);
	}
	ck_assert_ptr_nonnull(iw_mpa_reject_reason_str((enum iw_mpa_reject_reason)99));
}
END_TEST

static Suite *mpa_negotiate_suite(void)
{
	Suite *s = suite_create("mpa_negotiate");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, settings_default);
	tcase_add_test(tc, make_request_fields);
	tcase_add_test(tc, siw_rping_request_default_reply);
	tcase_add_test(tc, siw_crc_request_gets_crc);
	tcase_add_test(tc, markers_refused_reject_echoes_rev);
	tcase_add_test(tc, revision_rules_responder);
	tcase_add_test(tc, p2p_intersection);
	tcase_add_test(tc, crc_policy_matrix);
	tcase_add_test(tc, ird_ord_clamping);
	tcase_add_test(tc, initiator_rejects);
	tcase_add_test(tc, app_reject);
	tcase_add_test(tc, random_end_to_end);
	tcase_add_test(tc, reasons_and_causes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(mpa_negotiate_suite());
}
