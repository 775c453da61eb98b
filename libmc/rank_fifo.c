/*
 * fifo: the copy created first goes first, whatever its reads. It suits
 * data with a fixed useful lifetime (a batch job's intermediate states)
 * and is the cheapest order to explain: nothing a reader does changes it.
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	(void)p;
	return (double)c->created;
}

const struct mc_ranker mc_rank_fifo = {
	.name = "fifo",
	.help = "oldest created first",
	.score = score,
};
