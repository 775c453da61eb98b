/*
 * Unit tests for the arithmetic that cannot wrap (mc/checked.h), driven
 * with values near 2^64, and for the footprints built on it: what a
 * copy of a size near 2^64 takes on a master's peer tier and on a
 * peer's medium is more than any tier, never a wrapped few pages.
 */
#include <stdint.h>

#include "mc/checked.h"
#include "tap.h"

#define MAX UINT64_MAX

static void
test_div_up(void)
{
	TAP_OK(mc_div_up(0, 4096) == 0 && mc_div_up(1, 4096) == 1 && mc_div_up(4096, 4096) == 1 &&
		       mc_div_up(4097, 4096) == 2,
	       "div_up: whole units, rounded up");
	TAP_OK(mc_div_up(MAX, 4096) == MAX / 4096 + 1 && mc_div_up(MAX, 1) == MAX &&
		       mc_div_up(MAX, 0) == MAX,
	       "div_up: 2^64 - 1 bytes in units, exact; a unit of 0 counts as 1");
	TAP_OK(mc_div_up(MAX - 4095, 4096) == MAX / 4096 &&
		       mc_div_up(MAX - 4094, 4096) == MAX / 4096 + 1,
	       "div_up: the last whole unit below 2^64, and one byte past it");
}

static void
test_round_up(void)
{
	TAP_OK(mc_round_up(1, 4096) == 4096 && mc_round_up(4096, 4096) == 4096 &&
		       mc_round_up(0, 4096) == 0 && mc_round_up(7, 0) == 7,
	       "round_up: to whole units; a unit of 0 or 1 leaves n");
	TAP_OK(mc_round_up(MAX - 4096 * 2 + 2, 4096) == MAX - 4095,
	       "round_up: the last multiple below 2^64 is reached exactly");
	TAP_OK(mc_round_up(MAX, 4096) == MAX && mc_round_up(MAX - 4000, 4096) == MAX &&
		       mc_round_up(MAX - 510, 512) == MAX,
	       "round_up: past the last multiple it saturates, never wraps to a few pages");
}

static void
test_add(void)
{
	uint64_t out = 7;

	TAP_OK(mc_add_sat(1, 2) == 3 && mc_add_sat(MAX - 1, 1) == MAX,
	       "add_sat: exact up to the maximum");
	TAP_OK(mc_add_sat(MAX - 1, 2) == MAX && mc_add_sat(MAX, MAX) == MAX &&
		       mc_add_sat(0, MAX) == MAX,
	       "add_sat: past it, saturates instead of wrapping");
	TAP_OK(!mc_add_over(MAX - 10, 10, &out) && out == MAX, "add_over: a sum that fits is made");
	out = 7;
	TAP_OK(mc_add_over(MAX - 10, 11, &out) && out == 7 && mc_add_over(MAX, MAX, &out) &&
		       out == 7,
	       "add_over: a sum that would wrap is refused and the result left alone");
	/* thirty pending puts of 2^64 - 4000 bytes, summed as a quota check sums them */
	{
		uint64_t sum = 0;
		int refused = 0;

		for (int i = 0; i < 30; i++)
			refused += mc_add_over(sum, MAX - 3999, &sum);
		TAP_OK(refused == 29 && sum == MAX - 3999,
		       "add_over: a running sum of near-2^64 sizes stops at the first that would "
		       "wrap");
	}
}

static void
test_mul(void)
{
	TAP_OK(mc_mul_sat(3, 4) == 12 && mc_mul_sat(0, MAX) == 0 && mc_mul_sat(MAX, 1) == MAX &&
		       mc_mul_sat(1ull << 32, (1ull << 32) - 1) == MAX - ((1ull << 32) - 1),
	       "mul_sat: exact up to the maximum");
	TAP_OK(mc_mul_sat(1ull << 32, 1ull << 32) == MAX && mc_mul_sat(MAX, 2) == MAX &&
		       mc_mul_sat(MAX / 4096 + 1, 4096) == MAX,
	       "mul_sat: past it, saturates instead of wrapping to a few bytes");
}

int
main(void)
{
	test_div_up();
	test_round_up();
	test_add();
	test_mul();
	return tap_done();
}
