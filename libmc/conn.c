/*
 * Event-driven msgpack-rpc connections (mc/conn.h).
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
 * full.
 *
 * Limits of accepted connections: one timer per connection serves the
 * header and the idle timeout. Traffic only moves timestamps; the timer
 * checks them when it fires and re-arms itself for what is left, so a
 * busy connection costs no timer operations beyond one when a read pass
 * ends inside a message. The listener counts its connections per
 * address in a hash table.
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
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/conn.h"
#include "mc/fault.h"
#include "mc/hash.h"
#include "mc/log.h"
#include "mc/metrics.h"
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
#define ACCEPT_BURST 64
/*
 * Bytes one flush writes before it yields to the event loop: a reader
 * fast enough never to fill the socket would otherwise keep a writer of
 * a 200 MB reply (a candidate view) in one callback for 100+ ms while
 * every other connection waits.
 */
#define FLUSH_BUDGET (4u << 20)
#define EMFILE_BACKOFF_MS 100
#define REPLY_KEEP (1u << 20) /* keep a reply buffer this big across requests */

enum { BULK_NONE, BULK_RECV, BULK_SKIP };

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

struct call {
	struct call *prev, *next;
	struct mc_conn *conn;
	uint32_t id;
	char method[48];
	int timeout_ms;
	mc_call_cb cb;
	void *arg;
	struct event *timer;
};

struct mc_conn {
	struct event_base *base;
	struct mc_tconn tc;
	struct event *rev, *wev;
	bool wev_on;
	struct mc_conn_ops ops;
	struct mc_conn_limits lim;
	char name[MC_ADDR_MAX + 24];
	int refs;
	bool closed;  /* socket gone, queues released */
	bool closing; /* flushing queued output, then close */
	bool in_read; /* a read pass runs: replies coalesce */
	bool accepted;

	/* server membership */
	struct mc_server *srv;
	struct mc_conn *sprev, *snext;

	/* input */
	char *in;
	size_t in_cap, in_max, in_start, in_end;

	/* the request being handled, and its bulk */
	struct mc_req cur;
	struct mc_req *cur_deferred;
	struct mc_req *held; /* deferred request the connection waits on (mc_req_hold) */
	bool bulk_claimable;
	int bulk_mode;
	struct mc_bulk_sink *bulk_sink;
	struct mc_bulk_sink bulk_mem; /* the sink of mc_req_recv_bulk's memory */
	uint64_t bulk_left, bulk_got;
	mc_bulk_done_fn bulk_done;
	void *bulk_arg;
	struct mc_req *bulk_req;

	/* output */
	struct seg *oh, *ot;
	size_t ooff; /* bytes of oh already written */
	size_t outq;
	size_t last_add; /* size of the newest message queued */
	struct seg *spare_buf, *spare_ref;
	int nspare_buf, nspare_ref;
	msgpack_sbuffer scratch; /* packing calls and notifications */
	/* the call or notification begun (mc_conn_begin): its params */
	msgpack_sbuffer req;
	msgpack_packer req_pk;
	char req_method[48];

	/* calls awaiting a response */
	uint32_t next_id;
	struct call *calls, *calls_tail;

	void *data;
	void (*data_free)(void *);

	/* limits of an accepted connection (limit_ev NULL: no timeout applies) */
	struct event *limit_ev;
	uint64_t msg_ns;	 /* when the message being read began; 0: none is partial */
	uint64_t active_ns;	 /* last traffic, or the end of work in flight */
	uint64_t limit_due_ns;	 /* when the limits' timer fires next */
	uint64_t nparsed;	 /* messages framed so far */
	int ndeferred;		 /* deferred requests not answered yet */
	bool keep;		 /* mc_conn_keep: never idle */
	struct addr_count *addr; /* its address's count on the server, or NULL */
};

/* Open connections from one address: family tag, then the address bytes. */
#define ADDR_KEY_LEN 17
struct addr_count {
	unsigned char key[ADDR_KEY_LEN];
	uint64_t hash;
	int n;
};

struct mc_server {
	struct event_base *base;
	int fd; /* the listening socket */
	struct event *ev, *backoff;
	struct mc_conn_ops ops;
	struct mc_conn_limits lim;
	struct mc_addr addr;
	struct mc_conn *conns;
	int nconns;
	struct mc_htab per_addr; /* struct addr_count, with max_conns_per_addr */
};

static bool
addr_count_eq(const void *entry, const void *key)
{
	return memcmp(((const struct addr_count *)entry)->key, key, ADDR_KEY_LEN) == 0;
}

