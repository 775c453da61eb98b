/*
 * Unit tests for the view builder's history (libmc/history.c): LRFU
 * decay, the ghosts and their bound, the shadows that choose the half-life, and the
 * probationary segment.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/candidates.h"
#include "mc/history.h"
#include "tap.h"

#define OBJECTS 1000u

static uint64_t
key_hash(uint64_t i)
{
	/* splitmix64: distinct, well spread hashes for key numbers */
	uint64_t z = i + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
test_decay(void)
{
	TAP_OK(fabs(mc_lrfu_decay(8, 100, 200, 100) - 4) < 1e-9,
	       "decay: one half-life halves the value");
	TAP_OK(fabs(mc_lrfu_decay(8, 100, 400, 100) - 1) < 1e-9, "decay: three halve it thrice");
	TAP_OK(mc_lrfu_decay(8, 200, 100, 100) == 8, "decay: a time before the last is no decay");
	TAP_OK(mc_lrfu_decay(0, 1, 1000, 10) == 0, "decay: nothing stays nothing");
}

static void
test_ghosts(void)
{
	struct mc_err err;
	struct mc_history *h = mc_history_new(0, &err);
	struct mc_history_stats st;
	double crf, hl;
	uint64_t now = 1;
	int found = 0, early = 0;

	TAP_OK(h != NULL, "new: a history with the default ghosts per object");
	hl = mc_history_half_life(h, OBJECTS);
	TAP_OK(fabs(hl - exp2(MC_HISTORY_LOG_FACTOR_START) * OBJECTS) < 1e-9,
	       "half-life: starts at 2^%d cache-fulls of references (%.0f)",
	       MC_HISTORY_LOG_FACTOR_START, hl);
	TAP_OK(!mc_history_take(h, key_hash(1), now, OBJECTS, &crf) && crf == 0,
	       "take: a key never evicted has no ghost");
	TAP_OK(mc_history_memory(h) < 1024, "memory: no table before the first eviction (%zu B)",
	       mc_history_memory(h));

	mc_history_evicted(h, key_hash(1), 6.0, false, now, OBJECTS);
	TAP_OK(mc_history_take(h, key_hash(1), now, OBJECTS, &crf) && fabs(crf - 6) / 6 < 0.1,
	       "take: a key evicted just now resumes its value (6 -> %.3f)", crf);
	TAP_OK(!mc_history_take(h, key_hash(1), now, OBJECTS, &crf),
	       "take: a ghost is taken once, then it is gone");

	/* the value decays with the half-life while the key is away */
	mc_history_evicted(h, key_hash(2), 8.0, false, now, OBJECTS);
	TAP_OK(mc_history_take(h, key_hash(2), now + (uint64_t)hl, OBJECTS, &crf) &&
		       fabs(crf - 4) / 4 < 0.15,
	       "take: one half-life away, half the value (8 -> %.3f)", crf);

	/* a churn of 100 cache-fulls of evictions: the bound holds, the recent stay */
	for (uint64_t i = 0; i < 100u * OBJECTS; i++)
		mc_history_evicted(h, key_hash(1000 + i), 1.0, false, now++, OBJECTS);
	mc_history_stats(h, &st);
	TAP_OK(st.ghosts <= (uint64_t)(MC_HISTORY_GHOSTS * OBJECTS * 1.25) + 16,
	       "bound: %llu ghosts for %u objects (at most %.0f x 1.25 each)",
	       (unsigned long long)st.ghosts, OBJECTS, MC_HISTORY_GHOSTS);
	TAP_OK(mc_history_memory(h) <=
		       MC_HISTORY_SHADOW_BYTES +
			       sizeof(uint32_t) * (size_t)(MC_HISTORY_GHOSTS * OBJECTS * 1.25) +
			       1024,
	       "bound: %zu bytes of history, 4 a ghost beside the shadows' fixed cost",
	       mc_history_memory(h));
	for (uint64_t i = 100u * OBJECTS - OBJECTS; i < 100u * OBJECTS; i++)
		found += mc_history_take(h, key_hash(1000 + i), now, OBJECTS, &crf);
	for (uint64_t i = 0; i < OBJECTS; i++)
		early += mc_history_take(h, key_hash(1000 + i), now, OBJECTS, &crf);
	TAP_OK(found >= (int)(OBJECTS * 95 / 100),
	       "recent: %d of the last %u evicted are remembered", found, OBJECTS);
	TAP_OK(early <= (int)(OBJECTS / 50),
	       "old: %d of the first %u are forgotten but for collisions", early, OBJECTS);
	mc_history_stats(h, &st);
	TAP_OK(st.evicted == 2 + 100u * OBJECTS && st.resumed >= (uint64_t)found + 2,
	       "stats: %llu evicted, %llu resumed", (unsigned long long)st.evicted,
	       (unsigned long long)st.resumed);
	mc_history_free(h);
}

