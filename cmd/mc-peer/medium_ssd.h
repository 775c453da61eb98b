/*
 * The SSD medium's file of extents as it lies on disk (medium_ssd.c
 * keeps it, mc-peer(8) documents it), for the medium and for the tests
 * that plant what such a file may hold. Integers are little-endian.
 *
 * The file starts with a superblock of SSD_SB_BYTES: its magic, the
 * format, the length its checksum covers, that checksum (XXH3-64, its
 * own field read as zero), the unit and header room the file was laid
 * out with, and the file's key, drawn at random when the file was made
 * and never shown to anyone. Extents follow it, in units of SSD_UNIT (a
 * sector; a tier too large for the allocator to count in sectors takes
 * the smallest power of two up to a page that it can, ssd_unit_for):
 * each its header's room of one unit, then the copy's bytes, so a copy
 * of n bytes takes a unit and n rounded up to one. Below, the sizes are
 * those of a tier in sectors: SSD_HDR_BYTES is the room, and a
 * continuation's payload is its unit less the magic.
 *
 * An extent header, packed: magic, format (u16), flags (u16), header
 * length (u32), header checksum (u64), data offset, size, version,
 * checksum, soft-pin deadline and continuation offset (u64 each), the
 * key's length (u16), the lengths of tenant, type and group (u8 each),
 * three bytes kept zero, the master's commit receipt of
 * SSD_RECEIPT_BYTES (mc/receipt.h; all zero when the copy has none: not
 * committed yet, or from a master without receipts; recovery believes
 * the header on its checksum alone and hands the receipt on for the
 * master to verify), then the names. The header length counts the
 * fixed fields and the names. When it exceeds the room (names longer
 * than SSD_HDR_BYTES - SSD_H_NAMES bytes together), the room holds its
 * first SSD_HDR_BYTES bytes and the rest lies in a continuation: whole
 * units of its own elsewhere in the file, at the continuation offset,
 * each starting with SSD_CONT_MAGIC followed by the next
 * SSD_CONT_PAYLOAD bytes of the header. No unit of a continuation starts
 * with the header's magic, whatever the names hold.
 *
 * The checksum is SipHash-2-4 (libsodium's crypto_shorthash) under the
 * file's key, of the header's length bytes (room and continuation
 * payloads joined, its checksum field read as zero): only the peer that
 * holds the key can make a header its recovery believes.
 */
#ifndef MC_PEER_MEDIUM_SSD_H
#define MC_PEER_MEDIUM_SSD_H

#include <stddef.h>
#include <stdint.h>

#include "mc/proto.h"

#include "pages.h"

#define SSD_FORMAT 3u
#define SSD_MAGIC_LEN 8
#define SSD_KEY_BYTES 16
/* What extents are laid out in: a sector, what direct I/O may address. */
#define SSD_UNIT PAGES_MIN_UNIT

/* The superblock. */
#define SSD_SB_MAGIC "mcextsup"
#define SSD_SB_BYTES PAGES_SIZE
#define SSD_SB_FORMAT 8
#define SSD_SB_LEN 12
#define SSD_SB_SUM 16
#define SSD_SB_PAGE 24 /* the unit */
#define SSD_SB_HDR 28  /* the header room */
#define SSD_SB_KEY 32
#define SSD_SB_USED (SSD_SB_KEY + SSD_KEY_BYTES)

/* An extent's header. */
#define SSD_MAGIC "mcextent"
#define SSD_H_FORMAT 8 /* u16 */
#define SSD_H_FLAGS 10 /* u16 */
#define SSD_H_LEN 12   /* u32 */
#define SSD_H_SUM 16   /* u64, and every u64 after it */
#define SSD_H_OFF 24
#define SSD_H_SIZE 32
#define SSD_H_VERSION 40
#define SSD_H_CHECKSUM 48
#define SSD_H_DEADLINE 56
#define SSD_H_CONT 64
#define SSD_H_KEY_LEN 72    /* u16 */
#define SSD_H_TENANT_LEN 74 /* u8, as are type's and group's after it */
#define SSD_H_TYPE_LEN 75
#define SSD_H_GROUP_LEN 76
#define SSD_H_RECEIPT 80
#define SSD_RECEIPT_BYTES 32
#define SSD_H_NAMES (SSD_H_RECEIPT + SSD_RECEIPT_BYTES)
#define SSD_H_HARD_PIN 1u
#define SSD_H_DYNAMIC 2u
/* The room in front of every copy: one unit. */
#define SSD_HDR_BYTES SSD_UNIT
/* The longest header: the fixed fields and the longest names. */
#define SSD_HDR_MAX (SSD_H_NAMES + 3 * MC_NAME_MAX + MC_KEY_MAX)

/* A continuation's units. */
#define SSD_CONT_MAGIC "mcextnam"
#define SSD_CONT_PAYLOAD (SSD_UNIT - SSD_MAGIC_LEN)

_Static_assert(MC_NAME_MAX <= 255, "a name's length is a byte");

/* The unit a tier of size bytes is laid out in. */
uint32_t ssd_unit_for(uint64_t size);

/* The checksum of the len bytes of header h under key (h's checksum field read as zero). */
uint64_t ssd_header_sum(const unsigned char key[SSD_KEY_BYTES], unsigned char *h, size_t len);

#endif
