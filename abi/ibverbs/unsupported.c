/* Verbs libiwarp does not offer: address handles and multicast (UD),
 * device import, ECE, dma-buf and device memory. Each fails cleanly
 * with EOPNOTSUPP (errno for calls returning pointers). */
#include "iwabi.h"

#include <errno.h>

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	(void)pd;
	(void)attr;
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	(void)context;
	(void)port_num;
	(void)wc;
	(void)grh;
	(void)ah_attr;
	errno = EOPNOTSUPP;
	return -1;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh, uint8_t port_num)
{
	(void)pd;
	(void)wc;
	(void)grh;
	(void)port_num;
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	(void)ah;
	return EOPNOTSUPP;
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	return EOPNOTSUPP;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
				 int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

/* No page pinning: registered memory stays ordinary memory, so fork()
 * needs nothing from us. */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dofork_range(void *base, size_t size);
int ibv_dontfork_range(void *base, size_t size);

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
