/* iwperf: bandwidth and latency of libiwarp RDMA WRITE / READ / SEND and
 * SEND ping-pong, with a plain-TCP baseline in the same harness.
 *
 * Parts: iwperf.c (options, report), iwperf_proto.c (what goes between
 * client and server), iwperf_client.c (iWARP client), iwperf_server.c
 * (server: iWARP and TCP), iwperf_tcp.c (TCP client and the server's TCP
 * connections).
 *
 * Between client and server, per iWARP connection (one per QP):
 *   MPA Request private data: the hello (test, largest size, queue depth,
 *     QP index/count, CRC policy, max ULPDU).
 *   MPA Reply private data: the server's advert (buffer address, rkey,
 *     length, receive depth R = the client's initial SEND credits). The
 *     Reply carries it because a responder may send no FPDU before the
 *     initiator's first one.
 *   Control SENDs (PERF_CTRL_LEN bytes, magic first): ROW_END from the
 *     client after each row (messages and bytes it sent), ROW_ACK back
 *     (what the server received, cumulative credits), CREDIT from the
 *     server during SEND tests (cumulative receives it has posted).
 * Every receive lands its first PERF_SLOT bytes in a slot of its own, so a
 * control message is told from data by its length and magic. */
#ifndef IWPERF_H
#define IWPERF_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <iwarp/cm.h>

#include "tool_common.h"

#define PERF_PORT "18516"
#define PERF_MAX_SIZES 64
#define PERF_SIZE_LIMIT (1u << 30)
#define PERF_MAX_QPS 1024u
#define PERF_MAX_QD 1024u
/* Without -n / -D a row runs its default message count and at least this
 * long: 5000 small messages take under 1 ms, too short to mean anything. */
#define PERF_MIN_ROW_NS 500000000ull

#define PERF_HELLO_MAGIC 0x49575046u /* "IWPF" */
#define PERF_ADVERT_MAGIC 0x49575041u /* "IWPA" */
#define PERF_CTRL_MAGIC 0x49575043u  /* "IWPC" */
#define PERF_TCP_MAGIC 0x49575054u   /* "IWPT" */
#define PERF_VERSION 1u

#define PERF_HELLO_LEN 32u
#define PERF_ADVERT_LEN 32u
#define PERF_CTRL_LEN 40u
#define PERF_SLOT 64u          /* per-receive slot: control messages fit */
#define PERF_CLIENT_RECVS 8u   /* client receives (control, echoes) */
#define PERF_SERVER_CSENDS 8u  /* server control send slots */

enum perf_test { PT_WRITE, PT_READ, PT_SEND, PT_LAT };

struct perf_opts {
	bool server, tcp, json, verbose, once, markers, busy, quiet;
	bool wait; /* lat: block in iw_progress() between messages (both sides) */
	const char *addr; /* client: the server */
	const char *bind; /* server: listen address (NULL: all IPv4) */
	const char *port;
	char tcp_port[8];
	enum perf_test test;
	uint32_t sizes[PERF_MAX_SIZES];
	unsigned nsizes;
	uint64_t iters;   /* per QP; 0: pick per size */
	double duration;  /* seconds; > 0 overrides iters */
	uint32_t qd, nqps;
	enum iw_crc_policy crc;
	bool crc_set;
	uint32_t max_fpdu;
	const char *trace;
	double timeout_s;
	struct tc_transport tr;
};

/* ------------------------------------------------------------------ */
/* Wire messages (iwperf_proto.c)                                      */

struct perf_hello {
	uint8_t test;      /* enum perf_test */
	uint8_t crc;       /* enum iw_crc_policy the client uses */
	uint32_t max_size; /* largest message of the run */
	uint32_t qd;
	uint32_t qp_index, nqps;
	uint32_t max_ulpdu;
	uint8_t flags; /* PERF_HELLO_* */
};

#define PERF_HELLO_WAIT 0x01 /* lat: the server blocks too (--wait) */

