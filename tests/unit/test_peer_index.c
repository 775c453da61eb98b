/*
 * Unit tests for the peer's placement index (cmd/mc-peer/index.c) over
 * a DRAM medium: versions, the replaced copy handed back, references
 * that keep unlinked bytes alive, unlinks by version and tier, the
 * candidates for local eviction in the medium's order, the probation
 * order and the worth order, with their sums, and the window a plan takes of them, a move that keeps
 * what the ranking knows of a copy, the change numbers and removal
 * journal a resume reports, and walks.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "index.h"
#include "tap.h"

#define T "tenant"

static struct medium *media[MC_TIER_COUNT];
static struct medium *dram;
static struct pindex ix;

/*
 * Publish key at version with size bytes placed in the DRAM medium,
 * the block after parent in its chain (NULL: none), letting go of the
 * copy it replaces as the pool would; the error code, 0 when linked.
 */
static int
put_under(const char *key, uint64_t version, uint64_t size, const char *parent)
{
	struct mc_err err;
	uint64_t off = 0;
	struct pobj *o, *old;
	int rc;

	if (size > 0 && medium_alloc(dram, size, &off, &err) != 0)
		return err.code;
	o = pobj_new(&ix, T, strlen(T), key, strlen(key), version, size, version * 7, MC_TIER_DRAM,
		     off);
	if (o == NULL)
		return MC_ERR_SYSTEM;
	if (parent)
		o->parent = pindex_hash(T, strlen(T), parent, strlen(parent));
	rc = pindex_publish(&ix, o, &old, &err);
	if (old)
		pindex_release(&ix, old);
	if (rc != 0) {
		pindex_release(&ix, o); /* refused: the caller's reference frees it */
		return err.code;
	}
	return 0;
}

static int
put(const char *key, uint64_t version, uint64_t size)
{
	return put_under(key, version, size, NULL);
}

/* Unlink key on tier up to max_version (any with !has_version) and let go: 1 dropped. */
static int
drop_on(const char *key, int tier, bool has_version, uint64_t max_version)
{
	struct pobj *o =
		pindex_unlink(&ix, T, strlen(T), key, strlen(key), tier, has_version, max_version);

	if (o == NULL)
		return 0;
	pindex_release(&ix, o);
	return 1;
}

static int
drop(const char *key, bool has_version, uint64_t max_version)
{
	return drop_on(key, MC_TIER_NONE, has_version, max_version);
}

static uint64_t
version_of(const char *key)
{
	uint64_t v = 0;

	return pindex_version(&ix, T, strlen(T), key, strlen(key), &v, NULL) == 1 ? v : 0;
}

static void
test_versions(void)
{
	struct pobj *held;
	uint64_t objects, bytes;

	TAP_OK(put("a", 3, 5000) == 0 && version_of("a") == 3, "publish: a at version 3");
	TAP_OK(put("a", 2, 100) == MC_ERR_VERSION && version_of("a") == 3,
	       "publish: an older version is refused, the newer stays");
	held = pindex_acquire(&ix, T, strlen(T), "a", 1);
	TAP_OK(held != NULL && held->version == 3 && held->size == 5000,
	       "acquire: a reader holds version 3");
	TAP_OK(put("a", 4, 100) == 0 && version_of("a") == 4, "publish: version 4 replaces it");
	TAP_OK(medium_used(dram) == 3 * ARENA_PAGE,
	       "references: the replaced copy's pages stay while its reader holds them");
	TAP_OK(pindex_release(&ix, held) && medium_used(dram) == ARENA_PAGE,
	       "references: the last release gives the old pages back, and says so");
	pindex_counts(&ix, &objects, &bytes);
	TAP_OK(objects == 1 && bytes == 100, "counts: one object of 100 bytes");
	TAP_OK(drop("a", true, 3) == 0 && version_of("a") == 4,
	       "unlink: up to version 3 leaves version 4");
	TAP_OK(drop_on("a", MC_TIER_SSD, false, 0) == 0 && version_of("a") == 4,
	       "unlink: on another tier leaves the dram copy");
	TAP_OK(drop_on("a", MC_TIER_DRAM, true, 4) == 1 && version_of("a") == 0 &&
		       medium_used(dram) == 0,
	       "unlink: on its tier up to version 4 frees it");
	TAP_OK(pindex_acquire(&ix, T, strlen(T), "a", 1) == NULL && drop("a", false, 0) == 0,
	       "unlink: gone, and a second unlink finds nothing");
	TAP_OK(put("empty", 1, 0) == 0 && version_of("empty") == 1,
	       "publish: an empty object takes no pages");
	TAP_OK(drop("empty", false, 0) == 1, "unlink: any version");
}

