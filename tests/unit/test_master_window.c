/*
 * Unit tests for a tier's round's window (cmd/mc-master/candidates.c
 * candidates_begin_window, recency.c's probation and orphan orders,
 * evict_jobs.c evict_job_build and evict_job_regrow): the view of a tier
 * of many objects holds the window's records, the coldest, not one that
 * was just read; the probationers beyond the share are in it, marked as
 * the full view's segment marks them; orphans are in it until their
 * parent comes back; a group comes whole; a plan short of its target
 * grows the window; and a round plans the same victims from the window
 * as from the full view when the window covers the policy's choice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/planexec.h"
#include "mc/planner.h"
#include "candidates.h"
#include "evict_jobs.h"
#include "master.h"
#include "peers.h"
#include "recency.h"
#include "start.h"
#include "store.h"
#include "tap.h"

#define NOW 1700000000000ull
#define SIZE 100u

static struct master m;
static struct evictor ev;
static struct peer *pa;

static struct peer *
peer(uint64_t cap)
{
	struct mc_err err;
	struct peer *p = peers_add(m.peers, &err);

	snprintf(p->addr, sizeof(p->addr), "unix:/peer-%u", p->id);
	p->heard = mc_mono_ms();
	p->tiers[MC_TIER_DRAM] = (struct peer_tier){ .capacity = cap, .present = true };
	return p;
}

static struct mobj *
find(const char *key)
{
	size_t len = strlen(key);

	return store_find(m.store, store_key_hash(0, key, len), 0, key, len);
}

/* key with one complete copy on pa's dram, naming parent (NULL: none), as a commit leaves it. */
static struct mobj *
obj_in(const char *key, const char *parent, const char *group)
{
	struct mc_err err;
	size_t len = strlen(key);
	struct mobj *o = store_create(m.store, store_key_hash(0, key, len), 0, key, len, SIZE,
				      group, group != NULL ? strlen(group) : 0, &err);
	struct mrep *r;

	o->version = 1;
	store_access_new(m.store, o,
			 parent != NULL ? store_key_hash(0, parent, strlen(parent)) : 0);
	r = store_rep_add(o);
	r->peer = pa->id;
	r->tier = MC_TIER_DRAM;
	r->version = 1;
	r->state = REP_COMPLETE;
	recency_sync(&m.store->rank, o);
	pa->tiers[MC_TIER_DRAM].used += SIZE;
	return o;
}

static struct mobj *
obj(const char *fmt, unsigned i)
{
	char key[64];

	snprintf(key, sizeof(key), fmt, i);
	return obj_in(key, NULL, NULL);
}

static void
drop(struct mobj *o)
{
	pa->tiers[MC_TIER_DRAM].used -= SIZE;
	store_destroy(m.store, o);
}

static const struct cand_filter tier_filter = { .by_peer = true, .by_tier = true, .peer = 1 };

static bool
finish(struct cand_build *b, struct mc_cand_view *v, bool *cut)
{
	struct cand_caps caps = { 0 };
	struct mc_err err;
	int rc;

	while ((rc = candidates_step(b, 100, &err)) == 1)
		;
	if (cut != NULL)
		*cut = candidates_window_cut(b);
	rc = rc == 0 && candidates_caps(b, &caps, &err) == 0 &&
			     candidates_segment(v, &caps, &err) == 0
		     ? 0
		     : -1;
	caps_free(&caps);
	candidates_end(b);
	return rc == 0;
}

static bool
window_view(size_t window, struct mc_cand_view *v, bool *cut)
{
	struct mc_err err;
	struct cand_build *b;

	mc_cand_view_init(v);
	b = candidates_begin_window(&m, &tier_filter, v, window, &err);
	return b != NULL && finish(b, v, cut);
}

static bool
full_view(struct mc_cand_view *v)
{
	struct mc_err err;
	struct cand_build *b;

	mc_cand_view_init(v);
	b = candidates_begin(&m, &tier_filter, v, &err);
	return b != NULL && finish(b, v, NULL);
}

/* key's record in v, or NULL. */
static const struct mc_cand *
rec(const struct mc_cand_view *v, const char *key)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->c[i].key_len == strlen(key) &&
		    memcmp(mc_cand_key(v, &v->c[i]), key, v->c[i].key_len) == 0)
			return &v->c[i];
	return NULL;
}

