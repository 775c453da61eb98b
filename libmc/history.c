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
 * log scale, 1 bit: evicted on probation, 11-bit eviction time in
 * epochs}. A key's bucket comes from
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
#define EPOCH_BITS 11u
#define PROBATION_BIT (1u << EPOCH_BITS)
#define CODE_SHIFT (EPOCH_BITS + 1)
#define EPOCH_MASK ((1u << EPOCH_BITS) - 1)
#define EPOCH_SWEEP (1u << (EPOCH_BITS - 1))
#define EPOCHS_PER_FILL 8u
/* Buckets the sweep visits at each call: a lap of the table every nb / 4 calls. */
#define SWEEP_BUCKETS 4u
/* The table is sized to this much more than the objects cached, so it is rebuilt rarely. */
#define HEADROOM 1.25

struct mc_history {
	double per_object;
	uint32_t *t;		  /* nb x WAYS entries, 0 empty */
	uint64_t nb;		  /* 0 until the first eviction */
	uint64_t sized;		  /* the objects the table is sized for */
	unsigned shift;		  /* an epoch is 2^shift references */
	uint64_t sweep;		  /* the next bucket the sweep visits */
	uint64_t count;		  /* entries in use */
	uint64_t count_probation; /* of them, evicted on probation */
	double share;		  /* the probationary segment's share of a tier */
	/* the half-life: H = 2^lk x cached objects, lk the best shadow's */
	int lk;
	struct shadow *shadow; /* MC_HISTORY_FACTORS of them, made at the first reference */
	bool shadow_failed;
	uint64_t window; /* sampled references in this window */
	double last_rate;
	uint64_t hits, refs;
	uint64_t evicted, resumed, periods;
};

static void shadows_ref(struct mc_history *h, uint64_t hash, uint64_t objects);
static void shadows_free(struct mc_history *h);

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
	return e >> CODE_SHIFT & 0xff;
}

static uint32_t
pack(uint32_t fp, uint32_t code, bool probation, uint64_t epoch)
{
	return fp << (32 - FP_BITS) | code << CODE_SHIFT | (probation ? PROBATION_BIT : 0) |
	       ((uint32_t)epoch & EPOCH_MASK);
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
	h->count = h->count_probation = 0;
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
				h->count_probation += (e & PROBATION_BIT) != 0;
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

static void
forget(struct mc_history *h, uint32_t *e)
{
	h->count--;
	h->count_probation -= (*e & PROBATION_BIT) != 0;
	*e = 0;
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
			if (b[w] != 0 && entry_age(b[w], epoch) >= EPOCH_SWEEP)
				forget(h, &b[w]);
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
	h->share = MC_HISTORY_PROBATION;
	return h;
}

void
mc_history_free(struct mc_history *h)
{
	if (h == NULL)
		return;
	shadows_free(h);
	free(h->t);
	free(h);
}

void
mc_history_evicted(struct mc_history *h, uint64_t hash, double crf, bool probation, uint64_t now,
		   uint64_t objects)
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
	if (b[slot] != 0)
		forget(h, &b[slot]);
	b[slot] = pack(fp, crf_code(crf), probation, epoch);
	h->count++;
	h->count_probation += probation;
}

/*
 * A key came back after its copy was evicted: as ARC moves its split
 * between recency and frequency on a hit in either ghost list, a key
 * evicted on probation says the segment was too small, one evicted
 * after it was read says the rest was. The step is an object's worth of
 * the share, times the other kind's ghosts over this kind's, so the
 * rarer kind of hit weighs more.
 */
static void
adapt_share(struct mc_history *h, bool probation, uint64_t objects)
{
	double mine = (double)(probation ? h->count_probation : h->count - h->count_probation);
	double other = (double)h->count - mine;
	double step =
		(mine > 0 && other > mine ? other / mine : 1) / (double)(objects ? objects : 1);

	h->share += probation ? step : -step;
	h->share = h->share < 0 ? 0 : h->share > 1 ? 1 : h->share;
}

double
mc_history_probation(const struct mc_history *h)
{
	return h->share;
}

bool
mc_history_take(struct mc_history *h, uint64_t hash, uint64_t now, uint64_t objects, double *crf)
{
	uint32_t fp = fp_of(hash), *b;
	uint64_t epoch;

	*crf = 0;
	shadows_ref(h, hash, objects);
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
		adapt_share(h, (e & PROBATION_BIT) != 0, objects);
		forget(h, &b[w]);
		h->resumed++;
		return true;
	}
	return false;
}

/* ---- the shadows: the half-life chosen by miniature simulation ---- */

