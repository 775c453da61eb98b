/*
 * Eviction jobs: trigger -> view -> plan -> revalidated execution (see
 * evict.h). Everything here runs on the event loop except the planning,
 * which a job on the evictor's worker queue does over data only the job
 * owns (the view, a reference to the policy, the plan bytes), and the
 * release of a finished job's memory. The queue's completion brings the
 * plan back to the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "extplan.h"
#include "request.h"
#include "master.h"
#include "offloop.h"
#include "ops.h"

/* Queued jobs at most; a request beyond it is refused as busy. */
#define JOBS_MAX 64
/* A slice yields after this long even when victims remain. */
#define SLICE_NS 500000ull
/*
 * The evictor's workers: one plans while another releases the memory of
 * the round before (or of a big answer just sent). A release that finds
 * the queue full happens on the loop.
 */
#define WORKERS 2
#define WORK_WAITING_MAX 256
/* Objects the view build visits between clock checks. */
#define BUILD_CHUNK 512
/* The largest plan evict_plan takes. */
#define PLAN_MAX_BYTES (1ull << 30)
/*
 * A scope whose round freed nothing (everything leased or pinned, say)
 * starts no other round for this long, so a stream of puts cannot keep
 * the master building views that free nothing.
 */
#define STALL_MS 100
/* Scopes remembered as stalled at once. */
#define STALLED_MAX 64

static const char *const trigger_names[TRIG_COUNT] = {
	[TRIG_WATERMARK] = "watermark", [TRIG_NO_SPACE] = "no_space", [TRIG_QUOTA] = "quota",
	[TRIG_BUDGET] = "budget",	[TRIG_MANUAL] = "manual",     [TRIG_PLAN] = "plan",
	[TRIG_STALLED] = "stalled",
};

/* Which pass a victim came from, for the metrics. */
enum pass_kind { PASS_EVICT, PASS_FALLBACK, PASS_SOFT_PINNED, PASS_COUNT };
static const char *const pass_names[PASS_COUNT] = { "evict", "fallback", "soft_pinned" };

/* A policy shared by the loop and the plan jobs; freed with its last user. */
struct policy_ref {
	int refs; /* changed on the loop only */
	struct mc_policy p;
};

struct quota {
	char *tenant;
	uint64_t bytes;
};

enum phase { PH_QUEUED, PH_BUILD, PH_PLAN, PH_EXEC };

/*
 * What an automatic round is for. A watermark scope is one (peer, tier):
 * the watermark and no-space triggers share its round. A quota scope is
 * one tenant. The store scope is every object, for --max-objects. At
 * most one round runs or waits per scope.
 */
enum scope_kind { SCOPE_NONE, SCOPE_TIER, SCOPE_TENANT, SCOPE_STORE };

struct job {
	struct job *next;
	struct master *m;
	int trigger;
	int phase;
	struct cand_filter filter;
	bool empty; /* the filter names nothing that exists: plan nothing */
	uint64_t target, lowerbound;
	/* evict_run's percentages, of the view's bytes and of the target: applied once built */
	struct mc_amount pct_target, pct_lowerbound;
	bool dry_run;
	bool export_view;   /* a `candidates` call: build and answer the view, no round */
	struct mc_req *req; /* deferred request to answer, or NULL */
	bool says_kind;	    /* evict_run: the answer names its kind (plan or report) */
	uint64_t seq;	    /* in queue order: evict_rounds_done compares against it */
	int scope;	    /* enum scope_kind */
	uint64_t key;	    /* the scope (UINT64_MAX: none, the job is no scope's round) */
	uint64_t waiting;   /* bytes the puts waiting on this round need */
	struct mc_round round;
	bool has_round; /* round filled: a round with a target ran */
	/* evict_plan: the plan's bytes, parsed by the worker */
	char *plan_bytes;
	size_t plan_len;
	/* build and plan */
	struct cand_build *build;
	struct mc_cand_view view;
	struct cand_caps caps; /* for the view's probationary segment, applied by the thread */
	struct policy_ref *policy;
	const char *planner_cmd;
	uint64_t planner_timeout_ms;
	bool soft_pinned_pass;
	struct mc_plan plan;
	bool have_plan;
	int plan_rc;
	struct mc_err plan_err;
	bool planner_failed; /* the external planner failed; the built-in one planned */
	uint64_t *planned;   /* per stage: its victims' bytes, summed by the thread */
	struct blob *answer; /* encoded off the loop: a view or a dry run's plan */
	char planner_why[MC_ERR_MSG_MAX];
	/* execute */
	struct mc_report report;
	struct mc_plan_exec exec;     /* the cursor over the plan, filling report */
	int64_t *tenant_of, *peer_of; /* per plan name id: -2 unresolved, -1 unknown */
	int8_t *tier_of;
	struct mc_htab done; /* identities of copies this job evicted */
	/* Young copies (mc/young.h): those the view held (as kept), those the round took */
	struct mc_young_tally young;
	bool young_left_out;
	uint64_t t0, t_plan, t_exec; /* mc_mono_ns() */
};

