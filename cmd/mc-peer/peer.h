/*
 * mc-peer's shared state: the media, the index, the pool, counters, and
 * the pieces main.c wires together (data plane in dataplane.c, the link
 * to the master in link.c and the modules beside it, metrics in
 * metrics.c).
 *
 * Who may call whom (no module calls one above it):
 *   pages.c        the page allocator; calls nothing here
 *   arena.c        the DRAM medium's mapping; calls pages.c
 *   medium*.c      the media, one per tier, behind medium.h; medium_dram.c calls arena.c
 *   index.c        the placement index over the media; calls medium.h
 *   pool.c         commits and frees copies; calls index.c, medium.h
 *   mover.c        copies between tiers (demotion, promotion); calls pool.c, index.c, medium.h
 *   diskq.c        a blocking medium's I/O on workers, completions on the loop; calls medium.h
 *   reclaim.c      the local eviction worker; calls mover.c, pool.c, index.c, medium.h
 *   names.c        the names a request gives (tenant, key, tier); calls nothing here
 *   grants.c       the master's grant keys and the check of a grant; calls nothing here
 *   copier.c       the replica_copy worker: copies of this peer's own copies to another
 *                  peer, on workers, between calls to the master on the control link
 *                  (control.h); calls grants.c, names.c, index.c, medium.h
 *   tasks.c        the master's tasks: dedupe, acks, dispatch by kind (drop, evict,
 *                  replica_copy); calls copier.c, names.c, pool.c
 *   dataplane.c    write/read for clients, and data-port drops under --fault-inject;
 *                  calls tasks.c, grants.c, names.c, reclaim.c, mover.c, diskq.c, pool.c,
 *                  index.c, medium.h
 *   inventory.c    tells the master which copies there are (the report, write_ack,
 *                  copy_moved, copy_dropped, committed); calls diskq.c, mover.c, pool.c,
 *                  index.c, medium.h
 *   ranked.c       the master's ranking for master_ranked, and its room requests;
 *                  calls reclaim.c
 *   link.c         the connection to the master (register, heartbeat, reconnect); calls
 *                  inventory.c, ranked.c, tasks.c, grants.c, reclaim.c, index.c, medium.h
 *   metrics.c      every module's metrics, read at each scrape; calls the modules below
 *                  link.c
 *   main.c         options, and the table of modules it starts and stops; calls everyone
 *
 * control.h holds the link's state that link.c, inventory.c and ranked.c
 * share; they reach each other only downward, as above.
 */
#ifndef MC_PEER_PEER_H
#define MC_PEER_PEER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "mc/addr.h"
#include "mc/conn.h"
#include "mc/err.h"
#include "mc/grant.h"

#include "index.h"
#include "medium.h"
#include "pool.h"

/*
 * Totals since start. Updated on the network thread only, so plain
 * integers suffice; worker threads must not touch them.
 */
/* How a write's wait for room ended (mc_peer_room_waits_total{outcome}). */
enum room_wait_outcome {
	ROOM_WAIT_PLACED,
	ROOM_WAIT_TIMEOUT,
	ROOM_WAIT_CANCELLED,
	ROOM_WAIT_GONE,
	ROOM_WAIT_OUTCOMES
};

struct peer_counters {
	uint64_t reads;
	uint64_t writes;
	uint64_t read_misses;
	uint64_t writes_abandoned; /* stalled past --write-timeout */
	uint64_t writes_cancelled; /* their put dropped by the master before the bytes were in */
	uint64_t writes_expired;   /* their bytes still coming past the grant's expiry */
	uint64_t room_waits[ROOM_WAIT_OUTCOMES]; /* writes that waited for room, by how it ended */
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t registrations;	    /* accepted by the master as a new peer */
	uint64_t resumes;	    /* registrations the master resumed */
	uint64_t inventory_reports; /* whole inventories the master answered */
	uint64_t commit_notices;    /* commits the master told of, for copies held here */
};

/*
 * What lets this peer check grants: its id at the master (grants name
 * it), the master's keys for that id, and the refusals by reason.
 */
struct peer_grants {
	uint32_t peer_id; /* 0 until registered: no grant is good then */
	struct mc_grant_keys keys;
	uint64_t skew_ms; /* --grant-skew */
	uint64_t refused[MC_GRANT_VERDICTS];
	/*
	 * Fingerprints of the read grants used here lately, direct-mapped
	 * (PEER_GRANTS_SEEN slots): a read whose grant was used before went
	 * past the master, which counted only the one it granted. NULL: none kept.
	 */
	uint64_t *seen;
};
#define PEER_GRANTS_SEEN (1u << 16)

struct control;
struct copier;
struct diskq;
struct mover;
struct peer_metrics;
struct peer_tasks;
struct mc_rate;
struct reclaimer;
struct room_waits;

/*
 * A tier's watermarks: fractions of its capacity, 0 < low < high <= 1,
 * when given by flag; a tier without them keeps the headroom band
 * (mc/band.h, reclaimer_band). Reported to the master only when given:
 * otherwise the master's band is the tier's.
 */
struct peer_marks {
	double high, low;
	bool given;
};

/* What --promote-on-read does with a read of a copy below DRAM. */
enum peer_promote { PROMOTE_OFF, PROMOTE_MOVE };

struct pending_write;
struct pool_key;

