/*
 * Writing snapshots (msnap_write.c), for the snapshot_save call.
 */
#ifndef MASTER_MSNAP_WRITE_H
#define MASTER_MSNAP_WRITE_H

#include <stdbool.h>

#include "mc/err.h"

struct master;

/*
 * Start the child: into --snapshot-dir when in_dir (and there is one),
 * else into a nameless temporary that only a stream reply reads.
 */
int msnap_write_start(struct master *m, bool in_dir, struct mc_err *err);

#endif
