/*
 * The master's metadata: interned tenants, data types and groups, and
 * the objects keyed by (tenant, key) with their replicas.
 *
 * Memory is the constraint here (a million objects must cost at most
 * 256 bytes each, table included), so an object is one allocation with
 * its key inline, names are small interned ids, and the first replica
 * lives inside the object; only objects with more than one replica
 * allocate a separate replica array. Writes in progress keep their
 * extra state in a side table (struct pending) so that settled objects
 * do not pay for it.
 */
#ifndef MASTER_STORE_H
#define MASTER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/checked.h"
#include "mc/err.h"
#include "mc/hash.h"
#include "mc/history.h"
#include "mc/tier.h"
#include "recency.h"

struct master;

enum rep_state { REP_PROCESSING, REP_COMPLETE };

enum sp_mode { SP_DISABLED, SP_PENDING, SP_ACTIVE };
enum sp_action { SP_PRESERVE, SP_ENABLE, SP_DISABLE };

#define NO_GROUP 0u
#define TENANTS_MAX 4096u
#define TYPES_MAX 1024u
/*
 * The last version a put hands out. A snapshot records the next one,
 * which then stays below UINT64_MAX: a loader refuses that as a counter
 * with nowhere left to go, and nothing ever wraps back to version 1.
 */
#define VERSION_MAX (UINT64_MAX - 2)

struct mrep {
	uint64_t version; /* the object version this copy holds */
	uint32_t id;
	uint32_t peer;
	uint8_t tier;
	uint8_t state;
	uint8_t dynamic; /* made by hot replication, not by a put */
	uint8_t mark;	 /* its peer's mark when last known there (struct peer) */
	/* While PROCESSING: its put_end named it; its peer confirmed the bytes (commit.h). */
	uint8_t ended : 1;
	uint8_t written : 1;
	/*
	 * An eviction sent its peer to demote the copy: still readable
	 * where it is until the peer says where it went (copy_moved) or
	 * that it is gone (copy_dropped), but no candidate any more, and
	 * its bytes no longer counted on its tier (ops.h).
	 */
	uint8_t moving : 1;
};

struct mobj {
	uint64_t size;
	uint64_t version; /* committed version (readers see this one) */
	uint64_t checksum;
	uint64_t lease_deadline;
	uint64_t created; /* ms, for people; ranking uses created_seq */
	/*
	 * ms: when put_end committed this version (what makes its copies
	 * young, mc/young.h); 0: not known (restored or adopted), old.
	 */
	uint64_t committed;
	uint64_t last_access; /* ms, likewise; ranking uses access_seq */
	/*
	 * The store's access sequence at this object's last access and at
	 * its creation (0: none, restored from a snapshot without them).
	 * 16 bytes an object, the price of an order that neither ties
	 * within a millisecond nor depends on how fast the reads come.
	 */
	uint64_t access_seq;
	uint64_t created_seq;
	uint64_t sp_ttl;
	uint64_t sp_deadline;
	/*
	 * Its chain parent, the block before it in a prompt (put's parent):
	 * the store hash of (tenant, parent key), 0 for none. Found by hash
	 * alone (store_find_parent); 8 bytes, where the key would cost up to
	 * MC_KEY_MAX.
	 */
	uint64_t parent;
	uint32_t access_count; /* saturates */
	uint16_t tenant;       /* < TENANTS_MAX */
	uint16_t type;	       /* < TYPES_MAX */
	uint32_t group;	       /* NO_GROUP or a group id */
	uint32_t group_idx;    /* position in the group's member array */
	/*
	 * LRFU value at access_seq, with the store's history's half-life
	 * (mc/history.h), and its worth: the value capped just below its
	 * parent's worth when it was taken (a block is read only after its
	 * prefix, so it is worth no more, and a chain's worths fall from
	 * head to tail). Kept at each access, since a prompt reads its
	 * prefix in order, so a view needs no walk up the chain.
	 */
	float crf, worth;
	uint16_t key_len;
	uint16_t children; /* cached blocks naming it as parent (saturates) */
	uint8_t depth;	   /* cached ancestors when it was written (saturates) */
	/* flags in one byte: with the key inline, 8 bytes fewer here are 16 fewer a malloc */
	uint8_t hard_pin : 1;
	uint8_t writing : 1;   /* a struct pending exists for this object */
	uint8_t probation : 1; /* written with no history of its key, not read since */
	uint8_t sp_mode : 2;   /* enum sp_mode */
	uint8_t sp_action : 2; /* enum sp_action */
	/* it names a chain parent the store does not hold (recency.h keeps it) */
	uint8_t orphan : 1;
	uint8_t nrep;
	uint8_t rep_cap; /* <= 1: rep.one is used, else rep.many */
	union {
		struct mrep one;
		struct mrep *many;
	} rep;
	uint32_t rank;	     /* its first node in the recency index (recency.h), 0: none */
	uint32_t family_idx; /* its place among its parent's children (recency.h) */
	char key[];
};

