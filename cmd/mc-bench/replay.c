/*
 * Trace replay against a live cluster, the way a serving engine uses a
 * KV cache. For each request (trace.h):
 *   1. look up every prefix block in one batch (batch_exist: records no
 *      access, takes no lease);
 *   2. read the leading run that was found, in batches; only blocks read
 *      count as accesses, and a block gone since the lookup ends the run
 *      (the prefix hits are the blocks actually read);
 *   3. write the blocks it had to compute: every block after that run
 *      the cache does not hold (a put that finds the key exists already
 *      is not a failure).
 * Nothing is truncated. The summary line gives the prefix hit ratio (the
 * GPU work saved), the found-anywhere block ratio, puts done, failed and
 * retried, the occupancy of the peers' DRAM tiers (their used over
 * capacity as the master accounts them, sampled every SAMPLE_EVERY
 * requests from the first eviction on: the mean fill and the lowest
 * fill of any tier), rounds, bytes evicted, requests/s and latency
 * percentiles. More failed puts
 * than --max-put-failures makes the run fail: a replay whose writes did
 * not land measures nothing.
 *
 * --clock trace replays on the trace's own timestamps: before each
 * request the master's object clock (leases, soft pins, TTLs) is moved
 * to the request's time (clock_set). The default runs as fast as it can.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/client.h"
#include "mc/clock.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/rpcc.h"
#include "mc/tier.h"
#include "mc/tool.h"
#include "mc/wire.h"

#include "bench.h"
#include "trace.h"

#define KEY_CAP 64
/* Blocks read or written per batch call: bounds the read buffer. */
#define CHUNK 256
/* Requests between two samples of the tiers' occupancy. */
#define SAMPLE_EVERY 10
/* Tenants a trace may name (one client each). */
#define TENANTS_MAX 64

struct tenant_client {
	char name[MC_NAME_MAX + 1];
	struct mc_client *c;
};

struct replay {
	const struct bench_opts *o;
	struct tenant_client tc[TENANTS_MAX];
	size_t ntc;
	struct mc_client *admin; /* the first client: master-wide calls */
	/* per request, grown to the longest one */
	char (*keys)[KEY_CAP];
	struct mc_key *keyp;
	int *present, *results;
	size_t cap;
	/* one chunk's buffers */
	void *bufs[CHUNK];
	size_t caps[CHUNK], lens[CHUNK];
	const void *put_bufs[CHUNK];
	unsigned char *arena, *value;
	/* trace clock */
	uint64_t clock_base;
	bool clock_started;
	/* counts */
	uint64_t requests, blocks, hits, found, puts, put_failures, puts_existing;
	uint64_t get_errors;
	/*
	 * Occupancy: the store's objects when the replay began, whether an
	 * eviction has happened since (the store holds fewer objects than
	 * the puts made), the samples' sum of fills and the lowest fill.
	 */
	uint64_t objects0;
	bool evicting;
	double occ_sum, occ_min;
	uint64_t occ_samples;
	struct lat lat;
	struct mc_err last_put_err;
};

static struct mc_client *
client_for(struct replay *st, const char *tenant, struct mc_err *err)
{
	struct mc_client_opts co;
	struct tenant_client *t;

	for (size_t i = 0; i < st->ntc; i++)
		if (strcmp(st->tc[i].name, tenant) == 0)
			return st->tc[i].c;
	if (st->ntc == TENANTS_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "the trace names more than %d tenants",
			   TENANTS_MAX);
		return NULL;
	}
	t = &st->tc[st->ntc];
	snprintf(t->name, sizeof(t->name), "%s", tenant);
	mc_tool_client_opts(&co);
	co.tenant = t->name;
	t->c = mc_client_new(&co, err);
	if (t->c == NULL)
		return NULL;
	st->ntc++;
	if (st->admin == NULL)
		st->admin = t->c;
	return t->c;
}

static int
grow(struct replay *st, size_t n, struct mc_err *err)
{
	size_t cap = st->cap ? st->cap : 64;
	void *k, *kp, *p, *r;

	if (n <= st->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	k = realloc(st->keys, cap * sizeof(*st->keys));
	if (k != NULL)
		st->keys = k;
	kp = realloc(st->keyp, cap * sizeof(*st->keyp));
	if (kp != NULL)
		st->keyp = kp;
	p = realloc(st->present, cap * sizeof(*st->present));
	if (p != NULL)
		st->present = p;
	r = realloc(st->results, cap * sizeof(*st->results));
	if (r != NULL)
		st->results = r;
	if (k == NULL || kp == NULL || p == NULL || r == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory for a request of %zu blocks",
				  n);
	st->cap = cap;
	return 0;
}

/* A master call without params through the admin client; the caller releases *m. */
static int
admin_call(struct replay *st, const char *method, struct mc_msg *m, struct mc_err *err)
{
	struct mc_rpcc *r = mc_client_master(st->admin);

	if (r == NULL)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "no connection to the master");
	return mc_rpcc_call0(r, method, m, err);
}