/*
 * Process-wide counters. A daemon may run several loops in threads, so
 * they are updated with relaxed atomics: totals, not synchronisation.
 */
static struct mc_conn_stats g_stats;

#define STAT_ADD(field, n) __atomic_fetch_add(&g_stats.field, (uint64_t)(n), __ATOMIC_RELAXED)

static void conn_shutdown(struct mc_conn *c);
static int conn_flush(struct mc_conn *c);

void
mc_conn_stats_get(struct mc_conn_stats *out)
{
	out->accepted = __atomic_load_n(&g_stats.accepted, __ATOMIC_RELAXED);
	out->closed = __atomic_load_n(&g_stats.closed, __ATOMIC_RELAXED);
	out->malformed = __atomic_load_n(&g_stats.malformed, __ATOMIC_RELAXED);
	out->bytes_in = __atomic_load_n(&g_stats.bytes_in, __ATOMIC_RELAXED);
	out->bytes_out = __atomic_load_n(&g_stats.bytes_out, __ATOMIC_RELAXED);
	out->header_timeouts = __atomic_load_n(&g_stats.header_timeouts, __ATOMIC_RELAXED);
	out->idle_timeouts = __atomic_load_n(&g_stats.idle_timeouts, __ATOMIC_RELAXED);
	out->refused_per_addr = __atomic_load_n(&g_stats.refused_per_addr, __ATOMIC_RELAXED);
	out->refused_max_conns = __atomic_load_n(&g_stats.refused_max_conns, __ATOMIC_RELAXED);
}

void
mc_conn_stats_export(struct mc_metrics *r)
{
	struct mc_conn_stats st;
	const struct {
		const char *reason;
		const uint64_t *v;
	} rows[] = {
		{ "header_timeout", &st.header_timeouts },
		{ "idle_timeout", &st.idle_timeouts },
		{ "per_addr", &st.refused_per_addr },
		{ "max_conns", &st.refused_max_conns },
	};

	mc_conn_stats_get(&st);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mc_metric *m = mc_metric_get(
			r, "mc_connections_closed_total", MC_COUNTER,
			"Connections closed or refused by a connection limit, by reason.", "reason",
			rows[i].reason);

		if (m != NULL)
			mc_metric_set(m, (double)*rows[i].v);
	}
}

static void
limits_norm(struct mc_conn_limits *out, const struct mc_conn_limits *in)
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

void
mc_conn_limits_daemon(struct mc_conn_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->max_conns = 4096;
	lim->max_conns_per_addr = 1024;
	lim->header_timeout_ms = 10 * 1000;
	lim->idle_timeout_ms = 5 * 60 * 1000;
}

/* ---- lifetime ---- */

static void
conn_ref(struct mc_conn *c)
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

static void
conn_unref(struct mc_conn *c)
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
static int
out_copy(struct mc_conn *c, const void *p, size_t n)
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
		struct seg *s;
		ssize_t w;
		int n = 0;

		/* empty segments at the head (an empty bulk) are done first */
		out_consume(c, 0);
		if (c->oh == NULL || c->closed)
			break;
		for (s = c->oh; s != NULL && n < MC_TWRITE_MAX; s = s->next)
			v[n++] = s->src.kind != MC_BULK_MEM ? s->src
							    : mc_bulk_src_mem(s->data, s->len);
		w = c->tc.t->write(&c->tc, v, n, c->ooff, FLUSH_BUDGET);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				wev_set(c, true);
				return 0;
			}
			mc_debug("closing %s: write: %s", c->name, strerror(errno));
			conn_shutdown(c);
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
		conn_shutdown(c);
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
static void
conn_kick(struct mc_conn *c)
{
	if (c->closed)
		return;
	/* with EV_WRITE armed the socket is full: on_write drains it */
	if ((!c->in_read || c->outq >= COALESCE_MAX) && !c->wev_on && conn_flush(c) < 0)
		return;
	if (c->outq - (c->outq < c->last_add ? c->outq : c->last_add) > c->lim.max_outq) {
		mc_warn("closing %s: output queue over %zu bytes (peer not reading)", c->name,
			c->lim.max_outq);
		conn_shutdown(c);
	}
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	struct mc_conn *c = arg;

	(void)fd;
	(void)what;
	conn_ref(c);
	c->wev_on = false; /* a non-persistent event fired: it is no longer pending */
	conn_flush(c);
	conn_unref(c);
}

/* ---- limits of accepted connections ---- */

/* A limit in ms as nanoseconds, saturating. */
static uint64_t
ms_ns(uint64_t ms)
{
	return ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
}

