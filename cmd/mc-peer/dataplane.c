/*
 * The data plane: write, read, drop, peer_stats, corrupt.
 *
 * Bytes never pass through a buffer of ours: a write's bulk is received
 * straight into its medium's sink (DRAM in place; a file through the
 * sink's bounded staging buffer), and a read's reply sends its medium's
 * source (DRAM lent by reference; a file range with sendfile), holding
 * a reference on the entry until the connection layer has written them.
 *
 * A read or a write carries the master's grant for exactly that copy
 * (mc/grant.h), checked once per request before any byte moves; one it
 * does not cover is refused with permission and counted by reason. A
 * peer started with --fault-inject (tests only, loopback only) also
 * serves a request that carries no grant at all, and a drop sent to
 * its data port: that is how tests make a copy the master never
 * placed, or lose one behind its back. A grant that is there but wrong
 * is refused even then. Every write a grant covered is confirmed to the
 * master on the control link once its bytes are committed, so a put_end
 * can complete only copies that exist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/wire.h"

#include "names.h"
#include "peer.h"
#include "diskq.h"
#include "mover.h"
#include "reclaim.h"
#include "tasks.h"

/* ---- grants ---- */

/*
 * Whether req may act on (tenant, key, version, len) at this peer: it
 * carries a grant for exactly that, or (with --fault-inject) none at
 * all. Otherwise the refusal is answered and counted by its reason.
 * *covered tells whether a grant covered it, and *until (when not NULL)
 * when that grant runs out on this peer's clock, skew included (0: none
 * covered it).
 */
static bool
granted(struct peer *p, struct mc_req *req, const struct name *tenant, const struct name *key,
	uint64_t version, uint64_t len, int action, bool *covered, uint64_t *until)
{
	const char *g = NULL;
	size_t glen = 0;
	struct mc_grant_scope s = { tenant->p, tenant->len,	  key->p, key->len, version,
				    len,       p->grants.peer_id, action };
	int v = MC_GRANT_MISSING, has = mc_map_str(req->params, "grant", &g, &glen, NULL);
	const char *what = action == MC_GRANT_READ ? "read" : "write";

	if (has == 1)
		v = peer_grant_check(p, &s, g, glen);
	*covered = v == MC_GRANT_OK;
	if (until != NULL)
		*until = *covered ? mc_add_sat(mc_grant_local_expiry(&p->grants.keys, g, glen),
					       p->grants.skew_ms)
				  : 0;
	if (v == MC_GRANT_OK || (p->fault_inject && has == 0)) {
		/* a caller the master sent: no stranger's deadline for it */
		mc_conn_vouch(req->conn);
		return true;
	}
	p->grants.refused[v]++;
	mc_debug("%s from %s without a grant for this copy: %s", what, mc_conn_peer_name(req->conn),
		 mc_grant_verdict_name(v));
	mc_reply_err(req, MC_ERR_PERMISSION,
		     "permission denied: %s needs the master's grant for "
		     "this copy (%s)",
		     what, mc_grant_verdict_name(v));
	return false;
}

/*
 * Whether req's grant was used for a read here before, under the same
 * lease: the master saw that read once, when it answered the replica
 * list, and no read after. It hands one grant to every reader of a copy
 * for a while, so the reader's lease (unique to each replica list) is
 * part of what is remembered; a read without one is known by its grant
 * alone. The grant ends in its tag, a MAC: its last 8 bytes are as good
 * as a hash.
 */
static bool
grant_reused(struct peer *p, struct mc_req *req)
{
	const char *g = NULL;
	size_t glen = 0;
	uint64_t fp, lease = 0, *slot;

	if (p->grants.seen == NULL || mc_map_str(req->params, "grant", &g, &glen, NULL) != 1 ||
	    glen < sizeof(fp))
		return false;
	memcpy(&fp, g + glen - sizeof(fp), sizeof(fp));
	if (mc_map_u64(req->params, "lease_id", &lease, NULL) == 1)
		fp ^= lease * 0x9e3779b97f4a7c15ull; /* spread over every bit */
	fp |= 1;				     /* 0 marks an empty slot */
	slot = &p->grants.seen[(fp >> 1) & (PEER_GRANTS_SEEN - 1)];
	if (*slot == fp)
		return true;
	*slot = fp;
	return false;
}

/* ---- write ---- */

struct pending_write {
	struct peer *p;
	struct mc_req *req;	  /* deferred */
	struct pobj *o;		  /* unlinked, one reference */
	struct mc_bulk_sink sink; /* where the bulk lands */
	/*
	 * A blocking medium's copy: the bulk lands in this staging buffer
	 * from the disk queue, and a worker writes and seals it. NULL: the
	 * sink is the medium's own.
	 */
	void *stage;
	uint64_t stage_len;
	/*
	 * A sink that is not memory, for a writer that sent no checksum:
	 * the bytes are hashed as they land, as they cannot be read after.
	 */
	struct mc_checksum_stream *sum;
	/*
	 * Armed again at every span that lands, for --write-timeout or what
	 * is left until the deadline, whichever ends first (NULL: neither):
	 * a writer that stops sending, or that is still sending when its
	 * grant has run out, loses its connection, and its space comes
	 * back, instead of holding it for ever.
	 */
	struct event *timer;
	uint64_t deadline_ms; /* its grant's expiry and skew, steady clock; 0: none */
	bool has_checksum;
	bool granted; /* a grant covered it: the master hears of its commit */
	/* on p->writing while its bytes are coming */
	struct pending_write *next, **pprev;
};

