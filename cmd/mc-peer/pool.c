/*
 * pool_evict and the one free it ends in. Demotion is a hand-off to the
 * mover, never a copy made here: the caller may be the event loop.
 */
#include <stdlib.h>
#include <string.h>

#include "pool.h"

static const char *const reason_names[POOL_REASON_COUNT] = {
	[POOL_RECLAIM] = "reclaim",
	[POOL_DELETE] = "delete",
};

static const char *const outcome_names[POOL_OUTCOMES] = {
	[POOL_NONE] = "none",
	[POOL_FREED] = "freed",
	[POOL_DEMOTING] = "demotion_queued",
	[POOL_IN_FLIGHT] = "in_flight",
};

static const char *const drop_why_names[POOL_DROP_WHYS] = {
	[POOL_DROP_RECLAIM] = "reclaim",
	[POOL_DROP_NO_SPACE] = "no_space",
	[POOL_DROP_FAILED] = "failed",
};

void
pool_init(struct pool *pl, struct pindex *ix)
{
	memset(pl, 0, sizeof(*pl));
	pl->ix = ix;
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		for (int r = 0; r < POOL_REASON_COUNT; r++)
			atomic_init(&pl->freed[t][r], 0);
		for (int w = 0; w < POOL_DROP_WHYS; w++)
			atomic_init(&pl->dropped[t][w], 0);
	}
	for (int oc = 0; oc < POOL_OUTCOMES; oc++)
		atomic_init(&pl->outcomes[oc], 0);
}

static void
count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/*
 * Drop the unlinked o, whose index reference the caller now holds; a
 * drop for capacity says why to on_drop first. Outside the index lock:
 * the bytes go back in pindex_release, or when the last reader ends.
 */
static void
drop(struct pool *pl, struct pobj *o, enum pool_reason why, enum pool_drop_why dwhy,
     struct pool_result *res)
{
	res->outcome = POOL_FREED;
	res->tier = o->tier;
	res->bytes = o->size;
	count(&pl->freed[o->tier][why]);
	if (why == POOL_RECLAIM) {
		/* gone for room, not for good: a key written again resumes its value */
		pindex_evicted(pl->ix, o);
		count(&pl->dropped[o->tier][dwhy]);
		if (pl->on_drop)
			pl->on_drop(pl->on_drop_arg, o, dwhy);
	}
	/*
	 * Gone for good now, not when the last reader lets go: a crash
	 * while one still reads must not bring it back.
	 */
	medium_unseal(pl->ix->media[o->tier], o->off, o->size);
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
		drop(pl, old, POOL_DELETE, POOL_DROP_RECLAIM, &res);
	return rc;
}

/*
 * Hand a copy being reclaimed to the mover, when there is one and a
 * tier below the copy's: true once it is queued or was already in
 * flight (res says which). *dwhy says why it is dropped otherwise. A
 * dynamic replica is dropped as a copy with no tier below it is: its
 * original is on another peer, and the room below is for copies that
 * have none.
 */
static bool
demoted(struct pool *pl, const struct pool_key *k, int tier, struct pool_result *res,
	enum pool_drop_why *dwhy)
{
	struct pindex_peek pk;
	int at, to, r;

	*dwhy = POOL_DROP_RECLAIM;
	if (!pindex_peek(pl->ix, k->tenant, k->tenant_len, k->key, k->key_len, &pk))
		return false;
	at = pk.tier;
	if ((tier != MC_TIER_NONE && at != tier) ||
	    (k->has_version && pk.version > k->max_version) || pk.dynamic)
		return false;
	to = below(pl, at);
	if (to == MC_TIER_NONE || !pl->demote)
		return false;
	if ((r = pl->demote(pl->demote_arg, k, at, to)) < 0) {
		*dwhy = POOL_DROP_NO_SPACE;
		return false;
	}
	res->outcome = r == 0 ? POOL_DEMOTING : POOL_IN_FLIGHT;
	res->tier = at;
	return true;
}

