/*
 * Status names and exit codes, the error buffer, log levels and the
 * injectable clock, with its watch on the fake-clock file.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/err.h"
#include "mc/log.h"
#include "tap.h"

static void
test_status_names(void)
{
	static const char *const want[] = { "ok",	"not_found",   "exists",       "no_space",
					    "leased",	"invalid",     "busy",	       "version",
					    "checksum", "unavailable", "proto",	       "too_large",
					    "quota",	"denied",      "timeout",      "system",
					    "internal", "permission",  "too_few_peers" };
	int i, ok = 1, trip = 1;

	TAP_OK(sizeof(want) / sizeof(want[0]) == MC_STATUS_COUNT,
	       "status: every code has a name in the table under test");
	for (i = 0; i < MC_STATUS_COUNT; i++) {
		const char *n = mc_status_name(i);

		if (strcmp(n, want[i]) != 0)
			ok = 0;
		if (mc_status_from_name(n, strlen(n)) != i)
			trip = 0;
	}
	TAP_OK(ok, "status: names are snake_case of the enum");
	TAP_OK(trip, "status: name -> code -> name round-trips for every code");
	TAP_OK(strcmp(mc_status_name(-1), "unknown") == 0 &&
		       strcmp(mc_status_name(MC_STATUS_COUNT), "unknown") == 0,
	       "status: out-of-range codes are 'unknown'");
	TAP_OK(mc_status_from_name("nope", 4) == MC_ERR_INTERNAL &&
		       mc_status_from_name("not_found_x", 11) == MC_ERR_INTERNAL &&
		       mc_status_from_name("not_found", 3) == MC_ERR_INTERNAL,
	       "status: unknown or partial names map to internal");
	TAP_OK(mc_status_from_name("leasedXYZ", 6) == MC_ERR_LEASED,
	       "status: from_name honours len on unterminated input");
}

static void
test_exit_codes(void)
{
	int i, other = 1;

	TAP_OK(mc_status_exit_code(MC_OK) == 0, "exit: ok is 0");
	TAP_OK(mc_status_exit_code(MC_ERR_INVALID) == 64, "exit: invalid is 64");
	TAP_OK(mc_status_exit_code(MC_ERR_PROTO) == 65 &&
		       mc_status_exit_code(MC_ERR_CHECKSUM) == 65,
	       "exit: proto and checksum are 65");
	TAP_OK(mc_status_exit_code(MC_ERR_UNAVAILABLE) == 69 &&
		       mc_status_exit_code(MC_ERR_TIMEOUT) == 69 &&
		       mc_status_exit_code(MC_ERR_TOO_FEW_PEERS) == 69,
	       "exit: unavailable, timeout and too few peers are 69");
	TAP_OK(mc_status_exit_code(MC_ERR_INTERNAL) == 70 &&
		       mc_status_exit_code(MC_ERR_SYSTEM) == 70,
	       "exit: internal and system are 70");
	TAP_OK(mc_status_exit_code(MC_ERR_PERMISSION) == 77, "exit: permission is 77 (NOPERM)");
	for (i = 0; i < MC_STATUS_COUNT; i++) {
		switch (i) {
		case MC_OK:
		case MC_ERR_INVALID:
		case MC_ERR_PROTO:
		case MC_ERR_CHECKSUM:
		case MC_ERR_UNAVAILABLE:
		case MC_ERR_TIMEOUT:
		case MC_ERR_TOO_FEW_PEERS:
		case MC_ERR_INTERNAL:
		case MC_ERR_SYSTEM:
		case MC_ERR_PERMISSION:
			continue;
		}
		if (mc_status_exit_code(i) != 1)
			other = 0;
	}
	TAP_OK(other, "exit: every other status is 1");
}

static void
test_err_buffer(void)
{
	struct mc_err err;
	char big[600];

	mc_err_clear(&err);
	TAP_OK(err.code == MC_OK && err.msg[0] == '\0', "err: clear empties it");
	TAP_OK(mc_err_set(&err, MC_ERR_NOT_FOUND, "no key '%s'", "k") == -1 &&
		       err.code == MC_ERR_NOT_FOUND && strcmp(err.msg, "no key 'k'") == 0,
	       "err: set fills code and message and returns -1");
	TAP_OK(mc_err_set(NULL, MC_ERR_BUSY, "x") == -1, "err: a NULL buffer is allowed");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mc_err_set(&err, MC_ERR_INVALID, "%s", big);
	TAP_OK(strlen(err.msg) == MC_ERR_MSG_MAX - 1,
	       "err: a long message is truncated, still terminated");
	errno = ENOENT;
	TAP_OK(mc_err_errno(&err, "cannot open '%s'", "x") == -1 && err.code == MC_ERR_SYSTEM &&
		       strcmp(err.msg, "cannot open 'x': no such file or "
				       "directory") == 0,
	       "err: errno form appends the lowercased reason");
	TAP_OK(errno == ENOENT, "err: errno form preserves errno");
}

static void
test_log_levels(void)
{
	TAP_OK(mc_log_level_parse("debug") == MC_LOG_DEBUG &&
		       mc_log_level_parse("info") == MC_LOG_INFO &&
		       mc_log_level_parse("warn") == MC_LOG_WARN &&
		       mc_log_level_parse("error") == MC_LOG_ERROR,
	       "log: level names parse");
	TAP_OK(mc_log_level_parse("loud") == -1 && mc_log_level_parse(NULL) == -1,
	       "log: unknown level is -1");
	mc_log_init("/usr/local/bin/mc-test", 0);
	TAP_OK(strcmp(mc_prog(), "mc-test") == 0, "log: program name is the basename of argv[0]");
}

/* Capture what a log call writes to stderr. */
static int
capture(void (*fn)(void), char *out, size_t cap)
{
	char path[] = "/tmp/mc-test-log-XXXXXX";
	int fd, saved;
	ssize_t n;

	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, cap - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	return 0;
}

