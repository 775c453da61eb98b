/*
 * What keeps a full tier full: one walk of the store, each copy counted
 * once under the first hold that applies, in the order an eviction
 * round's revalidation would refuse it (a write in progress, a hard
 * pin, a soft pin, a read lease).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/parse.h"
#include "holds.h"
#include "master.h"
#include "ops.h"
#include "softpin.h"
#include "peers.h"
#include "store.h"
#include "put.h"

enum hold_kind { HOLD_WRITE, HOLD_HARD, HOLD_SOFT, HOLD_LEASE, HOLD_COUNT };

/* How each hold reads in a message: "hard pins hold 400MiB". */
static const char *const hold_names[HOLD_COUNT] = {
	[HOLD_WRITE] = "writes in progress",
	[HOLD_HARD] = "hard pins",
	[HOLD_SOFT] = "soft pins",
	[HOLD_LEASE] = "read leases",
};

/* One live peer tier as the walk found it. */
struct hold_tier {
	uint32_t peer;
	int tier;
	uint64_t held[HOLD_COUNT];
};

struct holds {
	uint64_t at_ms; /* mc_mono_ms() of the walk */
	uint32_t npeers;
	uint32_t n;
	struct hold_tier v[];
};

/* What holds o's committed copies at now, or -1 when nothing does. */
static int
hold_of(const struct master *m, const struct mobj *o, uint64_t now)
{
	if (o->writing)
		return HOLD_WRITE;
	if (o->hard_pin)
		return HOLD_HARD;
	if (softpin_protects(o, now) && !m->cfg.allow_evict_soft_pinned)
		return HOLD_SOFT;
	if (o->lease_deadline > now)
		return HOLD_LEASE;
	return -1;
}

static struct hold_tier *
slot_of(struct holds *h, uint32_t peer, int tier)
{
	/* A cluster has tens of peers: a scan, as peers_find does. */
	for (uint32_t i = 0; i < h->n; i++)
		if (h->v[i].peer == peer && h->v[i].tier == tier)
			return &h->v[i];
	return NULL;
}

static struct holds *
walk(struct master *m)
{
	uint64_t now = mc_now_ms();
	struct holds *h;
	struct mobj *o;
	size_t cursor = 0;

	h = calloc(1, sizeof(*h) + (size_t)m->peers->n * MC_TIER_COUNT * sizeof(h->v[0]));
	if (h == NULL)
		return NULL;
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];

		if (!peer_alive(p, m->cfg.peer_ttl))
			continue;
		for (int t = 0; t < MC_TIER_COUNT; t++) {
			if (!p->tiers[t].present)
				continue;
			h->v[h->n].peer = p->id;
			h->v[h->n].tier = t;
			h->n++;
		}
	}
	while (h->n > 0 && (o = mc_htab_next(&m->store->objects, &cursor)) != NULL) {
		int kind = hold_of(m, o, now);
		const struct mrep *r = obj_creps(o);

		for (unsigned i = 0; i < o->nrep; i++) {
			/* a copy being demoted is on its way out: it holds nothing */
			int k = r[i].state != REP_COMPLETE ? HOLD_WRITE : kind;
			struct hold_tier *s;

			if (k < 0 || r[i].moving || (s = slot_of(h, r[i].peer, r[i].tier)) == NULL)
				continue;
			s->held[k] += ops_rep_size(m, o, &r[i]);
		}
	}
	h->at_ms = mc_mono_ms();
	h->npeers = m->peers->n;
	return h;
}

/* The last walk, or a new one when it is older than HOLDS_KEEP_MS; NULL when out of memory. */
static struct holds *
holds_now(struct master *m)
{
	struct holds **h = &m->put_waits->holds;

	if (*h != NULL && (*h)->npeers == m->peers->n && mc_mono_ms() - (*h)->at_ms < HOLDS_KEEP_MS)
		return *h;
	holds_free(h);
	*h = walk(m);
	return *h;
}

static uint64_t
held_total(const struct hold_tier *s)
{
	uint64_t sum = 0;

	for (int k = 0; k < HOLD_COUNT; k++)
		sum += s->held[k];
	return sum;
}

void
holds_explain(struct master *m, uint64_t size, unsigned replicas, int tier, struct mc_err *err)
{
	uint64_t held[HOLD_COUNT] = { 0 }, capacity = 0;
	char sz[32], b[32], names[64] = "";
	struct holds *h = holds_now(m);
	unsigned could = 0, tiers = 0;
	size_t off;
	int n;

	if (h == NULL)
		return;
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];
		bool room = false;

		for (uint32_t j = 0; j < h->n; j++) {
			const struct hold_tier *s = &h->v[j];
			const struct peer_tier *pt = &p->tiers[s->tier];
			uint64_t need = peer_tier_footprint(pt, size), kept = held_total(s);

			if (s->peer != p->id || (tier != MC_TIER_NONE && s->tier != tier) ||
			    !pt->present || pt->capacity < need)
				continue;
			/* with every copy that may go gone, would this tier take it? */
			if (kept <= pt->capacity && pt->capacity - kept >= need)
				room = true;
			capacity += pt->capacity;
			for (int k = 0; k < HOLD_COUNT; k++)
				held[k] += s->held[k];
			if ((tiers & (1u << s->tier)) == 0) {
				off = strlen(names);
				snprintf(names + off, sizeof(names) - off, "%s%s", off ? "+" : "",
					 mc_tier_name(s->tier));
			}
			tiers |= 1u << s->tier;
		}
		could += room;
	}
	if (could >= replicas || capacity == 0)
		return;
	n = snprintf(err->msg, sizeof(err->msg),
		     "no space for %s on %u peer%s: ", mc_fmt_size(size, sz, sizeof(sz)), replicas,
		     replicas == 1 ? "" : "s");
	for (int k = 0, first = 1; k < HOLD_COUNT && n > 0 && (size_t)n < sizeof(err->msg); k++) {
		if (held[k] == 0)
			continue;
		n += snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, "%s%s%s %s (%.0f%%)",
			      first ? "" : ", ", hold_names[k], first ? " hold" : "",
			      mc_fmt_size(held[k], b, sizeof(b)),
			      100.0 * (double)held[k] / (double)capacity);
		first = 0;
	}
	if (n > 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n,
			 " of the %s of %s that could take it", mc_fmt_size(capacity, b, sizeof(b)),
			 names);
}

void
holds_free(struct holds **h)
{
	free(*h);
	*h = NULL;
}
