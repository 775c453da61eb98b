/*
 * Tasks: work the master queues for one peer, until the peer says it
 * was done. A task has an id (unique in this master's run, increasing in
 * the order tasks are queued) and a kind: a drop of a copy (the key is
 * gone for good), or an eviction of one from the tier a round charged
 * it to (the peer demotes it when it has a tier below, else drops it);
 * replica copies later, one more kind.
 *
 * A peer's tasks go out on its control link in id order, each once per
 * link; the peer acknowledges the ids it executed in its heartbeats
 * (mc-wire(5)). When the peer comes back on a new link, every task it
 * has not acknowledged goes again, still in id order, so a peer that
 * remembers the highest id it received knows a repeat when it sees one.
 * A task left unacknowledged past a bound is retired as expired; the
 * tasks of a peer that goes away, or that name a store being replaced,
 * are retired with it. Every outcome is counted.
 *
 * The event loop owns all of this; peers.c holds each peer's queue.
 */
#ifndef MASTER_TASKS_H
#define MASTER_TASKS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/grant.h"
#include "mc/metrics.h"
#include "store.h"

/* A peer's tasks at most; one beyond it is refused. */
#define TASKS_PER_PEER_MAX (1u << 20)

enum task_kind { TASK_DROP, TASK_EVICT, TASK_REPLICA_COPY, TASK_KIND_COUNT };

/* What is counted per kind: the stat, its help. */
#define TASK_STATS(X)                                                                           \
	X(queued, "Tasks queued for peers.")                                                    \
	X(acked, "Tasks a peer acknowledged as executed.")                                      \
	X(resent, "Tasks sent again on a peer's new link, unacknowledged on the old one.")      \
	X(expired, "Tasks retired unacknowledged after --task-ttl.")                            \
	X(retired, "Tasks retired unacknowledged with their peer, or with the store replaced.") \
	X(refused, "Tasks not queued: their peer's queue was full, or memory ran out.")

struct task_counts {
#define X(stat, help) uint64_t stat[TASK_KIND_COUNT];
	TASK_STATS(X)
#undef X
};

/*
 * The payload of a drop or an eviction: one copy, (tenant, key) up to
 * version; an eviction also names its tier (MC_TIER_NONE: whichever
 * holds the key). The key is the task's own.
 */
struct task_copy {
	uint32_t tenant;
	uint32_t len;
	uint64_t version;
	char *key;
	int8_t tier; /* enum mc_tier or MC_TIER_NONE; evictions only */
};

/*
 * The payload of a replica copy: the version of (tenant, key) to copy,
 * the target peer and its data-plane address, the lease the copy runs
 * under, and the grants it presents: a read of the source's own copy
 * and a write of the target's. Kept in an allocation of the task's own
 * (the key and the address after it), so the small tasks, which are
 * most, do not pay for its size.
 */
struct task_replica_copy {
	uint64_t lease;
	uint64_t version, size, checksum;
	uint32_t tenant, target;
	uint32_t len; /* of key */
	const char *key;
	const char *addr;
	unsigned char read_grant[MC_GRANT_BYTES];
	unsigned char write_grant[MC_GRANT_BYTES];
};

/*
 * What a task carries, one member per kind (the kind table in tasks.c
 * says which, and how it is copied, packed and freed). A new kind adds
 * its own member here and one row there, and changes no other kind.
 */
union task_payload {
	struct task_copy copy;		 /* TASK_DROP, TASK_EVICT */
	struct task_replica_copy *rcopy; /* TASK_REPLICA_COPY: the caller's, copied when queued */
};

struct task {
	uint64_t id;
	uint64_t queued; /* mc_now_ms() */
	uint8_t kind;	 /* enum task_kind */
	bool sent;	 /* on some link already: sending it again is a resend */
	bool done;	 /* acknowledged or retired: a hole until the head passes it */
	union task_payload u;
};

/*
 * One peer's tasks, oldest first: v[head, n) in id order, with holes
 * where tasks were acknowledged out of order. v[head, unsent) went out
 * on the current link.
 */
struct task_queue {
	struct task *v;
	size_t head, n, cap;
	size_t unsent;
	size_t live; /* not done */
};

/* The master's side of all peers' tasks. */
struct tasks {
	const struct store *store; /* tenant names for the messages */
	uint64_t last_id;	   /* the id of the task queued last */
	struct task_counts count;
};

void tasks_init(struct tasks *ts, const struct store *store);

/*
 * Queue a task of kind carrying a copy of pl (the member of its kind);
 * -1 when it is refused (counted): the queue is full or memory ran out.
 */
int tasks_add(struct tasks *ts, struct task_queue *q, int kind, const union task_payload *pl);
/*
 * Queue a drop or an eviction of (tenant, key) up to version, on tier
 * (for an eviction; MC_TIER_NONE otherwise): tasks_add with a task_copy.
 */
int tasks_queue(struct tasks *ts, struct task_queue *q, int kind, uint32_t tenant, const char *key,
		size_t len, uint64_t version, int tier);
/*
 * Retire the task with id, not yet acknowledged: its work is no longer
 * wanted (an expired lease). It goes out no more, or, sent already, is
 * forgotten; false when no such task is waiting.
 */
bool tasks_retire(struct tasks *ts, struct task_queue *q, uint64_t id);
/* The kind named s (len bytes: "drop", "evict", "replica_copy"), or -1. */
int tasks_kind_parse(const char *s, size_t len);
/* Whether some task waits to go out on the current link. */
bool tasks_unsent(const struct task_queue *q);
/*
 * Send what has not gone out on conn yet, in id order; what a failed
 * send leaves waits for the next link.
 */
void tasks_send(struct tasks *ts, struct task_queue *q, struct mc_conn *conn, uint32_t peer_id);
/* The peer is on a new link: everything it has not acknowledged goes again. */
void tasks_relink(struct task_queue *q);
/*
 * The peer executed the tasks ids names (an array of ids): they are
 * done. Ids it does not hold (retired, or acknowledged already) are
 * ignored. -1 with err, changing nothing, when ids is not an array of
 * unsigned integers.
 */
int tasks_ack(struct tasks *ts, struct task_queue *q, const msgpack_object *ids,
	      struct mc_err *err);
/* Retire the tasks queued at or before now - ttl (mc_now_ms()), unacknowledged. */
void tasks_expire(struct tasks *ts, struct task_queue *q, uint64_t now, uint64_t ttl);
/* Retire every task and free the queue's memory. */
void tasks_retire_all(struct tasks *ts, struct task_queue *q);
/* Tasks waiting for their acknowledgement (sent or not). */
size_t tasks_pending(const struct task_queue *q);

/* The counters as mc_tasks_*_total{kind} (an mc_metrics collector; arg is the tasks). */
void tasks_collect(struct mc_metrics *r, void *arg);

#endif
