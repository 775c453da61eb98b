/*
 * mc-peerplan [--copies N[,N...]] [--size BYTES] [--slice BYTES]
 *             [--rounds R]: what a local eviction plan costs per victim
 * on the peer, against the copies on its tier (tests/bench/evict, its
 * target: flat from 10k to 10M copies, within 2x).
 *
 * For each N (default 10000,1000000,10000000), in one process on the
 * peer's own index, pool and eviction worker (linked from cmd/mc-peer):
 * N copies of --size bytes (default 4 KiB) are committed on a dram tier
 * just big enough for them, with their commit notices (type kv), then
 * N/4 reads of random keys stir the recency and take those copies off
 * probation. Each of R rounds (default 20) times one plan for --slice
 * bytes (default 256 KiB) with the built-in policy (reclaimer_plan:
 * the window of the coldest candidates, the lowest by worth and the
 * probationers beyond their share, the view, the planner), then,
 * outside the clock, evicts the plan's victims and commits as many new
 * copies, so the tier stays at N. The tier's medium keeps the dram
 * medium's order (medium_lru) but no bytes: planning never reads them,
 * and 10M copies' bytes would not fit. Prints one line per N:
 *   peerplan copies=N rounds=R plan_us=MEDIAN ns_per_victim=MEDIAN
 *            victims=V window=W view=RECORDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/plan.h"
#include "mc/policy.h"

#include "benchkeys.h"
#include "pool.h"
#include "reclaim.h"

#define PAGE 4096u
#define MAX_ROUNDS 1000
#define MAX_SIZES 8
#define T "bench"

/* ---- a medium of no bytes, ordered as dram is ---- */

struct counted {
	struct medium m; /* first: the medium is the counted */
	struct medium_lru lru;
	uint64_t cap, used, next;
};

static struct counted *
counted_of(struct medium *m)
{
	return (struct counted *)m;
}

static uint64_t
pages(uint64_t len)
{
	return (len + PAGE - 1) / PAGE * PAGE;
}

static int
c_alloc(struct medium *m, uint64_t len, uint64_t *off, struct mc_err *err)
{
	struct counted *c = counted_of(m);

	if (c->used + pages(len) > c->cap)
		return mc_err_set(err, MC_ERR_NO_SPACE, "the tier is full");
	c->used += pages(len);
	*off = c->next;
	c->next += pages(len);
	return 0;
}

static void
c_release(struct medium *m, uint64_t off, uint64_t len)
{
	(void)off;
	counted_of(m)->used -= pages(len);
}

static const void *
c_read(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	(void)m;
	(void)off;
	(void)len;
	(void)buf;
	mc_err_set(err, MC_ERR_UNAVAILABLE, "this medium keeps no bytes");
	return NULL;
}

static int
c_source(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_src *s, struct mc_err *err)
{
	(void)m;
	(void)off;
	(void)len;
	(void)s;
	return mc_err_set(err, MC_ERR_UNAVAILABLE, "this medium keeps no bytes");
}

static int
c_sink(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_sink *s, struct mc_err *err)
{
	(void)m;
	(void)off;
	(void)len;
	(void)s;
	return mc_err_set(err, MC_ERR_UNAVAILABLE, "this medium keeps no bytes");
}

static int
c_write(struct medium *m, uint64_t off, const void *buf, uint64_t len, struct mc_err *err)
{
	(void)m;
	(void)off;
	(void)buf;
	(void)len;
	return mc_err_set(err, MC_ERR_UNAVAILABLE, "this medium keeps no bytes");
}

static uint64_t
c_capacity(struct medium *m)
{
	return counted_of(m)->cap;
}

static uint64_t
c_used(struct medium *m)
{
	return counted_of(m)->used;
}

static void
c_track(struct medium *m, struct medium_order *o, uint64_t len)
{
	medium_lru_track(&counted_of(m)->lru, o, pages(len));
}

static void
c_untrack(struct medium *m, struct medium_order *o)
{
	medium_lru_untrack(&counted_of(m)->lru, o);
}

static size_t
c_offer(struct medium *m, struct medium_offer *out, size_t max)
{
	return medium_lru_offer(&counted_of(m)->lru, out, max);
}

static const struct medium_ops counted_ops = {
	.alloc = c_alloc,
	.release = c_release,
	.read = c_read,
	.source = c_source,
	.sink = c_sink,
	.write = c_write,
	.capacity = c_capacity,
	.used = c_used,
	.track = c_track,
	.untrack = c_untrack,
	.offer = c_offer,
};

/* ---- the bench ---- */

/* Commit copy i of size bytes, with its commit notice. */
static int
commit(struct pool *pl, uint64_t i, uint64_t size)
{
	struct pindex *ix = pl->ix;
	struct medium *m = ix->media[MC_TIER_DRAM];
	struct mc_err err;
	struct pobj *o;
	uint64_t off;
	char key[40];
	size_t klen = bench_key(key, sizeof(key), i);

	if (medium_alloc(m, size, &off, &err) < 0)
		return -1;
	if (!(o = pobj_new(ix, T, strlen(T), key, klen, 1, size, 0, MC_TIER_DRAM, off))) {
		medium_release(m, off, size);
		return -1;
	}
	if (pool_commit(pl, o, &err) < 0) {
		pindex_release(ix, o);
		return -1;
	}
	/* linked: the index's reference keeps o, and nothing else runs meanwhile */
	pindex_set_meta(ix, o, pmeta_new("kv", 2, "", 0, false, 0), mc_now_ms());
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) / 2];
}

