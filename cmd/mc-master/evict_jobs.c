/*
 * Eviction's bookkeeping: the jobs (rounds) themselves, the scopes
 * resting after a round that freed nothing, the policy's reference count,
 * the release of a finished job off the loop, and the metrics (see
 * evict.h; evict_exec.c runs the jobs, evict.c starts them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/young.h"
#include "evict_jobs.h"
#include "master.h"
#include "offloop.h"
#include "peers.h"
#include "mmetrics.h"

const char *const evict_trigger_names[TRIG_COUNT] = {
	[TRIG_WATERMARK] = "watermark", [TRIG_NO_SPACE] = "no_space", [TRIG_QUOTA] = "quota",
	[TRIG_BUDGET] = "budget",	[TRIG_MANUAL] = "manual",     [TRIG_PLAN] = "plan",
	[TRIG_STALLED] = "stalled",
};

static const char *const pass_names[PASS_COUNT] = { "evict", "fallback", "soft_pinned" };

void
evict_policy_put(struct policy_ref *r)
{
	if (r != NULL && --r->refs == 0) {
		mc_policy_free(&r->p);
		free(r);
	}
}

/* ---- jobs, and the scopes that rest ---- */

uint64_t
evict_scope_key(int kind, uint32_t peer, int tier, uint32_t tenant)
{
	return ((uint64_t)kind << 60) ^ ((uint64_t)peer << 28) ^ ((uint64_t)tier << 24) ^ tenant;
}

/* Whether key's scope rests now, and why; ahead: for a round no put waits on. */
enum rest
evict_rest(struct master *m, uint64_t key, bool ahead)
{
	struct evictor *e = evictor_of(m);
	uint64_t now = mc_now_ms();

	for (unsigned i = 0; i < e->nstalled; i++) {
		if (e->stalled[i].key != key)
			continue;
		if (now < e->stalled[i].until)
			return REST_COOLDOWN;
		if (ahead && now < e->stalled[i].ahead_until)
			return REST_YOUNG;
	}
	return REST_NONE;
}

static uint64_t
stall_end(const struct stalled *s)
{
	return s->until > s->ahead_until ? s->until : s->ahead_until;
}

/* Rest key's scope until (mc_now_ms): for every round, or when ahead for those no put waits on. */
void
evict_stall(struct master *m, uint64_t key, uint64_t until, bool ahead)
{
	struct evictor *e = evictor_of(m);
	uint64_t now = mc_now_ms();
	unsigned slot = 0;

	for (unsigned i = 0; i < e->nstalled; i++)
		if (e->stalled[i].key == key) {
			slot = i;
			goto set;
		}
	/* another scope's entry that ended, a new one, else the one that ends first */
	for (slot = 0; slot < e->nstalled && stall_end(&e->stalled[slot]) > now; slot++)
		;
	if (slot == e->nstalled && e->nstalled == STALLED_MAX) {
		slot = 0;
		for (unsigned i = 1; i < e->nstalled; i++)
			if (stall_end(&e->stalled[i]) < stall_end(&e->stalled[slot]))
				slot = i;
	} else if (slot == e->nstalled) {
		e->nstalled++;
	}
	e->stalled[slot] = (struct stalled){ .key = key };
set:
	if (ahead)
		e->stalled[slot].ahead_until = until;
	else
		e->stalled[slot].until = until;
}

/* ---- a job's view ---- */

int
evict_job_build(struct master *m, struct job *j, struct mc_err *err)
{
	if (j->scope == SCOPE_TIER && j->filter.by_peer && j->filter.by_tier) {
		if (j->window == 0)
			j->window = candidates_window_size(m, j->filter.peer, j->filter.tier,
							   j->target, &j->window_copies);
		j->build = candidates_begin_window(m, &j->filter, &j->view, j->window, err);
	} else {
		j->window = 0;
		j->build = candidates_begin(m, &j->filter, &j->view, err);
	}
	return j->build != NULL ? 0 : -1;
}

/* The bytes j's plan takes in its evict stages (a fallback's reserve is not taken for need). */
static uint64_t
planned_evict(const struct job *j)
{
	uint64_t sum = 0;

	for (size_t i = 0; j->planned != NULL && i < j->plan.nstages; i++)
		if (j->plan.stages[i].kind == MC_STAGE_EVICT)
			sum += j->planned[i];
	return sum;
}

