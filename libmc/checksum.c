/*
 * XXH3-64 from libxxhash: fast enough that checksumming every object on
 * write and read costs a small fraction of copying it.
 */
#include <xxhash.h>

#include "mc/checksum.h"

uint64_t
mc_checksum(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

uint64_t
mc_hash64(const void *buf, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(buf, len, seed);
}
