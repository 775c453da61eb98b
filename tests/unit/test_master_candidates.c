/*
 * Unit tests for the young copies of the master's candidate view
 * (cmd/mc-master/candidates.c): a copy whose version committed within
 * --young is noted when evicting it would drop it (no tier below it on
 * its peer), not when it would move down; the others' eligible bytes are
 * summed; and leaving the young ones out keeps every other record.
 */
#include <stdio.h>
#include <string.h>

#include "mc/clock.h"
#include "candidates.h"
#include "master.h"
#include "start.h"
#include "tap.h"
#include "peers.h"
#include "store.h"

#define NOW 1700000000000ull

static struct master m;
static struct event_base *base;

static struct peer *
peer(uint64_t ssd_cap)
{
	struct mc_err err;
	struct peer *p = peers_add(m.peers, &err);

	snprintf(p->addr, sizeof(p->addr), "unix:/peer-%u", p->id);
	p->heard = mc_mono_ms();
	p->tiers[MC_TIER_DRAM] = (struct peer_tier){ .capacity = 1 << 30, .present = true };
	if (ssd_cap > 0)
		p->tiers[MC_TIER_SSD] = (struct peer_tier){ .capacity = ssd_cap, .present = true };
	return p;
}

/* key of size bytes, committed at committed (0: not known), one complete copy on p's dram. */
static void
obj(const char *key, uint64_t size, uint64_t committed, const struct peer *p)
{
	struct mc_err err;
	size_t len = strlen(key);
	struct mobj *o = store_create(m.store, store_key_hash(0, key, len), 0, key, len, size, NULL,
				      0, &err);
	struct mrep *r;

	o->version = 1;
	o->committed = committed;
	store_access_new(m.store, o, 0);
	r = store_rep_add(o);
	r->peer = p->id;
	r->tier = MC_TIER_DRAM;
	r->version = 1;
	r->state = REP_COMPLETE;
}

static struct cand_build *
build(struct mc_cand_view *v)
{
	struct cand_filter f = { 0 };
	struct mc_err err;
	struct cand_build *b;

	mc_cand_view_init(v);
	b = candidates_begin(&m, &f, v, &err);
	while (b != NULL && candidates_step(b, 64, &err) == 1)
		;
	return b;
}

static bool
has(const struct mc_cand_view *v, const char *key)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->c[i].key_len == strlen(key) &&
		    memcmp(mc_cand_key(v, &v->c[i]), key, v->c[i].key_len) == 0)
			return true;
	return false;
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	struct mc_young_tally young;
	struct mc_cand_view v;
	struct cand_build *b;
	struct peer *plain, *tiered;
	uint64_t old;
	struct mc_err err;

	base = event_base_new();
	mc_clock_set_fake(NOW);
	master_defaults(&m.cfg);
	m.cfg.young = 10000;
	TAP_OK(store_init(m.store, &err) == 0 && peers_init(m.peers, base, m.store, &err) == 0,
	       "a master's store and peer table");
	plain = peer(0);
	tiered = peer(1 << 30);
	obj("old", 100, 0, plain);
	obj("aged", 200, NOW - 10000, plain);
	obj("young1", 300, NOW - 9999, plain);
	obj("young2", 400, NOW - 2000, plain);
	obj("moves", 500, NOW, tiered);
	b = build(&v);
	TAP_OK(b != NULL && v.n == 5, "build: every copy is in the view");
	candidates_young(b, &young, &old);
	TAP_OK(young.kept == 2 && young.kept_bytes == 700 && young.until == NOW + 1,
	       "young: the copies committed within --young that a round would drop, and when the "
	       "first ages");
	TAP_OK(old == 100 + 200 + 500,
	       "young: the others' bytes, a copy that would move down among them");
	candidates_drop_young(b);
	TAP_OK(v.n == 3 && has(&v, "old") && has(&v, "aged") && has(&v, "moves") &&
		       !has(&v, "young1") && !has(&v, "young2"),
	       "drop: the young copies leave the view, every other record stays whole");
	candidates_end(b);
	mc_cand_view_free(&v);
	m.cfg.young = 0;
	b = build(&v);
	candidates_young(b, &young, &old);
	TAP_OK(young.kept == 0 && old == 1500, "--young 0: nothing is young");
	candidates_end(b);
	mc_cand_view_free(&v);
	peers_free(m.peers);
	store_free(m.store);
	event_base_free(base);
	return tap_done();
}
