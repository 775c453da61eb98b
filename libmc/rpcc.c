/*
 * Synchronous msgpack-rpc client connections (mc/rpcc.h).
 *
 * Requests are packed into one output buffer; a bulk is not copied but
 * remembered as a reference at its position in the stream, and the whole
 * queue leaves as a list of sources (mc/bulk.h) that interleaves the
 * packed bytes with the callers' bulks, written by the connection's
 * transport (mc/transport.h: tcp gathers memory into one system call
 * and sends a descriptor's range from the page cache). Responses are framed from
 * an input buffer; a bulk that follows one is first taken from what was
 * read ahead, then read whole (MC_TREAD_ALL) straight into the caller's
 * sink: in place for memory, through the sink's window otherwise.
 *
 * The connection is blocking, each read and write timed out after the
 * connect timeout, so a silent daemon turns into MC_ERR_TIMEOUT instead
 * of a hang. A watched connection (mc_rpcc_watch_stall) connects with a
 * short timeout, a tick, and waits tick after tick while bytes move: it
 * fails only once none moved for its stall timeout. Any transport
 * failure leaves the stream at an unknown position, so the connection
 * is marked dead and every later call fails with MC_ERR_UNAVAILABLE.
 * One failure is read past first: a daemon that refuses a request with
 * a long body answers, then closes instead of reading the rest
 * (MC_CONN_MAX_DRAIN), so a write that finds the far end gone still
 * reads the answers sent before it went.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/rpcc.h"
#include "mc/transport.h"

#define IN_START_CAP (64u << 10)
#define IN_SLACK (64u << 10)
#define OUT_KEEP (1u << 20) /* keep an output buffer this big across flushes */

struct bulk_ref {
	size_t pos; /* offset in out where the bulk goes */
	struct mc_bulk_src src;
};

struct mc_rpcc {
	struct mc_tconn tc;
	bool dead;
	/* the far end stopped reading (write_errno): no more requests, answers may be waiting */
	bool write_shut;
	int write_errno;
	char addr[MC_ADDR_MAX];
	int timeout_ms;
	uint64_t stall_ms; /* 0: a wait of timeout_ms fails; else ticks until this long quiet */
	uint32_t next_id;
	uint32_t next_resp; /* id the next response must carry */
	uint64_t inflight;  /* requests written or queued, not yet answered */

	msgpack_sbuffer out;
	msgpack_packer pk;
	/* the request being built: its method and packed params map */
	const char *method;
	msgpack_sbuffer req;
	msgpack_packer req_pk;
	struct bulk_ref *bulks;
	size_t nbulks, bulks_cap;

	char *in;
	size_t in_cap, in_max, in_start, in_end;
	size_t max_msg;
	uint64_t bulk_pending; /* bulk bytes the caller has yet to consume */
	/* told of notifications read among the responses; NULL: they are malformed */
	void (*on_notify)(void *arg, const struct mc_msg *n);
	void *on_notify_arg;
	/* told of the bytes moved (mc_rpcc_on_bytes); NULL: nobody asked */
	void (*on_bytes)(void *arg, uint64_t n);
	void *on_bytes_arg;
};

/* The most a write moves at once while on_bytes listens. */
#define METERED_WRITE ((size_t)1 << 22)

static void
moved(const struct mc_rpcc *r, uint64_t n)
{
	if (r->on_bytes != NULL)
		r->on_bytes(r->on_bytes_arg, n);
}

static void
mark_dead(struct mc_rpcc *r)
{
	if (r->tc.fd >= 0)
		r->tc.t->close(&r->tc);
	r->tc.fd = -1;
	r->dead = true;
}

/* A transport error: set err from errno, kill the connection, return -1. */
static int
io_fail(struct mc_rpcc *r, struct mc_err *err, const char *what, int e)
{
	mark_dead(r);
	if ((e == EAGAIN || e == EWOULDBLOCK) && r->stall_ms > 0)
		return mc_err_set(err, MC_ERR_TIMEOUT, "%s %s: stalled, no byte for %llu ms", what,
				  r->addr, (unsigned long long)r->stall_ms);
	if (e == EAGAIN || e == EWOULDBLOCK)
		return mc_err_set(err, MC_ERR_TIMEOUT, "%s %s: timed out after %d ms", what,
				  r->addr, r->timeout_ms);
	if (e == 0)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "%s %s: connection closed", what,
				  r->addr);
	return mc_err_set(err, MC_ERR_UNAVAILABLE, "%s %s: %s", what, r->addr, mc_strerror(e));
}

