/*
 * Unit tests for the master's placement (cmd/mc-master/placement.c), a
 * pure choice over the peer table: distinct hosts while another fits,
 * the fastest tier that fits, the most room, then the lower id; dead
 * and full peers are passed over, and a choice that cannot be made says
 * why: too_few_peers (fewer live peers, or peers with a tier that large,
 * than copies), too_large (no tier would hold it empty) or no_space
 * (the tiers are full, which eviction may mend); a put that asks for a tier lands only there, and one that
 * asks for a tier no live peer has is invalid. Nothing is reserved or
 * evicted by choosing.
 */
#include <string.h>

#include "mc/clock.h"
#include "master.h"
#include "placement.h"
#include "tap.h"
#include "peers.h"
#include "store.h"
#include "start.h"

#define MIB (1ull << 20)

static struct master m;
static struct event_base *base;

/* A live peer on host with dram (and ssd when ssd > 0) capacity and use. */
static struct peer *
peer(const char *host, uint64_t dram_cap, uint64_t dram_used, uint64_t ssd_cap)
{
	struct mc_err err;
	struct peer *p = peers_add(m.peers, &err);

	snprintf(p->host, sizeof(p->host), "%s", host);
	p->heard = mc_mono_ms();
	p->tiers[MC_TIER_DRAM] =
		(struct peer_tier){ .capacity = dram_cap, .used = dram_used, .present = true };
	if (ssd_cap > 0)
		p->tiers[MC_TIER_SSD] = (struct peer_tier){ .capacity = ssd_cap, .present = true };
	return p;
}

static void
reset(void)
{
	struct mc_err err;

	peers_free(m.peers);
	peers_init(m.peers, base, m.store, &err);
}

