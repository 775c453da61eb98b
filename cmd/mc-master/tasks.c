/*
 * Tasks for peers: queueing, sending in id order, acknowledgements,
 * expiry and retirement (see tasks.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/wire.h"
#include "tasks.h"

/* Bytes of keys in one message, well under any peer's max message. */
#define MSG_KEY_BYTES (4u << 20)

/* What a kind is: its names, and how its payload is kept, sent and let go. */
struct kind {
	const char *name;   /* the kind label of the metrics */
	const char *method; /* the notification that carries it: {items: [...]} */
	/* t's payload, a copy of pl the task owns: -1 when memory ran out */
	int (*take)(struct task *t, const union task_payload *pl);
	/* one item of that notification, a map that ends with the task id */
	void (*pack_item)(msgpack_packer *pk, const struct tasks *ts, const struct task *t);
	/* bytes of the item beyond its fixed fields: a message is cut by them */
	size_t (*bytes)(const struct task *t);
	/* give back what take took */
	void (*release)(struct task *t);
};

static int
copy_take(struct task *t, const union task_payload *pl)
{
	const struct task_copy *c = &pl->copy;

	t->u.copy = *c;
	t->u.copy.key = malloc(c->len ? c->len : 1);
	if (t->u.copy.key == NULL)
		return -1;
	memcpy(t->u.copy.key, c->key, c->len);
	return 0;
}

/* One copy: (tenant, key) up to version, and the tier when the task names one (evictions). */
static void
copy_pack(msgpack_packer *pk, const struct tasks *ts, const struct task *t)
{
	const struct store *s = ts->store;
	const struct task_copy *c = &t->u.copy;
	bool tier = c->tier != MC_TIER_NONE;

	msgpack_pack_map(pk, tier ? 5 : 4);
	mc_pack_kv_str(pk, "tenant",
		       c->tenant < s->ntenants ? s->tenants[c->tenant].name : MC_DEFAULT_TENANT);
	mc_pack_kv_strn(pk, "key", c->key, c->len);
	mc_pack_kv_u64(pk, "version", c->version);
	if (tier)
		mc_pack_kv_str(pk, "tier", mc_tier_name(c->tier));
	mc_pack_kv_u64(pk, "task", t->id);
}

static size_t
copy_bytes(const struct task *t)
{
	return t->u.copy.len;
}

static void
copy_release(struct task *t)
{
	free(t->u.copy.key);
	t->u.copy.key = NULL;
}

static int
rcopy_take(struct task *t, const union task_payload *pl)
{
	const struct task_replica_copy *c = pl->rcopy;
	size_t alen = strlen(c->addr);
	struct task_replica_copy *rc = malloc(sizeof(*rc) + c->len + alen + 1);
	char *key, *addr;

	if (rc == NULL)
		return -1;
	*rc = *c;
	key = (char *)(rc + 1);
	addr = key + c->len;
	memcpy(key, c->key, c->len);
	memcpy(addr, c->addr, alen + 1);
	rc->key = key;
	rc->addr = addr;
	t->u.rcopy = rc;
	return 0;
}

/* One replica copy (mc-wire(5) replica_copy): the version, the target, the lease, the grants. */
static void
rcopy_pack(msgpack_packer *pk, const struct tasks *ts, const struct task *t)
{
	const struct store *s = ts->store;
	const struct task_replica_copy *c = t->u.rcopy;

	msgpack_pack_map(pk, 11);
	mc_pack_kv_u64(pk, "lease", c->lease);
	mc_pack_kv_str(pk, "tenant",
		       c->tenant < s->ntenants ? s->tenants[c->tenant].name : MC_DEFAULT_TENANT);
	mc_pack_kv_strn(pk, "key", c->key, c->len);
	mc_pack_kv_u64(pk, "version", c->version);
	mc_pack_kv_u64(pk, "size", c->size);
	mc_pack_kv_u64(pk, "checksum", c->checksum);
	mc_pack_kv_u64(pk, "target", c->target);
	mc_pack_kv_str(pk, "addr", c->addr);
	mc_pack_key(pk, "read_grant");
	msgpack_pack_bin(pk, MC_GRANT_BYTES);
	msgpack_pack_bin_body(pk, c->read_grant, MC_GRANT_BYTES);
	mc_pack_key(pk, "write_grant");
	msgpack_pack_bin(pk, MC_GRANT_BYTES);
	msgpack_pack_bin_body(pk, c->write_grant, MC_GRANT_BYTES);
	mc_pack_kv_u64(pk, "task", t->id);
}

