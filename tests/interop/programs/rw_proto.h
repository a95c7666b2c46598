/* rw_proto: the interop test protocol shared by iwrw (libiwarp, host) and
 * siwrw (libibverbs + librdmacm, inside the siw guest).
 *
 * Transport-independent: the backend creates the connection, registers the
 * three buffers the engine asks for, posts the work requests the engine
 * asks for through rw_ops, and feeds completions and connection events
 * back. Both programs run the same engine, so either can be the client or
 * the server of any test.
 *
 * Buffers (all page-aligned, zeroed):
 *   exposed  [W area: max + guard][R area: max]   remote read + write
 *   local    [src: max][dst: max + guard]         local only
 *   ctl      RW_RECV_SLOTS + RW_SEND_SLOTS messages of RW_MSG_LEN bytes
 *
 * Messages (RW_MSG_LEN bytes, big-endian): u32 magic, u32 type, u64 addr,
 * u32 rkey, u32 len, u32 round, u32 size, 4 bytes zero.
 *
 * Tests (client side; the server answers):
 *   rw        per size S and round r: the client sends ROUND; the server
 *             fills its R area with pattern (SR,r,S), clears its W area,
 *             answers READY; the client WRITEs pattern (CW,r,S) into the
 *             server's W area and READs the server's R area, checks it,
 *             sends CDONE; the server checks its W area (and the guard
 *             behind it), does the same in the other direction (SW, CR)
 *             and sends SDONE; the client checks its W area. After the
 *             last round the client sends BYE(rounds) and disconnects.
 *   badwrite  the client WRITEs 16 bytes to STag RW_BAD_STAG, then SENDs a
 *             PROBE; the connection must end with an error.
 *   badread   the client READs 16 bytes from STag RW_BAD_STAG; the READ
 *             must fail and the connection end.
 *   victim    (server) waits for the client's bad access to end the
 *             connection; receiving the PROBE is a failure.
 *   flood     the client keeps `depth` WRITEs and READs of flood_size in
 *             flight; after flood_ms the disconnecting side (client or
 *             server) disconnects. Every work request must complete
 *             exactly once (success before the disconnect, any status
 *             after it) and nothing may hang.
 * The server of rw/badwrite/badread/flood runs test rw/victim/victim/flood.
 *
 * Private data: the client connects with pdata_len bytes of pattern PD_C,
 * the server checks them and accepts with pdata_len bytes of PD_S (or
 * rejects with reject_len bytes of PD_R); the client checks what it gets.
 *
 * Every work request has a unique sequence number; a completion for a
 * sequence that is not outstanding (twice, or never posted) fails the test,
 * and at the end every posted request must have completed. */
#ifndef RW_PROTO_H
#define RW_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RW_MSG_LEN 32u
#define RW_RECV_SLOTS 8u
#define RW_SEND_SLOTS 8u
#define RW_CTL_LEN ((RW_RECV_SLOTS + RW_SEND_SLOTS) * RW_MSG_LEN)
#define RW_GUARD 64u
#define RW_MAX_SIZES 16u
#define RW_MAX_WRS (1u << 16) /* sequence numbers per run */
#define RW_BAD_STAG 0xdeadbe00u
#define RW_MAX_PDATA 512u

enum rw_role { RW_CLIENT, RW_SERVER };
enum rw_test { RW_T_RW, RW_T_BADWRITE, RW_T_BADREAD, RW_T_VICTIM, RW_T_FLOOD };
enum rw_wr_op { RW_OP_SEND, RW_OP_WRITE, RW_OP_READ, RW_OP_RECV };
/* Pattern tags (private data and buffers). */
enum rw_tag { RW_PD_C = 1, RW_PD_S, RW_PD_R, RW_TAG_CW, RW_TAG_CR, RW_TAG_SW, RW_TAG_SR };

struct rw_cfg {
	enum rw_role role;
	enum rw_test test;
	uint32_t sizes[RW_MAX_SIZES];
	unsigned nsizes;
	unsigned rounds;
	uint16_t pdata_len;  /* connect / accept private data */
	int reject_len;      /* server: reject with this much (-1: accept) */
	int expect_reject;   /* client: a reject with this much is success (-1: no) */
	uint32_t flood_size;
	unsigned flood_depth;
	unsigned flood_ms;
	enum rw_role disconnector; /* flood: who disconnects */
	bool verbose;
	/* Work requests still outstanding at the end are reported, not a
	 * failure (siw: requests posted after its flush, and the send queue
	 * behind the request in progress when siw itself disconnected, are
	 * never completed). Completing one twice still fails. */
	bool tolerate_lost_wrs;
	unsigned drain_ms; /* after the end: time for flushes to arrive */
};

