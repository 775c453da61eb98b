/*
 * Objects, tenants, data types and groups. Only data structure work
 * lives here; what a put or a peer's death means is in ops.c.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/checksum.h"
#include "mc/proto.h"
#include "store.h"
#include "master.h"
#include "recency.h"

struct okey {
	uint32_t tenant;
	size_t len;
	const char *key;
};

struct gkey {
	uint32_t tenant;
	size_t len;
	const char *name;
};

static char *
dup_n(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d == NULL)
		return NULL;
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

int
store_init(struct store *s, struct mc_err *err)
{
	memset(s, 0, sizeof(*s));
	mc_htab_init(&s->objects);
	mc_htab_init(&s->pending);
	mc_htab_init(&s->groups);
	recency_init(&s->rank);
	/* id 0 of each name space is the default, so lookups never miss it. */
	if (store_tenant_intern(s, MC_DEFAULT_TENANT, strlen(MC_DEFAULT_TENANT), err) != 0)
		goto fail;
	if (store_type_intern(s, MC_DEFAULT_TYPE, strlen(MC_DEFAULT_TYPE), err) != 0)
		goto fail;
	s->group_by_id = calloc(1, sizeof(*s->group_by_id));
	if (s->group_by_id == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		goto fail;
	}
	s->ngroup_ids = 1;
	if ((s->hist = mc_history_new(0, err)) == NULL)
		goto fail;
	return 0;
fail:
	store_free(s);
	return -1;
}

static void
group_free(struct group *g)
{
	if (g == NULL)
		return;
	free(g->members);
	free(g->name);
	free(g);
}

void
store_free(struct store *s)
{
	size_t cur = 0;
	struct mobj *o;

	while ((o = mc_htab_next(&s->objects, &cur)) != NULL) {
		if (o->rep_cap > 1)
			free(o->rep.many);
		free(o);
	}
	cur = 0;
	struct pending *p;
	while ((p = mc_htab_next(&s->pending, &cur)) != NULL)
		free(p);
	for (uint32_t i = 0; i < s->ngroup_ids; i++)
		group_free(s->group_by_id[i]);
	free(s->group_by_id);
	free(s->free_group_ids);
	mc_htab_free(&s->objects);
	mc_htab_free(&s->pending);
	mc_htab_free(&s->groups);
	mc_history_free(s->hist);
	recency_free(&s->rank);
	for (uint32_t i = 0; i < s->ntenants; i++)
		free(s->tenants[i].name);
	free(s->tenants);
	for (uint32_t i = 0; i < s->ntypes; i++)
		free(s->types[i]);
	free(s->types);
	memset(s, 0, sizeof(*s));
}

bool
store_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > MC_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

int64_t
store_tenant_find(const struct store *s, const char *name, size_t len)
{
	for (uint32_t i = 0; i < s->ntenants; i++)
		if (strlen(s->tenants[i].name) == len && memcmp(s->tenants[i].name, name, len) == 0)
			return i;
	return -1;
}

