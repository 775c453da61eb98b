/*
 * Bulk sources and sinks (mc/bulk.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
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

/* Whether [off, off + len) lies within r. */
static bool
region_holds(const struct mc_bulk_region *r, uint64_t off, uint64_t len)
{
	return r != NULL && off <= r->len && len <= r->len - off;
}

int
mc_bulk_src_region(struct mc_bulk_src *s, const struct mc_bulk_region *r, uint64_t off,
		   uint64_t len)
{
	if (!region_holds(r, off, len)) {
		errno = EINVAL;
		return -1;
	}
	*s = (struct mc_bulk_src){ .kind = MC_BULK_REGION,
				   .len = len,
				   .data = (const char *)r->base + off,
				   .fd = -1,
				   .off = off,
				   .region = r };
	return 0;
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

int
mc_bulk_sink_region(struct mc_bulk_sink *s, const struct mc_bulk_region *r, uint64_t off,
		    uint64_t len)
{
	if (!region_holds(r, off, len)) {
		errno = EINVAL;
		return -1;
	}
	*s = (struct mc_bulk_sink){ .kind = MC_BULK_REGION,
				    .len = len,
				    .data = (char *)r->base + off,
				    .fd = -1,
				    .off = off,
				    .region = r };
	return 0;
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
	size_t cap = s->kind != MC_BULK_FD && s->tap == NULL ? SSIZE_MAX : MC_BULK_CHUNK;

	*n = left < cap ? (size_t)left : cap;
	if (s->kind != MC_BULK_FD)
		return (char *)s->data + at;
	if (s->stage_ == NULL && (s->stage_ = malloc(MC_BULK_CHUNK)) == NULL)
		return NULL;
	return s->stage_;
}

int
mc_bulk_sink_commit(struct mc_bulk_sink *s, uint64_t at, size_t n)
{
	const char *p = s->kind != MC_BULK_FD ? (const char *)s->data + at : s->stage_;

	if (s->tap != NULL && n > 0)
		s->tap(p, n, s->tap_arg);
	if (s->kind != MC_BULK_FD)
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
