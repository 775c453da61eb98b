/* Unit tests for data-plane grants (libmc/grant.c): sign, verify, rotate. */
#include <string.h>

#include "mc/grant.h"
#include "tap.h"

static struct mc_grant_scope
scope(const char *tenant, const char *key, uint64_t version, uint64_t len, uint32_t peer,
      int action)
{
	return (struct mc_grant_scope){ tenant, strlen(tenant), key,   strlen(key), version,
					len,	peer,		action };
}

/* Peer 7's keys after one handover of m at master time 1000, local time lnow. */
static void
hand_over(struct mc_grant_keys *ks, const struct mc_grant_master *m, uint32_t peer, uint64_t lnow)
{
	unsigned char k[MC_GRANT_KEY_BYTES];

	mc_grant_peer_key(m, peer, k);
	mc_grant_keys_add(ks, m->gen, k, 1000, lnow);
}

static void
test_covers_exactly(void)
{
	struct mc_grant_master m;
	struct mc_grant_keys ks = { 0 };
	unsigned char k[MC_GRANT_KEY_BYTES], g[MC_GRANT_BYTES];
	struct mc_grant_scope s = scope("ten-a", "obj", 3, 100, 7, MC_GRANT_READ), o;

	TAP_OK(mc_grant_master_init(&m, 1, NULL) == 0, "init: a master key");
	hand_over(&ks, &m, 7, 1000);
	mc_grant_peer_key(&m, 7, k);
	mc_grant_sign(k, m.gen, &s, 1500, g);
	TAP_OK(mc_grant_verify(&ks, &s, g, sizeof(g), 1200, 0) == MC_GRANT_OK,
	       "verify: a grant covers the request it was signed for");
	o = s, o.tenant = "ten-b", o.tlen = 5;
	TAP_OK(mc_grant_verify(&ks, &o, g, sizeof(g), 1200, 0) == MC_GRANT_FORGED,
	       "verify: another tenant is refused");
	o = s, o.key = "obk";
	TAP_OK(mc_grant_verify(&ks, &o, g, sizeof(g), 1200, 0) == MC_GRANT_FORGED,
	       "verify: another key is refused");
	o = s, o.version = 4;
	TAP_OK(mc_grant_verify(&ks, &o, g, sizeof(g), 1200, 0) == MC_GRANT_FORGED,
	       "verify: another version is refused");
	o = s, o.len = 101;
	TAP_OK(mc_grant_verify(&ks, &o, g, sizeof(g), 1200, 0) == MC_GRANT_FORGED,
	       "verify: another length is refused");
	o = s, o.action = MC_GRANT_WRITE;
	TAP_OK(mc_grant_verify(&ks, &o, g, sizeof(g), 1200, 0) == MC_GRANT_FORGED,
	       "verify: a read grant does not write");
	/* Tenant "ab" key "c" and tenant "a" key "bc" must not sign alike. */
	o = scope("ab", "c", 1, 1, 7, MC_GRANT_READ);
	mc_grant_sign(k, m.gen, &o, 1500, g);
	o = scope("a", "bc", 1, 1, 7, MC_GRANT_READ);
	TAP_OK(mc_grant_verify(&ks, &o, g, sizeof(g), 1200, 0) == MC_GRANT_FORGED,
	       "verify: the tenant and key boundary is signed");
}

static void
test_forged_and_other_peer(void)
{
	struct mc_grant_master m;
	struct mc_grant_keys ks7 = { 0 }, ks8 = { 0 };
	unsigned char k7[MC_GRANT_KEY_BYTES], k8[MC_GRANT_KEY_BYTES], g[MC_GRANT_BYTES];
	struct mc_grant_scope s7 = scope("t", "x", 1, 10, 7, MC_GRANT_WRITE), s8 = s7;

	s8.peer = 8;
	mc_grant_master_init(&m, 1, NULL);
	hand_over(&ks7, &m, 7, 1000);
	hand_over(&ks8, &m, 8, 1000);
	mc_grant_peer_key(&m, 7, k7);
	mc_grant_peer_key(&m, 8, k8);
	TAP_OK(memcmp(k7, k8, sizeof(k7)) != 0, "derive: each peer has a key of its own");
	mc_grant_sign(k7, m.gen, &s7, 2000, g);
	TAP_OK(mc_grant_verify(&ks8, &s8, g, sizeof(g), 1000, 0) == MC_GRANT_FORGED,
	       "verify: a grant for peer 7 is refused by peer 8");
	/* Peer 7 holds k7 and signs for peer 8: it still fails at 8. */
	mc_grant_sign(k7, m.gen, &s8, 2000, g);
	TAP_OK(mc_grant_verify(&ks8, &s8, g, sizeof(g), 1000, 0) == MC_GRANT_FORGED,
	       "verify: a peer cannot mint grants for another");
	mc_grant_sign(k7, m.gen, &s7, 2000, g);
	g[20] ^= 1;
	TAP_OK(mc_grant_verify(&ks7, &s7, g, sizeof(g), 1000, 0) == MC_GRANT_FORGED,
	       "verify: a flipped tag bit is forged");
	g[20] ^= 1;
	g[8] ^= 1; /* the expiry, pushed out by a forger */
	TAP_OK(mc_grant_verify(&ks7, &s7, g, sizeof(g), 1000, 0) == MC_GRANT_FORGED,
	       "verify: a changed expiry is forged");
	g[8] ^= 1;
	TAP_OK(mc_grant_verify(&ks7, &s7, g, sizeof(g) - 1, 1000, 0) == MC_GRANT_MISSING &&
		       mc_grant_verify(&ks7, &s7, NULL, 0, 1000, 0) == MC_GRANT_MISSING,
	       "verify: a short or absent grant is missing");
	memset(g, 0, sizeof(g));
	TAP_OK(mc_grant_verify(&ks7, &s7, g, sizeof(g), 1000, 0) == MC_GRANT_MISSING,
	       "verify: a grant of an unknown format is missing");
}