static bool
placed(const struct placement *pl, unsigned i, uint32_t id, int tier)
{
	return i < pl->n && pl->peer[i] == id && pl->tier[i] == tier;
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	struct placement pl;
	struct mc_err err;
	struct peer *a, *b, *c, *d;

	m.cfg.peer_ttl = 10000;
	base = event_base_new();
	TAP_OK(store_init(m.store, &err) == 0, "a master's store and peer table");
	reset();

	a = peer("h1", 100 * MIB, 10 * MIB, 0);
	b = peer("h1", 100 * MIB, 0, 0);
	c = peer("h2", 100 * MIB, 50 * MIB, 0);
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_NONE, &pl, &err) == 0 && pl.n == 1 &&
		       placed(&pl, 0, b->id, MC_TIER_DRAM),
	       "one copy: the most free room (peer %u)", b->id);
	TAP_OK(placement_pick(&m, MIB, 2, MC_TIER_NONE, &pl, &err) == 0 &&
		       placed(&pl, 0, b->id, MC_TIER_DRAM) && placed(&pl, 1, c->id, MC_TIER_DRAM),
	       "two copies: another host before more room on the same host");
	TAP_OK(placement_pick(&m, MIB, 3, MC_TIER_NONE, &pl, &err) == 0 &&
		       placed(&pl, 2, a->id, MC_TIER_DRAM),
	       "three copies: the same host again once no other host is left");
	TAP_OK(b->tiers[MC_TIER_DRAM].used == 0 && a->tiers[MC_TIER_DRAM].used == 10 * MIB,
	       "choosing reserves nothing");
	TAP_OK(placement_pick(&m, MIB, 4, MC_TIER_NONE, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_FEW_PEERS &&
		       strcmp(err.msg, "4 replicas need 4 live peers; 3 are alive") == 0,
	       "four copies on three peers: too_few_peers, with both counts: %s", err.msg);
	c->tiers[MC_TIER_DRAM].used = 100 * MIB;
	b->tiers[MC_TIER_DRAM].used = 100 * MIB;
	TAP_OK(placement_pick(&m, MIB, 2, MC_TIER_NONE, &pl, &err) != 0 &&
		       err.code == MC_ERR_NO_SPACE,
	       "enough peers, but full ones: no_space, which eviction may mend: %s", err.msg);
	c->tiers[MC_TIER_DRAM].used = 50 * MIB;
	b->tiers[MC_TIER_DRAM].used = 0;

	/* a dead peer is passed over */
	b->heard = mc_mono_ms() - 20000;
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_NONE, &pl, &err) == 0 &&
		       placed(&pl, 0, a->id, MC_TIER_DRAM),
	       "a peer silent past --peer-ttl is not chosen");
	/* too big for any dram: the ssd of the one that has it */
	reset();
	a = peer("h1", 10 * MIB, 0, 0);
	d = peer("h2", 10 * MIB, 0, 1000 * MIB);
	TAP_OK(placement_pick(&m, 20 * MIB, 1, MC_TIER_NONE, &pl, &err) == 0 &&
		       placed(&pl, 0, d->id, MC_TIER_SSD),
	       "too big for dram: the ssd tier that fits");
	TAP_OK(placement_pick(&m, 5 * MIB, 1, MC_TIER_NONE, &pl, &err) == 0 &&
		       placed(&pl, 0, a->id, MC_TIER_DRAM),
	       "dram before ssd, however much room the ssd has; ties to the lower id");
	TAP_OK(placement_pick(&m, 2000 * MIB, 1, MC_TIER_NONE, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_LARGE &&
		       strcmp(err.msg, "1.95GiB is larger than any tier: the largest is "
				       "1000MiB (ssd of peer 2)") == 0,
	       "bigger than every tier: too_large, naming the largest: %s", err.msg);
	/* a size near 2^64 rounded to pages would wrap to a few of them and fit anywhere */
	d->tiers[MC_TIER_SSD].page = 4096;
	d->tiers[MC_TIER_SSD].per_copy = 112;
	TAP_OK(peer_tier_footprint(&d->tiers[MC_TIER_SSD], UINT64_MAX) == UINT64_MAX &&
		       peer_tier_footprint(&d->tiers[MC_TIER_SSD], UINT64_MAX - 4000) ==
			       UINT64_MAX &&
		       peer_tier_footprint(&(struct peer_tier){ .per_copy = 112 },
					   UINT64_MAX - 50) == UINT64_MAX,
	       "a footprint past 2^64, rounded or with its header, saturates");
	TAP_OK(placement_pick(&m, UINT64_MAX, 1, MC_TIER_NONE, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_LARGE &&
		       placement_pick(&m, UINT64_MAX - 4000, 1, MC_TIER_NONE, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_LARGE,
	       "a put of nearly 2^64 bytes is larger than any tier: %s", err.msg);
	d->tiers[MC_TIER_SSD].page = 0;
	d->tiers[MC_TIER_SSD].per_copy = 0;
	TAP_OK(placement_pick(&m, 20 * MIB, 2, MC_TIER_NONE, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_FEW_PEERS &&
		       strcmp(err.msg, "2 replicas of 20MiB need 2 peers with a tier that "
				       "large; 1 has one") == 0,
	       "two copies that only one peer's tiers could hold: too_few_peers: %s", err.msg);
	/* a tier over its capacity (accounting ahead of a report) is full, not negative */
	a->tiers[MC_TIER_DRAM].used = 11 * MIB;
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_NONE, &pl, &err) == 0 &&
		       placed(&pl, 0, d->id, MC_TIER_DRAM),
	       "an overfull tier is passed over");

	/* a put that asks for a tier */
	reset();
	a = peer("h1", 100 * MIB, 0, 0);
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_SSD, &pl, &err) != 0 &&
		       err.code == MC_ERR_INVALID &&
		       strcmp(err.msg, "no live peer has a ssd tier") == 0,
	       "a tier no live peer has is refused as invalid, not as no room: %s", err.msg);
	b = peer("h2", 100 * MIB, 0, 10 * MIB);
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_SSD, &pl, &err) == 0 &&
		       placed(&pl, 0, b->id, MC_TIER_SSD),
	       "a put asking for ssd lands on ssd, though dram has room");
	TAP_OK(placement_pick(&m, MIB, 2, MC_TIER_SSD, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_FEW_PEERS,
	       "only peers with that tier count: %s", err.msg);
	TAP_OK(placement_pick(&m, 200 * MIB, 1, MC_TIER_SSD, &pl, &err) != 0 &&
		       err.code == MC_ERR_TOO_LARGE &&
		       strstr(err.msg, "larger than any such tier: the largest is 10MiB") != NULL,
	       "bigger than every tier of the one asked for: too_large: %s", err.msg);
	b->tiers[MC_TIER_SSD].used = 9 * MIB + MIB / 2;
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_SSD, &pl, &err) != 0 &&
		       err.code == MC_ERR_NO_SPACE,
	       "a full asked-for tier is no space, though dram would fit: %s", err.msg);
	b->tiers[MC_TIER_SSD].used = 0;
	b->heard = mc_mono_ms() - 2 * m.cfg.peer_ttl;
	TAP_OK(placement_pick(&m, MIB, 1, MC_TIER_SSD, &pl, &err) != 0 &&
		       err.code == MC_ERR_INVALID,
	       "a dead peer's tier does not count");

	peers_free(m.peers);
	store_free(m.store);
	event_base_free(base);
	return tap_done();
}
