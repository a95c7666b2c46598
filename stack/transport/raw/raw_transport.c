/* The raw transport: see raw_transport.h. States, shutdown, the
 * responder's gate, the initiator's delay, the RTR and re-entrancy: the
 * FPDU-stream core (stream.h). */
#include "raw_transport.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp/ddp_wire.h"
#include "rdmap/rdmap_wire.h"

#define RT_IOV_MAX (2 * (IW_RDMAP_MAX_SGE + 2) + 2 * IW_MPA_TX_MAX_MARKERS)
/* One FPDU: the largest ULPDU, its headers, pad, CRC and markers. */
#define RT_SCRATCH (IW_MPA_ULPDU_MAX + 64 + IW_MPA_TX_MAX_MARKERS * IW_MPA_MARKER_LEN)
#define RT_STAGE 16384
#define RT_RX_PREP 64
#define RT_RX_STEPS 64

struct raw_transport {
	struct iw_stream s; /* first */
	struct iw_rawdev *dev;
	struct iwn_tcp_conn *c;
	struct iw_rawdev_user user;
	bool place_ooo, user_on;
	/* The FPDU pulled but not yet taken by TCP (its send buffer was full). */
	uint8_t *scratch;
	uint32_t pend_len;
	bool pend_rtr; /* the pending bytes are our RTR, not the engine's */
	uint8_t *stage;
	struct iovec iov[RT_IOV_MAX];
	struct iw_raw_stats st;
};

static struct raw_transport *rt_of(struct iw_stream *s)
{
	return (struct raw_transport *)s; /* s is the first member */
}

static struct iw_rdmap_conn *rt_conn(struct raw_transport *t)
{
	return iw_stream_conn(&t->s);
}

uint32_t iw_raw_mulpdu(const struct iwn_tcp_conn *c, bool markers_tx, uint32_t max_ulpdu)
{
	if (max_ulpdu)
		return iw_stream_mulpdu(0, markers_tx, max_ulpdu);
	return iw_stream_mulpdu(c->eff_mss >= 536 ? c->eff_mss : 536, markers_tx, 0);
}

/* ------------------------------------------------------------------ */
/* Out-of-order placement                                              */

/* Payload the TCP core accepted ahead of a hole, at stream offset off. */
static void rt_ooo(void *arg, struct iwn_tcp_conn *c, uint64_t off, const uint8_t *p, uint32_t len)
{
	struct raw_transport *t = arg;
	(void)c;
	(void)off; /* the peer's FPDU boundaries are unknown: the CRC decides */
	struct iw_rdmap_conn *rc = t->s.base.qp ? rt_conn(t) : NULL;
	uint64_t before = t->st.ooo_bytes_placed, fpdus = t->st.ooo_fpdus_placed;
	if (!t->place_ooo || t->s.state != IW_STREAM_OPEN || !rc) {
		t->st.ooo_calls++;
		t->st.ooo_bytes += len;
		t->st.ooo_skipped++;
		return;
	}
	iw_raw_ooo_place(rc, p, len, &t->st);
	t->dev->st.ooo_fpdus_placed += t->st.ooo_fpdus_placed - fpdus;
	t->dev->st.ooo_bytes_placed += t->st.ooo_bytes_placed - before;
}

/* ------------------------------------------------------------------ */
/* Stream end                                                          */

static void rt_fail(struct raw_transport *t, int err)
{
	iw_stream_finish(&t->s, err, true, true);
}

