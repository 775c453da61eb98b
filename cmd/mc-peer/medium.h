/*
 * A medium: the bytes of one tier on this peer, behind one struct of
 * operations, so that the index, the data plane and the pool never know
 * which device holds a copy.
 *
 * A copy's place in a medium is an offset and a length that allocate
 * handed out. Allocation, release, reads and the counters are
 * thread-safe. The ordering hooks free nothing and keep no lock of their
 * own: the owner of the records (the placement index) calls them under
 * its lock, which is also what keeps an offered record alive.
 *
 * Adding a tier is a medium file with its operations and one line in
 * medium_types (medium.c).
 */
#ifndef MC_PEER_MEDIUM_H
#define MC_PEER_MEDIUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"
#include "mc/tier.h"

/*
 * A copy's place in its medium's order, coldest first. Embedded in the
 * owner's record (container_of gets it back); the medium links it.
 */
struct medium_order {
	struct medium_order *colder, *warmer;
	uint64_t bytes; /* what freeing the copy gives back, in the medium's units */
	bool tracked;
};

/* One candidate from medium_offer: the copy, and the bytes releasing it would free. */
struct medium_offer {
	struct medium_order *who;
	uint64_t bytes;
};

/* What a copy's extent header keeps, so that a restarted peer can report the copy. */
struct medium_meta {
	const char *tenant, *key, *type, *group;
	uint16_t tenant_len, key_len, type_len, group_len;
	uint64_t version, size, checksum;
	uint64_t sp_deadline; /* wall-clock ms since the epoch, 0 none */
	bool hard_pin;
};

/* What a medium is opened with; a field a medium does not use is ignored. */
struct medium_conf {
	uint64_t size;	  /* bytes the tier may hold */
	const char *path; /* where a tier kept on disk keeps it */
};

/* A copy recover found; meta's strings live only during the call. 0 keeps it, -1 releases it. */
typedef int (*medium_found_fn)(void *arg, uint64_t off, const struct medium_meta *meta);

struct medium;

struct medium_ops {
	struct medium *(*open)(const struct medium_conf *conf, struct mc_err *err);
	void (*close)(struct medium *m);
	/* Reserve len > 0 bytes; MC_ERR_NO_SPACE when they do not fit. */
	int (*alloc)(struct medium *m, uint64_t len, uint64_t *off, struct mc_err *err);
	/* Give back what alloc(len) returned at off. Never fails. */
	void (*release)(struct medium *m, uint64_t off, uint64_t len);
	/*
	 * The len bytes at off, in memory. With buf NULL, a medium whose
	 * bytes are addressable lends them (valid while the allocation is
	 * held, no copy); one that cannot lend fails with MC_ERR_UNAVAILABLE.
	 * With buf, the bytes are copied into it and buf is returned.
	 */
	const void *(*read)(struct medium *m, uint64_t off, uint64_t len, void *buf,
			    struct mc_err *err);
	/* Write the len bytes at off to fd, all of them (a blocking fd). */
	int (*read_fd)(struct medium *m, uint64_t off, uint64_t len, int fd, struct mc_err *err);
	/*
	 * Where a write's bulk lands: memory the connection receives the
	 * len bytes at off into. What is there is the stored copy.
	 */
	void *(*write_dest)(struct medium *m, uint64_t off, uint64_t len);
	/* Copy len bytes from buf in at off. */
	int (*write)(struct medium *m, uint64_t off, const void *buf, uint64_t len,
		     struct mc_err *err);
	/* Make the copy at off recoverable after a restart; NULL: nothing to do. */
	int (*seal)(struct medium *m, uint64_t off, uint64_t len, const struct medium_meta *meta,
		    struct mc_err *err);
	/* Once, after open: the sealed copies that verify; NULL: nothing survives a restart. */
	int (*recover)(struct medium *m, medium_found_fn fn, void *arg, struct mc_err *err);
	uint64_t (*capacity)(struct medium *m);
	/* Bytes allocated, in the medium's units (whole pages for DRAM). */
	uint64_t (*used)(struct medium *m);
	/*
	 * Ordering hooks. track puts a copy of len bytes at the warm end
	 * (on commit and on every access); untrack takes it out (the copy is
	 * no longer a candidate); offer fills out with up to max copies,
	 * coldest first, and changes nothing. Lock: the caller's.
	 */
	void (*track)(struct medium *m, struct medium_order *o, uint64_t len);
	void (*untrack)(struct medium *m, struct medium_order *o);
	size_t (*offer)(struct medium *m, struct medium_offer *out, size_t max);
};

