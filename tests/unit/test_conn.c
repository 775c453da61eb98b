/*
 * Unit tests for the connection layer: libmc/conn.c, registry.c and
 * listener.c (event-driven server side) driven through libmc/rpcc.c
 * (blocking client side).
 *
 * A server thread runs its own event_base with two servers: A (unix
 * socket and 127.0.0.1:0, small limits so the caps are cheap to hit) and
 * B (the far end of A's outgoing mc_conn_call link). The main thread is
 * the client.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <xxhash.h>

#include "mc/clock.h"
#include "mc/conn.h"
#include "mc/fault.h"
#include "mc/metrics.h"
#include "mc/log.h"
#include "mc/rpcc.h"
#include "tap.h"

#define BIG (64u << 20)
#define MAX_MSG (1u << 20)
#define MAX_OUTQ (4u << 20)
#define NTOKENS 4096
#define TIMEOUT_MS 100 /* the header and idle timeouts of the timed server */

/* ---- server side (runs on the server thread) ---- */

/*
 * The calls these tests make, with the params packed by a function: the
 * rpcc request builder (mc_rpcc_begin, then send, call or notify)
 * underneath. fn NULL packs an empty map.
 */
typedef void (*pack_fn)(msgpack_packer *pk, void *arg);

static void
rpcc_begin(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg)
{
	msgpack_packer *pk = mc_rpcc_begin(r, method);

	if (fn != NULL)
		fn(pk, arg);
	else
		msgpack_pack_map(pk, 0);
}

static int64_t
rpcc_send(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg, const void *bulk,
	  uint64_t bulk_len, struct mc_err *err)
{
	rpcc_begin(r, method, fn, arg);
	return mc_rpcc_send(r, bulk, bulk_len, err);
}

static int
rpcc_call(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg, struct mc_msg *resp,
	  struct mc_err *err)
{
	rpcc_begin(r, method, fn, arg);
	return mc_rpcc_call(r, resp, err);
}

static int
rpcc_notify(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg, struct mc_err *err)
{
	rpcc_begin(r, method, fn, arg);
	return mc_rpcc_notify(r, err);
}

static struct event_base *g_base;
static struct mc_server *g_srv_unix, *g_srv_tcp, *g_srv_b, *g_srv_one;
/* the connection limits: timeouts; per address over TCP and over a unix socket */
static struct mc_server *g_srv_timed, *g_srv_idle, *g_srv_peraddr, *g_srv_peraddr_unix;
static struct mc_conn *g_link;	     /* A -> B */
static atomic_bool g_resend_refused; /* set by h_relay, on the server thread */
static char g_unix_path[128];
static char g_addr_unix[MC_ADDR_MAX], g_addr_tcp[MC_ADDR_MAX], g_addr_one[MC_ADDR_MAX];
static char g_addr_timed[MC_ADDR_MAX], g_addr_idle[MC_ADDR_MAX], g_addr_peraddr[MC_ADDR_MAX],
	g_addr_peraddr_unix[MC_ADDR_MAX];
static char g_unix_path2[128];
static unsigned char *g_big; /* what "get" serves */

static atomic_int g_gets;	/* get replies queued */
static atomic_int g_releases;	/* release callbacks run */
static atomic_int g_double_rel; /* a token released twice */
static atomic_int g_closed_cb;	/* on_close callbacks */
static atomic_int g_slow_done;	/* deferred replies sent (or dropped) */
static atomic_int g_notes;	/* "note" notifications handled */
static int g_tokens[NTOKENS];

static struct mc_req *g_never[64];
static int g_nnever;

static void
on_release(void *arg)
{
	intptr_t i = (intptr_t)arg;

	if (g_tokens[i]++)
		atomic_fetch_add(&g_double_rel, 1);
	atomic_fetch_add(&g_releases, 1);
}

static void
h_echo(struct mc_req *req)
{
	msgpack_packer *pk = mc_reply_ok_begin(req);

	if (req->params != NULL)
		msgpack_pack_object(pk, *req->params);
	else
		msgpack_pack_map(pk, 0);
	mc_reply_end(req);
}

static void
put_done(struct mc_req *req, bool ok, void *arg)
{
	msgpack_packer *pk;

	if (ok) {
		pk = mc_reply_ok_begin(req);
		msgpack_pack_map(pk, 2);
		mc_pack_kv_u64(pk, "got", req->bulk_len);
		mc_pack_kv_u64(pk, "hash", XXH3_64bits(arg, req->bulk_len));
		mc_reply_end(req);
	} else {
		mc_reply_ok_empty(req); /* dropped: the connection is gone */
	}
	free(arg);
}

static void
h_put(struct mc_req *req)
{
	bool noclaim = false;
	struct mc_req *d;
	void *buf;

	mc_map_bool(req->params, "noclaim", &noclaim, NULL);
	if (noclaim || !req->has_bulk) {
		/* the bulk, if any, is left for the connection to discard */
		msgpack_packer *pk = mc_reply_ok_begin(req);

		msgpack_pack_map(pk, 1);
		mc_pack_kv_bool(pk, "claimed", false);
		mc_reply_end(req);
		return;
	}
	buf = malloc(req->bulk_len ? req->bulk_len : 1);
	d = mc_req_defer(req);
	if (buf == NULL || d == NULL || mc_req_recv_bulk(d, buf, put_done, buf) < 0) {
		free(buf);
		if (d != NULL)
			mc_reply_err(d, MC_ERR_INTERNAL, "cannot receive");
		else
			mc_reply_err(req, MC_ERR_INTERNAL, "cannot defer");
	}
}

static void
h_get(struct mc_req *req)
{
	uint64_t size = 0;
	msgpack_packer *pk;
	int i;

	mc_map_u64(req->params, "size", &size, NULL);
	if (size > BIG) {
		mc_reply_err(req, MC_ERR_TOO_LARGE, "size %llu", (unsigned long long)size);
		return;
	}
	i = atomic_fetch_add(&g_gets, 1);
	if (i >= NTOKENS) {
		mc_reply_err(req, MC_ERR_INTERNAL, "out of tokens");
		return;
	}
	pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "len", size);
	mc_reply_end_bulk(req, g_big, size, on_release, (void *)(intptr_t)i);
}

/*
 * The file bulks come from and go to: FILE_SKEW bytes of junk, then the
 * first FILE_BYTES of g_big, so every range read from it starts at an
 * offset.
 */
#define FILE_SKEW 4093
#define FILE_BYTES (8u << 20)
static int g_file_fd = -1;
static atomic_int g_file_releases;

static void
file_release(void *arg)
{
	close((int)(intptr_t)arg);
	atomic_fetch_add(&g_file_releases, 1);
}

/* "getfile" {size}: the first size bytes of g_big, sent from the file. */
static void
h_getfile(struct mc_req *req)
{
	struct mc_bulk_src src;
	uint64_t size = 0;
	msgpack_packer *pk;
	int fd;

	mc_map_u64(req->params, "size", &size, NULL);
	/* the reply owns a descriptor of its own, closed by its release */
	fd = dup(g_file_fd);
	if (fd < 0) {
		mc_reply_err(req, MC_ERR_SYSTEM, "dup: %s", strerror(errno));
		return;
	}
	src = mc_bulk_src_fd(fd, FILE_SKEW, size);
	pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "len", size);
	mc_reply_end_src(req, &src, file_release, (void *)(intptr_t)fd);
}

struct putfile {
	struct mc_bulk_sink sink;
	int fd;
};

static void
putfile_done(struct mc_req *req, bool ok, void *arg)
{
	struct putfile *pf = arg;
	unsigned char *buf = malloc(req->bulk_len + 1);
	msgpack_packer *pk;

	if (ok && buf != NULL && pread(pf->fd, buf, req->bulk_len, 0) == (ssize_t)req->bulk_len) {
		pk = mc_reply_ok_begin(req);
		msgpack_pack_map(pk, 2);
		mc_pack_kv_u64(pk, "got", req->bulk_len);
		mc_pack_kv_u64(pk, "hash", XXH3_64bits(buf, req->bulk_len));
		mc_reply_end(req);
	} else {
		mc_reply_err(req, MC_ERR_INTERNAL, "the file does not hold the bulk");
	}
	free(buf);
	mc_bulk_sink_release(&pf->sink);
	close(pf->fd);
	free(pf);
}

/* "putfile": the bulk lands in a file (a sink), then is hashed from there. */
static void
h_putfile(struct mc_req *req)
{
	struct putfile *pf = calloc(1, sizeof(*pf));
	char path[] = "/tmp/mc-test-conn-put.XXXXXX";
	struct mc_req *d = NULL;

	if (pf != NULL && (pf->fd = mkstemp(path)) >= 0) {
		unlink(path);
		mc_bulk_sink_fd(&pf->sink, pf->fd, 0, req->bulk_len);
		d = mc_req_defer(req);
		if (d != NULL && mc_req_recv_bulk_to(d, &pf->sink, putfile_done, pf) == 0)
			return;
		close(pf->fd);
	}
	free(pf);
	mc_reply_err(d != NULL ? d : req, MC_ERR_INTERNAL, "cannot receive into a file");
}

struct slow {
	struct event *ev;
	struct mc_req *req;
};

static void
slow_fire(evutil_socket_t fd, short what, void *arg)
{
	struct slow *s = arg;
	msgpack_packer *pk = mc_reply_ok_begin(s->req);

	(void)fd;
	(void)what;
	msgpack_pack_map(pk, 1);
	mc_pack_kv_bool(pk, "slow", true);
	mc_reply_end(s->req);
	event_free(s->ev);
	free(s);
	atomic_fetch_add(&g_slow_done, 1);
}

