/*
 * mc-bench gen: synthetic request traces in the form trace.h reads, one
 * family of serving workload each, the same trace for the same seed.
 *
 * A request is a sequence of content blocks (512 tokens each): a shared
 * system prompt, a document, a turn of a conversation, a tool's output.
 * Its hash_ids name prefixes, not contents: the id of a block is the id
 * of (the id before it, its content), found in one table, so two
 * requests share an id exactly when they share everything up to and
 * including that block, as in the published traces.
 *
 * Families (see mc-bench(1)):
 *   chat    multi-turn conversations; each turn resends the whole
 *           conversation so far with a new message, so prefixes grow
 *   agent   tool loops under a few long system prompts; tool outputs
 *           drawn from a pool with a popular head repeat across tasks
 *   zipf    many users asking about documents of Zipf popularity
 *   scan    zipf, with one-off long documents mixed in
 *   phase   zipf whose documents change halfway through the trace
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/hash.h"
#include "mc/log.h"
#include "mc/tool.h"

#include "bench.h"

#define GEN_BLOCK_TOKENS 512
#define GEN_ROOT UINT64_MAX /* the parent of a request's first block */

/* A run of content blocks: content ids first .. first + n - 1. */
struct seg {
	uint64_t first;
	uint32_t n;
};

/* One prefix: (parent prefix, content block) -> its id. */
struct node {
	uint64_t parent, content, id;
};

struct zipf {
	double *cdf;
	size_t n;
};

struct gen {
	uint64_t rng;
	struct mc_htab chain;
	uint64_t next_id, next_content;
	uint64_t now_ms;
	/* the request being built: its content blocks */
	uint64_t *content;
	size_t n, cap;
	uint64_t *ids;
	size_t ids_cap;
	FILE *out;
};

/* ---- randomness: splitmix64, so a seed gives the same trace everywhere ---- */

