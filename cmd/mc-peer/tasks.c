/*
 * The master's tasks on this peer (see tasks.h): one table of kinds,
 * the dedupe by highest id, the acknowledgements, and the kinds there
 * are: drop and evict, which free a copy through pool_evict, and
 * replica_copy, which the copier takes.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/fault.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/wire.h"

#include "copier.h"
#include "names.h"
#include "peer.h"
#include "tasks.h"

/*
 * Free the copy item names {tenant, key, version?, tier?} for why: a
 * drop deletes it wherever it is; an evict reclaims it from the tier it
 * was charged to (any without one), demoting it when there is a tier
 * below.
 */
static int
free_copy(struct peer *p, const msgpack_object *item, enum pool_reason why, struct mc_err *err)
{
	char kb[80];
	struct name tenant, key, tier;
	struct pool_key k;
	struct pool_result res;
	uint64_t version = 0;
	int r, t = MC_TIER_NONE;

	if (name_target(item, &tenant, &key, err) < 0 ||
	    (r = mc_map_u64(item, "version", &version, err)) < 0 ||
	    name_get(item, "tier", 16, "", &tier, err) < 0)
		return -1;
	if (tier.len > 0 && (t = mc_tier_parse(tier.p, tier.len, err)) < 0)
		return -1;
	if (mc_fault(why == POOL_DELETE ? "drop" : "evict")) {
		mc_warn("fault injected: %s of '%s' lost",
			why == POOL_DELETE ? "a drop" : "an evict",
			name_show(&key, kb, sizeof(kb)));
		return 0;
	}
	k = (struct pool_key){ tenant.p, tenant.len, key.p, key.len, r == 1, version };
	/* a drop of a put the master abandoned ends its write too, if the bytes still come */
	if (why == POOL_DELETE && p->cancel_writes != NULL)
		p->cancel_writes(p, &k);
	pool_evict(&p->pool, &k, why == POOL_DELETE ? MC_TIER_NONE : t, why, &res);
	/* the room the master counted on for its next writes here */
	if (p->room_freed != NULL)
		p->room_freed(p);
	return 0;
}

/* drop: the key is gone for good; the copy goes wherever it is. */
static int
run_drop(struct peer *p, const msgpack_object *item, struct mc_err *err)
{
	return free_copy(p, item, POOL_DELETE, err);
}

/* evict: the master's round charged the copy to its tier; it is reclaimed from there. */
static int
run_evict(struct peer *p, const msgpack_object *item, struct mc_err *err)
{
	return free_copy(p, item, POOL_RECLAIM, err);
}

/* replica_copy: a dynamic replica of a copy held here, made by the copier. */
static int
run_replica_copy(struct peer *p, const msgpack_object *item, struct mc_err *err)
{
	return copier_take(p->copier, item, err);
}

/* Only a peer with copy workers is a source the master may pick. */
static bool
serves_replica_copy(const struct peer *p)
{
	return p->copier != NULL;
}

/*
 * The kinds: name, handler, and whether this peer serves it (NULL:
 * always). A new kind is one row here and its handler above.
 */
#define PEER_TASK_KINDS(X)          \
	X("drop", run_drop, NULL)   \
	X("evict", run_evict, NULL) \
	X("replica_copy", run_replica_copy, serves_replica_copy)

const struct peer_task_kind peer_task_kinds[] = {
#define X(name, run, served) { name, run, served },
	PEER_TASK_KINDS(X)
#undef X
		{ NULL, NULL, NULL },
};

static void h_task(struct mc_req *req);

const struct mc_method peer_task_methods[] = {
#define X(name, run, served) { name, h_task, MC_METHOD_PEER },
	PEER_TASK_KINDS(X)
#undef X
		{ NULL, NULL, 0 },
};

/* The master's tasks on the control link: the peer's tasks dedupe and acknowledge them. */
static void
h_task(struct mc_req *req)
{
	struct peer *p = req->ctx;

	peer_tasks_serve(p, p->tasks, req);
}

