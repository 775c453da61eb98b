/*
 * The peer's metrics (served with --http): each module's are declared
 * below as an X-macro of rows, and one walk over every row both
 * registers the series at start and sets their values at each scrape.
 *
 * A row has one of three shapes:
 *   S(name, type, help, when, value)            one series
 *   E(name, type, help, when, label, n, name_of(i), value(i))
 *                                               one per i in [0, n)
 *   P(name, type, help, when, labels, n, name_of(i), m, name_of(j), value(i, j))
 *                                               one per pair, labels "a,b"
 * when says whether the series exists (it may look at i and j). Names,
 * labels and help are what mc-peer(8) documents.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "mc/conn.h"
#include "mc/metrics.h"
#include "mc/rate.h"

#include "peer.h"
#include "copier.h"
#include "diskq.h"
#include "mover.h"
#include "reclaim.h"
#include "tasks.h"

struct peer_metrics {
	struct mc_metrics *reg;
};

static const char *const io_ops[2] = { "read", "write" };
static const char *const disk_kinds[3] = { "write", "read", "seal" };
static const char *const task_outcomes[3] = { "done", "failed", "repeated" };
static const char *const copy_outcomes[3] = { "done", "refused", "failed" };
static const char *const move_outcomes[6] = { "queued",	 "done", "failed",
					      "retried", "lost", "no_room" };
static const char *const room_wait_outcomes[ROOM_WAIT_OUTCOMES] = {
	[ROOM_WAIT_PLACED] = "placed",
	[ROOM_WAIT_TIMEOUT] = "timeout",
	[ROOM_WAIT_CANCELLED] = "cancelled",
	[ROOM_WAIT_GONE] = "gone",
};

/* Whether tier t is held and kept on disk (one that seals its copies). */
static bool
on_disk(const struct peer *p, int t)
{
	return p->media[t] != NULL && p->media[t]->ops->seal != NULL;
}

/* A disk tier's own I/O: ops, bytes or seconds (what), read (0) or write (1). */
static double
io_value(const struct peer *p, int t, int what, int op)
{
	struct medium_io io;

	medium_io(p->media[t], &io);
	switch (what) {
	case 0:
		return (double)(op ? io.writes : io.reads);
	case 1:
		return (double)(op ? io.write_bytes : io.read_bytes);
	case 2:
		return (double)(op ? io.write_ns : io.read_ns) / 1e9;
	default:
		return (double)io.corrupt;
	}
}

/* The mover's count of kind k, outcome i in move_outcomes' order. */
static double
move_value(const struct peer *p, int k, int i)
{
	const struct mover_stats *ms = mover_stats(p->mover);
	const uint64_t v[6] = { ms->queued[k],	ms->done[k], ms->failed[k],
				ms->retried[k], ms->lost[k], ms->no_room[k] };

	return (double)v[i];
}

/* The copier's count of outcome i, in copy_outcomes' order. */
static double
copy_value(const struct peer *p, int i)
{
	const struct copier_stats *cs = copier_stats(p->copier);
	const uint64_t v[3] = { cs->done, cs->refused, cs->failed };

	return (double)v[i];
}

/* The disk queue's count: jobs by kind (0..2), failed (3), on the loop (4, 5), staged (6). */
static double
disk_value(const struct peer *p, int which)
{
	struct diskq_stats ds;

	diskq_stats(p->diskq, &ds);
	{
		const uint64_t v[7] = { ds.writes,	ds.reads,      ds.seals,       ds.failed,
					ds.loop_writes, ds.loop_reads, ds.staged_bytes };

		return (double)v[which];
	}
}

/* How many kinds the peer's tasks serve (0 before the link made them). */
static int
task_kinds(const struct peer *p)
{
	int n = 0;

	while (p->tasks != NULL && n < PEER_TASK_KINDS_MAX && p->tasks->kinds[n].name != NULL)
		n++;
	return n;
}

