/*
 * Unit tests for the page allocator (cmd/mc-peer/pages.c) through the DRAM
 * arena (cmd/mc-peer/arena.c) that maps its bytes:
 * pages, no overlap, coalescing on release, a full arena refusing, a
 * random run against a model of which pages are in use, and taking
 * exact ranges.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "tap.h"

#define PAGES 256u

static void
test_basics(void)
{
	struct mc_err err;
	struct arena *a = arena_new(PAGES * ARENA_PAGE + 100, &err);
	uint64_t o1, o2, o3;

	TAP_OK(a != NULL, "new: an arena of %u pages", PAGES);
	TAP_OK(pages_capacity(arena_pages(a)) == PAGES * ARENA_PAGE,
	       "new: the size is rounded down to whole pages");
	TAP_OK(pages_used(arena_pages(a)) == 0 &&
		       pages_largest_free(arena_pages(a)) == PAGES * ARENA_PAGE &&
		       pages_free_extents(arena_pages(a)) == 1,
	       "new: one free extent, nothing used");
	TAP_OK(pages_alloc(arena_pages(a), 1, &o1, &err) == 0 &&
		       pages_used(arena_pages(a)) == ARENA_PAGE,
	       "alloc: one byte takes a whole page");
	TAP_OK(pages_alloc(arena_pages(a), ARENA_PAGE + 1, &o2, &err) == 0 &&
		       pages_used(arena_pages(a)) == 3 * ARENA_PAGE,
	       "alloc: a page and a byte take two");
	TAP_OK(pages_alloc(arena_pages(a), UINT64_MAX, &o3, &err) == -1 &&
		       err.code == MC_ERR_NO_SPACE &&
		       pages_alloc(arena_pages(a), UINT64_MAX - ARENA_PAGE + 2, &o3, &err) == -1 &&
		       pages_used(arena_pages(a)) == 3 * ARENA_PAGE,
	       "alloc: nearly 2^64 bytes is no space, not a wrapped page or two");
	TAP_OK(pages_alloc(arena_pages(a), ARENA_PAGE, &o3, &err) == 0 && o1 % ARENA_PAGE == 0 &&
		       o2 % ARENA_PAGE == 0 && o3 % ARENA_PAGE == 0,
	       "alloc: offsets are page-aligned");
	TAP_OK((o2 >= o1 + ARENA_PAGE || o1 >= o2 + 2 * ARENA_PAGE) &&
		       (o3 >= o2 + 2 * ARENA_PAGE || o2 >= o3 + ARENA_PAGE),
	       "alloc: extents do not overlap");
	memset(arena_ptr(a, o2), 0xab, ARENA_PAGE + 1);
	TAP_OK(((unsigned char *)arena_ptr(a, o2))[ARENA_PAGE] == 0xab,
	       "ptr: the bytes are the caller's, writable");
	/* release the middle, then its neighbours: one extent again */
	pages_release(arena_pages(a), o2, ARENA_PAGE + 1);
	pages_release(arena_pages(a), o1, 1);
	pages_release(arena_pages(a), o3, ARENA_PAGE);
	TAP_OK(pages_used(arena_pages(a)) == 0 && pages_free_extents(arena_pages(a)) == 1 &&
		       pages_largest_free(arena_pages(a)) == PAGES * ARENA_PAGE,
	       "release: neighbours coalesce back into one extent (%llu extents)",
	       (unsigned long long)pages_free_extents(arena_pages(a)));
	arena_free_all(a);
}

static void
test_full(void)
{
	struct mc_err err;
	struct arena *a = arena_new(8 * ARENA_PAGE, &err);
	uint64_t off[8], o;
	int ok = 1;

	for (int i = 0; i < 8; i++)
		ok &= pages_alloc(arena_pages(a), ARENA_PAGE, &off[i], &err) == 0;
	TAP_OK(ok && pages_used(arena_pages(a)) == 8 * ARENA_PAGE, "full: eight pages fill eight");
	TAP_OK(pages_alloc(arena_pages(a), 1, &o, &err) != 0 && err.code == MC_ERR_NO_SPACE,
	       "full: one more byte is no_space: %s", err.msg);
	/* every other page free: fragmented, nothing of two pages fits */
	for (int i = 0; i < 8; i += 2)
		pages_release(arena_pages(a), off[i], ARENA_PAGE);
	TAP_OK(pages_largest_free(arena_pages(a)) == ARENA_PAGE &&
		       pages_free_extents(arena_pages(a)) == 4 &&
		       pages_alloc(arena_pages(a), 2 * ARENA_PAGE, &o, &err) != 0,
	       "fragmented: four single pages free, two pages do not fit");
	TAP_OK(pages_alloc(arena_pages(a), ARENA_PAGE, &o, &err) == 0,
	       "fragmented: one page still does");
	arena_free_all(a);
}

