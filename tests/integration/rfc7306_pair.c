/* rfc7306_pair: RFC 7306 atomics and Write with Immediate between two
 * processes (issue 16), every value checked. Public API only.
 *
 *   rfc7306_pair -s -p PORT [-a ADDR] [-t SEC] [transport options]
 *   rfc7306_pair -c ADDR -p PORT [-n FAA] [-k CAS] [-m IMM] [-t SEC] [transport options]
 * (-t: the run's time bound, default 50 s.)
 *
 * The client asks for its counts in the MPA private data; the server
 * registers one region (REMOTE_WRITE | REMOTE_ATOMIC | LOCAL_WRITE): word 0
 * the fetch-and-add counter, word 1 the compare-and-swap word, both
 * starting at random values the server announces with the STag and address
 * in the accept's private data, then the Write-with-Immediate data area.
 * Client: fetch-and-adds with varied addends (each returned old value must
 * be the running sum), compare-and-swaps that match and that do not (each
 * returned value checked), Writes with Immediate of varied lengths, data
 * and immediate values at consecutive offsets (every third with Solicited
 * Event), all three kinds interleaved with up to 8 WRs outstanding; then a SEND with the final
 * values it expects. Server: checks every Immediate completion (imm_data,
 * byte_len, flags, payload bytes in its region), then the final counters,
 * and answers with a verdict SEND. Exit 0 on success, 1 on any mismatch. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#include "tool_common.h"

#define MAGIC 0x37333036u /* "7306" */
#define WINDOW 8          /* outstanding WRs of the client (ORD is 16) */
#define MAX_IMM 1000
#define MAX_IMM_LEN 8192
#define DATA_OFF 64
#define REGION_LEN (DATA_OFF + (size_t)MAX_IMM * MAX_IMM_LEN)
#define RECV_SLOT 64

static int fails;
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rfc7306_pair: MISMATCH: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fails++;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/* The i-th Write with Immediate: its length, immediate value and bytes. */
static uint32_t imm_len(uint32_t i)
{
	static const uint32_t fixed[] = { 0, 1, 7, 8, 9, 4095, 4096, 4097, MAX_IMM_LEN };
	if (i < sizeof(fixed) / sizeof(fixed[0]))
		return fixed[i];
	return (uint32_t)(mix64(i ^ 0x1111) % (MAX_IMM_LEN + 1));
}
static uint64_t imm_value(uint32_t i, uint64_t seed)
{
	return i == 1 ? 0 : i == 2 ? UINT64_MAX : mix64(seed ^ ((uint64_t)i << 20));
}
static bool imm_solicited(uint32_t i)
{
	return i % 3 == 1;
}
static uint8_t imm_byte(uint32_t i, uint32_t k, uint64_t seed)
{
	return (uint8_t)(mix64(seed + i) >> (8 * (k % 8))) ^ (uint8_t)(k / 8) ^ (uint8_t)i;
}
static uint64_t faa_addend(uint32_t i, uint64_t seed)
{
	switch (i % 5) {
	case 0: return 1;
	case 1: return mix64(seed + i);           /* any 64-bit value: carries and wraps */
	case 2: return UINT64_MAX;                /* -1 */
	case 3: return (uint64_t)i << 32;
	default: return 0;
	}
}

static void put64(uint8_t *p, uint64_t v) { tc_put_be64(p, v); }
static uint64_t get64(const uint8_t *p) { return tc_get_be64(p); }

struct ep {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id, *id;
	struct iw_qp *qp;
	uint8_t *buf;   /* region (server) or result/payload buffer (client) */
	size_t buf_len;
	struct iw_mr *mr;
	uint8_t *rbuf;  /* receive/send slots */
	struct iw_mr *rmr;
	uint64_t deadline_ns;
	const char *who; /* "server" / "client" in messages */
};

static bool expired(const struct ep *e)
{
	return tc_now_ns() > e->deadline_ns;
}

