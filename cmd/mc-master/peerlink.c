/*
 * The master's side of a peer's control link: registration (fresh, or
 * resumed with the session token of an earlier one), heartbeats,
 * unregistration, and the connection that carries them closing.
 */
#include <stdio.h>
#include <string.h>

#include "mc/addr.h"
#include "mc/checked.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "auth.h"
#include "evict.h"
#include "master.h"
#include "ops.h"
#include "peerlink.h"
#include "rank.h"
#include "request.h"
#include "grants.h"
#include "peers.h"
#include "reconcile.h"
#include "tasks.h"

/*
 * A tier entry's watermarks {high?, low?}, each a fraction in (0, 1]
 * with low below high; one left out stays as it was (a registration's:
 * the master's default). -1 with err, p unchanged, when they are not.
 */
static int
read_watermarks(const struct master *m, const msgpack_object *e, struct peer_tier *pt, uint32_t j,
		struct mc_err *err)
{
	double high = pt->high, low = pt->low, h, l;
	int rh, rl;

	if ((rh = mc_map_double(e, "high", &high, err)) < 0 ||
	    (rl = mc_map_double(e, "low", &low, err)) < 0)
		return mc_err_set(err, MC_ERR_INVALID, "tiers[%u]: 'high' and 'low' are fractions",
				  j);
	h = high > 0 || rh > 0 ? high : m->cfg.evict_high;
	l = low > 0 || rl > 0 ? low : m->cfg.evict_low;
	if (!(h > 0 && h <= 1) || !(l > 0 && l <= 1))
		return mc_err_set(err, MC_ERR_INVALID,
				  "tiers[%u]: watermarks must be in (0, 1], not high %g low %g", j,
				  h, l);
	if (l >= h)
		return mc_err_set(err, MC_ERR_INVALID,
				  "tiers[%u]: low watermark %g is not below high %g", j, l, h);
	pt->high = high;
	pt->low = low;
	return 0;
}

/*
 * What p declares, its tiers summed, within --max-peer-capacity: a peer
 * that claims more would draw every placement to itself. -1 with err.
 */
static int
check_capacity(const struct master *m, const struct peer *p, struct mc_err *err)
{
	uint64_t sum = 0;

	for (int t = 0; t < MC_TIER_COUNT; t++)
		if (p->tiers[t].present && mc_add_over(sum, p->tiers[t].capacity, &sum))
			sum = UINT64_MAX;
	if (sum <= m->cfg.max_peer_capacity)
		return 0;
	return mc_err_set(err, MC_ERR_INVALID,
			  "a peer declares %llu bytes, over --max-peer-capacity %llu",
			  (unsigned long long)sum, (unsigned long long)m->cfg.max_peer_capacity);
}

/* A copy's footprint on a tier, in bytes, is taken up to this: beyond it the peer is confused. */
#define FOOTPRINT_MAX (1ull << 30)

/*
 * Read tiers [{tier, capacity, used, high?, low?, page?, per_copy?}]
 * into a peer; -1 with err on bad input. page and per_copy, when
 * present, say what a copy takes there (peer_tier_footprint).
 */
static int
read_tiers(const struct master *m, const msgpack_object *params, struct peer *p, bool required,
	   struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(params, "tiers");

	if (a == NULL)
		return required ? mc_err_set(err, MC_ERR_INVALID, "missing array field 'tiers'")
				: 0;
	for (uint32_t j = 0; j < a->size; j++) {
		const msgpack_object *e = &a->ptr[j];
		const char *name;
		size_t len;
		uint64_t cap = 0, used = 0, page = 0, per_copy = 0;
		int t;

		if (e->type != MSGPACK_OBJECT_MAP || mc_map_str(e, "tier", &name, &len, err) != 1)
			return mc_err_set(err, MC_ERR_INVALID, "tiers[%u] needs a 'tier' name", j);
		if ((t = mc_tier_parse(name, len, NULL)) < 0)
			return mc_err_set(err, MC_ERR_INVALID, "tiers[%u]: unknown tier '%.*s'", j,
					  (int)(len > 32 ? 32 : len), name);
		if (mc_map_u64(e, "capacity", &cap, err) < 0 ||
		    mc_map_u64(e, "used", &used, err) < 0 ||
		    read_watermarks(m, e, &p->tiers[t], j, err) != 0 ||
		    mc_map_u64(e, "page", &page, err) < 0 ||
		    mc_map_u64(e, "per_copy", &per_copy, err) < 0)
			return -1;
		if (page > FOOTPRINT_MAX || per_copy > FOOTPRINT_MAX)
			return mc_err_set(err, MC_ERR_INVALID,
					  "tiers[%u]: page or per_copy over %llu bytes", j,
					  (unsigned long long)FOOTPRINT_MAX);
		if (page > 0)
			p->tiers[t].page = page;
		if (per_copy > 0)
			p->tiers[t].per_copy = per_copy;
		p->tiers[t].present = true;
		p->tiers[t].capacity = cap;
		p->tiers[t].reported = used;
	}
	return 0;
}

