/*
 * Unit tests for the egress token bucket (libmc/rate.c) and its hook
 * in the connections (mc_conn_ops.egress): the burst, the refill
 * arithmetic on a forced clock (fractions of a byte carried, no wrap
 * with huge limits), a zero limit being none, the queue's turns and
 * what it counts, the timer that resumes a waiter, and a connection
 * that sends a reply no faster than its bucket fills.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/conn.h"
#include "mc/rate.h"
#include "mc/wire.h"
#include "tap.h"

#define MS 1000000ull

/* The forced clock every bucket here reads, in nanoseconds. */
static uint64_t fake_ns = 1000 * MS;

static uint64_t
fake_now(void *arg)
{
	(void)arg;
	return fake_ns;
}

static struct mc_rate *
bucket(struct event_base *base, uint64_t limit)
{
	struct mc_err err;
	struct mc_rate *r = mc_rate_new(base, limit, &err);

	if (r == NULL) {
		printf("Bail out! cannot make a bucket: %s\n", err.msg);
		exit(1);
	}
	mc_rate_set_clock(r, fake_now, NULL);
	return r;
}

/* Take all the bucket holds, when it is full. */
static size_t
drain(struct mc_rate *r, struct mc_rate_waiter *w)
{
	return mc_rate_take(r, w, SIZE_MAX);
}

/* The bucket holds exactly n bytes: a take of n gets them, and then nothing is left. */
static bool
holds(struct mc_rate *r, struct mc_rate_waiter *w, size_t n)
{
	return mc_rate_take(r, w, n) == n && mc_rate_take(r, w, 1) == 0;
}

static void
test_unlimited(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 0);
	struct mc_rate_waiter w = { 0 };
	struct mc_rate_stats st;

	TAP_OK(mc_rate_take(r, &w, SIZE_MAX) == SIZE_MAX && mc_rate_take(r, &w, 1) == 1,
	       "unlimited: a limit of 0 grants every take whole");
	mc_rate_wait(r, &w, 100);
	mc_rate_stats_get(r, &st);
	TAP_OK(!w.queued_ && st.waits == 0 && st.waiting == 0,
	       "unlimited: nobody waits on a limit of 0");
	TAP_OK(mc_rate_limit(r) == 0 && mc_rate_burst(r) == 0 && mc_rate_limit(NULL) == 0,
	       "unlimited: the limit reads 0, as does no bucket at all");
	mc_rate_free(r);
}

static void
test_burst(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 4u << 20);
	struct mc_rate *low = bucket(base, 100u << 10);
	struct mc_rate_waiter w = { 0 };

	TAP_OK(mc_rate_burst(r) == (4u << 20) / 100, "burst: one period (10 ms) of the limit");
	TAP_OK(mc_rate_burst(low) == MC_RATE_MIN_BURST,
	       "burst: a page at least, however low the limit");
	TAP_OK(drain(r, &w) == (4u << 20) / 100 && mc_rate_take(r, &w, 1) == 0,
	       "burst: a new bucket is full, then empty once taken");
	fake_ns += 3600000 * MS;
	TAP_OK(drain(r, &w) == mc_rate_burst(r), "burst: an hour idle fills it to the burst only");
	mc_rate_unused(r, SIZE_MAX);
	TAP_OK(drain(r, &w) == mc_rate_burst(r),
	       "burst: bytes given back fill it to the burst only");
	mc_rate_free(r);
	mc_rate_free(low);
}

