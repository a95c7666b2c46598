/* Hostile peer that never reads: our socket fills up. A post that meets
 * the full socket must only queue its WR: it used to cost one sendmsg
 * (failing with EAGAIN) per post, a wasted syscall the peer could make
 * us pay at will. The peer then resets; every WR completes once. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hp_env.h"
#include "iwt_check.h"
#include "iwt_common.h"

static struct hp_env E;

enum { SZ = 16 << 20, MAX_WRITES = 8, POSTS = 20 };

/* Wait (at most 10 s) until nothing more went into the socket for
 * 300 ms; returns the bytes sent by then. */
static uint64_t settle(void)
{
	struct iw_qp_stats st;
	uint64_t last = (uint64_t)-1, end = hp_now_ms() + 10000;
	int same = 0;

	while (same < 6 && hp_now_ms() < end) {
		iw_qp_get_stats(E.qp, &st);
		same = st.bytes_tx == last ? same + 1 : 0;
		last = st.bytes_tx;
		usleep(50 * 1000);
	}
	return last;
}

/* 16 MiB WRITEs until the socket is full whatever the buffer sysctls
 * (the peer's receive buffer is 4 KiB; ours may grow to tcp_wmem's max). */
static void fill_socket(uint8_t *mem, struct iw_mr *mr)
{
	uint64_t before, after;

	for (int w = 0; w < MAX_WRITES; w++) {
		struct iw_sge sge = { (uint64_t)(uintptr_t)mem, SZ, iw_mr_stag(mr) };
		struct iw_send_wr wr = { .wr_id = 100u + (uint64_t)w, .sg_list = &sge, .num_sge = 1,
					 .opcode = IW_WR_RDMA_WRITE, .remote_addr = 0x10000, .rkey = 0x4200 },
				  *bad = NULL;
		ck_assert_int_eq(iw_post_send(E.qp, &wr, &bad), 0);
		hp_env_track(&E, wr.wr_id, true); /* taken by the socket: success */
		before = settle();
		usleep(100 * 1000);
		after = settle();
		if (after == before && after < (uint64_t)(w + 1) * SZ)
			return; /* this WRITE is stuck in front of a full socket */
	}
	ck_abort_msg("the socket never filled");
}

START_TEST(test_post_on_full_socket)
{
	struct hp_mpa m = { HP_MPA_DEFAULT, .rcvbuf = 4096 };
	uint8_t *mem = malloc(SZ);
	struct iw_mr *mr;
	struct iw_qp_stats st0, st1;

	ck_assert_ptr_nonnull(mem);
	memset(mem, 0x5D, SZ);
	hp_env_init(&E);
	hp_env_peer_initiates(&E, &m, NULL);
	ck_assert_int_eq(iw_reg_mr(E.pd, mem, SZ, 0, &mr), 0);
	/* The peer's first FPDU opens our lock-step transmit gate. */
	ck_assert_int_eq(hp_send_send(E.peer, "go", 2), 0);
	hp_env_allow(&E, E.arena + E.recv_off, "go", 2);
	E.may_succeed[0] = true;
	fill_socket(mem, mr);

	iw_qp_get_stats(E.qp, &st0);
	for (int i = 0; i < POSTS; i++)
		hp_env_post_send(&E, 200u + (uint64_t)i, 16, false);
	usleep(100 * 1000);
	iw_qp_get_stats(E.qp, &st1);
	/* The socket stays full (the peer reads nothing): no sendmsg can
	 * succeed, so none is tried until EPOLLOUT. One is tolerated for an
	 * EPOLLOUT that a last window update may still produce. */
	ck_assert_msg(st1.tx_syscalls - st0.tx_syscalls <= 1, "%llu sendmsg calls for %d posts on a full socket",
		      (unsigned long long)(st1.tx_syscalls - st0.tx_syscalls), POSTS);
	ck_assert_uint_eq(st1.bytes_tx, st0.bytes_tx);

	/* The peer resets: every WR completes exactly once (flushed). */
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	ck_assert_int_eq(setsockopt(E.peer->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(E.peer->fd);
	E.peer->fd = -1;
	iw_cm_ack_event(hp_env_event(&E, IW_CM_EVENT_DISCONNECTED, HP_WAIT_MS));
	ck_assert_int_eq(iw_qp_state(E.qp), IW_QPS_ERROR);
	hp_env_drain(&E, NULL);
	for (int i = 0; i < E.n_wr; i++)
		if (E.wr_id[i] >= 200 && E.wr_id[i] < 200 + POSTS)
			ck_assert_int_eq(E.status[i], IW_WC_WR_FLUSH_ERR);
	hp_env_check_guards(&E);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	free(mem);
	hp_env_fini(&E);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostile_txfull");
	TCase *tc = tcase_create("txfull");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_post_on_full_socket);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
