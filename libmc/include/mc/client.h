/*
 * The mc client API: what an inference engine embeds to park and fetch
 * objects, and what mc-cli is built on. Link with `pkg-config --libs mc`.
 *
 * Keys are bytes: every call takes a key as (pointer, length), 1 to
 * MC_KEY_MAX bytes, NUL and any other byte allowed. Every call returns 0
 * on success or -1 with err filled (err->code is an enum mc_status).
 *
 * Threads: one mc_client may be called from several threads at once,
 * and the calls run concurrently. Each thread gets its own connection
 * to the master and its own cache of peer connections, opened on its
 * first call and kept until mc_client_free, which must come after
 * every other call on the client has returned. Nothing else is shared
 * between the threads but the options the client was made with.
 *
 * ABI: every options struct begins with `size_t size`, which its _INIT
 * macro sets (`struct mc_put_opts o = MC_PUT_OPTS_INIT;`); the library
 * reads only the fields the caller's size covers, so a program built
 * against an older header keeps working when fields are added. A struct
 * the library fills for the caller (mc_object_info) is allocated by the
 * library and freed with its own function.
 *
 * put computes the XXH3-64 checksum, asks the master for placement,
 * writes the bytes to every chosen peer straight from the caller's
 * buffer, then ends the put (a replica whose write failed is revoked; the
 * put fails only if no replica was written). A put the master refuses
 * for want of room (it already waited for eviction) is asked once more
 * after 20 ms. get asks the master for the replica list, which grants
 * this reader a lease, reads from the best replica straight into the
 * caller's buffer, verifies the checksum, and on a missing or corrupt
 * copy tries the next replica; then it releases the lease with a
 * notification that leaves with the thread's next call (or
 * mc_client_free). A peer that stops sending for the stall timeout
 * counts as a failed copy too, and a copy whose peer refused the grant
 * (it expired while an earlier replica stalled) is tried again once
 * with grants the master renews, in one call for every such key.
 */
#ifndef MC_CLIENT_H
#define MC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * libmc is built with -fvisibility=hidden: the functions of the installed
 * headers are the only ones libmc.so exports (libmc/libmc.map lists them).
 */
#pragma GCC visibility push(default)

struct mc_client;

/* A key, or any other byte string: len bytes at data. */
struct mc_key {
	const void *data;
	size_t len;
};

struct mc_client_opts {
	size_t size;	    /* sizeof(struct mc_client_opts): MC_CLIENT_OPTS_INIT */
	const char *master; /* NULL: $MC_MASTER, then 127.0.0.1:7300 */
	const char *tenant; /* NULL: $MC_TENANT, then "default" */
	const char *token;  /* NULL: $MC_TOKEN */
	const char *domain; /* NULL: $MC_DOMAIN */
	const char *host;   /* NULL: gethostname() */
	int timeout_ms;	    /* per call; 0: 30000 */
	/*
	 * A read or write on a peer that moves no byte for this long fails
	 * that copy: a read goes on to the next replica, a write's replica
	 * is revoked like any other that failed. 0: 5000; never more than
	 * timeout_ms. A slow transfer that keeps moving is no stall.
	 */
	int stall_timeout_ms;
};

#define MC_CLIENT_OPTS_INIT                           \
	{                                             \
		.size = sizeof(struct mc_client_opts) \
	}

/*
 * Make a client and connect the calling thread to the master (so a
 * wrong address shows at once). opts may be NULL for every default.
 */
struct mc_client *mc_client_new(const struct mc_client_opts *opts, struct mc_err *err);
void mc_client_free(struct mc_client *c);

enum mc_soft_pin_action { MC_SOFT_PIN_PRESERVE, MC_SOFT_PIN_ENABLE, MC_SOFT_PIN_DISABLE };

struct mc_put_opts {
	size_t size;	   /* sizeof(struct mc_put_opts): MC_PUT_OPTS_INIT */
	unsigned replicas; /* 0: 1 */
	const char *type;  /* NULL: "general" */
	const char *group; /* NULL: none */
	bool hard_pin;
	bool upsert; /* replace an existing key with a new version */
	/*
	 * Soft pin write action: MC_SOFT_PIN_PRESERVE (the default, 0),
	 * _ENABLE (with soft_pin_ttl_ms when has_soft_pin_ttl, else the
	 * master's default TTL) or _DISABLE.
	 */
	int soft_pin;
	bool has_soft_pin_ttl;
	uint64_t soft_pin_ttl_ms;
	/*
	 * The chain parent: the key of the block before this one in its
	 * prompt, len 0 for none (a head, or data outside any chain). The
	 * master evicts a chain's tail before its head and a block whose
	 * parent is gone first (mc-policy(5), the kv ranker). mc_put reads
	 * parent; mc_batch_put reads parents, one per key (NULL: none for
	 * any; an entry of len 0: none for that key), and ignores parent.
	 */
	struct mc_key parent;
	const struct mc_key *parents;
	/*
	 * The tier the copies go to, by name ("dram", "ssd"); NULL: the
	 * fastest that fits. A tier no live peer has fails with
	 * MC_ERR_INVALID.
	 */
	const char *tier;
};

#define MC_PUT_OPTS_INIT                           \
	{                                          \
		.size = sizeof(struct mc_put_opts) \
	}

