/*
 * Unit tests for the planner (libmc/policy/planner.c): one group per
 * principle of the hierarchical eviction seed (Assign before Evict,
 * specific scopes first, Evict inside its scope, fallback by pressure),
 * the safety of leased and soft-pinned copies, determinism across streams
 * and name interning, and the scope paths (containment, escapes, "-"
 * values). Policies are written as text and parsed with mc_policy_parse.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/planner.h"
#include "cand_util.h"
#include "tap.h"

#define NOW 1000000000000ULL /* planning time, ms */
#define KIB 1024ULL

/* ---- building views, policies and plans ---- */

/* What a test says about one candidate; zeros are "expired", "none". */
struct spec {
	const char *tenant, *type, *group, *key;
	uint64_t bytes;
	uint64_t age_ms;	/* last access and lease expiry this long before NOW */
	uint64_t lease_left_ms; /* > 0: lease still active for this long */
	uint64_t pin_left_ms;	/* > 0: soft pin active for this long */
};

static void
add(struct mc_cand_view *v, const struct spec *s)
{
	struct mc_cand c;
	struct mc_err err;

	memset(&c, 0, sizeof(c));
	c.cost = -1;
	c.version = 1;
	c.bytes = s->bytes;
	c.created = NOW - s->age_ms - 1000;
	c.last_access = NOW - s->age_ms;
	c.lease_expiry = s->lease_left_ms ? NOW + s->lease_left_ms : NOW - s->age_ms;
	c.soft_pin_deadline = s->pin_left_ms ? NOW + s->pin_left_ms : 0;
	c.tenant = name(v, s->tenant);
	c.type = name(v, s->type ? s->type : "kv");
	c.group = s->group ? name(v, s->group) : MC_CAND_NO_NAME;
	c.peer = name(v, "peer-1");
	c.tier = name(v, "dram");
	if (mc_cand_add(v, &c, s->key, strlen(s->key), &err) < 0) {
		fprintf(stderr, "cannot add '%s': %s\n", s->key, err.msg);
		exit(1);
	}
}

/* n candidates of one tenant and type, bytes each, ages from age0 up. */
static void
add_many(struct mc_cand_view *v, const char *tenant, const char *type, size_t n, uint64_t bytes,
	 uint64_t age0)
{
	for (size_t i = 0; i < n; i++) {
		char key[64];

		snprintf(key, sizeof(key), "%s-%s-%zu", tenant, type, i);
		add(v, &(struct spec){ .tenant = tenant,
				       .type = type,
				       .key = key,
				       .bytes = bytes,
				       .age_ms = age0 + i });
	}
}

static void
policy(struct mc_policy *p, const char *text)
{
	struct mc_err err;

	if (mc_policy_parse(text, strlen(text), "test.policy", p, &err) < 0) {
		fprintf(stderr, "cannot parse the test policy: %s\n%s", err.msg, text);
		exit(1);
	}
}

/* Plan v (moved into out) under text; explain into buf when not NULL. */
static int
plan_text(const char *text, struct mc_cand_view *v, uint64_t target, bool second,
	  struct mc_plan *out, char **explain)
{
	struct mc_plan_params pp = { .target = target,
				     .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND,
				     .soft_pinned_pass = second,
				     .now = NOW };
	struct mc_policy pol;
	struct mc_err err;
	size_t len;
	FILE *f = NULL;
	int rc;

	policy(&pol, text);
	if (explain)
		f = open_memstream(explain, &len);
	rc = mc_planner_run(&pol, v, &pp, out, f, &err);
	if (f)
		fclose(f);
	if (rc < 0)
		printf("# planner: %s\n", err.msg);
	mc_policy_free(&pol);
	return rc;
}

static const struct mc_stage *
stage(const struct mc_plan *p, int kind, const char *scope)
{
	for (size_t i = 0; i < p->nstages; i++)
		if (p->stages[i].kind == kind && strcmp(p->stages[i].scope, scope) == 0)
			return &p->stages[i];
	return NULL;
}

static uint64_t
stage_target(const struct mc_plan *p, const char *scope)
{
	const struct mc_stage *s = stage(p, MC_STAGE_EVICT, scope);

	return s ? s->target : 0;
}

static uint64_t
victim_bytes(const struct mc_plan *p, const struct mc_stage *s)
{
	uint64_t sum = 0;

	for (size_t i = 0; s && i < s->nvictims; i++)
		sum += p->view.c[s->victims[i]].bytes;
	return sum;
}

static const char *
tenant_of(const struct mc_plan *p, uint32_t i)
{
	return mc_cand_name_str(&p->view, p->view.c[i].tenant);
}

/* "evict:tenant=A/type=kv fallback:tenant=A ..." */
static const char *
stage_list(const struct mc_plan *p)
{
	static char buf[2048];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->nstages && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s:%s", i ? " " : "",
					p->stages[i].kind == MC_STAGE_EVICT ? "evict" : "fallback",
					p->stages[i].scope);
	return buf;
}

/*
 * Whether candidate i lies in scope path: each "dim=value" component
 * compared with the candidate's own name (the empty name is "-"; '%'
 * escapes decoded). Prefix components compare the key's start.
 */
