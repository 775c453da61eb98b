/*
 * The master's metrics: per-method request and failure counters, the
 * get_replica_list latency histogram, and gauges filled from live state
 * just before each /metrics render.
 */
#ifndef MASTER_MMETRICS_H
#define MASTER_MMETRICS_H

#include "mc/metrics.h"

struct master;

/* Every RPC method the master serves; indexes the counters below. */
enum method {
	M_HELLO,
	M_PUT_START,
	M_PUT_END,
	M_PUT_REVOKE,
	M_GET_REPLICA_LIST,
	M_BATCH_GET_REPLICA_LIST,
	M_EXIST,
	M_BATCH_EXIST,
	M_REMOVE,
	M_BATCH_REMOVE,
	M_REMOVE_PREFIX,
	M_LIST,
	M_STAT,
	M_STATS,
	M_PEERS,
	M_PEER_REGISTER,
	M_PEER_HEARTBEAT,
	M_PEER_UNREGISTER,
	M_PEER_INVENTORY,
	M_SNAPSHOT_SAVE,
	M_SNAPSHOT_RESTORE,
	M_SNAPSHOT_STATUS,
	M_SOFTPIN_SHOW,
	M_SOFTPIN_LIST,
	M_SOFTPIN_STATS,
	M_SOFTPIN_EXPIRE,
	M_CANDIDATES,
	M_EVICT_PLAN,
	M_EVICT_RUN,
	M_RELEASE,
	M_CLOCK_SET,
	M_COUNT
};

extern const char *const method_names[M_COUNT];

struct mmetrics {
	struct mc_metrics *reg;
	struct mc_metric *requests[M_COUNT];
	struct mc_metric *failures[M_COUNT];
	struct mc_metric *grl_seconds;
};

int mmetrics_init(struct master *m);
void mmetrics_free(struct mmetrics *mx);

static inline void
mmetrics_request(struct mmetrics *mx, enum method k)
{
	mc_metric_inc(mx->requests[k]);
}

static inline void
mmetrics_failure(struct mmetrics *mx, enum method k)
{
	mc_metric_inc(mx->failures[k]);
}

#endif
