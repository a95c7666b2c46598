/* Kernel TCP transport: a QP's FPDUs over a connected non-blocking
 * socket (tcp_transport.c). Ownership and call rules are those of struct
 * iw_transport (transport.h). */
#ifndef IW_TCP_TRANSPORT_H
#define IW_TCP_TRANSPORT_H

#include "stack/transport/stream.h"

/* Created by the CM once the MPA exchange succeeded. */
struct iw_tcp_cfg {
	int fd;             /* connected, non-blocking; owned by the transport from create on */
	uint32_t trace_conn; /* iw_trace_conn_open handle, 0: not traced */
	struct iw_stream_cfg stream;
};
/* NULL on allocation failure (cfg->fd is then still the caller's). */
struct iw_transport *iw_tcp_transport_create(struct iw_context *ctx, struct iw_qp *qp,
					     const struct iw_tcp_cfg *cfg);
/* MULPDU for a connected socket: the TCP MSS rounded down to 8 (like siw)
 * through iw_mpa_mulpdu, unless max_ulpdu (nonzero, from iw_conn_param)
 * asks for a specific size. */
uint32_t iw_tcp_mulpdu(int fd, bool markers_tx, uint32_t max_ulpdu);

#endif
