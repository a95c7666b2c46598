/* Helpers shared by the user tools; see tool_common.h. */
#include "tool_common.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

volatile sig_atomic_t tc_stop;
static const char *progname = "iwtool";

void tc_set_progname(const char *name)
{
	progname = name;
}

void tc_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void on_signal(int sig)
{
	(void)sig;
	tc_stop = 1;
}

void tc_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A peer closing a plain TCP socket must not kill the tool. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

uint64_t tc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double tc_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0.0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (s == NULL || *p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
		p++;
	}
	*end = p;
	*out = v;
	return 0;
}

int tc_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v, mul = 1;
	int rc = parse_u64(s, &end, &v);

	if (rc)
		return rc;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (*end == 'i' && mul != 1) /* accept "KiB"-style spellings too */
		end++;
	if (*end == 'B' && mul != 1)
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	v *= mul;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int tc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int rc = parse_u64(s, &end, &v);

	if (rc)
		return rc;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int tc_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0' || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end != '\0' || !(v >= 0.0) || v > 1e7)
		return -EINVAL;
	*out = v;
	return 0;
}

int tc_parse_crc(const char *s, enum iw_crc_policy *out)
{
	if (strcmp(s, "on") == 0)
		*out = IW_CRC_ON;
	else if (strcmp(s, "off") == 0)
		*out = IW_CRC_OFF;
	else if (strcmp(s, "required") == 0)
		*out = IW_CRC_REQUIRED;
	else
		return -EINVAL;
	return 0;
}

const char *tc_crc_str(enum iw_crc_policy p)
{
	switch (p) {
	case IW_CRC_ON: return "on";
	case IW_CRC_OFF: return "off";
	case IW_CRC_REQUIRED: return "required";
	}
	return "?";
}

int tc_resolve(const char *host, const char *port, bool passive, struct sockaddr_storage *out,
	       socklen_t *outlen)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	if (passive && host == NULL)
		hints.ai_family = AF_INET; /* wildcard: IPv4 like rping */
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0 || res == NULL) {
		tc_err("cannot resolve %s port %s: %s", host ? host : "*", port, gai_strerror(rc));
		return -EINVAL;
	}
	if (res->ai_addrlen > sizeof(*out)) {
		freeaddrinfo(res);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, res->ai_addr, res->ai_addrlen);
	if (outlen)
		*outlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

const char *tc_addr_str(const struct sockaddr *sa, char *buf, size_t n)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, n, "%s:%u", host, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, n, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, n, "(family %d)", sa->sa_family);
	}
	return buf;
}

void tc_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void tc_put_be32(uint8_t *p, uint32_t v)
{
	tc_put_be16(p, (uint16_t)(v >> 16));
	tc_put_be16(p + 2, (uint16_t)v);
}

void tc_put_be64(uint8_t *p, uint64_t v)
{
	tc_put_be32(p, (uint32_t)(v >> 32));
	tc_put_be32(p + 4, (uint32_t)v);
}

uint16_t tc_get_be16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

uint32_t tc_get_be32(const uint8_t *p)
{
	return (uint32_t)tc_get_be16(p) << 16 | tc_get_be16(p + 2);
}

uint64_t tc_get_be64(const uint8_t *p)
{
	return (uint64_t)tc_get_be32(p) << 32 | tc_get_be32(p + 4);
}

void *tc_alloc_buf(size_t len)
{
	void *p = NULL;

	if (len == 0)
		len = 1;
	if (posix_memalign(&p, 4096, len) != 0)
		return NULL;
	memset(p, 0, len);
	return p;
}

const char *tc_wc_opcode_str(enum iw_wc_opcode op)
{
	switch (op) {
	case IW_WC_SEND: return "SEND";
	case IW_WC_RDMA_WRITE: return "RDMA WRITE";
	case IW_WC_RDMA_READ: return "RDMA READ";
	case IW_WC_RECV: return "RECV";
	case IW_WC_LOCAL_INV: return "LOCAL_INV";
	case IW_WC_COMP_SWAP: return "COMPARE AND SWAP";
	case IW_WC_FETCH_ADD: return "FETCH AND ADD";
	case IW_WC_RECV_RDMA_WITH_IMM: return "RECV RDMA WITH IMM";
	}
	return "WR";
}

void tc_report_wc(const char *who, const struct iw_wc *wc)
{
	if (iw_term_cause_is_set(wc->cause))
		fprintf(stderr, "%s: %s: %s failed: %s (Terminate cause: %s; layer %u etype %u ecode 0x%02x)\n",
			progname, who, tc_wc_opcode_str(wc->opcode), iw_wc_status_str(wc->status),
			iw_term_cause_str(wc->cause), wc->cause.layer, wc->cause.etype, wc->cause.ecode);
	else
		fprintf(stderr, "%s: %s: %s failed: %s\n", progname, who, tc_wc_opcode_str(wc->opcode),
			iw_wc_status_str(wc->status));
}

void tc_report_qp_error(const char *who, const struct iw_qp *qp)
{
	struct iw_term_cause c;

	if (qp == NULL)
		return;
	c = iw_qp_error(qp);
	if (iw_term_cause_is_set(c))
		fprintf(stderr, "%s: %s: connection stopped: %s (layer %u etype %u ecode 0x%02x)\n", progname,
			who, iw_term_cause_str(c), c.layer, c.etype, c.ecode);
}

