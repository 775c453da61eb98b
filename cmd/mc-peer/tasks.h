/*
 * The master's tasks on this peer (tasks.c): dedupe, execution by kind,
 * and the acknowledgements the heartbeats carry.
 *
 * The master sends each kind as a notification of its own name on the
 * control link, {items: [{..., task: ID}, ...]}, every task once per
 * link and in id order; on a new link it sends again, still in id
 * order, every task not acknowledged. So the highest id received since
 * the last fresh registration tells a repeat: it is acknowledged again,
 * never executed twice. An executed task is acknowledged whether it
 * succeeded or not (sent again it would fail the same way); a failure
 * is logged and counted. An acknowledgement stays until an answered
 * heartbeat carried it, goes again after a refused one, and is
 * forgotten with the link, since the master then sends its task again.
 *
 * A kind is one row of the table in tasks.c: its name (the method and
 * the label the master knows it by), its handler for one item, and
 * whether this peer serves it.
 */
#ifndef MC_PEER_TASKS_H
#define MC_PEER_TASKS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"

struct peer;

/* Task ids acknowledged in one heartbeat at most: under 600 KiB of msgpack. */
#define PEER_TASKS_ACKS_PER_HEARTBEAT 65536
/*
 * Executed task ids waiting for a heartbeat at most, as many as the
 * master queues for a peer; one beyond it is not acknowledged, and the
 * master retires its task when it expires.
 */
#define PEER_TASKS_ACKS_MAX (1u << 20)

/*
 * One kind of task. run executes one item: 0, or -1 with err when it
 * could not. served says whether this peer serves the kind (NULL:
 * always); one it does not serve is not advertised at registration, so
 * the master sends none.
 */
struct peer_task_kind {
	const char *name;
	int (*run)(struct peer *p, const msgpack_object *item, struct mc_err *err);
	bool (*served)(const struct peer *p);
};

/* The kinds this peer serves, ended by a row without a name. */
extern const struct peer_task_kind peer_task_kinds[];
/* The control link's methods that carry them, one per kind (mc_registry_add). */
extern const struct mc_method peer_task_methods[];

/* What happened to the tasks of one kind since start. */
struct peer_task_stats {
	uint64_t done, failed, repeated;
};

#define PEER_TASK_KINDS_MAX 8

struct peer_tasks {
	struct peer *p;
	const struct peer_task_kind *kinds; /* peer_task_kinds, or a test's */
	const char *master;		    /* for the log: the master's address */
	/* the highest id received since the last fresh registration */
	uint64_t seen;
	/*
	 * Ids executed that no answered heartbeat acknowledged yet, oldest
	 * first; the heartbeat in flight carries the first inflight.
	 */
	uint64_t *acks;
	size_t nacks, cap, inflight;
	struct peer_task_stats count[PEER_TASK_KINDS_MAX];
};

/* kinds NULL: peer_task_kinds. */
void peer_tasks_init(struct peer_tasks *ts, struct peer *p, const struct peer_task_kind *kinds,
		     const char *master);
void peer_tasks_free(struct peer_tasks *ts);
/* The kind named name (len bytes), its index in *at; NULL when this peer serves none such. */
const struct peer_task_kind *peer_tasks_kind(const struct peer_tasks *ts, const char *name,
					     size_t len, size_t *at);
/*
 * Take one message of kind: params is {items: [...]} or one item. Each
 * item not seen before is executed, and acknowledged when it has a
 * task id. -1 with err, executing nothing, for a kind this peer does
 * not serve; otherwise 0, with *bad the items that failed.
 */
int peer_tasks_take(struct peer_tasks *ts, const char *kind, size_t len,
		    const msgpack_object *params, unsigned *bad, struct mc_err *err);
/*
 * A request of a task kind: taken through ts (dedupe, acks) or, with ts
 * NULL (the data port under --fault-inject), executed as it comes;
 * answered unless it is a notification.
 */
void peer_tasks_serve(struct peer *p, struct peer_tasks *ts, struct mc_req *req);
/* task_kinds: [the names of the kinds this peer serves], for peer_register. */
void peer_tasks_pack_kinds(msgpack_packer *pk, const struct peer_tasks *ts);

/* Acknowledgements for the next heartbeat: how many it carries (at most max). */
size_t peer_tasks_carry(struct peer_tasks *ts, size_t max);
/* tasks: [the ids the heartbeat carries], or nothing when it carries none. */
void peer_tasks_pack_acks(msgpack_packer *pk, const struct peer_tasks *ts);
/* The heartbeat was answered: what it carried is acknowledged. */
void peer_tasks_acked(struct peer_tasks *ts);
/* The heartbeat was refused: what it carried goes again with the next. */
void peer_tasks_unacked(struct peer_tasks *ts);
/* The link is gone: the master sends again what was not acknowledged. */
void peer_tasks_link_lost(struct peer_tasks *ts);
/* A fresh registration: ids of an earlier one mean nothing to it. */
void peer_tasks_fresh(struct peer_tasks *ts);

#endif
