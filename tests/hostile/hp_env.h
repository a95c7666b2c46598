/* Our side of a hostile-peer test: a context with a progress thread, one
 * QP with receives posted, a region for every access combination, all of
 * it inside one arena filled with a pattern, and a shadow copy of what the
 * arena must hold. After each case: the Terminate the peer got, the close,
 * the CM event, the QP's cause, every WR completed exactly once, and the
 * arena equal to the shadow (nothing written outside what the test
 * allowed). Check assertions throughout (call from Check tests only). */
#ifndef HP_ENV_H
#define HP_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#include "hp_peer.h"

/* Regions, one per access combination (REMOTE_WRITE needs LOCAL_WRITE). */
enum {
	HP_MR_NONE,  /* 0 */
	HP_MR_LW,    /* LOCAL_WRITE */
	HP_MR_W,     /* LOCAL_WRITE | REMOTE_WRITE */
	HP_MR_R,     /* REMOTE_READ */
	HP_MR_LW_R,  /* LOCAL_WRITE | REMOTE_READ */
	HP_MR_ALL,   /* LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ */
	HP_NMR,
};
#define HP_MR_LEN 4096u
#define HP_GAP 4096u      /* guard bytes before, between and after regions */
#define HP_RECV_N 8
#define HP_RECV_LEN 256u
#define HP_MAX_WR 64
#define HP_WAIT_MS 5000
/* From our Terminate queued to DISCONNECTED and the flush: the library's
 * Terminate bound (IW_QP_LINGER_MS, docs/limits.md "Timeouts"). */
#define HP_TERM_BOUND_MS 3000
/* What a timer-driven event may be late under load or ASan. Far below the
 * 5000 ms graceful-close wait the bound must not depend on. */
#define HP_TIMER_SLACK_MS 1500
#define HP_MAX_EITHER 4

struct hp_env {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen, *id;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_srq *srq; /* SRQ mode (hp_env_init_srq): receives live here */
	uint8_t *arena, *shadow;
	size_t arena_len;
	size_t mr_off[HP_NMR];
	struct iw_mr *mr[HP_NMR];
	size_t recv_off, sink_off;
	struct iw_mr *rmr;  /* receive buffers (LOCAL_WRITE) */
	struct iw_mr *smr;  /* our READ sinks / SEND sources (LOCAL_WRITE) */
	int lfd;            /* the peer's listening socket (peer as responder) */
	struct hp_peer *peer;
	/* Work request accounting. */
	uint64_t wr_id[HP_MAX_WR];
	bool may_succeed[HP_MAX_WR];
	bool optional[HP_MAX_WR]; /* may stay uncompleted (SRQ entries no QP took) */
	int ndone[HP_MAX_WR];
	enum iw_wc_status status[HP_MAX_WR];
	int n_wr;
	/* Ranges that may hold old or sent bytes (hp_env_allow_either). */
	struct {
		size_t off, len;
		uint8_t data[HP_MR_LEN];
	} either[HP_MAX_EITHER];
	int n_either;
	/* When set, the next hp_env_expect_term also wants the Terminate to
	 * carry this RDMAP header (the 28-byte Read Request body). */
	const uint8_t *want_rdmap_hdr;
};

/* When set, QPs are created with verified_placement (verbs.h). */
extern bool hp_env_verified;

/* Context (progress thread), PD, CQ, QP, arena, regions, HP_RECV_N
 * receives posted. qp_ird/ord unused here: the CM negotiates them. */
void hp_env_init(struct hp_env *e);
void hp_env_fini(struct hp_env *e);
/* The same with a shared receive queue: the HP_RECV_N receives are posted
 * once to the SRQ (wr_id 1000..) and tracked as optional: a QP that fails
 * must complete the one it took exactly once and leave the others. */
void hp_env_init_srq(struct hp_env *e);
/* After a finished case: destroy the QP and its id, make a new QP with
 * fresh receives and a new peer (the listener, regions and arena stay). */
void hp_env_new_qp(struct hp_env *e);

uint8_t *hp_mr_ptr(struct hp_env *e, int i);
uint64_t hp_mr_to(struct hp_env *e, int i);
uint32_t hp_mr_stag(struct hp_env *e, int i);

/* The peer connects to our listener and sends m; we accept with ap
 * (NULL: defaults); both sides reach RTS. */
void hp_env_peer_initiates(struct hp_env *e, const struct hp_mpa *m, const struct iw_conn_param *ap);
/* The default connection every suite starts from: rev 2, CRC on
 * (flags 0x50), IRD = ORD = 4; designated initialisers may follow. */
#define HP_MPA_DEFAULT .flags = 0x50, .rev = 2, .ird = 4, .ord = 4
/* hp_env_init (hp_env_init_srq with srq), then the peer initiates the
 * default connection. */
void hp_env_up(struct hp_env *e, bool srq);
/* hp_env_new_qp, then the peer initiates the default connection again. */
void hp_env_reconnect(struct hp_env *e);
/* We connect (cp, NULL: defaults) to the peer, which answers with m
 * (HP_FLAGS_ECHO honoured through rflags). */
void hp_env_peer_responds(struct hp_env *e, const struct hp_mpa *m, unsigned rflags,
			  const struct iw_conn_param *cp);

/* Wait for a CM event of this type within ms (other types fail). */
struct iw_cm_event *hp_env_event(struct hp_env *e, enum iw_cm_event_type type, int ms);

/* Track a WR this test posted; may_succeed: a successful completion is
 * acceptable (else it must end in an error or flush status). */
void hp_env_track(struct hp_env *e, uint64_t wr_id, bool may_succeed);
/* Tracked WR i must complete (exactly once) after all. */
void hp_env_require(struct hp_env *e, uint64_t wr_id);
/* Post an RDMA READ of len bytes from the peer's (stag, to) into our sink:
 * it stays outstanding (the peer never answers). */
void hp_env_post_read(struct hp_env *e, uint64_t wr_id, uint32_t stag, uint64_t to, uint32_t len);
/* Post a SEND of len bytes from our sink area. */
void hp_env_post_send(struct hp_env *e, uint64_t wr_id, uint32_t len, bool may_succeed);

/* The arena may now hold data at [p, p + len) (a legitimate placement). */
void hp_env_allow(struct hp_env *e, const uint8_t *p, const void *data, size_t len);
/* [p, p + len) may hold the old bytes or data (placement that happened
 * before the FPDU was found bad, into the very target it named; the WR
 * then never completes successfully). Checked byte by byte at the next
 * hp_env_check_guards. */
void hp_env_allow_either(struct hp_env *e, const uint8_t *p, const void *data, size_t len);
void hp_env_check_guards(struct hp_env *e);

/* Collect completions until every tracked WR completed (bounded), then
 * watch a little longer for duplicates. Causes carried by error
 * completions must equal want when want is given. */
void hp_env_drain(struct hp_env *e, const struct iw_term_cause *want);

/* The whole verdict of a hostile case: the peer receives a Terminate with
 * want (and, when bad_hdr is given, the copied DDP header equals it), we
 * close the connection, the application gets DISCONNECTED and the QP's
 * cause equals want, the WRs complete exactly once, the arena is intact. */
void hp_env_expect_term(struct hp_env *e, struct iw_term_cause want, const uint8_t *bad_hdr, size_t bad_hdr_len);

/* "l/e/0xcc" (static buffer per slot 0..3). */
const char *hp_cause(struct iw_term_cause c, int slot);

#endif
