/*
 * Parsing of the human-facing values every program accepts:
 * sizes "4096", "64KiB", "10GiB", "1.5G" (K/M/G/T with or without "i"/"iB"
 * /"B" are all powers of 1024), durations "500ms", "30s", "10m", "24h", "2d"
 * (a bare number is seconds), and plain integers. Each returns 0 or -1 with
 * err naming what was wrong; the caller adds the flag name.
 */
#ifndef MC_PARSE_H
#define MC_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

int mc_parse_size(const char *s, uint64_t *out, struct mc_err *err);
int mc_parse_duration_ms(const char *s, uint64_t *out, struct mc_err *err);
int mc_parse_u64(const char *s, uint64_t *out, struct mc_err *err);
int mc_parse_double(const char *s, double *out, struct mc_err *err);
int mc_parse_bool(const char *s, bool *out, struct mc_err *err);
/*
 * A percentage, read as an exact decimal in millionths of a percent:
 * "12.5%" -> 12500000. At most 6 decimals and at most 100, so the result
 * is at most MC_PERCENT_WHOLE.
 */
#define MC_PERCENT_MICRO 1000000u
#define MC_PERCENT_WHOLE (100u * MC_PERCENT_MICRO)
int mc_parse_percent(const char *s, uint64_t *micro, struct mc_err *err);
/* micro millionths of a percent of whole, rounded up: never less than asked. */
uint64_t mc_percent_of(uint64_t whole, uint64_t micro);
/*
 * An amount of bytes as eviction asks for one: a size ("2GiB", "4096")
 * or a percentage ("20%", "12.5%") of a whole known only later (a
 * view's bytes, a target), which mc_amount_bytes applies then.
 */
struct mc_amount {
	bool is_pct;
	uint64_t pct_micro; /* when is_pct: millionths of a percent, 0..MC_PERCENT_WHOLE */
	uint64_t bytes;	    /* when !is_pct */
};
int mc_parse_amount(const char *s, struct mc_amount *a, struct mc_err *err);
uint64_t mc_amount_bytes(const struct mc_amount *a, uint64_t whole);
/* Render for people: 1536 -> "1.5KiB", 1500 -> "1.5s". buf of 32 is enough. */
char *mc_fmt_size(uint64_t bytes, char *buf, size_t cap);
char *mc_fmt_duration_ms(uint64_t ms, char *buf, size_t cap);
/*
 * A time (ms since the epoch) as UTC ISO 8601 with milliseconds,
 * "2023-11-14T22:13:20.000Z"; "never" past year 9999 (a saturated
 * deadline). buf of 32 is enough.
 */
char *mc_fmt_time_ms(uint64_t ms, char *buf, size_t cap);

#endif
