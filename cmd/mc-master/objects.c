/*
 * The object calls but the reads (read.c): hello, exist and its batch,
 * the removals, list, stat, stats, peers and clock_set. Every field
 * read from a request is checked for type and range before use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/wire.h"
#include "auth.h"
#include "evict.h"
#include "objects.h"
#include "read.h"
#include "master.h"
#include "ops.h"
#include "request.h"
#include "peers.h"
#include "reconcile.h"
#include "softpin.h"
#include "store.h"

#define LIST_DEFAULT 1000
#define LIST_MAX 10000
/* Key bytes in one list reply, for the same reason. */
#define LIST_KEY_BYTES (8u << 20)

static void
h_hello(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct client *cl = req_client_get(req);
	struct mc_err err;
	const char *s;
	size_t len;
	int rc;

	if (cl == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	rc = req_opt_name(req->params, "tenant", &s, &len, &err);
	if (rc < 0)
		goto bad;
	if (m->auth_on) {
		/* the token, not the caller, says which tenant it speaks for */
		if (auth_hello(m, cl, req->params, rc > 0 ? s : NULL, len, &err) != 0)
			goto bad;
	} else {
		/* a read must not create the tenant: only a put does (req_tenant_make) */
		req_client_name_tenant(m, cl, rc > 0 ? s : MC_DEFAULT_TENANT,
				       rc > 0 ? len : strlen(MC_DEFAULT_TENANT));
	}
	if (mc_map_strcpy(req->params, "host", cl->host, sizeof(cl->host), &err) < 0 ||
	    mc_map_strcpy(req->params, "domain", cl->domain, sizeof(cl->domain), &err) < 0 ||
	    mc_transport_list_read(req->params, &cl->transports, &err) < 0)
		goto bad;
	if (req_client_bind_tenant(m, cl, cl->tenant, &err) != 0) {
		/* over its tenant's cap: the connection goes once told why */
		req_fail_err(req, &err);
		mc_conn_close(req->conn, true);
		return;
	}
	/* it said who it is: no longer on the hello timeout's clock */
	mc_conn_vouch(req->conn);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 4);
	mc_pack_kv_str(pk, "version", MC_PROTO_VERSION);
	mc_pack_kv_u64(pk, "max_msg", MC_WIRE_DEFAULT_MAX_MSG);
	mc_pack_kv_str(pk, "server", "mc-master " MC_VERSION);
	/* whom the connection speaks for: the token's tenant when it named none */
	mc_pack_kv_str(pk, "tenant", req_tenant_name(m, cl));
	mc_reply_end(req);
	return;
bad:
	/* told why, then gone: a refused hello holds no connection a flood could keep */
	req_fail_err(req, &err);
	mc_conn_close(req->conn, true);
}

