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
 * A peer's call speaks only for the peer registered on its connection,
 * or for one whose session token it carries (params' "session"; with
 * --auth-file, from that peer's own identity). 0 when it may speak for
 * peer id, -1 with err (MC_ERR_PERMISSION).
 */
int auth_check_peer(const struct mc_req *req, uint64_t id, struct mc_err *err);
/*
 * The identity a peer registering on cl speaks as, into name
 * (MC_NAME_MAX + 1 bytes): its auth entry's name; "" without
 * --auth-file or for the shared secret.
 */
void auth_peer_identity(const struct master *m, const struct client *cl, char *name);
/*
 * A fresh registration (not a resume) of fresh, its addr and name
 * filled in, where holder (may be NULL) is the entry at that address.
 * Refused with err, and the reason in *why (enum peer_refusal): an
 * address bound to another identity, or one a live peer still connected
 * holds (nobody takes over a peer's address and erases its objects; a
 * restarted peer's old link is closed); an identity live and connected
 * elsewhere.
 */
int auth_check_takeover(const struct master *m, const struct peer *holder, const struct peer *fresh,
			int *why, struct mc_err *err);

/* The dispatcher's hook (mc_conn_ops.authorize): the method's flags against the role. */
int auth_authorize(struct mc_req *req, struct mc_err *err);

/* Authentication as a module (start.c runs every module's). */
struct master_module;
extern const struct master_module auth_module;

#endif
