/*
 * The placement index: which (tenant, key) copies this peer holds, and
 * where their bytes are.
 *
 * One mutex guards the table and every entry's reference count; bytes
 * are read and written outside it. An entry is owned by the index (one
 * reference while linked) and by each reader holding it; dropping or
 * replacing a copy unlinks it at once, and its arena space goes back
 * only when the last reference does.
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
	uint64_t hash;
	uint64_t version;
	uint64_t size;
	uint64_t checksum;
	uint64_t off; /* arena byte offset; meaningless when size == 0 */
	uint64_t last_access;
	uint32_t refs;
	uint8_t tier;
	bool linked;
	uint16_t tenant_len;
	uint16_t key_len;
	char name[]; /* tenant bytes then key bytes, not NUL-terminated */
};

struct pindex {
	pthread_mutex_t mu;
	struct mc_htab tab;
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

#endif
