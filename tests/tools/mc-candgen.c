/*
 * mc-candgen: write a synthetic but realistic candidate view
 * (man/mc-candidates.5) derived from a request trace, for the eviction
 * benchmarks (tests/bench/evict) and anything else that plans over a
 * large view.
 *
 *   mc-candgen --trace FILE [--count N] [--seed S] [--start MS] [--json]
 *              [-o FILE]
 *
 * The trace is JSON lines, one request a line with "timestamp" (ms),
 * "input_length" (tokens) and "hash_ids" (one id per 512-token prefix
 * block), as in /work/shared/traces/conversation_trace.jsonl. The view
 * is the trace replayed as several streams until it holds --count
 * candidates (the last stream cut short). A stream is one tenant's
 * traffic: the trace with about 1 request in 10 dropped, its times
 * rotated by a random offset within the trace's span (so every stream
 * runs up to the view's time), and its hash ids moved into a range of
 * their own, so a key is "h<id + stream x (largest id + 1)>". Tenants take
 * the streams in turn 4:3:2:1: chat, batch, search, agent (the first two
 * are the tenants examples/policies/tenant-type.policy names).
 *
 * Per block of a stream: created is its first request's time,
 * last_access its last (plus up to 1 s of jitter), access_count the
 * number of its requests. The view has the access sequence a master
 * would have given it: every block access of every stream is numbered
 * in the order of the streams' times (ties by stream, then request,
 * then block in the request), created_seq and access_seq are the
 * numbers of a block's first and last access, and the view's seq is
 * the number of accesses in all (those of the stream cut short
 * included, as they happened). About 1 block in 8 is of type "hidden", the
 * rest "kv". Sizes are those of one tensor-parallel rank (TP=8) of one
 * layer of a Llama-3-70B-class model in fp16, for 512 tokens:
 *   kv      K and V of 1 of the 8 KV heads x 128 dims: 512 x 2 x 128 x 2 B
 *           = 256 KiB
 *   hidden  1/8 of the 8192-wide hidden state: 512 x 1024 x 2 B = 1 MiB
 * and a request's last, partial block is smaller by its share of 512
 * tokens. Every block has a copy on peer-1 or peer-2 (tier dram), 1 in
 * 12 a second copy on the other (one candidate per copy). A read lease
 * of 10 s runs from last_access, so blocks read in the last 10 s before
 * the view are leased. Every stream's block 0 (the shared system prompt)
 * is soft-pinned for an hour past the view; 2 blocks in 100 carry a soft
 * pin of 30 minutes past their last access (active or lapsed).
 * The kv ranker's fields as a master would send them: depth, the
 * block's position in the first request that held it (the block before
 * it there is its parent, so every block but the last of a request has
 * a child); crf, its access count halved for every tenth of the
 * stream's span since its last access; 3 in 100 orphans, and 1 in 10
 * on probation.
 *
 * One seed always gives the same view. With -o FILE a summary line
 * "candgen count=N ..." goes to stdout, otherwise to stderr.
 */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/candidates.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/tier.h"

#define BLOCK_TOKENS 512
#define KV_BLOCK_BYTES (256u << 10)
#define HIDDEN_BLOCK_BYTES (1u << 20)
#define LEASE_TTL_MS 10000
#define SOFT_PIN_MS (30 * 60 * 1000)
#define SYSTEM_PIN_MS (60 * 60 * 1000)

static uint64_t count = 1000000, seed = 1, start = 1764417600000ull; /* 2025-11-29 12:00 UTC */
static const char *trace_path, *out = "-";
static bool json;

static const struct mc_opt opts[] = {
	{ "trace", 0, "FILE", NULL, "request trace, JSON lines with hash_ids (required)",
	  mc_set_str, &trace_path },
	{ "count", 'n', "N", NULL, "candidates to write (default 1000000)", mc_set_u64, &count },
	{ "seed", 's', "N", NULL, "PRNG seed (default 1)", mc_set_u64, &seed },
	{ "start", 0, "N", NULL, "time of the trace's first request, ms (default 1764417600000)",
	  mc_set_u64, &start },
	{ "json", 0, NULL, NULL, "write JSON lines instead of msgpack", mc_set_flag, &json },
	{ "output", 'o', "FILE", NULL, "where to write (default '-': stdout)", mc_set_str, &out },
	{ 0 },
};

