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
#include "mc/planner.h"

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

	return pobj_named(o, l->tenant, l->tlen, l->key, l->klen);
}

/* ---- the list of linked entries; lock held ---- */

static void
list_add_before(struct pobj *at, struct pobj *o)
{
	o->prev = at->prev;
	o->next = at;
	at->prev->next = o;
	at->prev = o;
}

static void
list_del(struct pobj *o)
{
	o->prev->next = o->next;
	o->next->prev = o->prev;
	o->prev = o->next = NULL;
}

static struct pobj *
marker_new(void)
{
	struct pobj *m = calloc(1, sizeof(*m));

	if (m)
		m->marker = true;
	return m;
}

/* ---- the worth orders' view of an entry: its id is the pointer ---- */

static struct pobj *
of_id(uint64_t id)
{
	return (struct pobj *)(uintptr_t)id;
}

static uint64_t
id_of(const struct pobj *o)
{
	return (uint64_t)(uintptr_t)o;
}

static uint32_t *
worth_place(void *arg, uint64_t id)
{
	(void)arg;
	return &of_id(id)->wplace;
}

static void
worth_of(void *arg, uint64_t id, double *worth, uint64_t *access_seq)
{
	const struct pobj *o = of_id(id);

	(void)arg;
	*worth = o->worth;
	*access_seq = o->access_seq;
}

static const struct mc_worder_ops worth_ops = { worth_place, worth_of };

int
pindex_init(struct pindex *ix, struct medium *const *media, struct mc_err *err)
{
	memset(ix, 0, sizeof(*ix));
	ix->head = marker_new();
	if (!ix->head)
		return mc_err_errno(err, "cannot allocate the placement index");
	ix->head->prev = ix->head->next = ix->head;
	if (pthread_mutex_init(&ix->mu, NULL) != 0) {
		free(ix->head);
		ix->head = NULL;
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot initialise index lock");
	}
	if (!(ix->hist = mc_history_new(0, err))) {
		pthread_mutex_destroy(&ix->mu);
		free(ix->head);
		ix->head = NULL;
		return -1;
	}
	mc_htab_init(&ix->tab);
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		medium_lru_init(&ix->order[t].probation);
		mc_worder_init(&ix->order[t].worth, &worth_ops, ix);
	}
	ix->media = media;
	ix->gone_max = PINDEX_JOURNAL_MAX;
	ix->gone_max_bytes = PINDEX_JOURNAL_NAME_BYTES;
	return 0;
}

/* ---- the removal journal; lock held ---- */

static void
gone_pop(struct pindex *ix)
{
	struct pgone *g = ix->gone_head;

	ix->gone_head = g->next;
	if (!ix->gone_head)
		ix->gone_tail = NULL;
	ix->ngone--;
	ix->gone_bytes -= (size_t)g->tenant_len + g->key_len;
	free(g);
}

/* Forget the oldest removals until the journal fits its caps. */
static void
gone_fit(struct pindex *ix)
{
	while (ix->gone_head && (ix->ngone > ix->gone_max || ix->gone_bytes > ix->gone_max_bytes)) {
		if (ix->gone_head->seq > ix->gone_lost)
			ix->gone_lost = ix->gone_head->seq;
		gone_pop(ix);
	}
}

static void
gone_add(struct pindex *ix, const struct pobj *o, uint64_t seq)
{
	size_t names = (size_t)o->tenant_len + o->key_len;
	struct pgone *g = NULL;

	if (ix->gone_max > 0)
		g = malloc(sizeof(*g) + names);
	if (!g) {
		/* Not recorded: a delta spanning this removal would lie. */
		ix->gone_lost = seq;
		return;
	}
	g->next = NULL;
	g->seq = seq;
	g->version = o->version;
	g->tenant_len = o->tenant_len;
	g->key_len = o->key_len;
	memcpy(g->name, o->name, names);
	if (ix->gone_tail)
		ix->gone_tail->next = g;
	else
		ix->gone_head = g;
	ix->gone_tail = g;
	ix->ngone++;
	ix->gone_bytes += names;
	gone_fit(ix);
}

