/*
 * Dynamic copies, the execution half of dynamic hot replication (seed
 * 002): the leases under which a source peer copies one of its DRAM
 * copies to a target peer, the REPLICA_COPY tasks that carry them, and
 * the calls the source makes as the copy goes (mc-wire(5)).
 *
 * A lease binds its proposal, its id, the object version, the source,
 * the target, the target domain, an expiry and the task. It is
 * installed (and told through the state door) before its task is
 * queued, and ended at once when the task cannot be. Then:
 *   dynamic_copy_start  the source, and only it, with the lease's id and
 *                       version, before the expiry: the version must
 *                       still be the object's and the target must have
 *                       room; only then is the target's replica added,
 *                       PROCESSING and dynamic, its room counted. A start
 *                       refused ends the lease, so the key is not held
 *                       back by a copy that cannot run.
 *   dynamic_copy_end    the same lease and version: the source's write
 *                       was answered. The replica completes once the
 *                       target's write_ack confirmed its bytes too,
 *                       whichever comes first, as a put's does
 *                       (commit.h).
 *   dynamic_copy_revoke the same lease and version: the copy failed; the
 *                       target's replica goes, and the domain cools.
 * A stale call (another lease, another version) changes nothing. A
 * lease that reaches its expiry is ended by the sweep: its task is
 * retired if the peer has not acknowledged it, its replica dropped if
 * it was started, and the target's domain enters the recreate cooldown.
 * So no reservation and no lease outlives its expiry.
 *
 * Leases are few (--dynamic-replication-max-copies) and looked up by
 * walking them; none of this is on the read path.
 */
#ifndef MASTER_COPIES_H
#define MASTER_COPIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "mc/err.h"
#include "mc/proto.h"

struct master;
struct mobj;

/* Bytes of a proposal id at most. */
#define COPY_PROPOSAL_MAX 64
/* Ended proposals remembered for their idempotency. */
#define COPY_RECENT 256

/* How a lease ended (mc_replication_copies_total{outcome}). */
#define COPY_OUTCOMES(X)                                                             \
	X(COMPLETED, "completed") /* the target's replica is readable */             \
	X(REFUSED, "refused")	  /* its start was refused: version, room, target */ \
	X(REVOKED, "revoked")	  /* the source gave it up */                        \
	X(EXPIRED, "expired")	  /* its expiry came first */                        \
	X(LOST, "lost")		  /* its object, version or replica went meanwhile */

enum copy_outcome {
#define X(id, name) COPY_##id,
	COPY_OUTCOMES(X)
#undef X
		COPY_OUTCOME_COUNT
};

enum copy_stage { COPY_QUEUED, COPY_STARTED, COPY_ENDED };

struct copy_lease {
	uint64_t id, task;
	uint64_t version, size;
	uint64_t expiry;  /* mc_now_ms() */
	uint64_t content; /* a hash of what its proposal asked, for idempotency */
	uint32_t tenant, src, dst;
	uint32_t rep; /* the target's replica, once started */
	uint8_t stage;
	bool cross; /* source and target in different domains */
	char domain[MC_NAME_MAX + 1];
	char proposal[COPY_PROPOSAL_MAX + 1];
	uint16_t klen;
	char *key;
};

/* What a lease is asked for: the copy, and who asked. */
struct copy_ask {
	uint32_t src, dst;
	const char *domain;   /* the target domain ("": any) */
	const char *proposal; /* its id ("": admission's own, no idempotency) */
	uint64_t content;
	uint64_t expires; /* the proposal's own deadline (mc_now_ms(); 0: none) */
};

/* A proposal id's lease: live (l), or ended (outcome), with the content it was asked with. */
struct copy_recent {
	uint64_t lease, content;
	int outcome; /* enum copy_outcome, or -1 while live */
};

/*
 * Install a lease for a copy of o as asked, and queue its task for the
 * source: the lease, or NULL with err when the copies are at their
 * limit or the task cannot be queued (nothing is left behind). Its
 * expiry is --dynamic-replication-lease from now, or the proposal's
 * own deadline when that comes first.
 */
const struct copy_lease *copies_begin(struct master *m, const struct mobj *o,
				      const struct copy_ask *ask, struct mc_err *err);
/* Whether a copy of o is under way (single flight: one at a time per object). */
bool copies_pending(const struct master *m, const struct mobj *o);
/* Copies under way from peer: its pressure as a source. */
unsigned copies_from(const struct master *m, uint32_t peer);
/* Copies under way, and the limit. */
size_t copies_running(const struct master *m);
/* What proposal id was given, if it was (live or ended lately): true with *out. */
bool copies_proposal(const struct master *m, const char *proposal, struct copy_recent *out);
/* A lease by id, or NULL (ended, or never). */
const struct copy_lease *copies_lease(const struct master *m, uint64_t id);
const char *copy_outcome_name(int outcome);
/*
 * Pack l as {id, tenant, key, source, target, domain, version, size,
 * expires_in_ms, task, proposal, stage}.
 */
void copies_pack_lease(msgpack_packer *pk, const struct master *m, const struct copy_lease *l);
/* Pack every live lease as an array of copies_pack_lease maps. */
void copies_pack_leases(msgpack_packer *pk, const struct master *m);
/*
 * Pack the copies' counts as {inflight, limit, created, dynamic_replicas,
 * cooldowns, outcomes: {outcome: n}}.
 */
void copies_pack_status(msgpack_packer *pk, const struct master *m);

/*
 * A write_ack from peer for (tenant, key) at version with size bytes,
 * for no put: true when it confirms a dynamic copy (and completes it
 * when its source ended it already).
 */
bool copies_write_ack(struct master *m, uint32_t tenant, const char *key, size_t klen,
		      uint32_t peer, uint64_t version, uint64_t size);
/* The store was replaced (a restore): every lease ends, its replicas gone with the old store. */
void copies_forget(struct master *m);

extern const struct master_module copies_module;

#endif
