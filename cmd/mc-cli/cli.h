/*
 * mc-cli internals: the global option every command sees and the
 * commands with their option tables. Connecting, the tenant and turning
 * failures into an exit status are the tool frame's (mc/tool.h).
 */
#ifndef MC_CLI_H
#define MC_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/client.h"
#include "mc/err.h"
#include "mc/opt.h"
#include "mc/progress.h"
#include "mc/tool.h"

/* --progress and --no-progress; neither: by the object and the terminal */
enum { CLI_PROGRESS_AUTO, CLI_PROGRESS_ON, CLI_PROGRESS_OFF };

struct cli {
	bool json;
	int progress; /* CLI_PROGRESS_* */
};

extern struct cli cli;

/* Commands (data.c, info.c) and their option tables. */
extern const struct mc_opt cli_put_opts[], cli_get_opts[], cli_rm_opts[];
int cli_put(int argc, char **argv);
int cli_get(int argc, char **argv);
int cli_rm(int argc, char **argv);
int cli_exist(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_stat(int argc, char **argv);
int cli_peers(int argc, char **argv);
int cli_corrupt(int argc, char **argv);

/*
 * The master answers an evict call only once the plan has run, in slices
 * between other requests: a large plan outlasts the 30 s every other
 * call gets, so evict waits this long unless --timeout says otherwise.
 */
#define CLI_EVICT_TIMEOUT_MS (10u * 60 * 1000)

/* progress.c: the progress line of put and get, around the client's call. */
#define CLI_PROGRESS_MIN (64ull << 20) /* the least object a terminal shows it for */
#define CLI_PROGRESS_KEY_SHOWN 64      /* bytes of the key in the line */

struct cli_progress {
	struct mc_progress line;
	char label[CLI_PROGRESS_KEY_SHOWN + 16];
	uint64_t size; /* the object's, 0 until the transfer tells */
};

int cli_set_progress(const char *v, void *target, char *why);
int cli_set_no_progress(const char *v, void *target, char *why);
/* verb "put" or "get"; size the object's bytes, or 0 when the get learns it. */
void cli_progress_begin(struct cli_progress *p, const char *verb, const char *key, uint64_t size);
void cli_progress_end(struct cli_progress *p);

/* evict.c: the eviction pipeline's ends. */
extern const struct mc_opt cli_candidates_opts[], cli_evict_opts[];
int cli_candidates(int argc, char **argv);
int cli_evict(int argc, char **argv);

/* auth.c: the master's auth file, offline. */
extern const struct mc_opt cli_auth_opts[];
int cli_auth(int argc, char **argv);

#endif
