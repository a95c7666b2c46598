/* iwperf: options, help text, measurement helpers and the report. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwperf.h"
#include "tool_common.h"

#define MB (1024.0 * 1024.0) /* perftest's MB: 2^20 bytes */

/* ------------------------------------------------------------------ */
/* Measurement helpers                                                 */

uint64_t perf_default_iters(const struct perf_opts *o, uint32_t size)
{
	uint64_t budget = o->test == PT_LAT ? (256ull << 20) : (512ull << 20) / o->nqps;
	uint64_t cap = o->test == PT_LAT ? 1000 : 5000;
	uint64_t n = budget / size;

	if (o->iters)
		return o->iters;
	if (n > cap)
		n = cap;
	return n < 16 ? 16 : n;
}

void perf_peak_init(struct perf_peak *pk, const struct perf_opts *o, uint64_t expect_msgs, uint64_t t0)
{
	uint64_t burst = 2ull * o->qd * o->nqps; /* completions can come in bursts this big */

	memset(pk, 0, sizeof(*pk));
	pk->t_last = t0;
	if (o->duration > 0) {
		pk->win_ns = (uint64_t)(o->duration * 1e9 / 20);
		pk->win_msgs = UINT64_MAX;
	} else {
		pk->win_msgs = expect_msgs / 20 > burst ? expect_msgs / 20 : burst;
		pk->win_ns = UINT64_MAX;
	}
}

void perf_peak_update(struct perf_peak *pk, uint64_t now, uint64_t msgs, uint32_t size)
{
	uint64_t dm = msgs - pk->msgs_last, dt = now - pk->t_last;

	if (dm < pk->win_msgs && dt < pk->win_ns)
		return;
	if (dt < 1000000) /* under 1 ms is too bursty to time: widen the window */
		return;
	if ((double)dm * size * 1e9 / (double)dt > pk->peak_bps)
		pk->peak_bps = (double)dm * size * 1e9 / (double)dt;
	pk->t_last = now;
	pk->msgs_last = msgs;
}

uint64_t perf_min_end(const struct perf_opts *o, uint64_t t0)
{
	return o->iters || o->duration > 0 ? 0 : t0 + PERF_MIN_ROW_NS;
}

void perf_live_start(struct perf_live *l, const struct perf_opts *o, uint32_t size, uint64_t t0)
{
	l->on = !o->quiet && !o->json && isatty(STDERR_FILENO);
	l->size = size;
	l->t0 = t0;
	l->last = 0;
}

/* True when a live line is due now (2 s into the row, then every 1 s). */
static bool live_due(struct perf_live *l, uint64_t now)
{
	if (!l->on || now - l->t0 < 2000000000ull || (l->last && now - l->last < 1000000000ull))
		return false;
	l->last = now;
	return true;
}

void perf_live_bw(struct perf_live *l, uint64_t now, uint64_t msgs)
{
	double secs = (double)(now - l->t0) / 1e9;

	if (!live_due(l, now))
		return;
	fprintf(stderr, "\r%-10u %.0f s so far: %llu messages, %.2f MB/s   ", l->size, secs,
		(unsigned long long)msgs, (double)msgs * l->size / secs / MB);
	fflush(stderr);
}

void perf_live_lat(struct perf_live *l, uint64_t now, uint64_t n, uint64_t sum_ns)
{
	if (!live_due(l, now))
		return;
	fprintf(stderr, "\r%-10u %.0f s so far: %llu round trips, t_avg %.2f usec   ", l->size,
		(double)(now - l->t0) / 1e9, (unsigned long long)n, n ? (double)sum_ns / (double)n / 2e3 : 0.0);
	fflush(stderr);
}

void perf_live_end(struct perf_live *l)
{
	if (l->on && l->last) {
		fprintf(stderr, "\r%-78s\r", "");
		fflush(stderr);
	}
	l->last = 0;
}

void perf_total_add(struct perf_total *t, uint64_t msgs, uint64_t bytes, uint64_t ns)
{
	t->rows++;
	t->msgs += msgs;
	t->bytes += bytes;
	t->ns += ns;
}

