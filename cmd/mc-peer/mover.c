/*
 * Moves between tiers: claimed and reserved on the loop, copied on a
 * worker, sealed and swapped in on the loop (see mover.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mc/fault.h"
#include "mc/log.h"
#include "mc/workq.h"

#include "mover.h"

/* Moves waiting to start at most; a reclaim beyond it drops instead. */
#define MOVES_WAITING_MAX 65536
/* How much nicer than the loop the worker runs: reads served first, moves with what is left. */
#define MOVE_NICE 10

static const char *const kind_names[MOVE_KINDS] = {
	[MOVE_DEMOTE] = "demote",
	[MOVE_PROMOTE] = "promote",
};

struct mover {
	struct pool *pl;
	struct pindex *ix;
	struct mc_workq *q;
	struct event *ev; /* the queue's completions, on the loop */
	mover_moved_fn moved;
	void *moved_arg;
	mover_settled_fn settled;
	void *settled_arg;
	uint64_t in_flight[MC_TIER_COUNT]; /* bytes being moved out of each tier */
	struct mover_stats st;
};

struct move {
	struct mover *mv;
	struct pobj *src; /* claimed: a reference, and marked moving */
	enum mover_kind kind;
	int to;
	uint64_t off; /* the reserved room on tier to */
	unsigned attempts;
	bool failed;
	struct mc_err err;
};

static void
completions_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mc_workq_complete(arg);
}

struct mover *
mover_new(struct event_base *base, struct pool *pl, struct mc_err *err)
{
	struct mover *mv = calloc(1, sizeof(*mv));

	if (!mv) {
		mc_err_errno(err, "cannot allocate the mover");
		return NULL;
	}
	mv->pl = pl;
	mv->ix = pl->ix;
	if (!(mv->q = mc_workq_new(1, MOVES_WAITING_MAX, MOVE_NICE, err)))
		goto fail;
	mv->ev = event_new(base, mc_workq_fd(mv->q), EV_READ | EV_PERSIST, completions_cb, mv->q);
	if (!mv->ev || event_add(mv->ev, NULL) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot watch the mover's queue");
		goto fail;
	}
	return mv;
fail:
	mover_free(mv);
	return NULL;
}

void
mover_free(struct mover *mv)
{
	if (!mv)
		return;
	/* Runs every completion left: the claims go back, the reserved room too. */
	mc_workq_free(mv->q);
	if (mv->ev)
		event_free(mv->ev);
	free(mv);
}

void
mover_on_moved(struct mover *mv, mover_moved_fn fn, void *arg)
{
	mv->moved = fn;
	mv->moved_arg = arg;
}

void
mover_on_settled(struct mover *mv, mover_settled_fn fn, void *arg)
{
	mv->settled = fn;
	mv->settled_arg = arg;
}

/* ---- the copy, on the worker ---- */

static void
move_work(void *arg)
{
	struct move *mj = arg;
	struct medium *from = mj->mv->ix->media[mj->src->tier];
	struct medium *to = mj->mv->ix->media[mj->to];

	mj->failed = false;
	if (mc_fault2("move", kind_names[mj->kind])) {
		mc_err_set(&mj->err, MC_ERR_SYSTEM, "fault injected: move.%s",
			   kind_names[mj->kind]);
		mj->failed = true;
		return;
	}
	if (mj->src->size > 0)
		mj->failed =
			medium_copy(from, mj->src->off, to, mj->off, mj->src->size, &mj->err) < 0;
	/* The bytes have landed, not yet sealed: where a crash leaves them unclaimed. */
	if (!mj->failed && mc_fault2("moved", kind_names[mj->kind])) {
		mc_err_set(&mj->err, MC_ERR_SYSTEM, "fault injected: moved.%s",
			   kind_names[mj->kind]);
		mj->failed = true;
	}
}

/* ---- the end of a move, on the loop ---- */

static struct pool_key
key_of(const struct pobj *o)
{
	return (struct pool_key){
		o->name, o->tenant_len, pobj_key(o), o->key_len, true, o->version
	};
}

/* The new copy, sealed: NULL with err when it cannot be had. */
static struct pobj *
new_copy(struct move *mj, struct mc_err *err)
{
	const struct pobj *s = mj->src;
	struct medium_meta meta;
	struct pobj *n = pobj_new(mj->mv->ix, s->name, s->tenant_len, pobj_key(s), s->key_len,
				  s->version, s->size, s->checksum, mj->to, mj->off);

	if (!n) {
		if (s->size > 0)
			medium_release(mj->mv->ix->media[mj->to], mj->off, s->size);
		mc_err_set(err, MC_ERR_SYSTEM, "out of memory for an index entry");
		return NULL;
	}
	if (s->meta) {
		const struct pmeta *pm = s->meta;

		n->meta = pmeta_new(pm->names, pm->type_len, pm->names + pm->type_len,
				    pm->group_len, pm->hard_pin, pm->sp_deadline);
		if (!n->meta) {
			pindex_release(mj->mv->ix, n);
			mc_err_set(err, MC_ERR_SYSTEM, "out of memory for a copy's metadata");
			return NULL;
		}
		/* the receipt goes with the copy: the tier below keeps it in its header */
		pmeta_set_receipt(n->meta, pm->has_receipt ? pm->receipt : NULL);
		n->meta->dynamic = pm->dynamic;
	}
	pobj_medium_meta(n, &meta);
	if (n->size > 0 &&
	    medium_seal(mj->mv->ix->media[mj->to], n->off, n->size, &meta, err) < 0) {
		/* Releasing n gives its room back. */
		pindex_release(mj->mv->ix, n);
		return NULL;
	}
	return n;
}