/* Answer req "ms" (50) ms from now; hold: its connection reads nothing meanwhile. */
static void
slow_start(struct mc_req *req, bool hold)
{
	uint64_t ms = 50;
	struct timeval tv;
	struct slow *s = calloc(1, sizeof(*s));

	mc_map_u64(req->params, "ms", &ms, NULL);
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	if (s == NULL) {
		mc_reply_err(req, MC_ERR_INTERNAL, "oom");
		return;
	}
	s->req = mc_req_defer(req);
	/* a second hold is refused; a failed first one shows as an error */
	if (hold && (s->req == NULL || mc_req_hold(s->req) != 0 || mc_req_hold(s->req) == 0)) {
		if (s->req != NULL)
			mc_reply_err(s->req, MC_ERR_INTERNAL, "hold");
		free(s);
		return;
	}
	s->ev = evtimer_new(g_base, slow_fire, s);
	evtimer_add(s->ev, &tv);
}

static void
h_slow(struct mc_req *req)
{
	slow_start(req, false);
}

/* Like slow, but the connection is held: nothing after it runs before the reply. */
static void
h_held(struct mc_req *req)
{
	slow_start(req, true);
}

/* A request held with its bulk unclaimed, answered later with or without it. */
struct late {
	struct event *ev;
	struct mc_req *req;
	bool refuse;
};

static void
late_fire(evutil_socket_t fd, short what, void *arg)
{
	struct late *l = arg;
	void *buf = NULL;

	(void)fd;
	(void)what;
	if (l->refuse) {
		mc_reply_err(l->req, MC_ERR_NO_SPACE, "refused without its bulk");
	} else if ((buf = malloc(l->req->bulk_len ? l->req->bulk_len : 1)) == NULL ||
		   mc_req_recv_bulk(l->req, buf, put_done, buf) < 0) {
		free(buf);
		mc_reply_err(l->req, MC_ERR_INTERNAL, "cannot claim the bulk late");
	}
	event_free(l->ev);
	free(l);
}

/*
 * "hold_bulk" {refuse}: held, its bulk left in the stream; 20 ms later
 * the bulk is claimed and answered as put does, or (refuse) the request
 * is refused without it.
 */
static void
h_hold_bulk(struct mc_req *req)
{
	struct timeval tv = { 0, 20000 };
	struct late *l = calloc(1, sizeof(*l));

	if (l == NULL) {
		mc_reply_err(req, MC_ERR_INTERNAL, "oom");
		return;
	}
	mc_map_bool(req->params, "refuse", &l->refuse, NULL);
	l->req = mc_req_defer(req);
	if (l->req == NULL || mc_req_hold(l->req) != 0) {
		if (l->req != NULL)
			mc_reply_err(l->req, MC_ERR_INTERNAL, "hold");
		free(l);
		return;
	}
	l->ev = evtimer_new(g_base, late_fire, l);
	evtimer_add(l->ev, &tv);
}

static void
h_note(struct mc_req *req)
{
	atomic_fetch_add(&g_notes, 1);
	if (!req->notify)
		mc_reply_ok_empty(req);
}

/* A notification "told" {n: 1} on the caller's connection, then the answer. */
static void
h_tell(struct mc_req *req)
{
	msgpack_packer *pk = mc_conn_begin(req->conn, "told");

	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "n", 1);
	mc_conn_notify(req->conn);
	mc_reply_ok_empty(req);
}

static void
ask_cb(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *err, void *arg)
{
	(void)c;
	(void)resp;
	(void)err;
	(void)arg;
}

/* Call "echo" back on the caller's own connection, and answer at once. */
static void
h_ask(struct mc_req *req)
{
	msgpack_packer *pk = mc_conn_begin(req->conn, "echo");

	msgpack_pack_map(pk, 0);
	if (mc_conn_call(req->conn, 0, ask_cb, NULL) < 0)
		mc_reply_err(req, MC_ERR_INTERNAL, "cannot call back");
	else
		mc_reply_ok_empty(req);
}

static void
h_keep_me(struct mc_req *req)
{
	mc_conn_keep(req->conn);
	mc_reply_ok_empty(req);
}

static void
h_close_me(struct mc_req *req)
{
	mc_conn_close(req->conn, false);
	mc_reply_ok_empty(req); /* dropped, must not crash */
}

static void
relay_cb(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *err, void *arg)
{
	struct mc_req *d = arg;
	struct mc_err e;

	(void)c;
	if (resp == NULL) {
		mc_reply_mc_err(d, err);
	} else if (mc_msg_error(resp, &e) < 0) {
		mc_reply_mc_err(d, &e);
	} else {
		msgpack_packer *pk = mc_reply_ok_begin(d);

		msgpack_pack_object(pk, *resp->body);
		mc_reply_end(d);
	}
}

struct relay_params {
	const char *tag;
};

static void
pack_relay(msgpack_packer *pk, const struct relay_params *p)
{
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "tag", p->tag);
}

static void
h_relay(struct mc_req *req)
{
	char method[32];
	uint64_t timeout = 0;
	struct relay_params p = { "relayed" };
	struct mc_req *d;

	if (mc_map_strcpy(req->params, "method", method, sizeof(method), NULL) != 1) {
		mc_reply_err(req, MC_ERR_INVALID, "method missing");
		return;
	}
	mc_map_u64(req->params, "timeout", &timeout, NULL);
	d = mc_req_defer(req);
	pack_relay(mc_conn_begin(g_link, method), &p);
	if (mc_conn_call(g_link, (int)timeout, relay_cb, d) < 0) {
		mc_reply_err(d, MC_ERR_UNAVAILABLE, "link down");
		return;
	}
	/* what was begun went with that call: another needs its own begin */
	g_resend_refused = mc_conn_call(g_link, (int)timeout, relay_cb, NULL) < 0 &&
			   mc_conn_notify(g_link) < 0;
}

static void
h_never(struct mc_req *req)
{
	if (g_nnever < 64)
		g_never[g_nnever++] = mc_req_defer(req);
	else
		mc_reply_err(req, MC_ERR_BUSY, "too many");
}

/* Always answers with an error: what the registry counts as a failure. */
static void
h_fail(struct mc_req *req)
{
	mc_reply_err(req, MC_ERR_NOT_FOUND, "nothing here");
}

static const struct mc_method methods_a[] = {
	{ "echo", h_echo, MC_METHOD_READ_ONLY },
	{ "put", h_put, MC_METHOD_BULK },
	{ "get", h_get, MC_METHOD_BULK | MC_METHOD_READ_ONLY },
	{ "slow", h_slow, 0 },
	{ "close_me", h_close_me, 0 },
	{ "relay", h_relay, 0 },
	{ "held", h_held, 0 },
	{ "hold_bulk", h_hold_bulk, MC_METHOD_BULK },
	{ "note", h_note, 0 },
	{ NULL, NULL, 0 },
};

/* The timed server's: what keeps a connection busy, or kept. */
static const struct mc_method methods_limits[] = {
	{ "echo", h_echo, 0 }, { "slow", h_slow, 0 },	    { "get", h_get, MC_METHOD_BULK },
	{ "ask", h_ask, 0 },   { "keep_me", h_keep_me, 0 }, { NULL, NULL, 0 },
};

/* Another module's table in the same registry. */
static const struct mc_method methods_a2[] = {
	{ "fail", h_fail, MC_METHOD_ADMIN },
	{ NULL, NULL, 0 },
};

/* A notification before the answer, as a peer's control link has them, served by A too. */
static const struct mc_method methods_tell[] = {
	{ "tell", h_tell, 0 },
	{ NULL, NULL, 0 },
};

/* Bulks from and into files, served by A too. */
static const struct mc_method methods_files[] = {
	{ "getfile", h_getfile, MC_METHOD_BULK | MC_METHOD_READ_ONLY },
	{ "putfile", h_putfile, MC_METHOD_BULK },
	{ NULL, NULL, 0 },
};

/* An operator's call behind A's authorize hook: refused to a caller saying role=tenant. */
static const struct mc_method methods_guarded[] = {
	{ "guarded", h_echo, MC_METHOD_ADMIN },
	{ NULL, NULL, 0 },
};

static int
authorize_a(struct mc_req *req, struct mc_err *err)
{
	const char *role;
	size_t len;

	if ((req->method->flags & MC_METHOD_ADMIN) == 0 ||
	    mc_map_str(req->params, "role", &role, &len, err) <= 0 || len != 6 ||
	    memcmp(role, "tenant", 6) != 0)
		return 0;
	return mc_err_set(err, MC_ERR_PERMISSION, "%s needs the admin role", req->method->name);
}

static const struct mc_method methods_b[] = {
	{ "echo", h_echo, 0 },
	{ "never", h_never, 0 },
	{ NULL, NULL, 0 },
};

/* methods_a and methods_a2, counted in g_metrics; methods_b, uncounted */
static struct mc_metrics *g_metrics;
static struct mc_registry *g_reg_a, *g_reg_b, *g_reg_limits;

