/* Connection manager: TCP listen/connect and the MPA Request/Reply
 * exchange (RFC 5044, RFC 6581) over non-blocking sockets driven by the
 * context's progress loop; events go to CM channels.
 *
 * Active side: connect() -> Request -> read exactly the Reply (anything
 * behind it is left for the transport) -> iw_mpa_initiator_check ->
 * ESTABLISHED / REJECTED / CONNECT_ERROR. The whole exchange is bounded
 * by the connect timeout (default 10 s, like siw).
 * Passive side: accept() -> read the Request within 5 s (like siw, or
 * iw_listen_param.request_timeout_ms; bytes
 * behind it are a protocol error since the initiator must wait for our
 * Reply) -> CONNECT_REQUEST -> iw_cm_accept / iw_cm_reject. Connections
 * still in that exchange count against the listen backlog; more are reset.
 * Ids the application has not seen yet (before it fetched their
 * CONNECT_REQUEST) are dropped silently when they fail.
 *
 * Once established the socket belongs to the QP's transport; the id keeps
 * a link to it for disconnect and gets DISCONNECTED when the stream ends.
 * Channels and events: cm_event.c. */
#include "cm_internal.h"

#include "raw/raw_transport.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define CM_CONNECT_TIMEOUT_MS 10000 /* active default: TCP connect + Reply (siw) */
#define CM_FIRST_FPDU_DELAY_MS 20   /* see iw_conn_param.first_fpdu_delay_ms */
#define CM_MIN_DEAD_PEER_MS 100
#define CM_IRD_ORD_DEFAULT 16
#define CM_MIN_ULPDU 64

static void cm_watch_cb(struct iw_watch *w, uint32_t revents);
static void cm_timer_cb(struct iw_timer *t);

/* ------------------------------------------------------------------ */
/* Ids                                                                 */

static struct iw_cm_id *cm_id_alloc(struct iw_cm_channel *ch, void *context)
{
	struct iw_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->ch = ch;
	id->ctx = ch->ctx;
	id->context = context;
	id->state = CM_IDLE;
	id->watch.fd = -1;
	id->watch.cb = cm_watch_cb;
	id->timer.cb = cm_timer_cb;
	ch->n_ids++;
	return id;
}

int iw_cm_create_id(struct iw_cm_channel *ch, void *context, struct iw_cm_id **out)
{
	struct iw_cm_id *id;

	if (!ch || !out)
		return -EINVAL;
	iw_ctx_lock(ch->ctx);
	id = cm_id_alloc(ch, context);
	if (id)
		id->app_owned = true;
	iw_ctx_unlock(ch->ctx);
	if (!id)
		return -ENOMEM;
	*out = id;
	return 0;
}

void *iw_cm_id_context(const struct iw_cm_id *id)
{
	return id ? id->context : NULL;
}

void iw_cm_id_set_context(struct iw_cm_id *id, void *context)
{
	if (id)
		id->context = context;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void cm_raw_user_cb(struct iw_rawdev_user *u);

static int cm_watch(struct iw_cm_id *id, uint32_t events)
{
	int rc = 0;

	if (id->ctx->raw) {
		/* Our TCP: every pass of the device looks at the id. */
		if (!id->ruser_on) {
			id->ruser.cb = cm_raw_user_cb;
			iw_rawdev_user_add(id->ctx->raw, &id->ruser);
			id->ruser_on = true;
		}
		return 0;
	}

	if (!id->watching) {
		rc = iw_ctx_watch_add(id->ctx, &id->watch, events);
		id->watching = rc == 0;
	} else if (id->watch.events != events) {
		rc = iw_ctx_watch_mod(id->ctx, &id->watch, events);
	}
	return rc;
}

/* Close the id's socket (abortive: RST instead of FIN). */
static void cm_close_fd(struct iw_cm_id *id, bool abortive)
{
	if (id->watching)
		iw_ctx_watch_del(id->ctx, &id->watch);
	id->watching = false;
	iw_ctx_timer_cancel(id->ctx, &id->timer);
	if (id->ruser_on)
		iw_rawdev_user_del(id->ctx->raw, &id->ruser);
	id->ruser_on = false;
	if (id->rconn) {
		uint64_t now = iw_rawdev_now_us();
		if (abortive)
			iwn_tcp_abort(id->rconn, now);
		else
			iwn_tcp_close(id->rconn, now);
		iwn_net_release(&id->ctx->raw->net, id->rconn, now);
		id->rconn = NULL;
		iw_rawdev_flush(id->ctx->raw);
	}
	if (id->state == CM_LISTEN && id->ctx->raw && id->rport) {
		iwn_net_unlisten(&id->ctx->raw->net, id->rport, iw_rawdev_now_us());
		id->rport = 0;
	}
	if (id->watch.fd >= 0) {
		if (abortive) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };
			setsockopt(id->watch.fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(id->watch.fd);
		id->watch.fd = -1;
	}
	iw_trace_conn_close(id->ctx, id->trace_conn, abortive);
	id->trace_conn = 0;
}

/* A passive child leaves the MPA exchange (accepted, rejected, failed). */
static void cm_child_unlink(struct iw_cm_id *id)
{
	struct iw_cm_id *l = id->listener, **pp;

	if (!l)
		return;
	for (pp = &l->children; *pp; pp = &(*pp)->sib_next) {
		if (*pp == id) {
			*pp = id->sib_next;
			break;
		}
	}
	l->n_pending--;
	id->listener = NULL;
	id->sib_next = NULL;
}

static void cm_id_free(struct iw_cm_id *id)
{
	struct iw_cm_channel *ch = id->ch;

	cm_close_fd(id, true);
	cm_child_unlink(id);
	cm_purge_events(ch, id);
	if (id->qp && id->qp->cm_id == id)
		id->qp->cm_id = NULL;
	if (id->transport) {
		struct iw_qp *qp = id->transport->qp;
		if (qp && qp->cm_id == id)
			qp->cm_id = NULL;
		if (id->ctx->raw)
			iw_raw_transport_detach_cm(id->transport);
		else
			iw_tcp_transport_detach_cm(id->transport);
		id->transport = NULL;
	}
	ch->n_ids--;
	free(id);
}

int iw_cm_destroy_id(struct iw_cm_id *id)
{
	struct iw_context *ctx;

	if (!id)
		return -EINVAL;
	ctx = id->ctx;
	iw_ctx_lock(ctx);
	/* Children the application never saw die with their listener; the
	 * others just lose the link. */
	while (id->children) {
		struct iw_cm_id *c = id->children;
		id->children = c->sib_next;
		c->listener = NULL;
		c->sib_next = NULL;
		if (!c->app_owned)
			cm_id_free(c);
	}
	id->n_pending = 0;
	cm_id_free(id);
	iw_ctx_unlock(ctx);
	return 0;
}

/* A failure during connection setup: report it if the application knows
 * the id, else drop the id. */
static void cm_fail_close(struct iw_cm_id *id, int status, bool abortive)
{
	/* What came instead of an MPA Reply goes to the application (issue 17). */
	uint16_t got = id->state == CM_WAIT_REPLY ? (uint16_t)id->in_len : 0;

	cm_close_fd(id, abortive);
	cm_child_unlink(id);
	id->state = CM_DONE;
	if (id->qp && id->qp->cm_id == id)
		id->qp->cm_id = NULL;
	id->qp = NULL;
	if (id->app_owned)
		cm_queue(id, IW_CM_EVENT_CONNECT_ERROR, status, got ? id->in : NULL, got);
	else
		cm_id_free(id); /* a passive id nobody heard of yet: its queued
				 * CONNECT_REQUEST goes too, so peers that send a
				 * Request and leave cannot pile up ids and events
				 * beyond the backlog while the application is slow */
}

static void cm_fail(struct iw_cm_id *id, int status)
{
	cm_fail_close(id, status, true);
}

int iw_cm_local_addr(const struct iw_cm_id *id, struct sockaddr_storage *out)
{
	int rc = -ENOTCONN;

	if (!id || !out)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->has_local) {
		*out = id->local;
		rc = 0;
	}
	iw_ctx_unlock(id->ctx);
	return rc;
}

