/* Unit tests for the open-addressing hash table (libmc/hash.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc/checksum.h"
#include "mc/hash.h"
#include "tap.h"

struct item {
	uint64_t key;
	int seen;
	bool present;
};

static bool
item_eq(const void *entry, const void *key)
{
	return ((const struct item *)entry)->key == *(const uint64_t *)key;
}

static uint64_t
key_hash(uint64_t key)
{
	return mc_hash64(&key, sizeof(key), 42);
}

static void
test_million(void)
{
	enum { N = 1000000 };
	struct mc_htab h;
	struct item *items = calloc(N, sizeof(*items));
	size_t i, bad = 0, found = 0;
	clock_t t0 = clock();

	mc_htab_init(&h);
	if (items == NULL) {
		TAP_OK(0, "million: allocate items");
		return;
	}
	for (i = 0; i < N; i++) {
		items[i].key = i * 7919 + 3;
		if (mc_htab_insert(&h, key_hash(items[i].key), &items[i]) < 0)
			bad++;
		items[i].present = true;
	}
	TAP_OK(bad == 0 && h.count == N, "million: 1M inserts all succeed and count is 1M");
	TAP_OK((h.cap & (h.cap - 1)) == 0 && h.count <= h.cap * 3 / 4,
	       "million: capacity is a power of two and load stays at or below 3/4");
	bad = 0;
	for (i = 0; i < N; i++)
		if (mc_htab_find(&h, key_hash(items[i].key), item_eq, &items[i].key) != &items[i])
			bad++;
	TAP_OK(bad == 0, "million: every inserted key is found as its own entry");
	bad = 0;
	for (i = 0; i < N; i++) {
		uint64_t k = i * 7919 + 4; /* never inserted */

		if (mc_htab_find(&h, key_hash(k), item_eq, &k) != NULL)
			bad++;
	}
	TAP_OK(bad == 0, "million: 1M absent keys are not found");
	bad = 0;
	for (i = 0; i < N; i += 3) {
		if (mc_htab_remove(&h, key_hash(items[i].key), item_eq, &items[i].key) != &items[i])
			bad++;
		items[i].present = false;
	}
	TAP_OK(bad == 0, "million: removing every third key returns its entry");
	bad = 0;
	for (i = 0; i < N; i++) {
		void *e = mc_htab_find(&h, key_hash(items[i].key), item_eq, &items[i].key);

		if (e != (items[i].present ? &items[i] : NULL))
			bad++;
		found += items[i].present;
	}
	TAP_OK(bad == 0 && h.count == found,
	       "million: after removals finds match the reference exactly");
	{
		uint64_t k = items[0].key;

		TAP_OK(mc_htab_remove(&h, key_hash(k), item_eq, &k) == NULL,
		       "million: removing an absent key returns NULL");
	}
	TAP_OK(mc_htab_memory(&h) == h.cap * 16, "million: memory is 16 bytes a slot");
	TAP_OK((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0,
	       "million: 4M operations take under 5 s of CPU");
	mc_htab_free(&h);
	TAP_OK(h.cap == 0 && h.count == 0 && h.slots == NULL, "free: leaves an empty table");
	free(items);
}

/*
 * Iterate, removing every other entry through remove_at; every entry must
 * be visited exactly once and exactly the removed ones must be gone.
 */
static int
walk_remove_alternate(struct mc_htab *h, struct item *items, size_t n, size_t *removed)
{
	size_t cursor = 0, visits = 0, i;
	struct item *it;
	int ok = 1;

	*removed = 0;
	for (i = 0; i < n; i++)
		items[i].seen = 0;
	while ((it = mc_htab_next(h, &cursor)) != NULL) {
		it->seen++;
		if (visits++ % 2 == 1) {
			mc_htab_remove_at(h, &cursor);
			it->present = false;
			(*removed)++;
		}
	}
	for (i = 0; i < n; i++) {
		if (items[i].seen != 1)
			ok = 0;
		if (mc_htab_find(h, key_hash(items[i].key), item_eq, &items[i].key) !=
		    (items[i].present ? &items[i] : NULL))
			ok = 0;
	}
	return ok && visits == n;
}

static void
test_iterate_remove(void)
{
	enum { N = 200000 };
	struct mc_htab h;
	struct item *items = calloc(N, sizeof(*items));
	size_t i, removed, cursor = 0, n = 0;

	mc_htab_init(&h);
	TAP_OK(mc_htab_next(&h, &cursor) == NULL, "iterate: an empty table yields nothing");
	for (i = 0; i < N; i++) {
		items[i].key = i;
		items[i].present = true;
		mc_htab_insert(&h, key_hash(i), &items[i]);
	}
	cursor = 0;
	while (mc_htab_next(&h, &cursor) != NULL)
		n++;
	TAP_OK(n == N, "iterate: a plain walk visits every entry once");
	TAP_OK(walk_remove_alternate(&h, items, N, &removed) && h.count == N - removed &&
		       removed == N / 2,
	       "iterate: removing every other entry visits all exactly once");
	mc_htab_free(&h);
	free(items);
}

