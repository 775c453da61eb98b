/*
 * The snapshot codec: round trips, every way a file can be cut or
 * corrupted, other formats, pipes, and the directory helpers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "mc/checksum.h"
#include "mc/snapshot.h"
#include "mc/wire.h"
#include "tap.h"

static char tmpdir[256];
static char scratch[300]; /* one file rewritten by every byte-level test */

static const char *tiers[] = { "dram", "ssd" };
static const char *types[] = { "kv", "tensor", "hidden", "general" };

static void
fill_header(struct mc_snap_header *h, uint64_t created)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->master_id, sizeof(h->master_id), "master-under-test");
	h->created = created;
	h->objects = 7;
	h->peers = 2;
	h->tenants = 3;
	h->bytes = 123456789;
}

static uint64_t
obj_checksum(uint64_t i)
{
	return i * 0x9E3779B97F4A7C15ull;
}

/* Record i of the synthetic stream: meta first, then a mix of kinds. */
static const char *
kind_of(uint64_t i)
{
	if (i == 0)
		return "meta";
	if (i % 10 == 1)
		return "tenant";
	if (i % 10 == 2)
		return "peer";
	return "object";
}

static void
pack_record(msgpack_packer *pk, uint64_t i)
{
	const char *k = kind_of(i);
	char buf[64];
	unsigned r, nrep;

	if (strcmp(k, "meta") == 0) {
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "t", "meta");
		mc_pack_kv_u64(pk, "next_version", 1000000);
		mc_pack_kv_u64(pk, "next_replica_id", 2000000);
		mc_pack_kv_u64(pk, "next_peer_id", 17);
		return;
	}
	if (strcmp(k, "tenant") == 0) {
		msgpack_pack_map(pk, 4);
		mc_pack_kv_str(pk, "t", "tenant");
		mc_pack_kv_u64(pk, "id", i);
		snprintf(buf, sizeof(buf), "tenant-%" PRIu64, i);
		mc_pack_kv_str(pk, "name", buf);
		mc_pack_kv_u64(pk, "quota", i * 4096);
		return;
	}
	if (strcmp(k, "peer") == 0) {
		msgpack_pack_map(pk, 5);
		mc_pack_kv_str(pk, "t", "peer");
		mc_pack_kv_u64(pk, "id", i);
		snprintf(buf, sizeof(buf), "unix:/run/peer-%" PRIu64 ".sock", i);
		mc_pack_kv_str(pk, "addr", buf);
		mc_pack_kv_str(pk, "host", "host-a");
		mc_pack_kv_str(pk, "domain", "rack-1");
		return;
	}
	msgpack_pack_map(pk, 11);
	mc_pack_kv_str(pk, "t", "object");
	snprintf(buf, sizeof(buf), "tenant-%" PRIu64, i % 7);
	mc_pack_kv_str(pk, "tenant", buf);
	/* binary keys with a NUL inside must survive */
	snprintf(buf, sizeof(buf), "key/%" PRIu64 "#x", i);
	buf[strlen(buf) - 2] = '\0';
	mc_pack_key(pk, "key");
	msgpack_pack_bin(pk, strlen(buf) + 2);
	msgpack_pack_bin_body(pk, buf, strlen(buf) + 2);
	mc_pack_kv_u64(pk, "size", i * 1000 + 1);
	mc_pack_kv_u64(pk, "version", i + 1);
	mc_pack_kv_u64(pk, "checksum", obj_checksum(i));
	mc_pack_kv_str(pk, "type", types[i % 4]);
	mc_pack_key(pk, "group");
	if (i % 5 == 0) {
		msgpack_pack_nil(pk);
	} else {
		snprintf(buf, sizeof(buf), "g%" PRIu64, i % 5);
		mc_pack_cstr(pk, buf);
	}
	mc_pack_kv_bool(pk, "hard_pin", i % 3 == 0);
	mc_pack_kv_str(pk, "sp_mode", i % 2 ? "active" : "disabled");
	nrep = 1 + (unsigned)(i % 2);
	mc_pack_key(pk, "replicas");
	msgpack_pack_array(pk, nrep);
	for (r = 0; r < nrep; r++) {
		msgpack_pack_map(pk, 6);
		mc_pack_kv_u64(pk, "id", i * 2 + r);
		mc_pack_kv_u64(pk, "peer", r + 1);
		mc_pack_kv_str(pk, "tier", tiers[r]);
		mc_pack_kv_str(pk, "state", "complete");
		mc_pack_kv_u64(pk, "version", i + 1);
		mc_pack_kv_bool(pk, "dynamic", r == 1);
	}
}

