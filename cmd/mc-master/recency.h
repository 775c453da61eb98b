/*
 * The recency index: for each (peer, tier), the objects with a complete
 * copy there, coldest first by their access_seq, so a peer's least
 * recently used keys on one tier come off the cold end in O(answer).
 *
 * One node per (object, peer, tier) in a slab of nodes addressed by
 * 32-bit index, doubly linked in its list and singly linked among the
 * object's nodes (mobj.rank is the first). Indexes, not pointers, so
 * that neither the slab growing nor the object's replica array moving
 * invalidates anything: a node names its object and its list, never a
 * struct mrep. 24 bytes a node, plus mobj.rank.
 *
 * The store tells the index of every access (recency_touch: its nodes
 * go to the warm end) and every freed object (recency_forget); whoever
 * changes an object's copies calls recency_sync, which makes its nodes
 * match its complete replicas. A new node walks in from both ends of
 * its list to its place, a few dozen steps at most (recency.c says what
 * happens past them). A copy removed without a sync (an
 * eviction round's, a dead peer's) leaves a stale node that the next
 * sync, touch or walk of its list finds and frees: a walk never answers
 * with it, and each stale node costs one step once.
 */
#ifndef MASTER_RECENCY_H
#define MASTER_RECENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/hash.h"

struct mobj;

struct rank_node {
	struct mobj *o;
	uint32_t prev, next; /* in its list, 0 at either end */
	uint32_t sib;	     /* the object's next node, 0 at the end */
	uint32_t list;	     /* index in recency.lists */
};

struct rank_list {
	uint32_t peer;
	uint32_t tier;
	uint32_t head, tail; /* coldest, warmest; 0 when empty */
	uint32_t idx;	     /* its place in recency.lists (lists are never removed) */
	uint64_t n;
};

struct recency {
	struct rank_node *nodes; /* node 0 is never used: index 0 means none */
	uint32_t cap, used;	 /* slots allocated, slots ever handed out */
	uint32_t free;		 /* first free node, chained by next */
	uint64_t live;		 /* nodes in lists */
	struct rank_list **lists;
	uint32_t nlists;
	struct mc_htab by_key; /* rank_list by (peer, tier) */
	/* what the ranking call and local reads did, for the metrics */
	uint64_t queries, answer_keys, reads_recorded, reads_unknown;
};

void recency_init(struct recency *r);
void recency_free(struct recency *r);
/* o was just accessed (its access_seq is the store's newest): its nodes go warmest. */
void recency_touch(struct recency *r, struct mobj *o);
/*
 * o's copies changed: one node for each (peer, tier) of a COMPLETE
 * replica, in its place by o's access_seq, and none elsewhere. A node
 * it cannot allocate is left out (the object is then never offered
 * there, which errs on keeping data); -1 then, else 0.
 */
int recency_sync(struct recency *r, struct mobj *o);
/*
 * Sort each list of peer by access_seq, O(k log k) for its k entries
 * (none when already in order): after its inventory, whose copies came
 * in the peer's order. -1 when out of memory (those lists left as they are).
 */
int recency_sort_peer(struct recency *r, uint32_t peer);
/* o is being freed: drop its nodes. */
void recency_forget(struct recency *r, struct mobj *o);
/*
 * Every object of the table (struct mobj entries), each list in
 * access_seq order: after a restore. -1 when out of memory (the index
 * then holds what it could place, in order).
 */
int recency_rebuild(struct recency *r, const struct mc_htab *objects);

/* The list of (peer, tier), NULL when it holds nothing yet. */
struct rank_list *recency_list(const struct recency *r, uint32_t peer, int tier);
/*
 * A walk from the cold end of a list: recency_next returns the node
 * after cur (0: the coldest), skipping and freeing stale nodes, whose
 * object holds no complete copy there any more; 0 at the end.
 */
uint32_t recency_next(struct recency *r, const struct rank_list *l, uint32_t cur);
/* Bytes the index takes (nodes and lists). */
size_t recency_memory(const struct recency *r);

#endif
