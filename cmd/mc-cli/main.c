/*
 * mc-cli: the client side of mc for people and scripts.
 *
 * The command table is all there is here: mc_tool_main parses the
 * options (a command's own ones with the global ones again, so `mc-cli
 * get k --json` works), connects to the master for the commands that
 * talk to it, and runs the command.
 */
#include "cli.h"
#include "mc/tool.h"

struct cli cli;

static const struct mc_opt global_opts[] = {
	{ "json", 0, NULL, NULL, "print records as JSON, one object per line", mc_set_flag,
	  &cli.json },
	{ "progress", 0, NULL, NULL,
	  "show put and get progress on stderr, for any size, terminal or not", cli_set_progress,
	  &cli.progress },
	{ "no-progress", 0, NULL, NULL, "never show put and get progress", cli_set_no_progress,
	  &cli.progress },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ .name = "put",
	  .args = "KEY [FILE|-]",
	  .help = "store FILE (default stdin) under KEY",
	  .min_args = 1,
	  .max_args = 2,
	  .run = cli_put,
	  .opts = cli_put_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "get",
	  .args = "KEY",
	  .help = "write the bytes of KEY to stdout (or to -o FILE)",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cli_get,
	  .opts = cli_get_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "rm",
	  .args = "KEY|--prefix P",
	  .help = "remove KEY, or every key under a prefix",
	  .min_args = 0,
	  .max_args = 1,
	  .run = cli_rm,
	  .opts = cli_rm_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "exist",
	  .args = "KEY",
	  .help = "exit 0 when KEY is present, 1 when absent",
	  .min_args = 1,
	  .max_args = 1,
	  .run = cli_exist,
	  .flags = MC_TOOL_MASTER },
	{ .name = "ls",
	  .args = "[PREFIX]",
	  .help = "list the keys (under PREFIX), one per line",
	  .min_args = 0,
	  .max_args = 1,
	  .run = cli_ls,
	  .flags = MC_TOOL_MASTER },
	{ .name = "stat",
	  .args = "[KEY]",
	  .help = "show an object and its replicas, or cluster stats",
	  .min_args = 0,
	  .max_args = 1,
	  .run = cli_stat,
	  .flags = MC_TOOL_MASTER },
	{ .name = "peers",
	  .args = "",
	  .help = "list the peers with their capacity and use",
	  .run = cli_peers,
	  .flags = MC_TOOL_MASTER },
	{ .name = "corrupt",
	  .args = "PEER_ADDR KEY [OFFSET]",
	  .help = "flip one byte of a peer's copy (peers run with --fault-inject)",
	  .min_args = 2,
	  .max_args = 3,
	  .run = cli_corrupt },
	{ .name = "candidates",
	  .args = "",
	  .help = "write the candidate view of evictable copies (eviction stage 1)",
	  .run = cli_candidates,
	  .opts = cli_candidates_opts,
	  .flags = MC_TOOL_MASTER },
	{ .name = "evict",
	  .args = "--plan FILE|--target SIZE|PCT",
	  .help = "execute a plan, or have the master run an eviction round (eviction stage 3)",
	  .run = cli_evict,
	  .opts = cli_evict_opts,
	  .flags = MC_TOOL_MASTER,
	  .timeout_ms = CLI_EVICT_TIMEOUT_MS },
	{ .name = "auth",
	  .args = "add TENANT [--admin] | add --peer [NAME] | rm NAME | ls",
	  .help = "manage the master's --auth-file offline; add prints the new token once",
	  .min_args = 1,
	  .max_args = 2,
	  .run = cli_auth,
	  .opts = cli_auth_opts },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-cli",
	.globals = "[-m ADDR] [-t TENANT] [--json] [--[no-]progress] [--timeout D]",
	.summary = "store and fetch objects in an mc cluster",
	.opts = global_opts,
	.cmds = cmds,
};

int
main(int argc, char **argv)
{
	return mc_tool_main(&tool, argc, argv);
}
