/*
 * The link to the master, shared by the modules that speak on it
 * (private to cmd/mc-peer): link.c owns the connection (register,
 * heartbeat, reconnect, shutdown), inventory.c reports this peer's
 * copies, ranked.c asks the master's ranking and takes its room
 * requests, and tasks.c (its own header) executes the master's tasks.
 */
#ifndef MC_PEER_CONTROL_H
#define MC_PEER_CONTROL_H

#include "mc/log.h"

#include "peer.h"
#include "tasks.h"

/* Longest session token taken from the master (it sends 32 hex digits). */
#define SESSION_MAX 64

enum ctl_state {
	CTL_IDLE,	 /* waiting for the retry timer */
	CTL_CONNECTING,	 /* non-blocking connect in progress */
	CTL_REGISTERING, /* connected, peer_register outstanding */
	CTL_REGISTERED,	 /* heartbeating */
	CTL_STOPPED,
};

struct control {
	struct peer *p;
	struct mc_addr master;
	struct mc_conn_ops ops;
	int state;
	int fd; /* the socket being connected, or -1 */
	struct mc_conn *conn;
	struct event *connect_ev;
	struct event *retry_ev;
	struct event *hb_ev;
	struct event *stop_ev;
	uint64_t peer_id;
	uint64_t heartbeat_ms;
	unsigned backoff_ms;
	unsigned logged_backoff; /* the backoff step whose failure was logged */
	bool hb_inflight;
	uint64_t hb_seq; /* the change number the heartbeat in flight carries */
	/*
	 * What a resume shows the master, kept across links: the token of
	 * the last fresh registration ("" before the first) and, when
	 * have_ack, the change number the master acknowledged since then.
	 */
	char session[SESSION_MAX + 1];
	bool resuming; /* the outstanding peer_register asks to resume */
	bool have_ack;
	uint64_t acked;
	bool synced;		 /* the report after the last registration is complete */
	struct peer_tasks tasks; /* the master's tasks: dedupe and acknowledgements */
	/* the inventory report in progress (inv_walk != NULL) */
	struct pindex_walk *inv_walk;
	struct pobj **inv_items; /* MC_INVENTORY_CHUNK slots */
	size_t inv_n;		 /* items of the chunk being packed */
	bool inv_last;
	bool inv_delta;	   /* changes since inv_since, not everything */
	uint64_t inv_base; /* the change number when the report began */
	uint64_t inv_since;
	uint64_t inv_gone_at;	      /* delta: the journal read up to here */
	bool inv_gone_over;	      /* delta: every removal sent */
	struct pindex_gone *inv_gone; /* MC_INVENTORY_CHUNK slots */
	char *inv_names;	      /* INVENTORY_NAME_BYTES, their names */
	size_t inv_ngone;	      /* removals of the chunk being packed */
	uint64_t inv_gen;	      /* bumped when a report starts or stops */
	uint64_t inv_sent, inv_kept, inv_adopted, inv_dropped, inv_removed, inv_gone_sent;
	bool inv_refusal_logged;
	struct mc_registry *methods; /* peer_control_methods, counted */
	/*
	 * Keys read here past the master since the last heartbeat
	 * (struct lread, by name hash), at most LOCAL_READS_MAX: the next
	 * heartbeat reports them, as recency, and forgets them.
	 */
	struct mc_htab lreads;
	size_t nlreads;
	/* master_ranked: the master answers evict_candidates; one query context per tier */
	bool master_ranks;
	struct rank_query {
		struct control *ctl;
		int tier;
	} rank_q[MC_TIER_COUNT];
	/* shutdown */
	void (*done)(void *arg);
	void *done_arg;
};

/* Close the link after a failure; link.c's on_close then schedules the retry. */
static inline void
control_drop_link(struct control *ctl, const char *why)
{
	struct mc_conn *c = ctl->conn;

	mc_warn("link to master %s lost: %s", ctl->master.text, why);
	if (c && mc_conn_is_open(c))
		mc_conn_close(c, false);
}

/* ---- inventory.c: what copies this peer holds, told to the master ---- */

/* The control link's methods the inventory serves (committed). */
extern const struct mc_method peer_inventory_methods[];
/* The report's buffers: -1 with err when they cannot be had. */
int inventory_init(struct control *ctl, struct mc_err *err);
/* Abandon a report in progress and free its buffers. */
void inventory_free(struct control *ctl);
/* Tell the master of copies written, moved and dropped (on), or stop (off). */
void inventory_hooks(struct control *ctl, bool on);
/*
 * Report the changes since the last acknowledged number when delta,
 * else everything, after a registration.
 */
void inventory_start(struct control *ctl, bool delta);
/* Abandon a report in progress (a lost link, a new registration, shutdown). */
void inventory_abort(struct control *ctl);

/* ---- ranked.c: the master's part in this peer's own eviction ---- */

/* The control link's methods it serves (room). */
extern const struct mc_method peer_ranked_methods[];
/* A registration's answer says whether the master ranks this peer's keys. */
void ranked_start(struct control *ctl, const msgpack_object *answer);

#endif
