/*
 * The door of the master's state: each call changes the store, then
 * builds one record of the change and hands it to every subscriber in
 * the order they subscribed.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "master.h"
#include "state.h"
#include "store.h"
#include "mmetrics.h"

/* Cooldowns the table holds at most: far more objects cool at once than a round evicts. */
#define COOLDOWN_ENTRIES 16384

#define STATE_KIND_NAME(k, name) name,
static const char *const kind_names[STATE_KIND_COUNT] = { STATE_CHANGE_KINDS(STATE_KIND_NAME) };
#undef STATE_KIND_NAME

const char *
state_kind_name(enum state_change_kind kind)
{
	return kind < STATE_KIND_COUNT ? kind_names[kind] : "unknown";
}

uint64_t
state_count(const struct master *m, enum state_change_kind kind)
{
	return m->state != NULL && kind < STATE_KIND_COUNT ? m->state->counts[kind] : 0;
}

struct state_obj
state_obj_of(const struct mobj *o)
{
	struct state_obj f;

	memset(&f, 0, sizeof(f));
	f.version = o->version;
	f.size = o->size;
	f.checksum = o->checksum;
	f.committed = o->committed;
	f.lease_deadline = o->lease_deadline;
	f.sp_deadline = o->sp_deadline;
	f.sp_ttl = o->sp_ttl;
	f.type = o->type;
	f.sp_mode = o->sp_mode;
	f.hard_pin = o->hard_pin;
	return f;
}

static bool
obj_same(const struct state_obj *a, const struct state_obj *b)
{
	return a->version == b->version && a->size == b->size && a->checksum == b->checksum &&
	       a->committed == b->committed && a->lease_deadline == b->lease_deadline &&
	       a->sp_deadline == b->sp_deadline && a->sp_ttl == b->sp_ttl && a->type == b->type &&
	       a->sp_mode == b->sp_mode && a->hard_pin == b->hard_pin;
}

static bool
rep_same(const struct mrep *a, const struct mrep *b)
{
	return a->version == b->version && a->id == b->id && a->peer == b->peer &&
	       a->tier == b->tier && a->state == b->state && a->dynamic == b->dynamic &&
	       a->mark == b->mark && a->ended == b->ended && a->written == b->written &&
	       a->moving == b->moving;
}

/* Every field but the size, which moves the store's totals (store_resize). */
static void
obj_apply(struct mobj *o, const struct state_obj *f)
{
	o->version = f->version;
	o->checksum = f->checksum;
	o->committed = f->committed;
	o->lease_deadline = f->lease_deadline;
	o->sp_deadline = f->sp_deadline;
	o->sp_ttl = f->sp_ttl;
	o->type = f->type;
	o->sp_mode = f->sp_mode & 3;
	o->hard_pin = f->hard_pin;
}

/* A record about o, with its fields now as both before and after. */
static void
record_of(struct state_change *c, enum state_change_kind kind, const struct store *s,
	  const struct mobj *o)
{
	const struct group *g = o != NULL ? store_group_get((struct store *)s, o->group) : NULL;

	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->o = o;
	if (o == NULL)
		return;
	c->tenant = o->tenant;
	c->key = o->key;
	c->key_len = o->key_len;
	if (g != NULL) {
		c->group = g->name;
		c->group_len = g->name_len;
	}
	c->was = c->now = state_obj_of(o);
}

/* Count one change of kind; a master put together by hand (a unit test) may have no door. */
static void
count(struct master *m, enum state_change_kind kind)
{
	if (m->state != NULL)
		m->state->counts[kind]++;
}

/* Whether r is a readable dynamic replica: what state_dynamic_replicas counts. */
static bool
live_dynamic(const struct mrep *r)
{
	return r->dynamic && r->state == REP_COMPLETE;
}

/* Keep the count of readable dynamic replicas as one goes from was to now. */
static void
count_dynamic(struct master *m, const struct mrep *was, const struct mrep *now)
{
	if (m->state == NULL)
		return;
	m->state->dynamic_replicas +=
		(was == NULL || !live_dynamic(was)) && now != NULL && live_dynamic(now);
	m->state->dynamic_replicas -=
		was != NULL && live_dynamic(was) && (now == NULL || !live_dynamic(now));
}