/* Random allocations and releases against a model of the pages in use. */
static void
test_random(void)
{
	enum { LIVE = 64, STEPS = 20000 };
	struct mc_err err;
	struct arena *a = arena_new(PAGES * ARENA_PAGE, &err);
	static bool used[PAGES];
	uint64_t off[LIVE], len[LIVE], in_use = 0;
	bool live[LIVE] = { false };
	int ok = 1, refused = 0;

	memset(used, 0, sizeof(used));
	tap_rng_state = 7;
	for (int s = 0; s < STEPS && ok; s++) {
		int i = (int)(tap_rng() % LIVE);
		uint64_t first, pages;

		if (live[i]) {
			first = off[i] / ARENA_PAGE;
			pages = (len[i] + ARENA_PAGE - 1) / ARENA_PAGE;
			for (uint64_t p = first; p < first + pages; p++)
				used[p] = false;
			pages_release(arena_pages(a), off[i], len[i]);
			in_use -= pages;
			live[i] = false;
			continue;
		}
		len[i] = 1 + tap_rng() % (8 * ARENA_PAGE);
		if (pages_alloc(arena_pages(a), len[i], &off[i], &err) != 0) {
			ok &= err.code == MC_ERR_NO_SPACE;
			refused++;
			continue;
		}
		first = off[i] / ARENA_PAGE;
		pages = (len[i] + ARENA_PAGE - 1) / ARENA_PAGE;
		ok &= off[i] % ARENA_PAGE == 0 && first + pages <= PAGES;
		for (uint64_t p = first; ok && p < first + pages; p++) {
			ok &= !used[p]; /* never hands out a page in use */
			used[p] = true;
		}
		in_use += pages;
		live[i] = true;
		ok &= pages_used(arena_pages(a)) == in_use * ARENA_PAGE;
	}
	TAP_OK(ok, "random: %d steps without overlap, used always exact (%d refused when full)",
	       STEPS, refused);
	for (int i = 0; i < LIVE; i++)
		if (live[i])
			pages_release(arena_pages(a), off[i], len[i]);
	TAP_OK(pages_used(arena_pages(a)) == 0 && pages_free_extents(arena_pages(a)) == 1,
	       "random: everything released is one extent again");
	arena_free_all(a);
}

/* Taking exact ranges, as a medium rebuilding its allocation does. */
static void
test_take(void)
{
	struct mc_err err;
	struct pages *pg = pages_new(16 * PAGES_SIZE, &err);
	uint64_t o;
	int n = 0;

	TAP_OK(pages_take(pg, 0, PAGES_SIZE, &err) == 0 &&
		       pages_take(pg, 3 * PAGES_SIZE, 2 * PAGES_SIZE + 1, &err) == 0 &&
		       pages_take(pg, 15 * PAGES_SIZE, 1, &err) == 0,
	       "take: the first page, three pages in the middle, the last page");
	TAP_OK(pages_used(pg) == 5 * PAGES_SIZE && pages_free_extents(pg) == 2 &&
		       pages_largest_free(pg) == 9 * PAGES_SIZE,
	       "take: what is left is the two gaps between (%llu extents)",
	       (unsigned long long)pages_free_extents(pg));
	TAP_OK(pages_take(pg, 4 * PAGES_SIZE, PAGES_SIZE, &err) == -1 &&
		       err.code == MC_ERR_INVALID &&
		       pages_take(pg, 2 * PAGES_SIZE, 2 * PAGES_SIZE, &err) == -1 &&
		       pages_take(pg, 16 * PAGES_SIZE, 1, &err) == -1 &&
		       pages_take(pg, 100, 1, &err) == -1,
	       "take: a range not wholly free, outside or unaligned is refused (%s)", err.msg);
	while (pages_alloc(pg, PAGES_SIZE, &o, &err) == 0) {
		TAP_OK(o != 0 && !(o >= 3 * PAGES_SIZE && o < 6 * PAGES_SIZE) &&
			       o != 15 * PAGES_SIZE,
		       "take: alloc never hands out taken pages (%llu)", (unsigned long long)o);
		n++;
	}
	TAP_OK(n == 11, "take: the 11 other pages are all handed out");
	pages_release(pg, 3 * PAGES_SIZE, 2 * PAGES_SIZE + 1);
	TAP_OK(pages_used(pg) == 13 * PAGES_SIZE && pages_largest_free(pg) == 3 * PAGES_SIZE,
	       "take: a taken range is released like an allocated one");
	pages_free(pg);
}

