/* iwperf over plain TCP: the baseline the iWARP numbers are compared with.
 *
 * A client session is one control connection plus QPS data connections,
 * each starting with a 16-byte hello (kind, test, session id, index).
 * Bandwidth: the client streams SIZE-byte write()s on every data
 * connection; the server only counts bytes. Latency: SIZE-byte ping-pong
 * on one data connection; the server echoes what it reads. After each row
 * the client sends ROW_END (cumulative bytes sent) on the control
 * connection and the server answers ROW_ACK once it has received them. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "iwperf.h"
#include "tool_common.h"

#define TCP_SCRATCH (1u << 20)
#define ECHO_BUF (256u << 10)
#define MAX_TCP_CONNS 4096u

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

/* Write or read exactly len bytes on a socket, waiting at most timeout_s
 * in total (the socket may be non-blocking). */
static int xfer_all(int fd, void *buf, size_t len, bool wr, double timeout_s)
{
	uint64_t deadline = tc_now_ns() + (uint64_t)(timeout_s * 1e9);
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (tc_now_ns() > deadline || tc_stop)
			return -ETIMEDOUT;
		{
			struct pollfd pfd = { fd, wr ? POLLOUT : POLLIN, 0 };

			poll(&pfd, 1, 100);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Server side                                                         */

struct tsess {
	uint32_t id;
	uint8_t test;
	uint64_t rx;
	unsigned refs;
	int ctrl_fd;
	bool ack_wait;
	uint32_t ack_row;
	uint64_t expect;
	struct tsess *next;
};

struct tconn {
	int fd;
	uint8_t hello[PERF_TCP_HELLO_LEN];
	uint32_t hello_got;
	struct perf_tcp_hello h;
	struct tsess *sess;
	uint8_t cin[PERF_CTRL_LEN];
	uint32_t cin_got;
	uint8_t *ebuf; /* latency echo: bytes read, not yet written back */
	size_t elen, eoff;
	bool dead;
	struct tconn *next;
};

struct perf_tcp_server {
	const struct perf_opts *o;
	int lfd;
	struct tconn *conns;
	unsigned nconns;
	struct tsess *sessions;
	uint8_t *scratch;
	struct tconn **map; /* pollfd index -> connection (NULL: listener) */
	int nmap;
};

int perf_tcp_server_open(const struct perf_opts *o, struct perf_tcp_server **out)
{
	struct perf_tcp_server *ts = calloc(1, sizeof(*ts));
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1;

	if (ts == NULL)
		return -ENOMEM;
	ts->o = o;
	ts->scratch = malloc(TCP_SCRATCH);
	ts->map = calloc(MAX_TCP_CONNS + 1, sizeof(*ts->map));
	ts->lfd = -1;
	if (ts->scratch == NULL || ts->map == NULL || tc_resolve(o->bind, o->tcp_port, true, &ss, &sl))
		goto fail;
	ts->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ts->lfd < 0)
		goto fail;
	setsockopt(ts->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ts->lfd, (struct sockaddr *)&ss, sl) || listen(ts->lfd, 1024)) {
		tc_err("TCP listen on port %s: %s", o->tcp_port, strerror(errno));
		goto fail;
	}
	*out = ts;
	return 0;
fail:
	perf_tcp_server_close(ts);
	return -1;
}

