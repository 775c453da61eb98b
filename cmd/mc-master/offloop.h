/*
 * Work kept off the event loop. The loop answers reads; a few things an
 * eviction round or an export does with hundreds of megabytes would
 * hold it for tens of milliseconds, so they run on a worker queue
 * (mc/workq.h), and big memory is given back in a way that does not
 * stall the loop's own page faults (munmap takes the address-space lock
 * for writing).
 */
#ifndef MASTER_OFFLOOP_H
#define MASTER_OFFLOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/workq.h"

/* How much nicer than the loop the master's workers run: the loop gets the CPU first. */
#define OFFLOOP_NICE 10

/*
 * The loop's side of a worker queue: a persistent event on its
 * descriptor that runs its completions. NULL when it cannot be added.
 */
struct event *offloop_watch(struct event_base *base, struct mc_workq *wq);

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
	struct mc_workq *wq; /* where it is freed once sent, or NULL */
};

/* Write with fn(f, arg) into a new blob; NULL with err. */
struct blob *blob_write(int (*fn)(FILE *f, const void *arg, struct mc_err *err), const void *arg,
			struct mc_err *err);
void blob_free(struct blob *b);
/*
 * Send b as req's bulk (the result map already packed); b is freed once
 * sent, by a job on wq when it is big.
 */
void blob_reply(struct mc_req *req, struct blob *b, struct mc_workq *wq);

#endif
