/*
 * The command-line shape shared by tools with commands: options, a
 * command, its arguments with the options again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/err.h"
#include "mc/log.h"
#include "mc/tool.h"

void
mc_tool_usage_fail(const struct mc_tool *t, const struct mc_tool_cmd *cmd, const char *msg)
{
	mc_complain("%s: %s", cmd->name, msg);
	fprintf(stderr, "usage: %s %s %s%s%s\n", t->prog, t->globals, cmd->name,
		*cmd->args ? " " : "", cmd->args);
	exit(MC_EXIT_USAGE);
}

void
mc_tool_only_for(const struct mc_tool *t, const struct mc_tool_cmd *cmd, bool given,
		 const char *opt, const char *owner)
{
	char msg[128];

	if (given && strcmp(cmd->name, owner) != 0) {
		snprintf(msg, sizeof(msg), "option '%s' belongs to '%s'", opt, owner);
		mc_tool_usage_fail(t, cmd, msg);
	}
}

static void __attribute__((noreturn)) try_help(const struct mc_tool *t)
{
	fprintf(stderr, "try '%s --help'\n", t->prog);
	exit(MC_EXIT_USAGE);
}

const struct mc_tool_cmd *
mc_tool_parse(const struct mc_tool *t, int *argc, char ***argv)
{
	struct mc_cmd list[MC_TOOL_MAX_CMDS + 1];
	struct mc_opt again[MC_TOOL_MAX_OPTS + 1];
	struct mc_opt_spec spec = { 0 };
	const struct mc_tool_cmd *cmd = NULL;
	char usage[256], missing[64];
	size_t i, n;
	int first, rest;
	unsigned npos;

	memset(list, 0, sizeof(list));
	for (i = 0; t->cmds[i].name != NULL; i++) {
		if (i == MC_TOOL_MAX_CMDS)
			MC_BUG("%s has more than %d commands", t->prog, MC_TOOL_MAX_CMDS);
		list[i].name = t->cmds[i].name;
		list[i].help = t->cmds[i].help;
	}
	snprintf(usage, sizeof(usage), "%s %s COMMAND [ARGS] [OPTIONS]", t->prog, t->globals);
	spec.usage = usage;
	spec.summary = t->summary;
	spec.opts = t->opts;
	spec.cmds = list;
	spec.version = t->version;
	first = mc_opt_parse(&spec, *argc, *argv);
	if (first >= *argc) {
		mc_complain("missing command");
		try_help(t);
	}
	for (i = 0; t->cmds[i].name != NULL && cmd == NULL; i++)
		if (strcmp(t->cmds[i].name, (*argv)[first]) == 0)
			cmd = &t->cmds[i];
	if (cmd == NULL) {
		mc_complain("unknown command '%s'", (*argv)[first]);
		try_help(t);
	}

	/* The command's own arguments, with the options again but not the environment. */
	for (n = 0; t->opts[n].name != NULL; n++)
		if (n == MC_TOOL_MAX_OPTS)
			MC_BUG("%s has more than %d options", t->prog, MC_TOOL_MAX_OPTS);
	memcpy(again, t->opts, (n + 1) * sizeof(again[0]));
	for (i = 0; i < n; i++)
		again[i].env = NULL;
	spec.opts = again;
	spec.cmds = NULL;
	rest = mc_opt_parse(&spec, *argc - first, *argv + first);
	*argv += first + rest;
	npos = (unsigned)(*argc - first - rest);
	*argc = (int)npos;

	if (npos < cmd->min_args) {
		/* name the first missing argument as the usage line does */
		size_t w = strcspn(cmd->args, " ");

		snprintf(missing, sizeof(missing), "missing %.*s", (int)(w < 40 ? w : 40),
			 cmd->args);
		mc_tool_usage_fail(t, cmd, missing);
	}
	if (npos > cmd->max_args) {
		char msg[160];

		snprintf(msg, sizeof(msg), "unexpected argument '%.100s'", (*argv)[cmd->max_args]);
		mc_tool_usage_fail(t, cmd, msg);
	}
	return cmd;
}
