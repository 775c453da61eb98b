/*
 * Object and replica lifecycle across the store and the peer registry.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/receipt.h"
#include "mc/wire.h"
#include "ops.h"
#include "state.h"
#include "lease.h"
#include "peers.h"
#include "softpin.h"
#include "store.h"
#include "tasks.h"

/* Stale writes handled per sweep, so one sweep never stalls the loop long. */
#define SWEEP_PENDING_MAX 4096

/* Every index that names objects forgets one before it is freed. */
static void
object_gone(void *ctx, struct mobj *o)
{
	struct master *m = ctx;

	softpin_forget(m, o);
	lease_forget(m, o);
}

void
ops_notify_committed(struct master *m, const struct mobj *o, uint64_t version, const struct peer *p)
{
	const struct store *s = m->store;
	const struct group *g = o->group != NO_GROUP ? store_group_get(m->store, o->group) : NULL;
	const char *tenant = s->tenants[o->tenant].name;
	struct mc_conn *c = peer_link(p);
	unsigned char receipt[MC_RECEIPT_BYTES];
	/* the version is the object's once committed: its size and checksum are the copies' */
	bool with_receipt = m->receipts_on && o->version == version;
	bool dynamic = false;
	msgpack_packer *pk;

	if (c == NULL)
		return;
	/* the peer drops its dynamic copies rather than demote them */
	for (unsigned i = 0; i < o->nrep; i++)
		dynamic |= obj_creps(o)[i].peer == p->id && obj_creps(o)[i].version == version &&
			   obj_creps(o)[i].dynamic;
	if (with_receipt) {
		struct mc_receipt_of w = {
			.tenant = tenant,
			.tenant_len = strlen(tenant),
			.key = o->key,
			.key_len = o->key_len,
			.version = version,
			.size = o->size,
			.checksum = o->checksum,
		};

		mc_receipt_make(m->receipt_key, &w, receipt);
	}
	pk = mc_conn_begin(c, "committed");
	msgpack_pack_map(pk, 6 + (g != NULL) + with_receipt + dynamic);
	mc_pack_kv_str(pk, "tenant", tenant);
	mc_pack_kv_strn(pk, "key", o->key, o->key_len);
	mc_pack_kv_u64(pk, "version", version);
	mc_pack_kv_str(pk, "type", store_type_name(s, o->type));
	if (g != NULL)
		mc_pack_kv_strn(pk, "group", g->name, g->name_len);
	mc_pack_kv_bool(pk, "hard_pin", o->hard_pin);
	mc_pack_kv_u64(pk, "sp_remaining", softpin_remaining(o, mc_now_ms()));
	if (with_receipt) {
		mc_pack_key(pk, "receipt");
		msgpack_pack_bin(pk, sizeof(receipt));
		msgpack_pack_bin_body(pk, receipt, sizeof(receipt));
	}
	if (dynamic)
		mc_pack_kv_bool(pk, "dynamic", true);
	if (mc_conn_notify(c) != 0)
		mc_warn("cannot send the commit of '%.*s' to peer %u", (int)o->key_len, o->key,
			p->id);
}

void
ops_hook_store(struct master *m)
{
	m->store->on_destroy = object_gone;
	m->store->on_destroy_ctx = m;
}

uint64_t
ops_rep_size(const struct master *m, const struct mobj *o, const struct mrep *r)
{
	const struct pending *p = store_pending_get(m->store, o);

	if (p != NULL && r->version == p->version)
		return p->size;
	return o->size;
}

/* The peer tier r's bytes count on, or NULL when its peer is gone. */
static struct peer_tier *
rep_tier(const struct master *m, const struct mrep *r)
{
	struct peer *peer = peers_find(m->peers, r->peer);

	return peer != NULL ? &peer->tiers[r->tier] : NULL;
}

void
ops_rep_charge(struct master *m, const struct mobj *o, const struct mrep *r)
{
	struct peer_tier *t = rep_tier(m, r);

	if (t != NULL)
		t->used += peer_tier_footprint(t, ops_rep_size(m, o, r));
}

/* r's bytes are moving out of its tier: still there, but going. */
static void
rep_charge_moving(struct master *m, const struct mobj *o, const struct mrep *r)
{
	struct peer_tier *t = rep_tier(m, r);

	if (t != NULL)
		t->moving += peer_tier_footprint(t, ops_rep_size(m, o, r));
}

