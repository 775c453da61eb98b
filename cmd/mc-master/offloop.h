/*
 * Work kept off the event loop. The loop answers reads; a few things an
 * eviction round or an export does with hundreds of megabytes would
 * hold it for tens of milliseconds, so they run on worker threads, and
 * big memory is given back in a way that does not stall the loop's own
 * page faults (munmap takes the address-space lock for writing).
 */
#ifndef MASTER_OFFLOOP_H
#define MASTER_OFFLOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mc/conn.h"
#include "mc/err.h"

/* Called first on a worker thread: it runs niced, so the loop gets the CPU first. */
void offloop_nice(void);

/* Run fn(arg) on a detached worker thread; false when none could be started. */
bool offloop_run(void *(*fn)(void *), void *arg);

/*
 * Give back the pages of [p, p + len) before the memory is freed:
 * MADV_DONTNEED a few megabytes at a time takes the lock only for
 * reading, and leaves the final free next to nothing to do.
 */
void offloop_drop_pages(void *p, size_t len);

/*
 * An answer stream kept in an anonymous file and sent from a mapping of
 * it: growing a heap buffer of that size would copy it and unmap the old
 * one. Written on a worker, sent by the loop, freed on a worker.
 */
struct blob {
	int fd;
	void *map;
	size_t len;
};

/* Write with fn(f, arg) into a new blob; NULL with err. */
struct blob *blob_write(int (*fn)(FILE *f, const void *arg, struct mc_err *err), const void *arg,
			struct mc_err *err);
void blob_free(struct blob *b);
/* Send b as req's bulk (the result map already packed); b is freed once sent. */
void blob_reply(struct mc_req *req, struct blob *b);

#endif
