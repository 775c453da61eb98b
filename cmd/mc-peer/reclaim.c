/*
 * The local eviction worker (reclaim.h): a pass per tier, planned with
 * the policy engine and executed a slice per turn of the loop.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/planexec.h"
#include "mc/planner.h"
#include "mc/proto.h"
#include "mc/young.h"

#include "reclaim.h"

/* What a local view calls this peer (a policy may split by peer: there is one). */
#define SELF "self"

static const char *const mode_names[EVICT_MODES] = {
	[EVICT_LOCAL] = "local",
	[EVICT_MASTER_RANKED] = "master_ranked",
	[EVICT_MASTER] = "master",
};

static const char *const event_names[RECLAIM_EVENTS] = {
	[RECLAIM_ROUND] = "round",
	[RECLAIM_KEY] = "key",
	[RECLAIM_NO_CANDIDATE] = "no_candidate",
	[RECLAIM_STALLED] = "stalled",
	[RECLAIM_MASTER_KEY] = "master_key",
	[RECLAIM_YOUNG] = "young",
};

/* A key of the master's answer, its tenant and key bytes in name. */
struct ranked {
	char *name;
	uint16_t tenant_len, key_len;
	uint64_t version;
};

struct rtier {
	struct reclaimer *r;
	int tier;
	bool draining; /* crossed its band's high end: freeing down to the low one */
	bool full; /* a write found no room: drain whatever the band says */ /*
	 * Where the master's puts need the tier to come down to (usage that
	 * stays), for the puts it could not place; UINT64_MAX: none asked.
	 */
	uint64_t target;
	bool stalled;	      /* only group members could cover the overage */
	bool idle;	      /* the last plan could free nothing: wait before the next */
	double occupancy_min; /* the lowest a drain left the tier at, 1 before any */
	/*
	 * Young copies: what the plan at hand left out and took, and whether
	 * it may take them (a write waits for room only they can make).
	 */
	struct mc_young_tally young;
	bool with_young;
	/* eviction drops a copy here (no tier below it on this peer): young copies are kept */
	bool drops;
	/* the local plan being executed */
	bool planned;
	struct mc_plan plan;
	struct mc_report rep;
	struct mc_plan_exec x;
	uint64_t *planned_bytes;
	/* master_ranked: the answer at hand, and the query */
	struct ranked *rk;
	size_t nrk, rkpos;
	/* mc_mono_ms: how fast the master answers is real time, never the fake clock's */
	uint64_t answered_at, asked_at;
	bool asking;
	bool waiting_first;  /* this pass waits (RECLAIM_FIRST_WAIT_MS at most) for an answer */
	bool pass_asked;     /* this pass asked already: it waits no more */
	struct event *timer; /* the first answer's wait, or the idle pause */
};

struct reclaimer {
	struct event_base *base;
	struct pool *pl;
	struct pindex *ix;
	struct mover *mv;
	struct reclaim_conf conf;
	struct event *run_ev;
	struct rtier t[MC_TIER_COUNT];
	int order[MC_TIER_COUNT]; /* the tiers this peer holds, the bottom of the chain first */
	int ntiers;
	uint64_t events[RECLAIM_EVENTS];
	uint64_t asked;
	reclaim_ask_fn ask;
	void *ask_arg;
	bool no_ranking; /* the master lacks evict_candidates */
	uint64_t young_taken, young_taken_bytes;
};

const char *
evict_mode_name(enum evict_mode m)
{
	return m < EVICT_MODES ? mode_names[m] : "?";
}

int
evict_mode_parse(const char *s, enum evict_mode *out)
{
	for (int m = 0; m < EVICT_MODES; m++)
		if (strcmp(s, mode_names[m]) == 0) {
			*out = (enum evict_mode)m;
			return 0;
		}
	return -1;
}

const char *
reclaim_event_name(enum reclaim_event e)
{
	return e < RECLAIM_EVENTS ? event_names[e] : "?";
}

static void
count(struct reclaimer *r, enum reclaim_event e)
{
	r->events[e]++;
}

/* ---- budgets ---- */

/* How many steps tier is above the bottom of its chain. */
static int
height(int tier)
{
	int h = 0;

	for (int t = mc_tier_downstream(tier); t != MC_TIER_NONE && h < MC_TIER_COUNT;
	     t = mc_tier_downstream(t))
		h++;
	return h;
}