int iw_cm_peer_addr(const struct iw_cm_id *id, struct sockaddr_storage *out)
{
	int rc = -ENOTCONN;

	if (!id || !out)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->has_peer) {
		*out = id->peer;
		rc = 0;
	}
	iw_ctx_unlock(id->ctx);
	return rc;
}

static void cm_raw_sa(struct sockaddr_storage *ss, uint32_t ip, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(ip);
	sin->sin_port = htons(port);
}

static void cm_get_local(struct iw_cm_id *id)
{
	if (id->ctx->raw) {
		if (id->rconn)
			cm_raw_sa(&id->local, id->rconn->laddr, id->rconn->lport);
		else
			cm_raw_sa(&id->local, id->ctx->raw->net.cfg.ip, id->rport);
		id->has_local = true;
		return;
	}
	socklen_t len = sizeof(id->local);
	id->has_local = getsockname(id->watch.fd, (struct sockaddr *)&id->local, &len) == 0;
}

/* ------------------------------------------------------------------ */
/* Parameters                                                          */

static int cm_settings(struct iw_cm_id *id, const struct iw_conn_param *p, bool initiator)
{
	struct iw_mpa_settings *s = &id->settings;
	static const struct iw_conn_param none = { 0 };
	uint16_t pd_max;
	uint8_t supported;

	if (!p)
		p = &none;
	iw_mpa_settings_default(s);
	if (p->mpa_rev == 1) {
		s->rev = IW_MPA_REV1;
	} else if (p->mpa_rev != 0 && p->mpa_rev != 2) {
		return -EINVAL;
	}
	pd_max = s->rev == IW_MPA_REV2 ? IW_MPA_PD_MAX - IW_MPA_V2_WORDS_LEN : IW_MPA_PD_MAX;
	if (p->private_data_len > pd_max || (p->private_data_len && !p->private_data))
		return -EINVAL;
	if (p->ird > IW_RDMAP_MAX_IRD_ORD || p->ord > IW_RDMAP_MAX_IRD_ORD)
		return -EINVAL;
	s->ird = p->ird ? p->ird : CM_IRD_ORD_DEFAULT;
	s->ord = p->ord ? p->ord : CM_IRD_ORD_DEFAULT;
	switch (p->crc) {
	case IW_CRC_ON:
		s->crc = IW_MPA_CRC_ON;
		break;
	case IW_CRC_OFF:
		s->crc = IW_MPA_CRC_OFF;
		break;
	case IW_CRC_REQUIRED:
		s->crc = IW_MPA_CRC_REQUIRED;
		break;
	default:
		return -EINVAL;
	}
	s->markers_wanted = p->markers;
	/* RTR types we can do: an initiator sends the zero-length WRITE
	 * (built by the transport); a responder takes a WRITE (accepted by
	 * the engine whatever its STag) or a READ (answered by the engine
	 * with an empty response). A SEND RTR would consume an application
	 * receive: not supported. */
	if (p->rtr_types & ~(IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ))
		return -EINVAL;
	supported = initiator ? IW_MPA_RTR_WRITE : (IW_MPA_RTR_WRITE | IW_MPA_RTR_READ);
	s->p2p = p->p2p;
	s->rtr_allowed = p->rtr_types ? (uint8_t)(p->rtr_types & supported) : supported;
	if (p->p2p) {
		if (s->rev != IW_MPA_REV2)
			return -EINVAL;
		if (!s->rtr_allowed)
			return -EOPNOTSUPP;
	}
	if (p->max_ulpdu && (p->max_ulpdu < CM_MIN_ULPDU || p->max_ulpdu > IW_MPA_ULPDU_MAX))
		return -EINVAL;
	id->max_ulpdu = p->max_ulpdu;
	if (p->max_ulpdu_rx && (p->max_ulpdu_rx < CM_MIN_ULPDU || p->max_ulpdu_rx > IW_MPA_ULPDU_MAX))
		return -EINVAL;
	id->max_ulpdu_rx = p->max_ulpdu_rx;
	if (p->dead_peer_timeout_ms < 0 || (p->dead_peer_timeout_ms > 0 && p->dead_peer_timeout_ms < CM_MIN_DEAD_PEER_MS))
		return -EINVAL;
	id->dead_peer_ms = (uint32_t)p->dead_peer_timeout_ms;
	if (p->timeout_ms < 0)
		return -EINVAL;
	id->timeout_ms = p->timeout_ms ? p->timeout_ms : CM_CONNECT_TIMEOUT_MS;
	if (p->first_fpdu_delay_ms < -1)
		return -EINVAL;
	id->first_fpdu_delay_ms = p->first_fpdu_delay_ms == 0 ? CM_FIRST_FPDU_DELAY_MS
				  : p->first_fpdu_delay_ms < 0 ? 0 : (uint32_t)p->first_fpdu_delay_ms;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Socket I/O for the handshake                                        */

/* Send what is left of id->out. 1: all sent, 0: wait for EPOLLOUT, <0: error. */
static int cm_flush_out(struct iw_cm_id *id)
{
	if (id->rconn) {
		int r = 0;
		while (id->out_off < id->out_len) {
			r = iwn_tcp_send(id->rconn, id->out + id->out_off, (uint32_t)(id->out_len - id->out_off),
					 iw_rawdev_now_us());
			if (r <= 0)
				break;
			id->out_off += (size_t)r;
		}
		iw_rawdev_flush(id->ctx->raw);
		if (r < 0)
			return r == -EPIPE ? -ECONNRESET : r;
		return id->out_off == id->out_len;
	}
	while (id->out_off < id->out_len) {
		ssize_t n = send(id->watch.fd, id->out + id->out_off, id->out_len - id->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		struct iovec v = { id->out + id->out_off, (size_t)n };
		iw_trace_data(id->ctx, id->trace_conn, true, &v, 1, (size_t)n);
		id->out_off += (size_t)n;
	}
	return 1;
}

static int cm_encode_out(struct iw_cm_id *id, const struct iw_mpa_frame *f)
{
	ssize_t n = iw_mpa_frame_encode(f, id->out, sizeof(id->out), NULL);
	if (n < 0)
		return -EINVAL;
	id->out_len = (size_t)n;
	id->out_off = 0;
	return 0;
}

/* Read up to want bytes into id->in. >0 read, 0: nothing now, <0 error
 * (-ECONNRESET for the peer's FIN). */
static ssize_t cm_read(struct iw_cm_id *id, size_t want)
{
	if (id->rconn) {
		uint32_t k = iwn_tcp_recv(id->rconn, id->in + id->in_len, (uint32_t)want, iw_rawdev_now_us());
		if (k) {
			id->in_len += k;
			return (ssize_t)k;
		}
		if (iwn_tcp_eof(id->rconn))
			return -ECONNRESET;
		if (id->rconn->state == IWN_TCP_CLOSED)
			return id->rconn->err ? id->rconn->err : -ECONNRESET;
		return 0;
	}
	for (;;) {
		ssize_t n = recv(id->watch.fd, id->in + id->in_len, want, MSG_DONTWAIT);
		if (n > 0) {
			struct iovec v = { id->in + id->in_len, (size_t)n };
			iw_trace_data(id->ctx, id->trace_conn, false, &v, 1, (size_t)n);
			id->in_len += (size_t)n;
			return n;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
}

void iw_cm_qp_gone(struct iw_qp *qp)
{
	struct iw_cm_id *id = qp->cm_id;

	if (id && id->qp == qp)
		id->qp = NULL;
	qp->cm_id = NULL;
}

/* ------------------------------------------------------------------ */
/* Establishing                                                        */

/* Dead-peer detection: unacknowledged data fails after ms (a user
 * timeout, which also bounds keepalive); a silent idle peer is probed
 * after max(1 s, ms / 3), then at that interval, CM_KEEPALIVE_PROBES
 * times. */
#define CM_KEEPALIVE_PROBES 3
static uint32_t cm_keepalive_ms(uint32_t ms)
{
	return ms / 3u < 1000u ? 1000u : ms / 3u;
}

/* On a kernel socket (TCP_USER_TIMEOUT; keepalive in whole seconds). */
static int cm_dead_peer_opts(int fd, uint32_t ms)
{
	unsigned ut = ms;
	int one = 1, secs = (int)(cm_keepalive_ms(ms) / 1000u), cnt = CM_KEEPALIVE_PROBES;

	if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof(secs)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &secs, sizeof(secs)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0)
		return -1;
	return 0;
}

/* The same rule on our own TCP (IW_TRANSPORT_RAW). */
static void cm_dead_peer_raw(struct iwn_tcp_conn *c, uint32_t ms)
{
	c->cfg.user_timeout_us = (uint64_t)ms * 1000u;
	c->cfg.keepalive_us = (uint64_t)cm_keepalive_ms(ms) * 1000u;
	c->cfg.keepalive_probes = CM_KEEPALIVE_PROBES;
}

/* What the MPA exchange negotiated, for the QP; mulpdu from the transport. */
static struct iw_qp_conn_params cm_conn_params(const struct iw_cm_id *id, uint32_t mulpdu)
{
	const struct iw_mpa_outcome *o = &id->outcome;
	return (struct iw_qp_conn_params){
		.crc = o->crc,
		.markers_tx = o->markers_tx,
		.markers_rx = o->markers_rx,
		.ird = o->ird,
		.ord = o->ord,
		.mulpdu = mulpdu,
		.max_ulpdu_rx = (uint16_t)id->max_ulpdu_rx, /* checked <= 65535; 0: the maximum */
	};
}

/* cm_establish over our TCP (IW_TRANSPORT_RAW): the connection goes to a
 * raw transport. */
static void cm_establish_raw(struct iw_cm_id *id, bool initiator, const void *peer_pd, uint16_t peer_pd_len)
{
	struct iw_qp *qp = id->qp;
	const struct iw_mpa_outcome *o = &id->outcome;
	struct iw_qp_conn_params p = cm_conn_params(id, iw_raw_mulpdu(id->rconn, o->markers_tx, id->max_ulpdu));
	struct iw_raw_tcfg tc = {
		.dev = id->ctx->raw,
		.conn = id->rconn,
		.tx_gate = !initiator && o->wait_for_first_fpdu,
		.tx_delay_ms = initiator ? id->first_fpdu_delay_ms : 0,
		.send_rtr = initiator && o->p2p && o->rtr == IW_MPA_RTR_WRITE,
		.cm_id = id,
	};
	if (id->ruser_on)
		iw_rawdev_user_del(id->ctx->raw, &id->ruser);
	id->ruser_on = false;
	if (id->dead_peer_ms)
		cm_dead_peer_raw(id->rconn, id->dead_peer_ms);
	struct iw_transport *t = iw_raw_transport_create(id->ctx, qp, &tc);
	if (!t) {
		cm_fail(id, -ENOMEM);
		return;
	}
	int rc = iw_qp_connect_start(qp, &p, t);
	if (rc < 0) {
		/* The connection stays the id's: cm_fail resets it. */
		iw_raw_transport_forget_conn(t);
		iw_raw_transport_detach_cm(t);
		t->ops->destroy(t);
		cm_fail(id, rc);
		return;
	}
	id->rconn = NULL; /* the transport's now */
	id->transport = t;
	id->qp = NULL;
	id->state = CM_ESTABLISHED;
	cm_child_unlink(id);
	cm_queue(id, IW_CM_EVENT_ESTABLISHED, 0, peer_pd, peer_pd_len);
	rc = iw_raw_transport_start(t);
	if (rc < 0)
		t->ops->shutdown(t, true);
}

/* The MPA exchange succeeded: hand the socket to a transport and start
 * the QP. */
static void cm_establish(struct iw_cm_id *id, bool initiator, const void *peer_pd, uint16_t peer_pd_len)
{
	struct iw_qp *qp = id->qp;
	const struct iw_mpa_outcome *o = &id->outcome;
	struct iw_transport *t;
	int rc;

	if (!qp) {
		cm_fail(id, -ECANCELED); /* the QP was destroyed during the handshake */
		return;
	}
	if (initiator && o->p2p && o->rtr != IW_MPA_RTR_WRITE) {
		cm_fail(id, -EPROTO); /* only the WRITE RTR is ours to send */
		return;
	}
	if (id->watching)
		iw_ctx_watch_del(id->ctx, &id->watch);
	id->watching = false;
	iw_ctx_timer_cancel(id->ctx, &id->timer);
	if (id->rconn) {
		cm_establish_raw(id, initiator, peer_pd, peer_pd_len);
		return;
	}
	if (id->dead_peer_ms && cm_dead_peer_opts(id->watch.fd, id->dead_peer_ms) < 0) {
		cm_fail(id, -errno);
		return;
	}

	struct iw_qp_conn_params p = cm_conn_params(id, iw_tcp_mulpdu(id->watch.fd, o->markers_tx, id->max_ulpdu));
	struct iw_tcp_cfg tc = {
		.fd = id->watch.fd,
		.tx_gate = !initiator && o->wait_for_first_fpdu,
		.send_rtr = initiator && o->p2p && o->rtr == IW_MPA_RTR_WRITE,
		.tx_delay_ms = initiator ? id->first_fpdu_delay_ms : 0,
		.trace_conn = id->trace_conn,
		.cm_id = id,
	};
	t = iw_tcp_transport_create(id->ctx, qp, &tc);
	if (!t) {
		cm_fail(id, -ENOMEM);
		return;
	}
	rc = iw_qp_connect_start(qp, &p, t);
	if (rc < 0) {
		/* The transport took the socket: let it close it. */
		iw_tcp_transport_detach_cm(t);
		t->ops->destroy(t);
		id->watch.fd = -1;
		id->trace_conn = 0;
		cm_fail(id, rc);
		return;
	}
	/* The socket and its trace now belong to the transport. */
	id->watch.fd = -1;
	id->trace_conn = 0;
	id->transport = t;
	id->qp = NULL; /* reached through the transport from now on */
	id->state = CM_ESTABLISHED;
	cm_child_unlink(id);
	cm_queue(id, IW_CM_EVENT_ESTABLISHED, 0, peer_pd, peer_pd_len);
	rc = iw_tcp_transport_start(t);
	if (rc < 0) /* cannot watch the socket: the stream is unusable */
		t->ops->shutdown(t, true);
}

/* ------------------------------------------------------------------ */
/* Active side                                                         */

static void cm_send_request(struct iw_cm_id *id)
{
	int rc;

	cm_get_local(id);
	id->trace_conn = iw_trace_conn_open(id->ctx, (struct sockaddr *)&id->local, (struct sockaddr *)&id->peer,
					    true);
	iw_mpa_make_request(&id->settings, id->req.pdata_len ? id->pd : NULL, id->req.pdata_len, &id->req);
	if (cm_encode_out(id, &id->req) < 0) {
		cm_fail(id, -EINVAL);
		return;
	}
	id->state = CM_WAIT_REPLY;
	id->in_len = 0;
	rc = cm_flush_out(id);
	if (rc < 0)
		cm_fail(id, rc);
	else if (cm_watch(id, rc ? EPOLLIN : EPOLLIN | EPOLLOUT) < 0)
		cm_fail(id, -ENOMEM);
}

static void cm_on_reply_bytes(struct iw_cm_id *id)
{
	for (;;) {
		/* Read exactly the frame: FPDUs behind it are the transport's. */
		size_t want = IW_MPA_FRAME_HDR_LEN;
		if (id->in_len >= IW_MPA_FRAME_HDR_LEN) {
			size_t pd = (size_t)id->in[18] << 8 | id->in[19];
			if (pd > IW_MPA_PD_MAX) {
				cm_fail(id, -EPROTO);
				return;
			}
			want += pd;
		}
		if (id->in_len >= want)
			break;
		ssize_t n = cm_read(id, want - id->in_len);
		if (n < 0) {
			cm_fail(id, (int)n);
			return;
		}
		if (n == 0)
			return;
	}

	struct iw_mpa_frame rep;
	enum iw_mpa_frame_error why;
	ssize_t fl = iw_mpa_frame_decode(id->in, id->in_len, IW_MPA_REPLY, 0, 0, &rep, &why);
	if (fl <= 0) {
		cm_fail(id, -EPROTO);
		return;
	}
	enum iw_mpa_reject_reason r = iw_mpa_initiator_check(&id->settings, &id->req, &rep, &id->outcome);
	if (r == IW_MPA_REJ_PEER) {
		cm_close_fd(id, false);
		id->state = CM_DONE;
		if (id->qp && id->qp->cm_id == id)
			id->qp->cm_id = NULL;
		id->qp = NULL;
		cm_queue(id, IW_CM_EVENT_REJECTED, -ECONNREFUSED, rep.pdata, rep.pdata_len);
		return;
	}
	if (r != IW_MPA_OK) {
		cm_fail(id, -EPROTO);
		return;
	}
	cm_establish(id, true, rep.pdata, rep.pdata_len);
}

/* iw_cm_connect over our TCP: IPv4 on-link peers only. */
static int cm_connect_raw(struct iw_cm_id *id, struct iw_qp *qp, const struct sockaddr *dst)
{
	struct iw_rawdev *raw = id->ctx->raw;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)dst;
	int rc;

	if (dst->sa_family != AF_INET)
		return -EAFNOSUPPORT;
	uint32_t ra = ntohl(sin->sin_addr.s_addr);
	if (!iw_rawdev_on_link(raw, ra))
		return -ENETUNREACH;
	id->rconn = iwn_net_connect(&raw->net, ra, ntohs(sin->sin_port), 0, iw_rawdev_now_us(), &rc);
	if (!id->rconn)
		return rc;
	memset(&id->peer, 0, sizeof(id->peer));
	memcpy(&id->peer, dst, sizeof(*sin));
	id->has_peer = true;
	id->qp = qp;
	qp->cm_id = id;
	id->state = CM_CONNECTING;
	iw_ctx_timer_arm(id->ctx, &id->timer, (uint64_t)id->timeout_ms);
	cm_watch(id, EPOLLOUT);
	iw_rawdev_flush(raw);
	return 0;
}

int iw_cm_connect(struct iw_cm_id *id, struct iw_qp *qp, const struct sockaddr *dst,
		  const struct iw_conn_param *param)
{
	int rc, fd, one = 1;

	if (!id || !qp || !dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_IDLE || qp->ctx != id->ctx || qp->cm_id || qp->state != IW_QPS_INIT) {
		rc = -EINVAL;
		goto out;
	}
	rc = cm_settings(id, param, true);
	if (rc < 0)
		goto out;
	id->req.pdata_len = param ? param->private_data_len : 0;
	if (id->req.pdata_len)
		memcpy(id->pd, param->private_data, id->req.pdata_len);

	if (id->ctx->raw) {
		rc = cm_connect_raw(id, qp, dst);
		goto out;
	}
	fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	id->watch.fd = fd;
	memset(&id->peer, 0, sizeof(id->peer));
	memcpy(&id->peer, dst, sa_len(dst));
	id->has_peer = true;
	id->qp = qp;
	qp->cm_id = id;
	id->state = CM_CONNECTING;
	iw_ctx_timer_arm(id->ctx, &id->timer, (uint64_t)id->timeout_ms);
	rc = 0;
	if (connect(fd, dst, sa_len(dst)) == 0) {
		cm_send_request(id);
	} else if (errno == EINPROGRESS || errno == EINTR) {
		if (cm_watch(id, EPOLLOUT) < 0)
			cm_fail(id, -ENOMEM);
	} else {
		cm_fail(id, -errno); /* reported as CONNECT_ERROR like a late failure */
	}
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Passive side                                                        */

int iw_cm_listen(struct iw_cm_id *id, const struct sockaddr *addr, int backlog)
{
	struct iw_listen_param p = { .backlog = backlog };

	return iw_cm_listen_param(id, addr, &p);
}

/* iw_cm_listen over our TCP: our address (or any) and a fixed port. */
static int cm_listen_raw(struct iw_cm_id *id, const struct sockaddr *addr, const struct iw_listen_param *param)
{
	struct iw_rawdev *raw = id->ctx->raw;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;

	if (addr->sa_family != AF_INET)
		return -EAFNOSUPPORT;
	uint32_t ip = ntohl(sin->sin_addr.s_addr);
	if (ip != 0 && ip != raw->net.cfg.ip)
		return -EADDRNOTAVAIL;
	uint16_t port = ntohs(sin->sin_port);
	if (port == 0)
		return -EINVAL; /* no ephemeral listeners on our TCP */
	id->backlog = param->backlog <= 0 ? IW_CM_BACKLOG_DEFAULT
		      : param->backlog > IW_CM_BACKLOG_MAX ? IW_CM_BACKLOG_MAX : param->backlog;
	id->req_timeout_ms = param->request_timeout_ms ? (uint32_t)param->request_timeout_ms
						       : IW_CM_REQUEST_TIMEOUT_DEFAULT;
	int rc = iwn_net_listen(&raw->net, port, (uint32_t)id->backlog);
	if (rc < 0)
		return rc;
	id->rport = port;
	cm_get_local(id);
	cm_watch(id, EPOLLIN);
	id->state = CM_LISTEN;
	return 0;
}

int iw_cm_listen_param(struct iw_cm_id *id, const struct sockaddr *addr, const struct iw_listen_param *param)
{
	static const struct iw_listen_param defaults = { 0 };
	int fd, one = 1, rc;

	if (!param)
		param = &defaults;
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
	    param->request_timeout_ms < 0)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_IDLE) {
		rc = -EINVAL;
		goto out;
	}
	if (id->ctx->raw) {
		rc = cm_listen_raw(id, addr, param);
		goto out;
	}
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	id->backlog = param->backlog <= 0 ? IW_CM_BACKLOG_DEFAULT
		      : param->backlog > IW_CM_BACKLOG_MAX ? IW_CM_BACKLOG_MAX : param->backlog;
	id->req_timeout_ms = param->request_timeout_ms ? (uint32_t)param->request_timeout_ms
						       : IW_CM_REQUEST_TIMEOUT_DEFAULT;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 || bind(fd, addr, sa_len(addr)) < 0 ||
	    listen(fd, id->backlog) < 0) {
		rc = -errno;
		close(fd);
		goto out;
	}
	id->watch.fd = fd;
	cm_get_local(id);
	rc = cm_watch(id, EPOLLIN);
	if (rc < 0) {
		close(fd);
		id->watch.fd = -1;
		goto out;
	}
	id->state = CM_LISTEN;
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

static void cm_on_accept_raw(struct iw_cm_id *l)
{
	struct iw_rawdev *raw = l->ctx->raw;
	struct iwn_tcp_conn *rc;

	while ((rc = iwn_net_accept(&raw->net, l->rport)) != NULL) {
		struct iw_cm_id *c = NULL;
		if (l->n_pending < (uint32_t)l->backlog)
			c = cm_id_alloc(l->ch, l->context);
		if (!c) {
			iwn_net_release(&raw->net, rc, iw_rawdev_now_us()); /* over the backlog: reset */
			continue;
		}
		c->rconn = rc;
		cm_raw_sa(&c->peer, rc->raddr, rc->rport);
		c->has_peer = true;
		cm_get_local(c);
		c->listener = l;
		c->sib_next = l->children;
		l->children = c;
		l->n_pending++;
		c->state = CM_WAIT_REQUEST;
		cm_watch(c, EPOLLIN);
		iw_ctx_timer_arm(c->ctx, &c->timer, l->req_timeout_ms);
	}
	iw_rawdev_flush(raw);
}

static void cm_on_accept(struct iw_cm_id *l)
{
	if (l->ctx->raw) {
		cm_on_accept_raw(l);
		return;
	}
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int one = 1;
		int fd = accept4(l->watch.fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return; /* EAGAIN, or out of fds: try again on the next wakeup */
		}
		struct iw_cm_id *c = NULL;
		if (l->n_pending < (uint32_t)l->backlog)
			c = cm_id_alloc(l->ch, l->context);
		if (!c) {
			/* Over the backlog: refuse with a reset. */
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->watch.fd = fd;
		c->peer = ss;
		c->has_peer = true;
		cm_get_local(c);
		c->listener = l;
		c->sib_next = l->children;
		l->children = c;
		l->n_pending++;
		c->trace_conn = iw_trace_conn_open(c->ctx, (struct sockaddr *)&c->local, (struct sockaddr *)&c->peer,
						   false);
		c->state = CM_WAIT_REQUEST;
		if (cm_watch(c, EPOLLIN) < 0) {
			cm_id_free(c);
			continue;
		}
		iw_ctx_timer_arm(c->ctx, &c->timer, l->req_timeout_ms);
	}
}

static void cm_on_request_bytes(struct iw_cm_id *id)
{
	ssize_t n = cm_read(id, sizeof(id->in) - id->in_len);
	if (n < 0) {
		cm_fail(id, (int)n);
		return;
	}
	if (n == 0)
		return;

	enum iw_mpa_frame_error why;
	ssize_t fl = iw_mpa_frame_decode(id->in, id->in_len, IW_MPA_REQUEST, 0, 0, &id->req, &why);
	if (fl == 0)
		return; /* incomplete */
	if (fl < 0 || (size_t)fl != id->in_len) {
		/* Not a Request, or bytes behind it the initiator may not send yet. */
		cm_fail(id, -EPROTO);
		return;
	}
	iw_ctx_timer_cancel(id->ctx, &id->timer);
	id->state = CM_REQ_RECEIVED;
	cm_queue(id, IW_CM_EVENT_CONNECT_REQUEST, 0, id->req.pdata, id->req.pdata_len);
}

/* Waiting for the application: the peer must stay silent. */
static void cm_on_bytes_while_waiting(struct iw_cm_id *id)
{
	if (id->rconn) {
		if (iwn_tcp_readable(id->rconn))
			cm_fail(id, -EPROTO);
		else if (iwn_tcp_eof(id->rconn) || id->rconn->state == IWN_TCP_CLOSED)
			cm_fail(id, -ECONNRESET);
		return;
	}
	uint8_t b;
	ssize_t n = recv(id->watch.fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (n > 0)
		cm_fail(id, -EPROTO);
	else if (n == 0)
		cm_fail(id, -ECONNRESET);
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		cm_fail(id, -errno);
}

int iw_cm_accept(struct iw_cm_id *id, struct iw_qp *qp, const struct iw_conn_param *param)
{
	struct iw_mpa_frame reply;
	enum iw_mpa_reject_reason r;
	int rc;

	if (!id || !qp)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_REQ_RECEIVED || qp->ctx != id->ctx || qp->cm_id || qp->state != IW_QPS_INIT) {
		rc = id->state == CM_DONE ? -ECONNABORTED : -EINVAL;
		goto out;
	}
	rc = cm_settings(id, param, false);
	if (rc < 0)
		goto out;
	/* A rev 1 Request gets a rev 1 Reply: the 4 enhanced bytes are free. */
	r = iw_mpa_respond(&id->settings, &id->req, param ? param->private_data : NULL,
			   param ? param->private_data_len : 0, &reply, &id->outcome);
	if (cm_encode_out(id, &reply) < 0) {
		rc = -EINVAL;
		goto out;
	}
	/* Test only (tests/interop): a deliberately broken Reply, revision 1
	 * whatever was negotiated, proves the interop suite notices. */
	if (r == IW_MPA_OK && id->out_len > 17 && getenv("IWARP_TEST_MPA_REPLY_REV"))
		id->out[17] = (uint8_t)atoi(getenv("IWARP_TEST_MPA_REPLY_REV"));
	if (r != IW_MPA_OK) {
		/* Our policy refuses the request: reject frame, FIN, report. */
		cm_flush_out(id);
		cm_fail_close(id, -EPROTO, false);
		rc = 0;
		goto out;
	}
	id->qp = qp;
	qp->cm_id = id;
	id->state = CM_ACCEPTING;
	rc = cm_flush_out(id);
	if (rc < 0) {
		cm_fail(id, rc);
	} else if (rc == 1) {
		cm_establish(id, false, id->req.pdata, id->req.pdata_len);
	} else if (cm_watch(id, EPOLLOUT) < 0) {
		cm_fail(id, -ENOMEM);
	}
	rc = 0;
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

/* A rejected connection's socket, kept open after the reject frame until
 * the initiator closes it (or CM_REJECT_LINGER_MS pass): a Linux siw
 * initiator loses the reject's private data when our FIN follows the
 * frame at once (seen about 1 in 4). Owned by the context, so the id can
 * go away meanwhile. */
#define CM_REJECT_LINGER_MS 1000
/* At most this many at once per context: a peer that floods connections
 * the application rejects and never closes them must not pin sockets
 * (beyond this, the FIN follows the reject frame at once). */
#define CM_MAX_LINGERS 64
struct iw_cm_linger {
	struct iw_watch watch;
	struct iw_timer timer;
	struct iw_context *ctx;
	uint32_t trace_conn;
	struct iw_cm_linger *next;
};

static void linger_close(struct iw_cm_linger *l)
{
	struct iw_cm_linger **pp;

	for (pp = &l->ctx->lingers; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	iw_ctx_watch_del(l->ctx, &l->watch);
	iw_ctx_timer_cancel(l->ctx, &l->timer);
	close(l->watch.fd);
	iw_trace_conn_close(l->ctx, l->trace_conn, false);
	free(l);
}

static void linger_watch_cb(struct iw_watch *w, uint32_t revents)
{
	struct iw_cm_linger *l = (struct iw_cm_linger *)((char *)w - offsetof(struct iw_cm_linger, watch));
	uint8_t buf[256];
	ssize_t n;

	(void)revents;
	while ((n = recv(l->watch.fd, buf, sizeof(buf), 0)) > 0)
		; /* nothing the initiator sends now matters */
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		linger_close(l);
}

static void linger_timer_cb(struct iw_timer *t)
{
	linger_close((struct iw_cm_linger *)((char *)t - offsetof(struct iw_cm_linger, timer)));
}

void iw_cm_lingers_free(struct iw_context *ctx)
{
	while (ctx->lingers)
		linger_close(ctx->lingers);
}

static uint32_t cm_n_lingers(const struct iw_context *ctx)
{
	uint32_t n = 0;

	for (const struct iw_cm_linger *l = ctx->lingers; l && n < CM_MAX_LINGERS; l = l->next)
		n++;
	return n;
}

static void cm_reject_done(struct iw_cm_id *id)
{
	/* Our TCP lingers by itself: the released connection sends its FIN
	 * after the frame and stays until closed. */
	struct iw_cm_linger *l = !id->rconn && cm_n_lingers(id->ctx) < CM_MAX_LINGERS ? calloc(1, sizeof(*l)) : NULL;

	if (l && id->watch.fd >= 0) {
		if (id->watching)
			iw_ctx_watch_del(id->ctx, &id->watch);
		id->watching = false;
		iw_ctx_timer_cancel(id->ctx, &id->timer);
		l->ctx = id->ctx;
		l->watch.fd = id->watch.fd;
		l->watch.cb = linger_watch_cb;
		l->timer.cb = linger_timer_cb;
		l->trace_conn = id->trace_conn;
		if (iw_ctx_watch_add(l->ctx, &l->watch, EPOLLIN) == 0) {
			l->next = l->ctx->lingers;
			l->ctx->lingers = l;
			iw_ctx_timer_arm(l->ctx, &l->timer, CM_REJECT_LINGER_MS);
			id->watch.fd = -1;
			id->trace_conn = 0;
			l = NULL;
		}
	}
	free(l);
	/* Without a linger (no memory, or too many): FIN right behind the frame. */
	cm_close_fd(id, false);
	cm_child_unlink(id);
	id->state = CM_DONE;
}

int iw_cm_reject(struct iw_cm_id *id, const void *private_data, uint16_t len)
{
	struct iw_mpa_frame reply;
	int rc;

	if (!id || (len && !private_data))
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_REQ_RECEIVED) {
		rc = id->state == CM_DONE ? -ECONNABORTED : -EINVAL;
		goto out;
	}
	rc = cm_settings(id, NULL, false);
	if (rc < 0)
		goto out;
	uint16_t pd_max = IW_MPA_PD_MAX - (id->req.rev == IW_MPA_REV2 && id->req.enhanced ? IW_MPA_V2_WORDS_LEN : 0);
	if (len > pd_max) {
		rc = -EINVAL;
		goto out;
	}
	iw_mpa_make_reject(&id->settings, &id->req, private_data, len, &reply);
	if (cm_encode_out(id, &reply) < 0) {
		rc = -EINVAL;
		goto out;
	}
	id->state = CM_REJECTING;
	rc = cm_flush_out(id);
	if (rc < 0)
		cm_fail(id, rc);
	else if (rc == 1)
		cm_reject_done(id);
	else if (cm_watch(id, EPOLLOUT) < 0)
		cm_fail(id, -ENOMEM);
	rc = 0;
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Progress callbacks                                                  */

static void cm_watch_cb(struct iw_watch *w, uint32_t revents)
{
	struct iw_cm_id *id = (struct iw_cm_id *)((char *)w - offsetof(struct iw_cm_id, watch));
	int rc;

	switch (id->state) {
	case CM_LISTEN:
		cm_on_accept(id);
		break;
	case CM_CONNECTING: {
		if (id->rconn) {
			if (id->rconn->state == IWN_TCP_CLOSED)
				cm_fail(id, id->rconn->err ? id->rconn->err : -ECONNREFUSED);
			else if (id->rconn->state != IWN_TCP_SYN_SENT)
				cm_send_request(id);
			break;
		}
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(id->watch.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			cm_fail(id, -err);
			break;
		}
		if (!(revents & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			break;
		cm_send_request(id);
		break;
	}
	case CM_WAIT_REPLY:
		if (id->out_off < id->out_len) {
			rc = cm_flush_out(id);
			if (rc < 0) {
				cm_fail(id, rc);
				break;
			}
			if (rc == 1 && cm_watch(id, EPOLLIN) < 0) {
				cm_fail(id, -ENOMEM);
				break;
			}
		}
		if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
			cm_on_reply_bytes(id);
		break;
	case CM_WAIT_REQUEST:
		cm_on_request_bytes(id);
		break;
	case CM_REQ_RECEIVED:
		cm_on_bytes_while_waiting(id);
		break;
	case CM_ACCEPTING:
	case CM_REJECTING:
		rc = cm_flush_out(id);
		if (rc < 0)
			cm_fail(id, rc);
		else if (rc == 1 && id->state == CM_ACCEPTING)
			cm_establish(id, false, id->req.pdata, id->req.pdata_len);
		else if (rc == 1)
			cm_reject_done(id);
		break;
	default:
		/* Not expecting I/O: stop watching. */
		if (id->watching)
			iw_ctx_watch_del(id->ctx, &id->watch);
		id->watching = false;
		if (id->ruser_on)
			iw_rawdev_user_del(id->ctx->raw, &id->ruser);
		id->ruser_on = false;
		break;
	}
}

static void cm_raw_user_cb(struct iw_rawdev_user *u)
{
	struct iw_cm_id *id = (struct iw_cm_id *)((char *)u - offsetof(struct iw_cm_id, ruser));
	cm_watch_cb(&id->watch, EPOLLIN | EPOLLOUT);
}

static void cm_timer_cb(struct iw_timer *t)
{
	struct iw_cm_id *id = (struct iw_cm_id *)((char *)t - offsetof(struct iw_cm_id, timer));

	switch (id->state) {
	case CM_CONNECTING:
	case CM_WAIT_REPLY:
	case CM_WAIT_REQUEST:
		cm_fail(id, -ETIMEDOUT);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Established connections                                             */

int iw_cm_disconnect(struct iw_cm_id *id)
{
	int rc = 0;

	if (!id)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state == CM_ESTABLISHED && id->transport) {
		struct iw_transport *t = id->transport;
		id->state = CM_DISCONNECTING;
		iw_qp_disconnect(t->qp);
		/* The QP may have closed the transport meanwhile. */
		if (id->transport)
			id->transport->ops->shutdown(id->transport, false);
	} else if (id->state != CM_DISCONNECTING && id->state != CM_DONE) {
		rc = -ENOTCONN;
	}
	iw_ctx_unlock(id->ctx);
	return rc;
}

void iw_cm_conn_closed(struct iw_cm_id *id, int err)
{
	if (id->state != CM_ESTABLISHED && id->state != CM_DISCONNECTING)
		return;
	id->state = CM_DONE;
	cm_queue(id, IW_CM_EVENT_DISCONNECTED, err, NULL, 0);
}

void iw_cm_transport_gone(struct iw_cm_id *id)
{
	id->transport = NULL;
	if (id->state == CM_ESTABLISHED || id->state == CM_DISCONNECTING) {
		id->state = CM_DONE;
		cm_queue(id, IW_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	}
}
