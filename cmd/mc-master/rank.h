/*
 * The ranking a self-evicting peer asks for (evict_candidates): its
 * least recently accessed keys on one tier, off the cold end of the
 * recency index (recency.h), and the local reads its heartbeats report,
 * which move keys to the warm end without counting as the master's reads.
 */
#ifndef MASTER_RANK_H
#define MASTER_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/wire.h"
#include "master.h"
#include "store.h"

/* Keys one answer carries at most, and when the caller names no cap. */
#define RANK_MAX 4096u
/* Local reads one heartbeat may report. */
#define RANK_LOCAL_READS_MAX 65536u

/*
 * Whether o may be offered from its copy on (peer, tier) now: not
 * leased, hard-pinned, grouped, soft-pinned or being written, and that
 * copy complete at the committed version and not moving.
 */
bool rank_offerable(const struct mobj *o, uint32_t peer, int tier, uint64_t now);
/*
 * Up to max of peer's objects with a copy on tier, coldest first, until
 * their sizes sum to budget (0: no budget). Skipped without counting:
 * leased, hard-pinned, grouped, soft-pinned or being written objects,
 * and copies not complete at the committed version or moving. *more:
 * whether the walk stopped with entries left. Returns how many went
 * into out (room for max).
 */
size_t rank_query(struct master *m, uint32_t peer, int tier, uint64_t budget, size_t max,
		  uint64_t now, struct mobj **out, bool *more);

/*
 * A heartbeat's local_reads field: NULL when absent, else the checked
 * array, or NULL with err (MC_ERR_INVALID naming the field) when it is
 * not an array of at most RANK_LOCAL_READS_MAX {tenant, key} maps.
 */
const msgpack_object_array *rank_local_reads_check(const msgpack_object *params, bool *bad,
						   struct mc_err *err);
/* Record each checked item as a read for recency only (store_touch); unknown keys are counted. */
void rank_local_reads_apply(struct master *m, const msgpack_object_array *reads, uint64_t now);

/* evict_candidates, a self-evicting peer's call (in its module table). */
extern const struct mc_method rank_methods[];

/* evict_candidates as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module rank_module;

#endif
