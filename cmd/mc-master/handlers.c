/*
 * RPC handlers (the protocol is in mc/proto.h). Every field read from a
 * request is checked for type and range before use; strings from the
 * message are not NUL-terminated and die with it, so anything kept is
 * copied (the store copies keys and names).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "candidates.h"
#include "evict.h"
#include "handlers.h"
#include "master.h"
#include "ops.h"
#include "peerlink.h"
#include "placement.h"
#include "request.h"

/* Keys per batch call: keeps one reply well under a client's max message. */
#define BATCH_MAX 10000
#define LIST_DEFAULT 1000
#define LIST_MAX 10000
/* Key bytes in one list reply, for the same reason. */
#define LIST_KEY_BYTES (8u << 20)

/* A readable replica with what the caller needs to rank it. */
struct cand {
	const struct mrep *r;
	const struct peer *p;
	int rank;
};

static struct master *
begin(struct mc_req *req, enum method k)
{
	struct master *m = req->ctx;

	mmetrics_request(&m->mx, k);
	return m;
}

/* A str or bin object as bytes; -1 for anything else. */
static int
obj_bytes(const msgpack_object *o, const char **s, size_t *len)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		*s = o->via.str.ptr;
		*len = o->via.str.size;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		*s = o->via.bin.ptr;
		*len = o->via.bin.size;
		return 0;
	}
	return -1;
}

static int
check_key(size_t len, struct mc_err *err)
{
	if (len == 0 || len > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "key length %zu out of range 1..%d", len,
				  MC_KEY_MAX);
	return 0;
}

static int
need_key(const msgpack_object *params, const char **key, size_t *len, struct mc_err *err)
{
	int rc = mc_map_str(params, "key", key, len, err);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return mc_err_set(err, MC_ERR_INVALID, "missing field 'key'");
	return check_key(*len, err);
}

/* Optional name field: 0 absent, 1 present and valid, -1 invalid. */
static int
opt_name(const msgpack_object *params, const char *field, const char **s, size_t *len,
	 struct mc_err *err)
{
	int rc = mc_map_str(params, field, s, len, err);

	if (rc <= 0)
		return rc;
	if (*len == 0 || *len > MC_NAME_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "%s length %zu out of range 1..%d", field,
				  *len, MC_NAME_MAX);
	if (!store_name_ok(*s, *len))
		return mc_err_set(err, MC_ERR_INVALID, "%s must be printable ASCII without spaces",
				  field);
	return 1;
}

/* The keys array of a batch call, or NULL with err. */
static const msgpack_object_array *
need_keys(const msgpack_object *params, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(params, "keys");

	if (a == NULL) {
		mc_err_set(err, MC_ERR_INVALID, "missing array field 'keys'");
		return NULL;
	}
	if (a->size > BATCH_MAX) {
		mc_err_set(err, MC_ERR_TOO_LARGE, "%u keys in one call, limit %d", a->size,
			   BATCH_MAX);
		return NULL;
	}
	return a;
}

static void
pack_err(msgpack_packer *pk, int code, const char *msg)
{
	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "code", mc_status_name(code));
	mc_pack_kv_str(pk, "msg", msg);
}

static struct mobj *
lookup(struct master *m, uint32_t tenant, const char *key, size_t len)
{
	return store_find(&m->store, store_key_hash(tenant, key, len), tenant, key, len);
}

/*
 * Batch lookups hash a few keys ahead and prefetch their slots, so the
 * cache misses of consecutive keys overlap instead of queueing.
 */
#define PREFETCH_AHEAD 8

static uint64_t
prefetch_key(struct master *m, uint32_t tenant, const msgpack_object *k)
{
	const char *key;
	size_t len;
	uint64_t hash;

	if (obj_bytes(k, &key, &len) != 0)
		return 0;
	hash = store_key_hash(tenant, key, len);
	store_prefetch(&m->store, hash);
	return hash;
}

static bool
has_complete(const struct mobj *o)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].state == REP_COMPLETE && v[i].version == o->version)
			return true;
	return false;
}

static bool
leased(const struct mobj *o, uint64_t now)
{
	return o->lease_deadline > now;
}

