/*
 * Unit tests for the plan-execution cursor (libmc/policy/planexec.c):
 * stages in order, an evict stage stops at its target, a fallback runs
 * only while its scope's actual evictions are short of its condition and
 * stops the moment they reach it, and every outcome lands in the report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/planexec.h"
#include "cand_util.h"
#include "tap.h"

#define SZ 100

/* A view of n candidates of SZ bytes, keys k0..k(n-1), tenants a then b. */
static void
view(struct mc_cand_view *v, size_t n)
{
	struct mc_err err;
	char key[32];

	for (size_t i = 0; i < n; i++) {
		struct mc_cand c = { .version = 1, .bytes = SZ, .cost = -1 };

		c.tenant = name(v, i < n / 2 ? "a" : "b");
		c.type = name(v, "kv");
		c.peer = name(v, "peer-1");
		c.tier = name(v, "dram");
		snprintf(key, sizeof(key), "k%zu", i);
		if (mc_cand_add(v, &c, key, strlen(key), &err) < 0)
			exit(1);
	}
}

static struct mc_stage *
stage(struct mc_plan *p, int kind, const char *scope, uint64_t target, const uint32_t *victims,
      size_t n)
{
	struct mc_err err;
	struct mc_stage *s = mc_plan_add_stage(p, kind, scope, target, target, &err);

	for (size_t i = 0; s != NULL && i < n; i++)
		if (mc_stage_add_victim(s, victims[i], &err) < 0)
			exit(1);
	if (s == NULL)
		exit(1);
	return s;
}

/* A fallback stage over scope, run while scope's actual bytes are below cond. */
static struct mc_stage *
fallback(struct mc_plan *p, const char *scope, uint64_t cond, const uint32_t *victims, size_t n)
{
	struct mc_stage *f = stage(p, MC_STAGE_FALLBACK, scope, 0, victims, n);

	snprintf(f->cond_scope, sizeof(f->cond_scope), "%s", scope);
	f->cond_lowerbound = cond;
	return f;
}

/*
 * Run x to the end; keep[i] != 0 makes victim i stay with that reason
 * (shifted by one: 0 is "evict it"). The victims tried, in order, go to
 * tried (up to max).
 */
static size_t
run(struct mc_plan_exec *x, const int *keep, uint32_t *tried, size_t max, unsigned *started)
{
	const struct mc_stage *s;
	struct mc_err err;
	uint32_t vi;
	size_t n = 0;
	bool fb;

	*started = 0;
	while (mc_plan_exec_next(x, &s, &vi, &fb, &err) == 1) {
		if (n < max)
			tried[n] = vi;
		n++;
		*started += fb;
		if (keep[vi] != 0)
			mc_plan_exec_kept(x, keep[vi] - 1, &err);
		else
			mc_plan_exec_evicted(x, x->plan->view.c[vi].bytes, 1);
	}
	return n;
}

static void
test_evict_stops_at_target(void)
{
	struct mc_plan p;
	struct mc_report r;
	struct mc_plan_exec x;
	uint32_t v[] = { 0, 1, 2, 3 }, tried[8];
	int keep[4] = { 0, 0, 0, 0 };
	unsigned started;
	size_t n;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 4);
	stage(&p, MC_STAGE_EVICT, "", 2 * SZ, v, 4);
	mc_plan_exec_begin(&x, &p, NULL, &r);
	n = run(&x, keep, tried, 8, &started);
	TAP_OK(n == 2 && tried[0] == 0 && tried[1] == 1, "evict: stops once its target is met");
	TAP_OK(r.nstages == 1 && r.stages[0].evicted_bytes == 2 * SZ &&
		       r.stages[0].planned_bytes == 4 * SZ && r.stages[0].planned_objects == 4 &&
		       r.stages[0].ran,
	       "evict: the report has the planned and actual bytes");
	TAP_OK(x.evicted_bytes == 2 * SZ && x.evicted_objects == 2, "evict: the totals add up");
	mc_report_free(&r);
	mc_plan_free(&p);
}

