/*
 * Unit tests for the peer's local eviction worker (cmd/mc-peer/reclaim.c)
 * over a real index, pool and mover: by default a tier keeps the
 * headroom band, one slice below full, its writes in flight counted in
 * its use by the room they hold; with
 * watermarks given, a tier over its high watermark is
 * drained exactly to its low one, least recently used first; a copy a
 * reader holds is kept; a drop a reader still holds counts as freed; a
 * tier with a tier below demotes and loses no key; group members and
 * hard pins are never offered, active soft pins only in the second pass
 * when it is allowed, and a tier only group members could cover is
 * stalled; in master mode DRAM is left alone; master_ranked takes the
 * master's victims first, page-rounded to the overage, covers the rest
 * from its own plan, does not wait on a slow answer and falls back to
 * local order when the master has no ranking; young copies (--young)
 * are left out of a watermark pass, which rests until the first ages
 * and then takes them, and go only for a write waiting for room, counted;
 * a plan looks at a window of the tier's coldest candidates, its lowest
 * by decayed worth and its oldest probationers beyond their share, not
 * at every copy, and grows the window when a plan over it falls short.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/plan.h"
#include "mc/planner.h"

#include "arena.h"
#include "mover.h"
#include "pool.h"
#include "reclaim.h"
#include "tap.h"

#define T "tenant"
#define PAGES 64
/* dram's size in pages for the next setup */
static uint64_t dram_pages = PAGES;

static struct event_base *base;
static struct medium *media[MC_TIER_COUNT];
static struct pindex ix;
static struct pool pl;
static struct mover *mv;
static struct reclaimer *rc;
static struct mc_policy policy;
static uint64_t now_ms = 1000000;
/* the soft pin's deadline the next copies get (0: none), and whether the second pass may take them */
static uint64_t put_sp_deadline;
static bool soft_pass;
/* --young of the next setup (0: nothing is young) */
static uint64_t young_ms;
/* the next setup gives no watermarks: its tiers keep the headroom band */
static bool headroom;

/* What the fake master was asked, and what it answers. */
static struct {
	int calls;
	int tier;
	uint64_t bytes;
	bool answer_at_once;
	const char *keys[8];
	size_t nkeys;
} master;

static void
tick(void)
{
	mc_clock_set_fake(++now_ms);
}

static void
setup(bool with_ssd, enum evict_mode mode)
{
	struct medium_conf conf = { .size = dram_pages * ARENA_PAGE };
	struct reclaim_conf c = {
		.mode = mode, .policy = &policy, .soft_pinned_pass = soft_pass, .young_ms = young_ms
	};
	struct mc_err err;

	memset(media, 0, sizeof(media));
	media[MC_TIER_DRAM] = medium_open(MC_TIER_DRAM, &conf, &err);
	if (with_ssd) {
		/* A second dram stands in for ssd: media are known by their operations. */
		struct medium *ssd = medium_dram.open(&conf, &err);

		ssd->ops = &medium_dram;
		ssd->tier = MC_TIER_SSD;
		media[MC_TIER_SSD] = ssd;
	}
	pindex_init(&ix, media, &err);
	pool_init(&pl, &ix);
	mv = NULL;
	if (with_ssd) {
		mv = mover_new(base, &pl, &err);
		pl.demote = mover_demote;
		pl.demote_arg = mv;
	}
	/* these tests pin the drain of a wide band: they give it, as --dram-watermarks would */
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		c.marks[t] = !headroom;
		c.high[t] = 0.9;
		c.low[t] = 0.7;
	}
	rc = reclaimer_new(base, &pl, mv, &c, &err);
	memset(&master, 0, sizeof(master));
}

static void
teardown(void)
{
	reclaimer_free(rc);
	mover_free(mv);
	pindex_destroy(&ix);
	for (int t = 0; t < MC_TIER_COUNT; t++)
		medium_close(media[t]);
}

static const char *put_type = "general";

/* Commit key (pages of dram) with its commit notice: group may be NULL. */
static void
put_meta(const char *key, uint64_t pages, const char *group, bool hard_pin)
{
	uint64_t off = 0, size = pages * ARENA_PAGE;
	struct pobj *o;

	tick();
	medium_alloc(media[MC_TIER_DRAM], size, &off, NULL);
	o = pobj_new(&ix, T, strlen(T), key, strlen(key), 1, size, 0, MC_TIER_DRAM, off);
	pool_commit(&pl, o, NULL);
	o = pindex_acquire(&ix, T, strlen(T), key, strlen(key));
	pindex_set_meta(&ix, o,
			pmeta_new(put_type, strlen(put_type), group ? group : "",
				  group ? strlen(group) : 0, hard_pin, put_sp_deadline),
			now_ms);
	pindex_release(&ix, o);
}

static void
put(const char *key)
{
	put_meta(key, 1, NULL, false);
}

static void
keyname(char *buf, size_t cap, int i)
{
	snprintf(buf, cap, "k%03d", i);
}

static bool
has(const char *key)
{
	return pindex_version(&ix, T, strlen(T), key, strlen(key), NULL, NULL) == 1;
}

static int
tier_of(const char *key)
{
	int tier = MC_TIER_NONE;

	pindex_version(&ix, T, strlen(T), key, strlen(key), NULL, &tier);
	return tier;
}