/* What the backend does for the engine; 0 or a negative errno. laddr lies
 * in one of the three buffers (the backend picks the matching key). */
struct rw_ops {
	int (*post_send)(void *be, uint64_t wr_id, enum rw_wr_op op, void *laddr, uint32_t len,
			 uint64_t raddr, uint32_t rkey);
	int (*post_recv)(void *be, uint64_t wr_id, void *laddr, uint32_t len);
	int (*disconnect)(void *be);
};

enum rw_wr_state { RW_WR_FREE = 0, RW_WR_POSTED, RW_WR_DONE };

struct rw {
	struct rw_cfg cfg;
	const struct rw_ops *ops;
	void *be;
	const char *name;
	uint8_t *exposed, *local, *ctl;
	uint32_t exposed_rkey;
	uint32_t max; /* largest transfer: max of sizes, flood_size, 16 */

	/* peer's advert */
	bool have_peer;
	uint64_t raddr;
	uint32_t rkey, rlen;

	/* rw test */
	unsigned size_i, round;  /* current */
	unsigned rounds_done;    /* verified in both directions */
	unsigned rdma_pending;   /* our WRITE + READ of the current step */
	bool bye;
	bool bad_read_failed;

	/* flood */
	uint64_t flood_start_ms;
	bool flood_started;
	unsigned outstanding_rdma;
	uint64_t flood_ok;
	unsigned in_flight_at_disc;
	bool disc_requested;    /* we called disconnect */
	bool peer_gone;         /* DISCONNECTED or an error completion seen */
	bool disconnected;      /* DISCONNECTED event */
	bool established;

	/* work requests */
	uint64_t seq;           /* next sequence number */
	uint8_t wr_state[RW_MAX_WRS];
	uint64_t recv_seq[RW_RECV_SLOTS];
	unsigned send_slot;
	uint64_t posted, completed, failed_wcs;
	bool any_failed;
	uint64_t max_failed_seq;
	bool first_error_seen;
	enum rw_wr_op first_error_op;
	char first_error_status[48];

	/* outcome */
	bool finished;      /* test logic decided */
	bool failed;
	uint64_t end_ms;    /* when finished/disconnected: drain deadline base */
	char why[200];
	uint64_t now_ms;
};

/* Buffer sizes for a configuration. */
uint32_t rw_max_transfer(const struct rw_cfg *c);
size_t rw_exposed_len(const struct rw_cfg *c);
size_t rw_local_len(const struct rw_cfg *c);

/* Deterministic pattern bytes (seeded by tag, round, size). */
void rw_pattern(uint8_t *buf, size_t len, uint32_t tag, uint32_t round, uint32_t size);
/* Offset of the first difference from the pattern, or -1 if equal. */
long rw_pattern_diff(const uint8_t *buf, size_t len, uint32_t tag, uint32_t round, uint32_t size);

void rw_init(struct rw *e, const struct rw_cfg *cfg, const struct rw_ops *ops, void *be, const char *name);
/* The registered buffers (sizes: rw_exposed_len, rw_local_len, RW_CTL_LEN);
 * before rw_start. */
void rw_set_buffers(struct rw *e, uint8_t *exposed, uint8_t *local, uint8_t *ctl, uint32_t exposed_rkey);
/* Post the receives; call before connect / accept. 0 or negative errno. */
int rw_start(struct rw *e, uint64_t now_ms);

/* Private data checks. true when buf holds len bytes of the tag's pattern. */
bool rw_pdata_ok(const void *buf, size_t len, size_t want_len, uint32_t tag);

/* Events from the backend. */
void rw_established(struct rw *e, const void *pdata, size_t pdata_len);
void rw_rejected(struct rw *e, const void *pdata, size_t pdata_len);
void rw_conn_error(struct rw *e, const char *why);
void rw_completion(struct rw *e, uint64_t wr_id, bool ok, const char *status, uint32_t byte_len);
void rw_disconnected(struct rw *e);
void rw_tick(struct rw *e, uint64_t now_ms);
/* Server-side rejects finish the test by themselves. */
void rw_reject_sent(struct rw *e);

/* true when the run is over (test decided, peer gone, work requests
 * drained or the drain time passed). */
bool rw_done(const struct rw *e);
/* Final verdict; prints the summary line. 0 pass, 1 fail. */
int rw_verdict(struct rw *e);
/* Record a failure (first reason wins). */
void rw_fail(struct rw *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t rw_outstanding(const struct rw *e);

/* Option parsing shared by both programs: test names, size lists. */
int rw_parse_test(const char *s, enum rw_test *t);
const char *rw_test_name(enum rw_test t);
int rw_parse_sizes(const char *s, struct rw_cfg *c);
void rw_cfg_defaults(struct rw_cfg *c);

#endif
