/*
 * Writes: put_start (placement, reservation, the tenant's quota),
 * put_end (the commit) and put_revoke; and the puts that wait for
 * eviction to make room.
 *
 * A put that finds no room, or its tenant over quota, does not fail at
 * once when eviction can help: it joins the round of each scope that
 * must give up space (evict.h) and waits, up to --put-wait, being tried
 * again after every round that ends. While it waits, its connection
 * reads nothing else (mc_req_hold), so a client that pipelines gets its
 * replies in order. Only when the wait is over, or no round can help,
 * does it fail with NO_SPACE (or QUOTA). --put-wait 0 fails at once.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/wire.h"
#include "commit.h"
#include "evict.h"
#include "holds.h"
#include "master.h"
#include "ops.h"
#include "placement.h"
#include "put.h"
#include "request.h"
#include "state.h"
#include "peers.h"
#include "softpin.h"
#include "store.h"
#include "mmetrics.h"

/* Puts waiting at most; beyond it a put that finds no room fails at once. */
#define WAITERS_MAX 65536

struct put_args {
	const char *key, *type, *group;
	size_t klen, tlen, glen;
	uint64_t size, replicas, checksum;
	int tier; /* the tier the put asked for; MC_TIER_NONE: placement's choice */
	bool hard_pin, upsert;
	uint8_t sp_action;
	uint64_t sp_ttl;
	/* the parent's key (a pointer into the request), then its hash once the tenant is known */
	const char *parent;
	size_t plen;
	uint64_t parent_hash;
};

/* A put waiting for eviction; its strings live in buf. */
struct put_wait {
	struct put_wait *prev, *next;
	struct master *m;
	struct mc_req *req; /* deferred, its connection held */
	uint32_t tenant;
	struct put_args a;
	uint64_t round;	   /* the latest round it waits for */
	uint64_t since_ns; /* mc_mono_ns() when it began to wait */
	struct event *timer;
	char buf[];
};

static int
put_args_parse(const msgpack_object *params, struct put_args *a, struct mc_err *err)
{
	const char *tier;
	size_t len;
	int rc;

	memset(a, 0, sizeof(*a));
	a->replicas = 1;
	a->tier = MC_TIER_NONE;
	a->type = MC_DEFAULT_TYPE;
	a->tlen = strlen(MC_DEFAULT_TYPE);
	if (req_need_key(params, &a->key, &a->klen, err) != 0 ||
	    req_need_u64(params, "size", &a->size, err) != 0 ||
	    mc_map_u64(params, "replicas", &a->replicas, err) < 0 ||
	    mc_map_u64(params, "checksum", &a->checksum, err) < 0 ||
	    mc_map_bool(params, "hard_pin", &a->hard_pin, err) < 0 ||
	    mc_map_bool(params, "upsert", &a->upsert, err) < 0 ||
	    req_opt_name(params, "type", &a->type, &a->tlen, err) < 0 ||
	    req_opt_name(params, "group", &a->group, &a->glen, err) < 0 ||
	    req_opt_key(params, "parent", &a->parent, &a->plen, err) < 0)
		return -1;
	if (a->parent != NULL && a->plen == a->klen && memcmp(a->parent, a->key, a->klen) == 0)
		return mc_err_set(err, MC_ERR_INVALID, "a block cannot be its own parent");
	if ((rc = mc_map_str(params, "tier", &tier, &len, err)) < 0 ||
	    (rc > 0 && (a->tier = mc_tier_parse(tier, len, err)) < 0))
		return -1;
	if (a->replicas == 0 || a->replicas > MC_REPLICAS_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "replicas %llu out of range 1..%d",
				  (unsigned long long)a->replicas, MC_REPLICAS_MAX);
	return 0;
}

/* Undo the replicas of version added by a put_start that failed midway. */
static void
unplace(struct master *m, struct mobj *o, uint64_t version)
{
	for (unsigned i = o->nrep; i-- > 0;)
		if (obj_reps(o)[i].version == version)
			ops_rep_remove(m, o, i, false);
}

static int
place(struct master *m, struct mobj *o, const struct placement *pl, uint64_t version, uint64_t size,
      struct mc_err *err)
{
	for (unsigned i = 0; i < pl->n; i++) {
		if (ops_rep_new(m, o, pl->peer[i], pl->tier[i], version, size) == NULL) {
			unplace(m, o, version);
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		}
	}
	return 0;
}

