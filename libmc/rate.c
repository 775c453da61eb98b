/*
 * The token bucket (mc/rate.h). Tokens are bytes. The bucket is filled
 * lazily, from the time passed since it was last filled, whenever it is
 * taken from; the fraction of a byte that time earned is carried to the
 * next fill, so a limit of a few bytes a second still adds up when the
 * bucket is read far more often than it gains one.
 *
 * The queue is a FIFO of waiters. Its timer is armed whenever someone
 * waits, for when the head's share (what it asked for, at most a
 * slice) will be in the bucket; a tick wakes heads while their shares
 * are there. A woken sender is off the queue during its wake and takes
 * one slice; when it has more to send it queues again, at the back. The
 * bucket belongs to one event loop, like the connections it serves.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/clock.h"
#include "mc/log.h"
#include "mc/rate.h"

#define NS_PER_S 1000000000u
/* the timer's finest step: epoll counts in milliseconds, a shorter wait spins */
#define TICK_MIN_NS 1000000u
#define MIN_SLICE (MC_RATE_MIN_BURST / 2)

struct mc_rate {
	struct event_base *base;
	struct event *timer;
	uint64_t limit; /* bytes a second; 0: none */
	uint64_t burst;
	uint64_t tokens;
	uint64_t filled_ns; /* when tokens were last brought up to date */
	uint64_t frac;	    /* of a byte, in billionths, earned but not yet a whole one */
	uint64_t (*now)(void *arg);
	void *now_arg;
	struct mc_rate_waiter *head, *tail;
	struct mc_rate_waiter *waking; /* the sender whose wake runs now, or NULL */
	struct mc_rate_stats st;
};

static uint64_t
mono_now(void *arg)
{
	(void)arg;
	return mc_mono_ns();
}

/*
 * Bytes that ns of time earn at limit, plus the carried fraction in
 * *frac (billionths of a byte), which keeps what is left over. limit
 * is split into whole gigabytes a second and the rest so that no
 * product can wrap: ns is split into seconds and the rest likewise,
 * and only the two parts under a billion meet in a plain product.
 */
static uint64_t
earned(uint64_t limit, uint64_t ns, uint64_t *frac)
{
	uint64_t secs = ns / NS_PER_S, sub = ns % NS_PER_S;
	uint64_t giga = limit / NS_PER_S, rest = limit % NS_PER_S;
	uint64_t parts = sub * rest + *frac; /* < 10^18 + 10^9: fits */
	uint64_t n;

	n = mc_mul_sat(secs, limit);
	n = mc_add_sat(n, mc_mul_sat(sub, giga));
	n = mc_add_sat(n, parts / NS_PER_S);
	*frac = parts % NS_PER_S;
	return n;
}

/* Bring the tokens up to now, never past the burst. */
static void
fill(struct mc_rate *r)
{
	uint64_t now = r->now(r->now_arg);

	if (now <= r->filled_ns)
		return;
	r->tokens = mc_add_sat(r->tokens, earned(r->limit, now - r->filled_ns, &r->frac));
	r->filled_ns = now;
	if (r->tokens >= r->burst) {
		r->tokens = r->burst;
		r->frac = 0;
	}
}

/*
 * What one turn gives a sender while others wait: half the burst,
 * shared among the senders in line (the one being woken counts), so a
 * round of them all takes half a period however many there are, down
 * to a slice of half a page, which keeps each write worth its cost (a
 * floor reached past ten readers in line at 4 MiB/s, past 2500 at
 * 1 GiB/s; rounds then grow with the line). Half, not all of
 * the burst, because the timer that wakes them runs a millisecond or
 * two late: the bucket keeps filling meanwhile, which it could not past
 * a full burst, and the late time would be lost to the limit (a sixth
 * of it, with a 10 ms burst).
 */
static uint64_t
slice(const struct mc_rate *r)
{
	uint64_t half = r->burst / 2;
	uint64_t in_line = r->st.waiting + (r->waking != NULL);
	uint64_t s = in_line > 1 ? half / in_line : half;

	return s > MIN_SLICE ? s : MIN_SLICE;
}

/* What a sender of want bytes waits for: want, at most a slice, at least a byte. */
static uint64_t
share(const struct mc_rate *r, size_t want)
{
	uint64_t s = slice(r);

	if (want == 0)
		return 1;
	return want < s ? want : s;
}

/* Arm the timer for when the head's share is in the bucket. */
static void
arm(struct mc_rate *r)
{
	uint64_t need, ns = TICK_MIN_NS;
	struct timeval tv;

	if (r->head == NULL) {
		evtimer_del(r->timer);
		return;
	}
	need = share(r, r->head->want_);
	if (need > r->tokens) {
		/*
		 * A product that saturates (a deficit over 18 GB) only makes
		 * the wait too short: the tick then finds too little and arms
		 * again.
		 */
		uint64_t wait = mc_div_up(mc_mul_sat(need - r->tokens, NS_PER_S), r->limit);

		if (wait > ns)
			ns = wait;
	}
	tv.tv_sec = (time_t)(ns / NS_PER_S);
	tv.tv_usec = (suseconds_t)(ns % NS_PER_S / 1000u);
	if (evtimer_add(r->timer, &tv) != 0)
		mc_warn("cannot arm the egress limit's timer: its waiters stall");
}