/* clock_set {now_ms} through the admin client; the caller releases *m. */
static int
clock_set(struct replay *st, uint64_t now_ms, struct mc_msg *m, struct mc_err *err)
{
	struct mc_rpcc *r = mc_client_master(st->admin);
	msgpack_packer *pk;

	if (r == NULL)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "no connection to the master");
	pk = mc_rpcc_begin(r, "clock_set");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "now_ms", now_ms);
	return mc_rpcc_call(r, m, err);
}

/* --clock trace: the master's object time follows the request's timestamp. */
static int
clock_to(struct replay *st, uint64_t ts, struct mc_err *err)
{
	struct mc_msg m;
	uint64_t now = 0, to;

	if (!st->clock_started) {
		/* Asking for 0 moves nothing and answers the master's time. */
		if (clock_set(st, now, &m, err) < 0)
			return -1;
		mc_map_u64(m.body, "now_ms", &st->clock_base, NULL);
		mc_msg_release(&m);
		st->clock_base = st->clock_base > ts ? st->clock_base - ts : 0;
		st->clock_started = true;
	}
	to = st->clock_base + ts;
	if (clock_set(st, to, &m, err) < 0)
		return -1;
	mc_msg_release(&m);
	return 0;
}

/* The store's object count (master stats). */
static int
objects_now(struct replay *st, uint64_t *n, struct mc_err *err)
{
	struct mc_msg m;

	if (admin_call(st, "stats", &m, err) < 0)
		return -1;
	*n = 0;
	mc_map_u64(m.body, "objects", n, NULL);
	mc_msg_release(&m);
	return 0;
}

/*
 * The fill of the live peers' DRAM tiers as the master accounts them
 * (used over capacity, all of them together) and the lowest fill of one
 * of them; -1 in both when there is none.
 */
static int
occupancy(struct replay *st, double *fill, double *least, struct mc_err *err)
{
	const msgpack_object_array *peers;
	uint64_t used = 0, cap = 0;
	struct mc_msg m;

	*fill = *least = -1;
	if (admin_call(st, "peers", &m, err) < 0)
		return -1;
	peers = mc_map_array(m.body, "peers");
	for (uint32_t i = 0; peers != NULL && i < peers->size; i++) {
		const msgpack_object_array *tiers = mc_map_array(&peers->ptr[i], "tiers");
		bool alive = false;

		mc_map_bool(&peers->ptr[i], "alive", &alive, NULL);
		for (uint32_t t = 0; alive && tiers != NULL && t < tiers->size; t++) {
			const msgpack_object *e = &tiers->ptr[t];
			uint64_t u = 0, c = 0;

			if (!mc_obj_streq(mc_map_get(e, "tier"), MC_TIER_DRAM_NAME))
				continue;
			mc_map_u64(e, "used", &u, NULL);
			mc_map_u64(e, "capacity", &c, NULL);
			if (c == 0)
				continue;
			used += u;
			cap += c;
			if (*least < 0 || (double)u / (double)c < *least)
				*least = (double)u / (double)c;
		}
	}
	mc_msg_release(&m);
	if (cap > 0)
		*fill = (double)used / (double)cap;
	return 0;
}

/*
 * One sample of the occupancy, once the cache has evicted something:
 * before, the tiers are filling and their fill says nothing of how
 * eviction keeps them.
 */
static void
sample(struct replay *st)
{
	struct mc_err err;
	double fill, least;
	uint64_t n;

	if (!st->evicting) {
		if (objects_now(st, &n, &err) < 0 ||
		    n >= st->objects0 + st->puts - st->put_failures)
			return;
		st->evicting = true;
	}
	if (occupancy(st, &fill, &least, &err) < 0 || fill < 0)
		return;
	st->occ_sum += fill;
	st->occ_samples++;
	if (st->occ_min < 0 || least < st->occ_min)
		st->occ_min = least;
}

