/*
 * mc-peer: the storage daemon. Holds object bytes in its media (one per
 * tier; a DRAM arena today), serves the data plane (write/read/drop) on
 * --listen, and keeps a link to the master (register, heartbeat,
 * inventory, drop notifications).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/addr.h"
#include "mc/conn.h"
#include "mc/err.h"
#include "mc/io.h"
#include "mc/log.h"
#include "mc/metrics.h"
#include "mc/opt.h"
#include "mc/young.h"

#include "arena.h"
#include "peer.h"

#define UNREGISTER_TIMEOUT_MS 1000
#define INSECURE_REMEDY                                                                         \
	"--peer-secret-file to serve a master with --auth-file, or --insecure to serve anyone " \
	"who can reach it"

static struct {
	const char *master;
	const char *listen;
	const char *http;
	const char *domain;
	const char *host_id;
	const char *advertise;
	uint64_t dram;
	const char *ssd;
	uint64_t ssd_size;
	struct peer_marks marks[MC_TIER_COUNT];
	const char *promote;
	enum evict_mode eviction_mode;
	const char *evict_policy;
	bool evict_soft_pinned;
	uint64_t young; /* ms: --young (mc/young.h) */
	int ready_fd;
	bool fault_inject;
	bool list_methods;
	bool insecure;
	const char *secret_file;
	int max_conns;
	uint64_t journal_max;
	uint64_t grant_skew;
	/* the listener's limits from their options (mc_conn_limits_daemon first) */
	struct mc_conn_limits lim;
	uint64_t write_timeout;
} cfg = {
	.master = MC_DEFAULT_MASTER,
	.listen = "127.0.0.1:0",
	.domain = "default",
	.ready_fd = -1,
	.journal_max = PINDEX_JOURNAL_MAX,
	.grant_skew = 2000,
	.write_timeout = 30000,
	.young = MC_YOUNG_DEFAULT_MS,
	.marks = { [MC_TIER_DRAM] = { 0.9, 0.7 }, [MC_TIER_SSD] = { 0.9, 0.7 } },
};

/* HIGH:LOW, two fractions of a tier's capacity with 0 < LOW < HIGH <= 1. */
static int
set_marks(const char *v, void *target, char *why)
{
	struct peer_marks *pm = target;
	char *end;
	double high, low;

	errno = 0;
	high = strtod(v, &end);
	if (errno != 0 || end == v || *end != ':') {
		snprintf(why, 200, "not HIGH:LOW (fractions, e.g. 0.9:0.7)");
		return -1;
	}
	low = strtod(end + 1, &end);
	if (errno != 0 || *end != '\0') {
		snprintf(why, 200, "not HIGH:LOW (fractions, e.g. 0.9:0.7)");
		return -1;
	}
	if (!(high > 0 && high <= 1 && low > 0 && low < high)) {
		snprintf(why, 200, "needs 0 < LOW < HIGH <= 1");
		return -1;
	}
	pm->high = high;
	pm->low = low;
	pm->given = true;
	return 0;
}

static int
set_promote(const char *v, void *target, char *why)
{
	if (strcmp(v, "copy") == 0) {
		/* Two copies of a key on one peer is what neither the index nor the master models. */
		snprintf(why, 200,
			 "'copy' is not supported (a peer holds one copy of a key): use 'move'");
		return -1;
	}
	if (strcmp(v, "move") != 0) {
		snprintf(why, 200, "must be 'move'");
		return -1;
	}
	*(const char **)target = v;
	return 0;
}

static int
set_eviction_mode(const char *v, void *target, char *why)
{
	if (evict_mode_parse(v, target) < 0) {
		snprintf(why, 200, "must be local, master_ranked or master");
		return -1;
	}
	return 0;
}

static int
set_addr(const char *v, void *target, char *why)
{
	struct mc_addr a;
	struct mc_err err;

	if (mc_addr_parse(v, &a, &err) < 0) {
		snprintf(why, 200, "%.199s", err.msg);
		return -1;
	}
	*(const char **)target = v;
	return 0;
}

/*
 * The master's and the listen address: well formed now; a host name
 * that does not resolve is told when the peer starts, with the
 * unavailable status (69) every tool gives it, not as a usage error.
 */
static int
set_addr_resolved_later(const char *v, void *target, char *why)
{
	struct mc_addr a;
	struct mc_err err;

	if (mc_addr_parse(v, &a, &err) < 0 && err.code != MC_ERR_UNAVAILABLE) {
		snprintf(why, 200, "%.199s", err.msg);
		return -1;
	}
	*(const char **)target = v;
	return 0;
}

static int
set_http(const char *v, void *target, char *why)
{
	if (strncmp(v, "unix:", 5) == 0) {
		snprintf(why, 200, "metrics are served on host:port only");
		return -1;
	}
	return set_addr(v, target, why);
}

static int
set_dram(const char *v, void *target, char *why)
{
	if (mc_set_size(v, target, why) < 0)
		return -1;
	if (*(uint64_t *)target < ARENA_PAGE) {
		snprintf(why, 200, "must be at least %u bytes", ARENA_PAGE);
		return -1;
	}
	return 0;
}

