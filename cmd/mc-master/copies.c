/*
 * Dynamic copies: leases, their tasks, the source's calls and the
 * sweep of expired leases (copies.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/tier.h"
#include "mc/wire.h"

#include "copies.h"
#include "evict.h"
#include "grants.h"
#include "master.h"
#include "ops.h"
#include "peers.h"
#include "request.h"
#include "state.h"
#include "store.h"

struct copies {
	struct copy_lease *v; /* live leases, unordered */
	size_t n, cap;	      /* cap: --dynamic-replication-max-copies */
	uint64_t seq;	      /* the last lease id handed out */
	/* ended proposals, a ring: what a repeated proposal id is answered with */
	struct copy_done {
		char proposal[COPY_PROPOSAL_MAX + 1];
		struct copy_recent r;
	} recent[COPY_RECENT];
	size_t recent_next;
	uint64_t created, task_refused;
	uint64_t outcome[COPY_OUTCOME_COUNT];
	uint64_t copies[2], bytes[2]; /* completed, by [same domain, cross domain] */
	uint64_t stale_calls;	      /* calls naming no lease, or not its version */
};

static const char *const outcome_names[COPY_OUTCOME_COUNT] = {
#define X(id, name) [COPY_##id] = name,
	COPY_OUTCOMES(X)
#undef X
};

const char *
copy_outcome_name(int outcome)
{
	return outcome >= 0 && outcome < COPY_OUTCOME_COUNT ? outcome_names[outcome] : "?";
}

static struct copies *
cs_of(const struct master *m)
{
	return m->copies;
}

static struct copy_lease *
find(const struct master *m, uint64_t id)
{
	struct copies *cs = cs_of(m);

	for (size_t i = 0; cs != NULL && i < cs->n; i++)
		if (cs->v[i].id == id)
			return &cs->v[i];
	return NULL;
}

static bool
names(const struct copy_lease *l, uint32_t tenant, const char *key, size_t klen)
{
	return l->tenant == tenant && l->klen == klen && memcmp(l->key, key, klen) == 0;
}

static struct mobj *
object_of(const struct master *m, const struct copy_lease *l)
{
	return store_find(m->store, store_key_hash(l->tenant, l->key, l->klen), l->tenant, l->key,
			  l->klen);
}

/* The target's replica of l on o, or NULL when it went (or the copy never started). */
static struct mrep *
replica_of(struct mobj *o, const struct copy_lease *l, unsigned *at)
{
	for (unsigned i = 0; o != NULL && l->stage != COPY_QUEUED && i < o->nrep; i++) {
		struct mrep *r = &obj_reps(o)[i];

		if (r->id == l->rep && r->peer == l->dst && r->version == l->version) {
			if (at != NULL)
				*at = i;
			return r;
		}
	}
	return NULL;
}

static void
tell(struct master *m, const struct mobj *o, const struct copy_lease *l, int outcome)
{
	struct state_copy_lease rec = {
		.id = l->id,
		.task = l->task,
		.version = l->version,
		.expiry = l->expiry,
		.src = l->src,
		.dst = l->dst,
		.domain = l->domain,
		.proposal = l->proposal,
		.live = outcome < 0,
		.outcome = outcome < 0 ? NULL : outcome_names[outcome],
	};

	state_copy_lease(m, o, &rec);
}

/* l is over: told, counted, its proposal remembered, its slot given back. */
static void
end(struct master *m, struct copy_lease *l, int outcome)
{
	struct copies *cs = cs_of(m);
	const struct mobj *o = object_of(m, l);

	tell(m, o, l, outcome);
	cs->outcome[outcome]++;
	if (l->proposal[0] != '\0') {
		struct copy_done *d = &cs->recent[cs->recent_next++ % COPY_RECENT];

		memcpy(d->proposal, l->proposal, sizeof(d->proposal));
		d->r = (struct copy_recent){ .lease = l->id,
					     .content = l->content,
					     .outcome = outcome };
	}
	mc_debug("dynamic copy %llu of %.*s to peer %u: %s", (unsigned long long)l->id,
		 l->klen > 80 ? 80 : (int)l->klen, l->key, l->dst, outcome_names[outcome]);
	free(l->key);
	*l = cs->v[--cs->n];
}

