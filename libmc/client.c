/*
 * The client API over synchronous rpcc connections: per calling thread,
 * one to the master and a small LRU cache of them to peers.
 *
 * A client holds only what its options said; everything a call changes
 * lives in the calling thread's struct conns, found through a one-entry
 * thread-local cache and otherwise in the client's list under a mutex,
 * so concurrent calls from different threads share no mutable state.
 *
 * Data-plane work (peer reads and writes) runs in "waves": the pending
 * operations are grouped by peer address, every group's requests are sent
 * and flushed first, then the responses are read group by group, so the
 * peers work in parallel while this thread stays simple. A wave holds at
 * most one group per cache slot (so no connection it uses gets evicted
 * under it) and about WAVE_BYTES of bulk per peer (so a peer never queues
 * more for us than its output cap allows). Whatever does not fit waits for
 * the next wave; a read that failed moves on to its next replica there.
 * What one read or write says on the wire, and how its answer is
 * checked, is the data plane's (mc/dataplane.h).
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/client.h"
#include "mc/dataplane.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/tier.h"
#include "mc/transport.h"
#include "mc/wire.h"

#define PEER_CACHE 32
#define WAVE_BYTES ((uint64_t)64 << 20)
/* Keys per pipelined round to the master; bounds memory and message size. */
#define CHUNK_KEYS 128
#define EXIST_CHUNK 1024
#define LIST_PAGE 1000
#define DEFAULT_TIMEOUT_MS 30000
/* Pause before a put refused for want of room asks again (once). */
#define PUT_RETRY_NS (20 * 1000 * 1000)

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
	pthread_mutex_t lock; /* guards threads */
	struct conns *threads;
	uint64_t put_retries; /* atomic */
	/* mc_client_on_progress */
	void (*progress)(void *arg, uint64_t moved, uint64_t total);
	void *progress_arg;
};

static uint64_t next_client_id; /* atomic */
static _Thread_local uint64_t tl_id;
static _Thread_local struct conns *tl_conns;

/* ---- small helpers ---- */

/*
 * The caller's options as this library knows them: the fields its size
 * covers, zero (the defaults) after them. NULL is all defaults.
 */
static int
take_opts(void *dst, size_t dst_size, const void *src, const char *what, const char *init,
	  struct mc_err *err)
{
	size_t n;

	memset(dst, 0, dst_size);
	if (src == NULL)
		return 0;
	memcpy(&n, src, sizeof(n));
	if (n < sizeof(size_t))
		return mc_err_set(err, MC_ERR_INVALID,
				  "invalid %s: its size is not set (initialise it with %s)", what,
				  init);
	memcpy(dst, src, n < dst_size ? n : dst_size);
	return 0;
}

static int
check_key(const void *key, size_t len, struct mc_err *err)
{
	/* in the master's words (it checks again) */
	if (key == NULL || len == 0 || len > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "key length %zu out of range 1..%d",
				  key == NULL ? 0 : len, MC_KEY_MAX);
	return 0;
}

int
mc_key_chain_parent(const void *key, size_t key_len, char *out, size_t cap, size_t *out_len)
{
	const char *k = key, *hash = memrchr(key, '#', key_len), *d, *end = k + key_len;
	uint64_t n = 0;
	int len;

	if (hash == NULL || hash + 1 == end || (hash[1] == '0' && hash + 2 != end))
		return 0;
	for (d = hash + 1; d < end; d++) {
		if (*d < '0' || *d > '9' || n > (UINT64_MAX - 9) / 10)
			return 0;
		n = n * 10 + (uint64_t)(*d - '0');
	}
	if (n == 0)
		return 0;
	if ((size_t)(hash - k) >= cap)
		return -1;
	memcpy(out, k, (size_t)(hash - k));
	len = snprintf(out + (hash - k), cap - (size_t)(hash - k), "#%llu",
		       (unsigned long long)(n - 1));
	if (len < 0 || (size_t)len >= cap - (size_t)(hash - k))
		return -1;
	*out_len = (size_t)(hash - k) + (size_t)len;
	return 1;
}

/* Errors that mean the connection itself is gone or unusable. */
static bool
is_transport(int code)
{
	return code == MC_ERR_UNAVAILABLE || code == MC_ERR_PROTO || code == MC_ERR_TIMEOUT;
}

/*
 * Turn a failure into "cannot WHAT 'KEY' [at ADDR]: why". The address is
 * added only when the inner message does not already name it (a connect
 * error does).
 */
static void
key_err(struct mc_err *out, int code, const char *what, const char *key, size_t klen,
	const char *prep, const char *addr, const char *why)
{
	char buf[MC_ERR_MSG_MAX];

	/* why may alias out->msg */
	snprintf(buf, sizeof(buf), "%s", why);
	if (addr && !strstr(buf, addr))
		mc_err_set(out, code, "cannot %s '%.*s' %s %s: %s", what, MC_KSHOWN(klen), key,
			   prep, addr, buf);
	else
		mc_err_set(out, code, "cannot %s '%.*s': %s", what, MC_KSHOWN(klen), key, buf);
}

