/*
 * Inside the client API (mc/client.h): what its three files share.
 *
 *   client.c        a client and its threads' connections (to the master,
 *                   and a small cache of them to peers), replica lists,
 *                   the waves that pipeline peer operations, and the calls
 *                   that only ask the master (exist, remove, stat, list)
 *   client_read.c   get, get_fd, get_alloc and batch_get
 *   client_write.c  put and batch_put
 *
 * A reader or a writer finds its thread's connections with
 * mc_cl_conns_of, talks to the master with mc_cl_master_begin and
 * mc_cl_master_call, and moves bytes to or from the peers by filling a
 * wave with items and running it with its struct wave_ops.
 */
#ifndef MC_CLIENT_IMPL_H
#define MC_CLIENT_IMPL_H

#include <msgpack.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/addr.h"
#include "mc/checksum.h"
#include "mc/client.h"
#include "mc/dataplane.h"
#include "mc/err.h"
#include "mc/proto.h"
#include "mc/rpcc.h"

/* Peer connections one thread keeps, so also the most groups one wave has. */
#define PEER_CACHE 32
/* Bulk bytes one wave moves to or from one peer, under its output cap. */
#define WAVE_BYTES ((uint64_t)64 << 20)
/* Keys per pipelined round to the master; bounds memory and message size. */
#define CHUNK_KEYS 128

struct peer_slot {
	char addr[MC_ADDR_MAX];
	struct mc_rpcc *r;
	uint64_t used; /* tick of last use, for LRU; 0 = empty */
};

/* One thread's connections for one client. */
struct conns {
	struct mc_client *c;
	pthread_t owner;
	struct conns *next; /* in c->threads */
	struct mc_rpcc *master;
	bool master_fresh; /* connected since the last call: no stale-connection retry */
	uint64_t tick;
	struct peer_slot peers[PEER_CACHE];
	struct mc_checksum_stream *csum; /* reused by every read */
	uint64_t moved, total;		 /* the running wave's bytes, for c->progress */
};

struct mc_client {
	uint64_t id; /* unique in the process, so a thread's cache never mistakes a new client */
	char master_addr[MC_ADDR_MAX];
	char tenant[MC_NAME_MAX + 1];
	/* named by the caller: hello names it; else the master's answer (the token's) says it */
	bool tenant_given;
	char host[256];
	char *token;
	char *domain;
	int timeout_ms;
	int stall_ms;	      /* a peer connection's wait for its next byte, <= timeout_ms */
	pthread_mutex_t lock; /* guards threads */
	struct conns *threads;
	uint64_t put_retries;	 /* atomic */
	uint64_t stalls;	 /* atomic */
	uint64_t grant_renewals; /* atomic */
	/* mc_client_on_progress */
	void (*progress)(void *arg, uint64_t moved, uint64_t total);
	void *progress_arg;
};

/* Room for a grant: opaque here, the peer alone reads it. */
#define GRANT_MAX 128

struct rep {
	uint64_t id;
	uint64_t peer_id; /* 0: the master did not say */
	/* when the master drops the peer if it stays silent; has_drop: it said */
	uint64_t drop_in_ms;
	bool has_drop;
	char addr[MC_ADDR_MAX];
	char tier[16];
	unsigned char grant[GRANT_MAX];
	size_t glen;
};

struct wave_group {
	const char *addr;
	struct mc_rpcc *r;
	bool reused;
	bool failed;
	uint64_t bytes;
	struct mc_err err;
};

struct wave {
	size_t n, cap;
	void **items;
	int *grp;
	size_t ngroups;
	struct wave_group g[PEER_CACHE];
};

/* How one kind of item is sent, answered and failed. */
struct wave_ops {
	int (*send)(struct conns *t, struct mc_rpcc *r, void *item, struct mc_err *err);
	/*
	 * Read one response and record the item's outcome. -1 only when the
	 * connection failed (err set; the item's outcome is then left to
	 * the caller).
	 */
	int (*recv)(struct conns *t, struct mc_rpcc *r, const char *addr, void *item,
		    struct mc_err *err);
	void (*fail)(void *item, const char *addr, const struct mc_err *err);
};

