/*
 * lru, fifo and lru-textbook: one queue, oldest first. They differ only
 * in whether a hit counts as a use (lru, lru-textbook move it to the
 * newest end; fifo leaves it) and in when a round stops, which the
 * generic layer decides from at_capacity.
 */
#include "refcache_impl.h"

static void
hit_move(struct mc_refcache *c, struct rc_entry *e)
{
	mc_rc_move(c, e, RC_CACHE);
}

static void
hit_keep(struct mc_refcache *c, struct rc_entry *e)
{
	(void)c;
	(void)e;
}

static void
admit(struct mc_refcache *c, struct rc_entry *e, uint64_t size)
{
	mc_rc_unghost(c, e, size);
	mc_rc_round(c, size);
	mc_rc_enter(c, e, RC_CACHE);
}

static void
evict(struct mc_refcache *c)
{
	mc_rc_evict(c, rc_oldest(c, RC_CACHE), RC_NONE);
}

const struct rc_ops mc_rc_lru = {
	.hit = hit_move,
	.admit = admit,
	.evict = evict,
};

const struct rc_ops mc_rc_fifo = {
	.hit = hit_keep,
	.admit = admit,
	.evict = evict,
};

const struct rc_ops mc_rc_lru_textbook = {
	.at_capacity = true,
	.hit = hit_move,
	.admit = admit,
	.evict = evict,
};
