/*
 * Unit tests for the reference caches (libmc/refcache*.c): a hand-worked
 * trace per policy, a naive model of the simple policies replayed beside
 * them on random traces, every policy's invariants and its hits against
 * OPT, OPT against exhaustive search, the errors, and the running time.
 *
 * Keys in the hand-worked traces are letters; every block is BLK bytes,
 * so a capacity of 4 blocks with high 0.75 and low 0.5 starts a round
 * when a fourth block comes in and evicts until two remain with it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc/refcache.h"
#include "tap.h"

#define BLK 100 /* bytes of one block */

static struct mc_refcache *
cache(enum mc_refcache_kind k, uint64_t blocks, double high, double low)
{
	struct mc_err err = { 0 };
	struct mc_refcache *c = mc_refcache_new(k, blocks * BLK, high, low, &err);

	if (c == NULL) {
		printf("Bail out! cannot make a %s cache: %s\n", mc_refcache_name(k), err.msg);
		exit(1);
	}
	return c;
}

static void
put_size(struct mc_refcache *c, uint64_t key, uint64_t size)
{
	struct mc_err err = { 0 };

	if (mc_refcache_insert(c, key, size, &err) < 0) {
		printf("Bail out! insert failed: %s\n", err.msg);
		exit(1);
	}
}

static void
put(struct mc_refcache *c, uint64_t key)
{
	put_size(c, key, BLK);
}

/* Insert key as the block after parent in its request (lru-leaf's tree). */
static void
put_under(struct mc_refcache *c, uint64_t key, bool has_parent, uint64_t parent)
{
	struct mc_err err = { 0 };

	if (mc_refcache_insert_under(c, key, BLK, has_parent, parent, &err) < 0) {
		printf("Bail out! insert failed: %s\n", err.msg);
		exit(1);
	}
}

static struct mc_refcache *
on_demand(enum mc_refcache_kind k, uint64_t blocks)
{
	struct mc_err err = { 0 };
	struct mc_refcache *c = mc_refcache_new_on_demand(k, blocks * BLK, &err);

	if (c == NULL) {
		printf("Bail out! cannot make a %s cache: %s\n", mc_refcache_name(k), err.msg);
		exit(1);
	}
	return c;
}

/* Read key as one single-block request: a hit is read, a miss inserted. */
static bool
get(struct mc_refcache *c, uint64_t key)
{
	if (mc_refcache_present(c, key)) {
		mc_refcache_access(c, key);
		return true;
	}
	put(c, key);
	return false;
}

/* The present letters, in alphabetical order. */
static const char *
resident(const struct mc_refcache *c)
{
	static char buf[27];
	size_t n = 0;
	char k;

	for (k = 'a'; k <= 'z'; k++)
		if (mc_refcache_present(c, (uint64_t)k))
			buf[n++] = k;
	buf[n] = '\0';
	return buf;
}

static bool
is(const char *got, const char *want)
{
	if (strcmp(got, want) == 0)
		return true;
	printf("#   got \"%s\", want \"%s\"\n", got, want);
	return false;
}

static const char *
queue(const struct mc_refcache *c, uint64_t key)
{
	const char *q = mc_refcache_queue(c, key);

	return q != NULL ? q : "-";
}

/* The eviction counters, as "evictions/rounds/inserts/objects". */
static const char *
counters(const struct mc_refcache *c)
{
	static char buf[96];
	struct mc_refcache_stats st;

	mc_refcache_stats(c, &st);
	snprintf(buf, sizeof(buf), "%llu/%llu/%llu/%llu", (unsigned long long)st.evictions,
		 (unsigned long long)st.rounds, (unsigned long long)st.inserts,
		 (unsigned long long)st.objects);
	return buf;
}

static bool
checked(const struct mc_refcache *c)
{
	struct mc_err err = { 0 };

	if (mc_refcache_check(c, &err) == 0)
		return true;
	printf("#   check: %s\n", err.msg);
	return false;
}

static void
test_names(void)
{
	int k, bad = 0;

	for (k = 0; k < MC_REF_COUNT; k++)
		if (mc_refcache_parse(mc_refcache_name(k)) != k)
			bad++;
	TAP_OK(bad == 0, "names: every policy parses back from its name");
	TAP_OK(strcmp(mc_refcache_name(MC_REF_LFU_RESTART), "lfu-restart") == 0 &&
		       strcmp(mc_refcache_name(MC_REF_LRU_TEXTBOOK), "lru-textbook") == 0 &&
		       strcmp(mc_refcache_name(MC_REF_S3FIFO), "s3fifo") == 0,
	       "names: the spelled names are lfu-restart, lru-textbook, s3fifo");
	TAP_OK(mc_refcache_parse("lru2") == -1 && mc_refcache_parse("") == -1 &&
		       mc_refcache_parse("LRU") == -1 && mc_refcache_parse(NULL) == -1,
	       "names: unknown, empty, differently cased and NULL names parse to -1");
	TAP_OK(strcmp(mc_refcache_name(MC_REF_COUNT), "unknown") == 0,
	       "names: an out-of-range kind is named unknown");
}

