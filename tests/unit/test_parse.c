/* Unit tests for sizes, durations and numbers (libmc/parse.c). */
#include <string.h>

#include "mc/parse.h"
#include "tap.h"

static int
size_is(const char *s, uint64_t want)
{
	struct mc_err err = { 0 };
	uint64_t v = 0;

	return mc_parse_size(s, &v, &err) == 0 && v == want;
}

/* Fails, and the message contains the expected fragment. */
static int
size_fails(const char *s, const char *why)
{
	struct mc_err err = { 0 };
	uint64_t v = 12345;

	return mc_parse_size(s, &v, &err) == -1 && v == 12345 && strstr(err.msg, why) != NULL;
}

static int
dur_is(const char *s, uint64_t want)
{
	struct mc_err err = { 0 };
	uint64_t v = 0;

	return mc_parse_duration_ms(s, &v, &err) == 0 && v == want;
}

static int
dur_fails(const char *s, const char *why)
{
	struct mc_err err = { 0 };
	uint64_t v = 0;

	return mc_parse_duration_ms(s, &v, &err) == -1 && strstr(err.msg, why) != NULL;
}

static void
test_sizes(void)
{
	TAP_OK(size_is("4096", 4096), "size: a bare number is bytes");
	TAP_OK(size_is("0", 0), "size: zero is allowed");
	TAP_OK(size_is("64KiB", 65536) && size_is("64K", 65536) && size_is("64KB", 65536) &&
		       size_is("64k", 65536) && size_is("64Ki", 65536),
	       "size: K, KB, Ki and KiB are all 1024");
	TAP_OK(size_is("10GiB", 10737418240ULL), "size: 10GiB");
	TAP_OK(size_is("1.5G", 1610612736ULL), "size: 1.5G is exact");
	TAP_OK(size_is("2T", 2199023255552ULL), "size: 2T");
	TAP_OK(size_is("3M", 3145728) && size_is("1P", 1ULL << 50) && size_is("1E", 1ULL << 60),
	       "size: M, P and E units");
	TAP_OK(size_is("100B", 100), "size: a B suffix alone means bytes");
	TAP_OK(size_is("1.5", 1) && size_is("0.3K", 307), "size: fractional bytes round down");
	TAP_OK(size_is("0.0000000000000000000001E", 0) &&
		       size_is("15.9999999999999999999E", UINT64_MAX),
	       "size: long fractions stay exact");
	TAP_OK(size_is("18446744073709551615", UINT64_MAX), "size: UINT64_MAX itself is fine");
	TAP_OK(size_fails("18446744073709551616", "too large"),
	       "size: UINT64_MAX + 1 is too large");
	TAP_OK(size_fails("16E", "too large") && size_fails("17179869184G", "too large"),
	       "size: unit overflow is too large");
	TAP_OK(size_fails("-1", "negative"), "size: negative is rejected");
	TAP_OK(size_fails("", "empty"), "size: empty is rejected");
	TAP_OK(size_fails("abc", "not a number") && size_fails(".", "not a number") &&
		       size_fails("+4", "not a number") && size_fails(" 4", "not a number"),
	       "size: text is not a number");
	TAP_OK(size_fails("10X", "unknown unit 'X'"), "size: unknown unit names the unit");
	TAP_OK(size_fails("10 K", "unknown unit") && size_fails("10KiBs", "unknown unit") &&
		       size_fails("4096 ", "unknown unit") && size_fails("1.2.3", "unknown unit"),
	       "size: trailing junk is rejected");
}

static void
test_durations(void)
{
	TAP_OK(dur_is("500ms", 500), "duration: 500ms");
	TAP_OK(dur_is("30s", 30000), "duration: 30s");
	TAP_OK(dur_is("10m", 600000), "duration: 10m");
	TAP_OK(dur_is("24h", 86400000), "duration: 24h");
	TAP_OK(dur_is("2d", 172800000), "duration: 2d");
	TAP_OK(dur_is("1.5s", 1500), "duration: 1.5s is 1500 ms");
	TAP_OK(dur_is("10", 10000), "duration: a bare number is seconds");
	TAP_OK(dur_is("0", 0), "duration: zero is allowed");
	TAP_OK(dur_is("1.5ms", 1), "duration: fractional milliseconds round down");
	TAP_OK(dur_fails("10x", "unknown unit 'x'") && dur_fails("10 s", "unknown unit") &&
		       dur_fails("5sec", "unknown unit"),
	       "duration: junk after the number is rejected");
	TAP_OK(dur_fails("", "empty") && dur_fails("s", "not a number") &&
		       dur_fails("-5s", "negative"),
	       "duration: empty, unit-only and negative are rejected");
	TAP_OK(dur_fails("18446744073709551615s", "too large") &&
		       dur_fails("99999999999999999999", "too large"),
	       "duration: overflow is too large");
}

