/* libiwarp connection manager, shaped like librdmacm.
 *
 * A CM id is a listening or connecting endpoint. Events (connect request,
 * established, rejected, disconnected, errors) arrive on a CM channel,
 * whose fd is pollable. The MPA handshake (RFC 5044 / 6581) runs inside:
 * private data (RFC limit 512 bytes; the Linux siw peer takes at most 251
 * of application data, keep to that when talking to siw), CRC policy,
 * markers, IRD/ORD and optional peer-to-peer RTR are negotiated there.
 *
 * Flow, passive side: create id, iw_cm_listen(); on IW_CM_EVENT_CONNECT_
 * REQUEST the event carries a new id: create a QP, iw_cm_accept(new id,
 * qp) or iw_cm_reject(); IW_CM_EVENT_ESTABLISHED follows.
 * Active side: create id, create a QP, iw_cm_connect(id, qp, addr);
 * IW_CM_EVENT_ESTABLISHED, IW_CM_EVENT_REJECTED or an error follows.
 * Either side: iw_cm_disconnect(); both get IW_CM_EVENT_DISCONNECTED and
 * the QP's outstanding work requests are flushed.
 *
 * Ownership of a CONNECT_REQUEST's id: once the event is fetched the new
 * id belongs to the application, whatever it answers, and must be freed
 * with iw_cm_destroy_id(). Rejected: iw_cm_reject() then
 * iw_cm_destroy_id() at once (the reject frame is already written).
 * Accepted: after ESTABLISHED the connection lives in the QP; the id only
 * reports its events. Tear down in this order: iw_cm_disconnect(), wait
 * for DISCONNECTED, poll the flushed completions, iw_destroy_qp(), then
 * iw_cm_destroy_id() (destroying the id first is safe too, but
 * DISCONNECTED is then not reported). If accept fails, or the event was
 * CONNECT_ERROR, destroy the QP (if any) and the id the same way. The
 * listening id is separate: destroying it drops only the requests the
 * application has not fetched yet.
 *
 * NULL arguments: param of iw_cm_connect()/iw_cm_accept() may be NULL
 * (no private data, IRD/ORD 16, CRC on, no markers, MPA rev 2, the
 * defaults below); iw_cm_reject() takes NULL private data with len 0;
 * the context of iw_cm_create_id() may be NULL; iw_cm_listen_param()
 * takes a NULL param. Every other pointer is required (-EINVAL). */
#ifndef IWARP_CM_H
#define IWARP_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct iw_cm_channel;
struct iw_cm_id;

enum iw_crc_policy {
	IW_CRC_ON = 0,       /* default: ask for CRC */
	IW_CRC_OFF = 1,      /* do not ask; accept it if the peer asks */
	IW_CRC_REQUIRED = 2, /* refuse connections without CRC */
};

enum iw_rtr_type {
	IW_RTR_NONE = 0,
	IW_RTR_SEND = 1,
	IW_RTR_WRITE = 2,
	IW_RTR_READ = 4,
};

#define IW_CM_PRIVATE_DATA_MAX 512 /* RFC 5044, including RFC 6581's 4 bytes */

