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
struct rpctl rp = { .top = 20,
		    .qps = 0.8,
		    .window_ms = 10000,
		    .max_replicas = 2,
		    .entries = 65536,
		    .warm_top = 100 };

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

/* --within: a duration, and that it was given (0 is a deadline already past) */
static int
set_within(const char *v, void *target, char *why)
{
	if (mc_set_duration(v, target, why) != 0)
		return -1;
	rp.within = true;
	return 0;
}

static const struct mc_opt propose_opts[] = {
	{ "id", 0, "ID", NULL,
	  "the proposal's id: the same proposal again answers the same lease (at most 64 bytes)",
	  mc_set_str, &rp.id },
	{ "requester-domain", 0, "DOMAIN", NULL,
	  "the domain the reads come from: the key must be hot from there", mc_set_str,
	  &rp.requester_domain },
	{ "target-domain", 0, "DOMAIN", NULL,
	  "the domain the copy goes to (default: the requester's)", mc_set_str, &rp.target_domain },
	{ "preferred-target", 0, "PEER", NULL,
	  "a peer id to copy to, taken when it is a valid target", mc_set_u64,
	  &rp.preferred_target },
	{ "version", 0, "N", NULL, "the version seen: refused when it is not the object's",
	  mc_set_u64, &rp.version },
	{ "size", 0, "SIZE", NULL, "the size seen, checked with --version", mc_set_size, &rp.size },
	{ "within", 0, "DURATION", NULL,
	  "the proposal's deadline from now: its lease ends no later", set_within, &rp.within_ms },
	{ 0 },
};

static const struct mc_opt warmup_opts[] = {
	{ "domain", 0, "DOMAIN", NULL, "the domain to warm (required)", mc_set_str, &rp.domain },
	{ "top", 0, "N", NULL, "copy at most the N hottest keys (default 100, at most 1000)",
	  mc_set_positive_int, &rp.warm_top },
	{ "max-bytes", 0, "SIZE", NULL, "copy at most SIZE bytes in all (default: no bound)",
	  mc_set_size, &rp.max_bytes },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ .name = "status",
	  .args = "",
	  .help = "show the mode, its settings, and what admission judged, by outcome and reason",
	  .run = cmd_status,
	  .flags = MC_TOOL_MASTER },
	{ .name = "mode",
	  .args = "off|observe|enforce",
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
	{ .name = "leases",
	  .args = "",
	  .help = "list the dynamic copies under way: lease, stage, source, target, expiry",
	  .run = cmd_leases,
	  .flags = MC_TOOL_MASTER },
	{ .name = "propose",
	  .args = "KEY [--target-domain D] [--preferred-target PEER] [--id ID] ...",
	  .help = "propose a dynamic copy of KEY: admission's checks, and in enforce mode its "
		  "lease",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cmd_propose,
	  .opts = propose_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "warmup",
	  .args = "--domain D [--top N] [--max-bytes SIZE]",
	  .help = "copy the hottest keys into a new domain, skipping those it holds already",
	  .run = cmd_warmup,
	  .opts = warmup_opts,
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
