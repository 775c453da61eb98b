/*
 * Rankers: the order in which one scope gives up its candidates (the
 * seed's Evict). A ranker scores a candidate; lower scores go first.
 * Each ranker is one file (libmc/rank_<name>.c) implementing struct
 * mc_ranker and one line in the table in libmc/ranker.c: policy is data,
 * mechanism is code.
 *
 *   lease       oldest lease expiry first (the classic default)
 *   lru         least recently accessed first
 *   fifo        oldest created first
 *   lfu         fewest accesses first, the count decayed by age with
 *               half-life params->lfu_half_life_ms
 *   hyperbolic  fewest hits per time in cache (access_count / age)
 *   cost        GDSF-style: cost x frequency / bytes, lowest first, the
 *               frequency aged like lfu's count; a candidate without a
 *               cost hint takes its type's default from params (or
 *               bytes when none)
 */
#ifndef MC_RANKER_H
#define MC_RANKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/candidates.h"

struct mc_ranker_params {
	uint64_t now;		   /* planning time, ms */
	uint64_t lfu_half_life_ms; /* lfu and cost ageing; 0: 10 minutes */
	/* default recompute cost per type name id (index), < 0 for none */
	const double *type_cost;
	size_t ntype_cost;
	/*
	 * Per type name id, like type_cost, or NULL: when set for a type,
	 * its type_cost is per byte (cost = bytes x type_cost), so each type
	 * may have its own "by bytes" factor.
	 */
	const bool *type_cost_by_bytes;
	/* types with no default of their own: cost = bytes x cost_per_byte */
	double cost_per_byte;
};

struct mc_ranker {
	const char *name;
	const char *help;
	double (*score)(const struct mc_cand_view *v, const struct mc_cand *c,
			const struct mc_ranker_params *p);
};

/*
 * Ageing shared by the frequency rankers: 2^-(age / half-life), age the
 * time since the candidate's last access (0 when that is in the future).
 */
double mc_rank_decay(const struct mc_cand *c, const struct mc_ranker_params *p);

/* NULL-terminated table of every ranker. */
extern const struct mc_ranker *const mc_rankers[];
const struct mc_ranker *mc_ranker_find(const char *name);

/*
 * Order idx[0..n) (indices into v->c) by r's score, ties by index so the
 * order is the same on every run. -1 only on allocation failure.
 */
int mc_rank(const struct mc_ranker *r, const struct mc_cand_view *v, uint32_t *idx, size_t n,
	    const struct mc_ranker_params *p);

#endif
