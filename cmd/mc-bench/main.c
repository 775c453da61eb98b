/*
 * mc-bench: load generator and trace replayer.
 *
 *   mc-bench get      many clients reading objects of one size
 *   mc-bench lookup   batched get_replica_list calls against the master
 *   mc-bench fill     puts of zero bytes, for memory per object
 *   mc-bench replay   a request trace (JSON lines with hash_ids) against a cluster
 *   mc-bench sim      the same trace through a policy offline, beside references
 *   mc-bench gen      a synthetic trace of one workload family, for replay and sim
 *
 * Every command ends with one machine-readable line of key=value pairs
 * that tests/bench/ scripts parse.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "mc/client.h"
#include "mc/clock.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/parse.h"
#include "mc/tier.h"
#include "mc/tool.h"

#include "bench.h"

static struct bench_opts bo = {
	.size = 1 << 20,
	.keys = 64,
	.clients = 1,
	.requests = 0,
	.duration_ms = 5000,
	.batch = 16,
	.count = 100000,
	.key_len = 40,
	.prefix = "bench",
	.block_bytes = 64 << 10,
	.max_put_failures = 0.001,
	.sim_peers = 1,
	.seed = 1,
};

/* --clock fast|trace */
static int
set_clock(const char *v, void *target, char *why)
{
	if (strcmp(v, "trace") == 0 || strcmp(v, "fast") == 0) {
		*(bool *)target = strcmp(v, "trace") == 0;
		return 0;
	}
	snprintf(why, 200, "must be 'fast' or 'trace'");
	return -1;
}

/* --eviction-mode local|master: who evicts the simulated peers' tiers. */
static int
set_eviction_mode(const char *v, void *target, char *why)
{
	if (strcmp(v, "local") == 0 || strcmp(v, "master") == 0) {
		*(bool *)target = strcmp(v, "local") == 0;
		return 0;
	}
	snprintf(why, 200, "must be 'local' or 'master'");
	return -1;
}

/* A fraction: "0.001" or "0.1%". */
static int
set_fraction(const char *v, void *target, char *why)
{
	struct mc_err err;
	uint64_t micro;
	double f;

	if (strchr(v, '%') != NULL) {
		if (mc_parse_percent(v, &micro, &err) < 0) {
			snprintf(why, 200, "%.190s", err.msg);
			return -1;
		}
		*(double *)target = (double)micro / MC_PERCENT_WHOLE;
		return 0;
	}
	if (mc_parse_double(v, &f, &err) < 0 || f < 0 || f > 1) {
		snprintf(why, 200, "must be a fraction from 0 to 1, or a percentage");
		return -1;
	}
	*(double *)target = f;
	return 0;
}

static const struct mc_opt global_opts[] = {
	{ "size", 0, "SIZE", NULL, "object size (get)", mc_set_size, &bo.size },
	{ "tier", 0, MC_ARG_ONE_OF("TIER", MC_TIER_NAMES), NULL,
	  "tier the objects are put on (get; default: dram)", mc_set_str, &bo.tier },
	{ "reuse", 0, NULL, NULL, "read the objects an earlier get wrote, putting none (get)",
	  mc_set_flag, &bo.reuse },
	{ "keys", 0, "N", NULL, "distinct keys to read (get, lookup)", mc_set_u64, &bo.keys },
	{ "clients", 'c', "N", NULL, "concurrent clients, one thread each", mc_set_u64,
	  &bo.clients },
	{ "requests", 'n', "N", NULL, "requests per client (0: use --duration)", mc_set_u64,
	  &bo.requests },
	{ "duration", 'd', "DURATION", NULL, "how long to run when --requests is 0",
	  mc_set_duration, &bo.duration_ms },
	{ "batch", 'b', "N", NULL, "keys per batch call (lookup)", mc_set_u64, &bo.batch },
	{ "count", 0, "N", NULL, "objects to create (fill)", mc_set_u64, &bo.count },
	{ "key-len", 0, "N", NULL, "key length in bytes (fill, lookup)", mc_set_u64, &bo.key_len },
	{ "prefix", 0, "STR", NULL, "key prefix", mc_set_str, &bo.prefix },
	{ "block-bytes", 0, "SIZE", NULL, "bytes per trace block (replay)", mc_set_size,
	  &bo.block_bytes },
	{ "limit", 0, "N", NULL, "trace requests to replay (0: all)", mc_set_u64, &bo.limit },
	{ "clock", 0, MC_ARG_ONE_OF("STR", "fast|trace"), NULL,
	  "fast (as fast as possible) or trace (object time from the trace's timestamps)",
	  set_clock, &bo.trace_clock },
	{ "max-put-failures", 0, "FRACTION", NULL,
	  "replay fails when more puts failed than this (default 0.1%)", set_fraction,
	  &bo.max_put_failures },
	{ "policy", 0, "FILE", NULL, "eviction policy to simulate (sim; default: built-in)",
	  mc_set_str, &bo.policy },
	{ "capacity", 0, "SIZE", NULL, "cache size, or a fraction of the unique blocks (sim)",
	  mc_set_str, &bo.capacity },
	{ "high", 0, "FRACTION", NULL,
	  "high watermark: the watermark band instead of the headroom (sim; 0.9 with --low alone)",
	  mc_set_double, &bo.sim_high },
	{ "low", 0, "FRACTION", NULL,
	  "low watermark: the watermark band instead of the headroom (sim; 0.7 with --high alone)",
	  mc_set_double, &bo.sim_low },
	{ "whole-view", 0, NULL, NULL,
	  "plan each round over every copy of the tier, not a window (sim)", mc_set_flag,
	  &bo.sim_whole_view },
	{ "peers", 0, "N", NULL, "peer tiers the capacity is split over (sim; default 1)",
	  mc_set_u64, &bo.sim_peers },
	{ "eviction-mode", 0, MC_ARG_ONE_OF("MODE", "master|local"), NULL,
	  "who evicts: master (its rounds, global view; default) or local (each peer, its own "
	  "view) (sim)",
	  set_eviction_mode, &bo.sim_local },
	{ "seed", 0, "N", NULL, "random seed of the generated trace (gen; default 1)", mc_set_u64,
	  &bo.seed },
	{ "json", 0, NULL, NULL, "print the result as one JSON object instead of a key=value line",
	  mc_set_flag, &bo.json },
	{ 0 },
};

