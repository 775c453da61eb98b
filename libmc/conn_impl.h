/*
 * Inside the daemons' connections (mc/conn.h): what their three files
 * share.
 *
 *   conn.c      one connection: its lifetime, its input (framing, bulk
 *               payloads, the dispatch of each message), its output
 *               queue, replies and deferred requests, and the calls it
 *               makes itself
 *   registry.c  the method registry: the daemons' tables by name, each
 *               entry's counters, and the authorization asked before a
 *               handler runs
 *   listener.c  listening and accepting, the limits an accepted
 *               connection lives under (open connections in all and from
 *               one address, the header and the idle timeout), and the
 *               process-wide counters
 *
 * The dispatcher in conn.c finds a method's entry with
 * mc_cn_registry_entry, asks mc_cn_authorized and settles the entry's
 * counters with mc_cn_count_answer. The listener makes each accepted
 * connection with mc_cn_new, and a connection that closes leaves its
 * server by mc_cn_server_unlink. Every file counts into mc_cn_stats
 * with STAT_ADD.
 */
#ifndef MC_CONN_IMPL_H
#define MC_CONN_IMPL_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/bulk.h"
#include "mc/conn.h"
#include "mc/rate.h"
#include "mc/transport.h"

struct seg;	   /* an output queue's segment (conn.c) */
struct call;	   /* a call awaiting its answer (conn_call.c) */
struct addr_count; /* a server's open connections from one address (listener.c) */

/* Where the stream stands with a bulk payload. */
enum { BULK_NONE, BULK_RECV, BULK_SKIP };

/* One connection (conn.c makes it; listener.c counts and times the accepted ones). */
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
	struct mc_conn *uprev, *unext; /* its server's unvouched ones, oldest first */
	bool unvouched;		       /* on that list */

	/* input */
	char *in;
	size_t in_cap, in_max, in_start, in_end;

	/* the request being handled, and its bulk */
	struct mc_req cur;
	struct mc_req *cur_deferred;
	struct mc_req *held; /* deferred request the connection waits on (mc_req_hold) */
	bool bulk_claimable;
	/*
	 * The held request's bulk waits unread in the stream, for it to
	 * claim later (mc_req_hold), or to be discarded with its answer.
	 */
	bool bulk_kept;
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
	/* its place in the queue of ops.egress, while it waits for tokens */
	struct mc_rate_waiter egress_wait;
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
	uint64_t msg_ns;       /* when the message being read began; 0: none is partial */
	uint64_t active_ns;    /* last traffic, or the end of work in flight */
	uint64_t limit_due_ns; /* when the limits' timer fires next */
	uint64_t in_total;     /* bytes read from the socket, ever */
	/* a bulk's rate window (lim.min_bulk_rate): its start (0: none) and in_total then */
	uint64_t rate_ns, rate_in;
	uint64_t nparsed;	 /* messages framed so far */
	int ndeferred;		 /* deferred requests not answered yet */
	bool keep;		 /* mc_conn_keep: never idle */
	uint64_t hello_due_ns;	 /* when the hello timeout closes it; 0: never (or vouched for) */
	struct addr_count *addr; /* its address's count on the server, or NULL */
};

/* One entry's counters (NULL series when the registry has no metrics). */
struct mc_method_stats {
	struct mc_metric *requests, *failures, *seconds, *denied;
};

/* One method of a registry: its table row, the length of its name, its counters. */
struct reg_entry {
	const struct mc_method *m;
	size_t len;
	struct mc_method_stats st;
};

/*
 * Process-wide counters (listener.c). A daemon may run several loops in
 * threads, so they are updated with relaxed atomics: totals, not
 * synchronisation.
 */
extern struct mc_conn_stats mc_cn_stats;

#define STAT_ADD(field, n) __atomic_fetch_add(&mc_cn_stats.field, (uint64_t)(n), __ATOMIC_RELAXED)

/* ---- conn.c ---- */

/* lim with every 0 replaced by its default (NULL: all defaults), into out. */
void mc_cn_limits_norm(struct mc_conn_limits *out, const struct mc_conn_limits *in);

/*
 * A connection on tc, which it owns from here on (the caller closes tc
 * when this fails).
 */
struct mc_conn *mc_cn_new(struct event_base *base, const struct mc_tconn *tc,
			  const struct mc_conn_ops *ops, const struct mc_conn_limits *lim,
			  struct mc_err *err);

/*
 * Close the socket and settle every obligation exactly once: queued
 * release callbacks, a bulk in progress, pending calls, on_close. The
 * memory goes when the last reference does.
 */
void mc_cn_shutdown(struct mc_conn *c);
/*
 * conn.c's own, for conn_call.c: a reference held and let go (the last
 * frees c), bytes copied onto the output queue (-1 when out of memory),
 * and a flush of the queue unless a read pass will do it.
 */
void mc_cn_ref(struct mc_conn *c);
void mc_cn_unref(struct mc_conn *c);
int mc_cn_out_copy(struct mc_conn *c, const void *p, size_t n);
void mc_cn_kick(struct mc_conn *c);
/* conn_call.c: a response for one of c's calls (run its callback), and c's end (fail them all). */
void mc_cn_call_answered(struct mc_conn *c, const struct mc_msg *m);
void mc_cn_calls_fail(struct mc_conn *c);

/* ---- registry.c ---- */

/* The entry for a method's name of len bytes in r (NULL: none, or r NULL). */
const struct reg_entry *mc_cn_registry_entry(const struct mc_registry *r, const char *name,
					     size_t len);

/* Count an answer (or a notification handled): failed when it was an error. */
void mc_cn_count_answer(struct mc_req *req, bool failed);

/*
 * Ask the daemon whether the caller may make this call; a refusal is
 * answered here, as permission denied, and counted per method.
 */
bool mc_cn_authorized(struct mc_req *r, const struct mc_conn_ops *ops);

/* ---- listener.c ---- */

/*
 * After a read pass on an accepted connection with limits (limit_ev):
 * there was traffic, and a message left partial starts the header clock.
 */
void mc_cn_limit_after_read(struct mc_conn *c, uint64_t parsed_before);

/* Take c out of its server's list and its address's count, if it has one. */
void mc_cn_server_unlink(struct mc_conn *c);
/* c was vouched for: off its server's list of strangers (mc_conn_limits.max_unvouched). */
void mc_cn_server_vouched(struct mc_conn *c);

#endif
