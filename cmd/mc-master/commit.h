/*
 * The commit of a write: a replica becomes COMPLETE only when its
 * client ended the put (put_end) and its peer confirmed the bytes
 * (write_ack, on that peer's own connection). Either may come first. A
 * put_end that names a replica not yet confirmed waits for it, up to
 * --write-ack-wait, its connection held; a replica still unconfirmed
 * then is discarded, so a put_end for bytes nobody wrote commits
 * nothing.
 */
#ifndef MASTER_COMMIT_H
#define MASTER_COMMIT_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"

struct master;
struct mobj;
struct commit_wait;

/* put_ends waiting for their peers' confirmations, and what became of writes. */
struct commits {
	struct commit_wait *head;
	size_t n;
	uint64_t acks, stale_acks; /* write_acks taken; ones for no write in progress */
	uint64_t waited;	   /* put_ends that waited for a confirmation */
	uint64_t unconfirmed;	   /* replicas ended but never confirmed, discarded */
};

void commit_init(struct master *m);
/* Answer every waiting put_end (the master is stopping). */
void commit_free(struct master *m);
/*
 * The rest of put_end on o (its write in progress checked, ids the
 * replica ids named or NULL for all): mark the named replicas ended and
 * complete those confirmed, at once or after waiting; req is answered.
 */
void commit_end(struct master *m, struct mc_req *req, struct mobj *o,
		const msgpack_object_array *ids);

/* write_ack (in its module table). */
extern const struct mc_method commit_methods[];

/* Commits as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module commit_module;

#endif
