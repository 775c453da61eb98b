/*
 * Unit tests for dynamic replication's plan (cmd/mc-master/replicate.c
 * replicate_plan), a pure choice over the peer table: the source is a
 * readable DRAM replica, one in the reader's domain first, ties broken
 * by the key so that hot keys spread over their sources instead of all
 * taking the first; the target has room in DRAM and no replica, sits in
 * the reader's domain when it names one, avoids a host that already has
 * a readable replica when another host can take it, and is the least
 * used; a plan that cannot be made says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "master.h"
#include "peers.h"
#include "replicate.h"
#include "start.h"
#include "store.h"
#include "tap.h"

#define MIB (1ull << 20)

static struct master m;
static struct event_base *base;
/* stands for a control link: the plan asks only whether there is one */
static char link_stub;

static struct peer *
peer(const char *host, const char *domain, uint64_t cap, uint64_t used)
{
	struct mc_err err;
	struct peer *p = peers_add(m.peers, &err);

	snprintf(p->host, sizeof(p->host), "%s", host);
	snprintf(p->domain, sizeof(p->domain), "%s", domain);
	p->heard = mc_mono_ms();
	p->conn = (struct mc_conn *)&link_stub;
	p->task_kinds = (1u << TASK_DROP) | (1u << TASK_REPLICA_COPY);
	p->tiers[MC_TIER_DRAM] =
		(struct peer_tier){ .capacity = cap, .used = used, .present = true };
	return p;
}

static void
reset(void)
{
	struct mc_err err;

	for (uint32_t i = 0; i < m.peers->n; i++)
		m.peers->v[i]->conn = NULL;
	peers_free(m.peers);
	peers_init(m.peers, base, m.store, &err);
}

/* An object of key with a complete replica of version 1 on each of n peers, tier DRAM. */
static struct mobj *
object(const char *key, uint64_t size, struct peer *const *on, unsigned n)
{
	size_t klen = strlen(key);
	struct mobj *o = calloc(1, sizeof(*o) + klen);
	struct mrep *v = n > 1 ? calloc(n, sizeof(*v)) : &o->rep.one;

	memcpy(o->key, key, klen);
	o->key_len = (uint16_t)klen;
	o->size = size;
	o->version = 1;
	o->nrep = (uint8_t)n;
	o->rep_cap = (uint8_t)(n > 1 ? n : 1);
	if (n > 1)
		o->rep.many = v;
	for (unsigned i = 0; i < n; i++)
		v[i] = (struct mrep){ .version = 1,
				      .id = i + 1,
				      .peer = on[i]->id,
				      .tier = MC_TIER_DRAM,
				      .state = REP_COMPLETE };
	return o;
}

static void
object_free(struct mobj *o)
{
	if (o->rep_cap > 1)
		free(o->rep.many);
	free(o);
}

static void
test_source(void)
{
	struct peer *p[3];
	unsigned chose[3] = { 0 };
	uint32_t src = 0, dst = 0, again = 0;
	char key[32];

	reset();
	p[0] = peer("h1", "rack-a", 100 * MIB, 0);
	p[1] = peer("h2", "rack-a", 100 * MIB, 0);
	p[2] = peer("h3", "rack-b", 100 * MIB, 0);
	peer("h4", "rack-a", 100 * MIB, 0);
	peer("h5", "rack-b", 100 * MIB, 0);
	for (int k = 0; k < 60; k++) {
		struct mobj *o;

		snprintf(key, sizeof(key), "block-%d", k);
		o = object(key, MIB, p, 3);
		if (replicate_plan(&m, o, NULL, &src, &dst) < 0 && src >= p[0]->id &&
		    src <= p[2]->id)
			chose[src - p[0]->id]++;
		replicate_plan(&m, o, NULL, &again, &dst);
		if (again != src)
			chose[0] = 1000; /* not stable: fail below */
		object_free(o);
	}
	TAP_OK(chose[0] > 0 && chose[1] > 0 && chose[2] > 0 && chose[0] < 1000,
	       "source selection uses stable tie-breaking instead of always choosing the first "
	       "readable replica: same-cost sources spread over keys (%u/%u/%u of 60)",
	       chose[0], chose[1], chose[2]);
	struct mobj *o = object("in-domain", MIB, p, 3);
	TAP_OK(replicate_plan(&m, o, "rack-b", &src, &dst) < 0 && src == p[2]->id,
	       "a source in the reader's domain comes first");
	object_free(o);
	o = object("ssd-only", MIB, p, 1);
	obj_reps(o)[0].tier = MC_TIER_SSD;
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) == DR_NO_SOURCE,
	       "no readable DRAM replica: no_source");
	obj_reps(o)[0].tier = MC_TIER_DRAM;
	obj_reps(o)[0].state = REP_PROCESSING;
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) == DR_NO_SOURCE,
	       "a replica still being written is no source");
	object_free(o);
	o = object("old-peer", MIB, p, 1);
	p[0]->task_kinds = 1u << TASK_DROP;
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) == DR_NO_SOURCE,
	       "a peer that serves no replica_copy is no source");
	p[0]->task_kinds |= 1u << TASK_REPLICA_COPY;
	object_free(o);
	o = object("empty", 0, p, 1);
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) == DR_SIZE, "an empty object: size");
	object_free(o);
}