static void
on_close_a(struct mc_conn *c, void *ctx)
{
	(void)c;
	(void)ctx;
	atomic_fetch_add(&g_closed_cb, 1);
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_ready; /* 1 serving, -1 failed */

static void
set_ready(int v)
{
	pthread_mutex_lock(&g_mu);
	g_ready = v;
	pthread_cond_signal(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

static void *
server_main(void *arg)
{
	struct mc_conn_ops ops_a = { .on_close = on_close_a, .authorize = authorize_a };
	struct mc_conn_ops ops_b = { 0 }, ops_limits = { 0 };
	struct mc_conn_limits lim = { .max_msg = MAX_MSG, .max_outq = MAX_OUTQ };
	/* TCP keeps the default output cap so a long bulk stream can queue */
	struct mc_conn_limits lim_tcp = { .max_msg = MAX_MSG };
	struct mc_conn_limits lim_one = { .max_conns = 1 };
	struct mc_conn_limits lim_timed = { .header_timeout_ms = TIMEOUT_MS,
					    .idle_timeout_ms = TIMEOUT_MS };
	/* an idle timeout far shorter than the header timeout */
	struct mc_conn_limits lim_idle = { .header_timeout_ms = 50 * TIMEOUT_MS,
					   .idle_timeout_ms = TIMEOUT_MS };
	struct mc_conn_limits lim_peraddr = { .max_conns_per_addr = 2 };
	struct mc_addr a, bound;
	struct mc_err err;
	char buf[160];
	int i;

	(void)arg;
	g_base = event_base_new();
	if (g_base == NULL)
		goto fail;
	g_metrics = mc_metrics_new();
	if (g_metrics == NULL || (g_reg_a = mc_registry_new(g_metrics, &err)) == NULL ||
	    mc_registry_add(g_reg_a, methods_a, &err) != 0 ||
	    mc_registry_add(g_reg_a, methods_a2, &err) != 0 ||
	    mc_registry_add(g_reg_a, methods_files, &err) != 0 ||
	    mc_registry_add(g_reg_a, methods_tell, &err) != 0 ||
	    mc_registry_add(g_reg_a, methods_guarded, &err) != 0 ||
	    (g_reg_b = mc_registry_new(NULL, &err)) == NULL ||
	    mc_registry_add(g_reg_b, methods_b, &err) != 0 ||
	    (g_reg_limits = mc_registry_new(NULL, &err)) == NULL ||
	    mc_registry_add(g_reg_limits, methods_limits, &err) != 0)
		goto fail;
	ops_a.methods = g_reg_a;
	ops_b.methods = g_reg_b;
	ops_limits.methods = g_reg_limits;
	snprintf(buf, sizeof(buf), "unix:%s", g_unix_path);
	if (mc_addr_parse(buf, &a, &err) < 0 ||
	    (g_srv_unix = mc_server_new(g_base, &a, &ops_a, &lim, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_addr_unix, sizeof(g_addr_unix), "%s", bound.text);
	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0 ||
	    (g_srv_tcp = mc_server_new(g_base, &a, &ops_a, &lim_tcp, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_addr_tcp, sizeof(g_addr_tcp), "%s", bound.text);
	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0 ||
	    (g_srv_b = mc_server_new(g_base, &a, &ops_b, NULL, &bound, &err)) == NULL)
		goto fail;
	if ((g_link = mc_conn_connect(g_base, &bound, 2000, &ops_b, NULL, &err)) == NULL)
		goto fail;
	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0 ||
	    (g_srv_one = mc_server_new(g_base, &a, &ops_b, &lim_one, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_addr_one, sizeof(g_addr_one), "%s", bound.text);
	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0 ||
	    (g_srv_timed = mc_server_new(g_base, &a, &ops_limits, &lim_timed, &bound, &err)) ==
		    NULL)
		goto fail;
	snprintf(g_addr_timed, sizeof(g_addr_timed), "%s", bound.text);
	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0 ||
	    (g_srv_idle = mc_server_new(g_base, &a, &ops_limits, &lim_idle, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_addr_idle, sizeof(g_addr_idle), "%s", bound.text);
	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0 ||
	    (g_srv_peraddr = mc_server_new(g_base, &a, &ops_b, &lim_peraddr, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_addr_peraddr, sizeof(g_addr_peraddr), "%s", bound.text);
	snprintf(buf, sizeof(buf), "unix:%s", g_unix_path2);
	if (mc_addr_parse(buf, &a, &err) < 0 ||
	    (g_srv_peraddr_unix = mc_server_new(g_base, &a, &ops_b, &lim_peraddr, &bound, &err)) ==
		    NULL)
		goto fail;
	snprintf(g_addr_peraddr_unix, sizeof(g_addr_peraddr_unix), "%s", bound.text);
	set_ready(1);
	event_base_dispatch(g_base);

	mc_conn_close(g_link, false);
	mc_server_free(g_srv_unix);
	mc_server_free(g_srv_tcp);
	mc_server_free(g_srv_b);
	mc_server_free(g_srv_one);
	mc_server_free(g_srv_timed);
	mc_server_free(g_srv_idle);
	mc_server_free(g_srv_peraddr);
	mc_server_free(g_srv_peraddr_unix);
	/* deferred requests outlive their connections: answering drops them */
	for (i = 0; i < g_nnever; i++)
		mc_reply_ok_empty(g_never[i]);
	event_base_free(g_base);
	return NULL;
fail:
	fprintf(stderr, "test_conn: server setup failed: %s\n", err.msg);
	set_ready(-1);
	return NULL;
}

/* ---- client side helpers ---- */

struct kv {
	const char *k;
	uint64_t v;
	const char *k2;
	uint64_t v2;
};

static void
pack_kv(msgpack_packer *pk, void *arg)
{
	struct kv *p = arg;

	msgpack_pack_map(pk, p->k2 != NULL ? 2 : 1);
	mc_pack_kv_u64(pk, p->k, p->v);
	if (p->k2 != NULL)
		mc_pack_kv_u64(pk, p->k2, p->v2);
}

static void
pack_echo(msgpack_packer *pk, void *arg)
{
	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "i", (uint64_t)(uintptr_t)arg);
	mc_pack_kv_str(pk, "s", "hello");
}

static void
pack_put(msgpack_packer *pk, void *arg)
{
	struct kv *p = arg;

	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "len", p->v);
	mc_pack_kv_bool(pk, "noclaim", p->v2 != 0);
}

struct relay_req {
	const char *method;
	uint64_t timeout;
};

static void
pack_relay_req(msgpack_packer *pk, void *arg)
{
	struct relay_req *p = arg;

	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "method", p->method);
	mc_pack_kv_u64(pk, "timeout", p->timeout);
}

static void
pack_huge(msgpack_packer *pk, void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	char *blob = calloc(1, n);

	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "blob");
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, blob, n);
	free(blob);
}

static int
echo_ok(struct mc_rpcc *r, uint64_t i)
{
	struct mc_msg m;
	struct mc_err e;
	uint64_t got = 0;
	int ok;

	if (rpcc_call(r, "echo", pack_echo, (void *)(uintptr_t)i, &m, &e) < 0)
		return 0;
	ok = mc_map_u64(m.body, "i", &got, NULL) == 1 && got == i;
	mc_msg_release(&m);
	return ok;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait up to ms for *v to reach want. */
static int
wait_for(atomic_int *v, int want, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (atomic_load(v) < want && now_ms() < end)
		usleep(2000);
	return atomic_load(v) >= want;
}

/* A raw socket with a receive timeout, for feeding bytes by hand. */
static int
raw_connect(const char *addr)
{
	struct timeval tv = { 2, 0 };
	struct mc_addr a;
	struct mc_err e;
	int fd;

	if (mc_addr_parse(addr, &a, &e) < 0)
		return -1;
	fd = mc_addr_connect(&a, 2000, &e);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Read until EOF; returns bytes read, or -1 on timeout/error. */
static long long
drain_to_eof(int fd)
{
	static char buf[1 << 16];
	long long total = 0;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n == 0)
			return total;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? total : -1;
		}
		total += n;
	}
}

/* ---- tests ---- */

static void
test_round_trips(const char *addr, const char *label)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	struct mc_msg m;
	int ok = 1, i;

	TAP_OK(r != NULL, "rpcc connects over %s", label);
	if (r == NULL)
		return;
	for (i = 1; i <= 10; i++)
		ok &= echo_ok(r, (uint64_t)i);
	TAP_OK(ok, "echo round trips return the params over %s", label);

	/* pipelining: all requests out first, then the answers in order */
	ok = 1;
	for (i = 0; i < 1000; i++)
		if (rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)i, NULL, 0, &e) < 0)
			ok = 0;
	ok &= mc_rpcc_flush(r, &e) == 0;
	for (i = 0; i < 1000 && ok; i++) {
		uint64_t got = ~0ull;

		if (mc_rpcc_recv(r, &m, &e) < 0) {
			ok = 0;
			break;
		}
		ok &= mc_msg_error(&m, NULL) == 0;
		ok &= mc_map_u64(m.body, "i", &got, NULL) == 1 && got == (uint64_t)i;
		mc_msg_release(&m);
	}
	TAP_OK(ok, "1000 pipelined requests are answered in order over %s", label);

	TAP_OK(rpcc_call(r, "nope", NULL, NULL, &m, &e) < 0 && e.code == MC_ERR_INVALID &&
		       strstr(e.msg, "unknown method 'nope'") != NULL,
	       "an unknown method gets an invalid error naming it over %s", label);
	TAP_OK(echo_ok(r, 77), "the connection keeps working after an unknown method");

	i = rpcc_call(r, "slow", NULL, NULL, &m, &e);
	TAP_OK(i == 0 && mc_map_get(m.body, "slow") != NULL,
	       "a deferred reply from a timer arrives over %s", label);
	if (i == 0)
		mc_msg_release(&m);
	mc_rpcc_close(r);
}

static int g_told; /* notifications the hook below saw */

static void
on_told(void *arg, const struct mc_msg *n)
{
	uint64_t v = 0;

	(void)arg;
	if (n->method_len == 4 && memcmp(n->method, "told", 4) == 0 &&
	    mc_map_u64(n->body, "n", &v, NULL) == 1 && v == 1)
		g_told++;
}