/* The target's domain waits --dynamic-replication-cooldown before another try. */
static void
cool(struct master *m, const struct copy_lease *l)
{
	const struct mobj *o = object_of(m, l);
	const struct peer *p = peers_find(m->peers, l->dst);

	if (o != NULL)
		state_cooldown_set(m, o, p != NULL ? p->domain : l->domain,
				   mc_add_sat(mc_now_ms(), m->cfg.dr_cooldown));
}

/* Drop l's target replica if it has one (its peer told to drop what it may have written). */
static void
unreserve(struct master *m, const struct copy_lease *l)
{
	struct mobj *o = object_of(m, l);
	unsigned at;

	if (replica_of(o, l, &at) != NULL)
		ops_rep_remove(m, o, at, true);
}

/* ---- installing ---- */

static int
queue_task(struct master *m, const struct mobj *o, struct copy_lease *l, struct mc_err *err)
{
	struct peer *src = peers_find(m->peers, l->src), *dst = peers_find(m->peers, l->dst);
	const char *tname = m->store->tenants[o->tenant].name;
	struct task_replica_copy rc = {
		.lease = l->id,
		.version = l->version,
		.size = l->size,
		.checksum = o->checksum,
		.tenant = o->tenant,
		.target = l->dst,
		.len = l->klen,
		.key = l->key,
	};
	struct mc_grant_scope scope = {
		tname,	    strlen(tname), o->key, o->key_len,
		l->version, l->size,	   l->src, MC_GRANT_READ,
	};
	union task_payload pl = { .rcopy = &rc };
	uint64_t now = mc_steady_ms();

	if (src == NULL || dst == NULL)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "the source or the target went");
	rc.addr = dst->addr;
	mgrants_sign(m->grants, &src->grant_signer, &scope, now, rc.read_grant);
	scope.peer = l->dst;
	scope.action = MC_GRANT_WRITE;
	mgrants_sign(m->grants, &dst->grant_signer, &scope, now, rc.write_grant);
	l->task = peers_queue_task(m->peers, src, TASK_REPLICA_COPY, &pl);
	if (l->task == 0)
		return mc_err_set(err, MC_ERR_NO_SPACE, "peer %u's task queue is full", l->src);
	return 0;
}

const struct copy_lease *
copies_begin(struct master *m, const struct mobj *o, const struct copy_ask *ask, struct mc_err *err)
{
	struct copies *cs = cs_of(m);
	const struct peer *src = peers_find(m->peers, ask->src);
	const struct peer *dst = peers_find(m->peers, ask->dst);
	uint64_t now = mc_now_ms();
	struct copy_lease *l;

	if (cs->n >= cs->cap)
		return mc_err_set(err, MC_ERR_NO_SPACE, "%zu dynamic copies under way already",
				  cs->n),
		       NULL;
	if (src == NULL || dst == NULL)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "no such source or target"), NULL;
	l = &cs->v[cs->n];
	memset(l, 0, sizeof(*l));
	if ((l->key = malloc(o->key_len)) == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory"), NULL;
	memcpy(l->key, o->key, o->key_len);
	l->klen = o->key_len;
	l->id = ++cs->seq;
	l->version = o->version;
	l->size = o->size;
	l->tenant = o->tenant;
	l->src = ask->src;
	l->dst = ask->dst;
	l->content = ask->content;
	l->expiry = mc_add_sat(now, m->cfg.dr_lease);
	/* a proposal that must be done sooner clamps its lease */
	if (ask->expires != 0 && ask->expires < l->expiry)
		l->expiry = ask->expires;
	l->cross = strcmp(src->domain, dst->domain) != 0;
	snprintf(l->domain, sizeof(l->domain), "%s", dst->domain);
	snprintf(l->proposal, sizeof(l->proposal), "%s", ask->proposal);
	cs->n++;
	/* installed and told before the task exists: its start always finds it */
	tell(m, o, l, -1);
	if (queue_task(m, o, l, err) != 0) {
		cs->task_refused++;
		/* rolled back: told as ended, not counted as a copy that ran */
		tell(m, o, l, COPY_REFUSED);
		free(l->key);
		cs->n--;
		return NULL;
	}
	cs->created++;
	return l;
}