/* Ages never wrap: a ghost left alone long enough is swept, not misread as new. */
static void
test_sweep(void)
{
	struct mc_err err;
	struct mc_history *h = mc_history_new(1, &err);
	/* for 1000 objects an epoch is 64 references; the age has 12 bits */
	uint64_t wrap = (4096u + 1) * 64;
	double crf;

	mc_history_evicted(h, key_hash(7), 50.0, false, 1, OBJECTS);
	for (uint64_t t = 1; t < wrap; t += OBJECTS)
		mc_history_evicted(h, key_hash(1u << 20 | t), 1.0, false, t, OBJECTS);
	TAP_OK(!mc_history_take(h, key_hash(7), wrap, OBJECTS, &crf),
	       "sweep: a ghost as old as the age can count is forgotten, not resumed (%.3f)", crf);
	mc_history_free(h);
}

/* A small deterministic generator for the streams below. */
static uint64_t
rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static double
rng_unit(uint64_t *x)
{
	return (double)(rng_next(x) >> 11) / (double)(1ull << 53);
}

#define STREAM_OBJECTS 2000u /* above a shadow's size: the shadows sample */

/*
 * A working set that drifts: each reference picks one of the 3000 keys
 * after a base that moves on by one key every 10 references, so a key
 * is read about ten times over a while and then never again. The
 * cache holds two thirds of the set; the newest keys are the ones to
 * keep: a short half-life (LRU's end) wins, a long one keeps the keys
 * that have been read most, the oldest, about to leave.
 */
static uint64_t
drifting(uint64_t i, uint64_t *x)
{
	return i / 10 + (uint64_t)(rng_unit(x) * 3000);
}

/*
 * A fixed Zipf-like popularity over 40000 keys, every other reference
 * a key read once and never again (a scan). Popular keys are the ones
 * to keep: a long half-life (LFU's end) wins, a short one lets the
 * scan push them out.
 */
static uint64_t
popular(uint64_t i, uint64_t *x)
{
	if (i % 2 == 1)
		return (1ull << 40) + i;
	/* rank ~ 40000^u: density 1 / rank, Zipf with exponent 1 */
	return (uint64_t)exp(rng_unit(x) * log(40000.0)) << 8;
}

/* log2 of the factor after each reference of n from gen, its range over the last quarter. */
static int
feed(struct mc_history *h, uint64_t (*gen)(uint64_t, uint64_t *), uint64_t n, int *lo, int *hi)
{
	uint64_t x = 0x2545f4914f6cdd1dull;
	int lk = 0;

	*lo = MC_HISTORY_LOG_FACTOR_MAX;
	*hi = MC_HISTORY_LOG_FACTOR_MIN;
	for (uint64_t i = 0; i < n; i++) {
		mc_history_read(h, key_hash(gen(i, &x)), STREAM_OBJECTS);
		lk = (int)lround(log2(mc_history_half_life(h, STREAM_OBJECTS) / STREAM_OBJECTS));
		if (i >= n - n / 4) {
			*lo = lk < *lo ? lk : *lo;
			*hi = lk > *hi ? lk : *hi;
		}
	}
	return lk;
}