static void
pack_replica(msgpack_packer *pk, const struct peer *p, const struct mrep *r)
{
	msgpack_pack_map(pk, 6);
	mc_pack_kv_u64(pk, "replica_id", r->id);
	mc_pack_kv_u64(pk, "peer_id", r->peer);
	if (p != NULL && p->packed[r->tier] != NULL) {
		/* The peer's fixed fields, packed once at registration. */
		pk->callback(pk->data, p->packed[r->tier], p->packed_len[r->tier]);
		return;
	}
	mc_pack_kv_str(pk, "addr", p != NULL ? p->addr : "");
	mc_pack_kv_str(pk, "tier", tier_name(r->tier));
	mc_pack_kv_str(pk, "host", p != NULL ? p->host : "");
	mc_pack_kv_str(pk, "domain", p != NULL ? p->domain : "");
}

/*
 * The readable replicas of o, best first for this client: same host,
 * then same domain, then dram before other tiers; stable otherwise.
 */
static unsigned
readable(const struct master *m, const struct mobj *o, const struct client *cl, struct cand *out)
{
	const struct mrep *v = obj_creps(o);
	unsigned n = 0;

	for (unsigned i = 0; i < o->nrep; i++) {
		const struct peer *p;
		int rank;

		if (v[i].state != REP_COMPLETE || v[i].version != o->version)
			continue;
		p = peers_find(&m->peers, v[i].peer);
		if (p == NULL)
			continue;
		if (cl->host[0] != '\0' && strcmp(cl->host, p->host) == 0)
			rank = 0;
		else if (cl->domain[0] != '\0' && strcmp(cl->domain, p->domain) == 0)
			rank = 2;
		else
			rank = 4;
		rank += v[i].tier != TIER_DRAM;
		/* A peer without its control link is likely dead: try it last. */
		if (p->conn == NULL)
			rank += 8;
		unsigned j = n++;
		while (j > 0 && out[j - 1].rank > rank) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = (struct cand){ &v[i], p, rank };
	}
	return n;
}

/* A read: lease the object (and its whole group), count the access. */
static void
touch(struct master *m, struct mobj *o, uint64_t now)
{
	uint64_t until = mc_add_sat(now, m->cfg.lease_ttl);
	struct group *g = store_group_get(&m->store, o->group);

	if (g != NULL) {
		for (uint32_t i = 0; i < g->n; i++)
			if (g->members[i]->lease_deadline < until)
				g->members[i]->lease_deadline = until;
	} else if (o->lease_deadline < until) {
		o->lease_deadline = until;
	}
	o->last_access = now;
	if (o->access_count != UINT32_MAX)
		o->access_count++;
}

/* The fields of a get_replica_list answer, after "key" for batch items. */
static void
pack_grl(msgpack_packer *pk, const struct master *m, const struct mobj *o, const struct cand *c,
	 unsigned n)
{
	msgpack_pack_map(pk, 6);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
	mc_pack_kv_str(pk, "type", store_type_name(&m->store, o->type));
	mc_pack_kv_u64(pk, "lease_ms", m->cfg.lease_ttl);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, n);
	for (unsigned i = 0; i < n; i++)
		pack_replica(pk, c[i].p, c[i].r);
}

