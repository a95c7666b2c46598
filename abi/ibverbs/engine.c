/* The process-wide libiwarp context behind every ibv_context and rdma_cm
 * id, and who drives its progress (see iwabi.h for the decision). */
#include "iwabi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	unsigned refs;
	struct iw_context *ctx;
	int epfd;     /* the context's fd: readable when progress has work */
	int hep;      /* the helper's epoll set: stop_efd, epfd (edge), cm_fd */
	int stop_efd;
	int kick_efd; /* helper_reengage() */
	pthread_t helper;
	bool helper_on;
	atomic_bool stop;
	/* The drive gate (drive()): who is in iw_progress through it (0
	 * nobody, DRIVER_PROGRAM, DRIVER_HELPER); missed: the helper came
	 * while a program thread held it. */
	atomic_int driving;
	atomic_bool missed;
	void (*_Atomic pump)(void);
	atomic_int cm_fd;
	/* The helper steps aside while a program thread polls (see
	 * helper_main): when the program last found an empty CQ, whether the
	 * context's fd is in the helper's set, and the helper's own
	 * recheck interval while it is not. */
	_Atomic uint64_t last_empty_poll_ns;
	atomic_bool helper_armed;
	uint64_t recheck_ns;
	char raw_ip[64];
	bool raw;
} eng = { .lock = PTHREAD_MUTEX_INITIALIZER, .epfd = -1, .hep = -1, .stop_efd = -1, .kick_efd = -1, .cm_fd = -1 };

enum { DRIVER_PROGRAM = 1, DRIVER_HELPER = 2 };
/* How long a posting thread waits for the helper's progress pass to end
 * before it queues on the context lock (a pass takes a microsecond or
 * two; a futex sleep and wake-up would add several). */
#define HELPER_PASS_SPIN_NS 20000
/* An empty ibv_poll_cq this recent means a program thread is polling
 * now (a spinning poller comes back every microsecond or two). */
#define PROGRAM_POLLING_NS 5000
/* While the helper stands aside it looks again after this long,
 * doubling while the program keeps polling: the most an arrival can wait
 * when a program stops polling without blocking in one of our calls
 * (e.g. spins on memory for an RDMA Write). */
#define RECHECK_MIN_NS 50000
#define RECHECK_MAX_NS 1000000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void run_pump(void)
{
	void (*pump)(void) = atomic_load(&eng.pump);
	if (pump)
		pump();
}

static int hep_add(int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };
	return epoll_ctl(eng.hep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void iwabi_engine_set_cm_pump(void (*pump)(void), int cm_fd)
{
	pthread_mutex_lock(&eng.lock);
	atomic_store(&eng.pump, pump);
	atomic_store(&eng.cm_fd, cm_fd);
	if (eng.hep >= 0 && cm_fd >= 0)
		(void)hep_add(cm_fd, EPOLLIN); /* else helper_start adds it */
	pthread_mutex_unlock(&eng.lock);
}

/* One progress pass unless another thread is in one right now: nobody
 * waits for the context lock behind a thread that is doing the same
 * work. The helper, which comes because something arrived, leaves a
 * note instead, and the thread in progress runs once more for it (the
 * arrival may have come after that thread's epoll_wait). A program's
 * verb needs no note: the helper is woken by whatever arrives later. */
static bool drive(bool from_helper)
{
	struct iw_context *ctx = eng.ctx;
	bool ran = false;

	if (!ctx)
		return false;
	for (;;) {
		int none = 0;
		if (!atomic_compare_exchange_strong(&eng.driving, &none, from_helper ? DRIVER_HELPER : DRIVER_PROGRAM)) {
			if (!from_helper)
				return ran;
			atomic_store(&eng.missed, true);
			/* The holder may have left before it could see the note. */
			if (atomic_load(&eng.driving))
				return ran;
			continue;
		}
		atomic_store(&eng.missed, false);
		iw_progress(ctx, 0);
		ran = true;
		atomic_store(&eng.driving, 0);
		if (!atomic_load(&eng.missed))
			break;
	}
	return ran;
}

/* From ibv_poll_cq that found nothing. The time stamp marks the program
 * as polling (program_polling); it is taken when the pass ends, one
 * clock read per empty poll, since during the pass DRIVER_PROGRAM says
 * the same. */
bool iwabi_engine_drive(void)
{
	bool ran = drive(false);
	atomic_store_explicit(&eng.last_empty_poll_ns, now_ns(), memory_order_relaxed);
	return ran;
}

void iwabi_engine_idle_yield(void)
{
	sched_yield();
}

static bool program_polling(void)
{
	/* 0: no poller yet, or a thread about to block (helper_reengage).
	 * A poller inside its progress pass counts however long the pass. */
	uint64_t last = atomic_load_explicit(&eng.last_empty_poll_ns, memory_order_relaxed);
	if (!last)
		return false;
	return atomic_load_explicit(&eng.driving, memory_order_relaxed) == DRIVER_PROGRAM ||
	       now_ns() - last < PROGRAM_POLLING_NS;
}

/* A program thread is about to block in one of our calls: the helper
 * must watch the context again at once, not at its next recheck. */
static void helper_reengage(void)
{
	atomic_store_explicit(&eng.last_empty_poll_ns, 0, memory_order_relaxed);
	if (eng.helper_on && !atomic_load(&eng.helper_armed)) {
		uint64_t one = 1;
		if (write(eng.kick_efd, &one, sizeof(one)) < 0) {
			/* EAGAIN: a kick is pending already */
		}
	}
}

void iwabi_engine_await_helper(void)
{
	if (atomic_load_explicit(&eng.driving, memory_order_relaxed) != DRIVER_HELPER)
		return;
	uint64_t end = now_ns() + HELPER_PASS_SPIN_NS;
	while (atomic_load_explicit(&eng.driving, memory_order_acquire) == DRIVER_HELPER && now_ns() < end) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
}

int iwabi_engine_wait(int fd, int timeout_ms)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	helper_reengage();
	for (;;) {
		/* What the program's own calls left undone; later arrivals are
		 * the helper's (it wakes on them), and their completions or
		 * events make fd readable. */
		drive(false);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int t = timeout_ms;
		if (timeout_ms >= 0) {
			struct timespec n;
			clock_gettime(CLOCK_MONOTONIC, &n);
			long el = (n.tv_sec - t0.tv_sec) * 1000 + (n.tv_nsec - t0.tv_nsec) / 1000000;
			t = el >= timeout_ms ? 0 : timeout_ms - (int)el;
		}
		int k = poll(&p, 1, t);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k > 0)
			return p.revents & POLLNVAL ? -EBADF : 0;
		if (k == 0 && t == 0)
			return -ETIMEDOUT;
	}
}

