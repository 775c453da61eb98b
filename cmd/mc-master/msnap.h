/*
 * Snapshots of the master's metadata (the file format is mc/snapshot.h).
 *
 * Saving forks: the child writes the file from its copy-on-write image
 * of the store and exits, so the event loop never waits for the disk.
 * The parent polls for the child's exit from the sweep timer, then
 * answers every request that waited for that snapshot. One snapshot is
 * written at a time; a request arriving meanwhile joins it, unless it
 * wants a file in --snapshot-dir and the running one only streams: that
 * request waits for the next snapshot, which starts when this one ends.
 *
 * Loading builds a whole new store aside and swaps it in only when the
 * file was read to its end and checked, so a bad file leaves nothing
 * behind. Peers named in the file become ghosts (see reconcile.h).
 */
#ifndef MASTER_MSNAP_H
#define MASTER_MSNAP_H

#include "mc/conn.h"
#include "msnap_load.h"
#include "msnap_write.h"

/* The methods this module serves (in its module table). */
extern const struct mc_method msnap_methods[];

/* Snapshots as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module msnap_module;

#endif
