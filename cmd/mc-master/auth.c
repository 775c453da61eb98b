/*
 * Roles from the auth file (auth.h).
 */
#include <sodium.h>
#include <string.h>

#include "auth.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "request.h"
#include "peers.h"

int
auth_open(struct master *m, struct mc_err *err)
{
	if (m->cfg.auth_file == NULL)
		return 0;
	if (mc_authfile_load(&m->auth, m->cfg.auth_file, 0, err) != 0)
		return -1;
	m->auth_on = true;
	return 0;
}

void
auth_close(struct master *m)
{
	mc_authfile_free(&m->auth);
}

/* Is the entry cl authenticated with still in the file, unchanged? */
static bool
still_there(const struct mc_authfile *a, const struct auth_who *w)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].role == w->role && strcmp(a->v[i].name, w->name) == 0 &&
		    sodium_memcmp(a->v[i].hash, w->hash, sizeof(w->hash)) == 0)
			return true;
	return false;
}

/* A peer entry every peer may hold: one compromised host speaks for all of them. */
static void
warn_shared_peer_secret(const struct master *m)
{
	for (size_t i = 0; i < m->auth.n; i++)
		if (m->auth.v[i].role == MC_ROLE_PEER &&
		    strcmp(m->auth.v[i].name, MC_AUTH_SHARED_PEER) == 0)
			mc_warn("%s: the peers share one secret ('%s'), so one peer's host can "
				"speak for every peer; give each its own with mc-cli auth add "
				"--peer NAME",
				m->cfg.auth_file, MC_AUTH_SHARED_PEER);
}

int
auth_reload(struct master *m, struct mc_err *err)
{
	struct mc_authfile a;
	size_t closed = 0;

	if (!m->auth_on)
		return 0;
	if (mc_authfile_load(&a, m->cfg.auth_file, 0, err) != 0)
		return -1;
	mc_authfile_free(&m->auth);
	m->auth = a;
	for (struct client *cl = m->clients, *next; cl != NULL; cl = next) {
		next = cl->next;
		if (cl->who.role != MC_ROLE_NONE && !still_there(&m->auth, &cl->who)) {
			mc_info("closing %s: its %s token for '%s' was removed",
				mc_conn_peer_name(cl->conn), mc_auth_role_name(cl->who.role),
				cl->who.name);
			cl->who.role = MC_ROLE_NONE;
			mc_conn_close(cl->conn, false);
			closed++;
		}
	}
	mc_info("reloaded %s: %zu entries, %zu connections closed", m->cfg.auth_file, m->auth.n,
		closed);
	warn_shared_peer_secret(m);
	return 0;
}

int
auth_hello(struct master *m, struct client *cl, const msgpack_object *params, const char *tenant,
	   size_t tenant_len, struct mc_err *err)
{
	const struct mc_auth_entry *e;
	const char *tok;
	size_t len;
	int rc;

	if (!m->auth_on)
		return 0;
	/* a hello that fails leaves no role behind, not even an earlier one */
	cl->who.role = MC_ROLE_NONE;
	rc = mc_map_str(params, "token", &tok, &len, err);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return mc_err_set(err, MC_ERR_PERMISSION, "permission denied: hello needs a token");
	e = mc_authfile_match(&m->auth, tok, len);
	if (e == NULL)
		return mc_err_set(err, MC_ERR_PERMISSION, "permission denied: unknown token");
	if (e->role == MC_ROLE_TENANT && tenant != NULL &&
	    (tenant_len != strlen(e->name) || memcmp(tenant, e->name, tenant_len) != 0))
		return mc_err_set(err, MC_ERR_PERMISSION,
				  "permission denied: the token speaks for tenant '%s' only",
				  e->name);
	if (e->role == MC_ROLE_PEER) {
		cl->tenant = 0;
	} else if (tenant == NULL) {
		req_client_name_tenant(m, cl, e->name, strlen(e->name));
	} else {
		/* found, or kept by name until its first put: a hello creates no tenant */
		req_client_name_tenant(m, cl, tenant, tenant_len);
	}
	cl->who.role = e->role;
	memcpy(cl->who.name, e->name, sizeof(cl->who.name));
	memcpy(cl->who.hash, e->hash, sizeof(cl->who.hash));
	return 0;
}

