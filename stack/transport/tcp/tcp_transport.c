/* Kernel TCP transport: moves a QP's FPDUs over a non-blocking socket.
 *
 * Transmit: iw_rdmap_tx_pull() hands out gather lists of whole FPDUs that
 * stay valid until acknowledged; they are written with one sendmsg() for
 * many FPDUs. What the kernel did not take stays in the backlog (the tail
 * of the pulled list) and only what it took is acknowledged. EPOLLOUT is
 * watched only while there is a backlog; when the peer stops reading the
 * engine runs out of tx slots and pulling stops, so nothing spins.
 *
 * Receive policy (one readv per step, until EAGAIN or a short read):
 *   - the engine says where the next stream bytes go (rx_prepare): the
 *     rest of the current FPDU lands directly in its final place (posted
 *     receive buffer or registered memory);
 *   - behind that list a staging buffer catches what follows in the same
 *     syscall, and is fed to the engine in copy mode. After small FPDUs it
 *     is 16 KiB, so a burst of small FPDUs costs one syscall; after a
 *     large FPDU (>= 8 KiB) it is only 64 bytes, so the next large FPDU's
 *     payload still goes direct and only its header is copied;
 *   - with markers towards us the deframer prepares at most one marker
 *     interval per list, so that direction always uses copy mode.
 *
 * States, shutdown, the responder's gate, the initiator's delay, the RTR
 * and re-entrancy: the FPDU-stream core (stream.h). */
#include "tcp_transport.h"
#include "stack/qp_mem.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>


/* Backlog iovecs: room for one worst-case FPDU (every SGE split by
 * markers) plus a batch of small ones; was IOV_MAX, 16 KiB per QP. */
#define TP_IOV_WORST (2 * (IW_RDMAP_MAX_SGE + 2) + 2 * IW_MPA_TX_MAX_MARKERS)
#define TP_IOV_MAX (TP_IOV_WORST + 128)
#define TP_TX_BUDGET (1024 * 1024) /* bytes pulled ahead of the kernel */
#define TP_STAGE 65536            /* copy-mode staging buffer (ctx->tcp_rx_stage, one per context) */
#define TP_SMALL_TAIL 64          /* staging behind a large FPDU: the next header */
#define TP_BIG_FPDU 8192          /* ULPDU size from which direct reads pay off */
#define TP_RX_PREP 64             /* iovecs one prepare may fill */
#define TP_RX_STEPS 64            /* readv calls per wakeup (fairness between QPs) */

struct tcp_transport {
	struct iw_stream s; /* first */
	struct iw_watch watch;
	bool watching;
	size_t rtr_left; /* RTR bytes at the front of the backlog */
	uint32_t trace_conn;

	/* Backlog: pulled, not yet taken by the kernel. TP_IOV_MAX entries
	 * in page-backed storage (qp_mem.h): kept at the front, so an idle
	 * connection has none of it resident and a busy one mostly a page. */
	struct iovec *iov;
	int iov_head, iov_cnt;
	size_t tx_pending;
	/* The socket took less than offered (or EAGAIN): it is full until
	 * EPOLLOUT says otherwise, so a post meanwhile only queues (no
	 * sendmsg that would fail with EAGAIN once per post). */
	bool tx_full;
};

static struct tcp_transport *tp_of(struct iw_stream *s)
{
	return (struct tcp_transport *)s; /* s is the first member */
}

static int tp_fd(const struct tcp_transport *t)
{
	return t->watch.fd;
}

static struct iw_rdmap_conn *tp_conn(struct tcp_transport *t)
{
	return iw_stream_conn(&t->s);
}

static void tp_fail(struct tcp_transport *t, int err)
{
	iw_stream_finish(&t->s, err, true, true);
}

/* Watch for ev; a watch that cannot follow would stall the stream: fail it. */
static void tp_set_events(struct tcp_transport *t, uint32_t ev)
{
	int rc;

	if (t->watching && t->watch.events != ev && (rc = iw_ctx_watch_mod(t->s.ctx, &t->watch, ev)) < 0)
		tp_fail(t, rc);
}

/* The stream is over: close the socket. */
static void tp_close(struct iw_stream *s, int err, bool abortive)
{
	struct tcp_transport *t = tp_of(s);
	int fd = tp_fd(t);

	if (t->watching)
		iw_ctx_watch_del(s->ctx, &t->watch);
	t->watching = false;
	if (abortive) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };
		/* Failing, close still ends the stream (with a FIN). */
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(fd);
	t->watch.fd = -1;
	iw_trace_conn_close(s->ctx, t->trace_conn, abortive || err != 0);
	t->trace_conn = 0;
	t->iov_cnt = 0;
	t->iov_head = 0;
	t->tx_pending = 0;
	t->rtr_left = 0;
	t->tx_full = false;
}

