/*
 * Unit tests for the peer's pool (cmd/mc-peer/pool.c): pool_evict's two
 * reasons (delete drops and never moves a copy; reclaim hands the copy
 * to a mover when there is a tier below and one to move it, and drops
 * it otherwise, as it always drops a dynamic replica), bytes kept for a
 * reader until it lets go, the copies pool_evict must leave alone, a
 * superseding commit freeing the old copy, and the counts by tier and
 * reason.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "pool.h"
#include "tap.h"

#define T "tenant"

static struct medium *media[MC_TIER_COUNT];
static struct pindex ix;
static struct pool pl;

/* What the stand-in mover was asked, and what it answers. */
static struct {
	int calls, from, to, answer;
	char key[32];
} mover;

static int
fake_demote(void *arg, const struct pool_key *k, int from, int to)
{
	(void)arg;
	mover.calls++;
	mover.from = from;
	mover.to = to;
	snprintf(mover.key, sizeof(mover.key), "%.*s", (int)k->key_len, k->key);
	return mover.answer;
}

/* What the drop hook was told last, and how often. */
static struct {
	int calls;
	enum pool_drop_why why;
	int tier;
} told;

static void
on_drop(void *arg, const struct pobj *o, enum pool_drop_why why)
{
	(void)arg;
	told.calls++;
	told.why = why;
	told.tier = o->tier;
}

/* Commit key at version, size bytes in dram, through the pool: 0 or the error code. */
static int
put(const char *key, uint64_t version, uint64_t size)
{
	struct mc_err err;
	uint64_t off = 0;
	struct pobj *o;

	if (size > 0 && medium_alloc(media[MC_TIER_DRAM], size, &off, &err) != 0)
		return err.code;
	o = pobj_new(&ix, T, strlen(T), key, strlen(key), version, size, 0, MC_TIER_DRAM, off);
	if (pool_commit(&pl, o, &err) != 0) {
		pindex_release(&ix, o);
		return err.code;
	}
	return 0;
}

static bool
held(const char *key)
{
	return pindex_version(&ix, T, strlen(T), key, strlen(key), NULL, NULL) == 1;
}

static struct pool_result
evict(const char *key, int tier, enum pool_reason why)
{
	struct pool_key k = { T, strlen(T), key, strlen(key), false, 0 };
	struct pool_result res;

	pool_evict(&pl, &k, tier, why, &res);
	return res;
}

static uint64_t
freed(enum pool_reason why)
{
	return pool_evictions(&pl, MC_TIER_DRAM, why);
}

static void
test_delete(void)
{
	struct pool_result r;
	uint64_t d0 = freed(POOL_DELETE);

	put("d", 1, 5000);
	r = evict("d", MC_TIER_NONE, POOL_DELETE);
	TAP_OK(r.outcome == POOL_FREED && r.tier == MC_TIER_DRAM && r.bytes == 5000 && !r.held,
	       "delete: the copy is freed, and the result says where and how big");
	TAP_OK(!held("d") && medium_used(media[MC_TIER_DRAM]) == 0 && freed(POOL_DELETE) == d0 + 1,
	       "delete: gone from the index and its medium, counted as a delete");
	r = evict("d", MC_TIER_NONE, POOL_DELETE);
	TAP_OK(r.outcome == POOL_NONE && r.tier == MC_TIER_NONE && freed(POOL_DELETE) == d0 + 1,
	       "delete: a second one finds nothing and counts nothing");

	/* with a tier below and a mover ready, delete still never moves */
	pl.demote = fake_demote;
	mover.calls = 0;
	mover.answer = 0;
	put("d2", 1, 100);
	r = evict("d2", MC_TIER_DRAM, POOL_DELETE);
	TAP_OK(r.outcome == POOL_FREED && mover.calls == 0 && !held("d2"),
	       "delete: never demotes, even with ssd below and a mover");
	pl.demote = NULL;
}

