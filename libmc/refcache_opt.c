/*
 * Belady's OPT (MIN), with every miss admitted: a backward pass gives
 * each access the index of the next access to the same key, then a
 * forward pass keeps the resident keys in a max-heap by next use and, at
 * a miss in a full cache, evicts the root. O(n log capacity) time and
 * O(n) memory: one step record per access and one key record per
 * distinct key (preallocated for n, so the index's pointers never move).
 */
#include <stdlib.h>

#include "mc/checksum.h"
#include "mc/hash.h"
#include "mc/refcache.h"

#define NEVER SIZE_MAX /* next use of a key that is not used again */
#define OUT SIZE_MAX   /* heap index of a key that is not resident */

struct opt_key {
	uint64_t key;
	size_t next; /* backward pass: the nearest later use; forward: the resident copy's next use */
	size_t heap;
};

struct opt_step {
	struct opt_key *k;
	size_t next; /* the next access to k after this one, or NEVER */
};

struct opt_heap {
	struct opt_key **a;
	size_t n;
};

static bool
key_eq(const void *entry, const void *key)
{
	return ((const struct opt_key *)entry)->key == *(const uint64_t *)key;
}

static uint64_t
key_hash(uint64_t key)
{
	return mc_hash64(&key, sizeof(key), 0x6f7074);
}

static void
place(struct opt_heap *h, struct opt_key *k, size_t i)
{
	h->a[i] = k;
	k->heap = i;
}

static void
sift_up(struct opt_heap *h, size_t i)
{
	struct opt_key *k = h->a[i];

	while (i > 0 && h->a[(i - 1) / 2]->next < k->next) {
		place(h, h->a[(i - 1) / 2], i);
		i = (i - 1) / 2;
	}
	place(h, k, i);
}

static void
sift_down(struct opt_heap *h, size_t i)
{
	struct opt_key *k = h->a[i];

	for (;;) {
		size_t m = 2 * i + 1;

		if (m >= h->n)
			break;
		if (m + 1 < h->n && h->a[m + 1]->next > h->a[m]->next)
			m++;
		if (h->a[m]->next <= k->next)
			break;
		place(h, h->a[m], i);
		i = m;
	}
	place(h, k, i);
}

/* Fill steps[0..n) and the key records, keys[i]'s record found by the index. */
static int
next_uses(const uint64_t *keys, size_t n, struct opt_step *steps, struct opt_key *slots,
	  struct mc_err *err)
{
	struct mc_htab index;
	size_t i, nslots = 0;

	mc_htab_init(&index);
	for (i = n; i-- > 0;) {
		struct opt_key *k = mc_htab_find(&index, key_hash(keys[i]), key_eq, &keys[i]);

		if (k == NULL) {
			k = &slots[nslots++];
			k->key = keys[i];
			k->next = NEVER;
			k->heap = OUT;
			if (mc_htab_insert(&index, key_hash(keys[i]), k) < 0) {
				mc_htab_free(&index);
				return mc_err_set(err, MC_ERR_NO_SPACE,
						  "out of memory for the opt index");
			}
		}
		steps[i].k = k;
		steps[i].next = k->next;
		k->next = i;
	}
	mc_htab_free(&index);
	return 0;
}

int64_t
mc_refcache_opt_hits(const uint64_t *keys, size_t n, uint64_t capacity_objects, struct mc_err *err)
{
	struct opt_step *steps = NULL;
	struct opt_key *slots = NULL;
	struct opt_heap h = { NULL, 0 };
	size_t cap, i;
	int64_t hits = -1;

	if (n == 0 || capacity_objects == 0)
		return 0;
	cap = capacity_objects < n ? (size_t)capacity_objects : n;
	if (n > SIZE_MAX / sizeof(*steps)) {
		mc_err_set(err, MC_ERR_NO_SPACE, "opt over %zu accesses is too large", n);
		return -1;
	}
	steps = malloc(n * sizeof(*steps));
	slots = malloc(n * sizeof(*slots));
	h.a = malloc(cap * sizeof(*h.a));
	if (steps == NULL || slots == NULL || h.a == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for opt over %zu accesses", n);
		goto out;
	}
	if (next_uses(keys, n, steps, slots, err) < 0)
		goto out;
	hits = 0;
	for (i = 0; i < n; i++) {
		struct opt_key *k = steps[i].k;

		k->next = steps[i].next;
		if (k->heap != OUT) {
			/* its next use was i, so its key only grew */
			hits++;
			sift_up(&h, k->heap);
		} else if (h.n < cap) {
			place(&h, k, h.n++);
			sift_up(&h, k->heap);
		} else {
			h.a[0]->heap = OUT;
			place(&h, k, 0);
			sift_down(&h, 0);
		}
	}
out:
	free(h.a);
	free(slots);
	free(steps);
	return hits;
}