/* The remote status in a batch item's error map, for per-key results. */
static int
item_error(const msgpack_object *item, struct mc_err *err)
{
	const msgpack_object *e = mc_map_get(item, "error");
	const char *s;
	size_t n;
	int code;

	if (!e || e->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (mc_map_str(e, "code", &s, &n, NULL) != 1)
		return mc_err_set(err, MC_ERR_PROTO, "error without a code");
	code = mc_status_from_name(s, n);
	if (mc_map_str(e, "msg", &s, &n, NULL) == 1)
		return mc_err_set(err, code, "%.*s", (int)(n > 200 ? 200 : n), s);
	return mc_err_set(err, code, "%s", mc_status_name(code));
}

/* "keys": [key...] */
static void
pack_keys(msgpack_packer *pk, const struct mc_key *keys, size_t n)
{
	size_t i;

	mc_pack_key(pk, "keys");
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		mc_pack_strn(pk, keys[i].data, keys[i].len);
}

/* ---- connections ---- */

/*
 * A client that named no tenant speaks for the one the master bound to
 * its token (the default one without authentication), as hello's answer
 * says. Every connection gets the same answer, and the first comes
 * before any data-plane call reads the name, so it is written once.
 */
static int
learn_tenant(struct mc_client *c, const struct mc_msg *m, struct mc_err *err)
{
	char t[MC_NAME_MAX + 1] = "";

	if (mc_map_strcpy(m->body, "tenant", t, sizeof(t), err) < 0)
		return -1;
	if (t[0] == '\0' || strcmp(t, c->tenant) == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	strcpy(c->tenant, t);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* A new master connection, greeted with hello: the tenant, token, host, domain. */
static struct mc_rpcc *
master_hello(struct mc_client *c, struct mc_err *err)
{
	msgpack_packer *pk;
	struct mc_msg m;
	struct mc_rpcc *r;

	r = mc_rpcc_connect(c->master_addr, c->timeout_ms, err);
	if (!r)
		return NULL;
	pk = mc_rpcc_begin(r, "hello");
	msgpack_pack_map(pk, 2 + c->tenant_given + (c->token != NULL) + (c->domain != NULL));
	if (c->tenant_given)
		mc_pack_kv_str(pk, "tenant", c->tenant);
	mc_pack_kv_str(pk, "host", c->host);
	if (c->token)
		mc_pack_kv_str(pk, "token", c->token);
	if (c->domain)
		mc_pack_kv_str(pk, "domain", c->domain);
	mc_transport_pack_ours(pk);
	if (mc_rpcc_call(r, &m, err) < 0) {
		char why[MC_ERR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", err->msg);
		mc_err_set(err, err->code, "hello to master %s failed: %s", c->master_addr, why);
		mc_rpcc_close(r);
		return NULL;
	}
	if (!c->tenant_given && learn_tenant(c, &m, err) < 0) {
		mc_msg_release(&m);
		mc_rpcc_close(r);
		return NULL;
	}
	mc_msg_release(&m);
	return r;
}

static struct mc_rpcc *
master_connect(struct conns *t, struct mc_err *err)
{
	struct mc_rpcc *r = master_hello(t->c, err);

	if (r) {
		t->master = r;
		t->master_fresh = true;
	}
	return r;
}

struct mc_rpcc *
mc_client_open_master(struct mc_client *c, struct mc_err *err)
{
	return master_hello(c, err);
}

static void
master_drop(struct conns *t)
{
	if (t->master)
		mc_rpcc_close(t->master);
	t->master = NULL;
}

static struct mc_rpcc *
master_get(struct conns *t, struct mc_err *err)
{
	return t->master ? t->master : master_connect(t, err);
}

/* Begin a request to the master: the packer for its params, or NULL. */
static msgpack_packer *
master_begin(struct conns *t, const char *method, struct mc_err *err)
{
	struct mc_rpcc *r = master_get(t, err);

	return r ? mc_rpcc_begin(r, method) : NULL;
}

/*
 * The request begun with master_begin, one round trip. A connection that
 * had been idle may have died (master restarted): when a reused
 * connection reports it is unavailable, the request never reached a live
 * master, so it is safe to reconnect and send it once more.
 */
static int
master_call(struct conns *t, struct mc_msg *resp, struct mc_err *err)
{
	struct mc_rpcc *old = t->master, *r;
	bool reused = !t->master_fresh;

	t->master_fresh = false;
	if (mc_rpcc_call(old, resp, err) == 0)
		return 0;
	if (!is_transport(err->code))
		return -1;
	if (!reused || err->code != MC_ERR_UNAVAILABLE) {
		master_drop(t);
		return -1;
	}
	t->master = NULL;
	r = master_connect(t, err);
	if (r && mc_rpcc_begin_copy(r, old, err) < 0)
		master_drop(t);
	mc_rpcc_close(old);
	if (!t->master)
		return -1;
	t->master_fresh = false;
	if (mc_rpcc_call(r, resp, err) == 0)
		return 0;
	if (is_transport(err->code))
		master_drop(t);
	return -1;
}

/* A peer connection's bytes, counted toward its thread's wave. */
static void
peer_moved(void *arg, uint64_t n)
{
	struct conns *t = arg;

	t->moved += n;
	if (t->c->progress != NULL)
		t->c->progress(t->c->progress_arg, t->moved < t->total ? t->moved : t->total,
			       t->total);
}

/* A peer connection from the cache, or a new one (*reused tells which). */
static struct mc_rpcc *
peer_get(struct conns *t, const char *addr, bool *reused, struct mc_err *err)
{
	struct peer_slot *victim = NULL;
	size_t i;

	for (i = 0; i < PEER_CACHE; i++) {
		struct peer_slot *s = &t->peers[i];

		if (s->r && strcmp(s->addr, addr) == 0) {
			s->used = ++t->tick;
			*reused = true;
			return s->r;
		}
		if (!victim || s->used < victim->used)
			victim = s;
	}
	if (victim->r)
		mc_rpcc_close(victim->r);
	victim->r = NULL;
	victim->used = 0;
	*reused = false;
	if (strlen(addr) >= sizeof(victim->addr)) {
		mc_err_set(err, MC_ERR_PROTO, "peer address too long");
		return NULL;
	}
	victim->r = mc_rpcc_connect(addr, t->c->timeout_ms, err);
	if (!victim->r)
		return NULL;
	mc_rpcc_on_bytes(victim->r, peer_moved, t);
	strcpy(victim->addr, addr);
	victim->used = ++t->tick;
	return victim->r;
}

static void
peer_drop(struct conns *t, struct mc_rpcc *r)
{
	size_t i;

	for (i = 0; i < PEER_CACHE; i++) {
		if (t->peers[i].r == r) {
			mc_rpcc_close(r);
			t->peers[i].r = NULL;
			t->peers[i].used = 0;
			return;
		}
	}
	mc_rpcc_close(r);
}

/* The calling thread's connections for c, made on its first call. */
static struct conns *
conns_of(struct mc_client *c, struct mc_err *err)
{
	pthread_t self = pthread_self();
	struct conns *t;

	if (tl_id == c->id)
		return tl_conns;
	pthread_mutex_lock(&c->lock);
	for (t = c->threads; t && !pthread_equal(t->owner, self); t = t->next)
		;
	if (!t && (t = calloc(1, sizeof(*t))) != NULL) {
		t->csum = mc_checksum_stream_new();
		if (t->csum == NULL) {
			free(t);
			t = NULL;
		} else {
			t->c = c;
			t->owner = self;
			t->next = c->threads;
			c->threads = t;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!t) {
		mc_err_errno(err, "cannot allocate a thread's connections");
		return NULL;
	}
	tl_id = c->id;
	tl_conns = t;
	return t;
}

static void
conns_free(struct conns *t)
{
	size_t i;

	/* Releases still queued go out now rather than wait for their TTL. */
	if (t->master && mc_rpcc_queued(t->master)) {
		struct mc_err e;

		(void)mc_rpcc_flush(t->master, &e);
	}
	master_drop(t);
	for (i = 0; i < PEER_CACHE; i++)
		if (t->peers[i].r)
			mc_rpcc_close(t->peers[i].r);
	mc_checksum_stream_free(t->csum);
	free(t);
}

/* ---- constructor ---- */

static const char *
pick(const char *given, const char *env)
{
	const char *v;

	if (given)
		return given;
	v = getenv(env);
	return v && *v ? v : NULL;
}

struct mc_client *
mc_client_new(const struct mc_client_opts *given, struct mc_err *err)
{
	struct mc_client_opts opts;
	struct mc_client *c;
	struct conns *t;
	const char *master, *tenant, *token, *domain;
	bool c_tenant_given = false;

	if (take_opts(&opts, sizeof(opts), given, "client options", "MC_CLIENT_OPTS_INIT", err) < 0)
		return NULL;
	master = pick(opts.master, "MC_MASTER");
	tenant = pick(opts.tenant, "MC_TENANT");
	token = pick(opts.token, "MC_TOKEN");
	domain = pick(opts.domain, "MC_DOMAIN");
	if (!master)
		master = MC_DEFAULT_MASTER;
	if (!tenant)
		tenant = MC_DEFAULT_TENANT;
	else
		c_tenant_given = true;

	c = calloc(1, sizeof(*c));
	if (!c) {
		mc_err_errno(err, "cannot allocate a client");
		return NULL;
	}
	c->id = __atomic_add_fetch(&next_client_id, 1, __ATOMIC_RELAXED);
	pthread_mutex_init(&c->lock, NULL);
	if (strlen(master) >= sizeof(c->master_addr)) {
		mc_err_set(err, MC_ERR_INVALID, "invalid master address: too long");
		goto fail;
	}
	strcpy(c->master_addr, master);
	if (!*tenant || strlen(tenant) > MC_NAME_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "invalid tenant '%.*s': must be 1 to %d bytes",
			   MC_KSHOW, tenant, MC_NAME_MAX);
		goto fail;
	}
	strcpy(c->tenant, tenant);
	c->tenant_given = c_tenant_given;
	if (opts.host)
		snprintf(c->host, sizeof(c->host), "%s", opts.host);
	else if (gethostname(c->host, sizeof(c->host) - 1) < 0)
		strcpy(c->host, "localhost");
	if (token && !(c->token = strdup(token))) {
		mc_err_errno(err, "cannot allocate a client");
		goto fail;
	}
	if (domain && !(c->domain = strdup(domain))) {
		mc_err_errno(err, "cannot allocate a client");
		goto fail;
	}
	c->timeout_ms = opts.timeout_ms > 0 ? opts.timeout_ms : DEFAULT_TIMEOUT_MS;
	if (!(t = conns_of(c, err)) || !master_connect(t, err))
		goto fail;
	return c;
fail:
	mc_client_free(c);
	return NULL;
}

void
mc_client_free(struct mc_client *c)
{
	struct conns *t, *next;

	if (!c)
		return;
	for (t = c->threads; t; t = next) {
		next = t->next;
		conns_free(t);
	}
	if (tl_id == c->id)
		tl_id = 0;
	pthread_mutex_destroy(&c->lock);
	free(c->token);
	free(c->domain);
	free(c);
}

void
mc_client_on_progress(struct mc_client *c, void (*fn)(void *arg, uint64_t moved, uint64_t total),
		      void *arg)
{
	c->progress = fn;
	c->progress_arg = arg;
}

void
mc_client_stats(const struct mc_client *c, struct mc_client_stats *out)
{
	struct mc_client_stats s = MC_CLIENT_STATS_INIT;
	size_t n = out->size < sizeof(s) ? out->size : sizeof(s);

	s.put_retries = __atomic_load_n(&c->put_retries, __ATOMIC_RELAXED);
	if (n > sizeof(size_t))
		memcpy((char *)out + sizeof(size_t), (char *)&s + sizeof(size_t),
		       n - sizeof(size_t));
}

struct mc_rpcc *
mc_client_master(struct mc_client *c)
{
	struct mc_err err;
	struct conns *t = conns_of(c, &err);

	return t ? master_get(t, &err) : NULL;
}

/* ---- replica lists ---- */

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

static int
parse_replicas(const msgpack_object *body, struct rep *reps, unsigned *nrep, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(body, "replicas");
	const char *g;
	uint32_t i;
	int rc;

	*nrep = 0;
	if (!a)
		return 0;
	if (a->size > MC_REPLICAS_MAX)
		return mc_err_set(err, MC_ERR_PROTO, "%u replicas listed, at most %d expected",
				  a->size, MC_REPLICAS_MAX);
	for (i = 0; i < a->size; i++) {
		const msgpack_object *o = &a->ptr[i];
		struct rep *r = &reps[i];

		if (mc_map_u64(o, "replica_id", &r->id, err) != 1 ||
		    mc_map_strcpy(o, "addr", r->addr, sizeof(r->addr), err) != 1)
			return mc_err_set(err, MC_ERR_PROTO, "malformed replica in a replica list");
		r->peer_id = 0;
		if (mc_map_u64(o, "peer_id", &r->peer_id, err) < 0 ||
		    (rc = mc_map_u64(o, "drop_in_ms", &r->drop_in_ms, err)) < 0)
			return mc_err_set(err, MC_ERR_PROTO, "malformed peer in a replica list");
		r->has_drop = rc > 0;
		snprintf(r->tier, sizeof(r->tier), "%s", mc_tier_name(MC_TIER_DRAM));
		if (mc_map_strcpy(o, "tier", r->tier, sizeof(r->tier), err) < 0)
			return mc_err_set(err, MC_ERR_PROTO, "malformed tier in a replica list");
		r->glen = 0;
		if (mc_map_str(o, "grant", &g, &r->glen, err) < 0 || r->glen > GRANT_MAX)
			return mc_err_set(err, MC_ERR_PROTO, "malformed grant in a replica list");
		if (r->glen > 0)
			memcpy(r->grant, g, r->glen);
	}
	*nrep = a->size;
	return 0;
}

/* ---- waves of pipelined peer operations ---- */

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

static int
wave_init(struct wave *w, size_t cap, struct mc_err *err)
{
	memset(w, 0, sizeof(*w));
	w->items = calloc(cap ? cap : 1, sizeof(*w->items));
	w->grp = calloc(cap ? cap : 1, sizeof(*w->grp));
	if (!w->items || !w->grp) {
		free(w->items);
		free(w->grp);
		return mc_err_errno(err, "cannot allocate a batch");
	}
	w->cap = cap;
	return 0;
}

static void
wave_free(struct wave *w)
{
	free(w->items);
	free(w->grp);
}

static void
wave_reset(struct wave *w)
{
	w->n = 0;
	w->ngroups = 0;
}

/* Add an item for addr; false when it has to wait for a later wave. */
static bool
wave_add(struct wave *w, void *item, const char *addr, uint64_t bytes)
{
	struct wave_group *g = NULL;
	size_t i;

	for (i = 0; i < w->ngroups; i++) {
		if (strcmp(w->g[i].addr, addr) == 0) {
			g = &w->g[i];
			break;
		}
	}
	if (!g) {
		if (w->ngroups == PEER_CACHE || w->n == w->cap)
			return false;
		g = &w->g[w->ngroups++];
		memset(g, 0, sizeof(*g));
		g->addr = addr;
	} else if (g->bytes + bytes > WAVE_BYTES || w->n == w->cap) {
		return false;
	}
	g->bytes += bytes;
	w->items[w->n] = item;
	w->grp[w->n] = (int)i;
	w->n++;
	return true;
}

static int
group_send(struct conns *t, const struct wave_ops *ops, struct wave *w, size_t gi,
	   struct mc_err *err)
{
	struct wave_group *g = &w->g[gi];
	size_t i;

	for (i = 0; i < w->n; i++)
		if (w->grp[i] == (int)gi && ops->send(t, g->r, w->items[i], err) < 0)
			return -1;
	return mc_rpcc_flush(g->r, err);
}

static int
group_recv(struct conns *t, const struct wave_ops *ops, struct wave *w, size_t gi, size_t *done,
	   struct mc_err *err)
{
	struct wave_group *g = &w->g[gi];
	size_t i;

	*done = 0;
	for (i = 0; i < w->n; i++) {
		if (w->grp[i] != (int)gi)
			continue;
		if (ops->recv(t, g->r, g->addr, w->items[i], err) < 0)
			return -1;
		(*done)++;
	}
	return 0;
}

/* Fail the items of a group after the first skip of them. */
static void
group_fail(const struct wave_ops *ops, struct wave *w, size_t gi, size_t skip,
	   const struct mc_err *err)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (w->grp[i] != (int)gi)
			continue;
		if (skip) {
			skip--;
			continue;
		}
		ops->fail(w->items[i], w->g[gi].addr, err);
	}
}

/* (Re)connect a group and send its requests; false on failure. */
static bool
group_start(struct conns *t, const struct wave_ops *ops, struct wave *w, size_t gi)
{
	struct wave_group *g = &w->g[gi];

	g->r = peer_get(t, g->addr, &g->reused, &g->err);
	if (!g->r)
		return false;
	if (group_send(t, ops, w, gi, &g->err) == 0)
		return true;
	peer_drop(t, g->r);
	g->r = NULL;
	return false;
}

static void
wave_run(struct conns *t, const struct wave_ops *ops, struct wave *w)
{
	size_t gi, done;

	t->moved = 0;
	t->total = 0;
	for (gi = 0; gi < w->ngroups; gi++)
		t->total += w->g[gi].bytes;
	/* Send everything first so that all the peers work at once. */
	for (gi = 0; gi < w->ngroups; gi++) {
		struct wave_group *g = &w->g[gi];

		if (group_start(t, ops, w, gi))
			continue;
		/* a cached connection may simply have gone stale: retry once */
		g->failed = !g->reused || !group_start(t, ops, w, gi);
	}
	for (gi = 0; gi < w->ngroups; gi++) {
		struct wave_group *g = &w->g[gi];

		if (g->failed) {
			group_fail(ops, w, gi, 0, &g->err);
			continue;
		}
		/*
		 * A stale connection usually only shows when its first answer
		 * fails to come; nothing was done on it, so redo the group once
		 * on a fresh one (peer_get opens a new one: reused turns false).
		 */
		while (group_recv(t, ops, w, gi, &done, &g->err) != 0) {
			peer_drop(t, g->r);
			g->r = NULL;
			if (done != 0 || !g->reused || !group_start(t, ops, w, gi)) {
				group_fail(ops, w, gi, done, &g->err);
				break;
			}
		}
	}
}

/* ---- reads ---- */

enum { ST_PENDING, ST_DONE, ST_FAILED };

struct get_key {
	const char *key;
	size_t klen;
	struct mc_bulk_sink sink; /* where the bytes go, of the version's size */
	uint64_t version, size, checksum;
	uint64_t lease_id; /* this reader's lease, released once the read is over */
	unsigned nrep, next;
	struct rep rep[MC_REPLICAS_MAX];
	int state;
	bool all_checksum; /* every replica tried so far failed its checksum */
	/*
	 * Replicas whose peer had no copy when asked (NOT_FOUND): the copy
	 * went between the replica list and the read. The master counts them.
	 */
	unsigned raced;
	struct mc_err err;
};

static int
parse_list(const msgpack_object *body, struct get_key *k, struct mc_err *err)
{
	if (mc_map_u64(body, "version", &k->version, err) != 1 ||
	    mc_map_u64(body, "size", &k->size, err) != 1 ||
	    mc_map_u64(body, "checksum", &k->checksum, err) != 1)
		return mc_err_set(err, MC_ERR_PROTO, "malformed replica list for '%.*s'",
				  MC_KSHOWN(k->klen), k->key);
	/* An older master grants no lease ids: nothing to release. */
	if (mc_map_u64(body, "lease_id", &k->lease_id, err) < 0)
		k->lease_id = 0;
	if (parse_replicas(body, k->rep, &k->nrep, err) < 0)
		return -1;
	if (k->size > SIZE_MAX)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "'%.*s' is too large for memory",
				  MC_KSHOWN(k->klen), k->key);
	k->all_checksum = true;
	k->state = ST_PENDING;
	return 0;
}

/* The version a read or write is about, for the data plane. */
static struct mc_dp_obj
dp_obj(const struct conns *t, const char *key, size_t klen, uint64_t version, uint64_t len,
       uint64_t checksum, const struct rep *r)
{
	return (struct mc_dp_obj){ .tenant = t->c->tenant,
				   .key = key,
				   .klen = klen,
				   .version = version,
				   .len = len,
				   .checksum = checksum,
				   .grant = r->grant,
				   .glen = r->glen };
}

static int
read_send(struct conns *t, struct mc_rpcc *r, void *item, struct mc_err *err)
{
	struct get_key *k = item;
	struct mc_dp_obj o =
		dp_obj(t, k->key, k->klen, k->version, k->size, k->checksum, &k->rep[k->next]);

	o.lease_id = k->lease_id;
	return mc_dp_read_send(r, &o, err);
}

/*
 * A replica's peer that could not be reached: say which peer it is and,
 * from the master's word, how long it has before it is dropped (its
 * replicas with it), instead of a bare "connection refused".
 */
static void
peer_down(char *buf, size_t cap, const struct rep *r, const struct mc_err *err)
{
	const char *why = strstr(err->msg, r->addr);
	char when[32];
	int n;

	/* "cannot connect to ADDR: connection refused": the reason alone */
	why = why != NULL && strncmp(why + strlen(r->addr), ": ", 2) == 0
		      ? why + strlen(r->addr) + 2
		      : err->msg;
	n = snprintf(buf, cap, "peer %llu (%s) is not answering (%s)",
		     (unsigned long long)r->peer_id, r->addr, why);
	if (!r->has_drop || n < 0 || (size_t)n >= cap)
		return;
	if (r->drop_in_ms == 0)
		snprintf(buf + n, cap - (size_t)n, "; the master drops it at its next sweep");
	else
		snprintf(buf + n, cap - (size_t)n,
			 "; the master drops it in %s unless it comes back",
			 mc_fmt_duration_ms(r->drop_in_ms, when, sizeof(when)));
}

static void
read_fail(void *item, const char *addr, const struct mc_err *err)
{
	struct get_key *k = item;
	char down[MC_ERR_MSG_MAX];

	if ((err->code == MC_ERR_UNAVAILABLE || err->code == MC_ERR_TIMEOUT) &&
	    k->rep[k->next].peer_id != 0) {
		peer_down(down, sizeof(down), &k->rep[k->next], err);
		key_err(&k->err, err->code, "read", k->key, k->klen, "from", NULL, down);
	} else {
		key_err(&k->err, err->code, "read", k->key, k->klen, "from", addr, err->msg);
	}
	if (err->code != MC_ERR_CHECKSUM)
		k->all_checksum = false;
	k->next++;
}

static int
read_recv(struct conns *t, struct mc_rpcc *r, const char *addr, void *item, struct mc_err *err)
{
	struct get_key *k = item;
	struct mc_dp_obj o =
		dp_obj(t, k->key, k->klen, k->version, k->size, k->checksum, &k->rep[k->next]);
	struct mc_err refused;

	if (mc_dp_read_recv(r, &o, &k->sink, t->csum, &refused, err) < 0)
		return -1;
	if (refused.code == MC_ERR_NOT_FOUND)
		k->raced++;
	if (refused.code != MC_OK)
		read_fail(k, addr, &refused);
	else
		k->state = ST_DONE;
	return 0;
}

static const struct wave_ops read_ops = { read_send, read_recv, read_fail };

/* Settle a key that has no replica left to try. */
static void
read_exhausted(struct get_key *k)
{
	k->state = ST_FAILED;
	if (k->nrep == 0)
		mc_err_set(&k->err, MC_ERR_NOT_FOUND, "cannot get '%.*s': no replica",
			   MC_KSHOWN(k->klen), k->key);
	else if (k->all_checksum)
		mc_err_set(&k->err, MC_ERR_CHECKSUM, "checksum mismatch on every replica of '%.*s'",
			   MC_KSHOWN(k->klen), k->key);
}

/*
 * Tell the master how many reads found their copy gone (read_raced
 * {count}), as a notification that leaves with the next request or
 * when the connection closes; a lost one only loses the count.
 */
static void
report_races(struct conns *t, const struct get_key *ks, size_t n)
{
	uint64_t raced = 0;
	msgpack_packer *pk;
	struct mc_err e;

	for (size_t i = 0; i < n; i++)
		raced += ks[i].raced;
	if (raced == 0 || !t->master)
		return;
	pk = mc_rpcc_begin(t->master, "read_raced");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "count", raced);
	(void)mc_rpcc_notify(t->master, &e);
}