int64_t
store_tenant_intern(struct store *s, const char *name, size_t len, struct mc_err *err)
{
	/* Tenants are few and interned once per connection: a scan is enough. */
	int64_t found = store_tenant_find(s, name, len);

	if (found >= 0)
		return found;
	uint32_t cap =
		s->max_tenants != 0 && s->max_tenants < TENANTS_MAX ? s->max_tenants : TENANTS_MAX;

	if (s->ntenants >= cap)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "too many tenants (%u)", cap);
	struct tenant *t = realloc(s->tenants, (s->ntenants + 1) * sizeof(*t));
	if (t == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	s->tenants = t;
	t += s->ntenants;
	memset(t, 0, sizeof(*t));
	t->name = dup_n(name, len);
	if (t->name == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	return s->ntenants++;
}

int64_t
store_type_intern(struct store *s, const char *name, size_t len, struct mc_err *err)
{
	for (uint32_t i = 0; i < s->ntypes; i++)
		if (strlen(s->types[i]) == len && memcmp(s->types[i], name, len) == 0)
			return i;
	if (s->ntypes >= TYPES_MAX)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "too many data types (%u)", TYPES_MAX);
	char **t = realloc(s->types, (s->ntypes + 1) * sizeof(*t));
	if (t == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	s->types = t;
	t[s->ntypes] = dup_n(name, len);
	if (t[s->ntypes] == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	return s->ntypes++;
}

int64_t
store_tenant_type(struct store *s, uint32_t tenant, const char *name, size_t len,
		  struct mc_err *err)
{
	int64_t id = store_type_intern(s, name, len, err);
	struct tenant *t;
	uint64_t bit;

	if (id < 0 || tenant >= s->ntenants)
		return id;
	t = &s->tenants[tenant];
	bit = 1ull << (id % 64);
	if (t->types_used[id / 64] & bit)
		return id;
	if (s->max_types_per_tenant != 0 && t->ntypes >= s->max_types_per_tenant)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "tenant '%s' has %u data types already",
				  t->name, t->ntypes);
	t->types_used[id / 64] |= bit;
	t->ntypes++;
	return id;
}

const char *
store_type_name(const struct store *s, uint32_t id)
{
	return id < s->ntypes ? s->types[id] : MC_DEFAULT_TYPE;
}

struct group *
store_group_get(struct store *s, uint32_t id)
{
	return id != NO_GROUP && id < s->ngroup_ids ? s->group_by_id[id] : NULL;
}

uint64_t
store_key_hash(uint32_t tenant, const char *key, size_t len)
{
	/* The tenant goes into the seed so equal keys of two tenants spread. */
	return mc_hash64(key, len, 0x9e3779b97f4a7c15ull ^ ((uint64_t)tenant << 17));
}

static bool
obj_eq(const void *entry, const void *key)
{
	const struct mobj *o = entry;
	const struct okey *k = key;

	return o->tenant == k->tenant && o->key_len == k->len &&
	       memcmp(o->key, k->key, k->len) == 0;
}

void
store_prefetch(const struct store *s, uint64_t hash)
{
	mc_htab_prefetch(&s->objects, hash);
}

struct mobj *
store_find(const struct store *s, uint64_t hash, uint32_t tenant, const char *key, size_t len)
{
	struct okey k = { tenant, len, key };

	return mc_htab_find(&s->objects, hash, obj_eq, &k);
}

static bool
group_eq(const void *entry, const void *key)
{
	const struct group *g = entry;
	const struct gkey *k = key;

	return g->tenant == k->tenant && g->name_len == k->len &&
	       memcmp(g->name, k->name, k->len) == 0;
}

static struct group *
group_intern(struct store *s, uint32_t tenant, const char *name, size_t len, struct mc_err *err)
{
	struct gkey k = { tenant, len, name };
	uint64_t h = mc_hash64(name, len, 0x51ed27a3u ^ tenant);
	struct group *g = mc_htab_find(&s->groups, h, group_eq, &k);
	uint32_t id;

	if (g != NULL)
		return g;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		goto oom;
	g->name = dup_n(name, len);
	if (g->name == NULL)
		goto oom;
	g->name_len = len;
	g->tenant = tenant;
	/* Room to give the id back later, so dropping never allocates. */
	uint32_t *f = realloc(s->free_group_ids, (s->ngroup_ids + 1) * sizeof(*f));
	if (f == NULL)
		goto oom;
	s->free_group_ids = f;
	if (s->nfree_group_ids > 0) {
		id = s->free_group_ids[--s->nfree_group_ids];
	} else {
		if (s->ngroup_ids == UINT32_MAX) {
			mc_err_set(err, MC_ERR_TOO_LARGE, "too many groups");
			goto fail;
		}
		struct group **v = realloc(s->group_by_id, (s->ngroup_ids + 1) * sizeof(*v));
		if (v == NULL)
			goto oom;
		s->group_by_id = v;
		id = s->ngroup_ids++;
	}
	if (mc_htab_insert(&s->groups, h, g) != 0) {
		s->free_group_ids[s->nfree_group_ids++] = id;
		goto oom;
	}
	g->id = id;
	s->group_by_id[id] = g;
	return g;
oom:
	mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
fail:
	group_free(g);
	return NULL;
}

/* Release a group id, keeping room to do so without allocating later. */
static void
group_drop(struct store *s, struct group *g)
{
	struct gkey k = { g->tenant, g->name_len, g->name };
	uint64_t h = mc_hash64(g->name, g->name_len, 0x51ed27a3u ^ g->tenant);

	mc_htab_remove(&s->groups, h, group_eq, &k);
	s->group_by_id[g->id] = NULL;
	s->free_group_ids[s->nfree_group_ids++] = g->id;
	group_free(g);
}

static int
group_add(struct group *g, struct mobj *o, struct mc_err *err)
{
	if (g->n == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 4;
		struct mobj **v = realloc(g->members, cap * sizeof(*v));
		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		g->members = v;
		g->cap = cap;
	}
	o->group = g->id;
	o->group_idx = g->n;
	g->members[g->n++] = o;
	return 0;
}

static void
group_remove(struct store *s, struct mobj *o)
{
	struct group *g = store_group_get(s, o->group);

	if (g == NULL)
		return;
	/* Swap-remove keeps removal O(1) in large groups. */
	g->members[o->group_idx] = g->members[--g->n];
	g->members[o->group_idx]->group_idx = o->group_idx;
	o->group = NO_GROUP;
	if (g->n == 0)
		group_drop(s, g);
}

struct mobj *
store_create(struct store *s, uint64_t hash, uint32_t tenant, const char *key, size_t len,
	     uint64_t size, const char *group_name, size_t group_len, struct mc_err *err)
{
	struct mobj *o = NULL;
	struct group *g = NULL;

	if (len == 0 || len > MC_KEY_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "key length %zu out of range", len);
		return NULL;
	}
	o = calloc(1, sizeof(*o) + len);
	if (o == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		return NULL;
	}
	o->tenant = tenant;
	o->key_len = (uint16_t)len;
	memcpy(o->key, key, len);
	o->size = size;
	if (group_name != NULL) {
		g = group_intern(s, tenant, group_name, group_len, err);
		if (g == NULL || group_add(g, o, err) != 0)
			goto fail;
	}
	if (mc_htab_insert(&s->objects, hash, o) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		goto fail;
	}
	s->tenants[tenant].objects++;
	/* the put's checks keep these far from 2^64; saturating, a missed one still cannot wrap */
	s->tenants[tenant].bytes = mc_add_sat(s->tenants[tenant].bytes, size);
	s->tenants[tenant].meta_bytes =
		mc_add_sat(s->tenants[tenant].meta_bytes, store_meta_cost(len));
	s->bytes = mc_add_sat(s->bytes, size);
	/* the blocks that name it as parent are orphans no more */
	recency_parent(&s->rank, o, hash, false);
	return o;
fail:
	if (o->group != NO_GROUP)
		group_remove(s, o);
	else if (g != NULL && g->n == 0)
		group_drop(s, g);
	free(o);
	return NULL;
}

