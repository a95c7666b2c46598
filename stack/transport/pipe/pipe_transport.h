/* In-process transport: two QPs of one context connected through memory,
 * for tests and examples that need no sockets.
 *
 * Each direction is a bounded byte ring standing in for a socket buffer:
 * a kick pulls whole FPDUs from the sending engine while the ring has
 * room (and acknowledges them: "the transport accepted them"), then feeds
 * the ring to the receiving engine. Everything runs from iw_progress (the
 * QP kicks its transport from deferred work), never inside post_send;
 * each kick does one round (one pull per direction, everything buffered
 * delivered) and requeues itself while bytes move, so several pipes share
 * a progress call fairly.
 * Each end is an FPDU stream (stream.h) started at connect; only the
 * pump is the pipe's own. Shutdown is the stream's: graceful sends what
 * the engine still has, then the peer sees the stream end after what is
 * buffered (iw_qp_transport_closed(peer, 0)) and answers with its own;
 * abortive drops both directions and the peer sees -ECONNRESET.
 * Destroying an end that is not closed resets it. The pair's memory is
 * freed when both ends are destroyed (by their QPs). */
#ifndef IW_PIPE_TRANSPORT_H
#define IW_PIPE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "stack/internal.h"

#define IW_PIPE_BUF_DEFAULT (256u * 1024u)

struct iw_pipe_opts {
	size_t buf_bytes;  /* per direction; 0: IW_PIPE_BUF_DEFAULT */
	size_t max_chunk;  /* bytes handed to the receiver per call; 0: all */
	bool zerocopy;     /* receive through rx_prepare/commit instead of feed */
};

/* Connect two INIT QPs of the same context. p is a's view; b gets the
 * mirror (markers_tx/markers_rx and ird/ord swapped). Takes the context
 * lock. 0 or a negative errno (-EINVAL: other context, not INIT, same QP,
 * bad parameters). */
int iw_pipe_connect(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p);
int iw_pipe_connect_opts(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p,
			 const struct iw_pipe_opts *opts);

#endif