static void
test_errors(void)
{
	static const struct {
		double high, low;
	} bad[] = { { 0.7, 0.9 },  { 0.7, 0.7 }, { 1.1, 0.5 }, { 0.9, 0 },
		    { 0.9, -0.1 }, { NAN, 0.5 }, { 0.9, NAN } };
	struct mc_refcache *c;
	struct mc_err err;
	size_t i;
	int wrong = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mc_err_clear(&err);
		c = mc_refcache_new(MC_REF_LRU, 1000, bad[i].high, bad[i].low, &err);
		if (c != NULL || err.code != MC_ERR_INVALID)
			wrong++;
		mc_refcache_free(c);
	}
	TAP_OK(wrong == 0,
	       "errors: low >= high, high > 1, low <= 0 and NaN watermarks are invalid");
	mc_err_clear(&err);
	c = mc_refcache_new(MC_REF_LRU_TEXTBOOK, 1000, 0.5, 0.9, &err);
	TAP_OK(c == NULL && err.code == MC_ERR_INVALID,
	       "errors: lru-textbook checks the watermarks it ignores");
	mc_err_clear(&err);
	c = mc_refcache_new(MC_REF_ARC, 0, 0.9, 0.7, &err);
	TAP_OK(c == NULL && err.code == MC_ERR_INVALID, "errors: a capacity of 0 is invalid");
	mc_err_clear(&err);
	c = mc_refcache_new(MC_REF_COUNT, 1000, 0.9, 0.7, &err);
	TAP_OK(c == NULL && err.code == MC_ERR_INVALID, "errors: an unknown kind is invalid");
	c = mc_refcache_new(MC_REF_FIFO, 1000, 1.0, 0.999, &err);
	TAP_OK(c != NULL, "errors: high 1 with low just below it is accepted");
	mc_refcache_free(c);
	mc_refcache_free(NULL);
}

/*
 * Thresholds are whole bytes of the fraction a person wrote: 0.57 x 100
 * is 56.999... in doubles and 0.29 x 100 is 28.999..., but they mean 57
 * and 29.
 */
static void
test_thresholds(void)
{
	struct mc_refcache *c = mc_refcache_new(MC_REF_LRU, 100, 0.57, 0.29, NULL);
	struct mc_refcache_stats st;
	bool quiet;
	uint64_t k;

	if (c == NULL) {
		TAP_OK(0, "thresholds: make a cache of 100 bytes");
		return;
	}
	for (k = 1; k <= 57; k++)
		put_size(c, k, 1);
	mc_refcache_stats(c, &st);
	quiet = st.rounds == 0 && st.objects == 57;
	put_size(c, 58, 1);
	mc_refcache_stats(c, &st);
	TAP_OK(quiet && st.rounds == 1 && st.objects == 29 && st.bytes == 29,
	       "thresholds: high 0.57 of 100 bytes is 57 and low 0.29 is 29, not 56 and 28");
	mc_refcache_free(c);
}

/* An object larger than the capacity is not admitted; one exactly as large is. */
static void
test_too_large(void)
{
	int k, wrong = 0;

	for (k = 0; k < MC_REF_COUNT; k++) {
		struct mc_refcache *c = cache(k, 4, 0.75, 0.5);

		put(c, 'a');
		put_size(c, 'x', 4 * BLK + 1);
		if (mc_refcache_present(c, 'x') || !is(resident(c), "a") ||
		    !is(counters(c), "0/0/1/1") || mc_refcache_queue(c, 'x') != NULL)
			wrong++;
		mc_refcache_free(c);
	}
	TAP_OK(wrong == 0,
	       "too large: every policy leaves out an object over the capacity, changing nothing");
	wrong = 0;
	for (k = 0; k < MC_REF_COUNT; k++) {
		struct mc_refcache *c = cache(k, 4, 0.75, 0.5);

		put(c, 'a');
		put_size(c, 'y', 4 * BLK);
		if (!is(resident(c), "y") || !is(counters(c), "1/1/2/1") || !checked(c))
			wrong++;
		mc_refcache_free(c);
	}
	TAP_OK(wrong == 0, "too large: an object of exactly the capacity is admitted alone, never "
			   "its own victim");
}

static void
test_lru_fifo(void)
{
	struct mc_refcache *lru = cache(MC_REF_LRU, 4, 0.75, 0.5);
	struct mc_refcache *fifo = cache(MC_REF_FIFO, 4, 0.75, 0.5);
	struct mc_refcache_stats st;
	int i;

	for (i = 0; i < 2; i++) {
		struct mc_refcache *c = i ? fifo : lru;

		put(c, 'a');
		put(c, 'b');
		put(c, 'c');
		get(c, 'a');
	}
	TAP_OK(is(resident(lru), "abc") && is(resident(fifo), "abc") &&
		       is(counters(lru), "0/0/3/3") && is(counters(fifo), "0/0/3/3"),
	       "lru, fifo: three blocks of four reach the high watermark (3/4) without a round");
	put(lru, 'd');
	put(fifo, 'd');
	TAP_OK(is(resident(lru), "ad"),
	       "lru: the round for d evicts the two least recently used (b, c) down to low (2/4) "
	       "and keeps the re-read a");
	TAP_OK(is(resident(fifo), "cd"),
	       "fifo: the same round evicts the two oldest inserts (a, b): re-reading a did not "
	       "move it");
	mc_refcache_stats(lru, &st);
	TAP_OK(st.evictions == 2 && st.evicted_bytes == 2 * BLK && st.rounds == 1 &&
		       st.inserts == 4 && st.objects == 2 && st.bytes == 2 * BLK,
	       "lru: one round, two evictions of %d bytes, two objects left", BLK);
	put(lru, 'a');
	put(lru, 'e');
	TAP_OK(is(resident(lru), "ade") && is(counters(lru), "2/1/5/3"),
	       "lru: inserting a present key is a use, not an insert, and takes no room");
	mc_refcache_access(fifo, 'z');
	TAP_OK(is(resident(fifo), "cd") && is(counters(fifo), "2/1/4/2") && checked(fifo),
	       "fifo: an access to a key that is not present changes nothing");
	mc_refcache_free(lru);
	mc_refcache_free(fifo);
}