/* A server's notification among the responses: malformed, unless the caller takes them. */
static void
test_notify_hook(const char *addr)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	struct mc_msg m;

	TAP_OK(r != NULL && rpcc_call(r, "tell", NULL, NULL, &m, &e) < 0 &&
		       e.code == MC_ERR_PROTO && strstr(e.msg, "unexpected message") != NULL,
	       "a notification where a response is due fails the call without a hook");
	mc_rpcc_close(r);
	r = mc_rpcc_connect(addr, 5000, &e);
	if (r == NULL)
		return;
	mc_rpcc_on_notify(r, on_told, NULL);
	TAP_OK(rpcc_call(r, "tell", NULL, NULL, &m, &e) == 0 && g_told == 1,
	       "with a hook the notification goes to it and the answer follows");
	mc_msg_release(&m);
	TAP_OK(echo_ok(r, 5), "and the connection goes on");
	mc_rpcc_close(r);
}

static void
test_bulk(const char *addr, uint64_t size, const char *label)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 10000, &e);
	struct kv put = { "len", size, NULL, 0 };
	struct kv get = { "size", size, NULL, 0 };
	unsigned char *src = malloc(size + 1), *dst = malloc(size + 1);
	struct mc_msg m;
	uint64_t got = 0, hash = 0, len = 0;
	int rc;

	if (r == NULL || src == NULL || dst == NULL) {
		TAP_OK(0, "bulk setup over %s", label);
		goto out;
	}
	for (uint64_t i = 0; i < size; i++)
		src[i] = (unsigned char)(i * 2654435761u >> 13);
	rc = rpcc_send(r, "put", pack_put, &put, src, size, &e) < 0 || mc_rpcc_recv(r, &m, &e) < 0;
	TAP_OK(rc == 0 && mc_msg_error(&m, NULL) == 0 &&
		       mc_map_u64(m.body, "got", &got, NULL) == 1 &&
		       mc_map_u64(m.body, "hash", &hash, NULL) == 1 && got == size &&
		       hash == XXH3_64bits(src, size),
	       "a %llu-byte bulk lands byte-exact in the handler's buffer over %s",
	       (unsigned long long)size, label);
	if (rc == 0)
		mc_msg_release(&m);

	rc = rpcc_call(r, "get", pack_kv, &get, &m, &e);
	TAP_OK(rc == 0 && m.has_bulk && m.bulk_len == size &&
		       mc_map_u64(m.body, "len", &len, NULL) == 1 && len == size,
	       "a %llu-byte bulk reply is announced over %s", (unsigned long long)size, label);
	if (rc == 0) {
		mc_msg_release(&m);
		memset(dst, 0, size);
		mc_err_clear(&e);
		TAP_OK(mc_rpcc_read_bulk(r, dst, size, &e) == 0 && memcmp(dst, g_big, size) == 0,
		       "a %llu-byte bulk reply reads back byte-exact over %s%s%s",
		       (unsigned long long)size, label, e.code ? ": " : "", e.code ? e.msg : "");
	}
	TAP_OK(echo_ok(r, 5), "the stream stays in step after bulks over %s", label);
out:
	free(src);
	free(dst);
	mc_rpcc_close(r);
}

/* A temporary file's descriptor, already unlinked; -1 on failure. */
static int
temp_file(void)
{
	char path[] = "/tmp/mc-test-conn.XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Whether fd holds exactly the first n bytes of g_big at offset off. */
static bool
file_holds_big(int fd, off_t off, size_t n)
{
	unsigned char *buf = malloc(n + 1);
	bool ok = buf != NULL && pread(fd, buf, n + 1, off) == (ssize_t)n &&
		  memcmp(buf, g_big, n) == 0;

	free(buf);
	return ok;
}

/*
 * Bulks from and into file descriptors: a reply sent from a file at an
 * offset (sendfile), between replies from memory; a response received
 * into a file (a sink); a request sent from a file; a request's bulk
 * landing in a file on the daemon's side.
 */
static void
test_fd_bulks(const char *addr, const char *label)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 10000, &e);
	size_t size = (3u << 20) + 5, small = 1000;
	struct kv big = { "size", size, NULL, 0 }, little = { "size", small, NULL, 0 };
	unsigned char *dst = malloc(size);
	struct mc_bulk_sink sink;
	struct mc_bulk_src src;
	struct mc_msg m;
	uint64_t got = 0, hash = 0;
	int before = atomic_load(&g_file_releases), fd, rc;

	if (r == NULL || dst == NULL) {
		TAP_OK(0, "file bulk setup over %s", label);
		goto out;
	}
	rc = rpcc_call(r, "getfile", pack_kv, &big, &m, &e);
	TAP_OK(rc == 0 && m.has_bulk && m.bulk_len == size,
	       "a reply's bulk from a file is announced over %s", label);
	if (rc == 0) {
		mc_msg_release(&m);
		TAP_OK(mc_rpcc_read_bulk(r, dst, size, &e) == 0 && memcmp(dst, g_big, size) == 0,
		       "a reply's bulk from a file at an offset reads back byte-exact over %s",
		       label);
	}

	/* echo, a file bulk, a memory bulk, echo: one queue, in order */
	rc = rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)7, NULL, 0, &e) < 0 ||
	     rpcc_send(r, "getfile", pack_kv, &little, NULL, 0, &e) < 0 ||
	     rpcc_send(r, "get", pack_kv, &little, NULL, 0, &e) < 0 ||
	     rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)8, NULL, 0, &e) < 0;
	rc = rc || mc_rpcc_recv(r, &m, &e) < 0;
	if (rc == 0)
		mc_msg_release(&m);
	for (int i = 0; i < 2 && rc == 0; i++) {
		rc = mc_rpcc_recv(r, &m, &e) < 0 || !m.has_bulk || m.bulk_len != small;
		if (!rc)
			mc_msg_release(&m);
		memset(dst, 0, small);
		rc = rc || mc_rpcc_read_bulk(r, dst, small, &e) < 0 || memcmp(dst, g_big, small);
	}
	rc = rc || mc_rpcc_recv(r, &m, &e) < 0;
	if (rc == 0)
		mc_msg_release(&m);
	TAP_OK(rc == 0, "a file bulk keeps its place among memory replies over %s", label);

	/* the response's bulk into a file, a window at a time */
	fd = temp_file();
	rc = fd < 0 || rpcc_call(r, "getfile", pack_kv, &big, &m, &e) < 0;
	if (rc == 0) {
		mc_msg_release(&m);
		mc_bulk_sink_fd(&sink, fd, 10, size);
		rc = mc_rpcc_read_bulk_to(r, &sink, &e);
		mc_bulk_sink_release(&sink);
	}
	TAP_OK(rc == 0 && file_holds_big(fd, 10, size),
	       "a response's bulk received into a file sink lands at its offset over %s", label);
	if (fd >= 0)
		close(fd);

	/* a request's bulk sent from a file */
	src = mc_bulk_src_fd(g_file_fd, FILE_SKEW, size);
	rpcc_begin(r, "put", pack_put, &(struct kv){ "len", size, NULL, 0 });
	rc = mc_rpcc_send_src(r, &src, &e) < 0 || mc_rpcc_recv(r, &m, &e) < 0;
	TAP_OK(rc == 0 && mc_map_u64(m.body, "got", &got, NULL) == 1 &&
		       mc_map_u64(m.body, "hash", &hash, NULL) == 1 && got == size &&
		       hash == XXH3_64bits(g_big, size),
	       "a request's bulk sent from a file lands byte-exact over %s", label);
	if (rc == 0)
		mc_msg_release(&m);

	/* a request's bulk into a file on the daemon's side */
	rpcc_begin(r, "putfile", pack_kv, &(struct kv){ "len", size, NULL, 0 });
	rc = mc_rpcc_send(r, g_big, size, &e) < 0 || mc_rpcc_recv(r, &m, &e) < 0;
	got = hash = 0;
	TAP_OK(rc == 0 && mc_msg_error(&m, NULL) == 0 &&
		       mc_map_u64(m.body, "got", &got, NULL) == 1 &&
		       mc_map_u64(m.body, "hash", &hash, NULL) == 1 && got == size &&
		       hash == XXH3_64bits(g_big, size),
	       "a request's bulk received into a daemon's file sink lands byte-exact over %s",
	       label);
	if (rc == 0)
		mc_msg_release(&m);
	TAP_OK(echo_ok(r, 9), "the stream stays in step after file bulks over %s", label);
	TAP_OK(atomic_load(&g_file_releases) - before == 3,
	       "every file reply's release ran once (%d)", atomic_load(&g_file_releases) - before);
out:
	free(dst);
	mc_rpcc_close(r);
}

/* A reply promising more bytes than its file has closes the connection. */
static void
test_short_file(const char *addr)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 10000, &e);
	struct kv over = { "size", FILE_BYTES + 1000, NULL, 0 };
	unsigned char *dst = malloc(FILE_BYTES + 1000);
	int before = atomic_load(&g_file_releases);
	struct mc_msg m;
	int rc;

	rc = r == NULL || dst == NULL || rpcc_call(r, "getfile", pack_kv, &over, &m, &e) < 0;
	if (rc == 0) {
		mc_msg_release(&m);
		rc = mc_rpcc_read_bulk(r, dst, FILE_BYTES + 1000, &e);
	}
	TAP_OK(rc != 0 && e.code == MC_ERR_UNAVAILABLE,
	       "a file shorter than its reply announced closes the connection: %s", e.msg);
	mc_rpcc_close(r);
	free(dst);
	/* the server thread runs the release when it shuts the connection */
	for (int i = 0; i < 500 && atomic_load(&g_file_releases) == before; i++)
		usleep(2000);
	TAP_OK(atomic_load(&g_file_releases) - before == 1,
	       "the short file's release still ran once");
}

