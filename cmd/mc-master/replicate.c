/*
 * Dynamic hot replication: the heat window's reads, the admission
 * worker's slices, and what admins ask of it (replicate.h).
 */
#include <event2/event.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/tier.h"
#include "mc/wire.h"

#include "copies.h"
#include "master.h"
#include "peers.h"
#include "replicate.h"
#include "request.h"
#include "state.h"
#include "store.h"

/* Triggers judged in one slice of the loop: a burst of hot keys never holds it for long. */
#define ADMIT_SLICE 64
/* Entries replication_heat lists at most. */
#define HEAT_TOP_MAX 1000

static const char *const mode_names[] = { "off", "observe", "enforce" };

static const char *const reason_names[DR_REASON_COUNT] = {
#define X(id, name) [DR_##id] = name,
	DR_REASONS(X)
#undef X
};

const char *
dr_mode_name(int mode)
{
	return mode >= DR_OFF && mode <= DR_ENFORCE ? mode_names[mode] : "?";
}

int
dr_mode_parse(const char *s)
{
	for (int i = DR_OFF; i <= DR_ENFORCE; i++)
		if (strcmp(s, mode_names[i]) == 0)
			return i;
	return -1;
}

const char *
dr_reason_name(int reason)
{
	return reason >= 0 && reason < DR_REASON_COUNT ? reason_names[reason] : "?";
}

static struct replicator *
dr_of(const struct master *m)
{
	return m->dr;
}

/* ---- the plan: a source to copy from, a target to copy to ---- */

static bool
in_domain(const struct peer *p, const char *domain)
{
	return domain == NULL || domain[0] == '\0' || strcmp(p->domain, domain) == 0;
}

/* A stable tie-break between peers for one key: the same key keeps its order, keys spread. */
static uint64_t
tie(uint64_t key_hash, uint32_t peer)
{
	return mc_hash64(&peer, sizeof(peer), key_hash);
}

static bool
readable_dram(const struct master *m, const struct mobj *o, const struct mrep *r,
	      const struct peer *p)
{
	return r->state == REP_COMPLETE && r->version == o->version && r->tier == MC_TIER_DRAM &&
	       !r->moving && p != NULL && p->conn != NULL && peer_alive(p, m->cfg.peer_ttl);
}

/* Whether host already has a readable replica of o. */
static bool
host_has_copy(const struct master *m, const struct mobj *o, const char *host)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++) {
		const struct peer *p = peers_find(m->peers, v[i].peer);

		if (p != NULL && v[i].state == REP_COMPLETE && v[i].version == o->version &&
		    strcmp(p->host, host) == 0)
			return true;
	}
	return false;
}

static bool
peer_has_replica(const struct mobj *o, uint32_t peer)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].peer == peer)
			return true;
	return false;
}

static int
pick_source(const struct master *m, const struct mobj *o, uint64_t key_hash, const char *domain,
	    uint32_t *src)
{
	const struct mrep *v = obj_creps(o);
	int best_rank = 2;
	unsigned best_load = 0;
	uint64_t best_tie = 0;
	bool busy = false;

	for (unsigned i = 0; i < o->nrep; i++) {
		const struct peer *p = peers_find(m->peers, v[i].peer);
		unsigned load;
		int rank;
		uint64_t t;

		if (!readable_dram(m, o, &v[i], p) || !(p->task_kinds & (1u << TASK_REPLICA_COPY)))
			continue;
		/* a source with as many copies as it queues takes no more */
		load = copies_from(m, p->id);
		if (load >= COPIES_PER_SOURCE) {
			busy = true;
			continue;
		}
		/* one in the domain keeps the fanout there; domain cost is 0 or 1 */
		rank = in_domain(p, domain) ? 0 : 1;
		/* then the source with the fewest copies under way */
		t = tie(key_hash, p->id);
		if (rank < best_rank ||
		    (rank == best_rank &&
		     (load < best_load || (load == best_load && t < best_tie)))) {
			best_rank = rank;
			best_load = load;
			best_tie = t;
			*src = p->id;
		}
	}
	return best_rank < 2 ? 0 : busy ? DR_BUSY : DR_NO_SOURCE;
}