static uint64_t
tier_pages(int tier)
{
	return medium_used(media[tier]) / ARENA_PAGE;
}

/* Run the loop until nothing is left to do (moves included). */
static void
run(void)
{
	for (int i = 0; i < 2000; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

/*
 * The copies are made on the mover's worker: wait for the completions of
 * every demotion queued, then run the loop dry.
 */
static void
moves_land(void)
{
	for (int i = 0; i < 10000 &&
			mover_stats(mv)->done[MOVE_DEMOTE] + mover_stats(mv)->failed[MOVE_DEMOTE] <
				mover_stats(mv)->queued[MOVE_DEMOTE];
	     i++)
		event_base_loop(base, EVLOOP_ONCE);
	run();
}

/* Fill dram with n one-page copies k000.., oldest first, and wake the worker. */
static void
fill(int n)
{
	char k[16];

	for (int i = 0; i < n; i++) {
		keyname(k, sizeof(k), i);
		put(k);
	}
	reclaimer_kick(rc, MC_TIER_DRAM, false);
}

static void
test_drains_exactly(void)
{
	setup(false, EVICT_LOCAL);
	fill(50);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 50 && reclaimer_events(rc, RECLAIM_ROUND) == 0,
	       "drain: under the high watermark nothing is evicted");
	fill(58);
	run();
	/* low is 0.7 x 64 = 44.8 pages: 44 is the first count at or under it */
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44,
	       "drain: over the high watermark it drains to the "
	       "low one exactly (%llu pages left)",
	       (unsigned long long)tier_pages(MC_TIER_DRAM));
	TAP_OK(reclaimer_events(rc, RECLAIM_KEY) == 14 && reclaimer_need(rc, MC_TIER_DRAM) == 0,
	       "drain: 14 victims, the overage, and nothing more is needed");
	TAP_OK(atomic_load(&pl.freed[MC_TIER_DRAM][POOL_RECLAIM]) == 14,
	       "drain: through pool_evict, as reclaims");
	teardown();
}

static void
test_recency(void)
{
	char k[16];
	bool old_gone = true, touched_kept = true;

	setup(false, EVICT_LOCAL);
	for (int i = 0; i < 58; i++) {
		keyname(k, sizeof(k), i);
		put(k);
	}
	/* the ten oldest are read again: they are the most recent now */
	for (int i = 0; i < 10; i++) {
		struct pobj *o;

		tick();
		keyname(k, sizeof(k), i);
		o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));
		pindex_read(&ix, o);
		pindex_release(&ix, o);
	}
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	for (int i = 0; i < 10; i++) {
		keyname(k, sizeof(k), i);
		touched_kept &= has(k);
	}
	for (int i = 10; i < 24; i++) {
		keyname(k, sizeof(k), i);
		old_gone &= !has(k);
	}
	TAP_OK(touched_kept, "recency: copies read since stay");
	TAP_OK(old_gone && has("k024"), "recency: the least recently used went, in order");
	teardown();
}

/* kv blocks: the peer's own history ranks them, as the master's would. */
static void
test_kv_history(void)
{
	char k[16];
	bool read_kept = true;
	struct pobj *o;

	setup(false, EVICT_LOCAL);
	put_type = "kv";
	for (int i = 0; i < 58; i++) {
		keyname(k, sizeof(k), i);
		put(k);
		/* every fourth block is read again twice, right away */
		for (int r = 0; i % 4 == 0 && r < 2; r++) {
			o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));
			pindex_read(&ix, o);
			pindex_release(&ix, o);
		}
	}
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	for (int i = 0; i < 58; i += 4) {
		keyname(k, sizeof(k), i);
		read_kept &= has(k);
	}
	TAP_OK(read_kept && tier_pages(MC_TIER_DRAM) == 44,
	       "kv: blocks read again outrank blocks never read, oldest or not");
	TAP_OK(!has("k001") && has("k057"), "kv: unread blocks past probation go oldest first");
	/* k001 was evicted for room: written again, it resumes its value */
	put("k001");
	o = pindex_acquire(&ix, T, strlen(T), "k001", 4);
	TAP_OK(o && !o->probation, "kv: a key evicted and written again is not new: its ghost");
	pindex_release(&ix, o);
	put("fresh");
	o = pindex_acquire(&ix, T, strlen(T), "fresh", 5);
	TAP_OK(o && o->probation, "kv: a key never seen starts on probation");
	pindex_release(&ix, o);
	put_type = "general";
	teardown();
}

/* A block is worth no more than the block before it, when both are here. */
static void
test_chain_worth(void)
{
	struct pobj *head, *tail;
	uint64_t seq;
	double hl;

	setup(false, EVICT_LOCAL);
	put("head");
	put("tail");
	head = pindex_acquire(&ix, T, strlen(T), "head", 4);
	tail = pindex_acquire(&ix, T, strlen(T), "tail", 4);
	for (int i = 0; i < 5; i++)
		pindex_read(&ix, tail);
	pindex_history_now(&ix, &seq, &hl);
	TAP_OK(pindex_worth(&ix, tail, seq, hl) > pindex_worth(&ix, head, seq, hl),
	       "chain: without a parent a block's worth is its own value");
	/* the worth is taken at each access, as the master and mc-bench sim take it */
	tail->parent = pindex_hash(T, strlen(T), "head", 4);
	pindex_read(&ix, tail);
	pindex_history_now(&ix, &seq, &hl);
	TAP_OK(pindex_worth(&ix, tail, seq, hl) < pindex_worth(&ix, head, seq, hl),
	       "chain: read with its parent here it is worth less than the parent");
	pindex_release(&ix, head);
	pindex_release(&ix, tail);
	teardown();
}

