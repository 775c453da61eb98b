/*
 * Who a connection is (mc-auth(5)): with --auth-file, hello binds a
 * role to the connection from its token, the dispatcher asks
 * auth_authorize before every call, and SIGHUP reloads the file,
 * closing the connections whose token is gone. Without it every
 * connection may call everything, as before.
 */
#ifndef MASTER_AUTH_H
#define MASTER_AUTH_H

#include <msgpack.h>

#include "mc/conn.h"
#include "mc/err.h"
#include "master.h"
#include "peers.h"

/* Load cfg.auth_file, when given; -1 with err when it cannot be read. */
int auth_open(struct master *m, struct mc_err *err);
/* SIGHUP: read the file again (the old one stays on error), close whom it dropped. */
int auth_reload(struct master *m, struct mc_err *err);
void auth_close(struct master *m);

/*
 * hello's authentication: bind cl's role and tenant from the token in
 * params. tenant is the hello's own tenant field (NULL when absent): a
 * tenant token may name only its own, an admin's any. 0, or -1 with err
 * (MC_ERR_PERMISSION) and cl left with no role. Without --auth-file: 0, nothing
 * bound.
 */
int auth_hello(struct master *m, struct client *cl, const msgpack_object *params,
	       const char *tenant, size_t tenant_len, struct mc_err *err);

/*
 * A peer's call speaks only for the peer registered on its connection:
 * 0 when peer id is that one (or without --auth-file), -1 with err.
 */
int auth_check_peer(const struct mc_req *req, uint64_t id, struct mc_err *err);
/*
 * A fresh registration (not a resume) for an address that holder, a
 * live peer still connected, holds: refused with --auth-file, so that
 * nobody takes over a peer's address and erases its objects.
 */
int auth_check_takeover(const struct master *m, const struct peer *holder, struct mc_err *err);

/* The dispatcher's hook (mc_conn_ops.authorize): the method's flags against the role. */
int auth_authorize(struct mc_req *req, struct mc_err *err);

/* Authentication as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module auth_module;

#endif