/* Read every pending key, replica after replica, into its buffer. */
static int
read_keys(struct conns *t, struct get_key *ks, size_t n, struct mc_err *err)
{
	struct wave w;
	size_t i;

	if (wave_init(&w, n, err) < 0)
		return -1;
	for (;;) {
		wave_reset(&w);
		for (i = 0; i < n; i++) {
			struct get_key *k = &ks[i];

			if (k->state != ST_PENDING)
				continue;
			if (k->next >= k->nrep) {
				read_exhausted(k);
				continue;
			}
			wave_add(&w, k, k->rep[k->next].addr, k->size);
		}
		if (w.n == 0)
			break;
		wave_run(t, &read_ops, &w);
	}
	wave_free(&w);
	report_races(t, ks, n);
	return 0;
}

/*
 * End the leases of keys whose read is over (the bytes are verified, or
 * every replica failed). The release is a notification queued on the
 * master connection: it leaves with the next request, so a get costs no
 * extra round trip. If it is lost, the TTL ends the lease.
 */
static void
release_leases(struct conns *t, const struct get_key *ks, size_t n)
{
	msgpack_packer *pk;
	struct mc_err e;
	size_t i, j, m;

	for (i = 0; i < n && t->master; i += CHUNK_KEYS) {
		size_t end = n - i < CHUNK_KEYS ? n : i + CHUNK_KEYS;

		for (m = 0, j = i; j < end; j++)
			m += ks[j].lease_id != 0;
		if (m == 0)
			continue;
		pk = mc_rpcc_begin(t->master, "release");
		msgpack_pack_map(pk, 1);
		mc_pack_key(pk, "lease_ids");
		msgpack_pack_array(pk, m);
		for (j = i; j < end; j++)
			if (ks[j].lease_id != 0)
				msgpack_pack_uint64(pk, ks[j].lease_id);
		(void)mc_rpcc_notify(t->master, &e);
	}
}

