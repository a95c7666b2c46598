/* Fault injection over real sockets: peers that reset, die, stop reading
 * or vanish, listeners flooded with silent connections, closed ports and
 * MPA timeouts. Every fault ends with every outstanding work request
 * completed exactly once (flush or error status; WRITEs and SENDs the
 * transport had already handed to the kernel may complete successfully)
 * and the right CM event. Peers are raw sockets of this process, a forked
 * child running the library, or a second QP of this process inside a
 * network namespace the test creates. Every wait is bounded. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fx.h"
#include "iwt_ddp.h"
#include "iwt_fpdu.h"
#include "iwt_handshake.h"
#include "rdmap/rdmap_wire.h"

#define MIB (1024u * 1024u)

/* ------------------------------------------------------------------ */
/* Connection setup failures                                           */

/* Nobody listens: CONNECT_ERROR -ECONNREFUSED; the QP stays in INIT with
 * its receives, and can be destroyed (or connected again). */
START_TEST(test_connect_closed_port)
{
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	static uint8_t buf[4096];
	struct iw_mr *mr;

	fx_closed_port(&a);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_reg_mr(e.pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr), 0);
	fx_post_recv(&e, buf, sizeof(buf), mr, 1);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, NULL), 0);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_int_eq(ev->status, -ECONNREFUSED);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_qp_state(e.qp), IW_QPS_INIT);
	/* Sends need a connection. */
	struct iw_sge sge = { (uint64_t)(uintptr_t)buf, 16, iw_mr_stag(mr) };
	struct iw_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND }, *bad;
	ck_assert_int_eq(iw_post_send(e.qp, &wr, &bad), -EPIPE);
	ck_assert_ptr_eq(bad, &wr);
	fx_pump(20);
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(e.cq, 1, &wc), 0);
	ck_assert_int_eq(iw_destroy_qp(e.qp), 0); /* drops the receive, releases its region */
	e.qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	fx_ep_fini(&e);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* The new parameters are range-checked. */
START_TEST(test_param_ranges)
{
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	static const int bad_dead[] = { -1, 1, 99 };

	fx_closed_port(&a);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	for (size_t i = 0; i < sizeof(bad_dead) / sizeof(bad_dead[0]); i++) {
		struct iw_conn_param p = { .dead_peer_timeout_ms = bad_dead[i] };
		ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &p), -EINVAL);
	}
	struct iw_conn_param ok = { .dead_peer_timeout_ms = 100, .max_ulpdu_rx = 65535 };
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &ok), 0);
	fx_ev_expect_ack(ch, IW_CM_EVENT_CONNECT_ERROR);
	fx_ep_fini(&e);

	/* Backlogs <= 0 (the default) and huge ones (clamped to 4096) are
	 * accepted; a 1 ms Request timeout too. */
	struct iw_listen_param lp = { .backlog = 1 << 30, .request_timeout_ms = 1 };
	struct iw_cm_id *l = fx_listen(ch, &lp, &a);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	lp.backlog = -5;
	l = fx_listen(ch, &lp, &a);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* Server side: a connection that sends no (or half an) MPA Request is
 * reset after the listener's request timeout; the application never
 * hears of it. A Request that makes it in time is unaffected. */
START_TEST(test_request_timeout)
{
	struct iw_listen_param lp = { .backlog = 8, .request_timeout_ms = 300 };
	struct iw_cm_channel *ch;
	struct sockaddr_storage a;
	uint8_t req[64];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	struct iw_cm_id *l = fx_listen(ch, &lp, &a);
	int silent = fx_raw_connect(&a), half = fx_raw_connect(&a);
	size_t rl = iwt_mpa_req_bytes(0x50, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL, 0, req);
	ck_assert_int_eq(send(half, req, 10, 0), 10);
	uint64_t t0 = fx_now_ms();
	ck_assert(!fx_raw_dropped(silent, 200));
	ck_assert(fx_raw_dropped(silent, 2000));
	ck_assert(fx_raw_dropped(half, 200));
	uint64_t dt = fx_now_ms() - t0;
	ck_assert_uint_ge(dt, 280);
	ck_assert_uint_le(dt, 2000);
	ck_assert_ptr_null(fx_ev_wait(ch, 50));
	close(silent);
	close(half);

	/* Byte-at-a-time does not extend the deadline. */
	int slow = fx_raw_connect(&a);
	t0 = fx_now_ms();
	bool dropped = false;
	for (size_t i = 0; i < rl - 1 && !dropped; i++) {
		if (send(slow, req + i, 1, MSG_NOSIGNAL) != 1)
			break;
		dropped = fx_raw_dropped(slow, 40);
	}
	ck_assert(dropped || fx_raw_dropped(slow, 2000));
	ck_assert_uint_ge(fx_now_ms() - t0, 280);
	ck_assert_uint_le(fx_now_ms() - t0, 2000);
	close(slow);
	ck_assert_ptr_null(fx_ev_wait(ch, 20));

	/* A slow but complete Request (two pieces, 150 ms apart) is fine. */
	int ok = fx_raw_connect(&a);
	ck_assert_int_eq(send(ok, req, 10, 0), 10);
	fx_pump(150);
	ck_assert_int_eq(send(ok, req + 10, rl - 10, 0), (ssize_t)(rl - 10));
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
	struct iw_cm_id *child = ev->id;
	iw_cm_ack_event(ev);
	/* Waiting for the application is not bounded by the Request timeout. */
	ck_assert(!fx_raw_dropped(ok, 500));
	ck_assert_int_eq(iw_cm_reject(child, NULL, 0), 0);
	ck_assert_int_eq(iw_cm_destroy_id(child), 0);
	close(ok);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);

	/* Bad parameters. */
	struct iw_listen_param bad = { .request_timeout_ms = -1 };
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &l), 0);
	fx_loopback(AF_INET, &a);
	ck_assert_int_eq(iw_cm_listen_param(l, (struct sockaddr *)&a, &bad), -EINVAL);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* Client side: a TCP listener that never sends the MPA Reply. The
 * connect fails with -ETIMEDOUT after timeout_ms and the peer sees its
 * connection dropped; the QP stays in INIT. */
START_TEST(test_reply_timeout)
{
	struct iw_conn_param cp = { .timeout_ms = 300 };
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	int lfd = fx_raw_listen(&a);

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	uint64_t t0 = fx_now_ms();
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &cp), 0);
	fx_pump(20);
	int fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	uint64_t dt = fx_now_ms() - t0;
	iw_cm_ack_event(ev);
	ck_assert_uint_ge(dt, 290);
	ck_assert_uint_le(dt, 3000);
	ck_assert(fx_raw_dropped(fd, 1000));
	ck_assert_int_eq(iw_qp_state(e.qp), IW_QPS_INIT);
	close(fd);
	close(lfd);
	fx_ep_fini(&e);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* Our client against one of our listeners: ESTABLISHED (true) or a
 * connect failure (false). */
