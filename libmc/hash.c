/*
 * Open addressing with linear probing and backward-shift deletion.
 *
 * An entry's home is hash & (cap - 1); it lives at the first free slot
 * at or after its home, and every slot from its home to where it lives
 * is occupied (the probe invariant). Deletion keeps that invariant
 * without tombstones (Knuth's algorithm R): after emptying slot i, walk
 * the rest of the cluster and move back into the hole each entry whose
 * home does not lie cyclically in (hole, its slot]; that entry's slot
 * becomes the new hole. Entries only ever move towards their home and
 * never across an empty slot.
 *
 * Iteration and removal. A plain 0..cap-1 walk breaks when a cluster
 * wraps from the last slot to slot 0: removing near the end can pull an
 * entry that sat at slot 0 (already visited) into a slot not yet
 * visited, or the other way round. So a walk starts at an empty slot E
 * and visits E+1, ..., E+cap-1 (mod cap). Removal during a walk never
 * fills an empty slot, so E stays empty, and no entry crosses it. Seen
 * in walk order, a removal at position p therefore only moves entries
 * from positions after p to positions at or after p: everything visited
 * stays before p, everything unvisited is at p or later. remove_at steps
 * the cursor back by one so that slot p is looked at again.
 *
 * The cursor packs E into its high half and the walk position (1..cap)
 * into its low half, which caps the table at 2^31 slots on 64-bit hosts.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/hash.h"

#define CURSOR_SHIFT (sizeof(size_t) * 4)
#define CURSOR_LOW (((size_t)1 << CURSOR_SHIFT) - 1)
/* the walk position runs up to cap, so cap must fit in the low half */
#define MAX_CAP ((size_t)1 << (CURSOR_SHIFT - 1))
#define MIN_CAP 16

static inline uint64_t
fix_hash(uint64_t hash)
{
	return hash == 0 ? 1 : hash;
}

/* Largest count a table of cap slots holds: 3/4 load. */
static inline size_t
max_load(size_t cap)
{
	return cap - cap / 4;
}

void
mc_htab_init(struct mc_htab *h)
{
	h->slots = NULL;
	h->cap = 0;
	h->count = 0;
}

void
mc_htab_free(struct mc_htab *h)
{
	free(h->slots);
	mc_htab_init(h);
}

/* Place without checks: the table has room and the hash is non-zero. */
static void
place(struct mc_htab_slot *slots, size_t mask, uint64_t hash, void *entry)
{
	size_t i = (size_t)hash & mask;

	while (slots[i].hash != 0)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].entry = entry;
}

static int
resize(struct mc_htab *h, size_t cap)
{
	struct mc_htab_slot *slots;
	size_t i;

	slots = calloc(cap, sizeof(*slots));
	if (slots == NULL)
		return -1;
	for (i = 0; i < h->cap; i++)
		if (h->slots[i].hash != 0)
			place(slots, cap - 1, h->slots[i].hash, h->slots[i].entry);
	free(h->slots);
	h->slots = slots;
	h->cap = cap;
	return 0;
}

int
mc_htab_reserve(struct mc_htab *h, size_t n)
{
	size_t cap = h->cap ? h->cap : MIN_CAP;

	while (max_load(cap) < n) {
		if (cap >= MAX_CAP)
			return -1;
		cap *= 2;
	}
	if (cap == h->cap)
		return 0;
	return resize(h, cap);
}

void *
mc_htab_find(const struct mc_htab *h, uint64_t hash, mc_htab_eq_fn eq, const void *key)
{
	size_t mask, i;

	if (h->cap == 0)
		return NULL;
	hash = fix_hash(hash);
	mask = h->cap - 1;
	/* the 3/4 load bound guarantees an empty slot ends every probe */
	for (i = (size_t)hash & mask; h->slots[i].hash != 0; i = (i + 1) & mask)
		if (h->slots[i].hash == hash && eq(h->slots[i].entry, key))
			return h->slots[i].entry;
	return NULL;
}

int
mc_htab_insert(struct mc_htab *h, uint64_t hash, void *entry)
{
	if (h->count + 1 > max_load(h->cap) && mc_htab_reserve(h, h->count + 1) < 0)
		return -1;
	place(h->slots, h->cap - 1, fix_hash(hash), entry);
	h->count++;
	return 0;
}

/* Empty slot i and restore the probe invariant (algorithm R). */
static void
delete_at(struct mc_htab *h, size_t i)
{
	size_t mask = h->cap - 1;
	size_t j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (h->slots[j].hash == 0)
			break;
		home = (size_t)h->slots[j].hash & mask;
		/* stays put when its home lies cyclically in (i, j] */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		h->slots[i] = h->slots[j];
		i = j;
	}
	h->slots[i].hash = 0;
	h->slots[i].entry = NULL;
	h->count--;
}

void *
mc_htab_remove(struct mc_htab *h, uint64_t hash, mc_htab_eq_fn eq, const void *key)
{
	size_t mask, i;

	if (h->cap == 0)
		return NULL;
	hash = fix_hash(hash);
	mask = h->cap - 1;
	for (i = (size_t)hash & mask; h->slots[i].hash != 0; i = (i + 1) & mask) {
		if (h->slots[i].hash == hash && eq(h->slots[i].entry, key)) {
			void *entry = h->slots[i].entry;

			delete_at(h, i);
			return entry;
		}
	}
	return NULL;
}

void *
mc_htab_next(const struct mc_htab *h, size_t *cursor)
{
	size_t start, pos;

	if (h->cap == 0)
		return NULL;
	if (*cursor == 0) {
		if (h->count == 0)
			return NULL;
		for (start = 0; h->slots[start].hash != 0; start++)
			;
		pos = 0;
	} else {
		start = *cursor >> CURSOR_SHIFT;
		pos = *cursor & CURSOR_LOW;
	}
	while (pos < h->cap) {
		size_t i = (start + pos) & (h->cap - 1);

		pos++;
		if (h->slots[i].hash != 0) {
			*cursor = (start << CURSOR_SHIFT) | pos;
			return h->slots[i].entry;
		}
	}
	*cursor = (start << CURSOR_SHIFT) | pos;
	return NULL;
}

void
mc_htab_remove_at(struct mc_htab *h, size_t *cursor)
{
	size_t start = *cursor >> CURSOR_SHIFT;
	size_t pos = *cursor & CURSOR_LOW;

	if (h->cap == 0 || pos == 0)
		return;
	pos--;
	if (h->slots[(start + pos) & (h->cap - 1)].hash == 0)
		return;
	delete_at(h, (start + pos) & (h->cap - 1));
	*cursor = (start << CURSOR_SHIFT) | pos;
}

size_t
mc_htab_memory(const struct mc_htab *h)
{
	return h->cap * sizeof(struct mc_htab_slot);
}
