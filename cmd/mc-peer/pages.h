/*
 * A page allocator over offsets: the space of one medium, handed out in
 * whole 4 KiB pages, or in a smaller unit that divides one (the SSD
 * medium's sectors), with no memory or file behind it (the DRAM arena
 * maps its bytes, the SSD medium keeps them in a file). Below, a page is
 * the allocator's unit.
 *
 * Space is handed out from free extents: freeing coalesces with both
 * neighbours at once (boundary tags kept beside the space, never in
 * it), and allocation is a good fit found in O(1) from segregated free
 * lists (8 lists per power of two, with a bitmap of non-empty lists).
 * All calls are thread-safe.
 */
#ifndef MC_PEER_PAGES_H
#define MC_PEER_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

#define PAGES_SIZE 4096u
/* The smallest unit: a disk sector. */
#define PAGES_MIN_UNIT 512u
/* The most units one allocator counts. */
#define PAGES_MAX (UINT32_MAX - 2u)

struct pages;

/* size is rounded down to whole pages; at least one page. */
struct pages *pages_new(uint64_t size, struct mc_err *err);
/*
 * The same, handed out in units of unit bytes (a power of two from
 * PAGES_MIN_UNIT to PAGES_SIZE); size is still rounded down to whole
 * 4 KiB pages. The bookkeeping costs 4 bytes of address space per unit,
 * touched only at the bounds of free extents.
 */
struct pages *pages_new_unit(uint64_t size, uint32_t unit, struct mc_err *err);
void pages_free(struct pages *a);

/*
 * Reserve len bytes (len > 0) and return their offset in *off. Fails with
 * MC_ERR_NO_SPACE when no free extent is large enough, MC_ERR_SYSTEM
 * when bookkeeping memory ran out.
 */
int pages_alloc(struct pages *a, uint64_t len, uint64_t *off, struct mc_err *err);
/*
 * Reserve exactly the len bytes at off (page-aligned), which must be
 * free: how a medium that keeps its copies across restarts rebuilds
 * its allocation. MC_ERR_INVALID when they are not free.
 */
int pages_take(struct pages *a, uint64_t off, uint64_t len, struct mc_err *err);
/*
 * pages_take for each of n ranges sorted by offset, in one pass over the
 * free extents (pages_take is quick only for ranges taken in ascending
 * order): taken says whether a range was free and is now reserved; one
 * that overlaps space taken before, or an earlier range, is not. -1
 * when bookkeeping memory ran out (then some may be taken: see taken).
 */
struct pages_range {
	uint64_t off, len;
	bool taken;
};
int pages_take_sorted(struct pages *a, struct pages_range *r, size_t n, struct mc_err *err);
/* Give back what pages_alloc(len) or pages_take(len) reserved at off. Never fails. */
void pages_release(struct pages *a, uint64_t off, uint64_t len);

uint64_t pages_capacity(const struct pages *a);
/* Bytes handed out, in whole units. */
uint64_t pages_used(struct pages *a);
/* Free extents (for tests and debugging of fragmentation). */
uint64_t pages_free_extents(struct pages *a);
/* Largest single allocation that would succeed now. */
uint64_t pages_largest_free(struct pages *a);

#endif