/* Private data of a reject, shown when it is text (iwperf's reasons are). */
static void print_pdata(const struct iw_cm_event *ev)
{
	const unsigned char *p = ev->private_data;
	uint16_t i, n = ev->private_data_len;

	if (p == NULL || n == 0)
		return;
	while (n > 0 && p[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			break;
	if (n > 0 && i == n)
		fprintf(stderr, " (peer says: %.*s)", (int)n, (const char *)p);
	else
		fprintf(stderr, " (%u bytes of private data)", ev->private_data_len);
}

const char *tc_escape(const void *p, size_t n, char *buf, size_t cap)
{
	const unsigned char *b = p;
	size_t o = 0, i;

	if (cap < 8) {
		if (cap)
			buf[0] = '\0';
		return buf;
	}
	for (i = 0; i < n; i++) {
		char t[8];
		unsigned char ch = b[i];

		if (ch == '\r' || ch == '\n' || ch == '\t')
			snprintf(t, sizeof(t), "\\%c", ch == '\r' ? 'r' : ch == '\n' ? 'n' : 't');
		else if (ch == '"' || ch == '\\')
			snprintf(t, sizeof(t), "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			snprintf(t, sizeof(t), "%c", ch);
		else
			snprintf(t, sizeof(t), "\\x%02x", ch);
		if (o + strlen(t) + 4 > cap) {
			strcpy(buf + o, "...");
			return buf;
		}
		strcpy(buf + o, t);
		o += strlen(t);
	}
	buf[o] = '\0';
	return buf;
}

/* CONNECT_ERROR with what the peer sent instead of an MPA Reply (the CM
 * hands those bytes over as the event's private data). */
static void report_not_mpa(const char *who, const struct iw_cm_event *ev)
{
	static const char key[] = "MPA ID Rep Frame";
	char text[200];
	size_t n = ev->private_data_len < 48 ? ev->private_data_len : 48;

	tc_escape(ev->private_data, n, text, sizeof(text));
	if (n < ev->private_data_len && strlen(text) + 4 < sizeof(text))
		strcat(text, "...");
	if (ev->private_data_len >= sizeof(key) - 1 && memcmp(ev->private_data, key, sizeof(key) - 1) == 0)
		fprintf(stderr, "%s: %s: connection failed: the peer's MPA Reply is invalid (\"%s\")\n", progname, who,
			text);
	else
		fprintf(stderr, "%s: %s: connection failed: peer sent \"%s\" which is not an MPA Reply "
			"(is an iWARP server listening there?)\n", progname, who, text);
}

int tc_bad_value(const char *opt, const char *val, const char *valid)
{
	tc_err("invalid value '%s' for %s (valid: %s)", val ? val : "", opt, valid);
	return -1;
}

void tc_announce_listen(const struct sockaddr *sa, const char *what)
{
	char a[INET6_ADDRSTRLEN + 16];

	fprintf(stderr, "%s: listening on %s%s%s\n", progname, tc_addr_str(sa, a, sizeof(a)), what ? " " : "",
		what ? what : "");
	fflush(stderr);
}

void tc_report_cm_event(const char *who, const struct iw_cm_event *ev)
{
	switch (ev->type) {
	case IW_CM_EVENT_REJECTED:
		fprintf(stderr, "%s: %s: connection rejected by the peer", progname, who);
		if (ev->status)
			fprintf(stderr, " [%s]", strerror(-ev->status));
		print_pdata(ev);
		fputc('\n', stderr);
		break;
	case IW_CM_EVENT_CONNECT_ERROR:
		if (ev->private_data_len > 0)
			report_not_mpa(who, ev);
		else
			fprintf(stderr, "%s: %s: connection failed: %s\n", progname, who,
				ev->status ? strerror(-ev->status) : "TCP or MPA failure");
		break;
	case IW_CM_EVENT_DISCONNECTED:
		fprintf(stderr, "%s: %s: peer disconnected%s%s\n", progname, who, ev->status ? ": " : "",
			ev->status ? strerror(-ev->status) : "");
		break;
	default:
		fprintf(stderr, "%s: %s: unexpected CM event %s (status %d)\n", progname, who,
			iw_cm_event_str(ev->type), ev->status);
		break;
	}
}

void tc_watchdog_init(struct tc_watchdog *w, double limit_s)
{
	w->limit_ns = limit_s > 0 ? (uint64_t)(limit_s * 1e9) : 0;
	w->last_ns = tc_now_ns();
}

void tc_watchdog_kick(struct tc_watchdog *w)
{
	w->last_ns = tc_now_ns();
}

bool tc_watchdog_expired(const struct tc_watchdog *w)
{
	return w->limit_ns != 0 && tc_now_ns() - w->last_ns > w->limit_ns;
}

int tc_parse_transport(const char *s, enum iw_transport_kind *out)
{
	if (strcmp(s, "kernel") == 0)
		*out = IW_TRANSPORT_KERNEL;
	else if (strcmp(s, "raw") == 0)
		*out = IW_TRANSPORT_RAW;
	else
		return -EINVAL;
	return 0;
}

int tc_transport_apply(const struct tc_transport *t, struct iw_context_attr *ca)
{
	if (t->kind == IW_TRANSPORT_RAW && (!t->dev || !t->ip)) {
		tc_err("--transport=raw needs --dev IFACE and --ip ADDR/PREFIX");
		return -1;
	}
	if (t->kind == IW_TRANSPORT_KERNEL && (t->dev || t->ip)) {
		tc_err("--dev and --ip are for --transport=raw");
		return -1;
	}
	ca->transport = t->kind;
	ca->raw_dev = t->dev;
	ca->raw_ip = t->ip;
	return 0;
}
