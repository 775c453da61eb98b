/*
 * mc-bench sim: a policy evaluated offline, without a cluster.
 *
 * The trace is replayed the way mc-bench replay drives a live cluster
 * (look up a request's blocks, read the leading run found, write the
 * blocks it lacks) into a model of one peer tier of --capacity payload
 * bytes evicting in a band (mc/band.h): once a write leaves the tier
 * above the band's high end a round frees it down to its low end, and a
 * write that does not fit first frees what it needs down to the low end.
 * The band is the daemons' headroom, recomputed from the tier's live
 * copies and bytes as it changes (no writes are in flight here), or the
 * watermarks of --high/--low. mc's policy runs as the master runs it:
 * the same candidate view, planner, rankers and plan execution (libmc),
 * over the model's objects with the master's logical access sequence; a
 * round plans over a window of the tier (mc/planner.h): its coldest
 * copies, from the model's access order, and its copies of lowest
 * decayed worth, from its worth order (mc/worder.h), or with
 * --whole-view over every copy. Beside it, in the same run, the reference policies
 * (mc/refcache.h), each evicting on demand at full capacity as an
 * engine's prefix cache does, and Belady's OPT. Occupancy (used over
 * capacity) is sampled after every request from the first eviction on.
 *
 * --peers N splits the capacity over N peer tiers, each block on the
 * one its hash picks. --eviction-mode says who evicts them: master (the
 * default, as above) runs each peer tier's round over the master's
 * global view, whose history, sequence and chains span every peer;
 * local has every peer evict for itself the moment its tier crosses
 * its high watermark, with the same policy over a view of only what it
 * holds: its own history of its keys, its own access sequence, and
 * chains only as far as their blocks are on it (a parent it does not
 * hold adds nothing to a block's worth, and makes no orphan: it may be
 * on another peer).
 * Everything else (placement, the trace's order) is the same.
 *
 * "Gap closed" is (policy - LRU) / (OPT - LRU) over prefix hit ratios
 * for the policy and LRU, with OPT's block hit ratio as the ceiling:
 * OPT counts a hit on every block, prefix or not, so the ceiling is an
 * upper bound and the gap closed an underestimate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/tool.h"
#include "mc/band.h"
#include "mc/candidates.h"
#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/err.h"
#include "mc/hash.h"
#include "mc/history.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/planexec.h"
#include "mc/planner.h"
#include "mc/policy.h"
#include "mc/refcache.h"
#include "mc/tier.h"
#include "mc/worder.h"

#include "bench.h"
#include "trace.h"

/* ---- the trace in memory ---- */

struct sim_req {
	size_t first, n;       /* into ids */
	uint32_t tenant, type; /* into names */
	uint64_t timestamp;
};

struct sim_trace {
	uint64_t *ids;
	size_t nids, ids_cap;
	struct sim_req *req;
	size_t nreq, req_cap;
	char **names; /* tenants and types, interned */
	size_t nnames;
	uint64_t unique;
};