static bool
u64_is(const msgpack_object *m, const char *k, uint64_t want)
{
	uint64_t v = 0;

	return mc_map_u64(m, k, &v, NULL) == 1 && v == want;
}

static bool
bool_is(const msgpack_object *m, const char *k, bool want)
{
	bool v = !want;

	return mc_map_bool(m, k, &v, NULL) == 1 && v == want;
}

static bool
str_is(const msgpack_object *m, const char *k, const char *want)
{
	const msgpack_object *v = mc_map_get(m, k);

	return v != NULL && mc_obj_streq(v, want);
}

/* Every field of record i as pack_record wrote it. */
static bool
record_matches(const msgpack_object *m, uint64_t i)
{
	const char *k = kind_of(i);
	const msgpack_object_array *reps;
	const msgpack_object *key, *group;
	char buf[64];
	unsigned r;

	if (!str_is(m, "t", k))
		return false;
	if (strcmp(k, "meta") == 0)
		return u64_is(m, "next_version", 1000000) &&
		       u64_is(m, "next_replica_id", 2000000) && u64_is(m, "next_peer_id", 17);
	if (strcmp(k, "tenant") == 0) {
		snprintf(buf, sizeof(buf), "tenant-%" PRIu64, i);
		return u64_is(m, "id", i) && str_is(m, "name", buf) && u64_is(m, "quota", i * 4096);
	}
	if (strcmp(k, "peer") == 0) {
		snprintf(buf, sizeof(buf), "unix:/run/peer-%" PRIu64 ".sock", i);
		return u64_is(m, "id", i) && str_is(m, "addr", buf) &&
		       str_is(m, "host", "host-a") && str_is(m, "domain", "rack-1");
	}
	snprintf(buf, sizeof(buf), "tenant-%" PRIu64, i % 7);
	if (!str_is(m, "tenant", buf))
		return false;
	snprintf(buf, sizeof(buf), "key/%" PRIu64 "#x", i);
	buf[strlen(buf) - 2] = '\0';
	key = mc_map_get(m, "key");
	if (key == NULL || key->type != MSGPACK_OBJECT_BIN ||
	    key->via.bin.size != strlen(buf) + 2 ||
	    memcmp(key->via.bin.ptr, buf, strlen(buf) + 2) != 0)
		return false;
	if (!u64_is(m, "size", i * 1000 + 1) || !u64_is(m, "version", i + 1) ||
	    !u64_is(m, "checksum", obj_checksum(i)) || !str_is(m, "type", types[i % 4]) ||
	    !bool_is(m, "hard_pin", i % 3 == 0) ||
	    !str_is(m, "sp_mode", i % 2 ? "active" : "disabled"))
		return false;
	group = mc_map_get(m, "group");
	if (group == NULL)
		return false;
	if (i % 5 == 0) {
		if (group->type != MSGPACK_OBJECT_NIL)
			return false;
	} else {
		snprintf(buf, sizeof(buf), "g%" PRIu64, i % 5);
		if (!mc_obj_streq(group, buf))
			return false;
	}
	reps = mc_map_array(m, "replicas");
	if (reps == NULL || reps->size != 1 + i % 2)
		return false;
	for (r = 0; r < reps->size; r++) {
		const msgpack_object *p = &reps->ptr[r];

		if (!u64_is(p, "id", i * 2 + r) || !u64_is(p, "peer", r + 1) ||
		    !str_is(p, "tier", tiers[r]) || !str_is(p, "state", "complete") ||
		    !u64_is(p, "version", i + 1) || !bool_is(p, "dynamic", r == 1))
			return false;
	}
	return true;
}

/* Write a snapshot of n synthetic records to fd. */
static int
write_snapshot(int fd, uint64_t n, uint64_t created, struct mc_err *err)
{
	struct mc_snap_header h;
	struct mc_snap_writer *w;
	uint64_t i;

	fill_header(&h, created);
	w = mc_snap_writer_open(fd, &h, 0, err);
	if (w == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		pack_record(mc_snap_writer_record(w), i);
		if (mc_snap_writer_end_record(w, err) < 0) {
			mc_snap_writer_abort(w);
			return -1;
		}
	}
	return mc_snap_writer_finish(w, err);
}

/* The whole of a file in memory. */
static char *
slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (buf != NULL && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static int
put_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, buf, len) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