static void
test_numbers(void)
{
	struct mc_err err = { 0 };
	uint64_t u = 0;
	double d = 0;
	bool b = false;
	int ok = 1;
	size_t i;
	static const char *yes[] = { "true", "yes", "on", "1", "TRUE", "Yes" };
	static const char *no[] = { "false", "no", "off", "0", "OFF" };

	TAP_OK(mc_parse_u64("12345", &u, &err) == 0 && u == 12345, "u64: plain integer");
	TAP_OK(mc_parse_u64("18446744073709551615", &u, &err) == 0 && u == UINT64_MAX,
	       "u64: UINT64_MAX");
	TAP_OK(mc_parse_u64("18446744073709551616", &u, &err) == -1 &&
		       strstr(err.msg, "too large") != NULL,
	       "u64: overflow is too large");
	TAP_OK(mc_parse_u64("12k", &u, &err) == -1 && mc_parse_u64("1.5", &u, &err) == -1 &&
		       mc_parse_u64("", &u, &err) == -1 && mc_parse_u64("x", &u, &err) == -1 &&
		       strstr(err.msg, "not a number") != NULL,
	       "u64: units, fractions, empty and text are rejected");
	TAP_OK(mc_parse_double("0.25", &d, &err) == 0 && d == 0.25, "double: 0.25");
	TAP_OK(mc_parse_double("-1e3", &d, &err) == 0 && d == -1000.0, "double: exponent and sign");
	TAP_OK(mc_parse_double("1.5x", &d, &err) == -1 && mc_parse_double("", &d, &err) == -1 &&
		       mc_parse_double("nan", &d, &err) == -1 &&
		       mc_parse_double("1e999", &d, &err) == -1,
	       "double: junk, empty, nan and overflow are rejected");
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (mc_parse_bool(yes[i], &b, &err) != 0 || !b)
			ok = 0;
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (mc_parse_bool(no[i], &b, &err) != 0 || b)
			ok = 0;
	TAP_OK(mc_parse_percent("12.5%", &u, &err) == 0 && u == 12500000 &&
		       mc_parse_percent("100%", &u, &err) == 0 && u == MC_PERCENT_WHOLE &&
		       mc_parse_percent("0.000001%", &u, &err) == 0 && u == 1 &&
		       mc_parse_percent("20.%", &u, &err) == 0 && u == 20000000,
	       "percent: exact millionths of a percent");
	TAP_OK(mc_parse_percent("100.000001%", &u, &err) == -1 &&
		       strstr(err.msg, "at most 100%") != NULL &&
		       mc_parse_percent("99999999999999999999999%", &u, &err) == -1 &&
		       strstr(err.msg, "at most 100%") != NULL,
	       "percent: above 100, or overflowing, is refused as such");
	TAP_OK(mc_parse_percent("1.2345678%", &u, &err) == -1 &&
		       strstr(err.msg, "6 decimals") != NULL,
	       "percent: more than 6 decimals is refused");
	TAP_OK(mc_parse_percent("", &u, &err) == -1 && mc_parse_percent("-5%", &u, &err) == -1 &&
		       mc_parse_percent("5%x", &u, &err) == -1 &&
		       mc_parse_percent(".%", &u, &err) == -1 &&
		       mc_parse_percent("12", &u, &err) == -1 &&
		       strstr(err.msg, "not a percentage") != NULL,
	       "percent: empty, negative, junk, a bare point and no %% sign are not percentages");
	TAP_OK(ok, "bool: true/false yes/no on/off 1/0 in any case");
	TAP_OK(mc_parse_bool("maybe", &b, &err) == -1 && strstr(err.msg, "not a boolean") != NULL &&
		       mc_parse_bool("", &b, &err) == -1,
	       "bool: anything else is rejected");
}

