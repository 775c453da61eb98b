/*
 * mc-cli internals: the global options every command sees, the command
 * table entry, and the helpers that turn failures into one line on
 * stderr and an exit status.
 */
#ifndef MC_CLI_H
#define MC_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/client.h"
#include "mc/err.h"
#include "mc/opt.h"

struct cli {
	const char *master;
	const char *tenant;
	bool json;
	uint64_t timeout_ms;
	struct mc_client *client; /* connected on first use */
};

extern struct cli cli;

struct cli_cmd {
	const char *name;
	const char *args; /* positional arguments, for the usage line */
	const char *help;
	const struct mc_opt *opts; /* the command's own options, {0}-terminated */
	unsigned min_args, max_args;
	int (*run)(int argc, char **argv); /* positional arguments only */
};

/* The client, connecting on first use; exits with a message on failure. */
struct mc_client *cli_client(void);
/* The tenant this invocation speaks for (-t, $MC_TENANT, "default"). */
const char *cli_tenant(void);
/* Report "cannot VERB 'WHAT': why" (or err's own sentence) and exit. */
void cli_fail(const struct mc_err *err, const char *verb, const char *what)
	__attribute__((noreturn));

/* Commands (data.c, info.c) and their option tables. */
extern const struct mc_opt cli_put_opts[], cli_get_opts[], cli_rm_opts[], cli_none_opts[];
int cli_put(int argc, char **argv);
int cli_get(int argc, char **argv);
int cli_rm(int argc, char **argv);
int cli_exist(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_stat(int argc, char **argv);
int cli_peers(int argc, char **argv);
int cli_corrupt(int argc, char **argv);

/* evict.c: the eviction pipeline's ends. */
extern const struct mc_opt cli_candidates_opts[], cli_evict_opts[];
int cli_candidates(int argc, char **argv);
int cli_evict(int argc, char **argv);

#endif
