/*
 * The commands that only look at files: verify, ls, prune.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/json.h"
#include "mc/log.h"
#include "mc/tool.h"
#include "mc/parse.h"
#include "mc/progress.h"
#include "mc/snapshot.h"
#include "snap.h"

int
snap_open_input(const char *path, uint64_t *size)
{
	struct stat st;
	int fd;

	fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		mc_die(MC_EXIT_FAIL, "cannot open '%s': %s", path, mc_strerror(errno));
	if (fstat(fd, &st) < 0)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, mc_strerror(errno));
	if (S_ISDIR(st.st_mode))
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, mc_strerror(EISDIR));
	*size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	return fd;
}

void
snap_read_fail(const char *path, const struct mc_err *err)
{
	if (err->code == MC_ERR_PROTO || err->code == MC_ERR_CHECKSUM)
		mc_die(MC_EXIT_DATAERR, "%s: %s", path, err->msg);
	mc_die(MC_EXIT_FAIL, "%s: %s", path, err->msg);
}

static void
verify_json(const char *path, bool ok, uint64_t records, const char *error)
{
	printf("{\"file\":");
	mc_json_write_str(stdout, path, strlen(path));
	printf(",\"ok\":%s,\"records\":%" PRIu64, ok ? "true" : "false", records);
	if (error != NULL) {
		printf(",\"error\":");
		mc_json_write_str(stdout, error, strlen(error));
	}
	printf("}\n");
}

/*
 * What mc_snap_verify_fd() does, record by record, so that a long run
 * on a terminal can say how far it got.
 */
int
cmd_verify(int argc, char **argv)
{
	const char *path = argv[0];
	struct mc_err err = { 0 };
	struct mc_snap_header h;
	struct mc_snap_reader *r;
	const msgpack_object *rec;
	struct mc_progress pg;
	uint64_t size, n = 0;
	int fd, rc;

	(void)argc;
	fd = snap_open_input(path, &size);
	mc_progress_start(&pg, "verify", size);
	r = mc_snap_reader_open(fd, &h, &err);
	if (r == NULL) {
		rc = -1;
	} else {
		while ((rc = mc_snap_reader_next(r, &rec, &err)) > 0)
			if (++n % 4096 == 0)
				mc_progress_update(&pg, mc_snap_reader_offset(r), 0);
		mc_snap_reader_close(r);
	}
	mc_progress_end(&pg);
	if (fd != STDIN_FILENO)
		close(fd);
	if (sc.json)
		verify_json(path, rc == 0, n, rc == 0 ? NULL : err.msg);
	if (rc < 0)
		snap_read_fail(path, &err);
	if (!sc.json)
		printf("%s: ok, %" PRIu64 " records\n", path, n);
	return MC_EXIT_OK;
}

/* A missing DIR is an error here, unlike for the master's own listing. */
static void
need_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		mc_die(MC_EXIT_FAIL, "cannot list '%s': %s", dir, mc_strerror(errno));
	if (!S_ISDIR(st.st_mode))
		mc_die(MC_EXIT_FAIL, "cannot list '%s': %s", dir, mc_strerror(ENOTDIR));
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s != NULL ? s + 1 : path;
}

int
cmd_ls(int argc, char **argv)
{
	const char *dir = snap_dir(argc, argv);
	struct mc_err err = { 0 };
	char **paths, when[32], sz[32];
	size_t n, i;

	need_dir(dir);
	if (mc_snap_list(dir, &paths, &n, &err) < 0)
		mc_tool_fail(&err, "list snapshots", NULL);
	for (i = 0; i < n; i++) {
		const char *name = base_name(paths[i]);
		uint64_t created = strtoull(name + strlen("mc-snapshot-"), NULL, 10);
		struct stat st;

		/* a file pruned since the listing is simply gone */
		if (stat(paths[i], &st) < 0)
			continue;
		if (sc.json) {
			printf("{\"name\":");
			mc_json_write_str(stdout, name, strlen(name));
			printf(",\"path\":");
			mc_json_write_str(stdout, paths[i], strlen(paths[i]));
			printf(",\"created\":%" PRIu64 ",\"created_iso\":\"%s\",\"size\":%" PRIu64
			       "}\n",
			       created, mc_fmt_time_ms(created, when, sizeof(when)),
			       (uint64_t)st.st_size);
		} else {
			printf("%s  %9s  %s\n", mc_fmt_time_ms(created, when, sizeof(when)),
			       mc_fmt_size((uint64_t)st.st_size, sz, sizeof(sz)), name);
		}
	}
	mc_snap_list_free(paths, n);
	return MC_EXIT_OK;
}

int
cmd_prune(int argc, char **argv)
{
	const char *dir = snap_dir(argc, argv);
	struct mc_err err = { 0 };
	size_t removed = 0;

	need_dir(dir);
	if (sc.verbose) {
		char **paths;
		size_t n, i;

		if (mc_snap_list(dir, &paths, &n, &err) < 0)
			mc_tool_fail(&err, "list snapshots", NULL);
		for (i = (size_t)sc.keep; i < n; i++)
			printf("removing %s\n", paths[i]);
		mc_snap_list_free(paths, n);
	}
	if (mc_snap_prune(dir, (size_t)sc.keep, &removed, &err) < 0)
		mc_die(MC_EXIT_FAIL, "%s", err.msg);
	if (sc.json) {
		printf("{\"dir\":");
		mc_json_write_str(stdout, dir, strlen(dir));
		printf(",\"removed\":%zu,\"keep\":%d}\n", removed, sc.keep);
	}
	return MC_EXIT_OK;
}
