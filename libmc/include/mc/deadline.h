/*
 * A deadline index: which registrations are due, without scanning them.
 *
 * Each registration is an opaque id (the owner's key, e.g. an object
 * pointer) with one deadline. The index keeps a min-heap of (deadline,
 * id) entries plus the latest deadline registered for each id. Updating
 * or removing a registration does not search the heap: the old entry
 * becomes stale and is discarded when it surfaces (lazy invalidation).
 * When the heap holds more than max(MC_DEADLINE_REBUILD_FLOOR, 2 x live)
 * entries it is rebuilt from the live registrations, so stale entries
 * stay bounded and updates cost amortised O(log n).
 *
 * Popping due entries costs O(due x log n); an entry is returned only if
 * it still matches the latest registration of its id, and popping it
 * removes that registration. The caller must still check its own record
 * (the exact-deadline guard): the index only says "this id was due at d".
 * Single-threaded: the master's event loop owns it.
 */
#ifndef MC_DEADLINE_H
#define MC_DEADLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_DEADLINE_REBUILD_FLOOR 4096

struct mc_deadline_index;

struct mc_deadline_stats {
	size_t heap;	   /* entries in the heap, stale ones included */
	size_t live;	   /* registrations */
	uint64_t rebuilds; /* heap rebuilds since creation */
};

struct mc_deadline_index *mc_deadline_new(void);
void mc_deadline_free(struct mc_deadline_index *d);
/* Drop everything (a failed restore must not leak registrations). */
void mc_deadline_clear(struct mc_deadline_index *d);

/* Register id with deadline, replacing any earlier one. -1 on allocation failure. */
int mc_deadline_set(struct mc_deadline_index *d, uint64_t id, uint64_t deadline);
/* Remove id's registration (no-op if none). */
void mc_deadline_remove(struct mc_deadline_index *d, uint64_t id);
/* id's registered deadline, if any. */
bool mc_deadline_get(const struct mc_deadline_index *d, uint64_t id, uint64_t *deadline);

/*
 * Pop the next registration with deadline <= now: returns true with
 * *id and *deadline, having removed it; false when nothing is due.
 */
bool mc_deadline_pop_due(struct mc_deadline_index *d, uint64_t now, uint64_t *id,
			 uint64_t *deadline);

/*
 * Visit live registrations in deadline order up to (and including)
 * until, at most limit of them (0: no limit), without changing the index.
 * Costs O(k log n) for k visited. fn returns non-zero to stop.
 */
typedef int (*mc_deadline_visit_fn)(uint64_t id, uint64_t deadline, void *arg);
int mc_deadline_visit(const struct mc_deadline_index *d, uint64_t until, size_t limit,
		      mc_deadline_visit_fn fn, void *arg);

void mc_deadline_stats(const struct mc_deadline_index *d, struct mc_deadline_stats *out);

#endif