bool
evict_job_regrow(struct master *m, struct job *j, struct mc_err *err, bool *failed)
{
	*failed = false;
	if (j->window == 0 || !j->window_cut || !j->have_plan || planned_evict(j) >= j->target ||
	    j->window >= j->window_copies)
		return false;
	mc_plan_free(&j->plan);
	mc_plan_init(&j->plan);
	mc_cand_view_free(&j->view);
	mc_cand_view_init(&j->view);
	caps_free(&j->caps);
	free(j->planned);
	j->planned = NULL;
	j->have_plan = false;
	j->plan_rc = 0;
	j->young_left_out = false;
	mc_young_tally_init(&j->young);
	j->window = mc_plan_window_grow(j->window, j->window_copies);
	j->window_cut = false;
	j->window_grown++;
	mc_metric_inc(evictor_of(m)->window_grows);
	if (evict_job_build(m, j, err) != 0)
		*failed = true;
	return true;
}

struct job *
evict_job_new(struct master *m, int trigger)
{
	struct job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->m = m;
	j->trigger = trigger;
	j->lowerbound = MC_PLAN_DEFAULT_LOWERBOUND;
	j->planner_cmd = m->cfg.evict_planner;
	j->planner_timeout_ms = m->cfg.evict_planner_timeout;
	j->soft_pinned_pass = m->cfg.allow_evict_soft_pinned;
	j->key = UINT64_MAX;
	j->seq = ++evictor_of(m)->next_seq;
	j->round.queued_at = mc_now_ms();
	snprintf(j->round.trigger, sizeof(j->round.trigger), "%s", evict_trigger_names[trigger]);
	mc_cand_view_init(&j->view);
	mc_plan_init(&j->plan);
	mc_report_init(&j->report);
	mc_htab_init(&j->done);
	return j;
}

void
evict_job_free(struct job *j)
{
	if (j == NULL)
		return;
	candidates_end(j->build);
	caps_free(&j->caps);
	mc_cand_view_free(&j->view);
	mc_plan_free(&j->plan);
	mc_report_free(&j->report);
	mc_htab_free(&j->done);
	evict_policy_put(j->policy);
	free(j->plan_bytes);
	blob_free(j->answer);
	free(j->planned);
	free(j->tenant_of);
	free(j->peer_of);
	free(j->tier_of);
	free(j);
}

/* ---- freeing off the loop ---- */

static void
drop_view_pages(struct mc_cand_view *v)
{
	offloop_drop_pages(v->c, v->cap * sizeof(*v->c));
	offloop_drop_pages(v->keys, v->keys_cap);
}

static void
free_work(void *arg)
{
	struct job *j = arg;

	drop_view_pages(&j->view);
	drop_view_pages(&j->plan.view);
	offloop_drop_pages(j->done.slots, j->done.cap * sizeof(*j->done.slots));
	for (size_t i = 0; i < j->plan.nstages; i++)
		offloop_drop_pages(j->plan.stages[i].victims,
				   j->plan.stages[i].cap * sizeof(*j->plan.stages[i].victims));
	evict_job_free(j);
}

/* A release the queue cancelled (it is being freed) happens here instead. */
static void
free_done(void *arg, bool cancelled)
{
	if (cancelled)
		evict_job_free(arg);
}

/*
 * Free a finished job. A round's view and plan can be hundreds of
 * megabytes, and handing that many pages back to the kernel takes
 * milliseconds, so a worker does it when one is free.
 */
void
evict_job_dispose(struct job *j)
{
	evict_policy_put(j->policy); /* the count belongs to the loop */
	j->policy = NULL;
	if (mc_workq_submit(evictor_of(j->m)->wq, free_work, free_done, j, NULL) != 0)
		evict_job_free(j);
}

/* ---- metrics ---- */

static const char skipped_help[] =
	"Watermark rounds not run, by why (self_evict: the peer evicts that tier itself; "
	"young: only copies younger than --young would go).";