void
pindex_journal_limit(struct pindex *ix, size_t max, size_t max_bytes)
{
	pthread_mutex_lock(&ix->mu);
	ix->gone_max = max;
	ix->gone_max_bytes = max_bytes;
	gone_fit(ix);
	pthread_mutex_unlock(&ix->mu);
}

static void
pobj_free(struct pindex *ix, struct pobj *o)
{
	if (o->size > 0)
		medium_release(ix->media[o->tier], o->off, o->size);
	free(o->meta);
	free(o);
}

/*
 * Drop one reference under the lock; true when it was the last and o is
 * gone. An unlinked entry that readers still hold is counted as held on
 * its tier until the last of them lets go.
 */
static bool
unref(struct pindex *ix, struct pobj *o)
{
	uint64_t fp = o->size > 0 ? medium_footprint(ix->media[o->tier], o->size) : 0;

	if (o->refs == 0)
		MC_BUG("index entry released once too often");
	if (--o->refs == 0) {
		if (o->held)
			ix->held[o->tier] -= fp;
		pobj_free(ix, o);
		return true;
	}
	if (!o->linked && !o->held && !o->marker) {
		o->held = true;
		ix->held[o->tier] += fp;
	}
	return false;
}

struct pmeta *
pmeta_new(const char *type, size_t type_len, const char *group, size_t group_len, bool hard_pin,
	  uint64_t sp_deadline)
{
	struct pmeta *pm;

	if (type_len > UINT16_MAX || group_len > UINT16_MAX)
		return NULL;
	pm = malloc(sizeof(*pm) + type_len + group_len);
	if (!pm)
		return NULL;
	pm->sp_deadline = sp_deadline;
	pm->hard_pin = hard_pin;
	pm->dynamic = false;
	pmeta_set_receipt(pm, NULL);
	pm->type_len = (uint16_t)type_len;
	pm->group_len = (uint16_t)group_len;
	if (type_len > 0)
		memcpy(pm->names, type, type_len);
	if (group_len > 0)
		memcpy(pm->names + type_len, group, group_len);
	return pm;
}

void
pmeta_set_receipt(struct pmeta *pm, const unsigned char *receipt)
{
	pm->has_receipt = receipt != NULL;
	if (receipt != NULL)
		memcpy(pm->receipt, receipt, MC_RECEIPT_BYTES);
	else
		memset(pm->receipt, 0, MC_RECEIPT_BYTES);
}

void
pindex_destroy(struct pindex *ix)
{
	size_t cur = 0;
	struct pobj *o;

	/*
	 * The entries go, not their copies: a medium that survives a
	 * restart keeps them sealed for the next start, as after a crash.
	 */
	while ((o = mc_htab_next(&ix->tab, &cur)) != NULL) {
		mc_htab_remove_at(&ix->tab, &cur);
		free(o->meta);
		free(o);
	}
	mc_htab_free(&ix->tab);
	for (int t = 0; t < MC_TIER_COUNT; t++)
		mc_worder_free(&ix->order[t].worth);
	mc_history_free(ix->hist);
	while (ix->gone_head)
		gone_pop(ix);
	free(ix->head);
	ix->head = NULL;
	pthread_mutex_destroy(&ix->mu);
}

struct pobj *
pobj_new(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	 uint64_t version, uint64_t size, uint64_t checksum, int tier, uint64_t off)
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
	o->tier = (uint8_t)tier;
	o->tenant_len = (uint16_t)tlen;
	o->key_len = (uint16_t)klen;
	memcpy(o->name, tenant, tlen);
	memcpy(o->name + tlen, key, klen);
	return o;
}

