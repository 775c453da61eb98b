/*
 * Free-extent page allocator over offsets (pages.h).
 *
 * Free extents are nodes in a side array (indexes, not pointers, so the
 * array may grow). Each free extent is on the list of its size class; a
 * page-indexed tag array names, at the first and last page of every free
 * extent, the node that covers it. Tags are never cleared: a tag is
 * believed only if the node it names is free and really starts (or ends)
 * at that page, so stale tags inside allocated space are harmless.
 *
 * Size classes: n < 8 pages has its own class; above, each power of two
 * is split into 8 classes, so a class spans at most 1/8 of its lower
 * bound. Allocation rounds the request up to the next class boundary and
 * takes the head of the first non-empty class from there (every member
 * fits); only when that finds nothing does it scan the request's own
 * class for a fit, so a nearly full space still finds the last extent.
 *
 * Node reservation: allocation makes sure the node array can hold one
 * node per free extent plus one per live allocation plus one, which is
 * the most a later free can need, so pages_release never allocates.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mc/checked.h"
#include "mc/log.h"

#include "pages.h"

#define SL_BITS 3
#define SL (1u << SL_BITS)
#define NCLASS (SL + (32 - SL_BITS) * SL)
#define NWORDS ((NCLASS + 63) / 64)
#define NIL UINT32_MAX
/* Page indexes and node indexes are 32-bit; tags store node + 1. */
#define MAX_PAGES PAGES_MAX

struct ext {
	uint32_t start;
	uint32_t npages; /* 0: a spare node, on the spare list via next */
	uint32_t prev, next;
};

struct pages {
	pthread_mutex_t mu;
	uint64_t size;
	uint32_t unit; /* bytes per page: PAGES_SIZE, or a divisor of it */
	uint32_t npages;
	uint32_t *tags;
	size_t tags_bytes;
	struct ext *nodes;
	uint32_t ncap;	/* nodes allocated */
	uint32_t nhigh; /* nodes ever used: [0, nhigh) */
	uint32_t spare;
	uint32_t heads[NCLASS];
	uint64_t bits[NWORDS];
	uint64_t nfree; /* free extents */
	uint64_t nlive; /* live allocations */
	uint64_t used_pages;
};

static unsigned
cls_of(uint32_t n)
{
	unsigned fl;

	if (n < SL)
		return n;
	fl = 31u - (unsigned)__builtin_clz(n);
	return SL + (fl - SL_BITS) * SL + ((n >> (fl - SL_BITS)) - SL);
}

/* The smallest page count in class c. */
static uint64_t
cls_min(unsigned c)
{
	unsigned fl, sl;

	if (c < SL)
		return c;
	fl = (c - SL) / SL + SL_BITS;
	sl = (c - SL) % SL;
	return (uint64_t)(SL + sl) << (fl - SL_BITS);
}

/* First non-empty class >= c, or NCLASS. */
static unsigned
find_from(const struct pages *a, unsigned c)
{
	unsigned w;
	uint64_t m;

	if (c >= NCLASS)
		return NCLASS;
	w = c / 64;
	m = a->bits[w] & (~0ull << (c % 64));
	for (;;) {
		if (m)
			return w * 64 + (unsigned)__builtin_ctzll(m);
		if (++w >= NWORDS)
			return NCLASS;
		m = a->bits[w];
	}
}

static void
list_insert(struct pages *a, uint32_t k)
{
	struct ext *e = &a->nodes[k];
	unsigned c = cls_of(e->npages);

	e->prev = NIL;
	e->next = a->heads[c];
	if (e->next != NIL)
		a->nodes[e->next].prev = k;
	a->heads[c] = k;
	a->bits[c / 64] |= 1ull << (c % 64);
	a->tags[e->start] = k + 1;
	a->tags[e->start + e->npages - 1] = k + 1;
}

static void
list_remove(struct pages *a, uint32_t k)
{
	struct ext *e = &a->nodes[k];
	unsigned c = cls_of(e->npages);

	if (e->prev != NIL)
		a->nodes[e->prev].next = e->next;
	else
		a->heads[c] = e->next;
	if (e->next != NIL)
		a->nodes[e->next].prev = e->prev;
	if (a->heads[c] == NIL)
		a->bits[c / 64] &= ~(1ull << (c % 64));
}

static uint32_t
node_get(struct pages *a)
{
	uint32_t k;

	if (a->spare != NIL) {
		k = a->spare;
		a->spare = a->nodes[k].next;
		return k;
	}
	if (a->nhigh >= a->ncap)
		MC_BUG("page node reservation broken (%u of %u)", a->nhigh, a->ncap);
	return a->nhigh++;
}

