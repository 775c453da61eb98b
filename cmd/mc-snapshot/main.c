/*
 * mc-snapshot: save, restore, verify, inspect, list and prune snapshots
 * of the master's metadata.
 *
 * The command table is all there is here: mc_tool_main parses the
 * command line (so `mc-snapshot verify F --json` works) and dispatches.
 * save and restore talk to the master (remote.c); the others only read
 * files (offline.c, inspect.c).
 */
#include "mc/tool.h"
#include "snap.h"

struct snapctl sc;

static const struct mc_opt opts[] = {
	{ "json", 0, NULL, NULL, "print JSON (one object per line) instead of text", mc_set_flag,
	  &sc.json },
	{ 0 },
};

static const struct mc_opt save_opts[] = {
	{ "output", 'o', "FILE", NULL, "stream the snapshot into FILE ('-': stdout)", mc_set_str,
	  &sc.out },
	{ 0 },
};

static const struct mc_opt restore_opts[] = {
	{ "force", 0, NULL, NULL, "replace what a non-empty master holds", mc_set_flag, &sc.force },
	{ 0 },
};

static const struct mc_opt prune_opts[] = {
	{ "keep", 0, "N", NULL, "how many of the newest snapshots to keep", mc_set_positive_int,
	  &sc.keep },
	{ "verbose", 'v', NULL, NULL, "name each file removed", mc_set_flag, &sc.verbose },
	{ 0 },
};

static int run_prune(int argc, char **argv);

static const struct mc_tool_cmd cmds[] = {
	{ .name = "save",
	  .args = "[-o FILE|-]",
	  .help = "ask the master for a snapshot now, or stream one into FILE",
	  .run = cmd_save,
	  .opts = save_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "restore",
	  .args = "FILE [--force]",
	  .help = "load FILE into a running master",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cmd_restore,
	  .opts = restore_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "verify",
	  .args = "FILE",
	  .help = "check FILE's structure, record count and checksums",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cmd_verify },
	{ .name = "inspect",
	  .args = "FILE [--json]",
	  .help = "show FILE's header and counts per kind, tenant and type",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cmd_inspect },
	{ .name = "ls",
	  .args = "[DIR]",
	  .help = "list the snapshots in DIR, newest first",
	  .max_args = 1,
	  .run = cmd_ls },
	{ .name = "prune",
	  .args = "--keep N [DIR]",
	  .help = "remove all but the newest N snapshots in DIR",
	  .max_args = 1,
	  .run = run_prune,
	  .opts = prune_opts },
	{ 0 },
};

/* Saving and restoring a large cluster's file outlasts the usual 30 s. */
static const struct mc_tool tool = {
	.prog = "mc-snapshot",
	.globals = "[-m ADDR]",
	.summary = "save, restore, verify, inspect and prune mc master snapshots",
	.opts = opts,
	.cmds = cmds,
	.timeout_ms = 10 * 60 * 1000,
};

static int
run_prune(int argc, char **argv)
{
	if (sc.keep == 0)
		mc_tool_usage_fail(&tool, &cmds[5], "missing --keep N");
	return cmd_prune(argc, argv);
}

int
main(int argc, char **argv)
{
	return mc_tool_main(&tool, argc, argv);
}
