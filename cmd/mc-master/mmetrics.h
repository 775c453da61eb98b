/*
 * The master's metrics registry, and the collector of the gauges of the
 * store, the peers and the process, filled from live state just before
 * each /metrics render. Every module registers its own collector; the
 * dispatcher counts requests per method (mc/conn.h).
 */
#ifndef MASTER_MMETRICS_H
#define MASTER_MMETRICS_H

#include "mc/metrics.h"

struct master;

struct mmetrics {
	struct mc_metrics *reg;
	/* mc_read_raced_total: copies readers found gone after their replica list (read_raced) */
	struct mc_metric *read_raced;
	/* mc_sweeps_total: periodic sweeps run to their end (main.c, sweep_cb) */
	struct mc_metric *sweeps;
};

int mmetrics_init(struct master *m);
/* One evict_candidates answer: the keys it carried and how long it took. */
void mmetrics_rank_query(struct master *m, uint64_t keys, double seconds);
/* One heartbeat's local reads: recorded as accesses, and naming no object. */
void mmetrics_local_reads(struct master *m, uint64_t recorded, uint64_t unknown);
void mmetrics_free(struct mmetrics *mx);

/* The registry as a module, the first to start (start.c runs every module's). */
struct master_module;
extern const struct master_module mmetrics_module;

#endif