/* tier's usage less what is leaving it already: queued moves and drops readers still hold. */
static uint64_t
staying(const struct reclaimer *r, int tier)
{
	struct medium *m = r->ix->media[tier];
	uint64_t used = medium_used(m);
	uint64_t gone = pindex_held(r->ix, tier) + (r->mv ? mover_in_flight(r->mv, tier) : 0);

	return used > gone ? used - gone : 0;
}

/* What the writes waiting for room on tier still lack: 0 when none waits. */
static uint64_t
waiting(const struct reclaimer *r, int tier)
{
	uint64_t stay = staying(r, tier);

	return stay > r->t[tier].target ? stay - r->t[tier].target : 0;
}

uint64_t
reclaimer_inflight(const struct reclaimer *r, int tier)
{
	struct medium *m = r != NULL ? r->ix->media[tier] : NULL;
	uint64_t copies, committed, held, used;

	if (!m)
		return 0;
	/* what is allocated there and neither a linked copy nor a dropped one a reader holds */
	pindex_tier_load(r->ix, tier, &copies, &committed);
	held = pindex_held(r->ix, tier);
	used = medium_used(m);
	return used > committed + held ? used - committed - held : 0;
}

void
reclaimer_band(const struct reclaimer *r, int tier, struct mc_band *out)
{
	struct medium *m =
		r != NULL && tier >= 0 && tier < MC_TIER_COUNT ? r->ix->media[tier] : NULL;
	uint64_t copies, committed;

	/* no eviction worker (a peer being set up, a test's): no band */
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	if (r->conf.marks[tier]) {
		mc_band_marks(medium_capacity(m), r->conf.high[tier], r->conf.low[tier], out);
		return;
	}
	pindex_tier_load(r->ix, tier, &copies, &committed);
	mc_band_headroom(medium_capacity(m), committed, copies, out);
}

uint64_t
reclaimer_need(const struct reclaimer *r, int tier)
{
	struct mc_band band;
	uint64_t stay, over, short_by;

	if (!r->ix->media[tier])
		return 0;
	reclaimer_band(r, tier, &band);
	stay = staying(r, tier);
	over = stay > band.low ? stay - band.low : 0;
	/* what the waiting writes still lack, below the band's low end if need be */
	short_by = waiting(r, tier);
	return over > short_by ? over : short_by;
}

bool
reclaimer_self_evicts(const struct reclaimer *r, int tier)
{
	return tier >= 0 && tier < MC_TIER_COUNT && r->ix->media[tier] != NULL &&
	       !(r->conf.mode == EVICT_MASTER && tier == MC_TIER_DRAM);
}

bool
reclaimer_stalled(const struct reclaimer *r, int tier)
{
	return tier >= 0 && tier < MC_TIER_COUNT && r->t[tier].stalled;
}

uint64_t
reclaimer_events(const struct reclaimer *r, enum reclaim_event e)
{
	return r->events[e];
}

enum evict_mode
reclaimer_mode(const struct reclaimer *r)
{
	return r->conf.mode;
}

double
reclaimer_occupancy_min(const struct reclaimer *r, int tier)
{
	return r->t[tier].occupancy_min;
}

uint64_t
reclaimer_asked(const struct reclaimer *r)
{
	return r->asked;
}

void
reclaimer_young_taken(const struct reclaimer *r, uint64_t *copies, uint64_t *bytes)
{
	*copies = r->young_taken;
	*bytes = r->young_taken_bytes;
}

/* ---- freeing one victim ---- */

/*
 * Free the copy of (tenant, key) at most version on t's tier if nothing
 * protects it now: true when it went (dropped, or its demotion queued),
 * else false with *why, the reason it stays (enum mc_fail_reason, whose
 * first reason, gone, is 0: no status could tell it from success). A
 * young copy stays unless the plan at hand may take young copies (the
 * master's ranking may name one); when it goes, it is counted.
 */
