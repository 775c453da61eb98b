/*
 * Unit tests for the peer's copier (cmd/mc-peer/copier.c), the part a
 * test can drive without a master: a replica_copy item read and every
 * malformed one refused with the field named, the read grant verified
 * as a client's read is (forged, for another version or another peer:
 * refused and counted), a copy this peer does not hold at that version
 * refused, COPIES_WAITING_MAX copies taken and the next refused at
 * once, copies that find no link to the master ended as failed without
 * a byte sent, a peer without copy workers refusing every item and not
 * advertising the kind, one with them advertising it, and a copier
 * freed with copies waiting letting them go.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/grant.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/wire.h"

#include "copier.h"
#include "peer.h"
#include "tap.h"
#include "tasks.h"

#define T "tenant"
#define SELF 7
#define TARGET 9

static struct peer p;
static struct mc_grant_master master;

/* What an item carries; a field NULL (or 0 for numbers marked absent) is left out. */
struct item {
	const char *tenant, *key, *addr;
	uint64_t lease, version, size, checksum, target;
	bool no_lease, no_version, no_size, no_checksum, no_target;
	bool key_as_int;
	const unsigned char *read_grant;
	size_t read_glen;
	bool no_write_grant;
};

/* A read grant the master would sign for (key, version, size) at peer. */
static void
grant_for(const char *key, uint64_t version, uint64_t size, uint32_t peer,
	  unsigned char out[MC_GRANT_BYTES])
{
	unsigned char k[MC_GRANT_KEY_BYTES];
	struct mc_grant_scope s = { T,	     strlen(T), key,  strlen(key),
				    version, size,	peer, MC_GRANT_READ };

	mc_grant_peer_key(&master, peer, k);
	/* an hour on the master's clock, which the peer learned reads as its own */
	mc_grant_sign(k, master.gen, &s, mc_steady_ms() + 3600000, out);
}

static msgpack_object
pack_item(msgpack_zone *z, msgpack_sbuffer *sb, const struct item *it)
{
	msgpack_packer pk;
	msgpack_object o;
	uint32_t n = 0;

	n += it->tenant != NULL;
	n += it->key != NULL;
	n += it->addr != NULL;
	n += !it->no_lease + !it->no_version + !it->no_size + !it->no_checksum + !it->no_target;
	n += it->read_grant != NULL;
	n += !it->no_write_grant;
	n += 1; /* task */
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n);
	if (it->tenant)
		mc_pack_kv_str(&pk, "tenant", it->tenant);
	if (it->key && it->key_as_int) {
		mc_pack_kv_u64(&pk, "key", 5);
	} else if (it->key) {
		mc_pack_key(&pk, "key");
		msgpack_pack_bin(&pk, strlen(it->key));
		msgpack_pack_bin_body(&pk, it->key, strlen(it->key));
	}
	if (it->addr)
		mc_pack_kv_str(&pk, "addr", it->addr);
	if (!it->no_lease)
		mc_pack_kv_u64(&pk, "lease", it->lease);
	if (!it->no_version)
		mc_pack_kv_u64(&pk, "version", it->version);
	if (!it->no_size)
		mc_pack_kv_u64(&pk, "size", it->size);
	if (!it->no_checksum)
		mc_pack_kv_u64(&pk, "checksum", it->checksum);
	if (!it->no_target)
		mc_pack_kv_u64(&pk, "target", it->target);
	if (it->read_grant) {
		mc_pack_key(&pk, "read_grant");
		msgpack_pack_bin(&pk, it->read_glen);
		msgpack_pack_bin_body(&pk, it->read_grant, it->read_glen);
	}
	if (!it->no_write_grant) {
		mc_pack_key(&pk, "write_grant");
		msgpack_pack_bin(&pk, 4);
		msgpack_pack_bin_body(&pk, "wxyz", 4);
	}
	mc_pack_kv_u64(&pk, "task", 1);
	if (msgpack_unpack(sb->data, sb->size, NULL, z, &o) != MSGPACK_UNPACK_SUCCESS)
		abort();
	return o;
}

/* An item for the copy of "hot" at version 3, 100 bytes, to be changed by the caller. */
static struct item
good_item(unsigned char grant[MC_GRANT_BYTES])
{
	grant_for("hot", 3, 100, SELF, grant);
	return (struct item){ .tenant = T,
			      .key = "hot",
			      .addr = "127.0.0.1:1",
			      .lease = 42,
			      .version = 3,
			      .size = 100,
			      .checksum = 0,
			      .target = TARGET,
			      .read_grant = grant,
			      .read_glen = MC_GRANT_BYTES };
}

/* The message parse read last: the names of its order point into it. */
static msgpack_sbuffer parsed_sb;
static msgpack_zone parsed_z;

static int
parse(const struct item *it, struct copy_order *out, struct mc_err *err)
{
	msgpack_object o = pack_item(&parsed_z, &parsed_sb, it);

	return copy_order_parse(&o, out, err);
}

