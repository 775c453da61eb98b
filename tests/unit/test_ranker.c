/*
 * Unit tests for the rankers (libmc/policy/ranker.c,
 * libmc/policy/rank_*.c). The views are built by hand: a ranker reads
 * only the records, so these tests pin the orders without depending on
 * the view's interning or streams.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/ranker.h"
#include "tap.h"

#define NOW 1000000000000ULL /* planning time, ms */
#define MIN (60 * 1000ULL)

static struct mc_cand cands[8];
static struct mc_cand_view view;

/* A view of n blank candidates: no cost hint, 1000 bytes, type 0, read just now. */
static void
view_reset(size_t n)
{
	size_t i;

	memset(cands, 0, sizeof(cands));
	for (i = 0; i < n; i++) {
		cands[i].cost = -1;
		cands[i].bytes = 1000;
		cands[i].last_access = NOW;
	}
	memset(&view, 0, sizeof(view));
	view.c = cands;
	view.n = view.cap = n;
}

/* Rank every candidate of the view by name; the order as "2,0,1". */
static const char *
order(const char *name, const struct mc_ranker_params *p)
{
	static char buf[64];
	uint32_t idx[8];
	size_t i, len = 0;

	for (i = 0; i < view.n; i++)
		idx[i] = (uint32_t)i;
	if (mc_rank(mc_ranker_find(name), &view, idx, view.n, p) != 0)
		return "error";
	buf[0] = '\0';
	for (i = 0; i < view.n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%u", i ? "," : "",
					(unsigned)idx[i]);
	return buf;
}

static void
test_table(void)
{
	static const char *const names[] = { "lease",	   "lru",  "fifo", "lfu",
					     "hyperbolic", "cost", "kv" };
	size_t i, n;
	int ok = 1;

	for (n = 0; mc_rankers[n]; n++)
		;
	TAP_OK(n == 7, "table: lists exactly seven rankers (got %zu)", n);
	for (i = 0; i < 7; i++) {
		const struct mc_ranker *r = mc_ranker_find(names[i]);

		TAP_OK(r && strcmp(r->name, names[i]) == 0 && r->help && r->score,
		       "find: '%s' names a ranker with help and a score", names[i]);
		if (i >= n || mc_rankers[i] != r)
			ok = 0;
	}
	TAP_OK(ok, "table: the seven in the documented order");
	TAP_OK(mc_ranker_find("random") == NULL, "find: an unknown name is NULL");
	TAP_OK(mc_ranker_find("") == NULL && mc_ranker_find("LRU") == NULL,
	       "find: empty and wrongly cased names are NULL");
}

