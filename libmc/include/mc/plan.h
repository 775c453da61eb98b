/*
 * Eviction plans and execution reports: what a policy decides and what
 * the master then managed to do (the hierarchical eviction seed).
 *
 * A plan is ordered stages. A stage names its scope path
 * ("tenant=B/type=hidden", "" for global), its kind (evict or fallback),
 * its target and lowerbound in bytes, and its victims in order. A
 * fallback stage runs only while the ACTUAL evicted bytes of the scope it
 * serves (cond_scope) are below cond_lowerbound, and stops as soon as
 * they reach it; the executor checks this against what really went.
 *
 * Stream forms (man/mc-plan.5, man/mc-report.5), one msgpack map a record:
 *   plan:   header {format: "mc-plan", version: 1, created, target,
 *           lowerbound, policy?}, then per stage
 *           {t: "stage", id, scope, kind: "evict"|"fallback", target,
 *            lowerbound, cond_scope?, cond_lowerbound?, soft_pinned?,
 *            victims: [{tenant, key, version, peer, tier, bytes}]},
 *           a long victim list continuing in records {t: "victims", id,
 *           victims} that directly follow their stage
 *   report: header {format: "mc-report", version: 1, created}, then per
 *           stage {t: "stage", id, scope, kind, ran: bool, planned_bytes,
 *            planned_objects, evicted_bytes, evicted_objects,
 *            failures: [{tenant, key, reason}]}, a long failure list
 *           continuing in records {t: "failures", id, failures} that
 *           directly follow their stage
 * Victims reuse the candidate view's name table and key arena, so a plan
 * read from a stream owns an mc_cand_view for its strings.
 */
#ifndef MC_PLAN_H
#define MC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mc/candidates.h"
#include "mc/err.h"

#define MC_PLAN_FORMAT "mc-plan"
#define MC_REPORT_FORMAT "mc-report"
#define MC_PLAN_VERSION 1
#define MC_SCOPE_MAX 512

enum mc_stage_kind { MC_STAGE_EVICT, MC_STAGE_FALLBACK };

/* Why a planned victim was not evicted. */
enum mc_fail_reason {
	MC_FAIL_GONE,	      /* the object or copy no longer exists */
	MC_FAIL_VERSION,      /* a newer version replaced it */
	MC_FAIL_LEASED,	      /* its read lease was renewed */
	MC_FAIL_PINNED,	      /* hard pin, or an active soft pin without the second pass */
	MC_FAIL_GROUP_LEASED, /* another member of its group is leased */
	MC_FAIL_BUSY,	      /* the copy or its object is being written, copied or demoted */
	MC_FAIL_EVICTED,      /* already evicted by an earlier stage */
	MC_FAIL_REASON_COUNT
};
const char *mc_fail_reason_name(int reason);		 /* "gone", "lease renewed", ... */
int mc_fail_reason_from_name(const char *s, size_t len); /* -1 if unknown */

struct mc_stage {
	uint32_t id;
	int kind; /* enum mc_stage_kind */
	char scope[MC_SCOPE_MAX];
	uint64_t target, lowerbound;
	char cond_scope[MC_SCOPE_MAX]; /* fallback: the scope whose lowerbound it serves */
	uint64_t cond_lowerbound;
	/*
	 * The second pass: its victims are active soft pins, evicted only
	 * when the executor allows it (mc-master --allow-evict-soft-pinned).
	 */
	bool soft_pinned;
	uint32_t *victims; /* indices into the plan's view */
	size_t nvictims, cap;
};

struct mc_plan {
	uint64_t created, target, lowerbound;
	char policy[256]; /* a label: the policy file's name, or "" */
	struct mc_stage *stages;
	size_t nstages, cap;
	struct mc_cand_view view; /* the victims' records (strings, sizes) */
};

void mc_plan_init(struct mc_plan *p);
void mc_plan_free(struct mc_plan *p);
/* Append a stage (copied, victims list empty); returns it, or NULL. */
struct mc_stage *mc_plan_add_stage(struct mc_plan *p, int kind, const char *scope, uint64_t target,
				   uint64_t lowerbound, struct mc_err *err);
/* Append candidate index i of p->view to stage s. */
int mc_stage_add_victim(struct mc_stage *s, uint32_t i, struct mc_err *err);

int mc_plan_write(FILE *f, const struct mc_plan *p, bool json, struct mc_err *err);
int mc_plan_read(FILE *f, struct mc_plan *p, bool json, struct mc_err *err);

/* ---- reports ---- */

struct mc_stage_failure {
	uint32_t victim; /* index into the plan's view */
	int reason;	 /* enum mc_fail_reason */
};

struct mc_stage_report {
	uint32_t id;
	int kind;
	char scope[MC_SCOPE_MAX];
	bool ran; /* false: a fallback whose condition was already met */
	uint64_t planned_bytes, planned_objects, evicted_bytes, evicted_objects;
	struct mc_stage_failure *failures;
	size_t nfailures, cap;
};

/* Longest trigger or scope name of a round, NUL included. */
#define MC_ROUND_NAME_MAX 64

/*
 * What an eviction round was for, as the master saw it when the round
 * started: the target is what was over the scope's low mark, plus what
 * the puts waiting on the round need (usage_at_start + waiting - low).
 */
struct mc_round {
	char trigger[MC_ROUND_NAME_MAX]; /* watermark, no_space, quota, manual */
	char scope[MC_ROUND_NAME_MAX];	 /* "peer 3 dram", "tenant a", "" for all */
	uint64_t queued_at, started_at;	 /* ms since the epoch */
	uint64_t usage_at_start, low, waiting, target;
};

struct mc_report {
	uint64_t created;
	bool has_round; /* round below is filled */
	struct mc_round round;
	struct mc_stage_report *stages;
	size_t nstages, cap;
};

void mc_report_init(struct mc_report *r);
void mc_report_free(struct mc_report *r);
struct mc_stage_report *mc_report_add_stage(struct mc_report *r, const struct mc_stage *s,
					    struct mc_err *err);
int mc_stage_report_fail(struct mc_stage_report *sr, uint32_t victim, int reason,
			 struct mc_err *err);
/* Written with the plan's view for the victims' names. */
int mc_report_write(FILE *f, const struct mc_report *r, const struct mc_plan *p, bool json,
		    struct mc_err *err);
/*
 * Read a report stream (msgpack, or JSON lines when json) into r
 * (initialised here); the failed victims' tenants and keys go into
 * names, whose candidates are the failures in order (failure.victim
 * indexes names). -1 with err naming the record on bad input.
 */
int mc_report_read(FILE *f, struct mc_report *r, struct mc_cand_view *names, bool json,
		   struct mc_err *err);

#endif