static void
h_hello(struct mc_req *req)
{
	struct master *m = begin(req, M_HELLO);
	struct client *cl = req_client_get(req);
	struct mc_err err;
	const char *s;
	size_t len;
	int64_t tenant = 0;
	int rc;

	if (cl == NULL) {
		handler_fail(req, M_HELLO, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	rc = opt_name(req->params, "tenant", &s, &len, &err);
	if (rc < 0)
		goto bad;
	if (rc > 0 && (tenant = store_tenant_intern(&m->store, s, len, &err)) < 0)
		goto bad;
	if (mc_map_strcpy(req->params, "host", cl->host, sizeof(cl->host), &err) < 0 ||
	    mc_map_strcpy(req->params, "domain", cl->domain, sizeof(cl->domain), &err) < 0)
		goto bad;
	cl->tenant = (uint32_t)tenant;
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "version", MC_PROTO_VERSION);
	mc_pack_kv_u64(pk, "max_msg", MC_WIRE_DEFAULT_MAX_MSG);
	mc_pack_kv_str(pk, "server", "mc-master " MASTER_VERSION);
	mc_reply_end(req);
	return;
bad:
	req_fail_err(req, M_HELLO, &err);
}

/* ---- writes ---- */

struct put_args {
	const char *key, *type, *group;
	size_t klen, tlen, glen;
	uint64_t size, replicas, checksum;
	bool hard_pin, upsert;
	uint8_t sp_action;
	uint64_t sp_ttl;
};

static int
put_args_parse(const msgpack_object *params, struct put_args *a, struct mc_err *err)
{
	memset(a, 0, sizeof(*a));
	a->replicas = 1;
	a->type = MC_DEFAULT_TYPE;
	a->tlen = strlen(MC_DEFAULT_TYPE);
	if (need_key(params, &a->key, &a->klen, err) != 0 ||
	    req_need_u64(params, "size", &a->size, err) != 0 ||
	    mc_map_u64(params, "replicas", &a->replicas, err) < 0 ||
	    mc_map_u64(params, "checksum", &a->checksum, err) < 0 ||
	    mc_map_bool(params, "hard_pin", &a->hard_pin, err) < 0 ||
	    mc_map_bool(params, "upsert", &a->upsert, err) < 0 ||
	    opt_name(params, "type", &a->type, &a->tlen, err) < 0 ||
	    opt_name(params, "group", &a->group, &a->glen, err) < 0)
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

static void
h_put_start(struct mc_req *req)
{
	struct master *m = begin(req, M_PUT_START);
	const struct client *cl = req_client(req);
	uint64_t now = mc_now_ms();
	struct put_args a;
	struct placement pl;
	struct pending *p;
	struct mc_err err;
	struct mobj *o;
	int64_t type;
	uint64_t h, version;

	if (put_args_parse(req->params, &a, &err) != 0 ||
	    softpin_parse(m, req->params, &a.sp_action, &a.sp_ttl, &err) != 0)
		goto fail;
	if ((type = store_type_intern(&m->store, a.type, a.tlen, &err)) < 0)
		goto fail;
	pl.n = 0;
	h = store_key_hash(cl->tenant, a.key, a.klen);
	o = store_find(&m->store, h, cl->tenant, a.key, a.klen);
	if (o != NULL && !a.upsert) {
		handler_fail(req, M_PUT_START, MC_ERR_EXISTS, "key exists");
		return;
	}
	if (o != NULL && o->writing) {
		handler_fail(req, M_PUT_START, MC_ERR_BUSY, "key is being written");
		return;
	}
	/* Over its quota, a tenant makes room among its own copies first. */
	if (evict_quota_check(m, cl->tenant,
			      o == NULL		 ? a.size
			      : a.size > o->size ? a.size - o->size
						 : 0,
			      &err) != 0)
		goto fail;
	version = m->store.version_seq + 1;
	if (o != NULL) {
		/* Upsert of the same size rewrites in place on the same peers. */
		if (a.size == o->size) {
			const struct mrep *v = obj_creps(o);
			for (unsigned i = 0; i < o->nrep && pl.n < MC_REPLICAS_MAX; i++) {
				if (v[i].state != REP_COMPLETE || v[i].version != o->version)
					continue;
				pl.peer[pl.n] = v[i].peer;
				pl.tier[pl.n++] = v[i].tier;
			}
		}
		if ((a.size != o->size || pl.n == 0) &&
		    placement_pick(m, a.size, (unsigned)a.replicas, &pl, &err) != 0)
			goto fail;
		p = store_pending_new(&m->store, o, &err);
		if (p == NULL)
			goto fail;
		p->upsert = true;
	} else {
		if (placement_pick(m, a.size, (unsigned)a.replicas, &pl, &err) != 0)
			goto fail;
		o = store_create(&m->store, h, cl->tenant, a.key, a.klen, a.size, a.group, a.glen,
				 &err);
		if (o == NULL)
			goto fail;
		o->version = version;
		o->checksum = a.checksum;
		o->type = (uint32_t)type;
		o->hard_pin = a.hard_pin;
		o->created = now;
		o->last_access = now;
		p = store_pending_new(&m->store, o, &err);
		if (p == NULL) {
			store_destroy(&m->store, o);
			goto fail;
		}
	}
	p->version = version;
	p->size = a.size;
	p->checksum = a.checksum;
	p->type = (uint32_t)type;
	p->started = now;
	p->sp_action = a.sp_action;
	p->sp_ttl = a.sp_ttl;
	if (place(m, o, &pl, version, a.size, &err) != 0) {
		bool upsert = p->upsert;
		store_pending_del(&m->store, o);
		if (!upsert)
			store_destroy(&m->store, o);
		goto fail;
	}
	m->store.version_seq = version;

	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "version", version);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, pl.n);
	const struct mrep *v = obj_creps(o);
	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].version == version)
			pack_replica(pk, peers_find(&m->peers, v[i].peer), &v[i]);
	mc_reply_end(req);
	return;
fail:
	req_fail_err(req, M_PUT_START, &err);
}

/*
 * Shared by put_end and put_revoke: find the write in progress and check
 * that every named replica id belongs to it.
 */
