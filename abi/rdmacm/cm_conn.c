/* Addresses, routes, listen/connect/accept/reject/disconnect. */
#include "cm_abi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/* The kernel's choice of source address toward dst (a connected UDP
 * socket sends nothing); the raw transport has exactly one address. */
static int source_for(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	const char *raw = B->raw_ip();
	memset(src, 0, sizeof(*src));
	if (raw) {
		struct sockaddr_in *sin = (struct sockaddr_in *)src;
		if (dst->sa_family != AF_INET)
			return -EAFNOSUPPORT;
		sin->sin_family = AF_INET;
		return inet_pton(AF_INET, raw, &sin->sin_addr) == 1 ? 0 : -EINVAL;
	}
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_storage d;
	memcpy(&d, dst, sa_len(dst));
	if (d.ss_family == AF_INET && ((struct sockaddr_in *)&d)->sin_port == 0)
		((struct sockaddr_in *)&d)->sin_port = htons(9); /* any port: connect needs one */
	if (d.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&d)->sin6_port == 0)
		((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
	socklen_t len = sizeof(*src);
	int rc = 0;
	if (connect(fd, (struct sockaddr *)&d, sa_len(dst)) < 0 || getsockname(fd, (struct sockaddr *)src, &len) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0) {
		if (src->ss_family == AF_INET)
			((struct sockaddr_in *)src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)src)->sin6_port = 0;
	}
	return rc;
}

/* An active id bound to an address or a port connects from it
 * (iw_conn_param.src_addr: bind before connect, as the kernel's rdma_cm
 * does); one bound to the wildcard with port 0 leaves both to the route.
 * Returns the address to bind, or NULL. */
static const struct sockaddr *bound_source(const struct cm_id *id)
{
	if (!id->bound)
		return NULL;
	const struct sockaddr_storage *b = &id->bound_addr;
	if (b->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)b;
		if (s->sin_port == 0 && s->sin_addr.s_addr == htonl(INADDR_ANY))
			return NULL;
	} else if (b->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)b;
		if (s->sin6_port == 0 && IN6_IS_ADDR_UNSPECIFIED(&s->sin6_addr))
			return NULL;
	}
	return (const struct sockaddr *)b;
}

/* The family of a bound source must be the destination's. */
static bool source_fits(const struct cm_id *id, const struct sockaddr *dst)
{
	const struct sockaddr *b = bound_source(id);
	return !b || b->sa_family == dst->sa_family;
}

static bool is_loopback4(const struct sockaddr_in *sin)
{
	return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
}

static int check_local(const struct sockaddr *a)
{
	const char *raw = B->raw_ip();
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)a;
		if (sin->sin_addr.s_addr == htonl(INADDR_ANY))
			return 0;
		if (raw) {
			struct in_addr r;
			/* Loopback too: rdma_cm binds it to a device like any
			 * local address (libfabric's verbs provider probes with
			 * 127.0.0.1); a listen there is one on our address
			 * (rdma_listen), the raw transport having no loopback. */
			if (is_loopback4(sin))
				return 0;
			return inet_pton(AF_INET, raw, &r) == 1 && r.s_addr == sin->sin_addr.s_addr ? 0
												 : -EADDRNOTAVAIL;
		}
	} else if (a->sa_family == AF_INET6) {
		if (raw)
			return -EAFNOSUPPORT;
		if (IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr))
			return 0;
	} else {
		return -EAFNOSUPPORT;
	}
	struct sockaddr_storage t;
	memcpy(&t, a, sa_len(a));
	if (t.ss_family == AF_INET)
		((struct sockaddr_in *)&t)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&t)->sin6_port = 0;
	int fd = socket(a->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = bind(fd, (struct sockaddr *)&t, sa_len(a)) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid || !addr)
		return fail(EINVAL);
	int rc = check_local(addr);
	if (rc < 0)
		return fail(-rc);
	memset(&id->bound_addr, 0, sizeof(id->bound_addr));
	memcpy(&id->bound_addr, addr, sa_len(addr));
	id->bound = true;
	memcpy(&cid->route.addr.src_storage, &id->bound_addr, sizeof(id->bound_addr));
	/* One device serves every address. */
	cid->verbs = B->device_context();
	cid->port_num = 1;
	return 0;
}