static bool
cand_in_path(const struct mc_plan *p, uint32_t i, const char *path)
{
	const struct mc_cand *c = &p->view.c[i];
	char comp[MC_SCOPE_MAX], val[MC_SCOPE_MAX];

	while (*path) {
		size_t n = strcspn(path, "/"), vl = 0;
		const char *eq, *mine;
		uint32_t id;

		memcpy(comp, path, n);
		comp[n] = '\0';
		path += n + (path[n] == '/');
		eq = strchr(comp, '=');
		if (eq == NULL)
			return false;
		for (const char *s = eq + 1; *s; s++) {
			unsigned x;

			if (*s == '%' && sscanf(s + 1, "%2x", &x) == 1) {
				val[vl++] = (char)x;
				s += 2;
			} else {
				val[vl++] = *s;
			}
		}
		val[vl] = '\0';
		if (strncmp(comp, "prefix=", 7) == 0) {
			if (strcmp(val, "*") != 0 &&
			    (c->key_len < vl || memcmp(mc_cand_key(&p->view, c), val, vl) != 0))
				return false;
			continue;
		}
		if (strncmp(comp, "tenant=", 7) == 0)
			id = c->tenant;
		else if (strncmp(comp, "type=", 5) == 0)
			id = c->type;
		else if (strncmp(comp, "group=", 6) == 0)
			id = c->group;
		else
			return false;
		mine = mc_cand_name_str(&p->view, id);
		if (strcmp(*mine ? mine : "-", val) != 0)
			return false;
	}
	return true;
}

/* ---- 1. responsibility assigned before victims ---- */

static void
test_assign_weight(void)
{
	struct mc_cand_view v;
	struct mc_plan p;

	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 100, KIB, 0);
	add_many(&v, "B", "kv", 100, KIB, 0);
	add_many(&v, "C", "kv", 100, KIB, 0);
	TAP_OK(plan_text("assign tenant by weight\n"
			 "  scope A weight 3\n"
			 "  scope B weight 1\n"
			 "  scope C weight 1\n",
			 &v, 50 * KIB, false, &p, NULL) == 0,
	       "assign by weight: plans");
	TAP_OK(stage_target(&p, "tenant=A") == 30 * KIB &&
		       stage_target(&p, "tenant=B") == 10 * KIB &&
		       stage_target(&p, "tenant=C") == 10 * KIB,
	       "assign by weight: 3:1:1 of 50KiB is 30, 10, 10 KiB");
	TAP_OK(victim_bytes(&p, stage(&p, MC_STAGE_EVICT, "tenant=A")) == 30 * KIB,
	       "assign by weight: a leaf takes victims worth its target");
	mc_plan_free(&p);

	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 100, 1, 0);
	add_many(&v, "B", "kv", 100, 1, 0);
	add_many(&v, "C", "kv", 100, 1, 0);
	plan_text("assign tenant by weight\n", &v, 100, false, &p, NULL);
	TAP_OK(stage_target(&p, "tenant=A") == 34 && stage_target(&p, "tenant=B") == 33 &&
		       stage_target(&p, "tenant=C") == 33,
	       "assign by weight: 100 bytes over 3 is 34, 33, 33, the remainder to the first");
	mc_plan_free(&p);
}

static void
test_assign_capped(void)
{
	struct mc_cand_view v;
	struct mc_plan p;

	/* A has 100KiB but only 5 KiB it can give: the rest is leased */
	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 5, KIB, 0);
	for (int i = 0; i < 95; i++) {
		char key[32];

		snprintf(key, sizeof(key), "A-leased-%d", i);
		add(&v, &(struct spec){
				.tenant = "A", .key = key, .bytes = KIB, .lease_left_ms = 60000 });
	}
	add_many(&v, "B", "kv", 100, KIB, 0);
	add_many(&v, "C", "kv", 100, KIB, 0);
	plan_text("assign tenant by weight\n"
		  "  scope A weight 2\n"
		  "  scope B weight 1\n"
		  "  scope C weight 1\n",
		  &v, 60 * KIB, false, &p, NULL);
	TAP_OK(stage_target(&p, "tenant=A") == 5 * KIB,
	       "water-filling: a child is capped at its eligible bytes");
	TAP_OK(stage_target(&p, "tenant=B") == 55 * KIB / 2 &&
		       stage_target(&p, "tenant=C") == 55 * KIB / 2,
	       "water-filling: the excess goes to the others by weight");
	mc_plan_free(&p);

	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 10, KIB, 0);
	add_many(&v, "B", "kv", 10, KIB, 0);
	plan_text("assign tenant by weight\n", &v, 100 * KIB, false, &p, NULL);
	TAP_OK(stage_target(&p, "tenant=A") == 10 * KIB && stage_target(&p, "tenant=B") == 10 * KIB,
	       "water-filling: a target over everything eligible takes everything");
	mc_plan_free(&p);
}

