/* rw_proto: see rw_proto.h. Plain C11 + POSIX; no transport code here. */
#include "rw_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RW_MAGIC 0x49575257u /* "IWRW" */

enum rw_msg { MSG_ADVERT = 1, MSG_ROUND, MSG_READY, MSG_CDONE, MSG_SDONE, MSG_BYE, MSG_PROBE };

/* wr_id = sequence number; wr_state[seq] = op << 4 | state. */
#define WR_OP(s) ((enum rw_wr_op)((s) >> 4))
#define WR_ST(s) ((s) & 0x0f)

/* ------------------------------------------------------------------ */
/* Byte order and patterns                                             */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static uint32_t seed_of(uint32_t tag, uint32_t round, uint32_t size)
{
	uint32_t x = tag * 0x9E3779B1u ^ round * 0x85EBCA77u ^ size * 0xC2B2AE3Du;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return x ? x : 1;
}

/* xorshift32, four bytes per step: cheap enough for 1 MiB in the guest. */
void rw_pattern(uint8_t *buf, size_t len, uint32_t tag, uint32_t round, uint32_t size)
{
	uint32_t x = seed_of(tag, round, size);
	size_t i;

	for (i = 0; i < len; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		for (size_t k = 0; k < 4 && i + k < len; k++)
			buf[i + k] = (uint8_t)(x >> (8 * k));
	}
}

long rw_pattern_diff(const uint8_t *buf, size_t len, uint32_t tag, uint32_t round, uint32_t size)
{
	uint32_t x = seed_of(tag, round, size);
	size_t i;

	for (i = 0; i < len; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		for (size_t k = 0; k < 4 && i + k < len; k++)
			if (buf[i + k] != (uint8_t)(x >> (8 * k)))
				return (long)(i + k);
	}
	return -1;
}

static long zero_diff(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return (long)i;
	return -1;
}

