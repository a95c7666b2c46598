/* STag hygiene: keys come from getrandom() and vary; re-registration and
 * index reuse change the key so an old STag never matches again; a
 * guessed key for a known index never places (all 255 wrong keys tried);
 * Send with Invalidate takes effect before its completion is reported;
 * no STag of another protection domain is usable. The wire cases use the
 * hostile peer (hp_peer) and check the Terminate it receives. */
#include <check.h>
#include <errno.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hp_env.h"
#include "iwt_check.h"
#include "rdmap/rdmap_wire.h"

static struct hp_env E;

#define T(l, e, c) IW_TERM_CAUSE((l), (e), (c))

/* The library links statically into this program, so this definition
 * takes the place of libc's: it counts the calls and forwards them to the
 * kernel. A key that did not come from here did not come from getrandom. */
static atomic_uint getrandom_calls;
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	atomic_fetch_add(&getrandom_calls, 1);
	return syscall(SYS_getrandom, buf, len, flags);
}

static void up(void)
{
	hp_env_up(&E, false);
}

static void reconnect(void)
{
	hp_env_reconnect(&E);
}

static void write_expect(uint32_t stag, uint64_t to, struct iw_term_cause want)
{
	uint8_t h[14], data[32];
	memset(data, 0xEE, sizeof(data));
	hp_hdr_tagged(h, IW_OP_WRITE, stag, to, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, want, h, sizeof(h));
}

/* ------------------------------------------------------------------ */
/* Keys                                                                */

START_TEST(test_keys_from_getrandom)
{
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	static uint8_t buf[64];

	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	unsigned before = atomic_load(&getrandom_calls);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr), 0);
	ck_assert_uint_gt(atomic_load(&getrandom_calls), before);
	before = atomic_load(&getrandom_calls);
	ck_assert_int_eq(iw_rereg_mr(mr, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE), 0);
	ck_assert_uint_gt(atomic_load(&getrandom_calls), before);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* Register / deregister 300 times: the index is reused (LIFO), the key
 * is never the one the index had just before, and keys spread out (300
 * draws from 255 values give about 178 distinct ones; 100 is far below
 * any plausible random outcome). */
START_TEST(test_keys_vary_on_reuse)
{
	enum { N = 300 };
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	static uint8_t buf[64];
	bool seen[256] = { false };
	int distinct = 0;
	uint32_t prev = 0;

	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr), 0);
		uint32_t s = iw_mr_stag(mr);
		if (i) {
			ck_assert_uint_eq(s >> 8, prev >> 8);
			ck_assert_uint_ne(s, prev);
		}
		if (!seen[s & 0xFF]) {
			seen[s & 0xFF] = true;
			distinct++;
		}
		prev = s;
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
	}
	ck_assert_int_ge(distinct, 100);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* Re-registration: a new key every time, never the previous one. */
START_TEST(test_keys_vary_on_rereg)
{
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	static uint8_t buf[64];
	bool seen[256] = { false };
	int distinct = 0;

	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	ck_assert_int_eq(iw_alloc_pd(ctx, &pd), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr), 0);
	uint32_t prev = iw_mr_stag(mr);
	for (int i = 0; i < 300; i++) {
		ck_assert_int_eq(iw_rereg_mr(mr, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE), 0);
		uint32_t s = iw_mr_stag(mr);
		ck_assert_uint_eq(s >> 8, prev >> 8);
		ck_assert_uint_ne(s, prev);
		if (!seen[s & 0xFF]) {
			seen[s & 0xFF] = true;
			distinct++;
		}
		prev = s;
	}
	ck_assert_int_ge(distinct, 100);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Old and guessed STags on the wire                                   */

/* After a re-registration the old STag is refused; the region under the
 * new STag is untouched. */
START_TEST(test_old_stag_after_rereg)
{
	up();
	uint32_t old = hp_mr_stag(&E, HP_MR_W);
	ck_assert_int_eq(iw_rereg_mr(E.mr[HP_MR_W], hp_mr_ptr(&E, HP_MR_W), HP_MR_LEN,
				     IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE), 0);
	ck_assert_uint_ne(hp_mr_stag(&E, HP_MR_W), old);
	write_expect(old, hp_mr_to(&E, HP_MR_W), T(1, 1, 0x00));
	hp_env_fini(&E);
}
END_TEST

