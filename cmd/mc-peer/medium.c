/*
 * The table of media by tier, the I/O counters, copies between media and
 * the recency order media share.
 */
#include "medium.h"

const struct medium_ops *const medium_types[MC_TIER_COUNT] = {
	[MC_TIER_DRAM] = &medium_dram,
	[MC_TIER_SSD] = &medium_ssd,
};

struct medium *
medium_open(int tier, const struct medium_conf *conf, struct mc_err *err)
{
	struct medium *m;

	if (tier < 0 || tier >= MC_TIER_COUNT || !medium_types[tier]) {
		mc_err_set(err, MC_ERR_INVALID, "this peer cannot hold a %s tier",
			   mc_tier_name(tier));
		return NULL;
	}
	m = medium_types[tier]->open(conf, err);
	if (m) {
		m->ops = medium_types[tier];
		m->tier = tier;
	}
	return m;
}

int
medium_copy(struct medium *from, uint64_t from_off, struct medium *to, uint64_t to_off,
	    uint64_t len, struct mc_err *err)
{
	struct mc_bulk_sink sink;
	const void *lent;
	struct mc_err e;
	uint64_t at;
	size_t n;
	void *w;
	int r = 0;

	if ((lent = medium_read(from, from_off, len, NULL, &e)) != NULL)
		return medium_write(to, to_off, lent, len, err);
	if (e.code != MC_ERR_UNAVAILABLE) {
		*err = e;
		return -1;
	}
	/* A sink in memory is one window of all of it: the read lands there whole. */
	if (medium_sink(to, to_off, len, &sink, err) < 0)
		return -1;
	for (at = 0; at < len && r == 0; at += n) {
		if ((w = mc_bulk_sink_window(&sink, at, &n)) == NULL)
			r = mc_err_errno(err, "cannot stage a copy into %s",
					 mc_tier_name(to->tier));
		else if (medium_read(from, from_off + at, n, w, err) == NULL)
			r = -1;
		else if (mc_bulk_sink_commit(&sink, at, n) < 0)
			r = mc_err_errno(err, "cannot copy %zu bytes into %s", n,
					 mc_tier_name(to->tier));
	}
	mc_bulk_sink_release(&sink);
	return r;
}

/* ---- I/O counters ---- */

void
medium_io(struct medium *m, struct medium_io *out)
{
#define MEDIUM_IO_LOAD(f) out->f = atomic_load_explicit(&m->io.f, memory_order_relaxed);
	MEDIUM_IO_FIELDS(MEDIUM_IO_LOAD)
#undef MEDIUM_IO_LOAD
}

void
medium_io_read(struct medium *m, uint64_t bytes, uint64_t ns)
{
	atomic_fetch_add_explicit(&m->io.reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->io.read_bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->io.read_ns, ns, memory_order_relaxed);
}

void
medium_io_write(struct medium *m, uint64_t bytes, uint64_t ns)
{
	atomic_fetch_add_explicit(&m->io.writes, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->io.write_bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->io.write_ns, ns, memory_order_relaxed);
}

/* ---- recency ---- */

void
medium_lru_init(struct medium_lru *l)
{
	l->head.colder = l->head.warmer = &l->head;
	l->head.tracked = true;
}

static void
lru_unlink(struct medium_order *o)
{
	o->colder->warmer = o->warmer;
	o->warmer->colder = o->colder;
	o->colder = o->warmer = NULL;
	o->tracked = false;
}

void
medium_lru_track(struct medium_lru *l, struct medium_order *o, uint64_t bytes)
{
	struct medium_order *h = &l->head;

	if (o->tracked)
		lru_unlink(o);
	/* The warm end is just before the head, going warmer. */
	o->bytes = bytes;
	o->colder = h->colder;
	o->warmer = h;
	h->colder->warmer = o;
	h->colder = o;
	o->tracked = true;
}

void
medium_lru_untrack(struct medium_lru *l, struct medium_order *o)
{
	(void)l;
	if (o->tracked)
		lru_unlink(o);
}

size_t
medium_lru_offer(const struct medium_lru *l, struct medium_offer *out, size_t max)
{
	const struct medium_order *h = &l->head;
	struct medium_order *o;
	size_t n = 0;

	for (o = h->warmer; o != h && n < max; o = o->warmer) {
		out[n].who = o;
		out[n].bytes = o->bytes;
		n++;
	}
	return n;
}
