/*
 * Unit tests for the peer's DRAM medium (cmd/mc-peer/medium_dram.c)
 * through the medium interface: allocate, release, read into a buffer
 * or lent, read into a descriptor, the write sink and the read source
 * (memory, in place), writes, capacity and use, and the ordering hooks that offer copies coldest first and free
 * nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "medium.h"
#include "tap.h"

#define PAGES 16u

static struct medium *
open_dram(uint64_t size)
{
	struct mc_err err;

	return medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = size }, &err);
}

static void
test_open(void)
{
	struct mc_err err;
	struct medium *m = open_dram(PAGES * ARENA_PAGE + 5);

	TAP_OK(m != NULL && m->tier == MC_TIER_DRAM && m->ops == medium_types[MC_TIER_DRAM],
	       "open: the dram tier's medium, from the table");
	TAP_OK(medium_capacity(m) == PAGES * ARENA_PAGE && medium_used(m) == 0,
	       "capacity: whole pages, nothing used");
	medium_close(m);
	TAP_OK(medium_open(MC_TIER_HBM, &(struct medium_conf){ .size = 1 << 20 }, &err) == NULL &&
		       err.code == MC_ERR_INVALID,
	       "open: a tier with no medium yet is refused (%s)", err.msg);
	TAP_OK(medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = 100 }, &err) == NULL &&
		       err.code == MC_ERR_INVALID,
	       "open: less than a page is refused");
}

static void
test_alloc(void)
{
	struct mc_err err;
	struct medium *m = open_dram(PAGES * ARENA_PAGE);
	uint64_t a, b, c;

	TAP_OK(medium_alloc(m, 1, &a, &err) == 0 && medium_used(m) == ARENA_PAGE,
	       "alloc: one byte uses a page");
	TAP_OK(medium_alloc(m, 3 * ARENA_PAGE, &b, &err) == 0 && medium_used(m) == 4 * ARENA_PAGE &&
		       (b >= a + ARENA_PAGE || a >= b + 3 * ARENA_PAGE),
	       "alloc: three pages more, apart from the first");
	TAP_OK(medium_alloc(m, PAGES * ARENA_PAGE, &c, &err) == -1 && err.code == MC_ERR_NO_SPACE,
	       "alloc: what does not fit is no_space");
	medium_release(m, a, 1);
	TAP_OK(medium_used(m) == 3 * ARENA_PAGE, "release: the page comes back");
	medium_release(m, b, 3 * ARENA_PAGE);
	TAP_OK(medium_used(m) == 0 && medium_alloc(m, PAGES * ARENA_PAGE, &c, &err) == 0,
	       "release: all of it, and the whole medium fits again");
	medium_release(m, c, PAGES * ARENA_PAGE);
	medium_close(m);
}

static void
test_bytes(void)
{
	struct mc_err err;
	struct medium *m = open_dram(PAGES * ARENA_PAGE);
	size_t len = 3 * ARENA_PAGE + 17;
	unsigned char *want = malloc(len), *got = malloc(len), *dest;
	const void *lent, *copied;
	struct mc_bulk_sink sink;
	struct mc_bulk_src src;
	unsigned char b;
	uint64_t off;

	for (size_t i = 0; i < len; i++)
		want[i] = (unsigned char)(i * 31 + 7);
	medium_alloc(m, len, &off, &err);
	TAP_OK(medium_sink(m, off, len, &sink, &err) == 0 && sink.kind == MC_BULK_MEM &&
		       sink.len == len && sink.data != NULL,
	       "sink: dram's is memory, received into in place");
	dest = sink.data;
	memcpy(dest, want, len);
	mc_bulk_sink_release(&sink);
	lent = medium_read(m, off, len, NULL, &err);
	TAP_OK(lent == dest && memcmp(lent, want, len) == 0,
	       "read: without a buffer, dram lends the stored bytes (no copy)");
	memset(got, 0, len);
	copied = medium_read(m, off, len, got, &err);
	TAP_OK(copied == got && memcmp(got, want, len) == 0,
	       "read: into a buffer, the bytes are copied there");
	dest[0] ^= 0xff;
	TAP_OK(((const unsigned char *)medium_read(m, off, 1, NULL, &err))[0] == (want[0] ^ 0xff),
	       "sink: what lands there is the stored copy");
	dest[0] ^= 0xff;
	TAP_OK(medium_source(m, off, len, &src, &err) == 0 && src.kind == MC_BULK_MEM &&
		       src.data == dest && src.len == len,
	       "source: dram lends the stored bytes to a reply");
	b = want[5] ^ 0x5a;
	TAP_OK(medium_write(m, off + 5, &b, 1, &err) == 0 && dest[5] == b,
	       "write: bytes copied in land in the stored copy");
	dest[5] = want[5];

	medium_release(m, off, len);
	medium_close(m);
	free(want);
	free(got);
}

/* DRAM keeps nothing across a restart, and its copies are the connection's. */
static void
test_no_restart(void)
{
	struct mc_err err;
	struct medium *m = open_dram(PAGES * ARENA_PAGE);
	struct medium_meta meta = { .key = "k", .key_len = 1, .size = 1 };
	struct medium_io io;
	unsigned char b = 1;
	uint64_t off;
	int calls = 0;

	medium_alloc(m, 1, &off, &err);
	medium_write(m, off, &b, 1, &err);
	medium_read(m, off, 1, &b, &err);
	TAP_OK(medium_seal(m, off, 1, &meta, &err) == 0 &&
		       medium_recover(m, NULL, &calls, &err) == 0 && calls == 0 &&
		       medium_dir(m) == NULL,
	       "dram: sealing and recovering do nothing, and there is no directory");
	medium_io(m, &io);
	TAP_OK(io.reads == 0 && io.writes == 0 && io.read_bytes == 0 && io.corrupt == 0,
	       "dram: its I/O counters stay zero");
	medium_release(m, off, 1);
	medium_close(m);
}

