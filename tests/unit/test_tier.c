/*
 * Unit tests for the tier vocabulary (libmc/tier.c): names, parsing,
 * the chain, the speed order and where a put may land.
 */
#include <string.h>

#include "mc/tier.h"
#include "tap.h"

static void
test_names(void)
{
	int round = 1;

	for (int t = 0; t < MC_TIER_COUNT; t++) {
		const char *n = mc_tier_name(t);

		round &= mc_tier_parse(n, strlen(n), NULL) == t;
	}
	TAP_OK(round, "names: every tier's name parses back to it");
	TAP_OK(strcmp(mc_tier_name(MC_TIER_DRAM), "dram") == 0 &&
		       strcmp(mc_tier_name(MC_TIER_SSD), "ssd") == 0 &&
		       strcmp(mc_tier_name(MC_TIER_HBM), "hbm") == 0 &&
		       strcmp(mc_tier_name(MC_TIER_CXL), "cxl") == 0,
	       "names: dram, ssd, hbm and cxl, as the master has always accepted");
	TAP_OK(strcmp(mc_tier_name(-1), "unknown") == 0 &&
		       strcmp(mc_tier_name(MC_TIER_COUNT), "unknown") == 0,
	       "names: a number outside the enum is unknown");
}

static void
test_parse(void)
{
	struct mc_err err;
	char longname[100];

	TAP_OK(mc_tier_parse("ssdx", 3, &err) == MC_TIER_SSD,
	       "parse: the length given bounds the name, no NUL needed");
	TAP_OK(mc_tier_parse("floppy", 6, &err) == -1 && err.code == MC_ERR_INVALID &&
		       strcmp(err.msg, "unknown tier 'floppy' (known: dram, ssd, hbm, cxl)") == 0,
	       "parse: an unknown name is invalid, named with the known ones (%s)", err.msg);
	TAP_OK(mc_tier_parse("DRAM", 4, &err) == -1 && mc_tier_parse("", 0, &err) == -1 &&
		       mc_tier_parse("dra", 3, &err) == -1,
	       "parse: case, emptiness and prefixes do not match");
	TAP_OK(mc_tier_parse("tape", 4, NULL) == -1, "parse: the error buffer may be NULL");
	memset(longname, 'x', sizeof(longname));
	TAP_OK(mc_tier_parse(longname, sizeof(longname), &err) == -1 &&
		       strstr(err.msg, "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'") != NULL,
	       "parse: a long name is cut short in the message");
}

static void
test_chain(void)
{
	TAP_OK(mc_tier_downstream(MC_TIER_DRAM) == MC_TIER_SSD, "chain: dram goes down to ssd");
	TAP_OK(mc_tier_downstream(MC_TIER_SSD) == MC_TIER_NONE, "chain: ssd is the end");
	TAP_OK(mc_tier_downstream(MC_TIER_HBM) == MC_TIER_NONE &&
		       mc_tier_downstream(MC_TIER_CXL) == MC_TIER_NONE,
	       "chain: hbm and cxl have no place in it yet");
	TAP_OK(mc_tier_downstream(MC_TIER_NONE) == MC_TIER_NONE &&
		       mc_tier_downstream(MC_TIER_COUNT) == MC_TIER_NONE,
	       "chain: no tier has nothing below it");
}

static void
test_speed(void)
{
	int seen[MC_TIER_COUNT] = { 0 }, order[MC_TIER_COUNT] = { 0 }, n = 0, t, ranks_agree = 1;

	MC_TIER_FASTEST_FIRST(t)
	{
		if (n < MC_TIER_COUNT)
			order[n] = t;
		seen[t]++;
		ranks_agree &= mc_tier_speed_rank(t) == n;
		n++;
	}
	TAP_OK(n == MC_TIER_COUNT && seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && seen[3] == 1,
	       "speed: the iterator visits every tier once (%d visits)", n);
	TAP_OK(order[0] == MC_TIER_HBM && order[1] == MC_TIER_DRAM && order[2] == MC_TIER_CXL &&
		       order[3] == MC_TIER_SSD,
	       "speed: hbm, dram, cxl, then ssd");
	TAP_OK(ranks_agree, "speed: a tier's rank is its place in the iteration");
	TAP_OK(mc_tier_by_speed(MC_TIER_COUNT) == MC_TIER_NONE &&
		       mc_tier_speed_rank(MC_TIER_NONE) == MC_TIER_COUNT &&
		       mc_tier_speed_rank(MC_TIER_COUNT) == MC_TIER_COUNT,
	       "speed: past the slowest is no tier, and no tier ranks last");
}

static void
test_landing(void)
{
	TAP_OK(mc_tier_lands_unasked(MC_TIER_DRAM) && mc_tier_lands_unasked(MC_TIER_CXL) &&
		       mc_tier_lands_unasked(MC_TIER_SSD) && !mc_tier_lands_unasked(MC_TIER_HBM),
	       "landing: a put that names no tier may land anywhere but hbm");
	TAP_OK(mc_tier_may_land(MC_TIER_HBM, MC_TIER_HBM) &&
		       !mc_tier_may_land(MC_TIER_DRAM, MC_TIER_HBM) &&
		       !mc_tier_may_land(MC_TIER_SSD, MC_TIER_DRAM),
	       "landing: a put that names a tier lands there only");
	TAP_OK(mc_tier_may_land(MC_TIER_SSD, MC_TIER_NONE) &&
		       !mc_tier_may_land(MC_TIER_HBM, MC_TIER_NONE) &&
		       !mc_tier_may_land(MC_TIER_COUNT, MC_TIER_NONE),
	       "landing: naming none means whatever lands unasked, and no unknown tier");
}

int
main(void)
{
	test_names();
	test_parse();
	test_chain();
	test_speed();
	test_landing();
	return tap_done();
}
