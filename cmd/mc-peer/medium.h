/*
 * A medium: the bytes of one tier on this peer, behind one struct of
 * operations, so that the index, the data plane and the pool never know
 * which device holds a copy.
 *
 * A copy's place in a medium is an offset and a length that allocate
 * handed out. Allocation, release, reads, writes, sealing and the
 * counters are thread-safe (the mover calls them on worker threads). The ordering hooks free nothing and keep no lock of their
 * own: the owner of the records (the placement index) calls them under
 * its lock, which is also what keeps an offered record alive.
 *
 * Adding a tier is a medium file with its operations and one line in
 * medium_types (medium.c).
 */
#ifndef MC_PEER_MEDIUM_H
#define MC_PEER_MEDIUM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/bulk.h"
#include "mc/checked.h"
#include "mc/err.h"
#include "mc/receipt.h"
#include "mc/tier.h"

/*
 * A copy's place in its medium's order, coldest first. Embedded in the
 * owner's record (container_of gets it back); the medium links it.
 */
struct medium_order {
	struct medium_order *colder, *warmer;
	uint64_t bytes; /* what freeing the copy gives back, in the medium's units */
	bool tracked;	/* in the order: set by track, cleared by untrack */
};

/* One candidate from medium_offer: the copy, and the bytes releasing it would free. */
struct medium_offer {
	struct medium_order *who;
	uint64_t bytes;
};

/* What a medium is opened with; a field a medium does not use is ignored. */
struct medium_conf {
	uint64_t size;	  /* bytes the tier may hold */
	const char *path; /* ssd: a file of extents, or a directory to keep it in */
	bool direct;	  /* ssd: try O_DIRECT for copies in and out (falls back) */
};

/*
 * What a copy is, kept with its bytes by a medium that survives a
 * restart, so the copy can be reported again. Names are not
 * NUL-terminated; type and group may be empty (length 0).
 */
struct medium_meta {
	const char *tenant, *key, *type, *group;
	uint16_t tenant_len, key_len, type_len, group_len;
	uint64_t version, size, checksum;
	uint64_t sp_deadline; /* soft pin's end, wall-clock ms since the epoch; 0: none */
	bool hard_pin;
	bool dynamic; /* a dynamic replica (struct pmeta) */
	/* the master's commit receipt (MC_RECEIPT_BYTES), or NULL: none came */
	const unsigned char *receipt;
};

/*
 * One recovered copy at off: 0 keeps it allocated, -1 releases it.
 * meta's strings are valid only during the call.
 */
typedef int (*medium_found_fn)(void *arg, uint64_t off, const struct medium_meta *meta);

struct medium;

struct medium_ops {
	/*
	 * Its reads, writes and seals wait on a device: the loop hands them
	 * to the disk queue (diskq.h) instead of making them itself.
	 */
	bool blocking;
	struct medium *(*open)(const struct medium_conf *conf, struct mc_err *err);
	void (*close)(struct medium *m);
	/* Reserve len > 0 bytes; MC_ERR_NO_SPACE when they do not fit. */
	int (*alloc)(struct medium *m, uint64_t len, uint64_t *off, struct mc_err *err);
	/*
	 * Give back what alloc(len) returned at off; a copy sealed there is
	 * never recovered after. Never fails.
	 */
	void (*release)(struct medium *m, uint64_t off, uint64_t len);
	/*
	 * The copy sealed at off is gone for good although its room is
	 * not given back yet (a reader still holds its bytes, which stay
	 * readable): never recover it after. Never fails. NULL: the
	 * medium does not survive a restart.
	 */
	void (*unseal)(struct medium *m, uint64_t off, uint64_t len);
	/*
	 * The len bytes at off, in memory. With buf NULL, a medium whose
	 * bytes are addressable lends them (valid while the allocation is
	 * held, no copy); one that cannot lend fails with MC_ERR_UNAVAILABLE.
	 * With buf, the bytes are copied into it and buf is returned.
	 */
	const void *(*read)(struct medium *m, uint64_t off, uint64_t len, void *buf,
			    struct mc_err *err);
	/*
	 * How a read's reply sends the len bytes at off: memory lent (valid
	 * while the allocation is held) or a descriptor's range, sent with
	 * sendfile, so a copy on disk never passes whole through memory.
	 */
	int (*source)(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_src *s,
		      struct mc_err *err);
	/*
	 * Where a write's bulk lands: a sink (mc/bulk.h) of the len bytes
	 * at off, that the caller releases with mc_bulk_sink_release. What
	 * it committed is the stored copy.
	 */
	int (*sink)(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_sink *s,
		    struct mc_err *err);
	/* Copy len bytes from buf to off (the mover's copy into its extent). */
	int (*write)(struct medium *m, uint64_t off, const void *buf, uint64_t len,
		     struct mc_err *err);
	/*
	 * A blocking medium's client copies, in and out, on a disk queue
	 * worker: as write and read (with a buffer), but kept where a sink's
	 * and a source's bytes are (on SSD, the page cache), so a copy just
	 * written or read often is read again without the device. NULL: the
	 * medium is not blocking.
	 */
	int (*store)(struct medium *m, uint64_t off, const void *buf, uint64_t len,
		     struct mc_err *err);
	int (*load)(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err);
	/*
	 * Make the copy of len bytes at off, whose bytes have landed,
	 * recoverable after a restart with meta; again rewrites what is
	 * kept (pins that came later). NULL: the medium does not survive a
	 * restart.
	 */
	int (*seal)(struct medium *m, uint64_t off, uint64_t len, const struct medium_meta *meta,
		    struct mc_err *err);
	/*
	 * Offer fn every sealed copy the medium holds whose bytes verify,
	 * once, after open and before any alloc (a medium that
	 * survives restarts hands out no space before it); what fn keeps
	 * stays allocated. Torn or corrupt copies are released and counted
	 * (corrupt), never offered. NULL: nothing survives.
	 */
	int (*recover)(struct medium *m, medium_found_fn fn, void *arg, struct mc_err *err);
	/* The directory the medium keeps its state in; NULL: none. */
	const char *(*dir)(struct medium *m);
	uint64_t (*capacity)(struct medium *m);
	/* Bytes allocated, in the medium's units (DRAM pages; SSD sectors, headers included). */
	uint64_t (*used)(struct medium *m);
	/*
	 * Ordering hooks. track puts a copy of len bytes at the warm end
	 * (when it becomes a candidate, and on every read: medium_touch);
	 * untrack takes it out (the copy is no longer a candidate); offer
	 * fills out with up to max copies, coldest first, and changes
	 * nothing. Each is O(1) but offer, O(max). Lock: the caller's.
	 */
	void (*track)(struct medium *m, struct medium_order *o, uint64_t len);
	void (*untrack)(struct medium *m, struct medium_order *o);
	size_t (*offer)(struct medium *m, struct medium_offer *out, size_t max);
};