static struct mobj *
write_target(struct mc_req *req, enum method k, const msgpack_object_array **ids)
{
	struct master *m = req->ctx;
	const struct client *cl = req_client(req);
	struct mc_err err;
	const char *key;
	size_t len;
	uint64_t version;
	struct mobj *o;
	const struct pending *p;

	if (need_key(req->params, &key, &len, &err) != 0 ||
	    req_need_u64(req->params, "version", &version, &err) != 0) {
		req_fail_err(req, k, &err);
		return NULL;
	}
	o = lookup(m, cl->tenant, key, len);
	if (o == NULL) {
		handler_fail(req, k, MC_ERR_NOT_FOUND, "key not found");
		return NULL;
	}
	p = store_pending_get(&m->store, o);
	if (p == NULL || p->version != version) {
		handler_fail(req, k, MC_ERR_VERSION, "no write of version %llu in progress",
			     (unsigned long long)version);
		return NULL;
	}
	*ids = mc_map_array(req->params, "replica_ids");
	if (*ids == NULL && mc_map_get(req->params, "replica_ids") != NULL &&
	    mc_map_get(req->params, "replica_ids")->type != MSGPACK_OBJECT_NIL) {
		handler_fail(req, k, MC_ERR_INVALID, "field 'replica_ids' must be an array");
		return NULL;
	}
	for (uint32_t j = 0; *ids != NULL && j < (*ids)->size; j++) {
		const msgpack_object *id = &(*ids)->ptr[j];
		const struct mrep *v = obj_creps(o);
		bool found = false;

		if (id->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
			handler_fail(req, k, MC_ERR_INVALID,
				     "replica_ids must be unsigned integers");
			return NULL;
		}
		for (unsigned i = 0; i < o->nrep && !found; i++)
			found = v[i].id == id->via.u64 && v[i].version == version;
		if (!found) {
			handler_fail(req, k, MC_ERR_NOT_FOUND, "no replica %llu of version %llu",
				     (unsigned long long)id->via.u64, (unsigned long long)version);
			return NULL;
		}
	}
	return o;
}

static bool
named(const msgpack_object_array *ids, uint32_t id)
{
	if (ids == NULL)
		return true;
	for (uint32_t j = 0; j < ids->size; j++)
		if (ids->ptr[j].via.u64 == id)
			return true;
	return false;
}

static void
h_put_end(struct mc_req *req)
{
	struct master *m = begin(req, M_PUT_END);
	const msgpack_object_array *ids;
	struct mobj *o = write_target(req, M_PUT_END, &ids);

	if (o == NULL)
		return;
	uint64_t version = store_pending_get(&m->store, o)->version;
	struct mrep *v = obj_reps(o);
	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].version == version && v[i].state == REP_PROCESSING && named(ids, v[i].id))
			peers_rep_complete(&m->peers, &v[i]);
	ops_settle(m, o, NULL);
	mc_reply_ok_empty(req);
}

static void
h_put_revoke(struct mc_req *req)
{
	struct master *m = begin(req, M_PUT_REVOKE);
	const msgpack_object_array *ids;
	struct mobj *o = write_target(req, M_PUT_REVOKE, &ids);

	if (o == NULL)
		return;
	uint64_t version = store_pending_get(&m->store, o)->version;
	for (unsigned i = o->nrep; i-- > 0;) {
		const struct mrep *r = &obj_reps(o)[i];
		if (r->version == version && r->state == REP_PROCESSING && named(ids, r->id))
			ops_rep_remove(m, o, i, true);
	}
	ops_settle(m, o, NULL);
	mc_reply_ok_empty(req);
}

/* ---- reads ---- */

static void
h_get_replica_list(struct mc_req *req)
{
	uint64_t t0 = mc_mono_ns();
	struct master *m = begin(req, M_GET_REPLICA_LIST);
	const struct client *cl = req_client(req);
	struct cand c[2 * MC_REPLICAS_MAX];
	struct mc_err err;
	const char *key;
	size_t len;
	struct mobj *o;
	unsigned n;

	if (need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, M_GET_REPLICA_LIST, &err);
		goto out;
	}
	o = lookup(m, cl->tenant, key, len);
	if (o == NULL || (n = readable(m, o, cl, c)) == 0) {
		handler_fail(req, M_GET_REPLICA_LIST, MC_ERR_NOT_FOUND, "key not found");
		goto out;
	}
	touch(m, o, mc_now_ms());
	pack_grl(mc_reply_ok_begin(req), m, o, c, n);
	mc_reply_end(req);