bool
copies_pending(const struct master *m, const struct mobj *o)
{
	const struct copies *cs = cs_of(m);

	for (size_t i = 0; cs != NULL && i < cs->n; i++)
		if (names(&cs->v[i], o->tenant, o->key, o->key_len))
			return true;
	return false;
}

unsigned
copies_from(const struct master *m, uint32_t peer)
{
	const struct copies *cs = cs_of(m);
	unsigned n = 0;

	for (size_t i = 0; cs != NULL && i < cs->n; i++)
		n += cs->v[i].src == peer;
	return n;
}

size_t
copies_running(const struct master *m)
{
	return cs_of(m) != NULL ? cs_of(m)->n : 0;
}

const struct copy_lease *
copies_lease(const struct master *m, uint64_t id)
{
	return find(m, id);
}

bool
copies_proposal(const struct master *m, const char *proposal, struct copy_recent *out)
{
	const struct copies *cs = cs_of(m);

	if (proposal[0] == '\0')
		return false;
	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->v[i].proposal, proposal) == 0) {
			*out = (struct copy_recent){ .lease = cs->v[i].id,
						     .content = cs->v[i].content,
						     .outcome = -1 };
			return true;
		}
	/* newest first: an id reused after its lease ended answers as its last use */
	for (size_t k = 1; k <= COPY_RECENT && k <= cs->recent_next; k++) {
		const struct copy_done *d = &cs->recent[(cs->recent_next - k) % COPY_RECENT];

		if (strcmp(d->proposal, proposal) == 0) {
			*out = d->r;
			return true;
		}
	}
	return false;
}

static const char *const stage_names[] = { "queued", "started", "ended" };

void
copies_pack_lease(msgpack_packer *pk, const struct master *m, const struct copy_lease *l)
{
	uint64_t now = mc_now_ms();

	msgpack_pack_map(pk, 12);
	mc_pack_kv_u64(pk, "id", l->id);
	mc_pack_kv_str(pk, "tenant", m->store->tenants[l->tenant].name);
	mc_pack_kv_strn(pk, "key", l->key, l->klen);
	mc_pack_kv_u64(pk, "source", l->src);
	mc_pack_kv_u64(pk, "target", l->dst);
	mc_pack_kv_str(pk, "domain", l->domain);
	mc_pack_kv_u64(pk, "version", l->version);
	mc_pack_kv_u64(pk, "size", l->size);
	mc_pack_kv_u64(pk, "expires_in_ms", l->expiry > now ? l->expiry - now : 0);
	mc_pack_kv_u64(pk, "task", l->task);
	mc_pack_kv_str(pk, "proposal", l->proposal);
	mc_pack_kv_str(pk, "stage", stage_names[l->stage]);
}

void
copies_pack_leases(msgpack_packer *pk, const struct master *m)
{
	const struct copies *cs = cs_of(m);

	msgpack_pack_array(pk, (uint32_t)cs->n);
	for (size_t i = 0; i < cs->n; i++)
		copies_pack_lease(pk, m, &cs->v[i]);
}

void
copies_pack_status(msgpack_packer *pk, const struct master *m)
{
	const struct copies *cs = cs_of(m);
	const struct cooldowns *cd = state_cooldowns(m);

	msgpack_pack_map(pk, 6);
	mc_pack_kv_u64(pk, "inflight", cs->n);
	mc_pack_kv_u64(pk, "limit", cs->cap);
	mc_pack_kv_u64(pk, "created", cs->created);
	mc_pack_kv_u64(pk, "dynamic_replicas", state_dynamic_replicas(m));
	mc_pack_kv_u64(pk, "cooldowns", cd != NULL ? cooldowns_running(cd, mc_now_ms()) : 0);
	mc_pack_key(pk, "outcomes");
	msgpack_pack_map(pk, COPY_OUTCOME_COUNT);
	for (int i = 0; i < COPY_OUTCOME_COUNT; i++)
		mc_pack_kv_u64(pk, outcome_names[i], cs->outcome[i]);
}

