/*
 * Unit tests for a peer tier's band in the master (evict_tier_band,
 * cmd/mc-master/evict.c): by default the headroom band, one slice under
 * full (the copies placed on the tier and not complete yet count in its
 * usage already), and one slice wide, the slice from the objects with a
 * complete copy there;
 * the master's watermarks when given, and a peer's own before them.
 */
#include <stdio.h>
#include <string.h>

#include "mc/clock.h"
#include "evict.h"
#include "master.h"
#include "peers.h"
#include "start.h"
#include "store.h"
#include "tap.h"

#define MIB (1ull << 20)

static struct master m;

/* An object of size bytes with a replica of its version on p's dram in state. */
static struct mobj *
obj(const char *key, uint64_t size, struct peer *p, int state)
{
	struct mc_err err;
	size_t len = strlen(key);
	struct mobj *o = store_create(m.store, store_key_hash(0, key, len), 0, key, len, size, NULL,
				      0, &err);
	struct mrep *r;

	o->version = 1;
	store_access_new(m.store, o, 0);
	r = store_rep_add(o);
	r->peer = p->id;
	r->tier = MC_TIER_DRAM;
	r->version = o->version;
	r->state = (uint8_t)state;
	recency_sync(&m.store->rank, o);
	p->tiers[MC_TIER_DRAM].used += peer_tier_footprint(&p->tiers[MC_TIER_DRAM], size);
	return o;
}

int
main(void)
{
	struct event_base *base = event_base_new();
	struct mc_band b;
	struct mc_err err;
	struct pending *pd;
	struct mobj *o;
	struct peer *p;
	char key[16];

	if (master_alloc(&m) != 0)
		return 1;
	master_defaults(&m.cfg);
	TAP_OK(store_init(m.store, &err) == 0 && peers_init(m.peers, base, m.store, &err) == 0,
	       "a master's store and peer table");
	p = peers_add(m.peers, &err);
	p->heard = mc_mono_ms();
	p->tiers[MC_TIER_DRAM] =
		(struct peer_tier){ .capacity = 64 * MIB, .page = 4096, .present = true };

	/* 32 copies of 1 MiB: a slice would be 64 of them, capped at 1/64 of the tier */
	for (int i = 0; i < 32; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		obj(key, MIB, p, REP_COMPLETE);
	}
	evict_tier_band(&m, p, MC_TIER_DRAM, &b);
	TAP_OK(evict_tier_banded(&m, p, MC_TIER_DRAM) && b.slice == MIB && b.high == 63 * MIB &&
		       b.low == 62 * MIB,
	       "headroom: with nothing in flight, one slice under full, one slice wide");

	/* a put of 1 MiB placed on the tier, its replica not complete yet */
	o = obj("placing", MIB, p, REP_PROCESSING);
	pd = store_pending_new(m.store, o, &err);
	pd->version = o->version;
	pd->size = MIB;
	evict_tier_band(&m, p, MC_TIER_DRAM, &b);
	TAP_OK(b.slice == MIB && b.high == 63 * MIB && b.low == 62 * MIB,
	       "headroom: a put in flight counts in the tier's usage by its reservation, so the "
	       "band stays one slice under full, its slice from the complete copies");
	obj_reps(o)[0].state = REP_COMPLETE;
	store_pending_del(m.store, o);
	recency_sync(&m.store->rank, o);
	evict_tier_band(&m, p, MC_TIER_DRAM, &b);
	TAP_OK(b.high == 63 * MIB && b.low == 62 * MIB,
	       "headroom: once it is complete the band is back one slice under full");

	/* a tier with no copies yet */
	p->tiers[MC_TIER_SSD] = (struct peer_tier){ .capacity = 1024 * MIB, .present = true };
	evict_tier_band(&m, p, MC_TIER_SSD, &b);
	TAP_OK(b.slice == 16 * MIB && b.high == 1008 * MIB,
	       "headroom: an empty tier takes 1/64 of its capacity as its slice");

	m.cfg.evict_marks = true;
	evict_tier_band(&m, p, MC_TIER_DRAM, &b);
	TAP_OK(!evict_tier_banded(&m, p, MC_TIER_DRAM) && b.high == (uint64_t)(64 * MIB * 0.9) &&
		       b.low == (uint64_t)(64 * MIB * 0.7),
	       "watermarks given to the master replace the headroom band");
	m.cfg.evict_marks = false;
	p->tiers[MC_TIER_DRAM].high = 0.8;
	p->tiers[MC_TIER_DRAM].low = 0.5;
	evict_tier_band(&m, p, MC_TIER_DRAM, &b);
	TAP_OK(!evict_tier_banded(&m, p, MC_TIER_DRAM) && b.high == (uint64_t)(64 * MIB * 0.8) &&
		       b.low == (uint64_t)(64 * MIB * 0.5),
	       "a peer's own watermarks are its tier's band");

	peers_free(m.peers);
	store_free(m.store);
	event_base_free(base);
	return tap_done();
}