out:
	mc_metric_observe(m->mx.grl_seconds, (double)(mc_mono_ns() - t0) / 1e9);
}

static void
h_batch_get_replica_list(struct mc_req *req)
{
	uint64_t t0 = mc_mono_ns();
	struct master *m = begin(req, M_BATCH_GET_REPLICA_LIST);
	const struct client *cl = req_client(req);
	struct cand c[2 * MC_REPLICAS_MAX];
	uint64_t now = mc_now_ms(), hashes[PREFETCH_AHEAD];
	struct mc_err err;
	const msgpack_object_array *keys = need_keys(req->params, &err);

	if (keys == NULL) {
		req_fail_err(req, M_BATCH_GET_REPLICA_LIST, &err);
		goto out;
	}
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, keys->size);
	for (uint32_t j = 0; j < PREFETCH_AHEAD && j < keys->size; j++)
		hashes[j % PREFETCH_AHEAD] = prefetch_key(m, cl->tenant, &keys->ptr[j]);
	for (uint32_t j = 0; j < keys->size; j++) {
		const char *key;
		size_t len;
		struct mobj *o = NULL;
		unsigned n = 0;
		uint64_t hash = hashes[j % PREFETCH_AHEAD];

		if (j + PREFETCH_AHEAD < keys->size)
			hashes[j % PREFETCH_AHEAD] =
				prefetch_key(m, cl->tenant, &keys->ptr[j + PREFETCH_AHEAD]);
		/* Items answer the keys in order; a failed one is {error}. */
		if (obj_bytes(&keys->ptr[j], &key, &len) != 0 || check_key(len, &err) != 0) {
			msgpack_pack_map(pk, 1);
			mc_pack_key(pk, "error");
			pack_err(pk, MC_ERR_INVALID, "key must be a string of 1..4096 bytes");
			continue;
		}
		o = store_find(&m->store, hash, cl->tenant, key, len);
		if (o == NULL || (n = readable(m, o, cl, c)) == 0) {
			msgpack_pack_map(pk, 1);
			mc_pack_key(pk, "error");
			pack_err(pk, MC_ERR_NOT_FOUND, "key not found");
			continue;
		}
		touch(m, o, now);
		pack_grl(pk, m, o, c, n);
	}
	mc_reply_end(req);
out:
	mc_metric_observe(m->mx.grl_seconds, (double)(mc_mono_ns() - t0) / 1e9);
}

static void
h_exist(struct mc_req *req)
{
	struct master *m = begin(req, M_EXIST);
	struct mc_err err;
	const char *key;
	size_t len;

	if (need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, M_EXIST, &err);
		return;
	}
	struct mobj *o = lookup(m, req_client(req)->tenant, key, len);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_bool(pk, "exists", o != NULL && has_complete(o));
	mc_reply_end(req);
}

static void
h_batch_exist(struct mc_req *req)
{
	struct master *m = begin(req, M_BATCH_EXIST);
	uint32_t tenant = req_client(req)->tenant;
	struct mc_err err;
	const msgpack_object_array *keys = need_keys(req->params, &err);

	if (keys == NULL) {
		req_fail_err(req, M_BATCH_EXIST, &err);
		return;
	}
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "exists");
	msgpack_pack_array(pk, keys->size);
	for (uint32_t j = 0; j < keys->size; j++) {
		const char *key;
		size_t len;
		struct mobj *o = NULL;

		if (obj_bytes(&keys->ptr[j], &key, &len) == 0 && check_key(len, &err) == 0)
			o = lookup(m, tenant, key, len);
		if (o != NULL && has_complete(o))
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
	}
	mc_reply_end(req);
}

/* ---- removal ---- */

/* Remove one key; 0 or -1 with err (not_found, leased). */
static int
remove_one(struct master *m, uint32_t tenant, const char *key, size_t len, bool force,
	   struct mc_err *err)
{
	struct mobj *o = lookup(m, tenant, key, len);
	uint64_t now = mc_now_ms();

	if (o == NULL)
		return mc_err_set(err, MC_ERR_NOT_FOUND, "key not found");
	if (!force && leased(o, now))
		return mc_err_set(err, MC_ERR_LEASED, "key is leased for %llu ms more; use force",
				  (unsigned long long)(o->lease_deadline - now));
	ops_obj_erase(m, o, true, NULL);
	return 0;
}

