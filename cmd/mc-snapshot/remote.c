/*
 * The commands that talk to the master: save and restore.
 *
 * Both move a whole snapshot file over one connection as a bulk: save
 * -o reads the master's reply bulk in chunks straight into a temporary
 * file, restore hands the file to the connection as its request's bulk
 * (mc_rpcc_send_src), which its transport sends. Neither holds the
 * file in memory, and both can show how far they got.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/addr.h"
#include "mc/io.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/progress.h"
#include "mc/rpcc.h"
#include "mc/snapshot.h"
#include "mc/tool.h"
#include "mc/wire.h"
#include "snap.h"

#define CHUNK (1u << 20)

/*
 * snapshot_save {stream?, stream_only?}, one round trip; exits when it
 * fails. A stream is only streamed: the file is the caller's, and none
 * lands in the master's --snapshot-dir to count toward its --snapshot-keep.
 */
static void
call_save(struct mc_rpcc *r, bool stream, struct mc_msg *resp)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "snapshot_save");
	struct mc_err err = { 0 };

	msgpack_pack_map(pk, stream ? 2 : 0);
	if (stream) {
		mc_pack_kv_bool(pk, "stream", true);
		mc_pack_kv_bool(pk, "stream_only", true);
	}
	if (mc_rpcc_call(r, resp, &err) < 0)
		mc_tool_fail(&err, "save a snapshot", NULL);
}

/* The directory of path, for the temporary that becomes it. */
static void
dir_of(const char *path, char *buf, size_t cap)
{
	const char *s = strrchr(path, '/');

	if (s == NULL)
		snprintf(buf, cap, ".");
	else if (s == path)
		snprintf(buf, cap, "/");
	else
		snprintf(buf, cap, "%.*s", (int)(s - path), path);
}

/*
 * The reply's bulk into fd, chunk by chunk. On failure the message is
 * in err (the caller removes its temporary before exiting).
 */