static void
tell(struct master *m, const struct state_change *c)
{
	struct state *st = m->state;

	count(m, c->kind);
	if (st == NULL)
		return;
	for (unsigned i = 0; i < st->nsubs; i++)
		st->subs[i].fn(c, st->subs[i].arg);
}

int
state_subscribe(struct master *m, state_fn fn, void *arg)
{
	struct state *st = m->state;

	if (st == NULL || st->nsubs == STATE_SUBSCRIBERS_MAX)
		return -1;
	st->subs[st->nsubs].fn = fn;
	st->subs[st->nsubs++].arg = arg;
	return 0;
}

void
state_unsubscribe(struct master *m, state_fn fn, void *arg)
{
	struct state *st = m->state;

	for (unsigned i = 0; st != NULL && i < st->nsubs; i++)
		if (st->subs[i].fn == fn && st->subs[i].arg == arg) {
			memmove(&st->subs[i], &st->subs[i + 1],
				(st->nsubs - i - 1) * sizeof(st->subs[0]));
			st->nsubs--;
			return;
		}
}

/*
 * Whether anyone reads the records: when nobody does, a change on the
 * read path (a lease) is counted and made without building one.
 */
static bool
recording(const struct master *m)
{
	return m->state != NULL && m->state->nsubs > 0;
}

/* ---- the built-in subscriber ---- */

static const char *
rep_state_name(int state)
{
	return state == REP_COMPLETE ? "complete" : "processing";
}

static const char *
sp_name(int mode)
{
	return mode == SP_ACTIVE ? "active" : mode == SP_PENDING ? "pending" : "disabled";
}

/*
 * One line per change, "state: KIND TENANT/KEY field=value ...": the
 * fields after the change (a drop: the ones that went).
 */
static void
log_change(const struct state_change *c, void *arg)
{
	const struct master *m = arg;
	const char *kind = state_kind_name(c->kind);
	const char *tenant =
		c->tenant < m->store->ntenants ? m->store->tenants[c->tenant].name : "?";
	int klen = (int)c->key_len, glen = c->group != NULL ? (int)c->group_len : 1;
	const char *group = c->group != NULL ? c->group : "-";
	const struct state_obj *f = c->kind == STATE_OBJECT_DROP ? &c->was : &c->now;
	const struct mrep *r = c->kind == STATE_REPLICA_DROP ? &c->rep_was : &c->rep;

	switch (c->kind) {
	case STATE_OBJECT_CREATE:
	case STATE_OBJECT_SET:
	case STATE_OBJECT_DROP:
		mc_debug("state: %s %s/%.*s version=%llu size=%llu checksum=%llu type=%s "
			 "group=%.*s hard_pin=%d committed=%llu lease=%llu sp=%s sp_deadline=%llu "
			 "sp_ttl=%llu",
			 kind, tenant, klen, c->key, (unsigned long long)f->version,
			 (unsigned long long)f->size, (unsigned long long)f->checksum,
			 store_type_name(m->store, f->type), glen, group, f->hard_pin,
			 (unsigned long long)f->committed, (unsigned long long)f->lease_deadline,
			 sp_name(f->sp_mode), (unsigned long long)f->sp_deadline,
			 (unsigned long long)f->sp_ttl);
		break;
	case STATE_REPLICA_ADD:
	case STATE_REPLICA_SET:
	case STATE_REPLICA_DROP:
		mc_debug("state: %s %s/%.*s rep=%u peer=%u tier=%s state=%s version=%llu "
			 "dynamic=%d moving=%d ended=%d written=%d was=%s/%s/%u",
			 kind, tenant, klen, c->key, r->id, r->peer, mc_tier_name(r->tier),
			 rep_state_name(r->state), (unsigned long long)r->version, r->dynamic,
			 r->moving, r->ended, r->written, rep_state_name(c->rep_was.state),
			 mc_tier_name(c->rep_was.tier), c->rep_was.peer);
		break;
	case STATE_WRITE_BEGIN:
	case STATE_WRITE_END:
		mc_debug("state: %s %s/%.*s version=%llu size=%llu", kind, tenant, klen, c->key,
			 (unsigned long long)c->write_version, (unsigned long long)c->write_size);
		break;
	case STATE_GROUP_CREATE:
	case STATE_GROUP_DROP:
		mc_debug("state: %s %s/%.*s", kind, tenant, glen, group);
		break;
	case STATE_PIN_SET:
		mc_debug("state: %s %s/%.*s sp=%s sp_deadline=%llu sp_ttl=%llu was=%s", kind,
			 tenant, klen, c->key, sp_name(f->sp_mode),
			 (unsigned long long)f->sp_deadline, (unsigned long long)f->sp_ttl,
			 sp_name(c->was.sp_mode));
		break;
	case STATE_LEASE_SET:
		mc_debug("state: %s %s/%.*s lease=%llu", kind, tenant, klen, c->key,
			 (unsigned long long)f->lease_deadline);
		break;
	case STATE_COPY_LEASE:
		mc_debug("state: %s %s/%.*s id=%llu %s src=%u dst=%u version=%llu expiry=%llu "
			 "domain=%s proposal=%s%s%s",
			 kind, tenant, klen, c->key != NULL ? c->key : "",
			 (unsigned long long)c->lease->id, c->lease->live ? "live" : "ended",
			 c->lease->src, c->lease->dst, (unsigned long long)c->lease->version,
			 (unsigned long long)c->lease->expiry, c->lease->domain, c->lease->proposal,
			 c->lease->outcome != NULL ? " outcome=" : "",
			 c->lease->outcome != NULL ? c->lease->outcome : "");
		break;
	case STATE_COOLDOWN_SET:
		mc_debug("state: %s %s/%.*s domain=%s until=%llu", kind, tenant, klen, c->key,
			 c->domain, (unsigned long long)c->until);
		break;
	default:
		mc_debug("state: %s", kind);
		break;
	}
}

