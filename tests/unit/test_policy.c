/*
 * Unit tests for the eviction policy language (libmc/policy/policy.c): the
 * trees the examples and the header's sample parse into, the defaults,
 * every error with the line it names, loading files, and that a failed
 * parse leaves nothing allocated (run under build-san to see leaks).
 *
 * The example policies are read relative to the repository root: the
 * current directory under tests/run, else two levels above the binary
 * (build/tests/test_policy).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/policy.h"
#include "mc/proto.h"
#include "tap.h"

#define EXAMPLES "examples/policies/"

static struct mc_err err;

/* Parse text; the error message, or "" when it parsed (p then holds it). */
static const char *
parse(const char *text, struct mc_policy *p)
{
	memset(&err, 0, sizeof(err));
	if (mc_policy_parse(text, strlen(text), "test", p, &err) < 0)
		return err.msg;
	return "";
}

/* Parse text that must fail; the message (the policy is freed). */
static const char *
parse_fail(const char *text)
{
	struct mc_policy p;
	const char *msg = parse(text, &p);

	mc_policy_free(&p);
	return *msg != '\0' ? msg : "(parsed)";
}

static bool
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The error of text starts with want (its line) and contains also. */
static void
expect_error(const char *what, const char *text, const char *want, const char *also)
{
	const char *msg = parse_fail(text);

	TAP_OK(starts(msg, want) && (also == NULL || strstr(msg, also) != NULL), "error: %s", what);
	if (!starts(msg, want) || (also != NULL && strstr(msg, also) == NULL))
		printf("#   got '%s', want '%s'...%s%s\n", msg, want, also ? also : "",
		       also ? "..." : "");
}

static void
test_dims(void)
{
	static const char *const names[] = { "tenant", "type",	 "group", "peer",
					     "tier",   "domain", "prefix" };
	bool all = true;
	int i;

	for (i = 0; i < MC_DIM_COUNT; i++)
		all = all && strcmp(mc_dim_name(i), names[i]) == 0 &&
		      mc_dim_from_name(names[i], strlen(names[i])) == i;
	TAP_OK(all, "dimensions: every name maps to its enum and back");
	TAP_OK(mc_dim_from_name("tenants", 7) == -1 && mc_dim_from_name("ten", 3) == -1 &&
		       mc_dim_from_name("tenantX", 6) == MC_DIM_TENANT,
	       "dimensions: only the exact length matches");
	TAP_OK(strcmp(mc_dim_name(-1), "unknown") == 0 &&
		       strcmp(mc_dim_name(MC_DIM_COUNT), "unknown") == 0,
	       "dimensions: out of range is 'unknown'");
}

static bool
scope_is_blank(const struct mc_pscope *s)
{
	return s->weight == 1 && s->quota == 0 && s->lowerbound < 0 && !s->has_assign &&
	       s->nchildren == 0 && s->children == NULL && !s->has_fallback &&
	       s->fallback_ranker == NULL;
}

static void
test_defaults(void)
{
	struct mc_policy d, p;

	mc_policy_default(&d);
	TAP_OK(d.lowerbound == 1.0 && d.ranker == mc_ranker_find("lease") &&
		       d.root.ranker == d.ranker && d.lfu_half_life_ms == 0 &&
		       d.lfu_half_life_accesses == 0 && d.ncosts == 0 && d.costs == NULL &&
		       d.root.value == NULL && scope_is_blank(&d.root),
	       "default: lowerbound 100%%, evict lease, one global scope");

	TAP_OK(*parse("evict lease\n", &p) == '\0' && p.lowerbound == d.lowerbound &&
		       p.ranker == d.ranker && p.root.ranker == d.root.ranker &&
		       scope_is_blank(&p.root) && strcmp(p.name, "test") == 0,
	       "default: 'evict lease' parses into the default policy");
	mc_policy_free(&p);

	TAP_OK(*parse("", &p) == '\0' && p.ranker == d.ranker && p.root.ranker == NULL &&
		       p.lowerbound == 1.0 && scope_is_blank(&p.root),
	       "default: an empty text is the default (the root takes the default ranker)");
	mc_policy_free(&p);

	TAP_OK(*parse("\n   \n# only a comment\n  # indented comment\n\n", &p) == '\0' &&
		       p.ranker == d.ranker && scope_is_blank(&p.root),
	       "default: blank lines and comments are ignored, however indented");
	mc_policy_free(&p);

	TAP_OK(*parse("lowerbound 80%\n", &p) == '\0' && fabs(p.lowerbound - 0.8) < 1e-12 &&
		       p.root.lowerbound < 0,
	       "default: top-level lowerbound sets the policy default, not the root's own");
	mc_policy_free(&p);

	mc_policy_free(&p);
	TAP_OK(p.ranker == d.ranker && p.root.ranker == d.root.ranker && p.costs == NULL &&
		       scope_is_blank(&p.root),
	       "free: leaves the default policy behind and may be called again");
}

