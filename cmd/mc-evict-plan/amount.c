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

int
amount_set(const char *v, void *target, char *why)
{
	struct amount *a = target;
	struct mc_err err = { 0 };
	size_t len = strlen(v);

	if (len > 0 && v[len - 1] == '%') {
		if (mc_parse_percent(v, &a->pct_micro, &err) < 0) {
			snprintf(why, WHY_MAX, "%.*s", WHY_MAX - 1, err.msg);
			return -1;
		}
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
	 * whole * pct / MC_PERCENT_WHOLE without overflow: q * pct <= whole
	 * because pct <= MC_PERCENT_WHOLE, and r * pct < 10^16. Rounded up, so a
	 * percentage never asks for less than it says.
	 */
	q = whole / MC_PERCENT_WHOLE;
	r = whole % MC_PERCENT_WHOLE;
	return q * a->pct_micro + (r * a->pct_micro + MC_PERCENT_WHOLE - 1) / MC_PERCENT_WHOLE;
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