/* Fire in ns (at most an hour: the check re-arms for what is left). */
static void
limit_arm(struct mc_conn *c, uint64_t ns)
{
	struct timeval tv;

	if (ns > ms_ns(3600 * 1000))
		ns = ms_ns(3600 * 1000);
	c->limit_due_ns = mc_add_sat(mc_mono_ns(), ns);
	tv.tv_sec = (time_t)(ns / 1000000000u);
	tv.tv_usec = (suseconds_t)(ns % 1000000000u / 1000u);
	if (event_add(c->limit_ev, &tv) != 0)
		mc_warn("%s: cannot arm its timeouts", c->name);
}

/* Work in flight that the idle timeout waits for. */
static bool
conn_busy(const struct mc_conn *c)
{
	return c->bulk_mode != BULK_NONE || c->ndeferred > 0 || c->calls != NULL || c->oh != NULL ||
	       c->closing;
}

static void
on_limit(evutil_socket_t fd, short what, void *arg)
{
	struct mc_conn *c = arg;
	uint64_t now = mc_mono_ns(), due;

	(void)fd;
	(void)what;
	if (c->msg_ns != 0 && c->lim.header_timeout_ms > 0) {
		due = mc_add_sat(c->msg_ns, ms_ns(c->lim.header_timeout_ms));
		if (now < due) {
			limit_arm(c, due - now);
			return;
		}
		STAT_ADD(header_timeouts, 1);
		mc_info("closing %s: no whole message %llu ms after %s", c->name,
			(unsigned long long)c->lim.header_timeout_ms,
			c->in_end > c->in_start ? "its first byte" : "connecting");
		conn_shutdown(c);
		return;
	}
	/* a message that begins arms the timer again */
	if (c->lim.idle_timeout_ms == 0 || c->keep)
		return;
	if (conn_busy(c)) {
		limit_arm(c, ms_ns(c->lim.idle_timeout_ms));
		return;
	}
	due = mc_add_sat(c->active_ns, ms_ns(c->lim.idle_timeout_ms));
	if (now < due) {
		limit_arm(c, due - now);
		return;
	}
	STAT_ADD(idle_timeouts, 1);
	mc_debug("closing %s: idle for %llu ms", c->name,
		 (unsigned long long)c->lim.idle_timeout_ms);
	conn_shutdown(c);
}

/*
 * After a read pass: there was traffic, and a message left partial in
 * the buffer starts the header clock, or keeps it running when it is
 * the same message as before.
 */
static void
limit_after_read(struct mc_conn *c, uint64_t parsed_before)
{
	uint64_t now = mc_mono_ns();

	c->active_ns = now;
	if (c->bulk_mode != BULK_NONE || c->held != NULL || c->in_end == c->in_start) {
		/*
		 * The header clock stops; the timer it armed may be due long
		 * after the idle timeout (a new connection's is), so it is
		 * brought forward to it.
		 */
		if (c->msg_ns != 0 && c->lim.idle_timeout_ms > 0 && !c->keep &&
		    c->limit_due_ns > mc_add_sat(now, ms_ns(c->lim.idle_timeout_ms)))
			limit_arm(c, ms_ns(c->lim.idle_timeout_ms));
		c->msg_ns = 0;
		return;
	}
	if (c->msg_ns != 0 && c->nparsed == parsed_before)
		return;
	c->msg_ns = now;
	if (c->lim.header_timeout_ms > 0)
		limit_arm(c, ms_ns(c->lim.header_timeout_ms));
}

/* The connection was just accepted: its first message is due, or it idles. */
static int
limit_start(struct mc_conn *c)
{
	uint64_t first;

	if (c->lim.header_timeout_ms == 0 && c->lim.idle_timeout_ms == 0)
		return 0;
	c->limit_ev = evtimer_new(c->base, on_limit, c);
	if (c->limit_ev == NULL)
		return -1;
	c->active_ns = mc_mono_ns();
	c->msg_ns = c->lim.header_timeout_ms > 0 ? c->active_ns : 0;
	first = c->msg_ns != 0 ? c->lim.header_timeout_ms : c->lim.idle_timeout_ms;
	limit_arm(c, ms_ns(first));
	return 0;
}

/* The key of a client's address: all unix clients share one (all zero). */
static void
addr_key(const struct sockaddr_storage *ss, unsigned char key[ADDR_KEY_LEN])
{
	memset(key, 0, ADDR_KEY_LEN);
	if (ss->ss_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			key[0] = 4;
			memcpy(key + 1, a6->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a6->s6_addr, 16);
		}
	}
}

/* ---- closing ---- */

