/* Connection manager internals shared by cm.c (ids, MPA exchange) and
 * cm_event.c (channels and their event FIFOs). */
#ifndef IW_CM_INTERNAL_H
#define IW_CM_INTERNAL_H

#include "internal.h"

#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"

#define CM_FRAME_MAX (IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX)

enum cm_state {
	CM_IDLE,
	CM_LISTEN,
	CM_CONNECTING,    /* active: TCP connect in progress */
	CM_WAIT_REPLY,    /* active: Request (being) sent, reading the Reply */
	CM_WAIT_REQUEST,  /* passive: reading the Request */
	CM_REQ_RECEIVED,  /* passive: CONNECT_REQUEST queued, waiting for accept/reject */
	CM_ACCEPTING,     /* passive: sending the Reply */
	CM_REJECTING,     /* passive: sending a reject frame, then close */
	CM_ESTABLISHED,
	CM_DISCONNECTING, /* disconnect asked, waiting for the stream to end */
	CM_DONE,          /* terminal: closed, failed, rejected */
};

struct cm_event {
	struct iw_cm_event ev; /* first: the application's pointer */
	struct cm_event *next;
	uint8_t pdata[IW_CM_PRIVATE_DATA_MAX];
};

struct iw_cm_channel {
	struct iw_context *ctx;
	int fd; /* eventfd: readable while events are queued */
	uint32_t n_ids;
	struct cm_event *head, *tail;
};

/* The most events one id can produce: CONNECT_REQUEST (a passive id),
 * then ESTABLISHED, REJECTED or CONNECT_ERROR, then DISCONNECTED. They
 * are allocated with the id, so queueing one never fails. */
#define CM_EVENTS_PER_ID 3

struct iw_cm_id {
	struct iw_cm_channel *ch;
	struct iw_context *ctx;
	void *context;
	enum cm_state state;
	bool app_owned; /* the application knows this id (created it or fetched its request) */
	struct iw_conn *conn; /* until established (then the transport's) */
	struct iw_timer timer;
	struct sockaddr_storage local, peer;
	bool has_local, has_peer;

	/* listener */
	int backlog;
	uint32_t req_timeout_ms;    /* MPA Request deadline for children */
	uint32_t silent_timeout_ms; /* first-byte deadline for children */
	uint32_t per_source_max;    /* pending children from one address */
	uint32_t n_pending;         /* children still in the MPA exchange */
	struct iw_cm_id *children;  /* not yet accepted/rejected by the application */
	struct iw_listen_stats stats;
	/* child */
	struct iw_cm_id *listener;  /* while counted in listener->n_pending */
	struct iw_cm_id *sib_next;
	uint64_t born_ms;           /* TCP accept time */
	bool unread;                /* bytes seen waiting: not evictable until read */

	/* handshake */
	struct iw_qp *qp;
	struct iw_mpa_settings settings;
	uint32_t max_ulpdu;
	uint32_t max_ulpdu_rx;      /* 0: 65535 */
	uint32_t dead_peer_ms;      /* 0: kernel defaults */
	int timeout_ms;
	uint32_t first_fpdu_delay_ms; /* initiator: hold the first FPDU this long */
	struct iw_mpa_frame req; /* sent (active) or received (passive) */
	struct iw_mpa_outcome outcome;
	uint8_t pd[IW_MPA_PD_MAX];        /* active: our private data */
	uint8_t in[CM_FRAME_MAX + 1];     /* +1: passive sees a byte behind the Request */
	size_t in_len;
	uint8_t out[CM_FRAME_MAX];
	size_t out_len, out_off;

	struct iw_transport *transport;
	struct cm_event *spare[CM_EVENTS_PER_ID]; /* not queued yet */
	int n_spare;
};

/* Admission of passive connections (cm_admit.c). */
/* Whether listener l takes a newcomer from peer (NULL: unknown). 0: yes,
 * but first fail *victim if set (to make room); -ECONNREFUSED: reset the
 * newcomer. Counts the decision in l->stats. */
int cm_admit(struct iw_cm_id *l, const struct sockaddr_storage *peer, uint64_t now_ms,
	     struct iw_cm_id **victim);
/* Read what a child in CM_WAIT_REQUEST has waiting (cm.c): true while it
 * still waits for the rest of its Request; false once the Request is
 * complete (CM_REQ_RECEIVED) or the child failed and was freed. */
bool cm_read_request(struct iw_cm_id *child);
/* A child's first timer: ms until its first-byte deadline. */
uint32_t cm_admit_first_timer(const struct iw_cm_id *child);
/* A child's timer fired in CM_WAIT_REQUEST: true if it must be reset
 * (counted), false if the timer was re-armed for the Request deadline. */
bool cm_admit_deadline(struct iw_cm_id *child, uint64_t now_ms);

/* Give id its events up front. 0 or -ENOMEM. */
int cm_events_reserve(struct iw_cm_id *id);
/* Free the events id did not use. */
void cm_events_release(struct iw_cm_id *id);
/* Queue an event for id on its channel (private data copied; the
 * CONNECT_REQUEST / ESTABLISHED fields come from id), from the id's
 * reserve: an id produces at most CM_EVENTS_PER_ID events. */
void cm_queue(struct iw_cm_id *id, enum iw_cm_event_type type, int status, const void *pdata, uint16_t pd_len);
/* Drop queued (not yet fetched) events that name id. */
void cm_purge_events(struct iw_cm_channel *ch, const struct iw_cm_id *id);

#endif