int
evict_metrics_init(struct master *m)
{
	struct evictor *e = evictor_of(m);
	struct mc_metrics *r = m->mx->reg;
	char label[64];

	for (int t = 0; t < TRIG_COUNT; t++) {
		e->rounds[t] = mc_metric_get(r, "mc_evict_rounds_total", MC_COUNTER,
					     "Eviction rounds started, by trigger.", "trigger",
					     evict_trigger_names[t]);
		for (int p = 0; p < PASS_COUNT; p++) {
			snprintf(label, sizeof(label), "%s,%s", pass_names[p],
				 evict_trigger_names[t]);
			e->bytes[p][t] = mc_metric_get(r, "mc_evicted_bytes_total", MC_COUNTER,
						       "Bytes evicted, by stage kind and trigger.",
						       "kind,trigger", label);
			e->objects[p][t] =
				mc_metric_get(r, "mc_evicted_objects_total", MC_COUNTER,
					      "Copies evicted, by stage kind and trigger.",
					      "kind,trigger", label);
			if (e->bytes[p][t] == NULL || e->objects[p][t] == NULL)
				return -1;
		}
		if (e->rounds[t] == NULL)
			return -1;
	}
	for (int i = 0; i < MC_FAIL_REASON_COUNT; i++) {
		e->failures[i] = mc_metric_get(r, "mc_evict_failures_total", MC_COUNTER,
					       "Planned victims kept at revalidation, by reason.",
					       "reason", mc_fail_reason_name(i));
		if (e->failures[i] == NULL)
			return -1;
	}
	for (int i = 0; i <= MC_POLICY_MAX_DEPTH; i++) {
		snprintf(label, sizeof(label), "%d", i);
		e->fallbacks[i] = mc_metric_get(r, "mc_evict_fallbacks_total", MC_COUNTER,
						"Fallback stages run, by scope depth (0: global).",
						"level", label);
		if (e->fallbacks[i] == NULL)
			return -1;
	}
	e->planner_fallbacks = mc_metric_get(
		r, "mc_evict_planner_failures_total", MC_COUNTER,
		"External planner runs that failed (the built-in one planned).", NULL, NULL);
	e->build_seconds = mc_metric_get(r, "mc_evict_view_seconds", MC_HISTOGRAM,
					 "Time to build a round's candidate view.", NULL, NULL);
	e->plan_seconds = mc_metric_get(r, "mc_evict_plan_seconds", MC_HISTOGRAM,
					"Time to plan a round.", NULL, NULL);
	e->exec_seconds = mc_metric_get(r, "mc_evict_exec_seconds", MC_HISTOGRAM,
					"Time to execute a plan.", NULL, NULL);
	e->slice_seconds =
		mc_metric_get(r, "mc_evict_slice_seconds", MC_HISTOGRAM,
			      "Time the event loop spent in one slice of a round.", NULL, NULL);
	e->skipped_self_evict = mc_metric_get(r, "mc_rounds_skipped_total", MC_COUNTER,
					      skipped_help, "why", "self_evict");
	e->skipped_young = mc_metric_get(r, "mc_rounds_skipped_total", MC_COUNTER, skipped_help,
					 "why", "young");
	e->young = mc_metric_get(r, "mc_evicted_young_total", MC_COUNTER,
				 "Copies younger than --young that the master's rounds evicted "
				 "(for a put that needed their room, or an admin's round).",
				 NULL, NULL);
	e->young_bytes = mc_metric_get(r, "mc_evicted_young_bytes_total", MC_COUNTER,
				       "Bytes of those copies.", NULL, NULL);
	for (int w = 0; w < 2; w++) {
		e->view_records[w] = mc_metric_get(
			r, "mc_evict_view_records_total", MC_COUNTER,
			"Records of the candidate views rounds built, by how (full: a walk of "
			"the store; window: a tier's coldest copies from its recency index).",
			"view", w ? "window" : "full");
		if (e->view_records[w] == NULL)
			return -1;
	}
	e->window_grows = mc_metric_get(
		r, "mc_evict_window_grows_total", MC_COUNTER,
		"Plans made again over a window twice as big, the first one short of its target.",
		NULL, NULL);
	if (e->window_grows == NULL)
		return -1;
	return e->planner_fallbacks != NULL && e->build_seconds != NULL && e->young != NULL &&
			       e->young_bytes != NULL && e->skipped_young != NULL &&
			       e->skipped_self_evict != NULL && e->plan_seconds != NULL &&
			       e->exec_seconds != NULL && e->slice_seconds != NULL
		       ? 0
		       : -1;
}

void
evict_collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;

	struct evictor *e = evictor_of(m);

	mc_metric_set(mc_metric_get(r, "mc_evict_queued", MC_GAUGE,
				    "Eviction rounds waiting, the running one included.", NULL,
				    NULL),
		      (double)(e->queued + (e->running != NULL)));
	unsigned self_evicting = 0;
	for (uint32_t i = 0; i < m->peers->n; i++)
		self_evicting += m->peers->v[i]->self_evict != 0;
	mc_metric_set(mc_metric_get(r, "mc_peers_self_evicting", MC_GAUGE,
				    "Registered peers that evict at least one tier themselves.",
				    NULL, NULL),
		      (double)self_evicting);
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];

		for (int t = 0; t < MC_TIER_COUNT; t++) {
			const struct peer_tier *pt = &p->tiers[t];
			char label[64];
			struct mc_metric *s;

			if (!pt->present || !pt->reached_high)
				continue;
			snprintf(label, sizeof(label), "%u,%s", p->id, mc_tier_name(t));
			s = mc_metric_get(
				r, "mc_tier_occupancy_min", MC_GAUGE,
				"lowest fill of a peer tier after a round, since it first "
				"reached its high watermark",
				"peer,tier", label);
			if (s != NULL)
				mc_metric_set(s, pt->occupancy_min);
		}
	}
}