/* Whether p may take a dynamic replica of o, read from domain. */
static bool
valid_target(const struct master *m, const struct mobj *o, const struct peer *p, const char *domain)
{
	const struct peer_tier *t = &p->tiers[MC_TIER_DRAM];

	return peer_alive(p, m->cfg.peer_ttl) && p->conn != NULL && t->present && t->capacity > 0 &&
	       in_domain(p, domain) && !peer_has_replica(o, p->id) && t->used <= t->capacity &&
	       t->capacity - t->used >= peer_tier_footprint(t, o->size);
}

static int
pick_target(const struct master *m, const struct mobj *o, uint64_t key_hash, const char *domain,
	    uint32_t *dst)
{
	bool found = false, best_apart = false;
	double best_use = 0;
	uint64_t best_tie = 0;

	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];
		const struct peer_tier *t = &p->tiers[MC_TIER_DRAM];
		bool apart;
		double use;
		uint64_t k;

		if (!valid_target(m, o, p, domain))
			continue;
		/* another host relieves the hot one's NIC; the same host does not */
		apart = !host_has_copy(m, o, p->host);
		use = (double)t->used / (double)t->capacity;
		k = tie(key_hash, p->id);
		if (!found || (apart && !best_apart) ||
		    (apart == best_apart &&
		     (use < best_use || (use == best_use && k < best_tie)))) {
			found = true;
			best_apart = apart;
			best_use = use;
			best_tie = k;
			*dst = p->id;
		}
	}
	return found ? 0 : -1;
}

int
replicate_plan_to(struct master *m, const struct mobj *o, const char *domain, uint32_t preferred,
		  uint32_t *src, uint32_t *dst)
{
	uint64_t h = store_key_hash(o->tenant, o->key, o->key_len);
	const struct peer *p = preferred != 0 ? peers_find(m->peers, preferred) : NULL;

	int why = pick_source(m, o, h, domain, src);

	if (why != 0)
		return why;
	if (o->size == 0)
		return DR_SIZE;
	if (p != NULL && valid_target(m, o, p, domain))
		*dst = p->id;
	else if (pick_target(m, o, h, domain, dst) != 0)
		return DR_NO_TARGET;
	return -1;
}

int
replicate_plan(struct master *m, const struct mobj *o, const char *domain, uint32_t *src,
	       uint32_t *dst)
{
	return replicate_plan_to(m, o, domain, 0, src, dst);
}

/* ---- admission ---- */

/* Why o may not have another dynamic replica now, or -1 when nothing stands in its way. */
static int
admissible(const struct master *m, const struct mobj *o)
{
	const struct mrep *v = obj_creps(o);
	unsigned dynamic = 0;
	bool in_flight = false;

	for (unsigned i = 0; i < o->nrep; i++) {
		if (!v[i].dynamic)
			continue;
		dynamic++;
		if (v[i].state != REP_COMPLETE)
			in_flight = true;
	}
	if (dynamic >= m->cfg.dr_max_replicas)
		return DR_MAX_REPLICAS;
	if (in_flight || copies_pending(m, o))
		return DR_IN_FLIGHT;
	if (o->writing)
		return DR_VERSION;
	return -1;
}

/* What one proposal is: where its copy goes, who sent it and what it saw. */
struct ask {
	const char *domain; /* the target domain ("": any) */
	uint32_t preferred; /* a target peer it prefers (0: none) */
	uint64_t version;   /* the version it saw (0: not said) */
	uint64_t size;	    /* the size it saw (checked with a version) */
	uint64_t deadline;  /* mc_now_ms() it must be done by (0: none) */
	const char *proposal;
	uint64_t content;
};

/*
 * Admission's checks of o past its heat, for a copy as asked: the
 * reason it is refused, or -1 with the plan in *src, *dst.
 */
static int
check(struct master *m, const struct mobj *o, const struct ask *a, uint64_t now, uint32_t *src,
      uint32_t *dst)
{
	const struct peer *p;
	int why;

	if (a->deadline != 0 && now >= a->deadline)
		return DR_EXPIRED;
	if (a->version != 0 && a->version != o->version)
		return DR_VERSION;
	if (a->version != 0 && a->size != o->size)
		return DR_SIZE;
	if ((why = admissible(m, o)) >= 0)
		return why;
	if ((why = replicate_plan_to(m, o, a->domain, a->preferred, src, dst)) >= 0)
		return why;
	p = peers_find(m->peers, *dst);
	if (state_cooldown_until(m, o, p->domain, now) != 0)
		return DR_COOLDOWN;
	return -1;
}

