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

/* The stream is XXH3's own state; the wrapper keeps xxhash.h private. */
struct mc_checksum_stream *
mc_checksum_stream_new(void)
{
	XXH3_state_t *st = XXH3_createState();

	if (st != NULL)
		XXH3_64bits_reset(st);
	return (struct mc_checksum_stream *)st;
}

void
mc_checksum_stream_free(struct mc_checksum_stream *s)
{
	if (s != NULL)
		XXH3_freeState((XXH3_state_t *)s);
}

void
mc_checksum_stream_reset(struct mc_checksum_stream *s)
{
	XXH3_64bits_reset((XXH3_state_t *)s);
}

void
mc_checksum_stream_update(struct mc_checksum_stream *s, const void *buf, size_t len)
{
	XXH3_64bits_update((XXH3_state_t *)s, buf, len);
}

uint64_t
mc_checksum_stream_digest(const struct mc_checksum_stream *s)
{
	return XXH3_64bits_digest((const XXH3_state_t *)s);
}
