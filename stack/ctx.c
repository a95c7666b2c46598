/* Context: the lock, the epoll set, the wake eventfd, timers, deferred QP
 * work and the optional progress thread. */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "transport/raw/raw_transport.h"

#define MAX_EVENTS 64
#define DEFERRED_ROUNDS 64 /* bound one progress call's deferred passes */

uint64_t iw_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t iw_now_ms(void)
{
	return iw_now_ns() / 1000000u;
}

void iw_ctx_lock(struct iw_context *ctx)
{
	pthread_mutex_lock(&ctx->lock);
}

void iw_ctx_unlock(struct iw_context *ctx)
{
	pthread_mutex_unlock(&ctx->lock);
}

/* ------------------------------------------------------------------ */
/* Watches                                                             */

int iw_ctx_watch_add(struct iw_context *ctx, struct iw_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

int iw_ctx_watch_mod(struct iw_context *ctx, struct iw_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };
	if (w->events == events)
		return 0;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void iw_ctx_watch_del(struct iw_context *ctx, struct iw_watch *w)
{
	epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->events = 0;
	if (ctx->n_waiters == 0)
		return;
	/* A progress call may hold an event for w already: remember w so the
	 * event is skipped. If the list cannot grow, n_dead = UINT32_MAX
	 * drops every event of the round instead (they are level-triggered
	 * and come back). */
	if (ctx->n_dead == ctx->cap_dead) {
		uint32_t cap = ctx->cap_dead ? ctx->cap_dead * 2 : 16;
		struct iw_watch **d = realloc(ctx->dead, cap * sizeof(*d));
		if (!d) {
			ctx->n_dead = UINT32_MAX; /* overflow marker: drop the round */
			return;
		}
		ctx->dead = d;
		ctx->cap_dead = cap;
	}
	if (ctx->n_dead != UINT32_MAX)
		ctx->dead[ctx->n_dead++] = w;
}

static bool watch_dead(const struct iw_context *ctx, const struct iw_watch *w)
{
	if (ctx->n_dead == UINT32_MAX)
		return true;
	for (uint32_t i = 0; i < ctx->n_dead; i++)
		if (ctx->dead[i] == w)
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Timers                                                              */

static void timerfd_update(struct iw_context *ctx)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (ctx->timers) {
		uint64_t d = ctx->timers->deadline_ms;
		if (d == 0)
			d = 1; /* 0 would disarm */
		its.it_value.tv_sec = (time_t)(d / 1000u);
		its.it_value.tv_nsec = (long)(d % 1000u) * 1000000L;
	}
	timerfd_settime(ctx->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void iw_ctx_timer_cancel(struct iw_context *ctx, struct iw_timer *t)
{
	if (!t->armed)
		return;
	bool was_head = ctx->timers == t;
	for (struct iw_timer **pp = &ctx->timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	t->armed = false;
	t->next = NULL;
	if (was_head)
		timerfd_update(ctx);
}

void iw_ctx_timer_arm(struct iw_context *ctx, struct iw_timer *t, uint64_t delay_ms)
{
	iw_ctx_timer_cancel(ctx, t);
	t->deadline_ms = iw_now_ms() + delay_ms;
	struct iw_timer **pp = &ctx->timers;
	while (*pp && (*pp)->deadline_ms <= t->deadline_ms)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	t->armed = true;
	if (ctx->timers == t)
		timerfd_update(ctx);
}

static int run_timers(struct iw_context *ctx)
{
	int n = 0;
	uint64_t now;
	bool changed = false;

	/* Nothing armed: no clock read (a spinning caller comes here twice
	 * per turn). */
	if (!ctx->timers)
		return 0;
	now = iw_now_ms();
	while (ctx->timers && ctx->timers->deadline_ms <= now) {
		struct iw_timer *t = ctx->timers;
		ctx->timers = t->next;
		t->next = NULL;
		t->armed = false;
		changed = true;
		t->cb(t); /* may re-arm t or others */
		n++;
	}
	if (changed)
		timerfd_update(ctx);
	return n;
}

/* ------------------------------------------------------------------ */
/* Deferred work and wake-ups                                          */

void iw_ctx_wake(struct iw_context *ctx)
{
	if (ctx->wake_pending)
		return;
	uint64_t one = 1;
	if (write(ctx->wake_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		ctx->wake_pending = true;
}

void iw_ctx_completed_outside(struct iw_context *ctx)
{
	if (ctx->n_blocked)
		iw_ctx_wake(ctx);
	else
		ctx->no_wait_once = true;
}

static void wake_drain(struct iw_context *ctx)
{
	uint64_t v;
	while (read(ctx->wake_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
	ctx->wake_pending = false;
}

static int run_deferred(struct iw_context *ctx)
{
	int n = 0;
	for (int round = 0; ctx->deferred && round < DEFERRED_ROUNDS; round++) {
		struct iw_qp *list = ctx->deferred;
		ctx->deferred = NULL;
		while (list) {
			struct iw_qp *qp = list;
			list = qp->deferred_next;
			qp->deferred_next = NULL;
			qp->deferred = false;
			iw_qp_run_deferred(qp);
			n++;
		}
	}
	if (ctx->deferred) {
		/* Still busy: make sure the next call comes. */
		ctx->wake_pending = false;
		iw_ctx_wake(ctx);
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* In-memory sources (peeks)                                           */

void iw_ctx_peek_add(struct iw_context *ctx, struct iw_peek *p)
{
	p->next = ctx->peeks;
	ctx->peeks = p;
}

void iw_ctx_peek_del(struct iw_context *ctx, struct iw_peek *p)
{
	for (struct iw_peek **pp = &ctx->peeks; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			p->next = NULL;
			return;
		}
}

/* Run every ready peek; how many ran. */
static int run_peeks(struct iw_context *ctx)
{
	int n = 0;
	for (struct iw_peek *p = ctx->peeks, *next; p; p = next) {
		next = p->next; /* run may delete p */
		if (p->ready(p)) {
			p->run(p);
			n++;
		}
	}
	return n;
}

/* Before blocking for up to timeout_ms: spin on the peeks for the
 * longest spin_us among them (bounded by the timeout), dropping the
 * lock between checks so other threads can post. Stops early when work
 * shows up by other means (-1: do not block then). Returns the peeks
 * that ran. */
static int spin_peeks(struct iw_context *ctx, int timeout_ms)
{
	uint32_t us = 0;
	for (struct iw_peek *p = ctx->peeks; p; p = p->next)
		if (p->spin_us > us)
			us = p->spin_us;
	if (!us)
		return 0;
	if (timeout_ms >= 0 && (uint64_t)us > (uint64_t)timeout_ms * 1000u)
		us = (uint32_t)timeout_ms * 1000u;
	uint64_t end = iw_now_ns() + (uint64_t)us * 1000u;
	do {
		int n = run_peeks(ctx);
		if (n > 0)
			return n;
		iw_ctx_unlock(ctx);
		__asm__ __volatile__("" ::: "memory");
		iw_ctx_lock(ctx);
		/* Another thread may have queued work while the lock was
		 * dropped; it did not wake us (we were not in epoll_wait). */
		if (ctx->deferred || ctx->no_wait_once || ctx->wake_pending ||
		    (ctx->timers && ctx->timers->deadline_ms <= iw_now_ms()))
			return -1;
	} while (iw_now_ns() < end);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Progress                                                            */

static int wait_timeout(struct iw_context *ctx, int timeout_ms)
{
	if (ctx->deferred)
		return 0;
	if (!ctx->timers)
		return timeout_ms;
	uint64_t now = iw_now_ms(), d = ctx->timers->deadline_ms;
	uint64_t left = d > now ? d - now : 0;
	if (left > INT32_MAX)
		left = INT32_MAX;
	if (timeout_ms < 0 || (uint64_t)timeout_ms > left)
		return (int)left;
	return timeout_ms;
}

/* Busy polling (iw_context_attr.busy_poll_us), called without the lock
 * where the caller would block for timeout_ms: polls the epoll set
 * without sleeping for up to busy_poll_us (bounded by the timeout).
 * Returns what epoll_wait returned (0: nothing in time) and lowers
 * *timeout_ms by the time spent. */
static int busy_poll(struct iw_context *ctx, struct epoll_event *evs, int *timeout_ms)
{
	uint64_t us = ctx->busy_poll_us;
	if (*timeout_ms >= 0 && us > (uint64_t)*timeout_ms * 1000u)
		us = (uint64_t)*timeout_ms * 1000u;
	uint64_t t0 = iw_now_ns(), end = t0 + us * 1000u, now;
	int k;
	do {
		k = epoll_wait(ctx->epfd, evs, MAX_EVENTS, 0);
		now = iw_now_ns();
		/* More spinners than cores (the peer process on this core, a
		 * loaded machine): let a runnable thread have the core, else
		 * the peer's answer waits for the whole spin. */
		if (k == 0)
			sched_yield();
	} while (k == 0 && now < end);
	if (*timeout_ms > 0) {
		uint64_t ms = (now - t0) / 1000000u;
		*timeout_ms = ms >= (uint64_t)*timeout_ms ? 0 : *timeout_ms - (int)ms;
	}
	return k;
}

/* Called with the lock held; drops it only while blocked in epoll_wait. */
static int progress_locked(struct iw_context *ctx, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int n = run_deferred(ctx) + run_timers(ctx);
	if (ctx->no_wait_once) {
		ctx->no_wait_once = false;
		n++; /* completions arrived since the last call */
	}
	int t = n > 0 ? 0 : wait_timeout(ctx, timeout_ms);

	if (ctx->peeks) {
		int p = run_peeks(ctx);
		if (p == 0 && t != 0)
			p = spin_peeks(ctx, t);
		if (p < 0) {
			p = 0;
			t = 0;
			if (ctx->no_wait_once) {
				ctx->no_wait_once = false;
				n++;
			}
			n += run_deferred(ctx) + run_timers(ctx);
		}
		if (p > 0) {
			n += p;
			t = 0;
		}
		/* Work found in memory, or a caller that spins (timeout 0):
		 * no epoll_wait this turn, unless it was skipped too often
		 * (other fds must get a turn). Timers and deferred work are
		 * checked in memory above either way. */
		if (t == 0 && ctx->peek_skips < IW_PEEK_SKIP_MAX) {
			ctx->peek_skips++;
			return n + run_deferred(ctx) + run_timers(ctx);
		}
	}
	ctx->peek_skips = 0;

	ctx->n_waiters++;
	int k;
	if (t == 0) {
		k = epoll_wait(ctx->epfd, evs, MAX_EVENTS, 0);
	} else {
		ctx->n_blocked++;
		iw_ctx_unlock(ctx);
		k = ctx->busy_poll_us ? busy_poll(ctx, evs, &t) : 0;
		if (k == 0)
			k = epoll_wait(ctx->epfd, evs, MAX_EVENTS, t);
		iw_ctx_lock(ctx);
		ctx->n_blocked--;
	}
	int err = k < 0 && errno != EINTR ? -errno : 0;
	for (int i = 0; i < k; i++) {
		struct iw_watch *w = evs[i].data.ptr;
		if (w == &ctx->wake_watch) {
			wake_drain(ctx);
		} else if (w == &ctx->timer_watch) {
			uint64_t v;
			while (read(ctx->timer_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
				;
		} else if (!watch_dead(ctx, w)) {
			w->cb(w, evs[i].events);
			n++;
		}
	}
	if (--ctx->n_waiters == 0)
		ctx->n_dead = 0;
	if (k > 0)
		n += run_deferred(ctx) + run_timers(ctx);
	return err ? err : n;
}

int iw_progress(struct iw_context *ctx, int timeout_ms)
{
	if (!ctx)
		return -EINVAL;
	iw_ctx_lock(ctx);
	int n = progress_locked(ctx, timeout_ms);
	iw_ctx_unlock(ctx);
	return n;
}

int iw_context_fd(struct iw_context *ctx)
{
	return ctx ? ctx->epfd : -EINVAL;
}

static void *progress_thread(void *arg)
{
	struct iw_context *ctx = arg;
	iw_ctx_lock(ctx);
	while (!ctx->thread_stop)
		progress_locked(ctx, -1);
	iw_ctx_unlock(ctx);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Create / destroy                                                    */

static void ctx_free(struct iw_context *ctx)
{
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	if (ctx->timer_fd >= 0)
		close(ctx->timer_fd);
	free(ctx->mr_table);
	free(ctx->mr_next_free);
	free(ctx->mr_key);
	free(ctx->dead);
	free(ctx->tcp_rx_stage);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

/* IW_TRANSPORT_RAW: open the device, put it on the context's loop. */
static int ctx_raw_open(struct iw_context *ctx, const struct iw_context_attr *a)
{
	/* V2 receive ring: each frame is handed over at once. The V3 ring
	 * waits up to its 1 ms block timeout, which ping-pong latency shows. */
	struct iw_rawdev_cfg cfg = { .ifname = a->raw_dev, .rx_ring = IW_PKTIO_RX_V2 };
	char ip[32];
	unsigned prefix = 24;
	const char *slash = strchr(a->raw_ip, '/');
	size_t n = slash ? (size_t)(slash - a->raw_ip) : strlen(a->raw_ip);
	struct in_addr in;
	if (n >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, a->raw_ip, n);
	ip[n] = 0;
	if (inet_pton(AF_INET, ip, &in) != 1 || (slash && (sscanf(slash + 1, "%u", &prefix) != 1 || prefix < 1 ||
							    prefix > 32)))
		return -EINVAL;
	cfg.ip = ntohl(in.s_addr);
	cfg.prefix = (uint8_t)prefix;
	const char *imp = getenv("IWARP_RAW_IMPAIR");
	if (imp && *imp) {
		unsigned long long seed = 1;
		if (sscanf(imp, "%u,%u,%llu", &cfg.drop_ppm, &cfg.reorder_ppm, &seed) < 2)
			return -EINVAL;
		cfg.impair_seed = seed;
	}
	int rc = iw_rawdev_open(&cfg, &ctx->raw, NULL);
	if (rc < 0)
		return rc;
	rc = iw_rawdev_attach(ctx->raw, ctx);
	if (rc < 0) {
		iw_rawdev_close(ctx->raw);
		ctx->raw = NULL;
	}
	return rc;
}

int iw_context_create(const struct iw_context_attr *attr, struct iw_context **out)
{
	struct iw_context_attr a = { 0 };
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (attr)
		a = *attr;
	if (a.flags & ~(unsigned)IW_CTX_PROGRESS_THREAD)
		return -EINVAL;
	if (a.max_mr > IW_MAX_MR_LIMIT)
		return -EINVAL;
	if (a.transport != IW_TRANSPORT_KERNEL &&
	    (a.transport != IW_TRANSPORT_RAW || !a.raw_dev || !a.raw_ip))
		return -EINVAL;

	struct iw_context *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->epfd = ctx->wake_fd = ctx->timer_fd = -1;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->max_qp = a.max_qp ? a.max_qp : IW_MAX_QP_DEFAULT;
	ctx->max_mr = a.max_mr ? a.max_mr : IW_MAX_MR_DEFAULT;
	ctx->busy_poll_us = a.busy_poll_us;
	if (!ctx->busy_poll_us) {
		const char *bp = getenv("IWARP_BUSY_POLL_US");
		char *end;
		unsigned long v = bp && *bp ? strtoul(bp, &end, 10) : 0;
		if (bp && *bp && !*end)
			ctx->busy_poll_us = (uint32_t)v;
	}
	if (ctx->busy_poll_us > IW_BUSY_POLL_MAX_US)
		ctx->busy_poll_us = IW_BUSY_POLL_MAX_US;

	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ctx->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctx->epfd < 0 || ctx->wake_fd < 0 || ctx->timer_fd < 0) {
		rc = -errno;
		goto fail;
	}
	ctx->wake_watch.fd = ctx->wake_fd;
	ctx->timer_watch.fd = ctx->timer_fd;
	if ((rc = iw_ctx_watch_add(ctx, &ctx->wake_watch, EPOLLIN)) < 0 ||
	    (rc = iw_ctx_watch_add(ctx, &ctx->timer_watch, EPOLLIN)) < 0)
		goto fail;

	const char *trace = a.trace_path ? a.trace_path : getenv("IWARP_TRACE");
	if (trace && *trace) {
		if ((rc = iw_trace_open(ctx, trace)) < 0)
			goto fail;
	}

	ctx->conn_factory = &iw_tcp_conn_factory;
	if (a.transport == IW_TRANSPORT_RAW) {
		if ((rc = ctx_raw_open(ctx, &a)) < 0) {
			if (ctx->trace)
				iw_trace_close(ctx);
			goto fail;
		}
		ctx->conn_factory = &iw_raw_conn_factory;
	}

	if (a.flags & IW_CTX_PROGRESS_THREAD) {
		rc = -pthread_create(&ctx->thread, NULL, progress_thread, ctx);
		if (rc < 0) {
			if (ctx->trace)
				iw_trace_close(ctx);
			iw_rawdev_close(ctx->raw);
			ctx->raw = NULL;
			goto fail;
		}
		ctx->thread_on = true;
	}
	*out = ctx;
	return 0;
fail:
	ctx_free(ctx);
	return rc;
}

int iw_context_destroy(struct iw_context *ctx)
{
	if (!ctx)
		return -EINVAL;
	iw_ctx_lock(ctx);
	if (ctx->n_pd || ctx->n_cq || ctx->n_chan || ctx->n_cm_chan || ctx->n_qp || ctx->n_mr || ctx->n_srq) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	if (ctx->thread_on) {
		ctx->thread_stop = true;
		ctx->wake_pending = false;
		iw_ctx_wake(ctx);
		iw_ctx_unlock(ctx);
		pthread_join(ctx->thread, NULL);
		iw_ctx_lock(ctx);
		ctx->thread_on = false;
	}
	iw_tcp_lingers_free(ctx);
	iw_rawdev_close(ctx->raw); /* connections still closing are reset */
	ctx->raw = NULL;
	if (ctx->trace)
		iw_trace_close(ctx);
	iw_ctx_unlock(ctx);
	ctx_free(ctx);
	return 0;
}