/* key's commit notice, with a group and a hard pin as given (group "": none). */
static void
notice(const char *key, const char *group, bool hard_pin)
{
	struct pobj *o = pindex_acquire(&ix, T, strlen(T), key, strlen(key));

	pindex_set_meta(&ix, o, pmeta_new("kv", 2, group, strlen(group), hard_pin, 0), 1);
	pindex_release(&ix, o);
}

static void
commit(const char *key)
{
	notice(key, "", false);
}

/* The keys the medium offers, coldest first, joined by spaces. */
static const char *
offered(char *buf, size_t cap)
{
	struct medium_offer out[16];
	size_t n = medium_offer(dram, out, 16), used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct pobj *o =
			(const struct pobj *)((char *)out[i].who - offsetof(struct pobj, order));

		used += (size_t)snprintf(buf + used, cap - used, "%s%.*s", i ? " " : "",
					 (int)o->key_len, pobj_key(o));
	}
	return buf;
}

static void
test_order(void)
{
	struct pobj *o;
	char buf[128];
	int tier = MC_TIER_NONE;

	put("o1", 1, 10);
	put("o2", 1, 10);
	put("o3", 1, 10);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "") == 0,
	       "order: a copy without its commit notice is no candidate (%s)", buf);
	commit("o1");
	commit("o2");
	commit("o3");
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "o1 o2 o3") == 0,
	       "order: commits line up coldest first (%s)", buf);
	o = pindex_acquire(&ix, T, strlen(T), "o1", 2);
	pindex_release(&ix, o);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "o2 o3 o1") == 0,
	       "order: an access makes a copy the warmest (%s)", buf);
	put("o2", 2, 10);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "o3 o1") == 0,
	       "order: a replaced copy leaves the order at once (%s)", buf);
	commit("o2");
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "o3 o1 o2") == 0,
	       "order: a replacing commit takes the old copy's place out (%s)", buf);
	drop("o3", false, 0);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "o1 o2") == 0,
	       "order: an unlinked copy is no longer offered (%s)", buf);
	TAP_OK(pindex_tier_objects(&ix, MC_TIER_DRAM) == 2 &&
		       pindex_tier_objects(&ix, MC_TIER_SSD) == 0 &&
		       pindex_version(&ix, T, strlen(T), "o1", 2, NULL, &tier) == 1 &&
		       tier == MC_TIER_DRAM,
	       "tiers: two copies counted on dram, and o1 says where it is");
	drop("o1", false, 0);
	drop("o2", false, 0);
}

/* key read (a touch, and off probation) */
static void
read_key(const char *key)
{
	struct pobj *o = pindex_acquire(&ix, T, strlen(T), key, strlen(key));

	pindex_read(&ix, o);
	pindex_release(&ix, o);
}