static void
check_counts(void)
{
	if (bo.clients == 0 || bo.clients > 1024)
		mc_die(MC_EXIT_USAGE, "invalid --clients '%llu': must be 1..1024",
		       (unsigned long long)bo.clients);
	if (bo.batch == 0 || bo.batch > 65536)
		mc_die(MC_EXIT_USAGE, "invalid --batch '%llu': must be 1..65536",
		       (unsigned long long)bo.batch);
}

static int
run_get(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	check_counts();
	return bench_get(&bo);
}

static int
run_lookup(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	check_counts();
	return bench_lookup(&bo);
}

static int
run_fill(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	check_counts();
	return bench_fill(&bo);
}

static int
run_replay(int argc, char **argv)
{
	(void)argc;
	check_counts();
	return bench_replay(&bo, argv[0]);
}

static int
run_sim(int argc, char **argv)
{
	(void)argc;
	check_counts();
	return bench_sim(&bo, argv[0]);
}

static int
run_gen(int argc, char **argv)
{
	(void)argc;
	return bench_gen(&bo, argv[0]);
}

static const struct mc_tool_cmd cmds[] = {
	{ .name = "get",
	  .args = "",
	  .help = "read --keys objects of --size from --clients threads",
	  .run = run_get,
	  .flags = MC_TOOL_MASTER },
	{ .name = "lookup",
	  .args = "",
	  .help = "batched get_replica_list calls of --batch keys",
	  .run = run_lookup,
	  .flags = MC_TOOL_MASTER },
	{ .name = "fill",
	  .args = "",
	  .help = "put --count objects of --size zero bytes",
	  .run = run_fill,
	  .flags = MC_TOOL_MASTER },
	{ .name = "replay",
	  .args = "TRACE",
	  .help = "replay a JSON-lines trace of hash_ids as prefix-block gets and puts",
	  .min_args = 1,
	  .max_args = 1,
	  .run = run_replay,
	  .flags = MC_TOOL_MASTER },
	{ .name = "sim",
	  .args = "TRACE",
	  .help = "simulate a policy over a trace offline, beside LRU, LFU, S3-FIFO, ARC, OPT",
	  .min_args = 1,
	  .max_args = 1,
	  .run = run_sim },
	{ .name = "gen",
	  .args = "FAMILY",
	  .help = "write a synthetic trace: chat, agent, zipf, scan or phase (--requests, --seed)",
	  .min_args = 1,
	  .max_args = 1,
	  .run = run_gen },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-bench",
	.globals = "[OPTIONS]",
	.summary = "load generator and trace replayer for mc",
	.opts = global_opts,
	.cmds = cmds,
};

int
main(int argc, char **argv)
{
	return mc_tool_main(&tool, argc, argv);
}