static void
test_lru_textbook(void)
{
	struct mc_refcache *lru = cache(MC_REF_LRU, 4, 0.75, 0.5);
	struct mc_refcache *tb = cache(MC_REF_LRU_TEXTBOOK, 4, 0.75, 0.5);
	int i;

	for (i = 0; i < 2; i++) {
		struct mc_refcache *c = i ? tb : lru;

		put(c, 'a');
		put(c, 'b');
		put(c, 'c');
		get(c, 'a');
		put(c, 'd');
	}
	TAP_OK(is(resident(tb), "abcd") && is(counters(tb), "0/0/4/4"),
	       "lru-textbook: the fourth block fills the capacity without a round, ignoring high");
	TAP_OK(is(resident(lru), "ad") && is(counters(lru), "2/1/4/2"),
	       "lru: the fourth block goes over high and the round evicts down to low");
	put(lru, 'e');
	put(tb, 'e');
	TAP_OK(is(resident(tb), "acde") && is(counters(tb), "1/1/5/4"),
	       "lru-textbook: a fifth block evicts exactly one object, the least recent (b)");
	TAP_OK(is(resident(lru), "ade") && is(counters(lru), "2/1/5/3"),
	       "lru: a fifth block fits under high after the round: no eviction");
	put_size(tb, 'f', 2 * BLK);
	TAP_OK(is(resident(tb), "def") && is(counters(tb), "3/2/6/3"),
	       "lru-textbook: a double block evicts the two least recent (c, a), just enough");
	mc_refcache_free(lru);
	mc_refcache_free(tb);
}

static void
test_lfu(void)
{
	struct mc_refcache *lfu = cache(MC_REF_LFU, 4, 0.75, 0.5);
	struct mc_refcache *rs = cache(MC_REF_LFU_RESTART, 4, 0.75, 0.5);
	int i;

	for (i = 0; i < 2; i++) {
		struct mc_refcache *c = i ? rs : lfu;

		put(c, 'a'); /* a: 2 uses */
		get(c, 'a');
		put(c, 'b'); /* b: 3 */
		get(c, 'b');
		get(c, 'b');
		put(c, 'c'); /* c: 3, read after b */
		get(c, 'c');
		get(c, 'c');
		put(c, 'd');
	}
	TAP_OK(is(resident(lfu), "cd") && is(resident(rs), "cd"),
	       "lfu, lfu-restart: the round for d evicts the least used (a: 2), then of b and c "
	       "(3 each) the least recent, b");
	TAP_OK(is(queue(lfu, 'a'), "ghost") && is(queue(lfu, 'b'), "ghost") &&
		       is(queue(rs, 'a'), "-") && is(queue(rs, 'b'), "-"),
	       "lfu keeps the evicted counts as ghosts; lfu-restart forgets them");
	put(lfu, 'a');
	put(rs, 'a');
	put(lfu, 'e');
	put(rs, 'e');
	TAP_OK(is(resident(lfu), "ae"),
	       "lfu: readmitted a resumes at 3 uses, so the round for e evicts d (1) and c (3, "
	       "older) and keeps a");
	TAP_OK(is(resident(rs), "ce"),
	       "lfu-restart: readmitted a starts at 1 and goes after d (1, older), keeping c (3)");
	TAP_OK(is(counters(lfu), "4/2/6/2") && is(counters(rs), "4/2/6/2") && checked(lfu) &&
		       checked(rs),
	       "lfu, lfu-restart: two rounds, four evictions, six inserts");
	mc_refcache_free(lfu);
	mc_refcache_free(rs);
}

/* lfu's ghosts remember at most four capacities' worth, the oldest dropped first. */
static void
test_lfu_ghost_bound(void)
{
	struct mc_refcache *c = cache(MC_REF_LFU, 2, 1.0, 0.5);
	uint64_t k;
	int ghosts = 0;

	/* each round (at keys 3, 5, ... 19) evicts the two before it: 1..18 go */
	for (k = 1; k <= 20; k++)
		put(c, k);
	for (k = 1; k <= 20; k++)
		ghosts += strcmp(queue(c, k), "ghost") == 0;
	TAP_OK(ghosts == 8 && is(queue(c, 10), "-") && is(queue(c, 11), "ghost") &&
		       is(queue(c, 18), "ghost") && is(queue(c, 19), "cache") && checked(c),
	       "lfu: of 18 evicted keys the ghosts keep the last 8 (4 x a capacity of 2)");
	mc_refcache_free(c);
}

/*
 * Capacity 10 blocks: small's share is one block, main's nine. Watermarks
 * 0.5 and 0.3: a round starts when a sixth block comes in and leaves two
 * beside it.
 */
