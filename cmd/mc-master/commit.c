/*
 * The commit of a write (commit.h). Each replica of a write in progress
 * carries two marks: ended (its client's put_end named it) and written
 * (its peer's write_ack confirmed the bytes). It becomes COMPLETE when
 * it has both. A put_end whose replicas are all confirmed answers at
 * once, which is the common case: a peer confirms on its control link
 * before it answers the client's write, so the confirmation is on its
 * way before the put_end is sent. Otherwise the put_end waits; a waiter
 * keeps the object's name, not a pointer, and finds it again, since the
 * write may be abandoned (revoke, timeout, a dead peer) meanwhile.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "commit.h"
#include "copies.h"
#include "evict.h"
#include "master.h"
#include "ops.h"
#include "placement.h"
#include "request.h"
#include "state.h"
#include "peers.h"
#include "softpin.h"
#include "store.h"
#include "recency.h"

struct commit_wait {
	struct commit_wait *prev, *next;
	struct master *m;
	struct mc_req *req; /* deferred, its connection held */
	struct event *timer;
	uint32_t tenant;
	uint64_t version;
	size_t klen;
	char key[];
};

/* The object being written at version under (tenant, key), or NULL. */
static struct mobj *
find_write(struct master *m, uint32_t tenant, const char *key, size_t klen, uint64_t version)
{
	struct mobj *o = store_find(m->store, store_key_hash(tenant, key, klen), tenant, key, klen);
	const struct pending *p = o != NULL ? store_pending_get(m->store, o) : NULL;

	return p != NULL && p->version == version ? o : NULL;
}

/* Whether a replica of version was ended but not confirmed yet. */
static bool
awaits_ack(const struct mobj *o, uint64_t version)
{
	const struct mrep *v = obj_creps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].version == version && v[i].state == REP_PROCESSING && v[i].ended &&
		    !v[i].written)
			return true;
	return false;
}

/*
 * Tell the peers of the replicas just completed (done) what the version
 * they hold committed as (ops_notify_committed), once a peer however
 * many of its tiers hold it.
 */
static void
notify_committed(struct master *m, const struct mobj *o, uint64_t version,
		 const struct placement *done)
{
	for (unsigned i = 0; i < done->n; i++) {
		const struct peer *p = peers_find(m->peers, done->peer[i]);
		bool again = false;

		for (unsigned k = 0; k < i; k++)
			again |= done->peer[k] == done->peer[i];
		if (p != NULL && !again)
			ops_notify_committed(m, o, version, p);
	}
}

/*
 * Complete the ended replicas of version that were confirmed and
 * discard those that were not; answer req.
 */
static void
settle_ended(struct master *m, struct mc_req *req, struct mobj *o, uint64_t version)
{
	struct placement done = { .n = 0 };
	unsigned dropped = 0;

	for (unsigned i = o->nrep; i-- > 0;) {
		struct mrep *r = &obj_reps(o)[i];

		if (r->version != version || r->state != REP_PROCESSING || !r->ended)
			continue;
		if (!r->written) {
			ops_rep_remove(m, o, i, true);
			dropped++;
			continue;
		}
		ops_rep_complete(m, o, r);
		if (done.n < MC_REPLICAS_MAX) {
			done.peer[done.n] = r->peer;
			done.tier[done.n++] = r->tier;
		}
	}
	m->commits->unconfirmed += dropped;
	/* what makes its copies young (mc/young.h) */
	if (done.n > 0) {
		struct state_obj f = state_obj_of(o);

		f.committed = mc_now_ms();
		state_object_set(m, o, &f);
	}
	/* the completed copies join their (peer, tier) recency lists */
	recency_sync(&m->store->rank, o);
	/* o may be gone from here on, unless a replica just completed */
	ops_settle(m, o, NULL);
	if (done.n > 0)
		notify_committed(m, o, version, &done);
	/*
	 * A commit that leaves a tier over its high watermark starts its
	 * round now: the copies just committed are ones it may evict.
	 */
	for (unsigned i = 0; i < done.n; i++)
		evict_tier_check(m, done.peer[i], done.tier[i]);
	if (done.n == 0 && dropped > 0)
		handler_fail(req, MC_ERR_UNAVAILABLE,
			     "no peer confirmed the bytes of version %llu: nothing committed",
			     (unsigned long long)version);
	else
		mc_reply_ok_empty(req);
}

