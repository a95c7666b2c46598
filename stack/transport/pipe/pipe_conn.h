/* A network in memory for one context, for tests of the connection
 * manager without sockets: connections (struct iw_conn, transport.h)
 * are pairs of bounded byte rings, listeners are found by port, and an
 * established connection becomes an FPDU stream over the same rings
 * (stream.h). Readiness is level-triggered through a context peek, so
 * iw_progress() drives everything without a syscall; timers (CM
 * timeouts) still come from the context's clock.
 *
 * Connecting to a port nobody listens on, or to a listener whose queue of
 * not yet accepted connections is full, fails with -ECONNREFUSED
 * (reported by connected(), like a kernel socket). */
#ifndef IW_PIPE_CONN_H
#define IW_PIPE_CONN_H

#include "stack/transport/stream.h"

struct iw_pipe_net;

struct iw_pipe_net_opts {
	size_t buf_bytes; /* per direction; 0: 64 KiB */
	uint32_t mss;     /* segment size MULPDU derives from; 0: 1460 */
	/* Test hooks: a connect that never completes (no SYN-ACK: the CM's
	 * connect timeout fires), a failing dead-peer setup. */
	bool connect_hangs;
	int dead_peer_err;
};

/* Route the CM's connections of ctx through a new pipe network (takes the
 * context lock). 0 or -ENOMEM. */
int iw_pipe_net_attach(struct iw_context *ctx, const struct iw_pipe_net_opts *o, struct iw_pipe_net **out);
/* Change the test hooks of a network. */
void iw_pipe_net_set_opts(struct iw_pipe_net *n, const struct iw_pipe_net_opts *o);
/* Back to the previous factory; connections still open are reset and
 * freed. Call after every QP that used the network was destroyed and
 * before the context is (takes the lock). */
void iw_pipe_net_detach(struct iw_pipe_net *n);

#endif