/*
 * Act on a copy check passed: in enforce mode, a lease and its task
 * (*lease set); in observe mode, a count. The reason it failed, or -1.
 */
static int
act(struct master *m, const struct mobj *o, const struct ask *a, uint32_t src, uint32_t dst,
    const struct copy_lease **lease)
{
	struct replicator *r = dr_of(m);
	struct copy_ask ca = { src, dst, a->domain, a->proposal, a->content, a->deadline };
	struct mc_err err;

	*lease = NULL;
	if (m->cfg.dr_mode != DR_ENFORCE) {
		r->would_propose++;
		return -1;
	}
	if ((*lease = copies_begin(m, o, &ca, &err)) == NULL) {
		mc_debug("dynamic copy not begun: %s", err.msg);
		return DR_BUSY;
	}
	r->proposed++;
	return -1;
}

/* Judge one hot entry at now: the reason it is refused, or -1 when it is (or would be) proposed. */
static int
judge(struct master *m, const struct heat_entry *e, uint64_t now)
{
	struct replicator *r = dr_of(m);
	char domain[UINT8_MAX + 1];
	struct ask a = { .domain = domain, .proposal = "" };
	const struct copy_lease *l;
	const struct mobj *o;
	uint32_t src = 0, dst = 0;
	int why;

	if (heat_count(&r->heat, e, now) < r->heat.threshold)
		return DR_BELOW_THRESHOLD;
	o = store_find(m->store, store_key_hash(e->tenant, e->name, e->klen), e->tenant, e->name,
		       e->klen);
	if (o == NULL)
		return DR_GONE;
	memcpy(domain, e->name + e->klen, e->dlen);
	domain[e->dlen] = '\0';
	if ((why = check(m, o, &a, now, &src, &dst)) >= 0)
		return why;
	return act(m, o, &a, src, dst, &l);
}

static void
admit_slice(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	struct replicator *r = dr_of(m);
	uint64_t now = mc_now_ms();
	struct heat_entry *e;
	uint32_t slot;

	(void)fd;
	(void)what;
	r->scheduled = false;
	for (unsigned i = 0; i < ADMIT_SLICE && (e = heat_next(&r->heat, &slot)) != NULL; i++) {
		int why;

		if (m->cfg.dr_mode == DR_OFF) {
			/* switched off with triggers queued: nothing to judge them for */
			heat_judged(&r->heat, slot, now);
			continue;
		}
		why = judge(m, e, now);
		r->judged++;
		if (why >= 0)
			r->rejected[why]++;
		heat_judged(&r->heat, slot, now);
	}
	/* more waiting: the next slice after whatever else the loop has to do */
	if (r->heat.n > 0) {
		r->scheduled = true;
		event_active(r->worker, EV_TIMEOUT, 0);
	}
}

void
replicate_read(struct master *m, const struct client *cl, const struct mobj *o, const char *key,
	       size_t len, uint64_t hash, uint64_t now)
{
	struct replicator *r = dr_of(m);

	if (m->cfg.dr_mode == DR_OFF || r == NULL)
		return;
	if (heat_record(&r->heat, o->tenant, hash, key, len, cl->domain, strlen(cl->domain), now) &&
	    !r->scheduled) {
		r->scheduled = true;
		event_active(r->worker, EV_TIMEOUT, 0);
	}
}

void
replicate_prefetch(const struct master *m, const struct client *cl, uint64_t hash)
{
	const struct replicator *r = dr_of(m);

	if (m->cfg.dr_mode != DR_OFF && r != NULL)
		heat_prefetch(&r->heat, hash, cl->domain, strlen(cl->domain));
}

/* ---- the module ---- */

static int
replicate_init(struct master *m, struct mc_err *err)
{
	struct replicator *r = calloc(1, sizeof(*r));
	double t = ceil(m->cfg.dr_qps * (double)m->cfg.dr_window / 1000.0);

	if (r == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "no memory for the replicator");
	/* qps x window reads make a key hot, at least one */
	r->threshold = t < 1 ? 1 : t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
	if (heat_init(&r->heat, m->cfg.dr_heat_entries, m->cfg.dr_window, r->threshold, err) != 0) {
		free(r);
		return -1;
	}
	r->worker = event_new(m->base, -1, 0, admit_slice, m);
	if (r->worker == NULL) {
		heat_free(&r->heat);
		free(r);
		return mc_err_set(err, MC_ERR_SYSTEM, "no memory for the admission worker");
	}
	m->dr = r;
	if (m->cfg.dr_mode != DR_OFF)
		mc_info("dynamic replication %s: hot at %u reads in %llu ms, %u dynamic replicas "
			"at most",
			dr_mode_name(m->cfg.dr_mode), r->threshold,
			(unsigned long long)m->cfg.dr_window, m->cfg.dr_max_replicas);
	return 0;
}

