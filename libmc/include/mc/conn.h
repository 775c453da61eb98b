/*
 * Event-driven msgpack-rpc connections on libevent, for the daemons.
 *
 * One mc_conn wraps one socket on one event_base. It reads into its own
 * buffer, frames messages with mc_wire_check(), and hands each decoded
 * message to the server's handler table (requests, notifications) or to
 * the callback of the call it answers (responses). A malformed or
 * oversized message closes that connection, logging why; nothing else
 * is affected.
 *
 * Bulk payloads never pass through an intermediate buffer when they can
 * be avoided: a handler that receives a request with a bulk calls
 * mc_req_recv_bulk() to have the bytes land at its own destination
 * (bytes already read ahead are copied once, the rest is read in
 * place), or mc_req_recv_bulk_to() for any sink of mc/bulk.h; a bulk it
 * does not claim is discarded. Outgoing bulks are queued by reference
 * and written straight from the caller's memory, or from a file
 * descriptor's range or a registered region (mc_reply_end_src), which
 * must stay valid until its release callback runs. The bytes move
 * through the connection's transport (mc/transport.h), tcp unless its
 * ops name another, and as fast as the socket takes them unless its ops
 * name a token bucket to draw from (mc/rate.h).
 *
 * Every connection is capped: input message size, queued output bytes
 * (over the cap the connection is closed as a slow reader), and the
 * listener caps open connections, in all and from one address. An
 * accepted connection is also closed when a message's header stalls
 * (the header timeout) or when nothing is in flight on it for long (the
 * idle timeout); both run on the monotonic clock.
 */
#ifndef MC_CONN_H
#define MC_CONN_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mc/addr.h"
#include "mc/bulk.h"
#include "mc/err.h"
#include "mc/wire.h"

struct mc_conn;
struct mc_server;
struct mc_metrics;
struct mc_method;
struct mc_method_stats;
struct mc_rate;

/* A request (or notification: req->notify) being handled. */
struct mc_req {
	struct mc_conn *conn;
	void *ctx; /* the server's (or conn's) user context */
	uint32_t id;
	bool notify;		      /* no response expected */
	const struct mc_msg *msg;     /* valid during the handler call only */
	const msgpack_object *params; /* map (possibly empty), == msg->body */
	bool has_bulk;
	uint64_t bulk_len;
	const struct mc_method *method; /* its registry entry (NULL: the fallback) */
	/* private: the entry's counters, when the request began, the response in construction */
	const struct mc_method_stats *stats_;
	uint64_t t0_ns_;
	msgpack_sbuffer reply;
	msgpack_packer pk;
	bool replied;
};

typedef void (*mc_handler_fn)(struct mc_req *req);

/*
 * What a method is, declared beside its handler: where a daemon checks
 * who may call it (authorization reads these, handlers never do), and
 * what mc-wire(5) documents.
 */
enum mc_method_flags {
	/* an operator's call: cluster state or every tenant's data, not one tenant's objects */
	MC_METHOD_ADMIN = 1u << 0,
	/* served to the other daemon of the cluster only: peers on the master, the master on a peer */
	MC_METHOD_PEER = 1u << 1,
	/* the request or its answer carries bulk bytes after the header */
	MC_METHOD_BULK = 1u << 2,
	/* changes no stored state (a read's lease, or its release, is the reader's own) */
	MC_METHOD_READ_ONLY = 1u << 3,
	/* callable before the connection has a role: how it gets one */
	MC_METHOD_OPEN = 1u << 4,
};

struct mc_method {
	const char *name;
	mc_handler_fn fn;
	unsigned flags; /* enum mc_method_flags */
};

/*
 * A daemon's methods: its tables (each NULL-name-terminated, one per
 * module), found by name at dispatch. With metrics, the dispatcher
 * counts every entry's requests, error answers and time to answer as
 * mc_requests_total{method}, mc_request_failures_total{method} and
 * mc_request_seconds{method}, and the calls the daemon's authorize
 * hook refused as mc_requests_denied_total{method}; a deferred request keeps its entry, so
 * its reply is counted when it goes. Handlers count nothing themselves.
 */
struct mc_registry;
struct mc_registry *mc_registry_new(struct mc_metrics *metrics, struct mc_err *err);
/* Add a table (kept by reference); -1 with err on a name already registered. */
int mc_registry_add(struct mc_registry *r, const struct mc_method *table, struct mc_err *err);
void mc_registry_free(struct mc_registry *r);
const struct mc_method *mc_registry_find(const struct mc_registry *r, const char *name, size_t len);
/*
 * Whether r serves name: registered, and not taken out by the fault
 * point method.NAME set to always (mc-fault(7)), under which the
 * dispatcher answers every request for name as for a name it does not
 * know. What a daemon advertises about its methods is asked here.
 */
