/*
 * mc-snapshot: save, restore, verify, inspect, list and prune snapshots
 * of the master's metadata.
 *
 * main parses the options up to the command, then the command's
 * arguments with the same table again (so `mc-snapshot verify F --json`
 * works), checks that each command-only option went with its command,
 * and dispatches. save and restore talk to the master (remote.c); the
 * others only read files (offline.c, inspect.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/opt.h"
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

struct snap_cmd {
	const char *name;
	const char *args; /* for the usage line */
	const char *help;
	unsigned min_args, max_args;
	int (*run)(int argc, char **argv);
};

static const struct snap_cmd cmds[] = {
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

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]) - 1)

static const struct snap_cmd *
find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

static void usage_fail(const struct snap_cmd *cmd, const char *msg) __attribute__((noreturn));

static void
usage_fail(const struct snap_cmd *cmd, const char *msg)
{
	mc_complain("%s: %s", cmd->name, msg);
	fprintf(stderr, "usage: mc-snapshot [-m ADDR] %s %s\n", cmd->name, cmd->args);
	exit(MC_EXIT_USAGE);
}

/* An option that only one command takes, given to another. */
static void
check_option(const struct snap_cmd *cmd, bool given, const char *opt, const char *owner)
{
	char msg[128];

	if (given && strcmp(cmd->name, owner) != 0) {
		snprintf(msg, sizeof(msg), "option '%s' belongs to '%s'", opt, owner);
		usage_fail(cmd, msg);
	}
}

int
main(int argc, char **argv)
{
	struct mc_cmd list[NCMDS + 1];
	struct mc_opt again[sizeof(opts) / sizeof(opts[0])];
	struct mc_opt_spec spec = { 0 };
	const struct snap_cmd *cmd;
	unsigned npos;
	size_t i;
	int first, rest;

	mc_log_init("mc-snapshot", 0);
	memset(list, 0, sizeof(list));
	for (i = 0; i < NCMDS; i++) {
		list[i].name = cmds[i].name;
		list[i].help = cmds[i].help;
	}
	spec.usage = "mc-snapshot [-m ADDR] COMMAND [ARGS] [OPTIONS]";
	spec.summary = "save, restore, verify, inspect and prune mc master snapshots";
	spec.opts = opts;
	spec.cmds = list;
	spec.version = "0.1.0";
	first = mc_opt_parse(&spec, argc, argv);
	if (first >= argc) {
		mc_complain("missing command");
		fprintf(stderr, "try 'mc-snapshot --help'\n");
		return MC_EXIT_USAGE;
	}
	cmd = find_cmd(argv[first]);
	if (cmd == NULL) {
		mc_complain("unknown command '%s'", argv[first]);
		fprintf(stderr, "try 'mc-snapshot --help'\n");
		return MC_EXIT_USAGE;
	}

	/*
	 * The command's own arguments, with the same options again. The
	 * environment was applied once already; applying it again would
	 * let MC_MASTER beat a -m given before the command.
	 */
	memcpy(again, opts, sizeof(opts));
	for (i = 0; again[i].name != NULL; i++)
		again[i].env = NULL;
	spec.opts = again;
	spec.cmds = NULL;
	rest = mc_opt_parse(&spec, argc - first, argv + first);
	argv += first + rest;
	npos = (unsigned)(argc - first - rest);

	if (npos < cmd->min_args)
		usage_fail(cmd, "missing FILE");
	if (npos > cmd->max_args) {
		char msg[160];

		snprintf(msg, sizeof(msg), "unexpected argument '%.100s'", argv[cmd->max_args]);
		usage_fail(cmd, msg);
	}
	check_option(cmd, sc.out != NULL, "--output", "save");
	check_option(cmd, sc.force, "--force", "restore");
	check_option(cmd, sc.keep != 0, "--keep", "prune");
	if (strcmp(cmd->name, "prune") == 0 && sc.keep == 0)
		usage_fail(cmd, "missing --keep N");
	if (sc.timeout_ms > INT_MAX)
		sc.timeout_ms = INT_MAX;
	return cmd->run((int)npos, argv);
}