/* The trace in memory: requests, their block ids in one array. */
struct request {
	uint64_t ts, input_length;
	size_t first, n; /* ids[first .. first + n) */
};

static struct request *reqs;
static size_t nreqs, reqs_cap;
static uint64_t *ids;
static size_t nids, ids_cap;
static uint64_t max_id;
static uint64_t first_ts = UINT64_MAX, last_ts; /* the trace's own clock */

/* splitmix64: tiny, and good enough to vary benchmark data */
static uint64_t
mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static void *
grow(void *p, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 4096;

	p = realloc(p, ncap * elem);
	if (p == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory for the trace");
	*cap = ncap;
	return p;
}

/* The unsigned number after "name": in line, or -1 when there is none. */
static int
json_u64_field(const char *line, const char *name, uint64_t *outv)
{
	const char *p = strstr(line, name);
	char *end;

	if (p == NULL)
		return -1;
	p += strlen(name);
	while (*p == ' ' || *p == ':')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	*outv = strtoull(p, &end, 10);
	return 0;
}

static void
parse_line(const char *line, unsigned long lineno)
{
	struct request r = { 0 };
	const char *p = strstr(line, "\"hash_ids\"");

	if (json_u64_field(line, "\"timestamp\"", &r.ts) < 0 ||
	    json_u64_field(line, "\"input_length\"", &r.input_length) < 0 || p == NULL)
		mc_die(MC_EXIT_DATAERR, "%s: line %lu: no timestamp, input_length or hash_ids",
		       trace_path, lineno);
	p = strchr(p, '[');
	if (p == NULL)
		mc_die(MC_EXIT_DATAERR, "%s: line %lu: hash_ids is not an array", trace_path,
		       lineno);
	r.first = nids;
	for (p++;;) {
		char *end;
		uint64_t id;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ']')
			break;
		if (*p < '0' || *p > '9')
			mc_die(MC_EXIT_DATAERR, "%s: line %lu: bad hash id", trace_path, lineno);
		id = strtoull(p, &end, 10);
		if (id > UINT32_MAX)
			mc_die(MC_EXIT_DATAERR, "%s: line %lu: hash id %" PRIu64 " too large",
			       trace_path, lineno, id);
		p = end;
		if (nids == ids_cap)
			ids = grow(ids, &ids_cap, sizeof(*ids));
		ids[nids++] = id;
		if (id > max_id)
			max_id = id;
	}
	r.n = nids - r.first;
	if (r.n == 0)
		return;
	if (nreqs == reqs_cap)
		reqs = grow(reqs, &reqs_cap, sizeof(*reqs));
	reqs[nreqs++] = r;
	if (r.ts < first_ts)
		first_ts = r.ts;
	if (r.ts > last_ts)
		last_ts = r.ts;
}

static void
read_trace(void)
{
	FILE *f = fopen(trace_path, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;

	if (f == NULL)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", trace_path, mc_strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		parse_line(line, lineno);
	}
	free(line);
	fclose(f);
	if (nreqs == 0)
		mc_die(MC_EXIT_DATAERR, "%s: no requests with hash_ids", trace_path);
}

/* What one stream knows about each of its blocks. */
struct block {
	uint64_t stamp; /* stream + 1 when seen in the current stream */
	uint64_t first_ts, last_ts, accesses, tokens;
	uint64_t first_at, last_at; /* those accesses, as at() packs them */
	uint32_t depth;		    /* its position in its first request */
	bool has_child;		    /* a block follows it in some request */
};

/*
 * An access of a stream, packed so that a candidate can hold it until
 * the sequence is known, which needs every stream first: stream,
 * request and position of the block in the request.
 */