/*
 * A bulk its handler left unclaimed: up to MC_CONN_MAX_DRAIN it is read
 * and discarded and the connection goes on; past that the answer still
 * comes, then the connection closes instead of reading the rest.
 */
static void
test_unclaimed_bulk(const char *addr, size_t size)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	bool drained = size <= MC_CONN_MAX_DRAIN;
	struct kv put = { "len", size, NULL, 1 };
	unsigned char *src = calloc(1, size);
	struct mc_msg m;
	bool claimed = true;
	int rc;

	if (r == NULL || src == NULL) {
		TAP_OK(0, "unclaimed bulk setup");
		goto out;
	}
	/* bytes that would be a framing error if they were parsed as messages */
	memset(src, 0xc1, size);
	rc = rpcc_send(r, "put", pack_put, &put, src, size, &e) < 0 || mc_rpcc_recv(r, &m, &e) < 0;
	TAP_OK(rc == 0 && mc_map_bool(m.body, "claimed", &claimed, NULL) == 1 && !claimed,
	       "a handler may leave a bulk unclaimed");
	if (rc == 0)
		mc_msg_release(&m);
	if (drained)
		TAP_OK(echo_ok(r, 9), "an unclaimed bulk is discarded and the next request works");
	else
		TAP_OK(!echo_ok(r, 9),
		       "an unclaimed bulk over the drain bound closes the connection");
out:
	free(src);
	mc_rpcc_close(r);
}

static void
test_pipelined_bulks(const char *addr)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	static unsigned char src[3000];
	struct kv claim = { "len", sizeof(src), NULL, 0 };
	struct kv skip = { "len", sizeof(src), NULL, 1 };
	struct mc_msg m;
	uint64_t v = 0;
	int ok = r != NULL, i;

	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (unsigned char)(0xc1 ^ i);
	/* bulks and messages back to back in one write: all read ahead at once */
	for (i = 0; i < 4 && ok; i++) {
		ok = rpcc_send(r, "put", pack_put, i % 2 ? &skip : &claim, src, sizeof(src), &e) >=
			     0 &&
		     rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)i, NULL, 0, &e) >= 0;
	}
	ok = ok && mc_rpcc_flush(r, &e) == 0;
	for (i = 0; i < 4 && ok; i++) {
		ok = mc_rpcc_recv(r, &m, &e) == 0;
		if (!ok)
			break;
		if (i % 2 == 0)
			ok = mc_map_u64(m.body, "hash", &v, NULL) == 1 &&
			     v == XXH3_64bits(src, sizeof(src));
		else
			ok = mc_map_get(m.body, "claimed") != NULL;
		mc_msg_release(&m);
		ok = ok && mc_rpcc_recv(r, &m, &e) == 0;
		if (!ok)
			break;
		ok = mc_map_u64(m.body, "i", &v, NULL) == 1 && v == (uint64_t)i;
		mc_msg_release(&m);
	}
	TAP_OK(ok, "claimed and unclaimed bulks pipelined with requests keep the stream in step");
	mc_rpcc_close(r);
}

static void
test_malformed(const char *addr)
{
	static const unsigned char dd[] = { 0xdd, 0xff, 0x00, 0x00, 0x00 };
	static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct mc_conn_stats s0, s1;
	struct mc_err e;
	struct mc_rpcc *good = mc_rpcc_connect(addr, 5000, &e);
	struct mc_rpcc *big;
	struct mc_msg m;
	int fd;

	mc_conn_stats_get(&s0);
	fd = raw_connect(addr);
	TAP_OK(fd >= 0 && write(fd, http, sizeof(http) - 1) > 0 && drain_to_eof(fd) == 0,
	       "garbage bytes close the connection that sent them");
	if (fd >= 0)
		close(fd);
	fd = raw_connect(addr);
	TAP_OK(fd >= 0 && write(fd, dd, sizeof(dd)) == (ssize_t)sizeof(dd) && drain_to_eof(fd) == 0,
	       "the 5-byte dd ff 00 00 00 closes the connection that sent it");
	if (fd >= 0)
		close(fd);
	TAP_OK(good != NULL && echo_ok(good, 1), "another connection keeps working meanwhile");
	mc_conn_stats_get(&s1);
	TAP_OK(s1.malformed >= s0.malformed + 2, "the malformed counter counts both (%llu -> %llu)",
	       (unsigned long long)s0.malformed, (unsigned long long)s1.malformed);

	big = mc_rpcc_connect(addr, 5000, &e);
	TAP_OK(big != NULL &&
		       rpcc_call(big, "echo", pack_huge, (void *)(uintptr_t)(2 * MAX_MSG), &m, &e) <
			       0 &&
		       e.code == MC_ERR_UNAVAILABLE,
	       "a message over max_msg closes its connection (%s)", e.msg);
	mc_rpcc_close(big);
	TAP_OK(good != NULL && echo_ok(good, 2), "the other connection still works after that");
	mc_rpcc_close(good);
}

static void
test_calls(const char *addr)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	struct relay_req echo = { "echo", 1000 };
	struct relay_req never = { "never", 100 };
	struct mc_msg m;
	uint64_t t0;
	int rc;

	if (r == NULL) {
		TAP_OK(0, "calls setup: %s", e.msg);
		return;
	}
	rc = rpcc_call(r, "relay", pack_relay_req, &echo, &m, &e);
	TAP_OK(rc == 0 && mc_obj_streq(mc_map_get(m.body, "tag"), "relayed"),
	       "mc_conn_call to another server gets its response");
	TAP_OK(rc == 0 && g_resend_refused,
	       "mc_conn_call and mc_conn_notify without a new mc_conn_begin are refused");
	if (rc == 0)
		mc_msg_release(&m);
	t0 = now_ms();
	rc = rpcc_call(r, "relay", pack_relay_req, &never, &m, &e);
	TAP_OK(rc < 0 && e.code == MC_ERR_TIMEOUT && now_ms() - t0 < 2000,
	       "mc_conn_call times out with MC_ERR_TIMEOUT (%s)", e.msg);
	TAP_OK(echo_ok(r, 3), "the relaying connection works after a timed-out call");
	mc_rpcc_close(r);
}

static void
test_release_on_disconnect(const char *addr)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	struct kv get = { "size", 8u << 20, NULL, 0 };
	static char part[1 << 20];
	int g0 = atomic_load(&g_gets), i, n = 16;
	struct mc_msg m;
	int ok = r != NULL;

	for (i = 0; i < n && ok; i++)
		ok = rpcc_send(r, "get", pack_kv, &get, NULL, 0, &e) >= 0;
	ok = ok && mc_rpcc_flush(r, &e) == 0 && mc_rpcc_recv(r, &m, &e) == 0;
	if (ok) {
		mc_msg_release(&m);
		ok = mc_rpcc_read_bulk(r, part, sizeof(part), &e) == 0;
	}
	/* walk away mid-transfer */
	mc_rpcc_close(r);
	TAP_OK(ok, "a client can start reading a pipelined bulk stream");
	wait_for(&g_gets, g0 + n, 2000);
	TAP_OK(wait_for(&g_releases, atomic_load(&g_gets), 3000) &&
		       atomic_load(&g_releases) == atomic_load(&g_gets) &&
		       atomic_load(&g_double_rel) == 0,
	       "every queued bulk is released exactly once after a mid-transfer disconnect "
	       "(%d gets, %d releases)",
	       atomic_load(&g_gets), atomic_load(&g_releases));
}

static void
test_outq_cap(const char *addr)
{
	struct kv get = { "size", 1u << 20, NULL, 0 };
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	long long total = -1;
	int i, ok = r != NULL;

	for (i = 0; i < 64 && ok; i++)
		ok = rpcc_send(r, "get", pack_kv, &get, NULL, 0, &e) >= 0;
	ok = ok && mc_rpcc_flush(r, &e) == 0;
	if (ok) {
		usleep(200 * 1000); /* never read while the server queues */
		total = drain_to_eof(mc_rpcc_fd(r));
	}
	TAP_OK(ok && total >= 0 && total < 64ll << 20,
	       "a client that never reads is closed at the output cap (%lld of %lld bytes)", total,
	       64ll << 20);
	mc_rpcc_close(r);
	TAP_OK(wait_for(&g_releases, atomic_load(&g_gets), 3000) && atomic_load(&g_double_rel) == 0,
	       "bulks dropped at the output cap are released exactly once");
}

static void
test_close_paths(const char *addr)
{
	struct mc_err e;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, &e);
	int c0 = atomic_load(&g_closed_cb), s0 = atomic_load(&g_slow_done);
	struct mc_msg m;

	TAP_OK(r != NULL && rpcc_call(r, "close_me", NULL, NULL, &m, &e) < 0 &&
		       e.code == MC_ERR_UNAVAILABLE,
	       "a handler can close its own connection");
	mc_rpcc_close(r);
	TAP_OK(wait_for(&g_closed_cb, c0 + 1, 2000), "on_close runs when a connection closes");

	r = mc_rpcc_connect(addr, 5000, &e);
	TAP_OK(r != NULL && rpcc_send(r, "slow", NULL, NULL, NULL, 0, &e) >= 0 &&
		       mc_rpcc_flush(r, &e) == 0,
	       "a slow request is sent");
	mc_rpcc_close(r);
	TAP_OK(wait_for(&g_slow_done, s0 + 1, 2000),
	       "a deferred reply after its connection closed is dropped quietly");
	r = mc_rpcc_connect(addr, 5000, &e);
	TAP_OK(r != NULL && echo_ok(r, 4), "the server keeps serving after those closes");
	mc_rpcc_close(r);
}

