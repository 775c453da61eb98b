/*
 * The result record every command ends with: one line of key=value pairs
 * after the command's name for tests/bench/ scripts, or with --json one
 * JSON object whose "mode" is the command's name. A command states its
 * fields once and both forms come from them.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "mc/json.h"

/* JSON: the comma before every value but a container's first. */
static void
json_sep(struct bench_out *r)
{
	if (!r->first)
		putchar(',');
	r->first = false;
}

/* Start a field: false when the form leaves it out. */
static bool
field(struct bench_out *r, const char *name)
{
	if (!r->json) {
		/* a list is the text form's table, printed before the line */
		if (r->list_depth > 0)
			return false;
		printf(" %s=", name);
		return true;
	}
	json_sep(r);
	mc_json_write_str(stdout, name, strlen(name));
	putchar(':');
	return true;
}

void
out_begin(struct bench_out *r, bool json, const char *mode)
{
	memset(r, 0, sizeof(*r));
	r->json = json;
	r->first = true;
	if (!json) {
		fputs(mode, stdout);
		return;
	}
	putchar('{');
	out_str(r, "mode", mode);
}

void
out_u64(struct bench_out *r, const char *name, uint64_t v)
{
	if (!field(r, name))
		return;
	if (r->json)
		mc_json_write_u64(stdout, v);
	else
		printf("%" PRIu64, v);
}

void
out_double(struct bench_out *r, const char *name, int decimals, double v)
{
	if (!field(r, name))
		return;
	if (r->json && !isfinite(v))
		fputs("null", stdout);
	else
		printf("%.*f", decimals, v);
}

void
out_str(struct bench_out *r, const char *name, const char *s)
{
	if (!field(r, name))
		return;
	if (r->json)
		mc_json_write_str(stdout, s, strlen(s));
	else
		fputs(s, stdout);
}

void
out_list_begin(struct bench_out *r, const char *name)
{
	if (field(r, name))
		putchar('[');
	r->list_depth++;
	r->first = true;
}

void
out_item_begin(struct bench_out *r)
{
	if (r->json) {
		json_sep(r);
		putchar('{');
	}
	r->first = true;
}

void
out_item_end(struct bench_out *r)
{
	if (r->json)
		putchar('}');
	r->first = false;
}

void
out_list_end(struct bench_out *r)
{
	r->list_depth--;
	if (r->json)
		putchar(']');
	r->first = false;
}

void
out_end(struct bench_out *r)
{
	if (r->json)
		putchar('}');
	putchar('\n');
	fflush(stdout);
}