static void
writing_link(struct pending_write *pw)
{
	struct peer *p = pw->p;

	pw->next = p->writing;
	if (p->writing != NULL)
		p->writing->pprev = &pw->next;
	p->writing = pw;
	pw->pprev = &p->writing;
}

static void
writing_unlink(struct pending_write *pw)
{
	if (pw->pprev == NULL)
		return;
	*pw->pprev = pw->next;
	if (pw->next != NULL)
		pw->next->pprev = pw->pprev;
	pw->next = NULL;
	pw->pprev = NULL;
}

/* Link o, whose bytes (and checksum) have landed and are sealed, and answer. */
static void
commit_write(struct peer *p, struct mc_req *req, struct pobj *o, bool granted)
{
	struct mc_err err;

	if (pool_commit(&p->pool, o, &err) < 0) {
		pindex_release(&p->index, o);
		mc_reply_mc_err(req, &err);
		return;
	}
	p->st.writes++;
	p->st.bytes_in += o->size;
	/* The confirmation leaves before the answer, so it is on its way when put_end comes. */
	if (granted && p->committed != NULL)
		p->committed(p->committed_arg, o);
	reclaimer_kick(p->reclaim, o->tier, false);
	mc_reply_ok_empty(req);
}

/* Seal o, whose bytes have landed in its medium (or that has none), and commit it. */
static void
finish_write(struct peer *p, struct mc_req *req, struct pobj *o, bool granted)
{
	struct medium_meta meta;
	struct mc_err err;

	/* Sealed before it is linked: a copy readable on a lasting tier survives a restart. */
	pobj_medium_meta(o, &meta);
	if (o->size > 0 && medium_seal(p->media[o->tier], o->off, o->size, &meta, &err) < 0) {
		pindex_release(&p->index, o);
		mc_reply_mc_err(req, &err);
		return;
	}
	commit_write(p, req, o, granted);
}

/* What pw holds besides its entry and its request. */
static void
pending_write_free(struct pending_write *pw)
{
	writing_unlink(pw);
	if (pw->timer != NULL)
		event_free(pw->timer);
	mc_checksum_stream_free(pw->sum);
	mc_bulk_sink_release(&pw->sink);
	diskq_unstage(pw->p->diskq, pw->stage, pw->stage_len);
	free(pw);
}

/* A staged copy was written and sealed on the disk queue (err NULL), or not. */
static void
write_stored(void *arg, const struct mc_err *err)
{
	struct pending_write *pw = arg;

	if (err != NULL) {
		pindex_release(&pw->p->index, pw->o);
		mc_reply_mc_err(pw->req, err);
	} else {
		commit_write(pw->p, pw->req, pw->o, pw->granted);
	}
	pending_write_free(pw);
}

static void
write_done(struct mc_req *req, bool ok, void *arg)
{
	struct pending_write *pw = arg;

	(void)req; /* the deferred copy in pw is the one to answer through */
	writing_unlink(pw);
	if (pw->timer != NULL)
		evtimer_del(pw->timer); /* every byte is in: no stall from here on */
	if (!ok) {
		pindex_release(&pw->p->index, pw->o);
		mc_reply_err(pw->req, MC_ERR_UNAVAILABLE, "connection lost during write");
	} else if (pw->stage != NULL) {
		struct medium_meta meta;

		/*
		 * A worker hashes it (when the writer sent no checksum), writes and
		 * seals it; the connection waits, so a pipelining writer's replies
		 * stay in order.
		 */
		(void)mc_req_hold(pw->req);
		pobj_medium_meta(pw->o, &meta);
		diskq_store(pw->p->diskq, pw->p->media[pw->o->tier], pw->o->off, pw->stage,
			    pw->o->size, &meta, pw->has_checksum ? NULL : &pw->o->checksum,
			    write_stored, pw);
		return;
	} else {
		if (!pw->has_checksum)
			pw->o->checksum = pw->sum != NULL ? mc_checksum_stream_digest(pw->sum)
							  : mc_checksum(pw->sink.data, pw->o->size);
		finish_write(pw->p, pw->req, pw->o, pw->granted);
	}
	pending_write_free(pw);
}

static void timer_arm(struct pending_write *pw);

/* Close pw's connection: write_done (not ok) then releases the entry and its space. */
static void
write_abandon(struct pending_write *pw, const char *why)
{
	mc_warn("write of %llu bytes from %s abandoned, its room freed: %s",
		(unsigned long long)pw->o->size, mc_conn_peer_name(pw->req->conn), why);
	mc_conn_close(pw->req->conn, false);
}

