/* Kernel TCP transport: a QP's FPDUs over a connected non-blocking
 * socket (tcp_transport.c). Ownership and call rules are those of struct
 * iw_transport (transport.h). */
#ifndef IW_TCP_TRANSPORT_H
#define IW_TCP_TRANSPORT_H

#include "stack/internal.h"

/* Created by the CM once the MPA exchange succeeded. */
struct iw_tcp_cfg {
	int fd;             /* connected, non-blocking; owned by the transport from create on */
	bool tx_gate;       /* responder: send nothing before the initiator's first FPDU */
	bool send_rtr;      /* initiator, p2p: a zero-length RDMA WRITE goes first (RFC 6581 RTR) */
	uint32_t tx_delay_ms; /* initiator: send nothing for this long (siw responder race) */
	uint32_t trace_conn; /* iw_trace_conn_open handle, 0: not traced */
	struct iw_cm_id *cm_id; /* told when the stream ends (iw_cm_conn_closed) */
};
/* NULL on allocation failure (cfg->fd is then still the caller's). */
struct iw_transport *iw_tcp_transport_create(struct iw_context *ctx, struct iw_qp *qp,
					     const struct iw_tcp_cfg *cfg);
/* After iw_qp_connect_start: the engine is ready, start I/O. */
int iw_tcp_transport_start(struct iw_transport *t);
/* The CM id goes away: stop telling it anything. */
void iw_tcp_transport_detach_cm(struct iw_transport *t);
/* MULPDU for a connected socket: the TCP MSS rounded down to 8 (like siw)
 * through iw_mpa_mulpdu, unless max_ulpdu (nonzero, from iw_conn_param)
 * asks for a specific size. */
uint32_t iw_tcp_mulpdu(int fd, bool markers_tx, uint32_t max_ulpdu);

#endif
