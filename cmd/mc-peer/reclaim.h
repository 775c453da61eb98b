/*
 * The local eviction worker: this peer frees room on its own tiers at
 * their own watermarks, through pool_evict like every other eviction.
 *
 * Woken by commits, by a write that found its tier full, and by moves
 * that ended. Each tier runs a band (mc/band.h), looked at afresh each
 * time: by default the headroom band, from the tier's capacity, its
 * committed copies and the bytes of writes in flight to it (room taken
 * by writes and moves in that are not committed yet); with watermarks
 * given (--dram-watermarks, --ssd-watermarks) the band of those two
 * fractions. A tier whose usage crossed the band's high end (or that
 * refused a write) is drained to its low end: the bytes to free are its
 * usage less the low end less what is on its way out already
 * (demotions queued or running, dropped copies a reader still holds),
 * so a pass never queues more than the overage. The bottom tier goes
 * first, so demotions from above find room.
 *
 * Victims come from the same policy engine as the master's rounds: a
 * candidate view of this peer's copies on the tier (group members,
 * hard pins, copies without their commit notice and copies moving are
 * left out), planned with the peer's policy (the shipped kv policy by
 * default) and executed by the shared plan executor, at most
 * RECLAIM_SLICE victims a turn of the loop. A victim a reader or a copy
 * holds at that moment is kept, never freed under it. When only group
 * members could cover the overage, the tier is stalled: the heartbeat
 * says so and the master runs a round for it (it evicts groups whole).
 *
 * Young copies (mc/young.h, --young) are left out of every plan of a
 * tier whose eviction drops copies (one with no tier below it here: a
 * demotion loses nothing, and goes on as before), and refused when the
 * master ranks them, so a tier over its mark holding
 * only young copies stays there: the pass rests until the first of them
 * ages (looking again at least every RECLAIM_YOUNG_RECHECK_MS, so a
 * clock that jumps is seen) and then takes it. Only a write waiting for
 * room (one refused for it here, or the master's room request) lets them
 * join, once the old copies cannot make that room; the pass then drains
 * as any does, and each such plan logs what it took of them once.
 *
 * Modes (--eviction-mode):
 *   local          every tier evicts itself from its local plan;
 *   master_ranked  the same, but victims come first from the master's
 *                  ranking of this peer's keys (evict_candidates): one
 *                  query per tier in flight, at most every
 *                  RECLAIM_ASK_GAP_MS, answers used while under
 *                  RECLAIM_ANSWER_TTL_MS old; a pass waits at most
 *                  RECLAIM_FIRST_WAIT_MS for its first answer and
 *                  evicts by its local plan whenever no answer is at
 *                  hand, so a slow master never holds eviction up;
 *                  against a master without the method it is local;
 *   master         DRAM is the master's rounds'; lower tiers still evict
 *                  themselves.
 * On the event loop only.
 */
#ifndef MC_PEER_RECLAIM_H
#define MC_PEER_RECLAIM_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/band.h"
#include "mc/err.h"
#include "mc/policy.h"
#include "mc/tier.h"

#include "mover.h"
#include "pool.h"

#define RECLAIM_SLICE 64
#define RECLAIM_FIRST_WAIT_MS 20
#define RECLAIM_ASK_GAP_MS 200
#define RECLAIM_ANSWER_TTL_MS 3000
/* Keys one ranking answer carries at most. */
#define RECLAIM_ASK_MAX 4096
/* After a pass that could free nothing, the next one waits this long (ms). */
#define RECLAIM_IDLE_MS 100
/* A pass that young copies hold up looks at the clock again at least this often (ms). */
#define RECLAIM_YOUNG_RECHECK_MS 1000

enum evict_mode { EVICT_LOCAL, EVICT_MASTER_RANKED, EVICT_MASTER, EVICT_MODES };
/* "local", "master_ranked", "master". */
const char *evict_mode_name(enum evict_mode m);
/* 0 with *out, -1 for a name that is none of them. */
int evict_mode_parse(const char *s, enum evict_mode *out);

/* What a pass did, for mc_peer_local_evictions_total{event}. */
enum reclaim_event {
	RECLAIM_ROUND,	      /* a tier's plan was made */
	RECLAIM_KEY,	      /* a victim of the local plan went */
	RECLAIM_NO_CANDIDATE, /* a plan found nothing it may free */
	RECLAIM_STALLED,      /* ... and only group members were left */
	RECLAIM_MASTER_KEY,   /* a victim the master ranked went */
	RECLAIM_YOUNG,	      /* a plan left young copies out */
	RECLAIM_EVENTS
};
/* "round", "key", "no_candidate", "stalled", "master_key", "young". */
const char *reclaim_event_name(enum reclaim_event e);

