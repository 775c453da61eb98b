/*
 * Unit tests for the heat window of dynamic hot replication
 * (libmc/heat.c): the sliding count, the one trigger a key gets
 * when it crosses the threshold and again only a window after it was
 * judged, requester domains counted apart, the table bounded at its
 * entry limit with a flood of cold keys replacing only cold entries of
 * their own set, stale triggers skipped, a full ring of triggers
 * dropping instead of growing, and the top entries in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/heat.h"
#include "mc/checksum.h"
#include "tap.h"

#define NOW 1700000000000ull
#define WIN 10000ull /* a window of 10 s */

static bool
rec(struct heat *h, const char *key, const char *domain, uint64_t now)
{
	size_t klen = strlen(key), dlen = domain != NULL ? strlen(domain) : 0;

	return heat_record(h, 0, mc_hash64(key, klen, 0), key, klen, domain, dlen, now);
}

/* The entry of key (and domain) by a walk of the table: tests only. */
static const struct heat_entry *
find(const struct heat *h, const char *key, const char *domain)
{
	size_t klen = strlen(key), dlen;

	if (domain == NULL)
		domain = "";
	dlen = strlen(domain);

	for (size_t i = 0; i < h->nsets * HEAT_WAYS; i++) {
		const struct heat_entry *e = &h->e[i];

		if (e->hash != 0 && e->klen == klen && e->dlen == dlen &&
		    memcmp(e->name, key, klen) == 0 &&
		    (dlen == 0 || memcmp(e->name + klen, domain, dlen) == 0))
			return e;
	}
	return NULL;
}

static void
test_threshold_and_trigger(void)
{
	struct heat h;
	struct mc_err err;
	uint32_t slot = 0;
	int queued = 0;

	TAP_OK(heat_init(&h, 64, WIN, 8, &err) == 0, "a window of 64 entries over 10 s, hot at 8");
	for (int i = 0; i < 7; i++)
		queued += rec(&h, "k", NULL, NOW + (uint64_t)i);
	TAP_OK(queued == 0 && h.n == 0, "below-threshold reads queue nothing");
	TAP_OK(rec(&h, "k", NULL, NOW + 7) && h.n == 1,
	       "the read that crosses the threshold queues it");
	for (int i = 0; i < 20; i++)
		queued += rec(&h, "k", NULL, NOW + 8 + (uint64_t)i);
	TAP_OK(queued == 0 && h.n == 1, "reads after it queue it no second time while it waits");
	struct heat_entry *e = heat_next(&h, &slot);
	TAP_OK(e != NULL && e->klen == 1 && e->name[0] == 'k' && heat_next(&h, &slot) == NULL,
	       "the worker takes the one trigger");
	heat_judged(&h, slot, NOW + 100);
	for (int i = 0; i < 20; i++)
		queued += rec(&h, "k", NULL, NOW + 200 + (uint64_t)i);
	TAP_OK(queued == 0, "judged, a hot key is not queued again within a window");
	TAP_OK(rec(&h, "k", NULL, NOW + 100 + WIN),
	       "one window after its judgement it is queued again");
	heat_free(&h);
	TAP_OK(heat_init(&h, 64, WIN, 0, &err) == 0 && rec(&h, "once", NULL, NOW),
	       "a threshold of 0 is taken as 1: the first read queues");
	heat_free(&h);
	TAP_OK(heat_init(&h, 0, WIN, 1, &err) != 0 && heat_init(&h, 8, 0, 1, &err) != 0,
	       "no entries or no window is refused: %s", err.msg);
}

static void
test_sliding_count(void)
{
	struct heat h;
	struct mc_err err;
	const struct heat_entry *e;

	heat_init(&h, 64, WIN, 1000, &err);
	for (int i = 0; i < 100; i++)
		rec(&h, "s", NULL, NOW);
	e = find(&h, "s", NULL);
	TAP_OK(e != NULL && heat_count(&h, e, NOW + WIN / 2) == 100,
	       "reads of the current bucket count whole");
	TAP_OK(heat_count(&h, e, NOW + WIN + WIN / 4) == 75,
	       "a quarter into the next bucket, three quarters of the last one count");
	TAP_OK(heat_count(&h, e, NOW + 2 * WIN) == 0, "two windows on, nothing counts");
	rec(&h, "s", NULL, NOW + WIN + WIN / 2);
	TAP_OK(heat_count(&h, e, NOW + WIN + WIN / 2) == 51,
	       "a read in the next bucket adds to half of the last one");
	rec(&h, "s", NULL, NOW + 5 * WIN);
	TAP_OK(heat_count(&h, e, NOW + 5 * WIN) == 1, "after a long pause the count starts over");
	heat_free(&h);
}