/* Verify the bytes buf[0..len) as a file; 0 good, -1 with err. */
static int
verify_bytes(const void *buf, size_t len, struct mc_err *err, uint64_t *records)
{
	uint64_t dummy;
	int fd, rc;

	if (put_file(scratch, buf, len) < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot write scratch file");
	fd = open(scratch, O_RDONLY);
	if (fd < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot open scratch file");
	rc = mc_snap_verify_fd(fd, NULL, records ? records : &dummy, err);
	close(fd);
	return rc;
}

static void
test_round_trip(void)
{
	struct mc_snap_header h, got;
	struct mc_snap_reader *r;
	const msgpack_object *rec;
	struct mc_err err = { 0 };
	char path[300];
	uint64_t n = 0, bad = 0, kinds[4] = { 0 };
	int fd, rc;

	snprintf(path, sizeof(path), "%s/round.mcs", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	rc = write_snapshot(fd, 10000, 1700000000123ull, &err);
	close(fd);
	TAP_OK(rc == 0, "writer: 10k records of four kinds are written (%s)", err.msg);

	fill_header(&h, 1700000000123ull);
	fd = open(path, O_RDONLY);
	r = mc_snap_reader_open(fd, &got, &err);
	TAP_OK(r != NULL, "reader: the header of a fresh file is accepted (%s)", err.msg);
	if (r == NULL) {
		close(fd);
		return;
	}
	TAP_OK(strcmp(got.format, MC_SNAP_FORMAT) == 0 && got.version == MC_SNAP_VERSION &&
		       strcmp(got.master_id, h.master_id) == 0 && got.created == h.created &&
		       got.objects == h.objects && got.peers == h.peers &&
		       got.tenants == h.tenants && got.bytes == h.bytes,
	       "reader: every header field reads back as written");
	while ((rc = mc_snap_reader_next(r, &rec, &err)) == 1) {
		if (!record_matches(rec, n))
			bad++;
		if (mc_obj_streq(mc_map_get(rec, "t"), "meta"))
			kinds[0]++;
		else if (mc_obj_streq(mc_map_get(rec, "t"), "tenant"))
			kinds[1]++;
		else if (mc_obj_streq(mc_map_get(rec, "t"), "peer"))
			kinds[2]++;
		else
			kinds[3]++;
		n++;
	}
	TAP_OK(rc == 0, "reader: the stream ends cleanly with the trailer matched (%s)", err.msg);
	TAP_OK(n == 10000 && bad == 0,
	       "reader: all 10k records come back in order, field for "
	       "field (%" PRIu64 " read, %" PRIu64 " differ)",
	       n, bad);
	TAP_OK(kinds[0] == 1 && kinds[1] == 1000 && kinds[2] == 1000 && kinds[3] == 7999,
	       "reader: each kind appears as often as written");
	TAP_OK(mc_snap_reader_next(r, &rec, &err) == 0, "reader: next after the end stays at 0");
	{
		struct stat st;

		TAP_OK(fstat(fd, &st) == 0 && mc_snap_reader_offset(r) == (uint64_t)st.st_size,
		       "reader: offset counts every byte of the file at the end");
	}
	mc_snap_reader_close(r);
	close(fd);
}

static void
test_empty(void)
{
	struct mc_snap_header h;
	struct mc_err err = { 0 };
	uint64_t n = 99;
	int fd, rc;

	fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	rc = write_snapshot(fd, 0, 42, &err);
	close(fd);
	TAP_OK(rc == 0, "writer: a snapshot of 0 records is written");
	fd = open(scratch, O_RDONLY);
	rc = mc_snap_verify_fd(fd, &h, &n, &err);
	close(fd);
	TAP_OK(rc == 0 && n == 0 && h.created == 42,
	       "verify: an empty snapshot is good with 0 records (%s)", err.msg);
}

/* A small good file in memory, and where its payload and trailer begin. */
struct small {
	char *buf;
	size_t len, payload, trailer;
};

static int
make_small(struct small *s, uint64_t n)
{
	struct mc_err err = { 0 };
	const char *why;
	size_t hl = 0, fl;
	int fd;

	memset(s, 0, sizeof(*s));
	fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write_snapshot(fd, n, 1000, &err) < 0)
		return -1;
	close(fd);
	s->buf = slurp(scratch, &s->len);
	if (s->buf == NULL || mc_wire_check(s->buf, s->len, s->len, &hl, &why) != MC_WIRE_WHOLE)
		return -1;
	fl = ZSTD_findFrameCompressedSize(s->buf + hl, s->len - hl);
	if (ZSTD_isError(fl))
		return -1;
	s->payload = hl;
	s->trailer = hl + fl;
	return 0;
}

static void
test_truncation(void)
{
	struct mc_err err;
	struct small s;
	size_t i, failed = 0, named = 0, tr_payload = 0, tr_trailer = 0;

	if (make_small(&s, 40) < 0) {
		TAP_OK(0, "truncation: cannot build the sample file");
		return;
	}
	for (i = 0; i < s.len; i++) {
		memset(&err, 0, sizeof(err));
		if (verify_bytes(s.buf, i, &err, NULL) < 0)
			failed++;
		if (err.msg[0] != '\0')
			named++;
		if (strcmp(err.msg, "truncated payload") == 0)
			tr_payload++;
		if (strcmp(err.msg, "truncated trailer") == 0)
			tr_trailer++;
	}
	TAP_OK(failed == s.len && named == s.len,
	       "verify: every one of %zu truncation points fails with a reason", s.len);
	TAP_OK(tr_payload > 0 && tr_trailer == s.len - s.trailer,
	       "verify: a cut in the payload says truncated payload, in the trailer truncated "
	       "trailer");
	memset(&err, 0, sizeof(err));
	verify_bytes(s.buf, 0, &err, NULL);
	TAP_OK(strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: an empty file is not an mc-snapshot file");
	memset(&err, 0, sizeof(err));
	verify_bytes(s.buf, s.payload - 3, &err, NULL);
	TAP_OK(strcmp(err.msg, "truncated header") == 0,
	       "verify: a cut inside the header says truncated header (%s)", err.msg);
	free(s.buf);
}

static void
test_flips(void)
{
	struct mc_err err;
	struct small s;
	size_t i, ok = 0, worded = 0, n;
	char *fmt;

	if (make_small(&s, 40) < 0) {
		TAP_OK(0, "flips: cannot build the sample file");
		return;
	}
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(s.buf, s.len, &err, NULL) == 0, "verify: the unflipped file is good");

	/* header: the format name, the version, the map's size */
	fmt = memmem(s.buf, s.payload, "mc-snapshot", 11);
	fmt[3] ^= 0x20;
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(s.buf, s.len, &err, NULL) < 0 &&
		       strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: a flipped byte in the header's format name is not an mc-snapshot file");
	fmt[3] ^= 0x20;
	fmt = memmem(s.buf, s.payload, "version", 7);
	fmt[7] ^= 0x02; /* fixint 1 -> 3 */
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(s.buf, s.len, &err, NULL) < 0 &&
		       strcmp(err.msg, "unsupported snapshot version 3") == 0,
	       "verify: a flipped version byte is an unsupported version (%s)", err.msg);
	fmt[7] ^= 0x02;
	n = 0;
	for (i = 0; i < s.payload; i++) {
		s.buf[i] ^= 0x01;
		memset(&err, 0, sizeof(err));
		if (verify_bytes(s.buf, s.len, &err, NULL) < 0 && err.msg[0] != '\0')
			n++;
		s.buf[i] ^= 0x01;
	}
	TAP_OK(n == s.payload, "verify: a flipped bit anywhere in the header fails (%zu of %zu)", n,
	       s.payload);
	fmt = memmem(s.buf, s.payload, "master-under-test", 17);
	fmt[0] ^= 0x01;
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(s.buf, s.len, &err, NULL) < 0 &&
		       strcmp(err.msg, "header checksum mismatch") == 0,
	       "verify: a flip in a header value is a header checksum mismatch");
	fmt[0] ^= 0x01;

	/* payload: every byte */
	for (i = s.payload; i < s.trailer; i++) {
		s.buf[i] ^= 0x55;
		memset(&err, 0, sizeof(err));
		if (verify_bytes(s.buf, s.len, &err, NULL) == 0)
			ok++;
		/* a flip that lengthens a block makes the frame run out of bytes */
		if (strcmp(err.msg, "checksum mismatch") == 0 ||
		    strncmp(err.msg, "bad payload: ", 13) == 0 ||
		    strcmp(err.msg, "truncated payload") == 0)
			worded++;
		s.buf[i] ^= 0x55;
	}
	TAP_OK(ok == 0, "verify: no flipped payload byte of %zu passes", s.trailer - s.payload);
	TAP_OK(worded == s.trailer - s.payload,
	       "verify: a flipped payload byte is a checksum mismatch, a zstd error or a "
	       "frame cut short (%zu of %zu)",
	       worded, s.trailer - s.payload);

	/* trailer: every byte */
	ok = 0;
	for (i = s.trailer; i < s.len; i++) {
		s.buf[i] ^= 0x55;
		memset(&err, 0, sizeof(err));
		if (verify_bytes(s.buf, s.len, &err, NULL) == 0 || err.msg[0] == '\0')
			ok++;
		s.buf[i] ^= 0x55;
	}
	TAP_OK(ok == 0, "verify: every flipped trailer byte fails with a reason");
	free(s.buf);
}

