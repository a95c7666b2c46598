/* What a transport implements: a QP's FPDU stream over some byte
 * stream (kernel TCP socket, our TCP on a raw device, memory). The QP
 * drives it through iw_transport_ops; the transport reports the stream's
 * end to the QP (iw_qp_transport_closed) and to the CM (hooks below). */
#ifndef IW_STACK_TRANSPORT_H
#define IW_STACK_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct iw_context;
struct iw_qp;
struct iw_cm_id;
struct iw_transport;

struct iw_transport_ops {
	/* The QP's engine may have FPDUs to send: write when possible. */
	void (*kick)(struct iw_transport *t);
	/* Close: graceful (FIN after queued bytes) or abortive (RST). */
	void (*shutdown)(struct iw_transport *t, bool abortive);
	void (*destroy)(struct iw_transport *t);
	/* After iw_qp_connect_start: the engine is ready, start I/O (the
	 * CM calls it; iw_pipe_connect starts its own ends). */
	int (*start)(struct iw_transport *t);
	/* The CM id goes away: stop telling it anything. */
	void (*detach)(struct iw_transport *t);
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
 * received Terminate, on a linger timeout or at destroy), except that the
 * graceful close after its Terminate is made abortive when the Terminate
 * bound (IW_QP_LINGER_MS) passes first; destroy once,
 * from iw_destroy_qp. Transport ops are only called from deferred work or
 * public calls, never from inside an engine callback, and
 * iw_qp_transport_closed only records state and defers: a transport may
 * call it from its own I/O loop. */

/* Connection manager hooks for the transport (cm.c). */
/* The connection ended: peer FIN (err 0), RST or error (-errno). */
void iw_cm_conn_closed(struct iw_cm_id *id, int err);
/* The transport is being destroyed: forget it. */
void iw_cm_transport_gone(struct iw_cm_id *id);

/* ------------------------------------------------------------------ */
/* Connections: what the CM runs the TCP connection and the MPA exchange
 * over, one implementation per kind of network (tcp/tcp_conn.c: kernel
 * sockets; raw/raw_conn.c: our TCP on the raw device; pipe/pipe_conn.c:
 * memory, for tests). Once the exchange succeeded the connection becomes
 * a transport (to_transport). Calls run with the context lock held. */

struct iw_conn;

/* How a connection closes. */
enum iw_conn_close {
	IW_CONN_ABORT,    /* reset */
	IW_CONN_GRACEFUL, /* FIN after what was sent */
	IW_CONN_REJECTED, /* a reject frame went out: FIN, but give the peer
			   * time to read it before the socket goes (siw) */
};

/* What the CM decided for the stream, for the transport. */
struct iw_stream_cfg {
	bool tx_gate;         /* responder: send nothing before the initiator's first FPDU */
	bool send_rtr;        /* initiator, p2p: a zero-length RDMA WRITE goes first (RFC 6581 RTR) */
	uint32_t tx_delay_ms; /* initiator: send nothing for this long (siw responder race) */
	struct iw_cm_id *cm_id; /* told when the stream ends (iw_cm_conn_closed) */
};

struct iw_conn_ops {
	/* Passive: listen on addr (port 0: any, where supported). 0 or -errno. */
	int (*listen)(struct iw_conn *c, const struct sockaddr *addr, int backlog);
	/* Passive: the next connection a listener has: 0 and *out, -EAGAIN:
	 * none now. */
	int (*accept)(struct iw_conn *l, struct iw_conn **out);
	/* Active: start connecting. <0: refused at once (nothing started);
	 * 0: connected() tells the outcome. */
	int (*connect)(struct iw_conn *c, const struct sockaddr *dst);
	/* Active, optional, before connect: the local address to connect
	 * from (iw_conn_param.src_addr). 0 or -errno; absent: -EOPNOTSUPP. */
	int (*bind_src)(struct iw_conn *c, const struct sockaddr *src);
	/* Active: 1 connected, 0 not yet, <0 failed (-errno). */
	int (*connected)(struct iw_conn *c);
	/* MPA exchange bytes. send: bytes taken (0: no room now) or -errno;
	 * recv: bytes read, 0: none now, -errno (-ECONNRESET: the peer's FIN). */
	ssize_t (*send)(struct iw_conn *c, const void *buf, size_t len);
	ssize_t (*recv)(struct iw_conn *c, void *buf, size_t len);
	/* Without reading: 1 bytes wait, 0 none, <0 the stream ended or failed. */
	int (*pending)(struct iw_conn *c);
	/* Call ready when reading (rd) / writing (wr) may progress; both
	 * false: stop. 0 or -errno. */
	int (*want)(struct iw_conn *c, bool rd, bool wr);
	/* Close and free the connection. */
	void (*close)(struct iw_conn *c, enum iw_conn_close how);
	/* Largest ULPDU to send (iw_mpa_mulpdu of the segment size) unless
	 * max_ulpdu (nonzero) asks for a size. */
	uint32_t (*mulpdu)(struct iw_conn *c, bool markers_tx, uint32_t max_ulpdu);
	/* Dead-peer detection after ms of unacknowledged data / silence. */
	int (*dead_peer)(struct iw_conn *c, uint32_t ms);
	int (*local_addr)(struct iw_conn *c, struct sockaddr_storage *out);
	int (*peer_addr)(struct iw_conn *c, struct sockaddr_storage *out);
	/* The connection becomes qp's transport: NULL on failure (c is
	 * still the caller's), else c is consumed. */
	struct iw_transport *(*to_transport)(struct iw_conn *c, struct iw_qp *qp, const struct iw_stream_cfg *cfg);
};

struct iw_conn {
	const struct iw_conn_ops *ops;
	struct iw_context *ctx;
	/* Set by the user of the connection: I/O may progress. May close c. */
	void (*ready)(void *arg);
	void *ready_arg;
};

/* Makes the connections of a context (ctx->conn_factory). */
struct iw_conn_factory {
	/* A fresh connection (listen or connect next). 0 or -errno. */
	int (*open)(struct iw_conn_factory *f, struct iw_context *ctx, struct iw_conn **out);
};

/* Kernel sockets: the default factory. */
extern struct iw_conn_factory iw_tcp_conn_factory;
/* Close every socket still lingering after a reject (context teardown). */
void iw_tcp_lingers_free(struct iw_context *ctx);

/* Dead-peer detection, one rule for every transport: unacknowledged data
 * fails after ms (a user timeout, which also bounds keepalive); a silent
 * idle peer is probed after max(1 s, ms / 3), then at that interval,
 * probes times. */
struct iw_dead_peer {
	uint32_t keepalive_ms;
	uint32_t probes;
};
static inline struct iw_dead_peer iw_dead_peer_rule(uint32_t ms)
{
	struct iw_dead_peer d = { .keepalive_ms = ms / 3u < 1000u ? 1000u : ms / 3u, .probes = 3 };
	return d;
}

#endif