/* The head every medium's state starts with. */
struct medium {
	const struct medium_ops *ops;
	int tier; /* enum mc_tier */
};

/* The operations of each tier that has a medium, NULL for the others. */
extern const struct medium_ops *const medium_types[MC_TIER_COUNT];

extern const struct medium_ops medium_dram;

/*
 * Plain recency, for a medium whose order is last use: a circular list
 * through the records around a head; walking warmer from the head goes
 * from the coldest copy to the warmest. A medium embeds one and points
 * its hooks here.
 */
struct medium_lru {
	struct medium_order head; /* head.warmer is the coldest, head.colder the warmest */
};

void medium_lru_init(struct medium_lru *l);
void medium_lru_track(struct medium_lru *l, struct medium_order *o, uint64_t bytes);
void medium_lru_untrack(struct medium_lru *l, struct medium_order *o);
size_t medium_lru_offer(const struct medium_lru *l, struct medium_offer *out, size_t max);

/* Open tier's medium; MC_ERR_INVALID for a tier this peer cannot hold. */
struct medium *medium_open(int tier, const struct medium_conf *conf, struct mc_err *err);

static inline void
medium_close(struct medium *m)
{
	if (m)
		m->ops->close(m);
}

static inline int
medium_alloc(struct medium *m, uint64_t len, uint64_t *off, struct mc_err *err)
{
	return m->ops->alloc(m, len, off, err);
}

static inline void
medium_release(struct medium *m, uint64_t off, uint64_t len)
{
	m->ops->release(m, off, len);
}

static inline const void *
medium_read(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	return m->ops->read(m, off, len, buf, err);
}

static inline int
medium_read_fd(struct medium *m, uint64_t off, uint64_t len, int fd, struct mc_err *err)
{
	return m->ops->read_fd(m, off, len, fd, err);
}

static inline void *
medium_write_dest(struct medium *m, uint64_t off, uint64_t len)
{
	return m->ops->write_dest(m, off, len);
}

static inline int
medium_write(struct medium *m, uint64_t off, const void *buf, uint64_t len, struct mc_err *err)
{
	return m->ops->write(m, off, buf, len, err);
}

static inline int
medium_seal(struct medium *m, uint64_t off, uint64_t len, const struct medium_meta *meta,
	    struct mc_err *err)
{
	return m->ops->seal ? m->ops->seal(m, off, len, meta, err) : 0;
}

static inline int
medium_recover(struct medium *m, medium_found_fn fn, void *arg, struct mc_err *err)
{
	return m->ops->recover ? m->ops->recover(m, fn, arg, err) : 0;
}

static inline uint64_t
medium_capacity(struct medium *m)
{
	return m->ops->capacity(m);
}

static inline uint64_t
medium_used(struct medium *m)
{
	return m->ops->used(m);
}

static inline void
medium_track(struct medium *m, struct medium_order *o, uint64_t len)
{
	m->ops->track(m, o, len);
}

static inline void
medium_untrack(struct medium *m, struct medium_order *o)
{
	m->ops->untrack(m, o);
}

static inline size_t
medium_offer(struct medium *m, struct medium_offer *out, size_t max)
{
	return m->ops->offer(m, out, max);
}

#endif