bool mc_registry_serves(const struct mc_registry *r, const char *name);
/* Entries in the order added, for listings (--list-methods). */
size_t mc_registry_count(const struct mc_registry *r);
const struct mc_method *mc_registry_at(const struct mc_registry *r, size_t i);
/* "admin,peer,bulk,read-only" for flags (empty for none), into buf. */
const char *mc_method_flags_str(unsigned flags, char *buf, size_t cap);
/* A daemon's --list-methods: "NAME FLAGS" a line ("-" for no flags), of those it serves. */
void mc_registry_print(const struct mc_registry *r, FILE *f);

/*
 * Bulk bytes of one message unless a daemon sets less: also the largest
 * object a client can write to a peer.
 */
#define MC_CONN_MAX_BULK ((uint64_t)1 << 40)

/*
 * The most of a refused request's body an accepted connection reads and
 * discards to stay in step; a longer one closes the connection once the
 * refusal is sent. A client learns of a refusal from the master before
 * it sends a body this big, so only a caller that ignores it pays.
 */
#define MC_CONN_MAX_DRAIN ((uint64_t)1 << 20)

struct mc_conn_limits {
	size_t max_msg;	   /* msgpack bytes of one message; 0 = MC_WIRE_DEFAULT_MAX_MSG */
	uint64_t max_bulk; /* bulk bytes of one message; 0 = MC_CONN_MAX_BULK */
	size_t max_outq;   /* queued output bytes before closing; 0 = 256 MiB */
	int max_conns;	   /* listener: open connections; 0 = 4096 */
	/* listener: open connections from one IP address, every unix client being one; 0 = no cap */
	int max_conns_per_addr;
	/*
	 * Accepted connections, in ms, 0 = none. header_timeout: a message's
	 * header (everything before its bulk) must be whole this long after
	 * its first byte arrived, and the first one this long after the
	 * accept. idle_timeout: closed after this long with nothing in
	 * flight: no message being read, no bulk either way, no deferred
	 * request, no call awaiting its answer, no output queued.
	 */
	uint64_t header_timeout_ms;
	uint64_t idle_timeout_ms;
	/*
	 * Accepted connections, in ms, 0 = none: closed this long after the
	 * accept unless the daemon vouched for them first (mc_conn_vouch:
	 * a hello that authenticated), so that connections that never
	 * prove who they are hold nothing for long.
	 */
	uint64_t hello_timeout_ms;
	/*
	 * listener, with hello_timeout_ms: connections not yet vouched for
	 * at most; one more sheds the oldest of them, as does a connection
	 * past max_conns while any is open, so that a flood of strangers
	 * takes no slot from those who proved who they are. One whose
	 * request waits unread is passed over for an older-to-newer one
	 * that has said nothing the loop did not read (among the 16
	 * oldest), as that request may vouch for it. 0 = no cap.
	 */
	int max_unvouched;
	/*
	 * Accepted connections: a bulk body being read (or skipped) must
	 * bring at least this many bytes a second, judged over each
	 * MC_BULK_RATE_WINDOW_MS while it lasts, or the connection is
	 * closed; 0 = no floor. A body declared huge and sent a byte at a
	 * time would otherwise hold its connection (and what it reserved)
	 * past every other timeout.
	 */
	uint64_t min_bulk_rate;
};

#define MC_BULK_RATE_WINDOW_MS 5000
/* The daemons' default --min-bulk-rate: far below any real link. */
#define MC_MIN_BULK_RATE (64u * 1024)

/*
 * What a daemon's listener starts from before its options: 4096
 * connections, a quarter of them from one address at most, 256 not yet
 * vouched for (where a hello timeout applies), bulk bodies at 64 KiB/s
 * at least, a 10 s
 * header timeout and a 5 min idle timeout (its control links, kept by
 * heartbeats, are exempt: mc_conn_keep).
 */
void mc_conn_limits_daemon(struct mc_conn_limits *lim);

/*
 * The daemons' default --hello-timeout: a client says hello as soon as
 * it connects, in well under a round trip's worth of milliseconds; two
 * seconds spare a loaded machine and free a refused flood fast.
 */
#define MC_HELLO_TIMEOUT_MS 2000

