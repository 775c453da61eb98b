/*
 * Read leases by holder (lease.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/wire.h"
#include "lease.h"
#include "master.h"
#include "request.h"
#include "state.h"
#include "store.h"

/* Ids in one release call at most (a batch get leases up to BATCH_MAX keys). */
#define RELEASE_MAX 10000
/* Freed entries of each kind kept for reuse at most. */
#define SPARE_MAX 4096
/* Expired leases forgotten per sweep at most, so a sweep stays short. */
#define EXPIRE_MAX 8192

struct lease {
	uint64_t id;
	uint64_t deadline;
	const void *subject;	     /* struct mobj *, or struct group * when group */
	struct lease *older, *newer; /* every lease, by creation */
	struct lease *prev, *next;   /* the subject's holders, by creation */
	uint32_t tenant;
	bool group;
};

/* The holders of one subject, oldest first. */
struct holders {
	const void *subject;
	struct lease *first, *last;
};

static struct lease *
lease_alloc(struct leases *l)
{
	struct lease *x = l->spare;

	if (x == NULL)
		return calloc(1, sizeof(*x));
	l->spare = x->newer;
	l->nspare--;
	memset(x, 0, sizeof(*x));
	return x;
}

static void
lease_recycle(struct leases *l, struct lease *x)
{
	if (l->nspare >= SPARE_MAX) {
		free(x);
		return;
	}
	x->newer = l->spare;
	l->spare = x;
	l->nspare++;
}

static struct holders *
holders_alloc(struct leases *l)
{
	struct holders *h = l->spare_holders;

	if (h == NULL)
		return calloc(1, sizeof(*h));
	l->spare_holders = (struct holders *)(void *)h->first;
	l->nspare_holders--;
	memset(h, 0, sizeof(*h));
	return h;
}

static void
holders_recycle(struct leases *l, struct holders *h)
{
	if (l->nspare_holders >= SPARE_MAX) {
		free(h);
		return;
	}
	/* A spare's first holder pointer links the spares. */
	h->first = (struct lease *)(void *)l->spare_holders;
	l->spare_holders = h;
	l->nspare_holders++;
}

static uint64_t
id_hash(uint64_t id)
{
	return mc_hash64(&id, sizeof(id), 0x6c65617365ull);
}

static uint64_t
ptr_hash(const void *p)
{
	uintptr_t v = (uintptr_t)p;

	return mc_hash64(&v, sizeof(v), 0x686f6c64ull);
}

static bool
lease_eq(const void *entry, const void *key)
{
	return ((const struct lease *)entry)->id == *(const uint64_t *)key;
}

static bool
holders_eq(const void *entry, const void *key)
{
	return ((const struct holders *)entry)->subject == key;
}

static void lease_collect(struct mc_metrics *r, void *arg);

int
leases_init(struct master *m, struct mc_err *err)
{
	struct leases *l = m->leases;

	(void)err;
	memset(l, 0, sizeof(*l));
	mc_htab_init(&l->by_id);
	mc_htab_init(&l->subjects);
	l->next_id = 1;
	return 0;
}

void
leases_clear(struct leases *l)
{
	struct lease *x, *next;
	size_t cur = 0;
	struct holders *h;

	for (x = l->oldest; x != NULL; x = next) {
		next = x->newer;
		free(x);
	}
	for (x = l->spare; x != NULL; x = next) {
		next = x->newer;
		free(x);
	}
	while ((h = mc_htab_next(&l->subjects, &cur)) != NULL)
		free(h);
	while ((h = l->spare_holders) != NULL) {
		l->spare_holders = (struct holders *)(void *)h->first;
		free(h);
	}
	l->spare = NULL;
	l->nspare = l->nspare_holders = 0;
	mc_htab_free(&l->by_id);
	mc_htab_free(&l->subjects);
	mc_htab_init(&l->by_id);
	mc_htab_init(&l->subjects);
	l->oldest = l->newest = NULL;
}

void
leases_free(struct leases *l)
{
	leases_clear(l);
}

/* A lease's subject is o's group when it has one. */
static struct group *
subject_group(struct master *m, const struct mobj *o)
{
	return store_group_get(m->store, o->group);
}

