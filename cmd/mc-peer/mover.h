/*
 * The mover: copies between this peer's tiers, never on the event loop.
 *
 * A demotion (pool_evict reclaiming a copy that has a tier below it:
 * mover_demote is the pool's mover) and a promotion (a read of a copy
 * below DRAM, with --promote-on-read) go the same way:
 *   1. on the loop, the copy is claimed in the index (a second claim of
 *      the same copy is told it is in flight) and its room on the other
 *      tier reserved; no room means no move (the pool drops instead);
 *   2. on a worker, the bytes are copied (medium_copy);
 *   3. on the loop, the new copy is sealed (its extent header, for a tier
 *      that survives restarts) and swapped in for the old one, which any
 *      reader still holding keeps until it is done. A copy dropped or
 *      superseded meanwhile is not brought back: the new bytes go.
 * A failed copy is tried again, up to MOVE_ATTEMPTS in all; a demotion
 * that fails for good drops the copy (pool_drop, told to the master), a
 * promotion that fails leaves it where it was. The moved hook tells the
 * master where the copy lives now.
 *
 * One worker: a demotion is bound by the lower tier's write speed, and
 * one stream keeps it sequential.
 */
#ifndef MC_PEER_MOVER_H
#define MC_PEER_MOVER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/tier.h"

#include "index.h"
#include "pool.h"

/* Tries of one move before it is given up. */
#define MOVE_ATTEMPTS 3

enum mover_kind { MOVE_DEMOTE, MOVE_PROMOTE, MOVE_KINDS };

struct mover_stats {
	uint64_t queued[MOVE_KINDS];
	uint64_t done[MOVE_KINDS];
	uint64_t failed[MOVE_KINDS];  /* given up after MOVE_ATTEMPTS */
	uint64_t retried[MOVE_KINDS]; /* tries after the first */
	uint64_t lost[MOVE_KINDS];    /* copied, but the copy was dropped or superseded meanwhile */
	uint64_t no_room[MOVE_KINDS]; /* not queued: the other tier had no room */
};

/* Told, on the loop, that o (linked now) moved from tier from to o->tier. */
typedef void (*mover_moved_fn)(void *arg, const struct pobj *o, int from);

struct mover;

/* Over the pool's index and media; its completions run on base. NULL with err. */
struct mover *mover_new(struct event_base *base, struct pool *pl, struct mc_err *err);
/* Cancel what waits, finish what runs, give the claims back. NULL is fine. */
void mover_free(struct mover *mv);
void mover_on_moved(struct mover *mv, mover_moved_fn fn, void *arg);
/* Told, on the loop, that a move off tier from ended, whatever its outcome. */
typedef void (*mover_settled_fn)(void *arg, int from);
void mover_on_settled(struct mover *mv, mover_settled_fn fn, void *arg);

/* pool_demote_fn (pool.h), with the mover as arg. */
int mover_demote(void *arg, const struct pool_key *k, int from, int to);
/*
 * Queue a move of k's copy on tier from up to tier to: 0 queued, 1 in
 * flight already, -1 not (no such copy, no room).
 */
int mover_promote(struct mover *mv, const struct pool_key *k, int from, int to);

/* The room (medium_footprint) moves queued or running will free on tier: for budgets. */
uint64_t mover_in_flight(const struct mover *mv, int tier);
const struct mover_stats *mover_stats(const struct mover *mv);
/* "demote", "promote": a metric's label. */
const char *mover_kind_name(enum mover_kind k);

#endif