/* Items of task kind k by outcome i, in task_outcomes' order. */
static double
task_value(const struct peer *p, int k, int i)
{
	const struct peer_task_stats *st = &p->tasks->count[k];
	const uint64_t v[3] = { st->done, st->failed, st->repeated };

	return (double)v[i];
}

static double
young_value(const struct peer *p, bool bytes)
{
	uint64_t n, b;

	reclaimer_young_taken(p->reclaim, &n, &b);
	return (double)(bytes ? b : n);
}

/* tier i's band now (reclaimer_band): its high end, else its low one. */
static double
band_value(const struct peer *p, int i, bool high)
{
	struct mc_band b;

	reclaimer_band(p->reclaim, i, &b);
	return (double)(high ? b.high : b.low);
}

static double
objects_value(struct peer *p)
{
	uint64_t objects, bytes;

	pindex_counts(&p->index, &objects, &bytes);
	return (double)objects;
}

/*
 * The time connections waited for egress tokens, in seconds: what the
 * limit costs readers. A count of waits would measure the bucket's
 * slices instead (a throttled read waits every few milliseconds,
 * however long it is delayed in all).
 */
static double
throttled_value(const struct peer *p)
{
	struct mc_rate_stats st;

	mc_rate_stats_get(p->egress, &st);
	return (double)st.wait_ns / 1e9;
}

static double
malformed_value(void)
{
	struct mc_conn_stats cs;

	mc_conn_stats_get(&cs);
	return (double)cs.malformed;
}

/* ---- each module's metrics ---- */

/* index.c: what is held */
#define INDEX_METRICS(S, E, P) \
	S("mc_peer_objects", MC_GAUGE, "Objects held.", true, objects_value(p))

/* medium*.c: each tier's room, and a disk tier's own I/O */
#define MEDIUM_METRICS(S, E, P)                                                                 \
	E("mc_peer_tier_bytes_used", MC_GAUGE,                                                  \
	  "Bytes allocated in the tier, in its units (DRAM pages; SSD sectors with headers).",  \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i),                          \
	  (double)medium_used(p->media[i]))                                                     \
	E("mc_peer_tier_bytes_capacity", MC_GAUGE, "Capacity of the tier in bytes.",            \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i),                          \
	  (double)medium_capacity(p->media[i]))                                                 \
	P("mc_peer_medium_ops_total", MC_COUNTER,                                               \
	  "Reads and writes of a tier kept on disk (reads it served include replies sent with " \
	  "sendfile).",                                                                         \
	  on_disk(p, i), "tier,op", MC_TIER_COUNT, mc_tier_name(i), 2, io_ops[j],               \
	  io_value(p, i, 0, j))                                                                 \
	P("mc_peer_medium_bytes_total", MC_COUNTER,                                             \
	  "Bytes read and written on a tier kept on disk.", on_disk(p, i), "tier,op",           \
	  MC_TIER_COUNT, mc_tier_name(i), 2, io_ops[j], io_value(p, i, 1, j))                   \
	P("mc_peer_medium_seconds_total", MC_COUNTER,                                           \
	  "Time spent in a disk tier's own reads and writes (the mover's copies and recovery; " \
	  "replies and client writes run in their connections).",                               \
	  on_disk(p, i), "tier,op", MC_TIER_COUNT, mc_tier_name(i), 2, io_ops[j],               \
	  io_value(p, i, 2, j))                                                                 \
	E("mc_peer_medium_corrupt_total", MC_COUNTER,                                           \
	  "Copies found torn or corrupt at start, and dropped.", on_disk(p, i), "tier",         \
	  MC_TIER_COUNT, mc_tier_name(i), io_value(p, i, 3, 0))