static void
test_s3fifo(void)
{
	struct mc_refcache *c = cache(MC_REF_S3FIFO, 10, 0.5, 0.3);

	put(c, 'a');
	put(c, 'b');
	put(c, 'c');
	put(c, 'd');
	put(c, 'e');
	get(c, 'a');
	TAP_OK(is(resident(c), "abcde") && is(queue(c, 'a'), "small") && is(counters(c), "0/0/5/5"),
	       "s3fifo: new objects go to small");
	put(c, 'f');
	TAP_OK(is(resident(c), "aef") && is(queue(c, 'a'), "main") && is(queue(c, 'e'), "small") &&
		       is(queue(c, 'f'), "small"),
	       "s3fifo: the round for f moves the re-read a from small's tail to main");
	TAP_OK(is(queue(c, 'b'), "ghost") && is(queue(c, 'c'), "ghost") &&
		       is(queue(c, 'd'), "ghost") && is(counters(c), "3/1/6/3"),
	       "s3fifo: the one-hit wonders b, c, d behind it go from small to the ghost");
	put(c, 'b');
	TAP_OK(is(queue(c, 'b'), "main") && is(resident(c), "abef"),
	       "s3fifo: a ghost hit (b) is admitted straight to main");
	put(c, 'c');
	put(c, 'd');
	TAP_OK(is(resident(c), "bcd") && is(queue(c, 'e'), "ghost") && is(queue(c, 'f'), "ghost"),
	       "s3fifo: the round for d empties small into the ghost (e, f) ...");
	TAP_OK(is(queue(c, 'a'), "-") && is(counters(c), "6/2/9/3"),
	       "s3fifo: ... then evicts a from main for good: its read was spent on the promotion");
	get(c, 'b');
	put(c, 'x');
	put(c, 'y');
	put(c, 'z');
	TAP_OK(is(resident(c), "bdz") && is(queue(c, 'b'), "main") && is(queue(c, 'c'), "-") &&
		       is(queue(c, 'x'), "ghost") && is(queue(c, 'y'), "ghost"),
	       "s3fifo: main reinserts its read tail (b) and evicts the unread one after it (c)");
	TAP_OK(is(counters(c), "9/3/12/3") && checked(c), "s3fifo: three rounds, nine evictions");
	mc_refcache_free(c);
}

/* Capacity 4 blocks, watermarks 0.75 and 0.5, as for lru; p starts at 0. */
static void
test_arc(void)
{
	struct mc_refcache *c = cache(MC_REF_ARC, 4, 0.75, 0.5);

	put(c, 'a');
	put(c, 'b');
	put(c, 'c');
	get(c, 'a');
	TAP_OK(is(queue(c, 'a'), "t2") && is(queue(c, 'b'), "t1") && mc_refcache_arc_p(c) == 0,
	       "arc: a miss goes to T1, a hit moves to T2");
	put(c, 'd');
	TAP_OK(is(resident(c), "ad") && is(queue(c, 'b'), "b1") && is(queue(c, 'c'), "b1") &&
		       is(queue(c, 'd'), "t1") && is(counters(c), "2/1/4/2"),
	       "arc: with p = 0 the round for d replaces from T1 (b, c) into B1");
	put(c, 'b');
	TAP_OK(mc_refcache_arc_p(c) == BLK && is(queue(c, 'b'), "t2") && is(queue(c, 'c'), "b1"),
	       "arc: a B1 ghost hit raises p towards T1 by one block and admits b to T2");
	put(c, 'e');
	TAP_OK(is(resident(c), "de") && is(queue(c, 'a'), "b2") && is(queue(c, 'b'), "b2"),
	       "arc: with |T1| = p the round for e replaces from T2 (a, b), sparing d in T1");
	put(c, 'c');
	TAP_OK(mc_refcache_arc_p(c) == 3 * BLK && is(queue(c, 'c'), "t2"),
	       "arc: a B1 hit with |B2| = 2 |B1| raises p by two blocks");
	put(c, 'a');
	TAP_OK(mc_refcache_arc_p(c) == 2 * BLK && is(queue(c, 'a'), "t2"),
	       "arc: a B2 hit with |B1| = 0 lowers p by one block");
	TAP_OK(is(resident(c), "ae") && is(queue(c, 'd'), "b1") && is(queue(c, 'c'), "b2"),
	       "arc: the round for the B2 hit a replaces d from T1, then c from T2");
	TAP_OK(is(counters(c), "6/3/8/2") && checked(c), "arc: three rounds, six evictions");
	mc_refcache_free(c);
}

/*
 * The paper's tie in REPLACE: a B2 hit with |T1| = p replaces from T1.
 * Capacity 4 blocks, watermarks 7/8 and 3/4: three stay resident and a
 * round evicts one, so each REPLACE shows.
 */
static void
test_arc_tie(void)
{
	struct mc_refcache *c = cache(MC_REF_ARC, 4, 0.875, 0.75);

	put(c, 'a');
	put(c, 'b');
	put(c, 'c');
	get(c, 'a');
	get(c, 'b');
	put(c, 'd'); /* c to B1 */
	put(c, 'e'); /* d to B1 */
	put(c, 'c'); /* p = 1 block; |T1| = p, not a B2 hit: a to B2 */
	put(c, 'd'); /* p = 2 blocks; b to B2 */
	TAP_OK(is(resident(c), "cde") && is(queue(c, 'e'), "t1") && is(queue(c, 'a'), "b2") &&
		       is(queue(c, 'b'), "b2") && mc_refcache_arc_p(c) == 2 * BLK,
	       "arc: with |T1| <= p, rounds for B1 hits replace from T2 (a, b)");
	put(c, 'a');
	TAP_OK(mc_refcache_arc_p(c) == BLK && is(resident(c), "acd") && is(queue(c, 'e'), "b1"),
	       "arc: a B2 hit lowers p to |T1|, and on the tie REPLACE takes T1's LRU (e)");
	TAP_OK(is(counters(c), "5/5/8/3") && checked(c),
	       "arc: one eviction in each of five rounds");
	mc_refcache_free(c);
}