static void
test_fallback_covers_the_shortfall(void)
{
	struct mc_plan p;
	struct mc_report r;
	struct mc_plan_exec x;
	uint32_t ev[] = { 0, 1 }, fb[] = { 2, 3, 4, 5 }, tried[8];
	/* victim 0 stays (leased): the fallback must make up exactly one */
	int keep[6] = { MC_FAIL_LEASED + 1, 0, 0, 0, 0, 0 };
	struct mc_stage *f;
	unsigned started;
	size_t n;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 6);
	stage(&p, MC_STAGE_EVICT, "tenant=a", 2 * SZ, ev, 2);
	f = stage(&p, MC_STAGE_FALLBACK, "tenant=a", 0, fb, 4);
	snprintf(f->cond_scope, sizeof(f->cond_scope), "tenant=a");
	f->cond_lowerbound = 2 * SZ;
	mc_plan_exec_begin(&x, &p, NULL, &r);
	n = run(&x, keep, tried, 8, &started);
	TAP_OK(n == 3 && tried[2] == 2, "fallback: runs for exactly the shortfall (%zu tried)", n);
	TAP_OK(started == 1 && x.fallbacks == 1 && r.stages[1].ran,
	       "fallback: reported as run, once");
	TAP_OK(r.stages[0].nfailures == 1 && r.stages[0].failures[0].victim == 0 &&
		       r.stages[0].failures[0].reason == MC_FAIL_LEASED,
	       "fallback: the kept victim is a failure with its reason");
	mc_report_free(&r);
	mc_plan_free(&p);

	/* nothing kept: the fallback's condition is met before it starts */
	int none[6] = { 0 };
	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 6);
	stage(&p, MC_STAGE_EVICT, "tenant=a", 2 * SZ, ev, 2);
	f = stage(&p, MC_STAGE_FALLBACK, "tenant=a", 0, fb, 4);
	snprintf(f->cond_scope, sizeof(f->cond_scope), "tenant=a");
	f->cond_lowerbound = 2 * SZ;
	mc_plan_exec_begin(&x, &p, NULL, &r);
	n = run(&x, none, tried, 8, &started);
	TAP_OK(n == 2 && started == 0 && r.nstages == 2 && !r.stages[1].ran,
	       "fallback: a met condition leaves it not run");
	mc_report_free(&r);
	mc_plan_free(&p);
}

/*
 * Victims refused at execution leave their stage short although its
 * planned bytes met the condition: the fallback judges what went.
 */
static void
test_fallback_on_actual_bytes(void)
{
	struct mc_plan p;
	struct mc_report r;
	struct mc_plan_exec x;
	uint32_t ev[] = { 0, 1, 2 }, fb[] = { 3, 4, 5 }, tried[8];
	int keep[6] = { MC_FAIL_LEASED + 1, MC_FAIL_PINNED + 1, 0, 0, 0, 0 };
	unsigned started;
	size_t n;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 6);
	stage(&p, MC_STAGE_EVICT, "tenant=a", 2 * SZ, ev, 3);
	fallback(&p, "tenant=a", 2 * SZ, fb, 3);
	mc_plan_exec_begin(&x, &p, NULL, &r);
	n = run(&x, keep, tried, 8, &started);
	TAP_OK(r.stages[0].planned_bytes == 3 * SZ && r.stages[0].evicted_bytes == SZ,
	       "actual bytes: the evict stage planned enough, one of its three went");
	TAP_OK(n == 4 && tried[0] == 0 && tried[1] == 1 && tried[2] == 2 && tried[3] == 3,
	       "actual bytes: the whole stage is tried, then the fallback for one victim");
	TAP_OK(started == 1 && r.stages[1].ran && r.stages[1].evicted_bytes == SZ &&
		       x.evicted_bytes == 2 * SZ,
	       "actual bytes: the fallback ran and brought the scope to its condition");
	mc_report_free(&r);
	mc_plan_free(&p);
}

/*
 * A shortfall no fallback of its own scope could make up is carried to
 * the next stage that covers it, here the global fallback, which takes
 * exactly what is still missing.
 */
static void
test_shortfall_carried(void)
{
	struct mc_plan p;
	struct mc_report r;
	struct mc_plan_exec x;
	uint32_t a[] = { 0, 1 }, afb[] = { 2 }, b[] = { 4, 5 }, root[] = { 3, 6, 7 }, tried[16];
	/* tenant a: victim 0 leased, its own fallback's only victim busy */
	int keep[8] = { MC_FAIL_LEASED + 1, 0, MC_FAIL_BUSY + 1, 0, 0, 0, 0, 0 };
	unsigned started;
	size_t n;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 8);
	stage(&p, MC_STAGE_EVICT, "tenant=a", 2 * SZ, a, 2);
	fallback(&p, "tenant=a", 2 * SZ, afb, 1);
	stage(&p, MC_STAGE_EVICT, "tenant=b", 2 * SZ, b, 2);
	fallback(&p, "", 4 * SZ, root, 3);
	mc_plan_exec_begin(&x, &p, NULL, &r);
	n = run(&x, keep, tried, 16, &started);
	TAP_OK(r.stages[1].ran && r.stages[1].evicted_bytes == 0,
	       "shortfall: tenant a's fallback ran and could not make up its shortfall");
	TAP_OK(n == 6 && tried[4] == 5 && tried[5] == 3,
	       "shortfall: the global fallback takes one victim, the one still missing (%zu tried)",
	       n);
	TAP_OK(started == 2 && r.stages[3].evicted_bytes == SZ && x.evicted_bytes == 4 * SZ,
	       "shortfall: the root ends at its condition, not past it");
	mc_report_free(&r);
	mc_plan_free(&p);
}

/*
 * The master executes in slices across turns of its event loop: a cursor
 * left mid-stage carries on where it stopped, the stage's report record
 * kept, no victim offered twice.
 */