static void
collect(struct mc_metrics *r, void *arg)
{
	const struct state *st = arg;

	for (int k = 0; k < STATE_KIND_COUNT; k++) {
		struct mc_metric *s = mc_metric_get(
			r, "mc_state_changes_total", MC_COUNTER,
			"Changes to objects, replicas, groups, pins and leases, by kind.", "kind",
			kind_names[k]);

		if (s != NULL)
			mc_metric_set(s, (double)st->counts[k]);
	}
}

int
state_init(struct master *m, struct mc_err *err)
{
	struct state *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	if (cooldowns_init(&st->cooldowns, COOLDOWN_ENTRIES, err) != 0) {
		free(st);
		return -1;
	}
	m->state = st;
	/*
	 * The door counts every change itself; the debug lines are a
	 * subscriber only at --log-level debug, so that otherwise a read's
	 * lease builds no record at all.
	 */
	if (mc_log_enabled(MC_LOG_DEBUG))
		state_subscribe(m, log_change, m);
	if (m->mx->reg != NULL)
		mc_metrics_on_collect(m->mx->reg, collect, st);
	return 0;
}

void
state_free(struct master *m)
{
	if (m->state != NULL)
		cooldowns_free(&m->state->cooldowns);
	free(m->state);
	m->state = NULL;
}

/* ---- objects ---- */

static struct mobj *
create(struct store *s, uint64_t hash, uint32_t tenant, const char *key, size_t len,
       const char *group, size_t group_len, const struct state_obj *f, struct mc_err *err)
{
	struct mobj *o = store_create(s, hash, tenant, key, len, f->size, group, group_len, err);

	if (o != NULL)
		obj_apply(o, f);
	return o;
}

struct mobj *
state_object_create(struct master *m, uint64_t hash, uint32_t tenant, const char *key, size_t len,
		    const char *group, size_t group_len, const struct state_obj *f,
		    struct mc_err *err)
{
	struct mobj *o = create(m->store, hash, tenant, key, len, group, group_len, f, err);
	const struct group *g;
	struct state_change c;

	if (o == NULL)
		return NULL;
	/* a group is made by its first member */
	if ((g = store_group_get(m->store, o->group)) != NULL && g->n == 1) {
		record_of(&c, STATE_GROUP_CREATE, m->store, o);
		tell(m, &c);
	}
	record_of(&c, STATE_OBJECT_CREATE, m->store, o);
	memset(&c.was, 0, sizeof(c.was));
	tell(m, &c);
	return o;
}

