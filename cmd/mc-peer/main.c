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
#include "mc/rate.h"
#include "mc/young.h"

#include "arena.h"
#include "copier.h"
#include "peer.h"
#include "diskq.h"
#include "mover.h"
#include "reclaim.h"

#define UNREGISTER_TIMEOUT_MS 1000
#define INSECURE_REMEDY                                                                         \
	"--peer-secret-file to serve a master with --auth-file, or --insecure to serve anyone " \
	"who can reach it"

static struct {
	const char *master;
	const char *listen;
	const char *http;
	const char *http_token_file;
	const char *domain;
	const char *host_id;
	const char *advertise;
	uint64_t dram;
	const char *ssd;
	uint64_t ssd_size;
	const char *session_file;
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
	uint64_t room_wait;
	uint64_t egress_limit; /* bytes a second the data plane sends at most; 0: no limit */
	int copy_workers;      /* replica_copy threads; 0: this peer is no source of copies */
} cfg = {
	.master = MC_DEFAULT_MASTER,
	.listen = "127.0.0.1:0",
	.domain = "default",
	.ready_fd = -1,
	.journal_max = PINDEX_JOURNAL_MAX,
	.grant_skew = 2000,
	.write_timeout = 30000,
	.room_wait = 1000,
	.young = MC_YOUNG_DEFAULT_MS,
	.copy_workers = COPY_WORKERS_DEFAULT,
	/* none given: each tier keeps the headroom band (mc/band.h) */
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
	char buf[MC_ADDR_MAX + 16];

	if (strncmp(v, "unix:", 5) == 0) {
		snprintf(why, 200, "metrics are served on host:port only");
		return -1;
	}
	if (set_addr(mc_http_addr(v, buf, sizeof(buf)), target, why) < 0)
		return -1;
	*(const char **)target = v;
	return 0;
}