/*
 * What eviction can do for a put that found no room. A put waits only
 * for a round it joined or started: when its scopes rest (their last
 * round freed nothing) it fails at once, so the puts pipelined behind
 * it do not each sit out a wait that cannot end well.
 */
struct room {
	bool helps;	/* a round could make room, in principle */
	bool unplaced;	/* placement found no room (not the quota, not --max-objects) */
	uint64_t round; /* the latest round joined or started (0: none now) */
};

/*
 * One attempt at a put_start for tenant: 0 when req was answered with
 * the placement, else -1 with err, and *room says whether waiting may
 * help. With trigger the attempt joins or starts the rounds that make
 * room; a waiting put whose rounds are still pending passes false, so
 * it is not counted in them twice.
 */
static int
put_try(struct master *m, uint32_t tenant, const struct put_args *a, struct mc_req *req,
	bool trigger, struct room *room, struct mc_err *err)
{
	uint64_t now = mc_now_ms();
	struct placement pl;
	struct pending w;
	struct mobj *o;
	int64_t type;
	uint64_t h, version, add;

	room->helps = false;
	room->unplaced = false;
	room->round = 0;
	if (m->cfg.max_object_size > 0 && a->size > m->cfg.max_object_size) {
		char sz[32], most[32];

		return mc_err_set(err, MC_ERR_TOO_LARGE, "%s is over --max-object-size %s",
				  mc_fmt_size(a->size, sz, sizeof(sz)),
				  mc_fmt_size(m->cfg.max_object_size, most, sizeof(most)));
	}
	/* A counter that wrapped would hand out versions readers already saw. */
	if (m->store->version_seq >= VERSION_MAX)
		return mc_err_set(
			err, MC_ERR_TOO_LARGE,
			"no version left to write: the version counter is at its maximum");
	if ((type = store_tenant_type(m->store, tenant, a->type, a->tlen, err)) < 0)
		return -1;
	pl.n = 0;
	h = store_key_hash(tenant, a->key, a->klen);
	o = store_find(m->store, h, tenant, a->key, a->klen);
	if (o != NULL && !a->upsert)
		return mc_err_set(err, MC_ERR_EXISTS, "key exists");
	if (o != NULL && o->writing)
		return mc_err_set(err, MC_ERR_BUSY, "key is being written");
	/* A new object is charged its key and overhead too: objects of no bytes are not free. */
	add = o == NULL		  ? mc_add_sat(a->size, store_meta_cost(a->klen))
	      : a->size > o->size ? a->size - o->size
				  : 0;
	/* A new object past --max-objects waits for the store's round. */
	if (o == NULL &&
	    evict_objects_check(m, trigger ? &room->round : NULL, &room->helps, err) != 0)
		return -1;
	/* At its cap or over its quota, a tenant makes room among its own copies first. */
	if (o == NULL && evict_tenant_objects_check(m, tenant, add, trigger ? &room->round : NULL,
						    &room->helps, err) != 0)
		return -1;
	if (evict_quota_check(m, tenant, add, trigger ? &room->round : NULL, &room->helps, err) !=
	    0)
		return -1;
	version = m->store->version_seq + 1;
	if (o != NULL && a->size == o->size) {
		/* Upsert of the same size rewrites in place on the same peers. */
		const struct mrep *v = obj_creps(o);

		for (unsigned i = 0; i < o->nrep && pl.n < MC_REPLICAS_MAX; i++) {
			if (v[i].state != REP_COMPLETE || v[i].version != o->version ||
			    (a->tier != MC_TIER_NONE && v[i].tier != a->tier))
				continue;
			pl.peer[pl.n] = v[i].peer;
			pl.tier[pl.n++] = v[i].tier;
		}
	}
	if (pl.n == 0 &&
	    placement_pick(m, a->size, (unsigned)a->replicas, a->tier, &pl, err) != 0) {
		/* Nothing evicts inline on a put: rounds make the room. */
		if (err->code == MC_ERR_NO_SPACE) {
			room->unplaced = true;
			if (trigger)
				room->round = evict_no_space(m, a->size, (unsigned)a->replicas,
							     a->tier, &room->helps);
			else
				room->helps = true;
		}
		return -1;
	}
	memset(&w, 0, sizeof(w));
	w.version = version;
	w.size = a->size;
	w.checksum = a->checksum;
	w.type = (uint32_t)type;
	w.started = now;
	w.sp_action = a->sp_action;
	w.sp_ttl = a->sp_ttl;
	w.upsert = o != NULL;
	if (o == NULL) {
		struct state_obj f;

		memset(&f, 0, sizeof(f));
		f.version = version;
		f.size = a->size;
		f.checksum = a->checksum;
		f.type = (uint32_t)type;
		f.hard_pin = a->hard_pin;
		o = state_object_create(m, h, tenant, a->key, a->klen, a->group, a->glen, &f, err);
		if (o == NULL)
			return -1;
		o->created = now;
		o->last_access = now;
		store_access_new(m->store, o, a->parent_hash);
		store_count_miss(m->store);
	}
	if (state_write_begin(m, o, &w, err) == NULL) {
		if (!w.upsert)
			state_object_drop(m, o, NULL);
		return -1;
	}
	if (place(m, o, &pl, version, a->size, err) != 0) {
		state_write_end(m, o);
		if (!w.upsert)
			state_object_drop(m, o, NULL);
		return -1;
	}
	m->store->version_seq = version;

	const char *tname = m->store->tenants[tenant].name;
	const struct client *cl = req_client(req);
	struct mc_grant_scope scope = {
		tname, strlen(tname), a->key, a->klen, version, a->size, 0, MC_GRANT_WRITE,
	};
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "version", version);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, pl.n);
	const struct mrep *v = obj_creps(o);
	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].version == version)
			req_pack_replica(pk, m, peers_find(m->peers, v[i].peer), &v[i],
					 &cl->transports, &scope, NULL);
	mc_reply_end(req);
	return 0;
}

