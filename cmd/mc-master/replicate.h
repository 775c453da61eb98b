/*
 * Dynamic hot replication (seed 002), the master's side: the heat
 * window the reads feed (mc/heat.h), and the admission worker that judges
 * the keys crossing its threshold, in bounded slices on the master's
 * loop, never on the read path.
 *
 * --dynamic-replication says what admission does: off (the default:
 * reads record nothing), observe (every check runs and a key that
 * passes them all is counted as a proposal it would make), or enforce
 * (which makes them: a lease and a copy task, copies.h). The threshold
 * is --dynamic-replication-qps times the window, at least one read; a
 * key is judged from its requester's domain, so a key hot in one domain
 * is not hot in another, and its replica is placed in that domain.
 *
 * The checks, in turn: the heat (still over the threshold), the object
 * (still there), the dynamic replicas it has (under
 * --dynamic-replication-max-replicas), a dynamic copy of it already in
 * flight, its version (not being rewritten), a readable DRAM replica to
 * copy from, its size (some copy to make), a target that can take it,
 * and the recreate cooldown of the target's domain. Each refusal is
 * counted by its reason.
 *
 * A proposal (replication_propose, for admins and mc-replicate) goes
 * the same checks, from its own requester domain, with the seed's
 * contract: an id that makes it idempotent (the same content answers
 * the same lease, other content under the id is refused), the version
 * and size its sender saw, a target domain and a preferred target, and
 * a deadline that clamps its lease. A warmup (replication_warmup)
 * proposes the hottest keys of the window into a domain that holds no
 * replica of them, within a byte budget: the one case where a key need
 * not be hot from the receiving domain, since that domain is new.
 */
#ifndef MASTER_REPLICATE_H
#define MASTER_REPLICATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/heat.h"

struct client;
struct event;
struct master;
struct mobj;
struct peer;

enum dr_mode { DR_OFF, DR_OBSERVE, DR_ENFORCE };

/* Why admission turned a hot key down (mc_replication_rejected_total{reason}). */
#define DR_REASONS(X)                                                                     \
	X(BELOW_THRESHOLD, "below_threshold") /* cooled before it was judged */           \
	X(GONE, "gone")			      /* the object went */                       \
	X(MAX_REPLICAS, "max_replicas")	      /* enough dynamic replicas */               \
	X(IN_FLIGHT, "in_flight")	      /* a dynamic copy under way */              \
	X(VERSION, "version")		      /* being written */                         \
	X(NO_SOURCE, "no_source")	      /* no readable DRAM replica */              \
	X(SIZE, "size")			      /* nothing to copy, or not the size seen */ \
	X(NO_TARGET, "no_target")	      /* no peer can take it */                   \
	X(COOLDOWN, "cooldown")		      /* evicted from that domain lately */       \
	X(EXPIRED, "expired")		      /* the proposal's deadline passed */        \
	X(BUSY, "busy")			      /* copies at their limit, or the task refused */

enum dr_reason {
#define X(id, name) DR_##id,
	DR_REASONS(X)
#undef X
		DR_REASON_COUNT
};

struct replicator {
	struct heat heat;
	struct event *worker; /* one slice of admission, from the loop */
	bool scheduled;
	uint32_t threshold;
	uint64_t judged, would_propose, proposed;
	uint64_t rejected[DR_REASON_COUNT];
};

/* The name of a mode ("off", "observe", "enforce"), and the mode of a name (-1: none). */
const char *dr_mode_name(int mode);
int dr_mode_parse(const char *s);
const char *dr_reason_name(int reason);

/*
 * A read of o (key, len, hash: the store's) by cl at now, from
 * get_replica_list or its batch form: counted in the heat window, and
 * admission woken when it made the key hot. Nothing at all while the
 * mode is off.
 */
void replicate_read(struct master *m, const struct client *cl, const struct mobj *o,
		    const char *key, size_t len, uint64_t hash, uint64_t now);

/*
 * The plan admission would make for o, read from domain (NULL or "":
 * any): the replica to copy from and the peer to copy to. The source is
 * a readable DRAM replica of a live peer, one in the domain first, then
 * any, ties broken by a hash of the key and the peer so that hot keys
 * spread over their sources (fewest copies under way from it first,
 * and only a peer that serves replica copies and has fewer than
 * COPIES_PER_SOURCE under way: busy when that alone stands in the way);
 * the target a live peer with room for it in
 * DRAM that holds no replica of it, in the domain when one is given, on
 * a host without a readable replica when there is such a target, the
 * least used first, ties broken likewise. A reason (enum dr_reason) it
 * cannot, or -1 with *src and *dst set.
 */
int replicate_plan(struct master *m, const struct mobj *o, const char *domain, uint32_t *src,
		   uint32_t *dst);
/*
 * The same with a preferred target (0: none), taken when it is one the
 * plan may choose; any other such target when it is not.
 */
int replicate_plan_to(struct master *m, const struct mobj *o, const char *domain,
		      uint32_t preferred, uint32_t *src, uint32_t *dst);

/* Start fetching what replicate_read of hash (the store's) by cl will look at; off: nothing. */
void replicate_prefetch(const struct master *m, const struct client *cl, uint64_t hash);

/* The store was replaced (a restore): the heat window's entries name its old tenant ids. */
void replicate_forget(struct master *m);

extern const struct master_module replicate_module;

#endif