static const struct mc_pscope *
child(const struct mc_pscope *s, size_t i)
{
	static const struct mc_pscope none;

	return i < s->nchildren ? &s->children[i] : &none;
}

static bool
value_is(const struct mc_pscope *s, const char *v)
{
	return s->value != NULL && strcmp(s->value, v) == 0;
}

static void
test_single_ranker_example(void)
{
	struct mc_policy p;
	int rc = mc_policy_load(EXAMPLES "single-ranker.policy", &p, &err);

	TAP_OK(rc == 0, "single-ranker.policy: parses%s%s", rc ? ": " : "", rc ? err.msg : "");
	TAP_OK(p.ranker == mc_ranker_find("lru") && p.root.ranker == p.ranker &&
		       !p.root.has_assign && p.lowerbound == 1.0,
	       "single-ranker.policy: one global scope ranked by lru");
	TAP_OK(strcmp(p.name, "single-ranker.policy") == 0,
	       "single-ranker.policy: named after the file's base name");
	mc_policy_free(&p);
}

/* The shipped default: built in, and the same text as its file. */
static void
test_builtin_kv(void)
{
	struct mc_policy p, f;
	const struct mc_pscope *r = &p.root;
	FILE *fp = fopen(EXAMPLES "kv.policy", "rb");
	static char text[MC_POLICY_MAX_BYTES + 1];
	size_t n = fp != NULL ? fread(text, 1, sizeof(text) - 1, fp) : 0;
	int rc;

	if (fp != NULL)
		fclose(fp);
	text[n] = '\0';
	TAP_OK(n > 0 && n == strlen(mc_policy_builtin_text) &&
		       memcmp(text, mc_policy_builtin_text, n) == 0,
	       "built in: the text is examples/policies/kv.policy byte for byte (%zu bytes)", n);
	rc = mc_policy_builtin(&p, &err);
	TAP_OK(rc == 0, "built in: parses%s%s", rc ? ": " : "", rc ? err.msg : "");
	TAP_OK(strcmp(p.name, "kv.policy") == 0, "built in: named kv.policy");
	TAP_OK(p.ranker == mc_ranker_find("lease") && r->has_assign && r->dim == MC_DIM_TYPE &&
		       r->mode == MC_ASSIGN_USAGE && r->has_fallback && r->nchildren == 2 &&
		       value_is(child(r, 0), "kv") && child(r, 0)->ranker == mc_ranker_find("kv") &&
		       child(r, 1)->rest && child(r, 1)->ranker == NULL,
	       "built in: type kv by the kv ranker, every other type by lease, a fallback");
	rc = mc_policy_load(EXAMPLES "kv.policy", &f, &err);
	TAP_OK(rc == 0 && f.root.nchildren == p.root.nchildren && f.ranker == p.ranker,
	       "built in: the file parses to the same tree");
	mc_policy_free(&p);
	if (rc == 0)
		mc_policy_free(&f);
}

/* One tenant of tenant-type.policy: type by usage, hidden by cost, a fallback. */
static bool
tenant_shape(const struct mc_pscope *t, size_t ntypes)
{
	const struct mc_ranker *lru = mc_ranker_find("lru"), *cost = mc_ranker_find("cost");
	const struct mc_pscope *rest = child(t, ntypes - 1);

	return t->has_assign && t->dim == MC_DIM_TYPE && t->mode == MC_ASSIGN_USAGE &&
	       t->nchildren == ntypes && value_is(child(t, 0), "hidden") &&
	       child(t, 0)->ranker == cost && !child(t, 0)->rest && rest->rest &&
	       rest->ranker == lru && t->has_fallback && t->fallback_ranker == NULL &&
	       t->ranker == NULL;
}

