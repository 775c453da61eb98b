/*
 * mc-master: the metadata daemon. Options, start-up and the event loop;
 * the work is in store.c, peers.c, placement.c, ops.c, read.c and objects.c.
 */
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/addr.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/parse.h"
#include "evict.h"
#include "lease.h"
#include "msnap.h"
#include "peerlink.h"
#include "put.h"
#include "reconcile.h"
#include "replicate.h"
#include "softpin.h"
#include "peerlink.h"
#include "evict.h"
#include "master.h"
#include "auth.h"
#include "ops.h"
#include "request.h"
#include "start.h"
#include "state.h"
#include "store.h"
#include "mmetrics.h"

#define SWEEP_MS 100

static int
set_master_id(const char *v, void *target, char *why)
{
	size_t len = strlen(v);

	if (len == 0 || len >= 64) {
		snprintf(why, 200, "must be 1 to 63 characters");
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (v[i] <= ' ' || v[i] > '~') {
			snprintf(why, 200, "must be printable ASCII without spaces");
			return -1;
		}
	}
	*(const char **)target = v;
	return 0;
}

/* A master id nobody else picked: 64 random bits in hex. */
static void
random_id(char *buf, size_t cap)
{
	uint64_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		v = mc_mono_ns() ^ ((uint64_t)getpid() << 32) ^ mc_now_ms();
	if (fd >= 0)
		close(fd);
	snprintf(buf, cap, "%016llx", (unsigned long long)v);
}

static void
sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct master *m = arg;

	(void)fd;
	(void)what;
	master_sweep(m);
	/* counted at the end: a scrape that sees it grow knows a whole sweep followed it */
	mc_metric_inc(m->mx->sweeps);
}

/*
 * Without authentication only this machine may reach the master: 1
 * (complained) when others could.
 */
static int
open_to_others(const char *flag, const char *addr)
{
	struct mc_err err;

	if (mc_addr_check_local(flag, addr,
				"--auth-file, or --insecure to serve anyone who can reach it",
				&err) == 0)
		return 0;
	mc_complain("%s", err.msg);
	return 1;
}

static void
hup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct master *m = arg;

	(void)sig;
	(void)what;
	master_reload(m);
}

/* A connection closed: a peer's control link goes, its tenant has one fewer. */
static void
conn_closed(struct mc_conn *c, void *ctx)
{
	master_on_close(c, ctx);
	req_client_closed(c);
}

static void
stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct master *m = arg;

	(void)what;
	mc_info("caught signal %d, stopping", (int)sig);
	event_base_loopbreak(m->base);
}

static int
set_dr_mode(const char *v, void *target, char *why)
{
	int mode = dr_mode_parse(v);

	if (mode < 0) {
		snprintf(why, 200, "must be off, observe or enforce");
		return -1;
	}
	*(int *)target = mode;
	return 0;
}

static int
set_dr_copies(const char *v, void *target, char *why)
{
	uint64_t n = 0;

	if (mc_set_u64(v, &n, why) != 0)
		return -1;
	if (n == 0 || n > 4096) {
		snprintf(why, 200, "must be 1 to 4096");
		return -1;
	}
	*(unsigned *)target = (unsigned)n;
	return 0;
}

static int
set_dr_replicas(const char *v, void *target, char *why)
{
	uint64_t n = 0;

	if (mc_set_u64(v, &n, why) != 0)
		return -1;
	if (n == 0 || n > MC_REPLICAS_MAX) {
		snprintf(why, 200, "must be 1 to %d", MC_REPLICAS_MAX);
		return -1;
	}
	*(unsigned *)target = (unsigned)n;
	return 0;
}

static int
set_dr_entries(const char *v, void *target, char *why)
{
	if (mc_set_u64(v, target, why) != 0)
		return -1;
	if (*(uint64_t *)target == 0 || *(uint64_t *)target > HEAT_ENTRIES_MAX) {
		snprintf(why, 200, "must be 1 to %u", HEAT_ENTRIES_MAX);
		return -1;
	}
	return 0;
}

/* --evict-high-watermark or --evict-low-watermark was given: peer tiers run those. */
static bool marks_given;

static int
set_mark(const char *v, void *target, char *why)
{
	marks_given = true;
	return mc_set_double(v, target, why);
}