static void
replicate_free(struct master *m)
{
	struct replicator *r = dr_of(m);

	if (r == NULL)
		return;
	event_free(r->worker);
	heat_free(&r->heat);
	free(r);
	m->dr = NULL;
}

void
replicate_forget(struct master *m)
{
	if (m->dr != NULL)
		heat_clear(&dr_of(m)->heat);
	copies_forget(m);
}

static void
replicate_collect(struct mc_metrics *reg, void *arg)
{
	const struct master *m = arg;
	const struct replicator *r = dr_of(m);

	if (r == NULL)
		return;
	mc_metric_put(reg, "mc_replication_heat_entries", MC_GAUGE,
		      "Keys the heat window holds now.", NULL, NULL, (double)r->heat.live);
	mc_metric_put(reg, "mc_replication_heat_reads_total", MC_COUNTER,
		      "Reads counted in the heat window.", NULL, NULL, (double)r->heat.reads);
	mc_metric_put(reg, "mc_replication_heat_replaced_total", MC_COUNTER,
		      "Heat window entries that gave their slot to another key.", NULL, NULL,
		      (double)r->heat.replaced);
	mc_metric_put(reg, "mc_replication_triggers_total", MC_COUNTER,
		      "Keys queued for admission as they crossed the threshold.", NULL, NULL,
		      (double)r->heat.triggers);
	mc_metric_put(reg, "mc_replication_triggers_dropped_total", MC_COUNTER,
		      "Keys that crossed the threshold with the admission queue full.", NULL, NULL,
		      (double)r->heat.triggers_dropped);
	mc_metric_put(reg, "mc_replication_judged_total", MC_COUNTER, "Hot keys admission judged.",
		      NULL, NULL, (double)r->judged);
	mc_metric_put(reg, "mc_replication_would_propose_total", MC_COUNTER,
		      "Hot keys that passed every check of admission in observe mode.", NULL, NULL,
		      (double)r->would_propose);
	mc_metric_put(reg, "mc_replication_proposed_total", MC_COUNTER,
		      "Hot keys and proposals admission made a dynamic copy of.", NULL, NULL,
		      (double)r->proposed);
	for (int i = 0; i < DR_REASON_COUNT; i++)
		mc_metric_put(reg, "mc_replication_rejected_total", MC_COUNTER,
			      "Hot keys admission turned down, by reason.", "reason",
			      reason_names[i], (double)r->rejected[i]);
}

/* ---- what admins ask ---- */

/* replication_status {} -> the mode, its settings, and the counts */
static void
h_replication_status(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const struct replicator *r = dr_of(m);
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_map(pk, 17);
	mc_pack_kv_str(pk, "mode", dr_mode_name(m->cfg.dr_mode));
	mc_pack_kv_u64(pk, "cooldown_ms", m->cfg.dr_cooldown);
	mc_pack_kv_u64(pk, "lease_ms", m->cfg.dr_lease);
	mc_pack_kv_u64(pk, "proposed", r->proposed);
	mc_pack_key(pk, "copies");
	copies_pack_status(pk, m);
	mc_pack_kv_u64(pk, "window_ms", m->cfg.dr_window);
	mc_pack_key(pk, "qps");
	msgpack_pack_double(pk, m->cfg.dr_qps);
	mc_pack_kv_u64(pk, "threshold", r->threshold);
	mc_pack_kv_u64(pk, "max_replicas", m->cfg.dr_max_replicas);
	mc_pack_kv_u64(pk, "heat_capacity", r->heat.nsets * HEAT_WAYS);
	mc_pack_kv_u64(pk, "heat_entries", r->heat.live);
	mc_pack_kv_u64(pk, "reads", r->heat.reads);
	mc_pack_kv_u64(pk, "triggers", r->heat.triggers);
	mc_pack_kv_u64(pk, "triggers_dropped", r->heat.triggers_dropped);
	mc_pack_kv_u64(pk, "judged", r->judged);
	mc_pack_kv_u64(pk, "would_propose", r->would_propose);
	mc_pack_key(pk, "rejected");
	msgpack_pack_map(pk, DR_REASON_COUNT);
	for (int i = 0; i < DR_REASON_COUNT; i++)
		mc_pack_kv_u64(pk, reason_names[i], r->rejected[i]);
	mc_reply_end(req);
}

