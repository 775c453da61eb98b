/*
 * The mc client API: what an inference engine embeds to park and fetch
 * objects, and what mc-cli is built on.
 *
 * A client holds one connection to the master (speaking for one tenant)
 * and a cache of connections to peers. Calls are synchronous; a client
 * is not thread-safe (use one per thread). Batch calls pipeline many
 * keys per round trip. Every call returns 0 on success or -1 with err
 * filled (err->code is an enum mc_status).
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
 * notification that leaves with the next call (or mc_client_free).
 */
#ifndef MC_CLIENT_H
#define MC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

struct mc_client;

struct mc_client_opts {
	const char *master; /* NULL: $MC_MASTER, then 127.0.0.1:7300 */
	const char *tenant; /* NULL: $MC_TENANT, then "default" */
	const char *token;  /* NULL: $MC_TOKEN */
	const char *domain; /* NULL: $MC_DOMAIN */
	const char *host;   /* NULL: gethostname() */
	int timeout_ms;	    /* per call; 0: 30000 */
};

struct mc_client *mc_client_new(const struct mc_client_opts *opts, struct mc_err *err);
void mc_client_free(struct mc_client *c);

struct mc_put_opts {
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
	 * prompt, NULL for none (a head, or data outside any chain). The
	 * master evicts a chain's tail before its head and a block whose
	 * parent is gone first (mc-policy(5), the kv ranker). mc_put reads
	 * parent; mc_batch_put reads parents, one per key (NULL: none for
	 * any; a NULL entry: none for that key), and ignores parent.
	 */
	const char *parent;
	const char *const *parents;
};

enum mc_soft_pin_action { MC_SOFT_PIN_PRESERVE, MC_SOFT_PIN_ENABLE, MC_SOFT_PIN_DISABLE };

/*
 * The key convention for chains, for tools that carry no parent: a key
 * NAME#N (N decimal, no leading zeros) is block N of chain NAME, and its
 * parent is NAME#N-1; NAME#0 is the head. Writes the parent's key to
 * out (cap bytes with the NUL) and returns 1; 0 for a head or a key
 * outside the convention; -1 when out is too small.
 */
int mc_key_chain_parent(const char *key, char *out, size_t cap);

int mc_put(struct mc_client *c, const char *key, const void *buf, size_t len,
	   const struct mc_put_opts *opts, struct mc_err *err);

/*
 * Read into buf (capacity cap). *len gets the object size; if it exceeds
 * cap the call fails with MC_ERR_TOO_LARGE and nothing is read, so the
 * caller can retry with a larger buffer.
 */
int mc_get(struct mc_client *c, const char *key, void *buf, size_t cap, size_t *len,
	   struct mc_err *err);
/* Read into a malloc'd buffer the caller frees. */
int mc_get_alloc(struct mc_client *c, const char *key, void **buf, size_t *len, struct mc_err *err);

/* 1 present, 0 absent, -1 error. */
int mc_exist(struct mc_client *c, const char *key, struct mc_err *err);
int mc_remove(struct mc_client *c, const char *key, bool force, struct mc_err *err);
/* *removed (optional) gets how many went. */
int mc_remove_prefix(struct mc_client *c, const char *prefix, bool force, uint64_t *removed,
		     struct mc_err *err);

/*
 * Batch forms: n keys; per-key outcome in results[i] (an mc_status, 0 = ok).
 * The call itself returns -1 only when the whole batch failed (transport).
 */
int mc_batch_put(struct mc_client *c, size_t n, const char *const *keys, const void *const *bufs,
		 const size_t *lens, const struct mc_put_opts *opts, int *results,
		 struct mc_err *err);
int mc_batch_get(struct mc_client *c, size_t n, const char *const *keys, void *const *bufs,
		 const size_t *caps, size_t *lens, int *results, struct mc_err *err);
/* present[i] = 1/0; results[i] the status of that lookup. */
int mc_batch_exist(struct mc_client *c, size_t n, const char *const *keys, int *present,
		   struct mc_err *err);

struct mc_object_info {
	char key[4097];
	char type[129];
	char group[129];
	uint64_t size, version, checksum;
	uint64_t created, last_access, access_count, lease_deadline;
	bool hard_pin;
	unsigned nreplicas;
	struct {
		uint32_t peer_id;
		char addr[256];
		char tier[16];
		bool complete;
	} replicas[16];
};

int mc_stat(struct mc_client *c, const char *key, struct mc_object_info *info, struct mc_err *err);

/* Called for each key listed; return non-zero to stop early. */
typedef int (*mc_list_fn)(const char *key, uint64_t size, uint64_t version, const char *type,
			  void *arg);
int mc_list(struct mc_client *c, const char *prefix, mc_list_fn fn, void *arg, struct mc_err *err);

/* What a client did that its calls' results do not show. */
struct mc_client_stats {
	uint64_t put_retries; /* keys asked for again after a refusal for want of room */
};
void mc_client_stats(const struct mc_client *c, struct mc_client_stats *out);

/*
 * The master connection underneath, for tools that issue admin calls
 * (stats, peers, ...) through mc/rpcc.h.
 */
struct mc_rpcc *mc_client_master(struct mc_client *c);

#endif
