/*
 * The worker queue (see workq.h): one mutex guards the waiting FIFO and
 * the list of finished jobs; workers sleep on a condition variable and
 * wake the owner through an eventfd.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mc/workq.h"

struct job {
	struct job *next;
	mc_work_fn work;
	mc_done_fn done;
	void *arg;
	bool cancelled;
};

/* A FIFO of jobs, linked through next. */
struct jobs {
	struct job *head, *tail;
	size_t n;
};

struct mc_workq {
	pthread_mutex_t mu;
	pthread_cond_t more;   /* waiting gained a job, or stopping was set */
	pthread_cond_t posted; /* a job finished (mc_workq_drain waits on it) */
	struct jobs waiting;   /* submitted, not started */
	struct jobs done;      /* finished, completion not run */
	struct jobs cancelled; /* taken off waiting by mc_workq_free */
	size_t max_waiting;
	bool stopping;
	int nice;
	int efd;
	pthread_t *threads;
	unsigned nthreads; /* started */
	unsigned running;  /* jobs taken off waiting, not yet done */
};

static void
jobs_push(struct jobs *l, struct job *j)
{
	j->next = NULL;
	if (l->tail != NULL)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	l->n++;
}

static struct job *
jobs_pop(struct jobs *l)
{
	struct job *j = l->head;

	if (j == NULL)
		return NULL;
	l->head = j->next;
	if (l->head == NULL)
		l->tail = NULL;
	l->n--;
	return j;
}

/* Append all of from to l. */
static void
jobs_splice(struct jobs *l, struct jobs *from)
{
	if (from->head == NULL)
		return;
	if (l->tail != NULL)
		l->tail->next = from->head;
	else
		l->head = from->head;
	l->tail = from->tail;
	l->n += from->n;
	*from = (struct jobs){ NULL, NULL, 0 };
}

static void
wake_owner(struct mc_workq *q)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is saturated: the owner is woken anyway. */
	while (write(q->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static void *
worker(void *arg)
{
	struct mc_workq *q = arg;
	struct job *j;

	if (q->nice != 0)
		setpriority(PRIO_PROCESS, (id_t)gettid(), q->nice);
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (q->waiting.head == NULL && !q->stopping)
			pthread_cond_wait(&q->more, &q->mu);
		/* Stopping takes nothing more: mc_workq_free cancels what waits. */
		if (q->stopping)
			break;
		j = jobs_pop(&q->waiting);
		q->running++;
		pthread_mutex_unlock(&q->mu);
		j->work(j->arg);
		pthread_mutex_lock(&q->mu);
		q->running--;
		jobs_push(&q->done, j);
		pthread_cond_broadcast(&q->posted);
		wake_owner(q);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

/* Stop and join the workers started so far. */
static void
stop_workers(struct mc_workq *q)
{
	pthread_mutex_lock(&q->mu);
	q->stopping = true;
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->mu);
	for (unsigned i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	q->nthreads = 0;
}

struct mc_workq *
mc_workq_new(unsigned threads, size_t max_waiting, int nice, struct mc_err *err)
{
	struct mc_workq *q;
	int rc;

	if (threads == 0 || max_waiting == 0) {
		mc_err_set(err, MC_ERR_INVALID, "a work queue needs a thread and room for a job");
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL || (q->threads = calloc(threads, sizeof(*q->threads))) == NULL) {
		free(q);
		mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a work queue");
		return NULL;
	}
	q->max_waiting = max_waiting;
	q->nice = nice;
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0) {
		mc_err_errno(err, "cannot make the work queue's eventfd");
		free(q->threads);
		free(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->posted, NULL);
	for (; q->nthreads < threads; q->nthreads++) {
		rc = pthread_create(&q->threads[q->nthreads], NULL, worker, q);
		if (rc != 0) {
			errno = rc;
			mc_err_errno(err, "cannot start a worker thread");
			goto fail;
		}
	}
	return q;
fail:
	mc_workq_free(q);
	return NULL;
}

int
mc_workq_submit(struct mc_workq *q, mc_work_fn work, mc_done_fn done, void *arg, struct mc_err *err)
{
	struct job *j = malloc(sizeof(*j));
	int rc = 0;

	if (j == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for a job");
	*j = (struct job){ .work = work, .done = done, .arg = arg };
	pthread_mutex_lock(&q->mu);
	if (q->stopping)
		rc = mc_err_set(err, MC_ERR_BUSY, "the work queue is stopping");
	else if (q->waiting.n >= q->max_waiting)
		rc = mc_err_set(err, MC_ERR_BUSY, "the work queue is full (%zu jobs waiting)",
				q->waiting.n);
	else {
		jobs_push(&q->waiting, j);
		pthread_cond_signal(&q->more);
	}
	pthread_mutex_unlock(&q->mu);
	if (rc != 0)
		free(j);
	return rc;
}

int
mc_workq_fd(const struct mc_workq *q)
{
	return q->efd;
}

size_t
mc_workq_waiting(struct mc_workq *q)
{
	size_t n;

	pthread_mutex_lock(&q->mu);
	n = q->waiting.n;
	pthread_mutex_unlock(&q->mu);
	return n;
}

size_t
mc_workq_complete(struct mc_workq *q)
{
	struct jobs batch = { NULL, NULL, 0 };
	struct job *j;
	uint64_t count;
	size_t ran = 0;

	/* Read first: a job posted after the splice bumps the counter again. */
	while (read(q->efd, &count, sizeof(count)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&q->mu);
	jobs_splice(&batch, &q->done);
	pthread_mutex_unlock(&q->mu);
	while ((j = jobs_pop(&batch)) != NULL) {
		if (j->done != NULL)
			j->done(j->arg, j->cancelled);
		free(j);
		ran++;
	}
	return ran;
}

void
mc_workq_drain(struct mc_workq *q)
{
	bool idle;

	if (q == NULL)
		return;
	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (q->done.head == NULL && (q->waiting.head != NULL || q->running > 0))
			pthread_cond_wait(&q->posted, &q->mu);
		idle = q->done.head == NULL;
		pthread_mutex_unlock(&q->mu);
		if (idle)
			return;
		/* A completion may submit again: the loop waits for that job too. */
		mc_workq_complete(q);
	}
}

void
mc_workq_free(struct mc_workq *q)
{
	struct job *j;

	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	/* Cancelled at once, so nothing that waits starts while the running ones end. */
	q->stopping = true;
	for (j = q->waiting.head; j != NULL; j = j->next)
		j->cancelled = true;
	jobs_splice(&q->cancelled, &q->waiting);
	pthread_mutex_unlock(&q->mu);
	stop_workers(q);
	/* No worker is left: the lists are the owner's alone. */
	jobs_splice(&q->done, &q->cancelled);
	while (q->done.head != NULL)
		mc_workq_complete(q);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->posted);
	pthread_mutex_destroy(&q->mu);
	close(q->efd);
	free(q->threads);
	free(q);
}
