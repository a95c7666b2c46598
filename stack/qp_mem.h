/* Page-backed storage for per-QP queues (send queue, receive ring, SGE
 * pools, inline buffers, tx slots) and the TCP transport's iovec backlog.
 *
 * Anonymous pages are zero and cost nothing until touched, so a QP's
 * queue storage is one mapping that nothing initialises: an idle QP keeps
 * none of it resident, a busy one only the pages its WRs and FPDUs have
 * used (a queue filled to full depth touches all of it, as before). The
 * library counts what it has mapped, so tests can check that destroy
 * returns every byte (LeakSanitizer does not see mmap). */
#ifndef IW_STACK_QP_MEM_H
#define IW_STACK_QP_MEM_H

#include <stddef.h>

/* len rounded up to whole pages, zero-filled; NULL on failure. */
void *iw_pages_alloc(size_t len);
/* Give back what iw_pages_alloc(len) returned (NULL: nothing). */
void iw_pages_free(void *p, size_t len);
/* Bytes currently mapped through iw_pages_alloc, whole process. */
size_t iw_pages_mapped(void);

struct iw_qp_cap;
/* Bytes of queue storage (before page rounding) a QP with these final
 * caps maps (qp.c); receive fields 0 for a QP on an SRQ. */
size_t iw_qp_mem_len(const struct iw_qp_cap *cap);

#endif
