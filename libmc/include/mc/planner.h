/*
 * The planner: a policy (mc/policy.h) applied to a candidate view
 * (mc/candidates.h) gives a plan (mc/plan.h). Pure: no clock, no I/O
 * except the optional explanation, so mc-evict-plan and the master's
 * built-in planner give the same plan for the same view and policy.
 *
 * What it does, in the seed's words (Assign, Evict, Fallback):
 *  - Eligible candidates: lease expired (lease_expiry <= now) and no
 *    active soft pin (soft_pin_deadline <= now). The others are never
 *    victims of the first pass; they still count in their scope's usage.
 *  - Assign: a scope with children splits its target among them by the
 *    policy's mode, capped at what each child can give (its eligible
 *    bytes) with the excess passed on to the others (water-filling);
 *    each child's lowerbound is its lowerbound fraction of its target.
 *    The root's target and lowerbound come from the caller.
 *    Rounding: floors, the remainder a byte each to the earliest
 *    children. In quota mode a child owes its usage above its quota (a
 *    quota of 0 means none: it owes nothing); when the debts exceed the
 *    target the target is split in proportion to them, else each child
 *    pays its debt and the rest is split by usage.
 *  - Evict: a leaf scope ranks its eligible candidates with its ranker
 *    and takes them in order until their bytes reach its target (the
 *    last one may pass it): one stage of kind evict, with the scope's
 *    target and lowerbound. Stages come depth first, children in policy
 *    order (named scopes as listed, then `*` values by name bytes), so
 *    the most specific scopes come first. Scopes with a zero target get
 *    no stage, and a stage that found no victims is left out.
 *  - Fallback: after a scope's children, its fallback stage (kind
 *    fallback, cond_scope its own path, cond_lowerbound its lowerbound,
 *    target that lowerbound, lowerbound 0) lists a reserve of its
 *    remaining eligible candidates until their bytes reach that
 *    lowerbound, taken by pressure: repeatedly from the child whose
 *    pressure, remaining usage / basis, is highest (ties: the earlier
 *    child). Remaining usage is the child's usage less the bytes of its
 *    candidates already in any stage; the basis is its weight's share of
 *    the parent usage, its usage, or its quota, by the parent's mode (a
 *    zero basis is pressure 0: such a child gives last). Each child's
 *    candidates come in the child's own order (or, with `fallback
 *    RANKER`, that ranker's order over the whole child). A child with
 *    children orders its own candidates the same way, so a global
 *    fallback weighs tenant and type pressure, never raw age. The
 *    executor runs a fallback only for the actual shortfall.
 *  - No candidate appears twice in a plan.
 *  - Second pass (params.soft_pinned_pass): a last fallback stage with
 *    soft_pinned set, scope and cond_scope "", over the
 *    eligible-but-soft-pinned candidates (lease expired, active soft
 *    pin), soonest deadline first, until their bytes reach the root
 *    lowerbound, conditioned on the root lowerbound.
 *  - Deterministic: values are ordered by their bytes, never by name id,
 *    and ties between candidates by their index in the view, so the same
 *    view read from a stream gives the same plan, byte for byte.
 *  - Time: rankers read recency and age on the view's access sequence
 *    (v->seq, passed on as the ranker params' seq) when it has one, and
 *    in ms from now otherwise (mc/ranker.h); eligibility (leases, soft
 *    pins) is always judged in ms against now.
 *
 * Scope values: tenant, type, group, peer, tier and domain take the
 * candidate's name. The empty name (no group, no domain) is the value
 * "-": its path is "group=-" and a policy names it `scope -` (a name
 * that is literally "-" joins that same scope). prefix takes the longest
 * listed prefix the key starts with, else the `*` scope "prefix=*",
 * which exists only when some key matches no listed prefix. A named
 * scope exists even when no candidate has its value (usage 0).
 *
 * Scope paths: "" for the root, then "dim=value" components joined by
 * '/' ("tenant=B/type=hidden"); '%' and '/' in a value are written %25
 * and %2F. The `*` scope of the prefix dimension is "prefix=*".
 *
 * Explanation (stable, tests grep it): a line per scope in tree order,
 * indented two spaces per depth, the root called "global":
 *   PATH  cands N  usage SIZE  eligible SIZE  target SIZE  lower SIZE
 *   chosen SIZE  ranker NAME | assign DIM by MODE
 * (one line; sizes as mc_fmt_size writes them, "chosen" the bytes of the
 * stages at or below the scope), after a scope's children its fallback
 * "fallback PATH  reserve SIZE[  ranker NAME]", and last, with the second
 * pass, "soft-pinned global  reserve SIZE".
 */
