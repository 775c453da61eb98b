/*
 * mc-evict-plan: the filter between `mc-cli candidates` and `mc-cli
 * evict --plan -`. main.c declares the options and reads the "SIZE or
 * PERCENT" values of --target and --lowerbound (mc_parse_amount, as
 * mc-cli evict does); run.c reads the view, plans with libmc's planner
 * and writes the plan or explanation.
 */
#ifndef EVICTPLAN_H
#define EVICTPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/candidates.h"
#include "mc/parse.h"

/* A --target or --lowerbound value: bytes, or a percentage of a whole. */
struct amount {
	const char *text; /* as given, for messages; NULL when not given */
	struct mc_amount v;
};

struct evictplan {
	const char *policy; /* -p FILE; NULL: the built-in default */
	const char *input;  /* -i FILE; NULL or "-": stdin */
	struct amount target, lowerbound;
	bool soft_pinned_pass, json, explain, check;
};

extern struct evictplan ep;

/* Everything after option parsing; returns the exit status. */
int evictplan_check(void);
int evictplan_run(void);

#endif
