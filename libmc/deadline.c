/*
 * The deadline index: a binary min-heap of (deadline, id, gen) entries
 * and a hash table from id to its registration (latest deadline and
 * generation).
 *
 * Validity: a heap entry is live iff its id is registered and the entry
 * carries the registration's generation. The generation, not only the
 * deadline, decides, so that an id moved d1 -> d2 -> d1 leaves one live
 * entry rather than two equal ones (visit would otherwise report it
 * twice). Every registration has exactly one live entry at all times:
 * set pushes it, pop and rebuild are the only ways entries leave.
 *
 * Generations come from one counter for the whole index, not per id:
 * an id removed and registered again must not reuse the generation its
 * old heap entry carries. At 64 bits the counter never wraps, and the
 * gen fits in what would otherwise be padding.
 *
 * Registrations come from slabs with a free list, so the steady state
 * (pins expiring and new ones taking their place) allocates nothing,
 * and pop never allocates.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/deadline.h"
#include "mc/hash.h"

#define HASH_SEED 0x6d63646c /* "mcdl" */
#define SLAB_REGS 256
#define HEAP_MIN_CAP 64

struct dl_entry {
	uint64_t deadline;
	uint64_t id;
	uint64_t gen;
};

struct dl_reg {
	uint64_t id;
	uint64_t deadline;
	uint64_t gen;
	struct dl_reg *next_free;
};

struct dl_slab {
	struct dl_slab *next;
	struct dl_reg regs[SLAB_REGS];
};

struct mc_deadline_index {
	struct dl_entry *heap;
	size_t n, cap;
	struct mc_htab regs;
	struct dl_slab *slabs;
	struct dl_reg *free_regs;
	uint64_t next_gen;
	uint64_t rebuilds;
};

static bool
reg_eq(const void *entry, const void *key)
{
	return ((const struct dl_reg *)entry)->id == *(const uint64_t *)key;
}

static inline uint64_t
id_hash(uint64_t id)
{
	return mc_hash64(&id, sizeof(id), HASH_SEED);
}

static struct dl_reg *
find_reg(const struct mc_deadline_index *d, uint64_t id)
{
	return mc_htab_find(&d->regs, id_hash(id), reg_eq, &id);
}

/* (deadline, id) order; the id only makes runs reproducible. */
static inline bool
entry_less(const struct dl_entry *a, const struct dl_entry *b)
{
	if (a->deadline != b->deadline)
		return a->deadline < b->deadline;
	return a->id < b->id;
}

static bool
entry_live(const struct mc_deadline_index *d, const struct dl_entry *e)
{
	const struct dl_reg *r = find_reg(d, e->id);

	return r != NULL && r->gen == e->gen;
}

