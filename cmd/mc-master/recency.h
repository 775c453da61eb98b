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
 * struct mrep. 32 bytes a node, plus mobj.rank.
 *
 * Beside its recency order each (peer, tier) keeps its nodes by their
 * object's chain worth decayed to now (mc/worder.h), so that a round
 * finds the copies the kv ranking values least even when they were read
 * lately (a chain's tail under a parent worth little): a heap entry of
 * 16 bytes a node and its place in recency.wplace, 4 more. A node's key
 * follows its object's worth and access_seq, which change only as
 * recency_touch is called. It also keeps two smaller orders
 * through the same nodes, so that a round finds what it must see first
 * without a walk of the store: its probationers (mobj.probation), oldest
 * first by created_seq, and its orphans (mobj.orphan: the chain parent
 * is not in the store), with the sum of its probationers' bytes. A list
 * is named in 16 bits: a master refuses copies on a 65536th (peer, tier). An object's
 * orphan bit is kept here too: every object that names a parent is a
 * member of its parent's family (by parent hash and tenant), so that a
 * parent going or coming sets or clears its children's bits in
 * O(children).
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
#include "mc/worder.h"

struct mobj;

/*
 * The smaller orders of a list. A node is in at most one: an orphan's
 * (the ranking's first victims, whether on probation or not) wins over
 * the probationers'; the list's probation_bytes counts every
 * probationer, in either.
 */
enum { RANK_NONE, RANK_PROBATION, RANK_ORPHAN, RANK_ORDERS };

struct rank_link {
	uint32_t prev, next; /* 0 at either end */
};

struct rank_order {
	uint32_t head, tail; /* probation: oldest and newest by created_seq */
	uint64_t n, bytes;   /* members, and the sum of their objects' sizes */
};

struct rank_node {
	struct mobj *o;
	uint32_t prev, next; /* in its list, 0 at either end */
	uint32_t sib;	     /* the object's next node, 0 at the end */
	uint16_t list;	     /* index in recency.lists */
	uint8_t order;	     /* the smaller order it is in: RANK_NONE, _PROBATION, _ORPHAN */
	uint8_t probation;   /* counted in its list's probation_bytes */
	struct rank_link x;  /* in that order */
};

struct rank_list {
	uint32_t peer;
	uint32_t tier;
	uint32_t head, tail; /* coldest, warmest; 0 when empty */
	uint32_t idx;	     /* its place in recency.lists (lists are never removed) */
	uint64_t n;
	struct rank_order x[RANK_ORDERS]; /* x[RANK_NONE] unused */
	uint64_t probation_bytes;	  /* the sizes of its probationers, orphans among them */
	struct mc_worder worth;		  /* its nodes by their object's decayed worth */
};

struct recency {
	struct rank_node *nodes; /* node 0 is never used: index 0 means none */
	uint32_t *wplace;	 /* per node: its place in its list's worth order (0: none) */
	uint32_t cap, used;	 /* slots allocated, slots ever handed out */
	uint32_t free;		 /* first free node, chained by next */
	uint64_t live;		 /* nodes in lists */
	struct rank_list **lists;
	uint32_t nlists;
	struct mc_htab by_key;	 /* rank_list by (peer, tier) */
	struct mc_htab families; /* struct rank_family by (parent hash, tenant) */
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
/* o is being freed: drop its nodes, and leave its parent's family. */
void recency_forget(struct recency *r, struct mobj *o);
/*
 * Every object of the table (struct mobj entries), each list in
 * access_seq order, the families and orphan bits from the parents the
 * objects name: after a restore. -1 when out of memory (the index
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
/*
 * The (at most) k nodes of l of lowest decayed worth under half-life hl,
 * lowest first, into out: how many, or -1 out of memory. Some may be
 * stale (recency_node_live tells).
 */
long recency_lowest(struct recency *r, struct rank_list *l, double hl, size_t k, uint64_t *out);
/* Whether node n is a live member of l: a complete copy of its object is still there. */
bool recency_node_live(const struct recency *r, const struct rank_list *l, uint64_t n);
/*
 * A walk of one of a list's smaller orders (RANK_PROBATION: oldest
 * first), like recency_next: stale nodes are freed as it passes them.
 */
uint32_t recency_order_next(struct recency *r, const struct rank_list *l, int order, uint32_t cur);
/* o's probation or orphan bit changed: its nodes join or leave those orders. */
void recency_flags(struct recency *r, struct mobj *o);
/* o's size is about to become size: the orders' byte sums follow. */
void recency_resize(struct recency *r, struct mobj *o, uint64_t size);
/*
 * o was just given its chain parent (o->parent, not 0): it joins the
 * parent's family, and is an orphan when objects holds no such parent.
 * -1 when out of memory (o then never becomes an orphan when its parent
 * goes, which errs on keeping it).
 */
int recency_child(struct recency *r, const struct mc_htab *objects, struct mobj *o);
/*
 * An object of hash and tenant came into the store (gone false) or is
 * leaving it (gone true, p itself skipped): its children's orphan bits.
 */
void recency_parent(struct recency *r, const struct mobj *p, uint64_t hash, bool gone);

/* Bytes the index takes (nodes and lists). */
size_t recency_memory(const struct recency *r);

#endif
