/* iwdump internals: packet parsing, TCP reassembly, the MPA/RDMAP session
 * decoder and the output writer. The protocol work is done by the library
 * (mpa_frame, mpa_negotiate, and rdmap_check which drives mpa_rx). */
#ifndef IWDUMP_H
#define IWDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmap/rdmap_check.h"

struct iwd_opts {
	bool quiet;
	bool check;
	bool allow_gaps;
	bool json;
	int port;             /* only connections with this port; -1 = all */
	uint16_t max_ulpdu;   /* 0 = 65535 */
	size_t reorder_max;   /* out-of-order bytes buffered per direction */
};

/* Where the decoder is in the capture: the packet being processed. */
struct iwd_where {
	uint64_t frame; /* 1-based packet number */
	double time;    /* seconds since the first packet */
};

/* ---- packet.c: link layer, IPv4/IPv6, TCP ---------------------------- */

struct iwd_pkt {
	int family; /* AF_INET or AF_INET6 */
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	const uint8_t *data;
	size_t len;     /* TCP payload bytes captured */
	size_t missing; /* payload bytes cut off by the snapshot length */
};

#define IWD_TCP_FIN 0x01
#define IWD_TCP_SYN 0x02
#define IWD_TCP_RST 0x04
#define IWD_TCP_ACK 0x10

enum iwd_parse_result {
	IWD_PKT_TCP = 0, /* *pkt filled */
	IWD_PKT_OTHER,   /* not TCP over IP (or an IP fragment): ignored */
	IWD_PKT_BAD,     /* malformed or truncated headers */
};

bool iwd_dlt_supported(int dlt);
const char *iwd_dlt_name(int dlt);
enum iwd_parse_result iwd_parse(int dlt, const uint8_t *frame, size_t caplen, struct iwd_pkt *pkt);

/* ---- session.c: one connection's MPA handshake and FPDU streams ------ */

#define IWD_MAX_STAGS 4096 /* STags listed per direction in the summary */

struct iwd_stag_bytes {
	uint32_t stag;
	uint64_t bytes;
};

#define IWD_MAX_SIZES 256 /* (opcode, size) pairs listed per direction */

/* Completed messages of one opcode and size (a Read Request's size is the
 * size it asks for, not its 28-byte body). */
struct iwd_size_count {
	uint8_t op;
	uint64_t size;
	uint64_t count;
};

struct iwd_dir_stats {
	uint64_t fpdus, msgs, payload;
	uint64_t fpdus_op[IW_OP_MAX], msgs_op[IW_OP_MAX];
	struct iwd_stag_bytes *stags;
	size_t nstags, stag_cap;
	bool stags_truncated;
	struct iwd_size_count sizes[IWD_MAX_SIZES]; /* sorted by opcode, size */
	size_t nsizes;
	bool sizes_truncated;
	/* This direction's Read Requests answered by complete Read Responses,
	 * and Read Responses to it whose request was never seen (lost bytes). */
	uint64_t reads_answered, resp_unmatched;
	uint64_t violations, warnings;
};

enum iwd_sess_state {
	IWD_S_HANDSHAKE,
	IWD_S_FPDU,
	IWD_S_REJECTED, /* the Reply was a reject: nothing more is decoded */
	IWD_S_NOT_MPA,  /* the initiator did not open with an MPA Request */
	IWD_S_FAILED,   /* the handshake could not be decoded */
};

struct iwd_conn;

struct iwd_sess {
	enum iwd_sess_state state;
	/* Bytes of each direction until the handshake is decoded. */
	uint8_t *hs[2];
	size_t hs_len[2], hs_cap[2];
	bool have_frame[2];
	size_t frame_len[2];
	struct iw_mpa_frame req, rep; /* pdata not kept */
	bool dead[2];      /* direction no longer decoded */
	bool ended[2];     /* end of stream handled */
	bool i2r_fpdu_seen;
	bool lockstep_noted;
	enum iw_mpa_reject_reason reason;
	struct iw_rdmap_check_cfg cfg;
	struct iw_rdmap_check *chk;
	struct iwd_dir_stats st[2];
};

void iwd_sess_init(struct iwd_sess *s);
/* Free the handshake buffers and the checker (the statistics stay). */
void iwd_sess_release(struct iwd_sess *s);
void iwd_sess_free(struct iwd_sess *s);
/* In-order stream bytes of direction dir (0 = initiator to responder). */
void iwd_sess_data(struct iwd_conn *c, int dir, const uint8_t *data, size_t len, const struct iwd_where *w);
/* The direction ended cleanly (FIN/RST reached, or end of capture). */
void iwd_sess_end(struct iwd_conn *c, int dir, const struct iwd_where *w);
/* Whether direction dir's bytes still matter (handshake or FPDUs being
 * decoded); when not, the TCP layer drops them without warnings. */
