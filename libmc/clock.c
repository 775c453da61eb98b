/*
 * The injectable clock. Reading the fake-clock file on every call costs a
 * few syscalls, which only tests pay; it lets a test move time for running
 * daemons by rewriting one file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mc/clock.h"

/* Set by mc_clock_set_fake(); 0 means "not forced". */
static _Atomic uint64_t forced_ms;
/*
 * Last good value read from the MC_FAKE_CLOCK file. A test rewriting the
 * file truncates it first, so a reader may briefly see it empty; keeping
 * the previous value hides that window instead of jumping time to zero.
 */
static _Atomic uint64_t file_ms;

/* Parse optional whitespace, decimal digits, optional whitespace. */
static int
parse_ms(const char *s, size_t n, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;
	int digits = 0;

	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	while (i < n && s[i] >= '0' && s[i] <= '9') {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		digits++;
		i++;
	}
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	if (digits == 0 || i != n)
		return -1;
	*out = v;
	return 0;
}

static uint64_t
read_fake_file(const char *path)
{
	char buf[64];
	size_t got = 0;
	uint64_t v;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return atomic_load(&file_ms);
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	/* A file too long to be a number is as bad as an unreadable one. */
	if (got < sizeof(buf) && parse_ms(buf, got, &v) == 0)
		atomic_store(&file_ms, v);
	return atomic_load(&file_ms);
}

/*
 * MC_FAKE_CLOCK is looked up once, not on every call: getenv walks the
 * whole environment, and the master reads the clock on every request.
 * fake_path is NULL until looked up, "" when unset.
 */
static const char *_Atomic fake_path;

void
mc_clock_use_env(void)
{
	const char *p = getenv("MC_FAKE_CLOCK");

	atomic_store(&fake_path, p != NULL ? p : "");
}

uint64_t
mc_now_ms(void)
{
	struct timespec ts;
	const char *path = atomic_load(&fake_path);
	uint64_t f = atomic_load(&forced_ms);

	if (f != 0)
		return f;
	if (path == NULL) {
		mc_clock_use_env();
		path = atomic_load(&fake_path);
	}
	if (*path != '\0')
		return read_fake_file(path);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t
mc_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
mc_steady_ms(void)
{
	const char *path;

	if (atomic_load(&forced_ms) != 0)
		return mc_now_ms();
	if ((path = atomic_load(&fake_path)) == NULL) {
		mc_clock_use_env();
		path = atomic_load(&fake_path);
	}
	return *path != '\0' ? mc_now_ms() : mc_mono_ms();
}

void
mc_clock_set_fake(uint64_t ms)
{
	atomic_store(&forced_ms, ms);
}