static inline struct mrep *
obj_reps(struct mobj *o)
{
	return o->rep_cap > 1 ? o->rep.many : &o->rep.one;
}

static inline const struct mrep *
obj_creps(const struct mobj *o)
{
	return o->rep_cap > 1 ? o->rep.many : &o->rep.one;
}

/* A put or upsert between put_start and the end of its last replica. */
struct pending {
	struct mobj *o;
	uint64_t version; /* the version being written */
	uint64_t size;
	uint64_t checksum;
	uint64_t started; /* mc_now_ms() at put_start, for --put-timeout */
	uint32_t type;
	bool upsert;	/* the object had a committed version before */
	bool committed; /* a replica of this version became COMPLETE */
	/*
	 * Soft pin intent (Pending): applied when this write first makes the
	 * object readable. Its eligible replicas are those of this version.
	 */
	uint8_t sp_action; /* enum sp_action */
	uint64_t sp_ttl;   /* ms, for enable */
};

/*
 * What one object costs the master beyond its key, charged to its
 * tenant with the key (store_meta_cost), so that objects of no bytes
 * are not free. Measured on a master: 40,000 empty objects with 7-byte
 * keys raised its RSS by 255 bytes each, 20,000 with 4,006-byte keys by
 * 4,298 (292 past the key). Most of it is struct mobj (160 bytes), its
 * slot in the object table (16 bytes at 3/8 to 3/4 load), the recency
 * node of its copy (32) and malloc's header.
 */
#define STORE_OBJECT_OVERHEAD 256u

struct tenant {
	char *name;
	uint64_t objects;
	uint64_t bytes;	     /* its objects' sizes */
	uint64_t meta_bytes; /* its objects' keys and overheads (store_meta_cost) */
	uint64_t quota;	     /* 0: none; from --quota-file, enforced by quota rounds (evict.c) */
	/* the data types its puts named: a tenant may not fill the type table alone */
	uint64_t types_used[TYPES_MAX / 64];
	uint32_t ntypes;
};

struct group {
	uint32_t id;
	uint32_t tenant;
	char *name;
	size_t name_len;
	struct mobj **members;
	uint32_t n, cap;
};

struct store {
	struct mc_htab objects;
	struct mc_htab pending;	    /* struct pending by object pointer */
	struct mc_htab groups;	    /* struct group by (tenant, name) */
	struct group **group_by_id; /* index 0 unused */
	uint32_t ngroup_ids;	    /* slots in group_by_id */
	uint32_t *free_group_ids;
	uint32_t nfree_group_ids;
	struct tenant *tenants;
	uint32_t ntenants;
	char **types;
	uint32_t ntypes;
	/* --max-tenants, --max-types-per-tenant; 0: TENANTS_MAX, no cap of its own */
	uint32_t max_tenants, max_types_per_tenant;
	uint64_t bytes; /* sum of object sizes */
	uint64_t version_seq;
	/*
	 * The logical clock of recency: one number per access, a read that
	 * counts (get_replica_list, each key of a batch) or a write that
	 * creates an object or commits an upsert. The last one handed out;
	 * 0 before the first.
	 */
	uint64_t access_seq;
	uint32_t replica_seq;
	/* LRFU half-life, ghosts of evicted keys (the view builder's state) */
	struct mc_history *hist;
	/* each (peer, tier)'s objects by access_seq: every access above moves them */
	struct recency rank;
	/* Told before an object is freed (the soft-pin index forgets it). */
	void (*on_destroy)(void *ctx, struct mobj *o);
	void *on_destroy_ctx;
};

int store_init(struct store *s, struct mc_err *err);
void store_free(struct store *s);

