/*
 * Dynamic replicas made from this peer's copies: taken and started on
 * the loop, sent on a worker, ended on the loop (see copier.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/dataplane.h"
#include "mc/fault.h"
#include "mc/grant.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/wire.h"
#include "mc/workq.h"

#include "control.h"
#include "copier.h"
#include "peer.h"

/* How long the master has to answer dynamic_copy_start, _end and _revoke. */
#define COPY_CALL_TIMEOUT_MS 5000
/*
 * A transfer to the target fails once no byte moved for this long; a
 * slow one that keeps moving never does. Waits are judged every
 * quarter of it, which is also the connect timeout.
 */
#define COPY_STALL_MS 5000
/* How much nicer than the loop the workers run: reads are served first. */
#define COPY_NICE 10
/* A grant is MC_GRANT_BYTES today; an opaque one of the target's may be longer. */
#define COPY_GRANT_MAX 256

struct copy {
	struct copier *cp;
	struct copy *next; /* the waiting list */
	uint64_t lease, version, size, checksum, target;
	struct pobj *o; /* held while it is sent */
	struct mc_bulk_src src;
	bool sent; /* the target answered the write ok */
	struct mc_err err;
	/* tenant and addr NUL-terminated; key and write grant as they came */
	char *tenant, *addr, *key, *grant;
	size_t klen, glen;
	char names[];
};

struct copier {
	struct peer *p;
	struct mc_workq *q;
	struct event *done_ev; /* the queue's completions */
	struct event *pump_ev; /* start what waits, from the loop */
	unsigned workers;
	struct copy *head, *tail; /* waiting, oldest first */
	size_t waiting, running;  /* running: started and not yet over */
	bool stopping;
	struct copier_stats st;
};

/* ---- the item ---- */

int
copy_order_parse(const msgpack_object *item, struct copy_order *out, struct mc_err *err)
{
	static const char *const u64s[] = { "lease", "version", "size", "checksum", "target" };
	uint64_t *const dst[] = { &out->lease, &out->version, &out->size, &out->checksum,
				  &out->target };

	memset(out, 0, sizeof(*out));
	if (item == NULL || item->type != MSGPACK_OBJECT_MAP)
		return mc_err_set(err, MC_ERR_INVALID, "a replica_copy item must be a map");
	for (size_t i = 0; i < sizeof(u64s) / sizeof(u64s[0]); i++) {
		int r = mc_map_u64(item, u64s[i], dst[i], err);

		if (r < 0)
			return -1;
		if (r == 0)
			return mc_err_set(err, MC_ERR_INVALID, "missing field '%s'", u64s[i]);
	}
	/* 0 names no lease and no peer: the master never sends it */
	if (out->lease == 0)
		return mc_err_set(err, MC_ERR_INVALID, "field 'lease' must not be 0");
	if (out->target == 0 || out->target > UINT32_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "field 'target' is no peer id");
	if (name_target(item, &out->tenant, &out->key, err) < 0 ||
	    name_get(item, "addr", MC_ADDR_MAX - 1, NULL, &out->addr, err) < 0 ||
	    name_get(item, "read_grant", COPY_GRANT_MAX, NULL, &out->read_grant, err) < 0 ||
	    name_get(item, "write_grant", COPY_GRANT_MAX, NULL, &out->write_grant, err) < 0)
		return -1;
	/* the address becomes a C string for the connect: a NUL inside would cut it */
	if (memchr(out->addr.p, '\0', out->addr.len) != NULL)
		return mc_err_set(err, MC_ERR_INVALID, "field 'addr' holds a NUL byte");
	if (memchr(out->tenant.p, '\0', out->tenant.len) != NULL)
		return mc_err_set(err, MC_ERR_INVALID, "field 'tenant' holds a NUL byte");
	return 0;
}

/* ---- the master's calls ---- */

/* The link to the master, when it can carry a call now; NULL otherwise. */
static struct control *
link_up(const struct copier *cp)
{
	struct control *ctl = cp->p->ctl;

	return ctl != NULL && ctl->state == CTL_REGISTERED && ctl->conn != NULL ? ctl : NULL;
}

