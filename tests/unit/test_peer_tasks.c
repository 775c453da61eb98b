/*
 * Unit tests for the peer's side of the master's tasks
 * (cmd/mc-peer/tasks.c): dispatch by kind through a table, a kind this
 * peer does not serve refused before anything runs, a repeated task id
 * acknowledged again but not executed twice, acknowledgements carried
 * by a heartbeat and let go once it is answered, carried again after a
 * refused one and forgotten with the link, a failing item counted and
 * still acknowledged, a fresh registration forgetting the ids of the
 * last, the two kinds that free copies doing so through the pool, and
 * replica_copy advertised only by a peer with copy workers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/proto.h"
#include "mc/wire.h"

#include "peer.h"
#include "tap.h"
#include "tasks.h"

#define T "tenant"

static struct peer p;

/* What the stand-in kinds ran: the kind ('a' or 'b') and key of each item, in order. */
static char ran[64][16];
static int nran;
static bool fail_next;

static int
run_fake(const char *kind, const msgpack_object *item, struct mc_err *err)
{
	const char *key = "";
	size_t len = 0;

	mc_map_str(item, "key", &key, &len, NULL);
	if (nran < 64)
		snprintf(ran[nran++], sizeof(ran[0]), "%s:%.*s", kind, (int)len, key);
	if (fail_next) {
		fail_next = false;
		return mc_err_set(err, MC_ERR_INVALID, "this item fails");
	}
	return 0;
}

static int
run_a(struct peer *pp, const msgpack_object *item, struct mc_err *err)
{
	(void)pp;
	return run_fake("a", item, err);
}

static int
run_b(struct peer *pp, const msgpack_object *item, struct mc_err *err)
{
	(void)pp;
	return run_fake("b", item, err);
}

static const struct peer_task_kind fake_kinds[] = {
	{ "a", run_a, NULL },
	{ "b", run_b, NULL },
	{ NULL, NULL, NULL },
};

/* A message {items: [{tenant, key, task}...]} of n items; task 0: none. */
static msgpack_object
message(msgpack_zone *z, msgpack_sbuffer *sb, int n, const char *const keys[], const uint64_t ids[])
{
	msgpack_packer pk;
	msgpack_object o;

	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "items");
	msgpack_pack_array(&pk, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		msgpack_pack_map(&pk, 3 + (ids[i] != 0));
		mc_pack_kv_str(&pk, "tenant", T);
		mc_pack_kv_str(&pk, "key", keys[i]);
		mc_pack_kv_u64(&pk, "version", 1);
		if (ids[i] != 0)
			mc_pack_kv_u64(&pk, "task", ids[i]);
	}
	if (msgpack_unpack(sb->data, sb->size, NULL, z, &o) != MSGPACK_UNPACK_SUCCESS)
		abort();
	return o;
}

/* Take n items of kind through ts; the items that failed, or -1 when refused. */
static int
take(struct peer_tasks *ts, const char *kind, int n, const char *const keys[], const uint64_t ids[],
     struct mc_err *err)
{
	msgpack_zone z;
	msgpack_sbuffer sb;
	msgpack_object o;
	unsigned bad = 0;
	int rc;

	msgpack_zone_init(&z, 4096);
	msgpack_sbuffer_init(&sb);
	o = message(&z, &sb, n, keys, ids);
	rc = peer_tasks_take(ts, kind, strlen(kind), &o, &bad, err);
	msgpack_zone_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
	return rc < 0 ? -1 : (int)bad;
}

/* Whether the acknowledgements waiting are exactly ids (n of them). */
static bool
acks_are(const struct peer_tasks *ts, size_t n, const uint64_t ids[])
{
	if (ts->nacks != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ts->acks[i] != ids[i])
			return false;
	return true;
}

/* The heartbeat's tasks field as packed: its ids, at most cap, or -1 without one. */
static int
packed_acks(const struct peer_tasks *ts, uint64_t *out, int cap)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_zone z;
	msgpack_object o;
	const msgpack_object_array *a;
	int n = -1;

	msgpack_sbuffer_init(&sb);
	msgpack_zone_init(&z, 4096);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1 + (ts->inflight > 0));
	mc_pack_kv_u64(&pk, "peer_id", 1);
	peer_tasks_pack_acks(&pk, ts);
	if (msgpack_unpack(sb.data, sb.size, NULL, &z, &o) == MSGPACK_UNPACK_SUCCESS &&
	    (a = mc_map_array(&o, "tasks")) != NULL) {
		n = 0;
		for (uint32_t i = 0; i < a->size && n < cap; i++)
			out[n++] = a->ptr[i].via.u64;
	}
	msgpack_zone_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
	return n;
}

