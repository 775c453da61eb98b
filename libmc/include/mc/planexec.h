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
 * its store) and tells the cursor the outcome before asking for the next:
 * the bytes that really went, or why the victim stays. A stage's
 * shortfall (planned bytes that did not go) is thus carried to the next
 * stage that covers its scope: a fallback, nested or global, makes up
 * what actually is missing, never what was planned.
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
 * Each stage's planned bytes (its victims' bytes in the view), for
 * mc_plan_exec_begin: a caller on an event loop computes them ahead,
 * off the loop, since a reserve may list millions of victims. A
 * malloc'd array the caller frees, or NULL when out of memory.
 */
uint64_t *mc_plan_exec_planned(const struct mc_plan *p);
/*
 * Begin executing p into r (initialised by the caller, its stages
 * appended here). planned: from mc_plan_exec_planned, or NULL to sum
 * each stage's when it opens. The cursor is resumable: a caller may
 * stop between victims for as long as it likes (the master executes in
 * slices across turns of its event loop) and carry on with the next
 * mc_plan_exec_next, as long as p, planned and r stay as they were.
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
