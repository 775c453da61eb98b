/*
 * The injectable clock. A test moves time for running daemons by
 * rewriting one file (MC_FAKE_CLOCK). Reading that file on every call
 * costs an open, reads and a close, and the master reads the clock on
 * every request: in a trace replay that was a third of the run. So once
 * a process has read the clock a few times it watches the file's
 * directory with inotify and reads the file again only after an event
 * names it. The kernel queues the event of a write or of a rename onto
 * the file before the writer's call returns, so a daemon never serves a
 * request sent after the file changed with the value from before; the
 * check is one non-blocking read. Where inotify is refused (no
 * instances left) the file is read on every call, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
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

/* Reads of the file so far (mc_clock_file_reads). */
static _Atomic uint64_t file_reads;

static void
read_fake_file(const char *path)
{
	char buf[64];
	size_t got = 0;
	uint64_t v;
	int fd;

	atomic_fetch_add(&file_reads, 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
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
}

/*
 * MC_FAKE_CLOCK is looked up once, not on every call: getenv walks the
 * whole environment, and the master reads the clock on every request.
 * fake_path is NULL until looked up, "" when unset.
 */
static const char *_Atomic fake_path;

/* Calls that read the file before the watch is set up: a short-lived tool never needs one. */
#define READS_BEFORE_WATCH 16

/*
 * The watch, under watch_lock: a caller that finds the file changed
 * holds it until the new value is in, so another thread never answers
 * the old value after the event is gone from the queue.
 */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int fd;		/* the inotify instance; -1 none (yet), -2 refused */
	char name[256]; /* the file's name in the directory watched */
	unsigned calls;
} watch = { .fd = -1 };
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
watch_close(void)
{
	if (watch.fd >= 0)
		close(watch.fd);
	watch.fd = -1;
	watch.calls = 0;
}

/*
 * A forked child shares the parent's inotify instance: were it to read
 * the queue, the parent would miss the events. It starts its own.
 */
static void
atfork_prepare(void)
{
	pthread_mutex_lock(&watch_lock);
}

static void
atfork_parent(void)
{
	pthread_mutex_unlock(&watch_lock);
}

static void
atfork_child(void)
{
	watch_close();
	pthread_mutex_unlock(&watch_lock);
}

static void
atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Watch the directory of path for writes to it and renames onto it; -2 when refused. */
static int
watch_open(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	size_t dlen = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);
	const char *name = slash == NULL ? path : slash + 1;
	int fd;

	if (dlen >= sizeof(dir) || strlen(name) >= sizeof(watch.name) || *name == '\0')
		return -2;
	memcpy(dir, slash == NULL ? "." : slash == path ? "/" : path, dlen);
	dir[dlen] = '\0';
	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -2;
	if (inotify_add_watch(fd, dir,
			      IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
				      IN_DELETE | IN_ONLYDIR) < 0) {
		close(fd);
		return -2;
	}
	strcpy(watch.name, name);
	return fd;
}

/*
 * Whether the file may have changed since the queue was last read:
 * an event names it, events were lost, or the watch itself went (the
 * directory was removed: from then on every call reads the file).
 */
static bool
watch_changed(void)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;
	ssize_t n;

	while ((n = read(watch.fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if ((e->mask & (IN_Q_OVERFLOW | IN_IGNORED)) != 0 ||
			    (e->len > 0 && strcmp(e->name, watch.name) == 0))
				changed = true;
			if ((e->mask & IN_IGNORED) != 0) {
				watch_close();
				watch.fd = -2;
				return true;
			}
			p += sizeof(*e) + e->len;
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		watch_close();
		watch.fd = -2;
		return true;
	}
	return changed;
}

static uint64_t
fake_now(const char *path)
{
	uint64_t v;

	pthread_mutex_lock(&watch_lock);
	if (watch.fd == -1 && ++watch.calls > READS_BEFORE_WATCH) {
		pthread_once(&atfork_once, atfork_register);
		/* Watched first, then read: a change in between is an event. */
		if ((watch.fd = watch_open(path)) >= 0)
			read_fake_file(path);
	}
	if (watch.fd < 0 || watch_changed())
		read_fake_file(path);
	v = atomic_load(&file_ms);
	pthread_mutex_unlock(&watch_lock);
	return v;
}

void
mc_clock_use_env(void)
{
	const char *p = getenv("MC_FAKE_CLOCK");

	pthread_mutex_lock(&watch_lock);
	watch_close();
	pthread_mutex_unlock(&watch_lock);
	atomic_store(&fake_path, p != NULL ? p : "");
}

uint64_t
mc_clock_file_reads(void)
{
	return atomic_load(&file_reads);
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
		return fake_now(path);
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