static void
write_timed_out(evutil_socket_t fd, short what, void *arg)
{
	struct pending_write *pw = arg;

	(void)fd;
	(void)what;
	if (pw->deadline_ms != 0 && mc_steady_ms() >= pw->deadline_ms) {
		pw->p->st.writes_expired++;
		write_abandon(pw, "still coming when its grant expired");
		return;
	}
	if (pw->p->write_timeout_ms == 0) {
		/* the deadline on a clock told to stand still: look again */
		timer_arm(pw);
		return;
	}
	pw->p->st.writes_abandoned++;
	write_abandon(pw, "its bytes stopped coming for --write-timeout");
}

/* For --write-timeout, or what is left until the deadline when that is sooner. */
static void
timer_arm(struct pending_write *pw)
{
	uint64_t wait = pw->p->write_timeout_ms;
	struct timeval tv;

	if (pw->deadline_ms != 0) {
		uint64_t now = mc_steady_ms();
		uint64_t left = pw->deadline_ms > now ? pw->deadline_ms - now : 0;

		if (wait == 0 || left < wait)
			wait = left > 0 ? left : 1;
	}
	tv = mc_ms_timeval(wait);
	evtimer_add(pw->timer, &tv);
}

static size_t room_waits_cancel(struct peer *p, const struct pool_key *k);

size_t
peer_cancel_writes(struct peer *p, const struct pool_key *k)
{
	struct pending_write *pw = p->writing, *next;
	size_t n = room_waits_cancel(p, k);

	for (; pw != NULL; pw = next) {
		const struct pobj *o = pw->o;

		next = pw->next;
		if ((k->has_version && o->version > k->max_version) ||
		    !pobj_named(o, k->tenant, k->tenant_len, k->key, k->key_len))
			continue;
		/* closing may end other writes on the same connection: start over after it */
		writing_unlink(pw);
		p->st.writes_cancelled++;
		n++;
		write_abandon(pw, "the master dropped its put");
		next = p->writing;
	}
	return n;
}

/*
 * A span of the bulk landed: the writer is alive, the stall timer starts
 * over, and a bulk that cannot be read back is hashed.
 */
static void
write_progress(const void *data, size_t n, void *arg)
{
	struct pending_write *pw = arg;

	if (pw->sum != NULL)
		mc_checksum_stream_update(pw->sum, data, n);
	if (pw->timer != NULL)
		timer_arm(pw);
}

/* A write's request, as checked: what it takes to start it, now or after a wait. */
struct write_args {
	struct name tenant, key, parent; /* parent.len 0: none */
	int tier;
	uint64_t version, checksum;
	uint64_t deadline; /* its grant's end, steady clock; 0: none covered it */
	bool has_checksum;
	bool covered; /* a grant covered it */
};

/* What write_start did. */
enum write_started { WRITE_STARTED, WRITE_NO_ROOM };

/*
 * Start the write of a's copy from req: its room taken, its entry made
 * and its bulk claimed, or req answered (a stale version, a spent grant,
 * a failure). WRITE_NO_ROOM: its tier has no room for it now, and
 * nothing was done; req is still the caller's.
 */
