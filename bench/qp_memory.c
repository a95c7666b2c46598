/* qp_memory: memory cost of an idle, connected libiwarp QP.
 *
 * Two processes (fork): the child listens on 127.0.0.1 and accepts, the
 * parent connects N QPs to it. Each side measures its own resident set
 * (/proc/self/statm) and malloc'd heap (mallinfo2) after its setup (context,
 * PD, one shared CQ, CM channel, listener) and again once all N connections
 * are established and have idled for a moment; the deltas divided by N are
 * the per-QP costs (QP, CM id, transport, socket fd). No memory is
 * registered and no work requests are posted, so no buffers are counted.
 * Kernel socket memory is not in the RSS of either process. The virtual
 * size delta is reported too: a QP's queue storage is mapped at full
 * depth but resident only where WRs have used it.
 *
 * Usage: qp_memory [-n N] [--sq WR] [--rq WR] [--json]
 * Output: one line per side and a summary; --json: one object. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#define MAX_CONNECTING 64u
#define IDLE_MS 200
#define TIMEOUT_S 60

struct opts {
	uint32_t n, sq, rq;
	bool json;
};

/* One side's objects and what it measured. */
struct side {
	const struct opts *o;
	bool server;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id;
	struct iw_cm_id **ids;
	struct iw_qp **qps;
	uint32_t started, established, connecting;
	bool failed;
};

/* What a side reports (the child sends it to the parent through a pipe). */
struct meas {
	int64_t rss_before, rss_after;   /* bytes */
	int64_t heap_before, heap_after; /* bytes in use by malloc */
	int64_t virt_before, virt_after; /* bytes of address space */
	int64_t fds_before, fds_after;
	uint32_t n;
	int ok;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident and virtual size, bytes (-1 if unreadable). */
static void statm_bytes(int64_t *rss, int64_t *virt)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = -1, res = -1;

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			size = res = -1;
		fclose(f);
	}
	*rss = res < 0 ? -1 : (int64_t)res * sysconf(_SC_PAGESIZE);
	*virt = size < 0 ? -1 : (int64_t)size * sysconf(_SC_PAGESIZE);
}

static int64_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (int64_t)mi.uordblks + (int64_t)mi.hblkhd;
}

static int64_t fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int64_t n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void snapshot(int64_t *rss, int64_t *heap, int64_t *fds, int64_t *virt)
{
	*fds = fd_count();
	*heap = heap_bytes();
	statm_bytes(rss, virt);
}

static void err(const struct side *s, const char *what, int rc)
{
	fprintf(stderr, "qp_memory (%s): %s: %s\n", s->server ? "server" : "client", what,
		rc < 0 ? strerror(-rc) : "failed");
}

static int setup(struct side *s)
{
	int rc;

	s->ids = calloc(s->o->n, sizeof(*s->ids));
	s->qps = calloc(s->o->n, sizeof(*s->qps));
	if (!s->ids || !s->qps)
		return -ENOMEM;
	rc = iw_context_create(NULL, &s->ctx);
	if (!rc)
		rc = iw_alloc_pd(s->ctx, &s->pd);
	if (!rc)
		rc = iw_create_cq(s->ctx, 256, NULL, &s->cq);
	if (!rc)
		rc = iw_cm_create_channel(s->ctx, &s->ch);
	if (rc)
		err(s, "setup", rc);
	return rc;
}

static void teardown(struct side *s)
{
	for (uint32_t i = 0; i < s->o->n; i++) {
		if (s->qps && s->qps[i])
			iw_destroy_qp(s->qps[i]);
		if (s->ids && s->ids[i])
			iw_cm_destroy_id(s->ids[i]);
	}
	if (s->listen_id)
		iw_cm_destroy_id(s->listen_id);
	if (s->cq)
		iw_destroy_cq(s->cq);
	if (s->pd)
		iw_dealloc_pd(s->pd);
	if (s->ch)
		iw_cm_destroy_channel(s->ch);
	if (s->ctx) {
		/* Events of destroyed ids may still be queued. */
		iw_progress(s->ctx, 0);
		iw_context_destroy(s->ctx);
	}
	free(s->ids);
	free(s->qps);
}

static int new_qp(struct side *s, uint32_t i)
{
	struct iw_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.cap.max_send_wr = s->o->sq;
	qa.cap.max_recv_wr = s->o->rq;
	return iw_create_qp(s->pd, &qa, &s->qps[i]);
}