static bool readable_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

static int hep_set_ctx(bool armed)
{
	struct epoll_event ev = { .events = armed ? EPOLLIN | EPOLLET : 0, .data.fd = eng.epfd };
	if (epoll_ctl(eng.hep, EPOLL_CTL_MOD, eng.epfd, &ev) < 0)
		return -errno;
	atomic_store(&eng.helper_armed, armed);
	return 0;
}

/* epoll_wait with a timeout in nanoseconds (-1: none). */
static int hep_wait(struct epoll_event *ev, int n, int64_t timeout_ns)
{
	static bool no_pwait2;
	if (timeout_ns >= 0 && !no_pwait2) {
		struct timespec t = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
		int k = epoll_pwait2(eng.hep, ev, n, &t, NULL);
		if (k >= 0 || errno != ENOSYS)
			return k;
		no_pwait2 = true; /* kernels before 5.11 */
	}
	return epoll_wait(eng.hep, ev, n, timeout_ns < 0 ? -1 : (int)((timeout_ns + 999999) / 1000000));
}

/* Sleeps in epoll until the context has work (an arrival, a timer,
 * deferred work: the context's fd, edge-triggered so that work a
 * program thread is already handling does not spin us) or a CM event
 * waits for the pump, and progresses at once. Edge-triggered, a pass
 * that left work behind (libiwarp bounds the reads per pass for
 * fairness) would get no new wake-up: the helper looks again, after the
 * gate is open, so a post of the program never waits for that look.
 *
 * While a program thread spins in ibv_poll_cq it progresses the context
 * itself; a helper woken per arrival then only costs: the sender a
 * cross-CPU wake-up, the receiver a context switch (ib_write_bw 64 KiB
 * ran at 0.47x of iwperf, 113,000 helper switches in 3 s). So a helper
 * woken while the program polls takes the context's fd out of its set
 * and looks again after recheck_ns (doubling while the program keeps
 * polling); a program thread that blocks in one of our calls brings it
 * back at once (helper_reengage). */
static void *helper_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&eng.stop)) {
		struct epoll_event ev[4];
		bool armed = atomic_load(&eng.helper_armed);
		int k = hep_wait(ev, 4, armed ? -1 : (int64_t)eng.recheck_ns);
		if (atomic_load(&eng.stop))
			break;
		bool work = false, cm = false, kick = false;
		for (int i = 0; i < k; i++) {
			if (ev[i].data.fd == eng.epfd)
				work = true;
			else if (ev[i].data.fd == eng.kick_efd)
				kick = true;
			else if (ev[i].data.fd == atomic_load(&eng.cm_fd))
				cm = true;
		}
		if (kick) {
			uint64_t v;
			if (read(eng.kick_efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: drained by an earlier wake-up */
			}
		}
		if (!armed && (kick || k == 0)) {
			if (!kick && program_polling()) {
				if (eng.recheck_ns < RECHECK_MAX_NS)
					eng.recheck_ns *= 2;
				continue;
			}
			/* Re-arming reports the fd at once if work is pending. */
			(void)hep_set_ctx(true);
			continue;
		}
		if (work && program_polling()) {
			eng.recheck_ns = RECHECK_MIN_NS;
			(void)hep_set_ctx(false);
			continue;
		}
		if (work)
			while (drive(true) && !atomic_load(&eng.stop) && readable_now(eng.epfd))
				;
		else if (cm)
			run_pump(); /* a CM event must not wait for a verb */
	}
	return NULL;
}

