/*
 * The link to the master: connect, register, heartbeat, take the
 * master's drop notifications, unregister on the way out.
 *
 * Nothing here may stall the event loop that serves reads, so the
 * connect itself is non-blocking (a socket, a connect in progress and an
 * event for writability) before the socket is handed to mc_conn_new.
 * A lost link is retried with exponential backoff, 100 ms doubling to
 * 5 s, and each backoff step logs at most one failure, so a master that
 * stays down costs a handful of lines, not one per attempt.
 *
 * After every registration the peer reports its inventory, so that a
 * master that restarted (from a snapshot, or from nothing) learns which
 * copies exist. The report is a walk over the index sent one chunk at a
 * time, the next only once the master answered the previous: a peer
 * holding millions of objects never queues them all on the link, and
 * the index lock is held for one slice at a time, never while sending.
 * A registration, a lost link or shutdown abandons a report in progress;
 * a new one starts after the next registration.
 *
 * A lost link does not make a new peer. The master's first answer
 * carries a session token; every later registration shows it (with the
 * peer id) to resume the same entry, so the master keeps the replicas
 * and all metadata. A resumed peer then reports only what changed in
 * its index since the change number the master last acknowledged (each
 * answered heartbeat acknowledges the number it carried, once the report
 * after the last registration is complete): the removals from the
 * index's journal, then the entries linked since, as a delta. When the
 * journal forgot a removal in that range, the whole inventory goes
 * instead, and the master drops what it does not confirm.
 *
 * The master's drops carry task ids. The peer acknowledges each id it
 * executed in its next heartbeat; the master sends every task not
 * acknowledged again on a new link, in id order, so the highest id
 * received since the last fresh registration tells a repeat: it is
 * acknowledged again, not executed twice. Acknowledgements that no
 * answered heartbeat carried are forgotten with the link, since the
 * master sends their tasks again.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/transport.h"
#include "mc/wire.h"

#include "peer.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u
#define CONNECT_TIMEOUT_MS 3000
#define REGISTER_TIMEOUT_MS 5000
#define DEFAULT_HEARTBEAT_MS 1000u
#define INVENTORY_TIMEOUT_MS 30000
/*
 * Key bytes in one inventory chunk at most: with keys of up to 4 KiB, a
 * full chunk of MC_INVENTORY_CHUNK items could near 5 MiB of msgpack,
 * which is more than one message should make the master buffer.
 */
#define INVENTORY_NAME_BYTES (1u << 20)
/* Longest session token taken from the master (it sends 32 hex digits). */
#define SESSION_MAX 64
/* Distinct keys read past the master that one heartbeat reports at most. */
#define LOCAL_READS_MAX 65536

struct lread {
	uint64_t hash;
	uint16_t tenant_len, key_len;
	char name[];
};

/* Task ids acknowledged in one heartbeat at most: under 600 KiB of msgpack. */
#define ACKS_PER_HEARTBEAT 65536
/*
 * Executed task ids waiting for a heartbeat at most, as many as the
 * master queues for a peer; one beyond it is not acknowledged, and the
 * master retires its task when it expires.
 */
#define ACKS_MAX (1u << 20)

enum ctl_state {
	CTL_IDLE,	 /* waiting for the retry timer */
	CTL_CONNECTING,	 /* non-blocking connect in progress */
	CTL_REGISTERING, /* connected, peer_register outstanding */
	CTL_REGISTERED,	 /* heartbeating */
	CTL_STOPPED,
};

struct control {
	struct peer *p;
	struct mc_addr master;
	struct mc_conn_ops ops;
	int state;
	int fd; /* the socket being connected, or -1 */
	struct mc_conn *conn;
	struct event *connect_ev;
	struct event *retry_ev;
	struct event *hb_ev;
	struct event *stop_ev;
	uint64_t peer_id;
	uint64_t heartbeat_ms;
	unsigned backoff_ms;
	unsigned logged_backoff; /* the backoff step whose failure was logged */
	bool hb_inflight;
	uint64_t hb_seq; /* the change number the heartbeat in flight carries */
	/*
	 * What a resume shows the master, kept across links: the token of
	 * the last fresh registration ("" before the first) and, when
	 * have_ack, the change number the master acknowledged since then.
	 */
	char session[SESSION_MAX + 1];
	bool resuming; /* the outstanding peer_register asks to resume */
	bool have_ack;
	uint64_t acked;
	bool synced; /* the report after the last registration is complete */
	/*
	 * The master's tasks: the highest id received since the last fresh
	 * registration, and the ids executed that no answered heartbeat
	 * acknowledged yet, oldest first; the heartbeat in flight carries
	 * the first acks_inflight of them.
	 */
	uint64_t task_seen;
	uint64_t *acks;
	size_t nacks, acks_cap, acks_inflight;
	uint64_t tasks_repeated;
	/* the inventory report in progress (inv_walk != NULL) */
	struct pindex_walk *inv_walk;
	struct pobj **inv_items; /* MC_INVENTORY_CHUNK slots */
	size_t inv_n;		 /* items of the chunk being packed */
	bool inv_last;
	bool inv_delta;	   /* changes since inv_since, not everything */
	uint64_t inv_base; /* the change number when the report began */
	uint64_t inv_since;
	uint64_t inv_gone_at;	      /* delta: the journal read up to here */
	bool inv_gone_over;	      /* delta: every removal sent */
	struct pindex_gone *inv_gone; /* MC_INVENTORY_CHUNK slots */
	char *inv_names;	      /* INVENTORY_NAME_BYTES, their names */
	size_t inv_ngone;	      /* removals of the chunk being packed */
	uint64_t inv_gen;	      /* bumped when a report starts or stops */
	uint64_t inv_sent, inv_kept, inv_adopted, inv_dropped, inv_removed, inv_gone_sent;
	bool inv_refusal_logged;
	struct mc_registry *methods; /* peer_control_methods, counted */
	/*
	 * Keys read here past the master since the last heartbeat
	 * (struct lread, by name hash), at most LOCAL_READS_MAX: the next
	 * heartbeat reports them, as recency, and forgets them.
	 */
	struct mc_htab lreads;
	size_t nlreads;
	/* master_ranked: the master answers evict_candidates; one query context per tier */
	bool master_ranks;
	struct rank_query {
		struct control *ctl;
		int tier;
	} rank_q[MC_TIER_COUNT];
	/* shutdown */
	void (*done)(void *arg);
	void *done_arg;
};

static void h_drop(struct mc_req *req);
static void h_evict(struct mc_req *req);
static void h_committed(struct mc_req *req);
static void h_grant_key(struct mc_req *req);
static void h_room(struct mc_req *req);
static void write_ack(void *arg, const struct pobj *o);
static void copy_moved(void *arg, const struct pobj *o, int from);
static void copy_dropped(void *arg, const struct pobj *o, enum pool_drop_why why);
static void tier_full(void *arg, int tier);

