/* Soak: many connections over 127.0.0.1 doing random mixes of SEND, SEND
 * with Invalidate, zero-length SEND, RDMA WRITE and RDMA READ with random
 * sizes (0..1 MiB, skewed small) and random SGE layouts, with random
 * graceful and mid-traffic disconnects and reconnects. Every byte placed
 * is verified; every work request must complete exactly once. Usage and
 * the long form: tests/soak/README.md.
 *
 * Each connection runs transactions: the client posts a batch of 1-4
 * messages (each optionally preceded by a WRITE into the server's sink or
 * a READ from the server's pattern region), the server verifies them and
 * answers with a batch of its own in the same way. Every non-empty
 * message starts with a header naming the connection, its epoch, the
 * message's place in the batch, where its body comes from in the shared
 * pattern buffer and what WRITE it announces; the receiver checks the
 * header's hash, the body byte for byte against the pattern, the guard
 * bytes around and behind it in its receive buffer, and the announced
 * WRITE in its sink (then wipes it). READs are checked by the reader.
 * STags travel in the MPA private data and in the headers (the target of
 * Send with Invalidate is re-registered, new key, after every use).
 *
 * Client QPs live in a context driven by this thread's poll loop, server
 * QPs in a second context with its own progress thread (--one-ctx puts
 * both in the first). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#define MAX_BATCH 4
#define NRECV 8                /* receives posted per endpoint */
#define SEND_MAX (64u * 1024u) /* largest message */
#define HDR_LEN 52u
#define RECV_SLOT (SEND_MAX + HDR_LEN + 4u * 1024u) /* message + room for SGE gaps */
#define SINK_HALF (1u << 20)   /* WRITE targets, READ sinks: one half each */
#define SINK_GUARD 4096u
#define PAT_SIZE (2u << 20)
#define WR_CAP 512u
#define GUARD 0xA5
#define MAGIC 0x50414B53u /* "SKAP" */
#define CLOSE_WAIT_MS 15000
#define TX_STUCK_MS 10000

enum kind { K_SEND, K_SEND_INV, K_NOP, K_WRITE, K_READ, K_NKIND };
static const char *kind_name[K_NKIND] = { "send", "send_inv", "send0", "write", "read" };

/* ------------------------------------------------------------------ */
/* Options, statistics                                                 */

static struct {
	unsigned seconds, conns;
	uint64_t seed;
	bool one_ctx;
	uint32_t max_size;
	unsigned disc_per_mille; /* per transaction */
	bool verbose;
	unsigned corrupt_every; /* self-test: damage every Nth received message */
} opt = { 50, 32, 1, false, 1u << 20, 8, false, 0 };

static struct {
	uint64_t ops[K_NKIND];
	uint64_t bytes_verified, msgs_verified, transactions;
	uint64_t reconnects, abrupt, flushed, wrs;
	uint64_t errors;
	uint64_t injected, corrupt_count;
} st;

static void fail(const char *fmt, ...)
{
	va_list ap;
	st.errors++;
	if (st.errors > 20)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "soak: ERROR: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

#define CHECK(c, ...)                    \
	do {                             \
		if (!(c))                \
			fail(__VA_ARGS__); \
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(rnd(s) % n) : 0;
}

/* Sizes 0..max, skewed small: half up to 256, most up to 4 KiB. */
static uint32_t rnd_size(uint64_t *s, uint32_t max)
{
	uint32_t r = rnd_below(s, 100), hi;
	if (r < 50)
		hi = 256;
	else if (r < 80)
		hi = 4096;
	else if (r < 95)
		hi = 65536;
	else
		hi = 1u << 20;
	if (hi > max)
		hi = max;
	return rnd_below(s, hi + 1);
}

static uint32_t fnv(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* ------------------------------------------------------------------ */
/* Wire header (host order: both ends are this process)                */

struct hdr {
	uint32_t magic;
	uint32_t conn, epoch, seq; /* seq: transaction number in this epoch */
	uint8_t kind, index, count, from_client;
	uint32_t len;     /* whole message, header included */
	uint32_t body_src; /* pattern offset of the body */
	uint32_t w_len, w_src, w_dst; /* announced WRITE */
	uint32_t inv_stag, inv_gen;   /* the sender's current invalidation target */
	uint32_t hash;
};
_Static_assert(sizeof(struct hdr) == HDR_LEN, "header size");

/* ------------------------------------------------------------------ */
/* Endpoints and connections                                           */

struct wr_slot {
	uint64_t id;
	bool busy;
	uint8_t kind; /* K_* for sends; K_NKIND for receives */
	int recv_slot;
	uint32_t len, src, dst; /* READ: length, pattern offset, sink offset */
	int nsge;
	struct iw_sge sge[4];
};

struct conn;

struct ep {
	struct conn *c;
	bool client;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
	struct iw_mr *pat_mr, *sink_mr, *recv_mr, *hdr_mr, *inv_mr;
	uint8_t *sink, *recv, *hdrs, *inv;
	uint32_t inv_gen;
	struct wr_slot wr[WR_CAP];
	uint64_t next_id;
	uint32_t outstanding;
	uint32_t hdr_next;
	/* What we know about the peer. */
	uint32_t peer_pat, peer_sink, peer_inv, peer_inv_gen;
	bool peer_inv_ok;
	/* The batch being received. */
	uint32_t rx_msgs;
	uint32_t tx_pending; /* client: send WRs of the current transaction */
	uint64_t rng;
};

enum cstate { C_IDLE, C_CONNECTING, C_RUNNING, C_CLOSING };

struct conn {
	uint32_t idx, epoch, seq;
	enum cstate state;
	bool c_est, s_est, c_disc, s_disc;
	bool reply_done; /* client: the server's batch for this seq arrived */
	uint64_t close_deadline;
	uint64_t tx_start; /* when the current transaction began */
	struct ep cl, sv;
};

static uint8_t *pat;
static struct conn *conns;
static struct iw_context *ctx_c, *ctx_s;
static struct iw_cm_channel *ch_c, *ch_s;
static struct iw_cm_id *listener;
static struct sockaddr_storage laddr;

static int must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "soak: %s: %s\n", what, strerror(-rc));
		exit(2);
	}
	return rc;
}