static void
test_simple_orders(void)
{
	struct mc_ranker_params p = { .now = NOW };

	view_reset(4);
	cands[0].lease_expiry = NOW - 10;
	cands[1].lease_expiry = NOW - 40;
	cands[2].lease_expiry = NOW + 5;
	cands[3].lease_expiry = NOW - 20;
	TAP_OK(strcmp(order("lease", &p), "1,3,0,2") == 0, "lease: oldest expiry first (got %s)",
	       order("lease", &p));

	view_reset(4);
	cands[0].last_access = NOW - 1;
	cands[1].last_access = NOW - 3 * MIN;
	cands[2].last_access = NOW - 2 * MIN;
	cands[3].last_access = NOW;
	TAP_OK(strcmp(order("lru", &p), "1,2,0,3") == 0, "lru: least recently read first (got %s)",
	       order("lru", &p));

	view_reset(4);
	cands[0].created = NOW - 5;
	cands[1].created = NOW - 1;
	cands[2].created = NOW - 9;
	cands[3].created = NOW - 7;
	cands[2].last_access = NOW; /* reads do not matter to fifo */
	cands[2].access_count = 100;
	TAP_OK(strcmp(order("fifo", &p), "2,3,0,1") == 0,
	       "fifo: oldest created first, reads ignored (got %s)", order("fifo", &p));

	view_reset(3);
	cands[0].access_count = 5;
	cands[1].access_count = 1;
	cands[2].access_count = 9;
	for (size_t i = 0; i < 3; i++)
		cands[i].last_access = NOW;
	TAP_OK(strcmp(order("lfu", &p), "1,0,2") == 0,
	       "lfu: fewest reads first at equal age (got %s)", order("lfu", &p));

	/* 10 reads in 10 s, 10 reads in 100 s, 50 reads in 1000 s */
	view_reset(3);
	cands[0].created = NOW - 10000;
	cands[0].access_count = 10;
	cands[1].created = NOW - 100000;
	cands[1].access_count = 10;
	cands[2].created = NOW - 1000000;
	cands[2].access_count = 50;
	TAP_OK(strcmp(order("hyperbolic", &p), "2,1,0") == 0,
	       "hyperbolic: fewest reads per time in cache first (got %s)",
	       order("hyperbolic", &p));

	/* hints: cheap and big, expensive and small, cheap but read often */
	view_reset(3);
	cands[0].cost = 100;
	cands[0].bytes = 10000;
	cands[1].cost = 100;
	cands[1].bytes = 10;
	cands[2].cost = 100;
	cands[2].bytes = 10000;
	cands[2].access_count = 4;
	TAP_OK(strcmp(order("cost", &p), "0,2,1") == 0,
	       "cost: cost x (reads + 1) / bytes, lowest first (got %s)", order("cost", &p));

	/* aged: the same worth, but copy 0's reads ended two half-lives ago */
	view_reset(2);
	for (int k = 0; k < 2; k++) {
		cands[k].cost = 100;
		cands[k].access_count = 8;
	}
	cands[0].last_access = NOW - 2 * 600000;
	cands[1].last_access = NOW - 1000;
	TAP_OK(strcmp(order("cost", &p), "0,1") == 0,
	       "cost: reads age, the copy read long ago goes first (got %s)", order("cost", &p));
	cands[0].access_count = 40; /* 41 / 4 > 9: still worth more after ageing */
	TAP_OK(strcmp(order("cost", &p), "1,0") == 0,
	       "cost: ageing halves per half-life, it does not erase (got %s)", order("cost", &p));
}

static void
test_ties(void)
{
	struct mc_ranker_params p = { .now = NOW };
	uint32_t idx[5] = { 4, 2, 0, 3, 1 };
	size_t i;
	int ok = 1;

	view_reset(5);
	for (i = 0; i < 6; i++) {
		const char *got = order(mc_rankers[i]->name, &p);

		TAP_OK(strcmp(got, "0,1,2,3,4") == 0, "%s: equal scores keep index order (got %s)",
		       mc_rankers[i]->name, got);
	}
	/* ties by the candidate's index, not by its position in idx */
	cands[3].lease_expiry = 1;
	if (mc_rank(mc_ranker_find("lease"), &view, idx, 5, &p) != 0)
		ok = 0;
	TAP_OK(ok && idx[0] == 0 && idx[1] == 1 && idx[2] == 2 && idx[3] == 4 && idx[4] == 3,
	       "ties: broken by candidate index whatever the input order");
}

/*
 * The tie rule: equal scores go by logical age (older first), then key
 * bytes, never by the view's order (a master's view is in hash-table
 * order).
 */
static void
test_tie_rule(void)
{
	struct mc_ranker_params p = { .now = NOW, .seq = 100 };
	static const char *const keys[4] = { "d", "b", "c", "a" };
	static char arena[8];

	view_reset(4);
	view.seq = 100;
	view.keys = arena;
	for (size_t i = 0; i < 4; i++) {
		arena[i] = keys[i][0];
		cands[i].key_off = i;
		cands[i].key_len = 1;
	}
	/* all leases expired (score 0): 2 read at 10, 0 at 30, 1 and 3 both at 20 */
	cands[0].access_seq = 30;
	cands[1].access_seq = 20;
	cands[2].access_seq = 10;
	cands[3].access_seq = 20;
	TAP_OK(strcmp(order("lease", &p), "2,3,1,0") == 0,
	       "tie rule: equal scores by age, then key ('a' before 'b'): got %s",
	       order("lease", &p));
	/* the same with the radix sort of a large view is checked in test_speed */
}

