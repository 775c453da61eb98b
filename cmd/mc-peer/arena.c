/*
 * The DRAM arena: one anonymous mapping and the page allocator over it.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "arena.h"

struct arena {
	unsigned char *base;
	uint64_t size;
	struct pages *pages;
};

struct arena *
arena_new(uint64_t size, struct mc_err *err)
{
	struct arena *a;

	a = calloc(1, sizeof(*a));
	if (!a) {
		mc_err_errno(err, "cannot allocate arena");
		return NULL;
	}
	a->base = MAP_FAILED;
	if (!(a->pages = pages_new(size, err)))
		goto fail;
	a->size = pages_capacity(a->pages);
	a->base = mmap(NULL, a->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED) {
		mc_err_errno(err, "cannot map %llu bytes of dram", (unsigned long long)a->size);
		goto fail;
	}
	/*
	 * Huge pages where the kernel offers them: objects are large and
	 * sent with writev, so fewer TLB misses in the kernel's copy pay
	 * for themselves. Only a hint; nothing is touched here.
	 */
#ifdef MADV_HUGEPAGE
	(void)madvise(a->base, a->size, MADV_HUGEPAGE);
#endif
	return a;
fail:
	arena_free_all(a);
	return NULL;
}

void
arena_free_all(struct arena *a)
{
	if (!a)
		return;
	if (a->base != MAP_FAILED)
		munmap(a->base, a->size);
	pages_free(a->pages);
	free(a);
}

struct pages *
arena_pages(const struct arena *a)
{
	return a->pages;
}

void *
arena_ptr(const struct arena *a, uint64_t off)
{
	return a->base + off;
}
