/*
 * The progress line and the small helpers every command shares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "snap.h"

#define REDRAW_NS 250000000ull /* four times a second at most */
#define MIB (1024.0 * 1024.0)

void
progress_start(struct progress *p, const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = isatty(STDERR_FILENO) == 1;
	p->label = label;
	p->total = total;
	p->next_ns = mc_mono_ns() + REDRAW_NS;
}

void
progress_update(struct progress *p, uint64_t done)
{
	uint64_t now;

	if (!p->on)
		return;
	now = mc_mono_ns();
	if (now < p->next_ns)
		return;
	p->next_ns = now + REDRAW_NS;
	p->shown = true;
	if (p->total > 0)
		fprintf(stderr, "\r%s: %.1f / %.1f MiB (%d%%)\033[K", p->label, done / MIB,
			p->total / MIB, (int)(done * 100 / p->total));
	else
		fprintf(stderr, "\r%s: %.1f MiB\033[K", p->label, done / MIB);
	fflush(stderr);
}

void
progress_end(struct progress *p)
{
	if (p->on && p->shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->shown = false;
}

const char *
snap_dir(int argc, char **argv)
{
	const char *d = argc > 0 ? argv[0] : getenv("MC_SNAPSHOT_DIR");

	return d != NULL && *d != '\0' ? d : ".";
}
