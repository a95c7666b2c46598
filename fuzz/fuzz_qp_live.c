/* Stateful fuzzing of a live QP: a real context, PDs, CQs, a QP and
 * memory regions of every access kind, connected after a real MPA
 * negotiation (the peer's Request or Reply is part of the input and is
 * decoded and answered by the library's MPA code), then fed the rest of
 * the input as the peer's byte stream in input-chosen chunks, with verbs
 * calls interleaved (post receive/send/WRITE/READ, dereg, rereg,
 * disconnect, peer FIN/RST). Input format and layout: qp_live.h.
 *
 * Bytes enter through a test transport defined here (deterministic, no
 * sockets): it feeds the QP's engine exactly as the TCP and pipe
 * transports do, and pulls everything the QP sends.
 *
 * Invariants, checked on every input:
 *  - memory: bytes of the arena change only where the peer may write
 *    (regions with remote write, while registered and valid), in posted
 *    receive buffers and in READ sinks; everything else (guard gaps, other
 *    PD, read-only and no-rights regions, deregistered / re-registered
 *    memory from that call on, memory invalidated by the peer from the end
 *    of the chunk that carried the invalidation on) stays as it was;
 *  - every posted WR completes at most once, and exactly once after the
 *    stream ends; completions carry plausible lengths and opcodes;
 *  - teardown converges (bounded progress rounds) and every object can
 *    be destroyed (no reference left behind), the context too;
 *  - what the QP sends is well-formed MPA for the negotiated CRC and
 *    markers, FPDUs no larger than MULPDU, nothing after a Terminate;
 *  - no crash, UB or leak (sanitizers, libFuzzer's leak check).
 * STag keys are random in the library; the harness overwrites them with
 * fixed keys (QPL_KEY) so inputs can name valid STags. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "fuzz_common.h"
#include "mpa/mpa_negotiate.h"
#include "qp_live.h"
#include "rdmap/rdmap_wire.h"
#include "stack/internal.h"

#define MAX_WR 128
#define PROGRESS_ROUNDS 256

static const uint16_t chunk_sizes[32] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20, 24, 28,
	31, 36, 44, 48, 64, 100, 128, 255, 512, 700, 1024, 1448, 1500, 2048, 4096, 16384,
};
static const uint32_t mulpdus[4] = { 1448, 256, 4096, 49 };

enum wr_kind { WK_RECV, WK_SEND, WK_WRITE, WK_READ };

struct wr_rec {
	uint8_t kind;
	uint8_t done;
	uint32_t len;
};

struct fz_transport {
	struct iw_transport t;
	struct fz *f;
	bool shut, destroyed;
};

struct fz {
	struct iw_context *ctx;
	struct iw_pd *pd, *pd2;
	struct iw_cq *scq, *rcq;
	struct iw_qp *qp;
	struct iw_srq *srq; /* receives come from here (QPL_MODE_SRQ) */
	struct iw_mr *mr[QPL_N_MR + 1];
	uint32_t mr_off[QPL_N_MR + 1], mr_len[QPL_N_MR + 1];
	bool frozen_mr[QPL_N_MR + 1]; /* its range was frozen after invalidation */
	uint8_t spare_key;
	struct fz_transport tr;
	bool feed_copy;
	bool peer_closed;
	uint32_t mulpdu;
	struct iw_mpa_rx out_rx; /* checks what the QP sends */
	bool term_out;           /* it sent a whole Terminate: nothing may follow */
	bool term_open;          /* a Terminate's first segments went out: only its rest may follow */
	struct wr_rec wr[MAX_WR];
	uint32_t n_wr;
	uint32_t recv_next, read_next;
	uint64_t rng;
};

/* The arena, its expected contents and which bytes may change. */
static uint8_t *arena;
static uint8_t shadow[QPL_ARENA_SIZE];
static uint8_t allowed[QPL_ARENA_SIZE];