static void *xalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "soak: out of memory\n");
		exit(2);
	}
	return p;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static struct wr_slot *wr_new(struct ep *e, uint8_t kind)
{
	uint64_t id = e->next_id++;
	struct wr_slot *w = &e->wr[id % WR_CAP];
	if (w->busy) {
		fail("conn %u: WR table full (wr %" PRIu64 " still outstanding)", e->c->idx, w->id);
		return NULL;
	}
	memset(w, 0, sizeof(*w));
	w->id = id;
	w->kind = kind;
	return w;
}

/* A WR was accepted by the QP. */
static void wr_posted(struct ep *e, struct wr_slot *w)
{
	w->busy = true;
	e->outstanding++;
	st.wrs++;
}

static void ep_init(struct ep *e, struct conn *c, bool client, struct iw_context *ctx)
{
	const unsigned lw = IW_ACCESS_LOCAL_WRITE, rw = IW_ACCESS_REMOTE_WRITE, rr = IW_ACCESS_REMOTE_READ;
	memset(e, 0, sizeof(*e));
	e->c = c;
	e->client = client;
	e->ctx = ctx;
	e->rng = opt.seed * 0x100000001B3ull + c->idx * 2u + (client ? 0 : 1);
	must(iw_alloc_pd(ctx, &e->pd), "alloc_pd");
	must(iw_create_cq(ctx, 2 * WR_CAP, NULL, &e->cq), "create_cq");
	size_t sink_len = 2 * (size_t)SINK_HALF + SINK_GUARD;
	e->sink = xalloc(sink_len);
	memset(e->sink, GUARD, sink_len);
	e->recv = xalloc((size_t)NRECV * RECV_SLOT);
	e->hdrs = xalloc((size_t)WR_CAP * HDR_LEN);
	e->inv = xalloc(4096);
	must(iw_reg_mr(e->pd, pat, PAT_SIZE, rr, &e->pat_mr), "reg pattern");
	must(iw_reg_mr(e->pd, e->sink, sink_len, lw | rw, &e->sink_mr), "reg sink");
	must(iw_reg_mr(e->pd, e->recv, (size_t)NRECV * RECV_SLOT, lw, &e->recv_mr), "reg recv");
	must(iw_reg_mr(e->pd, e->hdrs, (size_t)WR_CAP * HDR_LEN, 0, &e->hdr_mr), "reg hdrs");
	must(iw_reg_mr(e->pd, e->inv, 4096, lw | rw, &e->inv_mr), "reg inv");
}

static void ep_fini(struct ep *e)
{
	must(iw_dereg_mr(e->pat_mr), "dereg");
	must(iw_dereg_mr(e->sink_mr), "dereg");
	must(iw_dereg_mr(e->recv_mr), "dereg");
	must(iw_dereg_mr(e->hdr_mr), "dereg");
	must(iw_dereg_mr(e->inv_mr), "dereg");
	must(iw_destroy_cq(e->cq), "destroy_cq");
	must(iw_dealloc_pd(e->pd), "dealloc_pd");
	free(e->sink);
	free(e->recv);
	free(e->hdrs);
	free(e->inv);
}

static void qp_create(struct ep *e)
{
	struct iw_qp_init_attr qa = {
		.send_cq = e->cq, .recv_cq = e->cq, .sq_sig_all = true,
		.cap = { .max_send_wr = 64, .max_recv_wr = NRECV, .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 64 },
	};
	must(iw_create_qp(e->pd, &qa, &e->qp), "create_qp");
	e->rx_msgs = 0;
	e->tx_pending = 0;
}

/* Post receive slot r with a random layout: 1-4 SGEs covering RECV_SLOT
 * minus gaps; everything is guard-filled first. */
