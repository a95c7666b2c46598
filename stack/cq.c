/* Completion queues and completion channels.
 *
 * A CQ is a ring of cqe entries plus one spare slot for the overflow
 * marker (see iw_cq_push in internal.h). Notification is one-shot: an
 * armed CQ fires on the next completion (solicited_only: on the next
 * solicited receive or error completion), which queues it once on its
 * channel's FIFO and makes the channel's eventfd readable; the eventfd is
 * drained when the FIFO empties. */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Channels                                                            */

int iw_create_comp_channel(struct iw_context *ctx, struct iw_comp_channel **out)
{
	if (!ctx || !out)
		return -EINVAL;
	struct iw_comp_channel *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->fd < 0) {
		int rc = -errno;
		free(ch);
		return rc;
	}
	ch->ctx = ctx;
	iw_ctx_lock(ctx);
	ctx->n_chan++;
	iw_ctx_unlock(ctx);
	*out = ch;
	return 0;
}

int iw_destroy_comp_channel(struct iw_comp_channel *ch)
{
	if (!ch)
		return -EINVAL;
	struct iw_context *ctx = ch->ctx;
	iw_ctx_lock(ctx);
	if (ch->n_cq) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	ctx->n_chan--;
	iw_ctx_unlock(ctx);
	close(ch->fd);
	free(ch);
	return 0;
}

int iw_comp_channel_fd(const struct iw_comp_channel *ch)
{
	return ch ? ch->fd : -EINVAL;
}

/* The application may clear O_NONBLOCK on the fd (the verbs ABI does:
 * a blocking channel is the program's default), so never read blindly:
 * one read, after poll says it will not block, resets the eventfd. */
static void chan_drain(struct iw_comp_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	uint64_t v;
	if (poll(&p, 1, 0) == 1 && read(ch->fd, &v, sizeof(v)) < 0) {
		/* already zero */
	}
}

int iw_get_cq_event(struct iw_comp_channel *ch, struct iw_cq **cq)
{
	if (!ch || !cq)
		return -EINVAL;
	iw_ctx_lock(ch->ctx);
	struct iw_cq *c = ch->fired_head;
	if (!c) {
		iw_ctx_unlock(ch->ctx);
		return -EAGAIN;
	}
	ch->fired_head = c->fired_next;
	if (!ch->fired_head) {
		ch->fired_tail = NULL;
		chan_drain(ch);
	}
	c->fired_next = NULL;
	c->fired_queued = false;
	iw_ctx_unlock(ch->ctx);
	*cq = c;
	return 0;
}

static void fire(struct iw_cq *cq)
{
	struct iw_comp_channel *ch = cq->ch;
	cq->armed = false;
	if (!ch || cq->fired_queued)
		return;
	cq->fired_queued = true;
	cq->fired_next = NULL;
	if (ch->fired_tail) {
		ch->fired_tail->fired_next = cq;
	} else {
		ch->fired_head = cq;
		uint64_t one = 1;
		/* Cannot fail: the counter is reset whenever the FIFO drains. */
		ssize_t w = write(ch->fd, &one, sizeof(one));
		(void)w;
	}
	ch->fired_tail = cq;
}

static void unqueue(struct iw_cq *cq)
{
	struct iw_comp_channel *ch = cq->ch;
	if (!ch || !cq->fired_queued)
		return;
	struct iw_cq *prev = NULL;
	for (struct iw_cq *c = ch->fired_head; c; prev = c, c = c->fired_next) {
		if (c != cq)
			continue;
		if (prev)
			prev->fired_next = c->fired_next;
		else
			ch->fired_head = c->fired_next;
		if (ch->fired_tail == c)
			ch->fired_tail = prev;
		break;
	}
	if (!ch->fired_head)
		chan_drain(ch);
	cq->fired_queued = false;
	cq->fired_next = NULL;
}

/* ------------------------------------------------------------------ */
/* CQs                                                                 */