/* {peer_id, lease, version} (and reason) begun as method: the packer, or NULL without a link. */
static msgpack_packer *
call_begin(struct copy *c, const char *method, const char *reason)
{
	struct control *ctl = link_up(c->cp);
	msgpack_packer *pk;

	if (!ctl)
		return NULL;
	pk = mc_conn_begin(ctl->conn, method);
	msgpack_pack_map(pk, 3 + (reason != NULL));
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_u64(pk, "lease", c->lease);
	mc_pack_kv_u64(pk, "version", c->version);
	if (reason)
		mc_pack_kv_str(pk, "reason", reason);
	return pk;
}

/* The answer to an end or a revoke: only logged, the copy is over either way. */
static void
on_told(struct mc_conn *conn, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	const char *method = arg;
	struct mc_err err;

	(void)conn;
	if (!resp)
		mc_warn("%s unanswered: %s", method, cerr ? cerr->msg : "no answer");
	else if (mc_msg_error(resp, &err) < 0)
		mc_warn("%s refused by the master: %s", method, err.msg);
}

/*
 * Tell the master how a started copy ended: end, or revoke with the
 * reason. Without a link nothing is told; the lease expires.
 */
static void
tell(struct copy *c, const char *method, const char *reason)
{
	struct control *ctl = link_up(c->cp);

	if (!call_begin(c, method, reason))
		return;
	if (mc_conn_call(ctl->conn, COPY_CALL_TIMEOUT_MS, on_told, (void *)method) < 0)
		mc_warn("cannot send %s of lease %llu to master %s", method,
			(unsigned long long)c->lease, ctl->master.text);
}

/* ---- the end of a copy, on the loop ---- */

static void pump(struct copier *cp);

static const char *
key_show(const struct copy *c, char *buf, size_t cap)
{
	struct name k = { c->key, c->klen };

	return name_show(&k, buf, cap);
}

/* Over, counted where it ended; a slot runs the next. */
static void
copy_free(struct copy *c, bool was_running)
{
	struct copier *cp = c->cp;

	if (was_running)
		cp->running--;
	free(c);
	pump(cp);
}

/* A started copy failed for why: revoked, counted failed. */
static void
copy_revoke(struct copy *c, const char *why)
{
	char kb[80];

	c->cp->st.failed++;
	mc_warn("copy of '%s' (lease %llu) to peer %llu failed: %s", key_show(c, kb, sizeof(kb)),
		(unsigned long long)c->lease, (unsigned long long)c->target, why);
	tell(c, "dynamic_copy_revoke", why);
	copy_free(c, true);
}

static void
copy_done(void *arg, bool cancelled)
{
	struct copy *c = arg;
	struct copier *cp = c->cp;
	char kb[80];

	pindex_release(&cp->p->index, c->o);
	c->o = NULL;
	if (cancelled) {
		copy_revoke(c, "the source peer is stopping");
		return;
	}
	if (!c->sent) {
		copy_revoke(c, c->err.msg);
		return;
	}
	cp->st.done++;
	cp->st.bytes += c->size;
	mc_debug("copied '%s' (lease %llu) to peer %llu", key_show(c, kb, sizeof(kb)),
		 (unsigned long long)c->lease, (unsigned long long)c->target);
	tell(c, "dynamic_copy_end", NULL);
	copy_free(c, true);
}

/* ---- the transfer, on a worker ---- */

static void
copy_work(void *arg)
{
	struct copy *c = arg;
	struct mc_dp_obj obj = { .tenant = c->tenant,
				 .key = c->key,
				 .klen = c->klen,
				 .version = c->version,
				 .len = c->size,
				 .checksum = c->checksum,
				 .grant = c->grant,
				 .glen = c->glen };
	struct mc_err refused, *err = &c->err;
	struct mc_rpcc *r;

	c->sent = false;
	if (mc_fault("copy")) {
		mc_err_set(err, MC_ERR_SYSTEM, "fault injected: copy");
		return;
	}
	r = mc_rpcc_connect(c->addr, COPY_STALL_MS / 4, err);
	if (!r)
		return;
	mc_rpcc_watch_stall(r, COPY_STALL_MS);
	if (mc_dp_write_send(r, &obj, mc_tier_name(MC_TIER_DRAM), &c->src, err) == 0 &&
	    mc_dp_write_recv(r, &refused, err) == 0) {
		if (refused.code == MC_OK)
			c->sent = true;
		else
			mc_err_set(err, refused.code, "the target refused the write: %s",
				   refused.msg);
	}
	mc_rpcc_close(r);
}

/* ---- starting a copy, on the loop ---- */

/*
 * The master let the copy start: hold the copy asked for and send it
 * from its medium, on a worker.
 */
