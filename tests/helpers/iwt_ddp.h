/* DDP test helpers: raw segment headers with arbitrary (also invalid)
 * field values, and an in-memory MR table + posted receive queues that
 * implement iw_ddp_rx_ops. */
#ifndef IWT_DDP_H
#define IWT_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ddp/ddp_rx.h"

/* Write a tagged header (14 bytes) into buf; version is put into the DV
 * bits as given (masked to 2 bits), reserved bits are 0. Returns 14. */
size_t iwt_ddp_tagged(uint8_t *buf, uint8_t ulp_ctrl, uint32_t stag, uint64_t to, bool last,
		      uint8_t version);
/* Write an untagged header (18 bytes). Returns 18. */
size_t iwt_ddp_untagged(uint8_t *buf, uint8_t ulp_ctrl, uint32_t ulp_word, uint32_t qn,
			uint32_t msn, uint32_t mo, bool last, uint8_t version);

#define IWT_MR_MAX 16
#define IWT_RQ_MAX 64

/* A memory region: TO range [to, to + len) maps to base. Tagged lookups
 * succeed for RDMAP opcodes whose bit (1u << opcode) is in opmask. */
struct iwt_mr {
	uint32_t stag; /* index << 8 | key */
	uint8_t *base;
	uint64_t to;
	size_t len;
	uint32_t opmask;
	uint32_t pd;
	bool valid; /* false: invalidated */
};

struct iwt_rq_buf {
	const struct iovec *sgl;
	int nsge;
};

/* Posted receives of one queue: the buffer at head serves MSN base_msn,
 * the next one base_msn + 1, and so on. */
struct iwt_rq {
	struct iwt_rq_buf buf[IWT_RQ_MAX];
	uint32_t head, count;
	uint32_t base_msn;
};

struct iwt_ddp_env {
	uint32_t pd; /* the stream's protection domain */
	struct iwt_mr mr[IWT_MR_MAX];
	int nmr;
	struct iwt_rq rq[IW_DDP_NUM_QN];
	/* untagged lookups fail with this cause when set */
	bool fail_untagged;
	bool fail_sets_cause;
	struct iw_term_cause fail_cause;
	/* call accounting */
	unsigned tagged_calls, untagged_calls;
	size_t last_tagged_len;
};

extern const struct iw_ddp_rx_ops iwt_ddp_rx_ops;

void iwt_ddp_env_init(struct iwt_ddp_env *e, uint32_t pd);
/* Register an MR (valid, in pd). Returns it, or NULL when the table is full. */
struct iwt_mr *iwt_ddp_mr_add(struct iwt_ddp_env *e, uint32_t stag, uint8_t *base, uint64_t to,
			      size_t len, uint32_t opmask, uint32_t pd);
/* Post a receive buffer on queue qn. Returns 0, or -1 when full. */
int iwt_ddp_rq_post(struct iwt_ddp_env *e, uint32_t qn, const struct iovec *sgl, int nsge);
/* Retire the head buffer of qn (its message completed). */
void iwt_ddp_rq_consume(struct iwt_ddp_env *e, uint32_t qn);

#endif
