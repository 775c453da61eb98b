/*
 * The progress line (mc/progress.h).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/progress.h"

#define REDRAW_NS 250000000ull /* four times a second at most */
#define MIB (1024.0 * 1024.0)

void
mc_progress_start(struct mc_progress *p, const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = isatty(STDERR_FILENO) == 1;
	p->label = label;
	p->total = total;
	/* the first update draws: a short transfer still shows that it ran */
	p->next_ns = 0;
}

void
mc_progress_update(struct mc_progress *p, uint64_t done, uint64_t total)
{
	uint64_t now;

	if (total != 0)
		p->total = total;
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
mc_progress_end(struct mc_progress *p)
{
	if (p->on && p->shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->shown = false;
}