static int sink_fail(struct mc_rpcc *r, struct mc_err *err);

/*
 * Whether a wait that timed out (errno EAGAIN) is to be waited again:
 * on a watched connection, until nothing moved for its stall timeout
 * since quiet_since, when the last bytes moved or the wait began. A
 * read that waits for all its window (MC_TREAD_ALL) and times out with
 * part of it returns that part, so bytes that land during a tick make
 * it at most one tick late.
 */
static bool
keep_waiting(const struct mc_rpcc *r, int e, uint64_t quiet_since)
{
	return (e == EAGAIN || e == EWOULDBLOCK) && r->stall_ms > 0 &&
	       mc_mono_ms() - quiet_since < r->stall_ms;
}

/*
 * One read of at most max bytes into sink at position at, retried on
 * EINTR: the bytes landed (at least one), or -1 through io_fail when the
 * connection fails, times out or closes, or through sink_fail when the
 * sink refused them.
 */
static ssize_t
read_some(struct mc_rpcc *r, struct mc_bulk_sink *sink, uint64_t at, size_t max, unsigned flags,
	  struct mc_err *err)
{
	uint64_t quiet_since = r->stall_ms > 0 ? mc_mono_ms() : 0;
	ssize_t n;

	while ((n = r->tc.t->read(&r->tc, sink, at, max, flags)) == -1 &&
	       (errno == EINTR || keep_waiting(r, errno, quiet_since)))
		;
	if (n == MC_TREAD_SINK_FAILED)
		return sink_fail(r, err);
	if (n <= 0)
		return io_fail(r, err, "cannot read from", n < 0 ? errno : 0);
	return n;
}

/* read_some into plain memory. */
static ssize_t
read_buf(struct mc_rpcc *r, void *buf, size_t want, struct mc_err *err)
{
	struct mc_bulk_sink s;

	mc_bulk_sink_mem(&s, buf, want);
	return read_some(r, &s, 0, want, 0, err);
}

static int
check_alive(struct mc_rpcc *r, struct mc_err *err)
{
	if (r->dead)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "connection to %s is closed", r->addr);
	return 0;
}

/* A connect error must name the address (people need to know which one). */
static void
connect_err(struct mc_err *err, const char *addr)
{
	char buf[MC_ERR_MSG_MAX];

	if (!err || strstr(err->msg, addr))
		return;
	snprintf(buf, sizeof(buf), "%s", err->msg);
	mc_err_set(err, err->code ? err->code : MC_ERR_UNAVAILABLE, "cannot connect to %s: %s",
		   addr, buf);
}

struct mc_rpcc *
mc_rpcc_connect(const char *addr, int timeout_ms, struct mc_err *err)
{
	return mc_rpcc_connect_on(NULL, addr, timeout_ms, err);
}

struct mc_rpcc *
mc_rpcc_connect_on(const struct mc_transport *t, const char *addr, int timeout_ms,
		   struct mc_err *err)
{
	struct mc_rpcc *r;
	struct mc_addr a;

	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate a connection to %s", addr);
		return NULL;
	}
	mc_tconn_wrap(&r->tc, t, -1);
	r->next_id = 1;
	r->next_resp = 1;
	r->timeout_ms = timeout_ms;
	r->max_msg = MC_WIRE_DEFAULT_MAX_MSG;
	r->in_max = r->max_msg + IN_SLACK;
	r->in_cap = IN_START_CAP;
	msgpack_sbuffer_init(&r->out);
	msgpack_packer_init(&r->pk, &r->out, msgpack_sbuffer_write);
	msgpack_sbuffer_init(&r->req);
	msgpack_packer_init(&r->req_pk, &r->req, msgpack_sbuffer_write);
	snprintf(r->addr, sizeof(r->addr), "%s", addr);
	r->in = malloc(r->in_cap);
	if (r->in == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate a connection to %s", addr);
		goto fail;
	}
	if (mc_addr_parse(addr, &a, err) < 0)
		goto fail;
	if (r->tc.t->connect(&r->tc, &a, timeout_ms, 0, err) < 0)
		goto fail;
	return r;
