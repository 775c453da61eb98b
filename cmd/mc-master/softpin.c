/*
 * Soft pins: write actions, commit, the deadline index, cleanup, and the
 * softpin_* RPCs. Everything here runs on the master's event loop.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "request.h"
#include "master.h"
#include "softpin.h"
#include "state.h"
#include "store.h"

#define SP_LIST_DEFAULT 1000
#define SP_LIST_MAX 10000

static uint64_t
obj_id(const struct mobj *o)
{
	return (uint64_t)(uintptr_t)o;
}

static struct mobj *
id_obj(uint64_t id)
{
	return (struct mobj *)(uintptr_t)id;
}

static void softpin_collect(struct mc_metrics *r, void *arg);

int
softpin_init(struct master *m, struct mc_err *err)
{
	struct softpin *sp = m->sp;

	memset(sp, 0, sizeof(*sp));
	sp->idx = mc_deadline_new();
	if (sp->idx == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	return 0;
}

void
softpin_free(struct master *m)
{
	/* Objects freed after this must not reach a freed index. */
	m->store->on_destroy = NULL;
	if (m->sp->idx != NULL)
		mc_deadline_free(m->sp->idx);
	m->sp->idx = NULL;
}

int
softpin_parse(const struct master *m, const msgpack_object *params, uint8_t *action, uint64_t *ttl,
	      struct mc_err *err)
{
	const msgpack_object *a = mc_map_get(params, "soft_pin");
	const msgpack_object *t = mc_map_get(params, "soft_pin_ttl_ms");
	bool has_ttl = t != NULL && t->type != MSGPACK_OBJECT_NIL;

	*action = SP_PRESERVE;
	*ttl = 0;
	if (a != NULL && a->type != MSGPACK_OBJECT_NIL) {
		if (a->type != MSGPACK_OBJECT_STR)
			return mc_err_set(err, MC_ERR_INVALID, "field 'soft_pin' must be a string");
		if (mc_obj_streq(a, "enable"))
			*action = SP_ENABLE;
		else if (mc_obj_streq(a, "disable"))
			*action = SP_DISABLE;
		else if (!mc_obj_streq(a, "preserve"))
			return mc_err_set(err, MC_ERR_INVALID,
					  "unknown soft_pin action: must be preserve, enable or "
					  "disable");
	}
	if (!has_ttl) {
		if (*action == SP_ENABLE)
			*ttl = m->cfg.default_soft_pin_ttl;
		return 0;
	}
	if (*action != SP_ENABLE)
		return mc_err_set(err, MC_ERR_INVALID, "soft_pin_ttl_ms is only valid with enable");
	if (mc_map_u64(params, "soft_pin_ttl_ms", ttl, err) < 0)
		return -1;
	if (*ttl > m->cfg.max_soft_pin_ttl)
		return mc_err_set(
			err, MC_ERR_INVALID, "soft_pin_ttl_ms %llu exceeds the maximum %llu",
			(unsigned long long)*ttl, (unsigned long long)m->cfg.max_soft_pin_ttl);
	return 0;
}

bool
softpin_protects(const struct mobj *o, uint64_t now)
{
	/* The deadline decides, not whether cleanup has run yet. */
	return o->sp_mode == SP_ACTIVE && now < o->sp_deadline;
}

uint64_t
softpin_remaining(const struct mobj *o, uint64_t now)
{
	return softpin_protects(o, now) ? o->sp_deadline - now : 0;
}

/* o's deadline into the index that expires pins. */
static void
index_set(struct master *m, struct mobj *o, uint64_t deadline)
{
	if (mc_deadline_set(m->sp->idx, obj_id(o), deadline) != 0)
		/*
		 * The pin still protects (eviction reads the deadline); only
		 * the gauge waits for a rebuild to count it down.
		 */
		mc_warn("soft pin of '%.*s': out of memory for the deadline index", (int)o->key_len,
			o->key);
}

/* Disabled -> Active (+1) or Active -> Active with a new deadline (0). */
static void
activate(struct master *m, struct mobj *o, uint64_t deadline, uint64_t ttl)
{
	if (o->sp_mode != SP_ACTIVE)
		m->sp->active++;
	state_pin_set(m, o, SP_ACTIVE, deadline, ttl);
	index_set(m, o, deadline);
}