void
state_object_set(struct master *m, struct mobj *o, const struct state_obj *f)
{
	struct state_change c;

	record_of(&c, STATE_OBJECT_SET, m->store, o);
	if (f->size != o->size)
		store_resize(m->store, o, f->size);
	obj_apply(o, f);
	c.now = state_obj_of(o);
	if (!obj_same(&c.was, &c.now))
		tell(m, &c);
}

void
state_object_drop(struct master *m, struct mobj *o, size_t *cursor)
{
	const struct group *g = store_group_get(m->store, o->group);
	struct state_change c;

	/* told while o is whole: what goes with it first, then o, then its group */
	if (o->writing)
		state_write_end(m, o);
	while (o->nrep > 0)
		state_replica_drop(m, o, o->nrep - 1u);
	record_of(&c, STATE_OBJECT_DROP, m->store, o);
	memset(&c.now, 0, sizeof(c.now));
	tell(m, &c);
	if (g != NULL && g->n == 1) {
		record_of(&c, STATE_GROUP_DROP, m->store, o);
		tell(m, &c);
	}
	if (cursor != NULL) {
		/* inside a walk only the cursor may unlink, or the walk skips entries */
		mc_htab_remove_at(&m->store->objects, cursor);
		store_destroy_unlinked(m->store, o);
	} else {
		store_destroy(m->store, o);
	}
}

/* ---- writes in progress ---- */

struct pending *
state_write_begin(struct master *m, struct mobj *o, const struct pending *w, struct mc_err *err)
{
	struct pending *p = store_pending_new(m->store, o, err);
	struct state_change c;

	if (p == NULL)
		return NULL;
	*p = *w;
	p->o = o;
	record_of(&c, STATE_WRITE_BEGIN, m->store, o);
	c.write_version = p->version;
	c.write_size = p->size;
	tell(m, &c);
	return p;
}

void
state_write_end(struct master *m, struct mobj *o)
{
	const struct pending *p = store_pending_get(m->store, o);
	struct state_change c;

	if (p == NULL)
		return;
	record_of(&c, STATE_WRITE_END, m->store, o);
	c.write_version = p->version;
	c.write_size = p->size;
	store_pending_del(m->store, o);
	tell(m, &c);
}

/* ---- replicas ---- */

struct mrep *
state_replica_add(struct master *m, struct mobj *o, const struct mrep *r)
{
	struct mrep *n = store_rep_add(o);
	struct state_change c;

	if (n == NULL)
		return NULL;
	*n = *r;
	count_dynamic(m, NULL, n);
	record_of(&c, STATE_REPLICA_ADD, m->store, o);
	c.rep = *n;
	tell(m, &c);
	return n;
}

void
state_replica_set(struct master *m, struct mobj *o, struct mrep *r, const struct mrep *to)
{
	struct state_change c;

	record_of(&c, STATE_REPLICA_SET, m->store, o);
	c.rep_was = *r;
	*r = *to;
	c.rep = *r;
	count_dynamic(m, &c.rep_was, r);
	if (!rep_same(&c.rep_was, &c.rep))
		tell(m, &c);
}

void
state_replica_drop(struct master *m, struct mobj *o, unsigned i)
{
	struct state_change c;

	if (i >= o->nrep)
		return;
	record_of(&c, STATE_REPLICA_DROP, m->store, o);
	c.rep_was = obj_reps(o)[i];
	count_dynamic(m, &c.rep_was, NULL);
	store_rep_del(o, i);
	tell(m, &c);
}

/* ---- pins and leases ---- */

void
state_pin_set(struct master *m, struct mobj *o, int mode, uint64_t deadline, uint64_t ttl)
{
	struct state_change c;

	if (!recording(m)) {
		bool changed = o->sp_mode != ((uint8_t)mode & 3) || o->sp_deadline != deadline ||
			       o->sp_ttl != ttl;

		o->sp_mode = (uint8_t)mode & 3;
		o->sp_deadline = deadline;
		o->sp_ttl = ttl;
		if (changed)
			count(m, STATE_PIN_SET);
		return;
	}
	record_of(&c, STATE_PIN_SET, m->store, o);
	o->sp_mode = (uint8_t)mode & 3;
	o->sp_deadline = deadline;
	o->sp_ttl = ttl;
	c.now = state_obj_of(o);
	if (!obj_same(&c.was, &c.now))
		tell(m, &c);
}

