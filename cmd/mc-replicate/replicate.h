/*
 * mc-replicate internals: the options and the commands.
 */
#ifndef MC_REPLICATE_TOOL_H
#define MC_REPLICATE_TOOL_H

#include <stdbool.h>

struct rpctl {
	bool json;
	int top; /* heat */
	/* whatif: the setting replayed */
	double qps;
	uint64_t window_ms;
	int max_replicas;
	int entries;
};

extern struct rpctl rp;

/* Commands: positional arguments only (options are parsed already). */
int cmd_status(int argc, char **argv);
int cmd_mode(int argc, char **argv);
int cmd_heat(int argc, char **argv);
int cmd_whatif(int argc, char **argv);

#endif
