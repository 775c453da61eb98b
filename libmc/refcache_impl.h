/*
 * Inside the reference caches (mc/refcache.h): the shared cache record,
 * its queues and the struct of operations each policy file implements.
 *
 * Every key the cache knows, resident or ghost, has one entry, found by
 * key in one hash table. An entry sits in exactly one queue, named by
 * entry->where; a queue is an intrusive doubly linked list with a
 * sentinel, its head the oldest (LRU, FIFO tail) end, plus its length and
 * bytes. lfu keeps its resident entries in a heap instead of a list, and
 * lru-leaf its leaves: that queue, RC_HEAP, counts them but links nothing.
 *
 * The generic layer (refcache.c) owns the index, the accounting and the
 * watermark round; a policy decides where an admitted object goes, what
 * a hit does and which object one eviction removes.
 */
#ifndef MC_REFCACHE_IMPL_H
#define MC_REFCACHE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/hash.h"
#include "mc/refcache.h"

enum rc_queue {
	RC_NONE,  /* being admitted, in no queue yet */
	RC_CACHE, /* lru, fifo, lru-textbook; lru-leaf's inner blocks */
	RC_HEAP,  /* lfu, lru-leaf's leaves: resident, ordered by the heap, not linked */
	RC_SMALL,
	RC_MAIN,
	RC_T1,
	RC_T2,
	RC_GHOST, /* lfu, s3fifo; the first ghost queue: from here on nothing is resident */
	RC_B1,
	RC_B2,
	RC_NQUEUES
};

struct rc_link {
	struct rc_link *prev, *next;
};

struct rc_entry {
	struct rc_link link; /* first, so a link is its entry */
	uint64_t key;
	uint64_t size;		 /* bytes, at least 1 */
	uint64_t count;		 /* lfu: uses, kept in the ghost; lru-leaf: 0 */
	uint64_t stamp;		 /* lfu: time of the last use, for ties; lru-leaf: the order */
	size_t heap;		 /* lfu, lru-leaf: index in the heap */
	struct rc_entry *parent; /* lru-leaf: the resident block it extends, or NULL */
	uint64_t children;	 /* lru-leaf: resident blocks whose parent it is */
	enum rc_queue where;
	uint8_t freq; /* s3fifo: 0..3 */
};

struct rc_queue_state {
	struct rc_link head; /* head.next is the oldest entry */
	size_t n;
	uint64_t bytes;
};

struct mc_refcache;

struct rc_ops {
	/* Evict only what an insert needs at capacity, ignoring the watermarks. */
	bool at_capacity;
	/* Optional: make room for one more resident object before anything changes. */
	int (*reserve)(struct mc_refcache *c, struct mc_err *err);
	/* A hit on the resident entry e. */
	void (*hit)(struct mc_refcache *c, struct rc_entry *e);
	/*
	 * Admit e with size bytes: e is fresh (RC_NONE) or one of this
	 * policy's ghosts, indexed either way. Adapt to where it was, take
	 * it out of its ghost queue (mc_rc_unghost), run mc_rc_round, then
	 * link it in. The resident block it extends, if the writer named
	 * one, is c->admit_parent.
	 */
	void (*admit)(struct mc_refcache *c, struct rc_entry *e, uint64_t size);
	/* Evict at least one resident object; called only when one exists. */
	void (*evict)(struct mc_refcache *c);
	/* Optional: the policy's own invariants, as mc_refcache_check. */
	int (*check)(const struct mc_refcache *c, struct mc_err *err);
	/* Optional: free what the policy allocated. */
	void (*fini)(struct mc_refcache *c);
};

struct mc_refcache {
	enum mc_refcache_kind kind;
	const struct rc_ops *ops;
	uint64_t capacity;
	uint64_t trigger;     /* a round starts when used + size exceeds this */
	uint64_t target;      /* and stops when used + size is at or below this */
	struct mc_htab index; /* key -> entry, ghosts included */
	struct rc_queue_state q[RC_NQUEUES];
	struct mc_refcache_stats st; /* objects and bytes are kept live */