/*
 * The page-replacement example of the operating-systems textbooks
 * (Silberschatz et al.): 20 references, 3 frames; FIFO faults 15 times,
 * LRU 12, OPT 9. A watermark cache of 4 blocks with high 7/8 and low 3/4
 * holds 3 and evicts one at a time, like the textbook ones.
 */
static const uint64_t book[] = { 7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1 };
#define NBOOK (sizeof(book) / sizeof(book[0]))

static int
flat_hits(enum mc_refcache_kind k, const uint64_t *keys, size_t n, uint64_t blocks, double high,
	  double low)
{
	struct mc_refcache *c = cache(k, blocks, high, low);
	size_t i;
	int hits = 0;

	for (i = 0; i < n; i++)
		hits += get(c, keys[i] + 1000);
	mc_refcache_free(c);
	return hits;
}

static void
test_textbook_example(void)
{
	TAP_OK(mc_refcache_opt_hits(book, NBOOK, 3, NULL) == 11,
	       "opt: the textbook reference string has 9 faults in 3 frames (11 hits)");
	TAP_OK(flat_hits(MC_REF_LRU_TEXTBOOK, book, NBOOK, 3, 0.9, 0.7) == 8 &&
		       flat_hits(MC_REF_LRU, book, NBOOK, 4, 0.875, 0.75) == 8,
	       "lru-textbook in 3 blocks, and lru holding 3 under watermarks: 12 faults (8 hits)");
	TAP_OK(flat_hits(MC_REF_FIFO, book, NBOOK, 4, 0.875, 0.75) == 5,
	       "fifo holding 3 under watermarks: 15 faults (5 hits)");
}

/* ---- OPT against exhaustive search ---- */

#define ALPHA 6
#define NMAX 20

static const uint64_t *bf_keys;
static size_t bf_n;
static unsigned bf_cap;
static signed char bf_memo[NMAX + 1][1 << ALPHA];

/*
 * The most hits from access i on with the resident set mask, trying every
 * victim at every miss in a full cache: optimal by exhaustion.
 */
static int
bf_best(size_t i, unsigned mask)
{
	unsigned bit, v;
	int best = 0;

	if (i == bf_n)
		return 0;
	if (bf_memo[i][mask] >= 0)
		return bf_memo[i][mask];
	bit = 1u << bf_keys[i];
	if (mask & bit) {
		best = 1 + bf_best(i + 1, mask);
	} else if ((unsigned)__builtin_popcount(mask) < bf_cap) {
		best = bf_best(i + 1, mask | bit);
	} else {
		for (v = 0; v < ALPHA; v++) {
			int h;

			if (!(mask & (1u << v)))
				continue;
			h = bf_best(i + 1, (mask & ~(1u << v)) | bit);
			if (h > best)
				best = h;
		}
	}
	bf_memo[i][mask] = (signed char)best;
	return best;
}

/* keys are renamed 0, 1, ... in order of first use, at most ALPHA of them */
static int
brute_force(const uint64_t *keys, size_t n, unsigned cap)
{
	static uint64_t dense[NMAX];
	uint64_t names[ALPHA];
	size_t i, j, nn = 0;

	for (i = 0; i < n; i++) {
		for (j = 0; j < nn && names[j] != keys[i]; j++)
			;
		if (j == nn)
			names[nn++] = keys[i];
		dense[i] = j;
	}
	bf_keys = dense;
	bf_n = n;
	bf_cap = cap;
	memset(bf_memo, -1, sizeof(bf_memo));
	return bf_best(0, 0);
}

static void
test_opt(void)
{
	uint64_t keys[NMAX];
	int t, wrong = 0;
	struct mc_err err;

	TAP_OK(brute_force(book, NBOOK, 3) == 11,
	       "opt: exhaustive search agrees on the textbook example");
	tap_rng_state = 0x0b7;
	for (t = 0; t < 3000; t++) {
		size_t n = 1 + tap_rng() % 14, i;
		unsigned alpha = 2 + (unsigned)(tap_rng() % (ALPHA - 1));
		unsigned cap = 1 + (unsigned)(tap_rng() % 4);
		int64_t got;

		for (i = 0; i < n; i++)
			keys[i] = tap_rng() % alpha;
		got = mc_refcache_opt_hits(keys, n, cap, &err);
		if (got != brute_force(keys, n, cap)) {
			if (wrong++ < 3)
				printf("#   trace %d: opt %lld, exhaustive %d\n", t, (long long)got,
				       brute_force(keys, n, cap));
		}
	}
	TAP_OK(wrong == 0,
	       "opt: equals exhaustive search over evictions on 3000 random traces (n <= 14, "
	       "capacity 1..4)");
	keys[0] = 5;
	keys[1] = 5;
	keys[2] = 6;
	TAP_OK(mc_refcache_opt_hits(keys, 0, 3, &err) == 0 &&
		       mc_refcache_opt_hits(keys, 3, 0, &err) == 0 &&
		       mc_refcache_opt_hits(keys, 3, UINT64_MAX, &err) == 1,
	       "opt: no accesses or no capacity give 0 hits; a huge capacity only cold misses");
}

/* ---- a naive model of lru, fifo, lfu, lfu-restart and lru-textbook ---- */

#define MODEL_MAX 64

struct model_obj {
	uint64_t key, count, stamp, seq;
};