static void post_recv(struct ep *e, int r)
{
	struct wr_slot *w = wr_new(e, K_NKIND);
	if (!w)
		return;
	uint8_t *base = e->recv + (size_t)r * RECV_SLOT;
	memset(base, GUARD, RECV_SLOT);
	w->recv_slot = r;
	w->nsge = 1 + (int)rnd_below(&e->rng, 4);
	uint32_t need = SEND_MAX + HDR_LEN, slack = RECV_SLOT - need, pos = 0, left = need;
	for (int i = 0; i < w->nsge; i++) {
		uint32_t gap = rnd_below(&e->rng, slack / 4 + 1);
		slack -= gap;
		pos += gap;
		uint32_t len = i == w->nsge - 1 ? left : rnd_below(&e->rng, left + 1);
		w->sge[i] = (struct iw_sge){ va(base + pos), len, iw_mr_stag(e->recv_mr) };
		pos += len;
		left -= len;
	}
	struct iw_recv_wr rw = { .wr_id = w->id, .sg_list = w->sge, .num_sge = w->nsge }, *bad;
	int rc = iw_post_recv(e->qp, &rw, &bad);
	if (rc == 0)
		wr_posted(e, w);
	else if (e->c->state != C_CLOSING)
		fail("conn %u: post_recv: %s", e->c->idx, strerror(-rc));
}

/* ------------------------------------------------------------------ */
/* Connection setup                                                    */

struct pdata {
	uint32_t conn, epoch, pat, sink, inv, inv_gen;
};

static void make_pdata(struct ep *e, struct pdata *p)
{
	*p = (struct pdata){ e->c->idx, e->c->epoch, iw_mr_stag(e->pat_mr), iw_mr_stag(e->sink_mr),
			     iw_mr_stag(e->inv_mr), e->inv_gen };
}

static void take_pdata(struct ep *e, const void *pd, uint16_t len)
{
	struct pdata p;
	if (len != sizeof(p)) {
		fail("conn %u: private data of %u bytes", e->c->idx, len);
		return;
	}
	memcpy(&p, pd, sizeof(p));
	e->peer_pat = p.pat;
	e->peer_sink = p.sink;
	e->peer_inv = p.inv;
	e->peer_inv_gen = p.inv_gen;
	e->peer_inv_ok = true;
}

/* A fresh key for the invalidation target (also after every use). */
static void inv_renew(struct ep *e)
{
	must(iw_rereg_mr(e->inv_mr, e->inv, 4096, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE), "rereg inv");
	e->inv_gen++;
}

static void conn_start(struct conn *c)
{
	struct iw_cm_id *id;
	struct pdata pd;
	c->epoch++;
	c->seq = 0;
	c->c_est = c->s_est = c->c_disc = c->s_disc = false;
	c->reply_done = false;
	inv_renew(&c->cl);
	inv_renew(&c->sv);
	qp_create(&c->cl);
	for (int r = 0; r < NRECV; r++)
		post_recv(&c->cl, r);
	must(iw_cm_create_id(ch_c, c, &id), "cm_create_id");
	c->cl.id = id;
	make_pdata(&c->cl, &pd);
	struct iw_conn_param cp = { .private_data = &pd, .private_data_len = sizeof(pd), .ird = 16, .ord = 16,
				    .crc = (c->idx + c->epoch) % 3 ? IW_CRC_ON : IW_CRC_OFF,
				    .markers = (c->idx + c->epoch) % 5 == 0, .first_fpdu_delay_ms = -1 };
	must(iw_cm_connect(id, c->cl.qp, (struct sockaddr *)&laddr, &cp), "cm_connect");
	c->state = C_CONNECTING;
}

static void on_connect_request(struct iw_cm_event *ev)
{
	struct pdata p;
	if (ev->private_data_len != sizeof(p)) {
		fail("connect request with %u bytes of private data", ev->private_data_len);
		iw_cm_reject(ev->id, NULL, 0);
		return;
	}
	memcpy(&p, ev->private_data, sizeof(p));
	if (p.conn >= opt.conns || conns[p.conn].epoch != p.epoch || conns[p.conn].sv.qp) {
		fail("connect request for conn %u epoch %u unexpected", p.conn, p.epoch);
		iw_cm_reject(ev->id, NULL, 0);
		return;
	}
	struct conn *c = &conns[p.conn];
	struct ep *e = &c->sv;
	take_pdata(e, ev->private_data, ev->private_data_len);
	e->id = ev->id;
	iw_cm_id_set_context(e->id, c);
	qp_create(e);
	for (int r = 0; r < NRECV; r++)
		post_recv(e, r);
	struct pdata pd;
	make_pdata(e, &pd);
	struct iw_conn_param sp = { .private_data = &pd, .private_data_len = sizeof(pd), .ird = 16, .ord = 16,
				    .crc = IW_CRC_OFF, .markers = c->epoch % 7 == 0 };
	int rc = iw_cm_accept(e->id, e->qp, &sp);
	if (rc < 0)
		fail("conn %u: accept: %s", c->idx, strerror(-rc));
}

/* ------------------------------------------------------------------ */
/* Sending a batch                                                     */

static bool post_send(struct ep *e, struct iw_send_wr *wr, struct wr_slot *w)
{
	struct iw_send_wr *bad;
	wr->wr_id = w->id;
	int rc = iw_post_send(e->qp, wr, &bad);
	if (rc == 0) {
		wr_posted(e, w);
		if (e->client)
			e->tx_pending++;
		return true;
	}
	if (e->c->state != C_CLOSING)
		fail("conn %u: post_send (%s): %s", e->c->idx, kind_name[w->kind], strerror(-rc));
	return false;
}

