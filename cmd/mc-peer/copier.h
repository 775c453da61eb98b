/*
 * The copier: the replica_copy worker of dynamic hot replication. The
 * master picked this peer as the source of a new, dynamic replica of a
 * hot copy it holds, and a target peer with room for it; the copier
 * makes the copy, as a client's put would, and never on the event loop
 * nor in the way of a read.
 *
 * One copy goes:
 *   1. taken (copier_take, the task's handler, on the loop): the item is
 *      checked, its read grant verified as a client's read would be, and
 *      the copy queued; the task is then done, the master's lease
 *      following the rest. At most COPIES_WAITING_MAX copies wait or run;
 *      one more is refused at once;
 *   2. started (on the loop, while fewer than the workers' count run):
 *      dynamic_copy_start to the master, which reserves the target's
 *      room; nothing goes to the target before it answered ok. A refused
 *      start ends the copy (the master cleared it). Then the copy is held
 *      in the index (its version must still be the one asked) and its
 *      bytes lent by its medium, without a staging copy;
 *   3. sent (on a worker): a connection to the target's data plane, one
 *      write of the bytes with the target's write grant, its answer;
 *   4. ended (on the loop): the copy let go, then dynamic_copy_end when
 *      the target answered ok, or dynamic_copy_revoke with the reason.
 * Stopping cancels the copies that wait and waits for those running.
 */
#ifndef MC_PEER_COPIER_H
#define MC_PEER_COPIER_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdint.h>

#include "mc/err.h"

#include "names.h"

/* Copies waiting or running at most; a task beyond it fails at once. */
#define COPIES_WAITING_MAX 64
/* --copy-workers at most, and by default. */
#define COPY_WORKERS_MAX 64
#define COPY_WORKERS_DEFAULT 2

struct peer;
struct copier;

/* One replica_copy item, its names pointing into the message it came in. */
struct copy_order {
	uint64_t lease, version, size, checksum, target;
	struct name tenant, key;
	struct name addr;	 /* the target's data plane */
	struct name read_grant;	 /* for this peer's own copy: checked here */
	struct name write_grant; /* for the target's: presented with the write */
};

/*
 * Read one replica_copy item (mc-wire(5)): -1 with err naming the field
 * when it is malformed (a missing field, a wrong type, a zero lease or
 * target, a name too long).
 */
int copy_order_parse(const msgpack_object *item, struct copy_order *out, struct mc_err *err);

/* What the copier did since start; read on the loop. */
struct copier_stats {
	uint64_t done;	  /* written to the target, dynamic_copy_end sent */
	uint64_t refused; /* dynamic_copy_start refused by the master */
	uint64_t failed;  /* anything else after the copy was taken: revoked if started */
	uint64_t bytes;	  /* of the copies done */
};

/* workers threads (1..COPY_WORKERS_MAX) copying p's copies; NULL with err. */
struct copier *copier_new(struct peer *p, unsigned workers, struct mc_err *err);
/* Cancel the waiting copies, wait for the running ones; NULL is fine. */
void copier_free(struct copier *cp);

/*
 * The replica_copy task's handler: check item and queue its copy. -1
 * with err when it is malformed, when its read grant does not cover
 * this peer's copy, when the copy is not held at that version, or when
 * COPIES_WAITING_MAX copies wait or run already; cp NULL (the peer runs
 * with --copy-workers 0) refuses every item.
 */
int copier_take(struct copier *cp, const msgpack_object *item, struct mc_err *err);

/* Copies queued and not yet started, and started and not yet over. */
size_t copier_waiting(const struct copier *cp);
size_t copier_running(const struct copier *cp);
const struct copier_stats *copier_stats(const struct copier *cp);

#endif
