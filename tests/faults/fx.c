/* Shared helpers of the fault and limit suites (see fx.h). */
#include "fx.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "iwt_handshake.h"

struct iw_context *fx_ctx;
bool fx_threaded;

uint64_t fx_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void fx_pump(int ms)
{
	if (fx_threaded)
		usleep((useconds_t)ms * 1000u);
	else
		iw_progress(fx_ctx, ms);
}

void fx_setup(void)
{
	fx_threaded = false;
	ck_assert_int_eq(iw_context_create(NULL, &fx_ctx), 0);
}

void fx_setup_threaded(void)
{
	struct iw_context_attr a = { .flags = IW_CTX_PROGRESS_THREAD };

	fx_threaded = true;
	ck_assert_int_eq(iw_context_create(&a, &fx_ctx), 0);
}

void fx_teardown(void)
{
	if (fx_ctx)
		ck_assert_int_eq(iw_context_destroy(fx_ctx), 0);
	fx_ctx = NULL;
}

struct iw_cm_event *fx_ev_wait(struct iw_cm_channel *ch, int ms)
{
	uint64_t end = fx_now_ms() + (uint64_t)ms;
	struct iw_cm_event *ev;

	for (;;) {
		if (iw_cm_get_event(ch, &ev) == 0)
			return ev;
		if (fx_now_ms() > end)
			return NULL;
		fx_pump(2);
	}
}

struct iw_cm_event *fx_ev_expect(struct iw_cm_channel *ch, enum iw_cm_event_type type)
{
	struct iw_cm_event *ev = fx_ev_wait(ch, FX_WAIT_MS);

	ck_assert_msg(ev != NULL, "no CM event, expected %d", type);
	ck_assert_msg(ev->type == type, "CM event %d (status %d), expected %d", ev->type, ev->status, type);
	return ev;
}

void fx_ev_expect_ack(struct iw_cm_channel *ch, enum iw_cm_event_type type)
{
	iw_cm_ack_event(fx_ev_expect(ch, type));
}

void fx_ep_init(struct fx_ep *e)
{
	struct iw_qp_init_attr qa = { 0 };

	memset(e, 0, sizeof(*e));
	ck_assert_int_eq(iw_alloc_pd(fx_ctx, &e->pd), 0);
	ck_assert_int_eq(iw_create_cq(fx_ctx, 2048, NULL, &e->cq), 0);
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.cap.max_send_wr = 512;
	qa.cap.max_recv_wr = 512;
	qa.sq_sig_all = true;
	ck_assert_int_eq(iw_create_qp(e->pd, &qa, &e->qp), 0);
}

void fx_ep_fini(struct fx_ep *e)
{
	if (e->qp)
		ck_assert_int_eq(iw_destroy_qp(e->qp), 0);
	if (e->id)
		ck_assert_int_eq(iw_cm_destroy_id(e->id), 0);
	if (e->cq)
		ck_assert_int_eq(iw_destroy_cq(e->cq), 0);
	if (e->pd)
		ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	memset(e, 0, sizeof(*e));
}

void fx_loopback(int family, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
}

socklen_t fx_sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

struct iw_cm_id *fx_listen(struct iw_cm_channel *ch, const struct iw_listen_param *lp, struct sockaddr_storage *addr)
{
	struct iw_cm_id *id;
	struct sockaddr_storage any;

	fx_loopback(AF_INET, &any);
	ck_assert_int_eq(iw_cm_create_id(ch, NULL, &id), 0);
	ck_assert_int_eq(iw_cm_listen_param(id, (struct sockaddr *)&any, lp), 0);
	ck_assert_int_eq(iw_cm_local_addr(id, addr), 0);
	return id;
}

void fx_closed_port(struct sockaddr_storage *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	fx_loopback(AF_INET, addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)addr, sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)addr, &len), 0);
	close(fd);
}

int fx_raw_connect(const struct sockaddr_storage *a)
{
	int fd = socket(a->ss_family, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)a, fx_sa_len(a)), 0);
	return fd;
}

int fx_raw_listen(struct sockaddr_storage *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	fx_loopback(AF_INET, addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)addr, sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)addr, &len), 0);
	return fd;
}

bool fx_raw_dropped(int fd, int ms)
{
	uint64_t end = fx_now_ms() + (uint64_t)ms;
	char b[256];

	while (fx_now_ms() < end) {
		fx_pump(5);
		ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return true;
	}
	return false;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t end = fx_now_ms() + (uint64_t)ms;

	while (fx_now_ms() < end) {
		if (poll(&p, 1, 0) > 0)
			return true;
		fx_pump(2);
	}
	return false;
}

int fx_raw_accept_reply(int lfd, uint16_t ird, uint16_t ord)
{
	uint8_t frame[64];
	size_t got = 0;

	ck_assert_msg(readable(lfd, FX_WAIT_MS), "nobody connected");
	int fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	uint64_t end = fx_now_ms() + FX_WAIT_MS;
	while (got < 24 && fx_now_ms() < end) {
		fx_pump(2);
		ssize_t n = recv(fd, frame + got, 24 - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
	}
	ck_assert_uint_eq(got, 24);
	ck_assert_msg(memcmp(frame, "MPA ID Req Frame\x58\x02\x00\x04", 20) == 0 /* C, enhanced, RFC 7306 ASK */, "unexpected Request");
	size_t rl = iwt_mpa_rep_bytes(0x50, 2, iwt_mpa_w1(false, false, ird), iwt_mpa_w2(false, false, ord), NULL, 0,
				      frame);
	ck_assert_int_eq(send(fd, frame, rl, MSG_NOSIGNAL), (ssize_t)rl);
	return fd;
}

void fx_raw_rst(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(fd);
}

size_t fx_raw_read(int fd, void *buf, size_t cap, int ms)
{
	size_t got = 0;
	uint64_t end = fx_now_ms() + (uint64_t)ms;

	do {
		fx_pump(2);
		for (;;) {
			ssize_t n = recv(fd, (uint8_t *)buf + got, cap - got, MSG_DONTWAIT);
			if (n <= 0)
				break;
			got += (size_t)n;
			if (got == cap)
				return got;
		}
	} while (fx_now_ms() < end);
	return got;
}

void fx_post_recv(struct fx_ep *e, void *buf, size_t len, struct iw_mr *mr, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, iw_mr_stag(mr) };
	struct iw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	ck_assert_int_eq(iw_post_recv(e->qp, &wr, &bad), 0);
}

