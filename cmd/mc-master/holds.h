/*
 * What keeps copies from being evicted, for a put that found no room:
 * the bytes of each live peer tier held by hard pins, active soft pins,
 * read leases and writes in progress. When they are why no round can
 * make the room, the put's failure says so ("hard pins hold 400MiB
 * (78%) of the 512MiB of dram that could take it") instead of a bare
 * "no space".
 *
 * Finding them is a walk of the whole store, done only for a put that
 * failed for good, and kept for HOLDS_KEEP_MS so that a stream of such
 * failures walks once.
 */
#ifndef MASTER_HOLDS_H
#define MASTER_HOLDS_H

#include <stdint.h>

#include "mc/err.h"

#define HOLDS_KEEP_MS 1000

struct master;
struct holds;

/*
 * A put of replicas copies of size bytes (on tier, unless MC_TIER_NONE)
 * was refused with err (MC_ERR_NO_SPACE from placement): when fewer than
 * replicas of the tiers that could take a copy would have room once
 * everything that may go went, say in err what holds them and how much;
 * else leave err as it is.
 */
void holds_explain(struct master *m, uint64_t size, unsigned replicas, int tier,
		   struct mc_err *err);
/* Forget what the last walk found (the master is stopping). */
void holds_free(struct holds **h);

#endif
