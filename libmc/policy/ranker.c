/*
 * The ranker table and the one sort every ranker shares. Each score is
 * computed once into a scratch array, never inside a comparator, so a
 * ranker may be as costly as it likes per candidate and is still called
 * exactly n times.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mc/ranker.h"

extern const struct mc_ranker mc_rank_lease, mc_rank_lru, mc_rank_fifo, mc_rank_lfu,
	mc_rank_hyperbolic, mc_rank_cost, mc_rank_kv;

const struct mc_ranker *const mc_rankers[] = {
	&mc_rank_lease,	     &mc_rank_lru,  &mc_rank_fifo, &mc_rank_lfu,
	&mc_rank_hyperbolic, &mc_rank_cost, &mc_rank_kv,   NULL,
};

uint64_t
mc_rank_recency(const struct mc_cand *c, const struct mc_ranker_params *p)
{
	return mc_rank_logical(p) ? c->access_seq : c->last_access;
}

uint64_t
mc_rank_birth(const struct mc_cand *c, const struct mc_ranker_params *p)
{
	return mc_rank_logical(p) ? c->created_seq : c->created;
}

/* How far before the view's time a stamp lies; a later stamp is fresh (0). */
static uint64_t
before_view(uint64_t stamp, const struct mc_ranker_params *p)
{
	uint64_t t = mc_rank_logical(p) ? p->seq : p->now;

	return t > stamp ? t - stamp : 0;
}

uint64_t
mc_rank_idle(const struct mc_cand *c, const struct mc_ranker_params *p)
{
	return before_view(mc_rank_recency(c, p), p);
}

uint64_t
mc_rank_lifetime(const struct mc_cand *c, const struct mc_ranker_params *p)
{
	uint64_t age = before_view(mc_rank_birth(c, p), p);

	/*
	 * In accesses the creation is one of them: a copy made by the view's
	 * last access has been in the cache for 1. In ms, a copy made this
	 * millisecond counts as 1 ms.
	 */
	if (mc_rank_logical(p))
		return age < UINT64_MAX ? age + 1 : age;
	return age < 1 ? 1 : age;
}

double
mc_rank_decay(const struct mc_cand *c, const struct mc_ranker_params *p)
{
	uint64_t half_life;

	if (mc_rank_logical(p))
		half_life = p->lfu_half_life_accesses ? p->lfu_half_life_accesses
						      : MC_RANK_HALF_LIFE_ACCESSES;
	else
		half_life = p->lfu_half_life_ms ? p->lfu_half_life_ms : MC_RANK_HALF_LIFE_MS;
	return exp2(-((double)mc_rank_idle(c, p) / (double)half_life));
}

const struct mc_ranker *
mc_ranker_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; mc_rankers[i]; i++)
		if (strcmp(mc_rankers[i]->name, name) == 0)
			return mc_rankers[i];
	return NULL;
}

/*
 * Ranking a 10M-candidate view must cost about as much as decoding it, so
 * the sort is an LSD radix sort rather than qsort: each score becomes a
 * 64-bit key whose unsigned order is the score's order, and the pairs are
 * sorted stably by the candidate index first, then by the tie (the
 * candidate's recency: logical age, older first), and by that key last.
 * Equal scores thus never fall to the view's order (a master's view is
 * in hash-table order): they go by age, and what is still tied after
 * that by key bytes, sorted in a last pass over the (rare) tied runs.
 * Below RADIX_MIN a comparison sort is cheaper than the byte histograms.
 */
#define RADIX_MIN 1024
#define KEY_DIGITS 8 /* bytes of the score key */
#define TIE_DIGITS 8 /* bytes of the tie */
#define IDX_DIGITS 4 /* bytes of the candidate index */
#define DIGITS (IDX_DIGITS + TIE_DIGITS + KEY_DIGITS)

struct scored {
	uint64_t key;
	uint64_t tie;
	uint32_t idx;
};

/*
 * Flip a double's bits so that unsigned comparison orders them like the
 * doubles: negative values have every bit inverted (larger magnitude is
 * smaller), others just the sign bit. -0 and 0 are the same score and get
 * the same key. The caller has already turned NaN into infinity.
 */
static uint64_t
score_key(double x)
{
	uint64_t b;

	if (x == 0)
		return 1ULL << 63;
	memcpy(&b, &x, sizeof(b));
	return (b >> 63) ? ~b : b | (1ULL << 63);
}

static int
scored_cmp(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->tie != y->tie)
		return x->tie < y->tie ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static unsigned
