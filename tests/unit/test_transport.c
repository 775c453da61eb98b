/*
 * The transport seam (mc/transport.h): a fake transport wraps tcp and
 * injects short reads, short writes, EAGAIN, EINTR and errors at each of
 * its entry points (connect, accept, read, write, close); the daemons'
 * connections (mc/conn.h) and the client's (mc/rpcc.h) on it must behave
 * as they do on tcp: bulks arrive whole and in order, errors surface as
 * errors, and every end that was opened is closed exactly once. Then the
 * choice between two ends' advertised lists.
 *
 * One server thread serves two listeners: one on the fake transport, one
 * on tcp; the client side runs in the main thread on its own fake.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <xxhash.h>
#include "mc/conn.h"
#include "mc/log.h"
#include "mc/rpcc.h"
#include "mc/transport.h"
#include "mc/wire.h"
#include "tap.h"

#define BIG (1u << 20)
#define TIMEOUT_MS 5000

/*
 * One side's fake: tcp underneath, with what to inject. Every knob is
 * read by the side's own thread and set by the main thread between
 * calls, so relaxed atomics suffice.
 */
struct fake {
	struct mc_transport t;	  /* first: tc->t leads back to the fake */
	atomic_int max_io;	  /* > 0: no read or write moves more (short reads and writes) */
	atomic_int again_every;	  /* > 0: every Nth read and write fails with EAGAIN */
	atomic_int intr_every;	  /* > 1: every Nth read and write fails with EINTR */
	atomic_int fail_connect;  /* connects to fail */
	atomic_int fail_accept;	  /* accepts to fail with ECONNABORTED (the backlog keeps them) */
	atomic_int fail_read_in;  /* > 0: the Nth read from now fails with ECONNRESET */
	atomic_int fail_write_in; /* > 0: the Nth write from now fails with EPIPE */
	atomic_int calls;	  /* reads and writes, for again_every and intr_every */
	atomic_int opened, closed;
	atomic_int reads, writes, short_ios, agains, intrs;
};

static struct fake *
fake_of(const struct mc_tconn *tc)
{
	return (struct fake *)(uintptr_t)tc->t;
}

/*
 * The main thread waits on what the server thread does (a close, a
 * bulk's end) through this condition, never by sleeping.
 */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

static void
kick(void)
{
	pthread_mutex_lock(&g_mu);
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

/* Wait up to TIMEOUT_MS for pred(arg); whether it holds. */
static bool
wait_for(bool (*pred)(const void *arg), const void *arg)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TIMEOUT_MS / 1000;
	pthread_mutex_lock(&g_mu);
	while (!(ok = pred(arg)))
		if (pthread_cond_timedwait(&g_cv, &g_mu, &until) != 0) {
			ok = pred(arg);
			break;
		}
	pthread_mutex_unlock(&g_mu);
	return ok;
}

static int
fake_connect(struct mc_tconn *tc, const struct mc_addr *a, int timeout_ms, unsigned flags,
	     struct mc_err *err)
{
	struct fake *f = fake_of(tc);

	if (atomic_load(&f->fail_connect) > 0) {
		atomic_fetch_sub(&f->fail_connect, 1);
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "cannot connect to %s: injected",
				  a->text);
	}
	if (mc_transport_tcp.connect(tc, a, timeout_ms, flags, err) < 0)
		return -1;
	tc->t = &f->t;
	atomic_fetch_add(&f->opened, 1);
	return 0;
}

static int
fake_accept(struct mc_tconn *tc, int lfd, struct sockaddr_storage *ss, socklen_t *sslen)
{
	struct fake *f = fake_of(tc);

	if (atomic_load(&f->fail_accept) > 0) {
		atomic_fetch_sub(&f->fail_accept, 1);
		errno = ECONNABORTED;
		return -1;
	}
	if (mc_transport_tcp.accept(tc, lfd, ss, sslen) < 0)
		return -1;
	tc->t = &f->t;
	atomic_fetch_add(&f->opened, 1);
	return 0;
}

/*
 * What comes before a read or a write: an injected failure (-1 with
 * errno), or 0 to go on with *max capped.
 */
