/*
 * mc-softpin internals: the options, the commands and the formatting
 * of remaining times for people.
 */
#ifndef MC_SOFTPIN_TOOL_H
#define MC_SOFTPIN_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/rpcc.h"

struct spctl {
	bool json;
	uint64_t due_within_ms; /* ls; meaningful when has_due_within */
	bool has_due_within;
	int limit; /* ls; 0 when not given */
};

extern struct spctl sp;

/* Commands: positional arguments only (options are parsed already). */
int cmd_show(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_expire(int argc, char **argv);

/*
 * A remaining time for people, units run together: 1799500 ->
 * "29m59.5s", 3600000 -> "1h", 250 -> "250ms", 0 -> "0s". buf of 48.
 */
char *sp_fmt_remaining(uint64_t ms, char *buf, size_t cap);

#endif
