/*
 * Unit tests for the master's request helpers (cmd/mc-master/request.c):
 * the count of connections per tenant that --max-conns-per-tenant caps,
 * and the tenant a hello names, which it never creates.
 */
#include <stdio.h>
#include <string.h>

#include "master.h"
#include "request.h"
#include "tap.h"
#include "store.h"
#include "start.h"

static struct master m;

static void
test_tenant_cap(uint32_t a, uint32_t b)
{
	struct client c1 = { 0 }, c2 = { 0 }, c3 = { 0 }, peer = { 0 }, admin = { 0 };
	struct mc_err err;

	m.cfg.max_conns_per_tenant = 2;
	TAP_OK(req_client_bind_tenant(&m, &c1, a, &err) == 0 &&
		       req_client_bind_tenant(&m, &c2, a, &err) == 0 && m.tenant_conns[a] == 2,
	       "tenant cap: two connections of a tenant are counted");
	TAP_OK(req_client_bind_tenant(&m, &c1, a, &err) == 0 && m.tenant_conns[a] == 2,
	       "tenant cap: a second hello naming the same tenant counts once");
	TAP_OK(req_client_bind_tenant(&m, &c3, a, &err) == -1 && err.code == MC_ERR_UNAVAILABLE &&
		       strcmp(err.msg, "too many connections for tenant 'ta': 2 open") == 0 &&
		       !c3.counted && m.tenant_conns[a] == 2 && m.refused_per_tenant == 1,
	       "tenant cap: a third is refused, saying why (%s)", err.msg);
	TAP_OK(req_client_bind_tenant(&m, &c3, b, &err) == 0 && m.tenant_conns[b] == 1,
	       "tenant cap: another tenant is served");
	peer.who.role = MC_ROLE_PEER;
	admin.who.role = MC_ROLE_ADMIN;
	TAP_OK(req_client_bind_tenant(&m, &peer, a, &err) == 0 &&
		       req_client_bind_tenant(&m, &admin, a, &err) == 0 && m.tenant_conns[a] == 2,
	       "tenant cap: peers and admins are not counted");
	TAP_OK(req_client_bind_tenant(&m, &c2, b, &err) == 0 && m.tenant_conns[a] == 1 &&
		       m.tenant_conns[b] == 2,
	       "tenant cap: a hello naming another tenant moves the connection there");
	TAP_OK(req_client_bind_tenant(&m, &c1, b, &err) == -1 && c1.counted &&
		       c1.counted_tenant == a && m.tenant_conns[a] == 1,
	       "tenant cap: a refused move leaves the connection where it was");
	m.cfg.max_conns_per_tenant = 0;
	TAP_OK(req_client_bind_tenant(&m, &c1, b, &err) == 0 && m.tenant_conns[b] == 3 &&
		       m.tenant_conns[a] == 0,
	       "tenant cap: 0 means no cap");
	TAP_OK(req_client_bind_tenant(&m, &c1, TENANT_NONE, &err) == 0 && !c1.counted &&
		       m.tenant_conns[b] == 2,
	       "tenant cap: a hello naming a tenant that does not exist counts nowhere");
}

/* hello's tenant by name: found by id, or kept by name, never created */
static void
test_name_tenant(uint32_t a)
{
	struct client c = { 0 };
	uint32_t n = m.store->ntenants;

	req_client_name_tenant(&m, &c, "ta", 2);
	TAP_OK(c.tenant == a && strcmp(req_tenant_name(&m, &c), "ta") == 0,
	       "name tenant: an existing tenant is found by id");
	req_client_name_tenant(&m, &c, "nobody", 6);
	TAP_OK(c.tenant == TENANT_NONE && strcmp(req_tenant_name(&m, &c), "nobody") == 0 &&
		       m.store->ntenants == n,
	       "name tenant: a new one is kept by name and not created");
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	struct mc_err err;
	int64_t a, b;

	if (store_init(m.store, &err) != 0 ||
	    (a = store_tenant_intern(m.store, "ta", 2, &err)) < 0 ||
	    (b = store_tenant_intern(m.store, "tb", 2, &err)) < 0) {
		fprintf(stderr, "test_master_request: setup failed: %s\n", err.msg);
		return 1;
	}
	test_tenant_cap((uint32_t)a, (uint32_t)b);
	test_name_tenant((uint32_t)a);
	store_free(m.store);
	return tap_done();
}