static bool try_connect(struct iw_cm_channel *sch, struct iw_cm_channel *cch, const struct sockaddr_storage *a)
{
	struct fx_ep c, s;
	struct iw_cm_event *ev;
	bool ok = false;

	fx_ep_init(&c);
	fx_ep_init(&s);
	ck_assert_int_eq(iw_cm_create_id(cch, NULL, &c.id), 0);
	ck_assert_int_eq(iw_cm_connect(c.id, c.qp, (const struct sockaddr *)a, NULL), 0);
	uint64_t end = fx_now_ms() + FX_WAIT_MS;
	while (fx_now_ms() < end) {
		if (iw_cm_get_event(sch, &ev) == 0) {
			ck_assert_int_eq(ev->type, IW_CM_EVENT_CONNECT_REQUEST);
			s.id = ev->id;
			iw_cm_ack_event(ev);
			ck_assert_int_eq(iw_cm_accept(s.id, s.qp, NULL), 0);
			fx_ev_expect_ack(sch, IW_CM_EVENT_ESTABLISHED);
		}
		if (iw_cm_get_event(cch, &ev) == 0) {
			ok = ev->type == IW_CM_EVENT_ESTABLISHED;
			ck_assert_msg(ok || ev->type == IW_CM_EVENT_CONNECT_ERROR, "event %d", ev->type);
			iw_cm_ack_event(ev);
			break;
		}
		fx_pump(2);
	}
	if (ok) {
		ck_assert_int_eq(iw_cm_disconnect(c.id), 0);
		fx_ev_expect_ack(cch, IW_CM_EVENT_DISCONNECTED);
		fx_ev_expect_ack(sch, IW_CM_EVENT_DISCONNECTED);
	}
	fx_ep_fini(&c);
	fx_ep_fini(&s);
	return ok;
}

static bool raw_gone(int fd)
{
	char b[64];
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static uint64_t turned_away(const struct iw_listen_stats *st)
{
	return st->evicted_backlog + st->evicted_source + st->refused_backlog + st->refused_source;
}

/* A connection to a from the loopback address 127.0.0.host. */
static int connect_from(const struct sockaddr_storage *a, int host)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7F000000u | (uint32_t)host) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)a, fx_sa_len(a)), 0);
	return fd;
}

/* One address that refills the backlog faster than the eviction grace
 * (every pending connection is young) must not lock other addresses out:
 * a newcomer from elsewhere evicts that address's oldest one. Young
 * connections spread over many addresses are protected by the grace. */
START_TEST(test_listener_flood_one_address)
{
	enum { BACKLOG = 8 };
	struct iw_listen_param lp = { .backlog = BACKLOG };
	struct iw_cm_channel *sch, *cch;
	struct iw_listen_stats st;
	struct sockaddr_storage a;
	int fl[2 * BACKLOG];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &cch), 0);
	struct iw_cm_id *l = fx_listen(sch, &lp, &a);

	/* Many addresses, all young: the newcomer is refused. */
	for (int i = 0; i < BACKLOG; i++) {
		fl[i] = connect_from(&a, 10 + i);
		fx_pump(2);
	}
	fx_pump(5);
	ck_assert(!try_connect(sch, cch, &a));
	ck_assert_int_eq(iw_cm_listen_stats(l, &st), 0);
	ck_assert_uint_eq(st.refused_backlog, 1);
	ck_assert_uint_eq(st.evicted_majority, 0);
	for (int i = 0; i < BACKLOG; i++)
		close(fl[i]);
	for (uint64_t end = fx_now_ms() + 2000; fx_now_ms() < end; fx_pump(5))
		if (iw_cm_listen_stats(l, &st) == 0 && st.pending == 0)
			break;
	ck_assert_uint_eq(st.pending, 0);

	/* One address, all young: the newcomer gets through at once. */
	for (int i = 0; i < BACKLOG; i++) {
		fl[i] = connect_from(&a, 5);
		fx_pump(2);
	}
	fx_pump(5);
	uint64_t t0 = fx_now_ms();
	ck_assert(try_connect(sch, cch, &a));
	ck_assert_uint_lt(fx_now_ms() - t0, IW_CM_EVICT_GRACE_MS);
	ck_assert_int_eq(iw_cm_listen_stats(l, &st), 0);
	ck_assert_uint_eq(st.evicted_majority, 1);
	ck_assert_uint_eq(st.evicted_backlog, 0);
	ck_assert_uint_eq(st.requests, 1);
	for (int i = 0; i < BACKLOG; i++)
		close(fl[i]);

	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(sch), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(cch), 0);
}
END_TEST

/* The flood's connections each sent part of a Request, and the newcomer
 * is accepted in the same progress pass as they are, before their bytes
 * were read (a server short of CPU falls behind like this): the
 * candidates' waiting bytes are read at admission, found to be no whole
 * Request, and the newcomer evicts one of them. It was refused before
 * (the unread bytes protected them all; the flood suite's short-pd row
 * under load). */
START_TEST(test_listener_flood_unread_partial_requests)
{
	enum { BACKLOG = 4 };
	struct iw_listen_param lp = { .backlog = BACKLOG };
	struct iw_cm_channel *sch, *cch;
	struct iw_listen_stats st;
	struct sockaddr_storage a;
	uint8_t req[20 + 16];
	int fl[BACKLOG];

	memcpy(req, "MPA ID Req Frame", 16);
	req[16] = 0x40; /* CRC */
	req[17] = 1;
	req[18] = 0x02; /* 512 bytes of private data announced, 16 sent */
	req[19] = 0x00;
	memset(req + 20, 'p', 16);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &cch), 0);
	struct iw_cm_id *l = fx_listen(sch, &lp, &a);
	for (int i = 0; i < BACKLOG; i++) {
		fl[i] = connect_from(&a, 5);
		ck_assert_int_eq(send(fl[i], req, sizeof(req), 0), (ssize_t)sizeof(req));
	}
	ck_assert(try_connect(sch, cch, &a));
	ck_assert_int_eq(iw_cm_listen_stats(l, &st), 0);
	ck_assert_uint_eq(st.evicted_majority, 1);
	ck_assert_uint_eq(st.refused_backlog, 0);
	ck_assert_uint_eq(st.requests, 1);
	int gone = 0;
	for (int i = 0; i < BACKLOG; i++) {
		gone += raw_gone(fl[i]);
		close(fl[i]);
	}
	ck_assert_int_eq(gone, 1);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(sch), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(cch), 0);
}
END_TEST

/* A listener flooded with connections that never send a Request (issue
 * 19): at most backlog of them are held; every newcomer beyond it evicts
 * the oldest silent one (older than the eviction grace) or, when all are
 * younger, is reset at once. Legitimate clients get through below the
 * limit and during the flood; the silent ones go by the silent deadline,
 * before the Request deadline; the listener counts every decision. */
