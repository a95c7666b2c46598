/* In-process transport between two QPs of one context: see
 * pipe_transport.h. */
#include "pipe_transport.h"
#include "byte_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PULL_IOV 512 /* one FPDU with markers needs up to ~300 */
#define RX_IOV 64


struct pipe;

struct pipe_end {
	struct iw_transport t; /* t.qp: the QP, NULL once destroyed */
	struct pipe *pipe;
	int side;
	bool shut, rst, destroyed;
	bool closed_seen; /* iw_qp_transport_closed delivered */
};

struct pipe {
	struct pipe_end end[2];
	struct iw_ring ring[2]; /* ring[i]: bytes from end i to end 1 - i */
	size_t cap;          /* pull while a ring holds less than this */
	size_t max_chunk;
	bool zerocopy;
	bool pumping, again;
};

static struct pipe_end *end_of(struct iw_transport *t)
{
	return (struct pipe_end *)t; /* t is the first member */
}

static bool end_open(const struct pipe_end *e)
{
	return e->t.qp && !e->shut && !e->destroyed;
}

/* Pull from src's engine into the ring while it has room. */
static bool pull(struct pipe *p, struct pipe_end *src, struct iw_ring *r)
{
	struct iw_qp *qp = src->t.qp;
	struct iovec iov[PULL_IOV];
	bool moved = false;

	if (r->used < p->cap) {
		size_t bytes = 0;
		int n = iw_rdmap_tx_pull(&qp->conn, iov, PULL_IOV, p->cap - r->used, &bytes);
		if (n <= 0)
			return false;
		for (int i = 0; i < n; i++)
			iw_ring_put(r, iov[i].iov_base, iov[i].iov_len);
		qp->stats.bytes_tx += bytes;
		qp->stats.tx_syscalls++;
		iw_rdmap_tx_ack(&qp->conn, bytes); /* may complete WRs */
		moved = true;
	}
	return moved;
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
	while (r->used && qp->conn.state == IW_RDMAP_ST_RTS) {
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

	while (r->used && qp->conn.state == IW_RDMAP_ST_RTS) {
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

/* One direction: pull, deliver, report the end of the stream. */
static bool move(struct pipe *p, int i)
{
	struct pipe_end *src = &p->end[i], *dst = &p->end[1 - i];
	struct iw_ring *r = &p->ring[i];
	bool moved = false;

	if (end_open(src))
		moved |= pull(p, src, r);
	if (r->used) {
		struct iw_qp *qp = dst->t.qp;
		if (end_open(dst) && qp->conn.state == IW_RDMAP_ST_RTS) {
			if (p->zerocopy)
				feed_zerocopy(p, qp, r);
			else
				feed(p, qp, r);
		}
		/* A stopped or closed receiver reads no more: the rest is lost. */
		if (r->used && (!end_open(dst) || dst->t.qp->conn.state != IW_RDMAP_ST_RTS))
			iw_ring_drop(r);
		moved = true;
	}
	if (!end_open(src) && !r->used && end_open(dst) && !dst->closed_seen) {
		dst->closed_seen = true;
		iw_qp_transport_closed(dst->t.qp, src->rst ? -ECONNRESET : 0);
		moved = true;
	}
	return moved;
}

/* Work is requeued through a QP's deferred list rather than looped
 * here, so one progress call serves many pipes fairly. */
static void requeue(struct pipe *p)
{
	for (int i = 0; i < 2; i++) {
		if (end_open(&p->end[i])) {
			iw_qp_defer(p->end[i].t.qp, IW_QPW_KICK);
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

static void pipe_kick(struct iw_transport *t)
{
	pump(end_of(t)->pipe);
}

static void pipe_shutdown(struct iw_transport *t, bool abortive)
{
	struct pipe_end *e = end_of(t);
	struct pipe *p = e->pipe;
	if (e->shut)
		return;
	e->shut = true;
	e->rst = abortive;
	if (abortive) {
		iw_ring_drop(&p->ring[e->side]);
		iw_ring_drop(&p->ring[1 - e->side]);
	}
	pump(p);
}

static void pipe_free(struct pipe *p)
{
	free(p->ring[0].buf);
	free(p->ring[1].buf);
	free(p);
}

static void pipe_destroy(struct iw_transport *t)
{
	struct pipe_end *e = end_of(t);
	struct pipe *p = e->pipe;
	if (!e->shut) {
		e->shut = true;
		e->rst = true; /* like close() with unread data: a reset */
		iw_ring_drop(&p->ring[e->side]);
		iw_ring_drop(&p->ring[1 - e->side]);
	}
	e->destroyed = true;
	e->t.qp = NULL;
	pump(p);
	if (p->end[1 - e->side].destroyed)
		pipe_free(p);
}

static const struct iw_transport_ops pipe_ops = {
	.kick = pipe_kick,
	.shutdown = pipe_shutdown,
	.destroy = pipe_destroy,
};

int iw_pipe_connect_opts(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p,
			 const struct iw_pipe_opts *opts)
{
	if (!a || !b || a == b || !p || a->ctx != b->ctx)
		return -EINVAL;
	struct iw_context *ctx = a->ctx;
	struct pipe *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
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
		pp->end[i].t.ops = &pipe_ops;
		pp->end[i].pipe = pp;
		pp->end[i].side = i;
	}
	if (!pp->ring[0].buf || !pp->ring[1].buf) {
		pipe_free(pp);
		return -ENOMEM;
	}

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
	if ((rc = iw_qp_connect_start(a, p, &pp->end[0].t)) < 0)
		goto fail;
	if ((rc = iw_qp_connect_start(b, &pb, &pp->end[1].t)) < 0) {
		/* a is connected to nothing: it sees a reset; the pair is freed
		 * when a's end is destroyed. */
		pp->end[1].shut = pp->end[1].rst = pp->end[1].destroyed = true;
		pump(pp);
		iw_ctx_unlock(ctx);
		return rc;
	}
	iw_ctx_unlock(ctx);
	return 0;
fail:
	iw_ctx_unlock(ctx);
	pipe_free(pp);
	return rc;
}

int iw_pipe_connect(struct iw_qp *a, struct iw_qp *b, const struct iw_qp_conn_params *p)
{
	return iw_pipe_connect_opts(a, b, p, NULL);
}
