/* Unit tests for the soft-pin deadline index (libmc/deadline.c). */
#include <stdlib.h>
#include <string.h>

#include "mc/deadline.h"
#include "tap.h"

static size_t
heap_size(const struct mc_deadline_index *d)
{
	struct mc_deadline_stats st;

	mc_deadline_stats(d, &st);
	return st.heap;
}

static void
test_order(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	uint64_t ds[] = { 50, 10, 40, 20, 30 };
	uint64_t id, dl, prev = 0;
	size_t i, n = 0;
	bool sorted = true;

	for (i = 0; i < 5; i++)
		mc_deadline_set(d, i + 1, ds[i]);
	TAP_OK(!mc_deadline_pop_due(d, 9, &id, &dl),
	       "order: nothing pops before the first deadline");
	TAP_OK(mc_deadline_pop_due(d, 10, &id, &dl) && id == 2 && dl == 10,
	       "order: a registration pops exactly at its deadline (deadline <= now)");
	TAP_OK(!mc_deadline_pop_due(d, 19, &id, &dl), "order: a later one is not due yet");
	while (mc_deadline_pop_due(d, 1000, &id, &dl)) {
		if (dl < prev)
			sorted = false;
		prev = dl;
		n++;
	}
	TAP_OK(sorted && n == 4, "order: the rest pop in deadline order");
	TAP_OK(!mc_deadline_get(d, 1, NULL), "order: popping removes the registration");
	mc_deadline_free(d);
}

static void
test_update_remove(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	uint64_t id, dl, got = 0;

	mc_deadline_set(d, 7, 100);
	mc_deadline_set(d, 7, 300);
	TAP_OK(mc_deadline_get(d, 7, &got) && got == 300,
	       "update: get returns the latest deadline");
	TAP_OK(!mc_deadline_pop_due(d, 200, &id, &dl),
	       "update: the old entry of an updated id is stale and never returned");
	TAP_OK(mc_deadline_pop_due(d, 300, &id, &dl) && id == 7 && dl == 300,
	       "update: the id pops once, at its new deadline");
	TAP_OK(!mc_deadline_pop_due(d, 1000, &id, &dl), "update: and never again");

	mc_deadline_set(d, 8, 100);
	mc_deadline_set(d, 9, 150);
	mc_deadline_remove(d, 8);
	mc_deadline_remove(d, 12345); /* absent: no-op */
	TAP_OK(!mc_deadline_get(d, 8, NULL), "remove: the registration is gone");
	TAP_OK(mc_deadline_pop_due(d, 1000, &id, &dl) && id == 9,
	       "remove: a removed id is never popped, others still are");
	TAP_OK(!mc_deadline_pop_due(d, 1000, &id, &dl), "remove: nothing else pops");

	/* earlier update: the new, earlier entry wins, the later one is stale */
	mc_deadline_set(d, 10, 500);
	mc_deadline_set(d, 10, 100);
	TAP_OK(mc_deadline_pop_due(d, 100, &id, &dl) && id == 10 && dl == 100,
	       "update: moving a deadline earlier pops at the earlier one");
	TAP_OK(!mc_deadline_pop_due(d, 1000, &id, &dl),
	       "update: the abandoned later entry does not pop again");

	/* d1 -> d2 -> d1: one live entry, popped once */
	mc_deadline_set(d, 11, 100);
	mc_deadline_set(d, 11, 200);
	mc_deadline_set(d, 11, 100);
	TAP_OK(mc_deadline_pop_due(d, 1000, &id, &dl) && id == 11 && dl == 100 &&
		       !mc_deadline_pop_due(d, 1000, &id, &dl),
	       "update: an id moved back to an earlier deadline pops exactly once");
	mc_deadline_free(d);
}

/*
 * The exact-deadline situation: a pin expires at 100 and is re-enabled
 * (removed, then registered again with a later deadline) before cleanup
 * runs; the old heap entry must not pop for the new registration.
 */
