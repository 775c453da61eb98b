/*
 * The work of mc-evict-plan once the options are parsed: load the
 * policy, read the view (JSON lines or msgpack, told apart by the first
 * byte), resolve --target and --lowerbound against it, plan, and write
 * the plan or, with --explain, the planner's account of every scope.
 *
 * The view is read once into the compact mc_cand_view and moved into the
 * plan by the planner, so a 10M-candidate view is held once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/candidates.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/plan.h"
#include "mc/planner.h"
#include "mc/policy.h"
#include "evictplan.h"

/* What a failed library call means for our exit status (DESIGN.md 8). */
static int
data_exit(int code)
{
	switch (code) {
	case MC_ERR_SYSTEM:
		return MC_EXIT_FAIL; /* cannot open or read: nothing wrong with the data */
	case MC_ERR_NO_SPACE:
	case MC_ERR_INTERNAL:
		return MC_EXIT_SOFTWARE;
	default:
		return MC_EXIT_DATAERR;
	}
}

static void
load_policy(struct mc_policy *pol)
{
	struct mc_err err = { 0 };

	if (ep.policy == NULL ? mc_policy_builtin(pol, &err) < 0
			      : mc_policy_load(ep.policy, pol, &err) < 0)
		mc_die(data_exit(err.code), "%s", err.msg);
}

int
evictplan_check(void)
{
	struct mc_policy pol;

	load_policy(&pol);
	printf("%s: ok\n", ep.policy != NULL ? ep.policy : "built-in default policy");
	mc_policy_free(&pol);
	if (fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write to stdout: %s", mc_strerror(errno));
	return MC_EXIT_OK;
}

/* --lowerbound above --target asks for the impossible: a usage error. */
static void
check_bounds(uint64_t target, uint64_t lowerbound)
{
	char t[32], l[32];

	if (lowerbound == MC_PLAN_DEFAULT_LOWERBOUND || lowerbound <= target)
		return;
	mc_die(MC_EXIT_USAGE, "invalid --lowerbound '%s': %s is above the target of %s",
	       ep.lowerbound.text, mc_fmt_size(lowerbound, l, sizeof(l)),
	       mc_fmt_size(target, t, sizeof(t)));
}

/*
 * JSON lines start with '{' (after blank lines, which JSON lines may
 * have); a msgpack stream starts with a map, never a blank byte, so
 * skipping those costs the msgpack reader nothing it could accept.
 */
static bool
looks_like_json(FILE *in)
{
	int c;

	do
		c = getc(in);
	while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
	if (c == EOF)
		return false;
	ungetc(c, in);
	return c == '{';
}

static void
read_view(struct mc_cand_view *v)
{
	struct mc_err err = { 0 };
	const char *path = ep.input;
	bool from_stdin = path == NULL || strcmp(path, "-") == 0;
	FILE *in = stdin;
	char where[300];

	if (from_stdin) {
		snprintf(where, sizeof(where), "on stdin");
	} else {
		snprintf(where, sizeof(where), "in '%s'", path);
		in = fopen(path, "r");
		if (in == NULL)
			mc_die(MC_EXIT_FAIL, "cannot open '%s': %s", path, mc_strerror(errno));
	}
	mc_cand_view_init(v);
	if (mc_cand_read(in, v, looks_like_json(in), &err) < 0)
		mc_die(data_exit(err.code), "bad candidate view %s: %s", where, err.msg);
	if (!from_stdin)
		fclose(in);
}

static void
write_plan(const struct mc_plan *plan)
{
	struct mc_err err = { 0 };

	if (mc_plan_write(stdout, plan, ep.json, &err) == 0)
		return;
	if (errno == EPIPE)
		exit(MC_EXIT_FAIL); /* the reader went away: nobody to tell */
	mc_die(err.code == MC_ERR_INTERNAL ? MC_EXIT_SOFTWARE : MC_EXIT_FAIL, "%s", err.msg);
}

int
evictplan_run(void)
{
	struct mc_policy pol;
	struct mc_cand_view view;
	struct mc_plan plan;
	struct mc_plan_params pp = { 0 };
	struct mc_err err = { 0 };

	if (!ep.target.v.is_pct && ep.lowerbound.text != NULL && !ep.lowerbound.v.is_pct)
		check_bounds(ep.target.v.bytes, ep.lowerbound.v.bytes);
	if (!ep.json && !ep.explain && isatty(STDOUT_FILENO))
		mc_die(MC_EXIT_USAGE, "refusing to write a plan to a terminal; use --json, "
				      "--explain or a pipe");
	load_policy(&pol);
	read_view(&view);

	pp.target = mc_amount_bytes(&ep.target.v, mc_cand_view_bytes(&view));
	pp.lowerbound = MC_PLAN_DEFAULT_LOWERBOUND;
	if (ep.lowerbound.text != NULL)
		pp.lowerbound = mc_amount_bytes(&ep.lowerbound.v, pp.target);
	check_bounds(pp.target, pp.lowerbound);
	pp.soft_pinned_pass = ep.soft_pinned_pass;
	pp.now = 0; /* the view's created time: the plan depends on the view alone */

	if (mc_planner_run(&pol, &view, &pp, &plan, ep.explain ? stdout : NULL, &err) < 0)
		mc_die(data_exit(err.code), "cannot plan: %s", err.msg);
	if (ep.explain) {
		if (fflush(stdout) != 0) {
			if (errno == EPIPE)
				exit(MC_EXIT_FAIL);
			mc_die(MC_EXIT_FAIL, "cannot write the explanation: %s",
			       mc_strerror(errno));
		}
	} else {
		write_plan(&plan);
	}
	mc_plan_free(&plan);
	mc_cand_view_free(&view);
	mc_policy_free(&pol);
	return MC_EXIT_OK;
}