/* ---- waiting ---- */

static void
waiter_free(struct master *m, struct put_wait *w)
{
	struct put_waits *ws = m->put_waits;

	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		ws->head = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	else
		ws->tail = w->prev;
	ws->n--;
	if (w->timer != NULL)
		event_free(w->timer);
	free(w);
}

/* A put failed for good: when it found no room, say what held it (holds.h). */
static void
explain(struct master *m, const struct put_args *a, const struct room *room, struct mc_err *err)
{
	if (room->unplaced)
		holds_explain(m, a->size, (unsigned)a->replicas, a->tier, err);
}

/* The wait is over: answer with err (the last attempt's failure). */
static void
waiter_fail(struct master *m, struct put_wait *w, const struct room *room, struct mc_err *err)
{
	double waited = (double)(mc_mono_ns() - w->since_ns) / 1e9;

	explain(m, &w->a, room, err);
	m->put_waits->failed++;
	mc_metric_observe(m->put_waits->seconds, waited);
	if (err->code == MC_ERR_NO_SPACE || err->code == MC_ERR_QUOTA)
		handler_fail(w->req, err->code, "%s (waited %.0f ms for eviction)", err->msg,
			     waited * 1e3);
	else
		req_fail_err(w->req, err);
	waiter_free(m, w);
}

/*
 * Try a waiting put again. last: its --put-wait is over. Once the rounds
 * it waited for ended it joins or starts the next ones, and keeps
 * waiting only while there is such a round.
 */
static void
waiter_try(struct master *m, struct put_wait *w, bool last)
{
	bool trigger = evict_rounds_done(m) >= w->round;
	struct mc_err err = { 0 };
	struct room room;

	if (!mc_conn_is_open(w->req->conn)) {
		/* Its client went: nobody to place it for. */
		mc_reply_err(w->req, MC_ERR_UNAVAILABLE, "connection closed");
		waiter_free(m, w);
		return;
	}
	if (put_try(m, w->tenant, &w->a, w->req, trigger && !last, &room, &err) == 0) {
		m->put_waits->placed++;
		mc_metric_observe(m->put_waits->seconds,
				  (double)(mc_mono_ns() - w->since_ns) / 1e9);
		waiter_free(m, w);
		return;
	}
	if (last || !room.helps || (trigger && room.round == 0)) {
		waiter_fail(m, w, &room, &err);
		return;
	}
	if (trigger)
		w->round = room.round;
}

static void
waiter_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct put_wait *w = arg;

	(void)fd;
	(void)what;
	waiter_try(w->m, w, true);
}