static void
test_format(void)
{
	char buf[32];

	TAP_OK(strcmp(mc_fmt_size(1536, buf, sizeof(buf)), "1.5KiB") == 0,
	       "fmt size: 1536 is 1.5KiB");
	TAP_OK(strcmp(mc_fmt_size(0, buf, sizeof(buf)), "0B") == 0 &&
		       strcmp(mc_fmt_size(1023, buf, sizeof(buf)), "1023B") == 0,
	       "fmt size: under 1 KiB prints bytes");
	TAP_OK(strcmp(mc_fmt_size(256ULL << 20, buf, sizeof(buf)), "256MiB") == 0 &&
		       strcmp(mc_fmt_size(10ULL << 30, buf, sizeof(buf)), "10GiB") == 0,
	       "fmt size: exact multiples have no decimals");
	TAP_OK(strcmp(mc_fmt_size(UINT64_MAX, buf, sizeof(buf)), "16EiB") == 0,
	       "fmt size: UINT64_MAX fits");
	TAP_OK(strcmp(mc_fmt_duration_ms(1500, buf, sizeof(buf)), "1.5s") == 0,
	       "fmt duration: 1500 is 1.5s");
	TAP_OK(strcmp(mc_fmt_duration_ms(0, buf, sizeof(buf)), "0ms") == 0 &&
		       strcmp(mc_fmt_duration_ms(250, buf, sizeof(buf)), "250ms") == 0,
	       "fmt duration: under a second prints ms");
	TAP_OK(strcmp(mc_fmt_duration_ms(600000, buf, sizeof(buf)), "10m") == 0 &&
		       strcmp(mc_fmt_duration_ms(5400000, buf, sizeof(buf)), "1.5h") == 0 &&
		       strcmp(mc_fmt_duration_ms(172800000, buf, sizeof(buf)), "2d") == 0,
	       "fmt duration: minutes, hours and days");
	{
		struct mc_err err = { 0 };
		uint64_t v = 0;

		mc_fmt_size(1610612736ULL, buf, sizeof(buf));
		TAP_OK(mc_parse_size(buf, &v, &err) == 0 && v == 1610612736ULL,
		       "fmt size: output parses back to the same value");
	}
}

static void
test_amounts(void)
{
	struct mc_err err = { 0 };
	struct mc_amount a = { 0 };

	TAP_OK(mc_parse_amount("2KiB", &a, &err) == 0 && !a.is_pct && a.bytes == 2048 &&
		       mc_amount_bytes(&a, 1) == 2048,
	       "amount: a size is bytes, whatever the whole");
	TAP_OK(mc_parse_amount("20%", &a, &err) == 0 && a.is_pct && a.pct_micro == 20000000 &&
		       mc_amount_bytes(&a, 1000) == 200,
	       "amount: a percentage is of the whole, exactly");
	TAP_OK(mc_parse_amount("12.5%", &a, &err) == 0 && mc_amount_bytes(&a, 3) == 1,
	       "amount: a percentage is rounded up, never less than asked");
	TAP_OK(mc_parse_amount("100%", &a, &err) == 0 &&
		       mc_amount_bytes(&a, UINT64_MAX) == UINT64_MAX &&
		       mc_parse_amount("0.000001%", &a, &err) == 0 &&
		       mc_amount_bytes(&a, UINT64_MAX) == UINT64_MAX / MC_PERCENT_WHOLE + 1,
	       "amount: the largest whole does not overflow");
	a = (struct mc_amount){ .bytes = 7 };
	TAP_OK(mc_parse_amount("120%", &a, &err) == -1 && strstr(err.msg, "at most 100%") &&
		       a.bytes == 7 && !a.is_pct,
	       "amount: a bad percentage says why and leaves the amount alone");
	TAP_OK(mc_parse_amount("12XB", &a, &err) == -1 && strstr(err.msg, "unknown unit 'XB'"),
	       "amount: a bad size says why");
}

int
main(void)
{
	test_sizes();
	test_durations();
	test_numbers();
	test_amounts();
	test_format();
	return tap_done();
}
