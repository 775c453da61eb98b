/*
 * Unit tests for the peer's mover (cmd/mc-peer/mover.c) behind the pool:
 * a reclaimed copy with a tier below is queued (demotion_queued), a
 * second reclaim is told in_flight, the copy stays readable where it is
 * until the move swaps it in, the master's hook hears where it went, a
 * reader of the old copy keeps its bytes, a copy dropped while it moved
 * is not brought back, no room below drops instead, a failed copy (before
 * or after its bytes landed) is tried again and, failing for good,
 * dropped and told, and promotion
 * moves a copy up.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/fault.h"

#include "arena.h"
#include "mover.h"
#include "pool.h"
#include "tap.h"

#define T "tenant"

static struct event_base *base;
static struct medium *media[MC_TIER_COUNT];
static struct pindex ix;
static struct pool pl;
static struct mover *mv;

static struct {
	int calls, from, to;
	char key[32];
} moved;

static struct {
	int calls;
	enum pool_drop_why why;
} dropped;

static void
on_moved(void *arg, const struct pobj *o, int from)
{
	(void)arg;
	moved.calls++;
	moved.from = from;
	moved.to = o->tier;
	snprintf(moved.key, sizeof(moved.key), "%.*s", (int)o->key_len, pobj_key(o));
}

static void
on_drop(void *arg, const struct pobj *o, enum pool_drop_why why)
{
	(void)arg;
	(void)o;
	dropped.calls++;
	dropped.why = why;
}

/* Commit key at version in dram, size bytes of fill: 0 or the error code. */
static int
put(const char *key, uint64_t version, uint64_t size, int fill)
{
	struct mc_err err;
	uint64_t off = 0;
	struct pobj *o;

	if (size > 0 && medium_alloc(media[MC_TIER_DRAM], size, &off, &err) != 0)
		return err.code;
	if (size > 0) {
		unsigned char *b = malloc(size);

		memset(b, fill, size);
		medium_write(media[MC_TIER_DRAM], off, b, size, NULL);
		free(b);
	}
	o = pobj_new(&ix, T, strlen(T), key, strlen(key), version, size, 0, MC_TIER_DRAM, off);
	if (pool_commit(&pl, o, NULL) != 0) {
		pindex_release(&ix, o);
		return -1;
	}
	return 0;
}

static int
tier_of(const char *key)
{
	int tier = MC_TIER_NONE;

	pindex_version(&ix, T, strlen(T), key, strlen(key), NULL, &tier);
	return tier;
}

static struct pool_result
reclaim(const char *key)
{
	struct pool_key k = { T, strlen(T), key, strlen(key), false, 0 };
	struct pool_result res;

	pool_evict(&pl, &k, MC_TIER_NONE, POOL_RECLAIM, &res);
	return res;
}

/* Every move queued has ended: its completion ran on the loop. */
static bool
settled(void)
{
	const struct mover_stats *st = mover_stats(mv);

	for (int k = 0; k < MOVE_KINDS; k++)
		if (st->done[k] + st->failed[k] + st->lost[k] != st->queued[k])
			return false;
	return true;
}

static void
settle(void)
{
	for (int i = 0; i < 10000 && !settled(); i++)
		event_base_loop(base, EVLOOP_ONCE);
}

/* Whether key's copy holds size bytes of fill, read from wherever it is. */
static bool
bytes_are(const char *key, uint64_t size, int fill)
{
	struct pobj *o = pindex_acquire(&ix, T, strlen(T), key, strlen(key));
	unsigned char *buf = malloc(size ? size : 1);
	bool ok = o && buf && o->size == size &&
		  medium_read(media[o->tier], o->off, size, buf, NULL) != NULL;

	for (uint64_t i = 0; ok && i < size; i++)
		ok = buf[i] == (unsigned char)fill;
	free(buf);
	if (o)
		pindex_release(&ix, o);
	return ok;
}

static void
test_demote(void)
{
	struct pool_result r;
	uint64_t dram0 = medium_used(media[MC_TIER_DRAM]);

	put("a", 1, 3 * ARENA_PAGE, 0x5a);
	r = reclaim("a");
	TAP_OK(r.outcome == POOL_DEMOTING && r.tier == MC_TIER_DRAM,
	       "demote: a reclaim with ssd below is queued, not done in the call");
	TAP_OK(tier_of("a") == MC_TIER_DRAM && mover_in_flight(mv, MC_TIER_DRAM) == 3 * ARENA_PAGE,
	       "demote: the copy stays in dram meanwhile, its bytes counted as moving");
	r = reclaim("a");
	TAP_OK(r.outcome == POOL_IN_FLIGHT && atomic_load(&pl.outcomes[POOL_IN_FLIGHT]) == 1,
	       "demote: asking again while it is queued is in flight");
	settle();
	TAP_OK(tier_of("a") == MC_TIER_SSD && bytes_are("a", 3 * ARENA_PAGE, 0x5a),
	       "demote: afterwards the copy is on ssd, byte for byte");
	TAP_OK(medium_used(media[MC_TIER_DRAM]) == dram0 &&
		       medium_used(media[MC_TIER_SSD]) == 3 * ARENA_PAGE &&
		       mover_in_flight(mv, MC_TIER_DRAM) == 0,
	       "demote: dram gave its pages back, ssd holds them");
	TAP_OK(moved.calls == 1 && moved.from == MC_TIER_DRAM && moved.to == MC_TIER_SSD &&
		       strcmp(moved.key, "a") == 0,
	       "demote: the moved hook says where the copy went");
	r = reclaim("a");
	TAP_OK(r.outcome == POOL_FREED && r.tier == MC_TIER_SSD && tier_of("a") == MC_TIER_NONE &&
		       medium_used(media[MC_TIER_SSD]) == 0,
	       "demote: reclaiming at the end of the chain drops");
}

