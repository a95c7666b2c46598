/* Connections over our TCP on the context's raw device (struct iw_conn,
 * transport.h): IPv4 on-link peers, listeners on a port of our address
 * (a fixed one, or one of the dynamic range for port 0). Every pass of
 * the device (frames in, timers run) tells a connection that waits for
 * I/O; it has no finer readiness. Handed to the raw transport once the
 * MPA exchange succeeded. */
#include "raw_transport.h"

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct raw_conn {
	struct iw_conn base;
	struct iw_rawdev *dev;
	struct iwn_tcp_conn *c; /* NULL: none yet, or a listener */
	uint16_t lport;         /* listener: the port on our address */
	uint16_t src_port;      /* bind_src's port for connect (0: any) */
	struct iw_rawdev_user user;
	bool user_on;
};

static struct raw_conn *rc_of(struct iw_conn *c)
{
	return (struct raw_conn *)((char *)c - offsetof(struct raw_conn, base));
}

static void rc_sa(struct sockaddr_storage *ss, uint32_t ip, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(ip);
	sin->sin_port = htons(port);
}

static struct raw_conn *rc_new(struct iw_context *ctx);
static const struct iw_conn_ops rc_ops;

static int rc_listen(struct iw_conn *c, const struct sockaddr *addr, int backlog)
{
	struct raw_conn *r = rc_of(c);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;

	if (addr->sa_family != AF_INET)
		return -EAFNOSUPPORT;
	uint32_t ip = ntohl(sin->sin_addr.s_addr);
	if (ip != 0 && ip != r->dev->net.cfg.ip)
		return -EADDRNOTAVAIL;
	uint16_t port = ntohs(sin->sin_port);
	/* Port 0: one of the dynamic range, as a kernel socket's bind. */
	int rc = port ? iwn_net_listen(&r->dev->net, port, (uint32_t)backlog)
		      : iwn_net_listen_ephemeral(&r->dev->net, (uint32_t)backlog, &port);
	if (rc < 0)
		return rc;
	r->lport = port;
	return 0;
}

static int rc_accept(struct iw_conn *l, struct iw_conn **out)
{
	struct raw_conn *rl = rc_of(l);
	struct iwn_tcp_conn *tc;

	while ((tc = iwn_net_accept(&rl->dev->net, rl->lport)) != NULL) {
		struct raw_conn *r = rc_new(l->ctx);
		if (!r) {
			iwn_net_release(&rl->dev->net, tc, iw_rawdev_now_us()); /* reset */
			iw_rawdev_flush(rl->dev);
			continue;
		}
		r->c = tc;
		*out = &r->base;
		return 0;
	}
	return -EAGAIN;
}

static int rc_connect(struct iw_conn *c, const struct sockaddr *dst)
{
	struct raw_conn *r = rc_of(c);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)dst;
	int rc;

	if (dst->sa_family != AF_INET)
		return -EAFNOSUPPORT;
	uint32_t ra = ntohl(sin->sin_addr.s_addr);
	if (!iw_rawdev_on_link(r->dev, ra))
		return -ENETUNREACH;
	r->c = iwn_net_connect(&r->dev->net, ra, ntohs(sin->sin_port), r->src_port, iw_rawdev_now_us(), &rc);
	if (!r->c)
		return rc;
	iw_rawdev_flush(r->dev);
	return 0;
}

/* Our one address (or the wildcard), any port or a free one. */
static int rc_bind_src(struct iw_conn *c, const struct sockaddr *src)
{
	struct raw_conn *r = rc_of(c);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)src;

	if (src->sa_family != AF_INET)
		return -EAFNOSUPPORT;
	uint32_t ip = ntohl(sin->sin_addr.s_addr);
	if (ip != 0 && ip != r->dev->net.cfg.ip)
		return -EADDRNOTAVAIL;
	r->src_port = ntohs(sin->sin_port);
	return 0;
}

static int rc_connected(struct iw_conn *c)
{
	struct iwn_tcp_conn *tc = rc_of(c)->c;

	if (tc->state == IWN_TCP_CLOSED)
		return tc->err ? tc->err : -ECONNREFUSED;
	return tc->state != IWN_TCP_SYN_SENT;
}