static int
inject(struct fake *f, atomic_int *fail_in, int fail_errno, size_t *max)
{
	int n = atomic_fetch_add(&f->calls, 1) + 1;
	int every, cap;

	if (atomic_load(fail_in) > 0 && atomic_fetch_sub(fail_in, 1) == 1) {
		errno = fail_errno;
		return -1;
	}
	if ((every = atomic_load(&f->intr_every)) > 1 && (n + 1) % every == 0) {
		atomic_fetch_add(&f->intrs, 1);
		errno = EINTR;
		return -1;
	}
	if ((every = atomic_load(&f->again_every)) > 0 && n % every == 0) {
		atomic_fetch_add(&f->agains, 1);
		errno = EAGAIN;
		return -1;
	}
	/* caps that vary from call to call, 1..max_io, so every boundary is hit */
	if ((cap = atomic_load(&f->max_io)) > 0) {
		size_t c = 1 + (size_t)n * 7919u % (size_t)cap;

		if (*max > c) {
			*max = c;
			atomic_fetch_add(&f->short_ios, 1);
		}
	}
	return 0;
}

static ssize_t
fake_read(struct mc_tconn *tc, struct mc_bulk_sink *sink, uint64_t at, size_t max, unsigned flags)
{
	struct fake *f = fake_of(tc);
	ssize_t n;

	atomic_fetch_add(&f->reads, 1);
	if (inject(f, &f->fail_read_in, ECONNRESET, &max) < 0)
		return -1;
	/* a short read cannot wait for all of a window it was not given */
	n = mc_transport_tcp.read(tc, sink, at, max, flags);
	return n;
}

static ssize_t
fake_write(struct mc_tconn *tc, const struct mc_bulk_src *src, int n, uint64_t at, size_t max)
{
	struct fake *f = fake_of(tc);

	atomic_fetch_add(&f->writes, 1);
	if (inject(f, &f->fail_write_in, EPIPE, &max) < 0)
		return -1;
	return mc_transport_tcp.write(tc, src, n, at, max);
}

static void
fake_close(struct mc_tconn *tc)
{
	struct fake *f = fake_of(tc);

	if (tc->fd >= 0)
		atomic_fetch_add(&f->closed, 1);
	mc_transport_tcp.close(tc);
	kick();
}

#define FAKE_INIT(nm)                                     \
	{                                                 \
		.t = { .name = nm,                        \
		       .caps = MC_TRANSPORT_CAP_SENDFILE, \
		       .connect = fake_connect,           \
		       .accept = fake_accept,             \
		       .read = fake_read,                 \
		       .write = fake_write,               \
		       .close = fake_close },             \
	}

static struct fake g_srv = FAKE_INIT("fake-server"), g_cli = FAKE_INIT("fake-client");

static void
fake_calm(struct fake *f)
{
	atomic_store(&f->max_io, 0);
	atomic_store(&f->again_every, 0);
	atomic_store(&f->intr_every, 0);
	atomic_store(&f->fail_connect, 0);
	atomic_store(&f->fail_accept, 0);
	atomic_store(&f->fail_read_in, 0);
	atomic_store(&f->fail_write_in, 0);
}

/* ---- the server ---- */

static unsigned char *g_big;
static int g_file_fd = -1;
static struct event_base *g_base;
static struct mc_registry *g_reg;
static struct mc_server *g_fake_srv, *g_tcp_srv;
static char g_fake_addr[MC_ADDR_MAX], g_tcp_addr[MC_ADDR_MAX];
static char g_path1[64], g_path2[64];
static atomic_int g_released, g_bulk_failed;

static int g_ready;

static void
put_done(struct mc_req *req, bool ok, void *arg)
{
	if (ok) {
		msgpack_packer *pk = mc_reply_ok_begin(req);

		msgpack_pack_map(pk, 2);
		mc_pack_kv_u64(pk, "got", req->bulk_len);
		mc_pack_kv_u64(pk, "hash", XXH3_64bits(arg, req->bulk_len));
		mc_reply_end(req);
	} else {
		atomic_fetch_add(&g_bulk_failed, 1);
		mc_reply_ok_empty(req); /* dropped: the connection is gone */
	}
	free(arg);
	kick();
}