/* key is not in v, or is without flag (the worth phase may bring in any copy). */
static bool
not_flagged(const struct mc_cand_view *v, const char *key, uint32_t flag)
{
	const struct mc_cand *c = rec(v, key);

	return c == NULL || (c->flags & flag) == 0;
}

static bool
has_keys(const struct mc_cand_view *v, const char *fmt, unsigned from, unsigned to)
{
	char key[64];

	for (unsigned i = from; i < to; i++) {
		snprintf(key, sizeof(key), fmt, i);
		if (rec(v, key) == NULL)
			return false;
	}
	return true;
}

static size_t
count_flag(const struct mc_cand_view *v, uint32_t flag)
{
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++)
		n += (v->c[i].flags & flag) != 0;
	return n;
}

static int
by_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted keys of v's records marked flag, joined by spaces, in buf. */
static const char *
flagged(const struct mc_cand_view *v, uint32_t flag, char *buf, size_t cap)
{
	char **k = calloc(v->n + 1, sizeof(*k));
	size_t n = 0, at = 0;

	for (size_t i = 0; i < v->n; i++)
		if (v->c[i].flags & flag)
			k[n++] = strndup(mc_cand_key(v, &v->c[i]), v->c[i].key_len);
	qsort(k, n, sizeof(*k), by_key);
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (at + strlen(k[i]) + 2 < cap)
			at += (size_t)snprintf(buf + at, cap - at, "%s ", k[i]);
		free(k[i]);
	}
	free(k);
	return buf;
}

/* The sorted keys of a plan's victims, joined by spaces. */
static char *
victims(const struct mc_plan *p)
{
	size_t n = 0, at = 0, len = 1;
	char **k;
	char *out;

	for (size_t s = 0; s < p->nstages; s++)
		n += p->stages[s].nvictims;
	k = calloc(n + 1, sizeof(*k));
	for (size_t s = 0, i = 0; s < p->nstages; s++)
		for (size_t x = 0; x < p->stages[s].nvictims; x++, i++) {
			const struct mc_cand *c = &p->view.c[p->stages[s].victims[x]];

			k[i] = strndup(mc_cand_key(&p->view, c), c->key_len);
			len += c->key_len + 1;
		}
	qsort(k, n, sizeof(*k), by_key);
	out = calloc(1, len);
	for (size_t i = 0; i < n; i++) {
		at += (size_t)sprintf(out + at, "%s ", k[i]);
		free(k[i]);
	}
	free(k);
	return out;
}

static int
plan(const struct mc_policy *pol, struct mc_cand_view *v, uint64_t target, struct mc_plan *out)
{
	struct mc_plan_params pp = { .target = target, .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND };
	struct mc_err err;

	return mc_planner_run(pol, v, &pp, out, NULL, &err);
}

static uint64_t
planned_bytes(const struct job *j)
{
	uint64_t sum = 0;

	for (size_t i = 0; j->planned != NULL && i < j->plan.nstages; i++)
		sum += j->planned[i];
	return sum;
}

