/*
 * The link to the master: connect, register, heartbeat, reconnect,
 * unregister on the way out. What goes over it belongs to the modules
 * beside this one (control.h): the inventory, the ranking, the tasks.
 *
 * Nothing here may stall the event loop that serves reads, so the
 * connect itself is non-blocking (a socket, a connect in progress and an
 * event for writability) before the socket is handed to mc_conn_new.
 * A lost link is retried with exponential backoff, 100 ms doubling to
 * 5 s, and each backoff step logs at most one failure, so a master that
 * stays down costs a handful of lines, not one per attempt.
 *
 * A lost link does not make a new peer. The master's first answer
 * carries a session token; every later registration shows it (with the
 * peer id) to resume the same entry, so the master keeps the replicas
 * and all metadata. A resumed peer then reports only what changed in
 * its index since the change number the master last acknowledged: each
 * answered heartbeat acknowledges the number it carried, once the report
 * after the last registration is complete (inventory.c).
 *
 * The heartbeat also carries the acknowledgements of the master's tasks
 * (tasks.c): what an answered heartbeat carried is done with, what a
 * refused one carried goes again, and a lost link forgets them, since
 * the master then sends their tasks again.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/transport.h"
#include "mc/wire.h"

#include "control.h"
#include "reclaim.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u
#define CONNECT_TIMEOUT_MS 3000
#define REGISTER_TIMEOUT_MS 5000
#define DEFAULT_HEARTBEAT_MS 1000u
/* Distinct keys read past the master that one heartbeat reports at most. */
#define LOCAL_READS_MAX 65536

struct lread {
	uint64_t hash;
	uint16_t tenant_len, key_len;
	char name[];
};

static void h_grant_key(struct mc_req *req);
static void tier_full(void *arg, int tier);

