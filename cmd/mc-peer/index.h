/*
 * The placement index: which (tenant, key) copies this peer holds, and
 * where their bytes are.
 *
 * One mutex guards the table and every entry's reference count; bytes
 * are read and written outside it. An entry is owned by the index (one
 * reference while linked) and by each reader holding it; dropping or
 * replacing a copy unlinks it at once, and its space goes back to its
 * tier's medium only when the last reference does.
 *
 * The candidates for local eviction (linked, with their commit notice,
 * not hard-pinned, in no group, not moving) are in their medium's order
 * (medium.h), tracked when they become candidates (a commit notice, a
 * move landing) and touched on every access; those of them on
 * probation are also in their tier's probation order, oldest first,
 * which a read leaves; and all of them are in their tier's worth order
 * (mc/worder.h), keyed again whenever an access changes their worth (a
 * copy the worth order has no memory for stays out of it: the medium's
 * order still offers it). The orders are kept, with running sums, under
 * the index's lock, so that a plan takes its candidates coldest first
 * and lowest by worth first without walking the index. A copy enters
 * the first two at their warm ends: the probation order is the order
 * copies became candidates, which is their creation order but for an
 * upsert of a probationer and a move that did not happen (both enter
 * anew).
 *
 * Besides the hash table, linked entries sit on one list in the order
 * they were linked, so that a walk (the inventory sent to the master)
 * can take them in slices, letting go of the lock between slices,
 * without missing an entry that stayed linked the whole time: a hash
 * table reorders its slots when it grows or deletes, a list does not.
 *
 * For a peer that resumes its registration after a lost link, the index
 * also keeps what changed: a sequence number bumped by every link and
 * unlink, the number each entry was linked at (so the entries linked
 * since S are a tail of the list), and a bounded journal of removals.
 * When the journal has to forget a removal (its caps, or no memory for
 * the record), the changes since any earlier number are no longer
 * complete, and the index says so.
 */
#ifndef MC_PEER_INDEX_H
#define MC_PEER_INDEX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mc/err.h"
#include "mc/hash.h"
#include "mc/history.h"
#include "mc/worder.h"

#include "medium.h"

struct pindex;

/*
 * What the master told this peer about a copy when it committed it
 * (the commit notice), kept so that a restarted peer can report it:
 * type and group names, hard pin, the soft pin's deadline as
 * wall-clock ms since the epoch (0: none), and the master's commit
 * receipt when it sent one (mc/receipt.h: what lets a master that lost
 * the object adopt it again), and whether the copy is a dynamic replica
 * (a hot copy the master had made here from another peer's: eviction
 * drops it, never demotes it, since the original is still elsewhere).
 * Never changes afterwards.
 */
struct pmeta {
	uint64_t sp_deadline;
	bool hard_pin;
	bool dynamic;
	bool has_receipt;
	unsigned char receipt[MC_RECEIPT_BYTES];
	uint16_t type_len, group_len;
	char names[]; /* type bytes then group bytes, not NUL-terminated */
};

/*
 * A pmeta of these fields, without a receipt and not dynamic (one
 * allocation; free() frees it), or NULL.
 */
struct pmeta *pmeta_new(const char *type, size_t type_len, const char *group, size_t group_len,
			bool hard_pin, uint64_t sp_deadline);
/* Keep receipt (MC_RECEIPT_BYTES; NULL: none) in pm. */
void pmeta_set_receipt(struct pmeta *pm, const unsigned char *receipt);

