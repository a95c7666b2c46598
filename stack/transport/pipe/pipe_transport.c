/* In-process transport between two QPs of one context: see
 * pipe_transport.h. Each end is an FPDU stream (stream.h), which owns
 * the states, graceful and abortive shutdown and re-entrancy; what is
 * the pipe's own is moving both directions in one pump. */
#include "pipe_transport.h"
#include "byte_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stack/transport/stream.h"

#define PULL_IOV 512 /* one FPDU with markers needs up to ~300 */
#define RX_IOV 64

struct pipe;

struct pipe_end {
	struct iw_stream s; /* first */
	struct pipe *pipe;
	int side;
};

struct pipe {
	struct pipe_end *end[2]; /* NULL once freed */
	struct iw_ring ring[2];  /* ring[i]: bytes from end i to end 1 - i */
	size_t cap;              /* pull while a ring holds less than this */
	size_t max_chunk;
	bool zerocopy;
	bool fin[2], rst[2]; /* end i sent, behind ring[i]'s bytes: its FIN, a reset */
	bool pumping, again;
};

static struct pipe_end *end_of(struct iw_stream *s)
{
	return (struct pipe_end *)s; /* s is the first member */
}

/* The end's engine may hand out FPDUs. */
static bool end_sending(const struct pipe_end *e)
{
	return e && (e->s.state == IW_STREAM_OPEN || e->s.state == IW_STREAM_DRAINING);
}

/* The end reads: started and not closed. */
static bool end_reading(const struct pipe_end *e)
{
	return e && e->s.state != IW_STREAM_INIT && !iw_stream_closed(&e->s);
}

/* Pull from src's engine into the ring while it has room. */
static bool pull(struct pipe *p, struct pipe_end *src, struct iw_ring *r)
{
	struct iw_qp *qp = src->s.base.qp;
	struct iovec iov[PULL_IOV];

	if (r->used >= p->cap)
		return false;
	size_t bytes = 0;
	int n = iw_rdmap_tx_pull(&qp->conn, iov, PULL_IOV, p->cap - r->used, &bytes);
	if (n <= 0)
		return false;
	for (int i = 0; i < n; i++)
		iw_ring_put(r, iov[i].iov_base, iov[i].iov_len);
	qp->stats.bytes_tx += bytes;
	qp->stats.tx_syscalls++;
	iw_rdmap_tx_ack(&qp->conn, bytes); /* may complete WRs */
	return true;
}

static size_t chunk_len(const struct pipe *p, const struct iw_ring *r)
{
	size_t n = iw_ring_chunk(r);
	if (p->max_chunk && n > p->max_chunk)
		n = p->max_chunk;
	return n;
}

/* Copy-mode delivery. */
static void feed(struct pipe *p, struct iw_qp *qp, struct iw_ring *r)
{
	while (r->used && iw_rdmap_running(&qp->conn)) {
		size_t len = chunk_len(p, r);
		size_t k = iw_rdmap_rx_feed(&qp->conn, r->buf + r->head, len);
		qp->stats.bytes_rx += k;
		qp->stats.rx_syscalls++;
		iw_ring_take(r, k);
		if (k < len)
			break;
	}
}

/* Zero-copy delivery: the engine says where the bytes go, like readv. */
static void feed_zerocopy(struct pipe *p, struct iw_qp *qp, struct iw_ring *r)
{
	struct iovec iov[RX_IOV];

	while (r->used && iw_rdmap_running(&qp->conn)) {
		int k = iw_rdmap_rx_prepare(&qp->conn, iov, RX_IOV);
		if (k <= 0)
			break;
		size_t want = p->max_chunk && p->max_chunk < r->used ? p->max_chunk : r->used, got = 0;
		for (int i = 0; i < k && got < want; i++) {
			size_t m = iov[i].iov_len < want - got ? iov[i].iov_len : want - got;
			size_t done = 0;
			while (done < m) {
				size_t c = chunk_len(p, r);
				if (c > m - done)
					c = m - done;
				memcpy((uint8_t *)iov[i].iov_base + done, r->buf + r->head, c);
				iw_ring_take(r, c);
				done += c;
			}
			got += m;
		}
		qp->stats.bytes_rx += got;
		qp->stats.rx_syscalls++;
		iw_rdmap_rx_commit(&qp->conn, got);
	}
}

