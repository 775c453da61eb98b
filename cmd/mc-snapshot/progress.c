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

char *
snap_iso_time(uint64_t ms, char *buf, size_t cap)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&secs, &tm) == NULL) {
		snprintf(buf, cap, "-");
		return buf;
	}
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	return buf;
}

const char *
snap_dir(int argc, char **argv)
{
	const char *d = argc > 0 ? argv[0] : getenv("MC_SNAPSHOT_DIR");

	return d != NULL && *d != '\0' ? d : ".";
}

void
snap_fail(const struct mc_err *err, const char *verb)
{
	int code = mc_status_exit_code(err->code);

	/* an OS call that failed here (a write, a read) is a failed operation */
	if (err->code == MC_ERR_SYSTEM)
		code = MC_EXIT_FAIL;
	if (code == MC_EXIT_OK)
		code = MC_EXIT_SOFTWARE;
	if (strncmp(err->msg, "cannot ", 7) == 0)
		mc_die(code, "%s", err->msg);
	mc_die(code, "cannot %s: %s", verb, err->msg);
}
