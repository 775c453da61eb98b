/*
 * A peer's own moves and drops of its copies (moves.h).
 */
#include <stdio.h>
#include <string.h>

#include "mc/wire.h"
#include "moves.h"
#include "evict.h"
#include "master.h"
#include "ops.h"
#include "request.h"
#include "state.h"
#include "store.h"
#include "recency.h"

static const char *const reason_names[DROP_REASON_COUNT] = {
	[DROP_RECLAIM] = "reclaim",
	[DROP_NO_SPACE] = "no_space",
	[DROP_CORRUPT] = "corrupt",
	[DROP_FAILED] = "failed",
};

/* A notice's copy: (tenant, key) as the peer names it. */
struct notice {
	uint64_t peer, version;
	const char *key;
	size_t klen;
	struct mobj *o; /* NULL: the master knows no such object */
};

/* A tier field by name: 0, or -1 with err. */
static int
need_tier(const msgpack_object *params, const char *field, int *tier, struct mc_err *err)
{
	const char *s;
	size_t len;

	if (mc_map_str(params, field, &s, &len, err) != 1)
		return mc_err_set(err, MC_ERR_INVALID, "missing tier field '%s'", field);
	if ((*tier = mc_tier_parse(s, len, err)) < 0)
		return -1;
	return 0;
}

/* The fields every notice has, checked, and its object found. */
static int
read_notice(struct mc_req *req, struct notice *n, struct mc_err *err)
{
	struct master *m = req->ctx;
	const char *tname;
	size_t tlen;
	int64_t tenant;

	if (req_need_u64(req->params, "peer_id", &n->peer, err) != 0 ||
	    req_need_u64(req->params, "version", &n->version, err) != 0 ||
	    req_need_key(req->params, &n->key, &n->klen, err) != 0)
		return -1;
	if (mc_map_str(req->params, "tenant", &tname, &tlen, err) != 1 ||
	    !store_name_ok(tname, tlen))
		return mc_err_set(err, MC_ERR_INVALID, "a copy notice needs a valid 'tenant'");
	if (req_check_own_peer(req, n->peer, err) != 0)
		return -1;
	tenant = store_tenant_find(m->store, tname, tlen);
	n->o = tenant < 0 ? NULL
			  : store_find(m->store, store_key_hash((uint32_t)tenant, n->key, n->klen),
				       (uint32_t)tenant, n->key, n->klen);
	return 0;
}

/*
 * copy_moved {peer_id, tenant, key, version, size, from, to}: the
 * peer's copy at version now lives on tier to. Its replica takes that
 * tier, its bytes move there from the tier they counted on (none while
 * it was moving), and it may be evicted again.
 */
