/*
 * Times for people: remaining lifetimes as compound durations ("29m59.5s") rather than
 * the one-unit rounding of mc_fmt_duration_ms ("30m"), because a pin's
 * remaining time is read to see how close it is to the second.
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "softpin.h"

char *
sp_fmt_remaining(uint64_t ms, char *buf, size_t cap)
{
	static const struct {
		uint64_t ms;
		char unit;
	} units[] = { { 86400000, 'd' }, { 3600000, 'h' }, { 60000, 'm' } };
	uint64_t left = ms, frac;
	size_t i, n = 0;

	if (ms < 1000) {
		snprintf(buf, cap, ms == 0 ? "0s" : "%" PRIu64 "ms", ms);
		return buf;
	}
	buf[0] = '\0';
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (left < units[i].ms)
			continue;
		n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%" PRIu64 "%c",
				      left / units[i].ms, units[i].unit);
		left %= units[i].ms;
	}
	if (left == 0 || n >= cap)
		return buf;
	n += (size_t)snprintf(buf + n, cap - n, "%" PRIu64, left / 1000);
	frac = left % 1000;
	if (frac != 0 && n < cap) {
		/* trailing zeros say nothing: .500 -> .5 */
		unsigned digits = 3;

		while (frac % 10 == 0) {
			frac /= 10;
			digits--;
		}
		n += (size_t)snprintf(buf + n, cap - n, ".%0*" PRIu64, (int)digits, frac);
	}
	if (n < cap)
		snprintf(buf + n, cap - n, "s");
	return buf;
}
