/*
 * mc-replicate: look at and steer the master's dynamic hot replication:
 * its mode, what admission judged and why it turned keys down, and the
 * hottest keys of the heat window.
 *
 * The command table is all there is here: mc_tool_main parses the
 * command line (so `mc-replicate status --json` works), connects to the
 * master and dispatches to commands.c.
 */
#include "mc/tool.h"
#include "replicate.h"

/* whatif's defaults are the master's */
struct rpctl rp = {
	.top = 20, .qps = 0.8, .window_ms = 10000, .max_replicas = 2, .entries = 65536
};

static const struct mc_opt opts[] = {
	{ "json", 0, NULL, NULL, "print JSON (one object per line) instead of text", mc_set_flag,
	  &rp.json },
	{ 0 },
};

static const struct mc_opt heat_opts[] = {
	{ "top", 0, "N", NULL, "list the N hottest keys (default 20, at most 1000)",
	  mc_set_positive_int, &rp.top },
	{ 0 },
};

static const struct mc_opt whatif_opts[] = {
	{ "threshold", 0, "QPS", NULL,
	  "reads a second over the window that make a key hot (default 0.8)", mc_set_rate,
	  &rp.qps },
	{ "window", 0, "DURATION", NULL, "the heat window (default 10s)", mc_set_positive_duration,
	  &rp.window_ms },
	{ "max-replicas", 0, "N", NULL, "dynamic replicas of one key at most (default 2)",
	  mc_set_positive_int, &rp.max_replicas },
	{ "entries", 0, "N", NULL, "keys the heat window holds at most (default 65536)",
	  mc_set_positive_int, &rp.entries },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ .name = "status",
	  .args = "",
	  .help = "show the mode, its settings, and what admission judged, by outcome and reason",
	  .run = cmd_status,
	  .flags = MC_TOOL_MASTER },
	{ .name = "mode",
	  .args = "off|observe",
	  .help = "set the mode of dynamic replication (off forgets the heat window)",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cmd_mode,
	  .flags = MC_TOOL_MASTER },
	{ .name = "heat",
	  .args = "[--top N]",
	  .help = "list the hottest keys of the heat window, with their reads and domain",
	  .run = cmd_heat,
	  .opts = heat_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "whatif",
	  .args = "[--threshold QPS] [--window DURATION] [--max-replicas N] < ACCESS_LOG",
	  .help = "replay an access log (TIMESTAMP_MS KEY [DOMAIN] a line) through the heat "
		  "window offline: how many copies a setting would have proposed",
	  .run = cmd_whatif,
	  .opts = whatif_opts },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-replicate",
	.globals = "[-m ADDR] [-t TENANT] [--json]",
	.summary = "show and steer dynamic hot replication on an mc master",
	.opts = opts,
	.cmds = cmds,
};

int
main(int argc, char **argv)
{
	return mc_tool_main(&tool, argc, argv);
}
