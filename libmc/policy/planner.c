/*
 * The planner: a policy's scope tree laid over a candidate view, then
 * Assign (targets split top-down), Evict (a leaf takes its ranked
 * candidates) and Fallback (a parent takes a reserve by its children's
 * pressure), in that order. The contract is mc/planner.h.
 *
 * Layout, chosen so a 10M-candidate view plans in a few passes over flat
 * arrays:
 *  - order[] holds every candidate index once, permuted so that each
 *    scope's candidates are one contiguous range order[lo..hi); a
 *    parent's range is the union of its children's. Each scope level is
 *    one stable counting-sort pass (name id -> child index, computed
 *    once per scope over the distinct ids it sees), so indices stay
 *    ascending inside a scope and no step costs O(n x #scopes).
 *  - A leaf then moves its eligible candidates to the front of its range
 *    and ranks them once (mc_rank, a radix sort); its evict stage and
 *    every later fallback read that list through one cursor, skipping
 *    what an earlier stage took (taken[]).
 *  - A fallback takes its reserve lazily: every scope with children keeps
 *    a binary heap of its children by pressure (remaining usage over
 *    basis), so k reserve victims cost O(k x depth x log children).
 *
 * Nothing here orders by name id: values are compared as byte strings,
 * ties are broken by candidate index (the view's order, which a stream
 * keeps), so a view re-read from its stream gives the same plan.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mc/parse.h"
#include "mc/planner.h"

#define NO_NODE UINT32_MAX
#define NO_CAND UINT32_MAX
#define ID_UNSEEN (-1)
#define ID_SEEN (-2)

enum cand_state {
	ST_ELIGIBLE,	/* lease expired, no active soft pin */
	ST_SOFT_PINNED, /* lease expired, active soft pin: second pass only */
	ST_LEASED,	/* never a victim */
};

struct node {
	const struct mc_pscope *ps; /* its settings: a named scope, `scope *` or implicit */
	char *path;
	uint32_t parent, depth;
	uint32_t first_child, nchildren; /* children are consecutive nodes */
	size_t lo, hi;			 /* its candidates: order[lo..hi) */
	size_t elig_hi;			 /* leaf: order[lo..elig_hi) eligible, ranked */
	size_t cursor;			 /* leaf: first entry no stage has looked at */
	uint64_t usage, eligible, target, lowerbound;
	uint64_t planned; /* bytes of its candidates in any stage so far */
	uint64_t chosen;  /* bytes of the stages at or below it */
	uint64_t reserve; /* bytes of its own fallback stage */
	double basis;	  /* what its pressure is measured against */
	const struct mc_ranker *ranker;
	/* fallback scratch: a heap of children, valid while epoch matches */
	uint32_t *heap;
	size_t nheap;
	unsigned epoch;
	/* under a fallback with its own ranker: this child's candidates */
	uint32_t *list;
	size_t nlist, list_cur;
	unsigned list_epoch;
};

struct planner {
	const struct mc_policy *pol;
	const struct mc_cand_view *v;
	struct mc_plan *out;
	struct mc_err *err;
	struct mc_ranker_params rp;
	const struct mc_ranker *default_ranker;
	double *type_cost;
	bool *type_by_bytes;
	uint64_t *bytes; /* per candidate: a dense copy, read in every hot loop */
	uint8_t *state;	 /* enum cand_state, per candidate */
	uint8_t *taken;	 /* per candidate: already in a stage */
	uint32_t *order, *scratch;
	uint32_t *leaf_of;		  /* per candidate, built only when a fallback ranks */
	int32_t *child_of;		  /* per name id: ID_UNSEEN, ID_SEEN or a child */
	uint32_t *touched;		  /* the distinct name ids of the scope being split */
	uint64_t *id_usage, *id_eligible; /* per name id, while splitting */
	struct node *nodes;
	size_t nnodes, cap;
	unsigned epoch;
};

/* `scope *` when the policy has none: weight 1, the default ranker. */
static const struct mc_pscope implicit_rest = {
	.rest = true,
	.weight = 1,
	.lowerbound = -1,
};

static int
no_memory(struct planner *pl)
{
	return mc_err_set(pl->err, MC_ERR_NO_SPACE, "out of memory planning %zu candidates",
			  pl->v->n);
}

static uint32_t
dim_id(const struct mc_cand *c, int dim)
{
	switch (dim) {
	case MC_DIM_TENANT:
		return c->tenant;
	case MC_DIM_TYPE:
		return c->type;
	case MC_DIM_GROUP:
		return c->group;
	case MC_DIM_PEER:
		return c->peer;
	case MC_DIM_TIER:
		return c->tier;
	default:
		return c->domain;
	}
}

/* A name as a scope value: the empty name (no group, no domain) is "-". */
static const char *
value_of(const struct mc_cand_view *v, uint32_t id, size_t *len)
{
	if (v->name_lens[id] == 0) {
		*len = 1;
		return "-";
	}
	*len = v->name_lens[id];
	return v->names[id];
}

static int
bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	if (r != 0)
		return r;
	return (alen > blen) - (alen < blen);
}

static double
weight_of(const struct mc_pscope *ps)
{
	return ps->weight > 0 ? ps->weight : 1;
}

static double
fraction_of(const struct planner *pl, const struct mc_pscope *ps)
{
	double f = ps->lowerbound >= 0 ? ps->lowerbound : pl->pol->lowerbound;

	if (!(f >= 0))
		return 0;
	return f > 1 ? 1 : f;
}

static uint64_t
part_of(uint64_t bytes, double fraction)
{
	long double x = (long double)bytes * fraction;

	return x >= (long double)bytes ? bytes : (uint64_t)x;
}