static void
sift_up(struct dl_entry *h, size_t i)
{
	struct dl_entry e = h[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!entry_less(&e, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
}

static void
sift_down(struct dl_entry *h, size_t n, size_t i)
{
	struct dl_entry e = h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && entry_less(&h[c + 1], &h[c]))
			c++;
		if (!entry_less(&h[c], &e))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = e;
}

static void
heap_pop_top(struct mc_deadline_index *d)
{
	d->n--;
	if (d->n > 0) {
		d->heap[0] = d->heap[d->n];
		sift_down(d->heap, d->n, 0);
	}
}

static int
heap_reserve(struct mc_deadline_index *d, size_t want)
{
	struct dl_entry *h;
	size_t cap = d->cap ? d->cap : HEAP_MIN_CAP;

	if (want <= d->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	h = realloc(d->heap, cap * sizeof(*h));
	if (h == NULL)
		return -1;
	d->heap = h;
	d->cap = cap;
	return 0;
}

/*
 * Keep only the live entries (one per registration) and heapify them
 * in place: O(heap), no allocation. A heap that shrank a lot gives
 * memory back; failing to is harmless.
 */
static void
rebuild(struct mc_deadline_index *d)
{
	size_t i, k = 0;

	for (i = 0; i < d->n; i++)
		if (entry_live(d, &d->heap[i]))
			d->heap[k++] = d->heap[i];
	d->n = k;
	for (i = k / 2; i-- > 0;)
		sift_down(d->heap, d->n, i);
	if (d->cap > HEAP_MIN_CAP && d->cap / 4 > d->n) {
		size_t cap = d->n * 2 > HEAP_MIN_CAP ? d->n * 2 : HEAP_MIN_CAP;
		struct dl_entry *h = realloc(d->heap, cap * sizeof(*h));

		if (h != NULL) {
			d->heap = h;
			d->cap = cap;
		}
	}
	d->rebuilds++;
}

static size_t
rebuild_bound(const struct mc_deadline_index *d)
{
	size_t twice = d->regs.count * 2;

	return twice > MC_DEADLINE_REBUILD_FLOOR ? twice : MC_DEADLINE_REBUILD_FLOOR;
}

static struct dl_reg *
reg_alloc(struct mc_deadline_index *d)
{
	struct dl_reg *r;

	if (d->free_regs == NULL) {
		struct dl_slab *s = malloc(sizeof(*s));
		size_t i;

		if (s == NULL)
			return NULL;
		s->next = d->slabs;
		d->slabs = s;
		for (i = 0; i < SLAB_REGS; i++) {
			s->regs[i].next_free = d->free_regs;
			d->free_regs = &s->regs[i];
		}
	}
	r = d->free_regs;
	d->free_regs = r->next_free;
	return r;
}

static void
reg_release(struct mc_deadline_index *d, struct dl_reg *r)
{
	r->next_free = d->free_regs;
	d->free_regs = r;
}

struct mc_deadline_index *
mc_deadline_new(void)
{
	struct mc_deadline_index *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	mc_htab_init(&d->regs);
	return d;
}

static void
free_slabs(struct mc_deadline_index *d)
{
	while (d->slabs != NULL) {
		struct dl_slab *s = d->slabs;

		d->slabs = s->next;
		free(s);
	}
	d->free_regs = NULL;
}

void
mc_deadline_free(struct mc_deadline_index *d)
{
	if (d == NULL)
		return;
	free_slabs(d);
	mc_htab_free(&d->regs);
	free(d->heap);
	free(d);
}

void
mc_deadline_clear(struct mc_deadline_index *d)
{
	free_slabs(d);
	mc_htab_free(&d->regs);
	free(d->heap);
	d->heap = NULL;
	d->n = 0;
	d->cap = 0;
}

int
mc_deadline_set(struct mc_deadline_index *d, uint64_t id, uint64_t deadline)
{
	struct dl_reg *r = find_reg(d, id);
	struct dl_entry e;

	/* the live entry already says exactly this */
	if (r != NULL && r->deadline == deadline)
		return 0;
	/* room first, so a failure leaves the index as it was */
	if (heap_reserve(d, d->n + 1) < 0)
		return -1;
	if (r == NULL) {
		r = reg_alloc(d);
		if (r == NULL)
			return -1;
		r->id = id;
		if (mc_htab_insert(&d->regs, id_hash(id), r) < 0) {
			reg_release(d, r);
			return -1;
		}
	}
	r->gen = ++d->next_gen;
	r->deadline = deadline;
	e.deadline = deadline;
	e.id = id;
	e.gen = r->gen;
	d->heap[d->n] = e;
	sift_up(d->heap, d->n);
	d->n++;
	if (d->n > rebuild_bound(d))
		rebuild(d);
	return 0;
}

void
mc_deadline_remove(struct mc_deadline_index *d, uint64_t id)
{
	struct dl_reg *r = mc_htab_remove(&d->regs, id_hash(id), reg_eq, &id);

	if (r != NULL)
		reg_release(d, r);
}

bool
mc_deadline_get(const struct mc_deadline_index *d, uint64_t id, uint64_t *deadline)
{
	const struct dl_reg *r = find_reg(d, id);

	if (r == NULL)
		return false;
	if (deadline != NULL)
		*deadline = r->deadline;
	return true;
}

bool
mc_deadline_pop_due(struct mc_deadline_index *d, uint64_t now, uint64_t *id, uint64_t *deadline)
{
	while (d->n > 0 && d->heap[0].deadline <= now) {
		struct dl_entry e = d->heap[0];
		struct dl_reg *r;

		heap_pop_top(d);
		r = find_reg(d, e.id);
		if (r == NULL || r->gen != e.gen)
			continue; /* stale: updated or removed since */
		mc_htab_remove(&d->regs, id_hash(e.id), reg_eq, &e.id);
		reg_release(d, r);
		if (id != NULL)
			*id = e.id;
		if (deadline != NULL)
			*deadline = e.deadline;
		return true;
	}
	return false;
}

/*
 * visit's frontier: a min-heap of heap indices ordered by their entries.
 * The next entry in order is always the smallest index in the frontier,
 * whose children join it when it is taken; so k entries cost O(k log k)
 * and the index itself is only read.
 */
struct frontier {
	const struct dl_entry *heap;
	size_t *idx;
	size_t n, cap;
	size_t local[64];
};

static int
frontier_push(struct frontier *f, size_t v)
{
	size_t i;

	if (f->n == f->cap) {
		size_t cap = f->cap * 2, *p;

		if (f->idx == f->local) {
			p = malloc(cap * sizeof(*p));
			if (p != NULL)
				memcpy(p, f->local, f->n * sizeof(*p));
		} else {
			p = realloc(f->idx, cap * sizeof(*p));
		}
		if (p == NULL)
			return -1;
		f->idx = p;
		f->cap = cap;
	}
	i = f->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!entry_less(&f->heap[v], &f->heap[f->idx[p]]))
			break;
		f->idx[i] = f->idx[p];
		i = p;
	}
	f->idx[i] = v;
	return 0;
}