static int helper_start(void)
{
	int rc;
	eng.stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	eng.kick_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	eng.hep = epoll_create1(EPOLL_CLOEXEC);
	if (eng.stop_efd < 0 || eng.kick_efd < 0 || eng.hep < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = hep_add(eng.stop_efd, EPOLLIN)) < 0 || (rc = hep_add(eng.kick_efd, EPOLLIN)) < 0 ||
	    (rc = hep_add(eng.epfd, EPOLLIN | EPOLLET)) < 0)
		goto fail;
	atomic_store(&eng.helper_armed, true);
	atomic_store(&eng.last_empty_poll_ns, 0);
	eng.recheck_ns = RECHECK_MIN_NS;
	int cm_fd = atomic_load(&eng.cm_fd);
	if (cm_fd >= 0 && (rc = hep_add(cm_fd, EPOLLIN)) < 0)
		goto fail;
	atomic_store(&eng.stop, false);
	rc = -pthread_create(&eng.helper, NULL, helper_main, NULL);
	if (rc < 0)
		goto fail;
	eng.helper_on = true;
	return 0;
fail:
	if (eng.hep >= 0)
		close(eng.hep);
	if (eng.stop_efd >= 0)
		close(eng.stop_efd);
	if (eng.kick_efd >= 0)
		close(eng.kick_efd);
	eng.hep = eng.stop_efd = eng.kick_efd = -1;
	return rc;
}

static void helper_stop(void)
{
	if (eng.helper_on) {
		uint64_t one = 1;
		atomic_store(&eng.stop, true);
		if (write(eng.stop_efd, &one, sizeof(one)) < 0) {
			/* cannot fail: a non-full eventfd */
		}
		pthread_join(eng.helper, NULL);
		eng.helper_on = false;
	}
	if (eng.hep >= 0)
		close(eng.hep);
	if (eng.stop_efd >= 0)
		close(eng.stop_efd);
	if (eng.kick_efd >= 0)
		close(eng.kick_efd);
	eng.hep = eng.stop_efd = eng.kick_efd = -1;
}

static int engine_create(void)
{
	struct iw_context_attr a = { 0 };
	const char *tp = getenv("IWARP_TRANSPORT");

	if (tp && *tp && strcmp(tp, "kernel") != 0) {
		if (strcmp(tp, "raw") != 0)
			return -EINVAL;
		a.transport = IW_TRANSPORT_RAW;
		a.raw_dev = getenv("IWARP_DEV");
		a.raw_ip = getenv("IWARP_IP");
		if (!a.raw_dev || !a.raw_ip)
			return -EINVAL;
		snprintf(eng.raw_ip, sizeof(eng.raw_ip), "%s", a.raw_ip);
		char *slash = strchr(eng.raw_ip, '/');
		if (slash)
			*slash = 0;
		eng.raw = true;
	}
	int rc = iw_context_create(&a, &eng.ctx);
	if (rc < 0)
		return rc;
	eng.epfd = iw_context_fd(eng.ctx);
	rc = helper_start();
	if (rc < 0) {
		iw_context_destroy(eng.ctx);
		eng.ctx = NULL;
		eng.epfd = -1;
	}
	return rc;
}

static void engine_destroy(void)
{
	helper_stop();
	/* Objects the program leaked keep the context alive (-EBUSY): it
	 * then lives until exit, like a kernel device's. */
	if (iw_context_destroy(eng.ctx) == 0) {
		eng.ctx = NULL;
		eng.epfd = -1;
	}
}

int iwabi_engine_get(struct iw_context **ctx)
{
	int rc = 0;
	pthread_mutex_lock(&eng.lock);
	if (eng.refs == 0 && !eng.ctx)
		rc = engine_create();
	else if (eng.refs == 0 && !eng.helper_on)
		rc = helper_start(); /* a context that outlived its users (leaked objects): reuse it */
	if (rc == 0) {
		eng.refs++;
		if (ctx)
			*ctx = eng.ctx;
	}
	pthread_mutex_unlock(&eng.lock);
	return rc;
}

void iwabi_engine_put(void)
{
	pthread_mutex_lock(&eng.lock);
	if (eng.refs && --eng.refs == 0)
		engine_destroy();
	pthread_mutex_unlock(&eng.lock);
}

struct iw_context *iwabi_engine_ctx(void)
{
	return eng.ctx;
}

const char *iwabi_engine_raw_ip(void)
{
	return eng.raw ? eng.raw_ip : NULL;
}
