/* The raw device's timer rule and the context's in-memory sources (the
 * hook the raw device busy-polls its receive ring through):
 *  - iw_rawdev_rearm_needed moves the context timer only when the stack's
 *    deadline (rounded up to the context's milliseconds) comes before it;
 *  - an iw_peek that is ready runs from iw_progress without epoll_wait,
 *    other fds still get their turn, a blocking call spins on it for its
 *    spin budget (and not without one), and the spin stops for a due
 *    timer. Needs no root: a kernel-transport context;
 *  - the adaptive spin rule (iw_rawdev_spin_wait_done): off while most
 *    waits outlast the budget, back on when they get short. */
#include <check.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "iwt_check.h"
#include "iwt_common.h"
#include "stack/internal.h"
#include "stack/transport/raw/rawdev.h"

START_TEST(rearm_rule)
{
	/* Not armed: any deadline arms it; none: nothing to do. */
	ck_assert(iw_rawdev_rearm_needed(false, 0, 5000));
	ck_assert(!iw_rawdev_rearm_needed(false, 0, UINT64_MAX));
	/* Armed at 100 ms: a deadline at or after it (rounded up) keeps it. */
	ck_assert(!iw_rawdev_rearm_needed(true, 100, 100000));
	ck_assert(!iw_rawdev_rearm_needed(true, 100, 99001)); /* rounds up to 100 */
	ck_assert(!iw_rawdev_rearm_needed(true, 100, 250000));
	ck_assert(!iw_rawdev_rearm_needed(true, 100, UINT64_MAX));
	/* Earlier: it must move. */
	ck_assert(iw_rawdev_rearm_needed(true, 100, 99000));
	ck_assert(iw_rawdev_rearm_needed(true, 100, 0));
	/* Random: moves exactly when the rounded-up deadline is earlier. */
	uint64_t st = iwt_seed();
	for (int i = 0; i < 100000; i++) {
		uint64_t armed = iwt_rand(&st) % 1000000u, dl = iwt_rand(&st) % 1000000000u;
		bool want = (dl + 999) / 1000 < armed;
		ck_assert_int_eq(iw_rawdev_rearm_needed(true, armed, dl), want);
	}
}
END_TEST

struct fake {
	struct iw_peek p;
	int checks, ready_after, runs;
	bool always;
};

static bool fake_ready(struct iw_peek *p)
{
	struct fake *f = (struct fake *)p;
	f->checks++;
	return f->always || (f->ready_after && f->checks >= f->ready_after && f->runs == 0);
}

static void fake_run(struct iw_peek *p)
{
	((struct fake *)p)->runs++;
}

static struct iw_context *ctx_new(void)
{
	struct iw_context *ctx;
	ck_assert_int_eq(iw_context_create(NULL, &ctx), 0);
	return ctx;
}

