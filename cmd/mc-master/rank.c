/*
 * evict_candidates, its walk, and the local reads of heartbeats (rank.h).
 * The walk costs one step per entry it answers with or skips; stale
 * entries (copies removed without a sync) are freed as it passes them.
 */
#include <string.h>

#include "mc/clock.h"
#include "mc/proto.h"
#include "auth.h"
#include "mmetrics.h"
#include "rank.h"
#include "request.h"
#include "peers.h"
#include "softpin.h"
#include "store.h"
#include "recency.h"

/* Whether peer's copy of o on tier may go now. */
bool
rank_offerable(const struct mobj *o, uint32_t peer, int tier, uint64_t now)
{
	const struct mrep *v = obj_creps(o);

	/* in use or protected: the master's own rounds leave these alone too */
	if (o->lease_deadline > now || o->writing || o->hard_pin || o->group != NO_GROUP ||
	    softpin_protects(o, now))
		return false;
	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].peer == peer && v[i].tier == tier && v[i].state == REP_COMPLETE &&
		    v[i].version == o->version && !v[i].moving)
			return true;
	return false;
}

size_t
rank_query(struct master *m, uint32_t peer, int tier, uint64_t budget, size_t max, uint64_t now,
	   struct mobj **out, bool *more)
{
	struct recency *r = &m->store->rank;
	const struct rank_list *l = recency_list(r, peer, tier);
	uint64_t bytes = 0;
	uint32_t cur = 0;
	size_t n = 0;

	*more = false;
	if (l == NULL)
		return 0;
	while ((cur = recency_next(r, l, cur)) != 0) {
		struct mobj *o = r->nodes[cur].o;

		if (n == max || (budget != 0 && bytes >= budget)) {
			*more = true;
			break;
		}
		if (!rank_offerable(o, peer, tier, now))
			continue;
		out[n++] = o;
		bytes += o->size;
	}
	return n;
}

/* An item's tenant and key, checked; -1 with err. */
static int
read_item(const msgpack_object *e, uint32_t i, const char **tenant, size_t *tlen, const char **key,
	  size_t *klen, struct mc_err *err)
{
	if (e->type != MSGPACK_OBJECT_MAP)
		return mc_err_set(err, MC_ERR_INVALID, "local_reads item %u is not a map", i);
	if (mc_map_str(e, "tenant", tenant, tlen, NULL) != 1 || !store_name_ok(*tenant, *tlen))
		return mc_err_set(err, MC_ERR_INVALID, "local_reads item %u needs a valid 'tenant'",
				  i);
	if (mc_map_str(e, "key", key, klen, NULL) != 1 || *klen == 0 || *klen > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID,
				  "local_reads item %u needs a 'key' of 1..%d bytes", i,
				  MC_KEY_MAX);
	return 0;
}

const msgpack_object_array *
rank_local_reads_check(const msgpack_object *params, bool *bad, struct mc_err *err)
{
	const msgpack_object *f = mc_map_get(params, "local_reads");
	const msgpack_object_array *a;

	*bad = false;
	if (f == NULL)
		return NULL;
	*bad = true;
	if (f->type != MSGPACK_OBJECT_ARRAY) {
		mc_err_set(err, MC_ERR_INVALID, "'local_reads' is not an array");
		return NULL;
	}
	a = &f->via.array;
	if (a->size > RANK_LOCAL_READS_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "'local_reads' has %u items, at most %u", a->size,
			   RANK_LOCAL_READS_MAX);
		return NULL;
	}
	for (uint32_t i = 0; i < a->size; i++) {
		const char *t, *k;
		size_t tl, kl;

		if (read_item(&a->ptr[i], i, &t, &tl, &k, &kl, err) != 0)
			return NULL;
	}
	*bad = false;
	return a;
}

void
rank_local_reads_apply(struct master *m, const msgpack_object_array *reads, uint64_t now)
{
	uint64_t recorded = 0, unknown = 0;
	/* a peer's reads are mostly of one tenant: look each name up once in a row */
	const char *last = NULL;
	size_t last_len = 0;
	int64_t tenant = -1;

	for (uint32_t i = 0; reads != NULL && i < reads->size; i++) {
		const char *t, *k;
		size_t tl, kl;
		struct mobj *o = NULL;

		if (read_item(&reads->ptr[i], i, &t, &tl, &k, &kl, NULL) != 0)
			continue;
		if (last == NULL || tl != last_len || memcmp(t, last, tl) != 0) {
			tenant = store_tenant_find(m->store, t, tl);
			last = t;
			last_len = tl;
		}
		if (tenant >= 0)
			o = store_find(m->store, store_key_hash((uint32_t)tenant, k, kl),
				       (uint32_t)tenant, k, kl);
		if (o == NULL) {
			unknown++;
			continue;
		}
		o->last_access = now;
		store_touch(m->store, o);
		recorded++;
	}
	mmetrics_local_reads(m, recorded, unknown);
}

/*
 * evict_candidates {peer_id, tier, bytes, max}: the peer's keys on tier,
 * least recently accessed first, for a peer that evicts for itself
 * (rank.h). MC_FAULT reply.evict_candidates:pause holds the answer.
 */
static void
h_evict_candidates(struct mc_req *req)
{
	struct master *m = req_begin(req);
	/* one event loop answers every call: one array serves them all */
	static struct mobj *out[RANK_MAX];
	uint64_t id, budget = 0, max = RANK_MAX, start = mc_mono_ns();
	const char *tier_name;
	size_t tlen, n;
	struct mc_err err;
	bool more;
	int tier;

	if (req_need_u64(req->params, "peer_id", &id, &err) != 0 ||
	    auth_check_peer(req, id, &err) != 0 ||
	    mc_map_u64(req->params, "bytes", &budget, &err) < 0 ||
	    mc_map_u64(req->params, "max", &max, &err) < 0) {
		req_fail_err(req, &err);
		return;
	}
	if (id > UINT32_MAX || peers_find(m->peers, (uint32_t)id) == NULL) {
		handler_fail(req, MC_ERR_INVALID, "peer_id: unknown peer %llu",
			     (unsigned long long)id);
		return;
	}
	if (mc_map_str(req->params, "tier", &tier_name, &tlen, &err) != 1 ||
	    (tier = mc_tier_parse(tier_name, tlen, NULL)) < 0 ||
	    (tier != MC_TIER_DRAM && tier != MC_TIER_SSD)) {
		handler_fail(req, MC_ERR_INVALID, "tier: needs \"dram\" or \"ssd\"");
		return;
	}
	if (max < 1 || max > RANK_MAX) {
		handler_fail(req, MC_ERR_INVALID, "max: %llu out of range 1..%u",
			     (unsigned long long)max, RANK_MAX);
		return;
	}
	n = rank_query(m, (uint32_t)id, tier, budget, (size_t)max, mc_now_ms(), out, &more);

	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_key(pk, "keys");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "tenant", m->store->tenants[out[i]->tenant].name);
		mc_pack_kv_strn(pk, "key", out[i]->key, out[i]->key_len);
		mc_pack_kv_u64(pk, "version", out[i]->version);
		mc_pack_kv_u64(pk, "bytes", out[i]->size);
	}
	mc_pack_kv_bool(pk, "more", more);
	mc_reply_end(req);
	mmetrics_rank_query(m, n, (double)(mc_mono_ns() - start) / 1e9);
}

const struct mc_method rank_methods[] = {
	{ "evict_candidates", h_evict_candidates, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

const struct master_module rank_module = {
	.name = "rank",
	.methods = rank_methods,
};
