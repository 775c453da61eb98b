/*
 * mc-snapgen: write a synthetic snapshot with the libmc writer, for the
 * tests of mc-snapshot and anything else that reads snapshot files.
 *
 *   mc-snapgen [--count N] [--seed S] [--created MS] [--next-version N]
 *              [--general-every N] [--far-deadlines] [--hostile CASE] [-o FILE]
 *
 * The file holds one meta record, three tenants ("default", "t1",
 * "t2"), two peers and N objects whose tenant, type, size, group, pins
 * and replicas are drawn from a PRNG seeded with S, so one seed always
 * gives the same file. Objects of tenant "default" have type "kv". The
 * records carry no access sequences (access_seq, created_seq), like
 * files written before the master numbered accesses, so tests restoring
 * them cover such files.
 *
 * --hostile CASE writes the same file with one thing wrong in its
 * contents that no checksum catches, since the writer seals every
 * record as it is: a duplicate id, a size or counter at its maximum, a
 * replica on a peer the file does not list, a header count the records
 * do not add up to, and so on (--hostile list names them all). A master
 * must refuse each one. --next-version sets the meta record's counter,
 * for tests of a master close to the last version; --general-every N
 * gives every Nth object the default type, as a master gives the objects
 * it adopts from peers; --far-deadlines makes every lease and active
 * soft pin (and its ttl) last until 2^64-1. --plain writes the header's
 * counts as one map and then the records, as bare msgpack, with no
 * compression and no trailer: the snapshot fuzzer's input, which it
 * seals into a file itself so that its mutations reach the contents.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/log.h"
#include "mc/opt.h"
#include "mc/io.h"
#include "mc/proto.h"
#include "mc/snapshot.h"
#include "mc/tier.h"
#include "mc/wire.h"

static uint64_t count = 100, seed = 1, created = 1700000000000ull, next_version, general_every;
static const char *out = "-", *hostile;
static bool far, plain;
/* --plain: the whole output, written at the end */
static msgpack_sbuffer plain_sb;
static msgpack_packer plain_pk;

static const struct mc_opt opts[] = {
	{ "count", 'n', "N", NULL, "objects to write (default 100)", mc_set_u64, &count },
	{ "seed", 's', "N", NULL, "PRNG seed (default 1)", mc_set_u64, &seed },
	{ "created", 0, "N", NULL, "creation time in ms (default 1700000000000)", mc_set_u64,
	  &created },
	{ "next-version", 0, "N", NULL, "the meta record's next_version (default count + 1)",
	  mc_set_u64, &next_version },
	{ "general-every", 0, "N", NULL, "every Nth object, of any tenant, of type general",
	  mc_set_u64, &general_every },
	{ "far-deadlines", 0, NULL, NULL, "leases and soft pins that end at 2^64-1 ms", mc_set_flag,
	  &far },
	{ "hostile", 0, "CASE", NULL, "write one thing wrong in the file ('list': the cases)",
	  mc_set_str, &hostile },
	{ "plain", 0, NULL, NULL, "header counts and records as bare msgpack (a fuzzer's input)",
	  mc_set_flag, &plain },
	{ "output", 'o', "FILE", NULL, "where to write (default '-': stdout)", mc_set_str, &out },
	{ 0 },
};