static int
take(struct copier *cp, const struct item *it, struct mc_err *err)
{
	msgpack_sbuffer sb;
	msgpack_zone z;
	msgpack_object o;
	int rc;

	msgpack_sbuffer_init(&sb);
	msgpack_zone_init(&z, 1024);
	o = pack_item(&z, &sb, it);
	rc = copier_take(cp, &o, err);
	msgpack_zone_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/* Whether parsing it fails with an error whose message holds what. */
static bool
refused_naming(const struct item *it, const char *what)
{
	struct copy_order o;
	struct mc_err err = { 0 };

	return parse(it, &o, &err) == -1 && err.code == MC_ERR_INVALID &&
	       strstr(err.msg, what) != NULL;
}

static void
test_parse(void)
{
	unsigned char g[MC_GRANT_BYTES];
	struct item it = good_item(g), bad;
	struct copy_order o;
	struct mc_err err;

	TAP_OK(parse(&it, &o, &err) == 0 && o.lease == 42 && o.version == 3 && o.size == 100 &&
		       o.target == TARGET && o.key.len == 3 && memcmp(o.key.p, "hot", 3) == 0 &&
		       o.tenant.len == strlen(T) && o.addr.len == strlen("127.0.0.1:1") &&
		       o.read_grant.len == MC_GRANT_BYTES && o.write_grant.len == 4,
	       "parse: a whole item is read, names pointing into the message");
	bad = it;
	bad.tenant = NULL;
	TAP_OK(parse(&bad, &o, &err) == 0 && o.tenant.len == strlen(MC_DEFAULT_TENANT),
	       "parse: no tenant is the default tenant");

#define MISSING(field, flag) \
	bad = it;            \
	bad.flag = true;     \
	TAP_OK(refused_naming(&bad, "'" field "'"), "parse: no " field " is refused, naming it");
	MISSING("lease", no_lease);
	MISSING("version", no_version);
	MISSING("size", no_size);
	MISSING("checksum", no_checksum);
	MISSING("target", no_target);
	MISSING("write_grant", no_write_grant);
#undef MISSING
	bad = it;
	bad.key = NULL;
	TAP_OK(refused_naming(&bad, "'key'"), "parse: no key is refused, naming it");
	bad = it;
	bad.addr = NULL;
	TAP_OK(refused_naming(&bad, "'addr'"), "parse: no addr is refused, naming it");
	bad = it;
	bad.read_grant = NULL;
	TAP_OK(refused_naming(&bad, "'read_grant'"), "parse: no read grant is refused, naming it");
	bad = it;
	bad.key_as_int = true;
	TAP_OK(refused_naming(&bad, "'key'"), "parse: a key that is no string is refused");
	bad = it;
	bad.lease = 0;
	TAP_OK(refused_naming(&bad, "'lease'"), "parse: lease 0 is refused");
	bad = it;
	bad.target = 0;
	TAP_OK(refused_naming(&bad, "'target'"), "parse: target 0 is refused");
	bad = it;
	bad.target = (uint64_t)UINT32_MAX + 1;
	TAP_OK(refused_naming(&bad, "'target'"), "parse: a target beyond any peer id is refused");
	bad = it;
	bad.addr = "";
	TAP_OK(refused_naming(&bad, "'addr'"), "parse: an empty addr is refused");
	{
		msgpack_object nil = { .type = MSGPACK_OBJECT_NIL };

		TAP_OK(copy_order_parse(&nil, &o, &err) == -1 && err.code == MC_ERR_INVALID,
		       "parse: an item that is no map is refused, not a crash");
	}
}

/* Commit key at version, size bytes in dram, through the pool. */
static void
put(const char *key, uint64_t version, uint64_t size)
{
	struct mc_err err;
	uint64_t off = 0;
	struct pobj *o;

	if (medium_alloc(p.media[MC_TIER_DRAM], size, &off, &err) != 0)
		abort();
	o = pobj_new(&p.index, T, strlen(T), key, strlen(key), version, size, 0, MC_TIER_DRAM, off);
	if (pool_commit(&p.pool, o, &err) != 0)
		abort();
}

static void
test_take(void)
{
	unsigned char g[MC_GRANT_BYTES], other[MC_GRANT_BYTES];
	struct item it = good_item(g), bad;
	struct copier *cp;
	struct mc_err err;
	uint64_t forged0 = p.grants.refused[MC_GRANT_FORGED];
	int taken = 0;

	put("hot", 3, 100);
	TAP_OK(take(NULL, &it, &err) == -1 && strstr(err.msg, "--copy-workers 0") != NULL,
	       "take: a peer without copy workers refuses every copy");
	cp = copier_new(&p, 1, &err);
	TAP_OK(cp != NULL, "take: a copier of one worker");
	TAP_OK(copier_new(&p, 0, &err) == NULL &&
		       copier_new(&p, COPY_WORKERS_MAX + 1, &err) == NULL,
	       "a copier of no worker, or of more than %d, is refused", COPY_WORKERS_MAX);

	bad = it;
	grant_for("hot", 2, 100, SELF, other);
	bad.read_grant = other;
	TAP_OK(take(cp, &bad, &err) == -1 && err.code == MC_ERR_PERMISSION &&
		       strstr(err.msg, "forged") != NULL &&
		       p.grants.refused[MC_GRANT_FORGED] == forged0 + 1,
	       "take: a read grant for another version is refused, and counted");
	grant_for("hot", 3, 100, TARGET, other);
	TAP_OK(take(cp, &bad, &err) == -1 && err.code == MC_ERR_PERMISSION,
	       "take: a read grant for another peer is refused");
	bad.read_glen = 5;
	TAP_OK(take(cp, &bad, &err) == -1 && strstr(err.msg, "missing") != NULL,
	       "take: a read grant of the wrong length is refused as missing");
	bad = it;
	bad.version = 4;
	grant_for("hot", 4, 100, SELF, other);
	bad.read_grant = other;
	TAP_OK(take(cp, &bad, &err) == -1 && err.code == MC_ERR_NOT_FOUND,
	       "take: a version this peer does not hold is refused, though granted");
	bad = it;
	bad.target = SELF;
	TAP_OK(take(cp, &bad, &err) == -1 && err.code == MC_ERR_INVALID,
	       "take: a copy to this very peer is refused");
	TAP_OK(copier_waiting(cp) == 0, "take: nothing refused was queued");

	while (taken < COPIES_WAITING_MAX && take(cp, &it, &err) == 0)
		taken++;
	TAP_OK(taken == COPIES_WAITING_MAX && copier_waiting(cp) == COPIES_WAITING_MAX,
	       "take: %d copies are queued", COPIES_WAITING_MAX);
	TAP_OK(take(cp, &it, &err) == -1 && err.code == MC_ERR_BUSY,
	       "take: one more is refused at once");

	/* no link to the master: each start fails, and nothing is sent */
	event_base_loop(p.base, EVLOOP_NONBLOCK);
	TAP_OK(copier_waiting(cp) == 0 && copier_running(cp) == 0 &&
		       copier_stats(cp)->failed == COPIES_WAITING_MAX &&
		       copier_stats(cp)->done == 0 && copier_stats(cp)->bytes == 0,
	       "start: without a link to the master every copy fails, none is sent");
	TAP_OK(take(cp, &it, &err) == 0, "take: room again once they are over");

	take(cp, &it, &err);
	copier_free(cp);
	TAP_OK(true, "free: a copier with copies waiting lets them go");
}

/* The names peer_register's task_kinds carries for ts. */
static bool
advertises(const struct peer_tasks *ts, const char *kind)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_zone z;
	msgpack_object o;
	const msgpack_object_array *a;
	bool found = false;

	msgpack_sbuffer_init(&sb);
	msgpack_zone_init(&z, 1024);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	peer_tasks_pack_kinds(&pk, ts);
	if (msgpack_unpack(sb.data, sb.size, NULL, &z, &o) == MSGPACK_UNPACK_SUCCESS &&
	    (a = mc_map_array(&o, "task_kinds")) != NULL)
		for (uint32_t i = 0; i < a->size; i++)
			if (a->ptr[i].via.str.size == strlen(kind) &&
			    memcmp(a->ptr[i].via.str.ptr, kind, strlen(kind)) == 0)
				found = true;
	msgpack_zone_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
	return found;
}