static void
h_exist(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	const char *key;
	size_t len;

	if (req_need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	struct mobj *o = read_lookup(m, req_client(req)->tenant, key, len);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_bool(pk, "exists", o != NULL && read_has_complete(o));
	mc_reply_end(req);
}

static void
h_batch_exist(struct mc_req *req)
{
	struct master *m = req_begin(req);
	uint32_t tenant = req_client(req)->tenant;
	struct mc_err err;
	const msgpack_object_array *keys = read_need_keys(req->params, &err);

	if (keys == NULL) {
		req_fail_err(req, &err);
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

		if (read_bytes(&keys->ptr[j], &key, &len) == 0 && req_check_key(len, &err) == 0)
			o = read_lookup(m, tenant, key, len);
		if (o != NULL && read_has_complete(o))
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
	struct mobj *o = read_lookup(m, tenant, key, len);
	uint64_t now = mc_now_ms();

	if (o == NULL)
		return mc_err_set(err, MC_ERR_NOT_FOUND, "key not found");
	if (!force && read_leased(o, now))
		return mc_err_set(err, MC_ERR_LEASED, "key is leased for %llu ms more; use force",
				  (unsigned long long)(o->lease_deadline - now));
	ops_obj_erase(m, o, true, NULL);
	return 0;
}

static void
h_remove(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	const char *key;
	size_t len;
	bool force = false;

	if (req_need_key(req->params, &key, &len, &err) != 0 ||
	    mc_map_bool(req->params, "force", &force, &err) < 0 ||
	    remove_one(m, req_client(req)->tenant, key, len, force, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	mc_reply_ok_empty(req);
}

static void
h_batch_remove(struct mc_req *req)
{
	struct master *m = req_begin(req);
	uint32_t tenant = req_client(req)->tenant;
	struct mc_err err;
	bool force = false;
	const msgpack_object_array *keys = read_need_keys(req->params, &err);

	if (keys == NULL || mc_map_bool(req->params, "force", &force, &err) < 0) {
		req_fail_err(req, &err);
		return;
	}
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "errors");
	msgpack_pack_array(pk, keys->size);
	for (uint32_t j = 0; j < keys->size; j++) {
		const char *key;
		size_t len;

		if (read_bytes(&keys->ptr[j], &key, &len) != 0)
			mc_err_set(&err, MC_ERR_INVALID, "key must be a string");
		else if (req_check_key(len, &err) == 0 &&
			 remove_one(m, tenant, key, len, force, &err) == 0) {
			msgpack_pack_nil(pk);
			continue;
		}
		read_pack_err(pk, err.code, err.msg);
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
	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		if (!has_prefix(o, tenant, prefix, plen))
			continue;
		if (readable_only && !read_has_complete(o))
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
	struct master *m = req_begin(req);
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
		req_fail_err(req, &err);
		return;
	}
	struct mobj **v = collect_prefix(m, tenant, prefix, plen, false, &n);
	if (v == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!force && read_leased(v[i], now)) {
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
	struct master *m = req_begin(req);
	uint32_t tenant = req_client(req)->tenant;
	const char *prefix = "", *after = NULL;
	size_t plen = 0, alen = 0, n, first = 0, out, bytes = 0;
	uint64_t limit = LIST_DEFAULT;
	struct mc_err err;

	if (mc_map_str(req->params, "prefix", &prefix, &plen, &err) < 0 ||
	    mc_map_str(req->params, "after", &after, &alen, &err) < 0 ||
	    mc_map_u64(req->params, "limit", &limit, &err) < 0) {
		req_fail_err(req, &err);
		return;
	}
	if (limit > LIST_MAX)
		limit = LIST_MAX;
	struct mobj **v = collect_prefix(m, tenant, prefix, plen, true, &n);
	if (v == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
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
		mc_pack_kv_str(pk, "type", store_type_name(m->store, v[i]->type));
	}
	mc_pack_kv_bool(pk, "more", first + out < n);
	mc_reply_end(req);
	free(v);
}

static void
h_stat(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const struct client *cl = req_client(req);
	struct mc_err err;
	const char *key;
	size_t len;
	struct mobj *o;

	if (req_need_key(req->params, &key, &len, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	o = read_lookup(m, cl->tenant, key, len);
	if (o == NULL) {
		handler_fail(req, MC_ERR_NOT_FOUND, "key not found");
		return;
	}
	const struct group *g = store_group_get(m->store, o->group);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 15 + (g != NULL));
	mc_pack_kv_strn(pk, "key", o->key, o->key_len);
	mc_pack_kv_str(pk, "tenant", m->store->tenants[o->tenant].name);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
	mc_pack_kv_str(pk, "type", store_type_name(m->store, o->type));
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
		const struct peer *p = peers_find(m->peers, v[i].peer);
		/* A replica from a restored snapshot that no peer confirmed yet. */
		const struct ghost *gh = p == NULL ? recon_ghost(m->recon, v[i].peer) : NULL;
		msgpack_pack_map(pk, 9);
		mc_pack_kv_u64(pk, "replica_id", v[i].id);
		mc_pack_kv_u64(pk, "peer_id", v[i].peer);
		mc_pack_kv_str(pk, "addr", p != NULL ? p->addr : gh != NULL ? gh->addr : "");
		mc_pack_kv_str(pk, "host", p != NULL ? p->host : gh != NULL ? gh->host : "");
		mc_pack_kv_bool(pk, "confirmed", p != NULL);
		mc_pack_kv_str(pk, "tier", mc_tier_name(v[i].tier));
		mc_pack_kv_str(pk, "state", v[i].state == REP_COMPLETE ? "complete" : "processing");
		mc_pack_kv_u64(pk, "version", v[i].version);
		mc_pack_kv_bool(pk, "dynamic", v[i].dynamic);
	}
	mc_reply_end(req);
}

/* [{tier, used_bytes, capacity_bytes}]: each tier some live peer has, summed over the live peers. */
static void
pack_tier_totals(msgpack_packer *pk, const struct master *m)
{
	uint64_t used[MC_TIER_COUNT] = { 0 }, cap[MC_TIER_COUNT] = { 0 };
	bool present[MC_TIER_COUNT] = { false };
	unsigned n = 0;

	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];

		if (!peer_alive(p, m->cfg.peer_ttl))
			continue;
		for (int t = 0; t < MC_TIER_COUNT; t++) {
			if (!p->tiers[t].present)
				continue;
			present[t] = true;
			used[t] += p->tiers[t].used;
			cap[t] += p->tiers[t].capacity;
		}
	}
	for (int t = 0; t < MC_TIER_COUNT; t++)
		n += present[t];
	msgpack_pack_array(pk, n);
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		if (!present[t])
			continue;
		msgpack_pack_map(pk, 3);
		mc_pack_kv_str(pk, "tier", mc_tier_name(t));
		mc_pack_kv_u64(pk, "used_bytes", used[t]);
		mc_pack_kv_u64(pk, "capacity_bytes", cap[t]);
	}
}

static void
h_stats(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const struct store *s = m->store;
	const struct client *cl = req_client(req);
	/*
	 * An authenticated tenant sees its own totals only: not who else is
	 * here, nor what the rest of the store and its tiers hold.
	 */
	bool own = m->auth_on && cl->who.role == MC_ROLE_TENANT;
	const struct tenant *t = own && cl->tenant < s->ntenants ? &s->tenants[cl->tenant] : NULL;
	struct evict_totals ev;

	if (!own)
		evict_totals(m, &ev);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, own ? 5 : 10);
	mc_pack_kv_u64(pk, "objects", own ? (t != NULL ? t->objects : 0) : s->objects.count);
	mc_pack_kv_u64(pk, "bytes", own ? (t != NULL ? t->bytes : 0) : s->bytes);
	if (!own)
		mc_pack_kv_u64(pk, "peers", m->peers->n);
	mc_pack_key(pk, "tenants");
	msgpack_pack_array(pk, own ? 1 : s->ntenants);
	if (own && t == NULL) {
		/* its tenant wrote nothing yet, so does not exist: an empty line */
		msgpack_pack_map(pk, 3);
		mc_pack_kv_str(pk, "tenant", req_tenant_name(m, cl));
		mc_pack_kv_u64(pk, "objects", 0);
		mc_pack_kv_u64(pk, "bytes", 0);
	}
	for (uint32_t i = 0; i < s->ntenants; i++) {
		if (own && i != cl->tenant)
			continue;
		msgpack_pack_map(pk, 3 + (s->tenants[i].quota != 0));
		mc_pack_kv_str(pk, "tenant", s->tenants[i].name);
		mc_pack_kv_u64(pk, "objects", s->tenants[i].objects);
		mc_pack_kv_u64(pk, "bytes", s->tenants[i].bytes);
		if (s->tenants[i].quota != 0)
			mc_pack_kv_u64(pk, "quota_bytes", s->tenants[i].quota);
	}
	mc_pack_kv_u64(pk, "uptime_ms", (mc_mono_ns() / 1000000) - m->started_ms);
	mc_pack_kv_str(pk, "version", MC_VERSION);
	if (!own) {
		mc_pack_kv_u64(pk, "evict_rounds", ev.rounds);
		mc_pack_kv_u64(pk, "evicted_bytes", ev.evicted_bytes);
		mc_pack_kv_u64(pk, "evicted_objects", ev.evicted_objects);
		mc_pack_key(pk, "tiers");
		pack_tier_totals(pk, m);
	}
	mc_reply_end(req);
}