static void
test_expiry_across_clocks(void)
{
	struct mc_grant_master m;
	struct mc_grant_keys ks = { 0 };
	unsigned char k[MC_GRANT_KEY_BYTES], g[MC_GRANT_BYTES];
	struct mc_grant_scope s = scope("t", "x", 1, 10, 7, MC_GRANT_READ);

	mc_grant_master_init(&m, 1, NULL);
	/* The peer's clock reads 50000 when the master's reads 1000. */
	hand_over(&ks, &m, 7, 50000);
	mc_grant_peer_key(&m, 7, k);
	mc_grant_sign(k, m.gen, &s, 1000 + 30000, g);
	TAP_OK(mc_grant_verify(&ks, &s, g, sizeof(g), 50000 + 29999, 0) == MC_GRANT_OK,
	       "expiry: judged through the offset learned with the key");
	TAP_OK(mc_grant_verify(&ks, &s, g, sizeof(g), 50000 + 31999, 2000) == MC_GRANT_OK,
	       "expiry: the skew is allowed");
	TAP_OK(mc_grant_verify(&ks, &s, g, sizeof(g), 50000 + 32001, 2000) == MC_GRANT_EXPIRED,
	       "expiry: past expiry and skew is expired");
	TAP_OK(mc_grant_local_expiry(&ks, g, sizeof(g)) == 50000 + 30000,
	       "expiry: on the peer's own clock, through the offset");
	g[1] ^= 1; /* another key generation */
	TAP_OK(mc_grant_local_expiry(&ks, g, sizeof(g)) == 0 &&
		       mc_grant_local_expiry(&ks, g, sizeof(g) - 1) == 0,
	       "expiry: none for a grant of an unknown key or the wrong length");
}

static void
test_rotation(void)
{
	struct mc_grant_master m1, m2, m3;
	struct mc_grant_keys ks = { 0 };
	unsigned char k[MC_GRANT_KEY_BYTES], g1[MC_GRANT_BYTES], g2[MC_GRANT_BYTES];
	struct mc_grant_scope s = scope("t", "x", 1, 10, 7, MC_GRANT_READ);

	mc_grant_master_init(&m1, 1, NULL);
	mc_grant_master_init(&m2, 2, NULL);
	mc_grant_master_init(&m3, 3, NULL);
	hand_over(&ks, &m1, 7, 1000);
	mc_grant_peer_key(&m1, 7, k);
	mc_grant_sign(k, m1.gen, &s, 9000, g1);
	hand_over(&ks, &m2, 7, 1000);
	mc_grant_peer_key(&m2, 7, k);
	mc_grant_sign(k, m2.gen, &s, 9000, g2);
	TAP_OK(mc_grant_verify(&ks, &s, g1, sizeof(g1), 1000, 0) == MC_GRANT_OK &&
		       mc_grant_verify(&ks, &s, g2, sizeof(g2), 1000, 0) == MC_GRANT_OK,
	       "rotate: the current and the previous key are accepted");
	hand_over(&ks, &m1, 7, 1000); /* a late repeat of the old key */
	TAP_OK(ks.k[0].s.gen == 2 && ks.k[1].s.gen == 1,
	       "rotate: a repeat of the previous key does not make it current");
	hand_over(&ks, &m3, 7, 1000);
	TAP_OK(mc_grant_verify(&ks, &s, g1, sizeof(g1), 1000, 0) == MC_GRANT_UNKNOWN,
	       "rotate: a grant two rotations old is refused");
	TAP_OK(mc_grant_verify(&ks, &s, g2, sizeof(g2), 1000, 0) == MC_GRANT_OK,
	       "rotate: a grant one rotation old is still accepted");
	TAP_OK(strcmp(mc_grant_verdict_name(MC_GRANT_EXPIRED), "expired") == 0 &&
		       strcmp(mc_grant_verdict_name(-1), "unknown") == 0,
	       "verdict: names for metrics");
}

int
main(void)
{
	test_covers_exactly();
	test_forged_and_other_peer();
	test_expiry_across_clocks();
	test_rotation();
	return tap_done();
}