bool rw_pdata_ok(const void *buf, size_t len, size_t want_len, uint32_t tag)
{
	if (len != want_len)
		return false;
	return len == 0 || rw_pattern_diff(buf, len, tag, 0, (uint32_t)want_len) < 0;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */

void rw_cfg_defaults(struct rw_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->test = RW_T_RW;
	c->sizes[0] = 1;
	c->sizes[1] = 4000;
	c->sizes[2] = 65537;
	c->sizes[3] = 1048576;
	c->nsizes = 4;
	c->rounds = 1;
	c->reject_len = -1;
	c->expect_reject = -1;
	c->flood_size = 65536;
	c->flood_depth = 16;
	c->flood_ms = 300;
	c->disconnector = RW_CLIENT;
	c->drain_ms = 5000;
}

static const char *const test_names[] = { "rw", "badwrite", "badread", "victim", "flood" };

int rw_parse_test(const char *s, enum rw_test *t)
{
	for (unsigned i = 0; i < sizeof(test_names) / sizeof(test_names[0]); i++) {
		if (strcmp(s, test_names[i]) == 0) {
			*t = (enum rw_test)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *rw_test_name(enum rw_test t)
{
	return (unsigned)t < sizeof(test_names) / sizeof(test_names[0]) ? test_names[t] : "?";
}

/* "1,4000,64K,1M" */
int rw_parse_sizes(const char *s, struct rw_cfg *c)
{
	unsigned n = 0;

	while (*s) {
		char *end;
		unsigned long long v;

		if (n == RW_MAX_SIZES || *s < '0' || *s > '9')
			return -EINVAL;
		v = strtoull(s, &end, 10);
		if (*end == 'K' || *end == 'k') {
			v <<= 10;
			end++;
		} else if (*end == 'M' || *end == 'm') {
			v <<= 20;
			end++;
		}
		if (v == 0 || v > (64ull << 20))
			return -EINVAL;
		c->sizes[n++] = (uint32_t)v;
		if (*end == ',')
			end++;
		else if (*end != '\0')
			return -EINVAL;
		s = end;
	}
	if (n == 0)
		return -EINVAL;
	c->nsizes = n;
	return 0;
}

uint32_t rw_max_transfer(const struct rw_cfg *c)
{
	uint32_t m = c->flood_size > 16 ? c->flood_size : 16;

	for (unsigned i = 0; i < c->nsizes; i++)
		if (c->sizes[i] > m)
			m = c->sizes[i];
	return m;
}

size_t rw_exposed_len(const struct rw_cfg *c)
{
	return 2 * (size_t)rw_max_transfer(c) + RW_GUARD;
}

size_t rw_local_len(const struct rw_cfg *c)
{
	return 2 * (size_t)rw_max_transfer(c) + RW_GUARD;
}

/* ------------------------------------------------------------------ */
/* Bookkeeping                                                         */

void rw_fail(struct rw *e, const char *fmt, ...)
{
	va_list ap;
	char buf[sizeof(e->why)];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: FAIL: %s\n", e->name, buf);
	if (!e->failed)
		snprintf(e->why, sizeof(e->why), "%s", buf);
	e->failed = true;
	if (!e->finished) {
		e->finished = true;
		e->end_ms = e->now_ms;
	}
}

static void finish(struct rw *e)
{
	if (!e->finished) {
		e->finished = true;
		e->end_ms = e->now_ms;
	}
}

uint64_t rw_outstanding(const struct rw *e)
{
	return e->posted - e->completed;
}

static void note(struct rw *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct rw *e, const char *fmt, ...)
{
	va_list ap;

	if (!e->cfg.verbose)
		return;
	printf("%s: ", e->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int post(struct rw *e, enum rw_wr_op op, void *laddr, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	uint64_t seq = e->seq;
	int rc;

	if (seq >= RW_MAX_WRS)
		return -ENOSPC;
	e->seq++;
	e->wr_state[seq] = (uint8_t)(op << 4 | RW_WR_POSTED);
	e->posted++;
	if (op == RW_OP_RECV)
		rc = e->ops->post_recv(e->be, seq, laddr, len);
	else
		rc = e->ops->post_send(e->be, seq, op, laddr, len, raddr, rkey);
	if (rc) {
		e->wr_state[seq] = RW_WR_FREE;
		e->posted--;
	}
	return rc;
}

static int post_recv_slot(struct rw *e, unsigned slot)
{
	uint64_t seq = e->seq;
	int rc = post(e, RW_OP_RECV, e->ctl + slot * RW_MSG_LEN, RW_MSG_LEN, 0, 0);

	if (rc == 0)
		e->recv_seq[slot] = seq;
	return rc;
}

static int send_msg(struct rw *e, uint32_t type, uint64_t addr, uint32_t rkey, uint32_t len, uint32_t round,
		    uint32_t size)
{
	uint8_t *m = e->ctl + (RW_RECV_SLOTS + e->send_slot) * RW_MSG_LEN;
	int rc;

	e->send_slot = (e->send_slot + 1) % RW_SEND_SLOTS;
	memset(m, 0, RW_MSG_LEN);
	put32(m, RW_MAGIC);
	put32(m + 4, type);
	put64(m + 8, addr);
	put32(m + 16, rkey);
	put32(m + 20, len);
	put32(m + 24, round);
	put32(m + 28, size);
	rc = post(e, RW_OP_SEND, m, RW_MSG_LEN, 0, 0);
	if (rc)
		rw_fail(e, "post SEND (message %u): %s", type, strerror(-rc));
	return rc;
}

static int send_advert(struct rw *e)
{
	return send_msg(e, MSG_ADVERT, (uint64_t)(uintptr_t)e->exposed, e->exposed_rkey, e->max, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */

void rw_init(struct rw *e, const struct rw_cfg *cfg, const struct rw_ops *ops, void *be, const char *name)
{
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	e->ops = ops;
	e->be = be;
	e->name = name;
	e->max = rw_max_transfer(cfg);
	snprintf(e->first_error_status, sizeof(e->first_error_status), "none");
}

void rw_set_buffers(struct rw *e, uint8_t *exposed, uint8_t *local, uint8_t *ctl, uint32_t exposed_rkey)
{
	e->exposed = exposed;
	e->local = local;
	e->ctl = ctl;
	e->exposed_rkey = exposed_rkey;
}

int rw_start(struct rw *e, uint64_t now_ms)
{
	e->now_ms = now_ms;
	for (unsigned i = 0; i < RW_RECV_SLOTS; i++) {
		int rc = post_recv_slot(e, i);

		if (rc) {
			rw_fail(e, "post receive: %s", strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* rw test                                                             */

static uint32_t cur_size(const struct rw *e)
{
	return e->cfg.sizes[e->size_i];
}

/* Our side of a round: R area filled with our read pattern, W area clear. */
static void prepare_areas(struct rw *e, uint32_t tag_r, uint32_t round, uint32_t size)
{
	memset(e->exposed, 0, (size_t)size + RW_GUARD);
	rw_pattern(e->exposed + e->max + RW_GUARD, size, tag_r, round, size);
}

static bool check_w_area(struct rw *e, uint32_t tag, uint32_t round, uint32_t size, const char *what)
{
	long d = rw_pattern_diff(e->exposed, size, tag, round, size);
	long g = zero_diff(e->exposed + size, RW_GUARD);

	if (d >= 0) {
		rw_fail(e, "%s: size %u round %u: data written by the peer differs at offset %ld", what, size,
			round, d);
		return false;
	}
	if (g >= 0) {
		rw_fail(e, "%s: size %u round %u: the peer wrote past the end (guard byte %ld)", what, size, round,
			g);
		return false;
	}
	return true;
}

/* Our active step: WRITE (tag_w) into the peer's W area, READ its R area. */
static void start_rdma(struct rw *e, uint32_t tag_w, uint32_t round, uint32_t size)
{
	uint8_t *src = e->local, *dst = e->local + e->max;
	int rc;

	if (!e->have_peer || size > e->rlen) {
		rw_fail(e, "size %u exceeds the peer's buffer (%u)", size, e->rlen);
		return;
	}
	rw_pattern(src, size, tag_w, round, size);
	memset(dst, 0, (size_t)size + RW_GUARD);
	rc = post(e, RW_OP_WRITE, src, size, e->raddr, e->rkey);
	if (!rc)
		rc = post(e, RW_OP_READ, dst, size, e->raddr + e->rlen + RW_GUARD, e->rkey);
	if (rc) {
		rw_fail(e, "post RDMA (size %u): %s", size, strerror(-rc));
		return;
	}
	e->rdma_pending = 2;
}

static void rdma_step_done(struct rw *e)
{
	uint32_t size = cur_size(e);
	bool client = e->cfg.role == RW_CLIENT;
	uint32_t tag_peer_r = client ? RW_TAG_SR : RW_TAG_CR;
	const uint8_t *dst = e->local + e->max;
	long d = rw_pattern_diff(dst, size, tag_peer_r, e->round, size);
	long g = zero_diff(dst + size, RW_GUARD);

	if (d >= 0) {
		rw_fail(e, "RDMA READ size %u round %u: data differs at offset %ld", size, e->round, d);
		return;
	}
	if (g >= 0) {
		rw_fail(e, "RDMA READ size %u round %u: placed past the end (guard byte %ld)", size, e->round, g);
		return;
	}
	note(e, "size %u round %u: our WRITE done, READ verified", size, e->round);
	if (client) {
		send_msg(e, MSG_CDONE, 0, 0, 0, e->round, size);
	} else {
		e->rounds_done++;
		send_msg(e, MSG_SDONE, 0, 0, 0, e->round, size);
	}
}

static void client_next_round(struct rw *e)
{
	uint32_t size;

	if (e->round + 1 < e->cfg.rounds) {
		e->round++;
	} else if (e->size_i + 1 < e->cfg.nsizes) {
		e->size_i++;
		e->round = 0;
	} else {
		e->bye = true;
		send_msg(e, MSG_BYE, 0, 0, 0, e->rounds_done, 0);
		return;
	}
	size = cur_size(e);
	prepare_areas(e, RW_TAG_CR, e->round, size);
	send_msg(e, MSG_ROUND, 0, 0, 0, e->round, size);
}

static void client_begin(struct rw *e)
{
	switch (e->cfg.test) {
	case RW_T_RW:
		e->size_i = 0;
		e->round = 0;
		prepare_areas(e, RW_TAG_CR, 0, cur_size(e));
		send_msg(e, MSG_ROUND, 0, 0, 0, 0, cur_size(e));
		break;
	case RW_T_BADWRITE: {
		int rc;

		rw_pattern(e->local, 16, RW_TAG_CW, 0, 16);
		rc = post(e, RW_OP_WRITE, e->local, 16, e->raddr, RW_BAD_STAG);
		if (rc) {
			rw_fail(e, "post WRITE to the bad STag: %s", strerror(-rc));
			return;
		}
		printf("%s: WRITE of 16 bytes to STag 0x%08x posted, then a PROBE SEND\n", e->name, RW_BAD_STAG);
		send_msg(e, MSG_PROBE, 0, 0, 0, 0, 0);
		break;
	}
	case RW_T_BADREAD: {
		int rc = post(e, RW_OP_READ, e->local + e->max, 16, e->raddr, RW_BAD_STAG);

		if (rc) {
			rw_fail(e, "post READ from the bad STag: %s", strerror(-rc));
			return;
		}
		printf("%s: READ of 16 bytes from STag 0x%08x posted\n", e->name, RW_BAD_STAG);
		break;
	}
	case RW_T_FLOOD:
		e->flood_start_ms = e->now_ms;
		e->flood_started = true;
		break; /* rw_tick posts */
	case RW_T_VICTIM:
		rw_fail(e, "victim is a server test");
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Flood                                                               */

static bool flood_stopped(const struct rw *e)
{
	return e->disc_requested || e->peer_gone || e->finished;
}

static void flood_fill(struct rw *e)
{
	while (!flood_stopped(e) && e->outstanding_rdma < e->cfg.flood_depth) {
		bool read = (e->seq & 1) != 0;
		uint32_t len = e->cfg.flood_size;
		int rc;

		if (len > e->rlen)
			len = e->rlen;
		if (read)
			rc = post(e, RW_OP_READ, e->local + e->max, len, e->raddr + e->rlen + RW_GUARD, e->rkey);
		else
			rc = post(e, RW_OP_WRITE, e->local, len, e->raddr, e->rkey);
		if (rc == -ENOSPC && e->seq >= RW_MAX_WRS) {
			rw_fail(e, "flood: %u work requests and still no disconnect", RW_MAX_WRS);
			return;
		}
		if (rc) {
			/* The peer may be closing already: its DISCONNECTED decides. */
			note(e, "flood: post failed (%s), stopping", strerror(-rc));
			e->peer_gone = true;
			e->in_flight_at_disc = e->outstanding_rdma;
			return;
		}
		e->outstanding_rdma++;
	}
}

static void flood_disconnect(struct rw *e)
{
	int rc;

	e->disc_requested = true;
	e->in_flight_at_disc = e->outstanding_rdma;
	printf("%s: disconnecting with %u RDMA work requests in flight (%llu completed so far)\n", e->name,
	       e->outstanding_rdma, (unsigned long long)e->flood_ok);
	rc = e->ops->disconnect(e->be);
	if (rc)
		rw_fail(e, "disconnect: %s", strerror(-rc));
}

void rw_tick(struct rw *e, uint64_t now_ms)
{
	e->now_ms = now_ms;
	if (e->cfg.test != RW_T_FLOOD || e->finished || !e->have_peer || e->disc_requested || e->peer_gone)
		return;
	if (e->cfg.role == RW_CLIENT)
		flood_fill(e);
	if (e->cfg.disconnector == e->cfg.role && e->flood_started &&
	    now_ms >= e->flood_start_ms + e->cfg.flood_ms)
		flood_disconnect(e);
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */

static void on_msg(struct rw *e, const uint8_t *m)
{
	uint32_t type = get32(m + 4), round = get32(m + 24), size = get32(m + 28);

	if (get32(m) != RW_MAGIC) {
		rw_fail(e, "message without the magic");
		return;
	}
	if (type == MSG_ADVERT) {
		e->have_peer = true;
		e->raddr = get64(m + 8);
		e->rkey = get32(m + 16);
		e->rlen = get32(m + 20);
		note(e, "peer buffer 0x%llx rkey 0x%08x max %u", (unsigned long long)e->raddr, e->rkey, e->rlen);
		if (e->cfg.role == RW_SERVER) {
			send_advert(e);
			if (e->cfg.test == RW_T_FLOOD) {
				e->flood_start_ms = e->now_ms;
				e->flood_started = true;
			}
		} else {
			client_begin(e);
		}
		return;
	}
	if (e->cfg.role == RW_SERVER) {
		switch (type) {
		case MSG_ROUND:
			if (e->cfg.test != RW_T_RW || size == 0 || size > e->max) {
				rw_fail(e, "ROUND of size %u (our max %u, test %s)", size, e->max,
					rw_test_name(e->cfg.test));
				return;
			}
			e->round = round;
			e->cfg.sizes[0] = size; /* the client's list rules */
			e->size_i = 0;
			prepare_areas(e, RW_TAG_SR, round, size);
			send_msg(e, MSG_READY, 0, 0, 0, round, size);
			return;
		case MSG_CDONE:
			if (round != e->round || size != cur_size(e)) {
				rw_fail(e, "CDONE for round %u size %u out of turn", round, size);
				return;
			}
			if (!check_w_area(e, RW_TAG_CW, round, size, "client's RDMA WRITE"))
				return;
			start_rdma(e, RW_TAG_SW, round, size);
			return;
		case MSG_BYE:
			if (round != e->rounds_done) {
				rw_fail(e, "client reports %u rounds, we completed %u", round, e->rounds_done);
				return;
			}
			e->bye = true;
			note(e, "BYE after %u rounds", round);
			return;
		case MSG_PROBE:
			rw_fail(e, "PROBE received: the client's bad access was not detected");
			return;
		default:
			break;
		}
	} else {
		switch (type) {
		case MSG_READY:
			if (round != e->round || size != cur_size(e)) {
				rw_fail(e, "READY for round %u size %u out of turn", round, size);
				return;
			}
			start_rdma(e, RW_TAG_CW, round, size);
			return;
		case MSG_SDONE:
			if (round != e->round || size != cur_size(e)) {
				rw_fail(e, "SDONE for round %u size %u out of turn", round, size);
				return;
			}
			if (!check_w_area(e, RW_TAG_SW, round, size, "server's RDMA WRITE"))
				return;
			e->rounds_done++;
			printf("%s: size %u round %u verified both ways (WRITE+READ each direction)\n", e->name, size,
			       round);
			client_next_round(e);
			return;
		default:
			break;
		}
	}
	rw_fail(e, "unexpected message type %u", type);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */

void rw_established(struct rw *e, const void *pdata, size_t pdata_len)
{
	e->established = true;
	if (e->cfg.role == RW_CLIENT) {
		if (e->cfg.expect_reject >= 0) {
			rw_fail(e, "connection accepted, expected a reject");
			return;
		}
		if (!rw_pdata_ok(pdata, pdata_len, e->cfg.pdata_len, RW_PD_S)) {
			rw_fail(e, "accept private data: got %zu bytes, expected %u bytes of the server's pattern",
				pdata_len, e->cfg.pdata_len);
			return;
		}
		if (e->cfg.pdata_len)
			printf("%s: accept private data verified (%u bytes)\n", e->name, e->cfg.pdata_len);
		send_advert(e);
	}
}

void rw_rejected(struct rw *e, const void *pdata, size_t pdata_len)
{
	if (e->cfg.expect_reject < 0) {
		rw_fail(e, "connection rejected (%zu bytes of private data)", pdata_len);
		return;
	}
	if (!rw_pdata_ok(pdata, pdata_len, (size_t)e->cfg.expect_reject, RW_PD_R)) {
		rw_fail(e, "reject private data: got %zu bytes, expected %d bytes of the reject pattern", pdata_len,
			e->cfg.expect_reject);
		return;
	}
	printf("%s: rejected as expected, reject private data verified (%d bytes)\n", e->name,
	       e->cfg.expect_reject);
	finish(e);
}

void rw_reject_sent(struct rw *e)
{
	printf("%s: rejected the connection with %d bytes of private data\n", e->name, e->cfg.reject_len);
	finish(e);
}

void rw_conn_error(struct rw *e, const char *why)
{
	rw_fail(e, "connection failed: %s", why);
}

static bool error_expected(const struct rw *e)
{
	if (e->disc_requested || e->disconnected || e->peer_gone || e->bye || e->cfg.expect_reject >= 0)
		return true;
	if (e->cfg.test == RW_T_RW)
		return false;
	if (e->cfg.test == RW_T_FLOOD)
		return e->cfg.disconnector != e->cfg.role; /* the peer's close shows as errors */
	return true; /* the error tests end with errors */
}

void rw_completion(struct rw *e, uint64_t wr_id, bool ok, const char *status, uint32_t byte_len)
{
	uint8_t st;
	enum rw_wr_op op;

	if (wr_id >= RW_MAX_WRS || WR_ST(e->wr_state[wr_id]) != RW_WR_POSTED) {
		rw_fail(e, "completion for work request %llu, which is %s", (unsigned long long)wr_id,
			wr_id >= RW_MAX_WRS || WR_ST(e->wr_state[wr_id]) == RW_WR_FREE ? "not posted"
										: "already completed");
		return;
	}
	st = e->wr_state[wr_id];
	op = WR_OP(st);
	e->wr_state[wr_id] = (uint8_t)(op << 4 | RW_WR_DONE);
	e->completed++;
	if (op == RW_OP_READ || op == RW_OP_WRITE) {
		if (e->cfg.test == RW_T_FLOOD && e->outstanding_rdma)
			e->outstanding_rdma--;
	}
	if (!ok) {
		static const char *const opn[] = { "SEND", "WRITE", "READ", "RECV" };

		e->failed_wcs++;
		if (!e->any_failed || wr_id > e->max_failed_seq)
			e->max_failed_seq = wr_id;
		e->any_failed = true;
		if (!e->first_error_seen) {
			e->first_error_seen = true;
			e->first_error_op = op;
			snprintf(e->first_error_status, sizeof(e->first_error_status), "%s", status);
			printf("%s: first failed completion: %s %s\n", e->name, opn[op], status);
		}
		if (op == RW_OP_READ && e->cfg.test == RW_T_BADREAD)
			e->bad_read_failed = true;
		if (!error_expected(e)) {
			rw_fail(e, "%s failed: %s", opn[op], status);
			return;
		}
		if (!e->peer_gone && !e->disc_requested) {
			e->peer_gone = true;
			e->in_flight_at_disc = e->outstanding_rdma + 1;
		}
		if (e->cfg.test == RW_T_BADWRITE || e->cfg.test == RW_T_BADREAD || e->cfg.test == RW_T_VICTIM)
			finish(e);
		return;
	}
	if (op == RW_OP_READ && e->cfg.test == RW_T_BADREAD) {
		rw_fail(e, "READ from the bad STag completed successfully");
		return;
	}
	switch (op) {
	case RW_OP_RECV: {
		unsigned slot = 0;

		while (slot < RW_RECV_SLOTS && e->recv_seq[slot] != wr_id)
			slot++;
		if (slot == RW_RECV_SLOTS) {
			rw_fail(e, "receive completion %llu without a slot", (unsigned long long)wr_id);
			return;
		}
		if (byte_len != RW_MSG_LEN) {
			rw_fail(e, "message of %u bytes, expected %u", byte_len, RW_MSG_LEN);
			return;
		}
		/* Messages still count after DISCONNECTED (the CM event can
		 * overtake the completion); only a failed test stops here. */
		if (e->failed)
			return;
		on_msg(e, e->ctl + slot * RW_MSG_LEN);
		/* No repost once the last message is in: siw's user-space
		 * receive queue never completes a receive posted after its
		 * flush (the peer may be closing right now). */
		if (!e->finished && !e->disc_requested && !e->peer_gone && !e->disconnected && !e->bye &&
		    post_recv_slot(e, slot))
			rw_fail(e, "repost receive failed");
		return;
	}
	case RW_OP_SEND:
		if (e->bye && e->cfg.role == RW_CLIENT && !e->disc_requested && e->cfg.test == RW_T_RW) {
			int rc;

			e->disc_requested = true;
			rc = e->ops->disconnect(e->be);
			if (rc)
				rw_fail(e, "disconnect: %s", strerror(-rc));
		}
		return;
	case RW_OP_WRITE:
	case RW_OP_READ:
		if (e->cfg.test == RW_T_FLOOD) {
			e->flood_ok++;
			flood_fill(e);
			return;
		}
		if (e->cfg.test == RW_T_RW && e->rdma_pending && --e->rdma_pending == 0)
			rdma_step_done(e);
		return;
	}
}

void rw_disconnected(struct rw *e)
{
	if (e->disconnected)
		return;
	e->disconnected = true;
	if (!e->peer_gone && !e->disc_requested) {
		e->peer_gone = true;
		e->in_flight_at_disc = e->outstanding_rdma;
	}
	printf("%s: disconnected (%llu work requests posted, %llu completed, %llu failed)\n", e->name,
	       (unsigned long long)e->posted, (unsigned long long)e->completed, (unsigned long long)e->failed_wcs);
	if (e->finished)
		return;
	switch (e->cfg.test) {
	case RW_T_RW: /* the server's BYE check waits for the drain (rw_verdict) */
		if (e->cfg.role == RW_CLIENT && !e->disc_requested)
			rw_fail(e, "the server disconnected first");
		break;
	case RW_T_FLOOD:
		if (e->cfg.role == RW_CLIENT && e->flood_ok == 0)
			rw_fail(e, "flood: no RDMA work request completed before the disconnect");
		break;
	default:
		break;
	}
	finish(e);
}

bool rw_done(const struct rw *e)
{
	if (!e->finished)
		return false;
	if (!e->established || rw_outstanding(e) == 0)
		return true;
	return e->now_ms >= e->end_ms + e->cfg.drain_ms;
}

int rw_verdict(struct rw *e)
{
	if (e->established && rw_outstanding(e) != 0) {
		static const char *const opn[] = { "SEND", "WRITE", "READ", "RECV" };
		uint64_t late = 0, n[4] = { 0, 0, 0, 0 };

		for (uint64_t i = 0; i < e->seq; i++) {
			if (WR_ST(e->wr_state[i]) != RW_WR_POSTED)
				continue;
			/* After the last request the peer flushed: probably
			 * posted when the QP was in ERROR already. */
			bool after = e->any_failed && i > e->max_failed_seq;

			printf("%s: never completed: work request %llu (%s)%s\n", e->name, (unsigned long long)i,
			       opn[WR_OP(e->wr_state[i])], after ? ", behind the last flushed one" : "");
			late += after;
			n[WR_OP(e->wr_state[i])]++;
		}
		if (!e->cfg.tolerate_lost_wrs)
			rw_fail(e, "%llu of %llu work requests never completed", (unsigned long long)rw_outstanding(e),
				(unsigned long long)e->posted);
		else
			printf("%s: NOTE: %llu work request(s) never completed (SEND %llu WRITE %llu READ %llu "
			       "RECV %llu; %llu behind the last flushed one)\n",
			       e->name, (unsigned long long)rw_outstanding(e), (unsigned long long)n[RW_OP_SEND],
			       (unsigned long long)n[RW_OP_WRITE], (unsigned long long)n[RW_OP_READ],
			       (unsigned long long)n[RW_OP_RECV], (unsigned long long)late);
	}
	if (e->cfg.test == RW_T_FLOOD && e->cfg.role == RW_CLIENT && !e->failed && e->in_flight_at_disc == 0)
		rw_fail(e, "flood: nothing was in flight when the connection went down");
	if (e->cfg.test == RW_T_RW && e->cfg.role == RW_SERVER && e->cfg.reject_len < 0 && !e->failed && !e->bye)
		rw_fail(e, "disconnected before the client's BYE (%u rounds done)", e->rounds_done);
	if (e->cfg.test == RW_T_BADREAD && !e->failed && !e->bad_read_failed)
		rw_fail(e, "the READ from the bad STag did not fail");
	if (e->cfg.test == RW_T_RW && e->cfg.role == RW_CLIENT && e->cfg.expect_reject < 0 && !e->failed &&
	    e->rounds_done != e->cfg.nsizes * e->cfg.rounds)
		rw_fail(e, "%u of %u rounds done", e->rounds_done, e->cfg.nsizes * e->cfg.rounds);
	if (e->failed) {
		printf("%s: RESULT FAIL %s: %s\n", e->name, rw_test_name(e->cfg.test), e->why);
		return 1;
	}
	printf("%s: RESULT PASS %s: %llu work requests, each completed once (%llu failed as expected",
	       e->name, rw_test_name(e->cfg.test), (unsigned long long)e->posted, (unsigned long long)e->failed_wcs);
	if (e->cfg.test == RW_T_FLOOD)
		printf("; %llu RDMA ops done, %u in flight at the disconnect", (unsigned long long)e->flood_ok,
		       e->in_flight_at_disc);
	if (e->cfg.test == RW_T_RW)
		printf("; %u rounds verified", e->rounds_done);
	printf(")\n");
	return 0;
}
