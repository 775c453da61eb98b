/*
 * When eviction's rounds start (see evict.h): the watermarks, a put that
 * found no room, a tenant's quota, the store's budget, and the admin's
 * evict_run and evict_plan; the policy and quotas they follow; and the
 * evictor's life cycle. evict_exec.c runs the rounds, evict_jobs.c keeps
 * their records and metrics.
 *
 * Everything in eviction runs on the event loop except the planning,
 * which a job on the evictor's worker queue does over data only the job
 * owns (the view, a reference to the policy, the plan bytes), and the
 * release of a finished job's memory. The queue's completion brings the
 * plan back to the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/band.h"
#include "mc/checked.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/planexec.h"
#include "mc/planner.h"
#include "mc/policy.h"
#include "mc/wire.h"
#include "mc/workq.h"
#include "mc/young.h"
#include "candidates.h"
#include "evict.h"
#include "evict_exec.h"
#include "evict_jobs.h"
#include "extplan.h"
#include "request.h"
#include "master.h"
#include "offloop.h"
#include "ops.h"
#include "peers.h"
#include "store.h"

struct quota {
	char *tenant;
	uint64_t bytes;
};

/* ---- policy and quotas ---- */

static struct policy_ref *
policy_load(const char *path, struct mc_err *err)
{
	struct policy_ref *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the policy");
		return NULL;
	}
	r->refs = 1;
	if (path == NULL ? mc_policy_builtin(&r->p, err) != 0
			 : mc_policy_load(path, &r->p, err) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

static void
quotas_free(struct quota *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(q[i].tenant);
	free(q);
}

/*
 * The quota file: one "TENANT SIZE" a line, '#' comments, blank lines
 * ignored. Errors name the file and line.
 */
static int
quotas_load(const char *path, struct quota **out, size_t *nout, struct mc_err *err)
{
	FILE *f = fopen(path, "r");
	struct quota *q = NULL;
	size_t n = 0, cap = 0, lineno = 0, llen = 0;
	char *line = NULL;
	ssize_t got;

	*out = NULL;
	*nout = 0;
	if (f == NULL)
		return mc_err_errno(err, "cannot open quota file %s", path);
	while ((got = getline(&line, &llen, f)) >= 0) {
		char *hash = memchr(line, '#', (size_t)got);
		char name[MC_NAME_MAX + 2], size[64], extra[2];
		uint64_t bytes;
		int k;

		lineno++;
		if (hash != NULL)
			*hash = '\0';
		k = sscanf(line, "%129s %63s %1s", name, size, extra);
		if (k <= 0)
			continue;
		if (k != 2) {
			mc_err_set(err, MC_ERR_INVALID, "%s: line %zu: expected 'TENANT SIZE'",
				   path, lineno);
			goto fail;
		}
		if (!store_name_ok(name, strlen(name))) {
			mc_err_set(err, MC_ERR_INVALID, "%s: line %zu: bad tenant name '%.64s'",
				   path, lineno, name);
			goto fail;
		}
		if (mc_parse_size(size, &bytes, err) != 0 || bytes == 0) {
			mc_err_set(err, MC_ERR_INVALID, "%s: line %zu: bad size '%s'", path, lineno,
				   size);
			goto fail;
		}
		for (size_t i = 0; i < n; i++)
			if (strcmp(q[i].tenant, name) == 0) {
				mc_err_set(err, MC_ERR_INVALID, "%s: line %zu: tenant '%s' again",
					   path, lineno, name);
				goto fail;
			}
		if (n == cap) {
			size_t ncap = cap == 0 ? 8 : cap * 2;
			struct quota *nq = realloc(q, ncap * sizeof(*nq));

			if (nq == NULL)
				goto oom;
			q = nq;
			cap = ncap;
		}
		if ((q[n].tenant = strdup(name)) == NULL)
			goto oom;
		q[n++].bytes = bytes;
	}
	if (ferror(f)) {
		mc_err_errno(err, "cannot read quota file %s", path);
		goto fail;
	}
	fclose(f);
	free(line);
	*out = q;
	*nout = n;
	return 0;
oom:
	mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for quotas");
fail:
	fclose(f);
	free(line);
	quotas_free(q, n);
	return -1;
}

/* Tenant t's quota in bytes, 0 for none; mirrored into the tenant for stat and snapshots. */
static uint64_t
quota_of(struct master *m, uint32_t t)
{
	struct evictor *e = evictor_of(m);
	struct store *s = m->store;

	if (e->nquotas == 0 || t >= s->ntenants)
		return 0;
	if (t >= e->nquota_of) {
		uint32_t n = s->ntenants;
		uint64_t *p = realloc(e->quota_of, n * sizeof(*p));

		if (p == NULL)
			return 0;
		for (uint32_t i = e->nquota_of; i < n; i++)
			p[i] = UINT64_MAX;
		e->quota_of = p;
		e->nquota_of = n;
	}
	if (e->quota_of[t] == UINT64_MAX) {
		e->quota_of[t] = 0;
		for (size_t i = 0; i < e->nquotas; i++)
			if (strcmp(e->quotas[i].tenant, s->tenants[t].name) == 0)
				e->quota_of[t] = e->quotas[i].bytes;
		s->tenants[t].quota = e->quota_of[t];
	}
	return e->quota_of[t];
}

static int
load_config(struct master *m, struct policy_ref **pol, struct quota **q, size_t *nq,
	    struct mc_err *err)
{
	*q = NULL;
	*nq = 0;
	*pol = policy_load(m->cfg.evict_policy, err);
	if (*pol == NULL)
		return -1;
	if (m->cfg.quota_file != NULL && quotas_load(m->cfg.quota_file, q, nq, err) != 0) {
		evict_policy_put(*pol);
		return -1;
	}
	return 0;
}

static void
install_config(struct master *m, struct policy_ref *pol, struct quota *q, size_t nq)
{
	struct evictor *e = evictor_of(m);

	evict_policy_put(e->policy);
	e->policy = pol;
	quotas_free(e->quotas, e->nquotas);
	e->quotas = q;
	e->nquotas = nq;
	free(e->quota_of);
	e->quota_of = NULL;
	e->nquota_of = 0;
	for (uint32_t t = 0; t < m->store->ntenants; t++)
		m->store->tenants[t].quota = 0;
	for (uint32_t t = 0; t < m->store->ntenants; t++)
		quota_of(m, t);
}

int
evict_reload(struct master *m, struct mc_err *err)
{
	struct policy_ref *pol;
	struct quota *q;
	size_t nq;

	if (load_config(m, &pol, &q, &nq, err) != 0)
		return -1;
	install_config(m, pol, q, nq);
	mc_info("eviction policy '%s' loaded, %zu tenant quotas", pol->p.name, nq);
	return 0;
}

/* ---- triggers ---- */

/*
 * What the puts in progress mean for a peer tier. *superseded: the
 * bytes of older copies that upserts will free there when they commit
 * (a round that counted them would free that much below the low mark
 * once the writes end). *placing: the footprints of the copies placed
 * there and not complete yet, the writes in flight its band keeps
 * headroom for. Either may be NULL.
 */
static void
in_progress(const struct master *m, uint32_t peer, int tier, uint64_t *superseded,
	    uint64_t *placing)
{
	const struct peer *pr = peers_find(m->peers, peer);
	struct pending *p;
	size_t cur = 0;
	uint64_t gone = 0, coming = 0;

	while ((p = mc_htab_next(&m->store->pending, &cur)) != NULL) {
		const struct mobj *o = p->o;
		const struct mrep *v = obj_creps(o);

		for (unsigned i = 0; i < o->nrep; i++) {
			if (v[i].peer != peer || v[i].tier != tier)
				continue;
			if (v[i].version == p->version && v[i].state == REP_PROCESSING &&
			    pr != NULL)
				coming += peer_tier_footprint(&pr->tiers[tier], p->size);
			/* a moving copy's bytes are counted as going already (peer_tier_staying) */
			else if (p->upsert && !p->committed && v[i].version != p->version &&
				 !v[i].moving)
				gone += o->size;
		}
	}
	if (superseded != NULL)
		*superseded = gone;
	if (placing != NULL)
		*placing = coming;
}

void
evict_tier_band(const struct master *m, const struct peer *p, int tier, struct mc_band *out)
{
	const struct peer_tier *pt = &p->tiers[tier];
	const struct rank_list *l;
	uint64_t placing, committed;

	if (pt->high > 0 || m->cfg.evict_marks) {
		mc_band_marks(pt->capacity, peer_tier_high(pt, m->cfg.evict_high),
			      peer_tier_low(pt, m->cfg.evict_low), out);
		return;
	}
	in_progress(m, p->id, tier, NULL, &placing);
	/* the objects with a complete copy there, and what they take */
	l = recency_list(&m->store->rank, p->id, tier);
	committed = pt->used > placing ? pt->used - placing : 0;
	mc_band_headroom(pt->capacity, committed, l != NULL ? l->n : 0, out);
}

bool
evict_tier_banded(const struct master *m, const struct peer *p, int tier)
{
	return p->tiers[tier].high <= 0 && !m->cfg.evict_marks;
}

/* A peer tier's usage that stays, low mark and capacity; false when it is not live. */
static bool
tier_usage(struct master *m, uint32_t peer, int tier, uint64_t *used, uint64_t *low, uint64_t *cap)
{
	const struct peer *p = peers_find(m->peers, peer);
	const struct peer_tier *pt;
	struct mc_band band;
	uint64_t going;

	if (p == NULL || !peer_alive(p, m->cfg.peer_ttl) || !p->tiers[tier].present)
		return false;
	pt = &p->tiers[tier];
	in_progress(m, peer, tier, &going, NULL);
	*used = peer_tier_staying(pt) > going ? peer_tier_staying(pt) - going : 0;
	*cap = pt->capacity;
	evict_tier_band(m, p, tier, &band);
	*low = band.low;
	return true;
}

/*
 * An automatic round's target within --max-evict-bytes-per-round. A
 * capped round that leaves its scope above the high mark is followed by
 * the next at once (ended_cb), so the cap spreads the work over rounds
 * without losing any of it.
 */
static uint64_t
round_cap(const struct master *m, uint64_t target)
{
	return m->cfg.max_evict_bytes > 0 && target > m->cfg.max_evict_bytes
		       ? m->cfg.max_evict_bytes
		       : target;
}

/*
 * The level a store's round cuts tenants down to so that `free` objects
 * go: the highest x at which the tenants' objects above x add up to
 * free at least (max-min fairness over equal shares). It is never below
 * a tenant's fair share, the objects to keep divided among the tenants
 * that hold any: one under its share gives nothing while another is
 * above the level. A binary search over at most TENANTS_MAX counts.
 */
static uint64_t
fair_level(const struct store *s, uint64_t free)
{
	uint64_t lo = 0, hi = 0;

	for (uint32_t t = 0; t < s->ntenants; t++)
		if (s->tenants[t].objects > hi)
			hi = s->tenants[t].objects;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2, above = 0;

		for (uint32_t t = 0; t < s->ntenants; t++)
			if (s->tenants[t].objects > mid)
				above = mc_add_sat(above, s->tenants[t].objects - mid);
		if (above >= free)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * The store's round: the objects above the budget's low mark, plus one
 * for each put waiting on it, taken from the tenant furthest over its
 * fair share (the one with the most objects), down to the fair level
 * (fair_level); the next round, if one is needed, takes from the next.
 * Plans count bytes, so the round is that tenant's, in charged bytes
 * (its objects' bytes, keys and overheads), and the target is the
 * objects to take at its mean charge.
 */
static bool
store_target(struct master *m, struct job *j)
{
	const struct store *s = m->store;
	struct mc_round *rd = &j->round;
	uint64_t count = s->objects.count, want = mc_add_sat(count, j->waiting);
	uint64_t low = (uint64_t)((double)m->cfg.max_objects * m->cfg.evict_low);
	uint64_t free, level, take, mean, charge;
	uint32_t most = 0;

	if (m->cfg.max_objects == 0 || count == 0 || want <= low)
		return false;
	free = want - low;
	level = fair_level(s, free);
	for (uint32_t t = 1; t < s->ntenants; t++)
		if (s->tenants[t].objects > s->tenants[most].objects)
			most = t;
	if (s->tenants[most].objects <= level)
		return false;
	take = s->tenants[most].objects - level < free ? s->tenants[most].objects - level : free;
	charge = store_tenant_charge(&s->tenants[most]);
	mean = charge / s->tenants[most].objects > 0 ? charge / s->tenants[most].objects : 1;
	j->filter.by_tenant = true;
	j->filter.tenant = most;
	snprintf(rd->scope, sizeof(rd->scope), "store, tenant %.48s", s->tenants[most].name);
	rd->usage_at_start = charge;
	/* the waiting puts' share of it, which young copies may have to make (sort_young) */
	rd->waiting = mc_mul_sat(j->waiting < take ? j->waiting : take, mean);
	rd->target = round_cap(m, mc_mul_sat(take, mean));
	rd->low = mc_add_sat(charge, rd->waiting) > rd->target
			  ? mc_add_sat(charge, rd->waiting) - rd->target
			  : 0;
	j->target = rd->target;
	if (m->cfg.evict_lowerbound >= 0)
		j->lowerbound = (uint64_t)((double)j->target * m->cfg.evict_lowerbound);
	j->has_round = true;
	return true;
}

/*
 * A tenant's usage and low mark, in charged bytes (its objects' bytes,
 * keys and overheads): its quota's low mark, or the charge its objects
 * above --max-objects-per-tenant's low mark take at their mean charge
 * gone, whichever is lower. False when it has neither quota nor cap.
 */
static bool
tenant_usage(struct master *m, uint32_t tenant, uint64_t *used, uint64_t *low)
{
	uint64_t quota = quota_of(m, tenant), cap = m->cfg.max_objects_per_tenant, keep;
	const struct tenant *t;

	if (tenant >= m->store->ntenants || (quota == 0 && cap == 0))
		return false;
	t = &m->store->tenants[tenant];
	*used = store_tenant_charge(t);
	*low = quota != 0 ? (uint64_t)((double)quota * m->cfg.evict_low) : UINT64_MAX;
	keep = (uint64_t)((double)cap * m->cfg.evict_low);
	if (cap != 0 && t->objects > keep) {
		uint64_t over = mc_mul_sat(t->objects - keep, *used / t->objects);
		uint64_t at = over < *used ? *used - over : 0;

		if (at < *low)
			*low = at;
	}
	return true;
}

/*
 * A scope's round, as it starts: the target is the usage above the low
 * mark plus what the waiting puts need, so that once they are placed the
 * scope sits at its low mark; bytes, however many keys that takes. False
 * when there is nothing to do.
 */
static bool
scope_target(struct master *m, struct job *j)
{
	struct mc_round *rd = &j->round;
	uint64_t used = 0, low = 0, cap = 0;

	if (j->scope == SCOPE_STORE)
		return store_target(m, j);
	if (j->scope == SCOPE_TIER) {
		if (!tier_usage(m, j->filter.peer, j->filter.tier, &used, &low, &cap))
			return false;
		snprintf(rd->scope, sizeof(rd->scope), "peer %u %s", j->filter.peer,
			 mc_tier_name(j->filter.tier));
	} else {
		if (!tenant_usage(m, j->filter.tenant, &used, &low))
			return false;
		snprintf(rd->scope, sizeof(rd->scope), "tenant %.50s",
			 m->store->tenants[j->filter.tenant].name);
	}
	rd->usage_at_start = used;
	rd->low = low;
	rd->waiting = j->waiting;
	if (mc_add_sat(used, j->waiting) <= low)
		return false;
	rd->target = round_cap(m, mc_add_sat(used, j->waiting) - low);
	j->target = rd->target;
	if (m->cfg.evict_lowerbound >= 0)
		j->lowerbound = (uint64_t)((double)j->target * m->cfg.evict_lowerbound);
	j->has_round = true;
	return true;
}

/* The record of an admin's round: its filter's usage and the target it gave. */
static void
manual_round(struct master *m, struct job *j)
{
	const struct cand_filter *f = &j->filter;
	struct mc_round *rd = &j->round;
	uint64_t used = 0;

	if (f->by_tenant && f->tenant < m->store->ntenants) {
		used = m->store->tenants[f->tenant].bytes;
		snprintf(rd->scope, sizeof(rd->scope), "tenant %.50s",
			 m->store->tenants[f->tenant].name);
	} else {
		for (uint32_t i = 0; i < m->peers->n; i++) {
			const struct peer *p = m->peers->v[i];

			if (f->by_peer && p->id != f->peer)
				continue;
			for (int t = 0; t < MC_TIER_COUNT; t++)
				if (p->tiers[t].present && (!f->by_tier || t == f->tier))
					used += p->tiers[t].used;
		}
		if (f->by_peer)
			snprintf(rd->scope, sizeof(rd->scope), "peer %u%s%s", f->peer,
				 f->by_tier ? " " : "", f->by_tier ? mc_tier_name(f->tier) : "");
		else if (f->by_tier)
			snprintf(rd->scope, sizeof(rd->scope), "tier %s", mc_tier_name(f->tier));
	}
	rd->usage_at_start = used;
	rd->target = j->target;
	j->has_round = true;
}

/*
 * The one round of a scope. A trigger joins the round queued for it
 * (adding need, the bytes of a put that waits on it) or the one running
 * (whose target is fixed: a put still short of room when it ends tries
 * again and starts the next), or queues a new round. Returns the round's
 * seq, or 0 when the scope is stalled or the queue is full.
 */
static uint64_t
scope_round(struct master *m, int trigger, int kind, const struct cand_filter *f, uint64_t key,
	    uint64_t need)
{
	struct evictor *e = evictor_of(m);
	struct job *j;
	uint64_t seq;

	for (j = e->head; j != NULL; j = j->next)
		if (j->key == key) {
			j->waiting = mc_add_sat(j->waiting, need);
			return j->seq;
		}
	if (e->running != NULL && e->running->key == key)
		return e->running->seq;
	switch (evict_rest(m, key, need == 0)) {
	case REST_NONE:
		break;
	case REST_YOUNG:
		mc_metric_inc(e->skipped_young);
		return 0;
	default:
		return 0;
	}
	j = evict_job_new(m, trigger);
	if (j == NULL)
		return 0;
	j->scope = kind;
	j->filter = *f;
	j->key = key;
	j->waiting = need;
	seq = j->seq;
	/* Read before queueing: a round with nothing to do ends inside evict_job_queue. */
	if (evict_job_queue(m, j) != 0) {
		evict_job_free(j);
		return 0;
	}
	return seq;
}

/* The tenant's round, for its quota or its cap; its records weigh what the tenant is charged. */
static uint64_t
tenant_round(struct master *m, uint32_t tenant, uint64_t need)
{
	struct cand_filter f = { .by_tenant = true, .tenant = tenant, .charged = true };

	return scope_round(m, TRIG_QUOTA, SCOPE_TENANT, &f,
			   evict_scope_key(SCOPE_TENANT, 0, 0, tenant), need);
}

static uint64_t
tier_round(struct master *m, int trigger, uint32_t peer, int tier, uint64_t need)
{
	struct cand_filter f = { .by_peer = true, .peer = peer, .by_tier = true, .tier = tier };

	return scope_round(m, trigger, SCOPE_TIER, &f, evict_scope_key(SCOPE_TIER, peer, tier, 0),
			   need);
}

/* A peer tier over its band's high end starts its round (from now on it is watched). */
static void
check_tier(struct master *m, struct peer *p, int t)
{
	struct peer_tier *pt = &p->tiers[t];
	struct mc_band band;

	if (!pt->present || pt->capacity == 0)
		return;
	evict_tier_band(m, p, t, &band);
	if (peer_tier_staying(pt) <= band.high)
		return;
	if (peer_self_evicts(p, t)) {
		/* The peer evicts it at its own watermarks; a round here would race it. */
		mc_metric_inc(evictor_of(m)->skipped_self_evict);
		return;
	}
	if (!pt->reached_high) {
		pt->reached_high = true;
		pt->occupancy_min = (double)pt->used / (double)pt->capacity;
	}
	tier_round(m, TRIG_WATERMARK, p->id, t, 0);
}

void
evict_stalled(struct master *m, struct peer *p, uint8_t tiers)
{
	for (int t = 0; t < MC_TIER_COUNT; t++)
		if ((tiers & (1u << t)) != 0 && p->tiers[t].present)
			tier_round(m, TRIG_STALLED, p->id, t, 0);
}

void
evict_tier_check(struct master *m, uint32_t peer, int tier)
{
	struct peer *p = peers_find(m->peers, peer);

	if (p != NULL && tier >= 0 && tier < MC_TIER_COUNT)
		check_tier(m, p, tier);
}

/* The store's round; store_target names the tenant it takes from as it starts. */
static uint64_t
store_round(struct master *m, int trigger, uint64_t need)
{
	struct cand_filter f = { .charged = true };

	return scope_round(m, trigger, SCOPE_STORE, &f, evict_scope_key(SCOPE_STORE, 0, 0, 0),
			   need);
}

void
evict_check_watermarks(struct master *m)
{
	if (m->cfg.max_objects > 0 &&
	    (double)m->store->objects.count > (double)m->cfg.max_objects * m->cfg.evict_high)
		store_round(m, TRIG_BUDGET, 0);
	for (uint32_t i = 0; i < m->peers->n; i++) {
		struct peer *p = m->peers->v[i];

		if (!peer_alive(p, m->cfg.peer_ttl))
			continue;
		for (int t = 0; t < MC_TIER_COUNT; t++)
			check_tier(m, p, t);
	}
}

/* A live peer that could take a copy of some size: its fastest tier that could, and its room. */
struct no_space_cand {
	uint32_t peer;
	int tier;
	uint64_t room;
	uint64_t coming; /* what the demotions under way will free */
	uint64_t need;	 /* what the copy takes there */
};

/*
 * Ask a peer that evicts tier itself for room for a put of bytes there:
 * a put the master cannot place never reaches the peer as a write, so
 * the peer would not otherwise learn that its tier is full. used is what
 * the master counts on the tier, copies being written included, which
 * the peer does not hold yet (room {tier, bytes, used}).
 */
static void
ask_room(struct master *m, uint32_t peer, int tier, uint64_t bytes, uint64_t used)
{
	const struct peer *p = peers_find(m->peers, peer);
	struct mc_conn *c = p != NULL ? peer_link(p) : NULL;
	msgpack_packer *pk;

	if (c == NULL)
		return;
	pk = mc_conn_begin(c, "room");
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "tier", mc_tier_name(tier));
	mc_pack_kv_u64(pk, "bytes", bytes);
	mc_pack_kv_u64(pk, "used", used);
	if (mc_conn_notify(c) != 0)
		mc_warn("cannot ask peer %u for room on %s", peer, mc_tier_name(tier));
}

/*
 * Ask a peer that evicts for itself for room for a copy of size on
 * every tier of it the copy may land on (only: the tier the put asked
 * for) and that lacks the room. Not only the fastest: room made there
 * by demotion lands on the tier below, which must make room too, and a
 * batch whose copies reserved the fastest tier before any of them
 * arrived finds room only further down.
 */
static void
ask_room_all(struct master *m, uint32_t peer, uint64_t size, int only)
{
	const struct peer *p = peers_find(m->peers, peer);
	int t;

	if (p == NULL)
		return;
	MC_TIER_FASTEST_FIRST(t)
	{
		const struct peer_tier *pt = &p->tiers[t];
		uint64_t need = peer_tier_footprint(pt, size);

		if (!mc_tier_may_land(t, only) || !pt->present || pt->capacity < need ||
		    !peer_self_evicts(p, t))
			continue;
		if (pt->used > pt->capacity || pt->capacity - pt->used < need)
			ask_room(m, peer, t, need, pt->used);
	}
}

uint64_t
evict_no_space(struct master *m, uint64_t size, unsigned replicas, int tier, bool *helps)
{
	struct no_space_cand c[PEERS_MAX];
	unsigned n = 0, taken = 0;
	uint64_t seq = 0;
	bool moves = false;

	*helps = false;
	for (uint32_t i = 0; i < m->peers->n && n < PEERS_MAX; i++) {
		const struct peer *p = m->peers->v[i];

		if (!peer_alive(p, m->cfg.peer_ttl))
			continue;
		int t;

		/* the tiers a copy may land on, as placement tries them */
		MC_TIER_FASTEST_FIRST(t)
		{
			const struct peer_tier *pt = &p->tiers[t];

			/* A tier too small even empty: evicting there would only lose the cache. */
			if (!mc_tier_may_land(t, tier) || !pt->present || pt->capacity < size)
				continue;
			c[n].peer = p->id;
			c[n].tier = t;
			c[n].room = pt->used < pt->capacity ? pt->capacity - pt->used : 0;
			c[n].coming = pt->moving;
			c[n].need = peer_tier_footprint(pt, size);
			n++;
			break;
		}
	}
	if (n < replicas)
		return 0;
	*helps = true;
	/* The peers with the most room need the least eviction: take those. */
	while (taken < replicas) {
		unsigned best = taken;

		for (unsigned i = taken + 1; i < n; i++)
			if (c[i].room > c[best].room)
				best = i;
		struct no_space_cand t = c[taken];
		c[taken] = c[best];
		c[best] = t;
		if (c[taken].room < c[taken].need &&
		    c[taken].room + c[taken].coming >= c[taken].need) {
			/* Demotions under way make the room: no round, wait for them to land. */
			moves = true;
		} else if (c[taken].room < c[taken].need &&
			   peer_self_evicts(peers_find(m->peers, c[taken].peer), c[taken].tier)) {
			/*
			 * The peer makes the room itself: no round, wait for its
			 * copy_dropped / copy_moved notices (or a heartbeat) to free it.
			 */
			ask_room_all(m, c[taken].peer, size, tier);
			moves = true;
		} else if (c[taken].room < c[taken].need) {
			uint64_t s = tier_round(m, TRIG_NO_SPACE, c[taken].peer, c[taken].tier,
						c[taken].need);

			if (s > seq)
				seq = s;
		}
		taken++;
	}
	/*
	 * Waiting on moves: a put is tried again as each lands
	 * (evict_moves_landed); the rounds ended already are what it waits
	 * for, so it keeps waiting only while moves or rounds may help.
	 */
	if (seq == 0 && moves)
		seq = evictor_of(m)->done_seq > 0 ? evictor_of(m)->done_seq : 1;
	return seq;
}

int
evict_quota_check(struct master *m, uint32_t tenant, uint64_t add, uint64_t *round, bool *helps,
		  struct mc_err *err)
{
	uint64_t quota = quota_of(m, tenant), after;
	const struct tenant *t = &m->store->tenants[tenant];

	/* a sum that would wrap is over any quota */
	if (quota == 0 || add == 0 ||
	    (!mc_add_over(store_tenant_charge(t), add, &after) && after <= quota))
		return 0;
	/* It would not fit in an empty tenant: evicting would only lose the cache. */
	if (add > quota)
		return mc_err_set(err, MC_ERR_QUOTA,
				  "%llu bytes are more than tenant '%s''s whole quota of %llu",
				  (unsigned long long)add, t->name, (unsigned long long)quota);
	*helps = true;
	if (round != NULL)
		*round = tenant_round(m, tenant, add);
	return mc_err_set(err, MC_ERR_QUOTA,
			  "tenant '%s' over its quota: %llu + %llu bytes of %llu; eviction started",
			  t->name, (unsigned long long)store_tenant_charge(t),
			  (unsigned long long)add, (unsigned long long)quota);
}

int
evict_tenant_objects_check(struct master *m, uint32_t tenant, uint64_t add, uint64_t *round,
			   bool *helps, struct mc_err *err)
{
	uint64_t cap = m->cfg.max_objects_per_tenant;
	const struct tenant *t = &m->store->tenants[tenant];

	if (cap == 0 || t->objects < cap)
		return 0;
	*helps = true;
	if (round != NULL)
		*round = tenant_round(m, tenant, add);
	return mc_err_set(err, MC_ERR_QUOTA,
			  "tenant '%s' holds %llu objects, its --max-objects-per-tenant %llu; "
			  "eviction started",
			  t->name, (unsigned long long)t->objects, (unsigned long long)cap);
}

int
evict_objects_check(struct master *m, uint64_t *round, bool *helps, struct mc_err *err)
{
	uint64_t count = m->store->objects.count;

	if (m->cfg.max_objects == 0 || count < m->cfg.max_objects)
		return 0;
	*helps = count > 0;
	if (round != NULL)
		*round = store_round(m, TRIG_BUDGET, 1);
	return mc_err_set(err, MC_ERR_NO_SPACE,
			  "the master holds %llu objects, its --max-objects %llu; eviction started",
			  (unsigned long long)count, (unsigned long long)m->cfg.max_objects);
}

void
evict_totals(struct master *m, struct evict_totals *out)
{
	const struct evictor *e = evictor_of(m);

	out->rounds = e->totals.rounds;
	out->evicted_bytes = e->totals.evicted_bytes;
	out->evicted_objects = e->totals.evicted_objects;
}

uint64_t
evict_rounds_done(struct master *m)
{
	return evictor_of(m)->done_seq;
}

void
evict_on_rounds_ended(struct master *m, void (*fn)(struct master *m))
{
	evictor_of(m)->rounds_ended = fn;
}

void
evict_moves_landed(struct master *m)
{
	struct evictor *e = evictor_of(m);

	if (e->rounds_ended != NULL)
		e->rounds_ended(m);
}

/* The lowest fill each watched tier was left at by a round, once puts waiting on it are in. */
static void
note_occupancy(struct master *m)
{
	for (uint32_t i = 0; i < m->peers->n; i++) {
		struct peer *p = m->peers->v[i];

		for (int t = 0; t < MC_TIER_COUNT; t++) {
			struct peer_tier *pt = &p->tiers[t];
			double occ;

			if (!pt->present || !pt->reached_high || pt->capacity == 0)
				continue;
			occ = (double)pt->used / (double)pt->capacity;
			if (occ < pt->occupancy_min)
				pt->occupancy_min = occ;
		}
	}
}

static void
ended_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	struct evictor *e = evictor_of(m);

	(void)fd;
	(void)what;
	if (e->rounds_ended != NULL)
		e->rounds_ended(m);
	note_occupancy(m);
	/* A tier a round left above its high watermark goes again at once. */
	evict_check_watermarks(m);
}

/* ---- the calls ---- */

/* The plan's bytes are in (ok), or its connection went first. */
static void
plan_received(struct mc_req *req, bool ok, void *arg)
{
	struct job *j = arg;
	struct master *m = j->m;

	j->req = req;
	if (!ok) {
		j->req = NULL;
		evict_job_free(j);
		/* The connection is gone: this only frees the request (and its hold on it). */
		mc_reply_err(req, MC_ERR_UNAVAILABLE, "connection lost");
		return;
	}
	if (evict_job_queue(m, j) != 0) {
		handler_fail(req, MC_ERR_BUSY, "too many eviction rounds queued");
		j->req = NULL;
		evict_job_free(j);
	}
}

static void
h_evict_plan(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct mc_err err = { 0 };
	uint64_t len = 0;
	struct job *j;
	struct mc_req *d;

	if (mc_map_u64(req->params, "len", &len, &err) != 1 || req->bulk_len != len || len == 0) {
		handler_fail(req, MC_ERR_INVALID,
			     "evict_plan needs 'len' and that many bytes of a plan");
		return;
	}
	if (len > PLAN_MAX_BYTES) {
		handler_fail(req, MC_ERR_TOO_LARGE, "plan of %llu bytes, limit %llu",
			     (unsigned long long)len, (unsigned long long)PLAN_MAX_BYTES);
		return;
	}
	if (evictor_of(m)->queued >= JOBS_MAX) {
		handler_fail(req, MC_ERR_BUSY, "too many eviction rounds queued");
		return;
	}
	j = evict_job_new(m, TRIG_PLAN);
	if (j == NULL || (j->plan_bytes = malloc(len)) == NULL)
		goto oom;
	j->plan_len = len;
	d = mc_req_defer(req);
	if (d == NULL)
		goto oom;
	j->req = d;
	if (mc_req_recv_bulk(d, j->plan_bytes, plan_received, j) != 0) {
		j->req = NULL;
		evict_job_free(j);
		handler_fail(d, MC_ERR_INTERNAL, "cannot receive the plan");
	}
	return;
oom:
	evict_job_free(j);
	handler_fail(req, MC_ERR_SYSTEM, "out of memory");
}

/*
 * An amount of evict_run: bytes under NAME, or millionths of a percent
 * under NAME_pct. 1 when given, 0 when neither is, -1 with err.
 */
static int
read_amount(const msgpack_object *params, const char *name, struct mc_amount *a, struct mc_err *err)
{
	char pct_name[32];
	int rb, rp;

	snprintf(pct_name, sizeof(pct_name), "%s_pct", name);
	*a = (struct mc_amount){ 0 };
	if ((rb = mc_map_u64(params, name, &a->bytes, err)) < 0 ||
	    (rp = mc_map_u64(params, pct_name, &a->pct_micro, err)) < 0)
		return -1;
	if (rb > 0 && rp > 0)
		return mc_err_set(err, MC_ERR_INVALID, "give '%s' or '%s', not both", name,
				  pct_name);
	if (rp > 0 && a->pct_micro > MC_PERCENT_WHOLE)
		return mc_err_set(err, MC_ERR_INVALID,
				  "'%s' of %llu millionths of a percent is over 100%%", pct_name,
				  (unsigned long long)a->pct_micro);
	a->is_pct = rp > 0;
	return rb > 0 || rp > 0;
}

static void
h_evict_run(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct mc_err err = { 0 };
	struct job *j = NULL;
	int rc;

	j = evict_job_new(m, TRIG_MANUAL);
	if (j == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	j->says_kind = true;
	if ((rc = read_amount(req->params, "target", &j->pct_target, &err)) < 0)
		goto fail;
	j->target = j->pct_target.bytes;
	if (rc == 0 || (j->pct_target.is_pct ? j->pct_target.pct_micro == 0 : j->target == 0)) {
		mc_err_set(&err, MC_ERR_INVALID, "evict_run needs a target above 0 bytes");
		goto fail;
	}
	if ((rc = read_amount(req->params, "lowerbound", &j->pct_lowerbound, &err)) < 0)
		goto fail;
	if (rc > 0 && !j->pct_lowerbound.is_pct)
		j->lowerbound = j->pct_lowerbound.bytes;
	if (mc_map_bool(req->params, "dry_run", &j->dry_run, &err) < 0)
		goto fail;
	/* The same filter as candidates: a round sees the view that call would. */
	if (candidates_filter_parse(m, req->params, &j->filter, &j->empty, &err) < 0)
		goto fail;
	if (evictor_of(m)->queued >= JOBS_MAX) {
		mc_err_set(&err, MC_ERR_BUSY, "too many eviction rounds queued");
		goto fail;
	}
	j->req = mc_req_defer(req);
	if (j->req == NULL) {
		mc_err_set(&err, MC_ERR_SYSTEM, "out of memory");
		goto fail;
	}
	evict_job_queue(m, j);
	return;
fail:
	evict_job_free(j);
	handler_fail(req, err.code, "%s", err.msg);
}

/*
 * The `candidates` call: the view built in slices like a round's and
 * encoded off the loop, then req answered; it waits its turn among the
 * rounds. -1 with err when it cannot be queued (req then still owned by
 * the caller).
 */
static int
export_view(struct master *m, struct mc_req *req, const struct cand_filter *f, bool empty,
	    struct mc_err *err)
{
	struct job *j;

	if (evictor_of(m)->queued >= JOBS_MAX)
		return mc_err_set(err, MC_ERR_BUSY, "too many eviction rounds queued");
	j = evict_job_new(m, TRIG_MANUAL);
	if (j == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	j->export_view = true;
	j->filter = *f;
	j->empty = empty;
	j->req = mc_req_defer(req);
	if (j->req == NULL) {
		evict_job_free(j);
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	}
	evict_job_queue(m, j);
	return 0;
}

/* ---- life cycle ---- */

int
evict_init(struct master *m, struct mc_err *err)
{
	struct evictor *e = calloc(1, sizeof(*e));
	struct policy_ref *pol;
	struct quota *q;
	size_t nq;

	if (e == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for eviction");
	m->ev = e;
	e->scope_target = scope_target;
	e->manual_round = manual_round;
	candidates_on_export(export_view);
	if (load_config(m, &pol, &q, &nq, err) != 0)
		return -1;
	install_config(m, pol, q, nq);
	if ((e->wq = mc_workq_new(WORKERS, WORK_WAITING_MAX, OFFLOOP_NICE, err)) == NULL)
		return -1;
	e->step_ev = evtimer_new(m->base, evict_step_cb, m);
	e->ended_ev = event_new(m->base, -1, 0, ended_cb, m);
	e->wq_ev = offloop_watch(m->base, e->wq);
	if (e->step_ev == NULL || e->wq_ev == NULL || e->ended_ev == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot set up eviction events");
	if (evict_metrics_init(m) != 0)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for eviction metrics");
	return 0;
}

void
evict_free(struct master *m)
{
	struct evictor *e = evictor_of(m);
	struct job *j;

	if (e == NULL)
		return;
	/* The running plan job ends first: it owns its job until its completion. */
	e->stopping = true;
	if (e->wq_ev != NULL)
		event_free(e->wq_ev);
	mc_workq_free(e->wq);
	if (e->running != NULL) {
		e->running->req = NULL;
		evict_job_free(e->running);
		e->running = NULL;
	}
	while ((j = e->head) != NULL) {
		e->head = j->next;
		j->req = NULL;
		evict_job_free(j);
	}
	e->tail = NULL;
	e->queued = 0;
	if (e->step_ev != NULL)
		event_free(e->step_ev);
	if (e->ended_ev != NULL)
		event_free(e->ended_ev);
	evict_policy_put(e->policy);
	quotas_free(e->quotas, e->nquotas);
	free(e->quota_of);
	free(e);
	m->ev = NULL;
}

const struct mc_method evict_methods[] = {
	{ "evict_plan", h_evict_plan, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ "evict_run", h_evict_run, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ NULL, NULL, 0 },
};

static int
evict_hup(struct master *m, struct mc_err *err)
{
	char why[MC_ERR_MSG_MAX];

	if (evict_reload(m, err) == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", err->msg);
	return mc_err_set(err, err->code, "kept the old eviction policy and quotas: %s", why);
}

const struct master_module evict_module = {
	.name = "eviction",
	.init = evict_init,
	.free = evict_free,
	.sweep = evict_check_watermarks,
	.reload = evict_hup,
	.methods = evict_methods,
	.collect = evict_collect,
};