/* What o takes in its tier's medium (0 for an empty copy). */
static uint64_t
footprint(const struct pindex *ix, const struct pobj *o)
{
	return o->size > 0 ? medium_footprint(ix->media[o->tier], o->size) : 0;
}

/* ---- the candidates' orders; lock held ---- */

/* What only the master may free: a group member, once its notice says so. */
static bool
in_group(const struct pobj *o)
{
	return o->linked && !o->moving && o->meta != NULL && !o->meta->hard_pin &&
	       o->meta->group_len > 0;
}

/* What this peer may free on its own (young or soft-pinned, the plan decides). */
static bool
candidate(const struct pobj *o)
{
	return o->linked && !o->moving && o->meta != NULL && !o->meta->hard_pin &&
	       o->meta->group_len == 0;
}

/*
 * Bring o's place in its tier's orders and sums in line with what it is
 * now; called after anything candidate, in_group, probation, worth or
 * access_seq read changes. A copy that becomes a candidate enters the
 * medium's order at the warm end.
 */
static void
order_update(struct pindex *ix, struct pobj *o)
{
	struct pindex_order *po = &ix->order[o->tier];
	struct medium *m = ix->media[o->tier];
	uint64_t fp = footprint(ix, o);
	bool cand = candidate(o), prob = cand && o->probation, grp = in_group(o);

	if (cand && !o->order.tracked) {
		medium_track(m, &o->order, o->size);
		po->copies++;
		po->bytes += fp;
	} else if (!cand && o->order.tracked) {
		medium_untrack(m, &o->order);
		po->copies--;
		po->bytes -= fp;
	}
	/* no memory to add it: left out, the medium's order still offers it */
	if (cand)
		(void)mc_worder_set(&po->worth, id_of(o), o->worth, o->access_seq);
	else
		mc_worder_remove(&po->worth, id_of(o));
	if (prob && !o->prob.tracked) {
		medium_lru_track(&po->probation, &o->prob, fp);
		po->probation_bytes += fp;
	} else if (!prob && o->prob.tracked) {
		medium_lru_untrack(&po->probation, &o->prob);
		po->probation_bytes -= fp;
	}
	if (grp != o->grouped) {
		if (grp)
			po->grouped_bytes += fp;
		else
			po->grouped_bytes -= fp;
		o->grouped = grp;
	}
}

/* Take o out of the table, the list and its tier's orders. Lock held. */
static void
detach_locked(struct pindex *ix, struct pobj *o)
{
	struct lookup l = { o->name, o->tenant_len, pobj_key(o), o->key_len };

	if (mc_htab_remove(&ix->tab, o->hash, pobj_eq, &l) != o)
		MC_BUG("index entry missing from its table");
	list_del(o);
	o->linked = false;
	order_update(ix, o);
	ix->objects--;
	ix->tier_objects[o->tier]--;
	ix->tier_bytes[o->tier] -= footprint(ix, o);
	ix->bytes -= o->size;
}

/* Unlink from the table; the index's reference becomes the caller's. Lock held. */
static void
unlink_locked(struct pindex *ix, struct pobj *o)
{
	detach_locked(ix, o);
	gone_add(ix, o, ++ix->seq);
}

/* Link o, which must fit (the table reserved). Lock held. */
static void
attach_locked(struct pindex *ix, struct pobj *o)
{
	if (mc_htab_insert(&ix->tab, o->hash, o) < 0)
		MC_BUG("index insert failed after its reserve");
	list_add_before(ix->head, o);
	o->linked = true;
	order_update(ix, o);
	o->seq = ++ix->seq;
	ix->objects++;
	ix->tier_objects[o->tier]++;
	ix->tier_bytes[o->tier] += footprint(ix, o);
	ix->bytes += o->size;
}

/* ---- the kv ranking's history; lock held ---- */

static double
half_life_locked(const struct pindex *ix)
{
	return mc_history_half_life(ix->hist, ix->objects > 0 ? ix->objects : 1);
}