static const struct {
	const char *name, *what;
} cases[] = {
	{ "no-meta", "no meta record" },
	{ "two-metas", "the meta record twice" },
	{ "next-version-max", "next_version 2^64-1" },
	{ "next-version-behind", "next_version not above the last object's version" },
	{ "next-replica-id-max", "next_replica_id past 32 bits" },
	{ "next-peer-id-max", "next_peer_id past 32 bits" },
	{ "access-seq-max", "the access counter at 2^64-1" },
	{ "dup-tenant-name", "two tenant records of one name" },
	{ "dup-tenant-id", "two tenant records of one id" },
	{ "many-tenants", "40 more tenants (for a master with a low --max-tenants)" },
	{ "dup-peer-id", "two peer records of one id" },
	{ "many-peers", "2049 peer records" },
	{ "huge-size", "an object of 2^64-1 bytes" },
	{ "version-zero", "an object of version 0" },
	{ "version-max", "an object of version 2^64-1" },
	{ "long-key", "a key one byte over the limit" },
	{ "dup-key", "two objects of one key" },
	{ "unlisted-tenant", "an object of a tenant with no tenant record" },
	{ "many-types", "one tenant's objects of 12 types (for a low --max-types-per-tenant)" },
	{ "seq-max", "an object's access sequence at 2^64-1" },
	{ "dup-replica-id", "one object's two replicas of one id" },
	{ "dup-replica-id-across", "two objects' replicas of one id" },
	{ "replica-id-zero", "a replica of id 0" },
	{ "unknown-peer", "a replica on a peer the file does not list" },
	{ "unknown-tier", "a replica on a tier that does not exist" },
	{ "replica-version-max", "a replica of version 2^64-1" },
	{ "header-objects", "a header counting one object more than the records" },
	{ "header-peers", "a header counting one peer more" },
	{ "header-tenants", "a header counting one tenant more" },
	{ "header-bytes", "a header counting one byte more" },
};

/* Whether the file is to have this thing wrong. */
static bool
is(const char *name)
{
	return hostile != NULL && strcmp(hostile, name) == 0;
}

static const char *tenants[] = { "default", "t1", "t2" };
static const char *types[] = { "tensor", "hidden", "general" };

/* splitmix64: tiny, and good enough to vary test data */
static uint64_t
next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

struct obj {
	unsigned tenant, type, nrep;
	uint64_t size;
	bool pin, group, active;
};

static void
draw(uint64_t *s, struct obj *o)
{
	uint64_t v = next(s);

	o->tenant = (unsigned)(v % 3);
	o->type = (unsigned)((v >> 8) % 3);
	o->nrep = 1 + (unsigned)((v >> 16) % 2);
	o->pin = (v >> 24) % 10 == 0;
	o->group = (v >> 32) % 4 == 0;
	o->active = (v >> 40) % 5 == 0;
	o->size = 1 + next(s) % (1u << 20);
}

/* Object i as drawn, then as the hostile case wants it. */
static void
draw_object(uint64_t *s, uint64_t i, struct obj *o)
{
	draw(s, o);
	if (i == 0 && is("dup-replica-id"))
		o->nrep = 2;
	if (i == 0 && is("huge-size"))
		o->size = UINT64_MAX;
	if (is("many-types"))
		o->tenant = 1;
	if (i < 2 && is("dup-key"))
		o->tenant = 0;
}

/* The replica ids of object i: two a slot, so none repeats by chance. */
static uint64_t
rep_id(uint64_t i, unsigned r)
{
	if ((is("dup-replica-id") && i == 0) || (is("dup-replica-id-across") && i == 1 && r == 0))
		return 1;
	if (is("replica-id-zero") && i == 0)
		return 0;
	return i * 2 + r + 1;
}

