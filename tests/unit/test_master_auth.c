/*
 * Unit tests for the master's roles (cmd/mc-master/auth.c): the auth
 * file loaded and bound to a connection's client record by hello, the
 * tenant a token may speak for, and the takeover of a live peer's address.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "mc/clock.h"
#include "master.h"
#include "request.h"
#include "tap.h"
#include "peers.h"
#include "store.h"
#include "start.h"

static struct master m;
static char tok_alice[MC_AUTH_TOKEN_LEN + 1], tok_ops[MC_AUTH_TOKEN_LEN + 1],
	tok_peer[MC_AUTH_TOKEN_LEN + 1];

/* hello's params {token} (token NULL: none), unpacked into z. */
static const msgpack_object *
hello_params(msgpack_sbuffer *sb, msgpack_unpacked *z, const char *token)
{
	msgpack_packer pk;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, token != NULL);
	if (token != NULL)
		mc_pack_kv_str(&pk, "token", token);
	msgpack_unpacked_init(z);
	msgpack_unpack_next(z, sb->data, sb->size, NULL);
	return &z->data;
}

static int
hello(struct client *cl, const char *token, const char *tenant, struct mc_err *err)
{
	msgpack_sbuffer sb;
	msgpack_unpacked z;
	int rc;

	rc = auth_hello(&m, cl, hello_params(&sb, &z, token), tenant,
			tenant != NULL ? strlen(tenant) : 0, err);
	msgpack_unpacked_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

static void
test_hello(void)
{
	struct client cl = { 0 };
	struct mc_err err;

	TAP_OK(hello(&cl, NULL, NULL, &err) == -1 && err.code == MC_ERR_PERMISSION &&
		       strcmp(err.msg, "permission denied: hello needs a token") == 0 &&
		       cl.who.role == MC_ROLE_NONE,
	       "hello: no token, no role (%s)", err.msg);
	TAP_OK(hello(&cl, "0123", NULL, &err) == -1 && err.code == MC_ERR_PERMISSION &&
		       cl.who.role == MC_ROLE_NONE,
	       "hello: a wrong token binds nothing (%s)", err.msg);
	uint32_t before = m.store->ntenants;
	TAP_OK(hello(&cl, tok_alice, NULL, &err) == 0 && cl.who.role == MC_ROLE_TENANT &&
		       cl.tenant == TENANT_NONE && strcmp(req_tenant_name(&m, &cl), "alice") == 0 &&
		       m.store->ntenants == before,
	       "hello: a tenant's token speaks for its tenant, which it does not create");
	int64_t alice = store_tenant_intern(m.store, "alice", 5, &err);
	TAP_OK(hello(&cl, tok_alice, NULL, &err) == 0 && cl.tenant == (uint32_t)alice,
	       "hello: once the tenant exists it is bound by id");
	memset(&cl, 0, sizeof(cl));
	TAP_OK(hello(&cl, tok_alice, "bob", &err) == -1 && err.code == MC_ERR_PERMISSION &&
		       strcmp(err.msg,
			      "permission denied: the token speaks for tenant 'alice' only") == 0 &&
		       cl.who.role == MC_ROLE_NONE && cl.tenant == 0,
	       "hello: a tenant's token cannot choose another tenant");
	TAP_OK(hello(&cl, tok_alice, "alice", &err) == 0, "hello: naming its own tenant is fine");
	TAP_OK(hello(&cl, "0123", NULL, &err) == -1 && cl.who.role == MC_ROLE_NONE,
	       "hello: a failed hello drops the role an earlier one bound");
	memset(&cl, 0, sizeof(cl));
	TAP_OK(hello(&cl, tok_ops, "bob", &err) == 0 && cl.who.role == MC_ROLE_ADMIN &&
		       strcmp(req_tenant_name(&m, &cl), "bob") == 0,
	       "hello: an admin may act on any tenant");
	memset(&cl, 0, sizeof(cl));
	TAP_OK(hello(&cl, tok_peer, NULL, &err) == 0 && cl.who.role == MC_ROLE_PEER &&
		       cl.tenant == 0,
	       "hello: the peer secret binds the peer role and no tenant");
}

static void
test_takeover(void)
{
	struct peer p = { 0 }, fresh = { 0 }, *twin;
	struct mc_err err;
	int why;

	snprintf(p.addr, sizeof(p.addr), "unix:/p1");
	snprintf(fresh.addr, sizeof(fresh.addr), "unix:/p1");
	p.id = 7;
	p.heard = mc_mono_ms();
	p.conn = (struct mc_conn *)&p; /* connected: only compared with NULL */
	m.cfg.peer_ttl = 60000;
	TAP_OK(auth_check_takeover(&m, &p, &fresh, &why, &err) == -1 &&
		       err.code == MC_ERR_PERMISSION &&
		       strstr(err.msg, "live peer 7 holds unix:/p1") != NULL &&
		       why == PEER_REFUSED_ADDRESS,
	       "takeover: a live, connected peer's address is refused (%s)", err.msg);
	p.conn = NULL;
	TAP_OK(auth_check_takeover(&m, &p, &fresh, &why, &err) == 0,
	       "takeover: a peer whose link closed may be replaced (a restart)");
	TAP_OK(auth_check_takeover(&m, NULL, &fresh, &why, &err) == 0,
	       "takeover: a free address is free");
	m.auth_on = false;
	p.conn = (struct mc_conn *)&p;
	TAP_OK(auth_check_takeover(&m, &p, &fresh, &why, &err) == -1,
	       "takeover: without --auth-file a live peer's address is refused too");
	m.auth_on = true;

	/* identities: the address is bound to its peer's, live or not */
	snprintf(p.name, sizeof(p.name), "rack1-a");
	snprintf(fresh.name, sizeof(fresh.name), "rack1-b");
	p.conn = NULL;
	TAP_OK(auth_check_takeover(&m, &p, &fresh, &why, &err) == -1 &&
		       why == PEER_REFUSED_ADDRESS && strstr(err.msg, "'rack1-a'") != NULL,
	       "takeover: another identity never takes a named peer's address (%s)", err.msg);
	snprintf(fresh.name, sizeof(fresh.name), "rack1-a");
	TAP_OK(auth_check_takeover(&m, &p, &fresh, &why, &err) == 0,
	       "takeover: the same identity restarting at its address may");
	fresh.name[0] = '\0';
	TAP_OK(auth_check_takeover(&m, &p, &fresh, &why, &err) == -1,
	       "takeover: the shared secret never takes a named peer's address");

	/* one identity is one live peer */
	twin = peers_add(m.peers, &err);
	if (twin == NULL) {
		TAP_OK(0, "takeover: a peer entry for the twin (%s)", err.msg);
		return;
	}
	snprintf(twin->addr, sizeof(twin->addr), "unix:/p2");
	snprintf(twin->name, sizeof(twin->name), "rack1-a");
	twin->heard = mc_mono_ms();
	twin->conn = (struct mc_conn *)twin;
	snprintf(fresh.name, sizeof(fresh.name), "rack1-a");
	TAP_OK(auth_check_takeover(&m, NULL, &fresh, &why, &err) == -1 &&
		       why == PEER_REFUSED_IDENTITY && strstr(err.msg, "live at unix:/p2") != NULL,
	       "takeover: an identity live elsewhere is refused a second address (%s)", err.msg);
	twin->conn = NULL;
	TAP_OK(auth_check_takeover(&m, NULL, &fresh, &why, &err) == 0,
	       "takeover: an identity whose link closed may come back at a new address");
	peers_del(m.peers, twin);
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	char path[] = "/tmp/test_master_auth.XXXXXX";
	struct mc_authfile a = { 0 };
	struct mc_err err;
	int fd = mkstemp(path);

	close(fd);
	if (mc_authfile_add(&a, MC_ROLE_TENANT, "alice", tok_alice, &err) != 0 ||
	    mc_authfile_add(&a, MC_ROLE_ADMIN, "ops", tok_ops, &err) != 0 ||
	    mc_authfile_add(&a, MC_ROLE_PEER, "peers", tok_peer, &err) != 0 ||
	    mc_authfile_save(&a, path, &err) != 0 || store_init(m.store, &err) != 0) {
		fprintf(stderr, "test_master_auth: setup failed: %s\n", err.msg);
		return 1;
	}
	mc_authfile_free(&a);
	m.cfg.auth_file = path;
	TAP_OK(auth_open(&m, &err) == 0 && m.auth_on && m.auth.n == 3,
	       "open: the file's three entries");
	test_hello();
	test_takeover();
	auth_close(&m);
	store_free(m.store);
	unlink(path);
	return tap_done();
}