/* Which of the three records medium_offer named, coldest first: "021" etc. */
static const char *
order_of(struct medium *m, struct medium_order *rec, char *buf)
{
	struct medium_offer out[8];
	size_t n = medium_offer(m, out, 8);

	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('0' + (out[i].who - rec));
	buf[n] = '\0';
	return buf;
}

static void
test_order(void)
{
	struct medium *m = open_dram(PAGES * ARENA_PAGE);
	struct medium_order rec[3] = { 0 };
	struct medium_offer out[8];
	char buf[8];
	uint64_t used;

	TAP_OK(medium_offer(m, out, 8) == 0, "order: an empty medium offers nothing");
	for (int i = 0; i < 3; i++)
		medium_track(m, &rec[i], (uint64_t)(i + 1) * 1000);
	TAP_OK(strcmp(order_of(m, rec, buf), "012") == 0,
	       "order: tracked copies are offered in commit order, coldest first (%s)", buf);
	medium_track(m, &rec[0], 1000);
	TAP_OK(strcmp(order_of(m, rec, buf), "120") == 0,
	       "order: tracking again (an access) makes a copy the warmest (%s)", buf);
	TAP_OK(medium_offer(m, out, 1) == 1 && out[0].who == &rec[1] && out[0].bytes == ARENA_PAGE,
	       "offer: at most max, with the bytes a free would give back (whole pages)");
	used = medium_used(m);
	TAP_OK(strcmp(order_of(m, rec, buf), "120") == 0 && medium_used(m) == used,
	       "offer: changes nothing and frees nothing");
	medium_untrack(m, &rec[2]);
	medium_untrack(m, &rec[2]);
	TAP_OK(strcmp(order_of(m, rec, buf), "10") == 0,
	       "order: an untracked copy is not offered, and untracking twice is harmless (%s)",
	       buf);
	medium_touch(m, &rec[2], 3000);
	TAP_OK(strcmp(order_of(m, rec, buf), "10") == 0 && !rec[2].tracked,
	       "touch: a copy out of the order stays out (%s)", buf);
	medium_touch(m, &rec[1], 2000);
	TAP_OK(strcmp(order_of(m, rec, buf), "01") == 0,
	       "touch: a copy in the order becomes the warmest (%s)", buf);
	medium_untrack(m, &rec[0]);
	medium_untrack(m, &rec[1]);
	TAP_OK(medium_offer(m, out, 8) == 0, "order: empty again");
	medium_close(m);
}

int
main(void)
{
	test_open();
	test_alloc();
	test_bytes();
	test_no_restart();
	test_order();
	return tap_done();
}