/*
 * The shadows move the half-life to the end a workload wants within a
 * few hundred thousand references, stay there, and follow a workload
 * that changes.
 */
static void
test_shadows(void)
{
	struct mc_err err;
	struct mc_history *h = mc_history_new(0, &err);
	struct mc_history_stats st;
	int lk, lo, hi;

	/* the cache is full: the shadows start at its first eviction */
	mc_history_evicted(h, key_hash(UINT64_MAX), 1, false, 0, STREAM_OBJECTS);
	lk = feed(h, drifting, 200000, &lo, &hi);
	TAP_OK(lk <= 0, "shadows: a drifting working set takes a short half-life (2^%d)", lk);
	TAP_OK(hi - lo <= 1, "shadows: and settles there (2^%d..2^%d over the last quarter)", lo,
	       hi);
	mc_history_stats(h, &st);
	TAP_OK(st.periods >= 90, "shadows: a choice every window of a shadow-full (%llu)",
	       (unsigned long long)st.periods);
	lk = feed(h, popular, 300000, &lo, &hi);
	TAP_OK(lk >= 4, "shadows: then popular keys under a scan take a long one (2^%d)", lk);
	TAP_OK(hi - lo <= 1, "shadows: and settle there (2^%d..2^%d over the last quarter)", lo,
	       hi);
	mc_history_free(h);

	h = mc_history_new(0, &err);
	mc_history_evicted(h, key_hash(UINT64_MAX), 1, false, 0, STREAM_OBJECTS);
	lk = feed(h, popular, 300000, &lo, &hi);
	TAP_OK(lk >= 4 && hi - lo <= 1,
	       "shadows: a fresh history goes to the long end alike (2^%d, 2^%d..2^%d)", lk, lo,
	       hi);
	TAP_OK(mc_history_memory(h) <= MC_HISTORY_SHADOW_BYTES +
					       sizeof(uint32_t) * (size_t)(MC_HISTORY_GHOSTS *
									   STREAM_OBJECTS * 1.25) +
					       1024,
	       "shadows: a fixed cost beside the ghosts (%zu B)", mc_history_memory(h));
	mc_history_free(h);
}

/*
 * A cache just over twice the shadows' size samples every other key,
 * and a shadow then holds half the cache rounded down, never more than
 * its room: new keys past that fill it to the brim and evict (under the
 * sanitizers, make check, a shadow over its room is a heap overflow).
 */
static void
test_shadows_odd_size(void)
{
	struct mc_err err;
	struct mc_history *h = mc_history_new(0, &err);
	struct mc_history_stats st;
	double crf;

	mc_history_evicted(h, key_hash(UINT64_MAX), 1, false, 0, 1025);
	for (uint64_t i = 0; i < 20000; i++)
		mc_history_take(h, key_hash(i), i, 1025, &crf);
	mc_history_stats(h, &st);
	TAP_OK(st.periods >= 10, "shadows: a cache of 1025 objects keeps choosing (%llu windows)",
	       (unsigned long long)st.periods);
	mc_history_free(h);
}

/*
 * The probationary share moves as ARC's split does: keys evicted on
 * probation that come back raise it, keys evicted after a read lower
 * it, each kind weighted by the other's ghosts over its own, within
 * none to all of the cache.
 */