static const struct mc_opt opts[] = {
	{ "master", 'm', "ADDR", "MC_MASTER", "master address (default 127.0.0.1:7300)",
	  set_addr_resolved_later, &cfg.master },
	{ "listen", 'l', "ADDR", NULL, "data-plane address (default 127.0.0.1:0)",
	  set_addr_resolved_later, &cfg.listen },
	{ MC_TIER_DRAM_NAME, 0, "SIZE", NULL, "DRAM arena size (required), e.g. 256MiB", set_dram,
	  &cfg.dram },
	{ MC_TIER_SSD_NAME, 0, "PATH", NULL,
	  "an SSD tier below DRAM: a file of extents, or a directory to keep it in", mc_set_str,
	  &cfg.ssd },
	{ "ssd-size", 0, "SIZE", NULL, "bytes the SSD tier may hold (required with --ssd)",
	  mc_set_size, &cfg.ssd_size },
	{ "dram-watermarks", 0, "MARKS", NULL,
	  "HIGH:LOW, fractions of DRAM: usage that starts eviction and where it stops (default "
	  "0.9:0.7)",
	  set_marks, &cfg.marks[MC_TIER_DRAM] },
	{ "ssd-watermarks", 0, "MARKS", NULL,
	  "HIGH:LOW, fractions of SSD: usage that starts eviction and where it stops (default "
	  "0.9:0.7)",
	  set_marks, &cfg.marks[MC_TIER_SSD] },
	{ "promote-on-read", 0, MC_ARG_ONE_OF("MODE", "move"), NULL,
	  "move: a read of an SSD copy moves it up to DRAM, while DRAM is under its high "
	  "watermark (default off)",
	  set_promote, &cfg.promote },
	{ "eviction-mode", 0, MC_ARG_ONE_OF("MODE", "local|master_ranked|master"),
	  "MC_EVICTION_MODE",
	  "who picks this peer's victims: local (its own watermarks and policy, the default), "
	  "master_ranked (the master's ranking first) or master (the master's rounds evict DRAM)",
	  set_eviction_mode, &cfg.eviction_mode },
	{ "evict-policy", 0, "FILE", NULL,
	  "the eviction policy local eviction plans with (mc-policy(5); default the built-in "
	  "kv policy)",
	  mc_set_str, &cfg.evict_policy },
	{ "allow-evict-soft-pinned", 0, NULL, NULL,
	  "local eviction may take active soft pins, in the policy's last pass", mc_set_flag,
	  &cfg.evict_soft_pinned },
	{ "young", 0, "DURATION", "MC_YOUNG",
	  "a copy this recently committed is evicted only for a write that needs its room "
	  "(default 10s; 0: no such protection)",
	  mc_set_duration, &cfg.young },
	{ "http", 0, "ADDR", NULL, "serve /metrics on host:port", set_http, &cfg.http },
	{ "ready-fd", 0, "N", NULL, "write the bound address to fd N once serving", mc_set_fd,
	  &cfg.ready_fd },
	{ "domain", 0, "STR", "MC_DOMAIN", "failure/network domain (default \"default\")",
	  mc_set_name, &cfg.domain },
	{ "host-id", 0, "STR", NULL, "host name given to the master (default the hostname)",
	  mc_set_name, &cfg.host_id },
	{ "advertise", 0, "ADDR", NULL,
	  "address clients reach this peer at (default the bound one)", set_addr, &cfg.advertise },
	{ "list-methods", 0, NULL, NULL, "print the RPC methods served, with their flags",
	  mc_set_flag, &cfg.list_methods },
	{ "grant-skew", 0, "DURATION", NULL,
	  "accept a grant this long past its expiry (default 2s)", mc_set_duration,
	  &cfg.grant_skew },
	{ "write-timeout", 0, "DURATION", NULL,
	  "abandon a write whose bytes stop coming for this long, freeing its space (default "
	  "30s; 0: never)",
	  mc_set_duration, &cfg.write_timeout },
	{ "fault-inject", 0, NULL, NULL,
	  "tests only: serve corrupt, ungranted reads and writes, and data-port drops and evicts",
	  mc_set_flag, &cfg.fault_inject },
	{ "max-conns", 0, "N", NULL, "open data-plane connections at most (default 4096)",
	  mc_set_positive_int, &cfg.max_conns },
	{ "max-conns-per-addr", 0, "N", NULL,
	  "open data-plane connections from one address at most, all unix clients being one "
	  "(default 1024; 0: no cap)",
	  mc_set_count, &cfg.lim.max_conns_per_addr },
	{ "header-timeout", 0, "DURATION", NULL,
	  "close a connection whose message header is not whole this long after its first byte "
	  "(default 10s; 0: never)",
	  mc_set_duration, &cfg.lim.header_timeout_ms },
	{ "idle-timeout", 0, "DURATION", NULL,
	  "close a connection with nothing in flight for this long (default 5m; 0: never)",
	  mc_set_duration, &cfg.lim.idle_timeout_ms },
	{ "journal-max", 0, "N", NULL,
	  "removals remembered for resuming with the master (default 65536)", mc_set_u64,
	  &cfg.journal_max },
	{ "peer-secret-file", 0, "FILE", NULL,
	  "authenticate to the master with the peers' secret in FILE (mc-auth(5))", mc_set_str,
	  &cfg.secret_file },
	{ "insecure", 0, NULL, NULL, "serve a non-loopback --listen or --http, unauthenticated",
	  mc_set_flag, &cfg.insecure },
	{ "log-level", 0, MC_ARG_ONE_OF("STR", MC_LOG_LEVELS), NULL,
	  "debug, info, warn or error (default info)", mc_set_log_level, NULL },
	{ 0 },
};

