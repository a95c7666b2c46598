/* Connections over kernel sockets (struct iw_conn, transport.h): a
 * non-blocking TCP socket on the context's epoll set while the CM runs
 * the MPA exchange, then handed to the kernel-TCP transport. The exchange
 * is traced like the stream that follows (one trace connection). */
#include "tcp_transport.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct tcp_conn {
	struct iw_conn base;
	struct iw_watch watch; /* fd -1: no socket yet */
	bool watching;
	uint32_t revents;      /* of the last wake-up (connect completion) */
	int connect_err;       /* connect() failed at once */
	struct sockaddr_storage src; /* bind_src: ss_family 0 when none */
	uint32_t trace_conn;
};

static struct tcp_conn *tc_of(struct iw_conn *c)
{
	return (struct tcp_conn *)((char *)c - offsetof(struct tcp_conn, base));
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int tc_set_int(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v)) < 0 ? -errno : 0;
}

/* Close with a reset instead of a FIN. */
static void tc_close_rst(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	/* Without SO_LINGER the close still ends the connection (FIN): the
	 * peer learns of it either way. */
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static void tc_watch_cb(struct iw_watch *w, uint32_t revents)
{
	struct tcp_conn *t = (struct tcp_conn *)((char *)w - offsetof(struct tcp_conn, watch));

	t->revents = revents;
	t->base.ready(t->base.ready_arg); /* may close t */
}

static void tc_unwatch(struct tcp_conn *t)
{
	if (t->watching)
		iw_ctx_watch_del(t->base.ctx, &t->watch);
	t->watching = false;
}

static struct tcp_conn *tc_new(struct iw_context *ctx, int fd);

static int tc_socket(struct tcp_conn *t, int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	t->watch.fd = fd;
	return 0;
}

static int tc_listen(struct iw_conn *c, const struct sockaddr *addr, int backlog)
{
	struct tcp_conn *t = tc_of(c);
	int rc = tc_socket(t, addr->sa_family);

	if (rc < 0)
		return rc;
	if ((rc = tc_set_int(t->watch.fd, SOL_SOCKET, SO_REUSEADDR, 1)) < 0)
		goto fail;
	if (bind(t->watch.fd, addr, sa_len(addr)) < 0 || listen(t->watch.fd, backlog) < 0) {
		rc = -errno;
		goto fail;
	}
	return 0;
fail:
	close(t->watch.fd);
	t->watch.fd = -1;
	return rc;
}

static int tc_accept(struct iw_conn *l, struct iw_conn **out)
{
	struct tcp_conn *tl = tc_of(l);

	for (;;) {
		int fd = accept4(tl->watch.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return -EAGAIN; /* EAGAIN, or out of fds: try again on the next wakeup */
		}
		/* Small handshake frames and FPDUs go out at once. */
		if (tc_set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1) < 0) {
			tc_close_rst(fd);
			continue;
		}
		struct tcp_conn *t = tc_new(l->ctx, fd);
		if (!t) {
			tc_close_rst(fd);
			continue;
		}
		struct sockaddr_storage lo, pe;
		if (l->ops->local_addr(&t->base, &lo) == 0 && l->ops->peer_addr(&t->base, &pe) == 0)
			t->trace_conn = iw_trace_conn_open(l->ctx, (struct sockaddr *)&lo, (struct sockaddr *)&pe, false);
		*out = &t->base;
		return 0;
	}
}

static int tc_connect(struct iw_conn *c, const struct sockaddr *dst)
{
	struct tcp_conn *t = tc_of(c);
	int rc = tc_socket(t, dst->sa_family);

	if (rc < 0)
		return rc;
	if ((rc = tc_set_int(t->watch.fd, IPPROTO_TCP, TCP_NODELAY, 1)) < 0) {
		close(t->watch.fd);
		t->watch.fd = -1;
		return rc;
	}
	if (t->src.ss_family && bind(t->watch.fd, (struct sockaddr *)&t->src, sa_len((struct sockaddr *)&t->src)) < 0) {
		rc = -errno; /* not ours, or the port is taken: refused at once */
		close(t->watch.fd);
		t->watch.fd = -1;
		return rc;
	}
	if (connect(t->watch.fd, dst, sa_len(dst)) == 0)
		t->revents = EPOLLOUT;
	else if (errno != EINPROGRESS && errno != EINTR)
		t->connect_err = -errno; /* reported by connected(), like a late failure */
	return 0;
}