/* Deregistered, and the index handed to a new region: the old STag does
 * not reach the new region. */
START_TEST(test_old_stag_after_index_reuse)
{
	struct iw_mr *a, *b;
	up();
	ck_assert_int_eq(iw_reg_mr(E.pd, hp_mr_ptr(&E, HP_MR_W), HP_MR_LEN,
				   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &a), 0);
	uint32_t old = iw_mr_stag(a);
	ck_assert_int_eq(iw_dereg_mr(a), 0);
	ck_assert_int_eq(iw_reg_mr(E.pd, hp_mr_ptr(&E, HP_MR_ALL), HP_MR_LEN,
				   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &b), 0);
	ck_assert_uint_eq(iw_mr_stag(b) >> 8, old >> 8); /* same index */
	ck_assert_uint_ne(iw_mr_stag(b), old);
	write_expect(old, hp_mr_to(&E, HP_MR_ALL), T(1, 1, 0x00));
	ck_assert_int_eq(iw_dereg_mr(b), 0);
	hp_env_fini(&E);
}
END_TEST

/* Every one of the 255 wrong keys for the index of a writable region: each
 * attempt is refused with (1,1,0x00) and nothing is placed; the right key
 * still works afterwards. One connection per attempt. */
START_TEST(test_guessed_keys)
{
	up();
	uint32_t real = hp_mr_stag(&E, HP_MR_W);
	uint64_t to = hp_mr_to(&E, HP_MR_W);
	for (uint32_t k = 1; k < 256; k++) {
		uint32_t guess = (real & ~0xFFu) | ((real + k) & 0xFFu);
		write_expect(guess, to, T(1, 1, 0x00));
		reconnect();
	}
	/* The right STag places. */
	uint8_t data[32];
	memset(data, 0x6B, sizeof(data));
	ck_assert_int_eq(hp_send_write(E.peer, real, to + 100, data, sizeof(data)), 0);
	hp_env_allow(&E, hp_mr_ptr(&E, HP_MR_W) + 100, data, sizeof(data));
	/* A SEND behind it proves the WRITE was placed (in order). */
	ck_assert_int_eq(hp_send_send(E.peer, "done", 4), 0);
	hp_env_allow(&E, E.arena + E.recv_off, "done", 4);
	E.may_succeed[0] = true;
	struct iw_wc wc;
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	E.ndone[0] = 1;
	hp_env_check_guards(&E);
	hp_env_fini(&E);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Invalidation                                                        */

static void send_inv(uint32_t stag, const char *msg, uint8_t *out, size_t *len, size_t cap)
{
	uint8_t h[18];
	hp_hdr_untagged(h, IW_OP_SEND_INV, 0, E.peer->send_msn++, 0, true, stag);
	ssize_t n = hp_build(E.peer, h, sizeof(h), msg, strlen(msg), out + *len, cap - *len);
	ck_assert_int_gt(n, 0);
	*len += (size_t)n;
}

/* Send with Invalidate, then at once (same write) a WRITE to the STag it
 * invalidated: the WRITE is refused although it arrived before anything
 * could be reported; the receive completes with WITH_INV. */
START_TEST(test_send_inv_then_write_same_burst)
{
	uint8_t buf[256], h[14], data[16] = { 0 };
	size_t len = 0;
	up();
	uint32_t stag = hp_mr_stag(&E, HP_MR_W);
	send_inv(stag, "invalidate", buf, &len, sizeof(buf));
	hp_hdr_tagged(h, IW_OP_WRITE, stag, hp_mr_to(&E, HP_MR_W), true);
	ssize_t n = hp_build(E.peer, h, sizeof(h), data, sizeof(data), buf + len, sizeof(buf) - len);
	ck_assert_int_gt(n, 0);
	len += (size_t)n;
	ck_assert_int_eq(hp_send_raw(E.peer, buf, len, 2000), 0);
	hp_env_allow(&E, E.arena + E.recv_off, "invalidate", 10);
	E.may_succeed[0] = true;
	hp_env_expect_term(&E, T(1, 1, 0x00), h, sizeof(h));
	ck_assert_int_eq(E.status[0], IW_WC_SUCCESS);
	hp_env_fini(&E);
}
END_TEST

/* The application sees the completion (WITH_INV, the STag named), and a
 * WRITE racing right behind it fails. */
START_TEST(test_send_inv_completion_then_write)
{
	uint8_t buf[256];
	size_t len = 0;
	struct iw_wc wc;
	up();
	uint32_t stag = hp_mr_stag(&E, HP_MR_W);
	send_inv(stag, "inv", buf, &len, sizeof(buf));
	ck_assert_int_eq(hp_send_raw(E.peer, buf, len, 2000), 0);
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(200);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1000);
	ck_assert(wc.flags & IW_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_stag, stag);
	E.ndone[0] = 1; /* taken here */
	hp_env_allow(&E, E.arena + E.recv_off, "inv", 3);
	write_expect(stag, hp_mr_to(&E, HP_MR_W), T(1, 1, 0x00));
	hp_env_fini(&E);
}
END_TEST