static uint64_t
rnd(struct gen *g)
{
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t
between(struct gen *g, uint64_t lo, uint64_t hi)
{
	return lo + rnd(g) % (hi - lo + 1);
}

static double
unit(struct gen *g)
{
	return (double)(rnd(g) >> 11) / (double)(1ull << 53);
}

static int
zipf_init(struct zipf *z, size_t n, double s)
{
	double sum = 0;

	z->n = n;
	if (!(z->cdf = malloc(n * sizeof(*z->cdf))))
		return -1;
	for (size_t i = 0; i < n; i++)
		z->cdf[i] = (sum += 1.0 / pow((double)(i + 1), s));
	for (size_t i = 0; i < n; i++)
		z->cdf[i] /= sum;
	return 0;
}

/* A rank in [0, n): rank 0 the most popular. */
static size_t
zipf_draw(struct gen *g, const struct zipf *z)
{
	double u = unit(g);
	size_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- content and prefixes ---- */

/* n blocks of content nobody has sent before. */
static struct seg
fresh(struct gen *g, uint32_t n)
{
	struct seg s = { g->next_content, n };

	g->next_content += n;
	return s;
}

static int
push(struct gen *g, struct seg s)
{
	if (g->n + s.n > g->cap) {
		size_t cap = g->cap ? g->cap : 64;
		uint64_t *c;

		while (cap < g->n + s.n)
			cap *= 2;
		if (!(c = realloc(g->content, cap * sizeof(*c))))
			return -1;
		g->content = c;
		g->cap = cap;
	}
	for (uint32_t i = 0; i < s.n; i++)
		g->content[g->n++] = s.first + i;
	return 0;
}

static bool
node_eq(const void *entry, const void *key)
{
	const struct node *a = entry, *b = key;

	return a->parent == b->parent && a->content == b->content;
}

/* The id of the prefix (parent, content), made on first sight. */
static int
prefix_id(struct gen *g, uint64_t parent, uint64_t content, uint64_t *id)
{
	struct node key = { parent, content, 0 }, *n;
	uint64_t pair[2] = { parent, content };
	uint64_t h = mc_hash64(pair, sizeof(pair), 0x67656eull);

	if ((n = mc_htab_find(&g->chain, h, node_eq, &key)) != NULL) {
		*id = n->id;
		return 0;
	}
	if (!(n = malloc(sizeof(*n))))
		return -1;
	*n = (struct node){ parent, content, g->next_id++ };
	if (mc_htab_insert(&g->chain, h, n) != 0) {
		free(n);
		return -1;
	}
	*id = n->id;
	return 0;
}

/* Write the request built so far as one trace line, and start the next. */
static int
emit(struct gen *g, uint64_t output_tokens)
{
	uint64_t parent = GEN_ROOT;

	if (g->n > g->ids_cap) {
		uint64_t *ids = realloc(g->ids, g->n * sizeof(*ids));

		if (!ids)
			return -1;
		g->ids = ids;
		g->ids_cap = g->n;
	}
	for (size_t i = 0; i < g->n; i++) {
		if (prefix_id(g, parent, g->content[i], &g->ids[i]) < 0)
			return -1;
		parent = g->ids[i];
	}
	/* the last block is partly filled: the prompt ends somewhere inside it */
	fprintf(g->out,
		"{\"timestamp\": %llu, \"input_length\": %llu, \"output_length\": %llu, "
		"\"hash_ids\": [",
		(unsigned long long)g->now_ms,
		(unsigned long long)(g->n * GEN_BLOCK_TOKENS - between(g, 0, GEN_BLOCK_TOKENS - 1)),
		(unsigned long long)output_tokens);
	for (size_t i = 0; i < g->n; i++)
		fprintf(g->out, i ? ", %llu" : "%llu", (unsigned long long)g->ids[i]);
	fputs("]}\n", g->out);
	g->n = 0;
	/* arrivals about 50 a second */
	g->now_ms += between(g, 0, 40);
	return ferror(g->out) ? -1 : 0;
}

/* ---- the families ---- */

/* A conversation: its system prompt, what was said so far, turns left. */
struct chat {
	uint32_t prompt;
	struct seg *said;
	size_t nsaid, cap;
	uint32_t turns_left;
};

static void
chat_begin(struct gen *g, struct chat *c, const struct zipf *prompts)
{
	c->prompt = (uint32_t)zipf_draw(g, prompts);
	c->nsaid = 0;
	/* about six turns, geometric */
	c->turns_left = 1;
	while (c->turns_left < 40 && unit(g) < 5.0 / 6.0)
		c->turns_left++;
}

static int
chat_say(struct chat *c, struct seg s)
{
	if (c->nsaid == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct seg *n = realloc(c->said, cap * sizeof(*n));

		if (!n)
			return -1;
		c->said = n;
		c->cap = cap;
	}
	c->said[c->nsaid++] = s;
	return 0;
}

#define CHAT_PROMPTS 8
#define CHAT_ACTIVE 512

static int
gen_chat(struct gen *g, uint64_t requests)
{
	struct seg prompt[CHAT_PROMPTS];
	struct chat conv[CHAT_ACTIVE] = { 0 };
	struct zipf pz;
	int rc = -1;

	if (zipf_init(&pz, CHAT_PROMPTS, 1.0) < 0)
		return -1;
	for (int i = 0; i < CHAT_PROMPTS; i++)
		prompt[i] = fresh(g, (uint32_t)between(g, 1, 6));
	for (int i = 0; i < CHAT_ACTIVE; i++)
		chat_begin(g, &conv[i], &pz);
	for (uint64_t r = 0; r < requests; r++) {
		struct chat *c = &conv[between(g, 0, CHAT_ACTIVE - 1)];
		uint64_t out = between(g, 64, 1024);

		if (push(g, prompt[c->prompt]) < 0)
			goto out;
		for (size_t i = 0; i < c->nsaid; i++)
			if (push(g, c->said[i]) < 0)
				goto out;
		/* the user's new message, then the answer joins the conversation */
		struct seg msg = fresh(g, (uint32_t)between(g, 1, 3));

		if (push(g, msg) < 0 || emit(g, out) < 0 || chat_say(c, msg) < 0 ||
		    chat_say(c, fresh(g, (uint32_t)((out + GEN_BLOCK_TOKENS - 1) /
						    GEN_BLOCK_TOKENS))) < 0)
			goto out;
		if (--c->turns_left == 0)
			chat_begin(g, c, &pz);
	}
	rc = 0;
out:
	for (int i = 0; i < CHAT_ACTIVE; i++)
		free(conv[i].said);
	free(pz.cdf);
	return rc;
}

#define AGENT_PROMPTS 3
#define AGENT_TOOLS 200
#define AGENT_ACTIVE 128

static int
gen_agent(struct gen *g, uint64_t requests)
{
	struct seg prompt[AGENT_PROMPTS], tool[AGENT_TOOLS];
	struct chat task[AGENT_ACTIVE] = { 0 };
	struct zipf pz, tz;
	int rc = -1;

	if (zipf_init(&pz, AGENT_PROMPTS, 0.5) < 0)
		return -1;
	if (zipf_init(&tz, AGENT_TOOLS, 1.1) < 0) {
		free(pz.cdf);
		return -1;
	}
	for (int i = 0; i < AGENT_PROMPTS; i++)
		prompt[i] = fresh(g, (uint32_t)between(g, 12, 24));
	for (int i = 0; i < AGENT_TOOLS; i++)
		tool[i] = fresh(g, (uint32_t)between(g, 1, 4));
	for (int i = 0; i < AGENT_ACTIVE; i++) {
		chat_begin(g, &task[i], &pz);
		task[i].turns_left = (uint32_t)between(g, 4, 12);
	}
	for (uint64_t r = 0; r < requests; r++) {
		struct chat *t = &task[between(g, 0, AGENT_ACTIVE - 1)];

		/* a task starts with its description, then loops: a tool's output, a thought */
		if (t->nsaid == 0 && chat_say(t, fresh(g, (uint32_t)between(g, 1, 3))) < 0)
			goto out;
		if (push(g, prompt[t->prompt]) < 0)
			goto out;
		for (size_t i = 0; i < t->nsaid; i++)
			if (push(g, t->said[i]) < 0)
				goto out;
		if (emit(g, between(g, 32, 256)) < 0 || chat_say(t, tool[zipf_draw(g, &tz)]) < 0 ||
		    chat_say(t, fresh(g, 1)) < 0)
			goto out;
		if (--t->turns_left == 0) {
			chat_begin(g, t, &pz);
			t->turns_left = (uint32_t)between(g, 4, 12);
		}
	}
	rc = 0;
out:
	for (int i = 0; i < AGENT_ACTIVE; i++)
		free(task[i].said);
	free(pz.cdf);
	free(tz.cdf);
	return rc;
}

#define DOCS 5000

enum doc_mix { DOCS_ONLY, DOCS_AND_SCANS, DOCS_THEN_OTHERS };

/* zipf, scan and phase: a short shared prompt, a document, a question. */
static int
gen_docs(struct gen *g, uint64_t requests, enum doc_mix mix)
{
	size_t ndocs = mix == DOCS_THEN_OTHERS ? 2 * DOCS : DOCS;
	struct seg system = fresh(g, 1), *doc = malloc(ndocs * sizeof(*doc));
	struct zipf z;
	int rc = -1;

	if (!doc || zipf_init(&z, DOCS, 1.0) < 0) {
		free(doc);
		return -1;
	}
	for (size_t i = 0; i < ndocs; i++)
		doc[i] = fresh(g, (uint32_t)between(g, 2, 16));
	for (uint64_t r = 0; r < requests; r++) {
		struct seg d;

		if (mix == DOCS_AND_SCANS && unit(g) < 0.2)
			d = fresh(g, (uint32_t)between(g, 32, 96)); /* read once, never again */
		else
			d = doc[zipf_draw(g, &z) +
				(mix == DOCS_THEN_OTHERS && r >= requests / 2 ? DOCS : 0)];
		if (push(g, system) < 0 || push(g, d) < 0 || push(g, fresh(g, 1)) < 0 ||
		    emit(g, between(g, 64, 512)) < 0)
			goto out;
	}
	rc = 0;
out:
	free(doc);
	free(z.cdf);
	return rc;
}

static int
gen_zipf(struct gen *g, uint64_t requests)
{
	return gen_docs(g, requests, DOCS_ONLY);
}

static int
gen_scan(struct gen *g, uint64_t requests)
{
	return gen_docs(g, requests, DOCS_AND_SCANS);
}

static int
gen_phase(struct gen *g, uint64_t requests)
{
	return gen_docs(g, requests, DOCS_THEN_OTHERS);
}

/* The families, by name: the one list gen dispatches on and names in its error. */
static const struct family {
	const char *name;
	int (*run)(struct gen *g, uint64_t requests);
} families[] = {
	{ "chat", gen_chat }, { "agent", gen_agent }, { "zipf", gen_zipf },
	{ "scan", gen_scan }, { "phase", gen_phase }, { NULL, NULL },
};

int
bench_gen(const struct bench_opts *o, const char *family)
{
	struct gen g = { .rng = o->seed, .out = stdout };
	uint64_t requests = o->requests ? o->requests : 10000;
	const struct family *f = families;
	size_t cursor = 0;
	void *n;
	int rc;

	while (f->name != NULL && strcmp(f->name, family) != 0)
		f++;
	if (f->name == NULL) {
		fprintf(stderr, "mc-bench: unknown trace family '%s': one of", family);
		for (f = families; f->name != NULL; f++)
			fprintf(stderr, " %s", f->name);
		fputc('\n', stderr);
		return MC_EXIT_USAGE;
	}
	mc_htab_init(&g.chain);
	rc = f->run(&g, requests);
	if (rc == 0 && fflush(stdout) != 0)
		rc = -1;
	if (rc < 0)
		mc_complain("gen: %s", errno ? strerror(errno) : "out of memory");
	while ((n = mc_htab_next(&g.chain, &cursor)) != NULL)
		free(n);
	mc_htab_free(&g.chain);
	free(g.content);
	free(g.ids);
	return rc < 0 ? MC_EXIT_SOFTWARE : MC_EXIT_OK;
}
