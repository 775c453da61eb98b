/*
 * hyperbolic: the copy with the fewest reads per millisecond in the cache
 * goes first (Blankstein et al., "Hyperbolic caching"). Unlike lfu it
 * needs no half-life, and a one-off burst of reads on an old copy is
 * diluted by all the time the copy sat idle, while a new copy is judged
 * on the short time it has had.
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	/* created after the planning time (clock skew): age 0, counted as 1 ms */
	uint64_t age = p->now > c->created ? p->now - c->created : 0;

	(void)v;
	if (age < 1)
		age = 1;
	return (double)c->access_count / (double)age;
}

const struct mc_ranker mc_rank_hyperbolic = {
	.name = "hyperbolic",
	.help = "fewest hits per time in cache first (access count / age)",
	.score = score,
};
