/*
 * hyperbolic: the copy with the fewest reads per unit of time in the
 * cache goes first (Blankstein et al., "Hyperbolic caching"). Unlike lfu
 * it needs no half-life, and a one-off burst of reads on an old copy is
 * diluted by all the time the copy sat idle, while a new copy is judged
 * on the short time it has had. Time in the cache is counted in accesses
 * when the view has a sequence, else in ms (mc_rank_lifetime).
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	return (double)c->access_count / (double)mc_rank_lifetime(c, p);
}

const struct mc_ranker mc_rank_hyperbolic = {
	.name = "hyperbolic",
	.help = "fewest hits per time in cache first (access count / age)",
	.score = score,
};
