/*
 * The master's grants on this peer (peer.h): the keys it sends, and the
 * one check every granted request goes through, a client's read or
 * write on the data plane and the read a replica_copy task makes of
 * this peer's own copy alike.
 */
#include <string.h>

#include "mc/clock.h"
#include "mc/wire.h"

#include "peer.h"

int
peer_grant_key(struct peer *p, uint32_t peer_id, const msgpack_object *gk, struct mc_err *err)
{
	uint64_t gen = 0, now = 0;
	const char *key;
	size_t klen = 0;

	if (gk == NULL || gk->type != MSGPACK_OBJECT_MAP || mc_map_u64(gk, "gen", &gen, err) != 1 ||
	    mc_map_u64(gk, "now", &now, err) != 1 || mc_map_str(gk, "key", &key, &klen, err) != 1 ||
	    klen != MC_GRANT_KEY_BYTES || gen > UINT32_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "a grant key needs gen, key and now");
	/* Keys are derived for one id: those of another are worth nothing now. */
	if (peer_id != p->grants.peer_id)
		memset(&p->grants.keys, 0, sizeof(p->grants.keys));
	p->grants.peer_id = peer_id;
	mc_grant_keys_add(&p->grants.keys, (uint32_t)gen, (const unsigned char *)key, now,
			  mc_steady_ms());
	return 0;
}

int
peer_grant_check(const struct peer *p, const struct mc_grant_scope *scope, const void *grant,
		 size_t glen)
{
	struct mc_grant_scope s = *scope;

	/* before the first registration no key is held: nothing is granted */
	if (p->grants.peer_id == 0 || grant == NULL)
		return MC_GRANT_MISSING;
	s.peer = p->grants.peer_id;
	return mc_grant_verify(&p->grants.keys, &s, grant, glen, mc_steady_ms(), p->grants.skew_ms);
}