/* pool.c: copies freed and dropped */
#define POOL_METRICS(S, E, P)                                                                     \
	P("mc_peer_capacity_drops_total", MC_COUNTER,                                             \
	  "Copies dropped for capacity instead of moved down, by tier and why.",                  \
	  p->media[i] != NULL, "tier,reason", MC_TIER_COUNT, mc_tier_name(i), POOL_DROP_WHYS,     \
	  pool_drop_why_name(j), (double)atomic_load(&p->pool.dropped[i][j]))                     \
	P("mc_peer_evictions_total", MC_COUNTER, "Copies freed, by tier and reason.",             \
	  p->media[i] != NULL, "tier,reason", MC_TIER_COUNT, mc_tier_name(i), POOL_REASON_COUNT,  \
	  pool_reason_name(j), (double)pool_evictions(&p->pool, i, j))                            \
	E("mc_peer_pool_evicts_total", MC_COUNTER, "Copies asked to be freed, by outcome.", true, \
	  "outcome", POOL_OUTCOMES, pool_outcome_name(i),                                         \
	  (double)atomic_load(&p->pool.outcomes[i]))

/* mover.c: moves between tiers */
#define MOVER_METRICS(S, E, P)                                                             \
	E("mc_peer_moving_bytes", MC_GAUGE, "Bytes being moved out of the tier.",          \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i),                     \
	  p->mover ? (double)mover_in_flight(p->mover, i) : 0)                             \
	P("mc_peer_moves_total", MC_COUNTER,                                               \
	  "Moves between tiers (demotions and promotions), by outcome.", p->mover != NULL, \
	  "kind,outcome", MOVE_KINDS, mover_kind_name(i), 6, move_outcomes[j],             \
	  move_value(p, i, j))

/* copier.c: dynamic replicas made from this peer's copies */
#define COPIER_METRICS(S, E, P)                                                              \
	E("mc_peer_copies_total", MC_COUNTER,                                                \
	  "Dynamic replicas this peer was the source of, by outcome: written to the target " \
	  "(done), not started by the master (refused), or failed after (failed, revoked).", \
	  p->copier != NULL, "outcome", 3, copy_outcomes[i], copy_value(p, i))               \
	S("mc_peer_copies_running", MC_GAUGE,                                                \
	  "Dynamic replicas being made from this peer now (started and not over).",          \
	  p->copier != NULL, (double)copier_running(p->copier))                              \
	S("mc_peer_copy_bytes_total", MC_COUNTER, "Bytes of the dynamic replicas done.",     \
	  p->copier != NULL, (double)copier_stats(p->copier)->bytes)

/* reclaim.c: this peer's own eviction */
#define RECLAIM_METRICS(S, E, P)                                                                 \
	E("mc_peer_tier_occupancy_min", MC_GAUGE,                                                \
	  "The lowest usage, a fraction of capacity, this peer's own eviction left the tier at " \
	  "(1 before it ran).",                                                                  \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i),                           \
	  reclaimer_occupancy_min(p->reclaim, i))                                                \
	E("mc_peer_tier_band_high_bytes", MC_GAUGE,                                              \
	  "Where this peer's eviction of the tier starts now: the high end of its band.",        \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i), band_value(p, i, true))   \
	E("mc_peer_tier_band_low_bytes", MC_GAUGE,                                               \
	  "Where this peer's eviction of the tier stops now: the low end of its band.",          \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i), band_value(p, i, false))  \
	E("mc_peer_tier_inflight_bytes", MC_GAUGE,                                               \
	  "Room on the tier that writes and moves in hold and have not committed.",              \
	  p->media[i] != NULL, "tier", MC_TIER_COUNT, mc_tier_name(i),                           \
	  (double)reclaimer_inflight(p->reclaim, i))                                             \
	E("mc_peer_local_evictions_total", MC_COUNTER,                                           \
	  "What this peer's own eviction did: plans made (round), victims of its plan and of "   \
	  "the master's ranking freed (key, master_key), plans that found nothing "              \
	  "(no_candidate) or only group members (stalled), plans that left young copies out "    \
	  "(young).",                                                                            \
	  true, "event", RECLAIM_EVENTS, reclaim_event_name(i),                                  \
	  (double)reclaimer_events(p->reclaim, i))                                               \
	S("mc_peer_rank_queries_total", MC_COUNTER,                                              \
	  "Ranking queries (evict_candidates) sent to the master.", true,                        \
	  (double)reclaimer_asked(p->reclaim))                                                   \
	S("mc_evicted_young_total", MC_COUNTER,                                                  \
	  "Copies younger than --young that this peer's own eviction took for a write that "     \
	  "needed their room.",                                                                  \
	  true, young_value(p, false))                                                           \
	S("mc_evicted_young_bytes_total", MC_COUNTER, "Bytes of those copies.", true,            \
	  young_value(p, true))