/* replication_heat {top?=20} -> {items: [{tenant, key, domain, reads}]}, hottest first */
static void
h_replication_heat(struct mc_req *req)
{
	struct master *m = req_begin(req);
	const struct replicator *r = dr_of(m);
	const struct heat_entry **top;
	uint64_t n = 20, now = mc_now_ms();
	struct mc_err err;
	size_t got;

	if (mc_map_u64(req->params, "top", &n, &err) < 0) {
		req_fail_err(req, &err);
		return;
	}
	if (n == 0 || n > HEAT_TOP_MAX) {
		handler_fail(req, MC_ERR_INVALID, "top must be 1 to %d", HEAT_TOP_MAX);
		return;
	}
	if ((top = calloc(n, sizeof(*top))) == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	got = heat_top(&r->heat, now, top, n);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, got);
	for (size_t i = 0; i < got; i++) {
		const struct heat_entry *e = top[i];

		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "tenant",
			       e->tenant < m->store->ntenants ? m->store->tenants[e->tenant].name
							      : "");
		mc_pack_kv_strn(pk, "key", e->name, e->klen);
		mc_pack_kv_strn(pk, "domain", e->name + e->klen, e->dlen);
		mc_pack_kv_u64(pk, "reads", heat_count(&r->heat, e, now));
	}
	mc_reply_end(req);
	free(top);
}

/* replication_mode {mode} -> {mode, was}: off forgets the window */
static void
h_replication_mode(struct mc_req *req)
{
	struct master *m = req_begin(req);
	char name[16];
	struct mc_err err;
	int mode, was = m->cfg.dr_mode;

	if (mc_map_strcpy(req->params, "mode", name, sizeof(name), &err) != 1 ||
	    (mode = dr_mode_parse(name)) < 0) {
		handler_fail(req, MC_ERR_INVALID, "mode must be off, observe or enforce");
		return;
	}
	m->cfg.dr_mode = mode;
	if (mode == DR_OFF)
		heat_clear(&dr_of(m)->heat);
	if (mode != was)
		mc_info("dynamic replication: %s (was %s)", dr_mode_name(mode), dr_mode_name(was));
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "mode", dr_mode_name(mode));
	mc_pack_kv_str(pk, "was", dr_mode_name(was));
	mc_reply_end(req);
}

/* An optional string field into buf (cap bytes with its NUL): -1 with err when it is not one. */
static int
opt_str(const msgpack_object *params, const char *field, char *buf, size_t cap, struct mc_err *err)
{
	const char *v;
	size_t len;
	int rc = mc_map_str(params, field, &v, &len, err);

	buf[0] = '\0';
	if (rc <= 0)
		return rc;
	if (len >= cap)
		return mc_err_set(err, MC_ERR_INVALID, "'%s' is longer than %zu bytes", field,
				  cap - 1);
	memcpy(buf, v, len);
	buf[len] = '\0';
	return 1;
}

/* The answer to a proposal: accepted with its lease, or why not. */
static void
propose_answer(struct mc_req *req, const struct copy_lease *l, const struct copy_recent *ended,
	       const char *reason)
{
	struct master *m = req_begin(req);
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_map(pk, 2);
	mc_pack_kv_bool(pk, "accepted", reason == NULL);
	if (l != NULL) {
		mc_pack_key(pk, "lease");
		copies_pack_lease(pk, m, l);
	} else if (ended != NULL) {
		/* the same proposal again, its lease over: what became of it */
		mc_pack_key(pk, "lease");
		msgpack_pack_map(pk, 2);
		mc_pack_kv_u64(pk, "id", ended->lease);
		mc_pack_kv_str(pk, "outcome", copy_outcome_name(ended->outcome));
	} else {
		mc_pack_kv_str(pk, "reason", reason != NULL ? reason : "");
	}
	mc_reply_end(req);
}

/*
 * replication_propose {key, tenant?, proposal_id?, requester_domain?,
 * target_domain?, version?, size?, preferred_target?, within_ms?} ->
 * {accepted, lease | reason}: admission's checks for one key, from the
 * requester's domain, and in enforce mode its copy (replicate.h).
 */