static bool
evict_one(struct reclaimer *r, struct rtier *t, const char *tenant, size_t tlen, const char *key,
	  size_t klen, uint64_t version, int *why)
{
	struct pool_key k = { tenant, tlen, key, klen, true, version };
	struct pindex_peek pk;
	struct pool_result res;
	bool young;

	if (!pindex_peek(r->ix, tenant, tlen, key, klen, &pk) || pk.tier != t->tier) {
		*why = MC_FAIL_GONE;
		return false;
	}
	young = mc_young_is(r->conf.young_ms, pk.committed, mc_now_ms());
	if (pk.version > version)
		*why = MC_FAIL_VERSION;
	else if (pk.busy)
		*why = MC_FAIL_BUSY;
	else if (pk.protected || (young && t->drops && !t->with_young))
		*why = MC_FAIL_PINNED; /* a young copy is kept as a pin would be */
	else {
		pool_evict(r->pl, &k, t->tier, POOL_RECLAIM, &res);
		if (res.outcome == POOL_FREED || res.outcome == POOL_DEMOTING) {
			/* dropped, not moved down (none below, or no room there): a young one counts */
			if (young && res.outcome == POOL_FREED) {
				uint64_t fp = pk.size > 0 ? medium_footprint(r->ix->media[t->tier],
									     pk.size)
							  : 0;

				mc_young_take(&t->young, fp);
				r->young_taken++;
				r->young_taken_bytes += fp;
			}
			return true;
		}
		*why = res.outcome == POOL_IN_FLIGHT ? MC_FAIL_BUSY : MC_FAIL_GONE;
	}
	return false;
}

/* ---- the local plan ---- */

static void
plan_drop(struct rtier *t)
{
	/* once a plan: what it took of the young copies, for the write that waited */
	mc_young_log(&t->young, mc_tier_name(t->tier),
		     t->drops ? MC_YOUNG_FOR_WRITE : "the tier below had no room for them");
	t->young.taken = t->young.taken_bytes = 0;
	t->with_young = false;
	if (!t->planned)
		return;
	mc_plan_free(&t->plan);
	mc_report_free(&t->rep);
	free(t->planned_bytes);
	t->planned_bytes = NULL;
	t->planned = false;
}

static int
name_id(struct mc_cand_view *v, const char *s, size_t len, uint32_t *out, struct mc_err *err)
{
	int64_t id = mc_cand_name(v, s, len, err);

	if (id < 0)
		return -1;
	*out = (uint32_t)id;
	return 0;
}

/* What ranking a view takes now: the index's access number and half-life. */
struct rank_now {
	uint64_t seq;
	double half_life;
};

/*
 * Add o, a candidate of t's tier, to v with flags (MC_CAND_PROBATION or
 * 0), unless the plan may not take it: young copies the plan may not
 * take go to t's tally. What is no candidate (moving, no commit notice,
 * a hard pin or a group: the index keeps those out of the order) is
 * left out here too.
 */
static int
add_copy(struct reclaimer *r, struct rtier *t, struct mc_cand_view *v, const struct pobj *o,
	 uint32_t self, uint32_t tier_id, uint64_t now, const struct rank_now *rn, uint32_t flags,
	 struct mc_err *err)
{
	const struct pmeta *pm = o->meta;
	struct mc_cand c;
	uint64_t fp;

	if (o->moving || pm == NULL || pm->hard_pin || pm->group_len > 0)
		return 0;
	fp = o->size > 0 ? medium_footprint(r->ix->media[o->tier], o->size) : 0;
	if (t->drops && !t->with_young && mc_young_is(r->conf.young_ms, o->committed, now)) {
		mc_young_keep(&t->young, r->conf.young_ms, o->committed, fp);
		return 0;
	}
	memset(&c, 0, sizeof(c));
	if (name_id(v, o->name, o->tenant_len, &c.tenant, err) < 0 ||
	    (pm->type_len > 0
		     ? name_id(v, pm->names, pm->type_len, &c.type, err)
		     : name_id(v, MC_DEFAULT_TYPE, strlen(MC_DEFAULT_TYPE), &c.type, err)) < 0)
		return -1;
	c.peer = self;
	c.tier = tier_id;
	c.version = o->version;
	c.bytes = fp;
	c.created = o->last_access;
	c.last_access = o->last_access;
	c.soft_pin_deadline = pm->sp_deadline > now ? pm->sp_deadline : 0;
	c.cost = -1;
	/* the kv ranking's fields, from this peer's own history of its copies */
	c.access_seq = o->access_seq;
	c.created_seq = o->created_seq;
	c.crf = pindex_worth(r->ix, o, rn->seq, rn->half_life);
	c.flags = flags;
	return mc_cand_add(v, &c, pobj_key(o), o->key_len, err);
}