/* Next CM event of the wanted type; 0, or -1 after a message. */
static int wait_cm(struct ep *e, enum iw_cm_event_type want, struct iw_cm_event **out)
{
	while (!expired(e)) {
		struct iw_cm_event *ev;
		int rc = iw_cm_get_event(e->ch, &ev);
		if (rc == -EAGAIN) {
			if ((rc = iw_progress(e->ctx, 50)) < 0) {
				tc_err("iw_progress: %s", strerror(-rc));
				return -1;
			}
			continue;
		}
		if (rc) {
			tc_err("iw_cm_get_event: %s", strerror(-rc));
			return -1;
		}
		if (ev->type == want) {
			*out = ev;
			return 0;
		}
		tc_report_cm_event(e->who, ev);
		iw_cm_ack_event(ev);
		return -1;
	}
	tc_err("%s: timed out waiting for %s", e->who, iw_cm_event_str(want));
	return -1;
}

/* One completion; 0, or -1 after a message (error status or timeout). */
static int wait_wc(struct ep *e, struct iw_wc *wc)
{
	while (!expired(e)) {
		int n = iw_poll_cq(e->cq, 1, wc);
		if (n < 0) {
			tc_err("iw_poll_cq: %s", strerror(-n));
			return -1;
		}
		if (n == 1) {
			if (wc->status != IW_WC_SUCCESS) {
				tc_report_wc(e->who, wc);
				tc_report_qp_error(e->who, e->qp);
				return -1;
			}
			return 0;
		}
		if ((n = iw_progress(e->ctx, 50)) < 0) {
			tc_err("iw_progress: %s", strerror(-n));
			return -1;
		}
	}
	tc_err("%s: timed out waiting for a completion", e->who);
	tc_report_qp_error(e->who, e->qp);
	return -1;
}

static int post_recv_slot(struct ep *e, uint32_t slot, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)(e->rbuf + (size_t)slot * RECV_SLOT), RECV_SLOT,
			      iw_mr_stag(e->rmr) };
	struct iw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = iw_post_recv(e->qp, &wr, &bad);
	if (rc)
		tc_err("iw_post_recv: %s", strerror(-rc));
	return rc ? -1 : 0;
}

static int post_send_slot(struct ep *e, uint32_t slot, uint32_t len, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)(e->rbuf + (size_t)slot * RECV_SLOT), len,
			      iw_mr_stag(e->rmr) };
	struct iw_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND }, *bad;
	int rc = iw_post_send(e->qp, &wr, &bad);
	if (rc)
		tc_err("iw_post_send(SEND): %s", strerror(-rc));
	return rc ? -1 : 0;
}