/* Intern by name; the id, or -1 (err filled) when full or out of memory. */
/*
 * Whether a tenant, type or group name is acceptable: 1..MC_NAME_MAX bytes
 * of printable ASCII without spaces (names end up in logs, listings and
 * metric labels, so a client cannot smuggle control bytes in).
 */
bool store_name_ok(const char *s, size_t len);
/* A tenant's id by name, or -1 when there is none (a lookup: interns nothing). */
int64_t store_tenant_find(const struct store *s, const char *name, size_t len);
int64_t store_tenant_intern(struct store *s, const char *name, size_t len, struct mc_err *err);
int64_t store_type_intern(struct store *s, const char *name, size_t len, struct mc_err *err);
/* A type a tenant's put names: interned, and counted against max_types_per_tenant. */
int64_t store_tenant_type(struct store *s, uint32_t tenant, const char *name, size_t len,
			  struct mc_err *err);
const char *store_type_name(const struct store *s, uint32_t id);
struct group *store_group_get(struct store *s, uint32_t id);

uint64_t store_key_hash(uint32_t tenant, const char *key, size_t len);
/* Hint that store_find(hash) comes soon (batch lookups). */
void store_prefetch(const struct store *s, uint64_t hash);
struct mobj *store_find(const struct store *s, uint64_t hash, uint32_t tenant, const char *key,
			size_t len);
/*
 * A new object with no replicas, inserted and counted in its tenant;
 * group_name may be NULL. NULL with err on allocation failure.
 */
struct mobj *store_create(struct store *s, uint64_t hash, uint32_t tenant, const char *key,
			  size_t len, uint64_t size, const char *group_name, size_t group_len,
			  struct mc_err *err);
/* Unlink and free an object and its pending write (no replica bookkeeping). */
void store_destroy(struct store *s, struct mobj *o);
/* Same, for an object already removed from the table (during a walk). */
void store_destroy_unlinked(struct store *s, struct mobj *o);

/* Append a replica; NULL on allocation failure or when the object is full. */
struct mrep *store_rep_add(struct mobj *o);
/* Remove replica i (order of the rest is not kept). */
void store_rep_del(struct mobj *o, unsigned i);

struct pending *store_pending_get(const struct store *s, const struct mobj *o);
struct pending *store_pending_new(struct store *s, struct mobj *o, struct mc_err *err);
void store_pending_del(struct store *s, struct mobj *o);

/* What an object with a key of key_len bytes costs its tenant beyond its bytes. */
static inline uint64_t
store_meta_cost(size_t key_len)
{
	return mc_add_sat(key_len, STORE_OBJECT_OVERHEAD);
}

/* What a tenant's objects cost against its quota: their bytes, keys and overheads. */
static inline uint64_t
store_tenant_charge(const struct tenant *t)
{
	return mc_add_sat(t->bytes, t->meta_bytes);
}

/* Change an object's size in its tenant's and the store's byte totals. */
void store_resize(struct store *s, struct mobj *o, uint64_t size);

/*
 * Find o's chain parent, by its hash and tenant (a different key with
 * the same 64-bit hash is taken for it: too rare to matter for ranking).
 */
struct mobj *store_find_parent(const struct store *s, const struct mobj *o);
/* An access to o (a write that replaced it): it takes the next number and adds to its value. */
void store_access(struct store *s, struct mobj *o);
/* A client's read of o: an access, a hit for the half-life's climber, and o leaves probation. */
void store_read(struct store *s, struct mobj *o);
/*
 * o was just created by a write naming parent (0: none) as its chain
 * parent: its creation is its first access, it resumes the value of its
 * key's ghost or is on probation without one, and it is counted among
 * the parent's children, one deeper (an uncached parent: depth 1).
 */
void store_access_new(struct store *s, struct mobj *o, uint64_t parent);
/*
 * A read the master did not serve (a peer's local read, peer_heartbeat
 * local_reads): o takes the next access number, for recency only. Its
 * LRFU value and worth are carried to the new number unchanged, and
 * neither its access_count, its probation nor the climber hear of it.
 */
void store_touch(struct store *s, struct mobj *o);
/* A client wrote a block it did not find: a miss for the climber. */
void store_count_miss(struct store *s);
/* o's LRFU value and its worth decayed to access number seq, with half-life hl. */
double store_crf(const struct mobj *o, uint64_t seq, double hl);
double store_worth(const struct mobj *o, uint64_t seq, double hl);

/* The store as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module store_module;

#endif
