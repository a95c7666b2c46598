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
	char raw_ip[64];
	bool raw;
} eng = { .lock = PTHREAD_MUTEX_INITIALIZER, .epfd = -1, .hep = -1, .stop_efd = -1, .cm_fd = -1 };

enum { DRIVER_PROGRAM = 1, DRIVER_HELPER = 2 };
/* How long a posting thread waits for the helper's progress pass to end
 * before it queues on the context lock (a pass takes a microsecond or
 * two; a futex sleep and wake-up would add several). */
#define HELPER_PASS_SPIN_NS 20000

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

bool iwabi_engine_drive(void)
{
	return drive(false);
}

void iwabi_engine_idle_yield(void)
{
	sched_yield();
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

/* Sleeps in epoll until the context has work (an arrival, a timer,
 * deferred work: the context's fd, edge-triggered so that work a
 * program thread is already handling does not spin us) or a CM event
 * waits for the pump, and progresses at once. Edge-triggered, a pass
 * that left work behind (libiwarp bounds the reads per pass for
 * fairness) would get no new wake-up: the helper looks again, after the
 * gate is open, so a post of the program never waits for that look. */
static void *helper_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&eng.stop)) {
		struct epoll_event ev[4];
		int k = epoll_wait(eng.hep, ev, 4, -1);
		if (atomic_load(&eng.stop))
			break;
		bool work = false, cm = false;
		for (int i = 0; i < k; i++) {
			if (ev[i].data.fd == eng.epfd)
				work = true;
			else if (ev[i].data.fd == atomic_load(&eng.cm_fd))
				cm = true;
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
	eng.hep = epoll_create1(EPOLL_CLOEXEC);
	if (eng.stop_efd < 0 || eng.hep < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = hep_add(eng.stop_efd, EPOLLIN)) < 0 || (rc = hep_add(eng.epfd, EPOLLIN | EPOLLET)) < 0)
		goto fail;
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
	eng.hep = eng.stop_efd = -1;
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
	eng.hep = eng.stop_efd = -1;
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
