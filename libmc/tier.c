/*
 * The tier table: one row per tier, fastest first. A row's place is the
 * tier's speed rank; it also says whether a put that names no tier may
 * land there and where a copy reclaimed from it goes. HBM is reached
 * only by a put that names it, and only DRAM has somewhere to go down
 * to; reclaiming from the others drops, as from SSD.
 */
#include <stdio.h>
#include <string.h>

#include "mc/tier.h"

static const struct tier_row {
	int tier;
	const char *name;
	bool unasked; /* a put that names no tier may land here */
	int down;     /* where a reclaimed copy goes, or MC_TIER_NONE */
} by_speed[MC_TIER_COUNT] = {
	{ MC_TIER_HBM, MC_TIER_HBM_NAME, false, MC_TIER_NONE },
	{ MC_TIER_DRAM, MC_TIER_DRAM_NAME, true, MC_TIER_SSD },
	{ MC_TIER_CXL, MC_TIER_CXL_NAME, true, MC_TIER_NONE },
	{ MC_TIER_SSD, MC_TIER_SSD_NAME, true, MC_TIER_NONE },
};

/* The tier's row, or NULL for a number outside the enum. */
static const struct tier_row *
row_of(int tier)
{
	for (size_t i = 0; i < MC_TIER_COUNT; i++)
		if (by_speed[i].tier == tier)
			return &by_speed[i];
	return NULL;
}

const char *
mc_tier_name(int tier)
{
	const struct tier_row *r = row_of(tier);

	return r != NULL ? r->name : "unknown";
}

int
mc_tier_parse(const char *s, size_t len, struct mc_err *err)
{
	char known[64];
	size_t n = 0;

	for (size_t i = 0; i < MC_TIER_COUNT; i++)
		if (strlen(by_speed[i].name) == len && memcmp(by_speed[i].name, s, len) == 0)
			return by_speed[i].tier;
	known[0] = '\0';
	for (int t = 0; t < MC_TIER_COUNT && n < sizeof(known); t++)
		n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", t ? ", " : "",
				      mc_tier_name(t));
	/* Cut a long name short: it comes from outside. */
	return mc_err_set(err, MC_ERR_INVALID, "unknown tier '%.*s' (known: %s)",
			  (int)(len > 32 ? 32 : len), s, known);
}

int
mc_tier_downstream(int tier)
{
	const struct tier_row *r = row_of(tier);

	return r != NULL ? r->down : MC_TIER_NONE;
}

int
mc_tier_by_speed(size_t rank)
{
	return rank < MC_TIER_COUNT ? by_speed[rank].tier : MC_TIER_NONE;
}

int
mc_tier_speed_rank(int tier)
{
	const struct tier_row *r = row_of(tier);

	return r != NULL ? (int)(r - by_speed) : MC_TIER_COUNT;
}

bool
mc_tier_lands_unasked(int tier)
{
	const struct tier_row *r = row_of(tier);

	return r != NULL && r->unasked;
}

bool
mc_tier_may_land(int tier, int asked)
{
	return asked == MC_TIER_NONE ? mc_tier_lands_unasked(tier) : tier == asked;
}
