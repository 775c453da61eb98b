/*
 * The heap queue of the reference caches (RC_HEAP): a binary min-heap
 * of resident entries by (count, stamp), so its root is the entry with
 * the fewest uses and, among those, the oldest last use. lfu orders by
 * both; lru-leaf leaves every count at 0, so its heap is by stamp alone.
 * Each entry keeps its index, so one anywhere in the heap can be
 * re-sifted or taken out in O(log n).
 */
#include <stdlib.h>

#include "refcache_impl.h"

#define HEAP_MIN 64

bool
mc_rc_heap_before(const struct rc_entry *a, const struct rc_entry *b)
{
	if (a->count != b->count)
		return a->count < b->count;
	return a->stamp < b->stamp;
}

static void
place(struct mc_refcache *c, struct rc_entry *e, size_t i)
{
	c->heap[i] = e;
	e->heap = i;
}

static void
sift_up(struct mc_refcache *c, size_t i)
{
	struct rc_entry *e = c->heap[i];

	while (i > 0 && mc_rc_heap_before(e, c->heap[(i - 1) / 2])) {
		place(c, c->heap[(i - 1) / 2], i);
		i = (i - 1) / 2;
	}
	place(c, e, i);
}

static void
sift_down(struct mc_refcache *c, size_t i)
{
	size_t n = c->q[RC_HEAP].n;
	struct rc_entry *e = c->heap[i];

	for (;;) {
		size_t m = 2 * i + 1;

		if (m >= n)
			break;
		if (m + 1 < n && mc_rc_heap_before(c->heap[m + 1], c->heap[m]))
			m++;
		if (!mc_rc_heap_before(c->heap[m], e))
			break;
		place(c, c->heap[m], i);
		i = m;
	}
	place(c, e, i);
}

int
mc_rc_heap_reserve(struct mc_refcache *c, struct mc_err *err)
{
	struct rc_entry **heap;
	size_t cap;

	if (c->q[RC_HEAP].n < c->heap_cap)
		return 0;
	cap = c->heap_cap ? c->heap_cap * 2 : HEAP_MIN;
	if (cap > SIZE_MAX / sizeof(*heap))
		return mc_err_set(err, MC_ERR_NO_SPACE, "heap of %zu entries is too large", cap);
	heap = realloc(c->heap, cap * sizeof(*heap));
	if (heap == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a heap of %zu", cap);
	c->heap = heap;
	c->heap_cap = cap;
	return 0;
}

void
mc_rc_heap_add(struct mc_refcache *c, struct rc_entry *e)
{
	mc_rc_enter(c, e, RC_HEAP);
	place(c, e, c->q[RC_HEAP].n - 1);
	sift_up(c, e->heap);
}

void
mc_rc_heap_fix(struct mc_refcache *c, struct rc_entry *e)
{
	size_t i = e->heap;

	sift_up(c, i);
	if (e->heap == i)
		sift_down(c, i);
}

/* Take e out of the heap, its last entry filling the hole; e's queue is left to the caller. */
static void
unheap(struct mc_refcache *c, struct rc_entry *e)
{
	size_t i = e->heap, last = c->q[RC_HEAP].n - 1;

	if (i != last) {
		place(c, c->heap[last], i);
		c->heap[last] = e;
		e->heap = last;
	}
}

void
mc_rc_heap_leave(struct mc_refcache *c, struct rc_entry *e)
{
	size_t i = e->heap;
	bool moved = i != c->q[RC_HEAP].n - 1;

	unheap(c, e);
	mc_rc_leave(c, e);
	if (moved)
		mc_rc_heap_fix(c, c->heap[i]);
}

void
mc_rc_heap_evict(struct mc_refcache *c, struct rc_entry *e, enum rc_queue ghost)
{
	size_t i = e->heap;
	bool moved = i != c->q[RC_HEAP].n - 1;

	unheap(c, e);
	mc_rc_evict(c, e, ghost);
	if (moved)
		mc_rc_heap_fix(c, c->heap[i]);
}

int
mc_rc_heap_check(const struct mc_refcache *c, struct mc_err *err)
{
	size_t i, n = c->q[RC_HEAP].n;
	uint64_t bytes = 0;

	if (n > c->heap_cap)
		return mc_err_set(err, MC_ERR_INTERNAL, "%zu entries, heap of %zu", n, c->heap_cap);
	for (i = 0; i < n; i++) {
		const struct rc_entry *e = c->heap[i];

		if (e->heap != i || e->where != RC_HEAP)
			return mc_err_set(err, MC_ERR_INTERNAL, "bad heap entry at %zu", i);
		if (i > 0 && mc_rc_heap_before(e, c->heap[(i - 1) / 2]))
			return mc_err_set(err, MC_ERR_INTERNAL, "heap order broken at %zu", i);
		if (mc_refcache_queue(c, e->key) == NULL)
			return mc_err_set(err, MC_ERR_INTERNAL, "heap entry not indexed");
		bytes += e->size;
	}
	if (bytes != c->q[RC_HEAP].bytes)
		return mc_err_set(err, MC_ERR_INTERNAL, "heap bytes disagree");
	return 0;
}

void
mc_rc_heap_fini(struct mc_refcache *c)
{
	free(c->heap);
}