static int
run(struct event_base *base, const struct mc_policy *pol, uint64_t n, uint64_t size, uint64_t slice,
    int rounds)
{
	struct counted c = { .cap = n * pages(size) };
	struct medium *media[MC_TIER_COUNT] = { NULL };
	struct reclaim_conf conf = { .mode = EVICT_LOCAL, .policy = pol };
	uint64_t plan_ns[MAX_ROUNDS], per_victim[MAX_ROUNDS], next = n;
	size_t window = 0, view = 0, victims = 0;
	struct reclaimer *r = NULL;
	struct mc_err err;
	struct pindex ix;
	struct pool pl;
	char key[40];
	int rc = -1;

	c.m.ops = &counted_ops;
	c.m.tier = MC_TIER_DRAM;
	c.m.page = PAGE;
	medium_lru_init(&c.lru);
	media[MC_TIER_DRAM] = &c.m;
	if (pindex_init(&ix, media, &err) < 0) {
		fprintf(stderr, "mc-peerplan: %s\n", err.msg);
		return -1;
	}
	pool_init(&pl, &ix);
	if (mc_htab_reserve(&ix.tab, n + 1) < 0)
		goto out;
	for (uint64_t i = 0; i < n; i++)
		if (commit(&pl, i, size) < 0)
			goto out;
	for (uint64_t i = 0; i < n / 4; i++) {
		size_t klen = bench_key(key, sizeof(key), bench_rand() % n);
		struct pobj *o = pindex_acquire(&ix, T, strlen(T), key, klen);

		if (o) {
			pindex_read(&ix, o);
			pindex_release(&ix, o);
		}
	}
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		conf.high[t] = 1;
		conf.low[t] = 1;
	}
	if (!(r = reclaimer_new(base, &pl, NULL, &conf, &err)))
		goto out;
	for (int k = 0; k < rounds; k++) {
		struct mc_plan p;
		uint64_t t0, t1;

		t0 = mc_mono_ns();
		if (reclaimer_plan(r, MC_TIER_DRAM, slice, &p, &window, &err) < 0)
			goto out;
		t1 = mc_mono_ns();
		view = p.view.n;
		victims = 0;
		for (size_t s = 0; s < p.nstages; s++) {
			for (size_t j = 0; j < p.stages[s].nvictims; j++) {
				const struct mc_cand *cd = &p.view.c[p.stages[s].victims[j]];
				struct pool_key pk = {
					T,	     strlen(T), mc_cand_key(&p.view, cd),
					cd->key_len, true,	cd->version
				};
				struct pool_result res;

				pool_evict(&pl, &pk, MC_TIER_DRAM, POOL_RECLAIM, &res);
				victims += res.outcome == POOL_FREED;
			}
		}
		mc_plan_free(&p);
		if (victims == 0) {
			fprintf(stderr, "mc-peerplan: a plan of %llu copies freed nothing\n",
				(unsigned long long)n);
			goto out;
		}
		plan_ns[k] = t1 - t0;
		per_victim[k] = (t1 - t0) / victims;
		for (size_t v = 0; v < victims; v++)
			if (commit(&pl, next++, size) < 0)
				goto out;
	}
	printf("peerplan copies=%llu rounds=%d plan_us=%.1f ns_per_victim=%llu victims=%zu "
	       "window=%zu view=%zu\n",
	       (unsigned long long)n, rounds, (double)median(plan_ns, (size_t)rounds) / 1000.0,
	       (unsigned long long)median(per_victim, (size_t)rounds), victims, window, view);
	fflush(stdout);
	rc = 0;
out:
	if (rc < 0)
		fprintf(stderr, "mc-peerplan: cannot bench %llu copies: %s\n",
			(unsigned long long)n, r ? err.msg : "out of memory");
	reclaimer_free(r);
	pindex_destroy(&ix);
	return rc;
}

static void
usage(void)
{
	fprintf(stderr, "usage: mc-peerplan [--copies N[,N...]] [--size BYTES] [--slice BYTES] "
			"[--rounds R]\n");
	exit(64);
}

static uint64_t
number(const char *flag, const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *end != '\0' || v == 0) {
		fprintf(stderr, "mc-peerplan: invalid %s '%s'\n", flag, s);
		exit(64);
	}
	return v;
}

int
main(int argc, char **argv)
{
	uint64_t sizes[MAX_SIZES] = { 10000, 1000000, 10000000 }, size = PAGE, slice = 256u << 10;
	size_t nsizes = 3;
	int rounds = 20;
	struct event_base *base;
	struct mc_policy pol;
	struct mc_err err;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--copies") == 0) {
			char *list = argv[++i], *tok, *save = NULL;

			nsizes = 0;
			for (tok = strtok_r(list, ",", &save); tok && nsizes < MAX_SIZES;
			     tok = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = number("--copies", tok);
		} else if (strcmp(argv[i], "--size") == 0) {
			size = number("--size", argv[++i]);
		} else if (strcmp(argv[i], "--slice") == 0) {
			slice = number("--slice", argv[++i]);
		} else if (strcmp(argv[i], "--rounds") == 0) {
			uint64_t v = number("--rounds", argv[++i]);

			if (v > MAX_ROUNDS)
				usage();
			rounds = (int)v;
		} else {
			usage();
		}
	}
	if (nsizes == 0)
		usage();
	mc_log_set_level(MC_LOG_WARN);
	if (!(base = event_base_new()) || mc_policy_builtin(&pol, &err) < 0) {
		fprintf(stderr, "mc-peerplan: cannot start: %s\n",
			base ? err.msg : "no event base");
		return 70;
	}
	for (size_t i = 0; i < nsizes && rc == 0; i++)
		if (run(base, &pol, sizes[i], size, slice, rounds) < 0)
			rc = 70;
	mc_policy_free(&pol);
	event_base_free(base);
	return rc;
}