static const struct mc_opt_spec spec = {
	.usage = "mc-peer --dram SIZE [--ssd PATH --ssd-size SIZE] [OPTIONS]",
	.summary = "storage daemon of mc: holds object bytes in DRAM and on SSD and serves them",
	.opts = opts,
	.version = "mc-peer " MC_VERSION,
};

/*
 * The staging the disk queue may hold for writes and cold reads in
 * flight; past it they stream on the loop, as before the queue.
 */
#define PEER_DISK_STAGE_MAX (256ull << 20)

/* ---- metrics ---- */

struct peer_metrics {
	struct mc_metrics *reg;
	/* By tier, for the tiers this peer holds (NULL for the others). */
	struct mc_metric *used[MC_TIER_COUNT], *capacity[MC_TIER_COUNT],
		*evictions[MC_TIER_COUNT][POOL_REASON_COUNT], *drops[MC_TIER_COUNT][POOL_DROP_WHYS],
		*moving[MC_TIER_COUNT], *occupancy_min[MC_TIER_COUNT];
	struct mc_metric *outcomes[POOL_OUTCOMES];
	struct mc_metric *local_evictions[RECLAIM_EVENTS], *rank_queries;
	struct mc_metric *young, *young_bytes;
	/* A tier kept on disk: its own I/O (ops, bytes, seconds; read then write), corrupt copies. */
	struct mc_metric *io_ops[MC_TIER_COUNT][2], *io_bytes[MC_TIER_COUNT][2],
		*io_seconds[MC_TIER_COUNT][2], *corrupt[MC_TIER_COUNT];
	/* by kind: queued, done, failed, retried, lost, no_room (mover_stats order) */
	struct mc_metric *moves[MOVE_KINDS][6];
	/* the disk queue: jobs by kind (write, read, seal), failed, on the loop (write, read) */
	struct mc_metric *disk_jobs[3], *disk_failed, *disk_loop[2], *disk_staged;
	struct mc_metric *objects, *reads, *writes, *abandoned, *misses, *bytes_in, *bytes_out,
		*malformed, *registrations, *resumes, *inventory_reports,
		*refused[MC_GRANT_VERDICTS];
};

static void
collect(struct mc_metrics *m, void *arg)
{
	struct peer *p = arg;
	struct peer_metrics *pm = p->metrics;
	struct mc_conn_stats cs;
	uint64_t objects, bytes;

	pindex_counts(&p->index, &objects, &bytes);
	mc_conn_stats_get(&cs);
	mc_conn_stats_export(m);
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		if (!p->media[t])
			continue;
		mc_metric_set(pm->used[t], (double)medium_used(p->media[t]));
		mc_metric_set(pm->capacity[t], (double)medium_capacity(p->media[t]));
		for (int r = 0; r < POOL_REASON_COUNT; r++)
			mc_metric_set(pm->evictions[t][r], (double)pool_evictions(&p->pool, t, r));
		for (int w = 0; w < POOL_DROP_WHYS; w++)
			mc_metric_set(pm->drops[t][w], (double)atomic_load(&p->pool.dropped[t][w]));
		mc_metric_set(pm->moving[t], p->mover ? (double)mover_in_flight(p->mover, t) : 0);
		mc_metric_set(pm->occupancy_min[t], reclaimer_occupancy_min(p->reclaim, t));
		if (pm->corrupt[t]) {
			struct medium_io io;

			medium_io(p->media[t], &io);
			mc_metric_set(pm->io_ops[t][0], (double)io.reads);
			mc_metric_set(pm->io_ops[t][1], (double)io.writes);
			mc_metric_set(pm->io_bytes[t][0], (double)io.read_bytes);
			mc_metric_set(pm->io_bytes[t][1], (double)io.write_bytes);
			mc_metric_set(pm->io_seconds[t][0], (double)io.read_ns / 1e9);
			mc_metric_set(pm->io_seconds[t][1], (double)io.write_ns / 1e9);
			mc_metric_set(pm->corrupt[t], (double)io.corrupt);
		}
	}
	for (int oc = 0; oc < POOL_OUTCOMES; oc++)
		mc_metric_set(pm->outcomes[oc], (double)atomic_load(&p->pool.outcomes[oc]));
	for (int e = 0; e < RECLAIM_EVENTS; e++)
		mc_metric_set(pm->local_evictions[e], (double)reclaimer_events(p->reclaim, e));
	mc_metric_set(pm->rank_queries, (double)reclaimer_asked(p->reclaim));
	{
		uint64_t young, young_bytes;

		reclaimer_young_taken(p->reclaim, &young, &young_bytes);
		mc_metric_set(pm->young, (double)young);
		mc_metric_set(pm->young_bytes, (double)young_bytes);
	}
	if (p->mover) {
		const struct mover_stats *ms = mover_stats(p->mover);

		for (int k = 0; k < MOVE_KINDS; k++) {
			const uint64_t v[6] = { ms->queued[k],	ms->done[k], ms->failed[k],
						ms->retried[k], ms->lost[k], ms->no_room[k] };

			for (int i = 0; i < 6; i++)
				mc_metric_set(pm->moves[k][i], (double)v[i]);
		}
	}
	if (p->diskq && pm->disk_failed) {
		struct diskq_stats ds;

		diskq_stats(p->diskq, &ds);
		mc_metric_set(pm->disk_jobs[0], (double)ds.writes);
		mc_metric_set(pm->disk_jobs[1], (double)ds.reads);
		mc_metric_set(pm->disk_jobs[2], (double)ds.seals);
		mc_metric_set(pm->disk_failed, (double)ds.failed);
		mc_metric_set(pm->disk_loop[0], (double)ds.loop_writes);
		mc_metric_set(pm->disk_loop[1], (double)ds.loop_reads);
		mc_metric_set(pm->disk_staged, (double)ds.staged_bytes);
	}
	mc_metric_set(pm->objects, (double)objects);
	mc_metric_set(pm->reads, (double)p->st.reads);
	mc_metric_set(pm->writes, (double)p->st.writes);
	mc_metric_set(pm->misses, (double)p->st.read_misses);
	mc_metric_set(pm->abandoned, (double)p->st.writes_abandoned);
	mc_metric_set(pm->bytes_in, (double)p->st.bytes_in);
	mc_metric_set(pm->bytes_out, (double)p->st.bytes_out);
	mc_metric_set(pm->malformed, (double)cs.malformed);
	mc_metric_set(pm->registrations, (double)p->st.registrations);
	mc_metric_set(pm->resumes, (double)p->st.resumes);
	mc_metric_set(pm->inventory_reports, (double)p->st.inventory_reports);
	for (int v = MC_GRANT_OK + 1; v < MC_GRANT_VERDICTS; v++)
		mc_metric_set(pm->refused[v], (double)p->grants.refused[v]);
}