/*
 * The view of a window of t's candidates (pindex_cold): the oldest
 * probationers beyond the probationary share, the window coldest by
 * last access, and the window of lowest decayed worth, which the kv
 * ranking gives up first wherever they are by recency (a chain's tail
 * read lately under a parent worth little). Probation flags are set
 * from the index's running sums, as mc_history_segment would over the
 * whole tier: a probationer is flagged when it is beyond the newest
 * probationary share (pindex_probation) of the tier's capacity. Two
 * differences: the share counts young probationers (the segment sees
 * only the view's), and when more than a window are beyond it, a
 * probationer past the first window of them is not flagged (the first
 * window already outranks it, and gives the plan more than it needs).
 */
static int
build_view(struct reclaimer *r, struct rtier *t, size_t window, struct mc_cand_view *v,
	   struct mc_err *err)
{
	int tier = t->tier;
	struct medium *m = r->ix->media[tier];
	uint64_t allow = (uint64_t)((double)medium_capacity(m) * pindex_probation(r->ix));
	uint32_t self, tier_id;
	uint64_t now = mc_now_ms();
	struct rank_now rn;
	const char *tn = mc_tier_name(tier);
	struct pobj **objs;
	size_t n, beyond;
	bool all;
	int rc = 0;

	v->created = now;
	pindex_history_now(r->ix, &rn.seq, &rn.half_life);
	v->seq = rn.seq;
	if (name_id(v, SELF, strlen(SELF), &self, err) < 0 ||
	    name_id(v, tn, strlen(tn), &tier_id, err) < 0)
		return -1;
	if (window == 0)
		return 0;
	if (window > SIZE_MAX / 3 / sizeof(*objs) || !(objs = malloc(3 * window * sizeof(*objs))))
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a plan's candidates");
	if (pindex_cold(r->ix, tier, window, allow, objs, &n, &beyond, &all, err) < 0) {
		free(objs);
		return -1;
	}
	/* the records made once, not grown a doubling at a time */
	rc = mc_cand_view_reserve(v, v->n + n, err);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = add_copy(r, t, v, objs[i], self, tier_id, now, &rn,
			      i < beyond ? MC_CAND_PROBATION : 0, err);
	pindex_release_many(r->ix, objs, n);
	free(objs);
	return rc;
}

/* The bytes plan p would free, its soft-pinned stages only when they may go. */
static uint64_t
plan_bytes(const struct mc_plan *p, bool soft_pinned_pass)
{
	uint64_t b = 0;

	for (size_t i = 0; i < p->nstages; i++) {
		const struct mc_stage *s = &p->stages[i];

		if (s->soft_pinned && !soft_pinned_pass)
			continue;
		for (size_t j = 0; j < s->nvictims; j++)
			b += p->view.c[s->victims[j]].bytes;
	}
	return b;
}

/*
 * Plan need bytes off t's tier into t->plan, over a window of its
 * candidates (mc_plan_window, build_view), made again over a bigger one
 * while the plan falls short of need and the window is smaller than
 * the tier's candidates, unless young copies it left out cover the
 * shortfall for a write that waits. *used: the last window. 0, or -1
 * with err.
 */
static int
plan_window(struct reclaimer *r, struct rtier *t, uint64_t need, const struct mc_plan_params *pp,
	    size_t *used, struct mc_err *err)
{
	struct pindex_order_sums sums;
	struct mc_cand_view v;
	size_t window;
	uint64_t got;

	pindex_order_sums(r->ix, t->tier, &sums);
	window = mc_plan_window(need, sums.bytes, sums.copies);
	for (;;) {
		/* what this window left out of the young copies, not what a smaller one did */
		t->young.kept = t->young.kept_bytes = 0;
		t->young.until = UINT64_MAX;
		mc_cand_view_init(&v);
		if (build_view(r, t, window, &v, err) < 0 ||
		    mc_planner_run(r->conf.policy, &v, pp, &t->plan, NULL, err) < 0) {
			mc_cand_view_free(&v);
			return -1;
		}
		mc_cand_view_free(&v);
		*used = window;
		got = plan_bytes(&t->plan, pp->soft_pinned_pass);
		if (window >= sums.copies || got >= need)
			return 0;
		/*
		 * Young copies this window left out would make the rest, and a
		 * write waits for it: the pass over young copies (plan_make)
		 * takes them, instead of every copy of a tier that may be all
		 * young being looked at first for old ones.
		 */
		if (t->drops && !t->with_young && t->young.kept_bytes >= need - got &&
		    mc_young_needed(waiting(r, t->tier), got))
			return 0;
		mc_plan_free(&t->plan);
		window = mc_plan_window_grow(window, sums.copies);
		/* the tier changes only on this loop: its sums hold through the growing */
	}
}

