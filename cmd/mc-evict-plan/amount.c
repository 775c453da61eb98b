/*
 * The values of --target and --lowerbound: a size as every program takes
 * it ("2GiB", "4096") or a percentage ("20%", "12.5%") of something known
 * only later (the view's bytes, or the target), so the setter keeps the
 * percentage and amount_bytes() applies it once the whole is known.
 *
 * Percentages are read as exact decimals (millionths of a percent) and
 * applied in integers, so "20%" of 1000 bytes is 200, never 201 through
 * a binary fraction rounded up.
 */
#include <stdio.h>
#include <string.h>

#include "mc/parse.h"
#include "evictplan.h"

#define WHY_MAX 200
#define PCT_DECIMALS 6
#define MICRO_PER_PCT 1000000u
/* 100%, in millionths of a percent: the fraction's denominator. */
#define MICRO_WHOLE (100u * MICRO_PER_PCT)

/* "12.5" -> 12500000; -1 with why on anything but digits[.digits]. */
static int
parse_pct_micro(const char *s, size_t len, uint64_t *out, char *why)
{
	uint64_t whole = 0, frac = 0;
	size_t i = 0, decimals = 0;
	bool digits = false;

	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		digits = true;
		if (whole > 100)
			break;
	}
	if (i < len && s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			digits = true;
			if (++decimals > PCT_DECIMALS) {
				snprintf(why, WHY_MAX, "at most %d decimals in a percentage",
					 PCT_DECIMALS);
				return -1;
			}
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		}
	}
	if (whole > 100) {
		snprintf(why, WHY_MAX, "a percentage is at most 100%%");
		return -1;
	}
	if (!digits || i != len) {
		snprintf(why, WHY_MAX, "not a percentage");
		return -1;
	}
	for (; decimals < PCT_DECIMALS; decimals++)
		frac *= 10;
	*out = whole * MICRO_PER_PCT + frac;
	if (*out > MICRO_WHOLE) {
		snprintf(why, WHY_MAX, "a percentage is at most 100%%");
		return -1;
	}
	return 0;
}

int
amount_set(const char *v, void *target, char *why)
{
	struct amount *a = target;
	struct mc_err err = { 0 };
	size_t len = strlen(v);

	if (len > 0 && v[len - 1] == '%') {
		if (parse_pct_micro(v, len - 1, &a->pct_micro, why) < 0)
			return -1;
		a->is_pct = true;
		a->bytes = 0;
	} else {
		if (mc_parse_size(v, &a->bytes, &err) < 0) {
			snprintf(why, WHY_MAX, "%.*s", WHY_MAX - 1, err.msg);
			return -1;
		}
		a->is_pct = false;
		a->pct_micro = 0;
	}
	a->text = v;
	return 0;
}

uint64_t
amount_bytes(const struct amount *a, uint64_t whole)
{
	uint64_t q, r;

	if (!a->is_pct)
		return a->bytes;
	/*
	 * whole * pct / MICRO_WHOLE without overflow: q * pct <= whole
	 * because pct <= MICRO_WHOLE, and r * pct < 10^16. Rounded up, so a
	 * percentage never asks for less than it says.
	 */
	q = whole / MICRO_WHOLE;
	r = whole % MICRO_WHOLE;
	return q * a->pct_micro + (r * a->pct_micro + MICRO_WHOLE - 1) / MICRO_WHOLE;
}

uint64_t
view_bytes(const struct mc_cand_view *v)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < v->n; i++) {
		if (UINT64_MAX - sum < v->c[i].bytes)
			return UINT64_MAX;
		sum += v->c[i].bytes;
	}
	return sum;
}