static void
test_candidates(void)
{
	uint64_t fp = medium_footprint(dram, 10);
	struct pindex_order_sums s;
	struct pobj *o, *out[12]; /* 3 x the largest window */
	struct mc_err err;
	size_t n, beyond;
	char buf[128];
	bool all;

	put("c1", 1, 10);
	commit("c1");
	put("g1", 1, 10);
	notice("g1", "grp", false);
	put("h1", 1, 10);
	notice("h1", "", true);
	put("c2", 1, 10);
	commit("c2");
	pindex_order_sums(&ix, MC_TIER_DRAM, &s);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "c1 c2") == 0 && s.copies == 2 &&
		       s.bytes == 2 * fp && s.grouped_bytes == fp,
	       "candidates: group members and hard pins are none; a group's bytes are counted (%s)",
	       buf);
	TAP_OK(s.probation_bytes == 2 * fp, "candidates: new keys are on probation, counted");
	TAP_OK(pindex_claim(&ix, T, strlen(T), "c1", 2, MC_TIER_DRAM, false, 0, &o) == 1 &&
		       strcmp(offered(buf, sizeof(buf)), "c2") == 0,
	       "candidates: a moving copy is none (%s)", buf);
	pindex_order_sums(&ix, MC_TIER_DRAM, &s);
	TAP_OK(s.copies == 1 && s.probation_bytes == fp, "candidates: nor is it on probation");
	pindex_unclaim(&ix, o);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "c2 c1") == 0,
	       "candidates: a move that did not happen brings it back, at the warm end (%s)", buf);
	read_key("c2");
	pindex_order_sums(&ix, MC_TIER_DRAM, &s);
	TAP_OK(strcmp(offered(buf, sizeof(buf)), "c1 c2") == 0 && s.probation_bytes == fp,
	       "candidates: a read touches and takes the copy off probation (%s)", buf);
	TAP_OK(pindex_cold(&ix, MC_TIER_DRAM, 4, 0, out, &n, &beyond, &all, &err) == 0 && n == 2 &&
		       beyond == 1 && all && out[0] == o && out[1]->key_len == 2 &&
		       memcmp(pobj_key(out[1]), "c2", 2) == 0,
	       "cold: the probationer beyond a share of 0 first, then the coldest, each once");
	pindex_release_many(&ix, out, n);
	TAP_OK(pindex_cold(&ix, MC_TIER_DRAM, 4, fp, out, &n, &beyond, &all, &err) == 0 && n == 2 &&
		       beyond == 0,
	       "cold: none beyond a share its bytes fit in");
	pindex_release_many(&ix, out, n);
	TAP_OK(pindex_cold(&ix, MC_TIER_DRAM, 1, 0, out, &n, &beyond, &all, &err) == 0 && n == 1 &&
		       beyond == 1 && out[0] == o,
	       "cold: a window of one takes one");
	pindex_release_many(&ix, out, n);
	drop("c1", false, 0);
	drop("c2", false, 0);
	drop("g1", false, 0);
	drop("h1", false, 0);
	pindex_order_sums(&ix, MC_TIER_DRAM, &s);
	TAP_OK(s.copies == 0 && s.bytes == 0 && s.probation_bytes == 0 && s.grouped_bytes == 0 &&
		       strcmp(offered(buf, sizeof(buf)), "") == 0,
	       "candidates: the sums go back to zero as the copies go");
}

static void
test_journal(void)
{
	struct pindex_gone out[8];
	char names[256];
	uint64_t s0 = pindex_seq(&ix), after = s0;
	bool lost = false;
	size_t n;

	put("j1", 1, 10);
	put("j2", 1, 10);
	drop("j1", false, 0);
	TAP_OK(pindex_seq(&ix) == s0 + 3, "seq: two links and an unlink are three changes");
	n = pindex_gone_next(&ix, &after, pindex_seq(&ix), out, 8, names, sizeof(names), &lost);
	TAP_OK(n == 1 && !lost && out[0].key_len == 2 &&
		       memcmp(out[0].name + out[0].tenant_len, "j1", 2) == 0 && out[0].version == 1,
	       "journal: the removal of j1 version 1 since then");
	TAP_OK(pindex_gone_next(&ix, &after, pindex_seq(&ix), out, 8, names, sizeof(names),
				&lost) == 0,
	       "journal: and then no more");
	/* linked again since: the entry tells the master, not the removal */
	after = s0;
	put("j1", 5, 10);
	n = pindex_gone_next(&ix, &after, pindex_seq(&ix), out, 8, names, sizeof(names), &lost);
	TAP_OK(n == 0, "journal: a key linked again since is not reported removed");
	pindex_journal_trim(&ix, pindex_seq(&ix));
	/* a journal that keeps nothing says so */
	pindex_journal_limit(&ix, 0, 0);
	after = pindex_seq(&ix);
	drop("j2", false, 0);
	n = pindex_gone_next(&ix, &after, pindex_seq(&ix), out, 8, names, sizeof(names), &lost);
	TAP_OK(n == 0 && lost, "journal: a forgotten removal marks the changes incomplete");
	pindex_journal_limit(&ix, PINDEX_JOURNAL_MAX, PINDEX_JOURNAL_NAME_BYTES);
	drop("j1", false, 0);
}

