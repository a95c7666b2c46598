/* Two RDMAP engines wired back to back in memory (no sockets): what one
 * pulls is flattened onto a wire buffer and delivered to the other in
 * random chunk sizes, by copy (feed) or zero-copy (prepare/commit). Used by
 * the back-to-back suite and the self-check demo. */
#ifndef IWT_B2B_H
#define IWT_B2B_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwt_mem.h"
#include "rdmap/rdmap_conn.h"

#define IWT_EP_SQ 64
#define IWT_EP_IRD 16
#define IWT_EP_TX 32
#define IWT_EP_MAX_EV 512

struct iwt_event {
	struct iw_rdmap_event ev;
	uint64_t recv_id;          /* RECV_DONE: the receive it consumed */
	struct iw_rdmap_term term; /* TERM_RECV */
};

struct iwt_ep {
	const char *name;
	struct iw_rdmap_conn conn;
	struct iw_rdmap_sq_entry sq[IWT_EP_SQ];
	struct iw_rdmap_ird_entry ird[IWT_EP_IRD];
	struct iw_rdmap_tx_slot tx[IWT_EP_TX];
	struct iovec sq_sgl[IWT_EP_SQ * IW_RDMAP_MAX_SGE];
	uint8_t tx_markers[IWT_EP_TX * IW_MPA_TX_MAX_MARKERS][IW_MPA_MARKER_LEN];
	struct iwt_mem mem;
	struct iwt_event ev[IWT_EP_MAX_EV];
	unsigned nev;
	uint8_t *wire; /* bytes this endpoint sent, not yet delivered */
	size_t wire_len, wire_cap;
	uint64_t wire_total; /* all bytes ever put on the wire */
};

enum iwt_rx_mode { IWT_RX_FEED, IWT_RX_ZEROCOPY, IWT_RX_MIXED };

struct iwt_b2b {
	struct iwt_ep a, b;
	uint64_t rng;
	enum iwt_rx_mode rx_mode;
	size_t max_chunk;  /* delivery chunk sizes are random in 1..max_chunk */
	size_t max_pull;   /* bytes per pull */
	int iov_cap;       /* iovecs per pull */
};

/* cfg applies to both ends (CRC and markers must match anyway). */
void iwt_b2b_init(struct iwt_b2b *t, const struct iw_rdmap_conn_cfg *cfg, uint64_t seed);
void iwt_b2b_fini(struct iwt_b2b *t);

/* Pull everything pullable from ep onto its wire. */
void iwt_ep_pull(struct iwt_b2b *t, struct iwt_ep *ep);
/* Deliver up to max bytes of from's wire to to (all: SIZE_MAX). */
void iwt_ep_deliver(struct iwt_b2b *t, struct iwt_ep *from, struct iwt_ep *to, size_t max);
/* Pull and deliver both ways until nothing moves (or rounds run out).
 * Returns true when quiescent. */
bool iwt_b2b_pump(struct iwt_b2b *t, unsigned max_rounds);

/* Put a hand-made FPDU on ep's wire, framed by ep's own MPA transmit state
 * (so CRC and markers line up with what ep sends next). */
void iwt_ep_inject(struct iwt_ep *ep, const void *ulp_hdr, size_t hdr_len, const void *payload,
		   size_t payload_len);

/* Find the n-th (0-based) event of a type, or NULL. */
const struct iwt_event *iwt_ep_find(const struct iwt_ep *ep, enum iw_rdmap_event_type type, unsigned n);
unsigned iwt_ep_count(const struct iwt_ep *ep, enum iw_rdmap_event_type type);

#endif