static void
test_resume_mid_stage(void)
{
	struct mc_plan p, q;
	struct mc_report r, rq;
	struct mc_plan_exec x, y;
	uint32_t v[] = { 0, 1, 2, 3, 4, 5 }, fb[] = { 4, 5 }, tried[8];
	int keep[6] = { 0, MC_FAIL_LEASED + 1, 0, 0, 0, 0 }, none[2] = { 0 };
	uint32_t other[2];
	const struct mc_stage *s;
	unsigned started;
	struct mc_err err;
	uint32_t vi;
	size_t n = 0;
	bool f;
	int rc;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 6);
	stage(&p, MC_STAGE_EVICT, "", 3 * SZ, v, 4);
	fallback(&p, "", 4 * SZ, fb, 2);
	mc_plan_exec_begin(&x, &p, NULL, &r);
	/* the first slice: two victims, one of them refused */
	for (int i = 0; i < 2 && mc_plan_exec_next(&x, &s, &vi, &f, &err) == 1; i++) {
		tried[n++] = vi;
		if (keep[vi] != 0)
			mc_plan_exec_kept(&x, keep[vi] - 1, &err);
		else
			mc_plan_exec_evicted(&x, SZ, 1);
	}
	/* meanwhile another round runs its own plan to the end */
	mc_plan_init(&q);
	mc_report_init(&rq);
	view(&q.view, 2);
	stage(&q, MC_STAGE_EVICT, "", 0, v, 2);
	mc_plan_exec_begin(&y, &q, NULL, &rq);
	run(&y, none, other, 2, &started);
	/* the next slice picks up the first plan mid-stage */
	rc = mc_plan_exec_next(&x, &s, &vi, &f, &err);
	TAP_OK(rc == 1 && vi == 2 && s == &p.stages[0] && r.nstages == 1,
	       "resume: the next slice carries on with the stage's third victim");
	mc_plan_exec_evicted(&x, SZ, 1);
	tried[n++] = vi;
	n += run(&x, keep, tried + n, 8 - n, &started);
	TAP_OK(n == 5 && tried[3] == 3 && tried[4] == 4 && started == 1,
	       "resume: the rest of the stage, then its fallback for the refused victim's bytes");
	TAP_OK(r.nstages == 2 && r.stages[0].evicted_bytes == 3 * SZ &&
		       r.stages[0].nfailures == 1 && r.stages[1].evicted_bytes == SZ &&
		       x.evicted_bytes == 4 * SZ && rq.stages[0].evicted_bytes == 2 * SZ,
	       "resume: one record per stage, the outcomes of every slice in it");
	mc_report_free(&rq);
	mc_plan_free(&q);
	mc_report_free(&r);
	mc_plan_free(&p);
}

/* What the master computes off its loop is what the cursor would sum. */
static void
test_planned_ahead(void)
{
	struct mc_plan p;
	struct mc_report r;
	struct mc_plan_exec x;
	uint32_t ev[] = { 0, 1, 2 }, fb[] = { 3 }, tried[8];
	int keep[4] = { 0 };
	unsigned started;
	uint64_t *planned;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 4);
	stage(&p, MC_STAGE_EVICT, "", SZ, ev, 3);
	fallback(&p, "", SZ, fb, 1);
	planned = mc_plan_exec_planned(&p);
	TAP_OK(planned != NULL && planned[0] == 3 * SZ && planned[1] == SZ,
	       "planned: each stage's victims' bytes");
	mc_plan_exec_begin(&x, &p, planned, &r);
	run(&x, keep, tried, 8, &started);
	TAP_OK(r.nstages == 2 && r.stages[0].planned_bytes == 3 * SZ &&
		       r.stages[1].planned_bytes == SZ && !r.stages[1].ran,
	       "planned: the report carries them");
	free(planned);
	mc_report_free(&r);
	mc_plan_free(&p);
}

static void
test_outcome_required(void)
{
	struct mc_plan p;
	struct mc_report r;
	struct mc_plan_exec x;
	const struct mc_stage *s;
	uint32_t v[] = { 0 }, vi;
	struct mc_err err;
	bool fb;

	mc_plan_init(&p);
	mc_report_init(&r);
	view(&p.view, 1);
	stage(&p, MC_STAGE_EVICT, "", 0, v, 1);
	mc_plan_exec_begin(&x, &p, NULL, &r);
	TAP_OK(mc_plan_exec_next(&x, &s, &vi, &fb, &err) == 1 && vi == 0,
	       "a stage with no target offers its whole list");
	TAP_OK(mc_plan_exec_next(&x, &s, &vi, &fb, &err) == -1 && err.code == MC_ERR_INTERNAL,
	       "asking for the next victim before telling the last one's outcome is an error");
	mc_plan_exec_evicted(&x, SZ, 1);
	TAP_OK(mc_plan_exec_next(&x, &s, &vi, &fb, &err) == 0, "then the plan is done");
	mc_report_free(&r);
	mc_plan_free(&p);
}

int
main(void)
{
	test_evict_stops_at_target();
	test_fallback_covers_the_shortfall();
	test_fallback_on_actual_bytes();
	test_shortfall_carried();
	test_resume_mid_stage();
	test_planned_ahead();
	test_outcome_required();
	return tap_done();
}