static void
set_deadline(struct master *m, const struct lease *x, uint64_t was, uint64_t now_latest)
{
	if (x->group) {
		const struct group *g = x->subject;

		for (uint32_t i = 0; i < g->n; i++)
			if (g->members[i]->lease_deadline == was)
				state_lease_set(m, g->members[i], now_latest);
	} else {
		struct mobj *o = (struct mobj *)x->subject;

		if (o->lease_deadline == was)
			state_lease_set(m, o, now_latest);
	}
}

/* Unlink x from both lists and the tables, and free it. */
static void
lease_drop(struct leases *l, struct lease *x, struct holders *h)
{
	if (x->older != NULL)
		x->older->newer = x->newer;
	else
		l->oldest = x->newer;
	if (x->newer != NULL)
		x->newer->older = x->older;
	else
		l->newest = x->older;
	if (x->prev != NULL)
		x->prev->next = x->next;
	else
		h->first = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	else
		h->last = x->prev;
	mc_htab_remove(&l->by_id, id_hash(x->id), lease_eq, &x->id);
	if (h->first == NULL) {
		mc_htab_remove(&l->subjects, ptr_hash(h->subject), holders_eq, h->subject);
		holders_recycle(l, h);
	}
	lease_recycle(l, x);
}

static struct holders *
holders_of(struct leases *l, const void *subject)
{
	return mc_htab_find(&l->subjects, ptr_hash(subject), holders_eq, subject);
}

uint64_t
lease_grant(struct master *m, struct mobj *o, uint32_t tenant, uint64_t now)
{
	struct leases *l = m->leases;
	uint64_t until = mc_add_sat(now, m->cfg.lease_ttl);
	struct group *g = subject_group(m, o);
	const void *subject = g != NULL ? (const void *)g : (const void *)o;
	struct holders *h;
	struct lease *x;

	/* The protection itself, whether or not a holder can be tracked. */
	if (g != NULL) {
		for (uint32_t i = 0; i < g->n; i++)
			if (g->members[i]->lease_deadline < until)
				state_lease_set(m, g->members[i], until);
	} else if (o->lease_deadline < until) {
		state_lease_set(m, o, until);
	}
	if (l->by_id.count >= LEASES_MAX || (x = lease_alloc(l)) == NULL)
		goto untracked;
	h = holders_of(l, subject);
	if (h == NULL) {
		h = holders_alloc(l);
		if (h == NULL || mc_htab_insert(&l->subjects, ptr_hash(subject), h) != 0) {
			if (h != NULL)
				holders_recycle(l, h);
			lease_recycle(l, x);
			goto untracked;
		}
		h->subject = subject;
	}
	x->id = l->next_id++;
	x->deadline = until;
	x->subject = subject;
	x->tenant = tenant;
	x->group = g != NULL;
	if (mc_htab_insert(&l->by_id, id_hash(x->id), x) != 0) {
		if (h->first == NULL) {
			mc_htab_remove(&l->subjects, ptr_hash(subject), holders_eq, subject);
			holders_recycle(l, h);
		}
		lease_recycle(l, x);
		goto untracked;
	}
	x->older = l->newest;
	if (l->newest != NULL)
		l->newest->newer = x;
	else
		l->oldest = x;
	l->newest = x;
	x->prev = h->last;
	if (h->last != NULL)
		h->last->next = x;
	else
		h->first = x;
	h->last = x;
	l->granted++;
	return x->id;
untracked:
	l->untracked++;
	return 0;
}

bool
lease_release(struct master *m, uint64_t id, uint32_t tenant)
{
	struct leases *l = m->leases;
	struct lease *x = mc_htab_find(&l->by_id, id_hash(id), lease_eq, &id);
	struct holders *h;
	uint64_t was, latest;

	/* Another tenant's lease is no more this reader's to end than an unknown one. */
	if (x == NULL || x->tenant != tenant)
		return false;
	h = holders_of(l, x->subject);
	if (h == NULL)
		MC_BUG("lease without holders");
	was = x->deadline;
	/* The latest deadline left is the newest remaining holder's. */
	latest = h->last != x ? h->last->deadline : x->prev != NULL ? x->prev->deadline : 0;
	if (latest < was)
		set_deadline(m, x, was, latest);
	lease_drop(l, x, h);
	l->released++;
	return true;
}

