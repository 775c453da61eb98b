/*
 * Unit tests for the master's recency index and the ranking call's walk
 * (cmd/mc-master/recency.c, rank.c): a peer's keys on one tier, least
 * recently accessed first, within a byte budget and a key cap, with
 * `more` when entries are left; leased, pinned, grouped, moving and
 * uncommitted copies skipped; a tier move relinks a copy, a removed one
 * leaves, a restore rebuilds in access order; and local reads make keys
 * warm without counting as reads.
 */
#include <stdio.h>
#include <string.h>

#include "master.h"
#include "rank.h"
#include "tap.h"
#include "store.h"
#include "recency.h"
#include "start.h"

#define PEER_A 1u
#define PEER_B 2u

static struct master m;
static struct mobj *out[RANK_MAX];

static struct mobj *
obj(const char *key, uint64_t size)
{
	struct mc_err err;
	size_t len = strlen(key);
	struct mobj *o = store_create(m.store, store_key_hash(0, key, len), 0, key, len, size, NULL,
				      0, &err);

	o->version = 1;
	store_access_new(m.store, o, 0);
	return o;
}

/* A complete copy of o's version on peer's tier, as a commit leaves it. */
static struct mrep *
copy(struct mobj *o, uint32_t peer, int tier)
{
	struct mrep *r = store_rep_add(o);

	r->peer = peer;
	r->tier = (uint8_t)tier;
	r->version = o->version;
	r->state = REP_COMPLETE;
	recency_sync(&m.store->rank, o);
	return r;
}

/* o's copy on peer's tier (found anew: adding a copy may move the array). */
static struct mrep *
rep_of(struct mobj *o, uint32_t peer, int tier)
{
	for (unsigned i = 0; i < o->nrep; i++)
		if (obj_reps(o)[i].peer == peer && obj_reps(o)[i].tier == tier)
			return &obj_reps(o)[i];
	return NULL;
}

static struct mobj *
find(const char *key)
{
	size_t len = strlen(key);

	return store_find(m.store, store_key_hash(0, key, len), 0, key, len);
}

/* The answer's keys joined by spaces ("" for none). */
static const char *
ranked(uint32_t peer, int tier, uint64_t budget, size_t max, bool *more)
{
	static char buf[4096];
	bool dummy;
	size_t n = rank_query(&m, peer, tier, budget, max, 1000, out, more ? more : &dummy);
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && at < sizeof(buf) - 64; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%.*s", i ? " " : "",
				       (int)out[i]->key_len, out[i]->key);
	return buf;
}

static void
reset(void)
{
	struct mc_err err;

	store_free(m.store);
	store_init(m.store, &err);
}

static void
test_order(void)
{
	struct mobj *a = obj("a", 10), *b = obj("b", 20), *c = obj("c", 30);
	bool more;

	copy(a, PEER_A, MC_TIER_DRAM);
	copy(b, PEER_A, MC_TIER_DRAM);
	copy(c, PEER_A, MC_TIER_DRAM);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, &more), "a b c") == 0 && !more,
	       "order: oldest write first, nothing left over");
	store_read(m.store, a);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "b c a") == 0,
	       "order: a read moves the key to the warm end");
	store_access(m.store, b);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "c a b") == 0,
	       "order: an upsert's access moves it too");
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 30, RANK_MAX, &more), "c") == 0 && more,
	       "budget: stops once the sizes reach it, with more");
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 31, RANK_MAX, &more), "c a") == 0 && more,
	       "budget: a key that crosses it is still taken");
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, 2, &more), "c a") == 0 && more,
	       "cap: max keys, with more");
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, 3, &more), "c a b") == 0 && !more,
	       "cap: exactly the entries left, no more");
	TAP_OK(strcmp(ranked(PEER_B, MC_TIER_DRAM, 0, RANK_MAX, &more), "") == 0 && !more,
	       "a peer holding nothing gets nothing");
	reset();
}

