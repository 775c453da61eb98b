/*
 * Unit tests for the master's tasks (cmd/mc-master/tasks.c, through the
 * peer table): a connected peer gets its tasks in id order on its
 * control link; an acknowledged task is done; a peer back on a new link
 * gets every task it has not acknowledged again, by id; a task left
 * unacknowledged past its TTL on the fake clock expires; the tasks of a
 * peer the master declares dead are retired; a full queue refuses; an
 * eviction goes as an evict task naming its tier, leaving the replica
 * moving when the peer has a tier below, and as a drop to a peer that
 * serves no evict; a task queued from its kind's payload owns a copy of
 * it, and a kind without a row is refused. The peer's end of the link is a socketpair served by
 * drop and evict handlers that record what they received.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mc/clock.h"
#include "mc/wire.h"
#include "master.h"
#include "ops.h"
#include "tasks.h"
#include "tap.h"
#include "peers.h"
#include "store.h"
#include "mmetrics.h"
#include "start.h"

#define TTL 60000

static struct master m;
static struct mc_registry *peer_methods;

/* What the fake peer received: task ids, keys, methods and tiers ("" none), in order. */
static uint64_t got[64];
static char got_key[64][16];
static char got_method[64][8];
static char got_tier[64][8];
static size_t ngot;

static void
record(struct mc_req *req, const char *method)
{
	const msgpack_object_array *items = mc_map_array(req->params, "items");
	struct mc_err err;

	for (uint32_t i = 0; items != NULL && i < items->size && ngot < 64; i++) {
		const char *k;
		size_t len;

		got[ngot] = 0;
		mc_map_u64(&items->ptr[i], "task", &got[ngot], &err);
		if (mc_map_str(&items->ptr[i], "key", &k, &len, &err) == 1)
			snprintf(got_key[ngot], sizeof(got_key[ngot]), "%.*s", (int)len, k);
		snprintf(got_method[ngot], sizeof(got_method[ngot]), "%s", method);
		got_tier[ngot][0] = '\0';
		if (mc_map_str(&items->ptr[i], "tier", &k, &len, &err) == 1)
			snprintf(got_tier[ngot], sizeof(got_tier[ngot]), "%.*s", (int)len, k);
		ngot++;
	}
}

static void
h_drop(struct mc_req *req)
{
	record(req, "drop");
}

static void
h_evict(struct mc_req *req)
{
	record(req, "evict");
}