/*
 * A shadow is a small LRFU cache, on demand and without chains, fed a
 * spatial sample of the references (the keys whose hash falls in the
 * first 2^-k of the range; k chosen so the sample holds SHADOW_MIN to
 * 2 x SHADOW_MIN of the cached objects) and sized to the same share of
 * the cache. Every shadow sees the same sample and differs only in its
 * half-life factor, one per power of two of the range; each remembers
 * ghosts of what it evicted, as the real cache does. A shadow's hit
 * count on the sample predicts the real cache's at that factor
 * (Waldspurger et al., "Cache modeling and optimization using
 * miniature simulations", 2017), so the half-life moves straight to
 * the best of them instead of stepping towards it one period at a
 * time.
 *
 * A shadow ranks by the LRFU value on a log scale against a clock that
 * advances 1 / H a reference: log2 of the sum of 2^clock over the key's
 * references. That order never changes with time, so a binary heap
 * keeps it; a reference only raises its key's score (sift down).
 */
#define SHADOW_MIN 256u
#define SHADOW_CAP (2 * SHADOW_MIN)
#define SHADOW_GHOSTS 4u /* ghosts per shadow object, as MC_HISTORY_GHOSTS */
#define SHADOW_RING (SHADOW_GHOSTS * SHADOW_CAP)
#define SHADOW_RECS (SHADOW_CAP + SHADOW_RING + 1)
#define SHADOW_SLOTS 4096u /* the key index: a power of two above SHADOW_RECS / 0.7 */
#define SHADOW_NONE UINT32_MAX
/* A window's hits fade by this much each window: the choice looks back a few windows. */
#define SHADOW_FADE 0.875

struct shadow_rec {
	uint64_t key;
	double score;  /* log2 of the LRFU value, in the shadow's clock */
	uint32_t heap; /* its place in the heap; SHADOW_NONE: a ghost */
	uint32_t ring; /* a ghost: the ring stamp it was pushed with */
};

struct shadow {
	double clock; /* advances 1 / H a reference */
	struct shadow_rec *rec;
	uint32_t *slot; /* SHADOW_SLOTS: record index + 1, 0 empty */
	uint32_t *heap; /* resident records, lowest score first */
	uint32_t nheap;
	uint32_t *free; /* unused record indices */
	uint32_t nfree;
	uint32_t *ring; /* ghost records in eviction order, with their stamps */
	uint32_t *ring_stamp;
	uint32_t ring_head, ring_len, stamp;
	uint64_t hits;
	double score; /* faded hits over the windows so far */
	/* references it and the current factor's shadow disagreed on, this window and faded */
	uint64_t split;
	double split_faded;
};

/* What the shadows take, allocated at the first eviction: a fixed cost. */
#define SHADOWS_BYTES                                                                            \
	(MC_HISTORY_FACTORS *                                                                    \
	 (sizeof(struct shadow) + SHADOW_RECS * (sizeof(struct shadow_rec) + sizeof(uint32_t)) + \
	  (SHADOW_SLOTS + SHADOW_CAP + 1 + 2 * SHADOW_RING) * sizeof(uint32_t)))
_Static_assert(SHADOWS_BYTES <= MC_HISTORY_SHADOW_BYTES, "the shadows outgrew their bound");

static uint32_t
shadow_home(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (SHADOW_SLOTS - 1);
}

/* The slot of key in the index, or of the empty slot that ends its probe. */
static uint32_t
shadow_find(const struct shadow *s, uint64_t key)
{
	uint32_t i = shadow_home(key);

	while (s->slot[i] != 0 && s->rec[s->slot[i] - 1].key != key)
		i = (i + 1) & (SHADOW_SLOTS - 1);
	return i;
}

/* Remove slot i (linear probing: shift the rest of its run back). */
static void
shadow_unindex(struct shadow *s, uint32_t i)
{
	uint32_t j = i;

	s->slot[i] = 0;
	for (;;) {
		j = (j + 1) & (SHADOW_SLOTS - 1);
		if (s->slot[j] == 0)
			return;
		uint32_t home = shadow_home(s->rec[s->slot[j] - 1].key);

		/* j's entry may move to i when its home is not in (i, j] */
		if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
			s->slot[i] = s->slot[j];
			s->slot[j] = 0;
			i = j;
		}
	}
}

static void
heap_set(struct shadow *s, uint32_t at, uint32_t r)
{
	s->heap[at] = r;
	s->rec[r].heap = at;
}

static void
heap_up(struct shadow *s, uint32_t at)
{
	uint32_t r = s->heap[at];

	while (at > 0 && s->rec[s->heap[(at - 1) / 2]].score > s->rec[r].score) {
		heap_set(s, at, s->heap[(at - 1) / 2]);
		at = (at - 1) / 2;
	}
	heap_set(s, at, r);
}

