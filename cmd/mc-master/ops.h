/*
 * What happens to objects when replicas come and go: accounting on the
 * peers, drop notifications, committing a write, erasing an object left
 * without copies, and the periodic sweep (dead peers, stale writes).
 */
#ifndef MASTER_OPS_H
#define MASTER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master.h"
#include "peers.h"
#include "store.h"

/*
 * Have the store tell the soft-pin index and the leases about every
 * object it frees; again whenever a restore installs a new store.
 */
void ops_hook_store(struct master *m);
/* Bytes a replica holds: its own version's size. */
uint64_t ops_rep_size(const struct master *m, const struct mobj *o, const struct mrep *r);
/*
 * A replica's bytes count in its peer tier's used, moving or not: a
 * copy being demoted still takes its room until the peer says it moved.
 * Charge adds them (to the tier the replica names), uncharge takes them
 * off, and off the tier's moving bytes too for a moving replica.
 */
void ops_rep_charge(struct master *m, const struct mobj *o, const struct mrep *r);
void ops_rep_uncharge(struct master *m, const struct mobj *o, const struct mrep *r);
/* A new PROCESSING replica, counted on its peer; NULL when out of memory. */
struct mrep *ops_rep_new(struct master *m, struct mobj *o, uint32_t peer, int tier,
			 uint64_t version, uint64_t size);
/* A replica's bytes are all on its peer: COMPLETE, with the peer's mark. */
void ops_rep_complete(struct master *m, struct mobj *o, struct mrep *r);
/* Remove replica i; tell its peer to drop the copy when notify. */
void ops_rep_remove(struct master *m, struct mobj *o, unsigned i, bool notify);
/*
 * Dynamic replica r of o was evicted (a round's, or its peer's own): no
 * other is made in its peer's domain for --dynamic-replication-cooldown.
 */
void ops_dynamic_gone(struct master *m, const struct mobj *o, const struct mrep *r);
/*
 * An eviction round's victim, replica i, charged to its tier: its peer
 * is sent an evict task. When that peer has a tier below, the copy stays
 * (readable, moving: its bytes counted as going, not gone) and true is
 * returned; else (and always for a dynamic replica, which is dropped,
 * never demoted: ops_dynamic_gone)
 * the replica is removed at once, false, and the caller settles o.
 */
bool ops_rep_evict(struct master *m, struct mobj *o, unsigned i);
/*
 * Erase an object and all its replicas. cursor: non-NULL when called
 * from inside a walk of the object table (see mc_htab_remove_at).
 */
void ops_obj_erase(struct master *m, struct mobj *o, bool notify, size_t *cursor);
/* Make the pending version the readable one (drops older copies). */
void ops_commit(struct master *m, struct mobj *o);
/*
 * After replicas changed: commit or finish a write in progress, and
 * erase the object if no replica is left. True when it was erased.
 */
bool ops_settle(struct master *m, struct mobj *o, size_t *cursor);
/*
 * Tell peer p what o's version committed as: committed {tenant, key,
 * version, type, group?, hard_pin, sp_remaining, receipt?, dynamic?}
 * (mc-wire(5)),
 * kept with the copy so that a restarted peer can report it. The
 * receipt (with --receipt-key) is what lets a master that lost the
 * object adopt it again from that report. Best effort: a peer not
 * connected learns nothing, and its inventory then reports the copy
 * without it.
 */
void ops_notify_committed(struct master *m, const struct mobj *o, uint64_t version,
			  const struct peer *p);
/* Forget a peer and every replica it held; why goes into the log line. */
void ops_peer_remove(struct master *m, struct peer *peer, const char *why);
/* Expire silent peers and writes older than --put-timeout. */
void ops_sweep(struct master *m);

/* Replica and object changes as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module ops_module;

#endif