/* The I/O of a tier kept on disk (one that seals its copies); nothing for DRAM. */
static int
io_metrics_new(struct peer_metrics *pm, struct medium *m)
{
	static const char *const op[2] = { "read", "write" };
	const char *tier = mc_tier_name(m->tier);
	int t = m->tier;

	if (!m->ops->seal)
		return 0;
	for (int i = 0; i < 2; i++) {
		char label[64];

		snprintf(label, sizeof(label), "%s,%s", tier, op[i]);
		pm->io_ops[t][i] =
			mc_metric_get(pm->reg, "mc_peer_medium_ops_total", MC_COUNTER,
				      "Reads and writes of a tier kept on disk (reads it served "
				      "include replies sent with sendfile).",
				      "tier,op", label);
		pm->io_bytes[t][i] = mc_metric_get(
			pm->reg, "mc_peer_medium_bytes_total", MC_COUNTER,
			"Bytes read and written on a tier kept on disk.", "tier,op", label);
		pm->io_seconds[t][i] = mc_metric_get(
			pm->reg, "mc_peer_medium_seconds_total", MC_COUNTER,
			"Time spent in a disk tier's own reads and writes (the mover's copies and "
			"recovery; replies and client writes run in their connections).",
			"tier,op", label);
		if (!pm->io_ops[t][i] || !pm->io_bytes[t][i] || !pm->io_seconds[t][i])
			return -1;
	}
	pm->corrupt[t] =
		mc_metric_get(pm->reg, "mc_peer_medium_corrupt_total", MC_COUNTER,
			      "Copies found torn or corrupt at start, and dropped.", "tier", tier);
	return pm->corrupt[t] ? 0 : -1;
}

/* The disk queue's jobs and staging, for a peer with one. */
static int
disk_metrics_new(struct peer_metrics *pm)
{
	static const char *const kinds[3] = { "write", "read", "seal" };

	for (int k = 0; k < 3; k++)
		if (!(pm->disk_jobs[k] = mc_metric_get(
			      pm->reg, "mc_peer_disk_jobs_total", MC_COUNTER,
			      "Writes, cold reads and header seals the disk queue's workers ran.",
			      "kind", kinds[k])))
			return -1;
	for (int k = 0; k < 2; k++)
		if (!(pm->disk_loop[k] = mc_metric_get(
			      pm->reg, "mc_peer_disk_loop_total", MC_COUNTER,
			      "Writes and reads of a disk tier the loop streamed itself, the disk "
			      "queue's staging being spent.",
			      "op", kinds[k])))
			return -1;
	pm->disk_failed =
		mc_metric_get(pm->reg, "mc_peer_disk_failed_total", MC_COUNTER,
			      "Disk queue jobs that failed or were cancelled.", NULL, NULL);
	pm->disk_staged =
		mc_metric_get(pm->reg, "mc_peer_disk_staged_bytes", MC_GAUGE,
			      "Staging the disk queue holds for copies in flight.", NULL, NULL);
	return pm->disk_failed && pm->disk_staged ? 0 : -1;
}

