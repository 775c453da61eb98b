/* The eviction band of a tier (mc/band.h). */
#include "mc/band.h"

void
mc_band_headroom(uint64_t capacity, uint64_t bytes, uint64_t copies, struct mc_band *out)
{
	uint64_t most = capacity / MC_BAND_SLICE_SHARE, slice;

	if (copies > 0) {
		uint64_t mean = bytes / copies > 0 ? bytes / copies : 1;

		slice = mean > UINT64_MAX / MC_BAND_SLICE_COPIES ? UINT64_MAX
								 : mean * MC_BAND_SLICE_COPIES;
		if (slice > most)
			slice = most > mean ? most : mean;
	} else {
		slice = most;
	}
	if (slice == 0)
		slice = 1;
	out->slice = slice;
	out->high = capacity > slice ? capacity - slice : 0;
	out->low = out->high > slice ? out->high - slice : 0;
}

void
mc_band_marks(uint64_t capacity, double high, double low, struct mc_band *out)
{
	out->high = (uint64_t)((double)capacity * high);
	out->low = (uint64_t)((double)capacity * low);
	out->slice = out->high > out->low ? out->high - out->low : 0;
}
