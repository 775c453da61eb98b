/*
 * Unit tests for the master's store (cmd/mc-master/store.c): objects by
 * (tenant, key), tenant and type interning with their totals, groups,
 * the logical clock of accesses, and the kv ranking's state: LRFU
 * values, chain parents, worths and the ghosts an evicted key leaves.
 */
#include <string.h>

#include "mc/proto.h"
#include "store.h"
#include "tap.h"

static struct store s;

static struct mobj *
create(uint32_t tenant, const char *key, uint64_t size, const char *group)
{
	struct mc_err err;
	struct mobj *o = store_create(&s, store_key_hash(tenant, key, strlen(key)), tenant, key,
				      strlen(key), size, group, group ? strlen(group) : 0, &err);

	if (o != NULL)
		o->version = 1;
	return o;
}

static struct mobj *
find(uint32_t tenant, const char *key)
{
	return store_find(&s, store_key_hash(tenant, key, strlen(key)), tenant, key, strlen(key));
}

static void
test_objects(void)
{
	struct mc_err err;
	int64_t t = store_tenant_intern(&s, "alice", 5, &err);
	struct mobj *a, *b;
	char big[MC_KEY_MAX + 2];

	TAP_OK(t > 0 && store_tenant_intern(&s, "alice", 5, &err) == t &&
		       store_tenant_find(&s, "alice", 5) == t &&
		       store_tenant_find(&s, "bob", 3) < 0,
	       "tenants: interned once, found by name, a lookup interns nothing");
	TAP_OK(store_type_intern(&s, "kv", 2, &err) > 0 &&
		       strcmp(store_type_name(&s, (uint32_t)store_type_intern(&s, "kv", 2, &err)),
			      "kv") == 0,
	       "types: interned and named back");
	TAP_OK(!store_name_ok("a b", 3) && !store_name_ok("a\n", 2) && !store_name_ok("", 0) &&
		       store_name_ok("chat-7", 6),
	       "names: printable ASCII without spaces, not empty");
	a = create((uint32_t)t, "k", 100, NULL);
	b = create(0, "k", 50, NULL);
	TAP_OK(a != NULL && b != NULL && a != b && find((uint32_t)t, "k") == a && find(0, "k") == b,
	       "objects: the same key in two tenants is two objects");
	TAP_OK(s.tenants[t].objects == 1 && s.tenants[t].bytes == 100 && s.bytes == 150,
	       "totals: per tenant and in all");
	store_resize(&s, a, 300);
	TAP_OK(s.tenants[t].bytes == 300 && s.bytes == 350, "resize: totals follow");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	TAP_OK(store_create(&s, 1, 0, big, MC_KEY_MAX + 1, 1, NULL, 0, &err) == NULL &&
		       err.code == MC_ERR_INVALID,
	       "objects: a key over %d bytes is refused", MC_KEY_MAX);
	store_destroy(&s, a);
	store_destroy(&s, b);
	TAP_OK(find((uint32_t)t, "k") == NULL && s.bytes == 0 && s.tenants[t].objects == 0,
	       "destroy: gone, totals back to 0");
}

static void
test_groups(void)
{
	struct mobj *a = create(0, "g1", 1, "grp"), *b = create(0, "g2", 1, "grp");
	struct group *g = a != NULL ? store_group_get(&s, a->group) : NULL;
	uint32_t gid = a != NULL ? a->group : 0;

	TAP_OK(g != NULL && b != NULL && b->group == a->group && g->n == 2,
	       "groups: two members of one group");
	store_destroy(&s, a);
	TAP_OK(g->n == 1 && g->members[0] == b, "groups: a member leaves on destroy");
	store_destroy(&s, b);
	TAP_OK(gid != NO_GROUP && store_group_get(&s, gid) == NULL,
	       "groups: the last member's destroy frees the group");
}

/* The half-life now, as the store decays with it. */
static double
half_life(void)
{
	return mc_history_half_life(s.hist, s.objects.count);
}

static double
head_worth(const struct mobj *h)
{
	return store_worth(h, s.access_seq, half_life());
}

static void
test_clock_and_chains(void)
{
	struct mobj *h = create(0, "c#0", 10, NULL), *t, *u, *again;
	uint64_t seq0 = s.access_seq;

	store_access_new(&s, h, 0);
	TAP_OK(h->access_seq == seq0 + 1 && h->created_seq == h->access_seq && h->probation &&
		       h->crf == 1 && h->depth == 0,
	       "new: the next number, value 1, on probation (no ghost), a head");
	t = create(0, "c#1", 10, NULL);
	store_access_new(&s, t, store_key_hash(0, "c#0", 3));
	TAP_OK(t->depth == 1 && h->children == 1 && store_find_parent(&s, t) == h,
	       "chain: the child is one deeper, counted among its parent's children");
	TAP_OK(t->worth < head_worth(h), "chain: a block is worth less than its prefix");
	store_read(&s, t);
	store_read(&s, t);
	TAP_OK(!t->probation && t->crf > 2 && t->worth < head_worth(h),
	       "read: off probation, the value grows, the worth stays under the parent's");
	store_read(&s, h);
	store_read(&s, t);
	TAP_OK(t->worth < head_worth(h) && t->worth > 1,
	       "read in prefix order: the head first, the tail's worth just under it");
	u = create(0, "orphan", 10, NULL);
	store_access_new(&s, u, store_key_hash(0, "nowhere", 7));
	TAP_OK(u->depth == 1 && store_find_parent(&s, u) == NULL,
	       "chain: a parent not cached leaves the block one deep, an orphan");
	/* the head goes: the tail's parent is gone, and the head's value is a ghost */
	double was = store_crf(h, s.access_seq, half_life());
	store_destroy(&s, h);
	TAP_OK(store_find_parent(&s, t) == NULL, "destroy: the child's parent is gone");
	again = create(0, "c#0", 10, NULL);
	store_access_new(&s, again, 0);
	TAP_OK(!again->probation && again->crf > 1 && again->crf <= was + 1.2,
	       "ghost: the key written again resumes its value (%.2f of %.2f), not on probation",
	       again->crf, was);
	TAP_OK(store_find_parent(&s, t) == again, "chain: the parent is found again by its key");
	store_destroy(&s, t);
	TAP_OK(again->children == 0, "destroy: a child leaving is uncounted from its parent");
	store_destroy(&s, again);
	store_destroy(&s, u);
}