static bool any_eq(const void *entry, const void *key);

/*
 * o's worth after an access now (o->crf already updated): capped below
 * its parent's worth at the same time, as the master and mc-bench sim
 * keep it, so a chain's worths fall from head to tail.
 */
static void
set_worth_locked(struct pindex *ix, struct pobj *o, double hl)
{
	const struct pobj *p =
		o->parent != 0 ? mc_htab_find(&ix->tab, o->parent, any_eq, NULL) : NULL;

	o->worth = (float)mc_chain_worth(
		o->crf, p != NULL && p != o
				? mc_lrfu_decay(p->worth, p->access_seq, ix->access_seq, hl)
				: -1);
}

/*
 * o is written, replacing old (or NULL): an access, and a miss, since
 * its bytes had to be made. A new key resumes its value from its ghost,
 * or starts on probation.
 */
static void
written_locked(struct pindex *ix, struct pobj *o, const struct pobj *old)
{
	double hl = half_life_locked(ix), crf = 0;

	if (old) {
		o->crf = (float)mc_lrfu_ref(old->crf, old->access_seq, ix->access_seq + 1, hl);
		o->created_seq = old->created_seq;
		o->probation = old->probation;
	} else {
		o->probation =
			!mc_history_take(ix->hist, o->hash, ix->access_seq, ix->objects + 1, &crf);
		o->crf = (float)(crf + 1);
		o->created_seq = ix->access_seq + 1;
	}
	o->access_seq = ++ix->access_seq;
	set_worth_locked(ix, o, hl);
	mc_history_ref(ix->hist, false, ix->objects + 1);
}

void
pindex_read(struct pindex *ix, struct pobj *o)
{
	pthread_mutex_lock(&ix->mu);
	o->crf =
		(float)mc_lrfu_ref(o->crf, o->access_seq, ix->access_seq + 1, half_life_locked(ix));
	o->access_seq = ++ix->access_seq;
	set_worth_locked(ix, o, half_life_locked(ix));
	o->probation = false;
	order_update(ix, o);
	mc_history_ref(ix->hist, true, ix->objects);
	mc_history_read(ix->hist, o->hash, ix->objects);
	pthread_mutex_unlock(&ix->mu);
}

void
pindex_evicted(struct pindex *ix, const struct pobj *o)
{
	pthread_mutex_lock(&ix->mu);
	mc_history_evicted(
		ix->hist, o->hash,
		mc_lrfu_decay(o->crf, o->access_seq, ix->access_seq, half_life_locked(ix)),
		o->probation, ix->access_seq, ix->objects);
	pthread_mutex_unlock(&ix->mu);
}

uint64_t
pindex_hash(const char *tenant, size_t tlen, const char *key, size_t klen)
{
	return name_hash(tenant, tlen, key, klen);
}

/* Any linked entry filed under hash (the parent's key is known by its hash alone). */
static bool
any_eq(const void *entry, const void *key)
{
	(void)entry;
	(void)key;
	return true;
}

double
pindex_worth(struct pindex *ix, const struct pobj *o, uint64_t seq, double half_life)
{
	double worth;

	pthread_mutex_lock(&ix->mu);
	worth = mc_lrfu_decay(o->worth, o->access_seq, seq, half_life);
	pthread_mutex_unlock(&ix->mu);
	return worth;
}

void
pindex_history_now(struct pindex *ix, uint64_t *seq, double *half_life)
{
	pthread_mutex_lock(&ix->mu);
	*seq = ix->access_seq;
	*half_life = half_life_locked(ix);
	pthread_mutex_unlock(&ix->mu);
}

double
pindex_probation(struct pindex *ix)
{
	double share;

	pthread_mutex_lock(&ix->mu);
	share = mc_history_probation(ix->hist);
	pthread_mutex_unlock(&ix->mu);
	return share;
}

