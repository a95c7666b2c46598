/* Test scaffolding for rawverbs (two QPs joined without the CM): the MPA
 * Request/Reply exchange (RFC 5044 sec. 7, RFC 6581) over one of our own
 * TCP connections, step by step from the owner's loop, and the hand-over
 * of the connection to a QP through the raw transport. Applications get
 * this from the CM (stack/cm.c).
 * Reads never go past the peer's frame, so FPDUs right behind it stay in
 * the connection for the transport. */
#ifndef IW_RAW_MPA_H
#define IW_RAW_MPA_H

#include "mpa/mpa_negotiate.h"
#include "stack/transport/raw/raw_transport.h"

enum iw_raw_mpa_state {
	IW_RAW_MPA_RUNNING = 0,
	IW_RAW_MPA_DONE,   /* outcome valid; our frame fully queued */
	IW_RAW_MPA_FAILED, /* err (and reason for a negotiation failure) */
};

struct iw_raw_mpa {
	struct iwn_tcp_conn *c;
	bool initiator;
	struct iw_mpa_settings local;
	struct iw_mpa_frame req; /* initiator: what we sent */
	uint8_t req_pd[IW_MPA_PD_MAX];
	uint8_t in[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	uint32_t have, need;
	uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	uint32_t out_len, out_sent;
	bool got_frame;
	enum iw_raw_mpa_state st;
	struct iw_mpa_frame peer; /* the peer's frame; pdata points into in */
	struct iw_mpa_outcome outcome;
	enum iw_mpa_reject_reason reason;
	int err; /* -ECONNREFUSED (rejected), -EPROTO (bad frame), or the connection's error */
};

/* Initiator (sends the Request now) or responder (waits for it). pdata:
 * private data of our frame (the responder's goes into its Reply). */
int iw_raw_mpa_start(struct iw_raw_mpa *m, struct iwn_tcp_conn *c, bool initiator,
		     const struct iw_mpa_settings *local, const uint8_t *pdata, uint16_t pdata_len, uint64_t now);
/* Advance with what the connection has; returns the state. */
enum iw_raw_mpa_state iw_raw_mpa_step(struct iw_raw_mpa *m, uint64_t now);

/* The exchange is done: start qp (state INIT) on a raw transport over c.
 * max_ulpdu 0: MULPDU from the connection's MSS (iw_raw_mulpdu). On
 * success the transport owns c; on failure c is still the caller's. */
int iw_raw_qp_establish(struct iw_qp *qp, struct iw_rawdev *dev, struct iwn_tcp_conn *c, bool initiator,
			const struct iw_mpa_outcome *o, uint32_t max_ulpdu, bool no_ooo_place,
			struct iw_transport **out);

#endif