static void
test_tenant_type_example(void)
{
	struct mc_policy p;
	const struct mc_pscope *r = &p.root;
	int rc = mc_policy_load(EXAMPLES "tenant-type.policy", &p, &err);

	TAP_OK(rc == 0, "tenant-type.policy: parses%s%s", rc ? ": " : "", rc ? err.msg : "");
	TAP_OK(p.lowerbound == 0.8 && p.ranker == mc_ranker_find("lease") && r->ranker == NULL,
	       "tenant-type.policy: lowerbound 80%%, default ranker lease, root ranks nothing");
	TAP_OK(p.ncosts == 2 && strcmp(p.costs[0].type, "hidden") == 0 && p.costs[0].cost == 5000 &&
		       !p.costs[0].by_bytes && strcmp(p.costs[1].type, "kv") == 0 &&
		       p.costs[1].cost == 0.001 && p.costs[1].by_bytes,
	       "tenant-type.policy: cost hidden 5000, cost kv bytes 0.001");
	TAP_OK(r->has_assign && r->dim == MC_DIM_TENANT && r->mode == MC_ASSIGN_WEIGHT &&
		       r->nchildren == 3 && r->has_fallback && r->fallback_ranker == NULL,
	       "tenant-type.policy: global scope assigns tenants by weight, global fallback");
	TAP_OK(value_is(child(r, 0), "chat") && child(r, 0)->weight == 3 &&
		       child(r, 0)->lowerbound == 0.5 && value_is(child(r, 1), "batch") &&
		       child(r, 1)->weight == 1 && child(r, 1)->lowerbound < 0 &&
		       child(r, 2)->rest && value_is(child(r, 2), "*"),
	       "tenant-type.policy: chat weight 3 lowerbound 50%%, batch, then *");
	TAP_OK(tenant_shape(child(r, 0), 3) && tenant_shape(child(r, 1), 3) &&
		       tenant_shape(child(r, 2), 2) && value_is(child(child(r, 0), 1), "kv") &&
		       child(child(r, 0), 1)->ranker == mc_ranker_find("lru"),
	       "tenant-type.policy: each tenant assigns types by usage, hidden by cost, "
	       "kv by lru, with a tenant fallback");
	TAP_OK(child(r, 0)->line == 24 && child(child(r, 0), 0)->line == 26,
	       "tenant-type.policy: scopes remember the line they were declared on");
	mc_policy_free(&p);
}

/* The sample in the top comment of mc/policy.h, indentation and all. */
static const char header_sample[] = "# comments run to the end of the line\n"
				    "lowerbound 80%            # default lowerbound\n"
				    "evict lease\n"
				    "cost hidden 5000\n"
				    "cost kv bytes 0.001\n"
				    "half-life 200k\n"
				    "half-life 10m\n"
				    "assign tenant by weight\n"
				    "  scope A weight 3 lowerbound 50%\n"
				    "    assign type by usage\n"
				    "      scope hidden\n"
				    "        evict cost\n"
				    "      scope *\n"
				    "        evict lru\n"
				    "    fallback\n"
				    "  scope * weight 1\n"
				    "fallback\n";

static void
test_half_life(void)
{
	struct mc_policy p;
	const char *msg;

	msg = parse("evict lfu\nhalf-life 200000\n", &p);
	TAP_OK(*msg == '\0' && p.lfu_half_life_accesses == 200000 && p.lfu_half_life_ms == 0,
	       "half-life: a bare number is a count of accesses %s", msg);
	mc_policy_free(&p);
	msg = parse("half-life 200k\nevict lfu\n", &p);
	TAP_OK(*msg == '\0' && p.lfu_half_life_accesses == 200000 && p.lfu_half_life_ms == 0,
	       "half-life: 200k is 200000 accesses %s", msg);
	mc_policy_free(&p);
	msg = parse("half-life 10m\n", &p);
	TAP_OK(*msg == '\0' && p.lfu_half_life_ms == 600000 && p.lfu_half_life_accesses == 0,
	       "half-life: a duration sets only the half-life of views without sequences %s", msg);
	mc_policy_free(&p);
	msg = parse("half-life 1500ms\nhalf-life 50k\n", &p);
	TAP_OK(*msg == '\0' && p.lfu_half_life_ms == 1500 && p.lfu_half_life_accesses == 50000,
	       "half-life: one count and one duration may both be given %s", msg);
	mc_policy_free(&p);
	msg = parse("evict lru\n", &p);
	TAP_OK(*msg == '\0' && p.lfu_half_life_ms == 0 && p.lfu_half_life_accesses == 0,
	       "half-life: none given leaves both to the ranker's defaults %s", msg);
	mc_policy_free(&p);
}

static void
test_header_sample(void)
{
	struct mc_policy p;
	const struct mc_pscope *a;
	const char *msg = parse(header_sample, &p);

	TAP_OK(*msg == '\0', "header sample: parses %s", msg);
	a = child(&p.root, 0);
	TAP_OK(p.lfu_half_life_ms == 600000 && p.lfu_half_life_accesses == 200000,
	       "header sample: half-life 200k is 200000 accesses, 10m is 600000 ms");
	TAP_OK(p.root.nchildren == 2 && value_is(a, "A") && a->nchildren == 2 &&
		       child(&p.root, 1)->rest && child(&p.root, 1)->ranker == NULL &&
		       !child(&p.root, 1)->has_assign,
	       "header sample: A with two types, then a plain * tenant");
	mc_policy_free(&p);
}