void
state_lease_set(struct master *m, struct mobj *o, uint64_t deadline)
{
	struct state_change c;

	if (o->lease_deadline == deadline)
		return;
	if (!recording(m)) {
		o->lease_deadline = deadline;
		count(m, STATE_LEASE_SET);
		return;
	}
	record_of(&c, STATE_LEASE_SET, m->store, o);
	o->lease_deadline = deadline;
	c.now.lease_deadline = deadline;
	tell(m, &c);
}

/* ---- dynamic hot replication ---- */

void
state_cooldown_set(struct master *m, const struct mobj *o, const char *domain, uint64_t until)
{
	struct state_change c;

	if (m->state == NULL)
		return;
	cooldown_put(&m->state->cooldowns,
		     cooldown_hash(store_key_hash(o->tenant, o->key, o->key_len), domain), until);
	record_of(&c, STATE_COOLDOWN_SET, m->store, o);
	c.domain = domain;
	c.until = until;
	tell(m, &c);
}

uint64_t
state_cooldown_until(const struct master *m, const struct mobj *o, const char *domain, uint64_t now)
{
	if (m->state == NULL)
		return 0;
	return cooldown_until(&m->state->cooldowns,
			      cooldown_hash(store_key_hash(o->tenant, o->key, o->key_len), domain),
			      now);
}

uint64_t
state_dynamic_replicas(const struct master *m)
{
	return m->state != NULL ? m->state->dynamic_replicas : 0;
}

const struct cooldowns *
state_cooldowns(const struct master *m)
{
	return m->state != NULL ? &m->state->cooldowns : NULL;
}

void
state_copy_lease(struct master *m, const struct mobj *o, const struct state_copy_lease *l)
{
	struct state_change c;

	record_of(&c, STATE_COPY_LEASE, m->store, o);
	c.lease = l;
	tell(m, &c);
}

/* ---- a whole store at once ---- */

void
state_restored(struct master *m)
{
	struct state_change c;
	size_t cur = 0;
	struct mobj *o;

	record_of(&c, STATE_RESET, m->store, NULL);
	tell(m, &c);
	if (m->state != NULL)
		m->state->dynamic_replicas = 0;
	for (uint32_t i = 1; i < m->store->ngroup_ids; i++) {
		const struct group *g = m->store->group_by_id[i];

		if (g == NULL || g->n == 0)
			continue;
		record_of(&c, STATE_GROUP_CREATE, m->store, g->members[0]);
		tell(m, &c);
	}
	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		const struct mrep *v = obj_creps(o);
		const struct pending *p = store_pending_get(m->store, o);

		record_of(&c, STATE_OBJECT_CREATE, m->store, o);
		memset(&c.was, 0, sizeof(c.was));
		tell(m, &c);
		if (p != NULL) {
			record_of(&c, STATE_WRITE_BEGIN, m->store, o);
			c.write_version = p->version;
			c.write_size = p->size;
			tell(m, &c);
		}
		for (unsigned i = 0; i < o->nrep; i++) {
			count_dynamic(m, NULL, &v[i]);
			record_of(&c, STATE_REPLICA_ADD, m->store, o);
			c.rep = v[i];
			tell(m, &c);
		}
	}
}

struct mobj *
state_load_object(struct store *s, uint64_t hash, uint32_t tenant, const char *key, size_t len,
		  const char *group, size_t group_len, const struct state_obj *f,
		  struct mc_err *err)
{
	return create(s, hash, tenant, key, len, group, group_len, f, err);
}

int
state_load_replica(struct mobj *o, const struct mrep *r)
{
	struct mrep *n = store_rep_add(o);

	if (n == NULL)
		return -1;
	*n = *r;
	return 0;
}

const struct master_module state_module = {
	.name = "the state door",
	.init = state_init,
	.free = state_free,
};
