/*
 * The generic layer of the reference caches: the policy table, the key
 * index, queue accounting and the watermark round. A policy file says
 * only where objects go and which one an eviction removes.
 *
 * An insert that will admit allocates before it changes anything (the
 * entry, its index slot, the policy's reserve), so a failed insert leaves
 * the cache as it was; evictions and ghost drops never allocate.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "refcache_impl.h"

static const struct {
	const char *name;
	const struct rc_ops *ops;
} kinds[MC_REF_COUNT] = {
	[MC_REF_LRU] = { "lru", &mc_rc_lru },
	[MC_REF_FIFO] = { "fifo", &mc_rc_fifo },
	[MC_REF_LFU] = { "lfu", &mc_rc_lfu },
	[MC_REF_LFU_RESTART] = { "lfu-restart", &mc_rc_lfu_restart },
	[MC_REF_S3FIFO] = { "s3fifo", &mc_rc_s3fifo },
	[MC_REF_ARC] = { "arc", &mc_rc_arc },
	[MC_REF_LRU_TEXTBOOK] = { "lru-textbook", &mc_rc_lru_textbook },
	[MC_REF_LRU_LEAF] = { "lru-leaf", &mc_rc_lru_leaf },
};

static const char *const queue_names[RC_NQUEUES] = {
	[RC_CACHE] = "cache", [RC_HEAP] = "cache", [RC_SMALL] = "small",
	[RC_MAIN] = "main",   [RC_T1] = "t1",	   [RC_T2] = "t2",
	[RC_GHOST] = "ghost", [RC_B1] = "b1",	   [RC_B2] = "b2",
};

/* Block ids are often hashes already, but tests and some traces count up. */
#define KEY_SEED 0x6d632d7265666361ULL

static uint64_t
key_hash(uint64_t key)
{
	return mc_hash64(&key, sizeof(key), KEY_SEED);
}

static bool
key_eq(const void *entry, const void *key)
{
	return ((const struct rc_entry *)entry)->key == *(const uint64_t *)key;
}

static struct rc_entry *
find(const struct mc_refcache *c, uint64_t key)
{
	return mc_htab_find(&c->index, key_hash(key), key_eq, &key);
}

const char *
mc_refcache_name(enum mc_refcache_kind k)
{
	if ((unsigned)k >= MC_REF_COUNT)
		return "unknown";
	return kinds[k].name;
}

int
mc_refcache_parse(const char *name)
{
	int k;

	if (name == NULL)
		return -1;
	for (k = 0; k < MC_REF_COUNT; k++)
		if (strcmp(kinds[k].name, name) == 0)
			return k;
	return -1;
}

/*
 * floor(f x capacity) in bytes, except that a product within a relative
 * 1e-12 of a whole number is that number: a fraction written in decimal
 * is held a hair low or high by a double, and 0.29 of 100 must be 29,
 * not 28.
 */
static uint64_t
share(double f, uint64_t capacity)
{
	double x = f * (double)capacity, r = round(x);

	if (fabs(x - r) <= x * 1e-12)
		x = r;
	if (x >= (double)capacity)
		return capacity;
	return (uint64_t)x;
}

/* A cache whose rounds start above trigger bytes and stop at target bytes. */
static struct mc_refcache *
make(enum mc_refcache_kind k, uint64_t capacity, bool on_demand, double high, double low,
     struct mc_err *err)
{
	struct mc_refcache *c;
	int q;

	if ((unsigned)k >= MC_REF_COUNT) {
		mc_err_set(err, MC_ERR_INVALID, "unknown reference policy %d", (int)k);
		return NULL;
	}
	/* used + size stays below 2^64 when both are at most the capacity */
	if (capacity == 0 || capacity > UINT64_MAX / 2) {
		mc_err_set(err, MC_ERR_INVALID, "capacity %llu is out of range",
			   (unsigned long long)capacity);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a reference cache");
		return NULL;
	}
	c->kind = k;
	c->ops = kinds[k].ops;
	c->capacity = capacity;
	if (on_demand || c->ops->at_capacity) {
		c->trigger = capacity;
		c->target = capacity;
	} else {
		c->trigger = share(high, capacity);
		c->target = share(low, capacity);
	}
	c->small_share = share(0.1, capacity);
	mc_htab_init(&c->index);
	for (q = 0; q < RC_NQUEUES; q++)
		c->q[q].head.prev = c->q[q].head.next = &c->q[q].head;
	return c;
}