static size_t
rcopy_bytes(const struct task *t)
{
	return t->u.rcopy->len + strlen(t->u.rcopy->addr) + 2 * MC_GRANT_BYTES;
}

static void
rcopy_release(struct task *t)
{
	free(t->u.rcopy);
	t->u.rcopy = NULL;
}

static const struct kind kinds[TASK_KIND_COUNT] = {
	[TASK_DROP] = { "drop", "drop", copy_take, copy_pack, copy_bytes, copy_release },
	[TASK_EVICT] = { "evict", "evict", copy_take, copy_pack, copy_bytes, copy_release },
	[TASK_REPLICA_COPY] = { "replica_copy", "replica_copy", rcopy_take, rcopy_pack, rcopy_bytes,
				rcopy_release },
};

int
tasks_kind_parse(const char *s, size_t len)
{
	for (int k = 0; k < TASK_KIND_COUNT; k++)
		if (strlen(kinds[k].name) == len && memcmp(kinds[k].name, s, len) == 0)
			return k;
	return -1;
}

void
tasks_init(struct tasks *ts, const struct store *store)
{
	memset(ts, 0, sizeof(*ts));
	ts->store = store;
}

/* t is done: a hole now, its memory given back. */
static void
task_done(struct task_queue *q, struct task *t)
{
	t->done = true;
	kinds[t->kind].release(t);
	q->live--;
}

/* Move the head past the holes, and the live tasks down when the holes before them pile up. */
static void
settle(struct task_queue *q)
{
	while (q->head < q->n && q->v[q->head].done)
		q->head++;
	if (q->unsent < q->head)
		q->unsent = q->head;
	if (q->head == q->n) {
		q->head = q->n = q->unsent = 0;
		return;
	}
	if (q->head < q->cap / 2)
		return;
	memmove(q->v, q->v + q->head, (q->n - q->head) * sizeof(*q->v));
	q->n -= q->head;
	q->unsent -= q->head;
	q->head = 0;
}

int
tasks_queue(struct tasks *ts, struct task_queue *q, int kind, uint32_t tenant, const char *key,
	    size_t len, uint64_t version, int tier)
{
	union task_payload pl = { .copy = { .tenant = tenant,
					    .len = (uint32_t)len,
					    .version = version,
					    .key = (char *)key,
					    .tier = (int8_t)tier } };

	return tasks_add(ts, q, kind, &pl);
}

int
tasks_add(struct tasks *ts, struct task_queue *q, int kind, const union task_payload *pl)
{
	struct task *t;

	/* a kind without a row has nothing to count it under either */
	if (kind < 0 || kind >= TASK_KIND_COUNT)
		return -1;
	if (q->live >= TASKS_PER_PEER_MAX)
		goto refused;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;

		t = realloc(q->v, cap * sizeof(*t));
		if (t == NULL)
			goto refused;
		q->v = t;
		q->cap = cap;
	}
	t = &q->v[q->n];
	*t = (struct task){
		.id = ts->last_id + 1,
		.queued = mc_now_ms(),
		.kind = (uint8_t)kind,
	};
	if (kinds[kind].take(t, pl) < 0)
		goto refused;
	ts->last_id++;
	q->n++;
	q->live++;
	ts->count.queued[kind]++;
	return 0;
refused:
	ts->count.refused[kind]++;
	return -1;
}

bool
tasks_unsent(const struct task_queue *q)
{
	for (size_t i = q->unsent; i < q->n; i++)
		if (!q->v[i].done)
			return true;
	return false;
}

/* One message: the live tasks of one kind in v[from, to) (items of them). */
static void
pack_message(msgpack_packer *pk, const struct tasks *ts, const struct task_queue *q, size_t from,
	     size_t to, size_t items)
{
	const struct kind *k = &kinds[q->v[from].kind];

	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, (uint32_t)items);
	for (size_t i = from; i < to; i++)
		if (!q->v[i].done)
			k->pack_item(pk, ts, &q->v[i]);
}