static void
test_target(void)
{
	struct peer *a, *b, *c, *d;
	uint32_t src = 0, dst = 0;
	struct mobj *o;

	reset();
	a = peer("h1", "rack-a", 100 * MIB, 0);
	b = peer("h1", "rack-a", 100 * MIB, 0);
	c = peer("h2", "rack-a", 100 * MIB, 60 * MIB);
	o = object("k", MIB, &a, 1);
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) < 0 && src == a->id && dst == c->id,
	       "target selection avoids an existing replica host when another valid host exists, "
	       "though a peer on the replica's own host is emptier");
	c->tiers[MC_TIER_DRAM].used = 100 * MIB;
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) < 0 && dst == b->id,
	       "the same host when no other host has room");
	c->tiers[MC_TIER_DRAM].used = 60 * MIB;
	d = peer("h3", "rack-a", 100 * MIB, 30 * MIB);
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) < 0 && dst == d->id,
	       "among other hosts, the least used");
	TAP_OK(replicate_plan(&m, o, "rack-b", &src, &dst) == DR_NO_TARGET,
	       "no peer in the reader's domain: no_target");
	struct peer *e = peer("h9", "rack-b", 100 * MIB, 90 * MIB);
	TAP_OK(replicate_plan(&m, o, "rack-b", &src, &dst) < 0 && dst == e->id && src == a->id,
	       "target selection chooses a peer in the requester or target domain, the source "
	       "wherever the copy is");
	e->tiers[MC_TIER_DRAM].used = 100 * MIB - 1000;
	TAP_OK(replicate_plan(&m, o, "rack-b", &src, &dst) == DR_NO_TARGET,
	       "a peer without room for the copy is no target");
	e->heard = mc_mono_ms() - 2 * m.cfg.peer_ttl;
	e->tiers[MC_TIER_DRAM].used = 0;
	TAP_OK(replicate_plan(&m, o, "rack-b", &src, &dst) == DR_NO_TARGET,
	       "a peer silent past --peer-ttl is no target");
	e->heard = mc_mono_ms();
	e->tiers[MC_TIER_DRAM].used = 90 * MIB;
	TAP_OK(replicate_plan_to(&m, o, NULL, b->id, &src, &dst) < 0 && dst == b->id,
	       "a valid preferred target is taken over a better one");
	TAP_OK(replicate_plan_to(&m, o, "rack-b", d->id, &src, &dst) < 0 && dst == e->id,
	       "invalid preferred target outside the target domain falls back to another valid "
	       "target");
	TAP_OK(replicate_plan_to(&m, o, NULL, a->id, &src, &dst) < 0 && dst == d->id,
	       "a preferred target that holds the object already falls back");
	object_free(o);
	struct peer *both[2] = { a, d };
	o = object("k2", MIB, both, 2);
	TAP_OK(replicate_plan(&m, o, NULL, &src, &dst) < 0 && dst == c->id,
	       "a peer that holds a replica already is no target");
	object_free(o);
}

int
main(void)
{
	struct mc_err err;

	if (master_alloc(&m) != 0)
		return 1;
	master_defaults(&m.cfg);
	m.cfg.peer_ttl = 10000;
	base = event_base_new();
	TAP_OK(store_init(m.store, &err) == 0, "a master's store and peer table");
	peers_init(m.peers, base, m.store, &err);
	test_source();
	test_target();
	reset();
	peers_free(m.peers);
	store_free(m.store);
	event_base_free(base);
	return tap_done();
}