bool iwd_sess_wants(const struct iwd_conn *c, int dir);
/* The direction lost bytes: stop decoding it. */
void iwd_sess_stop(struct iwd_conn *c, int dir);

/* ---- tcp.c: connections and per-direction reassembly ----------------- */

struct iwd_seg {
	struct iwd_seg *next;
	uint32_t seq;
	uint32_t len;
	uint8_t data[];
};

struct iwd_stream {
	bool have_base;
	uint32_t next;       /* next in-order sequence number */
	bool fin;
	uint32_t fin_seq;    /* sequence number the FIN occupies */
	bool ended;          /* FIN reached or RST seen */
	bool gap;            /* bytes missing: no longer decoded */
	struct iwd_seg *pend; /* out-of-order segments, sorted by seq */
	size_t pend_bytes;
	bool have_ack;
	uint32_t max_ack;    /* highest ACK the peer sent for this stream */
	uint64_t bytes, dup_segs, ooo_segs;
};

enum iwd_conn_state {
	IWD_C_NEW,     /* roles not known yet */
	IWD_C_ACTIVE,
	IWD_C_SKIPPED, /* capture started mid-connection */
	IWD_C_CLOSED,  /* both directions over, or RST */
};

struct iwd_conn {
	unsigned id;
	struct iwd_conn *hnext; /* hash chain */
	enum iwd_conn_state state;
	int family;
	uint8_t addr[2][16]; /* [0] initiator (once known) */
	uint16_t port[2];
	uint32_t syn_seq;
	bool syn_seen;
	bool no_syn;         /* roles inferred from the MPA Request */
	uint64_t first_frame;
	struct iwd_stream s[2];
	struct iwd_sess sess;
	const struct iwd_opts *opts;
	bool conn_warned;
	uint64_t conn_warnings;
	bool reset;          /* an RST ended it: an FPDU cut there is an abort, not a framing error */
	const char *skip_reason;
};

struct iwd_table;
struct iwd_table *iwd_table_new(const struct iwd_opts *o);
/* Process one parsed TCP packet. */
void iwd_table_packet(struct iwd_table *t, const struct iwd_pkt *p, const struct iwd_where *w);
/* End of capture: close every stream, report gaps and truncations. */
void iwd_table_finish(struct iwd_table *t, const struct iwd_where *w);
/* Connections in order of appearance. */
size_t iwd_table_count(const struct iwd_table *t);
struct iwd_conn *iwd_table_get(struct iwd_table *t, size_t i);
void iwd_table_free(struct iwd_table *t);

/* ---- output.c: text or JSON lines ------------------------------------ */

struct iwd_totals {
	uint64_t violations, warnings, conns;
};
extern struct iwd_totals iwd_totals;

void iwd_out_init(const struct iwd_opts *o);
const char *iwd_dir_name(int dir); /* "A>B" / "B>A" */
const char *iwd_op_short(uint8_t opcode);
void iwd_endpoint_str(const struct iwd_conn *c, int side, char *buf, size_t cap);

void iwd_out_conn(const struct iwd_conn *c, const struct iwd_where *w);
void iwd_out_mpa(const struct iwd_conn *c, int dir, const struct iw_mpa_frame *f, const struct iwd_where *w);
void iwd_out_negotiated(const struct iwd_conn *c, const struct iwd_where *w);
void iwd_out_fpdu(const struct iwd_conn *c, int dir, const struct iw_rdmap_check_fpdu *f, const struct iwd_where *w);
void iwd_out_msg(const struct iwd_conn *c, int dir, const struct iw_rdmap_check_msg *m, const struct iwd_where *w);
/* dir < 0: the connection as a whole. */
void iwd_out_violation(struct iwd_conn *c, int dir, const struct iw_rdmap_violation *v, const struct iwd_where *w);
void iwd_out_warning(struct iwd_conn *c, int dir, const struct iwd_where *w, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A problem of the capture file itself (no connection), counted as a
 * warning: "WARNING frame F: TEXT" (F = the last frame read). */
void iwd_out_file_warning(const struct iwd_where *w, const char *text);
void iwd_out_note(const struct iwd_conn *c, int dir, const struct iwd_where *w, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void iwd_out_summary(const struct iwd_conn *c);
void iwd_out_totals(void);

#endif