static uint32_t
intern(struct sim_trace *st, const char *s)
{
	for (size_t i = 0; i < st->nnames; i++)
		if (strcmp(st->names[i], s) == 0)
			return (uint32_t)i;
	char **v = realloc(st->names, (st->nnames + 1) * sizeof(*v));

	if (v == NULL || (v[st->nnames] = strdup(s)) == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	st->names = v;
	return (uint32_t)st->nnames++;
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct ids of the trace: a sorted copy, counted. */
static uint64_t
count_unique(const uint64_t *ids, size_t n)
{
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v)), u = 0;

	if (v == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory for the trace");
	memcpy(v, ids, n * sizeof(*v));
	qsort(v, n, sizeof(*v), u64_cmp);
	for (size_t i = 0; i < n; i++)
		u += i == 0 || v[i] != v[i - 1];
	free(v);
	return u;
}

static uint64_t
id_hash(uint64_t id)
{
	return mc_hash64(&id, sizeof(id), 0x73696dull);
}

static void
load_trace(struct sim_trace *st, const char *path, const struct bench_opts *o)
{
	struct trace_req rq = { 0 };
	struct trace t;
	struct mc_err err;
	int got;

	memset(st, 0, sizeof(*st));
	if (trace_open(&t, path, &err) < 0)
		mc_die(MC_EXIT_USAGE, "%s", err.msg);
	while ((got = trace_next(&t, &rq, &err)) == 1) {
		struct sim_req *r;

		if (o->limit && st->nreq >= o->limit)
			break;
		if (st->nreq == st->req_cap) {
			st->req_cap = st->req_cap ? st->req_cap * 2 : 4096;
			st->req = realloc(st->req, st->req_cap * sizeof(*st->req));
		}
		while (st->nids + rq.n > st->ids_cap) {
			st->ids_cap = st->ids_cap ? st->ids_cap * 2 : 65536;
			st->ids = realloc(st->ids, st->ids_cap * sizeof(*st->ids));
		}
		if (st->req == NULL || st->ids == NULL)
			mc_die(MC_EXIT_SOFTWARE, "out of memory for the trace");
		r = &st->req[st->nreq++];
		r->first = st->nids;
		r->n = rq.n;
		r->timestamp = rq.timestamp;
		r->tenant = intern(st, rq.tenant[0] != '\0' ? rq.tenant : mc_tool_tenant());
		r->type = intern(st, rq.type[0] != '\0' ? rq.type : "kv");
		memcpy(st->ids + st->nids, rq.ids, rq.n * sizeof(*rq.ids));
		st->nids += rq.n;
	}
	if (got < 0)
		mc_die(MC_EXIT_DATAERR, "%s", err.msg);
	st->unique = count_unique(st->ids, st->nids);
	trace_close(&t);
	trace_req_free(&rq);
}

static void
free_trace(struct sim_trace *st)
{
	for (size_t i = 0; i < st->nnames; i++)
		free(st->names[i]);
	free(st->names);
	free(st->ids);
	free(st->req);
}

/* ---- a cache under the replay's access pattern ---- */

/* What the driver needs of a cache; the mc model and the reference policies both give it. */
struct sim_cache_ops {
	bool (*present)(void *c, uint64_t id);
	void (*access)(void *c, uint64_t id, const struct sim_req *r);
	/* parent: the block before it in its request (has_parent false for the first) */
	int (*insert)(void *c, uint64_t id, bool has_parent, uint64_t parent, uint64_t size,
		      const struct sim_req *r, struct mc_err *err);
	/* the bytes the cache holds now, and whether it has evicted anything yet */
	uint64_t (*used)(void *c, bool *evicted);
};

struct sim_result {
	char name[64];
	uint64_t blocks, prefix_hits, found, writes;
	uint64_t evictions, rounds;
	/* occupancy (used / capacity) after each request from the first eviction on */
	double occ_sum, occ_min;
	uint64_t occ_n;
	double seconds;
};

static double
mean_occupancy(const struct sim_result *res)
{
	return res->occ_n > 0 ? res->occ_sum / (double)res->occ_n : 0;
}

static double
min_occupancy(const struct sim_result *res)
{
	return res->occ_n > 0 ? res->occ_min : 0;
}

/* Replay the trace into c, a cache of capacity bytes. */
static int
drive(const struct sim_trace *st, uint64_t block, uint64_t capacity,
      const struct sim_cache_ops *ops, void *c, struct sim_result *res, struct mc_err *err)
{
	uint64_t t0 = mc_mono_ns();

	for (size_t q = 0; q < st->nreq; q++) {
		const struct sim_req *r = &st->req[q];
		const uint64_t *ids = st->ids + r->first;
		size_t prefix = 0;
		bool filled;
		uint64_t used;

		/* the lookup: which blocks the cache holds, before anything changes */
		while (prefix < r->n && ops->present(c, ids[prefix]))
			prefix++;
		for (size_t i = 0; i < r->n; i++) {
			bool here = i < prefix || ops->present(c, ids[i]);

			res->found += here;
			if (i < prefix)
				ops->access(c, ids[i], r);
			else if (!here) {
				if (ops->insert(c, ids[i], i > 0, i > 0 ? ids[i - 1] : 0, block, r,
						err) < 0)
					return -1;
				res->writes++;
			}
		}
		res->blocks += r->n;
		res->prefix_hits += prefix;
		/* the tier has filled once it first evicted: from then on, how full it is */
		used = ops->used(c, &filled);
		if (filled && capacity > 0) {
			double occ = (double)used / (double)capacity;

			if (res->occ_n == 0 || occ < res->occ_min)
				res->occ_min = occ;
			res->occ_sum += occ;
			res->occ_n++;
		}
	}
	res->seconds = (double)(mc_mono_ns() - t0) / 1e9;
	return 0;
}

/* ---- mc's policy, as the master runs it ---- */

/* A link of one of the model's lists: slots, NIL at an end. */
#define NIL SIZE_MAX
struct slink {
	size_t prev, next;
};
struct slist {
	size_t head, tail; /* head: the coldest (or oldest) */
};

struct mobj {
	struct slink cold;  /* its tier's access order: coldest first */
	struct slink young; /* its tier's probationers, oldest first (while probation) */
	uint64_t mark;	    /* the round that last put it in a view */
	size_t vidx;	    /* and its record there */
	uint64_t id, bytes;
	uint64_t access_seq, created_seq;
	uint64_t access_count;
	double crf, worth; /* LRFU value and chain worth at access_seq (mc/history.h) */
	uint64_t parent;
	uint32_t tenant, type;
	uint32_t peer; /* of the model's peers */
	uint32_t children, depth;
	uint32_t wplace; /* its place in its tier's worth order */
	bool has_parent, probation;
	bool live;
};

struct mcmodel {
	const struct sim_trace *st;
	const struct mc_policy *pol;
	struct mc_htab by_id; /* struct mobj by id */
	struct mobj *objs;    /* a pool; freed slots on a list */
	size_t nobjs, cap;
	size_t *free_slots;
	size_t nfree, free_cap;
	/* per peer tier: the model holds npeers of them, each block on the one its hash picks */
	uint64_t capacity;
	bool marks;	  /* the watermark band (--high/--low), else the headroom band */
	double high, low; /* the watermarks, fractions of capacity */
	uint64_t *used, *copies;
	struct slist *cold, *young; /* per tier: access order, probationers */
	struct mc_worder *worth;    /* per tier: the copies by decayed worth */
	uint64_t *lowest;	    /* a round's lowest by worth */
	size_t lowest_cap;
	uint64_t *young_bytes; /* per tier: bytes on probation */
	bool whole_view;       /* plan over every copy (--whole-view), not a window */
	uint64_t mark;	       /* rounds so far, to mark a view's members */
	uint32_t npeers;
	bool peer_local;  /* one peer's own model (--eviction-mode local) */
	uint64_t seq;	  /* the logical access sequence, as the master keeps it */
	bool trace_clock; /* times in the view: the trace's, else the sequence */
	uint64_t now_ms;  /* the request's time */
	uint64_t evictions, rounds;
	uint64_t viewed;	 /* view records over every round */
	uint64_t regrown;	 /* plans made again over a grown window */
	struct mc_history *hist; /* ghosts and the half-life, as the master keeps them */
	struct mc_cand_view view;
	size_t *view_obj; /* per view record: its slot */
	size_t view_cap;
	uint32_t peer_name, tier_name;
};

static bool
obj_eq(const void *entry, const void *key)
{
	return ((const struct mobj *)entry)->id == *(const uint64_t *)key;
}

static struct mobj *
mc_find(const struct mcmodel *m, uint64_t id)
{
	return mc_htab_find(&m->by_id, id_hash(id), obj_eq, &id);
}

static uint32_t
peer_of(uint64_t id, uint32_t npeers)
{
	return (uint32_t)((id_hash(id) >> 17) % npeers);
}

static bool
mc_present(void *arg, uint64_t id)
{
	return mc_find(arg, id) != NULL;
}

/* ---- the model's lists: a tier's copies by access, and its probationers by creation ---- */

static struct slink *
link_of(struct mcmodel *m, size_t slot, bool young)
{
	return young ? &m->objs[slot].young : &m->objs[slot].cold;
}

static void
list_push(struct mcmodel *m, struct slist *l, size_t slot, bool young)
{
	struct slink *k = link_of(m, slot, young);

	k->prev = l->tail;
	k->next = NIL;
	if (l->tail != NIL)
		link_of(m, l->tail, young)->next = slot;
	else
		l->head = slot;
	l->tail = slot;
}

static void
list_del(struct mcmodel *m, struct slist *l, size_t slot, bool young)
{
	struct slink *k = link_of(m, slot, young);

	if (k->prev != NIL)
		link_of(m, k->prev, young)->next = k->next;
	else
		l->head = k->next;
	if (k->next != NIL)
		link_of(m, k->next, young)->prev = k->prev;
	else
		l->tail = k->prev;
	k->prev = k->next = NIL;
}

/* o leaves probation (read, or gone): out of its tier's list of probationers. */
static void
end_probation(struct mcmodel *m, struct mobj *o)
{
	size_t slot = (size_t)(o - m->objs);

	if (!o->probation)
		return;
	list_del(m, &m->young[o->peer], slot, true);
	m->young_bytes[o->peer] -= o->bytes;
	o->probation = false;
}

/*
 * The tier's band now: the watermarks, or the headroom of its live
 * copies and bytes (no writes are in flight in a simulation).
 */
static void
tier_band(const struct mcmodel *m, uint32_t peer, struct mc_band *b)
{
	if (m->marks)
		mc_band_marks(m->capacity, m->high, m->low, b);
	else
		mc_band_headroom(m->capacity, m->used[peer], m->copies[peer], b);
}

static uint32_t *
worth_place(void *arg, uint64_t slot)
{
	return &((struct mcmodel *)arg)->objs[slot].wplace;
}

static void
worth_of(void *arg, uint64_t slot, double *worth, uint64_t *access_seq)
{
	const struct mobj *o = &((struct mcmodel *)arg)->objs[slot];

	*worth = o->worth;
	*access_seq = o->access_seq;
}

static const struct mc_worder_ops worth_ops = { worth_place, worth_of };

/* o's worth after an access now (o->crf already updated), as the master keeps it. */
static int
set_worth(struct mcmodel *m, struct mobj *o)
{
	const struct mobj *p = o->has_parent ? mc_find(m, o->parent) : NULL;

	o->worth = mc_chain_worth(
		o->crf, p != NULL ? mc_lrfu_decay(p->worth, p->access_seq, m->seq,
						  mc_history_half_life(m->hist, m->by_id.count))
				  : -1);
	return mc_worder_set(&m->worth[o->peer], (uint32_t)(o - m->objs), o->worth, o->access_seq);
}

static void
mc_access(void *arg, uint64_t id, const struct sim_req *r)
{
	struct mcmodel *m = arg;
	struct mobj *o = mc_find(m, id);

	(void)r;
	if (o == NULL)
		return;
	m->seq++;
	o->crf = mc_lrfu_ref(o->crf, o->access_seq, m->seq,
			     mc_history_half_life(m->hist, m->by_id.count));
	o->access_seq = m->seq;
	if (set_worth(m, o) != 0)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	o->access_count++;
	end_probation(m, o);
	/* the warm end of its tier's order */
	list_del(m, &m->cold[o->peer], (size_t)(o - m->objs), false);
	list_push(m, &m->cold[o->peer], (size_t)(o - m->objs), false);
	mc_history_ref(m->hist, true, m->by_id.count);
	mc_history_read(m->hist, id_hash(id), m->by_id.count);
}

/* The model is one tier. */
static uint64_t
model_capacity(void *ctx, const struct mc_cand_view *v, const struct mc_cand *c)
{
	(void)v;
	(void)c;
	return ((const struct mcmodel *)ctx)->capacity;
}

static void
mc_drop(struct mcmodel *m, struct mobj *o)
{
	size_t slot = (size_t)(o - m->objs);

	mc_htab_remove(&m->by_id, id_hash(o->id), obj_eq, &o->id);
	/* its value outlives it, for a while */
	mc_history_evicted(m->hist, id_hash(o->id),
			   mc_lrfu_decay(o->crf, o->access_seq, m->seq,
					 mc_history_half_life(m->hist, m->by_id.count)),
			   o->probation, m->seq, m->by_id.count);
	if (o->has_parent) {
		struct mobj *p = mc_find(m, o->parent);

		if (p != NULL && p->children > 0)
			p->children--;
	}
	end_probation(m, o);
	list_del(m, &m->cold[o->peer], slot, false);
	mc_worder_remove(&m->worth[o->peer], (uint32_t)slot);
	m->used[o->peer] -= o->bytes;
	m->copies[o->peer]--;
	o->live = false;
	m->free_slots[m->nfree++] = slot;
	m->evictions++;
}

/* A milli-second stamp for the view: the trace's time, else the sequence itself. */
static uint64_t
stamp(const struct mcmodel *m, uint64_t seq)
{
	return m->trace_clock ? m->now_ms : seq;
}

/* A view record of the copy in slot, on probation or not as the caller found. */
static int
view_add(struct mcmodel *m, size_t slot, bool probation, double hl, struct mc_err *err)
{
	const struct mobj *o = &m->objs[slot];
	struct mc_cand c;
	char key[24];
	int64_t tn, ty;

	memset(&c, 0, sizeof(c));
	tn = mc_cand_name(&m->view, m->st->names[o->tenant], strlen(m->st->names[o->tenant]), err);
	ty = mc_cand_name(&m->view, m->st->names[o->type], strlen(m->st->names[o->type]), err);
	if (tn < 0 || ty < 0)
		return -1;
	c.version = 1;
	c.bytes = o->bytes;
	c.created = stamp(m, o->created_seq);
	c.last_access = stamp(m, o->access_seq);
	c.access_count = o->access_count;
	c.cost = -1;
	c.tenant = (uint32_t)tn;
	c.type = (uint32_t)ty;
	c.crf = mc_lrfu_decay(o->worth, o->access_seq, m->seq, hl);
	c.depth = o->depth;
	c.children = o->children;
	/*
	 * A peer evicting for itself sees only its own copies: a parent
	 * it does not hold may well be on another peer, so it cannot
	 * call the block an orphan. The master knows.
	 */
	if (o->has_parent && !m->peer_local && mc_find(m, o->parent) == NULL)
		c.flags |= MC_CAND_ORPHAN;
	if (probation)
		c.flags |= MC_CAND_PROBATION;
	c.peer = m->peer_name;
	c.tier = m->tier_name;
	c.access_seq = o->access_seq;
	c.created_seq = o->created_seq;
	snprintf(key, sizeof(key), "b%llu", (unsigned long long)o->id);
	if (m->view.n >= m->view_cap) {
		size_t ncap = m->view_cap ? m->view_cap * 2 : 1024;
		size_t *v = realloc(m->view_obj, ncap * sizeof(*v));

		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		m->view_obj = v;
		m->view_cap = ncap;
	}
	m->view_obj[m->view.n] = slot;
	m->objs[slot].mark = m->mark;
	m->objs[slot].vidx = m->view.n;
	return mc_cand_add(&m->view, &c, key, strlen(key), err);
}

/*
 * The view of a round on a peer's tier. Whole (--whole-view): every copy,
 * and the probationary segment applied to them all. A window of `window`
 * copies: the coldest that many by access, a share of that many of
 * lowest decayed worth (mc_plan_window_worth: read lately, perhaps, but
 * worth little, as a chain's tail under a cold head), and the oldest
 * probationers
 * past the segment (the newest up to the history's share of the
 * capacity are exempt, as mc_history_segment has it), at most that many
 * again; only those carry MC_CAND_PROBATION. Each copy is in it once.
 */
static int
build_view(struct mcmodel *m, uint32_t peer, size_t window, struct mc_err *err)
{
	double hl = mc_history_half_life(m->hist, m->by_id.count);

	mc_cand_view_free(&m->view);
	mc_cand_view_init(&m->view);
	int64_t pn = mc_cand_name(&m->view, "sim", 3, err);
	const char *dram = mc_tier_name(MC_TIER_DRAM);
	int64_t tn0 = mc_cand_name(&m->view, dram, strlen(dram), err);

	if (pn < 0 || tn0 < 0)
		return -1;
	m->peer_name = (uint32_t)pn;
	m->tier_name = (uint32_t)tn0;
	m->view.created = stamp(m, m->seq);
	m->view.seq = m->seq;
	m->mark++;
	if (m->whole_view) {
		for (size_t i = 0; i < m->nobjs; i++)
			if (m->objs[i].live && m->objs[i].peer == peer &&
			    view_add(m, i, m->objs[i].probation, hl, err) < 0)
				return -1;
		return mc_history_segment(&m->view, mc_history_probation(m->hist), model_capacity,
					  m, err);
	}
	uint64_t allow = (uint64_t)((double)m->capacity * mc_history_probation(m->hist));
	uint64_t young = m->young_bytes[peer];
	size_t n = 0, past = 0;

	/* the coldest and the lowest by worth at least: the records made once */
	if (mc_cand_view_reserve(&m->view, window + mc_plan_window_worth(window), err) != 0)
		return -1;

	long low;

	for (size_t i = m->cold[peer].head; i != NIL && n < window; i = m->objs[i].cold.next, n++)
		if (view_add(m, i, false, hl, err) < 0)
			return -1;
	/* the lowest by worth, wherever they are in the access order */
	size_t worth = mc_plan_window_worth(window);

	if (m->lowest_cap < worth) {
		uint64_t *v = realloc(m->lowest, worth * sizeof(*v));

		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		m->lowest = v;
		m->lowest_cap = worth;
	}
	if ((low = mc_worder_lowest(&m->worth[peer], hl, worth, m->lowest)) < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	for (long j = 0; j < low; j++)
		if (m->objs[m->lowest[j]].mark != m->mark &&
		    view_add(m, m->lowest[j], false, hl, err) < 0)
			return -1;
	/* the probationers past the segment: oldest first, while the newer ones outweigh it */
	for (size_t i = m->young[peer].head; i != NIL && young > allow && past < window;
	     i = m->objs[i].young.next, past++) {
		young -= m->objs[i].bytes;
		if (m->objs[i].mark == m->mark) {
			m->view.c[m->objs[i].vidx].flags |= MC_CAND_PROBATION;
			continue;
		}
		if (view_add(m, i, true, hl, err) < 0)
			return -1;
	}
	return 0;
}

/* The bytes a plan names, each victim once. */
static uint64_t
plan_bytes(const struct mcmodel *m, const struct mc_plan *plan)
{
	uint64_t bytes = 0;

	for (size_t k = 0; k < plan->nstages; k++)
		for (size_t j = 0; j < plan->stages[k].nvictims; j++) {
			struct mobj *o = &m->objs[m->view_obj[plan->stages[k].victims[j]]];

			if (o->mark != 0) {
				bytes += o->bytes;
				o->mark = 0;
			}
		}
	return bytes;
}

/*
 * One round of a peer's tier: a view of its copies (a window of the
 * coldest, grown while the plan comes out short of target), the policy's
 * plan, executed by libmc's rules.
 */
static int
mc_round(struct mcmodel *m, uint32_t peer, uint64_t target, struct mc_err *err)
{
	struct mc_plan_params pp = { .target = target, .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND };
	struct mc_plan plan;
	struct mc_report rep;
	struct mc_plan_exec x;
	const struct mc_stage *s;
	uint32_t vi;
	bool fb;
	int rc;
	size_t window = mc_plan_window(target, m->used[peer], m->copies[peer]);

	for (;;) {
		if (build_view(m, peer, window, err) < 0 ||
		    mc_planner_run(m->pol, &m->view, &pp, &plan, NULL, err) < 0)
			return -1;
		if (m->whole_view || window >= m->copies[peer] || plan_bytes(m, &plan) >= target)
			break;
		mc_plan_free(&plan);
		window = mc_plan_window_grow(window, m->copies[peer]);
		m->regrown++;
	}
	m->viewed += plan.view.n;
	mc_report_init(&rep);
	mc_plan_exec_begin(&x, &plan, NULL, &rep);
	while ((rc = mc_plan_exec_next(&x, &s, &vi, &fb, err)) == 1) {
		struct mobj *o = &m->objs[m->view_obj[vi]];

		/* The model has no leases, pins or writes in flight: a victim found again goes. */
		if (!o->live) {
			if (mc_plan_exec_kept(&x, MC_FAIL_EVICTED, err) < 0)
				break;
			continue;
		}
		mc_plan_exec_evicted(&x, o->bytes, 1);
		mc_drop(m, o);
	}
	m->rounds++;
	mc_report_free(&rep);
	mc_plan_free(&plan);
	return rc < 0 ? -1 : 0;
}

static int
mc_insert(void *arg, uint64_t id, bool has_parent, uint64_t parent, uint64_t size,
	  const struct sim_req *r, struct mc_err *err)
{
	struct mcmodel *m = arg;
	struct mobj *o, *p;
	double crf = 0;
	size_t slot;
	uint32_t peer = peer_of(id, m->npeers);
	uint64_t *used = &m->used[peer];

	struct mc_band band;

	if (size > m->capacity)
		return 0;
	m->now_ms = r->timestamp;
	/* No room: what the write needs, down to the band's low end (a put's own round). */
	tier_band(m, peer, &band);
	if (*used + size > m->capacity && mc_round(m, peer, *used + size - band.low, err) < 0)
		return -1;
	if (*used + size > m->capacity)
		return 0;
	if (m->nfree > 0) {
		slot = m->free_slots[--m->nfree];
	} else {
		if (m->nobjs == m->cap) {
			size_t ncap = m->cap ? m->cap * 2 : 1024;
			struct mobj *v = realloc(m->objs, ncap * sizeof(*v));
			size_t *f = realloc(m->free_slots, ncap * sizeof(*f));

			if (v != NULL)
				m->objs = v;
			if (f != NULL)
				m->free_slots = f;
			if (v == NULL || f == NULL)
				return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
			/* the table points into the pool: it moved, so point it again */
			mc_htab_free(&m->by_id);
			mc_htab_init(&m->by_id);
			for (size_t i = 0; i < m->nobjs; i++)
				if (m->objs[i].live &&
				    mc_htab_insert(&m->by_id, id_hash(m->objs[i].id),
						   &m->objs[i]) != 0)
					return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
			m->cap = ncap;
		}
		slot = m->nobjs++;
	}
	o = &m->objs[slot];
	*o = (struct mobj){
		.id = id, .bytes = size, .tenant = r->tenant, .type = r->type, .peer = peer
	};
	o->created_seq = o->access_seq = ++m->seq;
	o->live = true;
	/* a key with a ghost resumes its value; one without is on probation */
	o->probation = !mc_history_take(m->hist, id_hash(id), m->seq, m->by_id.count, &crf);
	o->crf = crf + 1;
	o->has_parent = has_parent;
	o->parent = parent;
	if (has_parent && (p = mc_find(m, parent)) != NULL) {
		p->children++;
		o->depth = p->depth + 1;
	}
	if (set_worth(m, o) != 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	mc_history_ref(m->hist, false, m->by_id.count);
	if (mc_htab_insert(&m->by_id, id_hash(id), o) != 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	*used += size;
	m->copies[peer]++;
	list_push(m, &m->cold[peer], slot, false);
	if (o->probation) {
		list_push(m, &m->young[peer], slot, true);
		m->young_bytes[peer] += size;
	}
	/* The commit that takes the tier over its band's high end starts a round. */
	tier_band(m, peer, &band);
	if (*used > band.high && mc_round(m, peer, *used - band.low, err) < 0)
		return -1;
	return 0;
}

static uint64_t
mc_used(void *arg, bool *evicted)
{
	struct mcmodel *m = arg;
	uint64_t used = 0;

	for (uint32_t i = 0; i < m->npeers; i++)
		used += m->used[i];
	*evicted = m->evictions > 0;
	return used;
}

static const struct sim_cache_ops mc_ops = { mc_present, mc_access, mc_insert, mc_used };

/* ---- local eviction: every peer a model of its own ---- */

/*
 * Peers that evict for themselves: a one-peer model each, so its view,
 * history and sequence are the peer's alone. A block goes to the peer
 * its hash picks, as in the master's model; only that peer hears of
 * its accesses.
 */
struct localmodel {
	struct mcmodel *peers;
	uint32_t n;
};

static bool
local_present(void *arg, uint64_t id)
{
	struct localmodel *l = arg;

	return mc_present(&l->peers[peer_of(id, l->n)], id);
}

static void
local_access(void *arg, uint64_t id, const struct sim_req *r)
{
	struct localmodel *l = arg;

	mc_access(&l->peers[peer_of(id, l->n)], id, r);
}

static int
local_insert(void *arg, uint64_t id, bool has_parent, uint64_t parent, uint64_t size,
	     const struct sim_req *r, struct mc_err *err)
{
	struct localmodel *l = arg;

	return mc_insert(&l->peers[peer_of(id, l->n)], id, has_parent, parent, size, r, err);
}

static uint64_t
local_used(void *arg, bool *evicted)
{
	struct localmodel *l = arg;
	uint64_t used = 0;

	*evicted = false;
	for (uint32_t i = 0; i < l->n; i++) {
		bool e;

		used += mc_used(&l->peers[i], &e);
		*evicted |= e;
	}
	return used;
}

static const struct sim_cache_ops local_ops = { local_present, local_access, local_insert,
						local_used };

/* ---- the reference policies ---- */

static bool
ref_present(void *c, uint64_t id)
{
	return mc_refcache_present(c, id);
}

static void
ref_access(void *c, uint64_t id, const struct sim_req *r)
{
	(void)r;
	mc_refcache_access(c, id);
}

static int
ref_insert(void *c, uint64_t id, bool has_parent, uint64_t parent, uint64_t size,
	   const struct sim_req *r, struct mc_err *err)
{
	(void)r;
	return mc_refcache_insert_under(c, id, size, has_parent, parent, err);
}

static uint64_t
ref_used(void *c, bool *evicted)
{
	struct mc_refcache_stats cs;

	mc_refcache_stats(c, &cs);
	*evicted = cs.evictions > 0;
	return cs.bytes;
}

static const struct sim_cache_ops ref_ops = { ref_present, ref_access, ref_insert, ref_used };

/* ---- the command ---- */

static double
ratio(uint64_t a, uint64_t b)
{
	return b > 0 ? (double)a / (double)b : 0;
}

/* --capacity: a size ("14MiB"), or a fraction of the trace's unique blocks ("2%", "0.02"). */
static uint64_t
parse_capacity(const char *s, uint64_t unique, uint64_t block)
{
	struct mc_err err;
	uint64_t v, micro;
	double f;

	if (s == NULL)
		mc_die(MC_EXIT_USAGE, "sim needs --capacity SIZE or FRACTION (e.g. 2%%)");
	if (strchr(s, '%') != NULL) {
		if (mc_parse_percent(s, &micro, &err) < 0 || micro == 0)
			mc_die(MC_EXIT_USAGE, "invalid --capacity '%s': %s", s,
			       micro == 0 ? "must be above 0%" : err.msg);
		return (uint64_t)((double)unique * (double)micro / MC_PERCENT_WHOLE) * block;
	}
	if (strchr(s, '.') != NULL && mc_parse_double(s, &f, &err) == 0 && f > 0 && f < 1)
		return (uint64_t)((double)unique * f) * block;
	if (mc_parse_size(s, &v, &err) < 0 || v == 0)
		mc_die(MC_EXIT_USAGE,
		       "invalid --capacity '%s': a size, or a fraction of the "
		       "trace's unique blocks such as 2%% or 0.02",
		       s);
	return v;
}

/* Each policy's figures, an item of the record's results list. */
static void
out_result(struct bench_out *r, const struct sim_result *res)
{
	out_item_begin(r);
	out_str(r, "policy", res->name);
	out_double(r, "prefix_hit_ratio", 6, ratio(res->prefix_hits, res->blocks));
	out_double(r, "block_hit_ratio", 6, ratio(res->found, res->blocks));
	out_u64(r, "writes", res->writes);
	out_u64(r, "evictions", res->evictions);
	out_u64(r, "rounds", res->rounds);
	out_double(r, "occupancy_mean", 4, mean_occupancy(res));
	out_double(r, "occupancy_min", 4, min_occupancy(res));
	out_double(r, "seconds", 3, res->seconds);
	out_item_end(r);
}

static void
model_init(struct mcmodel *m, const struct sim_trace *st, const struct mc_policy *pol,
	   const struct bench_opts *o, uint64_t capacity, uint32_t npeers, bool marks)
{
	struct mc_err err;

	*m = (struct mcmodel){ .st = st, .pol = pol, .capacity = capacity };
	m->npeers = npeers;
	m->peer_local = o->sim_local;
	m->marks = marks;
	m->high = o->sim_high;
	m->low = o->sim_low;
	m->whole_view = o->sim_whole_view;
	m->used = calloc(npeers, sizeof(*m->used));
	m->copies = calloc(npeers, sizeof(*m->copies));
	m->young_bytes = calloc(npeers, sizeof(*m->young_bytes));
	m->cold = malloc(npeers * sizeof(*m->cold));
	m->young = malloc(npeers * sizeof(*m->young));
	m->worth = malloc(npeers * sizeof(*m->worth));
	if (m->used == NULL || m->copies == NULL || m->young_bytes == NULL || m->cold == NULL ||
	    m->young == NULL || m->worth == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	for (uint32_t i = 0; i < npeers; i++) {
		m->cold[i] = m->young[i] = (struct slist){ NIL, NIL };
		mc_worder_init(&m->worth[i], &worth_ops, m);
	}
	m->trace_clock = o->trace_clock;
	mc_htab_init(&m->by_id);
	mc_cand_view_init(&m->view);
	if ((m->hist = mc_history_new(0, &err)) == NULL)
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
}

static void
model_free(struct mcmodel *m)
{
	mc_cand_view_free(&m->view);
	mc_history_free(m->hist);
	mc_htab_free(&m->by_id);
	free(m->objs);
	free(m->free_slots);
	free(m->view_obj);
	free(m->used);
	free(m->copies);
	free(m->young_bytes);
	free(m->cold);
	free(m->young);
	for (uint32_t i = 0; i < m->npeers; i++)
		mc_worder_free(&m->worth[i]);
	free(m->worth);
	free(m->lowest);
}

int
bench_sim(const struct bench_opts *o, const char *path)
{
	struct sim_trace st;
	struct mc_policy pol;
	struct mc_err err;
	struct sim_result res[MC_REF_COUNT + 1];
	struct bench_out r;
	struct bench_opts oo = *o;
	uint64_t capacity, block = o->block_bytes, t0 = mc_mono_ns();
	uint64_t viewed = 0, regrown = 0;
	int64_t opt_hits;
	size_t nres = 0;
	double opt, lru = 0, gap;
	/* --high or --low select the watermark band, the other one at its usual mark */
	bool marks = o->sim_high > 0 || o->sim_low > 0;
	char band[64];

	if (block == 0)
		mc_die(MC_EXIT_USAGE, "invalid --block-bytes: must be above 0");
	if (o->sim_peers == 0 || o->sim_peers > 1024)
		mc_die(MC_EXIT_USAGE, "invalid --peers '%llu': must be 1..1024",
		       (unsigned long long)o->sim_peers);
	if (marks) {
		if (oo.sim_high == 0)
			oo.sim_high = SIM_HIGH;
		if (oo.sim_low == 0)
			oo.sim_low = SIM_LOW;
		if (!(oo.sim_low > 0 && oo.sim_low < oo.sim_high && oo.sim_high <= 1))
			mc_die(MC_EXIT_USAGE, "invalid --high/--low: need 0 < low < high <= 1");
		snprintf(band, sizeof(band), "watermarks %.2f/%.2f", oo.sim_high, oo.sim_low);
	} else {
		snprintf(band, sizeof(band), "headroom");
	}
	o = &oo;
	if (o->policy != NULL ? mc_policy_load(o->policy, &pol, &err) < 0
			      : mc_policy_builtin(&pol, &err) < 0)
		mc_die(MC_EXIT_DATAERR, "%s", err.msg);
	load_trace(&st, path, o);
	capacity = parse_capacity(o->capacity, st.unique, block);

	/*
	 * mc's policy: as the master runs it (one model over every peer
	 * tier), or with each peer evicting for itself (a model per peer).
	 */
	uint32_t npeers = (uint32_t)o->sim_peers, nmodels = o->sim_local ? npeers : 1;
	struct mcmodel *models = calloc(nmodels, sizeof(*models));
	struct localmodel local = { models, npeers };

	if (models == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	for (uint32_t i = 0; i < nmodels; i++)
		model_init(&models[i], &st, &pol, o, capacity / npeers, o->sim_local ? 1 : npeers,
			   marks);
	memset(&res[nres], 0, sizeof(res[nres]));
	snprintf(res[nres].name, sizeof(res[nres].name), "mc:%.50s%s",
		 pol.name[0] ? pol.name : "default", o->sim_local ? ":local" : "");
	if (drive(&st, block, capacity / npeers * npeers, o->sim_local ? &local_ops : &mc_ops,
		  o->sim_local ? (void *)&local : (void *)&models[0], &res[nres], &err) < 0)
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
	for (uint32_t i = 0; i < nmodels; i++) {
		res[nres].evictions += models[i].evictions;
		res[nres].rounds += models[i].rounds;
		viewed += models[i].viewed;
		regrown += models[i].regrown;
		model_free(&models[i]);
	}
	free(models);
	nres++;

	/*
	 * The references, each evicting on demand at full capacity, as an
	 * engine's own prefix cache does. lru is then textbook LRU, so
	 * lru-textbook would only repeat it.
	 */
	for (int k = 0; k < MC_REF_COUNT; k++) {
		struct mc_refcache *c;
		struct mc_refcache_stats cs;

		if (k == MC_REF_LRU_TEXTBOOK)
			continue;
		if ((c = mc_refcache_new_on_demand(k, capacity, &err)) == NULL)
			mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
		memset(&res[nres], 0, sizeof(res[nres]));
		snprintf(res[nres].name, sizeof(res[nres].name), "%s", mc_refcache_name(k));
		if (drive(&st, block, capacity, &ref_ops, c, &res[nres], &err) < 0)
			mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
		mc_refcache_stats(c, &cs);
		res[nres].evictions = cs.evictions;
		res[nres].rounds = cs.rounds;
		if (k == MC_REF_LRU)
			lru = ratio(res[nres].prefix_hits, res[nres].blocks);
		mc_refcache_free(c);
		nres++;
	}
	opt_hits = mc_refcache_opt_hits(st.ids, st.nids, capacity / block, &err);
	if (opt_hits < 0)
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
	opt = ratio((uint64_t)opt_hits, st.nids);
	gap = opt > lru ? (ratio(res[0].prefix_hits, res[0].blocks) - lru) / (opt - lru) : 0;

	if (!o->json) {
		char cb[32];

		printf("sim %s: %zu requests, %zu block accesses, %llu unique blocks of %llu B; "
		       "capacity %s (%.2f%% of the blocks), band %s, %s view; references evict "
		       "on demand at full capacity\n",
		       path, st.nreq, st.nids, (unsigned long long)st.unique,
		       (unsigned long long)block, mc_fmt_size(capacity, cb, sizeof(cb)),
		       100.0 * (double)capacity / (double)block / (double)st.unique, band,
		       o->sim_whole_view ? "whole" : "windowed");
		printf("%-22s %8s %8s %10s %8s %9s %8s\n", "policy", "prefix", "block", "evictions",
		       "rounds", "occupancy", "min");
		for (size_t i = 0; i < nres; i++)
			printf("%-22s %8.4f %8.4f %10llu %8llu %9.4f %8.4f\n", res[i].name,
			       ratio(res[i].prefix_hits, res[i].blocks),
			       ratio(res[i].found, res[i].blocks),
			       (unsigned long long)res[i].evictions,
			       (unsigned long long)res[i].rounds, mean_occupancy(&res[i]),
			       min_occupancy(&res[i]));
		printf("%-22s %8s %8.4f\n", "opt (block hits)", "-", opt);
		printf("gap closed by %s: %.4f ((policy - lru) / (opt - lru); prefix ratios for "
		       "the "
		       "policy and lru, opt's block ratio as the ceiling: an upper bound, so this "
		       "underestimates)\n",
		       res[0].name, gap);
	}
	/* the record: the policy's figures first, then the run and every policy's */
	out_begin(&r, o->json, "sim");
	out_str(&r, "policy", res[0].name);
	out_double(&r, "prefix_hit_ratio", 4, ratio(res[0].prefix_hits, res[0].blocks));
	out_double(&r, "block_hit_ratio", 4, ratio(res[0].found, res[0].blocks));
	out_double(&r, "lru", 4, lru);
	out_double(&r, "opt_block", 4, opt);
	out_double(&r, "gap_closed", 4, gap);
	out_str(&r, "band", marks ? "watermarks" : "headroom");
	if (marks) {
		out_double(&r, "high", 4, o->sim_high);
		out_double(&r, "low", 4, o->sim_low);
	}
	out_str(&r, "view", o->sim_whole_view ? "whole" : "windowed");
	out_u64(&r, "rounds", res[0].rounds);
	out_double(&r, "occupancy_mean", 4, mean_occupancy(&res[0]));
	out_double(&r, "occupancy_min", 4, min_occupancy(&res[0]));
	out_u64(&r, "viewed", viewed);
	out_u64(&r, "regrown", regrown);
	out_double(&r, "model_seconds", 3, res[0].seconds);
	out_double(&r, "seconds", 3, (double)(mc_mono_ns() - t0) / 1e9);
	if (o->json) {
		/* the text form's table and heading */
		out_str(&r, "trace", path);
		out_u64(&r, "requests", st.nreq);
		out_u64(&r, "blocks", st.nids);
		out_u64(&r, "unique_blocks", st.unique);
		out_u64(&r, "block_bytes", block);
		out_u64(&r, "capacity_bytes", capacity);
		out_double(&r, "opt_block_hit_ratio", 6, opt);
		out_str(&r, "gap_closed_note",
			"(policy - lru) / (opt - lru): prefix hit ratios for the policy and lru, "
			"opt's block hit ratio as the ceiling (an upper bound)");
		out_list_begin(&r, "results");
		for (size_t i = 0; i < nres; i++)
			out_result(&r, &res[i]);
		out_list_end(&r);
	}
	out_end(&r);
	mc_policy_free(&pol);
	free_trace(&st);
	return MC_EXIT_OK;
}