/* put {len} + bulk: {got, hash} of what landed */
static void
h_put(struct mc_req *req)
{
	void *buf = malloc(req->bulk_len ? req->bulk_len : 1);
	struct mc_req *d = mc_req_defer(req);

	if (buf == NULL || d == NULL || mc_req_recv_bulk(d, buf, put_done, buf) < 0) {
		free(buf);
		if (d != NULL)
			mc_reply_err(d, MC_ERR_INTERNAL, "cannot receive");
		else
			mc_reply_err(req, MC_ERR_INTERNAL, "cannot defer");
	}
}

static void
on_release(void *arg)
{
	(void)arg;
	atomic_fetch_add(&g_released, 1);
	kick();
}

/* get {size, file?} -> {len} + size bytes of g_big, from memory or from the file */
static void
h_get(struct mc_req *req)
{
	uint64_t size = 0;
	bool file = false;
	struct mc_bulk_src src;
	msgpack_packer *pk;

	mc_map_u64(req->params, "size", &size, NULL);
	mc_map_bool(req->params, "file", &file, NULL);
	if (size > BIG) {
		mc_reply_err(req, MC_ERR_TOO_LARGE, "size %llu", (unsigned long long)size);
		return;
	}
	pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "len", size);
	src = file ? mc_bulk_src_fd(g_file_fd, 0, size) : mc_bulk_src_mem(g_big, size);
	mc_reply_end_src(req, &src, on_release, NULL);
}

static void
h_echo(struct mc_req *req)
{
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_object(pk, *req->params);
	mc_reply_end(req);
}

static const struct mc_method methods[] = {
	{ "put", h_put, MC_METHOD_BULK },
	{ "get", h_get, MC_METHOD_BULK },
	{ "echo", h_echo, 0 },
	{ NULL, NULL, 0 },
};

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
	struct mc_conn_ops ops_fake = { .transport = &g_srv.t }, ops_tcp = { 0 };
	struct mc_addr a, bound;
	struct mc_err err = { 0 };

	(void)arg;
	if ((g_base = event_base_new()) == NULL || (g_reg = mc_registry_new(NULL, &err)) == NULL ||
	    mc_registry_add(g_reg, methods, &err) != 0)
		goto fail;
	ops_fake.methods = ops_tcp.methods = g_reg;
	if (mc_addr_parse(g_path1, &a, &err) != 0 ||
	    (g_fake_srv = mc_server_new(g_base, &a, &ops_fake, NULL, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_fake_addr, sizeof(g_fake_addr), "%s", bound.text);
	if (mc_addr_parse(g_path2, &a, &err) != 0 ||
	    (g_tcp_srv = mc_server_new(g_base, &a, &ops_tcp, NULL, &bound, &err)) == NULL)
		goto fail;
	snprintf(g_tcp_addr, sizeof(g_tcp_addr), "%s", bound.text);
	set_ready(1);
	event_base_dispatch(g_base);
	mc_server_free(g_fake_srv);
	mc_server_free(g_tcp_srv);
	event_base_free(g_base);
	return NULL;
fail:
	fprintf(stderr, "server: %s\n", err.msg);
	set_ready(-1);
	return NULL;
}

/* ---- the client ---- */

/* put n bytes of g_big on r; 0 when the answer says all of them landed intact */
static int
put(struct mc_rpcc *r, size_t n, struct mc_err *err)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "put");
	struct mc_msg m;
	uint64_t got = 0, hash = 0;
	int rc;

	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "len", n);
	if (mc_rpcc_send(r, g_big, n, err) < 0 || mc_rpcc_flush(r, err) < 0 ||
	    mc_rpcc_recv(r, &m, err) < 0)
		return -1;
	if (mc_msg_error(&m, err) < 0) {
		mc_msg_release(&m);
		return -1;
	}
	rc = mc_map_u64(m.body, "got", &got, NULL) == 1 &&
			     mc_map_u64(m.body, "hash", &hash, NULL) == 1 && got == n &&
			     hash == XXH3_64bits(g_big, n)
		     ? 0
		     : -1;
	mc_msg_release(&m);
	if (rc < 0)
		mc_err_set(err, MC_ERR_PROTO, "the bytes did not land whole");
	return rc;
}