static void
server_unlink(struct mc_conn *c)
{
	struct mc_server *s = c->srv;

	if (s == NULL)
		return;
	if (c->sprev != NULL)
		c->sprev->snext = c->snext;
	else
		s->conns = c->snext;
	if (c->snext != NULL)
		c->snext->sprev = c->sprev;
	c->sprev = c->snext = NULL;
	c->srv = NULL;
	s->nconns--;
	if (c->addr != NULL && --c->addr->n == 0) {
		mc_htab_remove(&s->per_addr, c->addr->hash, addr_count_eq, c->addr->key);
		free(c->addr);
	}
	c->addr = NULL;
}

static void
call_free(struct call *k)
{
	if (k->timer != NULL)
		event_free(k->timer);
	free(k);
}

static void
call_unlink(struct mc_conn *c, struct call *k)
{
	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		c->calls = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	else
		c->calls_tail = k->prev;
	k->prev = k->next = NULL;
}

/*
 * Close the socket and settle every obligation exactly once: queued
 * release callbacks, a bulk in progress, pending calls, on_close. The
 * memory goes when the last reference does.
 */
static void
conn_shutdown(struct mc_conn *c)
{
	struct mc_err err;

	if (c->closed)
		return;
	conn_ref(c);
	c->closed = true;
	c->closing = false;
	event_free(c->rev);
	event_free(c->wev);
	c->rev = c->wev = NULL;
	if (c->limit_ev != NULL)
		event_free(c->limit_ev);
	c->limit_ev = NULL;
	c->wev_on = false;
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
	while (c->calls != NULL) {
		struct call *k = c->calls;

		call_unlink(c, k);
		mc_err_set(&err, MC_ERR_UNAVAILABLE, "connection to %s closed", c->name);
		k->cb(c, NULL, &err, k->arg);
		call_free(k);
	}
	if (c->ops.on_close != NULL)
		c->ops.on_close(c, c->ops.ctx);
	server_unlink(c);
	conn_unref(c); /* the one the open socket held */
	conn_unref(c);
}

void
mc_conn_close(struct mc_conn *c, bool flush)
{
	if (c == NULL || c->closed)
		return;
	conn_ref(c);
	if (flush && c->oh != NULL) {
		c->closing = true;
		event_del(c->rev);
		if (!c->in_read && !c->wev_on)
			conn_flush(c);
	} else {
		conn_shutdown(c);
	}
	conn_unref(c);
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

/* The held request was answered: read again, starting with what is buffered. */
static void
unhold(struct mc_conn *c)
{
	c->held = NULL;
	if (c->closed || c->closing)
		return;
	if (event_add(c->rev, NULL) != 0) {
		mc_warn("closing %s: cannot watch it for input again", c->name);
		conn_shutdown(c);
		return;
	}
	/* Whole messages may wait in the buffer: on_read parses them. */
	event_active(c->rev, EV_READ, 0);
}

/* ---- the method registry ---- */

/* One entry's counters (NULL series when the registry has no metrics). */
struct mc_method_stats {
	struct mc_metric *requests, *failures, *seconds, *denied;
};

struct reg_entry {
	const struct mc_method *m;
	size_t len;
	struct mc_method_stats st;
};

struct mc_registry {
	struct mc_metrics *metrics;
	struct reg_entry *v;
	size_t n, cap;
};

struct mc_registry *
mc_registry_new(struct mc_metrics *metrics, struct mc_err *err)
{
	struct mc_registry *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for the method registry");
		return NULL;
	}
	r->metrics = metrics;
	return r;
}

int
mc_registry_add(struct mc_registry *r, const struct mc_method *table, struct mc_err *err)
{
	for (const struct mc_method *m = table; m->name != NULL; m++) {
		struct reg_entry *e;

		if (mc_registry_find(r, m->name, strlen(m->name)) != NULL)
			return mc_err_set(err, MC_ERR_INTERNAL, "method '%s' registered twice",
					  m->name);
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 32;
			struct reg_entry *v = realloc(r->v, cap * sizeof(*v));

			if (v == NULL)
				return mc_err_set(err, MC_ERR_NO_SPACE,
						  "out of memory for the method registry");
			r->v = v;
			r->cap = cap;
		}
		e = &r->v[r->n];
		*e = (struct reg_entry){ .m = m, .len = strlen(m->name) };
		if (r->metrics != NULL) {
			e->st.requests =
				mc_metric_get(r->metrics, "mc_requests_total", MC_COUNTER,
					      "Requests received, by method.", "method", m->name);
			e->st.failures = mc_metric_get(
				r->metrics, "mc_request_failures_total", MC_COUNTER,
				"Requests answered with an error, by method.", "method", m->name);
			e->st.seconds = mc_metric_get(
				r->metrics, "mc_request_seconds", MC_HISTOGRAM,
				"Time from a request's arrival to its answer, by method.", "method",
				m->name);
			e->st.denied =
				mc_metric_get(r->metrics, "mc_requests_denied_total", MC_COUNTER,
					      "Requests refused for the caller's role, by method.",
					      "method", m->name);
			if (e->st.requests == NULL || e->st.failures == NULL ||
			    e->st.seconds == NULL || e->st.denied == NULL)
				return mc_err_set(err, MC_ERR_NO_SPACE,
						  "out of memory for the method metrics");
		}
		r->n++;
	}
	return 0;
}