struct pobj {
	struct pindex *ix; /* so a release callback needs only the entry */
	/* On the index's list while linked (walk markers sit on it too). */
	struct pobj *prev, *next;
	uint64_t hash;
	uint64_t version;
	uint64_t size;
	uint64_t checksum;
	uint64_t off; /* offset in the tier's medium; meaningless when size == 0 */
	uint64_t last_access;
	/*
	 * When its commit notice came (mc_now_ms; 0: not yet, or a copy
	 * found at start, taken as old): what makes it young (mc/young.h).
	 * Kept when the copy moves between tiers.
	 */
	uint64_t committed;
	uint64_t seq; /* the index's change number when this entry was linked */
	/*
	 * What the kv ranking needs (mc/history.h), kept by this peer for
	 * the copies it holds: the index's access number at the copy's last
	 * access (a read, or the write that made it) and at its creation,
	 * its LRFU value then, and whether it was written with no history
	 * of its key and not read since.
	 */
	uint64_t access_seq, created_seq;
	float crf;
	/* its chain worth then: crf capped below its parent's (mc_chain_worth) */
	float worth;
	bool probation;
	/*
	 * The chain parent the write named (the block before it in its
	 * prompt), as pindex_hash of (tenant, parent key); 0: none.
	 */
	uint64_t parent;
	struct medium_order order; /* in the medium's order while a candidate */
	struct medium_order prob;  /* in the tier's probation order while a candidate on it */
	uint32_t wplace;	   /* its place in its tier's worth order (0: not in it) */
	/*
	 * NULL until the commit notice; set and read on the event loop only
	 * (pindex_set_meta), freed with the entry.
	 */
	struct pmeta *meta;
	uint32_t refs;
	uint8_t tier; /* enum mc_tier: the medium holding the bytes */
	bool linked;
	bool marker;  /* a walk's place holder, not an object */
	bool moving;  /* a transition to another tier owns it (pindex_claim) */
	bool held;    /* unlinked, its bytes kept by a reader: counted in the index's held */
	bool grouped; /* counted in its tier's grouped bytes (struct pindex_order) */
	bool in_view; /* taken already by the pindex_cold at hand */
	uint16_t tenant_len;
	uint16_t key_len;
	char name[]; /* tenant bytes then key bytes, not NUL-terminated */
};

/* One removal in the journal (tenant bytes then key bytes in name). */
struct pgone {
	struct pgone *next;
	uint64_t seq;
	uint64_t version;
	uint16_t tenant_len;
	uint16_t key_len;
	char name[];
};

/*
 * A tier's candidates for local eviction: how many and their bytes
 * (medium_footprint), the probation order (oldest first) and its
 * bytes, the worth order (by decayed worth, mc/worder.h), and the bytes
 * of the linked copies only the master may free (group members with
 * their commit notice, not hard-pinned, not moving).
 */
struct pindex_order {
	uint64_t copies, bytes;
	struct medium_lru probation;
	uint64_t probation_bytes;
	struct mc_worder worth;
	uint64_t grouped_bytes;
};

/* Journal caps unless pindex_journal_limit says otherwise. */
#define PINDEX_JOURNAL_MAX 65536u
#define PINDEX_JOURNAL_NAME_BYTES (8u << 20)

struct pindex {
	pthread_mutex_t mu;
	struct mc_htab tab;
	/* Circular list of linked entries, oldest first, around a marker. */
	struct pobj *head;
	struct medium *const *media; /* the peer's, by tier */
	uint64_t objects;
	uint64_t tier_objects[MC_TIER_COUNT];
	/* per tier, what its linked copies take (medium_footprint): the room that is committed */
	uint64_t tier_bytes[MC_TIER_COUNT];
	uint64_t bytes; /* object bytes held (exact, not page-rounded) */
	/*
	 * Per tier, what dropped copies still take (medium_footprint) until
	 * their last reader lets go: room an eviction has freed already.
	 */
	uint64_t held[MC_TIER_COUNT];
	struct pindex_order order[MC_TIER_COUNT];
	uint64_t seq; /* change number: bumped by every link and unlink */
	/* accesses numbered so far, and the ghosts of the keys evicted for room */
	uint64_t access_seq;
	struct mc_history *hist;
	/* The removal journal, oldest first, and its caps. */
	struct pgone *gone_head, *gone_tail;
	size_t ngone, gone_bytes;
	size_t gone_max, gone_max_bytes;
	uint64_t gone_lost; /* newest seq of a removal the journal forgot */
};

/* media: the peer's table by tier, which must outlive the index. */
int pindex_init(struct pindex *ix, struct medium *const *media, struct mc_err *err);
/* Cap the removal journal at max entries and max_bytes of names (0 entries: none kept). */
void pindex_journal_limit(struct pindex *ix, size_t max, size_t max_bytes);
/*
 * Frees every entry still linked; readers must be gone. Their copies
 * are not released: a medium that survives a restart keeps them.
 */
void pindex_destroy(struct pindex *ix);

/* A new, unlinked entry holding one reference (the caller's), its bytes at (tier, off). */
struct pobj *pobj_new(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
		      size_t klen, uint64_t version, uint64_t size, uint64_t checksum, int tier,
		      uint64_t off);

static inline const char *
pobj_key(const struct pobj *o)
{
	return o->name + o->tenant_len;
}

