/* CM channels: an eventfd plus a FIFO of events. Events are allocated
 * with their id (connection setup is not a data path, and an event that
 * could not be queued would leave the application waiting forever) and
 * own a copy of the peer's private data until the application acks
 * them. */
#include "cm_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

int cm_events_reserve(struct iw_cm_id *id)
{
	while (id->n_spare < CM_EVENTS_PER_ID) {
		struct cm_event *e = malloc(sizeof(*e));
		if (!e) {
			cm_events_release(id);
			return -ENOMEM;
		}
		id->spare[id->n_spare++] = e;
	}
	return 0;
}

void cm_events_release(struct iw_cm_id *id)
{
	while (id->n_spare > 0)
		free(id->spare[--id->n_spare]);
}

void cm_queue(struct iw_cm_id *id, enum iw_cm_event_type type, int status, const void *pdata, uint16_t pd_len)
{
	struct iw_cm_channel *ch = id->ch;
	struct cm_event *e;

	/* The CM's states allow no more than CM_EVENTS_PER_ID per id; the
	 * allocation is a second line that is never reached. */
	e = id->n_spare ? id->spare[--id->n_spare] : malloc(sizeof(*e));
	if (!e)
		return;
	memset(e, 0, offsetof(struct cm_event, pdata));
	e->ev.type = type;
	e->ev.id = id;
	e->ev.status = status;
	if (pd_len > sizeof(e->pdata))
		pd_len = sizeof(e->pdata);
	if (pd_len && pdata)
		memcpy(e->pdata, pdata, pd_len);
	e->ev.private_data = pd_len ? e->pdata : NULL;
	e->ev.private_data_len = pd_len;
	if (type == IW_CM_EVENT_CONNECT_REQUEST) {
		e->ev.listen_id = id->listener;
		e->ev.ird = id->req.ird;
		e->ev.ord = id->req.ord;
		e->ev.crc = id->req.crc;
		e->ev.markers_tx = id->req.markers; /* the peer asks us to insert markers */
		e->ev.mpa_rev = id->req.rev;
	} else if (type == IW_CM_EVENT_ESTABLISHED) {
		e->ev.ird = id->outcome.ird;
		e->ev.ord = id->outcome.ord;
		e->ev.crc = id->outcome.crc;
		e->ev.markers_tx = id->outcome.markers_tx;
		e->ev.markers_rx = id->outcome.markers_rx;
		e->ev.mpa_rev = id->outcome.rev;
	}
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	uint64_t one = 1;
	if (write(ch->fd, &one, sizeof(one)) < 0) {
		/* EAGAIN only, at a count of 2^64 - 2: readable anyway. */
	}
}

void cm_purge_events(struct iw_cm_channel *ch, const struct iw_cm_id *id)
{
	struct cm_event **pp = &ch->head, *last = NULL;

	while (*pp) {
		struct cm_event *e = *pp;
		if (e->ev.id == id || e->ev.listen_id == id) {
			*pp = e->next;
			free(e);
			continue;
		}
		last = e;
		pp = &e->next;
	}
	ch->tail = last;
}

int iw_cm_create_channel(struct iw_context *ctx, struct iw_cm_channel **out)
{
	struct iw_cm_channel *ch;

	if (!ctx || !out)
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->fd < 0) {
		int err = errno;
		free(ch);
		return -err;
	}
	ch->ctx = ctx;
	iw_ctx_lock(ctx);
	ctx->n_cm_chan++;
	iw_ctx_unlock(ctx);
	*out = ch;
	return 0;
}

int iw_cm_destroy_channel(struct iw_cm_channel *ch)
{
	struct iw_context *ctx;

	if (!ch)
		return -EINVAL;
	ctx = ch->ctx;
	iw_ctx_lock(ctx);
	if (ch->n_ids) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	while (ch->head) {
		struct cm_event *e = ch->head;
		ch->head = e->next;
		free(e);
	}
	ctx->n_cm_chan--;
	iw_ctx_unlock(ctx);
	close(ch->fd);
	free(ch);
	return 0;
}

int iw_cm_channel_fd(const struct iw_cm_channel *ch)
{
	return ch ? ch->fd : -EINVAL;
}

int iw_cm_get_event(struct iw_cm_channel *ch, struct iw_cm_event **ev)
{
	struct cm_event *e;

	if (!ch || !ev)
		return -EINVAL;
	iw_ctx_lock(ch->ctx);
	e = ch->head;
	if (!e) {
		iw_ctx_unlock(ch->ctx);
		return -EAGAIN;
	}
	ch->head = e->next;
	if (!ch->head) {
		uint64_t v;
		ch->tail = NULL;
		if (read(ch->fd, &v, sizeof(v)) < 0) {
			/* Already zero: nothing to clear. */
		}
	}
	e->next = NULL;
	if (e->ev.type == IW_CM_EVENT_CONNECT_REQUEST)
		e->ev.id->app_owned = true;
	iw_ctx_unlock(ch->ctx);
	*ev = &e->ev;
	return 0;
}

void iw_cm_ack_event(struct iw_cm_event *ev)
{
	/* Fetched events are detached from their channel: the caller owns it. */
	free(ev);
}