static int queue_local_event(struct cm_id *id, enum rdma_cm_event_type t, int status)
{
	struct cm_ev *e = cm_ev_new(id, t, status);
	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&cm_lock);
	cm_queue(id->chan, e);
	pthread_mutex_unlock(&cm_lock);
	return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	struct cm_id *id = (struct cm_id *)cid;
	struct sockaddr_storage s;
	int rc;
	(void)timeout_ms; /* answered locally, at once */

	if (!cid || !dst)
		return fail(EINVAL);
	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return fail(EAFNOSUPPORT);
	if (src && (rc = rdma_bind_addr(cid, src)) < 0)
		return rc;
	memset(&cid->route.addr.dst_storage, 0, sizeof(cid->route.addr.dst_storage));
	memcpy(&cid->route.addr.dst_storage, dst, sa_len(dst));
	if (!source_fits(id, dst))
		return fail(EAFNOSUPPORT);
	rc = source_for(dst, &s);
	if (rc == 0 && bound_source(id)) {
		/* The bound address where it names one; the route's otherwise
		 * (bound to the wildcard with a port). */
		const struct sockaddr *b = bound_source(id);
		bool any = b->sa_family == AF_INET
				   ? ((const struct sockaddr_in *)b)->sin_addr.s_addr == htonl(INADDR_ANY)
				   : IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)b)->sin6_addr);
		if (b->sa_family == AF_INET) {
			if (!any)
				((struct sockaddr_in *)&s)->sin_addr = ((const struct sockaddr_in *)b)->sin_addr;
			((struct sockaddr_in *)&s)->sin_port = ((const struct sockaddr_in *)b)->sin_port;
		} else {
			if (!any)
				((struct sockaddr_in6 *)&s)->sin6_addr = ((const struct sockaddr_in6 *)b)->sin6_addr;
			((struct sockaddr_in6 *)&s)->sin6_port = ((const struct sockaddr_in6 *)b)->sin6_port;
		}
	}
	if (rc == 0) {
		memcpy(&cid->route.addr.src_storage, &s, sizeof(s));
		cid->verbs = B->device_context();
		cid->port_num = 1;
	}
	if (id->sync)
		return rc < 0 ? fail(-rc) : 0;
	rc = queue_local_event(id, rc == 0 ? RDMA_CM_EVENT_ADDR_RESOLVED : RDMA_CM_EVENT_ADDR_ERROR, rc);
	return rc < 0 ? fail(-rc) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
	struct cm_id *id = (struct cm_id *)cid;
	(void)timeout_ms;
	if (!cid)
		return fail(EINVAL);
	if (!cid->verbs)
		return fail(EINVAL); /* address not resolved */
	cid->route.num_paths = 0; /* iWARP: TCP routes, no IB path records */
	if (id->sync)
		return 0;
	int rc = queue_local_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return rc < 0 ? fail(-rc) : 0;
}

int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid)
		return fail(EINVAL);
	struct sockaddr_storage any = { .ss_family = AF_INET };
	const struct sockaddr *a = id->bound ? (struct sockaddr *)&id->bound_addr : (struct sockaddr *)&any;
	if (B->raw_ip() && id->bound && id->bound_addr.ss_family == AF_INET &&
	    is_loopback4((struct sockaddr_in *)&id->bound_addr)) {
		((struct sockaddr_in *)&any)->sin_port = ((struct sockaddr_in *)&id->bound_addr)->sin_port;
		a = (struct sockaddr *)&any; /* check_local: our address, same port */
	}
	struct iw_listen_param p = { .backlog = backlog };
	int rc = B->cm_listen_param(id->iw, a, &p);
	if (rc < 0)
		return fail(-rc);
	struct sockaddr_storage ss;
	if (B->cm_local_addr(id->iw, &ss) == 0)
		memcpy(&cid->route.addr.src_storage, &ss, sizeof(ss));
	if (!cid->verbs) {
		cid->verbs = B->device_context();
		cid->port_num = 1;
	}
	return 0;
}