static enum write_started
write_start(struct peer *p, struct mc_req *req, const struct write_args *a)
{
	struct medium *m = p->media[a->tier];
	uint64_t len = req->bulk_len, off = 0, have = 0;
	struct pending_write *pw;
	struct mc_err err;
	struct pobj *o;
	char kb[80];
	int found;

	if (len > medium_capacity(m)) {
		mc_reply_err(req, MC_ERR_TOO_LARGE, "object of %llu bytes exceeds %s capacity %llu",
			     (unsigned long long)len, mc_tier_name(a->tier),
			     (unsigned long long)medium_capacity(m));
		return WRITE_STARTED;
	}
	/* Refuse a stale version before its bytes cross the wire. */
	found = pindex_version(&p->index, a->tenant.p, a->tenant.len, a->key.p, a->key.len, &have,
			       NULL);
	if (found && have > a->version) {
		mc_reply_err(req, MC_ERR_VERSION, "version %llu of '%s' is older than stored %llu",
			     (unsigned long long)a->version, name_show(&a->key, kb, sizeof(kb)),
			     (unsigned long long)have);
		return WRITE_STARTED;
	}
	/*
	 * A grant writes its version once: replayed after the commit, it
	 * would overwrite it. (--fault-inject's grant-less writes may.)
	 */
	if (a->covered && found && have == a->version &&
	    pindex_committed_at(&p->index, a->tenant.p, a->tenant.len, a->key.p, a->key.len,
				a->version)) {
		mc_reply_err(req, MC_ERR_PERMISSION,
			     "version %llu of '%s' is committed here: its write grant is spent",
			     (unsigned long long)a->version, name_show(&a->key, kb, sizeof(kb)));
		return WRITE_STARTED;
	}
	if (len > 0 && medium_alloc(m, len, &off, &err) < 0) {
		if (err.code == MC_ERR_NO_SPACE)
			return WRITE_NO_ROOM;
		mc_reply_mc_err(req, &err);
		return WRITE_STARTED;
	}
	o = pobj_new(&p->index, a->tenant.p, a->tenant.len, a->key.p, a->key.len, a->version, len,
		     a->checksum, a->tier, off);
	if (o && a->parent.len > 0)
		o->parent = pindex_hash(a->tenant.p, a->tenant.len, a->parent.p, a->parent.len);
	if (!o) {
		if (len > 0)
			medium_release(m, off, len);
		mc_reply_err(req, MC_ERR_SYSTEM, "out of memory for an index entry");
		return WRITE_STARTED;
	}
	if (len == 0) {
		if (!a->has_checksum)
			o->checksum = mc_checksum("", 0);
		finish_write(p, req, o, a->covered);
		return WRITE_STARTED;
	}
	pw = calloc(1, sizeof(*pw));
	if (!pw) {
		pindex_release(&p->index, o);
		mc_reply_err(req, MC_ERR_SYSTEM, "out of memory for a pending write");
		return WRITE_STARTED;
	}
	pw->p = p;
	pw->o = o;
	pw->has_checksum = a->has_checksum;
	pw->granted = a->covered;
	if (medium_blocks(m) && p->diskq != NULL &&
	    (pw->stage = diskq_stage(p->diskq, len)) != NULL) {
		pw->stage_len = len;
		mc_bulk_sink_mem(&pw->sink, pw->stage, len);
	} else if (medium_blocks(m) && p->diskq != NULL) {
		diskq_count_loop(p->diskq, true);
	}
	if (pw->stage == NULL && medium_sink(m, off, len, &pw->sink, &err) < 0) {
		free(pw);
		pindex_release(&p->index, o);
		mc_reply_mc_err(req, &err);
		return WRITE_STARTED;
	}
	if (!pw->has_checksum && pw->sink.kind != MC_BULK_MEM &&
	    (pw->sum = mc_checksum_stream_new()) == NULL) {
		pending_write_free(pw);
		pindex_release(&p->index, o);
		mc_reply_err(req, MC_ERR_SYSTEM, "out of memory for a checksum");
		return WRITE_STARTED;
	}
	/*
	 * Its bytes must all be in while its grant lasts: the master tells
	 * of a put it abandons (peer_cancel_writes), and this covers that
	 * message lost on the way.
	 */
	pw->deadline_ms = a->deadline;
	if ((p->write_timeout_ms > 0 || pw->deadline_ms != 0) &&
	    (pw->timer = evtimer_new(p->base, write_timed_out, pw)) == NULL) {
		pending_write_free(pw);
		pindex_release(&p->index, o);
		mc_reply_err(req, MC_ERR_SYSTEM, "out of memory for a write timer");
		return WRITE_STARTED;
	}
	if (pw->timer != NULL || pw->sum != NULL) {
		pw->sink.tap = write_progress;
		pw->sink.tap_arg = pw;
	}
	pw->req = mc_req_defer(req);
	if (!pw->req) {
		pending_write_free(pw);
		pindex_release(&p->index, o);
		mc_reply_err(req, MC_ERR_SYSTEM, "out of memory for a deferred reply");
		return WRITE_STARTED;
	}
	if (pw->timer != NULL)
		timer_arm(pw);
	writing_link(pw);
	if (mc_req_recv_bulk_to(pw->req, &pw->sink, write_done, pw) < 0) {
		pindex_release(&p->index, o);
		mc_reply_err(pw->req, MC_ERR_INTERNAL, "cannot receive the bulk");
		pending_write_free(pw);
	}
	return WRITE_STARTED;
}

static void
reply_no_room(struct peer *p, struct mc_req *req, int tier, const char *after)
{
	struct medium *m = p->media[tier];

	mc_reply_err(req, MC_ERR_NO_SPACE, "no space for %llu bytes in %s (used %llu of %llu)%s",
		     (unsigned long long)req->bulk_len, mc_tier_name(tier),
		     (unsigned long long)medium_used(m), (unsigned long long)medium_capacity(m),
		     after);
}

/* ---- writes waiting for room ---- */

/*
 * A granted write that finds its tier full waits for room, up to
 * --room-wait. The master placed it where it counts room, so what makes
 * that room is on its way: the drops and evictions of the copies it
 * evicted travel on the control link, the write on a connection of its
 * own, and either may arrive first; or this peer's reclaimer is making
 * the room. The request is held, its bulk left in the stream
 * (mc_req_hold), so nothing crosses the wire twice. It is tried again
 * as soon as the master's tasks free copies (peer_room_freed) and on a
 * timer backing off from ROOM_RETRY_MS (frees of other kinds), until it
 * starts, its wait or its grant ends (no_space), or its connection
 * closes.
 */
#define ROOM_WAITS_MAX 1024
#define ROOM_RETRY_MS 1
#define ROOM_RETRY_MAX_MS 64

struct room_wait {
	struct peer *p;
	struct mc_req *req; /* deferred and held */
	struct write_args a;
	uint64_t until; /* the end of its --room-wait, monotonic clock (a's deadline is steady) */
	unsigned retry_ms;
	struct event *timer;
	struct room_wait *next, **pprev; /* on p->room_waits, oldest first */
	char names[];			 /* a's tenant, key and parent */
};

/* p's waiting writes, and the wake the master's tasks give them. */
struct room_waits {
	struct room_wait *head, **tail;
	size_t n;
	struct event *wake;
};

