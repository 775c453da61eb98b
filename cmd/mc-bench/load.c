/*
 * Closed-loop load: get (bytes through peers), lookup (batched
 * get_replica_list on the master) and fill (puts of zero bytes).
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/client.h"
#include "mc/clock.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/tool.h"
#include "mc/wire.h"

#include "bench.h"

#define KEY_CAP 512
#define FILL_WINDOW 128

struct worker {
	const struct bench_opts *o;
	unsigned idx;
	pthread_t tid;
	uint64_t ops, bytes, failures;
	struct lat lat;
	struct mc_err err;
	int rc;
};

static int
run_workers(const struct bench_opts *o, void *(*fn)(void *), struct worker *w, double *wall_s,
	    double *cpu_s)
{
	uint64_t t0 = mc_mono_ns();
	double c0 = cpu_seconds();

	for (unsigned i = 0; i < o->clients; i++) {
		w[i].o = o;
		w[i].idx = i;
		if (pthread_create(&w[i].tid, NULL, fn, &w[i]) != 0) {
			mc_complain("cannot start client thread %u", i);
			return -1;
		}
	}
	for (unsigned i = 0; i < o->clients; i++)
		pthread_join(w[i].tid, NULL);
	*wall_s = (double)(mc_mono_ns() - t0) / 1e9;
	*cpu_s = cpu_seconds() - c0;
	return 0;
}

/* Whether a worker that has done `done` requests since t0 should stop. */
static int
worker_done(const struct bench_opts *o, uint64_t done, uint64_t t0)
{
	if (o->requests)
		return done >= o->requests;
	return (done & 15) == 0 && mc_mono_ns() - t0 >= o->duration_ms * 1000000ull;
}

/* ---- get ---- */

static void *
get_worker(void *arg)
{
	struct worker *w = arg;
	const struct bench_opts *o = w->o;
	/* one client for every thread: each gets its own connections */
	struct mc_client *c = mc_tool_client();
	char key[KEY_CAP];
	void *buf = NULL;
	uint64_t t0, i;

	w->rc = -1;
	buf = malloc(o->size ? o->size : 1);
	if (buf == NULL) {
		mc_err_set(&w->err, MC_ERR_SYSTEM, "out of memory");
		goto out;
	}
	t0 = mc_mono_ns();
	for (i = 0; !worker_done(o, i, t0); i++) {
		size_t len;
		uint64_t s = mc_mono_ns();

		bench_key(key, sizeof(key), o->prefix, (i + w->idx * 7) % o->keys, 0);
		if (mc_get(c, key, strlen(key), buf, o->size ? o->size : 1, &len, &w->err) < 0) {
			w->failures++;
			if (w->failures > 100)
				goto out;
			continue;
		}
		lat_add(&w->lat, mc_mono_ns() - s);
		w->ops++;
		w->bytes += len;
	}
	w->rc = 0;
out:
	free(buf);
	return NULL;
}

/* The record of get or lookup; param is the size or the batch, named so. */
static int
report_load(const char *what, const struct bench_opts *o, struct worker *w, double wall, double cpu,
	    const char *param, uint64_t value)
{
	struct bench_out r;
	struct lat all = { 0 };
	uint64_t ops = 0, bytes = 0, failures = 0;
	int rc = 0;

	for (unsigned i = 0; i < o->clients; i++) {
		if (w[i].rc < 0) {
			mc_complain("client %u failed: %s", i, w[i].err.msg);
			rc = 1;
		}
		ops += w[i].ops;
		bytes += w[i].bytes;
		failures += w[i].failures;
		lat_merge(&all, &w[i].lat);
		lat_free(&w[i].lat);
	}
	out_begin(&r, o->json, what);
	out_u64(&r, "clients", o->clients);
	out_u64(&r, param, value);
	out_u64(&r, "ops", ops);
	out_u64(&r, "failures", failures);
	out_double(&r, "seconds", 3, wall);
	out_double(&r, "ops_per_s", 1, wall > 0 ? (double)ops / wall : 0);
	out_double(&r, "gb_per_s", 3, wall > 0 ? (double)bytes / wall / 1e9 : 0);
	out_double(&r, "p50_us", 1, lat_pct_us(&all, 50));
	out_double(&r, "p99_us", 1, lat_pct_us(&all, 99));
	out_double(&r, "max_us", 1, lat_pct_us(&all, 100));
	out_double(&r, "cpu_s", 3, cpu);
	out_double(&r, "cpu_s_per_gb", 3, bytes ? cpu / ((double)bytes / 1e9) : 0);
	out_end(&r);
	lat_free(&all);
	return rc;
}