void
store_destroy_unlinked(struct store *s, struct mobj *o)
{
	uint64_t objects = s->objects.count;
	struct mobj *p;

	if (s->on_destroy != NULL)
		s->on_destroy(s->on_destroy_ctx, o);
	recency_forget(&s->rank, o);
	/* the blocks that name it as parent become orphans */
	recency_parent(&s->rank, o, store_key_hash(o->tenant, o->key, o->key_len), true);
	/* its value outlives it for a while, if it ever held a version */
	if (o->version != 0)
		mc_history_evicted(
			s->hist, store_key_hash(o->tenant, o->key, o->key_len),
			store_crf(o, s->access_seq, mc_history_half_life(s->hist, objects)),
			o->probation, s->access_seq, objects);
	if (o->parent != 0 && (p = store_find_parent(s, o)) != NULL && p != o && p->children > 0)
		p->children--;
	if (o->writing)
		store_pending_del(s, o);
	group_remove(s, o);
	struct tenant *t = &s->tenants[o->tenant];
	uint64_t meta = store_meta_cost(o->key_len);

	t->objects--;
	t->bytes -= o->size;
	/* a sum that saturated cannot give back exactly: it stops at 0, never wraps */
	t->meta_bytes = t->meta_bytes > meta ? t->meta_bytes - meta : 0;
	s->bytes -= o->size;
	if (o->rep_cap > 1)
		free(o->rep.many);
	free(o);
}

