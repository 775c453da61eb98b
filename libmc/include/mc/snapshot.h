/*
 * The snapshot file: the master's metadata at one point in time.
 *
 * Layout (documented for people in mc-snapshot(5)):
 *
 *   header   one uncompressed msgpack map:
 *            {format: "mc-snapshot", version: 1, master_id: str,
 *             created: ms, objects, peers, tenants, bytes}
 *   payload  one zstd frame whose content is a sequence of msgpack
 *            records, each a map with a "t" field naming its kind
 *            ("meta", "tenant", "peer", "object"; readers skip kinds
 *            they do not know)
 *   trailer  one uncompressed msgpack map:
 *            {records: N, checksum: XXH3-64 of the payload bytes
 *             exactly as stored (compressed),
 *             header_checksum: XXH3-64 of the header bytes as stored}
 *
 * Every record and the header/trailer pass mc_wire_check() with
 * MC_SNAP_MAX_RECORD before they are decoded. A reader reports the first
 * thing wrong in words ("truncated payload", "checksum mismatch",
 * "not an mc-snapshot file", ...); a file is good only when the trailer
 * was read and both count and checksum match.
 *
 * Files in a snapshot directory are named mc-snapshot-<created ms>.mcs
 * and written atomically (temporary file, fsync, rename, fsync of the
 * directory), so a crash never leaves a file that looks complete.
 */
#ifndef MC_SNAPSHOT_H
#define MC_SNAPSHOT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

#define MC_SNAP_FORMAT "mc-snapshot"
#define MC_SNAP_VERSION 1
#define MC_SNAP_MAX_RECORD (1u << 20)
#define MC_SNAP_SUFFIX ".mcs"

struct mc_snap_header {
	char format[32];
	uint64_t version;
	char master_id[64];
	uint64_t created; /* ms since the epoch */
	uint64_t objects, peers, tenants, bytes;
};

/* ---- writing ---- */

struct mc_snap_writer;

/*
 * Start a snapshot on fd (a file or pipe the caller owns and closes):
 * writes the header. level is the zstd level (0: default 3).
 */
struct mc_snap_writer *mc_snap_writer_open(int fd, const struct mc_snap_header *h, int level,
					   struct mc_err *err);
/*
 * Pack exactly one record (a map with "t") into the returned packer, then
 * call mc_snap_writer_end_record().
 */
msgpack_packer *mc_snap_writer_record(struct mc_snap_writer *w);
int mc_snap_writer_end_record(struct mc_snap_writer *w, struct mc_err *err);
/* Finish the payload, write the trailer, free w. */
int mc_snap_writer_finish(struct mc_snap_writer *w, struct mc_err *err);
/* Free w without finishing (the output is then invalid, as intended). */
void mc_snap_writer_abort(struct mc_snap_writer *w);
uint64_t mc_snap_writer_records(const struct mc_snap_writer *w);

/* ---- reading ---- */

struct mc_snap_reader;

/* Read and check the header from fd. */
struct mc_snap_reader *mc_snap_reader_open(int fd, struct mc_snap_header *h, struct mc_err *err);
/*
 * Next record: 1 with *rec pointing at it (valid until the next call),
 * 0 at the end once the trailer matched, -1 with err on anything wrong.
 */
int mc_snap_reader_next(struct mc_snap_reader *r, const msgpack_object **rec, struct mc_err *err);
void mc_snap_reader_close(struct mc_snap_reader *r);
/* Bytes consumed so far (for progress lines). */
uint64_t mc_snap_reader_offset(const struct mc_snap_reader *r);

/* Read a whole file: header, every record, trailer. 0 good, -1 with err. */
int mc_snap_verify_fd(int fd, struct mc_snap_header *h, uint64_t *records, struct mc_err *err);

/* ---- files and directories ---- */

/*
 * Create DIR/.mc-snapshot-XXXXXX for writing; *tmp gets its path.
 * mc_snap_commit() fsyncs and closes fd, renames tmp to final and fsyncs
 * DIR. On failure the temporary file is removed. The file stays locked
 * (flock) while fd, or a copy of it in a forked child, is open: that is
 * how mc_snap_clean_tmp() tells a live writer from a dead one.
 */
int mc_snap_create_tmp(const char *dir, char *tmp, size_t cap, struct mc_err *err);
int mc_snap_commit(int fd, const char *tmp, const char *final, struct mc_err *err);
/* DIR/mc-snapshot-<created>.mcs into buf. */
void mc_snap_path(const char *dir, uint64_t created, char *buf, size_t cap);
/*
 * The snapshot files in dir, newest first (by the created time in the
 * name). *paths is a malloc'd array of malloc'd strings (free with
 * mc_snap_list_free). A missing dir is an empty list.
 */
int mc_snap_list(const char *dir, char ***paths, size_t *n, struct mc_err *err);
void mc_snap_list_free(char **paths, size_t n);
/* Remove all but the newest keep files; *removed counts them. */
int mc_snap_prune(const char *dir, size_t keep, size_t *removed, struct mc_err *err);
/*
 * Remove the temporaries of writers that died before their rename: files
 * named exactly like mc_snap_create_tmp() names them that no writer
 * holds locked. Nothing else in dir is touched. *removed counts them.
 */
int mc_snap_clean_tmp(const char *dir, size_t *removed, struct mc_err *err);

#endif
