/*
 * Request helpers shared by the master's handlers (request.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/wire.h"
#include "request.h"
#include "grants.h"
#include "peers.h"
#include "store.h"

/* A connection that never said hello speaks for the default tenant. */
static const struct client default_client;

/*
 * A connection whose tenant did not exist: bind to it once it does. Over
 * --max-conns-per-tenant it speaks for it all the same, uncounted: it
 * said hello while the cap could not apply, and failing its reads for
 * it would only make them wrong.
 */
static void
resolve_tenant(struct master *m, struct client *cl)
{
	int64_t t = store_tenant_find(m->store, cl->tenant_name, strlen(cl->tenant_name));
	struct mc_err err;

	if (t < 0)
		return;
	if (req_client_bind_tenant(m, cl, (uint32_t)t, &err) != 0)
		mc_warn("%s; this one was opened before the tenant existed", err.msg);
	cl->tenant = (uint32_t)t;
}

struct master *
req_begin(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct client *cl = req->conn != NULL ? mc_conn_data(req->conn) : NULL;

	if (cl != NULL && cl->tenant == TENANT_NONE)
		resolve_tenant(m, cl);
	return m;
}

void
req_client_name_tenant(struct master *m, struct client *cl, const char *name, size_t len)
{
	int64_t t = store_tenant_find(m->store, name, len);

	if (len >= sizeof(cl->tenant_name))
		len = sizeof(cl->tenant_name) - 1;
	memcpy(cl->tenant_name, name, len);
	cl->tenant_name[len] = '\0';
	cl->tenant = t >= 0 ? (uint32_t)t : TENANT_NONE;
}

int64_t
req_tenant_make(struct mc_req *req, struct mc_err *err)
{
	struct master *m = req->ctx;
	struct client *cl = req->conn != NULL ? mc_conn_data(req->conn) : NULL;
	int64_t t;

	if (cl == NULL || cl->tenant != TENANT_NONE)
		return req_client(req)->tenant;
	t = store_tenant_intern(m->store, cl->tenant_name, strlen(cl->tenant_name), err);
	if (t < 0 || req_client_bind_tenant(m, cl, (uint32_t)t, err) != 0)
		return -1;
	cl->tenant = (uint32_t)t;
	return t;
}

const char *
req_tenant_name(const struct master *m, const struct client *cl)
{
	if (cl->tenant < m->store->ntenants)
		return m->store->tenants[cl->tenant].name;
	return cl->tenant_name[0] != '\0' ? cl->tenant_name : MC_DEFAULT_TENANT;
}

