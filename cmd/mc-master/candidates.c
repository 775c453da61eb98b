/*
 * Building the candidate view from the store, and the `candidates` call
 * that ships it as a bulk in the stream form of man/mc-candidates.5 (the
 * call is an export job of eviction's: built in slices, encoded off the loop).
 *
 * Two walks fill a view with the same records (add_object builds each):
 * the full one visits every object once, for the call and for rounds
 * that span tiers; a (peer, tier) round's window walks that tier's
 * orders in the recency index (recency.h) instead, so its cost follows
 * the window, not the store.
 *
 * The full walk visits every object once. Names are interned into the view
 * once per distinct tenant, type, group, peer and tier, and each object
 * then only looks its ids up in small per-call caches, so the cost per
 * copy is one record and one key copy. Live peers that pass the filter
 * are resolved before the walk: a replica on any other peer is skipped
 * by a scan of a few tens of entries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/clock.h"
#include "mc/checksum.h"
#include "mc/planner.h"
#include "mc/wire.h"
#include "candidates.h"
#include "request.h"
#include "master.h"
#include "peers.h"
#include "recency.h"
#include "softpin.h"
#include "store.h"

/* A live peer as the view names it. */
struct cpeer {
	uint32_t id;
	uint32_t name;	 /* its address (or peer-ID when too long for a name) */
	uint32_t domain; /* MC_CAND_NO_NAME when it has none */
	/* tiers (1u << tier) with none below them there: evicting a copy drops it */
	uint32_t drops;
};

/* Name ids of one build; 0 in a cache slot means "not interned yet". */
struct cand_build {
	struct master *m;
	struct mc_cand_view *v;
	struct cand_filter f;
	uint64_t now;
	/* LRFU values are decayed to the access number and half-life of the begin */
	uint64_t seq;
	double half_life;
	size_t cursor; /* the walk's place in the object table */
	struct cpeer *peers;
	uint32_t npeers;
	uint32_t *tenant_ids, *type_ids, *group_ids;
	uint32_t ntenants, ntypes, ngroups;
	uint32_t tier_ids[MC_TIER_COUNT];
	/* the view's young records (ascending indices), their tally, and the others' eligible bytes */
	uint32_t *young_idx;
	size_t nyoung, young_cap;
	struct mc_young_tally young;
	uint64_t old_bytes;
	/* a (peer, tier) round's window (candidates_begin_window); window 0: the full walk */
	size_t window;
	int phase;		 /* enum wphase */
	uint32_t at;		 /* the phase's last node, 0 before its first */
	const struct mobj *at_o; /* that node's object and its access number then */
	uint64_t at_seq;
	size_t visited;	  /* nodes the phase passed */
	uint64_t older;	  /* probation: the bytes of the probationers passed */
	uint64_t allow;	  /* probation: the share of the tier's capacity, bytes */
	bool cut;	  /* the cold walk stopped at the window, short of the list's end */
	uint64_t *lowest; /* the worth phase: the tier's nodes of lowest worth, as it began */
	size_t nlowest;
	struct mc_htab seen; /* the objects the window holds */
};

/*
 * A window's walks, in turn: the tier's orphans (the kv ranking's first
 * victims), its probationers beyond the probationary share, oldest
 * first (its next), then its coldest copies, then its copies of lowest
 * decayed worth (the kv ranking's order for the rest, which the coldest
 * miss when a copy read lately is worth little); each at most window
 * nodes.
 */
enum wphase { W_ORPHANS, W_PROBATION, W_COLD, W_WORTH, W_DONE };

static int window_step(struct cand_build *b, size_t max, struct mc_err *err);

/* Intern s, remembering the id in *slot (0 while unknown). */
static int
cached_name(struct cand_build *b, uint32_t *slot, const char *s, size_t len, struct mc_err *err)
{
	int64_t id;

	if (*slot != 0 || len == 0)
		return 0;
	id = mc_cand_name(b->v, s, len, err);
	if (id < 0)
		return -1;
	*slot = (uint32_t)id;
	return 0;
}

