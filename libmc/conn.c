/*
 * One event-driven msgpack-rpc connection (mc/conn.h): its lifetime,
 * its input and output, its replies and deferred requests; the calls
 * it makes itself are conn_call.c's. The method registry is
 * registry.c's; listening, accepting and the limits of accepted
 * connections are listener.c's (conn_impl.h says what the files share).
 *
 * The data path is built around two queues per connection:
 *
 * Input is one growable buffer. Every read is followed by a parse pass
 * that frames whole messages with mc_wire_check(), decodes and dispatches
 * them. A message that announces a bulk payload hands the stream over to
 * the bulk: either into the handler's sink (mc/bulk.h: read-ahead bytes
 * are copied once, the rest is read into the sink's window, in place
 * for memory) or into the bin.
 * Parsing resumes once the bulk is through.
 *
 * Output is a list of segments: small messages are coalesced into
 * inline buffers, large packed replies are adopted without a copy, and
 * bulk payloads are referenced with a release callback. The queue goes
 * out as a list of sources (mc/bulk.h) handed to the connection's
 * transport (mc/transport.h), which gathers what is in memory into one
 * write and sends a file's range in its turn. Replies produced
 * while a read pass is running are coalesced and written once at its
 * end, so a pipeline of small requests costs one write; otherwise the
 * write is tried at once and EV_WRITE is armed only when the socket is
 * full. A connection whose ops name an egress bucket (mc/rate.h) takes
 * tokens for each write and gives back what the socket did not take;
 * one that finds too little there arms nothing and waits in the
 * bucket's queue, whose timer resumes its flush in turn.
 *
 * Lifetime: a connection is reference counted. The open socket holds one
 * reference, every running callback pass holds one, and every deferred
 * request holds one, so closing from inside a handler or callback never
 * frees memory still in use, and a deferred reply after the close finds
 * a closed (but still allocated) connection and is dropped.
 *
 * Every byte moves through the connection's transport, chosen once when
 * it is made (mc_conn_ops.transport): this file never touches a socket's
 * data itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn_impl.h"
#include "mc/clock.h"
#include "mc/conn.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/metrics.h"
#include "mc/rate.h"
#include "mc/transport.h"

#define IN_START_CAP (64u << 10) /* input buffer to begin with */
#define IN_SLACK (64u << 10)	 /* input buffer beyond max_msg */
#define SEG_CAP (64u << 10)	 /* inline buffer of a coalescing segment */
#define SPARE_BUF_SEGS 4	 /* recycled segments with a buffer, per conn */
#define SPARE_REF_SEGS 64	 /* recycled reference segments, per conn */
/*
 * While a read pass coalesces replies, write as soon as this much is
 * queued: there is nothing to gain by holding megabytes of referenced
 * bulk back, and a long pipeline of bulk reads must not trip max_outq.
 */
#define COALESCE_MAX (256u << 10)
/*
 * Bytes one flush writes before it yields to the event loop: a reader
 * fast enough never to fill the socket would otherwise keep a writer of
 * a 200 MB reply (a candidate view) in one callback for 100+ ms while
 * every other connection waits.
 */
#define FLUSH_BUDGET (4u << 20)
#define REPLY_KEEP (1u << 20) /* keep a reply buffer this big across requests */

struct seg {
	struct seg *next;
	const char *data;
	size_t len;
	size_t cap;  /* inline: room in buf; 0 for other kinds */
	char *adopt; /* adopted heap buffer freed on release, or NULL */
	void (*release)(void *arg);
	void *arg;
	/* a bulk that is not plain memory (a file's range, a region): its source */
	struct mc_bulk_src src;
	char buf[]; /* inline segments only */
};

static int conn_flush(struct mc_conn *c);

void
mc_cn_limits_norm(struct mc_conn_limits *out, const struct mc_conn_limits *in)
{
	if (in != NULL)
		*out = *in;
	else
		memset(out, 0, sizeof(*out));
	if (out->max_msg == 0)
		out->max_msg = MC_WIRE_DEFAULT_MAX_MSG;
	if (out->max_bulk == 0)
		out->max_bulk = MC_CONN_MAX_BULK;
	if (out->max_outq == 0)
		out->max_outq = (size_t)256 << 20;
	if (out->max_conns <= 0)
		out->max_conns = 4096;
}

/* ---- lifetime ---- */

void
mc_cn_ref(struct mc_conn *c)
{
	c->refs++;
}

static void
seg_list_free(struct seg *s)
{
	while (s != NULL) {
		struct seg *n = s->next;

		free(s);
		s = n;
	}
}

void
mc_cn_unref(struct mc_conn *c)
{
	if (--c->refs > 0)
		return;
	free(c->in);
	seg_list_free(c->spare_buf);
	seg_list_free(c->spare_ref);
	msgpack_sbuffer_destroy(&c->cur.reply);
	msgpack_sbuffer_destroy(&c->scratch);
	msgpack_sbuffer_destroy(&c->req);
	if (c->data_free != NULL && c->data != NULL)
		c->data_free(c->data);
	free(c);
}

/* ---- output queue ---- */