digit(const struct scored *s, unsigned d)
{
	if (d < IDX_DIGITS)
		return (s->idx >> (8 * d)) & 0xff;
	if (d < IDX_DIGITS + TIE_DIGITS)
		return (unsigned)(s->tie >> (8 * (d - IDX_DIGITS))) & 0xff;
	return (unsigned)(s->key >> (8 * (d - IDX_DIGITS - TIE_DIGITS))) & 0xff;
}

static int
key_cmp(const void *a, const void *b, void *arg)
{
	const struct mc_cand_view *v = arg;
	const struct scored *x = a, *y = b;
	const struct mc_cand *cx = &v->c[x->idx], *cy = &v->c[y->idx];
	size_t n = cx->key_len < cy->key_len ? cx->key_len : cy->key_len;
	int c = n > 0 ? memcmp(mc_cand_key(v, cx), mc_cand_key(v, cy), n) : 0;

	if (c != 0)
		return c;
	if (cx->key_len != cy->key_len)
		return cx->key_len < cy->key_len ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/*
 * Order each run of equal score and tie by key bytes. Runs are short in
 * a view with sequences (every access has its own number); a view
 * without them may tie many candidates on one millisecond.
 */
static void
sort_tied_runs(const struct mc_cand_view *v, struct scored *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i + 1;

		while (j < n && s[j].key == s[i].key && s[j].tie == s[i].tie)
			j++;
		if (j - i > 1)
			qsort_r(s + i, j - i, sizeof(*s), key_cmp, (void *)v);
		i = j;
	}
}

/*
 * Sort s[0..n) by (key, tie, idx). Digits 0..3 are the index bytes, 4..11
 * the tie's, 12..19 the key's, least significant first. A pass whose byte is the same for
 * every pair is skipped: timestamps share their high bytes, so a typical
 * lease or lru ranking needs only a few passes. Returns s or tmp, whichever
 * holds the result, NULL on allocation failure.
 */
static struct scored *
radix_sort(struct scored *s, struct scored *tmp, size_t n)
{
	size_t(*count)[256];
	size_t i, sum, c;
	unsigned d, first = 0;

	count = calloc(DIGITS, sizeof(*count));
	if (!count)
		return NULL;
	for (i = 0; i < n; i++)
		for (d = 0; d < DIGITS; d++)
			count[d][digit(&s[i], d)]++;
	/*
	 * A scope is usually gathered by scanning the view, so its indices
	 * arrive ascending; the stable key passes then keep ties in index
	 * order without sorting by index at all.
	 */
	for (i = 1; i < n && s[i - 1].idx < s[i].idx; i++)
		;
	if (i == n)
		first = IDX_DIGITS;
	for (d = first; d < DIGITS; d++) {
		struct scored *t;

		if (count[d][digit(&s[0], d)] == n)
			continue;
		for (sum = 0, c = 0; c < 256; c++) {
			size_t k = count[d][c];

			count[d][c] = sum;
			sum += k;
		}
		for (i = 0; i < n; i++)
			tmp[count[d][digit(&s[i], d)]++] = s[i];
		t = s;
		s = tmp;
		tmp = t;
	}
	free(count);
	return s;
}

int
mc_rank(const struct mc_ranker *r, const struct mc_cand_view *v, uint32_t *idx, size_t n,
	const struct mc_ranker_params *p)
{
	struct scored *s, *tmp = NULL, *out;
	size_t i;

	if (n < 2)
		return 0;
	if (n > SIZE_MAX / 2 / sizeof(*s))
		return -1;
	s = malloc(n * sizeof(*s));
	if (!s)
		return -1;
	for (i = 0; i < n; i++) {
		double x = r->score(v, &v->c[idx[i]], p);

		/* a NaN has no place in an order: such a score goes last */
		if (isnan(x))
			x = HUGE_VAL;
		s[i].key = score_key(x);
		s[i].tie = mc_rank_recency(&v->c[idx[i]], p);
		s[i].idx = idx[i];
	}
	if (n < RADIX_MIN) {
		qsort(s, n, sizeof(*s), scored_cmp);
		out = s;
	} else {
		tmp = malloc(n * sizeof(*tmp));
		out = tmp ? radix_sort(s, tmp, n) : NULL;
		if (!out) {
			free(tmp);
			free(s);
			return -1;
		}
	}
	sort_tied_runs(v, out, n);
	for (i = 0; i < n; i++)
		idx[i] = out[i].idx;
	free(tmp);
	free(s);
	return 0;
}