START_TEST(test_listener_flood)
{
	enum { BACKLOG = 8, FLOOD = 24 };
	struct iw_listen_param lp = { .backlog = BACKLOG, .request_timeout_ms = 4000, .silent_timeout_ms = 1500 };
	struct iw_cm_channel *sch, *cch;
	struct iw_listen_stats st;
	struct sockaddr_storage a;
	int fl[FLOOD];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &cch), 0);
	struct iw_cm_id *l = fx_listen(sch, &lp, &a);

	/* Below the limit. */
	for (int i = 0; i < BACKLOG / 2; i++)
		fl[i] = fx_raw_connect(&a);
	fx_pump(50);
	ck_assert(try_connect(sch, cch, &a));

	/* A burst over the limit: the listener keeps exactly BACKLOG. */
	uint64_t t_flood = fx_now_ms();
	for (int i = BACKLOG / 2; i < FLOOD; i++) {
		fl[i] = fx_raw_connect(&a);
		fx_pump(2); /* keep the kernel's accept queue from filling */
	}
	fx_pump(100);
	int alive = 0;
	for (int i = 0; i < FLOOD; i++)
		alive += !raw_gone(fl[i]);
	ck_assert_int_eq(alive, BACKLOG);
	ck_assert_int_eq(iw_cm_listen_stats(l, &st), 0);
	ck_assert_uint_eq(st.pending, BACKLOG);
	ck_assert_uint_eq(turned_away(&st), FLOOD - BACKLOG);
	ck_assert_uint_eq(st.requests, 1);

	/* During the flood a legitimate client gets through: the flood is
	 * older than the grace period now, so it evicts one of it. */
	fx_pump(IW_CM_EVICT_GRACE_MS);
	ck_assert(try_connect(sch, cch, &a));
	ck_assert_int_eq(iw_cm_listen_stats(l, &st), 0);
	ck_assert_uint_eq(turned_away(&st), FLOOD - BACKLOG + 1);
	ck_assert_uint_ge(st.evicted_backlog + st.evicted_source, 1);
	ck_assert_uint_eq(st.requests, 2);

	/* The rest goes by the silent deadline (1.5 s), not the Request
	 * deadline (4 s). */
	bool held[FLOOD];
	alive = 0;
	for (int i = 0; i < FLOOD; i++)
		alive += held[i] = !raw_gone(fl[i]);
	ck_assert_int_eq(alive, BACKLOG - 1);
	for (int i = 0; i < FLOOD; i++)
		ck_assert(!held[i] || fx_raw_dropped(fl[i], 5000));
	ck_assert_uint_lt(fx_now_ms() - t_flood, 4000);
	ck_assert_int_eq(iw_cm_listen_stats(l, &st), 0);
	ck_assert_uint_eq(st.timeout_silent, BACKLOG - 1);
	ck_assert_uint_eq(st.timeout_request, 0);
	ck_assert_uint_eq(st.pending, 0);
	for (int i = 0; i < FLOOD; i++)
		close(fl[i]);
	ck_assert_ptr_null(fx_ev_wait(sch, 20));
	ck_assert(try_connect(sch, cch, &a));

	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(sch), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(cch), 0);
}
END_TEST

/* Connections the application rejects while their peers keep them open:
 * each rejected socket lingers (up to 1 s, for siw's sake) but at most 64
 * at once; beyond that the FIN follows the reject frame at once. */
