/* Shared helpers of the fault and limit suites: bounded waits on CM
 * events and completions, endpoints, raw TCP peers that speak just enough
 * MPA, an exactly-once completion tracker and resource meters (heap bytes,
 * process CPU time). Every wait is bounded. */
#ifndef FX_H
#define FX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#define FX_WAIT_MS 10000

extern struct iw_context *fx_ctx;
extern bool fx_threaded; /* fx_ctx runs its own progress thread */

uint64_t fx_now_ms(void);
void fx_pump(int ms);
/* Check fixtures: a context with manual progress, or with a thread. */
void fx_setup(void);
void fx_setup_threaded(void);
void fx_teardown(void);

struct iw_cm_event *fx_ev_wait(struct iw_cm_channel *ch, int ms);
struct iw_cm_event *fx_ev_expect(struct iw_cm_channel *ch, enum iw_cm_event_type type);
void fx_ev_expect_ack(struct iw_cm_channel *ch, enum iw_cm_event_type type);

struct fx_ep {
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
};
void fx_ep_init(struct fx_ep *e);
void fx_ep_fini(struct fx_ep *e);

void fx_loopback(int family, struct sockaddr_storage *ss);
socklen_t fx_sa_len(const struct sockaddr_storage *ss);
/* A CM listener on 127.0.0.1, port 0; *addr gets the bound address. */
struct iw_cm_id *fx_listen(struct iw_cm_channel *ch, const struct iw_listen_param *lp,
			   struct sockaddr_storage *addr);
/* A port nobody listens on. */
void fx_closed_port(struct sockaddr_storage *addr);

/* Raw TCP peers. */
int fx_raw_connect(const struct sockaddr_storage *a);
/* Plain listener on 127.0.0.1:0 (blocking); *addr gets its address. */
int fx_raw_listen(struct sockaddr_storage *addr);
/* Pump the context until our side drops fd (EOF or reset). */
bool fx_raw_dropped(int fd, int ms);
/* Accept one connection on lfd (pumping the context meanwhile), read the
 * default Request (rev 2, C=1, enhanced, no private data) and answer with
 * a Reply granting ird/ord. Returns the connected fd. */
int fx_raw_accept_reply(int lfd, uint16_t ird, uint16_t ord);
/* Reset: close with SO_LINGER 0. */
void fx_raw_rst(int fd);
/* Read what is there into buf (up to cap, without blocking), pumping
 * for up to ms first. Returns the bytes read. */
size_t fx_raw_read(int fd, void *buf, size_t cap, int ms);

/* Posting. */
void fx_post_recv(struct fx_ep *e, void *buf, size_t len, struct iw_mr *mr, uint64_t wr_id);
void fx_post_send(struct fx_ep *e, enum iw_wr_opcode op, void *buf, size_t len, struct iw_mr *mr, uint64_t raddr,
		  uint32_t rkey, uint64_t wr_id);

/* Exactly-once accounting for wr_ids 0 .. n-1 (n <= FX_TRACK_MAX). */
#define FX_TRACK_MAX 1024
struct fx_track {
	uint32_t n;
	uint32_t done;
	uint32_t ok, errors;
	uint8_t count[FX_TRACK_MAX];
	enum iw_wc_status status[FX_TRACK_MAX];
};
void fx_track_init(struct fx_track *t, uint32_t n);
/* Poll cq until every tracked WR completed (or ms passed); asserts that
 * no WR completes twice and no unknown wr_id shows up. Then polls a while
 * longer to catch late duplicates. Returns true when all completed. */
bool fx_track_wait(struct fx_track *t, struct iw_cq *cq, int ms);
/* Fold completions already available in (cq) without waiting. */
void fx_track_poll(struct fx_track *t, struct iw_cq *cq);

/* Meters. Heap bytes in use, allocated through malloc/calloc/realloc by
 * the library or the test (counted by wrapping those calls at link time). */
long long fx_heap_bytes(void);
/* CPU time of the whole process (user + system), microseconds. */
uint64_t fx_cpu_us(void);

#endif