/* Body source as 1-3 SGEs over the pattern. */
static int pattern_sges(struct ep *e, struct iw_sge *s, uint32_t src, uint32_t len, int max)
{
	int n = 1 + (int)rnd_below(&e->rng, (uint32_t)max);
	uint32_t left = len;
	for (int i = 0; i < n; i++) {
		uint32_t l = i == n - 1 ? left : rnd_below(&e->rng, left + 1);
		s[i] = (struct iw_sge){ va(pat + src), l, iw_mr_stag(e->pat_mr) };
		src += l;
		left -= l;
	}
	return n;
}

/* One message of a batch, with its WRITE or READ in front. */
static void send_one(struct ep *e, uint8_t index, uint8_t count, uint32_t *wdst, uint32_t *rdst)
{
	struct conn *c = e->c;
	uint32_t r = rnd_below(&e->rng, 100);
	enum kind k = r < 35 ? K_SEND : r < 45 ? K_SEND_INV : r < 50 ? K_NOP : r < 75 ? K_WRITE : K_READ;
	if (k == K_NOP && index == count - 1)
		k = K_SEND; /* the last message carries the header that closes the batch */
	if (k == K_SEND_INV && !e->peer_inv_ok)
		k = K_SEND;
	struct hdr h = { .magic = MAGIC, .conn = c->idx, .epoch = c->epoch, .seq = c->seq, .kind = (uint8_t)k,
			 .index = index, .count = count, .from_client = e->client,
			 .inv_stag = iw_mr_stag(e->inv_mr), .inv_gen = e->inv_gen };

	if (k == K_WRITE || k == K_READ) {
		uint32_t *off = k == K_WRITE ? wdst : rdst;
		uint32_t len = rnd_size(&e->rng, opt.max_size);
		if (len > SINK_HALF - *off)
			len = SINK_HALF - *off;
		uint32_t src = rnd_below(&e->rng, PAT_SIZE - len + 1);
		struct wr_slot *w = wr_new(e, (uint8_t)k);
		if (!w)
			return;
		struct iw_send_wr wr = { .num_sge = 1 };
		struct iw_sge sge[4];
		if (k == K_WRITE) {
			wr.opcode = IW_WR_RDMA_WRITE;
			wr.num_sge = pattern_sges(e, sge, src, len, 4);
			wr.rkey = e->peer_sink;
			wr.remote_addr = 0; /* filled below: the peer's sink address */
			h.w_len = len;
			h.w_src = src;
			h.w_dst = *off;
		} else {
			/* Our sink's second half; the peer's pattern is ours too. */
			uint8_t *dst = e->sink + SINK_HALF + *off;
			memset(dst, GUARD, len);
			sge[0] = (struct iw_sge){ va(dst), len, iw_mr_stag(e->sink_mr) };
			wr.opcode = IW_WR_RDMA_READ;
			wr.rkey = e->peer_pat;
			wr.remote_addr = va(pat + src);
			w->len = len;
			w->src = src;
			w->dst = SINK_HALF + *off;
		}
		wr.sg_list = sge;
		if (k == K_WRITE) {
			/* The peer's sink has the same layout as ours, in the
			 * peer's memory: its address comes from the peer. */
			struct ep *peer = e->client ? &c->sv : &c->cl;
			wr.remote_addr = va(peer->sink + *off);
		}
		*off += len;
		if (!post_send(e, &wr, w))
			return;
		st.ops[k]++;
	}

	uint32_t len = 0;
	if (k != K_NOP) {
		len = HDR_LEN + rnd_size(&e->rng, SEND_MAX);
		if (len > HDR_LEN + SEND_MAX)
			len = HDR_LEN + SEND_MAX;
	}
	uint32_t body = len ? len - HDR_LEN : 0;
	h.len = len;
	h.body_src = rnd_below(&e->rng, PAT_SIZE - body + 1);
	h.hash = 0;
	h.hash = fnv(&h, sizeof(h));
	uint8_t *hb = e->hdrs + (size_t)(e->hdr_next++ % WR_CAP) * HDR_LEN;
	memcpy(hb, &h, HDR_LEN);

	struct wr_slot *w = wr_new(e, (uint8_t)(k == K_SEND_INV ? K_SEND_INV : k == K_NOP ? K_NOP : K_SEND));
	if (!w)
		return;
	struct iw_sge sge[4];
	struct iw_send_wr wr = { .sg_list = sge, .opcode = IW_WR_SEND };
	if (len) {
		sge[0] = (struct iw_sge){ va(hb), HDR_LEN, iw_mr_stag(e->hdr_mr) };
		wr.num_sge = 1 + pattern_sges(e, sge + 1, h.body_src, body, 3);
		if (len <= 64 && rnd_below(&e->rng, 2))
			wr.send_flags |= IW_SEND_INLINE;
	}
	if (k == K_SEND_INV) {
		wr.opcode = IW_WR_SEND_WITH_INV;
		wr.invalidate_rkey = e->peer_inv;
		e->peer_inv_ok = false; /* until the peer names its next key */
	}
	if (rnd_below(&e->rng, 8) == 0)
		wr.send_flags |= IW_SEND_FENCE;
	if (rnd_below(&e->rng, 8) == 0)
		wr.send_flags |= IW_SEND_SOLICITED;
	if (post_send(e, &wr, w) && (k == K_SEND || k == K_SEND_INV || k == K_NOP))
		st.ops[k]++;
}