static void
test_soft_pins(void)
{
	char k[16];
	bool pinned_kept = true;

	setup(false, EVICT_LOCAL);
	put_sp_deadline = now_ms + 3600 * 1000;
	for (int i = 0; i < 58; i++) {
		if (i == 20)
			put_sp_deadline = 0;
		keyname(k, sizeof(k), i);
		put(k);
	}
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	for (int i = 0; i < 20; i++) {
		keyname(k, sizeof(k), i);
		pinned_kept &= has(k);
	}
	TAP_OK(pinned_kept && tier_pages(MC_TIER_DRAM) == 44,
	       "soft pins: active soft pins are not offered; the others cover the overage");
	teardown();
	/* every copy pinned: only the second pass, when allowed, takes them */
	put_sp_deadline = now_ms + 3600 * 1000;
	setup(false, EVICT_LOCAL);
	fill(58);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 58 && reclaimer_events(rc, RECLAIM_NO_CANDIDATE) >= 1,
	       "soft pins: without the second pass nothing is taken");
	teardown();
	soft_pass = true;
	setup(false, EVICT_LOCAL);
	fill(58);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44,
	       "soft pins: the second pass takes them, to the low watermark");
	teardown();
	soft_pass = false;
	put_sp_deadline = 0;
}

static void
test_reader_kept(void)
{
	struct pobj *o;

	setup(false, EVICT_LOCAL);
	fill(0);
	put("k000");
	/* a read in flight on the coldest copy */
	o = pindex_acquire(&ix, T, strlen(T), "k000", 4);
	for (int i = 1; i < 58; i++) {
		char k[16];

		keyname(k, sizeof(k), i);
		put(k);
	}
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	TAP_OK(has("k000") && o->linked, "reader: a copy being read is never freed under it");
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44, "reader: the others cover the overage");
	pindex_release(&ix, o);
	teardown();
}

static void
test_held_counts(void)
{
	struct pool_key k = { T, strlen(T), "big", 3, false, 0 };
	struct pool_result res;
	struct pobj *o;

	setup(false, EVICT_LOCAL);
	put_meta("big", 10, NULL, false);
	fill(48);
	/* the master drops a copy a reader still holds: its 10 pages are as good as free */
	o = pindex_acquire(&ix, T, strlen(T), "big", 3);
	pool_evict(&pl, &k, MC_TIER_NONE, POOL_DELETE, &res);
	TAP_OK(res.held && tier_pages(MC_TIER_DRAM) == 58 &&
		       pindex_held(&ix, MC_TIER_DRAM) == 10 * ARENA_PAGE,
	       "held: a dropped copy a reader holds is counted held");
	reclaimer_kick(rc, MC_TIER_DRAM, true);
	run();
	TAP_OK(reclaimer_events(rc, RECLAIM_KEY) == 4,
	       "held: the pass frees only what the held bytes do not cover (4, not 14)");
	pindex_release(&ix, o);
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44 && pindex_held(&ix, MC_TIER_DRAM) == 0,
	       "held: once the reader lets go the tier is at its low watermark");
	teardown();
}

static void
test_demotion(void)
{
	char k[16];
	bool all = true;

	setup(true, EVICT_LOCAL);
	fill(58);
	run();
	moves_land();
	for (int i = 0; i < 58; i++) {
		keyname(k, sizeof(k), i);
		all &= tier_of(k) != MC_TIER_NONE;
	}
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44 && tier_pages(MC_TIER_SSD) == 14,
	       "demote: dram drains to its low watermark into ssd");
	TAP_OK(all && mover_stats(mv)->done[MOVE_DEMOTE] == 14 &&
		       mover_stats(mv)->queued[MOVE_DEMOTE] == 14,
	       "demote: no key is lost, and no more demotions were queued than the overage");
	{
		struct pindex_order_sums d, s;

		pindex_order_sums(&ix, MC_TIER_DRAM, &d);
		pindex_order_sums(&ix, MC_TIER_SSD, &s);
		TAP_OK(d.copies == 44 && s.copies == 14 && s.bytes == 14 * ARENA_PAGE &&
			       s.probation_bytes == 14 * ARENA_PAGE,
		       "demote: a copy that lands below is a candidate there, on probation still, "
		       "and no longer above");
	}
	teardown();
}

static void
test_groups_and_pins(void)
{
	char k[16];

	setup(false, EVICT_LOCAL);
	for (int i = 0; i < 58; i++) {
		keyname(k, sizeof(k), i);
		put_meta(k, 1, i < 40 ? "g" : NULL, i >= 40);
	}
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 58 && reclaimer_events(rc, RECLAIM_KEY) == 0,
	       "groups: group members and hard pins are never offered");
	TAP_OK(reclaimer_stalled(rc, MC_TIER_DRAM) && reclaimer_events(rc, RECLAIM_STALLED) == 1 &&
		       reclaimer_events(rc, RECLAIM_NO_CANDIDATE) == 1,
	       "groups: the tier is stalled, for the master's round");
	teardown();
}