static void
wait_free(struct master *m, struct commit_wait *w)
{
	struct commits *cs = m->commits;

	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		cs->head = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	cs->n--;
	event_free(w->timer);
	free(w);
}

/* The waiter's wait is over (expired: for good); settle it if it can be. */
static void
wait_try(struct master *m, struct commit_wait *w, bool expired)
{
	struct mobj *o = find_write(m, w->tenant, w->key, w->klen, w->version);

	if (o == NULL)
		handler_fail(w->req, MC_ERR_VERSION, "the write of version %llu was abandoned",
			     (unsigned long long)w->version);
	else if (expired || !awaits_ack(o, w->version))
		settle_ended(m, w->req, o, w->version);
	else
		return;
	wait_free(m, w);
}

static void
wait_expired(evutil_socket_t fd, short what, void *arg)
{
	struct commit_wait *w = arg;

	(void)fd;
	(void)what;
	wait_try(w->m, w, true);
}

/* Make req wait for o's confirmations; -1 when it cannot (req is still the caller's). */
static int
wait_for_acks(struct master *m, struct mc_req *req, uint32_t tenant, const struct mobj *o,
	      uint64_t version)
{
	struct commits *cs = m->commits;
	struct timeval tv = mc_ms_timeval(m->cfg.write_ack_wait);
	size_t klen = o->key_len;
	struct commit_wait *w = calloc(1, sizeof(*w) + klen);

	if (w == NULL)
		return -1;
	w->m = m;
	w->tenant = tenant;
	w->version = version;
	w->klen = klen;
	memcpy(w->key, o->key, klen);
	w->timer = evtimer_new(m->base, wait_expired, w);
	if (w->timer == NULL || evtimer_add(w->timer, &tv) != 0)
		goto fail;
	w->req = mc_req_defer(req);
	if (w->req == NULL)
		goto fail;
	if (mc_req_hold(w->req) != 0) {
		/* Deferred but not held: the request is w->req's now, answered at once. */
		handler_fail(w->req, MC_ERR_SYSTEM, "cannot wait for the peers' confirmation");
		event_free(w->timer);
		free(w);
		return 0;
	}
	w->next = cs->head;
	if (cs->head != NULL)
		cs->head->prev = w;
	cs->head = w;
	cs->n++;
	cs->waited++;
	return 0;
fail:
	if (w->timer != NULL)
		event_free(w->timer);
	free(w);
	return -1;
}

void
commit_end(struct master *m, struct mc_req *req, struct mobj *o, const msgpack_object_array *ids)
{
	uint64_t version = store_pending_get(m->store, o)->version;
	struct mrep *v = obj_reps(o);

	for (unsigned i = 0; i < o->nrep; i++)
		if (v[i].version == version && v[i].state == REP_PROCESSING &&
		    req_ids_name(ids, v[i].id)) {
			struct mrep to = v[i];

			to.ended = 1;
			state_replica_set(m, o, &v[i], &to);
		}
	if (awaits_ack(o, version) && m->cfg.write_ack_wait > 0 &&
	    wait_for_acks(m, req, req_client(req)->tenant, o, version) == 0)
		return;
	settle_ended(m, req, o, version);
}

/* A confirmation for (tenant, key, version): every put_end it completes goes on. */
static void
acked(struct master *m, uint32_t tenant, const char *key, size_t klen, uint64_t version)
{
	struct commit_wait *w = m->commits->head, *next;

	for (; w != NULL; w = next) {
		next = w->next;
		if (w->tenant == tenant && w->version == version && w->klen == klen &&
		    memcmp(w->key, key, klen) == 0)
			wait_try(m, w, false);
	}
}