/* After a round: every waiting put tries again, oldest first. */
static void
rounds_ended(struct master *m)
{
	struct put_wait *w = m->put_waits->head, *next;
	/* Puts that start waiting meanwhile wait for later rounds: stop at the current tail. */
	struct put_wait *last = m->put_waits->tail;

	while (w != NULL) {
		next = w->next;
		bool end = w == last;

		waiter_try(m, w, false);
		if (end)
			break;
		w = next;
	}
}

/* Copy a's strings into w->buf; a's pointers then point there. */
static void
copy_args(struct put_wait *w, const struct put_args *a)
{
	char *p = w->buf;

	w->a = *a;
	memcpy(p, a->key, a->klen);
	w->a.key = p;
	p += a->klen;
	memcpy(p, a->type, a->tlen);
	w->a.type = p;
	p += a->tlen;
	if (a->group != NULL) {
		memcpy(p, a->group, a->glen);
		w->a.group = p;
	}
}

/* Make req wait for its rounds; -1 when it cannot (it is then still the caller's). */
static int
wait_for_room(struct master *m, struct mc_req *req, uint32_t tenant, const struct put_args *a,
	      const struct room *room)
{
	struct put_waits *ws = m->put_waits;
	struct timeval tv = mc_ms_timeval(m->cfg.put_wait);
	struct put_wait *w;

	if (ws->n >= WAITERS_MAX)
		return -1;
	w = calloc(1, sizeof(*w) + a->klen + a->tlen + (a->group != NULL ? a->glen : 0));
	if (w == NULL)
		return -1;
	w->m = m;
	w->tenant = tenant;
	w->round = room->round;
	w->since_ns = mc_mono_ns();
	copy_args(w, a);
	w->timer = evtimer_new(m->base, waiter_timeout, w);
	if (w->timer == NULL || evtimer_add(w->timer, &tv) != 0) {
		if (w->timer != NULL)
			event_free(w->timer);
		free(w);
		return -1;
	}
	w->req = mc_req_defer(req);
	if (w->req == NULL || mc_req_hold(w->req) != 0) {
		struct mc_req *d = w->req;

		event_free(w->timer);
		free(w);
		if (d == NULL)
			return -1;
		/* Deferred but not held: the request is d's now, answered right away. */
		handler_fail(d, MC_ERR_SYSTEM, "cannot wait for room");
		return 0;
	}
	w->prev = ws->tail;
	if (ws->tail != NULL)
		ws->tail->next = w;
	else
		ws->head = w;
	ws->tail = w;
	ws->n++;
	ws->waited++;
	return 0;
}

static void
h_put_start(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct put_args a;
	struct mc_err err;
	struct room room;
	int64_t t;
	uint32_t tenant;

	if (put_args_parse(req->params, &a, &err) != 0 ||
	    softpin_parse(m, req->params, &a.sp_action, &a.sp_ttl, &err) != 0 ||
	    (t = req_tenant_make(req, &err)) < 0)
		goto fail;
	tenant = (uint32_t)t;
	if (a.parent != NULL)
		a.parent_hash = store_key_hash(tenant, a.parent, a.plen);
	a.parent = NULL; /* the hash is all a waiting put keeps */
	if (put_try(m, tenant, &a, req, true, &room, &err) == 0)
		return;
	if (room.helps && room.round != 0 && m->cfg.put_wait > 0 &&
	    wait_for_room(m, req, tenant, &a, &room) == 0)
		return;
	explain(m, &a, &room, &err);
fail:
	req_fail_err(req, &err);
}

static void put_collect(struct mc_metrics *r, void *arg);