struct peer {
	struct event_base *base;
	/* This peer's tiers: a medium for each it holds, NULL for the others. */
	struct medium *media[MC_TIER_COUNT];
	struct pindex index;
	struct pool pool;
	struct mover *mover;	   /* NULL: one tier, nothing to move between */
	struct copier *copier;	   /* replica_copy tasks; NULL with --copy-workers 0 */
	struct reclaimer *reclaim; /* the local eviction worker */
	struct diskq *diskq;	   /* the SSD tier's I/O; NULL without one */
	struct peer_marks marks[MC_TIER_COUNT];
	enum peer_promote promote;
	/* Where the master session is kept across restarts (with --ssd), or NULL. */
	const char *session_path;
	struct peer_counters st;
	struct peer_grants grants;
	struct control *ctl;
	struct peer_tasks *tasks; /* the master's tasks, on the control link */
	/*
	 * Told of every write a grant covered once its bytes are committed:
	 * the control link confirms it to the master (write_ack), so its
	 * put_end may complete this copy. NULL: nobody is.
	 */
	void (*committed)(void *arg, const struct pobj *o);
	void *committed_arg;
	/*
	 * A read the master did not see (its grant was used here before):
	 * the heartbeat reports it, as recency. NULL: nobody is told.
	 */
	void (*local_read)(void *arg, const struct pobj *o);
	void *local_read_arg;
	/* A write found its tier full: the master should hear of the usage now. NULL: nobody. */
	void (*full)(void *arg, int tier);
	void *full_arg;
	struct peer_metrics *metrics; /* NULL without --http */
	struct mc_metrics *registry;  /* metrics->reg: where methods are counted, or NULL */
	bool fault_inject;
	bool stopping;
	uint64_t write_timeout_ms; /* --write-timeout; 0: none */
	uint64_t room_wait_ms;	   /* --room-wait; 0: a write finding no room is refused at once */
	struct room_waits *room_waits; /* writes waiting for room (dataplane.c); NULL: none may */
	/*
	 * --egress-limit: the bucket every data-plane connection sends
	 * from (main.c makes it with the listener; a limit of 0 lets all
	 * through). Not the control link, nor /metrics.
	 */
	struct mc_rate *egress;
	/* writes whose bytes are still coming (dataplane.c), newest first */
	struct pending_write *writing;
	/*
	 * The master dropped a key: its writes still coming end too
	 * (peer_cancel_writes, set where the data plane starts, as the
	 * tasks sit below it; NULL: none are).
	 */
	size_t (*cancel_writes)(struct peer *p, const struct pool_key *k);
	/* The master's tasks freed copies: writes waiting for room try again (peer_room_freed). */
	void (*room_freed)(struct peer *p);
	/*
	 * --ready-fd, written once the master has accepted the first
	 * registration (a peer the master does not know serves nobody),
	 * then -1; and the bound data-plane address written to it.
	 */
	int ready_fd;
	char bound[MC_ADDR_MAX];
	/* What the master is told. */
	char advertise[MC_ADDR_MAX];
	const char *host;
	const char *domain;
	/* the peers' secret of the master's auth file, said in hello; "" without */
	char secret[256];
};

/*
 * The data-plane methods (dataplane.c), and the control connection's:
 * one table per module that serves some (link.c, tasks.c, inventory.c,
 * ranked.c), ended by NULL.
 */
extern const struct mc_method peer_data_methods[];

/*
 * The master dropped k (at most its version, or any): the writes of it
 * whose bytes are still coming are abandoned, their connections closed
 * and their room freed (dataplane.c). How many there were.
 */
size_t peer_cancel_writes(struct peer *p, const struct pool_key *k);
/*
 * Writes that found their tier full wait for room (dataplane.c): the
 * waits of p begin (-1 when out of memory) and end (each answered
 * unavailable); peer_room_freed, when copies were freed, has them try
 * again from the loop.
 */
int peer_room_waits_init(struct peer *p);
void peer_room_waits_free(struct peer *p);
void peer_room_freed(struct peer *p);
/* Writes waiting for room now. */
size_t peer_room_waiting(const struct peer *p);
extern const struct mc_method *const peer_control_methods[];

/* ---- grants.c: the master's grants ---- */

/*
 * Take the grant key gk {gen, key, now} the master sent for peer_id
 * (peer_register's answer, grant_key); -1 with err when malformed.
 */
int peer_grant_key(struct peer *p, uint32_t peer_id, const msgpack_object *gk, struct mc_err *err);
/*
 * Whether grant (glen bytes; NULL: none) covers scope at this peer now
 * (scope's peer is this peer's id, whatever it says): MC_GRANT_OK, or
 * why not (enum mc_grant_verdict). Counting a refusal is the caller's.
 */
int peer_grant_check(const struct peer *p, const struct mc_grant_scope *scope, const void *grant,
		     size_t glen);
/* ---- metrics.c: what --http serves ---- */

/* Every module's metrics registered, collected from p at each scrape; NULL when out of memory. */
struct peer_metrics *peer_metrics_new(struct peer *p);
/* Where they are (and the methods are counted); NULL for pm NULL. */
struct mc_metrics *peer_metrics_registry(const struct peer_metrics *pm);
void peer_metrics_free(struct peer_metrics *pm);

/* ---- link.c: the link to the master ---- */

struct control *control_new(struct peer *p, const struct mc_addr *master, struct mc_err *err);
/* Begin connecting (asynchronously; failures are retried with backoff). */
void control_start(struct control *ctl);
/*
 * Unregister if registered, then call done (on the event loop) when the
 * master answered or timeout_ms passed, whichever first.
 */
void control_shutdown(struct control *ctl, int timeout_ms, void (*done)(void *arg), void *arg);
void control_free(struct control *ctl);

#endif