static void
test_share(void)
{
	struct mc_err err;
	struct mc_history *h = mc_history_new(0, &err);
	struct mc_history_stats st;
	uint64_t now = 1;
	double crf, before;
	int back = 0;

	TAP_OK(mc_history_probation(h) == MC_HISTORY_PROBATION,
	       "share: starts at the default (%.2f)", mc_history_probation(h));
	/* a stream whose new blocks come back after their eviction, unread: grow */
	for (uint64_t i = 0; i < 2u * OBJECTS; i++) {
		mc_history_evicted(h, key_hash(i), 1, true, now++, OBJECTS);
		back += mc_history_take(h, key_hash(i), now++, OBJECTS, &crf);
	}
	TAP_OK(back == 2 * (int)OBJECTS && mc_history_probation(h) == 1,
	       "share: probationers that come back grow it to the whole cache (%.2f)",
	       mc_history_probation(h));
	/* a stream whose read blocks come back: shrink, to nothing at most */
	for (uint64_t i = 0; i < 3u * OBJECTS; i++) {
		mc_history_evicted(h, key_hash(1u << 27 | i), 1, false, now++, OBJECTS);
		mc_history_take(h, key_hash(1u << 27 | i), now++, OBJECTS, &crf);
	}
	mc_history_stats(h, &st);
	TAP_OK(mc_history_probation(h) == 0 && st.probation == 0,
	       "share: read blocks that come back shrink it to none (%.2f)",
	       mc_history_probation(h));
	/* one ghost of each kind: a probation hit steps up by one object's share */
	mc_history_evicted(h, key_hash(1u << 30), 1, false, now++, OBJECTS);
	mc_history_evicted(h, key_hash(1u << 31), 1, true, now++, OBJECTS);
	mc_history_take(h, key_hash(1u << 31), now++, OBJECTS, &crf);
	TAP_OK(fabs(mc_history_probation(h) - 1.0 / OBJECTS) < 1e-9,
	       "share: a new block that comes back adds an object's worth to it");
	/* ghosts now: 9 read, 1 on probation: its hit weighs their ratio */
	for (uint64_t i = 0; i < 8; i++)
		mc_history_evicted(h, key_hash(1u << 29 | i), 1, false, now++, OBJECTS);
	mc_history_evicted(h, key_hash(1u << 28), 1, true, now++, OBJECTS);
	before = mc_history_probation(h);
	mc_history_take(h, key_hash(1u << 28), now++, OBJECTS, &crf);
	TAP_OK(fabs(mc_history_probation(h) - before - 9.0 / OBJECTS) < 1e-9,
	       "share: the rarer kind of ghost weighs more (+%.1f objects' worth)",
	       (mc_history_probation(h) - before) * OBJECTS);
	mc_history_free(h);
}

static uint64_t
tier_capacity(void *ctx, const struct mc_cand_view *v, const struct mc_cand *c)
{
	const uint64_t *caps = ctx;

	(void)v;
	return caps[c->peer];
}

static void
test_segment(void)
{
	struct mc_cand_view v;
	struct mc_err err;
	uint64_t caps[3] = { 0, 1000, 400 };
	int ok = 1;

	mc_cand_view_init(&v);
	/* peer names: ids 1 and 2, the indices of caps */
	ok &= mc_cand_name(&v, "p1", 2, &err) == 1 && mc_cand_name(&v, "p2", 2, &err) == 2;
	/*
	 * On peer 1: ten probationers of 100 bytes created at 1..10 and a
	 * block that was read; on peer 2: three created at 11..13.
	 */
	for (int i = 0; i < 14; i++) {
		struct mc_cand c = { .bytes = 100, .cost = -1, .created_seq = (uint64_t)i + 1 };
		char key[16];

		c.access_seq = c.created_seq;
		c.flags = i == 10 ? 0 : MC_CAND_PROBATION;
		c.peer = i < 11 ? 1 : 2;
		snprintf(key, sizeof(key), "k%d", i);
		ok &= mc_cand_add(&v, &c, key, strlen(key), &err) == 0;
	}
	TAP_OK(ok, "segment: a view of fourteen on two tiers");
	TAP_OK(mc_history_segment(&v, MC_HISTORY_PROBATION, tier_capacity, caps, &err) == 0,
	       "segment: applied");
	ok = 1;
	for (int i = 0; i < 10; i++)
		ok &= ((v.c[i].flags & MC_CAND_PROBATION) != 0) == (i < 5);
	TAP_OK(ok,
	       "segment: of 1000 bytes the five newest compete, the five oldest stay on probation");
	TAP_OK(v.c[10].flags == 0, "segment: a block that was read is untouched");
	TAP_OK(v.c[11].flags == MC_CAND_PROBATION && v.c[12].flags == 0 && v.c[13].flags == 0,
	       "segment: each tier by its own capacity (400 bytes: the newest two)");
	caps[1] = caps[2] = 0;
	for (int i = 0; i < 14; i++)
		v.c[i].flags = MC_CAND_PROBATION;
	ok = mc_history_segment(&v, MC_HISTORY_PROBATION, tier_capacity, caps, &err) == 0;
	for (int i = 0; i < 14; i++)
		ok &= v.c[i].flags == MC_CAND_PROBATION;
	TAP_OK(ok, "segment: a zero capacity leaves everyone on probation");
	mc_cand_view_free(&v);
}