START_TEST(test_reject_flood)
{
	enum { N = 80, LINGER_MAX = 64 };
	struct iw_cm_channel *ch;
	struct sockaddr_storage a;
	uint8_t req[32];
	int fd[N];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	struct iw_cm_id *l = fx_listen(ch, NULL, &a);
	size_t rl = iwt_mpa_req_bytes(0x50, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL, 0, req);
	uint64_t t0 = fx_now_ms();
	for (int i = 0; i < N; i++) {
		fd[i] = fx_raw_connect(&a);
		ck_assert_int_eq(send(fd[i], req, rl, 0), (ssize_t)rl);
		struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
		struct iw_cm_id *child = ev->id;
		iw_cm_ack_event(ev);
		ck_assert_int_eq(iw_cm_reject(child, NULL, 0), 0);
		ck_assert_int_eq(iw_cm_destroy_id(child), 0);
	}
	/* Read the reject frames; count who got the FIN already. */
	int fin = 0;
	for (int i = 0; i < N; i++) {
		uint8_t b[64];
		ck_assert_uint_eq(fx_raw_read(fd[i], b, 24, 100), 24);
		ck_assert_int_eq(b[16] & 0x20, 0x20);
		fin += recv(fd[i], b, sizeof(b), MSG_DONTWAIT) == 0;
	}
	uint64_t dt = fx_now_ms() - t0;
	/* If rejecting took longer than a linger (1 s: a badly overloaded
	 * machine), early lingers ended meanwhile and made room: then only
	 * the bound is checked. */
	if (dt < 900)
		ck_assert_int_eq(fin, N - LINGER_MAX);
	else
		ck_assert_int_ge(fin, 0);
	fprintf(stderr, "reject flood: %d of %d closed at once (%llu ms)\n", fin, N, (unsigned long long)dt);
	/* The lingering ones close within their second. */
	for (int i = 0; i < N; i++)
		ck_assert(fx_raw_dropped(fd[i], 2000));
	for (int i = 0; i < N; i++)
		close(fd[i]);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* Peers that send a valid Request and leave before the application
 * looked: their ids and CONNECT_REQUESTs are dropped with them, so a
 * slow application does not accumulate anything beyond the backlog. */
START_TEST(test_request_then_leave)
{
	enum { N = 200 };
	struct iw_listen_param lp = { .backlog = 4 };
	struct iw_cm_channel *ch;
	struct sockaddr_storage a;
	uint8_t req[32];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	struct iw_cm_id *l = fx_listen(ch, &lp, &a);
	size_t rl = iwt_mpa_req_bytes(0x50, 2, iwt_mpa_w1(false, false, 4), iwt_mpa_w2(false, false, 4), NULL, 0, req);
	long long h0 = 0;
	for (int i = -1; i < N; i++) {
		if (i == 0) {
			fx_pump(50);
			h0 = fx_heap_bytes(); /* after one round: one-time growth (the context's lists) */
		}
		int fd = fx_raw_connect(&a);
		ck_assert_int_eq(send(fd, req, rl, 0), (ssize_t)rl);
		fx_pump(1);
		if (i & 1)
			fx_raw_rst(fd);
		else
			close(fd);
		fx_pump(1);
	}
	fx_pump(50);
	long long h1 = fx_heap_bytes();
	fprintf(stderr, "request-then-leave: %d peers, heap %+lld bytes\n", N, h1 - h0);
	ck_assert_int_eq(h1 - h0, 0);
	ck_assert_ptr_null(fx_ev_wait(ch, 20));
	/* The listener still works. */
	int fd = fx_raw_connect(&a);
	ck_assert_int_eq(send(fd, req, rl, 0), (ssize_t)rl);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
	struct iw_cm_id *child = ev->id;
	iw_cm_ack_event(ev);
	/* Once the application has it, a departure is reported. */
	close(fd);
	ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_ptr_eq(ev->id, child);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_destroy_id(child), 0);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Established connections                                             */

/* A FPDU from a raw peer: untagged SEND (RDMAP version 1) with CRC. */
static size_t raw_send_fpdu(uint8_t *out, size_t cap, uint32_t msn, const void *payload, size_t len)
{
	uint8_t hdr[18];
	size_t hl = iwt_ddp_untagged(hdr, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, msn, 0, true, 1);
	ssize_t n = iwt_fpdu_ref_encode(0, true, false, hdr, hl, payload, len, out, cap);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* A first SEND segment (not last) from a raw peer: a receive is then in
 * progress. */
static size_t raw_send_first_segment(uint8_t *out, size_t cap, const void *payload, size_t len)
{
	uint8_t hdr[18];
	size_t hl = iwt_ddp_untagged(hdr, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 1, 0, false, 1);
	ssize_t n = iwt_fpdu_ref_encode(0, true, false, hdr, hl, payload, len, out, cap);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* The WRs of a faulted connection: receives first, then WRITEs, READs
 * and SENDs; ids are dense from 0. */
struct load {
	uint8_t *buf;
	size_t len;
	struct iw_mr *mr;
	uint32_t n_recv, n_write, n_read, n_send;
};

static uint32_t load_post(struct fx_ep *e, struct load *ld, uint64_t raddr, uint32_t rkey, size_t wlen)
{
	uint32_t id = 0;

	for (uint32_t i = 0; i < ld->n_recv; i++, id++)
		fx_post_recv(e, ld->buf + (size_t)i * 4096, 4096, ld->mr, id);
	for (uint32_t i = 0; i < ld->n_write; i++, id++)
		fx_post_send(e, IW_WR_RDMA_WRITE, ld->buf, wlen, ld->mr, raddr, rkey, id);
	for (uint32_t i = 0; i < ld->n_read; i++, id++)
		fx_post_send(e, IW_WR_RDMA_READ, ld->buf + ld->len / 2, 65536, ld->mr, raddr, rkey, id);
	for (uint32_t i = 0; i < ld->n_send; i++, id++)
		fx_post_send(e, IW_WR_SEND, ld->buf, 65536, ld->mr, 0, 0, id);
	return id;
}

static void load_init(struct fx_ep *e, struct load *ld, size_t len)
{
	ld->len = len;
	ld->buf = calloc(1, len);
	ck_assert_ptr_nonnull(ld->buf);
	ck_assert_int_eq(iw_reg_mr(e->pd, ld->buf, len,
				   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ, &ld->mr),
			 0);
}

static void load_fini(struct load *ld)
{
	ck_assert_int_eq(iw_dereg_mr(ld->mr), 0);
	free(ld->buf);
}

/* The QP goes first: it holds the regions its WRs referenced. */
static void ep_load_fini(struct fx_ep *e, struct load *ld)
{
	ck_assert_int_eq(iw_destroy_qp(e->qp), 0);
	e->qp = NULL;
	load_fini(ld);
	fx_ep_fini(e);
}

/* Receives and READs can only fail after a fault; a WRITE or SEND after
 * a failed one fails too (the stream is gone). */
static void check_fault_statuses(const struct fx_track *t, const struct load *ld, uint32_t recv_ok_max)
{
	uint32_t recv_ok = 0;

	for (uint32_t i = 0; i < ld->n_recv; i++)
		recv_ok += t->status[i] == IW_WC_SUCCESS;
	ck_assert_uint_le(recv_ok, recv_ok_max);
	for (uint32_t i = ld->n_recv + ld->n_write; i < ld->n_recv + ld->n_write + ld->n_read; i++)
		ck_assert_msg(t->status[i] != IW_WC_SUCCESS, "READ %u succeeded", i);
	bool failed = false;
	for (uint32_t i = ld->n_recv; i < t->n; i++) {
		if (i >= ld->n_recv + ld->n_write && i < ld->n_recv + ld->n_write + ld->n_read)
			continue;
		if (failed)
			ck_assert_msg(t->status[i] != IW_WC_SUCCESS, "WR %u succeeded after a failed one", i);
		failed |= t->status[i] != IW_WC_SUCCESS;
	}
	for (uint32_t i = 0; i < t->n; i++)
		ck_assert_msg(t->status[i] == IW_WC_SUCCESS || t->status[i] == IW_WC_WR_FLUSH_ERR ||
				      t->status[i] == IW_WC_FATAL_ERR,
			      "WR %u: %s", i, iw_wc_status_str(t->status[i]));
}

/* A WRITE on a TCP QP is sent and completed inside iw_post_send (the
 * kernel took its bytes). The application's next iw_progress must not
 * sleep its timeout while that completion waits in the CQ (iwperf did,
 * 100 ms per queue depth). The raw peer is in no context of ours, so
 * nothing else can wake the call. The bound is 1 s of a 5 s timeout. */
START_TEST(test_progress_after_inline_completion)
{
	struct iw_cm_channel *ch;
	struct iw_cm_id *l;
	struct fx_ep e;
	struct sockaddr_storage a;
	static uint8_t buf[4096];
	struct iw_mr *mr;
	struct iw_wc wc;
	uint8_t req[32], rep[24], f[64];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_reg_mr(e.pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr), 0);
	fx_post_recv(&e, buf, 64, mr, 1);
	l = fx_listen(ch, NULL, &a);
	int fd = fx_raw_connect(&a);
	size_t rl = iwt_mpa_req_bytes(0x50, 2, iwt_mpa_w1(false, false, 16), iwt_mpa_w2(false, false, 16), NULL, 0,
				      req);
	ck_assert_int_eq(send(fd, req, rl, 0), (ssize_t)rl);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
	e.id = ev->id;
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_cm_accept(e.id, e.qp, NULL), 0);
	fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
	ck_assert_uint_eq(fx_raw_read(fd, rep, sizeof(rep), 200), sizeof(rep));
	/* The peer's first FPDU opens our transmit gate. */
	size_t fl = raw_send_fpdu(f, sizeof(f), 1, "hi", 2);
	ck_assert_int_eq(send(fd, f, fl, 0), (ssize_t)fl);
	uint64_t end = fx_now_ms() + FX_WAIT_MS;
	int got = 0;
	while (!got && fx_now_ms() < end) {
		fx_pump(5);
		got = iw_poll_cq(e.cq, 1, &wc);
	}
	ck_assert_int_eq(got, 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);

	fx_post_send(&e, IW_WR_RDMA_WRITE, buf, 512, mr, 0x1000, 0x1234, 2);
	uint64_t t0 = fx_now_ms();
	ck_assert_int_gt(iw_progress(fx_ctx, 5000), 0);
	ck_assert_uint_lt(fx_now_ms() - t0, 1000);
	ck_assert_int_eq(iw_poll_cq(e.cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);

	close(fd);
	fx_ev_expect_ack(ch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_destroy_qp(e.qp), 0);
	e.qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	fx_ep_fini(&e);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* The peer resets the connection while our WRITEs, READs and SENDs are
 * in flight and receives are posted. _i = 0: we are the initiator; 1: we
 * are the responder (the raw peer opens our transmit gate with a SEND);
 * 2: we are the initiator and the peer closes with a FIN instead (it
 * stops sending; everything is flushed, without FATAL_ERR). */
START_TEST(test_rst_mid_transfer)
{
	bool responder = _i == 1, fin = _i == 2;
	struct iw_cm_channel *ch;
	struct iw_cm_id *l = NULL;
	struct fx_ep e;
	struct load ld = { .n_recv = 16, .n_write = 8, .n_read = 4, .n_send = 4 };
	struct sockaddr_storage a;
	struct fx_track t;
	int lfd = -1, fd;
	static uint8_t sink[512 * 1024];

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	load_init(&e, &ld, 2 * MIB);
	if (!responder) {
		lfd = fx_raw_listen(&a);
		ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
		ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, NULL), 0);
		fd = fx_raw_accept_reply(lfd, 16, 16);
		fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
	} else {
		uint8_t req[32], rep[24];
		l = fx_listen(ch, NULL, &a);
		fd = fx_raw_connect(&a);
		size_t rl = iwt_mpa_req_bytes(0x50, 2, iwt_mpa_w1(false, false, 16), iwt_mpa_w2(false, false, 16),
					      NULL, 0, req);
		ck_assert_int_eq(send(fd, req, rl, 0), (ssize_t)rl);
		struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
		e.id = ev->id;
		iw_cm_ack_event(ev);
		ck_assert_int_eq(iw_cm_accept(e.id, e.qp, NULL), 0);
		fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
		ck_assert_uint_eq(fx_raw_read(fd, rep, sizeof(rep), 200), sizeof(rep));
	}
	uint32_t n = load_post(&e, &ld, 0x10000, 0x1234, MIB);
	fx_track_init(&t, n);
	if (responder) {
		uint8_t f[64];
		size_t fl = raw_send_fpdu(f, sizeof(f), 1, "hi", 2);
		ck_assert_int_eq(send(fd, f, fl, 0), (ssize_t)fl);
	}
	/* Take part of the traffic, then reset. */
	size_t got = fx_raw_read(fd, sink, sizeof(sink), 100);
	ck_assert_uint_gt(got, 0);
	if (fin)
		ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	else
		fx_raw_rst(fd);
	ck_assert(fx_track_wait(&t, e.cq, FX_WAIT_MS));
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_int_eq(ev->status, fin ? 0 : -ECONNRESET);
	iw_cm_ack_event(ev);
	ck_assert_int_eq(iw_qp_state(e.qp), fin ? IW_QPS_CLOSED : IW_QPS_ERROR);
	check_fault_statuses(&t, &ld, responder ? 1 : 0);
	if (fin) {
		for (uint32_t i = 0; i < t.n; i++)
			ck_assert_int_ne(t.status[i], IW_WC_FATAL_ERR);
		/* Our side closed too: the peer reads the rest, then EOF. */
		ssize_t r = 1;
		uint64_t end = fx_now_ms() + FX_WAIT_MS;
		while (r != 0 && fx_now_ms() < end) {
			fx_pump(1);
			r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				break;
		}
		ck_assert_int_eq(r, 0);
		close(fd);
	}
	ck_assert_uint_gt(t.errors, ld.n_recv); /* receives and at least the READs */
	ck_assert_ptr_null(fx_ev_wait(ch, 20));

	ep_load_fini(&e, &ld);
	if (l)
		ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	if (lfd >= 0)
		close(lfd);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* A QP on a shared receive queue loses its stream while a message is
 * being received: the SRQ entry taken for it completes once (FATAL_ERR),
 * the SRQ's other entries are not the QP's and stay posted; another QP on
 * the same SRQ uses them afterwards. */
START_TEST(test_rst_srq)
{
	enum { NR = 8 };
	struct iw_cm_channel *ch;
	struct sockaddr_storage a;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_srq *srq;
	struct iw_qp *qp;
	struct iw_mr *mr;
	struct iw_cm_id *id;
	static uint8_t buf[NR * 4096], payload[100];
	int lfd = fx_raw_listen(&a);
	struct iw_srq_init_attr sa = { .max_wr = 64, .max_sge = 1 };

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	ck_assert_int_eq(iw_alloc_pd(fx_ctx, &pd), 0);
	ck_assert_int_eq(iw_create_cq(fx_ctx, 64, NULL, &cq), 0);
	ck_assert_int_eq(iw_create_srq(pd, &sa, &srq), 0);
	ck_assert_int_eq(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE, &mr), 0);
	for (uint64_t i = 0; i < NR; i++) {
		struct iw_sge s = { (uint64_t)(uintptr_t)buf + i * 4096, 4096, iw_mr_stag(mr) };
		struct iw_recv_wr r = { .wr_id = i, .sg_list = &s, .num_sge = 1 }, *bad;
		ck_assert_int_eq(iw_post_srq_recv(srq, &r, &bad), 0);
	}
	for (int round = 0; round < 2; round++) {
		struct iw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .srq = srq, .sq_sig_all = true };
		ck_assert_int_eq(iw_create_qp(pd, &qa, &qp), 0);
		ck_assert_int_eq(iw_cm_create_id(ch, NULL, &id), 0);
		ck_assert_int_eq(iw_cm_connect(id, qp, (struct sockaddr *)&a, NULL), 0);
		int fd = fx_raw_accept_reply(lfd, 16, 16);
		fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
		uint8_t f[256];
		size_t fl = round == 0 ? raw_send_first_segment(f, sizeof(f), payload, sizeof(payload))
				       : raw_send_fpdu(f, sizeof(f), 1, payload, sizeof(payload));
		ck_assert_int_eq(send(fd, f, fl, 0), (ssize_t)fl);
		fx_pump(50);
		fx_raw_rst(fd);
		struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_DISCONNECTED);
		iw_cm_ack_event(ev);
		struct iw_wc wc[NR + 1];
		int n = 0;
		uint64_t end = fx_now_ms() + 500;
		while (fx_now_ms() < end) {
			fx_pump(5);
			int k = iw_poll_cq(cq, NR + 1 - n, wc + n);
			ck_assert_int_ge(k, 0);
			n += k;
		}
		/* Exactly one completion: the entry the message took. */
		ck_assert_int_eq(n, 1);
		ck_assert_uint_eq(wc[0].wr_id, (uint64_t)round);
		ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);
		ck_assert_int_eq(wc[0].status, round == 0 ? IW_WC_FATAL_ERR : IW_WC_SUCCESS);
		ck_assert_int_eq(iw_destroy_qp(qp), 0);
		ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	}
	/* Six entries are still posted: destroying the SRQ releases them. */
	ck_assert_int_eq(iw_dereg_mr(mr), -EBUSY);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	close(lfd);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Peer process killed                                                 */