void
ops_rep_uncharge(struct master *m, const struct mobj *o, const struct mrep *r)
{
	struct peer_tier *t = rep_tier(m, r);
	uint64_t size;

	if (t == NULL)
		return;
	size = peer_tier_footprint(t, ops_rep_size(m, o, r));
	t->used = t->used > size ? t->used - size : 0;
	if (r->moving)
		t->moving = t->moving > size ? t->moving - size : 0;
}

struct mrep *
ops_rep_new(struct master *m, struct mobj *o, uint32_t peer_id, int tier, uint64_t version,
	    uint64_t size)
{
	struct peer *peer = peers_find(m->peers, peer_id);
	struct mrep init, *r;

	memset(&init, 0, sizeof(init));
	init.id = m->store->replica_seq + 1 != 0 ? m->store->replica_seq + 1 : 1;
	init.peer = peer_id;
	init.tier = (uint8_t)tier;
	init.state = REP_PROCESSING;
	init.version = version;
	init.mark = peer != NULL ? peer->mark : 0;
	if ((r = state_replica_add(m, o, &init)) == NULL)
		return NULL;
	m->store->replica_seq = init.id;
	if (peer != NULL)
		peer->tiers[tier].used += peer_tier_footprint(&peer->tiers[tier], size);
	return r;
}

void
ops_rep_complete(struct master *m, struct mobj *o, struct mrep *r)
{
	const struct peer *peer = peers_find(m->peers, r->peer);
	struct mrep to = *r;

	to.state = REP_COMPLETE;
	if (peer != NULL)
		to.mark = peer->mark;
	state_replica_set(m, o, r, &to);
}

/*
 * Whether the peer of r also holds an older replica of o that stays. A
 * drop frees every copy up to its version, so dropping r would take
 * that older, still readable copy with it (a revoked upsert on the same
 * peers). The peer keeps one copy per key: if r's bytes did replace the
 * older ones, reads of the older version fail cleanly on the version
 * check, and the inventory after the next registration drops the rest.
 */
static bool
older_on_peer(const struct mobj *o, const struct mrep *r)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (&v[i] != r && v[i].peer == r->peer && v[i].version < r->version)
			return true;
	return false;
}

void
ops_rep_remove(struct master *m, struct mobj *o, unsigned i, bool notify)
{
	struct mrep *r = &obj_reps(o)[i];
	struct peer *peer = peers_find(m->peers, r->peer);

	ops_rep_uncharge(m, o, r);
	if (peer != NULL && notify && !older_on_peer(o, r))
		peers_queue(m->peers, peer, TASK_DROP, o->tenant, o->key, o->key_len, r->version,
			    MC_TIER_NONE);
	state_replica_drop(m, o, i);
}

void
ops_dynamic_gone(struct master *m, const struct mobj *o, const struct mrep *r)
{
	const struct peer *peer = peers_find(m->peers, r->peer);

	state_cooldown_set(m, o, peer != NULL ? peer->domain : "",
			   mc_add_sat(mc_now_ms(), m->cfg.dr_cooldown));
}

bool
ops_rep_evict(struct master *m, struct mobj *o, unsigned i)
{
	struct mrep *r = &obj_reps(o)[i];
	struct peer *peer = peers_find(m->peers, r->peer);

	if (r->dynamic) {
		/* never demoted: the original still exists; its domain cools instead */
		ops_dynamic_gone(m, o, r);
		ops_rep_remove(m, o, i, true);
		return false;
	}
	if (peer == NULL || !(peer->task_kinds & (1u << TASK_EVICT))) {
		ops_rep_remove(m, o, i, true);
		return false;
	}
	peers_queue(m->peers, peer, TASK_EVICT, o->tenant, o->key, o->key_len, r->version, r->tier);
	if (peer_tier_below(peer, r->tier) == MC_TIER_NONE) {
		/* The peer drops the copy when the task arrives: unroutable from now on. */
		ops_rep_remove(m, o, i, false);
		return false;
	}
	/* Its bytes stay counted until the peer says they moved: placement must not use them. */
	struct mrep to = *r;

	to.moving = 1;
	rep_charge_moving(m, o, r);
	state_replica_set(m, o, r, &to);
	return true;
}

void
ops_obj_erase(struct master *m, struct mobj *o, bool notify, size_t *cursor)
{
	/*
	 * Oldest first: with nothing older left on its peer, each removal
	 * sends its drop (see older_on_peer), so no newer copy is left behind.
	 */
	while (o->nrep > 0) {
		const struct mrep *v = obj_creps(o);
		unsigned oldest = 0;

		for (unsigned i = 1; i < o->nrep; i++)
			if (v[i].version < v[oldest].version)
				oldest = i;
		ops_rep_remove(m, o, oldest, notify);
	}
	state_object_drop(m, o, cursor);
}