static void sess_put(struct perf_tcp_server *ts, struct tsess *s)
{
	struct tsess **pp;

	if (s == NULL || --s->refs > 0)
		return;
	for (pp = &ts->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	free(s);
}

static struct tsess *sess_get(struct perf_tcp_server *ts, const struct perf_tcp_hello *h)
{
	struct tsess *s;

	for (s = ts->sessions; s; s = s->next)
		if (s->id == h->session) {
			s->refs++;
			return s;
		}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->id = h->session;
	s->test = h->test;
	s->refs = 1;
	s->ctrl_fd = -1;
	s->next = ts->sessions;
	ts->sessions = s;
	return s;
}

static void tconn_close(struct perf_tcp_server *ts, struct tconn *c)
{
	if (c->sess && c->sess->ctrl_fd == c->fd)
		c->sess->ctrl_fd = -1;
	sess_put(ts, c->sess);
	close(c->fd);
	free(c->ebuf);
	free(c);
	ts->nconns--;
}

void perf_tcp_server_close(struct perf_tcp_server *ts)
{
	if (ts == NULL)
		return;
	while (ts->conns) {
		struct tconn *c = ts->conns;

		ts->conns = c->next;
		tconn_close(ts, c);
	}
	if (ts->lfd >= 0)
		close(ts->lfd);
	free(ts->scratch);
	free(ts->map);
	free(ts);
}

unsigned perf_tcp_server_active(const struct perf_tcp_server *ts)
{
	return ts ? ts->nconns : 0;
}

bool perf_tcp_server_wants_spin(const struct perf_tcp_server *ts)
{
	const struct tsess *s;

	for (s = ts ? ts->sessions : NULL; s; s = s->next)
		if (s->test == PT_LAT)
			return true;
	return false;
}

int perf_tcp_server_pollfds(struct perf_tcp_server *ts, struct pollfd *pfd, int max)
{
	struct tconn *c;
	int n = 0;

	if (ts == NULL || max < 1)
		return 0;
	pfd[n].fd = ts->lfd;
	pfd[n].events = ts->nconns < MAX_TCP_CONNS ? POLLIN : 0;
	pfd[n].revents = 0;
	ts->map[n++] = NULL;
	for (c = ts->conns; c && n < max && n <= (int)MAX_TCP_CONNS; c = c->next) {
		pfd[n].fd = c->fd;
		pfd[n].events = c->elen > c->eoff ? POLLOUT : POLLIN;
		pfd[n].revents = 0;
		ts->map[n++] = c;
	}
	ts->nmap = n;
	return n;
}

static void check_ack(struct perf_tcp_server *ts, struct tsess *s)
{
	uint8_t m[PERF_CTRL_LEN];
	struct perf_ctrl a;

	if (!s->ack_wait || s->rx < s->expect || s->ctrl_fd < 0)
		return;
	a.type = PC_ROW_ACK;
	a.row = s->ack_row;
	a.credits = 0;
	a.msgs = 0;
	a.bytes = s->rx;
	perf_ctrl_encode(m, &a);
	s->ack_wait = false;
	if (xfer_all(s->ctrl_fd, m, sizeof(m), true, ts->o->timeout_s))
		tc_err("TCP session %08x: cannot acknowledge row %u", s->id, s->ack_row);
}

static void on_hello(struct perf_tcp_server *ts, struct tconn *c)
{
	if (perf_tcp_hello_decode(c->hello, &c->h) != 0) {
		tc_err("TCP: not an iwperf client; closing");
		c->dead = true;
		return;
	}
	c->sess = sess_get(ts, &c->h);
	if (c->sess == NULL) {
		c->dead = true;
		return;
	}
	if (c->h.kind == PTK_CTRL)
		c->sess->ctrl_fd = c->fd;
	else if (c->h.test == PT_LAT)
		c->ebuf = malloc(ECHO_BUF);
	if (c->h.kind == PTK_DATA && c->h.test == PT_LAT && c->ebuf == NULL)
		c->dead = true;
	if (ts->o->verbose && c->h.kind == PTK_CTRL)
		printf("TCP session %08x: test %s\n", c->sess->id, perf_test_name((enum perf_test)c->h.test));
}

/* Readable (or writable for a pending echo): one bounded burst of work. */
static void tconn_io(struct perf_tcp_server *ts, struct tconn *c, short revents)
{
	ssize_t n;
	int burst;

	if (c->hello_got < PERF_TCP_HELLO_LEN) {
		n = recv(c->fd, c->hello + c->hello_got, PERF_TCP_HELLO_LEN - c->hello_got, 0);
		if (n <= 0) {
			c->dead = n == 0 || (errno != EAGAIN && errno != EINTR);
			return;
		}
		c->hello_got += (uint32_t)n;
		if (c->hello_got == PERF_TCP_HELLO_LEN)
			on_hello(ts, c);
		return;
	}
	if (c->h.kind == PTK_CTRL) {
		struct perf_ctrl m;

		n = recv(c->fd, c->cin + c->cin_got, PERF_CTRL_LEN - c->cin_got, 0);
		if (n <= 0) {
			c->dead = n == 0 || (errno != EAGAIN && errno != EINTR);
			return;
		}
		c->cin_got += (uint32_t)n;
		if (c->cin_got < PERF_CTRL_LEN)
			return;
		c->cin_got = 0;
		if (perf_ctrl_decode(c->cin, PERF_CTRL_LEN, &m) != 0 || m.type != PC_ROW_END) {
			c->dead = true;
			return;
		}
		c->sess->ack_wait = true;
		c->sess->ack_row = m.row;
		c->sess->expect = m.bytes;
		check_ack(ts, c->sess);
		return;
	}
	if (c->h.test != PT_LAT) {
		for (burst = 0; burst < 16; burst++) {
			n = recv(c->fd, ts->scratch, TCP_SCRATCH, MSG_DONTWAIT);
			if (n <= 0) {
				c->dead = n == 0 || (errno != EAGAIN && errno != EINTR);
				break;
			}
			c->sess->rx += (uint64_t)n;
		}
		check_ack(ts, c->sess);
		return;
	}
	/* Latency: echo. Write back what is pending before reading more. */
	(void)revents;
	for (burst = 0; burst < 64; burst++) {
		if (c->elen == c->eoff) {
			n = recv(c->fd, c->ebuf, ECHO_BUF, MSG_DONTWAIT);
			if (n <= 0) {
				c->dead = n == 0 || (errno != EAGAIN && errno != EINTR);
				break;
			}
			c->elen = (size_t)n;
			c->eoff = 0;
			c->sess->rx += (uint64_t)n;
		}
		n = send(c->fd, c->ebuf + c->eoff, c->elen - c->eoff, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			c->dead = errno != EAGAIN && errno != EINTR;
			break;
		}
		c->eoff += (size_t)n;
		if (c->eoff < c->elen)
			break;
	}
	check_ack(ts, c->sess);
}

static void accept_new(struct perf_tcp_server *ts)
{
	while (ts->nconns < MAX_TCP_CONNS) {
		int fd = accept4(ts->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct tconn *c;

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			return;
		}
		set_nodelay(fd);
		c->fd = fd;
		c->next = ts->conns;
		ts->conns = c;
		ts->nconns++;
	}
}

void perf_tcp_server_service(struct perf_tcp_server *ts, const struct pollfd *pfd, int n)
{
	struct tconn **pp;
	int i;

	if (ts == NULL)
		return;
	for (i = 0; i < n && i < ts->nmap; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (ts->map[i] == NULL)
			accept_new(ts);
		else
			tconn_io(ts, ts->map[i], pfd[i].revents);
	}
	for (pp = &ts->conns; *pp;) {
		struct tconn *c = *pp;

		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		tconn_close(ts, c);
	}
}

/* ------------------------------------------------------------------ */
/* Client side                                                         */

struct tclient {
	const struct perf_opts *o;
	int ctrl;
	int *fds;
	uint32_t n;
	uint8_t *buf;
	uint32_t max_size;
	uint64_t sent_total; /* bytes over all data connections, all rows */
	uint32_t row;
	struct perf_total total;
};

static int tcp_connect(const struct sockaddr_storage *dst, socklen_t len, const struct perf_tcp_hello *h,
		       double timeout_s)
{
	uint8_t m[PERF_TCP_HELLO_LEN];
	struct timeval tv = { (time_t)timeout_s, 0 };
	int fd = socket(dst->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)dst, len) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	set_nodelay(fd);
	perf_tcp_hello_encode(m, h);
	if (xfer_all(fd, m, sizeof(m), true, timeout_s) != 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static int tcp_end_row(struct tclient *t)
{
	uint8_t m[PERF_CTRL_LEN];
	struct perf_ctrl c = { PC_ROW_END, t->row, 0, 0, t->sent_total };
	int rc;

	perf_ctrl_encode(m, &c);
	rc = xfer_all(t->ctrl, m, sizeof(m), true, t->o->timeout_s);
	if (!rc)
		rc = xfer_all(t->ctrl, m, sizeof(m), false, t->o->timeout_s);
	if (rc) {
		tc_err("TCP control connection: %s", strerror(-rc));
		return -1;
	}
	if (perf_ctrl_decode(m, sizeof(m), &c) != 0 || c.type != PC_ROW_ACK || c.row != t->row) {
		tc_err("TCP control connection: bad acknowledgement");
		return -1;
	}
	if (c.bytes != t->sent_total) {
		tc_err("TCP: server received %llu bytes, client sent %llu", (unsigned long long)c.bytes,
		       (unsigned long long)t->sent_total);
		return -1;
	}
	t->row++;
	return 0;
}

static int tcp_bw_row(struct tclient *t, uint32_t size)
{
	const struct perf_opts *o = t->o;
	uint64_t iters = perf_default_iters(o, size), t0, deadline = 0, min_end, last_done, done = 0;
	uint64_t *cnt = calloc(t->n, sizeof(uint64_t));
	uint32_t *off = calloc(t->n, sizeof(uint32_t));
	struct pollfd *pfd = calloc(t->n, sizeof(*pfd));
	uint32_t *map = calloc(t->n, sizeof(uint32_t));
	struct tc_watchdog wd;
	struct perf_bw_row row;
	struct perf_peak pk;
	struct perf_live live;
	double cpu0;
	bool stop = false;
	int rc = -1;

	if (!cnt || !off || !pfd || !map) {
		tc_err("out of memory");
		goto out;
	}
	tc_watchdog_init(&wd, o->timeout_s);
	cpu0 = tc_cpu_seconds();
	t0 = last_done = tc_now_ns();
	if (o->duration > 0)
		deadline = t0 + (uint64_t)(o->duration * 1e9);
	perf_peak_init(&pk, o, iters * t->n, t0);
	min_end = perf_min_end(o, t0);
	perf_live_start(&live, o, size, t0);
	for (;;) {
		uint32_t i, np = 0;
		/* Count mode: iters per connection, once a message completed
		 * after the minimum time (so the timed row covers it). */
		bool counting = !deadline && last_done >= min_end;

		if (deadline && !stop && tc_now_ns() >= deadline)
			stop = true;
		for (i = 0; i < t->n; i++) {
			bool more = off[i] > 0 || (!stop && (!counting || cnt[i] < iters));

			if (!more)
				continue;
			pfd[np].fd = t->fds[i];
			pfd[np].events = POLLOUT;
			pfd[np].revents = 0;
			map[np++] = i;
		}
		if (np == 0)
			break;
		if (poll(pfd, np, o->busy ? 0 : 100) < 0 && errno != EINTR) {
			tc_err("poll: %s", strerror(errno));
			goto out;
		}
		for (i = 0; i < np; i++) {
			uint32_t k = map[i];

			if (pfd[i].revents & (POLLERR | POLLHUP)) {
				tc_err("TCP connection %u closed by the server", k);
				goto out;
			}
			if (!(pfd[i].revents & POLLOUT))
				continue;
			for (;;) {
				ssize_t n = send(t->fds[k], t->buf + off[k], size - off[k], MSG_DONTWAIT | MSG_NOSIGNAL);

				if (n < 0) {
					if (errno == EAGAIN || errno == EINTR)
						break;
					tc_err("TCP connection %u: %s", k, strerror(errno));
					goto out;
				}
				tc_watchdog_kick(&wd);
				off[k] += (uint32_t)n;
				t->sent_total += (uint64_t)n;
				if (off[k] < size)
					continue;
				off[k] = 0;
				cnt[k]++;
				done++;
				last_done = tc_now_ns();
				if (stop || (counting && cnt[k] >= iters))
					break;
				if (deadline && last_done >= deadline)
					break;
				if (!deadline && !counting && last_done >= min_end)
					break; /* the minimum time is up: count mode */
			}
		}
		perf_peak_update(&pk, tc_now_ns(), done, size);
		perf_live_bw(&live, tc_now_ns(), done);
		if (tc_stop) {
			tc_err("interrupted");
			goto out;
		}
		if (tc_watchdog_expired(&wd)) {
			tc_err("no progress for %.3g s", o->timeout_s);
			goto out;
		}
	}
	perf_live_end(&live);
	row.size = size;
	row.msgs = done;
	row.ns = last_done - t0;
	row.peak_bps = pk.peak_bps;
	row.cpu_s = tc_cpu_seconds() - cpu0;
	if (tcp_end_row(t))
		goto out;
	perf_report_bw(o, &row);
	perf_total_add(&t->total, row.msgs, row.msgs * size, row.ns);
	rc = 0;
out:
	perf_live_end(&live);
	free(cnt);
	free(off);
	free(pfd);
	free(map);
	return rc;
}

/* Spin until len bytes went out / came in (non-blocking socket). */
static int spin_xfer(struct tclient *t, int fd, uint8_t *p, size_t len, bool wr)
{
	uint64_t spins = 0, deadline = tc_now_ns() + (uint64_t)(t->o->timeout_s * 1e9);

	while (len > 0) {
		ssize_t n = wr ? send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) : recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			tc_err("TCP ping-pong: %s", n == 0 ? "server closed the connection" : strerror(errno));
			return -1;
		}
		if ((++spins & 0xFFF) == 0 && (tc_stop || tc_now_ns() > deadline)) {
			tc_err(tc_stop ? "interrupted" : "no progress for %.3g s", t->o->timeout_s);
			return -1;
		}
	}
	return 0;
}

