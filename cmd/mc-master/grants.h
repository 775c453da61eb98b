/*
 * The master's side of data-plane grants (mc/grant.h): the current key,
 * rotated on SIGHUP, and the grant packed into every replica entry of a
 * put_start or get_replica_list answer. Calls nothing of the master's.
 */
#ifndef MASTER_GRANTS_H
#define MASTER_GRANTS_H

#include <msgpack.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/grant.h"

struct mgrants {
	struct mc_grant_master key;
	uint64_t ttl; /* ms a grant is good for after it is issued */
	uint64_t issued, rotations;
};

/* The first key (generation 1). -1 with err when libsodium cannot start. */
int mgrants_init(struct mgrants *g, uint64_t ttl, struct mc_err *err);
/* A new key; grants signed under the one before stay good at the peers for one rotation. */
int mgrants_rotate(struct mgrants *g, struct mc_err *err);
/*
 * Peer's key as a map {gen, key, now}: its generation, its bytes, and
 * the master's steady clock, from which the peer learns the offset to
 * its own (peer_register's answer and the grant_key notification).
 */
void mgrants_pack_key(msgpack_packer *pk, const struct mgrants *g, uint32_t peer);
/*
 * The grant for scope, as a bin of MC_GRANT_BYTES, good for the ttl from
 * now. cache (NULL: none) keeps scope's peer's key ready between calls;
 * it is renewed when the master's key is not the one it was made from.
 */
void mgrants_pack(msgpack_packer *pk, struct mgrants *g, struct mc_grant_signer *cache,
		  const struct mc_grant_scope *scope);

#endif
