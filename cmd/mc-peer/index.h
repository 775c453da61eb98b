/*
 * The placement index: which (tenant, key) copies this peer holds, and
 * where their bytes are.
 *
 * One mutex guards the table and every entry's reference count; bytes
 * are read and written outside it. An entry is owned by the index (one
 * reference while linked) and by each reader holding it; dropping or
 * replacing a copy unlinks it at once, and its arena space goes back
 * only when the last reference does.
 *
 * Besides the hash table, linked entries sit on one list in the order
 * they were linked, so that a walk (the inventory sent to the master)
 * can take them in slices, letting go of the lock between slices,
 * without missing an entry that stayed linked the whole time: a hash
 * table reorders its slots when it grows or deletes, a list does not.
 */
#ifndef MC_PEER_INDEX_H
#define MC_PEER_INDEX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/hash.h"

#include "arena.h"

enum pobj_tier { TIER_DRAM = 0 };

struct pindex;

struct pobj {
	struct pindex *ix; /* so a release callback needs only the entry */
	/* On the index's list while linked (walk markers sit on it too). */
	struct pobj *prev, *next;
	uint64_t hash;
	uint64_t version;
	uint64_t size;
	uint64_t checksum;
	uint64_t off; /* arena byte offset; meaningless when size == 0 */
	uint64_t last_access;
	uint32_t refs;
	uint8_t tier;
	bool linked;
	bool marker; /* a walk's place holder, not an object */
	uint16_t tenant_len;
	uint16_t key_len;
	char name[]; /* tenant bytes then key bytes, not NUL-terminated */
};

struct pindex {
	pthread_mutex_t mu;
	struct mc_htab tab;
	/* Circular list of linked entries, oldest first, around a marker. */
	struct pobj *head;
	struct arena *arena;
	uint64_t objects;
	uint64_t bytes; /* object bytes held (exact, not page-rounded) */
};

int pindex_init(struct pindex *ix, struct arena *a, struct mc_err *err);
/* Frees every entry still linked; readers must be gone. */
void pindex_destroy(struct pindex *ix);

/* A new, unlinked entry holding one reference (the caller's). */
struct pobj *pobj_new(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
		      size_t klen, uint64_t version, uint64_t size, uint64_t checksum,
		      uint64_t off);

static inline const char *
pobj_key(const struct pobj *o)
{
	return o->name + o->tenant_len;
}

/*
 * Link o (taking over the caller's reference), replacing any copy of an
 * older or equal version. A stored newer version refuses it:
 * MC_ERR_VERSION, and the caller keeps its reference.
 */
int pindex_publish(struct pindex *ix, struct pobj *o, struct mc_err *err);

/* Find and take a reference (bumps last access), or NULL. */
struct pobj *pindex_acquire(struct pindex *ix, const char *tenant, size_t tlen, const char *key,
			    size_t klen);
/* Drop a reference; the last one frees the bytes. */
void pindex_release(struct pindex *ix, struct pobj *o);

/* Stored version of a key: 1 found, 0 absent. */
int pindex_version(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
		   uint64_t *version);

/* Unlink the copy if its version <= max_version (any when !has_version): 1 dropped, 0 not. */
int pindex_drop(struct pindex *ix, const char *tenant, size_t tlen, const char *key, size_t klen,
		bool has_version, uint64_t max_version);

void pindex_counts(struct pindex *ix, uint64_t *objects, uint64_t *bytes);

/*
 * A walk over the entries linked when it began. Entries linked later
 * are not visited; an entry unlinked before the walk reaches it is not
 * either. Any number of walks may run at once.
 */
struct pindex_walk;

struct pindex_walk *pindex_walk_begin(struct pindex *ix, struct mc_err *err);
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
