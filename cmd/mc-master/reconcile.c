/*
 * Ghost peers, peer inventories (whole, or a resumed peer's delta) and
 * the reconcile deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/receipt.h"
#include "mc/wire.h"
#include "auth.h"
#include "master.h"
#include "ops.h"
#include "reconcile.h"
#include "request.h"
#include "state.h"
#include "peers.h"
#include "softpin.h"
#include "store.h"
#include "tasks.h"
#include "recency.h"

/* Items in one peer_inventory call (peers send MC_INVENTORY_CHUNK). */
#define INVENTORY_MAX (16 * MC_INVENTORY_CHUNK)

struct inv_item {
	const char *tenant, *key;
	size_t tlen, klen;
	int tier;
	uint64_t size, version, checksum;
	/* what the copy committed as, for an object adopted from it (NULL, 0: none) */
	const char *type, *group;
	size_t type_len, group_len;
	bool hard_pin;
	bool dynamic;	      /* the copy is a dynamic replica (its committed notice said) */
	uint64_t sp_deadline; /* ms since the epoch, on mc_now_ms()'s clock */
	/* the commit receipt the peer kept with the copy (MC_RECEIPT_BYTES), or NULL */
	const unsigned char *receipt;
};

/* A removal in a delta report. */
struct inv_gone {
	const char *tenant, *key;
	size_t tlen, klen;
	uint64_t version;
};

struct inv_count {
	uint64_t kept, adopted, dropped, skipped, removed;
	uint64_t unverified; /* of dropped: what the master would have adopted */
};

/* The ghosts go; the counters stay. */
void
recon_free(struct recon *r)
{
	free(r->ghosts);
	r->ghosts = NULL;
	r->n = 0;
	r->deadline = 0;
}

struct ghost *
recon_ghost(const struct recon *r, uint32_t id)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (r->ghosts[i].id == id)
			return &r->ghosts[i];
	return NULL;
}

void
recon_install(struct master *m, struct ghost *v, uint32_t n)
{
	recon_free(m->recon);
	m->recon->ghosts = v;
	m->recon->n = n;
	if (n > 0)
		m->recon->deadline = mc_add_sat(mc_now_ms(), m->cfg.reconcile_timeout);
	for (uint32_t i = 0; i < n; i++) {
		/* A peer already live at that address claims its ghost now. */
		const struct peer *p = peers_find_addr(m->peers, v[i].addr);
		if (p != NULL)
			v[i].new_id = p->id;
	}
}

void
recon_peer_registered(struct master *m, const struct peer *p)
{
	for (uint32_t i = 0; i < m->recon->n; i++) {
		struct ghost *g = &m->recon->ghosts[i];
		if (strcmp(g->addr, p->addr) != 0)
			continue;
		g->new_id = p->id;
		mc_info("peer %u (%s) takes over peer %u; waiting for its inventory", p->id,
			p->addr, g->id);
	}
}

int
recon_ghost_peer(struct master *m, struct peer *p)
{
	struct recon *r = m->recon;
	struct ghost *v = realloc(r->ghosts, (r->n + 1) * sizeof(*v));
	struct ghost *g;

	if (v == NULL)
		return -1;
	r->ghosts = v;
	g = &v[r->n++];
	memset(g, 0, sizeof(*g));
	g->id = p->id;
	memcpy(g->addr, p->addr, sizeof(g->addr));
	memcpy(g->host, p->host, sizeof(g->host));
	memcpy(g->domain, p->domain, sizeof(g->domain));
	/* On the fake clock, like a restore's: tests move it to force the sweep. */
	if (r->deadline == 0)
		r->deadline = mc_add_sat(mc_now_ms(), m->cfg.reconcile_timeout);
	mc_info("peer %u (%s) replaced by a new registration: its replicas wait for the new "
		"peer's inventory",
		p->id, p->addr);
	peers_del(m->peers, p);
	return 0;
}

static void
ghost_del(struct recon *r, struct ghost *g)
{
	*g = r->ghosts[--r->n];
	if (r->n == 0) {
		free(r->ghosts);
		r->ghosts = NULL;
		r->deadline = 0;
	}
}

/*
 * Drop the replicas still carrying a ghost id (only that ghost's when
 * g is non-NULL, else every replica on a peer that is not registered);
 * objects left without a replica are erased.
 */