int
bench_get(const struct bench_opts *o)
{
	struct mc_err err = { 0 };
	struct mc_client *c = mc_tool_client();
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	struct worker *w;
	char key[KEY_CAP];
	unsigned char *val;
	double wall, cpu;
	int rc;

	po.upsert = true;
	po.tier = o->tier;
	val = malloc(o->size ? o->size : 1);
	w = calloc(o->clients, sizeof(*w));
	if (val == NULL || w == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	for (uint64_t i = 0; i < o->size; i++)
		val[i] = (unsigned char)(i * 131 + 7);
	for (uint64_t k = 0; k < o->keys && !o->reuse; k++) {
		bench_key(key, sizeof(key), o->prefix, k, 0);
		if (mc_put(c, key, strlen(key), val, o->size, &po, &err) < 0) {
			mc_complain("cannot put '%s': %s", key, err.msg);
			rc = mc_status_exit_code(err.code);
			goto out;
		}
	}
	if (run_workers(o, get_worker, w, &wall, &cpu) < 0) {
		rc = MC_EXIT_SOFTWARE;
		goto out;
	}
	rc = report_load("get", o, w, wall, cpu, "size", o->size);
out:
	free(val);
	free(w);
	return rc;
}

/* ---- master connections for lookup and fill ---- */

static struct mc_rpcc *
master_open(struct mc_err *err)
{
	return mc_client_open_master(mc_tool_client(), err);
}

struct batch_args {
	const struct bench_opts *o;
	uint64_t first;
};

/*
 * The lookup keys, built once before the clock starts so that the
 * clients spend their CPU on requests, not on formatting key names
 * (redis-benchmark, on the other side, patches a prebuilt command).
 */
static char *key_pool;
static size_t key_stride;

static int
key_pool_build(const struct bench_opts *o)
{
	key_stride = (size_t)o->key_len + 1 > 32 ? (size_t)o->key_len + 1 : 32;
	if (key_stride > KEY_CAP)
		key_stride = KEY_CAP;
	key_pool = malloc(key_stride * o->count);
	if (key_pool == NULL)
		return -1;
	for (uint64_t i = 0; i < o->count; i++)
		bench_key(key_pool + i * key_stride, key_stride, o->prefix, i, o->key_len);
	return 0;
}

static void
pack_batch(msgpack_packer *pk, const struct batch_args *a)
{
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "keys");
	msgpack_pack_array(pk, a->o->batch);
	for (uint64_t i = 0; i < a->o->batch; i++)
		mc_pack_cstr(pk, key_pool + ((a->first + i) % a->o->count) * key_stride);
}

/*
 * The lookup load is one thread driving --clients connections through
 * poll(), each with one batch call in flight, the way redis-benchmark
 * drives its connections: a thread per connection would spend the
 * shared cores on wake-ups instead of requests. Like a client, each
 * connection releases the leases of a batch with the next call (a
 * notification sent with it).
 */
struct lookup_conn {
	struct mc_rpcc *r;
	struct batch_args ba;
	uint64_t sent_at, calls;
	uint64_t *leases; /* the last answer's lease ids, --batch slots */
	size_t nleases;
};

