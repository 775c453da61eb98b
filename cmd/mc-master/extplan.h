/*
 * The external planner (mc-master --evict-planner): the command runs as
 * `sh -c 'CMD "$@"' sh --target N [--lowerbound M] [--soft-pinned-pass]`
 * in a process group of its own, reads the view (msgpack) on stdin and
 * writes the plan (msgpack) on stdout. Past the timeout, or when it
 * exits non-zero or writes no valid plan, it fails; the group is killed.
 */
#ifndef MASTER_EXTPLAN_H
#define MASTER_EXTPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/candidates.h"
#include "mc/err.h"
#include "mc/plan.h"

struct extplan {
	const char *cmd;
	uint64_t target;
	uint64_t lowerbound; /* MC_PLAN_DEFAULT_LOWERBOUND: not passed */
	bool soft_pinned_pass;
	uint64_t timeout_ms;
};

/* Plan view with x into out (initialised here; empty on failure). -1 with err. */
int extplan_run(const struct extplan *x, const struct mc_cand_view *view, struct mc_plan *out,
		struct mc_err *err);

#endif