static void
test_max_conns(void)
{
	struct mc_err e;
	struct mc_rpcc *a = mc_rpcc_connect(g_addr_one, 2000, &e);
	struct mc_rpcc *b;
	struct mc_msg m;

	TAP_OK(a != NULL && echo_ok(a, 1), "the first connection under max_conns is served");
	b = mc_rpcc_connect(g_addr_one, 2000, &e);
	TAP_OK(b == NULL || (rpcc_call(b, "echo", NULL, NULL, &m, &e) < 0 &&
			     e.code == MC_ERR_UNAVAILABLE),
	       "a connection over max_conns is refused");
	mc_rpcc_close(b);
	TAP_OK(echo_ok(a, 2), "the admitted connection is unaffected");
	mc_rpcc_close(a);
}

/*
 * Run the process out of descriptors exactly when the server accepts:
 * the client's socket takes the last one allowed, accept4 gets EMFILE.
 */
static void
test_emfile(const char *addr)
{
	struct rlimit old, low;
	struct mc_err e;
	struct mc_conn_stats s0, s1;
	struct mc_rpcc *r;
	uint64_t t0;
	int lowest = dup(0);

	if (lowest < 0 || getrlimit(RLIMIT_NOFILE, &old) < 0) {
		TAP_OK(0, "emfile setup");
		return;
	}
	close(lowest);
	mc_conn_stats_get(&s0);
	low = old;
	low.rlim_cur = (rlim_t)lowest + 1;
	setrlimit(RLIMIT_NOFILE, &low);
	r = mc_rpcc_connect(addr, 5000, &e);
	usleep(30 * 1000); /* the server tries to accept and cannot */
	setrlimit(RLIMIT_NOFILE, &old);
	mc_conn_stats_get(&s1);
	TAP_OK(r != NULL && s1.accepted == s0.accepted,
	       "a connection waits in the backlog while accept fails with EMFILE");
	t0 = now_ms();
	TAP_OK(r != NULL && echo_ok(r, 8) && now_ms() - t0 < 2000,
	       "the listener resumes after EMFILE and serves the waiting connection");
	mc_rpcc_close(r);
}

/*
 * A held request keeps the replies in request order: an echo pipelined
 * behind it is answered after it (rpcc refuses an answer out of order),
 * and a notification queued before it leaves with it.
 */
static void
test_hold(const char *addr)
{
	struct mc_rpcc *r;
	struct mc_msg m;
	struct mc_err e;
	bool held = false;
	uint64_t got = 0, t0;
	int ok;

	r = mc_rpcc_connect(addr, 2000, &e);
	if (r == NULL) {
		TAP_OK(0, "connect for the hold test: %s", e.msg);
		return;
	}
	TAP_OK(rpcc_notify(r, "note", NULL, NULL, &e) == 0 && mc_rpcc_queued(r),
	       "a notification is queued, not sent");
	t0 = now_ms();
	ok = rpcc_send(r, "held", NULL, NULL, NULL, 0, &e) > 0 &&
	     rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)42, NULL, 0, &e) > 0 &&
	     mc_rpcc_flush(r, &e) == 0 && mc_rpcc_recv(r, &m, &e) == 0;
	if (ok) {
		ok = mc_map_bool(m.body, "slow", &held, NULL) == 1 && held;
		mc_msg_release(&m);
	}
	TAP_OK(ok && now_ms() - t0 >= 40, "the held request is answered first, after its wait");
	TAP_OK(atomic_load(&g_notes) == 1, "the notification was handled before it");
	ok = mc_rpcc_recv(r, &m, &e) == 0;
	if (ok) {
		ok = mc_map_u64(m.body, "i", &got, NULL) == 1 && got == 42;
		mc_msg_release(&m);
	}
	TAP_OK(ok, "the request pipelined behind it is answered next, in order");
	TAP_OK(echo_ok(r, 43), "the connection reads again after the held reply");
	mc_rpcc_close(r);
}

/* hold_bulk's params: the bulk's length, and whether to refuse it */
static void
pack_hold_bulk(msgpack_packer *pk, void *arg)
{
	const struct kv *p = arg;

	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "len", p->v);
	mc_pack_kv_bool(pk, "refuse", p->v2 != 0);
}

/*
 * A held request may claim its bulk after its handler returned: the
 * bytes wait in the stream (some of them buffered), land whole, and the
 * request pipelined behind comes next. Refused without it, the bulk is
 * discarded and the stream goes on after it.
 */
static void
test_hold_bulk(const char *addr)
{
	static const size_t lens[] = { 3000, 300 * 1024 };
	struct kv refused = { .v2 = 1 };
	struct mc_rpcc *r;
	struct mc_msg m;
	struct mc_err e;
	unsigned char *bulk;
	uint64_t got = 0, hash = 0, i = 0;
	int ok;

	r = mc_rpcc_connect(addr, 2000, &e);
	bulk = malloc(lens[1]);
	if (r == NULL || bulk == NULL) {
		TAP_OK(0, "connect for the late bulk test");
		free(bulk);
		if (r != NULL)
			mc_rpcc_close(r);
		return;
	}
	for (size_t k = 0; k < lens[1]; k++)
		bulk[k] = (unsigned char)(k * 7 + 3);
	for (size_t n = 0; n < sizeof(lens) / sizeof(lens[0]); n++) {
		struct kv p = { .v = lens[n] };

		ok = rpcc_send(r, "hold_bulk", pack_hold_bulk, &p, bulk, lens[n], &e) > 0 &&
		     rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)(50 + n), NULL, 0, &e) >
			     0 &&
		     mc_rpcc_flush(r, &e) == 0 && mc_rpcc_recv(r, &m, &e) == 0;
		if (ok) {
			ok = mc_map_u64(m.body, "got", &got, NULL) == 1 && got == lens[n] &&
			     mc_map_u64(m.body, "hash", &hash, NULL) == 1 &&
			     hash == XXH3_64bits(bulk, lens[n]);
			mc_msg_release(&m);
		}
		TAP_OK(ok, "a bulk of %zu bytes claimed late lands whole", lens[n]);
		ok = mc_rpcc_recv(r, &m, &e) == 0;
		if (ok) {
			ok = mc_map_u64(m.body, "i", &i, NULL) == 1 && i == 50 + n;
			mc_msg_release(&m);
		}
		TAP_OK(ok, "the request pipelined behind it is answered next");
	}
	refused.v = lens[1];
	ok = rpcc_send(r, "hold_bulk", pack_hold_bulk, &refused, bulk, lens[1], &e) > 0 &&
	     rpcc_send(r, "echo", pack_echo, (void *)(uintptr_t)60, NULL, 0, &e) > 0 &&
	     mc_rpcc_flush(r, &e) == 0 && mc_rpcc_recv(r, &m, &e) == 0;
	if (ok) {
		ok = mc_msg_error(&m, &e) < 0 && e.code == MC_ERR_NO_SPACE;
		mc_msg_release(&m);
	}
	TAP_OK(ok, "a held request refused without its bulk is answered");
	ok = mc_rpcc_recv(r, &m, &e) == 0;
	if (ok) {
		ok = mc_map_u64(m.body, "i", &i, NULL) == 1 && i == 60;
		mc_msg_release(&m);
	}
	TAP_OK(ok && echo_ok(r, 61), "its bulk is discarded and the stream goes on after it");
	mc_rpcc_close(r);
	free(bulk);
}

/* ---- connection limits ---- */

/* Send one whole request (empty params) on a raw socket; -1 on error. */
static int
raw_request(int fd, uint32_t id, const char *method, uint64_t ms)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	ssize_t n;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	mc_pack_request(&pk, id, method);
	if (ms > 0) {
		msgpack_pack_map(&pk, 1);
		mc_pack_kv_u64(&pk, "ms", ms);
	} else {
		msgpack_pack_map(&pk, 0);
	}
	n = send(fd, sb.data, sb.size, MSG_NOSIGNAL);
	n = n == (ssize_t)sb.size ? 0 : -1;
	msgpack_sbuffer_destroy(&sb);
	return (int)n;
}

/* Some bytes arrive on fd (an answer), not EOF, within its receive timeout. */
static int
raw_answered(int fd)
{
	char buf[256];

	return recv(fd, buf, sizeof(buf), 0) > 0;
}

static void
test_header_timeout(void)
{
	static const unsigned char partial[] = { 0x94, 0x00, 0x01 };
	struct mc_conn_stats s0, s1;
	int fd;

	mc_conn_stats_get(&s0);
	fd = raw_connect(g_addr_timed);
	TAP_OK(fd >= 0 && send(fd, partial, sizeof(partial), MSG_NOSIGNAL) == 3 &&
		       drain_to_eof(fd) == 0,
	       "limits: a connection that sent 3 bytes of a header is closed");
	close(fd);
	fd = raw_connect(g_addr_timed);
	TAP_OK(fd >= 0 && drain_to_eof(fd) == 0,
	       "limits: a connection that never sends its first message is closed");
	close(fd);
	mc_conn_stats_get(&s1);
	TAP_OK(s1.header_timeouts == s0.header_timeouts + 2 && s1.idle_timeouts == s0.idle_timeouts,
	       "limits: both are counted as header timeouts");
	fd = raw_connect(g_addr_timed);
	TAP_OK(fd >= 0 && raw_request(fd, 1, "echo", 0) == 0 &&
		       send(fd, partial, sizeof(partial), MSG_NOSIGNAL) == 3 &&
		       drain_to_eof(fd) > 0,
	       "limits: a header stalled behind an answered request is closed too");
	close(fd);
	mc_conn_stats_get(&s0);
	TAP_OK(s0.header_timeouts == s1.header_timeouts + 1, "limits: counted once more");
}