int
pindex_publish(struct pindex *ix, struct pobj *o, struct pobj **replaced, struct mc_err *err)
{
	struct lookup l = { o->name, o->tenant_len, pobj_key(o), o->key_len };
	struct pobj *old;

	*replaced = NULL;
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
	*replaced = old;
	written_locked(ix, o, old);
	attach_locked(ix, o);
	pthread_mutex_unlock(&ix->mu);
	return 0;
}

int
pindex_swap(struct pindex *ix, struct pobj *old, struct pobj *o, struct mc_err *err)
{
	struct lookup l = { old->name, old->tenant_len, pobj_key(old), old->key_len };

	pthread_mutex_lock(&ix->mu);
	if (!old->linked || mc_htab_find(&ix->tab, old->hash, pobj_eq, &l) != old) {
		pthread_mutex_unlock(&ix->mu);
		return mc_err_set(err, MC_ERR_NOT_FOUND, "the copy was dropped or superseded");
	}
	if (o->version != old->version || o->size != old->size || o->hash != old->hash)
		MC_BUG("a move's copy differs from its source");
	/* The key stays held throughout: no removal for the journal, a new link for deltas. */
	detach_locked(ix, old);
	o->last_access = old->last_access;
	o->committed = old->committed;
	o->access_seq = old->access_seq;
	o->created_seq = old->created_seq;
	o->crf = old->crf;
	o->worth = old->worth;
	o->parent = old->parent;
	o->probation = old->probation;
	attach_locked(ix, o);
	pthread_mutex_unlock(&ix->mu);
	return 0;
}

int
pindex_claim(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	     int tier, bool has_version, uint64_t max_version, struct pobj **out)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	struct pobj *o;
	int r = -1;

	*out = NULL;
	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o && (tier == MC_TIER_NONE || o->tier == tier) &&
	    (!has_version || o->version <= max_version)) {
		r = o->moving ? 0 : 1;
		if (r == 1) {
			o->moving = true;
			o->refs++;
			order_update(ix, o);
			*out = o;
		}
	}
	pthread_mutex_unlock(&ix->mu);
	return r;
}

void
pindex_unclaim(struct pindex *ix, struct pobj *o)
{
	pthread_mutex_lock(&ix->mu);
	o->moving = false;
	/* a move that did not happen: the copy is a candidate again, at the warm end */
	order_update(ix, o);
	pthread_mutex_unlock(&ix->mu);
	pindex_release(ix, o);
}

void
pobj_medium_meta(const struct pobj *o, struct medium_meta *out)
{
	const struct pmeta *pm = o->meta;

	*out = (struct medium_meta){
		.tenant = o->name,
		.tenant_len = o->tenant_len,
		.key = pobj_key(o),
		.key_len = o->key_len,
		.type = pm ? pm->names : "",
		.type_len = pm ? pm->type_len : 0,
		.group = pm ? pm->names + pm->type_len : "",
		.group_len = pm ? pm->group_len : 0,
		.version = o->version,
		.size = o->size,
		.checksum = o->checksum,
		.sp_deadline = pm ? pm->sp_deadline : 0,
		.hard_pin = pm && pm->hard_pin,
		.dynamic = pm && pm->dynamic,
		.receipt = pm && pm->has_receipt ? pm->receipt : NULL,
	};
}

void
pindex_set_meta(struct pindex *ix, struct pobj *o, struct pmeta *meta, uint64_t now)
{
	struct pmeta *was;

	pthread_mutex_lock(&ix->mu);
	was = o->meta;
	o->meta = meta;
	if (o->committed == 0)
		o->committed = now;
	/* a candidate from its first notice on, unless it names a group or a hard pin */
	order_update(ix, o);
	pthread_mutex_unlock(&ix->mu);
	free(was);
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
		medium_touch(ix->media[o->tier], &o->order, o->size);
	}
	pthread_mutex_unlock(&ix->mu);
	return o;
}

