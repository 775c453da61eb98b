/*
 * Running eviction's jobs, one at a time in arrival order: the view
 * built in slices on the loop, the plan made on a worker, the stages
 * executed in slices against the store and the peers, each victim
 * revalidated, and the answer (see evict.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/planexec.h"
#include "mc/planner.h"
#include "mc/wire.h"
#include "mc/workq.h"
#include "mc/young.h"
#include "candidates.h"
#include "evict_exec.h"
#include "extplan.h"
#include "request.h"
#include "master.h"
#include "offloop.h"
#include "ops.h"
#include "peers.h"
#include "softpin.h"
#include "store.h"

static void job_next(struct master *m);

/* ---- the job queue ---- */

int
evict_job_queue(struct master *m, struct job *j)
{
	struct evictor *e = evictor_of(m);

	if (e->queued >= JOBS_MAX)
		return -1;
	if (e->tail != NULL)
		e->tail->next = j;
	else
		e->head = j;
	e->tail = j;
	e->queued++;
	if (e->running == NULL)
		job_next(m);
	return 0;
}

static void
schedule_step(struct master *m)
{
	/* A zero timeout, not event_active: requests waiting on sockets go first. */
	struct timeval now = { 0, 0 };

	evtimer_add(evictor_of(m)->step_ev, &now);
}

/* ---- planning (on a worker) ---- */

/* A `candidates` answer: the view in its msgpack stream form. */
static int
write_view(FILE *f, const void *arg, struct mc_err *err)
{
	const struct job *j = arg;

	return mc_cand_write(f, &j->view, false, err);
}

static int
write_plan(FILE *f, const void *arg, struct mc_err *err)
{
	const struct job *j = arg;

	return mc_plan_write(f, &j->plan, false, err);
}

static int
write_report(FILE *f, const void *arg, struct mc_err *err)
{
	const struct job *j = arg;

	return mc_report_write(f, &j->report, &j->plan, false, err);
}