/* Plan need bytes off t's tier; false when there is nothing to execute. */
static bool
plan_try(struct reclaimer *r, struct rtier *t, uint64_t need)
{
	struct mc_plan_params pp = { .target = need,
				     .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND,
				     .soft_pinned_pass = r->conf.soft_pinned_pass,
				     .now = mc_now_ms() };
	struct pindex_order_sums sums;
	struct mc_err err;
	size_t victims = 0, window;

	if (plan_window(r, t, need, &pp, &window, &err) < 0) {
		mc_warn("local eviction of %s cannot plan: %s", mc_tier_name(t->tier), err.msg);
		return false;
	}
	mc_debug("local eviction of %s: %zu candidates of a window of %zu, need %llu",
		 mc_tier_name(t->tier), t->plan.view.n, window, (unsigned long long)need);
	count(r, RECLAIM_ROUND);
	for (size_t i = 0; i < t->plan.nstages; i++)
		victims += t->plan.stages[i].nvictims;
	pindex_order_sums(r->ix, t->tier, &sums);
	/* only group members could make the room: the master's to free */
	t->stalled = victims == 0 && sums.grouped_bytes > 0;
	if (victims == 0) {
		count(r, RECLAIM_NO_CANDIDATE);
		if (t->stalled)
			count(r, RECLAIM_STALLED);
		mc_plan_free(&t->plan);
		return false;
	}
	t->planned_bytes = mc_plan_exec_planned(&t->plan);
	mc_report_init(&t->rep);
	mc_plan_exec_begin(&t->x, &t->plan, t->planned_bytes, &t->rep);
	t->planned = true;
	return true;
}

/*
 * Plan need bytes off t's tier over the copies that are not young; when
 * they give nothing and a write waits for room, plan over the young ones
 * too. False when there is nothing to execute (the pass rests).
 */
static bool
plan_make(struct reclaimer *r, struct rtier *t, uint64_t need)
{
	mc_young_tally_init(&t->young);
	t->with_young = false;
	if (plan_try(r, t, need))
		return true;
	if (t->young.kept == 0)
		return false;
	count(r, RECLAIM_YOUNG);
	if (!mc_young_needed(waiting(r, t->tier), 0))
		return false;
	t->with_young = true;
	return plan_try(r, t, need);
}

int
reclaimer_plan(struct reclaimer *r, int tier, uint64_t need, struct mc_plan *out, size_t *window,
	       struct mc_err *err)
{
	struct mc_plan_params pp = { .target = need,
				     .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND,
				     .soft_pinned_pass = r->conf.soft_pinned_pass,
				     .now = mc_now_ms() };
	struct rtier *t;
	struct mc_young_tally young;
	bool with_young;
	int rc;

	if (tier < 0 || tier >= MC_TIER_COUNT || !r->ix->media[tier])
		return mc_err_set(err, MC_ERR_INVALID, "this peer holds no %s tier",
				  mc_tier_name(tier));
	t = &r->t[tier];
	if (t->planned)
		return mc_err_set(err, MC_ERR_BUSY, "the %s pass has a plan at hand",
				  mc_tier_name(tier));
	/* the pass's own tally stays as it was: this plan is not the pass's */
	young = t->young;
	with_young = t->with_young;
	mc_young_tally_init(&t->young);
	t->with_young = false;
	rc = plan_window(r, t, need, &pp, window, err);
	if (rc == 0) {
		*out = t->plan;
		mc_plan_init(&t->plan);
	}
	t->young = young;
	t->with_young = with_young;
	return rc;
}

/*
 * Up to *budget victims of the plan; false once the plan is done. A
 * plan that ends having freed nothing rests the tier.
 */
