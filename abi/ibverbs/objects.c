/* Protection domains, memory regions, completion channels, CQs, SRQs. */
#include "iwabi.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* Guards the lists below (channel -> CQs, retired MRs). */
static pthread_mutex_t lists_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iwabi_mr *retired;

static int neg_to_errno(int rc)
{
	return rc < 0 ? -rc : rc;
}

/* ------------------------------------------------------------------ */
/* PDs                                                                 */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct iw_context *ic = iwabi_engine_ctx();
	struct iwabi_pd *p;
	int rc;

	if (!ctx || !ic) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	rc = iw_alloc_pd(ic, &p->iw);
	if (rc < 0) {
		free(p);
		errno = -rc;
		return NULL;
	}
	p->pd.context = ctx;
	static uint32_t next_handle = 1;
	p->pd.handle = __atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED);
	return &p->pd;
}

/* Regions deregistered while posted WRs still held them go now if they
 * can. */
void iwabi_mr_retry_retired(void)
{
	pthread_mutex_lock(&lists_lock);
	for (struct iwabi_mr **pp = &retired; *pp;) {
		struct iwabi_mr *m = *pp;
		if (iw_dereg_mr(m->iw) == 0) {
			*pp = m->retired_next;
			free(m);
		} else {
			pp = &m->retired_next;
		}
	}
	pthread_mutex_unlock(&lists_lock);
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct iwabi_pd *p = (struct iwabi_pd *)pd;
	if (!pd)
		return EINVAL;
	iwabi_mr_retry_retired();
	int rc = iw_dealloc_pd(p->iw);
	if (rc < 0)
		return neg_to_errno(rc);
	free(p);
	return 0;
}

/* ------------------------------------------------------------------ */
/* MRs                                                                 */

/* REMOTE_ATOMIC: RFC 7306 atomics target such regions (libfabric's verbs
 * provider also asks for it on every region). */