bool
pindex_release(struct pindex *ix, struct pobj *o)
{
	bool last;

	pthread_mutex_lock(&ix->mu);
	last = unref(ix, o);
	pthread_mutex_unlock(&ix->mu);
	return last;
}

int
pindex_peek(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	    struct pindex_peek *out)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	struct pobj *o;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o) {
		out->version = o->version;
		out->tier = o->tier;
		out->busy = o->refs > 1 || o->moving;
		out->protected = o->meta == NULL || o->meta->hard_pin || o->meta->group_len > 0;
		out->dynamic = o->meta != NULL && o->meta->dynamic;
		out->size = o->size;
		out->committed = o->committed;
	}
	pthread_mutex_unlock(&ix->mu);
	return o != NULL;
}

uint64_t
pindex_held(struct pindex *ix, int tier)
{
	uint64_t b;

	pthread_mutex_lock(&ix->mu);
	b = ix->held[tier];
	pthread_mutex_unlock(&ix->mu);
	return b;
}

int
pindex_version(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	       uint64_t *version, int *tier)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	struct pobj *o;
	int found = 0;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o) {
		if (version)
			*version = o->version;
		if (tier)
			*tier = o->tier;
		found = 1;
	}
	pthread_mutex_unlock(&ix->mu);
	return found;
}

bool
pindex_committed_at(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
		    size_t klen, uint64_t version)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	const struct pobj *o;
	bool done;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	done = o != NULL && o->version == version && o->meta != NULL;
	pthread_mutex_unlock(&ix->mu);
	return done;
}

struct pobj *
pindex_unlink(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
	      int tier, bool has_version, uint64_t max_version)
{
	struct lookup l = { tenant, tlen, key, klen };
	uint64_t h = name_hash(tenant, tlen, key, klen);
	struct pobj *o;

	pthread_mutex_lock(&ix->mu);
	o = mc_htab_find(&ix->tab, h, pobj_eq, &l);
	if (o && (tier == MC_TIER_NONE || o->tier == tier) &&
	    (!has_version || o->version <= max_version))
		unlink_locked(ix, o);
	else
		o = NULL;
	pthread_mutex_unlock(&ix->mu);
	return o;
}

void
pindex_counts(struct pindex *ix, uint64_t *objects, uint64_t *bytes)
{
	pthread_mutex_lock(&ix->mu);
	*objects = ix->objects;
	*bytes = ix->bytes;
	pthread_mutex_unlock(&ix->mu);
}

uint64_t
pindex_tier_objects(struct pindex *ix, int tier)
{
	uint64_t n;

	pthread_mutex_lock(&ix->mu);
	n = ix->tier_objects[tier];
	pthread_mutex_unlock(&ix->mu);
	return n;
}

void
pindex_tier_load(struct pindex *ix, int tier, uint64_t *copies, uint64_t *bytes)
{
	pthread_mutex_lock(&ix->mu);
	*copies = ix->tier_objects[tier];
	*bytes = ix->tier_bytes[tier];
	pthread_mutex_unlock(&ix->mu);
}

/* ---- changes ---- */

uint64_t
pindex_seq(struct pindex *ix)
{
	uint64_t seq;

	pthread_mutex_lock(&ix->mu);
	seq = ix->seq;
	pthread_mutex_unlock(&ix->mu);
	return seq;
}

void
pindex_journal_trim(struct pindex *ix, uint64_t upto)
{
	pthread_mutex_lock(&ix->mu);
	while (ix->gone_head && ix->gone_head->seq <= upto)
		gone_pop(ix);
	pthread_mutex_unlock(&ix->mu);
}

