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
#include "refcache_impl.h"

#define GHOST_CAPACITIES 4

static uint64_t
ghost_bound(const struct mc_refcache *c)
{
	if (c->capacity > UINT64_MAX / GHOST_CAPACITIES)
		return UINT64_MAX;
	return c->capacity * GHOST_CAPACITIES;
}

static void
hit(struct mc_refcache *c, struct rc_entry *e)
{
	e->count++;
	e->stamp = ++c->clock;
	mc_rc_heap_fix(c, e);
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
	mc_rc_heap_add(c, e);
}

static void
evict_keep(struct mc_refcache *c)
{
	mc_rc_heap_evict(c, c->heap[0], RC_GHOST);
	mc_rc_trim(c, RC_GHOST, ghost_bound(c));
}

static void
evict_restart(struct mc_refcache *c)
{
	mc_rc_heap_evict(c, c->heap[0], RC_NONE);
}

static int
check(const struct mc_refcache *c, struct mc_err *err)
{
	if (mc_rc_heap_check(c, err) < 0)
		return -1;
	for (size_t i = 0; i < c->q[RC_HEAP].n; i++)
		if (c->heap[i]->count == 0)
			return mc_err_set(err, MC_ERR_INTERNAL, "lfu: no use counted at %zu", i);
	if (c->q[RC_GHOST].bytes > ghost_bound(c))
		return mc_err_set(err, MC_ERR_INTERNAL, "lfu: ghosts over their bound");
	if (c->kind == MC_REF_LFU_RESTART && c->q[RC_GHOST].n != 0)
		return mc_err_set(err, MC_ERR_INTERNAL, "lfu-restart: keeps ghosts");
	return 0;
}

const struct rc_ops mc_rc_lfu = {
	.reserve = mc_rc_heap_reserve,
	.hit = hit,
	.admit = admit,
	.evict = evict_keep,
	.check = check,
	.fini = mc_rc_heap_fini,
};

const struct rc_ops mc_rc_lfu_restart = {
	.reserve = mc_rc_heap_reserve,
	.hit = hit,
	.admit = admit,
	.evict = evict_restart,
	.check = check,
	.fini = mc_rc_heap_fini,
};