fail:
	mc_rpcc_close(r);
	connect_err(err, addr);
	return NULL;
}

void
mc_rpcc_close(struct mc_rpcc *r)
{
	if (r == NULL)
		return;
	if (r->tc.fd >= 0)
		r->tc.t->close(&r->tc);
	msgpack_sbuffer_destroy(&r->out);
	msgpack_sbuffer_destroy(&r->req);
	free(r->bulks);
	free(r->in);
	free(r);
}

void
mc_rpcc_watch_stall(struct mc_rpcc *r, uint64_t stall_ms)
{
	r->stall_ms = stall_ms;
}

const char *
mc_rpcc_addr(const struct mc_rpcc *r)
{
	return r->addr;
}

int
mc_rpcc_fd(const struct mc_rpcc *r)
{
	return r->tc.fd;
}

msgpack_packer *
mc_rpcc_begin(struct mc_rpcc *r, const char *method)
{
	/* a big request's buffer is not kept for the small ones after it */
	if (r->req.alloc > OUT_KEEP) {
		msgpack_sbuffer_destroy(&r->req);
		msgpack_sbuffer_init(&r->req);
	} else {
		msgpack_sbuffer_clear(&r->req);
	}
	r->method = method;
	return &r->req_pk;
}

int
mc_rpcc_begin_copy(struct mc_rpcc *dst, const struct mc_rpcc *src, struct mc_err *err)
{
	mc_rpcc_begin(dst, src->method);
	if (msgpack_sbuffer_write(&dst->req, src->req.data, src->req.size) != 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot queue a request to %s", dst->addr);
	return 0;
}

/* The params of the request begun, or an empty map when none were packed. */
static void
append_params(struct mc_rpcc *r)
{
	if (r->req.size == 0)
		msgpack_pack_map(&r->pk, 0);
	else
		msgpack_sbuffer_write(&r->out, r->req.data, r->req.size);
}

int64_t
mc_rpcc_send(struct mc_rpcc *r, const void *bulk, uint64_t bulk_len, struct mc_err *err)
{
	struct mc_bulk_src src = mc_bulk_src_mem(bulk, bulk_len);

	return mc_rpcc_send_src(r, &src, err);
}

int64_t
mc_rpcc_send_src(struct mc_rpcc *r, const struct mc_bulk_src *src, struct mc_err *err)
{
	uint64_t bulk_len = src != NULL ? src->len : 0;
	uint32_t id;

	if (check_alive(r, err) < 0)
		return -1;
	if (r->method == NULL)
		return mc_err_set(err, MC_ERR_INTERNAL, "no request begun on %s", r->addr);
	if (bulk_len > 0 && src->kind == MC_BULK_MEM && src->data == NULL)
		return mc_err_set(err, MC_ERR_INVALID, "bulk of %llu bytes without data",
				  (unsigned long long)bulk_len);
	if (bulk_len > 0 && r->nbulks == r->bulks_cap) {
		size_t ncap = r->bulks_cap ? r->bulks_cap * 2 : 8;
		struct bulk_ref *nb = realloc(r->bulks, ncap * sizeof(*nb));

		if (nb == NULL)
			return mc_err_set(err, MC_ERR_SYSTEM, "cannot queue a request to %s",
					  r->addr);
		r->bulks = nb;
		r->bulks_cap = ncap;
	}
	id = r->next_id++;
	if (r->next_id == 0)
		r->next_id = 1;
	mc_pack_request(&r->pk, id, r->method);
	append_params(r);
	if (bulk_len > 0) {
		struct bulk_ref *b = &r->bulks[r->nbulks++];

		b->pos = r->out.size;
		b->src = *src;
	}
	r->inflight++;
	return id;
}

int
mc_rpcc_notify(struct mc_rpcc *r, struct mc_err *err)
{
	if (check_alive(r, err) < 0)
		return -1;
	if (r->method == NULL)
		return mc_err_set(err, MC_ERR_INTERNAL, "no request begun on %s", r->addr);
	mc_pack_notify(&r->pk, r->method);
	append_params(r);
	return 0;
}

bool
mc_rpcc_queued(const struct mc_rpcc *r)
{
	return r->out.size > 0;
}

/*
 * Write the sources v[0..n) completely through the transport, telling
 * on_bytes as they go; at most METERED_WRITE a write while it listens,
 * so a big bulk is reported as it leaves, not only at its end.
 */
static int
write_all(struct mc_rpcc *r, const struct mc_bulk_src *v, int n, struct mc_err *err)
{
	uint64_t at = 0, quiet_since = r->stall_ms > 0 ? mc_mono_ms() : 0;

	for (;;) {
		size_t max = r->on_bytes != NULL ? METERED_WRITE : SSIZE_MAX / 2;
		ssize_t w;

		while (n > 0 && at >= v->len) {
			at -= v->len;
			v++;
			n--;
		}
		if (n == 0)
			return 0;
		w = r->tc.t->write(&r->tc, v, n, at, max);
		if (w < 0 && (errno == EINTR || keep_waiting(r, errno, quiet_since)))
			continue;
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET) && r->inflight > 0) {
			/* the rest is not wanted; what was answered is read next */
			r->write_shut = true;
			r->write_errno = errno;
			return 0;
		}
		if (w <= 0)
			return io_fail(r, err, "cannot write to", w < 0 ? errno : EIO);
		if (r->stall_ms > 0)
			quiet_since = mc_mono_ms();
		at += (uint64_t)w;
		moved(r, (uint64_t)w);
	}
}

