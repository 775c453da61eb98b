/*
 * mc_write_all through a pipe, short writes included, and its errors;
 * mc_strerror's voice.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/err.h"
#include "mc/io.h"
#include "tap.h"

#define BIG (1u << 20) /* more than a pipe holds: the writer sees short writes */

struct drain {
	int fd;
	size_t got;
	int same;
	const unsigned char *want;
};

static void *
drain_run(void *arg)
{
	struct drain *d = arg;
	unsigned char buf[4096];
	ssize_t n;

	d->same = 1;
	while ((n = read(d->fd, buf, sizeof(buf))) > 0) {
		if (memcmp(buf, d->want + d->got, (size_t)n) != 0)
			d->same = 0;
		d->got += (size_t)n;
	}
	return NULL;
}

static void
test_write_all(void)
{
	unsigned char *src = malloc(BIG);
	struct drain d = { 0 };
	pthread_t t;
	int p[2];
	size_t i;

	for (i = 0; i < BIG; i++)
		src[i] = (unsigned char)tap_rng();
	TAP_OK(pipe(p) == 0, "io: a pipe to write through");
	d.fd = p[0];
	d.want = src;
	pthread_create(&t, NULL, drain_run, &d);
	TAP_OK(mc_write_all(p[1], src, BIG) == 0, "io: write_all writes 1 MiB into a pipe");
	close(p[1]);
	pthread_join(t, NULL);
	TAP_OK(d.got == BIG && d.same, "io: every byte arrives, in order");
	close(p[0]);

	TAP_OK(pipe(p) == 0, "io: another pipe");
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	errno = 0;
	TAP_OK(mc_write_all(p[1], src, 10) < 0 && errno == EPIPE,
	       "io: a pipe with no reader fails with EPIPE");
	close(p[1]);
	errno = 0;
	TAP_OK(mc_write_all(-1, src, 10) < 0 && errno == EBADF, "io: a bad descriptor fails");
	TAP_OK(mc_write_all(-1, src, 0) == 0, "io: nothing to write succeeds at once");
	free(src);
}

static void
test_strerror(void)
{
	TAP_OK(strcmp(mc_strerror(ENOENT), "no such file or directory") == 0,
	       "strerror: lowercase, the project's voice");
	TAP_OK(strcmp(mc_strerror(ECONNREFUSED), "connection refused") == 0,
	       "strerror: connection refused");
	TAP_OK(strncmp(mc_strerror(99999), "unknown error", 13) == 0,
	       "strerror: an unknown number still reads as a reason");
}

int
main(void)
{
	test_write_all();
	test_strerror();
	return tap_done();
}