static void
h_copy_moved(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	struct notice n;
	uint64_t size;
	struct mrep *r = NULL;
	int from, to;

	if (read_notice(req, &n, &err) != 0 ||
	    req_need_u64(req->params, "size", &size, &err) != 0 ||
	    need_tier(req->params, "from", &from, &err) != 0 ||
	    need_tier(req->params, "to", &to, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	/* The copy on from, or the peer's one of that version wherever the master has it. */
	for (unsigned i = 0; n.o != NULL && i < n.o->nrep; i++) {
		struct mrep *c = &obj_reps(n.o)[i];

		if (c->peer != n.peer || c->version != n.version || c->state != REP_COMPLETE)
			continue;
		if (r == NULL || c->tier == from)
			r = c;
	}
	if (r == NULL || size != n.o->size) {
		m->moves->stale_moved++;
		mc_reply_ok_empty(req);
		return;
	}
	struct mrep moved = *r;

	moved.moving = 0;
	moved.tier = (uint8_t)to;
	ops_rep_uncharge(m, n.o, r);
	state_replica_set(m, n.o, r, &moved);
	ops_rep_charge(m, n.o, r);
	/* it leaves from's recency list for to's */
	recency_sync(&m->store->rank, n.o);
	m->moves->moved[from][to]++;
	/* The tier it reached may be over its own high watermark now. */
	evict_tier_check(m, (uint32_t)n.peer, to);
	evict_moves_landed(m);
	mc_reply_ok_empty(req);
}

/*
 * copy_dropped {peer_id, tenant, key, version, tier, reason}: the peer
 * freed its copy of the key, at most version, on tier. The replica goes
 * without a drop (the bytes are gone already); a moving one goes too,
 * wherever it was headed.
 */
static void
h_copy_dropped(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	struct notice n;
	const char *why;
	size_t wlen;
	int tier, reason;
	bool hit = false;

	if (read_notice(req, &n, &err) != 0 || need_tier(req->params, "tier", &tier, &err) != 0)
		goto fail;
	if (mc_map_str(req->params, "reason", &why, &wlen, &err) != 1) {
		mc_err_set(&err, MC_ERR_INVALID, "copy_dropped needs a 'reason'");
		goto fail;
	}
	for (reason = 0; reason < DROP_REASON_COUNT; reason++)
		if (strlen(reason_names[reason]) == wlen &&
		    memcmp(reason_names[reason], why, wlen) == 0)
			break;
	if (reason == DROP_REASON_COUNT) {
		mc_err_set(&err, MC_ERR_INVALID,
			   "unknown reason '%.*s': reclaim, no_space, corrupt or failed",
			   (int)(wlen > 32 ? 32 : wlen), why);
		goto fail;
	}
	for (unsigned i = n.o != NULL ? n.o->nrep : 0; i-- > 0;) {
		const struct mrep *r = &obj_reps(n.o)[i];

		if (r->peer != n.peer || r->version > n.version || r->state != REP_COMPLETE ||
		    (r->tier != tier && !r->moving))
			continue;
		/* a dynamic copy its peer evicted itself cools its domain as a round's would */
		if (r->dynamic && (reason == DROP_RECLAIM || reason == DROP_NO_SPACE))
			ops_dynamic_gone(m, n.o, r);
		ops_rep_remove(m, n.o, i, false);
		hit = true;
	}
	if (!hit) {
		m->moves->stale_dropped++;
		mc_reply_ok_empty(req);
		return;
	}
	m->moves->dropped[tier][reason]++;
	recency_sync(&m->store->rank, n.o);
	ops_settle(m, n.o, NULL);
	evict_moves_landed(m);
	mc_reply_ok_empty(req);
	return;
fail:
	req_fail_err(req, &err);
}

static void
moves_collect(struct mc_metrics *r, void *arg)
{
	const struct moves *c = ((struct master *)arg)->moves;
	static const char notices[] = "Copy notices from peers about no replica the master has.";
	char label[64];
	struct mc_metric *s;

	for (int f = 0; f < MC_TIER_COUNT; f++)
		for (int t = 0; t < MC_TIER_COUNT; t++) {
			if (c->moved[f][t] == 0)
				continue;
			snprintf(label, sizeof(label), "%s,%s", mc_tier_name(f), mc_tier_name(t));
			if ((s = mc_metric_get(r, "mc_copies_moved_total", MC_COUNTER,
					       "Copies peers moved between tiers, by tier.",
					       "from,to", label)))
				mc_metric_set(s, (double)c->moved[f][t]);
		}
	for (int t = 0; t < MC_TIER_COUNT; t++)
		for (int w = 0; w < DROP_REASON_COUNT; w++) {
			if (c->dropped[t][w] == 0)
				continue;
			snprintf(label, sizeof(label), "%s,%s", mc_tier_name(t), reason_names[w]);
			if ((s = mc_metric_get(
				     r, "mc_copies_dropped_total", MC_COUNTER,
				     "Copies peers freed by themselves, by tier and reason.",
				     "tier,reason", label)))
				mc_metric_set(s, (double)c->dropped[t][w]);
		}
	if ((s = mc_metric_get(r, "mc_copy_notices_stale_total", MC_COUNTER, notices, "method",
			       "copy_moved")))
		mc_metric_set(s, (double)c->stale_moved);
	if ((s = mc_metric_get(r, "mc_copy_notices_stale_total", MC_COUNTER, notices, "method",
			       "copy_dropped")))
		mc_metric_set(s, (double)c->stale_dropped);
}

void
moves_init(struct master *m)
{
	memset(m->moves, 0, sizeof(*m->moves));
}

const struct mc_method moves_methods[] = {
	{ "copy_moved", h_copy_moved, MC_METHOD_PEER },
	{ "copy_dropped", h_copy_dropped, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

static int
moves_start(struct master *m, struct mc_err *err)
{
	(void)err;
	moves_init(m);
	return 0;
}

const struct master_module moves_module = {
	.name = "moves",
	.init = moves_start,
	.methods = moves_methods,
	.collect = moves_collect,
};