/* get n bytes into sink (memory when NULL); 0 when they are g_big's */
static int
get(struct mc_rpcc *r, size_t n, bool file, struct mc_bulk_sink *sink, struct mc_err *err)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "get");
	unsigned char *buf = malloc(n ? n : 1);
	struct mc_bulk_sink mem;
	struct mc_msg m;
	int rc = -1;

	msgpack_pack_map(pk, 2);
	mc_pack_kv_u64(pk, "size", n);
	mc_pack_kv_bool(pk, "file", file);
	if (buf == NULL)
		return mc_err_set(err, MC_ERR_SYSTEM, "out of memory");
	if (sink == NULL) {
		mc_bulk_sink_mem(&mem, buf, n);
		sink = &mem;
	}
	if (mc_rpcc_call(r, &m, err) < 0)
		goto out;
	if (!m.has_bulk || m.bulk_len != n) {
		mc_msg_release(&m);
		mc_err_set(err, MC_ERR_PROTO, "no bulk of %zu bytes", n);
		goto out;
	}
	mc_msg_release(&m);
	if (mc_rpcc_read_bulk_to(r, sink, err) < 0)
		goto out;
	rc = memcmp(sink->data, g_big, n) == 0 ? 0 : mc_err_set(err, MC_ERR_PROTO, "corrupt");
out:
	free(buf);
	return rc;
}

/* Every end the fake opened was closed, once. */
static bool
settled(const struct fake *f)
{
	return atomic_load(&f->opened) == atomic_load(&f->closed);
}

static bool
settled_pred(const void *arg)
{
	return settled(arg);
}

/* The server thread closes its end after the client closed its own. */
static bool
wait_settled(const struct fake *f)
{
	return wait_for(settled_pred, f);
}

/* A counter of the server's to reach n, once the server settled. */
struct want {
	atomic_int *v;
	int n;
};

static bool
count_pred(const void *arg)
{
	const struct want *w = arg;

	return settled(&g_srv) && atomic_load(w->v) == w->n;
}

static void
test_whole_through_short_io(void)
{
	struct mc_err err = { 0 };
	struct mc_rpcc *r;
	int shorts;

	fake_calm(&g_srv);
	fake_calm(&g_cli);
	atomic_store(&g_srv.max_io, 4096);
	atomic_store(&g_cli.max_io, 4096);
	shorts = atomic_load(&g_srv.short_ios) + atomic_load(&g_cli.short_ios);
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	TAP_OK(r != NULL, "connect: on the fake transport (%s)", r ? "ok" : err.msg);
	if (r == NULL)
		return;
	TAP_OK(put(r, BIG, &err) == 0, "short reads and writes: a 1 MiB put lands whole (%s)",
	       err.msg);
	TAP_OK(get(r, BIG, false, NULL, &err) == 0,
	       "short reads and writes: a 1 MiB get from memory arrives whole (%s)", err.msg);
	TAP_OK(get(r, BIG - 3, true, NULL, &err) == 0,
	       "short reads and writes: a get from a file's range arrives whole (%s)", err.msg);
	TAP_OK(get(r, 0, false, NULL, &err) == 0, "short reads and writes: an empty bulk too");
	TAP_OK(atomic_load(&g_srv.short_ios) + atomic_load(&g_cli.short_ios) > shorts + 100,
	       "short reads and writes: were injected on both ends");
	mc_rpcc_close(r);
	TAP_OK(wait_settled(&g_srv) && settled(&g_cli),
	       "short reads and writes: every end opened is closed once (%d/%d, %d/%d)",
	       atomic_load(&g_srv.opened), atomic_load(&g_srv.closed), atomic_load(&g_cli.opened),
	       atomic_load(&g_cli.closed));
}