/* Active -> Disabled (-1); a no-op for a disabled object. */
static void
deactivate(struct master *m, struct mobj *o)
{
	if (o->sp_mode == SP_ACTIVE) {
		mc_deadline_remove(m->sp->idx, obj_id(o));
		m->sp->active--;
	}
	state_pin_set(m, o, SP_DISABLED, 0, 0);
}

void
softpin_adopt(struct master *m, struct mobj *o, uint64_t deadline, uint64_t now)
{
	uint64_t left;

	if (deadline <= now)
		return;
	left = deadline - now;
	if (left > m->cfg.max_soft_pin_ttl)
		left = m->cfg.max_soft_pin_ttl;
	activate(m, o, now + left, left);
}

void
softpin_commit(struct master *m, struct mobj *o, const struct pending *p, uint64_t now)
{
	switch (p->sp_action) {
	case SP_ENABLE:
		/* TTL 0 is ordinary cache. */
		if (p->sp_ttl == 0)
			deactivate(m, o);
		else
			activate(m, o, mc_add_sat(now, p->sp_ttl), p->sp_ttl);
		break;
	case SP_DISABLE:
		deactivate(m, o);
		break;
	default:
		/* Preserve keeps a running pin but never revives an expired one. */
		if (o->sp_mode == SP_ACTIVE && now >= o->sp_deadline)
			deactivate(m, o);
		break;
	}
}

void
softpin_forget(struct master *m, struct mobj *o)
{
	if (o->sp_mode != SP_ACTIVE || m->sp->idx == NULL)
		return;
	/* The id is the pointer: it must leave the index before the object dies (its pin with it). */
	mc_deadline_remove(m->sp->idx, obj_id(o));
	m->sp->active--;
}

void
softpin_rebuild(struct master *m)
{
	uint64_t now = mc_now_ms();
	size_t cur = 0;
	struct mobj *o;

	mc_deadline_clear(m->sp->idx);
	m->sp->active = 0;
	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		if (o->sp_mode != SP_ACTIVE) {
			state_pin_set(m, o, SP_DISABLED, o->sp_deadline, o->sp_ttl);
			continue;
		}
		if (now < o->sp_deadline) {
			/* it stays as it is: only the index and the gauge learn of it */
			m->sp->active++;
			index_set(m, o, o->sp_deadline);
		} else {
			state_pin_set(m, o, SP_DISABLED, 0, 0);
		}
	}
}

/* Expired items for softpin_expire's answer (NULL: not wanted). */
struct expired {
	struct mobj **o;
	uint64_t *deadline;
	size_t n, cap;
};

static void
expired_add(struct expired *e, struct mobj *o, uint64_t deadline)
{
	if (e == NULL)
		return;
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		struct mobj **no = realloc(e->o, cap * sizeof(*no));
		if (no == NULL)
			return;
		e->o = no;
		uint64_t *nd = realloc(e->deadline, cap * sizeof(*nd));
		if (nd == NULL)
			return;
		e->deadline = nd;
		e->cap = cap;
	}
	e->o[e->n] = o;
	e->deadline[e->n++] = deadline;
}

static uint64_t
cleanup(struct master *m, uint64_t now, struct expired *e)
{
	uint64_t id, deadline, n = 0;

	m->sp->cleanup_runs++;
	while (mc_deadline_pop_due(m->sp->idx, now, &id, &deadline)) {
		struct mobj *o = id_obj(id);

		/*
		 * Destruction removes an object's id first, so a registration
		 * that pops names a live object. The exact-deadline guard
		 * still matters: only that activation may be cleared.
		 */
		if (o->sp_mode != SP_ACTIVE || o->sp_deadline != deadline)
			continue;
		state_pin_set(m, o, SP_DISABLED, 0, 0);
		m->sp->active--;
		n++;
		expired_add(e, o, deadline);
	}
	m->sp->expired += n;
	return n;
}

uint64_t
softpin_cleanup(struct master *m, uint64_t now)
{
	return cleanup(m, now, NULL);
}

