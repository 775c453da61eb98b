/*
 * What a peer does to its copies on its own and tells the master at
 * once, on its control link: a copy moved to another tier (a demotion an
 * evict task asked for, or a promotion on read), or a copy it freed
 * (reclaimed, no room below for a demotion, a checksum that failed, a
 * demotion that failed for good). The master follows: the replica's
 * tier and its tiers' usage, or the replica gone and its object settled
 * (erased when no replica is left). A notice about a replica the master
 * does not have (gone already, another version) is counted and ignored.
 */
#ifndef MASTER_MOVES_H
#define MASTER_MOVES_H

#include <stdint.h>

#include "mc/conn.h"
#include "mc/tier.h"

struct master;

/* Why a peer freed a copy by itself (copy_dropped's reason). */
enum copy_drop_reason { DROP_RECLAIM, DROP_NO_SPACE, DROP_CORRUPT, DROP_FAILED, DROP_REASON_COUNT };

struct moves {
	uint64_t moved[MC_TIER_COUNT][MC_TIER_COUNT];	    /* [from][to] */
	uint64_t dropped[MC_TIER_COUNT][DROP_REASON_COUNT]; /* [tier][reason] */
	uint64_t stale_moved, stale_dropped;		    /* notices for no such replica */
};

/* Count from here on, and serve the counts as metrics. */
void moves_init(struct master *m);

/* copy_moved, copy_dropped (in its module table). */
extern const struct mc_method moves_methods[];

/* Peers' own moves as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module moves_module;

#endif