/* ---- the scope tree ---- */

/* Append a child path "parent/dim=value", '%' and '/' escaped. */
static char *
child_path(struct planner *pl, const char *parent, int dim, const char *val, size_t len)
{
	size_t plen = strlen(parent), need = plen + 1 + strlen(mc_dim_name(dim)) + 1 + 3 * len + 1;
	char *p = malloc(need), *w;

	if (p == NULL) {
		no_memory(pl);
		return NULL;
	}
	w = p;
	if (plen) {
		memcpy(w, parent, plen);
		w += plen;
		*w++ = '/';
	}
	w += sprintf(w, "%s=", mc_dim_name(dim));
	for (size_t i = 0; i < len; i++) {
		if (val[i] == '%' || val[i] == '/') {
			w += sprintf(w, "%%%02X", (unsigned char)val[i]);
		} else {
			*w++ = val[i];
		}
	}
	*w = '\0';
	if ((size_t)(w - p) >= MC_SCOPE_MAX) {
		mc_err_set(pl->err, MC_ERR_INVALID, "scope path '%.60s...' is over %d bytes", p,
			   MC_SCOPE_MAX - 1);
		free(p);
		return NULL;
	}
	return p;
}

static int64_t
new_node(struct planner *pl, const struct mc_pscope *ps, uint32_t parent, char *path)
{
	struct node *n;

	if (pl->nnodes == pl->cap) {
		size_t ncap = pl->cap ? pl->cap * 2 : 64;

		if (ncap >= NO_NODE || !(n = realloc(pl->nodes, ncap * sizeof(*n)))) {
			free(path);
			return no_memory(pl);
		}
		pl->nodes = n;
		pl->cap = ncap;
	}
	n = &pl->nodes[pl->nnodes];
	memset(n, 0, sizeof(*n));
	n->ps = ps;
	n->path = path;
	n->parent = parent;
	n->depth = parent == NO_NODE ? 0 : pl->nodes[parent].depth + 1;
	n->first_child = NO_NODE;
	if (!ps->has_assign)
		n->ranker = ps->ranker ? ps->ranker : pl->default_ranker;
	return (int64_t)pl->nnodes++;
}

struct distinct {
	const char *s;
	size_t len;
	uint32_t id;
};

static int
distinct_cmp(const void *a, const void *b)
{
	const struct distinct *x = a, *y = b;
	int r = bytes_cmp(x->s, x->len, y->s, y->len);

	if (r != 0)
		return r;
	return (x->id > y->id) - (x->id < y->id);
}

static const struct mc_pscope *
rest_scope(const struct mc_pscope *ps)
{
	for (size_t i = 0; i < ps->nchildren; i++)
		if (ps->children[i].rest)
			return &ps->children[i];
	return &implicit_rest;
}

/*
 * Create the children of node x for a name dimension and put each of its
 * candidates' child (by position in x's range) in child[]: named scopes
 * first in policy order, then one scope per other value, by value bytes.
 * The candidates are read once; usage is summed per name id, then per
 * child over the distinct ids.
 */
static int
name_children(struct planner *pl, uint32_t x, uint32_t *child)
{
	const struct mc_cand_view *v = pl->v;
	const struct mc_pscope *ps = pl->nodes[x].ps, *rest = rest_scope(ps);
	size_t lo = pl->nodes[x].lo, hi = pl->nodes[x].hi, nd = 0, k;
	uint32_t nchild = 0, first = (uint32_t)pl->nnodes;
	int dim = ps->dim;
	struct distinct *d;
	int rc = -1;

	for (size_t i = lo; i < hi; i++) {
		uint32_t ci = pl->order[i], id = dim_id(&v->c[ci], dim);

		if (pl->child_of[id] == ID_UNSEEN) {
			pl->child_of[id] = ID_SEEN;
			pl->touched[nd++] = id;
			pl->id_usage[id] = 0;
			pl->id_eligible[id] = 0;
		}
		pl->id_usage[id] += pl->bytes[ci];
		if (pl->state[ci] == ST_ELIGIBLE)
			pl->id_eligible[id] += pl->bytes[ci];
		child[i - lo] = id;
	}
	d = malloc((nd ? nd : 1) * sizeof(*d));
	if (d == NULL)
		goto fail_mem;
	for (k = 0; k < nd; k++) {
		d[k].id = pl->touched[k];
		d[k].s = value_of(v, d[k].id, &d[k].len);
	}
	qsort(d, nd, sizeof(*d), distinct_cmp);
	for (size_t c = 0; c < ps->nchildren; c++) {
		const struct mc_pscope *cs = &ps->children[c];
		size_t len, a = 0, b = nd;
		char *path;

		if (cs->rest || cs->value == NULL)
			continue;
		len = strlen(cs->value);
		path = child_path(pl, pl->nodes[x].path, dim, cs->value, len);
		if (path == NULL || new_node(pl, cs, x, path) < 0)
			goto fail;
		/* the first entry not below the value, then every equal one */
		while (a < b) {
			size_t m = a + (b - a) / 2;

			if (bytes_cmp(d[m].s, d[m].len, cs->value, len) < 0)
				a = m + 1;
			else
				b = m;
		}
		for (; a < nd && bytes_cmp(d[a].s, d[a].len, cs->value, len) == 0; a++)
			if (pl->child_of[d[a].id] == ID_SEEN)
				pl->child_of[d[a].id] = (int32_t)nchild;
		nchild++;
	}
	for (k = 0; k < nd; k++) {
		char *path;

		if (pl->child_of[d[k].id] != ID_SEEN)
			continue;
		/* "" and "-" are the same value: one scope */
		if (k > 0 && pl->child_of[d[k - 1].id] == (int32_t)nchild - 1 &&
		    bytes_cmp(d[k - 1].s, d[k - 1].len, d[k].s, d[k].len) == 0) {
			pl->child_of[d[k].id] = (int32_t)nchild - 1;
			continue;
		}
		path = child_path(pl, pl->nodes[x].path, dim, d[k].s, d[k].len);
		if (path == NULL || new_node(pl, rest, x, path) < 0)
			goto fail;
		pl->child_of[d[k].id] = (int32_t)nchild++;
	}
	pl->nodes[x].nchildren = nchild;
	for (size_t i = 0; i < hi - lo; i++)
		child[i] = (uint32_t)pl->child_of[child[i]];
	for (k = 0; k < nd; k++) {
		uint32_t id = pl->touched[k];
		struct node *cn = &pl->nodes[first + (uint32_t)pl->child_of[id]];

		cn->usage += pl->id_usage[id];
		cn->eligible += pl->id_eligible[id];
	}
	rc = 0;
	goto fail;
fail_mem:
	no_memory(pl);
fail:
	/* leave child_of clean for the next scope */
	for (k = 0; k < nd; k++)
		pl->child_of[pl->touched[k]] = ID_UNSEEN;
	free(d);
	return rc;
}