static void arena_map(void)
{
	if (arena)
		return;
	void *p = mmap((void *)(uintptr_t)QPL_ARENA_BASE, QPL_ARENA_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED) {
		/* Still fuzzes, but seeds' addresses miss the regions. */
		fprintf(stderr, "fuzz_qp_live: arena not at its fixed address\n");
		p = mmap(NULL, QPL_ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		FUZZ_CHECK(p != MAP_FAILED);
	}
	arena = p;
}

static void arena_reset(void)
{
	static uint8_t fill[QPL_ARENA_SIZE];
	static bool filled;
	if (!filled) {
		for (size_t i = 0; i < QPL_ARENA_SIZE; i++)
			fill[i] = (uint8_t)(i * 13u + 7u + (i >> 8));
		filled = true;
	}
	memcpy(arena, fill, QPL_ARENA_SIZE);
	memcpy(shadow, fill, QPL_ARENA_SIZE);
	memset(allowed, 0, QPL_ARENA_SIZE);
}

static void check_range(uint32_t off, uint32_t len)
{
	if (!memcmp(arena + off, shadow + off, len))
		return; /* nothing changed at all */
	for (uint32_t i = off; i < off + len; i++) {
		if (!allowed[i] && arena[i] != shadow[i]) {
			fprintf(stderr, "fuzz_qp_live: byte at arena offset 0x%x changed (0x%02x -> 0x%02x)\n", i,
				shadow[i], arena[i]);
			FUZZ_CHECK(!"memory outside writable ranges changed");
		}
	}
}

/* The range may change from now on (checked untouched up to here). */
static void allow(uint32_t off, uint32_t len)
{
	check_range(off, len);
	memset(allowed + off, 1, len);
}

/* The range must not change from now on. */
static void freeze(uint32_t off, uint32_t len)
{
	memcpy(shadow + off, arena + off, len);
	memset(allowed + off, 0, len);
}

static uint64_t va(uint32_t off)
{
	return (uint64_t)(uintptr_t)(arena + off);
}

/* ------------------------------------------------------------------ */
/* Test transport                                                      */

static void out_check(struct fz *f, const uint8_t *p, size_t len)
{
	while (len) {
		struct iw_mpa_rx_event ev;
		size_t k = iw_mpa_rx_feed(&f->out_rx, p, len, &ev);
		FUZZ_CHECK(ev.type != IW_MPA_RX_ERROR);
		if (ev.type == IW_MPA_RX_HEADER) {
			FUZZ_CHECK(ev.ulpdu_len <= f->mulpdu);
			FUZZ_CHECK(ev.hdr_len >= 2);
			/* A MULPDU smaller than the Terminate (with its copied
			 * headers) cuts it into DDP segments like any untagged
			 * message; after its last segment nothing follows. */
			bool term = iw_rdmap_opcode_of(ev.hdr[1]) == IW_OP_TERMINATE;
			FUZZ_CHECK(!f->term_out && (!f->term_open || term));
			if (term) {
				f->term_open = true;
				f->term_out = (ev.hdr[0] & IW_DDP_CTRL_LAST) != 0;
			}
			iw_mpa_rx_set_sink(&f->out_rx, NULL, 0);
		}
		FUZZ_CHECK(k <= len);
		FUZZ_CHECK(k > 0 || ev.type != IW_MPA_RX_NONE);
		p += k;
		len -= k;
	}
}

/* Everything the QP has to send goes out at once (a peer that reads
 * fast): no linger timer ever has to expire. */
static void tr_kick(struct iw_transport *t)
{
	struct fz_transport *ft = (struct fz_transport *)t;
	struct iw_qp *qp = t->qp;
	struct iovec iov[512];

	if (!qp || ft->shut || ft->destroyed)
		return;
	for (int rounds = 0; rounds < 4096; rounds++) {
		size_t bytes = 0;
		int n = iw_rdmap_tx_pull(&qp->conn, iov, 512, 1u << 20, &bytes);
		FUZZ_CHECK(n >= 0);
		if (n == 0)
			return;
		size_t sum = 0;
		for (int i = 0; i < n; i++) {
			out_check(ft->f, iov[i].iov_base, iov[i].iov_len);
			sum += iov[i].iov_len;
		}
		FUZZ_CHECK(sum == bytes);
		iw_rdmap_tx_ack(&qp->conn, bytes);
	}
	FUZZ_CHECK(!"transmit never drains");
}

static void tr_shutdown(struct iw_transport *t, bool abortive)
{
	(void)abortive;
	((struct fz_transport *)t)->shut = true;
}

static void tr_destroy(struct iw_transport *t)
{
	struct fz_transport *ft = (struct fz_transport *)t;
	ft->destroyed = true;
	t->qp = NULL;
}

/* Like the TCP transport, kicks may come straight from iw_post_send. */
static const struct iw_transport_ops tr_ops = {
	.kick = tr_kick, .shutdown = tr_shutdown, .destroy = tr_destroy, .kick_from_post = true,
};

/* ------------------------------------------------------------------ */
/* Completions and progress                                            */

static void on_invalidated(struct fz *f)
{
	/* A Send with Invalidate took effect inside the last feed: from now
	 * on nothing may land in that region. */
	/* No peer may invalidate a region of another PD. */
	FUZZ_CHECK(f->mr[QPL_MR_OTHER_PD]->valid);
	for (int i = 1; i <= QPL_N_MR; i++) {
		struct iw_mr *mr = f->mr[i];
		if (mr && !mr->valid && !f->frozen_mr[i]) {
			f->frozen_mr[i] = true;
			freeze(f->mr_off[i], f->mr_len[i]);
		}
	}
}

static void poll_cq(struct fz *f, struct iw_cq *cq, bool recv)
{
	struct iw_wc wc[16];
	int n;

	while ((n = iw_poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			FUZZ_CHECK(wc[i].qp == f->qp);
			FUZZ_CHECK(wc[i].wr_id < f->n_wr);
			struct wr_rec *w = &f->wr[wc[i].wr_id];
			FUZZ_CHECK(!w->done); /* at most once */
			w->done = 1;
			FUZZ_CHECK(wc[i].status <= IW_WC_FATAL_ERR);
			FUZZ_CHECK((w->kind == WK_RECV) == recv);
			static const enum iw_wc_opcode op_of[] = { IW_WC_RECV, IW_WC_SEND, IW_WC_RDMA_WRITE,
								   IW_WC_RDMA_READ };
			FUZZ_CHECK(wc[i].opcode == op_of[w->kind]);
			if (wc[i].status == IW_WC_SUCCESS && (w->kind == WK_RECV || w->kind == WK_READ))
				FUZZ_CHECK(wc[i].byte_len <= w->len);
			if (wc[i].status != IW_WC_SUCCESS)
				FUZZ_CHECK(wc[i].flags == 0 || w->kind == WK_RECV);
		}
	}
	FUZZ_CHECK(n == 0);
}

static void poll_all(struct fz *f)
{
	on_invalidated(f);
	poll_cq(f, f->scq, false);
	poll_cq(f, f->rcq, true);
}

/* Run deferred work until the context is idle. Returns false if it
 * never became idle. */
static bool progress(struct fz *f)
{
	for (int i = 0; i < PROGRESS_ROUNDS; i++) {
		int n = iw_progress(f->ctx, 0);
		FUZZ_CHECK(n >= 0);
		poll_all(f);
		if (n == 0 && !f->ctx->deferred)
			return true;
	}
	return false;
}

/* Hand stream bytes to the QP as a transport would. */
static void feed(struct fz *f, const uint8_t *p, size_t len)
{
	struct iw_qp *qp = f->qp;

	iw_ctx_lock(f->ctx);
	if (f->tr.shut || f->peer_closed || qp->conn.state != IW_RDMAP_ST_RTS) {
		iw_ctx_unlock(f->ctx); /* nobody reads any more: the bytes are lost */
		return;
	}
	if (f->feed_copy) {
		size_t k = iw_rdmap_rx_feed(&qp->conn, p, len);
		FUZZ_CHECK(k <= len);
		FUZZ_CHECK(k == len || qp->conn.state != IW_RDMAP_ST_RTS);
	} else {
		size_t used = 0;
		while (used < len && qp->conn.state == IW_RDMAP_ST_RTS) {
			struct iovec rv[16];
			int k = iw_rdmap_rx_prepare(&qp->conn, rv, 16);
			FUZZ_CHECK(k >= 0 && k <= 16);
			if (k == 0)
				break;
			size_t got = 0;
			for (int i = 0; i < k && used + got < len; i++) {
				size_t m = rv[i].iov_len < len - used - got ? rv[i].iov_len : len - used - got;
				memcpy(rv[i].iov_base, p + used + got, m);
				got += m;
			}
			iw_rdmap_rx_commit(&qp->conn, got);
			used += got;
		}
	}
	iw_ctx_unlock(f->ctx);
	on_invalidated(f);
}

static void peer_close(struct fz *f, int err)
{
	if (f->peer_closed)
		return;
	f->peer_closed = true;
	iw_ctx_lock(f->ctx);
	if (!f->tr.destroyed)
		iw_qp_transport_closed(f->qp, err);
	iw_ctx_unlock(f->ctx);
}

/* ------------------------------------------------------------------ */
/* Objects                                                             */

static void force_key(struct fz *f, struct iw_mr *mr, uint8_t key)
{
	iw_ctx_lock(f->ctx);
	uint32_t idx = mr->stag >> 8;
	mr->stag = idx << 8 | key;
	f->ctx->mr_key[idx] = key;
	iw_ctx_unlock(f->ctx);
}

static void reg(struct fz *f, int i, struct iw_pd *pd, uint32_t off, uint32_t len, unsigned access)
{
	FUZZ_CHECK(iw_reg_mr(pd, arena + off, len, access, &f->mr[i]) == 0);
	FUZZ_CHECK(iw_mr_stag(f->mr[i]) >> 8 == (uint32_t)i);
	force_key(f, f->mr[i], QPL_KEY(i));
	f->mr_off[i] = off;
	f->mr_len[i] = len;
	if (access & IW_ACCESS_REMOTE_WRITE && pd == f->pd)
		allow(off, len);
}

static uint32_t record(struct fz *f, enum wr_kind kind, uint32_t len)
{
	f->wr[f->n_wr] = (struct wr_rec){ .kind = (uint8_t)kind, .len = len };
	return f->n_wr;
}

static void post_recv(struct fz *f, bool two)
{
	if (f->n_wr >= MAX_WR)
		return;
	uint32_t off = QPL_OFF_LW + f->recv_next;
	f->recv_next = (f->recv_next + QPL_RECV_LEN) % QPL_READ_SINK;
	struct iw_sge sge[2] = {
		{ va(off), QPL_RECV_LEN, iw_mr_stag(f->mr[QPL_MR_LW]) },
		{ va(QPL_OFF_RW + 0x100), 0x80, iw_mr_stag(f->mr[QPL_MR_RW]) },
	};
	struct iw_recv_wr wr = { .wr_id = record(f, WK_RECV, QPL_RECV_LEN + (two ? 0x80 : 0)), .sg_list = sge,
				 .num_sge = two ? 2 : 1 };
	allow(off, QPL_RECV_LEN);
	struct iw_recv_wr *bad = NULL;
	int rc = f->srq ? iw_post_srq_recv(f->srq, &wr, &bad) : iw_post_recv(f->qp, &wr, &bad);
	FUZZ_CHECK(rc <= 0);
	if (rc == 0)
		f->n_wr++;
	else
		FUZZ_CHECK(bad == &wr);
}

static void post_send(struct fz *f, enum iw_wr_opcode op, unsigned flags)
{
	if (f->n_wr >= MAX_WR)
		return;
	uint32_t len = (uint32_t)fuzz_range(&f->rng, 0, QPL_LEN_RR);
	if (flags & IW_SEND_INLINE)
		len %= 65;
	struct iw_sge sge = { va(QPL_OFF_RR), len, iw_mr_stag(f->mr[QPL_MR_RR]) };
	enum wr_kind kind = WK_SEND;
	struct iw_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = flags,
				 .rkey = QPL_PEER_STAG, .remote_addr = 0x1000,
				 .invalidate_rkey = QPL_PEER_STAG };
	if (op == IW_WR_RDMA_WRITE) {
		kind = WK_WRITE;
	} else if (op == IW_WR_RDMA_READ) {
		kind = WK_READ;
		uint32_t off = QPL_OFF_LW + QPL_READ_SINK + f->read_next;
		f->read_next = (f->read_next + QPL_READ_LEN) % (QPL_LEN_LW - QPL_READ_SINK);
		len %= QPL_READ_LEN + 1;
		sge = (struct iw_sge){ va(off), len, iw_mr_stag(f->mr[QPL_MR_LW]) };
		allow(off, QPL_READ_LEN);
	}
	wr.wr_id = record(f, kind, len);
	struct iw_send_wr *bad = NULL;
	int rc = iw_post_send(f->qp, &wr, &bad);
	FUZZ_CHECK(rc <= 0);
	if (rc == 0)
		f->n_wr++;
	else
		FUZZ_CHECK(bad == &wr);
}

