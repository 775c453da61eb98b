/*
 * The tier table: a name and a downstream tier per enum value. Only
 * DRAM has somewhere to go; HBM and CXL have no place in the chain yet,
 * so reclaiming from them drops, as from SSD.
 */
#include <stdio.h>
#include <string.h>

#include "mc/tier.h"

static const struct {
	const char *name;
	int down;
} tiers[MC_TIER_COUNT] = {
	[MC_TIER_DRAM] = { MC_TIER_DRAM_NAME, MC_TIER_SSD },
	[MC_TIER_SSD] = { MC_TIER_SSD_NAME, MC_TIER_NONE },
	[MC_TIER_HBM] = { MC_TIER_HBM_NAME, MC_TIER_NONE },
	[MC_TIER_CXL] = { MC_TIER_CXL_NAME, MC_TIER_NONE },
};

const char *
mc_tier_name(int tier)
{
	if (tier < 0 || tier >= MC_TIER_COUNT)
		return "unknown";
	return tiers[tier].name;
}

int
mc_tier_parse(const char *s, size_t len, struct mc_err *err)
{
	char known[64];
	size_t n = 0;

	for (int t = 0; t < MC_TIER_COUNT; t++)
		if (strlen(tiers[t].name) == len && memcmp(tiers[t].name, s, len) == 0)
			return t;
	known[0] = '\0';
	for (int t = 0; t < MC_TIER_COUNT && n < sizeof(known); t++)
		n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", t ? ", " : "",
				      tiers[t].name);
	/* Cut a long name short: it comes from outside. */
	return mc_err_set(err, MC_ERR_INVALID, "unknown tier '%.*s' (known: %s)",
			  (int)(len > 32 ? 32 : len), s, known);
}

int
mc_tier_downstream(int tier)
{
	if (tier < 0 || tier >= MC_TIER_COUNT)
		return MC_TIER_NONE;
	return tiers[tier].down;
}
