/*
 * Loading snapshots: a whole new store built aside from the file and
 * swapped in only once the file was read to its end and checked, the
 * peers it names made ghosts, and --restore at start-up (see msnap.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/snapshot.h"
#include "mc/wire.h"
#include "request.h"
#include "master.h"
#include "ops.h"
#include "state.h"
#include "msnap_load.h"
#include "lease.h"
#include "replicate.h"
#include "peers.h"
#include "reconcile.h"
#include "softpin.h"
#include "store.h"
#include "recency.h"

/* Table slots pre-sized from a file's header at most (it is not trusted). */
#define RESERVE_MAX (1u << 21)

/* The peers of a file being loaded: the id in the file, the id here. */
struct peer_map {
	uint32_t file_id;
	uint32_t id;
};

struct loader {
	struct master *m;
	struct store s;
	struct ghost *ghosts;
	uint32_t nghost, gcap;
	struct peer_map *map;
	uint32_t nmap, mcap;
	uint64_t next_version, next_replica, next_peer;
	uint64_t max_version, max_replica;
	/* the file's access counter, and the highest sequence of its objects */
	uint64_t access_seq, max_access_seq;
	uint32_t next_fresh; /* ids for snapshot peers whose own id is taken */
	uint64_t objects, skipped, tenants;
	uint64_t now;
	/* what the records hold, held against the header once all are read */
	uint64_t bytes;
	bool meta_seen;
	/* tenants a tenant record named, and the ids those records carried */
	uint64_t tenant_listed[TENANTS_MAX / 64];
	uint64_t tenant_ids[TENANTS_MAX / 64];
	/* every replica id of the file, sorted at the end to find one listed twice */
	uint32_t *rep_ids;
	size_t nrep_ids, rep_ids_cap;
	/* the file's recreate cooldowns, still running */
	struct cooldowns cooldowns;
};

/* ---- loading ---- */

static int
proto_err(struct mc_err *err, const char *what, const struct mc_err *why)
{
	return mc_err_set(err, MC_ERR_PROTO, "%s record: %s", what, why->msg);
}

/* An optional name field into (s, len); default when absent or nil. */
static int
rec_name(const msgpack_object *rec, const char *field, const char **s, size_t *len,
	 struct mc_err *err)
{
	const msgpack_object *o = mc_map_get(rec, field);

	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (mc_map_str(rec, field, s, len, err) != 1)
		return -1;
	if (!store_name_ok(*s, *len))
		return mc_err_set(err, MC_ERR_PROTO, "bad %s name", field);
	return 1;
}

/* Set bit i of v; whether it was set already. */
static bool
bit_test_set(uint64_t *v, uint32_t i)
{
	uint64_t b = 1ull << (i % 64);
	bool was = (v[i / 64] & b) != 0;

	v[i / 64] |= b;
	return was;
}

/*
 * The counters the master goes on from. Each must be able to advance:
 * one at its maximum would wrap, and hand out again what it handed out
 * before.
 */
static int
load_meta(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mc_err why;

	if (L->meta_seen)
		return mc_err_set(err, MC_ERR_PROTO, "meta record listed twice");
	L->meta_seen = true;
	if (mc_map_u64(rec, "next_version", &L->next_version, &why) < 0 ||
	    mc_map_u64(rec, "next_replica_id", &L->next_replica, &why) < 0 ||
	    mc_map_u64(rec, "next_peer_id", &L->next_peer, &why) < 0 ||
	    mc_map_u64(rec, "access_seq", &L->access_seq, &why) < 0)
		return proto_err(err, "meta", &why);
	if (L->next_version == 0 || L->next_version > VERSION_MAX + 1)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_version %llu leaves no version to write",
				  (unsigned long long)L->next_version);
	if (L->next_replica > (uint64_t)UINT32_MAX + 1)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_replica_id %llu beyond the replica ids",
				  (unsigned long long)L->next_replica);
	if (L->next_peer > UINT32_MAX)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_peer_id %llu beyond the peer ids",
				  (unsigned long long)L->next_peer);
	if (L->access_seq == UINT64_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "meta record: access_seq at its maximum");
	return 0;
}