int iw_create_cq(struct iw_context *ctx, int cqe, struct iw_comp_channel *ch, struct iw_cq **out)
{
	if (!ctx || !out || cqe <= 0 || (uint32_t)cqe > IW_MAX_CQE || (ch && ch->ctx != ctx))
		return -EINVAL;
	struct iw_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->cap = (uint32_t)cqe + 1; /* + the overflow marker */
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -ENOMEM;
	}
	cq->ctx = ctx;
	cq->ch = ch;
	iw_ctx_lock(ctx);
	ctx->n_cq++;
	if (ch)
		ch->n_cq++;
	iw_ctx_unlock(ctx);
	*out = cq;
	return 0;
}

int iw_destroy_cq(struct iw_cq *cq)
{
	if (!cq)
		return -EINVAL;
	struct iw_context *ctx = cq->ctx;
	iw_ctx_lock(ctx);
	if (cq->n_qp) {
		iw_ctx_unlock(ctx);
		return -EBUSY;
	}
	unqueue(cq);
	if (cq->ch)
		cq->ch->n_cq--;
	ctx->n_cq--;
	iw_ctx_unlock(ctx);
	free(cq->ring);
	free(cq);
	return 0;
}

static bool wants_fire(const struct iw_cq *cq, const struct iw_wc *wc)
{
	if (!cq->armed)
		return false;
	if (!cq->solicited_only || wc->status != IW_WC_SUCCESS)
		return true;
	return wc->opcode == IW_WC_RECV && (wc->flags & IW_WC_SOLICITED);
}

int iw_cq_push(struct iw_cq *cq, const struct iw_wc *wc)
{
	uint32_t entries = cq->cap - 1;
	int rc = 0;

	cq->ctx->cq_pushes++;
	if (cq->count < entries) {
		cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
		cq->count++;
		cq->tail_fatal = false;
		if (wants_fire(cq, wc))
			fire(cq);
		return 0;
	}
	/* Full: the completion is lost; the marker reports it in place. */
	cq->overflow = true;
	cq->lost++;
	rc = -ENOSPC;
	if (cq->tail_fatal) {
		struct iw_wc *m = &cq->ring[(cq->head + cq->count - 1) % cq->cap];
		if (m->byte_len < UINT32_MAX)
			m->byte_len++;
	} else {
		struct iw_wc *m = &cq->ring[(cq->head + cq->count) % cq->cap];
		memset(m, 0, sizeof(*m));
		m->wr_id = wc->wr_id;
		m->status = IW_WC_FATAL_ERR;
		m->opcode = wc->opcode;
		m->qp = wc->qp;
		m->byte_len = 1;
		cq->count++;
		cq->tail_fatal = true;
	}
	if (cq->armed)
		fire(cq);
	return rc;
}

int iw_poll_cq(struct iw_cq *cq, int n, struct iw_wc *wc)
{
	if (!cq || n < 0 || (n > 0 && !wc))
		return -EINVAL;
	iw_ctx_lock(cq->ctx);
	int k = 0;
	while (k < n && cq->count) {
		wc[k++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	if (cq->count == 0) {
		cq->tail_fatal = false;
		cq->overflow = false; /* the marker has been seen */
	}
	iw_ctx_unlock(cq->ctx);
	return k;
}

int iw_req_notify_cq(struct iw_cq *cq, bool solicited_only)
{
	if (!cq)
		return -EINVAL;
	iw_ctx_lock(cq->ctx);
	if (!cq->ch) {
		/* Nothing could ever report the event. */
		iw_ctx_unlock(cq->ctx);
		return -EINVAL;
	}
	/* Re-arming keeps the broader condition until it fires. */
	if (!cq->armed)
		cq->solicited_only = solicited_only;
	else
		cq->solicited_only = cq->solicited_only && solicited_only;
	cq->armed = true;
	iw_ctx_unlock(cq->ctx);
	return 0;
}
