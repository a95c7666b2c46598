/* The one device, iwarp0: listing, open/close and its attributes. */
#include "iwabi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#undef ibv_query_port
#undef ibv_reg_mr

/* Not in perftest's Mellanox vendor_part_id table, so it takes the
 * generic path; 0x6977 is "iw". */
#define IWABI_VENDOR_ID 0x000000
#define IWABI_VENDOR_PART_ID 0x6977
#define IWABI_NODE_GUID 0x0200697761727030ull /* "iwarp0" in a locally administered EUI-64 */

static struct ibv_device the_device = {
	.node_type = IBV_NODE_RNIC,
	.transport_type = IBV_TRANSPORT_IWARP,
	.name = IWABI_DEV_NAME,
	.dev_name = "uverbs_iwarp0",
	.dev_path = "/sys/class/infiniband_verbs/uverbs_iwarp0",
	.ibdev_path = "/sys/class/infiniband/iwarp0",
};

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &the_device;
	if (num_devices)
		*num_devices = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	(void)device;
	return htobe64(IWABI_NODE_GUID);
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device == &the_device ? 0 : -1;
}

/* Data path and object ops (objects.c, qp.c). */
int iwabi_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int iwabi_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int iwabi_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int iwabi_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int iwabi_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_qp *iwabi_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);

static int query_port_op(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len);
static int query_device_ex_op(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len);

static int compat_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return ibv_query_device(ctx, attr);
}

static int compat_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static struct ibv_mw *alloc_mw_op(struct ibv_pd *pd, enum ibv_mw_type type)
{
	(void)pd;
	(void)type;
	errno = EOPNOTSUPP;
	return NULL;
}

static int bind_mw_op(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	(void)qp;
	(void)mw;
	(void)b;
	return EOPNOTSUPP;
}

static int dealloc_mw_op(struct ibv_mw *mw)
{
	(void)mw;
	return EOPNOTSUPP;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct iwabi_context *c;
	int rc;

	if (device != &the_device) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	rc = iwabi_engine_get(NULL);
	if (rc < 0) {
		free(c);
		errno = -rc;
		return NULL;
	}
	c->async_efd = eventfd(0, EFD_CLOEXEC);
	struct ibv_context *ctx = &c->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = c->async_efd;
	ctx->async_fd = c->async_efd;
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->ops._compat_query_device = compat_query_device;
	ctx->ops._compat_query_port = compat_query_port;
	ctx->ops.alloc_mw = alloc_mw_op;
	ctx->ops.bind_mw = bind_mw_op;
	ctx->ops.dealloc_mw = dealloc_mw_op;
	ctx->ops.poll_cq = iwabi_poll_cq;
	ctx->ops.req_notify_cq = iwabi_req_notify_cq;
	ctx->ops.post_send = iwabi_post_send;
	ctx->ops.post_recv = iwabi_post_recv;
	ctx->ops.post_srq_recv = iwabi_post_srq_recv;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = query_port_op;
	c->vctx.query_device_ex = query_device_ex_op;
	c->vctx.create_qp_ex = iwabi_create_qp_ex;
	return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
	struct iwabi_context *c = (struct iwabi_context *)verbs_get_ctx(ctx);
	if (!c)
		return EINVAL;
	if (c->async_efd >= 0)
		close(c->async_efd);
	pthread_mutex_destroy(&ctx->mutex);
	free(c);
	iwabi_engine_put();
	return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	if (!ctx || !a)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "libiwarp %s", "0.1.0");
	a->node_guid = htobe64(IWABI_NODE_GUID);
	a->sys_image_guid = htobe64(IWABI_NODE_GUID);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 4096;
	a->vendor_id = IWABI_VENDOR_ID;
	a->vendor_part_id = IWABI_VENDOR_PART_ID;
	a->hw_ver = 0;
	/* libiwarp's limits (stack/internal.h, verbs.h). */
	a->max_qp = 4096;
	a->max_qp_wr = 16384;
	a->device_cap_flags = IBV_DEVICE_MEM_MGT_EXTENSIONS;
	a->max_sge = 16;
	a->max_sge_rd = 16;
	a->max_cq = 65536;
	a->max_cqe = 1 << 20;
	a->max_mr = 65536;
	a->max_pd = 65536;
	a->max_qp_rd_atom = 128;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = 128 * 4096;
	a->max_qp_init_rd_atom = 128;
	/* RFC 7306 atomics, towards libiwarp peers (a post toward any other
	 * peer fails EOPNOTSUPP); none when IWARP_RFC7306=0 turns them off. */
	const char *ext = getenv("IWARP_RFC7306");
	a->atomic_cap = ext && strcmp(ext, "0") == 0 ? IBV_ATOMIC_NONE : IBV_ATOMIC_GLOB;
	a->max_srq = 4096;
	a->max_srq_wr = 16384;
	a->max_srq_sge = 32;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 0;
	a->phys_port_cnt = 1;
	return 0;
}

static int query_device_ex_op(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len)
{
	(void)in;
	if (len < sizeof(attr->orig_attr))
		return EINVAL;
	memset(attr, 0, len);
	return ibv_query_device(ctx, &attr->orig_attr);
}

static int query_port_op(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr a;
	if (!ctx || !attr || port != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.state = IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = IBV_MTU_4096;
	a.gid_tbl_len = 1;
	a.port_cap_flags = 0;
	a.max_msg_sz = 1u << 31;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 1;  /* 1X */
	a.active_speed = 32; /* EDR-class figure: the link is whatever TCP gives */
	a.phys_state = 5;    /* LinkUp */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	/* The exported call fills the old layout, which ends before flags. */
	return query_port_op(ctx, port, (struct ibv_port_attr *)attr, offsetof(struct ibv_port_attr, flags));
}

/* Like siw: the GID carries the interface's identity; ours is the node
 * GUID (there is no MAC of our own on the kernel transport). */
static void our_gid(union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	uint64_t g = htobe64(IWABI_NODE_GUID);
	memcpy(gid->raw, &g, sizeof(g));
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (!ctx || !gid || port != 1 || index != 0)
		return -1;
	our_gid(gid);
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *e,
		      uint32_t flags, size_t size)
{
	if (!ctx || !e || port != 1 || flags || size < sizeof(*e))
		return EINVAL;
	if (index != 0)
		return ENODATA;
	memset(e, 0, size);
	our_gid(&e->gid);
	e->gid_index = 0;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_IB;
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max, uint32_t flags,
			     size_t size)
{
	if (!ctx || !entries || !max || flags || size < sizeof(*entries))
		return -EINVAL;
	int rc = _ibv_query_gid_ex(ctx, 1, 0, entries, 0, size);
	return rc ? -rc : 1;
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	if (!ctx || !pkey || port != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	(void)ctx;
	return port == 1 && be16toh(pkey) == 0xffff ? 0 : -1;
}

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	struct iwabi_context *c = (struct iwabi_context *)verbs_get_ctx(ctx);
	(void)event;
	if (!c) {
		errno = EINVAL;
		return -1;
	}
	/* No asynchronous events are ever raised (errors show up as work
	 * completions and CM events): block, or EAGAIN, like an idle device. */
	if (iwabi_fd_nonblocking(c->async_efd)) {
		errno = EAGAIN;
		return -1;
	}
	struct pollfd p = { .fd = c->async_efd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	errno = EIO;
	return -1;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
