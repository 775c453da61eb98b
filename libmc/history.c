/*
 * The builder's history (mc/history.h): a FIFO ring of ghosts with an
 * open-addressing index over it, and a hill climber for the half-life.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mc/candidates.h"
#include "mc/history.h"

/*
 * Ghosts: a set-associative table of 4-byte entries, sixteen to a bucket
 * (one cache line), each {12-bit key fingerprint, 8-bit LRFU value on a
 * log scale, 12-bit eviction time in epochs}. A key's bucket comes from
 * the high bits of its hash, its fingerprint from the low ones; a full
 * bucket gives up its oldest entry, so with sixteen ways the table keeps
 * nearly what a FIFO of the same size would, at 4 bytes a ghost and no
 * index. An epoch is an eighth of a cache-full of references; a sweep
 * that walks the table a few buckets at each call forgets entries older
 * than EPOCH_SWEEP epochs, so no age wraps around, and no call ever
 * scans the whole table.
 */
#define WAYS 16
#define FP_BITS 12u
#define EPOCH_BITS 12u
#define EPOCH_MASK ((1u << EPOCH_BITS) - 1)
#define EPOCH_SWEEP (1u << (EPOCH_BITS - 1))
#define EPOCHS_PER_FILL 8u
/* Buckets the sweep visits at each call: a lap of the table every nb / 4 calls. */
#define SWEEP_BUCKETS 4u
/* The table is sized to this much more than the objects cached, so it is rebuilt rarely. */
#define HEADROOM 1.25

struct mc_history {
	double per_object;
	uint32_t *t;	/* nb x WAYS entries, 0 empty */
	uint64_t nb;	/* 0 until the first eviction */
	uint64_t sized; /* the objects the table is sized for */
	unsigned shift; /* an epoch is 2^shift references */
	uint64_t sweep; /* the next bucket the sweep visits */
	uint64_t count; /* entries in use */
	/* the climber: H = 2^lk x cached objects */
	int lk, dir;
	uint64_t hits, refs;
	double prev_rate;
	bool have_prev;
	uint64_t evicted, resumed, periods;
};

static uint32_t
fp_of(uint64_t hash)
{
	uint32_t fp = (uint32_t)(hash & ((1u << FP_BITS) - 1));

	return fp != 0 ? fp : 1;
}

static uint32_t
entry_fp(uint32_t e)
{
	return e >> (32 - FP_BITS);
}

static uint32_t
entry_epoch(uint32_t e)
{
	return e & EPOCH_MASK;
}

static uint32_t
entry_code(uint32_t e)
{
	return e >> EPOCH_BITS & 0xff;
}

static uint32_t
pack(uint32_t fp, uint32_t code, uint64_t epoch)
{
	return fp << (32 - FP_BITS) | code << EPOCH_BITS | ((uint32_t)epoch & EPOCH_MASK);
}

/* Epochs from an entry's to `epoch` (entries are never older than the sweep allows). */
static uint32_t
entry_age(uint32_t e, uint64_t epoch)
{
	return ((uint32_t)epoch - entry_epoch(e)) & EPOCH_MASK;
}

double
mc_lrfu_decay(double crf, uint64_t last, uint64_t now, double hl)
{
	if (now <= last || crf <= 0)
		return crf;
	return crf * exp2(-(double)(now - last) / (hl >= 1 ? hl : 1));
}

double
mc_lrfu_ref(double crf, uint64_t last, uint64_t now, double hl)
{
	return mc_lrfu_decay(crf, last, now, hl) + 1;
}

/* Just below: 2^-20 apart, which a float still tells apart over a thousand blocks. */
#define BELOW_PARENT (1.0 - 1.0 / (1 << 20))

double
mc_chain_worth(double crf, double parent_worth)
{
	if (parent_worth < 0 || crf < parent_worth * BELOW_PARENT)
		return crf;
	return parent_worth * BELOW_PARENT;
}

/* The value on a log scale: eighths of a power of two, from 2^-8 up to 2^24. */
static uint32_t
crf_code(double crf)
{
	double v = (log2(crf > 0 ? crf : 1e-9) + 8) * 8;

	return v < 1 ? 1 : v > 255 ? 255 : (uint32_t)lround(v);
}