static void
h_remove(struct mc_req *req)
{
	struct master *m = begin(req, M_REMOVE);
	struct mc_err err;
	const char *key;
	size_t len;
	bool force = false;

	if (need_key(req->params, &key, &len, &err) != 0 ||
	    mc_map_bool(req->params, "force", &force, &err) < 0 ||
	    remove_one(m, req_client(req)->tenant, key, len, force, &err) != 0) {
		req_fail_err(req, M_REMOVE, &err);
		return;
	}
	mc_reply_ok_empty(req);
}

static void
h_batch_remove(struct mc_req *req)
{
	struct master *m = begin(req, M_BATCH_REMOVE);
	uint32_t tenant = req_client(req)->tenant;
	struct mc_err err;
	bool force = false;
	const msgpack_object_array *keys = need_keys(req->params, &err);

	if (keys == NULL || mc_map_bool(req->params, "force", &force, &err) < 0) {
		req_fail_err(req, M_BATCH_REMOVE, &err);
		return;
	}
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "errors");
	msgpack_pack_array(pk, keys->size);
	for (uint32_t j = 0; j < keys->size; j++) {
		const char *key;
		size_t len;

		if (obj_bytes(&keys->ptr[j], &key, &len) != 0)
			mc_err_set(&err, MC_ERR_INVALID, "key must be a string");
		else if (check_key(len, &err) == 0 &&
			 remove_one(m, tenant, key, len, force, &err) == 0) {
			msgpack_pack_nil(pk);
			continue;
		}
		pack_err(pk, err.code, err.msg);
	}
	mc_reply_end(req);
}

static bool
has_prefix(const struct mobj *o, uint32_t tenant, const char *prefix, size_t plen)
{
	return o->tenant == tenant && o->key_len >= plen && memcmp(o->key, prefix, plen) == 0;
}

/* Objects of tenant whose key starts with prefix; NULL only when out of memory. */
static struct mobj **
collect_prefix(struct master *m, uint32_t tenant, const char *prefix, size_t plen,
	       bool readable_only, size_t *n)
{
	size_t cap = 64, cur = 0;
	struct mobj **v = malloc(cap * sizeof(*v)), *o;

	*n = 0;
	if (v == NULL)
		return NULL;
	while ((o = mc_htab_next(&m->store.objects, &cur)) != NULL) {
		if (!has_prefix(o, tenant, prefix, plen))
			continue;
		if (readable_only && !has_complete(o))
			continue;
		if (*n == cap) {
			struct mobj **nv = realloc(v, 2 * cap * sizeof(*v));
			if (nv == NULL) {
				free(v);
				return NULL;
			}
			v = nv;
			cap *= 2;
		}
		v[(*n)++] = o;
	}
	return v;
}

static void
h_remove_prefix(struct mc_req *req)
{
	struct master *m = begin(req, M_REMOVE_PREFIX);
	uint32_t tenant = req_client(req)->tenant;
	uint64_t now = mc_now_ms(), removed = 0, skipped = 0;
	struct mc_err err;
	const char *prefix;
	size_t plen, n;
	bool force = false;
	int rc = mc_map_str(req->params, "prefix", &prefix, &plen, &err);

	if (rc == 0)
		mc_err_set(&err, MC_ERR_INVALID, "missing field 'prefix'");
	if (rc <= 0 || mc_map_bool(req->params, "force", &force, &err) < 0) {
		req_fail_err(req, M_REMOVE_PREFIX, &err);
		return;
	}
	struct mobj **v = collect_prefix(m, tenant, prefix, plen, false, &n);
	if (v == NULL) {
		handler_fail(req, M_REMOVE_PREFIX, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!force && leased(v[i], now)) {
			skipped++;
			continue;
		}
		ops_obj_erase(m, v[i], true, NULL);
		removed++;
	}
	free(v);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "removed", removed);
	mc_pack_kv_u64(pk, "skipped", skipped);
	mc_reply_end(req);
}

/* ---- listing and inspection ---- */

static int
keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int
obj_keycmp(const void *x, const void *y)
{
	const struct mobj *a = *(struct mobj *const *)x;
	const struct mobj *b = *(struct mobj *const *)y;

	return keycmp(a->key, a->key_len, b->key, b->key_len);
}

