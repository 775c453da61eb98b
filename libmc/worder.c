/* The worth order of a tier's copies (mc/worder.h). */
#include <math.h>
#include <stdlib.h>

#include "mc/worder.h"

/* Below the log2 of every positive double (-1074) by more than any key's spread at one access. */
#define NO_WORTH 2048.0

double
mc_worth_key(double worth, uint64_t access_seq, double hl)
{
	double at = (double)access_seq / (hl >= 1 ? hl : 1);

	return worth > 0 ? log2(worth) + at : at - NO_WORTH;
}

void
mc_worder_init(struct mc_worder *w, const struct mc_worder_ops *ops, void *arg)
{
	*w = (struct mc_worder){ .hl = 1, .ops = ops, .arg = arg };
}

void
mc_worder_free(struct mc_worder *w)
{
	free(w->v);
	free(w->frontier);
	mc_worder_init(w, w->ops, w->arg);
}

/* a before b: lower key, then lower id (one order for equal keys, whatever came first) */
static int
below(const struct mc_worder_ent *a, const struct mc_worder_ent *b)
{
	return a->key < b->key || (a->key == b->key && a->id < b->id);
}

static void
put_at(struct mc_worder *w, size_t i, struct mc_worder_ent e)
{
	w->v[i] = e;
	*w->ops->place(w->arg, e.id) = (uint32_t)i;
}

static void
sift_up(struct mc_worder *w, size_t i)
{
	struct mc_worder_ent e = w->v[i];

	while (i > 1 && below(&e, &w->v[i / 2])) {
		put_at(w, i, w->v[i / 2]);
		i /= 2;
	}
	put_at(w, i, e);
}

static void
sift_down(struct mc_worder *w, size_t i)
{
	struct mc_worder_ent e = w->v[i];

	for (;;) {
		size_t c = 2 * i;

		if (c > w->n)
			break;
		if (c + 1 <= w->n && below(&w->v[c + 1], &w->v[c]))
			c++;
		if (!below(&w->v[c], &e))
			break;
		put_at(w, i, w->v[c]);
		i = c;
	}
	put_at(w, i, e);
}

int
mc_worder_set(struct mc_worder *w, uint64_t id, double worth, uint64_t access_seq)
{
	uint32_t *place = w->ops->place(w->arg, id);
	/* a stale order's keys are all taken again before they are compared */
	struct mc_worder_ent e = { mc_worth_key(worth, access_seq, w->hl), id };

	if (*place != 0) {
		size_t i = *place;
		int up = below(&e, &w->v[i]);

		w->v[i] = e;
		if (up)
			sift_up(w, i);
		else
			sift_down(w, i);
		return 0;
	}
	/* slots 1..n in use: the next is n + 1, and the heap's places fit in 32 bits */
	if (w->n + 1 >= UINT32_MAX)
		return -1;
	if (w->n + 1 >= w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 64;
		struct mc_worder_ent *v = realloc(w->v, ncap * sizeof(*v));

		if (v == NULL)
			return -1;
		w->v = v;
		w->cap = ncap;
	}
	w->v[++w->n] = e;
	sift_up(w, w->n);
	return 0;
}

void
mc_worder_remove(struct mc_worder *w, uint64_t id)
{
	uint32_t *place = w->ops->place(w->arg, id);
	size_t i = *place;
	struct mc_worder_ent last;

	if (i == 0)
		return;
	*place = 0;
	last = w->v[w->n--];
	if (i > w->n)
		return;
	w->v[i] = last;
	if (i > 1 && below(&last, &w->v[i / 2]))
		sift_up(w, i);
	else
		sift_down(w, i);
}

void
mc_worder_stale(struct mc_worder *w)
{
	w->hl = 0;
}

/* Every key again under half-life hl, and the heap rebuilt bottom up. */
static void
rekey(struct mc_worder *w, double hl)
{
	w->hl = hl;
	for (size_t i = 1; i <= w->n; i++) {
		double worth;
		uint64_t seq;

		w->ops->worth(w->arg, w->v[i].id, &worth, &seq);
		w->v[i].key = mc_worth_key(worth, seq, hl);
	}
	for (size_t i = w->n / 2; i >= 1; i--)
		sift_down(w, i);
	w->rekeys++;
}

/* The frontier is a min-heap of places in w->v, by their entries. */
static void
frontier_push(struct mc_worder *w, size_t *nf, uint32_t place)
{
	uint32_t *f = w->frontier;
	size_t i = (*nf)++;

	while (i > 0 && below(&w->v[place], &w->v[f[(i - 1) / 2]])) {
		f[i] = f[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	f[i] = place;
}

static uint32_t
frontier_pop(struct mc_worder *w, size_t *nf)
{
	uint32_t *f = w->frontier, top = f[0], last = f[--*nf];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *nf)
			break;
		if (c + 1 < *nf && below(&w->v[f[c + 1]], &w->v[f[c]]))
			c++;
		if (!below(&w->v[f[c]], &w->v[last]))
			break;
		f[i] = f[c];
		i = c;
	}
	if (*nf > 0)
		f[i] = last;
	return top;
}

long
mc_worder_lowest(struct mc_worder *w, double hl, size_t k, uint64_t *out)
{
	size_t got = 0, nf = 0;

	if (hl < 1)
		hl = 1;
	if (w->n > 0 && (w->hl == 0 || fabs(log2(hl / w->hl)) > MC_WORDER_DRIFT))
		rekey(w, hl);
	else if (w->n == 0)
		w->hl = hl;
	if (k > w->n)
		k = w->n;
	if (k == 0)
		return 0;
	/* each pop adds at most two: the frontier never holds more than k + 1 */
	if (w->fcap < k + 1) {
		uint32_t *f = realloc(w->frontier, (k + 1) * sizeof(*f));

		if (f == NULL)
			return -1;
		w->frontier = f;
		w->fcap = k + 1;
	}
	frontier_push(w, &nf, 1);
	while (got < k) {
		uint32_t i = frontier_pop(w, &nf);

		out[got++] = w->v[i].id;
		if (2 * (size_t)i <= w->n)
			frontier_push(w, &nf, 2 * i);
		if (2 * (size_t)i + 1 <= w->n)
			frontier_push(w, &nf, 2 * i + 1);
	}
	return (long)got;
}
