/*
 * What a candidate view's builder remembers beyond the copies it holds,
 * for the kv ranking (rank_kv.c): the master today, a peer once peers
 * evict for themselves, and mc-bench sim's model, all alike.
 *
 * Each cached object carries an LRFU value (Lee et al., "LRFU: a
 * spectrum of policies", 2001): crf(t) = the sum over its references t_j
 * of 2^-((t - t_j) / H), t counted in accesses, so one number weighs
 * frequency and recency and H slides between LFU (long) and LRU (short).
 *
 * The history adds two things:
 *  - Ghosts: the values of keys recently evicted, about the last
 *    `ghosts per object` x the cached objects of them (as ARC and
 *    S3-FIFO keep ghost lists), so a block evicted and written again
 *    resumes its value instead of starting over; a key that comes back
 *    with no ghost is new (on probation). Which kind of ghost comes
 *    back moves the probationary segment's share, as ARC's ghost hits
 *    move its split. A ghost is 4 bytes (a key
 *    fingerprint, the value on a log scale, the time in eighths of a
 *    cache-full of references), so the default of four per object costs
 *    16 bytes an object, 20 with the table's headroom.
 *  - The half-life, chosen by miniature simulation: H = f x the cached
 *    objects, f a power of two, and beside the cache a shadow per f in
 *    range, each a small LRFU cache (a few hundred objects, with its own
 *    ghosts) over a spatial sample of the keys, on demand. Every window
 *    of a shadow-full of sampled references f becomes the one whose
 *    shadow hit most lately, when it leads the current one beyond the
 *    noise of a count. The right window depends on the workload's reuse
 *    distances and on the cache's size; no constant fits every trace,
 *    and the shadows find it within a few cache-fulls of references
 *    instead of stepping to it one long period at a time.
 * Memory: the ghost table, sized to the objects cached, and the
 * shadows, a fixed MC_HISTORY_SHADOW_BYTES; both allocated at the first
 * eviction; nothing else grows.
 */
#ifndef MC_HISTORY_H
#define MC_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

/*
 * Ghosts per cached object, by default: enough to remember a block
 * across the few cache-fulls of writes between a conversation's turns.
 */
#define MC_HISTORY_GHOSTS 4.0
/*
 * The half-life factor's range (log2), one shadow per power of two in
 * it, and its starting point.
 */
#define MC_HISTORY_LOG_FACTOR_MIN (-3)
#define MC_HISTORY_LOG_FACTOR_MAX 8
#define MC_HISTORY_FACTORS (MC_HISTORY_LOG_FACTOR_MAX - MC_HISTORY_LOG_FACTOR_MIN + 1)
#define MC_HISTORY_LOG_FACTOR_START 1
/* The shadows' memory, allocated at the first eviction, whatever the cache's size. */
#define MC_HISTORY_SHADOW_BYTES (1280u << 10)

struct mc_history;

struct mc_history_stats {
	uint64_t ghosts;      /* remembered now */
	uint64_t evicted;     /* values handed in */
	uint64_t resumed;     /* keys that came back and found their value */
	uint64_t periods;     /* shadow windows ended (each one chooses the factor) */
	double factor;	      /* H / cached objects */
	double last_hit_rate; /* the cache's, over the last window (mc_history_ref) */
	double probation;     /* the probationary segment's share now */
};

/*
 * The probationary segment: the newest probationers (blocks written with
 * no history, unread since) up to a share of the cache's capacity
 * compete with the rest; older ones go first. The share starts at half
 * the cache, as 2Q and segmented LRU give their probationary part, and
 * moves as ARC moves its split: up when a key evicted on probation comes
 * back, down when one evicted after it was read does (mc_history_take),
 * between none and all of the cache.
 */
#define MC_HISTORY_PROBATION 0.5

struct mc_cand;
struct mc_cand_view;

/* The capacity in bytes of the tier that holds a record's copy. */
typedef uint64_t (*mc_history_capacity_fn)(void *ctx, const struct mc_cand_view *v,
					   const struct mc_cand *c);
/*
 * Apply the segment to a view: on each tier (the records' peer and tier
 * names), clear MC_CAND_PROBATION on the newest probationers (by
 * created_seq) whose bytes fit in `share` (0..1, the history's
 * mc_history_probation) of its capacity, and leave it on the older ones.
 * -1 with err on allocation failure (the view is then unchanged).
 */
int mc_history_segment(struct mc_cand_view *v, double share, mc_history_capacity_fn capacity,
		       void *ctx, struct mc_err *err);
/* The probationary segment's share of a tier's capacity now (0..1). */
double mc_history_probation(const struct mc_history *h);

/* ghosts_per_object > 0; 0 picks MC_HISTORY_GHOSTS. */
struct mc_history *mc_history_new(double ghosts_per_object, struct mc_err *err);
void mc_history_free(struct mc_history *h);

/* An LRFU value crf taken at reference number `last`, decayed to `now` with half-life hl. */
double mc_lrfu_decay(double crf, uint64_t last, uint64_t now, double hl);
/* The value after one more reference at `now`: decayed from `last`, plus one. */
double mc_lrfu_ref(double crf, uint64_t last, uint64_t now, double hl);
/*
 * A chain block's worth: its value, capped just below its parent's
 * worth (already decayed to the same time; < 0 when no parent is
 * cached). A prompt reads its prefix in order, so worths taken at each
 * access fall strictly from head to tail, and a ranking by worth gives
 * up a chain's tail first.
 */
double mc_chain_worth(double crf, double parent_worth);

/* The half-life, in accesses, for a cache of `objects` objects now (at least 1). */
double mc_history_half_life(const struct mc_history *h, uint64_t objects);
/*
 * One reference by the cache: a hit (a read of a copy it held) or a miss
 * (a write of one it had to compute). Counts only.
 */
void mc_history_ref(struct mc_history *h, bool hit, uint64_t objects);
/*
 * A read of the cached key with this hash: to the shadows that choose
 * the half-life (a write tells them through mc_history_take).
 */
void mc_history_read(struct mc_history *h, uint64_t hash, uint64_t objects);
/*
 * The copy of the key with this 64-bit hash left the cache at reference
 * number `now` with LRFU value crf (already decayed to now), on
 * probation (written with no history, never read) or not. Allocation
 * failures only forget it.
 */
void mc_history_evicted(struct mc_history *h, uint64_t hash, double crf, bool probation,
			uint64_t now, uint64_t objects);
/*
 * The key comes back at reference number `now`: its value decayed to
 * now, and it leaves the history; false (and *crf 0) when it has none.
 * Its ghost moves the probationary share.
 */
bool mc_history_take(struct mc_history *h, uint64_t hash, uint64_t now, uint64_t objects,
		     double *crf);
void mc_history_stats(const struct mc_history *h, struct mc_history_stats *out);
size_t mc_history_memory(const struct mc_history *h);

#endif
