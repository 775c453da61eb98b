/*
 * A token bucket on what a set of connections sends: a daemon's egress
 * limit, shared by every connection that draws from it, since a NIC
 * limits their sum and not each of them.
 *
 * The bucket fills at the limit, in bytes a second, on the monotonic
 * clock, and holds at most its burst (mc_rate_burst): one period
 * (MC_RATE_PERIOD_MS) of the limit. A sender takes what it is about to
 * write (mc_rate_take) and gives back what the write did not take
 * (mc_rate_unused). One that finds too little there queues itself
 * (mc_rate_wait) and writes nothing more; the bucket's timer, on its
 * event loop, wakes the queue's head once its share is back, then the
 * next, in the order they queued; each takes one slice a turn and, when
 * it needs more, goes to the back, so one reader cannot starve the
 * others, and a round of the line takes half a period.
 * While anyone waits, a sender that did not queue gets nothing either:
 * it joins the queue's end instead of jumping it.
 *
 * A limit of 0 is no limit: every take is granted whole and nobody
 * waits. Arithmetic saturates (mc/checked.h), so a limit near 2^64
 * bytes a second is as good as none rather than wrapping to a small
 * one.
 *
 * A bucket belongs to one event loop, as the connections it serves do:
 * nothing here is safe to call from another thread.
 */
#ifndef MC_RATE_H
#define MC_RATE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mc/err.h"

/*
 * The burst is one period of the limit: over any window the link
 * carries the limit plus at most one period's worth, a spike no longer
 * than 10 ms, which a NIC's queue takes in its stride; and a throttled
 * stream alone, woken when half a burst is back (mc_rate_take), writes
 * at least half a period's worth at a time, so it costs some 200 timers
 * and writes a second, however many bytes that is.
 */
#define MC_RATE_PERIOD_MS 10
/*
 * The least burst: under 400 KiB/s a period is less than a page, and
 * waking a stream to write a few bytes costs more than it saves.
 */
#define MC_RATE_MIN_BURST 4096u

struct mc_rate;

/* A sender that may wait for tokens: embedded in the sender, owned by it. */
struct mc_rate_waiter {
	/* Called from the bucket's timer when it is this sender's turn. */
	void (*wake)(struct mc_rate_waiter *w);
	/* private: the queue, what it asked for, and since when it waits */
	struct mc_rate_waiter *prev_, *next_;
	bool queued_;
	size_t want_;
	uint64_t since_ns_;
};

/* Totals since the bucket was made. */
struct mc_rate_stats {
	uint64_t waits;	  /* times a sender queued for tokens */
	uint64_t wait_ns; /* time senders spent queued, summed over them (ended waits) */
	uint64_t taken;	  /* bytes granted and not given back */
	uint64_t waiting; /* senders queued now */
};

/* A bucket of bytes_per_sec (0: no limit), full, its timer on base. NULL with err. */
struct mc_rate *mc_rate_new(struct event_base *base, uint64_t bytes_per_sec, struct mc_err *err);
/* Senders must have cancelled their waits first (or be gone); never from a wake. */
void mc_rate_free(struct mc_rate *r);
/* The limit in bytes a second (0: none); r NULL has none. */
uint64_t mc_rate_limit(const struct mc_rate *r);
/* The most the bucket holds, in bytes (0 with no limit). */
uint64_t mc_rate_burst(const struct mc_rate *r);
/*
 * For tests, before anyone takes: read the time from now(arg),
 * nanoseconds that never go back, instead of the monotonic clock. The
 * bucket starts again full.
 */
void mc_rate_set_clock(struct mc_rate *r, uint64_t (*now)(void *arg), void *arg);

/*
 * Up to want bytes w may send now, taken from the bucket, once it holds
 * w's share: want, at most a slice (half the burst, so that a late wake
 * loses nothing to a full bucket, divided among the senders in line,
 * half a page at least). Then w gets all there is when nobody else
 * waits, its share when others do. 0 before that, or when others wait
 * and w's turn has not come, or w took its turn already: w then waits
 * (mc_rate_wait) before it sends anything, so no sender writes in
 * dribbles.
 */
size_t mc_rate_take(struct mc_rate *r, struct mc_rate_waiter *w, size_t want);
/* A write sent n bytes fewer than were taken for it: they go back. */
void mc_rate_unused(struct mc_rate *r, size_t n);
/*
 * Queue w for want bytes: its wake runs from the bucket's timer, once,
 * when its turn comes and its share is there. A sender already queued
 * keeps its place.
 */
void mc_rate_wait(struct mc_rate *r, struct mc_rate_waiter *w, size_t want);
/* w waits no more (it is closing); nothing when it was not queued. */
void mc_rate_cancel(struct mc_rate *r, struct mc_rate_waiter *w);
/*
 * Wake the senders whose turn has come, as the timer does; the timer is
 * armed again for the next. Tests call it to step a bucket by hand.
 */
void mc_rate_tick(struct mc_rate *r);
void mc_rate_stats_get(const struct mc_rate *r, struct mc_rate_stats *out);

#endif
