/*
 * Unit tests for the master's grants (cmd/mc-master/grants.c): the
 * expiry rounded up to an epoch, and the cache that hands a read grant
 * out again within its epoch and never across tenants, versions, peers
 * or keys.
 */
#include <string.h>

#include "grants.h"
#include "mc/wire.h"
#include "tap.h"

#define TTL 8000 /* epochs of 1000 ms */

/* The grant mgrants_pack_at packs for scope and id at now, into out. */
static void
grant_at(struct mgrants *g, const struct mc_grant_scope *s, const struct mgrant_ident *id,
	 uint64_t now, unsigned char out[MC_GRANT_BYTES])
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked z;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	mgrants_pack_at(&pk, g, NULL, s, id, now);
	msgpack_unpacked_init(&z);
	memset(out, 0, MC_GRANT_BYTES);
	if (msgpack_unpack_next(&z, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS &&
	    z.data.type == MSGPACK_OBJECT_BIN && z.data.via.bin.size == MC_GRANT_BYTES)
		memcpy(out, z.data.via.bin.ptr, MC_GRANT_BYTES);
	msgpack_unpacked_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
}

/* The expiry a grant carries (big-endian after the format byte and generation). */
static uint64_t
expiry_of(const unsigned char *g)
{
	uint64_t v = 0;

	for (int i = 5; i < 13; i++)
		v = v << 8 | g[i];
	return v;
}

static struct mc_grant_scope
scope(const char *tenant, const char *key, uint64_t version, uint32_t peer, int action)
{
	return (struct mc_grant_scope){ tenant, strlen(tenant), key,   strlen(key), version,
					100,	peer,		action };
}

static void
test_expiry_rounded_up(void)
{
	struct mgrants g;
	struct mc_grant_scope s = scope("t", "k", 1, 1, MC_GRANT_WRITE);
	unsigned char a[MC_GRANT_BYTES];

	TAP_OK(mgrants_init(&g, TTL, 0, NULL, NULL) == 0, "init: no cache");
	grant_at(&g, &s, NULL, 5000, a);
	TAP_OK(expiry_of(a) == 6000 + TTL,
	       "expiry: issued at an epoch's start, good for ttl + 1000");
	grant_at(&g, &s, NULL, 5999, a);
	TAP_OK(expiry_of(a) == 6000 + TTL, "expiry: issued at its last ms, good for ttl + 1 ms");
	grant_at(&g, &s, NULL, 6000, a);
	TAP_OK(expiry_of(a) == 7000 + TTL, "expiry: the next epoch expires an epoch later");
	TAP_OK(g.signed_grants == 3 && g.cached_grants == 0, "no cache: every grant is signed");
	mgrants_free(&g);
}

static void
test_cache(void)
{
	struct mgrants g;
	struct mgrant_ident id = { 0x1234, 3 }, other_tenant = { 0x1234, 4 },
			    other_key = { 0x9999, 3 };
	struct mc_grant_scope s = scope("t", "k", 7, 2, MC_GRANT_READ);
	unsigned char a[MC_GRANT_BYTES], b[MC_GRANT_BYTES];
	struct mc_grant_scope v = s, p = s, w = s;

	TAP_OK(mgrants_init(&g, TTL, 1000, NULL, NULL) == 0 && g.nslots == 1024,
	       "init: 1000 slots round up to 1024");
	grant_at(&g, &s, &id, 5100, a);
	grant_at(&g, &s, &id, 5900, b);
	TAP_OK(memcmp(a, b, MC_GRANT_BYTES) == 0 && g.signed_grants == 1 && g.cached_grants == 1,
	       "cache: a read grant again within its epoch is the same bytes, signed once");
	grant_at(&g, &s, &id, 6000, b);
	TAP_OK(memcmp(a, b, MC_GRANT_BYTES) != 0 && expiry_of(b) == 7000 + TTL &&
		       g.signed_grants == 2,
	       "cache: the next epoch signs anew");
	grant_at(&g, &s, &other_tenant, 6100, b);
	TAP_OK(g.signed_grants == 3, "cache: another tenant's lookup never gets the cached grant");
	grant_at(&g, &s, &other_key, 6100, b);
	TAP_OK(g.signed_grants == 4, "cache: another key never gets it");
	v.version = 8;
	grant_at(&g, &v, &id, 6100, b);
	TAP_OK(g.signed_grants == 5, "cache: another version never gets it");
	p.peer = 3;
	grant_at(&g, &p, &id, 6100, b);
	TAP_OK(g.signed_grants == 6, "cache: another peer's copy never gets it");
	w.action = MC_GRANT_WRITE;
	grant_at(&g, &w, &id, 6100, a);
	grant_at(&g, &w, &id, 6100, b);
	TAP_OK(g.signed_grants == 8, "cache: write grants are signed every time");
	grant_at(&g, &s, &id, 6200, a);
	TAP_OK(mgrants_rotate(&g, NULL) == 0, "rotate");
	grant_at(&g, &s, &id, 6300, b);
	TAP_OK(memcmp(a, b, MC_GRANT_BYTES) != 0 && b[4] == 2,
	       "cache: a rotation's new key signs anew");
	mgrants_free(&g);
}

int
main(void)
{
	test_expiry_rounded_up();
	test_cache();
	return tap_done();
}