static void
add_counts(struct node *n, uint64_t bytes, uint8_t state)
{
	n->usage += bytes;
	if (state == ST_ELIGIBLE)
		n->eligible += bytes;
}

/* A byte trie over a prefix scope's listed values, for longest match. */
struct trie {
	uint32_t first, next; /* first child, next sibling; 0: none */
	int32_t child;	      /* the scope a prefix ending here goes to, or -1 */
	unsigned char byte;
};

static int
trie_add(struct trie **t, size_t *n, size_t *cap, const char *s, int32_t child)
{
	uint32_t at = 0;

	for (; *s; s++) {
		uint32_t c = (*t)[at].first;

		while (c && (*t)[c].byte != (unsigned char)*s)
			c = (*t)[c].next;
		if (c == 0) {
			if (*n == *cap) {
				struct trie *nt = realloc(*t, *cap * 2 * sizeof(**t));

				if (nt == NULL)
					return -1;
				*t = nt;
				*cap *= 2;
			}
			c = (uint32_t)(*n)++;
			(*t)[c] = (struct trie){ .next = (*t)[at].first,
						 .child = -1,
						 .byte = (unsigned char)*s };
			(*t)[at].first = c;
		}
		at = c;
	}
	if ((*t)[at].child < 0)
		(*t)[at].child = child; /* a repeated value: the first one wins */
	return 0;
}

static int32_t
trie_match(const struct trie *t, const char *key, size_t len)
{
	uint32_t at = 0;
	int32_t best = t[0].child;

	for (size_t i = 0; i < len; i++) {
		uint32_t c = t[at].first;

		while (c && t[c].byte != (unsigned char)key[i])
			c = t[c].next;
		if (c == 0)
			break;
		at = c;
		if (t[at].child >= 0)
			best = t[at].child;
	}
	return best;
}

/*
 * Children of node x for the prefix dimension: the listed prefixes in
 * policy order, then "prefix=*" when some key matches none of them.
 * child[] gets each candidate's child (by position in x's range).
 */
static int
prefix_children(struct planner *pl, uint32_t x, uint32_t *child)
{
	const struct mc_pscope *ps = pl->nodes[x].ps;
	size_t lo = pl->nodes[x].lo, hi = pl->nodes[x].hi, tn = 1, tcap = 64;
	struct trie *t = malloc(tcap * sizeof(*t));
	uint32_t nchild = 0, first = (uint32_t)pl->nnodes;
	bool any_rest = false;

	if (t == NULL)
		return no_memory(pl);
	t[0] = (struct trie){ .child = -1 };
	for (size_t c = 0; c < ps->nchildren; c++) {
		const struct mc_pscope *cs = &ps->children[c];
		char *path;

		if (cs->rest || cs->value == NULL)
			continue;
		path = child_path(pl, pl->nodes[x].path, MC_DIM_PREFIX, cs->value,
				  strlen(cs->value));
		if (path == NULL || new_node(pl, cs, x, path) < 0)
			goto fail;
		if (trie_add(&t, &tn, &tcap, cs->value, (int32_t)nchild++) < 0) {
			no_memory(pl);
			goto fail;
		}
	}
	for (size_t i = lo; i < hi; i++) {
		const struct mc_cand *c = &pl->v->c[pl->order[i]];
		int32_t k = trie_match(t, mc_cand_key(pl->v, c), c->key_len);

		if (k < 0)
			any_rest = true;
		child[i - lo] = k < 0 ? nchild : (uint32_t)k;
	}
	if (any_rest) {
		char *path = child_path(pl, pl->nodes[x].path, MC_DIM_PREFIX, "*", 1);

		if (path == NULL || new_node(pl, rest_scope(ps), x, path) < 0)
			goto fail;
		nchild++;
	}
	pl->nodes[x].nchildren = nchild;
	for (size_t i = lo; i < hi; i++) {
		uint32_t ci = pl->order[i];

		add_counts(&pl->nodes[first + child[i - lo]], pl->bytes[ci], pl->state[ci]);
	}
	free(t);
	return 0;
fail:
	free(t);
	return -1;
}