static void
test_master_mode(void)
{
	setup(false, EVICT_MASTER);
	fill(60);
	run();
	TAP_OK(!reclaimer_self_evicts(rc, MC_TIER_DRAM) && tier_pages(MC_TIER_DRAM) == 60,
	       "master mode: dram is the master's rounds'");
	teardown();
	setup(true, EVICT_MASTER);
	TAP_OK(!reclaimer_self_evicts(rc, MC_TIER_DRAM) && reclaimer_self_evicts(rc, MC_TIER_SSD),
	       "master mode: ssd still evicts itself");
	teardown();
}

/*
 * With no watermarks given a tier keeps the headroom band (mc/band.h):
 * here a slice is one page (a 64-page tier's 1/64), so it starts one
 * page short of full, what is in flight counted in its use, and stops a page lower.
 */
static void
test_headroom_band(void)
{
	struct mc_band b;
	uint64_t off = 0;
	char k[16];

	headroom = true;
	setup(false, EVICT_LOCAL);
	reclaimer_band(rc, MC_TIER_DRAM, &b);
	TAP_OK(b.slice == ARENA_PAGE && b.high == 63 * ARENA_PAGE && b.low == 62 * ARENA_PAGE,
	       "headroom: by default the band is one slice below full, one slice wide");
	fill(63);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 63 && reclaimer_events(rc, RECLAIM_ROUND) == 0,
	       "headroom: up to the band's high end nothing is evicted");
	keyname(k, sizeof(k), 63);
	put(k);
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 62 && reclaimer_events(rc, RECLAIM_KEY) == 2 &&
		       !has("k000") && !has("k001") && has("k002"),
	       "headroom: one page over the high end, it frees the coldest down to the low end "
	       "(%llu pages left)",
	       (unsigned long long)tier_pages(MC_TIER_DRAM));
	/* a write of two pages takes its room and is not committed yet */
	medium_alloc(media[MC_TIER_DRAM], 2 * ARENA_PAGE, &off, NULL);
	reclaimer_band(rc, MC_TIER_DRAM, &b);
	TAP_OK(reclaimer_inflight(rc, MC_TIER_DRAM) == 2 * ARENA_PAGE &&
		       b.high == 63 * ARENA_PAGE && b.low == 62 * ARENA_PAGE,
	       "headroom: a write in flight counts in the tier's use by its room; the band stays");
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 62 && pindex_tier_objects(&ix, MC_TIER_DRAM) == 60,
	       "headroom: the tier drains to the low end with the write's room in it, no lower");
	medium_release(media[MC_TIER_DRAM], off, 2 * ARENA_PAGE);
	reclaimer_band(rc, MC_TIER_DRAM, &b);
	TAP_OK(reclaimer_inflight(rc, MC_TIER_DRAM) == 0 && b.high == 63 * ARENA_PAGE,
	       "headroom: once the write is gone its room is free and the band is where it was");
	teardown();
	headroom = false;
}

/* Commit key (one page of dram) before its commit notice: no candidate yet. */
static void
put_unnoticed(const char *key)
{
	uint64_t off = 0;
	struct pobj *o;

	tick();
	medium_alloc(media[MC_TIER_DRAM], ARENA_PAGE, &off, NULL);
	o = pobj_new(&ix, T, strlen(T), key, strlen(key), 1, ARENA_PAGE, 0, MC_TIER_DRAM, off);
	pool_commit(&pl, o, NULL);
}

/*
 * A tier full of copies whose commit notices have not come has nothing
 * to offer, and its pass rests; a notice that makes one a candidate
 * wakes it at once, not after the pause, for a write may be waiting.
 */
static void
test_notice_wakes(void)
{
	char k[16];

	headroom = true;
	setup(false, EVICT_LOCAL);
	for (int i = 0; i < 64; i++) {
		keyname(k, sizeof(k), i);
		put_unnoticed(k);
	}
	reclaimer_room(rc, MC_TIER_DRAM, ARENA_PAGE, 64 * ARENA_PAGE);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 64 && reclaimer_events(rc, RECLAIM_NO_CANDIDATE) == 1,
	       "notice: copies without their commit notice are not offered; the pass rests");
	for (int i = 0; i < 4; i++) {
		struct pobj *o;

		keyname(k, sizeof(k), i);
		o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));
		pindex_set_meta(&ix, o, pmeta_new("general", 7, "", 0, false, 0), now_ms);
		pindex_release(&ix, o);
		reclaimer_candidate(rc, MC_TIER_DRAM);
	}
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 62 && !has("k000") && !has("k001") && has("k002"),
	       "notice: the notices wake the resting pass, which drains to the band's low end "
	       "(%llu pages)",
	       (unsigned long long)tier_pages(MC_TIER_DRAM));
	teardown();
	headroom = false;
}

/* Whether path exists, waiting up to a few seconds for it. */
static bool
appears(const char *path)
{
	struct timespec ms = { 0, 1000000 };
	FILE *f;

	for (int i = 0; i < 5000; i++) {
		if ((f = fopen(path, "r")) != NULL) {
			fclose(f);
			return true;
		}
		nanosleep(&ms, NULL);
	}
	return false;
}

/*
 * The master asks for room again and again while demotions are still
 * copying: it counts their copies on the tier until their notices land,
 * and so does the tier's medium. They are not room coming in, and the
 * requests again ask for nothing more than the first.
 */