static void
test_demote_keeps_receipt(void)
{
	unsigned char receipt[MC_RECEIPT_BYTES];
	struct pmeta *pm = pmeta_new("kv", 2, "", 0, false, 0);
	struct pobj *o;

	memset(receipt, 0xc3, sizeof(receipt));
	pmeta_set_receipt(pm, receipt);
	put("rc", 1, ARENA_PAGE, 0x11);
	o = pindex_acquire(&ix, T, strlen(T), "rc", 2);
	pindex_set_meta(&ix, o, pm, 1);
	pindex_release(&ix, o);
	reclaim("rc");
	settle();
	o = pindex_acquire(&ix, T, strlen(T), "rc", 2);
	TAP_OK(o != NULL && o->tier == MC_TIER_SSD && o->meta != NULL && o->meta->has_receipt &&
		       memcmp(o->meta->receipt, receipt, sizeof(receipt)) == 0,
	       "demote: the copy keeps its commit receipt on the tier below");
	if (o)
		pindex_release(&ix, o);
	reclaim("rc");
}

static void
test_reader_keeps(void)
{
	struct pobj *o;

	put("b", 1, 2 * ARENA_PAGE, 0x11);
	o = pindex_acquire(&ix, T, strlen(T), "b", 1);
	reclaim("b");
	settle();
	TAP_OK(tier_of("b") == MC_TIER_SSD && o->tier == MC_TIER_DRAM &&
		       medium_used(media[MC_TIER_DRAM]) == 2 * ARENA_PAGE,
	       "reader: a reader of the dram copy keeps its bytes after the move");
	pindex_release(&ix, o);
	TAP_OK(medium_used(media[MC_TIER_DRAM]) == 0, "reader: they go when it lets go");
	reclaim("b");
}

static void
test_lost(void)
{
	struct pool_key k = { T, strlen(T), "c", 1, false, 0 };
	struct pool_result r;
	uint64_t lost0 = mover_stats(mv)->lost[MOVE_DEMOTE];

	put("c", 1, ARENA_PAGE, 0x22);
	reclaim("c");
	/* the master drops it while the copy is on its way */
	pool_evict(&pl, &k, MC_TIER_NONE, POOL_DELETE, &r);
	settle();
	TAP_OK(tier_of("c") == MC_TIER_NONE && mover_stats(mv)->lost[MOVE_DEMOTE] == lost0 + 1,
	       "dropped meanwhile: the moved copy is not brought back");
	TAP_OK(medium_used(media[MC_TIER_SSD]) == 0 && medium_used(media[MC_TIER_DRAM]) == 0,
	       "dropped meanwhile: both tiers get their room back");

	put("c", 1, ARENA_PAGE, 0x22);
	reclaim("c");
	TAP_OK(put("c", 2, ARENA_PAGE, 0x23) == 0, "superseded meanwhile: the newer version lands");
	settle();
	TAP_OK(tier_of("c") == MC_TIER_DRAM && bytes_are("c", ARENA_PAGE, 0x23),
	       "superseded meanwhile: the newer version stays, the old one's move is lost");
	pool_evict(&pl, &k, MC_TIER_NONE, POOL_DELETE, &r);
}

static void
test_no_room(void)
{
	uint64_t cap = medium_capacity(media[MC_TIER_SSD]), off;
	struct pool_result r;
	struct mc_err err;

	/* fill ssd but for one page */
	TAP_OK(medium_alloc(media[MC_TIER_SSD], cap - ARENA_PAGE, &off, &err) == 0,
	       "no room: ssd filled but for a page");
	put("d", 1, 2 * ARENA_PAGE, 0x33);
	dropped.calls = 0;
	r = reclaim("d");
	TAP_OK(r.outcome == POOL_FREED && tier_of("d") == MC_TIER_NONE && dropped.calls == 1 &&
		       dropped.why == POOL_DROP_NO_SPACE &&
		       mover_stats(mv)->no_room[MOVE_DEMOTE] == 1,
	       "no room: a copy that fits nowhere below is dropped, and told why");
	medium_release(media[MC_TIER_SSD], off, cap - ARENA_PAGE);
}