static void
test_refill(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 1000000);
	struct mc_rate *slow = bucket(base, 3);
	struct mc_rate_waiter w = { 0 };
	size_t got = 0;

	drain(r, &w);
	fake_ns += 1 * MS;
	TAP_OK(mc_rate_take(r, &w, 1001) == 0 && holds(r, &w, 1000),
	       "refill: 1 ms at 1 MB/s brings 1000 bytes; a take of more waits for them all");
	fake_ns += MS / 2;
	TAP_OK(mc_rate_take(r, &w, 200) == 200 && holds(r, &w, 300),
	       "refill: a take gets what it asks when the bucket has it, the rest stays");
	fake_ns += 1 * MS;
	TAP_OK(mc_rate_take(r, &w, 600) == 600, "refill: a take of part of what is there");
	mc_rate_unused(r, 250);
	TAP_OK(holds(r, &w, 650), "refill: what a write did not send goes back");
	fake_ns += 10 * MS;
	TAP_OK(mc_rate_take(r, &w, SIZE_MAX) == 10000 && mc_rate_take(r, &w, 1) == 0,
	       "refill: a take of more than the burst gets the burst once the bucket is full");
	fake_ns += 4 * MS;
	TAP_OK(mc_rate_take(r, &w, SIZE_MAX) == 0, "refill: a big take waits for half a burst");
	fake_ns += 2 * MS;
	TAP_OK(mc_rate_take(r, &w, SIZE_MAX) == 6000,
	       "refill: then gets all there is, what its wake came late for too");

	drain(slow, &w);
	for (int k = 0; k < 10; k++) {
		fake_ns += 100 * MS;
		got += mc_rate_take(slow, &w, 1);
	}
	TAP_OK(got == 3, "refill: at 3 B/s, ten reads a tenth of a second apart earn 3 bytes");
	mc_rate_free(r);
	mc_rate_free(slow);
}

static void
test_huge(struct event_base *base)
{
	struct mc_rate *max = bucket(base, UINT64_MAX);
	struct mc_rate *giga = bucket(base, 5000000007ull);
	struct mc_rate_waiter w = { 0 };

	TAP_OK(mc_rate_burst(max) == UINT64_MAX / 100, "huge: the burst of 2^64 B/s does not wrap");
	drain(max, &w);
	fake_ns += 7200000 * MS;
	TAP_OK(drain(max, &w) == UINT64_MAX / 100,
	       "huge: two hours at 2^64 B/s saturate at the burst instead of wrapping");
	fake_ns += 3;
	TAP_OK(holds(max, &w, 55340232221ull), "huge: 3 ns at 2^64 B/s earn exactly their bytes");
	drain(giga, &w);
	fake_ns += 3;
	TAP_OK(holds(giga, &w, 15), "huge: 3 ns at 5 GB/s and 7 B/s earn 15 bytes");
	fake_ns += 1 * MS;
	TAP_OK(holds(giga, &w, 5000000), "huge: 1 ms at 5 GB/s earns 5 MB");
	mc_rate_free(max);
	mc_rate_free(giga);
}

/* ---- the queue ---- */

struct sender {
	struct mc_rate_waiter w; /* first: the wake finds its sender */
	struct mc_rate *r;
	char name;
	size_t left; /* bytes it still has to send */
	size_t sent;
};

static char order[64];
static size_t norder;

/* A sender's turn: take its share, and queue again if more is left. */
static void
sender_wake(struct mc_rate_waiter *w)
{
	struct sender *s = (struct sender *)w;
	size_t n = mc_rate_take(s->r, w, s->left);

	if (norder < sizeof(order) - 1)
		order[norder++] = s->name;
	s->left -= n;
	s->sent += n;
	if (s->left > 0 && mc_rate_take(s->r, w, s->left) == 0)
		mc_rate_wait(s->r, w, s->left);
}

static void
sender_init(struct sender *s, struct mc_rate *r, char name, size_t left)
{
	memset(s, 0, sizeof(*s));
	s->w.wake = sender_wake;
	s->r = r;
	s->name = name;
	s->left = left;
}

