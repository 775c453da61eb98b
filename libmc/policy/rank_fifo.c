/*
 * fifo: the copy created first goes first, whatever its reads. It suits
 * data with a fixed useful lifetime (a batch job's intermediate states)
 * and is the cheapest order to explain: nothing a reader does changes it.
 * Creation is read in the view's time (mc_rank_birth): the access
 * sequence at creation when the view has one.
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	return (double)mc_rank_birth(c, p);
}

const struct mc_ranker mc_rank_fifo = {
	.name = "fifo",
	.help = "oldest created first",
	.score = score,
};