struct perf_advert {
	uint32_t recv_depth; /* receives posted: the client's SEND credits */
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

enum perf_ctrl_type { PC_ROW_END = 1, PC_ROW_ACK = 2, PC_CREDIT = 3 };

struct perf_ctrl {
	uint8_t type;
	uint32_t row;
	uint64_t credits; /* cumulative SENDs the server can take */
	uint64_t msgs;
	uint64_t bytes;
};

void perf_hello_encode(uint8_t *p, const struct perf_hello *h);
int perf_hello_decode(const void *p, size_t len, struct perf_hello *h);
void perf_advert_encode(uint8_t *p, const struct perf_advert *a);
int perf_advert_decode(const void *p, size_t len, struct perf_advert *a);
void perf_ctrl_encode(uint8_t *p, const struct perf_ctrl *c);
/* 0 when p/len is a control message, -EINVAL otherwise. */
int perf_ctrl_decode(const void *p, size_t len, struct perf_ctrl *c);

/* TCP session hello: the first PERF_TCP_HELLO_LEN bytes of a connection. */
#define PERF_TCP_HELLO_LEN 16u
enum perf_tcp_kind { PTK_CTRL = 1, PTK_DATA = 2 };
struct perf_tcp_hello {
	uint8_t kind;   /* enum perf_tcp_kind */
	uint8_t test;   /* enum perf_test */
	uint32_t session;
	uint32_t index;
};
void perf_tcp_hello_encode(uint8_t *p, const struct perf_tcp_hello *h);
int perf_tcp_hello_decode(const uint8_t *p, struct perf_tcp_hello *h);

const char *perf_test_name(enum perf_test t);
/* Fill the data buffers with this (never looks like a control message). */
#define PERF_FILL 0xA5

/* ------------------------------------------------------------------ */
/* Measurement and report (iwperf.c)                                   */

/* Peak bandwidth: the best rate over windows of about 1/20 of a row. */
struct perf_peak {
	uint64_t win_msgs;  /* close a window after this many messages, */
	uint64_t win_ns;    /* or after this long */
	uint64_t t_last, msgs_last;
	double peak_bps;
};
void perf_peak_init(struct perf_peak *pk, const struct perf_opts *o, uint64_t expect_msgs, uint64_t t0);
void perf_peak_update(struct perf_peak *pk, uint64_t now, uint64_t msgs, uint32_t size);

struct perf_bw_row {
	uint32_t size;
	uint64_t msgs;   /* all QPs */
	uint64_t ns;     /* first post to last completion */
	double peak_bps; /* bytes per second */
	double cpu_s;    /* user + system of this process over the row */
};

struct perf_lat_row {
	uint32_t size;
	uint64_t iters;
	uint64_t *rtt_ns; /* iters round trips (sorted by the report) */
};

/* Per-QP iterations for a size when -n was not given. */
uint64_t perf_default_iters(const struct perf_opts *o, uint32_t size);
/* Earliest end of a row started at t0 (0: none, -n or -D given). */
uint64_t perf_min_end(const struct perf_opts *o, uint64_t t0);

/* The live line: on a terminal (stderr), once a row has run 2 s, its
 * progress so far every second, overwritten in place; --quiet and --json
 * turn it off. */
struct perf_live {
	bool on;
	uint32_t size;
	uint64_t t0, last;
};
void perf_live_start(struct perf_live *l, const struct perf_opts *o, uint32_t size, uint64_t t0);
/* Bandwidth rows: msgs completed so far; latency rows: round trips and
 * their summed time. */
void perf_live_bw(struct perf_live *l, uint64_t now, uint64_t msgs);
void perf_live_lat(struct perf_live *l, uint64_t now, uint64_t n, uint64_t sum_ns);
void perf_live_end(struct perf_live *l);

/* What every row added up to, for the closing summary line. */
struct perf_total {
	unsigned rows;
	uint64_t msgs, bytes, ns;
};
void perf_total_add(struct perf_total *t, uint64_t msgs, uint64_t bytes, uint64_t ns);
void perf_report_summary(const struct perf_opts *o, const struct perf_total *t);
void perf_report_header(const struct perf_opts *o, const char *peer);
void perf_report_bw(const struct perf_opts *o, const struct perf_bw_row *r);
void perf_report_lat(const struct perf_opts *o, struct perf_lat_row *r);
/* Latency rows: the round trips' total time (for the summary). */
uint64_t perf_lat_sum_ns(const struct perf_lat_row *r);

/* Growable RTT sample store (not on a timed path: grows by doubling). */
struct perf_samples {
	uint64_t *v;
	uint64_t n, cap;
};
int perf_samples_push(struct perf_samples *s, uint64_t x);

/* ------------------------------------------------------------------ */
/* Runs                                                                */

int perf_client_iwarp(const struct perf_opts *o);
int perf_client_tcp(const struct perf_opts *o);
int perf_server(const struct perf_opts *o);

/* The server's TCP side (iwperf_tcp.c), driven by the server loop. */
struct perf_tcp_server;
int perf_tcp_server_open(const struct perf_opts *o, struct perf_tcp_server **out);
void perf_tcp_server_close(struct perf_tcp_server *ts);
/* Fill pollfds (at most max); returns how many. */
int perf_tcp_server_pollfds(struct perf_tcp_server *ts, struct pollfd *pfd, int max);
/* Handle what poll reported for the fds filled last; accept, read, echo. */
void perf_tcp_server_service(struct perf_tcp_server *ts, const struct pollfd *pfd, int n);
/* Connections open (a client session in progress). */
unsigned perf_tcp_server_active(const struct perf_tcp_server *ts);
/* A latency session is running: the server loop should spin. */
bool perf_tcp_server_wants_spin(const struct perf_tcp_server *ts);

#endif
