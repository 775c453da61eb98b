/*
 * The DRAM medium: the arena (arena.c) as its bytes and its allocator,
 * its bytes addressable, so reads lend them and writes land in place,
 * and plain recency as its order. Nothing survives a restart, so there
 * is nothing to seal or recover, and its I/O counters stay zero (its
 * reads and writes are the connection's memory copies).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "medium.h"

struct dram {
	struct medium m; /* first: the medium is the dram */
	struct arena *a;
	struct medium_lru lru;
};

static struct dram *
dram_of(struct medium *m)
{
	return (struct dram *)m;
}

static struct medium *
dram_open(const struct medium_conf *conf, struct mc_err *err)
{
	struct dram *d = calloc(1, sizeof(*d));

	if (!d) {
		mc_err_errno(err, "cannot allocate the %s medium", mc_tier_name(MC_TIER_DRAM));
		return NULL;
	}
	d->a = arena_new(conf->size, err);
	if (!d->a) {
		free(d);
		return NULL;
	}
	medium_lru_init(&d->lru);
	d->m.page = ARENA_PAGE;
	d->m.per_copy = 0;
	return &d->m;
}

static void
dram_close(struct medium *m)
{
	struct dram *d = dram_of(m);

	arena_free_all(d->a);
	free(d);
}

static int
dram_alloc(struct medium *m, uint64_t len, uint64_t *off, struct mc_err *err)
{
	return pages_alloc(arena_pages(dram_of(m)->a), len, off, err);
}

static void
dram_release(struct medium *m, uint64_t off, uint64_t len)
{
	pages_release(arena_pages(dram_of(m)->a), off, len);
}

static const void *
dram_read(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	const void *src = arena_ptr(dram_of(m)->a, off);

	(void)err;
	if (!buf)
		return src;
	memcpy(buf, src, len);
	return buf;
}

static int
dram_source(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_src *s, struct mc_err *err)
{
	(void)err;
	*s = mc_bulk_src_mem(arena_ptr(dram_of(m)->a, off), len);
	return 0;
}

static int
dram_sink(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_sink *s, struct mc_err *err)
{
	(void)err;
	mc_bulk_sink_mem(s, arena_ptr(dram_of(m)->a, off), len);
	return 0;
}

static int
dram_write(struct medium *m, uint64_t off, const void *buf, uint64_t len, struct mc_err *err)
{
	(void)err;
	memcpy(arena_ptr(dram_of(m)->a, off), buf, len);
	return 0;
}

static uint64_t
dram_capacity(struct medium *m)
{
	return pages_capacity(arena_pages(dram_of(m)->a));
}

static uint64_t
dram_used(struct medium *m)
{
	return pages_used(arena_pages(dram_of(m)->a));
}

static void
dram_track(struct medium *m, struct medium_order *o, uint64_t len)
{
	/* Freeing gives back whole pages, so that is what a copy is worth. */
	medium_lru_track(&dram_of(m)->lru, o, mc_round_up(len, ARENA_PAGE));
}

static void
dram_untrack(struct medium *m, struct medium_order *o)
{
	medium_lru_untrack(&dram_of(m)->lru, o);
}

static size_t
dram_offer(struct medium *m, struct medium_offer *out, size_t max)
{
	return medium_lru_offer(&dram_of(m)->lru, out, max);
}

const struct medium_ops medium_dram = {
	.open = dram_open,
	.close = dram_close,
	.alloc = dram_alloc,
	.release = dram_release,
	.read = dram_read,
	.source = dram_source,
	.sink = dram_sink,
	.write = dram_write,
	.capacity = dram_capacity,
	.used = dram_used,
	.track = dram_track,
	.untrack = dram_untrack,
	.offer = dram_offer,
};