static void
test_shapes(void)
{
	struct mc_policy p;
	const char *msg;

	msg = parse("assign tenant by usage\n  scope a\n", &p);
	TAP_OK(*msg == '\0' && p.root.nchildren == 2 && value_is(child(&p.root, 0), "a") &&
		       child(&p.root, 1)->rest && value_is(child(&p.root, 1), "*") &&
		       child(&p.root, 1)->weight == 1 && child(&p.root, 1)->ranker == NULL &&
		       child(&p.root, 1)->line == 1,
	       "implicit *: an assign without 'scope *' ends with one, weight 1, default ranker");
	mc_policy_free(&p);

	msg = parse("assign type by weight\nfallback fifo\n", &p);
	TAP_OK(*msg == '\0' && p.root.nchildren == 1 && child(&p.root, 0)->rest &&
		       p.root.fallback_ranker == mc_ranker_find("fifo"),
	       "implicit *: an assign with no scope lines splits among every value; "
	       "fallback fifo");
	mc_policy_free(&p);

	msg = parse("fallback\nassign tier by usage\n", &p);
	TAP_OK(*msg == '\0' && p.root.has_fallback, "fallback may come before its assign");
	mc_policy_free(&p);

	msg = parse("assign prefix by usage\n"
		    "  scope \"sess 1/#x\"  # a prefix with a space and a hash\n"
		    "  scope \"q\\\"uote\\\\\"\n"
		    "  scope \"*\"\n"
		    "  scope plain#comment\n",
		    &p);
	TAP_OK(*msg == '\0' && value_is(child(&p.root, 0), "sess 1/#x") &&
		       value_is(child(&p.root, 1), "q\"uote\\") &&
		       value_is(child(&p.root, 2), "*") && !child(&p.root, 2)->rest &&
		       value_is(child(&p.root, 3), "plain") && child(&p.root, 4)->rest,
	       "quoted values: spaces, '#', escapes; a quoted \"*\" is the literal value %s", msg);
	mc_policy_free(&p);

	msg = parse("assign tenant by quota\n"
		    "  scope a quota 10GiB lowerbound 0.25\n"
		    "  scope b quota 0\n"
		    "    lowerbound 0%\n"
		    "    evict hyperbolic\n"
		    "  scope * lowerbound 100%\n",
		    &p);
	TAP_OK(*msg == '\0' && child(&p.root, 0)->quota == 10ULL << 30 &&
		       child(&p.root, 0)->lowerbound == 0.25 && child(&p.root, 1)->quota == 0 &&
		       child(&p.root, 1)->lowerbound == 0 &&
		       child(&p.root, 1)->ranker == mc_ranker_find("hyperbolic") &&
		       child(&p.root, 2)->lowerbound == 1 && p.root.mode == MC_ASSIGN_QUOTA,
	       "quota mode: sizes, fractions, lowerbound in a scope body %s", msg);
	mc_policy_free(&p);

	msg = parse("assign group by weight\r\n  scope g1 weight 0.5\r\n    evict lfu\r\n", &p);
	TAP_OK(*msg == '\0' && child(&p.root, 0)->weight == 0.5 &&
		       child(&p.root, 0)->ranker == mc_ranker_find("lfu"),
	       "CRLF line ends are accepted %s", msg);
	mc_policy_free(&p);

	msg = parse("assign domain by usage\n  scope a\n  scope b\nevict fifo\n", &p);
	TAP_OK(*msg == '\0' && p.ranker == mc_ranker_find("fifo") && p.root.ranker == NULL,
	       "top-level evict beside an assign sets only the default ranker");
	mc_policy_free(&p);

	msg = parse("assign peer by usage\n"
		    "      scope p1\n"
		    "         evict lru\n"
		    "      scope p2\n"
		    "evict cost\n",
		    &p);
	TAP_OK(*msg == '\0' && p.root.nchildren == 3, "any consistent indentation works %s", msg);
	mc_policy_free(&p);
}

/* n levels of tenant/type/... assigns, each with one named scope. */
static char *
nested(int n)
{
	size_t cap = 64 * (size_t)(n + 1) * (size_t)(n + 1), len = 0;
	char *s = malloc(cap);
	int i;

	for (i = 0; i < n; i++) {
		len += (size_t)snprintf(s + len, cap - len, "%*sassign tenant by usage\n", 4 * i,
					"");
		len += (size_t)snprintf(s + len, cap - len, "%*sscope t%d\n", 4 * i + 2, "", i);
	}
	snprintf(s + len, cap - len, "%*sevict lru\n", 4 * n, "");
	return s;
}

static void
test_depth(void)
{
	struct mc_policy p;
	const struct mc_pscope *s;
	char *text = nested(MC_POLICY_MAX_DEPTH);
	const char *msg = parse(text, &p);
	int depth = 0;

	for (s = &p.root; s->has_assign; s = child(s, 0))
		depth++;
	TAP_OK(*msg == '\0' && depth == MC_POLICY_MAX_DEPTH && s->ranker == mc_ranker_find("lru"),
	       "depth: %d levels of scopes parse %s", MC_POLICY_MAX_DEPTH, msg);
	mc_policy_free(&p);
	free(text);

	text = nested(MC_POLICY_MAX_DEPTH + 1);
	expect_error("depth: one level more is refused at the assign", text,
		     "line 17: ", "nested too deep");
	free(text);
}