struct reclaim_conf {
	enum evict_mode mode;
	/* watermarks given for the tier: its band is these; otherwise the headroom band */
	bool marks[MC_TIER_COUNT];
	double high[MC_TIER_COUNT], low[MC_TIER_COUNT]; /* fractions of capacity */
	const struct mc_policy *policy;			/* outlives the worker */
	bool soft_pinned_pass; /* the policy's second pass over active soft pins */
	uint64_t young_ms;     /* --young (mc/young.h); 0: nothing is young */
};

/* One key of a ranking answer; strings are copied by reclaimer_answer. */
struct reclaim_ranked {
	const char *tenant;
	size_t tenant_len;
	const char *key;
	size_t key_len;
	uint64_t version;
	uint64_t bytes; /* the object's size, as the master knows it */
};

/*
 * Ask the master for this peer's coldest keys on tier, up to max of
 * them or bytes: 0 when asked (the answer comes to reclaimer_answer,
 * or reclaimer_no_ranking), -1 when it cannot be asked now.
 */
typedef int (*reclaim_ask_fn)(void *arg, int tier, uint64_t bytes, unsigned max);

struct reclaimer;

struct reclaimer *reclaimer_new(struct event_base *base, struct pool *pl, struct mover *mv,
				const struct reclaim_conf *conf, struct mc_err *err);
void reclaimer_free(struct reclaimer *r);
/* Something changed on tier (a commit, a finished move); full: a write found no room. */
void reclaimer_kick(struct reclaimer *r, int tier, bool full);
/*
 * A copy on tier became one this peer may evict (its commit notice
 * came): a pass resting because its plan found nothing plans again now,
 * not after its pause, since a write may be waiting for that room.
 */
void reclaimer_candidate(struct reclaimer *r, int tier);
/*
 * The master could not place a put of bytes on tier (it never became a
 * write), counting used there, copies on their way in included: drain
 * the tier as if a write had found it full, and far enough for the put
 * to fit beside them, below the low watermark if need be.
 */
void reclaimer_room(struct reclaimer *r, int tier, uint64_t bytes, uint64_t used);
/* Whether this peer evicts tier itself (what it tells the master). */
bool reclaimer_self_evicts(const struct reclaimer *r, int tier);
/* Whether tier's overage is left to the master: only group members could cover it. */
bool reclaimer_stalled(const struct reclaimer *r, int tier);
uint64_t reclaimer_events(const struct reclaimer *r, enum reclaim_event e);
enum evict_mode reclaimer_mode(const struct reclaimer *r);
/* The bytes tier should free now (0: at or under its band's low end, counting what is leaving). */
uint64_t reclaimer_need(const struct reclaimer *r, int tier);
/*
 * tier's band now (mc/band.h), in bytes: the watermarks' when given,
 * else the headroom band over its copies; all zero for a tier this
 * peer does not hold, or with no worker (r NULL).
 */
void reclaimer_band(const struct reclaimer *r, int tier, struct mc_band *out);
/* The bytes of writes in flight to tier: room allocated there and not committed yet (0: r NULL). */
uint64_t reclaimer_inflight(const struct reclaimer *r, int tier);

/*
 * master_ranked: how to ask (a registration that says the master ranks,
 * which undoes an earlier reclaimer_no_ranking), and the answers.
 */
void reclaimer_on_ask(struct reclaimer *r, reclaim_ask_fn fn, void *arg);
void reclaimer_answer(struct reclaimer *r, int tier, const struct reclaim_ranked *keys, size_t n);
/*
 * The master has no ranking (its registration did not say so, or it
 * answered unknown method): evict by local order until a registration
 * says it ranks (said once each time).
 */
void reclaimer_no_ranking(struct reclaimer *r);
/* The lowest usage (a fraction of capacity) a drain of tier left it at; 1 before any. */
double reclaimer_occupancy_min(const struct reclaimer *r, int tier);
/* Ranking queries sent, and their answers. */
uint64_t reclaimer_asked(const struct reclaimer *r);
/* Young copies this peer's eviction took for a waiting write, and their bytes (footprints). */
void reclaimer_young_taken(const struct reclaimer *r, uint64_t *copies, uint64_t *bytes);

/*
 * Plan need bytes off tier as a local pass would, over a window of its
 * candidates (grown while the plan falls short), into out (the caller's,
 * freed with mc_plan_free), without executing it; *window: the window
 * it was made over. For tests and the planning benchmark: -1 with err
 * when it cannot plan, or the tier's pass has a plan at hand.
 */
struct mc_plan;
int reclaimer_plan(struct reclaimer *r, int tier, uint64_t need, struct mc_plan *out,
		   size_t *window, struct mc_err *err);

#endif
