/*
 * kv: the ranking for KV-cache blocks, which are prefix chains (a block
 * is read only after the block before it in its prompt) read again by
 * later turns of a conversation and by prompts that share a prefix.
 * Evicted first, in this order:
 *  1. orphans (MC_CAND_ORPHAN): the block before it is gone, so it can
 *     never be read as part of a prefix until that block is computed
 *     again; oldest first;
 *  2. probationers beyond the builder's probationary segment
 *     (MC_CAND_PROBATION): blocks written with no history of their key
 *     and not read since, oldest first (new arrivals compete only with
 *     each other until they have been read: admission as order, never
 *     refusal);
 *  3. the rest, lowest LRFU value first (mc_cand.crf, which the
 *     builder decays with a half-life it adapts, and resumes from its
 *     ghosts when a key comes back). The builder caps a block's value
 *     at its parent's, so a chain gives up its tail before its head.
 * Ties, as for every ranker, by age then key.
 */
#include "mc/ranker.h"

/* Below every value: each class is one score, so its members go by age. */
#define ORPHAN (-2e300)
#define PROBATION (-1e300)

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	(void)v;
	(void)p;
	if (c->flags & MC_CAND_ORPHAN)
		return ORPHAN;
	if (c->flags & MC_CAND_PROBATION)
		return PROBATION;
	return c->crf;
}

const struct mc_ranker mc_rank_kv = {
	.name = "kv",
	.help = "prefix chains: orphans, then new blocks beyond probation, then lowest LRFU value",
	.score = score,
};
