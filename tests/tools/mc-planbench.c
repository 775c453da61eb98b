/*
 * mc-planbench: how much planning adds to merely decoding a candidate
 * view, measured in one process and one run (tests/bench/evict, its
 * target: plan total <= 2x decode).
 *
 *   mc-planbench -p POLICY [--target 20%|SIZE] [--rounds N]
 *                [--soft-pinned-pass] VIEW
 *
 * VIEW is a candidate view file in msgpack stream form
 * (man/mc-candidates.5, mc-candgen writes one). Each round times, one
 * after the other:
 *   decode  open VIEW and mc_cand_read it (the I/O floor: what any
 *           planner must pay to see the view)
 *   total   open VIEW, mc_cand_read it, then mc_planner_run with POLICY
 *           for --target bytes (a percentage is of the view's bytes)
 * Freeing is outside the clock. The file is read once before the first
 * round so that both sides find it in the page cache. Prints one line
 * per round, the medians, then one line "planbench key=value ..." for
 * scripts: decode_s, plan_total_s, plan_s (total minus decode of the
 * same round, median), ratio (median total / median decode), and what
 * the plan held (stages, victims, victim_bytes; evict_bytes is the part
 * in evict stages, the rest being fallback reserves).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/candidates.h"
#include "mc/clock.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/parse.h"
#include "mc/plan.h"
#include "mc/planner.h"
#include "mc/policy.h"

#define MAX_ROUNDS 99

static const char *policy_path, *target_arg = "20%";
static uint64_t rounds = 3;
static bool soft_pinned_pass;

static const struct mc_opt opts[] = {
	{ "policy", 'p', "FILE", NULL, "policy file (required)", mc_set_str, &policy_path },
	{ "target", 0, "STR", NULL, "bytes to free: a size, or a percentage of the view (20%)",
	  mc_set_str, &target_arg },
	{ "rounds", 'r', "N", NULL, "rounds of decode and decode + plan (default 3)", mc_set_u64,
	  &rounds },
	{ "soft-pinned-pass", 0, NULL, NULL, "plan the second pass over soft-pinned candidates",
	  mc_set_flag, &soft_pinned_pass },
	{ 0 },
};

/* What a plan chose, to show that the planner did the whole job. */
struct plan_sum {
	size_t stages, victims;
	uint64_t victim_bytes;
	uint64_t evict_bytes; /* in evict stages; the rest are fallback reserves */
};

static double
seconds_since(uint64_t t0)
{
	return (double)(mc_mono_ns() - t0) / 1e9;
}

static void
read_view(const char *path, struct mc_cand_view *v)
{
	struct mc_err err = { 0 };
	FILE *f = fopen(path, "r");

	if (f == NULL)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, mc_strerror(errno));
	mc_cand_view_init(v);
	if (mc_cand_read(f, v, false, &err) < 0)
		mc_die(mc_status_exit_code(err.code), "%s: %s", path, err.msg);
	fclose(f);
}

/* Read the whole file once and throw it away: the page cache is warm. */
static void
warm(const char *path)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");

	if (f == NULL)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, mc_strerror(errno));
	while (fread(buf, 1, sizeof(buf), f) > 0)
		;
	fclose(f);
}

static uint64_t
view_bytes(const struct mc_cand_view *v)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < v->n; i++)
		sum += v->c[i].bytes;
	return sum;
}

/* --target: "20%" of total, or a size. */
static uint64_t
parse_target(const char *s, uint64_t total)
{
	struct mc_err err = { 0 };
	size_t len = strlen(s);
	uint64_t bytes;

	if (len > 0 && s[len - 1] == '%') {
		char num[64];
		double pct;

		if (len - 1 >= sizeof(num))
			mc_die(MC_EXIT_USAGE, "invalid --target '%s': too long", s);
		memcpy(num, s, len - 1);
		num[len - 1] = '\0';
		if (mc_parse_double(num, &pct, &err) < 0 || pct < 0 || pct > 100)
			mc_die(MC_EXIT_USAGE, "invalid --target '%s': not a percentage 0..100", s);
		return (uint64_t)((double)total * pct / 100.0);
	}
	if (mc_parse_size(s, &bytes, &err) < 0)
		mc_die(MC_EXIT_USAGE, "invalid --target '%s': %s", s, err.msg);
	return bytes;
}