static int
receive_bulk(struct mc_rpcc *r, uint64_t len, int fd, const char *dest, struct mc_err *err)
{
	struct mc_progress pg;
	uint64_t done = 0;
	char *buf = malloc(CHUNK);

	if (buf == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot save a snapshot: out of memory");
	mc_progress_start(&pg, "save", len);
	while (done < len) {
		size_t k = len - done < CHUNK ? (size_t)(len - done) : CHUNK;

		if (mc_rpcc_read_bulk(r, buf, k, err) < 0)
			break;
		if (mc_write_all(fd, buf, k) < 0) {
			mc_err_set(err, MC_ERR_SYSTEM, "cannot write '%s': %s", dest,
				   mc_strerror(errno));
			break;
		}
		done += k;
		mc_progress_update(&pg, done, 0);
	}
	mc_progress_end(&pg);
	free(buf);
	return done == len ? 0 : -1;
}

static void
print_saved(const char *path, const msgpack_object *body, uint64_t size)
{
	uint64_t objects = 0, created = 0;
	char sz[32];

	mc_map_u64(body, "objects", &objects, NULL);
	mc_map_u64(body, "created", &created, NULL);
	if (sc.json) {
		printf("{\"path\":");
		mc_json_write_str(stdout, path, strlen(path));
		printf(",\"created\":%" PRIu64 ",\"objects\":%" PRIu64 ",\"size\":%" PRIu64 "}\n",
		       created, objects, size);
		return;
	}
	printf("%s: %" PRIu64 " objects, %s\n", path, objects, mc_fmt_size(size, sz, sizeof(sz)));
}

/* save -o FILE|-: the master streams the file back as the reply's bulk. */
static int
save_stream(struct mc_rpcc *r)
{
	bool to_stdout = strcmp(sc.out, "-") == 0;
	struct mc_err err = { 0 };
	struct mc_msg resp;
	char dir[4096], tmp[4200];
	uint64_t n = 0;
	int fd;

	if (to_stdout && isatty(STDOUT_FILENO))
		mc_die(MC_EXIT_USAGE, "refusing to write a snapshot to a terminal; use -o FILE");
	call_save(r, true, &resp);
	if (!resp.has_bulk)
		mc_die(MC_EXIT_SOFTWARE, "cannot save a snapshot: %s sent no file",
		       mc_rpcc_addr(r));
	if (to_stdout) {
		if (receive_bulk(r, resp.bulk_len, STDOUT_FILENO, "stdout", &err) < 0)
			mc_tool_fail(&err, "save a snapshot", NULL);
		mc_msg_release(&resp);
		return MC_EXIT_OK;
	}
	dir_of(sc.out, dir, sizeof(dir));
	fd = mc_snap_create_tmp(dir, tmp, sizeof(tmp), &err);
	if (fd < 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", sc.out, err.msg);
	if (receive_bulk(r, resp.bulk_len, fd, sc.out, &err) < 0) {
		close(fd);
		unlink(tmp);
		mc_tool_fail(&err, "save a snapshot", NULL);
	}
	/*
	 * Check what arrived before it takes the final name: a file that
	 * looks complete must be complete.
	 */
	if (lseek(fd, 0, SEEK_SET) < 0 || mc_snap_verify_fd(fd, NULL, &n, &err) < 0) {
		close(fd);
		unlink(tmp);
		if (err.code == MC_ERR_PROTO || err.code == MC_ERR_CHECKSUM)
			mc_die(MC_EXIT_DATAERR, "the snapshot %s sent is bad: %s", mc_rpcc_addr(r),
			       err.msg);
		mc_die(MC_EXIT_FAIL, "cannot check '%s': %s", tmp, err.msg);
	}
	if (mc_snap_commit(fd, tmp, sc.out, &err) < 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", sc.out, err.msg);
	print_saved(sc.out, resp.body, resp.bulk_len);
	mc_msg_release(&resp);
	return MC_EXIT_OK;
}

int
cmd_save(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	struct mc_msg resp;
	const char *path;
	size_t plen = 0;

	(void)argc;
	(void)argv;
	if (sc.out != NULL)
		return save_stream(r);
	call_save(r, false, &resp);
	if (sc.json) {
		mc_json_write(stdout, resp.body);
		putchar('\n');
	} else if (mc_map_str(resp.body, "path", &path, &plen, NULL) == 1) {
		printf("%.*s\n", (int)plen, path);
	} else {
		mc_die(MC_EXIT_SOFTWARE, "cannot save a snapshot: %s named no file",
		       mc_rpcc_addr(r));
	}
	mc_msg_release(&resp);
	return MC_EXIT_OK;
}

/* How far a restore got, for its progress line. */
struct restore_sent {
	struct mc_progress pg;
	uint64_t moved, len;
};

/*
 * The connection wrote n more bytes. The request's header is counted
 * with the file's, a few bytes ahead; the line stops at the file's size.
 */
static void
restore_moved(void *arg, uint64_t n)
{
	struct restore_sent *s = arg;

	s->moved += n;
	mc_progress_update(&s->pg, s->moved < s->len ? s->moved : s->len, 0);
}

/*
 * The request begun, with the file's len bytes as its bulk, read from
 * fd when the connection's transport sends them (from the page cache,
 * over tcp). Nothing else of the file is read or held here.
 */
static int
send_file(struct mc_rpcc *r, int fd, uint64_t len, const char *path, struct mc_err *err)
{
	struct mc_bulk_src src = mc_bulk_src_fd(fd, 0, len);
	struct restore_sent s = { .len = len };
	struct stat st;
	int rc = 0;

	if (mc_rpcc_send_src(r, &src, err) < 0)
		return -1;
	mc_progress_start(&s.pg, "restore", len);
	mc_rpcc_on_bytes(r, restore_moved, &s);
	if (mc_rpcc_flush(r, err) < 0) {
		rc = -1;
		/* the file shrank under us: the length already went out */
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < len)
			mc_err_set(err, MC_ERR_SYSTEM,
				   "cannot read '%s': it shrank while being sent", path);
	}
	mc_rpcc_on_bytes(r, NULL, NULL);
	mc_progress_end(&s.pg);
	return rc;
}

static void restore_fail(const char *path, struct mc_err *err) __attribute__((noreturn));

static void
restore_fail(const char *path, struct mc_err *err)
{
	if (err->code == MC_ERR_EXISTS)
		mc_die(MC_EXIT_FAIL, "cannot restore '%s': the master holds objects (use --force)",
		       path);
	if (err->code == MC_ERR_PROTO)
		mc_die(MC_EXIT_DATAERR, "cannot restore '%s': %s", path, err->msg);
	mc_tool_fail(err, "restore", path);
}

int
cmd_restore(int argc, char **argv)
{
	const char *path = argv[0];
	struct mc_err err = { 0 };
	msgpack_packer *pk;
	struct mc_rpcc *r;
	struct mc_msg resp;
	struct mc_progress pg;
	struct mc_snap_header h;
	struct mc_snap_reader *rd;
	const msgpack_object *rec;
	uint64_t objects = 0, peers = 0, tenants = 0, len = 0;
	struct stat st;
	int fd, rc;

	(void)argc;
	fd = snap_open_input(path, &len);
	/* the length goes out before the bytes, so it must be known */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		mc_die(MC_EXIT_FAIL, "cannot restore '%s': not a regular file", path);
	/* a bad file is refused here, with the reason, before the master sees it */
	mc_progress_start(&pg, "verify", len);
	rd = mc_snap_reader_open(fd, &h, &err);
	rc = -1;
	if (rd != NULL) {
		uint64_t n = 0;

		while ((rc = mc_snap_reader_next(rd, &rec, &err)) > 0)
			if (++n % 4096 == 0)
				mc_progress_update(&pg, mc_snap_reader_offset(rd), 0);
		mc_snap_reader_close(rd);
	}
	mc_progress_end(&pg);
	if (rc < 0)
		snap_read_fail(path, &err);
	if (lseek(fd, 0, SEEK_SET) < 0)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, mc_strerror(errno));

	r = mc_tool_master();
	pk = mc_rpcc_begin(r, "snapshot_restore");
	msgpack_pack_map(pk, sc.force ? 2 : 1);
	mc_pack_kv_u64(pk, "len", len);
	if (sc.force)
		mc_pack_kv_bool(pk, "force", true);
	if (send_file(r, fd, len, path, &err) < 0)
		restore_fail(path, &err);
	close(fd);
	if (mc_rpcc_recv(r, &resp, &err) < 0)
		restore_fail(path, &err);
	if (mc_msg_error(&resp, &err) < 0)
		restore_fail(path, &err);
	if (sc.json) {
		mc_json_write(stdout, resp.body);
		putchar('\n');
	} else {
		mc_map_u64(resp.body, "objects", &objects, NULL);
		mc_map_u64(resp.body, "peers", &peers, NULL);
		mc_map_u64(resp.body, "tenants", &tenants, NULL);
		printf("restored %s: %" PRIu64 " objects, %" PRIu64 " peers, %" PRIu64 " tenants\n",
		       path, objects, peers, tenants);
	}
	mc_msg_release(&resp);
	return MC_EXIT_OK;
}