void
mc_registry_free(struct mc_registry *r)
{
	if (r == NULL)
		return;
	free(r->v);
	free(r);
}

static const struct reg_entry *
registry_entry(const struct mc_registry *r, const char *name, size_t len)
{
	/* tens of methods: a scan of lengths first is as quick as a hash */
	for (size_t i = 0; r != NULL && i < r->n; i++)
		if (r->v[i].len == len && memcmp(r->v[i].m->name, name, len) == 0)
			return &r->v[i];
	return NULL;
}

const struct mc_method *
mc_registry_find(const struct mc_registry *r, const char *name, size_t len)
{
	const struct reg_entry *e = registry_entry(r, name, len);

	return e != NULL ? e->m : NULL;
}

bool
mc_registry_serves(const struct mc_registry *r, const char *name)
{
	return mc_registry_find(r, name, strlen(name)) != NULL && !mc_fault2_always("method", name);
}

size_t
mc_registry_count(const struct mc_registry *r)
{
	return r != NULL ? r->n : 0;
}

const struct mc_method *
mc_registry_at(const struct mc_registry *r, size_t i)
{
	return r != NULL && i < r->n ? r->v[i].m : NULL;
}

const char *
mc_method_flags_str(unsigned flags, char *buf, size_t cap)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{ MC_METHOD_ADMIN, "admin" }, { MC_METHOD_PEER, "peer" },
		{ MC_METHOD_BULK, "bulk" },   { MC_METHOD_READ_ONLY, "read-only" },
		{ MC_METHOD_OPEN, "open" },
	};
	size_t len = 0;

	if (cap == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit)
			len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s",
						len ? "," : "", names[i].name);
	return buf;
}

void
mc_registry_print(const struct mc_registry *r, FILE *f)
{
	char flags[64];

	for (size_t i = 0; i < mc_registry_count(r); i++) {
		const struct mc_method *m = mc_registry_at(r, i);

		if (!mc_registry_serves(r, m->name))
			continue;
		mc_method_flags_str(m->flags, flags, sizeof(flags));
		fprintf(f, "%s %s\n", m->name, flags[0] ? flags : "-");
	}
}

/* Count an answer (or a notification handled): failed when it was an error. */
static void
count_answer(struct mc_req *req, bool failed)
{
	const struct mc_method_stats *st = req->stats_;

	if (st == NULL || st->requests == NULL)
		return;
	if (failed)
		mc_metric_inc(st->failures);
	mc_metric_observe(st->seconds, (double)(mc_mono_ns() - req->t0_ns_) / 1e9);
	req->stats_ = NULL; /* once */
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
		count_answer(req, failed);
	conn_ref(c);
	if (req->replied) {
		mc_warn("%s: second reply to request %u dropped", c->name, req->id);
	} else if (!req->notify && !c->closed && !c->closing && req->method != NULL &&
		   mc_fault2("reply", req->method->name)) {
		/* The work is done, its answer lost with the connection. */
		mc_warn("fault injected: %s reply on %s lost", req->method->name, c->name);
		conn_shutdown(c);
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
			rc = out_copy(c, req->reply.data, req->reply.size);
		}
		if (rc == 0 && release != NULL) {
			rc = out_src(c, bulk, release, arg);
			sent = rc == 0;
		} else if (rc == 0 && blen > 0) {
			rc = out_src(c, bulk, NULL, NULL);
		}
		if (rc < 0) {
			mc_warn("closing %s: out of memory queueing a reply", c->name);
			conn_shutdown(c);
		} else {
			conn_kick(c);
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
			if (c->bulk_mode == BULK_RECV)
				c->bulk_mode = BULK_SKIP;
		}
		if (c->cur_deferred == req)
			c->cur_deferred = NULL;
		if (c->held == req)
			unhold(c);
		c->ndeferred--;
		if (c->limit_ev != NULL)
			c->active_ns = mc_mono_ns();
		msgpack_sbuffer_destroy(&req->reply);
		free(req);
		conn_unref(c); /* the deferred request's */
	} else if (req->reply.alloc > REPLY_KEEP) {
		msgpack_sbuffer_destroy(&req->reply);
		msgpack_sbuffer_init(&req->reply);
	}
	conn_unref(c);
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
	conn_ref(c);
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

	if (c->closed || !c->bulk_claimable || !req->has_bulk || sink->len != req->bulk_len)
		return -1;
	if (req != &c->cur && req != c->cur_deferred)
		return -1;
	c->bulk_claimable = false;
	c->bulk_mode = BULK_RECV;
	c->bulk_sink = sink;
	c->bulk_left = req->bulk_len;
	c->bulk_got = 0;
	c->bulk_done = done;
	c->bulk_arg = arg;
	c->bulk_req = req;
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
	conn_shutdown(c);
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
			conn_shutdown(c);
			return -1;
		}
		if (n == 0) {
			mc_debug("closing %s: end of stream inside a bulk payload", c->name);
			conn_shutdown(c);
			return -1;
		}
		STAT_ADD(bytes_in, n);
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
	conn_shutdown(c);
}