const char *
softpin_state_name(const struct master *m, const struct mobj *o, uint64_t now)
{
	const struct pending *p;

	if (softpin_protects(o, now))
		return "active";
	p = store_pending_get(m->store, o);
	if (p != NULL && !p->committed)
		return "pending";
	return "disabled";
}

static const char *
action_name(int a)
{
	switch (a) {
	case SP_ENABLE:
		return "enable";
	case SP_DISABLE:
		return "disable";
	default:
		return "preserve";
	}
}

static void
softpin_collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;

	struct mc_deadline_stats st;
	struct mc_metric *s;

	mc_deadline_stats(m->sp->idx, &st);
	s = mc_metric_get(r, "mc_softpin_active", MC_GAUGE, "Objects with an active soft pin.",
			  NULL, NULL);
	if (s != NULL)
		mc_metric_set(s, (double)m->sp->active);
	s = mc_metric_get(r, "mc_softpin_heap_entries", MC_GAUGE,
			  "Entries in the soft-pin deadline heap, stale ones included.", NULL,
			  NULL);
	if (s != NULL)
		mc_metric_set(s, (double)st.heap);
	s = mc_metric_get(r, "mc_softpin_live", MC_GAUGE,
			  "Live registrations in the soft-pin deadline index.", NULL, NULL);
	if (s != NULL)
		mc_metric_set(s, (double)st.live);
	s = mc_metric_get(r, "mc_softpin_cleanup_runs_total", MC_COUNTER,
			  "Soft-pin cleanup cycles run.", NULL, NULL);
	if (s != NULL)
		mc_metric_set(s, (double)m->sp->cleanup_runs);
	s = mc_metric_get(r, "mc_softpin_expired_total", MC_COUNTER,
			  "Soft pins cleared by cleanup at their deadline.", NULL, NULL);
	if (s != NULL)
		mc_metric_set(s, (double)m->sp->expired);
	s = mc_metric_get(r, "mc_softpin_rebuilds_total", MC_COUNTER,
			  "Rebuilds of the soft-pin deadline heap.", NULL, NULL);
	if (s != NULL)
		mc_metric_set(s, (double)st.rebuilds);
}

/* ---- RPCs ---- */

static void
h_softpin_show(struct mc_req *req)
{
	struct master *m = req->ctx;
	const struct client *cl = req_client(req);
	uint64_t now = mc_now_ms();
	struct mc_err err;
	const char *key;
	size_t len;

	if (req_need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	/* A plain lookup: no lease, no access time. */
	const struct mobj *o =
		store_find(m->store, store_key_hash(cl->tenant, key, len), cl->tenant, key, len);
	if (o == NULL) {
		handler_fail(req, MC_ERR_NOT_FOUND, "key not found");
		return;
	}
	const struct pending *p = store_pending_get(m->store, o);
	bool pend = p != NULL && !p->committed;
	bool active = softpin_protects(o, now);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 3 + (pend ? 2 : 0));
	mc_pack_kv_str(pk, "state", softpin_state_name(m, o, now));
	mc_pack_kv_u64(pk, "deadline", active ? o->sp_deadline : 0);
	mc_pack_kv_u64(pk, "remaining_ms", active ? o->sp_deadline - now : 0);
	if (pend) {
		mc_pack_kv_str(pk, "pending_action", action_name(p->sp_action));
		mc_pack_kv_u64(pk, "pending_ttl_ms", p->sp_ttl);
	}
	mc_reply_end(req);
}

struct list_ctx {
	struct mobj **o;
	uint64_t *deadline;
	size_t n, cap;
};

static int
list_visit(uint64_t id, uint64_t deadline, void *arg)
{
	struct list_ctx *l = arg;

	if (l->n == l->cap)
		return 1;
	l->o[l->n] = id_obj(id);
	l->deadline[l->n++] = deadline;
	return 0;
}

static void
pack_item(msgpack_packer *pk, const struct master *m, const struct mobj *o, uint64_t deadline)
{
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "tenant", m->store->tenants[o->tenant].name);
	mc_pack_kv_strn(pk, "key", o->key, o->key_len);
	mc_pack_kv_u64(pk, "deadline", deadline);
}

