/*
 * Grants issued by the master (grants.h). A peer's key is derived on
 * every grant rather than kept per peer: a KDF call costs far less than
 * the round trip it authorizes, and nothing goes stale on rotation.
 */
#include "mc/clock.h"
#include "mc/wire.h"
#include "grants.h"

int
mgrants_init(struct mgrants *g, uint64_t ttl, struct mc_err *err)
{
	g->ttl = ttl;
	g->issued = g->rotations = 0;
	return mc_grant_master_init(&g->key, 1, err);
}

int
mgrants_rotate(struct mgrants *g, struct mc_err *err)
{
	struct mc_grant_master next;

	if (mc_grant_master_init(&next, g->key.gen + 1, err) < 0)
		return -1;
	g->key = next;
	g->rotations++;
	return 0;
}

void
mgrants_pack_key(msgpack_packer *pk, const struct mgrants *g, uint32_t peer)
{
	unsigned char k[MC_GRANT_KEY_BYTES];

	mc_grant_peer_key(&g->key, peer, k);
	msgpack_pack_map(pk, 3);
	mc_pack_kv_u64(pk, "gen", g->key.gen);
	mc_pack_key(pk, "key");
	msgpack_pack_bin(pk, sizeof(k));
	msgpack_pack_bin_body(pk, k, sizeof(k));
	mc_pack_kv_u64(pk, "now", mc_steady_ms());
}

void
mgrants_pack(msgpack_packer *pk, struct mgrants *g, const struct mc_grant_scope *scope)
{
	unsigned char k[MC_GRANT_KEY_BYTES], out[MC_GRANT_BYTES];

	mc_grant_peer_key(&g->key, scope->peer, k);
	mc_grant_sign(k, g->key.gen, scope, mc_add_sat(mc_steady_ms(), g->ttl), out);
	msgpack_pack_bin(pk, sizeof(out));
	msgpack_pack_bin_body(pk, out, sizeof(out));
	g->issued++;
}
