/*
 * The plan-execution cursor (mc/planexec.h).
 */
#include <stdlib.h>

#include "mc/planexec.h"
#include "mc/planner.h"

void
mc_plan_exec_begin(struct mc_plan_exec *x, const struct mc_plan *p, const uint64_t *planned,
		   struct mc_report *r)
{
	*x = (struct mc_plan_exec){ .plan = p, .report = r, .planned = planned };
	r->created = p->created;
}

/* Actual bytes evicted so far inside scope, by every stage within it. */
static uint64_t
scope_actual(const struct mc_report *r, const char *scope)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < r->nstages; i++)
		if (mc_scope_contains(scope, r->stages[i].scope))
			sum += r->stages[i].evicted_bytes;
	return sum;
}

/* Whether stage s has nothing more to do: its condition met, its target reached, its list done. */
static bool
stage_over(const struct mc_plan_exec *x, const struct mc_stage *s, const struct mc_stage_report *sr)
{
	if (x->victim >= s->nvictims)
		return true;
	if (s->kind == MC_STAGE_FALLBACK)
		return scope_actual(x->report, s->cond_scope) >= s->cond_lowerbound;
	return s->target > 0 && sr->evicted_bytes >= s->target;
}

/* A stage's planned bytes: its victims' bytes in the view. */
static uint64_t
sum_victims(const struct mc_plan *p, const struct mc_stage *s)
{
	uint64_t sum = 0;

	for (size_t k = 0; k < s->nvictims; k++)
		sum += p->view.c[s->victims[k]].bytes;
	return sum;
}

uint64_t *
mc_plan_exec_planned(const struct mc_plan *p)
{
	uint64_t *planned = calloc(p->nstages + 1, sizeof(*planned));

	for (size_t i = 0; planned != NULL && i < p->nstages; i++)
		planned[i] = sum_victims(p, &p->stages[i]);
	return planned;
}

static uint64_t
stage_planned(const struct mc_plan_exec *x, const struct mc_stage *s)
{
	return x->planned != NULL ? x->planned[x->stage] : sum_victims(x->plan, s);
}

int
mc_plan_exec_next(struct mc_plan_exec *x, const struct mc_stage **stage, uint32_t *victim,
		  bool *fallback_started, struct mc_err *err)
{
	const struct mc_plan *p = x->plan;

	*fallback_started = false;
	if (x->pending)
		return mc_err_set(err, MC_ERR_INTERNAL,
				  "plan execution: the last victim's outcome "
				  "was not given");
	while (x->stage < p->nstages) {
		const struct mc_stage *s = &p->stages[x->stage];
		struct mc_stage_report *sr;

		if (!x->open) {
			sr = mc_report_add_stage(x->report, s, err);
			if (sr == NULL)
				return -1;
			sr->planned_bytes = stage_planned(x, s);
			sr->ran = s->kind == MC_STAGE_EVICT;
			x->open = true;
			x->victim = 0;
		}
		sr = &x->report->stages[x->report->nstages - 1];
		if (stage_over(x, s, sr)) {
			x->stage++;
			x->open = false;
			continue;
		}
		if (!sr->ran) {
			sr->ran = true;
			x->fallbacks++;
			*fallback_started = true;
		}
		*stage = s;
		*victim = s->victims[x->victim];
		x->pending = true;
		return 1;
	}
	return 0;
}

void
mc_plan_exec_evicted(struct mc_plan_exec *x, uint64_t bytes, uint64_t copies)
{
	struct mc_stage_report *sr = &x->report->stages[x->report->nstages - 1];

	sr->evicted_bytes += bytes;
	sr->evicted_objects += copies;
	x->evicted_bytes += bytes;
	x->evicted_objects += copies;
	x->victim++;
	x->pending = false;
}

int
mc_plan_exec_kept(struct mc_plan_exec *x, int reason, struct mc_err *err)
{
	const struct mc_stage *s = &x->plan->stages[x->stage];
	struct mc_stage_report *sr = &x->report->stages[x->report->nstages - 1];
	int rc = mc_stage_report_fail(sr, s->victims[x->victim], reason, err);

	x->victim++;
	x->pending = false;
	return rc;
}
