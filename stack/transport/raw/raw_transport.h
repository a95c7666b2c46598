/* The raw transport: a QP's FPDUs over one of our own TCP connections
 * (net/) on a raw device (rawdev.h), MPA-aware (RFC 5044 sec. 8).
 *
 * Transmit: each FPDU is pulled from the engine alone and queued as one
 * TCP record (iwn_tcp_send_record), so every segment starts and ends on
 * an FPDU boundary, retransmissions included, as long as FPDUs fit the
 * effective MSS: size MULPDU with iw_raw_mulpdu().
 *
 * Receive: in-order bytes go through iw_rdmap_rx_prepare/commit (payload
 * copied from the TCP receive ring straight to its final place) or
 * iw_rdmap_rx_feed. Out-of-order payload (the TCP hook) is examined at
 * once: when it starts with whole FPDUs whose CRC is good and which are
 * tagged RDMA WRITEs passing the same STag/TO/access check the engine
 * makes, their payload is placed immediately. The in-order path later
 * places the same bytes again (identical bytes: placement is idempotent)
 * and completes in order as always. Without CRC or with markers towards
 * us, nothing is placed early (an FPDU boundary cannot be validated).
 *
 * Ownership and call rules are those of struct iw_transport (transport.h). */
#ifndef IW_RAW_TRANSPORT_H
#define IW_RAW_TRANSPORT_H

#include "rawdev.h"
#include "stack/transport/stream.h"

struct iw_raw_tcfg {
	struct iw_rawdev *dev;
	struct iwn_tcp_conn *conn; /* established, MPA done; the transport releases it */
	bool tx_gate;  /* responder: send nothing before the initiator's first FPDU */
	uint32_t tx_delay_ms; /* initiator: hold the first FPDU this long (siw, see cm.h) */
	bool send_rtr; /* initiator, p2p: a zero-length RDMA WRITE goes first (RFC 6581) */
	bool no_ooo_place; /* never place out of order (for comparison) */
	struct iw_cm_id *cm_id; /* told when the stream ends (NULL: nobody) */
};

struct iw_raw_stats {
	uint64_t fpdus_tx, records_deferred; /* records the send buffer could not take at once */
	uint64_t ooo_calls, ooo_bytes;        /* out-of-order payload seen */
	uint64_t ooo_fpdus_placed, ooo_bytes_placed;
	uint64_t ooo_bad_crc;   /* no valid FPDU at the start (not a boundary, or damaged) */
	uint64_t ooo_partial;   /* an FPDU continued past the segment */
	uint64_t ooo_skipped;   /* untagged, not a WRITE, STag/TO check failed, or placement off */
};

/* Examine len bytes that arrived out of order: each whole FPDU at the
 * front with a good CRC that is a valid tagged RDMA WRITE passing
 * iw_rdmap_stag (REMOTE_WRITE) is placed at once; stops at the first bad
 * CRC or incomplete FPDU. Nothing is placed without CRC, with markers
 * towards us, or once the stream stopped. Counts into st. */
void iw_raw_ooo_place(struct iw_rdmap_conn *rc, const uint8_t *p, uint32_t len, struct iw_raw_stats *st);

/* NULL on allocation failure (the connection is then still the caller's). */
struct iw_transport *iw_raw_transport_create(struct iw_context *ctx, struct iw_qp *qp,
					     const struct iw_raw_tcfg *cfg);
/* After iw_qp_connect_start: the engine is ready, start I/O (also
 * ops->start). */
int iw_raw_transport_start(struct iw_transport *t);
/* Before start only: the connection goes back to the caller (tools and
 * tests that run the MPA exchange themselves). */
void iw_raw_transport_forget_conn(struct iw_transport *t);
void iw_raw_transport_get_stats(struct iw_transport *t, struct iw_raw_stats *st);
/* Connections over the context's raw device (raw_conn.c). */
extern struct iw_conn_factory iw_raw_conn_factory;
/* MULPDU so that one FPDU fills at most one segment of c. */
uint32_t iw_raw_mulpdu(const struct iwn_tcp_conn *c, bool markers_tx, uint32_t max_ulpdu);

#endif