struct mr_info {
	uint64_t addr;
	uint32_t stag;
	uint32_t len;
};

/* The child: the library on the other end. As server (dst NULL) it
 * listens and writes its address to wfd; as client it connects to dst.
 * Either way it then keeps WRITEs and READs towards the parent in flight
 * and reposts its receives, until it is killed. It dies with the test
 * (PDEATHSIG) and after 30 s at the latest. Exit codes report setup
 * failures. */
static void child_peer(int wfd, const struct sockaddr_storage *dst)
{
	struct iw_context *c;
	struct iw_cm_channel *ch;
	struct iw_cm_id *l = NULL, *id = NULL;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_mr *mr;
	struct iw_cm_event *ev;
	struct sockaddr_storage a;
	struct mr_info peer, mine;
	size_t len = 4 * MIB;
	uint8_t *buf = calloc(1, len);
	struct iw_qp_init_attr qa = { .cap = { .max_send_wr = 64, .max_recv_wr = 64 }, .sq_sig_all = true };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(30);
	if (!buf || iw_context_create(NULL, &c) || iw_cm_create_channel(c, &ch))
		_exit(10);
	if (iw_alloc_pd(c, &pd) || iw_create_cq(c, 256, NULL, &cq))
		_exit(12);
	qa.send_cq = qa.recv_cq = cq;
	if (iw_create_qp(pd, &qa, &qp) ||
	    iw_reg_mr(pd, buf, len, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ, &mr))
		_exit(13);
	for (uint64_t i = 0; i < 64; i++) {
		struct iw_sge s = { (uint64_t)(uintptr_t)buf + i * 65536, 65536, iw_mr_stag(mr) };
		struct iw_recv_wr r = { .wr_id = i, .sg_list = &s, .num_sge = 1 }, *bad;
		if (iw_post_recv(qp, &r, &bad))
			_exit(14);
	}
	mine = (struct mr_info){ (uint64_t)(uintptr_t)buf, iw_mr_stag(mr), (uint32_t)len };
	struct iw_conn_param p = { .private_data = &mine, .private_data_len = sizeof(mine) };
	if (!dst) {
		fx_loopback(AF_INET, &a);
		if (iw_cm_create_id(ch, NULL, &l) || iw_cm_listen(l, (struct sockaddr *)&a, 4) ||
		    iw_cm_local_addr(l, &a))
			_exit(11);
		if (write(wfd, &a, sizeof(a)) != (ssize_t)sizeof(a))
			_exit(15);
		while (!id) {
			iw_progress(c, 100);
			if (iw_cm_get_event(ch, &ev) == 0) {
				if (ev->type != IW_CM_EVENT_CONNECT_REQUEST || ev->private_data_len != sizeof(peer))
					_exit(16);
				memcpy(&peer, ev->private_data, sizeof(peer));
				id = ev->id;
				iw_cm_ack_event(ev);
			}
		}
		if (iw_cm_accept(id, qp, &p))
			_exit(17);
	} else {
		if (iw_cm_create_id(ch, NULL, &id) || iw_cm_connect(id, qp, (const struct sockaddr *)dst, &p))
			_exit(18);
		for (;;) {
			iw_progress(c, 100);
			if (iw_cm_get_event(ch, &ev) == 0) {
				if (ev->type != IW_CM_EVENT_ESTABLISHED || ev->private_data_len != sizeof(peer))
					_exit(19);
				memcpy(&peer, ev->private_data, sizeof(peer));
				iw_cm_ack_event(ev);
				break;
			}
		}
	}
	uint32_t out = 0;
	for (uint64_t k = 0;; k++) {
		struct iw_wc wc[16];
		/* A slow reader: the parent's 256 MiB of WRITEs must still be in
		 * flight when it kills us. Reading at full speed on the other core
		 * let one progress call of the parent (posts now send inline)
		 * complete them all before the kill. */
		usleep(2000);
		iw_progress(c, 5);
		int m = iw_poll_cq(cq, 16, wc);
		for (int i = 0; i < m; i++) {
			if (wc[i].opcode == IW_WC_RECV) {
				struct iw_sge s = { (uint64_t)(uintptr_t)buf + (wc[i].wr_id % 64) * 65536, 65536,
						    iw_mr_stag(mr) };
				struct iw_recv_wr r = { .wr_id = wc[i].wr_id, .sg_list = &s, .num_sge = 1 }, *bad;
				iw_post_recv(qp, &r, &bad);
			} else if (out) {
				out--;
			}
		}
		while (out < 32 && iw_qp_state(qp) == IW_QPS_RTS) {
			bool rd = k & 1;
			struct iw_sge s = { (uint64_t)(uintptr_t)buf + (rd ? 2 * MIB : 0), 256 * 1024, iw_mr_stag(mr) };
			struct iw_send_wr w = { .wr_id = k, .sg_list = &s, .num_sge = 1,
						.opcode = rd ? IW_WR_RDMA_READ : IW_WR_RDMA_WRITE,
						.remote_addr = peer.addr, .rkey = peer.stag }, *bad;
			if (iw_post_send(qp, &w, &bad))
				break;
			out++;
			k++;
		}
	}
}