static bool
plan_step(struct reclaimer *r, struct rtier *t, int *budget)
{
	struct mc_err err;

	while (*budget > 0 && reclaimer_need(r, t->tier) > 0) {
		const struct mc_stage *s;
		const struct mc_cand *c;
		uint32_t vi;
		bool started;
		int why, rc = mc_plan_exec_next(&t->x, &s, &vi, &started, &err);

		if (rc <= 0) {
			if (rc < 0)
				mc_warn("local eviction of %s: %s", mc_tier_name(t->tier), err.msg);
			if (t->x.evicted_objects == 0)
				t->idle = true;
			plan_drop(t);
			return false;
		}
		(*budget)--;
		c = &t->plan.view.c[vi];
		why = MC_FAIL_PINNED;
		if ((!s->soft_pinned || r->conf.soft_pinned_pass) &&
		    evict_one(r, t, mc_cand_name_str(&t->plan.view, c->tenant),
			      t->plan.view.name_lens[c->tenant], mc_cand_key(&t->plan.view, c),
			      c->key_len, c->version, &why)) {
			count(r, RECLAIM_KEY);
			mc_plan_exec_evicted(&t->x, c->bytes, 1);
		} else if (mc_plan_exec_kept(&t->x, why, &err) < 0) {
			mc_warn("local eviction of %s: %s", mc_tier_name(t->tier), err.msg);
			plan_drop(t);
			return false;
		}
	}
	return true;
}

/* ---- master_ranked ---- */

static void
ranked_clear(struct rtier *t)
{
	for (size_t i = 0; i < t->nrk; i++)
		free(t->rk[i].name);
	free(t->rk);
	t->rk = NULL;
	t->nrk = t->rkpos = 0;
}

static bool
ranking(const struct reclaimer *r)
{
	return r->conf.mode == EVICT_MASTER_RANKED && r->ask != NULL && !r->no_ranking;
}

/* Ask for tier's next victims, unless a query is in flight or was sent too recently. */
static void
ask(struct reclaimer *r, struct rtier *t, uint64_t need)
{
	uint64_t now = mc_mono_ms();
	bool first = !t->pass_asked;

	if (t->asking || (t->asked_at != 0 && now - t->asked_at < RECLAIM_ASK_GAP_MS))
		return;
	/* set before asking: an answer may come back inside the call */
	t->asking = true;
	t->asked_at = now;
	t->pass_asked = true;
	t->waiting_first = first;
	if (r->ask(r->ask_arg, t->tier, need, RECLAIM_ASK_MAX) < 0) {
		t->asking = t->waiting_first = false;
		return;
	}
	r->asked++;
	if (t->waiting_first) {
		struct timeval tv = mc_ms_timeval(RECLAIM_FIRST_WAIT_MS);

		evtimer_add(t->timer, &tv);
	}
}

/* Victims from the master's answer while it is fresh; what budget is left. */
static void
ranked_step(struct reclaimer *r, struct rtier *t, int *budget)
{
	if (t->rkpos < t->nrk && mc_mono_ms() - t->answered_at >= RECLAIM_ANSWER_TTL_MS)
		ranked_clear(t);
	while (*budget > 0 && t->rkpos < t->nrk && reclaimer_need(r, t->tier) > 0) {
		const struct ranked *k = &t->rk[t->rkpos++];
		int why;

		(*budget)--;
		if (evict_one(r, t, k->name, k->tenant_len, k->name + k->tenant_len, k->key_len,
			      k->version, &why))
			count(r, RECLAIM_MASTER_KEY);
	}
}

void
reclaimer_answer(struct reclaimer *r, int tier, const struct reclaim_ranked *keys, size_t n)
{
	struct rtier *t;

	if (tier < 0 || tier >= MC_TIER_COUNT)
		return;
	t = &r->t[tier];
	t->asking = false;
	ranked_clear(t);
	if (n > 0 && (t->rk = calloc(n, sizeof(*t->rk))) != NULL) {
		for (size_t i = 0; i < n; i++) {
			const struct reclaim_ranked *k = &keys[i];
			struct ranked *d = &t->rk[t->nrk];

			if (k->tenant_len > UINT16_MAX || k->key_len > UINT16_MAX ||
			    !(d->name = malloc(k->tenant_len + k->key_len + 1)))
				continue;
			memcpy(d->name, k->tenant, k->tenant_len);
			memcpy(d->name + k->tenant_len, k->key, k->key_len);
			d->tenant_len = (uint16_t)k->tenant_len;
			d->key_len = (uint16_t)k->key_len;
			d->version = k->version;
			t->nrk++;
		}
	}
	t->answered_at = mc_mono_ms();
	if (t->waiting_first) {
		t->waiting_first = false;
		evtimer_del(t->timer);
	}
	event_active(r->run_ev, EV_TIMEOUT, 0);
}

