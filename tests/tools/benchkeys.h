/*
 * What the planning benchmarks (mc-peerplan, mc-rankbench) share: their
 * keys, bench-key-NNNNNNNNNNNNNN by number, and a xorshift64 stream for
 * the copies they read again, so that each run is the same.
 */
#ifndef MC_BENCHKEYS_H
#define MC_BENCHKEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static uint64_t bench_rng = 0x9e3779b97f4a7c15ull;

static inline uint64_t
bench_rand(void)
{
	bench_rng ^= bench_rng << 13;
	bench_rng ^= bench_rng >> 7;
	bench_rng ^= bench_rng << 17;
	return bench_rng;
}

/* Key number i into buf: its length. */
static inline size_t
bench_key(char *buf, size_t cap, uint64_t i)
{
	return (size_t)snprintf(buf, cap, "bench-key-%014llu", (unsigned long long)i);
}

#endif
