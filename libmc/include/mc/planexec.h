/*
 * Executing a plan: the cursor every executor drives, the master's
 * rounds and the offline simulator alike, so that one set of rules
 * decides what a plan means (seed "hierarchical eviction"):
 *   - stages run in plan order;
 *   - an evict stage stops once its own evicted bytes reach its target;
 *   - a fallback stage runs only while the bytes actually evicted inside
 *     its condition scope (by every stage within it) are below its
 *     condition, and stops the moment they reach it; one that never
 *     starts is reported as not run;
 *   - every victim tried is accounted in the report: evicted (bytes and
 *     copies) or kept, with its reason.
 * The caller revalidates and evicts each victim itself (it alone knows
 * its store) and tells the cursor the outcome before asking for the next.
 */
#ifndef MC_PLANEXEC_H
#define MC_PLANEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/plan.h"

struct mc_plan_exec {
	const struct mc_plan *plan;
	struct mc_report *report;
	const uint64_t *planned; /* per stage: its victims' bytes, or NULL */
	size_t stage, victim;
	bool open;    /* the current stage has its report record */
	bool pending; /* a victim was handed out and awaits its outcome */
	uint64_t evicted_bytes, evicted_objects;
	uint64_t fallbacks; /* fallback stages that ran */
};

/*
 * Begin executing p into r (initialised by the caller, its stages
 * appended here). planned: each stage's planned bytes, or NULL to sum
 * them from the view when a stage opens.
 */
void mc_plan_exec_begin(struct mc_plan_exec *x, const struct mc_plan *p, const uint64_t *planned,
			struct mc_report *r);
/*
 * The next victim to try: 1 with *stage and *victim (an index into the
 * plan's view), 0 when the plan is done, -1 with err when the report
 * cannot grow. *fallback_started is set when this is the first victim
 * of a fallback stage that runs.
 */
int mc_plan_exec_next(struct mc_plan_exec *x, const struct mc_stage **stage, uint32_t *victim,
		      bool *fallback_started, struct mc_err *err);
/* The victim handed out went: bytes and copies freed. */
void mc_plan_exec_evicted(struct mc_plan_exec *x, uint64_t bytes, uint64_t copies);
/* The victim handed out stays, for reason (enum mc_fail_reason); -1 with err. */
int mc_plan_exec_kept(struct mc_plan_exec *x, int reason, struct mc_err *err);

#endif
