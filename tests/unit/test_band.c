/*
 * Unit tests for the eviction band (libmc/band.c): the headroom band a
 * tier keeps by default, and the band of two watermarks.
 */
#include <stdint.h>

#include "mc/band.h"
#include "tap.h"

#define MiB (1024ull * 1024)

static void
test_headroom(void)
{
	struct mc_band b;

	/* 1 GiB of 4 KiB copies: a slice is 64 of them, 256 KiB */
	mc_band_headroom(1024 * MiB, 512 * MiB, 131072, &b);
	TAP_OK(b.slice == 64 * 4096, "a slice is SLICE_COPIES copies at the mean size");
	TAP_OK(b.high == 1024 * MiB - b.slice && b.low == b.high - b.slice,
	       "the headroom is one slice, the band one slice below it");
	/* 8 MiB of 64 KiB copies: 64 copies would be half the tier */
	mc_band_headroom(8 * MiB, 4 * MiB, 64, &b);
	TAP_OK(b.slice == 8 * MiB / MC_BAND_SLICE_SHARE,
	       "a slice is at most 1/SLICE_SHARE of the capacity");
	mc_band_headroom(8 * MiB, 4 * MiB, 1, &b);
	TAP_OK(b.slice == 4 * MiB, "a copy bigger than the share is a slice of its own");
	mc_band_headroom(64 * MiB, 0, 0, &b);
	TAP_OK(b.slice == MiB && b.high == 63 * MiB,
	       "an empty tier takes the share's bound as its slice");
	mc_band_headroom(0, 0, 0, &b);
	TAP_OK(b.slice == 1 && b.high == 0 && b.low == 0,
	       "a tier of no bytes evicts from the first byte, no wrap");
}

static void
test_marks(void)
{
	struct mc_band b;

	mc_band_marks(1000, 0.9, 0.7, &b);
	TAP_OK(b.high == 900 && b.low == 700 && b.slice == 200,
	       "watermarks are fractions of the capacity");
}

int
main(void)
{
	test_headroom();
	test_marks();
	return tap_done();
}