struct iw_conn_param {
	const void *private_data;
	uint16_t private_data_len; /* <= 508 with MPA revision 2 */
	uint16_t ird;             /* inbound RDMA READs we accept (default 16, max 128) */
	uint16_t ord;             /* RDMA READs we issue at once (default 16, max 128) */
	enum iw_crc_policy crc;
	bool markers;             /* ask the peer to insert markers */
	bool p2p;                 /* RFC 6581 peer-to-peer mode */
	uint8_t rtr_types;        /* IW_RTR_* we support (p2p) */
	uint8_t mpa_rev;          /* 0 (= 2) or 1 */
	/* Largest FPDU payload+header (ULPDU) we send; 0 follows the TCP MSS
	 * like siw. Values above the MSS are for peers that are ours. */
	uint32_t max_ulpdu;
	int timeout_ms;           /* MPA exchange timeout, default 10000 */
	/* Initiator: after the MPA Reply, wait this long before sending the
	 * first FPDU. 0 means the default, 20 ms; -1 means no wait. Linux siw
	 * as responder can miss FPDUs that arrive while it is still moving
	 * its QP to RTS (seen: rping as server never saw our first SEND in
	 * about half the runs without the wait). Costs once per connection. */
	int first_fpdu_delay_ms;
	/* Largest ULPDU (the FPDU without its length field, pad and CRC) we
	 * accept from the peer; 0 means 65535, the MPA maximum; otherwise
	 * 64..65535. A longer FPDU ends the connection with an MPA Terminate
	 * (2,0,0x03): peers must keep their MULPDU below it (ours: max_ulpdu,
	 * or the TCP MSS by default). */
	uint32_t max_ulpdu_rx;
	/* Dead-peer detection once established (peer gone without FIN/RST).
	 * 0: off, the kernel's defaults (no keepalive: an idle connection to
	 * a vanished peer is never noticed; unacknowledged data fails after
	 * tcp_retries2, about 15 minutes). >0: the connection fails with
	 * DISCONNECTED (status < 0, usually -ETIMEDOUT) and every outstanding
	 * WR is flushed when data stays unacknowledged this long
	 * (TCP_USER_TIMEOUT), or an idle peer stops answering keepalive
	 * probes (started after max(1 s, timeout / 3) of silence, then every
	 * max(1 s, timeout / 3)). A peer that is alive but keeps its receive
	 * window shut for longer than this fails the same way (Linux applies
	 * the user timeout to zero-window probing too). On the raw
	 * transport our own TCP applies the same rule. At least 100. */
	int dead_peer_timeout_ms;
	/* Initiator: the local address (and port, 0: any) the connection
	 * comes from, as bind() before connect(); NULL: the route's choice.
	 * It must be one of ours (the raw transport has exactly one address):
	 * else iw_cm_connect fails with -EADDRNOTAVAIL (or -EADDRINUSE). */
	const struct sockaddr *src_addr;
};

enum iw_cm_event_type {
	IW_CM_EVENT_CONNECT_REQUEST = 1,
	IW_CM_EVENT_ESTABLISHED,
	IW_CM_EVENT_REJECTED,
	IW_CM_EVENT_DISCONNECTED,
	/* TCP or MPA failure; status says why. When the peer answered our
	 * MPA Request with something that is not a valid MPA Reply (status
	 * -EPROTO, or the error the connection ended with), private_data
	 * holds the bytes it sent (the first 512 at most). */
	IW_CM_EVENT_CONNECT_ERROR,
	/* Never reported by libiwarp: there is no TIME_WAIT to wait out; an
	 * id may be destroyed as soon as DISCONNECTED (or an error) came.
	 * Kept so that code written for librdmacm's event list compiles. */
	IW_CM_EVENT_TIMEWAIT_EXIT,
};

/* "CONNECT_REQUEST", "ESTABLISHED", ...; never NULL. */
const char *iw_cm_event_str(enum iw_cm_event_type t);

struct iw_cm_event {
	enum iw_cm_event_type type;
	struct iw_cm_id *id;        /* CONNECT_REQUEST: the new id to accept/reject */
	struct iw_cm_id *listen_id; /* CONNECT_REQUEST: the listening id */
	int status;                 /* 0 or a negative errno */
	/* What the peer sent (CONNECT_REQUEST, ESTABLISHED, REJECTED; the
	 * non-MPA answer of a CONNECT_ERROR). Valid until the event is
	 * acked. */
	const void *private_data;
	uint16_t private_data_len;
	uint16_t ird, ord;          /* the peer's (request) or the agreed (established) */
	bool crc, markers_tx, markers_rx;
	uint8_t mpa_rev;
};

int iw_cm_create_channel(struct iw_context *ctx, struct iw_cm_channel **out);
int iw_cm_destroy_channel(struct iw_cm_channel *ch); /* -EBUSY while ids exist */
int iw_cm_channel_fd(const struct iw_cm_channel *ch);
/* Next event, non-blocking (-EAGAIN when none). Ack each event. */
int iw_cm_get_event(struct iw_cm_channel *ch, struct iw_cm_event **ev);
void iw_cm_ack_event(struct iw_cm_event *ev);

int iw_cm_create_id(struct iw_cm_channel *ch, void *context, struct iw_cm_id **out);
int iw_cm_destroy_id(struct iw_cm_id *id);
void *iw_cm_id_context(const struct iw_cm_id *id);
void iw_cm_id_set_context(struct iw_cm_id *id, void *context);

