/*
 * mc-rankbench [--objects N] [--queries Q] [--scans S]: the cost of
 * evict_candidates' answer from the master's recency index against a
 * full scan of the same store, in one process, on the master's own
 * store and index code (linked from cmd/mc-master).
 *
 * N objects (default 10M, 24-byte keys, 64 KiB each) are written as puts
 * leave them: created, accessed, a complete copy on peer 1 or 2 (keys
 * alternate) on dram, and every fourth also on the same peer's ssd.
 * Then N/4 reads of random keys stir the recency. The query asks for
 * peer 1's 4096 least recently accessed dram keys (rank_query, as the
 * RPC does), Q times; the scan walks every object and keeps the 4096
 * oldest of peer 1's offerable dram copies in a max-heap by access_seq,
 * S times. Both answers must be the same keys in the same order, or the
 * tool exits 1. Prints the medians, their ratio, and the index's memory
 * per entry, then one line "rank key=value ...".
 *
 * mc-rankbench --plan VICTIMS [--objects N] [--queries Q]: the cost of
 * a tier's eviction round's planning per victim instead. N objects
 * (4 KiB each, in chains of 8 blocks, every one with a complete copy on
 * one registered peer's dram, which is exactly full) are written and
 * N/4 random keys read, as above. Each of Q rounds then builds the
 * round's view from the tier's window (candidates_begin_window, sized by
 * mc_plan_window for VICTIMS copies' bytes) and plans it with the
 * built-in policy, as a round does before it executes; nothing is
 * evicted, so every round sees the same tier. Prints the median time
 * of a round, its victims and records, and one line "plan key=value
 * ..." with the median nanoseconds per victim. --full times the full
 * view (the `candidates` walk) instead of the window, for contrast.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/planner.h"
#include "benchkeys.h"
#include "candidates.h"
#include "master.h"
#include "peers.h"
#include "rank.h"
#include "store.h"
#include "recency.h"
#include "start.h"

#define WANT RANK_MAX
#define OBJ_SIZE (64u << 10)

static struct master m;

/* Reads of a quarter of the n keys, at random: the store's order is not the order of writing. */
static void
read_some(uint64_t n)
{
	char key[64];

	for (uint64_t i = 0; i < n / 4; i++) {
		size_t len;

		bench_key(key, sizeof(key), bench_rand() % n);
		len = strlen(key);
		store_read(m.store, store_find(m.store, store_key_hash(0, key, len), 0, key, len));
	}
}

static int
fill(uint64_t n)
{
	struct mc_err err;
	char key[32];

	if (mc_htab_reserve(&m.store->objects, n) != 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		size_t len;
		struct mobj *o;
		uint32_t peer = 1 + (uint32_t)(i % 2);

		bench_key(key, sizeof(key), i);
		len = strlen(key);
		o = store_create(m.store, store_key_hash(0, key, len), 0, key, len, OBJ_SIZE, NULL,
				 0, &err);
		if (o == NULL)
			return -1;
		o->version = i + 1;
		store_access_new(m.store, o, 0);
		for (int t = 0; t < (i % 4 == 0 ? 2 : 1); t++) {
			struct mrep *r = store_rep_add(o);
			if (r == NULL)
				return -1;
			r->peer = peer;
			r->tier = t == 0 ? MC_TIER_DRAM : MC_TIER_SSD;
			r->version = o->version;
			r->state = REP_COMPLETE;
		}
		/* the commit's hook: its copies join their lists */
		if (recency_sync(&m.store->rank, o) != 0)
			return -1;
	}
	read_some(n);
	return 0;
}

/* A max-heap of the oldest found so far: the root is the warmest kept. */
static void
sift_down(struct mobj **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, top = i;

		if (l < n && h[l]->access_seq > h[top]->access_seq)
			top = l;
		if (r < n && h[r]->access_seq > h[top]->access_seq)
			top = r;
		if (top == i)
			return;
		struct mobj *t = h[i];
		h[i] = h[top];
		h[top] = t;
		i = top;
	}
}