static void
test_walk(void)
{
	struct mc_err err;
	struct pobj *got[64];
	struct pindex_walk *w;
	size_t total = 0, n;
	bool saw_late = false;
	uint64_t since;

	for (int i = 0; i < 10; i++) {
		char k[16];

		snprintf(k, sizeof(k), "w%d", i);
		put(k, 1, 0);
	}
	since = pindex_seq(&ix);
	w = pindex_walk_begin(&ix, &err);
	TAP_OK(w != NULL, "walk: begins");
	put("late", 1, 0);    /* linked after the walk began: not visited */
	drop("w9", false, 0); /* unlinked before reached */
	while ((n = pindex_walk_next(w, got, 3, 1 << 20)) > 0) {
		for (size_t i = 0; i < n; i++)
			saw_late |=
				got[i]->key_len == 4 && memcmp(pobj_key(got[i]), "late", 4) == 0;
		total += n;
		pindex_release_many(&ix, got, n);
	}
	TAP_OK(pindex_walk_over(w) && total == 9 && !saw_late,
	       "walk: in slices of 3, the 9 entries still linked from the start (%zu)", total);
	pindex_walk_end(w);
	w = pindex_walk_since(&ix, since, &err);
	n = w != NULL ? pindex_walk_next(w, got, 64, 1 << 20) : 0;
	TAP_OK(n == 1 && got[0]->key_len == 4 && memcmp(pobj_key(got[0]), "late", 4) == 0,
	       "walk since: only what was linked after the number");
	pindex_release_many(&ix, got, n);
	pindex_walk_end(w);
}

/*
 * A copy of key's linked entry with its commit notice, as the mover
 * makes it, on the same medium (a move within dram, for the swap).
 */
static struct pobj *
copy_of(const struct pobj *o)
{
	const struct pmeta *pm = o->meta;
	uint64_t off = 0;
	struct pobj *n;

	if (o->size > 0 && medium_alloc(dram, o->size, &off, NULL) != 0)
		return NULL;
	n = pobj_new(&ix, o->name, o->tenant_len, pobj_key(o), o->key_len, o->version, o->size,
		     o->checksum, MC_TIER_DRAM, off);
	if (n && pm)
		n->meta = pmeta_new(pm->names, pm->type_len, pm->names + pm->type_len,
				    pm->group_len, pm->hard_pin, pm->sp_deadline);
	return n;
}

static void
test_claim_swap(void)
{
	struct pobj *o, *again, *n, *cur;
	struct mc_err err;
	uint64_t seq0, gone0 = ix.ngone;

	put_under("mv", 3, 100, "mv's parent");
	TAP_OK(pindex_claim(&ix, T, strlen(T), "mv", 2, MC_TIER_DRAM, false, 0, &o) == 1 && o &&
		       o->moving,
	       "claim: a linked copy is claimed, marked moving, with a reference");
	TAP_OK(pindex_claim(&ix, T, strlen(T), "mv", 2, MC_TIER_NONE, false, 0, &again) == 0 &&
		       again == NULL,
	       "claim: a second claim is told it is moving already");
	TAP_OK(pindex_claim(&ix, T, strlen(T), "mv", 2, MC_TIER_SSD, false, 0, &again) == -1 &&
		       pindex_claim(&ix, T, strlen(T), "mv", 2, MC_TIER_NONE, true, 2, &again) ==
			       -1,
	       "claim: another tier, or a newer version than asked, is no such copy");
	seq0 = pindex_seq(&ix);
	n = copy_of(o);
	TAP_OK(pindex_swap(&ix, o, n, &err) == 0 && !o->linked && n->linked,
	       "swap: the new copy takes the old one's place");
	TAP_OK(n->worth == o->worth && n->worth > 0 && n->parent == o->parent && n->parent != 0 &&
		       n->access_seq == o->access_seq && n->crf == o->crf,
	       "swap: the new copy keeps the old one's worth, chain parent and history");
	cur = pindex_acquire(&ix, T, strlen(T), "mv", 2);
	TAP_OK(cur == n && ix.ngone == gone0 && pindex_seq(&ix) > seq0,
	       "swap: the key stays held: no removal journaled, a new link numbered");
	pindex_release(&ix, cur);
	again = copy_of(o);
	TAP_OK(pindex_swap(&ix, o, again, &err) < 0 && err.code == MC_ERR_NOT_FOUND &&
		       !again->linked,
	       "swap: an old copy no longer linked is not swapped");
	pindex_release(&ix, again); /* refused: still ours */
	pindex_release(&ix, o);	    /* the index's reference, handed over by the swap */
	pindex_unclaim(&ix, o);	    /* the claim's */
	TAP_OK(drop_on("mv", MC_TIER_DRAM, false, 0) == 1, "swap: the new copy drops as usual");
}

