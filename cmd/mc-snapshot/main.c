/*
 * mc-snapshot: save, restore, verify, inspect, list and prune snapshots
 * of the master's metadata.
 *
 * main hands the command line to mc_tool_parse (so `mc-snapshot verify
 * F --json` works), checks that each command-only option went with its
 * command, and dispatches. save and restore talk to the master (remote.c); the
 * others only read files (offline.c, inspect.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/opt.h"
#include "mc/tool.h"
#include "snap.h"

struct snapctl sc = {
	.timeout_ms = 10 * 60 * 1000,
};

static const struct mc_opt opts[] = {
	{ "master", 'm', "ADDR", "MC_MASTER", "master address (default 127.0.0.1:7300)", mc_set_str,
	  &sc.master },
	{ "timeout", 0, "DURATION", NULL,
	  "how long a call to the master may stay silent (default 10m)", mc_set_duration,
	  &sc.timeout_ms },
	{ "output", 'o', "FILE", NULL, "save: stream the snapshot into FILE ('-': stdout)",
	  mc_set_str, &sc.out },
	{ "force", 0, NULL, NULL, "restore: replace what a non-empty master holds", mc_set_flag,
	  &sc.force },
	{ "keep", 0, "N", NULL, "prune: how many of the newest snapshots to keep",
	  mc_set_positive_int, &sc.keep },
	{ "json", 0, NULL, NULL, "print JSON (one object per line) instead of text", mc_set_flag,
	  &sc.json },
	{ "verbose", 'v', NULL, NULL, "prune: name each file removed", mc_set_flag, &sc.verbose },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ "save", "[-o FILE|-]", "ask the master for a snapshot now, or stream one into FILE", 0, 0,
	  cmd_save },
	{ "restore", "FILE [--force]", "load FILE into a running master", 1, 1, cmd_restore },
	{ "verify", "FILE", "check FILE's structure, record count and checksums", 1, 1,
	  cmd_verify },
	{ "inspect", "FILE [--json]", "show FILE's header and counts per kind, tenant and type", 1,
	  1, cmd_inspect },
	{ "ls", "[DIR]", "list the snapshots in DIR, newest first", 0, 1, cmd_ls },
	{ "prune", "--keep N [DIR]", "remove all but the newest N snapshots in DIR", 0, 1,
	  cmd_prune },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-snapshot",
	.globals = "[-m ADDR]",
	.summary = "save, restore, verify, inspect and prune mc master snapshots",
	.version = MC_VERSION,
	.opts = opts,
	.cmds = cmds,
};

int
main(int argc, char **argv)
{
	const struct mc_tool_cmd *cmd;

	mc_log_init("mc-snapshot", 0);
	cmd = mc_tool_parse(&tool, &argc, &argv);
	mc_tool_only_for(&tool, cmd, sc.out != NULL, "--output", "save");
	mc_tool_only_for(&tool, cmd, sc.force, "--force", "restore");
	mc_tool_only_for(&tool, cmd, sc.keep != 0, "--keep", "prune");
	if (strcmp(cmd->name, "prune") == 0 && sc.keep == 0)
		mc_tool_usage_fail(&tool, cmd, "missing --keep N");
	if (sc.timeout_ms > INT_MAX)
		sc.timeout_ms = INT_MAX;
	return cmd->run(argc, argv);
}