static struct seg *
seg_get_buf(struct mc_conn *c)
{
	struct seg *s = c->spare_buf;

	if (s != NULL) {
		c->spare_buf = s->next;
		c->nspare_buf--;
	} else {
		s = malloc(sizeof(*s) + SEG_CAP);
		if (s == NULL)
			return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->data = s->buf;
	s->cap = SEG_CAP;
	return s;
}

static struct seg *
seg_get_ref(struct mc_conn *c)
{
	struct seg *s = c->spare_ref;

	if (s != NULL) {
		c->spare_ref = s->next;
		c->nspare_ref--;
	} else {
		s = malloc(sizeof(*s));
		if (s == NULL)
			return NULL;
	}
	memset(s, 0, sizeof(*s));
	return s;
}

/* Run the segment's release duty (exactly once) and recycle or free it. */
static void
seg_done(struct mc_conn *c, struct seg *s)
{
	void (*release)(void *) = s->release;
	void *arg = s->arg;

	free(s->adopt);
	if (s->cap > 0 && c->nspare_buf < SPARE_BUF_SEGS) {
		s->next = c->spare_buf;
		c->spare_buf = s;
		c->nspare_buf++;
	} else if (s->cap == 0 && c->nspare_ref < SPARE_REF_SEGS) {
		s->next = c->spare_ref;
		c->spare_ref = s;
		c->nspare_ref++;
	} else {
		free(s);
	}
	if (release != NULL)
		release(arg);
}

static void
out_append(struct mc_conn *c, struct seg *s)
{
	s->next = NULL;
	if (c->ot != NULL)
		c->ot->next = s;
	else
		c->oh = s;
	c->ot = s;
	c->outq += s->len;
}

/* Copy n bytes onto the queue, filling the tail's inline buffer first. */
int
mc_cn_out_copy(struct mc_conn *c, const void *p, size_t n)
{
	struct seg *t = c->ot;
	const char *src = p;

	while (n > 0) {
		size_t k;

		if (t == NULL || t->cap == 0 || t->len == t->cap) {
			t = seg_get_buf(c);
			if (t == NULL)
				return -1;
			out_append(c, t);
		}
		k = t->cap - t->len;
		if (k > n)
			k = n;
		memcpy(t->buf + t->len, src, k);
		t->len += k;
		c->outq += k;
		src += k;
		n -= k;
	}
	return 0;
}

static int
out_ref(struct mc_conn *c, const void *p, size_t n, void (*release)(void *), void *arg, char *adopt)
{
	struct seg *s = seg_get_ref(c);

	if (s == NULL)
		return -1;
	s->data = p;
	s->len = n;
	s->release = release;
	s->arg = arg;
	s->adopt = adopt;
	out_append(c, s);
	return 0;
}

/* Queue a bulk from a source by reference. */
static int
out_src(struct mc_conn *c, const struct mc_bulk_src *src, void (*release)(void *), void *arg)
{
	if (out_ref(c, src->kind != MC_BULK_FD ? src->data : NULL, (size_t)src->len, release, arg,
		    NULL) < 0)
		return -1;
	if (src->kind != MC_BULK_MEM)
		c->ot->src = *src;
	return 0;
}

/* Drop n written bytes from the head of the queue. */
static void
out_consume(struct mc_conn *c, size_t n)
{
	c->outq -= n;
	while (n > 0 && c->oh != NULL) {
		struct seg *s = c->oh;
		size_t left = s->len - c->ooff;

		if (n < left) {
			c->ooff += n;
			return;
		}
		n -= left;
		c->ooff = 0;
		c->oh = s->next;
		if (c->oh == NULL)
			c->ot = NULL;
		seg_done(c, s);
	}
	/* zero-length segments (an empty bulk) are done too */
	while (c->oh != NULL && c->oh->len == 0 && c->ooff == 0) {
		struct seg *s = c->oh;

		c->oh = s->next;
		if (c->oh == NULL)
			c->ot = NULL;
		seg_done(c, s);
	}
}

static void
out_release_all(struct mc_conn *c)
{
	while (c->oh != NULL) {
		struct seg *s = c->oh;

		c->oh = s->next;
		if (c->oh == NULL)
			c->ot = NULL;
		seg_done(c, s);
	}
	c->ooff = 0;
	c->outq = 0;
}

static void
wev_set(struct mc_conn *c, bool on)
{
	if (on == c->wev_on)
		return;
	if (on)
		event_add(c->wev, NULL);
	else
		event_del(c->wev);
	c->wev_on = on;
}

/*
 * Write what the socket takes. Returns 0, or -1 when the connection was
 * closed (by an error, by a completed flush-and-close, or by a release
 * callback); the caller must hold a reference.
 */
static int
conn_flush(struct mc_conn *c)
{
	struct mc_bulk_src v[MC_TWRITE_MAX];
	size_t written = 0;

	while (c->oh != NULL && !c->closed) {
		size_t max = FLUSH_BUDGET;
		struct seg *s;
		ssize_t w;
		int n = 0;

		/* empty segments at the head (an empty bulk) are done first */
		out_consume(c, 0);
		if (c->oh == NULL || c->closed)
			break;
		if (c->ops.egress != NULL) {
			size_t want = c->outq < FLUSH_BUDGET ? c->outq : FLUSH_BUDGET;

			max = mc_rate_take(c->ops.egress, &c->egress_wait, want);
			if (max == 0) {
				/* the bucket's timer resumes this flush in turn (on_egress) */
				mc_rate_wait(c->ops.egress, &c->egress_wait, want);
				wev_set(c, false);
				return 0;
			}
		}
		for (s = c->oh; s != NULL && n < MC_TWRITE_MAX; s = s->next)
			v[n++] = s->src.kind != MC_BULK_MEM ? s->src
							    : mc_bulk_src_mem(s->data, s->len);
		w = c->tc.t->write(&c->tc, v, n, c->ooff, max);
		if (c->ops.egress != NULL)
			mc_rate_unused(c->ops.egress, w > 0 ? max - (size_t)w : max);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				wev_set(c, true);
				return 0;
			}
			mc_debug("closing %s: write: %s", c->name, strerror(errno));
			mc_cn_shutdown(c);
			return -1;
		}
		STAT_ADD(bytes_out, w);
		out_consume(c, (size_t)w);
		written += (size_t)w;
		if (c->limit_ev != NULL)
			c->active_ns = mc_mono_ns();
		if (written >= FLUSH_BUDGET && c->oh != NULL && !c->closed) {
			/* the rest when the loop comes back to this socket */
			wev_set(c, true);
			return 0;
		}
	}
	if (c->closed)
		return -1;
	wev_set(c, false);
	if (c->closing) {
		mc_cn_shutdown(c);
		return -1;
	}
	return 0;
}