#define IWABI_ACCESS_SUPPORTED \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static unsigned iw_access_of(unsigned access)
{
	return ((access & IBV_ACCESS_LOCAL_WRITE) ? IW_ACCESS_LOCAL_WRITE : 0u) |
	       ((access & IBV_ACCESS_REMOTE_WRITE) ? IW_ACCESS_REMOTE_WRITE : 0u) |
	       ((access & IBV_ACCESS_REMOTE_READ) ? IW_ACCESS_REMOTE_READ : 0u) |
	       ((access & IBV_ACCESS_REMOTE_ATOMIC) ? IW_ACCESS_REMOTE_ATOMIC : 0u);
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned access)
{
	struct iwabi_pd *p = (struct iwabi_pd *)pd;
	struct iwabi_mr *m;
	int rc;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	/* Optional flags (relaxed ordering and above) may be ignored;
	 * memory windows, zero-based and on-demand regions are not libiwarp's
	 * (remote atomics are: RFC 7306, docs/rfc7306.md). */
	access &= IBV_ACCESS_OPTIONAL_FIRST - 1;
	if ((access & ~(unsigned)IWABI_ACCESS_SUPPORTED) || iova != (uint64_t)(uintptr_t)addr) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	unsigned iw_access = iw_access_of(access);
	rc = iw_reg_mr(p->iw, addr, len, iw_access, &m->iw);
	if (rc < 0) {
		free(m);
		errno = -rc;
		return NULL;
	}
	m->iw_access = iw_access;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = iw_mr_stag(m->iw);
	m->mr.lkey = iw_mr_stag(m->iw);
	m->mr.rkey = iw_mr_stag(m->iw);
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return reg(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	return reg(pd, addr, length, iova, access);
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct iwabi_mr *m = (struct iwabi_mr *)mr;
	if (!mr)
		return IBV_REREG_MR_ERR_INPUT;
	if ((flags & IBV_REREG_MR_CHANGE_PD) && pd != mr->pd)
		return IBV_REREG_MR_ERR_INPUT; /* libiwarp keeps a region's PD */
	void *a = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? addr : mr->addr;
	size_t l = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? length : mr->length;
	unsigned acc = 0;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		if ((unsigned)access & ~(unsigned)IWABI_ACCESS_SUPPORTED & (IBV_ACCESS_OPTIONAL_FIRST - 1))
			return IBV_REREG_MR_ERR_INPUT;
		acc = iw_access_of((unsigned)access);
	} else {
		acc = m->iw_access;
	}
	if (iw_rereg_mr(m->iw, a, l, acc) < 0)
		return IBV_REREG_MR_ERR_CMD;
	m->iw_access = acc;
	mr->addr = a;
	mr->length = l;
	mr->lkey = mr->rkey = mr->handle = iw_mr_stag(m->iw);
	return 0;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct iwabi_mr *m = (struct iwabi_mr *)mr;
	if (!mr)
		return EINVAL;
	int rc = iw_dereg_mr(m->iw);
	if (rc == -EBUSY) {
		/* Verbs programs (rping) deregister before destroying the QP
		 * that still has receives posted on the region: the verb
		 * succeeds, the region goes when the QP lets it go
		 * (ibv_destroy_qp, ibv_dealloc_pd retry). */
		pthread_mutex_lock(&lists_lock);
		m->retired_next = retired;
		retired = m;
		pthread_mutex_unlock(&lists_lock);
		return 0;
	}
	if (rc < 0)
		return -rc;
	free(m);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Completion channels                                                 */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct iw_context *ic = iwabi_engine_ctx();
	struct iwabi_comp_channel *c;
	int rc;

	if (!ctx || !ic) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	rc = iw_create_comp_channel(ic, &c->iw);
	if (rc < 0) {
		free(c);
		errno = -rc;
		return NULL;
	}
	c->ch.context = ctx;
	c->ch.fd = iw_comp_channel_fd(c->iw);
	/* Blocking unless the program sets O_NONBLOCK, like the kernel's. */
	int fl = fcntl(c->ch.fd, F_GETFL);
	if (fl >= 0)
		fcntl(c->ch.fd, F_SETFL, fl & ~O_NONBLOCK);
	c->ch.refcnt = 0;
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct iwabi_comp_channel *c = (struct iwabi_comp_channel *)ch;
	if (!ch)
		return EINVAL;
	pthread_mutex_lock(&lists_lock);
	bool busy = c->cqs != NULL;
	pthread_mutex_unlock(&lists_lock);
	if (busy)
		return EBUSY;
	int rc = iw_destroy_comp_channel(c->iw);
	if (rc < 0)
		return -rc;
	free(c);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	struct iwabi_comp_channel *c = (struct iwabi_comp_channel *)ch;
	struct iw_cq *icq;
	int rc;

	if (!ch || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	while ((rc = iw_get_cq_event(c->iw, &icq)) == -EAGAIN) {
		if (iwabi_fd_nonblocking(ch->fd)) {
			errno = EAGAIN;
			return -1;
		}
		rc = iwabi_engine_wait(ch->fd, -1);
		if (rc < 0) {
			errno = -rc;
			return -1;
		}
	}
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	struct iwabi_cq *found = NULL;
	pthread_mutex_lock(&lists_lock);
	for (struct iwabi_cq *q = c->cqs; q; q = q->ch_next)
		if (q->iw == icq) {
			found = q;
			break;
		}
	pthread_mutex_unlock(&lists_lock);
	if (!found) {
		errno = EIO;
		return -1;
	}
	pthread_mutex_lock(&found->cq.mutex);
	found->events_delivered++;
	pthread_mutex_unlock(&found->cq.mutex);
	*cq = &found->cq;
	*cq_context = found->cq.cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ------------------------------------------------------------------ */
/* CQs                                                                 */

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct iw_context *ic = iwabi_engine_ctx();
	struct iwabi_comp_channel *ch = (struct iwabi_comp_channel *)channel;
	struct iwabi_cq *q;
	int rc;

	if (!ctx || !ic || comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	rc = iw_create_cq(ic, cqe, ch ? ch->iw : NULL, &q->iw);
	if (rc < 0) {
		free(q);
		errno = -rc;
		return NULL;
	}
	q->cq.context = ctx;
	q->cq.channel = channel;
	q->cq.cq_context = cq_context;
	q->cq.cqe = cqe;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	pthread_mutex_init(&q->flush_lock, NULL);
	if (ch) {
		pthread_mutex_lock(&lists_lock);
		q->ch_next = ch->cqs;
		ch->cqs = q;
		channel->refcnt++;
		pthread_mutex_unlock(&lists_lock);
	}
	return &q->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct iwabi_cq *q = (struct iwabi_cq *)cq;
	if (!cq)
		return EINVAL;
	int rc = iw_destroy_cq(q->iw);
	if (rc < 0)
		return -rc;
	if (cq->channel) {
		struct iwabi_comp_channel *ch = (struct iwabi_comp_channel *)cq->channel;
		pthread_mutex_lock(&lists_lock);
		for (struct iwabi_cq **pp = &ch->cqs; *pp; pp = &(*pp)->ch_next)
			if (*pp == q) {
				*pp = q->ch_next;
				break;
			}
		cq->channel->refcnt--;
		pthread_mutex_unlock(&lists_lock);
	}
	/* Every event handed out must have been acked (verbs rule). */
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed != q->events_delivered)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	while (q->flush_head) {
		struct iwabi_flush *f = q->flush_head;
		q->flush_head = f->next;
		free(f);
	}
	pthread_mutex_destroy(&q->flush_lock);
	free(q);
	return 0;
}

int iwabi_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct iwabi_cq *q = (struct iwabi_cq *)cq;
	int rc = iw_req_notify_cq(q->iw, solicited_only != 0);
	return rc < 0 ? -rc : 0;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq;
	(void)cqe;
	return EOPNOTSUPP;
}