static void
h_softpin_list(struct mc_req *req)
{
	struct master *m = req->ctx;
	uint64_t within = 0, limit = SP_LIST_DEFAULT, until = UINT64_MAX;
	struct list_ctx l = { 0 };
	struct mc_err err;
	int rc;

	if ((rc = mc_map_u64(req->params, "due_within_ms", &within, &err)) < 0 ||
	    mc_map_u64(req->params, "limit", &limit, &err) < 0) {
		handler_fail(req, MC_ERR_INVALID, "%s", err.msg);
		return;
	}
	if (limit == 0 || limit > SP_LIST_MAX) {
		handler_fail(req, MC_ERR_INVALID, "limit %llu out of range 1..%d",
			     (unsigned long long)limit, SP_LIST_MAX);
		return;
	}
	if (rc > 0)
		until = mc_add_sat(mc_now_ms(), within);
	/* One more than asked, to learn whether there is more. */
	l.cap = (size_t)limit + 1;
	l.o = malloc(l.cap * sizeof(*l.o));
	l.deadline = malloc(l.cap * sizeof(*l.deadline));
	if (l.o == NULL || l.deadline == NULL) {
		free(l.o);
		free(l.deadline);
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	mc_deadline_visit(m->sp->idx, until, l.cap, list_visit, &l);
	size_t out = l.n > limit ? (size_t)limit : l.n;
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, out);
	for (size_t i = 0; i < out; i++)
		pack_item(pk, m, l.o[i], l.deadline[i]);
	mc_pack_kv_bool(pk, "more", l.n > out);
	mc_reply_end(req);
	free(l.o);
	free(l.deadline);
}

static void
h_softpin_stats(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct mc_deadline_stats st;

	mc_deadline_stats(m->sp->idx, &st);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 9);
	mc_pack_kv_u64(pk, "active", m->sp->active);
	mc_pack_kv_u64(pk, "heap", st.heap);
	mc_pack_kv_u64(pk, "live", st.live);
	mc_pack_kv_u64(pk, "rebuilds", st.rebuilds);
	mc_pack_kv_u64(pk, "cleanup_runs", m->sp->cleanup_runs);
	mc_pack_kv_u64(pk, "expired", m->sp->expired);
	mc_pack_kv_u64(pk, "default_ttl_ms", m->cfg.default_soft_pin_ttl);
	mc_pack_kv_u64(pk, "max_ttl_ms", m->cfg.max_soft_pin_ttl);
	mc_pack_kv_bool(pk, "allow_evict", m->cfg.allow_evict_soft_pinned);
	mc_reply_end(req);
}

static void
h_softpin_expire(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct expired e = { 0 };
	uint64_t n, now = mc_now_ms(), t0 = mc_mono_ns(), cycle_ns;

	n = cleanup(m, now, &e);
	/* The cycle's own cost, without the reading of the clock or the reply. */
	cycle_ns = mc_mono_ns() - t0;
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 3);
	mc_pack_kv_u64(pk, "expired", n);
	mc_pack_kv_u64(pk, "cycle_ns", cycle_ns);
	mc_pack_key(pk, "items");
	/* Cleanup frees nothing, so the pointers are still good here. */
	msgpack_pack_array(pk, e.n);
	for (size_t i = 0; i < e.n; i++)
		pack_item(pk, m, e.o[i], e.deadline[i]);
	mc_reply_end(req);
	free(e.o);
	free(e.deadline);
}

const struct mc_method softpin_methods[] = {
	{ "softpin_show", h_softpin_show, MC_METHOD_READ_ONLY },
	{ "softpin_list", h_softpin_list, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ "softpin_stats", h_softpin_stats, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ "softpin_expire", h_softpin_expire, MC_METHOD_ADMIN },
	{ NULL, NULL, 0 },
};

/* Expiry rides the sweep: only due entries cost anything. */
static void
softpin_sweep(struct master *m)
{
	softpin_cleanup(m, mc_now_ms());
}

const struct master_module softpin_module = {
	.name = "soft pins",
	.init = softpin_init,
	.free = softpin_free,
	.sweep = softpin_sweep,
	.methods = softpin_methods,
	.collect = softpin_collect,
};