static void
test_tiers(void)
{
	struct mobj *a = obj("a", 1), *b = obj("b", 1), *c = obj("c", 1);

	copy(a, PEER_A, MC_TIER_DRAM);
	copy(a, PEER_A, MC_TIER_SSD);
	copy(b, PEER_A, MC_TIER_SSD);
	copy(c, PEER_A, MC_TIER_DRAM);
	copy(c, PEER_B, MC_TIER_DRAM);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "a c") == 0 &&
		       strcmp(ranked(PEER_A, MC_TIER_SSD, 0, RANK_MAX, NULL), "a b") == 0 &&
		       strcmp(ranked(PEER_B, MC_TIER_DRAM, 0, RANK_MAX, NULL), "c") == 0,
	       "tiers: each (peer, tier) lists only its own copies");
	/* c's copy on A lands on ssd (copy_moved): it leaves dram, joins ssd by its recency */
	rep_of(c, PEER_A, MC_TIER_DRAM)->tier = MC_TIER_SSD;
	recency_sync(&m.store->rank, c);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "a") == 0 &&
		       strcmp(ranked(PEER_A, MC_TIER_SSD, 0, RANK_MAX, NULL), "a b c") == 0,
	       "tier move: the copy is relinked on its new tier");
	/* a's ssd copy is dropped: found in the array, removed, synced */
	for (unsigned i = 0; i < a->nrep; i++)
		if (obj_reps(a)[i].tier == MC_TIER_SSD)
			store_rep_del(a, i);
	recency_sync(&m.store->rank, a);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_SSD, 0, RANK_MAX, NULL), "b c") == 0 &&
		       strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "a") == 0,
	       "removal: the dropped copy leaves, its sibling on dram stays");
	/* b's copy goes without a sync (an eviction round's): the walk drops it */
	uint64_t live = m.store->rank.live;
	store_rep_del(b, 0);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_SSD, 0, RANK_MAX, NULL), "c") == 0 &&
		       m.store->rank.live == live - 1,
	       "removal unsynced: never answered, freed by the walk that meets it");
	store_destroy(m.store, c);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_SSD, 0, RANK_MAX, NULL), "") == 0 &&
		       strcmp(ranked(PEER_B, MC_TIER_DRAM, 0, RANK_MAX, NULL), "") == 0,
	       "destroy: the object leaves every list");
	reset();
}

static void
test_skips(void)
{
	const char *keys[] = { "leased", "pinned",  "grouped", "soft",
			       "moving", "writing", "old",     "plain" };
	struct mobj *o[8];
	struct mc_err err;
	bool more;

	for (int i = 0; i < 8; i++) {
		if (i == 2) {
			o[i] = store_create(m.store, store_key_hash(0, keys[i], 7), 0, keys[i], 7,
					    1, "grp", 3, &err);
			o[i]->version = 1;
			store_access_new(m.store, o[i], 0);
		} else {
			o[i] = obj(keys[i], 1);
		}
		copy(o[i], PEER_A, MC_TIER_DRAM);
	}
	o[0]->lease_deadline = 2000; /* now is 1000 */
	o[1]->hard_pin = 1;
	o[3]->sp_mode = SP_ACTIVE;
	o[3]->sp_deadline = 5000;
	obj_reps(o[4])[0].moving = 1;
	o[5]->writing = 1;
	o[6]->version = 2; /* the copy holds version 1: not the readable one */
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, &more), "plain") == 0 && !more,
	       "skipped: leased, hard-pinned, grouped, soft-pinned, moving, being written, "
	       "and a stale version");
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, 1, &more), "plain") == 0 && !more,
	       "skipped entries do not count against the cap");
	o[0]->lease_deadline = 500;
	o[3]->sp_deadline = 900;
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "leased soft plain") == 0,
	       "an expired lease or soft pin no longer protects");
	o[5]->writing = 0;
	reset();
}

