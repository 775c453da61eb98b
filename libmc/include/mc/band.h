/*
 * The eviction band of a tier: where eviction starts (high) and where it
 * stops (low), in bytes.
 *
 * By default a tier evicts just ahead of need: it keeps free only a
 * headroom, the writes in flight to it plus one slice, and eviction runs
 * whenever free space falls below that headroom, a slice at a time. The
 * usage a tier is measured by counts the room its writes in flight hold
 * already (their reservations, on the master; their allocations, on a
 * peer), so over that usage the headroom is one slice: the tier stays
 * between capacity - 2 slices and capacity - 1 slice, and its committed
 * copies leave the writes in flight their room besides. A slice is MC_BAND_SLICE_COPIES copies at the tier's
 * mean copy size (the victims one turn of eviction takes), at most
 * 1/MC_BAND_SLICE_SHARE of the capacity, at least one copy.
 *
 * What it trades: the thinner the band, the more rounds, each planned
 * over a window of the coldest copies (mc_plan_window, mc/planner.h),
 * so a round costs what its victims cost and a thin band costs rounds,
 * not walks of the tier. A write that finds no room waits for a slice.
 *
 * Operators who want a wide band give watermarks (fractions of the
 * capacity) instead; mc_band_marks turns them into bytes.
 */
#ifndef MC_BAND_H
#define MC_BAND_H

#include <stdint.h>

#define MC_BAND_SLICE_COPIES 64
#define MC_BAND_SLICE_SHARE 64

struct mc_band {
	uint64_t high; /* eviction starts once usage is above this */
	uint64_t low;  /* and frees down to this */
	uint64_t slice;
};

/*
 * The headroom band of a tier of capacity bytes holding copies copies of
 * bytes in all (their mean makes the slice), over a usage that counts
 * the writes in flight. An empty tier (no mean yet) takes the share's
 * bound as its slice. A copy bigger than the share's bound makes the
 * slice that one copy.
 */
void mc_band_headroom(uint64_t capacity, uint64_t bytes, uint64_t copies, struct mc_band *out);

/* The band of two watermarks, fractions of capacity with 0 < low < high <= 1. */
void mc_band_marks(uint64_t capacity, double high, double low, struct mc_band *out);

#endif