/* The stream is over: release our TCP connection. */
static void rt_close(struct iw_stream *st, int err, bool abortive)
{
	struct raw_transport *t = rt_of(st);

	(void)err;
	if (t->user_on)
		iw_rawdev_user_del(t->dev, &t->user);
	t->user_on = false;
	uint64_t now = iw_rawdev_now_us();
	if (t->c && getenv("IWARP_RAW_STATS")) {
		const struct iwn_tcp_stats *s = &t->c->stats;
		fprintf(stderr,
			"iwarp raw conn: segs in %" PRIu64 " out %" PRIu64 ", bytes in %" PRIu64 " out %" PRIu64
			", rto %" PRIu64 ", fast rexmit %" PRIu64 ", rexmit segs %" PRIu64 ", dupacks %" PRIu64
			", ooo segs %" PRIu64 ", probes %" PRIu64 ", gso sends %" PRIu64 " (%" PRIu64
			" wire segs); fpdus tx %" PRIu64 " deferred %" PRIu64 "\n",
			s->segs_in, s->segs_out, s->bytes_in, s->bytes_out, s->rto_expired, s->fast_retransmits,
			s->retransmitted_segs, s->dupacks, s->ooo_segs, s->window_probes, s->gso_sends, s->gso_wire_segs,
			t->st.fpdus_tx, t->st.records_deferred);
	}
	if (t->c) {
		t->c->ooo = NULL;
		t->c->ooo_arg = NULL;
		if (abortive)
			iwn_tcp_abort(t->c, now);
		else
			iwn_tcp_close(t->c, now); /* FIN after what is queued */
		iwn_net_release(&t->dev->net, t->c, now);
		t->c = NULL;
		iw_rawdev_flush(t->dev);
	}
	t->pend_len = 0;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */

/* TCP's answer r to an FPDU of n bytes (engine bytes unless rtr): true
 * when taken and still open. -EAGAIN leaves it to the caller. */
static bool rt_taken(struct raw_transport *t, int r, uint32_t n, bool rtr)
{
	if (r < 0) {
		rt_fail(t, r == -EPIPE ? -ECONNRESET : r);
		return false;
	}
	t->st.fpdus_tx++;
	t->s.base.qp->stats.bytes_tx += n;
	if (!rtr)
		iw_rdmap_tx_ack(rt_conn(t), n); /* may complete WRs */
	return !iw_stream_closed(&t->s);
}

/* Hand the pending FPDU to TCP as one record: true when taken. */
static bool rt_push(struct raw_transport *t)
{
	int r = iwn_tcp_send_record(t->c, t->scratch, t->pend_len, iw_rawdev_now_us());
	if (r == -EAGAIN) {
		t->st.records_deferred++;
		return false;
	}
	uint32_t n = t->pend_len;
	bool rtr = t->pend_rtr;
	t->pend_len = 0;
	t->pend_rtr = false;
	return rt_taken(t, r, n, rtr);
}

static void rt_tx(struct iw_stream *st)
{
	struct raw_transport *t = rt_of(st);
	struct iw_rdmap_conn *c = rt_conn(t);
	while (!st->gated) {
		/* Engine bytes held while the engine holds none in flight: it
		 * was flushed, those bytes are no longer to be sent. */
		if (t->pend_len && !t->pend_rtr && iw_rdmap_tx_in_flight(c) == 0)
			t->pend_len = 0;
		if (t->pend_len) {
			if (!rt_push(t))
				break;
			continue;
		}
		size_t bytes = 0;
		/* max_bytes 1: exactly one FPDU, so it becomes one record. */
		int n = iw_rdmap_tx_pull(c, t->iov, RT_IOV_MAX, 1, &bytes);
		if (n <= 0 || bytes == 0)
			break;
		if (bytes > RT_SCRATCH) { /* cannot happen with MULPDU <= 65535 */
			rt_fail(t, -EMSGSIZE);
			return;
		}
		/* Gathered straight into TCP's send buffer; only an FPDU TCP
		 * has no room for yet is copied aside (the engine's pieces
		 * are not kept past this call). */
		int r = iwn_tcp_send_recordv(t->c, t->iov, n, (uint32_t)bytes, iw_rawdev_now_us());
		if (r != -EAGAIN) {
			if (!rt_taken(t, r, (uint32_t)bytes, false))
				break;
			continue;
		}
		t->st.records_deferred++;
		uint32_t k = 0;
		for (int i = 0; i < n; i++) {
			memcpy(t->scratch + k, t->iov[i].iov_base, t->iov[i].iov_len);
			k += (uint32_t)t->iov[i].iov_len;
		}
		t->pend_len = k;
		break; /* TCP just said no: retry on its next ACK */
	}
	/* Inside a device pass (rt_user_cb) the pass flushes once after all
	 * its users (tell_users): a flush here too was one more output walk
	 * and timer check per message. */
	if (!iw_stream_closed(st) && !t->dev->in_pass)
		iw_rawdev_flush(t->dev);
}

static bool rt_tx_idle(struct iw_stream *st)
{
	return rt_of(st)->pend_len == 0;
}

static void rt_shut_wr(struct iw_stream *st)
{
	struct raw_transport *t = rt_of(st);

	iwn_tcp_close(t->c, iw_rawdev_now_us());
	iw_rawdev_flush(t->dev);
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */

static void rt_rx(struct iw_stream *st)
{
	struct raw_transport *t = rt_of(st);
	struct iw_rdmap_conn *c = rt_conn(t);
	for (int step = 0; step < RT_RX_STEPS; step++) {
		if (st->state == IW_STREAM_INIT || iw_stream_closed(st))
			return;
		if (!iwn_tcp_readable(t->c))
			break;
		uint64_t now = iw_rawdev_now_us();
		struct iovec v[RT_RX_PREP];
		int n = iw_rdmap_config(c)->markers_rx ? 0 : iw_rdmap_rx_prepare(c, v, RT_RX_PREP);
		size_t direct = 0;
		for (int i = 0; i < n; i++) {
			uint32_t want = v[i].iov_len > UINT32_MAX ? UINT32_MAX : (uint32_t)v[i].iov_len;
			uint32_t k = iwn_tcp_recv(t->c, v[i].iov_base, want, now);
			direct += k;
			if (k < want)
				break;
		}
		if (direct) {
			st->base.qp->stats.bytes_rx += direct;
			iw_rdmap_rx_commit(c, direct);
			if (iw_stream_closed(st))
				return;
		}
		uint32_t k = iwn_tcp_recv(t->c, t->stage, RT_STAGE, now);
		if (k) {
			st->base.qp->stats.bytes_rx += k;
			(void)iw_rdmap_rx_feed(c, t->stage, k); /* a stopped stream drops the rest */
			if (iw_stream_closed(st))
				return;
		}
		if (direct + k)
			iw_stream_rx_seen(st);
		if (direct + k == 0)
			break;
	}
	if (iwn_tcp_eof(t->c)) {
		iw_stream_finish(st, 0, true, false); /* peer FIN: answer with ours */
		return;
	}
	if (t->c->state == IWN_TCP_CLOSED)
		rt_fail(t, t->c->err ? t->c->err : -ECONNRESET);
}

/* ------------------------------------------------------------------ */
/* The rest of the stream                                              */

static void rt_free(struct iw_stream *st)
{
	struct raw_transport *t = rt_of(st);

	free(t->scratch);
	free(t->stage);
	free(t);
}

/* The RTR is pending ahead of any engine FPDU, as one record. */
static int rt_queue_rtr(struct iw_stream *st, const struct iovec *iov, int n, size_t len)
{
	struct raw_transport *t = rt_of(st);
	uint32_t k = 0;

	(void)len;
	for (int i = 0; i < n; i++) {
		memcpy(t->scratch + k, iov[i].iov_base, iov[i].iov_len);
		k += (uint32_t)iov[i].iov_len;
	}
	t->pend_len = k;
	t->pend_rtr = true;
	return 0;
}

static int rt_open(struct iw_stream *st)
{
	struct raw_transport *t = rt_of(st);

	t->c->ooo = rt_ooo;
	t->c->ooo_arg = t;
	iw_rawdev_user_add(t->dev, &t->user);
	t->user_on = true;
	return 0;
}

static const struct iw_stream_io raw_io = {
	.tx = rt_tx, .rx = rt_rx, .tx_idle = rt_tx_idle, .shut_wr = rt_shut_wr, .queue_rtr = rt_queue_rtr,
	.open = rt_open, .close = rt_close, .free = rt_free,
};

/* The device received frames or ran timers: our connection may have
 * bytes, room, or news. */
static void rt_user_cb(struct iw_rawdev_user *u)
{
	struct raw_transport *t = (struct raw_transport *)((char *)u - offsetof(struct raw_transport, user));
	iw_stream_enter(&t->s);
	rt_rx(&t->s);
	iw_stream_tx(&t->s);
	iw_stream_leave(&t->s);
}

struct iw_transport *iw_raw_transport_create(struct iw_context *ctx, struct iw_qp *qp,
					     const struct iw_raw_tcfg *cfg)
{
	if (!cfg || !cfg->dev || !cfg->conn)
		return NULL;
	struct raw_transport *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->scratch = malloc(RT_SCRATCH);
	t->stage = malloc(RT_STAGE);
	if (!t->scratch || !t->stage) {
		free(t->scratch);
		free(t->stage);
		free(t);
		return NULL;
	}
	struct iw_stream_cfg sc = {
		.tx_gate = cfg->tx_gate,
		.send_rtr = cfg->send_rtr,
		.tx_delay_ms = cfg->tx_delay_ms,
		.cm_id = cfg->cm_id,
	};
	iw_stream_init(&t->s, ctx, qp, &raw_io, &sc);
	t->dev = cfg->dev;
	t->c = cfg->conn;
	t->user.cb = rt_user_cb;
	t->place_ooo = !cfg->no_ooo_place;
	return &t->s.base;
}

int iw_raw_transport_start(struct iw_transport *bt)
{
	return bt->ops->start(bt);
}

void iw_raw_transport_forget_conn(struct iw_transport *bt)
{
	struct raw_transport *t = rt_of(iw_stream_of(bt));
	if (t->s.state == IW_STREAM_INIT)
		t->c = NULL;
}

void iw_raw_transport_get_stats(struct iw_transport *bt, struct iw_raw_stats *st)
{
	*st = rt_of(iw_stream_of(bt))->st;
}
