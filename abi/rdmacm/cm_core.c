/* Event channels, ids and the pump from libiwarp's CM events to
 * rdma_cm's. */
#include "cm_abi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

const struct iwabi_bridge *B;
pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
/* An event was acked: rdma_destroy_id may be waiting for it. */
static pthread_cond_t cm_acked = PTHREAD_COND_INITIALIZER;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_cm_channel *g_iwch;
static int g_init_rc = 1; /* 1: not tried */

static void pump(void);

int cm_init(void)
{
	pthread_mutex_lock(&init_lock);
	if (g_init_rc == 1) {
		struct iw_context *ctx;
		B = __iwarp_abi_bridge();
		if (!B || B->version != IWABI_BRIDGE_VERSION) {
			g_init_rc = -ELIBBAD;
		} else if (!B->device_context()) {
			g_init_rc = errno ? -errno : -ENODEV;
		} else if ((g_init_rc = B->engine_get(&ctx)) == 0) {
			/* The process keeps the engine reference: ids and
			 * channels come and go, the device stays open. */
			g_init_rc = B->cm_create_channel(ctx, &g_iwch);
			if (g_init_rc == 0)
				B->set_cm_pump(pump, B->cm_channel_fd(g_iwch));
		}
	}
	int rc = g_init_rc;
	pthread_mutex_unlock(&init_lock);
	return rc;
}

struct iw_cm_channel *cm_global_channel(void)
{
	return g_iwch;
}

/* ------------------------------------------------------------------ */
/* Channels                                                            */

struct cm_chan *cm_chan_new(bool sync)
{
	struct cm_chan *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->sync = sync;
	return c;
}

void cm_chan_free(struct cm_chan *c)
{
	pthread_mutex_lock(&cm_lock);
	if (c->waiters) {
		/* Wake them: they see dead and stay blocked; c is theirs. */
		uint64_t one = 1;
		c->dead = true;
		if (write(c->ch.fd, &one, sizeof(one)) < 0) {
			/* they are woken by the next poll anyway */
		}
		pthread_mutex_unlock(&cm_lock);
		return;
	}
	pthread_mutex_unlock(&cm_lock);
	while (c->head) {
		struct cm_ev *e = c->head;
		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	free(c);
}

/* The eventfd counts 1 while the queue is non-empty: one read (after a
 * poll, so it never blocks whatever the fd's mode) clears it. */
static void fd_signal(struct cm_chan *c)
{
	uint64_t one = 1;
	if (write(c->ch.fd, &one, sizeof(one)) < 0) {
		/* cannot overflow: at most 1 */
	}
}

static void fd_clear(struct cm_chan *c)
{
	struct pollfd p = { .fd = c->ch.fd, .events = POLLIN };
	uint64_t v;
	if (poll(&p, 1, 0) == 1 && read(c->ch.fd, &v, sizeof(v)) < 0) {
		/* already clear */
	}
}

void cm_queue(struct cm_chan *c, struct cm_ev *e)
{
	e->next = NULL;
	if (c->tail) {
		c->tail->next = e;
	} else {
		c->head = e;
		fd_signal(c);
	}
	c->tail = e;
}

static struct cm_ev *cm_pop(struct cm_chan *c)
{
	struct cm_ev *e = c->head;
	if (!e)
		return NULL;
	c->head = e->next;
	if (!c->head) {
		c->tail = NULL;
		fd_clear(c);
	}
	e->next = NULL;
	return e;
}

void cm_purge(struct cm_chan *c, struct cm_id *id)
{
	struct cm_ev **pp = &c->head, *last = NULL;
	while (*pp) {
		struct cm_ev *e = *pp;
		if (e->ev.id == &id->id || e->ev.listen_id == &id->id) {
			*pp = e->next;
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id == &id->id) {
				/* The listener goes: its unclaimed connection too. */
				struct cm_id *child = (struct cm_id *)e->ev.id;
				B->cm_destroy_id(child->iw);
				free(child);
			}
			free(e);
			continue;
		}
		last = e;
		pp = &e->next;
	}
	c->tail = last;
	if (!c->head)
		fd_clear(c);
}

struct cm_ev *cm_ev_new(struct cm_id *id, enum rdma_cm_event_type type, int status)
{
	struct cm_ev *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->owner = id;
	e->ev.event = type;
	e->ev.status = status;
	return e;
}

/* A thread waiting on a channel the program destroyed meanwhile: rping
 * leaves its CM thread in rdma_get_cm_event and destroys the channel on
 * exit. With the kernel's fd that read never returns; so here. */
static void block_forever(void)
{
	for (;;)
		pause(); /* a cancellation point, like read() */
}