void perf_report_summary(const struct perf_opts *o, const struct perf_total *t)
{
	if (o->json || t->rows == 0)
		return;
	if (o->test == PT_LAT)
		printf("# total: %u row%s, %llu round trips, %.3f s of round trips\n", t->rows, t->rows == 1 ? "" : "s",
		       (unsigned long long)t->msgs, (double)t->ns / 1e9);
	else
		printf("# total: %u row%s, %llu messages, %.1f MB in %.3f s, %.2f MB/s average\n", t->rows,
		       t->rows == 1 ? "" : "s", (unsigned long long)t->msgs, (double)t->bytes / MB, (double)t->ns / 1e9,
		       t->ns ? (double)t->bytes / MB / ((double)t->ns / 1e9) : 0.0);
	fflush(stdout);
}

int perf_samples_push(struct perf_samples *s, uint64_t x)
{
	if (s->n == s->cap) {
		uint64_t ncap = s->cap ? s->cap * 2 : 4096;
		uint64_t *nv = realloc(s->v, ncap * sizeof(*nv));

		if (nv == NULL)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Report                                                              */

static const char *test_title(enum perf_test t)
{
	switch (t) {
	case PT_WRITE: return "RDMA_Write BW";
	case PT_READ: return "RDMA_Read BW";
	case PT_SEND: return "Send BW";
	case PT_LAT: return "Send ping-pong latency";
	}
	return "?";
}

void perf_report_header(const struct perf_opts *o, const char *peer)
{
	char fpdu[32];

	if (o->json)
		return;
	if (o->max_fpdu)
		snprintf(fpdu, sizeof(fpdu), "%u", o->max_fpdu);
	else
		snprintf(fpdu, sizeof(fpdu), "auto");
	printf("# iwperf: %s test over %s to %s\n", o->tcp && o->test != PT_LAT ? "TCP stream" : test_title(o->test),
	       o->tcp ? "plain TCP" : "iWARP (libiwarp)", peer);
	if (o->tcp)
		printf("# connections %u%s\n", o->nqps, o->test == PT_LAT ? ", TCP_NODELAY" : "");
	else if (o->test == PT_LAT) /* one SEND in flight: the queue depth does not apply */
		printf("# QPs 1, CRC %s%s, max FPDU %s\n", tc_crc_str(o->crc), o->markers ? ", markers" : "", fpdu);
	else
		printf("# QPs %u, queue depth %u, CRC %s%s, max FPDU %s\n", o->nqps, o->qd, tc_crc_str(o->crc),
		       o->markers ? ", markers" : "", fpdu);
	if (o->duration > 0)
		printf("# %.3g s per size\n", o->duration);
	else if (!o->iters)
		printf("# per size: the default message count, for at least %.1f s\n", (double)PERF_MIN_ROW_NS / 1e9);
	if (o->test == PT_LAT)
		printf("%-10s %-13s %-12s %-16s %-12s %-12s\n", "#bytes", "#iterations", "t_min[usec]",
		       "t_typical[usec]", "t_avg[usec]", "t_99[usec]");
	else
		printf("%-10s %-13s %-15s %-18s %-15s %-10s\n", "#bytes", "#iterations", "BW_peak[MB/s]",
		       "BW_average[MB/s]", "MsgRate[Mpps]", "CPU[s/GB]");
	fflush(stdout);
}

void perf_report_bw(const struct perf_opts *o, const struct perf_bw_row *r)
{
	double secs = (double)r->ns / 1e9;
	double bytes = (double)r->msgs * r->size;
	double avg = secs > 0 ? bytes / secs : 0.0;
	double peak = r->peak_bps > avg ? r->peak_bps : avg;
	double rate = secs > 0 ? (double)r->msgs / secs / 1e6 : 0.0;
	double cpu_gb = bytes > 0 ? r->cpu_s / (bytes / 1e9) : 0.0;

	if (o->json)
		printf("{\"test\":\"%s\",\"transport\":\"%s\",\"qps\":%u,\"qd\":%u,\"crc\":\"%s\","
		       "\"bytes\":%u,\"iterations\":%llu,\"seconds\":%.6f,\"bw_peak_MBps\":%.2f,"
		       "\"bw_avg_MBps\":%.2f,\"msg_rate_Mpps\":%.6f,\"cpu_s_per_GB\":%.4f}\n",
		       perf_test_name(o->test), o->tcp ? "tcp" : "iwarp", o->nqps, o->qd, tc_crc_str(o->crc),
		       r->size, (unsigned long long)r->msgs, secs, peak / MB, avg / MB, rate, cpu_gb);
	else
		printf("%-10u %-13llu %-15.2f %-18.2f %-15.6f %-10.4f\n", r->size, (unsigned long long)r->msgs,
		       peak / MB, avg / MB, rate, cpu_gb);
	fflush(stdout);
}

uint64_t perf_lat_sum_ns(const struct perf_lat_row *r)
{
	uint64_t i, sum = 0;

	for (i = 0; i < r->iters; i++)
		sum += r->rtt_ns[i];
	return sum;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void perf_report_lat(const struct perf_opts *o, struct perf_lat_row *r)
{
	double sum = 0, tmin, typ, avg, p99;
	uint64_t i, n = r->iters, k;

	if (n == 0)
		return;
	qsort(r->rtt_ns, n, sizeof(uint64_t), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)r->rtt_ns[i];
	/* One-way = RTT / 2, in microseconds, like perftest. */
	tmin = (double)r->rtt_ns[0] / 2e3;
	typ = (double)r->rtt_ns[n / 2] / 2e3;
	avg = sum / (double)n / 2e3;
	k = (uint64_t)ceil(0.99 * (double)n);
	p99 = (double)r->rtt_ns[k ? k - 1 : 0] / 2e3;
	if (o->json)
		printf("{\"test\":\"lat\",\"transport\":\"%s\",\"bytes\":%u,\"iterations\":%llu,"
		       "\"t_min_us\":%.3f,\"t_typical_us\":%.3f,\"t_avg_us\":%.3f,\"t_99_us\":%.3f}\n",
		       o->tcp ? "tcp" : "iwarp", r->size, (unsigned long long)n, tmin, typ, avg, p99);
	else
		printf("%-10u %-13llu %-12.2f %-16.2f %-12.2f %-12.2f\n", r->size, (unsigned long long)n, tmin, typ,
		       avg, p99);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Options                                                             */

static void usage(FILE *f)
{
	fputs("NAME\n"
	      "    iwperf - iWARP RDMA bandwidth and latency over libiwarp, with a TCP baseline\n"
	      "\n"
	      "SYNOPSIS\n"
	      "    iwperf -s [-a ADDR] [-p PORT] [--tcp-port PORT] [--once] [-v]\n"
	      "    iwperf -c [-a] ADDR [-t write|read|send|lat] [-S SIZE | --sweep[=LIST]]\n"
	      "           [-n ITERS | -D SECONDS] [-Q DEPTH] [-q QPS] [--tcp] [--json] [OPTIONS]\n"
	      "\n"
	      "DESCRIPTION\n"
	      "    The server waits for clients; the client runs one test and prints one\n"
	      "    row per message size. Bandwidth tests keep DEPTH work requests\n"
	      "    outstanding on each of QPS connections and time from the first post to\n"
	      "    the last completion: write and read use RDMA WRITE / RDMA READ against\n"
	      "    the server's buffer, send uses SENDs into receives the server keeps\n"
	      "    posted (with credits, so a SEND never finds the receive queue empty)\n"
	      "    and checks the server's count. The latency test is a SEND ping-pong on\n"
	      "    one connection, reported as round trip / 2.\n"
	      "    With --tcp the same client runs over plain TCP sockets (TCP_NODELAY):\n"
	      "    bandwidth writes SIZE-byte messages on QPS streams, latency is a\n"
	      "    SIZE-byte ping-pong. The server serves both at once: iWARP on PORT,\n"
	      "    TCP on PORT+1.\n"
	      "\n"
	      "OPTIONS\n"
	      "    -s, --server          run the server\n"
	      "    -c, --client ADDR     run a test against the server at ADDR (-c -a ADDR\n"
	      "                          works too)\n"
	      "    -a, --addr ADDR       server: listen on ADDR only (default: all IPv4);\n"
	      "                          it prints \"listening on ADDR:PORT\" on stderr\n"
	      "                          once both ports are open\n"
	      "    -p, --port PORT       iWARP port (default 18516)\n"
	      "        --tcp-port PORT   plain TCP port (default PORT+1)\n"
	      "    -t, --test TEST       write (default), read, send or lat\n"
	      "    -S, --size SIZE       message size, suffixes K M G (default 64K; lat 8)\n"
	      "        --sweep[=LIST]    sizes 64 B .. 4 MiB in powers of two, or a comma\n"
	      "                          separated LIST such as 64,4K,1M\n"
	      "    -n, --iters N         messages per QP and size (default 5000, fewer for\n"
	      "                          big sizes; lat 1000; and without -n each size\n"
	      "                          runs at least 0.5 s)\n"
	      "    -D, --duration SEC    run each size for SEC seconds instead\n"
	      "    -Q, --qd DEPTH        outstanding work requests per QP (default 16)\n"
	      "    -q, --qps N           connections, 1..1024 (default 1); bandwidth is\n"
	      "                          the aggregate\n"
	      "        --crc=on|off|required   MPA CRC policy (default on; the server\n"
	      "                          follows the client unless given --crc)\n"
	      "        --markers         ask for MPA markers\n"
	      "        --max-fpdu BYTES  largest FPDU (ULPDU) to send (default: TCP MSS)\n"
	      "        --trace FILE      write a pcap of the iWARP traffic to FILE\n"
	      "        --tcp             plain TCP baseline instead of iWARP\n"
	      "        --json            one JSON object per row instead of the table\n"
	      "        --busy            spin on progress in bandwidth tests too (the\n"
	      "                          latency test always spins)\n"
	      "        --wait            lat: block in iw_progress() between messages\n"
	      "                          instead of spinning, on both sides (what a\n"
	      "                          blocking application sees; IWARP_BUSY_POLL_US\n"
	      "                          makes the library spin first)\n"
	      "        --timeout SEC     fail after SEC seconds without progress (10)\n"
	      "        --once            server: exit after the first client finished\n"
	      TC_TRANSPORT_HELP
	      "                         (--tcp stays a kernel TCP baseline)\n"
	      "    -v, --verbose         server: one line per connection\n"
	      "        --quiet           no live line (on a terminal, a row running over 2 s\n"
	      "                          shows its progress every second on stderr)\n"
	      "    -h, --help            this text\n"
	      "\n"
	      "OUTPUT\n"
	      "    Bandwidth: #bytes #iterations BW_peak[MB/s] BW_average[MB/s]\n"
	      "    MsgRate[Mpps] CPU[s/GB]; MB is 2^20 bytes like perftest, #iterations\n"
	      "    counts messages over all QPs, BW_peak is the best 1/20 of the row,\n"
	      "    CPU is the client's user+system time per 10^9 bytes.\n"
	      "    Latency: #bytes #iterations t_min t_typical (median) t_avg t_99 in usec.\n"
	      "    After the rows a \"# total:\" line sums them up (not with --json).\n"
	      "\n"
	      "EXIT STATUS\n"
	      "    0 when every row completed and checked; 1 on any error; 2 on bad usage.\n",
	      f);
}

static int parse_test(const char *s, enum perf_test *t)
{
	if (strcmp(s, "write") == 0)
		*t = PT_WRITE;
	else if (strcmp(s, "read") == 0)
		*t = PT_READ;
	else if (strcmp(s, "send") == 0)
		*t = PT_SEND;
	else if (strcmp(s, "lat") == 0 || strcmp(s, "latency") == 0)
		*t = PT_LAT;
	else
		return -EINVAL;
	return 0;
}

static int parse_sweep(const char *list, struct perf_opts *o)
{
	char buf[1024], *save = NULL, *tok;
	uint64_t v;

	o->nsizes = 0;
	if (list == NULL) {
		for (v = 64; v <= (4u << 20); v *= 2)
			o->sizes[o->nsizes++] = (uint32_t)v;
		return 0;
	}
	if (strlen(list) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == PERF_MAX_SIZES || tc_parse_size(tok, 1, PERF_SIZE_LIMIT, &v))
			return -EINVAL;
		o->sizes[o->nsizes++] = (uint32_t)v;
	}
	return o->nsizes ? 0 : -EINVAL;
}

enum { OPT_TCP_PORT = 256, OPT_SWEEP, OPT_CRC, OPT_MAX_FPDU, OPT_MARKERS, OPT_TRACE, OPT_TCP, OPT_JSON,
       OPT_BUSY, OPT_WAIT, OPT_TIMEOUT, OPT_ONCE, OPT_TRANSPORT, OPT_DEV, OPT_IP, OPT_QUIET };

static int parse_opts(int argc, char **argv, struct perf_opts *o)
{
	static const struct option lopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", required_argument, NULL, 'c' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "tcp-port", required_argument, NULL, OPT_TCP_PORT },
		{ "test", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'S' },
		{ "sweep", optional_argument, NULL, OPT_SWEEP },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "qd", required_argument, NULL, 'Q' },
		{ "qps", required_argument, NULL, 'q' },
		{ "crc", required_argument, NULL, OPT_CRC },
		{ "max-fpdu", required_argument, NULL, OPT_MAX_FPDU },
		{ "markers", no_argument, NULL, OPT_MARKERS },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "tcp", no_argument, NULL, OPT_TCP },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "busy", no_argument, NULL, OPT_BUSY },
		{ "wait", no_argument, NULL, OPT_WAIT },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "dev", required_argument, NULL, OPT_DEV },
		{ "ip", required_argument, NULL, OPT_IP },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tcp_port = NULL, *a_addr = NULL;
	bool size_set = false, sweep = false, client = false;
	uint64_t v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->port = PERF_PORT;
	o->qd = 16;
	o->nqps = 1;
	o->crc = IW_CRC_ON;
	o->timeout_s = 10.0;
	while ((ch = getopt_long(argc, argv, "sc:a:p:t:S:n:D:Q:q:vh", lopts, NULL)) != -1) {
		switch (ch) {
		case 's': o->server = true; break;
		case 'c':
			client = true;
			/* "-c -a ADDR" (iwping's spelling): -c took "-a" as its
			 * address; hand it back to getopt. */
			if (optarg[0] == '-' && optarg[1] != '\0')
				optind--;
			else
				o->addr = optarg;
			break;
		case 'a': a_addr = optarg; break;
		case 'p':
			if (tc_parse_uint(optarg, 1, 65534, &v))
				return tc_bad_value("-p/--port", optarg, "1..65534 (PORT+1 is the TCP port)");
			o->port = optarg;
			break;
		case OPT_TRANSPORT:
			if (tc_parse_transport(optarg, &o->tr.kind))
				return tc_bad_value("--transport", optarg, "kernel or raw");
			break;
		case OPT_DEV:
			o->tr.dev = optarg;
			break;
		case OPT_IP:
			o->tr.ip = optarg;
			break;
		case OPT_TCP_PORT:
			if (tc_parse_uint(optarg, 1, 65535, &v))
				return tc_bad_value("--tcp-port", optarg, "1..65535");
			tcp_port = optarg;
			break;
		case 't':
			if (parse_test(optarg, &o->test))
				return tc_bad_value("-t/--test", optarg, "write, read, send or lat");
			break;
		case 'S':
			if (tc_parse_size(optarg, 1, PERF_SIZE_LIMIT, &v))
				return tc_bad_value("-S/--size", optarg, "1..1G bytes, suffixes K M G");
			o->sizes[0] = (uint32_t)v;
			o->nsizes = 1;
			size_set = true;
			break;
		case OPT_SWEEP:
			if (parse_sweep(optarg, o))
				return tc_bad_value("--sweep", optarg,
						    "a comma-separated list of at most 64 sizes, each 1..1G bytes");
			sweep = true;
			break;
		case 'n':
			if (tc_parse_uint(optarg, 1, UINT32_MAX, &o->iters))
				return tc_bad_value("-n/--iters", optarg, "1..4294967295");
			break;
		case 'D':
			if (tc_parse_seconds(optarg, &o->duration) || o->duration < 0.001)
				return tc_bad_value("-D/--duration", optarg, "0.001..10000000 seconds");
			break;
		case 'Q':
			if (tc_parse_uint(optarg, 1, PERF_MAX_QD, &v))
				return tc_bad_value("-Q/--qd", optarg, "1..1024");
			o->qd = (uint32_t)v;
			break;
		case 'q':
			if (tc_parse_uint(optarg, 1, PERF_MAX_QPS, &v))
				return tc_bad_value("-q/--qps", optarg, "1..1024");
			o->nqps = (uint32_t)v;
			break;
		case OPT_CRC:
			if (tc_parse_crc(optarg, &o->crc))
				return tc_bad_value("--crc", optarg, "on, off or required");
			o->crc_set = true;
			break;
		case OPT_MAX_FPDU:
			if (tc_parse_size(optarg, 64, 65535, &v))
				return tc_bad_value("--max-fpdu", optarg, "64..65535 bytes");
			o->max_fpdu = (uint32_t)v;
			break;
		case OPT_MARKERS: o->markers = true; break;
		case OPT_TRACE: o->trace = optarg; break;
		case OPT_TCP: o->tcp = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_BUSY: o->busy = true; break;
		case OPT_WAIT: o->wait = true; break;
		case OPT_TIMEOUT:
			if (tc_parse_seconds(optarg, &o->timeout_s) || o->timeout_s < 0.1)
				return tc_bad_value("--timeout", optarg, "0.1..10000000 seconds");
			break;
		case OPT_ONCE: o->once = true; break;
		case 'v': o->verbose = true; break;
		case OPT_QUIET: o->quiet = true; break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	/* -a: the server's bind address, or the client's server (-c -a ADDR). */
	if (client && a_addr) {
		if (o->addr) {
			tc_err("the server address is given once: -c ADDR or -c -a ADDR");
			return -1;
		}
		o->addr = a_addr;
	} else {
		o->bind = a_addr;
	}
	if (optind < argc) {
		tc_err("unexpected argument %s", argv[optind]);
		return -1;
	}
	if (o->server == client) {
		tc_err("give exactly one of -s (server) and -c ADDR (client)");
		return -1;
	}
	if (client && o->addr == NULL) {
		tc_err("the client needs the server's address: -c ADDR or -c -a ADDR");
		return -1;
	}
	if (size_set && sweep) {
		tc_err("-S and --sweep exclude each other");
		return -1;
	}
	if (o->nsizes == 0) {
		o->sizes[0] = o->test == PT_LAT ? 8 : 65536;
		o->nsizes = 1;
	}
	if (o->test == PT_LAT && o->nqps > 1) {
		tc_err("the latency test uses one connection (-q 1)");
		return -1;
	}
	if (tcp_port)
		snprintf(o->tcp_port, sizeof(o->tcp_port), "%s", tcp_port);
	else
		snprintf(o->tcp_port, sizeof(o->tcp_port), "%u", (unsigned)atoi(o->port) + 1);
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_opts o;

	tc_set_progname("iwperf");
	if (parse_opts(argc, argv, &o)) {
		fputs("Try 'iwperf --help'.\n", stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	tc_install_signals();
	if (o.server)
		return perf_server(&o);
	return o.tcp ? perf_client_tcp(&o) : perf_client_iwarp(&o);
}