static int tcp_lat_row(struct tclient *t, uint32_t size)
{
	const struct perf_opts *o = t->o;
	uint64_t iters = perf_default_iters(o, size), deadline = 0, min_end = 0, sum = 0, i;
	struct perf_samples smp = { NULL, 0, 0 };
	struct perf_lat_row row;
	struct perf_live live;
	uint8_t *in = malloc(size);
	int fd = t->fds[0], rc = -1;

	if (in == NULL)
		return -1;
	perf_live_start(&live, o, size, tc_now_ns());
	for (i = 0;; i++) {
		uint64_t t0, t1;

		/* -D counts from the end of the warm-up: a slow warm-up (the
		 * first-FPDU delay, a loaded machine) must not eat the row. */
		if (i == 8) {
			if (o->duration > 0)
				deadline = tc_now_ns() + (uint64_t)(o->duration * 1e9);
			min_end = perf_min_end(o, tc_now_ns());
		}
		if (o->duration > 0 ? (deadline && tc_now_ns() >= deadline) : (i >= 8 + iters && tc_now_ns() >= min_end))
			break;
		t0 = tc_now_ns();
		if (spin_xfer(t, fd, t->buf, size, true) || spin_xfer(t, fd, in, size, false))
			goto out;
		t1 = tc_now_ns();
		t->sent_total += size;
		if (i >= 8 && perf_samples_push(&smp, t1 - t0))
			goto out;
		if (i >= 8)
			sum += t1 - t0;
		perf_live_lat(&live, t1, smp.n, sum);
	}
	perf_live_end(&live);
	if (tcp_end_row(t))
		goto out;
	row.size = size;
	row.iters = smp.n;
	row.rtt_ns = smp.v;
	perf_report_lat(o, &row);
	perf_total_add(&t->total, row.iters, row.iters * size, perf_lat_sum_ns(&row));
	rc = 0;
out:
	perf_live_end(&live);
	free(smp.v);
	free(in);
	return rc;
}