int cm_get(struct cm_chan *c, struct cm_ev **out, bool count)
{
	pthread_mutex_lock(&cm_lock);
	c->waiters++;
	pthread_mutex_unlock(&cm_lock);
	int rc = 0;
	for (;;) {
		pump();
		pthread_mutex_lock(&cm_lock);
		if (c->dead) {
			pthread_mutex_unlock(&cm_lock);
			block_forever();
		}
		struct cm_ev *e = cm_pop(c);
		if (e && count && e->owner) {
			e->counted = true;
			e->owner->events_out++;
		}
		pthread_mutex_unlock(&cm_lock);
		if (e) {
			*out = e;
			break;
		}
		if (iwabi_fd_nonblocking(c->ch.fd)) {
			rc = -EAGAIN;
			break;
		}
		rc = B->engine_wait(c->ch.fd, -1);
		if (rc < 0)
			break;
	}
	pthread_mutex_lock(&cm_lock);
	c->waiters--;
	pthread_mutex_unlock(&cm_lock);
	return rc;
}

int cm_sync_wait(struct cm_id *id, enum rdma_cm_event_type want)
{
	struct cm_ev *e;
	int rc = cm_get(id->chan, &e, false);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	enum rdma_cm_event_type got = e->ev.event;
	int status = e->ev.status;
	if (got == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* rdma_get_request's: keep it for the new id. */
		struct cm_id *child = (struct cm_id *)e->ev.id;
		child->held = e;
		return 0;
	}
	free(e);
	if (got == want && status == 0)
		return 0;
	errno = status < 0 ? -status : got == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED
				       : got == RDMA_CM_EVENT_UNREACHABLE ? EHOSTUNREACH
									   : EIO;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Ids                                                                 */

struct cm_id *cm_id_new(struct cm_chan *c, void *context, enum rdma_port_space ps)
{
	struct cm_id *id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->chan = c;
	id->id.channel = &c->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = IBV_QPT_RC;
	return id;
}

void cm_update_addrs(struct cm_id *id)
{
	struct sockaddr_storage ss;
	if (B->cm_local_addr(id->iw, &ss) == 0)
		memcpy(&id->id.route.addr.src_storage, &ss, sizeof(ss));
	if (B->cm_peer_addr(id->iw, &ss) == 0)
		memcpy(&id->id.route.addr.dst_storage, &ss, sizeof(ss));
}

/* ------------------------------------------------------------------ */
/* The pump                                                            */

/* How iw_cm reports a failed active connection to rdma_cm (the kernel's
 * cma_iw_handler): refused or reset is REJECTED, a timeout is
 * UNREACHABLE, anything else CONNECT_ERROR. */
static enum rdma_cm_event_type active_failure(int status)
{
	if (status == -ECONNREFUSED || status == -ECONNRESET)
		return RDMA_CM_EVENT_REJECTED;
	if (status == -ETIMEDOUT || status == -ENETUNREACH || status == -EHOSTUNREACH)
		return RDMA_CM_EVENT_UNREACHABLE;
	return RDMA_CM_EVENT_CONNECT_ERROR;
}

static void copy_pdata(struct cm_ev *e, const struct iw_cm_event *ie)
{
	uint16_t n = ie->private_data_len;
	if (n > sizeof(e->pdata))
		n = sizeof(e->pdata);
	if (n && ie->private_data)
		memcpy(e->pdata, ie->private_data, n);
	e->ev.param.conn.private_data = n ? e->pdata : NULL;
	e->ev.param.conn.private_data_len = (uint8_t)(n > 255 ? 255 : n);
}

static void dispatch(struct iw_cm_event *ie)
{
	struct cm_ev *e = NULL;

	if (ie->type == IW_CM_EVENT_CONNECT_REQUEST) {
		struct cm_id *l = B->cm_id_context(ie->listen_id);
		if (!l) {
			B->cm_reject(ie->id, NULL, 0);
			return;
		}
		struct cm_id *c = cm_id_new(l->chan, l->id.context, l->id.ps);
		if (!c || !(e = cm_ev_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0))) {
			free(c);
			B->cm_reject(ie->id, NULL, 0);
			return;
		}
		c->iw = ie->id;
		B->cm_id_set_context(ie->id, c);
		c->id.verbs = l->id.verbs;
		c->id.port_num = 1;
		cm_update_addrs(c);
		e->ev.listen_id = &l->id;
		e->owner = l;
		copy_pdata(e, ie);
		/* iw_cm: the peer's IRD/ORD as the request's depth/resources. */
		e->ev.param.conn.initiator_depth = (uint8_t)(ie->ird > 255 ? 255 : ie->ird);
		e->ev.param.conn.responder_resources = (uint8_t)(ie->ord > 255 ? 255 : ie->ord);
		cm_queue(l->chan, e);
		return;
	}

	struct cm_id *id = B->cm_id_context(ie->id);
	if (!id)
		return;
	switch (ie->type) {
	case IW_CM_EVENT_ESTABLISHED:
		e = cm_ev_new(id, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e) {
			copy_pdata(e, ie);
			e->ev.param.conn.initiator_depth = (uint8_t)(ie->ord > 255 ? 255 : ie->ord);
			e->ev.param.conn.responder_resources = (uint8_t)(ie->ird > 255 ? 255 : ie->ird);
		}
		cm_update_addrs(id);
		break;
	case IW_CM_EVENT_REJECTED:
		e = cm_ev_new(id, RDMA_CM_EVENT_REJECTED, ie->status ? ie->status : -ECONNREFUSED);
		if (e)
			copy_pdata(e, ie);
		break;
	case IW_CM_EVENT_CONNECT_ERROR:
		e = cm_ev_new(id, id->active ? active_failure(ie->status) : RDMA_CM_EVENT_CONNECT_ERROR, ie->status);
		break;
	case IW_CM_EVENT_DISCONNECTED:
		e = cm_ev_new(id, RDMA_CM_EVENT_DISCONNECTED, 0);
		break;
	case IW_CM_EVENT_TIMEWAIT_EXIT:
		e = cm_ev_new(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	default:
		break;
	}
	if (e)
		cm_queue(id->chan, e);
}

static void pump(void)
{
	struct iw_cm_event *ie;
	if (!g_iwch)
		return;
	pthread_mutex_lock(&cm_lock);
	while (B->cm_get_event(g_iwch, &ie) == 0) {
		dispatch(ie);
		B->cm_ack_event(ie);
	}
	pthread_mutex_unlock(&cm_lock);
}

/* ------------------------------------------------------------------ */
/* Public: channels and events                                         */

struct rdma_event_channel *rdma_create_event_channel(void)
{
	int rc = cm_init();
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	struct cm_chan *c = cm_chan_new(false);
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	return &c->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel)
		cm_chan_free((struct cm_chan *)channel);
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_ev *e;
	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	int rc = cm_get((struct cm_chan *)channel, &e, true);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_ev *e = (struct cm_ev *)event;
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	if (e->counted) {
		pthread_mutex_lock(&cm_lock);
		e->owner->events_out--;
		pthread_cond_broadcast(&cm_acked);
		pthread_mutex_unlock(&cm_lock);
	}
	free(event);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const n[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	if ((size_t)event < sizeof(n) / sizeof(n[0]) && n[event])
		return n[event];
	return "UNKNOWN EVENT";
}

/* ------------------------------------------------------------------ */
/* Public: ids                                                         */

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps)
{
	int rc = cm_init();
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	if (!out || (ps != RDMA_PS_TCP && ps != RDMA_PS_IPOIB)) {
		errno = !out ? EINVAL : EOPNOTSUPP; /* UDP / IB port spaces need UD QPs */
		return -1;
	}
	struct cm_chan *c = channel ? (struct cm_chan *)channel : cm_chan_new(true);
	if (!c) {
		errno = ENOMEM;
		return -1;
	}
	struct cm_id *id = cm_id_new(c, context, ps);
	if (id)
		rc = B->cm_create_id(cm_global_channel(), id, &id->iw);
	if (!id || rc < 0) {
		free(id);
		if (!channel)
			cm_chan_free(c);
		errno = id ? -rc : ENOMEM;
		return -1;
	}
	id->sync = !channel;
	*out = &id->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *cid)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm_lock);
	/* As librdmacm: the events the program got for the id must be
	 * acked first (they point at it). */
	while (id->events_out)
		pthread_cond_wait(&cm_acked, &cm_lock);
	cm_purge(id->chan, id);
	pthread_mutex_unlock(&cm_lock);
	B->cm_destroy_id(id->iw);
	free(id->held);
	if (id->sync)
		cm_chan_free(id->chan);
	free(id);
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *cid, struct rdma_event_channel *channel)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid) {
		errno = EINVAL;
		return -1;
	}
	struct cm_chan *to = channel ? (struct cm_chan *)channel : cm_chan_new(true);
	if (!to) {
		errno = ENOMEM;
		return -1;
	}
	pthread_mutex_lock(&cm_lock);
	/* As librdmacm: the events the program got for the id are acked
	 * first (they name the channel it leaves). */
	while (id->events_out)
		pthread_cond_wait(&cm_acked, &cm_lock);
	struct cm_chan *from = id->chan;
	/* Events already queued for the id move with it, in order. */
	struct cm_ev **pp = &from->head, *last = NULL;
	while (*pp) {
		struct cm_ev *e = *pp;
		if (e->ev.id == cid) {
			*pp = e->next;
			cm_queue(to, e);
			continue;
		}
		last = e;
		pp = &e->next;
	}
	from->tail = last;
	if (!from->head && from != to) {
		struct pollfd p = { .fd = from->ch.fd, .events = POLLIN };
		uint64_t v;
		if (poll(&p, 1, 0) == 1 && read(from->ch.fd, &v, sizeof(v)) < 0) {
			/* already clear */
		}
	}
	id->chan = to;
	id->id.channel = &to->ch;
	bool free_from = id->sync && from != to;
	id->sync = !channel;
	pthread_mutex_unlock(&cm_lock);
	if (free_from)
		cm_chan_free(from);
	return 0;
}