/* Good payload, hand-made trailer. */
static void
test_trailer_checks(void)
{
	struct mc_err err = { 0 };
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct small s;
	uint64_t sum, hsum;

	if (make_small(&s, 40) < 0) {
		TAP_OK(0, "trailer: cannot build the sample file");
		return;
	}
	sum = mc_checksum(s.buf + s.payload, s.trailer - s.payload);
	hsum = mc_checksum(s.buf, s.payload);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&sb, s.buf, s.trailer);
	msgpack_pack_map(&pk, 3);
	mc_pack_kv_u64(&pk, "records", 41);
	mc_pack_kv_u64(&pk, "checksum", sum);
	mc_pack_kv_u64(&pk, "header_checksum", hsum);
	TAP_OK(verify_bytes(sb.data, sb.size, &err, NULL) < 0 &&
		       strcmp(err.msg, "record count mismatch: trailer says 41, read 40") == 0,
	       "verify: a trailer count that disagrees is a record count mismatch (%s)", err.msg);
	msgpack_sbuffer_clear(&sb);

	msgpack_sbuffer_write(&sb, s.buf, s.len);
	msgpack_sbuffer_write(&sb, "\n", 1);
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(sb.data, sb.size, &err, NULL) < 0 &&
		       strcmp(err.msg, "trailing bytes after the trailer") == 0,
	       "verify: one byte after the trailer is trailing bytes after the trailer");
	msgpack_sbuffer_clear(&sb);

	msgpack_sbuffer_write(&sb, s.buf, s.trailer);
	msgpack_pack_map(&pk, 3);
	mc_pack_kv_u64(&pk, "records", 40);
	mc_pack_kv_u64(&pk, "checksum", sum ^ 1);
	mc_pack_kv_u64(&pk, "header_checksum", hsum);
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(sb.data, sb.size, &err, NULL) < 0 &&
		       strcmp(err.msg, "checksum mismatch") == 0,
	       "verify: a trailer checksum that disagrees is a checksum mismatch");
	msgpack_sbuffer_destroy(&sb);
	free(s.buf);
}