void
peer_tasks_init(struct peer_tasks *ts, struct peer *p, const struct peer_task_kind *kinds,
		const char *master)
{
	memset(ts, 0, sizeof(*ts));
	ts->p = p;
	ts->kinds = kinds ? kinds : peer_task_kinds;
	ts->master = master;
}

void
peer_tasks_free(struct peer_tasks *ts)
{
	free(ts->acks);
	ts->acks = NULL;
	ts->nacks = ts->cap = ts->inflight = 0;
}

static const struct peer_task_kind *
find_kind(const struct peer_task_kind *kinds, const char *name, size_t len, size_t *at)
{
	for (size_t i = 0; i < PEER_TASK_KINDS_MAX && kinds[i].name; i++) {
		if (strlen(kinds[i].name) == len && memcmp(kinds[i].name, name, len) == 0) {
			if (at)
				*at = i;
			return &kinds[i];
		}
	}
	return NULL;
}

const struct peer_task_kind *
peer_tasks_kind(const struct peer_tasks *ts, const char *name, size_t len, size_t *at)
{
	return find_kind(ts->kinds, name, len, at);
}

static void
ack_push(struct peer_tasks *ts, uint64_t id)
{
	if (ts->nacks == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 256;
		uint64_t *v;

		if (cap > PEER_TASKS_ACKS_MAX || (v = realloc(ts->acks, cap * sizeof(*v))) == NULL)
			return;
		ts->acks = v;
		ts->cap = cap;
	}
	ts->acks[ts->nacks++] = id;
}

/*
 * One item of kind k: executed unless its task was received already,
 * acknowledged when it has an id. Without one (an older master, or the
 * data port) it is executed and not acknowledged.
 */
static int
take_item(struct peer_tasks *ts, struct peer *p, const struct peer_task_kind *k,
	  struct peer_task_stats *st, const msgpack_object *item, struct mc_err *err)
{
	uint64_t id = 0;
	bool tracked = ts != NULL && mc_map_u64(item, "task", &id, NULL) == 1;
	int rc;

	if (tracked && id <= ts->seen) {
		st->repeated++;
		ack_push(ts, id);
		return 0;
	}
	if (tracked)
		ts->seen = id;
	rc = k->run(p, item, err);
	if (rc < 0)
		st->failed++;
	else
		st->done++;
	if (tracked)
		ack_push(ts, id);
	return rc;
}

/*
 * Take params of kind k (one item, or {items}); *bad the items that
 * failed, the last failure in err, or err naming why params itself is
 * wrong (-1).
 */
static int
take(struct peer_tasks *ts, struct peer *p, const struct peer_task_kind *k,
     struct peer_task_stats *st, const msgpack_object *params, const char *from, unsigned *bad,
     struct mc_err *err)
{
	const msgpack_object_array *items = mc_map_array(params, "items");

	*bad = 0;
	if (!items) {
		if (take_item(ts, p, k, st, params, err) < 0) {
			*bad = 1;
			return -1;
		}
		return 0;
	}
	/* A bad item must not stop the others from going. */
	for (uint32_t i = 0; i < items->size; i++) {
		struct mc_err e;

		if (take_item(ts, p, k, st, &items->ptr[i], &e) < 0) {
			mc_warn("%s from %s: item %u: %s", k->name, from, i, e.msg);
			*err = e;
			(*bad)++;
		}
	}
	return 0;
}

int
peer_tasks_take(struct peer_tasks *ts, const char *kind, size_t len, const msgpack_object *params,
		unsigned *bad, struct mc_err *err)
{
	size_t at = 0;
	const struct peer_task_kind *k = find_kind(ts->kinds, kind, len, &at);

	*bad = 0;
	if (!k)
		return mc_err_set(err, MC_ERR_INVALID, "unknown task kind '%.*s'",
				  (int)(len > 32 ? 32 : len), kind);
	/* a failed item is counted in bad, not refused: the others went */
	take(ts, ts->p, k, &ts->count[at], params, ts->master ? ts->master : "the master", bad,
	     err);
	return 0;
}