#define AT_STREAM_BITS 20
#define AT_REQ_BITS 28
#define AT_POS_BITS 16

static uint64_t
at(uint64_t s, uint64_t r, uint64_t j)
{
	if (s >> AT_STREAM_BITS || r >> AT_REQ_BITS || j >> AT_POS_BITS)
		mc_die(MC_EXIT_SOFTWARE, "trace too large to number its accesses");
	return s << (AT_REQ_BITS + AT_POS_BITS) | r << AT_POS_BITS | j;
}

/* A kept request of a stream, to be put in time order. */
struct event {
	uint64_t ts;
	uint32_t stream, req;
};

struct totals {
	uint64_t streams, bytes, kv, hidden, leased, soft_pinned;
};

/* Which tenant serves stream s: 4 turns in 10 chat, 3 batch, 2 search, 1 agent. */
static const unsigned tenant_turns[] = { 0, 1, 0, 2, 1, 0, 3, 1, 0, 2 };
static const char *const tenant_names[] = { "chat", "batch", "search", "agent" };

struct names {
	uint32_t tenant[4], kv, hidden, peer[2], dram;
};

static uint32_t
intern(struct mc_cand_view *v, const char *s)
{
	struct mc_err err = { 0 };
	int64_t id = mc_cand_name(v, s, strlen(s), &err);

	if (id < 0)
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
	return (uint32_t)id;
}

static void
add(struct mc_cand_view *v, const struct mc_cand *c, const char *key, size_t len)
{
	struct mc_err err = { 0 };

	if (mc_cand_add(v, c, key, len, &err) < 0)
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
}

/*
 * Tally one stream's requests into blk (reset by stamp). The stream's
 * clock is the trace's rotated by shift within its span, so that every
 * stream is busy up to the view's time.
 */
/* Stream s's clock for request r: the trace's, rotated by shift within its span. */
static uint64_t
stream_ts(size_t r, uint64_t shift, uint64_t span)
{
	return start + (reqs[r].ts - first_ts + shift) % (span + 1);
}

/* about 1 request in 10 is not part of stream s */
static bool
dropped(uint64_t s, size_t r)
{
	return mix(seed ^ (s << 32) ^ r) % 10 == 0;
}

/* The shift of stream s: the first runs on the trace's own clock. */
static uint64_t
stream_shift(uint64_t s, uint64_t span)
{
	return s == 0 ? 0 : mix(seed ^ s) % (span + 1);
}

static void
tally_stream(uint64_t s, uint64_t shift, uint64_t span, struct block *blk)
{
	for (size_t r = 0; r < nreqs; r++) {
		const struct request *q = &reqs[r];
		uint64_t ts = stream_ts(r, shift, span);

		if (dropped(s, r))
			continue;
		for (size_t j = 0; j < q->n; j++) {
			struct block *b = &blk[ids[q->first + j]];
			uint64_t done = (uint64_t)j * BLOCK_TOKENS;
			uint64_t tokens = q->input_length > done ? q->input_length - done : 1;

			if (tokens > BLOCK_TOKENS)
				tokens = BLOCK_TOKENS;
			if (b->stamp != s + 1)
				*b = (struct block){ .stamp = s + 1,
						     .first_ts = ts,
						     .last_ts = ts,
						     .first_at = at(s, r, j),
						     .last_at = at(s, r, j),
						     .depth = (uint32_t)j };
			b->has_child |= j + 1 < q->n;
			/* requests come in order, so only an earlier time moves the first */
			if (ts < b->first_ts) {
				b->first_ts = ts;
				b->first_at = at(s, r, j);
			}
			if (ts >= b->last_ts) {
				b->last_ts = ts;
				b->last_at = at(s, r, j);
			}
			b->accesses++;
			/* a prefix block is full whenever any request saw it full */
			if (tokens > b->tokens)
				b->tokens = tokens;
		}
	}
}