struct mc_refcache *
mc_refcache_new(enum mc_refcache_kind k, uint64_t capacity, double high, double low,
		struct mc_err *err)
{
	/* written so that NaN fails too */
	if (!(low > 0 && low < high && high <= 1)) {
		mc_err_set(err, MC_ERR_INVALID,
			   "watermarks must satisfy 0 < low < high <= 1 (low %g, high %g)", low,
			   high);
		return NULL;
	}
	return make(k, capacity, false, high, low, err);
}

struct mc_refcache *
mc_refcache_new_on_demand(enum mc_refcache_kind k, uint64_t capacity, struct mc_err *err)
{
	return make(k, capacity, true, 1, 1, err);
}

void
mc_refcache_free(struct mc_refcache *c)
{
	struct rc_entry *e;
	size_t cursor = 0;

	if (c == NULL)
		return;
	while ((e = mc_htab_next(&c->index, &cursor)) != NULL)
		free(e);
	mc_htab_free(&c->index);
	if (c->ops->fini != NULL)
		c->ops->fini(c);
	free(c);
}

void
mc_rc_enter(struct mc_refcache *c, struct rc_entry *e, enum rc_queue q)
{
	struct rc_queue_state *s = &c->q[q];

	if (q != RC_HEAP) {
		e->link.prev = s->head.prev;
		e->link.next = &s->head;
		s->head.prev->next = &e->link;
		s->head.prev = &e->link;
	}
	s->n++;
	s->bytes += e->size;
	e->where = q;
	if (rc_resident(q)) {
		c->st.objects++;
		c->st.bytes += e->size;
	}
}

void
mc_rc_leave(struct mc_refcache *c, struct rc_entry *e)
{
	struct rc_queue_state *s = &c->q[e->where];

	if (e->where == RC_NONE)
		return;
	if (e->where != RC_HEAP) {
		e->link.prev->next = e->link.next;
		e->link.next->prev = e->link.prev;
		e->link.prev = e->link.next = NULL;
	}
	s->n--;
	s->bytes -= e->size;
	if (rc_resident(e->where)) {
		c->st.objects--;
		c->st.bytes -= e->size;
	}
	e->where = RC_NONE;
}

void
mc_rc_move(struct mc_refcache *c, struct rc_entry *e, enum rc_queue q)
{
	mc_rc_leave(c, e);
	mc_rc_enter(c, e, q);
}

void
mc_rc_forget(struct mc_refcache *c, struct rc_entry *e)
{
	mc_rc_leave(c, e);
	mc_htab_remove(&c->index, key_hash(e->key), key_eq, &e->key);
	free(e);
}

void
mc_rc_evict(struct mc_refcache *c, struct rc_entry *e, enum rc_queue ghost)
{
	c->st.evictions++;
	c->st.evicted_bytes += e->size;
	if (ghost == RC_NONE) {
		mc_rc_forget(c, e);
		return;
	}
	mc_rc_move(c, e, ghost);
}

void
mc_rc_unghost(struct mc_refcache *c, struct rc_entry *e, uint64_t size)
{
	mc_rc_leave(c, e);
	e->size = size;
}

void
mc_rc_trim(struct mc_refcache *c, enum rc_queue q, uint64_t bytes)
{
	while (c->q[q].bytes > bytes)
		mc_rc_forget(c, rc_oldest(c, q));
}

void
mc_rc_round(struct mc_refcache *c, uint64_t size)
{
	uint64_t before = c->st.evictions;

	if (c->st.bytes + size <= c->trigger)
		return;
	while (c->st.bytes + size > c->target && c->st.objects > 0)
		c->ops->evict(c);
	if (c->st.evictions != before)
		c->st.rounds++;
}

bool
mc_refcache_present(const struct mc_refcache *c, uint64_t key)
{
	const struct rc_entry *e = find(c, key);

	return e != NULL && rc_resident(e->where);
}

void
mc_refcache_access(struct mc_refcache *c, uint64_t key)
{
	struct rc_entry *e = find(c, key);

	if (e != NULL && rc_resident(e->where))
		c->ops->hit(c, e);
}

int
mc_refcache_insert(struct mc_refcache *c, uint64_t key, uint64_t size, struct mc_err *err)
{
	return mc_refcache_insert_under(c, key, size, false, 0, err);
}