static void
drop_unconfirmed(struct master *m, const struct ghost *g, size_t *reps, size_t *erased)
{
	size_t cur = 0;
	struct mobj *o;

	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		bool hit = false;

		for (unsigned i = o->nrep; i-- > 0;) {
			uint32_t peer = obj_reps(o)[i].peer;
			if (g != NULL ? peer != g->id : peers_find(m->peers, peer) != NULL)
				continue;
			/* Nobody holds it for sure, so nobody to notify. */
			state_replica_drop(m, o, i);
			(*reps)++;
			hit = true;
		}
		if (hit && ops_settle(m, o, &cur))
			(*erased)++;
	}
}

void
recon_sweep(struct master *m)
{
	size_t reps = 0, erased = 0;

	if (m->recon->deadline == 0 || mc_now_ms() < m->recon->deadline)
		return;
	drop_unconfirmed(m, NULL, &reps, &erased);
	mc_info("reconcile timeout: %zu unconfirmed replicas dropped, %zu objects erased", reps,
		erased);
	recon_free(m->recon);
}

static int
item_parse(const msgpack_object *e, struct inv_item *it, struct mc_err *err)
{
	const char *tier, *receipt;
	size_t len;

	if (e->type != MSGPACK_OBJECT_MAP)
		return mc_err_set(err, MC_ERR_INVALID, "item is not a map");
	if (mc_map_str(e, "tenant", &it->tenant, &it->tlen, err) != 1 ||
	    !store_name_ok(it->tenant, it->tlen))
		return mc_err_set(err, MC_ERR_INVALID, "item needs a valid 'tenant'");
	if (mc_map_str(e, "key", &it->key, &it->klen, err) != 1 || it->klen == 0 ||
	    it->klen > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "item needs a 'key' of 1..%d bytes",
				  MC_KEY_MAX);
	it->tier = MC_TIER_DRAM;
	if (mc_map_str(e, "tier", &tier, &len, err) == 1 &&
	    (it->tier = mc_tier_parse(tier, len, NULL)) < 0)
		return mc_err_set(err, MC_ERR_INVALID, "item has an unknown tier");
	if (mc_map_u64(e, "size", &it->size, err) != 1 ||
	    mc_map_u64(e, "version", &it->version, err) != 1 ||
	    mc_map_u64(e, "checksum", &it->checksum, err) != 1)
		return mc_err_set(err, MC_ERR_INVALID, "item needs size, version and checksum");
	if (it->version == 0)
		return mc_err_set(err, MC_ERR_INVALID, "item version 0");
	/* the metadata a peer stored with the copy (committed): all optional */
	it->type = it->group = NULL;
	it->type_len = it->group_len = 0;
	it->hard_pin = false;
	it->sp_deadline = 0;
	if (req_opt_name(e, "type", &it->type, &it->type_len, err) < 0 ||
	    req_opt_name(e, "group", &it->group, &it->group_len, err) < 0)
		return -1;
	it->dynamic = false;
	if (mc_map_bool(e, "hard_pin", &it->hard_pin, err) < 0 ||
	    mc_map_bool(e, "dynamic", &it->dynamic, err) < 0 ||
	    mc_map_u64(e, "sp_deadline", &it->sp_deadline, err) < 0)
		return mc_err_set(err, MC_ERR_INVALID,
				  "item's 'hard_pin' and 'dynamic' are bools and 'sp_deadline' a "
				  "time in ms");
	/* a receipt of another shape verifies nothing: the item is taken as without one */
	it->receipt = NULL;
	if (mc_map_str(e, "receipt", &receipt, &len, err) == 1 && len == MC_RECEIPT_BYTES)
		it->receipt = (const unsigned char *)receipt;
	return 0;
}

/* Whether the item's receipt is one this master's key made for it. */
static bool
receipt_verifies(const struct master *m, const struct inv_item *it)
{
	struct mc_receipt_of w = {
		.tenant = it->tenant,
		.tenant_len = it->tlen,
		.key = it->key,
		.key_len = it->klen,
		.version = it->version,
		.size = it->size,
		.checksum = it->checksum,
	};

	return m->receipts_on && it->receipt != NULL &&
	       mc_receipt_verify(m->receipt_key, &w, it->receipt);
}

/*
 * Whether the master may take the version a peer reports as one it
 * issued, adopting the copy and raising its counter to it. With
 * receipts, only when the copy's receipt verifies: nobody but the
 * master makes one, so a forged extent or an injected item is refused
 * whatever it names. Without, any version below VERSION_MAX: one
 * inventory must not spend the counter, so that every later put fails.
 */
