/*
 * Work kept off the event loop: the loop's side of a worker queue, page
 * release, and answers that live in anonymous files (see offloop.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "offloop.h"

/* Madvised at a time, so the lock is never held long. */
#define DROP_STEP (4u << 20)
/* Smaller blobs are freed where they are released. */
#define BLOB_FREE_LATER (1u << 20)

static void
completions_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mc_workq_complete(arg);
}

struct event *
offloop_watch(struct event_base *base, struct mc_workq *wq)
{
	struct event *ev =
		event_new(base, mc_workq_fd(wq), EV_READ | EV_PERSIST, completions_cb, wq);

	if (ev != NULL && event_add(ev, NULL) != 0) {
		event_free(ev);
		ev = NULL;
	}
	return ev;
}

void
offloop_drop_pages(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t to = ((uintptr_t)p + len) & ~(page - 1);

	if (p == NULL)
		return;
	for (; from + DROP_STEP <= to; from += DROP_STEP)
		madvise((void *)from, DROP_STEP, MADV_DONTNEED);
	if (from < to)
		madvise((void *)from, to - from, MADV_DONTNEED);
}

void
blob_free(struct blob *b)
{
	if (b == NULL)
		return;
	if (b->map != NULL) {
		offloop_drop_pages(b->map, b->len);
		munmap(b->map, b->len);
	}
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

struct blob *
blob_write(int (*fn)(FILE *f, const void *arg, struct mc_err *err), const void *arg,
	   struct mc_err *err)
{
	struct blob *b = calloc(1, sizeof(*b));
	struct stat st;
	FILE *f = NULL;
	int wfd;

	if (b == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory");
		return NULL;
	}
	b->fd = memfd_create("mc-answer", MFD_CLOEXEC);
	if (b->fd < 0 || (wfd = dup(b->fd)) < 0) {
		mc_err_errno(err, "cannot make room for the answer");
		goto fail;
	}
	if ((f = fdopen(wfd, "w")) == NULL) {
		close(wfd);
		mc_err_errno(err, "cannot make room for the answer");
		goto fail;
	}
	setvbuf(f, NULL, _IOFBF, 1u << 20);
	if (fn(f, arg, err) != 0) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) != 0 || fstat(b->fd, &st) != 0) {
		mc_err_errno(err, "cannot write the answer");
		goto fail;
	}
	b->len = (size_t)st.st_size;
	if (b->len > 0) {
		b->map = mmap(NULL, b->len, PROT_READ, MAP_SHARED, b->fd, 0);
		if (b->map == MAP_FAILED) {
			b->map = NULL;
			mc_err_errno(err, "cannot map the answer");
			goto fail;
		}
	}
	return b;
fail:
	blob_free(b);
	return NULL;
}

static void
blob_free_work(void *arg)
{
	blob_free(arg);
}

/* A release the queue cancelled (it is being freed) happens here instead. */
static void
blob_free_done(void *arg, bool cancelled)
{
	if (cancelled)
		blob_free(arg);
}

/* The release of a sent blob: off the loop when it is big. */
static void
blob_release(void *arg)
{
	struct blob *b = arg;

	if (b->len < BLOB_FREE_LATER || b->wq == NULL ||
	    mc_workq_submit(b->wq, blob_free_work, blob_free_done, b, NULL) != 0)
		blob_free(b);
}

void
blob_reply(struct mc_req *req, struct blob *b, struct mc_workq *wq)
{
	b->wq = wq;
	mc_reply_end_bulk(req, b->map, b->len, blob_release, b);
}