/* What the master may ask on the control connection. */
const struct mc_method peer_control_methods[] = {
	{ "drop", h_drop, MC_METHOD_PEER },	      { "evict", h_evict, MC_METHOD_PEER },
	{ "committed", h_committed, MC_METHOD_PEER }, { "room", h_room, MC_METHOD_PEER },
	{ "grant_key", h_grant_key, MC_METHOD_PEER }, { NULL, NULL, 0 },
};

static void start_register(struct control *ctl);
static void ranking_start(struct control *ctl, const msgpack_object *answer);
static void session_save(const struct control *ctl);
static void inventory_start(struct control *ctl, bool delta);
static void inventory_abort(struct control *ctl);

/* strerror() text in the lowercase voice of our messages. */
static const char *
errtext(int e, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

static void
schedule_retry(struct control *ctl, const char *why)
{
	struct timeval tv = mc_ms_timeval(ctl->backoff_ms);

	ctl->state = CTL_IDLE;
	if (ctl->logged_backoff != ctl->backoff_ms) {
		mc_warn("cannot reach master %s: %s (retrying in %u ms)", ctl->master.text, why,
			ctl->backoff_ms);
		ctl->logged_backoff = ctl->backoff_ms;
	}
	evtimer_add(ctl->retry_ev, &tv);
	ctl->backoff_ms *= 2;
	if (ctl->backoff_ms > BACKOFF_MAX_MS)
		ctl->backoff_ms = BACKOFF_MAX_MS;
}

/* Forget a connect in progress: its event and its socket. */
static void
drop_connect(struct control *ctl)
{
	if (ctl->connect_ev) {
		event_free(ctl->connect_ev);
		ctl->connect_ev = NULL;
	}
	if (ctl->fd >= 0) {
		close(ctl->fd);
		ctl->fd = -1;
	}
}

static void
connect_failed(struct control *ctl, const char *why)
{
	drop_connect(ctl);
	schedule_retry(ctl, why);
}

static void
connected(struct control *ctl)
{
	struct mc_err err;
	int fd = ctl->fd, one = 1;

	if (ctl->connect_ev) {
		event_free(ctl->connect_ev);
		ctl->connect_ev = NULL;
	}
	if (!ctl->master.is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctl->conn = mc_conn_new(ctl->p->base, fd, &ctl->ops, NULL, &err);
	if (!ctl->conn) {
		connect_failed(ctl, err.msg);
		return;
	}
	/* The connection owns the socket now. */
	ctl->fd = -1;
	start_register(ctl);
}

static void
on_connect_ready(evutil_socket_t fd, short what, void *arg)
{
	struct control *ctl = arg;
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	char eb[128];

	if (what & EV_TIMEOUT) {
		connect_failed(ctl, "connection timed out");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr) {
		connect_failed(ctl, errtext(soerr, eb, sizeof(eb)));
		return;
	}
	connected(ctl);
}

static void
try_connect(evutil_socket_t unused, short what, void *arg)
{
	struct control *ctl = arg;
	struct timeval tv = mc_ms_timeval(CONNECT_TIMEOUT_MS);
	char eb[128];

	(void)unused;
	(void)what;
	if (ctl->state == CTL_STOPPED)
		return;
	ctl->state = CTL_CONNECTING;
	ctl->fd = socket(ctl->master.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->fd < 0) {
		connect_failed(ctl, errtext(errno, eb, sizeof(eb)));
		return;
	}
	if (connect(ctl->fd, (const struct sockaddr *)&ctl->master.ss, ctl->master.len) == 0) {
		connected(ctl);
		return;
	}
	if (errno != EINPROGRESS) {
		connect_failed(ctl,
			       errno == ENOENT ? "no such socket" : errtext(errno, eb, sizeof(eb)));
		return;
	}
	ctl->connect_ev = event_new(ctl->p->base, ctl->fd, EV_WRITE, on_connect_ready, ctl);
	if (!ctl->connect_ev || event_add(ctl->connect_ev, &tv) < 0) {
		connect_failed(ctl, "cannot watch the connecting socket");
		return;
	}
}

/* Close the link after a failure; on_close then schedules the retry. */
static void
drop_link(struct control *ctl, const char *why)
{
	struct mc_conn *c = ctl->conn;

	mc_warn("link to master %s lost: %s", ctl->master.text, why);
	if (c && mc_conn_is_open(c))
		mc_conn_close(c, false);
}

static void
on_close(struct mc_conn *c, void *ctx)
{
	struct peer *p = ctx;
	struct control *ctl = p->ctl;

	if (!ctl || c != ctl->conn)
		return;
	ctl->conn = NULL;
	ctl->hb_inflight = false;
	ctl->nacks = ctl->acks_inflight = 0;
	evtimer_del(ctl->hb_ev);
	inventory_abort(ctl);
	if (ctl->state == CTL_STOPPED)
		return;
	schedule_retry(ctl, "connection closed");
}

static void
pack_tiers(msgpack_packer *pk, struct peer *p)
{
	uint32_t n = 0;

	for (int t = 0; t < MC_TIER_COUNT; t++)
		n += p->media[t] != NULL;
	mc_pack_key(pk, "tiers");
	msgpack_pack_array(pk, n);
	for (int t = 0; t < MC_TIER_COUNT; t++) {
		if (!p->media[t])
			continue;
		msgpack_pack_map(pk, 5 + 2 * p->marks[t].given);
		mc_pack_kv_str(pk, "tier", mc_tier_name(t));
		mc_pack_kv_u64(pk, "capacity", medium_capacity(p->media[t]));
		mc_pack_kv_u64(pk, "used", medium_used(p->media[t]));
		/* what a copy takes: the master's sums then match used */
		mc_pack_kv_u64(pk, "page", p->media[t]->page);
		mc_pack_kv_u64(pk, "per_copy", p->media[t]->per_copy);
		if (!p->marks[t].given)
			continue;
		mc_pack_key(pk, "high");
		msgpack_pack_double(pk, p->marks[t].high);
		mc_pack_key(pk, "low");
		msgpack_pack_double(pk, p->marks[t].low);
	}
}

/* name: [the tiers this peer holds for which pred says so]. */
static void
pack_tier_set(msgpack_packer *pk, const char *name, const struct peer *p,
	      bool (*pred)(const struct reclaimer *r, int tier))
{
	uint32_t n = 0;

	for (int t = 0; t < MC_TIER_COUNT; t++)
		n += p->media[t] != NULL && pred(p->reclaim, t);
	mc_pack_key(pk, name);
	msgpack_pack_array(pk, n);
	for (int t = 0; t < MC_TIER_COUNT; t++)
		if (p->media[t] != NULL && pred(p->reclaim, t))
			mc_pack_cstr(pk, mc_tier_name(t));
}

static void
pack_register(msgpack_packer *pk, const struct control *ctl)
{
	struct peer *p = ctl->p;

	msgpack_pack_map(pk, 8 + ctl->resuming);
	mc_pack_kv_str(pk, "addr", p->advertise);
	mc_pack_kv_str(pk, "host", p->host);
	mc_pack_kv_str(pk, "domain", p->domain);
	mc_pack_kv_str(pk, "evict_mode", evict_mode_name(reclaimer_mode(p->reclaim)));
	/* the tiers whose watermarks this peer keeps itself: no master round for them */
	pack_tier_set(pk, "self_evict", p, reclaimer_self_evicts);
	pack_tiers(pk, p);
	/* The master's tasks this peer serves: an older master sends only drops. */
	mc_pack_key(pk, "task_kinds");
	msgpack_pack_array(pk, 2);
	mc_pack_cstr(pk, "drop");
	mc_pack_cstr(pk, "evict");
	/* what a client may reach its data plane with; an older master reads tcp */
	mc_transport_pack_ours(pk);
	if (!ctl->resuming)
		return;
	mc_pack_key(pk, "resume");
	msgpack_pack_map(pk, 3);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_str(pk, "session", ctl->session);
	mc_pack_kv_u64(pk, "since", ctl->have_ack ? ctl->acked : 0);
}

static bool
lread_eq(const void *entry, const void *key)
{
	const struct lread *a = entry;
	const struct pobj *o = key;

	return a->tenant_len == o->tenant_len && a->key_len == o->key_len &&
	       memcmp(a->name, o->name, (size_t)o->tenant_len + o->key_len) == 0;
}

/* p->local_read: remember o's key for the next heartbeat, once. */
static void
local_read(void *arg, const struct pobj *o)
{
	struct control *ctl = arg;
	size_t n = (size_t)o->tenant_len + o->key_len;
	struct lread *lr;

	if (ctl->nlreads >= LOCAL_READS_MAX || mc_htab_find(&ctl->lreads, o->hash, lread_eq, o))
		return;
	if (!(lr = malloc(sizeof(*lr) + n)))
		return;
	lr->hash = o->hash;
	lr->tenant_len = o->tenant_len;
	lr->key_len = o->key_len;
	memcpy(lr->name, o->name, n);
	if (mc_htab_insert(&ctl->lreads, o->hash, lr) < 0) {
		free(lr);
		return;
	}
	ctl->nlreads++;
}

static void
lreads_clear(struct control *ctl)
{
	size_t cur = 0;
	struct lread *lr;

	while ((lr = mc_htab_next(&ctl->lreads, &cur)) != NULL)
		free(lr);
	mc_htab_free(&ctl->lreads);
	mc_htab_init(&ctl->lreads);
	ctl->nlreads = 0;
}

static void
pack_local_reads(msgpack_packer *pk, const struct control *ctl)
{
	size_t cur = 0;
	const struct lread *lr;

	mc_pack_key(pk, "local_reads");
	msgpack_pack_array(pk, (uint32_t)ctl->nlreads);
	while ((lr = mc_htab_next(&ctl->lreads, &cur)) != NULL) {
		msgpack_pack_map(pk, 2);
		mc_pack_kv_strn(pk, "tenant", lr->name, lr->tenant_len);
		mc_pack_kv_strn(pk, "key", lr->name + lr->tenant_len, lr->key_len);
	}
}

static void
pack_heartbeat(msgpack_packer *pk, const struct control *ctl)
{
	msgpack_pack_map(pk, 5 + (ctl->nlreads > 0) + (ctl->acks_inflight > 0));
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_u64(pk, "seq", ctl->hb_seq);
	pack_tiers(pk, ctl->p);
	pack_tier_set(pk, "self_evict", ctl->p, reclaimer_self_evicts);
	/* overages only group members could cover: the master's round evicts them whole */
	pack_tier_set(pk, "stalled", ctl->p, reclaimer_stalled);
	/* reads the master did not see: recency to it, never frequency */
	if (ctl->nlreads > 0)
		pack_local_reads(pk, ctl);
	if (ctl->acks_inflight == 0)
		return;
	mc_pack_key(pk, "tasks");
	msgpack_pack_array(pk, (uint32_t)ctl->acks_inflight);
	for (size_t i = 0; i < ctl->acks_inflight; i++)
		msgpack_pack_uint64(pk, ctl->acks[i]);
}

/* ---- the master's tasks ---- */

static void
ack_push(struct control *ctl, uint64_t id)
{
	if (ctl->nacks == ctl->acks_cap) {
		size_t cap = ctl->acks_cap ? ctl->acks_cap * 2 : 256;
		uint64_t *v;

		if (cap > ACKS_MAX || (v = realloc(ctl->acks, cap * sizeof(*v))) == NULL)
			return;
		ctl->acks = v;
		ctl->acks_cap = cap;
	}
	ctl->acks[ctl->nacks++] = id;
}

/* Whether to execute a drop item: not when its task was received already. */
static bool
admit_task(void *arg, const msgpack_object *item)
{
	struct control *ctl = arg;
	uint64_t id;
	bool fresh;

	/* Without a task id (an older master) it is done and not acknowledged. */
	if (mc_map_u64(item, "task", &id, NULL) != 1)
		return true;
	fresh = id > ctl->task_seen;
	if (fresh)
		ctl->task_seen = id;
	else
		ctl->tasks_repeated++;
	ack_push(ctl, id);
	return fresh;
}

static void
h_drop(struct mc_req *req)
{
	struct peer *p = req->ctx;
	struct control *ctl = p->ctl;
	uint64_t repeated = ctl->tasks_repeated;

	peer_free_items(req, POOL_DELETE, admit_task, ctl);
	if (ctl->tasks_repeated > repeated)
		mc_info("master %s sent %llu tasks again that were executed already; "
			"acknowledging them again",
			ctl->master.text, (unsigned long long)(ctl->tasks_repeated - repeated));
}

/* The master's rounds: each victim reclaimed from the tier it was charged to. */
static void
h_evict(struct mc_req *req)
{
	struct peer *p = req->ctx;

	peer_free_items(req, POOL_RECLAIM, admit_task, p->ctl);
}

/* A copy's header was written again on the disk queue (err NULL), or not. */
static void
resealed(void *arg, const struct mc_err *err)
{
	struct pobj *o = arg;

	if (err != NULL)
		mc_warn("cannot keep a copy's metadata in its %s header: %s", mc_tier_name(o->tier),
			err->msg);
	pindex_release(o->ix, o);
}

/*
 * The commit notice: what the master knows of a copy once put_end made
 * it readable, kept with the copy (and in its extent header, on a tier
 * that survives a restart) so that the inventory can tell a master that
 * lost it. A notice for a copy this peer no longer holds at that
 * version is ignored.
 */
static void
h_committed(struct mc_req *req)
{
	struct peer *p = req->ctx;
	const char *tenant = MC_DEFAULT_TENANT, *key, *type = "", *group = "";
	size_t tlen = strlen(MC_DEFAULT_TENANT), klen, type_len = 0, group_len = 0;
	uint64_t version = 0, remaining = 0, now;
	bool hard_pin = false;
	struct medium_meta meta;
	struct pmeta *pm;
	struct mc_err err;
	struct pobj *o;

	if (mc_map_str(req->params, "tenant", &tenant, &tlen, &err) < 0 ||
	    mc_map_str(req->params, "key", &key, &klen, &err) != 1 ||
	    mc_map_u64(req->params, "version", &version, &err) != 1 ||
	    mc_map_str(req->params, "type", &type, &type_len, &err) < 0 ||
	    mc_map_str(req->params, "group", &group, &group_len, &err) < 0 ||
	    mc_map_bool(req->params, "hard_pin", &hard_pin, &err) < 0 ||
	    mc_map_u64(req->params, "sp_remaining", &remaining, &err) < 0 ||
	    type_len > MC_NAME_MAX || group_len > MC_NAME_MAX) {
		mc_warn("malformed commit notice from master %s", p->ctl->master.text);
		return;
	}
	o = pindex_acquire(&p->index, tenant, tlen, key, klen);
	if (!o)
		return;
	if (o->version != version) {
		pindex_release(&p->index, o);
		return;
	}
	now = mc_now_ms();
	pm = pmeta_new(type, type_len, group, group_len, hard_pin,
		       remaining ? mc_add_sat(now, remaining) : 0);
	if (!pm) {
		pindex_release(&p->index, o);
		mc_warn("out of memory for a copy's metadata: a restart forgets its pins");
		return;
	}
	pindex_set_meta(&p->index, o, pm, now);
	pobj_medium_meta(o, &meta);
	/* A header on disk is written again by a worker; o stays held until it is. */
	if (o->size > 0 && medium_blocks(p->media[o->tier]) && p->diskq != NULL) {
		diskq_reseal(p->diskq, p->media[o->tier], o->off, o->size, &meta, resealed, o);
		return;
	}
	if (o->size > 0 && medium_seal(p->media[o->tier], o->off, o->size, &meta, &err) < 0)
		mc_warn("cannot keep a copy's metadata in its %s header: %s", mc_tier_name(o->tier),
			err.msg);
	pindex_release(&p->index, o);
}

/* * The master could not place a put on a tier this peer evicts itself:
 * room {tier, bytes, used} wakes the local eviction worker for its room.
 */
static void
h_room(struct mc_req *req)
{
	struct peer *p = req->ctx;
	const char *tier;
	size_t tlen;
	uint64_t bytes = 0, used = 0;
	struct mc_err err;
	int t;

	if (mc_map_str(req->params, "tier", &tier, &tlen, &err) != 1 ||
	    mc_map_u64(req->params, "bytes", &bytes, &err) < 0 ||
	    mc_map_u64(req->params, "used", &used, &err) < 0 ||
	    (t = mc_tier_parse(tier, tlen, &err)) < 0) {
		mc_warn("malformed room request from master %s", p->ctl->master.text);
		if (!req->notify)
			mc_reply_err(req, MC_ERR_INVALID, "room needs tier and bytes");
		return;
	}
	reclaimer_room(p->reclaim, t, bytes, used);
	if (!req->notify)
		mc_reply_ok_empty(req);
}

/* A rotated grant key, for the id this peer registered under. */
static void
h_grant_key(struct mc_req *req)
{
	struct peer *p = req->ctx;
	struct control *ctl = p->ctl;
	struct mc_err err;

	if (ctl->state != CTL_REGISTERED ||
	    peer_grant_key(p, (uint32_t)ctl->peer_id, req->params, &err) < 0)
		mc_warn("master %s sent a grant key this peer cannot take%s%s", ctl->master.text,
			ctl->state != CTL_REGISTERED ? " before registering" : ": ",
			ctl->state != CTL_REGISTERED ? "" : err.msg);
	else
		mc_info("took grant key generation %u from master %s", p->grants.keys.k[0].s.gen,
			ctl->master.text);
	if (!req->notify)
		mc_reply_ok_empty(req);
}

/* The answered heartbeat acknowledged what it carried. */
static void
acks_taken(struct control *ctl)
{
	/* none carried: acks may still be NULL, which memmove may not see */
	if (ctl->acks_inflight == 0)
		return;
	memmove(ctl->acks, ctl->acks + ctl->acks_inflight,
		(ctl->nacks - ctl->acks_inflight) * sizeof(*ctl->acks));
	ctl->nacks -= ctl->acks_inflight;
	ctl->acks_inflight = 0;
}

static void
pack_unregister(msgpack_packer *pk, const struct control *ctl)
{
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
}

static void
schedule_heartbeat(struct control *ctl)
{
	struct timeval tv = mc_ms_timeval(ctl->heartbeat_ms);

	evtimer_add(ctl->hb_ev, &tv);
}

static void
on_register(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct control *ctl = arg;
	struct mc_err err;
	uint64_t hb = DEFAULT_HEARTBEAT_MS, id = 0;
	char session[SESSION_MAX + 1] = "";
	bool resumed = false;

	if (c != ctl->conn || ctl->state != CTL_REGISTERING)
		return;
	if (!resp) {
		drop_link(ctl, cerr ? cerr->msg : "no answer to peer_register");
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		drop_link(ctl, err.msg);
		return;
	}
	if (mc_map_u64(resp->body, "peer_id", &id, &err) <= 0) {
		drop_link(ctl, "peer_register answer has no peer_id");
		return;
	}
	/* A master without sessions answers neither: every registration is fresh. */
	if (mc_map_strcpy(resp->body, "session", session, sizeof(session), &err) < 0 ||
	    mc_map_bool(resp->body, "resumed", &resumed, &err) < 0) {
		drop_link(ctl, err.msg);
		return;
	}
	resumed = resumed && ctl->resuming && id == ctl->peer_id;
	/* Without its key this peer could serve no grant: not registered, then. */
	if (id > UINT32_MAX ||
	    peer_grant_key(ctl->p, (uint32_t)id, mc_map_get(resp->body, "grant_key"), &err) < 0) {
		drop_link(ctl, "peer_register answer has no usable grant_key");
		return;
	}
	if (mc_map_u64(resp->body, "heartbeat_ms", &hb, &err) < 0 || hb == 0)
		hb = DEFAULT_HEARTBEAT_MS;
	/* A master asking for heartbeats faster than 10 ms is not taken literally. */
	ctl->heartbeat_ms = hb < 10 ? 10 : hb;
	ctl->state = CTL_REGISTERED;
	ctl->backoff_ms = BACKOFF_MIN_MS;
	ctl->logged_backoff = 0;
	ctl->synced = false;
	if (resumed) {
		ctl->p->st.resumes++;
		mc_info("resumed with master %s as peer %llu (heartbeat every %llu ms)",
			ctl->master.text, (unsigned long long)id,
			(unsigned long long)ctl->heartbeat_ms);
	} else {
		if (ctl->resuming)
			mc_info("master %s did not resume peer %llu; registering anew",
				ctl->master.text, (unsigned long long)ctl->peer_id);
		/* Acknowledgements of an earlier registration mean nothing to this one. */
		ctl->have_ack = false;
		ctl->task_seen = 0;
		ctl->nacks = ctl->acks_inflight = 0;
		ctl->peer_id = id;
		memcpy(ctl->session, session, sizeof(ctl->session));
		session_save(ctl);
		ctl->p->st.registrations++;
		mc_info("registered with master %s as peer %llu (heartbeat every %llu ms)",
			ctl->master.text, (unsigned long long)id,
			(unsigned long long)ctl->heartbeat_ms);
	}
	ctl->resuming = false;
	/* said after the registration it comes with, and known once the peer is ready */
	ranking_start(ctl, resp->body);
	mc_ready_fd_write(ctl->p->ready_fd, ctl->p->bound);
	ctl->p->ready_fd = -1;
	schedule_heartbeat(ctl);
	inventory_start(ctl, resumed && ctl->have_ack);
}

/* ---- master_ranked: the master's ranking of this peer's keys ---- */

static void
on_rank(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct rank_query *q = arg;
	struct control *ctl = q->ctl;
	struct reclaim_ranked *keys = NULL;
	const msgpack_object_array *a;
	struct mc_err err;
	size_t n = 0;

	(void)cerr;
	if (c != ctl->conn || !resp) {
		reclaimer_answer(ctl->p->reclaim, q->tier, NULL, 0);
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		/* an older master: it knows no such method */
		if (err.code == MC_ERR_INVALID && strstr(err.msg, "unknown method"))
			reclaimer_no_ranking(ctl->p->reclaim);
		else
			reclaimer_answer(ctl->p->reclaim, q->tier, NULL, 0);
		return;
	}
	a = mc_map_array(resp->body, "keys");
	if (a && a->size > 0 && (keys = calloc(a->size, sizeof(*keys))) != NULL) {
		for (uint32_t i = 0; i < a->size; i++) {
			const msgpack_object *it = &a->ptr[i];
			struct reclaim_ranked *k = &keys[n];

			k->tenant = MC_DEFAULT_TENANT;
			k->tenant_len = strlen(MC_DEFAULT_TENANT);
			if (mc_map_str(it, "tenant", &k->tenant, &k->tenant_len, &err) < 0 ||
			    mc_map_str(it, "key", &k->key, &k->key_len, &err) != 1 ||
			    mc_map_u64(it, "version", &k->version, &err) != 1 ||
			    mc_map_u64(it, "bytes", &k->bytes, &err) < 0)
				continue;
			n++;
		}
	}
	reclaimer_answer(ctl->p->reclaim, q->tier, keys, n);
	free(keys);
}

/* reclaim_ask_fn: evict_candidates {peer_id, tier, bytes, max}, answered in on_rank. */
static int
ask_rank(void *arg, int tier, uint64_t bytes, unsigned max)
{
	struct control *ctl = arg;
	msgpack_packer *pk;

	if (ctl->state != CTL_REGISTERED || !ctl->master_ranks)
		return -1;
	pk = mc_conn_begin(ctl->conn, "evict_candidates");
	msgpack_pack_map(pk, 4);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_str(pk, "tier", mc_tier_name(tier));
	mc_pack_kv_u64(pk, "bytes", bytes);
	mc_pack_kv_u64(pk, "max", max);
	ctl->rank_q[tier] = (struct rank_query){ ctl, tier };
	return mc_conn_call(ctl->conn, RECLAIM_ANSWER_TTL_MS, on_rank, &ctl->rank_q[tier]) < 0 ? -1
											       : 0;
}

/*
 * A registration's answer says whether the master ranks (rank: true);
 * master_ranked against one that does not evicts by local order. Every
 * registration says it anew: the master may have been replaced by an
 * older one, or a newer.
 */
static void
ranking_start(struct control *ctl, const msgpack_object *answer)
{
	struct reclaimer *r = ctl->p->reclaim;
	struct mc_err err;
	bool ranks = false;

	if (reclaimer_mode(r) != EVICT_MASTER_RANKED)
		return;
	if (mc_map_bool(answer, "rank", &ranks, &err) < 0)
		ranks = false;
	ctl->master_ranks = ranks;
	if (ranks)
		reclaimer_on_ask(r, ask_rank, ctl);
	else
		reclaimer_no_ranking(r);
}

/*
 * The session kept beside copies that survive a restart (p->session_path,
 * "PEER_ID TOKEN\n"): a peer started again on them resumes its entry at
 * the master, which keeps the metadata of the copies it reports.
 */
static void
session_load(struct control *ctl)
{
	const char *path = ctl->p->session_path;
	unsigned long long id;
	char token[SESSION_MAX + 1];
	FILE *f;

	if (!path || !(f = fopen(path, "r")))
		return;
	if (fscanf(f, "%llu %64s", &id, token) == 2 && id > 0 && id <= UINT32_MAX) {
		ctl->peer_id = id;
		memcpy(ctl->session, token, sizeof(ctl->session));
		mc_info("resuming as peer %llu with the session kept in %s", id, path);
	} else {
		mc_warn("ignoring %s: not a session this peer wrote", path);
	}
	fclose(f);
}

static void
session_save(const struct control *ctl)
{
	const char *path = ctl->p->session_path;
	char tmp[4096];
	FILE *f;
	int bad;

	if (!path || ctl->session[0] == '\0')
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w"))) {
		mc_warn("cannot keep the session in %s: %s", tmp, strerror(errno));
		return;
	}
	bad = fprintf(f, "%llu %s\n", (unsigned long long)ctl->peer_id, ctl->session) < 0;
	bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		mc_warn("cannot keep the session in %s: %s", path, strerror(errno));
		unlink(tmp);
	}
}

