/*
 * Grants issued by the master (grants.h). Lookups sign a grant for every
 * replica they list, so each peer's key is kept ready (struct peer) and
 * a grant hashes only its own bytes.
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

/* Make s ready with peer's key under the master's current one; returns s. */
static const struct mc_grant_signer *
ready(const struct mgrants *g, struct mc_grant_signer *s, uint32_t peer)
{
	unsigned char k[MC_GRANT_KEY_BYTES];

	mc_grant_peer_key(&g->key, peer, k);
	mc_grant_signer_init(s, g->key.gen, k);
	return s;
}

void
mgrants_pack(msgpack_packer *pk, struct mgrants *g, struct mc_grant_signer *cache,
	     const struct mc_grant_scope *scope)
{
	unsigned char out[MC_GRANT_BYTES];
	struct mc_grant_signer local;
	const struct mc_grant_signer *s;

	if (cache == NULL)
		s = ready(g, &local, scope->peer);
	else if (cache->gen != g->key.gen)
		s = ready(g, cache, scope->peer);
	else
		s = cache;
	mc_grant_sign_with(s, scope, mc_add_sat(mc_steady_ms(), g->ttl), out);
	msgpack_pack_bin(pk, sizeof(out));
	msgpack_pack_bin_body(pk, out, sizeof(out));
	g->issued++;
}