static void
test_reregistered(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	uint64_t id, dl;

	mc_deadline_set(d, 42, 100);
	mc_deadline_remove(d, 42);
	mc_deadline_set(d, 42, 5000);
	TAP_OK(!mc_deadline_pop_due(d, 100, &id, &dl) && !mc_deadline_pop_due(d, 4999, &id, &dl),
	       "re-register: an old heap entry never pops after the id was registered again later");
	TAP_OK(mc_deadline_pop_due(d, 5000, &id, &dl) && id == 42 && dl == 5000,
	       "re-register: the new registration pops at its own deadline");

	/* the same deadline registered again: one pop, not two */
	mc_deadline_set(d, 43, 100);
	mc_deadline_remove(d, 43);
	mc_deadline_set(d, 43, 100);
	TAP_OK(mc_deadline_pop_due(d, 100, &id, &dl) && id == 43 &&
		       !mc_deadline_pop_due(d, 100, &id, &dl),
	       "re-register: the same deadline registered twice pops once");
	mc_deadline_free(d);
}

static void
test_rebuild_small(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	struct mc_deadline_stats st;
	size_t i, max_heap = 0;
	uint64_t id, dl;
	int n = 0;

	for (i = 0; i < 10; i++)
		mc_deadline_set(d, i, 1000 + i);
	for (i = 0; i < 5000; i++) {
		mc_deadline_set(d, i % 10, 2000 + i);
		if (heap_size(d) > max_heap)
			max_heap = heap_size(d);
	}
	mc_deadline_stats(d, &st);
	TAP_OK(max_heap <= MC_DEADLINE_REBUILD_FLOOR + 1,
	       "rebuild: 10 live ids, 5000 updates: heap never exceeds max(4096, 2 x live) + 1 "
	       "(max %zu)",
	       max_heap);
	TAP_OK(max_heap > 20, "rebuild: a small live set is not rebuilt after every few updates");
	TAP_OK(st.rebuilds >= 1, "rebuild: rebuilds counts up (%llu)",
	       (unsigned long long)st.rebuilds);
	TAP_OK(st.live == 10, "rebuild: live stays at the number of registrations");
	while (mc_deadline_pop_due(d, UINT64_MAX, &id, &dl))
		n++;
	TAP_OK(n == 10, "rebuild: after rebuilds each id still pops exactly once");
	mc_deadline_free(d);
}

static void
test_rebuild_large(void)
{
	enum { LIVE = 100000, UPDATES = 300000 };
	struct mc_deadline_index *d = mc_deadline_new();
	struct mc_deadline_stats st;
	size_t i, max_heap = 0, h;
	int bad = 0;

	for (i = 0; i < LIVE; i++)
		if (mc_deadline_set(d, i, tap_rng() % 1000000) < 0)
			bad++;
	for (i = 0; i < UPDATES; i++) {
		if (mc_deadline_set(d, tap_rng() % LIVE, 1000000 + tap_rng() % 1000000) < 0)
			bad++;
		h = heap_size(d);
		if (h > max_heap)
			max_heap = h;
	}
	mc_deadline_stats(d, &st);
	TAP_OK(bad == 0 && st.live == LIVE, "rebuild: 100k live ids all registered");
	TAP_OK(max_heap <= 2 * (size_t)LIVE + 1,
	       "rebuild: 100k live ids, 300k updates keep heap <= 2 x live + 1 (max %zu)",
	       max_heap);
	TAP_OK(st.rebuilds >= 1, "rebuild: a large index rebuilds too");
	mc_deadline_free(d);
}

