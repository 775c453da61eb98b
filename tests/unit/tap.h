/*
 * A tiny TAP producer for the C unit tests: each check prints "ok N - name"
 * or "not ok N - name", and tap_done() prints the plan and a summary line
 * "N passed, M failed" and returns the exit status (non-zero on failure).
 */
#ifndef MC_TAP_H
#define MC_TAP_H

#include <stdint.h>
#include <stdio.h>

static int tap_n, tap_failed;

/* xorshift64, so runs are reproducible; a test may set the state first. */
static uint64_t tap_rng_state = 88172645463325252ULL;

static inline uint64_t
tap_rng(void)
{
	tap_rng_state ^= tap_rng_state << 13;
	tap_rng_state ^= tap_rng_state >> 7;
	tap_rng_state ^= tap_rng_state << 17;
	return tap_rng_state;
}

#define TAP_OK(cond, ...)                                                               \
	do {                                                                            \
		int tap_c_ = (cond) ? 1 : 0;                                            \
		tap_n++;                                                                \
		if (!tap_c_)                                                            \
			tap_failed++;                                                   \
		printf("%s %d - ", tap_c_ ? "ok" : "not ok", tap_n);                    \
		printf(__VA_ARGS__);                                                    \
		printf("\n");                                                           \
		if (!tap_c_)                                                            \
			printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	} while (0)

static inline int
tap_done(void)
{
	printf("1..%d\n", tap_n);
	printf("# %d passed, %d failed\n", tap_n - tap_failed, tap_failed);
	return tap_failed ? 1 : 0;
}

#endif