int
auth_authorize(struct mc_req *req, struct mc_err *err)
{
	const struct master *m = req->ctx;
	const struct mc_method *me = req->method;
	int role;

	if (!m->auth_on || (me->flags & MC_METHOD_OPEN))
		return 0;
	role = req_client(req)->who.role;
	if (role == MC_ROLE_NONE)
		return mc_err_set(err, MC_ERR_PERMISSION, "%s needs a hello with a valid token",
				  me->name);
	if ((me->flags & MC_METHOD_PEER) != 0)
		return role == MC_ROLE_PEER
			       ? 0
			       : mc_err_set(err, MC_ERR_PERMISSION, "%s is for peers", me->name);
	if ((me->flags & MC_METHOD_ADMIN) != 0)
		return role == MC_ROLE_ADMIN ? 0
					     : mc_err_set(err, MC_ERR_PERMISSION,
							  "%s needs the admin role", me->name);
	/* a tenant's call: a peer's secret speaks for no tenant */
	if (role == MC_ROLE_PEER)
		return mc_err_set(err, MC_ERR_PERMISSION, "%s is a tenant's call, not a peer's",
				  me->name);
	return 0;
}

int
auth_check_peer(const struct mc_req *req, uint64_t id, struct mc_err *err)
{
	const struct master *m = req->ctx;
	const struct client *cl = req_client(req);
	const struct peer *p;
	const char *session;
	size_t len;

	if (req_check_own_peer(req, id, err) == 0)
		return 0;
	p = id <= UINT32_MAX ? peers_find(m->peers, (uint32_t)id) : NULL;
	if (p == NULL || mc_map_str(req->params, "session", &session, &len, NULL) != 1 ||
	    !peer_session_is(p, session, len))
		return -1; /* err says whose connection this is not */
	/* a session read off another peer's host speaks for no other identity */
	if (m->auth_on && p->name[0] != '\0' && strcmp(p->name, cl->who.name) != 0)
		return mc_err_set(err, MC_ERR_PERMISSION,
				  "permission denied: peer %llu is peer '%s', not '%s'",
				  (unsigned long long)id, p->name, cl->who.name);
	return 0;
}

void
auth_peer_identity(const struct master *m, const struct client *cl, char *name)
{
	name[0] = '\0';
	if (m->auth_on && cl->who.role == MC_ROLE_PEER &&
	    strcmp(cl->who.name, MC_AUTH_SHARED_PEER) != 0)
		memcpy(name, cl->who.name, sizeof(cl->who.name));
}

int
auth_check_takeover(const struct master *m, const struct peer *holder, const struct peer *fresh,
		    int *why, struct mc_err *err)
{
	const struct peer *twin;

	*why = PEER_REFUSED_ADDRESS;
	if (holder != NULL && holder->name[0] != '\0' && strcmp(holder->name, fresh->name) != 0)
		return mc_err_set(err, MC_ERR_PERMISSION,
				  "permission denied: %s is the address of peer '%s'", holder->addr,
				  holder->name);
	if (holder != NULL && holder->conn != NULL && peer_alive(holder, m->cfg.peer_ttl))
		return mc_err_set(
			err, MC_ERR_PERMISSION,
			"permission denied: live peer %u holds %s; resume with its session",
			holder->id, holder->addr);
	*why = PEER_REFUSED_IDENTITY;
	twin = fresh->name[0] != '\0'
		       ? peers_find_live_name(m->peers, fresh->name, holder, m->cfg.peer_ttl)
		       : NULL;
	if (twin != NULL)
		return mc_err_set(err, MC_ERR_PERMISSION,
				  "permission denied: peer '%s' is live at %s; one identity is one "
				  "peer",
				  fresh->name, twin->addr);
	return 0;
}

static int
auth_start(struct master *m, struct mc_err *err)
{
	if (auth_open(m, err) != 0)
		return -1;
	if (!m->auth_on)
		mc_info("no --auth-file: every client may call everything, unauthenticated");
	else
		warn_shared_peer_secret(m);
	return 0;
}

static int
auth_hup(struct master *m, struct mc_err *err)
{
	char why[MC_ERR_MSG_MAX];

	if (auth_reload(m, err) == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", err->msg);
	return mc_err_set(err, err->code, "kept the old auth file: %s", why);
}

const struct master_module auth_module = {
	.name = "authentication",
	.init = auth_start,
	.free = auth_close,
	.reload = auth_hup,
};