#define IW_CM_BACKLOG_DEFAULT 64
#define IW_CM_BACKLOG_MAX 4096
#define IW_CM_REQUEST_TIMEOUT_DEFAULT 5000 /* ms, like siw */

#define IW_CM_SILENT_TIMEOUT_DEFAULT 2000 /* ms without a first byte */
#define IW_CM_EVICT_GRACE_MS 100 /* younger ones are evicted only by the
				  * dead-peer and one-address rules below */

/* IPv4 or IPv6. backlog bounds the pending connections of the listener:
 * those still in the MPA exchange plus those whose CONNECT_REQUEST the
 * application has not accepted or rejected yet (<= 0: 64; at most 4096,
 * larger values are clamped). A newcomer beyond it evicts (resets) the
 * oldest pending connection that has not completed its MPA Request, is
 * at least IW_CM_EVICT_GRACE_MS old and has no unread bytes waiting;
 * preferring one that has sent nothing. Failing that, one whose peer
 * already closed or reset it goes, whatever its age; and when one address
 * holds more than half of the pending connections, a newcomer from
 * another address evicts that address's oldest, whatever its age. Only
 * when there is none is the newcomer reset at once. So idle or slow peers
 * cannot lock legitimate clients out; a Request already received is never
 * evicted. An MPA Request must arrive within 5 s of the TCP accept and its
 * first byte within 2 s, else the connection is reset (the application
 * never hears of it). A connection
 * whose peer leaves before the application fetched its CONNECT_REQUEST
 * is dropped together with that event; after the fetch the id gets
 * IW_CM_EVENT_CONNECT_ERROR instead. */
int iw_cm_listen(struct iw_cm_id *id, const struct sockaddr *addr, int backlog);

struct iw_listen_param {
	int backlog;            /* as for iw_cm_listen */
	int request_timeout_ms; /* MPA Request deadline; 0: 5000, else >= 1 */
	int silent_timeout_ms;  /* first-byte deadline; 0: 2000 (at most the
				 * Request deadline), else >= 1 */
	int per_source_max;     /* pending connections from one address (any
				 * port): a newcomer beyond it evicts that
				 * address's oldest evictable one (rules as for
				 * the backlog) or is reset; 0: the backlog (no
				 * separate cap: one MPI job or a 100-QP client
				 * connects from one address at once) */
};
/* iw_cm_listen with parameters (NULL: the defaults). */
int iw_cm_listen_param(struct iw_cm_id *id, const struct sockaddr *addr, const struct iw_listen_param *param);

/* What a listener decided about incoming connections, since its listen. */
struct iw_listen_stats {
	uint64_t requests;        /* CONNECT_REQUESTs queued to the application */
	uint64_t evicted_backlog; /* reset to make room for a newcomer: backlog */
	uint64_t evicted_source;  /* ... its address was at per_source_max */
	uint64_t refused_backlog; /* newcomer reset: backlog full, none evictable */
	uint64_t refused_source;  /* newcomer reset: its address at per_source_max */
	uint64_t timeout_silent;  /* reset: no byte within silent_timeout_ms */
	uint64_t timeout_request; /* reset: no whole Request by request_timeout_ms */
	uint64_t bad_request;     /* reset: not an MPA Request, or bytes behind it */
	uint64_t peer_gone;       /* the peer closed or reset before its Request */
	uint32_t pending;         /* pending connections now (counted in backlog) */
	uint64_t evicted_majority; /* reset for a newcomer from another address: backlog
				    * full, none past the grace, its address held
				    * more than half of it */
};
/* id: a listening id. -EINVAL otherwise. */
int iw_cm_listen_stats(const struct iw_cm_id *id, struct iw_listen_stats *out);
/* The bound address (after listen with port 0). */
int iw_cm_local_addr(const struct iw_cm_id *id, struct sockaddr_storage *out);
int iw_cm_peer_addr(const struct iw_cm_id *id, struct sockaddr_storage *out);

int iw_cm_connect(struct iw_cm_id *id, struct iw_qp *qp, const struct sockaddr *dst,
		  const struct iw_conn_param *param);
int iw_cm_accept(struct iw_cm_id *id, struct iw_qp *qp, const struct iw_conn_param *param);
int iw_cm_reject(struct iw_cm_id *id, const void *private_data, uint16_t len);
int iw_cm_disconnect(struct iw_cm_id *id);

#ifdef __cplusplus
}
#endif
#endif