/*
 * clock_set {now_ms}: move object time (leases, soft pins, put timeouts:
 * everything mc_now_ms() times) to now_ms, for a replay on a trace's own
 * clock. Time only moves forward, and from the first call on it moves
 * only by these calls. Peer liveness, connection timeouts and put waits
 * run on the monotonic clock and are not moved.
 */
static void
h_clock_set(struct mc_req *req)
{
	struct mc_err err;
	uint64_t to, now = mc_now_ms();

	req_begin(req);
	if (req_need_u64(req->params, "now_ms", &to, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	if (to > now) {
		mc_clock_set_fake(to);
		now = to;
	}
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "now_ms", now);
	mc_reply_end(req);
}

static void
pack_tiers(msgpack_packer *pk, const struct master *m, const struct peer *p)
{
	unsigned n = 0;

	for (int t = 0; t < MC_TIER_COUNT; t++)
		n += p->tiers[t].present;
	msgpack_pack_array(pk, n);
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		if (!p->tiers[t].present)
			continue;
		struct mc_band band;
		double cap = p->tiers[t].capacity > 0 ? (double)p->tiers[t].capacity : 1;

		evict_tier_band(m, p, t, &band);
		msgpack_pack_map(pk, 10 + p->tiers[t].reached_high);
		mc_pack_kv_str(pk, "tier", mc_tier_name(t));
		mc_pack_kv_u64(pk, "capacity", p->tiers[t].capacity);
		/*
		 * The band its rounds use (evict_tier_band): headroom, or the
		 * watermarks (the peer's own, or the master's); its ends now, in
		 * bytes and as fractions of the capacity.
		 */
		mc_pack_kv_str(pk, "band", evict_tier_banded(m, p, t) ? "headroom" : "watermarks");
		mc_pack_kv_double(pk, "high", (double)band.high / cap);
		mc_pack_kv_double(pk, "low", (double)band.low / cap);
		mc_pack_kv_u64(pk, "high_bytes", band.high);
		mc_pack_kv_u64(pk, "low_bytes", band.low);
		/* the lowest fill a round left it at, once it has been over its high mark */
		if (p->tiers[t].reached_high)
			mc_pack_kv_double(pk, "occupancy_min", p->tiers[t].occupancy_min);
		/* What the master accounts now (copies and reservations); the peer's last word beside it. */
		mc_pack_kv_u64(pk, "used", p->tiers[t].used);
		/* of used, what demotions are taking out of the tier */
		mc_pack_kv_u64(pk, "moving", p->tiers[t].moving);
		mc_pack_kv_u64(pk, "reported", p->tiers[t].reported);
	}
}