/* IWARP_FIRST_FPDU_DELAY_MS: the initiator's wait between the MPA Reply
 * and its first FPDU (iw_conn_param.first_fpdu_delay_ms: -1 none, 0 the
 * default 20 ms, up to 10000). Linux siw as responder drops FPDUs that
 * arrive while its accept is still running; a slow peer (siw under QEMU
 * TCG on a loaded host) needs longer than the default. Anything else is
 * ignored. */
static int first_fpdu_delay_ms(void)
{
	const char *s = getenv("IWARP_FIRST_FPDU_DELAY_MS");
	char *end;

	if (!s || !*s)
		return 0;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < -1 || v > 10000)
		return 0;
	return (int)v;
}

/* The device's limit on both (ibv_query_device: max_qp_rd_atom,
 * max_qp_init_rd_atom; libiwarp's maximum). */
#define IWABI_MAX_RD_ATOM 128

/* rdma_cm's rule for a depth: RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH
 * (0xFF) ask for the device's maximum (libfabric's verbs provider sends
 * them), a larger explicit value is EINVAL. */
static int depth(uint8_t v, uint8_t max_marker, uint16_t *out)
{
	if (v == max_marker) {
		*out = IWABI_MAX_RD_ATOM;
		return 0;
	}
	if (v > IWABI_MAX_RD_ATOM)
		return -EINVAL;
	*out = v;
	return 0;
}

static int conn_param(const struct rdma_conn_param *cp, struct iw_conn_param *p, bool initiator)
{
	memset(p, 0, sizeof(*p));
	p->first_fpdu_delay_ms = first_fpdu_delay_ms();
	/* Peer-to-peer MPA (RFC 6581) with a ready-to-receive message, as
	 * the kernel's iWARP drivers do for rdma_cm: the responder may not
	 * send before the initiator's first FPDU, and programs whose server
	 * talks first (ucmatose) would wait forever without it. Our
	 * initiator sends the zero-length RDMA WRITE RTR; as responder any
	 * RTR the peer offers is fine. */
	p->p2p = true;
	p->rtr_types = initiator ? IW_RTR_WRITE : (IW_RTR_WRITE | IW_RTR_READ | IW_RTR_SEND);
	if (!cp)
		return 0;
	p->private_data = cp->private_data;
	p->private_data_len = cp->private_data ? cp->private_data_len : 0;
	/* Our IRD is what we answer (responder resources), our ORD what we
	 * issue (initiator depth); 0 keeps libiwarp's default. */
	if (depth(cp->responder_resources, RDMA_MAX_RESP_RES, &p->ird) < 0 ||
	    depth(cp->initiator_depth, RDMA_MAX_INIT_DEPTH, &p->ord) < 0)
		return -EINVAL;
	return 0;
}

/* The id's QP, or one the program made itself and names by number
 * (rping -q). */
static struct ibv_qp *conn_qp(struct rdma_cm_id *cid, const struct rdma_conn_param *cp)
{
	if (cid->qp)
		return cid->qp;
	return cp ? B->qp_by_num(cp->qp_num) : NULL;
}

