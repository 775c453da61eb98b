/*
 * The per-(peer, tier) recency lists (recency.h). Everything is O(the
 * object's copies) but placing a node that does not belong at the warm
 * end, which walks at most PLACE_STEPS nodes in from either end, and
 * sorting a peer's lists after its inventory.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "recency.h"
#include "store.h"

/*
 * A copy that appears for an object accessed a while ago (a demotion
 * landing on the next tier, a copy a peer reports) belongs some way in
 * from one end. A new put's is the warmest, demotions come coldest
 * first; one further than this many steps from both ends is placed this
 * far in from the warm end, warmer than it is: kept longer, never
 * offered early. A peer's inventory, which reports copies in any order,
 * is sorted in once it is complete (recency_sort_peer).
 */
#define PLACE_STEPS 64

/* A node per copy: each byte here is a few megabytes a million copies. */
_Static_assert(sizeof(struct rank_node) == 32, "struct rank_node grew");

static uint64_t
list_hash(uint32_t peer, uint32_t tier)
{
	uint64_t k = ((uint64_t)peer << 8) | tier;

	return mc_hash64(&k, sizeof(k), 0x7ecu);
}

struct list_key {
	uint32_t peer, tier;
};

static bool
list_eq(const void *entry, const void *key)
{
	const struct rank_list *l = entry;
	const struct list_key *k = key;

	return l->peer == k->peer && l->tier == k->tier;
}

static uint32_t *
worth_place(void *arg, uint64_t n)
{
	return &((struct recency *)arg)->wplace[n];
}

static void
worth_of(void *arg, uint64_t n, double *worth, uint64_t *access_seq)
{
	const struct mobj *o = ((struct recency *)arg)->nodes[n].o;

	*worth = o->worth;
	*access_seq = o->access_seq;
}

static const struct mc_worder_ops worth_ops = { worth_place, worth_of };

void
recency_init(struct recency *r)
{
	memset(r, 0, sizeof(*r));
	mc_htab_init(&r->by_key);
	mc_htab_init(&r->families);
}

/* The children of one parent (by hash and tenant), whether it is in the store or not. */
struct rank_family {
	uint64_t hash;
	uint32_t tenant;
	uint32_t n, cap;
	struct mobj **kids; /* kids[i]->family_idx == i */
};

static void
release(struct recency *r)
{
	size_t cur = 0;
	struct rank_family *f;

	for (uint32_t i = 0; i < r->nlists; i++) {
		mc_worder_free(&r->lists[i]->worth);
		free(r->lists[i]);
	}
	free(r->lists);
	free(r->nodes);
	free(r->wplace);
	mc_htab_free(&r->by_key);
	while ((f = mc_htab_next(&r->families, &cur)) != NULL) {
		free(f->kids);
		free(f);
	}
	mc_htab_free(&r->families);
}

void
recency_free(struct recency *r)
{
	release(r);
	memset(r, 0, sizeof(*r));
}

struct rank_list *
recency_list(const struct recency *r, uint32_t peer, int tier)
{
	struct list_key k = { peer, (uint32_t)tier };

	return mc_htab_find(&r->by_key, list_hash(peer, (uint32_t)tier), list_eq, &k);
}

/* The list of (peer, tier), made on first use; its index, or -1 when out of memory. */
static int64_t
list_get(struct recency *r, uint32_t peer, uint32_t tier)
{
	struct rank_list *l = recency_list(r, peer, (int)tier), **v;

	if (l != NULL)
		return l->idx;
	/* a node names its list in 16 bits: more lists than that are refused */
	if (r->nlists >= UINT16_MAX)
		return -1;
	v = realloc(r->lists, (r->nlists + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	r->lists = v;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -1;
	l->peer = peer;
	l->tier = tier;
	l->idx = r->nlists;
	mc_worder_init(&l->worth, &worth_ops, r);
	if (mc_htab_insert(&r->by_key, list_hash(peer, tier), l) != 0) {
		free(l);
		return -1;
	}
	r->lists[r->nlists] = l;
	return r->nlists++;
}

static bool
holds_complete(const struct mobj *o, uint32_t peer, uint32_t tier)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].peer == peer && v[i].tier == tier && v[i].state == REP_COMPLETE)
			return true;
	return false;
}

static bool
stale(const struct recency *r, uint32_t n)
{
	const struct rank_list *l = r->lists[r->nodes[n].list];

	return !holds_complete(r->nodes[n].o, l->peer, l->tier);
}