static const struct mc_method peer_table[] = {
	{ "drop", h_drop, MC_METHOD_PEER },
	{ "evict", h_evict, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

/* A committed object with one replica on p's tier, of size bytes. */
static struct mobj *
object_on(struct peer *p, const char *key, int tier, uint64_t size)
{
	struct mc_err err;
	uint64_t h = store_key_hash(0, key, strlen(key));
	struct mobj *o = store_create(m.store, h, 0, key, strlen(key), size, NULL, 0, &err);
	struct mrep *r;

	if (o == NULL)
		return NULL;
	o->version = 1;
	r = ops_rep_new(&m, o, p->id, tier, 1, size);
	if (r == NULL)
		return NULL;
	r->state = REP_COMPLETE;
	return o;
}

/*
 * The master's end closed: the peer (ctx is its id; it may be gone) is
 * disconnected, as master_on_close does.
 */
static void
master_closed(struct mc_conn *c, void *ctx)
{
	struct peer *p = peers_find(m.peers, (uint32_t)(uintptr_t)ctx);

	if (p != NULL && p->conn == c)
		p->conn = NULL;
}

/* A control link for p: the master's end attached, the peer's end returned. */
static struct mc_conn *
link_up(struct peer *p)
{
	struct mc_conn_ops mops = { .ctx = (void *)(uintptr_t)p->id, .on_close = master_closed };
	struct mc_conn_ops pops = { .methods = peer_methods };
	struct mc_conn *mc, *pc;
	struct mc_err err;
	int fds[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
		return NULL;
	mc = mc_conn_new(m.base, fds[0], &mops, NULL, &err);
	pc = mc_conn_new(m.base, fds[1], &pops, NULL, &err);
	if (mc == NULL || pc == NULL)
		return NULL;
	peers_attach(m.peers, p, mc);
	return pc;
}

static void
pump(void)
{
	for (int i = 0; i < 50; i++)
		event_base_loop(m.base, EVLOOP_NONBLOCK);
}

static void
drop(struct peer *p, const char *key)
{
	peers_queue(m.peers, p, TASK_DROP, 0, key, strlen(key), 7, MC_TIER_NONE);
}

/* An acknowledgement of n ids, as a heartbeat's tasks array. */
static int
ack(struct peer *p, const uint64_t *ids, uint32_t n, struct mc_err *err)
{
	msgpack_object v[16], a = { .type = MSGPACK_OBJECT_ARRAY };

	for (uint32_t i = 0; i < n; i++)
		v[i] = (msgpack_object){ .type = MSGPACK_OBJECT_POSITIVE_INTEGER,
					 .via.u64 = ids[i] };
	a.via.array.size = n;
	a.via.array.ptr = v;
	return tasks_ack(&m.peers->tasks, &p->tasks, &a, err);
}

static bool
received(const uint64_t *ids, const char *const *keys, size_t n)
{
	if (ngot != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (got[i] != ids[i] || strcmp(got_key[i], keys[i]) != 0)
			return false;
	return true;
}

static const struct task_counts *
counts(void)
{
	return &m.peers->tasks.count;
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	struct mc_err err;
	struct mc_conn *pc;
	struct peer *p, *other;
	uint64_t now = 1000000;
	size_t full = 0;
	char *text;
	size_t len;

	mc_clock_set_fake(now);
	m.cfg.peer_ttl = 10000;
	m.base = event_base_new();
	peer_methods = mc_registry_new(NULL, &err);
	mc_registry_add(peer_methods, peer_table, &err);
	TAP_OK(store_init(m.store, &err) == 0 && peers_init(m.peers, m.base, m.store, &err) == 0,
	       "a master's store and peer table");
	m.mx->reg = mc_metrics_new();
	mc_metrics_on_collect(m.mx->reg, tasks_collect, &m.peers->tasks);
	p = peers_add(m.peers, &err);
	other = peers_add(m.peers, &err);
	p->heard = other->heard = mc_mono_ms();

	/* sent in id order at the end of the turn */
	pc = link_up(p);
	drop(p, "a");
	drop(p, "b");
	drop(p, "c");
	drop(other, "z");
	TAP_OK(tasks_pending(&p->tasks) == 3 && counts()->queued[TASK_DROP] == 4,
	       "four drops queued as tasks");
	pump();
	TAP_OK(received((uint64_t[]){ 1, 2, 3 }, (const char *[]){ "a", "b", "c" }, 3),
	       "a connected peer gets its drops with their task ids, in id order");

	/* acknowledgements */
	TAP_OK(ack(p, (uint64_t[]){ 3, 1 }, 2, &err) == 0 && tasks_pending(&p->tasks) == 1 &&
		       counts()->acked[TASK_DROP] == 2,
	       "acknowledged tasks are done, in any order");
	TAP_OK(ack(p, (uint64_t[]){ 1, 99, 4 }, 3, &err) == 0 && counts()->acked[TASK_DROP] == 2,
	       "ids acknowledged already, unknown or another peer's change nothing");
	{
		msgpack_object bad[2] = {
			{ .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 2 },
			{ .type = MSGPACK_OBJECT_STR },
		};
		msgpack_object a = { .type = MSGPACK_OBJECT_ARRAY,
				     .via.array = { .size = 2, .ptr = bad } };

		TAP_OK(tasks_ack(&m.peers->tasks, &p->tasks, &a, &err) != 0 &&
			       err.code == MC_ERR_INVALID && tasks_pending(&p->tasks) == 1,
		       "a malformed acknowledgement is invalid and changes nothing: %s", err.msg);
	}

	/* the link drops; a task waits; the new link gets what was not acknowledged (4 is other's) */
	mc_conn_close(pc, false);
	pump();
	TAP_OK(p->conn == NULL, "the link is gone");
	drop(p, "d");
	pump();
	TAP_OK(ngot == 3, "a disconnected peer's task waits");
	ngot = 0;
	pc = link_up(p);
	pump();
	TAP_OK(received((uint64_t[]){ 2, 5 }, (const char *[]){ "b", "d" }, 2),
	       "on the new link: the unacknowledged task again, then the waiting one, by id");
	TAP_OK(counts()->resent[TASK_DROP] == 1, "one task counted as resent");
	TAP_OK(ack(p, (uint64_t[]){ 2, 5 }, 2, &err) == 0 && tasks_pending(&p->tasks) == 0,
	       "acknowledged on the new link");
	ngot = 0;
	pump();
	TAP_OK(ngot == 0, "nothing is sent twice on one link");

	/* expiry, on the fake clock */
	drop(p, "e");
	pump();
	mc_clock_set_fake(now + TTL - 1);
	peers_expire_tasks(m.peers, mc_now_ms(), TTL);
	TAP_OK(tasks_pending(&p->tasks) == 1 && counts()->expired[TASK_DROP] == 0,
	       "a task within its TTL stays");
	mc_clock_set_fake(now + TTL);
	peers_expire_tasks(m.peers, mc_now_ms(), TTL);
	TAP_OK(tasks_pending(&p->tasks) == 0 && tasks_pending(&other->tasks) == 0 &&
		       counts()->expired[TASK_DROP] == 2,
	       "unacknowledged for its TTL, a task is retired as expired (both peers')");
	TAP_OK(ack(p, (uint64_t[]){ 6 }, 1, &err) == 0 && counts()->acked[TASK_DROP] == 4,
	       "an acknowledgement after expiry changes nothing");

	/* retirement on peer death */
	drop(p, "f");
	drop(p, "g");
	drop(other, "y");
	p->heard = mc_mono_ms() - 2 * m.cfg.peer_ttl;
	ops_sweep(&m);
	TAP_OK(peers_find(m.peers, 1) == NULL && counts()->retired[TASK_DROP] == 2,
	       "a peer declared dead takes its tasks with it, counted retired");
	TAP_OK(tasks_pending(&other->tasks) == 1, "another peer's tasks stay");
	ops_peer_remove(&m, other, "unregistered");
	TAP_OK(counts()->retired[TASK_DROP] == 3, "so does a peer that unregisters");

	/* evictions, on a peer with ssd below dram */
	{
		struct peer *q = peers_add(m.peers, &err);
		struct mc_conn *qc;
		struct mobj *o1, *o2, *o3;

		q->heard = mc_mono_ms();
		q->task_kinds = (1u << TASK_DROP) | (1u << TASK_EVICT);
		q->tiers[MC_TIER_DRAM].present = q->tiers[MC_TIER_SSD].present = true;
		q->tiers[MC_TIER_DRAM].capacity = q->tiers[MC_TIER_SSD].capacity = 1000;
		o1 = object_on(q, "e1", MC_TIER_DRAM, 100);
		o2 = object_on(q, "e2", MC_TIER_SSD, 50);
		TAP_OK(o1 != NULL && o2 != NULL && q->tiers[MC_TIER_DRAM].used == 100 &&
			       q->tiers[MC_TIER_SSD].used == 50,
		       "two objects on a peer's dram and ssd");
		ngot = 0;
		qc = link_up(q);
		TAP_OK(ops_rep_evict(&m, o1, 0) && o1->nrep == 1 && obj_reps(o1)[0].moving &&
			       q->tiers[MC_TIER_DRAM].used == 100 &&
			       q->tiers[MC_TIER_DRAM].moving == 100 &&
			       peer_tier_staying(&q->tiers[MC_TIER_DRAM]) == 0,
		       "evicted from dram with ssd below: the replica stays, moving, its bytes "
		       "still taking their room but going");
		TAP_OK(!ops_rep_evict(&m, o2, 0) && o2->nrep == 0 &&
			       q->tiers[MC_TIER_SSD].used == 50 - 50,
		       "evicted from ssd, the bottom: the replica goes at once");
		ops_settle(&m, o2, NULL);
		peers_queue(m.peers, q, TASK_DROP, 0, "e3", 2, 1, MC_TIER_NONE);
		pump();
		TAP_OK(ngot == 3 && strcmp(got_method[0], "evict") == 0 &&
			       strcmp(got_key[0], "e1") == 0 && strcmp(got_tier[0], "dram") == 0 &&
			       strcmp(got_method[1], "evict") == 0 &&
			       strcmp(got_tier[1], "ssd") == 0 &&
			       strcmp(got_method[2], "drop") == 0 && got_tier[2][0] == '\0' &&
			       got[0] < got[1] && got[1] < got[2],
		       "the peer gets evict tasks naming their tiers, then the drop, in id order");
		TAP_OK(counts()->queued[TASK_EVICT] == 2, "evictions counted under their own kind");
		TAP_OK(ack(q, got, 3, &err) == 0 && counts()->acked[TASK_EVICT] == 2,
		       "evict tasks are acknowledged like drops");

		/* a peer serving no evict: drops, at once */
		q->task_kinds = 1u << TASK_DROP;
		o3 = object_on(q, "e3", MC_TIER_DRAM, 10);
		ngot = 0;
		TAP_OK(!ops_rep_evict(&m, o3, 0) && o3->nrep == 0,
		       "on a peer serving no evict the replica goes at once");
		ops_settle(&m, o3, NULL);
		pump();
		TAP_OK(ngot == 1 && strcmp(got_method[0], "drop") == 0 &&
			       strcmp(got_key[0], "e3") == 0,
		       "and the peer is sent a drop");
		ack(q, got, 1, &err);

		/* a task queued from its kind's payload */
		{
			char key[8] = "pl1";
			union task_payload pl = { .copy = { .tenant = 0,
							    .len = 3,
							    .version = 4,
							    .key = key,
							    .tier = MC_TIER_SSD } };
			size_t before = tasks_pending(&q->tasks);

			ngot = 0;
			TAP_OK(tasks_add(&m.peers->tasks, &q->tasks, TASK_EVICT, &pl) == 0 &&
				       tasks_pending(&q->tasks) == before + 1,
			       "a task is queued from its kind's payload");
			memcpy(key, "XXX", 3);
			tasks_send(&m.peers->tasks, &q->tasks, q->conn, q->id);
			pump();
			TAP_OK(ngot == 1 && strcmp(got_method[0], "evict") == 0 &&
				       strcmp(got_key[0], "pl1") == 0 &&
				       strcmp(got_tier[0], "ssd") == 0,
			       "the payload is the task's own copy, sent as its kind's item");
			ack(q, got, 1, &err);
			TAP_OK(tasks_add(&m.peers->tasks, &q->tasks, TASK_KIND_COUNT, &pl) == -1 &&
				       tasks_add(&m.peers->tasks, &q->tasks, -1, &pl) == -1 &&
				       tasks_pending(&q->tasks) == before,
			       "a kind without a row is refused, nothing queued");
			TAP_OK(tasks_kind_parse("evict", 5) == TASK_EVICT &&
				       tasks_kind_parse("drop", 4) == TASK_DROP &&
				       tasks_kind_parse("copy", 4) == -1,
			       "kinds are parsed by their table's names, others refused");
		}
		mc_conn_close(qc, false);
		pump();
		ops_peer_remove(&m, q, "unregistered");
	}

	/* the bound */
	p = peers_add(m.peers, &err);
	for (size_t i = 0; i <= TASKS_PER_PEER_MAX; i++)
		full += tasks_queue(&m.peers->tasks, &p->tasks, TASK_DROP, 0, "k", 1, i,
				    MC_TIER_NONE) == 0;
	TAP_OK(full == TASKS_PER_PEER_MAX && counts()->refused[TASK_DROP] == 1,
	       "a full queue refuses the next task, counted");

	text = mc_metrics_render(m.mx->reg, &len);
	TAP_OK(text != NULL && strstr(text, "mc_tasks_acked_total{kind=\"drop\"} 6") != NULL &&
		       strstr(text, "mc_tasks_resent_total{kind=\"drop\"} 1") != NULL &&
		       strstr(text, "mc_tasks_expired_total{kind=\"drop\"} 2") != NULL &&
		       strstr(text, "mc_tasks_retired_total{kind=\"drop\"} 3") != NULL &&
		       strstr(text, "mc_tasks_queued_total{kind=\"evict\"} 3") != NULL,
	       "the counts are served as metrics");
	free(text);

	mc_conn_close(pc, false);
	pump();
	peers_free(m.peers);
	store_free(m.store);
	mc_metrics_free(m.mx->reg);
	mc_registry_free(peer_methods);
	event_base_free(m.base);
	mc_clock_set_fake(0);
	return tap_done();
}
