/*
 * mc-snapgen: write a synthetic snapshot with the libmc writer, for the
 * tests of mc-snapshot and anything else that reads snapshot files.
 *
 *   mc-snapgen [--count N] [--seed S] [--created MS] [-o FILE]
 *
 * The file holds one meta record, three tenants ("default", "t1",
 * "t2"), two peers and N objects whose tenant, type, size, group, pins
 * and replicas are drawn from a PRNG seeded with S, so one seed always
 * gives the same file. Objects of tenant "default" have type "kv". The
 * records carry no access sequences (access_seq, created_seq), like
 * files written before the master numbered accesses, so tests restoring
 * them cover such files.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mc/log.h"
#include "mc/opt.h"
#include "mc/snapshot.h"
#include "mc/tier.h"
#include "mc/wire.h"

static uint64_t count = 100, seed = 1, created = 1700000000000ull;
static const char *out = "-";

static const struct mc_opt opts[] = {
	{ "count", 'n', "N", NULL, "objects to write (default 100)", mc_set_u64, &count },
	{ "seed", 's', "N", NULL, "PRNG seed (default 1)", mc_set_u64, &seed },
	{ "created", 0, "N", NULL, "creation time in ms (default 1700000000000)", mc_set_u64,
	  &created },
	{ "output", 'o', "FILE", NULL, "where to write (default '-': stdout)", mc_set_str, &out },
	{ 0 },
};

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

static void
pack_object(msgpack_packer *pk, uint64_t i, const struct obj *o)
{
	char key[64], group[32];
	unsigned r;

	snprintf(key, sizeof(key), "obj/%08" PRIu64, i);
	snprintf(group, sizeof(group), "g%" PRIu64, i / 16);
	msgpack_pack_map(pk, 17);
	mc_pack_kv_str(pk, "t", "object");
	mc_pack_kv_str(pk, "tenant", tenants[o->tenant]);
	mc_pack_kv_str(pk, "key", key);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_u64(pk, "version", i + 1);
	mc_pack_kv_u64(pk, "checksum", o->size * 2654435761u);
	mc_pack_kv_str(pk, "type", o->tenant == 0 ? "kv" : types[o->type]);
	mc_pack_kv_str(pk, "group", o->group ? group : NULL);
	mc_pack_kv_bool(pk, "hard_pin", o->pin);
	mc_pack_kv_u64(pk, "created", created - 1000 + i % 1000);
	mc_pack_kv_u64(pk, "last_access", created - i % 500);
	mc_pack_kv_u64(pk, "access_count", i % 17);
	mc_pack_kv_u64(pk, "lease_deadline", 0);
	mc_pack_kv_str(pk, "sp_mode", o->active ? "active" : "disabled");
	mc_pack_kv_u64(pk, "sp_deadline", o->active ? created + 60000 : 0);
	mc_pack_kv_u64(pk, "sp_ttl", o->active ? 60000 : 0);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, o->nrep);
	for (r = 0; r < o->nrep; r++) {
		msgpack_pack_map(pk, 6);
		mc_pack_kv_u64(pk, "id", i * 2 + r + 1);
		mc_pack_kv_u64(pk, "peer", r + 1);
		mc_pack_kv_str(pk, "tier", mc_tier_name(r == 0 ? MC_TIER_DRAM : MC_TIER_SSD));
		mc_pack_kv_str(pk, "state", "complete");
		mc_pack_kv_u64(pk, "version", i + 1);
		mc_pack_kv_bool(pk, "dynamic", false);
	}
}

static int
end(struct mc_snap_writer *w)
{
	struct mc_err err = { 0 };

	if (mc_snap_writer_end_record(w, &err) < 0) {
		mc_snap_writer_abort(w);
		mc_die(MC_EXIT_SOFTWARE, "%s", err.msg);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct mc_opt_spec spec = {
		.usage = "mc-snapgen [--count N] [--seed S] [--created MS] [-o FILE]",
		.summary = "write a synthetic mc snapshot",
		.opts = opts,
	};
	struct mc_err err = { 0 };
	struct mc_snap_header h = { 0 };
	struct mc_snap_writer *w;
	msgpack_packer *pk;
	struct obj o;
	uint64_t s, i;
	int fd = STDOUT_FILENO;

	mc_log_init("mc-snapgen", 0);
	if (mc_opt_parse(&spec, argc, argv) != argc)
		mc_die(MC_EXIT_USAGE, "unexpected argument; try 'mc-snapgen --help'");
	if (strcmp(out, "-") != 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			mc_die(MC_EXIT_FAIL, "cannot write '%s'", out);
	}
	/* the header comes first but holds totals: draw the objects twice */
	s = seed;
	for (i = 0; i < count; i++) {
		draw(&s, &o);
		h.bytes += o.size;
	}
	snprintf(h.master_id, sizeof(h.master_id), "snapgen-%" PRIu64, seed);
	h.created = created;
	h.objects = count;
	h.peers = 2;
	h.tenants = 3;
	w = mc_snap_writer_open(fd, &h, 0, &err);
	if (w == NULL)
		mc_die(MC_EXIT_FAIL, "%s", err.msg);

	pk = mc_snap_writer_record(w);
	msgpack_pack_map(pk, 4);
	mc_pack_kv_str(pk, "t", "meta");
	mc_pack_kv_u64(pk, "next_version", count + 1);
	mc_pack_kv_u64(pk, "next_replica_id", count * 2 + 3);
	mc_pack_kv_u64(pk, "next_peer_id", 3);
	end(w);
	for (i = 0; i < 3; i++) {
		pk = mc_snap_writer_record(w);
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "t", "tenant");
		mc_pack_kv_u64(pk, "id", i + 1);
		mc_pack_kv_str(pk, "name", tenants[i]);
		mc_pack_kv_u64(pk, "quota", 0);
		end(w);
	}
	for (i = 0; i < 2; i++) {
		char addr[64];

		snprintf(addr, sizeof(addr), "127.0.0.1:%" PRIu64, 7400 + i);
		pk = mc_snap_writer_record(w);
		msgpack_pack_map(pk, 5);
		mc_pack_kv_str(pk, "t", "peer");
		mc_pack_kv_u64(pk, "id", i + 1);
		mc_pack_kv_str(pk, "addr", addr);
		mc_pack_kv_str(pk, "host", i == 0 ? "host-a" : "host-b");
		mc_pack_kv_str(pk, "domain", "rack-1");
		end(w);
	}
	s = seed;
	for (i = 0; i < count; i++) {
		draw(&s, &o);
		pack_object(mc_snap_writer_record(w), i, &o);
		end(w);
	}
	if (mc_snap_writer_finish(w, &err) < 0)
		mc_die(MC_EXIT_FAIL, "%s", err.msg);
	if (fd != STDOUT_FILENO && close(fd) < 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s'", out);
	return MC_EXIT_OK;
}