/* Whether o is the copy of (tenant, key). */
static inline bool
pobj_named(const struct pobj *o, const char *tenant, size_t tlen, const char *key, size_t klen)
{
	return o->tenant_len == tlen && o->key_len == klen && memcmp(o->name, tenant, tlen) == 0 &&
	       memcmp(pobj_key(o), key, klen) == 0;
}

/*
 * Link o (taking over the caller's reference), replacing any copy of an
 * older or equal version: the replaced copy, unlinked, goes to
 * *replaced with the reference the index held (NULL when there was
 * none; set whatever the result). A stored newer version refuses o:
 * MC_ERR_VERSION, and the caller keeps its reference. Freeing the
 * replaced copy is the pool's (pool.h).
 */
int pindex_publish(struct pindex *ix, struct pobj *o, struct pobj **replaced, struct mc_err *err);

/* Find and take a reference (bumps last access), or NULL. */
struct pobj *pindex_acquire(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
			    size_t klen);
/*
 * The kv ranking's bookkeeping (mc/history.h), as the master keeps it
 * for its view: a read of o (pindex_read), o leaving for room
 * (pindex_evicted: its value becomes a ghost its key resumes if it is
 * written again), and the access number and half-life to rank by now.
 * A write is counted when it is published.
 */
void pindex_read(struct pindex *ix, struct pobj *o);
void pindex_evicted(struct pindex *ix, const struct pobj *o);
void pindex_history_now(struct pindex *ix, uint64_t *seq, double *half_life);
/* The probationary segment's share of a tier now (mc_history_probation). */
double pindex_probation(struct pindex *ix);
/* The hash the index files (tenant, key) under. */
uint64_t pindex_hash(const char *tenant, size_t tlen, const char *key, size_t klen);
/*
 * o's worth for the kv ranking at access number seq: its value decayed,
 * capped just below its parent's when the parent is held here too (a
 * prompt reads its prefix first, so a chain gives up its tail first).
 */
double pindex_worth(struct pindex *ix, const struct pobj *o, uint64_t seq, double half_life);
/* Drop a reference; the last one frees the bytes (and says so: true). */
bool pindex_release(struct pindex *ix, struct pobj *o);

/*
 * Claim the linked copy of a key for a transition: on tier (any when
 * MC_TIER_NONE), at most max_version when has_version. 1 with *out
 * holding a reference and the copy marked moving; 0 when it is moving
 * already (*out NULL); -1 when no copy matches. pindex_unclaim ends it.
 */
int pindex_claim(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
		 int tier, bool has_version, uint64_t max_version, struct pobj **out);
/* The transition that claimed o is over: o is no longer moving; the reference is dropped. */
void pindex_unclaim(struct pindex *ix, struct pobj *o);
/*
 * Link o in old's place, taking over the caller's reference to o, when
 * old is still the linked copy of its key: the same key, version and
 * size, on another tier (a finished move); o takes over old's last
 * access, commit time and what the kv ranking knows of it (its access
 * numbers, value, worth, chain parent and probation). 0 with old
 * unlinked and its index reference handed to the caller;
 * MC_ERR_NOT_FOUND when old is no longer linked (dropped or superseded
 * meanwhile): nothing changes and o stays the caller's.
 */
int pindex_swap(struct pindex *ix, struct pobj *old, struct pobj *o, struct mc_err *err);
/* What o's extent header keeps (medium.h); strings point into o and its meta. */
void pobj_medium_meta(const struct pobj *o, struct medium_meta *out);

/*
 * Attach meta to o (replacing and freeing what it had), from its commit
 * notice at now (ms): o's commit time, unless an earlier notice set it.
 * The event loop only.
 */
void pindex_set_meta(struct pindex *ix, struct pobj *o, struct pmeta *meta, uint64_t now);

/*
 * What an eviction looks at before it frees a copy, without touching its
 * recency: its version and tier, and whether anyone but the index holds
 * it (a read or a copy in flight) or a transition owns it. 1 found, 0 absent.
 */
struct pindex_peek {
	uint64_t version;
	int tier;
	bool busy;
	/* only the master may free it: a group member, hard-pinned, or its commit notice not in */
	bool protected;
	bool dynamic;		  /* a dynamic replica: dropped for room, never demoted */
	uint64_t size, committed; /* pobj.size, pobj.committed */
};
int pindex_peek(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
		struct pindex_peek *out);