static void
node_put(struct pages *a, uint32_t k)
{
	a->nodes[k].npages = 0;
	a->nodes[k].next = a->spare;
	a->spare = k;
}

/* The free node whose extent ends at page p, or NIL. */
static uint32_t
free_ending_at(const struct pages *a, uint32_t p)
{
	uint32_t k = a->tags[p] - 1;
	const struct ext *e;

	if (a->tags[p] == 0 || k >= a->nhigh)
		return NIL;
	e = &a->nodes[k];
	if (e->npages == 0 || (uint64_t)e->start + e->npages - 1 != p)
		return NIL;
	return k;
}

/* The free node whose extent starts at page p, or NIL. */
static uint32_t
free_starting_at(const struct pages *a, uint32_t p)
{
	uint32_t k = a->tags[p] - 1;
	const struct ext *e;

	if (a->tags[p] == 0 || k >= a->nhigh)
		return NIL;
	e = &a->nodes[k];
	if (e->npages == 0 || e->start != p)
		return NIL;
	return k;
}

struct pages *
pages_new(uint64_t size, struct mc_err *err)
{
	return pages_new_unit(size, PAGES_SIZE, err);
}

struct pages *
pages_new_unit(uint64_t size, uint32_t unit, struct mc_err *err)
{
	struct pages *a;
	uint64_t npages;
	unsigned c;

	if (unit < PAGES_MIN_UNIT || unit > PAGES_SIZE || PAGES_SIZE % unit != 0)
		MC_BUG("a page of %u bytes", unit);
	/* The space is whole 4 KiB pages, handed out in units. */
	npages = size / PAGES_SIZE * (PAGES_SIZE / unit);
	if (npages == 0) {
		mc_err_set(err, MC_ERR_INVALID, "a medium needs at least %u bytes", PAGES_SIZE);
		return NULL;
	}
	if (npages > MAX_PAGES) {
		mc_err_set(err, MC_ERR_INVALID, "a medium of %llu pages is too large",
			   (unsigned long long)npages);
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		mc_err_errno(err, "cannot allocate a page allocator");
		return NULL;
	}
	a->tags = MAP_FAILED;
	if (pthread_mutex_init(&a->mu, NULL) != 0) {
		free(a);
		mc_err_set(err, MC_ERR_SYSTEM, "cannot initialise a page allocator lock");
		return NULL;
	}
	a->unit = unit;
	a->npages = (uint32_t)npages;
	a->size = npages * unit;
	/* Tags are touched only at extent boundaries, so map them lazily. */
	a->tags_bytes = (size_t)npages * sizeof(uint32_t);
	a->tags = mmap(NULL, a->tags_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->tags == MAP_FAILED) {
		mc_err_errno(err, "cannot map page tags");
		goto fail;
	}
	a->ncap = 64;
	a->nodes = malloc(a->ncap * sizeof(*a->nodes));
	if (!a->nodes) {
		mc_err_errno(err, "cannot allocate page nodes");
		goto fail;
	}
	for (c = 0; c < NCLASS; c++)
		a->heads[c] = NIL;
	a->spare = NIL;
	a->nhigh = 1;
	a->nodes[0] = (struct ext){ .start = 0, .npages = a->npages };
	list_insert(a, 0);
	a->nfree = 1;
	return a;
fail:
	pages_free(a);
	return NULL;
}