/* The members of dram's worth order. */
static size_t
in_worth_order(void)
{
	return ix.order[MC_TIER_DRAM].worth.n;
}

/* A copy is in its tier's worth order exactly while it is a candidate. */
static void
test_worth_order(void)
{
	struct pindex_order_sums s;
	struct pobj *o, *n, *cur;
	struct mc_err err;

	put("w1", 1, 10);
	TAP_OK(in_worth_order() == 0, "worth order: a copy without its commit notice is not in it");
	commit("w1");
	put("w2", 1, 10);
	commit("w2");
	put("wg", 1, 10);
	notice("wg", "grp", false);
	put("wh", 1, 10);
	notice("wh", "", true);
	pindex_order_sums(&ix, MC_TIER_DRAM, &s);
	TAP_OK(in_worth_order() == 2 && s.copies == 2,
	       "worth order: the candidates are in it, group members and hard pins are not");
	pindex_claim(&ix, T, strlen(T), "w1", 2, MC_TIER_DRAM, false, 0, &o);
	TAP_OK(in_worth_order() == 1 && o->wplace == 0, "worth order: a claimed copy leaves it");
	pindex_unclaim(&ix, o);
	TAP_OK(in_worth_order() == 2, "worth order: a move that did not happen brings it back");
	put("w2", 2, 10);
	TAP_OK(in_worth_order() == 1, "worth order: a replaced copy leaves it at once");
	commit("w2");
	pindex_claim(&ix, T, strlen(T), "w1", 2, MC_TIER_DRAM, false, 0, &o);
	n = copy_of(o);
	pindex_swap(&ix, o, n, &err);
	TAP_OK(in_worth_order() == 2 && o->wplace == 0 && n->wplace != 0,
	       "worth order: a move that lands puts the new copy in it, not the old");
	pindex_release(&ix, o); /* the index's reference, handed over by the swap */
	pindex_unclaim(&ix, o); /* the claim's */
	cur = pindex_acquire(&ix, T, strlen(T), "w1", 2);
	pindex_read(&ix, cur);
	TAP_OK(in_worth_order() == 2 && cur->wplace != 0, "worth order: a read keeps it in");
	pindex_release(&ix, cur);
	drop("w1", false, 0);
	TAP_OK(in_worth_order() == 1, "worth order: a dropped copy leaves it");
	drop("w2", false, 0);
	drop("wg", false, 0);
	drop("wh", false, 0);
	TAP_OK(in_worth_order() == 0, "worth order: empty once the copies are gone");
}

/* Whether key is among out[first..n). */
/* Copies read twice beside the chain in test_cold_by_worth: more than its largest window. */
#define CHAIN_OTHERS 16

static bool
taken(struct pobj **out, size_t first, size_t n, const char *key)
{
	for (size_t i = first; i < n; i++)
		if (out[i]->key_len == strlen(key) &&
		    memcmp(pobj_key(out[i]), key, strlen(key)) == 0)
			return true;
	return false;
}

/*
 * A chain's tail read lately under a parent read long ago is among the
 * warmest by recency but the least worth: the window takes it. A window
 * of w copies takes mc_plan_window_worth(w) by worth, w / 4: 8 takes 2.
 */