static void
start_register(struct control *ctl)
{
	ctl->state = CTL_REGISTERING;
	ctl->resuming = ctl->session[0] != '\0';
	if (ctl->p->secret[0] != '\0') {
		/* a notification: the connection is served in order, so it binds the role first */
		msgpack_packer *pk = mc_conn_begin(ctl->conn, "hello");

		msgpack_pack_map(pk, 1);
		mc_pack_kv_str(pk, "token", ctl->p->secret);
		if (mc_conn_notify(ctl->conn) < 0) {
			drop_link(ctl, "cannot send hello");
			return;
		}
	}
	pack_register(mc_conn_begin(ctl->conn, "peer_register"), ctl);
	if (mc_conn_call(ctl->conn, REGISTER_TIMEOUT_MS, on_register, ctl) < 0)
		drop_link(ctl, "cannot send peer_register");
}

static void
on_heartbeat(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct control *ctl = arg;
	struct mc_err err;

	if (c != ctl->conn)
		return;
	ctl->hb_inflight = false;
	if (ctl->state != CTL_REGISTERED)
		return;
	if (!resp) {
		drop_link(ctl, cerr ? cerr->msg : "no answer to peer_heartbeat");
		return;
	}
	if (mc_msg_error(resp, &err) == 0) {
		acks_taken(ctl);
		/*
		 * The master has heard of every change up to hb_seq, unless a
		 * report is still on its way: then acknowledging would skip
		 * what that report has not told yet, should the link drop.
		 */
		if (ctl->synced && ctl->hb_seq >= ctl->acked) {
			ctl->acked = ctl->hb_seq;
			ctl->have_ack = true;
			pindex_journal_trim(&ctl->p->index, ctl->acked);
		}
		return;
	}
	if (err.code == MC_ERR_NOT_FOUND) {
		/*
		 * The master restarted or declared us dead. Resuming is tried
		 * all the same; a master that forgot us registers us anew.
		 */
		mc_warn("master %s does not know peer %llu; registering again", ctl->master.text,
			(unsigned long long)ctl->peer_id);
		ctl->acks_inflight = 0;
		evtimer_del(ctl->hb_ev);
		inventory_abort(ctl);
		start_register(ctl);
		return;
	}
	/* What it carried goes again with the next one. */
	ctl->acks_inflight = 0;
	mc_warn("heartbeat refused by master %s: %s", ctl->master.text, err.msg);
}

