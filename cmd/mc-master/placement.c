/*
 * Placement of new replicas over the live peers.
 */
#include <string.h>

#include "mc/clock.h"
#include "master.h"
#include "placement.h"

/* Tiers a new copy may land on, best first. */
static const int place_order[] = { MC_TIER_DRAM, MC_TIER_CXL, MC_TIER_SSD };

/*
 * The tier a copy of size bytes would use on peer, or -1; *free_out is
 * its room and *rank the tier's place in place_order (faster tiers win
 * before free space is compared).
 */
static int
peer_fit(const struct peer *peer, uint64_t size, int only, uint64_t *free_out, int *rank)
{
	for (size_t i = 0; i < sizeof(place_order) / sizeof(place_order[0]); i++) {
		const struct peer_tier *t = &peer->tiers[place_order[i]];
		uint64_t room;

		if ((only != MC_TIER_NONE && place_order[i] != only) || !t->present ||
		    t->used > t->capacity)
			continue;
		room = t->capacity - t->used;
		/* what the copy takes there: its pages and header, as the peer counts */
		if (room >= peer_tier_footprint(t, size)) {
			*free_out = room;
			*rank = (int)i;
			return place_order[i];
		}
	}
	return -1;
}

static int
pick_once(struct master *m, uint64_t size, unsigned want, int only, struct placement *out)
{
	const struct peers *ps = &m->peers;

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
	for (uint32_t i = 0; i < m->peers.n; i++)
		if (m->peers.v[i]->tiers[tier].present &&
		    peer_alive(m->peers.v[i], m->cfg.peer_ttl))
			return true;
	return false;
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
	if (tier != MC_TIER_NONE)
		return mc_err_set(err, MC_ERR_NO_SPACE, "no space for %llu bytes of %s on %u peers",
				  (unsigned long long)size, mc_tier_name(tier), replicas);
	return mc_err_set(err, MC_ERR_NO_SPACE, "no space for %llu bytes on %u peers",
			  (unsigned long long)size, replicas);
}