static double
crf_value(uint32_t code)
{
	return exp2((double)code / 8 - 8);
}

static uint64_t
bucket_of(uint64_t hash, uint64_t nb)
{
	return (uint64_t)(((unsigned __int128)hash * nb) >> 64);
}

static uint32_t *
bucket(const struct mc_history *h, uint64_t hash)
{
	return &h->t[bucket_of(hash, h->nb) * WAYS];
}

static uint64_t
epoch_of(const struct mc_history *h, uint64_t now)
{
	return now >> h->shift;
}

/*
 * Size the table for `objects` cached objects: rebuilt when they
 * outgrow it or shrink to a quarter of it. A rebuild keeps each entry
 * in the bucket that covers the middle of its old one's hash range, so
 * most stay findable; the rest are forgotten, as a bounded history may.
 */
static int
fit(struct mc_history *h, uint64_t objects)
{
	uint64_t sized, nb, fill = 1;
	uint32_t *t;
	unsigned shift = 0;

	if (objects == 0)
		objects = 1;
	if (h->nb != 0 && objects <= h->sized && objects * 4 > h->sized)
		return 0;
	sized = (uint64_t)((double)objects * HEADROOM) + 1;
	nb = (uint64_t)ceil(h->per_object * (double)sized / WAYS);
	if (nb == 0)
		nb = 1;
	/* zeroed pages come as ghosts fill them: no stall at the first eviction */
	t = calloc(nb * WAYS, sizeof(*t));
	if (t == NULL)
		return -1;
	h->count = 0;
	for (uint64_t i = 0; h->t != NULL && i < h->nb * WAYS; i++) {
		uint32_t e = h->t[i];
		uint64_t ob = i / WAYS;

		if (e == 0)
			continue;
		uint32_t *b =
			&t[(uint64_t)(((double)ob + 0.5) * (double)nb / (double)h->nb) * WAYS];
		for (int w = 0; w < WAYS; w++)
			if (b[w] == 0) {
				b[w] = e;
				h->count++;
				break;
			}
	}
	free(h->t);
	h->t = t;
	h->nb = nb;
	h->sized = sized;
	/*
	 * An epoch: an eighth of a cache-full of references, fixed at the
	 * first sizing (ages already stored stay in the units they were
	 * taken in).
	 */
	if (h->shift == 0) {
		while (fill * 2 <= objects / EPOCHS_PER_FILL)
			fill *= 2, shift++;
		h->shift = shift;
	}
	return 0;
}

/* Forget the entries older than EPOCH_SWEEP epochs in the next few buckets. */
static void
sweep(struct mc_history *h, uint64_t epoch)
{
	for (unsigned k = 0; k < SWEEP_BUCKETS; k++) {
		uint32_t *b;

		if (h->sweep >= h->nb)
			h->sweep = 0;
		b = &h->t[h->sweep++ * WAYS];
		for (int w = 0; w < WAYS; w++)
			if (b[w] != 0 && entry_age(b[w], epoch) >= EPOCH_SWEEP) {
				b[w] = 0;
				h->count--;
			}
	}
}

struct mc_history *
mc_history_new(double ghosts_per_object, struct mc_err *err)
{
	struct mc_history *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the eviction history");
		return NULL;
	}
	h->per_object = ghosts_per_object > 0 ? ghosts_per_object : MC_HISTORY_GHOSTS;
	h->lk = MC_HISTORY_LOG_FACTOR_START;
	h->dir = 1;
	return h;
}

void
mc_history_free(struct mc_history *h)
{
	if (h == NULL)
		return;
	free(h->t);
	free(h);
}