static void
test_turns(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 10000000); /* a burst of 100000: slices of 50000 shared */
	struct sender a, b, c;
	struct mc_rate_waiter d = { 0 };
	struct mc_rate_stats st;
	int ticks = 0;

	sender_init(&a, r, 'a', 50000);
	sender_init(&b, r, 'b', 50000);
	sender_init(&c, r, 'c', 50000);
	drain(r, &a.w);
	mc_rate_wait(r, &a.w, a.left);
	mc_rate_wait(r, &b.w, b.left);
	mc_rate_wait(r, &c.w, c.left);
	mc_rate_wait(r, &a.w, a.left);
	mc_rate_stats_get(r, &st);
	TAP_OK(st.waiting == 3 && st.waits == 3,
	       "turns: a sender queued twice keeps its one place");
	fake_ns += 20 * MS;
	TAP_OK(mc_rate_take(r, &d, 1) == 0,
	       "turns: a sender that did not queue gets nothing while others wait");
	norder = 0;
	mc_rate_tick(r);
	order[norder] = '\0';
	TAP_OK(strncmp(order, "abcabc", 6) == 0,
	       "turns: woken in the order they queued, each back at the end (%s)", order);
	TAP_OK(a.sent == 2 * (50000 / 3) && b.sent == a.sent,
	       "turns: one slice a turn, half the burst shared among the three in line");
	while ((a.left > 0 || b.left > 0 || c.left > 0) && ticks++ < 20) {
		fake_ns += 10 * MS;
		mc_rate_tick(r);
	}
	TAP_OK(a.sent == 50000 && b.sent == 50000 && c.sent == 50000 && ticks == 1,
	       "turns: each sent the rest of what it had at the next tick (%d)", ticks);
	mc_rate_stats_get(r, &st);
	TAP_OK(st.waiting == 0 && st.taken == 150000 + 100000,
	       "turns: all taken, nobody left waiting");
	fake_ns += 10 * MS;
	TAP_OK(drain(r, &d) == 100000, "turns: a sender alone takes all the bucket holds");
	mc_rate_free(r);
}

static void
test_stats_cancel(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 1000000); /* a burst of 10000 */
	struct sender a, b, c;
	struct mc_rate_stats st;

	sender_init(&a, r, 'a', 2000);
	sender_init(&b, r, 'b', 2000);
	sender_init(&c, r, 'c', 100);
	drain(r, &a.w);
	mc_rate_wait(r, &a.w, a.left);
	mc_rate_wait(r, &b.w, b.left);
	mc_rate_wait(r, &c.w, c.left);
	fake_ns += 2 * MS;
	norder = 0;
	mc_rate_tick(r); /* a, 2 ms after it queued: its 2000 bytes are in */
	fake_ns += 1 * MS;
	mc_rate_cancel(r, &b.w); /* b leaves after 3 ms */
	mc_rate_cancel(r, &b.w);
	fake_ns += MS / 10;
	mc_rate_tick(r); /* c needs only 100 bytes: 0.1 ms more is enough */
	order[norder] = '\0';
	mc_rate_stats_get(r, &st);
	TAP_OK(strcmp(order, "ac") == 0, "cancel: a cancelled sender is never woken (%s)", order);
	TAP_OK(a.sent == 2000 && c.sent == 100,
	       "share: a sender wanting less than a slice wakes once its bytes are back");
	TAP_OK(st.waits == 3 && st.waiting == 0, "stats: three waits, none left");
	TAP_OK(st.wait_ns == 2 * MS + 3 * MS + 3 * MS + MS / 10,
	       "stats: the time each waited, summed (%llu ns)", (unsigned long long)st.wait_ns);
	mc_rate_free(r);
}

/* A sender that queued for little and wants more by its turn. */
static size_t grown_got;

static void
grown_wake(struct mc_rate_waiter *w)
{
	struct sender *s = (struct sender *)w;

	grown_got = mc_rate_take(s->r, w, 50000);
}

static void
test_grown(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 1000000);
	struct sender a;

	sender_init(&a, r, 'a', 0);
	a.w.wake = grown_wake;
	drain(r, &a.w);
	mc_rate_wait(r, &a.w, 100);
	fake_ns += MS / 5;
	mc_rate_tick(r);
	TAP_OK(grown_got == 200,
	       "share: a sender woken for 100 bytes that wants more by then gets the 200 there");
	mc_rate_free(r);
}

/* ---- the timer, on the real clock ---- */

static int timer_woken;

static void
timer_wake(struct mc_rate_waiter *w)
{
	(void)w;
	timer_woken++;
}