/* The reference: sort each tier's probationers newest first (index breaks ties), take the prefix. */
static struct mc_cand_view *ref_view;

static int
ref_order(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct mc_cand *cx = &ref_view->c[x], *cy = &ref_view->c[y];

	if (cx->peer != cy->peer)
		return cx->peer < cy->peer ? -1 : 1;
	if (cx->created_seq != cy->created_seq)
		return cx->created_seq > cy->created_seq ? -1 : 1;
	return x < y ? -1 : 1;
}

/* A big random view, with ties, against the sort it must agree with. */
static void
test_segment_selection(void)
{
	enum { N = 20000 };
	static uint32_t order[N];
	static bool want[N], was[N];
	struct mc_cand_view v;
	struct mc_err err;
	uint64_t caps[4] = { 0, 3000000, 500000, 0 };
	uint64_t sum = 0;
	int ok = 1, cleared = 0;

	mc_cand_view_init(&v);
	ok &= mc_cand_name(&v, "p1", 2, &err) == 1 && mc_cand_name(&v, "p2", 2, &err) == 2 &&
	      mc_cand_name(&v, "p3", 2, &err) == 3;
	tap_rng_state = 42;
	for (int i = 0; i < N; i++) {
		struct mc_cand c = { .cost = -1, .flags = MC_CAND_PROBATION };
		char key[16];

		c.bytes = 1 + tap_rng() % 2000;
		/* one in ten from an old snapshot (0), the rest often tied in pairs */
		c.created_seq = tap_rng() % 10 == 0 ? 0 : tap_rng() % (N / 2);
		c.peer = (uint32_t)(1 + tap_rng() % 3);
		if (tap_rng() % 7 == 0)
			c.flags = 0; /* read since: not a probationer */
		was[i] = c.flags != 0;
		snprintf(key, sizeof(key), "k%d", i);
		ok &= mc_cand_add(&v, &c, key, strlen(key), &err) == 0;
	}
	/* the reference */
	ref_view = &v;
	for (int i = 0; i < N; i++)
		order[i] = (uint32_t)i;
	qsort(order, N, sizeof(order[0]), ref_order);
	for (int k = 0; k < N; k++) {
		const struct mc_cand *c = &v.c[order[k]];

		if (k == 0 || c->peer != v.c[order[k - 1]].peer)
			sum = 0;
		if (!(c->flags & MC_CAND_PROBATION))
			continue;
		sum += c->bytes;
		want[order[k]] = sum <= caps[c->peer] / 2;
	}
	ok &= mc_history_segment(&v, MC_HISTORY_PROBATION, tier_capacity, caps, &err) == 0;
	for (int i = 0; i < N; i++) {
		bool kept = (v.c[i].flags & MC_CAND_PROBATION) != 0;

		/* in the segment: the flag is gone; past it, it stays; others never had it */
		ok &= was[i] ? want[i] == !kept : !kept;
		cleared += want[i];
	}
	TAP_OK(ok && cleared > 100,
	       "segment: a 20000-record view with ties agrees with the full sort (%d in segments)",
	       cleared);
	mc_cand_view_free(&v);
}

int
main(void)
{
	test_decay();
	test_ghosts();
	test_sweep();
	test_shadows();
	test_shadows_odd_size();
	test_share();
	test_segment();
	test_segment_selection();
	return tap_done();
}