static void
test_again_and_intr(void)
{
	struct mc_err err = { 0 };
	struct mc_rpcc *r;
	int agains = atomic_load(&g_srv.agains), intrs = atomic_load(&g_cli.intrs);

	fake_calm(&g_srv);
	fake_calm(&g_cli);
	/* the server is non-blocking: EAGAIN means "later"; the client retries EINTR */
	atomic_store(&g_srv.again_every, 3);
	atomic_store(&g_srv.intr_every, 5);
	atomic_store(&g_srv.max_io, 65536);
	atomic_store(&g_cli.intr_every, 3);
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	TAP_OK(r != NULL && put(r, BIG, &err) == 0 && get(r, BIG, false, NULL, &err) == 0 &&
		       get(r, BIG, true, NULL, &err) == 0,
	       "EAGAIN and EINTR: puts and gets arrive whole (%s)", r ? err.msg : "no connection");
	TAP_OK(atomic_load(&g_srv.agains) > agains && atomic_load(&g_cli.intrs) > intrs,
	       "EAGAIN and EINTR: were injected (%d EAGAIN on the server, %d EINTR on the client)",
	       atomic_load(&g_srv.agains) - agains, atomic_load(&g_cli.intrs) - intrs);
	mc_rpcc_close(r);
	fake_calm(&g_srv);
	fake_calm(&g_cli);
}

static void
test_client_again_is_a_timeout(void)
{
	struct mc_err err = { 0 };
	struct mc_rpcc *r;

	fake_calm(&g_cli);
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	if (r == NULL) {
		TAP_OK(0, "connect: %s", err.msg);
		return;
	}
	/* a blocking end's EAGAIN is its timeout */
	atomic_store(&g_cli.again_every, 1);
	TAP_OK(mc_rpcc_call0(r, "echo", &(struct mc_msg){ 0 }, &err) < 0 &&
		       err.code == MC_ERR_TIMEOUT,
	       "EAGAIN on a blocking client: the call times out (%s)", err.msg);
	fake_calm(&g_cli);
	TAP_OK(mc_rpcc_call0(r, "echo", &(struct mc_msg){ 0 }, &err) < 0 &&
		       err.code == MC_ERR_UNAVAILABLE,
	       "EAGAIN on a blocking client: the connection is dead after it (%s)", err.msg);
	mc_rpcc_close(r);
	TAP_OK(wait_settled(&g_srv) && settled(&g_cli),
	       "EAGAIN on a blocking client: nothing leaks");
}

static void
test_errors(void)
{
	struct mc_err err = { 0 };
	struct mc_rpcc *r;
	int failed = atomic_load(&g_bulk_failed);

	fake_calm(&g_srv);
	fake_calm(&g_cli);

	/* connect */
	atomic_store(&g_cli.fail_connect, 1);
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	TAP_OK(r == NULL && err.code == MC_ERR_UNAVAILABLE && strstr(err.msg, g_fake_addr),
	       "connect error: surfaces naming the address (%s)", err.msg);
	TAP_OK(settled(&g_cli), "connect error: nothing is left open");

	/* accept: the listener goes on, the connection waits in the backlog */
	atomic_store(&g_srv.fail_accept, 2);
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	TAP_OK(r != NULL && put(r, 4096, &err) == 0 && atomic_load(&g_srv.fail_accept) == 0,
	       "accept errors: the connection is served after them (%s)",
	       r ? err.msg : "no connection");
	mc_rpcc_close(r);

	/* client read */
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	atomic_store(&g_cli.max_io, 1000);
	atomic_store(&g_cli.fail_read_in, 5);
	TAP_OK(r != NULL && get(r, 65536, false, NULL, &err) < 0 && err.code == MC_ERR_UNAVAILABLE,
	       "read error on the client: the get fails (%s)", err.msg);
	TAP_OK(r != NULL && mc_rpcc_call0(r, "echo", &(struct mc_msg){ 0 }, &err) < 0 &&
		       err.code == MC_ERR_UNAVAILABLE,
	       "read error on the client: later calls fail (%s)", err.msg);
	mc_rpcc_close(r);
	fake_calm(&g_cli);

	/* client write, in the middle of a bulk */
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	atomic_store(&g_cli.max_io, 1000);
	atomic_store(&g_cli.fail_write_in, 10);
	TAP_OK(r != NULL && put(r, 65536, &err) < 0 && err.code == MC_ERR_UNAVAILABLE,
	       "write error on the client: the put fails (%s)", err.msg);
	mc_rpcc_close(r);
	fake_calm(&g_cli);
	TAP_OK(wait_for(count_pred, &(struct want){ &g_bulk_failed, failed + 1 }),
	       "write error on the client: the server's half-read bulk is told it failed");

	/* server read, in the middle of a bulk */
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	atomic_store(&g_srv.max_io, 1000);
	atomic_store(&g_srv.fail_read_in, 10);
	TAP_OK(r != NULL && put(r, 65536, &err) < 0 && err.code == MC_ERR_UNAVAILABLE,
	       "read error on the server: the client's put fails (%s)", err.msg);
	mc_rpcc_close(r);
	TAP_OK(wait_for(count_pred, &(struct want){ &g_bulk_failed, failed + 2 }),
	       "read error on the server: its connection closes and the bulk's owner is told");
	fake_calm(&g_srv);

	/* server write, in the middle of a bulk reply */
	int released = atomic_load(&g_released);

	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	atomic_store(&g_srv.max_io, 1000);
	atomic_store(&g_srv.fail_write_in, 10);
	TAP_OK(r != NULL && get(r, 65536, true, NULL, &err) < 0 && err.code == MC_ERR_UNAVAILABLE,
	       "write error on the server: the client's get fails (%s)", err.msg);
	mc_rpcc_close(r);
	TAP_OK(wait_for(count_pred, &(struct want){ &g_released, released + 1 }),
	       "write error on the server: the reply's bulk is released once");
	fake_calm(&g_srv);
	TAP_OK(settled(&g_cli), "errors: every end the client opened is closed once (%d/%d)",
	       atomic_load(&g_cli.opened), atomic_load(&g_cli.closed));
}

