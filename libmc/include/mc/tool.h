/*
 * Tools with commands (mc-snapshot, mc-softpin): global options, then a
 * command, then the command's arguments, where the same options may be
 * given again (`mc-softpin ls --json`). One parser for all of them, so
 * their usage errors read alike.
 */
#ifndef MC_TOOL_H
#define MC_TOOL_H

#include <stdbool.h>

#include "mc/opt.h"

#define MC_TOOL_MAX_OPTS 32
#define MC_TOOL_MAX_CMDS 32

struct mc_tool_cmd {
	const char *name;
	const char *args; /* after the name in its usage line; "" for none */
	const char *help;
	unsigned min_args, max_args; /* positional arguments */
	int (*run)(int argc, char **argv);
};

struct mc_tool {
	const char *prog;    /* "mc-softpin" */
	const char *globals; /* options shown in usage lines: "[-m ADDR] [--json]" */
	const char *summary;
	const char *version;
	const struct mc_opt *opts;	/* terminated by {0} */
	const struct mc_tool_cmd *cmds; /* terminated by {0} */
};

/*
 * Parse argv: the options, the command, and the command's arguments with
 * the options again (the environment applies once, so MC_MASTER cannot
 * beat a -m given before the command). Checks the number of positional
 * arguments. Returns the command, with *argc and *argv its positional
 * arguments; usage errors exit 64 with a message naming what is wrong.
 */
const struct mc_tool_cmd *mc_tool_parse(const struct mc_tool *t, int *argc, char ***argv);

/* "PROG: CMD: msg", CMD's usage line, exit 64. */
void mc_tool_usage_fail(const struct mc_tool *t, const struct mc_tool_cmd *cmd, const char *msg)
	__attribute__((noreturn));

/* An option that only the command owner takes, given to cmd: exit 64. */
void mc_tool_only_for(const struct mc_tool *t, const struct mc_tool_cmd *cmd, bool given,
		      const char *opt, const char *owner);

#endif
