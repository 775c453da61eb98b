/*
 * Helpers every request handler of the master shares: failing a request,
 * the client a connection speaks for, and the
 * field checks that several modules need. A leaf: it calls into no
 * feature module, so any of them may use it.
 */
#ifndef MASTER_REQUEST_H
#define MASTER_REQUEST_H

#include <stdint.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "master.h"
#include "grants.h"
#include "peers.h"
#include "store.h"

/*
 * The master a request is for (the dispatcher counted it already). A
 * connection whose tenant did not exist at hello speaks for it from
 * the first request after it does.
 */
struct master *req_begin(struct mc_req *req);
/* Answer req with an error (a notification's is counted, not sent). */
void handler_fail(struct mc_req *req, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with an mc_err's code and message. */
void req_fail_err(struct mc_req *req, const struct mc_err *err);

/* What the connection said in hello (a default client when it said nothing). */
const struct client *req_client(const struct mc_req *req);
/* The connection's client record, made on first use; NULL when out of memory. */
struct client *req_client_get(struct mc_req *req);
/*
 * hello binds cl to tenant: count its connection there, a peer's or an
 * operator's aside (TENANT_NONE: count it nowhere). -1 with err (and
 * nothing changed) when the tenant has --max-conns-per-tenant
 * connections already.
 */
int req_client_bind_tenant(struct master *m, struct client *cl, uint32_t tenant,
			   struct mc_err *err);
/*
 * hello named tenant name (checked by the caller): cl speaks for it,
 * by id when it exists, else as TENANT_NONE with the name kept, so that
 * a read never creates a tenant. The caller binds a found one.
 */
void req_client_name_tenant(struct master *m, struct client *cl, const char *name, size_t len);
/*
 * For a write that creates objects (put_start): the connection's tenant,
 * created and bound to when it does not exist yet; -1 with err when it
 * cannot be (--max-tenants, --max-conns-per-tenant).
 */
int64_t req_tenant_make(struct mc_req *req, struct mc_err *err);
/* The name of the tenant cl speaks for, existing or not. */
const char *req_tenant_name(const struct master *m, const struct client *cl);
/* The connection closed: its tenant has one fewer (on_close). */
void req_client_closed(struct mc_conn *c);

/*
 * Whether peer id is the peer registered on req's connection: only it
 * reports on its own copies (write_ack, copy_moved). 0, or -1 with err
 * (MC_ERR_PERMISSION).
 */
int req_check_own_peer(const struct mc_req *req, uint64_t id, struct mc_err *err);
/* A required unsigned field: 0, or -1 with err when missing or not a u64. */
int req_need_u64(const msgpack_object *params, const char *name, uint64_t *out, struct mc_err *err);

/* Whether ids (a checked array of replica ids; NULL: all) names id. */
bool req_ids_name(const msgpack_object_array *ids, uint32_t id);

/* A key of 1..MC_KEY_MAX bytes: 0, or -1 with err. */
int req_check_key(size_t len, struct mc_err *err);
/* The required "key" field, its length checked. */
int req_need_key(const msgpack_object *params, const char **key, size_t *len, struct mc_err *err);
/* Optional key field (put's parent): 0 absent, 1 present and valid, -1 invalid. */
int req_opt_key(const msgpack_object *params, const char *field, const char **key, size_t *len,
		struct mc_err *err);
/* An optional name field (tenant, type, group): 0 absent, 1 present and valid, -1 invalid. */
int req_opt_name(const msgpack_object *params, const char *field, const char **s, size_t *len,
		 struct mc_err *err);

/*
 * One replica entry {replica_id, peer_id, drop_in_ms, grant, transport,
 * addr, tier, host, domain}; p may be NULL. The grant lets the caller do
 * scope's action (its peer is r's) on that copy; id (NULL: none) lets a
 * read grant come from the cache (grants.h). transport is the one the
 * caller, whose hello advertised client (NULL: nothing), reaches p with.
 */
void req_pack_replica(msgpack_packer *pk, struct master *m, struct peer *p, const struct mrep *r,
		      const struct mc_transport_list *client, struct mc_grant_scope *scope,
		      const struct mgrant_ident *id);

#endif