static void
heap_down(struct shadow *s, uint32_t at)
{
	uint32_t r = s->heap[at];

	for (;;) {
		uint32_t c = 2 * at + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && s->rec[s->heap[c + 1]].score < s->rec[s->heap[c]].score)
			c++;
		if (s->rec[s->heap[c]].score >= s->rec[r].score)
			break;
		heap_set(s, at, s->heap[c]);
		at = c;
	}
	heap_set(s, at, r);
}

/* log2(2^a + 2^b) */
static double
log_add(double a, double b)
{
	double hi = a > b ? a : b, lo = a > b ? b : a;

	return hi + log2(1 + exp2(lo - hi));
}

/* Forget the oldest ghost, if the ring still holds it as one. */
static void
shadow_forget_oldest(struct shadow *s)
{
	uint32_t r = s->ring[s->ring_head], st = s->ring_stamp[s->ring_head];

	s->ring_head = (s->ring_head + 1) % SHADOW_RING;
	s->ring_len--;
	if (s->rec[r].heap == SHADOW_NONE && s->rec[r].ring == st) {
		shadow_unindex(s, shadow_find(s, s->rec[r].key));
		s->free[s->nfree++] = r;
	}
}

/* The lowest-scored resident becomes a ghost. */
static void
shadow_evict(struct shadow *s)
{
	uint32_t r = s->heap[0];

	if (--s->nheap > 0) {
		heap_set(s, 0, s->heap[s->nheap]);
		heap_down(s, 0);
	}
	if (s->ring_len == SHADOW_RING)
		shadow_forget_oldest(s);
	s->rec[r].heap = SHADOW_NONE;
	s->rec[r].ring = ++s->stamp;
	uint32_t at = (s->ring_head + s->ring_len++) % SHADOW_RING;

	s->ring[at] = r;
	s->ring_stamp[at] = s->stamp;
}

/*
 * One reference to key in a shadow of `cap` objects and half-life hl
 * (in sampled references); true on a hit.
 */
static bool
shadow_ref(struct shadow *s, uint64_t key, uint32_t cap, double hl)
{
	uint32_t i, r;

	s->clock += 1 / hl;
	i = shadow_find(s, key);
	if (s->slot[i] != 0) {
		r = s->slot[i] - 1;
		s->rec[r].score = log_add(s->rec[r].score, s->clock);
		if (s->rec[r].heap != SHADOW_NONE) {
			s->hits++;
			heap_down(s, s->rec[r].heap);
			return true;
		}
		/* a ghost comes back with its value */
		s->rec[r].heap = s->nheap;
		s->heap[s->nheap++] = r;
		heap_up(s, s->rec[r].heap);
	} else {
		/* ensure a free record: the ring gives up its oldest ghosts */
		while (s->nfree == 0)
			shadow_forget_oldest(s);
		i = shadow_find(s, key);
		r = s->free[--s->nfree];
		s->rec[r] = (struct shadow_rec){ .key = key, .score = s->clock };
		s->slot[i] = r + 1;
		s->rec[r].heap = s->nheap;
		s->heap[s->nheap++] = r;
		heap_up(s, s->rec[r].heap);
	}
	while (s->nheap > cap)
		shadow_evict(s);
	return false;
}

static void
shadows_free(struct mc_history *h)
{
	for (int k = 0; h->shadow != NULL && k < MC_HISTORY_FACTORS; k++) {
		struct shadow *s = &h->shadow[k];

		free(s->rec);
		free(s->slot);
		free(s->heap);
		free(s->free);
		free(s->ring);
		free(s->ring_stamp);
	}
	free(h->shadow);
	h->shadow = NULL;
}

static int
shadows_new(struct mc_history *h)
{
	h->shadow = calloc(MC_HISTORY_FACTORS, sizeof(*h->shadow));
	if (h->shadow == NULL)
		return -1;
	for (int k = 0; k < MC_HISTORY_FACTORS; k++) {
		struct shadow *s = &h->shadow[k];

		s->rec = malloc(SHADOW_RECS * sizeof(*s->rec));
		s->slot = calloc(SHADOW_SLOTS, sizeof(*s->slot));
		s->heap = malloc((SHADOW_CAP + 1) * sizeof(*s->heap));
		s->free = malloc(SHADOW_RECS * sizeof(*s->free));
		s->ring = malloc(SHADOW_RING * sizeof(*s->ring));
		s->ring_stamp = malloc(SHADOW_RING * sizeof(*s->ring_stamp));
		if (s->rec == NULL || s->slot == NULL || s->heap == NULL || s->free == NULL ||
		    s->ring == NULL || s->ring_stamp == NULL) {
			shadows_free(h);
			return -1;
		}
		for (uint32_t r = 0; r < SHADOW_RECS; r++)
			s->free[r] = SHADOW_RECS - 1 - r;
		s->nfree = SHADOW_RECS;
	}
	return 0;
}

