/*
 * The pool: which copy goes where, and when a copy goes. The media know
 * their bytes (medium.h), the index knows the copies (index.h); the pool
 * decides.
 *
 * pool_evict is the one place a committed copy is freed, for either
 * reason:
 *   reclaim  for capacity: the copy moves down the tier chain
 *            (mc/tier.h) when this peer has a tier there and a mover
 *            that finds room in it, and is dropped otherwise. A move is
 *            queued, never made inside the call: the copy stays where
 *            it is, readable, until the mover swaps the new one in;
 *   delete   the copy must go (rm, the master's drop, a superseding
 *            upsert, cleanup after a peer's death): it is dropped,
 *            never moved.
 * A dropped copy leaves the index at once; its bytes go back when the
 * last reader holding them lets go. Frees are counted by tier and
 * reason, and every drop for capacity is told to the on_drop hook (the
 * master hears of it). Thread-safe as the index is; the hooks run on
 * the caller's thread.
 */
#ifndef MC_PEER_POOL_H
#define MC_PEER_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/tier.h"

#include "index.h"

enum pool_reason { POOL_RECLAIM, POOL_DELETE, POOL_REASON_COUNT };

enum pool_outcome {
	POOL_NONE,	/* no such copy: absent, on another tier, or newer than asked */
	POOL_FREED,	/* dropped */
	POOL_DEMOTING,	/* demotion queued; it stays where it is until the move commits */
	POOL_IN_FLIGHT, /* a transition owns the copy already: nothing more is done */
	POOL_OUTCOMES
};

/* "none", "freed", "demotion_queued", "in_flight": how an outcome is spelled. */
const char *pool_outcome_name(enum pool_outcome oc);

struct pool_result {
	enum pool_outcome outcome;
	int tier;	/* the copy's tier (MC_TIER_NONE with POOL_NONE) */
	uint64_t bytes; /* POOL_FREED: the copy's size */
	bool held;	/* POOL_FREED, but a reader holds the bytes until it is done */
};

/* Which copy: a (tenant, key), at most max_version when has_version. */
struct pool_key {
	const char *tenant;
	size_t tenant_len;
	const char *key;
	size_t key_len;
	bool has_version;
	uint64_t max_version;
};

/*
 * A mover: queue the copy k on tier from to be copied down to tier to,
 * without waiting. 0 once queued; 1 when a transition owns the copy
 * already; -1 when it cannot be (nothing there has room), and the pool
 * drops the copy instead.
 */
typedef int (*pool_demote_fn)(void *arg, const struct pool_key *k, int from, int to);

/* Why a copy was dropped for capacity, as the master is told. */
enum pool_drop_why {
	POOL_DROP_RECLAIM,  /* no tier below it */
	POOL_DROP_NO_SPACE, /* the tier below had no room */
	POOL_DROP_FAILED,   /* its move failed for good */
	POOL_DROP_WHYS
};

/* "reclaim", "no_space", "failed". */
const char *pool_drop_why_name(enum pool_drop_why why);

/* Told of a copy dropped for capacity; o is unlinked, still alive during the call. */
typedef void (*pool_drop_fn)(void *arg, const struct pobj *o, enum pool_drop_why why);

struct pool {
	struct pindex *ix;
	/* NULL until there is a worker to copy with: reclaim drops. */
	pool_demote_fn demote;
	void *demote_arg;
	/* NULL: nobody is told. */
	pool_drop_fn on_drop;
	void *on_drop_arg;
	_Atomic uint64_t freed[MC_TIER_COUNT][POOL_REASON_COUNT];
	_Atomic uint64_t outcomes[POOL_OUTCOMES];		 /* pool_evict calls, by outcome */
	_Atomic uint64_t dropped[MC_TIER_COUNT][POOL_DROP_WHYS]; /* capacity drops, by why */
};

/* Over the index, whose media table is the pool's. */
void pool_init(struct pool *pl, struct pindex *ix);

/*
 * Commit o (see pindex_publish: the caller's reference is taken over
 * unless MC_ERR_VERSION), freeing the copy it supersedes as a delete.
 */
int pool_commit(struct pool *pl, struct pobj *o, struct mc_err *err);

/*
 * Free k's copy on tier (MC_TIER_NONE: whichever tier holds it) for
 * why; *res says what happened.
 */
void pool_evict(struct pool *pl, const struct pool_key *k, int tier, enum pool_reason why,
		struct pool_result *res);

/*
 * Drop k's copy on tier for capacity, never moving it (a mover whose
 * move failed, or found no room): counted as a reclaim and told to
 * on_drop with why.
 */
void pool_drop(struct pool *pl, const struct pool_key *k, int tier, enum pool_drop_why why,
	       struct pool_result *res);

/*
 * At start, before serving: take the copies tier's medium kept across a
 * restart (medium_recover) into the index, with their metadata. Two of
 * one key keep the newer version. *found gets how many were taken.
 */
int pool_recover(struct pool *pl, int tier, uint64_t *found, struct mc_err *err);

/* Copies freed from tier for why since start. */
uint64_t pool_evictions(struct pool *pl, int tier, enum pool_reason why);
/* "reclaim", "delete": the metric's label. */
const char *pool_reason_name(enum pool_reason why);

#endif
