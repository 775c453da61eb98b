/*
 * Bulk sources and sinks (mc/bulk.h): the registered region's source and
 * sink, beside memory's, as a connection uses them (window, receive,
 * commit; a source's bytes where a transport reads them).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mc/bulk.h"
#include "tap.h"

struct tapped {
	size_t n;
	unsigned char first, last;
};

static void
tap_fn(const void *p, size_t n, void *arg)
{
	struct tapped *t = arg;

	if (t->n == 0)
		t->first = ((const unsigned char *)p)[0];
	t->last = ((const unsigned char *)p)[n - 1];
	t->n += n;
}

static void
test_region_sink(void)
{
	size_t len = 3 * MC_BULK_CHUNK + 11, off = 4096, at = 0, n;
	unsigned char *base = calloc(1, len + 2 * off), *want = malloc(len), *w;
	struct mc_bulk_region r = { base, len + 2 * off, 42 };
	struct mc_bulk_sink s;
	struct tapped t = { 0 };
	bool ok = true;
	int windows = 0;

	if (base == NULL || want == NULL)
		return;
	for (size_t i = 0; i < len; i++)
		want[i] = (unsigned char)(i * 131 + 9);
	errno = 0;
	TAP_OK(mc_bulk_sink_region(&s, &r, off, len + 2 * off) == -1 && errno == EINVAL,
	       "region sink: a range past the region's end is refused");
	TAP_OK(mc_bulk_sink_region(&s, &r, UINT64_MAX, 2) == -1 && errno == EINVAL,
	       "region sink: an offset that wraps is refused");
	TAP_OK(mc_bulk_sink_region(&s, &r, off, len) == 0 && s.kind == MC_BULK_REGION &&
		       s.region == &r && s.len == len && s.data == base + off,
	       "region sink: a range of the region");
	s.tap = tap_fn;
	s.tap_arg = &t;
	while (ok && at < len) {
		ok = (w = mc_bulk_sink_window(&s, at, &n)) == base + off + at && n > 0 &&
		     n <= MC_BULK_CHUNK;
		if (ok) {
			memcpy(w, want + at, n);
			ok = mc_bulk_sink_commit(&s, at, n) == 0;
			at += n;
			windows++;
		}
	}
	TAP_OK(ok && memcmp(base + off, want, len) == 0 && base[off - 1] == 0 &&
		       base[off + len] == 0,
	       "region sink: bytes land in place, in the range and nowhere else");
	TAP_OK(t.n == len && t.first == want[0] && t.last == want[len - 1] && windows == 4,
	       "region sink: with a tap, every byte is tapped once, a chunk a window");
	mc_bulk_sink_release(&s);
	TAP_OK(mc_bulk_sink_region(&s, &r, off, len) == 0 &&
		       mc_bulk_sink_window(&s, 0, &n) == base + off && n == len,
	       "region sink: without a tap, the whole range is one window");
	free(base);
	free(want);
}

static void
test_region_src(void)
{
	unsigned char buf[100];
	struct mc_bulk_region r = { buf, sizeof(buf), 7 };
	struct mc_bulk_src s;

	errno = 0;
	TAP_OK(mc_bulk_src_region(&s, &r, 90, 11) == -1 && errno == EINVAL,
	       "region source: a range past the region's end is refused");
	TAP_OK(mc_bulk_src_region(&s, NULL, 0, 0) == -1, "region source: no region is refused");
	TAP_OK(mc_bulk_src_region(&s, &r, 90, 10) == 0 && s.kind == MC_BULK_REGION &&
		       s.data == buf + 90 && s.len == 10 && s.off == 90 && s.region == &r &&
		       s.region->handle == 7,
	       "region source: its bytes and its registration, for the transport");
	TAP_OK(mc_bulk_src_region(&s, &r, 100, 0) == 0 && s.len == 0,
	       "region source: an empty range at the end is one");
}

int
main(void)
{
	test_region_sink();
	test_region_src();
	return tap_done();
}