static int
get_list(struct conns *t, struct get_key *k, struct mc_err *err)
{
	msgpack_packer *pk = master_begin(t, "get_replica_list", err);
	struct mc_msg m;
	int rc;

	if (pk) {
		msgpack_pack_map(pk, 1);
		mc_pack_kv_strn(pk, "key", k->key, k->klen);
	}
	if (!pk || master_call(t, &m, err) < 0) {
		key_err(err, err->code, "get", k->key, k->klen, "at",
			is_transport(err->code) ? t->c->master_addr : NULL, err->msg);
		return -1;
	}
	rc = parse_list(m.body, k, err);
	mc_msg_release(&m);
	return rc;
}

static struct get_key *
get_one(struct conns *t, const void *key, size_t klen, struct mc_err *err)
{
	struct get_key *k;

	if (check_key(key, klen, err) < 0)
		return NULL;
	if (!(k = calloc(1, sizeof(*k)))) {
		mc_err_errno(err, "cannot allocate");
		return NULL;
	}
	k->key = key;
	k->klen = klen;
	if (get_list(t, k, err) < 0) {
		free(k);
		return NULL;
	}
	return k;
}

static int
get_finish(struct conns *t, struct get_key *k, struct mc_err *err)
{
	if (read_keys(t, k, 1, err) < 0)
		return -1;
	if (k->state != ST_DONE) {
		*err = k->err;
		return -1;
	}
	return 0;
}

int
mc_get(struct mc_client *c, const void *key, size_t key_len, void *buf, size_t cap, size_t *len,
       struct mc_err *err)
{
	struct conns *t = conns_of(c, err);
	struct get_key *k = t ? get_one(t, key, key_len, err) : NULL;
	int rc = -1;

	if (!k)
		return -1;
	*len = k->size;
	if (k->size > cap) {
		mc_err_set(err, MC_ERR_TOO_LARGE, "cannot get '%.*s': %llu bytes, buffer holds %zu",
			   MC_KSHOWN(key_len), (const char *)key, (unsigned long long)k->size, cap);
		goto out;
	}
	mc_bulk_sink_mem(&k->sink, buf, k->size);
	rc = get_finish(t, k, err);
out:
	release_leases(t, k, 1);
	free(k);
	return rc;
}