static void
test_clear(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	struct mc_deadline_stats st;
	uint64_t id, dl;
	size_t i;

	for (i = 0; i < 1000; i++)
		mc_deadline_set(d, i, i);
	mc_deadline_clear(d);
	mc_deadline_stats(d, &st);
	TAP_OK(st.heap == 0 && st.live == 0, "clear: heap and live are zero");
	TAP_OK(!mc_deadline_get(d, 5, NULL) && !mc_deadline_pop_due(d, UINT64_MAX, &id, &dl),
	       "clear: no registration survives (a failed restore leaks nothing)");
	mc_deadline_set(d, 5, 10);
	TAP_OK(mc_deadline_pop_due(d, 10, &id, &dl) && id == 5,
	       "clear: the index works again after a clear");
	mc_deadline_free(d);
}

struct seen {
	uint64_t ids[64], dls[64];
	size_t n;
	size_t stop_after;
};

static int
collect(uint64_t id, uint64_t deadline, void *arg)
{
	struct seen *s = arg;

	if (s->n < 64) {
		s->ids[s->n] = id;
		s->dls[s->n] = deadline;
	}
	s->n++;
	return s->stop_after != 0 && s->n >= s->stop_after;
}

static void
test_visit(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	struct mc_deadline_stats before, after;
	struct seen s;
	bool ok = true;
	size_t i;

	/* ids 1..20 at 10, 20, ..., 200; some updated, some removed */
	for (i = 1; i <= 20; i++)
		mc_deadline_set(d, i, i * 10);
	mc_deadline_set(d, 3, 1000); /* stale entry at 30 */
	mc_deadline_remove(d, 5);    /* stale entry at 50 */
	mc_deadline_stats(d, &before);

	memset(&s, 0, sizeof(s));
	mc_deadline_visit(d, 100, 0, collect, &s);
	/* 10,20,40,60,70,80,90,100: 3 moved away, 5 removed */
	ok = s.n == 8;
	for (i = 1; ok && i < s.n; i++)
		if (s.dls[i] < s.dls[i - 1] || s.dls[i] > 100)
			ok = false;
	for (i = 0; ok && i < s.n; i++)
		if (s.ids[i] == 3 || s.ids[i] == 5)
			ok = false;
	TAP_OK(ok, "visit: live entries in deadline order up to until, stale ones skipped (%zu)",
	       s.n);

	memset(&s, 0, sizeof(s));
	mc_deadline_visit(d, UINT64_MAX, 3, collect, &s);
	TAP_OK(s.n == 3 && s.ids[0] == 1 && s.ids[1] == 2 && s.ids[2] == 4,
	       "visit: limit caps how many are visited");

	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	TAP_OK(mc_deadline_visit(d, UINT64_MAX, 0, collect, &s) != 0 && s.n == 2,
	       "visit: fn returning non-zero stops the walk");

	memset(&s, 0, sizeof(s));
	mc_deadline_visit(d, UINT64_MAX, 0, collect, &s);
	TAP_OK(s.n == 19 && s.dls[18] == 1000, "visit: without a bound every live entry is seen");

	mc_deadline_stats(d, &after);
	TAP_OK(before.heap == after.heap && before.live == after.live &&
		       before.rebuilds == after.rebuilds,
	       "visit: does not change heap, live or rebuilds");
	mc_deadline_free(d);
}

/* The reference: one deadline per id in a flat array, 0 when absent. */
#define REF_IDS 2048

struct ref_visit {
	const uint64_t *ref;
	uint64_t last;
	size_t n;
	bool bad;
};

static int
ref_check_visit(uint64_t id, uint64_t deadline, void *arg)
{
	struct ref_visit *v = arg;

	if (id >= REF_IDS || v->ref[id] != deadline + 1 || deadline < v->last)
		v->bad = true;
	v->last = deadline;
	v->n++;
	return 0;
}