void
store_destroy(struct store *s, struct mobj *o)
{
	struct okey k = { o->tenant, o->key_len, o->key };
	uint64_t h = store_key_hash(o->tenant, o->key, o->key_len);

	mc_htab_remove(&s->objects, h, obj_eq, &k);
	store_destroy_unlinked(s, o);
}

static bool
tenant_eq(const void *entry, const void *key)
{
	return ((const struct mobj *)entry)->tenant == *(const uint32_t *)key;
}

struct mobj *
store_find_parent(const struct store *s, const struct mobj *o)
{
	uint32_t tenant = o->tenant;

	return o->parent != 0 ? mc_htab_find(&s->objects, o->parent, tenant_eq, &tenant) : NULL;
}

double
store_crf(const struct mobj *o, uint64_t seq, double hl)
{
	return mc_lrfu_decay(o->crf, o->access_seq, seq, hl);
}

double
store_worth(const struct mobj *o, uint64_t seq, double hl)
{
	return mc_lrfu_decay(o->worth, o->access_seq, seq, hl);
}

/* o's worth after an access at s->access_seq (o->crf already updated). */
static void
set_worth(struct store *s, struct mobj *o, double hl)
{
	const struct mobj *p = store_find_parent(s, o);

	o->worth = (float)mc_chain_worth(
		o->crf, p != NULL && p != o ? store_worth(p, s->access_seq, hl) : -1);
}

void
store_access(struct store *s, struct mobj *o)
{
	double hl = mc_history_half_life(s->hist, s->objects.count);

	o->crf = (float)mc_lrfu_ref(o->crf, o->access_seq, s->access_seq + 1, hl);
	o->access_seq = ++s->access_seq;
	set_worth(s, o, hl);
	recency_touch(&s->rank, o);
}

void
store_touch(struct store *s, struct mobj *o)
{
	double hl = mc_history_half_life(s->hist, s->objects.count);
	uint64_t seq = ++s->access_seq;

	/* the same values, expressed at the new number: decayed, not referenced */
	o->crf = (float)store_crf(o, seq, hl);
	o->worth = (float)store_worth(o, seq, hl);
	o->access_seq = seq;
	recency_touch(&s->rank, o);
}

void
store_read(struct store *s, struct mobj *o)
{
	store_access(s, o);
	if (o->probation) {
		o->probation = 0;
		recency_flags(&s->rank, o);
	}
	mc_history_ref(s->hist, true, s->objects.count);
	mc_history_read(s->hist, store_key_hash(o->tenant, o->key, o->key_len), s->objects.count);
}

void
store_access_new(struct store *s, struct mobj *o, uint64_t parent)
{
	double hl = mc_history_half_life(s->hist, s->objects.count), crf = 0;
	struct mobj *p;

	o->access_seq = o->created_seq = ++s->access_seq;
	o->probation = !mc_history_take(s->hist, store_key_hash(o->tenant, o->key, o->key_len),
					s->access_seq, s->objects.count, &crf);
	o->crf = (float)(crf + 1);
	o->parent = parent;
	/* out of memory: it is simply never taken for an orphan */
	if (parent != 0)
		(void)recency_child(&s->rank, &s->objects, o);
	if (parent != 0 && ((p = store_find_parent(s, o)) == NULL || p == o)) {
		o->depth = 1;
	} else if (parent != 0) {
		if (p->children != UINT16_MAX)
			p->children++;
		o->depth = p->depth != UINT8_MAX ? p->depth + 1 : UINT8_MAX;
	}
	set_worth(s, o, hl);
	recency_touch(&s->rank, o);
}

