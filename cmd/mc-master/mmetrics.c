/*
 * Master metrics families and the collector that refreshes gauges.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdint.h>

#include "mc/clock.h"
#include "mc/conn.h"
#include "evict.h"
#include "master.h"
#include "mmetrics.h"

const char *const method_names[M_COUNT] = {
	[M_HELLO] = "hello",
	[M_PUT_START] = "put_start",
	[M_PUT_END] = "put_end",
	[M_PUT_REVOKE] = "put_revoke",
	[M_GET_REPLICA_LIST] = "get_replica_list",
	[M_BATCH_GET_REPLICA_LIST] = "batch_get_replica_list",
	[M_EXIST] = "exist",
	[M_BATCH_EXIST] = "batch_exist",
	[M_REMOVE] = "remove",
	[M_BATCH_REMOVE] = "batch_remove",
	[M_REMOVE_PREFIX] = "remove_prefix",
	[M_LIST] = "list",
	[M_STAT] = "stat",
	[M_STATS] = "stats",
	[M_PEERS] = "peers",
	[M_PEER_REGISTER] = "peer_register",
	[M_PEER_HEARTBEAT] = "peer_heartbeat",
	[M_PEER_UNREGISTER] = "peer_unregister",
	[M_PEER_INVENTORY] = "peer_inventory",
	[M_SNAPSHOT_SAVE] = "snapshot_save",
	[M_SNAPSHOT_RESTORE] = "snapshot_restore",
	[M_SNAPSHOT_STATUS] = "snapshot_status",
	[M_SOFTPIN_SHOW] = "softpin_show",
	[M_SOFTPIN_LIST] = "softpin_list",
	[M_SOFTPIN_STATS] = "softpin_stats",
	[M_SOFTPIN_EXPIRE] = "softpin_expire",
	[M_CANDIDATES] = "candidates",
	[M_EVICT_PLAN] = "evict_plan",
	[M_EVICT_RUN] = "evict_run",
	[M_RELEASE] = "release",
	[M_CLOCK_SET] = "clock_set",
};

static void
gauge(struct mc_metrics *r, const char *name, const char *help, const char *label,
      const char *value, double v)
{
	struct mc_metric *s = mc_metric_get(r, name, MC_GAUGE, help, label, value);

	if (s != NULL)
		mc_metric_set(s, v);
}

static void
collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;
	const struct store *s = &m->store;
	unsigned alive = 0;
	struct mc_history_stats hs;
	struct mc_conn_stats cs;
	struct mc_metric *mal;

	gauge(r, "mc_objects", "Objects held.", NULL, NULL, (double)s->objects.count);
	gauge(r, "mc_bytes", "Bytes of all objects (one copy each).", NULL, NULL, (double)s->bytes);
	mc_history_stats(s->hist, &hs);
	gauge(r, "mc_history_ghosts", "Evicted keys whose LRFU value the history remembers.", NULL,
	      NULL, (double)hs.ghosts);
	gauge(r, "mc_history_bytes", "Memory of the eviction history (the ghost table).", NULL,
	      NULL, (double)mc_history_memory(s->hist));
	gauge(r, "mc_history_evicted", "Values handed to the history as their objects left.", NULL,
	      NULL, (double)hs.evicted);
	gauge(r, "mc_history_resumed", "Keys written again that resumed their value from a ghost.",
	      NULL, NULL, (double)hs.resumed);
	gauge(r, "mc_history_half_life_factor",
	      "LRFU half-life in cache-fulls of accesses, as the climber set it.", NULL, NULL,
	      hs.factor);
	gauge(r, "mc_history_hit_rate", "Hit rate of the climber's last period.", NULL, NULL,
	      hs.last_hit_rate);
	for (uint32_t i = 0; i < s->ntenants; i++) {
		const struct tenant *t = &s->tenants[i];
		gauge(r, "mc_tenant_bytes", "Bytes of objects per tenant.", "tenant", t->name,
		      (double)t->bytes);
		gauge(r, "mc_tenant_objects", "Objects per tenant.", "tenant", t->name,
		      (double)t->objects);
	}
	for (uint32_t i = 0; i < m->peers.n; i++)
		if (peer_alive(m->peers.v[i], m->cfg.peer_ttl))
			alive++;
	for (uint32_t i = 0; i < m->peers.n; i++) {
		const struct peer *p = m->peers.v[i];

		for (int t = 0; t < TIER_COUNT; t++) {
			const struct peer_tier *pt = &p->tiers[t];
			char label[64];

			if (!pt->present)
				continue;
			snprintf(label, sizeof(label), "%u,%s", p->id, tier_name(t));
			gauge(r, "mc_peer_tier_used_bytes",
			      "Bytes the master accounts on a peer tier (copies and reservations).",
			      "peer,tier", label, (double)pt->used);
			gauge(r, "mc_peer_tier_reported_bytes",
			      "Bytes a peer tier said it holds in its last heartbeat.", "peer,tier",
			      label, (double)pt->reported);
			gauge(r, "mc_peer_tier_capacity_bytes", "Capacity of a peer tier.",
			      "peer,tier", label, (double)pt->capacity);
		}
	}
	gauge(r, "mc_peers", "Registered peers.", NULL, NULL, m->peers.n);
	gauge(r, "mc_peers_alive", "Peers whose heartbeat is within --peer-ttl.", NULL, NULL,
	      alive);
	gauge(r, "mc_connections", "Open client and peer connections.", NULL, NULL,
	      m->server != NULL ? mc_server_conn_count(m->server) : 0);
	mc_conn_stats_get(&cs);
	mal = mc_metric_get(r, "mc_malformed_messages_total", MC_COUNTER,
			    "Connections closed for a malformed or oversized message.", NULL, NULL);
	if (mal != NULL)
		mc_metric_set(mal, (double)cs.malformed);
	struct mallinfo2 mi = mallinfo2();
	gauge(r, "mc_heap_bytes", "Heap bytes in use (malloc).", NULL, NULL, (double)mi.uordblks);
	softpin_collect(m, r);
	evict_collect(m, r);
	lease_collect(m, r);
	put_collect(m, r);
}

int
mmetrics_init(struct master *m)
{
	struct mmetrics *mx = &m->mx;

	mx->reg = mc_metrics_new();
	if (mx->reg == NULL)
		return -1;
	for (int k = 0; k < M_COUNT; k++) {
		mx->requests[k] =
			mc_metric_get(mx->reg, "mc_requests_total", MC_COUNTER,
				      "Requests handled, by method.", "method", method_names[k]);
		mx->failures[k] = mc_metric_get(mx->reg, "mc_request_failures_total", MC_COUNTER,
						"Requests answered with an error, by method.",
						"method", method_names[k]);
		if (mx->requests[k] == NULL || mx->failures[k] == NULL)
			goto fail;
	}
	mx->grl_seconds =
		mc_metric_get(mx->reg, "mc_get_replica_list_seconds", MC_HISTOGRAM,
			      "Time to answer get_replica_list (batch: per call).", NULL, NULL);
	if (mx->grl_seconds == NULL)
		goto fail;
	mc_metrics_on_collect(mx->reg, collect, m);
	return 0;
fail:
	mmetrics_free(mx);
	return -1;
}

void
mmetrics_free(struct mmetrics *mx)
{
	if (mx->reg != NULL)
		mc_metrics_free(mx->reg);
	mx->reg = NULL;
}