void
reclaimer_no_ranking(struct reclaimer *r)
{
	if (!r->no_ranking)
		mc_warn("the master ranks no eviction candidates: evicting by local order");
	r->no_ranking = true;
	for (int i = 0; i < MC_TIER_COUNT; i++) {
		r->t[i].asking = false;
		if (r->t[i].waiting_first) {
			r->t[i].waiting_first = false;
			evtimer_del(r->t[i].timer);
		}
	}
	event_active(r->run_ev, EV_TIMEOUT, 0);
}

void
reclaimer_on_ask(struct reclaimer *r, reclaim_ask_fn fn, void *arg)
{
	/* a master that ranks again (one upgraded back) is asked again */
	if (r->no_ranking)
		mc_info("the master ranks eviction candidates again: asking it first");
	r->no_ranking = false;
	r->ask = fn;
	r->ask_arg = arg;
}

/* ---- the passes ---- */

static void
pass_end(struct rtier *t)
{
	struct medium *m = t->r->ix->media[t->tier];

	if (t->draining && medium_capacity(m) > 0) {
		double occ = (double)staying(t->r, t->tier) / (double)medium_capacity(m);

		if (occ < t->occupancy_min)
			t->occupancy_min = occ;
	}
	t->draining = t->full = t->stalled = false;
	t->target = UINT64_MAX;
	t->pass_asked = false;
	plan_drop(t);
}

/*
 * How long a pass that could free nothing rests: RECLAIM_IDLE_MS, or
 * when young copies held it up, until the first of them ages (looking
 * again every RECLAIM_YOUNG_RECHECK_MS at most).
 */
static uint64_t
idle_ms(const struct rtier *t)
{
	uint64_t now = mc_now_ms(), wait;

	if (t->young.kept == 0 || t->young.until == UINT64_MAX)
		return RECLAIM_IDLE_MS;
	wait = t->young.until > now ? t->young.until - now : 0;
	if (wait < RECLAIM_IDLE_MS)
		return RECLAIM_IDLE_MS;
	return wait < RECLAIM_YOUNG_RECHECK_MS ? wait : RECLAIM_YOUNG_RECHECK_MS;
}

/* One turn of tier's pass; true when it wants the next turn at once. */
static bool
tier_turn(struct reclaimer *r, struct rtier *t)
{
	int budget = RECLAIM_SLICE;
	uint64_t need;

	if (!reclaimer_self_evicts(r, t->tier))
		return false;
	if (!t->draining) {
		struct mc_band band;

		reclaimer_band(r, t->tier, &band);
		if (!t->full && staying(r, t->tier) <= band.high)
			return false;
		t->draining = true;
	}
	if ((need = reclaimer_need(r, t->tier)) == 0) {
		pass_end(t);
		return false;
	}
	if (t->idle || t->waiting_first)
		return false;
	if (ranking(r)) {
		ranked_step(r, t, &budget);
		if ((need = reclaimer_need(r, t->tier)) == 0) {
			pass_end(t);
			return false;
		}
		if (t->rkpos == t->nrk) {
			ask(r, t, need);
			/* an answer at hand already (one kept by the link) goes first too */
			ranked_step(r, t, &budget);
		}
		if (t->waiting_first)
			return false;
	}
	if (budget > 0 && !t->planned && !plan_make(r, t, need)) {
		t->idle = true;
	} else if (budget > 0) {
		plan_step(r, t, &budget);
	}
	if (reclaimer_need(r, t->tier) == 0) {
		pass_end(t);
		return false;
	}
	if (t->idle) {
		struct timeval tv = mc_ms_timeval(idle_ms(t));

		evtimer_add(t->timer, &tv);
		return false;
	}
	return true;
}

static void
run_cb(evutil_socket_t fd, short what, void *arg)
{
	struct reclaimer *r = arg;
	bool again = false;

	(void)fd;
	(void)what;
	for (int i = 0; i < r->ntiers; i++)
		again |= tier_turn(r, &r->t[r->order[i]]);
	if (again)
		event_active(r->run_ev, EV_TIMEOUT, 0);
}