/* Deregister the spare region, or register it again (at the other
 * place) when it is gone. */
static void dereg_spare(struct fz *f)
{
	struct iw_mr *mr = f->mr[QPL_MR_SPARE];
	if (mr) {
		int rc = iw_dereg_mr(mr);
		FUZZ_CHECK(rc == 0 || rc == -EBUSY);
		if (rc == 0) {
			f->mr[QPL_MR_SPARE] = NULL;
			freeze(f->mr_off[QPL_MR_SPARE], QPL_LEN_SPARE);
		}
		return;
	}
	uint32_t off = f->mr_off[QPL_MR_SPARE] == QPL_OFF_SPARE_A ? QPL_OFF_SPARE_B : QPL_OFF_SPARE_A;
	FUZZ_CHECK(iw_reg_mr(f->pd, arena + off, QPL_LEN_SPARE, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE,
			     &f->mr[QPL_MR_SPARE]) == 0);
	f->spare_key++;
	force_key(f, f->mr[QPL_MR_SPARE], f->spare_key);
	f->mr_off[QPL_MR_SPARE] = off;
	f->frozen_mr[QPL_MR_SPARE] = false;
	allow(off, QPL_LEN_SPARE);
}

/* Re-register the spare region at the other place: its old STag and
 * place must be dead from now on. */
