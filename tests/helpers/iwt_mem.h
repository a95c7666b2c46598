/* A test stand-in for the stack's memory registry and receive queue:
 * regions with STag = index << 8 | key, a protection domain, access rights
 * and an invalidated flag; a FIFO of posted receive buffers. Implements
 * the lookups iw_rdmap_conn needs, with the checks the real stack makes. */
#ifndef IWT_MEM_H
#define IWT_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rdmap/rdmap_conn.h"

#define IWT_MAX_MR 32
#define IWT_MAX_RECV 64

struct iwt_mr {
	bool used;
	bool valid;
	uint32_t stag;
	uint32_t pd;
	unsigned access;
	uint8_t *base;
	uint64_t va; /* TO of base (TO is an absolute virtual address, like siw) */
	size_t len;
};

struct iwt_recv {
	uint64_t id;
	struct iovec sgl[IW_DDP_MAX_SGE];
	int nsge;
};

struct iwt_mem {
	uint32_t pd; /* the PD of the QP using this registry */
	struct iwt_mr mr[IWT_MAX_MR];
	struct iwt_recv rq[IWT_MAX_RECV];
	unsigned rq_head, rq_count;
	unsigned lookups, invalidations;
};

void iwt_mem_init(struct iwt_mem *m, uint32_t pd);
/* Register len bytes at base; TO is the address itself. Returns the STag. */
uint32_t iwt_mem_reg(struct iwt_mem *m, void *base, size_t len, unsigned access, uint32_t pd, uint8_t key);
struct iwt_mr *iwt_mem_find(struct iwt_mem *m, uint32_t stag);
void iwt_mem_post_recv(struct iwt_mem *m, uint64_t id, const struct iovec *sgl, int nsge);
/* Pop the head receive (after its RECV_DONE). */
void iwt_mem_pop_recv(struct iwt_mem *m, struct iwt_recv *out);

/* iw_rdmap_conn_ops callbacks; ctx is the struct iwt_mem. */
enum iw_stag_status iwt_mem_stag(void *ctx, uint32_t stag, uint64_t to, size_t len, unsigned access,
				 uint8_t **addr);
int iwt_mem_recv_buf(void *ctx, const struct iovec **sgl, int *nsge);
int iwt_mem_invalidate(void *ctx, uint32_t stag);

#endif