static void
test_room_while_moving(void)
{
	char dir[] = "/tmp/mc-reclaim-XXXXXX", go[256], mark[256];
	uint64_t queued;
	FILE *f;

	TAP_OK(mkdtemp(dir) != NULL, "moving: a fault dir");
	setenv("MC_FAULT_DIR", dir, 1);
	setenv("MC_FAULT", "move.demote:pause", 1);
	mc_fault_reset();
	snprintf(go, sizeof(go), "%s/move.demote", dir);
	snprintf(mark, sizeof(mark), "%s/move.demote.paused", dir);
	headroom = true;
	setup(true, EVICT_LOCAL);
	fill(64);
	run();
	TAP_OK(appears(mark), "moving: the first demotion is copying, held at its pause");
	queued = mover_stats(mv)->queued[MOVE_DEMOTE];
	for (int i = 0; i < 5; i++) {
		reclaimer_room(rc, MC_TIER_DRAM, ARENA_PAGE, 64 * ARENA_PAGE);
		run();
	}
	TAP_OK(queued == 2 && mover_stats(mv)->queued[MOVE_DEMOTE] == queued,
	       "moving: five requests for one page while two demotions copy queue none more "
	       "(%llu queued)",
	       (unsigned long long)mover_stats(mv)->queued[MOVE_DEMOTE]);
	if ((f = fopen(go, "w")) != NULL)
		fclose(f);
	moves_land();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 62 && tier_pages(MC_TIER_SSD) == 2,
	       "moving: once they land the tier is at its band's low end, no lower");
	teardown();
	headroom = false;
	unsetenv("MC_FAULT");
	mc_fault_reset();
	unlink(go);
	unlink(mark);
	rmdir(dir);
}

/* The fake master: records the query, answers from master.keys when told to. */
static int
ask(void *arg, int tier, uint64_t bytes, unsigned max)
{
	(void)arg;
	(void)max;
	master.calls++;
	master.tier = tier;
	master.bytes = bytes;
	if (master.answer_at_once) {
		struct reclaim_ranked r[8];

		for (size_t i = 0; i < master.nkeys; i++)
			r[i] = (struct reclaim_ranked){
				T, strlen(T),	  master.keys[i], strlen(master.keys[i]),
				1, ARENA_PAGE / 2
			};
		reclaimer_answer(rc, tier, r, master.nkeys);
		master.answer_at_once = false;
	}
	return 0;
}

static void
test_ranked_first(void)
{
	setup(false, EVICT_MASTER_RANKED);
	reclaimer_on_ask(rc, ask, NULL);
	master.answer_at_once = true;
	master.keys[0] = "k050";
	master.keys[1] = "k051";
	master.keys[2] = "k052";
	master.nkeys = 3;
	fill(58);
	run();
	TAP_OK(master.calls >= 1 && master.tier == MC_TIER_DRAM &&
		       master.bytes ==
			       58 * ARENA_PAGE - (uint64_t)((double)(PAGES * ARENA_PAGE) * 0.7),
	       "ranked: the master is asked for the tier's overage");
	TAP_OK(!has("k050") && !has("k051") && !has("k052") &&
		       reclaimer_events(rc, RECLAIM_MASTER_KEY) == 3,
	       "ranked: the master's victims go first, warm as they are");
	TAP_OK(reclaimer_events(rc, RECLAIM_KEY) == 11 && tier_pages(MC_TIER_DRAM) == 44,
	       "ranked: the local plan covers the rest, page by page, to the low watermark");
	teardown();
}

/*
 * A ranking answered from a stale view names copies this peer freed
 * already: they count as nothing freed, and the local plan makes up
 * for them with copies that really go.
 */
static void
test_ranked_gone(void)
{
	setup(false, EVICT_MASTER_RANKED);
	reclaimer_on_ask(rc, ask, NULL);
	master.answer_at_once = true;
	master.keys[0] = "gone1";
	master.keys[1] = "k050";
	master.keys[2] = "gone2";
	master.nkeys = 3;
	fill(58);
	run();
	TAP_OK(!has("k050") && reclaimer_events(rc, RECLAIM_MASTER_KEY) == 1,
	       "ranked, gone: a ranked copy the peer no longer holds is not counted freed");
	TAP_OK(reclaimer_events(rc, RECLAIM_KEY) == 13 && tier_pages(MC_TIER_DRAM) == 44 &&
		       reclaimer_events(rc, RECLAIM_KEY) +
				       reclaimer_events(rc, RECLAIM_MASTER_KEY) ==
			       atomic_load(&pl.outcomes[POOL_FREED]),
	       "ranked, gone: every copy counted went, and the local plan made up the rest");
	teardown();
}

static void
test_slow_master(void)
{
	setup(false, EVICT_MASTER_RANKED);
	reclaimer_on_ask(rc, ask, NULL);
	fill(58);
	/* the answer never comes: after the first wait the local plan drains */
	for (int i = 0; i < 200 && tier_pages(MC_TIER_DRAM) > 44; i++)
		event_base_loop(base, EVLOOP_ONCE);
	TAP_OK(master.calls == 1 && tier_pages(MC_TIER_DRAM) == 44 &&
		       reclaimer_events(rc, RECLAIM_KEY) == 14,
	       "slow master: an answer that does not come does not hold eviction up");
	TAP_OK(reclaimer_events(rc, RECLAIM_MASTER_KEY) == 0, "slow master: nothing was ranked");
	teardown();
}

