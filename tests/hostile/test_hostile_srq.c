/* Hostile peer against a QP whose receives come from a shared receive
 * queue. A message in progress takes an entry off the SRQ; when the
 * stream fails, that entry must complete exactly once with an error, the
 * entries no QP took must stay posted, and a new QP on the same SRQ must
 * receive into the next one. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hp_env.h"
#include "iwt_check.h"
#include "rdmap/rdmap_wire.h"

static struct hp_env E;

#define T(l, e, c) IW_TERM_CAUSE((l), (e), (c))

static void up(void)
{
	hp_env_up(&E, true);
}

static void reconnect(void)
{
	hp_env_reconnect(&E);
}

/* After the failure: a new QP on the SRQ gets the next entry (1001). */
static void next_entry_works(void)
{
	struct iw_wc wc;
	reconnect();
	ck_assert_int_eq(hp_send_send(E.peer, "next", 4), 0);
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1001);
	hp_env_allow(&E, E.arena + E.recv_off + HP_RECV_LEN, "next", 4);
	hp_env_check_guards(&E);
}

/* The failing message had taken entry 1000. _i: 0 bad MO on the second
 * segment, 1 bad CRC on the second segment, 2 too long for the entry. */
START_TEST(test_srq_entry_taken_then_error)
{
	uint8_t h[18], data[64], buf[256];
	static const struct iw_term_cause want[] = { { 1, 2, 0x04, true }, { 2, 0, 0x02, true }, { 1, 2, 0x05, true } };
	memset(data, 0x4E, sizeof(data));
	up();
	hp_env_require(&E, 1000);
	if (_i == 2) {
		uint8_t big[HP_RECV_LEN + 1];
		memset(big, 0x4E, sizeof(big));
		hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, true, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), big, sizeof(big)), 0);
		hp_env_expect_term(&E, want[_i], h, sizeof(h));
	} else {
		hp_hdr_untagged(h, IW_OP_SEND, 0, 1, 0, false, 0);
		ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
		hp_env_allow(&E, E.arena + E.recv_off, data, sizeof(data));
		if (_i == 0) {
			hp_hdr_untagged(h, IW_OP_SEND, 0, 1, sizeof(data) + 8, true, 0);
			ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
			hp_env_expect_term(&E, want[_i], h, sizeof(h));
		} else {
			hp_hdr_untagged(h, IW_OP_SEND, 0, 1, sizeof(data), true, 0);
			ssize_t n = hp_build(E.peer, h, sizeof(h), data, sizeof(data), buf, sizeof(buf));
			ck_assert_int_gt(n, 0);
			buf[n - 2] ^= 0x40;
			ck_assert_int_eq(hp_send_raw(E.peer, buf, (size_t)n, 2000), 0);
			hp_env_allow_either(&E, E.arena + E.recv_off + sizeof(data), data, sizeof(data));
			hp_env_expect_term(&E, want[_i], NULL, 0);
		}
	}
	ck_assert_int_ne(E.status[0], IW_WC_SUCCESS);
	for (int i = 1; i < HP_RECV_N; i++)
		ck_assert_int_eq(E.ndone[i], 0); /* still in the SRQ */
	next_entry_works();
	hp_env_fini(&E);
}
END_TEST

/* A protocol error that involves no receive (a WRITE out of bounds):
 * no SRQ entry is consumed. */
START_TEST(test_srq_untouched_by_tagged_error)
{
	uint8_t h[14], data[16] = { 0 };
	up();
	hp_hdr_tagged(h, IW_OP_WRITE, hp_mr_stag(&E, HP_MR_W), hp_mr_to(&E, HP_MR_W) + HP_MR_LEN - 8, true);
	ck_assert_int_eq(hp_send_fpdu(E.peer, h, sizeof(h), data, sizeof(data)), 0);
	hp_env_expect_term(&E, T(1, 1, 0x01), h, sizeof(h));
	for (int i = 0; i < HP_RECV_N; i++)
		ck_assert_int_eq(E.ndone[i], 0);
	/* The next QP gets entry 1000 then. */
	struct iw_wc wc;
	reconnect();
	ck_assert_int_eq(hp_send_send(E.peer, "first", 5), 0);
	uint64_t end = hp_now_ms() + HP_WAIT_MS;
	int n;
	while ((n = iw_poll_cq(E.cq, 1, &wc)) == 0 && hp_now_ms() < end)
		usleep(1000);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1000);
	hp_env_allow(&E, E.arena + E.recv_off, "first", 5);
	hp_env_check_guards(&E);
	hp_env_fini(&E);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_srq");
	TCase *tc = tcase_create("srq");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_srq_entry_taken_then_error, 0, 3);
	tcase_add_test(tc, test_srq_untouched_by_tagged_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