static int
load_tenant(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mc_err why;
	const char *name;
	size_t len;
	uint64_t quota = 0, file_id = 0;
	int64_t id;
	int has_id;

	if (rec_name(rec, "name", &name, &len, &why) != 1 ||
	    mc_map_u64(rec, "quota", &quota, &why) < 0 ||
	    (has_id = mc_map_u64(rec, "id", &file_id, &why)) < 0) {
		if (mc_map_get(rec, "name") == NULL)
			mc_err_set(&why, MC_ERR_PROTO, "missing name");
		return proto_err(err, "tenant", &why);
	}
	if (has_id == 1 && file_id >= TENANTS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "tenant record: id %llu out of range",
				  (unsigned long long)file_id);
	if (has_id == 1 && bit_test_set(L->tenant_ids, (uint32_t)file_id))
		return mc_err_set(err, MC_ERR_PROTO, "tenant id %llu listed twice",
				  (unsigned long long)file_id);
	if ((id = store_tenant_intern(&L->s, name, len, &why)) < 0) {
		if (why.code != MC_ERR_TOO_LARGE)
			return mc_err_set(err, why.code, "%s", why.msg);
		return mc_err_set(err, MC_ERR_PROTO, "tenant record: %s: see --max-tenants",
				  why.msg);
	}
	if (bit_test_set(L->tenant_listed, (uint32_t)id))
		return mc_err_set(err, MC_ERR_PROTO, "tenant '%.*s' listed twice", (int)len, name);
	L->s.tenants[id].quota = quota;
	L->tenants++;
	return 0;
}

static bool
id_taken(const struct loader *L, uint32_t id)
{
	if (peers_find(L->m->peers, id) != NULL)
		return true;
	for (uint32_t i = 0; i < L->nmap; i++)
		if (L->map[i].id == id)
			return true;
	return false;
}

static int
load_peer(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mc_err why;
	struct ghost g;
	const struct peer *live;
	uint64_t id = 0;

	memset(&g, 0, sizeof(g));
	if (mc_map_u64(rec, "id", &id, &why) != 1 || id == 0 || id > UINT32_MAX ||
	    mc_map_strcpy(rec, "addr", g.addr, sizeof(g.addr), &why) != 1 ||
	    mc_map_strcpy(rec, "host", g.host, sizeof(g.host), &why) < 0 ||
	    mc_map_strcpy(rec, "domain", g.domain, sizeof(g.domain), &why) < 0) {
		mc_err_set(&why, MC_ERR_PROTO, "needs an id and an addr");
		return proto_err(err, "peer", &why);
	}
	/* live peers and the ghosts of a churn: the table is scanned per replica */
	if (L->nmap >= 2 * PEERS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "more than %u peer records", 2 * PEERS_MAX);
	for (uint32_t i = 0; i < L->nmap; i++)
		if (L->map[i].file_id == id)
			return mc_err_set(err, MC_ERR_PROTO, "peer %llu listed twice",
					  (unsigned long long)id);
	if (L->nmap == L->mcap) {
		uint32_t cap = L->mcap ? 2 * L->mcap : 16;
		struct peer_map *v = realloc(L->map, cap * sizeof(*v));
		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		L->map = v;
		L->mcap = cap;
	}
	struct peer_map *pm = &L->map[L->nmap];
	pm->file_id = (uint32_t)id;
	live = peers_find_addr(L->m->peers, g.addr);
	if (live != NULL) {
		/* Restoring into a running master: that peer is here already. */
		pm->id = live->id;
		L->nmap++;
		return 0;
	}
	pm->id = (uint32_t)id;
	if (id_taken(L, pm->id)) {
		while (id_taken(L, L->next_fresh) || L->next_fresh == 0)
			L->next_fresh++;
		pm->id = L->next_fresh++;
	}
	L->nmap++;
	if (L->nghost == L->gcap) {
		uint32_t cap = L->gcap ? 2 * L->gcap : 16;
		struct ghost *v = realloc(L->ghosts, cap * sizeof(*v));
		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		L->ghosts = v;
		L->gcap = cap;
	}
	g.id = pm->id;
	L->ghosts[L->nghost++] = g;
	return 0;
}