/*
 * kv: orphans first, then probationers beyond the segment, then the
 * lowest LRFU value; within a class by age.
 */
static void
test_kv(void)
{
	struct mc_ranker_params p = { .now = NOW, .seq = 100 };

	view_reset(6);
	view.seq = 100;
	cands[0].crf = 3.0;
	cands[1].crf = 0.5;
	cands[2].crf = 9.0; /* high value, but its prefix is gone */
	cands[2].flags = MC_CAND_ORPHAN;
	cands[2].access_seq = 50;
	cands[3].crf = 1.0; /* new, beyond the segment */
	cands[3].flags = MC_CAND_PROBATION;
	cands[3].access_seq = 40;
	cands[4].flags = MC_CAND_ORPHAN | MC_CAND_PROBATION; /* an orphan, whatever else */
	cands[4].access_seq = 60;
	cands[5].crf = 2.0;
	TAP_OK(strcmp(order("kv", &p), "2,4,3,1,5,0") == 0,
	       "kv: orphans (oldest first), probationers, then by value: got %s", order("kv", &p));
	/* members of a class go by age, not by value */
	cands[4].flags = 0;
	cands[4].crf = 100;
	cands[1].flags = MC_CAND_ORPHAN;
	cands[1].access_seq = 10;
	TAP_OK(strcmp(order("kv", &p), "1,2,3,5,0,4") == 0,
	       "kv: the older orphan first whatever its value: got %s", order("kv", &p));
}

static void
test_subset(void)
{
	struct mc_ranker_params p = { .now = NOW };
	uint32_t idx[2] = { 3, 1 };

	/* a scope ranks only its own candidates; the others are untouched */
	view_reset(4);
	cands[0].created = 1;
	cands[1].created = 40;
	cands[2].created = 2;
	cands[3].created = 30;
	TAP_OK(mc_rank(mc_ranker_find("fifo"), &view, idx, 2, &p) == 0 && idx[0] == 3 &&
		       idx[1] == 1,
	       "subset: only the given indices are ordered");
	TAP_OK(mc_rank(mc_ranker_find("fifo"), &view, idx, 0, &p) == 0,
	       "subset: an empty scope ranks fine");
}

static void
test_lfu_decay(void)
{
	struct mc_ranker_params p = { .now = NOW };

	/* old: 100 reads, the last 10 half-lives ago; fresh: 2 reads just now */
	view_reset(2);
	cands[0].access_count = 2;
	cands[0].last_access = NOW;
	cands[1].access_count = 100;
	cands[1].last_access = NOW - 100 * MIN;
	TAP_OK(strcmp(order("lfu", &p), "1,0") == 0,
	       "lfu: a frequently read copy idle for 10 half-lives goes before a fresh one");

	cands[1].last_access = NOW - 50 * MIN;
	TAP_OK(strcmp(order("lfu", &p), "0,1") == 0,
	       "lfu: after 5 half-lives the frequently read copy still stays");

	p.lfu_half_life_ms = 5 * MIN;
	TAP_OK(strcmp(order("lfu", &p), "1,0") == 0,
	       "lfu: params->lfu_half_life_ms replaces the 10 minute default");

	/* 100 x 2^-10 ~ 0.098 against 2 x 2^0 */
	p.lfu_half_life_ms = 0;
	cands[1].last_access = NOW - 100 * MIN;
	TAP_OK(mc_ranker_find("lfu")->score(&view, &cands[1], &p) > 0.09 &&
		       mc_ranker_find("lfu")->score(&view, &cands[1], &p) < 0.1,
	       "lfu: the count halves with each half-life");
}

#define SEQ 5000000ULL /* the view's access sequence */

/*
 * With a sequence the rankers read logical time: the millisecond stamps
 * here all tie, as they do in a fast replay or under a frozen clock, or
 * point the other way, and the order still follows the accesses.
 */
