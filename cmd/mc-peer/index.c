/*
 * Placement index over mc_htab. Entries carry their own hash, so the
 * table's stored hash rejects almost every mismatch before the bytes of
 * tenant and key are compared.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/log.h"

#include "index.h"

/* Seed for the tenant hash, which in turn seeds the key hash. */
#define TENANT_SEED 0x6d632d7065657231ull

struct lookup {
	const char *tenant;
	size_t tlen;
	const char *key;
	size_t klen;
};

static uint64_t
name_hash(const char *tenant, size_t tlen, const char *key, size_t klen)
{
	return mc_hash64(key, klen, mc_hash64(tenant, tlen, TENANT_SEED));
}

static bool
pobj_eq(const void *entry, const void *key)
{
	const struct pobj *o = entry;
	const struct lookup *l = key;

	return o->tenant_len == l->tlen && o->key_len == l->klen &&
	       memcmp(o->name, l->tenant, l->tlen) == 0 &&
	       memcmp(o->name + o->tenant_len, l->key, l->klen) == 0;
}

int
pindex_init(struct pindex *ix, struct arena *a, struct mc_err *err)
{
	memset(ix, 0, sizeof(*ix));
	if (pthread_mutex_init(&ix->mu, NULL) != 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot initialise index lock");
	mc_htab_init(&ix->tab);
	ix->arena = a;
	return 0;
}

static void
pobj_free(struct pindex *ix, struct pobj *o)
{
	if (o->size > 0)
		arena_release(ix->arena, o->off, o->size);
	free(o);
}

void
pindex_destroy(struct pindex *ix)
{
	size_t cur = 0;
	struct pobj *o;

	while ((o = mc_htab_next(&ix->tab, &cur)) != NULL) {
		mc_htab_remove_at(&ix->tab, &cur);
		pobj_free(ix, o);
	}
	mc_htab_free(&ix->tab);
	pthread_mutex_destroy(&ix->mu);
}

struct pobj *
pobj_new(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	 uint64_t version, uint64_t size, uint64_t checksum, uint64_t off)
{
	struct pobj *o;

	if (tlen > UINT16_MAX || klen > UINT16_MAX)
		return NULL;
	o = malloc(sizeof(*o) + tlen + klen);
	if (!o)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->ix = ix;
	o->hash = name_hash(tenant, tlen, key, klen);
	o->version = version;
	o->size = size;
	o->checksum = checksum;
	o->off = off;
	o->last_access = mc_now_ms();
	o->refs = 1;
	o->tier = TIER_DRAM;
	o->tenant_len = (uint16_t)tlen;
	o->key_len = (uint16_t)klen;
	memcpy(o->name, tenant, tlen);
	memcpy(o->name + tlen, key, klen);
	return o;
}

/* Unlink from the table and drop the index's reference; lock held. */
static void
unlink_locked(struct pindex *ix, struct pobj *o)
{
	struct lookup l = { o->name, o->tenant_len, pobj_key(o), o->key_len };

	if (mc_htab_remove(&ix->tab, o->hash, pobj_eq, &l) != o)
		MC_BUG("index entry missing from its table");
	o->linked = false;
	ix->objects--;
	ix->bytes -= o->size;
	if (--o->refs == 0)
		pobj_free(ix, o);
}

int
pindex_publish(struct pindex *ix, struct pobj *o, struct mc_err *err)
{
	struct lookup l = { o->name, o->tenant_len, pobj_key(o), o->key_len };
	struct pobj *old;

	pthread_mutex_lock(&ix->mu);
	old = mc_htab_find(&ix->tab, o->hash, pobj_eq, &l);
	if (old && old->version > o->version) {
		uint64_t have = old->version;

		pthread_mutex_unlock(&ix->mu);
		return mc_err_set(err, MC_ERR_VERSION, "version %llu is older than stored %llu",
				  (unsigned long long)o->version, (unsigned long long)have);
	}
	/* Make room first so that the swap below cannot fail halfway. */
	if (mc_htab_reserve(&ix->tab, ix->tab.count + 1) < 0) {
		pthread_mutex_unlock(&ix->mu);
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot grow the placement index");
	}
	if (old)
		unlink_locked(ix, old);
	if (mc_htab_insert(&ix->tab, o->hash, o) < 0) {
		pthread_mutex_unlock(&ix->mu);
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot insert into the placement index");
	}
	o->linked = true;
	ix->objects++;
	ix->bytes += o->size;
	pthread_mutex_unlock(&ix->mu);
	return 0;
}

struct pobj *
pindex_acquire(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	/* Read the clock outside the lock: a test's fake clock is a file read. */
	uint64_t now = mc_now_ms();
	struct pobj *o;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o) {
		o->refs++;
		o->last_access = now;
	}
	pthread_mutex_unlock(&ix->mu);
	return o;
}

void
pindex_release(struct pindex *ix, struct pobj *o)
{
	pthread_mutex_lock(&ix->mu);
	if (o->refs == 0)
		MC_BUG("index entry released once too often");
	if (--o->refs == 0)
		pobj_free(ix, o);
	pthread_mutex_unlock(&ix->mu);
}

int
pindex_version(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	       uint64_t *version)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	struct pobj *o;
	int found = 0;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o) {
		*version = o->version;
		found = 1;
	}
	pthread_mutex_unlock(&ix->mu);
	return found;
}

int
pindex_drop(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	    bool has_version, uint64_t max_version)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	struct pobj *o;
	int dropped = 0;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o && (!has_version || o->version <= max_version)) {
		unlink_locked(ix, o);
		dropped = 1;
	}
	pthread_mutex_unlock(&ix->mu);
	return dropped;
}

void
pindex_counts(struct pindex *ix, uint64_t *objects, uint64_t *bytes)
{
	pthread_mutex_lock(&ix->mu);
	*objects = ix->objects;
	*bytes = ix->bytes;
	pthread_mutex_unlock(&ix->mu);
}
