/*
 * A progress line on stderr while a long transfer runs: "\rLABEL: 12.0 /
 * 200.0 MiB (6%)", drawn at the first update, then redrawn at most four
 * times a second, and erased at the
 * end, so what follows starts on a clean line. It is drawn only when
 * stderr is a terminal, unless the caller sets on itself after
 * mc_progress_start: under cron or in a pipe the tools stay silent.
 */
#ifndef MC_PROGRESS_H
#define MC_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct mc_progress {
	bool on; /* draw at all; mc_progress_start sets it to isatty(stderr) */
	bool shown;
	const char *label; /* kept, not copied */
	uint64_t total;	   /* 0 when unknown (a pipe) */
	uint64_t next_ns;
};

void mc_progress_start(struct mc_progress *p, const char *label, uint64_t total);
/* done of total bytes (total replaces the one given before when not 0). */
void mc_progress_update(struct mc_progress *p, uint64_t done, uint64_t total);
/* Erase the line. */
void mc_progress_end(struct mc_progress *p);

#endif
