/*
 * An open-addressing hash table of pointers for millions of entries.
 *
 * The table stores a 64-bit hash beside each entry pointer (linear
 * probing, backward-shift deletion, so no tombstones) and never owns
 * the entries. Lookups compare the stored hash first and call eq only
 * on a match. It doubles
 * at 3/4 load so probes stay short; memory is 16 bytes a slot.
 */
#ifndef MC_HASH_H
#define MC_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mc_htab_slot {
	uint64_t hash; /* 0 marks an empty slot; real hashes of 0 are stored as 1 */
	void *entry;
};

struct mc_htab {
	struct mc_htab_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t count;
};

typedef bool (*mc_htab_eq_fn)(const void *entry, const void *key);

void mc_htab_init(struct mc_htab *h);
void mc_htab_free(struct mc_htab *h); /* frees slots, not entries */
/* Pre-size for n entries; -1 on allocation failure. */
int mc_htab_reserve(struct mc_htab *h, size_t n);
void *mc_htab_find(const struct mc_htab *h, uint64_t hash, mc_htab_eq_fn eq, const void *key);
/* Insert (caller checked it is absent); -1 on allocation failure. */
int mc_htab_insert(struct mc_htab *h, uint64_t hash, void *entry);
/* Remove and return the entry, or NULL if absent. */
void *mc_htab_remove(struct mc_htab *h, uint64_t hash, mc_htab_eq_fn eq, const void *key);
/*
 * Iterate: start with *cursor = 0; returns the next entry or NULL at the
 * end. Removing the returned entry during iteration is allowed only via
 * mc_htab_remove_at(h, cursor) which keeps the walk complete.
 */
void *mc_htab_next(const struct mc_htab *h, size_t *cursor);
void mc_htab_remove_at(struct mc_htab *h, size_t *cursor);
size_t mc_htab_memory(const struct mc_htab *h);

/*
 * Start loading the home slot of hash into the cache, so that a batch
 * of lookups overlaps its memory misses instead of taking them in turn.
 */
static inline void
mc_htab_prefetch(const struct mc_htab *h, uint64_t hash)
{
	if (h->cap != 0)
		__builtin_prefetch(&h->slots[(hash != 0 ? hash : 1) & (h->cap - 1)]);
}

#endif