/* Read blocks [0, n) of keys, chunk by chunk, until one is missing: how many were read. */
static int
read_run(struct replay *st, struct mc_client *c, size_t n, size_t *got, struct mc_err *err)
{
	const struct bench_opts *o = st->o;

	*got = 0;
	for (size_t from = 0; from < n;) {
		size_t m = n - from < CHUNK ? n - from : CHUNK, i;

		for (i = 0; i < m; i++) {
			st->bufs[i] = st->arena + i * o->block_bytes;
			st->caps[i] = o->block_bytes;
		}
		if (mc_batch_get(c, m, st->keyp + from, st->bufs, st->caps, st->lens,
				 st->results + from, err) < 0)
			return -1;
		for (i = 0; i < m && st->results[from + i] == MC_OK; i++)
			;
		for (size_t k = i; k < m; k++)
			if (st->results[from + k] != MC_OK &&
			    st->results[from + k] != MC_ERR_NOT_FOUND)
				st->get_errors++;
		*got += i;
		if (i < m)
			return 0;
		from += m;
	}
	return 0;
}

/* Write the blocks listed in idx[0..n), chunk by chunk. */
static int
write_blocks(struct replay *st, struct mc_client *c, const char *type, const size_t *idx, size_t n,
	     struct mc_err *err)
{
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	struct mc_key keys[CHUNK], parents[CHUNK];
	int res[CHUNK];

	for (size_t from = 0; from < n;) {
		size_t m = n - from < CHUNK ? n - from : CHUNK;

		for (size_t i = 0; i < m; i++) {
			keys[i] = st->keyp[idx[from + i]];
			/* its chain parent: the block before it in the request */
			parents[i] = idx[from + i] > 0 ? st->keyp[idx[from + i] - 1]
						       : (struct mc_key){ NULL, 0 };
			st->put_bufs[i] = st->value;
			st->lens[i] = st->o->block_bytes;
		}
		po.type = type;
		po.parents = parents;
		if (mc_batch_put(c, m, keys, st->put_bufs, st->lens, &po, res, err) < 0)
			return -1;
		for (size_t i = 0; i < m; i++) {
			if (res[i] == MC_OK) {
				st->puts++;
			} else if (res[i] == MC_ERR_EXISTS) {
				/* Another request wrote it meanwhile: the cache has it. */
				st->puts_existing++;
			} else {
				st->puts++;
				st->put_failures++;
				mc_err_set(&st->last_put_err, res[i], "%s", mc_status_name(res[i]));
			}
		}
		from += m;
	}
	return 0;
}