void
mc_history_evicted(struct mc_history *h, uint64_t hash, double crf, uint64_t now, uint64_t objects)
{
	uint32_t fp = fp_of(hash), *b, oldest_age = 0;
	uint64_t epoch;
	int slot = -1, oldest = 0;

	h->evicted++;
	if (fit(h, objects) != 0 && h->nb == 0)
		return; /* no table yet and no memory for one: forgotten */
	epoch = epoch_of(h, now);
	sweep(h, epoch);
	b = bucket(h, hash);
	for (int w = 0; w < WAYS; w++) {
		uint32_t age = entry_age(b[w], epoch);

		if (b[w] == 0 || entry_fp(b[w]) == fp) {
			slot = w;
			break;
		}
		if (age >= oldest_age) {
			oldest_age = age;
			oldest = w;
		}
	}
	if (slot < 0)
		slot = oldest;
	else if (b[slot] == 0)
		h->count++;
	b[slot] = pack(fp, crf_code(crf), epoch);
}

bool
mc_history_take(struct mc_history *h, uint64_t hash, uint64_t now, uint64_t objects, double *crf)
{
	uint32_t fp = fp_of(hash), *b;
	uint64_t epoch;

	*crf = 0;
	if (h->nb == 0)
		return false;
	epoch = epoch_of(h, now);
	sweep(h, epoch);
	b = bucket(h, hash);
	for (int w = 0; w < WAYS; w++) {
		uint32_t e = b[w];

		if (e == 0 || entry_fp(e) != fp)
			continue;
		/* the age is known to an epoch: take the middle of it */
		double age = ((double)entry_age(e, epoch) + 0.5) * (double)(1ull << h->shift);

		*crf = crf_value(entry_code(e)) * exp2(-age / mc_history_half_life(h, objects));
		b[w] = 0;
		h->count--;
		h->resumed++;
		return true;
	}
	return false;
}

/* ---- the climber ---- */

double
mc_history_half_life(const struct mc_history *h, uint64_t objects)
{
	double hl = exp2(h->lk) * (double)(objects ? objects : 1);

	return hl < 1 ? 1 : hl;
}

void
mc_history_ref(struct mc_history *h, bool hit, uint64_t objects)
{
	uint64_t period = (uint64_t)MC_HISTORY_PERIOD * (objects ? objects : 1);
	double rate;

	h->hits += hit;
	if (++h->refs < period)
		return;
	rate = (double)h->hits / (double)h->refs;
	/* the last step lowered the hit rate: go the other way */
	if (h->have_prev && rate < h->prev_rate)
		h->dir = -h->dir;
	h->have_prev = true;
	h->prev_rate = rate;
	h->lk += h->dir;
	if (h->lk < MC_HISTORY_LOG_FACTOR_MIN) {
		h->lk = MC_HISTORY_LOG_FACTOR_MIN;
		h->dir = 1;
	}
	if (h->lk > MC_HISTORY_LOG_FACTOR_MAX) {
		h->lk = MC_HISTORY_LOG_FACTOR_MAX;
		h->dir = -1;
	}
	h->hits = h->refs = 0;
	h->periods++;
}

void
mc_history_stats(const struct mc_history *h, struct mc_history_stats *out)
{
	out->ghosts = h->count;
	out->evicted = h->evicted;
	out->resumed = h->resumed;
	out->periods = h->periods;
	out->factor = exp2(h->lk);
	out->last_hit_rate = h->have_prev ? h->prev_rate : 0;
}

size_t
mc_history_memory(const struct mc_history *h)
{
	return sizeof(*h) + (size_t)h->nb * WAYS * sizeof(*h->t);
}

/* ---- the probationary segment ---- */

