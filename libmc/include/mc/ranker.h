/*
 * Rankers: the order in which one scope gives up its candidates (the
 * seed's Evict). A ranker scores a candidate; lower scores go first.
 * Each ranker is one file (libmc/policy/rank_<name>.c) implementing
 * struct mc_ranker and one line in the table in libmc/policy/ranker.c:
 * policy is data, mechanism is code.
 *
 *   lease       oldest lease expiry first (the classic default)
 *   lru         least recently accessed first
 *   fifo        oldest created first
 *   lfu         fewest accesses first, the count decayed by the time
 *               since the last access, halved every half-life
 *   hyperbolic  fewest hits per time in cache (access_count / age)
 *   cost        GDSF-style: cost x frequency / bytes, lowest first, the
 *               frequency aged like lfu's count; a candidate without a
 *               cost hint takes its type's default from params (or
 *               bytes when none)
 *
 * Time is logical when the view has an access sequence (params->seq,
 * the view's seq, not 0): recency is access_seq, creation created_seq,
 * and ages are counted in accesses since, so the order depends on what
 * was read in which order, not on how fast the reads came or on a clock
 * that ties within a millisecond. A view without one (seq 0: an older
 * stream, a hand-made view) is measured in milliseconds from
 * params->now. Rankers never choose between the two themselves: they
 * read time through the accessors below, which make the choice in one
 * place.
 */
#ifndef MC_RANKER_H
#define MC_RANKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/candidates.h"

/*
 * Default half-lives of lfu and cost ageing. In accesses: about a
 * cache's worth of reads, so a count fades over the time the cache takes
 * to turn its contents over. The project's trace reads ~290k blocks over
 * an hour, ~183k of them distinct; a cache holding a third to a half of
 * those turns over in on the order of 100k reads, which is also about 20
 * minutes of that trace: the same order as the wall-clock default, which
 * spans a burst of conversations.
 */
#define MC_RANK_HALF_LIFE_ACCESSES 100000
#define MC_RANK_HALF_LIFE_MS (10 * 60 * 1000)

struct mc_ranker_params {
	uint64_t now; /* planning time, ms */
	uint64_t seq; /* the view's access sequence (mc_cand_view.seq); 0: none */
	/* lfu and cost ageing with a sequence; 0: MC_RANK_HALF_LIFE_ACCESSES */
	uint64_t lfu_half_life_accesses;
	/* the same without one; 0: MC_RANK_HALF_LIFE_MS */
	uint64_t lfu_half_life_ms;
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
 * Time as the rankers read it: in accesses when p->seq is not 0, else in
 * milliseconds. Larger stamps are later.
 */
static inline bool
mc_rank_logical(const struct mc_ranker_params *p)
{
	return p->seq != 0;
}

/* When c was last accessed: access_seq, or last_access in ms. */
uint64_t mc_rank_recency(const struct mc_cand *c, const struct mc_ranker_params *p);
/* When c was created: created_seq, or created in ms. */
uint64_t mc_rank_birth(const struct mc_cand *c, const struct mc_ranker_params *p);
/*
 * How long ago c was last accessed: accesses since (p->seq - access_seq)
 * or ms since (p->now - last_access); 0 when stamped later than that
 * (clock skew, or a read while a sliced view was being built).
 */
uint64_t mc_rank_idle(const struct mc_cand *c, const struct mc_ranker_params *p);
/*
 * How long c has been in the cache, never 0 so that it can divide:
 * the accesses since its creation counting the creating one
 * (p->seq - created_seq + 1), or ms since its creation, at least 1.
 */
uint64_t mc_rank_lifetime(const struct mc_cand *c, const struct mc_ranker_params *p);
/*
 * Ageing shared by the frequency rankers: 2^-(idle / half-life), idle as
 * mc_rank_idle() counts it and the half-life in the same unit.
 */
double mc_rank_decay(const struct mc_cand *c, const struct mc_ranker_params *p);

/* NULL-terminated table of every ranker. */
extern const struct mc_ranker *const mc_rankers[];
const struct mc_ranker *mc_ranker_find(const char *name);

/*
 * Order idx[0..n) (indices into v->c) by r's score. Ties never fall to
 * the view's order (a master's view comes in hash-table order): equal
 * scores go by logical age, older first (mc_rank_recency), then by key
 * bytes, and only candidates equal in all three by index, so the order
 * is the same on every run. -1 only on allocation failure.
 */
int mc_rank(const struct mc_ranker *r, const struct mc_cand_view *v, uint32_t *idx, size_t n,
	    const struct mc_ranker_params *p);

#endif