static int
replay_one(struct replay *st, const struct trace_req *rq, struct mc_err *err)
{
	const struct bench_opts *o = st->o;
	const char *tenant = rq->tenant[0] != '\0' ? rq->tenant : mc_tool_tenant();
	const char *type = rq->type[0] != '\0' ? rq->type : "kv";
	struct mc_client *c = client_for(st, tenant, err);
	size_t n = rq->n, prefix = 0, read = 0, nw = 0, *idx;
	uint64_t t0;

	if (c == NULL || grow(st, n, err) < 0)
		return -1;
	if (o->trace_clock && rq->has_timestamp && clock_to(st, rq->timestamp, err) < 0)
		return -1;
	t0 = mc_mono_ns();
	for (size_t i = 0; i < n; i++) {
		int len = snprintf(st->keys[i], KEY_CAP, "%s-%llu", o->prefix,
				   (unsigned long long)rq->ids[i]);

		st->keyp[i] =
			(struct mc_key){ st->keys[i], len < KEY_CAP ? (size_t)len : KEY_CAP - 1 };
	}
	if (mc_batch_exist(c, n, st->keyp, st->present, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		st->found += st->present[i] == 1;
	while (prefix < n && st->present[prefix] == 1)
		prefix++;
	if (read_run(st, c, prefix, &read, err) < 0)
		return -1;
	/* The blocks it had to compute and the cache lacks. */
	idx = calloc(n - read + 1, sizeof(*idx));
	if (idx == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	for (size_t i = read; i < n; i++)
		if (i < prefix || st->present[i] != 1)
			idx[nw++] = i;
	if (write_blocks(st, c, type, idx, nw, err) < 0) {
		free(idx);
		return -1;
	}
	free(idx);
	lat_add(&st->lat, mc_mono_ns() - t0);
	st->requests++;
	st->blocks += n;
	st->hits += read;
	if (st->requests % SAMPLE_EVERY == 0)
		sample(st);
	return 0;
}

static double
ratio(uint64_t a, uint64_t b)
{
	return b > 0 ? (double)a / (double)b : 0;
}

int
bench_replay(const struct bench_opts *o, const char *path)
{
	struct replay st = { .o = o };
	struct trace_req rq = { 0 };
	struct trace t;
	struct mc_err err = { 0 };
	struct mc_client_stats cs = MC_CLIENT_STATS_INIT;
	struct bench_out r;
	uint64_t t0, retries = 0, stalls = 0, renewals = 0;
	uint64_t rounds = 0, evicted = 0;
	double s;
	int rc = 0, got;

	if (o->block_bytes == 0 || o->block_bytes > (64u << 20))
		mc_die(MC_EXIT_USAGE, "invalid --block-bytes: must be 1B..64MiB");
	if (trace_open(&t, path, &err) < 0)
		mc_die(MC_EXIT_USAGE, "%s", err.msg);
	st.arena = malloc((size_t)CHUNK * o->block_bytes);
	st.value = calloc(1, o->block_bytes);
	if (st.arena == NULL || st.value == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	if (client_for(&st, mc_tool_tenant(), &err) == NULL)
		mc_die(mc_status_exit_code(err.code), "%s", err.msg);
	st.occ_min = -1;
	/* without the count, every sample counts: nothing tells the warm-up apart */
	st.evicting = objects_now(&st, &st.objects0, &err) < 0;
	t0 = mc_mono_ns();
	while ((got = trace_next(&t, &rq, &err)) == 1) {
		if (o->limit && st.requests >= o->limit)
			break;
		if (rq.n > 0 && replay_one(&st, &rq, &err) < 0) {
			mc_complain("request at %s:%llu failed: %s", path,
				    (unsigned long long)t.lineno, err.msg);
			rc = mc_status_exit_code(err.code);
			break;
		}
	}
	if (got < 0) {
		mc_complain("%s", err.msg);
		rc = MC_EXIT_DATAERR;
	}
	s = (double)(mc_mono_ns() - t0) / 1e9;
	for (size_t i = 0; i < st.ntc; i++) {
		mc_client_stats(st.tc[i].c, &cs);
		retries += cs.put_retries;
		stalls += cs.stalls;
		renewals += cs.grant_renewals;
	}
	if (rc == 0) {
		struct mc_msg m;

		sample(&st);
		if (admin_call(&st, "stats", &m, &err) == 0) {
			mc_map_u64(m.body, "evict_rounds", &rounds, NULL);
			mc_map_u64(m.body, "evicted_bytes", &evicted, NULL);
			mc_msg_release(&m);
		}
	}
	out_begin(&r, o->json, "replay");
	out_u64(&r, "requests", st.requests);
	out_u64(&r, "blocks", st.blocks);
	out_u64(&r, "prefix_hits", st.hits);
	out_double(&r, "prefix_hit_ratio", 4, ratio(st.hits, st.blocks));
	out_u64(&r, "found", st.found);
	out_double(&r, "block_hit_ratio", 4, ratio(st.found, st.blocks));
	out_u64(&r, "puts", st.puts);
	out_u64(&r, "put_failures", st.put_failures);
	out_u64(&r, "put_retries", retries);
	out_u64(&r, "stalls", stalls);
	out_u64(&r, "grant_renewals", renewals);
	out_u64(&r, "puts_existing", st.puts_existing);
	out_u64(&r, "get_errors", st.get_errors);
	out_double(&r, "occupancy_min", 4, st.occ_min >= 0 ? st.occ_min : 0);
	out_double(&r, "occupancy_mean", 4,
		   st.occ_samples ? st.occ_sum / (double)st.occ_samples : 0);
	out_u64(&r, "occupancy_samples", st.occ_samples);
	out_u64(&r, "rounds", rounds);
	out_u64(&r, "evicted_bytes", evicted);
	out_double(&r, "seconds", 3, s);
	out_double(&r, "requests_per_s", 1, s > 0 ? (double)st.requests / s : 0);
	out_double(&r, "p50_us", 1, lat_pct_us(&st.lat, 50));
	out_double(&r, "p90_us", 1, lat_pct_us(&st.lat, 90));
	out_double(&r, "p99_us", 1, lat_pct_us(&st.lat, 99));
	out_end(&r);
	if (rc == 0 && st.puts > 0 &&
	    (double)st.put_failures > o->max_put_failures * (double)st.puts) {
		mc_complain(
			"%llu of %llu puts failed (%.2f%%, last: %s), more than "
			"--max-put-failures %.2f%%: the cache did not take the writes, so these "
			"figures measure nothing",
			(unsigned long long)st.put_failures, (unsigned long long)st.puts,
			100.0 * ratio(st.put_failures, st.puts), st.last_put_err.msg,
			100.0 * o->max_put_failures);
		rc = MC_EXIT_FAIL;
	}
	for (size_t i = 0; i < st.ntc; i++)
		mc_client_free(st.tc[i].c);
	trace_close(&t);
	trace_req_free(&rq);
	free(st.keys);
	free(st.keyp);
	free(st.present);
	free(st.results);
	free(st.arena);
	free(st.value);
	lat_free(&st.lat);
	return rc;
}