static void
heartbeat_tick(evutil_socket_t unused, short what, void *arg)
{
	struct control *ctl = arg;
	uint64_t timeout;

	(void)unused;
	(void)what;
	if (ctl->state != CTL_REGISTERED || !ctl->conn)
		return;
	schedule_heartbeat(ctl);
	/* One heartbeat at a time: a slow master is not buried in them. */
	if (ctl->hb_inflight)
		return;
	timeout = ctl->heartbeat_ms * 3;
	if (timeout < 1000)
		timeout = 1000;
	if (timeout > 30000)
		timeout = 30000;
	ctl->hb_seq = pindex_seq(&ctl->p->index);
	ctl->acks_inflight = ctl->nacks < ACKS_PER_HEARTBEAT ? ctl->nacks : ACKS_PER_HEARTBEAT;
	pack_heartbeat(mc_conn_begin(ctl->conn, "peer_heartbeat"), ctl);
	/* sent or lost with the link: recency is a hint, not owed */
	lreads_clear(ctl);
	if (mc_conn_call(ctl->conn, (int)timeout, on_heartbeat, ctl) < 0) {
		drop_link(ctl, "cannot send peer_heartbeat");
		return;
	}
	ctl->hb_inflight = true;
}

/* ---- the inventory report ---- */

/*
 * An answer must reach the report it belongs to: a report abandoned on a
 * link that stays open (re-registration) still has its call in flight.
 */