int
put_init(struct master *m, struct mc_err *err)
{
	struct put_waits *ws = m->put_waits;

	memset(ws, 0, sizeof(*ws));
	ws->seconds = mc_metric_get(m->mx->reg, "mc_put_wait_seconds", MC_HISTOGRAM,
				    "How long a put waited for eviction to make room.", NULL, NULL);
	if (ws->seconds == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for put metrics");
	evict_on_rounds_ended(m, rounds_ended);
	return 0;
}

void
put_free(struct master *m)
{
	struct put_waits *ws = m->put_waits;

	holds_free(&ws->holds);
	while (ws->head != NULL) {
		struct put_wait *w = ws->head;

		/* The loop is gone: the connections are, too. */
		mc_reply_err(w->req, MC_ERR_UNAVAILABLE, "master stopping");
		waiter_free(m, w);
	}
}

static void
put_collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;

	const struct put_waits *ws = m->put_waits;
	struct mc_metric *s;

	if ((s = mc_metric_get(r, "mc_put_waiting", MC_GAUGE,
			       "Puts waiting for eviction to make room.", NULL, NULL)) != NULL)
		mc_metric_set(s, (double)ws->n);
	if ((s = mc_metric_get(r, "mc_put_waits_total", MC_COUNTER,
			       "Puts that waited for eviction, by outcome.", "outcome",
			       "placed")) != NULL)
		mc_metric_set(s, (double)ws->placed);
	if ((s = mc_metric_get(r, "mc_put_waits_total", MC_COUNTER,
			       "Puts that waited for eviction, by outcome.", "outcome",
			       "failed")) != NULL)
		mc_metric_set(s, (double)ws->failed);
}

/*
 * Shared by put_end and put_revoke: find the write in progress and check
 * that every named replica id belongs to it.
 */
static struct mobj *
write_target(struct mc_req *req, const msgpack_object_array **ids)
{
	struct master *m = req->ctx;
	const struct client *cl = req_client(req);
	struct mc_err err;
	const char *key;
	size_t len;
	uint64_t version;
	struct mobj *o;
	const struct pending *p;

	if (req_need_key(req->params, &key, &len, &err) != 0 ||
	    req_need_u64(req->params, "version", &version, &err) != 0) {
		req_fail_err(req, &err);
		return NULL;
	}
	o = store_find(m->store, store_key_hash(cl->tenant, key, len), cl->tenant, key, len);
	if (o == NULL) {
		handler_fail(req, MC_ERR_NOT_FOUND, "key not found");
		return NULL;
	}
	p = store_pending_get(m->store, o);
	if (p == NULL || p->version != version) {
		handler_fail(req, MC_ERR_VERSION, "no write of version %llu in progress",
			     (unsigned long long)version);
		return NULL;
	}
	*ids = mc_map_array(req->params, "replica_ids");
	if (*ids == NULL && mc_map_get(req->params, "replica_ids") != NULL &&
	    mc_map_get(req->params, "replica_ids")->type != MSGPACK_OBJECT_NIL) {
		handler_fail(req, MC_ERR_INVALID, "field 'replica_ids' must be an array");
		return NULL;
	}
	for (uint32_t j = 0; *ids != NULL && j < (*ids)->size; j++) {
		const msgpack_object *id = &(*ids)->ptr[j];
		const struct mrep *v = obj_creps(o);
		bool found = false;

		if (id->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
			handler_fail(req, MC_ERR_INVALID, "replica_ids must be unsigned integers");
			return NULL;
		}
		for (unsigned i = 0; i < o->nrep && !found; i++)
			found = v[i].id == id->via.u64 && v[i].version == version;
		if (!found) {
			handler_fail(req, MC_ERR_NOT_FOUND, "no replica %llu of version %llu",
				     (unsigned long long)id->via.u64, (unsigned long long)version);
			return NULL;
		}
	}
	return o;
}

static void
h_put_end(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const msgpack_object_array *ids;
	struct mobj *o = write_target(req, &ids);

	if (o != NULL)
		commit_end(m, req, o, ids);
}

static void
h_put_revoke(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const msgpack_object_array *ids;
	struct mobj *o = write_target(req, &ids);

	if (o == NULL)
		return;
	uint64_t version = store_pending_get(m->store, o)->version;
	for (unsigned i = o->nrep; i-- > 0;) {
		const struct mrep *r = &obj_reps(o)[i];
		if (r->version == version && r->state == REP_PROCESSING && req_ids_name(ids, r->id))
			ops_rep_remove(m, o, i, true);
	}
	ops_settle(m, o, NULL);
	mc_reply_ok_empty(req);
}

const struct mc_method put_methods[] = {
	{ "put_start", h_put_start, 0 },
	{ "put_end", h_put_end, 0 },
	{ "put_revoke", h_put_revoke, 0 },
	{ NULL, NULL, 0 },
};

const struct master_module put_module = {
	.name = "puts",
	.init = put_init,
	.free = put_free,
	.methods = put_methods,
	.collect = put_collect,
};