static void
test_logical_orders(void)
{
	struct mc_ranker_params p = { .now = NOW, .seq = SEQ };
	struct mc_ranker_params ms = { .now = NOW };

	view_reset(4);
	cands[0].access_seq = SEQ - 10;
	cands[1].access_seq = SEQ - 40;
	cands[2].access_seq = SEQ;
	cands[3].access_seq = SEQ - 20;
	TAP_OK(strcmp(order("lru", &p), "1,3,0,2") == 0,
	       "lru: same millisecond, different sequences: least recently read first (got %s)",
	       order("lru", &p));
	TAP_OK(strcmp(order("lru", &ms), "0,1,2,3") == 0,
	       "lru: the same records in a view without a sequence tie on ms (got %s)",
	       order("lru", &ms));
	cands[1].last_access = NOW - 5 * MIN; /* ms say 1 is oldest, */
	cands[2].last_access = NOW - 9 * MIN; /* 2 older still */
	TAP_OK(strcmp(order("lru", &p), "1,3,0,2") == 0,
	       "lru: with a sequence the ms stamps do not count (got %s)", order("lru", &p));
	TAP_OK(strcmp(order("lru", &ms), "2,1,0,3") == 0,
	       "lru: without one they are the order (got %s)", order("lru", &ms));

	view_reset(4);
	cands[0].created_seq = 7;
	cands[1].created_seq = 3;
	cands[2].created_seq = 9;
	cands[3].created_seq = 1;
	cands[3].access_seq = SEQ; /* reads do not matter to fifo */
	for (size_t i = 0; i < 4; i++)
		cands[i].created = NOW - i; /* in ms, 3 is oldest, then 2 */
	TAP_OK(strcmp(order("fifo", &p), "3,1,0,2") == 0,
	       "fifo: oldest created_seq first, ms and reads ignored (got %s)", order("fifo", &p));
	TAP_OK(strcmp(order("fifo", &ms), "3,2,1,0") == 0,
	       "fifo: without a sequence, oldest created ms first (got %s)", order("fifo", &ms));

	/* 10 reads in 10 accesses, 10 in 100, 50 in 1000 */
	view_reset(3);
	cands[0].created_seq = SEQ - 9;
	cands[0].access_count = 10;
	cands[1].created_seq = SEQ - 99;
	cands[1].access_count = 10;
	cands[2].created_seq = SEQ - 999;
	cands[2].access_count = 50;
	TAP_OK(strcmp(order("hyperbolic", &p), "2,1,0") == 0,
	       "hyperbolic: fewest reads per access in cache first (got %s)",
	       order("hyperbolic", &p));
	TAP_OK(mc_ranker_find("hyperbolic")->score(&view, &cands[0], &p) == 1,
	       "hyperbolic: divides by seq - created_seq + 1 (10 reads over 10 accesses)");
	cands[0].created_seq = SEQ;
	TAP_OK(mc_ranker_find("hyperbolic")->score(&view, &cands[0], &p) == 10,
	       "hyperbolic: a copy created by the view's last access has been in for 1");
	cands[0].created_seq = SEQ + 50;
	TAP_OK(mc_ranker_find("hyperbolic")->score(&view, &cands[0], &p) == 10,
	       "hyperbolic: created after the view's seq counts as 1 access in cache");
}