/* A registered region as the sink of a get, and as the source of a put, on the fake. */
static void
test_region(void)
{
	size_t len = 200000, off = 12345;
	unsigned char *base = calloc(1, len + 2 * off);
	struct mc_bulk_region reg = { base, len + 2 * off, 0 };
	struct mc_bulk_sink sink;
	struct mc_bulk_src src;
	struct mc_err err = { 0 };
	struct mc_rpcc *r;
	msgpack_packer *pk;
	struct mc_msg m;
	uint64_t hash = 0;

	fake_calm(&g_srv);
	fake_calm(&g_cli);
	atomic_store(&g_cli.max_io, 3000);
	r = mc_rpcc_connect_on(&g_cli.t, g_fake_addr, TIMEOUT_MS, &err);
	TAP_OK(base != NULL && r != NULL && mc_bulk_sink_region(&sink, &reg, off, len) == 0 &&
		       get(r, len, false, &sink, &err) == 0 && base[off - 1] == 0 &&
		       base[off + len] == 0,
	       "region sink: a get lands in the region's range and nowhere else (%s)", err.msg);
	if (r != NULL) {
		pk = mc_rpcc_begin(r, "put");
		msgpack_pack_map(pk, 1);
		mc_pack_kv_u64(pk, "len", len);
	}
	if (r != NULL && mc_bulk_src_region(&src, &reg, off, len) == 0 &&
	    mc_rpcc_send_src(r, &src, &err) > 0 && mc_rpcc_flush(r, &err) == 0 &&
	    mc_rpcc_recv(r, &m, &err) == 0) {
		mc_map_u64(m.body, "hash", &hash, NULL);
		mc_msg_release(&m);
	}
	TAP_OK(hash == XXH3_64bits(g_big, len),
	       "region source: a put sends the region's range as it is");
	mc_rpcc_close(r);
	free(base);
	fake_calm(&g_cli);
}

/* A daemon's connection made with mc_conn_connect on the fake, to the tcp listener. */
static struct event_base *g_cbase;
static int g_call_done;
static bool g_call_ok;

static void
on_echo(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *err, void *arg)
{
	uint64_t v = 0;

	(void)c;
	(void)err;
	(void)arg;
	g_call_ok = resp != NULL && mc_map_u64(resp->body, "v", &v, NULL) == 1 && v == 77;
	g_call_done++;
	event_base_loopbreak(g_cbase);
}