static void
log_tool(void)
{
	mc_log_init("mc-cli", 0);
	mc_complain("cannot connect to %s: connection refused", "127.0.0.1:1");
}

static void
log_daemon(void)
{
	mc_log_init("mc-master", 1);
	mc_log_set_level(MC_LOG_INFO);
	mc_debug("hidden");
	mc_info("serving %d", 3);
}

static void
log_env(void)
{
	setenv("MC_LOG_LEVEL", "error", 1);
	mc_log_init("mc-peer", 1);
	unsetenv("MC_LOG_LEVEL");
	mc_warn("hidden");
	mc_error("shown");
}

static void
test_log_format(void)
{
	char buf[512], want[64];
	int y, mo, d, h, mi, s, ms;
	char tail[256];

	capture(log_tool, buf, sizeof(buf));
	TAP_OK(strcmp(buf, "mc-cli: cannot connect to 127.0.0.1:1: connection "
			   "refused\n") == 0,
	       "log: complain writes 'PROG: message' and a newline");
	capture(log_daemon, buf, sizeof(buf));
	snprintf(want, sizeof(want), "mc-master[%ld] info serving 3\n", (long)getpid());
	TAP_OK(sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ %255[^\n]", &y, &mo, &d, &h, &mi, &s, &ms,
		      tail) == 8 &&
		       strlen(buf) == 25 + strlen(want) && buf[24] == ' ' &&
		       strcmp(buf + 25, want) == 0,
	       "log: daemon lines are 'TIME PROG[pid] LEVEL message', "
	       "below-level lines dropped");
	capture(log_env, buf, sizeof(buf));
	TAP_OK(strstr(buf, "hidden") == NULL && strstr(buf, "error shown"),
	       "log: MC_LOG_LEVEL at init sets the level");
	mc_log_set_level(MC_LOG_INFO);
}

