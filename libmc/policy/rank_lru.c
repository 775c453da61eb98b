/*
 * lru: the copy read longest ago goes first. It suits data whose reuse is
 * recent-biased, such as KV blocks of live conversations: a prefix that has
 * not been read for a while is unlikely to be read again soon. "Longest
 * ago" is the oldest last access in the view's time (mc_rank_recency):
 * the access sequence when the view has one, so reads a millisecond
 * apart, or in the same millisecond, keep their order.
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	return (double)mc_rank_recency(c, p);
}

const struct mc_ranker mc_rank_lru = {
	.name = "lru",
	.help = "least recently accessed first",
	.score = score,
};