static void
sift_up(struct mobj **h, size_t i)
{
	while (i > 0 && h[(i - 1) / 2]->access_seq < h[i]->access_seq) {
		struct mobj *t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* The scan: every object looked at; the answer coldest first in out. */
static size_t
scan(uint32_t peer, int tier, uint64_t now, struct mobj **heap, struct mobj **out)
{
	size_t cur = 0, n = 0;
	struct mobj *o;

	while ((o = mc_htab_next(&m.store->objects, &cur)) != NULL) {
		/* the index's own filter, so both answers can be compared */
		if (!rank_offerable(o, peer, tier, now))
			continue;
		if (n < WANT) {
			heap[n] = o;
			sift_up(heap, n++);
		} else if (o->access_seq < heap[0]->access_seq) {
			heap[0] = o;
			sift_down(heap, n, 0);
		}
	}
	for (size_t k = n; k-- > 0;) {
		out[k] = heap[0];
		heap[0] = heap[k];
		sift_down(heap, k, 0);
	}
	return n;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t
median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

#define PLAN_SIZE 4096u
#define PLAN_CHAIN 8u

/* N chained blocks on p's dram, then N/4 random reads; the tier exactly full. */
static int
plan_fill(struct peer *p, uint64_t n)
{
	struct mc_err err;
	char key[32], parent[32];

	if (mc_htab_reserve(&m.store->objects, n) != 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		size_t len;
		struct mobj *o;
		struct mrep *r;

		bench_key(key, sizeof(key), i);
		len = strlen(key);
		bench_key(parent, sizeof(parent), i - 1);
		o = store_create(m.store, store_key_hash(0, key, len), 0, key, len, PLAN_SIZE, NULL,
				 0, &err);
		if (o == NULL || (r = store_rep_add(o)) == NULL)
			return -1;
		o->version = i + 1;
		store_access_new(m.store, o,
				 i % PLAN_CHAIN != 0 ? store_key_hash(0, parent, strlen(parent))
						     : 0);
		r->peer = p->id;
		r->tier = MC_TIER_DRAM;
		r->version = o->version;
		r->state = REP_COMPLETE;
		if (recency_sync(&m.store->rank, o) != 0)
			return -1;
	}
	read_some(n);
	p->tiers[MC_TIER_DRAM].used = n * PLAN_SIZE;
	p->tiers[MC_TIER_DRAM].capacity = n * PLAN_SIZE;
	return 0;
}

/* One round's view and plan; its victims and records in *victims and *records. */
static int
plan_round(const struct mc_policy *pol, struct peer *p, uint64_t need, bool full, size_t *victims,
	   size_t *records)
{
	struct cand_filter f = {
		.by_peer = true, .by_tier = true, .peer = p->id, .tier = MC_TIER_DRAM
	};
	struct mc_plan_params pp = { .target = need, .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND };
	struct mc_cand_view v;
	struct cand_caps caps = { 0 };
	struct cand_build *b;
	struct mc_plan plan;
	struct mc_err err;
	uint64_t copies;
	int rc;

	mc_cand_view_init(&v);
	b = full ? candidates_begin(&m, &f, &v, &err)
		 : candidates_begin_window(
			   &m, &f, &v,
			   candidates_window_size(&m, p->id, MC_TIER_DRAM, need, &copies), &err);
	if (b == NULL)
		return -1;
	while ((rc = candidates_step(b, 512, &err)) == 1)
		;
	if (rc == 0)
		rc = candidates_caps(b, &caps, &err);
	candidates_end(b);
	if (rc == 0)
		rc = candidates_segment(&v, &caps, &err);
	caps_free(&caps);
	*records = v.n;
	if (rc == 0)
		rc = mc_planner_run(pol, &v, &pp, &plan, NULL, &err);
	mc_cand_view_free(&v);
	if (rc != 0) {
		fprintf(stderr, "mc-rankbench: %s\n", err.msg);
		return -1;
	}
	*victims = 0;
	for (size_t i = 0; i < plan.nstages; i++)
		*victims += plan.stages[i].nvictims;
	mc_plan_free(&plan);
	return 0;
}

static int
plan_main(uint64_t objects, uint64_t rounds, uint64_t slice, bool full)
{
	struct event_base *base = event_base_new();
	struct mc_policy pol;
	struct mc_err err;
	struct peer *p;
	uint64_t *t = calloc(rounds, sizeof(*t)), t0, med;
	size_t victims = 0, records = 0;

	master_defaults(&m.cfg);
	if (t == NULL || base == NULL || store_init(m.store, &err) != 0 ||
	    peers_init(m.peers, base, m.store, &err) != 0 || mc_policy_builtin(&pol, &err) != 0 ||
	    (p = peers_add(m.peers, &err)) == NULL) {
		fprintf(stderr, "mc-rankbench: cannot set up a master\n");
		free(t);
		return 2;
	}
	snprintf(p->addr, sizeof(p->addr), "unix:/bench-peer");
	p->heard = mc_mono_ms();
	p->tiers[MC_TIER_DRAM].present = true;
	t0 = mc_mono_ns();
	if (plan_fill(p, objects) != 0) {
		fprintf(stderr, "mc-rankbench: out of memory filling %llu objects\n",
			(unsigned long long)objects);
		free(t);
		return 2;
	}
	printf("objects %llu on one peer's dram, written and read in %.1f s\n",
	       (unsigned long long)objects, (double)(mc_mono_ns() - t0) / 1e9);
	for (uint64_t q = 0; q < rounds; q++) {
		p->heard = mc_mono_ms();
		t0 = mc_mono_ns();
		if (plan_round(&pol, p, slice * PLAN_SIZE, full, &victims, &records) != 0)
			return 2;
		t[q] = mc_mono_ns() - t0;
	}
	med = median(t, rounds);
	if (victims == 0) {
		fprintf(stderr, "mc-rankbench: the plan took no victim\n");
		return 1;
	}
	printf("%s view and plan of %llu copies' need: median %.1f us over %llu rounds, "
	       "%zu victims from %zu records, %.0f ns a victim\n",
	       full ? "full" : "window", (unsigned long long)slice, (double)med / 1e3,
	       (unsigned long long)rounds, victims, records, (double)med / (double)victims);
	printf("plan objects=%llu view=%s round_us=%.1f victims=%zu records=%zu "
	       "ns_per_victim=%.0f\n",
	       (unsigned long long)objects, full ? "full" : "window", (double)med / 1e3, victims,
	       records, (double)med / (double)victims);
	mc_policy_free(&pol);
	peers_free(m.peers);
	store_free(m.store);
	event_base_free(base);
	free(t);
	return 0;
}

int
main(int argc, char **argv)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	static struct mobj *by_index[WANT], *by_scan[WANT], *heap[WANT];
	uint64_t objects = 10000000, queries = 200, scans = 5, now = mc_now_ms();
	uint64_t *qt, *st, t0, build_ns;
	struct mc_err err;
	size_t ni = 0, ns = 0;
	bool more;

	uint64_t slice = 0;
	bool full = false;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--full") == 0)
			full = true;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--full") == 0)
			i--;
		else if (strcmp(argv[i], "--plan") == 0)
			slice = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--objects") == 0)
			objects = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--queries") == 0)
			queries = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--scans") == 0)
			scans = strtoull(argv[i + 1], NULL, 10);
	}
	if (slice > 0)
		return plan_main(objects, queries, slice, full);
	if (objects < 2 * WANT || queries == 0 || scans == 0) {
		fprintf(stderr, "mc-rankbench: --objects at least %u, --queries and --scans >= 1\n",
			2 * WANT);
		return 2;
	}
	qt = calloc(queries, sizeof(*qt));
	st = calloc(scans, sizeof(*st));
	if (qt == NULL || st == NULL || store_init(m.store, &err) != 0) {
		fprintf(stderr, "mc-rankbench: out of memory\n");
		return 2;
	}
	t0 = mc_mono_ns();
	if (fill(objects) != 0) {
		fprintf(stderr, "mc-rankbench: out of memory filling %llu objects\n",
			(unsigned long long)objects);
		return 2;
	}
	build_ns = mc_mono_ns() - t0;
	for (uint64_t q = 0; q < queries; q++) {
		t0 = mc_mono_ns();
		ni = rank_query(&m, 1, MC_TIER_DRAM, 0, WANT, now, by_index, &more);
		qt[q] = mc_mono_ns() - t0;
	}
	for (uint64_t q = 0; q < scans; q++) {
		t0 = mc_mono_ns();
		ns = scan(1, MC_TIER_DRAM, now, heap, by_scan);
		st[q] = mc_mono_ns() - t0;
	}
	if (ni != WANT || ns != WANT || memcmp(by_index, by_scan, sizeof(by_index)) != 0) {
		fprintf(stderr, "mc-rankbench: the index and the scan disagree (%zu, %zu keys)\n",
			ni, ns);
		return 1;
	}
	uint64_t qm = median(qt, queries), sm = median(st, scans);
	const struct recency *r = &m.store->rank;
	double per_entry = (double)recency_memory(r) / (double)r->live;

	printf("objects %llu, index entries %llu, built (puts and reads) in %.1f s\n",
	       (unsigned long long)objects, (unsigned long long)r->live, (double)build_ns / 1e9);
	printf("index query, %u keys: median %.1f us over %llu\n", WANT, (double)qm / 1e3,
	       (unsigned long long)queries);
	printf("full scan,   %u keys: median %.1f ms over %llu\n", WANT, (double)sm / 1e6,
	       (unsigned long long)scans);
	printf("scan / index: %.0fx (target >= 100x); answers identical\n",
	       (double)sm / (double)qm);
	printf("index memory: %.1f bytes an entry (a node is %zu, its worth order place %zu and "
	       "heap entry %zu, the rest the slabs' headroom and the lists), plus mobj.rank in "
	       "each object (struct mobj is %zu bytes)\n",
	       per_entry, sizeof(struct rank_node), sizeof(uint32_t), sizeof(struct mc_worder_ent),
	       sizeof(struct mobj));
	printf("rank objects=%llu query_us=%.1f scan_ms=%.1f ratio=%.0f bytes_per_entry=%.1f\n",
	       (unsigned long long)objects, (double)qm / 1e3, (double)sm / 1e6,
	       (double)sm / (double)qm, per_entry);
	store_free(m.store);
	free(qt);
	free(st);
	return 0;
}
