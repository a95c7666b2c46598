/* Helpers shared by the user tools (iwping, iwperf): number and address
 * parsing, big-endian packing, clocks, a no-progress watchdog, signal
 * handling and readable error reports. Only the public libiwarp API and
 * libc/POSIX are used. */
#ifndef IW_TOOL_COMMON_H
#define IW_TOOL_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

/* Set by SIGINT/SIGTERM once tc_install_signals() ran. */
extern volatile sig_atomic_t tc_stop;
void tc_install_signals(void);

uint64_t tc_now_ns(void);           /* CLOCK_MONOTONIC */
double tc_cpu_seconds(void);        /* user + system time of this process */

/* Unsigned decimal with an optional binary suffix (K, M, G; "4K" = 4096),
 * within [min, max]. 0 or -EINVAL / -ERANGE. */
int tc_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Plain unsigned decimal within [min, max]. */
int tc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Non-negative decimal number (seconds) with a fraction allowed. */
int tc_parse_seconds(const char *s, double *out);
/* "on", "off" or "required". */
int tc_parse_crc(const char *s, enum iw_crc_policy *out);
const char *tc_crc_str(enum iw_crc_policy p);

/* --transport=kernel|raw, --dev IFACE, --ip ADDR/PREFIX: which TCP the
 * context uses (issue 8; docs/raw.md). */
struct tc_transport {
	enum iw_transport_kind kind;
	const char *dev, *ip;
};
int tc_parse_transport(const char *s, enum iw_transport_kind *out);
/* Check the combination and fill ca. 0, or -1 after an error message. */
int tc_transport_apply(const struct tc_transport *t, struct iw_context_attr *ca);
#define TC_TRANSPORT_HELP                                                                      \
	"        --transport=kernel|raw\n"                                                     \
	"                         kernel TCP sockets (default) or our own TCP/IP on\n"         \
	"                         raw frames (needs CAP_NET_RAW, --dev and --ip)\n"            \
	"        --dev IFACE      raw: the interface\n"                                         \
	"        --ip ADDR/PREFIX\n"                                                            \
	"                         raw: our IPv4 address (not the kernel's) and prefix\n"

/* getaddrinfo() for TCP; host NULL with passive: the wildcard address.
 * 0, or -EINVAL after printing the resolver's message. */
int tc_resolve(const char *host, const char *port, bool passive, struct sockaddr_storage *out,
	       socklen_t *outlen);
/* "addr:port" / "[v6]:port" into buf. */
const char *tc_addr_str(const struct sockaddr *sa, char *buf, size_t n);

/* Big-endian field access for the small messages the tools exchange. */
void tc_put_be16(uint8_t *p, uint16_t v);
void tc_put_be32(uint8_t *p, uint32_t v);
void tc_put_be64(uint8_t *p, uint64_t v);
uint16_t tc_get_be16(const uint8_t *p);
uint32_t tc_get_be32(const uint8_t *p);
uint64_t tc_get_be64(const uint8_t *p);

/* Page-aligned zeroed buffer (free with free()), NULL on failure. */
void *tc_alloc_buf(size_t len);

const char *tc_wc_opcode_str(enum iw_wc_opcode op);
/* "who: <opcode> failed: <status> (Terminate cause: <cause>)" on stderr. */
void tc_report_wc(const char *who, const struct iw_wc *wc);
/* A CM event that ends a connection attempt or a connection, explained
 * (REJECTED with the peer's private data as text when printable,
 * CONNECT_ERROR with the errno text, DISCONNECTED). */
void tc_report_cm_event(const char *who, const struct iw_cm_event *ev);
/* Why a QP stopped, if it did (iw_qp_error), appended to stderr. */
void tc_report_qp_error(const char *who, const struct iw_qp *qp);

/* Fails a run when nothing happened for limit seconds. */
struct tc_watchdog {
	uint64_t last_ns;
	uint64_t limit_ns; /* 0: never expires */
};
void tc_watchdog_init(struct tc_watchdog *w, double limit_s);
void tc_watchdog_kick(struct tc_watchdog *w);
bool tc_watchdog_expired(const struct tc_watchdog *w);

/* A bad option value, the way every tool says it:
 * "PROG: invalid value 'VAL' for OPT (valid: RANGE)". Returns -1. */
int tc_bad_value(const char *opt, const char *val, const char *valid);

/* "PROG: listening on ADDR:PORT[ what]" on stderr, once the server is up:
 * scripts wait for this line instead of polling for the port. */
void tc_announce_listen(const struct sockaddr *sa, const char *what);

/* Bytes as a C-like string for messages: printable ASCII as is, \r \n \t
 * and \" \\ escaped, anything else as \xNN; "..." appended when cut. */
const char *tc_escape(const void *p, size_t n, char *buf, size_t cap);

/* Print a run-time error (prefixed with the program name) to stderr. */
void tc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tc_set_progname(const char *name);

#endif
