/*
 * The external planner (mc-master --evict-planner): a child process
 * given the view on a pipe and expected to answer a plan on another,
 * within a deadline. The master's worker thread runs this; nothing here
 * touches the master's state.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mc/clock.h"
#include "mc/planner.h"
#include "extplan.h"

extern char **environ;

/* The largest plan a planner may write. */
#define PLAN_MAX_BYTES (1ull << 30)

/*
 * Write the view to the planner (*to_fd, closed and set to -1 once all
 * is written or the planner stops reading) while reading its plan from
 * `from` until EOF, by deadline. p->out_off tells how much it took.
 */
struct pump {
	const char *out;
	size_t out_len, out_off;
	char *in;
	size_t in_len, in_cap;
};

static int
pump_child(int *to_fd, int from, struct pump *p, uint64_t deadline_ns, struct mc_err *err)
{
	int to = *to_fd;

	while (from >= 0) {
		struct pollfd fds[2] = { { from, POLLIN, 0 }, { to, POLLOUT, 0 } };
		uint64_t now = mc_mono_ns();
		int nfds = to >= 0 ? 2 : 1;
		int r;

		if (now >= deadline_ns)
			return mc_err_set(err, MC_ERR_TIMEOUT, "timed out");
		r = poll(fds, (nfds_t)nfds, (int)((deadline_ns - now) / 1000000 + 1));
		if (r < 0 && errno != EINTR)
			return mc_err_errno(err, "poll");
		if (r <= 0)
			continue;
		if (to >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(to, p->out + p->out_off, p->out_len - p->out_off);

			if (w > 0)
				p->out_off += (size_t)w;
			/*
			 * Done, or the planner stopped reading (EPIPE): either way
			 * read on to its end; its exit status says what happened.
			 */
			if (p->out_off == p->out_len ||
			    (w < 0 && errno != EAGAIN && errno != EINTR)) {
				close(to);
				to = *to_fd = -1;
			}
		}
		if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
			ssize_t got;

			if (p->in_len == p->in_cap) {
				size_t ncap = p->in_cap == 0 ? 65536 : p->in_cap * 2;
				char *n;

				if (ncap > PLAN_MAX_BYTES)
					return mc_err_set(err, MC_ERR_TOO_LARGE,
							  "plan over %llu bytes",
							  (unsigned long long)PLAN_MAX_BYTES);
				if ((n = realloc(p->in, ncap)) == NULL)
					return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory");
				p->in = n;
				p->in_cap = ncap;
			}
			got = read(from, p->in + p->in_len, p->in_cap - p->in_len);
			if (got < 0 && errno != EAGAIN && errno != EINTR)
				return mc_err_errno(err, "cannot read the plan");
			if (got == 0)
				from = -1;
			if (got > 0)
				p->in_len += (size_t)got;
		}
	}
	return 0;
}

/* Wait for pid until deadline, killing it then; its exit status, or -1. */
static int
reap(pid_t pid, uint64_t deadline_ns)
{
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0 && errno != EINTR)
			return -1;
		if (mc_mono_ns() >= deadline_ns) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
		usleep(2000);
	}
}

int
extplan_run(const struct extplan *x, const struct mc_cand_view *view, struct mc_plan *out,
	    struct mc_err *err)
{
	uint64_t deadline = mc_mono_ns() + x->timeout_ms * 1000000ull;
	char script[4096], target[32], lower[32];
	int to_child[2] = { -1, -1 }, from_child[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct pump p = { 0 };
	char *stream = NULL;
	size_t stream_len = 0;
	pid_t pid = -1;
	FILE *f;
	int rc = -1, st;

	mc_plan_init(out);
	f = open_memstream(&stream, &stream_len);
	if (f == NULL)
		return mc_err_errno(err, "cannot buffer the view");
	if (mc_cand_write(f, view, false, err) != 0) {
		fclose(f);
		free(stream);
		return -1;
	}
	if (fclose(f) != 0) {
		free(stream);
		return mc_err_errno(err, "cannot buffer the view");
	}
	snprintf(script, sizeof(script), "%s \"$@\"", x->cmd);
	snprintf(target, sizeof(target), "%llu", (unsigned long long)x->target);
	snprintf(lower, sizeof(lower), "%llu", (unsigned long long)x->lowerbound);
	char *argv[] = { "sh",
			 "-c",
			 script,
			 "sh",
			 "--target",
			 target,
			 x->lowerbound != MC_PLAN_DEFAULT_LOWERBOUND ? "--lowerbound" : NULL,
			 lower,
			 x->soft_pinned_pass ? "--soft-pinned-pass" : NULL,
			 NULL };
	if (argv[6] == NULL) {
		argv[6] = argv[8];
		argv[7] = NULL;
	}
	if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
		mc_err_errno(err, "cannot make pipes for the planner");
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
	posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	/* Its own process group, so a timeout kills whatever it started too. */
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	st = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (st != 0) {
		errno = st;
		mc_err_errno(err, "cannot start the planner");
		pid = -1;
		goto out;
	}
	close(to_child[0]);
	close(from_child[1]);
	to_child[0] = from_child[1] = -1;
	fcntl(to_child[1], F_SETFL, O_NONBLOCK);
	p.out = stream;
	p.out_len = stream_len;
	rc = pump_child(&to_child[1], from_child[0], &p, deadline, err);
	st = reap(pid, rc == 0 ? deadline : 0);
	pid = -1;
	if (rc == 0 && st != 0) {
		rc = mc_err_set(err, MC_ERR_PROTO, "the planner exited with status %d", st);
	} else if (rc == 0 && p.out_off < p.out_len) {
		rc = mc_err_set(err, MC_ERR_PROTO, "the planner exited before reading the view");
	} else if (rc == 0) {
		FILE *pf = fmemopen(p.in, p.in_len, "r");

		if (pf == NULL || p.in_len == 0) {
			rc = mc_err_set(err, MC_ERR_PROTO, "the planner wrote no plan");
		} else {
			rc = mc_plan_read(pf, out, false, err);
		}
		if (pf != NULL)
			fclose(pf);
	}
out:
	if (pid > 0)
		reap(pid, 0);
	for (int i = 0; i < 2; i++) {
		if (to_child[i] >= 0)
			close(to_child[i]);
		if (from_child[i] >= 0)
			close(from_child[i]);
	}
	free(stream);
	free(p.in);
	if (rc != 0) {
		mc_plan_free(out);
		mc_plan_init(out);
	}
	return rc;
}
