/*
 * The master's state: one event loop owns all of it, so nothing here is
 * locked. Handlers, the sweep timer and the metrics collectors all reach
 * it through the struct master passed as context.
 *
 * Who may call whom: a module calls only those on lines above its own,
 * and includes only their headers, so there is no circle (callbacks,
 * such as a put waiting on eviction's rounds, are registered by the
 * caller above; tests/tools/module-layers counts the arrows back up):
 *   recency.c                       the per-(peer, tier) recency lists; nothing here
 *   cooldown.c                      hot replication's recreate cooldowns; nothing here
 *   store.c, offloop.c, extplan.c   data and helpers; recency.c only
 *   tasks.c                         work queued for peers; store.c
 *   peers.c                         the peer table; tasks.c, store.c
 *   mmetrics.c                      the registry and the store's gauges; the above
 *   grants.c                        data-plane grants; mmetrics.c
 *   state.c                         the door every state change goes through;
 *                                   mmetrics.c, store.c
 *   request.c                       every handler's helpers; store.c
 *   auth.c                          roles from the auth file; request.c, store.c
 *   lease.c, softpin.c              read leases, soft pins; request.c, store.c
 *   rank.c                          evict_candidates and its walk, local reads;
 *                                   auth.c, softpin.c, mmetrics.c, store.c
 *   ops.c                           replica and object changes; lease.c, softpin.c,
 *                                   peers.c, store.c
 *   placement.c                     a pure choice of peers; peers.c
 *   candidates.c                    the candidate view and its call; softpin.c,
 *                                   peers.c, store.c
 *   reconcile.c                     peers confirming copies; ops.c, peers.c, store.c
 *   evict_jobs.c                    eviction's rounds and their metrics; candidates.c,
 *                                   offloop.c, store.c
 *   evict_exec.c                    running the rounds; evict_jobs.c, candidates.c,
 *                                   ops.c, extplan.c, offloop.c
 *   evict.c                         what starts the rounds; evict_exec.c,
 *                                   evict_jobs.c, and the above
 *   copies.c                        hot replication's copies: leases, tasks, the
 *                                   sources' calls; evict.c, ops.c, grants.c, state.c
 *   replicate.c                     hot replication's admission (its heat window is
 *                                   libmc's); copies.c, peers.c, request.c, store.c
 *   put.c, holds.c, commit.c        writes and the holds of waiting puts; evict.c
 *                                   (it starts rounds), placement.c, ops.c, and the above
 *   moves.c                         peers' own moves and drops of copies; evict.c,
 *                                   ops.c, request.c
 *   msnap_write.c, msnap_load.c     writing snapshots, loading them; store.c, ops.c,
 *                                   replicate.c
 *   read.c                          the read-side object calls; replicate.c,
 *                                   request.c, store.c
 *   peerlink.c, msnap.c, objects.c  the peers' calls, snapshots' calls, the other
 *                                   object calls; read.c, and the above
 *   start.c                         defaults, start-up, the method registry; everyone
 *   main.c                          options, the listener, stop; start.c
 * Each module exports a struct master_module (below): its init, free,
 * sweep and reload hooks, the methods it serves and its metrics
 * collector; start.c runs them all from one array, and the dispatcher
 * counts requests. This header embeds no module's state, only points
 * at it, so it includes none of their headers.
 */
#ifndef MASTER_MASTER_H
#define MASTER_MASTER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "mc/authfile.h"
#include "mc/conn.h"
#include "mc/err.h"
#include "mc/metrics.h"
#include "mc/proto.h"
#include "mc/receipt.h"
#include "mc/transport.h"

/* Each module's state, behind its own header. */
struct commits;
struct evictor;
struct replicator;
struct leases;
struct mgrants;
struct mmetrics;
struct moves;
struct msnap;
struct peers;
struct put_waits;
struct recon;
struct softpin;
struct state;
struct store;

struct master_cfg {
	const char *listen;
	const char *http;
	const char *config;
	int ready_fd;
	int max_conns;
	/* connections whose hello bound one tenant; 0: no cap */
	int max_conns_per_tenant;
	uint64_t lease_ttl;	 /* ms */
	uint64_t peer_ttl;	 /* ms */
	uint64_t task_ttl;	 /* ms a peer's task waits for its acknowledgement */
	uint64_t put_timeout;	 /* ms */
	uint64_t put_wait;	 /* ms a put may wait for eviction to make room; 0: none */
	uint64_t grant_ttl;	 /* ms a data-plane grant is good for */
	uint64_t grant_cache;	 /* read grants kept to hand out again */
	uint64_t write_ack_wait; /* ms a put_end waits for its peers' confirmation */
	const char *snapshot_dir;
	uint64_t snapshot_interval; /* ms; 0: no periodic snapshots */
	int snapshot_keep;
	const char *restore;	    /* FILE, "latest" or NULL */
	uint64_t max_restore_bytes; /* a snapshot_restore's file, held in memory */
	uint64_t reconcile_timeout; /* ms */
	const char *master_id;
	uint64_t default_soft_pin_ttl;	/* ms */
	uint64_t max_soft_pin_ttl;	/* ms */
	bool allow_evict_soft_pinned;	/* for eviction's second pass */
	const char *evict_policy;	/* policy file; NULL: `evict lease` */
	const char *evict_planner;	/* external planner command, or NULL */
	uint64_t evict_planner_timeout; /* ms */
	const char *quota_file;
	const char *auth_file; /* NULL: no authentication */
	/* the commit receipts' key file; NULL: AUTH_FILE.receipt-key, or no receipts */
	const char *receipt_key;
	double evict_high, evict_low; /* watermarks, fractions of a tier's capacity */
	bool evict_marks;	      /* one of them given: tiers run them, not the headroom band */
	uint64_t max_objects;	      /* the store's budget of objects; 0: none */
	uint64_t max_objects_per_tenant; /* one tenant's objects at most; 0: no cap */
	uint64_t max_peer_capacity;	 /* what a peer may declare, its tiers summed */
	uint64_t max_object_size;	 /* a put's size at most; 0: what the largest tier holds */
	double evict_lowerbound;  /* automatic rounds' lowerbound fraction; < 0: the policy's */
	int evict_slice;	  /* victims per slice of execution */
	uint64_t max_evict_bytes; /* an automatic round's target at most; 0: no cap */
	uint64_t young;		  /* ms: --young (mc/young.h) */
	/* dynamic hot replication (replicate.h) */
	int dr_mode;			 /* enum dr_mode: --dynamic-replication */
	uint64_t dr_window;		 /* ms: the heat window */
	double dr_qps;			 /* reads a second over the window that make a key hot */
	unsigned dr_max_replicas;	 /* dynamic replicas of one object at most */
	uint64_t dr_heat_entries;	 /* keys the heat window holds at most */
	uint64_t dr_cooldown;		 /* ms no dynamic replica is remade after an eviction */
	uint64_t dr_lease;		 /* ms a dynamic copy's lease lasts */
	unsigned dr_max_copies;		 /* dynamic copies under way at most */
	uint32_t max_tenants, max_types; /* the store's (master_start's arguments) */
};