int
mc_get_fd(struct mc_client *c, const void *key, size_t key_len, int fd, size_t *len,
	  struct mc_err *err)
{
	struct conns *t = conns_of(c, err);
	struct get_key *k = t ? get_one(t, key, key_len, err) : NULL;
	int rc;

	if (!k)
		return -1;
	*len = k->size;
	mc_bulk_sink_fd(&k->sink, fd, 0, k->size);
	rc = get_finish(t, k, err);
	mc_bulk_sink_release(&k->sink);
	release_leases(t, k, 1);
	free(k);
	return rc;
}

int
mc_get_alloc(struct mc_client *c, const void *key, size_t key_len, void **buf, size_t *len,
	     struct mc_err *err)
{
	struct conns *t = conns_of(c, err);
	struct get_key *k = t ? get_one(t, key, key_len, err) : NULL;
	int rc = -1;

	*buf = NULL;
	if (!k)
		return -1;
	/* one spare byte so that an empty object still gets a real pointer */
	mc_bulk_sink_mem(&k->sink, malloc(k->size + 1), k->size);
	if (!k->sink.data) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate %llu bytes for '%.*s'",
			   (unsigned long long)k->size, MC_KSHOWN(key_len), (const char *)key);
		goto out;
	}
	rc = get_finish(t, k, err);
	if (rc == 0) {
		*buf = k->sink.data;
		*len = k->size;
	} else {
		free(k->sink.data);
	}
out:
	release_leases(t, k, 1);
	free(k);
	return rc;
}

/* One chunk of a batch get; -1 only when the master failed. */
static int
batch_get_chunk(struct conns *t, size_t n, const struct mc_key *keys, void *const *bufs,
		const size_t *caps, size_t *lens, int *results, struct get_key *ks,
		struct mc_err *err)
{
	const msgpack_object_array *items;
	msgpack_packer *pk;
	struct mc_msg m;
	size_t i;
	int rc;

