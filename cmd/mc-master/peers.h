/*
 * The peer registry: who stores bytes, where, with how much room, and
 * whether it is still alive. Each peer also holds the tasks queued for
 * it (tasks.h); what its link has not carried yet goes out at the end of
 * the event loop turn (peers_flush).
 */
#ifndef MASTER_PEERS_H
#define MASTER_PEERS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "mc/addr.h"
#include "mc/checked.h"
#include "mc/conn.h"
#include "mc/err.h"
#include "mc/grant.h"
#include "mc/proto.h"
#include "mc/transport.h"
#include "store.h"
#include "tasks.h"

#define PEERS_MAX 1024
/* The heartbeat period the master asks of its peers (register's heartbeat_ms). */
#define PEER_HEARTBEAT_MS 1000
#define EVICT_MODE_MAX 32
/* Bytes of a session token; on the wire it is twice as many hex digits. */
#define PEER_SESSION_LEN 16
#define PEER_SESSION_HEX (2 * PEER_SESSION_LEN)

struct peer_tier {
	uint64_t capacity;
	uint64_t used; /* master side: sizes of replicas placed here */
	/*
	 * Of used, the replicas an evict task asked the peer to demote that
	 * have not moved yet: still taking room (placement counts them), but
	 * going (a round's target does not).
	 */
	uint64_t moving;
	/*
	 * What a copy of n bytes takes there, as the peer's medium counts
	 * it: n rounded up to page, plus per_copy (0 and 0: n exactly).
	 */
	uint64_t page, per_copy;
	uint64_t reported; /* what the peer said in its last heartbeat */
	bool present;
	bool reached_high;    /* has been above the high watermark */
	double occupancy_min; /* lowest used/capacity after a round since then */
	/* the peer's own watermarks for this tier, fractions of capacity; 0: the master's */
	double high, low;
};

/* What a copy of size bytes takes on the tier (0 for an empty copy: no room at all). */
static inline uint64_t
peer_tier_footprint(const struct peer_tier *t, uint64_t size)
{
	if (size == 0)
		return 0;
	/* saturating: a size near 2^64 takes more than any tier has, not a wrapped few pages */
	return mc_add_sat(mc_round_up(size, t->page), t->per_copy);
}

/* A peer tier's bytes that stay: used less what is moving out. */
static inline uint64_t
peer_tier_staying(const struct peer_tier *t)
{
	return t->used > t->moving ? t->used - t->moving : 0;
}

/* A peer tier's watermarks: the peer's own, else the master's (dflt). */
double peer_tier_high(const struct peer_tier *t, double dflt);
double peer_tier_low(const struct peer_tier *t, double dflt);

struct peer {
	uint32_t id;
	char addr[MC_ADDR_MAX]; /* canonical (mc_addr_canonical): an alias is the same address */
	/*
	 * The auth file's peer entry it registered with (mc-auth(5)): the
	 * identity the id is bound to, so that no other peer's secret
	 * resumes it, speaks for it or takes its address. "" without an
	 * auth file or for the peers' shared secret.
	 */
	char name[MC_NAME_MAX + 1];
	char host[MC_NAME_MAX + 1];
	char domain[MC_NAME_MAX + 1];
	char evict_mode[EVICT_MODE_MAX];
	struct peer_tier tiers[MC_TIER_COUNT];
	uint64_t last_heartbeat; /* mc_now_ms(), for people */
	uint64_t heard;		 /* mc_mono_ms() of the last registration or heartbeat */
	uint64_t registered;
	struct mc_conn *conn; /* control connection, NULL while disconnected */
	/*
	 * Drawn at registration: a peer that reconnects shows it to resume
	 * this entry (same id, replicas kept) instead of registering anew.
	 */
	uint8_t session[PEER_SESSION_LEN];
	/*
	 * Bumped at every registration and resume, and stamped on a replica
	 * whenever the master learns its copy is on this peer (struct mrep
	 * mark). After a full inventory, a COMPLETE replica with an older
	 * mark was not reported: the peer no longer holds it. One byte: a
	 * replica left unconfirmed through 256 resumes looks current again,
	 * which can keep a stale replica but never drop a held one.
	 */
	uint8_t mark;
	bool unconfirmed; /* resumed since its last full inventory */
	/*
	 * The fixed part of a replica entry on this peer, per tier, packed
	 * once at registration ("addr", "tier", "host", "domain": four map
	 * pairs), so the read path copies bytes instead of re-packing
	 * strings. NULL when not built.
	 */
	char *packed[MC_TIER_COUNT];
	size_t packed_len[MC_TIER_COUNT];
	/*
	 * This peer's grant key, derived and made ready at its first grant
	 * under the master's current key (gen 0: not yet), so a grant costs
	 * only the hashing of its own bytes.
	 */
	struct mc_grant_signer grant_signer;
	struct task_queue tasks;
	/*
	 * The task kinds it serves (1u << enum task_kind), from its
	 * registration's task_kinds; a drop always. An eviction for a peer
	 * that serves no evict goes as a drop: the copy cannot move down.
	 */
	uint8_t task_kinds;
	/*
	 * The transports it serves reads and writes on, from its
	 * registration's transports (none sent: tcp alone): what a client
	 * may reach it with (mc_transport_choose).
	 */
	struct mc_transport_list transports;
	/*
	 * The tiers the peer evicts itself (1u << tier), from its
	 * registration and each heartbeat's self_evict: the master's
	 * watermark rounds leave them alone. Kept in memory only (the
	 * snapshot's peer record has no such field): a peer says it again
	 * on every heartbeat, and one that never does (an older peer) keeps
	 * getting rounds.
	 */
	uint8_t self_evict;
};

