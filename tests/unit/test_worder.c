/*
 * Unit tests for the worth order (libmc/worder.c): the lowest k by
 * decayed worth, against a sort of every member by mc_lrfu_decay, under
 * random sets, moves and removals; the re-key when the half-life
 * drifts; copies of no worth.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/history.h"
#include "mc/worder.h"
#include "tap.h"

#define N 2000

struct member {
	double worth;
	uint64_t seq;
	uint32_t place;
	int in;
};

static struct member mem[N];

static uint32_t *
place_of(void *arg, uint64_t id)
{
	(void)arg;
	return &mem[id].place;
}

static void
worth_of(void *arg, uint64_t id, double *worth, uint64_t *seq)
{
	(void)arg;
	*worth = mem[id].worth;
	*seq = mem[id].seq;
}

static const struct mc_worder_ops ops = { .place = place_of, .worth = worth_of };

static uint64_t rng = 88172645463325252ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t now;
static double cmp_hl;

static double
value(uint32_t id)
{
	return mc_lrfu_decay(mem[id].worth, mem[id].seq, now, cmp_hl);
}

static int
by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	double vx = value(x), vy = value(y);

	if (vx != vy)
		return vx < vy ? -1 : 1;
	return 0;
}

/* The lowest k of the order are the lowest k by decayed value (as values: ties may swap). */
static int
matches(struct mc_worder *w, double hl, size_t k)
{
	uint32_t all[N] = { 0 };
	uint64_t got[N];
	size_t n = 0;
	long m;

	for (uint32_t i = 0; i < N; i++)
		if (mem[i].in)
			all[n++] = i;
	cmp_hl = hl;
	qsort(all, n, sizeof(all[0]), by_value);
	m = mc_worder_lowest(w, hl, k, got);
	if (m != (long)(k < n ? k : n))
		return 0;
	for (long i = 0; i < m; i++) {
		double a = value(got[i]), b = value(all[i]);

		if (a != b && (a - b > 1e-9 * b || b - a > 1e-9 * b))
			return 0;
	}
	return 1;
}

static void
random_set(struct mc_worder *w, uint32_t id)
{
	mem[id].worth = (double)(next() % 1000) / 10.0 + 0.5;
	mem[id].seq = now - next() % 5000;
	mem[id].in = 1;
	if (mc_worder_set(w, id, mem[id].worth, mem[id].seq) != 0)
		abort();
}

static void
test_random(void)
{
	struct mc_worder w;
	int ok = 1;

	memset(mem, 0, sizeof(mem));
	now = 100000;
	mc_worder_init(&w, &ops, NULL);
	TAP_OK(mc_worder_lowest(&w, 1000, 10, (uint64_t[10]){ 0 }) == 0,
	       "an empty order has no lowest");
	for (uint32_t i = 0; i < N; i++)
		random_set(&w, i);
	ok &= matches(&w, 1000, 50);
	for (int round = 0; round < 200; round++) {
		for (int j = 0; j < 40; j++) {
			uint32_t id = (uint32_t)(next() % N);

			now++;
			if (next() % 3 == 0) {
				mc_worder_remove(&w, id);
				mc_worder_remove(&w, id);
				mem[id].in = 0;
			} else {
				random_set(&w, id);
			}
		}
		ok &= matches(&w, 1000, 1 + next() % 300);
	}
	TAP_OK(ok, "the lowest k are the lowest k by decayed worth under random sets and removals");
	TAP_OK(w.rekeys == 0, "a steady half-life, taken while the order was empty, never re-keys");
	TAP_OK(matches(&w, 1000, N), "k beyond the members gives every member, in order");
	mc_worder_free(&w);
}

static void
test_drift(void)
{
	struct mc_worder w;

	memset(mem, 0, sizeof(mem));
	now = 1000000;
	mc_worder_init(&w, &ops, NULL);
	for (uint32_t i = 0; i < N; i++)
		random_set(&w, i);
	TAP_OK(matches(&w, 100, 100) && w.rekeys == 1, "keyed under half-life 100");
	TAP_OK(matches(&w, 100 * 1.05, 1) && w.rekeys == 1,
	       "a half-life within the drift keeps the keys");
	TAP_OK(matches(&w, 4000, 200) && w.rekeys == 2,
	       "a half-life that moved re-keys, and the lowest follow it");
	/* access numbers renumbered under the order: halved, so the spread of ages is too */
	for (uint32_t i = 0; i < N; i++)
		mem[i].seq /= 2;
	now /= 2;
	mc_worder_stale(&w);
	TAP_OK(matches(&w, 4000, 200) && w.rekeys == 3,
	       "a stale order takes every key again at its next call");
	mc_worder_free(&w);
}

static void
test_no_worth(void)
{
	struct mc_worder w;
	uint64_t got[3];

	memset(mem, 0, sizeof(mem));
	mc_worder_init(&w, &ops, NULL);
	mem[0] = (struct member){ .worth = 0.001, .seq = 10, .in = 1 };
	mem[1] = (struct member){ .worth = 0, .seq = 90, .in = 1 };
	mem[2] = (struct member){ .worth = -1, .seq = 50, .in = 1 };
	for (uint32_t i = 0; i < 3; i++)
		mc_worder_set(&w, i, mem[i].worth, mem[i].seq);
	TAP_OK(mc_worder_lowest(&w, 10, 3, got) == 3 && got[0] == 2 && got[1] == 1 && got[2] == 0,
	       "no worth is below any, oldest first among its kind");
	TAP_OK(mc_worth_key(1, 10, 10) < mc_worth_key(1, 20, 10) &&
		       mc_worth_key(2, 0, 1) == mc_worth_key(1, 1, 1),
	       "a doubling of worth is worth one half-life of access");
	mc_worder_remove(&w, 1);
	TAP_OK(mc_worder_lowest(&w, 10, 3, got) == 2 && got[0] == 2 && got[1] == 0 &&
		       mem[1].place == 0,
	       "a removed member is gone and its place cleared");
	mc_worder_free(&w);
}

int
main(void)
{
	test_random();
	test_drift();
	test_no_worth();
	return tap_done();
}
