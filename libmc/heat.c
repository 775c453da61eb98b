/*
 * The heat window: a bounded set-associative table of read counts and a
 * ring of admission triggers (mc/heat.h says how it is bounded).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"

#include "mc/heat.h"

int
heat_init(struct heat *h, size_t entries, uint64_t window_ms, uint32_t threshold,
	  struct mc_err *err)
{
	size_t sets = 1;

	memset(h, 0, sizeof(*h));
	if (entries == 0 || entries > HEAT_ENTRIES_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "the heat window holds 1 to %u entries",
				  HEAT_ENTRIES_MAX);
	if (window_ms == 0)
		return mc_err_set(err, MC_ERR_INVALID, "the heat window must be longer than 0");
	while (sets * HEAT_WAYS < entries)
		sets *= 2;
	/* on cache lines: an entry is one, a set's tags are one */
	h->e = aligned_alloc(64, sets * HEAT_WAYS * sizeof(*h->e));
	h->tags = aligned_alloc(64, sets * HEAT_WAYS * sizeof(*h->tags));
	if (h->e != NULL)
		memset(h->e, 0, sets * HEAT_WAYS * sizeof(*h->e));
	if (h->tags != NULL)
		memset(h->tags, 0, sets * HEAT_WAYS * sizeof(*h->tags));
	if (h->e == NULL || h->tags == NULL) {
		free(h->e);
		free(h->tags);
		h->e = NULL;
		h->tags = NULL;
		return mc_err_set(err, MC_ERR_SYSTEM, "no memory for a heat window of %zu entries",
				  sets * HEAT_WAYS);
	}
	h->nsets = sets;
	h->window_ms = window_ms;
	h->threshold = threshold > 0 ? threshold : 1;
	return 0;
}

void
heat_clear(struct heat *h)
{
	for (size_t i = 0; h->e != NULL && i < h->nsets * HEAT_WAYS; i++) {
		struct heat_entry *e = &h->e[i];

		/* the slot keeps its buffer, and its generation, so no trigger mistakes its next entry */
		*e = (struct heat_entry){ .gen = e->gen + 1,
					  .name = e->name,
					  .name_cap = e->name_cap };
		h->tags[i] = 0;
	}
	h->live = 0;
	h->head = h->n = 0;
}

void
heat_free(struct heat *h)
{
	heat_clear(h);
	for (size_t i = 0; h->e != NULL && i < h->nsets * HEAT_WAYS; i++)
		free(h->e[i].name);
	free(h->e);
	free(h->tags);
	h->e = NULL;
	h->tags = NULL;
	h->nsets = 0;
}

/* The buckets of e moved on to now: a bucket that ended becomes the previous one. */
static void
roll(const struct heat *h, struct heat_entry *e, uint64_t now)
{
	uint64_t w = h->window_ms;

	if (now < e->start)
		return; /* a clock set back: count into the current bucket */
	if (now - e->start >= 2 * w) {
		e->prev = 0;
		e->cur = 0;
		e->start = now;
	} else if (now - e->start >= w) {
		e->prev = e->cur;
		e->cur = 0;
		e->start += w;
	}
}

