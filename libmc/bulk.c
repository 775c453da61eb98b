/*
 * Bulk sources and sinks (mc/bulk.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mc/bulk.h"

struct mc_bulk_src
mc_bulk_src_mem(const void *data, uint64_t len)
{
	return (struct mc_bulk_src){ .kind = MC_BULK_MEM, .len = len, .data = data, .fd = -1 };
}

struct mc_bulk_src
mc_bulk_src_fd(int fd, uint64_t off, uint64_t len)
{
	return (struct mc_bulk_src){ .kind = MC_BULK_FD, .len = len, .fd = fd, .off = off };
}

const void *
mc_bulk_src_mem_at(const struct mc_bulk_src *s, uint64_t at)
{
	return s->kind == MC_BULK_MEM ? (const char *)s->data + at : NULL;
}

ssize_t
mc_bulk_src_send(const struct mc_bulk_src *s, int sock, uint64_t at, size_t max)
{
	uint64_t left = s->len - at;
	size_t n = left < max ? (size_t)left : max;
	ssize_t w;

	if (s->kind == MC_BULK_MEM)
		return send(sock, (const char *)s->data + at, n, MSG_NOSIGNAL);
	if (s->off + at > (uint64_t)INT64_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	/* sendfile moves at most about 2 GiB a call: the caller loops */
	do {
		off_t pos = (off_t)(s->off + at);

		w = sendfile(sock, s->fd, &pos, n);
	} while (w < 0 && errno == EINTR);
	/* a file shorter than the range announced would leave the stream short */
	if (w == 0 && n > 0) {
		errno = ENODATA;
		return -1;
	}
	return w;
}

void
mc_bulk_sink_mem(struct mc_bulk_sink *s, void *data, uint64_t len)
{
	*s = (struct mc_bulk_sink){ .kind = MC_BULK_MEM, .len = len, .data = data, .fd = -1 };
}

void
mc_bulk_sink_fd(struct mc_bulk_sink *s, int fd, uint64_t off, uint64_t len)
{
	*s = (struct mc_bulk_sink){ .kind = MC_BULK_FD, .len = len, .fd = fd, .off = off };
}

void
mc_bulk_sink_release(struct mc_bulk_sink *s)
{
	free(s->stage_);
	s->stage_ = NULL;
}

void *
mc_bulk_sink_window(struct mc_bulk_sink *s, uint64_t at, size_t *n)
{
	uint64_t left = s->len - at;
	size_t cap = s->kind == MC_BULK_MEM && s->tap == NULL ? SSIZE_MAX : MC_BULK_CHUNK;

	*n = left < cap ? (size_t)left : cap;
	if (s->kind == MC_BULK_MEM)
		return (char *)s->data + at;
	if (s->stage_ == NULL && (s->stage_ = malloc(MC_BULK_CHUNK)) == NULL)
		return NULL;
	return s->stage_;
}

int
mc_bulk_sink_commit(struct mc_bulk_sink *s, uint64_t at, size_t n)
{
	const char *p = s->kind == MC_BULK_MEM ? (const char *)s->data + at : s->stage_;

	if (s->tap != NULL && n > 0)
		s->tap(p, n, s->tap_arg);
	if (s->kind == MC_BULK_MEM)
		return 0;
	while (n > 0) {
		ssize_t w = pwrite(s->fd, p, n, (off_t)(s->off + at));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		at += (uint64_t)w;
		n -= (size_t)w;
	}
	return 0;
}