/* A frame holding exactly the given record bytes, with a correct trailer. */
static int
verify_payload(const void *recs, size_t len, struct mc_err *err)
{
	struct small s;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t cap = ZSTD_compressBound(len), fl;
	char *frame = malloc(cap);
	int rc = -1;

	if (frame == NULL || make_small(&s, 0) < 0) {
		free(frame);
		return mc_err_set(err, MC_ERR_SYSTEM, "setup failed");
	}
	fl = ZSTD_compress(frame, cap, recs, len, 3);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&sb, s.buf, s.payload);
	msgpack_sbuffer_write(&sb, frame, fl);
	msgpack_pack_map(&pk, 3);
	mc_pack_kv_u64(&pk, "records", 1);
	mc_pack_kv_u64(&pk, "checksum", mc_checksum(frame, fl));
	mc_pack_kv_u64(&pk, "header_checksum", mc_checksum(s.buf, s.payload));
	rc = verify_bytes(sb.data, sb.size, err, NULL);
	msgpack_sbuffer_destroy(&sb);
	free(frame);
	free(s.buf);
	return rc;
}

static void
test_bad_records(void)
{
	struct mc_err err = { 0 };
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct mc_snap_header h;
	struct mc_snap_writer *w;
	unsigned char liar[] = { 0x81, 0xa1, 't', 0xdb, 0x7f, 0xff, 0xff, 0xff };
	int fd;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	mc_pack_kv_u64(&pk, "x", 1);
	TAP_OK(verify_payload(sb.data, sb.size, &err) < 0 &&
		       strcmp(err.msg, "bad record 1: not a map with a kind") == 0,
	       "verify: a record without a \"t\" string is refused (%s)", err.msg);
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_array(&pk, 0);
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_payload(sb.data, sb.size, &err) < 0 &&
		       strcmp(err.msg, "bad record 1: not a map with a kind") == 0,
	       "verify: a record that is not a map is refused");
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_payload(liar, sizeof(liar), &err) < 0 &&
		       strncmp(err.msg, "bad record 1: ", 14) == 0,
	       "verify: a record declaring a 2 GiB string is refused before any allocation "
	       "(%s)",
	       err.msg);
	msgpack_sbuffer_destroy(&sb);

	fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fill_header(&h, 1);
	w = mc_snap_writer_open(fd, &h, 1, &err);
	msgpack_pack_array(mc_snap_writer_record(w), 0);
	TAP_OK(mc_snap_writer_end_record(w, &err) < 0, "writer: a record that is not a map is "
						       "refused");
	msgpack_pack_map(mc_snap_writer_record(w), 1);
	mc_pack_key(mc_snap_writer_record(w), "t");
	TAP_OK(mc_snap_writer_end_record(w, &err) < 0,
	       "writer: a record that is not one whole object is refused");
	{
		msgpack_packer *p = mc_snap_writer_record(w);
		static char big[MC_SNAP_MAX_RECORD];

		msgpack_pack_map(p, 2);
		mc_pack_kv_str(p, "t", "blob");
		mc_pack_key(p, "b");
		msgpack_pack_bin(p, sizeof(big));
		msgpack_pack_bin_body(p, big, sizeof(big));
		TAP_OK(mc_snap_writer_end_record(w, &err) < 0,
		       "writer: a record over MC_SNAP_MAX_RECORD is refused");
	}
	msgpack_pack_map(mc_snap_writer_record(w), 1);
	mc_pack_kv_str(mc_snap_writer_record(w), "t", "meta");
	TAP_OK(mc_snap_writer_end_record(w, &err) == 0 && mc_snap_writer_records(w) == 1,
	       "writer: refused records leave no trace; the next good one counts");
	TAP_OK(mc_snap_writer_finish(w, &err) == 0, "writer: finishes after refusals");
	close(fd);
	fd = open(scratch, O_RDONLY);
	{
		uint64_t n = 0;

		TAP_OK(mc_snap_verify_fd(fd, NULL, &n, &err) == 0 && n == 1,
		       "verify: only the good record is in the file");
	}
	close(fd);
}

