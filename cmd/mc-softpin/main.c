/*
 * mc-softpin: look at and drive the master's soft pins: one key's state,
 * the active deadlines in order, the index and gauge, a cleanup cycle.
 *
 * The command table is all there is here: mc_tool_main parses the
 * command line (so `mc-softpin ls --json` works), connects to the master
 * and dispatches to commands.c.
 */
#include "mc/tool.h"
#include "softpin.h"

struct spctl sp;

static int
set_due_within(const char *v, void *target, char *why)
{
	(void)target;
	if (mc_set_duration(v, &sp.due_within_ms, why) < 0)
		return -1;
	sp.has_due_within = true;
	return 0;
}

static const struct mc_opt opts[] = {
	{ "json", 0, NULL, NULL, "print JSON (one object per line) instead of text", mc_set_flag,
	  &sp.json },
	{ 0 },
};

static const struct mc_opt ls_opts[] = {
	{ "due-within", 0, "DURATION", NULL, "only pins whose deadline is at most this far off",
	  set_due_within, NULL },
	{ "limit", 0, "N", NULL, "list at most N pins (default 1000)", mc_set_positive_int,
	  &sp.limit },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ .name = "show",
	  .args = "KEY",
	  .help = "show KEY's soft-pin state, deadline and remaining time",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cmd_show,
	  .flags = MC_TOOL_MASTER },
	{ .name = "ls",
	  .args = "[--due-within DURATION] [--limit N]",
	  .help = "list active pins by deadline, soonest first (all tenants)",
	  .run = cmd_ls,
	  .opts = ls_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "stats",
	  .args = "",
	  .help = "show the gauge, the deadline index and the cleanup counters",
	  .run = cmd_stats,
	  .flags = MC_TOOL_MASTER },
	{ .name = "expire",
	  .args = "",
	  .help = "run one cleanup cycle now and print what it expired",
	  .run = cmd_expire,
	  .flags = MC_TOOL_MASTER },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-softpin",
	.globals = "[-m ADDR] [-t TENANT] [--json]",
	.summary = "show, list and expire soft pins on an mc master",
	.opts = opts,
	.cmds = cmds,
};

int
main(int argc, char **argv)
{
	return mc_tool_main(&tool, argc, argv);
}
