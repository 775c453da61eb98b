/*
 * Grants issued by the master (grants.h). Lookups sign a grant for every
 * replica they list, so each peer's key is kept ready (struct peer), a
 * grant hashes only its own bytes, and a read grant already signed this
 * epoch comes from the cache.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/wire.h"
#include "grants.h"
#include "master.h"
#include "mmetrics.h"

#define WAYS 2

struct mgrant_slot {
	uint64_t key_hash;
	uint64_t version, len;
	uint64_t epoch;
	uint32_t tenant, peer, gen;
	bool used;
	unsigned char grant[MC_GRANT_BYTES];
};

/* The slots of the cache at most: 2^24 of 96 bytes, 1.5 GiB. */
#define SLOTS_MAX ((size_t)1 << 24)

static void
collect(struct mc_metrics *r, void *arg)
{
	const struct mgrants *g = arg;
	static const char help[] = "Data-plane grants handed out, signed or from the cache.";
	struct mc_metric *m;

	if ((m = mc_metric_get(r, "mc_grants_total", MC_COUNTER, help, "outcome", "signed")))
		mc_metric_set(m, (double)g->signed_grants);
	if ((m = mc_metric_get(r, "mc_grants_total", MC_COUNTER, help, "outcome", "cached")))
		mc_metric_set(m, (double)g->cached_grants);
	if ((m = mc_metric_get(r, "mc_grant_key_rotations_total", MC_COUNTER,
			       "New grant keys drawn since start (each SIGHUP).", NULL, NULL)))
		mc_metric_set(m, (double)g->rotations);
}

int
mgrants_init(struct mgrants *g, uint64_t ttl, size_t cache_slots, struct mc_metrics *reg,
	     struct mc_err *err)
{
	memset(g, 0, sizeof(*g));
	g->ttl = ttl;
	if (cache_slots > SLOTS_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "a grant cache of %zu slots is over %zu",
				  cache_slots, SLOTS_MAX);
	if (cache_slots > 0) {
		g->nslots = WAYS;
		while (g->nslots < cache_slots)
			g->nslots <<= 1;
		/* calloc: untouched slots cost no memory until a lookup lands there */
		g->slots = calloc(g->nslots, sizeof(*g->slots));
		if (g->slots == NULL)
			return mc_err_set(err, MC_ERR_NO_SPACE,
					  "no memory for a grant cache of %zu", g->nslots);
	}
	if (reg != NULL)
		mc_metrics_on_collect(reg, collect, g);
	return mc_grant_master_init(&g->key, 1, err);
}

void
mgrants_free(struct mgrants *g)
{
	free(g->slots);
	g->slots = NULL;
	g->nslots = 0;
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

/*
 * A key's read grants share one bucket of WAYS slots (one for each of
 * two replicas), found by the key's hash alone, so a batch lookup can
 * fetch it into the cache along with the object (mgrants_prefetch).
 */
static struct mgrant_slot *
bucket_of(const struct mgrants *g, uint64_t key_hash)
{
	return &g->slots[(key_hash & (g->nslots / WAYS - 1)) * WAYS];
}

void
mgrants_prefetch(const struct mgrants *g, uint64_t key_hash)
{
	if (g->slots != NULL)
		__builtin_prefetch(bucket_of(g, key_hash));
}

/* The slot of id and scope in its bucket: the one holding its peer's grant, or the one to take. */
static struct mgrant_slot *
slot_of(const struct mgrants *g, const struct mgrant_ident *id, const struct mc_grant_scope *s)
{
	struct mgrant_slot *b = bucket_of(g, id->key_hash);

	for (int i = 0; i < WAYS; i++)
		if (b[i].used && b[i].key_hash == id->key_hash && b[i].peer == s->peer)
			return &b[i];
	for (int i = 0; i < WAYS; i++)
		if (!b[i].used)
			return &b[i];
	return &b[s->peer % WAYS];
}

static bool
slot_holds(const struct mgrant_slot *sl, const struct mgrant_ident *id,
	   const struct mc_grant_scope *s, uint32_t gen, uint64_t epoch)
{
	return sl->used && sl->key_hash == id->key_hash && sl->tenant == id->tenant &&
	       sl->version == s->version && sl->len == s->len && sl->peer == s->peer &&
	       sl->gen == gen && sl->epoch == epoch;
}

/* The length of a grant epoch: an eighth of the ttl, at least 1 ms. */
static uint64_t
epoch_len(const struct mgrants *g)
{
	return g->ttl / 8 > 0 ? g->ttl / 8 : 1;
}

void
mgrants_sign(struct mgrants *g, struct mc_grant_signer *signer, const struct mc_grant_scope *scope,
	     uint64_t now, unsigned char out[MC_GRANT_BYTES])
{
	uint64_t q = epoch_len(g), expiry = mc_add_sat(mc_add_sat(now / q, 1) * q, g->ttl);
	struct mc_grant_signer local;
	const struct mc_grant_signer *s;

	if (signer == NULL)
		s = ready(g, &local, scope->peer);
	else if (signer->gen != g->key.gen)
		s = ready(g, signer, scope->peer);
	else
		s = signer;
	mc_grant_sign_with(s, scope, expiry, out);
	g->signed_grants++;
}

void
mgrants_pack_at(msgpack_packer *pk, struct mgrants *g, struct mc_grant_signer *signer,
		const struct mc_grant_scope *scope, const struct mgrant_ident *id, uint64_t now)
{
	uint64_t epoch = now / epoch_len(g);
	struct mgrant_slot *sl = NULL;
	unsigned char out[MC_GRANT_BYTES];

	if (id != NULL && g->slots != NULL && scope->action == MC_GRANT_READ) {
		sl = slot_of(g, id, scope);
		if (slot_holds(sl, id, scope, g->key.gen, epoch)) {
			g->cached_grants++;
			msgpack_pack_bin(pk, MC_GRANT_BYTES);
			msgpack_pack_bin_body(pk, sl->grant, MC_GRANT_BYTES);
			return;
		}
	}
	mgrants_sign(g, signer, scope, now, out);
	if (sl != NULL) {
		*sl = (struct mgrant_slot){ .key_hash = id->key_hash,
					    .version = scope->version,
					    .len = scope->len,
					    .epoch = epoch,
					    .tenant = id->tenant,
					    .peer = scope->peer,
					    .gen = g->key.gen,
					    .used = true };
		memcpy(sl->grant, out, MC_GRANT_BYTES);
	}
	msgpack_pack_bin(pk, sizeof(out));
	msgpack_pack_bin_body(pk, out, sizeof(out));
}

void
mgrants_pack(msgpack_packer *pk, struct mgrants *g, struct mc_grant_signer *signer,
	     const struct mc_grant_scope *scope, const struct mgrant_ident *id)
{
	mgrants_pack_at(pk, g, signer, scope, id, mc_steady_ms());
}

static int
mgrants_start(struct master *m, struct mc_err *err)
{
	return mgrants_init(m->grants, m->cfg.grant_ttl, m->cfg.grant_cache, m->mx->reg, err);
}

static void
mgrants_stop(struct master *m)
{
	mgrants_free(m->grants);
}

const struct master_module mgrants_module = {
	.name = "grants",
	.init = mgrants_start,
	.free = mgrants_stop,
};
