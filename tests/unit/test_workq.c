/*
 * Unit tests for the worker queue (libmc/workq.c): jobs start in the
 * order submitted, the queue refuses work beyond its bound, freeing it
 * with work pending cancels what waits and still runs every completion
 * once, draining it runs everything submitted to its end, and completions run on the owner's thread, woken by the eventfd.
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "mc/workq.h"
#include "tap.h"

#define NJOBS 64

/* A job of the tests: it records where and in which order it ran. */
struct tjob {
	int idx;
	atomic_bool started, gate;
	bool hold; /* wait for the gate before returning */
	pthread_t ran_on, done_on;
	int done_calls;
	bool cancelled;
};

static struct tjob jobs[NJOBS];
static int order[NJOBS], norder; /* job indexes in the order their work started */
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int done_order[NJOBS], ndone;

static void
reset(void)
{
	memset(jobs, 0, sizeof(jobs));
	for (int i = 0; i < NJOBS; i++)
		jobs[i].idx = i;
	norder = ndone = 0;
}

static void
work(void *arg)
{
	struct tjob *j = arg;

	pthread_mutex_lock(&order_mu);
	order[norder++] = j->idx;
	pthread_mutex_unlock(&order_mu);
	j->ran_on = pthread_self();
	atomic_store(&j->started, true);
	while (j->hold && !atomic_load(&j->gate))
		sched_yield();
}

static void
done(void *arg, bool cancelled)
{
	struct tjob *j = arg;

	j->done_on = pthread_self();
	j->done_calls++;
	j->cancelled = cancelled;
	done_order[ndone++] = j->idx;
}

static void
wait_started(int i)
{
	while (!atomic_load(&jobs[i].started))
		sched_yield();
}

/* Complete on this thread until n completions have run in all. */
static void
complete_until(struct mc_workq *q, int n)
{
	struct pollfd pfd = { .fd = mc_workq_fd(q), .events = POLLIN };

	while (ndone < n) {
		poll(&pfd, 1, 1000);
		mc_workq_complete(q);
	}
}

static int
submit(struct mc_workq *q, int i, struct mc_err *err)
{
	return mc_workq_submit(q, work, done, &jobs[i], err);
}

/* Helper thread: open job 0's gate once nothing waits any more. */
static void *
open_when_drained(void *arg)
{
	struct mc_workq *q = arg;

	while (mc_workq_waiting(q) != 0)
		sched_yield();
	atomic_store(&jobs[0].gate, true);
	return NULL;
}

static void
test_one_worker_order(void)
{
	struct mc_err err;
	struct mc_workq *q = mc_workq_new(1, NJOBS, 0, &err);
	bool ok = true, owner = true, elsewhere = true;

	reset();
	for (int i = 0; i < NJOBS; i++)
		ok &= submit(q, i, &err) == 0;
	TAP_OK(ok, "one worker: %d jobs submitted", NJOBS);
	complete_until(q, NJOBS);
	for (int i = 0; i < NJOBS; i++) {
		ok &= order[i] == i && done_order[i] == i && jobs[i].done_calls == 1 &&
		      !jobs[i].cancelled;
		owner &= pthread_equal(jobs[i].done_on, pthread_self());
		elsewhere &= !pthread_equal(jobs[i].ran_on, pthread_self());
	}
	TAP_OK(ok, "one worker: jobs run and complete in the order submitted, each once");
	TAP_OK(elsewhere, "work runs on a worker thread");
	TAP_OK(owner, "completions run on the owner's thread");
	TAP_OK(mc_workq_complete(q) == 0, "nothing left to complete");
	mc_workq_free(q);
}

static void
test_start_order_and_bound(void)
{
	struct mc_err err;
	struct mc_workq *q = mc_workq_new(2, 3, 5, &err);

	reset();
	for (int i = 0; i < 5; i++)
		jobs[i].hold = true;
	TAP_OK(submit(q, 0, &err) == 0 && submit(q, 1, &err) == 0, "two workers take two jobs");
	wait_started(0);
	wait_started(1);
	TAP_OK(submit(q, 2, &err) == 0 && submit(q, 3, &err) == 0 && submit(q, 4, &err) == 0,
	       "three more wait: the bound");
	TAP_OK(mc_workq_waiting(q) == 3, "three jobs waiting");
	TAP_OK(submit(q, 5, &err) != 0 && err.code == MC_ERR_BUSY,
	       "a fourth waiting job is refused as busy: %s", err.msg);
	TAP_OK(jobs[5].done_calls == 0, "a refused job never completes");
	atomic_store(&jobs[1].gate, true);
	wait_started(2);
	TAP_OK(!atomic_load(&jobs[3].started) && !atomic_load(&jobs[4].started),
	       "several workers: the oldest waiting job starts next");
	TAP_OK(submit(q, 5, &err) == 0, "room again once a job started");
	atomic_store(&jobs[0].gate, true);
	wait_started(3);
	TAP_OK(!atomic_load(&jobs[4].started), "then the next oldest");
	/* one worker freed at a time, so which job it takes is what the order shows */
	atomic_store(&jobs[2].gate, true);
	wait_started(4);
	TAP_OK(!atomic_load(&jobs[5].started), "a freed worker takes the older of two waiting");
	atomic_store(&jobs[3].gate, true);
	atomic_store(&jobs[4].gate, true);
	complete_until(q, 6);
	TAP_OK(order[0] + order[1] == 1 && order[2] == 2 && order[3] == 3 && order[4] == 4 &&
		       order[5] == 5,
	       "start order is submission order");
	mc_workq_free(q);
}

