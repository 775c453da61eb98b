/*
 * mc-snapdump: print a master's snapshot file as the state it holds, one
 * line per object and one per replica, in the words of the master's
 * state-change log lines (cmd/mc-master/state.c), so a test can set it
 * beside a copy of the state rebuilt from those lines alone:
 *
 *   mc-snapdump FILE
 *
 *   object TENANT/KEY version=V size=S checksum=C type=T group=G
 *          hard_pin=0|1 lease=MS sp=MODE sp_deadline=MS sp_ttl=MS
 *   replica TENANT/KEY rep=ID peer=P tier=T state=S version=V dynamic=0|1
 *
 * Keys and names are printed as they are: the tests that use it keep
 * them printable and free of spaces. Exit 0, or 1 on a file it cannot read.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mc/snapshot.h"
#include "mc/wire.h"

/* A string or bin field, or "-" when absent or nil. */
static void
field(const msgpack_object *rec, const char *name, const char **s, int *len)
{
	const msgpack_object *o = mc_map_get(rec, name);

	*s = "-";
	*len = 1;
	if (o != NULL && o->type == MSGPACK_OBJECT_STR) {
		*s = o->via.str.ptr;
		*len = (int)o->via.str.size;
	} else if (o != NULL && o->type == MSGPACK_OBJECT_BIN) {
		*s = o->via.bin.ptr;
		*len = (int)o->via.bin.size;
	}
}

static uint64_t
u64(const msgpack_object *rec, const char *name)
{
	struct mc_err err;
	uint64_t v = 0;

	if (mc_map_u64(rec, name, &v, &err) != 1)
		v = 0;
	return v;
}

static int
flag(const msgpack_object *rec, const char *name)
{
	struct mc_err err;
	bool v = false;

	if (mc_map_bool(rec, name, &v, &err) != 1)
		v = false;
	return v;
}

static void
dump_object(const msgpack_object *rec)
{
	const msgpack_object_array *a = mc_map_array(rec, "replicas");
	const char *tenant, *key, *type, *group, *sp;
	int tl, kl, yl, gl, sl;

	field(rec, "tenant", &tenant, &tl);
	field(rec, "key", &key, &kl);
	field(rec, "type", &type, &yl);
	field(rec, "group", &group, &gl);
	field(rec, "sp_mode", &sp, &sl);
	printf("object %.*s/%.*s version=%" PRIu64 " size=%" PRIu64 " checksum=%" PRIu64
	       " type=%.*s group=%.*s hard_pin=%d lease=%" PRIu64 " sp=%.*s sp_deadline=%" PRIu64
	       " sp_ttl=%" PRIu64 "\n",
	       tl, tenant, kl, key, u64(rec, "version"), u64(rec, "size"), u64(rec, "checksum"), yl,
	       type, gl, group, flag(rec, "hard_pin"), u64(rec, "lease_deadline"), sl, sp,
	       u64(rec, "sp_deadline"), u64(rec, "sp_ttl"));
	for (uint32_t i = 0; a != NULL && i < a->size; i++) {
		const msgpack_object *r = &a->ptr[i];
		const char *tier, *state;
		int trl, stl;

		field(r, "tier", &tier, &trl);
		field(r, "state", &state, &stl);
		printf("replica %.*s/%.*s rep=%" PRIu64 " peer=%" PRIu64 " tier=%.*s state=%.*s "
		       "version=%" PRIu64 " dynamic=%d\n",
		       tl, tenant, kl, key, u64(r, "id"), u64(r, "peer"), trl, tier, stl, state,
		       u64(r, "version"), flag(r, "dynamic"));
	}
}

int
main(int argc, char **argv)
{
	struct mc_snap_header h;
	struct mc_snap_reader *r;
	const msgpack_object *rec;
	struct mc_err err;
	int fd, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: mc-snapdump FILE\n");
		return 2;
	}
	if ((fd = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0) {
		perror(argv[1]);
		return 1;
	}
	if ((r = mc_snap_reader_open(fd, &h, &err)) == NULL) {
		fprintf(stderr, "mc-snapdump: cannot read '%s': %s\n", argv[1], err.msg);
		close(fd);
		return 1;
	}
	while ((rc = mc_snap_reader_next(r, &rec, &err)) == 1)
		if (mc_obj_streq(mc_map_get(rec, "t"), "object"))
			dump_object(rec);
	mc_snap_reader_close(r);
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "mc-snapdump: cannot read '%s': %s\n", argv[1], err.msg);
		return 1;
	}
	return 0;
}
