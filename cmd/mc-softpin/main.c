/*
 * mc-softpin: look at and drive the master's soft pins: one key's state,
 * the active deadlines in order, the index and gauge, a cleanup cycle.
 *
 * main hands the command line to mc_tool_parse (so `mc-softpin ls
 * --json` works), checks that each command-only option went with its
 * command, and dispatches to commands.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/opt.h"
#include "mc/tool.h"
#include "softpin.h"

struct spctl sp = {
	.timeout_ms = 30 * 1000,
};

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
	{ "master", 'm', "ADDR", "MC_MASTER", "master address (default 127.0.0.1:7300)", mc_set_str,
	  &sp.master },
	{ "tenant", 't', "STR", "MC_TENANT", "tenant of the keys shown (default \"default\")",
	  mc_set_str, &sp.tenant },
	{ "json", 0, NULL, NULL, "print JSON (one object per line) instead of text", mc_set_flag,
	  &sp.json },
	{ "timeout", 0, "DURATION", NULL, "timeout of each call to the master (default 30s)",
	  mc_set_duration, &sp.timeout_ms },
	{ "due-within", 0, "DURATION", NULL, "ls: only pins whose deadline is at most this far off",
	  set_due_within, NULL },
	{ "limit", 0, "N", NULL, "ls: list at most N pins (default 1000)", mc_set_positive_int,
	  &sp.limit },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ "show", "KEY", "show KEY's soft-pin state, deadline and remaining time", 1, 1, cmd_show },
	{ "ls", "[--due-within DURATION] [--limit N]",
	  "list active pins by deadline, soonest first (all tenants)", 0, 0, cmd_ls },
	{ "stats", "", "show the gauge, the deadline index and the cleanup counters", 0, 0,
	  cmd_stats },
	{ "expire", "", "run one cleanup cycle now and print what it expired", 0, 0, cmd_expire },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-softpin",
	.globals = "[-m ADDR] [-t TENANT] [--json]",
	.summary = "show, list and expire soft pins on an mc master",
	.version = MC_VERSION,
	.opts = opts,
	.cmds = cmds,
};

int
main(int argc, char **argv)
{
	const struct mc_tool_cmd *cmd;

	mc_log_init("mc-softpin", 0);
	cmd = mc_tool_parse(&tool, &argc, &argv);
	mc_tool_only_for(&tool, cmd, sp.has_due_within, "--due-within", "ls");
	mc_tool_only_for(&tool, cmd, sp.limit != 0, "--limit", "ls");
	if (sp.timeout_ms > INT_MAX)
		sp.timeout_ms = INT_MAX;
	return cmd->run(argc, argv);
}