static int
lookup_send(struct lookup_conn *lc, struct mc_err *err)
{
	lc->sent_at = mc_mono_ns();
	if (lc->nleases > 0) {
		msgpack_packer *pk = mc_rpcc_begin(lc->r, "release");

		msgpack_pack_map(pk, 1);
		mc_pack_key(pk, "lease_ids");
		msgpack_pack_array(pk, (uint32_t)lc->nleases);
		for (size_t i = 0; i < lc->nleases; i++)
			msgpack_pack_uint64(pk, lc->leases[i]);
		if (mc_rpcc_notify(lc->r, err) < 0)
			return -1;
	}
	lc->nleases = 0;
	pack_batch(mc_rpcc_begin(lc->r, "batch_get_replica_list"), &lc->ba);
	if (mc_rpcc_send(lc->r, NULL, 0, err) < 0)
		return -1;
	return mc_rpcc_flush(lc->r, err);
}

/* Read one answer on lc and account it in w. */
static int
lookup_recv(struct lookup_conn *lc, struct worker *w)
{
	const struct bench_opts *o = w->o;
	const msgpack_object_array *items;
	struct mc_msg resp;

	if (mc_rpcc_recv(lc->r, &resp, &w->err) < 0)
		return -1;
	if (mc_msg_error(&resp, &w->err) < 0) {
		mc_msg_release(&resp);
		return -1;
	}
	items = mc_map_array(resp.body, "items");
	if (items == NULL || items->size != o->batch) {
		mc_msg_release(&resp);
		return mc_err_set(&w->err, MC_ERR_PROTO, "batch reply without %llu items",
				  (unsigned long long)o->batch);
	}
	for (uint32_t k = 0; k < items->size; k++) {
		uint64_t id = 0;

		if (mc_map_get(&items->ptr[k], "error") != NULL)
			w->failures++;
		else if (mc_map_u64(&items->ptr[k], "lease_id", &id, NULL) == 1 && id != 0)
			lc->leases[lc->nleases++] = id;
	}
	mc_msg_release(&resp);
	lat_add(&w->lat, mc_mono_ns() - lc->sent_at);
	w->ops += o->batch;
	lc->calls++;
	lc->ba.first += o->batch;
	return 0;
}