static void
test_local_reads(void)
{
	struct mobj *a = obj("a", 1), *b = obj("b", 1), *c = obj("c", 1);
	double hl = mc_history_half_life(m.store->hist, m.store->objects.count);
	uint64_t later = m.store->access_seq + 50;
	double crf, worth;

	copy(a, PEER_A, MC_TIER_DRAM);
	copy(b, PEER_A, MC_TIER_DRAM);
	copy(c, PEER_A, MC_TIER_DRAM);
	a->access_count = 3;
	a->probation = 1;
	crf = store_crf(a, later, hl);
	worth = store_worth(a, later, hl);
	store_touch(m.store, a);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "b c a") == 0,
	       "local read: the key ranks behind all others");
	TAP_OK(a->access_count == 3 && a->probation == 1 && a->access_seq == m.store->access_seq,
	       "local read: a new access number, access_count and probation untouched");
	TAP_OK(store_crf(a, later, hl) > crf * 0.999 && store_crf(a, later, hl) < crf * 1.001 &&
		       store_worth(a, later, hl) > worth * 0.999 &&
		       store_worth(a, later, hl) < worth * 1.001,
	       "local read: the LRFU value and worth stay what they were");
	reset();
}

/* Through the heartbeat's parser: a message holding local_reads. */
static void
test_local_reads_field(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
	struct mc_err err;
	bool bad;

	obj("a", 1);
	copy(find("a"), PEER_A, MC_TIER_DRAM);
	copy(obj("b", 1), PEER_A, MC_TIER_DRAM);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "local_reads");
	msgpack_pack_array(&pk, 2);
	msgpack_pack_map(&pk, 2);
	mc_pack_kv_str(&pk, "tenant", MC_DEFAULT_TENANT);
	mc_pack_kv_str(&pk, "key", "a");
	msgpack_pack_map(&pk, 2);
	mc_pack_kv_str(&pk, "tenant", MC_DEFAULT_TENANT);
	mc_pack_kv_str(&pk, "key", "nope");
	msgpack_unpacked_init(&u);
	msgpack_unpack_next(&u, sb.data, sb.size, NULL);
	const msgpack_object_array *reads = rank_local_reads_check(&u.data, &bad, &err);
	TAP_OK(reads != NULL && !bad && reads->size == 2, "local_reads: two items accepted");
	rank_local_reads_apply(&m, reads, 1000);
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "b a") == 0 &&
		       find("a")->last_access == 1000,
	       "local_reads: the known key is warm, the unknown one ignored");
	msgpack_unpacked_destroy(&u);

	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "local_reads");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 1);
	mc_pack_kv_str(&pk, "key", "a");
	msgpack_unpacked_init(&u);
	msgpack_unpack_next(&u, sb.data, sb.size, NULL);
	TAP_OK(rank_local_reads_check(&u.data, &bad, &err) == NULL && bad &&
		       err.code == MC_ERR_INVALID && strstr(err.msg, "local_reads") != NULL,
	       "local_reads: an item without a tenant is refused, naming the field");
	msgpack_unpacked_destroy(&u);

	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "local_reads");
	msgpack_pack_array(&pk, RANK_LOCAL_READS_MAX + 1);
	for (uint32_t i = 0; i <= RANK_LOCAL_READS_MAX; i++) {
		msgpack_pack_map(&pk, 2);
		mc_pack_kv_str(&pk, "tenant", MC_DEFAULT_TENANT);
		mc_pack_kv_str(&pk, "key", "a");
	}
	msgpack_unpacked_init(&u);
	msgpack_unpack_next(&u, sb.data, sb.size, NULL);
	TAP_OK(rank_local_reads_check(&u.data, &bad, &err) == NULL && bad &&
		       err.code == MC_ERR_INVALID && strstr(err.msg, "local_reads") != NULL,
	       "local_reads: more than %u items are refused", RANK_LOCAL_READS_MAX);
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
	reset();
}