/* Invalidating the same STag twice: the second is refused (RFC 5040 sec.
 * 7: remote protection, 0x09 STag cannot be invalidated). */
START_TEST(test_send_inv_twice)
{
	uint8_t buf[256], h[18];
	size_t len = 0;
	up();
	uint32_t stag = hp_mr_stag(&E, HP_MR_W);
	send_inv(stag, "one", buf, &len, sizeof(buf));
	hp_hdr_untagged(h, IW_OP_SEND_INV, 0, E.peer->send_msn, 0, true, stag);
	send_inv(stag, "two", buf, &len, sizeof(buf));
	ck_assert_int_eq(hp_send_raw(E.peer, buf, len, 2000), 0);
	hp_env_allow(&E, E.arena + E.recv_off, "one", 3);
	hp_env_allow_either(&E, E.arena + E.recv_off + HP_RECV_LEN, "two", 3);
	E.may_succeed[0] = true;
	hp_env_expect_term(&E, T(0, 1, 0x09), h, sizeof(h));
	hp_env_fini(&E);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Protection domains                                                  */

/* A region of another PD over memory the QP's PD also maps: a WRITE,
 * a Read Request and a Send with Invalidate naming its STag are all
 * refused; the region stays intact and valid. */
START_TEST(test_other_pd)
{
	struct iw_pd *pd2;
	struct iw_mr *mr2;
	uint8_t h[18];
	up();
	ck_assert_int_eq(iw_alloc_pd(E.ctx, &pd2), 0);
	ck_assert_int_eq(iw_reg_mr(pd2, hp_mr_ptr(&E, HP_MR_ALL), HP_MR_LEN,
				   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ, &mr2), 0);
	uint32_t s2 = iw_mr_stag(mr2);
	uint64_t to = hp_mr_to(&E, HP_MR_ALL);
	switch (_i) {
	case 0:
		write_expect(s2, to, T(1, 1, 0x02));
		break;
	case 1:
		hp_hdr_untagged(h, IW_OP_READ_REQ, 1, 1, 0, true, 0);
		ck_assert_int_eq(hp_send_read_req(E.peer, 0x100, 0, 16, s2, to), 0);
		hp_env_expect_term(&E, T(0, 1, 0x03), h, sizeof(h));
		break;
	default: {
		uint8_t buf[128];
		size_t len = 0;
		hp_hdr_untagged(h, IW_OP_SEND_INV, 0, 1, 0, true, s2);
		send_inv(s2, "x", buf, &len, sizeof(buf));
		ck_assert_int_eq(hp_send_raw(E.peer, buf, len, 2000), 0);
		hp_env_allow_either(&E, E.arena + E.recv_off, "x", 1);
		hp_env_expect_term(&E, T(0, 1, 0x09), h, sizeof(h));
		break;
	}
	}
	/* mr2 is still valid in its own PD: a QP of pd2 could use it. */
	ck_assert_uint_eq(iw_mr_stag(mr2), s2);
	ck_assert_int_eq(iw_dereg_mr(mr2), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	hp_env_fini(&E);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Memory going away under the peer's feet                            */

/* The peer reads 16 MiB from a region but does not drain its socket, so
 * our Read Response is stuck in transmission (sent zero copy from the
 * region). Deregistration and re-registration are refused (-EBUSY) while
 * the response needs the memory. _i == 0: the peer then drains, every
 * byte is the region's, and deregistration succeeds. _i == 1: the peer
 * resets the connection instead; deregistration succeeds soon after. */
START_TEST(test_dereg_during_read_response)
{
	enum { SZ = 16 << 20 };
	struct hp_mpa m = { HP_MPA_DEFAULT, .rcvbuf = 4096 };
	struct iw_mr *mr;
	uint8_t *mem = malloc(SZ);
	ck_assert_ptr_nonnull(mem);
	memset(mem, 0x11, SZ);
	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, NULL);
	ck_assert_int_eq(iw_reg_mr(E.pd, mem, SZ, IW_ACCESS_REMOTE_READ, &mr), 0);
	ck_assert_int_eq(hp_send_read_req(E.peer, 0x100, 0, SZ, iw_mr_stag(mr), (uint64_t)(uintptr_t)mem), 0);
	usleep(300000);
	ck_assert_int_eq(iw_dereg_mr(mr), -EBUSY);
	ck_assert_int_eq(iw_rereg_mr(mr, mem, SZ, IW_ACCESS_REMOTE_READ), -EBUSY);
	if (_i == 0) {
		struct hp_fpdu f;
		size_t got = 0;
		while (got < SZ) {
			ck_assert_int_eq(hp_recv_fpdu(E.peer, HP_WAIT_MS, &f), 1);
			ck_assert_uint_eq(f.opcode, IW_OP_READ_RESP);
			for (size_t i = 0; i < f.payload_len; i++)
				if (f.payload[i] != 0x11)
					ck_abort_msg("response byte %zu is not the region's", got + i);
			got += f.payload_len;
		}
		ck_assert(f.last);
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
	} else {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(E.peer->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(E.peer->fd);
		E.peer->fd = -1;
		uint64_t end = hp_now_ms() + 2000;
		int rc;
		while ((rc = iw_dereg_mr(mr)) == -EBUSY && hp_now_ms() < end)
			usleep(1000);
		ck_assert_int_eq(rc, 0);
		iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	}
	memset(mem, 0xAB, SZ);
	hp_env_fini(&E);
	free(mem);
}
END_TEST

/* A WRITE stalls halfway through its FPDU; the application deregisters
 * the region and reuses the memory; the rest of the FPDU arrives. None of
 * it is placed: (1,1,0x00), the STag stopped existing under the WRITE. */
START_TEST(test_dereg_during_inbound_write)
{
	enum { SZ = 8192 };
	uint8_t *mem = malloc(SZ), h[14], *data = malloc(4000), *buf = malloc(8192);
	struct iw_mr *mr;
	ck_assert(mem && data && buf);
	memset(mem, 0x22, SZ);
	memset(data, 0xD1, 4000);
	up();
	ck_assert_int_eq(iw_reg_mr(E.pd, mem, SZ, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE, &mr), 0);
	hp_hdr_tagged(h, IW_OP_WRITE, iw_mr_stag(mr), (uint64_t)(uintptr_t)mem + 100, true);
	ssize_t n = hp_build(E.peer, h, sizeof(h), data, 4000, buf, 8192);
	ck_assert_int_gt(n, 3000);
	ck_assert_int_eq(hp_send_raw(E.peer, buf, 2000, 2000), 0);
	usleep(200000);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	memset(mem, 0xAB, SZ); /* reused by the application */
	ck_assert_int_eq(hp_send_raw(E.peer, buf + 2000, (size_t)n - 2000, 2000), 0);
	hp_env_expect_term(&E, T(1, 1, 0x00), h, sizeof(h));
	for (size_t i = 0; i < SZ; i++)
		if (mem[i] != 0xAB)
			ck_abort_msg("byte %zu written after deregistration", i);
	free(mem);
	free(data);
	free(buf);
	hp_env_fini(&E);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_stag");
	TCase *tc = tcase_create("stag");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_keys_from_getrandom);
	tcase_add_test(tc, test_keys_vary_on_reuse);
	tcase_add_test(tc, test_keys_vary_on_rereg);
	tcase_add_test(tc, test_old_stag_after_rereg);
	tcase_add_test(tc, test_old_stag_after_index_reuse);
	tcase_add_test(tc, test_guessed_keys);
	tcase_add_test(tc, test_send_inv_then_write_same_burst);
	tcase_add_test(tc, test_send_inv_completion_then_write);
	tcase_add_test(tc, test_send_inv_twice);
	tcase_add_loop_test(tc, test_other_pd, 0, 3);
	tcase_add_loop_test(tc, test_dereg_during_read_response, 0, 2);
	tcase_add_test(tc, test_dereg_during_inbound_write);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