static void
lookup_loop(struct worker *w)
{
	const struct bench_opts *o = w->o;
	unsigned n = (unsigned)o->clients, live = 0;
	struct lookup_conn *lc = calloc(n, sizeof(*lc));
	struct pollfd *pf = calloc(n, sizeof(*pf));
	uint64_t t0;

	w->rc = -1;
	if (lc == NULL || pf == NULL) {
		mc_err_set(&w->err, MC_ERR_SYSTEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		lc[i].ba = (struct batch_args){ .o = o, .first = (uint64_t)i * 9973 };
		lc[i].leases = calloc(o->batch, sizeof(*lc[i].leases));
		if (lc[i].leases == NULL) {
			mc_err_set(&w->err, MC_ERR_SYSTEM, "out of memory");
			goto out;
		}
		lc[i].r = master_open(&w->err);
		if (lc[i].r == NULL)
			goto out;
		pf[i] = (struct pollfd){ .fd = mc_rpcc_fd(lc[i].r), .events = POLLIN };
	}
	t0 = mc_mono_ns();
	for (unsigned i = 0; i < n; i++, live++)
		if (lookup_send(&lc[i], &w->err) < 0)
			goto out;
	while (live > 0) {
		int ready = poll(pf, n, 10000);

		if (ready <= 0) {
			mc_err_set(&w->err, MC_ERR_TIMEOUT, "no answer from the master in 10 s");
			goto out;
		}
		for (unsigned i = 0; i < n; i++) {
			if (pf[i].fd < 0 || pf[i].revents == 0)
				continue;
			if (lookup_recv(&lc[i], w) < 0)
				goto out;
			if (worker_done(o, lc[i].calls, t0) ||
			    (!o->requests && mc_mono_ns() - t0 >= o->duration_ms * 1000000ull)) {
				pf[i].fd = -1;
				live--;
			} else if (lookup_send(&lc[i], &w->err) < 0) {
				goto out;
			}
		}
	}
	w->rc = 0;
out:
	for (unsigned i = 0; lc != NULL && i < n; i++) {
		mc_rpcc_close(lc[i].r);
		free(lc[i].leases);
	}
	free(lc);
	free(pf);
}

/*
 * Put count objects of o->size zero bytes, FILL_WINDOW keys a batch call
 * (upserts, one replica each). They go through the client like any put:
 * a replica becomes COMPLETE only once its peer confirmed the bytes, so
 * there is no metadata-only shortcut. The first key that fails fails
 * the fill, named with its reason.
 */
static int
fill_objects(const struct bench_opts *o, struct mc_err *err)
{
	struct mc_client *c = mc_tool_client();
	static char keys[FILL_WINDOW][KEY_CAP];
	struct mc_key ks[FILL_WINDOW];
	const void *bufs[FILL_WINDOW];
	size_t lens[FILL_WINDOW];
	int results[FILL_WINDOW];
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	void *zero = calloc(1, o->size ? o->size : 1);
	int rc = -1;

	if (zero == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory for a %llu-byte value",
				  (unsigned long long)o->size);
	po.upsert = true;
	for (uint64_t base = 0; base < o->count; base += FILL_WINDOW) {
		unsigned n =
			o->count - base < FILL_WINDOW ? (unsigned)(o->count - base) : FILL_WINDOW;

		for (unsigned i = 0; i < n; i++) {
			bench_key(keys[i], KEY_CAP, o->prefix, base + i, o->key_len);
			ks[i] = (struct mc_key){ keys[i], strlen(keys[i]) };
			bufs[i] = zero;
			lens[i] = o->size;
		}
		if (mc_batch_put(c, n, ks, bufs, lens, &po, results, err) < 0)
			goto out;
		for (unsigned i = 0; i < n; i++)
			if (results[i] != MC_OK) {
				mc_err_set(err, results[i], "put '%s': %s", keys[i],
					   mc_status_name(results[i]));
				goto out;
			}
	}
	rc = 0;
out:
	free(zero);
	return rc;
}

int
bench_lookup(const struct bench_opts *o)
{
	struct bench_opts fo = *o;
	struct mc_err err = { 0 };
	struct worker *w;
	double wall, cpu, c0;
	uint64_t t0;
	int rc;

	fo.count = o->keys;
	fo.size = 4096;
	if (fill_objects(&fo, &err) < 0) {
		mc_complain("cannot create keys: %s", err.msg);
		return mc_status_exit_code(err.code);
	}
	w = calloc(o->clients, sizeof(*w));
	if (w == NULL || key_pool_build(&fo) < 0)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	/* One thread drives every connection; the other workers stay empty. */
	for (unsigned i = 0; i < o->clients; i++)
		w[i].o = &fo;
	t0 = mc_mono_ns();
	c0 = cpu_seconds();
	lookup_loop(&w[0]);
	wall = (double)(mc_mono_ns() - t0) / 1e9;
	cpu = cpu_seconds() - c0;
	rc = report_load("lookup", o, w, wall, cpu, "batch", o->batch);
	free(w);
	free(key_pool);
	return rc;
}

int
bench_fill(const struct bench_opts *o)
{
	struct mc_err err = { 0 };
	uint64_t t0 = mc_mono_ns();
	struct bench_out r;
	double s;

	if (fill_objects(o, &err) < 0) {
		mc_complain("fill failed: %s", err.msg);
		return mc_status_exit_code(err.code);
	}
	s = (double)(mc_mono_ns() - t0) / 1e9;
	out_begin(&r, o->json, "fill");
	out_u64(&r, "count", o->count);
	out_u64(&r, "key_len", o->key_len);
	out_double(&r, "seconds", 3, s);
	out_double(&r, "objects_per_s", 1, s > 0 ? (double)o->count / s : 0);
	out_end(&r);
	return 0;
}