static bool
may_adopt(const struct master *m, const struct inv_item *it, struct inv_count *n)
{
	if (m->receipts_on ? receipt_verifies(m, it) : it->version < VERSION_MAX)
		return true;
	n->unverified++;
	if (m->receipts_on)
		m->recon->unverified_receipt++;
	else
		m->recon->unverified_version++;
	return false;
}

/* Index of o's replica that this peer holds (directly or as a ghost), or -1. */
static int
find_rep(const struct master *m, const struct mobj *o, const struct peer *p)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++) {
		if (v[i].peer == p->id)
			return (int)i;
		const struct ghost *g = recon_ghost(m->recon, v[i].peer);
		if (g != NULL && g->new_id == p->id)
			return (int)i;
	}
	return -1;
}

static bool
has_live_rep(const struct master *m, const struct mobj *o)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (peers_find(m->peers, v[i].peer) != NULL)
			return true;
	return false;
}

/*
 * A COMPLETE replica of the object's version on p, dynamic or not; -1
 * when out of room.
 */
static int
add_complete(struct master *m, struct mobj *o, const struct peer *p, int tier, bool dynamic)
{
	struct mrep *r = ops_rep_new(m, o, p->id, tier, o->version, o->size);

	if (r == NULL)
		return -1;
	if (dynamic) {
		struct mrep to = *r;

		to.dynamic = 1;
		state_replica_set(m, o, r, &to);
	}
	ops_rep_complete(m, o, r);
	recency_sync(&m->store->rank, o);
	return 0;
}

/*
 * Move a replica onto p (from its ghost, or from another tier of p). The
 * peer says where the copy is: one that was moving has arrived.
 */
static void
confirm(struct master *m, struct mobj *o, struct mrep *r, struct peer *p, int tier)
{
	struct mrep to = *r;

	to.moving = 0;
	to.peer = p->id;
	to.tier = (uint8_t)tier;
	to.mark = p->mark;
	ops_rep_uncharge(m, o, r);
	state_replica_set(m, o, r, &to);
	ops_rep_charge(m, o, r);
	/* the peer may report it on another tier than the master had it */
	recency_sync(&m->store->rank, o);
}

/*
 * An object the master did not know, from a peer's copy: with the type,
 * group and pins the peer kept for it, a soft pin running to the
 * deadline it had, never a new lifetime.
 */
static void
adopt_new(struct master *m, struct peer *p, uint32_t tenant, uint64_t hash,
	  const struct inv_item *it, struct inv_count *n)
{
	struct mc_err err;
	uint64_t now = mc_now_ms();
	/* MC_DEFAULT_TYPE is interned first */
	int64_t type = it->type != NULL
			       ? store_tenant_type(m->store, tenant, it->type, it->type_len, &err)
			       : 0;
	struct state_obj f;
	struct mobj *o;

	if (!may_adopt(m, it, n)) {
		/* not the master's: the peer frees it, as it does a copy that disagrees */
		peers_queue(m->peers, p, TASK_DROP, tenant, it->key, it->klen, it->version,
			    MC_TIER_NONE);
		n->dropped++;
		return;
	}
	memset(&f, 0, sizeof(f));
	f.version = it->version;
	f.size = it->size;
	f.checksum = it->checksum;
	f.type = (uint16_t)type;
	f.hard_pin = it->hard_pin;
	o = type < 0 ? NULL
		     : state_object_create(m, hash, tenant, it->key, it->klen, it->group,
					   it->group_len, &f, &err);
	if (o == NULL) {
		n->skipped++;
		return;
	}
	o->created = now;
	o->last_access = now;
	/* found now, like its ms times: newer than everything already known */
	store_access_new(m->store, o, 0);
	if (add_complete(m, o, p, it->tier, false) != 0) {
		state_object_drop(m, o, NULL);
		n->skipped++;
		return;
	}
	softpin_adopt(m, o, it->sp_deadline, now);
	/* Versions never go backwards, whoever handed this one out. */
	if (m->store->version_seq < it->version)
		m->store->version_seq = it->version;
	n->adopted++;
}

