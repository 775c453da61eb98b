/*
 * Trace replay: each line of the trace is one request whose hash_ids
 * name its 512-token prefix blocks. Like a serving engine, the replayer
 * fetches the blocks of a request's prefix in one batch, counts the
 * leading run it found as prefix hits (a block after the first miss is
 * useless without its prefix), and parks the blocks it had to compute.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/client.h"
#include "mc/clock.h"
#include "mc/err.h"
#include "mc/log.h"

#include "bench.h"

#define MAX_BLOCKS 4096
#define KEY_CAP 64

/*
 * Pull the integers of the "hash_ids" array out of one JSON line.
 * Returns how many were found, or -1 when the line has no such array.
 */
static int
parse_hash_ids(const char *line, uint64_t *ids, int max)
{
	const char *p = strstr(line, "\"hash_ids\"");
	int n = 0;

	if (p == NULL || (p = strchr(p, '[')) == NULL)
		return -1;
	for (p++; *p && *p != ']';) {
		char *end;
		unsigned long long v;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ']')
			break;
		if (!isdigit((unsigned char)*p))
			return -1;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || end == p)
			return -1;
		if (n < max)
			ids[n++] = v;
		p = end;
	}
	return *p == ']' ? n : -1;
}

struct replay_state {
	const struct bench_opts *o;
	struct mc_client *c;
	char (*keys)[KEY_CAP];
	const char **keyp;
	void **bufs;
	size_t *caps, *lens;
	int *results;
	const void **put_bufs;
	unsigned char *arena, *value;
	uint64_t requests, blocks, hits, puts, put_failures, get_errors;
	struct lat lat;
};

static int
replay_one(struct replay_state *st, const uint64_t *ids, int n, struct mc_err *err)
{
	const struct bench_opts *o = st->o;
	int hit = 0, first_miss = n;
	uint64_t t0 = mc_mono_ns();

	for (int i = 0; i < n; i++) {
		snprintf(st->keys[i], KEY_CAP, "%s-%llu", o->prefix, (unsigned long long)ids[i]);
		st->keyp[i] = st->keys[i];
		st->bufs[i] = st->arena + (size_t)i * o->block_bytes;
		st->caps[i] = o->block_bytes;
	}
	if (mc_batch_get(st->c, (size_t)n, st->keyp, st->bufs, st->caps, st->lens, st->results,
			 err) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (st->results[i] == MC_OK && i == hit)
			hit++;
		else if (st->results[i] != MC_OK && st->results[i] != MC_ERR_NOT_FOUND)
			st->get_errors++;
	}
	first_miss = hit;
	if (first_miss < n) {
		size_t m = (size_t)(n - first_miss);
		size_t *lens = st->lens + first_miss;
		struct mc_put_opts po = { .type = "kv", .upsert = true };

		for (size_t i = 0; i < m; i++) {
			st->put_bufs[i] = st->value;
			lens[i] = o->block_bytes;
		}
		if (mc_batch_put(st->c, m, st->keyp + first_miss, st->put_bufs, lens, &po,
				 st->results, err) < 0)
			return -1;
		for (size_t i = 0; i < m; i++) {
			st->puts++;
			if (st->results[i] != MC_OK)
				st->put_failures++;
		}
	}
	lat_add(&st->lat, mc_mono_ns() - t0);
	st->requests++;
	st->blocks += (uint64_t)n;
	st->hits += (uint64_t)hit;
	return 0;
}

int
bench_replay(const struct bench_opts *o, const char *trace)
{
	struct mc_client_opts co = { .master = o->master, .tenant = o->tenant };
	struct replay_state st = { .o = o };
	struct mc_err err = { 0 };
	uint64_t *ids = calloc(MAX_BLOCKS, sizeof(*ids));
	FILE *f = strcmp(trace, "-") == 0 ? stdin : fopen(trace, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	uint64_t t0;
	double s;
	int rc = 0;

	if (f == NULL)
		mc_die(MC_EXIT_USAGE, "cannot open '%s': %s", trace, strerror(errno));
	if (o->block_bytes == 0 || o->block_bytes > (64u << 20))
		mc_die(MC_EXIT_USAGE, "invalid --block-bytes: must be 1B..64MiB");
	st.keys = calloc(MAX_BLOCKS, sizeof(*st.keys));
	st.keyp = calloc(MAX_BLOCKS, sizeof(*st.keyp));
	st.bufs = calloc(MAX_BLOCKS, sizeof(*st.bufs));
	st.caps = calloc(MAX_BLOCKS, sizeof(*st.caps));
	st.lens = calloc(MAX_BLOCKS, sizeof(*st.lens));
	st.results = calloc(MAX_BLOCKS, sizeof(*st.results));
	st.put_bufs = calloc(MAX_BLOCKS, sizeof(*st.put_bufs));
	st.arena = malloc((size_t)MAX_BLOCKS * o->block_bytes);
	st.value = calloc(1, o->block_bytes);
	if (!ids || !st.keys || !st.keyp || !st.bufs || !st.caps || !st.lens || !st.results ||
	    !st.put_bufs || !st.arena || !st.value)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	st.c = mc_client_new(&co, &err);
	if (st.c == NULL)
		mc_die(mc_status_exit_code(err.code), "%s", err.msg);
	t0 = mc_mono_ns();
	while (getline(&line, &cap, f) > 0) {
		int n;

		lineno++;
		if (o->limit && st.requests >= o->limit)
			break;
		n = parse_hash_ids(line, ids, MAX_BLOCKS);
		if (n < 0) {
			mc_complain("%s:%zu: no hash_ids array", trace, lineno);
			rc = MC_EXIT_DATAERR;
			break;
		}
		if (n > 0 && replay_one(&st, ids, n, &err) < 0) {
			mc_complain("request at %s:%zu failed: %s", trace, lineno, err.msg);
			rc = mc_status_exit_code(err.code);
			break;
		}
	}
	s = (double)(mc_mono_ns() - t0) / 1e9;
	printf("replay requests=%llu blocks=%llu hits=%llu hit_ratio=%.4f puts=%llu "
	       "put_failures=%llu get_errors=%llu seconds=%.3f requests_per_s=%.1f "
	       "p50_us=%.1f p99_us=%.1f\n",
	       (unsigned long long)st.requests, (unsigned long long)st.blocks,
	       (unsigned long long)st.hits, st.blocks ? (double)st.hits / (double)st.blocks : 0,
	       (unsigned long long)st.puts, (unsigned long long)st.put_failures,
	       (unsigned long long)st.get_errors, s, s > 0 ? (double)st.requests / s : 0,
	       lat_pct_us(&st.lat, 50), lat_pct_us(&st.lat, 99));
	mc_client_free(st.c);
	if (f != stdin)
		fclose(f);
	free(line);
	free(ids);
	free(st.keys);
	free(st.keyp);
	free(st.bufs);
	free(st.caps);
	free(st.lens);
	free(st.results);
	free(st.put_bufs);
	free(st.arena);
	free(st.value);
	lat_free(&st.lat);
	return rc;
}
