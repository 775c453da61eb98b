/*
 * A worth order: the copies of a tier by their LRFU worth decayed to now,
 * kept incrementally so a round can take the lowest k of them in
 * O(k log k) instead of ranking the whole tier.
 *
 * A copy's worth w was taken at its access number a; at reference now,
 * with half-life hl, it is w * 2^-((now - a) / hl) (mc_lrfu_decay). The
 * order of two copies by that value does not depend on now, so each copy
 * is keyed once, when its worth or access changes, by
 * log2(w) + a / hl (mc_worth_key), in an indexed binary min-heap. Only a
 * new half-life reorders the keys: the order keeps the half-life its
 * keys were taken with and, when asked for the lowest copies under one
 * that has moved by more than MC_WORDER_DRIFT (as a log2 ratio), takes
 * every key again and rebuilds the heap, O(n). A half-life that follows
 * the number of objects moves that far only after the tier's population
 * has grown or shrunk by 9%, so the rebuilds cost O(1) a copy
 * over time.
 *
 * The members are the caller's, named by a 64-bit id (an index, or a
 * pointer as uintptr_t); each keeps its place in the heap, a 32-bit
 * number, where ops->place says (0 when it is not in it), so the order
 * needs no table of its own. 16 bytes a member, in the heap.
 */
#ifndef MC_WORDER_H
#define MC_WORDER_H

#include <stddef.h>
#include <stdint.h>

#define MC_WORDER_DRIFT 0.125

struct mc_worder_ops {
	/* Where member id keeps its place in the heap (0: not in it). */
	uint32_t *(*place)(void *arg, uint64_t id);
	/* Member id's worth now and the access number it was taken at (for a re-key). */
	void (*worth)(void *arg, uint64_t id, double *worth, uint64_t *access_seq);
};

struct mc_worder_ent {
	double key;
	uint64_t id;
};

struct mc_worder {
	struct mc_worder_ent *v; /* v[1..n]: the heap; v[0] unused */
	size_t n, cap;
	uint32_t *frontier; /* the search of mc_worder_lowest */
	size_t fcap;
	double hl; /* the half-life the keys were taken with */
	uint64_t rekeys;
	const struct mc_worder_ops *ops;
	void *arg;
};

/*
 * The key of a worth taken at access number access_seq under half-life
 * hl. A worth of zero or less is below every positive one taken at the
 * same access, and orders by access among its kind.
 */
double mc_worth_key(double worth, uint64_t access_seq, double hl);

void mc_worder_init(struct mc_worder *w, const struct mc_worder_ops *ops, void *arg);
void mc_worder_free(struct mc_worder *w);

/* Put id in the order, or move it, by its worth now: 0, or -1 out of memory (id not added). */
int mc_worder_set(struct mc_worder *w, uint64_t id, double worth, uint64_t access_seq);

/* Take id out of the order (nothing when it is not in it). */
void mc_worder_remove(struct mc_worder *w, uint64_t id);

/*
 * Every member's key is to be taken again (ops->worth) at the next
 * mc_worder_lowest: the access numbers were renumbered.
 */
void mc_worder_stale(struct mc_worder *w);

/*
 * The (at most) k members of lowest decayed worth under half-life hl,
 * lowest first, into out: how many, or -1 out of memory. Re-keys the
 * order first when hl has drifted from the one it was keyed with.
 */
long mc_worder_lowest(struct mc_worder *w, double hl, size_t k, uint64_t *out);

#endif