static void
inventory_item(struct master *m, struct peer *p, const struct inv_item *it, struct inv_count *n)
{
	struct mc_err err;
	int64_t tenant = store_tenant_intern(m->store, it->tenant, it->tlen, &err);
	uint64_t hash;
	struct mobj *o;
	int i;

	/*
	 * Interned before any check, whatever the item: a copy the master
	 * may not adopt is dropped by a task, and a task names its tenant
	 * by id.
	 */
	if (tenant < 0) {
		n->skipped++;
		return;
	}
	hash = store_key_hash((uint32_t)tenant, it->key, it->klen);
	o = store_find(m->store, hash, (uint32_t)tenant, it->key, it->klen);
	if (o == NULL) {
		adopt_new(m, p, (uint32_t)tenant, hash, it, n);
		return;
	}
	/* A write in flight owns the object's replicas until it settles. */
	if (o->writing) {
		n->skipped++;
		return;
	}
	i = find_rep(m, o, p);
	if (it->version == o->version && it->size == o->size && it->checksum == o->checksum) {
		if (i >= 0)
			confirm(m, o, &obj_reps(o)[i], p, it->tier);
		else if (add_complete(m, o, p, it->tier, it->dynamic) != 0) {
			n->skipped++;
			return;
		}
		/*
		 * A copy the master knows to be its own but that has no receipt
		 * (committed before receipts, or while its peer was away) gets
		 * one now, so that a master that loses the object adopts it.
		 */
		if (m->receipts_on && !receipt_verifies(m, it)) {
			ops_notify_committed(m, o, o->version, p);
			m->recon->receipts_resent++;
		}
		n->kept++;
		return;
	}
	if (it->version > o->version && !has_live_rep(m, o) && may_adopt(m, it, n)) {
		/*
		 * Rewritten after the snapshot, and nothing confirmed the old
		 * version yet: the newer copy wins. Unconfirmed copies of the
		 * old version are forgotten; a peer holding the new one
		 * confirms it when it reports.
		 */
		struct state_obj f = state_obj_of(o);

		while (o->nrep > 0)
			ops_rep_remove(m, o, o->nrep - 1, false);
		f.size = it->size;
		f.version = it->version;
		f.checksum = it->checksum;
		state_object_set(m, o, &f);
		if (add_complete(m, o, p, it->tier, false) != 0) {
			ops_obj_erase(m, o, false, NULL);
			n->skipped++;
			return;
		}
		if (m->store->version_seq < it->version)
			m->store->version_seq = it->version;
		n->adopted++;
		return;
	}
	/* A copy that disagrees: forget it here and have the peer free it. */
	peers_queue(m->peers, p, TASK_DROP, o->tenant, o->key, o->key_len, it->version,
		    MC_TIER_NONE);
	n->dropped++;
	if (i >= 0) {
		ops_rep_remove(m, o, (unsigned)i, false);
		ops_settle(m, o, NULL);
	}
}

static int
gone_parse(const msgpack_object *e, struct inv_gone *g, struct mc_err *err)
{
	if (e->type != MSGPACK_OBJECT_MAP)
		return mc_err_set(err, MC_ERR_INVALID, "removed item is not a map");
	if (mc_map_str(e, "tenant", &g->tenant, &g->tlen, err) != 1 ||
	    !store_name_ok(g->tenant, g->tlen))
		return mc_err_set(err, MC_ERR_INVALID, "removed item needs a valid 'tenant'");
	if (mc_map_str(e, "key", &g->key, &g->klen, err) != 1 || g->klen == 0 ||
	    g->klen > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "removed item needs a 'key' of 1..%d bytes",
				  MC_KEY_MAX);
	if (mc_map_u64(e, "version", &g->version, err) != 1)
		return mc_err_set(err, MC_ERR_INVALID, "removed item needs a 'version'");
	return 0;
}

/*
 * The peer no longer holds its copy of a key, up to a version: forget
 * that replica. Nobody to tell, and a replica of a newer version (a
 * write in progress) is not the copy that went.
 */
static void
inventory_gone(struct master *m, const struct peer *p, const struct inv_gone *g,
	       struct inv_count *n)
{
	int64_t tenant = store_tenant_find(m->store, g->tenant, g->tlen);
	struct mobj *o;
	bool hit = false;

	if (tenant < 0)
		return;
	o = store_find(m->store, store_key_hash((uint32_t)tenant, g->key, g->klen),
		       (uint32_t)tenant, g->key, g->klen);
	if (o == NULL)
		return;
	for (unsigned i = o->nrep; i-- > 0;) {
		const struct mrep *r = &obj_reps(o)[i];
		if (r->peer != p->id || r->version > g->version)
			continue;
		ops_rep_remove(m, o, i, false);
		n->removed++;
		hit = true;
	}
	if (hit) {
		recency_sync(&m->store->rank, o);
		ops_settle(m, o, NULL);
	}
}

