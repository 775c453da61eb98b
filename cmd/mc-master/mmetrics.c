/*
 * Master metrics families and the collector that refreshes gauges.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdint.h>

#include "mc/clock.h"
#include "mc/conn.h"
#include "master.h"
#include "mmetrics.h"
#include "peers.h"
#include "store.h"
#include "recency.h"

static void
gauge(struct mc_metrics *r, const char *name, const char *help, const char *label,
      const char *value, double v)
{
	mc_metric_put(r, name, MC_GAUGE, help, label, value, v);
}

static void
collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;
	const struct store *s = m->store;
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
		gauge(r, "mc_tenant_meta_bytes",
		      "Keys and per-object overhead per tenant, charged to its quota beside its "
		      "bytes.",
		      "tenant", t->name, (double)t->meta_bytes);
		gauge(r, "mc_tenant_objects", "Objects per tenant.", "tenant", t->name,
		      (double)t->objects);
		gauge(r, "mc_tenant_connections",
		      "Connections whose hello bound the tenant, as --max-conns-per-tenant counts.",
		      "tenant", t->name, (double)m->tenant_conns[i]);
	}
	for (uint32_t i = 0; i < m->peers->n; i++)
		if (peer_alive(m->peers->v[i], m->cfg.peer_ttl))
			alive++;
	for (uint32_t i = 0; i < m->peers->n; i++) {
		const struct peer *p = m->peers->v[i];

		for (int t = 0; t < MC_TIER_COUNT; t++) {
			const struct peer_tier *pt = &p->tiers[t];
			char label[64];

			if (!pt->present)
				continue;
			snprintf(label, sizeof(label), "%u,%s", p->id, mc_tier_name(t));
			gauge(r, "mc_peer_tier_used_bytes",
			      "Bytes the master accounts on a peer tier (copies and reservations).",
			      "peer,tier", label, (double)pt->used);
			gauge(r, "mc_peer_tier_moving_bytes",
			      "Bytes a peer tier's demotions are taking out (counted in used until "
			      "they land).",
			      "peer,tier", label, (double)pt->moving);
			gauge(r, "mc_peer_tier_reported_bytes",
			      "Bytes a peer tier said it holds in its last heartbeat.", "peer,tier",
			      label, (double)pt->reported);
			gauge(r, "mc_peer_tier_capacity_bytes", "Capacity of a peer tier.",
			      "peer,tier", label, (double)pt->capacity);
		}
	}
	gauge(r, "mc_peers", "Registered peers.", NULL, NULL, m->peers->n);
	gauge(r, "mc_peers_alive", "Peers whose heartbeat is within --peer-ttl.", NULL, NULL,
	      alive);
	gauge(r, "mc_connections", "Open client and peer connections.", NULL, NULL,
	      m->server != NULL ? mc_server_conn_count(m->server) : 0);
	mc_conn_stats_get(&cs);
	mal = mc_metric_get(r, "mc_malformed_messages_total", MC_COUNTER,
			    "Connections closed for a malformed or oversized message.", NULL, NULL);
	if (mal != NULL)
		mc_metric_set(mal, (double)cs.malformed);
	mc_conn_stats_export(r);
	mal = mc_metric_get(r, "mc_connections_closed_total", MC_COUNTER,
			    "Connections closed or refused by a connection limit, by reason.",
			    "reason", "per_tenant");
	if (mal != NULL)
		mc_metric_set(mal, (double)m->refused_per_tenant);
	for (int why = 0; why < PEER_REFUSED_COUNT; why++) {
		mal = mc_metric_get(r, "mc_peer_register_refused_total", MC_COUNTER,
				    "Peer registrations refused, by reason: an address another "
				    "holds, an identity live elsewhere, a capacity past "
				    "--max-peer-capacity.",
				    "reason", peer_refusal_name(why));
		if (mal != NULL)
			mc_metric_set(mal, (double)m->peers->refused[why]);
	}
	gauge(r, "mc_rank_index_entries",
	      "Entries of the recency index, one per (object, peer, tier) holding a copy.", NULL,
	      NULL, (double)s->rank.live);
	gauge(r, "mc_rank_index_bytes", "Memory of the recency index.", NULL, NULL,
	      (double)recency_memory(&s->rank));
	struct mallinfo2 mi = mallinfo2();
	gauge(r, "mc_heap_bytes", "Heap bytes in use (malloc).", NULL, NULL, (double)mi.uordblks);
}

#define RANK_QUERIES "mc_rank_queries_total", MC_COUNTER, "Calls of evict_candidates answered."
#define RANK_KEYS \
	"mc_rank_answer_keys_total", MC_COUNTER, "Keys the answers of evict_candidates carried."
#define RANK_SECONDS                           \
	"mc_rank_query_seconds", MC_HISTOGRAM, \
		"Time an evict_candidates call spent walking the recency index."
#define LOCAL_READS                                                                        \
	"mc_local_reads_total", MC_COUNTER,                                                \
		"Local reads peers reported on their heartbeats, recorded as accesses or " \
		"naming no object.",                                                       \
		"result"

void
mmetrics_rank_query(struct master *m, uint64_t keys, double seconds)
{
	struct mc_metric *s;

	if (m->mx->reg == NULL)
		return;
	if ((s = mc_metric_get(m->mx->reg, RANK_QUERIES, NULL, NULL)) != NULL)
		mc_metric_inc(s);
	if ((s = mc_metric_get(m->mx->reg, RANK_KEYS, NULL, NULL)) != NULL)
		mc_metric_add(s, (double)keys);
	if ((s = mc_metric_get(m->mx->reg, RANK_SECONDS, NULL, NULL)) != NULL)
		mc_metric_observe(s, seconds);
}

void
mmetrics_local_reads(struct master *m, uint64_t recorded, uint64_t unknown)
{
	struct mc_metric *s;

	if (m->mx->reg == NULL)
		return;
	if (recorded > 0 && (s = mc_metric_get(m->mx->reg, LOCAL_READS, "recorded")) != NULL)
		mc_metric_add(s, (double)recorded);
	if (unknown > 0 && (s = mc_metric_get(m->mx->reg, LOCAL_READS, "unknown")) != NULL)
		mc_metric_add(s, (double)unknown);
}

int
mmetrics_init(struct master *m)
{
	struct mmetrics *mx = m->mx;

	mx->reg = mc_metrics_new();
	if (mx->reg == NULL)
		return -1;
	/* the ranking's series exist from the start, so a scrape sees them at 0 */
	mc_metric_get(mx->reg, RANK_QUERIES, NULL, NULL);
	mc_metric_get(mx->reg, RANK_KEYS, NULL, NULL);
	mc_metric_get(mx->reg, RANK_SECONDS, NULL, NULL);
	mc_metric_get(mx->reg, LOCAL_READS, "recorded");
	mc_metric_get(mx->reg, LOCAL_READS, "unknown");
	mc_metrics_on_collect(mx->reg, collect, m);
	mc_metrics_on_collect(mx->reg, tasks_collect, &m->peers->tasks);
	mx->read_raced = mc_metric_get(
		mx->reg, "mc_read_raced_total", MC_COUNTER,
		"Reads that found their copy gone after the replica list (readers' read_raced).",
		NULL, NULL);
	mx->sweeps = mc_metric_get(
		mx->reg, "mc_sweeps_total", MC_COUNTER,
		"Periodic sweeps run to their end (expiries, deadlines, watermarks).", NULL, NULL);
	return mx->read_raced != NULL && mx->sweeps != NULL ? 0 : -1;
}

void
mmetrics_free(struct mmetrics *mx)
{
	if (mx->reg != NULL)
		mc_metrics_free(mx->reg);
	mx->reg = NULL;
}

static int
mmetrics_start(struct master *m, struct mc_err *err)
{
	if (mmetrics_init(m) != 0)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for metrics");
	return 0;
}

static void
mmetrics_stop(struct master *m)
{
	mmetrics_free(m->mx);
}

const struct master_module mmetrics_module = {
	.name = "metrics",
	.init = mmetrics_start,
	.free = mmetrics_stop,
};