static void
test_other_formats(void)
{
	static const unsigned char png[] = { 0x89, 'P', 'N', 'G',  0x0d, 0x0a, 0x1a, 0x0a,
					     0,	   0,	0,   0x0d, 'I',	 'H',  'D',  'R',
					     0,	   0,	0,   0x10, 0,	 0,    0,    0x10,
					     8,	   6,	0,   0,	   0,	 0x1f, 0xf3, 0xff };
	static const char json[] = "{\"format\":\"mc-snapshot\",\"version\":1}\n";
	struct mc_err err;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct small s;

	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(png, 8, &err, NULL) < 0 &&
		       strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: a PNG signature is not an mc-snapshot file");
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(png, sizeof(png), &err, NULL) < 0 &&
		       strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: a PNG header is not an mc-snapshot file (%s)", err.msg);
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(json, strlen(json), &err, NULL) < 0 &&
		       strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: a JSON line is not an mc-snapshot file");
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes("", 0, &err, NULL) < 0 &&
		       strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: an empty file is not an mc-snapshot file");

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	mc_pack_kv_str(&pk, "format", "mc-plan");
	mc_pack_kv_u64(&pk, "version", 1);
	memset(&err, 0, sizeof(err));
	TAP_OK(verify_bytes(sb.data, sb.size, &err, NULL) < 0 &&
		       strcmp(err.msg, "not an mc-snapshot file") == 0,
	       "verify: another mc format's header is not an mc-snapshot file");
	msgpack_sbuffer_clear(&sb);

	/* a version 2 header in front of a good payload */
	if (make_small(&s, 3) == 0) {
		msgpack_pack_map(&pk, 2);
		mc_pack_kv_str(&pk, "format", "mc-snapshot");
		mc_pack_kv_u64(&pk, "version", 2);
		msgpack_sbuffer_write(&sb, s.buf + s.payload, s.len - s.payload);
		memset(&err, 0, sizeof(err));
		TAP_OK(verify_bytes(sb.data, sb.size, &err, NULL) < 0 &&
			       strcmp(err.msg, "unsupported snapshot version 2") == 0,
		       "verify: a version 2 file is an unsupported snapshot version 2");
		free(s.buf);
	}
	msgpack_sbuffer_destroy(&sb);
}