static void rereg_spare(struct fz *f)
{
	struct iw_mr *mr = f->mr[QPL_MR_SPARE];
	if (!mr)
		return;
	uint32_t old = f->mr_off[QPL_MR_SPARE];
	uint32_t off = old == QPL_OFF_SPARE_A ? QPL_OFF_SPARE_B : QPL_OFF_SPARE_A;
	uint32_t old_stag = iw_mr_stag(mr);
	int rc = iw_rereg_mr(mr, arena + off, QPL_LEN_SPARE, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	FUZZ_CHECK(rc == 0 || rc == -EBUSY);
	if (rc < 0)
		return;
	FUZZ_CHECK(iw_mr_stag(mr) != old_stag);
	f->spare_key++;
	force_key(f, mr, f->spare_key);
	freeze(old, QPL_LEN_SPARE);
	f->mr_off[QPL_MR_SPARE] = off;
	f->frozen_mr[QPL_MR_SPARE] = false;
	allow(off, QPL_LEN_SPARE);
}

static void api(struct fz *f, unsigned which)
{
	switch (which) {
	case QPL_API_POST_RECV:
		post_recv(f, false);
		break;
	case QPL_API_POST_RECV2:
		post_recv(f, true);
		break;
	case QPL_API_SEND:
		post_send(f, IW_WR_SEND, 0);
		break;
	case QPL_API_SEND_INLINE:
		post_send(f, IW_WR_SEND_WITH_SE, IW_SEND_INLINE);
		break;
	case QPL_API_SEND_INV:
		post_send(f, IW_WR_SEND_WITH_INV, 0);
		break;
	case QPL_API_WRITE:
		post_send(f, IW_WR_RDMA_WRITE, 0);
		break;
	case QPL_API_READ:
		post_send(f, IW_WR_RDMA_READ, 0);
		break;
	case QPL_API_DEREG:
		dereg_spare(f);
		break;
	case QPL_API_REREG:
		rereg_spare(f);
		break;
	case QPL_API_DISCONNECT:
		iw_ctx_lock(f->ctx);
		iw_qp_disconnect(f->qp);
		iw_ctx_unlock(f->ctx);
		break;
	case QPL_API_PEER_FIN:
		peer_close(f, 0);
		break;
	case QPL_API_PEER_RST:
		peer_close(f, -ECONNRESET);
		break;
	case QPL_API_SEND_FENCE:
		post_send(f, IW_WR_SEND, IW_SEND_FENCE);
		break;
	default:
		break;
	}
	FUZZ_CHECK(progress(f));
}

/* ------------------------------------------------------------------ */
/* Handshake                                                           */

/* The MPA exchange with the input's frame as the peer's. Returns the
 * frame's length, or 0 when there is no connection. */
static size_t handshake(uint8_t mode, uint8_t irdord, const uint8_t *data, size_t size,
			struct iw_mpa_outcome *out)
{
	struct iw_mpa_settings s;
	struct iw_mpa_frame mine, peer;
	enum iw_mpa_frame_error why;
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];

	iw_mpa_settings_default(&s);
	s.crc = mode & QPL_MODE_CRC_OFF ? IW_MPA_CRC_OFF : IW_MPA_CRC_ON;
	s.markers_wanted = mode & QPL_MODE_MARKERS;
	s.ird = irdord & 0x0F;
	s.ord = irdord >> 4;
	s.min_rev = 1;
	bool initiator = mode & QPL_MODE_INITIATOR;
	enum iw_mpa_frame_kind kind = initiator ? IW_MPA_REPLY : IW_MPA_REQUEST;
	ssize_t fl = iw_mpa_frame_decode(data, size, kind, 0, 0, &peer, &why);
	if (fl <= 0)
		return 0;
	enum iw_mpa_reject_reason r;
	if (initiator) {
		iw_mpa_make_request(&s, (const uint8_t *)"qp_live", 7, &mine);
		FUZZ_CHECK(iw_mpa_frame_encode(&mine, buf, sizeof(buf), NULL) > 0);
		r = iw_mpa_initiator_check(&s, &mine, &peer, out);
	} else {
		r = iw_mpa_respond(&s, &peer, (const uint8_t *)"qp_live", 7, &mine, out);
		FUZZ_CHECK(iw_mpa_frame_encode(&mine, buf, sizeof(buf), NULL) > 0);
	}
	if (r != IW_MPA_OK)
		return 0;
	FUZZ_CHECK(out->ird <= 0x3FFF && out->ord <= 0x3FFF);
	return (size_t)fl;
}

