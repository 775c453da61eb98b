/*
 * Data-plane grants: the master's signed word that one peer may read or
 * write exactly one object version of one length, until an expiry.
 *
 * A grant is signed with crypto_auth under a key of the peer's own,
 * derived from the master's current grant key and the peer id, so a
 * peer that leaks its key cannot mint grants for another. What a grant
 * covers (tenant, key, version, length, peer, action) is not in it: the
 * peer rebuilds it from the request the grant came with, so a grant
 * presented with any other request fails its signature. On the wire a
 * grant is MC_GRANT_BYTES of bin: a format byte, the key generation
 * (u32), the expiry (u64, milliseconds on the issuer's steady clock) and
 * the tag, integers big-endian.
 *
 * Clocks of different hosts need not agree: the peer learns the
 * master's clock reading with each key (mc_grant_keys_add) and judges an
 * expiry on its own clock through that offset, allowing a skew.
 *
 * Daemon-only (libsodium); the client carries grants as opaque bytes.
 */
#ifndef MC_GRANT_H
#define MC_GRANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "mc/err.h"

#define MC_GRANT_KEY_BYTES 32
#define MC_GRANT_TAG_BYTES 32
#define MC_GRANT_BYTES (1 + 4 + 8 + MC_GRANT_TAG_BYTES)

enum mc_grant_action { MC_GRANT_READ = 1, MC_GRANT_WRITE = 2 };

/* What a grant covers: one action on one object version at one peer. */
struct mc_grant_scope {
	const char *tenant;
	size_t tlen;
	const void *key;
	size_t klen;
	uint64_t version;
	uint64_t len;
	uint32_t peer;
	int action; /* enum mc_grant_action */
};

/* The master's grant key of one generation (a new one on each rotation). */
struct mc_grant_master {
	uint32_t gen;
	unsigned char key[MC_GRANT_KEY_BYTES];
};

/* A fresh random master key, generation gen. -1 when libsodium cannot start. */
int mc_grant_master_init(struct mc_grant_master *m, uint32_t gen, struct mc_err *err);
/* The key of peer under m, handed to that peer alone. */
void mc_grant_peer_key(const struct mc_grant_master *m, uint32_t peer,
		       unsigned char out[MC_GRANT_KEY_BYTES]);
/*
 * A key of one generation made ready to sign or check with: the HMAC
 * state after the key, so each grant hashes only its own bytes.
 */
struct mc_grant_signer {
	uint32_t gen;
	crypto_auth_hmacsha512256_state st;
};

void mc_grant_signer_init(struct mc_grant_signer *s, uint32_t gen,
			  const unsigned char key[MC_GRANT_KEY_BYTES]);
/* Sign a grant for scope, expiring at expiry_ms on the issuer's clock, into out. */
void mc_grant_sign_with(const struct mc_grant_signer *s, const struct mc_grant_scope *scope,
			uint64_t expiry_ms, unsigned char out[MC_GRANT_BYTES]);
/* The same with a key not made ready. */
void mc_grant_sign(const unsigned char key[MC_GRANT_KEY_BYTES], uint32_t gen,
		   const struct mc_grant_scope *scope, uint64_t expiry_ms,
		   unsigned char out[MC_GRANT_BYTES]);

/* Why a grant was refused; MC_GRANT_OK when it covers the request. */
enum mc_grant_verdict {
	MC_GRANT_OK = 0,
	MC_GRANT_MISSING, /* no grant, or not MC_GRANT_BYTES long */
	MC_GRANT_UNKNOWN, /* signed under a key generation this peer does not hold */
	MC_GRANT_FORGED,  /* the tag does not match: forged, or for another request */
	MC_GRANT_EXPIRED, /* past its expiry and the skew */
	MC_GRANT_VERDICTS
};

/* "missing", "unknown_key", "forged", "expired": a metric label. */
const char *mc_grant_verdict_name(int v);

/*
 * A peer's keys: the current and the previous generation, each with the
 * offset from the master's clock to this peer's, learned on receipt.
 */
struct mc_grant_keys {
	struct {
		bool set;
		struct mc_grant_signer s;
		int64_t offset_ms; /* local clock minus the master's */
	} k[2];			   /* k[0] current, k[1] previous */
};

/*
 * Take a key of generation gen received when the master's clock read
 * master_now and this peer's local_now. A newer generation becomes the
 * current one and the current one the previous; a repeat of a known
 * generation (a re-registration) refreshes it in place.
 */
void mc_grant_keys_add(struct mc_grant_keys *ks, uint32_t gen,
		       const unsigned char key[MC_GRANT_KEY_BYTES], uint64_t master_now,
		       uint64_t local_now);
/* Check grant (glen bytes) against scope at local time now, allowing skew_ms. */
int mc_grant_verify(const struct mc_grant_keys *ks, const struct mc_grant_scope *scope,
		    const void *grant, size_t glen, uint64_t now, uint64_t skew_ms);
/*
 * When a grant mc_grant_verify passed expires on this peer's clock (the
 * clock of its now), without the skew; 0 for one it could not have
 * passed.
 */
uint64_t mc_grant_local_expiry(const struct mc_grant_keys *ks, const void *grant, size_t glen);

#endif