/*
 * The key convention for chains, for tools that carry no parent: a key
 * NAME#N (N decimal, no leading zeros) is block N of chain NAME, and its
 * parent is NAME#N-1; NAME#0 is the head. Writes the parent's key to
 * out (cap bytes), its length to *out_len, and returns 1; 0 for a head
 * or a key outside the convention; -1 when out is too small.
 */
int mc_key_chain_parent(const void *key, size_t key_len, char *out, size_t cap, size_t *out_len);

int mc_put(struct mc_client *c, const void *key, size_t key_len, const void *buf, size_t len,
	   const struct mc_put_opts *opts, struct mc_err *err);

/*
 * Read into buf (capacity cap). *len gets the object size; if it exceeds
 * cap the call fails with MC_ERR_TOO_LARGE and nothing is read, so the
 * caller can retry with a larger buffer.
 */
int mc_get(struct mc_client *c, const void *key, size_t key_len, void *buf, size_t cap, size_t *len,
	   struct mc_err *err);
/* Read into a malloc'd buffer the caller frees. */
int mc_get_alloc(struct mc_client *c, const void *key, size_t key_len, void **buf, size_t *len,
		 struct mc_err *err);
/*
 * Read into the file fd: the object's bytes are written at offsets 0 to
 * its size with pwrite(2), so fd must be a regular file (or another kind
 * pwrite takes); a read retried on another replica writes the same range
 * again. *len gets the object size. Bytes of the file past the object
 * are left as they were: give an empty file. The bytes never all sit in
 * memory at once.
 */
int mc_get_fd(struct mc_client *c, const void *key, size_t key_len, int fd, size_t *len,
	      struct mc_err *err);

/* 1 present, 0 absent, -1 error. */
int mc_exist(struct mc_client *c, const void *key, size_t key_len, struct mc_err *err);
int mc_remove(struct mc_client *c, const void *key, size_t key_len, bool force, struct mc_err *err);
/* Every key starting with prefix (len 0: all); *removed (optional) gets how many went. */
int mc_remove_prefix(struct mc_client *c, const void *prefix, size_t prefix_len, bool force,
		     uint64_t *removed, struct mc_err *err);

/*
 * Batch forms: n keys; per-key outcome in results[i] (an mc_status, 0 = ok).
 * The call itself returns -1 only when the whole batch failed (transport).
 */
int mc_batch_put(struct mc_client *c, size_t n, const struct mc_key *keys, const void *const *bufs,
		 const size_t *lens, const struct mc_put_opts *opts, int *results,
		 struct mc_err *err);
int mc_batch_get(struct mc_client *c, size_t n, const struct mc_key *keys, void *const *bufs,
		 const size_t *caps, size_t *lens, int *results, struct mc_err *err);
/* present[i] = 1/0 for each key. */
int mc_batch_exist(struct mc_client *c, size_t n, const struct mc_key *keys, int *present,
		   struct mc_err *err);

/* One copy of an object, as mc_stat describes it. */
struct mc_replica_info {
	uint32_t peer_id;
	const char *addr; /* the peer's data-plane address */
	const char *tier; /* the tier's name: dram, ssd, ... */
	bool complete;	  /* false while it is being written */
};

/* What mc_stat tells of an object; allocated by mc_stat. */
struct mc_object_info {
	struct mc_key key;
	const char *type;
	const char *group; /* "" for none */
	uint64_t size, version, checksum;
	/* times in milliseconds since the epoch; 0 when unknown or none */
	uint64_t created, last_access, lease_deadline;
	uint64_t access_count;
	bool hard_pin;
	size_t nreplicas;
	const struct mc_replica_info *replicas;
};

/* The object's metadata, or NULL with err; free it with mc_object_info_free. */
struct mc_object_info *mc_stat(struct mc_client *c, const void *key, size_t key_len,
			       struct mc_err *err);
void mc_object_info_free(struct mc_object_info *info);

/*
 * Called for each key listed (in key order; key is not NUL-terminated);
 * return non-zero to stop early. The callback may call the client.
 */
typedef int (*mc_list_fn)(const void *key, size_t key_len, uint64_t size, uint64_t version,
			  const char *type, void *arg);
int mc_list(struct mc_client *c, const void *prefix, size_t prefix_len, mc_list_fn fn, void *arg,
	    struct mc_err *err);

/* What a client did that its calls' results do not show, summed over its threads. */
struct mc_client_stats {
	size_t size;	      /* sizeof(struct mc_client_stats): MC_CLIENT_STATS_INIT */
	uint64_t put_retries; /* keys asked for again after a refusal for want of room */
	/* peer connections that moved no byte for the stall timeout, and were dropped */
	uint64_t stalls;
	/* keys whose grants were asked for again after a peer refused them */
	uint64_t grant_renewals;
};

#define MC_CLIENT_STATS_INIT                           \
	{                                              \
		.size = sizeof(struct mc_client_stats) \
	}

/* Fill the fields out->size covers. */
void mc_client_stats(const struct mc_client *c, struct mc_client_stats *out);

/*
 * Have fn told, on the calling thread, how far the bytes of a put or a
 * get have gone to or from the peers: moved of total bytes, where total
 * counts every copy a put writes (a retried read starts again at 0). It
 * is called as the bytes move, often: fn should be cheap and must not
 * call the client. NULL stops it. Set it before the calls it watches.
 */
void mc_client_on_progress(struct mc_client *c,
			   void (*fn)(void *arg, uint64_t moved, uint64_t total), void *arg);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
