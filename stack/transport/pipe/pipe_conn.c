/* A network in memory: see pipe_conn.h. */
#include "pipe_conn.h"
#include "byte_ring.h"

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PN_BUF_DEFAULT (64u * 1024u)
#define PN_MSS_DEFAULT 1460u
#define PN_PULL_IOV 512 /* one FPDU with markers needs up to ~300 */
#define PN_RTR_MAX 64

struct pipe_conn;

struct iw_pipe_net {
	struct iw_conn_factory f; /* first: ctx->conn_factory */
	struct iw_context *ctx;
	struct iw_conn_factory *prev; /* restored at detach */
	struct iw_peek peek;
	struct iw_pipe_net_opts o;
	struct pipe_conn *conns; /* every open connection, listeners included */
	uint32_t pass;           /* readiness pass, see pn_run */
	uint16_t next_port;      /* local ports of connecting ends */
};

struct pipe_conn {
	struct iw_conn base;
	struct iw_pipe_net *net;
	struct pipe_conn *next;
	struct pipe_conn *peer; /* NULL: none, or it went away */
	struct sockaddr_storage local, remote;
	uint32_t pass;
	/* listener */
	bool listening;
	int backlog;
	struct pipe_conn *acceptq; /* linked through acc_next */
	struct pipe_conn *acc_next;
	int n_acc;
	/* active */
	bool connecting;
	int connect_err;
	/* bytes from the peer, in order */
	struct iw_ring in;
	size_t cap; /* what a sender may fill in (size has slack) */
	bool fin_in, rst_in; /* after the buffered bytes: the peer's FIN / a reset */
	bool rd, wr;         /* wanted readiness */
};

/* ------------------------------------------------------------------ */
/* Rings                                                               */

static size_t ring_room(const struct pipe_conn *dst)
{
	return dst->in.used < dst->cap ? dst->cap - dst->in.used : 0;
}

static struct pipe_conn *pc_of(struct iw_conn *c)
{
	return (struct pipe_conn *)((char *)c - offsetof(struct pipe_conn, base));
}

/* Someone may now be able to progress: a blocked progress call wakes up. */
static void pn_poke(struct iw_pipe_net *n)
{
	iw_ctx_wake(n->ctx);
}

/* Level-triggered readiness of c for what it wants. */
static bool pc_ready_now(const struct pipe_conn *c)
{
	if (!c->base.ready)
		return false;
	if (c->listening)
		return c->rd && c->acceptq;
	if (c->rd && (c->in.used || c->fin_in || c->rst_in))
		return true;
	if (c->wr && (c->connect_err || !c->peer || ring_room(c->peer)))
		return true;
	return false;
}

static bool pn_ready(struct iw_peek *p)
{
	struct iw_pipe_net *n = (struct iw_pipe_net *)((char *)p - offsetof(struct iw_pipe_net, peek));

	for (struct pipe_conn *c = n->conns; c; c = c->next)
		if (pc_ready_now(c))
			return true;
	return false;
}

/* Tell every ready connection once; callbacks may open and close
 * connections, so the list is rescanned after each. */
static void pn_run(struct iw_peek *p)
{
	struct iw_pipe_net *n = (struct iw_pipe_net *)((char *)p - offsetof(struct iw_pipe_net, peek));
	struct pipe_conn *c;

	n->pass++;
	do {
		for (c = n->conns; c; c = c->next)
			if (c->pass != n->pass && pc_ready_now(c))
				break;
		if (c) {
			c->pass = n->pass;
			c->base.ready(c->base.ready_arg);
		}
	} while (c);
}

/* ------------------------------------------------------------------ */
/* Connection ops                                                      */

static struct pipe_conn *pc_new(struct iw_pipe_net *n);

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)ss)->sin6_port)
					 : ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static void sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
}

static struct pipe_conn *pn_listener(struct iw_pipe_net *n, const struct sockaddr *sa)
{
	struct sockaddr_storage ss;

	sa_copy(&ss, sa);
	for (struct pipe_conn *c = n->conns; c; c = c->next)
		if (c->listening && c->local.ss_family == ss.ss_family && sa_port(&c->local) == sa_port(&ss))
			return c;
	return NULL;
}

static int pc_listen(struct iw_conn *c, const struct sockaddr *addr, int backlog)
{
	struct pipe_conn *p = pc_of(c);

	if (pn_listener(p->net, addr))
		return -EADDRINUSE;
	sa_copy(&p->local, addr);
	if (sa_port(&p->local) == 0)
		sa_set_port(&p->local, p->net->next_port++);
	p->listening = true;
	p->backlog = backlog;
	return 0;
}

