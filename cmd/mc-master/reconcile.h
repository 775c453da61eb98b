/*
 * Reconciliation: matching what the master believes (a restored
 * snapshot, or nothing at all) with what live peers actually hold.
 *
 * Peers named in a restored snapshot are not live. Each becomes a ghost:
 * its old id stays on its replicas, which are therefore unroutable
 * (get_replica_list only returns replicas on registered peers), and its
 * address waits for a peer to register there. That peer's inventory
 * confirms each replica (which then moves to the new id), and whatever
 * no live peer confirms by the reconcile deadline is dropped. The ghost
 * table is the only extra state, so settled objects cost nothing more.
 *
 * A running master makes ghosts too: a peer that registers anew at the
 * address of a peer it still knows (a restart, or a resume it refused)
 * turns the old entry into a ghost instead of erasing its objects, so
 * that what the new peer reports keeps its metadata.
 *
 * A peer that resumed its registration reports either a delta (what it
 * removed and what it linked since the change number the master last
 * acknowledged) or, when it cannot, its whole inventory; after a whole
 * one, its replicas that the report did not confirm are dropped (the
 * per-peer mark of struct peer).
 */
#ifndef MASTER_RECONCILE_H
#define MASTER_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

#include "mc/addr.h"
#include "mc/conn.h"
#include "mc/proto.h"

struct master;
struct peer;

struct ghost {
	uint32_t id;	 /* the id its replicas still carry */
	uint32_t new_id; /* the live peer registered at addr, or 0 */
	char addr[MC_ADDR_MAX];
	char host[MC_NAME_MAX + 1];
	char domain[MC_NAME_MAX + 1];
};

struct recon {
	struct ghost *ghosts;
	uint32_t n;
	uint64_t deadline; /* mc_now_ms() after which ghosts go; 0: none */
	/* items dropped that the master did not issue (mc_inventory_unverified_total) */
	uint64_t unverified_receipt, unverified_version;
	/* copies confirmed without a receipt, sent one (mc_receipts_resent_total) */
	uint64_t receipts_resent;
};

/* Forget the ghosts (the counters stay). */
void recon_free(struct recon *r);
struct ghost *recon_ghost(const struct recon *r, uint32_t id);
/* Replace the ghost table (taking ownership of v) and arm the deadline. */
void recon_install(struct master *m, struct ghost *v, uint32_t n);
/* A peer registered: claim the ghost at its address, if any. */
void recon_peer_registered(struct master *m, const struct peer *p);
/*
 * Turn a registered peer into a ghost and forget its entry, leaving its
 * replicas as they are; arms the reconcile deadline if none is. -1 (and
 * nothing changed) when out of memory.
 */
int recon_ghost_peer(struct master *m, struct peer *p);
/* From the sweep: at the deadline, drop every unconfirmed replica. */
void recon_sweep(struct master *m);

/* The methods this module serves (in its module table). */
extern const struct mc_method recon_methods[];

/* Reconciliation as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module recon_module;

#endif