static void
test_logical_decay(void)
{
	struct mc_ranker_params p = { .now = NOW, .seq = SEQ };
	const struct mc_ranker *lfu = mc_ranker_find("lfu");
	double x;

	/* old: 100 reads, the last 10 half-lives of accesses ago; fresh: 2 now */
	view_reset(2);
	cands[0].access_count = 2;
	cands[0].access_seq = SEQ;
	cands[1].access_count = 100;
	cands[1].access_seq = SEQ - 10 * MC_RANK_HALF_LIFE_ACCESSES;
	TAP_OK(strcmp(order("lfu", &p), "1,0") == 0,
	       "lfu: a copy idle for 10 half-lives of accesses goes before a fresh one");
	x = lfu->score(&view, &cands[1], &p);
	TAP_OK(x > 0.0976 && x < 0.0977,
	       "lfu: the default half-life is %d accesses: 100 x 2^-10 (got %g)",
	       MC_RANK_HALF_LIFE_ACCESSES, x);
	cands[1].access_seq = SEQ - 5 * MC_RANK_HALF_LIFE_ACCESSES;
	TAP_OK(strcmp(order("lfu", &p), "0,1") == 0,
	       "lfu: after 5 half-lives of accesses the frequently read copy still stays");
	p.lfu_half_life_accesses = MC_RANK_HALF_LIFE_ACCESSES / 2;
	TAP_OK(strcmp(order("lfu", &p), "1,0") == 0,
	       "lfu: params->lfu_half_life_accesses replaces the default");
	p.lfu_half_life_accesses = 1000;
	cands[1].access_seq = SEQ - 3000;
	x = lfu->score(&view, &cands[1], &p);
	TAP_OK(x == 12.5, "lfu: the count halves every half-life of accesses (got %g)", x);
	/* the ms half-life and the ms stamps play no part */
	p.lfu_half_life_ms = 1;
	cands[1].last_access = 0;
	TAP_OK(lfu->score(&view, &cands[1], &p) == 12.5,
	       "lfu: with a sequence the ms half-life and last_access are ignored");
	cands[1].access_seq = SEQ + 7;
	TAP_OK(lfu->score(&view, &cands[1], &p) == 100,
	       "lfu: an access numbered after the view's seq is fresh (age 0)");

	/* the same worth, but copy 0's reads ended two half-lives of accesses ago */
	p.lfu_half_life_accesses = 0;
	view_reset(2);
	for (int k = 0; k < 2; k++) {
		cands[k].cost = 100;
		cands[k].access_count = 8;
	}
	cands[0].access_seq = SEQ - 2 * MC_RANK_HALF_LIFE_ACCESSES;
	cands[1].access_seq = SEQ - 1;
	TAP_OK(strcmp(order("cost", &p), "0,1") == 0,
	       "cost: reads age by accesses, the copy read longest ago goes first (got %s)",
	       order("cost", &p));
	cands[0].access_count = 40; /* 41 / 4 > 9: still worth more after ageing */
	TAP_OK(strcmp(order("cost", &p), "1,0") == 0,
	       "cost: ageing by accesses halves, it does not erase (got %s)", order("cost", &p));
	p.seq = 0;
	TAP_OK(strcmp(order("cost", &p), "1,0") == 0 &&
		       mc_ranker_find("cost")->score(&view, &cands[0], &p) == 41.0 * 100 / 1000,
	       "cost: without a sequence the same records age by ms (read just now: no decay)");
}

static void
test_cost_defaults(void)
{
	/* type 1 "hidden": 1e6 per copy; type 2 "kv": by bytes; type 3 none */
	static const double type_cost[] = { -1, 1e6, -1, -1 };
	struct mc_ranker_params p = {
		.now = NOW, .type_cost = type_cost, .ntype_cost = 4, .cost_per_byte = 2
	};
	const struct mc_ranker *r = mc_ranker_find("cost");

	view_reset(3);
	cands[0].type = 1; /* no hint: the type's default */
	cands[1].type = 1;
	cands[1].cost = 10; /* a hint wins over the default */
	cands[2].type = 2;
	TAP_OK(r->score(&view, &cands[0], &p) == 1e6 * 1 / 1000,
	       "cost: a candidate without a hint takes its type's default");
	TAP_OK(r->score(&view, &cands[1], &p) == 10.0 / 1000,
	       "cost: the candidate's own hint wins over the type default");
	TAP_OK(r->score(&view, &cands[2], &p) == 2, "cost: no type default: bytes x cost_per_byte");
	TAP_OK(strcmp(order("cost", &p), "1,2,0") == 0,
	       "cost: the hidden state with the high default goes last (got %s)",
	       order("cost", &p));

	p.cost_per_byte = 0;
	TAP_OK(r->score(&view, &cands[2], &p) == 1, "cost: no default and no per-byte cost: bytes");
	p.type_cost = NULL;
	TAP_OK(r->score(&view, &cands[0], &p) == 1, "cost: no type table: bytes");
	cands[0].type = 7; /* beyond the table */
	p.type_cost = type_cost;
	TAP_OK(r->score(&view, &cands[0], &p) == 1, "cost: a type id past the table: bytes");
	cands[0].cost = 0;
	TAP_OK(r->score(&view, &cands[0], &p) == 0, "cost: a zero hint is a hint, not absent");
}