/*
 * Called after something was queued: write now unless a read pass will
 * write at its end, then enforce the output cap (what the socket did not
 * take stays queued in our memory or pins the caller's). The newest
 * message does not count against the cap, so one reply larger than the
 * cap can still go out; a peer that leaves more than the cap unread
 * behind it is the slow reader.
 */
void
mc_cn_kick(struct mc_conn *c)
{
	if (c->closed)
		return;
	/* with EV_WRITE armed the socket is full: on_write drains it */
	if ((!c->in_read || c->outq >= COALESCE_MAX) && !c->wev_on && conn_flush(c) < 0)
		return;
	if (c->outq - (c->outq < c->last_add ? c->outq : c->last_add) > c->lim.max_outq) {
		mc_warn("closing %s: output queue over %zu bytes (peer not reading)", c->name,
			c->lim.max_outq);
		mc_cn_shutdown(c);
	}
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	struct mc_conn *c = arg;

	(void)fd;
	(void)what;
	mc_cn_ref(c);
	c->wev_on = false; /* a non-persistent event fired: it is no longer pending */
	conn_flush(c);
	mc_cn_unref(c);
}

/* The egress bucket has this connection's share of tokens: write on. */
static void
on_egress(struct mc_rate_waiter *w)
{
	struct mc_conn *c = (struct mc_conn *)((char *)w - offsetof(struct mc_conn, egress_wait));

	mc_cn_ref(c);
	if (!c->wev_on)
		conn_flush(c);
	mc_cn_unref(c);
}

/* ---- closing ---- */

/*
 * Close the socket and settle every obligation exactly once: queued
 * release callbacks, a bulk in progress, pending calls, on_close. The
 * memory goes when the last reference does.
 */
void
mc_cn_shutdown(struct mc_conn *c)
{
	if (c->closed)
		return;
	mc_cn_ref(c);
	c->closed = true;
	c->closing = false;
	event_free(c->rev);
	event_free(c->wev);
	c->rev = c->wev = NULL;
	if (c->limit_ev != NULL)
		event_free(c->limit_ev);
	c->limit_ev = NULL;
	c->wev_on = false;
	mc_rate_cancel(c->ops.egress, &c->egress_wait);
	c->tc.t->close(&c->tc);
	c->tc.fd = -1;
	if (c->accepted)
		STAT_ADD(closed, 1);
	out_release_all(c);
	if (c->bulk_mode == BULK_RECV) {
		c->bulk_mode = BULK_NONE;
		if (c->bulk_done != NULL)
			c->bulk_done(c->bulk_req, false, c->bulk_arg);
	}
	c->bulk_mode = BULK_NONE;
	mc_cn_calls_fail(c);
	if (c->ops.on_close != NULL)
		c->ops.on_close(c, c->ops.ctx);
	mc_cn_server_unlink(c);
	mc_cn_unref(c); /* the one the open socket held */
	mc_cn_unref(c);
}

void
mc_conn_close(struct mc_conn *c, bool flush)
{
	if (c == NULL || c->closed)
		return;
	mc_cn_ref(c);
	if (flush && c->oh != NULL) {
		c->closing = true;
		event_del(c->rev);
		if (!c->in_read && !c->wev_on)
			conn_flush(c);
	} else {
		mc_cn_shutdown(c);
	}
	mc_cn_unref(c);
}

bool
mc_conn_is_open(const struct mc_conn *c)
{
	return c != NULL && !c->closed && !c->closing;
}