static const struct peer_map *
map_peer(const struct loader *L, uint64_t file_id)
{
	for (uint32_t i = 0; i < L->nmap; i++)
		if (L->map[i].file_id == file_id)
			return &L->map[i];
	return NULL;
}

/* Remember a replica id, for the check that none is listed twice. */
static int
note_rep_id(struct loader *L, uint32_t id, struct mc_err *err)
{
	if (L->nrep_ids == L->rep_ids_cap) {
		size_t cap = L->rep_ids_cap ? 2 * L->rep_ids_cap : 1024;
		uint32_t *v = realloc(L->rep_ids, cap * sizeof(*v));

		if (v == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		L->rep_ids = v;
		L->rep_ids_cap = cap;
	}
	L->rep_ids[L->nrep_ids++] = id;
	return 0;
}

/*
 * The replicas of an object record worth keeping: COMPLETE copies of
 * the object's version. PROCESSING ones belong to writers that are gone.
 * Every entry, kept or not, must name a peer the file listed, a tier,
 * and an id and a version the counters could have handed out.
 */
static int
load_replicas(struct loader *L, const msgpack_object *rec, uint64_t version, struct mrep *out,
	      unsigned *n, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(rec, "replicas");
	struct mc_err why;

	*n = 0;
	if (a == NULL)
		return 0;
	if (a->size > 2 * MC_REPLICAS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "object record: %u replicas", a->size);
	for (uint32_t j = 0; j < a->size; j++) {
		const msgpack_object *e = &a->ptr[j];
		uint64_t id = 0, peer = 0, rv = 0;
		const char *tier = mc_tier_name(MC_TIER_DRAM), *state = "complete";
		size_t tlen = strlen(tier), slen = 8;
		bool dynamic = false;
		const struct peer_map *pm;
		int t;

		if (e->type != MSGPACK_OBJECT_MAP || mc_map_u64(e, "id", &id, &why) != 1 ||
		    mc_map_u64(e, "peer", &peer, &why) != 1 ||
		    mc_map_u64(e, "version", &rv, &why) < 0 ||
		    mc_map_str(e, "tier", &tier, &tlen, &why) < 0 ||
		    mc_map_str(e, "state", &state, &slen, &why) < 0 ||
		    mc_map_bool(e, "dynamic", &dynamic, &why) < 0)
			return mc_err_set(err, MC_ERR_PROTO, "object record: bad replica %u", j);
		if ((t = mc_tier_parse(tier, tlen, NULL)) < 0)
			return mc_err_set(err, MC_ERR_PROTO, "object record: unknown tier '%.*s'",
					  (int)(tlen > 16 ? 16 : tlen), tier);
		if (id == 0 || id > UINT32_MAX)
			return mc_err_set(err, MC_ERR_PROTO,
					  "object record: replica id %llu out of range",
					  (unsigned long long)id);
		if ((pm = map_peer(L, peer)) == NULL)
			return mc_err_set(err, MC_ERR_PROTO,
					  "object record: replica on peer %llu, which the file "
					  "does not list",
					  (unsigned long long)peer);
		if (mc_map_get(e, "version") == NULL)
			rv = version;
		if (rv == 0 || rv > VERSION_MAX)
			return mc_err_set(err, MC_ERR_PROTO,
					  "object record: replica version %llu out of range",
					  (unsigned long long)rv);
		if (rv > L->max_version)
			L->max_version = rv;
		if (note_rep_id(L, (uint32_t)id, err) != 0)
			return -1;
		if (slen != 8 || memcmp(state, "complete", 8) != 0 || rv != version)
			continue;
		memset(&out[*n], 0, sizeof(out[*n]));
		out[*n].id = (uint32_t)id;
		out[*n].peer = pm->id;
		out[*n].tier = (uint8_t)t;
		out[*n].state = REP_COMPLETE;
		out[*n].version = rv;
		out[*n].dynamic = dynamic;
		if (out[*n].id > L->max_replica)
			L->max_replica = out[*n].id;
		(*n)++;
	}
	return 0;
}

static int
load_object(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	struct mrep reps[2 * MC_REPLICAS_MAX];
	struct mc_err why;
	const char *tname, *key, *type = MC_DEFAULT_TYPE, *group = NULL, *sp = "disabled";
	size_t tlen, klen, ylen = strlen(MC_DEFAULT_TYPE), glen = 0, splen = 8;
	uint64_t size = 0, version = 0, checksum = 0, created = 0, last_access = 0, count = 0;
	uint64_t lease = 0, sp_deadline = 0, sp_ttl = 0, until;
	/* absent in files written before the master numbered accesses */
	uint64_t access_seq = 0, created_seq = 0;
	/* absent before prefix chains and LRFU values */
	uint64_t parent = 0, depth = 0, children = 0;
	double crf = 0, worth = -1;
	bool hard_pin = false, probation = false;
	struct state_obj f;
	unsigned nrep;
	int64_t tenant, tid;
	struct mobj *o;

	if (rec_name(rec, "tenant", &tname, &tlen, &why) != 1 ||
	    mc_map_str(rec, "key", &key, &klen, &why) != 1 || klen == 0 ||
	    mc_map_u64(rec, "size", &size, &why) != 1 ||
	    mc_map_u64(rec, "version", &version, &why) != 1) {
		mc_err_set(&why, MC_ERR_PROTO, "needs tenant, key, size and version");
		return proto_err(err, "object", &why);
	}
	if (klen > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "object record: key of %zu bytes over %d",
				  klen, MC_KEY_MAX);
	if (mc_map_u64(rec, "checksum", &checksum, &why) < 0 ||
	    rec_name(rec, "type", &type, &ylen, &why) < 0 ||
	    rec_name(rec, "group", &group, &glen, &why) < 0 ||
	    mc_map_bool(rec, "hard_pin", &hard_pin, &why) < 0 ||
	    mc_map_u64(rec, "created", &created, &why) < 0 ||
	    mc_map_u64(rec, "last_access", &last_access, &why) < 0 ||
	    mc_map_u64(rec, "access_seq", &access_seq, &why) < 0 ||
	    mc_map_u64(rec, "created_seq", &created_seq, &why) < 0 ||
	    mc_map_u64(rec, "access_count", &count, &why) < 0 ||
	    mc_map_u64(rec, "lease_deadline", &lease, &why) < 0 ||
	    mc_map_str(rec, "sp_mode", &sp, &splen, &why) < 0 ||
	    mc_map_u64(rec, "sp_deadline", &sp_deadline, &why) < 0 ||
	    mc_map_u64(rec, "sp_ttl", &sp_ttl, &why) < 0 ||
	    mc_map_u64(rec, "parent", &parent, &why) < 0 ||
	    mc_map_u64(rec, "depth", &depth, &why) < 0 ||
	    mc_map_u64(rec, "children", &children, &why) < 0 ||
	    mc_map_double(rec, "crf", &crf, &why) < 0 ||
	    mc_map_double(rec, "worth", &worth, &why) < 0 ||
	    mc_map_bool(rec, "probation", &probation, &why) < 0)
		return proto_err(err, "object", &why);
	if (worth < 0)
		worth = crf; /* a file from before worths: the value itself */
	if (!(crf >= 0 && crf < 1e30) || !(worth >= 0 && worth < 1e30)) {
		mc_err_set(&why, MC_ERR_PROTO, "crf or worth out of range");
		return proto_err(err, "object", &why);
	}
	/* the limits a put meets on the wire */
	if (version == 0 || version > VERSION_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "object record: version %llu out of range",
				  (unsigned long long)version);
	if (size > MC_CONN_MAX_BULK)
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: size %llu over the largest object (%llu)",
				  (unsigned long long)size, (unsigned long long)MC_CONN_MAX_BULK);
	if (access_seq == UINT64_MAX || created_seq == UINT64_MAX)
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: access sequence at its maximum");
	/* Tenant records come first: an object of any other tenant is made up. */
	tenant = store_tenant_find(&L->s, tname, tlen);
	if (tenant < 0 || !(L->tenant_listed[tenant / 64] & (1ull << (tenant % 64))))
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: tenant '%.*s' has no tenant record", (int)tlen,
				  tname);
	if (load_replicas(L, rec, version, reps, &nrep, err) != 0)
		return -1;
	if (version > L->max_version)
		L->max_version = version;
	if (access_seq > L->max_access_seq)
		L->max_access_seq = access_seq;
	if (created_seq > L->max_access_seq)
		L->max_access_seq = created_seq;
	if (size > UINT64_MAX - L->bytes)
		return mc_err_set(err, MC_ERR_PROTO, "object records: sizes add up past 2^64");
	L->bytes += size;
	/* Never completed, or every copy was on its way: nothing to read. */
	if (nrep == 0) {
		L->skipped++;
		return 0;
	}
	/*
	 * The default type is every tenant's: objects adopted from peers
	 * take it without counting it, so a file may hold it past the cap.
	 */
	if (ylen == strlen(MC_DEFAULT_TYPE) && memcmp(type, MC_DEFAULT_TYPE, ylen) == 0)
		tid = store_type_intern(&L->s, type, ylen, &why);
	else
		tid = store_tenant_type(&L->s, (uint32_t)tenant, type, ylen, &why);
	if (tid < 0) {
		if (why.code != MC_ERR_TOO_LARGE)
			return mc_err_set(err, why.code, "%s", why.msg);
		return mc_err_set(err, MC_ERR_PROTO,
				  "object record: %s: see --max-types-per-tenant", why.msg);
	}
	uint64_t h = store_key_hash((uint32_t)tenant, key, klen);
	if (store_find(&L->s, h, (uint32_t)tenant, key, klen) != NULL)
		return mc_err_set(err, MC_ERR_PROTO, "object record: key listed twice");
	memset(&f, 0, sizeof(f));
	f.version = version;
	f.size = size;
	f.checksum = checksum;
	f.type = (uint32_t)tid;
	f.hard_pin = hard_pin;
	/*
	 * Deadlines past what this master could grant from now are cut to
	 * that, so a file cannot hold an object up for ever. Cut, not
	 * refused: a clock or an option that moved since is no reason to
	 * lose the file.
	 */
	until = mc_add_sat(L->now, L->m->cfg.lease_ttl);
	f.lease_deadline = lease < until ? lease : until;
	/*
	 * Only a pin still running survives: an expired one is ordinary
	 * cache now, and a pending one waited for a write that is gone.
	 */
	if (splen == 6 && memcmp(sp, "active", 6) == 0 && sp_deadline > L->now) {
		until = mc_add_sat(L->now, L->m->cfg.max_soft_pin_ttl);
		f.sp_mode = SP_ACTIVE;
		f.sp_deadline = sp_deadline < until ? sp_deadline : until;
		f.sp_ttl =
			sp_ttl < L->m->cfg.max_soft_pin_ttl ? sp_ttl : L->m->cfg.max_soft_pin_ttl;
	}
	o = state_load_object(&L->s, h, (uint32_t)tenant, key, klen, group, glen, &f, err);
	if (o == NULL)
		return -1;
	o->created = created;
	o->last_access = last_access;
	o->access_seq = access_seq;
	o->created_seq = created_seq;
	o->access_count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
	o->parent = parent;
	o->depth = depth > UINT8_MAX ? UINT8_MAX : (uint8_t)depth;
	o->children = children > UINT16_MAX ? UINT16_MAX : (uint16_t)children;
	o->crf = (float)crf;
	o->worth = (float)worth;
	o->probation = probation;
	for (unsigned i = 0; i < nrep; i++)
		if (state_load_replica(o, &reps[i]) != 0)
			return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	L->objects++;
	return 0;
}

