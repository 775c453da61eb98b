/*
 * What eviction's three files share (evict.h says what eviction does):
 * evict_jobs.c keeps the jobs and their metrics, evict_exec.c runs them,
 * evict.c starts them (the triggers, the calls) and owns the evictor.
 * Nothing outside eviction includes this.
 */
#ifndef MASTER_EVICT_JOBS_H
#define MASTER_EVICT_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "mc/err.h"
#include "mc/hash.h"
#include "mc/metrics.h"
#include "mc/parse.h"
#include "mc/planexec.h"
#include "mc/planner.h"
#include "mc/policy.h"
#include "mc/workq.h"
#include "mc/young.h"
#include "candidates.h"
#include "master.h"
#include "offloop.h"
#include "store.h"

enum evict_trigger {
	TRIG_WATERMARK,
	TRIG_NO_SPACE,
	TRIG_QUOTA,
	TRIG_MANUAL,  /* evict_run */
	TRIG_PLAN,    /* evict_plan */
	TRIG_BUDGET,  /* the store at --max-objects */
	TRIG_STALLED, /* a self-evicting peer's heartbeat: its own eviction cannot cover a tier */
	TRIG_COUNT
};
extern const char *const evict_trigger_names[TRIG_COUNT];

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

/* Which pass a victim came from, for the metrics. */
enum pass_kind { PASS_EVICT, PASS_FALLBACK, PASS_SOFT_PINNED, PASS_COUNT };

/* A policy shared by the loop and the plan jobs; freed with its last user. */
struct policy_ref {
	int refs; /* changed on the loop only */
	struct mc_policy p;
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
	/*
	 * A tier's round plans over a window of its coldest copies
	 * (evict_job_build): its size (0: the full view), the copies of the
	 * tier's list as it was sized, and whether the walk stopped at it.
	 */
	size_t window;
	uint64_t window_copies;
	bool window_cut;
	unsigned window_grown; /* plans made again over a bigger window */
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
	struct mc_plan_exec exec; /* the cursor over the plan, filling report */
	/* the victims' bytes (a charged round's cursor also counts their keys and overheads) */
	uint64_t data_bytes;
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

struct quota; /* evict.c */

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
	/* evict_totals */
	struct {
		uint64_t rounds, evicted_bytes, evicted_objects;
	} totals;
	/* Run from the loop after a round ended: the waiting puts try again. */
	void (*rounds_ended)(struct master *m);
	/*
	 * evict.c's, which starts the rounds: a scope's round's target as it
	 * starts (false: nothing to do), and the record of an admin's round.
	 */
	bool (*scope_target)(struct master *m, struct job *j);
	void (*manual_round)(struct master *m, struct job *j);
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
	/* records of the views built, [0] full walks, [1] tier windows; windows grown */
	struct mc_metric *view_records[2], *window_grows;
};

static inline struct evictor *
evictor_of(struct master *m)
{
	return m->ev;
}

enum rest { REST_NONE, REST_COOLDOWN, REST_YOUNG };

/* Drop a reference to a policy; the last frees it. */
void evict_policy_put(struct policy_ref *r);

/* The key of a round's scope, for evict_rest and evict_stall. */
uint64_t evict_scope_key(int kind, uint32_t peer, int tier, uint32_t tenant);
/* Whether key's scope rests now, and why; ahead: for a round no put waits on. */
enum rest evict_rest(struct master *m, uint64_t key, bool ahead);
/* Rest key's scope until (mc_now_ms): for every round, or when ahead for those no put waits on. */
void evict_stall(struct master *m, uint64_t key, uint64_t until, bool ahead);

/*
 * Begin j's view (j->build): a (peer, tier) round's from a window of the
 * tier's coldest copies sized to its target (mc_plan_window), every
 * other job's from the full walk. -1 with err.
 */
int evict_job_build(struct master *m, struct job *j, struct mc_err *err);
/*
 * After j's plan: when it came out short of j's target over a window
 * that left copies out, drop the plan and begin the view again over a
 * window twice as big (true: j->build is set, build it); false: keep
 * the plan.
 */
bool evict_job_regrow(struct master *m, struct job *j, struct mc_err *err, bool *failed);

/* A new job of trigger, its seq taken; NULL when out of memory. */
struct job *evict_job_new(struct master *m, int trigger);
void evict_job_free(struct job *j);
/* Free a finished job, its big memory released on a worker when one is free. */
void evict_job_dispose(struct job *j);

/* The metrics the jobs update (-1: out of memory), and the collector of the gauges. */
int evict_metrics_init(struct master *m);
void evict_collect(struct mc_metrics *r, void *arg);

#endif
