/* librdmacm.so.1 on libiwarp's CM: internal interface between its files.
 *
 * One libiwarp CM channel for the whole process receives every libiwarp
 * CM event; a pump (run by the engine's waits and helper thread, and by
 * rdma_get_cm_event) turns each into an rdma_cm event on the channel the
 * rdma_cm id belongs to now. That makes rdma_migrate_id a pointer move
 * and lets ADDR_RESOLVED / ROUTE_RESOLVED (which need no network round
 * trip here) queue in order with the rest. Each rdma_event_channel's fd
 * is an eventfd, blocking unless the program sets O_NONBLOCK, readable
 * while events are queued. */
#ifndef IWABI_CM_ABI_H
#define IWABI_CM_ABI_H

#include <pthread.h>
#include <rdma/rdma_cma.h>

#include "iwabi.h"

struct cm_ev {
	struct rdma_cm_event ev; /* first: the program's pointer */
	struct cm_ev *next;
	/* The id whose rdma_destroy_id waits for this event's ack once
	 * rdma_get_cm_event handed it out (counted): ev.id, or the listener
	 * for a CONNECT_REQUEST, as librdmacm counts them. */
	struct cm_id *owner;
	bool counted;
	uint8_t pdata[IW_CM_PRIVATE_DATA_MAX];
};

struct cm_chan {
	struct rdma_event_channel ch; /* ch.fd: the eventfd */
	struct cm_ev *head, *tail;
	bool sync; /* owned by a synchronous id */
	/* Threads inside rdma_get_cm_event on it, and whether the program
	 * destroyed it under them (they then block for good, as a read of
	 * the kernel's closed ucma fd does; the memory stays theirs). */
	unsigned waiters;
	bool dead;
};

struct cm_id {
	struct rdma_cm_id id; /* first: the program's pointer */
	struct iw_cm_id *iw;
	struct cm_chan *chan;
	bool sync;       /* created with a NULL channel */
	bool active;     /* connecting side: failures map like iw_cm's */
	bool bound;
	struct sockaddr_storage bound_addr;
	/* rdma_create_ep on a passive id: what rdma_get_request gives the
	 * QPs of its connections. */
	bool has_ep_attr;
	struct ibv_qp_init_attr ep_attr;
	bool own_cqs; /* rdma_create_qp made the CQs and channels */
	struct cm_ev *held; /* rdma_get_request's event, acked at accept/reject/destroy */
	unsigned events_out; /* handed to the program, not acked yet (cm_lock) */
};

extern const struct iwabi_bridge *B;
extern pthread_mutex_t cm_lock; /* channels' queues, ids' channel links */

/* 0, or -errno when the bridge/engine/global channel cannot start. */
int cm_init(void);
struct cm_chan *cm_chan_new(bool sync);
void cm_chan_free(struct cm_chan *c);
/* Queue an event (lock held). */
void cm_queue(struct cm_chan *c, struct cm_ev *e);
struct cm_ev *cm_ev_new(struct cm_id *id, enum rdma_cm_event_type type, int status);
/* Next event of channel c; blocks unless its fd is O_NONBLOCK. count:
 * for the program (rdma_get_cm_event), its ack is then awaited. */
int cm_get(struct cm_chan *c, struct cm_ev **out, bool count);
/* Synchronous ids: wait for the next event of id's channel, which must
 * be `want`; 0 or -1 with errno. */
int cm_sync_wait(struct cm_id *id, enum rdma_cm_event_type want);
/* Drop queued events naming id (lock held). */
void cm_purge(struct cm_chan *c, struct cm_id *id);
void cm_update_addrs(struct cm_id *id);
struct cm_id *cm_id_new(struct cm_chan *c, void *context, enum rdma_port_space ps);
struct iw_cm_channel *cm_global_channel(void);

#endif