int
mc_rpcc_flush(struct mc_rpcc *r, struct mc_err *err)
{
	struct mc_bulk_src v[MC_TWRITE_MAX];
	size_t pos = 0, bi = 0;
	int n = 0, rc = 0;

	if (check_alive(r, err) < 0)
		return -1;
	if (r->write_shut) {
		mark_dead(r);
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "connection to %s closed", r->addr);
	}
	/* packed bytes up to each bulk, the bulk itself, ..., the packed tail */
	while (pos < r->out.size || bi < r->nbulks) {
		size_t end = bi < r->nbulks ? r->bulks[bi].pos : r->out.size;

		if (n + 2 > MC_TWRITE_MAX) {
			if (write_all(r, v, n, err) < 0)
				return -1;
			n = 0;
		}
		if (end > pos) {
			v[n++] = mc_bulk_src_mem(r->out.data + pos, end - pos);
			pos = end;
		}
		if (bi < r->nbulks)
			v[n++] = r->bulks[bi++].src;
	}
	if (n > 0)
		rc = write_all(r, v, n, err);
	r->nbulks = 0;
	if (r->out.alloc > OUT_KEEP) {
		msgpack_sbuffer_destroy(&r->out);
		msgpack_sbuffer_init(&r->out);
	} else {
		msgpack_sbuffer_clear(&r->out);
	}
	return rc;
}

/* Whether bytes (or the end of the stream) wait on the socket now. */
static bool
readable_now(const struct mc_rpcc *r)
{
	struct pollfd p = { .fd = r->tc.fd, .events = POLLIN };

	return r->tc.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP)) != 0;
}