static int pc_accept(struct iw_conn *l, struct iw_conn **out)
{
	struct pipe_conn *pl = pc_of(l);
	struct pipe_conn *c = pl->acceptq;

	if (!c)
		return -EAGAIN;
	pl->acceptq = c->acc_next;
	pl->n_acc--;
	c->acc_next = NULL;
	*out = &c->base;
	return 0;
}

static int pc_connect(struct iw_conn *c, const struct sockaddr *dst)
{
	struct pipe_conn *p = pc_of(c), *l, *s;

	sa_copy(&p->remote, dst);
	p->local = p->remote;
	sa_set_port(&p->local, p->net->next_port++);
	p->connecting = true;
	if (p->net->o.connect_hangs)
		return 0;
	l = pn_listener(p->net, dst);
	if (!l || l->n_acc >= l->backlog) {
		p->connect_err = -ECONNREFUSED;
		return 0;
	}
	s = pc_new(p->net);
	if (!s)
		return -ENOMEM;
	s->local = p->remote;
	s->remote = p->local;
	s->peer = p;
	p->peer = s;
	s->acc_next = l->acceptq;
	l->acceptq = s;
	l->n_acc++;
	p->connecting = false;
	pn_poke(p->net);
	return 0;
}

static int pc_connected(struct iw_conn *c)
{
	struct pipe_conn *p = pc_of(c);

	if (p->connect_err)
		return p->connect_err;
	return !p->connecting;
}

static ssize_t pc_send(struct iw_conn *c, const void *buf, size_t len)
{
	struct pipe_conn *p = pc_of(c);

	if (p->rst_in || !p->peer)
		return -ECONNRESET;
	size_t n = ring_room(p->peer) < len ? ring_room(p->peer) : len;
	iw_ring_put(&p->peer->in, buf, n);
	if (n)
		pn_poke(p->net);
	return (ssize_t)n;
}

static ssize_t pc_recv(struct iw_conn *c, void *buf, size_t len)
{
	struct pipe_conn *p = pc_of(c);
	size_t got = 0;

	while (got < len && p->in.used) {
		size_t k = iw_ring_chunk(&p->in);
		if (k > len - got)
			k = len - got;
		memcpy((uint8_t *)buf + got, p->in.buf + p->in.head, k);
		iw_ring_take(&p->in, k);
		got += k;
	}
	if (got) {
		pn_poke(p->net); /* room for the peer */
		return (ssize_t)got;
	}
	return p->rst_in || p->fin_in ? -ECONNRESET : 0;
}

static int pc_pending(struct iw_conn *c)
{
	struct pipe_conn *p = pc_of(c);

	if (p->in.used)
		return 1;
	return p->rst_in || p->fin_in ? -ECONNRESET : 0;
}

static int pc_want(struct iw_conn *c, bool rd, bool wr)
{
	struct pipe_conn *p = pc_of(c);

	p->rd = rd;
	p->wr = wr;
	if (pc_ready_now(p))
		pn_poke(p->net);
	return 0;
}

/* Our FIN (graceful) or a reset reaches the peer after what we sent. */
static void pc_shut_wr(struct pipe_conn *p, bool reset)
{
	struct pipe_conn *q = p->peer;

	if (!q)
		return;
	if (reset) {
		q->rst_in = true;
		q->peer = NULL;
		p->peer = NULL;
	} else {
		q->fin_in = true;
	}
	pn_poke(p->net);
}

static void pc_close(struct iw_conn *c, enum iw_conn_close how)
{
	struct pipe_conn *p = pc_of(c), **pp;

	while (p->acceptq) { /* never accepted: their peers see a reset */
		struct pipe_conn *a = p->acceptq;
		p->acceptq = a->acc_next;
		pc_close(&a->base, IW_CONN_ABORT);
	}
	pc_shut_wr(p, how == IW_CONN_ABORT);
	if (p->peer)
		p->peer->peer = NULL;
	for (pp = &p->net->conns; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p->in.buf);
	free(p);
}

static uint32_t pc_mulpdu(struct iw_conn *c, bool markers_tx, uint32_t max_ulpdu)
{
	return iw_stream_mulpdu(pc_of(c)->net->o.mss, markers_tx, max_ulpdu);
}

static int pc_dead_peer(struct iw_conn *c, uint32_t ms)
{
	(void)ms; /* memory does not die silently */
	return pc_of(c)->net->o.dead_peer_err;
}