void
store_count_miss(struct store *s)
{
	mc_history_ref(s->hist, false, s->objects.count);
}

void
store_resize(struct store *s, struct mobj *o, uint64_t size)
{
	recency_resize(&s->rank, o, size);
	s->tenants[o->tenant].bytes += size - o->size;
	s->bytes += size - o->size;
	o->size = size;
}

/* A replica's flags share one byte: a million objects' replicas stay 24 bytes each. */
_Static_assert(sizeof(struct mrep) == 24, "struct mrep grew");
/* The charge covers what an object holds for sure: itself, its table slot, a recency node. */
_Static_assert(sizeof(struct mobj) + sizeof(struct mc_htab_slot) + sizeof(struct rank_node) <=
		       STORE_OBJECT_OVERHEAD,
	       "struct mobj grew past STORE_OBJECT_OVERHEAD: measure it again");

struct mrep *
store_rep_add(struct mobj *o)
{
	if (o->nrep == 0 && o->rep_cap <= 1) {
		o->rep_cap = 1;
		memset(&o->rep.one, 0, sizeof(o->rep.one));
		o->nrep = 1;
		return &o->rep.one;
	}
	if (o->nrep >= 2 * MC_REPLICAS_MAX)
		return NULL;
	if (o->rep_cap <= 1) {
		/* Leaving the inline slot: move it into a small array. */
		struct mrep *v = malloc(4 * sizeof(*v));
		if (v == NULL)
			return NULL;
		v[0] = o->rep.one;
		o->rep.many = v;
		o->rep_cap = 4;
	} else if (o->nrep == o->rep_cap) {
		struct mrep *v = realloc(o->rep.many, 2 * o->rep_cap * sizeof(*v));
		if (v == NULL)
			return NULL;
		o->rep.many = v;
		o->rep_cap *= 2;
	}
	struct mrep *r = &o->rep.many[o->nrep++];
	memset(r, 0, sizeof(*r));
	return r;
}

void
store_rep_del(struct mobj *o, unsigned i)
{
	struct mrep *v = obj_reps(o);

	if (i >= o->nrep)
		return;
	v[i] = v[--o->nrep];
	/* Back to the inline slot once a single replica is left. */
	if (o->rep_cap > 1 && o->nrep <= 1) {
		struct mrep one = v[0];
		free(v);
		o->rep_cap = 1;
		o->rep.one = one;
	}
}

static uint64_t
ptr_hash(const struct mobj *o)
{
	return mc_hash64(&o, sizeof(o), 0x7a11u);
}

static bool
pending_eq(const void *entry, const void *key)
{
	return ((const struct pending *)entry)->o == key;
}

struct pending *
store_pending_get(const struct store *s, const struct mobj *o)
{
	if (!o->writing)
		return NULL;
	return mc_htab_find(&s->pending, ptr_hash(o), pending_eq, o);
}

struct pending *
store_pending_new(struct store *s, struct mobj *o, struct mc_err *err)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (p == NULL || mc_htab_insert(&s->pending, ptr_hash(o), p) != 0) {
		free(p);
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		return NULL;
	}
	p->o = o;
	o->writing = 1;
	return p;
}

void
store_pending_del(struct store *s, struct mobj *o)
{
	free(mc_htab_remove(&s->pending, ptr_hash(o), pending_eq, o));
	o->writing = 0;
}

static int
store_start(struct master *m, struct mc_err *err)
{
	if (store_init(m->store, err) != 0)
		return -1;
	m->store->max_tenants = m->cfg.max_tenants;
	m->store->max_types_per_tenant = m->cfg.max_types;
	return 0;
}

static void
store_stop(struct master *m)
{
	store_free(m->store);
}

const struct master_module store_module = {
	.name = "the store",
	.init = store_start,
	.free = store_stop,
};