static int
add_peers(struct cand_build *b, const struct cand_filter *f, struct mc_err *err)
{
	const struct peers *ps = b->m->peers;
	char fallback[32];

	b->peers = calloc(ps->n != 0 ? ps->n : 1, sizeof(*b->peers));
	if (b->peers == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
	for (uint32_t i = 0; i < ps->n; i++) {
		const struct peer *p = ps->v[i];
		struct cpeer *cp = &b->peers[b->npeers];
		const char *name = p->addr;
		size_t len = strlen(p->addr);

		if (!peer_alive(p, b->m->cfg.peer_ttl) || (f->by_peer && p->id != f->peer))
			continue;
		/*
		 * A plan names the peer by address so that people can read
		 * it; an address longer than any name (a deep unix socket
		 * path) falls back to the id, which is still unique.
		 */
		if (len == 0 || len > MC_NAME_MAX) {
			snprintf(fallback, sizeof(fallback), "peer-%u", p->id);
			name = fallback;
			len = strlen(fallback);
		}
		cp->id = p->id;
		cp->drops = 0;
		for (int t = 0; t < MC_TIER_COUNT; t++)
			if (peer_tier_below(p, t) == MC_TIER_NONE)
				cp->drops |= 1u << t;
		cp->name = 0;
		cp->domain = MC_CAND_NO_NAME;
		if (cached_name(b, &cp->name, name, len, err) < 0 ||
		    cached_name(b, &cp->domain, p->domain, strnlen(p->domain, MC_NAME_MAX), err) <
			    0)
			return -1;
		b->npeers++;
	}
	return 0;
}

static const struct cpeer *
find_peer(const struct cand_build *b, uint32_t id)
{
	for (uint32_t i = 0; i < b->npeers; i++)
		if (b->peers[i].id == id)
			return &b->peers[i];
	return NULL;
}

/* The group's name id, or MC_CAND_NO_NAME for none (or a stale id). */
static int
group_id(struct cand_build *b, uint32_t gid, uint32_t *out, struct mc_err *err)
{
	const struct group *g;

	*out = MC_CAND_NO_NAME;
	if (gid == NO_GROUP || gid >= b->ngroups)
		return 0;
	g = store_group_get(b->m->store, gid);
	if (g == NULL)
		return 0;
	/* A freed group id may come back under another name between slices. */
	if (b->group_ids[gid] != 0 &&
	    (b->v->name_lens[b->group_ids[gid]] != g->name_len ||
	     memcmp(b->v->names[b->group_ids[gid]], g->name, g->name_len) != 0))
		b->group_ids[gid] = 0;
	if (cached_name(b, &b->group_ids[gid], g->name, g->name_len, err) < 0)
		return -1;
	*out = b->group_ids[gid];
	return 0;
}

/*
 * The kv ranking's fields of o (mc/history.h, rank_kv.c): its worth
 * (the LRFU value capped by its chain's, store.h), its place in the
 * chain, and whether its parent is gone.
 */
static void
chain_fields(const struct cand_build *b, const struct mobj *o, struct mc_cand *c)
{
	c->crf = store_worth(o, b->seq, b->half_life);
	c->depth = o->depth;
	c->children = o->children;
	c->flags = o->probation ? MC_CAND_PROBATION : 0;
	if (o->parent != 0 && store_find_parent(b->m->store, o) == NULL)
		c->flags |= MC_CAND_ORPHAN;
}

/* The capacity of the tier a record's copy is on, from the table taken as the walk ended. */
static uint64_t
record_capacity(void *ctx, const struct mc_cand_view *v, const struct mc_cand *c)
{
	const struct cand_caps *caps = ctx;

	(void)v;
	for (uint32_t i = 0; i < caps->n; i++)
		if (caps->v[i].peer == c->peer && caps->v[i].tier == c->tier)
			return caps->v[i].capacity;
	return 0;
}

int
candidates_caps(const struct cand_build *b, struct cand_caps *out, struct mc_err *err)
{
	out->n = 0;
	out->probation = mc_history_probation(b->m->store->hist);
	out->presegmented = b->window != 0;
	out->v = calloc((size_t)b->npeers * MC_TIER_COUNT + 1, sizeof(*out->v));
	if (out->v == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
	for (uint32_t i = 0; i < b->npeers; i++) {
		const struct peer *p = peers_find(b->m->peers, b->peers[i].id);

		for (int t = 0; p != NULL && t < MC_TIER_COUNT; t++)
			if (p->tiers[t].present && b->tier_ids[t] != 0)
				out->v[out->n++] =
					(struct cand_cap){ b->peers[i].name, b->tier_ids[t],
							   p->tiers[t].capacity };
	}
	return 0;
}

int
candidates_segment(struct mc_cand_view *v, const struct cand_caps *caps, struct mc_err *err)
{
	/* a window marked its probationers as it took them, against the whole tier */
	if (caps->presegmented)
		return 0;
	return mc_history_segment(v, caps->probation, record_capacity, (void *)caps, err);
}

void
caps_free(struct cand_caps *caps)
{
	free(caps->v);
	caps->v = NULL;
	caps->n = 0;
	caps->presegmented = false;
}

/* The record just added is of a young copy (committed at committed). */
static int
note_young(struct cand_build *b, uint64_t committed, uint64_t bytes, struct mc_err *err)
{
	if (b->nyoung == b->young_cap) {
		size_t cap = b->young_cap ? b->young_cap * 2 : 64;
		uint32_t *p = realloc(b->young_idx, cap * sizeof(*p));

		if (p == NULL)
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
		b->young_idx = p;
		b->young_cap = cap;
	}
	b->young_idx[b->nyoung++] = (uint32_t)(b->v->n - 1);
	mc_young_keep(&b->young, b->m->cfg.young, committed, bytes);
	return 0;
}

/* Append the evictable copies of o. */
static int
add_object(struct cand_build *b, const struct cand_filter *f, const struct mobj *o, uint64_t now,
	   struct mc_err *err)
{
	const struct store *s = b->m->store;
	const struct mrep *r = obj_creps(o);
	bool young = mc_young_is(b->m->cfg.young, o->committed, now);
	struct mc_cand c;
	bool named = false;

	for (unsigned i = 0; i < o->nrep; i++) {
		const struct cpeer *cp;

		/* A moving copy is leaving its tier: evicting it again frees nothing. */
		if (r[i].state != REP_COMPLETE || r[i].version != o->version || r[i].moving)
			continue;
		if (f->by_tier && r[i].tier != f->tier)
			continue;
		if (r[i].tier >= MC_TIER_COUNT || (cp = find_peer(b, r[i].peer)) == NULL)
			continue;
		/* Object-wide fields, once for the first copy that qualifies. */
		if (!named) {
			const char *tn, *ty;

			if (o->tenant >= b->ntenants || o->type >= b->ntypes)
				return mc_err_set(err, MC_ERR_INTERNAL,
						  "object names an unknown tenant or type");
			tn = s->tenants[o->tenant].name;
			ty = store_type_name(s, o->type);
			memset(&c, 0, sizeof(c));
			if (cached_name(b, &b->tenant_ids[o->tenant], tn, strlen(tn), err) < 0 ||
			    cached_name(b, &b->type_ids[o->type], ty, strlen(ty), err) < 0 ||
			    group_id(b, o->group, &c.group, err) < 0)
				return -1;
			c.tenant = b->tenant_ids[o->tenant];
			c.type = b->type_ids[o->type];
			c.version = o->version;
			c.bytes = f->charged ? mc_add_sat(o->size, store_meta_cost(o->key_len))
					     : o->size;
			c.created = o->created;
			c.last_access = o->last_access;
			c.access_seq = o->access_seq;
			c.created_seq = o->created_seq;
			c.access_count = o->access_count;
			c.lease_expiry = o->lease_deadline;
			c.soft_pin_deadline = softpin_protects(o, now) ? o->sp_deadline : 0;
			c.cost = -1;
			chain_fields(b, o, &c);
			named = true;
		}
		const char *tier = mc_tier_name(r[i].tier);
		if (cached_name(b, &b->tier_ids[r[i].tier], tier, strlen(tier), err) < 0)
			return -1;
		c.peer = cp->name;
		c.domain = cp->domain;
		c.tier = b->tier_ids[r[i].tier];
		if (mc_cand_add(b->v, &c, o->key, o->key_len, err) < 0)
			return -1;
		/* a copy a round moves down is not lost: only one it drops may be young */
		if (young && (cp->drops & (1u << r[i].tier)) != 0) {
			if (note_young(b, o->committed, c.bytes, err) < 0)
				return -1;
		} else if (c.lease_expiry <= now && c.soft_pin_deadline == 0) {
			b->old_bytes += c.bytes;
		}
	}
	return 0;
}

void
candidates_young(const struct cand_build *b, struct mc_young_tally *young, uint64_t *old)
{
	*young = b->young;
	*old = b->old_bytes;
}

void
candidates_drop_young(struct cand_build *b)
{
	struct mc_cand_view *v = b->v;
	size_t keep = 0, next = 0;

	/* their keys stay in the arena, unreferenced: a view is read by its records */
	for (size_t i = 0; i < v->n; i++) {
		if (next < b->nyoung && b->young_idx[next] == i) {
			next++;
			continue;
		}
		v->c[keep++] = v->c[i];
	}
	v->n = keep;
	b->nyoung = 0;
}

/*
 * Grow a name-id cache to n entries (the store interned more names since
 * the build began); new slots start as "not interned yet".
 */
static int
grow_cache(uint32_t **ids, uint32_t *have, uint32_t n, struct mc_err *err)
{
	uint32_t *p;

	if (n <= *have)
		return 0;
	p = realloc(*ids, ((size_t)n + 1) * sizeof(**ids));
	if (p == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
	memset(p + *have, 0, ((size_t)n + 1 - *have) * sizeof(*p));
	*ids = p;
	*have = n;
	return 0;
}

struct cand_build *
candidates_begin(struct master *m, const struct cand_filter *f, struct mc_cand_view *v,
		 struct mc_err *err)
{
	struct cand_build *b = calloc(1, sizeof(*b));

	if (b == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
		return NULL;
	}
	b->m = m;
	b->v = v;
	b->f = *f;
	b->now = mc_now_ms();
	b->seq = m->store->access_seq;
	b->half_life = mc_history_half_life(m->store->hist, m->store->objects.count);
	mc_young_tally_init(&b->young);
	v->created = b->now;
	if (add_peers(b, f, err) < 0) {
		candidates_end(b);
		return NULL;
	}
	return b;
}

int
candidates_step(struct cand_build *b, size_t max, struct mc_err *err)
{
	const struct store *s = b->m->store;
	struct mobj *o;

	if (b->window != 0) {
		if (grow_cache(&b->tenant_ids, &b->ntenants, s->ntenants, err) < 0 ||
		    grow_cache(&b->type_ids, &b->ntypes, s->ntypes, err) < 0 ||
		    grow_cache(&b->group_ids, &b->ngroups, s->ngroup_ids, err) < 0)
			return -1;
		return window_step(b, max, err);
	}
	/* No live peer passes the filter: nothing can qualify. */
	if (b->npeers == 0) {
		b->v->seq = s->access_seq;
		return 0;
	}
	if (grow_cache(&b->tenant_ids, &b->ntenants, s->ntenants, err) < 0 ||
	    grow_cache(&b->type_ids, &b->ntypes, s->ntypes, err) < 0 ||
	    grow_cache(&b->group_ids, &b->ngroups, s->ngroup_ids, err) < 0)
		return -1;
	for (size_t i = 0; i < max; i++) {
		if ((o = mc_htab_next(&s->objects, &b->cursor)) == NULL) {
			/*
			 * The counter as the walk ends, not as it began: reads
			 * between slices number objects the walk sees later,
			 * and no record's sequence may pass the view's.
			 */
			b->v->seq = s->access_seq;
			return 0;
		}
		if (o->hard_pin || (b->f.by_tenant && o->tenant != b->f.tenant))
			continue;
		if (add_object(b, &b->f, o, b->now, err) < 0)
			return -1;
	}
	return 1;
}

/* ---- a (peer, tier) round's window ---- */

static uint64_t
ptr_hash(const struct mobj *o)
{
	return mc_hash64(&o, sizeof(o), 0x5eedu);
}

static bool
same_obj(const void *entry, const void *key)
{
	return entry == key;
}

/*
 * Take o into the window (once): its copy on the tier, as the full walk
 * records it, probationer only when beyond the share. 1 when taken now,
 * 0 when left out or taken already, -1 with err.
 */
static int
take_one(struct cand_build *b, struct mobj *o, bool beyond, struct mc_err *err)
{
	size_t from = b->v->n;
	uint64_t h = ptr_hash(o);

	if (o->hard_pin || (b->f.by_tenant && o->tenant != b->f.tenant) ||
	    mc_htab_find(&b->seen, h, same_obj, o) != NULL)
		return 0;
	if (mc_htab_insert(&b->seen, h, o) != 0)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
	if (add_object(b, &b->f, o, b->now, err) < 0)
		return -1;
	for (size_t i = from; i < b->v->n; i++) {
		if (beyond)
			b->v->c[i].flags |= MC_CAND_PROBATION;
		else
			b->v->c[i].flags &= ~MC_CAND_PROBATION;
	}
	return 1;
}

/*
 * take_one, and when o is new to the window the other members of its
 * group, which a round evicts whole: a group costs its size once.
 */
static int
take(struct cand_build *b, struct mobj *o, bool beyond, struct mc_err *err)
{
	const struct group *g;
	int rc = take_one(b, o, beyond, err);

	if (rc <= 0 || o->group == NO_GROUP || (g = store_group_get(b->m->store, o->group)) == NULL)
		return rc;
	for (uint32_t i = 0; i < g->n; i++)
		if (g->members[i] != o && take_one(b, g->members[i], false, err) < 0)
			return -1;
	return 0;
}

/*
 * Whether the walk may go on from its last node: the node still holds
 * the same object in this list and, in the cold walk, at the same
 * place (an access moved it to the warm end). A walk that cannot go on
 * ends its phase: a view may miss copies (every victim is revalidated).
 */
static bool
cursor_holds(const struct cand_build *b, const struct recency *r, const struct rank_list *l)
{
	const struct rank_node *x;

	if (b->at == 0)
		return true;
	if (b->at >= r->used)
		return false;
	x = &r->nodes[b->at];
	if (x->o != b->at_o || x->list != l->idx)
		return false;
	if (b->phase == W_COLD)
		return x->o->access_seq == b->at_seq;
	return x->order == (b->phase == W_PROBATION ? RANK_PROBATION : RANK_ORPHAN);
}

static void
next_phase(struct cand_build *b)
{
	b->phase++;
	b->at = 0;
	b->at_o = NULL;
	b->visited = 0;
}

/*
 * One node of the worth phase: the lowest of the tier's worth order,
 * taken once as the phase begins; a node freed or gone stale between
 * slices is passed over (a node reused since for a copy on this tier is
 * a candidate all the same).
 */
static int
worth_step(struct cand_build *b, struct recency *r, struct rank_list *l, struct mc_err *err)
{
	uint64_t n;

	if (b->lowest == NULL) {
		long got;

		size_t k = mc_plan_window_worth(b->window);

		if ((b->lowest = malloc(k * sizeof(*b->lowest))) == NULL ||
		    (got = recency_lowest(r, l, b->half_life, k, b->lowest)) < 0)
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
		b->nlowest = (size_t)got;
	}
	if (b->visited >= b->nlowest) {
		next_phase(b);
		return 0;
	}
	n = b->lowest[b->visited++];
	if (!recency_node_live(r, l, n))
		return 0;
	return take(b, r->nodes[n].o, false, err) < 0 ? -1 : 0;
}

static int
window_step(struct cand_build *b, size_t max, struct mc_err *err)
{
	struct store *s = b->m->store;
	struct recency *r = &s->rank;
	/* looked up each slice: a restore between slices makes the lists anew */
	struct rank_list *l = recency_list(r, b->f.peer, b->f.tier);

	if (l == NULL || b->npeers == 0)
		b->phase = W_DONE;
	for (size_t i = 0; i < max && b->phase != W_DONE; i++) {
		uint32_t n;
		struct mobj *o;

		if (b->phase == W_WORTH) {
			if (worth_step(b, r, l, err) < 0)
				return -1;
			continue;
		}
		if (!cursor_holds(b, r, l)) {
			next_phase(b);
			continue;
		}
		n = b->phase == W_COLD
			    ? recency_next(r, l, b->at)
			    : recency_order_next(
				      r, l, b->phase == W_ORPHANS ? RANK_ORPHAN : RANK_PROBATION,
				      b->at);
		if (n == 0 || b->visited >= b->window) {
			/* copies left beyond the window: a bigger one would see more */
			b->cut = b->phase == W_COLD && n != 0;
			next_phase(b);
			continue;
		}
		o = r->nodes[n].o;
		if (b->phase == W_PROBATION) {
			uint64_t bytes = l->probation_bytes;

			/* the rest, this one among them, fit in the share: the segment keeps them */
			if (b->older >= bytes || bytes - b->older <= b->allow) {
				next_phase(b);
				continue;
			}
			b->older += o->size;
		}
		b->at = n;
		b->at_o = o;
		b->at_seq = o->access_seq;
		b->visited++;
		if (take(b, o, b->phase == W_PROBATION, err) < 0)
			return -1;
	}
	if (b->phase != W_DONE)
		return 1;
	b->v->seq = s->access_seq;
	return 0;
}

size_t
candidates_window_size(struct master *m, uint32_t peer, int tier, uint64_t need, uint64_t *copies)
{
	const struct rank_list *l = recency_list(&m->store->rank, peer, tier);
	const struct peer *p = peers_find(m->peers, peer);

	*copies = l != NULL ? l->n : 0;
	if (p == NULL || tier < 0 || tier >= MC_TIER_COUNT)
		return 0;
	return mc_plan_window(need, p->tiers[tier].used, *copies);
}

struct cand_build *
candidates_begin_window(struct master *m, const struct cand_filter *f, struct mc_cand_view *v,
			size_t window, struct mc_err *err)
{
	struct cand_build *b;
	const struct peer *p;

	if (!f->by_peer || !f->by_tier || f->tier < 0 || f->tier >= MC_TIER_COUNT) {
		mc_err_set(err, MC_ERR_INTERNAL, "a window is of one peer's tier");
		return NULL;
	}
	if ((b = candidates_begin(m, f, v, err)) == NULL)
		return NULL;
	b->window = window > 0 ? window : 1;
	mc_htab_init(&b->seen);
	/* the coldest and the lowest by worth at least: the view's records made once */
	if (mc_htab_reserve(&b->seen, 3 * b->window) != 0 ||
	    mc_cand_view_reserve(v, v->n + b->window + mc_plan_window_worth(b->window), err) != 0) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for candidates");
		candidates_end(b);
		return NULL;
	}
	if ((p = peers_find(m->peers, f->peer)) != NULL)
		b->allow = (uint64_t)((double)p->tiers[f->tier].capacity *
				      mc_history_probation(m->store->hist));
	return b;
}

bool
candidates_window_cut(const struct cand_build *b)
{
	return b->cut;
}

void
candidates_end(struct cand_build *b)
{
	if (b == NULL)
		return;
	if (b->window != 0)
		mc_htab_free(&b->seen);
	free(b->lowest);
	free(b->peers);
	free(b->tenant_ids);
	free(b->type_ids);
	free(b->group_ids);
	free(b->young_idx);
	free(b);
}

/* ---- the call ---- */

int
candidates_filter_parse(const struct master *m, const msgpack_object *params, struct cand_filter *f,
			bool *none, struct mc_err *err)
{
	uint64_t peer;
	const char *s;
	size_t len;
	int rc;

	if ((rc = mc_map_u64(params, "peer_id", &peer, err)) < 0)
		return -1;
	if (rc > 0) {
		if (peer > UINT32_MAX)
			*none = true;
		f->by_peer = true;
		f->peer = (uint32_t)peer;
	}
	if ((rc = mc_map_str(params, "tier", &s, &len, err)) < 0)
		return -1;
	if (rc > 0) {
		f->by_tier = true;
		f->tier = mc_tier_parse(s, len, NULL);
		if (f->tier < 0)
			return mc_err_set(err, MC_ERR_INVALID, "unknown tier '%.*s'",
					  (int)(len > 32 ? 32 : len), s);
	}
	if ((rc = mc_map_str(params, "tenant", &s, &len, err)) < 0)
		return -1;
	if (rc > 0) {
		int64_t t = store_tenant_find(m->store, s, len);

		f->by_tenant = true;
		if (t < 0)
			*none = true;
		else
			f->tenant = (uint32_t)t;
	}
	return 0;
}

/*
 * Eviction's, registered as it starts: the view waits its turn among
 * the rounds. Every master in a process registers the same function.
 */
static candidates_export_fn *export_view;

void
candidates_on_export(candidates_export_fn *fn)
{
	export_view = fn;
}

/*
 * candidates {peer_id?, tier?, tenant?} -> {count, len} + the stream:
 * built in slices and encoded off the loop, as an eviction round's view is.
 */
static void
h_candidates(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct cand_filter f = { 0 };
	struct mc_err err = { 0 };
	bool none = false;

	if (candidates_filter_parse(m, req->params, &f, &none, &err) < 0 || export_view == NULL ||
	    export_view(m, req, &f, none, &err) < 0)
		handler_fail(req, err.code, "%s", err.msg);
}

const struct mc_method candidates_methods[] = {
	{ "candidates", h_candidates, MC_METHOD_ADMIN | MC_METHOD_BULK | MC_METHOD_READ_ONLY },
	{ NULL, NULL, 0 },
};

const struct master_module candidates_module = {
	.name = "candidates",
	.methods = candidates_methods,
};