static void
move_over(struct move *mj)
{
	struct mover *mv = mj->mv;
	int from = mj->src->tier;

	mv->in_flight[from] -= medium_footprint(mv->ix->media[from], mj->src->size);
	pindex_unclaim(mv->ix, mj->src);
	free(mj);
	if (mv->settled)
		mv->settled(mv->settled_arg, from);
}

/*
 * Given up: the room goes back unless it went already; a demotion's
 * copy is dropped, a promotion's stays where it was.
 */
static void
move_failed(struct move *mj, bool room_held)
{
	struct mover *mv = mj->mv;
	struct pool_key k = key_of(mj->src);
	struct pool_result res;
	char kb[80];

	mv->st.failed[mj->kind]++;
	if (room_held && mj->src->size > 0)
		medium_release(mv->ix->media[mj->to], mj->off, mj->src->size);
	snprintf(kb, sizeof(kb), "%.*s", (int)(mj->src->key_len < 64 ? mj->src->key_len : 64),
		 pobj_key(mj->src));
	mc_warn("cannot %s '%s' from %s to %s after %u tries: %s", kind_names[mj->kind], kb,
		mc_tier_name(mj->src->tier), mc_tier_name(mj->to), mj->attempts, mj->err.msg);
	if (mj->kind == MOVE_DEMOTE)
		pool_drop(mv->pl, &k, mj->src->tier, POOL_DROP_FAILED, &res);
	move_over(mj);
}

static void move_done(void *arg, bool cancelled);

static int
submit(struct move *mj, struct mc_err *err)
{
	return mc_workq_submit(mj->mv->q, move_work, move_done, mj, err);
}

static void
move_done(void *arg, bool cancelled)
{
	struct move *mj = arg;
	struct mover *mv = mj->mv;
	struct pobj *n, *old;
	struct mc_err err;
	int from = mj->src->tier;

	mj->attempts++;
	if (cancelled) {
		mc_err_set(&mj->err, MC_ERR_UNAVAILABLE, "the peer is stopping");
		mj->attempts = MOVE_ATTEMPTS;
		mj->failed = true;
	}
	if (mj->failed && mj->attempts < MOVE_ATTEMPTS && submit(mj, &err) == 0) {
		mv->st.retried[mj->kind]++;
		return;
	}
	if (mj->failed) {
		move_failed(mj, true);
		return;
	}
	if (!(n = new_copy(mj, &mj->err))) {
		/* new_copy gave the room back. */
		move_failed(mj, false);
		return;
	}
	old = mj->src;
	if (pindex_swap(mv->ix, old, n, &err) < 0) {
		/* Dropped or superseded while it was copied: the copy goes too. */
		mv->st.lost[mj->kind]++;
		pindex_release(mv->ix, n);
		move_over(mj);
		return;
	}
	mv->st.done[mj->kind]++;
	if (mv->moved)
		mv->moved(mv->moved_arg, n, from);
	/*
	 * The index's reference to the old copy; readers holding it keep its
	 * bytes, but it is no copy of the key's any more, even after a crash.
	 */
	medium_unseal(mv->ix->media[from], old->off, old->size);
	pindex_release(mv->ix, old);
	move_over(mj);
}

/* ---- starting a move, on the loop ---- */

static int
start(struct mover *mv, enum mover_kind kind, const struct pool_key *k, int from, int to)
{
	struct medium *dst = mv->ix->media[to];
	struct move *mj;
	struct pobj *o;
	struct mc_err err;
	uint64_t off = 0;
	int r;

	if (!dst)
		return -1;
	r = pindex_claim(mv->ix, k->tenant, k->tenant_len, k->key, k->key_len, from, k->has_version,
			 k->max_version, &o);
	if (r <= 0)
		return r == 0 ? 1 : -1;
	if (o->size > 0 && medium_alloc(dst, o->size, &off, &err) < 0) {
		mv->st.no_room[kind]++;
		pindex_unclaim(mv->ix, o);
		return -1;
	}
	if (!(mj = calloc(1, sizeof(*mj))))
		goto undo;
	*mj = (struct move){ .mv = mv, .src = o, .kind = kind, .to = to, .off = off };
	if (submit(mj, &err) < 0) {
		free(mj);
		goto undo;
	}
	mv->st.queued[kind]++;
	mv->in_flight[from] += medium_footprint(mv->ix->media[from], o->size);
	return 0;
undo:
	if (o->size > 0)
		medium_release(dst, off, o->size);
	mv->st.no_room[kind]++;
	pindex_unclaim(mv->ix, o);
	return -1;
}

int
mover_demote(void *arg, const struct pool_key *k, int from, int to)
{
	return start(arg, MOVE_DEMOTE, k, from, to);
}

int
mover_promote(struct mover *mv, const struct pool_key *k, int from, int to)
{
	return start(mv, MOVE_PROMOTE, k, from, to);
}

uint64_t
mover_in_flight(const struct mover *mv, int tier)
{
	return mv->in_flight[tier];
}

const struct mover_stats *
mover_stats(const struct mover *mv)
{
	return &mv->st;
}

const char *
mover_kind_name(enum mover_kind k)
{
	return kind_names[k];
}