static void
test_guards(void)
{
	struct mc_ranker_params p = { .now = NOW };
	size_t i, j;
	int ok = 1;

	/* reads and creations stamped after now, zero bytes, zero counts */
	view_reset(4);
	cands[0].created = NOW + 5000;
	cands[0].last_access = NOW + 5000;
	cands[0].access_count = 3;
	cands[0].bytes = 0;
	cands[1].bytes = 0;
	cands[1].cost = 1e300;
	cands[2].created = NOW;
	cands[3].created = 0;
	cands[3].last_access = 0;
	cands[3].access_count = UINT64_MAX;
	for (i = 0; mc_rankers[i]; i++)
		for (j = 0; j < 4; j++) {
			double s = mc_rankers[i]->score(&view, &cands[j], &p);

			if (s != s || s < 0)
				ok = 0;
		}
	TAP_OK(ok, "guards: no ranker scores NaN or below zero on skewed or empty input");
	/* the same in logical time: sequences past the view's, and none at all */
	p.seq = 2;
	cands[0].access_seq = cands[0].created_seq = 9;
	cands[3].access_seq = cands[3].created_seq = 0;
	for (i = 0; mc_rankers[i]; i++)
		for (j = 0; j < 4; j++) {
			double s = mc_rankers[i]->score(&view, &cands[j], &p);

			if (s != s || s < 0)
				ok = 0;
		}
	TAP_OK(ok, "guards: nor with sequences past the view's or missing");
	p.seq = 0;
	TAP_OK(mc_ranker_find("lfu")->score(&view, &cands[0], &p) == 3,
	       "lfu: a read stamped after now is a fresh read (age 0)");
	TAP_OK(mc_ranker_find("hyperbolic")->score(&view, &cands[0], &p) == 3,
	       "hyperbolic: created after now counts as 1 ms in cache");
}

/* A ranker the table does not hold: scores from the candidate's version. */
static double
signed_score(const struct mc_cand_view *v, const struct mc_cand *c,
	     const struct mc_ranker_params *p)
{
	static const double scores[] = { 3, -0.0, -7.5, 0.0, -1e300, 2, NAN, -2 };

	(void)v;
	(void)p;
	return scores[c->version % 8];
}

static void
test_sort_paths(void)
{
	const struct mc_ranker signed_ranker = { "signed", "test", signed_score };
	struct mc_ranker_params p = { .now = NOW };
	const size_t n = 5000; /* above the comparison-sort cutoff */
	struct mc_cand_view v;
	uint32_t *idx;
	size_t i, k;
	int ok;

	memset(&v, 0, sizeof(v));
	v.c = calloc(n, sizeof(*v.c));
	idx = malloc(n * sizeof(*idx));
	if (!v.c || !idx) {
		TAP_OK(0, "sort: allocate candidates");
		goto out;
	}
	v.n = v.cap = n;
	for (i = 0; i < n; i++) {
		v.c[i].lease_expiry = NOW + (tap_rng() % 3) * 1000;
		v.c[i].version = i;
	}
	/* two passes: indices ascending (no index passes) and shuffled */
	for (k = 0; k < 2; k++) {
		for (i = 0; i < n; i++)
			idx[i] = (uint32_t)i;
		for (i = n - 1; k && i > 0; i--) {
			size_t j = tap_rng() % (i + 1);
			uint32_t t = idx[i];

			idx[i] = idx[j];
			idx[j] = t;
		}
		ok = mc_rank(mc_ranker_find("lease"), &v, idx, n, &p) == 0;
		for (i = 1; ok && i < n; i++) {
			uint64_t a = v.c[idx[i - 1]].lease_expiry, b = v.c[idx[i]].lease_expiry;

			if (a > b || (a == b && idx[i - 1] >= idx[i]))
				ok = 0;
		}
		TAP_OK(ok, "sort: 5000 candidates with 3 scores tie by index (%s input)",
		       k ? "shuffled" : "ascending");
	}

	/* negative scores, -0 equal to 0, NaN last; both sort paths agree */
	for (k = 0; k < 2; k++) {
		size_t m = k ? n : 16;
		/* by version % 8: -1e300, -7.5, -2, {-0, 0}, 2, 3, NaN */
		static const int rank_of[] = { 5, 3, 1, 3, 0, 4, 6, 2 };

		for (i = 0; i < m; i++)
			idx[i] = (uint32_t)(m - 1 - i);
		ok = mc_rank(&signed_ranker, &v, idx, m, &p) == 0;
		for (i = 1; ok && i < m; i++) {
			int a = rank_of[idx[i - 1] % 8], b = rank_of[idx[i] % 8];

			if (a > b || (a == b && idx[i - 1] >= idx[i]))
				ok = 0;
		}
		TAP_OK(ok, "sort: negative scores first, -0 ties 0, NaN last (%zu candidates)", m);
	}
out:
	free(v.c);
	free(idx);
}

