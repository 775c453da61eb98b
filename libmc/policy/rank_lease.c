/*
 * lease: the copy whose read lease ran out longest ago goes first. This is
 * the classic default: a lease is the one promise the store made about a
 * copy, and the copy it protected longest ago is the one least likely to
 * be waited on. A copy that never had a lease (0) goes before any that did.
 */
#include "mc/ranker.h"

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	(void)p;
	return (double)c->lease_expiry;
}

const struct mc_ranker mc_rank_lease = {
	.name = "lease",
	.help = "oldest lease expiry first (the classic default)",
	.score = score,
};