/* Where a read of a key, or a write of one replica, stands. */
enum { ST_PENDING, ST_DONE, ST_FAILED };

/*
 * The caller's options as this library knows them: the fields its size
 * covers, zero (the defaults) after them. NULL is all defaults.
 */
int mc_cl_take_opts(void *dst, size_t dst_size, const void *src, const char *what, const char *init,
		    struct mc_err *err);

/* A key of 1 to MC_KEY_MAX bytes, or -1 with err in the master's words. */
int mc_cl_check_key(const void *key, size_t len, struct mc_err *err);

/* Errors that mean the connection itself is gone or unusable. */
bool mc_cl_is_transport(int code);

/*
 * Turn a failure into "cannot WHAT 'KEY' [at ADDR]: why". The address is
 * added only when the inner message does not already name it (a connect
 * error does).
 */
void mc_cl_key_err(struct mc_err *out, int code, const char *what, const char *key, size_t klen,
		   const char *prep, const char *addr, const char *why);

/* The remote status in a batch item's error map, for per-key results. */
int mc_cl_item_error(const msgpack_object *item, struct mc_err *err);

/* "keys": [key...] */
void mc_cl_pack_keys(msgpack_packer *pk, const struct mc_key *keys, size_t n);

/* Close the thread's master connection; the next call makes a new one. */
void mc_cl_master_drop(struct conns *t);

/* The thread's master connection, connecting (with hello) when it has none. */
struct mc_rpcc *mc_cl_master_get(struct conns *t, struct mc_err *err);

/* Begin a request to the master: the packer for its params, or NULL. */
msgpack_packer *mc_cl_master_begin(struct conns *t, const char *method, struct mc_err *err);

/*
 * The request begun with master_begin, one round trip. A connection that
 * had been idle may have died (master restarted): when a reused
 * connection reports it is unavailable, the request never reached a live
 * master, so it is safe to reconnect and send it once more.
 */
int mc_cl_master_call(struct conns *t, struct mc_msg *resp, struct mc_err *err);

/* The calling thread's connections for c, made on its first call. */
struct conns *mc_cl_conns_of(struct mc_client *c, struct mc_err *err);

/* The "replicas" of a master's answer, at most MC_REPLICAS_MAX of them. */
int mc_cl_parse_replicas(const msgpack_object *body, struct rep *reps, unsigned *nrep,
			 struct mc_err *err);

/*
 * After a renewal: the replicas of a key whose first `tried` entries of
 * reps were tried, followed by those of fresh (the master's new list,
 * with new grants) not among them, by replica id; at most
 * MC_REPLICAS_MAX in all. Returns the new count.
 */
unsigned mc_cl_renewed_reps(struct rep *reps, unsigned tried, const struct rep *fresh,
			    unsigned nfresh);

/* The version a read or write is about, for the data plane. */
struct mc_dp_obj mc_cl_dp_obj(const struct conns *t, const char *key, size_t klen, uint64_t version,
			      uint64_t len, uint64_t checksum, const struct rep *r);

/* A wave of at most cap items; wave_reset empties it for the next round. */
int mc_cl_wave_init(struct wave *w, size_t cap, struct mc_err *err);

void mc_cl_wave_free(struct wave *w);

void mc_cl_wave_reset(struct wave *w);

/* Add an item for addr; false when it has to wait for a later wave. */
bool mc_cl_wave_add(struct wave *w, void *item, const char *addr, uint64_t bytes);

/*
 * Send every group's requests, then read the answers group by group; each
 * item ends recorded by ops (recv or fail). A group whose cached
 * connection went stale is redone once on a fresh one.
 */
void mc_cl_wave_run(struct conns *t, const struct wave_ops *ops, struct wave *w);

#endif