static void send_batch(struct ep *e)
{
	uint8_t n = (uint8_t)(1 + rnd_below(&e->rng, MAX_BATCH));
	uint32_t wdst = 0, rdst = 0;
	for (uint8_t i = 0; i < n && e->c->state == C_RUNNING; i++)
		send_one(e, i, n, &wdst, &rdst);
}

static void begin_close(struct conn *c, bool from_client)
{
	if (c->state != C_RUNNING && c->state != C_CONNECTING)
		return;
	c->state = C_CLOSING;
	c->close_deadline = now_ms() + CLOSE_WAIT_MS;
	struct ep *e = from_client ? &c->cl : &c->sv;
	if (!e->id)
		e = &c->cl;
	int rc = iw_cm_disconnect(e->id);
	if (rc < 0)
		fail("conn %u: disconnect: %s", c->idx, strerror(-rc));
}

static void client_next(struct conn *c)
{
	uint64_t *rng = &c->cl.rng;
	if (rnd_below(rng, 1000) < opt.disc_per_mille) {
		begin_close(c, rnd_below(rng, 2));
		return;
	}
	c->seq++;
	c->reply_done = false;
	c->tx_start = now_ms();
	send_batch(&c->cl);
	/* Sometimes pull the plug with the batch in flight. */
	if (c->state == C_RUNNING && rnd_below(rng, 1000) < opt.disc_per_mille / 2) {
		st.abrupt++;
		begin_close(c, rnd_below(rng, 2));
	}
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */

/* Copy message bytes [off, off+n) out of a receive's SGE list. */
/* Copy n message bytes from off out of the receive's SGEs. False when the
 * SGEs end first (a completion longer than its buffer): the rest of out
 * is zeroed, never left unset. */
static bool gather(const struct wr_slot *w, uint32_t off, uint8_t *out, uint32_t n)
{
	for (int i = 0; i < w->nsge && n; i++) {
		uint32_t l = w->sge[i].length;
		if (off >= l) {
			off -= l;
			continue;
		}
		uint32_t m = l - off < n ? l - off : n;
		memcpy(out, (const uint8_t *)(uintptr_t)w->sge[i].addr + off, m);
		out += m;
		n -= m;
		off = 0;
	}
	memset(out, 0, n);
	return n == 0;
}

/* Message bytes from off on equal the pattern from src; bytes past the
 * message and the gaps between SGEs are still guard bytes. */
static bool recv_bytes_ok(const struct wr_slot *w, uint32_t msg_len, uint32_t src, const struct ep *e)
{
	uint32_t pos = 0;
	const uint8_t *slot = e->recv + (size_t)w->recv_slot * RECV_SLOT;
	const uint8_t *cur = slot;
	for (int i = 0; i < w->nsge; i++) {
		const uint8_t *a = (const uint8_t *)(uintptr_t)w->sge[i].addr;
		for (; cur < a; cur++)
			if (*cur != GUARD)
				return false;
		for (uint32_t j = 0; j < w->sge[i].length; j++, pos++) {
			if (pos < HDR_LEN)
				continue;
			uint8_t want = pos < msg_len ? pat[src + pos - HDR_LEN] : GUARD;
			if (a[j] != want)
				return false;
		}
		cur = a + w->sge[i].length;
	}
	for (; cur < slot + RECV_SLOT; cur++)
		if (*cur != GUARD)
			return false;
	return true;
}

static bool guard_ok(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != GUARD)
			return false;
	return true;
}

static void reply_batch(struct ep *e);