/* A recreate cooldown {hash, until}: kept if it still runs. */
static int
load_cooldown(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	uint64_t hash = 0, until = 0;
	struct mc_err why;

	if (mc_map_u64(rec, "hash", &hash, &why) != 1 ||
	    mc_map_u64(rec, "until", &until, &why) != 1 || hash == 0)
		return mc_err_set(err, MC_ERR_PROTO, "cooldown record: needs a 'hash' and 'until'");
	if (until > L->now)
		cooldown_put(&L->cooldowns, hash, until);
	return 0;
}

static int
load_record(struct loader *L, const msgpack_object *rec, struct mc_err *err)
{
	const msgpack_object *t = mc_map_get(rec, "t");

	if (t == NULL || t->type != MSGPACK_OBJECT_STR)
		return mc_err_set(err, MC_ERR_PROTO, "record without a kind ('t')");
	if (mc_obj_streq(t, "object"))
		return load_object(L, rec, err);
	if (mc_obj_streq(t, "tenant"))
		return load_tenant(L, rec, err);
	if (mc_obj_streq(t, "peer"))
		return load_peer(L, rec, err);
	if (mc_obj_streq(t, "meta"))
		return load_meta(L, rec, err);
	if (mc_obj_streq(t, "cooldown"))
		return load_cooldown(L, rec, err);
	return 0; /* a kind from a newer writer */
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* What can be judged only once every record is in. */
static int
loader_finish(struct loader *L, const struct mc_snap_header *h, struct mc_err *err)
{
	const struct {
		const char *what;
		uint64_t said, held;
	} counts[] = {
		{ "objects", h->objects, L->objects + L->skipped },
		{ "peers", h->peers, L->nmap },
		{ "tenants", h->tenants, L->tenants },
		{ "bytes", h->bytes, L->bytes },
	};

	if (!L->meta_seen)
		return mc_err_set(err, MC_ERR_PROTO, "no meta record");
	if (L->next_version <= L->max_version)
		return mc_err_set(err, MC_ERR_PROTO,
				  "meta record: next_version %llu is not above version %llu, "
				  "which the file holds",
				  (unsigned long long)L->next_version,
				  (unsigned long long)L->max_version);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (counts[i].said != counts[i].held)
			return mc_err_set(err, MC_ERR_PROTO,
					  "header says %llu %s, the records hold %llu",
					  (unsigned long long)counts[i].said, counts[i].what,
					  (unsigned long long)counts[i].held);
	if (L->nrep_ids > 1)
		qsort(L->rep_ids, L->nrep_ids, sizeof(*L->rep_ids), cmp_u32);
	for (size_t i = 1; i < L->nrep_ids; i++)
		if (L->rep_ids[i] == L->rep_ids[i - 1])
			return mc_err_set(err, MC_ERR_PROTO, "replica id %u listed twice",
					  L->rep_ids[i]);
	return 0;
}

/* Peer usage follows the replicas placed on them; recount after a swap. */
static void
recount_usage(struct master *m)
{
	size_t cur = 0;
	struct mobj *o;

	if (m->peers->n == 0)
		return;
	for (uint32_t i = 0; i < m->peers->n; i++)
		for (int t = 0; t < MC_TIER_COUNT; t++)
			m->peers->v[i]->tiers[t].used = m->peers->v[i]->tiers[t].moving = 0;
	while ((o = mc_htab_next(&m->store->objects, &cur)) != NULL) {
		const struct mrep *v = obj_creps(o);
		for (unsigned i = 0; i < o->nrep; i++)
			ops_rep_charge(m, o, &v[i]);
	}
}

/* Swap the loaded store in; the loader's store and ghosts move to m. */
static void
install(struct master *m, struct loader *L)
{
	uint64_t vseq = L->next_version > 0 ? L->next_version - 1 : 0;
	uint64_t rseq = L->next_replica > 0 ? L->next_replica - 1 : 0;
	uint64_t next_peer = L->next_peer;
	uint64_t aseq = L->access_seq;

	if (vseq < L->max_version)
		vseq = L->max_version;
	if (vseq < m->store->version_seq)
		vseq = m->store->version_seq;
	if (rseq < L->max_replica)
		rseq = L->max_replica;
	if (rseq < m->store->replica_seq)
		rseq = m->store->replica_seq;
	/*
	 * Accesses are numbered after every restored one (a file whose
	 * counter lags its objects is repaired), and never below what this
	 * master already handed out.
	 */
	if (aseq < L->max_access_seq)
		aseq = L->max_access_seq;
	if (aseq < m->store->access_seq)
		aseq = m->store->access_seq;
	/* Tasks name tenants by id in the old store: send them first. */
	peers_flush(m->peers);
	peers_retire_tasks(m->peers);
	/* Leases point at objects of the store about to go; readers fall back on their TTL. */
	leases_clear(m->leases);
	/* so do the heat window's tenant ids */
	replicate_forget(m);
	/* the caps are the running master's options, not the snapshot's */
	L->s.max_tenants = m->store->max_tenants;
	L->s.max_types_per_tenant = m->store->max_types_per_tenant;
	store_free(m->store);
	*m->store = L->s;
	ops_hook_store(m);
	/* those who follow the state hear the old store go and the new one come */
	state_restored(m);
	/* the loader placed copies without the index: build its lists in access order */
	if (recency_rebuild(&m->store->rank, &m->store->objects) != 0)
		mc_warn("restore: out of memory building the recency index; some copies are "
			"never offered as eviction candidates");
	m->store->version_seq = vseq;
	m->store->replica_seq = rseq > UINT32_MAX ? UINT32_MAX : (uint32_t)rseq;
	m->store->access_seq = aseq;
	/* New registrations must never reuse the id of a snapshot peer. */
	for (uint32_t i = 0; i < L->nghost; i++)
		if (L->ghosts[i].id >= next_peer)
			next_peer = (uint64_t)L->ghosts[i].id + 1;
	if (next_peer > m->peers->next_id && next_peer <= UINT32_MAX)
		m->peers->next_id = (uint32_t)next_peer;
	recount_usage(m);
	/*
	 * The index named objects of the store just freed: derive it anew
	 * from the pins that survived (expired ones were already dropped).
	 */
	softpin_rebuild(m);
	state_cooldowns_restored(m, &L->cooldowns);
	recon_install(m, L->ghosts, L->nghost);
	L->ghosts = NULL;
	L->nghost = 0;
	free(L->map);
	L->map = NULL;
}

/*
 * Load the snapshot on fd into m, all or nothing. On failure m is
 * untouched and err says what was wrong with the file.
 */
int
msnap_load_fd(struct master *m, int fd, struct restore_out *out, struct mc_err *err)
{
	struct loader L;
	struct mc_snap_reader *r = NULL;
	const msgpack_object *rec;
	uint64_t t0 = mc_mono_ns();
	int rc;

	memset(&L, 0, sizeof(L));
	memset(out, 0, sizeof(*out));
	L.m = m;
	L.now = mc_now_ms();
	L.next_fresh = m->peers->next_id;
	if (store_init(&L.s, err) != 0)
		return -1;
	if (cooldowns_init(&L.cooldowns, COOLDOWN_ENTRIES, err) != 0) {
		store_free(&L.s);
		return -1;
	}
	/* a file holds no more tenants and types than puts could have made */
	L.s.max_tenants = m->store->max_tenants;
	L.s.max_types_per_tenant = m->store->max_types_per_tenant;
	/* Connections hold tenant ids: keep each one naming the same tenant. */
	for (uint32_t i = 0; i < m->store->ntenants; i++) {
		const char *name = m->store->tenants[i].name;
		if (store_tenant_intern(&L.s, name, strlen(name), err) < 0)
			goto fail;
	}
	r = mc_snap_reader_open(fd, &out->h, err);
	if (r == NULL)
		goto fail;
	if (mc_htab_reserve(&L.s.objects,
			    out->h.objects < RESERVE_MAX ? out->h.objects : RESERVE_MAX) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
		goto fail;
	}
	while ((rc = mc_snap_reader_next(r, &rec, err)) == 1)
		if (load_record(&L, rec, err) != 0)
			goto fail;
	if (rc < 0 || loader_finish(&L, &out->h, err) != 0)
		goto fail;
	mc_snap_reader_close(r);
	free(L.rep_ids);
	out->objects = L.objects;
	out->skipped = L.skipped;
	out->peers = L.nmap;
	out->tenants = L.s.ntenants;
	install(m, &L);
	out->millis = (mc_mono_ns() - t0) / 1000000;
	return 0;
fail:
	if (r != NULL)
		mc_snap_reader_close(r);
	store_free(&L.s);
	cooldowns_free(&L.cooldowns);
	free(L.ghosts);
	free(L.map);
	free(L.rep_ids);
	/*
	 * Nothing of the rejected file may linger in the index before the
	 * next candidate: re-derive it from the store we kept (empty at
	 * start-up, so this is a clear).
	 */
	softpin_rebuild(m);
	return -1;
}

static int
load_path(struct master *m, const char *path, struct restore_out *out, struct mc_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return mc_err_errno(err, "cannot open");
	rc = msnap_load_fd(m, fd, out, err);
	close(fd);
	return rc;
}

void
msnap_log_restored(const struct master *m, const char *what, const struct restore_out *out)
{
	mc_info("restored %s: %llu objects, %llu peers, %llu tenants in %llu ms "
		"(%llu objects without a complete replica skipped)",
		what, (unsigned long long)out->objects, (unsigned long long)out->peers,
		(unsigned long long)out->tenants, (unsigned long long)out->millis,
		(unsigned long long)out->skipped);
	if (m->recon->n > 0)
		mc_info("waiting %llu ms for %u snapshot peers to confirm their replicas",
			(unsigned long long)m->cfg.reconcile_timeout, m->recon->n);
}

int
msnap_restore_startup(struct master *m)
{
	const char *want = m->cfg.restore;
	struct restore_out out;
	struct mc_err err;
	char **paths;
	size_t n;

	if (want == NULL)
		return 0;
	if (strcmp(want, "latest") != 0) {
		if (load_path(m, want, &out, &err) != 0) {
			mc_complain("cannot restore '%s': %s", want, err.msg);
			/* a file that cannot even be opened is bad input all the same */
			return MC_EXIT_DATAERR;
		}
		msnap_log_restored(m, want, &out);
		return 0;
	}
	if (mc_snap_list(m->cfg.snapshot_dir, &paths, &n, &err) != 0) {
		mc_warn("cannot list snapshots in %s: %s; starting empty", m->cfg.snapshot_dir,
			err.msg);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (load_path(m, paths[i], &out, &err) == 0) {
			msnap_log_restored(m, paths[i], &out);
			mc_snap_list_free(paths, n);
			return 0;
		}
		mc_warn("cannot restore %s: %s%s", paths[i], err.msg,
			i + 1 < n ? "; trying an older snapshot" : "");
	}
	if (n == 0)
		mc_info("no snapshot in %s; starting empty", m->cfg.snapshot_dir);
	else
		mc_warn("no snapshot in %s could be restored; starting empty", m->cfg.snapshot_dir);
	mc_snap_list_free(paths, n);
	return 0;
}