static void
unlink_list(struct recency *r, uint32_t n)
{
	struct rank_node *x = &r->nodes[n];
	struct rank_list *l = r->lists[x->list];

	if (x->prev != 0)
		r->nodes[x->prev].next = x->next;
	else
		l->head = x->next;
	if (x->next != 0)
		r->nodes[x->next].prev = x->prev;
	else
		l->tail = x->prev;
	x->prev = x->next = 0;
	l->n--;
}

/* Link n into its list right after at (0: as the new head). */
static void
link_after(struct recency *r, uint32_t n, uint32_t at)
{
	struct rank_node *x = &r->nodes[n];
	struct rank_list *l = r->lists[x->list];

	x->prev = at;
	x->next = at != 0 ? r->nodes[at].next : l->head;
	if (x->next != 0)
		r->nodes[x->next].prev = n;
	else
		l->tail = n;
	if (at != 0)
		r->nodes[at].next = n;
	else
		l->head = n;
	l->n++;
}

/* ---- the smaller orders ---- */

/* Take n out of the order it is in (if any). */
static void
order_unlink(struct recency *r, uint32_t n)
{
	struct rank_node *x = &r->nodes[n];
	struct rank_order *q = &r->lists[x->list]->x[x->order];

	if (x->order == RANK_NONE)
		return;
	if (x->x.prev != 0)
		r->nodes[x->x.prev].x.next = x->x.next;
	else
		q->head = x->x.next;
	if (x->x.next != 0)
		r->nodes[x->x.next].x.prev = x->x.prev;
	else
		q->tail = x->x.prev;
	x->x = (struct rank_link){ 0, 0 };
	x->order = RANK_NONE;
	q->n--;
	q->bytes -= x->o->size;
}

/* Link n into order k of its list right after at (0: as the new head). */
static void
order_link_after(struct recency *r, uint32_t n, int k, uint32_t at)
{
	struct rank_node *x = &r->nodes[n];
	struct rank_order *q = &r->lists[x->list]->x[k];

	x->order = (uint8_t)k;
	x->x.prev = at;
	x->x.next = at != 0 ? r->nodes[at].x.next : q->head;
	if (x->x.next != 0)
		r->nodes[x->x.next].x.prev = n;
	else
		q->tail = n;
	if (at != 0)
		r->nodes[at].x.next = n;
	else
		q->head = n;
	q->n++;
	q->bytes += x->o->size;
}

/*
 * Where a probationer created at seq goes: after the newest no newer
 * than it, looked for from both ends as place() does. Probationers come
 * mostly newest (a put's first copy); one that belongs deep inside (a
 * demotion's copy of an old one) is placed PLACE_STEPS in from the new
 * end: counted among the newer, so kept a little longer.
 */
static uint32_t
place_probation(const struct recency *r, const struct rank_order *q, uint64_t seq)
{
	uint32_t newer = q->tail, older = q->head;

	for (int step = 0; step < PLACE_STEPS; step++) {
		if (newer == 0 || r->nodes[newer].o->created_seq <= seq)
			return newer;
		if (r->nodes[older].o->created_seq > seq)
			return r->nodes[older].x.prev;
		newer = r->nodes[newer].x.prev;
		older = r->nodes[older].x.next;
	}
	return newer;
}

/* n's order and probation count, made to match its object's bits (an orphan's order wins). */
static void
node_flags(struct recency *r, uint32_t n)
{
	struct rank_node *x = &r->nodes[n];
	const struct mobj *o = x->o;
	struct rank_list *l = r->lists[x->list];
	int want = o->orphan ? RANK_ORPHAN : o->probation ? RANK_PROBATION : RANK_NONE;

	if (x->probation != o->probation) {
		if (o->probation)
			l->probation_bytes += o->size;
		else
			l->probation_bytes -= o->size;
		x->probation = o->probation;
	}
	if (x->order == want)
		return;
	order_unlink(r, n);
	if (want == RANK_PROBATION)
		order_link_after(r, n, want, place_probation(r, &l->x[want], o->created_seq));
	else if (want == RANK_ORPHAN)
		order_link_after(r, n, want, l->x[want].tail);
}

void
recency_flags(struct recency *r, struct mobj *o)
{
	for (uint32_t n = o->rank; n != 0; n = r->nodes[n].sib)
		node_flags(r, n);
}