/*
 * Replying. Exactly one reply per request (none for notifications).
 * mc_reply_ok_begin() returns a packer positioned where the result map
 * goes: the handler packs one map (msgpack_pack_map(pk, n) then n
 * pairs) and calls mc_reply_end(). A reply may be sent after the handler
 * returned only if the handler called mc_req_defer() (which copies what
 * the reply needs); see mc_req_defer.
 */
msgpack_packer *mc_reply_ok_begin(struct mc_req *req);
void mc_reply_end(struct mc_req *req);
/* Like mc_reply_end, but the result map carried "len": data follows by reference. */
void mc_reply_end_bulk(struct mc_req *req, const void *data, size_t len, void (*release)(void *arg),
		       void *arg);
/*
 * mc_reply_end_bulk with the bulk from a source (mc/bulk.h), e.g. a
 * copy kept in a file:
 *
 *	struct mc_bulk_src src = mc_bulk_src_fd(fd, off, len);
 *
 *	mc_pack_kv_u64(pk, "len", len);	(in the result map)
 *	mc_reply_end_src(req, &src, release, arg);
 *
 * The range [off, off + len) of fd is sent (over tcp with sendfile) when its turn
 * in the output queue comes, straight from the page cache. fd must stay
 * open and the range unchanged until release(arg) runs, exactly once:
 * after the last byte went, or when the connection closed first
 * (release, not the connection, closes fd if it has to be closed). A
 * file that turns out shorter than len closes the connection: the
 * client was promised len bytes.
 */
void mc_reply_end_src(struct mc_req *req, const struct mc_bulk_src *src, void (*release)(void *arg),
		      void *arg);