static void
unlink_waiter(struct mc_rate *r, struct mc_rate_waiter *w)
{
	if (w->prev_ != NULL)
		w->prev_->next_ = w->next_;
	else
		r->head = w->next_;
	if (w->next_ != NULL)
		w->next_->prev_ = w->prev_;
	else
		r->tail = w->prev_;
	w->prev_ = w->next_ = NULL;
	w->queued_ = false;
	r->st.waiting--;
	if (r->filled_ns > w->since_ns_)
		r->st.wait_ns = mc_add_sat(r->st.wait_ns, r->filled_ns - w->since_ns_);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mc_rate_tick(arg);
}

struct mc_rate *
mc_rate_new(struct event_base *base, uint64_t bytes_per_sec, struct mc_err *err)
{
	struct mc_rate *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot allocate an egress limit");
		return NULL;
	}
	r->base = base;
	r->timer = evtimer_new(base, on_timer, r);
	if (r->timer == NULL) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot make the egress limit's timer");
		free(r);
		return NULL;
	}
	r->limit = bytes_per_sec;
	if (bytes_per_sec > 0) {
		r->burst = bytes_per_sec / (1000u / MC_RATE_PERIOD_MS);
		if (r->burst < MC_RATE_MIN_BURST)
			r->burst = MC_RATE_MIN_BURST;
	}
	mc_rate_set_clock(r, mono_now, NULL);
	return r;
}

void
mc_rate_free(struct mc_rate *r)
{
	if (r == NULL)
		return;
	event_free(r->timer);
	free(r);
}

uint64_t
mc_rate_limit(const struct mc_rate *r)
{
	return r != NULL ? r->limit : 0;
}

uint64_t
mc_rate_burst(const struct mc_rate *r)
{
	return r != NULL ? r->burst : 0;
}

void
mc_rate_set_clock(struct mc_rate *r, uint64_t (*now)(void *arg), void *arg)
{
	r->now = now;
	r->now_arg = arg;
	r->filled_ns = now(arg);
	r->tokens = r->burst;
	r->frac = 0;
}

size_t
mc_rate_take(struct mc_rate *r, struct mc_rate_waiter *w, size_t want)
{
	/* a woken sender was promised the share it queued for, though it may want more now */
	size_t promised = w == r->waking && w->want_ < want ? w->want_ : want;
	size_t n;

	if (r->limit == 0)
		return want;
	/* a sender queued, or one behind those queued, waits its turn */
	if (w->queued_ || (r->head != NULL && w != r->waking))
		return 0;
	fill(r);
	/*
	 * The bucket earns a few bytes every microsecond: granting what is
	 * there would have a sender write dribbles in a busy loop. It
	 * waits for its whole share instead.
	 */
	if (want == 0 || r->tokens < share(r, promised))
		return 0;
	n = want < r->tokens ? want : (size_t)r->tokens;
	/* with others in line, one slice a turn; alone, all there is */
	if (r->head != NULL && n > share(r, want))
		n = (size_t)share(r, want);
	/* the turn is taken: a second take goes to the back of the line */
	if (w == r->waking)
		r->waking = NULL;
	r->tokens -= n;
	r->st.taken += n;
	return n;
}

void
mc_rate_unused(struct mc_rate *r, size_t n)
{
	if (r->limit == 0 || n == 0)
		return;
	r->st.taken -= n < r->st.taken ? n : r->st.taken;
	r->tokens = mc_add_sat(r->tokens, n);
	if (r->tokens > r->burst)
		r->tokens = r->burst;
}

void
mc_rate_wait(struct mc_rate *r, struct mc_rate_waiter *w, size_t want)
{
	if (r->limit == 0 || w->queued_)
		return;
	fill(r);
	w->want_ = want;
	w->since_ns_ = r->filled_ns;
	w->queued_ = true;
	w->next_ = NULL;
	w->prev_ = r->tail;
	if (r->tail != NULL)
		r->tail->next_ = w;
	else
		r->head = w;
	r->tail = w;
	r->st.waits++;
	r->st.waiting++;
	/* the first waiter starts the timer; behind others it is armed already */
	if (r->head == w)
		arm(r);
}

void
mc_rate_cancel(struct mc_rate *r, struct mc_rate_waiter *w)
{
	bool was_head;

	if (r == NULL || !w->queued_)
		return;
	was_head = r->head == w;
	fill(r);
	unlink_waiter(r, w);
	if (was_head)
		arm(r);
}

void
mc_rate_tick(struct mc_rate *r)
{
	fill(r);
	/*
	 * Each wake takes its share, or queues again behind the others
	 * for one that is not there: the loop ends when the head's share
	 * is not there.
	 */
	while (r->head != NULL && r->tokens >= share(r, r->head->want_)) {
		struct mc_rate_waiter *w = r->head;

		unlink_waiter(r, w);
		r->waking = w;
		w->wake(w);
		r->waking = NULL;
		fill(r);
	}
	arm(r);
}

void
mc_rate_stats_get(const struct mc_rate *r, struct mc_rate_stats *out)
{
	if (r == NULL) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = r->st;
}