/*
 * What a medium's own I/O did, for metrics: the copies and bytes it
 * read and wrote, the wall time spent in its reads and writes (what it
 * can measure: a reply's sendfile and a sink's pwrites run in the
 * connection, so a source or a sink counts its bytes when it is made,
 * not its time), and the copies found corrupt at recovery.
 */
#define MEDIUM_IO_FIELDS(X) \
	X(reads)            \
	X(read_bytes)       \
	X(read_ns)          \
	X(writes)           \
	X(write_bytes)      \
	X(write_ns)         \
	X(corrupt)

struct medium_io {
#define MEDIUM_IO_FIELD(f) uint64_t f;
	MEDIUM_IO_FIELDS(MEDIUM_IO_FIELD)
#undef MEDIUM_IO_FIELD
};

/* The head every medium's state starts with. */
struct medium {
	const struct medium_ops *ops;
	int tier; /* enum mc_tier */
	/*
	 * What a copy of len bytes takes in the medium, set by its open:
	 * len rounded up to page, plus per_copy (a header). The master
	 * accounts copies by it, so its sums match the medium's used.
	 */
	uint64_t page, per_copy;
	struct {
#define MEDIUM_IO_FIELD(f) _Atomic uint64_t f;
		MEDIUM_IO_FIELDS(MEDIUM_IO_FIELD)
#undef MEDIUM_IO_FIELD
	} io;
};

/* A snapshot of m's I/O counters. */
void medium_io(struct medium *m, struct medium_io *out);
/* Count one read (or write) of bytes that took ns (0: not measured). */
void medium_io_read(struct medium *m, uint64_t bytes, uint64_t ns);
void medium_io_write(struct medium *m, uint64_t bytes, uint64_t ns);

/* The operations of each tier that has a medium, NULL for the others. */
extern const struct medium_ops *const medium_types[MC_TIER_COUNT];

extern const struct medium_ops medium_dram;
extern const struct medium_ops medium_ssd;

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

/*
 * Copy the len bytes at from_off of from to to_off of to (the mover's
 * demotions and promotions, on a worker thread): straight from memory
 * from lends, else straight into memory that is to's sink, else through
 * to's sink's bounded staging buffer. Nothing is sealed.
 */
int medium_copy(struct medium *from, uint64_t from_off, struct medium *to, uint64_t to_off,
		uint64_t len, struct mc_err *err);

/* Open tier's medium; MC_ERR_INVALID for a tier this peer cannot hold. */
struct medium *medium_open(int tier, const struct medium_conf *conf, struct mc_err *err);

static inline void
medium_close(struct medium *m)
{
	if (m)
		m->ops->close(m);
}

static inline bool
medium_blocks(const struct medium *m)
{
	return m->ops->blocking;
}

static inline int
medium_store(struct medium *m, uint64_t off, const void *buf, uint64_t len, struct mc_err *err)
{
	return m->ops->store(m, off, buf, len, err);
}

static inline int
medium_load(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	return m->ops->load(m, off, len, buf, err);
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

static inline void
medium_unseal(struct medium *m, uint64_t off, uint64_t len)
{
	if (m->ops->unseal)
		m->ops->unseal(m, off, len);
}

static inline const void *
medium_read(struct medium *m, uint64_t off, uint64_t len, void *buf, struct mc_err *err)
{
	return m->ops->read(m, off, len, buf, err);
}

static inline int
medium_source(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_src *s,
	      struct mc_err *err)
{
	return m->ops->source(m, off, len, s, err);
}

static inline int
medium_sink(struct medium *m, uint64_t off, uint64_t len, struct mc_bulk_sink *s,
	    struct mc_err *err)
{
	return m->ops->sink(m, off, len, s, err);
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

static inline const char *
medium_dir(struct medium *m)
{
	return m->ops->dir ? m->ops->dir(m) : NULL;
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

/* What a copy of len bytes takes in m, in used's units (page-rounded, plus its header). */
static inline uint64_t
medium_footprint(const struct medium *m, uint64_t len)
{
	/* saturating: a length near 2^64 takes more than any medium has */
	return mc_add_sat(mc_round_up(len, m->page), m->per_copy);
}

static inline void
medium_track(struct medium *m, struct medium_order *o, uint64_t len)
{
	m->ops->track(m, o, len);
}

/*
 * A read of the copy: to the warm end when it is in the order, nothing
 * when it is not (a copy that is no candidate stays out). O(1).
 */
static inline void
medium_touch(struct medium *m, struct medium_order *o, uint64_t len)
{
	if (o->tracked)
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
