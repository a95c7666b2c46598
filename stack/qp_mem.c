/* Page-backed storage (see qp_mem.h). */
#include "qp_mem.h"

#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

static atomic_size_t mapped;

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (len + pg - 1) / pg * pg;
}

void *iw_pages_alloc(size_t len)
{
	if (len == 0)
		return NULL;
	len = page_round(len);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_NOHUGEPAGE
	/* Neighbouring QPs' mappings merge into one region; with THP set to
	 * "always" one WR's first touch could make a whole 2 MiB resident. */
	(void)madvise(p, len, MADV_NOHUGEPAGE);
#endif
	atomic_fetch_add(&mapped, len);
	return p;
}

void iw_pages_free(void *p, size_t len)
{
	if (!p)
		return;
	len = page_round(len);
	munmap(p, len);
	atomic_fetch_sub(&mapped, len);
}

size_t iw_pages_mapped(void)
{
	return atomic_load(&mapped);
}