size_t
pindex_gone_next(struct pindex *ix, uint64_t *after, uint64_t until, struct pindex_gone *out,
		 size_t max, char *buf, size_t cap, bool *lost)
{
	const struct pgone *g;
	size_t n = 0, used = 0;

	pthread_mutex_lock(&ix->mu);
	/* Forgotten oldest first: anything newer than *after gone means a gap. */
	*lost = ix->gone_lost > *after;
	for (g = ix->gone_head; g && g->seq <= *after; g = g->next)
		;
	for (; g && g->seq <= until && n < max; g = g->next) {
		size_t names = (size_t)g->tenant_len + g->key_len;
		struct lookup l = { g->name, g->tenant_len, g->name + g->tenant_len, g->key_len };

		if (names > cap - used)
			break;
		*after = g->seq;
		if (mc_htab_find(&ix->tab, name_hash(l.tenant, l.tlen, l.key, l.klen), pobj_eq, &l))
			continue;
		memcpy(buf + used, g->name, names);
		out[n].version = g->version;
		out[n].tenant_len = g->tenant_len;
		out[n].key_len = g->key_len;
		out[n].name = buf + used;
		used += names;
		n++;
	}
	pthread_mutex_unlock(&ix->mu);
	return n;
}

/* ---- walks ---- */

/*
 * A walk is two markers on the list: `at` just before the next entry to
 * visit, and `end` placed at the tail when the walk began, so that what
 * is linked later (behind end) is never visited and a busy peer cannot
 * keep a walk going forever.
 */
struct pindex_walk {
	struct pindex *ix;
	struct pobj *at;
	struct pobj *end;
	bool over;
};

struct pindex_walk *
pindex_walk_begin(struct pindex *ix, struct mc_err *err)
{
	return pindex_walk_since(ix, 0, err);
}

struct pindex_walk *
pindex_walk_since(struct pindex *ix, uint64_t since, struct mc_err *err)
{
	struct pindex_walk *w = calloc(1, sizeof(*w));
	struct pobj *first;

	if (!w) {
		mc_err_errno(err, "cannot allocate an index walk");
		return NULL;
	}
	w->ix = ix;
	w->at = marker_new();
	w->end = marker_new();
	if (!w->at || !w->end) {
		mc_err_errno(err, "cannot allocate an index walk");
		goto fail;
	}
	pthread_mutex_lock(&ix->mu);
	/*
	 * Entries sit in the order they were linked, each numbered then, so
	 * those linked after since are a tail: find where it starts, from
	 * the end, since a resume's tail is short next to the whole list.
	 */
	first = since == 0 ? ix->head->next : ix->head;
	while (first != ix->head->next && (first->prev->marker || first->prev->seq > since))
		first = first->prev;
	list_add_before(first, w->at);
	list_add_before(ix->head, w->end);
	pthread_mutex_unlock(&ix->mu);
	return w;
fail:
	free(w->at);
	free(w->end);
	free(w);
	return NULL;
}

size_t
pindex_walk_next(struct pindex_walk *w, struct pobj **out, size_t max, size_t max_name_bytes)
{
	struct pindex *ix = w->ix;
	struct pobj *o;
	size_t n = 0, names = 0;

	if (w->over)
		return 0;
	pthread_mutex_lock(&ix->mu);
	while (n < max && names < max_name_bytes) {
		o = w->at->next;
		if (o == w->end) {
			w->over = true;
			break;
		}
		/* Step over o, whatever it is, by moving our marker behind it. */
		list_del(w->at);
		list_add_before(o->next, w->at);
		if (o->marker)
			continue;
		o->refs++;
		out[n++] = o;
		names += (size_t)o->tenant_len + o->key_len;
	}
	pthread_mutex_unlock(&ix->mu);
	return n;
}

bool
pindex_walk_over(struct pindex_walk *w)
{
	struct pindex *ix = w->ix;
	struct pobj *o;

	if (w->over)
		return true;
	/* Over when only markers stand between us and our end. */
	pthread_mutex_lock(&ix->mu);
	for (o = w->at->next; o != w->end && o->marker; o = o->next)
		;
	w->over = o == w->end;
	pthread_mutex_unlock(&ix->mu);
	return w->over;
}

