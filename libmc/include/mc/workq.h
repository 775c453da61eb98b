/*
 * A worker queue: a fixed pool of threads fed by a bounded FIFO, for
 * work an event loop must not wait for (planning, page release, disk
 * I/O, copies). Each job's work runs on a worker; its completion runs
 * on the thread that owns the queue, the one event loop that created
 * it, so a completion touches the loop's state without a lock.
 *
 * A worker posts a finished job and bumps an eventfd (mc_workq_fd); the
 * owner watches that descriptor with its own loop and calls
 * mc_workq_complete when it is readable. The queue knows no event
 * library: each daemon registers the descriptor itself.
 *
 * Jobs start in the order they were submitted: with one worker they
 * also run in that order, with several the next to start is always the
 * oldest waiting. At most max_waiting jobs wait to start; a submission
 * beyond that fails as busy, because a loop that blocked on a full queue
 * would stop serving. mc_workq_free cancels the jobs still waiting, lets
 * the running ones finish, and runs every completion not yet run, so
 * each submitted job's completion runs exactly once, with cancelled set
 * when its work never ran.
 */
#ifndef MC_WORKQ_H
#define MC_WORKQ_H

#include <stdbool.h>
#include <stddef.h>

#include "mc/err.h"

struct mc_workq;

/* A job's work, on a worker thread. */
typedef void (*mc_work_fn)(void *arg);
/* A job's completion, on the owner's thread; cancelled: the work never ran. */
typedef void (*mc_done_fn)(void *arg, bool cancelled);

/*
 * threads workers (at least one), each run at nice (added to the
 * process's; 0 leaves it), and room for max_waiting jobs (at least one)
 * waiting to start. The calling thread becomes the owner. NULL with err.
 */
struct mc_workq *mc_workq_new(unsigned threads, size_t max_waiting, int nice, struct mc_err *err);

/*
 * Queue work(arg), then done(arg, cancelled) on the owner. done may be
 * NULL. -1 with err: busy when max_waiting jobs wait already, or when
 * the queue is being freed; no_space when out of memory. The owner's
 * thread only.
 */
int mc_workq_submit(struct mc_workq *q, mc_work_fn work, mc_done_fn done, void *arg,
		    struct mc_err *err);

/* Readable while completions wait for mc_workq_complete. */
int mc_workq_fd(const struct mc_workq *q);

/*
 * Run the completions posted so far, oldest first, on the calling
 * thread, which must be the owner's; how many ran. A completion may
 * submit again.
 */
size_t mc_workq_complete(struct mc_workq *q);

/* Jobs waiting to start (not running, not finished). */
size_t mc_workq_waiting(struct mc_workq *q);

/*
 * Run everything submitted to its end: wait for the waiting and running
 * jobs, running each completion on the calling thread as it is posted,
 * until nothing waits, runs or is left to complete (jobs a completion
 * submits included). For a clean stop that must finish the work it
 * accepted (a header write) before mc_workq_free. The owner's thread
 * only.
 */
void mc_workq_drain(struct mc_workq *q);

/*
 * Cancel what waits, wait for the running jobs, run every completion
 * left (the cancelled ones last), join the workers and free. A
 * completion run from here that submits is refused as busy. NULL is
 * fine. The owner's thread only.
 */
void mc_workq_free(struct mc_workq *q);

#endif