struct inv_ticket {
	struct control *ctl;
	uint64_t gen;
};

static void inventory_send(struct control *ctl);

static void
inventory_abort(struct control *ctl)
{
	ctl->inv_gen++;
	if (!ctl->inv_walk)
		return;
	pindex_walk_end(ctl->inv_walk);
	ctl->inv_walk = NULL;
}

/*
 * Report the changes since the last acknowledged number when delta, else
 * everything; either way what the master has heard of once it answered
 * the last chunk is everything up to the number the report began at.
 */
static void
inventory_start(struct control *ctl, bool delta)
{
	struct pindex *ix = &ctl->p->index;
	struct mc_err err;

	inventory_abort(ctl);
	ctl->inv_base = pindex_seq(ix);
	ctl->inv_delta = delta;
	ctl->inv_since = ctl->inv_gone_at = ctl->acked;
	ctl->inv_gone_over = false;
	ctl->inv_walk =
		delta ? pindex_walk_since(ix, ctl->inv_since, &err) : pindex_walk_begin(ix, &err);
	if (!ctl->inv_walk) {
		mc_warn("cannot report the inventory to master %s: %s", ctl->master.text, err.msg);
		return;
	}
	ctl->inv_sent = ctl->inv_kept = ctl->inv_adopted = ctl->inv_dropped = 0;
	ctl->inv_removed = ctl->inv_gone_sent = 0;
	inventory_send(ctl);
}