/* Deliver what the ring holds to dst; a receiver that stopped or closed
 * reads no more: the rest is lost. A receiver not started yet keeps it. */
static void deliver(struct pipe *p, struct pipe_end *dst, struct iw_ring *r)
{
	struct iw_qp *qp = dst ? dst->s.base.qp : NULL;

	if (end_reading(dst) && iw_rdmap_running(&qp->conn)) {
		if (p->zerocopy)
			feed_zerocopy(p, qp, r);
		else
			feed(p, qp, r);
	}
	if (r->used && (!dst || iw_stream_closed(&dst->s) || (end_reading(dst) && !iw_rdmap_running(&qp->conn))))
		iw_ring_drop(r);
}

/* One direction: pull, deliver, end dst's stream behind src's FIN or
 * reset. */
static bool move(struct pipe *p, int i)
{
	struct pipe_end *src = p->end[i], *dst = p->end[1 - i];
	struct iw_ring *r = &p->ring[i];
	bool moved = false;

	if (end_sending(src))
		moved |= pull(p, src, r);
	if (r->used) {
		deliver(p, dst, r);
		moved = true;
	}
	if (!r->used && end_reading(dst) && (p->fin[i] || p->rst[i])) {
		bool rst = p->rst[i];
		iw_stream_finish(&dst->s, rst ? -ECONNRESET : 0, true, rst); /* FIN: answer with ours */
		moved = true;
	}
	return moved;
}

/* Work is requeued through a QP's deferred list rather than looped
 * here, so one progress call serves many pipes fairly. */
static void requeue(struct pipe *p)
{
	for (int i = 0; i < 2; i++) {
		if (end_sending(p->end[i])) {
			iw_qp_defer(p->end[i]->s.base.qp, IW_QPW_KICK);
			return;
		}
	}
}

/* One round: at most one ring's worth pulled per direction, everything
 * buffered delivered. */
static void pump(struct pipe *p)
{
	if (p->pumping) {
		p->again = true;
		return;
	}
	p->pumping = true;
	bool m0 = move(p, 0);
	bool m1 = move(p, 1);
	p->pumping = false;
	if (m0 || m1 || p->again) {
		p->again = false;
		requeue(p);
	}
}

static void pe_pump(struct iw_stream *s)
{
	pump(end_of(s)->pipe);
}

/* Nothing is held back: what is pulled goes straight into the ring. */
static bool pe_tx_idle(struct iw_stream *s)
{
	(void)s;
	return true;
}

static void pe_shut_wr(struct iw_stream *s)
{
	struct pipe_end *e = end_of(s);

	e->pipe->fin[e->side] = true;
	pump(e->pipe);
}

/* No CM: no RTR. */
static int pe_queue_rtr(struct iw_stream *s, const struct iovec *iov, int n, size_t len)
{
	(void)s, (void)iov, (void)n, (void)len;
	return -EOPNOTSUPP;
}

static int pe_open(struct iw_stream *s)
{
	(void)s;
	return 0;
}

/* Abortive: both directions are dropped, the peer sees a reset. */
static void pe_close(struct iw_stream *s, int err, bool abortive)
{
	struct pipe_end *e = end_of(s);
	struct pipe *p = e->pipe;

	(void)err;
	if (abortive) {
		p->rst[e->side] = true;
		iw_ring_drop(&p->ring[e->side]);
		iw_ring_drop(&p->ring[1 - e->side]);
	} else {
		p->fin[e->side] = true;
	}
	pump(p);
}

static void pipe_free(struct pipe *p)
{
	free(p->ring[0].buf);
	free(p->ring[1].buf);
	free(p);
}