static void
test_free_with_work_pending(void)
{
	struct mc_err err;
	struct mc_workq *q = mc_workq_new(1, 8, 0, &err);
	pthread_t t;
	bool once = true;

	reset();
	jobs[0].hold = true;
	submit(q, 0, &err);
	wait_started(0);
	for (int i = 1; i < 4; i++)
		submit(q, i, &err);
	/* job 0 runs until mc_workq_free has taken the waiting jobs off */
	pthread_create(&t, NULL, open_when_drained, q);
	mc_workq_free(q);
	pthread_join(t, NULL);
	for (int i = 0; i < 4; i++)
		once &= jobs[i].done_calls == 1 && pthread_equal(jobs[i].done_on, pthread_self());
	TAP_OK(once, "free: every completion runs once, on the owner's thread");
	TAP_OK(!jobs[0].cancelled && norder == 1, "free: the running job finishes, not cancelled");
	TAP_OK(jobs[1].cancelled && jobs[2].cancelled && jobs[3].cancelled,
	       "free: the waiting jobs are cancelled, their work never runs");
	TAP_OK(done_order[0] == 0 && done_order[1] == 1 && done_order[3] == 3,
	       "free: the finished job's completion first, then the cancelled in order");
}

/* A completion that submits: refused while the queue is being freed. */
static struct mc_workq *resubmit_q;
static int resubmit_rc = 2;

static void
resubmit_done(void *arg, bool cancelled)
{
	struct mc_err err;

	done(arg, cancelled);
	resubmit_rc = mc_workq_submit(resubmit_q, work, NULL, &jobs[9], &err);
}

static void
test_resubmit(void)
{
	struct mc_err err;
	struct mc_workq *q = mc_workq_new(1, 4, 0, &err);

	reset();
	resubmit_q = q;
	mc_workq_submit(q, work, resubmit_done, &jobs[0], &err);
	complete_until(q, 1);
	TAP_OK(resubmit_rc == 0, "a completion may submit again");
	mc_workq_submit(q, work, resubmit_done, &jobs[1], &err);
	mc_workq_free(q);
	TAP_OK(jobs[1].done_calls == 1 && resubmit_rc == -1,
	       "but not from mc_workq_free: refused, and nothing leaks");
}

/* A completion that submits one more job, whose completion is counted too. */
static void
chain_done(void *arg, bool cancelled)
{
	struct mc_err err;

	done(arg, cancelled);
	if (((struct tjob *)arg)->idx == 3)
		mc_workq_submit(resubmit_q, work, done, &jobs[4], &err);
}

static void
test_drain(void)
{
	struct mc_err err;
	struct mc_workq *q = mc_workq_new(1, 8, 0, &err);
	bool ran = true;

	reset();
	resubmit_q = q;
	for (int i = 0; i < 4; i++)
		mc_workq_submit(q, work, chain_done, &jobs[i], &err);
	mc_workq_drain(q);
	for (int i = 0; i < 5; i++)
		ran &= jobs[i].done_calls == 1 && !jobs[i].cancelled &&
		       pthread_equal(jobs[i].done_on, pthread_self());
	TAP_OK(ran && norder == 5,
	       "drain: every waiting job runs, none cancelled, each completion once on the owner");
	TAP_OK(done_order[3] == 3 && done_order[4] == 4,
	       "drain: a job a completion submitted is run and completed too");
	TAP_OK(mc_workq_waiting(q) == 0 && mc_workq_complete(q) == 0,
	       "drain: nothing waits or is left to complete after it");
	mc_workq_drain(q);
	TAP_OK(ndone == 5, "drain: an idle queue returns at once");
	mc_workq_free(q);
	mc_workq_drain(NULL);
}

int
main(void)
{
	struct mc_err err;

	TAP_OK(mc_workq_new(0, 1, 0, &err) == NULL && err.code == MC_ERR_INVALID,
	       "no threads: invalid: %s", err.msg);
	test_one_worker_order();
	test_start_order_and_bound();
	test_free_with_work_pending();
	test_resubmit();
	test_drain();
	mc_workq_free(NULL);
	return tap_done();
}