uint32_t
heat_count(const struct heat *h, const struct heat_entry *e, uint64_t now)
{
	uint64_t w = h->window_ms, into, prev = e->prev, cur = e->cur;

	if (e->hash == 0)
		return 0;
	if (now >= e->start + 2 * w)
		return 0;
	if (now >= e->start + w) {
		/* the current bucket has ended: it is the previous one now */
		prev = cur;
		cur = 0;
		into = now - e->start - w;
	} else {
		into = now > e->start ? now - e->start : 0;
	}
	/* the part of the previous bucket the window that ends now still covers */
	uint64_t n = cur + prev * (w - into) / w;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static uint64_t
entry_hash(uint64_t key_hash, const char *domain, size_t dlen)
{
	uint64_t x = dlen > 0 ? key_hash ^ mc_hash64(domain, dlen, 0x5bd1e995u) : key_hash;

	return x != 0 ? x : 1;
}

/*
 * Whether e, whose tag matched, is the entry of (tenant, key, domain). exact:
 * the name's bytes compared too. A read is matched by the 64-bit hash,
 * the tenant and the lengths alone: the name lives in a buffer of its
 * own, one more cache miss on every read, and two names that collide
 * (one chance in 2^64) only count a read for each other, which no copy
 * is made on: admission looks the object up by the entry's own name.
 */
static bool
same(const struct heat_entry *e, uint32_t tenant, const char *key, size_t klen, const char *domain,
     size_t dlen, bool exact)
{
	if (e->tenant != tenant || e->klen != klen || e->dlen != dlen)
		return false;
	return !exact || (memcmp(e->name, key, klen) == 0 &&
			  (dlen == 0 || memcmp(e->name + klen, domain, dlen) == 0));
}

/* Of a set's slots, the one least worth keeping at now. */
static struct heat_entry *
victim(const struct heat *h, struct heat_entry *set, uint64_t now)
{
	struct heat_entry *best = NULL;
	uint32_t best_count = 0;

	for (unsigned i = 0; i < HEAT_WAYS; i++) {
		struct heat_entry *e = &set[i];
		uint32_t c;

		if (e->hash == 0 || now >= e->last + 2 * h->window_ms)
			return e; /* empty, or idle for two windows: nothing to lose */
		c = heat_count(h, e, now);
		if (best == NULL || c < best_count || (c == best_count && e->last < best->last)) {
			best = e;
			best_count = c;
		}
	}
	return best;
}

/* Give slot e to a new entry; false (e left as it was) without memory for its name. */
static bool
take(struct heat *h, struct heat_entry *e, uint64_t hash, uint32_t tenant, const char *key,
     size_t klen, const char *domain, size_t dlen, uint64_t now)
{
	size_t need = klen + dlen > 0 ? klen + dlen : 1;
	char *name = e->name;
	uint32_t cap = e->name_cap;

	if (need > cap) {
		if ((name = malloc(need)) == NULL)
			return false;
		free(e->name);
		cap = (uint32_t)need;
	}
	memcpy(name, key, klen);
	if (dlen > 0)
		memcpy(name + klen, domain, dlen);
	if (e->hash != 0)
		h->replaced++;
	else
		h->live++;
	h->tags[e - h->e] = hash;
	*e = (struct heat_entry){
		.hash = hash,
		.start = now,
		.last = now,
		.tenant = tenant,
		.gen = e->gen + 1,
		.klen = (uint16_t)klen,
		.dlen = (uint8_t)dlen,
		.name = name,
		.name_cap = cap,
	};
	return true;
}

/*
 * The set of hash, and the entry of (tenant, key, domain) in it, or NULL.
 * The set's tags are one cache line: a read touches that line, and the
 * entry's own only when a tag matches.
 */
static struct heat_entry *
lookup(const struct heat *h, uint64_t hash, uint32_t tenant, const char *key, size_t klen,
       const char *domain, size_t dlen, bool exact, struct heat_entry **set)
{
	size_t first = (hash & (h->nsets - 1)) * HEAT_WAYS;
	const uint64_t *tag = &h->tags[first];

	*set = &h->e[first];
	for (unsigned i = 0; i < HEAT_WAYS; i++)
		if (tag[i] == hash && same(&(*set)[i], tenant, key, klen, domain, dlen, exact))
			return &(*set)[i];
	return NULL;
}

void
heat_prefetch(const struct heat *h, uint64_t key_hash, const char *domain, size_t dlen)
{
	uint64_t hash;

	if (h->e == NULL || dlen > UINT8_MAX)
		return;
	hash = entry_hash(key_hash, domain, dlen);
	size_t first = (hash & (h->nsets - 1)) * HEAT_WAYS;
	__builtin_prefetch(&h->tags[first]);
	for (unsigned i = 0; i < HEAT_WAYS; i++)
		__builtin_prefetch(&h->e[first + i]);
}

const struct heat_entry *
heat_find(const struct heat *h, uint32_t tenant, uint64_t key_hash, const char *key, size_t klen,
	  const char *domain, size_t dlen)
{
	struct heat_entry *set;

	if (h->e == NULL || klen > UINT16_MAX || dlen > UINT8_MAX)
		return NULL;
	return lookup(h, entry_hash(key_hash, domain, dlen), tenant, key, klen, domain, dlen, true,
		      &set);
}

bool
heat_record(struct heat *h, uint32_t tenant, uint64_t key_hash, const char *key, size_t klen,
	    const char *domain, size_t dlen, uint64_t now)
{
	uint64_t hash;
	struct heat_entry *set, *e;

	if (h->e == NULL || klen > UINT16_MAX || dlen > UINT8_MAX)
		return false;
	hash = entry_hash(key_hash, domain, dlen);
	e = lookup(h, hash, tenant, key, klen, domain, dlen, false, &set);
	if (e == NULL) {
		e = victim(h, set, now);
		if (!take(h, e, hash, tenant, key, klen, domain, dlen, now)) {
			h->untracked++;
			return false;
		}
	}
	h->reads++;
	roll(h, e, now);
	if (e->cur != UINT32_MAX)
		e->cur++;
	if (now > e->last)
		e->last = now;
	/* the sliding count is at most the two buckets': most reads stop here, undivided */
	if (e->queued || now < e->rearm || (uint64_t)e->cur + e->prev < h->threshold ||
	    heat_count(h, e, now) < h->threshold)
		return false;
	if (h->n == HEAT_TRIGGERS_MAX) {
		/* the worker is a ring behind: the entry tries again at its next read */
		h->triggers_dropped++;
		return false;
	}
	h->ring[(h->head + h->n) % HEAT_TRIGGERS_MAX] =
		(struct heat_trigger){ (uint32_t)(e - h->e), e->gen };
	h->n++;
	e->queued = true;
	h->triggers++;
	return true;
}

struct heat_entry *
heat_next(struct heat *h, uint32_t *slot)
{
	while (h->n > 0) {
		struct heat_trigger t = h->ring[h->head];
		struct heat_entry *e = &h->e[t.slot];

		h->head = (h->head + 1) % HEAT_TRIGGERS_MAX;
		h->n--;
		if (e->gen != t.gen || e->hash == 0)
			continue; /* the slot went to another key since */
		*slot = t.slot;
		return e;
	}
	return NULL;
}

void
heat_judged(struct heat *h, uint32_t slot, uint64_t now)
{
	struct heat_entry *e = &h->e[slot];

	e->queued = false;
	e->rearm = now + h->window_ms;
}

size_t
heat_top(const struct heat *h, uint64_t now, const struct heat_entry **out, size_t n)
{
	size_t got = 0;

	for (size_t i = 0; n > 0 && i < h->nsets * HEAT_WAYS; i++) {
		const struct heat_entry *e = &h->e[i];
		uint32_t c = heat_count(h, e, now);
		size_t j;

		if (c == 0)
			continue;
		if (got == n && c <= heat_count(h, out[got - 1], now))
			continue;
		/* insertion into the sorted few kept so far */
		j = got < n ? got++ : got - 1;
		while (j > 0 && heat_count(h, out[j - 1], now) < c) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = e;
	}
	return got;
}
