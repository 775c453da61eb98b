/*
 * libFuzzer target for the eviction pipeline's stream readers: the same
 * bytes are fed, as msgpack and as JSON lines, to the candidate view,
 * plan and report readers. Each must read or refuse them without a crash
 * or a leak, and whatever it read must write back out.
 * Build and run: make fuzz (needs clang).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mc/candidates.h"
#include "mc/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *
input(const uint8_t *data, size_t size)
{
	/* fmemopen refuses an empty buffer; an empty stream is a case too */
	static const uint8_t none[1];

	return fmemopen((void *)(size != 0 ? data : none), size, "r");
}

static void
sink_write(bool ok)
{
	if (!ok)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *null = fopen("/dev/null", "w");

	for (int json = 0; json <= 1; json++) {
		struct mc_cand_view v, names;
		struct mc_plan p;
		struct mc_report r;
		struct mc_err err;
		FILE *f;

		mc_cand_view_init(&v);
		if ((f = input(data, size)) != NULL) {
			if (mc_cand_read(f, &v, json, &err) == 0)
				sink_write(mc_cand_write(null, &v, json, &err) == 0);
			fclose(f);
		}
		mc_cand_view_free(&v);

		mc_plan_init(&p);
		if ((f = input(data, size)) != NULL) {
			if (mc_plan_read(f, &p, json, &err) == 0)
				sink_write(mc_plan_write(null, &p, json, &err) == 0);
			fclose(f);
		}
		mc_plan_free(&p);

		mc_cand_view_init(&names);
		if ((f = input(data, size)) != NULL) {
			if (mc_report_read(f, &r, &names, json, &err) == 0) {
				struct mc_plan np;

				/* the report names its failures through a plan's view */
				mc_plan_init(&np);
				np.view = names;
				mc_cand_view_init(&names);
				sink_write(mc_report_write(null, &r, &np, json, &err) == 0);
				mc_plan_free(&np);
			}
			mc_report_free(&r);
			fclose(f);
		}
		mc_cand_view_free(&names);
	}
	fclose(null);
	return 0;
}