/*
 * Clusters that wrap from the last slot to slot 0 are where a walk that
 * removes goes wrong; force them with hashes whose homes crowd the end
 * of a small table, over many random shapes.
 */
static void
test_iterate_wrap(void)
{
	enum { ROUNDS = 5000, M = 12 };
	struct item items[M];
	int round, ok = 1, wrapped = 0;

	for (round = 0; round < ROUNDS && ok; round++) {
		struct mc_htab h;
		size_t i;

		mc_htab_init(&h);
		mc_htab_reserve(&h, M); /* 16 slots */
		for (i = 0; i < M; i++) {
			uint64_t home = 16 - 1 - tap_rng() % 6;

			items[i].key = (tap_rng() << 4) | home;
			items[i].present = true;
			/* the key is its own hash so the home slot is chosen */
			mc_htab_insert(&h, items[i].key, &items[i]);
		}
		if (h.slots[0].hash != 0 && h.slots[15].hash != 0)
			wrapped++;
		/* item_eq compares keys; lookups here use the key as the hash */
		{
			size_t cursor = 0, visits = 0, removed = 0;
			struct item *it;

			for (i = 0; i < M; i++)
				items[i].seen = 0;
			while ((it = mc_htab_next(&h, &cursor)) != NULL) {
				it->seen++;
				if ((visits++ + (size_t)round) % 2 == 1) {
					mc_htab_remove_at(&h, &cursor);
					it->present = false;
					removed++;
				}
			}
			for (i = 0; i < M; i++) {
				if (items[i].seen != 1)
					ok = 0;
				if (mc_htab_find(&h, items[i].key, item_eq, &items[i].key) !=
				    (items[i].present ? &items[i] : NULL))
					ok = 0;
			}
			if (visits != M || h.count != M - removed)
				ok = 0;
		}
		mc_htab_free(&h);
	}
	TAP_OK(ok, "iterate: removing during a walk over wrapping clusters visits each once");
	TAP_OK(wrapped > ROUNDS / 2, "iterate: the wrap test really built wrapping clusters");
}

static void
test_hash_zero(void)
{
	struct mc_htab h;
	struct item a = { .key = 1 }, b = { .key = 2 };
	uint64_t ka = 1, kb = 2;

	mc_htab_init(&h);
	TAP_OK(mc_htab_find(&h, 0, item_eq, &ka) == NULL, "hash 0: find in an empty table is NULL");
	mc_htab_insert(&h, 0, &a);
	mc_htab_insert(&h, 1, &b);
	TAP_OK(mc_htab_find(&h, 0, item_eq, &ka) == &a, "hash 0: an entry hashed 0 is found");
	TAP_OK(mc_htab_find(&h, 1, item_eq, &kb) == &b,
	       "hash 0: an entry hashed 1 is told apart from one hashed 0");
	TAP_OK(mc_htab_remove(&h, 0, item_eq, &ka) == &a && h.count == 1,
	       "hash 0: an entry hashed 0 is removed");
	TAP_OK(mc_htab_find(&h, 1, item_eq, &kb) == &b, "hash 0: the other entry survives");
	mc_htab_free(&h);
}

static void
test_reserve(void)
{
	enum { N = 1000 };
	struct mc_htab h;
	struct item items[N];
	struct mc_htab_slot *slots;
	size_t i;

	mc_htab_init(&h);
	TAP_OK(mc_htab_reserve(&h, N) == 0 && h.cap >= N * 4 / 3 && (h.cap & (h.cap - 1)) == 0,
	       "reserve: sizes a power of two holding N at 3/4 load");
	slots = h.slots;
	for (i = 0; i < N; i++) {
		items[i].key = i;
		mc_htab_insert(&h, key_hash(i), &items[i]);
	}
	TAP_OK(h.slots == slots, "reserve: inserting N entries does not reallocate");
	TAP_OK(mc_htab_reserve(&h, 10) == 0 && h.slots == slots,
	       "reserve: a smaller reservation never shrinks");
	mc_htab_insert(&h, key_hash(N), &items[0]);
	for (i = 0; i < N; i++)
		if (mc_htab_find(&h, key_hash(i), item_eq, &items[i].key) != &items[i])
			break;
	TAP_OK(i == N, "reserve: entries survive growth past the reservation");
	TAP_OK(mc_htab_reserve(&h, SIZE_MAX) == -1, "reserve: an impossible size fails with -1");
	mc_htab_free(&h);
}

int
main(void)
{
	test_million();
	test_iterate_remove();
	test_iterate_wrap();
	test_hash_zero();
	test_reserve();
	return tap_done();
}