/* ---- completing ---- */

/* l's replica r on o has its bytes and its end: readable now. */
static void
complete(struct master *m, struct copy_lease *l, struct mobj *o, struct mrep *r)
{
	struct copies *cs = cs_of(m);
	const struct peer *p = peers_find(m->peers, l->dst);

	ops_rep_complete(m, o, r);
	recency_sync(&m->store->rank, o);
	if (p != NULL)
		ops_notify_committed(m, o, l->version, p);
	cs->copies[l->cross]++;
	cs->bytes[l->cross] += l->size;
	end(m, l, COPY_COMPLETED);
	/* the new copy may take its tier over its high watermark */
	if (p != NULL)
		evict_tier_check(m, p->id, MC_TIER_DRAM);
}

bool
copies_write_ack(struct master *m, uint32_t tenant, const char *key, size_t klen, uint32_t peer,
		 uint64_t version, uint64_t size)
{
	struct copies *cs = cs_of(m);

	for (size_t i = 0; cs != NULL && i < cs->n; i++) {
		struct copy_lease *l = &cs->v[i];
		struct mobj *o;
		struct mrep *r, to;

		if (l->dst != peer || l->version != version || !names(l, tenant, key, klen))
			continue;
		o = object_of(m, l);
		if ((r = replica_of(o, l, NULL)) == NULL || size != l->size)
			return false;
		to = *r;
		to.written = 1;
		state_replica_set(m, o, r, &to);
		if (l->stage == COPY_ENDED)
			complete(m, l, o, r);
		return true;
	}
	return false;
}

/* ---- the source's calls ---- */

/*
 * The lease a call from the source names, checked: its id, the caller
 * (its source, and only it), its version. NULL with err otherwise, the
 * lease untouched: a stranger or a stale task cannot end another's copy.
 */
static struct copy_lease *
called(struct mc_req *req, struct mc_err *err)
{
	struct master *m = req_begin(req);
	uint64_t peer, id, version;
	struct copy_lease *l;

	if (req_need_u64(req->params, "peer_id", &peer, err) != 0 ||
	    req_need_u64(req->params, "lease", &id, err) != 0 ||
	    req_need_u64(req->params, "version", &version, err) != 0 ||
	    req_check_own_peer(req, peer, err) != 0)
		return NULL;
	if ((l = find(m, id)) == NULL) {
		cs_of(m)->stale_calls++;
		return mc_err_set(err, MC_ERR_NOT_FOUND, "no lease %llu: it ended or expired",
				  (unsigned long long)id),
		       NULL;
	}
	if (l->src != peer)
		return mc_err_set(err, MC_ERR_PERMISSION,
				  "permission denied: peer %llu is not lease %llu's source",
				  (unsigned long long)peer, (unsigned long long)id),
		       NULL;
	if (l->version != version) {
		cs_of(m)->stale_calls++;
		return mc_err_set(err, MC_ERR_INVALID, "lease %llu is for version %llu, not %llu",
				  (unsigned long long)id, (unsigned long long)l->version,
				  (unsigned long long)version),
		       NULL;
	}
	return l;
}

/* Why the target cannot take l's copy of o now, or NULL when it can. */
static const char *
target_refuses(const struct master *m, const struct mobj *o, const struct copy_lease *l)
{
	const struct peer *p = peers_find(m->peers, l->dst);
	const struct peer_tier *t = p != NULL ? &p->tiers[MC_TIER_DRAM] : NULL;
	const struct mrep *v = obj_creps(o);

	if (p == NULL || p->conn == NULL || !peer_alive(p, m->cfg.peer_ttl))
		return "the target peer is gone";
	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].peer == l->dst)
			return "the target holds a copy already";
	if (!t->present || t->used > t->capacity ||
	    t->capacity - t->used < peer_tier_footprint(t, o->size))
		return "no room on the target";
	return NULL;
}

