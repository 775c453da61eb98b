/*
 * pool_evict and the one free it ends in. Demotion is a hand-off to the
 * mover, never a copy made here: the caller may be the event loop.
 */
#include <string.h>

#include "pool.h"

static const char *const reason_names[POOL_REASON_COUNT] = {
	[POOL_RECLAIM] = "reclaim",
	[POOL_DELETE] = "delete",
};

void
pool_init(struct pool *pl, struct pindex *ix)
{
	memset(pl, 0, sizeof(*pl));
	pl->ix = ix;
	for (int t = 0; t < MC_TIER_COUNT; t++)
		for (int r = 0; r < POOL_REASON_COUNT; r++)
			atomic_init(&pl->freed[t][r], 0);
}

/* Drop the unlinked o, whose index reference the caller now holds. */
static void
drop(struct pool *pl, struct pobj *o, enum pool_reason why, struct pool_result *res)
{
	res->outcome = POOL_FREED;
	res->tier = o->tier;
	res->bytes = o->size;
	atomic_fetch_add_explicit(&pl->freed[o->tier][why], 1, memory_order_relaxed);
	res->held = !pindex_release(pl->ix, o);
}

/* The first tier below tier that this peer holds, or MC_TIER_NONE. */
static int
below(const struct pool *pl, int tier)
{
	int t = mc_tier_downstream(tier);

	while (t != MC_TIER_NONE && !pl->ix->media[t])
		t = mc_tier_downstream(t);
	return t;
}

int
pool_commit(struct pool *pl, struct pobj *o, struct mc_err *err)
{
	struct pool_result res;
	struct pobj *old;
	int rc = pindex_publish(pl->ix, o, &old, err);

	if (old)
		drop(pl, old, POOL_DELETE, &res);
	return rc;
}

/*
 * Hand a copy being reclaimed to the mover, when there is one and a
 * tier below the copy's: true once it is queued.
 */
static bool
demoted(struct pool *pl, const struct pool_key *k, int tier, struct pool_result *res)
{
	uint64_t version;
	int at, to;

	if (!pl->demote ||
	    !pindex_version(pl->ix, k->tenant, k->tenant_len, k->key, k->key_len, &version, &at))
		return false;
	if ((tier != MC_TIER_NONE && at != tier) || (k->has_version && version > k->max_version))
		return false;
	to = below(pl, at);
	if (to == MC_TIER_NONE || pl->demote(pl->demote_arg, k, at, to) < 0)
		return false;
	res->outcome = POOL_DEMOTING;
	res->tier = at;
	return true;
}

void
pool_evict(struct pool *pl, const struct pool_key *k, int tier, enum pool_reason why,
	   struct pool_result *res)
{
	struct pobj *o;

	memset(res, 0, sizeof(*res));
	res->outcome = POOL_NONE;
	res->tier = MC_TIER_NONE;
	if (why == POOL_RECLAIM && demoted(pl, k, tier, res))
		return;
	o = pindex_unlink(pl->ix, k->tenant, k->tenant_len, k->key, k->key_len, tier,
			  k->has_version, k->max_version);
	if (o)
		drop(pl, o, why, res);
}

uint64_t
pool_evictions(struct pool *pl, int tier, enum pool_reason why)
{
	return atomic_load_explicit(&pl->freed[tier][why], memory_order_relaxed);
}

const char *
pool_reason_name(enum pool_reason why)
{
	return reason_names[why];
}