void
recency_resize(struct recency *r, struct mobj *o, uint64_t size)
{
	for (uint32_t n = o->rank; n != 0; n = r->nodes[n].sib) {
		const struct rank_node *x = &r->nodes[n];
		struct rank_list *l = r->lists[x->list];

		/* unsigned: adding the difference modulo 2^64 is the change either way */
		if (x->order != RANK_NONE)
			l->x[x->order].bytes += size - o->size;
		if (x->probation)
			l->probation_bytes += size - o->size;
	}
}

/* Unlink n from its list and its object, and put it on the free chain. */
static void
node_free(struct recency *r, uint32_t n)
{
	struct mobj *o = r->nodes[n].o;

	order_unlink(r, n);
	mc_worder_remove(&r->lists[r->nodes[n].list]->worth, n);
	if (r->nodes[n].probation)
		r->lists[r->nodes[n].list]->probation_bytes -= o->size;
	unlink_list(r, n);
	if (o->rank == n) {
		o->rank = r->nodes[n].sib;
	} else {
		uint32_t p = o->rank;
		while (r->nodes[p].sib != n)
			p = r->nodes[p].sib;
		r->nodes[p].sib = r->nodes[n].sib;
	}
	r->nodes[n] = (struct rank_node){ .next = r->free };
	r->free = n;
	r->live--;
}

static uint32_t
node_alloc(struct recency *r)
{
	uint32_t n = r->free;

	if (n != 0) {
		r->free = r->nodes[n].next;
		return n;
	}
	if (r->used + 1 >= r->cap) {
		uint64_t cap = r->cap != 0 ? 2 * (uint64_t)r->cap : 1024;
		struct rank_node *v;
		uint32_t *w;

		if (cap > UINT32_MAX)
			cap = UINT32_MAX;
		if (r->used + 1 >= cap)
			return 0;
		v = realloc(r->nodes, cap * sizeof(*v));
		if (v == NULL)
			return 0;
		r->nodes = v;
		w = realloc(r->wplace, cap * sizeof(*w));
		if (w == NULL)
			return 0;
		memset(w + r->cap, 0, (cap - r->cap) * sizeof(*w));
		r->wplace = w;
		r->cap = (uint32_t)cap;
		if (r->used == 0)
			r->used = 1; /* node 0 stays unused */
	}
	return r->used++;
}

void
recency_touch(struct recency *r, struct mobj *o)
{
	uint32_t n = o->rank;

	while (n != 0) {
		uint32_t sib = r->nodes[n].sib;

		if (stale(r, n)) {
			node_free(r, n);
		} else {
			struct rank_list *l = r->lists[r->nodes[n].list];
			if (l->tail != n) {
				unlink_list(r, n);
				link_after(r, n, l->tail);
			}
			/* out of memory: left out of the worth order, still offered by recency */
			(void)mc_worder_set(&l->worth, n, o->worth, o->access_seq);
		}
		n = sib;
	}
}

/* The node a new one of access number seq goes after in l (0: at the head). */
static uint32_t
place(const struct recency *r, const struct rank_list *l, uint64_t seq)
{
	uint32_t warm = l->tail, cold = l->head;

	for (int step = 0; step < PLACE_STEPS; step++) {
		if (warm == 0 || r->nodes[warm].o->access_seq <= seq)
			return warm;
		/* cold's predecessors, passed already, are no warmer than seq */
		if (r->nodes[cold].o->access_seq > seq)
			return r->nodes[cold].prev;
		warm = r->nodes[warm].prev;
		cold = r->nodes[cold].next;
	}
	return warm;
}

/* Whether o has a node in list number li. */
static bool
has_node(const struct recency *r, const struct mobj *o, uint32_t li)
{
	for (uint32_t n = o->rank; n != 0; n = r->nodes[n].sib)
		if (r->nodes[n].list == li)
			return true;
	return false;
}