struct model {
	enum mc_refcache_kind k;
	uint64_t blocks, trigger, target; /* trigger and target in bytes */
	struct model_obj res[MODEL_MAX];
	size_t n;
	struct model_obj ghost[4 * MODEL_MAX + 1]; /* oldest first */
	size_t ng;
	uint64_t clock, seq, evictions, rounds, inserts;
};

static bool
model_present(const struct model *m, uint64_t key, size_t *at)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->res[i].key == key) {
			*at = i;
			return true;
		}
	return false;
}

/* The victim: a plain scan for the smallest key of the policy's order. */
static size_t
model_victim(const struct model *m)
{
	size_t i, v = 0;

	for (i = 1; i < m->n; i++) {
		const struct model_obj *a = &m->res[i], *b = &m->res[v];
		bool first;

		switch (m->k) {
		case MC_REF_FIFO:
			first = a->seq < b->seq;
			break;
		case MC_REF_LFU:
		case MC_REF_LFU_RESTART:
			first = a->count < b->count ||
				(a->count == b->count && a->stamp < b->stamp);
			break;
		default:
			first = a->stamp < b->stamp;
			break;
		}
		if (first)
			v = i;
	}
	return v;
}

static void
model_hit(struct model *m, size_t i)
{
	m->res[i].count++;
	m->res[i].stamp = ++m->clock;
}

static void
model_insert(struct model *m, uint64_t key)
{
	uint64_t count = 1, ev = 0;
	size_t i;

	for (i = 0; i < m->ng; i++)
		if (m->ghost[i].key == key) {
			count = m->ghost[i].count + 1;
			memmove(&m->ghost[i], &m->ghost[i + 1],
				(m->ng - i - 1) * sizeof(m->ghost[0]));
			m->ng--;
			break;
		}
	if ((m->n + 1) * BLK > m->trigger) {
		while ((m->n + 1) * BLK > m->target && m->n > 0) {
			size_t v = model_victim(m);

			if (m->k == MC_REF_LFU) {
				m->ghost[m->ng++] = m->res[v];
				if (m->ng > 4 * m->blocks) {
					memmove(&m->ghost[0], &m->ghost[1],
						(m->ng - 1) * sizeof(m->ghost[0]));
					m->ng--;
				}
			}
			m->res[v] = m->res[--m->n];
			ev++;
		}
		m->evictions += ev;
		m->rounds += ev > 0;
	}
	m->res[m->n].key = key;
	m->res[m->n].count = count;
	m->res[m->n].stamp = ++m->clock;
	m->res[m->n].seq = ++m->seq;
	m->n++;
	m->inserts++;
}

/* Watermarks as percentages, so that the model's thresholds are exact. */
static const struct {
	unsigned high, low;
} marks[] = { { 90, 70 }, { 100, 50 }, { 75, 25 }, { 60, 50 }, { 100, 99 }, { 80, 20 } };
#define NMARKS (sizeof(marks) / sizeof(marks[0]))

/*
 * One request of the workload model on the cache and, when m is not NULL,
 * on the model: the leading run of present blocks is read, the absent
 * blocks after it are inserted. Returns the prefix hits.
 */
static size_t
request(struct mc_refcache *c, struct model *m, const uint64_t *blocks, size_t n)
{
	size_t i, run, at;

	for (run = 0; run < n && mc_refcache_present(c, blocks[run]); run++)
		;
	for (i = 0; i < run; i++) {
		mc_refcache_access(c, blocks[i]);
		if (m != NULL && model_present(m, blocks[i], &at))
			model_hit(m, at);
	}
	for (i = run; i < n; i++) {
		if (mc_refcache_present(c, blocks[i]))
			continue;
		put_under(c, blocks[i], i > 0, i > 0 ? blocks[i - 1] : 0);
		if (m != NULL && !model_present(m, blocks[i], &at))
			model_insert(m, blocks[i]);
	}
	return run;
}

static bool
same_as_model(const struct mc_refcache *c, const struct model *m, const uint64_t *universe,
	      size_t nu)
{
	struct mc_refcache_stats st;
	size_t i, at;

	for (i = 0; i < nu; i++)
		if (mc_refcache_present(c, universe[i]) != model_present(m, universe[i], &at))
			return false;
	mc_refcache_stats(c, &st);
	return st.objects == m->n && st.bytes == m->n * BLK && st.evictions == m->evictions &&
	       st.rounds == m->rounds && st.inserts == m->inserts;
}

/* A random request: 1..4 blocks of a universe of nu keys, often a shared prefix. */
static size_t
random_request(uint64_t *blocks, const uint64_t *universe, size_t nu)
{
	size_t n = 1 + tap_rng() % 4, i;

	for (i = 0; i < n; i++)
		blocks[i] = universe[(tap_rng() % 3 == 0 ? i : tap_rng()) % nu];
	return n;
}