/* A restore places copies without the index; the rebuild orders them by access_seq. */
static void
test_rebuild(void)
{
	const char *keys[] = { "x", "y", "z" };
	uint64_t seq[] = { 30, 10, 20 };

	for (int i = 0; i < 3; i++) {
		struct mobj *o = obj(keys[i], 1);
		struct mrep *r = store_rep_add(o);

		r->peer = PEER_A;
		r->tier = MC_TIER_DRAM;
		r->version = 1;
		r->state = REP_COMPLETE;
		o->access_seq = seq[i];
	}
	TAP_OK(strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "") == 0,
	       "restore: copies placed directly are not listed yet");
	TAP_OK(recency_rebuild(&m.store->rank, &m.store->objects) == 0 &&
		       strcmp(ranked(PEER_A, MC_TIER_DRAM, 0, RANK_MAX, NULL), "y z x") == 0,
	       "restore: the rebuild lists them in access_seq order");
	reset();
}

/*
 * Copies that arrive out of order: one near either end finds its place;
 * an inventory's, in any order, is sorted in once it is complete.
 */
static void
test_placement(void)
{
	struct mobj *v[200];
	char key[16];
	size_t n;
	bool more, ordered = true;

	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "p%03d", i);
		v[i] = obj(key, 1);
		if (i != 5 && i != 190)
			copy(v[i], PEER_A, MC_TIER_SSD);
	}
	/* demoted late, accessed long ago: 5 near the cold end, 190 near the warm one */
	copy(v[5], PEER_A, MC_TIER_SSD);
	copy(v[190], PEER_A, MC_TIER_SSD);
	n = rank_query(&m, PEER_A, MC_TIER_SSD, 0, RANK_MAX, 1000, out, &more);
	for (size_t i = 0; i < n; i++)
		ordered &= out[i] == v[i];
	TAP_OK(n == 200 && ordered, "placement: a late copy near either end finds its place");

	/* a peer's inventory, in its own order: its lists are sorted once it is in */
	for (int i = 0; i < 200; i++)
		copy(v[(i * 37) % 200], PEER_B, MC_TIER_DRAM);
	TAP_OK(recency_sort_peer(&m.store->rank, PEER_B) == 0, "sort: a peer's lists sorted");
	n = rank_query(&m, PEER_B, MC_TIER_DRAM, 0, RANK_MAX, 1000, out, &more);
	ordered = true;
	for (size_t i = 0; i < n; i++)
		ordered &= out[i] == v[i];
	TAP_OK(n == 200 && ordered, "sort: the inventory's copies rank by access, not arrival");
	reset();
}

/* Many objects through the slab: nodes reused, lists intact. */
static void
test_churn(void)
{
	char key[16];
	size_t n;
	bool more;

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		copy(obj(key, 1), PEER_A, MC_TIER_DRAM);
	}
	for (int i = 0; i < 5000; i += 2) {
		snprintf(key, sizeof(key), "k%d", i);
		store_destroy(m.store, find(key));
	}
	for (int i = 0; i < 2500; i++) {
		snprintf(key, sizeof(key), "n%d", i);
		copy(obj(key, 1), PEER_A, MC_TIER_DRAM);
	}
	n = rank_query(&m, PEER_A, MC_TIER_DRAM, 0, RANK_MAX, 1000, out, &more);
	TAP_OK(n == RANK_MAX && more && m.store->rank.live == 5000 && m.store->rank.used <= 5001 &&
		       out[0] == find("k1") && out[2499] == find("k4999") &&
		       out[2500] == find("n0"),
	       "churn: freed nodes are reused, the order survives");
	reset();
}

int
main(void)
{
	/* struct master points at its modules' state (start.c) */
	if (master_alloc(&m) != 0)
		return 1;
	struct mc_err err;

	TAP_OK(store_init(m.store, &err) == 0, "a master's store");
	test_order();
	test_tiers();
	test_skips();
	test_local_reads();
	test_local_reads_field();
	test_rebuild();
	test_placement();
	test_churn();
	store_free(m.store);
	return tap_done();
}