/* diskq.c: the disk queue's jobs and staging */
#define DISKQ_METRICS(S, E, P)                                                                   \
	E("mc_peer_disk_jobs_total", MC_COUNTER,                                                 \
	  "Writes, cold reads and header seals the disk queue's workers ran.", p->diskq != NULL, \
	  "kind", 3, disk_kinds[i], disk_value(p, i))                                            \
	E("mc_peer_disk_loop_total", MC_COUNTER,                                                 \
	  "Writes and reads of a disk tier the loop streamed itself, the disk queue's staging "  \
	  "being spent.",                                                                        \
	  p->diskq != NULL, "op", 2, disk_kinds[i], disk_value(p, 4 + i))                        \
	S("mc_peer_disk_failed_total", MC_COUNTER,                                               \
	  "Disk queue jobs that failed or were cancelled.", p->diskq != NULL, disk_value(p, 3))  \
	S("mc_peer_disk_staged_bytes", MC_GAUGE,                                                 \
	  "Staging the disk queue holds for copies in flight.", p->diskq != NULL,                \
	  disk_value(p, 6))

/* dataplane.c: reads, writes and the grants they carry */
#define DATAPLANE_METRICS(S, E, P)                                                              \
	S("mc_peer_reads_total", MC_COUNTER, "Reads served.", true, (double)p->st.reads)        \
	S("mc_peer_writes_total", MC_COUNTER, "Writes stored.", true, (double)p->st.writes)     \
	S("mc_peer_read_misses_total", MC_COUNTER, "Reads of a key or version not held.", true, \
	  (double)p->st.read_misses)                                                            \
	S("mc_peer_writes_abandoned_total", MC_COUNTER,                                         \
	  "Writes abandoned when their bytes stopped coming.", true,                            \
	  (double)p->st.writes_abandoned)                                                       \
	S("mc_peer_writes_cancelled_total", MC_COUNTER,                                         \
	  "Writes ended before their bytes were in: the master dropped their put.", true,       \
	  (double)p->st.writes_cancelled)                                                       \
	S("mc_peer_writes_expired_total", MC_COUNTER,                                           \
	  "Writes ended while their bytes came: their grant had expired.", true,                \
	  (double)p->st.writes_expired)                                                         \
	E("mc_peer_room_waits_total", MC_COUNTER,                                               \
	  "Granted writes that waited for room in a full tier, by outcome.", true, "outcome",   \
	  ROOM_WAIT_OUTCOMES, room_wait_outcomes[i], (double)p->st.room_waits[i])               \
	S("mc_peer_room_waiting", MC_GAUGE, "Granted writes waiting for room now.", true,       \
	  (double)peer_room_waiting(p))                                                         \
	S("mc_peer_bytes_in_total", MC_COUNTER, "Object bytes written.", true,                  \
	  (double)p->st.bytes_in)                                                               \
	S("mc_peer_bytes_out_total", MC_COUNTER, "Object bytes read.", true,                    \
	  (double)p->st.bytes_out)                                                              \
	S("mc_peer_malformed_messages_total", MC_COUNTER,                                       \
	  "Connections closed for a malformed message.", true, malformed_value())               \
	E("mc_peer_grants_refused_total", MC_COUNTER,                                           \
	  "Reads and writes refused for their grant, by reason.", i > MC_GRANT_OK, "reason",    \
	  MC_GRANT_VERDICTS, mc_grant_verdict_name(i), (double)p->grants.refused[i])

