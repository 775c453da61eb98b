/*
 * The disk queue (see diskq.h): two lanes of workers over mc/workq.h,
 * their completions watched on the loop, and the staging budget.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/checked.h"
#include "mc/checksum.h"
#include "mc/log.h"
#include "mc/workq.h"

#include "diskq.h"

/* Jobs waiting to start in one lane at most; past it a job runs on the loop. */
#define DISKQ_WAITING_MAX 4096
/* Data lane workers: a read and a write may both be on the device. */
#define DISKQ_DATA_THREADS 2
/* A little nicer than the loop: a get's reply is never behind a worker for the CPU. */
#define DISKQ_NICE 5
#define DISKQ_ALIGN 4096u
/*
 * Staging buffers given back are kept for the next copy, up to this many
 * of at most DISKQ_KEEP_MAX bytes each: a buffer allocated and unmapped
 * per copy costs page faults and TLB shootdowns that stall the loop.
 */
#define DISKQ_KEEP 16
#define DISKQ_KEEP_MAX (4u << 20)

enum lane { LANE_DATA, LANE_HEADERS, LANES };

struct diskq {
	struct mc_workq *lane[LANES];
	struct event *ev[LANES];
	struct diskq_stats st;
	void *kept[DISKQ_KEEP]; /* staging given back, by size class */
	uint64_t kept_cap[DISKQ_KEEP];
	unsigned nkept;
};

enum job_kind { JOB_STORE, JOB_LOAD, JOB_RESEAL };

struct job {
	struct diskq *q;
	enum job_kind kind;
	struct medium *m;
	uint64_t off, len;
	const void *src; /* store */
	void *dst;	 /* load */
	struct medium_meta meta;
	bool seal;
	uint64_t *sum; /* store: hash src into it first */
	char *names;   /* reseal: meta's names, copied */
	diskq_done_fn done;
	void *arg;
	bool failed;
	struct mc_err err;
};

static void
completions_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mc_workq_complete(arg);
}

struct diskq *
diskq_new(struct event_base *base, uint64_t stage_max, struct mc_err *err)
{
	static const unsigned threads[LANES] = {
		[LANE_DATA] = DISKQ_DATA_THREADS, [LANE_HEADERS] = 1
	};
	struct diskq *q = calloc(1, sizeof(*q));

	if (!q) {
		mc_err_errno(err, "cannot allocate the disk queue");
		return NULL;
	}
	q->st.stage_max = stage_max;
	for (int l = 0; l < LANES; l++) {
		if (!(q->lane[l] = mc_workq_new(threads[l], DISKQ_WAITING_MAX, DISKQ_NICE, err)))
			goto fail;
		q->ev[l] = event_new(base, mc_workq_fd(q->lane[l]), EV_READ | EV_PERSIST,
				     completions_cb, q->lane[l]);
		if (!q->ev[l] || event_add(q->ev[l], NULL) != 0) {
			mc_err_set(err, MC_ERR_SYSTEM, "cannot watch the disk queue");
			goto fail;
		}
	}
	return q;
fail:
	diskq_free(q);
	return NULL;
}

void
diskq_free(struct diskq *q)
{
	if (!q)
		return;
	/*
	 * A stop finishes the disk work it accepted: a header queued just
	 * before it is on the disk after it, and each completion sends its
	 * reply and gives its reference back. The budget bounds the wait.
	 */
	for (int l = 0; l < LANES; l++)
		mc_workq_drain(q->lane[l]);
	for (int l = 0; l < LANES; l++) {
		mc_workq_free(q->lane[l]);
		if (q->ev[l])
			event_free(q->ev[l]);
	}
	for (unsigned i = 0; i < q->nkept; i++)
		free(q->kept[i]);
	free(q);
}

/* What staging len bytes takes: whole pages, and a power of two up to the kept size. */
static uint64_t
stage_cap(uint64_t len)
{
	uint64_t cap = mc_round_up(len, DISKQ_ALIGN), c = DISKQ_ALIGN;

	if (cap > DISKQ_KEEP_MAX)
		return cap;
	while (c < cap)
		c <<= 1;
	return c;
}

void *
diskq_stage(struct diskq *q, uint64_t len)
{
	uint64_t cap = len > UINT64_MAX - DISKQ_ALIGN ? UINT64_MAX : stage_cap(len);
	void *buf = NULL;

	if (len == 0 || q->st.staged_bytes > q->st.stage_max ||
	    cap > q->st.stage_max - q->st.staged_bytes || cap > SIZE_MAX)
		return NULL;
	for (unsigned i = 0; i < q->nkept; i++)
		if (q->kept_cap[i] == cap) {
			buf = q->kept[i];
			q->kept[i] = q->kept[--q->nkept];
			q->kept_cap[i] = q->kept_cap[q->nkept];
			break;
		}
	if (!buf && !(buf = aligned_alloc(DISKQ_ALIGN, (size_t)cap)))
		return NULL;
	q->st.staged_bytes += cap;
	return buf;
}