/* ------------------------------------------------------------------ */

static void setup(struct fz *f, uint8_t mode, const struct iw_mpa_outcome *o)
{
	struct iw_context_attr ca = { 0 };
	FUZZ_CHECK(iw_context_create(&ca, &f->ctx) == 0);
	FUZZ_CHECK(iw_alloc_pd(f->ctx, &f->pd) == 0);
	FUZZ_CHECK(iw_alloc_pd(f->ctx, &f->pd2) == 0);
	FUZZ_CHECK(iw_create_cq(f->ctx, 2 * MAX_WR, NULL, &f->scq) == 0);
	FUZZ_CHECK(iw_create_cq(f->ctx, 2 * MAX_WR, NULL, &f->rcq) == 0);
	const unsigned lw = IW_ACCESS_LOCAL_WRITE, rw = IW_ACCESS_REMOTE_WRITE, rr = IW_ACCESS_REMOTE_READ;
	reg(f, QPL_MR_RW, f->pd, QPL_OFF_RW, QPL_LEN_RW, lw | rw | rr);
	reg(f, QPL_MR_LW, f->pd, QPL_OFF_LW, QPL_LEN_LW, lw);
	reg(f, QPL_MR_RR, f->pd, QPL_OFF_RR, QPL_LEN_RR, rr);
	reg(f, QPL_MR_OTHER_PD, f->pd2, QPL_OFF_OTHER, QPL_LEN_OTHER, lw | rw | rr);
	reg(f, QPL_MR_NONE, f->pd, QPL_OFF_NONE, QPL_LEN_NONE, 0);
	reg(f, QPL_MR_SPARE, f->pd, QPL_OFF_SPARE_A, QPL_LEN_SPARE, lw | rw);
	reg(f, QPL_MR_WO, f->pd, QPL_OFF_WO, QPL_LEN_WO, lw | rw);
	f->spare_key = QPL_KEY(QPL_MR_SPARE);

	struct iw_qp_init_attr qa = { .send_cq = f->scq, .recv_cq = f->rcq, .sq_sig_all = true,
				      .cap = { .max_send_wr = 32, .max_recv_wr = 32 } };
	if ((mode & QPL_MODE_SRQ) == QPL_MODE_SRQ) {
		struct iw_srq_init_attr sa = { .max_wr = 32, .max_sge = 4 };
		FUZZ_CHECK(iw_create_srq(f->pd, &sa, &f->srq) == 0);
		qa.srq = f->srq;
	}
	FUZZ_CHECK(iw_create_qp(f->pd, &qa, &f->qp) == 0);

	f->mulpdu = mulpdus[(mode >> 4) & 3];
	struct iw_qp_conn_params p = {
		.crc = o->crc, .markers_tx = o->markers_tx, .markers_rx = o->markers_rx,
		.ird = o->ird, .ord = o->ord, .mulpdu = f->mulpdu,
	};
	struct iw_mpa_rx_config oc = { .crc = o->crc, .markers = o->markers_tx, .ulp_lens = iw_rdmap_ulp_lens };
	iw_mpa_rx_init(&f->out_rx, &oc);
	f->tr = (struct fz_transport){ .t = { .ops = &tr_ops }, .f = f };
	iw_ctx_lock(f->ctx);
	int rc = iw_qp_connect_start(f->qp, &p, &f->tr.t);
	iw_ctx_unlock(f->ctx);
	FUZZ_CHECK(rc == 0);

	for (int k = 0; k < QPL_PRE_RECV; k++)
		post_recv(f, false);
	/* READs of our own outstanding, so Read Responses have a match. */
	for (uint32_t k = 0; k < 2 && k < o->ord; k++) {
		uint32_t off = QPL_OFF_LW + QPL_READ_SINK + k * QPL_READ_LEN;
		struct iw_sge sge = { va(off), QPL_READ_LEN, iw_mr_stag(f->mr[QPL_MR_LW]) };
		struct iw_send_wr wr = { .wr_id = record(f, WK_READ, QPL_READ_LEN), .sg_list = &sge, .num_sge = 1,
					 .opcode = IW_WR_RDMA_READ, .rkey = QPL_PEER_STAG, .remote_addr = 0x1000 };
		allow(off, QPL_READ_LEN);
		FUZZ_CHECK(iw_post_send(f->qp, &wr, NULL) == 0);
		f->n_wr++;
	}
	f->read_next = 2 * QPL_READ_LEN;
	FUZZ_CHECK(progress(f));
}