/* dynamic_copy_start {peer_id, lease, version} -> {}: the target's room is reserved */
static void
h_copy_start(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	struct copy_lease *l = called(req, &err);
	struct mobj *o;
	struct mrep *r, to;
	const char *why;

	if (l == NULL)
		goto fail;
	if (l->stage != COPY_QUEUED) {
		handler_fail(req, MC_ERR_INVALID, "lease %llu started already",
			     (unsigned long long)l->id);
		return;
	}
	if (mc_now_ms() >= l->expiry) {
		mc_err_set(&err, MC_ERR_NOT_FOUND, "lease %llu expired", (unsigned long long)l->id);
		cool(m, l);
		end(m, l, COPY_EXPIRED);
		goto fail;
	}
	o = object_of(m, l);
	if (o == NULL || o->version != l->version || o->writing) {
		mc_err_set(&err, MC_ERR_INVALID, "version %llu is no longer the object's",
			   (unsigned long long)l->version);
		end(m, l, COPY_LOST);
		goto fail;
	}
	if ((why = target_refuses(m, o, l)) != NULL) {
		mc_err_set(&err, MC_ERR_NO_SPACE, "%s", why);
		end(m, l, COPY_REFUSED);
		goto fail;
	}
	if ((r = ops_rep_new(m, o, l->dst, MC_TIER_DRAM, l->version, l->size)) == NULL) {
		mc_err_set(&err, MC_ERR_SYSTEM, "out of memory");
		end(m, l, COPY_REFUSED);
		goto fail;
	}
	to = *r;
	to.dynamic = 1;
	state_replica_set(m, o, r, &to);
	l->rep = r->id;
	l->stage = COPY_STARTED;
	mc_reply_ok_empty(req);
	return;
fail:
	req_fail_err(req, &err);
}

/* dynamic_copy_end {peer_id, lease, version} -> {}: the write to the target was answered */
static void
h_copy_end(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	struct copy_lease *l = called(req, &err);
	struct mobj *o;
	struct mrep *r, to;

	if (l == NULL)
		goto fail;
	if (l->stage != COPY_STARTED) {
		handler_fail(req, MC_ERR_INVALID, "lease %llu is not started, or ended already",
			     (unsigned long long)l->id);
		return;
	}
	o = object_of(m, l);
	if ((r = replica_of(o, l, NULL)) == NULL) {
		mc_err_set(&err, MC_ERR_NOT_FOUND, "the target's replica went meanwhile");
		end(m, l, COPY_LOST);
		goto fail;
	}
	to = *r;
	to.ended = 1;
	state_replica_set(m, o, r, &to);
	if (r->written)
		complete(m, l, o, r);
	else
		l->stage = COPY_ENDED; /* its write_ack completes it */
	mc_reply_ok_empty(req);
	return;
fail:
	req_fail_err(req, &err);
}

/* dynamic_copy_revoke {peer_id, lease, version, reason?} -> {}: the copy failed */
static void
h_copy_revoke(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	struct copy_lease *l = called(req, &err);
	const char *why = "";
	size_t wlen = 0;

	if (l == NULL) {
		req_fail_err(req, &err);
		return;
	}
	if (mc_map_str(req->params, "reason", &why, &wlen, &err) < 0)
		wlen = 0;
	mc_info("dynamic copy %llu to peer %u revoked by its source: %.*s",
		(unsigned long long)l->id, l->dst, (int)(wlen > 200 ? 200 : wlen), why);
	unreserve(m, l);
	cool(m, l);
	end(m, l, COPY_REVOKED);
	mc_reply_ok_empty(req);
}

/* ---- expiry ---- */