/* The pair's memory goes with the second end. */
static void pe_free(struct iw_stream *s)
{
	struct pipe_end *e = end_of(s);
	struct pipe *p = e->pipe;

	p->end[e->side] = NULL;
	free(e);
	if (!p->end[0] && !p->end[1])
		pipe_free(p);
}

static const struct iw_stream_io pipe_io = {
	.tx = pe_pump, .rx = pe_pump, .tx_idle = pe_tx_idle, .shut_wr = pe_shut_wr, .queue_rtr = pe_queue_rtr,
	.open = pe_open, .close = pe_close, .free = pe_free,
	.kick_deferred = true, /* a pump runs the peer's receive path: never inside a post */
};

static struct pipe *pipe_new(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p,
			     const struct iw_pipe_opts *opts)
{
	struct pipe *pp = calloc(1, sizeof(*pp));
	struct iw_qp *qp[2] = { a, b };
	struct iw_stream_cfg none = { 0 };

	if (!pp)
		return NULL;
	pp->cap = opts && opts->buf_bytes ? opts->buf_bytes : IW_PIPE_BUF_DEFAULT;
	pp->max_chunk = opts ? opts->max_chunk : 0;
	pp->zerocopy = opts && opts->zerocopy;
	/* A pull may overshoot the room it was given by one FPDU (markers:
	 * 4 bytes per 512). */
	size_t fpdu_max = (size_t)p->mulpdu + 16;
	size_t size = pp->cap + fpdu_max + 4 * (fpdu_max / 508 + 3);
	for (int i = 0; i < 2; i++) {
		pp->ring[i].buf = malloc(size);
		pp->ring[i].size = size;
		pp->end[i] = calloc(1, sizeof(*pp->end[i]));
		if (!pp->ring[i].buf || !pp->end[i])
			continue;
		iw_stream_init(&pp->end[i]->s, a->ctx, qp[i], &pipe_io, &none);
		pp->end[i]->pipe = pp;
		pp->end[i]->side = i;
	}
	if (!pp->ring[0].buf || !pp->ring[1].buf || !pp->end[0] || !pp->end[1]) {
		free(pp->end[0]);
		free(pp->end[1]);
		pipe_free(pp);
		return NULL;
	}
	return pp;
}

int iw_pipe_connect_opts(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p,
			 const struct iw_pipe_opts *opts)
{
	if (!a || !b || a == b || !p || a->ctx != b->ctx)
		return -EINVAL;
	struct iw_context *ctx = a->ctx;
	struct pipe *pp = pipe_new(a, b, p, opts);
	if (!pp)
		return -ENOMEM;
	struct iw_transport *ta = &pp->end[0]->s.base, *tb = &pp->end[1]->s.base;

	/* b sees the mirror of a's view. */
	struct iw_qp_conn_params pb = *p;
	pb.markers_tx = p->markers_rx;
	pb.markers_rx = p->markers_tx;
	pb.ird = p->ord;
	pb.ord = p->ird;

	iw_ctx_lock(ctx);
	int rc = -EINVAL;
	if (!iw_qp_idle(a) || !iw_qp_idle(b))
		goto fail;
	if ((rc = iw_qp_connect_start(a, p, ta)) < 0)
		goto fail;
	(void)ta->ops->start(ta); /* cannot fail: no RTR, nothing to watch */
	if ((rc = iw_qp_connect_start(b, &pb, tb)) < 0) {
		/* a is connected to nothing: it sees a reset; the pair is freed
		 * when a's end is destroyed. */
		tb->ops->destroy(tb);
		iw_ctx_unlock(ctx);
		return rc;
	}
	(void)tb->ops->start(tb);
	iw_ctx_unlock(ctx);
	return 0;
fail:
	ta->ops->destroy(ta);
	tb->ops->destroy(tb);
	iw_ctx_unlock(ctx);
	return rc;
}

int iw_pipe_connect(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p)
{
	return iw_pipe_connect_opts(a, b, p, NULL);
}