/*
 * The task kinds a peer serves: task_kinds [name] of its registration,
 * names this master does not know ignored (a newer peer's). A peer
 * that sends none serves drops only.
 */
static int
read_task_kinds(const msgpack_object *params, struct peer *p, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(params, "task_kinds");

	p->task_kinds = 1u << TASK_DROP;
	if (a == NULL)
		return mc_map_get(params, "task_kinds") == NULL
			       ? 0
			       : mc_err_set(err, MC_ERR_INVALID,
					    "field 'task_kinds' must be an array of names");
	for (uint32_t i = 0; i < a->size; i++) {
		const msgpack_object *e = &a->ptr[i];
		int k;

		if (e->type != MSGPACK_OBJECT_STR)
			return mc_err_set(err, MC_ERR_INVALID, "task_kinds[%u] is not a name", i);
		if ((k = tasks_kind_parse(e->via.str.ptr, e->via.str.size)) >= 0)
			p->task_kinds |= (uint8_t)(1u << k);
	}
	return 0;
}

/*
 * A set of tiers named by the array field name ([tier names]) into
 * *set (1u << tier); *set is left alone when the field is absent. An
 * unknown tier or a non-name is refused naming the field.
 */
static int
read_tier_set(const msgpack_object *params, const char *name, uint8_t *set, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(params, name);
	uint8_t got = 0;

	if (a == NULL)
		return mc_map_get(params, name) == NULL
			       ? 0
			       : mc_err_set(err, MC_ERR_INVALID,
					    "field '%s' must be an array of tier names", name);
	for (uint32_t i = 0; i < a->size; i++) {
		const msgpack_object *e = &a->ptr[i];
		int t;

		if (e->type != MSGPACK_OBJECT_STR)
			return mc_err_set(err, MC_ERR_INVALID, "%s[%u] is not a tier name", name,
					  i);
		if ((t = mc_tier_parse(e->via.str.ptr, e->via.str.size, NULL)) < 0)
			return mc_err_set(err, MC_ERR_INVALID, "%s[%u]: unknown tier '%.*s'", name,
					  i, (int)(e->via.str.size > 32 ? 32 : e->via.str.size),
					  e->via.str.ptr);
		got |= (uint8_t)(1u << t);
	}
	*set = got;
	return 0;
}

/*
 * The entry a registration may resume, in *out: the live peer its
 * resume {peer_id, session} names, at the same address, with that
 * token. NULL there (and in *why what did not match, for the log) when
 * it must register anew. -1 with err for a malformed resume field.
 */
static int
resume_target(struct master *m, const msgpack_object *params, const struct peer *tmp,
	      struct peer **out, uint64_t *since, const char **why, struct mc_err *err)
{
	const msgpack_object *r = mc_map_get(params, "resume");
	const char *session;
	size_t slen;
	uint64_t id;
	struct peer *p;