/* Each stage's planned bytes, off the loop: a reserve may list millions of victims. */
static int
sum_planned(struct job *j, struct mc_err *err)
{
	j->planned = mc_plan_exec_planned(&j->plan);
	if (j->planned == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the plan");
	return 0;
}

/*
 * evict_run's percentages made bytes, on the view they are of, as
 * mc-evict-plan makes them: the target of the view's bytes, the
 * lowerbound of the target. -1 when a lowerbound is above such a target.
 */
static int
apply_percentages(struct job *j, struct mc_err *err)
{
	char t[32], l[32];

	if (j->pct_target.is_pct) {
		j->target = mc_amount_bytes(&j->pct_target, mc_cand_view_bytes(&j->view));
		j->round.target = j->target;
	}
	if (j->pct_lowerbound.is_pct)
		j->lowerbound = mc_amount_bytes(&j->pct_lowerbound, j->target);
	/* a lowerbound in bytes could not be checked against such a target before */
	if (j->pct_target.is_pct && j->lowerbound != MC_PLAN_DEFAULT_LOWERBOUND &&
	    j->lowerbound > j->target)
		return mc_err_set(err, MC_ERR_INVALID, "lowerbound %s is above the target of %s",
				  mc_fmt_size(j->lowerbound, l, sizeof(l)),
				  mc_fmt_size(j->target, t, sizeof(t)));
	return 0;
}

static void
plan_work(void *arg)
{
	struct job *j = arg;

	if (j->plan_bytes == NULL && candidates_segment(&j->view, &j->caps, &j->plan_err) != 0) {
		j->plan_rc = -1;
	} else if (j->export_view) {
		j->answer = blob_write(write_view, j, &j->plan_err);
		j->plan_rc = j->answer != NULL ? 0 : -1;
	} else if (j->plan_bytes != NULL) {
		FILE *f = fmemopen(j->plan_bytes, j->plan_len, "r");

		if (f == NULL) {
			j->plan_rc = mc_err_errno(&j->plan_err, "cannot read the plan");
		} else {
			j->plan_rc = mc_plan_read(f, &j->plan, false, &j->plan_err);
			fclose(f);
		}
		j->have_plan = j->plan_rc == 0;
	} else if (apply_percentages(j, &j->plan_err) != 0) {
		j->plan_rc = -1;
	} else {
		struct mc_plan_params pp = {
			.target = j->target,
			.lowerbound = j->lowerbound,
			.soft_pinned_pass = j->soft_pinned_pass,
		};

		j->plan_rc = -1;
		if (j->planner_cmd != NULL) {
			struct extplan x = {
				.cmd = j->planner_cmd,
				.target = j->target,
				.lowerbound = j->lowerbound,
				.soft_pinned_pass = j->soft_pinned_pass,
				.timeout_ms = j->planner_timeout_ms,
			};
			struct mc_err perr = { 0 };

			j->plan_rc = extplan_run(&x, &j->view, &j->plan, &perr);
			j->have_plan = j->plan_rc == 0;
			if (j->plan_rc != 0) {
				j->planner_failed = true;
				snprintf(j->planner_why, sizeof(j->planner_why), "%s", perr.msg);
			}
		}
		if (j->plan_rc != 0) {
			j->plan_rc = mc_planner_run(&j->policy->p, &j->view, &pp, &j->plan, NULL,
						    &j->plan_err);
			j->have_plan = j->plan_rc == 0;
		}
	}
	if (j->have_plan && sum_planned(j, &j->plan_err) != 0) {
		j->plan_rc = -1;
		j->have_plan = false;
	}
	if (j->have_plan && j->dry_run &&
	    (j->answer = blob_write(write_plan, j, &j->plan_err)) == NULL) {
		j->plan_rc = -1;
		j->have_plan = false;
	}
}

/* ---- answering ---- */

static void
answer(struct job *j)
{
	struct mc_err err = { 0 };
	struct blob *b = j->answer;
	msgpack_packer *pk;

	if (j->req == NULL)
		return;
	j->answer = NULL;
	if (b == NULL && (b = blob_write(write_report, j, &err)) == NULL) {
		handler_fail(j->req, err.code, "%s", err.msg);
		j->req = NULL;
		return;
	}
	pk = mc_reply_ok_begin(j->req);
	if (j->export_view) {
		msgpack_pack_map(pk, 2);
		mc_pack_kv_u64(pk, "count", j->view.n);
		mc_pack_kv_u64(pk, "len", b->len);
	} else {
		msgpack_pack_map(pk, j->says_kind ? 4 : 3);
		mc_pack_kv_u64(pk, "len", b->len);
		if (j->says_kind)
			mc_pack_kv_str(pk, "kind", j->dry_run ? "plan" : "report");
		mc_pack_kv_u64(pk, "evicted_bytes", j->exec.evicted_bytes);
		mc_pack_kv_u64(pk, "evicted_objects", j->exec.evicted_objects);
	}
	blob_reply(j->req, b, evictor_of(j->m)->wq);
	j->req = NULL;
}

static void
job_fail(struct job *j, const struct mc_err *err)
{
	if (j->export_view)
		mc_warn("candidates failed: %s", err->msg);
	else
		mc_warn("eviction round (%s) failed: %s", evict_trigger_names[j->trigger],
			err->msg);
	if (j->req != NULL)
		handler_fail(j->req, err->code, "%s", err->msg);
	j->req = NULL;
}

static void
job_finish(struct master *m, struct job *j)
{
	struct evictor *e = evictor_of(m);
	uint64_t end = mc_mono_ns();

	if (j->phase == PH_EXEC) {
		mc_metric_observe(e->exec_seconds, (double)(end - j->t_exec) / 1e9);
		mc_info("eviction round (%s): evicted %llu copies, %llu bytes in %.1f ms, "
			"%llu fallbacks run",
			evict_trigger_names[j->trigger],
			(unsigned long long)j->exec.evicted_objects,
			(unsigned long long)j->data_bytes, (double)(end - j->t0) / 1e6,
			(unsigned long long)j->exec.fallbacks);
	}
	/*
	 * A round that left young copies out: no round ahead of need finds
	 * more until the first of them ages, but a put that needs their room
	 * may have its round at once. Any other round of a scope that freed
	 * nothing: its scope rests a moment.
	 */
	if (j->key != UINT64_MAX && j->young_left_out && j->young.until != UINT64_MAX)
		evict_stall(m, j->key, j->young.until, true);
	else if (j->key != UINT64_MAX && j->has_round && j->exec.evicted_bytes == 0)
		evict_stall(m, j->key, mc_now_ms() + STALL_MS, false);
	if (j->young.taken > 0) {
		mc_young_log(&j->young, j->round.scope[0] != '\0' ? j->round.scope : "all copies",
			     j->scope == SCOPE_NONE ? "an operator's round asked for them"
						    : MC_YOUNG_FOR_WRITE);
		mc_metric_add(e->young, (double)j->young.taken);
		mc_metric_add(e->young_bytes, (double)j->young.taken_bytes);
	}
	answer(j);
	e->totals.evicted_bytes += j->data_bytes;
	e->totals.evicted_objects += j->exec.evicted_objects;
	e->running = NULL;
	e->done_seq = j->seq;
	evict_job_dispose(j);
	/* From the loop, never from inside the caller that made this round end. */
	event_active(e->ended_ev, EV_TIMEOUT, 0);
	job_next(m);
}

/* ---- executing ---- */

static uint64_t
copy_identity(uint32_t tenant, const char *key, size_t len, uint32_t peer, int tier)
{
	return store_key_hash(tenant, key, len) ^ ((uint64_t)peer * 0x9e3779b97f4a7c15ull) ^
	       ((uint64_t)(tier + 1) << 56);
}

static bool
any_eq(const void *entry, const void *key)
{
	(void)entry;
	(void)key;
	return true;
}

static int64_t
resolve_tenant(struct master *m, const char *name)
{
	return store_tenant_find(m->store, name, strlen(name));
}

/* A peer as views name it: its address, or "peer-ID". */
static int64_t
resolve_peer(struct master *m, const char *name)
{
	const struct peer *p;
	char *end;

	if (strncmp(name, "peer-", 5) == 0) {
		unsigned long id = strtoul(name + 5, &end, 10);

		if (*end == '\0' && end != name + 5 && (p = peers_find(m->peers, id)) != NULL)
			return p->id;
	}
	p = peers_find_addr(m->peers, name);
	return p != NULL ? (int64_t)p->id : -1;
}

static int
exec_begin(struct job *j, struct mc_err *err)
{
	uint32_t n = j->plan.view.nnames;

	j->tenant_of = malloc(((size_t)n + 1) * sizeof(*j->tenant_of));
	j->peer_of = malloc(((size_t)n + 1) * sizeof(*j->peer_of));
	j->tier_of = malloc((size_t)n + 1);
	if (j->tenant_of == NULL || j->peer_of == NULL || j->tier_of == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the plan");
	for (uint32_t i = 0; i <= n; i++) {
		j->tenant_of[i] = -2;
		j->peer_of[i] = -2;
		j->tier_of[i] = -2;
	}
	mc_plan_exec_begin(&j->exec, &j->plan, j->planned, &j->report);
	j->report.has_round = j->has_round;
	j->report.round = j->round;
	/* Sized once for every victim, so recording them never rehashes mid-slice. */
	size_t total = 0;
	for (size_t i = 0; i < j->plan.nstages; i++)
		total += j->plan.stages[i].nvictims;
	if (mc_htab_reserve(&j->done, total < (1u << 24) ? total : (1u << 24)) != 0)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the plan");
	j->phase = PH_EXEC;
	j->t_exec = mc_mono_ns();
	return 0;
}

/* Resolve a plan name id through a per-job cache. */
static int64_t
cached(int64_t *cache, uint32_t id, struct master *m, const struct job *j,
       int64_t (*resolve)(struct master *, const char *))
{
	if (cache[id] == -2)
		cache[id] = resolve(m, mc_cand_name_str(&j->plan.view, id));
	return cache[id];
}

static bool
soft_pin_blocks(const struct master *m, const struct mc_stage *s, const struct mobj *o,
		uint64_t now)
{
	return softpin_protects(o, now) && !(s->soft_pinned && m->cfg.allow_evict_soft_pinned);
}

static bool
object_busy(const struct mobj *o)
{
	const struct mrep *r = obj_creps(o);

	if (o->writing)
		return true;
	for (unsigned i = 0; i < o->nrep; i++)
		if (r[i].state != REP_COMPLETE)
			return true;
	return false;
}

/* Why a member of a group keeps the whole group, or -1 when none does. */
static int
group_blocks(const struct master *m, const struct mc_stage *s, const struct group *g, uint64_t now)
{
	for (uint32_t i = 0; i < g->n; i++) {
		const struct mobj *o = g->members[i];

		if (o->lease_deadline > now)
			return MC_FAIL_GROUP_LEASED;
		if (o->hard_pin || soft_pin_blocks(m, s, o, now))
			return MC_FAIL_PINNED;
		if (object_busy(o))
			return MC_FAIL_BUSY;
	}
	return -1;
}

static uint64_t
object_bytes(const struct master *m, const struct mobj *o)
{
	const struct mrep *r = obj_creps(o);
	uint64_t sum = 0;

	for (unsigned i = 0; i < o->nrep; i++)
		sum += ops_rep_size(m, o, &r[i]);
	return sum;
}

/* What evicting o frees beyond its bytes in j's unit: its key and overhead in a charged round. */
static uint64_t
victim_meta(const struct job *j, const struct mobj *o)
{
	return j->filter.charged ? store_meta_cost(o->key_len) : 0;
}

/*
 * Evict one victim: the copy it names, or for a member of a group every
 * copy of every member. Returns -1 with *reason when it must stay;
 * else *bytes is what went, in the plan's unit: the bytes, with *meta
 * the keys and overheads a charged round counts too.
 */
static int
evict_victim(struct master *m, struct job *j, const struct mc_stage *s, uint32_t vi,
	     uint64_t *bytes, uint64_t *meta, uint64_t *copies, int *reason)
{
	const struct mc_cand *c = &j->plan.view.c[vi];
	const char *key = mc_cand_key(&j->plan.view, c);
	uint64_t now = mc_now_ms();
	int64_t tenant = cached(j->tenant_of, c->tenant, m, j, resolve_tenant);
	int64_t peer = cached(j->peer_of, c->peer, m, j, resolve_peer);
	int tier = j->tier_of[c->tier];
	struct mobj *o;
	uint64_t id;
	unsigned i;
	bool young;

	if (tier == -2) {
		const char *tn = mc_cand_name_str(&j->plan.view, c->tier);

		tier = mc_tier_parse(tn, strlen(tn), NULL);
		j->tier_of[c->tier] = (int8_t)tier;
	}
	*reason = MC_FAIL_GONE;
	if (tenant < 0 || peer < 0 || tier < 0)
		return -1;
	id = copy_identity((uint32_t)tenant, key, c->key_len, (uint32_t)peer, tier);
	o = store_find(m->store, store_key_hash((uint32_t)tenant, key, c->key_len),
		       (uint32_t)tenant, key, c->key_len);
	if (o == NULL) {
		if (mc_htab_find(&j->done, id, any_eq, NULL) != NULL)
			*reason = MC_FAIL_EVICTED;
		return -1;
	}
	if (o->version != c->version) {
		*reason = MC_FAIL_VERSION;
		return -1;
	}
	for (i = 0; i < o->nrep; i++) {
		const struct mrep *r = &obj_creps(o)[i];

		/* A moving copy was evicted already: its peer is demoting it. */
		if (r->peer == (uint32_t)peer && r->tier == tier && r->version == o->version &&
		    !r->moving)
			break;
	}
	if (i == o->nrep) {
		if (mc_htab_find(&j->done, id, any_eq, NULL) != NULL)
			*reason = MC_FAIL_EVICTED;
		return -1;
	}
	if (o->hard_pin || soft_pin_blocks(m, s, o, now)) {
		*reason = MC_FAIL_PINNED;
		return -1;
	}
	if (o->lease_deadline > now) {
		*reason = MC_FAIL_LEASED;
		return -1;
	}
	if (object_busy(o)) {
		*reason = MC_FAIL_BUSY;
		return -1;
	}
	if (o->group != NO_GROUP) {
		struct group *g = store_group_get(m->store, o->group);

		if (g != NULL) {
			int why = group_blocks(m, s, g, now);

			if (why >= 0) {
				*reason = why;
				return -1;
			}
			/* All or none: the whole group goes, every copy of every member. */
			*bytes = *meta = *copies = 0;
			while (g->n > 0) {
				struct mobj *mo = g->members[g->n - 1];
				bool last = g->n == 1;

				*bytes += object_bytes(m, mo);
				*meta += victim_meta(j, mo);
				*copies += mo->nrep;
				if (mc_young_is(m->cfg.young, mo->committed, now))
					mc_young_take(&j->young, object_bytes(m, mo));
				ops_obj_erase(m, mo, true, NULL);
				if (last)
					break; /* the group went with its last member */
			}
			mc_htab_insert(&j->done, id, j);
			return 0;
		}
	}
	/* A copy left moving counts as freed: its bytes are going, and a round no longer counts them. */
	/* Plans speak in object bytes; a tier's used counts footprints, which free at least that. */
	*bytes = ops_rep_size(m, o, &obj_creps(o)[i]);
	*meta = victim_meta(j, o);
	*copies = 1;
	young = mc_young_is(m->cfg.young, o->committed, now);
	if (!ops_rep_evict(m, o, i)) {
		/* dropped, not moved down: a young one counts */
		if (young)
			mc_young_take(&j->young, *bytes);
		ops_settle(m, o, NULL);
	}
	mc_htab_insert(&j->done, id, j);
	return 0;
}

static unsigned
scope_depth(const char *scope)
{
	unsigned d = *scope != '\0';

	for (; *scope != '\0'; scope++)
		d += *scope == '/';
	return d > MC_POLICY_MAX_DEPTH ? MC_POLICY_MAX_DEPTH : d;
}

static int
pass_of(const struct mc_stage *s)
{
	if (s->soft_pinned)
		return PASS_SOFT_PINNED;
	return s->kind == MC_STAGE_FALLBACK ? PASS_FALLBACK : PASS_EVICT;
}

/* One slice of execution; 1 when more remains. */
static int
exec_slice(struct master *m, struct job *j, struct mc_err *err)
{
	struct evictor *e = evictor_of(m);
	uint64_t until = mc_mono_ns() + SLICE_NS;
	int budget = m->cfg.evict_slice;

	for (;;) {
		const struct mc_stage *s;
		uint64_t bytes = 0, meta = 0, copies = 0;
		uint32_t vi;
		bool started;
		int reason, rc;

		if (budget-- <= 0 || ((budget & 31) == 0 && mc_mono_ns() >= until))
			return 1;
		rc = mc_plan_exec_next(&j->exec, &s, &vi, &started, err);
		if (rc <= 0)
			return rc;
		if (started)
			mc_metric_inc(e->fallbacks[scope_depth(s->scope)]);
		if (evict_victim(m, j, s, vi, &bytes, &meta, &copies, &reason) == 0) {
			mc_plan_exec_evicted(&j->exec, mc_add_sat(bytes, meta), copies);
			j->data_bytes += bytes;
			mc_metric_add(e->bytes[pass_of(s)][j->trigger], (double)bytes);
			mc_metric_add(e->objects[pass_of(s)][j->trigger], (double)copies);
		} else {
			mc_metric_inc(e->failures[reason]);
			if (mc_plan_exec_kept(&j->exec, reason, err) != 0)
				return -1;
		}
	}
}

/* ---- the job's steps ---- */

static void plan_done(void *arg, bool cancelled);

static void
start_plan(struct master *m, struct job *j)
{
	struct mc_err err = { 0 };

	j->phase = PH_PLAN;
	j->t_plan = mc_mono_ns();
	if (mc_workq_submit(evictor_of(m)->wq, plan_work, plan_done, j, &err) != 0) {
		job_fail(j, &err);
		job_finish(m, j);
		return;
	}
}

/*
 * What a round does with the young copies its view holds: one no put
 * waits on leaves them out, and so does one whose waiting puts the old
 * copies can make room for; else they stay, for the policy to rank with
 * the others. An admin's round or an export keeps them all.
 */
static void
sort_young(struct job *j)
{
	uint64_t old;

	candidates_young(j->build, &j->young, &old);
	if (j->scope == SCOPE_NONE || j->young.kept == 0 || mc_young_needed(j->round.waiting, old))
		return;
	candidates_drop_young(j->build);
	j->young_left_out = true;
}

static void
build_slice(struct master *m, struct job *j)
{
	uint64_t until = mc_mono_ns() + SLICE_NS;
	struct mc_err err = { 0 };
	int rc;

	do {
		rc = candidates_step(j->build, BUILD_CHUNK, &err);
	} while (rc == 1 && mc_mono_ns() < until);
	if (rc == 1) {
		schedule_step(m);
		return;
	}
	if (rc == 0 && candidates_caps(j->build, &j->caps, &err) != 0)
		rc = -1;
	if (rc == 0)
		sort_young(j);
	j->window_cut = j->window != 0 && candidates_window_cut(j->build);
	candidates_end(j->build);
	j->build = NULL;
	if (rc < 0) {
		job_fail(j, &err);
		job_finish(m, j);
		return;
	}
	mc_metric_observe(evictor_of(m)->build_seconds, (double)(mc_mono_ns() - j->t0) / 1e9);
	mc_metric_add(evictor_of(m)->view_records[j->window != 0], (double)j->view.n);
	start_plan(m, j);
}

static void step(struct master *m, struct job *j);

/* One slice of the running job, timed: the longest is what reads waited. */
void
evict_step_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;
	struct job *j = evictor_of(m)->running;
	uint64_t t0 = mc_mono_ns();

	(void)fd;
	(void)what;
	if (j == NULL)
		return;
	step(m, j);
	mc_metric_observe(evictor_of(m)->slice_seconds, (double)(mc_mono_ns() - t0) / 1e9);
}

static void
step(struct master *m, struct job *j)
{
	struct mc_err err = { 0 };
	int rc;

	if (j->phase == PH_BUILD) {
		build_slice(m, j);
		return;
	}
	if (j->phase != PH_EXEC)
		return;
	rc = exec_slice(m, j, &err);
	if (rc == 1) {
		schedule_step(m);
		return;
	}
	if (rc < 0)
		job_fail(j, &err);
	job_finish(m, j);
}

static void planned(struct master *m, struct job *j);

/*
 * The plan job is done, back on the loop. At shutdown (the queue being
 * freed) the job stays as it is for evict_free to free.
 */
static void
plan_done(void *arg, bool cancelled)
{
	struct job *j = arg;
	struct evictor *e = evictor_of(j->m);
	uint64_t t0 = mc_mono_ns();

	if (cancelled || e->stopping)
		return;
	planned(j->m, j);
	mc_metric_observe(e->slice_seconds, (double)(mc_mono_ns() - t0) / 1e9);
}

static void
planned(struct master *m, struct job *j)
{
	struct evictor *e = evictor_of(m);
	struct mc_err err = { 0 };

	mc_metric_observe(e->plan_seconds, (double)(mc_mono_ns() - j->t_plan) / 1e9);
	if (j->planner_failed) {
		mc_metric_inc(e->planner_fallbacks);
		mc_warn("eviction planner '%s' failed (%s); planned with the built-in policy",
			j->planner_cmd, j->planner_why);
	}
	if (j->plan_rc != 0) {
		job_fail(j, &j->plan_err);
		job_finish(m, j);
		return;
	}
	if (j->dry_run || j->export_view) {
		job_finish(m, j);
		return;
	}
	bool failed;
	if (evict_job_regrow(m, j, &err, &failed)) {
		if (failed) {
			job_fail(j, &err);
			job_finish(m, j);
			return;
		}
		j->phase = PH_BUILD;
		schedule_step(m);
		return;
	}
	if (exec_begin(j, &err) != 0) {
		job_fail(j, &err);
		job_finish(m, j);
		return;
	}
	schedule_step(m);
}

static void
job_start(struct master *m, struct job *j)
{
	struct evictor *e = evictor_of(m);
	struct mc_err err = { 0 };

	e->running = j;
	j->t0 = mc_mono_ns();
	j->round.started_at = mc_now_ms();
	if (j->scope != SCOPE_NONE && !e->scope_target(m, j)) {
		/* Other rounds or removals made the room already. */
		job_finish(m, j);
		return;
	}
	if (j->scope == SCOPE_NONE && !j->export_view && j->plan_bytes == NULL)
		e->manual_round(m, j);
	if (j->has_round)
		mc_debug("eviction round %llu (%s, %s): queued_at=%llu started_at=%llu "
			 "usage_at_start=%llu low=%llu waiting=%llu target=%llu",
			 (unsigned long long)j->seq, j->round.trigger,
			 j->round.scope[0] != '\0' ? j->round.scope : "all",
			 (unsigned long long)j->round.queued_at,
			 (unsigned long long)j->round.started_at,
			 (unsigned long long)j->round.usage_at_start,
			 (unsigned long long)j->round.low, (unsigned long long)j->round.waiting,
			 (unsigned long long)j->round.target);
	if (!j->export_view) {
		mc_metric_inc(e->rounds[j->trigger]);
		e->totals.rounds++;
	}
	j->policy = e->policy;
	j->policy->refs++;
	if (j->plan_bytes != NULL || j->empty) {
		j->view.created = mc_now_ms();
		start_plan(m, j);
		return;
	}
	if (evict_job_build(m, j, &err) != 0) {
		job_fail(j, &err);
		job_finish(m, j);
		return;
	}
	j->phase = PH_BUILD;
	schedule_step(m);
}

static void
job_next(struct master *m)
{
	struct evictor *e = evictor_of(m);
	struct job *j = e->head;

	if (e->running != NULL || j == NULL)
		return;
	e->head = j->next;
	if (e->head == NULL)
		e->tail = NULL;
	e->queued--;
	j->next = NULL;
	job_start(m, j);
}