/* A tier's round as evict_exec.c runs one, up to its plan: its view (grown when short) and plan. */
static struct job *
round_plan(const struct mc_policy *pol, uint64_t target, unsigned *builds)
{
	struct job *j = evict_job_new(&m, TRIG_WATERMARK);
	struct mc_err err;
	bool failed;

	j->scope = SCOPE_TIER;
	j->filter = tier_filter;
	j->target = target;
	*builds = 0;
	if (evict_job_build(&m, j, &err) != 0)
		return j;
	do {
		int rc;

		(*builds)++;
		while ((rc = candidates_step(j->build, 100, &err)) == 1)
			;
		j->window_cut = candidates_window_cut(j->build);
		candidates_end(j->build);
		j->build = NULL;
		if (plan(pol, &j->view, target, &j->plan) != 0)
			break;
		j->have_plan = true;
		j->planned = mc_plan_exec_planned(&j->plan);
	} while (evict_job_regrow(&m, j, &err, &failed) && !failed);
	return j;
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	struct event_base *base = event_base_new();
	struct mc_cand_view v, w;
	struct mc_policy pol;
	struct mc_err err;
	uint64_t copies;
	size_t window;
	char a[4096], b[4096];
	bool cut;

	m.ev = &ev;
	mc_clock_set_fake(NOW);
	master_defaults(&m.cfg);
	TAP_OK(store_init(m.store, &err) == 0 && peers_init(m.peers, base, m.store, &err) == 0 &&
		       mc_policy_builtin(&pol, &err) == 0,
	       "a master's store, peer table and built-in policy");
	pa = peer(1ull << 30);

	/* ---- the window: the coldest copies, O(window) of them ---- */
	for (unsigned i = 0; i < 5000; i++)
		obj("cold-%04u", i);
	window = candidates_window_size(&m, pa->id, MC_TIER_DRAM, 10 * SIZE, &copies);
	TAP_OK(copies == 5000 && window == MC_PLAN_WINDOW_MIN,
	       "size: ten copies' need over 5000 copies is the least window (%zu)", window);
	TAP_OK(window_view(window, &v, &cut) && v.n == window && cut,
	       "window: a tier of 5000 copies gives a view of the window's %zu records, cut short",
	       v.n);
	TAP_OK(has_keys(&v, "cold-%04u", 0, (unsigned)window) && rec(&v, "cold-1024") == NULL,
	       "window: the coldest copies are the ones it holds");
	mc_cand_view_free(&v);
	store_read(m.store, find("cold-0000"));
	TAP_OK(window_view(window, &v, NULL) && rec(&v, "cold-0000") == NULL &&
		       rec(&v, "cold-1024") != NULL,
	       "window: a copy just read leaves the cold end, the next one comes in");
	mc_cand_view_free(&v);
	TAP_OK(window_view(6000, &v, &cut) && v.n == 5000 && !cut,
	       "window: one bigger than the tier holds every copy and is not cut");
	TAP_OK(full_view(&w) && w.n == v.n,
	       "window: over the whole tier it holds what the full view holds");
	mc_cand_view_free(&v);
	mc_cand_view_free(&w);

	/* ---- the same victims as the full view ---- */
	for (unsigned i = 1000; i < 5000; i += 7)
		store_read(m.store, find((snprintf(a, sizeof(a), "cold-%04u", i), a)));
	{
		struct mc_plan pf, pw;
		char *vf, *vw;

		TAP_OK(full_view(&v) && window_view(window, &w, NULL) &&
			       plan(&pol, &v, 20 * SIZE, &pf) == 0 &&
			       plan(&pol, &w, 20 * SIZE, &pw) == 0,
		       "plan: a round's target planned over the full view and over the window");
		vf = victims(&pf);
		vw = victims(&pw);
		TAP_OK(strlen(vf) > 0 && strcmp(vf, vw) == 0,
		       "plan: the window's victims are the full view's (%.40s...)", vf);
		free(vf);
		free(vw);
		mc_plan_free(&pf);
		mc_plan_free(&pw);
		mc_cand_view_free(&v);
		mc_cand_view_free(&w);
	}

	/* ---- probationers beyond the share, marked as the segment marks them ---- */
	for (unsigned i = 0; i < 5000; i++)
		store_read(m.store, find((snprintf(a, sizeof(a), "cold-%04u", i), a)));
	for (unsigned i = 0; i < 100; i++)
		obj("prob-%03u", i);
	/* warm, yet still on probation: a peer's local reads move recency only */
	for (unsigned i = 0; i < 100; i++)
		store_touch(m.store, find((snprintf(a, sizeof(a), "prob-%03u", i), a)));
	/* a share of 50 copies: the oldest 50 are beyond it */
	pa->tiers[MC_TIER_DRAM].capacity = (uint64_t)(100 * SIZE / MC_HISTORY_PROBATION / 2);
	TAP_OK(window_view(window, &v, NULL) && full_view(&w),
	       "probation: the window and the full view of a tier with 100 warm probationers");
	TAP_OK(has_keys(&v, "prob-%03u", 0, 50) && not_flagged(&v, "prob-050", MC_CAND_PROBATION) &&
		       count_flag(&v, MC_CAND_PROBATION) == 50,
	       "probation: the window holds the 50 beyond the share, and marks only those");
	flagged(&v, MC_CAND_PROBATION, a, sizeof(a));
	flagged(&w, MC_CAND_PROBATION, b, sizeof(b));
	TAP_OK(strcmp(a, b) == 0,
	       "probation: the same probationers as the full view's segment marks");
	mc_cand_view_free(&v);
	mc_cand_view_free(&w);
	store_read(m.store, find("prob-000"));
	TAP_OK(window_view(window, &v, NULL) && not_flagged(&v, "prob-000", MC_CAND_PROBATION) &&
		       not_flagged(&v, "prob-050", MC_CAND_PROBATION) &&
		       count_flag(&v, MC_CAND_PROBATION) == 49,
	       "probation: one read leaves probation; the share keeps the rest");
	mc_cand_view_free(&v);
	pa->tiers[MC_TIER_DRAM].capacity = 1ull << 30;

	/* ---- orphans ---- */
	{
		struct mobj *par = obj_in("parent", NULL, NULL);

		for (unsigned i = 0; i < 10; i++) {
			snprintf(a, sizeof(a), "kid-%u", i);
			obj_in(a, "parent", NULL);
		}
		obj_in("lost", "never-cached", NULL);
		TAP_OK(window_view(window, &v, NULL) && not_flagged(&v, "kid-0", MC_CAND_ORPHAN) &&
			       rec(&v, "lost") != NULL && count_flag(&v, MC_CAND_ORPHAN) == 1,
		       "orphans: a warm block whose parent was never cached is in the window");
		mc_cand_view_free(&v);
		drop(par);
		TAP_OK(window_view(window, &v, NULL) && has_keys(&v, "kid-%u", 0, 10) &&
			       count_flag(&v, MC_CAND_ORPHAN) == 11 && find("kid-3")->orphan,
		       "orphans: its parent gone, every warm child is in the window, an orphan");
		mc_cand_view_free(&v);
		obj_in("parent", NULL, NULL);
		TAP_OK(window_view(window, &v, NULL) && not_flagged(&v, "kid-0", MC_CAND_ORPHAN) &&
			       !find("kid-3")->orphan && count_flag(&v, MC_CAND_ORPHAN) == 1,
		       "orphans: the parent written again, its children are orphans no more");
		mc_cand_view_free(&v);
		drop(find("kid-4"));
		drop(find("parent"));
		TAP_OK(find("kid-5")->orphan && !find("cold-0001")->orphan,
		       "orphans: a child freed leaves its family, the others still hear of their "
		       "parent");
	}

	/* ---- a restore rebuilds the orders and the orphan bits ---- */
	{
		const struct rank_list *l = recency_list(&m.store->rank, pa->id, MC_TIER_DRAM);
		uint64_t pbytes = l->probation_bytes;
		size_t families = m.store->rank.families.count;
		char before_o[4096], before_p[4096];
		struct mobj *o = find("prob-060");

		store_resize(m.store, o, 3 * SIZE);
		TAP_OK(l->probation_bytes == pbytes + 2 * SIZE,
		       "resize: a probationer's new size is in its tier's probation bytes");
		store_resize(m.store, o, SIZE);
		pa->tiers[MC_TIER_DRAM].capacity =
			(uint64_t)(100 * SIZE / MC_HISTORY_PROBATION / 2);
		window_view(window, &v, NULL);
		flagged(&v, MC_CAND_ORPHAN, before_o, sizeof(before_o));
		flagged(&v, MC_CAND_PROBATION, before_p, sizeof(before_p));
		mc_cand_view_free(&v);
		TAP_OK(recency_rebuild(&m.store->rank, &m.store->objects) == 0,
		       "restore: the index rebuilt from the objects");
		l = recency_list(&m.store->rank, pa->id, MC_TIER_DRAM);
		TAP_OK(l != NULL && l->probation_bytes == pbytes &&
			       m.store->rank.families.count == families && find("kid-5")->orphan,
		       "restore: the probation bytes, the families and the orphan bits come back");
		window_view(window, &v, NULL);
		TAP_OK(strcmp(flagged(&v, MC_CAND_ORPHAN, a, sizeof(a)), before_o) == 0 &&
			       strcmp(flagged(&v, MC_CAND_PROBATION, b, sizeof(b)), before_p) ==
				       0 &&
			       strlen(before_o) > 0 && strlen(before_p) > 0,
		       "restore: the window finds the same orphans and probationers");
		mc_cand_view_free(&v);
		pa->tiers[MC_TIER_DRAM].capacity = 1ull << 30;
	}

	/* ---- groups come whole ---- */
	{
		obj_in("g-old", NULL, "grp");
		for (unsigned i = 0; i < 1100; i++)
			obj("filler-%04u", i);
		obj_in("g-new", NULL, "grp");
		for (unsigned i = 0; i < 5000; i++)
			store_read(m.store, find((snprintf(a, sizeof(a), "cold-%04u", i), a)));
		TAP_OK(window_view(window, &v, NULL) && rec(&v, "g-old") != NULL &&
			       rec(&v, "g-new") != NULL && rec(&v, "filler-1099") == NULL,
		       "groups: a cold member brings its warm group with it");
		mc_cand_view_free(&v);
	}

	/* ---- a short window grows ---- */
	{
		struct job *j;
		unsigned builds;
		char *vj;

		/* the coldest 1100 copies are leased: the least window finds no victim */
		{
			struct recency *r = &m.store->rank;
			const struct rank_list *l = recency_list(r, pa->id, MC_TIER_DRAM);
			uint32_t n = 0;

			for (unsigned i = 0; i < 1100 && (n = recency_next(r, l, n)) != 0; i++)
				r->nodes[n].o->lease_deadline = NOW + 60000;
		}
		j = round_plan(&pol, 10 * SIZE, &builds);
		TAP_OK(j->window_grown == 1 && builds == 2 && j->window == 2 * MC_PLAN_WINDOW_MIN,
		       "grow: a plan short over the least window is made again over twice it "
		       "(%u builds, window %zu)",
		       builds, j->window);
		vj = victims(&j->plan);
		{
			bool free_ones = planned_bytes(j) >= 10 * SIZE;

			for (char *k = strtok(vj, " "); k != NULL; k = strtok(NULL, " "))
				free_ones = free_ones && find(k)->lease_deadline <= NOW;
			TAP_OK(free_ones, "grow: the bigger window's plan meets the target with "
					  "copies past the leased ones");
		}
		free(vj);
		evict_job_free(j);
		j = round_plan(&pol, 1ull << 40, &builds);
		TAP_OK(j->window == j->window_copies && !j->window_cut,
		       "grow: a target no window can meet grows it to the whole tier, then stops "
		       "(%u builds)",
		       builds);
		evict_job_free(j);
	}

	/* ---- the copies of lowest worth, read lately, are in the window ---- */
	{
		struct peer *pb = peer(1ull << 30);
		struct cand_filter fb = { .by_peer = true, .by_tier = true, .peer = pb->id };
		struct mc_cand_view wv, fv;
		struct cand_build *bw, *bf;
		struct mc_plan pf, pw;
		char *vf, *vw;

		pa = pb;
		/*
		 * A chain head written first and never read, 3000 copies read
		 * since, then 100 blocks under that head, read last: the warmest
		 * copies, worth least (each capped below its parent, which was
		 * worth little by then), whatever the half-life; all of type kv,
		 * which the built-in policy ranks by worth.
		 */
		int64_t kv = store_type_intern(m.store, "kv", 2, &err);

		obj_in("anc", NULL, NULL)->type = (uint16_t)kv;
		for (unsigned i = 0; i < 3000; i++) {
			struct mobj *o = obj("hot-%04u", i);

			o->type = (uint16_t)kv;
			store_read(m.store, o);
		}
		for (unsigned i = 0; i < 100; i++) {
			struct mobj *o =
				obj_in((snprintf(a, sizeof(a), "late-%03u", i), a), "anc", NULL);

			o->type = (uint16_t)kv;
			store_read(m.store, o);
		}
		window = candidates_window_size(&m, pb->id, MC_TIER_DRAM, 20 * SIZE, &copies);
		mc_cand_view_init(&wv);
		mc_cand_view_init(&fv);
		bw = candidates_begin_window(&m, &fb, &wv, window, &err);
		bf = candidates_begin(&m, &fb, &fv, &err);
		TAP_OK(bw != NULL && finish(bw, &wv, NULL) && bf != NULL && finish(bf, &fv, NULL) &&
			       window < copies && has_keys(&wv, "late-%03u", 0, 100),
		       "worth: the window of %zu of %llu copies holds the 100 warm ones worth "
		       "least",
		       window, (unsigned long long)copies);
		TAP_OK(plan(&pol, &fv, 20 * SIZE, &pf) == 0 && plan(&pol, &wv, 20 * SIZE, &pw) == 0,
		       "worth: a round's target planned over the full view and the window");
		vf = victims(&pf);
		vw = victims(&pw);
		TAP_OK(strncmp(vf, "late-", 5) == 0 && strcmp(vf, vw) == 0,
		       "worth: the window's victims are the full view's, the late ones (%.40s...)",
		       vw);
		free(vf);
		free(vw);
		mc_plan_free(&pf);
		mc_plan_free(&pw);
		mc_cand_view_free(&wv);
		mc_cand_view_free(&fv);
	}

	mc_policy_free(&pol);
	peers_free(m.peers);
	store_free(m.store);
	event_base_free(base);
	return tap_done();
}