/* Read more bytes into the input buffer (blocking). */
static int
fill(struct mc_rpcc *r, struct mc_err *err)
{
	ssize_t n;

	if (r->in_start == r->in_end)
		r->in_start = r->in_end = 0;
	if (r->in_end == r->in_cap) {
		if (r->in_start > 0) {
			memmove(r->in, r->in + r->in_start, r->in_end - r->in_start);
			r->in_end -= r->in_start;
			r->in_start = 0;
		} else if (r->in_cap < r->in_max) {
			size_t ncap = r->in_cap * 2 > r->in_max ? r->in_max : r->in_cap * 2;
			char *p = realloc(r->in, ncap);

			if (p == NULL) {
				mark_dead(r);
				return mc_err_set(err, MC_ERR_SYSTEM,
						  "cannot read from %s: out of memory", r->addr);
			}
			r->in = p;
			r->in_cap = ncap;
		} else {
			mark_dead(r);
			return mc_err_set(err, MC_ERR_PROTO,
					  "malformed response from %s: over %zu bytes", r->addr,
					  r->max_msg);
		}
	}
	/*
	 * Past a write the far end refused, only an answer it sent before
	 * is read: one already here. None means the write's error stands.
	 */
	if (r->write_shut && !readable_now(r))
		return io_fail(r, err, "cannot write to", r->write_errno);
	if ((n = read_buf(r, r->in + r->in_end, r->in_cap - r->in_end, err)) < 0)
		return -1;
	r->in_end += (size_t)n;
	return 0;
}

void
mc_rpcc_on_notify(struct mc_rpcc *r, void (*fn)(void *arg, const struct mc_msg *n), void *arg)
{
	r->on_notify = fn;
	r->on_notify_arg = arg;
}

void
mc_rpcc_on_bytes(struct mc_rpcc *r, void (*fn)(void *arg, uint64_t n), void *arg)
{
	r->on_bytes = fn;
	r->on_bytes_arg = arg;
}

int
mc_rpcc_recv(struct mc_rpcc *r, struct mc_msg *resp, struct mc_err *err)
{
	if (check_alive(r, err) < 0)
		return -1;
	if (r->bulk_pending > 0)
		return mc_err_set(err, MC_ERR_INTERNAL,
				  "%llu bulk bytes from %s not consumed before the next response",
				  (unsigned long long)r->bulk_pending, r->addr);
	if (r->inflight == 0)
		return mc_err_set(err, MC_ERR_INTERNAL, "no request to %s awaits a response",
				  r->addr);
	/* whatever was queued must be out before waiting for its answer */
	if ((r->out.size > 0 || r->nbulks > 0) && mc_rpcc_flush(r, err) < 0)
		return -1;
	for (;;) {
		const char *why = "unknown";
		size_t ml = 0;
		int v = MC_WIRE_MORE;

		if (r->in_end > r->in_start)
			v = mc_wire_check(r->in + r->in_start, r->in_end - r->in_start, r->max_msg,
					  &ml, &why);
		if (v == MC_WIRE_BAD) {
			mark_dead(r);
			return mc_err_set(err, MC_ERR_PROTO, "malformed response from %s: %s",
					  r->addr, why);
		}
		if (v == MC_WIRE_MORE) {
			if (fill(r, err) < 0)
				return -1;
			continue;
		}
		if (mc_msg_decode(resp, r->in + r->in_start, ml, err) < 0) {
			mark_dead(r);
			err->code = MC_ERR_PROTO;
			return -1;
		}
		r->in_start += ml;
		if (resp->type == MC_MSG_NOTIFY && !resp->has_bulk && r->on_notify != NULL) {
			r->on_notify(r->on_notify_arg, resp);
			mc_msg_release(resp);
			continue;
		}
		break;
	}
	if (resp->type != MC_MSG_RESPONSE || resp->id != r->next_resp) {
		mark_dead(r);
		mc_err_set(err, MC_ERR_PROTO, "unexpected message from %s (type %d, id %u)",
			   r->addr, resp->type, resp->id);
		mc_msg_release(resp);
		return -1;
	}
	r->next_resp++;
	if (r->next_resp == 0)
		r->next_resp = 1;
	r->inflight--;
	if (resp->has_bulk)
		r->bulk_pending = resp->bulk_len;
	return 0;
}

/* Drop up to len read-ahead bytes; how many went. */
static size_t
drop_buffered(struct mc_rpcc *r, uint64_t len)
{
	size_t k = r->in_end - r->in_start;

	if (k > len)
		k = (size_t)len;
	r->in_start += k;
	r->bulk_pending -= k;
	return k;
}

/*
 * The sink's window at position at could not be had, or what landed in
 * it not be kept: the stream is left inside the bulk, so the connection
 * goes.
 */