static int tc_bind_src(struct iw_conn *c, const struct sockaddr *src)
{
	struct tcp_conn *t = tc_of(c);

	if (src->sa_family != AF_INET && src->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(&t->src, 0, sizeof(t->src));
	memcpy(&t->src, src, sa_len(src));
	return 0;
}

static int tc_connected(struct iw_conn *c)
{
	struct tcp_conn *t = tc_of(c);
	int err = 0;
	socklen_t len = sizeof(err);

	if (t->connect_err)
		return t->connect_err;
	if (getsockopt(t->watch.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err)
		return -err;
	if (!(t->revents & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		return 0;
	if (!t->trace_conn) {
		struct sockaddr_storage lo, pe;
		if (c->ops->local_addr(c, &lo) == 0 && c->ops->peer_addr(c, &pe) == 0)
			t->trace_conn = iw_trace_conn_open(c->ctx, (struct sockaddr *)&lo, (struct sockaddr *)&pe, true);
	}
	return 1;
}

static ssize_t tc_send(struct iw_conn *c, const void *buf, size_t len)
{
	struct tcp_conn *t = tc_of(c);
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(t->watch.fd, (const uint8_t *)buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		struct iovec v = { (uint8_t *)buf + off, (size_t)n };
		iw_trace_data(c->ctx, t->trace_conn, true, &v, 1, (size_t)n);
		off += (size_t)n;
	}
	return (ssize_t)off;
}

static ssize_t tc_recv(struct iw_conn *c, void *buf, size_t len)
{
	struct tcp_conn *t = tc_of(c);

	for (;;) {
		ssize_t n = recv(t->watch.fd, buf, len, MSG_DONTWAIT);
		if (n > 0) {
			struct iovec v = { buf, (size_t)n };
			iw_trace_data(c->ctx, t->trace_conn, false, &v, 1, (size_t)n);
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

static int tc_pending(struct iw_conn *c)
{
	uint8_t b;
	ssize_t n = recv(tc_of(c)->watch.fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (n > 0)
		return 1;
	if (n == 0)
		return -ECONNRESET;
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -errno;
	return 0;
}

static int tc_want(struct iw_conn *c, bool rd, bool wr)
{
	struct tcp_conn *t = tc_of(c);
	uint32_t ev = (rd ? EPOLLIN : 0u) | (wr ? EPOLLOUT : 0u);
	int rc = 0;

	if (!ev) {
		tc_unwatch(t);
	} else if (!t->watching) {
		rc = iw_ctx_watch_add(c->ctx, &t->watch, ev);
		t->watching = rc == 0;
	} else if (t->watch.events != ev) {
		rc = iw_ctx_watch_mod(c->ctx, &t->watch, ev);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Rejected connections                                                */

/* A rejected connection's socket, kept open after the reject frame until
 * the initiator closes it (or TC_REJECT_LINGER_MS pass): a Linux siw
 * initiator loses the reject's private data when our FIN follows the
 * frame at once (seen about 1 in 4). Owned by the context, so the CM id
 * can go away meanwhile. */
#define TC_REJECT_LINGER_MS 1000
/* At most this many at once per context: a peer that floods connections
 * the application rejects and never closes them must not pin sockets
 * (beyond this, the FIN follows the reject frame at once). */
#define TC_MAX_LINGERS 64
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

void iw_tcp_lingers_free(struct iw_context *ctx)
{
	while (ctx->lingers)
		linger_close(ctx->lingers);
}

static uint32_t n_lingers(const struct iw_context *ctx)
{
	uint32_t n = 0;

	for (const struct iw_cm_linger *l = ctx->lingers; l && n < TC_MAX_LINGERS; l = l->next)
		n++;
	return n;
}

/* Hand the socket to a linger: true when it took it. */
static bool tc_linger(struct tcp_conn *t)
{
	struct iw_context *ctx = t->base.ctx;
	struct iw_cm_linger *l = n_lingers(ctx) < TC_MAX_LINGERS ? calloc(1, sizeof(*l)) : NULL;

	if (!l)
		return false;
	l->ctx = ctx;
	l->watch.fd = t->watch.fd;
	l->watch.cb = linger_watch_cb;
	l->timer.cb = linger_timer_cb;
	l->trace_conn = t->trace_conn;
	if (iw_ctx_watch_add(ctx, &l->watch, EPOLLIN) < 0) {
		free(l);
		return false;
	}
	l->next = ctx->lingers;
	ctx->lingers = l;
	iw_ctx_timer_arm(ctx, &l->timer, TC_REJECT_LINGER_MS);
	t->watch.fd = -1;
	t->trace_conn = 0;
	return true;
}

static void tc_close(struct iw_conn *c, enum iw_conn_close how)
{
	struct tcp_conn *t = tc_of(c);

	tc_unwatch(t);
	/* Without a linger (no memory, or too many): FIN right behind the frame. */
	if (how == IW_CONN_REJECTED && t->watch.fd >= 0)
		(void)tc_linger(t);
	if (t->watch.fd >= 0) {
		if (how == IW_CONN_ABORT)
			tc_close_rst(t->watch.fd);
		else
			close(t->watch.fd);
	}
	iw_trace_conn_close(c->ctx, t->trace_conn, how == IW_CONN_ABORT);
	free(t);
}

static uint32_t tc_mulpdu(struct iw_conn *c, bool markers_tx, uint32_t max_ulpdu)
{
	return iw_tcp_mulpdu(tc_of(c)->watch.fd, markers_tx, max_ulpdu);
}

static int tc_dead_peer(struct iw_conn *c, uint32_t ms)
{
	struct iw_dead_peer d = iw_dead_peer_rule(ms);
	int fd = tc_of(c)->watch.fd;
	int secs = (int)(d.keepalive_ms / 1000u), rc;
	unsigned ut = ms;

	/* TCP_USER_TIMEOUT bounds unacknowledged data; keepalive (whole
	 * seconds) probes a silent peer. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut)) < 0)
		return -errno;
	if ((rc = tc_set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1)) < 0 ||
	    (rc = tc_set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, secs)) < 0 ||
	    (rc = tc_set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, secs)) < 0 ||
	    (rc = tc_set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, (int)d.probes)) < 0)
		return rc;
	return 0;
}

static int tc_local_addr(struct iw_conn *c, struct sockaddr_storage *out)
{
	socklen_t len = sizeof(*out);

	return getsockname(tc_of(c)->watch.fd, (struct sockaddr *)out, &len) < 0 ? -errno : 0;
}

static int tc_peer_addr(struct iw_conn *c, struct sockaddr_storage *out)
{
	socklen_t len = sizeof(*out);

	return getpeername(tc_of(c)->watch.fd, (struct sockaddr *)out, &len) < 0 ? -errno : 0;
}

static struct iw_transport *tc_to_transport(struct iw_conn *c, struct iw_qp *qp, const struct iw_stream_cfg *cfg)
{
	struct tcp_conn *t = tc_of(c);
	struct iw_tcp_cfg tcfg = { .fd = t->watch.fd, .trace_conn = t->trace_conn, .stream = *cfg };

	tc_unwatch(t);
	struct iw_transport *tr = iw_tcp_transport_create(c->ctx, qp, &tcfg);
	if (tr)
		free(t); /* the socket and its trace are the transport's now */
	return tr;
}

static const struct iw_conn_ops tc_ops = {
	.listen = tc_listen, .accept = tc_accept, .connect = tc_connect, .connected = tc_connected,
	.bind_src = tc_bind_src,
	.send = tc_send, .recv = tc_recv, .pending = tc_pending, .want = tc_want, .close = tc_close,
	.mulpdu = tc_mulpdu, .dead_peer = tc_dead_peer, .local_addr = tc_local_addr,
	.peer_addr = tc_peer_addr, .to_transport = tc_to_transport,
};

static struct tcp_conn *tc_new(struct iw_context *ctx, int fd)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->base.ops = &tc_ops;
	t->base.ctx = ctx;
	t->watch.fd = fd;
	t->watch.cb = tc_watch_cb;
	return t;
}

static int tc_open(struct iw_conn_factory *f, struct iw_context *ctx, struct iw_conn **out)
{
	(void)f;
	struct tcp_conn *t = tc_new(ctx, -1);

	if (!t)
		return -ENOMEM;
	*out = &t->base;
	return 0;
}

struct iw_conn_factory iw_tcp_conn_factory = { .open = tc_open };
