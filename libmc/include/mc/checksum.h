/* Object checksums: XXH3-64 of the bytes, computed by writers, verified by readers. */
#ifndef MC_CHECKSUM_H
#define MC_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t mc_checksum(const void *buf, size_t len);
/*
 * The same checksum computed piece by piece, so a reader can hash each
 * chunk of a large object while it is still in cache, as it arrives,
 * instead of reading the whole object again afterwards.
 */
struct mc_checksum_stream;
struct mc_checksum_stream *mc_checksum_stream_new(void);
void mc_checksum_stream_free(struct mc_checksum_stream *s);
void mc_checksum_stream_reset(struct mc_checksum_stream *s);
void mc_checksum_stream_update(struct mc_checksum_stream *s, const void *buf, size_t len);
uint64_t mc_checksum_stream_digest(const struct mc_checksum_stream *s);

/* 64-bit hash for hash tables (XXH3 with a seed). */
uint64_t mc_hash64(const void *buf, size_t len, uint64_t seed);

#endif