static void
pack_inventory(msgpack_packer *pk, const struct control *ctl)
{
	size_t i;

	msgpack_pack_map(pk, ctl->inv_delta ? 5 : 3);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	if (ctl->inv_delta) {
		mc_pack_kv_bool(pk, "delta", true);
		mc_pack_key(pk, "removed");
		msgpack_pack_array(pk, (uint32_t)ctl->inv_ngone);
		for (i = 0; i < ctl->inv_ngone; i++) {
			const struct pindex_gone *g = &ctl->inv_gone[i];

			msgpack_pack_map(pk, 3);
			mc_pack_kv_strn(pk, "tenant", g->name, g->tenant_len);
			mc_pack_kv_strn(pk, "key", g->name + g->tenant_len, g->key_len);
			mc_pack_kv_u64(pk, "version", g->version);
		}
	}
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, (uint32_t)ctl->inv_n);
	for (i = 0; i < ctl->inv_n; i++) {
		const struct pobj *o = ctl->inv_items[i];
		const struct pmeta *pm = o->meta;

		msgpack_pack_map(pk, 6 + (pm ? 3 + (pm->group_len > 0) : 0));
		mc_pack_kv_strn(pk, "tenant", o->name, o->tenant_len);
		mc_pack_kv_strn(pk, "key", pobj_key(o), o->key_len);
		mc_pack_kv_str(pk, "tier", mc_tier_name(o->tier));
		mc_pack_kv_u64(pk, "size", o->size);
		mc_pack_kv_u64(pk, "version", o->version);
		mc_pack_kv_u64(pk, "checksum", o->checksum);
		if (!pm)
			continue;
		mc_pack_kv_strn(pk, "type", pm->names, pm->type_len);
		if (pm->group_len > 0)
			mc_pack_kv_strn(pk, "group", pm->names + pm->type_len, pm->group_len);
		mc_pack_kv_bool(pk, "hard_pin", pm->hard_pin);
		mc_pack_kv_u64(pk, "sp_deadline", pm->sp_deadline);
	}
	mc_pack_kv_bool(pk, "done", ctl->inv_last);
}

/* The master has heard of every change up to the report's start. */
static void
inventory_synced(struct control *ctl)
{
	ctl->synced = true;
	ctl->acked = ctl->inv_base;
	ctl->have_ack = true;
	pindex_journal_trim(&ctl->p->index, ctl->acked);
}

static void
inventory_refused(struct control *ctl, const struct mc_err *err)
{
	/*
	 * A master that does not reconcile (an older one answers "unknown
	 * method") is not asked again until the next registration, and
	 * said so once: it serves the objects it knows either way.
	 */
	if (!ctl->inv_refusal_logged)
		mc_info("master %s did not take the inventory (%s); not reporting it",
			ctl->master.text, err->msg);
	else
		mc_debug("master %s did not take the inventory (%s)", ctl->master.text, err->msg);
	ctl->inv_refusal_logged = true;
	inventory_abort(ctl);
	/* Nothing more will be told: heartbeats may acknowledge again. */
	inventory_synced(ctl);
}