/* main.c: the data plane's egress bucket (mc/rate.h) */
#define EGRESS_METRICS(S, E, P)                                                               \
	S("mc_peer_egress_limit_bytes", MC_GAUGE,                                             \
	  "Bytes a second the data plane sends at most (--egress-limit; 0: no limit).", true, \
	  (double)mc_rate_limit(p->egress))                                                   \
	S("mc_peer_egress_throttled_seconds_total", MC_COUNTER,                               \
	  "Time data-plane connections waited for the egress limit, summed over them.", true, \
	  throttled_value(p))

/* link.c and inventory.c: the master's side of this peer */
#define LINK_METRICS(S, E, P)                                                                    \
	S("mc_peer_registrations_total", MC_COUNTER,                                             \
	  "Registrations the master accepted as a new peer.", true, (double)p->st.registrations) \
	S("mc_peer_resumes_total", MC_COUNTER,                                                   \
	  "Registrations the master resumed after a lost link.", true, (double)p->st.resumes)    \
	S("mc_peer_inventory_reports_total", MC_COUNTER,                                         \
	  "Whole inventories reported to the master.", true, (double)p->st.inventory_reports)    \
	S("mc_peer_commit_notices_total", MC_COUNTER,                                            \
	  "Commits the master told of for copies held here.", true, (double)p->st.commit_notices)

/* tasks.c: the master's tasks, by kind */
#define TASKS_METRICS(S, E, P)                                                               \
	P("mc_peer_tasks_total", MC_COUNTER,                                                 \
	  "Items of the master's tasks, by kind and outcome: run (done), run and failed "    \
	  "(failed), or seen before and only acknowledged again (repeated).",                \
	  true, "kind,outcome", task_kinds(p), p->tasks->kinds[i].name, 3, task_outcomes[j], \
	  task_value(p, i, j))

#define PEER_METRICS(S, E, P)      \
	MEDIUM_METRICS(S, E, P)    \
	POOL_METRICS(S, E, P)      \
	MOVER_METRICS(S, E, P)     \
	COPIER_METRICS(S, E, P)    \
	RECLAIM_METRICS(S, E, P)   \
	DISKQ_METRICS(S, E, P)     \
	INDEX_METRICS(S, E, P)     \
	DATAPLANE_METRICS(S, E, P) \
	EGRESS_METRICS(S, E, P) LINK_METRICS(S, E, P) TASKS_METRICS(S, E, P)

/* Every row's series, registered when new, set to their values now. */
static void
walk(struct mc_metrics *r, struct peer *p)
{
	char label[128];

#define S(name, type, help, when, value) \
	if (when)                        \
		mc_metric_put(r, name, type, help, NULL, NULL, value);
#define E(name, type, help, when, labels, n, name_of, value) \
	for (int i = 0; i < (n); i++)                        \
		if (when)                                    \
			mc_metric_put(r, name, type, help, labels, name_of, value);
#define P(name, type, help, when, labels, n, name_of, m, name_of2, value)           \
	for (int i = 0; i < (n); i++)                                               \
		for (int j = 0; j < (m) && (when); j++) {                           \
			snprintf(label, sizeof(label), "%s,%s", name_of, name_of2); \
			mc_metric_put(r, name, type, help, labels, label, value);   \
		}
	PEER_METRICS(S, E, P)
#undef S
#undef E
#undef P
}

static void
collect(struct mc_metrics *r, void *arg)
{
	struct peer *p = arg;

	mc_conn_stats_export(r);
	walk(r, p);
}

struct peer_metrics *
peer_metrics_new(struct peer *p)
{
	struct peer_metrics *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	pm->reg = mc_metrics_new();
	if (!pm->reg) {
		free(pm);
		return NULL;
	}
	/* each series exists from the start, in the order of the rows */
	walk(pm->reg, p);
	mc_metrics_on_collect(pm->reg, collect, p);
	return pm;
}

struct mc_metrics *
peer_metrics_registry(const struct peer_metrics *pm)
{
	return pm ? pm->reg : NULL;
}

void
peer_metrics_free(struct peer_metrics *pm)
{
	if (!pm)
		return;
	mc_metrics_free(pm->reg);
	free(pm);
}