/* Split node x's range among its children: one stable counting sort. */
static int
split(struct planner *pl, uint32_t x)
{
	size_t lo = pl->nodes[x].lo, hi = pl->nodes[x].hi, *next = NULL;
	uint32_t *child, first = (uint32_t)pl->nnodes, nchild;
	int rc = -1;

	pl->nodes[x].first_child = first;
	child = malloc((hi - lo ? hi - lo : 1) * sizeof(*child));
	if (child == NULL)
		return no_memory(pl);
	if (pl->nodes[x].ps->dim == MC_DIM_PREFIX ? prefix_children(pl, x, child) < 0
						  : name_children(pl, x, child) < 0)
		goto out;
	nchild = pl->nodes[x].nchildren;
	next = calloc(nchild + 1, sizeof(*next));
	if (next == NULL) {
		no_memory(pl);
		goto out;
	}
	for (size_t i = 0; i < hi - lo; i++)
		next[child[i] + 1]++;
	next[0] = lo;
	for (uint32_t k = 0; k < nchild; k++) {
		struct node *cn = &pl->nodes[first + k];

		next[k + 1] += next[k];
		cn->lo = next[k];
		cn->hi = next[k + 1];
	}
	for (size_t i = lo; i < hi; i++)
		pl->scratch[next[child[i - lo]]++] = pl->order[i];
	memcpy(pl->order + lo, pl->scratch + lo, (hi - lo) * sizeof(*pl->order));
	rc = 0;
out:
	free(next);
	free(child);
	return rc;
}

/* A leaf: its eligible candidates to the front, ranked by its ranker. */
static int
rank_leaf(struct planner *pl, uint32_t x)
{
	struct node *n = &pl->nodes[x];
	size_t w = n->lo, r = 0;

	for (size_t i = n->lo; i < n->hi; i++) {
		uint32_t ci = pl->order[i];

		if (pl->state[ci] == ST_ELIGIBLE)
			pl->order[w++] = ci;
		else
			pl->scratch[r++] = ci;
	}
	memcpy(pl->order + w, pl->scratch, r * sizeof(*pl->order));
	n->elig_hi = w;
	n->cursor = n->lo;
	if (mc_rank(n->ranker, pl->v, pl->order + n->lo, w - n->lo, &pl->rp) < 0)
		return no_memory(pl);
	return 0;
}

static int
build(struct planner *pl, uint32_t x)
{
	uint32_t first, nchild;

	if (!pl->nodes[x].ps->has_assign)
		return rank_leaf(pl, x);
	if (split(pl, x) < 0)
		return -1;
	first = pl->nodes[x].first_child;
	nchild = pl->nodes[x].nchildren;
	for (uint32_t k = 0; k < nchild; k++)
		if (build(pl, first + k) < 0)
			return -1;
	return 0;
}

/* ---- Assign: targets ---- */

struct level {
	long double level; /* cap / weight: where this child saturates */
	size_t i;
};

