/*
 * The master's candidate view: one light record per evictable copy (the
 * first stage of eviction, mc/candidates.h), built from the store for
 * the `candidates` call and for the master's own eviction rounds.
 *
 * A copy is evictable when it is a COMPLETE replica of its object's
 * current version on a live peer, not moving (an eviction sent it down
 * already), and the object is not hard-pinned. A young copy (mc/young.h)
 * on a tier with none below it, which eviction would drop, is noted so
 * that a round ahead of need can leave it out (candidates_drop_young).
 * Soft pins and leases do not exclude a copy: they are attributes the
 * policy sees and the executor revalidates.
 */
#ifndef MASTER_CANDIDATES_H
#define MASTER_CANDIDATES_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/candidates.h"
#include "mc/conn.h"
#include "mc/err.h"
#include "mc/young.h"

struct master;

/* Which copies to include; a zeroed filter includes every one. */
struct cand_filter {
	bool by_peer, by_tier, by_tenant;
	/*
	 * A record weighs what its tenant is charged for the object (its
	 * bytes, key and overhead, store_meta_cost), not its bytes alone:
	 * a tenant's and the store's rounds, which free charge and objects.
	 */
	bool charged;
	uint32_t peer;	 /* a peer id */
	int tier;	 /* enum tier */
	uint32_t tenant; /* a tenant id */
};

/*
 * A request's filter fields {peer_id?, tier?, tenant?}. *none is set when
 * they name a tenant the master does not know (or an impossible peer id):
 * an empty view, not an error, since a tenant exists only once it has
 * written something. -1 with err on a bad field or an unknown tier.
 */
int candidates_filter_parse(const struct master *m, const msgpack_object *params,
			    struct cand_filter *f, bool *none, struct mc_err *err);

/*
 * Fill v (initialised by the caller, left empty) with the copies that
 * pass f, as of the begin (mc_now_ms()), in slices, so that a big store
 * never holds the event loop for long: begin, then step until it
 * returns 0 (done; 1: more to visit, -1: err), then end. Between steps
 * the store may change: objects added or moved by a resize of the table
 * may be missed or seen twice, which a view may afford (every victim is
 * revalidated when the plan runs). The view's seq is the store's access
 * sequence when the walk ends, so no record's access_seq is above it.
 */
struct cand_build;
/*
 * What the probationary segment needs beyond the view: each live peer
 * tier's capacity by the names the view gives it, taken on the loop as
 * the walk ends (candidates_caps), so that the segment, a sort of the
 * view's probationers, runs off the loop (candidates_segment).
 */
struct cand_cap {
	uint32_t peer, tier; /* name ids of the view */
	uint64_t capacity;
};
struct cand_caps {
	struct cand_cap *v;
	uint32_t n;
	double probation;  /* the probationary share when taken (mc_history_probation) */
	bool presegmented; /* a window's: its probationers were marked as it took them */
};
struct cand_build *candidates_begin(struct master *m, const struct cand_filter *f,
				    struct mc_cand_view *v, struct mc_err *err);
int candidates_step(struct cand_build *b, size_t max_objects, struct mc_err *err);
/* After the last step, on the loop: the capacities (caps_free them). -1 on allocation failure. */
int candidates_caps(const struct cand_build *b, struct cand_caps *out, struct mc_err *err);
void candidates_end(struct cand_build *b);

/*
 * A (peer, tier) round's view without a walk of the store (f names one
 * peer and one tier): from the tier's orders in the recency index, at
 * most `window` nodes of each, the tier's orphans, then its
 * probationers beyond the probationary share (mc_history_probation of
 * its capacity, counted over all of its probationers), oldest first,
 * marked MC_CAND_PROBATION (the others' marks cleared: the segment is
 * then already applied, candidates_segment leaves it), then its coldest
 * copies; each object once, with the other members of its group. Each
 * record as the full walk builds it. Stepped, young copies and caps as
 * for candidates_begin. NULL with err.
 */
struct cand_build *candidates_begin_window(struct master *m, const struct cand_filter *f,
					   struct mc_cand_view *v, size_t window,
					   struct mc_err *err);
/*
 * The window (mc_plan_window) to plan need bytes off peer's tier, and
 * the copies its list holds in *copies, for mc_plan_window_grow.
 */
size_t candidates_window_size(struct master *m, uint32_t peer, int tier, uint64_t need,
			      uint64_t *copies);
/* After the last step: the cold walk stopped at the window, with copies left beyond it. */
bool candidates_window_cut(const struct cand_build *b);
/*
 * After the last step: the young copies (mc/young.h, --young) the view
 * holds, in *young as kept, and the bytes of the others that a plan
 * could take now (lease expired, no active soft pin) in *old.
 */
void candidates_young(const struct cand_build *b, struct mc_young_tally *young, uint64_t *old);
/* After the last step: leave the young copies out of the view (a round ahead of need). */
void candidates_drop_young(struct cand_build *b);
/* Anywhere (a thread): mark the view's probationers past their tier's segment. */
int candidates_segment(struct mc_cand_view *v, const struct cand_caps *caps, struct mc_err *err);
void caps_free(struct cand_caps *caps);

/*
 * How the `candidates` call queues the view it answers with (eviction
 * builds it as a round's, in slices): 0, or -1 with err when it cannot
 * be queued (req then still the caller's).
 */
typedef int candidates_export_fn(struct master *m, struct mc_req *req, const struct cand_filter *f,
				 bool empty, struct mc_err *err);
void candidates_on_export(candidates_export_fn *fn);

/* The methods this module serves: candidates. */
extern const struct mc_method candidates_methods[];

/* The candidates call as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module candidates_module;

#endif