START_TEST(peek_runs_without_epoll)
{
	struct iw_context *ctx = ctx_new();
	struct fake f = { .p = { .ready = fake_ready, .run = fake_run }, .always = true };
	iw_ctx_lock(ctx);
	iw_ctx_peek_add(ctx, &f.p);
	iw_ctx_unlock(ctx);
	for (int i = 0; i < 5; i++)
		ck_assert_int_ge(iw_progress(ctx, 0), 1);
	ck_assert_int_eq(f.runs, 5);
	iw_ctx_lock(ctx);
	iw_ctx_peek_del(ctx, &f.p);
	iw_ctx_unlock(ctx);
	ck_assert_int_eq(iw_progress(ctx, 0), 0);
	ck_assert_int_eq(f.runs, 5);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

struct ev_watch {
	struct iw_watch w;
	int calls;
};

static void ev_cb(struct iw_watch *w, uint32_t revents)
{
	(void)revents;
	uint64_t v;
	((struct ev_watch *)w)->calls++;
	ck_assert_int_eq(read(w->fd, &v, sizeof(v)), (ssize_t)sizeof(v));
}

/* A source that always has work must not starve the fds. */
START_TEST(peek_fair_to_fds)
{
	struct iw_context *ctx = ctx_new();
	struct fake f = { .p = { .ready = fake_ready, .run = fake_run }, .always = true };
	struct ev_watch ew = { .w = { .fd = eventfd(1, EFD_NONBLOCK), .cb = ev_cb } };
	ck_assert_int_ge(ew.w.fd, 0);
	iw_ctx_lock(ctx);
	ck_assert_int_eq(iw_ctx_watch_add(ctx, &ew.w, EPOLLIN), 0);
	iw_ctx_peek_add(ctx, &f.p);
	iw_ctx_unlock(ctx);
	int turns = 0;
	while (ew.calls == 0 && turns < 10 * IW_PEEK_SKIP_MAX) {
		iw_progress(ctx, 0);
		turns++;
	}
	ck_assert_int_eq(ew.calls, 1);
	ck_assert_int_le(turns, IW_PEEK_SKIP_MAX + 1);
	/* A spinning caller with nothing ready still sees fds that often. */
	f.always = false;
	uint64_t one = 1;
	ck_assert_int_eq(write(ew.w.fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	turns = 0;
	while (ew.calls == 1 && turns < 10 * IW_PEEK_SKIP_MAX) {
		iw_progress(ctx, 0);
		turns++;
	}
	ck_assert_int_eq(ew.calls, 2);
	ck_assert_int_le(turns, IW_PEEK_SKIP_MAX + 1);
	iw_ctx_lock(ctx);
	iw_ctx_peek_del(ctx, &f.p);
	iw_ctx_watch_del(ctx, &ew.w);
	iw_ctx_unlock(ctx);
	close(ew.w.fd);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* A blocking call spins on the source within its budget: work that shows
 * up in memory (no fd is ever readable here) is found. */
START_TEST(peek_spin_finds_work)
{
	struct iw_context *ctx = ctx_new();
	/* A budget far above the time a few checks take, so the test does
	 * not depend on speed: the spin ends at the first ready check. */
	struct fake f = { .p = { .ready = fake_ready, .run = fake_run, .spin_us = 5000000 }, .ready_after = 50 };
	iw_ctx_lock(ctx);
	iw_ctx_peek_add(ctx, &f.p);
	iw_ctx_unlock(ctx);
	ck_assert_int_ge(iw_progress(ctx, 10000), 1);
	ck_assert_int_eq(f.runs, 1);
	ck_assert_int_eq(f.checks, 50);
	iw_ctx_lock(ctx);
	iw_ctx_peek_del(ctx, &f.p);
	iw_ctx_unlock(ctx);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* No budget: one check, then the call sleeps in epoll_wait (and times out
 * with nothing done). */
START_TEST(peek_no_spin_without_budget)
{
	struct iw_context *ctx = ctx_new();
	struct fake f = { .p = { .ready = fake_ready, .run = fake_run, .spin_us = 0 }, .ready_after = 2 };
	iw_ctx_lock(ctx);
	iw_ctx_peek_add(ctx, &f.p);
	iw_ctx_unlock(ctx);
	ck_assert_int_eq(iw_progress(ctx, 20), 0);
	ck_assert_int_eq(f.checks, 1);
	ck_assert_int_eq(f.runs, 0);
	iw_ctx_lock(ctx);
	iw_ctx_peek_del(ctx, &f.p);
	iw_ctx_unlock(ctx);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

static int timer_fired;
static void timer_cb(struct iw_timer *t)
{
	(void)t;
	timer_fired++;
}

/* A long budget (5 s) and a source that never gets ready: a timer that comes
 * due ends the spin, and the call runs it. */
START_TEST(peek_spin_stops_for_timer)
{
	struct iw_context *ctx = ctx_new();
	struct fake f = { .p = { .ready = fake_ready, .run = fake_run, .spin_us = 5000000 } };
	struct iw_timer t = { .cb = timer_cb };
	timer_fired = 0;
	iw_ctx_lock(ctx);
	iw_ctx_peek_add(ctx, &f.p);
	iw_ctx_timer_arm(ctx, &t, 2);
	iw_ctx_unlock(ctx);
	uint64_t t0 = iw_now_ms();
	while (!timer_fired && iw_now_ms() - t0 < 5000)
		iw_progress(ctx, 10000);
	ck_assert_int_eq(timer_fired, 1);
	/* Stopped by the timer, not by the end of the 5 s budget. */
	ck_assert_uint_lt(iw_now_ms() - t0, 4000);
	ck_assert_int_eq(f.runs, 0);
	iw_ctx_lock(ctx);
	iw_ctx_peek_del(ctx, &f.p);
	iw_ctx_unlock(ctx);
	ck_assert_int_eq(iw_context_destroy(ctx), 0);
}
END_TEST

/* The adaptive spin is a rule on wait lengths (no clock here): it starts
 * on, turns off after a run of waits longer than the budget (a bulk
 * receiver), comes back after a run of short ones (a round trip), and
 * stays off where waits are mostly long with a few short ones between. */
START_TEST(spin_rule)
{
	struct iw_rawdev_spin s;
	iw_rawdev_spin_init(&s, 50);
	ck_assert_uint_eq(iw_rawdev_spin_wait_done(&s, 3), 50);
	ck_assert_uint_eq(iw_rawdev_spin_wait_done(&s, 50), 50); /* at the budget: caught */
	int n = 0;
	while (iw_rawdev_spin_wait_done(&s, 51) != 0) {
		n++;
		ck_assert_int_lt(n, 20);
	}
	ck_assert_int_ge(n, 2); /* one long wait does not turn it off */
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(iw_rawdev_spin_wait_done(&s, 400), 0);
	n = 0;
	while (iw_rawdev_spin_wait_done(&s, 4) == 0) {
		n++;
		ck_assert_int_lt(n, 20);
	}
	/* Mostly long (1 short in 4): off, and it stays off. */
	uint32_t on = 0;
	for (int i = 0; i < 400; i++)
		on += iw_rawdev_spin_wait_done(&s, i % 4 == 0 ? 4 : 300) != 0;
	ck_assert_uint_lt(on, 20);
	/* Mostly short (1 long in 4): on. */
	for (int i = 0; i < 40; i++)
		(void)iw_rawdev_spin_wait_done(&s, 4);
	on = 0;
	for (int i = 0; i < 400; i++)
		on += iw_rawdev_spin_wait_done(&s, i % 4 == 0 ? 300 : 4) != 0;
	ck_assert_uint_eq(on, 400);
	/* No budget configured: never spins. */
	iw_rawdev_spin_init(&s, 0);
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(iw_rawdev_spin_wait_done(&s, 0), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rawdev");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, rearm_rule);
	tcase_add_test(tc, spin_rule);
	tcase_add_test(tc, peek_runs_without_epoll);
	tcase_add_test(tc, peek_fair_to_fds);
	tcase_add_test(tc, peek_spin_finds_work);
	tcase_add_test(tc, peek_no_spin_without_budget);
	tcase_add_test(tc, peek_spin_stops_for_timer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(suite());
}
