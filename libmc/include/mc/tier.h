/*
 * The tiers a copy can live on: one enum, its names, their order by
 * speed, which of them a put may land on unasked, and the chain a
 * reclaimed copy moves down.
 *
 * A tier's name is how it travels (on the wire, in snapshots, in
 * metrics and flags); its number is only an index within one process,
 * so the order below may change without breaking anything stored.
 * Every program spells and orders tiers through this module, so that a
 * new tier is its enum value, its name and one row of the table in
 * tier.c.
 */
#ifndef MC_TIER_H
#define MC_TIER_H

#include <stdbool.h>
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
/*
 * The tier of speed rank rank (0 is the fastest), or MC_TIER_NONE past
 * the slowest: the order placement tries, reads prefer and listings show.
 */
int mc_tier_by_speed(size_t rank);
/* The tier's speed rank (0 is the fastest); MC_TIER_COUNT for no tier. */
int mc_tier_speed_rank(int tier);
/* Whether a put that names no tier may land on tier (HBM must be asked for). */
bool mc_tier_lands_unasked(int tier);
/*
 * Whether a copy may land on tier for a put that asked for tier asked
 * (MC_TIER_NONE when it asked for none): the one asked for, else any
 * that lands unasked.
 */
bool mc_tier_may_land(int tier, int asked);

/* Visit every tier, fastest first: MC_TIER_FASTEST_FIRST(t) { ... } */
#define MC_TIER_FASTEST_FIRST(t) \
	for (size_t t##_rank = 0; ((t) = mc_tier_by_speed(t##_rank)) != MC_TIER_NONE; t##_rank++)

#endif