static int
level_cmp(const void *a, const void *b)
{
	const struct level *x = a, *y = b;

	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * Water-filling: split total among k children in proportion to w[],
 * none above cap[], what a capped child cannot take going to the others
 * by the same proportions. Integer bytes: floors, then the remainder a
 * byte each to the earliest children with room. O(k log k).
 */
static int
water_fill(const long double *w, const uint64_t *cap, size_t k, uint64_t total, uint64_t *alloc)
{
	long double sum_w = 0, rest_w = 0;
	uint64_t sum_cap = 0, left = total, given = 0;
	struct level *lv;
	bool *open;
	size_t na = 0, i;

	for (i = 0; i < k; i++) {
		alloc[i] = 0;
		sum_cap += cap[i];
		if (cap[i] > 0 && w[i] > 0)
			sum_w += w[i];
	}
	if (total >= sum_cap) {
		memcpy(alloc, cap, k * sizeof(*alloc));
		return 0;
	}
	lv = malloc((k + 1) * sizeof(*lv));
	open = calloc(k + 1, sizeof(*open));
	if (lv == NULL || open == NULL) {
		free(lv);
		free(open);
		return -1;
	}
	/* with no weight at all (nothing owed, say) the children share alike */
	for (i = 0; i < k; i++) {
		long double wi = sum_w > 0 ? w[i] : 1;

		if (cap[i] > 0 && wi > 0) {
			lv[na++] = (struct level){ (long double)cap[i] / wi, i };
			rest_w += wi;
		}
	}
	qsort(lv, na, sizeof(*lv), level_cmp);
	/* saturate the children whose fair share is over their cap */
	for (i = 0; i < na; i++) {
		size_t x = lv[i].i;
		long double wx = sum_w > 0 ? w[x] : 1;

		if ((long double)cap[x] * rest_w > (long double)left * wx)
			break;
		alloc[x] = cap[x];
		left -= cap[x];
		rest_w -= wx;
	}
	for (; i < na; i++) {
		size_t x = lv[i].i;
		long double share = (long double)left * (sum_w > 0 ? w[x] : 1) / rest_w;
		uint64_t a = share >= (long double)cap[x] ? cap[x] : (uint64_t)share;

		if (given + a > left)
			a = left - given;
		alloc[x] = a;
		given += a;
		open[x] = true;
	}
	left -= given;
	/* the remainder, a byte at a time, to the earliest with room */
	while (left > 0) {
		bool gave = false;

		for (size_t c = 0; c < k && left > 0; c++) {
			if (open[c] && alloc[c] < cap[c]) {
				alloc[c]++;
				left--;
				gave = true;
			}
		}
		if (!gave)
			break;
	}
	free(lv);
	free(open);
	return 0;
}

static int
assign(struct planner *pl, uint32_t x)
{
	struct node *n = &pl->nodes[x];
	uint32_t first = n->first_child, k = n->nchildren;
	long double *w;
	uint64_t *cap, *alloc, *debt;
	double sum_weight = 0;
	int rc = -1;

	if (!n->ps->has_assign || k == 0)
		return 0;
	w = malloc(k * sizeof(*w));
	cap = malloc(k * sizeof(*cap));
	alloc = malloc(k * sizeof(*alloc));
	debt = calloc(k, sizeof(*debt));
	if (w == NULL || cap == NULL || alloc == NULL || debt == NULL) {
		no_memory(pl);
		goto out;
	}
	for (uint32_t i = 0; i < k; i++) {
		const struct node *c = &pl->nodes[first + i];

		sum_weight += weight_of(c->ps);
		cap[i] = c->eligible;
		w[i] = n->ps->mode == MC_ASSIGN_WEIGHT ? weight_of(c->ps) : (long double)c->usage;
	}
	if (n->ps->mode == MC_ASSIGN_QUOTA) {
		uint64_t owed = 0, target = n->target;

		/* first what each child owes over its quota (0: no quota) */
		for (uint32_t i = 0; i < k; i++) {
			const struct node *c = &pl->nodes[first + i];
			uint64_t q = c->ps->quota;

			debt[i] = q > 0 && c->usage > q ? c->usage - q : 0;
			if (debt[i] > c->eligible)
				debt[i] = c->eligible;
			w[i] = (long double)debt[i];
			owed += debt[i];
		}
		if (owed >= target) {
			if (water_fill(w, debt, k, target, alloc) < 0)
				goto nomem;
		} else {
			for (uint32_t i = 0; i < k; i++) {
				w[i] = (long double)pl->nodes[first + i].usage;
				cap[i] -= debt[i];
			}
			if (water_fill(w, cap, k, target - owed, alloc) < 0)
				goto nomem;
			for (uint32_t i = 0; i < k; i++)
				alloc[i] += debt[i];
		}
	} else if (water_fill(w, cap, k, n->target, alloc) < 0) {
		goto nomem;
	}
	for (uint32_t i = 0; i < k; i++) {
		struct node *c = &pl->nodes[first + i];

		c->target = alloc[i];
		c->lowerbound = part_of(c->target, fraction_of(pl, c->ps));
		switch (n->ps->mode) {
		case MC_ASSIGN_WEIGHT:
			c->basis = weight_of(c->ps) / sum_weight * (double)n->usage;
			break;
		case MC_ASSIGN_USAGE:
			c->basis = (double)c->usage;
			break;
		default:
			c->basis = (double)c->ps->quota;
			break;
		}
	}
	for (uint32_t i = 0; i < k; i++)
		if (assign(pl, first + i) < 0)
			goto out;
	rc = 0;
	goto out;
nomem:
	no_memory(pl);
out:
	free(w);
	free(cap);
	free(alloc);
	free(debt);
	return rc;
}

/* ---- Evict and Fallback: stages ---- */

/* Candidate ci, found in leaf, is now in a stage: count it everywhere. */
static void
commit(struct planner *pl, uint32_t leaf, uint32_t ci)
{
	uint64_t bytes = pl->bytes[ci];

	pl->taken[ci] = 1;
	for (uint32_t y = leaf; y != NO_NODE; y = pl->nodes[y].parent)
		pl->nodes[y].planned += bytes;
}

static int
add_victim(struct planner *pl, struct mc_stage *s, uint32_t stage_node, uint32_t ci)
{
	if (mc_stage_add_victim(s, ci, pl->err) < 0)
		return -1;
	for (uint32_t y = stage_node; y != NO_NODE; y = pl->nodes[y].parent)
		pl->nodes[y].chosen += pl->bytes[ci];
	return 0;
}

/* Drop the stage just added when it got no victims. */
static void
drop_if_empty(struct mc_plan *p, struct mc_stage *s)
{
	if (s->nvictims > 0)
		return;
	free(s->victims);
	p->nstages--;
}

static uint32_t
leaf_next(struct planner *pl, uint32_t x)
{
	struct node *n = &pl->nodes[x];

	while (n->cursor < n->elig_hi) {
		uint32_t ci = pl->order[n->cursor++];

		if (!pl->taken[ci]) {
			commit(pl, x, ci);
			return ci;
		}
	}
	return NO_CAND;
}

static double
pressure(const struct node *n)
{
	if (!(n->basis > 0))
		return 0;
	return (double)(n->usage - n->planned) / n->basis;
}

/* Whether child a gives before child b: higher pressure, then child order. */
static bool
gives_first(const struct planner *pl, uint32_t a, uint32_t b)
{
	double pa = pressure(&pl->nodes[a]), pb = pressure(&pl->nodes[b]);

	if (pa != pb)
		return pa > pb;
	return a < b;
}

static void
sift_down(const struct planner *pl, uint32_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, best = i;

		if (l < n && gives_first(pl, h[l], h[best]))
			best = l;
		if (r < n && gives_first(pl, h[r], h[best]))
			best = r;
		if (best == i)
			return;
		uint32_t t = h[i];
		h[i] = h[best];
		h[best] = t;
		i = best;
	}
}

/* Each candidate's leaf, for fallbacks with their own ranker (built once). */
static int
map_leaves(struct planner *pl)
{
	if (pl->leaf_of)
		return 0;
	pl->leaf_of = malloc((pl->v->n ? pl->v->n : 1) * sizeof(*pl->leaf_of));
	if (pl->leaf_of == NULL)
		return no_memory(pl);
	for (uint32_t x = 0; x < pl->nnodes; x++) {
		const struct node *n = &pl->nodes[x];

		if (n->nchildren == 0)
			for (size_t i = n->lo; i < n->hi; i++)
				pl->leaf_of[pl->order[i]] = x;
	}
	return 0;
}