static void
copy_send(struct copy *c)
{
	struct copier *cp = c->cp;
	struct peer *p = cp->p;
	struct mc_err err;
	struct pobj *o = pindex_acquire(&p->index, c->tenant, strlen(c->tenant), c->key, c->klen);

	if (!o || o->version != c->version || o->size != c->size || o->checksum != c->checksum) {
		if (o)
			pindex_release(&p->index, o);
		copy_revoke(c, "the source no longer holds that version");
		return;
	}
	c->src = mc_bulk_src_mem(NULL, 0);
	if (o->size > 0 && medium_source(p->media[o->tier], o->off, o->size, &c->src, &err) < 0) {
		pindex_release(&p->index, o);
		copy_revoke(c, err.msg);
		return;
	}
	c->o = o;
	if (mc_workq_submit(cp->q, copy_work, copy_done, c, &err) < 0) {
		pindex_release(&p->index, o);
		c->o = NULL;
		copy_revoke(c, err.msg);
	}
}

static void
on_start(struct mc_conn *conn, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct copy *c = arg;
	struct copier *cp = c->cp;
	struct mc_err err;
	char kb[80];

	(void)conn;
	if (!resp) {
		/* the master may have started it: a revoke clears it, if the link still can */
		copy_revoke(c, cerr ? cerr->msg : "dynamic_copy_start unanswered");
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		/* the master cleared the copy when it refused: nothing to revoke */
		cp->st.refused++;
		mc_info("copy of '%s' (lease %llu) not started: %s", key_show(c, kb, sizeof(kb)),
			(unsigned long long)c->lease, err.msg);
		copy_free(c, true);
		return;
	}
	if (cp->stopping || cp->p->stopping) {
		copy_revoke(c, "the source peer is stopping");
		return;
	}
	copy_send(c);
}

/* Ask the master to start c; it runs from now on. */
static void
copy_start(struct copy *c)
{
	struct copier *cp = c->cp;
	struct control *ctl = link_up(cp);
	char kb[80];

	cp->running++;
	if (!call_begin(c, "dynamic_copy_start", NULL) ||
	    mc_conn_call(ctl->conn, COPY_CALL_TIMEOUT_MS, on_start, c) < 0) {
		/* never started: the master's lease expires */
		cp->st.failed++;
		mc_warn("copy of '%s' (lease %llu) not started: no link to the master",
			key_show(c, kb, sizeof(kb)), (unsigned long long)c->lease);
		copy_free(c, true);
	}
}

/* Start waiting copies while fewer than the workers run (a slot each, start to end). */
static void
pump_cb(evutil_socket_t fd, short what, void *arg)
{
	struct copier *cp = arg;

	(void)fd;
	(void)what;
	while (cp->head != NULL && cp->running < cp->workers && !cp->stopping && !cp->p->stopping) {
		struct copy *c = cp->head;

		cp->head = c->next;
		if (cp->head == NULL)
			cp->tail = NULL;
		cp->waiting--;
		copy_start(c);
	}
}

/* From the loop, never inside the caller: a task's handler, a call's answer. */
static void
pump(struct copier *cp)
{
	if (!cp->stopping && cp->head != NULL)
		event_active(cp->pump_ev, EV_TIMEOUT, 0);
}

/* ---- taking a task ---- */

/* A copy of what o names, owned, or NULL. */
static struct copy *
copy_new(struct copier *cp, const struct copy_order *o)
{
	size_t bytes = o->tenant.len + 1 + o->addr.len + 1 + o->key.len + o->write_grant.len;
	struct copy *c = calloc(1, sizeof(*c) + bytes);
	char *at;

	if (!c)
		return NULL;
	*c = (struct copy){ .cp = cp,
			    .lease = o->lease,
			    .version = o->version,
			    .size = o->size,
			    .checksum = o->checksum,
			    .target = o->target,
			    .klen = o->key.len,
			    .glen = o->write_grant.len };
	at = c->names;
	c->tenant = at;
	memcpy(at, o->tenant.p, o->tenant.len);
	at += o->tenant.len + 1;
	c->addr = at;
	memcpy(at, o->addr.p, o->addr.len);
	at += o->addr.len + 1;
	c->key = at;
	memcpy(at, o->key.p, o->key.len);
	at += o->key.len;
	c->grant = at;
	memcpy(at, o->write_grant.p, o->write_grant.len);
	return c;
}