void
tasks_send(struct tasks *ts, struct task_queue *q, struct mc_conn *conn, uint32_t peer_id)
{
	while (mc_conn_is_open(conn)) {
		size_t from = q->unsent, to, items = 0, bytes = 0;
		uint8_t kind;

		while (from < q->n && q->v[from].done)
			from++;
		q->unsent = from;
		if (from == q->n)
			return;
		kind = q->v[from].kind;
		/* A run of one kind, cut by bytes: a message carries one method. */
		for (to = from; to < q->n && bytes < MSG_KEY_BYTES; to++) {
			if (q->v[to].done)
				continue;
			if (q->v[to].kind != kind)
				break;
			bytes += kinds[kind].bytes(&q->v[to]);
			items++;
		}
		if (mc_fault("task.send")) {
			/* Lost on the way: sent as far as the master knows, never received. */
			mc_warn("fault injected: %zu %s tasks for peer %u lost", items,
				kinds[kind].name, peer_id);
		} else {
			pack_message(mc_conn_begin(conn, kinds[kind].method), ts, q, from, to,
				     items);
			if (mc_conn_notify(conn) != 0) {
				mc_warn("cannot send %s tasks to peer %u", kinds[kind].name,
					peer_id);
				return;
			}
		}
		for (size_t i = from; i < to; i++) {
			struct task *t = &q->v[i];

			if (t->done)
				continue;
			if (t->sent)
				ts->count.resent[t->kind]++;
			t->sent = true;
		}
		q->unsent = to;
	}
}

void
tasks_relink(struct task_queue *q)
{
	q->unsent = q->head;
}

/*
 * The task with that id in v[head, n), or NULL: ids increase along the
 * queue. *at is where the previous one was found: a peer acknowledges
 * in the order it executed, which is id order, so the next id is most
 * often the next slot, and a heartbeat's tens of thousands of ids cost
 * one pass instead of a search each.
 */
static struct task *
find(struct task_queue *q, uint64_t id, size_t *at)
{
	size_t lo = q->head, hi = q->n;

	if (*at >= lo && *at < hi && q->v[*at].id == id)
		return &q->v[(*at)++];
	if (*at >= lo && *at < hi && q->v[*at].id < id)
		lo = *at;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (q->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < q->n && q->v[lo].id == id) {
		*at = lo + 1;
		return &q->v[lo];
	}
	return NULL;
}

int
tasks_ack(struct tasks *ts, struct task_queue *q, const msgpack_object *ids, struct mc_err *err)
{
	const msgpack_object_array *a;
	size_t at = 0;

	if (ids->type != MSGPACK_OBJECT_ARRAY)
		return mc_err_set(err, MC_ERR_INVALID,
				  "field 'tasks' must be an array of task ids");
	a = &ids->via.array;
	for (uint32_t i = 0; i < a->size; i++)
		if (a->ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return mc_err_set(err, MC_ERR_INVALID, "tasks[%u] is not a task id", i);
	for (uint32_t i = 0; i < a->size; i++) {
		struct task *t = find(q, a->ptr[i].via.u64, &at);

		if (t == NULL || t->done)
			continue;
		ts->count.acked[t->kind]++;
		task_done(q, t);
	}
	settle(q);
	return 0;
}

bool
tasks_retire(struct tasks *ts, struct task_queue *q, uint64_t id)
{
	size_t at = q->head;
	struct task *t = find(q, id, &at);

	if (t == NULL || t->done)
		return false;
	ts->count.retired[t->kind]++;
	task_done(q, t);
	settle(q);
	return true;
}

void
tasks_expire(struct tasks *ts, struct task_queue *q, uint64_t now, uint64_t ttl)
{
	/* Oldest first: the first one still within the bound ends the walk. */
	for (size_t i = q->head; i < q->n; i++) {
		struct task *t = &q->v[i];

		if (t->done)
			continue;
		if (now < t->queued || now - t->queued < ttl)
			break;
		ts->count.expired[t->kind]++;
		task_done(q, t);
	}
	settle(q);
}

void
tasks_retire_all(struct tasks *ts, struct task_queue *q)
{
	for (size_t i = q->head; i < q->n; i++) {
		struct task *t = &q->v[i];

		if (t->done)
			continue;
		ts->count.retired[t->kind]++;
		task_done(q, t);
	}
	free(q->v);
	memset(q, 0, sizeof(*q));
}

size_t
tasks_pending(const struct task_queue *q)
{
	return q->live;
}

void
tasks_collect(struct mc_metrics *r, void *arg)
{
	const struct tasks *ts = arg;

	for (int k = 0; k < TASK_KIND_COUNT; k++) {
		struct mc_metric *s;

#define X(stat, help)                                                                              \
	s = mc_metric_get(r, "mc_tasks_" #stat "_total", MC_COUNTER, help, "kind", kinds[k].name); \
	if (s != NULL)                                                                             \
		mc_metric_set(s, (double)ts->count.stat[k]);
		TASK_STATS(X)
#undef X
	}
}