/* The first answer's wait ran out, or an idle tier may plan again. */
static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rtier *t = arg;

	(void)fd;
	(void)what;
	t->waiting_first = false;
	t->idle = false;
	event_active(t->r->run_ev, EV_TIMEOUT, 0);
}

void
reclaimer_room(struct reclaimer *r, int tier, uint64_t bytes, uint64_t used)
{
	uint64_t cap, here, held, coming, target;

	if (r == NULL || tier < 0 || tier >= MC_TIER_COUNT || !reclaimer_self_evicts(r, tier))
		return;
	cap = medium_capacity(r->ix->media[tier]);
	/*
	 * What the master counts here too: every copy the medium holds but
	 * the dropped ones readers still hold, whose notices have gone.
	 * Copies moving out count on both sides until their notices land;
	 * leaving them out of this side only would count them as coming,
	 * and each request again while they move would drain the tier
	 * further.
	 */
	here = medium_used(r->ix->media[tier]);
	held = pindex_held(r->ix, tier);
	here = here > held ? here - held : 0;
	/* what the master counts beyond that: copies on their way in */
	coming = used > here ? used - here : 0;
	target = cap > mc_add_sat(coming, bytes) ? cap - mc_add_sat(coming, bytes) : 0;
	/* the same request again asks nothing more: its target is where it was */
	if (target < r->t[tier].target)
		r->t[tier].target = target;
	reclaimer_kick(r, tier, true);
}

void
reclaimer_kick(struct reclaimer *r, int tier, bool full)
{
	if (r == NULL)
		return;
	if (full && tier >= 0 && tier < MC_TIER_COUNT) {
		struct rtier *t = &r->t[tier];

		t->full = true;
		/* resting behind young copies: the write that waits may have them now */
		if (t->idle && !t->waiting_first && t->young.kept > 0) {
			t->idle = false;
			evtimer_del(t->timer);
		}
	}
	event_active(r->run_ev, EV_TIMEOUT, 0);
}

void
reclaimer_candidate(struct reclaimer *r, int tier)
{
	struct rtier *t;

	if (r == NULL || tier < 0 || tier >= MC_TIER_COUNT)
		return;
	t = &r->t[tier];
	if (!t->draining || !t->idle || t->waiting_first)
		return;
	t->idle = false;
	evtimer_del(t->timer);
	event_active(r->run_ev, EV_TIMEOUT, 0);
}

struct reclaimer *
reclaimer_new(struct event_base *base, struct pool *pl, struct mover *mv,
	      const struct reclaim_conf *conf, struct mc_err *err)
{
	struct reclaimer *r = calloc(1, sizeof(*r));

	if (!r) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the eviction worker");
		return NULL;
	}
	r->base = base;
	r->pl = pl;
	r->ix = pl->ix;
	r->mv = mv;
	r->conf = *conf;
	if (!(r->run_ev = event_new(base, -1, 0, run_cb, r)))
		goto fail;
	for (int i = 0; i < MC_TIER_COUNT; i++) {
		r->t[i].r = r;
		r->t[i].tier = i;
		r->t[i].occupancy_min = 1;
		r->t[i].target = UINT64_MAX;
		mc_young_tally_init(&r->t[i].young);
		r->t[i].drops = mc_tier_downstream(i) == MC_TIER_NONE ||
				r->ix->media[mc_tier_downstream(i)] == NULL;
		if (!(r->t[i].timer = evtimer_new(base, timer_cb, &r->t[i])))
			goto fail;
		if (r->ix->media[i])
			r->order[r->ntiers++] = i;
	}
	/* the bottom of the chain first: what moves down finds room there */
	for (int i = 1; i < r->ntiers; i++)
		for (int j = i; j > 0 && height(r->order[j]) < height(r->order[j - 1]); j--) {
			int x = r->order[j];

			r->order[j] = r->order[j - 1];
			r->order[j - 1] = x;
		}
	return r;
fail:
	reclaimer_free(r);
	mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the eviction worker");
	return NULL;
}

void
reclaimer_free(struct reclaimer *r)
{
	if (!r)
		return;
	for (int i = 0; i < MC_TIER_COUNT; i++) {
		plan_drop(&r->t[i]);
		ranked_clear(&r->t[i]);
		if (r->t[i].timer)
			event_free(r->t[i].timer);
	}
	if (r->run_ev)
		event_free(r->run_ev);
	free(r);
}