static void
test_dispatch(void)
{
	struct peer_tasks ts;
	struct mc_err err;
	size_t at = 9;

	peer_tasks_init(&ts, &p, fake_kinds, "test");
	nran = 0;
	TAP_OK(peer_tasks_kind(&ts, "b", 1, &at) == &fake_kinds[1] && at == 1 &&
		       peer_tasks_kind(&ts, "c", 1, NULL) == NULL,
	       "a kind is found by name in the table, its row and index");
	TAP_OK(take(&ts, "b", 2, (const char *[]){ "x", "y" }, (uint64_t[]){ 1, 2 }, &err) == 0 &&
		       take(&ts, "a", 1, (const char *[]){ "z" }, (uint64_t[]){ 3 }, &err) == 0,
	       "messages of two kinds are taken");
	TAP_OK(nran == 3 && strcmp(ran[0], "b:x") == 0 && strcmp(ran[1], "b:y") == 0 &&
		       strcmp(ran[2], "a:z") == 0,
	       "each item runs the handler of its message's kind, in order");
	TAP_OK(ts.count[1].done == 2 && ts.count[0].done == 1, "done counted per kind");

	nran = 0;
	TAP_OK(take(&ts, "copy", 1, (const char *[]){ "w" }, (uint64_t[]){ 4 }, &err) == -1 &&
		       err.code == MC_ERR_INVALID && strstr(err.msg, "unknown task kind 'copy'"),
	       "a kind this peer does not serve is refused by name");
	TAP_OK(nran == 0 && ts.seen == 3 && acks_are(&ts, 3, (uint64_t[]){ 1, 2, 3 }),
	       "a refused kind runs nothing, is not acknowledged and leaves the dedupe alone");
	peer_tasks_free(&ts);
}

static void
test_dedupe_and_acks(void)
{
	struct peer_tasks ts;
	struct mc_err err;
	uint64_t got[8];

	peer_tasks_init(&ts, &p, fake_kinds, "test");
	nran = 0;
	take(&ts, "a", 2, (const char *[]){ "k1", "k2" }, (uint64_t[]){ 1, 2 }, &err);
	TAP_OK(nran == 2 && acks_are(&ts, 2, (uint64_t[]){ 1, 2 }),
	       "executed tasks are acknowledged after they ran");

	/* the heartbeat carries at most max of them */
	TAP_OK(peer_tasks_carry(&ts, 1) == 1 && packed_acks(&ts, got, 8) == 1 && got[0] == 1,
	       "a heartbeat carries the oldest acknowledgements, at most its bound");
	peer_tasks_unacked(&ts);
	TAP_OK(peer_tasks_carry(&ts, 8) == 2 && packed_acks(&ts, got, 8) == 2 && got[0] == 1 &&
		       got[1] == 2,
	       "refused, the heartbeat's acknowledgements go again with the next");
	peer_tasks_acked(&ts);
	TAP_OK(ts.nacks == 0 && peer_tasks_carry(&ts, 8) == 0 && packed_acks(&ts, got, 8) == -1,
	       "answered, they are let go; a heartbeat without any packs no tasks field");

	/* a new link: the master sends 2 again (never acknowledged there), then 3 */
	take(&ts, "a", 1, (const char *[]){ "k3" }, (uint64_t[]){ 3 }, &err);
	peer_tasks_carry(&ts, 8);
	peer_tasks_link_lost(&ts);
	TAP_OK(ts.nacks == 0 && ts.inflight == 0, "a lost link forgets the acknowledgements");
	nran = 0;
	TAP_OK(take(&ts, "a", 2, (const char *[]){ "k2", "k3" }, (uint64_t[]){ 2, 3 }, &err) == 0 &&
		       nran == 0,
	       "tasks sent again on the new link are not executed twice");
	TAP_OK(acks_are(&ts, 2, (uint64_t[]){ 2, 3 }) && ts.count[0].repeated == 2,
	       "a repeat is acknowledged again and counted");
	take(&ts, "a", 1, (const char *[]){ "k4" }, (uint64_t[]){ 4 }, &err);
	TAP_OK(nran == 1 && strcmp(ran[0], "a:k4") == 0, "the next new id runs");

	/* an item without a task id (an older master) */
	nran = 0;
	take(&ts, "a", 1, (const char *[]){ "old" }, (uint64_t[]){ 0 }, &err);
	TAP_OK(nran == 1 && ts.nacks == 3, "an item without a task id runs, unacknowledged");

	/* a fresh registration: the master's ids start again */
	peer_tasks_fresh(&ts);
	nran = 0;
	take(&ts, "a", 1, (const char *[]){ "again" }, (uint64_t[]){ 1 }, &err);
	TAP_OK(ts.seen == 1 && nran == 1 && acks_are(&ts, 1, (uint64_t[]){ 1 }),
	       "after a fresh registration id 1 is new again");
	peer_tasks_free(&ts);
}

