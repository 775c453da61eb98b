/*
 * libFuzzer target for the value parsers every program's flags, config
 * files and policies go through (mc/parse.h), and the option setters
 * over them (mc/opt.h): whatever the text, each accepts it or refuses
 * it with a reason; what a size, duration or percentage parser
 * accepts is in range and formats back for people.
 * Build and run: make fuzz (needs clang).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mc/opt.h"
#include "mc/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The setters' buffer, as mc_opt_parse gives it (opt.c's WHY_MAX). */
#define WHY_BYTES 200

/*
 * A refusal says why. (It may quote the text, control characters and
 * all: callers print what they were given.)
 */
static void
reason(const char *why)
{
	if (why[0] == '\0')
		abort();
}

static void
parsed(int rc, const struct mc_err *err)
{
	if (rc != 0)
		reason(err->msg);
}

typedef int (*setter)(const char *v, void *target, char *why);

static void
set(setter fn, const char *v, void *target)
{
	char why[WHY_BYTES] = "";

	if (fn(v, target, why) != 0)
		reason(why);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), buf[32];
	struct mc_amount a;
	struct mc_err err;
	uint64_t u;
	double d;
	bool b;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (mc_parse_size(s, &u, &err) == 0)
		mc_fmt_size(u, buf, sizeof(buf));
	else
		reason(err.msg);
	if (mc_parse_duration_ms(s, &u, &err) == 0)
		mc_fmt_duration_ms(u, buf, sizeof(buf));
	else
		reason(err.msg);
	if (mc_parse_percent(s, &u, &err) == 0) {
		if (u > MC_PERCENT_WHOLE)
			abort();
		(void)mc_percent_of(UINT64_MAX, u);
	} else {
		reason(err.msg);
	}
	if (mc_parse_amount(s, &a, &err) == 0) {
		if (a.is_pct && a.pct_micro > MC_PERCENT_WHOLE)
			abort();
		(void)mc_amount_bytes(&a, UINT64_MAX);
	} else {
		reason(err.msg);
	}
	parsed(mc_parse_u64(s, &u, &err), &err);
	parsed(mc_parse_double(s, &d, &err), &err);
	parsed(mc_parse_bool(s, &b, &err), &err);

	set(mc_set_size, s, &u);
	set(mc_set_duration, s, &u);
	set(mc_set_u64, s, &u);
	set(mc_set_double, s, &d);
	set(mc_set_amount, s, &a);
	{
		int i;

		set(mc_set_int, s, &i);
		set(mc_set_positive_int, s, &i);
	}
	free(s);
	return 0;
}