static int pc_local_addr(struct iw_conn *c, struct sockaddr_storage *out)
{
	*out = pc_of(c)->local;
	return 0;
}

static int pc_peer_addr(struct iw_conn *c, struct sockaddr_storage *out)
{
	struct pipe_conn *p = pc_of(c);

	if (p->listening)
		return -ENOTCONN;
	*out = p->remote;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The FPDU stream over the rings                                      */

struct pipe_stream {
	struct iw_stream s; /* first */
	struct pipe_conn *pc;
	uint8_t rtr[PN_RTR_MAX];
	size_t rtr_len, rtr_off; /* the RTR, not yet all in the peer's ring */
};

static struct pipe_stream *ps_of(struct iw_stream *s)
{
	return (struct pipe_stream *)s;
}

/* Pull whole FPDUs while the peer's ring has room (a pull may overshoot
 * it by one FPDU: the ring has the slack). */
static void ps_tx(struct iw_stream *s)
{
	struct pipe_stream *t = ps_of(s);
	struct iw_rdmap_conn *c = iw_stream_conn(s);
	struct iovec iov[PN_PULL_IOV];

	while (!s->gated) {
		struct pipe_conn *q = t->pc->peer;
		if (!q || t->pc->rst_in) {
			iw_stream_finish(s, -ECONNRESET, true, true);
			return;
		}
		if (t->rtr_off < t->rtr_len) {
			size_t k = ring_room(q) < t->rtr_len - t->rtr_off ? ring_room(q) : t->rtr_len - t->rtr_off;
			iw_ring_put(&q->in, t->rtr + t->rtr_off, k);
			t->rtr_off += k;
			if (t->rtr_off < t->rtr_len)
				break;
			continue;
		}
		size_t room = ring_room(q), bytes = 0;
		if (!room)
			break;
		int n = iw_rdmap_tx_pull(c, iov, PN_PULL_IOV, room, &bytes);
		if (n <= 0 || !bytes)
			break;
		for (int i = 0; i < n; i++)
			iw_ring_put(&q->in, iov[i].iov_base, iov[i].iov_len);
		s->base.qp->stats.bytes_tx += bytes;
		iw_rdmap_tx_ack(c, bytes); /* may complete WRs */
		if (iw_stream_closed(s))
			return;
	}
	pn_poke(t->pc->net);
	t->pc->wr = iw_rdmap_tx_pending(c) || t->rtr_off < t->rtr_len;
}

static void ps_rx(struct iw_stream *s)
{
	struct pipe_stream *t = ps_of(s);
	struct pipe_conn *p = t->pc;
	struct iw_rdmap_conn *c = iw_stream_conn(s);

	if (s->state == IW_STREAM_INIT)
		return;
	while (p->in.used && !iw_stream_closed(s)) {
		size_t len = iw_ring_chunk(&p->in);
		size_t k = iw_rdmap_rx_feed(c, p->in.buf + p->in.head, len);
		s->base.qp->stats.bytes_rx += k;
		iw_stream_rx_seen(s);
		iw_ring_take(&p->in, k);
		if (k < len)
			iw_ring_drop(&p->in); /* a stopped stream drops the rest */
	}
	if (iw_stream_closed(s) || p->in.used)
		return;
	if (p->rst_in)
		iw_stream_finish(s, -ECONNRESET, true, true);
	else if (p->fin_in)
		iw_stream_finish(s, 0, true, false); /* peer FIN: answer with ours */
}

static bool ps_tx_idle(struct iw_stream *s)
{
	return ps_of(s)->rtr_off == ps_of(s)->rtr_len;
}

static void ps_shut_wr(struct iw_stream *s)
{
	pc_shut_wr(ps_of(s)->pc, false);
}

static int ps_queue_rtr(struct iw_stream *s, const struct iovec *iov, int n, size_t len)
{
	struct pipe_stream *t = ps_of(s);

	if (len > sizeof(t->rtr))
		return -EMSGSIZE;
	t->rtr_len = 0;
	for (int i = 0; i < n; i++) {
		memcpy(t->rtr + t->rtr_len, iov[i].iov_base, iov[i].iov_len);
		t->rtr_len += iov[i].iov_len;
	}
	t->rtr_off = 0;
	return 0;
}

static void ps_ready(void *arg)
{
	struct pipe_stream *t = arg;

	iw_stream_enter(&t->s);
	ps_rx(&t->s);
	iw_stream_tx(&t->s);
	iw_stream_leave(&t->s);
}

static int ps_open(struct iw_stream *s)
{
	struct pipe_stream *t = ps_of(s);

	t->pc->base.ready = ps_ready;
	t->pc->base.ready_arg = t;
	return pc_want(&t->pc->base, true, false);
}

static void ps_close(struct iw_stream *s, int err, bool abortive)
{
	struct pipe_stream *t = ps_of(s);

	(void)err;
	pc_close(&t->pc->base, abortive ? IW_CONN_ABORT : IW_CONN_GRACEFUL);
	t->pc = NULL;
}

static void ps_free(struct iw_stream *s)
{
	free(ps_of(s));
}

static const struct iw_stream_io pipe_io = {
	.tx = ps_tx, .rx = ps_rx, .tx_idle = ps_tx_idle, .shut_wr = ps_shut_wr, .queue_rtr = ps_queue_rtr,
	.open = ps_open, .close = ps_close, .free = ps_free,
};

static struct iw_transport *pc_to_transport(struct iw_conn *c, struct iw_qp *qp, const struct iw_stream_cfg *cfg)
{
	struct pipe_stream *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	iw_stream_init(&t->s, c->ctx, qp, &pipe_io, cfg);
	t->pc = pc_of(c);
	pc_want(c, false, false);
	c->ready = NULL; /* until started */
	return &t->s.base;
}

static const struct iw_conn_ops pc_ops = {
	.listen = pc_listen, .accept = pc_accept, .connect = pc_connect, .connected = pc_connected,
	.send = pc_send, .recv = pc_recv, .pending = pc_pending, .want = pc_want, .close = pc_close,
	.mulpdu = pc_mulpdu, .dead_peer = pc_dead_peer, .local_addr = pc_local_addr,
	.peer_addr = pc_peer_addr, .to_transport = pc_to_transport,
};

/* ------------------------------------------------------------------ */
/* The network                                                         */

static struct pipe_conn *pc_new(struct iw_pipe_net *n)
{
	struct pipe_conn *p = calloc(1, sizeof(*p));
	/* Slack behind the capacity: a pull may overshoot by one FPDU
	 * (markers: 4 bytes per 512). */
	size_t fpdu_max = IW_MPA_ULPDU_MAX + 16;
	size_t size = n->o.buf_bytes + fpdu_max + 4 * (fpdu_max / 508 + 3);

	if (!p)
		return NULL;
	p->in.buf = malloc(size);
	if (!p->in.buf) {
		free(p);
		return NULL;
	}
	p->in.size = size;
	p->cap = n->o.buf_bytes;
	p->base.ops = &pc_ops;
	p->base.ctx = n->ctx;
	p->net = n;
	p->next = n->conns;
	n->conns = p;
	return p;
}

static int pn_open(struct iw_conn_factory *f, struct iw_context *ctx, struct iw_conn **out)
{
	struct iw_pipe_net *n = (struct iw_pipe_net *)f;
	struct pipe_conn *p;

	(void)ctx;
	p = pc_new(n);
	if (!p)
		return -ENOMEM;
	*out = &p->base;
	return 0;
}

void iw_pipe_net_set_opts(struct iw_pipe_net *n, const struct iw_pipe_net_opts *o)
{
	static const struct iw_pipe_net_opts none = { 0 };

	iw_ctx_lock(n->ctx);
	n->o = o ? *o : none;
	if (!n->o.buf_bytes)
		n->o.buf_bytes = PN_BUF_DEFAULT;
	if (!n->o.mss)
		n->o.mss = PN_MSS_DEFAULT;
	iw_ctx_unlock(n->ctx);
}

int iw_pipe_net_attach(struct iw_context *ctx, const struct iw_pipe_net_opts *o, struct iw_pipe_net **out)
{
	struct iw_pipe_net *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->f.open = pn_open;
	n->ctx = ctx;
	n->next_port = 40000;
	n->peek.ready = pn_ready;
	n->peek.run = pn_run;
	iw_pipe_net_set_opts(n, o);
	iw_ctx_lock(ctx);
	n->prev = ctx->conn_factory;
	ctx->conn_factory = &n->f;
	iw_ctx_peek_add(ctx, &n->peek);
	iw_ctx_unlock(ctx);
	*out = n;
	return 0;
}

void iw_pipe_net_detach(struct iw_pipe_net *n)
{
	struct iw_context *ctx = n->ctx;

	iw_ctx_lock(ctx);
	while (n->conns) {
		pc_close(&n->conns->base, IW_CONN_ABORT);
	}
	iw_ctx_peek_del(ctx, &n->peek);
	ctx->conn_factory = n->prev;
	iw_ctx_unlock(ctx);
	free(n);
}
