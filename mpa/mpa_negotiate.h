/* MPA negotiation as pure functions (RFC 5044 sec. 7, RFC 6581).
 *
 * Local settings plus the peer's frame give an outcome or a reject reason.
 * Rules, including those the Linux siw peer imposes:
 *  - CRC: used in both directions iff the Reply has C=1. A responder sets
 *    C=1 when the Request had C=1 or its policy is ON/REQUIRED. An
 *    initiator whose policy is REQUIRED rejects a Reply with C=0.
 *  - Markers: M in a frame asks the frame's receiver to insert markers when
 *    it sends. A side that refuses to send markers rejects such a frame.
 *  - Revision: the responder answers with min(request rev, local rev); a
 *    rev 2 enhanced request gets a rev 2 enhanced reply (siw initiators need
 *    it). A rev 1 reply to a rev 2 initiator is accepted only when the
 *    initiator's local settings allow rev 1 (local.min_rev == 1).
 *  - IRD/ORD (rev 2): responder replies IRD = min(local IRD, request ORD),
 *    ORD = min(local ORD, request IRD). The initiator takes
 *    ORD = min(local ORD, reply IRD) and IRD = local IRD. Values are
 *    clamped to 0x3FFF.
 *  - Peer-to-peer: if both sides want p2p the responder picks one RTR type
 *    from the intersection (preference WRITE, READ, SEND); an empty
 *    intersection is a reject (RFC 6581 "no matching RTR").
 *  - RFC 7306: an initiator with local.rfc7306 sets the ASK bit; a
 *    responder with local.rfc7306 answers an ASK with the ACK bit. Both
 *    ends use the extensions iff the Reply carries ACK (an echoed ASK,
 *    as siw sends, is not an ACK).
 *  - Nothing may follow a Reply before the initiator's first FPDU; that is
 *    the caller's duty, recorded in outcome.wait_for_first_fpdu.
 */
#ifndef IW_MPA_NEGOTIATE_H
#define IW_MPA_NEGOTIATE_H

#include <stdbool.h>
#include <stdint.h>

#include <iwarp/term.h>

#include "mpa_frame.h"

enum iw_mpa_crc_policy {
	IW_MPA_CRC_OFF = 0,      /* do not ask; use it if the peer asks */
	IW_MPA_CRC_ON = 1,       /* ask for it (default) */
	IW_MPA_CRC_REQUIRED = 2, /* refuse a connection without it */
};

struct iw_mpa_settings {
	uint8_t rev;     /* revision to send: 1 or 2 */
	uint8_t min_rev; /* lowest revision accepted from the peer: 1 or 2 */
	enum iw_mpa_crc_policy crc;
	bool markers_wanted;  /* ask the peer to insert markers toward us */
	bool markers_refused; /* refuse to insert markers (reject M=1) */
	uint16_t ird;
	uint16_t ord;
	bool p2p;
	uint8_t rtr_allowed; /* IW_MPA_RTR_* bits we can send or receive */
	bool rfc7306;        /* offer / accept RFC 7306 (ASK/ACK flag bits) */
};

/* What was agreed, from this side's point of view. */
struct iw_mpa_outcome {
	uint8_t rev;
	bool enhanced;
	bool crc;
	bool markers_tx; /* we insert markers in what we send */
	bool markers_rx; /* the peer inserts markers in what it sends */
	uint16_t ird;
	uint16_t ord;
	bool p2p;
	uint8_t rtr; /* the one RTR type chosen (IW_MPA_RTR_*), or 0 */
	bool wait_for_first_fpdu; /* responder: send nothing until the initiator's first FPDU */
	bool rfc7306; /* both ends use RFC 7306: Request had ASK, Reply ACK */
};

enum iw_mpa_reject_reason {
	IW_MPA_OK = 0,
	IW_MPA_REJ_REV,           /* peer's revision not acceptable */
	IW_MPA_REJ_CRC_REQUIRED,  /* we require CRC, peer's Reply has C=0 */
	IW_MPA_REJ_MARKERS,       /* peer asks for markers, we refuse them */
	IW_MPA_REJ_NO_RTR,        /* p2p with no common RTR type */
	IW_MPA_REJ_IRD,           /* insufficient IRD */
	IW_MPA_REJ_PEER,          /* the peer's Reply is a reject */
	IW_MPA_REJ_NOT_ENHANCED,  /* we need rev 2 enhanced, peer did not send it */
	IW_MPA_REJ_BAD_REPLY,     /* Reply inconsistent with our Request */
	IW_MPA_REJ_APP,           /* the application rejected the request */
};

void iw_mpa_settings_default(struct iw_mpa_settings *s); /* rev 2, CRC on, IRD=ORD=16 */

/* Initiator: build the Request for these settings and private data. */
void iw_mpa_make_request(const struct iw_mpa_settings *local, const uint8_t *pdata,
			 uint16_t pdata_len, struct iw_mpa_frame *req);

/* Responder: decide on a Request. Always fills *reply: an accept, or a
 * reject frame (R=1) echoing the request's revision. Returns IW_MPA_OK and
 * fills *out on accept. */
enum iw_mpa_reject_reason iw_mpa_respond(const struct iw_mpa_settings *local,
					 const struct iw_mpa_frame *req, const uint8_t *pdata,
					 uint16_t pdata_len, struct iw_mpa_frame *reply,
					 struct iw_mpa_outcome *out);

/* Responder: an application-chosen reject of req, with private data. */
void iw_mpa_make_reject(const struct iw_mpa_settings *local, const struct iw_mpa_frame *req,
			const uint8_t *pdata, uint16_t pdata_len, struct iw_mpa_frame *reply);

/* Initiator: check the peer's Reply against what we sent. */
enum iw_mpa_reject_reason iw_mpa_initiator_check(const struct iw_mpa_settings *local,
						 const struct iw_mpa_frame *sent_req,
						 const struct iw_mpa_frame *reply,
						 struct iw_mpa_outcome *out);

const char *iw_mpa_reject_reason_str(enum iw_mpa_reject_reason r);

/* The LLP Terminate cause RFC 6581 defines for a reason, where one exists
 * (IRD -> 0x06, NO_RTR -> 0x07); others map to (2,0,0x04). */
struct iw_term_cause iw_mpa_reject_cause(enum iw_mpa_reject_reason r);

#endif
