/*
 * Logging to stderr: git's "PROG: message" for tools and timestamped
 * lines for daemons. Each line goes out in one write so lines from
 * several threads or processes sharing stderr do not interleave.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "mc/err.h"
#include "mc/io.h"
#include "mc/log.h"

#define LOG_LINE_MAX 4096

static char log_prog[64] = "mc";
static int log_daemon;
static int log_level = MC_LOG_INFO;

static const char *const level_names[] = {
	[MC_LOG_DEBUG] = "debug",
	[MC_LOG_INFO] = "info",
	[MC_LOG_WARN] = "warn",
	[MC_LOG_ERROR] = "error",
};

void
mc_log_init(const char *prog, int daemon_format)
{
	const char *base, *env;
	int lvl;

	if (prog != NULL && *prog != '\0') {
		base = strrchr(prog, '/');
		base = base != NULL && base[1] != '\0' ? base + 1 : prog;
		snprintf(log_prog, sizeof(log_prog), "%s", base);
	}
	log_daemon = daemon_format;
	env = getenv("MC_LOG_LEVEL");
	if (env != NULL && (lvl = mc_log_level_parse(env)) >= 0)
		log_level = lvl;
}

const char *
mc_prog(void)
{
	return log_prog;
}

void
mc_log_set_level(int level)
{
	if (level >= MC_LOG_DEBUG && level <= MC_LOG_ERROR)
		log_level = level;
}

int
mc_log_enabled(int level)
{
	return level >= log_level;
}

int
mc_log_level_parse(const char *s)
{
	size_t i;

	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return (int)i;
	if (strcasecmp(s, "warning") == 0)
		return MC_LOG_WARN;
	return -1;
}

/*
 * Append the formatted message and a newline after the prefix already in
 * line[0..off), truncating long messages but always ending the line.
 */
static void
emit(char *line, size_t off, const char *fmt, va_list ap)
{
	int n;

	if (off >= LOG_LINE_MAX - 1)
		off = LOG_LINE_MAX - 2;
	n = vsnprintf(line + off, LOG_LINE_MAX - 1 - off, fmt, ap);
	if (n < 0)
		n = 0;
	off += (size_t)n;
	if (off > LOG_LINE_MAX - 2)
		off = LOG_LINE_MAX - 2;
	/* Callers sometimes pass a message that already ends in '\n'. */
	if (off > 0 && line[off - 1] == '\n')
		off--;
	line[off++] = '\n';
	/* an unwritable stderr leaves nowhere to say so */
	(void)mc_write_all(STDERR_FILENO, line, off);
}

static size_t
daemon_prefix(char *line, int level)
{
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, LOG_LINE_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld] %s ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000L, log_prog, (long)getpid(), level_names[level]);
	return n < 0 ? 0 : (size_t)n;
}

static void
vlog(int level, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	size_t off;
	int n;

	if (level < MC_LOG_DEBUG)
		level = MC_LOG_DEBUG;
	if (level > MC_LOG_ERROR)
		level = MC_LOG_ERROR;
	if (level < log_level)
		return;
	if (log_daemon) {
		off = daemon_prefix(line, level);
	} else {
		n = snprintf(line, sizeof(line), "%s: ", log_prog);
		off = n < 0 ? 0 : (size_t)n;
	}
	emit(line, off, fmt, ap);
}

void
mc_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

static void
vcomplain(const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	int n;

	n = snprintf(line, sizeof(line), "%s: ", log_prog);
	emit(line, n < 0 ? 0 : (size_t)n, fmt, ap);
}

void
mc_complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vcomplain(fmt, ap);
	va_end(ap);
}

void
mc_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vcomplain(fmt, ap);
	va_end(ap);
	exit(code);
}

void
mc_bug(const char *file, int line, const char *fmt, ...)
{
	char buf[LOG_LINE_MAX];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "%s: BUG at %s:%d: ", log_prog, file, line);
	va_start(ap, fmt);
	emit(buf, n < 0 ? 0 : (size_t)n, fmt, ap);
	va_end(ap);
	abort();
}

void
mc_announce_ready(int ready_fd, const char *addr)
{
	mc_complain("listening on %s", addr);
	mc_ready_fd_write(ready_fd, addr);
}

void
mc_ready_fd_write(int ready_fd, const char *addr)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s\n", addr);
	if (ready_fd < 0)
		return;
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	if (mc_write_all(ready_fd, line, (size_t)n) < 0)
		mc_warn("cannot write to --ready-fd %d: %s", ready_fd, mc_strerror(errno));
	close(ready_fd);
}