static void
test_failure(void)
{
	struct peer_tasks ts;
	struct mc_err err;

	peer_tasks_init(&ts, &p, fake_kinds, "test");
	nran = 0;
	fail_next = true;
	TAP_OK(take(&ts, "b", 3, (const char *[]){ "f1", "f2", "f3" }, (uint64_t[]){ 5, 6, 7 },
		    &err) == 1,
	       "a failing item is told as one bad item");
	TAP_OK(nran == 3, "the items after a failing one still run");
	TAP_OK(ts.count[1].failed == 1 && ts.count[1].done == 2, "failed and done counted apart");
	TAP_OK(acks_are(&ts, 3, (uint64_t[]){ 5, 6, 7 }),
	       "a failed task is acknowledged too: sent again it would fail the same way");
	nran = 0;
	take(&ts, "b", 1, (const char *[]){ "f1" }, (uint64_t[]){ 5 }, &err);
	TAP_OK(nran == 0, "a failed task sent again is not run again");
	peer_tasks_free(&ts);
}

/* Commit key at version 1, size bytes in dram, through the pool. */
static int
put(const char *key, uint64_t size)
{
	struct mc_err err;
	uint64_t off = 0;
	struct pobj *o;

	if (medium_alloc(p.media[MC_TIER_DRAM], size, &off, &err) != 0)
		return -1;
	o = pobj_new(&p.index, T, strlen(T), key, strlen(key), 1, size, 0, MC_TIER_DRAM, off);
	if (pool_commit(&p.pool, o, &err) != 0) {
		pindex_release(&p.index, o);
		return -1;
	}
	return 0;
}

static bool
held(const char *key)
{
	return pindex_version(&p.index, T, strlen(T), key, strlen(key), NULL, NULL) == 1;
}

static void
test_real_kinds(void)
{
	struct peer_tasks ts;
	struct mc_err err;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_zone z;
	msgpack_object o;
	const msgpack_object_array *a;

	p.media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = 1u << 20 }, &err);
	if (!p.media[MC_TIER_DRAM] || pindex_init(&p.index, p.media, &err) != 0)
		abort();
	pool_init(&p.pool, &p.index);
	peer_tasks_init(&ts, &p, NULL, "test");
	TAP_OK(put("gone", 100) == 0 && put("evicted", 100) == 0 && put("kept", 100) == 0 &&
		       held("gone") && held("evicted"),
	       "three copies committed");
	TAP_OK(take(&ts, "drop", 1, (const char *[]){ "gone" }, (uint64_t[]){ 1 }, &err) == 0 &&
		       !held("gone") && held("kept"),
	       "a drop task frees its copy");
	TAP_OK(take(&ts, "evict", 1, (const char *[]){ "evicted" }, (uint64_t[]){ 2 }, &err) == 0 &&
		       !held("evicted") && held("kept"),
	       "an evict task reclaims its copy (no tier below: dropped)");
	TAP_OK(pool_evictions(&p.pool, MC_TIER_DRAM, POOL_DELETE) == 1 &&
		       pool_evictions(&p.pool, MC_TIER_DRAM, POOL_RECLAIM) == 1,
	       "each kind frees for its own reason");
	TAP_OK(acks_are(&ts, 2, (uint64_t[]){ 1, 2 }), "both acknowledged");
	TAP_OK(take(&ts, "drop", 1, (const char *[]){ "" }, (uint64_t[]){ 3 }, &err) == 1,
	       "a drop naming no key is a bad item");

	msgpack_sbuffer_init(&sb);
	msgpack_zone_init(&z, 1024);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	peer_tasks_pack_kinds(&pk, &ts);
	TAP_OK(msgpack_unpack(sb.data, sb.size, NULL, &z, &o) == MSGPACK_UNPACK_SUCCESS &&
		       (a = mc_map_array(&o, "task_kinds")) != NULL && a->size == 2 &&
		       a->ptr[0].via.str.size == 4 &&
		       memcmp(a->ptr[0].via.str.ptr, "drop", 4) == 0 &&
		       a->ptr[1].via.str.size == 5 &&
		       memcmp(a->ptr[1].via.str.ptr, "evict", 5) == 0,
	       "peer_register's task_kinds are the kinds served: drop and evict, no "
	       "replica_copy without copy workers");
	msgpack_zone_destroy(&z);
	msgpack_sbuffer_destroy(&sb);
	TAP_OK(strcmp(peer_task_methods[0].name, "drop") == 0 &&
		       strcmp(peer_task_methods[1].name, "evict") == 0 &&
		       strcmp(peer_task_methods[2].name, "replica_copy") == 0 &&
		       peer_task_methods[3].name == NULL,
	       "the control link serves one method per kind");
	peer_tasks_free(&ts);
	pindex_destroy(&p.index);
	medium_close(p.media[MC_TIER_DRAM]);
}

int
main(void)
{
	test_dispatch();
	test_dedupe_and_acks();
	test_failure();
	test_real_kinds();
	return tap_done();
}