/* ------------------------------------------------------------------ */
/* SRQs                                                                */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct iwabi_pd *p = (struct iwabi_pd *)pd;
	struct iwabi_srq *s;
	int rc;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->attr.srq_limit) {
		errno = EOPNOTSUPP; /* no SRQ limit events */
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	struct iw_srq_init_attr ia = { .max_wr = attr->attr.max_wr, .max_sge = attr->attr.max_sge };
	if (!ia.max_wr || !ia.max_sge) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	rc = iw_create_srq(p->iw, &ia, &s->iw);
	if (rc < 0) {
		free(s);
		errno = -rc;
		return NULL;
	}
	s->srq.context = pd->context;
	s->srq.srq_context = attr->srq_context;
	s->srq.pd = pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	s->max_wr = ia.max_wr;
	s->max_sge = ia.max_sge;
	return &s->srq;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	(void)srq;
	(void)attr;
	(void)mask;
	return EOPNOTSUPP; /* neither resizing nor limit events */
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct iwabi_srq *s = (struct iwabi_srq *)srq;
	if (!srq || !attr)
		return EINVAL;
	attr->max_wr = s->max_wr;
	attr->max_sge = s->max_sge;
	attr->srq_limit = 0;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct iwabi_srq *s = (struct iwabi_srq *)srq;
	if (!srq)
		return EINVAL;
	int rc = iw_destroy_srq(s->iw);
	if (rc < 0)
		return -rc;
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(s);
	return 0;
}

_Static_assert(sizeof(struct ibv_recv_wr) == sizeof(struct iw_recv_wr), "recv WR layouts");
_Static_assert(offsetof(struct ibv_recv_wr, next) == offsetof(struct iw_recv_wr, next), "recv WR next");
_Static_assert(offsetof(struct ibv_recv_wr, sg_list) == offsetof(struct iw_recv_wr, sg_list), "recv WR sgl");
_Static_assert(offsetof(struct ibv_recv_wr, num_sge) == offsetof(struct iw_recv_wr, num_sge), "recv WR nsge");
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct iw_sge), "SGE layouts");
_Static_assert(offsetof(struct ibv_sge, length) == offsetof(struct iw_sge, length), "SGE length");
_Static_assert(offsetof(struct ibv_sge, lkey) == offsetof(struct iw_sge, lkey), "SGE lkey");

int iwabi_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct iwabi_srq *s = (struct iwabi_srq *)srq;
	/* The receive WR and SGE layouts are libiwarp's (asserted above). */
	int rc = iw_post_srq_recv(s->iw, (struct iw_recv_wr *)wr, (struct iw_recv_wr **)bad);
	return rc < 0 ? -rc : 0;
}