static int
sink_fail(struct mc_rpcc *r, struct mc_err *err)
{
	int e = errno;

	mark_dead(r);
	return mc_err_set(err, MC_ERR_SYSTEM, "cannot store a bulk from %s: %s", r->addr,
			  mc_strerror(e));
}

/* The connection is up and the answer announced at least len more bulk bytes. */
static int
bulk_ready(struct mc_rpcc *r, uint64_t len, const char *verb, struct mc_err *err)
{
	if (check_alive(r, err) < 0)
		return -1;
	if (len > r->bulk_pending)
		return mc_err_set(err, MC_ERR_INTERNAL,
				  "%s %llu bulk bytes from %s, only %llu announced", verb,
				  (unsigned long long)len, r->addr,
				  (unsigned long long)r->bulk_pending);
	return 0;
}

/*
 * Receive len bulk bytes into the (by then empty) input buffer, to be
 * thrown away.
 */
static int
recv_bin(struct mc_rpcc *r, uint64_t len, struct mc_err *err)
{
	while (len > 0) {
		size_t want = len > r->in_cap ? r->in_cap : (size_t)len;
		ssize_t n = read_buf(r, r->in, want, err);

		if (n < 0)
			return -1;
		len -= (uint64_t)n;
		r->bulk_pending -= (uint64_t)n;
	}
	return 0;
}

int
mc_rpcc_read_bulk_to(struct mc_rpcc *r, struct mc_bulk_sink *sink, struct mc_err *err)
{
	uint64_t at = 0;

	if (bulk_ready(r, sink->len, "reading", err) < 0)
		return -1;
	/* what was read ahead with the header first, copied once */
	while (at < sink->len && r->in_end > r->in_start) {
		size_t want, got = r->in_end - r->in_start;
		char *w = mc_bulk_sink_window(sink, at, &want);

		if (w == NULL)
			return sink_fail(r, err);
		if (got > want)
			got = want;
		memcpy(w, r->in + r->in_start, got);
		r->in_start += got;
		r->bulk_pending -= got;
		if (mc_bulk_sink_commit(sink, at, got) < 0)
			return sink_fail(r, err);
		at += got;
		moved(r, got);
	}
	/* then the rest, whole windows at a time, in place */
	while (at < sink->len) {
		uint64_t left = sink->len - at;
		ssize_t got = read_some(r, sink, at, left > SSIZE_MAX ? SSIZE_MAX : (size_t)left,
					MC_TREAD_ALL, err);

		if (got < 0)
			return -1;
		r->bulk_pending -= (uint64_t)got;
		at += (uint64_t)got;
		moved(r, (uint64_t)got);
	}
	return 0;
}

int
mc_rpcc_read_bulk(struct mc_rpcc *r, void *dest, uint64_t len, struct mc_err *err)
{
	struct mc_bulk_sink sink;

	mc_bulk_sink_mem(&sink, dest, len);
	return mc_rpcc_read_bulk_to(r, &sink, err);
}

int
mc_rpcc_skip_bulk(struct mc_rpcc *r, uint64_t len, struct mc_err *err)
{
	if (bulk_ready(r, len, "skipping", err) < 0)
		return -1;
	return recv_bin(r, len - drop_buffered(r, len), err);
}

int
mc_rpcc_call0(struct mc_rpcc *r, const char *method, struct mc_msg *resp, struct mc_err *err)
{
	msgpack_pack_map(mc_rpcc_begin(r, method), 0);
	return mc_rpcc_call(r, resp, err);
}

int
mc_rpcc_call(struct mc_rpcc *r, struct mc_msg *resp, struct mc_err *err)
{
	if (mc_rpcc_send(r, NULL, 0, err) < 0)
		return -1;
	if (mc_rpcc_flush(r, err) < 0)
		return -1;
	if (mc_rpcc_recv(r, resp, err) < 0)
		return -1;
	if (mc_msg_error(resp, err) < 0) {
		/*
		 * A bulk announced with an error is unusual, but leaving it
		 * unread would desynchronise the stream.
		 */
		if (r->bulk_pending > 0)
			mc_rpcc_skip_bulk(r, r->bulk_pending, NULL);
		mc_msg_release(resp);
		return -1;
	}
	return 0;
}