int perf_client_tcp(const struct perf_opts *o)
{
	struct sockaddr_storage dst;
	struct perf_tcp_hello h;
	struct tclient t;
	socklen_t len;
	char peer[80];
	uint32_t i;
	unsigned s;
	int rc = 1;

	memset(&t, 0, sizeof(t));
	t.o = o;
	t.n = o->nqps;
	t.ctrl = -1;
	for (s = 0; s < o->nsizes; s++)
		if (o->sizes[s] > t.max_size)
			t.max_size = o->sizes[s];
	if (tc_resolve(o->addr, o->tcp_port, false, &dst, &len))
		return 1;
	tc_addr_str((struct sockaddr *)&dst, peer, sizeof(peer));
	t.fds = malloc(t.n * sizeof(int));
	t.buf = tc_alloc_buf(t.max_size);
	if (t.fds == NULL || t.buf == NULL) {
		tc_err("out of memory");
		goto out;
	}
	memset(t.buf, PERF_FILL, t.max_size);
	for (i = 0; i < t.n; i++)
		t.fds[i] = -1;
	memset(&h, 0, sizeof(h));
	h.kind = PTK_CTRL;
	h.test = (uint8_t)o->test;
	h.session = (uint32_t)getpid() ^ (uint32_t)tc_now_ns();
	t.ctrl = tcp_connect(&dst, len, &h, o->timeout_s);
	if (t.ctrl < 0) {
		tc_err("TCP connect to %s: %s", peer, strerror(-t.ctrl));
		goto out;
	}
	h.kind = PTK_DATA;
	for (i = 0; i < t.n; i++) {
		h.index = i;
		t.fds[i] = tcp_connect(&dst, len, &h, o->timeout_s);
		if (t.fds[i] < 0 || set_nonblock(t.fds[i], true)) {
			tc_err("TCP connect to %s: %s", peer, strerror(t.fds[i] < 0 ? -t.fds[i] : errno));
			goto out;
		}
	}
	set_nonblock(t.ctrl, true);
	perf_report_header(o, peer);
	rc = 0;
	for (s = 0; s < o->nsizes && rc == 0; s++)
		rc = o->test == PT_LAT ? tcp_lat_row(&t, o->sizes[s]) : tcp_bw_row(&t, o->sizes[s]);
	if (rc == 0)
		perf_report_summary(o, &t.total);
	rc = rc ? 1 : 0;
out:
	for (i = 0; t.fds && i < t.n; i++)
		if (t.fds[i] >= 0)
			close(t.fds[i]);
	if (t.ctrl >= 0)
		close(t.ctrl);
	free(t.fds);
	free(t.buf);
	return rc;
}