	struct rc_entry *admit_parent; /* during an insert: the resident parent, or NULL */

	/* lfu, lru-leaf */
	struct rc_entry **heap;
	size_t heap_cap;
	uint64_t clock;
	/* s3fifo */
	uint64_t small_share;
	/* arc */
	double p;
	bool from_b2; /* the entry being admitted was a B2 ghost */
	/* lru-leaf: the parent held out of the leaves while its child's room is made */
	struct rc_entry *pinned;
};

static inline bool
rc_resident(enum rc_queue q)
{
	return q != RC_NONE && q < RC_GHOST;
}

static inline struct rc_entry *
rc_oldest(const struct mc_refcache *c, enum rc_queue q)
{
	return c->q[q].n ? (struct rc_entry *)c->q[q].head.next : NULL;
}

/*
 * Put e (in RC_NONE) into queue q: counted, and linked at the newest end
 * unless q is RC_HEAP. Entering a resident queue adds e to the resident
 * objects and bytes.
 */
void mc_rc_enter(struct mc_refcache *c, struct rc_entry *e, enum rc_queue q);
/* Take e out of its queue (back to RC_NONE), the inverse of rc_enter. */
void mc_rc_leave(struct mc_refcache *c, struct rc_entry *e);
/* rc_leave then rc_enter: move e to the newest end of q. */
void mc_rc_move(struct mc_refcache *c, struct rc_entry *e, enum rc_queue q);
/*
 * Evict the resident e: counted as an eviction, then moved to the ghost
 * queue ghost, or forgotten (unindexed and freed) when ghost is RC_NONE.
 */
void mc_rc_evict(struct mc_refcache *c, struct rc_entry *e, enum rc_queue ghost);
/* Forget the ghost e: unindexed and freed. */
void mc_rc_forget(struct mc_refcache *c, struct rc_entry *e);
/* Take e out of its ghost queue, if any, and give it size bytes. */
void mc_rc_unghost(struct mc_refcache *c, struct rc_entry *e, uint64_t size);
/* Forget the oldest ghosts of q while q weighs more than bytes. */
void mc_rc_trim(struct mc_refcache *c, enum rc_queue q, uint64_t bytes);
/*
 * The watermark round for admitting size bytes: if they take the cache
 * over its trigger, evict until they fit under its target or the cache is
 * empty, counting one round when anything went.
 */
void mc_rc_round(struct mc_refcache *c, uint64_t size);

/*
 * The heap queue (refcache_heap.c), by (count, stamp), fewest and oldest
 * at c->heap[0]. reserve makes room for one more entry; add puts e (in
 * RC_NONE) in; fix restores the order after e's count or stamp changed;
 * leave takes e out (to RC_NONE); evict takes it out as mc_rc_evict
 * does. Each O(log n).
 */
bool mc_rc_heap_before(const struct rc_entry *a, const struct rc_entry *b);
int mc_rc_heap_reserve(struct mc_refcache *c, struct mc_err *err);
void mc_rc_heap_add(struct mc_refcache *c, struct rc_entry *e);
void mc_rc_heap_fix(struct mc_refcache *c, struct rc_entry *e);
void mc_rc_heap_leave(struct mc_refcache *c, struct rc_entry *e);
void mc_rc_heap_evict(struct mc_refcache *c, struct rc_entry *e, enum rc_queue ghost);
/* The heap's own invariants: indices, order, bytes. */
int mc_rc_heap_check(const struct mc_refcache *c, struct mc_err *err);
void mc_rc_heap_fini(struct mc_refcache *c);

extern const struct rc_ops mc_rc_lru, mc_rc_fifo, mc_rc_lru_textbook, mc_rc_lfu, mc_rc_lfu_restart,
	mc_rc_s3fifo, mc_rc_arc, mc_rc_lru_leaf;

#endif