static void
pack_object(msgpack_packer *pk, uint64_t i, const struct obj *o)
{
	char key[MC_KEY_MAX + 2], group[32], type[32];
	uint64_t version = i + 1;
	bool first = i == 0;
	unsigned r;

	snprintf(key, sizeof(key), "obj/%08" PRIu64, is("dup-key") && i == 1 ? 0 : i);
	if (is("long-key") && first) {
		memset(key, 'k', MC_KEY_MAX + 1);
		key[MC_KEY_MAX + 1] = '\0';
	}
	snprintf(group, sizeof(group), "g%" PRIu64, i / 16);
	snprintf(type, sizeof(type), "%s", o->tenant == 0 ? "kv" : types[o->type]);
	if (is("many-types"))
		snprintf(type, sizeof(type), "ty%02" PRIu64, i);
	if (general_every > 0 && i % general_every == 0)
		snprintf(type, sizeof(type), "%s", MC_DEFAULT_TYPE);
	if (first && is("version-zero"))
		version = 0;
	if (first && is("version-max"))
		version = UINT64_MAX;
	msgpack_pack_map(pk, first && is("seq-max") ? 18 : 17);
	mc_pack_kv_str(pk, "t", "object");
	mc_pack_kv_str(pk, "tenant", first && is("unlisted-tenant") ? "t9" : tenants[o->tenant]);
	mc_pack_kv_str(pk, "key", key);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "version", version);
	mc_pack_kv_u64(pk, "checksum", o->size * 2654435761u);
	mc_pack_kv_str(pk, "type", type);
	mc_pack_kv_str(pk, "group", o->group ? group : NULL);
	mc_pack_kv_bool(pk, "hard_pin", o->pin);
	mc_pack_kv_u64(pk, "created", created - 1000 + i % 1000);
	mc_pack_kv_u64(pk, "last_access", created - i % 500);
	mc_pack_kv_u64(pk, "access_count", i % 17);
	mc_pack_kv_u64(pk, "lease_deadline", far ? UINT64_MAX : 0);
	mc_pack_kv_str(pk, "sp_mode", o->active ? "active" : "disabled");
	mc_pack_kv_u64(pk, "sp_deadline", o->active ? (far ? UINT64_MAX : created + 60000) : 0);
	mc_pack_kv_u64(pk, "sp_ttl", o->active ? (far ? UINT64_MAX : 60000) : 0);
	if (first && is("seq-max"))
		mc_pack_kv_u64(pk, "access_seq", UINT64_MAX);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, o->nrep);
	for (r = 0; r < o->nrep; r++) {
		bool bad = first && r == 0;

		msgpack_pack_map(pk, 6);
		mc_pack_kv_u64(pk, "id", rep_id(i, r));
		mc_pack_kv_u64(pk, "peer", bad && is("unknown-peer") ? 9 : r + 1);
		mc_pack_kv_str(pk, "tier",
			       bad && is("unknown-tier")
				       ? "tape"
				       : mc_tier_name(r == 0 ? MC_TIER_DRAM : MC_TIER_SSD));
		mc_pack_kv_str(pk, "state", "complete");
		mc_pack_kv_u64(pk, "version",
			       bad && is("replica-version-max") ? UINT64_MAX : version);
		mc_pack_kv_bool(pk, "dynamic", false);
	}
}

/* Where the next record goes. */
static msgpack_packer *
rec(struct mc_snap_writer *w)
{
	return plain ? &plain_pk : mc_snap_writer_record(w);
}