const char *
mc_conn_peer_name(const struct mc_conn *c)
{
	return c->name;
}

void
mc_conn_keep(struct mc_conn *c)
{
	c->keep = true;
}

void
mc_conn_vouch(struct mc_conn *c)
{
	c->hello_due_ns = 0;
	mc_cn_server_vouched(c);
}

bool
mc_conn_same_user(const struct mc_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t slen = sizeof(ss);
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	if (c->closed || getsockname(c->tc.fd, (struct sockaddr *)&ss, &slen) != 0 ||
	    ss.ss_family != AF_UNIX)
		return false;
	return getsockopt(c->tc.fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
	       clen == sizeof(cred) && cred.uid == geteuid();
}

void
mc_conn_set_data(struct mc_conn *c, void *data, void (*free_fn)(void *))
{
	if (c->data != NULL && c->data != data && c->data_free != NULL)
		c->data_free(c->data);
	c->data = data;
	c->data_free = free_fn;
}

void *
mc_conn_data(const struct mc_conn *c)
{
	return c->data;
}

/* ---- replies ---- */

static void drain_or_close(struct mc_conn *c);
static void begin_skip(struct mc_conn *c, uint64_t len);

/* The held request was answered: read again, starting with what is buffered. */
static void
unhold(struct mc_conn *c)
{
	c->held = NULL;
	if (c->closed || c->closing)
		return;
	if (event_add(c->rev, NULL) != 0) {
		mc_warn("closing %s: cannot watch it for input again", c->name);
		mc_cn_shutdown(c);
		return;
	}
	/* Whole messages may wait in the buffer: on_read parses them. */
	event_active(c->rev, EV_READ, 0);
}

static bool
req_is_deferred(const struct mc_req *req)
{
	return req != &req->conn->cur;
}

/*
 * Queue the packed reply (plus an optional bulk by reference) and settle
 * the request. A reply to a closed connection or a notification is
 * dropped, but the bulk's release still runs, exactly once.
 */
static void
reply_finish(struct mc_req *req, bool failed, const struct mc_bulk_src *bulk,
	     void (*release)(void *), void *arg)
{
	struct mc_conn *c = req->conn;
	bool deferred = req_is_deferred(req);
	size_t blen = bulk != NULL ? (size_t)bulk->len : 0;
	bool sent = false;

	if (!req->replied)
		mc_cn_count_answer(req, failed);
	mc_cn_ref(c);
	if (req->replied) {
		mc_warn("%s: second reply to request %u dropped", c->name, req->id);
	} else if (!req->notify && !c->closed && !c->closing && req->method != NULL &&
		   mc_fault2("reply", req->method->name)) {
		/* The work is done, its answer lost with the connection. */
		mc_warn("fault injected: %s reply on %s lost", req->method->name, c->name);
		mc_cn_shutdown(c);
	} else if (!req->notify && !c->closed && !c->closing) {
		int rc;

		c->last_add = req->reply.size + blen;
		/*
		 * A big packed reply is adopted as it is instead of copied;
		 * a small one joins the coalescing buffer.
		 */
		if (req->reply.size > SEG_CAP) {
			size_t n = req->reply.size;
			char *p = msgpack_sbuffer_release(&req->reply);

			rc = out_ref(c, p, n, NULL, NULL, p);
			if (rc < 0)
				free(p);
		} else {
			rc = mc_cn_out_copy(c, req->reply.data, req->reply.size);
		}
		if (rc == 0 && release != NULL) {
			rc = out_src(c, bulk, release, arg);
			sent = rc == 0;
		} else if (rc == 0 && blen > 0) {
			rc = out_src(c, bulk, NULL, NULL);
		}
		if (rc < 0) {
			mc_warn("closing %s: out of memory queueing a reply", c->name);
			mc_cn_shutdown(c);
		} else {
			mc_cn_kick(c);
		}
	}
	req->replied = true;
	if (release != NULL && !sent)
		release(arg);
	if (deferred) {
		/*
		 * Replying before a claimed bulk is through (e.g. an early
		 * error) leaves nobody to tell: the rest of it is discarded.
		 */
		if (c->bulk_req == req) {
			c->bulk_req = NULL;
			if (c->bulk_mode == BULK_RECV) {
				c->bulk_mode = BULK_SKIP;
				drain_or_close(c);
			}
		}
		if (c->cur_deferred == req)
			c->cur_deferred = NULL;
		if (c->held == req && c->bulk_kept) {
			/* answered without its bulk: the rest of the stream is after it */
			c->bulk_kept = false;
			begin_skip(c, req->bulk_len);
		}
		if (c->held == req)
			unhold(c);
		c->ndeferred--;
		if (c->limit_ev != NULL)
			c->active_ns = mc_mono_ns();
		msgpack_sbuffer_destroy(&req->reply);
		free(req);
		mc_cn_unref(c); /* the deferred request's */
	} else if (req->reply.alloc > REPLY_KEEP) {
		msgpack_sbuffer_destroy(&req->reply);
		msgpack_sbuffer_init(&req->reply);
	}
	mc_cn_unref(c);
}

msgpack_packer *
mc_reply_ok_begin(struct mc_req *req)
{
	msgpack_sbuffer_clear(&req->reply);
	msgpack_packer_init(&req->pk, &req->reply, msgpack_sbuffer_write);
	mc_pack_response_ok(&req->pk, req->id);
	return &req->pk;
}

void
mc_reply_end(struct mc_req *req)
{
	reply_finish(req, false, NULL, NULL, NULL);
}

void
mc_reply_end_bulk(struct mc_req *req, const void *data, size_t len, void (*release)(void *arg),
		  void *arg)
{
	struct mc_bulk_src src = mc_bulk_src_mem(data, len);

	reply_finish(req, false, &src, release, arg);
}

void
mc_reply_end_src(struct mc_req *req, const struct mc_bulk_src *src, void (*release)(void *arg),
		 void *arg)
{
	reply_finish(req, false, src, release, arg);
}

void
mc_reply_ok_empty(struct mc_req *req)
{
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_map(pk, 0);
	mc_reply_end(req);
}

void
mc_reply_err(struct mc_req *req, int code, const char *fmt, ...)
{
	char msg[MC_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msgpack_sbuffer_clear(&req->reply);
	msgpack_packer_init(&req->pk, &req->reply, msgpack_sbuffer_write);
	mc_pack_response_err(&req->pk, req->id, code, msg);
	reply_finish(req, true, NULL, NULL, NULL);
}

void
mc_reply_mc_err(struct mc_req *req, const struct mc_err *err)
{
	mc_reply_err(req, err->code, "%s", err->msg);
}

struct mc_req *
mc_req_defer(struct mc_req *req)
{
	struct mc_conn *c = req->conn;
	struct mc_req *d;

	if (req_is_deferred(req))
		return req;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->conn = c;
	d->ctx = req->ctx;
	d->id = req->id;
	d->notify = req->notify;
	d->has_bulk = req->has_bulk;
	d->bulk_len = req->bulk_len;
	d->method = req->method;
	d->t0_ns_ = req->t0_ns_;
	/* the answer is counted when it goes; a notification when its handler returns */
	if (!req->notify) {
		d->stats_ = req->stats_;
		req->stats_ = NULL;
	}
	msgpack_sbuffer_init(&d->reply);
	/* the original is settled: no automatic reply when the handler returns */
	req->replied = true;
	if (c->bulk_req == req)
		c->bulk_req = d;
	c->cur_deferred = d;
	c->ndeferred++;
	mc_cn_ref(c);
	return d;
}

int
mc_req_hold(struct mc_req *req)
{
	struct mc_conn *c = req->conn;

	if (!req_is_deferred(req) || req->replied || c->held != NULL || c->closed)
		return -1;
	c->held = req;
	event_del(c->rev);
	return 0;
}

/* ---- input: bulk payloads ---- */

int
mc_req_recv_bulk(struct mc_req *req, void *dest, mc_bulk_done_fn done, void *arg)
{
	struct mc_conn *c = req->conn;

	mc_bulk_sink_mem(&c->bulk_mem, dest, req->bulk_len);
	return mc_req_recv_bulk_to(req, &c->bulk_mem, done, arg);
}

int
mc_req_recv_bulk_to(struct mc_req *req, struct mc_bulk_sink *sink, mc_bulk_done_fn done, void *arg)
{
	struct mc_conn *c = req->conn;
	/* claimed after its handler returned, by the request the connection holds */
	bool late = c->bulk_kept && req == c->held;

	if (c->closed || !(c->bulk_claimable || late) || !req->has_bulk ||
	    sink->len != req->bulk_len)
		return -1;
	if (!late && req != &c->cur && req != c->cur_deferred)
		return -1;
	if (late && event_add(c->rev, NULL) != 0)
		return -1;
	c->bulk_claimable = false;
	c->bulk_kept = false;
	c->bulk_mode = BULK_RECV;
	c->bulk_sink = sink;
	c->bulk_left = req->bulk_len;
	c->bulk_got = 0;
	c->bulk_done = done;
	c->bulk_arg = arg;
	c->bulk_req = req;
	/* the connection reads again, for the bulk only: parsing waits for the answer */
	if (late)
		event_active(c->rev, EV_READ, 0);
	return 0;
}

/* The claimed bulk is complete (or failed): resume parsing, tell the owner. */
static void
bulk_finish(struct mc_conn *c)
{
	struct mc_req *req = c->bulk_req;

	c->bulk_mode = BULK_NONE;
	c->bulk_req = NULL;
	if (c->bulk_done != NULL)
		c->bulk_done(req, true, c->bulk_arg);
	/*
	 * The handler replied in done, or deferred earlier; anything else
	 * would leave the client waiting forever.
	 */
	if (req == &c->cur && !req->notify && !req->replied && !c->closed)
		mc_reply_err(req, MC_ERR_INTERNAL, "no reply from handler");
}

/*
 * The sink could not give a window or keep what landed in it (errno
 * says why). The stream is inside the bulk and the handler expects all
 * of it, so the connection closes, which tells the handler (ok false).
 */
static int
sink_fail(struct mc_conn *c)
{
	mc_warn("closing %s: cannot store a bulk: %s", c->name, strerror(errno));
	mc_cn_shutdown(c);
	return -1;
}

/* Take what the input buffer already holds of the bulk; -1 when closed. */
static int
bulk_take_buffered(struct mc_conn *c)
{
	while (c->in_end > c->in_start && c->bulk_left > 0) {
		size_t k = c->in_end - c->in_start;
		size_t n;
		char *w;

		if (k > c->bulk_left)
			k = (size_t)c->bulk_left;
		if (c->bulk_mode == BULK_RECV) {
			w = mc_bulk_sink_window(c->bulk_sink, c->bulk_got, &n);
			if (w == NULL)
				return sink_fail(c);
			if (k > n)
				k = n;
			memcpy(w, c->in + c->in_start, k);
			if (mc_bulk_sink_commit(c->bulk_sink, c->bulk_got, k) < 0)
				return sink_fail(c);
		}
		c->in_start += k;
		c->bulk_got += k;
		c->bulk_left -= k;
	}
	return 0;
}

/*
 * Read bulk bytes from the socket: straight into the destination, or
 * into the input buffer to be thrown away. Returns 1 when the bulk is
 * complete, 0 when the socket has no more for now, -1 when closed.
 */
static int
bulk_read(struct mc_conn *c)
{
	while (c->bulk_left > 0) {
		struct mc_bulk_sink bin, *sink = c->bulk_sink;
		uint64_t at = c->bulk_got;
		size_t want = c->bulk_left > SSIZE_MAX ? SSIZE_MAX : (size_t)c->bulk_left;
		ssize_t n;

		if (c->bulk_mode != BULK_RECV) {
			/* the input buffer is empty while a bulk is in flight */
			want = c->bulk_left > c->in_cap ? c->in_cap : (size_t)c->bulk_left;
			mc_bulk_sink_mem(&bin, c->in, want);
			sink = &bin;
			at = 0;
		}
		n = c->tc.t->read(&c->tc, sink, at, want, 0);
		if (n == MC_TREAD_SINK_FAILED)
			return sink_fail(c);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			mc_debug("closing %s: read: %s", c->name, strerror(errno));
			mc_cn_shutdown(c);
			return -1;
		}
		if (n == 0) {
			mc_debug("closing %s: end of stream inside a bulk payload", c->name);
			mc_cn_shutdown(c);
			return -1;
		}
		STAT_ADD(bytes_in, n);
		c->in_total += (uint64_t)n;
		c->bulk_got += (uint64_t)n;
		c->bulk_left -= (uint64_t)n;
	}
	if (c->bulk_mode == BULK_RECV)
		bulk_finish(c);
	else
		c->bulk_mode = BULK_NONE;
	return 1;
}

/* ---- input: messages ---- */

static void
close_malformed(struct mc_conn *c, const char *why)
{
	STAT_ADD(malformed, 1);
	mc_warn("closing %s: malformed message: %s", c->name, why);
	mc_cn_shutdown(c);
}

/* A refused body longer than MC_CONN_MAX_DRAIN closes its connection. */
static void
drain_or_close(struct mc_conn *c)
{
	if (!c->accepted || c->bulk_left <= MC_CONN_MAX_DRAIN)
		return;
	mc_debug("closing %s: %llu bytes of a refused body left, more than are drained", c->name,
		 (unsigned long long)c->bulk_left);
	STAT_ADD(undrained, 1);
	c->bulk_mode = BULK_NONE;
	mc_conn_close(c, true);
}

/*
 * Discard a bulk nobody claimed: the first len bytes still to come. On
 * an accepted connection more than MC_CONN_MAX_DRAIN of a refused
 * request's body is not waited for: its answer is flushed and the
 * connection closed, so that a declared terabyte holds nothing.
 */
static void
begin_skip(struct mc_conn *c, uint64_t len)
{
	c->bulk_mode = BULK_SKIP;
	c->bulk_left = len;
	c->bulk_got = 0;
	/* nothing to store while skipping: taking the buffered bytes cannot fail */
	(void)bulk_take_buffered(c);
	if (c->bulk_left == 0)
		c->bulk_mode = BULK_NONE;
	else
		drain_or_close(c);
}

static void
dispatch(struct mc_conn *c, const struct mc_msg *m)
{
	struct mc_req *r = &c->cur;
	const struct reg_entry *entry;
	mc_handler_fn fn;

	if (m->type == MC_MSG_RESPONSE) {
		mc_cn_call_answered(c, m);
		/* calls have no way to claim a bulk: it is dropped */
		if (!c->closed && m->has_bulk)
			begin_skip(c, m->bulk_len);
		return;
	}
	if (m->has_bulk && m->bulk_len > c->lim.max_bulk) {
		mc_warn("closing %s: bulk of %llu bytes over the limit of %llu", c->name,
			(unsigned long long)m->bulk_len, (unsigned long long)c->lim.max_bulk);
		mc_cn_shutdown(c);
		return;
	}
	r->conn = c;
	r->ctx = c->ops.ctx;
	r->id = m->id;
	r->notify = m->type == MC_MSG_NOTIFY;
	r->msg = m;
	r->params = m->body;
	r->has_bulk = m->has_bulk;
	r->bulk_len = m->bulk_len;
	r->replied = false;
	c->cur_deferred = NULL;
	c->bulk_claimable = m->has_bulk;

	entry = mc_cn_registry_entry(c->ops.methods, m->method, m->method_len);
	/* method.NAME: this daemon answers as one built without NAME (mc-fault(7)) */
	if (entry != NULL && mc_fault2("method", entry->m->name))
		entry = NULL;
	r->method = entry != NULL ? entry->m : NULL;
	r->stats_ = entry != NULL ? &entry->st : NULL;
	if (r->stats_ != NULL && r->stats_->requests != NULL) {
		mc_metric_inc(r->stats_->requests);
		r->t0_ns_ = mc_mono_ns();
	}
	fn = entry != NULL ? entry->m->fn : c->ops.fallback;
	if (entry != NULL && c->ops.authorize != NULL && !mc_cn_authorized(r, &c->ops)) {
		/* answered: the handler never sees a call its caller may not make */
	} else if (fn != NULL) {
		fn(r);
	} else if (!r->notify) {
		int n = m->method_len > 64 ? 64 : (int)m->method_len;

		mc_reply_err(r, MC_ERR_INVALID, "unknown method '%.*s'", n, m->method);
	} else {
		mc_debug("%s: ignoring notification '%.*s'", c->name,
			 m->method_len > 64 ? 64 : (int)m->method_len, m->method);
	}
	c->bulk_claimable = false;
	r->msg = NULL;
	r->params = NULL;
	/* a notification is done when its handler returns */
	if (r->notify)
		mc_cn_count_answer(r, false);
	if (c->closed)
		return;
	if (c->bulk_mode == BULK_RECV) {
		if (bulk_take_buffered(c) == 0 && c->bulk_left == 0)
			bulk_finish(c);
		return;
	}
	if (m->has_bulk && c->held != NULL && c->held == c->cur_deferred) {
		/* the held request may claim it when it is ready to */
		c->bulk_kept = true;
		return;
	}
	if (m->has_bulk)
		begin_skip(c, m->bulk_len);
	if (!r->notify && !r->replied && !c->closed)
		mc_reply_err(r, MC_ERR_INTERNAL, "no reply from handler");
}

/* Frame, decode and dispatch every whole message in the input buffer. */
static void
conn_parse(struct mc_conn *c)
{
	while (!c->closed && !c->closing && c->held == NULL && c->bulk_mode == BULK_NONE &&
	       c->in_start < c->in_end) {
		const char *why = "unknown";
		struct mc_msg m;
		struct mc_err e;
		size_t mlen = 0;
		int v;

		v = mc_wire_check(c->in + c->in_start, c->in_end - c->in_start, c->lim.max_msg,
				  &mlen, &why);
		if (v == MC_WIRE_MORE)
			return;
		if (v == MC_WIRE_BAD) {
			close_malformed(c, why);
			return;
		}
		memset(&m, 0, sizeof(m));
		if (mc_msg_decode(&m, c->in + c->in_start, mlen, &e) < 0) {
			close_malformed(c, e.msg);
			return;
		}
		c->in_start += mlen;
		c->nparsed++;
		dispatch(c, &m);
		mc_msg_release(&m);
	}
}

/* Make room at the end of the input buffer; -1 (closed) if it cannot grow. */
static int
in_make_room(struct mc_conn *c)
{
	if (c->in_start == c->in_end) {
		c->in_start = c->in_end = 0;
		/* give back a buffer one big message grew */
		if (c->in_cap > IN_START_CAP) {
			char *p = realloc(c->in, IN_START_CAP);

			if (p != NULL) {
				c->in = p;
				c->in_cap = IN_START_CAP;
			}
		}
	}
	if (c->in_end < c->in_cap)
		return 0;
	if (c->in_start > 0) {
		memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
		c->in_end -= c->in_start;
		c->in_start = 0;
		return 0;
	}
	if (c->in_cap < c->in_max) {
		size_t ncap = c->in_cap * 2;
		char *p;

		if (ncap > c->in_max)
			ncap = c->in_max;
		p = realloc(c->in, ncap);
		if (p == NULL) {
			mc_warn("closing %s: out of memory for input", c->name);
			mc_cn_shutdown(c);
			return -1;
		}
		c->in = p;
		c->in_cap = ncap;
		return 0;
	}
	STAT_ADD(malformed, 1);
	mc_warn("closing %s: malformed message: over %zu bytes", c->name, c->lim.max_msg);
	mc_cn_shutdown(c);
	return -1;
}

static void
conn_read(struct mc_conn *c)
{
	struct mc_bulk_sink in;
	ssize_t n;

	if (c->bulk_mode != BULK_NONE) {
		/* some of a bulk claimed late may be buffered; otherwise the buffer is empty */
		if (bulk_take_buffered(c) == 0)
			bulk_read(c);
		return;
	}
	if (in_make_room(c) < 0)
		return;
	mc_bulk_sink_mem(&in, c->in + c->in_end, c->in_cap - c->in_end);
	for (;;) {
		n = c->tc.t->read(&c->tc, &in, 0, c->in_cap - c->in_end, 0);
		if (n >= 0 || errno != EINTR)
			break;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		mc_debug("closing %s: read: %s", c->name, strerror(errno));
		mc_cn_shutdown(c);
		return;
	}
	if (n == 0) {
		if (c->in_end > c->in_start)
			mc_debug("closing %s: end of stream inside a message", c->name);
		mc_cn_shutdown(c);
		return;
	}
	STAT_ADD(bytes_in, n);
	c->in_total += (uint64_t)n;
	c->in_end += (size_t)n;
	conn_parse(c);
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct mc_conn *c = arg;
	uint64_t parsed;

	(void)fd;
	(void)what;
	/*
	 * A held connection reads nothing but the bulk its held request
	 * claimed: its input waits in the socket.
	 */
	if (c->held != NULL && c->bulk_mode == BULK_NONE) {
		event_del(c->rev);
		return;
	}
	mc_cn_ref(c);
	c->in_read = true;
	parsed = c->nparsed;
	conn_read(c);
	/* a bulk that completed may leave whole messages behind it */
	if (!c->closed && c->bulk_mode == BULK_NONE)
		conn_parse(c);
	c->in_read = false;
	if (!c->closed)
		mc_cn_kick(c);
	if (!c->closed && c->limit_ev != NULL)
		mc_cn_limit_after_read(c, parsed);
	mc_cn_unref(c);
}

/* ---- creating connections ---- */

static void
conn_name(struct mc_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getpeername(c->tc.fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family != AF_UNIX) {
		mc_addr_format((struct sockaddr *)&ss, len, c->name, sizeof(c->name));
		return;
	}
	/* a unix client has no name of its own: the socket path and the fd */
	len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (getsockname(c->tc.fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;

		snprintf(c->name, sizeof(c->name), "unix:%.*s#%d", (int)sizeof(un->sun_path),
			 un->sun_path, c->tc.fd);
		return;
	}
	snprintf(c->name, sizeof(c->name), "fd %d", c->tc.fd);
}

/*
 * A connection on tc, which it owns from here on (the caller closes tc
 * when this fails).
 */
struct mc_conn *
mc_cn_new(struct event_base *base, const struct mc_tconn *tc, const struct mc_conn_ops *ops,
	  const struct mc_conn_limits *lim, struct mc_err *err)
{
	struct mc_conn *c;
	int fd = tc->fd, fl;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate a connection");
		return NULL;
	}
	c->base = base;
	c->tc = *tc;
	c->refs = 1;
	c->next_id = 1;
	if (ops != NULL)
		c->ops = *ops;
	mc_cn_limits_norm(&c->lim, lim);
	c->in_max = c->lim.max_msg + IN_SLACK;
	c->in_cap = IN_START_CAP < c->in_max ? IN_START_CAP : c->in_max;
	msgpack_sbuffer_init(&c->cur.reply);
	msgpack_sbuffer_init(&c->scratch);
	msgpack_sbuffer_init(&c->req);
	msgpack_packer_init(&c->req_pk, &c->req, msgpack_sbuffer_write);
	c->cur.conn = c;
	c->egress_wait.wake = on_egress;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		mc_err_errno(err, "cannot make socket non-blocking");
		goto fail;
	}
	c->in = malloc(c->in_cap);
	if (c->in == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate a connection buffer");
		goto fail;
	}
	c->rev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->wev = event_new(base, fd, EV_WRITE, on_write, c);
	if (c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) < 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot register a connection event");
		goto fail;
	}
	conn_name(c);
	return c;