static void
test_assign_usage_quota(void)
{
	struct mc_cand_view v;
	struct mc_plan p;

	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 30, KIB, 0);
	add_many(&v, "B", "kv", 10, KIB, 0);
	plan_text("assign tenant by usage\n", &v, 8 * KIB, false, &p, NULL);
	TAP_OK(stage_target(&p, "tenant=A") == 6 * KIB && stage_target(&p, "tenant=B") == 2 * KIB,
	       "assign by usage: 30:10 of 8KiB is 6 and 2 KiB");
	mc_plan_free(&p);

	/* A owes 3000 over its quota, B nothing; the other 1000 by usage */
	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 50, 100, 0);
	add_many(&v, "B", "kv", 10, 100, 0);
	plan_text("assign tenant by quota\n"
		  "  scope A quota 2000\n"
		  "  scope B quota 2000\n",
		  &v, 4000, false, &p, NULL);
	TAP_OK(stage_target(&p, "tenant=A") == 3000 + 834 && stage_target(&p, "tenant=B") == 166,
	       "assign by quota: debts first (3000, 0), the rest by usage (834, 166)");
	mc_plan_free(&p);

	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 50, 100, 0);
	add_many(&v, "B", "kv", 40, 100, 0);
	add_many(&v, "C", "kv", 10, 100, 0);
	plan_text("assign tenant by quota\n"
		  "  scope A quota 2000\n"
		  "  scope B quota 3000\n"
		  "  scope C quota 2000\n",
		  &v, 1000, false, &p, NULL);
	TAP_OK(stage_target(&p, "tenant=A") == 750 && stage_target(&p, "tenant=B") == 250 &&
		       stage_target(&p, "tenant=C") == 0,
	       "assign by quota: debts over the target split by debt (3000:1000), none from C");
	mc_plan_free(&p);
}

static void
test_assign_lowerbound(void)
{
	struct mc_cand_view v;
	struct mc_plan p;
	const struct mc_stage *s;

	mc_cand_view_init(&v);
	add_many(&v, "A", "kv", 100, KIB, 0);
	add_many(&v, "B", "kv", 100, KIB, 0);
	plan_text("lowerbound 80%\n"
		  "assign tenant by weight\n"
		  "  scope A lowerbound 50%\n",
		  &v, 20 * KIB, false, &p, NULL);
	s = stage(&p, MC_STAGE_EVICT, "tenant=A");
	TAP_OK(s && s->lowerbound == 5 * KIB, "lowerbound: a scope's own fraction of its target");
	s = stage(&p, MC_STAGE_EVICT, "tenant=B");
	TAP_OK(s && s->lowerbound == 8 * KIB, "lowerbound: the policy default otherwise");
	TAP_OK(p.lowerbound == 16 * KIB && p.target == 20 * KIB,
	       "lowerbound: the root's is the default fraction of the caller's target");
	mc_plan_free(&p);
}

/* ---- 2. specific scopes first ---- */

static const char *two_level = "assign tenant by weight\n"
			       "  scope B\n"
			       "    assign type by usage\n"
			       "      scope kv\n"
			       "      scope hidden\n"
			       "    fallback\n"
			       "  scope A\n"
			       "    assign type by usage\n"
			       "    fallback\n"
			       "fallback\n";

static void
test_stage_order(void)
{
	struct mc_cand_view v;
	struct mc_plan p;
	char *explain = NULL;

	mc_cand_view_init(&v);
	/* view order is not policy order: named scopes come as listed */
	add_many(&v, "A", "kv", 40, KIB, 0);
	add_many(&v, "A", "hidden", 40, KIB, 0);
	add_many(&v, "B", "hidden", 40, KIB, 0);
	add_many(&v, "B", "kv", 40, KIB, 0);
	add_many(&v, "C", "kv", 40, KIB, 0);
	plan_text(two_level, &v, 30 * KIB, false, &p, &explain);
	TAP_OK(strcmp(stage_list(&p), "evict:tenant=B/type=kv evict:tenant=B/type=hidden "
				      "fallback:tenant=B "
				      "evict:tenant=A/type=hidden evict:tenant=A/type=kv "
				      "fallback:tenant=A evict:tenant=C fallback:") == 0,
	       "order: depth first, named scopes as listed, `*` values by name, "
	       "leaves before their parent's fallback, the global fallback last");
	printf("# %s\n", stage_list(&p));
	for (size_t i = 0; i < p.nstages; i++)
		TAP_OK(p.stages[i].id == i + 1, "order: stage %zu has id %zu", i, i + 1);
	TAP_OK(p.stages[2].kind == MC_STAGE_FALLBACK &&
		       strcmp(p.stages[2].cond_scope, "tenant=B") == 0 &&
		       p.stages[2].cond_lowerbound == 10 * KIB,
	       "order: a fallback serves its own scope's lowerbound");
	TAP_OK(explain &&
		       strstr(explain, "\n  tenant=B  cands 80  usage 80KiB  eligible 80KiB  "
				       "target 10KiB  lower 10KiB  chosen 20KiB  assign type") &&
		       strstr(explain, "\n    tenant=B/type=kv  cands 40  usage 40KiB") &&
		       strstr(explain, "ranker lease\n") &&
		       strstr(explain, "\n    fallback tenant=B  reserve 10KiB\n") &&
		       strstr(explain, "\n  fallback global  reserve 30KiB\n"),
	       "explain: one line per scope, indented by depth, fallback reserves");
	for (char *line = explain; line && *line;) {
		size_t n = strcspn(line, "\n");

		printf("# %.*s\n", (int)n, line);
		line += n + (line[n] == '\n');
	}
	free(explain);
	mc_plan_free(&p);
}

