/*
 * Arithmetic on sizes and byte counters that cannot wrap.
 *
 * A size comes from the wire (a put's, a grant's, an inventory's) and
 * may be anything up to 2^64 - 1; what it takes on a tier is rounded up
 * to pages and given a header, and counters add it up. Done plainly, a
 * size just under 2^64 rounds to almost nothing and fits anywhere, and
 * a sum of large ones comes out small. Each kind of sum has one helper
 * here, used wherever that kind of sum is made:
 *
 *   mc_div_up    how many units n bytes take: exact, never wraps;
 *   mc_round_up  n rounded up to whole units, and mc_add_sat a sum of
 *                what things take: both saturate at UINT64_MAX, a
 *                footprint no tier can have, so a comparison with a
 *                capacity refuses it instead of passing a wrapped one;
 *   mc_mul_sat   a count of things at a size each, saturating likewise;
 *   mc_add_over  a counter's next value, refused (true) when it would
 *                wrap, for a check made before the counter moves.
 */
#ifndef MC_CHECKED_H
#define MC_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* ceil(n / unit); a unit of 0 counts as 1. */
static inline uint64_t
mc_div_up(uint64_t n, uint64_t unit)
{
	if (unit <= 1)
		return n;
	return n / unit + (n % unit != 0);
}

/* n rounded up to a multiple of unit (0 counts as 1), UINT64_MAX when that does not fit. */
static inline uint64_t
mc_round_up(uint64_t n, uint64_t unit)
{
	uint64_t k = mc_div_up(n, unit), out;

	if (unit <= 1)
		return n;
	return __builtin_mul_overflow(k, unit, &out) ? UINT64_MAX : out;
}

/* a + b, UINT64_MAX when that does not fit. */
static inline uint64_t
mc_add_sat(uint64_t a, uint64_t b)
{
	uint64_t out;

	return __builtin_add_overflow(a, b, &out) ? UINT64_MAX : out;
}

/* a * b, UINT64_MAX when that does not fit. */
static inline uint64_t
mc_mul_sat(uint64_t a, uint64_t b)
{
	uint64_t out;

	return __builtin_mul_overflow(a, b, &out) ? UINT64_MAX : out;
}

/* Whether a + b wraps; *out is the sum when it does not (untouched when it does). */
static inline bool
mc_add_over(uint64_t a, uint64_t b, uint64_t *out)
{
	uint64_t s;

	if (__builtin_add_overflow(a, b, &s))
		return true;
	*out = s;
	return false;
}

#endif
