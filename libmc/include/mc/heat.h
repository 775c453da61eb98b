/*
 * The heat window of dynamic hot replication: how often each (tenant,
 * key, requester domain) was read lately, and the keys that crossed the
 * admission threshold, queued for admission. The master counts its
 * reads here (cmd/mc-master/replicate.h); mc-replicate whatif replays
 * an access log through the same window.
 *
 * Bounded in memory and in the work of one read. The table is
 * set-associative: HEAT_WAYS slots per set, the set picked by the
 * entry's hash. A read finds its entry in its set, or takes the set's
 * slot least worth keeping (empty, then idle for two windows, then the
 * coolest), so the table never grows and no read looks beyond one set.
 * That replacement is the window's whole cleanup: nothing sweeps it.
 *
 * A count is a sliding window made of two fixed buckets of one window
 * each: the reads of the current bucket, plus those of the previous one
 * weighted by the share of it the sliding window still covers.
 *
 * The read that brings an entry to the threshold queues it for
 * admission: a bounded ring of (slot, generation), so a trigger whose
 * slot was given to another key since is known stale and skipped. An
 * entry is queued at most once until admission judged it, and is not
 * queued again within one window of that judgement: a hot key the
 * worker turned down costs it one look per window, not one per read.
 */
#ifndef MC_HEAT_H
#define MC_HEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

#define HEAT_WAYS 8
/* Entries at most, and the ring of triggers at most. */
#define HEAT_ENTRIES_MAX (1u << 22)
#define HEAT_TRIGGERS_MAX 4096u

struct heat_entry {
	uint64_t hash;	 /* of tenant, key and domain; 0: the slot is empty */
	uint64_t start;	 /* ms: the current bucket began */
	uint64_t last;	 /* ms: the last read */
	uint64_t rearm;	 /* ms: no trigger before this (one window after a judgement) */
	uint32_t cur;	 /* reads in the current bucket */
	uint32_t prev;	 /* reads in the one before it */
	uint32_t tenant; /* the caller's tenant number (the master's store index) */
	uint32_t gen;	 /* bumped whenever the slot goes to another entry */
	uint16_t klen;
	uint8_t dlen;
	bool queued; /* a trigger for it waits in the ring */
	/*
	 * The key's klen bytes, then the domain's dlen, in a buffer of
	 * name_cap the slot keeps for its next entries: a full window of
	 * keys of like lengths replaces entries without allocating.
	 */
	uint32_t name_cap;
	char *name;
};

/* 64 bytes, one cache line: a read touches its set's tags and its entry's line. */
_Static_assert(sizeof(struct heat_entry) == 64, "a heat entry is one cache line");

struct heat_trigger {
	uint32_t slot, gen;
};

struct heat {
	struct heat_entry *e;
	uint64_t *tags; /* each slot's hash, a set's HEAT_WAYS together (0: empty) */
	size_t nsets;	/* a power of two; e holds nsets * HEAT_WAYS */
	size_t live;	/* slots in use */
	uint64_t window_ms;
	uint32_t threshold; /* reads in a window that make a key hot, at least 1 */
	struct heat_trigger ring[HEAT_TRIGGERS_MAX];
	size_t head, n;
	/* what happened, for the metrics */
	uint64_t reads;			     /* reads counted */
	uint64_t replaced;		     /* entries that lost their slot to another key */
	uint64_t untracked;		     /* reads not counted: no memory for the entry's name */
	uint64_t triggers, triggers_dropped; /* queued; not queued, the ring full */
};

/*
 * A window of entries (rounded up to whole sets, at most
 * HEAT_ENTRIES_MAX) over window_ms, hot at threshold reads (0 is taken as
 * 1). -1 with err.
 */
int heat_init(struct heat *h, size_t entries, uint64_t window_ms, uint32_t threshold,
	      struct mc_err *err);
void heat_free(struct heat *h);
/* Forget every entry and trigger (the master's store was replaced). */
void heat_clear(struct heat *h);

/*
 * Count one read at now of (tenant, key) by a reader in domain (dlen 0:
 * none given); key_hash is a 64-bit hash of (tenant, key), the master's
 * store hash. True when this read queued the entry for admission.
 */
bool heat_record(struct heat *h, uint32_t tenant, uint64_t key_hash, const char *key, size_t klen,
		 const char *domain, size_t dlen, uint64_t now);

/* The entry of (tenant, key, domain), or NULL when the window holds none (a lookup: no read). */
const struct heat_entry *heat_find(const struct heat *h, uint32_t tenant, uint64_t key_hash,
				   const char *key, size_t klen, const char *domain, size_t dlen);

/*
 * Start fetching what heat_record of (key_hash, domain) will look at:
 * its set's tags, and its set's entries, which a key new to the window
 * looks over for the slot to take. A batch of reads prefetches a few
 * keys ahead, so a working set larger than the window costs about what
 * one it holds does.
 */
void heat_prefetch(const struct heat *h, uint64_t key_hash, const char *domain, size_t dlen);

/* e's reads over the window that ends at now (the sliding estimate). */
uint32_t heat_count(const struct heat *h, const struct heat_entry *e, uint64_t now);

/*
 * The next entry queued for admission, and its slot for heat_judged;
 * NULL when none is left. Triggers whose entry was replaced are skipped.
 */
struct heat_entry *heat_next(struct heat *h, uint32_t *slot);
/* Admission judged the entry at slot at now: it may be queued again one window on. */
void heat_judged(struct heat *h, uint32_t slot, uint64_t now);

/*
 * The n hottest entries at now, hottest first, into out (at most n);
 * how many. A walk of the whole table: for an admin's question, never
 * for the read path.
 */
size_t heat_top(const struct heat *h, uint64_t now, const struct heat_entry **out, size_t n);

#endif
