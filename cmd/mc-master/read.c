/*
 * The read side of the object calls: get_replica_list, its batch and
 * read_raced, and the lookups the other object calls share (read.h).
 * Every field read from a request is checked for type and range before
 * use; strings from the message are not NUL-terminated and die with it,
 * so anything kept is copied (the store copies keys and names).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/wire.h"
#include "read.h"
#include "master.h"
#include "request.h"
#include "grants.h"
#include "lease.h"
#include "replicate.h"
#include "peers.h"
#include "store.h"
#include "mmetrics.h"

/* Keys per batch call: keeps one reply well under a client's max message. */
#define BATCH_MAX 10000

/* A readable replica with what the caller needs to rank it. */
struct cand {
	const struct mrep *r;
	struct peer *p; /* its grant key is made ready on first use */
	int rank;
};

/* A str or bin object as bytes; -1 for anything else. */
int
read_bytes(const msgpack_object *o, const char **s, size_t *len)
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

/* The keys array of a batch call, or NULL with err. */
const msgpack_object_array *
read_need_keys(const msgpack_object *params, struct mc_err *err)
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

void
read_pack_err(msgpack_packer *pk, int code, const char *msg)
{
	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "code", mc_status_name(code));
	mc_pack_kv_str(pk, "msg", msg);
}

struct mobj *
read_lookup(struct master *m, uint32_t tenant, const char *key, size_t len)
{
	return store_find(m->store, store_key_hash(tenant, key, len), tenant, key, len);
}

/*
 * Batch lookups hash a few keys ahead and prefetch their slots, so the
 * cache misses of consecutive keys overlap instead of queueing.
 */
#define PREFETCH_AHEAD 8

static uint64_t
prefetch_key(struct master *m, const struct client *cl, const msgpack_object *k)
{
	const char *key;
	size_t len;
	uint64_t hash;

	if (read_bytes(k, &key, &len) != 0)
		return 0;
	hash = store_key_hash(cl->tenant, key, len);
	store_prefetch(m->store, hash);
	mgrants_prefetch(m->grants, hash);
	replicate_prefetch(m, cl, hash);
	return hash;
}

bool
read_has_complete(const struct mobj *o)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].state == REP_COMPLETE && v[i].version == o->version)
			return true;
	return false;
}

bool
read_leased(const struct mobj *o, uint64_t now)
{
	return o->lease_deadline > now;
}

/*
 * Replicas of equal cost spread over readers: each run of one rank
 * starts at the replica this reader's seed and the key pick, so one
 * hot key's readers share its copies instead of all taking the first,
 * and one reader keeps to the same copy of a key.
 */
static void
spread(struct cand *c, unsigned n, const struct client *cl, uint64_t key_hash)
{
	uint64_t pick = mc_hash64(&cl->seed, sizeof(cl->seed), key_hash);

	for (unsigned i = 0, j; i < n; i = j) {
		struct cand run[2 * MC_REPLICAS_MAX];
		unsigned len, at;

		for (j = i + 1; j < n && c[j].rank == c[i].rank; j++)
			;
		len = j - i;
		if (len < 2)
			continue;
		at = (unsigned)(pick % len);
		for (unsigned k = 0; k < len; k++)
			run[k] = c[i + (at + k) % len];
		memcpy(c + i, run, len * sizeof(*run));
	}
}

/*
 * The readable replicas of o (whose key hashes to key_hash), best first
 * for this client: same host, then same domain, then faster tiers
 * before slower ones; equal ones spread over readers.
 */
static unsigned
readable(const struct master *m, const struct mobj *o, const struct client *cl, uint64_t key_hash,
	 struct cand *out)
{
	const struct mrep *v = obj_creps(o);
	unsigned n = 0;

	for (unsigned i = 0; i < o->nrep; i++) {
		struct peer *p;
		int rank;

		if (v[i].state != REP_COMPLETE || v[i].version != o->version)
			continue;
		p = peers_find(m->peers, v[i].peer);
		if (p == NULL)
			continue;
		/* locality first; within it, the tier's speed rank */
		if (cl->host[0] != '\0' && strcmp(cl->host, p->host) == 0)
			rank = 0;
		else if (cl->domain[0] != '\0' && strcmp(cl->domain, p->domain) == 0)
			rank = 1;
		else
			rank = 2;
		rank = rank * (MC_TIER_COUNT + 1) + mc_tier_speed_rank(v[i].tier);
		/* A peer without its control link is likely dead: try it last. */
		if (p->conn == NULL)
			rank += 3 * (MC_TIER_COUNT + 1);
		unsigned j = n++;
		while (j > 0 && out[j - 1].rank > rank) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = (struct cand){ &v[i], p, rank };
	}
	spread(out, n, cl, key_hash);
	return n;
}

/* A read by a reader of tenant: its lease on the object (or group), and the access. */
static uint64_t
touch(struct master *m, struct mobj *o, uint32_t tenant, uint64_t now)
{
	o->last_access = now;
	store_read(m->store, o);
	if (o->access_count != UINT32_MAX)
		o->access_count++;
	return lease_grant(m, o, tenant, now);
}