	memset(ks, 0, n * sizeof(*ks));
	if (!(pk = master_begin(t, "batch_get_replica_list", err)))
		return -1;
	msgpack_pack_map(pk, 1);
	pack_keys(pk, keys, n);
	if (master_call(t, &m, err) < 0)
		return -1;
	items = mc_map_array(m.body, "items");
	if (!items || items->size != n) {
		mc_msg_release(&m);
		return mc_err_set(err, MC_ERR_PROTO, "batch_get_replica_list: %zu items expected",
				  n);
	}
	for (i = 0; i < n; i++) {
		const msgpack_object *it = &items->ptr[i];
		struct get_key *k = &ks[i];

		k->key = keys[i].data;
		k->klen = keys[i].len;
		k->state = ST_FAILED;
		lens[i] = 0;
		if (item_error(it, &k->err) < 0) {
			results[i] = k->err.code;
			continue;
		}
		if (parse_list(it, k, &k->err) < 0) {
			k->state = ST_FAILED;
			results[i] = k->err.code;
			continue;
		}
		lens[i] = k->size;
		if (k->size > caps[i]) {
			k->state = ST_FAILED;
			results[i] = MC_ERR_TOO_LARGE;
			continue;
		}
		mc_bulk_sink_mem(&k->sink, bufs[i], k->size);
		/* to be read: settled below */
		results[i] = MC_OK;
	}
	mc_msg_release(&m);
	rc = read_keys(t, ks, n, err);
	release_leases(t, ks, n);
	if (rc < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (results[i] == MC_OK && ks[i].state != ST_DONE)
			results[i] = ks[i].err.code ? ks[i].err.code : MC_ERR_INTERNAL;
	return 0;
}

int
mc_batch_get(struct mc_client *c, size_t n, const struct mc_key *keys, void *const *bufs,
	     const size_t *caps, size_t *lens, int *results, struct mc_err *err)
{
	struct conns *t = conns_of(c, err);
	struct get_key *ks;
	size_t i, done, m;
	bool any = false;
	int rc = 0;

	for (i = 0; i < n; i++) {
		results[i] = MC_ERR_INVALID;
		lens[i] = 0;
	}
	if (!t)
		return -1;
	if (!(ks = calloc(CHUNK_KEYS, sizeof(*ks))))
		return mc_err_errno(err, "cannot allocate a batch");
	for (done = 0; done < n; done += m) {
		m = n - done < CHUNK_KEYS ? n - done : CHUNK_KEYS;
		/* the master refuses the whole call for one bad key: weed them out */
		for (i = 0; i < m; i++)
			if (check_key(keys[done + i].data, keys[done + i].len, NULL) < 0)
				break;
		if (i < m) {
			m = i ? i : 1;
			if (i == 0)
				continue;
		}
		if (batch_get_chunk(t, m, keys + done, bufs + done, caps + done, lens + done,
				    results + done, ks, err) < 0) {
			for (i = done; i < n; i++)
				results[i] = err->code;
			rc = -1;
			break;
		}
		any = true;
	}
	free(ks);
	return rc < 0 && !any ? -1 : 0;
}

/* ---- writes ---- */

struct put_key;

struct put_rep {
	struct rep r;
	struct put_key *owner;
	int state;
};

struct put_key {
	const char *key;
	size_t klen;
	struct mc_key parent; /* len 0: none */
	const void *buf;
	size_t len;
	uint64_t checksum, version;
	bool started;
	bool skip; /* not in this round of put_starts */
	int status;
	unsigned nrep;
	struct put_rep rep[MC_REPLICAS_MAX];
	struct mc_err err; /* first failure */
};

static void
pack_put_start(msgpack_packer *pk, const struct put_key *k, const struct mc_put_opts *o)
{
	bool ttl = o->soft_pin == MC_SOFT_PIN_ENABLE && o->has_soft_pin_ttl;
	bool pin = o->soft_pin == MC_SOFT_PIN_ENABLE || o->soft_pin == MC_SOFT_PIN_DISABLE;

	msgpack_pack_map(pk, 7 + (o->group != NULL) + (k->parent.len > 0) + pin + ttl +
				     (o->tier != NULL));
	mc_pack_kv_strn(pk, "key", k->key, k->klen);
	mc_pack_kv_u64(pk, "size", k->len);
	mc_pack_kv_u64(pk, "replicas", o->replicas ? o->replicas : 1);
	mc_pack_kv_str(pk, "type", o->type ? o->type : MC_DEFAULT_TYPE);
	if (o->group)
		mc_pack_kv_str(pk, "group", o->group);
	if (k->parent.len > 0)
		mc_pack_kv_strn(pk, "parent", k->parent.data, k->parent.len);
	mc_pack_kv_bool(pk, "hard_pin", o->hard_pin);
	mc_pack_kv_u64(pk, "checksum", k->checksum);
	mc_pack_kv_bool(pk, "upsert", o->upsert);
	/* Preserve is the master's default: an absent field says it. */
	if (pin)
		mc_pack_kv_str(pk, "soft_pin",
			       o->soft_pin == MC_SOFT_PIN_ENABLE ? "enable" : "disable");
	if (ttl)
		mc_pack_kv_u64(pk, "soft_pin_ttl_ms", o->soft_pin_ttl_ms);
	if (o->tier != NULL)
		mc_pack_kv_str(pk, "tier", o->tier);
}

static int
write_send(struct conns *t, struct mc_rpcc *r, void *item, struct mc_err *err)
{
	struct put_rep *pr = item;
	struct put_key *k = pr->owner;
	struct mc_dp_obj o = dp_obj(t, k->key, k->klen, k->version, k->len, k->checksum, &pr->r);

	/* the peer ranks its own copies by their chains too */
	o.parent = k->parent.data;
	o.plen = k->parent.len;
	struct mc_bulk_src src = mc_bulk_src_mem(k->buf, k->len);

	return mc_dp_write_send(r, &o, pr->r.tier, &src, err);
}

static void
write_fail(void *item, const char *addr, const struct mc_err *err)
{
	struct put_rep *pr = item;
	struct put_key *k = pr->owner;

	pr->state = ST_FAILED;
	if (k->err.code == 0)
		key_err(&k->err, err->code ? err->code : MC_ERR_INTERNAL, "write", k->key, k->klen,
			"to", addr, err->msg);
}

static int
write_recv(struct conns *t, struct mc_rpcc *r, const char *addr, void *item, struct mc_err *err)
{
	struct put_rep *pr = item;
	struct mc_err refused;

	(void)t;
	if (mc_dp_write_recv(r, &refused, err) < 0)
		return -1;
	if (refused.code != MC_OK)
		write_fail(pr, addr, &refused);
	else
		pr->state = ST_DONE;
	return 0;
}

static const struct wave_ops write_ops = { write_send, write_recv, write_fail };

static void
put_refused(struct put_key *k, const struct mc_err *remote)
{
	key_err(&k->err, remote->code, "put", k->key, k->klen, NULL, NULL, remote->msg);
}

/* Take in a successful put_start answer for one key. */
static void
put_started(struct put_key *k, const struct mc_msg *m)
{
	struct rep reps[MC_REPLICAS_MAX];
	struct mc_err e = { 0 };
	unsigned i;

	if (mc_map_u64(m->body, "version", &k->version, &e) != 1 ||
	    parse_replicas(m->body, reps, &k->nrep, &e) < 0) {
		mc_err_set(&k->err, MC_ERR_PROTO, "cannot put '%.*s': malformed put_start answer",
			   MC_KSHOWN(k->klen), k->key);
		return;
	}
	/* started: from here on it must end with put_end or put_revoke */
	k->started = true;
	for (i = 0; i < k->nrep; i++) {
		k->rep[i].r = reps[i];
		k->rep[i].owner = k;
		k->rep[i].state = ST_PENDING;
	}
	if (k->nrep == 0)
		mc_err_set(&k->err, MC_ERR_PROTO, "cannot put '%.*s': no replica placed",
			   MC_KSHOWN(k->klen), k->key);
}

/* A key put_start refused for want of room, to be asked once more. */
static bool
retry_no_space(const struct put_key *k)
{
	return !k->started && k->err.code == MC_ERR_NO_SPACE;
}

/*
 * put_start for every key (only those retry_no_space picks when retry),
 * pipelined; -1 when the master failed.
 */
static int
put_start_all(struct conns *t, struct put_key *ks, size_t n, const struct mc_put_opts *o,
	      bool retry, struct mc_err *err)
{
	msgpack_packer *pk;
	struct mc_rpcc *r;
	struct mc_msg m;
	struct mc_err e;
	size_t i;

	for (i = 0; retry && i < n; i++)
		if (retry_no_space(&ks[i]))
			memset(&ks[i].err, 0, sizeof(ks[i].err));
		else
			ks[i].skip = true;
	if (n == 1 && !ks[0].skip) {
		/* a lone put may reconnect to a restarted master */
		if ((pk = master_begin(t, "put_start", err)) != NULL)
			pack_put_start(pk, &ks[0], o);
		if (!pk || master_call(t, &m, err) < 0) {
			if (!pk || is_transport(err->code)) {
				key_err(err, err->code, "put", ks[0].key, ks[0].klen, "at",
					t->c->master_addr, err->msg);
				return -1;
			}
			put_refused(&ks[0], err);
			return 0;
		}
		put_started(&ks[0], &m);
		mc_msg_release(&m);
		return 0;
	}
	if (!(r = master_get(t, err)))
		return -1;
	for (i = 0; i < n; i++) {
		if (ks[i].skip)
			continue;
		pack_put_start(mc_rpcc_begin(r, "put_start"), &ks[i], o);
		if (mc_rpcc_send(r, NULL, 0, err) < 0)
			goto fail;
	}
	if (mc_rpcc_flush(r, err) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		if (ks[i].skip)
			continue;
		if (mc_rpcc_recv(r, &m, err) < 0)
			goto fail;
		if (mc_msg_error(&m, &e) < 0)
			put_refused(&ks[i], &e);
		else
			put_started(&ks[i], &m);
		mc_msg_release(&m);
	}
	for (i = 0; i < n; i++)
		ks[i].skip = false;
	return 0;
fail:
	/* keys started before the failure are discarded by the master's put timeout */
	master_drop(t);
	return -1;
}

/* Split a key's replicas into ok and failed ids. */
static void
put_split(const struct put_key *k, uint64_t *ok, size_t *nok, uint64_t *bad, size_t *nbad)
{
	unsigned i;

	*nok = *nbad = 0;
	for (i = 0; i < k->nrep; i++) {
		if (k->rep[i].state == ST_DONE)
			ok[(*nok)++] = k->rep[i].r.id;
		else
			bad[(*nbad)++] = k->rep[i].r.id;
	}
}

/* Queue put_end or put_revoke of a key's version for ids (n 0: all of them). */
static int
send_put_close(struct mc_rpcc *r, const char *method, const struct put_key *k, const uint64_t *ids,
	       size_t n, struct mc_err *err)
{
	msgpack_packer *pk = mc_rpcc_begin(r, method);
	size_t i;

	msgpack_pack_map(pk, 2 + (n > 0));
	mc_pack_kv_strn(pk, "key", k->key, k->klen);
	mc_pack_kv_u64(pk, "version", k->version);
	if (n > 0) {
		mc_pack_key(pk, "replica_ids");
		msgpack_pack_array(pk, n);
		for (i = 0; i < n; i++)
			msgpack_pack_uint64(pk, ids[i]);
	}
	return mc_rpcc_send(r, NULL, 0, err) < 0 ? -1 : 0;
}

/*
 * End every started put: put_end for the written replicas, put_revoke for
 * the rest (all of them when nothing was written). Pipelined.
 */
static int
put_finish(struct conns *t, struct put_key *ks, size_t n, struct mc_err *err)
{
	uint64_t ok[MC_REPLICAS_MAX], bad[MC_REPLICAS_MAX];
	struct mc_rpcc *r = master_get(t, err);
	size_t i, nok, nbad;
	struct mc_err e;
	struct mc_msg m;

	if (!r)
		return -1;
	for (i = 0; i < n; i++) {
		struct put_key *k = &ks[i];

		if (!k->started)
			continue;
		put_split(k, ok, &nok, bad, &nbad);
		if (nok && send_put_close(r, "put_end", k, ok, nok, err) < 0)
			goto fail;
		/* no replica at all (nothing placed): revoke the whole put */
		if ((nbad || !nok) && send_put_close(r, "put_revoke", k, bad, nbad, err) < 0)
			goto fail;
	}
	if (mc_rpcc_flush(r, err) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		struct put_key *k = &ks[i];

		if (!k->started)
			continue;
		put_split(k, ok, &nok, bad, &nbad);
		if (nok) {
			if (mc_rpcc_recv(r, &m, err) < 0)
				goto fail;
			if (mc_msg_error(&m, &e) < 0)
				key_err(&k->err, e.code, "put", k->key, k->klen, NULL, NULL, e.msg);
			else
				k->status = MC_OK;
			mc_msg_release(&m);
		}
		if (nbad || !nok) {
			/* a failed revoke only delays cleanup to the put timeout */
			if (mc_rpcc_recv(r, &m, err) < 0)
				goto fail;
			mc_msg_release(&m);
		}
		if (!nok && k->err.code == 0)
			mc_err_set(&k->err, MC_ERR_INTERNAL, "cannot put '%.*s'",
				   MC_KSHOWN(k->klen), k->key);
	}
	return 0;
fail:
	master_drop(t);
	return -1;
}

/* One chunk of puts; -1 only when the master failed. */
static int
put_chunk(struct conns *t, struct put_key *ks, size_t n, const struct mc_put_opts *o,
	  struct mc_err *err)
{
	struct wave w;
	size_t i;
	unsigned j;