static void
result_none(struct pool_result *res)
{
	memset(res, 0, sizeof(*res));
	res->outcome = POOL_NONE;
	res->tier = MC_TIER_NONE;
}

/* Unlink k's copy on tier and drop it; res says whether there was one. */
static void
unlink_drop(struct pool *pl, const struct pool_key *k, int tier, enum pool_reason why,
	    enum pool_drop_why dwhy, struct pool_result *res)
{
	struct pobj *o = pindex_unlink(pl->ix, k->tenant, k->tenant_len, k->key, k->key_len, tier,
				       k->has_version, k->max_version);

	if (o)
		drop(pl, o, why, dwhy, res);
}

void
pool_evict(struct pool *pl, const struct pool_key *k, int tier, enum pool_reason why,
	   struct pool_result *res)
{
	enum pool_drop_why dwhy = POOL_DROP_RECLAIM;

	result_none(res);
	if (why != POOL_RECLAIM || !demoted(pl, k, tier, res, &dwhy))
		unlink_drop(pl, k, tier, why, dwhy, res);
	count(&pl->outcomes[res->outcome]);
}

void
pool_drop(struct pool *pl, const struct pool_key *k, int tier, enum pool_drop_why why,
	  struct pool_result *res)
{
	result_none(res);
	unlink_drop(pl, k, tier, POOL_RECLAIM, why, res);
}

/* ---- recovery ---- */

struct recovered {
	struct pool *pl;
	int tier;
	struct pobj **v;
	size_t n, cap;
	bool oom;
};

static int
recovered_one(void *arg, uint64_t off, const struct medium_meta *mm)
{
	struct recovered *rc = arg;
	struct pobj *o, **v;

	if (rc->n == rc->cap) {
		size_t cap = rc->cap ? rc->cap * 2 : 256;

		if (!(v = realloc(rc->v, cap * sizeof(*v)))) {
			rc->oom = true;
			return -1;
		}
		rc->v = v;
		rc->cap = cap;
	}
	o = pobj_new(rc->pl->ix, mm->tenant, mm->tenant_len, mm->key, mm->key_len, mm->version,
		     mm->size, mm->checksum, rc->tier, off);
	if (!o) {
		rc->oom = true;
		return -1;
	}
	if (mm->type_len > 0 || mm->group_len > 0 || mm->hard_pin || mm->dynamic ||
	    mm->sp_deadline > 0 || mm->receipt != NULL) {
		o->meta = pmeta_new(mm->type, mm->type_len, mm->group, mm->group_len, mm->hard_pin,
				    mm->sp_deadline);
		if (!o->meta) {
			/* Its extent is the medium's to release: this entry never owned it. */
			o->size = 0;
			pindex_release(rc->pl->ix, o);
			rc->oom = true;
			return -1;
		}
	}
	if (o->meta != NULL) {
		pmeta_set_receipt(o->meta, mm->receipt);
		o->meta->dynamic = mm->dynamic;
	}
	rc->v[rc->n++] = o;
	return 0;
}

int
pool_recover(struct pool *pl, int tier, uint64_t *found, struct mc_err *err)
{
	struct recovered rc = { .pl = pl, .tier = tier };
	struct mc_err cerr;
	int rc_code;

	*found = 0;
	rc_code = medium_recover(pl->ix->media[tier], recovered_one, &rc, err);
	/*
	 * Linked only once the medium has its extents back, so that a copy
	 * that loses to a newer one frees its extent the usual way.
	 */
	for (size_t i = 0; i < rc.n; i++) {
		if (pool_commit(pl, rc.v[i], &cerr) < 0)
			pindex_release(pl->ix, rc.v[i]);
	}
	free(rc.v);
	*found = pindex_tier_objects(pl->ix, tier);
	if (rc_code < 0)
		return -1;
	if (rc.oom)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory recovering the %s tier",
				  mc_tier_name(tier));
	return 0;
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

const char *
pool_outcome_name(enum pool_outcome oc)
{
	return outcome_names[oc];
}

const char *
pool_drop_why_name(enum pool_drop_why why)
{
	return drop_why_names[why];
}
