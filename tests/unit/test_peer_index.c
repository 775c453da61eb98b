/*
 * Unit tests for the peer's placement index (cmd/mc-peer/index.c):
 * versions, references that keep replaced bytes alive, drops, the
 * change numbers and removal journal a resume reports, and walks.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "tap.h"

#define T "tenant"

static struct arena *arena;
static struct pindex ix;

/* Publish key at version with size bytes placed in the arena; the error code, 0 when linked. */
static int
put(const char *key, uint64_t version, uint64_t size)
{
	struct mc_err err;
	uint64_t off = 0;
	struct pobj *o;

	if (size > 0 && arena_alloc(arena, size, &off, &err) != 0)
		return err.code;
	o = pobj_new(&ix, T, strlen(T), key, strlen(key), version, size, version * 7, off);
	if (o == NULL)
		return MC_ERR_SYSTEM;
	if (pindex_publish(&ix, o, &err) != 0) {
		pindex_release(&ix, o); /* refused: the caller's reference frees it */
		return err.code;
	}
	return 0;
}

static uint64_t
version_of(const char *key)
{
	uint64_t v = 0;

	return pindex_version(&ix, T, strlen(T), key, strlen(key), &v) == 1 ? v : 0;
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
	TAP_OK(arena_used(arena) == 3 * ARENA_PAGE,
	       "references: the replaced copy's pages stay while its reader holds them");
	pindex_release(&ix, held);
	TAP_OK(arena_used(arena) == ARENA_PAGE,
	       "references: the last release gives the old pages back");
	pindex_counts(&ix, &objects, &bytes);
	TAP_OK(objects == 1 && bytes == 100, "counts: one object of 100 bytes");
	TAP_OK(pindex_drop(&ix, T, strlen(T), "a", 1, true, 3) == 0 && version_of("a") == 4,
	       "drop: a drop up to version 3 leaves version 4");
	TAP_OK(pindex_drop(&ix, T, strlen(T), "a", 1, true, 4) == 1 && version_of("a") == 0 &&
		       arena_used(arena) == 0,
	       "drop: up to version 4 frees it");
	TAP_OK(pindex_acquire(&ix, T, strlen(T), "a", 1) == NULL &&
		       pindex_drop(&ix, T, strlen(T), "a", 1, false, 0) == 0,
	       "drop: gone, and a second drop drops nothing");
	TAP_OK(put("empty", 1, 0) == 0 && version_of("empty") == 1,
	       "publish: an empty object takes no pages");
	TAP_OK(pindex_drop(&ix, T, strlen(T), "empty", 5, false, 0) == 1, "drop: any version");
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
	pindex_drop(&ix, T, strlen(T), "j1", 2, false, 0);
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
	pindex_drop(&ix, T, strlen(T), "j2", 2, false, 0);
	n = pindex_gone_next(&ix, &after, pindex_seq(&ix), out, 8, names, sizeof(names), &lost);
	TAP_OK(n == 0 && lost, "journal: a forgotten removal marks the changes incomplete");
	pindex_journal_limit(&ix, PINDEX_JOURNAL_MAX, PINDEX_JOURNAL_NAME_BYTES);
	pindex_drop(&ix, T, strlen(T), "j1", 2, false, 0);
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
	put("late", 1, 0); /* linked after the walk began: not visited */
	pindex_drop(&ix, T, strlen(T), "w9", 2, false, 0); /* unlinked before reached */
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

int
main(void)
{
	struct mc_err err;

	arena = arena_new(64 * ARENA_PAGE, &err);
	TAP_OK(arena != NULL && pindex_init(&ix, arena, &err) == 0, "index over a 64-page arena");
	test_versions();
	test_journal();
	test_walk();
	pindex_destroy(&ix);
	arena_free_all(arena);
	return tap_done();
}