/* The next of x's candidates in the fallback ranker's order, or NO_CAND. */
static int
ranked_next(struct planner *pl, uint32_t x, const struct mc_ranker *r, uint32_t *out)
{
	struct node *n = &pl->nodes[x];

	if (n->list_epoch != pl->epoch) {
		size_t m = 0;
		uint32_t *list = realloc(n->list, ((n->hi - n->lo) + 1) * sizeof(*list));

		if (list == NULL)
			return no_memory(pl);
		n->list = list;
		for (size_t i = n->lo; i < n->hi; i++) {
			uint32_t ci = pl->order[i];

			if (pl->state[ci] == ST_ELIGIBLE && !pl->taken[ci])
				list[m++] = ci;
		}
		/* mc_rank breaks ties by candidate index, whatever the order here */
		if (mc_rank(r, pl->v, list, m, &pl->rp) < 0)
			return no_memory(pl);
		n->nlist = m;
		n->list_cur = 0;
		n->list_epoch = pl->epoch;
	}
	*out = NO_CAND;
	while (n->list_cur < n->nlist) {
		uint32_t ci = n->list[n->list_cur++];

		if (!pl->taken[ci]) {
			commit(pl, pl->leaf_of[ci], ci);
			*out = ci;
			break;
		}
	}
	return 0;
}

/*
 * The next candidate of x's subtree by pressure, committed, or NO_CAND.
 * fb_ranker, when not NULL, orders each child of x as one flat list (the
 * ranker of the fallback being served; only for its own children).
 */
static int
pressure_next(struct planner *pl, uint32_t x, const struct mc_ranker *fb_ranker, uint32_t *out)
{
	struct node *n = &pl->nodes[x];

	if (n->nchildren == 0) {
		*out = leaf_next(pl, x);
		return 0;
	}
	if (n->heap == NULL) {
		n->heap = malloc(n->nchildren * sizeof(*n->heap));
		if (n->heap == NULL)
			return no_memory(pl);
	}
	if (n->epoch != pl->epoch) {
		for (uint32_t k = 0; k < n->nchildren; k++)
			n->heap[k] = n->first_child + k;
		n->nheap = n->nchildren;
		for (size_t i = n->nheap / 2; i-- > 0;)
			sift_down(pl, n->heap, n->nheap, i);
		n->epoch = pl->epoch;
	}
	while (n->nheap > 0) {
		uint32_t top = n->heap[0], ci;
		int rc = fb_ranker ? ranked_next(pl, top, fb_ranker, &ci)
				   : pressure_next(pl, top, NULL, &ci);

		if (rc < 0)
			return -1;
		n = &pl->nodes[x];
		if (ci == NO_CAND) {
			n->heap[0] = n->heap[--n->nheap];
		} else {
			*out = ci;
		}
		sift_down(pl, n->heap, n->nheap, 0);
		if (ci != NO_CAND)
			return 0;
	}
	*out = NO_CAND;
	return 0;
}

static int
fallback(struct planner *pl, uint32_t x)
{
	struct node *n = &pl->nodes[x];
	const struct mc_ranker *r = n->ps->fallback_ranker;
	uint64_t want = n->lowerbound, got = 0;
	struct mc_stage *s;

	if (want == 0)
		return 0;
	if (r && map_leaves(pl) < 0)
		return -1;
	s = mc_plan_add_stage(pl->out, MC_STAGE_FALLBACK, n->path, want, 0, pl->err);
	if (s == NULL)
		return -1;
	snprintf(s->cond_scope, sizeof(s->cond_scope), "%s", n->path);
	s->cond_lowerbound = want;
	pl->epoch++;
	while (got < want) {
		uint32_t ci;

		if (pressure_next(pl, x, r, &ci) < 0)
			return -1;
		if (ci == NO_CAND)
			break;
		if (add_victim(pl, s, x, ci) < 0)
			return -1;
		got += pl->bytes[ci];
	}
	pl->nodes[x].reserve = got;
	drop_if_empty(pl->out, s);
	return 0;
}

static int
evict(struct planner *pl, uint32_t x)
{
	struct node *n = &pl->nodes[x];
	uint64_t got = 0;
	struct mc_stage *s;

	if (n->target == 0)
		return 0;
	s = mc_plan_add_stage(pl->out, MC_STAGE_EVICT, n->path, n->target, n->lowerbound, pl->err);
	if (s == NULL)
		return -1;
	while (got < pl->nodes[x].target) {
		uint32_t ci = leaf_next(pl, x);

		if (ci == NO_CAND)
			break;
		if (add_victim(pl, s, x, ci) < 0)
			return -1;
		got += pl->bytes[ci];
	}
	drop_if_empty(pl->out, s);
	return 0;
}

/* Depth first: children in order, then the scope's own fallback. */
static int
stages(struct planner *pl, uint32_t x)
{
	uint32_t first = pl->nodes[x].first_child, k = pl->nodes[x].nchildren;

	if (!pl->nodes[x].ps->has_assign)
		return evict(pl, x);
	for (uint32_t i = 0; i < k; i++)
		if (stages(pl, first + i) < 0)
			return -1;
	if (pl->nodes[x].ps->has_fallback)
		return fallback(pl, x);
	return 0;
}

struct pinned {
	uint64_t deadline;
	uint32_t idx;
};