static void on_recv(struct ep *e, struct wr_slot *w, const struct iw_wc *wc)
{
	struct conn *c = e->c;
	uint32_t n = wc->byte_len;
	e->rx_msgs++;
	if (n == 0) {
		CHECK(!(wc->flags & IW_WC_WITH_INV), "conn %u: empty message with invalidate", c->idx);
		CHECK(recv_bytes_ok(w, 0, 0, e), "conn %u: empty message changed its buffer", c->idx);
		st.msgs_verified++;
		goto repost;
	}
	struct hdr h;
	if (n < HDR_LEN || n > HDR_LEN + SEND_MAX) {
		fail("conn %u: message of %u bytes", c->idx, n);
		goto repost;
	}
	if (!gather(w, 0, (uint8_t *)&h, HDR_LEN)) {
		fail("conn %u: message of %u bytes is longer than its receive", c->idx, n);
		goto repost;
	}
	uint32_t hash = h.hash;
	h.hash = 0;
	if (h.magic != MAGIC || fnv(&h, sizeof(h)) != hash || h.conn != c->idx || h.epoch != c->epoch ||
	    h.len != n || h.from_client == e->client || h.body_src > PAT_SIZE - (n - HDR_LEN)) {
		fail("conn %u: bad header (len %u, magic %08x, conn %u, epoch %u/%u)", c->idx, n, h.magic, h.conn,
		     h.epoch, c->epoch);
		goto repost;
	}
	if (opt.corrupt_every && n > HDR_LEN && ++st.corrupt_count % opt.corrupt_every == 0) {
		/* Self-test of the checker: flip the message's last byte, in
		 * place (one walk over the SGEs, nothing read into a copy). */
		uint32_t off = n - 1;
		for (int i = 0; i < w->nsge; i++) {
			if (off < w->sge[i].length) {
				uint8_t *last = (uint8_t *)(uintptr_t)w->sge[i].addr + off;
				*last = (uint8_t)~*last;
				st.injected++;
				break;
			}
			off -= w->sge[i].length;
		}
	}
	/* A damaged body is reported; the header is sound, so the
	 * transaction goes on. */
	if (!recv_bytes_ok(w, n, h.body_src, e)) {
		fail("conn %u: message body corrupted (seq %u, %u bytes)", c->idx, h.seq, n);
	} else {
		st.msgs_verified++;
		st.bytes_verified += n;
	}
	CHECK(h.index + 1u == e->rx_msgs && h.index < h.count,
	      "conn %u: message %u of %u arrived as number %u", c->idx, h.index, h.count, e->rx_msgs);
	bool inv = wc->flags & IW_WC_WITH_INV;
	CHECK(inv == (h.kind == K_SEND_INV), "conn %u: invalidate flag %d for kind %u", c->idx, inv, h.kind);
	if (inv) {
		CHECK(wc->invalidated_stag == iw_mr_stag(e->inv_mr), "conn %u: invalidated %08x, target %08x",
		      c->idx, wc->invalidated_stag, iw_mr_stag(e->inv_mr));
		inv_renew(e);
	}
	if (h.inv_gen > e->peer_inv_gen) {
		e->peer_inv = h.inv_stag;
		e->peer_inv_gen = h.inv_gen;
		e->peer_inv_ok = true;
	}
	if (h.w_len || h.kind == K_WRITE) {
		uint8_t *d = e->sink + h.w_dst;
		if (h.w_dst > SINK_HALF || h.w_len > SINK_HALF - h.w_dst || h.w_src > PAT_SIZE - h.w_len ||
		    memcmp(d, pat + h.w_src, h.w_len) != 0) {
			fail("conn %u: WRITE data corrupted (seq %u, %u bytes at %u)", c->idx, h.seq, h.w_len, h.w_dst);
		} else {
			st.bytes_verified += h.w_len;
			memset(d, GUARD, h.w_len); /* stale data must not verify later */
		}
		CHECK(guard_ok(e->sink + 2 * (size_t)SINK_HALF, SINK_GUARD), "conn %u: sink guard changed", c->idx);
	}
	if (h.index + 1u == h.count) {
		CHECK(e->rx_msgs == h.count, "conn %u: batch of %u closed after %u messages", c->idx, h.count,
		      e->rx_msgs);
		e->rx_msgs = 0;
		if (e->client) {
			CHECK(h.seq == c->seq, "conn %u: reply for seq %u, expected %u", c->idx, h.seq, c->seq);
			c->reply_done = true;
		} else if (c->state == C_RUNNING || c->state == C_CONNECTING) {
			c->seq = h.seq;
			reply_batch(e);
		}
	}
repost:
	if (c->state != C_CLOSING)
		post_recv(e, w->recv_slot);
}

static void reply_batch(struct ep *e)
{
	struct conn *c = e->c;
	uint8_t n = (uint8_t)(1 + rnd_below(&e->rng, MAX_BATCH));
	uint32_t wdst = 0, rdst = 0;
	for (uint8_t i = 0; i < n && c->state != C_CLOSING; i++)
		send_one(e, i, n, &wdst, &rdst);
}

static void on_wc(struct ep *e, const struct iw_wc *wc)
{
	struct conn *c = e->c;
	struct wr_slot *w = &e->wr[wc->wr_id % WR_CAP];
	if (!w->busy || w->id != wc->wr_id) {
		fail("conn %u: completion for wr %" PRIu64 " not outstanding (twice?)", c->idx, wc->wr_id);
		return;
	}
	w->busy = false;
	e->outstanding--;
	bool recv = w->kind == K_NKIND;
	CHECK(wc->qp == e->qp, "conn %u: completion names another QP", c->idx);
	CHECK(recv == (wc->opcode == IW_WC_RECV), "conn %u: completion opcode %d for kind %u", c->idx, wc->opcode,
	      w->kind);
	if (!recv && e->client && e->tx_pending)
		e->tx_pending--;
	if (wc->status != IW_WC_SUCCESS) {
		if (c->state == C_CLOSING &&
		    (wc->status == IW_WC_WR_FLUSH_ERR || wc->status == IW_WC_FATAL_ERR))
			st.flushed++;
		else
			fail("conn %u: %s %s (state %d, cause %u/%u/%u)", c->idx, recv ? "recv" : kind_name[w->kind],
			     iw_wc_status_str(wc->status), c->state, wc->cause.layer, wc->cause.etype, wc->cause.ecode);
		return;
	}
	if (recv) {
		on_recv(e, w, wc);
	} else if (w->kind == K_READ) {
		CHECK(wc->byte_len == w->len, "conn %u: READ of %u bytes reports %u", c->idx, w->len, wc->byte_len);
		if (memcmp(e->sink + w->dst, pat + w->src, w->len) != 0)
			fail("conn %u: READ data corrupted (%u bytes)", c->idx, w->len);
		else
			st.bytes_verified += w->len;
		memset(e->sink + w->dst, GUARD, w->len);
	}
}