/* Append stream s's candidates to v, at most count in all. */
static void
emit_stream(struct mc_cand_view *v, const struct names *nm, uint64_t s, const struct block *blk,
	    uint64_t now, uint64_t span, struct totals *t)
{
	uint32_t tenant =
		nm->tenant[tenant_turns[s % (sizeof(tenant_turns) / sizeof(tenant_turns[0]))]];

	for (uint64_t id = 0; id <= max_id && v->n < count; id++) {
		const struct block *b = &blk[id];
		uint64_t h = mix(seed ^ (s << 40) ^ (id * 0x100000001b3ull));
		struct mc_cand c = { .version = 1 + h % 3, .cost = -1, .tenant = tenant };
		char key[32];
		int len;
		bool hidden = (h >> 8) % 8 == 0, second = (h >> 16) % 12 == 0;
		unsigned peer = (unsigned)((h >> 24) & 1);

		if (b->stamp != s + 1)
			continue;
		c.type = hidden ? nm->hidden : nm->kv;
		c.bytes = (hidden ? HIDDEN_BLOCK_BYTES : KV_BLOCK_BYTES) * b->tokens / BLOCK_TOKENS;
		c.tier = nm->dram;
		c.created = b->first_ts;
		c.last_access = b->last_ts + (h >> 32) % 1000;
		if (c.last_access > now)
			c.last_access = now;
		c.access_count = b->accesses;
		/* packed accesses for now, numbered by number_accesses() */
		c.created_seq = b->first_at;
		c.access_seq = b->last_at;
		c.lease_expiry = c.last_access + LEASE_TTL_MS;
		c.depth = b->depth;
		c.children = b->has_child;
		c.crf = (double)b->accesses *
			exp2(-10.0 * (double)(now - c.last_access) / (double)(span ? span : 1));
		c.flags = ((h >> 48) % 100 < 3 && b->depth > 0 ? MC_CAND_ORPHAN : 0) |
			  ((h >> 56) % 10 == 0 ? MC_CAND_PROBATION : 0);
		if (id == 0)
			c.soft_pin_deadline = now + SYSTEM_PIN_MS;
		else if ((h >> 40) % 100 < 2)
			c.soft_pin_deadline = c.last_access + SOFT_PIN_MS;
		len = snprintf(key, sizeof(key), "h%" PRIu64, s * (max_id + 1) + id);
		for (int copy = 0; copy < 1 + second && v->n < count; copy++) {
			c.peer = nm->peer[peer ^ (unsigned)copy];
			add(v, &c, key, (size_t)len);
			t->bytes += c.bytes;
			if (hidden)
				t->hidden++;
			else
				t->kv++;
			t->leased += c.lease_expiry > now;
			t->soft_pinned += c.soft_pin_deadline > now;
		}
	}
}

static int
event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return (x->req > y->req) - (x->req < y->req);
}

/*
 * Number every block access of streams 0..nstreams in time order, then
 * turn the packed accesses in the candidates into those numbers; the
 * view's seq is the last number.
 */