static void
test_clock(void)
{
	char path[] = "/tmp/mc-test-clock-XXXXXX";
	uint64_t real, t;
	FILE *f;
	int fd;

	real = mc_now_ms();
	TAP_OK(real > 1600000000000ull, "clock: real clock is epoch ms");
	mc_clock_set_fake(5000);
	TAP_OK(mc_now_ms() == 5000, "clock: set_fake forces the value");
	mc_clock_set_fake(0);
	t = mc_now_ms();
	TAP_OK(t >= real && t < real + 60000, "clock: set_fake(0) returns to the real clock");

	fd = mkstemp(path);
	if (fd < 0) {
		TAP_OK(0, "clock: cannot make a temp file");
		return;
	}
	TAP_OK(write(fd, " 12345\n", 7) == 7, "clock: wrote fake clock file");
	close(fd);
	setenv("MC_FAKE_CLOCK", path, 1);
	mc_clock_use_env();
	TAP_OK(mc_now_ms() == 12345,
	       "clock: MC_FAKE_CLOCK file sets the time (whitespace allowed)");
	f = fopen(path, "w");
	if (f != NULL) {
		fputs("99000", f);
		fclose(f);
	}
	TAP_OK(mc_now_ms() == 99000, "clock: rewriting the file moves time on the next call");
	TAP_OK(mc_steady_ms() == 99000, "clock: the steady clock follows the fake clock file");
	f = fopen(path, "w");
	if (f != NULL)
		fclose(f);
	TAP_OK(mc_now_ms() == 99000, "clock: an empty file keeps the last value");
	f = fopen(path, "w");
	if (f != NULL) {
		fputs("12ab", f);
		fclose(f);
	}
	TAP_OK(mc_now_ms() == 99000, "clock: a file that is not a number keeps the last value");
	unlink(path);
	TAP_OK(mc_now_ms() == 99000, "clock: a missing file keeps the last value");
	mc_clock_set_fake(7);
	TAP_OK(mc_now_ms() == 7, "clock: set_fake beats the file");
	mc_clock_set_fake(0);
	unsetenv("MC_FAKE_CLOCK");
	mc_clock_use_env();
	TAP_OK(mc_now_ms() >= real, "clock: without the variable time is real");
	t = mc_mono_ns();
	TAP_OK(mc_mono_ns() >= t, "clock: monotonic clock does not go back");
	t = mc_steady_ms();
	TAP_OK(t <= mc_mono_ms() && t + 1000 > mc_mono_ms(),
	       "clock: without a fake clock the steady clock is the monotonic one");
	mc_clock_set_fake(42);
	TAP_OK(mc_steady_ms() == 42, "clock: set_fake forces the steady clock too");
	mc_clock_set_fake(0);
}

/* Write text to path in place (truncate, write), as echo N >FILE does. */
static void
put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* Write text to a file beside path, then rename it onto path (advance_clock). */
static void
rename_text(const char *path, const char *text)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	put_text(tmp, text);
	if (rename(tmp, path) != 0)
		unlink(tmp);
}

static char watched_path[64];
static _Atomic uint64_t written; /* the value the file holds for certain */
static _Atomic int stale_seen, stop_threads;

static void *
clock_reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_threads)) {
		uint64_t w = atomic_load(&written);

		if (mc_now_ms() < w)
			atomic_store(&stale_seen, 1);
	}
	return NULL;
}

