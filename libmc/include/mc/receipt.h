/*
 * Commit receipts: the master's word that it committed one version of
 * one object, so that a copy a peer reports later (after a restart of
 * either) can be told from one made up by whoever wrote the peer's
 * files or speaks with the peer's secret.
 *
 * A receipt is keyed BLAKE2b (crypto_generichash), MC_RECEIPT_BYTES
 * long, under a key only the master (and a standby that shares its key
 * file) holds, over (tenant, key, version, size, checksum) encoded
 * without ambiguity: a domain tag, then each name as its length (u64)
 * and its bytes, then the three integers, every u64 little-endian. The
 * peer keeps it with the copy and hands it back in its inventory; it
 * cannot make one, nor change a field of one it has.
 *
 * The key file holds MC_RECEIPT_KEY_BYTES random bytes, mode 0600. It
 * is made when missing and refused when group or others may write it.
 *
 * Daemon-only (libsodium).
 */
#ifndef MC_RECEIPT_H
#define MC_RECEIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

#define MC_RECEIPT_BYTES 32
#define MC_RECEIPT_KEY_BYTES 32

/* What a receipt covers: one committed version of one object. */
struct mc_receipt_of {
	const char *tenant, *key;
	size_t tenant_len, key_len;
	uint64_t version, size, checksum;
};

/*
 * The key in path, into key; when path does not exist, a new random
 * key is written there first (a temporary beside it, linked into place,
 * so that two masters starting at once end up with one key) and
 * *created is set. 0, or -1 with err: unreadable, writable by group or
 * others, or not exactly MC_RECEIPT_KEY_BYTES long.
 */
int mc_receipt_key_load(const char *path, unsigned char key[MC_RECEIPT_KEY_BYTES], bool *created,
			struct mc_err *err);

/* The receipt of what under key, into out. */
void mc_receipt_make(const unsigned char key[MC_RECEIPT_KEY_BYTES],
		     const struct mc_receipt_of *what, unsigned char out[MC_RECEIPT_BYTES]);

/* Whether r (MC_RECEIPT_BYTES) is what's receipt under key; constant time. */
bool mc_receipt_verify(const unsigned char key[MC_RECEIPT_KEY_BYTES],
		       const struct mc_receipt_of *what, const unsigned char *r);

#endif
