/*
 * Reference cache policies for offline simulation (mc-bench sim): classic
 * published policies replayed under the same conditions as mc's own, so a
 * trace's hit ratio under mc can be read beside theirs.
 *
 * Workload model. A trace is a sequence of requests, each the ids of its
 * prefix blocks in order. For each request the driver asks which blocks
 * are present (mc_refcache_present, no side effect); the leading run of
 * present blocks are the prefix hits, each read with mc_refcache_access;
 * every later block that is not present is computed and inserted with
 * mc_refcache_insert; later blocks that are present are left alone.
 *
 * Watermarks, as in the cache master. A cache holds capacity payload
 * bytes and has watermarks 0 < low < high <= 1. When an insert takes the
 * used bytes over high x capacity (or would not fit at all) the policy
 * evicts, in its own victim order, until the used bytes including the
 * new object are at or below low x capacity, or until nothing else is
 * left; that is one round. The object being inserted is never its own
 * victim: the round runs before it is linked in, which is also where the
 * published algorithms evict. An object larger than the capacity is not
 * admitted (the insert succeeds and changes nothing). Sizes count at
 * least one byte, so a capacity always bounds the number of objects.
 * Thresholds are whole bytes, floor(fraction x capacity), a product a
 * hair from a whole number taken as that number (0.29 of 100 is 29).
 *
 * lru: least recently used; an insert and an access are both a use.
 *
 * fifo: insertion order; accesses do not reorder.
 *
 * lfu: least frequently used, ties to the least recently used. An insert
 * counts one use, an access one more. Counts survive eviction: an
 * evicted key's count stays in a ghost FIFO bounded at 4 x capacity
 * bytes of the objects it remembers (4x the objects that fit, for fixed
 * size blocks), the oldest ghost dropped first, and a readmitted key
 * resumes from its count plus one.
 *
 * lfu-restart: lfu without ghosts; a readmitted key starts again at 1.
 *
 * s3fifo: S3-FIFO (Yang et al., SOSP'23). A small FIFO (its share is
 * 10% of capacity), a main FIFO (the rest) and a ghost FIFO of keys
 * evicted from small, bounded at main's share in bytes (main's size in
 * entries, for fixed size blocks). Objects carry a 2-bit saturating
 * frequency, bumped by each access. New objects go to small, or to main
 * when their key is a ghost. One eviction evicts from small when small
 * holds at least its share (or main is empty), else from main. Small's
 * tail moves to main with its frequency reset when it was read, and
 * main is trimmed when that takes it over its share; otherwise it goes
 * to the ghost and is evicted. Main's tail is reinserted with its
 * frequency decremented while it is non-zero, else evicted. A round
 * repeats evictions until the low watermark is met.
 *
 * arc: ARC (Megiddo and Modha, FAST'03), with T1, T2, their ghosts B1,
 * B2 and the adaptive target p for T1. Every list length and p are in
 * bytes, so each object weighs its size: for fixed size blocks of b
 * bytes (b dividing the capacity) this is the paper's page-count ARC
 * with c = capacity / b pages and p in units of b. A hit moves to T2's
 * MRU end; a B1 ghost hit raises p by max(|B2| / |B1|, 1) x size (to at
 * most capacity), a B2 hit lowers it by max(|B1| / |B2|, 1) x size (to
 * at least 0), and both admit to T2; other misses admit to T1. A round
 * calls the paper's REPLACE until the low watermark is met. The
 * directory bounds of the paper (|T1| + |B1| <= c, |T1| + |T2| + |B1| +
 * |B2| <= 2c) are kept after each insert by dropping B1's, then B2's,
 * least recent ghosts.
 *
 * lru-textbook: LRU without watermarks: an insert that would not fit
 * evicts the least recently used objects until it does, no more.
 *
 * lru-leaf: the order of a radix-tree prefix cache (SGLang's radix
 * cache). An insert may name its parent, the block before it in its
 * request (mc_refcache_insert_under); the resident blocks form a tree
 * by it, and only leaves, blocks no resident block has as parent, are
 * victims, the least recently used leaf first. Evicting a leaf may make
 * its parent one. An access is a use of the block and of every block on
 * its path to the root, as a radix tree's match refreshes the path. The
 * round making room for an insert does not evict the parent it names
 * unless nothing else is left (the insert then becomes a root); a block
 * whose parent is not resident is a root.
 *
 * On demand (mc_refcache_new_on_demand): any kind without watermarks,
 * as lru-textbook: an insert that would not fit at full capacity evicts,
 * in the policy's order, only what it needs. This is how an engine's own
 * prefix cache runs (vLLM's block pool, SGLang's radix tree).
 *
 * OPT (Belady's MIN) is a separate function over a flat sequence of
 * block accesses: a ceiling on block hits, not a prefix-semantics cache.
 *
 * Every cache operation is O(1) amortised except lfu's and lru-leaf's,
 * O(log n) in a heap; OPT takes O(n log capacity) time and O(n) memory.
 */