void
lease_expire(struct master *m, uint64_t now)
{
	struct leases *l = m->leases;
	unsigned n = 0;

	/* Expired leases already protect nothing: this only frees their memory. */
	while (l->oldest != NULL && l->oldest->deadline <= now && n++ < EXPIRE_MAX) {
		struct lease *x = l->oldest;

		lease_drop(l, x, holders_of(l, x->subject));
		l->expired++;
	}
}

static void
forget_subject(struct leases *l, const void *subject)
{
	struct holders *h;

	/* The last holder's drop frees h: the lookup then finds nothing. */
	while ((h = holders_of(l, subject)) != NULL)
		lease_drop(l, h->first, h);
}

void
lease_forget(struct master *m, struct mobj *o)
{
	struct group *g = subject_group(m, o);

	if (m->leases->subjects.count == 0)
		return;
	if (g == NULL)
		forget_subject(m->leases, o);
	else if (g->n == 1 && g->members[0] == o)
		forget_subject(m->leases, g);
}

static void
h_release(struct mc_req *req)
{
	struct master *m = req->ctx;
	uint32_t tenant = req_client(req)->tenant;
	const msgpack_object_array *ids;
	uint64_t released = 0, one;
	struct mc_err err;
	int rc;

	ids = mc_map_array(req->params, "lease_ids");
	rc = mc_map_u64(req->params, "lease_id", &one, &err);
	if (rc < 0 || (ids == NULL && rc == 0)) {
		/* a notification's error answer is not sent, only counted */
		handler_fail(req, MC_ERR_INVALID,
			     "release needs 'lease_ids' (an array) or 'lease_id'");
		return;
	}
	if (ids != NULL && ids->size > RELEASE_MAX) {
		handler_fail(req, MC_ERR_TOO_LARGE, "%u lease ids in one call, limit %d", ids->size,
			     RELEASE_MAX);
		return;
	}
	if (rc > 0)
		released += lease_release(m, one, tenant);
	for (uint32_t i = 0; ids != NULL && i < ids->size; i++)
		if (ids->ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			released += lease_release(m, ids->ptr[i].via.u64, tenant);
	if (req->notify)
		return;
	msgpack_packer *pk = mc_reply_ok_begin(req);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "released", released);
	mc_reply_end(req);
}

static void
counter(struct mc_metrics *r, const char *name, const char *help, uint64_t v)
{
	mc_metric_put(r, name, MC_COUNTER, help, NULL, NULL, (double)v);
}

static void
lease_collect(struct mc_metrics *r, void *arg)
{
	struct master *m = arg;

	const struct leases *l = m->leases;
	struct mc_metric *held =
		mc_metric_get(r, "mc_leases", MC_GAUGE, "Read leases held by readers.", NULL, NULL);

	if (held != NULL)
		mc_metric_set(held, (double)l->by_id.count);
	counter(r, "mc_leases_granted_total", "Read leases granted with an id.", l->granted);
	counter(r, "mc_leases_released_total", "Read leases their reader released.", l->released);
	counter(r, "mc_leases_expired_total", "Read leases that ran to their TTL.", l->expired);
	counter(r, "mc_leases_untracked_total",
		"Reads protected by the TTL alone (no lease id: too many held).", l->untracked);
}

const struct mc_method lease_methods[] = {
	{ "release", h_release, MC_METHOD_READ_ONLY },
	{ NULL, NULL, 0 },
};

static void
leases_stop(struct master *m)
{
	leases_free(m->leases);
}

static void
leases_sweep(struct master *m)
{
	lease_expire(m, mc_now_ms());
}

const struct master_module lease_module = {
	.name = "leases",
	.init = leases_init,
	.free = leases_stop,
	.sweep = leases_sweep,
	.methods = lease_methods,
	.collect = lease_collect,
};
