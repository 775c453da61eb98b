/*
 * Data-plane grants (mc/grant.h). The tag is crypto_auth's HMAC-SHA-512-256,
 * computed incrementally so a 4 KiB key is never copied to be signed.
 */

#include "mc/grant.h"

/* crypto_kdf's context: eight bytes naming what the derived keys are for. */
static const char kdf_ctx[crypto_kdf_CONTEXTBYTES] = { 'm', 'c', 'g', 'r', 'a', 'n', 't', '1' };

_Static_assert(crypto_auth_hmacsha512256_BYTES == MC_GRANT_TAG_BYTES, "grant tag size");
_Static_assert(crypto_auth_hmacsha512256_KEYBYTES == MC_GRANT_KEY_BYTES, "grant key size");
_Static_assert(crypto_kdf_KEYBYTES == MC_GRANT_KEY_BYTES, "grant master key size");

static void
put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t
get_be(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int
mc_grant_master_init(struct mc_grant_master *m, uint32_t gen, struct mc_err *err)
{
	if (sodium_init() < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot initialize libsodium");
	m->gen = gen;
	crypto_kdf_keygen(m->key);
	return 0;
}

void
mc_grant_peer_key(const struct mc_grant_master *m, uint32_t peer,
		  unsigned char out[MC_GRANT_KEY_BYTES])
{
	crypto_kdf_derive_from_key(out, MC_GRANT_KEY_BYTES, peer, kdf_ctx, m->key);
}

/*
 * The tag over the grant's header (format, generation, expiry) and its
 * scope, each variable-length field preceded by its length so no two
 * scopes sign the same bytes.
 */
static void
tag(const struct mc_grant_signer *signer, const unsigned char head[1 + 4 + 8],
    const struct mc_grant_scope *s, unsigned char out[MC_GRANT_TAG_BYTES])
{
	crypto_auth_hmacsha512256_state st = signer->st;
	unsigned char fixed[1 + 4 + 8 + 8 + 4 + 4];

	fixed[0] = (unsigned char)s->action;
	put_be(fixed + 1, s->peer, 4);
	put_be(fixed + 5, s->version, 8);
	put_be(fixed + 13, s->len, 8);
	put_be(fixed + 21, s->tlen, 4);
	put_be(fixed + 25, s->klen, 4);
	crypto_auth_hmacsha512256_update(&st, head, 1 + 4 + 8);
	crypto_auth_hmacsha512256_update(&st, fixed, sizeof(fixed));
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)s->tenant, s->tlen);
	crypto_auth_hmacsha512256_update(&st, s->key, s->klen);
	crypto_auth_hmacsha512256_final(&st, out);
}

/* The format byte: a grant of another layout is refused, not misread. */
#define GRANT_FORMAT 1

void
mc_grant_signer_init(struct mc_grant_signer *s, uint32_t gen,
		     const unsigned char key[MC_GRANT_KEY_BYTES])
{
	s->gen = gen;
	crypto_auth_hmacsha512256_init(&s->st, key, MC_GRANT_KEY_BYTES);
}

void
mc_grant_sign_with(const struct mc_grant_signer *s, const struct mc_grant_scope *scope,
		   uint64_t expiry_ms, unsigned char out[MC_GRANT_BYTES])
{
	out[0] = GRANT_FORMAT;
	put_be(out + 1, s->gen, 4);
	put_be(out + 5, expiry_ms, 8);
	tag(s, out, scope, out + 13);
}

void
mc_grant_sign(const unsigned char key[MC_GRANT_KEY_BYTES], uint32_t gen,
	      const struct mc_grant_scope *scope, uint64_t expiry_ms,
	      unsigned char out[MC_GRANT_BYTES])
{
	struct mc_grant_signer s;

	mc_grant_signer_init(&s, gen, key);
	mc_grant_sign_with(&s, scope, expiry_ms, out);
}

const char *
mc_grant_verdict_name(int v)
{
	static const char *const names[MC_GRANT_VERDICTS] = {
		[MC_GRANT_OK] = "ok",
		[MC_GRANT_MISSING] = "missing",
		[MC_GRANT_UNKNOWN] = "unknown_key",
		[MC_GRANT_FORGED] = "forged",
		[MC_GRANT_EXPIRED] = "expired",
	};

	return v >= 0 && v < MC_GRANT_VERDICTS ? names[v] : "unknown";
}

void
mc_grant_keys_add(struct mc_grant_keys *ks, uint32_t gen,
		  const unsigned char key[MC_GRANT_KEY_BYTES], uint64_t master_now,
		  uint64_t local_now)
{
	int i = 0;

	if (ks->k[0].set && ks->k[0].s.gen != gen) {
		if (ks->k[1].set && ks->k[1].s.gen == gen) {
			i = 1; /* an older key again: refresh it, keep the current */
		} else if ((int32_t)(gen - ks->k[0].s.gen) > 0) {
			ks->k[1] = ks->k[0];
		} else {
			i = 1; /* older than the current one: it can only be the previous */
		}
	}
	ks->k[i].set = true;
	mc_grant_signer_init(&ks->k[i].s, gen, key);
	ks->k[i].offset_ms = (int64_t)(local_now - master_now);
}

int
mc_grant_verify(const struct mc_grant_keys *ks, const struct mc_grant_scope *scope,
		const void *grant, size_t glen, uint64_t now, uint64_t skew_ms)
{
	const unsigned char *g = grant;
	unsigned char want[MC_GRANT_TAG_BYTES];
	uint32_t gen;
	int i;

	if (g == NULL || glen != MC_GRANT_BYTES || g[0] != GRANT_FORMAT)
		return MC_GRANT_MISSING;
	gen = (uint32_t)get_be(g + 1, 4);
	for (i = 0; i < 2; i++)
		if (ks->k[i].set && ks->k[i].s.gen == gen)
			break;
	if (i == 2)
		return MC_GRANT_UNKNOWN;
	tag(&ks->k[i].s, g, scope, want);
	if (crypto_verify_32(want, g + 13) != 0)
		return MC_GRANT_FORGED;
	/* The expiry on this peer's clock; the signature vouches for it. */
	if ((int64_t)(now - get_be(g + 5, 8)) - ks->k[i].offset_ms > (int64_t)skew_ms)
		return MC_GRANT_EXPIRED;
	return MC_GRANT_OK;
}

uint64_t
mc_grant_local_expiry(const struct mc_grant_keys *ks, const void *grant, size_t glen)
{
	const unsigned char *g = grant;
	uint32_t gen;

	if (g == NULL || glen != MC_GRANT_BYTES || g[0] != GRANT_FORMAT)
		return 0;
	gen = (uint32_t)get_be(g + 1, 4);
	for (int i = 0; i < 2; i++)
		if (ks->k[i].set && ks->k[i].s.gen == gen)
			return (uint64_t)((int64_t)get_be(g + 5, 8) + ks->k[i].offset_ms);
	return 0;
}