static void
h_list(struct mc_req *req)
{
	struct master *m = begin(req, M_LIST);
	uint32_t tenant = req_client(req)->tenant;
	const char *prefix = "", *after = NULL;
	size_t plen = 0, alen = 0, n, first = 0, out, bytes = 0;
	uint64_t limit = LIST_DEFAULT;
	struct mc_err err;

	if (mc_map_str(req->params, "prefix", &prefix, &plen, &err) < 0 ||
	    mc_map_str(req->params, "after", &after, &alen, &err) < 0 ||
	    mc_map_u64(req->params, "limit", &limit, &err) < 0) {
		req_fail_err(req, M_LIST, &err);
		return;
	}
	if (limit > LIST_MAX)
		limit = LIST_MAX;
	struct mobj **v = collect_prefix(m, tenant, prefix, plen, true, &n);
	if (v == NULL) {
		handler_fail(req, M_LIST, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	qsort(v, n, sizeof(*v), obj_keycmp);
	if (after != NULL) {
		/* Binary search for the first key strictly after `after`. */
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (keycmp(v[mid]->key, v[mid]->key_len, after, alen) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		first = lo;
	}
	for (out = 0; first + out < n && out < limit && bytes < LIST_KEY_BYTES; out++)
		bytes += v[first + out]->key_len;
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_key(pk, "keys");
	msgpack_pack_array(pk, out);
	for (size_t i = first; i < first + out; i++) {
		msgpack_pack_map(pk, 4);
		mc_pack_kv_strn(pk, "key", v[i]->key, v[i]->key_len);
		mc_pack_kv_u64(pk, "size", v[i]->size);
		mc_pack_kv_u64(pk, "version", v[i]->version);
		mc_pack_kv_str(pk, "type", store_type_name(&m->store, v[i]->type));
	}
	mc_pack_kv_bool(pk, "more", first + out < n);
	mc_reply_end(req);
	free(v);
}

static void
h_stat(struct mc_req *req)
{
	struct master *m = begin(req, M_STAT);
	const struct client *cl = req_client(req);
	struct mc_err err;
	const char *key;
	size_t len;
	struct mobj *o;

	if (need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, M_STAT, &err);
		return;
	}
	o = lookup(m, cl->tenant, key, len);
	if (o == NULL) {
		handler_fail(req, M_STAT, MC_ERR_NOT_FOUND, "key not found");
		return;
	}
	const struct group *g = store_group_get(&m->store, o->group);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 15 + (g != NULL));
	mc_pack_kv_strn(pk, "key", o->key, o->key_len);
	mc_pack_kv_str(pk, "tenant", m->store.tenants[o->tenant].name);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
	mc_pack_kv_str(pk, "type", store_type_name(&m->store, o->type));
	if (g != NULL)
		mc_pack_kv_strn(pk, "group", g->name, g->name_len);
	mc_pack_kv_bool(pk, "hard_pin", o->hard_pin);
	mc_pack_kv_u64(pk, "created", o->created);
	mc_pack_kv_u64(pk, "last_access", o->last_access);
	mc_pack_kv_u64(pk, "access_count", o->access_count);
	mc_pack_kv_u64(pk, "lease_deadline", o->lease_deadline);
	/* What eviction would see now; reading it changes nothing. */
	uint64_t now = mc_now_ms();
	mc_pack_kv_str(pk, "soft_pin", softpin_state_name(m, o, now));
	mc_pack_kv_u64(pk, "soft_pin_deadline", softpin_protects(o, now) ? o->sp_deadline : 0);
	mc_pack_kv_bool(pk, "writing", o->writing);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, o->nrep);
	const struct mrep *v = obj_creps(o);
	for (unsigned i = 0; i < o->nrep; i++) {
		const struct peer *p = peers_find(&m->peers, v[i].peer);
		/* A replica from a restored snapshot that no peer confirmed yet. */
		const struct ghost *gh = p == NULL ? recon_ghost(&m->recon, v[i].peer) : NULL;
		msgpack_pack_map(pk, 9);
		mc_pack_kv_u64(pk, "replica_id", v[i].id);
		mc_pack_kv_u64(pk, "peer_id", v[i].peer);
		mc_pack_kv_str(pk, "addr", p != NULL ? p->addr : gh != NULL ? gh->addr : "");
		mc_pack_kv_str(pk, "host", p != NULL ? p->host : gh != NULL ? gh->host : "");
		mc_pack_kv_bool(pk, "confirmed", p != NULL);
		mc_pack_kv_str(pk, "tier", tier_name(v[i].tier));
		mc_pack_kv_str(pk, "state", v[i].state == REP_COMPLETE ? "complete" : "processing");
		mc_pack_kv_u64(pk, "version", v[i].version);
		mc_pack_kv_bool(pk, "dynamic", v[i].dynamic);
	}
	mc_reply_end(req);
}

