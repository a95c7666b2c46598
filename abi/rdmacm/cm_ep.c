/* QPs and SRQs on ids, endpoints (rdma_create_ep), rdma_getaddrinfo and
 * the device list. */
#include "cm_abi.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

static int fail(int err)
{
	errno = err;
	return -1;
}

/* rdma_cm's per-device PD for ids given none (the device lives as long
 * as the process, so does this PD). */
static struct ibv_pd *default_pd(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct ibv_pd *pd;
	pthread_mutex_lock(&lock);
	if (!pd)
		pd = ibv_alloc_pd(B->device_context());
	pthread_mutex_unlock(&lock);
	return pd;
}

static void destroy_cqs(struct rdma_cm_id *cid)
{
	if (cid->recv_cq && cid->recv_cq != cid->send_cq)
		ibv_destroy_cq(cid->recv_cq);
	if (cid->send_cq)
		ibv_destroy_cq(cid->send_cq);
	if (cid->recv_cq_channel && cid->recv_cq_channel != cid->send_cq_channel)
		ibv_destroy_comp_channel(cid->recv_cq_channel);
	if (cid->send_cq_channel)
		ibv_destroy_comp_channel(cid->send_cq_channel);
	cid->recv_cq = cid->send_cq = NULL;
	cid->recv_cq_channel = cid->send_cq_channel = NULL;
}

/* One CQ with its own completion channel. */
static int make_cq(struct rdma_cm_id *cid, uint32_t size, struct ibv_comp_channel **ch, struct ibv_cq **cq)
{
	*ch = ibv_create_comp_channel(cid->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(cid->verbs, (int)size, cid, *ch, 0);
	return *cq ? 0 : -1;
}

/* Like rdma-core: missing CQs are made per id, each with its channel. */
static int create_cqs(struct rdma_cm_id *cid, uint32_t send_size, uint32_t recv_size)
{
	if ((recv_size && make_cq(cid, recv_size, &cid->recv_cq_channel, &cid->recv_cq) < 0) ||
	    (send_size && make_cq(cid, send_size, &cid->send_cq_channel, &cid->send_cq) < 0)) {
		int err = errno;
		destroy_cqs(cid);
		return fail(err);
	}
	return 0;
}

/* The PD an id's QP or SRQ goes in: the given one, the id's, or the
 * device's default; the id is bound to the device from now on. */
static struct ibv_pd *id_pd(struct rdma_cm_id *cid, struct ibv_pd *pd)
{
	if (!cid->verbs)
		cid->verbs = B->device_context();
	if (!pd)
		pd = cid->pd ? cid->pd : default_pd();
	if (!pd)
		errno = ENOMEM;
	return pd;
}

int rdma_create_qp(struct rdma_cm_id *cid, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid || !attr)
		return fail(EINVAL);
	if (!(pd = id_pd(cid, pd)))
		return -1;
	bool made = false;
	if (!attr->send_cq || !attr->recv_cq) {
		uint32_t s = attr->send_cq ? 0 : (attr->cap.max_send_wr ? attr->cap.max_send_wr : 128);
		uint32_t r = attr->recv_cq || attr->srq ? 0 : (attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 128);
		if (attr->srq && !attr->recv_cq)
			r = 1; /* a QP still needs a receive CQ */
		if (create_cqs(cid, s, r) < 0)
			return -1;
		made = true;
		if (!attr->send_cq)
			attr->send_cq = cid->send_cq;
		if (!attr->recv_cq)
			attr->recv_cq = cid->recv_cq;
	}
	struct ibv_qp *qp = ibv_create_qp(pd, attr);
	if (!qp) {
		int err = errno;
		if (made)
			destroy_cqs(cid);
		return fail(err);
	}
	id->own_cqs = made;
	cid->qp = qp;
	cid->pd = pd;
	cid->qp_type = IBV_QPT_RC;
	if (!made) {
		cid->send_cq = attr->send_cq;
		cid->recv_cq = attr->recv_cq;
	}
	return 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *cid, struct ibv_qp_init_attr_ex *ax)
{
	if (!cid || !ax)
		return fail(EINVAL);
	if (ax->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
		return fail(EOPNOTSUPP);
	struct ibv_qp_init_attr a = iwabi_qp_attr_of_ex(ax);
	int rc = rdma_create_qp(cid, (ax->comp_mask & IBV_QP_INIT_ATTR_PD) ? ax->pd : NULL, &a);
	if (rc == 0) {
		ax->cap = a.cap;
		ax->send_cq = a.send_cq;
		ax->recv_cq = a.recv_cq;
	}
	return rc;
}

void rdma_destroy_qp(struct rdma_cm_id *cid)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid || !cid->qp)
		return;
	ibv_destroy_qp(cid->qp);
	cid->qp = NULL;
	if (id->own_cqs)
		destroy_cqs(cid);
	id->own_cqs = false;
}

int rdma_create_srq(struct rdma_cm_id *cid, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!cid || !attr)
		return fail(EINVAL);
	if (!(pd = id_pd(cid, pd)))
		return -1;
	struct ibv_srq *srq = ibv_create_srq(pd, attr);
	if (!srq)
		return -1;
	cid->srq = srq;
	cid->pd = pd;
	return 0;
}