static void on_event(struct side *s, struct iw_cm_event *ev)
{
	struct iw_conn_param p;
	int rc;

	switch (ev->type) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		if (s->started >= s->o->n) {
			iw_cm_reject(ev->id, NULL, 0);
			iw_cm_destroy_id(ev->id);
			break;
		}
		s->ids[s->started] = ev->id;
		rc = new_qp(s, s->started);
		memset(&p, 0, sizeof(p));
		if (!rc)
			rc = iw_cm_accept(ev->id, s->qps[s->started], &p);
		s->started++;
		if (rc) {
			err(s, "accept", rc);
			s->failed = true;
		}
		break;
	case IW_CM_EVENT_ESTABLISHED:
		s->established++;
		if (!s->server)
			s->connecting--;
		break;
	case IW_CM_EVENT_REJECTED:
	case IW_CM_EVENT_CONNECT_ERROR:
		err(s, "connection failed", ev->status ? ev->status : -ECONNREFUSED);
		s->failed = true;
		break;
	case IW_CM_EVENT_DISCONNECTED:
		break;
	default:
		break;
	}
	iw_cm_ack_event(ev);
}

static int pump(struct side *s, int timeout_ms)
{
	struct iw_cm_event *ev;
	struct iw_wc wc[16];
	int rc = iw_progress(s->ctx, timeout_ms);

	if (rc < 0) {
		err(s, "progress", rc);
		s->failed = true;
		return rc;
	}
	while (iw_cm_get_event(s->ch, &ev) == 0)
		on_event(s, ev);
	while (iw_poll_cq(s->cq, 16, wc) > 0)
		;
	return s->failed ? -1 : 0;
}

static void idle(struct side *s, int ms)
{
	double end = now_s() + ms / 1000.0;

	while (now_s() < end && !s->failed)
		pump(s, 10);
}

static int connect_one(struct side *s, const struct sockaddr_in *dst)
{
	struct iw_conn_param p;
	uint32_t i = s->started;
	int rc;

	rc = iw_cm_create_id(s->ch, NULL, &s->ids[i]);
	if (!rc)
		rc = new_qp(s, i);
	memset(&p, 0, sizeof(p));
	if (!rc)
		rc = iw_cm_connect(s->ids[i], s->qps[i], (const struct sockaddr *)dst, &p);
	if (rc) {
		err(s, "connect", rc);
		s->failed = true;
		return rc;
	}
	s->started++;
	s->connecting++;
	return 0;
}

