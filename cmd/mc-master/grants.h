/*
 * The master's side of data-plane grants (mc/grant.h): the current key,
 * rotated on SIGHUP, and the grant packed into every replica entry of a
 * put_start or get_replica_list answer. Calls nothing of the master's.
 *
 * A grant's expiry is rounded up to the end of an epoch of an eighth of
 * the ttl, plus the ttl: every grant is good for at least --grant-ttl
 * and at most an eighth more. So a copy's read grant is the same bytes
 * for every reader within an epoch, and the master signs it once an
 * epoch: a small cache (--grant-cache slots, two for each key hash) hands
 * the same bytes out again. A slot is found by a hash of the tenant and key
 * and holds the rest of what the grant covers (tenant id, version,
 * size, peer, key generation, epoch), so a hash collision between two
 * keys can give a tenant a grant the peer refuses for that key, never
 * one for another tenant's. Write grants are signed every time: a
 * version is written once.
 */
#ifndef MASTER_GRANTS_H
#define MASTER_GRANTS_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/grant.h"
#include "mc/metrics.h"

struct mgrant_slot;

struct mgrants {
	struct mc_grant_master key;
	uint64_t ttl; /* ms a grant is good for after it is issued, at least */
	uint64_t signed_grants, cached_grants, rotations;
	struct mgrant_slot *slots; /* NULL: no cache */
	size_t nslots;		   /* a power of two */
};

/* Who a read grant is for, besides its scope: how the cache finds it. */
struct mgrant_ident {
	uint64_t key_hash; /* of tenant and key (store_key_hash) */
	uint32_t tenant;
};

/*
 * The first key (generation 1) and a cache of cache_slots (rounded up to
 * a power of two; 0: none), its counters served on reg (NULL: none). -1
 * with err when libsodium cannot start or the cache cannot be had.
 */
int mgrants_init(struct mgrants *g, uint64_t ttl, size_t cache_slots, struct mc_metrics *reg,
		 struct mc_err *err);
void mgrants_free(struct mgrants *g);
/* Start fetching the cache's slots of the key whose store hash is key_hash. */
void mgrants_prefetch(const struct mgrants *g, uint64_t key_hash);
/* A new key; grants signed under the one before stay good at the peers for one rotation. */
int mgrants_rotate(struct mgrants *g, struct mc_err *err);
/*
 * Peer's key as a map {gen, key, now}: its generation, its bytes, and
 * the master's steady clock, from which the peer learns the offset to
 * its own (peer_register's answer and the grant_key notification).
 */
void mgrants_pack_key(msgpack_packer *pk, const struct mgrants *g, uint32_t peer);
/*
 * The grant for scope, as a bin of MC_GRANT_BYTES, good from now for the
 * ttl rounded up as above (now: the steady clock, mc_steady_ms). signer
 * (NULL: none) keeps scope's peer's key ready between calls; it is
 * renewed when the master's key is not the one it was made from. A read
 * grant with an ident comes from the cache when it can.
 */
void mgrants_pack_at(msgpack_packer *pk, struct mgrants *g, struct mc_grant_signer *signer,
		     const struct mc_grant_scope *scope, const struct mgrant_ident *id,
		     uint64_t now);
/* The same grant's bytes into out, signed afresh (no cache), for a message built later. */
void mgrants_sign(struct mgrants *g, struct mc_grant_signer *signer,
		  const struct mc_grant_scope *scope, uint64_t now,
		  unsigned char out[MC_GRANT_BYTES]);
void mgrants_pack(msgpack_packer *pk, struct mgrants *g, struct mc_grant_signer *signer,
		  const struct mc_grant_scope *scope, const struct mgrant_ident *id);

/* Grants as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module mgrants_module;

#endif