static void
room_wait_free(struct room_wait *w)
{
	struct room_waits *rw = w->p->room_waits;

	*w->pprev = w->next;
	if (w->next != NULL)
		w->next->pprev = w->pprev;
	else
		rw->tail = w->pprev;
	rw->n--;
	event_free(w->timer);
	free(w);
}

static void
room_wait_arm(struct room_wait *w)
{
	struct timeval tv = mc_ms_timeval(w->retry_ms);

	evtimer_add(w->timer, &tv);
	if (w->retry_ms < ROOM_RETRY_MAX_MS)
		w->retry_ms *= 2;
}

/* Try w's write again: started, answered, or waiting on. */
static void
room_wait_try(struct room_wait *w)
{
	struct peer *p = w->p;

	if (!mc_conn_is_open(w->req->conn)) {
		/* its writer went: the answer is dropped, the request freed */
		p->st.room_waits[ROOM_WAIT_GONE]++;
		mc_reply_err(w->req, MC_ERR_UNAVAILABLE, "connection closed");
	} else if (write_start(p, w->req, &w->a) == WRITE_STARTED) {
		p->st.room_waits[ROOM_WAIT_PLACED]++;
	} else if (mc_mono_ms() >= w->until ||
		   (w->a.deadline != 0 && mc_steady_ms() >= w->a.deadline)) {
		p->st.room_waits[ROOM_WAIT_TIMEOUT]++;
		reply_no_room(p, w->req, w->a.tier, ", after waiting for room");
	} else {
		room_wait_arm(w);
		return;
	}
	room_wait_free(w);
}

static void
room_wait_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	room_wait_try(arg);
}

/* Every waiting write tries again, oldest first; those that wait on are kept in order. */
static void
room_waits_wake(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	struct room_wait *w = p->room_waits->head, *next;
	size_t n = p->room_waits->n;

	(void)fd;
	(void)what;
	/* one pass over those waiting now: a write that starts may end others' wait */
	for (; w != NULL && n > 0; w = next, n--) {
		next = w->next;
		evtimer_del(w->timer);
		room_wait_try(w);
	}
}

void
peer_room_freed(struct peer *p)
{
	if (p->room_waits != NULL && p->room_waits->n > 0)
		event_active(p->room_waits->wake, EV_TIMEOUT, 0);
}

size_t
peer_room_waiting(const struct peer *p)
{
	return p->room_waits != NULL ? p->room_waits->n : 0;
}

int
peer_room_waits_init(struct peer *p)
{
	struct room_waits *rw = calloc(1, sizeof(*rw));

	if (rw == NULL || (rw->wake = event_new(p->base, -1, 0, room_waits_wake, p)) == NULL) {
		free(rw);
		return -1;
	}
	rw->tail = &rw->head;
	p->room_waits = rw;
	return 0;
}

void
peer_room_waits_free(struct peer *p)
{
	struct room_waits *rw = p->room_waits;

	if (rw == NULL)
		return;
	while (rw->head != NULL) {
		mc_reply_err(rw->head->req, MC_ERR_UNAVAILABLE, "the peer is stopping");
		room_wait_free(rw->head);
	}
	event_free(rw->wake);
	free(rw);
	p->room_waits = NULL;
}

/* The master dropped k: the writes of it waiting for room end, answered. */
static size_t
room_waits_cancel(struct peer *p, const struct pool_key *k)
{
	struct room_wait *w = p->room_waits != NULL ? p->room_waits->head : NULL, *next;
	size_t n = 0;

	for (; w != NULL; w = next) {
		next = w->next;
		if ((k->has_version && w->a.version > k->max_version) ||
		    w->a.tenant.len != k->tenant_len || w->a.key.len != k->key_len ||
		    memcmp(w->a.tenant.p, k->tenant, k->tenant_len) != 0 ||
		    memcmp(w->a.key.p, k->key, k->key_len) != 0)
			continue;
		p->st.room_waits[ROOM_WAIT_CANCELLED]++;
		p->st.writes_cancelled++;
		n++;
		mc_reply_err(w->req, MC_ERR_UNAVAILABLE,
			     "the master dropped this put while its write waited for room");
		room_wait_free(w);
	}
	return n;
}

/* Copy n's bytes to at, where n points from now on; past them. An empty n stays as it is. */
static char *
keep_name(char *at, struct name *n)
{
	if (n->len == 0)
		return at;
	memcpy(at, n->p, n->len);
	n->p = at;
	return at + n->len;
}