static void poll_ep(struct ep *e)
{
	struct iw_wc wc[32];
	int n;
	while ((n = iw_poll_cq(e->cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++)
			on_wc(e, &wc[i]);
	if (n < 0)
		fail("poll_cq: %s", strerror(-n));
}

/* ------------------------------------------------------------------ */
/* CM events                                                           */

static void on_cm_event(struct iw_cm_event *ev, bool server)
{
	struct conn *c = iw_cm_id_context(ev->id);
	if (ev->type == IW_CM_EVENT_CONNECT_REQUEST) {
		on_connect_request(ev);
		return;
	}
	if (!c) {
		fail("CM event %d for an unknown id", ev->type);
		return;
	}
	switch (ev->type) {
	case IW_CM_EVENT_ESTABLISHED:
		if (server) {
			c->s_est = true;
		} else {
			c->c_est = true;
			take_pdata(&c->cl, ev->private_data, ev->private_data_len);
		}
		break;
	case IW_CM_EVENT_DISCONNECTED:
		if (c->state != C_CLOSING) { /* the peer's disconnect reached us first */
			c->state = C_CLOSING;
			c->close_deadline = now_ms() + CLOSE_WAIT_MS;
		}
		if (server)
			c->s_disc = true;
		else
			c->c_disc = true;
		break;
	default:
		fail("conn %u: CM event %d status %d", c->idx, ev->type, ev->status);
		break;
	}
}

static void drain_cm(struct iw_cm_channel *ch, bool server)
{
	struct iw_cm_event *ev;
	while (iw_cm_get_event(ch, &ev) == 0) {
		on_cm_event(ev, server);
		iw_cm_ack_event(ev);
	}
}

/* ------------------------------------------------------------------ */
/* Driving connections                                                 */

static void ep_close_qp(struct ep *e)
{
	if (e->qp)
		must(iw_destroy_qp(e->qp), "destroy_qp");
	e->qp = NULL;
	if (e->id)
		must(iw_cm_destroy_id(e->id), "cm_destroy_id");
	e->id = NULL;
}

static void drive(struct conn *c, bool stopping)
{
	switch (c->state) {
	case C_CONNECTING:
		if (c->c_est && c->s_est) {
			c->state = C_RUNNING;
			client_next(c);
		}
		break;
	case C_RUNNING:
		if (stopping)
			begin_close(c, true);
		else if (c->reply_done && c->cl.tx_pending == 0) {
			st.transactions++;
			client_next(c);
		} else if (now_ms() - c->tx_start > TX_STUCK_MS) {
			fail("conn %u: transaction %u stuck (reply %d, send WRs outstanding %u)", c->idx, c->seq,
			     c->reply_done, c->cl.tx_pending);
			begin_close(c, true);
		}
		break;
	case C_CLOSING: {
		/* Both told, every WR back: close and (unless stopping) reconnect. */
		bool done = c->c_disc && (c->s_disc || !c->sv.id) && c->cl.outstanding == 0 && c->sv.outstanding == 0;
		if (!done) {
			if (now_ms() > c->close_deadline) {
				fail("conn %u: stuck closing (disconnected %d/%d, WRs outstanding %u/%u)", c->idx,
				     c->c_disc, c->s_disc, c->cl.outstanding, c->sv.outstanding);
				c->cl.outstanding = c->sv.outstanding = 0;
				memset(c->cl.wr, 0, sizeof(c->cl.wr));
				memset(c->sv.wr, 0, sizeof(c->sv.wr));
				c->c_disc = c->s_disc = true;
			}
			break;
		}
		ep_close_qp(&c->cl);
		ep_close_qp(&c->sv);
		c->state = C_IDLE;
		if (!stopping) {
			st.reconnects++;
			conn_start(c);
		}
		break;
	}
	case C_IDLE:
		break;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: soak [--seconds N] [--conns N] [--seed S] [--one-ctx] [--max-size BYTES]\n"
			"            [--disc-per-mille N] [--corrupt-every N] [--verbose]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--one-ctx")) {
			opt.one_ctx = true;
		} else if (!strcmp(a, "--verbose")) {
			opt.verbose = true;
		} else if (v && !strcmp(a, "--seconds")) {
			opt.seconds = (unsigned)strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--conns")) {
			opt.conns = (unsigned)strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--seed")) {
			opt.seed = strtoull(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--max-size")) {
			opt.max_size = (uint32_t)strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--corrupt-every")) {
			opt.corrupt_every = (unsigned)strtoul(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "--disc-per-mille")) {
			opt.disc_per_mille = (unsigned)strtoul(v, NULL, 0), i++;
		} else {
			usage();
		}
	}
	if (!opt.conns || opt.conns > 512 || opt.max_size > SINK_HALF)
		usage();

	pat = xalloc(PAT_SIZE);
	uint64_t ps = opt.seed ^ 0xC0FFEEull;
	for (size_t i = 0; i < PAT_SIZE; i += 8) {
		uint64_t x = rnd(&ps);
		memcpy(pat + i, &x, 8);
	}

	struct iw_context_attr ca = { 0 }, sa = { .flags = IW_CTX_PROGRESS_THREAD };
	must(iw_context_create(&ca, &ctx_c), "context_create");
	if (opt.one_ctx)
		ctx_s = ctx_c;
	else
		must(iw_context_create(&sa, &ctx_s), "context_create (thread)");
	must(iw_cm_create_channel(ctx_c, &ch_c), "cm channel");
	must(iw_cm_create_channel(ctx_s, &ch_s), "cm channel");
	must(iw_cm_create_id(ch_s, NULL, &listener), "cm id");
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	must(iw_cm_listen(listener, (struct sockaddr *)&any, 128), "listen");
	must(iw_cm_local_addr(listener, &laddr), "local_addr");

	conns = calloc(opt.conns, sizeof(*conns));
	if (!conns)
		return 2;
	for (uint32_t i = 0; i < opt.conns; i++) {
		struct conn *c = &conns[i];
		c->idx = i;
		ep_init(&c->cl, c, true, ctx_c);
		ep_init(&c->sv, c, false, ctx_s);
	}
	for (uint32_t i = 0; i < opt.conns; i++)
		conn_start(&conns[i]);

	uint64_t start = now_ms(), end = start + opt.seconds * 1000ull, last = start;
	bool stopping = false;
	for (;;) {
		uint64_t t = now_ms();
		if (!stopping && t >= end)
			stopping = true;
		if (stopping) {
			bool all_idle = true;
			for (uint32_t i = 0; i < opt.conns; i++)
				all_idle &= conns[i].state == C_IDLE;
			if (all_idle)
				break;
			if (t > end + 2u * CLOSE_WAIT_MS) {
				fail("connections did not close in time");
				break;
			}
		}
		int rc = iw_progress(ctx_c, 1);
		if (rc < 0)
			fail("progress: %s", strerror(-rc));
		drain_cm(ch_c, false);
		drain_cm(ch_s, true);
		for (uint32_t i = 0; i < opt.conns; i++) {
			poll_ep(&conns[i].cl);
			poll_ep(&conns[i].sv);
		}
		for (uint32_t i = 0; i < opt.conns; i++)
			drive(&conns[i], stopping);
		if (opt.verbose && t - last >= 5000) {
			last = t;
			fprintf(stderr, "soak: %" PRIu64 " s: %" PRIu64 " transactions, %" PRIu64 " bytes verified, %" PRIu64
					" reconnects, %" PRIu64 " errors\n",
				(t - start) / 1000, st.transactions, st.bytes_verified, st.reconnects, st.errors);
		}
	}

	for (uint32_t i = 0; i < opt.conns; i++) {
		ep_close_qp(&conns[i].cl);
		ep_close_qp(&conns[i].sv);
		ep_fini(&conns[i].cl);
		ep_fini(&conns[i].sv);
	}
	must(iw_cm_destroy_id(listener), "destroy listener");
	must(iw_cm_destroy_channel(ch_c), "destroy channel");
	must(iw_cm_destroy_channel(ch_s), "destroy channel");
	if (ctx_s != ctx_c) {
		int rc = iw_context_destroy(ctx_s);
		CHECK(rc == 0, "server context destroy: %s", strerror(-rc));
	}
	int rc = iw_context_destroy(ctx_c);
	CHECK(rc == 0, "client context destroy: %s", strerror(-rc));
	free(conns);
	free(pat);

	double secs = (double)(now_ms() - start) / 1000.0;
	printf("soak: %u connections (%u QPs), %s, seed %" PRIu64 ", %.1f s\n", opt.conns, 2 * opt.conns,
	       opt.one_ctx ? "one context (poll loop)" : "two contexts (poll loop + progress thread)", opt.seed,
	       secs);
	printf("soak: ops:");
	uint64_t total = 0;
	for (int k = 0; k < K_NKIND; k++) {
		printf(" %s %" PRIu64, kind_name[k], st.ops[k]);
		total += st.ops[k];
	}
	printf(" (total %" PRIu64 ")\n", total);
	printf("soak: transactions %" PRIu64 ", messages verified %" PRIu64 ", bytes verified %" PRIu64 "\n",
	       st.transactions, st.msgs_verified, st.bytes_verified);
	printf("soak: work requests %" PRIu64 " (flushed at disconnect %" PRIu64 "), reconnects %" PRIu64
	       " (%" PRIu64 " with traffic in flight)\n",
	       st.wrs, st.flushed, st.reconnects, st.abrupt);
	if (opt.corrupt_every) {
		/* Self-test: every injected corruption, and nothing else, found. */
		printf("soak: self-test: %" PRIu64 " corruptions injected, %" PRIu64 " errors reported\n", st.injected,
		       st.errors);
		return st.injected > 0 && st.errors == st.injected ? 0 : 1;
	}
	printf("soak: errors %" PRIu64 "\n", st.errors);
	return st.errors ? 1 : 0;
}
