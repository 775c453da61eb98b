/*
 * The one frame of every mc tool (mc-cli, mc-snapshot, mc-softpin,
 * mc-bench, mc-evict-plan): global options, then a command, then the
 * command's arguments, where its own options and the global ones may be
 * given again (`mc-softpin ls --json`). One table says everything about
 * a command: its arguments, its options, and whether it talks to the
 * master. For those that do, the frame adds -m/--master, -t/--tenant
 * and --timeout, connects, says hello (with $MC_TOKEN when set) and
 * turns a failure into one line and an exit status, once, so that no
 * tool does it again and their usage and errors read alike.
 */
#ifndef MC_TOOL_H
#define MC_TOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/client.h"
#include "mc/err.h"
#include "mc/opt.h"

struct mc_rpcc;

/* The command talks to the master: connect and say hello before it runs. */
#define MC_TOOL_MASTER 0x1u

struct mc_tool_cmd {
	const char *name;
	const char *args; /* after the name in its usage line; "" for none */
	const char *help;
	unsigned min_args, max_args; /* positional arguments */
	int (*run)(int argc, char **argv);
	const struct mc_opt *opts; /* the command's own options ({0}-terminated), or NULL */
	unsigned flags;		   /* MC_TOOL_MASTER */
	uint64_t timeout_ms;	   /* its default --timeout; 0: the tool's */
};

struct mc_tool {
	const char *prog;    /* "mc-softpin" */
	const char *globals; /* options shown in usage lines: "[-m ADDR] [--json]" */
	const char *summary;
	const struct mc_opt *opts;	/* options of every command, {0}-terminated */
	const struct mc_tool_cmd *cmds; /* terminated by {0} */
	/*
	 * A tool without commands (mc-evict-plan) gives the one it runs
	 * here instead of cmds: its args are the usage line after the
	 * program's name, its opts come after the tool's.
	 */
	const struct mc_tool_cmd *single;
	uint64_t timeout_ms; /* default --timeout of the master commands; 0: 30s */
};

/*
 * A tool's whole main: parse argv, connect when the command needs the
 * master, run the command, free the client; returns the exit status.
 */
int mc_tool_main(const struct mc_tool *t, int argc, char **argv);

/*
 * Parse argv: the options, the command, and the command's arguments with
 * the options again (the environment applies once, so MC_MASTER cannot
 * beat a -m given before the command). An option of another command is
 * refused naming its owner. Checks the number of positional arguments.
 * Returns the command, with *argc and *argv its positional arguments;
 * usage errors exit 64 with a message naming what is wrong.
 */
const struct mc_tool_cmd *mc_tool_parse(const struct mc_tool *t, int *argc, char ***argv);

/* "PROG: CMD: msg", CMD's usage line, exit 64. */
void mc_tool_usage_fail(const struct mc_tool *t, const struct mc_tool_cmd *cmd, const char *msg)
	__attribute__((noreturn));

/* The connected client of a master command (connected by mc_tool_main). */
struct mc_client *mc_tool_client(void);
/* Its master connection on the calling thread; exits 69 when it cannot connect. */
struct mc_rpcc *mc_tool_master(void);
/* What -m, -t and --timeout said, for a tool that makes more clients. */
void mc_tool_client_opts(struct mc_client_opts *o);
/* The tenant the tool speaks for: -t, $MC_TENANT, "default". */
const char *mc_tool_tenant(void);
/* The master's address: -m, $MC_MASTER, 127.0.0.1:7300. */
const char *mc_tool_master_addr(void);

/*
 * Report a failure and exit with the status of its code (DESIGN.md
 * section 8): "cannot VERB 'WHAT': why" (what may be NULL), or err's own
 * sentence when it already starts with "cannot". The common outcomes
 * read as plain words with the flag that gets past them (not found,
 * already exists: use --upsert, leased: use --force, busy); an OS
 * call that failed is a failed operation (1); a master that does not
 * know the method lacks the service (69).
 */
void mc_tool_fail(const struct mc_err *err, const char *verb, const char *what)
	__attribute__((noreturn));

#endif