/* Hold req until its tier has room for it; -1 (req still the caller's) when it cannot wait. */
static int
room_wait_begin(struct peer *p, struct mc_req *req, const struct write_args *a)
{
	struct room_waits *rw = p->room_waits;
	struct room_wait *w;
	char *at;

	if (rw == NULL || p->room_wait_ms == 0 || rw->n >= ROOM_WAITS_MAX ||
	    (a->deadline != 0 && a->deadline <= mc_steady_ms()))
		return -1;
	w = calloc(1, sizeof(*w) + a->tenant.len + a->key.len + a->parent.len);
	if (w == NULL)
		return -1;
	w->p = p;
	w->a = *a;
	at = keep_name(w->names, &w->a.tenant);
	at = keep_name(at, &w->a.key);
	keep_name(at, &w->a.parent);
	w->until = mc_add_sat(mc_mono_ms(), p->room_wait_ms);
	w->retry_ms = ROOM_RETRY_MS;
	if ((w->timer = evtimer_new(p->base, room_wait_timer, w)) == NULL) {
		free(w);
		return -1;
	}
	w->req = mc_req_defer(req);
	if (w->req == NULL || mc_req_hold(w->req) != 0) {
		struct mc_req *d = w->req;

		event_free(w->timer);
		free(w);
		if (d == NULL)
			return -1;
		/* deferred but not held: answered through d */
		reply_no_room(p, d, a->tier, "");
		return 0;
	}
	w->pprev = rw->tail;
	*rw->tail = w;
	rw->tail = &w->next;
	rw->n++;
	room_wait_arm(w);
	return 0;
}

static void
h_write(struct mc_req *req)
{
	struct peer *p = req->ctx;
	struct mc_err err;
	struct write_args a = { .parent = { NULL, 0 } };
	struct name tier;
	int r;

	if (name_target(req->params, &a.tenant, &a.key, &err) < 0 ||
	    name_get(req->params, "tier", 16, mc_tier_name(MC_TIER_DRAM), &tier, &err) < 0 ||
	    (mc_map_get(req->params, "parent") != NULL &&
	     name_get(req->params, "parent", MC_KEY_MAX, NULL, &a.parent, &err) < 0))
		goto bad;
	if ((r = mc_map_u64(req->params, "version", &a.version, &err)) <= 0) {
		if (r == 0)
			mc_err_set(&err, MC_ERR_INVALID, "missing field 'version'");
		goto bad;
	}
	if ((r = mc_map_u64(req->params, "checksum", &a.checksum, &err)) < 0)
		goto bad;
	a.has_checksum = r == 1;
	if (!req->has_bulk) {
		mc_err_set(&err, MC_ERR_INVALID, "missing field 'len'");
		goto bad;
	}
	if (!granted(p, req, &a.tenant, &a.key, a.version, req->bulk_len, MC_GRANT_WRITE,
		     &a.covered, &a.deadline))
		return;
	if (mc_fault("write")) {
		mc_reply_err(req, MC_ERR_SYSTEM, "fault injected: write");
		return;
	}
	if ((a.tier = mc_tier_parse(tier.p, tier.len, &err)) < 0)
		goto bad;
	if (!p->media[a.tier]) {
		mc_err_set(&err, MC_ERR_INVALID, "this peer has no %s tier", mc_tier_name(a.tier));
		goto bad;
	}
	if (write_start(p, req, &a) == WRITE_STARTED)
		return;
	/* Nothing is evicted here: whoever evicts hears of the usage at once. */
	reclaimer_room(p->reclaim, a.tier, req->bulk_len, 0);
	if (p->full)
		p->full(p->full_arg, a.tier);
	/* a write no grant covered was never placed: nothing makes room for it */
	if (!a.covered || room_wait_begin(p, req, &a) != 0)
		reply_no_room(p, req, a.tier, "");
	return;
bad:
	mc_reply_mc_err(req, &err);
}

/* ---- read ---- */

static void
read_release(void *arg)
{
	struct pobj *o = arg;

	pindex_release(o->ix, o);
}

/* A cold read in flight on the disk queue: the copy and where it lands. */
struct pending_read {
	struct peer *p;
	struct mc_req *req; /* deferred */
	struct pobj *o;	    /* one reference, until the reply is sent */
	void *buf;	    /* staging, o->size bytes */
};

static void
pending_read_free(void *arg)
{
	struct pending_read *pr = arg;

	diskq_unstage(pr->p->diskq, pr->buf, pr->o->size);
	pindex_release(&pr->p->index, pr->o);
	free(pr);
}

/* The reply's head: what a read answers before its bytes. */
static void
reply_read_head(struct mc_req *req, const struct pobj *o)
{
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_map(pk, 3);
	mc_pack_kv_u64(pk, "len", o->size);
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "checksum", o->checksum);
}

/* A worker read the copy into pr->buf (err NULL), or could not. */
static void
read_loaded(void *arg, const struct mc_err *err)
{
	struct pending_read *pr = arg;

	if (err != NULL) {
		mc_reply_mc_err(pr->req, err);
		pending_read_free(pr);
		return;
	}
	reply_read_head(pr->req, pr->o);
	mc_reply_end_bulk(pr->req, pr->buf, (size_t)pr->o->size, pending_read_free, pr);
}

/*
 * Hand the read of o, a copy on a blocking medium, to the disk queue;
 * false when the staging budget is spent (the caller sends it itself).
 */
