/*
 * mc-replicate internals: the options and the commands.
 */
#ifndef MC_REPLICATE_TOOL_H
#define MC_REPLICATE_TOOL_H

#include <stdbool.h>
#include <stdint.h>

struct rpctl {
	bool json;
	int top; /* heat */
	/* whatif: the setting replayed */
	double qps;
	uint64_t window_ms;
	int max_replicas;
	int entries;
	/* propose: the proposal's fields (NULL, 0: not given) */
	const char *id, *requester_domain, *target_domain;
	uint64_t preferred_target, version, size, within_ms;
	bool within;
	/* warmup */
	const char *domain;
	int warm_top;
	uint64_t max_bytes;
};

extern struct rpctl rp;

/* Commands: positional arguments only (options are parsed already). */
int cmd_status(int argc, char **argv);
int cmd_mode(int argc, char **argv);
int cmd_heat(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_leases(int argc, char **argv);
int cmd_propose(int argc, char **argv);
int cmd_warmup(int argc, char **argv);

#endif
