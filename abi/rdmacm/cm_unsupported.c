/* rdma_cm calls libiwarp has no use for: multicast (UD), ECE, and the
 * rsocket API (stream sockets over RDMA; rping imports rpoll). Each
 * fails cleanly: -1 with errno ENOSYS (rsocket) or EOPNOTSUPP. */
#include "cm_abi.h"

#include <errno.h>
#include <rdma/rsocket.h>

#define NOSYS(ret)               \
	do {                     \
		errno = ENOSYS;  \
		return (ret);    \
	} while (0)

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	(void)id;
	(void)mc_join_attr;
	(void)context;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	(void)id;
	(void)private_data;
	(void)private_data_len;
	errno = EOPNOTSUPP;
	return -1;
}

int rsocket(int domain, int type, int protocol)
{
	(void)domain, (void)type, (void)protocol;
	NOSYS(-1);
}
int rbind(int s, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)s, (void)addr, (void)addrlen;
	NOSYS(-1);
}
int rlisten(int s, int backlog)
{
	(void)s, (void)backlog;
	NOSYS(-1);
}
int raccept(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)s, (void)addr, (void)addrlen;
	NOSYS(-1);
}
int rconnect(int s, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)s, (void)addr, (void)addrlen;
	NOSYS(-1);
}
int rshutdown(int s, int how)
{
	(void)s, (void)how;
	NOSYS(-1);
}
int rclose(int s)
{
	(void)s;
	NOSYS(-1);
}
ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	(void)s, (void)buf, (void)len, (void)flags;
	NOSYS(-1);
}
ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)s, (void)buf, (void)len, (void)flags, (void)src_addr, (void)addrlen;
	NOSYS(-1);
}
ssize_t rrecvmsg(int s, struct msghdr *msg, int flags)
{
	(void)s, (void)msg, (void)flags;
	NOSYS(-1);
}
ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	(void)s, (void)buf, (void)len, (void)flags;
	NOSYS(-1);
}
ssize_t rsendto(int s, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)s, (void)buf, (void)len, (void)flags, (void)dest_addr, (void)addrlen;
	NOSYS(-1);
}
ssize_t rsendmsg(int s, const struct msghdr *msg, int flags)
{
	(void)s, (void)msg, (void)flags;
	NOSYS(-1);
}
ssize_t rread(int s, void *buf, size_t count)
{
	(void)s, (void)buf, (void)count;
	NOSYS(-1);
}
ssize_t rreadv(int s, const struct iovec *iov, int iovcnt)
{
	(void)s, (void)iov, (void)iovcnt;
	NOSYS(-1);
}
ssize_t rwrite(int s, const void *buf, size_t count)
{
	(void)s, (void)buf, (void)count;
	NOSYS(-1);
}
ssize_t rwritev(int s, const struct iovec *iov, int iovcnt)
{
	(void)s, (void)iov, (void)iovcnt;
	NOSYS(-1);
}
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds, (void)nfds, (void)timeout;
	NOSYS(-1);
}
int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	(void)nfds, (void)readfds, (void)writefds, (void)exceptfds, (void)timeout;
	NOSYS(-1);
}
int rgetpeername(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)s, (void)addr, (void)addrlen;
	NOSYS(-1);
}
int rgetsockname(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)s, (void)addr, (void)addrlen;
	NOSYS(-1);
}
int rsetsockopt(int s, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)s, (void)level, (void)optname, (void)optval, (void)optlen;
	NOSYS(-1);
}
int rgetsockopt(int s, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)s, (void)level, (void)optname, (void)optval, (void)optlen;
	NOSYS(-1);
}
int rfcntl(int s, int cmd, ...)
{
	(void)s, (void)cmd;
	NOSYS(-1);
}
off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)s, (void)buf, (void)len, (void)prot, (void)flags, (void)offset;
	NOSYS((off_t)-1);
}
int riounmap(int s, void *buf, size_t len)
{
	(void)s, (void)buf, (void)len;
	NOSYS(-1);
}
size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	(void)s, (void)buf, (void)count, (void)offset, (void)flags;
	errno = ENOSYS;
	return 0;
}