static void
test_retry(void)
{
	const struct mover_stats *st = mover_stats(mv);
	uint64_t retried0 = st->retried[MOVE_DEMOTE], failed0 = st->failed[MOVE_DEMOTE];

	setenv("MC_FAULT", "move.demote:nth=1", 1);
	mc_fault_reset();
	put("e", 1, ARENA_PAGE, 0x44);
	reclaim("e");
	settle();
	TAP_OK(tier_of("e") == MC_TIER_SSD && bytes_are("e", ARENA_PAGE, 0x44) &&
		       st->retried[MOVE_DEMOTE] == retried0 + 1,
	       "retry: a copy that failed once is tried again and lands");
	reclaim("e");

	/* the same after the bytes landed: the room is the try's, and it comes back */
	setenv("MC_FAULT", "moved.demote:nth=1", 1);
	mc_fault_reset();
	put("e2", 1, ARENA_PAGE, 0x45);
	reclaim("e2");
	settle();
	TAP_OK(tier_of("e2") == MC_TIER_SSD && bytes_are("e2", ARENA_PAGE, 0x45) &&
		       st->retried[MOVE_DEMOTE] == retried0 + 2 &&
		       medium_used(media[MC_TIER_SSD]) ==
			       medium_footprint(media[MC_TIER_SSD], ARENA_PAGE),
	       "retry: a try that fails once its bytes landed is tried again, in the same room");
	reclaim("e2");
	retried0++;

	setenv("MC_FAULT", "move.demote:always", 1);
	mc_fault_reset();
	dropped.calls = 0;
	put("f", 1, ARENA_PAGE, 0x55);
	reclaim("f");
	settle();
	TAP_OK(tier_of("f") == MC_TIER_NONE && st->failed[MOVE_DEMOTE] == failed0 + 1 &&
		       st->retried[MOVE_DEMOTE] == retried0 + 1 + (MOVE_ATTEMPTS - 1),
	       "retry: a copy that keeps failing is given up after its tries");
	TAP_OK(dropped.calls == 1 && dropped.why == POOL_DROP_FAILED &&
		       medium_used(media[MC_TIER_SSD]) == 0 &&
		       medium_used(media[MC_TIER_DRAM]) == 0,
	       "retry: and dropped, told as failed, with both tiers' room back");
	unsetenv("MC_FAULT");
	mc_fault_reset();
}

static void
test_promote(void)
{
	struct pool_key k = { T, strlen(T), "g", 1, true, 1 };

	put("g", 1, 5 * ARENA_PAGE + 7, 0x66);
	reclaim("g");
	settle();
	TAP_OK(tier_of("g") == MC_TIER_SSD, "promote: a copy on ssd");
	moved.calls = 0;
	TAP_OK(mover_promote(mv, &k, MC_TIER_SSD, MC_TIER_DRAM) == 0 &&
		       mover_promote(mv, &k, MC_TIER_SSD, MC_TIER_DRAM) == 1,
	       "promote: queued once, then in flight");
	settle();
	TAP_OK(tier_of("g") == MC_TIER_DRAM && bytes_are("g", 5 * ARENA_PAGE + 7, 0x66) &&
		       moved.calls == 1 && moved.to == MC_TIER_DRAM &&
		       medium_used(media[MC_TIER_SSD]) == 0,
	       "promote: the copy moves up byte for byte, and the hook hears of it");
	TAP_OK(mover_promote(mv, &k, MC_TIER_SSD, MC_TIER_DRAM) == -1,
	       "promote: a copy no longer on ssd is not moved");
}

int
main(void)
{
	struct mc_err err;
	struct medium_conf conf = { .size = 64 * ARENA_PAGE };
	struct medium *ssd;

	base = event_base_new();
	media[MC_TIER_DRAM] = medium_open(MC_TIER_DRAM, &conf, &err);
	/* A second dram stands in for ssd: the mover knows media only by their operations. */
	ssd = medium_dram.open(&conf, &err);
	ssd->ops = &medium_dram;
	ssd->tier = MC_TIER_SSD;
	media[MC_TIER_SSD] = ssd;
	TAP_OK(base && media[MC_TIER_DRAM] && pindex_init(&ix, media, &err) == 0,
	       "a pool over dram with ssd below");
	pool_init(&pl, &ix);
	mv = mover_new(base, &pl, &err);
	TAP_OK(mv != NULL, "a mover over the pool");
	pl.demote = mover_demote;
	pl.demote_arg = mv;
	pl.on_drop = on_drop;
	mover_on_moved(mv, on_moved, NULL);
	test_demote();
	test_demote_keeps_receipt();
	test_reader_keeps();
	test_lost();
	test_no_room();
	test_retry();
	test_promote();
	mover_free(mv);
	pindex_destroy(&ix);
	medium_close(ssd);
	medium_close(media[MC_TIER_DRAM]);
	event_base_free(base);
	return tap_done();
}