/*
 * After a whole inventory from a peer that resumed: a COMPLETE replica
 * on it still bearing an older mark was neither reported nor written
 * since, so the peer lost it while away. Objects being written are left
 * to their write.
 */
static void
drop_unreported(struct master *m, struct peer *p)
{
	size_t cur = 0, reps = 0, erased = 0;
	struct mobj *o;

	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		bool hit = false;

		if (o->writing)
			continue;
		for (unsigned i = o->nrep; i-- > 0;) {
			const struct mrep *r = &obj_reps(o)[i];
			if (r->peer != p->id || r->state != REP_COMPLETE || r->mark == p->mark)
				continue;
			ops_rep_remove(m, o, i, false);
			reps++;
			hit = true;
		}
		if (hit && ops_settle(m, o, &cur))
			erased++;
	}
	p->unconfirmed = false;
	if (reps > 0)
		mc_info("peer %u (%s) full inventory: %zu unreported replicas removed, "
			"%zu objects erased",
			p->id, p->addr, reps, erased);
}

/* The peer reported everything: what it did not confirm is not there. */
static void
inventory_done(struct master *m, struct peer *p)
{
	if (p->unconfirmed)
		drop_unreported(m, p);
	for (uint32_t k = 0; k < m->recon->n;) {
		struct ghost *g = &m->recon->ghosts[k];
		size_t reps = 0, erased = 0;

		if (g->new_id != p->id) {
			k++;
			continue;
		}
		drop_unconfirmed(m, g, &reps, &erased);
		mc_info("peer %u (%s) reconciled: %zu unreported replicas dropped, "
			"%zu objects erased",
			p->id, p->addr, reps, erased);
		ghost_del(m->recon, g);
		if (m->recon->n == 0)
			mc_info("reconciliation complete");
	}
}

static void
h_peer_inventory(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct inv_count n = { 0, 0, 0, 0, 0, 0 };
	struct mc_err err;
	uint64_t id;
	bool done = false, delta = false;
	struct peer *p;
	const msgpack_object_array *items, *removed;

	if (mc_map_u64(req->params, "peer_id", &id, &err) != 1 ||
	    mc_map_bool(req->params, "done", &done, &err) < 0 ||
	    mc_map_bool(req->params, "delta", &delta, &err) < 0) {
		mc_err_set(&err, MC_ERR_INVALID,
			   "peer_inventory needs 'peer_id', bool 'done' and bool 'delta'");
		goto fail;
	}
	if (auth_check_peer(req, id, &err) != 0)
		goto fail;
	p = id <= UINT32_MAX ? peers_find(m->peers, (uint32_t)id) : NULL;
	if (p == NULL) {
		mc_err_set(&err, MC_ERR_NOT_FOUND, "unknown peer %llu: register again",
			   (unsigned long long)id);
		goto fail;
	}
	items = mc_map_array(req->params, "items");
	if (items == NULL && mc_map_get(req->params, "items") != NULL) {
		mc_err_set(&err, MC_ERR_INVALID, "field 'items' must be an array");
		goto fail;
	}
	removed = mc_map_array(req->params, "removed");
	if (removed == NULL && mc_map_get(req->params, "removed") != NULL) {
		mc_err_set(&err, MC_ERR_INVALID, "field 'removed' must be an array");
		goto fail;
	}
	if ((items != NULL && items->size > INVENTORY_MAX) ||
	    (removed != NULL && removed->size > INVENTORY_MAX)) {
		mc_err_set(&err, MC_ERR_TOO_LARGE, "%u items and %u removed in one call, limit %d",
			   items != NULL ? items->size : 0, removed != NULL ? removed->size : 0,
			   INVENTORY_MAX);
		goto fail;
	}
	if (removed != NULL && !delta) {
		mc_err_set(&err, MC_ERR_INVALID, "field 'removed' belongs to a delta");
		goto fail;
	}
	/* Removals first: an item below may be the key linked again since. */
	for (uint32_t j = 0; removed != NULL && j < removed->size; j++) {
		struct inv_gone g;

		if (gone_parse(&removed->ptr[j], &g, &err) != 0) {
			n.skipped++;
			continue;
		}
		inventory_gone(m, p, &g, &n);
	}
	for (uint32_t j = 0; items != NULL && j < items->size; j++) {
		struct inv_item it;

		if (item_parse(&items->ptr[j], &it, &err) != 0) {
			n.skipped++;
			continue;
		}
		inventory_item(m, p, &it, &n);
	}
	if (n.skipped > 0)
		mc_warn("peer %u (%s) inventory: %llu items skipped (last: %s)", p->id, p->addr,
			(unsigned long long)n.skipped, err.msg);
	/* A delta says nothing of what it does not name: nothing to sweep. */
	if (done && !delta)
		inventory_done(m, p);
	/* the copies came in the peer's order: put them in the order of their accesses */
	if (done && recency_sort_peer(&m->store->rank, p->id) != 0)
		mc_warn("peer %u (%s) inventory: out of memory ordering its recency lists", p->id,
			p->addr);
	if (n.adopted + n.dropped + n.removed > 0 || done)
		mc_info("peer %u (%s) %s: %llu kept, %llu adopted, %llu dropped (%llu unverified), "
			"%llu gone%s",
			p->id, p->addr, delta ? "inventory delta" : "inventory",
			(unsigned long long)n.kept, (unsigned long long)n.adopted,
			(unsigned long long)n.dropped, (unsigned long long)n.unverified,
			(unsigned long long)n.removed, done ? " (done)" : "");
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 4);
	mc_pack_kv_u64(pk, "kept", n.kept);
	mc_pack_kv_u64(pk, "adopted", n.adopted);
	mc_pack_kv_u64(pk, "dropped", n.dropped);
	mc_pack_kv_u64(pk, "removed", n.removed);
	mc_reply_end(req);
	return;
