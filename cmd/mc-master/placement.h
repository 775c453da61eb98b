/*
 * Where the copies of a new object go: `replicas` distinct live peers,
 * on distinct hosts while another host still fits, then on the fastest
 * tier that fits (dram before ssd), the most free space first, ties to
 * the lower peer id.
 */
#ifndef MASTER_PLACEMENT_H
#define MASTER_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/proto.h"

struct master;

struct placement {
	unsigned n;
	uint32_t peer[MC_REPLICAS_MAX];
	uint8_t tier[MC_REPLICAS_MAX];
};

/*
 * Choose, on tier only when it is not MC_TIER_NONE (a put that asked for
 * one). -1 with err when it cannot: MC_ERR_INVALID when no live peer has
 * that tier at all; MC_ERR_TOO_FEW_PEERS when fewer than `replicas` peers
 * are alive, or have a tier that would hold the copy empty;
 * MC_ERR_TOO_LARGE when no tier would; MC_ERR_NO_SPACE (which eviction
 * may mend) when enough tiers would, but not with what they hold now.
 */
int placement_pick(struct master *m, uint64_t size, unsigned replicas, int tier,
		   struct placement *out, struct mc_err *err);

#endif