static void
summarise(const struct mc_plan *p, struct plan_sum *sum)
{
	*sum = (struct plan_sum){ .stages = p->nstages };
	for (size_t i = 0; i < p->nstages; i++) {
		const struct mc_stage *s = &p->stages[i];

		sum->victims += s->nvictims;
		for (size_t k = 0; k < s->nvictims; k++) {
			uint64_t b = p->view.c[s->victims[k]].bytes;

			sum->victim_bytes += b;
			if (s->kind == MC_STAGE_EVICT)
				sum->evict_bytes += b;
		}
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(const double *xs, size_t n)
{
	double sorted[MAX_ROUNDS];

	memcpy(sorted, xs, n * sizeof(*xs));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	return sorted[n / 2];
}

int
main(int argc, char **argv)
{
	static const struct mc_opt_spec spec = {
		.usage = "mc-planbench -p POLICY [--target 20%|SIZE] [--rounds N] "
			 "[--soft-pinned-pass] VIEW",
		.summary = "time decoding a candidate view against decoding and planning it",
		.opts = opts,
	};
	struct mc_err err = { 0 };
	struct mc_policy pol;
	struct mc_plan_params pp = { .lowerbound = MC_PLAN_DEFAULT_LOWERBOUND };
	struct mc_cand_view v;
	struct plan_sum sum = { 0 };
	double dec[MAX_ROUNDS], tot[MAX_ROUNDS], plan[MAX_ROUNDS];
	uint64_t total_bytes;
	size_t ncand;
	const char *path;
	int first;

	mc_log_init("mc-planbench", 0);
	first = mc_opt_parse(&spec, argc, argv);
	if (first != argc - 1)
		mc_die(MC_EXIT_USAGE, "expected one VIEW file; try 'mc-planbench --help'");
	path = argv[first];
	if (policy_path == NULL)
		mc_die(MC_EXIT_USAGE, "--policy is required; try 'mc-planbench --help'");
	if (rounds < 1 || rounds > MAX_ROUNDS)
		mc_die(MC_EXIT_USAGE, "invalid --rounds '%" PRIu64 "': not 1..%d", rounds,
		       MAX_ROUNDS);
	if (mc_policy_load(policy_path, &pol, &err) < 0)
		mc_die(err.code == MC_ERR_SYSTEM ? MC_EXIT_FAIL : mc_status_exit_code(err.code),
		       "%s", err.msg);

	warm(path);
	read_view(path, &v);
	ncand = v.n;
	total_bytes = view_bytes(&v);
	mc_cand_view_free(&v);
	pp.target = parse_target(target_arg, total_bytes);
	pp.soft_pinned_pass = soft_pinned_pass;
	printf("view %s: %zu candidates, %" PRIu64 " bytes; policy %s, target %" PRIu64
	       " bytes (%s)\n",
	       path, ncand, total_bytes, policy_path, pp.target, target_arg);

	for (uint64_t r = 0; r < rounds; r++) {
		struct mc_plan p;
		uint64_t t0;
		double read_s;

		t0 = mc_mono_ns();
		read_view(path, &v);
		dec[r] = seconds_since(t0);
		mc_cand_view_free(&v);

		t0 = mc_mono_ns();
		read_view(path, &v);
		read_s = seconds_since(t0);
		if (mc_planner_run(&pol, &v, &pp, &p, NULL, &err) < 0)
			mc_die(mc_status_exit_code(err.code), "cannot plan: %s", err.msg);
		tot[r] = seconds_since(t0);
		plan[r] = tot[r] - read_s;
		summarise(&p, &sum);
		mc_plan_free(&p);
		mc_cand_view_free(&v);
		printf("round %" PRIu64 ": decode %.3f s   decode + plan %.3f s (decode %.3f, plan "
		       "%.3f)   ratio %.2f\n",
		       r + 1, dec[r], tot[r], read_s, plan[r], tot[r] / dec[r]);
		fflush(stdout);
	}
	{
		double d = median(dec, rounds), t = median(tot, rounds), pl = median(plan, rounds);

		printf("median of %" PRIu64 ": decode %.3f s  decode + plan %.3f s  plan alone "
		       "%.3f s  ratio %.2f (target <= 2.0)\n",
		       rounds, d, t, pl, t / d);
		printf("plan: %zu stages, %zu victims, %" PRIu64 " bytes; evict stages %" PRIu64
		       " bytes (%.1f%% of the target), the rest fallback reserves\n",
		       sum.stages, sum.victims, sum.victim_bytes, sum.evict_bytes,
		       pp.target ? 100.0 * (double)sum.evict_bytes / (double)pp.target : 0.0);
		printf("planbench candidates=%zu bytes=%" PRIu64 " target=%" PRIu64
		       " rounds=%" PRIu64
		       " decode_s=%.3f plan_total_s=%.3f plan_s=%.3f ratio=%.2f stages=%zu "
		       "victims=%zu victim_bytes=%" PRIu64 " evict_bytes=%" PRIu64 "\n",
		       ncand, total_bytes, pp.target, rounds, d, t, pl, t / d, sum.stages,
		       sum.victims, sum.victim_bytes, sum.evict_bytes);
	}
	mc_policy_free(&pol);
	return MC_EXIT_OK;
}