/* The peer process (the library on both ends) is SIGKILLed mid-transfer:
 * the kernel closes its socket (FIN, or RST with unread data). Every WR
 * of ours completes exactly once; DISCONNECTED follows. _i = 0: the
 * child is the server; 1: the child is the client. */
START_TEST(test_peer_killed)
{
	bool child_client = _i == 1;
	int pfd[2];
	struct sockaddr_storage a;
	struct iw_cm_channel *ch;
	struct iw_cm_id *l = NULL;
	struct fx_ep e;
	struct load ld = { .n_recv = 32, .n_write = 256, .n_read = 16, .n_send = 64 };
	struct fx_track t;
	struct iw_cm_event *ev;
	struct mr_info peer;

	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	if (child_client)
		l = fx_listen(ch, NULL, &a);
	ck_assert_int_eq(pipe(pfd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		child_peer(pfd[1], child_client ? &a : NULL);
		_exit(0);
	}
	close(pfd[1]);
	if (!child_client)
		ck_assert_int_eq(read(pfd[0], &a, sizeof(a)), (ssize_t)sizeof(a));
	close(pfd[0]);

	fx_ep_init(&e);
	load_init(&e, &ld, 4 * MIB);
	struct mr_info mine = { (uint64_t)(uintptr_t)ld.buf, iw_mr_stag(ld.mr), (uint32_t)ld.len };
	struct iw_conn_param p = { .private_data = &mine, .private_data_len = sizeof(mine) };
	if (child_client) {
		ev = fx_ev_expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
		ck_assert_uint_eq(ev->private_data_len, sizeof(peer));
		memcpy(&peer, ev->private_data, sizeof(peer));
		e.id = ev->id;
		iw_cm_ack_event(ev);
		ck_assert_int_eq(iw_cm_accept(e.id, e.qp, &p), 0);
		fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
	} else {
		ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
		ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &p), 0);
		ev = fx_ev_expect(ch, IW_CM_EVENT_ESTABLISHED);
		ck_assert_uint_eq(ev->private_data_len, sizeof(peer));
		memcpy(&peer, ev->private_data, sizeof(peer));
		iw_cm_ack_event(ev);
	}

	uint32_t n = load_post(&e, &ld, peer.addr, peer.stag, MIB);
	fx_track_init(&t, n);
	/* Mid-transfer: some WRITEs done, many not. */
	uint64_t end = fx_now_ms() + FX_WAIT_MS;
	while (t.ok < 8 && fx_now_ms() < end) {
		fx_pump(1);
		fx_track_poll(&t, e.cq);
	}
	ck_assert_uint_ge(t.ok, 8);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child status %d", st);

	ck_assert(fx_track_wait(&t, e.cq, FX_WAIT_MS));
	ev = fx_ev_expect(ch, IW_CM_EVENT_DISCONNECTED);
	iw_cm_ack_event(ev);
	enum iw_qp_state qs = iw_qp_state(e.qp);
	ck_assert(qs == IW_QPS_ERROR || qs == IW_QPS_CLOSED);
	check_fault_statuses(&t, &ld, 0);
	ck_assert_uint_gt(t.errors, ld.n_recv);
	ck_assert_uint_lt(t.ok, ld.n_write + ld.n_send);

	ep_load_fini(&e, &ld);
	if (l)
		ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Peer stops reading                                                  */

/* Our sender backs off: with 128 MiB of WRITEs posted and the peer not
 * reading, the progress thread sleeps (its CPU time over a 1.5 s stall
 * stays small), no memory grows with the posted or stalled bytes, and
 * everything completes once the peer reads again. */
