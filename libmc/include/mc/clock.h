/*
 * The one clock every lease, TTL, heat window and deadline reads.
 *
 * mc_now_ms() is wall-clock milliseconds since the epoch. When the
 * environment variable MC_FAKE_CLOCK names a file, the clock instead
 * is what that file says: a decimal number of milliseconds (whitespace
 * allowed), which tests rewrite, in place or by a rename onto it, to
 * move time (`echo 5000 > "$MC_FAKE_CLOCK"`); every call after the
 * rewrite returned sees it. An unreadable or empty file keeps the last
 * value read. Timers that merely schedule work (sweeps, heartbeats)
 * still fire on the real clock; what they decide uses mc_now_ms().
 */
#ifndef MC_CLOCK_H
#define MC_CLOCK_H

#include <stdint.h>
#include <sys/time.h>

#include "mc/checked.h" /* mc_add_sat, for deadlines */

uint64_t mc_now_ms(void);
/*
 * The environment is read on the first call; call this after changing
 * MC_FAKE_CLOCK in a running process (unit tests do).
 */
void mc_clock_use_env(void);
/* Monotonic nanoseconds for measuring latency; never faked. */
uint64_t mc_mono_ns(void);
/* The same in milliseconds: connection and peer timeouts. */
static inline uint64_t
mc_mono_ms(void)
{
	return mc_mono_ns() / 1000000u;
}
/*
 * The monotonic clock in milliseconds, or the fake clock when one is set
 * (MC_FAKE_CLOCK, mc_clock_set_fake): for expiries that must not follow
 * the wall clock, yet that tests move by hand.
 */
uint64_t mc_steady_ms(void);
/* How many times the MC_FAKE_CLOCK file was read (unit tests). */
uint64_t mc_clock_file_reads(void);
/* Unit tests: force a value (non-zero) or return to the normal clock (0). */
void mc_clock_set_fake(uint64_t ms);

/* ms milliseconds as a timeval, for libevent's timers. */
static inline struct timeval
mc_ms_timeval(uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	return tv;
}

#endif
