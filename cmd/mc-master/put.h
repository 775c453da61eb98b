/*
 * The write path: put_start, put_end, put_revoke, and the puts that
 * wait for an eviction round to make room (bounded by --put-wait).
 */
#ifndef MASTER_PUT_H
#define MASTER_PUT_H

#include <stddef.h>
#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/metrics.h"

struct master;
struct put_wait;

/* Puts waiting for room, oldest first. */
struct put_waits {
	struct put_wait *head, *tail;
	size_t n;
	uint64_t waited, placed, failed;
	struct mc_metric *seconds;
	struct holds *holds; /* what no round could free, as last found (holds.h) */
};

int put_init(struct master *m, struct mc_err *err);
/* Answer every waiting put (the master is stopping). */
void put_free(struct master *m);

/* The methods this module serves (in its module table). */
extern const struct mc_method put_methods[];

/* Puts as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module put_module;

#endif