static int
set_copy_workers(const char *v, void *target, char *why)
{
	if (mc_set_count(v, target, why) < 0)
		return -1;
	if (*(int *)target > COPY_WORKERS_MAX) {
		snprintf(why, 200, "must be 0..%d", COPY_WORKERS_MAX);
		return -1;
	}
	return 0;
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
	{ "session-file", 0, "FILE", NULL,
	  "keep the master session in FILE, mode 0600 (default: beside --ssd; none without it)",
	  mc_set_str, &cfg.session_file },
	{ "dram-watermarks", 0, "MARKS", NULL,
	  "HIGH:LOW, fractions of DRAM: usage that starts eviction and where it stops (default: "
	  "a headroom of the writes in flight plus one slice)",
	  set_marks, &cfg.marks[MC_TIER_DRAM] },
	{ "ssd-watermarks", 0, "MARKS", NULL,
	  "HIGH:LOW, fractions of SSD: usage that starts eviction and where it stops (default: "
	  "a headroom of the writes in flight plus one slice)",
	  set_marks, &cfg.marks[MC_TIER_SSD] },
	{ "promote-on-read", 0, MC_ARG_ONE_OF("MODE", "move"), NULL,
	  "move: a read of an SSD copy moves it up to DRAM, while DRAM is under the high end of "
	  "its band (default off)",
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
	{ "http", 0, "ADDR", NULL, "serve /metrics on host:port (a bare :PORT is loopback's)",
	  set_http, &cfg.http },
	{ "http-token-file", 0, "FILE", NULL,
	  "--http answers only requests bearing the token in FILE (needed beyond loopback)",
	  mc_set_str, &cfg.http_token_file },
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
	{ "room-wait", 0, "DURATION", NULL,
	  "hold a granted write that finds its tier full this long for room to be freed "
	  "(default 1s; 0: refuse it at once)",
	  mc_set_duration, &cfg.room_wait },
	{ "fault-inject", 0, NULL, NULL,
	  "tests only: serve corrupt, ungranted reads and writes, and data-port drops and evicts",
	  mc_set_flag, &cfg.fault_inject },
	{ "max-conns", 0, "N", NULL, "open data-plane connections at most (default 4096)",
	  mc_set_positive_int, &cfg.max_conns },
	{ "max-conns-per-addr", 0, "N", NULL,
	  "open data-plane connections from one address at most, a unix socket's clients of one "
	  "user being one "
	  "(default 1024; 0: no cap)",
	  mc_set_count, &cfg.lim.max_conns_per_addr },
	{ "header-timeout", 0, "DURATION", NULL,
	  "close a connection whose message header is not whole this long after its first byte "
	  "(default 10s; 0: never)",
	  mc_set_duration, &cfg.lim.header_timeout_ms },
	{ "idle-timeout", 0, "DURATION", NULL,
	  "close a connection with nothing in flight for this long (default 5m; 0: never)",
	  mc_set_duration, &cfg.lim.idle_timeout_ms },
	{ "egress-limit", 0, "SIZE", "MC_EGRESS_LIMIT",
	  "send at most SIZE bytes a second on all data-plane connections together, e.g. 100MiB "
	  "(default 0: no limit)",
	  mc_set_size, &cfg.egress_limit },
	{ "copy-workers", 0, "N", "MC_COPY_WORKERS",
	  "threads copying this peer's hot copies to the peers the master picks (dynamic "
	  "replication; default 2, at most 64; 0: this peer is never the source of one)",
	  set_copy_workers, &cfg.copy_workers },
	{ "min-bulk-rate", 0, "SIZE", NULL,
	  "close a connection whose bulk body brings fewer bytes a second, over each 5 s "
	  "(default 64KiB; 0: no floor)",
	  mc_set_size, &cfg.lim.min_bulk_rate },
	{ "hello-timeout", 0, "DURATION", NULL,
	  "close a data-plane connection that has made no granted request this long after it "
	  "connected (default 2s; 0: never)",
	  mc_set_duration, &cfg.lim.hello_timeout_ms },
	{ "max-unauth-conns", 0, "N", NULL,
	  "data-plane connections yet to make a granted request at most; one more closes the "
	  "oldest of them (default 256; 0: no cap of their own)",
	  mc_set_count, &cfg.lim.max_unvouched },
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

/* ---- start and stop: the modules, in the order they start ---- */

/* What the modules share beyond struct peer: main's own resources. */
static struct {
	struct mc_addr listen, master, bound, http_bound;
	struct mc_policy policy;
	struct mc_registry *data_methods;
	struct mc_server *server;
	struct mc_http *http;
	struct event *sigterm, *sigint;
	char session[4096];
} run;

/*
 * One module of the peer: start (an exit status: anything but
 * MC_EXIT_OK, said on stderr, stops the peer), stop (before any module
 * is freed: what must end while the others still stand) and free, each
 * NULL when there is nothing to do. They start in table order and stop
 * and free in the reverse, only those that started.
 */
struct peer_module {
	const char *name;
	int (*start)(struct peer *p);
	void (*stop)(struct peer *p);
	void (*free)(struct peer *p);
};

/*
 * The media: DRAM, and the SSD tier with the session kept beside it
 * (or in --session-file). A file that cannot be had refuses the start.
 */
static int
media_start(struct peer *p)
{
	struct medium_conf ssd = { .size = cfg.ssd_size, .path = cfg.ssd, .direct = true };
	struct mc_err err;
	struct stat st;

	p->media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = cfg.dram }, &err);
	if (!p->media[MC_TIER_DRAM]) {
		mc_complain("cannot create the %s arena: %s", mc_tier_name(MC_TIER_DRAM), err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_SOFTWARE;
	}
	p->session_path = cfg.session_file;
	if (!cfg.ssd)
		return MC_EXIT_OK;
	p->media[MC_TIER_SSD] = medium_open(MC_TIER_SSD, &ssd, &err);
	if (!p->media[MC_TIER_SSD]) {
		mc_complain("cannot open the %s tier at '%s': %s", mc_tier_name(MC_TIER_SSD),
			    cfg.ssd, err.msg);
		medium_close(p->media[MC_TIER_DRAM]);
		p->media[MC_TIER_DRAM] = NULL;
		return err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_UNAVAILABLE;
	}
	if (cfg.session_file == NULL) {
		if (stat(cfg.ssd, &st) == 0 && S_ISDIR(st.st_mode))
			snprintf(run.session, sizeof(run.session), "%s/session", cfg.ssd);
		else
			snprintf(run.session, sizeof(run.session), "%s.session", cfg.ssd);
		p->session_path = run.session;
	}
	return MC_EXIT_OK;
}

static void
media_free(struct peer *p)
{
	for (int t = 0; t < MC_TIER_COUNT; t++)
		medium_close(p->media[t]);
}

/* The index over the media, and the pool that commits and frees copies in it. */
static int
index_start(struct peer *p)
{
	struct mc_err err;

	for (int t = 0; t < MC_TIER_COUNT; t++)
		p->marks[t] = cfg.marks[t];
	p->promote = cfg.promote ? PROMOTE_MOVE : PROMOTE_OFF;
	if (pindex_init(&p->index, p->media, &err) < 0) {
		mc_complain("%s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	pool_init(&p->pool, &p->index);
	pindex_journal_limit(&p->index, (size_t)cfg.journal_max, PINDEX_JOURNAL_NAME_BYTES);
	return MC_EXIT_OK;
}

static void
index_free(struct peer *p)
{
	pindex_destroy(&p->index);
}

/*
 * A tier kept on disk: its copies from before a restart taken back, the
 * mover that demotes into it, and the disk queue that does its I/O.
 */
static int
disk_start(struct peer *p)
{
	struct mc_err err;
	struct medium_io io;
	uint64_t found;

	if (!p->media[MC_TIER_SSD])
		return MC_EXIT_OK;
	if (pool_recover(&p->pool, MC_TIER_SSD, &found, &err) < 0) {
		mc_complain("cannot recover the %s tier: %s", mc_tier_name(MC_TIER_SSD), err.msg);
		return MC_EXIT_SOFTWARE;
	}
	medium_io(p->media[MC_TIER_SSD], &io);
	if (io.corrupt > 0)
		mc_warn("%llu copies on %s were torn or corrupt (checksum mismatch): dropped",
			(unsigned long long)io.corrupt, mc_tier_name(MC_TIER_SSD));
	if (found > 0)
		mc_info("%llu copies kept on %s from before; reporting them to the master",
			(unsigned long long)found, mc_tier_name(MC_TIER_SSD));
	if (!(p->mover = mover_new(p->base, &p->pool, &err))) {
		mc_complain("%s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	p->pool.demote = mover_demote;
	p->pool.demote_arg = p->mover;
	if (!(p->diskq = diskq_new(p->base, PEER_DISK_STAGE_MAX, &err))) {
		mc_complain("%s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	return MC_EXIT_OK;
}

/* Its completions answer on connections still open and give their copies back. */
static void
disk_stop(struct peer *p)
{
	diskq_free(p->diskq);
	p->diskq = NULL;
}

static void
disk_free(struct peer *p)
{
	diskq_free(p->diskq);
	p->diskq = NULL;
	mover_free(p->mover);
	p->mover = NULL;
}

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
reclaim_start(struct peer *p)
{
	struct mc_policy *pol = &run.policy;
	struct reclaim_conf rc = { .mode = cfg.eviction_mode,
				   .policy = pol,
				   .soft_pinned_pass = cfg.evict_soft_pinned,
				   .young_ms = cfg.young };
	struct mc_err err;

	if (cfg.evict_policy ? mc_policy_load(cfg.evict_policy, pol, &err) < 0
			     : mc_policy_builtin(pol, &err) < 0) {
		/* a file the operator named that does not do: theirs to fix */
		mc_complain("%s", err.msg);
		return MC_EXIT_USAGE;
	}
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		rc.marks[t] = p->marks[t].given;
		rc.high[t] = p->marks[t].high;
		rc.low[t] = p->marks[t].low;
	}
	if (!(p->reclaim = reclaimer_new(p->base, &p->pool, p->mover, &rc, &err))) {
		mc_complain("%s", err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_SOFTWARE;
	}
	if (p->mover)
		mover_on_settled(p->mover, reclaim_settled, p->reclaim);
	mc_info("eviction mode %s, planned with %s", evict_mode_name(cfg.eviction_mode),
		pol->name[0] ? pol->name : MC_POLICY_BUILTIN_NAME);
	return MC_EXIT_OK;
}

static void
reclaim_free(struct peer *p)
{
	if (p->mover)
		mover_on_settled(p->mover, NULL, NULL);
	reclaimer_free(p->reclaim);
	p->reclaim = NULL;
}

/*
 * The replica_copy worker (copier.c). Freed after the link, whose calls
 * still pending are failed when it closes, and before the index, whose
 * copies it holds while it sends them.
 */
static int
copier_start(struct peer *p)
{
	struct mc_err err;

	if (cfg.copy_workers == 0) {
		mc_info("--copy-workers 0: this peer makes no dynamic replicas");
		return MC_EXIT_OK;
	}
	if (!(p->copier = copier_new(p, (unsigned)cfg.copy_workers, &err))) {
		mc_complain("%s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	return MC_EXIT_OK;
}

static void
copier_stop(struct peer *p)
{
	copier_free(p->copier);
	p->copier = NULL;
}

/* The metrics, with --http; the registry counts every method, so they come first. */
static int
metrics_start(struct peer *p)
{
	if (cfg.http && !(p->metrics = peer_metrics_new(p))) {
		mc_complain("cannot create metrics");
		return MC_EXIT_SOFTWARE;
	}
	p->registry = peer_metrics_registry(p->metrics);
	return MC_EXIT_OK;
}

static void
metrics_free(struct peer *p)
{
	peer_metrics_free(p->metrics);
	p->metrics = NULL;
	p->registry = NULL;
}

/* The data plane on --listen. */
static int
data_start(struct peer *p)
{
	struct mc_conn_ops ops = { 0 };
	struct mc_conn_limits lim;
	struct mc_err err;
	uint64_t largest = 0;

	run.data_methods = mc_registry_new(p->registry, &err);
	if (!run.data_methods || mc_registry_add(run.data_methods, peer_data_methods, &err) < 0) {
		mc_complain("cannot start: %s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	ops.methods = run.data_methods;
	ops.ctx = p;
	p->cancel_writes = peer_cancel_writes;
	p->room_freed = peer_room_freed;
	if (peer_room_waits_init(p) != 0) {
		mc_complain("cannot start: out of memory");
		return MC_EXIT_SOFTWARE;
	}
	/* one bucket for every client: a NIC limits what they take together */
	if (!(p->egress = mc_rate_new(p->base, cfg.egress_limit, &err))) {
		mc_complain("cannot start: %s", err.msg);
		peer_room_waits_free(p);
		return MC_EXIT_SOFTWARE;
	}
	ops.egress = p->egress;
	lim = cfg.lim;
	lim.max_conns = cfg.max_conns;
	/*
	 * A read queues the object by reference, so queued output is mostly
	 * medium bytes that cost nothing extra; allow one object as large as
	 * the largest tier plus headers instead of cutting off readers of
	 * large objects.
	 */
	for (int t = 0; t < MC_TIER_COUNT; t++)
		if (p->media[t] && medium_capacity(p->media[t]) > largest)
			largest = medium_capacity(p->media[t]);
	lim.max_outq = (size_t)largest + (64u << 20);
	/*
	 * Data-plane headers are small (a key is at most 4 KiB) and bulk
	 * bytes do not count, so a 1 MiB cap on one message bounds what a
	 * hostile client can make each connection buffer.
	 */
	lim.max_msg = 1u << 20;
	run.server = mc_server_new(p->base, &run.listen, &ops, &lim, &run.bound, &err);
	if (!run.server) {
		/* The error names the address already ("cannot listen on ADDR: why"). */
		mc_complain("%s", err.msg);
		peer_room_waits_free(p);
		mc_rate_free(p->egress);
		p->egress = NULL;
		return MC_EXIT_UNAVAILABLE;
	}
	if (cfg.egress_limit > 0)
		mc_info("data plane sends at most %llu bytes a second (--egress-limit)",
			(unsigned long long)cfg.egress_limit);
	snprintf(p->advertise, sizeof(p->advertise), "%s",
		 cfg.advertise ? cfg.advertise : run.bound.text);
	snprintf(p->bound, sizeof(p->bound), "%s", run.bound.text);
	p->ready_fd = cfg.ready_fd;
	return MC_EXIT_OK;
}

/* Closing the connections releases every reference readers held. */
static void
data_free(struct peer *p)
{
	peer_room_waits_free(p);
	mc_server_free(run.server);
	run.server = NULL;
	/* after its connections: none waits for tokens any more */
	mc_rate_free(p->egress);
	p->egress = NULL;
	mc_registry_free(run.data_methods);
	run.data_methods = NULL;
}

static int
http_start(struct peer *p)
{
	struct mc_http_cfg hc = { cfg.http, cfg.http_token_file, cfg.insecure };
	struct mc_err err;

	if (!cfg.http)
		return MC_EXIT_OK;

	run.http = mc_http_serve(p->base, &hc, p->registry, &run.http_bound, &err);
	if (!run.http) {
		mc_complain("cannot serve metrics: %s", err.msg);
		return err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_UNAVAILABLE;
	}
	mc_info("metrics on http://%s/metrics", run.http_bound.text);
	return MC_EXIT_OK;
}

static void
http_free(struct peer *p)
{
	(void)p;
	if (run.http)
		mc_http_stop(run.http);
	run.http = NULL;
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

/* The link to the master (link.c), connecting once the loop runs. */
static int
link_start(struct peer *p)
{
	struct mc_err err;

	p->ctl = control_new(p, &run.master, &err);
	if (!p->ctl) {
		mc_complain("%s", err.msg);
		return MC_EXIT_SOFTWARE;
	}
	run.sigterm = evsignal_new(p->base, SIGTERM, on_signal, p);
	run.sigint = evsignal_new(p->base, SIGINT, on_signal, p);
	if (!run.sigterm || !run.sigint || evsignal_add(run.sigterm, NULL) < 0 ||
	    evsignal_add(run.sigint, NULL) < 0) {
		mc_complain("cannot install signal handlers");
		return MC_EXIT_SOFTWARE;
	}
	control_start(p->ctl);
	return MC_EXIT_OK;
}

static void
link_free(struct peer *p)
{
	if (run.sigterm)
		event_free(run.sigterm);
	if (run.sigint)
		event_free(run.sigint);
	run.sigterm = run.sigint = NULL;
	control_free(p->ctl);
	p->ctl = NULL;
}

static const struct peer_module modules[] = {
	{ "media", media_start, NULL, media_free },
	{ "index", index_start, NULL, index_free },
	{ "disk", disk_start, disk_stop, disk_free },
	{ "reclaim", reclaim_start, NULL, reclaim_free },
	{ "copier", copier_start, NULL, copier_stop },
	{ "metrics", metrics_start, NULL, metrics_free },
	{ "data", data_start, NULL, data_free },
	{ "http", http_start, NULL, http_free },
	{ "link", link_start, NULL, link_free },
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

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

/* --list-methods: the data plane's, then the control connection's. */
static int
list_methods(void)
{
	struct mc_err err;
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

int
main(int argc, char **argv)
{
	static struct peer p;
	struct mc_err err;
	char host[256];
	size_t n;
	int i, code = MC_EXIT_SOFTWARE;

	mc_log_init("mc-peer", 1);
	mc_policy_default(&run.policy);
	mc_conn_limits_daemon(&cfg.lim);
	/* every data-port caller the master sent makes a granted request at once */
	cfg.lim.hello_timeout_ms = MC_HELLO_TIMEOUT_MS;
	i = mc_opt_parse(&spec, argc, argv);
	if (i < argc)
		mc_die(MC_EXIT_USAGE, "unexpected argument '%s'", argv[i]);
	if (cfg.list_methods)
		return list_methods();
	if (cfg.dram == 0)
		mc_die(MC_EXIT_USAGE, "missing --dram SIZE (the DRAM arena size)");
	check_tiers();
	if (mc_addr_parse(cfg.listen, &run.listen, &err) < 0)
		mc_die(mc_status_exit_code(err.code), "invalid --listen '%s': %s", cfg.listen,
		       err.msg);
	if (mc_addr_parse(cfg.master, &run.master, &err) < 0)
		mc_die(mc_status_exit_code(err.code), "invalid --master '%s': %s", cfg.master,
		       err.msg);
	/*
	 * Reads and writes need the master's grants, but a peer that cannot
	 * prove itself to the master may be talking to a false one: beyond
	 * this machine only with the peers' secret, or when told to.
	 */
	if (!cfg.insecure && cfg.secret_file == NULL &&
	    mc_addr_check_local("--listen", cfg.listen, INSECURE_REMEDY, &err) != 0)
		mc_die(MC_EXIT_USAGE, "%s", err.msg);
	/* said on every start, at a level a quiet log still shows */
	if (cfg.insecure && cfg.secret_file == NULL)
		mc_warn("--insecure: --listen %s is served without the peers' secret: this peer "
			"cannot prove itself to its master, nor tell a false master from the real "
			"one",
			cfg.listen);
	/* Fault injection lets anyone make and drop copies: never beyond this machine. */
	if (cfg.fault_inject && !mc_addr_is_local(&run.listen))
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
	p.room_wait_ms = cfg.room_wait;
	p.host = cfg.host_id;
	p.domain = cfg.domain;
	p.base = event_base_new();
	if (!p.base) {
		mc_complain("cannot create the event loop");
		return MC_EXIT_SOFTWARE;
	}
	for (n = 0; n < NMODULES; n++) {
		if (modules[n].start && (code = modules[n].start(&p)) != MC_EXIT_OK)
			break;
		mc_debug("started %s", modules[n].name);
	}
	if (n == NMODULES) {
		for (int t = 0; t < MC_TIER_COUNT; t++)
			if (p.media[t])
				mc_info("%s tier of %llu bytes", mc_tier_name(t),
					(unsigned long long)medium_capacity(p.media[t]));
		mc_info("master %s; advertising %s", run.master.text, p.advertise);
		mc_complain("listening on %s", run.bound.text);
		code = MC_EXIT_OK;
		if (event_base_dispatch(p.base) < 0) {
			mc_complain("event loop failed");
			code = MC_EXIT_SOFTWARE;
		}
	}
	/* what started stops, then is freed, last first */
	for (size_t i = n; i-- > 0;)
		if (modules[i].stop)
			modules[i].stop(&p);
	for (size_t i = n; i-- > 0;)
		if (modules[i].free)
			modules[i].free(&p);
	mc_policy_free(&run.policy);
	free(p.grants.seen);
	event_base_free(p.base);
	return code;
}
