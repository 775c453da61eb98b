/*
 * Loading snapshots (msnap_load.c), for --restore and the
 * snapshot_restore call.
 */
#ifndef MASTER_MSNAP_LOAD_H
#define MASTER_MSNAP_LOAD_H

#include <stdint.h>

#include "mc/err.h"
#include "mc/snapshot.h"

struct master;

/* What a load restored. */
struct restore_out {
	uint64_t objects, skipped, peers, tenants, millis;
	struct mc_snap_header h;
};

/*
 * Load the snapshot on fd into m, all or nothing. On failure m is
 * untouched and err says what was wrong with the file.
 */
int msnap_load_fd(struct master *m, int fd, struct restore_out *out, struct mc_err *err);
/* The log line of a restore from what (a file's path, a bulk). */
void msnap_log_restored(const struct master *m, const char *what, const struct restore_out *out);

/*
 * --restore at start-up. Returns an exit status to stop with, or 0 to
 * go on serving (restored, or empty when nothing could be loaded).
 */
int msnap_restore_startup(struct master *m);

#endif