static void
test_errors(void)
{
	char *big, name129[200];

	expect_error("tab in indentation names the line", "evict lru\n\n\tevict lru\n",
		     "line 3: tab character", NULL);
	expect_error("tab between words", "evict\tlru\n", "line 1: tab character", NULL);
	expect_error("unknown statement", "# x\nevicts lru\n",
		     "line 2: unknown statement 'evicts' (known: ", NULL);
	expect_error("unknown ranker lists the known ones", "lowerbound 1\n\nevict lruu\n",
		     "line 3: unknown ranker 'lruu' (known: lease, lru, fifo, lfu, hyperbolic, "
		     "cost, kv)",
		     NULL);
	expect_error("unknown fallback ranker", "assign type by usage\nfallback nope\n",
		     "line 2: unknown ranker 'nope'", NULL);
	expect_error("unknown dimension", "assign model by weight\n",
		     "line 1: unknown dimension 'model' (known: tenant, type,", NULL);
	expect_error("unknown mode", "assign tenant by share\n",
		     "line 1: unknown mode 'share' (known: weight, usage, quota)", NULL);
	expect_error("assign without 'by'", "assign tenant weight\n",
		     "line 1: expected 'assign DIMENSION by MODE'", NULL);
	expect_error("evict with two rankers", "evict lru fifo\n",
		     "line 1: expected 'evict RANKER'", NULL);
	expect_error("duplicate scope value",
		     "assign tenant by weight\n  scope a\n  scope b\n  scope a\n",
		     "line 4: duplicate scope 'a' under one assign (first at line 2)", NULL);
	expect_error("two * under one assign",
		     "assign tenant by weight\n  scope *\n  scope b\n  scope *\n",
		     "line 4: second 'scope *' under one assign (first at line 2)", NULL);
	expect_error("scope at the top level without an assign", "evict lru\nscope a\n",
		     "line 2: scope 'a' without an assign above it", NULL);
	expect_error("scope nested in a scope body without an assign",
		     "assign tenant by weight\n  scope a\n    scope b\n",
		     "line 3: scope 'b' without an assign above it", NULL);
	expect_error("scope not indented under its assign", "assign tenant by weight\nscope a\n",
		     "line 2: scope 'a' is not indented under its assign (line 1)", NULL);
	expect_error("evict then assign in one scope",
		     "assign tenant by weight\n  scope a\n    evict lru\n"
		     "    assign type by usage\n",
		     "line 4: evict and assign in one scope (evict at line 3)", NULL);
	expect_error("assign then evict in one scope",
		     "assign tenant by weight\n  scope a\n    assign type by usage\n"
		     "    evict lru\n",
		     "line 4: evict and assign in one scope (assign at line 3)", NULL);
	expect_error("two assigns at the top level",
		     "assign tenant by weight\nassign type by weight\n",
		     "line 2: second assign in one scope (first at line 1)", NULL);
	expect_error("two assigns in a scope",
		     "assign tenant by weight\n  scope a\n    assign type by usage\n"
		     "      scope x\n    assign peer by usage\n",
		     "line 5: second assign in one scope (first at line 3)", NULL);
	expect_error("two evicts in one scope", "evict lru\nevict fifo\n",
		     "line 2: second evict in one scope (first at line 1)", NULL);
	expect_error("top-level fallback without an assign", "evict lru\nfallback\n",
		     "line 2: fallback without an assign in its scope", NULL);
	expect_error("scope fallback without an assign",
		     "assign tenant by weight\n  scope a\n    fallback\n  scope b\n",
		     "line 3: fallback without an assign in its scope", NULL);
	expect_error("two fallbacks", "assign tenant by weight\nfallback\nfallback lru\n",
		     "line 3: second fallback in one scope (first at line 2)", NULL);
	expect_error("fallback with two rankers", "assign tenant by weight\nfallback lru fifo\n",
		     "line 2: expected 'fallback [RANKER]'", NULL);
	expect_error("weight not a number", "assign tenant by weight\n  scope a weight heavy\n",
		     "line 2: bad weight 'heavy': not a number", NULL);
	expect_error("weight 0", "assign tenant by weight\n  scope a weight 0\n",
		     "line 2: bad weight '0': must be greater than 0", NULL);
	expect_error("weight negative", "assign tenant by weight\n  scope a weight -2\n",
		     "line 2: bad weight '-2': must be greater than 0", NULL);
	expect_error("weight under usage", "assign tenant by usage\n  scope a weight 2\n",
		     "line 2: weight only applies under 'assign ... by weight' (this assign is "
		     "by usage)",
		     NULL);
	expect_error("quota under weight", "assign tenant by weight\n  scope a quota 1GiB\n",
		     "line 2: quota only applies under 'assign ... by quota' (this assign is "
		     "by weight)",
		     NULL);
	expect_error("bad quota size", "assign tenant by quota\n  scope a quota 10X\n",
		     "line 2: bad quota '10X': unknown unit 'X'", NULL);
	expect_error("percent over 100", "lowerbound 150%\n",
		     "line 1: bad lowerbound '150%': must be between 0% and 100%", NULL);
	expect_error("fraction over 1", "assign tenant by weight\n  scope a lowerbound 1.5\n",
		     "line 2: bad lowerbound '1.5': must be between", NULL);
	expect_error("negative fraction", "lowerbound -0.1\n", "line 1: bad lowerbound '-0.1'",
		     NULL);
	expect_error("lowerbound not a number", "lowerbound most\n",
		     "line 1: bad lowerbound 'most': not a number", NULL);
	expect_error("lowerbound bare percent sign", "lowerbound %\n",
		     "line 1: bad lowerbound '%': not a number", NULL);
	expect_error("lowerbound twice at the top", "lowerbound 1\nlowerbound 0.5\n",
		     "line 2: second lowerbound for one scope (first at line 1)", NULL);
	expect_error("lowerbound on the scope line and in its body",
		     "assign tenant by weight\n  scope a lowerbound 50%\n    lowerbound 60%\n",
		     "line 3: second lowerbound for one scope (first at line 2)", NULL);
	expect_error("option given twice", "assign tenant by weight\n  scope a weight 1 weight 2\n",
		     "line 2: weight given twice", NULL);
	expect_error("unknown scope option", "assign tenant by weight\n  scope a size 3\n",
		     "line 2: unknown scope option 'size' (known: weight, quota, lowerbound)",
		     NULL);
	expect_error("scope option without a value", "assign tenant by weight\n  scope a weight\n",
		     "line 2: scope option 'weight' without a value", NULL);
	expect_error("scope without a value", "assign tenant by weight\n  scope\n",
		     "line 2: expected 'scope VALUE", NULL);
	expect_error("bad cost number", "cost hidden lots\n", "line 1: bad cost 'lots'", NULL);
	expect_error("negative cost", "cost hidden -1\n",
		     "line 1: bad cost '-1': must not be negative", NULL);
	expect_error("cost with a bad form", "cost hidden per 3\n",
		     "line 1: expected 'cost TYPE NUMBER' or 'cost TYPE bytes NUMBER'", NULL);
	expect_error("cost for one type twice", "cost kv 1\ncost hidden 2\ncost kv bytes 3\n",
		     "line 3: second cost for type 'kv'", NULL);
	expect_error("cost inside a scope", "assign tenant by weight\n  scope a\n    cost kv 1\n",
		     "line 3: cost only at the top level", NULL);
	expect_error("half-life inside a scope",
		     "assign tenant by weight\n  scope a\n    half-life 1m\n",
		     "line 3: half-life only at the top level", NULL);
	expect_error("bad half-life", "half-life soon\n", "line 1: bad half-life 'soon'", NULL);
	expect_error("zero half-life", "half-life 0s\n",
		     "line 1: bad half-life '0s': must be greater than 0", NULL);
	expect_error("half-life twice", "half-life 1m\nhalf-life 2m\n",
		     "line 2: second half-life (first at line 1)", NULL);
	expect_error("zero half-life in accesses", "evict lfu\n\nhalf-life 0\n",
		     "line 3: bad half-life '0': must be greater than 0", NULL);
	expect_error("zero thousand accesses", "half-life 0k\n",
		     "line 1: bad half-life '0k': must be greater than 0", NULL);
	expect_error("half-life neither a count nor a duration", "evict lfu\nhalf-life lots\n",
		     "line 2: bad half-life 'lots': not a count of accesses (200000, 200k) or a "
		     "duration (10m)",
		     NULL);
	expect_error("fraction of an access", "half-life 1.5\n",
		     "line 1: bad half-life '1.5': a count of accesses is a whole number", NULL);
	expect_error("accesses over 64 bits", "half-life 18446744073709552k\n",
		     "line 1: bad half-life '18446744073709552k': too large", NULL);
	expect_error("K is not a count suffix", "half-life 200K\n",
		     "line 1: bad half-life '200K': not a count of accesses", NULL);
	expect_error("half-life in accesses twice", "half-life 200k\nevict lfu\nhalf-life 300000\n",
		     "line 3: second half-life (first at line 1)", NULL);
	expect_error("half-life without a value", "half-life\n",
		     "line 1: expected 'half-life ACCESSES' or 'half-life DURATION'", NULL);
	expect_error("first line indented", "  evict lru\n",
		     "line 1: indented with nothing to nest under (the top level starts in the "
		     "first column)",
		     NULL);
	expect_error("deeper line after a statement that opens nothing", "evict lru\n  evict lru\n",
		     "line 2: indented deeper than the line before, with nothing to nest under it",
		     NULL);
	expect_error("dedent to a level no block has",
		     "assign tenant by weight\n    scope a\n  scope b\n",
		     "line 3: inconsistent indentation: 2 spaces matches no enclosing block", NULL);
	expect_error("dedent out of a scope body to a level no block has",
		     "assign tenant by weight\n  scope a\n      evict lru\n    evict fifo\n",
		     "line 4: inconsistent indentation", NULL);
	expect_error("a statement other than scope under an assign",
		     "assign tenant by weight\n  evict lru\n",
		     "line 2: 'evict' under an assign (line 1): only scope lines go there", NULL);
	expect_error("unterminated quote", "assign prefix by usage\n  scope \"abc\n",
		     "line 2: unterminated quoted word", NULL);
	expect_error("bad escape", "assign prefix by usage\n  scope \"a\\nb\"\n",
		     "line 2: bad escape in a quoted word", NULL);
	expect_error("text glued to a quoted word", "assign prefix by usage\n  scope \"a\"b\n",
		     "line 2: a quoted word must end at a space", NULL);
	expect_error("quote inside a bare word", "assign prefix by usage\n  scope a\"b\"\n",
		     "line 2: a quote inside a word", NULL);
	expect_error("control character", "evict lru\x01\n", "line 1: control character 0x01",
		     NULL);
	expect_error("empty prefix", "assign prefix by usage\n  scope \"\"\n",
		     "line 2: bad prefix: 1 to 4096 bytes", NULL);
	expect_error("tenant value with a space", "assign tenant by usage\n  scope \"two words\"\n",
		     "line 2: bad tenant 'two words': printable ASCII without spaces", NULL);
	expect_error("type value that is not ASCII", "assign type by usage\n  scope caf\xc3\xa9\n",
		     "line 2: bad type 'caf?"
		     "?'",
		     NULL);
	memset(name129, 'n', sizeof(name129));
	snprintf(name129, sizeof(name129), "assign tier by usage\n  scope %.*s\n", MC_NAME_MAX + 1,
		 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
		 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn");
	expect_error("tier value over MC_NAME_MAX bytes", name129, "line 2: bad tier 'nnn",
		     "1 to 128 bytes");
	expect_error("too many words", "evict a b c d e f g h i j k l m n o p q\n",
		     "line 1: more than 16 words", NULL);

	{
		static const char text[] = "evict lru\n# a\0b\nevict fifo\n";
		struct mc_policy p;
		int rc = mc_policy_parse(text, sizeof(text) - 1, "nul", &p, &err);

		TAP_OK(rc < 0 && strcmp(err.msg, "line 2: NUL byte") == 0,
		       "error: a NUL byte names its line, even in a comment (%s)", err.msg);
		mc_policy_free(&p);
	}
	{
		struct mc_policy p;
		size_t n = MC_POLICY_MAX_BYTES + 1;
		int rc;

		big = malloc(n);
		memset(big, '\n', n);
		rc = mc_policy_parse(big, n, "big", &p, &err);
		TAP_OK(rc < 0 && err.code == MC_ERR_TOO_LARGE && strstr(err.msg, "over the limit"),
		       "error: a text over MC_POLICY_MAX_BYTES is refused (%s)", err.msg);
		rc = mc_policy_parse(big, n - 1, "big", &p, &err);
		TAP_OK(rc == 0, "a text of exactly MC_POLICY_MAX_BYTES is accepted");
		mc_policy_free(&p);
		free(big);
	}
}

/*
 * A failed parse after much was built: the tree, costs and hash tables
 * must all be freed (LeakSanitizer in build-san says so), and p is left
 * as the default policy.
 */
static void
test_failure_frees(void)
{
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	struct mc_policy p;
	int i, rc;

	len += (size_t)snprintf(text + len, cap - len,
				"cost kv 1\ncost hidden bytes 2\nassign tenant by weight\n");
	for (i = 0; i < 100; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"  scope t%d weight 2\n    assign type by usage\n"
					"      scope kv\n        evict lru\n    fallback\n",
					i);
	snprintf(text + len, cap - len, "  scope t0\n");
	rc = mc_policy_parse(text, strlen(text), "x", &p, &err);
	TAP_OK(rc < 0 && strstr(err.msg, "duplicate scope 't0'") != NULL,
	       "failure: the last line of a large policy fails (%s)", err.msg);
	TAP_OK(p.root.nchildren == 0 && p.costs == NULL && p.ranker == mc_ranker_find("lease"),
	       "failure: p is left as the default policy");
	mc_policy_free(&p);

	/* fails while a deep block is open, in the close-time checks */
	snprintf(text, cap,
		 "cost kv 1\nassign tenant by weight\n  scope a\n"
		 "    assign type by usage\n      scope b\n        fallback\n");
	rc = mc_policy_parse(text, strlen(text), "x", &p, &err);
	TAP_OK(rc < 0 && strcmp(err.msg, "line 6: fallback without an assign in its scope") == 0,
	       "failure: at the end of the text, with blocks open (%s)", err.msg);
	mc_policy_free(&p);
	free(text);
}

/* Many scopes under one assign: duplicates are found in linear time. */
static void
test_many_scopes(void)
{
	size_t cap = MC_POLICY_MAX_BYTES, len = 0;
	char *text = malloc(cap);
	struct mc_policy p;
	int i, n = 60000;

	len += (size_t)snprintf(text + len, cap - len, "assign tenant by usage\n");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, " scope t%d\n", i);
	TAP_OK(mc_policy_parse(text, len, "many", &p, &err) == 0 &&
		       p.root.nchildren == (size_t)n + 1 &&
		       value_is(child(&p.root, n - 1), "t59999"),
	       "%d scopes under one assign parse (%zu bytes)", n, len);
	mc_policy_free(&p);
	free(text);
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void
test_load(void)
{
	char dir[] = "/tmp/mc-test-policy-XXXXXX", path[256];
	struct mc_policy p;
	FILE *f;
	int rc;

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/bad.policy", dir);
	write_file(path, "# a policy\n\nevict lruu\n");
	rc = mc_policy_load(path, &p, &err);
	TAP_OK(rc < 0 && starts(err.msg, path) &&
		       strstr(err.msg, ".policy: line 3: unknown ranker 'lruu'") != NULL,
	       "load: the error starts with the file name, then the line (%s)", err.msg);
	mc_policy_free(&p);

	snprintf(path, sizeof(path), "%s/missing.policy", dir);
	rc = mc_policy_load(path, &p, &err);
	TAP_OK(rc < 0 && err.code == MC_ERR_SYSTEM && strstr(err.msg, "cannot open '") &&
		       strstr(err.msg, "no such file or directory"),
	       "load: a missing file says so (%s)", err.msg);
	mc_policy_free(&p);

	rc = mc_policy_load(dir, &p, &err);
	TAP_OK(rc < 0 && strstr(err.msg, "cannot read '") && strstr(err.msg, "is a directory"),
	       "load: a directory cannot be read (%s)", err.msg);
	mc_policy_free(&p);

	snprintf(path, sizeof(path), "%s/big.policy", dir);
	f = fopen(path, "w");
	for (rc = 0; f != NULL && rc <= (int)MC_POLICY_MAX_BYTES / 64; rc++)
		fprintf(f, "# %61s\n", "a comment line of exactly sixty-four bytes");
	if (f != NULL)
		fclose(f);
	rc = mc_policy_load(path, &p, &err);
	TAP_OK(rc < 0 && err.code == MC_ERR_TOO_LARGE && strstr(err.msg, "big.policy: larger"),
	       "load: a file over MC_POLICY_MAX_BYTES is refused (%s)", err.msg);
	mc_policy_free(&p);
	unlink(path);

	snprintf(path, sizeof(path), "%s/ok.policy", dir);
	write_file(path, "assign tenant by weight\n  scope a\n");
	rc = mc_policy_load(path, &p, &err);
	TAP_OK(rc == 0 && strcmp(p.name, "ok.policy") == 0 && p.root.nchildren == 2,
	       "load: a good file parses and is named by its base name");
	mc_policy_free(&p);
	rc = mc_policy_load(path, &p, &err);
	TAP_OK(rc == 0 && p.root.nchildren == 2, "load: a freed policy can be loaded into again");
	mc_policy_free(&p);

	unlink(path);
	snprintf(path, sizeof(path), "%s/bad.policy", dir);
	unlink(path);
	rmdir(dir);
}

/* Move to the repository root when started from elsewhere. */
static void
find_root(const char *argv0)
{
	char dir[4096];
	const char *slash = strrchr(argv0, '/');

	if (access(EXAMPLES "single-ranker.policy", R_OK) == 0 || slash == NULL)
		return;
	snprintf(dir, sizeof(dir), "%.*s/../..", (int)(slash - argv0), argv0);
	if (chdir(dir) != 0)
		perror(dir);
}

int
main(int argc, char **argv)
{
	(void)argc;
	find_root(argv[0]);
	test_dims();
	test_defaults();
	test_single_ranker_example();
	test_tenant_type_example();
	test_builtin_kv();
	test_header_sample();
	test_half_life();
	test_shapes();
	test_depth();
	test_errors();
	test_failure_frees();
	test_many_scopes();
	test_load();
	return tap_done();
}