int
recency_sync(struct recency *r, struct mobj *o)
{
	const struct mrep *v;
	int rc = 0;

	for (uint32_t n = o->rank, sib; n != 0; n = sib) {
		sib = r->nodes[n].sib;
		if (stale(r, n))
			node_free(r, n);
	}
	v = obj_creps(o);
	for (unsigned i = 0; i < o->nrep; i++) {
		int64_t li;
		uint32_t n, at;

		if (v[i].state != REP_COMPLETE)
			continue;
		li = list_get(r, v[i].peer, v[i].tier);
		if (li < 0) {
			rc = -1;
			continue;
		}
		if (has_node(r, o, (uint32_t)li))
			continue;
		if ((n = node_alloc(r)) == 0) {
			rc = -1;
			continue;
		}
		r->nodes[n] = (struct rank_node){ .o = o, .sib = o->rank, .list = (uint16_t)li };
		o->rank = n;
		at = place(r, r->lists[li], o->access_seq);
		link_after(r, n, at);
		(void)mc_worder_set(&r->lists[li]->worth, n, o->worth, o->access_seq);
		r->live++;
	}
	recency_flags(r, o);
	return rc;
}

/* ---- families: who names whom as parent ---- */

struct family_key {
	uint64_t hash;
	uint32_t tenant;
};

/* The fields alone: the key's padding is never hashed. */
static uint64_t
family_hash(uint64_t hash, uint32_t tenant)
{
	return mc_hash64(&hash, sizeof(hash), 0xfa11u ^ ((uint64_t)tenant << 20));
}

static bool
family_eq(const void *entry, const void *key)
{
	const struct rank_family *f = entry;
	const struct family_key *k = key;

	return f->hash == k->hash && f->tenant == k->tenant;
}

static struct rank_family *
family_find(const struct recency *r, uint64_t hash, uint32_t tenant)
{
	struct family_key k = { hash, tenant };

	return mc_htab_find(&r->families, family_hash(hash, tenant), family_eq, &k);
}

static bool
tenant_eq(const void *entry, const void *key)
{
	return ((const struct mobj *)entry)->tenant == *(const uint32_t *)key;
}

int
recency_child(struct recency *r, const struct mc_htab *objects, struct mobj *o)
{
	struct family_key k = { o->parent, o->tenant };
	uint64_t h = family_hash(o->parent, o->tenant);
	struct rank_family *f = mc_htab_find(&r->families, h, family_eq, &k);
	uint32_t tenant = o->tenant;
	const struct mobj *p = mc_htab_find(objects, o->parent, tenant_eq, &tenant);

	o->orphan = p == NULL || p == o;
	if (f == NULL) {
		if ((f = calloc(1, sizeof(*f))) == NULL)
			goto oom;
		f->hash = o->parent;
		f->tenant = o->tenant;
		if (mc_htab_insert(&r->families, h, f) != 0) {
			free(f);
			goto oom;
		}
	}
	if (f->n == f->cap) {
		uint32_t cap = f->cap != 0 ? 2 * f->cap : 2;
		struct mobj **v = realloc(f->kids, cap * sizeof(*v));

		if (v == NULL)
			goto oom;
		f->kids = v;
		f->cap = cap;
	}
	o->family_idx = f->n;
	f->kids[f->n++] = o;
	recency_flags(r, o);
	return 0;
oom:
	/* outside every family: never taken for an orphan, which errs on keeping it */
	o->orphan = 0;
	recency_flags(r, o);
	return -1;
}

/* o leaves its parent's family (the family goes with its last member). */
static void
family_leave(struct recency *r, struct mobj *o)
{
	struct family_key k = { o->parent, o->tenant };
	uint64_t h = family_hash(o->parent, o->tenant);
	struct rank_family *f;

	if (o->parent == 0 || (f = mc_htab_find(&r->families, h, family_eq, &k)) == NULL ||
	    o->family_idx >= f->n || f->kids[o->family_idx] != o)
		return;
	f->kids[o->family_idx] = f->kids[--f->n];
	f->kids[o->family_idx]->family_idx = o->family_idx;
	if (f->n == 0) {
		mc_htab_remove(&r->families, h, family_eq, &k);
		free(f->kids);
		free(f);
	}
}

void
recency_parent(struct recency *r, const struct mobj *p, uint64_t hash, bool gone)
{
	struct rank_family *f = family_find(r, hash, p->tenant);

	for (uint32_t i = 0; f != NULL && i < f->n; i++) {
		struct mobj *o = f->kids[i];

		if (o == p || o->orphan == gone)
			continue;
		o->orphan = gone;
		recency_flags(r, o);
	}
}

void
recency_forget(struct recency *r, struct mobj *o)
{
	while (o->rank != 0)
		node_free(r, o->rank);
	family_leave(r, o);
}

/* the index whose nodes qsort compares (it passes no context) */
static const struct recency *sorting;

