/*
 * Eviction in the master: the safe execution of plans (seed
 * "hierarchical eviction"). The policy decides, in libmc's planner or an
 * external planner process; this module owns the mutation.
 *
 * A job is one round: a trigger (a tier over --evict-high-watermark, a
 * put that found no space, a put over its tenant's quota, or an admin's
 * evict_run / evict_plan), then
 *   build   the candidate view, in slices on the loop
 *   plan    on a worker thread: the built-in planner, the external
 *           --evict-planner command (with a timeout, falling back to the
 *           built-in one), or parsing the plan evict_plan was given
 *   execute stage by stage in slices on the loop: each victim found again
 *           and revalidated (exists, same version, not hard pinned, lease
 *           expired, soft pin not active unless the stage is the
 *           soft-pinned second pass and --allow-evict-soft-pinned is set,
 *           its group all-or-none, not busy), then its replica removed
 *           and the peer told to drop the copy. A fallback stage runs only
 *           while the actual evicted bytes of its scope are below its
 *           condition; an evict stage stops at its target.
 * Jobs run one at a time, in arrival order; a slice yields to the loop
 * after --evict-slice victims or half a millisecond, whichever first.
 */
#ifndef MASTER_EVICT_H
#define MASTER_EVICT_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/band.h"
#include "mc/conn.h"
#include "mc/err.h"
#include "mc/metrics.h"
#include "store.h"

struct master;
struct evictor;
struct peer;

/* Load the policy and quotas named by the configuration; -1 with err. */
int evict_init(struct master *m, struct mc_err *err);
void evict_free(struct master *m);
/* SIGHUP: load the policy and quota files again; the old ones stay on error. */
int evict_reload(struct master *m, struct mc_err *err);

/*
 * Rounds are one per scope: a (peer, tier) for the watermark and no-space
 * triggers, a tenant for its quota, the whole store for --max-objects. A trigger joins the scope's queued or
 * running round, or queues one; a round's target is computed when it
 * starts: the usage above the scope's low mark plus what the puts waiting
 * on it need. There is no minimum interval between rounds, except that a
 * scope whose round freed nothing rests for a moment (STALL_MS).
 */

/*
 * A peer tier's band now (mc/band.h), in bytes: the peer's own
 * watermarks when it gave them, else the master's when
 * --evict-high-watermark or --evict-low-watermark was given, else the
 * headroom band over the tier's complete copies (the recency index's
 * count) and the copies placed there and not complete yet. Looked at
 * afresh each time: a walk of the puts in progress.
 */
void evict_tier_band(const struct master *m, const struct peer *p, int tier, struct mc_band *out);
/* Whether that band is the headroom one (no watermarks for the tier). */
bool evict_tier_banded(const struct master *m, const struct peer *p, int tier);

/* From the sweep, and after every round: a round for every live tier above its band's high end. */
void evict_check_watermarks(struct master *m);
/*
 * A commit landed on a peer tier: its round starts now if the tier is over its high mark.
 * Neither this nor evict_check_watermarks runs a round for a tier the peer evicts itself
 * (peer_self_evicts); those count as skipped.
 */
void evict_tier_check(struct master *m, uint32_t peer, int tier);
/*
 * The peer's heartbeat named tiers (1u << tier) its own eviction cannot
 * bring under its high watermark: each gets its (peer, tier) round,
 * joining one queued or running for that scope.
 */
void evict_stalled(struct master *m, struct peer *p, uint8_t tiers);
/*
 * Placement found no room for replicas copies of size bytes (on tier,
 * unless MC_TIER_NONE: any): join or start the rounds of the peer tiers
 * that would take them. The seq of the latest round the put can wait
 * for (0: none, the scopes are stalled); a tier whose demotions under
 * way will make the room needs no round, and the put waits for them to
 * land (evict_moves_landed). *helps is false when no round ever could
 * (fewer live tiers than replicas could hold the copy even empty).
 */
uint64_t evict_no_space(struct master *m, uint64_t size, unsigned replicas, int tier, bool *helps);
/*
 * A put of add bytes (net of the version it replaces; a new object adds
 * its key and STORE_OBJECT_OVERHEAD, store_meta_cost) by tenant: 0 when
 * its charge (store_tenant_charge) stays within its quota; else -1 with
 * MC_ERR_QUOTA in err, *helps telling
 * whether eviction could make room (not for a put larger than the whole
 * quota), and when round is not NULL the tenant's round joined or
 * queued, *round its seq (0: none, the scope is stalled).
 */
int evict_quota_check(struct master *m, uint32_t tenant, uint64_t add, uint64_t *round, bool *helps,
		      struct mc_err *err);
/*
 * A put by tenant that would create a new object of add charged bytes:
 * 0 when the tenant holds fewer than --max-objects-per-tenant (or there
 * is no such cap); else -1 with MC_ERR_QUOTA in err, *helps set, and
 * when round is not NULL the tenant's round joined or queued (the one
 * its quota starts: it evicts down to the low watermark of both).
 */
int evict_tenant_objects_check(struct master *m, uint32_t tenant, uint64_t add, uint64_t *round,
			       bool *helps, struct mc_err *err);
/*
 * A put that would create a new object: 0 when the store holds fewer than
 * --max-objects (or there is no such budget); else -1 with
 * MC_ERR_NO_SPACE in err, *helps telling whether eviction could make
 * room, and when round is not NULL the store's round joined or queued,
 * *round its seq (0: none, the scope is stalled). The store's round also
 * starts by itself past --evict-high-watermark of the budget
 * (evict_check_watermarks) and evicts down to the low one, from the
 * tenants furthest over their fair share first: each round takes from
 * the tenant with the most objects, down to the level at which the
 * others' objects fit, so one under its share (the low mark divided
 * among the tenants holding objects) loses nothing to another's flood.
 */
int evict_objects_check(struct master *m, uint64_t *round, bool *helps, struct mc_err *err);
/* Rounds started, and what they evicted, since the master started. */
struct evict_totals {
	uint64_t rounds, evicted_bytes, evicted_objects;
};
void evict_totals(struct master *m, struct evict_totals *out);
/* The seq of the last round that ended: a put waiting on seq s may try again once this is >= s. */
uint64_t evict_rounds_done(struct master *m);
/* fn runs on the loop after rounds end, before the watermarks are looked at again. */
void evict_on_rounds_ended(struct master *m, void (*fn)(struct master *m));
/*
 * A peer moved or dropped a copy it was demoting: the room a round
 * freed is there now, so fn of evict_on_rounds_ended runs again (the
 * puts waiting for that room try again).
 */
void evict_moves_landed(struct master *m);

/* The methods this module serves (in its module table). */
extern const struct mc_method evict_methods[];

/* Eviction as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module evict_module;

#endif
