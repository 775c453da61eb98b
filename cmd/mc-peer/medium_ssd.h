/*
 * The SSD medium's file of extents as it lies on disk (medium_ssd.c
 * keeps it, mc-peer(8) documents it), for the medium and for the tests
 * that plant what such a file may hold. Integers are little-endian.
 *
 * The file starts with a superblock of SSD_SB_BYTES: its magic, the
 * format, the length its checksum covers, that checksum (XXH3-64, its
 * own field read as zero), the page and header sizes the file was laid
 * out with, and the file's key, drawn at random when the file was made
 * and never shown to anyone. Extents follow it, each a header of
 * SSD_HDR_BYTES and then the copy's bytes, page-aligned.
 *
 * An extent header: magic, format (u32), header length (u32), header
 * checksum (u64), data offset, size, version, checksum, soft-pin
 * deadline (u64 each), flags (u32), the lengths of tenant, key, type and
 * group (u16 each), four bytes kept zero, then the names. Its checksum
 * is SipHash-2-4 (libsodium's crypto_shorthash) under the file's key, of
 * the header's length bytes with the checksum field read as zero: only
 * the peer that holds the key can make a header its recovery believes.
 */
#ifndef MC_PEER_MEDIUM_SSD_H
#define MC_PEER_MEDIUM_SSD_H

#include <stddef.h>
#include <stdint.h>

#include "mc/proto.h"

#include "pages.h"

#define SSD_FORMAT 2u
#define SSD_MAGIC_LEN 8
#define SSD_KEY_BYTES 16

/* The superblock. */
#define SSD_SB_MAGIC "mcextsup"
#define SSD_SB_BYTES PAGES_SIZE
#define SSD_SB_FORMAT 8
#define SSD_SB_LEN 12
#define SSD_SB_SUM 16
#define SSD_SB_PAGE 24
#define SSD_SB_HDR 28
#define SSD_SB_KEY 32
#define SSD_SB_USED (SSD_SB_KEY + SSD_KEY_BYTES)

/* An extent's header. */
#define SSD_MAGIC "mcextent"
#define SSD_H_FORMAT 8
#define SSD_H_LEN 12
#define SSD_H_SUM 16
#define SSD_H_OFF 24
#define SSD_H_SIZE 32
#define SSD_H_VERSION 40
#define SSD_H_CHECKSUM 48
#define SSD_H_DEADLINE 56
#define SSD_H_FLAGS 64
#define SSD_H_LENS 68
#define SSD_H_NAMES 80
#define SSD_H_HARD_PIN 1u
#define SSD_HDR_BYTES \
	((SSD_H_NAMES + 3 * MC_NAME_MAX + MC_KEY_MAX + PAGES_SIZE - 1) / PAGES_SIZE * PAGES_SIZE)

/* The checksum of the len bytes of header h under key (h's checksum field read as zero). */
uint64_t ssd_header_sum(const unsigned char key[SSD_KEY_BYTES], unsigned char *h, size_t len);

#endif