static void
on_inventory(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct inv_ticket *t = arg;
	struct control *ctl = t->ctl;
	uint64_t gen = t->gen, kept = 0, adopted = 0, dropped = 0, removed = 0;
	struct mc_err err;

	free(t);
	if (c != ctl->conn || gen != ctl->inv_gen || !ctl->inv_walk)
		return;
	if (!resp) {
		/* A closing link is handled by on_close; a silent master is dropped. */
		if (mc_conn_is_open(c))
			drop_link(ctl, cerr ? cerr->msg : "no answer to peer_inventory");
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		inventory_refused(ctl, &err);
		return;
	}
	/* Counts are informative: a malformed one is taken as 0, not fatal. */
	if (mc_map_u64(resp->body, "kept", &kept, &err) < 0)
		kept = 0;
	if (mc_map_u64(resp->body, "adopted", &adopted, &err) < 0)
		adopted = 0;
	if (mc_map_u64(resp->body, "dropped", &dropped, &err) < 0)
		dropped = 0;
	if (mc_map_u64(resp->body, "removed", &removed, &err) < 0)
		removed = 0;
	ctl->inv_kept += kept;
	ctl->inv_adopted += adopted;
	ctl->inv_dropped += dropped;
	ctl->inv_removed += removed;
	if (!ctl->inv_last) {
		inventory_send(ctl);
		return;
	}
	if (ctl->inv_delta) {
		mc_info("reported changes to the master: %llu removed (%llu replicas forgotten), "
			"%llu linked (kept %llu, adopted %llu, dropped %llu)",
			(unsigned long long)ctl->inv_gone_sent,
			(unsigned long long)ctl->inv_removed, (unsigned long long)ctl->inv_sent,
			(unsigned long long)ctl->inv_kept, (unsigned long long)ctl->inv_adopted,
			(unsigned long long)ctl->inv_dropped);
	} else {
		ctl->p->st.inventory_reports++;
		mc_info("reported %llu objects to the master (kept %llu, adopted %llu, dropped "
			"%llu)",
			(unsigned long long)ctl->inv_sent, (unsigned long long)ctl->inv_kept,
			(unsigned long long)ctl->inv_adopted, (unsigned long long)ctl->inv_dropped);
	}
	inventory_abort(ctl);
	inventory_synced(ctl);
}

/*
 * The removals of a delta's next chunk, read from the journal. False
 * when the journal forgot some of them: the delta cannot be complete.
 */
static bool
take_removals(struct control *ctl)
{
	bool lost;

	ctl->inv_ngone = 0;
	if (ctl->inv_gone_over)
		return true;
	ctl->inv_ngone =
		pindex_gone_next(&ctl->p->index, &ctl->inv_gone_at, ctl->inv_base, ctl->inv_gone,
				 MC_INVENTORY_CHUNK, ctl->inv_names, INVENTORY_NAME_BYTES, &lost);
	if (lost)
		return false;
	ctl->inv_gone_over = ctl->inv_ngone == 0;
	return true;
}

/*
 * Take the next slice and send it as one peer_inventory call: in a delta
 * the removals go first, in chunks of their own, then the entries.
 */
static void
inventory_send(struct control *ctl)
{
	struct inv_ticket *t;
	int r;

	if (ctl->inv_delta && !take_removals(ctl)) {
		mc_info("the journal of removals does not reach back to change %llu; "
			"reporting the whole inventory",
			(unsigned long long)ctl->inv_since);
		inventory_start(ctl, false);
		return;
	}
	ctl->inv_n = 0;
	if (ctl->inv_ngone == 0)
		ctl->inv_n = pindex_walk_next(ctl->inv_walk, ctl->inv_items, MC_INVENTORY_CHUNK,
					      INVENTORY_NAME_BYTES);
	ctl->inv_last = (!ctl->inv_delta || ctl->inv_gone_over) && pindex_walk_over(ctl->inv_walk);
	t = malloc(sizeof(*t));
	if (!t) {
		pindex_release_many(&ctl->p->index, ctl->inv_items, ctl->inv_n);
		ctl->inv_n = 0;
		mc_warn("cannot report the inventory to master %s: out of memory",
			ctl->master.text);
		inventory_abort(ctl);
		return;
	}
	t->ctl = ctl;
	t->gen = ctl->inv_gen;
	pack_inventory(mc_conn_begin(ctl->conn, "peer_inventory"), ctl);
	r = mc_conn_call(ctl->conn, INVENTORY_TIMEOUT_MS, on_inventory, t);
	/* The call holds packed bytes now; the entries may go. */
	pindex_release_many(&ctl->p->index, ctl->inv_items, ctl->inv_n);
	if (r < 0) {
		free(t);
		ctl->inv_n = ctl->inv_ngone = 0;
		drop_link(ctl, "cannot send peer_inventory");
		return;
	}
	ctl->inv_sent += ctl->inv_n;
	ctl->inv_gone_sent += ctl->inv_ngone;
	ctl->inv_n = ctl->inv_ngone = 0;
}

struct control *
control_new(struct peer *p, const struct mc_addr *master, struct mc_err *err)
{
	struct control *ctl = calloc(1, sizeof(*ctl));

	if (!ctl) {
		mc_err_errno(err, "cannot allocate the master link");
		return NULL;
	}
	ctl->p = p;
	p->committed = write_ack;
	p->committed_arg = ctl;
	p->full = tier_full;
	p->full_arg = ctl;
	p->local_read = local_read;
	p->local_read_arg = ctl;
	mc_htab_init(&ctl->lreads);
	p->pool.on_drop = copy_dropped;
	p->pool.on_drop_arg = ctl;
	if (p->mover)
		mover_on_moved(p->mover, copy_moved, ctl);
	ctl->master = *master;
	ctl->fd = -1;
	ctl->state = CTL_IDLE;
	ctl->backoff_ms = BACKOFF_MIN_MS;
	ctl->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
	session_load(ctl);
	ctl->methods = mc_registry_new(p->registry, err);
	if (ctl->methods == NULL || mc_registry_add(ctl->methods, peer_control_methods, err) != 0)
		goto fail;
	ctl->ops.methods = ctl->methods;
	ctl->ops.ctx = p;
	ctl->ops.on_close = on_close;
	ctl->inv_items = calloc(MC_INVENTORY_CHUNK, sizeof(*ctl->inv_items));
	ctl->inv_gone = calloc(MC_INVENTORY_CHUNK, sizeof(*ctl->inv_gone));
	ctl->inv_names = malloc(INVENTORY_NAME_BYTES);
	if (!ctl->inv_items || !ctl->inv_gone || !ctl->inv_names) {
		mc_err_errno(err, "cannot allocate the master link");
		goto fail;
	}
	ctl->retry_ev = evtimer_new(p->base, try_connect, ctl);
	ctl->hb_ev = evtimer_new(p->base, heartbeat_tick, ctl);
	if (!ctl->retry_ev || !ctl->hb_ev) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot create master link timers");
		goto fail;
	}
	return ctl;
