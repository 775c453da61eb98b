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
 *
 * Here: the connections, the constructor, replica lists, waves and the
 * calls that only ask the master. Reads are client_read.c's, writes
 * client_write.c's; client_impl.h is what the three share.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_impl.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/tier.h"
#include "mc/transport.h"
#include "mc/wire.h"

#define EXIST_CHUNK 1024
#define LIST_PAGE 1000
#define DEFAULT_TIMEOUT_MS 30000
/*
 * How long a peer may send or take nothing before its copy is given up:
 * well under the call timeout, so a hung peer leaves time for the next
 * replica, and far over what a loaded peer pauses between two chunks.
 */
#define DEFAULT_STALL_MS 5000

static uint64_t next_client_id; /* atomic */
static _Thread_local uint64_t tl_id;
static _Thread_local struct conns *tl_conns;

/* ---- small helpers ---- */

/*
 * The caller's options as this library knows them: the fields its size
 * covers, zero (the defaults) after them. NULL is all defaults.
 */
int
mc_cl_take_opts(void *dst, size_t dst_size, const void *src, const char *what, const char *init,
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

int
mc_cl_check_key(const void *key, size_t len, struct mc_err *err)
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
bool
mc_cl_is_transport(int code)
{
	return code == MC_ERR_UNAVAILABLE || code == MC_ERR_PROTO || code == MC_ERR_TIMEOUT;
}

/*
 * Turn a failure into "cannot WHAT 'KEY' [at ADDR]: why". The address is
 * added only when the inner message does not already name it (a connect
 * error does).
 */
void
mc_cl_key_err(struct mc_err *out, int code, const char *what, const char *key, size_t klen,
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
int
mc_cl_item_error(const msgpack_object *item, struct mc_err *err)
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
void
mc_cl_pack_keys(msgpack_packer *pk, const struct mc_key *keys, size_t n)
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

void
mc_cl_master_drop(struct conns *t)
{
	if (t->master)
		mc_rpcc_close(t->master);
	t->master = NULL;
}

struct mc_rpcc *
mc_cl_master_get(struct conns *t, struct mc_err *err)
{
	return t->master ? t->master : master_connect(t, err);
}

/* Begin a request to the master: the packer for its params, or NULL. */
msgpack_packer *
mc_cl_master_begin(struct conns *t, const char *method, struct mc_err *err)
{
	struct mc_rpcc *r = mc_cl_master_get(t, err);

	return r ? mc_rpcc_begin(r, method) : NULL;
}

/*
 * The request begun with master_begin, one round trip. A connection that
 * had been idle may have died (master restarted): when a reused
 * connection reports it is unavailable, the request never reached a live
 * master, so it is safe to reconnect and send it once more.
 */
int
mc_cl_master_call(struct conns *t, struct mc_msg *resp, struct mc_err *err)
{
	struct mc_rpcc *old = t->master, *r;
	bool reused = !t->master_fresh;

	t->master_fresh = false;
	if (mc_rpcc_call(old, resp, err) == 0)
		return 0;
	if (!mc_cl_is_transport(err->code))
		return -1;
	if (!reused || err->code != MC_ERR_UNAVAILABLE) {
		mc_cl_master_drop(t);
		return -1;
	}
	t->master = NULL;
	r = master_connect(t, err);
	if (r && mc_rpcc_begin_copy(r, old, err) < 0)
		mc_cl_master_drop(t);
	mc_rpcc_close(old);
	if (!t->master)
		return -1;
	t->master_fresh = false;
	if (mc_rpcc_call(r, resp, err) == 0)
		return 0;
	if (mc_cl_is_transport(err->code))
		mc_cl_master_drop(t);
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

/*
 * How often a peer connection's wait is judged: a quarter of the stall
 * timeout, so a stall shows at most a quarter late; it is also the
 * connect timeout, far over any handshake that is not lost.
 */
static int
stall_tick(int stall_ms)
{
	return stall_ms / 4 > 0 ? stall_ms / 4 : 1;
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
	/* its reads and writes fail once no byte moved for stall_ms, checked each tick */
	victim->r = mc_rpcc_connect(addr, stall_tick(t->c->stall_ms), err);
	if (!victim->r)
		return NULL;
	mc_rpcc_watch_stall(victim->r, (uint64_t)t->c->stall_ms);
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
struct conns *
mc_cl_conns_of(struct mc_client *c, struct mc_err *err)
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
	mc_cl_master_drop(t);
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

	if (mc_cl_take_opts(&opts, sizeof(opts), given, "client options", "MC_CLIENT_OPTS_INIT",
			    err) < 0)
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
	c->stall_ms = opts.stall_timeout_ms > 0 ? opts.stall_timeout_ms : DEFAULT_STALL_MS;
	if (c->stall_ms > c->timeout_ms)
		c->stall_ms = c->timeout_ms;
	if (!(t = mc_cl_conns_of(c, err)) || !master_connect(t, err))
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
	s.stalls = __atomic_load_n(&c->stalls, __ATOMIC_RELAXED);
	s.grant_renewals = __atomic_load_n(&c->grant_renewals, __ATOMIC_RELAXED);
	if (n > sizeof(size_t))
		memcpy((char *)out + sizeof(size_t), (char *)&s + sizeof(size_t),
		       n - sizeof(size_t));
}

struct mc_rpcc *
mc_client_master(struct mc_client *c)
{
	struct mc_err err;
	struct conns *t = mc_cl_conns_of(c, &err);

	return t ? mc_cl_master_get(t, &err) : NULL;
}

/* ---- replica lists ---- */

int
mc_cl_parse_replicas(const msgpack_object *body, struct rep *reps, unsigned *nrep,
		     struct mc_err *err)
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

static bool
rep_tried(const struct rep *reps, unsigned tried, uint64_t id)
{
	for (unsigned i = 0; i < tried; i++)
		if (reps[i].id == id)
			return true;
	return false;
}

unsigned
mc_cl_renewed_reps(struct rep *reps, unsigned tried, const struct rep *fresh, unsigned nfresh)
{
	unsigned n = tried;

	for (unsigned i = 0; i < nfresh && n < MC_REPLICAS_MAX; i++)
		if (!rep_tried(reps, tried, fresh[i].id))
			reps[n++] = fresh[i];
	return n;
}

/* The version a read or write is about, for the data plane. */
struct mc_dp_obj
mc_cl_dp_obj(const struct conns *t, const char *key, size_t klen, uint64_t version, uint64_t len,
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

/* ---- waves of pipelined peer operations ---- */

int
mc_cl_wave_init(struct wave *w, size_t cap, struct mc_err *err)
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

void
mc_cl_wave_free(struct wave *w)
{
	free(w->items);
	free(w->grp);
}

void
mc_cl_wave_reset(struct wave *w)
{
	w->n = 0;
	w->ngroups = 0;
}

/* Add an item for addr; false when it has to wait for a later wave. */
bool
mc_cl_wave_add(struct wave *w, void *item, const char *addr, uint64_t bytes)
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

/*
 * Whether the group's connection failed by moving no byte for the
 * stall timeout, counted: its peer is alive but not moving, so waiting
 * for it again, as for a stale connection, would only double the stall.
 */
static bool
group_stalled(struct conns *t, const struct wave_group *g)
{
	if (g->err.code != MC_ERR_TIMEOUT)
		return false;
	__atomic_add_fetch(&t->c->stalls, 1, __ATOMIC_RELAXED);
	return true;
}

void
mc_cl_wave_run(struct conns *t, const struct wave_ops *ops, struct wave *w)
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
		g->failed = group_stalled(t, g) || !g->reused || !group_start(t, ops, w, gi);
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
			if (group_stalled(t, g) || done != 0 || !g->reused ||
			    !group_start(t, ops, w, gi)) {
				group_fail(ops, w, gi, done, &g->err);
				break;
			}
		}
	}
}

/* ---- metadata calls ---- */

/* A call on the master about one key: {key[, force]}. */
static int
key_call(struct conns *t, const char *method, const char *verb, const void *key, size_t klen,
	 int force, struct mc_msg *m, struct mc_err *err)
{
	msgpack_packer *pk = mc_cl_master_begin(t, method, err);

	if (pk) {
		msgpack_pack_map(pk, force >= 0 ? 2 : 1);
		mc_pack_kv_strn(pk, "key", key, klen);
		if (force >= 0)
			mc_pack_kv_bool(pk, "force", force);
	}
	if (!pk || mc_cl_master_call(t, m, err) < 0) {
		mc_cl_key_err(err, err->code, verb, key, klen, "at",
			      mc_cl_is_transport(err->code) ? t->c->master_addr : NULL, err->msg);
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

	if (mc_cl_check_key(key, key_len, err) < 0 || !(t = mc_cl_conns_of(c, err)))
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
		if (mc_cl_check_key(keys[i].data, keys[i].len, err) < 0)
			return -1;
	}
	if (!(t = mc_cl_conns_of(c, err)))
		return -1;
	for (done = 0; done < n; done += m) {
		m = n - done < EXIST_CHUNK ? n - done : EXIST_CHUNK;
		if (!(pk = mc_cl_master_begin(t, "batch_exist", err)))
			return -1;
		msgpack_pack_map(pk, 1);
		mc_cl_pack_keys(pk, keys + done, m);
		if (mc_cl_master_call(t, &msg, err) < 0)
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

	if (mc_cl_check_key(key, key_len, err) < 0 || !(t = mc_cl_conns_of(c, err)))
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
	struct conns *t = mc_cl_conns_of(c, err);
	msgpack_packer *pk;
	struct mc_msg m;
	uint64_t v = 0;

	if (!t)
		return -1;
	if (prefix == NULL)
		prefix_len = 0;
	if ((pk = mc_cl_master_begin(t, "remove_prefix", err)) != NULL) {
		msgpack_pack_map(pk, 2);
		mc_pack_kv_strn(pk, "prefix", prefix_len ? prefix : "", prefix_len);
		mc_pack_kv_bool(pk, "force", force);
	}
	if (!pk || mc_cl_master_call(t, &m, err) < 0) {
		mc_cl_key_err(err, err->code, "remove prefix", prefix_len ? prefix : "", prefix_len,
			      "at", mc_cl_is_transport(err->code) ? t->c->master_addr : NULL,
			      err->msg);
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

	if (mc_cl_check_key(key, key_len, err) < 0 || !(t = mc_cl_conns_of(c, err)))
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
	struct conns *t = mc_cl_conns_of(c, err);
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

		if (!(pk = mc_cl_master_begin(t, "list", err)))
			break;
		msgpack_pack_map(pk, 2 + (after != NULL));
		mc_pack_kv_strn(pk, "prefix", prefix_len ? prefix : "", prefix_len);
		mc_pack_kv_u64(pk, "limit", LIST_PAGE);
		if (after)
			mc_pack_kv_strn(pk, "after", after, after_len);
		if (mc_cl_master_call(t, &m, err) < 0)
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