static void
test_no_ranking(void)
{
	setup(false, EVICT_MASTER_RANKED);
	reclaimer_on_ask(rc, ask, NULL);
	reclaimer_no_ranking(rc);
	fill(58);
	run();
	TAP_OK(master.calls == 0 && tier_pages(MC_TIER_DRAM) == 44,
	       "no ranking: against a master without it, eviction is local");
	teardown();
}

/* A registration that says the master ranks, after one that said it does not. */
static void
test_ranking_again(void)
{
	setup(false, EVICT_MASTER_RANKED);
	reclaimer_on_ask(rc, ask, NULL);
	reclaimer_no_ranking(rc);
	reclaimer_on_ask(rc, ask, NULL);
	master.answer_at_once = true;
	master.keys[0] = "k050";
	master.nkeys = 1;
	fill(58);
	run();
	TAP_OK(master.calls >= 1 && !has("k050") && reclaimer_events(rc, RECLAIM_MASTER_KEY) == 1 &&
		       tier_pages(MC_TIER_DRAM) == 44,
	       "ranking again: a master that ranks after one that did not is asked first");
	teardown();
}

static void
test_young_kept(void)
{
	uint64_t rounds, copies, bytes;

	young_ms = 150;
	setup(false, EVICT_LOCAL);
	fill(58);
	run();
	reclaimer_young_taken(rc, &copies, &bytes);
	TAP_OK(tier_pages(MC_TIER_DRAM) == 58 && reclaimer_events(rc, RECLAIM_KEY) == 0 &&
		       reclaimer_events(rc, RECLAIM_YOUNG) == 1 && copies == 0,
	       "young: a watermark pass leaves copies younger than --young alone");
	TAP_OK(reclaimer_need(rc, MC_TIER_DRAM) > 0, "young: the tier stays over its mark");
	rounds = reclaimer_events(rc, RECLAIM_ROUND);
	reclaimer_kick(rc, MC_TIER_DRAM, false);
	run();
	TAP_OK(reclaimer_events(rc, RECLAIM_ROUND) == rounds,
	       "young: the pass rests (no plan at each turn of the loop, nor at each commit)");
	/* aged on the clock: the pass's timer, armed for when the first ages, takes them */
	now_ms += 150;
	mc_clock_set_fake(now_ms);
	for (int i = 0; i < 20 && tier_pages(MC_TIER_DRAM) > 44; i++)
		event_base_loop(base, EVLOOP_ONCE);
	reclaimer_young_taken(rc, &copies, &bytes);
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44 && reclaimer_events(rc, RECLAIM_KEY) == 14 &&
		       copies == 0,
	       "young: once they have aged, the pass drains them as before, uncounted");
	teardown();
	young_ms = 0;
}

static void
test_young_for_room(void)
{
	uint64_t copies, bytes;

	young_ms = 60000;
	setup(false, EVICT_LOCAL);
	fill(58);
	run();
	TAP_OK(tier_pages(MC_TIER_DRAM) == 58, "young, room: nothing goes ahead of need");
	/* a write of 10 pages waits for its room: 58 + 10 > 64 */
	reclaimer_room(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, 0);
	run();
	reclaimer_young_taken(rc, &copies, &bytes);
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44 && copies == 14 && bytes == 14 * ARENA_PAGE,
	       "young, room: a write waiting for room takes them, down to the low watermark, "
	       "counted (%llu copies, %llu bytes)",
	       (unsigned long long)copies, (unsigned long long)bytes);
	teardown();
	young_ms = 0;
}

static void
test_young_old_first(void)
{
	char k[16];
	uint64_t copies, bytes;
	bool young_kept = true;

	young_ms = 60000;
	setup(false, EVICT_LOCAL);
	/* 20 old copies (found at start: no commit time), then 38 young ones */
	for (int i = 0; i < 58; i++) {
		keyname(k, sizeof(k), i);
		put(k);
		if (i < 20) {
			struct pobj *o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));

			o->committed = 0;
			pindex_release(&ix, o);
		}
	}
	reclaimer_room(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, 0);
	run();
	for (int i = 20; i < 58; i++) {
		keyname(k, sizeof(k), i);
		young_kept &= has(k);
	}
	reclaimer_young_taken(rc, &copies, &bytes);
	TAP_OK(tier_pages(MC_TIER_DRAM) == 44 && copies == 0 && young_kept,
	       "young, room: the old copies go first when they make the room");
	teardown();
	young_ms = 0;
}

static void
test_young_ranked(void)
{
	young_ms = 60000;
	setup(false, EVICT_MASTER_RANKED);
	reclaimer_on_ask(rc, ask, NULL);
	master.answer_at_once = true;
	master.keys[0] = "k000";
	master.keys[1] = "k001";
	master.nkeys = 2;
	fill(58);
	run();
	TAP_OK(master.calls >= 1 && reclaimer_events(rc, RECLAIM_MASTER_KEY) == 0 && has("k000") &&
		       tier_pages(MC_TIER_DRAM) == 58,
	       "young, master_ranked: a young copy the master ranks first is kept");
	teardown();
	young_ms = 0;
}