/* Child: accept N, measure, report, then wait for the parent to finish. */
static int run_server(const struct opts *o, int wfd, int rfd)
{
	struct side s = { .o = o, .server = true };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage bound;
	struct meas m = { .n = o->n };
	double deadline;
	uint16_t port = 0;
	int rc;

	rc = setup(&s);
	if (!rc)
		rc = iw_cm_create_id(s.ch, NULL, &s.listen_id);
	if (!rc)
		rc = iw_cm_listen(s.listen_id, (struct sockaddr *)&a, 1024);
	if (!rc)
		rc = iw_cm_local_addr(s.listen_id, &bound);
	if (!rc)
		port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	else
		err(&s, "listen", rc);
	snapshot(&m.rss_before, &m.heap_before, &m.fds_before, &m.virt_before);
	if (write(wfd, &port, sizeof(port)) != (ssize_t)sizeof(port) || rc)
		goto out;
	deadline = now_s() + TIMEOUT_S;
	while (s.established < o->n && !s.failed && now_s() < deadline)
		pump(&s, 10);
	if (s.established == o->n && !s.failed) {
		idle(&s, IDLE_MS);
		snapshot(&m.rss_after, &m.heap_after, &m.fds_after, &m.virt_after);
		m.ok = !s.failed;
	} else if (!s.failed) {
		fprintf(stderr, "qp_memory (server): %u of %u connections established in %d s\n",
			s.established, o->n, TIMEOUT_S);
	}
	if (write(wfd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		m.ok = 0;
	/* Keep the connections up until the parent has measured too. */
	for (;;) {
		struct pollfd pf = { .fd = rfd, .events = POLLIN };

		if (poll(&pf, 1, 0) > 0)
			break;
		pump(&s, 10);
		if (now_s() > deadline + TIMEOUT_S)
			break;
	}
out:
	teardown(&s);
	return m.ok ? 0 : 1;
}

static void print_side(const char *who, const struct meas *m, bool json)
{
	double n = m->n ? (double)m->n : 1.0;
	double rss = (double)(m->rss_after - m->rss_before) / 1024.0 / n;
	double heap = (double)(m->heap_after - m->heap_before) / 1024.0 / n;
	double fds = (double)(m->fds_after - m->fds_before) / n;
	double virt = (double)(m->virt_after - m->virt_before) / 1024.0 / n;

	if (json)
		printf("\"%s\":{\"rss_kib_per_qp\":%.2f,\"heap_kib_per_qp\":%.2f,\"fds_per_qp\":%.2f,"
		       "\"virt_kib_per_qp\":%.2f,\"rss_before_kib\":%lld,\"rss_after_kib\":%lld}",
		       who, rss, heap, fds, virt, (long long)(m->rss_before / 1024),
		       (long long)(m->rss_after / 1024));
	else
		printf("%-7s RSS %8lld -> %8lld KiB: %7.2f KiB/QP resident, %7.2f KiB/QP malloc'd, "
		       "%7.2f KiB/QP virtual, %.2f fds/QP\n",
		       who, (long long)(m->rss_before / 1024), (long long)(m->rss_after / 1024), rss, heap, virt,
		       fds);
}

static double rss_per_qp(const struct meas *m)
{
	return (double)(m->rss_after - m->rss_before) / 1024.0 / (m->n ? m->n : 1);
}

static int usage(void)
{
	fprintf(stderr, "usage: qp_memory [-n N] [--sq WR] [--rq WR] [--json]\n"
			"  -n N      connected QPs (default 1000, at most 8000)\n"
			"  --sq WR   send queue depth (default: the library's, 128)\n"
			"  --rq WR   receive queue depth (default: the library's, 128)\n"
			"  --json    one JSON object\n");
	return 2;
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .n = 1000 };
	struct side s = { .o = &o };
	struct meas mc, ms;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rlimit rl;
	int up[2], down[2], status = 0, rc = 1;
	double deadline;
	uint16_t port;
	pid_t pid;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			o.json = true;
		} else if (i + 1 < argc && !strcmp(a, "-n")) {
			if (parse_u32(argv[++i], 8000, &o.n) || o.n == 0)
				return usage();
		} else if (i + 1 < argc && !strcmp(a, "--sq")) {
			if (parse_u32(argv[++i], 1u << 16, &o.sq))
				return usage();
		} else if (i + 1 < argc && !strcmp(a, "--rq")) {
			if (parse_u32(argv[++i], 1u << 16, &o.rq))
				return usage();
		} else {
			return usage();
		}
	}
	/* One socket per QP, plus a few per context. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)o.n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)o.n + 64 ? rl.rlim_max : (rlim_t)o.n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (pipe(up) || pipe(down)) {
		perror("qp_memory: pipe");
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("qp_memory: fork");
		return 1;
	}
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(run_server(&o, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	memset(&mc, 0, sizeof(mc));
	memset(&ms, 0, sizeof(ms));
	mc.n = o.n;

	if (setup(&s))
		goto done;
	snapshot(&mc.rss_before, &mc.heap_before, &mc.fds_before, &mc.virt_before);
	if (read(up[0], &port, sizeof(port)) != (ssize_t)sizeof(port) || port == 0) {
		fprintf(stderr, "qp_memory: the server did not start\n");
		goto done;
	}
	dst.sin_port = htons(port);
	deadline = now_s() + TIMEOUT_S;
	while (s.established < o.n && !s.failed && now_s() < deadline) {
		while (s.started < o.n && s.connecting < MAX_CONNECTING && !s.failed)
			connect_one(&s, &dst);
		pump(&s, 10);
	}
	if (s.established != o.n || s.failed) {
		if (!s.failed)
			fprintf(stderr, "qp_memory: %u of %u connections established in %d s\n", s.established,
				o.n, TIMEOUT_S);
		goto done;
	}
	idle(&s, IDLE_MS);
	snapshot(&mc.rss_after, &mc.heap_after, &mc.fds_after, &mc.virt_after);
	mc.ok = 1;
	/* The server's numbers (it measures once it has all N established). */
	for (;;) {
		struct pollfd pf = { .fd = up[0], .events = POLLIN };

		if (poll(&pf, 1, 0) > 0) {
			if (read(up[0], &ms, sizeof(ms)) != (ssize_t)sizeof(ms))
				ms.ok = 0;
			break;
		}
		if (pump(&s, 10) || now_s() > deadline + 10)
			break;
	}
	rc = mc.ok && ms.ok ? 0 : 1;
done:
	if (write(down[1], "x", 1) != 1)
		rc = 1;
	teardown(&s);
	close(down[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = 1;
	close(up[0]);
	if (rc) {
		fprintf(stderr, "qp_memory: failed\n");
		return 1;
	}
	{
		double worst = rss_per_qp(&mc) > rss_per_qp(&ms) ? rss_per_qp(&mc) : rss_per_qp(&ms);

		if (o.json) {
			printf("{\"qps\":%u,", o.n);
			print_side("client", &mc, true);
			putchar(',');
			print_side("server", &ms, true);
			printf(",\"kib_per_qp\":%.2f}\n", worst);
		} else {
			printf("qp_memory: %u idle connected QPs over 127.0.0.1, one process per side\n", o.n);
			print_side("client", &mc, false);
			print_side("server", &ms, false);
			printf("KiB per idle connected QP (larger side, resident): %.2f\n", worst);
		}
	}
	return 0;
}