/* ---- 3. Evict never crosses its scope ---- */

static void
test_scope_bounds(void)
{
	struct mc_cand_view v;
	struct mc_plan p;
	bool inside = true;
	size_t checked = 0;

	mc_cand_view_init(&v);
	/* B's copies are the oldest: a ranker over everything would take them */
	add_many(&v, "B", "kv", 50, KIB, 100000);
	add_many(&v, "B", "hidden", 50, KIB, 100000);
	add_many(&v, "A", "kv", 50, KIB, 0);
	add_many(&v, "A", "hidden", 5, KIB, 0);
	plan_text("assign tenant by weight\n"
		  "  scope A\n"
		  "    assign type by weight\n"
		  "    fallback\n"
		  "fallback\n",
		  &v, 60 * KIB, false, &p, NULL);
	for (size_t i = 0; i < p.nstages; i++)
		for (size_t k = 0; k < p.stages[i].nvictims; k++, checked++)
			if (!cand_in_path(&p, p.stages[i].victims[k], p.stages[i].scope))
				inside = false;
	TAP_OK(checked > 0 && inside, "evict: every victim of every stage lies in its scope");
	TAP_OK(victim_bytes(&p, stage(&p, MC_STAGE_EVICT, "tenant=A/type=hidden")) == 5 * KIB &&
		       victim_bytes(&p, stage(&p, MC_STAGE_EVICT, "tenant=A/type=kv")) == 25 * KIB,
	       "evict: a small scope gives what it has, its sibling the rest of the target");
	mc_plan_free(&p);
}

/* ---- 4. the global fallback spares scopes not under pressure ---- */

static void
test_fallback_pressure(void)
{
	struct mc_cand_view v;
	struct mc_plan p;
	const struct mc_stage *s;
	bool all_a = true;

	mc_cand_view_init(&v);
	/* B: small and the oldest of all; A: far over its equal share */
	add_many(&v, "B", "kv", 30, KIB, 1000000);
	add_many(&v, "A", "kv", 90, KIB, 0);
	plan_text("assign tenant by weight\n"
		  "fallback\n",
		  &v, 20 * KIB, false, &p, NULL);
	s = stage(&p, MC_STAGE_FALLBACK, "");
	TAP_OK(s && s->nvictims == 20, "fallback: a reserve worth the root lowerbound");
	for (size_t i = 0; s && i < s->nvictims; i++)
		if (strcmp(tenant_of(&p, s->victims[i]), "A") != 0)
			all_a = false;
	TAP_OK(s && all_a, "fallback: the reserve comes from the tenant over its share, "
			   "not by age across both");
	mc_plan_free(&p);

	/* once A is down to its share the reserve alternates by pressure */
	mc_cand_view_init(&v);
	add_many(&v, "B", "kv", 40, KIB, 1000000);
	add_many(&v, "A", "kv", 60, KIB, 0);
	plan_text("lowerbound 100%\n"
		  "assign tenant by weight\n"
		  "fallback\n",
		  &v, 30 * KIB, false, &p, NULL);
	s = stage(&p, MC_STAGE_FALLBACK, "");
	if (s) {
		uint64_t from_a = 0;

		for (size_t i = 0; i < s->nvictims; i++)
			from_a += strcmp(tenant_of(&p, s->victims[i]), "A") == 0;
		/* after the evict stages A has 45 left, B 25: A gives 20 first, then 5 each */
		TAP_OK(s->nvictims == 30 && from_a == 25,
		       "fallback: pressure equalises the remaining usage (%" PRIu64
		       " of 30 from A)",
		       from_a);
	} else {
		TAP_OK(false, "fallback: pressure equalises the remaining usage");
	}
	mc_plan_free(&p);

	/* the fallback's own ranker orders each child, pressure still picks the child */
	mc_cand_view_init(&v);
	add_many(&v, "B", "kv", 30, KIB, 1000000);
	add_many(&v, "A", "kv", 90, KIB, 0);
	plan_text("assign tenant by weight\n"
		  "fallback fifo\n",
		  &v, 20 * KIB, false, &p, NULL);
	s = stage(&p, MC_STAGE_FALLBACK, "");
	all_a = s != NULL;
	for (size_t i = 0; s && i < s->nvictims; i++)
		if (strcmp(tenant_of(&p, s->victims[i]), "A") != 0)
			all_a = false;
	TAP_OK(all_a, "fallback with a ranker: still by pressure among children");
	mc_plan_free(&p);
}

/* ---- 5. leased and soft-pinned copies ---- */