static void
copies_sweep(struct master *m)
{
	struct copies *cs = cs_of(m);
	uint64_t now = mc_now_ms();

	for (size_t i = 0; cs != NULL && i < cs->n;) {
		struct copy_lease *l = &cs->v[i];
		struct peer *src;

		if (now < l->expiry) {
			i++;
			continue;
		}
		/* a task its source never took is not wanted any more */
		if (l->stage == COPY_QUEUED && (src = peers_find(m->peers, l->src)) != NULL)
			tasks_retire(&m->peers->tasks, &src->tasks, l->task);
		unreserve(m, l);
		cool(m, l);
		end(m, l, COPY_EXPIRED); /* slot i now holds another lease */
	}
}

void
copies_forget(struct master *m)
{
	struct copies *cs = cs_of(m);

	while (cs != NULL && cs->n > 0)
		end(m, &cs->v[cs->n - 1], COPY_LOST);
}

/* ---- the module ---- */

static int
copies_init(struct master *m, struct mc_err *err)
{
	struct copies *cs = calloc(1, sizeof(*cs));

	if (cs == NULL || (cs->v = calloc(m->cfg.dr_max_copies, sizeof(*cs->v))) == NULL) {
		free(cs);
		return mc_err_set(err, MC_ERR_SYSTEM, "no memory for the dynamic copies");
	}
	cs->cap = m->cfg.dr_max_copies;
	m->copies = cs;
	return 0;
}

static void
copies_free(struct master *m)
{
	struct copies *cs = cs_of(m);

	if (cs == NULL)
		return;
	for (size_t i = 0; i < cs->n; i++)
		free(cs->v[i].key);
	free(cs->v);
	free(cs);
	m->copies = NULL;
}

static void
copies_collect(struct mc_metrics *reg, void *arg)
{
	const struct master *m = arg;
	const struct copies *cs = cs_of(m);
	static const char *const scope[2] = { "same", "cross" };

	if (cs == NULL)
		return;
	mc_metric_put(reg, "mc_replication_copies_created_total", MC_COUNTER,
		      "Dynamic copies whose lease was installed and task queued.", NULL, NULL,
		      (double)cs->created);
	mc_metric_put(reg, "mc_replication_copies_inflight", MC_GAUGE,
		      "Dynamic copies under a live lease.", NULL, NULL, (double)cs->n);
	for (int i = 0; i < COPY_OUTCOME_COUNT; i++)
		mc_metric_put(reg, "mc_replication_copies_total", MC_COUNTER,
			      "Dynamic copies ended, by outcome.", "outcome", outcome_names[i],
			      (double)cs->outcome[i]);
	for (int x = 0; x < 2; x++) {
		mc_metric_put(reg, "mc_replication_copied_total", MC_COUNTER,
			      "Dynamic copies completed, by domain scope.", "scope", scope[x],
			      (double)cs->copies[x]);
		mc_metric_put(reg, "mc_replication_copied_bytes_total", MC_COUNTER,
			      "Bytes of dynamic copies completed, by domain scope.", "scope",
			      scope[x], (double)cs->bytes[x]);
	}
	mc_metric_put(reg, "mc_replication_copy_calls_stale_total", MC_COUNTER,
		      "Copy calls from sources naming no live lease or not its version.", NULL,
		      NULL, (double)cs->stale_calls);
	mc_metric_put(reg, "mc_replication_dynamic_replicas", MC_GAUGE,
		      "Readable dynamic replicas.", NULL, NULL, (double)state_dynamic_replicas(m));
}

static const struct mc_method copies_methods[] = {
	{ "dynamic_copy_start", h_copy_start, MC_METHOD_PEER },
	{ "dynamic_copy_end", h_copy_end, MC_METHOD_PEER },
	{ "dynamic_copy_revoke", h_copy_revoke, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

const struct master_module copies_module = {
	.name = "dynamic copies",
	.init = copies_init,
	.free = copies_free,
	.sweep = copies_sweep,
	.methods = copies_methods,
	.collect = copies_collect,
};
