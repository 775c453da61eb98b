/*
 * Young copies (mc/young.h): the rule, a pass's tally and its log line.
 */
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/young.h"

bool
mc_young_is(uint64_t young_ms, uint64_t committed, uint64_t now)
{
	return young_ms > 0 && committed != 0 && now < mc_add_sat(committed, young_ms);
}

void
mc_young_tally_init(struct mc_young_tally *t)
{
	*t = (struct mc_young_tally){ .until = UINT64_MAX };
}

void
mc_young_keep(struct mc_young_tally *t, uint64_t young_ms, uint64_t committed, uint64_t bytes)
{
	uint64_t ages = mc_add_sat(committed, young_ms);

	t->kept++;
	t->kept_bytes += bytes;
	if (ages < t->until)
		t->until = ages;
}

void
mc_young_take(struct mc_young_tally *t, uint64_t bytes)
{
	t->taken++;
	t->taken_bytes += bytes;
}

bool
mc_young_needed(uint64_t waiting, uint64_t old)
{
	return waiting > 0 && old < waiting;
}

void
mc_young_log(const struct mc_young_tally *t, const char *where, const char *why)
{
	char size[32];

	if (t->taken == 0)
		return;
	mc_info("eviction of %s took %llu young %s, %s (%llu bytes): %s", where,
		(unsigned long long)t->taken, t->taken == 1 ? "copy" : "copies",
		mc_fmt_size(t->taken_bytes, size, sizeof(size)), (unsigned long long)t->taken_bytes,
		why);
}