static void
h_write_ack(struct mc_req *req)
{
	struct master *m = req_begin(req);
	struct mc_err err;
	const char *tname, *key;
	size_t tlen, klen;
	uint64_t id, version, size;
	int64_t tenant;
	struct mobj *o;
	struct mrep *r = NULL;

	if (req_need_u64(req->params, "peer_id", &id, &err) != 0 ||
	    req_need_u64(req->params, "version", &version, &err) != 0 ||
	    req_need_u64(req->params, "size", &size, &err) != 0 ||
	    req_need_key(req->params, &key, &klen, &err) != 0)
		goto fail;
	if (mc_map_str(req->params, "tenant", &tname, &tlen, &err) != 1 ||
	    !store_name_ok(tname, tlen)) {
		mc_err_set(&err, MC_ERR_INVALID, "write_ack needs a valid 'tenant'");
		goto fail;
	}
	/* Only the peer registered on this connection confirms its own writes. */
	if (req_check_own_peer(req, id, &err) != 0)
		goto fail;
	tenant = store_tenant_find(m->store, tname, tlen);
	o = tenant < 0 ? NULL : find_write(m, (uint32_t)tenant, key, klen, version);
	for (unsigned i = 0; o != NULL && i < o->nrep && r == NULL; i++) {
		struct mrep *c = &obj_reps(o)[i];
		if (c->peer == id && c->version == version && c->state == REP_PROCESSING)
			r = c;
	}
	if (r == NULL && tenant >= 0 &&
	    copies_write_ack(m, (uint32_t)tenant, key, klen, (uint32_t)id, version, size)) {
		/* the bytes of a dynamic copy, not of a put (copies.h) */
		m->commits->acks++;
		mc_reply_ok_empty(req);
		return;
	}
	if (r == NULL || size != store_pending_get(m->store, o)->size) {
		/* Abandoned or already done; or the peer holds another length than was placed. */
		m->commits->stale_acks++;
		mc_reply_ok_empty(req);
		return;
	}
	struct mrep to = *r;

	to.written = 1;
	state_replica_set(m, o, r, &to);
	m->commits->acks++;
	if (r->ended)
		acked(m, (uint32_t)tenant, key, klen, version);
	mc_reply_ok_empty(req);
	return;
fail:
	req_fail_err(req, &err);
}

static void
commit_collect(struct mc_metrics *r, void *arg)
{
	const struct commits *cs = ((struct master *)arg)->commits;
	static const char help[] = "Write confirmations from peers, by outcome.";
	struct mc_metric *s;

	if ((s = mc_metric_get(r, "mc_write_acks_total", MC_COUNTER, help, "outcome", "taken")))
		mc_metric_set(s, (double)cs->acks);
	if ((s = mc_metric_get(r, "mc_write_acks_total", MC_COUNTER, help, "outcome", "stale")))
		mc_metric_set(s, (double)cs->stale_acks);
	if ((s = mc_metric_get(r, "mc_put_end_waits_total", MC_COUNTER,
			       "Puts whose put_end waited for a peer's confirmation.", NULL, NULL)))
		mc_metric_set(s, (double)cs->waited);
	if ((s = mc_metric_get(r, "mc_replicas_unconfirmed_total", MC_COUNTER,
			       "Replicas ended by a put_end that no peer confirmed, discarded.",
			       NULL, NULL)))
		mc_metric_set(s, (double)cs->unconfirmed);
}

void
commit_init(struct master *m)
{
	memset(m->commits, 0, sizeof(*m->commits));
}

void
commit_free(struct master *m)
{
	while (m->commits->head != NULL) {
		struct commit_wait *w = m->commits->head;

		/* The loop is gone: the connections are, too. */
		mc_reply_err(w->req, MC_ERR_UNAVAILABLE, "master stopping");
		wait_free(m, w);
	}
}

const struct mc_method commit_methods[] = {
	{ "write_ack", h_write_ack, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

static int
commit_start(struct master *m, struct mc_err *err)
{
	(void)err;
	commit_init(m);
	return 0;
}

const struct master_module commit_module = {
	.name = "commits",
	.init = commit_start,
	.free = commit_free,
	.methods = commit_methods,
	.collect = commit_collect,
};