void
handler_fail(struct mc_req *req, int code, const char *fmt, ...)
{
	char msg[MC_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mc_reply_err(req, code, "%s", msg);
}

void
req_fail_err(struct mc_req *req, const struct mc_err *err)
{
	handler_fail(req, err->code, "%s", err->msg);
}

const struct client *
req_client(const struct mc_req *req)
{
	const struct client *c = mc_conn_data(req->conn);

	return c != NULL ? c : &default_client;
}

static void
client_free(void *arg)
{
	struct client *c = arg;

	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		c->m->clients = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	free(c);
}

struct client *
req_client_get(struct mc_req *req)
{
	struct master *m = req->ctx;
	struct client *c = mc_conn_data(req->conn);

	if (c != NULL)
		return c;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->m = m;
	c->conn = req->conn;
	c->seed = ++m->client_seq;
	c->next = m->clients;
	if (m->clients != NULL)
		m->clients->prev = c;
	m->clients = c;
	mc_conn_set_data(req->conn, c, client_free);
	return c;
}

int
req_client_bind_tenant(struct master *m, struct client *cl, uint32_t tenant, struct mc_err *err)
{
	bool count = cl->who.role != MC_ROLE_PEER && cl->who.role != MC_ROLE_ADMIN;
	int cap = m->cfg.max_conns_per_tenant;

	if (cl->counted && cl->counted_tenant == tenant && count)
		return 0;
	if (tenant == TENANT_NONE) {
		if (cl->counted)
			m->tenant_conns[cl->counted_tenant]--;
		cl->counted = false;
		return 0;
	}
	if (count && cap > 0 && m->tenant_conns[tenant] >= (uint32_t)cap) {
		m->refused_per_tenant++;
		return mc_err_set(err, MC_ERR_UNAVAILABLE,
				  "too many connections for tenant '%s': %u open",
				  m->store->tenants[tenant].name, m->tenant_conns[tenant]);
	}
	if (cl->counted)
		m->tenant_conns[cl->counted_tenant]--;
	cl->counted = count;
	cl->counted_tenant = tenant;
	if (count)
		m->tenant_conns[tenant]++;
	return 0;
}

void
req_client_closed(struct mc_conn *c)
{
	struct client *cl = mc_conn_data(c);

	if (cl != NULL && cl->counted) {
		cl->m->tenant_conns[cl->counted_tenant]--;
		cl->counted = false;
	}
}

int
req_check_own_peer(const struct mc_req *req, uint64_t id, struct mc_err *err)
{
	uint32_t own = req_client(req)->peer_id;

	if (own != 0 && own == id)
		return 0;
	return mc_err_set(err, MC_ERR_PERMISSION,
			  "permission denied: peer %llu is not the peer registered on this "
			  "connection",
			  (unsigned long long)id);
}

int
req_need_u64(const msgpack_object *params, const char *name, uint64_t *out, struct mc_err *err)
{
	int rc = mc_map_u64(params, name, out, err);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return mc_err_set(err, MC_ERR_INVALID, "missing field '%s'", name);
	return 0;
}

int
req_check_key(size_t len, struct mc_err *err)
{
	if (len == 0 || len > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "key length %zu out of range 1..%d", len,
				  MC_KEY_MAX);
	return 0;
}

bool
req_ids_name(const msgpack_object_array *ids, uint32_t id)
{
	if (ids == NULL)
		return true;
	for (uint32_t j = 0; j < ids->size; j++)
		if (ids->ptr[j].via.u64 == id)
			return true;
	return false;
}

int
req_need_key(const msgpack_object *params, const char **key, size_t *len, struct mc_err *err)
{
	int rc = mc_map_str(params, "key", key, len, err);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return mc_err_set(err, MC_ERR_INVALID, "missing field 'key'");
	return req_check_key(*len, err);
}

/* Optional key field (a parent's key): 0 absent, 1 present and valid, -1 invalid. */
int
req_opt_key(const msgpack_object *params, const char *field, const char **key, size_t *len,
	    struct mc_err *err)
{
	int rc = mc_map_str(params, field, key, len, err);

	if (rc <= 0)
		return rc;
	return req_check_key(*len, err) < 0 ? -1 : 1;
}

/* Optional name field: 0 absent, 1 present and valid, -1 invalid. */
int
req_opt_name(const msgpack_object *params, const char *field, const char **s, size_t *len,
	     struct mc_err *err)
{
	int rc = mc_map_str(params, field, s, len, err);

	if (rc <= 0)
		return rc;
	if (*len == 0 || *len > MC_NAME_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "%s length %zu out of range 1..%d", field,
				  *len, MC_NAME_MAX);
	if (!store_name_ok(*s, *len))
		return mc_err_set(err, MC_ERR_INVALID, "%s must be printable ASCII without spaces",
				  field);
	return 1;
}

void
req_pack_replica(msgpack_packer *pk, struct master *m, struct peer *p, const struct mrep *r,
		 const struct mc_transport_list *client, struct mc_grant_scope *scope,
		 const struct mgrant_ident *id)
{
	msgpack_pack_map(pk, 9);
	mc_pack_kv_u64(pk, "replica_id", r->id);
	mc_pack_kv_u64(pk, "peer_id", r->peer);
	/* so that a reader the peer does not answer can say when it goes */
	mc_pack_kv_u64(pk, "drop_in_ms", p != NULL ? peer_drop_in_ms(p, m->cfg.peer_ttl) : 0);
	scope->peer = r->peer;
	mc_pack_key(pk, "grant");
	mgrants_pack(pk, m->grants, p != NULL ? &p->grant_signer : NULL, scope, id);
	mc_pack_kv_str(pk, "transport",
		       mc_transport_choose(client, p != NULL ? &p->transports : NULL));
	if (p != NULL && p->packed[r->tier] != NULL) {
		/* The peer's fixed fields, packed once at registration. */
		pk->callback(pk->data, p->packed[r->tier], p->packed_len[r->tier]);
		return;
	}
	mc_pack_kv_str(pk, "addr", p != NULL ? p->addr : "");
	mc_pack_kv_str(pk, "tier", mc_tier_name(r->tier));
	mc_pack_kv_str(pk, "host", p != NULL ? p->host : "");
	mc_pack_kv_str(pk, "domain", p != NULL ? p->domain : "");
}
