/*
 * Recreate cooldowns of dynamic hot replication (seed 002): when a
 * dynamic replica of an object is evicted from a domain, a new one is
 * not made in that domain until a time, so admission does not rebuild
 * at once the room eviction just freed. Scoped to the domain: another
 * domain that needs its own replica is not held back.
 *
 * Bounded: a set-associative table of COOLDOWN_WAYS slots per set,
 * keyed by a hash of the object's store hash and the domain. A new
 * entry takes a slot of its set that is free or over, else the one
 * that ends first, so a burst of evictions can shorten the oldest
 * cooldowns but never grows the table. Data only: the state door
 * (state_cooldown_set) is what sets one.
 */
#ifndef MASTER_COOLDOWN_H
#define MASTER_COOLDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

#define COOLDOWN_WAYS 4

struct cooldown_slot {
	uint64_t hash;	/* cooldown_hash; 0: free */
	uint64_t until; /* mc_now_ms() it ends */
};

struct cooldowns {
	struct cooldown_slot *v;
	size_t nsets;		/* a power of two */
	uint64_t set, replaced; /* cooldowns set, and ones that took a running one's slot */
};

/* A table of at least entries slots; -1 with err when memory runs out. */
int cooldowns_init(struct cooldowns *c, size_t entries, struct mc_err *err);
void cooldowns_free(struct cooldowns *c);
/* Forget every cooldown (a restore brings its own). */
void cooldowns_clear(struct cooldowns *c);
/* The key of the cooldown of the object whose store hash is key_hash, in domain. */
uint64_t cooldown_hash(uint64_t key_hash, const char *domain);
/* The cooldown of hash runs to until (the later of two, when one runs already). */
void cooldown_put(struct cooldowns *c, uint64_t hash, uint64_t until);
/* When the cooldown of hash ends, if it runs at now; 0 when none does. */
uint64_t cooldown_until(const struct cooldowns *c, uint64_t hash, uint64_t now);
/* Visit every cooldown running at now (a snapshot, a listing). */
void cooldowns_each(const struct cooldowns *c, uint64_t now,
		    void (*fn)(uint64_t hash, uint64_t until, void *arg), void *arg);
/* Cooldowns running at now. */
size_t cooldowns_running(const struct cooldowns *c, uint64_t now);

#endif