fail:
	control_free(ctl);
	return NULL;
}

void
control_start(struct control *ctl)
{
	struct timeval tv = { 0, 0 };

	evtimer_add(ctl->retry_ev, &tv);
}

static void
finish_shutdown(struct control *ctl)
{
	void (*done)(void *) = ctl->done;

	if (!done)
		return;
	ctl->done = NULL;
	if (ctl->stop_ev)
		evtimer_del(ctl->stop_ev);
	done(ctl->done_arg);
}

static void
on_unregister(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct control *ctl = arg;
	struct mc_err err;

	(void)c;
	if (!ctl->done)
		return;
	if (!resp)
		mc_warn("cannot unregister from master %s: %s", ctl->master.text,
			cerr ? cerr->msg : "no answer");
	else if (mc_msg_error(resp, &err) < 0)
		mc_warn("master %s refused to unregister: %s", ctl->master.text, err.msg);
	else
		mc_info("unregistered from master %s", ctl->master.text);
	finish_shutdown(ctl);
}

static void
stop_timeout(evutil_socket_t unused, short what, void *arg)
{
	struct control *ctl = arg;

	(void)unused;
	(void)what;
	if (ctl->done)
		mc_warn("master %s did not answer peer_unregister in time", ctl->master.text);
	finish_shutdown(ctl);
}

void
control_shutdown(struct control *ctl, int timeout_ms, void (*done)(void *arg), void *arg)
{
	bool registered = ctl->state == CTL_REGISTERED && ctl->conn;
	struct timeval tv = mc_ms_timeval((uint64_t)timeout_ms);

	ctl->state = CTL_STOPPED;
	ctl->done = done;
	ctl->done_arg = arg;
	evtimer_del(ctl->retry_ev);
	evtimer_del(ctl->hb_ev);
	inventory_abort(ctl);
	drop_connect(ctl);
	if (!registered) {
		finish_shutdown(ctl);
		return;
	}
	ctl->stop_ev = evtimer_new(ctl->p->base, stop_timeout, ctl);
	if (!ctl->stop_ev || evtimer_add(ctl->stop_ev, &tv) < 0) {
		finish_shutdown(ctl);
		return;
	}
	pack_unregister(mc_conn_begin(ctl->conn, "peer_unregister"), ctl);
	if (mc_conn_call(ctl->conn, timeout_ms, on_unregister, ctl) < 0)
		finish_shutdown(ctl);
}

void
control_free(struct control *ctl)
{
	struct mc_conn *c;

	if (!ctl)
		return;
	ctl->state = CTL_STOPPED;
	ctl->done = NULL;
	ctl->p->committed = NULL;
	ctl->p->full = NULL;
	ctl->p->local_read = NULL;
	lreads_clear(ctl);
	mc_htab_free(&ctl->lreads);
	ctl->p->pool.on_drop = NULL;
	if (ctl->p->mover)
		mover_on_moved(ctl->p->mover, NULL, NULL);
	c = ctl->conn;
	if (c) {
		/* on_close and pending call callbacks see no link and do nothing. */
		ctl->conn = NULL;
		mc_conn_close(c, false);
	}
	/* Before the index goes: the walk's markers sit on its list. */
	inventory_abort(ctl);
	free(ctl->inv_items);
	free(ctl->inv_gone);
	free(ctl->inv_names);
	free(ctl->acks);
	if (ctl->connect_ev)
		event_free(ctl->connect_ev);
	if (ctl->fd >= 0)
		close(ctl->fd);
	if (ctl->retry_ev)
		event_free(ctl->retry_ev);
	if (ctl->hb_ev)
		event_free(ctl->hb_ev);
	if (ctl->stop_ev)
		event_free(ctl->stop_ev);
	mc_registry_free(ctl->methods);
	free(ctl);
}

/*
 * A notification about one copy to the master, its peer_id, tenant and
 * key packed (the caller packs fields more): NULL when there is no link.
 */
static msgpack_packer *
copy_notice(struct control *ctl, const char *method, const struct pobj *o, uint32_t fields)
{
	msgpack_packer *pk;

	if (ctl->state != CTL_REGISTERED || ctl->conn == NULL)
		return NULL;
	pk = mc_conn_begin(ctl->conn, method);
	msgpack_pack_map(pk, 3 + fields);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_strn(pk, "tenant", o->name, o->tenant_len);
	mc_pack_kv_strn(pk, "key", pobj_key(o), o->key_len);
	return pk;
}

static void
copy_notice_send(struct control *ctl, const char *method, const char *lost)
{
	if (mc_conn_notify(ctl->conn) < 0)
		mc_warn("cannot send %s to master %s: %s", method, ctl->master.text, lost);
}

/*
 * Tell the master that o's bytes are committed here (p->committed). Lost
 * with the link: the master then completes nothing it was not told of,
 * and the put fails or is tried again.
 */
static void
write_ack(void *arg, const struct pobj *o)
{
	struct control *ctl = arg;
	msgpack_packer *pk = copy_notice(ctl, "write_ack", o, 3);

	if (!pk)
		return;
	mc_pack_kv_str(pk, "tier", mc_tier_name(o->tier));
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->size);
	copy_notice_send(ctl, "write_ack", "its put_end will not complete it");
}

/*
 * A copy moved between tiers (the mover's hook), or was dropped for
 * capacity (the pool's): the master routes reads by where copies are.
 * Lost with the link, the next inventory tells it.
 */
static void
copy_moved(void *arg, const struct pobj *o, int from)
{
	struct control *ctl = arg;
	msgpack_packer *pk = copy_notice(ctl, "copy_moved", o, 4);

	if (!pk)
		return;
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_str(pk, "from", mc_tier_name(from));
	mc_pack_kv_str(pk, "to", mc_tier_name(o->tier));
	copy_notice_send(ctl, "copy_moved", "the next inventory tells it");
}

static void
copy_dropped(void *arg, const struct pobj *o, enum pool_drop_why why)
{
	struct control *ctl = arg;
	msgpack_packer *pk = copy_notice(ctl, "copy_dropped", o, 3);

	if (!pk)
		return;
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_str(pk, "tier", mc_tier_name(o->tier));
	mc_pack_kv_str(pk, "reason", pool_drop_why_name(why));
	copy_notice_send(ctl, "copy_dropped", "the next inventory tells it");
}

/* A write found tier full: the next heartbeat goes now, with the usage. */
static void
tier_full(void *arg, int tier)
{
	struct control *ctl = arg;
	struct timeval now = { 0, 0 };

	(void)tier;
	if (ctl->state == CTL_REGISTERED && !ctl->hb_inflight)
		evtimer_add(ctl->hb_ev, &now);
}