int
copier_take(struct copier *cp, const msgpack_object *item, struct mc_err *err)
{
	struct copy_order o;
	struct mc_grant_scope s;
	struct copy *c;
	uint64_t have = 0;
	char kb[80];
	int v;

	if (!cp)
		return mc_err_set(err, MC_ERR_UNAVAILABLE,
				  "this peer makes no copies (--copy-workers 0)");
	if (copy_order_parse(item, &o, err) < 0)
		return -1;
	if (cp->stopping || cp->p->stopping)
		return mc_err_set(err, MC_ERR_UNAVAILABLE, "the peer is stopping");
	if (cp->waiting + cp->running >= COPIES_WAITING_MAX)
		return mc_err_set(err, MC_ERR_BUSY, "%d copies wait or run already",
				  COPIES_WAITING_MAX);
	if (o.target == cp->p->grants.peer_id)
		return mc_err_set(err, MC_ERR_INVALID, "the target of lease %llu is this peer",
				  (unsigned long long)o.lease);
	s = (struct mc_grant_scope){ o.tenant.p, o.tenant.len, o.key.p, o.key.len,
				     o.version,	 o.size,       0,	MC_GRANT_READ };
	v = peer_grant_check(cp->p, &s, o.read_grant.p, o.read_grant.len);
	if (v != MC_GRANT_OK) {
		/* refused as a client's read without this grant would be */
		cp->p->grants.refused[v]++;
		return mc_err_set(err, MC_ERR_PERMISSION,
				  "the read grant of lease %llu does not cover '%s' here (%s)",
				  (unsigned long long)o.lease, name_show(&o.key, kb, sizeof(kb)),
				  mc_grant_verdict_name(v));
	}
	if (!pindex_version(&cp->p->index, o.tenant.p, o.tenant.len, o.key.p, o.key.len, &have,
			    NULL) ||
	    have != o.version)
		return mc_err_set(err, MC_ERR_NOT_FOUND, "no copy of '%s' at version %llu here",
				  name_show(&o.key, kb, sizeof(kb)), (unsigned long long)o.version);
	if (!(c = copy_new(cp, &o)))
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a copy");
	if (cp->tail)
		cp->tail->next = c;
	else
		cp->head = c;
	cp->tail = c;
	cp->waiting++;
	pump(cp);
	return 0;
}

/* ---- the copier ---- */

static void
completions_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mc_workq_complete(arg);
}

struct copier *
copier_new(struct peer *p, unsigned workers, struct mc_err *err)
{
	struct copier *cp;

	if (workers == 0 || workers > COPY_WORKERS_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "copy workers must be 1..%d", COPY_WORKERS_MAX);
		return NULL;
	}
	if (!(cp = calloc(1, sizeof(*cp)))) {
		mc_err_errno(err, "cannot allocate the copier");
		return NULL;
	}
	cp->p = p;
	cp->workers = workers;
	/* only started copies are submitted, one a worker: the queue never fills */
	if (!(cp->q = mc_workq_new(workers, COPIES_WAITING_MAX, COPY_NICE, err)))
		goto fail;
	cp->done_ev =
		event_new(p->base, mc_workq_fd(cp->q), EV_READ | EV_PERSIST, completions_cb, cp->q);
	cp->pump_ev = event_new(p->base, -1, 0, pump_cb, cp);
	if (!cp->done_ev || !cp->pump_ev || event_add(cp->done_ev, NULL) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot watch the copier's queue");
		goto fail;
	}
	return cp;
fail:
	copier_free(cp);
	return NULL;
}

void
copier_free(struct copier *cp)
{
	struct copy *c, *next;

	if (!cp)
		return;
	cp->stopping = true;
	/* never started: the master's leases for them expire */
	for (c = cp->head; c != NULL; c = next) {
		next = c->next;
		cp->st.failed++;
		free(c);
	}
	cp->head = cp->tail = NULL;
	cp->waiting = 0;
	/* Waits for the transfers running; every completion lets its copy go. */
	mc_workq_free(cp->q);
	if (cp->done_ev)
		event_free(cp->done_ev);
	if (cp->pump_ev)
		event_free(cp->pump_ev);
	free(cp);
}

size_t
copier_waiting(const struct copier *cp)
{
	return cp->waiting;
}

size_t
copier_running(const struct copier *cp)
{
	return cp->running;
}

const struct copier_stats *
copier_stats(const struct copier *cp)
{
	return &cp->st;
}