static int
by_index(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Clear MC_CAND_PROBATION on the longest run of idx[0..n), newest first
 * (created_seq down, then index up), whose bytes fit in allow. A
 * selection, not a sort: each pass partitions around a pivot's
 * created_seq and settles the newer side whole or recurses into it, so
 * the work is linear in n on average (views hold millions).
 */
static void
clear_newest(struct mc_cand_view *v, uint32_t *idx, size_t n, uint64_t allow)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		uint64_t pivot = v->c[idx[lo + (hi - lo) / 2]].created_seq, newer = 0, same = 0;
		size_t lt = lo, i = lo, gt = hi;

		/* [lo, lt) newer than the pivot, [lt, gt) equal, [gt, hi) older */
		while (i < gt) {
			uint64_t cs = v->c[idx[i]].created_seq;
			uint32_t t = idx[i];

			if (cs > pivot) {
				idx[i++] = idx[lt];
				idx[lt++] = t;
				newer += v->c[t].bytes;
			} else if (cs < pivot) {
				idx[i] = idx[--gt];
				idx[gt] = t;
			} else {
				i++;
				same += v->c[t].bytes;
			}
		}
		if (newer > allow) {
			hi = lt; /* the run ends among the newer */
			continue;
		}
		for (size_t k = lo; k < lt; k++)
			v->c[idx[k]].flags &= ~MC_CAND_PROBATION;
		allow -= newer;
		if (same > allow) {
			/* ties (created_seq 0 from an old snapshot, say) go by index */
			qsort(idx + lt, gt - lt, sizeof(*idx), by_index);
			for (size_t k = lt; k < gt && v->c[idx[k]].bytes <= allow; k++) {
				allow -= v->c[idx[k]].bytes;
				v->c[idx[k]].flags &= ~MC_CAND_PROBATION;
			}
			return;
		}
		for (size_t k = lt; k < gt; k++)
			v->c[idx[k]].flags &= ~MC_CAND_PROBATION;
		allow -= same;
		lo = gt;
	}
}

/* The probationers of one tier: a run of the grouped index array. */
struct seg_group {
	uint32_t peer, tier;
	uint32_t next; /* the next group of the same peer, + 1 (0: none) */
	size_t count, at;
};

int
mc_history_segment(struct mc_cand_view *v, mc_history_capacity_fn capacity, void *ctx,
		   struct mc_err *err)
{
	struct seg_group *g = NULL;
	uint32_t *idx = NULL, *gid = NULL, *first = NULL, ng = 0;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < v->n; i++)
		n += (v->c[i].flags & MC_CAND_PROBATION) != 0;
	if (n == 0)
		return 0;
	idx = malloc(n * sizeof(*idx));
	gid = malloc(n * sizeof(*gid));
	first = calloc(v->nnames + 1, sizeof(*first)); /* per peer name: its first group + 1 */
	if (idx == NULL || gid == NULL || first == NULL)
		goto nomem;
	/* group the probationers by tier: a list of groups per peer name */
	n = 0;
	for (size_t i = 0; i < v->n; i++) {
		const struct mc_cand *c = &v->c[i];
		uint32_t k;

		if (!(c->flags & MC_CAND_PROBATION))
			continue;
		for (k = first[c->peer]; k != 0 && g[k - 1].tier != c->tier; k = g[k - 1].next)
			;
		if (k == 0) {
			struct seg_group *grown = realloc(g, ((size_t)ng + 1) * sizeof(*g));

			if (grown == NULL)
				goto nomem;
			g = grown;
			g[ng] = (struct seg_group){ .peer = c->peer,
						    .tier = c->tier,
						    .next = first[c->peer] };
			first[c->peer] = ++ng;
			k = ng;
		}
		g[k - 1].count++;
		gid[n] = k - 1;
		idx[n++] = (uint32_t)i;
	}
	/* a counting sort by group, keeping the view's order inside each */
	{
		uint32_t *sorted = malloc(n * sizeof(*sorted));
		size_t at = 0;

		if (sorted == NULL)
			goto nomem;
		for (uint32_t k = 0; k < ng; k++) {
			g[k].at = at;
			at += g[k].count;
		}
		for (size_t i = 0; i < n; i++)
			sorted[g[gid[i]].at++] = idx[i];
		free(idx);
		idx = sorted;
	}
	for (uint32_t k = 0; k < ng; k++) {
		size_t at = g[k].at - g[k].count;
		uint64_t allow =
			(uint64_t)((double)capacity(ctx, v, &v->c[idx[at]]) * MC_HISTORY_PROBATION);

		clear_newest(v, idx + at, g[k].count, allow);
	}
	goto out;
nomem:
	rc = mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the probationary segment");
out:
	free(idx);
	free(gid);
	free(first);
	free(g);
	return rc;
}
