/*
 * Placement of new replicas over the live peers.
 */
#include <string.h>

#include "mc/clock.h"
#include "mc/parse.h"
#include "master.h"
#include "placement.h"
#include "peers.h"

/* "s" after a count other than one */
#define PLURAL(n) ((n) == 1 ? "" : "s")

/*
 * The tier a copy of size bytes would use on peer, or -1: the fastest
 * it may land on (the one the put asked for, when it asked) with room.
 * *free_out is its room and *rank its speed rank (faster tiers win
 * before free space is compared).
 */
static int
peer_fit(const struct peer *peer, uint64_t size, int only, uint64_t *free_out, int *rank)
{
	int tier;

	MC_TIER_FASTEST_FIRST(tier)
	{
		const struct peer_tier *t = &peer->tiers[tier];
		uint64_t room;

		if (!mc_tier_may_land(tier, only) || !t->present || t->used > t->capacity)
			continue;
		room = t->capacity - t->used;
		/* what the copy takes there: its pages and header, as the peer counts */
		if (room >= peer_tier_footprint(t, size)) {
			*free_out = room;
			*rank = mc_tier_speed_rank(tier);
			return tier;
		}
	}
	return -1;
}

static int
pick_once(struct master *m, uint64_t size, unsigned want, int only, struct placement *out)
{
	const struct peers *ps = m->peers;

	out->n = 0;
	while (out->n < want) {
		const struct peer *best = NULL;
		bool best_distinct = false;
		uint64_t best_free = 0;
		int best_tier = -1, best_rank = 0;

		for (uint32_t i = 0; i < ps->n; i++) {
			const struct peer *p = ps->v[i];
			bool chosen = false, distinct = true;
			uint64_t room;
			int tier, rank;

			if (!peer_alive(p, m->cfg.peer_ttl))
				continue;
			for (unsigned k = 0; k < out->n; k++) {
				const struct peer *q = peers_find(ps, out->peer[k]);
				if (q == p)
					chosen = true;
				else if (q != NULL && strcmp(q->host, p->host) == 0)
					distinct = false;
			}
			if (chosen || (tier = peer_fit(p, size, only, &room, &rank)) < 0)
				continue;
			if (best != NULL) {
				if (distinct != best_distinct) {
					if (!distinct)
						continue;
				} else if (rank != best_rank) {
					if (rank > best_rank)
						continue;
				} else if (room != best_free) {
					if (room < best_free)
						continue;
				} else if (p->id > best->id) {
					continue;
				}
			}
			best = p;
			best_distinct = distinct;
			best_free = room;
			best_tier = tier;
			best_rank = rank;
		}
		if (best == NULL)
			return -1;
		out->peer[out->n] = best->id;
		out->tier[out->n] = (uint8_t)best_tier;
		out->n++;
	}
	return 0;
}

/* Whether some live peer has tier: a put that asks for one nobody has cannot wait for room. */
static bool
tier_exists(const struct master *m, int tier)
{
	for (uint32_t i = 0; i < m->peers->n; i++)
		if (m->peers->v[i]->tiers[tier].present &&
		    peer_alive(m->peers->v[i], m->cfg.peer_ttl))
			return true;
	return false;
}

/*
 * Who could ever take a copy of size bytes (on tier only, unless
 * MC_TIER_NONE): the live peers, those of them with a tier that would
 * hold it empty, and the largest such tier of all, fit or not.
 */
struct reach {
	unsigned alive, roomy;
	uint64_t largest;
	uint32_t largest_peer;
	int largest_tier;
};

static void
reach_of(const struct master *m, uint64_t size, int only, struct reach *r)
{
	memset(r, 0, sizeof(*r));
	r->largest_tier = -1;
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];
		bool roomy = false;

		if (!peer_alive(p, m->cfg.peer_ttl))
			continue;
		r->alive++;
		int tier;

		MC_TIER_FASTEST_FIRST(tier)
		{
			const struct peer_tier *t = &p->tiers[tier];

			if (!mc_tier_may_land(tier, only) || !t->present)
				continue;
			if (t->capacity >= peer_tier_footprint(t, size))
				roomy = true;
			if (r->largest_tier < 0 || t->capacity > r->largest) {
				r->largest = t->capacity;
				r->largest_peer = p->id;
				r->largest_tier = tier;
			}
		}
		r->roomy += roomy;
	}
}

/*
 * The failures no eviction can mend, each with its own status: fewer
 * live peers than copies (too_few_peers), a copy larger than every tier
 * (too_large), fewer peers with a tier that large than copies
 * (too_few_peers). 0 when none holds.
 */
static int
beyond_reach(const struct master *m, uint64_t size, unsigned replicas, int tier, struct mc_err *err)
{
	char sz[32], big[32];
	struct reach r;

	reach_of(m, size, tier, &r);
	if (r.alive < replicas)
		return mc_err_set(err, MC_ERR_TOO_FEW_PEERS,
				  "%u replica%s need%s %u live peer%s; %u %s alive", replicas,
				  PLURAL(replicas), replicas == 1 ? "s" : "", replicas,
				  PLURAL(replicas), r.alive, r.alive == 1 ? "is" : "are");
	mc_fmt_size(size, sz, sizeof(sz));
	if (r.roomy == 0 && r.largest_tier >= 0)
		return mc_err_set(err, MC_ERR_TOO_LARGE,
				  "%s is larger than any %stier: the largest is %s (%s of peer %u)",
				  sz, tier != MC_TIER_NONE ? "such " : "",
				  mc_fmt_size(r.largest, big, sizeof(big)),
				  mc_tier_name(r.largest_tier), r.largest_peer);
	if (r.roomy < replicas)
		return mc_err_set(
			err, MC_ERR_TOO_FEW_PEERS,
			"%u replicas of %s need %u peers with a tier that large; %u %s one",
			replicas, sz, replicas, r.roomy, r.roomy == 1 ? "has" : "have");
	return 0;
}

int
placement_pick(struct master *m, uint64_t size, unsigned replicas, int tier, struct placement *out,
	       struct mc_err *err)
{
	if (replicas == 0 || replicas > MC_REPLICAS_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "replicas %u out of range 1..%d", replicas,
				  MC_REPLICAS_MAX);
	if (tier != MC_TIER_NONE && !tier_exists(m, tier))
		return mc_err_set(err, MC_ERR_INVALID, "no live peer has a %s tier",
				  mc_tier_name(tier));
	if (pick_once(m, size, replicas, tier, out) == 0)
		return 0;
	if (beyond_reach(m, size, replicas, tier, err) != 0)
		return -1;
	if (tier != MC_TIER_NONE)
		return mc_err_set(
			err, MC_ERR_NO_SPACE, "no space for %llu bytes of %s on %u peer%s",
			(unsigned long long)size, mc_tier_name(tier), replicas, PLURAL(replicas));
	return mc_err_set(err, MC_ERR_NO_SPACE, "no space for %llu bytes on %u peer%s",
			  (unsigned long long)size, replicas, PLURAL(replicas));
}