static void
test_pipe(void)
{
	struct mc_err err = { 0 };
	struct mc_snap_header h;
	uint64_t n = 0;
	int p[2], st = -1, rc;
	pid_t pid;

	if (pipe(p) < 0) {
		TAP_OK(0, "pipe: cannot create a pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(write_snapshot(p[1], 10000, 77, &err) == 0 ? 0 : 1);
	}
	close(p[1]);
	rc = mc_snap_verify_fd(p[0], &h, &n, &err);
	close(p[0]);
	waitpid(pid, &st, 0);
	TAP_OK(rc == 0 && n == 10000 && h.created == 77 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "pipe: a snapshot written into a pipe verifies from its other end (%s)", err.msg);
}

static bool
exists(const char *dir, const char *name)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void
test_list_prune(void)
{
	static const char *names[] = { "mc-snapshot-100.mcs",	"mc-snapshot-2000.mcs",
				       "mc-snapshot-30.mcs",	"mc-snapshot-999.mcs",
				       ".mc-snapshot-AbC123",	"mc-snapshot-abc.mcs",
				       "mc-snapshot-5.mcs.bak", "notes.txt",
				       "mc-snapshot-.mcs" };
	struct mc_err err = { 0 };
	char dir[300], missing[320], **paths = NULL;
	size_t n = 0, removed = 99, i;

	snprintf(dir, sizeof(dir), "%s/list", tmpdir);
	mkdir(dir, 0755);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[600];

		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		put_file(p, "x", 1);
	}
	TAP_OK(mc_snap_list(dir, &paths, &n, &err) == 0 && n == 4,
	       "list: only mc-snapshot-<digits>.mcs files are listed (%zu)", n);
	TAP_OK(n == 4 && ends_with(paths[0], "/mc-snapshot-2000.mcs") &&
		       ends_with(paths[1], "/mc-snapshot-999.mcs") &&
		       ends_with(paths[2], "/mc-snapshot-100.mcs") &&
		       ends_with(paths[3], "/mc-snapshot-30.mcs"),
	       "list: newest first by the number, not by the name's text");
	TAP_OK(n > 0 && strncmp(paths[0], dir, strlen(dir)) == 0,
	       "list: paths include the directory");
	mc_snap_list_free(paths, n);

	TAP_OK(mc_snap_prune(dir, 2, &removed, &err) == 0 && removed == 2,
	       "prune: keep 2 of 4 removes 2");
	TAP_OK(exists(dir, "mc-snapshot-2000.mcs") && exists(dir, "mc-snapshot-999.mcs") &&
		       !exists(dir, "mc-snapshot-100.mcs") && !exists(dir, "mc-snapshot-30.mcs"),
	       "prune: the newest files stay, the oldest go");
	TAP_OK(exists(dir, ".mc-snapshot-AbC123") && exists(dir, "notes.txt") &&
		       exists(dir, "mc-snapshot-abc.mcs") && exists(dir, "mc-snapshot-5.mcs.bak"),
	       "prune: other files and temporaries are never touched");
	TAP_OK(mc_snap_prune(dir, 5, &removed, &err) == 0 && removed == 0,
	       "prune: keeping more than there are removes nothing");
	TAP_OK(mc_snap_prune(dir, 0, &removed, &err) == 0 && removed == 2 &&
		       !exists(dir, "mc-snapshot-2000.mcs"),
	       "prune: keep 0 removes every snapshot");

	snprintf(missing, sizeof(missing), "%s/nope", tmpdir);
	paths = (char **)1;
	TAP_OK(mc_snap_list(missing, &paths, &n, &err) == 0 && n == 0,
	       "list: a missing directory is an empty list");
	mc_snap_list_free(paths, n);
	{
		char p[400];

		mc_snap_path("/var/lib/mc", 1700000000000ull, p, sizeof(p));
		TAP_OK(strcmp(p, "/var/lib/mc/mc-snapshot-1700000000000.mcs") == 0,
		       "path: DIR/mc-snapshot-<created>.mcs");
	}
}

static void
test_commit(void)
{
	struct mc_err err = { 0 };
	char dir[300], tmp[400], final[400];
	struct dirent *de;
	struct stat st;
	uint64_t n = 0;
	int fd, leftovers = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/commit", tmpdir);
	mkdir(dir, 0755);
	fd = mc_snap_create_tmp(dir, tmp, sizeof(tmp), &err);
	TAP_OK(fd >= 0 && strncmp(tmp, dir, strlen(dir)) == 0 && strstr(tmp, "/.mc-snapshot-"),
	       "create_tmp: a hidden temporary in the directory (%s)", tmp);
	TAP_OK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC),
	       "create_tmp: the descriptor is close-on-exec");
	write_snapshot(fd, 500, 1234, &err);
	mc_snap_path(dir, 1234, final, sizeof(final));
	TAP_OK(mc_snap_commit(fd, tmp, final, &err) == 0, "commit: succeeds (%s)", err.msg);
	TAP_OK(access(tmp, F_OK) < 0 && stat(final, &st) == 0 && (st.st_mode & 0777) == 0644,
	       "commit: the temporary is gone and the final file is 0644");
	d = opendir(dir);
	while (d != NULL && (de = readdir(d)) != NULL)
		if (strncmp(de->d_name, ".mc-snapshot-", 13) == 0)
			leftovers++;
	if (d != NULL)
		closedir(d);
	TAP_OK(leftovers == 0, "commit: no temporary is left behind");
	fd = open(final, O_RDONLY);
	TAP_OK(mc_snap_verify_fd(fd, NULL, &n, &err) == 0 && n == 500,
	       "commit: the final file is complete and verifies");
	close(fd);

	/* a failed commit removes its temporary */
	fd = mc_snap_create_tmp(dir, tmp, sizeof(tmp), &err);
	snprintf(final, sizeof(final), "%s/no-such-dir/x.mcs", dir);
	TAP_OK(mc_snap_commit(fd, tmp, final, &err) < 0 && access(tmp, F_OK) < 0,
	       "commit: a failed rename removes the temporary");
	TAP_OK(mc_snap_create_tmp("/nonexistent-dir-mc", tmp, sizeof(tmp), &err) < 0 &&
		       err.msg[0] != '\0',
	       "create_tmp: a missing directory fails with a reason");
}