struct stalled {
	uint64_t key;
	uint64_t until; /* mc_now_ms(): a cooldown, on the injectable clock */
	/* the same for rounds no put waits on: until the first young copy ages */
	uint64_t ahead_until;
};

struct evictor {
	struct policy_ref *policy;
	struct quota *quotas;
	size_t nquotas;
	uint64_t *quota_of; /* per tenant id; UINT64_MAX: not looked up */
	uint32_t nquota_of;
	struct job *running;
	struct job *head, *tail;
	size_t queued;
	struct stalled stalled[STALLED_MAX];
	unsigned nstalled;
	uint64_t next_seq, done_seq;
	struct evict_totals totals;
	/* Run from the loop after a round ended: the waiting puts try again. */
	void (*rounds_ended)(struct master *m);
	struct event *ended_ev;
	struct event *step_ev;
	struct mc_workq *wq;
	struct event *wq_ev; /* runs wq's completions on the loop */
	bool stopping;	     /* evict_free: completions change nothing */
	/* metrics */
	struct mc_metric *rounds[TRIG_COUNT];
	struct mc_metric *bytes[PASS_COUNT][TRIG_COUNT];
	struct mc_metric *objects[PASS_COUNT][TRIG_COUNT];
	struct mc_metric *failures[MC_FAIL_REASON_COUNT];
	struct mc_metric *fallbacks[MC_POLICY_MAX_DEPTH + 1];
	struct mc_metric *planner_fallbacks;
	struct mc_metric *build_seconds, *plan_seconds, *exec_seconds;
	struct mc_metric *slice_seconds;
	/* watermark rounds a self-evicting tier did not get */
	struct mc_metric *skipped_self_evict;
	/* rounds no put waited on, not run while young copies hold their scope */
	struct mc_metric *skipped_young;
	struct mc_metric *young, *young_bytes;
};

static struct evictor *
evictor_of(struct master *m)
{
	return m->ev;
}

static void job_next(struct master *m);
static bool scope_target(struct master *m, struct job *j);
static void manual_round(struct master *m, struct job *j);
static void ended_cb(evutil_socket_t fd, short what, void *arg);

/* ---- policy and quotas ---- */

static void
policy_put(struct policy_ref *r)
{
	if (r != NULL && --r->refs == 0) {
		mc_policy_free(&r->p);
		free(r);
	}
}

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
	struct store *s = &m->store;

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
		policy_put(*pol);
		return -1;
	}
	return 0;
}