int rdma_create_srq_ex(struct rdma_cm_id *cid, struct ibv_srq_init_attr_ex *ax)
{
	if (!cid || !ax)
		return fail(EINVAL);
	if (ax->comp_mask & ~(uint32_t)IBV_SRQ_INIT_ATTR_PD)
		return fail(EOPNOTSUPP); /* no XRC or tag matching */
	struct ibv_srq_init_attr a = { .srq_context = ax->srq_context, .attr = ax->attr };
	return rdma_create_srq(cid, (ax->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? ax->pd : NULL, &a);
}

void rdma_destroy_srq(struct rdma_cm_id *cid)
{
	if (!cid || !cid->srq)
		return;
	ibv_destroy_srq(cid->srq);
	cid->srq = NULL;
}

int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	if (!out || !res)
		return fail(EINVAL);
	if (rdma_create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space) < 0)
		return -1;
	struct cm_id *id = (struct cm_id *)cid;
	int rc;
	/* The QP type comes with the address (rdma_getaddrinfo's answer). */
	if (qp_init_attr)
		qp_init_attr->qp_type = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type : IBV_QPT_RC;
	if (res->ai_flags & RAI_PASSIVE) {
		rc = res->ai_src_addr ? rdma_bind_addr(cid, res->ai_src_addr) : 0;
		if (rc == 0 && qp_init_attr) {
			id->has_ep_attr = true;
			id->ep_attr = *qp_init_attr;
			cid->pd = pd;
		}
	} else {
		rc = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000);
		if (rc == 0)
			rc = rdma_resolve_route(cid, 2000);
		if (rc == 0 && qp_init_attr)
			rc = rdma_create_qp(cid, pd, qp_init_attr);
	}
	if (rc < 0) {
		int err = errno;
		rdma_destroy_id(cid);
		return fail(err);
	}
	*out = cid;
	return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *cid)
{
	if (!cid)
		return;
	rdma_destroy_qp(cid);
	rdma_destroy_srq(cid);
	rdma_destroy_id(cid);
}

/* ------------------------------------------------------------------ */
/* rdma_getaddrinfo                                                    */

static struct sockaddr *dup_addr(const struct sockaddr *a, socklen_t len)
{
	struct sockaddr *d = malloc(len);
	if (d)
		memcpy(d, a, len);
	return d;
}

/* The address a name (or service) stands for: IPv4 first when both
 * exist, the raw transport being IPv4 only. 0, or getaddrinfo's error
 * (errno set). */
static int lookup(const char *node, const char *service, const struct rdma_addrinfo *hints,
		  struct sockaddr **out, socklen_t *len)
{
	struct addrinfo h = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	if (hints) {
		h.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
	}
	int rc = getaddrinfo(node, service, &h, &ai);
	if (rc) {
		errno = rc == EAI_SYSTEM ? errno : rc == EAI_MEMORY ? ENOMEM : EADDRNOTAVAIL;
		return rc == EAI_SYSTEM ? -1 : rc;
	}
	struct addrinfo *pick = ai;
	for (struct addrinfo *p = ai; p; p = p->ai_next)
		if (p->ai_family == AF_INET) {
			pick = p;
			break;
		}
	*out = dup_addr(pick->ai_addr, pick->ai_addrlen);
	*len = pick->ai_addrlen;
	freeaddrinfo(ai);
	if (!*out)
		return fail(ENOMEM);
	return 0;
}

/* As rdma-core's: node/service name the address (the source with
 * RAI_PASSIVE, else the destination); with neither, the hints' own
 * ai_src_addr/ai_dst_addr are the answer (libfabric's verbs provider
 * asks that way); a source in the hints comes along with a destination
 * looked up by name. */
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	bool by_addr = hints && (hints->ai_src_addr || hints->ai_dst_addr);
	if (!res || (!node && !service && !by_addr))
		return fail(EINVAL);
	if (hints && (hints->ai_family == AF_IB || (hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP) ||
		      (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)))
		return fail(EOPNOTSUPP);
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));
	if (!r)
		return fail(ENOMEM);
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	if (node || service) {
		struct sockaddr *a;
		socklen_t len;
		int rc = lookup(node, service, hints, &a, &len);
		if (rc) {
			int err = errno;
			free(r);
			errno = err;
			return rc;
		}
		if (r->ai_flags & RAI_PASSIVE) {
			r->ai_src_addr = a;
			r->ai_src_len = len;
		} else {
			r->ai_dst_addr = a;
			r->ai_dst_len = len;
		}
	} else if (hints->ai_dst_addr && hints->ai_dst_len) {
		if (!(r->ai_dst_addr = dup_addr(hints->ai_dst_addr, hints->ai_dst_len)))
			goto nomem;
		r->ai_dst_len = hints->ai_dst_len;
	}
	/* A source from the hints, unless the lookup made one. */
	if (hints && hints->ai_src_addr && hints->ai_src_len && !r->ai_src_addr) {
		if (!(r->ai_src_addr = dup_addr(hints->ai_src_addr, hints->ai_src_len)))
			goto nomem;
		r->ai_src_len = hints->ai_src_len;
	}
	const struct sockaddr *fam = r->ai_dst_addr ? r->ai_dst_addr : r->ai_src_addr;
	if (!fam || (fam->sa_family != AF_INET && fam->sa_family != AF_INET6)) {
		rdma_freeaddrinfo(r);
		return fail(fam ? EAFNOSUPPORT : EINVAL);
	}
	r->ai_family = fam->sa_family;
	*res = r;
	return 0;
nomem:
	rdma_freeaddrinfo(r);
	return fail(ENOMEM);
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}

/* ------------------------------------------------------------------ */
/* Devices                                                             */

struct ibv_context **rdma_get_devices(int *num_devices)
{
	if (cm_init() < 0) {
		if (num_devices)
			*num_devices = 0;
		return NULL;
	}
	struct ibv_context **l = calloc(2, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = B->device_context();
	if (num_devices)
		*num_devices = 1;
	return l;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