/* Many ranges taken in one pass, as a medium taking back what lies out of order does. */
static void
test_take_sorted(void)
{
	struct mc_err err;
	struct pages *pg = pages_new(16 * PAGES_SIZE, &err);
	struct pages_range r[] = {
		{ 2 * PAGES_SIZE, PAGES_SIZE, true },	  { 2 * PAGES_SIZE, 2 * PAGES_SIZE, true },
		{ 5 * PAGES_SIZE, PAGES_SIZE + 1, true }, { 8 * PAGES_SIZE, PAGES_SIZE, true },
		{ 15 * PAGES_SIZE, PAGES_SIZE, true },	  { 16 * PAGES_SIZE, PAGES_SIZE, false },
	};
	uint64_t o;
	int n = 0;
	bool apart = true;

	pages_take(pg, 8 * PAGES_SIZE, PAGES_SIZE, &err);
	TAP_OK(pages_take_sorted(pg, r, 6, &err) == 0 && r[0].taken && !r[1].taken && r[2].taken &&
		       !r[3].taken && r[4].taken && !r[5].taken,
	       "take sorted: free ranges are taken; one over an earlier range, over space taken "
	       "before, or outside is not");
	TAP_OK(pages_used(pg) == 5 * PAGES_SIZE, "take sorted: and used counts what was taken");
	while (pages_alloc(pg, PAGES_SIZE, &o, &err) == 0) {
		apart = apart && o != 2 * PAGES_SIZE && o != 5 * PAGES_SIZE &&
			o != 6 * PAGES_SIZE && o != 8 * PAGES_SIZE && o != 15 * PAGES_SIZE;
		n++;
	}
	TAP_OK(n == 11 && apart, "take sorted: alloc hands out only the 11 other pages (%d)", n);
	pages_free(pg);
}

/* An allocator in sectors: the space is still whole pages, handed out 512 bytes at a time. */
static void
test_unit(void)
{
	struct mc_err err;
	struct pages *pg = pages_new_unit(4 * PAGES_SIZE + 700, PAGES_MIN_UNIT, &err);
	uint64_t a = 1, b = 1, c = 1;
	int n = 0;

	TAP_OK(pg && pages_capacity(pg) == 4 * PAGES_SIZE,
	       "unit: the size is rounded down to whole pages");
	TAP_OK(pg && pages_alloc(pg, 1, &a, &err) == 0 && pages_alloc(pg, 513, &b, &err) == 0 &&
		       pages_used(pg) == 3 * PAGES_MIN_UNIT && a % PAGES_MIN_UNIT == 0 &&
		       b % PAGES_MIN_UNIT == 0 && a != b,
	       "unit: one byte takes a sector, 513 take two");
	TAP_OK(pg && pages_take(pg, 5 * PAGES_MIN_UNIT, PAGES_MIN_UNIT, &err) == 0 &&
		       pages_take(pg, 5 * PAGES_MIN_UNIT + 100, 1, &err) == -1,
	       "unit: take works on sector bounds and refuses others");
	pages_release(pg, b, 513);
	while (pg && pages_alloc(pg, PAGES_MIN_UNIT, &c, &err) == 0)
		n++;
	TAP_OK(n == 4 * PAGES_SIZE / PAGES_MIN_UNIT - 2,
	       "unit: every other sector is handed out (%d)", n);
	pages_free(pg);
}

int
main(void)
{
	test_basics();
	test_full();
	test_random();
	test_take();
	test_unit();
	test_take_sorted();
	return tap_done();
}
