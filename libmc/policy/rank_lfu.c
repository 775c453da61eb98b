/*
 * lfu: the copy with the fewest reads goes first, its count halved for
 * every half-life since its last read. It suits shared prefixes (system
 * prompts, few-shot headers) that are read often; the decay keeps a prefix
 * that was popular yesterday from squatting forever. The half-life is in
 * accesses when the view has a sequence, in ms otherwise (mc_rank_decay).
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	if (c->access_count == 0)
		return 0;
	return (double)c->access_count * mc_rank_decay(c, p);
}

const struct mc_ranker mc_rank_lfu = {
	.name = "lfu",
	.help = "fewest accesses first, the count decayed by age since the last read",
	.score = score,
};