static size_t
frontier_pop(struct frontier *f)
{
	size_t top = f->idx[0], v, i = 0;

	v = f->idx[--f->n];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= f->n)
			break;
		if (c + 1 < f->n && entry_less(&f->heap[f->idx[c + 1]], &f->heap[f->idx[c]]))
			c++;
		if (!entry_less(&f->heap[f->idx[c]], &f->heap[v]))
			break;
		f->idx[i] = f->idx[c];
		i = c;
	}
	if (f->n > 0)
		f->idx[i] = v;
	return top;
}

/* 0 when done, fn's non-zero value when it stopped, -1 when out of memory. */
int
mc_deadline_visit(const struct mc_deadline_index *d, uint64_t until, size_t limit,
		  mc_deadline_visit_fn fn, void *arg)
{
	struct frontier f;
	size_t seen = 0;
	int rc = 0;

	f.heap = d->heap;
	f.idx = f.local;
	f.n = 0;
	f.cap = sizeof(f.local) / sizeof(f.local[0]);
	if (d->n > 0 && frontier_push(&f, 0) < 0)
		return -1;
	while (f.n > 0 && (limit == 0 || seen < limit)) {
		size_t i = frontier_pop(&f);
		const struct dl_entry *e = &d->heap[i];

		if (e->deadline > until)
			break;
		if ((2 * i + 1 < d->n && frontier_push(&f, 2 * i + 1) < 0) ||
		    (2 * i + 2 < d->n && frontier_push(&f, 2 * i + 2) < 0)) {
			rc = -1;
			break;
		}
		if (!entry_live(d, e))
			continue;
		seen++;
		rc = fn(e->id, e->deadline, arg);
		if (rc != 0)
			break;
	}
	if (f.idx != f.local)
		free(f.idx);
	return rc;
}

void
mc_deadline_stats(const struct mc_deadline_index *d, struct mc_deadline_stats *out)
{
	out->heap = d->n;
	out->live = d->regs.count;
	out->rebuilds = d->rebuilds;
}
