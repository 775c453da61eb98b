/*
 * Sizes, durations and plain numbers as people type them.
 *
 * Numbers are parsed by hand rather than with strtod so that "1.5G" is
 * exact (1610612736, not whatever a double rounds to) and so that every
 * overflow is caught instead of saturating silently.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mc/parse.h"

/* A decimal number split into its integer part and its fraction digits. */
struct decimal {
	uint64_t whole;
	const char *frac; /* first fraction digit, or NULL */
	size_t frac_len;
	const char *end; /* first character after the number */
};

static int
parse_decimal(const char *s, struct decimal *d, struct mc_err *err)
{
	const char *p = s;
	int digits = 0;

	memset(d, 0, sizeof(*d));
	if (*s == '\0')
		return mc_err_set(err, MC_ERR_INVALID, "empty value");
	if (*s == '-')
		return mc_err_set(err, MC_ERR_INVALID, "must not be negative");
	for (; isdigit((unsigned char)*p); p++) {
		unsigned dig = (unsigned)(*p - '0');

		if (d->whole > (UINT64_MAX - dig) / 10)
			return mc_err_set(err, MC_ERR_INVALID, "too large");
		d->whole = d->whole * 10 + dig;
		digits++;
	}
	if (*p == '.') {
		p++;
		d->frac = p;
		while (isdigit((unsigned char)*p))
			p++;
		d->frac_len = (size_t)(p - d->frac);
		digits += (int)(d->frac_len > 0);
	}
	if (digits == 0)
		return mc_err_set(err, MC_ERR_INVALID, "not a number");
	d->end = p;
	return 0;
}

/*
 * floor(d * mult) without overflow or rounding error. The fraction part
 * uses floor((a + y) / 10) == floor((a + floor(y)) / 10) for integer a,
 * folding digits from the last one: acc stays below mult, so
 * acc + 9 * mult fits in 64 bits for every mult up to 2^60.
 */
static int
scale_decimal(const struct decimal *d, uint64_t mult, uint64_t *out, struct mc_err *err)
{
	uint64_t acc = 0;
	size_t i;

	if (mult != 0 && d->whole > UINT64_MAX / mult)
		return mc_err_set(err, MC_ERR_INVALID, "too large");
	for (i = d->frac_len; i > 0; i--) {
		uint64_t dig = (uint64_t)(d->frac[i - 1] - '0');

		acc = (dig * mult + acc) / 10;
	}
	if (d->whole * mult > UINT64_MAX - acc)
		return mc_err_set(err, MC_ERR_INVALID, "too large");
	*out = d->whole * mult + acc;
	return 0;
}

int
mc_parse_percent(const char *s, uint64_t *micro, struct mc_err *err)
{
	struct decimal d;
	struct mc_err e;

	if (parse_decimal(s, &d, &e) < 0) {
		/* only digits that overflow make it here with nothing but digits */
		if (*s != '\0' && strspn(s, "0123456789.") == strlen(s) - 1 &&
		    s[strlen(s) - 1] == '%')
			return mc_err_set(err, MC_ERR_INVALID, "a percentage is at most 100%%");
		return mc_err_set(err, MC_ERR_INVALID, "not a percentage");
	}
	if (d.end[0] != '%' || d.end[1] != '\0')
		return mc_err_set(err, MC_ERR_INVALID, "not a percentage");
	if (d.whole > 100)
		return mc_err_set(err, MC_ERR_INVALID, "a percentage is at most 100%%");
	if (d.frac_len > 6)
		return mc_err_set(err, MC_ERR_INVALID, "at most 6 decimals in a percentage");
	if (scale_decimal(&d, MC_PERCENT_MICRO, micro, err) < 0 || *micro > MC_PERCENT_WHOLE)
		return mc_err_set(err, MC_ERR_INVALID, "a percentage is at most 100%%");
	return 0;
}

uint64_t
mc_percent_of(uint64_t whole, uint64_t micro)
{
	/*
	 * whole * micro / MC_PERCENT_WHOLE without overflow: q * micro <=
	 * whole because micro <= MC_PERCENT_WHOLE, and r * micro < 10^16.
	 * Integers throughout, so "20%" of 1000 bytes is 200, never 201
	 * through a binary fraction rounded up.
	 */
	uint64_t q = whole / MC_PERCENT_WHOLE, r = whole % MC_PERCENT_WHOLE;

	return q * micro + (r * micro + MC_PERCENT_WHOLE - 1) / MC_PERCENT_WHOLE;
}

int
mc_parse_amount(const char *s, struct mc_amount *a, struct mc_err *err)
{
	size_t len = s != NULL ? strlen(s) : 0;
	struct mc_amount v = { 0 };

	/* the '%' decides, so "20%" is never read as a size with a bad unit */
	if (len > 0 && s[len - 1] == '%') {
		if (mc_parse_percent(s, &v.pct_micro, err) < 0)
			return -1;
		v.is_pct = true;
	} else if (mc_parse_size(s, &v.bytes, err) < 0) {
		return -1;
	}
	*a = v;
	return 0;
}

uint64_t
mc_amount_bytes(const struct mc_amount *a, uint64_t whole)
{
	return a->is_pct ? mc_percent_of(whole, a->pct_micro) : a->bytes;
}