int
main(int argc, char **argv)
{
	static struct master m;
	bool list_methods = false, insecure = false;
	const char *http_token_file = NULL;
	uint64_t hello_timeout_ms = MC_HELLO_TIMEOUT_MS;
	int max_tenants = TENANTS_MAX, max_types = 64;
	struct mc_conn_limits lim = { 0 };
	struct mc_conn_ops ops = { 0 };
	struct mc_addr addr, bound;
	struct mc_err err;
	struct event *sigterm = NULL, *sigint = NULL, *sighup = NULL;
	int status = MC_EXIT_SOFTWARE;

	master_defaults(&m.cfg);
	mc_conn_limits_daemon(&lim);
	const struct mc_opt opts[] = {
		{ "listen", 0, "ADDR", NULL, "address to serve on (host:port or unix:/path)",
		  mc_set_str, &m.cfg.listen },
		{ "http", 0, "ADDR", NULL,
		  "serve /metrics over HTTP on this address (a bare :PORT is loopback's)",
		  mc_set_str, &m.cfg.http },
		{ "http-token-file", 0, "FILE", NULL,
		  "--http answers only requests bearing the token in FILE (needed beyond loopback)",
		  mc_set_str, &http_token_file },
		{ "ready-fd", 0, "N", NULL, "write the bound address to fd N once serving",
		  mc_set_fd, &m.cfg.ready_fd },
		{ "lease-ttl", 0, "DURATION", NULL, "read lease granted by get (default 10s)",
		  mc_set_positive_duration, &m.cfg.lease_ttl },
		{ "peer-ttl", 0, "DURATION", NULL, "drop a peer silent for this long (default 10s)",
		  mc_set_positive_duration, &m.cfg.peer_ttl },
		{ "task-ttl", 0, "DURATION", NULL,
		  "retire a task a peer has not acknowledged for this long (default 10m)",
		  mc_set_positive_duration, &m.cfg.task_ttl },
		{ "grant-ttl", 0, "DURATION", NULL,
		  "a data-plane grant is good for this long after it is issued (default 30s)",
		  mc_set_positive_duration, &m.cfg.grant_ttl },
		{ "grant-cache", 0, "N", NULL,
		  "keep up to N read grants to hand out again within their epoch (default 65536; "
		  "0: sign each)",
		  mc_set_u64, &m.cfg.grant_cache },
		{ "put-wait", 0, "DURATION", NULL,
		  "a put finding no room waits this long for eviction (default 50ms; 0: fail at "
		  "once)",
		  mc_set_duration, &m.cfg.put_wait },
		{ "write-ack-wait", 0, "DURATION", NULL,
		  "a put_end waits this long for its peers to confirm the bytes (default 5s; 0: "
		  "not at all)",
		  mc_set_duration, &m.cfg.write_ack_wait },
		{ "put-timeout", 0, "DURATION", NULL,
		  "discard writes unfinished after this long (default 60s)",
		  mc_set_positive_duration, &m.cfg.put_timeout },
		{ "snapshot-dir", 0, "DIR", NULL, "write snapshots into DIR", mc_set_str,
		  &m.cfg.snapshot_dir },
		{ "snapshot-interval", 0, "DURATION", NULL,
		  "take a snapshot this often (default off)", mc_set_positive_duration,
		  &m.cfg.snapshot_interval },
		{ "snapshot-keep", 0, "N", NULL, "snapshots kept in --snapshot-dir (default 3)",
		  mc_set_positive_int, &m.cfg.snapshot_keep },
		{ "restore", 0, "FILE", NULL,
		  "load a snapshot at start (\"latest\": the newest in --snapshot-dir)", mc_set_str,
		  &m.cfg.restore },
		{ "max-restore-bytes", 0, "SIZE", NULL,
		  "largest snapshot snapshot_restore takes; held in memory (default 4GiB)",
		  mc_set_positive_size, &m.cfg.max_restore_bytes },
		{ "reconcile-timeout", 0, "DURATION", NULL,
		  "after a restore, drop replicas no peer confirmed by then (default 30s)",
		  mc_set_positive_duration, &m.cfg.reconcile_timeout },
		{ "master-id", 0, "STR", NULL, "name written into snapshots (default random)",
		  set_master_id, &m.cfg.master_id },
		{ "default-soft-pin-ttl", 0, "DURATION", NULL,
		  "soft pin TTL of an enable without one (default 30m)", mc_set_duration,
		  &m.cfg.default_soft_pin_ttl },
		{ "max-soft-pin-ttl", 0, "DURATION", NULL,
		  "longest soft pin TTL a write may ask for (default 24h)", mc_set_duration,
		  &m.cfg.max_soft_pin_ttl },
		{ "allow-evict-soft-pinned", 0, NULL, NULL,
		  "let eviction take active soft pins in its second pass", mc_set_flag,
		  &m.cfg.allow_evict_soft_pinned },
		{ "evict-policy", 0, "FILE", NULL,
		  "eviction policy (mc-policy(5); default: the built-in kv.policy), reloaded on "
		  "SIGHUP",
		  mc_set_str, &m.cfg.evict_policy },
		{ "evict-high-watermark", 0, "FRACTION", NULL,
		  "start a round when a peer tier is this full (default: when its free room is "
		  "under the writes in flight plus one slice; 0.9 of --max-objects and quotas)",
		  set_mark, &m.cfg.evict_high },
		{ "evict-low-watermark", 0, "FRACTION", NULL,
		  "a round frees down to this fill (default: one slice under where it started; "
		  "0.7 of --max-objects and quotas)",
		  set_mark, &m.cfg.evict_low },
		{ "evict-lowerbound", 0, "FRACTION", NULL,
		  "automatic rounds' lowerbound, a fraction of the target (default: the policy's)",
		  mc_set_double, &m.cfg.evict_lowerbound },
		{ "evict-planner", 0, "CMD", NULL,
		  "plan with this command (view on stdin, plan on stdout), e.g. mc-evict-plan -p P",
		  mc_set_str, &m.cfg.evict_planner },
		{ "evict-planner-timeout", 0, "DURATION", NULL,
		  "give up on --evict-planner after this long (default 10s)", mc_set_duration,
		  &m.cfg.evict_planner_timeout },
		{ "evict-slice", 0, "N", NULL,
		  "victims executed per slice between requests (default 256)", mc_set_positive_int,
		  &m.cfg.evict_slice },
		{ "max-evict-bytes-per-round", 0, "SIZE", NULL,
		  "an automatic round frees at most this much; the next one goes on (default 0: "
		  "the whole overage)",
		  mc_set_size, &m.cfg.max_evict_bytes },
		{ "young", 0, "DURATION", "MC_YOUNG",
		  "a copy this recently committed is evicted only for a put that needs its room "
		  "(default 10s; 0: no such protection)",
		  mc_set_duration, &m.cfg.young },

		{ "quota-file", 0, "FILE", NULL,
		  "per-tenant quotas, \"TENANT SIZE\" a line, reloaded on SIGHUP", mc_set_str,
		  &m.cfg.quota_file },
		{ "auth-file", 0, "FILE", NULL,
		  "tenants' and admins' token hashes and the peer secret (mc-auth(5)), reloaded on "
		  "SIGHUP",
		  mc_set_str, &m.cfg.auth_file },
		{ "receipt-key", 0, "FILE", NULL,
		  "the key of commit receipts, made when missing (default with --auth-file: "
		  "AUTH_FILE.receipt-key; without either, no receipts)",
		  mc_set_str, &m.cfg.receipt_key },
		{ "max-tenants", 0, "N", NULL,
		  "tenants at most, created on first use (default 4096)", mc_set_positive_int,
		  &max_tenants },
		{ "max-objects", 0, "N", NULL,
		  "hold at most N objects: past the high watermark of it a round evicts down to "
		  "the "
		  "low one, and a new object at N waits for it (default 0: no budget)",
		  mc_set_u64, &m.cfg.max_objects },
		{ "max-objects-per-tenant", 0, "N", NULL,
		  "one tenant holds at most N objects: a new one at N waits for a round among "
		  "that tenant's own (default 0: no cap)",
		  mc_set_u64, &m.cfg.max_objects_per_tenant },
		{ "max-object-size", 0, "SIZE", NULL,
		  "refuse a put larger than SIZE (default: the largest tier of a live peer)",
		  mc_set_size, &m.cfg.max_object_size },
		{ "max-peer-capacity", 0, "SIZE", NULL,
		  "refuse a peer that declares more than SIZE, its tiers summed (default 1PiB)",
		  mc_set_size, &m.cfg.max_peer_capacity },
		{ "dynamic-replication", 0, "MODE", NULL,
		  "dynamic hot replication: off (the default), observe, which judges hot keys "
		  "and counts the copies it would make, or enforce, which makes them",
		  set_dr_mode, &m.cfg.dr_mode },
		{ "dynamic-replication-window", 0, "DURATION", NULL,
		  "the heat window reads are counted over (default 10s)", mc_set_positive_duration,
		  &m.cfg.dr_window },
		{ "dynamic-replication-qps", 0, "QPS", NULL,
		  "reads a second over the window that make a key hot (default 0.8)", mc_set_rate,
		  &m.cfg.dr_qps },
		{ "dynamic-replication-max-replicas", 0, "N", NULL,
		  "dynamic replicas of one object at most (default 2)", set_dr_replicas,
		  &m.cfg.dr_max_replicas },
		{ "dynamic-replication-heat-entries", 0, "N", NULL,
		  "keys the heat window holds at most (default 65536)", set_dr_entries,
		  &m.cfg.dr_heat_entries },
		{ "dynamic-replication-cooldown", 0, "DURATION", NULL,
		  "after a dynamic replica is evicted from a domain, none is made there again for "
		  "DURATION (default 30s)",
		  mc_set_duration, &m.cfg.dr_cooldown },
		{ "dynamic-replication-lease", 0, "DURATION", NULL,
		  "a dynamic copy not done within DURATION is given up (default 30s)",
		  mc_set_positive_duration, &m.cfg.dr_lease },
		{ "dynamic-replication-max-copies", 0, "N", NULL,
		  "dynamic copies under way at most (default 64)", set_dr_copies,
		  &m.cfg.dr_max_copies },
		{ "max-types-per-tenant", 0, "N", NULL,
		  "data types one tenant's puts may name (default 64)", mc_set_positive_int,
		  &max_types },
		{ "insecure", 0, NULL, NULL,
		  "serve a non-loopback --listen or --http without --auth-file", mc_set_flag,
		  &insecure },
		{ "config", 0, "FILE", NULL, "read \"name = value\" options from FILE", mc_set_str,
		  &m.cfg.config },
		{ "max-conns", 0, "N", NULL, "open connections at most (default 4096)",
		  mc_set_positive_int, &m.cfg.max_conns },
		{ "max-conns-per-addr", 0, "N", NULL,
		  "open connections from one address at most, a unix socket's clients of one user "
		  "being one "
		  "(default 1024; 0: no cap)",
		  mc_set_count, &lim.max_conns_per_addr },
		{ "max-conns-per-tenant", 0, "N", NULL,
		  "connections whose hello names one tenant at most (default 0: no cap)",
		  mc_set_count, &m.cfg.max_conns_per_tenant },
		{ "header-timeout", 0, "DURATION", NULL,
		  "close a connection whose message header is not whole this long after its first "
		  "byte (default 10s; 0: never)",
		  mc_set_duration, &lim.header_timeout_ms },
		{ "idle-timeout", 0, "DURATION", NULL,
		  "close a connection with nothing in flight for this long, peers' control links "
		  "aside (default 5m; 0: never)",
		  mc_set_duration, &lim.idle_timeout_ms },
		{ "min-bulk-rate", 0, "SIZE", NULL,
		  "close a connection whose bulk body brings fewer bytes a second, over each 5 s "
		  "(default 64KiB; 0: no floor)",
		  mc_set_size, &lim.min_bulk_rate },
		{ "hello-timeout", 0, "DURATION", NULL,
		  "with --auth-file, close a connection whose hello has not authenticated this "
		  "long after it connected (default 2s; 0: never)",
		  mc_set_duration, &hello_timeout_ms },
		{ "max-unauth-conns", 0, "N", NULL,
		  "with --auth-file, connections not yet authenticated at most; one more closes "
		  "the oldest of them (default 256; 0: no cap of their own)",
		  mc_set_count, &lim.max_unvouched },
		{ "log-level", 0, MC_ARG_ONE_OF("STR", MC_LOG_LEVELS), NULL,
		  "debug, info, warn or error (default info)", mc_set_log_level, NULL },
		{ "list-methods", 0, NULL, NULL, "print the RPC methods served, with their flags",
		  mc_set_flag, &list_methods },
		{ 0 },
	};
	const struct mc_opt_spec spec = {
		.usage = "mc-master [OPTIONS]",
		.summary = "metadata daemon of the mc KV-cache store",
		.opts = opts,
		.version = "mc-master " MC_VERSION,
	};

	mc_log_init("mc-master", 1);
	/*
	 * Big arrays (an eviction round's view, its plan) grow by doubling.
	 * Kept out of the heap they grow by mremap instead of by copying
	 * tens of megabytes inside one slice of the event loop; a fixed
	 * threshold also stops glibc from raising it to 32 MiB on its own.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	signal(SIGPIPE, SIG_IGN);
	int idx = mc_opt_parse(&spec, argc, argv);
	if (idx < argc) {
		mc_complain("unexpected argument '%s'", argv[idx]);
		return MC_EXIT_USAGE;
	}
	if (list_methods) {
		struct mc_registry *r = master_registry(NULL, &err);

		if (r == NULL) {
			mc_complain("%s", err.msg);
			return MC_EXIT_SOFTWARE;
		}
		mc_registry_print(r, stdout);
		mc_registry_free(r);
		return MC_EXIT_OK;
	}
	if (mc_addr_parse(m.cfg.listen, &addr, &err) != 0) {
		mc_complain("invalid --listen '%s': %s", m.cfg.listen, err.msg);
		/* a malformed address is usage; a name that does not resolve, unavailable */
		return mc_status_exit_code(err.code);
	}
	if (!insecure && m.cfg.auth_file == NULL && open_to_others("--listen", m.cfg.listen))
		return MC_EXIT_USAGE;
	/* said on every start, at a level a quiet log still shows */
	if (insecure && m.cfg.auth_file == NULL)
		mc_warn("--insecure: --listen %s%s%s is served without authentication: anyone who "
			"can reach it may call everything",
			m.cfg.listen, m.cfg.http != NULL ? " and --http " : "",
			m.cfg.http != NULL ? m.cfg.http : "");
	if (max_tenants > (int)TENANTS_MAX || max_types > (int)TYPES_MAX) {
		mc_complain("invalid --max-tenants or --max-types-per-tenant: at most %u and %u",
			    TENANTS_MAX, TYPES_MAX);
		return MC_EXIT_USAGE;
	}
	if (m.cfg.restore != NULL && strcmp(m.cfg.restore, "latest") == 0 &&
	    m.cfg.snapshot_dir == NULL) {
		mc_complain("invalid --restore 'latest': needs --snapshot-dir");
		return MC_EXIT_USAGE;
	}
	if (m.cfg.snapshot_interval > 0 && m.cfg.snapshot_dir == NULL) {
		mc_complain("invalid --snapshot-interval: needs --snapshot-dir");
		return MC_EXIT_USAGE;
	}
	if (m.cfg.default_soft_pin_ttl > m.cfg.max_soft_pin_ttl) {
		char d[32], x[32];
		mc_complain("invalid --default-soft-pin-ttl '%s': above --max-soft-pin-ttl '%s'",
			    mc_fmt_duration_ms(m.cfg.default_soft_pin_ttl, d, sizeof(d)),
			    mc_fmt_duration_ms(m.cfg.max_soft_pin_ttl, x, sizeof(x)));
		return MC_EXIT_USAGE;
	}
	m.cfg.evict_marks = marks_given;
	if (!(m.cfg.evict_low > 0 && m.cfg.evict_low < m.cfg.evict_high && m.cfg.evict_high <= 1)) {
		mc_complain("invalid --evict-low-watermark/--evict-high-watermark: need 0 < low < "
			    "high <= 1");
		return MC_EXIT_USAGE;
	}
	if (m.cfg.evict_lowerbound != -1 &&
	    !(m.cfg.evict_lowerbound >= 0 && m.cfg.evict_lowerbound <= 1)) {
		mc_complain("invalid --evict-lowerbound: need a fraction from 0 to 1");
		return MC_EXIT_USAGE;
	}
	if (m.cfg.master_id != NULL)
		snprintf(m.master_id, sizeof(m.master_id), "%s", m.cfg.master_id);
	else
		random_id(m.master_id, sizeof(m.master_id));

	m.started_ms = mc_mono_ns() / 1000000;
	m.base = event_base_new();
	if (m.base == NULL) {
		mc_complain("cannot create the event loop");
		return MC_EXIT_SOFTWARE;
	}
	if ((status = master_start(&m, (uint32_t)max_tenants, (uint32_t)max_types)) != 0)
		goto out;
	/* Restore before listening: nobody sees a half-loaded master. */
	if (m.cfg.restore != NULL && (status = msnap_restore_startup(&m)) != 0)
		goto out;
	status = MC_EXIT_SOFTWARE;
	if ((m.methods = master_registry(m.mx->reg, &err)) == NULL) {
		mc_complain("cannot start: %s", err.msg);
		goto out;
	}
	ops.methods = m.methods;
	ops.ctx = &m;
	ops.on_close = conn_closed;
	ops.authorize = auth_authorize;
	lim.max_conns = m.cfg.max_conns;
	/* without an auth file nobody authenticates, so nobody is waited for */
	lim.hello_timeout_ms = m.auth_on ? hello_timeout_ms : 0;
	if (!m.auth_on)
		lim.max_unvouched = 0;
	m.server = mc_server_new(m.base, &addr, &ops, &lim, &bound, &err);
	if (m.server == NULL) {
		mc_complain("cannot listen on %s: %s", m.cfg.listen, err.msg);
		status = MC_EXIT_UNAVAILABLE;
		goto out;
	}
	if (m.cfg.http != NULL) {
		struct mc_addr hbound;
		struct mc_http_cfg hc = { m.cfg.http, http_token_file, insecure };

		m.http = mc_http_serve(m.base, &hc, m.mx->reg, &hbound, &err);
		if (m.http == NULL) {
			mc_complain("cannot serve metrics on %s: %s", m.cfg.http, err.msg);
			status = err.code == MC_ERR_INVALID ? MC_EXIT_USAGE : MC_EXIT_UNAVAILABLE;
			goto out;
		}
		mc_info("metrics on http://%s/metrics", hbound.text);
	}
	m.sweep_ev = event_new(m.base, -1, EV_PERSIST, sweep_cb, &m);
	sigterm = evsignal_new(m.base, SIGTERM, stop_cb, &m);
	sigint = evsignal_new(m.base, SIGINT, stop_cb, &m);
	sighup = evsignal_new(m.base, SIGHUP, hup_cb, &m);
	struct timeval tv = { 0, SWEEP_MS * 1000 };
	if (m.sweep_ev == NULL || sigterm == NULL || sigint == NULL || sighup == NULL ||
	    event_add(m.sweep_ev, &tv) != 0 || event_add(sigterm, NULL) != 0 ||
	    event_add(sigint, NULL) != 0 || event_add(sighup, NULL) != 0) {
		mc_complain("cannot set up timers and signals");
		goto out;
	}
	mc_announce_ready(m.cfg.ready_fd, bound.text);
	mc_info("lease ttl %llu ms, peer ttl %llu ms, put timeout %llu ms",
		(unsigned long long)m.cfg.lease_ttl, (unsigned long long)m.cfg.peer_ttl,
		(unsigned long long)m.cfg.put_timeout);
	if (event_base_dispatch(m.base) < 0) {
		mc_complain("event loop failed");
		goto out;
	}
	status = MC_EXIT_OK;
out:
	if (m.server != NULL)
		mc_server_free(m.server);
	mc_registry_free(m.methods);
	if (m.http != NULL)
		mc_http_stop(m.http);
	if (m.sweep_ev != NULL)
		event_free(m.sweep_ev);
	if (sigterm != NULL)
		event_free(sigterm);
	if (sigint != NULL)
		event_free(sigint);
	if (sighup != NULL)
		event_free(sighup);
	master_stop(&m);
	event_base_free(m.base);
	return status;
}