static void
test_idle_timeout(void)
{
	struct mc_conn_stats s0, s1;
	uint64_t t0;
	int fd;

	mc_conn_stats_get(&s0);
	fd = raw_connect(g_addr_timed);
	TAP_OK(fd >= 0 && raw_request(fd, 1, "echo", 0) == 0 && drain_to_eof(fd) > 0,
	       "limits: an answered connection left idle is closed");
	close(fd);
	mc_conn_stats_get(&s1);
	TAP_OK(s1.idle_timeouts == s0.idle_timeouts + 1 && s1.header_timeouts == s0.header_timeouts,
	       "limits: it is counted as an idle timeout");

	/*
	 * The idle timeout holds from a connection's first answer, not from
	 * when the header timeout armed at accept would fire (50 times it).
	 */
	t0 = mc_mono_ms();
	fd = raw_connect(g_addr_idle);
	TAP_OK(fd >= 0 && raw_request(fd, 1, "echo", 0) == 0 && drain_to_eof(fd) > 0 &&
		       mc_mono_ms() - t0 < 20 * TIMEOUT_MS,
	       "limits: an idle timeout shorter than the header timeout closes a new "
	       "connection in time (%llu ms)",
	       (unsigned long long)(mc_mono_ms() - t0));
	close(fd);
}

/*
 * Work in flight keeps a connection open past the idle timeout. Each
 * case opens a plain idle connection after the busy one and waits for
 * the server to close it: the busy one's deadline came first, so had it
 * been idle it would be closed by then.
 */
static void
test_idle_waits_for_work(void)
{
	struct mc_rpcc *r;
	struct mc_msg m;
	struct mc_err e;
	struct kv slow = { "ms", 4 * TIMEOUT_MS, NULL, 0 };
	int a, b;
	long long got;
	bool ok;

	r = mc_rpcc_connect(g_addr_timed, 2000, &e);
	ok = r != NULL && rpcc_call(r, "slow", pack_kv, &slow, &m, &e) == 0;
	TAP_OK(ok, "limits: a deferred request four idle timeouts long is answered");
	if (ok)
		mc_msg_release(&m);
	mc_rpcc_close(r);

	a = raw_connect(g_addr_timed);
	TAP_OK(a >= 0 && raw_request(a, 1, "ask", 0) == 0 && raw_answered(a),
	       "limits: a server's call back on a connection goes out");
	b = raw_connect(g_addr_timed);
	TAP_OK(b >= 0 && raw_request(b, 1, "echo", 0) == 0 && drain_to_eof(b) > 0 &&
		       raw_request(a, 2, "echo", 0) == 0 && raw_answered(a),
	       "limits: a connection with a call awaiting its answer is not idle");
	close(a);
	close(b);

	a = raw_connect(g_addr_timed);
	TAP_OK(a >= 0 && raw_request(a, 1, "keep_me", 0) == 0 && raw_answered(a),
	       "limits: a connection is kept by its daemon");
	b = raw_connect(g_addr_timed);
	TAP_OK(b >= 0 && raw_request(b, 1, "echo", 0) == 0 && drain_to_eof(b) > 0 &&
		       raw_request(a, 2, "echo", 0) == 0 && raw_answered(a),
	       "limits: a kept connection is never idle");
	close(a);
	close(b);

	/* 64 MiB stays queued in the server while nobody reads it */
	a = raw_connect(g_addr_timed);
	{
		struct kv size = { "size", BIG, NULL, 0 };
		msgpack_sbuffer sb;
		msgpack_packer pk;

		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		mc_pack_request(&pk, 1, "get");
		pack_kv(&pk, &size);
		TAP_OK(a >= 0 && send(a, sb.data, sb.size, MSG_NOSIGNAL) == (ssize_t)sb.size,
		       "limits: a bulk read is asked for and left unread");
		msgpack_sbuffer_destroy(&sb);
	}
	b = raw_connect(g_addr_timed);
	TAP_OK(b >= 0 && raw_request(b, 1, "echo", 0) == 0 && drain_to_eof(b) > 0,
	       "limits: another connection idles out meanwhile");
	got = a >= 0 ? drain_to_eof(a) : -1;
	TAP_OK(got > (long long)BIG,
	       "limits: a bulk being sent is not idle: all of it arrives (%lld bytes)", got);
	close(a);
	close(b);
}