void
pages_free(struct pages *a)
{
	if (!a)
		return;
	if (a->tags != MAP_FAILED)
		munmap(a->tags, a->tags_bytes);
	free(a->nodes);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static int
reserve_nodes(struct pages *a, struct mc_err *err)
{
	uint64_t need = a->nfree + a->nlive + 2;
	uint64_t cap;
	struct ext *n;

	if (need <= a->ncap)
		return 0;
	cap = (uint64_t)a->ncap * 2;
	if (cap < need)
		cap = need;
	if (cap > (uint64_t)MAX_PAGES + 2)
		cap = (uint64_t)MAX_PAGES + 2;
	n = realloc(a->nodes, cap * sizeof(*n));
	if (!n)
		return mc_err_errno(err, "cannot grow page nodes to %llu", (unsigned long long)cap);
	a->nodes = n;
	a->ncap = (uint32_t)cap;
	return 0;
}

/* Smallest member of class c with at least n pages, or NIL. */
static uint32_t
best_in_class(const struct pages *a, unsigned c, uint32_t n)
{
	uint32_t k, best = NIL;

	for (k = a->heads[c]; k != NIL; k = a->nodes[k].next) {
		uint32_t m = a->nodes[k].npages;

		if (m >= n && (best == NIL || m < a->nodes[best].npages)) {
			best = k;
			if (m == n)
				break;
		}
	}
	return best;
}

int
pages_alloc(struct pages *a, uint64_t len, uint64_t *off, struct mc_err *err)
{
	uint64_t want = mc_div_up(len, a->unit);
	uint32_t n, k = NIL, start;
	unsigned c, f;
	struct ext *e;

	if (len == 0 || want > a->npages)
		return mc_err_set(err, MC_ERR_NO_SPACE, "no extent of %llu bytes",
				  (unsigned long long)len);
	n = (uint32_t)want;
	pthread_mutex_lock(&a->mu);
	if (reserve_nodes(a, err) < 0) {
		pthread_mutex_unlock(&a->mu);
		return -1;
	}
	c = cls_of(n);
	f = find_from(a, cls_min(c) == n ? c : c + 1);
	if (f < NCLASS)
		k = a->heads[f];
	else
		k = best_in_class(a, c, n);
	if (k == NIL) {
		pthread_mutex_unlock(&a->mu);
		return mc_err_set(err, MC_ERR_NO_SPACE, "no extent of %llu bytes",
				  (unsigned long long)len);
	}
	e = &a->nodes[k];
	start = e->start;
	list_remove(a, k);
	if (e->npages == n) {
		node_put(a, k);
		a->nfree--;
	} else {
		e->start += n;
		e->npages -= n;
		list_insert(a, k);
	}
	a->nlive++;
	a->used_pages += n;
	pthread_mutex_unlock(&a->mu);
	*off = (uint64_t)start * a->unit;
	return 0;
}

/*
 * The free node whose extent holds pages [s, s + n), or NIL. Recovery
 * takes ranges in ascending order, so the range is nearly always in the
 * free extent that ends the space: that one is looked at first.
 */
static uint32_t
free_holding(const struct pages *a, uint32_t s, uint32_t n)
{
	uint32_t k = free_ending_at(a, a->npages - 1);

	if (k != NIL && a->nodes[k].start <= s)
		return k;
	for (k = 0; k < a->nhigh; k++) {
		const struct ext *e = &a->nodes[k];

		if (e->npages > 0 && e->start <= s &&
		    (uint64_t)s + n <= (uint64_t)e->start + e->npages)
			return k;
	}
	return NIL;
}

/*
 * Take pages [s, s + n) out of free node k, which holds them; the node
 * that holds what is left after them, or NIL. The nodes are reserved.
 */
static uint32_t
take_from(struct pages *a, uint32_t k, uint32_t s, uint32_t n)
{
	struct ext *e = &a->nodes[k];
	uint32_t left = s - e->start, right = e->start + e->npages - (s + n), r = NIL;

	list_remove(a, k);
	if (left > 0) {
		e->npages = left;
		list_insert(a, k);
		if (right > 0) {
			r = node_get(a);
			a->nodes[r] = (struct ext){ .start = s + n, .npages = right };
			list_insert(a, r);
			a->nfree++;
		}
	} else if (right > 0) {
		e->start = s + n;
		e->npages = right;
		list_insert(a, k);
		r = k;
	} else {
		node_put(a, k);
		a->nfree--;
	}
	a->nlive++;
	a->used_pages += n;
	return r;
}

/* The pages of len bytes at off, when they are inside the space; false if not. */
static bool
range_of(const struct pages *a, uint64_t off, uint64_t len, uint32_t *s, uint32_t *n)
{
	uint64_t s64 = off / a->unit, n64 = mc_div_up(len, a->unit);

	if (len == 0 || off % a->unit || s64 + n64 > a->npages)
		return false;
	*s = (uint32_t)s64;
	*n = (uint32_t)n64;
	return true;
}

int
pages_take(struct pages *a, uint64_t off, uint64_t len, struct mc_err *err)
{
	uint32_t s, n, k;

	if (!range_of(a, off, len, &s, &n))
		return mc_err_set(err, MC_ERR_INVALID, "%llu bytes at %llu are outside the space",
				  (unsigned long long)len, (unsigned long long)off);
	pthread_mutex_lock(&a->mu);
	if (reserve_nodes(a, err) < 0) {
		pthread_mutex_unlock(&a->mu);
		return -1;
	}
	if ((k = free_holding(a, s, n)) == NIL) {
		pthread_mutex_unlock(&a->mu);
		return mc_err_set(err, MC_ERR_INVALID, "%llu bytes at %llu are not free",
				  (unsigned long long)len, (unsigned long long)off);
	}
	(void)take_from(a, k, s, n);
	pthread_mutex_unlock(&a->mu);
	return 0;
}

/* A free extent, for the one pass of pages_take_sorted. */
struct fext {
	uint32_t start, npages, k;
};

static int
fext_cmp(const void *x, const void *y)
{
	const struct fext *a = x, *b = y;

	return (a->start > b->start) - (a->start < b->start);
}

int
pages_take_sorted(struct pages *a, struct pages_range *r, size_t n, struct mc_err *err)
{
	struct fext *f;
	size_t nf = 0, j = 0;
	uint32_t s, np, k;

	for (size_t i = 0; i < n; i++)
		r[i].taken = false;
	pthread_mutex_lock(&a->mu);
	if (!(f = malloc((a->nfree + 1) * sizeof(*f)))) {
		pthread_mutex_unlock(&a->mu);
		return mc_err_errno(err, "cannot allocate for %zu ranges", n);
	}
	for (k = 0; k < a->nhigh; k++)
		if (a->nodes[k].npages > 0)
			f[nf++] = (struct fext){ a->nodes[k].start, a->nodes[k].npages, k };
	qsort(f, nf, sizeof(*f), fext_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && r[i].off < r[i - 1].off)
			MC_BUG("pages_take_sorted: ranges out of order");
		if (!range_of(a, r[i].off, r[i].len, &s, &np))
			continue;
		while (j < nf && (uint64_t)f[j].start + f[j].npages <= s)
			j++;
		if (j == nf || f[j].start > s ||
		    (uint64_t)s + np > (uint64_t)f[j].start + f[j].npages)
			continue;
		if (reserve_nodes(a, err) < 0) {
			pthread_mutex_unlock(&a->mu);
			free(f);
			return -1;
		}
		/* What is left after the range is where the next one may be. */
		k = take_from(a, f[j].k, s, np);
		f[j] = (struct fext){ s + np, k == NIL ? 0 : a->nodes[k].npages, k };
		r[i].taken = true;
	}
	pthread_mutex_unlock(&a->mu);
	free(f);
	return 0;
}