#ifndef MC_REFCACHE_H
#define MC_REFCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

enum mc_refcache_kind {
	MC_REF_LRU,
	MC_REF_FIFO,
	MC_REF_LFU,
	MC_REF_LFU_RESTART,
	MC_REF_S3FIFO,
	MC_REF_ARC,
	MC_REF_LRU_TEXTBOOK,
	MC_REF_LRU_LEAF,
	MC_REF_COUNT
};

/*
 * "lru", "fifo", "lfu", "lfu-restart", "s3fifo", "arc", "lru-textbook",
 * "lru-leaf"; "unknown" for an out-of-range kind.
 */
const char *mc_refcache_name(enum mc_refcache_kind k);
/* The kind named name, or -1 when unknown. */
int mc_refcache_parse(const char *name);

struct mc_refcache_stats {
	uint64_t objects;	/* resident now */
	uint64_t bytes;		/* used now */
	uint64_t inserts;	/* objects admitted */
	uint64_t evictions;	/* resident objects evicted (into a ghost or not) */
	uint64_t evicted_bytes; /* their bytes */
	uint64_t rounds;	/* eviction episodes: inserts that evicted anything */
};

struct mc_refcache;

/*
 * A cache of kind k holding capacity bytes (> 0), watermarks
 * 0 < low < high <= 1 (lru-textbook checks them too and ignores them).
 * NULL with MC_ERR_INVALID on bad arguments, MC_ERR_NO_SPACE on
 * allocation failure.
 */
struct mc_refcache *mc_refcache_new(enum mc_refcache_kind k, uint64_t capacity, double high,
				    double low, struct mc_err *err);
/* A cache of kind k holding capacity bytes, evicting on demand (above). */
struct mc_refcache *mc_refcache_new_on_demand(enum mc_refcache_kind k, uint64_t capacity,
					      struct mc_err *err);
void mc_refcache_free(struct mc_refcache *c);

/* Whether key is resident (a ghost is not). No side effect. */
bool mc_refcache_present(const struct mc_refcache *c, uint64_t key);
/* A hit on a present key; a key that is not present is ignored. */
void mc_refcache_access(struct mc_refcache *c, uint64_t key);
/*
 * Admit key with size bytes, evicting first as the watermarks say. A
 * key that is already present counts as an access and keeps its size;
 * an object larger than the capacity is not admitted. -1 (with
 * MC_ERR_NO_SPACE) only on allocation failure, the cache unchanged.
 */
int mc_refcache_insert(struct mc_refcache *c, uint64_t key, uint64_t size, struct mc_err *err);
/*
 * mc_refcache_insert naming the block key extends (has_parent): its
 * parent, for lru-leaf's tree; the other kinds ignore it.
 */
int mc_refcache_insert_under(struct mc_refcache *c, uint64_t key, uint64_t size, bool has_parent,
			     uint64_t parent, struct mc_err *err);
void mc_refcache_stats(const struct mc_refcache *c, struct mc_refcache_stats *out);

/*
 * For tests and debugging. The queue that holds key: "cache" (lru, fifo,
 * lfu, lfu-restart, lru-textbook), "small", "main" (s3fifo), "t1", "t2"
 * (arc), "leaf", "inner" (lru-leaf), or a ghost: "ghost" (lfu, s3fifo), "b1", "b2" (arc); NULL when
 * the cache knows nothing of key.
 */
const char *mc_refcache_queue(const struct mc_refcache *c, uint64_t key);
/* ARC's target size for T1 in bytes; -1 for the other kinds. */
double mc_refcache_arc_p(const struct mc_refcache *c);
/*
 * Check every internal invariant (list lengths and bytes, the index,
 * the policy's bounds); 0 when they hold, else -1 with MC_ERR_INTERNAL
 * naming the first one broken. Costs O(entries).
 */
int mc_refcache_check(const struct mc_refcache *c, struct mc_err *err);

/*
 * Belady's OPT over a sequence of n block accesses (each key read; a miss
 * inserts it), capacity in objects (fixed-size blocks), evicting the
 * resident key whose next use is farthest (never used again first).
 * Returns the number of hits; -1 on allocation failure.
 */
int64_t mc_refcache_opt_hits(const uint64_t *keys, size_t n, uint64_t capacity_objects,
			     struct mc_err *err);

#endif