	*out = NULL;
	*why = NULL;
	if (r == NULL || r->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (r->type != MSGPACK_OBJECT_MAP || mc_map_u64(r, "peer_id", &id, err) != 1 ||
	    mc_map_str(r, "session", &session, &slen, err) != 1 ||
	    mc_map_u64(r, "since", since, err) < 0)
		return mc_err_set(err, MC_ERR_INVALID,
				  "field 'resume' needs peer_id, session and since");
	p = id <= UINT32_MAX ? peers_find(m->peers, (uint32_t)id) : NULL;
	if (p == NULL)
		*why = "unknown peer";
	else if (!peer_session_is(p, session, slen))
		*why = "wrong session";
	else if (strcmp(p->addr, tmp->addr) != 0)
		*why = "another address";
	else if (strcmp(p->name, tmp->name) != 0)
		*why = "another identity";
	else if (!peer_alive(p, m->cfg.peer_ttl))
		*why = "expired";
	else
		*out = p;
	return 0;
}

/* The reply to a registration, fresh or resumed. */
static void
reply_registered(struct mc_req *req, const struct peer *p, bool resumed)
{
	struct master *m = req->ctx;
	char hex[PEER_SESSION_HEX + 1];
	msgpack_packer *pk = mc_reply_ok_begin(req);

	peer_session_hex(p, hex);
	msgpack_pack_map(pk, 7);
	mc_pack_kv_u64(pk, "peer_id", p->id);
	/* whether a master_ranked peer may ask: what the dispatcher really serves */
	mc_pack_kv_bool(pk, "rank", mc_registry_serves(m->methods, "evict_candidates"));
	/* The key of this peer id: a resumed or new identity gets its own. */
	mc_pack_key(pk, "grant_key");
	mgrants_pack_key(pk, m->grants, p->id);
	mc_pack_kv_str(pk, "session", hex);
	mc_pack_kv_bool(pk, "resumed", resumed);
	mc_pack_kv_u64(pk, "heartbeat_ms", PEER_HEARTBEAT_MS);
	mc_pack_kv_u64(pk, "peer_ttl_ms", m->cfg.peer_ttl);
	mc_reply_end(req);
}

/*
 * The same peer on a new connection: it keeps its id, its replicas and
 * its tasks (those it has not acknowledged go again, by id); what it
 * may have lost meanwhile comes in the delta (or full) inventory it
 * sends next.
 */
static void
resume(struct mc_req *req, struct client *cl, struct peer *p, const struct peer *tmp,
       uint64_t since)
{
	struct master *m = req->ctx;
	struct mc_conn *old = p->conn;

	for (int t = 0; t < MC_TIER_COUNT; t++) {
		/* used is the master's own count of what it placed there: kept. */
		p->tiers[t].present = tmp->tiers[t].present;
		p->tiers[t].capacity = tmp->tiers[t].capacity;
		p->tiers[t].reported = tmp->tiers[t].reported;
		p->tiers[t].high = tmp->tiers[t].high;
		p->tiers[t].low = tmp->tiers[t].low;
		p->tiers[t].page = tmp->tiers[t].page;
		p->tiers[t].per_copy = tmp->tiers[t].per_copy;
	}
	memcpy(p->host, tmp->host, sizeof(p->host));
	memcpy(p->domain, tmp->domain, sizeof(p->domain));
	memcpy(p->evict_mode, tmp->evict_mode, sizeof(p->evict_mode));
	p->task_kinds = tmp->task_kinds;
	p->transports = tmp->transports;
	p->self_evict = tmp->self_evict;
	if (peer_prepack(p) != 0)
		mc_warn("peer %u: out of memory for its packed entry; packing per read", p->id);
	p->last_heartbeat = mc_now_ms();
	p->heard = mc_mono_ms();
	p->mark++;
	p->unconfirmed = true;
	cl->peer_id = p->id;
	peers_attach(m->peers, p, req->conn);
	/* Re-pointed first, so the old link's close hook leaves the new one be. */
	if (old != NULL && old != req->conn && mc_conn_is_open(old))
		mc_conn_close(old, false);
	mc_info("peer %u (%s) resumed its registration (changes since %llu)", p->id, p->addr,
		(unsigned long long)since);
	reply_registered(req, p, true);
}

/* " dram 268435456 ssd 1073741824": the tiers p has and their sizes, fastest first. */
static const char *
peer_tiers_text(const struct peer *p, char *buf, size_t len)
{
	size_t n = 0;
	int t;

	buf[0] = '\0';
	MC_TIER_FASTEST_FIRST(t)
	{
		if (!p->tiers[t].present || n >= len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, " %s %llu", mc_tier_name(t),
				      (unsigned long long)p->tiers[t].capacity);
	}
	return buf;
}

static void
h_peer_register(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct client *cl = req_client_get(req);
	struct peer tmp, *p, *old;
	struct mc_err err;
	char given[MC_ADDR_MAX], tiers[128];
	int refusal;
	const char *mode, *why;
	uint64_t since = 0;
	size_t mlen;
	int rc;

	memset(&tmp, 0, sizeof(tmp));
	if (cl == NULL) {
		handler_fail(req, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	rc = mc_map_strcpy(req->params, "addr", given, sizeof(given), &err);
	if (rc == 0 || (rc > 0 && given[0] == '\0'))
		rc = mc_err_set(&err, MC_ERR_INVALID, "missing field 'addr'");
	/* compared canonical: 127.0.0.01:PORT is the live peer at 127.0.0.1:PORT */
	if (rc > 0 && mc_addr_canonical(given, tmp.addr, sizeof(tmp.addr), &err) != 0)
		rc = -1;
	if (rc < 0 || mc_map_strcpy(req->params, "host", tmp.host, sizeof(tmp.host), &err) < 0 ||
	    mc_map_strcpy(req->params, "domain", tmp.domain, sizeof(tmp.domain), &err) < 0 ||
	    read_tiers(m, req->params, &tmp, true, &err) != 0 ||
	    read_task_kinds(req->params, &tmp, &err) != 0 ||
	    mc_transport_list_read(req->params, &tmp.transports, &err) != 0 ||
	    read_tier_set(req->params, "self_evict", &tmp.self_evict, &err) != 0)
		goto fail;
	rc = mc_map_str(req->params, "evict_mode", &mode, &mlen, &err);
	if (rc < 0)
		goto fail;
	if (rc == 0) {
		mode = "local";
		mlen = 5;
	}
	if (mlen == 0 || mlen >= EVICT_MODE_MAX) {
		mc_err_set(&err, MC_ERR_INVALID, "evict_mode length %zu out of range", mlen);
		goto fail;
	}
	memcpy(tmp.evict_mode, mode, mlen);
	if (check_capacity(m, &tmp, &err) != 0) {
		refusal = PEER_REFUSED_CAPACITY;
		goto refused;
	}
	auth_peer_identity(m, cl, tmp.name);
	/* Without a host name each peer counts as a host of its own. */
	if (tmp.host[0] == '\0')
		snprintf(tmp.host, sizeof(tmp.host), "%.*s", MC_NAME_MAX, tmp.addr);
	if (resume_target(m, req->params, &tmp, &p, &since, &why, &err) != 0)
		goto fail;
	if (p != NULL) {
		resume(req, cl, p, &tmp, since);
		return;
	}
	if (why != NULL)
		mc_info("peer at %s cannot resume its registration (%s): registering it anew",
			tmp.addr, why);
	if (peer_session_new(&tmp, &err) != 0)
		goto fail;
	old = peers_find_addr(m->peers, tmp.addr);
	if (auth_check_takeover(m, old, &tmp, &refusal, &err) != 0)
		goto refused;
	/*
	 * The same address without a valid resume: a restarted peer, or one
	 * the master had given up on. Its objects are not erased; the old
	 * entry becomes a ghost whose replicas the new peer's inventory
	 * confirms (metadata intact), and whatever it does not report goes.
	 */
	if (old != NULL && recon_ghost_peer(m, old) != 0)
		ops_peer_remove(m, old, "replaced by a new registration");
	p = peers_add(m->peers, &err);
	if (p == NULL)
		goto fail;
	uint32_t id = p->id;
	*p = tmp;
	p->id = id;
	p->registered = p->last_heartbeat = mc_now_ms();
	p->heard = mc_mono_ms();
	p->mark = 1;
	p->conn = req->conn;
	mc_conn_keep(req->conn); /* as peers_attach does */
	if (peer_prepack(p) != 0)
		mc_warn("peer %u: out of memory for its packed entry; packing per read", id);
	cl->peer_id = id;
	mc_info("peer %u registered: %s host %s domain %s%s", id, p->addr, p->host,
		p->domain[0] ? p->domain : "-", peer_tiers_text(p, tiers, sizeof(tiers)));
	recon_peer_registered(m, p);
	reply_registered(req, p, false);
	return;
refused:
	m->peers->refused[refusal]++;
	mc_warn("refused the registration of %s%s%s: %s", tmp.addr, tmp.name[0] ? " as " : "",
		tmp.name, err.msg);
fail:
	req_fail_err(req, &err);
}

static struct peer *
need_peer(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct mc_err err;
	uint64_t id;
	struct peer *p;

	if (req_need_u64(req->params, "peer_id", &id, &err) != 0 ||
	    auth_check_peer(req, id, &err) != 0) {
		req_fail_err(req, &err);
		return NULL;
	}
	p = id <= UINT32_MAX ? peers_find(m->peers, (uint32_t)id) : NULL;
	if (p == NULL)
		handler_fail(req, MC_ERR_NOT_FOUND, "unknown peer %llu: register again",
			     (unsigned long long)id);
	return p;
}

static void
h_peer_heartbeat(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct peer *p;
	struct peer tmp;
	const msgpack_object *acks;
	const msgpack_object_array *reads;
	uint8_t stalled = 0;
	struct mc_err err;
	bool bad_reads;

	p = need_peer(req);

	if (p == NULL)
		return;
	/* Parse into a copy so a bad message changes nothing. */
	tmp = *p;
	if (read_tiers(m, req->params, &tmp, false, &err) != 0 ||
	    check_capacity(m, &tmp, &err) != 0 ||
	    ((reads = rank_local_reads_check(req->params, &bad_reads, &err)) == NULL &&
	     bad_reads)) {
		req_fail_err(req, &err);
		return;
	}
	if (read_tier_set(req->params, "self_evict", &tmp.self_evict, &err) != 0 ||
	    read_tier_set(req->params, "stalled", &stalled, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	if ((acks = mc_map_get(req->params, "tasks")) != NULL &&
	    tasks_ack(&m->peers->tasks, &p->tasks, acks, &err) != 0) {
		req_fail_err(req, &err);
		return;
	}
	memcpy(p->tiers, tmp.tiers, sizeof(p->tiers));
	/* reads the peer served itself: recency the master would not see otherwise */
	rank_local_reads_apply(m, reads, mc_now_ms());
	p->self_evict = tmp.self_evict;
	/* What its own eviction cannot cover, a master round does (evicting groups whole). */
	evict_stalled(m, p, stalled);
	/* Room the peer freed by itself: puts waiting on its tiers may fit now. */
	if (p->self_evict != 0)
		evict_moves_landed(m);
	p->last_heartbeat = mc_now_ms();
	p->heard = mc_mono_ms();
	if (p->conn != req->conn) {
		/* The peer came back on a new connection: its tasks go there now. */
		struct client *cl = req_client_get(req);
		if (cl != NULL) {
			cl->peer_id = p->id;
			peers_attach(m->peers, p, req->conn);
			mc_info("peer %u (%s) reconnected", p->id, p->addr);
		}
	}
	mc_reply_ok_empty(req);
}

static void
h_peer_unregister(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct peer *p;

	p = need_peer(req);
	if (p == NULL)
		return;
	ops_peer_remove(m, p, "unregistered");
	mc_reply_ok_empty(req);
}

void
master_on_close(struct mc_conn *c, void *ctx)
{
	struct master *m = ctx;
	const struct client *cl = mc_conn_data(c);
	struct peer *p;

	if (cl == NULL || cl->peer_id == 0)
		return;
	p = peers_find(m->peers, cl->peer_id);
	/* Not removed: the peer may resume on a new link; it expires by --peer-ttl. */
	if (p != NULL && p->conn == c) {
		p->conn = NULL;
		mc_info("peer %u (%s) control connection closed", p->id, p->addr);
	}
}

void
peerlink_rotate_grants(struct master *m)
{
	struct mc_err err;

	if (mgrants_rotate(m->grants, &err) < 0) {
		mc_warn("SIGHUP: kept the old grant key: %s", err.msg);
		return;
	}
	for (uint32_t i = 0; i < m->peers->n; i++) {
		struct peer *p = m->peers->v[i];

		if (p == NULL || p->conn == NULL)
			continue;
		mgrants_pack_key(mc_conn_begin(p->conn, "grant_key"), m->grants, p->id);
		if (mc_conn_notify(p->conn) != 0)
			mc_warn("cannot send the new grant key to peer %u", p->id);
	}
	mc_info("rotated the grant key to generation %u", m->grants->key.gen);
}

const struct mc_method peerlink_methods[] = {
	{ "peer_register", h_peer_register, MC_METHOD_PEER },
	{ "peer_heartbeat", h_peer_heartbeat, MC_METHOD_PEER },
	{ "peer_unregister", h_peer_unregister, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

/* SIGHUP rotates the grant keys. */
static int
peerlink_hup(struct master *m, struct mc_err *err)
{
	(void)err;
	peerlink_rotate_grants(m);
	return 0;
}

const struct master_module peerlink_module = {
	.name = "the peers' calls",
	.reload = peerlink_hup,
	.methods = peerlink_methods,
};
