/* Object checksums: XXH3-64 of the bytes, computed by writers, verified by readers. */
#ifndef MC_CHECKSUM_H
#define MC_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t mc_checksum(const void *buf, size_t len);
/* 64-bit hash for hash tables (XXH3 with a seed). */
uint64_t mc_hash64(const void *buf, size_t len, uint64_t seed);

#endif
