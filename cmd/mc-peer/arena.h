/*
 * The DRAM medium's allocator (medium_dram.c): one anonymous mapping of
 * the configured size and a page allocator over it.
 *
 * The mapping is MAP_NORESERVE and nothing is touched up front, so a
 * large arena costs nothing until objects land in it. Space is handed
 * out in whole 4 KiB pages from free extents: freeing coalesces with
 * both neighbours at once (boundary tags kept beside the arena, never in
 * it), and allocation is a good fit found in O(1) from segregated free
 * lists (8 lists per power of two, with a bitmap of non-empty lists).
 * All calls are thread-safe; the bytes themselves are the caller's.
 */
#ifndef MC_PEER_ARENA_H
#define MC_PEER_ARENA_H

#include <stdint.h>

#include "mc/err.h"

#define ARENA_PAGE 4096u

struct arena;

/* size is rounded down to whole pages; at least one page. */
struct arena *arena_new(uint64_t size, struct mc_err *err);
void arena_free_all(struct arena *a);

/*
 * Reserve len bytes (len > 0) and return their offset in *off. Fails with
 * MC_ERR_NO_SPACE when no free extent is large enough, MC_ERR_SYSTEM
 * when bookkeeping memory ran out.
 */
int arena_alloc(struct arena *a, uint64_t len, uint64_t *off, struct mc_err *err);
/* Give back what arena_alloc(len) returned at off. Never fails. */
void arena_release(struct arena *a, uint64_t off, uint64_t len);

void *arena_ptr(const struct arena *a, uint64_t off);
uint64_t arena_capacity(const struct arena *a);
/* Bytes handed out, in whole pages. */
uint64_t arena_used(struct arena *a);
/* Free extents (for tests and debugging of fragmentation). */
uint64_t arena_free_extents(struct arena *a);
/* Largest single allocation that would succeed now. */
uint64_t arena_largest_free(struct arena *a);

#endif
