/*
 * lfu and lfu-restart: a binary min-heap of the resident entries by
 * (uses, time of the last use), so the victim is the least frequently
 * used and, among those, the least recently used. A hit only raises its
 * entry's key, so it sifts down; the logical clock makes every stamp
 * distinct and the order total. O(log n) per hit, admission and
 * eviction.
 *
 * lfu moves a victim, count and all, to a ghost FIFO bounded at
 * GHOST_CAPACITIES x capacity bytes (each ghost weighs the object it
 * remembers), and a readmission resumes from the count. lfu-restart
 * keeps no ghosts.
 */
#include <stdlib.h>

#include "refcache_impl.h"

#define GHOST_CAPACITIES 4
#define HEAP_MIN 64

/* Whether a is evicted before b. */
static bool
before(const struct rc_entry *a, const struct rc_entry *b)
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

	while (i > 0 && before(e, c->heap[(i - 1) / 2])) {
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
		if (m + 1 < n && before(c->heap[m + 1], c->heap[m]))
			m++;
		if (!before(c->heap[m], e))
			break;
		place(c, c->heap[m], i);
		i = m;
	}
	place(c, e, i);
}

static uint64_t
ghost_bound(const struct mc_refcache *c)
{
	if (c->capacity > UINT64_MAX / GHOST_CAPACITIES)
		return UINT64_MAX;
	return c->capacity * GHOST_CAPACITIES;
}

static int
reserve(struct mc_refcache *c, struct mc_err *err)
{
	struct rc_entry **heap;
	size_t cap;

	if (c->q[RC_HEAP].n < c->heap_cap)
		return 0;
	cap = c->heap_cap ? c->heap_cap * 2 : HEAP_MIN;
	if (cap > SIZE_MAX / sizeof(*heap))
		return mc_err_set(err, MC_ERR_NO_SPACE, "lfu heap of %zu entries is too large",
				  cap);
	heap = realloc(c->heap, cap * sizeof(*heap));
	if (heap == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for an lfu heap of %zu",
				  cap);
	c->heap = heap;
	c->heap_cap = cap;
	return 0;
}

static void
hit(struct mc_refcache *c, struct rc_entry *e)
{
	e->count++;
	e->stamp = ++c->clock;
	sift_down(c, e->heap);
}

/* An insert is one use: 1 for a new key, one more than a ghost's count. */
static void
admit(struct mc_refcache *c, struct rc_entry *e, uint64_t size)
{
	uint64_t count = e->where == RC_GHOST ? e->count + 1 : 1;

	mc_rc_unghost(c, e, size);
	mc_rc_round(c, size);
	e->count = count;
	e->stamp = ++c->clock;
	/* reserve made room for this one */
	mc_rc_enter(c, e, RC_HEAP);
	place(c, e, c->q[RC_HEAP].n - 1);
	sift_up(c, e->heap);
}

/* Evict the heap's root into ghost (RC_NONE: forget it). */
static void
evict_root(struct mc_refcache *c, enum rc_queue ghost)
{
	struct rc_entry *last = c->heap[c->q[RC_HEAP].n - 1];

	mc_rc_evict(c, c->heap[0], ghost);
	if (c->q[RC_HEAP].n > 0) {
		place(c, last, 0);
		sift_down(c, 0);
	}
}

static void
evict_keep(struct mc_refcache *c)
{
	evict_root(c, RC_GHOST);
	mc_rc_trim(c, RC_GHOST, ghost_bound(c));
}

static void
evict_restart(struct mc_refcache *c)
{
	evict_root(c, RC_NONE);
}

static int
check(const struct mc_refcache *c, struct mc_err *err)
{
	size_t i, n = c->q[RC_HEAP].n;
	uint64_t bytes = 0;

	if (n > c->heap_cap)
		return mc_err_set(err, MC_ERR_INTERNAL, "lfu: %zu entries, heap of %zu", n,
				  c->heap_cap);
	for (i = 0; i < n; i++) {
		const struct rc_entry *e = c->heap[i];

		if (e->heap != i || e->where != RC_HEAP || e->count == 0)
			return mc_err_set(err, MC_ERR_INTERNAL, "lfu: bad heap entry at %zu", i);
		if (i > 0 && before(e, c->heap[(i - 1) / 2]))
			return mc_err_set(err, MC_ERR_INTERNAL, "lfu: heap order broken at %zu", i);
		if (mc_refcache_queue(c, e->key) == NULL)
			return mc_err_set(err, MC_ERR_INTERNAL, "lfu: heap entry not indexed");
		bytes += e->size;
	}
	if (bytes != c->q[RC_HEAP].bytes)
		return mc_err_set(err, MC_ERR_INTERNAL, "lfu: heap bytes disagree");
	if (c->q[RC_GHOST].bytes > ghost_bound(c))
		return mc_err_set(err, MC_ERR_INTERNAL, "lfu: ghosts over their bound");
	if (c->kind == MC_REF_LFU_RESTART && c->q[RC_GHOST].n != 0)
		return mc_err_set(err, MC_ERR_INTERNAL, "lfu-restart: keeps ghosts");
	return 0;
}

static void
fini(struct mc_refcache *c)
{
	free(c->heap);
}

const struct rc_ops mc_rc_lfu = {
	.reserve = reserve,
	.hit = hit,
	.admit = admit,
	.evict = evict_keep,
	.check = check,
	.fini = fini,
};

const struct rc_ops mc_rc_lfu_restart = {
	.reserve = reserve,
	.hit = hit,
	.admit = admit,
	.evict = evict_restart,
	.check = check,
	.fini = fini,
};