static void
test_timer(struct event_base *base)
{
	struct mc_err err;
	struct mc_rate *r = mc_rate_new(base, 1000000, &err);
	struct mc_rate_waiter w = { .wake = timer_wake };
	uint64_t t0;

	drain(r, &w);
	t0 = mc_mono_ns();
	mc_rate_wait(r, &w, 10000);
	/* the bucket's timer is the only event: each pass runs it once */
	while (timer_woken == 0 && mc_mono_ns() - t0 < 2000 * MS)
		event_base_loop(base, EVLOOP_ONCE);
	TAP_OK(timer_woken == 1, "timer: the bucket's timer wakes a waiter by itself");
	TAP_OK(mc_mono_ns() - t0 >= 4 * MS,
	       "timer: not before its share is back (half a burst: 5 ms at 1 MB/s), took %llu us",
	       (unsigned long long)((mc_mono_ns() - t0) / 1000));
	mc_rate_free(r);
}

/* ---- a connection drawing from a bucket ---- */

#define REPLY_BYTES 50000
static unsigned char reply_bytes[REPLY_BYTES];

static void
h_get(struct mc_req *req)
{
	msgpack_packer *pk = mc_reply_ok_begin(req);

	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "len", REPLY_BYTES);
	mc_reply_end_bulk(req, reply_bytes, REPLY_BYTES, NULL, NULL);
}

static const struct mc_method methods[] = {
	{ "get", h_get, MC_METHOD_BULK },
	{ 0 },
};

/* Run the loop for ms of real time. */
static void
run_for(struct event_base *base, int ms)
{
	struct timeval tv = { 0, ms * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* What fd has for us now, added to *got. */
static void
read_all(int fd, size_t *got)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		*got += (size_t)n;
}

static void
test_conn(struct event_base *base)
{
	struct mc_rate *r = bucket(base, 1000000); /* a burst of 10000 */
	struct mc_registry *reg;
	struct mc_conn_ops ops = { 0 };
	struct mc_conn *c;
	struct mc_err err;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t got = 0, header;
	bool within = true;
	int sv[2], steps = 0;

	reg = mc_registry_new(NULL, &err);
	if (reg == NULL || mc_registry_add(reg, methods, &err) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		printf("Bail out! cannot set up a connection\n");
		exit(1);
	}
	fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
	ops.methods = reg;
	ops.egress = r;
	c = mc_conn_new(base, sv[0], &ops, NULL, &err);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	mc_pack_request(&pk, 1, "get");
	msgpack_pack_map(&pk, 0);
	TAP_OK(c != NULL && write(sv[1], sb.data, sb.size) == (ssize_t)sb.size,
	       "conn: a connection with a bucket is asked for 50000 bytes");
	run_for(base, 30);
	read_all(sv[1], &got);
	TAP_OK(got == 10000, "conn: with the clock stopped it sends one burst only (%zu)", got);
	fake_ns += 1 * MS;
	run_for(base, 30);
	read_all(sv[1], &got);
	TAP_OK(got == 10000,
	       "conn: a tenth of its share wakes nothing: it waits for the whole share");
	/* the reply: its header, then the bulk */
	msgpack_sbuffer_clear(&sb);
	mc_pack_response_ok(&pk, 1);
	msgpack_pack_map(&pk, 1);
	mc_pack_kv_u64(&pk, "len", REPLY_BYTES);
	header = sb.size;
	while (got < header + REPLY_BYTES && steps < 20) {
		fake_ns += 10 * MS;
		steps++;
		run_for(base, 30);
		read_all(sv[1], &got);
		within &= got <= 10000u * (steps + 1);
	}
	TAP_OK(within && got == header + REPLY_BYTES,
	       "conn: each 10 ms of the clock lets 10000 bytes more go, no more (%zu in %d steps)",
	       got, steps);
	TAP_OK(steps == 5,
	       "conn: the whole reply took its 5 periods, the last for the header's bytes");
	mc_conn_close(c, false);
	close(sv[1]);
	msgpack_sbuffer_destroy(&sb);
	mc_registry_free(reg);
	mc_rate_free(r);
}

int
main(void)
{
	struct event_base *base = event_base_new();

	if (base == NULL) {
		printf("Bail out! no event base\n");
		return 1;
	}
	test_unlimited(base);
	test_burst(base);
	test_refill(base);
	test_huge(base);
	test_turns(base);
	test_stats_cancel(base);
	test_grown(base);
	test_timer(base);
	test_conn(base);
	event_base_free(base);
	return tap_done();
}
