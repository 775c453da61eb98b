/*
 * mc-evict-plan: the pure planning filter of the eviction pipeline
 *   mc-cli candidates | mc-evict-plan -p POLICY --target 2GiB | mc-cli evict --plan -
 * A candidate view (man/mc-candidates.5) in, a plan (man/mc-plan.5) out,
 * made by the same libmc planner the master links: no sockets, no clock.
 *
 * main declares the options and checks how they go together; run.c does
 * the reading, planning and writing. No command talks to a master.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/tool.h"
#include "evictplan.h"

struct evictplan ep;

/* mc_set_amount, keeping the text for messages and to know it was given. */
static int
amount_set(const char *v, void *target, char *why)
{
	struct amount *a = target;

	if (mc_set_amount(v, &a->v, why) < 0)
		return -1;
	a->text = v;
	return 0;
}

static const struct mc_opt opts[] = {
	{ "policy", 'p', "FILE", NULL, "the eviction policy (default: global `evict lease`)",
	  mc_set_str, &ep.policy },
	{ "target", 0, "SIZE", NULL, "bytes to free, or a percentage of the view's bytes (\"20%\")",
	  amount_set, &ep.target },
	{ "lowerbound", 0, "SIZE", NULL,
	  "bytes that must go at the least, or a percentage of the target (default: the policy's)",
	  amount_set, &ep.lowerbound },
	{ "soft-pinned-pass", 0, NULL, NULL,
	  "add the second pass over soft-pinned candidates whose lease expired", mc_set_flag,
	  &ep.soft_pinned_pass },
	{ "json", 0, NULL, NULL, "write the plan as JSON lines instead of msgpack", mc_set_flag,
	  &ep.json },
	{ "explain", 0, NULL, NULL, "print the scope tree for people instead of the plan",
	  mc_set_flag, &ep.explain },
	{ "check", 0, NULL, NULL, "only load the policy and report whether it is good", mc_set_flag,
	  &ep.check },
	{ "input", 'i', "FILE", NULL, "read the candidate view from FILE (default: stdin)",
	  mc_set_str, &ep.input },
	{ 0 },
};

static int
run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (ep.check)
		return evictplan_check();
	if (ep.target.text == NULL)
		mc_die(MC_EXIT_USAGE, "missing --target SIZE|PCT (the bytes to free)");
	if (ep.json && ep.explain)
		mc_die(MC_EXIT_USAGE, "invalid --json: --explain prints text, not a plan");
	return evictplan_run();
}

static const struct mc_tool_cmd plan = {
	.args = "[-p POLICY] --target SIZE|PCT [--lowerbound SIZE|PCT] "
		"[--soft-pinned-pass] [--json | --explain] [-i FILE]\n"
		"       mc-evict-plan [-p POLICY] --check",
	.run = run,
	.opts = opts,
};

static const struct mc_tool tool = {
	.prog = "mc-evict-plan",
	.summary = "plan an eviction: a candidate view on stdin, a plan on stdout",
	.single = &plan,
};

int
main(int argc, char **argv)
{
	/*
	 * A filter dies quietly when its reader goes away, as cat does; the
	 * master ignores SIGPIPE and its children would inherit that.
	 */
	signal(SIGPIPE, SIG_DFL);
	return mc_tool_main(&tool, argc, argv);
}
