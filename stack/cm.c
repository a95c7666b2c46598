/* Connection manager: TCP listen/connect and the MPA Request/Reply
 * exchange (RFC 5044, RFC 6581) over the context's connections (struct
 * iw_conn, transport/transport.h: kernel sockets, our TCP, or memory),
 * driven by the context's progress loop; events go to CM channels.
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
 * Once established the connection becomes the QP's transport; the id keeps
 * a link to it for disconnect and gets DISCONNECTED when the stream ends.
 * Channels and events: cm_event.c. */
#include "cm_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CM_CONNECT_TIMEOUT_MS 10000 /* active default: TCP connect + Reply (siw) */
#define CM_FIRST_FPDU_DELAY_MS 20   /* see iw_conn_param.first_fpdu_delay_ms */
#define CM_MIN_DEAD_PEER_MS 100
#define CM_IRD_ORD_DEFAULT 16
#define CM_MIN_ULPDU 64

static void cm_conn_ready(void *arg);
static void cm_timer_cb(struct iw_timer *t);

/* ------------------------------------------------------------------ */
/* Ids                                                                 */

static struct iw_cm_id *cm_id_alloc(struct iw_cm_channel *ch, void *context)
{
	struct iw_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	if (cm_events_reserve(id) < 0) {
		free(id);
		return NULL;
	}
	id->ch = ch;
	id->ctx = ch->ctx;
	id->context = context;
	id->state = CM_IDLE;
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

/* The id's connection tells it when I/O may progress. */
static void cm_attach(struct iw_cm_id *id, struct iw_conn *c)
{
	id->conn = c;
	c->ready = cm_conn_ready;
	c->ready_arg = id;
}

/* Wait for reading (rd) and/or writing (wr); neither: stop. */
static int cm_want(struct iw_cm_id *id, bool rd, bool wr)
{
	return id->conn ? id->conn->ops->want(id->conn, rd, wr) : -ENOTCONN;
}

/* Close the id's connection. */
static void cm_close_conn(struct iw_cm_id *id, enum iw_conn_close how)
{
	iw_ctx_timer_cancel(id->ctx, &id->timer);
	if (id->conn)
		id->conn->ops->close(id->conn, how);
	id->conn = NULL;
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

	cm_close_conn(id, IW_CONN_ABORT);
	cm_child_unlink(id);
	cm_purge_events(ch, id);
	if (id->qp && id->qp->cm_id == id)
		id->qp->cm_id = NULL;
	if (id->transport) {
		struct iw_qp *qp = id->transport->qp;
		if (qp && qp->cm_id == id)
			qp->cm_id = NULL;
		id->transport->ops->detach(id->transport);
		id->transport = NULL;
	}
	ch->n_ids--;
	cm_events_release(id);
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

	cm_close_conn(id, abortive ? IW_CONN_ABORT : IW_CONN_GRACEFUL);
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

static void cm_get_local(struct iw_cm_id *id)
{
	id->has_local = id->conn && id->conn->ops->local_addr(id->conn, &id->local) == 0;
}

/* ------------------------------------------------------------------ */
/* Parameters                                                          */

/* What the QP itself demands: verified placement has nothing to verify
 * without CRC, so such a QP refuses connections without it. */
static void cm_qp_settings(struct iw_cm_id *id, const struct iw_qp *qp)
{
	if (qp->verified)
		id->settings.crc = IW_MPA_CRC_REQUIRED;
}

bool iw_rfc7306_enabled(void)
{
	/* Read per connection: tests flip it between connections. */
	const char *v = getenv("IWARP_RFC7306");
	return !(v && strcmp(v, "0") == 0);
}

static int cm_settings(struct iw_cm_id *id, const struct iw_conn_param *p, bool initiator)
{
	struct iw_mpa_settings *s = &id->settings;
	static const struct iw_conn_param none = { 0 };
	uint16_t pd_max;
	uint8_t supported;

	if (!p)
		p = &none;
	iw_mpa_settings_default(s);
	s->rfc7306 = iw_rfc7306_enabled();
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

/* Send what is left of id->out. 1: all sent, 0: wait for room, <0: error. */
static int cm_flush_out(struct iw_cm_id *id)
{
	if (id->out_off < id->out_len) {
		ssize_t n = id->conn->ops->send(id->conn, id->out + id->out_off, id->out_len - id->out_off);
		if (n < 0)
			return (int)n;
		id->out_off += (size_t)n;
	}
	return id->out_off == id->out_len;
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
	ssize_t n = id->conn->ops->recv(id->conn, id->in + id->in_len, want);

	if (n > 0)
		id->in_len += (size_t)n;
	return n;
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
		.rfc7306 = o->rfc7306,
		.mulpdu = mulpdu,
		.max_ulpdu_rx = (uint16_t)id->max_ulpdu_rx, /* checked <= 65535; 0: the maximum */
	};
}

/* The MPA exchange succeeded: the connection becomes the QP's transport
 * and the QP starts. */
static void cm_establish(struct iw_cm_id *id, bool initiator, const void *peer_pd, uint16_t peer_pd_len)
{
	struct iw_qp *qp = id->qp;
	const struct iw_mpa_outcome *o = &id->outcome;
	struct iw_conn *c = id->conn;
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
	cm_want(id, false, false);
	iw_ctx_timer_cancel(id->ctx, &id->timer);
	if (id->dead_peer_ms && (rc = c->ops->dead_peer(c, id->dead_peer_ms)) < 0) {
		cm_fail(id, rc);
		return;
	}

	struct iw_qp_conn_params p = cm_conn_params(id, c->ops->mulpdu(c, o->markers_tx, id->max_ulpdu));
	struct iw_stream_cfg sc = {
		.tx_gate = !initiator && o->wait_for_first_fpdu,
		.send_rtr = initiator && o->p2p && o->rtr == IW_MPA_RTR_WRITE,
		.tx_delay_ms = initiator ? id->first_fpdu_delay_ms : 0,
		.cm_id = id,
	};
	t = c->ops->to_transport(c, qp, &sc);
	if (!t) {
		cm_fail(id, -ENOMEM);
		return;
	}
	id->conn = NULL; /* the transport's now */
	rc = iw_qp_connect_start(qp, &p, t);
	if (rc < 0) {
		/* The transport closes the connection (a reset). */
		t->ops->detach(t);
		t->ops->destroy(t);
		cm_fail(id, rc);
		return;
	}
	id->transport = t;
	id->qp = NULL; /* reached through the transport from now on */
	id->state = CM_ESTABLISHED;
	cm_child_unlink(id);
	cm_queue(id, IW_CM_EVENT_ESTABLISHED, 0, peer_pd, peer_pd_len);
	rc = t->ops->start(t);
	if (rc < 0) /* cannot watch the stream: it is unusable */
		t->ops->shutdown(t, true);
}

/* ------------------------------------------------------------------ */
/* Active side                                                         */

static void cm_send_request(struct iw_cm_id *id)
{
	int rc;

	cm_get_local(id);
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
	else if (cm_want(id, true, rc == 0) < 0)
		cm_fail(id, -ENOMEM);
}

/* Connecting: send the Request once the connection is up. */
static void cm_on_connecting(struct iw_cm_id *id)
{
	int rc = id->conn->ops->connected(id->conn);

	if (rc < 0)
		cm_fail(id, rc);
	else if (rc > 0)
		cm_send_request(id);
	else if (cm_want(id, false, true) < 0)
		cm_fail(id, -ENOMEM);
}

static void cm_on_reply_bytes(struct iw_cm_id *id)
{
	for (;;) {
		/* Read exactly the frame: FPDUs behind it are the transport's. */
		size_t want = IW_MPA_FRAME_HDR_LEN;
		if (id->in_len >= IW_MPA_FRAME_HDR_LEN) {
			size_t pd = iw_mpa_hdr_pd_len(id->in);
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
		cm_close_conn(id, IW_CONN_GRACEFUL);
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

int iw_cm_connect(struct iw_cm_id *id, struct iw_qp *qp, const struct sockaddr *dst,
		  const struct iw_conn_param *param)
{
	struct iw_conn *c;
	int rc;

	if (!id || !qp || !dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_IDLE || qp->ctx != id->ctx || qp->cm_id || !iw_qp_idle(qp)) {
		rc = -EINVAL;
		goto out;
	}
	rc = cm_settings(id, param, true);
	if (rc < 0)
		goto out;
	cm_qp_settings(id, qp);
	id->req.pdata_len = param ? param->private_data_len : 0;
	if (id->req.pdata_len)
		memcpy(id->pd, param->private_data, id->req.pdata_len);

	rc = id->ctx->conn_factory->open(id->ctx->conn_factory, id->ctx, &c);
	if (rc < 0)
		goto out;
	if (param && param->src_addr)
		rc = c->ops->bind_src ? c->ops->bind_src(c, param->src_addr) : -EOPNOTSUPP;
	if (rc >= 0)
		rc = c->ops->connect(c, dst);
	if (rc < 0) {
		c->ops->close(c, IW_CONN_ABORT);
		goto out;
	}
	cm_attach(id, c);
	memset(&id->peer, 0, sizeof(id->peer));
	memcpy(&id->peer, dst, sa_len(dst));
	id->has_peer = true;
	id->qp = qp;
	qp->cm_id = id;
	id->state = CM_CONNECTING;
	iw_ctx_timer_arm(id->ctx, &id->timer, (uint64_t)id->timeout_ms);
	cm_on_connecting(id); /* a failure now is reported as CONNECT_ERROR like a late one */
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

int iw_cm_listen_param(struct iw_cm_id *id, const struct sockaddr *addr, const struct iw_listen_param *param)
{
	static const struct iw_listen_param defaults = { 0 };
	struct iw_conn *c;
	int rc;

	if (!param)
		param = &defaults;
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
	    param->request_timeout_ms < 0 || param->silent_timeout_ms < 0 || param->per_source_max < 0)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_IDLE) {
		rc = -EINVAL;
		goto out;
	}
	id->backlog = param->backlog <= 0 ? IW_CM_BACKLOG_DEFAULT
		      : param->backlog > IW_CM_BACKLOG_MAX ? IW_CM_BACKLOG_MAX : param->backlog;
	id->req_timeout_ms = param->request_timeout_ms ? (uint32_t)param->request_timeout_ms
						       : IW_CM_REQUEST_TIMEOUT_DEFAULT;
	id->silent_timeout_ms = param->silent_timeout_ms ? (uint32_t)param->silent_timeout_ms
							 : IW_CM_SILENT_TIMEOUT_DEFAULT;
	id->per_source_max = param->per_source_max ? (uint32_t)param->per_source_max : (uint32_t)id->backlog;
	if (id->per_source_max > (uint32_t)id->backlog)
		id->per_source_max = (uint32_t)id->backlog;
	memset(&id->stats, 0, sizeof(id->stats));
	rc = id->ctx->conn_factory->open(id->ctx->conn_factory, id->ctx, &c);
	if (rc < 0)
		goto out;
	rc = c->ops->listen(c, addr, id->backlog);
	if (rc < 0) {
		c->ops->close(c, IW_CONN_ABORT);
		goto out;
	}
	cm_attach(id, c);
	cm_get_local(id);
	rc = cm_want(id, true, false);
	if (rc < 0) {
		cm_close_conn(id, IW_CONN_ABORT);
		goto out;
	}
	id->state = CM_LISTEN;
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

static void cm_on_accept(struct iw_cm_id *l)
{
	struct iw_conn *cc;

	while (l->conn->ops->accept(l->conn, &cc) == 0) {
		struct iw_cm_id *c = NULL, *evict;
		struct sockaddr_storage peer = { 0 };
		bool has_peer = cc->ops->peer_addr(cc, &peer) == 0;
		uint64_t now = iw_now_ms();

		if (cm_admit(l, has_peer ? &peer : NULL, now, &evict) == 0) {
			if (evict)
				cm_fail(evict, -ECONNRESET);
			c = cm_id_alloc(l->ch, l->context);
		}
		if (!c) {
			cc->ops->close(cc, IW_CONN_ABORT); /* refused: a reset at once */
			continue;
		}
		cm_attach(c, cc);
		c->has_peer = has_peer;
		c->peer = peer;
		cm_get_local(c);
		c->listener = l;
		c->sib_next = l->children;
		l->children = c;
		l->n_pending++;
		c->born_ms = now;
		c->state = CM_WAIT_REQUEST;
		if (cm_want(c, true, false) < 0) {
			cm_id_free(c);
			continue;
		}
		iw_ctx_timer_arm(c->ctx, &c->timer, cm_admit_first_timer(c));
	}
}

bool cm_read_request(struct iw_cm_id *id)
{
	ssize_t n = cm_read(id, sizeof(id->in) - id->in_len);
	if (n < 0) {
		if (id->listener)
			id->listener->stats.peer_gone++;
		cm_fail(id, (int)n);
		return false;
	}
	id->unread = false;
	if (n == 0)
		return true;

	enum iw_mpa_frame_error why;
	ssize_t fl = iw_mpa_frame_decode(id->in, id->in_len, IW_MPA_REQUEST, 0, 0, &id->req, &why);
	if (fl == 0)
		return true; /* incomplete */
	if (fl < 0 || (size_t)fl != id->in_len) {
		/* Not a Request, or bytes behind it the initiator may not send yet. */
		if (id->listener)
			id->listener->stats.bad_request++;
		cm_fail(id, -EPROTO);
		return false;
	}
	iw_ctx_timer_cancel(id->ctx, &id->timer);
	if (id->listener)
		id->listener->stats.requests++;
	id->state = CM_REQ_RECEIVED;
	cm_queue(id, IW_CM_EVENT_CONNECT_REQUEST, 0, id->req.pdata, id->req.pdata_len);
	return false;
}

/* Waiting for the application: the peer must stay silent. */
static void cm_on_bytes_while_waiting(struct iw_cm_id *id)
{
	int rc = id->conn->ops->pending(id->conn);

	if (rc > 0)
		cm_fail(id, -EPROTO);
	else if (rc < 0)
		cm_fail(id, rc);
}

int iw_cm_accept(struct iw_cm_id *id, struct iw_qp *qp, const struct iw_conn_param *param)
{
	struct iw_mpa_frame reply;
	enum iw_mpa_reject_reason r;
	int rc;

	if (!id || !qp)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state != CM_REQ_RECEIVED || qp->ctx != id->ctx || qp->cm_id || !iw_qp_idle(qp)) {
		rc = id->state == CM_DONE ? -ECONNABORTED : -EINVAL;
		goto out;
	}
	rc = cm_settings(id, param, false);
	if (rc < 0)
		goto out;
	cm_qp_settings(id, qp);
	/* A rev 1 Request gets a rev 1 Reply: the 4 enhanced bytes are free. */
	r = iw_mpa_respond(&id->settings, &id->req, param ? param->private_data : NULL,
			   param ? param->private_data_len : 0, &reply, &id->outcome);
	if (cm_encode_out(id, &reply) < 0) {
		rc = -EINVAL;
		goto out;
	}
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
	} else if (cm_want(id, false, true) < 0) {
		cm_fail(id, -ENOMEM);
	}
	rc = 0;
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

static void cm_reject_done(struct iw_cm_id *id)
{
	cm_close_conn(id, IW_CONN_REJECTED);
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
	else if (cm_want(id, false, true) < 0)
		cm_fail(id, -ENOMEM);
	rc = 0;
out:
	iw_ctx_unlock(id->ctx);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Progress callbacks                                                  */

/* The id's connection may have progressed. */
static void cm_conn_ready(void *arg)
{
	struct iw_cm_id *id = arg;
	int rc;

	switch (id->state) {
	case CM_LISTEN:
		cm_on_accept(id);
		break;
	case CM_CONNECTING:
		cm_on_connecting(id);
		break;
	case CM_WAIT_REPLY:
		if (id->out_off < id->out_len) {
			rc = cm_flush_out(id);
			if (rc < 0) {
				cm_fail(id, rc);
				break;
			}
			if (rc == 1 && cm_want(id, true, false) < 0) {
				cm_fail(id, -ENOMEM);
				break;
			}
		}
		cm_on_reply_bytes(id);
		break;
	case CM_WAIT_REQUEST:
		(void)cm_read_request(id);
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
		cm_want(id, false, false); /* not expecting I/O: stop watching */
		break;
	}
}

static void cm_timer_cb(struct iw_timer *t)
{
	struct iw_cm_id *id = (struct iw_cm_id *)((char *)t - offsetof(struct iw_cm_id, timer));

	switch (id->state) {
	case CM_CONNECTING:
	case CM_WAIT_REPLY:
		cm_fail(id, -ETIMEDOUT);
		break;
	case CM_WAIT_REQUEST:
		if (cm_admit_deadline(id, iw_now_ms()))
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