void
diskq_unstage(struct diskq *q, void *buf, uint64_t len)
{
	uint64_t cap;

	if (!buf)
		return;
	cap = stage_cap(len);
	q->st.staged_bytes -= cap;
	if (cap <= DISKQ_KEEP_MAX && q->nkept < DISKQ_KEEP) {
		q->kept[q->nkept] = buf;
		q->kept_cap[q->nkept++] = cap;
	} else {
		free(buf);
	}
}

void
diskq_count_loop(struct diskq *q, bool write)
{
	if (write)
		q->st.loop_writes++;
	else
		q->st.loop_reads++;
}

/* On a worker (or on the loop, when the lane is full). */
static void
job_work(void *arg)
{
	struct job *j = arg;
	int r = 0;

	switch (j->kind) {
	case JOB_STORE:
		if (j->sum != NULL) {
			*j->sum = mc_checksum(j->src, j->len);
			j->meta.checksum = *j->sum;
		}
		r = medium_store(j->m, j->off, j->src, j->len, &j->err);
		if (r == 0 && j->seal)
			r = medium_seal(j->m, j->off, j->len, &j->meta, &j->err);
		break;
	case JOB_LOAD:
		r = medium_load(j->m, j->off, j->len, j->dst, &j->err);
		break;
	case JOB_RESEAL:
		r = medium_seal(j->m, j->off, j->len, &j->meta, &j->err);
		break;
	}
	j->failed = r < 0;
}

/* On the loop. */
static void
job_done(void *arg, bool cancelled)
{
	struct job *j = arg;
	struct diskq_stats *st = &j->q->st;

	if (cancelled) {
		j->failed = true;
		mc_err_set(&j->err, MC_ERR_UNAVAILABLE, "the peer is stopping");
	}
	st->writes += j->kind == JOB_STORE;
	st->reads += j->kind == JOB_LOAD;
	st->seals += j->kind == JOB_RESEAL;
	st->failed += j->failed;
	if (j->done)
		j->done(j->arg, j->failed ? &j->err : NULL);
	else if (j->failed)
		mc_warn("a disk job on %s failed: %s", mc_tier_name(j->m->tier), j->err.msg);
	free(j->names);
	free(j);
}

/* Queue j on lane; a lane that is full or stopping has it run here, now. */
static void
submit(struct diskq *q, enum lane l, struct job *j)
{
	struct mc_err err;

	j->q = q;
	if (mc_workq_submit(q->lane[l], job_work, job_done, j, &err) == 0)
		return;
	job_work(j);
	job_done(j, false);
}

/* A job of kind for m, or NULL (the caller's done hears of it). */
static struct job *
job_new(enum job_kind kind, struct medium *m, uint64_t off, uint64_t len, diskq_done_fn done,
	void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		struct mc_err err;

		mc_err_errno(&err, "cannot allocate a disk job");
		if (done)
			done(arg, &err);
		else
			mc_warn("%s", err.msg);
		return NULL;
	}
	j->kind = kind;
	j->m = m;
	j->off = off;
	j->len = len;
	j->done = done;
	j->arg = arg;
	return j;
}

void
diskq_store(struct diskq *q, struct medium *m, uint64_t off, const void *buf, uint64_t len,
	    const struct medium_meta *meta, uint64_t *sum, diskq_done_fn done, void *arg)
{
	struct job *j = job_new(JOB_STORE, m, off, len, done, arg);

	if (!j)
		return;
	j->src = buf;
	j->sum = sum;
	if (meta) {
		j->meta = *meta;
		j->seal = true;
	}
	submit(q, LANE_DATA, j);
}

void
diskq_load(struct diskq *q, struct medium *m, uint64_t off, uint64_t len, void *buf,
	   diskq_done_fn done, void *arg)
{
	struct job *j = job_new(JOB_LOAD, m, off, len, done, arg);

	if (!j)
		return;
	j->dst = buf;
	submit(q, LANE_DATA, j);
}

void
diskq_reseal(struct diskq *q, struct medium *m, uint64_t off, uint64_t len,
	     const struct medium_meta *meta, diskq_done_fn done, void *arg)
{
	struct job *j = job_new(JOB_RESEAL, m, off, len, done, arg);
	const char *from[4] = { meta->tenant, meta->key, meta->type, meta->group };
	const uint16_t lens[4] = { meta->tenant_len, meta->key_len, meta->type_len,
				   meta->group_len };
	const char **to[4];
	size_t total = 0, at = 0;

	if (!j)
		return;
	j->meta = *meta;
	to[0] = &j->meta.tenant;
	to[1] = &j->meta.key;
	to[2] = &j->meta.type;
	to[3] = &j->meta.group;
	for (int i = 0; i < 4; i++)
		total += lens[i];
	if (!(j->names = malloc(total + 1))) {
		mc_err_errno(&j->err, "cannot copy a copy's names for its header");
		j->failed = true;
		j->q = q;
		job_done(j, false);
		return;
	}
	for (int i = 0; i < 4; i++) {
		if (lens[i] > 0)
			memcpy(j->names + at, from[i], lens[i]);
		*to[i] = j->names + at;
		at += lens[i];
	}
	submit(q, LANE_HEADERS, j);
}

void
diskq_stats(const struct diskq *q, struct diskq_stats *out)
{
	*out = q->st;
}