/* Reply {} (empty result map). */
void mc_reply_ok_empty(struct mc_req *req);
void mc_reply_err(struct mc_req *req, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Reply with an mc_err's code and message. */
void mc_reply_mc_err(struct mc_req *req, const struct mc_err *err);

/*
 * Receive the request's bulk into dest (req->bulk_len bytes). done runs
 * on the event loop once all bytes are in place (ok == true), or with
 * ok == false if the connection failed first. Until then the connection
 * reads nothing else. The handler may reply inside done; to do so it
 * must have called mc_req_defer() and use the returned request.
 */
typedef void (*mc_bulk_done_fn)(struct mc_req *req, bool ok, void *arg);
int mc_req_recv_bulk(struct mc_req *req, void *dest, mc_bulk_done_fn done, void *arg);
/*
 * mc_req_recv_bulk into a sink (mc/bulk.h) of exactly req->bulk_len
 * bytes, which must stay valid until done runs (the caller releases it
 * then). A sink that cannot store its bytes closes the connection: done
 * runs with ok == false.
 */
int mc_req_recv_bulk_to(struct mc_req *req, struct mc_bulk_sink *sink, mc_bulk_done_fn done,
			void *arg);

/*
 * Keep a request alive past its handler (for an asynchronous reply).
 * Returns a heap copy (params and msg are NULL in it); reply through it
 * with the mc_reply_* calls, which free it once the reply is sent. If
 * the connection closes first, the reply is dropped silently.
 */
struct mc_req *mc_req_defer(struct mc_req *req);
/*
 * Hold the connection on a deferred request: it reads and dispatches
 * nothing more until that request is answered, so the replies of a
 * client that pipelines stay in request order while one of them waits.
 * Held from its handler, a request with a bulk it did not claim there
 * keeps the bulk in the stream: it may claim it later (mc_req_recv_bulk
 * or _to, on the deferred request), or answer without it, which
 * discards it. -1 when req is not deferred, already answered, or
 * another is held.
 */
int mc_req_hold(struct mc_req *req);

/* ---- connections ---- */

struct mc_transport;

struct mc_conn_ops {
	const struct mc_registry *methods; /* what the connection serves; NULL: nothing */
	/*
	 * How its bytes move (mc/transport.h), for every connection made
	 * with these ops: accepted, connected or wrapped; NULL: tcp.
	 */
	const struct mc_transport *transport;
	void *ctx; /* passed as req->ctx */
	/* Optional: called once when the connection closes, before it is freed. */
	void (*on_close)(struct mc_conn *c, void *ctx);
	/* Optional: a notification/request whose method is not in the table. */
	mc_handler_fn fallback;
	/*
	 * Optional: may the caller make this call (req->method, never NULL
	 * here)? 0 yes; -1 with err saying why not, and the dispatcher
	 * answers MC_ERR_PERMISSION ("permission denied: why") and counts
	 * mc_requests_denied_total{method} instead of calling the handler.
	 */
	int (*authorize)(struct mc_req *req, struct mc_err *err);
	/*
	 * Optional: the token bucket (mc/rate.h) every byte these
	 * connections send draws from, shared by all of them, so that
	 * their sum keeps to its limit (a daemon's --egress-limit); a
	 * connection that finds too little there stops writing until the bucket's
	 * timer gives it its turn. It must outlive the connections. NULL:
	 * they send as fast as their sockets take.
	 */
	struct mc_rate *egress;
};

/* Wrap an already connected socket of ops' transport (made non-blocking here). */
struct mc_conn *mc_conn_new(struct event_base *base, int fd, const struct mc_conn_ops *ops,
			    const struct mc_conn_limits *lim, struct mc_err *err);
/* Connect (blocking, with timeout) then wrap. */
struct mc_conn *mc_conn_connect(struct event_base *base, const struct mc_addr *a, int timeout_ms,
				const struct mc_conn_ops *ops, const struct mc_conn_limits *lim,
				struct mc_err *err);
/* Close now (or after queued output if flush); safe to call from any callback. */
void mc_conn_close(struct mc_conn *c, bool flush);
bool mc_conn_is_open(const struct mc_conn *c);
const char *mc_conn_peer_name(const struct mc_conn *c); /* for log lines */
/*
 * Whether c is a unix-socket connection from a process of this one's
 * own user (SO_PEERCRED): the operator on this machine, whom the
 * socket's file mode already admitted.
 */
bool mc_conn_same_user(const struct mc_conn *c);
/*
 * The daemon keeps this connection open by a liveness check of its own
 * (a peer's control link: heartbeats and --peer-ttl), so the idle
 * timeout never closes it; the header timeout still applies.
 */
void mc_conn_keep(struct mc_conn *c);
/* The connection proved who it speaks for: the hello timeout no longer applies. */
void mc_conn_vouch(struct mc_conn *c);
/* Per-connection user data (e.g. the tenant a client speaks for). */
void mc_conn_set_data(struct mc_conn *c, void *data, void (*free_fn)(void *));
void *mc_conn_data(const struct mc_conn *c);

/*
 * Asynchronous calls on a connection (e.g. the peer's control link to the
 * master), built as mc/rpcc.h's are: mc_conn_begin(c, method) returns the
 * packer for the params map (c not NULL), the caller packs one map into
 * it, and mc_conn_call or mc_conn_notify queues the request (with an
 * empty map when nothing was packed). Either fails (-1) when nothing was
 * begun since the last one, or the connection is closing. cb runs once,
 * with the response (resp != NULL), or with resp == NULL and err set when
 * the connection closed or timeout_ms passed (0 = no timeout).
 */
typedef void (*mc_call_cb)(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *err,
			   void *arg);
msgpack_packer *mc_conn_begin(struct mc_conn *c, const char *method);
int mc_conn_call(struct mc_conn *c, int timeout_ms, mc_call_cb cb, void *cb_arg);
/*
 * Send the request begun as a notification [2, method, params]: 0 once
 * it is queued, -1 when the connection is closed or closed while it was
 * sent (the connection may be gone then: use it no more).
 */
int mc_conn_notify(struct mc_conn *c);

/* ---- servers ---- */

/*
 * Listen on addr and serve every accepted connection with ops.
 * *bound (optional) receives the real address (port 0 resolved).
 * On EMFILE the listener backs off briefly instead of spinning.
 */
struct mc_server *mc_server_new(struct event_base *base, const struct mc_addr *addr,
				const struct mc_conn_ops *ops, const struct mc_conn_limits *lim,
				struct mc_addr *bound, struct mc_err *err);
void mc_server_free(struct mc_server *s); /* closes listener and all its conns */
int mc_server_conn_count(const struct mc_server *s);

/*
 * Counters a daemon exports: totals since start. The limits: connections
 * closed by the header and the idle timeout, and refused at accept over
 * the per-address and the global cap.
 */
struct mc_conn_stats {
	uint64_t accepted, closed, malformed, bytes_in, bytes_out;
	uint64_t header_timeouts, idle_timeouts, refused_per_addr, refused_max_conns;
	uint64_t hello_timeouts, shed_unvouched, slow_bulks, undrained;
};
void mc_conn_stats_get(struct mc_conn_stats *out); /* process-wide */
/*
 * Set mc_connections_closed_total{reason} in r from those limits'
 * counters: reason header_timeout, idle_timeout, hello_timeout, unvouched (shed),
 * slow_bulk, undrained (a refused body over MC_CONN_MAX_DRAIN), per_addr,
 * max_conns (a daemon adds its own reasons to the same family).
 */
void mc_conn_stats_export(struct mc_metrics *r);

#endif