fail:
	mc_reply_mc_err(req, &err);
}

const struct mc_method recon_methods[] = {
	{ "peer_inventory", h_peer_inventory, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

/*
 * The receipts' key: --receipt-key, else the file beside --auth-file;
 * without either, none, and adopted copies are taken as reported.
 */
static int
recon_start(struct master *m, struct mc_err *err)
{
	const char *path = m->cfg.receipt_key;
	char beside[4096];
	bool created;

	memset(m->recon, 0, sizeof(*m->recon));
	m->receipts_on = false;
	if (path == NULL && m->cfg.auth_file != NULL) {
		if (snprintf(beside, sizeof(beside), "%s.receipt-key", m->cfg.auth_file) >=
		    (int)sizeof(beside))
			return mc_err_set(err, MC_ERR_INVALID, "--auth-file path too long: %s",
					  m->cfg.auth_file);
		path = beside;
	}
	if (path == NULL) {
		mc_info("no --receipt-key nor --auth-file: commits carry no receipt, and copies "
			"adopted from inventories are trusted as reported");
		return 0;
	}
	if (mc_receipt_key_load(path, m->receipt_key, &created, err) != 0)
		return -1;
	m->receipts_on = true;
	mc_info("%s receipt key %s: a copy is adopted from an inventory only with its receipt",
		created ? "made the" : "loaded the", path);
	return 0;
}

static void
recon_stop(struct master *m)
{
	recon_free(m->recon);
	sodium_memzero(m->receipt_key, sizeof(m->receipt_key));
}

static void
recon_collect(struct mc_metrics *r, void *arg)
{
	const struct recon *rc = ((struct master *)arg)->recon;
	static const char help[] =
		"Inventory items the master would have adopted but did not issue, dropped: a "
		"receipt that does not verify, or (without receipts) a version at the counter's "
		"end.";
	struct mc_metric *s;

	if ((s = mc_metric_get(r, "mc_inventory_unverified_total", MC_COUNTER, help, "reason",
			       "receipt")))
		mc_metric_set(s, (double)rc->unverified_receipt);
	if ((s = mc_metric_get(r, "mc_inventory_unverified_total", MC_COUNTER, help, "reason",
			       "version")))
		mc_metric_set(s, (double)rc->unverified_version);
	if ((s = mc_metric_get(
		     r, "mc_receipts_resent_total", MC_COUNTER,
		     "Copies an inventory confirmed without a receipt that verifies, sent "
		     "their commit notice again with one.",
		     NULL, NULL)))
		mc_metric_set(s, (double)rc->receipts_resent);
}

const struct master_module recon_module = {
	.name = "reconciliation",
	.init = recon_start,
	.collect = recon_collect,
	.free = recon_stop,
	.sweep = recon_sweep,
	.methods = recon_methods,
};