static int
end(struct mc_snap_writer *w)
{
	struct mc_err err = { 0 };

	if (!plain && mc_snap_writer_end_record(w, &err) < 0) {
		mc_snap_writer_abort(w);
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct mc_opt_spec spec = {
		.usage = "mc-snapgen [--count N] [--seed S] [--created MS] [--next-version N] "
			 "[--general-every N] [--far-deadlines] [--hostile CASE] [--plain] [-o "
			 "FILE]",
		.summary = "write a synthetic mc snapshot",
		.opts = opts,
	};
	struct mc_err err = { 0 };
	struct mc_snap_header h = { 0 };
	struct mc_snap_writer *w = NULL;
	msgpack_packer *pk;
	struct obj o;
	uint64_t s, i, ntenants, npeers;
	int fd = STDOUT_FILENO;

	mc_log_init("mc-snapgen", 0);
	if (mc_opt_parse(&spec, argc, argv) != argc)
		mc_die(MC_EXIT_USAGE, "unexpected argument; try 'mc-snapgen --help'");
	if (strcmp(out, "-") != 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			mc_die(MC_EXIT_FAIL, "cannot write '%s'", out);
	}
	if (hostile != NULL && strcmp(hostile, "list") == 0) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("%-24s %s\n", cases[i].name, cases[i].what);
		return MC_EXIT_OK;
	}
	for (i = 0; hostile != NULL && i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(hostile, cases[i].name) == 0)
			break;
	if (hostile != NULL && i == sizeof(cases) / sizeof(cases[0]))
		mc_die(MC_EXIT_USAGE, "invalid --hostile '%s': see --hostile list", hostile);
	if (hostile != NULL && count < 12)
		mc_die(MC_EXIT_USAGE, "invalid --count: --hostile needs 12 objects at least");
	if (next_version == 0)
		next_version = count + 1;
	ntenants = 3 + (is("many-tenants") ? 40 : 0);
	npeers = is("many-peers") ? 2049 : 2;
	/* the header comes first but holds totals: draw the objects twice */
	s = seed;
	for (i = 0; i < count; i++) {
		draw_object(&s, i, &o);
		h.bytes += o.size;
	}
	snprintf(h.master_id, sizeof(h.master_id), "snapgen-%" PRIu64, seed);
	h.created = created;
	h.objects = count + is("header-objects");
	h.peers = npeers + is("header-peers");
	h.tenants = ntenants + is("header-tenants");
	h.bytes += is("header-bytes");
	if (plain) {
		msgpack_sbuffer_init(&plain_sb);
		msgpack_packer_init(&plain_pk, &plain_sb, msgpack_sbuffer_write);
		msgpack_pack_map(&plain_pk, 6);
		mc_pack_kv_str(&plain_pk, "master_id", h.master_id);
		mc_pack_kv_u64(&plain_pk, "created", h.created);
		mc_pack_kv_u64(&plain_pk, "objects", h.objects);
		mc_pack_kv_u64(&plain_pk, "peers", h.peers);
		mc_pack_kv_u64(&plain_pk, "tenants", h.tenants);
		mc_pack_kv_u64(&plain_pk, "bytes", h.bytes);
	} else if ((w = mc_snap_writer_open(fd, &h, 0, &err)) == NULL) {
		mc_die(MC_EXIT_FAIL, "%s", err.msg);
	}

	for (i = 0; i < (is("no-meta") ? 0u : is("two-metas") ? 2u : 1u); i++) {
		pk = rec(w);
		msgpack_pack_map(pk, is("access-seq-max") ? 5 : 4);
		mc_pack_kv_str(pk, "t", "meta");
		mc_pack_kv_u64(pk, "next_version",
			       is("next-version-max")	   ? UINT64_MAX
			       : is("next-version-behind") ? count
							   : next_version);
		mc_pack_kv_u64(pk, "next_replica_id",
			       is("next-replica-id-max") ? (1ull << 32) + 1 : count * 2 + 3);
		mc_pack_kv_u64(pk, "next_peer_id", is("next-peer-id-max") ? 1ull << 32 : 3);
		if (is("access-seq-max"))
			mc_pack_kv_u64(pk, "access_seq", UINT64_MAX);
		end(w);
	}
	for (i = 0; i < ntenants; i++) {
		char name[16];

		snprintf(name, sizeof(name), "%s", i < 3 ? tenants[i] : "x");
		if (i >= 3)
			snprintf(name, sizeof(name), "x%02" PRIu64, i - 3);
		if (i == 2 && is("dup-tenant-name"))
			snprintf(name, sizeof(name), "%s", tenants[1]);
		pk = rec(w);
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "t", "tenant");
		mc_pack_kv_u64(pk, "id", i == 1 && is("dup-tenant-id") ? 1 : i + 1);
		mc_pack_kv_str(pk, "name", name);
		mc_pack_kv_u64(pk, "quota", 0);
		end(w);
	}
	for (i = 0; i < npeers; i++) {
		char addr[64];

		snprintf(addr, sizeof(addr), "127.0.0.1:%" PRIu64, 7400 + i);
		pk = rec(w);
		msgpack_pack_map(pk, 5);
		mc_pack_kv_str(pk, "t", "peer");
		mc_pack_kv_u64(pk, "id", i == 1 && is("dup-peer-id") ? 1 : i + 1);
		mc_pack_kv_str(pk, "addr", addr);
		mc_pack_kv_str(pk, "host", i == 0 ? "host-a" : "host-b");
		mc_pack_kv_str(pk, "domain", "rack-1");
		end(w);
	}
	s = seed;
	for (i = 0; i < count; i++) {
		draw_object(&s, i, &o);
		pack_object(rec(w), i, &o);
		end(w);
	}
	if (plain) {
		if (mc_write_all(fd, plain_sb.data, plain_sb.size) < 0)
			mc_die(MC_EXIT_FAIL, "cannot write '%s'", out);
		msgpack_sbuffer_destroy(&plain_sb);
	} else if (mc_snap_writer_finish(w, &err) < 0) {
		mc_die(MC_EXIT_FAIL, "%s", err.msg);
	}
	if (fd != STDOUT_FILENO && close(fd) < 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s'", out);
	return MC_EXIT_OK;
}