#ifndef MC_PLANNER_H
#define MC_PLANNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mc/candidates.h"
#include "mc/err.h"
#include "mc/plan.h"
#include "mc/policy.h"

#define MC_PLAN_DEFAULT_LOWERBOUND UINT64_MAX

struct mc_plan_params {
	uint64_t target;       /* bytes to free; 0 gives an empty plan */
	uint64_t lowerbound;   /* bytes; MC_PLAN_DEFAULT_LOWERBOUND: the root's fraction */
	bool soft_pinned_pass; /* add the second pass over soft-pinned candidates */
	uint64_t now;	       /* ms; 0: the view's created time */
};

/*
 * Plan over *v. The view is moved into out->view (v is left empty and
 * may be reused or freed); out is initialised here. On failure (-1, err
 * set) out is left empty and *v untouched. out->created is the
 * view's created time, out->policy the policy's name. When explain is
 * not NULL the scope tree is printed to it for people: per scope its
 * path, candidates, usage, eligible bytes, target, lowerbound and the
 * bytes chosen by its stages (see mc-evict-plan(1)).
 */
int mc_planner_run(const struct mc_policy *pol, struct mc_cand_view *v,
		   const struct mc_plan_params *pp, struct mc_plan *out, FILE *explain,
		   struct mc_err *err);

/*
 * Whether a stage with scope path `stage` lies inside scope path `scope`
 * (equal, or below it at a '/' boundary; "" contains every path). The
 * executor sums actual bytes per scope with it.
 */
bool mc_scope_contains(const char *scope, const char *stage);

/*
 * Planning from a window, so that a round costs O(victims), not O(copies
 * on the tier): the caller takes the coldest copies of its tier's
 * ordering structure (coldest first by last access, and the oldest
 * probationers) into the view, not the whole tier, and plans over them.
 *
 * mc_plan_window says how many copies that window holds to plan need
 * bytes off a tier of `copies` copies totalling `bytes`:
 * MC_PLAN_WINDOW_FACTOR times the copies need takes at the tier's mean
 * size, at least MC_PLAN_WINDOW_MIN, at most every copy. The factor is
 * the choice the policy keeps: within the window it ranks by its own
 * order (frequency, chain worth), so a copy read long ago but often
 * still stays. A plan that came out short of need over a window smaller
 * than the tier is made again over a window twice as big
 * (mc_plan_window_grow) until it covers the tier.
 */
#define MC_PLAN_WINDOW_FACTOR 8
#define MC_PLAN_WINDOW_MIN 1024
size_t mc_plan_window(uint64_t need, uint64_t bytes, uint64_t copies);
/* The next window after one of `window` copies fell short: twice it, at most every copy. */
size_t mc_plan_window_grow(size_t window, uint64_t copies);

/*
 * Beside its coldest copies a window takes the tier's copies of lowest
 * decayed worth, from a worth order (mc/worder.h): the victims a worth
 * ranking finds outside the coldest are copies read lately but worth
 * little (a chain's tail under a cold head), never more than the
 * victims themselves. mc_plan_window_worth says how many for a window
 * of `window`: 1/MC_PLAN_WORTH_SHARE of it, about twice the copies the
 * need takes, at least one. Each one costs a step of a heap search
 * through memory the tier's accesses have left cold, so the share is
 * what keeps a round's cost near what its victims cost.
 */
#define MC_PLAN_WORTH_SHARE 4
size_t mc_plan_window_worth(size_t window);

#endif
