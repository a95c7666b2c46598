/* The process-wide libiwarp context behind every ibv_context and rdma_cm
 * id, and who drives its progress (see iwabi.h for the decision). */
#include "iwabi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define HELPER_IDLE_MS 100
/* While the program drives progress itself, the helper backs off from
 * the grace period up to this (a spinning program costs it ~1000
 * wake-ups per second, not one per message). */
#define HELPER_BACKOFF_MAX_NS 1000000u

static struct {
	pthread_mutex_t lock;
	unsigned refs;
	struct iw_context *ctx;
	int epfd;
	int stop_efd;
	pthread_t helper;
	bool helper_on;
	atomic_bool stop;
	atomic_uint_fast64_t last_touch_ns;
	atomic_int n_waiting;
	void (*_Atomic pump)(void);
	atomic_int cm_fd;
	char raw_ip[64];
	bool raw;
} eng = { .lock = PTHREAD_MUTEX_INITIALIZER, .epfd = -1, .stop_efd = -1, .cm_fd = -1 };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void iwabi_engine_touch(void)
{
	atomic_store_explicit(&eng.last_touch_ns, now_ns(), memory_order_relaxed);
}

static void run_pump(void)
{
	void (*pump)(void) = atomic_load(&eng.pump);
	if (pump)
		pump();
}

void iwabi_engine_set_cm_pump(void (*pump)(void), int cm_fd)
{
	atomic_store(&eng.pump, pump);
	atomic_store(&eng.cm_fd, cm_fd);
}

static void progress_once(void)
{
	struct iw_context *ctx = eng.ctx;
	if (ctx)
		iw_progress(ctx, 0);
	run_pump();
}

int iwabi_engine_wait(int fd, int timeout_ms)
{
	uint64_t end = timeout_ms >= 0 ? now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
	int rc = 0;

	atomic_fetch_add(&eng.n_waiting, 1);
	for (;;) {
		progress_once();
		struct pollfd p[3] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = eng.epfd, .events = POLLIN },
			{ .fd = atomic_load(&eng.cm_fd), .events = POLLIN },
		};
		int t = -1;
		if (timeout_ms >= 0) {
			uint64_t n = now_ns();
			t = n >= end ? 0 : (int)((end - n + 999999u) / 1000000u);
		}
		/* The fd first without waiting: progress may just have made it
		 * readable. */
		if (poll(p, 1, 0) == 1) {
			rc = p[0].revents & POLLNVAL ? -EBADF : 0;
			break;
		}
		if (t == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		int k = poll(p, 3, t);
		if (k < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (k > 0 && (p[0].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL))) {
			rc = p[0].revents & POLLNVAL ? -EBADF : 0;
			break;
		}
	}
	atomic_fetch_sub(&eng.n_waiting, 1);
	return rc;
}

/* Progresses only while nobody else does. */
static void *helper_main(void *arg)
{
	uint64_t backoff = IWABI_SPIN_GRACE_US * 1000u;
	(void)arg;
	/* Sleeps of tens of microseconds must not become the default 50 us
	 * slack longer. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	while (!atomic_load(&eng.stop)) {
		struct pollfd p[3] = {
			{ .fd = eng.stop_efd, .events = POLLIN },
			{ .fd = eng.epfd, .events = POLLIN },
			{ .fd = atomic_load(&eng.cm_fd), .events = POLLIN },
		};
		int k = poll(p, 3, HELPER_IDLE_MS);
		if (atomic_load(&eng.stop))
			break;
		if (k <= 0)
			continue;
		if (p[2].revents & POLLIN)
			run_pump(); /* cheap; a CM event must not wait for a verb */
		if (!(p[1].revents & POLLIN))
			continue;
		uint64_t idle = now_ns() - atomic_load_explicit(&eng.last_touch_ns, memory_order_relaxed);
		if (atomic_load(&eng.n_waiting) > 0 || idle < IWABI_SPIN_GRACE_US * 1000u) {
			struct timespec ts = { 0, (long)backoff };
			nanosleep(&ts, NULL);
			backoff = backoff * 2 > HELPER_BACKOFF_MAX_NS ? HELPER_BACKOFF_MAX_NS : backoff * 2;
			continue;
		}
		backoff = IWABI_SPIN_GRACE_US * 1000u;
		progress_once();
	}
	return NULL;
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
	eng.stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (eng.stop_efd < 0) {
		rc = -errno;
		goto fail;
	}
	atomic_store(&eng.stop, false);
	rc = -pthread_create(&eng.helper, NULL, helper_main, NULL);
	if (rc < 0)
		goto fail;
	eng.helper_on = true;
	return 0;
fail:
	if (eng.stop_efd >= 0)
		close(eng.stop_efd);
	eng.stop_efd = -1;
	iw_context_destroy(eng.ctx);
	eng.ctx = NULL;
	return rc;
}

static void engine_destroy(void)
{
	if (eng.helper_on) {
		uint64_t one = 1;
		atomic_store(&eng.stop, true);
		if (write(eng.stop_efd, &one, sizeof(one)) < 0) {
			/* the 100 ms idle poll notices stop anyway */
		}
		pthread_join(eng.helper, NULL);
		eng.helper_on = false;
	}
	if (eng.stop_efd >= 0)
		close(eng.stop_efd);
	eng.stop_efd = -1;
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
	else if (eng.refs == 0 && !eng.helper_on) {
		/* A context that outlived its users (leaked objects): reuse it. */
		eng.stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		atomic_store(&eng.stop, false);
		if (eng.stop_efd < 0 || pthread_create(&eng.helper, NULL, helper_main, NULL) != 0)
			rc = -EAGAIN;
		else
			eng.helper_on = true;
	}
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