/* What a connection said in hello (and whether a peer lives on it). */
/* The auth file's entry a connection's token matched (role NONE: none). */
struct auth_who {
	int role; /* enum mc_auth_role */
	char name[MC_NAME_MAX + 1];
	uint8_t hash[MC_AUTH_HASH_LEN];
};

/* A connection's tenant while the one it named does not exist: nothing was written under it. */
#define TENANT_NONE UINT32_MAX

struct client {
	/*
	 * The tenant's id, or TENANT_NONE while tenant_name is not in the
	 * store: reads find nothing there and create nothing; the first
	 * put creates it (req_tenant_make), and a request after someone
	 * else's put finds it (req_begin).
	 */
	uint32_t tenant;
	char tenant_name[MC_NAME_MAX + 1];
	/* counted against counted_tenant's --max-conns-per-tenant */
	bool counted;
	uint32_t counted_tenant;
	uint32_t peer_id; /* 0: not a peer's control connection */
	/* spreads its reads over replicas of equal cost (read.c): distinct per connection */
	uint64_t seed;
	char host[MC_NAME_MAX + 1];
	char domain[MC_NAME_MAX + 1];
	/* what its hello advertised (n 0 before one: tcp), for its replica lists */
	struct mc_transport_list transports;
	struct auth_who who;
	/* every client record, so that SIGHUP finds whose token went */
	struct master *m;
	struct mc_conn *conn;
	struct client *prev, *next;
};

struct master {
	struct master_cfg cfg;
	struct event_base *base;
	struct mc_server *server;
	struct mc_registry *methods; /* every module's table (start.c) */
	struct mc_http *http;
	struct event *sweep_ev;
	/* every module's state, in one block master_alloc makes (start.c) */
	struct store *store;
	struct peers *peers;
	struct mmetrics *mx;
	struct msnap *snap;
	struct recon *recon;
	struct softpin *sp;
	struct leases *leases;
	struct put_waits *put_waits;
	struct commits *commits;
	struct moves *moves;
	struct mgrants *grants;
	struct evictor *ev;
	struct replicator *dr; /* dynamic hot replication (replicate.h) */
	struct copies *copies; /* its copies under way (copies.h) */
	struct state *state;   /* the door every state change goes through (state.h) */
	char master_id[64];
	uint64_t started_ms;
	struct mc_authfile auth;
	bool auth_on; /* --auth-file given */
	/* commits carry receipts under this key, and inventories are verified (mc/receipt.h) */
	bool receipts_on;
	unsigned char receipt_key[MC_RECEIPT_KEY_BYTES];
	struct client *clients; /* the connections that said something needing a record */
	uint64_t client_seq;	/* records made, each one's seed */
	/* connections counted per tenant (TENANTS_MAX of them), and hellos refused over --max-conns-per-tenant */
	uint32_t *tenant_conns;
	uint64_t refused_per_tenant;
	void *parts;	/* the block of module state (master_alloc) */
	size_t started; /* modules started, in start.c's order */
};

/*
 * A module as start.c sees it: each exports one (NULL where it has no
 * such hook), and start.c runs them in the order of its one array:
 * init in that order, free in the reverse, sweep and reload in order.
 */
struct master_module {
	const char *name; /* for "cannot start NAME: ..." */
	/* 0, or -1 with err (MC_ERR_INVALID: its configuration is bad) */
	int (*init)(struct master *m, struct mc_err *err);
	void (*free)(struct master *m);
	/* from the sweep timer, every SWEEP_MS */
	void (*sweep)(struct master *m);
	/* SIGHUP: read its files again; -1 with err, the old ones kept */
	int (*reload)(struct master *m, struct mc_err *err);
	/* the methods it serves (NULL-terminated), for the registry */
	const struct mc_method *methods;
	/* its metrics' collector (with m as argument), registered once it started */
	void (*collect)(struct mc_metrics *r, void *arg);
};

#endif
