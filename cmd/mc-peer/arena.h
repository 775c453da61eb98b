/*
 * The DRAM medium's bytes (medium_dram.c): one anonymous mapping of the
 * configured size, its space handed out by the page allocator (pages.h).
 *
 * The mapping is MAP_NORESERVE and nothing is touched up front, so a
 * large arena costs nothing until objects land in it. All calls are
 * thread-safe; the bytes themselves are the caller's.
 */
#ifndef MC_PEER_ARENA_H
#define MC_PEER_ARENA_H

#include <stdint.h>

#include "mc/err.h"

#include "pages.h"

#define ARENA_PAGE PAGES_SIZE

struct arena;

/* size is rounded down to whole pages; at least one page. */
struct arena *arena_new(uint64_t size, struct mc_err *err);
void arena_free_all(struct arena *a);

/* The arena's space: allocate and release through pages.h. */
struct pages *arena_pages(const struct arena *a);
void *arena_ptr(const struct arena *a, uint64_t off);

#endif