static void
test_speed(void)
{
	const size_t n = 1000000;
	struct mc_ranker_params p = { .now = NOW };
	struct mc_cand_view v;
	uint32_t *idx;
	size_t i, k;
	int ok = 1;

	memset(&v, 0, sizeof(v));
	v.c = calloc(n, sizeof(*v.c));
	idx = malloc(n * sizeof(*idx));
	if (!v.c || !idx) {
		TAP_OK(0, "speed: allocate 1M candidates");
		goto out;
	}
	v.n = v.cap = n;
	for (i = 0; i < n; i++) {
		v.c[i].bytes = 1 + tap_rng() % (1 << 20);
		v.c[i].created = NOW - tap_rng() % (24 * 60 * MIN);
		v.c[i].last_access = v.c[i].created + tap_rng() % (NOW - v.c[i].created + 1);
		v.c[i].lease_expiry = v.c[i].last_access + 5000;
		v.c[i].access_count = tap_rng() % 1000;
		v.c[i].cost = (tap_rng() & 1) ? -1 : (double)(tap_rng() % 100000);
	}
	for (k = 0; mc_rankers[k]; k++) {
		const struct mc_ranker *r = mc_rankers[k];
		uint64_t t0;
		double ms;

		for (i = 0; i < n; i++)
			idx[i] = (uint32_t)(n - 1 - i);
		t0 = mc_mono_ns();
		if (mc_rank(r, &v, idx, n, &p) != 0) {
			ok = 0;
			continue;
		}
		ms = (double)(mc_mono_ns() - t0) / 1e6;
		printf("# speed: %s ranks 1M candidates in %.1f ms\n", r->name, ms);
		for (i = 1; i < n; i++) {
			double a = r->score(&v, &v.c[idx[i - 1]], &p);
			double b = r->score(&v, &v.c[idx[i]], &p);

			uint64_t ra = mc_rank_recency(&v.c[idx[i - 1]], &p);
			uint64_t rb = mc_rank_recency(&v.c[idx[i]], &p);

			/* ties by age, then key (none here), then index */
			if (a > b || (a == b && (ra > rb || (ra == rb && idx[i - 1] >= idx[i])))) {
				ok = 0;
				break;
			}
		}
	}
	TAP_OK(ok, "speed: 1M candidates come out in (score, age, index) order for every ranker");
out:
	free(v.c);
	free(idx);
}

int
main(void)
{
	test_table();
	test_simple_orders();
	test_ties();
	test_tie_rule();
	test_kv();
	test_subset();
	test_lfu_decay();
	test_logical_orders();
	test_logical_decay();
	test_cost_defaults();
	test_guards();
	test_sort_paths();
	test_speed();
	return tap_done();
}