/* n bytes of the backlog went out. */
static void tp_consume(struct tcp_transport *t, size_t n)
{
	t->tx_pending -= n;
	while (n > 0) {
		struct iovec *v = &t->iov[t->iov_head];
		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		t->iov_head++;
		t->iov_cnt--;
	}
	/* Skip empty entries so the head is always real data. */
	while (t->iov_cnt > 0 && t->iov[t->iov_head].iov_len == 0) {
		t->iov_head++;
		t->iov_cnt--;
	}
	if (t->iov_cnt == 0)
		t->iov_head = 0;
}

/* Top up the backlog from the engine. */
static void tp_pull(struct tcp_transport *t)
{
	struct iw_rdmap_conn *c = tp_conn(t);
	size_t bytes = 0;

	if (t->tx_pending >= TP_TX_BUDGET)
		return;
	if (t->iov_head > 0) {
		memmove(t->iov, t->iov + t->iov_head, (size_t)t->iov_cnt * sizeof(t->iov[0]));
		t->iov_head = 0;
	}
	int n = iw_rdmap_tx_pull(c, t->iov + t->iov_cnt, TP_IOV_MAX - t->iov_cnt, TP_TX_BUDGET - t->tx_pending,
				 &bytes);
	/* -ENOBUFS: the next FPDU does not fit behind the backlog; it goes
	 * once the backlog drained (an empty list always holds one FPDU). */
	if (n > 0) {
		t->iov_cnt += n;
		t->tx_pending += bytes;
	}
}

static void tp_tx(struct iw_stream *s)
{
	struct tcp_transport *t = tp_of(s);
	struct iw_rdmap_conn *c = tp_conn(t);
	int fd = tp_fd(t);

	while (!s->gated) {
		if (t->tx_full) {
			tp_pull(t);
			break;
		}
		/* Engine bytes held but the engine holds none in flight: it was
		 * flushed, the memory behind them is no longer ours to send. */
		if (t->tx_pending > t->rtr_left && iw_rdmap_tx_in_flight(c) == 0) {
			t->iov_cnt = 0;
			t->iov_head = 0;
			t->tx_pending = 0;
			t->rtr_left = 0;
		}
		tp_pull(t);
		if (t->tx_pending == 0)
			break;
		struct msghdr mh = { .msg_iov = t->iov + t->iov_head, .msg_iovlen = (size_t)t->iov_cnt };
		size_t offered = t->tx_pending;
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		s->base.qp->stats.tx_syscalls++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				t->tx_full = true;
				break;
			}
			tp_fail(t, -errno);
			return;
		}
		s->base.qp->stats.bytes_tx += (uint64_t)n;
		if (t->trace_conn) /* 0: not traced; skip the call per send */
			iw_trace_data(s->ctx, t->trace_conn, true, t->iov + t->iov_head, t->iov_cnt, (size_t)n);
		tp_consume(t, (size_t)n);
		size_t rtr = (size_t)n < t->rtr_left ? (size_t)n : t->rtr_left;
		t->rtr_left -= rtr;
		if ((size_t)n > rtr)
			iw_rdmap_tx_ack(c, (size_t)n - rtr); /* may complete WRs */
		if (iw_stream_closed(s))
			return;
		if ((size_t)n < offered) {
			t->tx_full = true; /* socket buffer full */
			break;
		}
		if (!iw_rdmap_tx_pending(c))
			break; /* all sent and nothing to pull: skip an empty pull */
	}
	tp_set_events(t, EPOLLIN | (t->tx_pending ? EPOLLOUT : 0u));
}

static bool tp_tx_idle(struct iw_stream *s)
{
	return tp_of(s)->tx_pending == 0;
}

static void tp_shut_wr(struct iw_stream *s)
{
	struct tcp_transport *t = tp_of(s);

	/* Failing (the peer is gone), the close timer ends the stream. */
	(void)shutdown(tp_fd(t), SHUT_WR);
	tp_set_events(t, EPOLLIN);
}