fail:
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->wev != NULL)
		event_free(c->wev);
	free(c->in);
	msgpack_sbuffer_destroy(&c->cur.reply);
	msgpack_sbuffer_destroy(&c->scratch);
	msgpack_sbuffer_destroy(&c->req);
	free(c);
	return NULL;
}

struct mc_conn *
mc_conn_new(struct event_base *base, int fd, const struct mc_conn_ops *ops,
	    const struct mc_conn_limits *lim, struct mc_err *err)
{
	struct mc_tconn tc;

	mc_tconn_wrap(&tc, ops != NULL ? ops->transport : NULL, fd);
	return mc_cn_new(base, &tc, ops, lim, err);
}

struct mc_conn *
mc_conn_connect(struct event_base *base, const struct mc_addr *a, int timeout_ms,
		const struct mc_conn_ops *ops, const struct mc_conn_limits *lim, struct mc_err *err)
{
	const struct mc_transport *t =
		ops != NULL && ops->transport != NULL ? ops->transport : &mc_transport_tcp;
	struct mc_conn *c;
	struct mc_tconn tc;

	mc_tconn_wrap(&tc, t, -1);
	if (t->connect(&tc, a, timeout_ms, MC_TCONNECT_NONBLOCK, err) < 0)
		return NULL;
	c = mc_cn_new(base, &tc, ops, lim, err);
	if (c == NULL)
		tc.t->close(&tc);
	return c;
}