void fx_post_send(struct fx_ep *e, enum iw_wr_opcode op, void *buf, size_t len, struct iw_mr *mr, uint64_t raddr,
		  uint32_t rkey, uint64_t wr_id)
{
	struct iw_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, mr ? iw_mr_stag(mr) : 0 };
	struct iw_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.remote_addr = raddr,
		.rkey = rkey,
	}, *bad = NULL;

	ck_assert_int_eq(iw_post_send(e->qp, &wr, &bad), 0);
}

void fx_track_init(struct fx_track *t, uint32_t n)
{
	ck_assert_uint_le(n, FX_TRACK_MAX);
	memset(t, 0, sizeof(*t));
	t->n = n;
}

void fx_track_poll(struct fx_track *t, struct iw_cq *cq)
{
	struct iw_wc wc[32];
	int k;

	while ((k = iw_poll_cq(cq, 32, wc)) > 0) {
		for (int i = 0; i < k; i++) {
			ck_assert_msg(wc[i].wr_id < t->n, "unknown wr_id %llu", (unsigned long long)wc[i].wr_id);
			uint32_t id = (uint32_t)wc[i].wr_id;
			ck_assert_msg(t->count[id] == 0, "wr %u completed twice (%s, then %s)", id,
				      iw_wc_status_str(t->status[id]), iw_wc_status_str(wc[i].status));
			t->count[id] = 1;
			t->status[id] = wc[i].status;
			t->done++;
			if (wc[i].status == IW_WC_SUCCESS)
				t->ok++;
			else
				t->errors++;
		}
	}
	ck_assert_int_ge(k, 0);
}

bool fx_track_wait(struct fx_track *t, struct iw_cq *cq, int ms)
{
	uint64_t end = fx_now_ms() + (uint64_t)ms;

	for (;;) {
		fx_track_poll(t, cq);
		if (t->done == t->n || fx_now_ms() > end)
			break;
		fx_pump(2);
	}
	/* Late duplicates would show up now. */
	for (int i = 0; i < 10; i++) {
		fx_pump(5);
		fx_track_poll(t, cq);
	}
	return t->done == t->n;
}

/* Heap accounting: the test executables link with --wrap for malloc,
 * calloc, realloc and free, so every allocation made by the library (and
 * this test's code) passes through here. Live blocks are kept in a table
 * so that frees of memory allocated elsewhere (libc internals, e.g. for
 * Check's messages) are not counted. The table holds the pointers
 * inverted: LeakSanitizer must not see them as references, or no leak
 * would ever be reported. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

#define FX_TAB (1u << 20)
#define FX_TOMB ((uintptr_t)1)
static struct {
	uintptr_t key; /* ~pointer; 0 empty, FX_TOMB deleted */
	size_t n;
} fx_tab[FX_TAB];
static long long fx_live;
static pthread_mutex_t fx_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t fx_slot(const void *p)
{
	uintptr_t h = (uintptr_t)p >> 4;
	return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 44) & (FX_TAB - 1);
}

static void fx_add(void *p, size_t n)
{
	if (!p)
		return;
	pthread_mutex_lock(&fx_lock);
	size_t i = fx_slot(p);
	for (size_t k = 0; k < FX_TAB; k++, i = (i + 1) & (FX_TAB - 1)) {
		if (!fx_tab[i].key || fx_tab[i].key == FX_TOMB) {
			fx_tab[i].key = ~(uintptr_t)p;
			fx_tab[i].n = n;
			fx_live += (long long)n;
			break;
		}
	}
	pthread_mutex_unlock(&fx_lock);
}

static void fx_del(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&fx_lock);
	size_t i = fx_slot(p);
	for (size_t k = 0; k < FX_TAB && fx_tab[i].key; k++, i = (i + 1) & (FX_TAB - 1)) {
		if (fx_tab[i].key == ~(uintptr_t)p) {
			fx_tab[i].key = FX_TOMB;
			fx_live -= (long long)fx_tab[i].n;
			break;
		}
	}
	pthread_mutex_unlock(&fx_lock);
}

void *__wrap_malloc(size_t n)
{
	void *p = __real_malloc(n);
	fx_add(p, n);
	return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
	void *p = __real_calloc(n, m);
	fx_add(p, n * m);
	return p;
}

void *__wrap_realloc(void *p, size_t n)
{
	void *q = __real_realloc(p, n);
	if (q || n == 0) {
		fx_del(p);
		fx_add(q, n);
	}
	return q;
}

void __wrap_free(void *p)
{
	fx_del(p);
	__real_free(p);
}

long long fx_heap_bytes(void)
{
	pthread_mutex_lock(&fx_lock);
	long long v = fx_live;
	pthread_mutex_unlock(&fx_lock);
	return v;
}

uint64_t fx_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}