static void
h_replication_propose(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct replicator *r = dr_of(m);
	char proposal[COPY_PROPOSAL_MAX + 1], rdomain[MC_NAME_MAX + 1], tdomain[MC_NAME_MAX + 1];
	const char *tname, *key;
	size_t tlen, klen;
	uint64_t within = 0, preferred = 0, now = mc_now_ms(), hash;
	struct ask a = { .proposal = proposal };
	struct copy_recent seen;
	const struct copy_lease *l;
	const struct heat_entry *e;
	const struct mobj *o;
	struct mc_err err;
	uint32_t src = 0, dst = 0;
	int64_t tenant;
	int has_within, why;

	if (req_need_key(req->params, &key, &klen, &err) != 0 ||
	    req_opt_name(req->params, "tenant", &tname, &tlen, &err) < 0 ||
	    opt_str(req->params, "proposal_id", proposal, sizeof(proposal), &err) < 0 ||
	    opt_str(req->params, "requester_domain", rdomain, sizeof(rdomain), &err) < 0 ||
	    opt_str(req->params, "target_domain", tdomain, sizeof(tdomain), &err) < 0 ||
	    mc_map_u64(req->params, "version", &a.version, &err) < 0 ||
	    mc_map_u64(req->params, "size", &a.size, &err) < 0 ||
	    mc_map_u64(req->params, "preferred_target", &preferred, &err) < 0 ||
	    (has_within = mc_map_u64(req->params, "within_ms", &within, &err)) < 0) {
		req_fail_err(req, &err);
		return;
	}
	if (mc_map_get(req->params, "tenant") == NULL) {
		tname = req_tenant_name(m, req_client(req));
		tlen = strlen(tname);
	}
	if (preferred > UINT32_MAX) {
		handler_fail(req, MC_ERR_INVALID, "preferred_target is not a peer id");
		return;
	}
	a.preferred = (uint32_t)preferred;
	/* a copy for a requester goes into its domain unless the proposal says where */
	a.domain = tdomain[0] != '\0' ? tdomain : rdomain;
	a.deadline = has_within ? mc_add_sat(now, within) : 0;
	/* what the proposal asks, its deadline aside: a retry may count that anew */
	a.content = mc_hash64(key, klen, mc_hash64(tname, tlen, 0));
	a.content = mc_hash64(rdomain, strlen(rdomain), a.content);
	a.content = mc_hash64(tdomain, strlen(tdomain), a.content ^ 0x9e3779b97f4a7c15ull);
	a.content ^= mc_hash64(&a.version, sizeof(a.version), a.size) ^ (preferred << 1);
	if (copies_proposal(m, proposal, &seen)) {
		if (seen.content != a.content) {
			handler_fail(req, MC_ERR_INVALID,
				     "proposal id '%s' was given already for another proposal",
				     proposal);
			return;
		}
		l = seen.outcome < 0 ? copies_lease(m, seen.lease) : NULL;
		propose_answer(req, l, l == NULL ? &seen : NULL, NULL);
		return;
	}
	tenant = store_tenant_find(m->store, tname, tlen);
	hash = tenant >= 0 ? store_key_hash((uint32_t)tenant, key, klen) : 0;
	o = tenant >= 0 ? store_find(m->store, hash, (uint32_t)tenant, key, klen) : NULL;
	if (o == NULL) {
		why = DR_GONE;
		goto rejected;
	}
	/* hot from the requester's domain by the master's own count, never the proposal's */
	e = heat_find(&r->heat, o->tenant, hash, key, klen, rdomain, strlen(rdomain));
	if (e == NULL || heat_count(&r->heat, e, now) < r->heat.threshold) {
		why = DR_BELOW_THRESHOLD;
		goto rejected;
	}
	if ((why = check(m, o, &a, now, &src, &dst)) >= 0 ||
	    (why = act(m, o, &a, src, dst, &l)) >= 0)
		goto rejected;
	propose_answer(req, l, NULL, l == NULL ? "observe" : NULL);
	return;
rejected:
	r->rejected[why]++;
	propose_answer(req, NULL, NULL, reason_names[why]);
}

/* Whether a readable replica of o is in domain. */
static bool
held_in(const struct master *m, const struct mobj *o, const char *domain)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++) {
		const struct peer *p = peers_find(m->peers, v[i].peer);

		if (p != NULL && v[i].state == REP_COMPLETE && v[i].version == o->version &&
		    strcmp(p->domain, domain) == 0)
			return true;
	}
	return false;
}

