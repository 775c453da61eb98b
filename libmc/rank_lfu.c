/*
 * lfu: the copy with the fewest reads goes first, its count halved for
 * every half-life since its last read. It suits shared prefixes (system
 * prompts, few-shot headers) that are read often; the decay keeps a prefix
 * that was popular yesterday from squatting forever.
 */
#include <math.h>

#include "mc/ranker.h"

/* The default half-life: long enough to span a burst of conversations. */
#define LFU_HALF_LIFE_MS (10 * 60 * 1000)

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	uint64_t half_life = p->lfu_half_life_ms ? p->lfu_half_life_ms : LFU_HALF_LIFE_MS;
	/* a read stamped after the planning time (clock skew) is a fresh read */
	uint64_t age = p->now > c->last_access ? p->now - c->last_access : 0;

	(void)v;
	if (c->access_count == 0)
		return 0;
	return (double)c->access_count * exp2(-((double)age / (double)half_life));
}

const struct mc_ranker mc_rank_lfu = {
	.name = "lfu",
	.help = "fewest accesses first, the count decayed by age since the last read",
	.score = score,
};