static struct peer_metrics *
metrics_new(struct peer *p)
{
	struct peer_metrics *pm = calloc(1, sizeof(*pm));
	struct mc_metrics *r;

	if (!pm)
		return NULL;
	pm->reg = r = mc_metrics_new();
	if (!r)
		goto fail;
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		if (!p->media[t])
			continue;
		pm->used[t] = mc_metric_get(r, "mc_peer_tier_bytes_used", MC_GAUGE,
					    "Bytes allocated in the tier (whole pages).", "tier",
					    mc_tier_name(t));
		pm->capacity[t] =
			mc_metric_get(r, "mc_peer_tier_bytes_capacity", MC_GAUGE,
				      "Capacity of the tier in bytes.", "tier", mc_tier_name(t));
		if (!pm->used[t] || !pm->capacity[t])
			goto fail;
		for (int w = 0; w < POOL_DROP_WHYS; w++) {
			char label[64];

			snprintf(label, sizeof(label), "%s,%s", mc_tier_name(t),
				 pool_drop_why_name(w));
			if (!(pm->drops[t][w] = mc_metric_get(
				      r, "mc_peer_capacity_drops_total", MC_COUNTER,
				      "Copies dropped for capacity instead of moved down, by tier "
				      "and why.",
				      "tier,reason", label)))
				goto fail;
		}
		if (!(pm->moving[t] = mc_metric_get(r, "mc_peer_moving_bytes", MC_GAUGE,
						    "Bytes being moved out of the tier.", "tier",
						    mc_tier_name(t))))
			goto fail;
		if (!(pm->occupancy_min[t] = mc_metric_get(
			      r, "mc_peer_tier_occupancy_min", MC_GAUGE,
			      "The lowest usage, a fraction of capacity, this peer's own eviction "
			      "left the tier at (1 before it ran).",
			      "tier", mc_tier_name(t))))
			goto fail;
		if (io_metrics_new(pm, p->media[t]) < 0)
			goto fail;
		for (int why = 0; why < POOL_REASON_COUNT; why++) {
			char label[64];

			snprintf(label, sizeof(label), "%s,%s", mc_tier_name(t),
				 pool_reason_name(why));
			pm->evictions[t][why] = mc_metric_get(
				r, "mc_peer_evictions_total", MC_COUNTER,
				"Copies freed, by tier and reason.", "tier,reason", label);
			if (!pm->evictions[t][why])
				goto fail;
		}
	}
	if (p->diskq && disk_metrics_new(pm) < 0)
		goto fail;
	for (int oc = 0; oc < POOL_OUTCOMES; oc++)
		if (!(pm->outcomes[oc] = mc_metric_get(r, "mc_peer_pool_evicts_total", MC_COUNTER,
						       "Copies asked to be freed, by outcome.",
						       "outcome", pool_outcome_name(oc))))
			goto fail;
	for (int e = 0; e < RECLAIM_EVENTS; e++)
		if (!(pm->local_evictions[e] = mc_metric_get(
			      r, "mc_peer_local_evictions_total", MC_COUNTER,
			      "What this peer's own eviction did: plans made (round), victims of "
			      "its plan and of the master's ranking freed (key, master_key), plans "
			      "that found nothing (no_candidate) or only group members (stalled), "
			      "plans that left young copies out (young).",
			      "event", reclaim_event_name(e))))
			goto fail;
	if (!(pm->rank_queries = mc_metric_get(
		      r, "mc_peer_rank_queries_total", MC_COUNTER,
		      "Ranking queries (evict_candidates) sent to the master.", NULL, NULL)))
		goto fail;
	if (!(pm->young = mc_metric_get(r, "mc_evicted_young_total", MC_COUNTER,
					"Copies younger than --young that this peer's own "
					"eviction took for a write that needed their room.",
					NULL, NULL)) ||
	    !(pm->young_bytes = mc_metric_get(r, "mc_evicted_young_bytes_total", MC_COUNTER,
					      "Bytes of those copies.", NULL, NULL)))
		goto fail;
	for (int k = 0; k < MOVE_KINDS && p->mover; k++) {
		static const char *const outcome[6] = { "queued",  "done", "failed",
							"retried", "lost", "no_room" };

		for (int i = 0; i < 6; i++) {
			char label[64];

			snprintf(label, sizeof(label), "%s,%s", mover_kind_name(k), outcome[i]);
			if (!(pm->moves[k][i] = mc_metric_get(
				      r, "mc_peer_moves_total", MC_COUNTER,
				      "Moves between tiers (demotions and promotions), by outcome.",
				      "kind,outcome", label)))
				goto fail;
		}
	}
	pm->objects = mc_metric_get(r, "mc_peer_objects", MC_GAUGE, "Objects held.", NULL, NULL);
	pm->reads =
		mc_metric_get(r, "mc_peer_reads_total", MC_COUNTER, "Reads served.", NULL, NULL);
	pm->writes =
		mc_metric_get(r, "mc_peer_writes_total", MC_COUNTER, "Writes stored.", NULL, NULL);
	pm->misses = mc_metric_get(r, "mc_peer_read_misses_total", MC_COUNTER,
				   "Reads of a key or version not held.", NULL, NULL);
	pm->abandoned =
		mc_metric_get(r, "mc_peer_writes_abandoned_total", MC_COUNTER,
			      "Writes abandoned when their bytes stopped coming.", NULL, NULL);
	pm->bytes_in = mc_metric_get(r, "mc_peer_bytes_in_total", MC_COUNTER,
				     "Object bytes written.", NULL, NULL);
	pm->bytes_out = mc_metric_get(r, "mc_peer_bytes_out_total", MC_COUNTER,
				      "Object bytes read.", NULL, NULL);
	pm->malformed = mc_metric_get(r, "mc_peer_malformed_messages_total", MC_COUNTER,
				      "Connections closed for a malformed message.", NULL, NULL);
	pm->registrations =
		mc_metric_get(r, "mc_peer_registrations_total", MC_COUNTER,
			      "Registrations the master accepted as a new peer.", NULL, NULL);
	pm->resumes =
		mc_metric_get(r, "mc_peer_resumes_total", MC_COUNTER,
			      "Registrations the master resumed after a lost link.", NULL, NULL);
	pm->inventory_reports =
		mc_metric_get(r, "mc_peer_inventory_reports_total", MC_COUNTER,
			      "Whole inventories reported to the master.", NULL, NULL);
	for (int v = MC_GRANT_OK + 1; v < MC_GRANT_VERDICTS; v++)
		if (!(pm->refused[v] =
			      mc_metric_get(r, "mc_peer_grants_refused_total", MC_COUNTER,
					    "Reads and writes refused for their grant, by reason.",
					    "reason", mc_grant_verdict_name(v))))
			goto fail;
	if (!pm->objects || !pm->reads || !pm->writes || !pm->misses || !pm->abandoned ||
	    !pm->bytes_in || !pm->bytes_out || !pm->malformed || !pm->registrations ||
	    !pm->resumes || !pm->inventory_reports)
		goto fail;
	mc_metrics_on_collect(r, collect, p);
	return pm;
