/*
 * cost: GDSF-style, the copy that is cheapest to recompute per byte and
 * least read goes first: cost x (reads + 1) / bytes. It suits mixed
 * tiers where hidden states are small but expensive to recompute while
 * KV blocks are large and cost roughly their size: without it a byte of
 * hidden state and a byte of KV would be worth the same.
 *
 * The cost is the candidate's own hint when present, else its type's
 * default from the policy (fixed, or per byte when the policy says
 * "bytes"), else bytes x cost_per_byte, else its bytes
 * (so with no cost information at all the order is by reads alone).
 *
 * Aged: the reads count for less the longer ago the last one was, halved
 * every half-life (lfu's), as GDSF's rising inflation value lets a copy
 * that was valuable long ago fall behind one that is valuable now.
 */
#include "mc/ranker.h"

static double
cand_cost(const struct mc_cand *c, const struct mc_ranker_params *p)
{
	/* the comparisons are written so that a NaN hint counts as absent */
	if (c->cost >= 0)
		return c->cost;
	if (p->type_cost && c->type < p->ntype_cost && p->type_cost[c->type] >= 0) {
		if (p->type_cost_by_bytes && p->type_cost_by_bytes[c->type])
			return (double)c->bytes * p->type_cost[c->type];
		return p->type_cost[c->type];
	}
	if (p->cost_per_byte > 0)
		return (double)c->bytes * p->cost_per_byte;
	return (double)c->bytes;
}

static double
score(const struct mc_cand_view *v, const struct mc_cand *c, const struct mc_ranker_params *p)
{
	double bytes = c->bytes ? (double)c->bytes : 1;

	(void)v;
	return cand_cost(c, p) * ((double)c->access_count + 1) * mc_rank_decay(c, p) / bytes;
}

const struct mc_ranker mc_rank_cost = {
	.name = "cost",
	.help = "GDSF: recompute cost x aged (accesses + 1) / bytes, lowest first",
	.score = score,
};