int rdma_connect(struct rdma_cm_id *cid, struct rdma_conn_param *cp)
{
	struct cm_id *id = (struct cm_id *)cid;
	struct iw_conn_param p;
	struct ibv_qp *qp = cid ? conn_qp(cid, cp) : NULL;
	if (!qp)
		return fail(EINVAL); /* an iWARP connection needs its QP */
	if (conn_param(cp, &p, true) < 0)
		return fail(EINVAL);
	p.src_addr = bound_source(id);
	id->active = true;
	int rc = B->cm_connect(id->iw, B->qp_of(qp), (struct sockaddr *)&cid->route.addr.dst_storage, &p);
	if (rc < 0)
		return fail(-rc);
	return id->sync ? cm_sync_wait(id, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_establish(struct rdma_cm_id *cid)
{
	return cid ? 0 : fail(EINVAL);
}

int rdma_accept(struct rdma_cm_id *cid, struct rdma_conn_param *cp)
{
	struct cm_id *id = (struct cm_id *)cid;
	struct iw_conn_param p;
	struct ibv_qp *qp = cid ? conn_qp(cid, cp) : NULL;
	if (!qp)
		return fail(EINVAL);
	if (conn_param(cp, &p, false) < 0)
		return fail(EINVAL);
	int rc = B->cm_accept(id->iw, B->qp_of(qp), &p);
	free(id->held);
	id->held = NULL;
	cid->event = NULL;
	if (rc < 0)
		return fail(-rc);
	return id->sync ? cm_sync_wait(id, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_reject(struct rdma_cm_id *cid, const void *private_data, uint8_t len)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid)
		return fail(EINVAL);
	int rc = B->cm_reject(id->iw, private_data, private_data ? len : 0);
	free(id->held);
	id->held = NULL;
	cid->event = NULL;
	return rc < 0 ? fail(-rc) : 0;
}

int rdma_disconnect(struct rdma_cm_id *cid)
{
	struct cm_id *id = (struct cm_id *)cid;
	if (!cid)
		return fail(EINVAL);
	int rc = B->cm_disconnect(id->iw);
	return rc < 0 ? fail(-rc) : 0;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct cm_id *l = (struct cm_id *)listen;
	if (!listen || !out || !l->sync)
		return fail(EINVAL);
	for (;;) {
		struct cm_ev *e;
		int rc = cm_get(l->chan, &e, false);
		if (rc < 0)
			return fail(-rc);
		if (e->ev.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			free(e);
			continue;
		}
		struct cm_id *c = (struct cm_id *)e->ev.id;
		/* The new id is synchronous like its listener. */
		if (rdma_migrate_id(&c->id, NULL) < 0) {
			int err = errno;
			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			free(e);
			return fail(err);
		}
		c->held = e;
		c->id.event = &e->ev;
		if (l->has_ep_attr) {
			struct ibv_qp_init_attr a = l->ep_attr;
			if (rdma_create_qp(&c->id, listen->pd, &a) < 0) {
				int err = errno;
				rdma_reject(&c->id, NULL, 0);
				rdma_destroy_id(&c->id);
				return fail(err);
			}
		}
		*out = &c->id;
		return 0;
	}
}

int rdma_set_option(struct rdma_cm_id *cid, int level, int optname, void *optval, size_t optlen)
{
	if (!cid || !optval)
		return fail(EINVAL);
	(void)optlen;
	/* TCP carries the connection: TOS and reuse are the kernel's or our
	 * TCP's business; accepted so programs that tune them still run. */
	if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_REUSEADDR ||
					optname == RDMA_OPTION_ID_AFONLY || optname == RDMA_OPTION_ID_ACK_TIMEOUT))
		return 0;
	return fail(ENOSYS);
}

int rdma_init_qp_attr(struct rdma_cm_id *cid, struct ibv_qp_attr *attr, int *mask)
{
	if (!cid || !attr || !mask)
		return fail(EINVAL);
	if (attr->qp_state == IBV_QPS_INIT) {
		attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		attr->port_num = 1;
		attr->pkey_index = 0;
		*mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT;
	} else {
		*mask = IBV_QP_STATE;
	}
	return 0;
}

int rdma_notify(struct rdma_cm_id *cid, enum ibv_event_type event)
{
	(void)event;
	return cid ? 0 : fail(EINVAL); /* iWARP establishes through the CM */
}

__be16 rdma_get_src_port(struct rdma_cm_id *cid)
{
	const struct sockaddr *a = (const struct sockaddr *)&cid->route.addr.src_storage;
	return a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
					: ((const struct sockaddr_in *)a)->sin_port;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *cid)
{
	const struct sockaddr *a = (const struct sockaddr *)&cid->route.addr.dst_storage;
	return a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
					: ((const struct sockaddr_in *)a)->sin_port;
}