static int setup(struct ep *e, const struct iw_context_attr *ca, size_t buf_len, unsigned access,
		 uint32_t recv_slots)
{
	int rc;
	if ((rc = iw_context_create(ca, &e->ctx))) {
		tc_err("iw_context_create: %s", strerror(-rc));
		return -1;
	}
	e->buf_len = buf_len;
	e->buf = tc_alloc_buf(buf_len);
	e->rbuf = tc_alloc_buf((size_t)recv_slots * RECV_SLOT);
	if (!e->buf || !e->rbuf) {
		tc_err("out of memory");
		return -1;
	}
	if ((rc = iw_alloc_pd(e->ctx, &e->pd)) || (rc = iw_create_cq(e->ctx, 4 * MAX_IMM, NULL, &e->cq)) ||
	    (rc = iw_cm_create_channel(e->ctx, &e->ch)) ||
	    (rc = iw_reg_mr(e->pd, e->buf, buf_len, access, &e->mr)) ||
	    (rc = iw_reg_mr(e->pd, e->rbuf, (size_t)recv_slots * RECV_SLOT, IW_ACCESS_LOCAL_WRITE, &e->rmr))) {
		tc_err("setup: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

static int make_qp(struct ep *e)
{
	struct iw_qp_init_attr qa = { .send_cq = e->cq, .recv_cq = e->cq, .sq_sig_all = true,
				      .cap = { .max_send_wr = 64, .max_recv_wr = MAX_IMM + 8 } };
	int rc = iw_create_qp(e->pd, &qa, &e->qp);
	if (rc)
		tc_err("iw_create_qp: %s", strerror(-rc));
	return rc ? -1 : 0;
}

static void td_check(int rc, const char *what, bool strict)
{
	if (rc && strict)
		fail("teardown: %s: %s", what, strerror(-rc));
}

/* Disconnect (or wait for the peer's), drain, free everything; strict
 * (after a clean run): every step must succeed. Returns 0 or -1. */
static int teardown(struct ep *e, bool initiate, bool strict)
{
	int before = fails;
	if (e->id && e->qp && iw_qp_state(e->qp) == IW_QPS_RTS) {
		struct iw_cm_event *ev;
		if (initiate)
			td_check(iw_cm_disconnect(e->id), "iw_cm_disconnect", strict);
		if (wait_cm(e, IW_CM_EVENT_DISCONNECTED, &ev) == 0) {
			td_check(ev->status, "DISCONNECTED status", strict);
			iw_cm_ack_event(ev);
		} else {
			td_check(-ETIMEDOUT, "no DISCONNECTED", strict);
		}
	}
	struct iw_wc wc;
	while (e->cq && iw_poll_cq(e->cq, 1, &wc) > 0)
		;
	if (e->qp)
		td_check(iw_destroy_qp(e->qp), "iw_destroy_qp", strict);
	if (e->id)
		td_check(iw_cm_destroy_id(e->id), "iw_cm_destroy_id", strict);
	if (e->listen_id)
		td_check(iw_cm_destroy_id(e->listen_id), "iw_cm_destroy_id(listener)", strict);
	if (e->mr)
		td_check(iw_dereg_mr(e->mr), "iw_dereg_mr", strict);
	if (e->rmr)
		td_check(iw_dereg_mr(e->rmr), "iw_dereg_mr", strict);
	if (e->ch)
		td_check(iw_cm_destroy_channel(e->ch), "iw_cm_destroy_channel", strict);
	if (e->cq)
		td_check(iw_destroy_cq(e->cq), "iw_destroy_cq", strict);
	if (e->pd)
		td_check(iw_dealloc_pd(e->pd), "iw_dealloc_pd", strict);
	if (e->ctx)
		td_check(iw_context_destroy(e->ctx), "iw_context_destroy", strict);
	free(e->buf);
	free(e->rbuf);
	return fails > before ? -1 : 0;
}

/* Private data. Connect: magic, n_faa, n_cas, n_imm, seed(8).
 * Accept: magic, stag, addr(8), faa0(8), cas0(8).
 * Client's final SEND: magic, faa_final(8), cas_final(8), n_imm.
 * Server's verdict SEND: magic, mismatches. */

/* -t: the whole run's bound (a hung peer fails, it does not hang). */
static uint64_t limit_s = 50;

static int run_server(const struct iw_context_attr *ca, const struct sockaddr *sa)
{
	struct ep e = { .who = "server" };
	struct iw_cm_event *ev;
	int ret = 1;
	e.deadline_ns = tc_now_ns() + limit_s * 1000000000ULL;
	if (setup(&e, ca, REGION_LEN, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC,
		  MAX_IMM + 8))
		goto out;
	int rc;
	if ((rc = iw_cm_create_id(e.ch, NULL, &e.listen_id)) || (rc = iw_cm_listen(e.listen_id, sa, 4))) {
		tc_err("listen: %s", strerror(-rc));
		goto out;
	}
	tc_announce_listen(sa, NULL);
	if (wait_cm(&e, IW_CM_EVENT_CONNECT_REQUEST, &ev))
		goto out;
	e.id = ev->id;
	uint32_t n_faa = 0, n_cas = 0, n_imm = 0;
	uint64_t seed = 0;
	const uint8_t *pd = ev->private_data;
	bool pd_ok = ev->private_data_len >= 24 && tc_get_be32(pd) == MAGIC;
	if (pd_ok) {
		n_faa = tc_get_be32(pd + 4), n_cas = tc_get_be32(pd + 8), n_imm = tc_get_be32(pd + 12);
		seed = get64(pd + 16);
	}
	iw_cm_ack_event(ev);
	if (!pd_ok || n_imm > MAX_IMM) {
		tc_err("bad connect private data");
		iw_cm_reject(e.id, NULL, 0);
		goto out;
	}
	if (make_qp(&e))
		goto out;
	/* One receive per Immediate, one for the final SEND. */
	for (uint32_t i = 0; i <= n_imm; i++)
		if (post_recv_slot(&e, i, i))
			goto out;
	uint64_t faa0, cas0;
	if (getrandom(&faa0, sizeof(faa0), 0) != sizeof(faa0) || getrandom(&cas0, sizeof(cas0), 0) != sizeof(cas0)) {
		tc_err("getrandom failed");
		goto out;
	}
	uint64_t *ctr = (uint64_t *)(void *)e.buf;
	ctr[0] = faa0;
	ctr[1] = cas0;
	uint8_t acc[32];
	tc_put_be32(acc, MAGIC);
	tc_put_be32(acc + 4, iw_mr_stag(e.mr));
	put64(acc + 8, (uint64_t)(uintptr_t)e.buf);
	put64(acc + 16, faa0);
	put64(acc + 24, cas0);
	struct iw_conn_param cp = { .private_data = acc, .private_data_len = sizeof(acc) };
	if ((rc = iw_cm_accept(e.id, e.qp, &cp))) {
		tc_err("iw_cm_accept: %s", strerror(-rc));
		goto out;
	}
	if (wait_cm(&e, IW_CM_EVENT_ESTABLISHED, &ev))
		goto out;
	iw_cm_ack_event(ev);
	if (!iw_qp_rfc7306(e.qp)) {
		fail("server: iw_qp_rfc7306() is false on an established libiwarp connection");
		goto out;
	}
	/* Every Immediate in order, then the final SEND. */
	size_t off = DATA_OFF;
	for (uint32_t i = 0; i <= n_imm; i++) {
		struct iw_wc wc;
		if (wait_wc(&e, &wc))
			goto out;
		if (wc.wr_id != i)
			fail("server: receive %u completed as wr_id %" PRIu64, i, wc.wr_id);
		if (i == n_imm) {
			if (wc.opcode != IW_WC_RECV || wc.byte_len != 24)
				fail("server: final message: opcode %s byte_len %u, want RECV of 24",
				     tc_wc_opcode_str(wc.opcode), wc.byte_len);
			break;
		}
		uint32_t len = imm_len(i);
		uint64_t imm = imm_value(i, seed);
		if (wc.opcode != IW_WC_RECV_RDMA_WITH_IMM || !(wc.flags & IW_WC_WITH_IMM))
			fail("server: immediate %u: opcode %s flags %#x, want RECV_RDMA_WITH_IMM with WITH_IMM", i,
			     tc_wc_opcode_str(wc.opcode), wc.flags);
		if (!!(wc.flags & IW_WC_SOLICITED) != imm_solicited(i))
			fail("server: immediate %u: flags %#x, want SOLICITED %s", i, wc.flags,
			     imm_solicited(i) ? "set" : "clear");
		if (wc.imm_data != imm)
			fail("server: immediate %u: imm_data %#" PRIx64 ", want %#" PRIx64, i, wc.imm_data, imm);
		if (wc.byte_len != len)
			fail("server: immediate %u: byte_len %u, want %u", i, wc.byte_len, len);
		for (uint32_t k = 0; k < len; k++)
			if (e.buf[off + k] != imm_byte(i, k, seed)) {
				fail("server: immediate %u: payload byte %u is %#x, want %#x", i, k, e.buf[off + k],
				     imm_byte(i, k, seed));
				break;
			}
		/* The receive buffer is not written by an Immediate. */
		for (uint32_t k = 0; k < RECV_SLOT; k++)
			if (e.rbuf[(size_t)i * RECV_SLOT + k]) {
				fail("server: immediate %u wrote into its receive buffer", i);
				break;
			}
		off += len;
		if (fails > 20)
			goto out;
	}
	/* The client's expectation against our memory. */
	const uint8_t *fin = e.rbuf + (size_t)n_imm * RECV_SLOT;
	uint64_t faa_want = get64(fin + 4), cas_want = get64(fin + 12);
	uint64_t faa_sum = faa0;
	for (uint32_t i = 0; i < n_faa; i++)
		faa_sum += faa_addend(i, seed);
	if (tc_get_be32(fin) != MAGIC || tc_get_be32(fin + 20) != n_imm)
		fail("server: bad final message");
	if (ctr[0] != faa_sum || ctr[0] != faa_want)
		fail("server: fetch-and-add counter %#" PRIx64 ", want %#" PRIx64 " (client says %#" PRIx64 ")", ctr[0],
		     faa_sum, faa_want);
	if (ctr[1] != cas_want)
		fail("server: compare-and-swap word %#" PRIx64 ", client expects %#" PRIx64, ctr[1], cas_want);
	for (size_t k = off; k < REGION_LEN && k < off + 4096; k++)
		if (e.buf[k]) {
			fail("server: byte at offset %zu behind the last Immediate's data was written", k);
			break;
		}
	/* Verdict to the client (slot n_imm + 1). */
	uint8_t *v = e.rbuf + (size_t)(n_imm + 1) * RECV_SLOT;
	tc_put_be32(v, MAGIC);
	tc_put_be32(v + 4, (uint32_t)fails);
	struct iw_wc wc;
	if (post_send_slot(&e, n_imm + 1, 8, 1000000) || wait_wc(&e, &wc))
		goto out;
	fprintf(stderr, "rfc7306_pair: server: %u fetch-and-adds, %u compare-and-swaps, %u Writes with Immediate "
		"(%zu bytes): %s\n", n_faa, n_cas, n_imm, off - DATA_OFF, fails ? "MISMATCHES" : "all verified");
	ret = fails ? 1 : 0;
out:
	if (teardown(&e, false, ret == 0))
		ret = 1;
	return ret;
}

/* Client: post ops from a generator, at most WINDOW outstanding. */
enum op_kind { OP_FAA, OP_CAS, OP_IMM };

static int run_client(const struct iw_context_attr *ca, const struct sockaddr *sa, uint32_t n_faa, uint32_t n_cas,
		      uint32_t n_imm)
{
	struct ep e = { .who = "client" };
	struct iw_cm_event *ev;
	int ret = 1, rc;
	e.deadline_ns = tc_now_ns() + limit_s * 1000000000ULL;
	/* Results: 8 bytes per WR slot; then each slot's Immediate payload
	 * source (so Writes with Immediate pipeline with everything else). */
	size_t res_len = 8 * WINDOW;
	if (setup(&e, ca, res_len + (size_t)WINDOW * MAX_IMM_LEN, IW_ACCESS_LOCAL_WRITE, 4))
		goto out;
	uint64_t seed;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) {
		tc_err("getrandom failed");
		goto out;
	}
	if ((rc = iw_cm_create_id(e.ch, NULL, &e.id)) || make_qp(&e) || post_recv_slot(&e, 0, 7777)) {
		tc_err("client setup failed");
		goto out;
	}
	uint8_t req[24];
	tc_put_be32(req, MAGIC);
	tc_put_be32(req + 4, n_faa);
	tc_put_be32(req + 8, n_cas);
	tc_put_be32(req + 12, n_imm);
	put64(req + 16, seed);
	struct iw_conn_param cp = { .private_data = req, .private_data_len = sizeof(req) };
	if ((rc = iw_cm_connect(e.id, e.qp, sa, &cp))) {
		tc_err("iw_cm_connect: %s", strerror(-rc));
		goto out;
	}
	if (wait_cm(&e, IW_CM_EVENT_ESTABLISHED, &ev))
		goto out;
	const uint8_t *acc = ev->private_data;
	if (ev->private_data_len < 32 || tc_get_be32(acc) != MAGIC) {
		iw_cm_ack_event(ev);
		tc_err("bad accept private data");
		goto out;
	}
	uint32_t rkey = tc_get_be32(acc + 4);
	uint64_t raddr = get64(acc + 8), faa = get64(acc + 16), cas = get64(acc + 24);
	iw_cm_ack_event(ev);
	if (!iw_qp_rfc7306(e.qp)) {
		fail("client: iw_qp_rfc7306() is false on an established libiwarp connection");
		goto out;
	}

	uint64_t *res = (uint64_t *)(void *)e.buf;
	/* Expected returned value per slot (atomics). */
	uint64_t want[WINDOW];
	enum op_kind kind[WINDOW];
	uint32_t idx[WINDOW];
	bool busy[WINDOW] = { false };
	uint32_t n_total = n_faa + n_cas + n_imm, posted = 0, done = 0;
	uint32_t faa_i = 0, cas_i = 0, imm_i = 0;
	uint64_t imm_off = raddr + DATA_OFF;
	while (done < n_total) {
		/* Post while the window allows. Order: interleave the three kinds. */
		while (posted < n_total) {
			int slot = -1;
			for (int s = 0; s < WINDOW; s++)
				if (!busy[s]) {
					slot = s;
					break;
				}
			if (slot < 0)
				break;
			enum op_kind k;
			uint32_t r = posted % 3;
			if (r == 0 && faa_i < n_faa)
				k = OP_FAA;
			else if (r == 1 && cas_i < n_cas)
				k = OP_CAS;
			else if (r == 2 && imm_i < n_imm)
				k = OP_IMM;
			else
				k = faa_i < n_faa ? OP_FAA : cas_i < n_cas ? OP_CAS : OP_IMM;
			struct iw_sge sge = { (uint64_t)(uintptr_t)&res[slot], 8, iw_mr_stag(e.mr) };
			struct iw_send_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1, .rkey = rkey };
			if (k == OP_FAA) {
				wr.opcode = IW_WR_ATOMIC_FETCH_AND_ADD;
				wr.remote_addr = raddr;
				wr.compare_add = faa_addend(faa_i, seed);
				want[slot] = faa;
				faa += wr.compare_add;
				idx[slot] = faa_i++;
			} else if (k == OP_CAS) {
				/* Even: a matching compare swaps in a new value; odd: a
				 * compare that differs in one bit must leave it. */
				uint64_t nv = mix64(seed ^ cas_i ^ 0xCA5);
				wr.opcode = IW_WR_ATOMIC_CMP_AND_SWP;
				wr.remote_addr = raddr + 8;
				wr.compare_add = cas_i % 2 == 0 ? cas : cas ^ (1ULL << (cas_i % 64));
				wr.swap = nv;
				want[slot] = cas;
				if (cas_i % 2 == 0)
					cas = nv;
				idx[slot] = cas_i++;
			} else {
				uint32_t len = imm_len(imm_i);
				uint8_t *src = e.buf + res_len + (size_t)slot * MAX_IMM_LEN;
				for (uint32_t b = 0; b < len; b++)
					src[b] = imm_byte(imm_i, b, seed);
				sge.addr = (uint64_t)(uintptr_t)src;
				sge.length = len;
				wr.num_sge = len ? 1 : 0;
				wr.opcode = IW_WR_RDMA_WRITE_WITH_IMM;
				/* Every third one with Solicited Event (Immediate Data with SE). */
				wr.send_flags = imm_solicited(imm_i) ? IW_SEND_SOLICITED : 0;
				wr.remote_addr = imm_off;
				wr.imm_data = imm_value(imm_i, seed);
				imm_off += len;
				idx[slot] = imm_i++;
			}
			res[slot] = ~want[slot];
			kind[slot] = k;
			struct iw_send_wr *bad;
			if ((rc = iw_post_send(e.qp, &wr, &bad))) {
				tc_err("iw_post_send: %s", strerror(-rc));
				goto out;
			}
			busy[slot] = true;
			posted++;
		}
		struct iw_wc wc;
		if (wait_wc(&e, &wc))
			goto out;
		if (wc.wr_id >= WINDOW || !busy[wc.wr_id]) {
			fail("client: completion for unknown wr_id %" PRIu64, wc.wr_id);
			goto out;
		}
		int s = (int)wc.wr_id;
		busy[s] = false;
		done++;
		switch (kind[s]) {
		case OP_FAA:
			if (wc.opcode != IW_WC_FETCH_ADD)
				fail("client: fetch-and-add %u completed as %s", idx[s], tc_wc_opcode_str(wc.opcode));
			if (res[s] != want[s])
				fail("client: fetch-and-add %u returned %#" PRIx64 ", want %#" PRIx64, idx[s], res[s],
				     want[s]);
			break;
		case OP_CAS:
			if (wc.opcode != IW_WC_COMP_SWAP)
				fail("client: compare-and-swap %u completed as %s", idx[s], tc_wc_opcode_str(wc.opcode));
			if (res[s] != want[s])
				fail("client: compare-and-swap %u (%s) returned %#" PRIx64 ", want %#" PRIx64, idx[s],
				     idx[s] % 2 ? "no match" : "match", res[s], want[s]);
			break;
		case OP_IMM:
			if (wc.opcode != IW_WC_RDMA_WRITE)
				fail("client: Write with Immediate %u completed as %s", idx[s],
				     tc_wc_opcode_str(wc.opcode));
			break;
		}
		if (fails > 20)
			goto out;
	}
	/* Final expectation, then the server's verdict. */
	uint8_t *fin = e.rbuf + RECV_SLOT;
	tc_put_be32(fin, MAGIC);
	put64(fin + 4, faa);
	put64(fin + 12, cas);
	tc_put_be32(fin + 20, n_imm);
	struct iw_wc wc;
	if (post_send_slot(&e, 1, 24, 8888) || wait_wc(&e, &wc))
		goto out;
	if (wc.wr_id != 8888 || wc.opcode != IW_WC_SEND) {
		fail("client: final SEND completed as wr_id %" PRIu64 " %s", wc.wr_id, tc_wc_opcode_str(wc.opcode));
		goto out;
	}
	if (wait_wc(&e, &wc))
		goto out;
	if (wc.wr_id != 7777 || wc.opcode != IW_WC_RECV || wc.byte_len != 8 || tc_get_be32(e.rbuf) != MAGIC) {
		fail("client: bad verdict message");
		goto out;
	}
	uint32_t srv_fails = tc_get_be32(e.rbuf + 4);
	if (srv_fails)
		fail("client: the server found %u mismatches", srv_fails);
	fprintf(stderr, "rfc7306_pair: client: %u fetch-and-adds, %u compare-and-swaps (%u matching), %u Writes "
		"with Immediate: %s\n", n_faa, n_cas, (n_cas + 1) / 2, n_imm, fails ? "MISMATCHES" : "all verified");
	ret = fails ? 1 : 0;
out:
	if (teardown(&e, true, ret == 0))
		ret = 1;
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: rfc7306_pair -s -p PORT [-a ADDR] [-t SEC] [options]\n"
			"       rfc7306_pair -c ADDR -p PORT [-n FAA] [-k CAS] [-m IMM] [-t SEC] [options]\n"
			"        -t SEC           bound of the whole run (default 50)\n" TC_TRANSPORT_HELP);
}