/* A TCP connection from a given loopback address. */
static int
connect_from(const char *from, const char *addr)
{
	struct timeval tv = { 2, 0 };
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct mc_addr a;
	struct mc_err e;
	int fd;

	if (mc_addr_parse(addr, &a, &e) < 0 || inet_pton(AF_INET, from, &src.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&a.ss, a.len) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The third connection of one address is refused; others' are served. */
static void
per_addr_case(const char *addr, const char *label, bool other)
{
	struct mc_conn_stats s0, s1;
	int a, b, c, d = -1;

	mc_conn_stats_get(&s0);
	a = raw_connect(addr);
	b = raw_connect(addr);
	TAP_OK(a >= 0 && b >= 0 && raw_request(a, 1, "echo", 0) == 0 && raw_answered(a) &&
		       raw_request(b, 1, "echo", 0) == 0 && raw_answered(b),
	       "limits: %s: two connections from one address are served", label);
	c = raw_connect(addr);
	TAP_OK(c >= 0 && drain_to_eof(c) == 0, "limits: %s: a third one is closed at once", label);
	mc_conn_stats_get(&s1);
	TAP_OK(s1.refused_per_addr == s0.refused_per_addr + 1,
	       "limits: %s: it is counted as over the per-address cap", label);
	if (other) {
		d = connect_from("127.0.0.2", addr);
		TAP_OK(d >= 0 && raw_request(d, 1, "echo", 0) == 0 && raw_answered(d),
		       "limits: %s: another address is served meanwhile", label);
	}
	TAP_OK(raw_request(a, 2, "echo", 0) == 0 && raw_answered(a),
	       "limits: %s: the admitted ones are unaffected", label);
	close(a);
	close(b);
	close(c);
	if (d >= 0)
		close(d);
}

static void
test_per_addr(void)
{
	per_addr_case(g_addr_peraddr, "tcp", true);
	/* every unix client is the same address */
	per_addr_case(g_addr_peraddr_unix, "unix", false);
}

/* ---- the method registry ---- */

static void
test_registry(void)
{
	static const struct mc_method dup[] = { { "echo", h_echo, 0 }, { NULL, NULL, 0 } };
	struct mc_registry *r;
	struct mc_err e;
	char flags[64];

	r = mc_registry_new(NULL, &e);
	TAP_OK(r != NULL && mc_registry_add(r, methods_a, &e) == 0 &&
		       mc_registry_add(r, methods_a2, &e) == 0,
	       "registry: two modules' tables in one registry");
	TAP_OK(mc_registry_add(r, dup, &e) != 0 && strstr(e.msg, "'echo' registered twice"),
	       "registry: a name registered twice is refused: %s", e.msg);
	TAP_OK(mc_registry_count(r) == 10 && strcmp(mc_registry_at(r, 0)->name, "echo") == 0 &&
		       strcmp(mc_registry_at(r, 9)->name, "fail") == 0 &&
		       mc_registry_at(r, 10) == NULL,
	       "registry: entries listed in the order added (%zu)", mc_registry_count(r));
	TAP_OK(mc_registry_find(r, "get", 3) == &methods_a[2] &&
		       mc_registry_find(r, "ge", 2) == NULL &&
		       mc_registry_find(r, "gets", 4) == NULL,
	       "registry: found by exact name only");
	TAP_OK(strcmp(mc_method_flags_str(MC_METHOD_BULK | MC_METHOD_READ_ONLY, flags,
					  sizeof(flags)),
		      "bulk,read-only") == 0 &&
		       strcmp(mc_method_flags_str(MC_METHOD_ADMIN | MC_METHOD_PEER, flags,
						  sizeof(flags)),
			      "admin,peer") == 0 &&
		       strcmp(mc_method_flags_str(0, flags, sizeof(flags)), "") == 0,
	       "registry: flags read as words");
	mc_registry_free(r);
}

static void
pack_role(msgpack_packer *pk, void *arg)
{
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "role", arg);
}

static void
fault_set(const char *spec)
{
	if (spec != NULL)
		setenv("MC_FAULT", spec, 1);
	else
		unsetenv("MC_FAULT");
	mc_fault_reset();
}

/* Whether call gets exactly the answer a name A does not know gets. */
static bool
refused_as_unknown(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg)
{
	struct mc_msg m;
	struct mc_err e, unknown;
	char want[128];

	if (rpcc_call(r, "nosuch", NULL, NULL, &m, &unknown) == 0) {
		mc_msg_release(&m);
		return false;
	}
	if (rpcc_call(r, method, fn, arg, &m, &e) == 0) {
		mc_msg_release(&m);
		return false;
	}
	snprintf(want, sizeof(want), "unknown method '%s'", method);
	return e.code == unknown.code && strcmp(unknown.msg, "unknown method 'nosuch'") == 0 &&
	       strcmp(e.msg, want) == 0;
}

/* Whether --list-methods of r has a line for name. */
static bool
listed(const struct mc_registry *r, const char *name)
{
	char *text = NULL, line[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	bool found = false;

	if (f == NULL)
		return false;
	mc_registry_print(r, f);
	fclose(f);
	/* "NAME FLAGS" lines: NAME and a space at the start of one */
	snprintf(line, sizeof(line), "\n%s ", name);
	found = text != NULL &&
		(strncmp(text, line + 1, strlen(line + 1)) == 0 || strstr(text, line) != NULL);
	free(text);
	return found;
}

/*
 * method.NAME: a request for NAME is answered as by a daemon built
 * without it, before its role check, its handler and its counters
 * (check_method_counts sees none of these calls); the rest is served.
 */
static void
test_method_fault(const char *addr)
{
	struct mc_rpcc *r = mc_rpcc_connect(addr, 5000, NULL);
	struct mc_err e;
	int notes;

	TAP_OK(r != NULL, "method fault: a connection");
	if (r == NULL)
		return;
	fault_set("method.echo:nth=2;method.guarded:always;method.note:always");
	TAP_OK(echo_ok(r, 1) && refused_as_unknown(r, "echo", pack_echo, (void *)1) &&
		       echo_ok(r, 3),
	       "method.echo:nth=2: the second echo is answered as an unknown method, no other");
	TAP_OK(refused_as_unknown(r, "guarded", pack_role, "tenant"),
	       "method.guarded:always: unknown to every caller, not permission denied");
	notes = atomic_load(&g_notes);
	TAP_OK(rpcc_notify(r, "note", NULL, NULL, &e) == 0 && echo_ok(r, 4) &&
		       atomic_load(&g_notes) == notes,
	       "method.note:always: the notification is ignored as an unknown one");
	TAP_OK(mc_registry_serves(g_reg_a, "echo") && !mc_registry_serves(g_reg_a, "guarded") &&
		       mc_registry_serves(g_reg_a, "get") && !mc_registry_serves(g_reg_a, "nosuch"),
	       "method fault: the registry serves what is registered, less what is always out");
	TAP_OK(listed(g_reg_a, "echo") && !listed(g_reg_a, "guarded") && listed(g_reg_a, "get"),
	       "method fault: --list-methods leaves out what is always out");
	fault_set(NULL);
	TAP_OK(mc_registry_serves(g_reg_a, "guarded") && listed(g_reg_a, "guarded") &&
		       echo_ok(r, 5),
	       "method fault: without MC_FAULT every method is served");
	mc_rpcc_close(r);
}

/* Calls the counted methods a known number of times; checked after the server stops. */
static void
test_method_traffic(const char *addr)
{
	struct mc_rpcc *r = mc_rpcc_connect(addr, 2000, NULL);
	struct mc_msg m;
	struct mc_err e;
	int fails = 0, notes = 0;

	for (int i = 0; r != NULL && i < 3; i++)
		fails += rpcc_call(r, "fail", NULL, NULL, &m, &e) < 0 && e.code == MC_ERR_NOT_FOUND;
	for (int i = 0; r != NULL && i < 4; i++)
		notes += rpcc_notify(r, "note", NULL, NULL, &e) == 0;
	/* the notifications leave with this call, and are handled before it */
	TAP_OK(r != NULL && fails == 3 && notes == 4 &&
		       rpcc_call(r, "slow", NULL, NULL, &m, &e) == 0,
	       "registry: traffic to count (3 failures, 4 notifications, a deferred answer)");
	if (r != NULL) {
		mc_msg_release(&m);
		TAP_OK(rpcc_call(r, "guarded", pack_role, "tenant", &m, &e) < 0 &&
			       e.code == MC_ERR_PERMISSION &&
			       strcmp(e.msg, "permission denied: guarded needs the admin role") ==
				       0,
		       "authorize: a refused call is answered permission denied (%s)", e.msg);
		TAP_OK(rpcc_call(r, "guarded", pack_role, "admin", &m, &e) == 0,
		       "authorize: an allowed call reaches its handler");
		mc_msg_release(&m);
		mc_rpcc_close(r);
	}
}

/* The value of one series in rendered metrics, or -1. */
static double
series(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atof(p + n + 1);
	return -1;
}

static void
check_method_counts(void)
{
	size_t len;
	char *text = mc_metrics_render(g_metrics, &len);
	double slow = series(text, "mc_requests_total{method=\"slow\"}");
	double notes = series(text, "mc_requests_total{method=\"note\"}");

	TAP_OK(series(text, "mc_requests_total{method=\"fail\"}") == 3 &&
		       series(text, "mc_request_failures_total{method=\"fail\"}") == 3 &&
		       series(text, "mc_request_seconds_count{method=\"fail\"}") == 3,
	       "registry: every error answer is a failure, timed");
	TAP_OK(notes >= 4 && series(text, "mc_request_failures_total{method=\"note\"}") == 0 &&
		       series(text, "mc_request_seconds_count{method=\"note\"}") == notes,
	       "registry: notifications counted and timed once each (%.0f)", notes);
	TAP_OK(slow >= 1 && series(text, "mc_request_seconds_count{method=\"slow\"}") == slow &&
		       series(text, "mc_request_failures_total{method=\"slow\"}") == 0,
	       "registry: deferred answers keep their entry: %.0f requests, as many timed", slow);
	TAP_OK(series(text, "mc_requests_denied_total{method=\"guarded\"}") == 1 &&
		       series(text, "mc_requests_total{method=\"guarded\"}") == 2 &&
		       series(text, "mc_request_failures_total{method=\"guarded\"}") == 1 &&
		       series(text, "mc_requests_denied_total{method=\"fail\"}") == 0,
	       "authorize: refusals counted per method, as failures too");
	TAP_OK(series(text, "mc_requests_total{method=\"never\"}") == -1,
	       "registry: a registry without metrics counts nothing");
	TAP_OK(series(text, "mc_requests_total{method=\"echo\"}") > 10 &&
		       series(text, "mc_request_failures_total{method=\"echo\"}") == 0,
	       "registry: plain answers counted, not failed");
	free(text);
}

int
main(void)
{
	struct mc_conn_stats st;
	struct mc_err e;
	pthread_t th;
	int ready;

	mc_log_init("test_conn", 0);
	mc_log_set_level(getenv("MC_TEST_DEBUG") ? MC_LOG_DEBUG : MC_LOG_ERROR);
	evthread_use_pthreads();
	snprintf(g_unix_path, sizeof(g_unix_path), "/tmp/mc-test-conn-%d.sock", (int)getpid());
	snprintf(g_unix_path2, sizeof(g_unix_path2), "/tmp/mc-test-conn-%d-2.sock", (int)getpid());
	g_big = malloc(BIG);
	if (g_big == NULL)
		return 1;
	for (size_t i = 0; i < BIG; i++)
		g_big[i] = (unsigned char)(i * 40503u >> 7);
	g_file_fd = temp_file();
	if (g_file_fd < 0 || pwrite(g_file_fd, g_big + 1, FILE_SKEW, 0) != FILE_SKEW ||
	    pwrite(g_file_fd, g_big, FILE_BYTES, FILE_SKEW) != FILE_BYTES)
		return 1;
	pthread_create(&th, NULL, server_main, NULL);
	pthread_mutex_lock(&g_mu);
	while (g_ready == 0)
		pthread_cond_wait(&g_cv, &g_mu);
	ready = g_ready;
	pthread_mutex_unlock(&g_mu);
	TAP_OK(ready == 1, "servers listen on %s and %s", g_addr_unix, g_addr_tcp);
	if (ready != 1) {
		pthread_join(th, NULL);
		return tap_done();
	}
	TAP_OK(strncmp(g_addr_tcp, "127.0.0.1:", 10) == 0 && strcmp(g_addr_tcp, "127.0.0.1:0"),
	       "port 0 is resolved in the bound address");

	test_round_trips(g_addr_unix, "unix");
	test_round_trips(g_addr_tcp, "tcp");
	test_notify_hook(g_addr_unix);
	test_bulk(g_addr_unix, BIG, "unix");
	test_bulk(g_addr_tcp, 1u << 20, "tcp");
	test_bulk(g_addr_tcp, 0, "tcp");
	test_fd_bulks(g_addr_unix, "unix");
	test_fd_bulks(g_addr_tcp, "tcp");
	test_short_file(g_addr_tcp);
	test_unclaimed_bulk(g_addr_unix, MC_CONN_MAX_DRAIN);
	test_unclaimed_bulk(g_addr_unix, 8u << 20);
	test_pipelined_bulks(g_addr_unix);
	test_pipelined_bulks(g_addr_tcp);
	test_malformed(g_addr_unix);
	test_calls(g_addr_tcp);
	test_release_on_disconnect(g_addr_tcp);
	test_outq_cap(g_addr_unix);
	test_close_paths(g_addr_unix);
	test_max_conns();
	test_emfile(g_addr_tcp);
	test_hold(g_addr_unix);
	test_hold_bulk(g_addr_unix);
	test_registry();
	test_method_fault(g_addr_unix);
	test_method_traffic(g_addr_unix);
	test_header_timeout();
	test_idle_timeout();
	test_idle_waits_for_work();
	test_per_addr();

	{
		struct mc_rpcc *r = mc_rpcc_connect("unix:/tmp/mc-test-conn-nobody.sock", 500, &e);

		TAP_OK(r == NULL && e.code != 0, "connecting to nobody fails: %s", e.msg);
	}

	mc_conn_stats_get(&st);
	TAP_OK(st.accepted > 0 && st.closed > 0 && st.bytes_in > BIG && st.bytes_out > BIG,
	       "process-wide stats count connections and bytes (%llu accepted, %llu closed, "
	       "%llu in, %llu out)",
	       (unsigned long long)st.accepted, (unsigned long long)st.closed,
	       (unsigned long long)st.bytes_in, (unsigned long long)st.bytes_out);

	event_base_loopbreak(g_base);
	pthread_join(th, NULL);
	TAP_OK(access(g_unix_path, F_OK) != 0, "freeing the server removes its unix socket");
	check_method_counts();
	mc_registry_free(g_reg_a);
	mc_registry_free(g_reg_b);
	mc_registry_free(g_reg_limits);
	mc_metrics_free(g_metrics);
	free(g_big);
	close(g_file_fd);
	return tap_done();
}