static void
build_pinned_view(struct mc_cand_view *v)
{
	mc_cand_view_init(v);
	/* the oldest copies are leased or pinned: a plain ranking would take them */
	add(v, &(struct spec){ .tenant = "A",
			       .key = "leased",
			       .bytes = KIB,
			       .age_ms = 900000,
			       .lease_left_ms = 5000 });
	add(v, &(struct spec){ .tenant = "A",
			       .key = "pinned-late",
			       .bytes = KIB,
			       .age_ms = 800000,
			       .pin_left_ms = 90000 });
	add(v, &(struct spec){ .tenant = "A",
			       .key = "pinned-soon",
			       .bytes = KIB,
			       .age_ms = 700000,
			       .pin_left_ms = 10000 });
	add(v, &(struct spec){ .tenant = "A",
			       .key = "leased-and-pinned",
			       .bytes = KIB,
			       .age_ms = 600000,
			       .lease_left_ms = 5000,
			       .pin_left_ms = 1000 });
	add_many(v, "A", "kv", 4, KIB, 0);
}

static bool
key_is(const struct mc_plan *p, uint32_t i, const char *key)
{
	const struct mc_cand *c = &p->view.c[i];

	return c->key_len == strlen(key) && memcmp(mc_cand_key(&p->view, c), key, c->key_len) == 0;
}

static void
test_pins(void)
{
	struct mc_cand_view v;
	struct mc_plan p;
	const struct mc_stage *last;
	bool clean = true;

	build_pinned_view(&v);
	plan_text("evict lease\n", &v, 100 * KIB, false, &p, NULL);
	for (size_t i = 0; i < p.nstages; i++)
		for (size_t k = 0; k < p.stages[i].nvictims; k++)
			if (p.view.c[p.stages[i].victims[k]].lease_expiry > NOW ||
			    p.view.c[p.stages[i].victims[k]].soft_pin_deadline > NOW)
				clean = false;
	TAP_OK(p.nstages == 1 && p.stages[0].nvictims == 4 && clean,
	       "pins: the first pass takes neither leased nor soft-pinned copies");
	TAP_OK(stage(&p, MC_STAGE_FALLBACK, "") == NULL, "pins: no second pass unless asked for");
	mc_plan_free(&p);

	build_pinned_view(&v);
	plan_text("evict lease\n", &v, 100 * KIB, true, &p, NULL);
	last = p.nstages ? &p.stages[p.nstages - 1] : NULL;
	TAP_OK(last && last->soft_pinned && last->kind == MC_STAGE_FALLBACK &&
		       strcmp(last->cond_scope, "") == 0 && last->cond_lowerbound == 100 * KIB,
	       "pins: the second pass is a last fallback stage on the root lowerbound");
	TAP_OK(last && last->nvictims == 2 && key_is(&p, last->victims[0], "pinned-soon") &&
		       key_is(&p, last->victims[1], "pinned-late"),
	       "pins: the second pass lists only soft-pinned copies, soonest deadline first");
	TAP_OK(p.nstages == 2 && !p.stages[0].soft_pinned,
	       "pins: the first pass is not marked soft-pinned");
	mc_plan_free(&p);

	build_pinned_view(&v);
	plan_text("evict lease\n", &v, 1, true, &p, NULL);
	last = p.nstages ? &p.stages[p.nstages - 1] : NULL;
	TAP_OK(last && last->soft_pinned && last->nvictims == 1,
	       "pins: the second pass is worth the root lowerbound, no more");
	mc_plan_free(&p);
}

/* ---- 6. no duplicates, and the same plan from a stream ---- */

static const char *tenants[] = { "alpha", "bravo", "charlie", "delta" };
static const char *types[] = { "kv", "hidden", "embed" };

/* A deterministic mixed view; names interned in reverse order when asked. */
static void
build_mixed(struct mc_cand_view *v, bool reverse_names)
{
	uint64_t x = 12345;

	mc_cand_view_init(v);
	v->created = NOW;
	if (reverse_names) {
		name(v, "dram");
		name(v, "peer-1");
		for (int i = 3; i-- > 0;)
			name(v, types[i]);
		for (int i = 4; i-- > 0;)
			name(v, tenants[i]);
	}
	for (int i = 0; i < 3000; i++) {
		char key[32];
		struct spec s;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		snprintf(key, sizeof(key), "k%d", i);
		s = (struct spec){ .tenant = tenants[(x >> 33) % 4 == 3 ? 0 : (x >> 33) % 4],
				   .type = types[(x >> 40) % 3],
				   .key = key,
				   .bytes = 100 + (x >> 50) % 4000,
				   .age_ms = (x >> 20) % 1000 };
		if ((x >> 28) % 10 == 0)
			s.lease_left_ms = 1000;
		if ((x >> 29) % 10 == 1)
			s.pin_left_ms = 1 + (x >> 44) % 5000;
		add(v, &s);
	}
	/* one small tenant whose copies are all old */
	add_many(v, "delta", "kv", 20, 3000, 5000);
}