/* What the master may ask of the link itself on the control connection. */
static const struct mc_method link_methods[] = {
	{ "grant_key", h_grant_key, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

/* Every method of the control connection, by the module that serves it, in their old order. */
const struct mc_method *const peer_control_methods[] = {
	peer_task_methods, peer_inventory_methods, peer_ranked_methods, link_methods, NULL,
};

static void start_register(struct control *ctl);
static void session_save(const struct control *ctl);

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

static void
on_close(struct mc_conn *c, void *ctx)
{
	struct peer *p = ctx;
	struct control *ctl = p->ctl;

	if (!ctl || c != ctl->conn)
		return;
	ctl->conn = NULL;
	ctl->hb_inflight = false;
	peer_tasks_link_lost(&ctl->tasks);
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
	peer_tasks_pack_kinds(pk, &ctl->tasks);
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
	msgpack_pack_map(pk, 5 + (ctl->nlreads > 0) + (ctl->tasks.inflight > 0));
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_u64(pk, "seq", ctl->hb_seq);
	pack_tiers(pk, ctl->p);
	pack_tier_set(pk, "self_evict", ctl->p, reclaimer_self_evicts);
	/* overages only group members could cover: the master's round evicts them whole */
	pack_tier_set(pk, "stalled", ctl->p, reclaimer_stalled);
	/* reads the master did not see: recency to it, never frequency */
	if (ctl->nlreads > 0)
		pack_local_reads(pk, ctl);
	peer_tasks_pack_acks(pk, &ctl->tasks);
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
		control_drop_link(ctl, cerr ? cerr->msg : "no answer to peer_register");
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		control_drop_link(ctl, err.msg);
		return;
	}
	if (mc_map_u64(resp->body, "peer_id", &id, &err) <= 0) {
		control_drop_link(ctl, "peer_register answer has no peer_id");
		return;
	}
	/* A master without sessions answers neither: every registration is fresh. */
	if (mc_map_strcpy(resp->body, "session", session, sizeof(session), &err) < 0 ||
	    mc_map_bool(resp->body, "resumed", &resumed, &err) < 0) {
		control_drop_link(ctl, err.msg);
		return;
	}
	resumed = resumed && ctl->resuming && id == ctl->peer_id;
	/* Without its key this peer could serve no grant: not registered, then. */
	if (id > UINT32_MAX ||
	    peer_grant_key(ctl->p, (uint32_t)id, mc_map_get(resp->body, "grant_key"), &err) < 0) {
		control_drop_link(ctl, "peer_register answer has no usable grant_key");
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
		peer_tasks_fresh(&ctl->tasks);
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
	ranked_start(ctl, resp->body);
	mc_ready_fd_write(ctl->p->ready_fd, ctl->p->bound);
	ctl->p->ready_fd = -1;
	schedule_heartbeat(ctl);
	inventory_start(ctl, resumed && ctl->have_ack);
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
	FILE *f = NULL;
	int bad, fd;

	if (!path || ctl->session[0] == '\0')
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* the token resumes this peer at the master: for this user's eyes only */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fchmod(fd, 0600) != 0 || !(f = fdopen(fd, "w"))) {
		mc_warn("cannot keep the session in %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
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
			control_drop_link(ctl, "cannot send hello");
			return;
		}
	}
	pack_register(mc_conn_begin(ctl->conn, "peer_register"), ctl);
	if (mc_conn_call(ctl->conn, REGISTER_TIMEOUT_MS, on_register, ctl) < 0)
		control_drop_link(ctl, "cannot send peer_register");
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
		control_drop_link(ctl, cerr ? cerr->msg : "no answer to peer_heartbeat");
		return;
	}
	if (mc_msg_error(resp, &err) == 0) {
		peer_tasks_acked(&ctl->tasks);
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
		peer_tasks_unacked(&ctl->tasks);
		evtimer_del(ctl->hb_ev);
		inventory_abort(ctl);
		start_register(ctl);
		return;
	}
	/* What it carried goes again with the next one. */
	peer_tasks_unacked(&ctl->tasks);
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
	peer_tasks_carry(&ctl->tasks, PEER_TASKS_ACKS_PER_HEARTBEAT);
	pack_heartbeat(mc_conn_begin(ctl->conn, "peer_heartbeat"), ctl);
	/* sent or lost with the link: recency is a hint, not owed */
	lreads_clear(ctl);
	if (mc_conn_call(ctl->conn, (int)timeout, on_heartbeat, ctl) < 0) {
		control_drop_link(ctl, "cannot send peer_heartbeat");
		return;
	}
	ctl->hb_inflight = true;
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
	p->full = tier_full;
	p->full_arg = ctl;
	p->local_read = local_read;
	p->local_read_arg = ctl;
	mc_htab_init(&ctl->lreads);
	ctl->master = *master;
	inventory_hooks(ctl, true);
	peer_tasks_init(&ctl->tasks, p, NULL, ctl->master.text);
	p->tasks = &ctl->tasks;
	ctl->fd = -1;
	ctl->state = CTL_IDLE;
	ctl->backoff_ms = BACKOFF_MIN_MS;
	ctl->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
	session_load(ctl);
	ctl->methods = mc_registry_new(p->registry, err);
	if (ctl->methods == NULL)
		goto fail;
	for (size_t i = 0; peer_control_methods[i]; i++)
		if (mc_registry_add(ctl->methods, peer_control_methods[i], err) != 0)
			goto fail;
	ctl->ops.methods = ctl->methods;
	ctl->ops.ctx = p;
	ctl->ops.on_close = on_close;
	if (inventory_init(ctl, err) < 0)
		goto fail;
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
	ctl->p->full = NULL;
	ctl->p->local_read = NULL;
	lreads_clear(ctl);
	mc_htab_free(&ctl->lreads);
	inventory_hooks(ctl, false);
	c = ctl->conn;
	if (c) {
		/* on_close and pending call callbacks see no link and do nothing. */
		ctl->conn = NULL;
		mc_conn_close(c, false);
	}
	/* Before the index goes: the walk's markers sit on its list. */
	inventory_abort(ctl);
	inventory_free(ctl);
	if (ctl->p->tasks == &ctl->tasks)
		ctl->p->tasks = NULL;
	peer_tasks_free(&ctl->tasks);
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