static void
test_reclaim(void)
{
	struct pool_result r;
	uint64_t c0 = freed(POOL_RECLAIM), d0 = freed(POOL_DELETE);

	put("r", 1, 3000);
	r = evict("r", MC_TIER_DRAM, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_FREED && r.tier == MC_TIER_DRAM && r.bytes == 3000 && !held("r"),
	       "reclaim: with no mover it drops the copy and reports it");
	TAP_OK(freed(POOL_RECLAIM) == c0 + 1 && freed(POOL_DELETE) == d0,
	       "reclaim: counted as a reclaim, not a delete");

	pl.demote = fake_demote;
	mover.calls = 0;
	mover.answer = 0;
	put("m", 1, 3000);
	r = evict("m", MC_TIER_DRAM, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_DEMOTING && r.tier == MC_TIER_DRAM && mover.calls == 1 &&
		       mover.from == MC_TIER_DRAM && mover.to == MC_TIER_SSD &&
		       strcmp(mover.key, "m") == 0,
	       "reclaim: with ssd below and a mover, the copy is handed down from dram to ssd");
	TAP_OK(held("m") && freed(POOL_RECLAIM) == c0 + 1,
	       "reclaim: a copy being moved stays where it is and is not counted freed");

	mover.answer = 1;
	r = evict("m", MC_TIER_DRAM, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_IN_FLIGHT && held("m") && freed(POOL_RECLAIM) == c0 + 1,
	       "reclaim: a copy a transition owns already is in flight, and stays");

	told.calls = 0;
	mover.answer = -1;
	r = evict("m", MC_TIER_NONE, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_FREED && mover.calls == 3 && !held("m") &&
		       freed(POOL_RECLAIM) == c0 + 2,
	       "reclaim: when the mover cannot take it, the copy is dropped");
	TAP_OK(told.calls == 1 && told.why == POOL_DROP_NO_SPACE && told.tier == MC_TIER_DRAM,
	       "reclaim: that drop is told, as no room below");

	/* no tier below on this peer: the mover is not even asked */
	media[MC_TIER_SSD] = NULL;
	mover.answer = 0;
	put("n", 1, 10);
	r = evict("n", MC_TIER_DRAM, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_FREED && mover.calls == 3,
	       "reclaim: without a tier below, it drops and asks no mover");
	TAP_OK(told.calls == 2 && told.why == POOL_DROP_RECLAIM,
	       "reclaim: and that drop is told as a plain reclaim");
	pl.demote = NULL;
}

/* Mark key's copy a dynamic replica, as its commit notice would. */
static void
make_dynamic(const char *key)
{
	struct pobj *o = pindex_acquire(&ix, T, strlen(T), key, strlen(key));
	struct pmeta *pm = pmeta_new("", 0, "", 0, false, 0);

	pm->dynamic = true;
	pindex_set_meta(&ix, o, pm, 1);
	pindex_release(&ix, o);
}

static void
test_dynamic(void)
{
	struct pool_result r;
	uint64_t c0 = freed(POOL_RECLAIM);

	pl.demote = fake_demote;
	mover.calls = 0;
	mover.answer = 0;
	told.calls = 0;
	put("dyn", 1, 3000);
	make_dynamic("dyn");
	r = evict("dyn", MC_TIER_DRAM, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_FREED && mover.calls == 0 && !held("dyn") &&
		       freed(POOL_RECLAIM) == c0 + 1,
	       "reclaim: a dynamic replica is dropped, never handed to the mover, with ssd below");
	TAP_OK(told.calls == 1 && told.why == POOL_DROP_RECLAIM && told.tier == MC_TIER_DRAM,
	       "reclaim: that drop is told as any drop for capacity");
	put("plain", 1, 3000);
	r = evict("plain", MC_TIER_DRAM, POOL_RECLAIM);
	TAP_OK(r.outcome == POOL_DEMOTING && mover.calls == 1 && held("plain"),
	       "reclaim: a copy that is not dynamic is still demoted");
	evict("plain", MC_TIER_NONE, POOL_DELETE);
	pl.demote = NULL;
}

static void
test_drop(void)
{
	struct pool_key k = { T, strlen(T), "f", 1, true, 1 };
	struct pool_result r;
	uint64_t c0 = freed(POOL_RECLAIM), o0 = atomic_load(&pl.outcomes[POOL_FREED]);

	told.calls = 0;
	put("f", 1, 100);
	pool_drop(&pl, &k, MC_TIER_DRAM, POOL_DROP_FAILED, &r);
	TAP_OK(r.outcome == POOL_FREED && !held("f") && freed(POOL_RECLAIM) == c0 + 1 &&
		       told.calls == 1 && told.why == POOL_DROP_FAILED &&
		       atomic_load(&pl.dropped[MC_TIER_DRAM][POOL_DROP_FAILED]) == 1,
	       "pool_drop: a failed move's copy goes, counted as a reclaim and told why");
	pool_drop(&pl, &k, MC_TIER_DRAM, POOL_DROP_FAILED, &r);
	TAP_OK(r.outcome == POOL_NONE && told.calls == 1, "pool_drop: an absent copy: nothing");
	TAP_OK(atomic_load(&pl.outcomes[POOL_FREED]) == o0,
	       "pool_drop: not counted among pool_evict's outcomes");
	TAP_OK(strcmp(pool_outcome_name(POOL_DEMOTING), "demotion_queued") == 0 &&
		       strcmp(pool_outcome_name(POOL_IN_FLIGHT), "in_flight") == 0 &&
		       strcmp(pool_drop_why_name(POOL_DROP_NO_SPACE), "no_space") == 0,
	       "outcomes and drop reasons: spelled as the metrics label them");
	told.calls = 0;
	put("g", 1, 100);
	evict("g", MC_TIER_NONE, POOL_DELETE);
	TAP_OK(told.calls == 0, "a delete is not told: whoever asked for it knows");
}