/*
 * A window of the shadows ended (a shadow-full of sampled references):
 * fade their scores, add the window's hits, and take the best factor.
 * The current one keeps its place unless another leads it clearly.
 */
static void
shadows_choose(struct mc_history *h)
{
	int cur = h->lk - MC_HISTORY_LOG_FACTOR_MIN, best = cur;

	for (int k = 0; k < MC_HISTORY_FACTORS; k++) {
		struct shadow *s = &h->shadow[k];

		s->score = s->score * SHADOW_FADE + (double)s->hits;
		s->split_faded = s->split_faded * SHADOW_FADE + (double)s->split;
		s->hits = s->split = 0;
	}
	for (int k = 0; k < MC_HISTORY_FACTORS; k++)
		if (h->shadow[k].score > h->shadow[best].score)
			best = k;
	/*
	 * Move only on a lead beyond the noise. The shadows see the same
	 * references, so the noise of a lead is that of the references
	 * the two disagreed on (a paired comparison: McNemar's test); move
	 * when the lead is twice its standard deviation, so a flat top of
	 * the curve does not make the factor wander.
	 */
	if (best != cur &&
	    h->shadow[best].score - h->shadow[cur].score > 2 * sqrt(h->shadow[best].split_faded)) {
		h->lk = best + MC_HISTORY_LOG_FACTOR_MIN;
		for (int k = 0; k < MC_HISTORY_FACTORS; k++)
			h->shadow[k].split_faded = 0; /* against the new current from now */
	}
	/* the cache's own hit rate since the last choice */
	h->last_rate = h->refs > 0 ? (double)h->hits / (double)h->refs : 0;
	h->hits = h->refs = 0;
	h->periods++;
}

/* One reference to the key with this hash: to the shadows, if it is in the sample. */
static void
shadows_ref(struct mc_history *h, uint64_t hash, uint64_t objects)
{
	unsigned k = 0;
	uint32_t cap;

	/* until the first eviction every shadow holds everything: nothing to choose */
	if (h->nb == 0)
		return;
	if (h->shadow == NULL && (h->shadow_failed || shadows_new(h) != 0)) {
		h->shadow_failed = true; /* no memory: the factor stays where it is */
		return;
	}
	if (objects == 0)
		objects = 1;
	while ((objects >> k) > SHADOW_CAP)
		k++;
	if (k > 0 && (hash >> (64 - k)) != 0)
		return;
	/* rounded down: a shadow's heap has room for SHADOW_CAP and the one coming in */
	cap = (uint32_t)(objects >> k);
	bool hit[MC_HISTORY_FACTORS];
	int cur = h->lk - MC_HISTORY_LOG_FACTOR_MIN;

	for (int f = 0; f < MC_HISTORY_FACTORS; f++)
		hit[f] = shadow_ref(&h->shadow[f], hash, cap,
				    fmax(1, exp2(f + MC_HISTORY_LOG_FACTOR_MIN) * (double)cap));
	for (int f = 0; f < MC_HISTORY_FACTORS; f++)
		h->shadow[f].split += hit[f] != hit[cur];
	if (++h->window >= cap) {
		shadows_choose(h);
		h->window = 0;
	}
}

double
mc_history_half_life(const struct mc_history *h, uint64_t objects)
{
	double hl = exp2(h->lk) * (double)(objects ? objects : 1);

	return hl < 1 ? 1 : hl;
}

void
mc_history_ref(struct mc_history *h, bool hit, uint64_t objects)
{
	(void)objects;
	h->hits += hit;
	h->refs++;
}

void
mc_history_read(struct mc_history *h, uint64_t hash, uint64_t objects)
{
	shadows_ref(h, hash, objects);
}

void
mc_history_stats(const struct mc_history *h, struct mc_history_stats *out)
{
	out->ghosts = h->count;
	out->evicted = h->evicted;
	out->resumed = h->resumed;
	out->periods = h->periods;
	out->factor = exp2(h->lk);
	out->last_hit_rate = h->last_rate;
	out->probation = h->share;
}

size_t
mc_history_memory(const struct mc_history *h)
{
	size_t shadows = h->shadow == NULL ? 0 : SHADOWS_BYTES;

	return sizeof(*h) + (size_t)h->nb * WAYS * sizeof(*h->t) + shadows;
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
mc_history_segment(struct mc_cand_view *v, double share, mc_history_capacity_fn capacity, void *ctx,
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
		uint64_t allow = (uint64_t)((double)capacity(ctx, v, &v->c[idx[at]]) * share);

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