static void
test_clean_tmp(void)
{
	static const char *others[] = { ".mc-snapshot-AbC1234", ".mc-snapshot-Ab-123",
					"mc-snapshot-1.mcs", "notes.txt", "target" };
	struct mc_err err = { 0 };
	char dir[300], live[400], held[400], p[600];
	size_t removed = 99, i;
	int fd, hfd, go[2];
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/clean", tmpdir);
	mkdir(dir, 0755);
	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, others[i]);
		put_file(p, "x", 1);
	}
	snprintf(p, sizeof(p), "%s/.mc-snapshot-AbC123", dir);
	put_file(p, "x", 1);
	snprintf(p, sizeof(p), "%s/.mc-snapshot-dirXYZ", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/.mc-snapshot-link01", dir);
	TAP_OK(symlink("target", p) == 0, "clean_tmp: set up a link named like a temporary");

	/* one writer here, one in a forked child that holds the only copy of its fd */
	fd = mc_snap_create_tmp(dir, live, sizeof(live), &err);
	hfd = mc_snap_create_tmp(dir, held, sizeof(held), &err);
	TAP_OK(fd >= 0 && hfd >= 0 && pipe(go) == 0, "clean_tmp: two writers started");
	pid = fork();
	if (pid == 0) {
		char c;

		close(go[1]);
		_exit(read(go[0], &c, 1) < 0);
	}
	close(hfd);
	close(go[0]);

	TAP_OK(mc_snap_clean_tmp(dir, &removed, &err) == 0 && removed == 1,
	       "clean_tmp: only the dead writer's temporary goes (%zu removed)", removed);
	TAP_OK(!exists(dir, ".mc-snapshot-AbC123") && access(live, F_OK) == 0 &&
		       access(held, F_OK) == 0,
	       "clean_tmp: files a writer or its child still holds stay");
	TAP_OK(exists(dir, ".mc-snapshot-AbC1234") && exists(dir, ".mc-snapshot-Ab-123") &&
		       exists(dir, "mc-snapshot-1.mcs") && exists(dir, "notes.txt") &&
		       exists(dir, ".mc-snapshot-dirXYZ") && exists(dir, ".mc-snapshot-link01") &&
		       exists(dir, "target"),
	       "clean_tmp: other names, a directory and a link (and its target) stay");

	/* the child dies: its lock goes with it */
	close(go[1]);
	waitpid(pid, NULL, 0);
	close(fd);
	TAP_OK(mc_snap_clean_tmp(dir, &removed, &err) == 0 && removed == 2 &&
		       access(live, F_OK) < 0 && access(held, F_OK) < 0,
	       "clean_tmp: once their writers are gone, their temporaries go");
	snprintf(p, sizeof(p), "%s/nope", tmpdir);
	TAP_OK(mc_snap_clean_tmp(p, &removed, &err) == 0 && removed == 0,
	       "clean_tmp: a missing directory has nothing to clean");
}

static void
rm_tree(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char p[600];

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

int
main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/mc-test-snapshot.XXXXXX",
		 base != NULL && *base ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(scratch, sizeof(scratch), "%s/scratch.mcs", tmpdir);
	test_round_trip();
	test_empty();
	test_truncation();
	test_flips();
	test_trailer_checks();
	test_bad_records();
	test_other_formats();
	test_pipe();
	test_list_prune();
	test_commit();
	test_clean_tmp();
	rm_tree(tmpdir);
	return tap_done();
}