static void
test_modes(void)
{
	enum evict_mode m;

	TAP_OK(evict_mode_parse("local", &m) == 0 && m == EVICT_LOCAL &&
		       evict_mode_parse("master_ranked", &m) == 0 && m == EVICT_MASTER_RANKED &&
		       evict_mode_parse("master", &m) == 0 && m == EVICT_MASTER,
	       "modes: the three names parse");
	TAP_OK(evict_mode_parse("Local", &m) < 0 && evict_mode_parse("", &m) < 0,
	       "modes: anything else is refused");
}

/* Commit n one-page copies named prefix0.., each read at once when read. */
static void
put_many(const char *prefix, int n, bool read)
{
	char k[32];

	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		put(k);
		if (read) {
			struct pobj *o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));

			pindex_read(&ix, o);
			pindex_release(&ix, o);
		}
	}
}

/* The flags of key's record in p's view: -1 when the view has no such record. */
static int
in_view(const struct mc_plan *p, const char *key)
{
	for (size_t i = 0; i < p->view.n; i++) {
		const struct mc_cand *c = &p->view.c[i];

		if (c->key_len == strlen(key) &&
		    memcmp(mc_cand_key(&p->view, c), key, c->key_len) == 0)
			return (int)c->flags;
	}
	return -1;
}

/* Whether key's record is in p's view flagged as a probationer beyond the share. */
static bool
beyond_share(const struct mc_plan *p, const char *key)
{
	int f = in_view(p, key);

	return f >= 0 && (f & MC_CAND_PROBATION);
}

/* Any record of p's view whose key starts with prefix. */
static bool
any_in_view(const struct mc_plan *p, const char *prefix)
{
	for (size_t i = 0; i < p->view.n; i++) {
		const struct mc_cand *c = &p->view.c[i];

		if (c->key_len >= strlen(prefix) &&
		    memcmp(mc_cand_key(&p->view, c), prefix, strlen(prefix)) == 0)
			return true;
	}
	return false;
}

static uint64_t
victim_bytes(const struct mc_plan *p)
{
	uint64_t b = 0;

	for (size_t i = 0; i < p->nstages; i++)
		for (size_t j = 0; j < p->stages[i].nvictims; j++)
			if (!p->stages[i].soft_pinned)
				b += p->view.c[p->stages[i].victims[j]].bytes;
	return b;
}

static void
test_window(void)
{
	struct mc_plan p;
	struct mc_err err;
	size_t window = 0;
	int flagged = 0;
	bool beyond = true;
	char k[32];

	/* 8000 of 8192 pages: 3000 read at once (the coldest), 5000 never read */
	dram_pages = 8192;
	setup(false, EVICT_LOCAL);
	put_many("a", 3000, true);
	put_many("p", 5000, false);
	TAP_OK(reclaimer_plan(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, &p, &window, &err) == 0,
	       "window: a plan of 10 pages over 8000 copies");
	TAP_OK(window == MC_PLAN_WINDOW_MIN && p.view.n <= 3 * window && p.view.n < 8000,
	       "window: its view holds a window of records (%zu of window %zu), not every copy",
	       p.view.n, window);
	TAP_OK(in_view(&p, "a0") == 0 && in_view(&p, "a1023") == 0 && in_view(&p, "a1024") < 0,
	       "window: the coldest copies are in it, in the medium's order, unflagged");
	/*
	 * The share keeps the newest 4096 pages of probationers: the 904
	 * oldest are beyond. Those within it may be in the view too, as
	 * the lowest by worth, but unflagged, as the whole tier's
	 * segment would leave them.
	 */
	for (int i = 0; i < 5000; i++) {
		bool f;

		snprintf(k, sizeof(k), "p%d", i);
		f = beyond_share(&p, k);
		flagged += f;
		beyond &= f == (i < 904);
	}
	TAP_OK(beyond && flagged == 904,
	       "window: the probationers beyond the share are in it, flagged, and no others (%d)",
	       flagged);
	TAP_OK(victim_bytes(&p) >= 10 * ARENA_PAGE && in_view(&p, "p0") >= 0,
	       "window: the plan covers the need");
	mc_plan_free(&p);
	/* a read takes a cold copy to the warm end, and a probationer off probation */
	{
		struct pobj *o = pindex_acquire(&ix, T, strlen(T), "a1", 2);

		pindex_release(&ix, o);
		o = pindex_acquire(&ix, T, strlen(T), "p0", 2);
		pindex_read(&ix, o);
		pindex_release(&ix, o);
	}
	TAP_OK(reclaimer_plan(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, &p, &window, &err) == 0 &&
		       in_view(&p, "a1") < 0 && in_view(&p, "a0") == 0 && in_view(&p, "a2") == 0,
	       "window: a copy read leaves the cold end");
	TAP_OK(in_view(&p, "p0") < 0 && beyond_share(&p, "p903") && !beyond_share(&p, "p904"),
	       "window: a probationer read leaves probation, and the share moves by its bytes");
	mc_plan_free(&p);
	teardown();

	/* the 1100 coldest are soft-pinned: a window of 1024 gives nothing the plan may take */
	dram_pages = 4096;
	setup(false, EVICT_LOCAL);
	put_sp_deadline = now_ms + 3600 * 1000;
	put_many("s", 1100, true);
	put_sp_deadline = 0;
	put_many("a", 1000, true);
	TAP_OK(reclaimer_plan(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, &p, &window, &err) == 0 &&
		       window == 2 * MC_PLAN_WINDOW_MIN && victim_bytes(&p) >= 10 * ARENA_PAGE &&
		       any_in_view(&p, "a"),
	       "window: a plan short over its window is made again over a window twice as big "
	       "(%zu)",
	       window);
	mc_plan_free(&p);
	teardown();

	/* 2000 young copies the coldest, then 1000 old ones (found at start) */
	young_ms = 60000;
	setup(false, EVICT_LOCAL);
	put_many("y", 2000, false);
	for (int i = 0; i < 1000; i++) {
		struct pobj *o;

		snprintf(k, sizeof(k), "o%d", i);
		put(k);
		o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));
		o->committed = 0;
		pindex_release(&ix, o);
	}
	TAP_OK(reclaimer_plan(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, &p, &window, &err) == 0 &&
		       window > MC_PLAN_WINDOW_MIN && victim_bytes(&p) >= 10 * ARENA_PAGE &&
		       any_in_view(&p, "o"),
	       "window: with no write waiting, a window of young copies grows to the old ones "
	       "(%zu)",
	       window);
	mc_plan_free(&p);
	/* a write of 1200 pages waits: 3000 + 1200 > 4096 */
	reclaimer_room(rc, MC_TIER_DRAM, 1200 * ARENA_PAGE, 0);
	TAP_OK(reclaimer_plan(rc, MC_TIER_DRAM, 10 * ARENA_PAGE, &p, &window, &err) == 0 &&
		       window == MC_PLAN_WINDOW_MIN && victim_bytes(&p) == 0,
	       "window: for a write that waits, young copies that cover the need stop the "
	       "growing (%zu): the pass over young copies takes them",
	       window);
	mc_plan_free(&p);
	teardown();
	young_ms = 0;
	dram_pages = PAGES;
}