static void
test_clock_watch(void)
{
	char dir[] = "/tmp/mc-test-clockw-XXXXXX", other[96], text[32];
	uint64_t reads, v;
	pthread_t th[3];
	int ok = 1, sync_pipe[2];
	pid_t pid;

	if (mkdtemp(dir) == NULL) {
		TAP_OK(0, "clock watch: cannot make a temp directory");
		return;
	}
	snprintf(watched_path, sizeof(watched_path), "%s/clock", dir);
	snprintf(other, sizeof(other), "%s/daemon.log", dir);
	put_text(watched_path, "1000");
	setenv("MC_FAKE_CLOCK", watched_path, 1);
	mc_clock_use_env();
	for (int k = 0; k < 100; k++)
		ok &= mc_now_ms() == 1000;
	reads = mc_clock_file_reads();
	for (int k = 0; k < 1000; k++)
		ok &= mc_now_ms() == 1000;
	TAP_OK(ok && mc_clock_file_reads() == reads,
	       "clock watch: an unchanged file is not read again");
	put_text(other, "a log line\n");
	TAP_OK(mc_now_ms() == 1000 && mc_clock_file_reads() == reads,
	       "clock watch: a write to another file of the directory reads nothing");
	put_text(watched_path, "2000");
	TAP_OK(mc_now_ms() == 2000, "clock watch: a rewrite in place is seen on the next call");
	rename_text(watched_path, "3000");
	TAP_OK(mc_now_ms() == 3000, "clock watch: a rename onto the file is seen on the next call");
	put_text(watched_path, "");
	TAP_OK(mc_now_ms() == 3000,
	       "clock watch: a file truncated for a rewrite keeps the last value");
	put_text(watched_path, "3500");
	TAP_OK(mc_now_ms() == 3500, "clock watch: ...and the rewrite's end is seen");

	/*
	 * A child forked after the watch shares the parent's instance; its
	 * calls must not eat the events the parent needs.
	 */
	if (pipe(sync_pipe) == 0 && (pid = fork()) >= 0) {
		char c;
		int st = 0;

		if (pid == 0) {
			close(sync_pipe[1]);
			if (read(sync_pipe[0], &c, 1) != 1)
				_exit(2);
			for (int k = 0; k < 100; k++)
				if (mc_now_ms() != 4000)
					_exit(1);
			_exit(0);
		}
		close(sync_pipe[0]);
		put_text(watched_path, "4000");
		if (write(sync_pipe[1], "x", 1) != 1)
			ok = 0;
		close(sync_pipe[1]);
		waitpid(pid, &st, 0);
		TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		       "clock watch: a forked child reads the time through a watch of its own");
		TAP_OK(mc_now_ms() == 4000,
		       "clock watch: the parent still sees a rewrite its child saw first");
	} else {
		TAP_OK(0, "clock watch: cannot fork");
	}

	/* Threads never answer a value older than one the file surely holds. */
	atomic_store(&written, 4000);
	for (int k = 0; k < 3; k++)
		pthread_create(&th[k], NULL, clock_reader, NULL);
	for (v = 5000; v < 5200; v++) {
		snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
		if (v % 2)
			put_text(watched_path, text);
		else
			rename_text(watched_path, text);
		atomic_store(&written, v);
		if (mc_now_ms() != v)
			ok = 0;
	}
	atomic_store(&stop_threads, 1);
	for (int k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	TAP_OK(ok && !atomic_load(&stale_seen),
	       "clock watch: no thread answers the time from before a rewrite it follows");

	unsetenv("MC_FAKE_CLOCK");
	mc_clock_use_env();
	unlink(watched_path);
	unlink(other);
	rmdir(dir);
}

static void
test_lower_reason(void)
{
	char buf[64];

	TAP_OK(strcmp(mc_lower_reason(buf, sizeof(buf), "Connection refused"),
		      "connection refused") == 0,
	       "err: an OS reason is folded to the project's lowercase voice");
	TAP_OK(strcmp(mc_lower_reason(buf, sizeof(buf), NULL), "unknown error") == 0,
	       "err: a missing reason reads 'unknown error'");
	TAP_OK(strcmp(mc_lower_reason(buf, 4, "Broken pipe"), "bro") == 0,
	       "err: a long reason is cut to the buffer");
}

int
main(void)
{
	test_status_names();
	test_exit_codes();
	test_err_buffer();
	test_log_levels();
	test_log_format();
	test_clock();
	test_clock_watch();
	test_lower_reason();
	return tap_done();
}