fail:
	if (pm->reg)
		mc_metrics_free(pm->reg);
	free(pm);
	return NULL;
}

/* ---- start and stop ---- */

/*
 * The local eviction worker, with the policy it plans by. It is woken
 * by commits and full writes (dataplane.c) and by moves that ended.
 */
/* A move off tier ended: the room it freed (or did not) may end or need a pass. */
static void
reclaim_settled(void *arg, int tier)
{
	reclaimer_kick(arg, tier, false);
}

static int
start_reclaim(struct peer *p, struct mc_policy *pol, struct mc_err *err)
{
	struct reclaim_conf rc = { .mode = cfg.eviction_mode,
				   .policy = pol,
				   .soft_pinned_pass = cfg.evict_soft_pinned,
				   .young_ms = cfg.young };

	if (cfg.evict_policy ? mc_policy_load(cfg.evict_policy, pol, err) < 0
			     : mc_policy_builtin(pol, err) < 0) {
		/* a file the operator named that does not do: theirs to fix */
		err->code = MC_ERR_INVALID;
		return -1;
	}
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		rc.high[t] = p->marks[t].high;
		rc.low[t] = p->marks[t].low;
	}
	if (!(p->reclaim = reclaimer_new(p->base, &p->pool, p->mover, &rc, err)))
		return -1;
	if (p->mover)
		mover_on_settled(p->mover, reclaim_settled, p->reclaim);
	mc_info("eviction mode %s, planned with %s", evict_mode_name(cfg.eviction_mode),
		pol->name[0] ? pol->name : MC_POLICY_BUILTIN_NAME);
	return 0;
}

/* Flags that name a tier this peer does not have, or half of one: refused at start. */
static void
check_tiers(void)
{
	if (cfg.ssd && cfg.ssd_size == 0)
		mc_die(MC_EXIT_USAGE, "--ssd needs --ssd-size SIZE");
	if (!cfg.ssd && cfg.ssd_size > 0)
		mc_die(MC_EXIT_USAGE, "--ssd-size needs --ssd PATH");
	if (!cfg.ssd && cfg.marks[MC_TIER_SSD].given)
		mc_die(MC_EXIT_USAGE, "--ssd-watermarks needs --ssd PATH");
	if (!cfg.ssd && cfg.promote)
		mc_die(MC_EXIT_USAGE,
		       "--promote-on-read needs --ssd PATH (a tier to promote from)");
}

/*
 * The SSD tier: opened (a file that cannot be had refuses the start),
 * its copies from before a restart taken back, the mover that demotes
 * into it, and the session kept beside it.
 */