static ssize_t rc_send(struct iw_conn *c, const void *buf, size_t len)
{
	struct raw_conn *r = rc_of(c);
	size_t off = 0;
	int n = 0;

	while (off < len) {
		n = iwn_tcp_send(r->c, (const uint8_t *)buf + off, (uint32_t)(len - off), iw_rawdev_now_us());
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	iw_rawdev_flush(r->dev);
	if (n < 0)
		return n == -EPIPE ? -ECONNRESET : n;
	return (ssize_t)off;
}

static ssize_t rc_recv(struct iw_conn *c, void *buf, size_t len)
{
	struct iwn_tcp_conn *tc = rc_of(c)->c;
	uint32_t k = iwn_tcp_recv(tc, buf, (uint32_t)len, iw_rawdev_now_us());

	if (k)
		return (ssize_t)k;
	if (iwn_tcp_eof(tc))
		return -ECONNRESET;
	if (tc->state == IWN_TCP_CLOSED)
		return tc->err ? tc->err : -ECONNRESET;
	return 0;
}

static int rc_pending(struct iw_conn *c)
{
	struct iwn_tcp_conn *tc = rc_of(c)->c;

	if (iwn_tcp_readable(tc))
		return 1;
	if (iwn_tcp_eof(tc) || tc->state == IWN_TCP_CLOSED)
		return -ECONNRESET;
	return 0;
}

static void rc_user_cb(struct iw_rawdev_user *u)
{
	struct raw_conn *r = (struct raw_conn *)((char *)u - offsetof(struct raw_conn, user));

	r->base.ready(r->base.ready_arg); /* may close r */
}

static int rc_want(struct iw_conn *c, bool rd, bool wr)
{
	struct raw_conn *r = rc_of(c);

	if ((rd || wr) && !r->user_on) {
		iw_rawdev_user_add(r->dev, &r->user);
		r->user_on = true;
	} else if (!rd && !wr && r->user_on) {
		iw_rawdev_user_del(r->dev, &r->user);
		r->user_on = false;
	}
	return 0;
}

static void rc_close(struct iw_conn *c, enum iw_conn_close how)
{
	struct raw_conn *r = rc_of(c);
	uint64_t now = iw_rawdev_now_us();

	rc_want(c, false, false);
	if (r->c) {
		/* A rejected connection lingers by itself: released, it sends
		 * its FIN after the frame and stays until closed. */
		if (how == IW_CONN_ABORT)
			iwn_tcp_abort(r->c, now);
		else
			iwn_tcp_close(r->c, now);
		iwn_net_release(&r->dev->net, r->c, now);
		iw_rawdev_flush(r->dev);
	}
	if (r->lport)
		iwn_net_unlisten(&r->dev->net, r->lport, now);
	free(r);
}

static uint32_t rc_mulpdu(struct iw_conn *c, bool markers_tx, uint32_t max_ulpdu)
{
	return iw_raw_mulpdu(rc_of(c)->c, markers_tx, max_ulpdu);
}

static int rc_dead_peer(struct iw_conn *c, uint32_t ms)
{
	struct iwn_tcp_conn *tc = rc_of(c)->c;
	struct iw_dead_peer d = iw_dead_peer_rule(ms);

	tc->cfg.user_timeout_us = (uint64_t)ms * 1000u;
	tc->cfg.keepalive_us = (uint64_t)d.keepalive_ms * 1000u;
	tc->cfg.keepalive_probes = d.probes;
	return 0;
}

static int rc_local_addr(struct iw_conn *c, struct sockaddr_storage *out)
{
	struct raw_conn *r = rc_of(c);

	if (r->c)
		rc_sa(out, r->c->laddr, r->c->lport);
	else
		rc_sa(out, r->dev->net.cfg.ip, r->lport);
	return 0;
}

static int rc_peer_addr(struct iw_conn *c, struct sockaddr_storage *out)
{
	struct raw_conn *r = rc_of(c);

	if (!r->c)
		return -ENOTCONN;
	rc_sa(out, r->c->raddr, r->c->rport);
	return 0;
}

static struct iw_transport *rc_to_transport(struct iw_conn *c, struct iw_qp *qp, const struct iw_stream_cfg *cfg)
{
	struct raw_conn *r = rc_of(c);
	struct iw_raw_tcfg tc = { .dev = r->dev, .conn = r->c, .tx_gate = cfg->tx_gate,
				  .tx_delay_ms = cfg->tx_delay_ms, .send_rtr = cfg->send_rtr, .cm_id = cfg->cm_id };
	struct iw_transport *t;

	rc_want(c, false, false);
	if ((t = iw_raw_transport_create(c->ctx, qp, &tc)) != NULL)
		free(r); /* the TCP connection is the transport's now */
	return t;
}

static struct raw_conn *rc_new(struct iw_context *ctx)
{
	struct raw_conn *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->base.ops = &rc_ops;
	r->base.ctx = ctx;
	r->dev = ctx->raw;
	r->user.cb = rc_user_cb;
	return r;
}

static int rc_open(struct iw_conn_factory *f, struct iw_context *ctx, struct iw_conn **out)
{
	(void)f;
	struct raw_conn *r = rc_new(ctx);

	if (!r)
		return -ENOMEM;
	*out = &r->base;
	return 0;
}

struct iw_conn_factory iw_raw_conn_factory = { .open = rc_open };

static const struct iw_conn_ops rc_ops = {
	.listen = rc_listen, .accept = rc_accept, .connect = rc_connect, .connected = rc_connected,
	.bind_src = rc_bind_src,
	.send = rc_send, .recv = rc_recv, .pending = rc_pending, .want = rc_want, .close = rc_close,
	.mulpdu = rc_mulpdu, .dead_peer = rc_dead_peer, .local_addr = rc_local_addr,
	.peer_addr = rc_peer_addr, .to_transport = rc_to_transport,
};
