/*
 * The master's side of a peer's control link: registration, heartbeats,
 * unregistration, and the connection that carries them closing.
 */
#include <stdio.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "master.h"
#include "ops.h"
#include "peerlink.h"
#include "request.h"

/* Heartbeat period suggested to peers. */
#define HEARTBEAT_MS 1000

/* Read tiers [{tier, capacity, used}] into a peer; -1 with err on bad input. */
static int
read_tiers(const msgpack_object *params, struct peer *p, bool required, struct mc_err *err)
{
	const msgpack_object_array *a = mc_map_array(params, "tiers");

	if (a == NULL)
		return required ? mc_err_set(err, MC_ERR_INVALID, "missing array field 'tiers'")
				: 0;
	for (uint32_t j = 0; j < a->size; j++) {
		const msgpack_object *e = &a->ptr[j];
		const char *name;
		size_t len;
		uint64_t cap = 0, used = 0;
		int t;

		if (e->type != MSGPACK_OBJECT_MAP || mc_map_str(e, "tier", &name, &len, err) != 1)
			return mc_err_set(err, MC_ERR_INVALID, "tiers[%u] needs a 'tier' name", j);
		if ((t = tier_parse(name, len)) < 0)
			return mc_err_set(err, MC_ERR_INVALID, "tiers[%u]: unknown tier '%.*s'", j,
					  (int)(len > 32 ? 32 : len), name);
		if (mc_map_u64(e, "capacity", &cap, err) < 0 ||
		    mc_map_u64(e, "used", &used, err) < 0)
			return -1;
		p->tiers[t].present = true;
		p->tiers[t].capacity = cap;
		p->tiers[t].reported = used;
	}
	return 0;
}

void
h_peer_register(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct client *cl = req_client_get(req);
	struct peer tmp, *p, *old;
	struct mc_err err;
	const char *mode;
	size_t mlen;
	int rc;

	mmetrics_request(&m->mx, M_PEER_REGISTER);
	memset(&tmp, 0, sizeof(tmp));
	if (cl == NULL) {
		handler_fail(req, M_PEER_REGISTER, MC_ERR_SYSTEM, "out of memory");
		return;
	}
	rc = mc_map_strcpy(req->params, "addr", tmp.addr, sizeof(tmp.addr), &err);
	if (rc == 0 || (rc > 0 && tmp.addr[0] == '\0'))
		rc = mc_err_set(&err, MC_ERR_INVALID, "missing field 'addr'");
	if (rc < 0 || mc_map_strcpy(req->params, "host", tmp.host, sizeof(tmp.host), &err) < 0 ||
	    mc_map_strcpy(req->params, "domain", tmp.domain, sizeof(tmp.domain), &err) < 0 ||
	    read_tiers(req->params, &tmp, true, &err) != 0)
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
	/* Without a host name each peer counts as a host of its own. */
	if (tmp.host[0] == '\0')
		snprintf(tmp.host, sizeof(tmp.host), "%.*s", MC_NAME_MAX, tmp.addr);
	old = peers_find_addr(&m->peers, tmp.addr);
	if (old != NULL)
		ops_peer_remove(m, old, "replaced by a new registration");
	p = peers_add(&m->peers, &err);
	if (p == NULL)
		goto fail;
	uint32_t id = p->id;
	*p = tmp;
	p->id = id;
	p->registered = p->last_heartbeat = mc_now_ms();
	p->heard = mc_mono_ms();
	p->conn = req->conn;
	if (peer_prepack(p) != 0)
		mc_warn("peer %u: out of memory for its packed entry; packing per read", id);
	cl->peer_id = id;
	mc_info("peer %u registered: %s host %s domain %s dram %llu ssd %llu", id, p->addr, p->host,
		p->domain[0] ? p->domain : "-", (unsigned long long)p->tiers[TIER_DRAM].capacity,
		(unsigned long long)p->tiers[TIER_SSD].capacity);
	recon_peer_registered(m, p);
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 3);
	mc_pack_kv_u64(pk, "peer_id", id);
	mc_pack_kv_u64(pk, "heartbeat_ms", HEARTBEAT_MS);
	mc_pack_kv_u64(pk, "peer_ttl_ms", m->cfg.peer_ttl);
	mc_reply_end(req);
	return;
fail:
	req_fail_err(req, M_PEER_REGISTER, &err);
}

static struct peer *
need_peer(struct mc_req *req, enum method k)
{
	struct master *m = req->ctx;
	struct mc_err err;
	uint64_t id;
	struct peer *p;

	if (req_need_u64(req->params, "peer_id", &id, &err) != 0) {
		req_fail_err(req, k, &err);
		return NULL;
	}
	p = id <= UINT32_MAX ? peers_find(&m->peers, (uint32_t)id) : NULL;
	if (p == NULL)
		handler_fail(req, k, MC_ERR_NOT_FOUND, "unknown peer %llu: register again",
			     (unsigned long long)id);
	return p;
}

void
h_peer_heartbeat(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct peer *p;
	struct peer tmp;
	struct mc_err err;

	mmetrics_request(&m->mx, M_PEER_HEARTBEAT);
	p = need_peer(req, M_PEER_HEARTBEAT);

	if (p == NULL)
		return;
	/* Parse into a copy so a bad message changes nothing. */
	tmp = *p;
	if (read_tiers(req->params, &tmp, false, &err) != 0) {
		req_fail_err(req, M_PEER_HEARTBEAT, &err);
		return;
	}
	memcpy(p->tiers, tmp.tiers, sizeof(p->tiers));
	p->last_heartbeat = mc_now_ms();
	p->heard = mc_mono_ms();
	if (p->conn != req->conn) {
		/* The peer came back on a new connection: drops go there now. */
		struct client *cl = req_client_get(req);
		if (cl != NULL) {
			cl->peer_id = p->id;
			peers_attach(&m->peers, p, req->conn);
			mc_info("peer %u (%s) reconnected", p->id, p->addr);
		}
	}
	mc_reply_ok_empty(req);
}

void
h_peer_unregister(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct peer *p;

	mmetrics_request(&m->mx, M_PEER_UNREGISTER);
	p = need_peer(req, M_PEER_UNREGISTER);
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
	p = peers_find(&m->peers, cl->peer_id);
	/* Not removed: the peer may reconnect; it expires by --peer-ttl. */
	if (p != NULL && p->conn == c) {
		p->conn = NULL;
		mc_info("peer %u (%s) control connection closed", p->id, p->addr);
	}
}