static void
install_config(struct master *m, struct policy_ref *pol, struct quota *q, size_t nq)
{
	struct evictor *e = evictor_of(m);

	policy_put(e->policy);
	e->policy = pol;
	quotas_free(e->quotas, e->nquotas);
	e->quotas = q;
	e->nquotas = nq;
	free(e->quota_of);
	e->quota_of = NULL;
	e->nquota_of = 0;
	for (uint32_t t = 0; t < m->store.ntenants; t++)
		m->store.tenants[t].quota = 0;
	for (uint32_t t = 0; t < m->store.ntenants; t++)
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

/* ---- the job queue ---- */

static uint64_t
scope_key(int kind, uint32_t peer, int tier, uint32_t tenant)
{
	return ((uint64_t)kind << 60) ^ ((uint64_t)peer << 28) ^ ((uint64_t)tier << 24) ^ tenant;
}

enum rest { REST_NONE, REST_COOLDOWN, REST_YOUNG };

/* Whether key's scope rests now, and why; ahead: for a round no put waits on. */
static enum rest
stalled(struct master *m, uint64_t key, bool ahead)
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
static void
stall(struct master *m, uint64_t key, uint64_t until, bool ahead)
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

static struct job *
job_new(struct master *m, int trigger)
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
	snprintf(j->round.trigger, sizeof(j->round.trigger), "%s", trigger_names[trigger]);
	mc_cand_view_init(&j->view);
	mc_plan_init(&j->plan);
	mc_report_init(&j->report);
	mc_htab_init(&j->done);
	return j;
}

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	candidates_end(j->build);
	caps_free(&j->caps);
	mc_cand_view_free(&j->view);
	mc_plan_free(&j->plan);
	mc_report_free(&j->report);
	mc_htab_free(&j->done);
	policy_put(j->policy);
	free(j->plan_bytes);
	blob_free(j->answer);
	free(j->planned);
	free(j->tenant_of);
	free(j->peer_of);
	free(j->tier_of);
	free(j);
}

static int
job_queue(struct master *m, struct job *j)
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
	job_free(j);
}

/* A release the queue cancelled (it is being freed) happens here instead. */
static void
free_done(void *arg, bool cancelled)
{
	if (cancelled)
		job_free(arg);
}

/*
 * Free a finished job. A round's view and plan can be hundreds of
 * megabytes, and handing that many pages back to the kernel takes
 * milliseconds, so a worker does it when one is free.
 */
static void
job_dispose(struct job *j)
{
	policy_put(j->policy); /* the count belongs to the loop */
	j->policy = NULL;
	if (mc_workq_submit(evictor_of(j->m)->wq, free_work, free_done, j, NULL) != 0)
		job_free(j);
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
		mc_warn("eviction round (%s) failed: %s", trigger_names[j->trigger], err->msg);
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
			trigger_names[j->trigger], (unsigned long long)j->exec.evicted_objects,
			(unsigned long long)j->exec.evicted_bytes, (double)(end - j->t0) / 1e6,
			(unsigned long long)j->exec.fallbacks);
	}
	/*
	 * A round that left young copies out: no round ahead of need finds
	 * more until the first of them ages, but a put that needs their room
	 * may have its round at once. Any other round of a scope that freed
	 * nothing: its scope rests a moment.
	 */
	if (j->key != UINT64_MAX && j->young_left_out && j->young.until != UINT64_MAX)
		stall(m, j->key, j->young.until, true);
	else if (j->key != UINT64_MAX && j->has_round && j->exec.evicted_bytes == 0)
		stall(m, j->key, mc_now_ms() + STALL_MS, false);
	if (j->young.taken > 0) {
		mc_young_log(&j->young, j->round.scope[0] != '\0' ? j->round.scope : "all copies",
			     j->scope == SCOPE_NONE ? "an operator's round asked for them"
						    : MC_YOUNG_FOR_WRITE);
		mc_metric_add(e->young, (double)j->young.taken);
		mc_metric_add(e->young_bytes, (double)j->young.taken_bytes);
	}
	answer(j);
	e->totals.evicted_bytes += j->exec.evicted_bytes;
	e->totals.evicted_objects += j->exec.evicted_objects;
	e->running = NULL;
	e->done_seq = j->seq;
	job_dispose(j);
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
	return store_tenant_find(&m->store, name, strlen(name));
}