START_TEST(test_peer_stops_reading)
{
	enum { N = 128 };
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	int lfd = fx_raw_listen(&a);
	/* The stall must not depend on the machine's tcp_rmem: a fixed,
	 * small receive buffer for the peer (inherited by the accepted socket). */
	int rcvbuf = 256 * 1024;
	ck_assert_int_eq(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	uint8_t *buf = malloc(MIB), *sink = malloc(MIB);
	struct iw_mr *mr;
	struct fx_track t;

	ck_assert(buf && sink);
	memset(buf, 0x5a, MIB);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_reg_mr(e.pd, buf, MIB, IW_ACCESS_LOCAL_WRITE, &mr), 0);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, NULL), 0);
	int fd = fx_raw_accept_reply(lfd, 16, 16);
	fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);

	long long heap0 = fx_heap_bytes();
	fx_track_init(&t, N);
	for (int i = 0; i < N; i++)
		fx_post_send(&e, IW_WR_RDMA_WRITE, buf, MIB, mr, 0x1000, 0x100, (uint64_t)i);
	/* The socket buffers fill: wait until nothing moves for 300 ms. */
	struct iw_qp_stats s0, s1;
	uint64_t last = 0;
	int still = 0;
	for (int i = 0; i < 100 && still < 3; i++) {
		usleep(100 * 1000);
		iw_qp_get_stats(e.qp, &s0);
		still = s0.bytes_tx == last ? still + 1 : 0;
		last = s0.bytes_tx;
	}
	ck_assert_int_eq(still, 3);
	fx_track_poll(&t, e.cq);
	ck_assert_uint_lt(t.done, N);

	uint64_t cpu0 = fx_cpu_us(), w0 = fx_now_ms();
	usleep(1500 * 1000);
	uint64_t cpu = fx_cpu_us() - cpu0, wall = fx_now_ms() - w0;
	iw_qp_get_stats(e.qp, &s1);
	long long heap1 = fx_heap_bytes();
	fprintf(stderr, "stall: %llu us CPU over %llu ms, %llu tx syscalls, heap %+lld bytes, %llu bytes sent\n",
		(unsigned long long)cpu, (unsigned long long)wall,
		(unsigned long long)(s1.tx_syscalls - s0.tx_syscalls), heap1 - heap0,
		(unsigned long long)s1.bytes_tx);
	/* Not spinning: a few percent of one core at most (a spinning
	 * progress thread would use all of it). */
	ck_assert_uint_lt(cpu, wall * 1000u / 20u);
	/* At most a wakeup now and then (the kernel reporting a little room),
	 * not a retry loop; the socket buffers may still grow a little. */
	ck_assert_uint_le(s1.tx_syscalls - s0.tx_syscalls, 64);
	ck_assert_uint_le(s1.bytes_tx - s0.bytes_tx, MIB);
	/* Bounded: nothing copied or queued per posted byte. */
	ck_assert_int_lt(heap1 - heap0, 64 * 1024);
	ck_assert_uint_lt(s1.bytes_tx, (uint64_t)N * MIB / 2);

	/* The peer reads again: every WRITE completes, successfully. */
	uint64_t end = fx_now_ms() + FX_WAIT_MS;
	while (t.done < N && fx_now_ms() < end) {
		while (recv(fd, sink, MIB, MSG_DONTWAIT) > 0)
			;
		fx_track_poll(&t, e.cq);
		usleep(1000);
	}
	ck_assert_uint_eq(t.done, N);
	ck_assert_uint_eq(t.ok, N);
	fx_raw_rst(fd);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_DISCONNECTED);
	ck_assert_int_lt(ev->status, 0);
	iw_cm_ack_event(ev);
	close(lfd);
	ck_assert_int_eq(iw_destroy_qp(e.qp), 0);
	e.qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	fx_ep_fini(&e);
	free(buf);
	free(sink);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* We disconnect while the peer does not read: the graceful close cannot
 * drain, so after the linger (3 s) the connection is reset; every WR
 * completes exactly once and DISCONNECTED arrives, bounded in time. */
START_TEST(test_disconnect_stalled_peer)
{
	enum { N = 32 };
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	int lfd = fx_raw_listen(&a);
	/* The stall must not depend on the machine's tcp_rmem: a fixed,
	 * small receive buffer for the peer (inherited by the accepted socket). */
	int rcvbuf = 256 * 1024;
	ck_assert_int_eq(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	uint8_t *buf = malloc(MIB);
	struct iw_mr *mr;
	struct fx_track t;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x77, MIB);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_reg_mr(e.pd, buf, MIB, IW_ACCESS_LOCAL_WRITE, &mr), 0);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, NULL), 0);
	int fd = fx_raw_accept_reply(lfd, 16, 16);
	fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
	fx_track_init(&t, N);
	for (int i = 0; i < N; i++)
		fx_post_send(&e, IW_WR_RDMA_WRITE, buf, MIB, mr, 0x1000, 0x100, (uint64_t)i);
	usleep(200 * 1000);
	uint64_t t0 = fx_now_ms();
	ck_assert_int_eq(iw_cm_disconnect(e.id), 0);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_DISCONNECTED);
	uint64_t dt = fx_now_ms() - t0;
	iw_cm_ack_event(ev);
	ck_assert_uint_ge(dt, 2500);
	ck_assert_uint_le(dt, 8000);
	ck_assert(fx_track_wait(&t, e.cq, FX_WAIT_MS));
	ck_assert_uint_gt(t.errors, 0);
	for (uint32_t i = 0; i < N; i++)
		ck_assert(t.status[i] == IW_WC_SUCCESS || t.status[i] == IW_WC_WR_FLUSH_ERR);
	close(fd);
	close(lfd);
	ck_assert_int_eq(iw_destroy_qp(e.qp), 0);
	e.qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	fx_ep_fini(&e);
	free(buf);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* With dead_peer_timeout_ms, a peer that is alive but keeps its receive
 * window shut longer than the timeout counts as dead too (Linux applies
 * TCP_USER_TIMEOUT to zero-window probing): the connection fails with
 * -ETIMEDOUT and everything is flushed. Without the option it would wait
 * forever (test_peer_stops_reading). */
START_TEST(test_zero_window_dead_peer)
{
	enum { N = 32 };
	struct iw_conn_param cp = { .dead_peer_timeout_ms = 1000 };
	struct iw_cm_channel *ch;
	struct fx_ep e;
	struct sockaddr_storage a;
	int lfd = fx_raw_listen(&a);
	uint8_t *buf = malloc(MIB);
	struct iw_mr *mr;
	struct fx_track t;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x11, MIB);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &ch), 0);
	fx_ep_init(&e);
	ck_assert_int_eq(iw_reg_mr(e.pd, buf, MIB, IW_ACCESS_LOCAL_WRITE, &mr), 0);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &e.id), 0);
	ck_assert_int_eq(iw_cm_connect(e.id, e.qp, (struct sockaddr *)&a, &cp), 0);
	int fd = fx_raw_accept_reply(lfd, 16, 16);
	fx_ev_expect_ack(ch, IW_CM_EVENT_ESTABLISHED);
	fx_track_init(&t, N);
	uint64_t t0 = fx_now_ms();
	for (int i = 0; i < N; i++)
		fx_post_send(&e, IW_WR_RDMA_WRITE, buf, MIB, mr, 0x1000, 0x100, (uint64_t)i);
	struct iw_cm_event *ev = fx_ev_expect(ch, IW_CM_EVENT_DISCONNECTED);
	uint64_t dt = fx_now_ms() - t0;
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	iw_cm_ack_event(ev);
	ck_assert_uint_ge(dt, 1000);
	ck_assert_uint_le(dt, 6000);
	ck_assert(fx_track_wait(&t, e.cq, FX_WAIT_MS));
	ck_assert_uint_gt(t.errors, 0);
	ck_assert_int_eq(iw_qp_state(e.qp), IW_QPS_ERROR);
	close(fd);
	close(lfd);
	ck_assert_int_eq(iw_destroy_qp(e.qp), 0);
	e.qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	fx_ep_fini(&e);
	free(buf);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Half-open connection                                                */

