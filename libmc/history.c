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
 * every EPOCH_SWEEP epochs forgets entries older than that, so no age
 * wraps around.
 */
#define WAYS 16
#define FP_BITS 12u
#define EPOCH_BITS 12u
#define EPOCH_MASK ((1u << EPOCH_BITS) - 1)
#define EPOCH_SWEEP (1u << (EPOCH_BITS - 1))
#define EPOCHS_PER_FILL 8u
/* The table is sized to this much more than the objects cached, so it is rebuilt rarely. */
#define HEADROOM 1.25

struct mc_history {
	double per_object;
	uint32_t *t;	/* nb x WAYS entries, 0 empty */
	uint64_t nb;	/* 0 until the first eviction */
	uint64_t sized; /* the objects the table is sized for */
	unsigned shift; /* an epoch is 2^shift references */
	uint64_t swept; /* the epoch of the last sweep */
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
	t = malloc(nb * WAYS * sizeof(*t));
	if (t == NULL)
		return -1;
	/* written now, so the memory it costs shows from the start */
	memset(t, 0, nb * WAYS * sizeof(*t));
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
	h->count = 0;
	for (uint64_t i = 0; i < nb * WAYS; i++)
		h->count += t[i] != 0;
	return 0;
}

/* Forget entries older than EPOCH_SWEEP epochs, once every EPOCH_SWEEP epochs. */
static void
sweep(struct mc_history *h, uint64_t epoch)
{
	if (epoch - h->swept < EPOCH_SWEEP)
		return;
	h->swept = epoch;
	for (uint64_t i = 0; i < h->nb * WAYS; i++)
		if (h->t[i] != 0 && entry_age(h->t[i], epoch) >= EPOCH_SWEEP) {
			h->t[i] = 0;
			h->count--;
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

/* By the tier a copy is on, newest first within it. */
static int
by_tier_newest_first(const void *a, const void *b, void *arg)
{
	const struct mc_cand_view *v = arg;
	const struct mc_cand *x = &v->c[*(const uint32_t *)a], *y = &v->c[*(const uint32_t *)b];

	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	if (x->created_seq != y->created_seq)
		return x->created_seq > y->created_seq ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

int
mc_history_segment(struct mc_cand_view *v, mc_history_capacity_fn capacity, void *ctx,
		   struct mc_err *err)
{
	uint64_t allow = 0, sum = 0;
	uint32_t *idx;
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++)
		n += (v->c[i].flags & MC_CAND_PROBATION) != 0;
	if (n == 0)
		return 0;
	idx = malloc(n * sizeof(*idx));
	if (idx == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE,
				  "out of memory for the probationary segment");
	n = 0;
	for (size_t i = 0; i < v->n; i++)
		if (v->c[i].flags & MC_CAND_PROBATION)
			idx[n++] = (uint32_t)i;
	qsort_r(idx, n, sizeof(*idx), by_tier_newest_first, v);
	for (size_t k = 0; k < n; k++) {
		struct mc_cand *c = &v->c[idx[k]];

		if (k == 0 || c->peer != v->c[idx[k - 1]].peer ||
		    c->tier != v->c[idx[k - 1]].tier) {
			allow = (uint64_t)((double)capacity(ctx, v, c) * MC_HISTORY_PROBATION);
			sum = 0;
		}
		sum += c->bytes;
		if (sum <= allow)
			c->flags &= ~MC_CAND_PROBATION;
	}
	free(idx);
	return 0;
}