static void
test_model(void)
{
	static const enum mc_refcache_kind kinds[] = { MC_REF_LRU, MC_REF_FIFO, MC_REF_LFU,
						       MC_REF_LFU_RESTART, MC_REF_LRU_TEXTBOOK };
	uint64_t universe[24], blocks[4];
	size_t ki, i;

	tap_rng_state = 0x40de1;
	for (i = 0; i < 24; i++)
		universe[i] = tap_rng();
	for (ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++) {
		int t, wrong = 0;

		for (t = 0; t < 400; t++) {
			struct model m;
			struct mc_refcache *c;
			size_t nu = 2 + tap_rng() % 22, mi = tap_rng() % NMARKS, r;

			memset(&m, 0, sizeof(m));
			m.k = kinds[ki];
			m.blocks = 1 + tap_rng() % 12;
			m.trigger = m.blocks * BLK * marks[mi].high / 100;
			m.target = m.blocks * BLK * marks[mi].low / 100;
			if (m.k == MC_REF_LRU_TEXTBOOK)
				m.trigger = m.target = m.blocks * BLK;
			c = cache(m.k, m.blocks, marks[mi].high / 100.0, marks[mi].low / 100.0);
			for (r = 0; r < 60 && wrong == 0; r++) {
				size_t n = random_request(blocks, universe, nu);

				request(c, &m, blocks, n);
				if (!same_as_model(c, &m, universe, nu) || !checked(c)) {
					printf("#   trace %d request %zu: %llu blocks, watermarks "
					       "%u/%u\n",
					       t, r, (unsigned long long)m.blocks, marks[mi].high,
					       marks[mi].low);
					wrong++;
				}
			}
			mc_refcache_free(c);
		}
		TAP_OK(wrong == 0,
		       "%s: matches a naive model request by request on 400 random traces "
		       "(present set and counters)",
		       mc_refcache_name(kinds[ki]));
	}
}

/* Every policy: invariants after every request, and never more block hits than OPT. */
static void
test_invariants_and_opt(void)
{
	uint64_t universe[40], keys[300];
	int k;

	tap_rng_state = 0x1a7;
	for (k = 0; k < 40; k++)
		universe[k] = tap_rng();
	for (k = 0; k < MC_REF_COUNT; k++) {
		int t, broken = 0, over = 0;

		for (t = 0; t < 300; t++) {
			size_t nu = 2 + tap_rng() % 38, mi = tap_rng() % NMARKS, i, r;
			uint64_t blocks = 1 + tap_rng() % 16;
			struct mc_refcache *c =
				cache(k, blocks, marks[mi].high / 100.0, marks[mi].low / 100.0);
			uint64_t b[4];
			int hits;

			for (r = 0; r < 200 && broken == 0; r++) {
				size_t n = random_request(b, universe, nu);

				request(c, NULL, b, n);
				if (!checked(c))
					broken++;
			}
			mc_refcache_free(c);
			for (i = 0; i < 300; i++)
				keys[i] = universe[tap_rng() % nu];
			hits = flat_hits(k, keys, 300, blocks, marks[mi].high / 100.0,
					 marks[mi].low / 100.0);
			if (hits > mc_refcache_opt_hits(keys, 300, blocks, NULL))
				over++;
		}
		TAP_OK(broken == 0,
		       "%s: every internal invariant holds after each of 60000 requests",
		       mc_refcache_name(k));
		TAP_OK(over == 0, "%s: never more block hits than OPT on 300 random traces",
		       mc_refcache_name(k));
	}
}

/*
 * The simulator's scale: 300k block accesses with up to 20k resident
 * objects, each policy in well under a second (sanitizer builds too);
 * the times are printed for the record.
 */
#define PERF_N 300000
#define PERF_BLOCKS 20000

static double
seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
test_speed(void)
{
	uint64_t *keys = malloc(PERF_N * sizeof(*keys));
	double t0, worst = 0;
	size_t i;
	int k;

	if (keys == NULL) {
		TAP_OK(0, "speed: allocate the trace");
		return;
	}
	tap_rng_state = 0x5eed;
	/* half the reads from 10k hot blocks, half from 200k others */
	for (i = 0; i < PERF_N; i++)
		keys[i] = tap_rng() % 2 ? tap_rng() % 10000 : 10000 + tap_rng() % 200000;
	for (k = 0; k < MC_REF_COUNT; k++) {
		struct mc_refcache *c = cache(k, PERF_BLOCKS, 0.9, 0.7);
		double dt;

		t0 = seconds();
		for (i = 0; i < PERF_N; i++)
			get(c, keys[i]);
		dt = seconds() - t0;
		printf("# speed: %-12s %7.1f ms\n", mc_refcache_name(k), dt * 1e3);
		if (dt > worst)
			worst = dt;
		mc_refcache_free(c);
	}
	t0 = seconds();
	i = (size_t)mc_refcache_opt_hits(keys, PERF_N, PERF_BLOCKS, NULL);
	printf("# speed: %-12s %7.1f ms (%zu hits)\n", "opt", (seconds() - t0) * 1e3, i);
	TAP_OK(worst < 1.0,
	       "speed: every policy replays 300k accesses over 20k blocks in under a second");
	free(keys);
}

/*
 * lru-leaf, by hand: a chain a-b-c and a root d in four blocks, on
 * demand. Plain LRU would take a, the oldest; lru-leaf may take only a
 * leaf (c or d) and takes the least recent of them.
 */
