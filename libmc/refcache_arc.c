/*
 * arc: ARC (Nimrod Megiddo and Dharmendra S. Modha, "ARC: A
 * Self-Tuning, Low Overhead Replacement Cache", FAST'03), weighted by
 * bytes: |X| below is the bytes of the objects list X holds or (for a
 * ghost list) remembers, and c is the capacity in bytes, so with fixed
 * size blocks everything is the paper's page count times the block size.
 *
 * The paper's cases map onto the API thus: case I (a hit) is the hit
 * operation; cases II-IV (misses) are an insert, whose REPLACE calls the
 * round makes until the low watermark is met instead of once at a full
 * cache. Case IV's directory upkeep (dropping B1's or B2's LRU ghost) is
 * done after the object is linked in, by trimming the ghosts back to
 * |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c: REPLACE only
 * moves objects between a list and its ghost, so only the new object can
 * break either bound, and at a full cache the ghosts dropped are the ones
 * the paper's case IV drops.
 */
#include <math.h>

#include "refcache_impl.h"

static uint64_t
directory(const struct mc_refcache *c)
{
	return c->q[RC_T1].bytes + c->q[RC_T2].bytes + c->q[RC_B1].bytes + c->q[RC_B2].bytes;
}

static void
hit(struct mc_refcache *c, struct rc_entry *e)
{
	mc_rc_move(c, e, RC_T2);
}

/*
 * Cases II and III adapt p by the ratio of the ghost lists with x still
 * in its ghost, at least one object's worth (the paper's delta, times the
 * size of x).
 */
static void
adapt(struct mc_refcache *c, enum rc_queue from, uint64_t size)
{
	double b1 = (double)c->q[RC_B1].bytes, b2 = (double)c->q[RC_B2].bytes;

	if (from == RC_B1)
		c->p = fmin((double)c->capacity, c->p + fmax(b2 / b1, 1) * (double)size);
	else if (from == RC_B2)
		c->p = fmax(0, c->p - fmax(b1 / b2, 1) * (double)size);
}

static void
admit(struct mc_refcache *c, struct rc_entry *e, uint64_t size)
{
	enum rc_queue from = e->where;

	adapt(c, from, size);
	c->from_b2 = from == RC_B2;
	mc_rc_unghost(c, e, size);
	mc_rc_round(c, size);
	mc_rc_enter(c, e, from == RC_NONE ? RC_T1 : RC_T2);
	mc_rc_trim(c, RC_B1, c->capacity - c->q[RC_T1].bytes);
	mc_rc_trim(c, RC_B2, 2 * c->capacity - (directory(c) - c->q[RC_B2].bytes));
}

/* The paper's REPLACE(x, p), x the object being admitted. */
static void
evict(struct mc_refcache *c)
{
	double t1 = (double)c->q[RC_T1].bytes;

	if ((c->q[RC_T1].n > 0 && (t1 > c->p || (c->from_b2 && t1 == c->p))) || c->q[RC_T2].n == 0)
		mc_rc_evict(c, rc_oldest(c, RC_T1), RC_B1);
	else
		mc_rc_evict(c, rc_oldest(c, RC_T2), RC_B2);
}

static int
check(const struct mc_refcache *c, struct mc_err *err)
{
	if (!(c->p >= 0 && c->p <= (double)c->capacity))
		return mc_err_set(err, MC_ERR_INTERNAL, "arc: p %g outside [0, capacity]", c->p);
	if (c->q[RC_T1].bytes + c->q[RC_B1].bytes > c->capacity)
		return mc_err_set(err, MC_ERR_INTERNAL, "arc: |T1| + |B1| over the capacity");
	if (directory(c) > 2 * c->capacity)
		return mc_err_set(err, MC_ERR_INTERNAL, "arc: directory over twice the capacity");
	if (c->q[RC_T1].n + c->q[RC_T2].n != c->st.objects)
		return mc_err_set(err, MC_ERR_INTERNAL, "arc: objects outside T1 and T2");
	return 0;
}

const struct rc_ops mc_rc_arc = {
	.hit = hit,
	.admit = admit,
	.evict = evict,
	.check = check,
};