/*
 * What a tenant is charged: its bytes, and each object's key and
 * STORE_OBJECT_OVERHEAD, from creation to destruction; sums near 2^64
 * saturate and never wrap, neither up nor on the way back down.
 */
static void
test_charge(void)
{
	const uint64_t max = UINT64_MAX;
	struct mc_err err;
	int64_t t = store_tenant_intern(&s, "charged", 7, &err);
	struct tenant *tn = &s.tenants[t];
	struct mobj *a = create((uint32_t)t, "empty", 0, NULL),
		    *b = create((uint32_t)t, "x", 10, NULL);

	TAP_OK(a != NULL && b != NULL && tn->bytes == 10 &&
		       tn->meta_bytes == 5 + 1 + 2 * STORE_OBJECT_OVERHEAD &&
		       store_tenant_charge(tn) == 10 + 6 + 2 * STORE_OBJECT_OVERHEAD,
	       "charge: an object of no bytes costs its key and %u bytes of overhead",
	       STORE_OBJECT_OVERHEAD);
	store_destroy(&s, a);
	TAP_OK(tn->meta_bytes == 1 + STORE_OBJECT_OVERHEAD && tn->bytes == 10,
	       "charge: a destroyed object gives its key and overhead back");
	TAP_OK(store_meta_cost(max) == max && store_meta_cost(max - STORE_OBJECT_OVERHEAD) == max &&
		       store_meta_cost(max - STORE_OBJECT_OVERHEAD - 1) == max - 1,
	       "charge: a key's cost saturates at 2^64 - 1");
	tn->bytes = max - 5;
	TAP_OK(store_tenant_charge(tn) == max, "charge: bytes near 2^64 and keys saturate the sum");
	tn->meta_bytes = max - 100;
	a = create((uint32_t)t, "near", 50, NULL);
	TAP_OK(a != NULL && tn->bytes == max && tn->meta_bytes == max &&
		       store_tenant_charge(tn) == max,
	       "charge: counters near 2^64 saturate as an object is created, never wrap");
	tn->meta_bytes = 10;
	store_destroy(&s, a);
	TAP_OK(tn->meta_bytes == 0, "charge: a count that saturated stops at 0 coming back down");
	tn->bytes = 10;
	store_destroy(&s, b);
	TAP_OK(tn->objects == 0 && tn->bytes == 0 && tn->meta_bytes == 0,
	       "charge: all gone, nothing charged");
}

/* --max-tenants and --max-types-per-tenant: tenants and types made on first use, capped. */
static void
test_caps(void)
{
	struct store c;
	struct mc_err err;
	int64_t a, b;

	if (store_init(&c, &err) != 0)
		return;
	c.max_tenants = 3;
	c.max_types_per_tenant = 2;
	a = store_tenant_intern(&c, "a", 1, &err);
	b = store_tenant_intern(&c, "b", 1, &err);
	TAP_OK(a == 1 && b == 2 && store_tenant_intern(&c, "c", 1, &err) == -1 &&
		       err.code == MC_ERR_TOO_LARGE && strcmp(err.msg, "too many tenants (3)") == 0,
	       "caps: a tenant past --max-tenants is refused (%s)", err.msg);
	TAP_OK(store_tenant_intern(&c, "a", 1, &err) == a, "caps: a known tenant still interns");
	TAP_OK(store_tenant_type(&c, (uint32_t)a, "t1", 2, &err) >= 0 &&
		       store_tenant_type(&c, (uint32_t)a, "t2", 2, &err) >= 0 &&
		       store_tenant_type(&c, (uint32_t)a, "t1", 2, &err) >= 0,
	       "caps: a tenant names its types again and again");
	TAP_OK(store_tenant_type(&c, (uint32_t)a, "t3", 2, &err) == -1 &&
		       err.code == MC_ERR_TOO_LARGE &&
		       strcmp(err.msg, "tenant 'a' has 2 data types already") == 0,
	       "caps: a third type of one tenant is refused (%s)", err.msg);
	TAP_OK(store_tenant_type(&c, (uint32_t)b, "t3", 2, &err) >= 0,
	       "caps: the cap is per tenant");
	store_free(&c);
}

int
main(void)
{
	struct mc_err err;

	TAP_OK(store_init(&s, &err) == 0 && s.ntenants == 1 && s.ntypes == 1,
	       "init: the default tenant and type are ids 0");
	test_objects();
	test_groups();
	test_clock_and_chains();
	test_caps();
	test_charge();
	store_free(&s);
	return tap_done();
}