static void
on_response(struct mc_conn *c, const struct mc_msg *m)
{
	struct call *k;

	for (k = c->calls; k != NULL; k = k->next)
		if (k->id == m->id)
			break;
	if (k == NULL) {
		mc_debug("%s: ignoring response to unknown call %u", c->name, m->id);
		return;
	}
	call_unlink(c, k);
	k->cb(c, m, NULL, k->arg);
	call_free(k);
}

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
}

/*
 * Ask the daemon whether the caller may make this call; a refusal is
 * answered here, as permission denied, and counted per method.
 */
static bool
authorized(struct mc_req *r, const struct mc_conn_ops *ops)
{
	struct mc_err err;

	if (ops->authorize(r, &err) == 0)
		return true;
	if (r->stats_ != NULL && r->stats_->denied != NULL)
		mc_metric_inc(r->stats_->denied);
	if (!r->notify)
		mc_reply_err(r, MC_ERR_PERMISSION, "permission denied: %s", err.msg);
	return false;
}

static void
dispatch(struct mc_conn *c, const struct mc_msg *m)
{
	struct mc_req *r = &c->cur;
	const struct reg_entry *entry;
	mc_handler_fn fn;

	if (m->type == MC_MSG_RESPONSE) {
		on_response(c, m);
		/* calls have no way to claim a bulk: it is dropped */
		if (!c->closed && m->has_bulk)
			begin_skip(c, m->bulk_len);
		return;
	}
	if (m->has_bulk && m->bulk_len > c->lim.max_bulk) {
		mc_warn("closing %s: bulk of %llu bytes over the limit of %llu", c->name,
			(unsigned long long)m->bulk_len, (unsigned long long)c->lim.max_bulk);
		conn_shutdown(c);
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

	entry = registry_entry(c->ops.methods, m->method, m->method_len);
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
	if (entry != NULL && c->ops.authorize != NULL && !authorized(r, &c->ops)) {
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
		count_answer(r, false);
	if (c->closed)
		return;
	if (c->bulk_mode == BULK_RECV) {
		if (bulk_take_buffered(c) == 0 && c->bulk_left == 0)
			bulk_finish(c);
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
			conn_shutdown(c);
			return -1;
		}
		c->in = p;
		c->in_cap = ncap;
		return 0;
	}
	STAT_ADD(malformed, 1);
	mc_warn("closing %s: malformed message: over %zu bytes", c->name, c->lim.max_msg);
	conn_shutdown(c);
	return -1;
}

static void
conn_read(struct mc_conn *c)
{
	struct mc_bulk_sink in;
	ssize_t n;

	if (c->bulk_mode != BULK_NONE) {
		/* the buffer was empty when the bulk took over the stream */
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
		conn_shutdown(c);
		return;
	}
	if (n == 0) {
		if (c->in_end > c->in_start)
			mc_debug("closing %s: end of stream inside a message", c->name);
		conn_shutdown(c);
		return;
	}
	STAT_ADD(bytes_in, n);
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
	/* A held connection reads nothing: its input waits in the socket. */
	if (c->held != NULL)
		return;
	conn_ref(c);
	c->in_read = true;
	parsed = c->nparsed;
	conn_read(c);
	/* a bulk that completed may leave whole messages behind it */
	if (!c->closed && c->bulk_mode == BULK_NONE)
		conn_parse(c);
	c->in_read = false;
	if (!c->closed)
		conn_kick(c);
	if (!c->closed && c->limit_ev != NULL)
		limit_after_read(c, parsed);
	conn_unref(c);
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
static struct mc_conn *
conn_new(struct event_base *base, const struct mc_tconn *tc, const struct mc_conn_ops *ops,
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
	limits_norm(&c->lim, lim);
	c->in_max = c->lim.max_msg + IN_SLACK;
	c->in_cap = IN_START_CAP < c->in_max ? IN_START_CAP : c->in_max;
	msgpack_sbuffer_init(&c->cur.reply);
	msgpack_sbuffer_init(&c->scratch);
	msgpack_sbuffer_init(&c->req);
	msgpack_packer_init(&c->req_pk, &c->req, msgpack_sbuffer_write);
	c->cur.conn = c;
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
	return conn_new(base, &tc, ops, lim, err);
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
	c = conn_new(base, &tc, ops, lim, err);
	if (c == NULL)
		tc.t->close(&tc);
	return c;
}

/* ---- outgoing calls ---- */

static void
on_call_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct call *k = arg;
	struct mc_conn *c = k->conn;
	struct mc_err err;

	(void)fd;
	(void)what;
	conn_ref(c);
	call_unlink(c, k);
	mc_err_set(&err, MC_ERR_TIMEOUT, "call '%s' to %s timed out after %d ms", k->method,
		   c->name, k->timeout_ms);
	k->cb(c, NULL, &err, k->arg);
	call_free(k);
	conn_unref(c);
}

msgpack_packer *
mc_conn_begin(struct mc_conn *c, const char *method)
{
	msgpack_sbuffer_clear(&c->req);
	snprintf(c->req_method, sizeof(c->req_method), "%s", method);
	return &c->req_pk;
}

/* The header [type, (id,) method], then the params begun, queued. */
static int
queue_begun(struct mc_conn *c, uint32_t id, bool notify)
{
	msgpack_packer pk;

	if (c->req_method[0] == '\0')
		return -1;
	msgpack_sbuffer_clear(&c->scratch);
	c->last_add = 0;
	msgpack_packer_init(&pk, &c->scratch, msgpack_sbuffer_write);
	if (notify)
		mc_pack_notify(&pk, c->req_method);
	else
		mc_pack_request(&pk, id, c->req_method);
	if (c->req.size == 0)
		msgpack_pack_map(&pk, 0);
	else if (msgpack_sbuffer_write(&c->scratch, c->req.data, c->req.size) != 0)
		return -1;
	c->req_method[0] = '\0'; /* sent: the next call begins again */
	c->last_add = c->scratch.size;
	return out_copy(c, c->scratch.data, c->scratch.size);
}

int
mc_conn_call(struct mc_conn *c, int timeout_ms, mc_call_cb cb, void *cb_arg)
{
	struct call *k;

	if (c == NULL || c->closed || c->closing || cb == NULL)
		return -1;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -1;
	k->conn = c;
	k->id = c->next_id++;
	if (c->next_id == 0)
		c->next_id = 1;
	snprintf(k->method, sizeof(k->method), "%s", c->req_method);
	k->timeout_ms = timeout_ms;
	k->cb = cb;
	k->arg = cb_arg;
	if (timeout_ms > 0) {
		struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

		k->timer = evtimer_new(c->base, on_call_timeout, k);
		if (k->timer == NULL || evtimer_add(k->timer, &tv) < 0) {
			call_free(k);
			return -1;
		}
	}
	if (queue_begun(c, k->id, false) < 0) {
		call_free(k);
		return -1;
	}
	k->prev = c->calls_tail;
	if (c->calls_tail != NULL)
		c->calls_tail->next = k;
	else
		c->calls = k;
	c->calls_tail = k;
	conn_ref(c);
	conn_kick(c);
	conn_unref(c);
	return 0;
}

int
mc_conn_notify(struct mc_conn *c)
{
	if (c == NULL || c->closed || c->closing)
		return -1;
	if (queue_begun(c, 0, true) < 0)
		return -1;
	conn_ref(c);
	conn_kick(c);
	conn_unref(c);
	return 0;
}

/* ---- servers ---- */

static void
on_backoff(evutil_socket_t fd, short what, void *arg)
{
	struct mc_server *s = arg;

	(void)fd;
	(void)what;
	event_add(s->ev, NULL);
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct mc_server *s = arg;
	const struct mc_transport *t =
		s->ops.transport != NULL ? s->ops.transport : &mc_transport_tcp;
	int i;

	(void)what;
	for (i = 0; i < ACCEPT_BURST; i++) {
		unsigned char key[ADDR_KEY_LEN];
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);
		struct addr_count *ac = NULL;
		struct mc_conn *c;
		struct mc_tconn tc;
		struct mc_err e;
		uint64_t h = 0;

		memset(&ss, 0, sizeof(ss));
		mc_tconn_wrap(&tc, t, -1);
		if (t->accept(&tc, lfd, &ss, &sslen) < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/*
				 * The pending connection stays in the backlog and
				 * keeps the listener readable: stop listening for
				 * a moment instead of spinning on it.
				 */
				struct timeval tv = { 0, EMFILE_BACKOFF_MS * 1000 };

				mc_warn("cannot accept on %s: %s; pausing %d ms", s->addr.text,
					strerror(errno), EMFILE_BACKOFF_MS);
				event_del(s->ev);
				evtimer_add(s->backoff, &tv);
				return;
			}
			mc_warn("cannot accept on %s: %s", s->addr.text, strerror(errno));
			return;
		}
		if (s->nconns >= s->lim.max_conns) {
			STAT_ADD(refused_max_conns, 1);
			mc_warn("refusing a connection on %s: %d connections open", s->addr.text,
				s->nconns);
			tc.t->close(&tc);
			continue;
		}
		if (s->lim.max_conns_per_addr > 0) {
			addr_key(&ss, key);
			h = mc_hash64(key, sizeof(key), 0);
			ac = mc_htab_find(&s->per_addr, h, addr_count_eq, key);
			if (ac != NULL && ac->n >= s->lim.max_conns_per_addr) {
				STAT_ADD(refused_per_addr, 1);
				mc_warn("refusing a connection on %s: %d connections open from its "
					"address",
					s->addr.text, ac->n);
				tc.t->close(&tc);
				continue;
			}
		}
		c = conn_new(s->base, &tc, &s->ops, &s->lim, &e);
		if (c == NULL) {
			mc_warn("cannot serve a connection on %s: %s", s->addr.text, e.msg);
			tc.t->close(&tc);
			continue;
		}
		if (limit_start(c) < 0) {
			mc_warn("cannot serve a connection on %s: cannot arm its timeouts",
				s->addr.text);
			mc_conn_close(c, false);
			continue;
		}
		if (s->lim.max_conns_per_addr > 0 && ac == NULL) {
			ac = calloc(1, sizeof(*ac));
			if (ac == NULL || mc_htab_insert(&s->per_addr, h, ac) < 0) {
				free(ac);
				mc_warn("cannot serve a connection on %s: out of memory",
					s->addr.text);
				mc_conn_close(c, false);
				continue;
			}
			memcpy(ac->key, key, sizeof(key));
			ac->hash = h;
		}
		if (ac != NULL)
			ac->n++;
		c->addr = ac;
		c->accepted = true;
		c->srv = s;
		c->snext = s->conns;
		if (s->conns != NULL)
			s->conns->sprev = c;
		s->conns = c;
		s->nconns++;
		STAT_ADD(accepted, 1);
		mc_debug("accepted %s on %s", c->name, s->addr.text);
	}
}