static void
test_differential(void)
{
	enum { OPS = 100000 };
	struct mc_deadline_index *d = mc_deadline_new();
	uint64_t *ref = calloc(REF_IDS, sizeof(*ref)); /* deadline + 1 */
	uint64_t now = 0, id, dl, min_due;
	size_t i, j, live = 0, mismatches = 0;

	if (ref == NULL) {
		TAP_OK(0, "differential: allocate the reference");
		return;
	}
	for (i = 0; i < OPS; i++) {
		uint64_t op = tap_rng() % 100, x = tap_rng() % REF_IDS, got;

		if (op < 50) {
			dl = now + tap_rng() % 5000;
			mc_deadline_set(d, x, dl);
			if (ref[x] == 0)
				live++;
			ref[x] = dl + 1;
		} else if (op < 65) {
			mc_deadline_remove(d, x);
			if (ref[x] != 0)
				live--;
			ref[x] = 0;
		} else if (op < 75) {
			bool has = mc_deadline_get(d, x, &got);

			if (has != (ref[x] != 0) || (has && got + 1 != ref[x]))
				mismatches++;
		} else if (op < 95) {
			now += tap_rng() % 200;
			/* everything due comes out, in order, and matches */
			dl = 0;
			while (mc_deadline_pop_due(d, now, &id, &got)) {
				if (id >= REF_IDS || ref[id] != got + 1 || got > now || got < dl)
					mismatches++;
				else {
					ref[id] = 0;
					live--;
				}
				dl = got;
			}
			min_due = UINT64_MAX;
			for (j = 0; j < REF_IDS; j++)
				if (ref[j] != 0 && ref[j] - 1 < min_due)
					min_due = ref[j] - 1;
			if (min_due <= now)
				mismatches++;
		} else {
			struct ref_visit v = { ref, 0, 0, false };
			size_t want = 0;

			for (j = 0; j < REF_IDS; j++)
				if (ref[j] != 0 && ref[j] - 1 <= now + 2000)
					want++;
			if (want > 50)
				want = 50;
			if (mc_deadline_visit(d, now + 2000, 50, ref_check_visit, &v) != 0 ||
			    v.bad || v.n != want)
				mismatches++;
		}
	}
	{
		struct mc_deadline_stats st;

		mc_deadline_stats(d, &st);
		if (st.live != live || st.heap > (st.live * 2 > 4096 ? st.live * 2 : 4096) + 1)
			mismatches++;
	}
	TAP_OK(mismatches == 0,
	       "differential: 100k random set/remove/get/pop/visit agree with a naive reference "
	       "(%zu mismatches)",
	       mismatches);
	free(ref);
	mc_deadline_free(d);
}

struct ordered {
	uint64_t last;
	size_t n;
	bool ok;
};

static int
check_ordered(uint64_t id, uint64_t deadline, void *arg)
{
	struct ordered *o = arg;

	if (deadline < o->last || deadline != id * 7 % 10007)
		o->ok = false;
	o->last = deadline;
	o->n++;
	return 0;
}

/* A walk far wider than visit's on-stack frontier must still be exact. */
static void
test_visit_wide(void)
{
	struct mc_deadline_index *d = mc_deadline_new();
	struct mc_deadline_stats before, after;
	struct ordered o = { 0, 0, true };
	uint64_t i;

	for (i = 0; i < 10000; i++)
		mc_deadline_set(d, i, i * 7 % 10007);
	mc_deadline_stats(d, &before);
	TAP_OK(mc_deadline_visit(d, UINT64_MAX, 0, check_ordered, &o) == 0 && o.ok && o.n == 10000,
	       "visit: 10000 live entries come out complete and in order");
	mc_deadline_stats(d, &after);
	TAP_OK(before.heap == after.heap && before.live == after.live,
	       "visit: a wide walk leaves the index as it was");
	mc_deadline_free(d);
}

int
main(void)
{
	tap_rng_state = 0x9e3779b97f4a7c15ULL; /* the sequence these tests were written on */
	test_order();
	test_update_remove();
	test_reregistered();
	test_rebuild_small();
	test_rebuild_large();
	test_clear();
	test_visit();
	test_visit_wide();
	test_differential();
	return tap_done();
}