void
pages_release(struct pages *a, uint64_t off, uint64_t len)
{
	uint64_t s64 = off / a->unit;
	uint64_t n64 = mc_div_up(len, a->unit);
	uint32_t s, n, left = NIL, right = NIL, k;

	if (len == 0)
		return;
	if (off % a->unit || s64 + n64 > a->npages)
		MC_BUG("page release of %llu bytes at %llu is out of bounds",
		       (unsigned long long)len, (unsigned long long)off);
	s = (uint32_t)s64;
	n = (uint32_t)n64;
	pthread_mutex_lock(&a->mu);
	if (s > 0)
		left = free_ending_at(a, s - 1);
	if ((uint64_t)s + n < a->npages)
		right = free_starting_at(a, s + n);
	if (left != NIL && right != NIL) {
		list_remove(a, left);
		list_remove(a, right);
		a->nodes[left].npages += n + a->nodes[right].npages;
		node_put(a, right);
		list_insert(a, left);
		a->nfree--;
	} else if (left != NIL) {
		list_remove(a, left);
		a->nodes[left].npages += n;
		list_insert(a, left);
	} else if (right != NIL) {
		list_remove(a, right);
		a->nodes[right].start = s;
		a->nodes[right].npages += n;
		list_insert(a, right);
	} else {
		k = node_get(a);
		a->nodes[k].start = s;
		a->nodes[k].npages = n;
		list_insert(a, k);
		a->nfree++;
	}
	a->nlive--;
	a->used_pages -= n;
	pthread_mutex_unlock(&a->mu);
}

uint64_t
pages_capacity(const struct pages *a)
{
	return a->size;
}

uint64_t
pages_used(struct pages *a)
{
	uint64_t u;

	pthread_mutex_lock(&a->mu);
	u = a->used_pages * a->unit;
	pthread_mutex_unlock(&a->mu);
	return u;
}

uint64_t
pages_free_extents(struct pages *a)
{
	uint64_t n;

	pthread_mutex_lock(&a->mu);
	n = a->nfree;
	pthread_mutex_unlock(&a->mu);
	return n;
}

uint64_t
pages_largest_free(struct pages *a)
{
	uint64_t best = 0;
	unsigned c;
	uint32_t k;

	pthread_mutex_lock(&a->mu);
	for (c = NCLASS; c-- > 0;) {
		if (!(a->bits[c / 64] & (1ull << (c % 64))))
			continue;
		for (k = a->heads[c]; k != NIL; k = a->nodes[k].next)
			if (a->nodes[k].npages > best)
				best = a->nodes[k].npages;
		break;
	}
	pthread_mutex_unlock(&a->mu);
	return best * a->unit;
}