void
ops_commit(struct master *m, struct mobj *o)
{
	struct pending *p = store_pending_get(m->store, o);

	if (p == NULL || p->committed)
		return;
	p->committed = true;
	/*
	 * The write's first readable replica: the only moment its soft-pin
	 * action takes effect (later ends find p->committed set).
	 */
	softpin_commit(m, o, p, mc_now_ms());
	struct state_obj f;

	if (p->upsert) {
		/* Older copies go first, while o->size still describes them. */
		for (unsigned i = o->nrep; i-- > 0;)
			if (obj_reps(o)[i].version != p->version)
				ops_rep_remove(m, o, i, true);
		f = state_obj_of(o);
		f.size = p->size;
		f.checksum = p->checksum;
		f.type = p->type;
		f.version = p->version;
		state_object_set(m, o, &f);
		/* a write is a use: the new version counts as just accessed */
		store_access(m->store, o);
		return;
	}
	f = state_obj_of(o);
	f.version = p->version;
	state_object_set(m, o, &f);
}

bool
ops_settle(struct master *m, struct mobj *o, size_t *cursor)
{
	struct pending *p = store_pending_get(m->store, o);

	if (p != NULL) {
		bool processing = false, complete = false;
		const struct mrep *v = obj_creps(o);

		for (unsigned i = 0; i < o->nrep; i++) {
			if (v[i].version != p->version)
				continue;
			if (v[i].state == REP_PROCESSING)
				processing = true;
			else
				complete = true;
		}
		if (complete && !p->committed)
			ops_commit(m, o);
		if (!processing)
			state_write_end(m, o);
	}
	if (o->nrep == 0) {
		ops_obj_erase(m, o, false, cursor);
		return true;
	}
	return false;
}

void
ops_peer_remove(struct master *m, struct peer *peer, const char *why)
{
	size_t cur = 0, reps = 0, erased = 0;
	struct mobj *o;

	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		bool hit = false;

		for (unsigned i = o->nrep; i-- > 0;) {
			if (obj_reps(o)[i].peer != peer->id)
				continue;
			/* The peer is gone: no one to notify, no usage to return. */
			state_replica_drop(m, o, i);
			reps++;
			hit = true;
		}
		if (hit && ops_settle(m, o, &cur))
			erased++;
	}
	mc_info("peer %u (%s) %s: %zu replicas removed, %zu objects erased", peer->id, peer->addr,
		why, reps, erased);
	peers_del(m->peers, peer);
}

static void
sweep_pending(struct master *m, uint64_t now)
{
	struct mobj *due[SWEEP_PENDING_MAX];
	size_t n = 0, cur = 0, reps = 0, erased = 0;
	struct pending *p;

	while (n < SWEEP_PENDING_MAX && (p = mc_htab_next(&m->store->pending, &cur)) != NULL)
		if (now >= p->started && now - p->started > m->cfg.put_timeout)
			due[n++] = p->o;
	for (size_t k = 0; k < n; k++) {
		struct mobj *o = due[k];
		uint64_t version = store_pending_get(m->store, o)->version;

		for (unsigned i = o->nrep; i-- > 0;) {
			const struct mrep *r = &obj_reps(o)[i];
			if (r->version == version && r->state == REP_PROCESSING) {
				ops_rep_remove(m, o, i, true);
				reps++;
			}
		}
		if (ops_settle(m, o, NULL))
			erased++;
	}
	if (n > 0)
		mc_info("put timeout: %zu writes abandoned, %zu replicas discarded, "
			"%zu objects erased",
			n, reps, erased);
}

void
ops_sweep(struct master *m)
{
	uint64_t now = mc_now_ms();

	for (uint32_t i = 0; i < m->peers->n;) {
		struct peer *peer = m->peers->v[i];
		if (!peer_alive(peer, m->cfg.peer_ttl)) {
			ops_peer_remove(m, peer, "expired");
			continue; /* the array shifted down */
		}
		i++;
	}
	if (m->store->pending.count > 0)
		sweep_pending(m, now);
}

static int
ops_start(struct master *m, struct mc_err *err)
{
	(void)err;
	ops_hook_store(m);
	return 0;
}

/* Objects freed from here on must not reach a freed index. */
static void
ops_stop(struct master *m)
{
	m->store->on_destroy = NULL;
}

const struct master_module ops_module = {
	.name = "replica changes",
	.init = ops_start,
	.free = ops_stop,
	.sweep = ops_sweep,
};