static void
test_reader(void)
{
	struct medium *dram = media[MC_TIER_DRAM];
	struct pool_result r;
	struct pobj *o;

	put("h", 1, 2 * ARENA_PAGE);
	o = pindex_acquire(&ix, T, strlen(T), "h", 1);
	r = evict("h", MC_TIER_NONE, POOL_DELETE);
	TAP_OK(r.outcome == POOL_FREED && r.held && !held("h"),
	       "reader: the copy leaves the index at once, and the result says it is held");
	TAP_OK(medium_used(dram) == 2 * ARENA_PAGE && o->size == 2 * ARENA_PAGE,
	       "reader: its bytes stay while the reader holds them");
	pindex_release(&ix, o);
	TAP_OK(medium_used(dram) == 0, "reader: and go back when it lets go");
}

static void
test_leave_alone(void)
{
	struct pool_key k = { T, strlen(T), "v", 1, true, 4 };
	struct pool_result r;

	put("v", 5, 10);
	pool_evict(&pl, &k, MC_TIER_NONE, POOL_DELETE, &r);
	TAP_OK(r.outcome == POOL_NONE && held("v"), "evict: a newer version than asked stays");
	r = evict("v", MC_TIER_SSD, POOL_DELETE);
	TAP_OK(r.outcome == POOL_NONE && held("v"), "evict: a copy on another tier stays");
	k.max_version = 5;
	pool_evict(&pl, &k, MC_TIER_DRAM, POOL_DELETE, &r);
	TAP_OK(r.outcome == POOL_FREED && !held("v"), "evict: its own version on its tier goes");
}

static void
test_commit(void)
{
	struct medium *dram = media[MC_TIER_DRAM];
	uint64_t d0 = freed(POOL_DELETE);

	put("u", 1, 3 * ARENA_PAGE);
	TAP_OK(put("u", 2, ARENA_PAGE) == 0 && medium_used(dram) == ARENA_PAGE &&
		       freed(POOL_DELETE) == d0 + 1,
	       "commit: a superseding upsert frees the old copy, counted as a delete");
	TAP_OK(put("u", 1, ARENA_PAGE) == MC_ERR_VERSION && medium_used(dram) == ARENA_PAGE &&
		       freed(POOL_DELETE) == d0 + 1,
	       "commit: an older version is refused and frees nothing");
	evict("u", MC_TIER_NONE, POOL_DELETE);
	TAP_OK(strcmp(pool_reason_name(POOL_RECLAIM), "reclaim") == 0 &&
		       strcmp(pool_reason_name(POOL_DELETE), "delete") == 0,
	       "reasons: named reclaim and delete");
}

int
main(void)
{
	struct mc_err err;
	struct medium_conf conf = { .size = 64 * ARENA_PAGE };
	struct medium *ssd;

	media[MC_TIER_DRAM] = medium_open(MC_TIER_DRAM, &conf, &err);
	/* No ssd medium exists yet: a second dram stands in below. */
	ssd = medium_dram.open(&conf, &err);
	ssd->ops = &medium_dram;
	ssd->tier = MC_TIER_SSD;
	media[MC_TIER_SSD] = ssd;
	TAP_OK(media[MC_TIER_DRAM] && pindex_init(&ix, media, &err) == 0,
	       "a pool over dram with a stand-in ssd below");
	pool_init(&pl, &ix);
	pl.on_drop = on_drop;
	test_delete();
	test_reclaim();
	media[MC_TIER_SSD] = ssd;
	test_dynamic();
	test_reader();
	test_leave_alone();
	test_commit();
	test_drop();
	pindex_destroy(&ix);
	medium_close(ssd);
	medium_close(media[MC_TIER_DRAM]);
	return tap_done();
}