static void
test_advertised(void)
{
	struct peer_tasks ts;
	struct mc_err err;

	peer_tasks_init(&ts, &p, NULL, "test");
	p.copier = NULL;
	TAP_OK(!advertises(&ts, "replica_copy") && advertises(&ts, "drop"),
	       "kinds: without copy workers replica_copy is not advertised");
	p.copier = copier_new(&p, 2, &err);
	TAP_OK(p.copier && advertises(&ts, "replica_copy"),
	       "kinds: with copy workers replica_copy is advertised");
	copier_free(p.copier);
	p.copier = NULL;
	peer_tasks_free(&ts);
}

int
main(void)
{
	struct mc_err err;
	unsigned char k[MC_GRANT_KEY_BYTES];

	/* 64 copies fail on purpose: their warnings only with MC_TEST_DEBUG */
	mc_log_set_level(getenv("MC_TEST_DEBUG") ? MC_LOG_DEBUG : MC_LOG_ERROR);
	p.base = event_base_new();
	p.media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = 1u << 20 }, &err);
	if (!p.base || !p.media[MC_TIER_DRAM] || pindex_init(&p.index, p.media, &err) != 0 ||
	    mc_grant_master_init(&master, 1, &err) != 0)
		abort();
	pool_init(&p.pool, &p.index);
	/* registered as SELF, with the master's key for it, both clocks reading alike */
	p.grants.peer_id = SELF;
	p.grants.skew_ms = 0;
	mc_grant_peer_key(&master, SELF, k);
	mc_grant_keys_add(&p.grants.keys, master.gen, k, mc_steady_ms(), mc_steady_ms());

	msgpack_sbuffer_init(&parsed_sb);
	msgpack_zone_init(&parsed_z, 1024);
	test_parse();
	msgpack_zone_destroy(&parsed_z);
	msgpack_sbuffer_destroy(&parsed_sb);
	test_take();
	test_advertised();

	pindex_destroy(&p.index);
	medium_close(p.media[MC_TIER_DRAM]);
	event_base_free(p.base);
	return tap_done();
}