static void teardown(struct fz *f, uint8_t mode)
{
	FUZZ_CHECK(progress(f));
	/* The stream ends (a FIN or a reset): everything must complete. */
	peer_close(f, mode & 0x80 ? -ECONNRESET : 0);
	FUZZ_CHECK(progress(f));
	FUZZ_CHECK(f->qp->flushed);
	FUZZ_CHECK(iw_qp_state(f->qp) == IW_QPS_ERROR || iw_qp_state(f->qp) == IW_QPS_CLOSED);
	/* Exactly once; with an SRQ, receives no message reached stay
	 * queued there (the QP's flush leaves them) and nothing else does. */
	uint32_t queued = 0;
	for (uint32_t i = 0; i < f->n_wr; i++) {
		if (f->srq && f->wr[i].kind == WK_RECV && !f->wr[i].done)
			queued++;
		else
			FUZZ_CHECK(f->wr[i].done == 1);
	}
	FUZZ_CHECK(!f->srq || queued == f->srq->rq.count);
	if (getenv("QPL_VERBOSE")) {
		struct iw_term_cause c = f->qp->error;
		fprintf(stderr, "qp_live: state %d cause (%u,%u,0x%02x) wrs %u fpdus rx %llu tx %llu placed %llu\n",
			(int)iw_qp_state(f->qp), c.layer, c.etype, c.ecode, f->n_wr,
			(unsigned long long)f->qp->conn.fpdus_rx, (unsigned long long)f->qp->conn.fpdus_tx,
			(unsigned long long)f->qp->conn.bytes_placed);
	}
	FUZZ_CHECK(f->scq->lost == 0 && f->rcq->lost == 0);
	check_range(0, QPL_ARENA_SIZE);

	FUZZ_CHECK(iw_destroy_qp(f->qp) == 0);
	if (f->srq)
		FUZZ_CHECK(iw_destroy_srq(f->srq) == 0);
	for (int i = 1; i <= QPL_N_MR; i++)
		if (f->mr[i])
			FUZZ_CHECK(iw_dereg_mr(f->mr[i]) == 0);
	FUZZ_CHECK(iw_destroy_cq(f->scq) == 0);
	FUZZ_CHECK(iw_destroy_cq(f->rcq) == 0);
	FUZZ_CHECK(iw_dealloc_pd(f->pd) == 0);
	FUZZ_CHECK(iw_dealloc_pd(f->pd2) == 0);
	FUZZ_CHECK(iw_context_destroy(f->ctx) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < QPL_HDR_LEN)
		return 0;
	uint8_t mode = data[0], irdord = data[1];
	size_t ctl_len = data[2];
	data += QPL_HDR_LEN;
	size -= QPL_HDR_LEN;

	struct iw_mpa_outcome o;
	size_t fl = handshake(mode, irdord, data, size, &o);
	if (fl == 0)
		return 0;
	data += fl;
	size -= fl;
	if (ctl_len > size)
		ctl_len = size;
	const uint8_t *ctl = data;
	data += ctl_len;
	size -= ctl_len;

	arena_map();
	arena_reset();
	static struct fz f;
	memset(&f, 0, sizeof(f));
	f.feed_copy = mode & QPL_MODE_FEED;
	f.rng = 0x51ED5EEDull ^ (uint64_t)mode << 8 ^ irdord;
	setup(&f, mode, &o);

	size_t off = 0, ci = 0;
	/* Bounded: every step either consumes a control byte or stream bytes. */
	while (off < size || ci < ctl_len) {
		unsigned c = ci < ctl_len ? ctl[ci++] : (unsigned)(fuzz_rand(&f.rng) & 0x1F);
		if (c >= QPL_CTL_API) {
			api(&f, c & 0x1F);
			continue;
		}
		size_t n = chunk_sizes[c & 31];
		if (n > size - off)
			n = size - off;
		feed(&f, data + off, n);
		off += n;
		if (!(c & 0x20))
			FUZZ_CHECK(progress(&f));
	}
	teardown(&f, mode);
	return 0;
}
