/* What a transport implements: a QP's FPDU stream over some byte
 * stream (kernel TCP socket, our TCP on a raw device, memory). The QP
 * drives it through iw_transport_ops; the transport reports the stream's
 * end to the QP (iw_qp_transport_closed) and to the CM (hooks below). */
#ifndef IW_STACK_TRANSPORT_H
#define IW_STACK_TRANSPORT_H

#include <stdbool.h>

struct iw_qp;
struct iw_cm_id;
struct iw_transport;

struct iw_transport_ops {
	/* The QP's engine may have FPDUs to send: write when possible. */
	void (*kick)(struct iw_transport *t);
	/* Close: graceful (FIN after queued bytes) or abortive (RST). */
	void (*shutdown)(struct iw_transport *t, bool abortive);
	void (*destroy)(struct iw_transport *t);
	/* kick may run in the poster's thread from iw_post_send. False for
	 * the pipe transport: it pumps both ends in one call, so an inline
	 * kick would run the peer's receive path inside the post. */
	bool kick_from_post;
};

struct iw_transport {
	const struct iw_transport_ops *ops;
	struct iw_qp *qp;
};
/* Ownership (verbs side): from iw_qp_connect_start on the QP holds the
 * transport. The QP calls shutdown at most once (graceful after its own
 * Terminate went out or after a disconnect drained, abortive after a
 * received Terminate, on a linger timeout or at destroy) and destroy once,
 * from iw_destroy_qp. Transport ops are only called from deferred work or
 * public calls, never from inside an engine callback, and
 * iw_qp_transport_closed only records state and defers: a transport may
 * call it from its own I/O loop. */

/* Connection manager hooks for the transport (cm.c). */
/* The connection ended: peer FIN (err 0), RST or error (-errno). */
void iw_cm_conn_closed(struct iw_cm_id *id, int err);
/* The transport is being destroyed: forget it. */
void iw_cm_transport_gone(struct iw_cm_id *id);

#endif