void
peer_tasks_serve(struct peer *p, struct peer_tasks *ts, struct mc_req *req)
{
	const char *name = req->method->name, *from = mc_conn_peer_name(req->conn);
	const struct peer_task_kind *k;
	struct peer_task_stats scratch = { 0 }, *st = &scratch;
	uint64_t repeated = 0;
	const msgpack_object_array *items = mc_map_array(req->params, "items");
	struct mc_err err;
	unsigned bad = 0;
	size_t at = 0;

	k = find_kind(ts ? ts->kinds : peer_task_kinds, name, strlen(name), &at);
	if (!k) {
		mc_err_set(&err, MC_ERR_INVALID, "unknown task kind '%s'", name);
		goto fail;
	}
	if (ts) {
		st = &ts->count[at];
		repeated = st->repeated;
		if (ts->master)
			from = ts->master;
	}
	take(ts, p, k, st, req->params, from, &bad, &err);
	if (ts && st->repeated > repeated)
		mc_info("master %s sent %llu tasks again that were executed already; "
			"acknowledging them again",
			from, (unsigned long long)(st->repeated - repeated));
	if (!items && bad)
		goto fail;
	if (req->notify)
		return;
	if (bad)
		mc_reply_err(req, MC_ERR_INVALID, "%u of %u items were invalid", bad, items->size);
	else
		mc_reply_ok_empty(req);
	return;
fail:
	if (req->notify)
		mc_warn("%s from %s: %s", name, from, err.msg);
	else
		mc_reply_mc_err(req, &err);
}

/* Whether this peer serves kind k now. */
static bool
served(const struct peer_tasks *ts, const struct peer_task_kind *k)
{
	return k->served == NULL || k->served(ts->p);
}

void
peer_tasks_pack_kinds(msgpack_packer *pk, const struct peer_tasks *ts)
{
	uint32_t n = 0;

	for (size_t i = 0; i < PEER_TASK_KINDS_MAX && ts->kinds[i].name; i++)
		n += served(ts, &ts->kinds[i]);
	mc_pack_key(pk, "task_kinds");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < PEER_TASK_KINDS_MAX && ts->kinds[i].name; i++)
		if (served(ts, &ts->kinds[i]))
			mc_pack_cstr(pk, ts->kinds[i].name);
}

size_t
peer_tasks_carry(struct peer_tasks *ts, size_t max)
{
	ts->inflight = ts->nacks < max ? ts->nacks : max;
	return ts->inflight;
}

void
peer_tasks_pack_acks(msgpack_packer *pk, const struct peer_tasks *ts)
{
	if (ts->inflight == 0)
		return;
	mc_pack_key(pk, "tasks");
	msgpack_pack_array(pk, (uint32_t)ts->inflight);
	for (size_t i = 0; i < ts->inflight; i++)
		msgpack_pack_uint64(pk, ts->acks[i]);
}

void
peer_tasks_acked(struct peer_tasks *ts)
{
	/* none carried: acks may still be NULL, which memmove may not see */
	if (ts->inflight == 0)
		return;
	memmove(ts->acks, ts->acks + ts->inflight, (ts->nacks - ts->inflight) * sizeof(*ts->acks));
	ts->nacks -= ts->inflight;
	ts->inflight = 0;
}

void
peer_tasks_unacked(struct peer_tasks *ts)
{
	ts->inflight = 0;
}

void
peer_tasks_link_lost(struct peer_tasks *ts)
{
	ts->nacks = ts->inflight = 0;
}

void
peer_tasks_fresh(struct peer_tasks *ts)
{
	ts->seen = 0;
	ts->nacks = ts->inflight = 0;
}