static const char *mixed_policy = "cost hidden 5000\n"
				  "cost kv bytes 0.5\n"
				  "lowerbound 90%\n"
				  "assign tenant by weight\n"
				  "  scope alpha weight 2 lowerbound 100%\n"
				  "    assign type by weight\n"
				  "      scope hidden weight 3\n"
				  "        evict cost\n"
				  "      scope *\n"
				  "        evict lru\n"
				  "    fallback\n"
				  "  scope *\n"
				  "    assign type by usage\n"
				  "    fallback lfu\n"
				  "fallback\n";

static bool
same_victim(const struct mc_plan *a, uint32_t i, const struct mc_plan *b, uint32_t j)
{
	return same_copy(&a->view, i, &b->view, j);
}

static bool
same_plan(const struct mc_plan *a, const struct mc_plan *b)
{
	if (a->nstages != b->nstages || a->target != b->target || a->lowerbound != b->lowerbound ||
	    a->created != b->created)
		return false;
	for (size_t i = 0; i < a->nstages; i++) {
		const struct mc_stage *x = &a->stages[i], *y = &b->stages[i];

		if (x->kind != y->kind || strcmp(x->scope, y->scope) != 0 ||
		    x->target != y->target || x->lowerbound != y->lowerbound ||
		    strcmp(x->cond_scope, y->cond_scope) != 0 ||
		    x->cond_lowerbound != y->cond_lowerbound || x->soft_pinned != y->soft_pinned ||
		    x->nvictims != y->nvictims)
			return false;
		for (size_t k = 0; k < x->nvictims; k++)
			if (!same_victim(a, x->victims[k], b, y->victims[k]))
				return false;
	}
	return true;
}

static void
test_determinism(void)
{
	struct mc_cand_view v, back, reversed;
	struct mc_plan p1, p2, p3;
	struct mc_err err;
	char *buf = NULL;
	size_t len = 0, total = 0;
	bool twice = false;
	uint8_t *seen;
	FILE *f;

	build_mixed(&v, false);
	f = open_memstream(&buf, &len);
	TAP_OK(f && mc_cand_write(f, &v, false, &err) == 0, "stream: the view is written");
	fclose(f);
	mc_cand_view_init(&back);
	f = fmemopen(buf, len, "r");
	TAP_OK(f && mc_cand_read(f, &back, false, &err) == 0 && back.n == v.n,
	       "stream: the view is read back");
	fclose(f);
	free(buf);
	build_mixed(&reversed, true);
	TAP_OK(reversed.c[0].tenant != v.c[0].tenant,
	       "stream: the second view interns names in another order");

	TAP_OK(plan_text(mixed_policy, &v, 2000000, true, &p1, NULL) == 0 &&
		       plan_text(mixed_policy, &back, 2000000, true, &p2, NULL) == 0 &&
		       plan_text(mixed_policy, &reversed, 2000000, true, &p3, NULL) == 0,
	       "stream: the three views plan");
	printf("# %zu stages: %s\n", p1.nstages, stage_list(&p1));
	TAP_OK(p1.nstages > 8 && stage(&p1, MC_STAGE_FALLBACK, "tenant=alpha") &&
		       stage(&p1, MC_STAGE_FALLBACK, "tenant=bravo") &&
		       stage(&p1, MC_STAGE_FALLBACK, ""),
	       "stream: the plan has evict, tenant fallback and global fallback stages");
	seen = calloc(p1.view.n, 1);
	for (size_t i = 0; i < p1.nstages; i++)
		for (size_t k = 0; k < p1.stages[i].nvictims; k++, total++) {
			if (seen[p1.stages[i].victims[k]])
				twice = true;
			seen[p1.stages[i].victims[k]] = 1;
		}
	free(seen);
	TAP_OK(total > 100 && !twice, "no candidate appears twice in a plan (%zu victims)", total);
	TAP_OK(same_plan(&p1, &p2), "stream: a view read back from its stream gives the same plan");
	TAP_OK(same_plan(&p1, &p3), "stream: names interned in another order give the same plan");
	TAP_OK(v.n == 0 && p1.view.n > 0, "the view is moved into the plan");
	mc_plan_free(&p1);
	mc_plan_free(&p2);
	mc_plan_free(&p3);
	mc_cand_view_free(&v);
}

/* ---- 7. mc_scope_contains ---- */

static void
test_contains(void)
{
	TAP_OK(mc_scope_contains("", "tenant=A/type=kv") && mc_scope_contains("", ""),
	       "contains: the root contains every path");
	TAP_OK(mc_scope_contains("tenant=A", "tenant=A"), "contains: a scope contains itself");
	TAP_OK(mc_scope_contains("tenant=A", "tenant=A/type=kv"),
	       "contains: a scope contains its children");
	TAP_OK(!mc_scope_contains("tenant=A", "tenant=AB"),
	       "contains: tenant=A does not contain tenant=AB");
	TAP_OK(!mc_scope_contains("tenant=A/type=kv", "tenant=A"),
	       "contains: a child does not contain its parent");
	TAP_OK(!mc_scope_contains("tenant=A", ""), "contains: a scope does not contain the root");
	TAP_OK(!mc_scope_contains("tenant=A", "tenant=A%2Fx"),
	       "contains: an escaped '/' is not a boundary");
}

