/*
 * mc-evict-plan: the filter between `mc-cli candidates` and `mc-cli
 * evict --plan -`. main.c declares the options; amount.c reads the
 * "SIZE or PERCENT" values of --target and --lowerbound; run.c reads the
 * view, plans with libmc's planner and writes the plan or explanation.
 */
#ifndef EVICTPLAN_H
#define EVICTPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/candidates.h"

/* A --target or --lowerbound value: bytes, or a percentage of a whole. */
struct amount {
	const char *text; /* as given, for messages; NULL when not given */
	bool is_pct;
	uint64_t pct_micro; /* when is_pct: millionths of a percent, 0..10^8 */
	uint64_t bytes;	    /* when !is_pct */
};

struct evictplan {
	const char *policy; /* -p FILE; NULL: the built-in default */
	const char *input;  /* -i FILE; NULL or "-": stdin */
	struct amount target, lowerbound;
	bool soft_pinned_pass, json, explain, check;
};

extern struct evictplan ep;

/* mc_opt setter for a struct amount: "2GiB", "4096", "20%", "12.5%". */
int amount_set(const char *v, void *target, char *why);
/* The bytes a resolves to; a percentage is of whole, rounded up. */
uint64_t amount_bytes(const struct amount *a, uint64_t whole);
/* The sum of the candidates' bytes (saturating). */
uint64_t view_bytes(const struct mc_cand_view *v);

/* Everything after option parsing; returns the exit status. */
int evictplan_check(void);
int evictplan_run(void);

#endif
