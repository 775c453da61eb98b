/*
 * lru-leaf: the order of a radix-tree prefix cache (SGLang's radix
 * cache). The blocks form a tree, a block's parent the block before it
 * in the request that wrote it; only leaves (blocks that no resident
 * block has as parent) are evictable, the least recently used leaf
 * first, and evicting a leaf can make its parent one.
 *
 * A radix tree's match refreshes the last access of every node on the
 * path it matched. That is kept here without walking the path: an inner
 * block's stamp matters only once it is a leaf again, and then it must
 * be the latest access anywhere below it, so an evicted leaf hands its
 * stamp to its parent (the later one stays). A hit is O(1), or O(log n)
 * on a leaf; a leaf entering or leaving the heap is O(log n).
 *
 * Leaves sit in the heap (RC_HEAP, every count 0, so by stamp alone),
 * inner blocks in RC_CACHE, a list whose order means nothing. A write
 * takes its parent out of the leaves before its room is made, as a radix
 * cache holds the path a running request matched, so the round never
 * evicts the block the write extends; only when nothing else is left
 * does that parent go too, and the write becomes a root. A block whose
 * parent is not resident is a root.
 */
#include "refcache_impl.h"

static void
hit(struct mc_refcache *c, struct rc_entry *e)
{
	e->stamp = ++c->clock;
	if (e->where == RC_HEAP)
		mc_rc_heap_fix(c, e);
}

/* p gains a child: an inner block from now on. */
static void
adopt(struct mc_refcache *c, struct rc_entry *p)
{
	if (p->children++ == 0) {
		mc_rc_heap_leave(c, p);
		mc_rc_enter(c, p, RC_CACHE);
	}
}

/* p lost a child whose stamp was stamp: a leaf again when it was the last. */
static void
orphan(struct mc_refcache *c, struct rc_entry *p, uint64_t stamp)
{
	if (stamp > p->stamp)
		p->stamp = stamp;
	if (--p->children == 0) {
		mc_rc_leave(c, p);
		mc_rc_heap_add(c, p);
	}
}

static void
admit(struct mc_refcache *c, struct rc_entry *e, uint64_t size)
{
	mc_rc_unghost(c, e, size);
	if (c->admit_parent != NULL)
		adopt(c, c->admit_parent);
	c->pinned = c->admit_parent;
	mc_rc_round(c, size);
	/* the round took the parent only when it had to (evict below) */
	e->parent = c->pinned;
	c->pinned = NULL;
	e->children = 0;
	e->count = 0;
	e->stamp = ++c->clock;
	mc_rc_heap_add(c, e);
}

static void
evict(struct mc_refcache *c)
{
	struct rc_entry *e, *p;
	uint64_t stamp;

	/*
	 * No leaf: everything resident is the path to the pinned parent,
	 * which held the write's place as a leaf. Let it go first.
	 */
	if (c->q[RC_HEAP].n == 0) {
		p = c->pinned;
		c->pinned = NULL;
		orphan(c, p, 0);
	}
	e = c->heap[0];
	p = e->parent;
	stamp = e->stamp;
	mc_rc_heap_evict(c, e, RC_NONE);
	if (p != NULL)
		orphan(c, p, stamp);
}

static int
check(const struct mc_refcache *c, struct mc_err *err)
{
	const struct rc_link *l;
	uint64_t children = 0, linked = 0;

	if (mc_rc_heap_check(c, err) < 0)
		return -1;
	for (size_t i = 0; i < c->q[RC_HEAP].n; i++) {
		const struct rc_entry *e = c->heap[i];

		if (e->children != 0 || e->count != 0)
			return mc_err_set(err, MC_ERR_INTERNAL, "lru-leaf: a leaf with children");
		if (e->parent != NULL && !rc_resident(e->parent->where))
			return mc_err_set(err, MC_ERR_INTERNAL,
					  "lru-leaf: a leaf's parent is gone");
		children += e->children;
		linked += e->parent != NULL;
	}
	for (l = c->q[RC_CACHE].head.next; l != &c->q[RC_CACHE].head; l = l->next) {
		const struct rc_entry *e = (const struct rc_entry *)l;

		if (e->children == 0)
			return mc_err_set(err, MC_ERR_INTERNAL,
					  "lru-leaf: an inner block is a leaf");
		if (e->parent != NULL && !rc_resident(e->parent->where))
			return mc_err_set(err, MC_ERR_INTERNAL,
					  "lru-leaf: an inner block's parent is gone");
		children += e->children;
		linked += e->parent != NULL;
	}
	if (children != linked)
		return mc_err_set(err, MC_ERR_INTERNAL,
				  "lru-leaf: %llu children counted, %llu blocks with a parent",
				  (unsigned long long)children, (unsigned long long)linked);
	if (c->st.objects != c->q[RC_HEAP].n + c->q[RC_CACHE].n)
		return mc_err_set(err, MC_ERR_INTERNAL, "lru-leaf: objects outside the tree");
	return 0;
}

const struct rc_ops mc_rc_lru_leaf = {
	.reserve = mc_rc_heap_reserve,
	.hit = hit,
	.admit = admit,
	.evict = evict,
	.check = check,
	.fini = mc_rc_heap_fini,
};