static void
test_lru_leaf(void)
{
	struct mc_refcache *c = on_demand(MC_REF_LRU_LEAF, 4);
	struct mc_refcache *lru = on_demand(MC_REF_LRU, 4);
	struct mc_refcache_stats st;
	int i;

	for (i = 0; i < 2; i++) {
		struct mc_refcache *x = i ? lru : c;

		put_under(x, 'a', false, 0);
		put_under(x, 'b', true, 'a');
		put_under(x, 'c', true, 'b');
		put_under(x, 'd', false, 0);
	}
	TAP_OK(is(queue(c, 'a'), "inner") && is(queue(c, 'b'), "inner") &&
		       is(queue(c, 'c'), "leaf") && is(queue(c, 'd'), "leaf") &&
		       is(counters(c), "0/0/4/4") && checked(c),
	       "lru-leaf: a chain's last block and a lone block are the leaves, the rest inner");
	put_under(c, 'e', false, 0);
	put_under(lru, 'e', false, 0);
	TAP_OK(is(resident(c), "abde") && is(resident(lru), "bcde"),
	       "lru-leaf: at full capacity a write evicts the least recent leaf (c), where lru "
	       "takes the oldest block (a)");
	TAP_OK(is(queue(c, 'b'), "leaf") && is(queue(c, 'a'), "inner") && checked(c),
	       "lru-leaf: evicting c makes its parent b a leaf; a stays inner");
	put_under(c, 'f', false, 0);
	TAP_OK(is(resident(c), "adef") && is(queue(c, 'a'), "leaf") && checked(c),
	       "lru-leaf: the new leaf b, last used with c, goes before d and e, and a is a leaf");
	mc_refcache_stats(c, &st);
	TAP_OK(st.evictions == 2 && st.rounds == 2 && st.objects == 4 && st.bytes == 4 * BLK,
	       "lru-leaf: on demand, each write at full capacity evicts exactly one block");
	mc_refcache_free(c);
	mc_refcache_free(lru);

	/* a hit on a leaf is a use of its whole path: a and b outlive d, used after them */
	c = on_demand(MC_REF_LRU_LEAF, 4);
	put_under(c, 'a', false, 0);
	put_under(c, 'b', true, 'a');
	put_under(c, 'c', true, 'b');
	put_under(c, 'd', false, 0);
	mc_refcache_access(c, 'c');
	put_under(c, 'e', false, 0);
	put_under(c, 'f', false, 0);
	TAP_OK(is(resident(c), "abef") && is(queue(c, 'b'), "leaf") && checked(c),
	       "lru-leaf: after a hit on c, the least recent leaves are d, then c; a and b, "
	       "last used with c's hit, stay");
	put_under(c, 'g', true, 'f');
	put_under(c, 'h', false, 0);
	TAP_OK(is(resident(c), "efgh") && checked(c),
	       "lru-leaf: b (as recent as c's hit) goes next, then a, before e and f written "
	       "after that hit");
	mc_refcache_free(c);

	/* LRU among leaves: hits reorder them */
	c = on_demand(MC_REF_LRU_LEAF, 3);
	put_under(c, 'a', false, 0);
	put_under(c, 'b', false, 0);
	put_under(c, 'c', false, 0);
	mc_refcache_access(c, 'a');
	put_under(c, 'd', false, 0);
	TAP_OK(is(resident(c), "acd"),
	       "lru-leaf: among leaves the least recently used goes (b), a hit moved a");
	mc_refcache_free(c);

	/* the write's parent is held while its room is made */
	c = on_demand(MC_REF_LRU_LEAF, 3);
	put_under(c, 'a', false, 0);
	put_under(c, 'b', true, 'a');
	put_under(c, 'c', false, 0);
	mc_refcache_access(c, 'c');
	put_under(c, 'd', true, 'b');
	TAP_OK(is(resident(c), "abd") && is(queue(c, 'b'), "inner") && checked(c),
	       "lru-leaf: a write under b evicts c, used after b, not b itself");
	mc_refcache_free(c);
	c = on_demand(MC_REF_LRU_LEAF, 2);
	put_under(c, 'a', false, 0);
	put_under(c, 'b', true, 'a');
	put_under(c, 'c', true, 'b');
	TAP_OK(is(resident(c), "ac") && is(queue(c, 'c'), "leaf") && is(queue(c, 'a'), "leaf") &&
		       checked(c),
	       "lru-leaf: when the parent's path is all there is, the parent goes and the write "
	       "is a root");
	put_under(c, 'd', true, 'z');
	TAP_OK(is(resident(c), "cd") && checked(c),
	       "lru-leaf: a parent that is not resident makes a root; the least recent leaf (a) "
	       "went");
	mc_refcache_free(c);
}

/* Every kind runs on demand: nothing goes until a write does not fit, then only what it needs. */
static void
test_on_demand(void)
{
	int k, wrong = 0;

	for (k = 0; k < MC_REF_COUNT; k++) {
		struct mc_refcache *c = on_demand(k, 4);
		struct mc_refcache_stats st;
		uint64_t key;
		bool full;

		for (key = 1; key <= 4; key++)
			put(c, key);
		mc_refcache_stats(c, &st);
		full = st.evictions == 0 && st.objects == 4;
		for (key = 5; key <= 12; key++)
			put(c, key);
		mc_refcache_stats(c, &st);
		if (!full || st.objects != 4 || st.bytes != 4 * BLK || st.evictions != 8 ||
		    st.rounds != 8 || !checked(c)) {
			printf("#   %s: %s\n", mc_refcache_name(k), counters(c));
			wrong++;
		}
		mc_refcache_free(c);
	}
	TAP_OK(wrong == 0, "on demand: every kind fills its capacity, then evicts one block per "
			   "block written");
}

int
main(void)
{
	test_names();
	test_errors();
	test_thresholds();
	test_too_large();
	test_lru_fifo();
	test_lru_textbook();
	test_lfu();
	test_lfu_ghost_bound();
	test_s3fifo();
	test_arc();
	test_arc_tie();
	test_textbook_example();
	test_lru_leaf();
	test_on_demand();
	test_opt();
	test_model();
	test_invariants_and_opt();
	test_speed();
	return tap_done();
}