static void
h_peers(struct mc_req *req)
{
	struct master *m = req_begin(req);

	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "peers");
	msgpack_pack_array(pk, m->peers->n);
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];
		uint64_t mono = mc_mono_ms();

		msgpack_pack_map(pk, 13);
		mc_pack_kv_u64(pk, "peer_id", p->id);
		mc_pack_kv_str(pk, "addr", p->addr);
		mc_pack_kv_str(pk, "host", p->host);
		mc_pack_kv_str(pk, "domain", p->domain);
		mc_pack_kv_bool(pk, "alive", peer_alive(p, m->cfg.peer_ttl));
		mc_pack_kv_bool(pk, "connected", p->conn != NULL);
		mc_pack_kv_str(pk, "evict_mode", p->evict_mode);
		/* the tiers it evicts itself: no watermark round of the master's runs there */
		mc_pack_key(pk, "self_evict");
		msgpack_pack_array(pk, (size_t)__builtin_popcount(p->self_evict));
		for (int t = 0; t < MC_TIER_COUNT; t++)
			if (peer_self_evicts(p, t))
				mc_pack_cstr(pk, mc_tier_name(t));
		/* what a client may reach it with (mc_transport_choose) */
		mc_pack_key(pk, "transports");
		msgpack_pack_array(pk, p->transports.n);
		for (unsigned t = 0; t < p->transports.n; t++)
			mc_pack_cstr(pk, p->transports.name[t]);
		mc_pack_key(pk, "tiers");
		pack_tiers(pk, m, p);
		mc_pack_kv_u64(pk, "last_heartbeat", p->last_heartbeat);
		mc_pack_kv_u64(pk, "silent_ms", mono > p->heard ? mono - p->heard : 0);
		/* what silent_ms is measured against: a peer silent for two has missed one */
		mc_pack_kv_u64(pk, "heartbeat_ms", PEER_HEARTBEAT_MS);
	}
	mc_reply_end(req);
}

const struct mc_method object_methods[] = {
	{ "hello", h_hello, MC_METHOD_READ_ONLY | MC_METHOD_OPEN },
	{ "exist", h_exist, MC_METHOD_READ_ONLY },
	{ "batch_exist", h_batch_exist, MC_METHOD_READ_ONLY },
	{ "remove", h_remove, 0 },
	{ "batch_remove", h_batch_remove, 0 },
	{ "remove_prefix", h_remove_prefix, 0 },
	{ "list", h_list, MC_METHOD_READ_ONLY },
	{ "stat", h_stat, MC_METHOD_READ_ONLY },
	{ "stats", h_stats, MC_METHOD_READ_ONLY },
	{ "peers", h_peers, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ "clock_set", h_clock_set, MC_METHOD_ADMIN },
	{ NULL, NULL, 0 },
};

const struct master_module objects_module = {
	.name = "objects",
	.methods = object_methods,
};