int
mc_refcache_insert_under(struct mc_refcache *c, uint64_t key, uint64_t size, bool has_parent,
			 uint64_t parent, struct mc_err *err)
{
	struct rc_entry *e = find(c, key), *p;

	if (e != NULL && rc_resident(e->where)) {
		c->ops->hit(c, e);
		return 0;
	}
	if (size == 0)
		size = 1;
	if (size > c->capacity)
		return 0;
	if (c->ops->reserve != NULL && c->ops->reserve(c, err) < 0)
		return -1;
	if (e == NULL) {
		e = calloc(1, sizeof(*e));
		if (e == NULL)
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a cache entry");
		e->key = key;
		e->where = RC_NONE;
		if (mc_htab_insert(&c->index, key_hash(key), e) < 0) {
			free(e);
			return mc_err_set(err, MC_ERR_NO_SPACE,
					  "out of memory for the cache index");
		}
	}
	p = has_parent ? find(c, parent) : NULL;
	c->admit_parent = p != NULL && rc_resident(p->where) ? p : NULL;
	c->ops->admit(c, e, size);
	c->admit_parent = NULL;
	c->st.inserts++;
	return 0;
}

void
mc_refcache_stats(const struct mc_refcache *c, struct mc_refcache_stats *out)
{
	*out = c->st;
}

const char *
mc_refcache_queue(const struct mc_refcache *c, uint64_t key)
{
	const struct rc_entry *e = find(c, key);

	if (e != NULL && c->kind == MC_REF_LRU_LEAF)
		return e->where == RC_HEAP ? "leaf" : "inner";
	return e != NULL ? queue_names[e->where] : NULL;
}

double
mc_refcache_arc_p(const struct mc_refcache *c)
{
	return c->kind == MC_REF_ARC ? c->p : -1;
}

/* Walk the list of queue q, checking every link and entry against it. */
static int
check_list(const struct mc_refcache *c, enum rc_queue q, struct mc_err *err)
{
	const struct rc_queue_state *s = &c->q[q];
	const struct rc_link *l;
	size_t n = 0;
	uint64_t bytes = 0;

	for (l = s->head.next; l != &s->head; l = l->next) {
		const struct rc_entry *e = (const struct rc_entry *)l;

		if (l->next->prev != l)
			return mc_err_set(err, MC_ERR_INTERNAL, "queue %d: broken link", (int)q);
		if (e->where != q || find(c, e->key) != e || e->size == 0)
			return mc_err_set(err, MC_ERR_INTERNAL, "queue %d: bad entry %llu", (int)q,
					  (unsigned long long)e->key);
		n++;
		bytes += e->size;
		if (n > c->index.count)
			return mc_err_set(err, MC_ERR_INTERNAL, "queue %d: a cycle", (int)q);
	}
	if (n != s->n || bytes != s->bytes)
		return mc_err_set(err, MC_ERR_INTERNAL,
				  "queue %d: %zu entries of %llu bytes, counted %zu of %llu",
				  (int)q, n, (unsigned long long)bytes, s->n,
				  (unsigned long long)s->bytes);
	return 0;
}

int
mc_refcache_check(const struct mc_refcache *c, struct mc_err *err)
{
	size_t total = 0, objects = 0;
	uint64_t bytes = 0;
	int q;

	if (c->q[RC_NONE].n != 0)
		return mc_err_set(err, MC_ERR_INTERNAL, "an entry is in no queue");
	for (q = RC_NONE + 1; q < RC_NQUEUES; q++) {
		if (q != RC_HEAP && check_list(c, q, err) < 0)
			return -1;
		total += c->q[q].n;
		if (rc_resident(q)) {
			objects += c->q[q].n;
			bytes += c->q[q].bytes;
		}
	}
	if (total != c->index.count)
		return mc_err_set(err, MC_ERR_INTERNAL, "%zu entries queued, %zu indexed", total,
				  c->index.count);
	if (objects != c->st.objects || bytes != c->st.bytes)
		return mc_err_set(err, MC_ERR_INTERNAL, "resident counts disagree with the queues");
	if (c->st.bytes > c->capacity)
		return mc_err_set(err, MC_ERR_INTERNAL, "%llu bytes used over a capacity of %llu",
				  (unsigned long long)c->st.bytes, (unsigned long long)c->capacity);
	if (c->ops->check != NULL)
		return c->ops->check(c, err);
	return 0;
}
