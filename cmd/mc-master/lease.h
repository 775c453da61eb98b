/*
 * Read leases held by readers. A get_replica_list grants its reader one
 * lease, with an id, on the object it read, or on the object's whole
 * group when it has one (groups are evicted all or none). The object is
 * protected from eviction and from a plain remove while any holder's
 * lease is unexpired; `release` ends one holder's lease, so a reader
 * that verified its bytes frees the object at once, and the TTL
 * (--lease-ttl) remains the safety net for a reader that died.
 *
 * o->lease_deadline stays exact: the latest deadline of the holders that
 * remain (a restored snapshot's deadline, which no holder backs, also
 * counts until it passes). Every lease has the same TTL, so creation
 * order is deadline order: expiry takes leases from the oldest end of
 * one list, and the latest deadline of a subject is its newest holder's.
 */
#ifndef MASTER_LEASE_H
#define MASTER_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "mc/hash.h"
#include "mc/metrics.h"

struct master;
struct mobj;
struct lease;

/*
 * Leases tracked at most (about 100 bytes each); beyond it a read is
 * protected by the TTL alone. Readers that release keep far fewer: one
 * per read in flight.
 */
#define LEASES_MAX (1u << 18)

struct leases {
	struct mc_htab by_id;	 /* struct lease by id */
	struct mc_htab subjects; /* struct holders by subject (object or group) */
	struct lease *oldest, *newest;
	/* Freed entries kept for reuse: a read then costs no allocation. */
	struct lease *spare;
	struct holders *spare_holders;
	unsigned nspare, nspare_holders;
	uint64_t next_id;
	uint64_t granted, released, expired, untracked;
};

int leases_init(struct master *m, struct mc_err *err);
/* Forget every lease (at exit, or when a restore replaces the store). */
void leases_clear(struct leases *l);
void leases_free(struct leases *l);

/*
 * A read of o by a reader of tenant at now: protect o (its group) until
 * now + --lease-ttl. The lease id, or 0 when the reader holds none the
 * master tracks (over LEASES_MAX, or out of memory): the TTL protects.
 */
uint64_t lease_grant(struct master *m, struct mobj *o, uint32_t tenant, uint64_t now);
/* End the lease id of tenant's reader; false when there is no such lease. */
bool lease_release(struct master *m, uint64_t id, uint32_t tenant);
/* From the sweep: forget leases whose deadline passed (a bounded number a call). */
void lease_expire(struct master *m, uint64_t now);
/* o is about to be freed: forget the leases on it, and on its group if o is its last member. */
void lease_forget(struct master *m, struct mobj *o);

/* The methods this module serves (in its module table). */
extern const struct mc_method lease_methods[];

/* Read leases as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module lease_module;

#endif