/* Set the loopback interface of this network namespace up or down. */
static void lo_set(bool up)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq ifr;

	ck_assert_int_ge(s, 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	ck_assert_int_eq(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	if (up)
		ifr.ifr_flags |= IFF_UP;
	else
		ifr.ifr_flags &= ~IFF_UP;
	ck_assert_int_eq(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
	close(s);
}

static bool write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(s, f) >= 0;

	if (f)
		ok = fclose(f) == 0 && ok;
	return ok;
}

/* A private network namespace (as root, or through a user namespace). */
static bool enter_netns(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (unshare(CLONE_NEWNET) == 0)
		return true;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		return false;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (!write_file("/proc/self/uid_map", map))
		return false;
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	return write_file("/proc/self/gid_map", map);
}

/* Both ends are ours, in a network namespace of this test; then the
 * loopback interface goes down: no FIN, no RST, nothing arrives any more.
 * With dead_peer_timeout_ms the side with data outstanding fails by the
 * TCP user timeout, the idle side by keepalive; both flush everything.
 * Without the option nothing is noticed within the same time. */
START_TEST(test_half_open)
{
	struct iw_conn_param cp = { .dead_peer_timeout_ms = 1500 };
	struct iw_cm_channel *sch, *cch;
	struct fx_ep c, s, c2, s2;
	struct sockaddr_storage a;
	struct load lc = { .n_recv = 8, .n_write = 4, .n_read = 2, .n_send = 0 };
	struct load ls = { .n_recv = 8 };
	struct fx_track tc, ts;

	if (!enter_netns()) {
		/* Not allowed to make a namespace here: nothing to test with. */
		fprintf(stderr, "test_half_open: SKIPPED, cannot create a network namespace (%s)\n",
			strerror(errno));
		return;
	}
	lo_set(true);
	fx_setup();
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &sch), 0);
	ck_assert_int_eq(iw_cm_create_channel(fx_ctx, &cch), 0);
	struct iw_cm_id *l = fx_listen(sch, NULL, &a);
	struct fx_ep *cs[2] = { &c, &c2 }, *ss[2] = { &s, &s2 };
	/* c/s with detection, c2/s2 without. */
	for (int k = 0; k < 2; k++) {
		fx_ep_init(cs[k]);
		fx_ep_init(ss[k]);
		ck_assert_int_eq(iw_cm_create_id(cch, NULL, &cs[k]->id), 0);
		ck_assert_int_eq(iw_cm_connect(cs[k]->id, cs[k]->qp, (struct sockaddr *)&a, k ? NULL : &cp), 0);
		struct iw_cm_event *ev = fx_ev_expect(sch, IW_CM_EVENT_CONNECT_REQUEST);
		ss[k]->id = ev->id;
		iw_cm_ack_event(ev);
		ck_assert_int_eq(iw_cm_accept(ss[k]->id, ss[k]->qp, k ? NULL : &cp), 0);
		fx_ev_expect_ack(sch, IW_CM_EVENT_ESTABLISHED);
		fx_ev_expect_ack(cch, IW_CM_EVENT_ESTABLISHED);
	}
	load_init(&c, &lc, 2 * MIB);
	load_init(&s, &ls, 2 * MIB);
	/* Some of this may reach the server before the link goes down, some
	 * not: either way one side has data unacknowledged or both go idle
	 * with WRs outstanding. */
	fx_track_init(&tc, load_post(&c, &lc, (uint64_t)(uintptr_t)ls.buf, iw_mr_stag(ls.mr), 256 * 1024));
	fx_track_init(&ts, load_post(&s, &ls, 0, 0, 0));
	lo_set(false);

	uint64_t t0 = fx_now_ms();
	int disc = 0;
	while (disc < 2 && fx_now_ms() - t0 < 15000) {
		struct iw_cm_event *ev;
		fx_pump(20);
		for (int k = 0; k < 2; k++) {
			struct iw_cm_channel *ch = k ? sch : cch;
			if (iw_cm_get_event(ch, &ev) == 0) {
				ck_assert_int_eq(ev->type, IW_CM_EVENT_DISCONNECTED);
				ck_assert_msg(ev->id == (k ? s.id : c.id), "the undetected pair failed");
				ck_assert_int_lt(ev->status, 0);
				fprintf(stderr, "half-open: %s DISCONNECTED %d (%s) after %llu ms\n", k ? "server" : "client",
					ev->status, strerror(-ev->status), (unsigned long long)(fx_now_ms() - t0));
				iw_cm_ack_event(ev);
				disc++;
			}
		}
	}
	uint64_t dt = fx_now_ms() - t0;
	fprintf(stderr, "half-open: both ends failed after %llu ms\n", (unsigned long long)dt);
	ck_assert_int_eq(disc, 2);
	ck_assert_uint_le(dt, 8000);
	ck_assert(fx_track_wait(&tc, c.cq, FX_WAIT_MS));
	ck_assert(fx_track_wait(&ts, s.cq, FX_WAIT_MS));
	check_fault_statuses(&tc, &lc, 0);
	check_fault_statuses(&ts, &ls, 0);
	ck_assert_int_eq(iw_qp_state(c.qp), IW_QPS_ERROR);
	ck_assert_int_eq(iw_qp_state(s.qp), IW_QPS_ERROR);
	/* The pair without detection did not notice. */
	ck_assert_int_eq(iw_qp_state(c2.qp), IW_QPS_RTS);
	ck_assert_int_eq(iw_qp_state(s2.qp), IW_QPS_RTS);

	ep_load_fini(&c, &lc);
	ep_load_fini(&s, &ls);
	fx_ep_fini(&c2);
	fx_ep_fini(&s2);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(sch), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(cch), 0);
	fx_teardown();
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("setup");

	tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_connect_closed_port);
	tcase_add_test(tc, test_param_ranges);
	tcase_add_test(tc, test_request_timeout);
	tcase_add_test(tc, test_reply_timeout);
	tcase_add_test(tc, test_listener_flood);
	tcase_add_test(tc, test_listener_flood_one_address);
	tcase_add_test(tc, test_listener_flood_unread_partial_requests);
	tcase_add_test(tc, test_reject_flood);
	tcase_add_test(tc, test_request_then_leave);
	suite_add_tcase(s, tc);

	tc = tcase_create("established");
	tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_rst_mid_transfer, 0, 3);
	tcase_add_test(tc, test_rst_srq);
	tcase_add_test(tc, test_progress_after_inline_completion);
	tcase_add_loop_test(tc, test_peer_killed, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("threaded");
	tcase_add_checked_fixture(tc, fx_setup_threaded, fx_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_peer_stops_reading);
	tcase_add_test(tc, test_disconnect_stalled_peer);
	tcase_add_test(tc, test_zero_window_dead_peer);
	suite_add_tcase(s, tc);

	tc = tcase_create("netns"); /* sets its own context up inside the namespace */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_half_open);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(faults_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