struct mc_server *
mc_server_new(struct event_base *base, const struct mc_addr *addr, const struct mc_conn_ops *ops,
	      const struct mc_conn_limits *lim, struct mc_addr *bound, struct mc_err *err)
{
	struct mc_server *s;

	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate a server");
		return NULL;
	}
	s->base = base;
	s->fd = -1;
	if (ops != NULL)
		s->ops = *ops;
	limits_norm(&s->lim, lim);
	mc_htab_init(&s->per_addr);
	s->fd = mc_addr_listen(addr, 1024, &s->addr, err);
	if (s->fd < 0)
		goto fail;
	s->ev = event_new(base, s->fd, EV_READ | EV_PERSIST, on_accept, s);
	s->backoff = evtimer_new(base, on_backoff, s);
	if (s->ev == NULL || s->backoff == NULL || event_add(s->ev, NULL) < 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot register the listener on %s", addr->text);
		goto fail;
	}
	if (bound != NULL)
		*bound = s->addr;
	return s;
fail:
	if (s->ev != NULL)
		event_free(s->ev);
	if (s->backoff != NULL)
		event_free(s->backoff);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return NULL;
}

void
mc_server_free(struct mc_server *s)
{
	if (s == NULL)
		return;
	event_free(s->ev);
	event_free(s->backoff);
	close(s->fd);
	if (s->addr.is_unix) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&s->addr.ss;

		if (un->sun_path[0] != '\0')
			unlink(un->sun_path);
	}
	while (s->conns != NULL)
		conn_shutdown(s->conns);
	mc_htab_free(&s->per_addr);
	free(s);
}

int
mc_server_conn_count(const struct mc_server *s)
{
	return s->nconns;
}