/* Whether the peer evicts tier itself, so no watermark round is run for it. */
static inline bool
peer_self_evicts(const struct peer *p, int tier)
{
	return tier >= 0 && tier < MC_TIER_COUNT && (p->self_evict & (1u << tier)) != 0;
}

/* Why a registration was refused (mc_peer_register_refused_total{reason}). */
enum peer_refusal {
	PEER_REFUSED_ADDRESS,  /* a live peer holds the address, or it is another's */
	PEER_REFUSED_IDENTITY, /* the identity is live elsewhere */
	PEER_REFUSED_CAPACITY, /* declared past --max-peer-capacity */
	PEER_REFUSED_COUNT
};

struct peers {
	struct peer **v;
	uint32_t n;
	uint32_t next_id;
	struct tasks tasks; /* every peer's, and their counts */
	struct event *flush_ev;
	uint64_t refused[PEER_REFUSED_COUNT];
};

/* "address", "identity", "capacity". */
const char *peer_refusal_name(int why);

int peers_init(struct peers *p, struct event_base *base, const struct store *store,
	       struct mc_err *err);
void peers_free(struct peers *p);

struct peer *peers_find(const struct peers *p, uint32_t id);
/* The entry at addr, compared as given: canonical, as every entry's is. */
struct peer *peers_find_addr(const struct peers *p, const char *addr);
/* The live, connected entry bound to identity name (non-empty), but skip; or NULL. */
struct peer *peers_find_live_name(const struct peers *p, const char *name, const struct peer *skip,
				  uint64_t ttl);
/* A new empty entry with a fresh id; NULL with err when full. */
struct peer *peers_add(struct peers *p, struct mc_err *err);
/* Remove and free an entry (its tasks are retired). */
void peers_del(struct peers *p, struct peer *peer);

/* Build peer->packed from its fields; -1 when out of memory. */
int peer_prepack(struct peer *peer);

/* Heard from within ttl ms (by the monotonic clock: a fake clock cannot kill a peer). */
bool peer_alive(const struct peer *peer, uint64_t ttl);
/* How long until a peer that stays silent is past ttl and dropped (0: it is already). */
uint64_t peer_drop_in_ms(const struct peer *peer, uint64_t ttl);

/* Draw a new session token from getrandom(2); -1 with err when it cannot. */
int peer_session_new(struct peer *peer, struct mc_err *err);
/* The token as PEER_SESSION_HEX lowercase hex digits and a NUL. */
void peer_session_hex(const struct peer *peer, char *out);
/* Whether hex (len bytes, from the wire) is the peer's token, in constant time. */
bool peer_session_is(const struct peer *peer, const char *hex, size_t len);

/*
 * Queue a task of kind (a drop, or an eviction charged to tier) of
 * (tenant, key) up to version for the peer; best effort. A disconnected
 * peer's tasks wait for it (at most TASKS_PER_PEER_MAX).
 */
void peers_queue(struct peers *p, struct peer *peer, int kind, uint32_t tenant, const char *key,
		 size_t len, uint64_t version, int tier);
/* Queue a task of any kind with its payload pl (tasks_add); its id, or 0 when refused. */
uint64_t peers_queue_task(struct peers *p, struct peer *peer, int kind,
			  const union task_payload *pl);
/*
 * The tier a copy evicted from tier moves to on this peer: the next one
 * down the chain that the peer has, or MC_TIER_NONE (it drops the copy).
 */
int peer_tier_below(const struct peer *peer, int tier);
/*
 * Make conn the peer's control connection and send it every task the
 * peer has not acknowledged.
 */
void peers_attach(struct peers *p, struct peer *peer, struct mc_conn *conn);
/*
 * The peer's control connection when it is connected, for a notice that
 * needs no task (it may be lost with the link: the peer's next inventory
 * carries what it knows); NULL otherwise.
 */
struct mc_conn *peer_link(const struct peer *peer);
/* Send every task not sent yet now to the peers that are connected. */
void peers_flush(struct peers *p);
/* Retire the tasks unacknowledged for ttl ms by now (mc_now_ms()). */
void peers_expire_tasks(struct peers *p, uint64_t now, uint64_t ttl);
/* Retire every task (they name tenants of a store being replaced). */
void peers_retire_tasks(struct peers *p);

/* The peer table as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module peers_module;

#endif