static int
node_by_access(const void *a, const void *b)
{
	uint64_t x = sorting->nodes[*(const uint32_t *)a].o->access_seq;
	uint64_t y = sorting->nodes[*(const uint32_t *)b].o->access_seq;

	return (x > y) - (x < y);
}

/* Put l's nodes in access_seq order; -1 when out of memory (l unchanged). */
static int
sort_list(struct recency *r, struct rank_list *l)
{
	uint32_t *v, n = 0, at = 0;
	bool sorted = true;

	for (uint32_t x = l->head; x != 0; x = r->nodes[x].next) {
		if (r->nodes[x].next != 0 &&
		    r->nodes[r->nodes[x].next].o->access_seq < r->nodes[x].o->access_seq)
			sorted = false;
	}
	if (sorted)
		return 0;
	if ((v = malloc(l->n * sizeof(*v))) == NULL)
		return -1;
	for (uint32_t x = l->head; x != 0; x = r->nodes[x].next)
		v[n++] = x;
	sorting = r;
	qsort(v, n, sizeof(*v), node_by_access);
	l->head = l->tail = 0;
	l->n = 0;
	for (uint32_t i = 0; i < n; i++) {
		link_after(r, v[i], at);
		at = v[i];
	}
	free(v);
	return 0;
}

int
recency_sort_peer(struct recency *r, uint32_t peer)
{
	int rc = 0;

	for (uint32_t i = 0; i < r->nlists; i++)
		if (r->lists[i]->peer == peer && sort_list(r, r->lists[i]) != 0)
			rc = -1;
	return rc;
}

static int
by_access(const void *a, const void *b)
{
	uint64_t x = (*(struct mobj *const *)a)->access_seq;
	uint64_t y = (*(struct mobj *const *)b)->access_seq;

	return (x > y) - (x < y);
}

int
recency_rebuild(struct recency *r, const struct mc_htab *objects)
{
	struct mobj **v = malloc((objects->count + 1) * sizeof(*v)), *o;
	size_t n = 0, cur = 0;
	int rc = 0;

	release(r);
	recency_init(r);
	while ((o = mc_htab_next(objects, &cur)) != NULL) {
		o->rank = 0;
		o->orphan = 0;
		if (v != NULL)
			v[n++] = o;
	}
	if (v == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (v[i]->parent != 0 && recency_child(r, objects, v[i]) != 0)
			rc = -1;
	/* oldest first, so each node is placed at the warm end at once */
	qsort(v, n, sizeof(*v), by_access);
	for (size_t i = 0; i < n; i++)
		if (recency_sync(r, v[i]) != 0)
			rc = -1;
	free(v);
	return rc;
}

uint32_t
recency_next(struct recency *r, const struct rank_list *l, uint32_t cur)
{
	uint32_t n = cur != 0 ? r->nodes[cur].next : l->head;

	while (n != 0 && stale(r, n)) {
		uint32_t next = r->nodes[n].next;
		node_free(r, n);
		n = next;
	}
	return n;
}

long
recency_lowest(struct recency *r, struct rank_list *l, double hl, size_t k, uint64_t *out)
{
	(void)r;
	return mc_worder_lowest(&l->worth, hl, k, out);
}

bool
recency_node_live(const struct recency *r, const struct rank_list *l, uint64_t n)
{
	return n != 0 && n < r->used && r->nodes[n].o != NULL && r->nodes[n].list == l->idx &&
	       r->wplace[n] != 0 && !stale(r, (uint32_t)n);
}

uint32_t
recency_order_next(struct recency *r, const struct rank_list *l, int order, uint32_t cur)
{
	uint32_t n = cur != 0 ? r->nodes[cur].x.next : l->x[order].head;

	while (n != 0 && stale(r, n)) {
		uint32_t next = r->nodes[n].x.next;
		node_free(r, n);
		n = next;
	}
	return n;
}

size_t
recency_memory(const struct recency *r)
{
	size_t heaps = 0;

	for (uint32_t i = 0; i < r->nlists; i++)
		heaps += r->lists[i]->worth.cap * sizeof(struct mc_worder_ent) +
			 r->lists[i]->worth.fcap * sizeof(uint32_t);
	return (size_t)r->cap * (sizeof(*r->nodes) + sizeof(*r->wplace)) + heaps +
	       r->nlists * (sizeof(struct rank_list) + 8) + mc_htab_memory(&r->by_key) +
	       mc_htab_memory(&r->families);
}