static uint64_t
size_unit(const char *u)
{
	static const char letters[] = "KMGTPE";
	const char *l;
	size_t n = strlen(u);

	if (n == 0 || strcasecmp(u, "b") == 0)
		return 1;
	l = strchr(letters, toupper((unsigned char)u[0]));
	if (l == NULL)
		return 0;
	/* "K", "KB", "Ki", "KiB" (any case) all mean 1024 */
	if (n == 1 || (n == 2 && (u[1] == 'b' || u[1] == 'B')) || (n == 2 && u[1] == 'i') ||
	    (n == 3 && u[1] == 'i' && (u[2] == 'B' || u[2] == 'b')))
		return (uint64_t)1 << (10 * (l - letters + 1));
	return 0;
}

int
mc_parse_size(const char *s, uint64_t *out, struct mc_err *err)
{
	struct decimal d;
	uint64_t mult;

	if (s == NULL)
		return mc_err_set(err, MC_ERR_INVALID, "empty value");
	if (parse_decimal(s, &d, err) < 0)
		return -1;
	mult = size_unit(d.end);
	if (mult == 0)
		return mc_err_set(err, MC_ERR_INVALID, "unknown unit '%s'", d.end);
	return scale_decimal(&d, mult, out, err);
}

int
mc_parse_duration_ms(const char *s, uint64_t *out, struct mc_err *err)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = {
		{ "", 1000 },	{ "ms", 1 },	  { "s", 1000 },
		{ "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
	};
	struct decimal d;
	size_t i;

	if (s == NULL)
		return mc_err_set(err, MC_ERR_INVALID, "empty value");
	if (parse_decimal(s, &d, err) < 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(d.end, units[i].name) == 0)
			return scale_decimal(&d, units[i].ms, out, err);
	return mc_err_set(err, MC_ERR_INVALID, "unknown unit '%s'", d.end);
}

int
mc_parse_u64(const char *s, uint64_t *out, struct mc_err *err)
{
	struct decimal d;

	if (s == NULL)
		return mc_err_set(err, MC_ERR_INVALID, "empty value");
	if (parse_decimal(s, &d, err) < 0)
		return -1;
	if (d.frac != NULL || *d.end != '\0')
		return mc_err_set(err, MC_ERR_INVALID, "not a whole number");
	*out = d.whole;
	return 0;
}

int
mc_parse_double(const char *s, double *out, struct mc_err *err)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return mc_err_set(err, MC_ERR_INVALID, "empty value");
	if (isspace((unsigned char)*s))
		return mc_err_set(err, MC_ERR_INVALID, "not a number");
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || isnan(v))
		return mc_err_set(err, MC_ERR_INVALID, "not a number");
	if (errno == ERANGE || isinf(v))
		return mc_err_set(err, MC_ERR_INVALID, "out of range");
	*out = v;
	return 0;
}

int
mc_parse_bool(const char *s, bool *out, struct mc_err *err)
{
	static const char *yes[] = { "true", "yes", "on", "1" };
	static const char *no[] = { "false", "no", "off", "0" };
	size_t i;

	if (s == NULL || *s == '\0')
		return mc_err_set(err, MC_ERR_INVALID, "empty value");
	for (i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return mc_err_set(err, MC_ERR_INVALID, "not a boolean (true/false, yes/no, on/off, 1/0)");
}

/*
 * Print v with at most two decimals and no trailing zeros, then the unit:
 * 1.5 -> "1.5", 2.0 -> "2".
 */
static char *
fmt_scaled(uint64_t n, uint64_t unit, const char *name, char *buf, size_t cap)
{
	char num[40];
	size_t len;

	if (n % unit == 0) {
		snprintf(buf, cap, "%llu%s", (unsigned long long)(n / unit), name);
		return buf;
	}
	snprintf(num, sizeof(num), "%.2f", (double)n / (double)unit);
	len = strlen(num);
	while (len > 0 && num[len - 1] == '0')
		num[--len] = '\0';
	if (len > 0 && num[len - 1] == '.')
		num[--len] = '\0';
	snprintf(buf, cap, "%s%s", num, name);
	return buf;
}

char *
mc_fmt_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char *names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int i = 0;

	while (i < 6 && bytes >= (uint64_t)1 << (10 * (i + 1)))
		i++;
	return fmt_scaled(bytes, (uint64_t)1 << (10 * i), names[i], buf, cap);
}

char *
mc_fmt_duration_ms(uint64_t ms, char *buf, size_t cap)
{
	static const struct {
		uint64_t ms;
		const char *name;
	} units[] = {
		{ 86400000, "d" }, { 3600000, "h" }, { 60000, "m" }, { 1000, "s" }, { 1, "ms" },
	};
	size_t i;

	for (i = 0; i < 4 && ms < units[i].ms; i++)
		;
	return fmt_scaled(ms, units[i].ms, units[i].name, buf, cap);
}

/* 9999-12-31T23:59:59Z: later times (a saturated TTL) never come. */
#define ISO_MAX_S 253402300799ULL

char *
mc_fmt_time_ms(uint64_t ms, char *buf, size_t cap)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (ms / 1000 > ISO_MAX_S || gmtime_r(&s, &tm) == NULL) {
		snprintf(buf, cap, "never");
		return buf;
	}
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
	return buf;
}