/* Whether p evicts key in an evict stage (a fallback's reserve goes only for a shortfall). */
static bool
victim(const struct mc_plan *p, const char *key)
{
	for (size_t i = 0; i < p->nstages; i++)
		for (size_t j = 0; p->stages[i].kind == MC_STAGE_EVICT && j < p->stages[i].nvictims;
		     j++) {
			const struct mc_cand *c = &p->view.c[p->stages[i].victims[j]];

			if (c->key_len == strlen(key) &&
			    memcmp(mc_cand_key(&p->view, c), key, c->key_len) == 0)
				return true;
		}
	return false;
}

/*
 * A chain read lately under a head read long ago is worth less than
 * the coldest copies by recency: the whole tier's ranking gives it up
 * first, and so does a window's.
 */
static void
test_window_worth(void)
{
	struct mc_plan p;
	struct mc_err err;
	size_t window = 0, victims = 0;
	bool tail_goes = true;
	char k[32], parent[32] = "head";

	dram_pages = 4096;
	setup(false, EVICT_LOCAL);
	put_type = "kv";
	put("head");
	put_many("a", 3000, true);
	for (int i = 0; i < 10; i++) {
		struct pobj *o;

		snprintf(k, sizeof(k), "t%d", i);
		put(k);
		o = pindex_acquire(&ix, T, strlen(T), k, strlen(k));
		o->parent = pindex_hash(T, strlen(T), parent, strlen(parent));
		for (int r = 0; r < 3; r++)
			pindex_read(&ix, o);
		pindex_release(&ix, o);
		snprintf(parent, sizeof(parent), "%s", k);
	}
	TAP_OK(reclaimer_plan(rc, MC_TIER_DRAM, 11 * ARENA_PAGE, &p, &window, &err) == 0 &&
		       window == MC_PLAN_WINDOW_MIN,
	       "window by worth: a plan of 11 pages over a window of %zu", window);
	for (int i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "t%d", i);
		tail_goes &= victim(&p, k);
	}
	for (size_t i = 0; i < p.nstages; i++)
		if (p.stages[i].kind == MC_STAGE_EVICT)
			victims += p.stages[i].nvictims;
	TAP_OK(tail_goes && victim(&p, "head") && victims == 11 && !victim(&p, "a0"),
	       "window by worth: the chain read lately goes with its old head, before the coldest "
	       "copies that are worth more (%zu victims)",
	       victims);
	mc_plan_free(&p);
	put_type = "general";
	teardown();
	dram_pages = PAGES;
}

int
main(void)
{
	struct mc_err err;

	base = event_base_new();
	mc_clock_set_fake(now_ms);
	TAP_OK(base && mc_policy_builtin(&policy, &err) == 0, "the built-in policy");
	test_modes();
	test_drains_exactly();
	test_headroom_band();
	test_notice_wakes();
	test_room_while_moving();
	test_recency();
	test_kv_history();
	test_chain_worth();
	test_soft_pins();
	test_reader_kept();
	test_held_counts();
	test_demotion();
	test_groups_and_pins();
	test_master_mode();
	test_ranked_first();
	test_ranked_gone();
	test_slow_master();
	test_no_ranking();
	test_ranking_again();
	test_young_kept();
	test_young_for_room();
	test_young_old_first();
	test_young_ranked();
	test_window();
	test_window_worth();
	mc_policy_free(&policy);
	event_base_free(base);
	return tap_done();
}