static void
test_conn_connect(void)
{
	struct mc_conn_ops ops = { .transport = &g_cli.t };
	struct mc_addr a;
	struct mc_err err = { 0 };
	struct mc_conn *c = NULL;
	msgpack_packer *pk;

	fake_calm(&g_cli);
	atomic_store(&g_cli.max_io, 2);
	atomic_store(&g_cli.again_every, 2);
	g_cbase = event_base_new();
	if (g_cbase != NULL && mc_addr_parse(g_tcp_addr, &a, &err) == 0)
		c = mc_conn_connect(g_cbase, &a, TIMEOUT_MS, &ops, NULL, &err);
	TAP_OK(c != NULL, "mc_conn_connect: on the fake transport");
	if (c != NULL) {
		pk = mc_conn_begin(c, "echo");
		msgpack_pack_map(pk, 1);
		mc_pack_kv_u64(pk, "v", 77);
		if (mc_conn_call(c, TIMEOUT_MS, on_echo, NULL) == 0)
			event_base_dispatch(g_cbase);
		TAP_OK(g_call_done == 1 && g_call_ok,
		       "mc_conn_connect: a call is answered through short writes and EAGAIN");
		mc_conn_close(c, false);
	}
	atomic_store(&g_cli.fail_connect, 1);
	TAP_OK(mc_conn_connect(g_cbase, &a, TIMEOUT_MS, &ops, NULL, &err) == NULL &&
		       err.code == MC_ERR_UNAVAILABLE,
	       "mc_conn_connect: a connect error surfaces (%s)", err.msg);
	TAP_OK(settled(&g_cli), "mc_conn_connect: every end opened is closed once");
	if (g_cbase != NULL)
		event_base_free(g_cbase);
	fake_calm(&g_cli);
}

/* ---- choosing ---- */

static struct mc_transport_list
list_of(int n, const char *const *names)
{
	struct mc_transport_list l;

	memset(&l, 0, sizeof(l));
	for (int i = 0; i < n; i++)
		snprintf(l.name[l.n++], sizeof(l.name[0]), "%s", names[i]);
	return l;
}

static void
test_choose(void)
{
	const char *rt[] = { "rdma", "tcp" }, *srt[] = { "shm", "rdma", "tcp" },
		   *st[] = { "shm", "tcp" }, *r[] = { "rdma" };
	struct mc_transport_list c = list_of(2, rt), p = list_of(3, srt), q = list_of(2, st),
				 only = list_of(1, r), dflt;

	mc_transport_list_default(&dflt);
	TAP_OK(dflt.n == 1 && strcmp(dflt.name[0], "tcp") == 0, "choose: the default list is tcp");
	TAP_OK(strcmp(mc_transport_choose(&c, &p), "rdma") == 0,
	       "choose: the client's first that the peer lists");
	TAP_OK(strcmp(mc_transport_choose(&p, &c), "rdma") == 0 &&
		       strcmp(mc_transport_choose(&p, &q), "shm") == 0,
	       "choose: the client's order decides between shared ones");
	TAP_OK(strcmp(mc_transport_choose(&only, &q), "tcp") == 0,
	       "choose: nothing shared is tcp, even when neither lists it");
	TAP_OK(strcmp(mc_transport_choose(NULL, &p), "tcp") == 0 &&
		       strcmp(mc_transport_choose(&c, NULL), "tcp") == 0 &&
		       strcmp(mc_transport_choose(&(struct mc_transport_list){ 0 }, &p), "tcp") ==
			       0,
	       "choose: a side that advertised nothing is tcp");
	TAP_OK(mc_transport_find("tcp", 3) == &mc_transport_tcp &&
		       mc_transport_find("tc", 2) == NULL && mc_transport_find("rdma", 4) == NULL,
	       "find: tcp is the one this library has");
}

/* params {transports: ...} packed from a few objects, then read back */
static int
read_list(void (*pack)(msgpack_packer *pk), struct mc_transport_list *l, struct mc_err *err)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
	int rc = -2;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack(&pk);
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS)
		rc = mc_transport_list_read(&u.data, l, err);
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

