/*
 * Writing snapshots (msnap_write.c; msnap.h says how), and the
 * module's state and life cycle.
 */
#ifndef MASTER_MSNAP_WRITE_H
#define MASTER_MSNAP_WRITE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/metrics.h"

struct master;

struct snap_waiter {
	struct mc_req *req; /* deferred */
	bool stream;
	bool need_dir; /* a snapshot written into --snapshot-dir answers it */
};

struct snap_last {
	bool valid;
	char path[PATH_MAX];
	uint64_t created, objects, size, millis;
};

struct msnap {
	pid_t pid;     /* the writing child; 0 when none */
	int err_fd;    /* read end of the child's error pipe */
	bool in_dir;   /* into --snapshot-dir (else a temporary for streaming) */
	bool dir_owed; /* a snapshot into the directory was asked for meanwhile */
	int stream_fd; /* that temporary, unlinked already; -1 when none */
	char tmp[PATH_MAX];
	char path[PATH_MAX]; /* the finished file */
	uint64_t created, objects, started_ns;
	uint64_t last_created; /* file names never repeat, even on a fake clock */
	struct snap_waiter *waiters;
	size_t nwait, wcap;
	struct event *interval_ev;
	struct event *sigchld_ev; /* reaps the child at once; the sweep is the fallback */
	bool restoring;		  /* a snapshot_restore bulk is coming in */
	struct snap_last last;
	struct mc_metric *m_last_success, *m_duration, *m_failures, *m_objects;
	struct mc_metric *m_restore_too_large;
};

int msnap_init(struct master *m, struct mc_err *err);
void msnap_free(struct master *m);
/* From the sweep: reap a finished child and answer its waiters. */
void msnap_poll(struct master *m);
/* Start writing a snapshot now (no waiter); 0, or -1 with err. */
int msnap_start(struct master *m, struct mc_err *err);
/*
 * Start the child: into --snapshot-dir when in_dir (and there is one),
 * else into a nameless temporary that only a stream reply reads.
 */
int msnap_write_start(struct master *m, bool in_dir, struct mc_err *err);

#endif
