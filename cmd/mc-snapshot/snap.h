/*
 * mc-snapshot internals: the options every command sees, the commands,
 * the helpers that turn a failure into one line on stderr and an exit
 * status. The progress line is libmc's (mc/progress.h).
 */
#ifndef MC_SNAPSHOT_TOOL_H
#define MC_SNAPSHOT_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

struct snapctl {
	const char *out; /* save -o */
	bool force;	 /* restore */
	bool json;
	bool verbose;
	int keep; /* prune; 0 when not given */
};

extern struct snapctl sc;

/* Commands: positional arguments only (options are parsed already). */
int cmd_save(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_prune(int argc, char **argv);

/*
 * Open a snapshot file to read ("-": stdin); *size is its length, or 0
 * when it has none (a pipe). Exits 1 with a message when it cannot.
 */
int snap_open_input(const char *path, uint64_t *size);
/* A reader failure on path: exit 65 for bad data, 1 for the rest. */
void snap_read_fail(const char *path, const struct mc_err *err) __attribute__((noreturn));

/* The directory ls and prune use: the argument, $MC_SNAPSHOT_DIR, or ".". */
const char *snap_dir(int argc, char **argv);

#endif