static int
open_ssd(struct peer *p, char *session, size_t cap, struct mc_err *err)
{
	struct medium_conf conf = { .size = cfg.ssd_size, .path = cfg.ssd, .direct = true };
	struct stat st;

	p->media[MC_TIER_SSD] = medium_open(MC_TIER_SSD, &conf, err);
	if (!p->media[MC_TIER_SSD])
		return -1;
	if (stat(cfg.ssd, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(session, cap, "%s/session", cfg.ssd);
	else
		snprintf(session, cap, "%s.session", cfg.ssd);
	p->session_path = session;
	return 0;
}

static void
stopped(void *arg)
{
	event_base_loopbreak(arg);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct peer *p = arg;

	(void)what;
	if (p->stopping) {
		/* A second signal does not wait for the master. */
		event_base_loopbreak(p->base);
		return;
	}
	p->stopping = true;
	mc_info("%s received; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	control_shutdown(p->ctl, UNREGISTER_TIMEOUT_MS, stopped, p->base);
}

int
main(int argc, char **argv)
{
	static struct peer p;
	struct mc_addr listen_addr, master_addr, bound, http_bound;
	struct mc_conn_ops ops = { 0 };
	struct mc_conn_limits lim;
	struct mc_server *server = NULL;
	struct mc_registry *data_methods = NULL;
	struct mc_http *http = NULL;
	struct event *sigterm = NULL, *sigint = NULL;
	struct mc_err err;
	struct mc_policy policy;
	char host[256], session[4096];
	uint64_t largest = 0;
	int i, code = MC_EXIT_SOFTWARE;

	mc_log_init("mc-peer", 1);
	mc_policy_default(&policy);
	mc_conn_limits_daemon(&cfg.lim);
	i = mc_opt_parse(&spec, argc, argv);
	if (i < argc)
		mc_die(MC_EXIT_USAGE, "unexpected argument '%s'", argv[i]);
	if (cfg.list_methods) {
		struct mc_registry *r = mc_registry_new(NULL, &err);

		if (!r || mc_registry_add(r, peer_data_methods, &err) < 0)
			mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
		mc_registry_print(r, stdout);
		mc_registry_free(r);
		if (!(r = mc_registry_new(NULL, &err)))
			mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
		for (size_t t = 0; peer_control_methods[t]; t++)
			if (mc_registry_add(r, peer_control_methods[t], &err) < 0)
				mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
		mc_registry_print(r, stdout);
		mc_registry_free(r);
		return MC_EXIT_OK;
	}
	if (cfg.dram == 0)
		mc_die(MC_EXIT_USAGE, "missing --dram SIZE (the DRAM arena size)");
	check_tiers();
	if (mc_addr_parse(cfg.listen, &listen_addr, &err) < 0)
		mc_die(mc_status_exit_code(err.code), "invalid --listen '%s': %s", cfg.listen,
		       err.msg);
	if (mc_addr_parse(cfg.master, &master_addr, &err) < 0)
		mc_die(mc_status_exit_code(err.code), "invalid --master '%s': %s", cfg.master,
		       err.msg);
	/*
	 * Reads and writes need the master's grants, but a peer that cannot
	 * prove itself to the master may be talking to a false one: beyond
	 * this machine only with the peers' secret, or when told to.
	 */
	if (!cfg.insecure && cfg.secret_file == NULL &&
	    (mc_addr_check_local("--listen", cfg.listen, INSECURE_REMEDY, &err) != 0 ||
	     mc_addr_check_local("--http", cfg.http, INSECURE_REMEDY, &err) != 0))
		mc_die(MC_EXIT_USAGE, "%s", err.msg);
	/* Fault injection lets anyone make and drop copies: never beyond this machine. */
	if (cfg.fault_inject && !mc_addr_is_local(&listen_addr))
		mc_die(MC_EXIT_USAGE, "refusing --fault-inject with --listen %s: only on loopback",
		       cfg.listen);
	if (cfg.secret_file != NULL) {
		char why[MC_ERR_MSG_MAX];

		if (mc_read_secret(cfg.secret_file, p.secret, sizeof(p.secret), why) != 0)
			mc_die(MC_EXIT_USAGE, "invalid --peer-secret-file: %s", why);
	} else {
		mc_info("no --peer-secret-file: registering with the master unauthenticated");
	}
	mc_info("reads and writes need the master's grants%s; traffic is unencrypted",
		cfg.fault_inject ? " (--fault-inject: or none at all)" : "");
	if (!cfg.host_id) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		cfg.host_id = host;
	}
	signal(SIGPIPE, SIG_IGN);

	p.fault_inject = cfg.fault_inject;
	p.grants.skew_ms = cfg.grant_skew;
	/* without the memory, reads past the master go unreported: recency only */
	p.grants.seen = calloc(PEER_GRANTS_SEEN, sizeof(*p.grants.seen));
	p.write_timeout_ms = cfg.write_timeout;
	p.host = cfg.host_id;
	p.domain = cfg.domain;
	p.base = event_base_new();
	if (!p.base) {
		mc_complain("cannot create the event loop");
		return MC_EXIT_SOFTWARE;
	}
	p.media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = cfg.dram }, &err);
	if (!p.media[MC_TIER_DRAM]) {
		mc_complain("cannot create the %s arena: %s", mc_tier_name(MC_TIER_DRAM), err.msg);
		code = err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_SOFTWARE;
		goto out_base;
	}
	if (cfg.ssd && open_ssd(&p, session, sizeof(session), &err) < 0) {
		mc_complain("cannot open the %s tier at '%s': %s", mc_tier_name(MC_TIER_SSD),
			    cfg.ssd, err.msg);
		code = err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_UNAVAILABLE;
		goto out_media;
	}
	for (int t = 0; t < MC_TIER_COUNT; t++)
		p.marks[t] = cfg.marks[t];
	p.promote = cfg.promote ? PROMOTE_MOVE : PROMOTE_OFF;
	if (pindex_init(&p.index, p.media, &err) < 0) {
		mc_complain("%s", err.msg);
		goto out_media;
	}
	pool_init(&p.pool, &p.index);
	pindex_journal_limit(&p.index, (size_t)cfg.journal_max, PINDEX_JOURNAL_NAME_BYTES);
	if (p.media[MC_TIER_SSD]) {
		uint64_t found;
		struct medium_io io;

		if (pool_recover(&p.pool, MC_TIER_SSD, &found, &err) < 0) {
			mc_complain("cannot recover the %s tier: %s", mc_tier_name(MC_TIER_SSD),
				    err.msg);
			goto out_index;
		}
		medium_io(p.media[MC_TIER_SSD], &io);
		if (io.corrupt > 0)
			mc_warn("%llu copies on %s were torn or corrupt (checksum mismatch): "
				"dropped",
				(unsigned long long)io.corrupt, mc_tier_name(MC_TIER_SSD));
		if (found > 0)
			mc_info("%llu copies kept on %s from before; reporting them to the master",
				(unsigned long long)found, mc_tier_name(MC_TIER_SSD));
		if (!(p.mover = mover_new(p.base, &p.pool, &err))) {
			mc_complain("%s", err.msg);
			goto out_index;
		}
		p.pool.demote = mover_demote;
		p.pool.demote_arg = p.mover;
		if (!(p.diskq = diskq_new(p.base, PEER_DISK_STAGE_MAX, &err))) {
			mc_complain("%s", err.msg);
			goto out_index;
		}
	}
	if (start_reclaim(&p, &policy, &err) < 0) {
		mc_complain("%s", err.msg);
		code = err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_SOFTWARE;
		goto out_index;
	}

	/* the registry counts every method, so the metrics come first */
	if (cfg.http && !(p.metrics = metrics_new(&p))) {
		mc_complain("cannot create metrics");
		goto out_index;
	}
	p.registry = p.metrics ? p.metrics->reg : NULL;
	data_methods = mc_registry_new(p.registry, &err);
	if (!data_methods || mc_registry_add(data_methods, peer_data_methods, &err) < 0) {
		mc_complain("cannot start: %s", err.msg);
		goto out_index;
	}
	ops.methods = data_methods;
	ops.ctx = &p;
	lim = cfg.lim;
	lim.max_conns = cfg.max_conns;
	/*
	 * A read queues the object by reference, so queued output is mostly
	 * medium bytes that cost nothing extra; allow one object as large as
	 * the largest tier plus headers instead of cutting off readers of
	 * large objects.
	 */
	for (int t = 0; t < MC_TIER_COUNT; t++)
		if (p.media[t] && medium_capacity(p.media[t]) > largest)
			largest = medium_capacity(p.media[t]);
	lim.max_outq = (size_t)largest + (64u << 20);
	/*
	 * Data-plane headers are small (a key is at most 4 KiB) and bulk
	 * bytes do not count, so a 1 MiB cap on one message bounds what a
	 * hostile client can make each connection buffer.
	 */
	lim.max_msg = 1u << 20;
	server = mc_server_new(p.base, &listen_addr, &ops, &lim, &bound, &err);
	if (!server) {
		/* The error names the address already ("cannot listen on ADDR: why"). */
		mc_complain("%s", err.msg);
		code = MC_EXIT_UNAVAILABLE;
		goto out_index;
	}
	snprintf(p.advertise, sizeof(p.advertise), "%s",
		 cfg.advertise ? cfg.advertise : bound.text);
	snprintf(p.bound, sizeof(p.bound), "%s", bound.text);
	p.ready_fd = cfg.ready_fd;

	if (cfg.http) {
		http = mc_http_start(p.base, cfg.http, p.metrics->reg, &http_bound, &err);
		if (!http) {
			mc_complain("cannot serve metrics: %s", err.msg);
			code = MC_EXIT_UNAVAILABLE;
			goto out_server;
		}
		mc_info("metrics on http://%s/metrics", http_bound.text);
	}

	p.ctl = control_new(&p, &master_addr, &err);
	if (!p.ctl) {
		mc_complain("%s", err.msg);
		goto out_server;
	}
	sigterm = evsignal_new(p.base, SIGTERM, on_signal, &p);
	sigint = evsignal_new(p.base, SIGINT, on_signal, &p);
	if (!sigterm || !sigint || evsignal_add(sigterm, NULL) < 0 ||
	    evsignal_add(sigint, NULL) < 0) {
		mc_complain("cannot install signal handlers");
		goto out_control;
	}
	control_start(p.ctl);

	for (int t = 0; t < MC_TIER_COUNT; t++)
		if (p.media[t])
			mc_info("%s tier of %llu bytes", mc_tier_name(t),
				(unsigned long long)medium_capacity(p.media[t]));
	mc_info("master %s; advertising %s", master_addr.text, p.advertise);
	mc_complain("listening on %s", bound.text);

	if (event_base_dispatch(p.base) < 0) {
		mc_complain("event loop failed");
		goto out_control;
	}
	code = MC_EXIT_OK;
out_control:
	if (sigterm)
		event_free(sigterm);
	if (sigint)
		event_free(sigint);
	control_free(p.ctl);
out_server:
	if (http)
		mc_http_stop(http);
	/* Its completions answer on connections still open and give their copies back. */
	diskq_free(p.diskq);
	p.diskq = NULL;
	/* Closing the connections releases every reference readers held. */
	mc_server_free(server);
out_index:
	mc_registry_free(data_methods);
	if (p.mover)
		mover_on_settled(p.mover, NULL, NULL);
	reclaimer_free(p.reclaim);
	mc_policy_free(&policy);
	/* Before the index: its completions give their claims back. */
	diskq_free(p.diskq);
	mover_free(p.mover);
	pindex_destroy(&p.index);
out_media:
	for (int t = 0; t < MC_TIER_COUNT; t++)
		medium_close(p.media[t]);
out_base:
	if (p.metrics) {
		mc_metrics_free(p.metrics->reg);
		free(p.metrics);
	}
	free(p.grants.seen);
	event_base_free(p.base);
	return code;
}