int main(int argc, char **argv)
{
	tc_set_progname("rfc7306_pair");
	bool server = false;
	const char *addr = NULL, *port = NULL;
	uint64_t n_faa = 1000, n_cas = 500, n_imm = 300;
	struct tc_transport t = { .kind = IW_TRANSPORT_KERNEL };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-s")) {
			server = true;
		} else if (!strncmp(a, "--transport=", 12)) {
			if (tc_parse_transport(a + 12, &t.kind)) {
				tc_bad_value("--transport", a + 12, "kernel, raw");
				return 2;
			}
		} else if (!v) {
			usage();
			return 2;
		} else if (!strcmp(a, "-c") || !strcmp(a, "-a")) {
			addr = v, i++;
		} else if (!strcmp(a, "-p")) {
			port = v, i++;
		} else if (!strcmp(a, "--dev")) {
			t.dev = v, i++;
		} else if (!strcmp(a, "--ip")) {
			t.ip = v, i++;
		} else if (!strcmp(a, "-t")) {
			if (tc_parse_uint(v, 1, 3600, &limit_s)) {
				tc_bad_value(a, v, "1..3600 seconds");
				return 2;
			}
			i++;
		} else if (!strcmp(a, "-n") || !strcmp(a, "-k") || !strcmp(a, "-m")) {
			uint64_t *dst = a[1] == 'n' ? &n_faa : a[1] == 'k' ? &n_cas : &n_imm;
			if (tc_parse_uint(v, 0, a[1] == 'm' ? MAX_IMM : 1000000, dst)) {
				tc_bad_value(a, v, a[1] == 'm' ? "0..1000" : "0..1000000");
				return 2;
			}
			i++;
		} else {
			usage();
			return 2;
		}
	}
	if (!port || (!server && !addr)) {
		usage();
		return 2;
	}
	struct iw_context_attr ca = { 0 };
	if (tc_transport_apply(&t, &ca))
		return 2;
	struct sockaddr_storage ss;
	socklen_t sl;
	if (tc_resolve(addr, port, server, &ss, &sl))
		return 2;
	if (server)
		return run_server(&ca, (struct sockaddr *)&ss);
	return run_client(&ca, (struct sockaddr *)&ss, (uint32_t)n_faa, (uint32_t)n_cas, (uint32_t)n_imm);
}
