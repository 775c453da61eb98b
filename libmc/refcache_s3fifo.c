/*
 * s3fifo: S3-FIFO (Juncheng Yang et al., "FIFO queues are all you need
 * for cache eviction", SOSP'23), following the paper's Algorithm 1 with
 * two choices the paper leaves open: small's tail moves to main when it
 * was read at all (freq > 0), its frequency reset, and a queue's size and
 * share are in bytes (each ghost weighs the object it remembers), which
 * for fixed size blocks is the paper's count of objects.
 *
 * Small's share is small_share (10% of the capacity), main's the rest,
 * and the ghost FIFO remembers at most main's share. Everything is O(1)
 * amortised: every reinsertion into main and every promotion from small
 * spends frequency that a hit paid for.
 */
#include "refcache_impl.h"

#define FREQ_MAX 3 /* two bits */

static uint64_t
main_share(const struct mc_refcache *c)
{
	return c->capacity - c->small_share;
}

static void
hit(struct mc_refcache *c, struct rc_entry *e)
{
	(void)c;
	if (e->freq < FREQ_MAX)
		e->freq++;
}

static void
admit(struct mc_refcache *c, struct rc_entry *e, uint64_t size)
{
	enum rc_queue to = e->where == RC_GHOST ? RC_MAIN : RC_SMALL;

	mc_rc_unghost(c, e, size);
	mc_rc_round(c, size);
	e->freq = 0;
	mc_rc_enter(c, e, to);
}

/* The paper's EVICTM: evict main's first tail object that was not read since it last passed. */
static void
evict_main(struct mc_refcache *c)
{
	struct rc_entry *e;

	while ((e = rc_oldest(c, RC_MAIN)) != NULL) {
		if (e->freq == 0) {
			mc_rc_evict(c, e, RC_NONE);
			return;
		}
		e->freq--;
		mc_rc_move(c, e, RC_MAIN);
	}
}

/* The paper's EVICTS: promote read tail objects until one unread goes to the ghost. */
static void
evict_small(struct mc_refcache *c)
{
	struct rc_entry *e;

	while ((e = rc_oldest(c, RC_SMALL)) != NULL) {
		if (e->freq == 0) {
			mc_rc_evict(c, e, RC_GHOST);
			mc_rc_trim(c, RC_GHOST, main_share(c));
			return;
		}
		e->freq = 0;
		mc_rc_move(c, e, RC_MAIN);
		if (c->q[RC_MAIN].bytes > main_share(c))
			evict_main(c);
	}
}

/*
 * The paper's EVICT, repeated until something left the cache: a pass
 * over small that promotes everything in it evicts nothing, and the next
 * pass then finds small empty and evicts from main.
 */
static void
evict(struct mc_refcache *c)
{
	uint64_t before = c->st.evictions;

	while (c->st.evictions == before) {
		if (c->q[RC_SMALL].n > 0 &&
		    (c->q[RC_SMALL].bytes >= c->small_share || c->q[RC_MAIN].n == 0))
			evict_small(c);
		else
			evict_main(c);
	}
}

static int
check(const struct mc_refcache *c, struct mc_err *err)
{
	const struct rc_link *l;
	int q;

	if (c->q[RC_GHOST].bytes > main_share(c))
		return mc_err_set(err, MC_ERR_INTERNAL, "s3fifo: ghosts over main's share");
	for (q = RC_SMALL; q <= RC_MAIN; q++)
		for (l = c->q[q].head.next; l != &c->q[q].head; l = l->next)
			if (((const struct rc_entry *)l)->freq > FREQ_MAX)
				return mc_err_set(err, MC_ERR_INTERNAL, "s3fifo: frequency over %d",
						  FREQ_MAX);
	if (c->q[RC_SMALL].n + c->q[RC_MAIN].n != c->st.objects)
		return mc_err_set(err, MC_ERR_INTERNAL, "s3fifo: objects outside small and main");
	return 0;
}

const struct rc_ops mc_rc_s3fifo = {
	.hit = hit,
	.admit = admit,
	.evict = evict,
	.check = check,
};