static void
pack_none(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "host", "h");
}

static void
pack_ours(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	mc_transport_pack_ours(pk);
}

static void
pack_many(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "transports");
	msgpack_pack_array(pk, MC_TRANSPORTS_MAX + 3);
	mc_pack_cstr(pk, "a-name-far-too-long-for-any-transport");
	mc_pack_cstr(pk, "");
	for (int i = 0; i < MC_TRANSPORTS_MAX + 1; i++)
		mc_pack_cstr(pk, i == 0 ? "rdma" : "tcp");
}

static void
pack_not_array(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "transports", "tcp");
}

static void
pack_not_name(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "transports");
	msgpack_pack_array(pk, 2);
	mc_pack_cstr(pk, "tcp");
	msgpack_pack_uint64(pk, 7);
}

static void
test_lists(void)
{
	struct mc_transport_list l;
	struct mc_err err = { 0 };

	TAP_OK(read_list(pack_none, &l, &err) == 0 && l.n == 1 && strcmp(l.name[0], "tcp") == 0,
	       "list: absent is tcp (an older peer or client)");
	TAP_OK(read_list(pack_ours, &l, &err) == 0 && l.n == 1 && strcmp(l.name[0], "tcp") == 0,
	       "list: ours is what this library has, tcp");
	TAP_OK(read_list(pack_many, &l, &err) == 0 && l.n == MC_TRANSPORTS_MAX &&
		       strcmp(l.name[0], "rdma") == 0 && strcmp(l.name[1], "tcp") == 0,
	       "list: names no transport can have are left out, and past the cap");
	TAP_OK(read_list(pack_not_array, &l, &err) == -1 && err.code == MC_ERR_INVALID,
	       "list: not an array is refused (%s)", err.msg);
	TAP_OK(read_list(pack_not_name, &l, &err) == -1 && err.code == MC_ERR_INVALID &&
		       strstr(err.msg, "transports[1]") != NULL,
	       "list: an entry that is not a name is refused (%s)", err.msg);
}

int
main(void)
{
	pthread_t th;
	int ready;

	mc_log_init("test_transport", 0);
	mc_log_set_level(getenv("MC_TEST_DEBUG") ? MC_LOG_DEBUG : MC_LOG_ERROR);
	evthread_use_pthreads();
	test_choose();
	test_lists();

	snprintf(g_path1, sizeof(g_path1), "unix:/tmp/mc-test-transport-%d.sock", (int)getpid());
	snprintf(g_path2, sizeof(g_path2), "unix:/tmp/mc-test-transport-%d-2.sock", (int)getpid());
	g_big = malloc(BIG);
	if (g_big == NULL)
		return 1;
	for (size_t i = 0; i < BIG; i++)
		g_big[i] = (unsigned char)(i * 40503u >> 7);
	{
		char path[] = "/tmp/mc-test-transport-XXXXXX";

		g_file_fd = mkstemp(path);
		if (g_file_fd < 0 || pwrite(g_file_fd, g_big, BIG, 0) != BIG)
			return 1;
		unlink(path);
	}
	pthread_create(&th, NULL, server_main, NULL);
	pthread_mutex_lock(&g_mu);
	while (g_ready == 0)
		pthread_cond_wait(&g_cv, &g_mu);
	ready = g_ready;
	pthread_mutex_unlock(&g_mu);
	TAP_OK(ready == 1, "servers listen on %s (fake) and %s (tcp)", g_fake_addr, g_tcp_addr);
	if (ready != 1) {
		pthread_join(th, NULL);
		return tap_done();
	}
	test_whole_through_short_io();
	test_again_and_intr();
	test_client_again_is_a_timeout();
	test_errors();
	test_region();
	test_conn_connect();

	event_base_loopbreak(g_base);
	pthread_join(th, NULL);
	TAP_OK(settled(&g_srv), "the server closed every end it accepted (%d/%d)",
	       atomic_load(&g_srv.opened), atomic_load(&g_srv.closed));
	mc_registry_free(g_reg);
	close(g_file_fd);
	free(g_big);
	return tap_done();
}