static void
h_stats(struct mc_req *req)
{
	struct master *m = begin(req, M_STATS);
	const struct store *s = &m->store;

	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 6);
	mc_pack_kv_u64(pk, "objects", s->objects.count);
	mc_pack_kv_u64(pk, "bytes", s->bytes);
	mc_pack_kv_u64(pk, "peers", m->peers.n);
	mc_pack_key(pk, "tenants");
	msgpack_pack_array(pk, s->ntenants);
	for (uint32_t i = 0; i < s->ntenants; i++) {
		msgpack_pack_map(pk, 3 + (s->tenants[i].quota != 0));
		mc_pack_kv_str(pk, "tenant", s->tenants[i].name);
		mc_pack_kv_u64(pk, "objects", s->tenants[i].objects);
		mc_pack_kv_u64(pk, "bytes", s->tenants[i].bytes);
		if (s->tenants[i].quota != 0)
			mc_pack_kv_u64(pk, "quota", s->tenants[i].quota);
	}
	mc_pack_kv_u64(pk, "uptime_ms", (mc_mono_ns() / 1000000) - m->started_ms);
	mc_pack_kv_str(pk, "version", MASTER_VERSION);
	mc_reply_end(req);
}

static void
pack_tiers(msgpack_packer *pk, const struct peer *p)
{
	unsigned n = 0;

	for (int t = 0; t < TIER_COUNT; t++)
		n += p->tiers[t].present;
	msgpack_pack_array(pk, n);
	for (int t = 0; t < TIER_COUNT; t++) {
		if (!p->tiers[t].present)
			continue;
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "tier", tier_name(t));
		mc_pack_kv_u64(pk, "capacity", p->tiers[t].capacity);
		mc_pack_kv_u64(pk, "used", p->tiers[t].reported);
		mc_pack_kv_u64(pk, "reserved", p->tiers[t].used);
	}
}

static void
h_peers(struct mc_req *req)
{
	struct master *m = begin(req, M_PEERS);

	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "peers");
	msgpack_pack_array(pk, m->peers.n);
	for (uint32_t i = 0; i < m->peers.n; i++) {
		const struct peer *p = m->peers.v[i];
		uint64_t mono = mc_mono_ms();

		msgpack_pack_map(pk, 10);
		mc_pack_kv_u64(pk, "peer_id", p->id);
		mc_pack_kv_str(pk, "addr", p->addr);
		mc_pack_kv_str(pk, "host", p->host);
		mc_pack_kv_str(pk, "domain", p->domain);
		mc_pack_kv_bool(pk, "alive", peer_alive(p, m->cfg.peer_ttl));
		mc_pack_kv_bool(pk, "connected", p->conn != NULL);
		mc_pack_kv_str(pk, "evict_mode", p->evict_mode);
		mc_pack_key(pk, "tiers");
		pack_tiers(pk, p);
		mc_pack_kv_u64(pk, "last_heartbeat", p->last_heartbeat);
		mc_pack_kv_u64(pk, "silent_ms", mono > p->heard ? mono - p->heard : 0);
	}
	mc_reply_end(req);
}

const struct mc_method master_methods[] = {
	{ "hello", h_hello },
	{ "put_start", h_put_start },
	{ "softpin_show", h_softpin_show },
	{ "softpin_list", h_softpin_list },
	{ "softpin_stats", h_softpin_stats },
	{ "softpin_expire", h_softpin_expire },
	{ "candidates", h_candidates },
	{ "evict_plan", h_evict_plan },
	{ "evict_run", h_evict_run },
	{ "put_end", h_put_end },
	{ "put_revoke", h_put_revoke },
	{ "get_replica_list", h_get_replica_list },
	{ "batch_get_replica_list", h_batch_get_replica_list },
	{ "exist", h_exist },
	{ "batch_exist", h_batch_exist },
	{ "remove", h_remove },
	{ "batch_remove", h_batch_remove },
	{ "remove_prefix", h_remove_prefix },
	{ "list", h_list },
	{ "stat", h_stat },
	{ "stats", h_stats },
	{ "peers", h_peers },
	{ "peer_register", h_peer_register },
	{ "peer_heartbeat", h_peer_heartbeat },
	{ "peer_unregister", h_peer_unregister },
	{ "peer_inventory", h_peer_inventory },
	{ "snapshot_save", h_snapshot_save },
	{ "snapshot_restore", h_snapshot_restore },
	{ "snapshot_status", h_snapshot_status },
	{ NULL, NULL },
};