/* tier's running sums (the probation order's head is not copied out: its links are the index's). */
struct pindex_order_sums {
	uint64_t copies, bytes, probation_bytes, grouped_bytes;
};
void pindex_order_sums(struct pindex *ix, int tier, struct pindex_order_sums *out);

/*
 * The candidates of tier a plan looks at, without walking the index:
 * into out (room for 3 x window), first the oldest probationers beyond
 * the probationary share, those older than the newest run of
 * probationers whose bytes fit in allow (at most window of them: *beyond
 * says how many, and *all whether that was every one), then the window
 * coldest candidates of the medium's order, then the
 * mc_plan_window_worth(window) of lowest worth decayed to now (the
 * worth order), each copy once. The coldest
 * alone would miss a copy read lately but worth little, a chain's tail
 * under a parent worth little, which the kv ranking over the whole tier
 * gives up first. Each comes with a reference that pindex_release_many
 * gives back. The number taken, or -1 with err when out of memory.
 */
int pindex_cold(struct pindex *ix, int tier, size_t window, uint64_t allow, struct pobj **out,
		size_t *n, size_t *beyond, bool *all, struct mc_err *err);

/* Bytes (medium_footprint) of copies dropped from tier that readers still hold. */
uint64_t pindex_held(struct pindex *ix, int tier);
/* Stored version and tier (either may be NULL) of a key: 1 found, 0 absent. */
int pindex_version(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
		   uint64_t *version, int *tier);
/*
 * Whether the key's copy here is at version and its commit notice came:
 * that version's write is over, and its grant may write no more.
 */
bool pindex_committed_at(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
			 size_t klen, uint64_t version);

/*
 * Unlink the copy on tier (any tier when MC_TIER_NONE) if its version
 * is <= max_version (any when !has_version), and hand over the index's
 * reference: the entry, or NULL when no copy matched. Only the pool
 * calls this; it is what frees committed copies.
 */
struct pobj *pindex_unlink(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
			   size_t klen, int tier, bool has_version, uint64_t max_version);

void pindex_counts(struct pindex *ix, uint64_t *objects, uint64_t *bytes);
/* Copies linked on one tier. */
uint64_t pindex_tier_objects(struct pindex *ix, int tier);
/* Copies linked on one tier and what they take there (medium_footprint), read together. */
void pindex_tier_load(struct pindex *ix, int tier, uint64_t *copies, uint64_t *bytes);

/* ---- changes, for resuming a registration ---- */

/* The current change number. */
uint64_t pindex_seq(struct pindex *ix);
/* Forget the removals numbered <= upto: the master has heard of them. */
void pindex_journal_trim(struct pindex *ix, uint64_t upto);

/* A removal copied out of the journal; name points into the caller's buffer. */
struct pindex_gone {
	uint64_t version;
	uint16_t tenant_len;
	uint16_t key_len;
	const char *name;
};

/*
 * Copy the removals numbered after *after and up to until, oldest first,
 * into out (at most max, names packed into buf of cap bytes), moving
 * *after past them. A removal whose key is linked again is left out:
 * the entry linked since tells the master what the peer holds now.
 * Returns how many were copied; 0 once there are no more. *lost is set
 * when a removal numbered after *after (as it was on the call) has been
 * forgotten, i.e. the removals from there on are not complete.
 */
size_t pindex_gone_next(struct pindex *ix, uint64_t *after, uint64_t until, struct pindex_gone *out,
			size_t max, char *buf, size_t cap, bool *lost);

/*
 * A walk over the entries linked when it began. Entries linked later
 * are not visited; an entry unlinked before the walk reaches it is not
 * either. Any number of walks may run at once.
 */
struct pindex_walk;

struct pindex_walk *pindex_walk_begin(struct pindex *ix, struct mc_err *err);
/* The same, over only the entries linked after change number since. */
struct pindex_walk *pindex_walk_since(struct pindex *ix, uint64_t since, struct mc_err *err);
/*
 * The next slice: up to max entries, each with a reference the caller
 * gives back with pindex_release_many, stopping early once the names
 * taken reach max_name_bytes. Returns how many; 0 means the walk is over.
 */
size_t pindex_walk_next(struct pindex_walk *w, struct pobj **out, size_t max,
			size_t max_name_bytes);
/* Whether pindex_walk_next has nothing more to give. */
bool pindex_walk_over(struct pindex_walk *w);
void pindex_walk_end(struct pindex_walk *w);
/* pindex_release for n entries under one lock. */
void pindex_release_many(struct pindex *ix, struct pobj **objs, size_t n);

#endif