/* The fields of a get_replica_list answer, after "key" for batch items; hash is the key's. */
static void
pack_grl(msgpack_packer *pk, struct master *m, const struct client *cl, const struct mobj *o,
	 const char *key, size_t len, uint64_t hash, uint64_t lease_id, const struct cand *c,
	 unsigned n)
{
	const char *tenant = m->store->tenants[o->tenant].name;
	struct mc_grant_scope scope = {
		tenant, strlen(tenant), key, len, o->version, o->size, 0, MC_GRANT_READ,
	};
	struct mgrant_ident id = { hash, o->tenant };

	msgpack_pack_map(pk, 7);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
	mc_pack_kv_str(pk, "type", store_type_name(m->store, o->type));
	mc_pack_kv_u64(pk, "lease_ms", m->cfg.lease_ttl);
	/* 0: no lease of this reader's own to release (the TTL protects) */
	mc_pack_kv_u64(pk, "lease_id", lease_id);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, n);
	for (unsigned i = 0; i < n; i++)
		req_pack_replica(pk, m, c[i].p, c[i].r, &cl->transports, &scope, &id);
}

/* ---- reads ---- */

static void
h_get_replica_list(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const struct client *cl = req_client(req);
	struct cand c[2 * MC_REPLICAS_MAX];
	struct mc_err err;
	const char *key;
	size_t len;
	struct mobj *o;
	unsigned n;
	uint64_t lease;

	if (req_need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	uint64_t now = mc_now_ms(), hash = store_key_hash(cl->tenant, key, len);

	o = store_find(m->store, hash, cl->tenant, key, len);
	if (o == NULL || (n = readable(m, o, cl, hash, c)) == 0) {
		handler_fail(req, MC_ERR_NOT_FOUND, "key not found");
		return;
	}

	lease = touch(m, o, cl->tenant, now);
	replicate_read(m, cl, o, key, len, hash, now);
	pack_grl(mc_reply_ok_begin(req), m, cl, o, key, len, hash, lease, c, n);
	mc_reply_end(req);
}

/*
 * read_raced {count}: a reader found count copies gone between its
 * replica list and its read (and went on to the next replica). Only
 * counted: the master learns of the copy itself from its peer. Sent as
 * a notification; a request gets an empty answer.
 */
static void
h_read_raced(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	uint64_t count;

	if (req_need_u64(req->params, "count", &count, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	mc_metric_add(m->mx->read_raced, (double)count);
	mc_reply_ok_empty(req);
}

static void
h_batch_get_replica_list(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const struct client *cl = req_client(req);
	struct cand c[2 * MC_REPLICAS_MAX];
	uint64_t now = mc_now_ms(), hashes[PREFETCH_AHEAD];
	struct mc_err err;
	const msgpack_object_array *keys = read_need_keys(req->params, &err);

	if (keys == NULL) {
		req_fail_err(req, &err);
		return;
	}
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, keys->size);
	for (uint32_t j = 0; j < PREFETCH_AHEAD && j < keys->size; j++)
		hashes[j % PREFETCH_AHEAD] = prefetch_key(m, cl, &keys->ptr[j]);
	for (uint32_t j = 0; j < keys->size; j++) {
		const char *key;
		size_t len;
		struct mobj *o = NULL;
		unsigned n = 0;
		uint64_t hash = hashes[j % PREFETCH_AHEAD];

		if (j + PREFETCH_AHEAD < keys->size)
			hashes[j % PREFETCH_AHEAD] =
				prefetch_key(m, cl, &keys->ptr[j + PREFETCH_AHEAD]);
		/* Items answer the keys in order; a failed one is {error}. */
		if (read_bytes(&keys->ptr[j], &key, &len) != 0 || req_check_key(len, &err) != 0) {
			msgpack_pack_map(pk, 1);
			mc_pack_key(pk, "error");
			read_pack_err(pk, MC_ERR_INVALID, "key must be a string of 1..4096 bytes");
			continue;
		}
		o = store_find(m->store, hash, cl->tenant, key, len);
		if (o == NULL || (n = readable(m, o, cl, hash, c)) == 0) {
			msgpack_pack_map(pk, 1);
			mc_pack_key(pk, "error");
			read_pack_err(pk, MC_ERR_NOT_FOUND, "key not found");
			continue;
		}
		pack_grl(pk, m, cl, o, key, len, hash, touch(m, o, cl->tenant, now), c, n);
		replicate_read(m, cl, o, key, len, hash, now);
	}
	mc_reply_end(req);
}

const struct mc_method read_methods[] = {
	{ "get_replica_list", h_get_replica_list, MC_METHOD_READ_ONLY },
	{ "batch_get_replica_list", h_batch_get_replica_list, MC_METHOD_READ_ONLY },
	{ "read_raced", h_read_raced, MC_METHOD_READ_ONLY },
	{ NULL, NULL, 0 },
};

const struct master_module read_module = {
	.name = "read",
	.methods = read_methods,
};