/*
 * replication_warmup {domain, top?=100, max_bytes?=0} -> {proposed,
 * bytes, present, rejected: {reason: n}}: copies of the window's
 * hottest keys into domain, a new one, skipping those it holds already,
 * up to max_bytes (0: no bound) and the copies' own limit.
 */
static void
h_replication_warmup(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct replicator *r = dr_of(m);
	char domain[MC_NAME_MAX + 1];
	struct ask a = { .domain = domain, .proposal = "" };
	uint64_t top = 100, budget = 0, bytes = 0, proposed = 0, present = 0, now = mc_now_ms();
	uint64_t rejected[DR_REASON_COUNT] = { 0 };
	const struct heat_entry **hot;
	struct mc_err err;
	size_t got;

	if (opt_str(req->params, "domain", domain, sizeof(domain), &err) < 0 ||
	    mc_map_u64(req->params, "top", &top, &err) < 0 ||
	    mc_map_u64(req->params, "max_bytes", &budget, &err) < 0) {
		req_fail_err(req, &err);
		return;
	}
	if (domain[0] == '\0') {
		handler_fail(req, MC_ERR_INVALID, "warmup needs the 'domain' to warm");
		return;
	}
	if (m->cfg.dr_mode != DR_ENFORCE) {
		handler_fail(req, MC_ERR_INVALID, "warmup copies: the mode must be enforce, not %s",
			     dr_mode_name(m->cfg.dr_mode));
		return;
	}
	if (top == 0 || top > HEAT_TOP_MAX) {
		handler_fail(req, MC_ERR_INVALID, "top must be 1 to %d", HEAT_TOP_MAX);
		return;
	}
	if ((hot = calloc(top, sizeof(*hot))) == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	got = heat_top(&r->heat, now, hot, top);
	for (size_t i = 0; i < got; i++) {
		const struct heat_entry *e = hot[i];
		const struct copy_lease *l;
		const struct mobj *o =
			store_find(m->store, store_key_hash(e->tenant, e->name, e->klen), e->tenant,
				   e->name, e->klen);
		uint32_t src = 0, dst = 0;
		int why;

		if (o == NULL) {
			rejected[DR_GONE]++;
			continue;
		}
		/* the same key hot from several domains is one copy, and one already there none */
		if (held_in(m, o, domain)) {
			present++;
			continue;
		}
		if (budget != 0 && bytes + o->size > budget) {
			rejected[DR_BUSY]++;
			continue;
		}
		if ((why = check(m, o, &a, now, &src, &dst)) >= 0 ||
		    (why = act(m, o, &a, src, dst, &l)) >= 0) {
			rejected[why]++;
			continue;
		}
		proposed++;
		bytes += o->size;
	}
	free(hot);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 4);
	mc_pack_kv_u64(pk, "proposed", proposed);
	mc_pack_kv_u64(pk, "bytes", bytes);
	mc_pack_kv_u64(pk, "present", present);
	mc_pack_key(pk, "rejected");
	msgpack_pack_map(pk, DR_REASON_COUNT);
	for (int i = 0; i < DR_REASON_COUNT; i++)
		mc_pack_kv_u64(pk, reason_names[i], rejected[i]);
	mc_reply_end(req);
}

/* replication_leases {} -> {items: [lease]}: the copies under way */
static void
h_replication_leases(struct mc_req *req)
{
	struct master *m = req_begin(req);
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "items");
	copies_pack_leases(pk, m);
	mc_reply_end(req);
}

static const struct mc_method replicate_methods[] = {
	{ "replication_propose", h_replication_propose, MC_METHOD_ADMIN },
	{ "replication_warmup", h_replication_warmup, MC_METHOD_ADMIN },
	{ "replication_leases", h_replication_leases, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ "replication_status", h_replication_status, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ "replication_heat", h_replication_heat, MC_METHOD_ADMIN | MC_METHOD_READ_ONLY },
	{ "replication_mode", h_replication_mode, MC_METHOD_ADMIN },
	{ NULL, NULL, 0 },
};

const struct master_module replicate_module = {
	.name = "dynamic replication",
	.init = replicate_init,
	.free = replicate_free,
	.methods = replicate_methods,
	.collect = replicate_collect,
};
