/*
 * The tiers a copy can live on: one enum, its names, and the chain a
 * reclaimed copy moves down.
 *
 * A tier's name is how it travels (on the wire, in snapshots, in
 * metrics and flags); its number is only an index within one process,
 * so the order below may change without breaking anything stored.
 * Every program spells tiers through this module, so that a new tier is
 * one line here.
 */
#ifndef MC_TIER_H
#define MC_TIER_H

#include <stddef.h>

#include "mc/err.h"

enum mc_tier { MC_TIER_DRAM, MC_TIER_SSD, MC_TIER_HBM, MC_TIER_CXL, MC_TIER_COUNT };

/*
 * The names, for what must be spelled at compile time (a flag named
 * after its tier, --dram); everything else asks mc_tier_name.
 */
#define MC_TIER_DRAM_NAME "dram"
#define MC_TIER_SSD_NAME "ssd"
#define MC_TIER_HBM_NAME "hbm"
#define MC_TIER_CXL_NAME "cxl"
/* Every name, as an option's values for the completions (mc/opt.h). */
#define MC_TIER_NAMES \
	MC_TIER_DRAM_NAME "|" MC_TIER_SSD_NAME "|" MC_TIER_HBM_NAME "|" MC_TIER_CXL_NAME

/* No tier: the end of the chain, or "whichever tier holds it". */
#define MC_TIER_NONE (-1)

/* The tier's name; "unknown" for a number outside the enum. */
const char *mc_tier_name(int tier);
/*
 * The tier called s (len bytes, not NUL-terminated), or -1 with err
 * filled (MC_ERR_INVALID naming s and the known tiers); err may be NULL.
 */
int mc_tier_parse(const char *s, size_t len, struct mc_err *err);
/*
 * Where a copy reclaimed from tier goes next, or MC_TIER_NONE when
 * reclaiming it drops it (the end of the chain).
 */
int mc_tier_downstream(int tier);

#endif