static void
number_accesses(struct mc_cand_view *v, uint64_t nstreams, uint64_t span)
{
	size_t nev = 0, cap;
	struct event *ev;
	uint64_t *base, seq = 0;

	if (nstreams > SIZE_MAX / sizeof(*ev) / nreqs)
		mc_die(MC_EXIT_SOFTWARE, "too many streams to number");
	cap = (size_t)nstreams * nreqs;
	ev = malloc(cap * sizeof(*ev));
	base = calloc(cap, sizeof(*base));
	if (ev == NULL || base == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory for %zu requests' accesses", cap);
	for (uint64_t s = 0; s < nstreams; s++) {
		uint64_t shift = stream_shift(s, span);

		for (size_t r = 0; r < nreqs; r++)
			if (!dropped(s, r))
				ev[nev++] = (struct event){ stream_ts(r, shift, span), (uint32_t)s,
							    (uint32_t)r };
	}
	qsort(ev, nev, sizeof(*ev), event_cmp);
	/* a request's block j is access base + j; numbers start at 1 */
	for (size_t i = 0; i < nev; i++) {
		base[(size_t)ev[i].stream * nreqs + ev[i].req] = seq + 1;
		seq += reqs[ev[i].req].n;
	}
	for (size_t i = 0; i < v->n; i++) {
		struct mc_cand *c = &v->c[i];
		uint64_t *f[2] = { &c->created_seq, &c->access_seq };

		for (int k = 0; k < 2; k++) {
			uint64_t p = *f[k];
			uint64_t s = p >> (AT_REQ_BITS + AT_POS_BITS);
			uint64_t r = (p >> AT_POS_BITS) & ((1ull << AT_REQ_BITS) - 1);
			uint64_t j = p & ((1ull << AT_POS_BITS) - 1);

			*f[k] = base[s * nreqs + r] + j;
		}
	}
	v->seq = seq;
	free(ev);
	free(base);
}

int
main(int argc, char **argv)
{
	static const struct mc_opt_spec spec = {
		.usage = "mc-candgen --trace FILE [--count N] [--seed S] [--start MS] [--json] "
			 "[-o FILE]",
		.summary = "write a synthetic candidate view derived from a request trace",
		.opts = opts,
	};
	struct mc_err err = { 0 };
	struct mc_cand_view v;
	struct names nm;
	struct totals t = { 0 };
	struct block *blk;
	uint64_t span, now;
	FILE *f = stdout;

	mc_log_init("mc-candgen", 0);
	if (mc_opt_parse(&spec, argc, argv) != argc)
		mc_die(MC_EXIT_USAGE, "unexpected argument; try 'mc-candgen --help'");
	if (trace_path == NULL)
		mc_die(MC_EXIT_USAGE, "--trace is required; try 'mc-candgen --help'");
	read_trace();
	span = last_ts - first_ts;
	/* the view is taken one second after the trace's last request */
	now = start + span + 1000;
	blk = calloc(max_id + 1, sizeof(*blk));
	if (blk == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory for %" PRIu64 " blocks", max_id + 1);

	mc_cand_view_init(&v);
	v.created = now;
	for (int i = 0; i < 4; i++)
		nm.tenant[i] = intern(&v, tenant_names[i]);
	nm.kv = intern(&v, "kv");
	nm.hidden = intern(&v, "hidden");
	nm.peer[0] = intern(&v, "peer-1");
	nm.peer[1] = intern(&v, "peer-2");
	nm.dram = intern(&v, mc_tier_name(MC_TIER_DRAM));
	while (v.n < count) {
		uint64_t s = t.streams++;
		uint64_t shift = stream_shift(s, span);
		size_t before = v.n;

		tally_stream(s, shift, span, blk);
		emit_stream(&v, &nm, s, blk, now, span, &t);
		if (v.n == before)
			mc_die(MC_EXIT_DATAERR, "%s: a stream gave no candidates", trace_path);
	}
	free(blk);
	number_accesses(&v, t.streams, span);

	if (strcmp(out, "-") != 0) {
		f = fopen(out, "w");
		if (f == NULL)
			mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", out, mc_strerror(errno));
	}
	if (mc_cand_write(f, &v, json, &err) < 0)
		mc_die(mc_status_exit_code(err.code), "%s", err.msg);
	if (f != stdout && fclose(f) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", out, mc_strerror(errno));
	fprintf(f == stdout ? stderr : stdout,
		"candgen count=%zu streams=%" PRIu64 " bytes=%" PRIu64 " kv=%" PRIu64
		" hidden=%" PRIu64 " leased=%" PRIu64 " soft_pinned=%" PRIu64 " created=%" PRIu64
		" seq=%" PRIu64 " trace_requests=%zu trace_blocks=%" PRIu64 "\n",
		v.n, t.streams, t.bytes, t.kv, t.hidden, t.leased, t.soft_pinned, now, v.seq, nreqs,
		max_id + 1);
	mc_cand_view_free(&v);
	free(reqs);
	free(ids);
	return MC_EXIT_OK;
}