	for (i = 0; i < n; i++) {
		ks[i].checksum = mc_checksum(ks[i].len ? ks[i].buf : "", ks[i].len);
		ks[i].status = MC_ERR_INTERNAL;
	}
	if (put_start_all(t, ks, n, o, false, err) < 0)
		return -1;
	/*
	 * The master already waited (--put-wait) for eviction to make room;
	 * a key it still refused is asked once more after a short pause, in
	 * case the round that frees its room ended just after.
	 */
	for (i = 0; i < n && !retry_no_space(&ks[i]); i++)
		;
	if (i < n) {
		struct timespec pause = { 0, PUT_RETRY_NS };

		for (; i < n; i++)
			if (retry_no_space(&ks[i]))
				__atomic_add_fetch(&t->c->put_retries, 1, __ATOMIC_RELAXED);
		nanosleep(&pause, NULL);
		if (put_start_all(t, ks, n, o, true, err) < 0)
			return -1;
	}
	if (wave_init(&w, n * MC_REPLICAS_MAX, err) == 0) {
		for (;;) {
			wave_reset(&w);
			for (i = 0; i < n; i++) {
				struct put_key *k = &ks[i];

				for (j = 0; k->started && j < k->nrep; j++)
					if (k->rep[j].state == ST_PENDING)
						wave_add(&w, &k->rep[j], k->rep[j].r.addr, k->len);
			}
			if (w.n == 0)
				break;
			wave_run(t, &write_ops, &w);
		}
		wave_free(&w);
	} else {
		/* nothing written: the replicas still pending get revoked below */
		for (i = 0; i < n; i++)
			if (ks[i].err.code == 0)
				ks[i].err = *err;
	}
	if (put_finish(t, ks, n, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (ks[i].status != MC_OK)
			ks[i].status = ks[i].err.code ? ks[i].err.code : MC_ERR_INTERNAL;
	return 0;
}

static int
take_put_opts(struct mc_put_opts *o, const struct mc_put_opts *given, struct mc_err *err)
{
	return take_opts(o, sizeof(*o), given, "put options", "MC_PUT_OPTS_INIT", err);
}

int
mc_put(struct mc_client *c, const void *key, size_t key_len, const void *buf, size_t len,
       const struct mc_put_opts *opts, struct mc_err *err)
{
	struct mc_put_opts o;
	struct put_key *k;
	struct conns *t;
	int rc = -1;

	if (check_key(key, key_len, err) < 0 || take_put_opts(&o, opts, err) < 0)
		return -1;
	if (o.parent.len > 0 && check_key(o.parent.data, o.parent.len, err) < 0)
		return -1;
	if (!(t = conns_of(c, err)))
		return -1;
	if (!(k = calloc(1, sizeof(*k))))
		return mc_err_errno(err, "cannot allocate");
	k->key = key;
	k->klen = key_len;
	k->parent = o.parent;
	k->buf = buf;
	k->len = len;
	if (put_chunk(t, k, 1, &o, err) == 0) {
		if (k->status == MC_OK)
			rc = 0;
		else
			*err = k->err;
	}
	free(k);
	return rc;
}

/* A key a batch put can send: its own bytes and its parent's are valid. */
static bool
put_key_ok(const struct mc_key *keys, const struct mc_put_opts *o, size_t i)
{
	if (check_key(keys[i].data, keys[i].len, NULL) < 0)
		return false;
	return !o->parents || o->parents[i].len == 0 ||
	       check_key(o->parents[i].data, o->parents[i].len, NULL) == 0;
}

int
mc_batch_put(struct mc_client *c, size_t n, const struct mc_key *keys, const void *const *bufs,
	     const size_t *lens, const struct mc_put_opts *opts, int *results, struct mc_err *err)
{
	size_t slot[CHUNK_KEYS];
	struct mc_put_opts o;
	struct put_key *ks;
	struct conns *t;
	size_t i, j, done;
	bool any = false;

	for (i = 0; i < n; i++)
		results[i] = MC_ERR_INVALID;
	if (take_put_opts(&o, opts, err) < 0 || !(t = conns_of(c, err)))
		return -1;
	if (!(ks = calloc(CHUNK_KEYS, sizeof(*ks))))
		return mc_err_errno(err, "cannot allocate a batch");
	for (done = 0; done < n;) {
		/* gather up to a chunk of valid keys; a bad one keeps MC_ERR_INVALID */
		for (j = 0; done < n && j < CHUNK_KEYS; done++) {
			if (!put_key_ok(keys, &o, done))
				continue;
			memset(&ks[j], 0, sizeof(ks[j]));
			ks[j].key = keys[done].data;
			ks[j].klen = keys[done].len;
			if (o.parents)
				ks[j].parent = o.parents[done];
			ks[j].buf = bufs[done];
			ks[j].len = lens[done];
			slot[j++] = done;
		}
		if (j == 0)
			break;
		if (put_chunk(t, ks, j, &o, err) < 0) {
			for (i = 0; i < j; i++)
				results[slot[i]] = err->code;
			for (; done < n; done++)
				if (put_key_ok(keys, &o, done))
					results[done] = err->code;
			free(ks);
			return any ? 0 : -1;
		}
		for (i = 0; i < j; i++)
			results[slot[i]] = ks[i].status;
		any = true;
	}
	free(ks);
	return 0;
}

/* ---- metadata calls ---- */

/* A call on the master about one key: {key[, force]}. */
static int
key_call(struct conns *t, const char *method, const char *verb, const void *key, size_t klen,
	 int force, struct mc_msg *m, struct mc_err *err)
{
	msgpack_packer *pk = master_begin(t, method, err);

	if (pk) {
		msgpack_pack_map(pk, force >= 0 ? 2 : 1);
		mc_pack_kv_strn(pk, "key", key, klen);
		if (force >= 0)
			mc_pack_kv_bool(pk, "force", force);
	}
	if (!pk || master_call(t, m, err) < 0) {
		key_err(err, err->code, verb, key, klen, "at",
			is_transport(err->code) ? t->c->master_addr : NULL, err->msg);
		return -1;
	}
	return 0;
}

int
mc_exist(struct mc_client *c, const void *key, size_t key_len, struct mc_err *err)
{
	struct conns *t;
	struct mc_msg m;
	bool yes = false;

	if (check_key(key, key_len, err) < 0 || !(t = conns_of(c, err)))
		return -1;
	if (key_call(t, "exist", "look up", key, key_len, -1, &m, err) < 0)
		return -1;
	if (mc_map_bool(m.body, "exists", &yes, err) != 1) {
		mc_msg_release(&m);
		return mc_err_set(err, MC_ERR_PROTO, "malformed exist answer for '%.*s'",
				  MC_KSHOWN(key_len), (const char *)key);
	}
	mc_msg_release(&m);
	return yes ? 1 : 0;
}

int
mc_batch_exist(struct mc_client *c, size_t n, const struct mc_key *keys, int *present,
	       struct mc_err *err)
{
	const msgpack_object_array *a;
	msgpack_packer *pk;
	size_t i, done, m;
	struct mc_msg msg;
	struct conns *t;

	for (i = 0; i < n; i++) {
		present[i] = 0;
		if (check_key(keys[i].data, keys[i].len, err) < 0)
			return -1;
	}
	if (!(t = conns_of(c, err)))
		return -1;
	for (done = 0; done < n; done += m) {
		m = n - done < EXIST_CHUNK ? n - done : EXIST_CHUNK;
		if (!(pk = master_begin(t, "batch_exist", err)))
			return -1;
		msgpack_pack_map(pk, 1);
		pack_keys(pk, keys + done, m);
		if (master_call(t, &msg, err) < 0)
			return -1;
		a = mc_map_array(msg.body, "exists");
		if (!a || a->size != m) {
			mc_msg_release(&msg);
			return mc_err_set(err, MC_ERR_PROTO, "batch_exist: %zu answers expected",
					  m);
		}
		for (i = 0; i < m; i++)
			present[done + i] =
				a->ptr[i].type == MSGPACK_OBJECT_BOOLEAN && a->ptr[i].via.boolean;
		mc_msg_release(&msg);
	}
	return 0;
}

int
mc_remove(struct mc_client *c, const void *key, size_t key_len, bool force, struct mc_err *err)
{
	struct conns *t;
	struct mc_msg m;

	if (check_key(key, key_len, err) < 0 || !(t = conns_of(c, err)))
		return -1;
	if (key_call(t, "remove", "remove", key, key_len, force, &m, err) < 0)
		return -1;
	mc_msg_release(&m);
	return 0;
}

int
mc_remove_prefix(struct mc_client *c, const void *prefix, size_t prefix_len, bool force,
		 uint64_t *removed, struct mc_err *err)
{
	struct conns *t = conns_of(c, err);
	msgpack_packer *pk;
	struct mc_msg m;
	uint64_t v = 0;

	if (!t)
		return -1;
	if (prefix == NULL)
		prefix_len = 0;
	if ((pk = master_begin(t, "remove_prefix", err)) != NULL) {
		msgpack_pack_map(pk, 2);
		mc_pack_kv_strn(pk, "prefix", prefix_len ? prefix : "", prefix_len);
		mc_pack_kv_bool(pk, "force", force);
	}
	if (!pk || master_call(t, &m, err) < 0) {
		key_err(err, err->code, "remove prefix", prefix_len ? prefix : "", prefix_len, "at",
			is_transport(err->code) ? t->c->master_addr : NULL, err->msg);
		return -1;
	}
	mc_map_u64(m.body, "removed", &v, NULL);
	mc_msg_release(&m);
	if (removed)
		*removed = v;
	return 0;
}

/* A string field: its bytes, or "" when absent or nil; -1 when of another type. */
static int
str_field(const msgpack_object *map, const char *key, const char **s, size_t *n)
{
	const msgpack_object *o = mc_map_get(map, key);

	*s = "";
	*n = 0;
	if (!o || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_STR && o->type != MSGPACK_OBJECT_BIN)
		return -1;
	*s = o->type == MSGPACK_OBJECT_STR ? o->via.str.ptr : o->via.bin.ptr;
	*n = o->type == MSGPACK_OBJECT_STR ? o->via.str.size : o->via.bin.size;
	return 0;
}

/* Strings copied after the struct and its replicas, in the one block mc_stat allocates. */
struct strings {
	char *next, *end;
};

static const char *
copy_str(struct strings *s, const char *p, size_t n)
{
	char *out = s->next;

	if (n + 1 > (size_t)(s->end - s->next))
		return "";
	memcpy(out, p, n);
	out[n] = '\0';
	s->next += n + 1;
	return out;
}

/*
 * The stat answer as one allocation: the struct, its replicas, then
 * every string. The first pass checks the fields and counts bytes.
 */
static struct mc_object_info *
info_build(const msgpack_object *body, const void *key, size_t klen, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(body, "replicas");
	size_t nrep = a ? a->size : 0, bytes, i, n;
	struct mc_replica_info *reps;
	struct mc_object_info *info;
	struct strings strs;
	const char *s;

	bytes = sizeof(*info) + nrep * sizeof(*reps) + klen + 1;
	if (str_field(body, "type", &s, &n) < 0)
		return NULL;
	bytes += n + 1;
	if (str_field(body, "group", &s, &n) < 0)
		return NULL;
	bytes += n + 1;
	for (i = 0; i < nrep; i++) {
		if (str_field(&a->ptr[i], "addr", &s, &n) < 0)
			return NULL;
		bytes += n + 1;
		if (str_field(&a->ptr[i], "tier", &s, &n) < 0)
			return NULL;
		bytes += n + 1;
	}
	if (!(info = calloc(1, bytes))) {
		mc_err_errno(err, "cannot allocate an object's metadata");
		return NULL;
	}
	reps = (struct mc_replica_info *)(info + 1);
	strs.next = (char *)(reps + nrep);
	strs.end = (char *)info + bytes;
	info->key.data = copy_str(&strs, key, klen);
	info->key.len = klen;
	str_field(body, "type", &s, &n);
	info->type = copy_str(&strs, s, n);
	str_field(body, "group", &s, &n);
	info->group = copy_str(&strs, s, n);
	for (i = 0; i < nrep; i++) {
		const msgpack_object *o = &a->ptr[i];
		uint64_t id = 0;

		mc_map_u64(o, "peer_id", &id, NULL);
		reps[i].peer_id = (uint32_t)id;
		str_field(o, "addr", &s, &n);
		reps[i].addr = copy_str(&strs, s, n);
		str_field(o, "tier", &s, &n);
		reps[i].tier = copy_str(&strs, s, n);
		reps[i].complete = mc_obj_streq(mc_map_get(o, "state"), "complete");
	}
	info->replicas = reps;
	info->nreplicas = nrep;
	return info;
}

struct mc_object_info *
mc_stat(struct mc_client *c, const void *key, size_t key_len, struct mc_err *err)
{
	struct mc_object_info *info = NULL;
	struct conns *t;
	struct mc_msg m;

	if (check_key(key, key_len, err) < 0 || !(t = conns_of(c, err)))
		return NULL;
	if (key_call(t, "stat", "stat", key, key_len, -1, &m, err) < 0)
		return NULL;
	err->code = 0;
	if (!(info = info_build(m.body, key, key_len, err))) {
		if (err->code == 0)
			goto bad;
		mc_msg_release(&m);
		return NULL;
	}
	if (mc_map_u64(m.body, "size", &info->size, err) != 1 ||
	    mc_map_u64(m.body, "version", &info->version, err) != 1)
		goto bad;
	/* the rest is informative: absent fields stay zero */
	if (mc_map_u64(m.body, "checksum", &info->checksum, err) < 0 ||
	    mc_map_u64(m.body, "created", &info->created, err) < 0 ||
	    mc_map_u64(m.body, "last_access", &info->last_access, err) < 0 ||
	    mc_map_u64(m.body, "access_count", &info->access_count, err) < 0 ||
	    mc_map_u64(m.body, "lease_deadline", &info->lease_deadline, err) < 0 ||
	    mc_map_bool(m.body, "hard_pin", &info->hard_pin, err) < 0)
		goto bad;
	mc_msg_release(&m);
	return info;
bad:
	mc_msg_release(&m);
	free(info);
	mc_err_set(err, MC_ERR_PROTO, "malformed stat answer for '%.*s'", MC_KSHOWN(key_len),
		   (const char *)key);
	return NULL;
}

void
mc_object_info_free(struct mc_object_info *info)
{
	free(info);
}

/* One listed key, copied out so callbacks may call the client again. */
struct list_ent {
	char *key;
	size_t klen;
	uint64_t size, version;
	char type[MC_NAME_MAX + 1];
};

static void
list_ents_free(struct list_ent *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(e[i].key);
	free(e);
}

/* Copy one page out of the answer; -1 on a malformed page. */
static int
list_copy(const msgpack_object_array *a, struct list_ent **out, struct mc_err *err)
{
	struct list_ent *e;
	uint32_t i;

	*out = NULL;
	if (!a->size)
		return 0;
	if (!(e = calloc(a->size, sizeof(*e))))
		return mc_err_errno(err, "cannot allocate a listing");
	for (i = 0; i < a->size; i++) {
		const msgpack_object *o = &a->ptr[i];
		const char *s;
		size_t n;

		if (str_field(o, "key", &s, &n) < 0 || n == 0 || n > MC_KEY_MAX ||
		    mc_map_strcpy(o, "type", e[i].type, sizeof(e[i].type), err) < 0 ||
		    mc_map_u64(o, "size", &e[i].size, err) < 0 ||
		    mc_map_u64(o, "version", &e[i].version, err) < 0) {
			list_ents_free(e, i);
			return mc_err_set(err, MC_ERR_PROTO, "malformed list answer");
		}
		if (!(e[i].key = malloc(n))) {
			list_ents_free(e, i);
			return mc_err_errno(err, "cannot allocate a listing");
		}
		memcpy(e[i].key, s, n);
		e[i].klen = n;
	}
	*out = e;
	return 0;
}

int
mc_list(struct mc_client *c, const void *prefix, size_t prefix_len, mc_list_fn fn, void *arg,
	struct mc_err *err)
{
	struct conns *t = conns_of(c, err);
	char *after = NULL;
	size_t after_len = 0;
	int rc = -1;

	if (!t)
		return -1;
	if (prefix == NULL)
		prefix_len = 0;
	for (;;) {
		const msgpack_object_array *a;
		struct list_ent *e;
		msgpack_packer *pk;
		struct mc_msg m;
		bool more = false;
		size_t i, n;

		if (!(pk = master_begin(t, "list", err)))
			break;
		msgpack_pack_map(pk, 2 + (after != NULL));
		mc_pack_kv_strn(pk, "prefix", prefix_len ? prefix : "", prefix_len);
		mc_pack_kv_u64(pk, "limit", LIST_PAGE);
		if (after)
			mc_pack_kv_strn(pk, "after", after, after_len);
		if (master_call(t, &m, err) < 0)
			break;
		a = mc_map_array(m.body, "keys");
		if (!a || mc_map_bool(m.body, "more", &more, err) < 0) {
			mc_msg_release(&m);
			mc_err_set(err, MC_ERR_PROTO, "malformed list answer");
			break;
		}
		n = a->size;
		if (list_copy(a, &e, err) < 0) {
			mc_msg_release(&m);
			break;
		}
		mc_msg_release(&m);
		for (i = 0; i < n; i++)
			if (fn(e[i].key, e[i].klen, e[i].size, e[i].version, e[i].type, arg))
				break;
		if (i < n || !more || n == 0) {
			/* a page claiming more but empty would loop forever */
			list_ents_free(e, n);
			rc = i < n || !more ? 0
					    : mc_err_set(err, MC_ERR_PROTO,
							 "list answered an empty page with more");
			break;
		}
		free(after);
		after = e[n - 1].key;
		after_len = e[n - 1].klen;
		e[n - 1].key = NULL;
		list_ents_free(e, n);
	}
	free(after);
	return rc;
}