void
pindex_walk_end(struct pindex_walk *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->ix->mu);
	list_del(w->at);
	list_del(w->end);
	pthread_mutex_unlock(&w->ix->mu);
	free(w->at);
	free(w->end);
	free(w);
}

void
pindex_release_many(struct pindex *ix, struct pobj **objs, size_t n)
{
	size_t i;

	pthread_mutex_lock(&ix->mu);
	for (i = 0; i < n; i++) {
		unref(ix, objs[i]);
	}
	pthread_mutex_unlock(&ix->mu);
}

/* ---- the candidates a plan looks at ---- */

void
pindex_order_sums(struct pindex *ix, int tier, struct pindex_order_sums *out)
{
	const struct pindex_order *po = &ix->order[tier];

	pthread_mutex_lock(&ix->mu);
	*out = (struct pindex_order_sums){ .copies = po->copies,
					   .bytes = po->bytes,
					   .probation_bytes = po->probation_bytes,
					   .grouped_bytes = po->grouped_bytes };
	pthread_mutex_unlock(&ix->mu);
}

static struct pobj *
of_order(struct medium_order *mo)
{
	return (struct pobj *)((char *)mo - offsetof(struct pobj, order));
}

static struct pobj *
of_prob(struct medium_order *mo)
{
	return (struct pobj *)((char *)mo - offsetof(struct pobj, prob));
}

/* Take o into the view at hand: a reference, and its mark, so no part takes it twice. */
static void
view_take(struct pobj *o, struct pobj **out, size_t *k)
{
	o->refs++;
	o->in_view = true;
	out[(*k)++] = o;
}

int
pindex_cold(struct pindex *ix, int tier, size_t window, uint64_t allow, struct pobj **out,
	    size_t *n, size_t *beyond, bool *all, struct mc_err *err)
{
	struct pindex_order *po = &ix->order[tier];
	struct medium_offer *offers = NULL;
	uint64_t *lowest = NULL;
	struct medium_order *mo;
	uint64_t rest;
	size_t k = 0, got, worth = mc_plan_window_worth(window);
	long low;

	*n = *beyond = 0;
	*all = true;
	if (window == 0)
		return 0;
	offers = malloc(window * sizeof(*offers));
	lowest = malloc(worth * sizeof(*lowest));
	if (!offers || !lowest)
		goto fail;
	pthread_mutex_lock(&ix->mu);
	/* first, as it alone can fail: nothing is taken yet to give back */
	if ((low = mc_worder_lowest(&po->worth, half_life_locked(ix), worth, lowest)) < 0) {
		pthread_mutex_unlock(&ix->mu);
		goto fail;
	}
	/*
	 * The share keeps the newest run of probationers whose bytes fit in
	 * allow: walking from the oldest, a probationer is beyond it while
	 * it and those newer than it still do not fit.
	 */
	rest = po->probation_bytes;
	for (mo = po->probation.head.warmer; mo != &po->probation.head && rest > allow;
	     mo = mo->warmer) {
		if (k == window) {
			*all = false;
			break;
		}
		view_take(of_prob(mo), out, &k);
		rest -= mo->bytes;
	}
	*beyond = k;
	got = medium_offer(ix->media[tier], offers, window);
	for (size_t i = 0; i < got; i++) {
		struct pobj *o = of_order(offers[i].who);

		if (!o->in_view)
			view_take(o, out, &k);
	}
	for (long i = 0; i < low; i++) {
		struct pobj *o = of_id(lowest[i]);

		if (!o->in_view)
			view_take(o, out, &k);
	}
	for (size_t i = 0; i < k; i++)
		out[i]->in_view = false;
	pthread_mutex_unlock(&ix->mu);
	free(offers);
	free(lowest);
	*n = k;
	return 0;
fail:
	free(offers);
	free(lowest);
	return mc_err_errno(err, "cannot allocate the candidates of a plan");
}