static void tp_rx(struct iw_stream *s)
{
	struct tcp_transport *t = tp_of(s);
	struct iw_rdmap_conn *c = tp_conn(t);
	int fd = tp_fd(t);

	for (int step = 0; step < TP_RX_STEPS; step++) {
		struct iovec v[TP_RX_PREP + 1];
		int n = 0;
		size_t prep = 0;

		if (s->state == IW_STREAM_INIT || iw_stream_closed(s))
			return;
		/* Between FPDUs after a small one the whole next FPDU is likely
		 * in the socket: read it all into the stage, where the
		 * deframer's whole-FPDU fast path takes it. */
		if (!iw_rdmap_config(c)->markers_rx &&
		    !(iw_rdmap_rx_last_ulpdu_len(c) < TP_BIG_FPDU && !iw_rdmap_rx_mid_fpdu(c)))
			n = iw_rdmap_rx_prepare(c, v, TP_RX_PREP);
		for (int i = 0; i < n; i++)
			prep += v[i].iov_len;
		/* n == 0: copy mode, or the stream stopped (then the bytes are
		 * read and dropped so the peer's FIN is still seen). */
		size_t tail = (n > 0 && c->rx.ulpdu_len >= TP_BIG_FPDU) ? TP_SMALL_TAIL : TP_STAGE;
		v[n].iov_base = s->ctx->tcp_rx_stage;
		v[n].iov_len = tail;

		ssize_t r = readv(fd, v, n + 1);
		s->base.qp->stats.rx_syscalls++;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			tp_fail(t, -errno);
			return;
		}
		if (r == 0) {
			iw_stream_finish(s, 0, true, false); /* peer FIN: answer with ours */
			return;
		}
		s->base.qp->stats.bytes_rx += (uint64_t)r;
		if (t->trace_conn)
			iw_trace_data(s->ctx, t->trace_conn, false, v, n + 1, (size_t)r);
		iw_stream_rx_seen(s);
		size_t direct = (size_t)r < prep ? (size_t)r : prep;
		if (direct)
			iw_rdmap_rx_commit(c, direct);
		if (iw_stream_closed(s))
			return;
		if ((size_t)r > direct)
			(void)iw_rdmap_rx_feed(c, s->ctx->tcp_rx_stage, (size_t)r - direct); /* a stopped stream drops the rest */
		if (iw_stream_closed(s))
			return;
		if ((size_t)r < prep + tail)
			return; /* drained for now */
	}
}

static void tp_free(struct iw_stream *s)
{
	struct tcp_transport *t = tp_of(s);

	iw_pages_free(t->iov, TP_IOV_MAX * sizeof(*t->iov));
	free(t);
}

/* The RTR goes first in the backlog. */
static int tp_queue_rtr(struct iw_stream *s, const struct iovec *iov, int n, size_t len)
{
	struct tcp_transport *t = tp_of(s);

	memcpy(t->iov, iov, (size_t)n * sizeof(*iov));
	t->iov_head = 0;
	t->iov_cnt = n;
	t->tx_pending = len;
	t->rtr_left = len;
	return 0;
}

static int tp_open(struct iw_stream *s)
{
	struct tcp_transport *t = tp_of(s);
	int rc = iw_ctx_watch_add(s->ctx, &t->watch, EPOLLIN);

	t->watching = rc == 0;
	return rc;
}

static const struct iw_stream_io tcp_io = {
	.tx = tp_tx, .rx = tp_rx, .tx_idle = tp_tx_idle, .shut_wr = tp_shut_wr, .queue_rtr = tp_queue_rtr,
	.open = tp_open, .close = tp_close, .free = tp_free,
};

static void tp_watch_cb(struct iw_watch *w, uint32_t revents)
{
	struct tcp_transport *t = (struct tcp_transport *)((char *)w - offsetof(struct tcp_transport, watch));

	iw_stream_enter(&t->s);
	/* Room again (or the socket failed: the next sendmsg says so). */
	if (revents & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		t->tx_full = false;
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
		tp_rx(&t->s);
	if ((revents & EPOLLOUT) || iw_rdmap_tx_pending(tp_conn(t)))
		iw_stream_tx(&t->s);
	iw_stream_leave(&t->s);
}

struct iw_transport *iw_tcp_transport_create(struct iw_context *ctx, struct iw_qp *qp, const struct iw_tcp_cfg *cfg)
{
	if (!ctx->tcp_rx_stage && !(ctx->tcp_rx_stage = malloc(TP_STAGE)))
		return NULL;
	struct tcp_transport *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->iov = iw_pages_alloc(TP_IOV_MAX * sizeof(*t->iov));
	if (!t->iov) {
		free(t);
		return NULL;
	}
	iw_stream_init(&t->s, ctx, qp, &tcp_io, &cfg->stream);
	t->watch.fd = cfg->fd;
	t->watch.cb = tp_watch_cb;
	t->trace_conn = cfg->trace_conn;
	return &t->s.base;
}

uint32_t iw_tcp_mulpdu(int fd, bool markers_tx, uint32_t max_ulpdu)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (max_ulpdu)
		return iw_stream_mulpdu(0, markers_tx, max_ulpdu);
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 || mss < 536)
		mss = 536;
	return iw_stream_mulpdu((size_t)(mss & ~7), markers_tx, 0);
}
