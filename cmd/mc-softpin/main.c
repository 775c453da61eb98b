/*
 * mc-softpin: look at and drive the master's soft pins: one key's state,
 * the active deadlines in order, the index and gauge, a cleanup cycle.
 *
 * main parses the options up to the command, then the command's own
 * arguments with the same table again (so `mc-softpin ls --json`
 * works), checks that each command-only option went with its command,
 * and dispatches to commands.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/opt.h"
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

struct sp_cmd {
	const char *name;
	const char *args; /* for the usage line */
	const char *help;
	unsigned min_args, max_args;
	int (*run)(int argc, char **argv);
};

static const struct sp_cmd cmds[] = {
	{ "show", "KEY", "show KEY's soft-pin state, deadline and remaining time", 1, 1, cmd_show },
	{ "ls", "[--due-within DURATION] [--limit N]",
	  "list active pins by deadline, soonest first (all tenants)", 0, 0, cmd_ls },
	{ "stats", "", "show the gauge, the deadline index and the cleanup counters", 0, 0,
	  cmd_stats },
	{ "expire", "", "run one cleanup cycle now and print what it expired", 0, 0, cmd_expire },
	{ 0 },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]) - 1)

static const struct sp_cmd *
find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

static void usage_fail(const struct sp_cmd *cmd, const char *msg) __attribute__((noreturn));

static void
usage_fail(const struct sp_cmd *cmd, const char *msg)
{
	mc_complain("%s: %s", cmd->name, msg);
	fprintf(stderr, "usage: mc-softpin [-m ADDR] [-t TENANT] [--json] %s%s%s\n", cmd->name,
		*cmd->args ? " " : "", cmd->args);
	exit(MC_EXIT_USAGE);
}

/* An option that only one command takes, given to another. */
static void
check_option(const struct sp_cmd *cmd, bool given, const char *opt, const char *owner)
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
	const struct sp_cmd *cmd;
	unsigned npos;
	size_t i;
	int first, rest;

	mc_log_init("mc-softpin", 0);
	memset(list, 0, sizeof(list));
	for (i = 0; i < NCMDS; i++) {
		list[i].name = cmds[i].name;
		list[i].help = cmds[i].help;
	}
	spec.usage = "mc-softpin [-m ADDR] [-t TENANT] [--json] COMMAND [ARGS] [OPTIONS]";
	spec.summary = "show, list and expire soft pins on an mc master";
	spec.opts = opts;
	spec.cmds = list;
	spec.version = "0.1.0";
	first = mc_opt_parse(&spec, argc, argv);
	if (first >= argc) {
		mc_complain("missing command");
		fprintf(stderr, "try 'mc-softpin --help'\n");
		return MC_EXIT_USAGE;
	}
	cmd = find_cmd(argv[first]);
	if (cmd == NULL) {
		mc_complain("unknown command '%s'", argv[first]);
		fprintf(stderr, "try 'mc-softpin --help'\n");
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
		usage_fail(cmd, "missing KEY");
	if (npos > cmd->max_args) {
		char msg[160];

		snprintf(msg, sizeof(msg), "unexpected argument '%.100s'", argv[cmd->max_args]);
		usage_fail(cmd, msg);
	}
	check_option(cmd, sp.has_due_within, "--due-within", "ls");
	check_option(cmd, sp.limit != 0, "--limit", "ls");
	if (sp.timeout_ms > INT_MAX)
		sp.timeout_ms = INT_MAX;
	return cmd->run((int)npos, argv);
}