static bool
read_on_disk_queue(struct peer *p, struct mc_req *req, struct pobj *o)
{
	struct pending_read *pr;

	if (!medium_blocks(p->media[o->tier]) || p->diskq == NULL)
		return false;
	if (!(pr = calloc(1, sizeof(*pr))) || !(pr->buf = diskq_stage(p->diskq, o->size))) {
		free(pr);
		diskq_count_loop(p->diskq, false);
		return false;
	}
	if (!(pr->req = mc_req_defer(req))) {
		diskq_unstage(p->diskq, pr->buf, o->size);
		free(pr);
		return false;
	}
	pr->p = p;
	pr->o = o;
	(void)mc_req_hold(pr->req); /* replies in request order, as write_done's */
	diskq_load(p->diskq, p->media[o->tier], o->off, o->size, pr->buf, read_loaded, pr);
	return true;
}

/*
 * --promote-on-read: a copy read below DRAM moves up, on the mover,
 * while DRAM is under the high end of its band (reclaimer_band); this
 * read is served from where the copy is now, and never waits for it.
 */
static void
promote(struct peer *p, const struct pobj *o)
{
	struct medium *dram = p->media[MC_TIER_DRAM];
	struct mc_band band;
	struct pool_key k;

	if (p->promote == PROMOTE_OFF || o->tier == MC_TIER_DRAM || !p->mover || o->moving)
		return;
	reclaimer_band(p->reclaim, MC_TIER_DRAM, &band);
	if (medium_used(dram) + o->size > band.high)
		return;
	k = (struct pool_key){ o->name, o->tenant_len, pobj_key(o), o->key_len, true, o->version };
	mover_promote(p->mover, &k, o->tier, MC_TIER_DRAM);
}

/*
 * MC_FAULT's read.stall (mc-fault(7)): the answer announces the whole
 * copy but carries only its first half, and the connection then sends
 * nothing more, as from a peer that hung mid-transfer.
 */
static void
stall_injected(struct mc_bulk_src *src)
{
	if (mc_fault("read.stall"))
		src->len /= 2;
}

/*
 * The grant is checked before the index is looked at, so a caller
 * without one learns nothing, not even whether the key is stored: a
 * granted read names the version and the size its grant covers (as
 * "size": "len" would announce a bulk after the request).
 */
static void
h_read(struct mc_req *req)
{
	struct peer *p = req->ctx;
	struct mc_err err;
	struct name tenant, key;
	uint64_t version = 0, len = 0;
	struct pobj *o;
	struct mc_bulk_src src;
	int r, rl;
	bool covered;
	char kb[80];

	if (name_target(req->params, &tenant, &key, &err) < 0 ||
	    (r = mc_map_u64(req->params, "version", &version, &err)) < 0 ||
	    (rl = mc_map_u64(req->params, "size", &len, &err)) < 0) {
		mc_reply_mc_err(req, &err);
		return;
	}
	if (mc_map_get(req->params, "grant") != NULL && (r == 0 || rl == 0)) {
		mc_reply_err(req, MC_ERR_INVALID, "a read with a grant names its version and size");
		return;
	}
	if (!granted(p, req, &tenant, &key, version, len, MC_GRANT_READ, &covered, NULL))
		return;
	if (mc_fault("read")) {
		mc_reply_err(req, MC_ERR_SYSTEM, "fault injected: read");
		return;
	}
	o = pindex_acquire(&p->index, tenant.p, tenant.len, key.p, key.len);
	if (!o) {
		p->st.read_misses++;
		mc_reply_err(req, MC_ERR_NOT_FOUND, "no copy of '%s'",
			     name_show(&key, kb, sizeof(kb)));
		return;
	}
	if ((r == 1 && o->version != version) || (rl == 1 && o->size != len)) {
		uint64_t have = o->version, size = o->size;

		pindex_release(&p->index, o);
		p->st.read_misses++;
		mc_reply_err(req, MC_ERR_NOT_FOUND,
			     "no copy of '%s' at version %llu (have version %llu of %llu bytes)",
			     name_show(&key, kb, sizeof(kb)), (unsigned long long)version,
			     (unsigned long long)have, (unsigned long long)size);
		return;
	}
	p->st.reads++;
	p->st.bytes_out += o->size;
	pindex_read(&p->index, o);
	if (covered && grant_reused(p, req) && p->local_read)
		p->local_read(p->local_read_arg, o);
	promote(p, o);
	if (o->size == 0) {
		reply_read_head(req, o);
		pindex_release(&p->index, o);
		mc_reply_end_bulk(req, NULL, 0, NULL, NULL);
		return;
	}
	/* A copy on disk is read by a worker; the reply holds o until its bytes are sent. */
	if (read_on_disk_queue(p, req, o))
		return;
	/* The medium's source sends the bytes, from the loop. */
	if (medium_source(p->media[o->tier], o->off, o->size, &src, &err) < 0) {
		pindex_release(&p->index, o);
		mc_reply_mc_err(req, &err);
		return;
	}
	reply_read_head(req, o);
	stall_injected(&src);
	mc_reply_end_src(req, &src, read_release, o);
}

/* ---- drop and evict ---- */

/*
 * Drops and evicts come from the master on the control link; the data
 * port takes them only in tests.
 */