/* ---- 8. scope values: escapes, empty names, prefixes ---- */

static void
test_values(void)
{
	struct mc_cand_view v;
	struct mc_plan p;
	char *explain = NULL;

	mc_cand_view_init(&v);
	add(&v, &(struct spec){ .tenant = "a/b%c", .key = "k1", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "x/y", .key = "k2", .bytes = KIB });
	plan_text("assign tenant by weight\n"
		  "  scope x/y\n",
		  &v, 2 * KIB, false, &p, NULL);
	TAP_OK(strcmp(stage_list(&p), "evict:tenant=x%2Fy evict:tenant=a%2Fb%25c") == 0,
	       "escapes: '/' and '%%' in values are %%2F and %%25, named or not");
	TAP_OK(p.nstages == 2 && cand_in_path(&p, p.stages[1].victims[0], p.stages[1].scope),
	       "escapes: the path decodes back to the value");
	mc_plan_free(&p);

	/* no group is the value "-", named by `scope -` */
	mc_cand_view_init(&v);
	add(&v, &(struct spec){ .tenant = "A", .key = "g1", .group = "job-7", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "A", .key = "n1", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "A", .key = "n2", .bytes = KIB });
	plan_text("assign group by usage\n", &v, 3 * KIB, false, &p, &explain);
	TAP_OK(strcmp(stage_list(&p), "evict:group=- evict:group=job-7") == 0 &&
		       stage(&p, MC_STAGE_EVICT, "group=-")->nvictims == 2,
	       "empty names: copies with no group are the scope group=-");
	TAP_OK(explain && strstr(explain, "\n  group=-  cands 2  "), "empty names: explained as -");
	free(explain);
	mc_plan_free(&p);

	mc_cand_view_init(&v);
	add(&v, &(struct spec){ .tenant = "A", .key = "g1", .group = "job-7", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "A", .key = "n1", .bytes = KIB });
	plan_text("assign group by weight\n"
		  "  scope - weight 3\n"
		  "  scope * weight 1\n",
		  &v, 2 * KIB, false, &p, NULL);
	TAP_OK(strcmp(stage_list(&p), "evict:group=- evict:group=job-7") == 0,
	       "empty names: a policy names them with `scope -`");
	mc_plan_free(&p);

	/* prefixes: the longest listed one, else prefix=* */
	mc_cand_view_init(&v);
	add(&v, &(struct spec){ .tenant = "A", .key = "sess-long-1", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "A", .key = "sess-1", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "A", .key = "other", .bytes = KIB });
	add(&v, &(struct spec){ .tenant = "A", .key = "sess-long-2", .bytes = KIB });
	plan_text("assign prefix by usage\n"
		  "  scope sess-\n"
		  "  scope sess-long-\n",
		  &v, 4 * KIB, false, &p, NULL);
	TAP_OK(strcmp(stage_list(&p), "evict:prefix=sess- evict:prefix=sess-long- "
				      "evict:prefix=*") == 0,
	       "prefix: listed prefixes in order, then prefix=*");
	TAP_OK(p.nstages == 3 && p.stages[0].nvictims == 1 && p.stages[1].nvictims == 2 &&
		       key_is(&p, p.stages[2].victims[0], "other"),
	       "prefix: a key goes to its longest listed prefix");
	mc_plan_free(&p);
}

/* ---- the cost ranker's per-type defaults ---- */

static void
test_costs(void)
{
	struct mc_cand_view v;
	struct mc_plan p;

	/* kv costs 0.5/byte -> score 0.5; hidden a fixed 5000 over 1000 bytes -> 5 */
	mc_cand_view_init(&v);
	add(&v, &(struct spec){ .tenant = "A", .type = "hidden", .key = "h", .bytes = 1000 });
	add(&v, &(struct spec){ .tenant = "A", .type = "kv", .key = "k", .bytes = 1000000 });
	add(&v, &(struct spec){ .tenant = "A", .type = "other", .key = "o", .bytes = 1000 });
	plan_text("cost hidden 5000\n"
		  "cost kv bytes 0.5\n"
		  "evict cost\n",
		  &v, 10000000, false, &p, NULL);
	TAP_OK(p.nstages == 1 && p.stages[0].nvictims == 3 &&
		       key_is(&p, p.stages[0].victims[0], "k") &&
		       key_is(&p, p.stages[0].victims[1], "o") &&
		       key_is(&p, p.stages[0].victims[2], "h"),
	       "costs: a per-byte type default, a fixed one, and bytes for the rest");
	mc_plan_free(&p);
}

/* "k2,k0,..." : the keys of a stage's victims in order. */
static const char *
victim_keys(const struct mc_plan *p, const struct mc_stage *s)
{
	static char buf[256];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; s && i < s->nvictims && len < sizeof(buf); i++) {
		const struct mc_cand *c = &p->view.c[s->victims[i]];

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%.*s", i ? "," : "",
					(int)c->key_len, mc_cand_key(&p->view, c));
	}
	return buf;
}

/*
 * The view's sequence reaches the rankers: four copies read in the same
 * millisecond go in the order of their accesses when the view numbers
 * them, and by index (today's tie) when it does not.
 */