static void
test_domains(void)
{
	struct heat h;
	struct mc_err err;
	int a = 0, b = 0;

	heat_init(&h, 64, WIN, 5, &err);
	for (int i = 0; i < 5; i++)
		a += rec(&h, "k", "domain-a", NOW);
	for (int i = 0; i < 4; i++)
		b += rec(&h, "k", "domain-b", NOW);
	TAP_OK(a == 1 && b == 0, "a key is hot from one domain and not from another");
	TAP_OK(heat_count(&h, find(&h, "k", "domain-a"), NOW) == 5 &&
		       heat_count(&h, find(&h, "k", "domain-b"), NOW) == 4 &&
		       find(&h, "k", NULL) == NULL,
	       "each requester domain has its own count");
	heat_free(&h);
}

static void
test_bounded(void)
{
	struct heat h;
	struct mc_err err;
	char key[32];
	const struct heat_entry *hot;

	heat_init(&h, 256, WIN, 1000000, &err);
	for (int i = 0; i < 50; i++)
		rec(&h, "hot", NULL, NOW);
	for (int i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "cold-%d", i);
		rec(&h, key, NULL, NOW + 1);
	}
	hot = find(&h, "hot", NULL);
	TAP_OK(h.live <= h.nsets * HEAT_WAYS && h.nsets * HEAT_WAYS == 256,
	       "heat-window cleanup is bounded at the entry limit: 100,000 keys in a window of "
	       "256 entries hold 256 at most (%zu)",
	       h.live);
	TAP_OK(h.replaced >= 100000 - 256,
	       "and avoids a full read-path scan: the flood replaced entries of its keys' own "
	       "sets (%llu)",
	       (unsigned long long)h.replaced);
	TAP_OK(hot != NULL && heat_count(&h, hot, NOW + 1) == 50,
	       "the hot key kept its slot: cold keys took the coldest of their set");
	heat_free(&h);
}

static void
test_stale_and_full(void)
{
	struct heat h;
	struct mc_err err;
	uint32_t slot;
	char key[32];
	struct heat_entry *e;
	size_t queued = 0;

	/* one set: a new key takes the slot of the coolest */
	heat_init(&h, HEAT_WAYS, WIN, 1, &err);
	rec(&h, "gone", NULL, NOW);
	for (int i = 0; i < HEAT_WAYS; i++) {
		snprintf(key, sizeof(key), "w%d", i);
		rec(&h, key, NULL, NOW + 2 * WIN);
	}
	TAP_OK(find(&h, "gone", NULL) == NULL, "an idle entry lost its slot to another key");
	e = heat_next(&h, &slot);
	TAP_OK(e != NULL && !(e->klen == 4 && memcmp(e->name, "gone", 4) == 0),
	       "the replaced entry's trigger is skipped as stale");
	heat_free(&h);

	heat_init(&h, 1u << 16, WIN, 1, &err);
	for (unsigned i = 0; i < HEAT_TRIGGERS_MAX + 10; i++) {
		snprintf(key, sizeof(key), "t%u", i);
		queued += rec(&h, key, NULL, NOW);
	}
	TAP_OK(queued == HEAT_TRIGGERS_MAX && h.triggers_dropped == 10,
	       "a full ring drops triggers instead of growing (%zu queued)", queued);
	heat_free(&h);
}

static void
test_top(void)
{
	struct heat h;
	struct mc_err err;
	const struct heat_entry *top[3];
	size_t n;

	heat_init(&h, 64, WIN, 1000, &err);
	for (int k = 1; k <= 5; k++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", k);
		for (int i = 0; i < k * 10; i++)
			rec(&h, key, NULL, NOW);
	}
	n = heat_top(&h, NOW, top, 3);
	TAP_OK(n == 3 && top[0]->name[1] == '5' && top[1]->name[1] == '4' && top[2]->name[1] == '3',
	       "the top three, hottest first");
	TAP_OK(heat_top(&h, NOW + 3 * WIN, top, 3) == 0, "cold entries are not in the top");
	heat_clear(&h);
	TAP_OK(h.live == 0 && heat_top(&h, NOW, top, 3) == 0, "a cleared window holds nothing");
	heat_free(&h);
}

int
main(void)
{
	test_threshold_and_trigger();
	test_sliding_count();
	test_domains();
	test_bounded();
	test_stale_and_full();
	test_top();
	return tap_done();
}