static int
pinned_cmp(const void *a, const void *b)
{
	const struct pinned *x = a, *y = b;

	if (x->deadline != y->deadline)
		return x->deadline < y->deadline ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The second pass: soft-pinned candidates, soonest deadline first. */
static int
soft_pinned_pass(struct planner *pl, uint64_t *reserve)
{
	uint64_t want = pl->nodes[0].lowerbound, got = 0;
	struct pinned *list;
	struct mc_stage *s;
	size_t m = 0;
	int rc = -1;

	*reserve = 0;
	if (want == 0)
		return 0;
	for (size_t i = 0; i < pl->v->n; i++)
		m += pl->state[i] == ST_SOFT_PINNED;
	if (m == 0)
		return 0;
	list = malloc(m * sizeof(*list));
	if (list == NULL)
		return no_memory(pl);
	m = 0;
	for (size_t i = 0; i < pl->v->n; i++)
		if (pl->state[i] == ST_SOFT_PINNED)
			list[m++] = (struct pinned){ pl->v->c[i].soft_pin_deadline, (uint32_t)i };
	qsort(list, m, sizeof(*list), pinned_cmp);
	s = mc_plan_add_stage(pl->out, MC_STAGE_FALLBACK, "", want, 0, pl->err);
	if (s == NULL)
		goto out;
	s->cond_lowerbound = want;
	s->soft_pinned = true;
	for (size_t i = 0; i < m && got < want; i++) {
		if (add_victim(pl, s, 0, list[i].idx) < 0)
			goto out;
		pl->taken[list[i].idx] = 1;
		got += pl->bytes[list[i].idx];
	}
	*reserve = got;
	drop_if_empty(pl->out, s);
	rc = 0;
out:
	free(list);
	return rc;
}

/* ---- explanation ---- */

static void
explain_node(const struct planner *pl, uint32_t x, FILE *f)
{
	const struct node *n = &pl->nodes[x];
	char usage[32], elig[32], target[32], lower[32], chosen[32];
	int indent = 2 * (int)n->depth;

	fprintf(f, "%*s%s  cands %zu  usage %s  eligible %s  target %s  lower %s  chosen %s  ",
		indent, "", n->path[0] ? n->path : "global", n->hi - n->lo,
		mc_fmt_size(n->usage, usage, sizeof(usage)),
		mc_fmt_size(n->eligible, elig, sizeof(elig)),
		mc_fmt_size(n->target, target, sizeof(target)),
		mc_fmt_size(n->lowerbound, lower, sizeof(lower)),
		mc_fmt_size(n->chosen, chosen, sizeof(chosen)));
	if (n->ps->has_assign) {
		static const char *const modes[] = { "weight", "usage", "quota" };

		fprintf(f, "assign %s by %s\n", mc_dim_name(n->ps->dim),
			n->ps->mode >= 0 && n->ps->mode <= 2 ? modes[n->ps->mode] : "?");
	} else {
		fprintf(f, "ranker %s\n", n->ranker->name);
	}
	for (uint32_t k = 0; k < n->nchildren; k++)
		explain_node(pl, n->first_child + k, f);
	if (n->ps->has_fallback) {
		char reserve[32];

		fprintf(f, "%*sfallback %s  reserve %s", indent + 2, "",
			n->path[0] ? n->path : "global",
			mc_fmt_size(n->reserve, reserve, sizeof(reserve)));
		if (n->ps->fallback_ranker)
			fprintf(f, "  ranker %s", n->ps->fallback_ranker->name);
		fputc('\n', f);
	}
}

/* ---- the whole run ---- */

static int
classify(struct planner *pl, uint64_t now)
{
	const struct mc_cand_view *v = pl->v;
	size_t n = v->n ? v->n : 1;
	struct node *root = &pl->nodes[0];

	pl->bytes = malloc(n * sizeof(*pl->bytes));
	pl->state = malloc(n);
	pl->taken = calloc(n, 1);
	pl->order = malloc(n * sizeof(*pl->order));
	pl->scratch = malloc(n * sizeof(*pl->scratch));
	pl->child_of = malloc(v->nnames * sizeof(*pl->child_of));
	pl->touched = malloc(v->nnames * sizeof(*pl->touched));
	pl->id_usage = malloc(v->nnames * sizeof(*pl->id_usage));
	pl->id_eligible = malloc(v->nnames * sizeof(*pl->id_eligible));
	if (!pl->bytes || !pl->state || !pl->taken || !pl->order || !pl->scratch || !pl->child_of ||
	    !pl->touched || !pl->id_usage || !pl->id_eligible)
		return no_memory(pl);
	for (uint32_t i = 0; i < v->nnames; i++)
		pl->child_of[i] = ID_UNSEEN;
	for (size_t i = 0; i < v->n; i++) {
		const struct mc_cand *c = &v->c[i];

		if (c->lease_expiry > now)
			pl->state[i] = ST_LEASED;
		else if (c->soft_pin_deadline > now)
			pl->state[i] = ST_SOFT_PINNED;
		else
			pl->state[i] = ST_ELIGIBLE;
		pl->order[i] = (uint32_t)i;
		pl->bytes[i] = c->bytes;
		add_counts(root, c->bytes, pl->state[i]);
	}
	root->lo = 0;
	root->hi = v->n;
	return 0;
}

/* The policy's per-type costs as the ranker wants them: by name id. */
static int
type_costs(struct planner *pl)
{
	const struct mc_cand_view *v = pl->v;
	const struct mc_policy *pol = pl->pol;

	if (pol->ncosts == 0)
		return 0;
	pl->type_cost = malloc(v->nnames * sizeof(*pl->type_cost));
	pl->type_by_bytes = calloc(v->nnames, sizeof(*pl->type_by_bytes));
	if (pl->type_cost == NULL || pl->type_by_bytes == NULL)
		return no_memory(pl);
	for (uint32_t id = 0; id < v->nnames; id++) {
		pl->type_cost[id] = -1;
		for (size_t k = 0; k < pol->ncosts; k++) {
			const struct mc_type_cost *tc = &pol->costs[k];

			if (tc->type && strlen(tc->type) == v->name_lens[id] &&
			    memcmp(tc->type, v->names[id], v->name_lens[id]) == 0) {
				pl->type_cost[id] = tc->cost;
				pl->type_by_bytes[id] = tc->by_bytes;
				break;
			}
		}
	}
	pl->rp.type_cost = pl->type_cost;
	pl->rp.type_cost_by_bytes = pl->type_by_bytes;
	pl->rp.ntype_cost = v->nnames;
	return 0;
}

static void
planner_free(struct planner *pl)
{
	for (size_t i = 0; i < pl->nnodes; i++) {
		free(pl->nodes[i].path);
		free(pl->nodes[i].heap);
		free(pl->nodes[i].list);
	}
	free(pl->nodes);
	free(pl->type_cost);
	free(pl->type_by_bytes);
	free(pl->bytes);
	free(pl->state);
	free(pl->taken);
	free(pl->order);
	free(pl->scratch);
	free(pl->leaf_of);
	free(pl->child_of);
	free(pl->touched);
	free(pl->id_usage);
	free(pl->id_eligible);
}

int
mc_planner_run(const struct mc_policy *pol, struct mc_cand_view *v, const struct mc_plan_params *pp,
	       struct mc_plan *out, FILE *explain, struct mc_err *err)
{
	struct planner pl;
	uint64_t now, soft_reserve = 0;
	char *root_path;
	int rc = -1;

	if (pol == NULL || v == NULL || pp == NULL || out == NULL)
		return mc_err_set(err, MC_ERR_INVALID,
				  "planner needs a policy, view, "
				  "parameters and plan");
	mc_plan_init(out);
	if (v->n >= NO_CAND)
		return mc_err_set(err, MC_ERR_TOO_LARGE,
				  "%zu candidates are more than a plan indexes", v->n);
	memset(&pl, 0, sizeof(pl));
	pl.pol = pol;
	pl.v = v;
	pl.out = out;
	pl.err = err;
	pl.default_ranker = pol->ranker ? pol->ranker : mc_ranker_find("lease");
	now = pp->now ? pp->now : v->created;
	pl.rp.now = now;
	/* the view's own clock: rankers go by it whenever it has one */
	pl.rp.seq = v->seq;
	pl.rp.lfu_half_life_accesses = pol->lfu_half_life_accesses;
	pl.rp.lfu_half_life_ms = pol->lfu_half_life_ms;
	root_path = strdup("");
	if (root_path == NULL || new_node(&pl, &pol->root, NO_NODE, root_path) < 0) {
		no_memory(&pl);
		goto out;
	}
	pl.nodes[0].target = pp->target;
	pl.nodes[0].lowerbound = pp->lowerbound == MC_PLAN_DEFAULT_LOWERBOUND
					 ? part_of(pp->target, fraction_of(&pl, &pol->root))
					 : pp->lowerbound;
	if (type_costs(&pl) < 0 || classify(&pl, now) < 0 || build(&pl, 0) < 0 ||
	    assign(&pl, 0) < 0)
		goto out;
	out->created = v->created;
	out->target = pp->target;
	out->lowerbound = pl.nodes[0].lowerbound;
	snprintf(out->policy, sizeof(out->policy), "%s", pol->name);
	if (pp->target > 0 && stages(&pl, 0) < 0)
		goto out;
	if (pp->target > 0 && pp->soft_pinned_pass && soft_pinned_pass(&pl, &soft_reserve) < 0)
		goto out;
	if (explain) {
		explain_node(&pl, 0, explain);
		if (pp->soft_pinned_pass) {
			char reserve[32];

			fprintf(explain, "  soft-pinned global  reserve %s\n",
				mc_fmt_size(soft_reserve, reserve, sizeof(reserve)));
		}
	}
	rc = 0;
out:
	planner_free(&pl);
	if (rc < 0) {
		mc_plan_free(out);
		return -1;
	}
	out->view = *v;
	mc_cand_view_init(v);
	return 0;
}

bool
mc_scope_contains(const char *scope, const char *stage)
{
	size_t len = strlen(scope);

	if (len == 0)
		return true;
	if (strncmp(scope, stage, len) != 0)
		return false;
	return stage[len] == '\0' || stage[len] == '/';
}

size_t
mc_plan_window(uint64_t need, uint64_t bytes, uint64_t copies)
{
	uint64_t mean, victims, want;

	if (copies == 0)
		return 0;
	mean = bytes / copies > 0 ? bytes / copies : 1;
	victims = need / mean + (need % mean != 0);
	want = victims > UINT64_MAX / MC_PLAN_WINDOW_FACTOR ? UINT64_MAX
							    : victims * MC_PLAN_WINDOW_FACTOR;
	if (want < MC_PLAN_WINDOW_MIN)
		want = MC_PLAN_WINDOW_MIN;
	if (want > copies)
		want = copies;
	return want > SIZE_MAX ? SIZE_MAX : (size_t)want;
}

size_t
mc_plan_window_grow(size_t window, uint64_t copies)
{
	uint64_t next = window > UINT64_MAX / 2 ? UINT64_MAX : (uint64_t)window * 2;

	if (next < MC_PLAN_WINDOW_MIN)
		next = MC_PLAN_WINDOW_MIN;
	if (next > copies)
		next = copies;
	return next > SIZE_MAX ? SIZE_MAX : (size_t)next;
}

size_t
mc_plan_window_worth(size_t window)
{
	size_t k = window / MC_PLAN_WORTH_SHARE;

	return k > 0 ? k : 1;
}