static void
test_logical_time(void)
{
	static const uint64_t seqs[] = { 30, 10, 40, 20 };
	struct mc_cand_view v;
	struct mc_plan p;

	for (int with = 1; with >= 0; with--) {
		mc_cand_view_init(&v);
		add_many(&v, "A", "kv", 4, KIB, 0);
		for (size_t i = 0; i < 4; i++) {
			v.c[i].last_access = NOW;
			v.c[i].access_seq = seqs[i];
			v.c[i].created_seq = seqs[i];
		}
		v.seq = with ? 50 : 0;
		plan_text("evict lru\n", &v, 4 * KIB, false, &p, NULL);
		TAP_OK(p.nstages == 1 && strcmp(victim_keys(&p, &p.stages[0]),
						with ? "A-kv-1,A-kv-3,A-kv-0,A-kv-2"
						     : "A-kv-0,A-kv-1,A-kv-2,A-kv-3") == 0,
		       "logical time: lru in one millisecond %s (got %s)",
		       with ? "follows the view's access sequence" : "ties to index without one",
		       victim_keys(&p, &p.stages[0]));
		mc_plan_free(&p);
	}

	/*
	 * The policy's half-life in accesses reaches lfu: "old" was read 100
	 * times but 100 accesses ago, "new" twice just now. A duration does
	 * not apply to a view with a sequence.
	 */
	static const struct {
		const char *policy, *want, *what;
	} hl[] = {
		{ "evict lfu\n", "new,old", "the default half-life keeps 100 reads worth more" },
		{ "evict lfu\nhalf-life 10\n", "old,new", "half-life 10 ages them 10 times" },
		{ "evict lfu\nhalf-life 10ms\n", "new,old", "a duration is not used" },
	};
	for (size_t k = 0; k < sizeof(hl) / sizeof(hl[0]); k++) {
		mc_cand_view_init(&v);
		add(&v, &(struct spec){ .tenant = "A", .key = "new", .bytes = KIB });
		add(&v, &(struct spec){ .tenant = "A", .key = "old", .bytes = KIB });
		v.c[0].access_count = 2;
		v.c[0].access_seq = 1000;
		v.c[1].access_count = 100;
		v.c[1].access_seq = 900;
		v.seq = 1000;
		plan_text(hl[k].policy, &v, 2 * KIB, false, &p, NULL);
		TAP_OK(p.nstages == 1 && strcmp(victim_keys(&p, &p.stages[0]), hl[k].want) == 0,
		       "logical time: %s (got %s)", hl[k].what, victim_keys(&p, &p.stages[0]));
		mc_plan_free(&p);
	}
}

static void
test_empty(void)
{
	struct mc_cand_view v;
	struct mc_plan p;

	build_mixed(&v, false);
	TAP_OK(plan_text(mixed_policy, &v, 0, true, &p, NULL) == 0 && p.nstages == 0,
	       "a zero target gives an empty plan");
	mc_plan_free(&p);
	mc_cand_view_init(&v);
	TAP_OK(plan_text(two_level, &v, 1000, true, &p, NULL) == 0 && p.nstages == 0,
	       "an empty view gives an empty plan");
	mc_plan_free(&p);
}

/* The window a round plans over: a multiple of the victims at the mean size, within bounds. */
static void
test_window(void)
{
	TAP_OK(mc_plan_window(1000, 0, 0) == 0, "an empty tier gives an empty window");
	TAP_OK(mc_plan_window(4096, 4096ull * 100, 100) == 100,
	       "a tier smaller than the least window is taken whole");
	TAP_OK(mc_plan_window(4096ull * 1000, 4096ull * 1000000, 1000000) ==
		       1000 * MC_PLAN_WINDOW_FACTOR,
	       "a window holds FACTOR times the victims need takes at the mean size");
	TAP_OK(mc_plan_window(1, 4096ull * 1000000, 1000000) == MC_PLAN_WINDOW_MIN,
	       "a small need still gets the least window");
	TAP_OK(mc_plan_window(4097ull * 1000, 4096ull * 1000000, 1000000) ==
		       1001 * MC_PLAN_WINDOW_FACTOR,
	       "a part of a copy counts as a whole victim");
	TAP_OK(mc_plan_window(UINT64_MAX, UINT64_MAX, 10000000) == 10000000,
	       "a need past the tier takes every copy, with no overflow");
	TAP_OK(mc_plan_window_grow(2000, 1000000) == 4000, "a short window doubles");
	TAP_OK(mc_plan_window_grow(800000, 1000000) == 1000000, "a grown window stops at the tier");
	TAP_OK(mc_plan_window_grow(SIZE_MAX, UINT64_MAX) > 0, "growing never wraps");
}

int
main(void)
{
	test_window();
	test_assign_weight();
	test_assign_capped();
	test_assign_usage_quota();
	test_assign_lowerbound();
	test_stage_order();
	test_scope_bounds();
	test_fallback_pressure();
	test_pins();
	test_determinism();
	test_contains();
	test_values();
	test_costs();
	test_logical_time();
	test_empty();
	return tap_done();
}
