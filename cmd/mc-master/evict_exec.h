/*
 * Running eviction's jobs (evict_exec.c): one at a time, in arrival
 * order, each in slices on the loop but for its planning on a worker.
 */
#ifndef MASTER_EVICT_EXEC_H
#define MASTER_EVICT_EXEC_H

#include <event2/event.h>

#include "evict_jobs.h"

/* Queue j, starting it when nothing runs; -1 when JOBS_MAX are queued. */
int evict_job_queue(struct master *m, struct job *j);
/* The evictor's step event: one slice of the running job. */
void evict_step_cb(evutil_socket_t fd, short what, void *arg);

#endif