/* A peer as views name it: its address, or "peer-ID". */
static int64_t
resolve_peer(struct master *m, const char *name)
{
	const struct peer *p;
	char *end;

	if (strncmp(name, "peer-", 5) == 0) {
		unsigned long id = strtoul(name + 5, &end, 10);

		if (*end == '\0' && end != name + 5 && (p = peers_find(&m->peers, id)) != NULL)
			return p->id;
	}
	p = peers_find_addr(&m->peers, name);
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

/*
 * Evict one victim: the copy it names, or for a member of a group every
 * copy of every member. Returns -1 with *reason when it must stay.
 */
static int
evict_victim(struct master *m, struct job *j, const struct mc_stage *s, uint32_t vi,
	     uint64_t *bytes, uint64_t *copies, int *reason)
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
	o = store_find(&m->store, store_key_hash((uint32_t)tenant, key, c->key_len),
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
		struct group *g = store_group_get(&m->store, o->group);

		if (g != NULL) {
			int why = group_blocks(m, s, g, now);

			if (why >= 0) {
				*reason = why;
				return -1;
			}
			/* All or none: the whole group goes, every copy of every member. */
			*bytes = *copies = 0;
			while (g->n > 0) {
				struct mobj *mo = g->members[g->n - 1];
				bool last = g->n == 1;

				*bytes += object_bytes(m, mo);
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
		uint64_t bytes = 0, copies = 0;
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
		if (evict_victim(m, j, s, vi, &bytes, &copies, &reason) == 0) {
			mc_plan_exec_evicted(&j->exec, bytes, copies);
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
	candidates_end(j->build);
	j->build = NULL;
	if (rc < 0) {
		job_fail(j, &err);
		job_finish(m, j);
		return;
	}
	mc_metric_observe(evictor_of(m)->build_seconds, (double)(mc_mono_ns() - j->t0) / 1e9);
	start_plan(m, j);
}

static void step(struct master *m, struct job *j);

/* One slice of the running job, timed: the longest is what reads waited. */
static void
step_cb(evutil_socket_t fd, short what, void *arg)
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
	if (j->scope != SCOPE_NONE && !scope_target(m, j)) {
		/* Other rounds or removals made the room already. */
		job_finish(m, j);
		return;
	}
	if (j->scope == SCOPE_NONE && !j->export_view && j->plan_bytes == NULL)
		manual_round(m, j);
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
	j->build = candidates_begin(m, &j->filter, &j->view, &err);
	if (j->build == NULL) {
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

/* ---- triggers ---- */

/*
 * Bytes on a peer tier that upserts in progress will free when they
 * commit: the older copies they replace. A round that counted them
 * would free that much below the low mark once the writes end.
 */
static uint64_t
superseded(struct master *m, uint32_t peer, int tier)
{
	struct pending *p;
	size_t cur = 0;
	uint64_t sum = 0;

	while ((p = mc_htab_next(&m->store.pending, &cur)) != NULL) {
		const struct mobj *o = p->o;
		const struct mrep *v = obj_creps(o);

		if (!p->upsert || p->committed)
			continue;
		/* a moving copy's bytes are counted as going already (peer_tier_staying) */
		for (unsigned i = 0; i < o->nrep; i++)
			if (v[i].version != p->version && v[i].peer == peer && v[i].tier == tier &&
			    !v[i].moving)
				sum += o->size;
	}
	return sum;
}

/* A peer tier's usage that stays, low mark and capacity; false when it is not live. */
static bool
tier_usage(struct master *m, uint32_t peer, int tier, uint64_t *used, uint64_t *low, uint64_t *cap)
{
	const struct peer *p = peers_find(&m->peers, peer);
	const struct peer_tier *pt;
	uint64_t going;

	if (p == NULL || !peer_alive(p, m->cfg.peer_ttl) || !p->tiers[tier].present)
		return false;
	pt = &p->tiers[tier];
	going = superseded(m, peer, tier);
	*used = peer_tier_staying(pt) > going ? peer_tier_staying(pt) - going : 0;
	*cap = pt->capacity;
	*low = (uint64_t)((double)pt->capacity * peer_tier_low(pt, m->cfg.evict_low));
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
 * The store's round: the objects above the budget's low mark, plus one
 * for each put waiting on it. Plans count bytes, so the target is those
 * objects at the store's mean object size; the round's record gives the
 * store's bytes against the low mark at that size.
 */
static bool
store_target(struct master *m, struct job *j)
{
	struct mc_round *rd = &j->round;
	uint64_t count = m->store.objects.count, want = mc_add_sat(count, j->waiting);
	uint64_t low = (uint64_t)((double)m->cfg.max_objects * m->cfg.evict_low), mean;

	if (m->cfg.max_objects == 0 || count == 0 || want <= low)
		return false;
	mean = m->store.bytes / count > 0 ? m->store.bytes / count : 1;
	snprintf(rd->scope, sizeof(rd->scope), "store of %llu objects", (unsigned long long)count);
	rd->usage_at_start = m->store.bytes;
	rd->low = low * mean;
	rd->waiting = j->waiting * mean;
	rd->target = round_cap(m, (want - low) * mean);
	j->target = rd->target;
	if (m->cfg.evict_lowerbound >= 0)
		j->lowerbound = (uint64_t)((double)j->target * m->cfg.evict_lowerbound);
	j->has_round = true;
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
		uint64_t quota = quota_of(m, j->filter.tenant);

		if (quota == 0 || j->filter.tenant >= m->store.ntenants)
			return false;
		used = m->store.tenants[j->filter.tenant].bytes;
		low = (uint64_t)((double)quota * m->cfg.evict_low);
		snprintf(rd->scope, sizeof(rd->scope), "tenant %.50s",
			 m->store.tenants[j->filter.tenant].name);
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

	if (f->by_tenant && f->tenant < m->store.ntenants) {
		used = m->store.tenants[f->tenant].bytes;
		snprintf(rd->scope, sizeof(rd->scope), "tenant %.50s",
			 m->store.tenants[f->tenant].name);
	} else {
		for (uint32_t i = 0; i < m->peers.n; i++) {
			const struct peer *p = m->peers.v[i];

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
	switch (stalled(m, key, need == 0)) {
	case REST_NONE:
		break;
	case REST_YOUNG:
		mc_metric_inc(e->skipped_young);
		return 0;
	default:
		return 0;
	}
	j = job_new(m, trigger);
	if (j == NULL)
		return 0;
	j->scope = kind;
	j->filter = *f;
	j->key = key;
	j->waiting = need;
	seq = j->seq;
	/* Read before queueing: a round with nothing to do ends inside job_queue. */
	if (job_queue(m, j) != 0) {
		job_free(j);
		return 0;
	}
	return seq;
}

static uint64_t
tier_round(struct master *m, int trigger, uint32_t peer, int tier, uint64_t need)
{
	struct cand_filter f = { .by_peer = true, .peer = peer, .by_tier = true, .tier = tier };

	return scope_round(m, trigger, SCOPE_TIER, &f, scope_key(SCOPE_TIER, peer, tier, 0), need);
}

/* A peer tier over its high watermark starts its round (from now on it is watched). */
static void
check_tier(struct master *m, struct peer *p, int t)
{
	struct peer_tier *pt = &p->tiers[t];

	if (!pt->present || pt->capacity == 0 ||
	    (double)peer_tier_staying(pt) <=
		    (double)pt->capacity * peer_tier_high(pt, m->cfg.evict_high))
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
	struct peer *p = peers_find(&m->peers, peer);

	if (p != NULL && tier >= 0 && tier < MC_TIER_COUNT)
		check_tier(m, p, tier);
}

static uint64_t
store_round(struct master *m, int trigger, uint64_t need)
{
	struct cand_filter f = { 0 };

	return scope_round(m, trigger, SCOPE_STORE, &f, scope_key(SCOPE_STORE, 0, 0, 0), need);
}

void
evict_check_watermarks(struct master *m)
{
	if (m->cfg.max_objects > 0 &&
	    (double)m->store.objects.count > (double)m->cfg.max_objects * m->cfg.evict_high)
		store_round(m, TRIG_BUDGET, 0);
	for (uint32_t i = 0; i < m->peers.n; i++) {
		struct peer *p = m->peers.v[i];

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

/* What the master counts on a peer's tier (0 for one it does not know). */
static uint64_t
peer_tier_used(struct master *m, uint32_t peer, int tier)
{
	const struct peer *p = peers_find(&m->peers, peer);

	return p != NULL ? p->tiers[tier].used : 0;
}

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
	const struct peer *p = peers_find(&m->peers, peer);
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

uint64_t
evict_no_space(struct master *m, uint64_t size, unsigned replicas, int tier, bool *helps)
{
	struct no_space_cand c[PEERS_MAX];
	unsigned n = 0, taken = 0;
	uint64_t seq = 0;
	bool moves = false;

	*helps = false;
	for (uint32_t i = 0; i < m->peers.n && n < PEERS_MAX; i++) {
		const struct peer *p = m->peers.v[i];

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
			   peer_self_evicts(peers_find(&m->peers, c[taken].peer), c[taken].tier)) {
			/*
			 * The peer makes the room itself: no round, wait for its
			 * copy_dropped / copy_moved notices (or a heartbeat) to free it.
			 */
			ask_room(m, c[taken].peer, c[taken].tier, c[taken].need,
				 peer_tier_used(m, c[taken].peer, c[taken].tier));
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
	uint64_t quota = quota_of(m, tenant);
	const struct tenant *t = &m->store.tenants[tenant];
	struct cand_filter f = { .by_tenant = true, .tenant = tenant };

	if (quota == 0 || add == 0 || t->bytes + add <= quota)
		return 0;
	/* It would not fit in an empty tenant: evicting would only lose the cache. */
	if (add > quota)
		return mc_err_set(err, MC_ERR_QUOTA,
				  "%llu bytes are more than tenant '%s''s whole quota of %llu",
				  (unsigned long long)add, t->name, (unsigned long long)quota);
	*helps = true;
	if (round != NULL)
		*round = scope_round(m, TRIG_QUOTA, SCOPE_TENANT, &f,
				     scope_key(SCOPE_TENANT, 0, 0, tenant), add);
	return mc_err_set(err, MC_ERR_QUOTA,
			  "tenant '%s' over its quota: %llu + %llu bytes of %llu; eviction started",
			  t->name, (unsigned long long)t->bytes, (unsigned long long)add,
			  (unsigned long long)quota);
}

int
evict_objects_check(struct master *m, uint64_t *round, bool *helps, struct mc_err *err)
{
	uint64_t count = m->store.objects.count;

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
	*out = evictor_of(m)->totals;
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
	for (uint32_t i = 0; i < m->peers.n; i++) {
		struct peer *p = m->peers.v[i];

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
		job_free(j);
		/* The connection is gone: this only frees the request (and its hold on it). */
		mc_reply_err(req, MC_ERR_UNAVAILABLE, "connection lost");
		return;
	}
	if (job_queue(m, j) != 0) {
		handler_fail(req, MC_ERR_BUSY, "too many eviction rounds queued");
		j->req = NULL;
		job_free(j);
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
	j = job_new(m, TRIG_PLAN);
	if (j == NULL || (j->plan_bytes = malloc(len)) == NULL)
		goto oom;
	j->plan_len = len;
	d = mc_req_defer(req);
	if (d == NULL)
		goto oom;
	j->req = d;
	if (mc_req_recv_bulk(d, j->plan_bytes, plan_received, j) != 0) {
		j->req = NULL;
		job_free(j);
		handler_fail(d, MC_ERR_INTERNAL, "cannot receive the plan");
	}
	return;
oom:
	job_free(j);
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

	j = job_new(m, TRIG_MANUAL);
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
	job_queue(m, j);
	return;
fail:
	job_free(j);
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
	j = job_new(m, TRIG_MANUAL);
	if (j == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	j->export_view = true;
	j->filter = *f;
	j->empty = empty;
	j->req = mc_req_defer(req);
	if (j->req == NULL) {
		job_free(j);
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	}
	job_queue(m, j);
	return 0;
}

/*
 * candidates {peer_id?, tier?, tenant?} -> {count, len} + the stream:
 * built in slices and encoded off the loop, as an eviction round's view is.
 */
static void
h_candidates(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct cand_filter f = { 0 };
	struct mc_err err = { 0 };
	bool none = false;

	if (candidates_filter_parse(m, req->params, &f, &none, &err) < 0 ||
	    export_view(m, req, &f, none, &err) < 0)
		handler_fail(req, err.code, "%s", err.msg);
}

/* ---- life cycle and metrics ---- */

static const char skipped_help[] =
	"Watermark rounds not run, by why (self_evict: the peer evicts that tier itself; "
	"young: only copies younger than --young would go).";

static int
metrics_init(struct master *m)
{
	struct evictor *e = evictor_of(m);
	struct mc_metrics *r = m->mx.reg;
	char label[64];

	for (int t = 0; t < TRIG_COUNT; t++) {
		e->rounds[t] = mc_metric_get(r, "mc_evict_rounds_total", MC_COUNTER,
					     "Eviction rounds started, by trigger.", "trigger",
					     trigger_names[t]);
		for (int p = 0; p < PASS_COUNT; p++) {
			snprintf(label, sizeof(label), "%s,%s", pass_names[p], trigger_names[t]);
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
	return e->planner_fallbacks != NULL && e->build_seconds != NULL && e->young != NULL &&
			       e->young_bytes != NULL && e->skipped_young != NULL &&
			       e->skipped_self_evict != NULL && e->plan_seconds != NULL &&
			       e->exec_seconds != NULL && e->slice_seconds != NULL
		       ? 0
		       : -1;
}

static void
evict_collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;

	struct evictor *e = evictor_of(m);

	mc_metric_set(mc_metric_get(r, "mc_evict_queued", MC_GAUGE,
				    "Eviction rounds waiting, the running one included.", NULL,
				    NULL),
		      (double)(e->queued + (e->running != NULL)));
	unsigned self_evicting = 0;
	for (uint32_t i = 0; i < m->peers.n; i++)
		self_evicting += m->peers.v[i]->self_evict != 0;
	mc_metric_set(mc_metric_get(r, "mc_peers_self_evicting", MC_GAUGE,
				    "Registered peers that evict at least one tier themselves.",
				    NULL, NULL),
		      (double)self_evicting);
	for (uint32_t i = 0; i < m->peers.n; i++) {
		const struct peer *p = m->peers.v[i];

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
	if (load_config(m, &pol, &q, &nq, err) != 0)
		return -1;
	install_config(m, pol, q, nq);
	if ((e->wq = mc_workq_new(WORKERS, WORK_WAITING_MAX, OFFLOOP_NICE, err)) == NULL)
		return -1;
	e->step_ev = evtimer_new(m->base, step_cb, m);
	e->ended_ev = event_new(m->base, -1, 0, ended_cb, m);
	e->wq_ev = offloop_watch(m->base, e->wq);
	if (e->step_ev == NULL || e->wq_ev == NULL || e->ended_ev == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot set up eviction events");
	if (metrics_init(m) != 0)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for eviction metrics");
	mc_metrics_on_collect(m->mx.reg, evict_collect, m);
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
		job_free(e->running);
		e->running = NULL;
	}
	while ((j = e->head) != NULL) {
		e->head = j->next;
		j->req = NULL;
		job_free(j);
	}
	e->tail = NULL;
	e->queued = 0;
	if (e->step_ev != NULL)
		event_free(e->step_ev);
	if (e->ended_ev != NULL)
		event_free(e->ended_ev);
	policy_put(e->policy);
	quotas_free(e->quotas, e->nquotas);
	free(e->quota_of);
	free(e);
	m->ev = NULL;
}

const struct mc_method evict_methods[] = {
	{ "candidates", h_candidates, MC_METHOD_ADMIN | MC_METHOD_BULK | MC_METHOD_READ_ONLY },
	{ "evict_plan", h_evict_plan, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ "evict_run", h_evict_run, MC_METHOD_ADMIN | MC_METHOD_BULK },
	{ NULL, NULL, 0 },
};