static void
test_cold_by_worth(void)
{
	struct pobj *out[36]; /* 3 x the largest window */
	struct mc_err err;
	size_t n, beyond;
	char k[16];
	bool all;

	put("root", 1, 10);
	commit("root");
	for (int i = 0; i < CHAIN_OTHERS; i++) {
		snprintf(k, sizeof(k), "c%d", i);
		put(k, 1, 10);
		commit(k);
		read_key(k);
		read_key(k);
	}
	put_under("t0", 1, 10, "root");
	commit("t0");
	put_under("t1", 1, 10, "t0");
	commit("t1");
	for (int r = 0; r < 3; r++) {
		read_key("t0");
		read_key("t1");
	}
	TAP_OK(pindex_cold(&ix, MC_TIER_DRAM, 8, UINT64_MAX, out, &n, &beyond, &all, &err) == 0 &&
		       n >= 8 && beyond == 0 && taken(out, 0, 8, "root") &&
		       taken(out, 0, 8, "c0") && !taken(out, 0, 8, "t0"),
	       "cold by worth: the coldest by recency first");
	TAP_OK(n == 10 && taken(out, 8, n, "t0") && taken(out, 8, n, "t1"),
	       "cold by worth: then the chain's tail read lately, worth less than its old "
	       "parent (%zu taken)",
	       n);
	pindex_release_many(&ix, out, n);
	/* the third lowest by worth is root, the coldest */
	TAP_OK(pindex_cold(&ix, MC_TIER_DRAM, 12, UINT64_MAX, out, &n, &beyond, &all, &err) == 0 &&
		       n == 14 && taken(out, 0, 12, "root") && taken(out, 12, n, "t0") &&
		       taken(out, 12, n, "t1"),
	       "cold by worth: a copy both among the coldest and the lowest is taken once (%zu)",
	       n);
	pindex_release_many(&ix, out, n);
	read_key("root");
	TAP_OK(pindex_cold(&ix, MC_TIER_DRAM, 8, UINT64_MAX, out, &n, &beyond, &all, &err) == 0 &&
		       n == 10 && !taken(out, 0, 8, "root") && taken(out, 0, 8, "c0") &&
		       taken(out, 0, 8, "c7") && taken(out, 8, n, "t0") && taken(out, 8, n, "t1"),
	       "cold by worth: the tail keeps the worth its reads gave it when its parent is read");
	pindex_release_many(&ix, out, n);
	drop("root", false, 0);
	drop("t0", false, 0);
	drop("t1", false, 0);
	for (int i = 0; i < CHAIN_OTHERS; i++) {
		snprintf(k, sizeof(k), "c%d", i);
		drop(k, false, 0);
	}
}

static void
test_meta(void)
{
	struct pmeta *pm = pmeta_new("kv", 2, "grp", 3, true, 12345);
	unsigned char receipt[MC_RECEIPT_BYTES];
	struct medium_meta mm;
	struct pobj *o;

	memset(receipt, 0x5a, sizeof(receipt));
	TAP_OK(pm != NULL && !pm->has_receipt, "meta: a new one has no receipt");
	pmeta_set_receipt(pm, receipt);

	put("meta", 1, 10);
	o = pindex_acquire(&ix, T, strlen(T), "meta", 4);
	pobj_medium_meta(o, &mm);
	TAP_OK(mm.type_len == 0 && mm.group_len == 0 && !mm.hard_pin && mm.sp_deadline == 0 &&
		       mm.version == 1 && mm.size == 10 && mm.key_len == 4 && mm.receipt == NULL,
	       "meta: a copy without a commit notice has none");
	pindex_set_meta(&ix, o, pm, 5000);
	pobj_medium_meta(o, &mm);
	TAP_OK(mm.type_len == 2 && memcmp(mm.type, "kv", 2) == 0 && mm.group_len == 3 &&
		       memcmp(mm.group, "grp", 3) == 0 && mm.hard_pin && mm.sp_deadline == 12345,
	       "meta: the notice's type, group, hard pin and deadline are kept with the copy");
	TAP_OK(mm.receipt != NULL && memcmp(mm.receipt, receipt, sizeof(receipt)) == 0,
	       "meta: and its receipt, for the extent header");
	pindex_set_meta(&ix, o, pmeta_new("", 0, "", 0, false, 0), 9000);
	pobj_medium_meta(o, &mm);
	TAP_OK(mm.type_len == 0 && !mm.hard_pin && mm.receipt == NULL,
	       "meta: a later notice replaces it");
	{
		struct pindex_peek pk;

		TAP_OK(pindex_peek(&ix, T, strlen(T), "meta", 4, &pk) == 1 &&
			       pk.committed == 5000 && pk.size == 10,
		       "meta: the first notice is the copy's commit time, a later one keeps it");
	}
	pindex_release(&ix, o);
	TAP_OK(drop_on("meta", MC_TIER_NONE, false, 0) == 1, "meta: freed with its copy");
}

int
main(void)
{
	struct mc_err err;

	dram = media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = 64 * ARENA_PAGE }, &err);
	TAP_OK(dram != NULL && pindex_init(&ix, media, &err) == 0,
	       "index over a 64-page dram medium");
	test_versions();
	test_order();
	test_candidates();
	test_journal();
	test_walk();
	test_claim_swap();
	test_worth_order();
	test_cold_by_worth();
	test_meta();
	pindex_destroy(&ix);
	medium_close(dram);
	return tap_done();
}