static void
free_from_data_port(struct mc_req *req, enum pool_reason why)
{
	struct peer *p = req->ctx;
	const char *what = why == POOL_DELETE ? "drop" : "evict";

	if (!p->fault_inject) {
		mc_reply_err(req, MC_ERR_PERMISSION,
			     "permission denied: %ss come from the master (a data-port %s "
			     "needs mc-peer --fault-inject)",
			     what, what);
		return;
	}
	/* executed as they come: no task ids to dedupe or acknowledge here */
	peer_tasks_serve(p, NULL, req);
}

static void
h_drop(struct mc_req *req)
{
	free_from_data_port(req, POOL_DELETE);
}

static void
h_evict(struct mc_req *req)
{
	free_from_data_port(req, POOL_RECLAIM);
}

/* ---- peer_stats ---- */

/*
 * Not for anyone who can reach the data port: for this peer's own user
 * on its unix socket (the operator and the tools on this machine), or
 * under --fault-inject. Everyone else reads /metrics, which --http keeps
 * on loopback.
 */
static void
h_peer_stats(struct mc_req *req)
{
	struct peer *p = req->ctx;
	msgpack_packer *pk;
	uint32_t n = 0;

	if (!p->fault_inject && !mc_conn_same_user(req->conn)) {
		mc_reply_err(req, MC_ERR_PERMISSION,
			     "permission denied: peer_stats is served to this peer's own user on "
			     "a unix socket (its /metrics has the same figures)");
		return;
	}
	mc_conn_vouch(req->conn);
	for (int t = 0; t < MC_TIER_COUNT; t++)
		n += p->media[t] != NULL;
	pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 6);
	mc_pack_key(pk, "tiers");
	msgpack_pack_array(pk, n);
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		if (!p->media[t])
			continue;
		struct mc_band band;

		reclaimer_band(p->reclaim, t, &band);
		msgpack_pack_map(pk, 6);
		mc_pack_kv_str(pk, "tier", mc_tier_name(t));
		mc_pack_kv_u64(pk, "capacity", medium_capacity(p->media[t]));
		mc_pack_kv_u64(pk, "used", medium_used(p->media[t]));
		mc_pack_kv_u64(pk, "objects", pindex_tier_objects(&p->index, t));
		/* where this peer's eviction of the tier starts and stops now */
		mc_pack_kv_u64(pk, "band_high", band.high);
		mc_pack_kv_u64(pk, "band_low", band.low);
	}
	mc_pack_kv_u64(pk, "reads", p->st.reads);
	mc_pack_kv_u64(pk, "writes", p->st.writes);
	mc_pack_kv_u64(pk, "read_misses", p->st.read_misses);
	mc_pack_kv_u64(pk, "bytes_in", p->st.bytes_in);
	mc_pack_kv_u64(pk, "bytes_out", p->st.bytes_out);
	mc_reply_end(req);
}

/* ---- corrupt (tests only) ---- */

static void
h_corrupt(struct mc_req *req)
{
	struct peer *p = req->ctx;
	struct mc_err err;
	struct name tenant, key;
	uint64_t offset = 0;
	struct pobj *o;
	struct medium *m;
	unsigned char b = 0;
	uint64_t at;
	bool ok;
	char kb[80];

	if (!p->fault_inject) {
		mc_reply_err(req, MC_ERR_DENIED, "corrupt needs mc-peer --fault-inject");
		return;
	}
	if (name_target(req->params, &tenant, &key, &err) < 0 ||
	    mc_map_u64(req->params, "offset", &offset, &err) < 0) {
		mc_reply_mc_err(req, &err);
		return;
	}
	o = pindex_acquire(&p->index, tenant.p, tenant.len, key.p, key.len);
	if (!o) {
		mc_reply_err(req, MC_ERR_NOT_FOUND, "no copy of '%s'",
			     name_show(&key, kb, sizeof(kb)));
		return;
	}
	if (o->size == 0) {
		pindex_release(&p->index, o);
		mc_reply_err(req, MC_ERR_INVALID, "'%s' is empty: no byte to corrupt",
			     name_show(&key, kb, sizeof(kb)));
		return;
	}
	m = p->media[o->tier];
	at = offset % o->size;
	/* Through the medium's own read and write, so a copy on disk is flipped too. */
	ok = medium_read(m, o->off + at, 1, &b, &err) != NULL;
	b ^= 0xff;
	if (!ok || medium_write(m, o->off + at, &b, 1, &err) < 0) {
		pindex_release(&p->index, o);
		mc_reply_mc_err(req, &err);
		return;
	}
	mc_warn("fault injected: flipped byte %llu of '%s'", (unsigned long long)at,
		name_show(&key, kb, sizeof(kb)));
	pindex_release(&p->index, o);
	mc_reply_ok_empty(req);
}

/* clang-format off */
const struct mc_method peer_data_methods[] = {
	{ "write", h_write, MC_METHOD_BULK },
	{ "read", h_read, MC_METHOD_BULK | MC_METHOD_READ_ONLY },
	{ "drop", h_drop, MC_METHOD_ADMIN },
	{ "evict", h_evict, MC_METHOD_ADMIN },
	{ "peer_stats", h_peer_stats, MC_METHOD_READ_ONLY },
	{ "corrupt", h_corrupt, MC_METHOD_ADMIN },
	{ NULL, NULL, 0 },
};
/* clang-format on */
