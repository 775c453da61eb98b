/*
 * mc_tool_parse: options before and after the command, a command's own
 * options, positional argument counts, and the usage errors (exit 64,
 * message naming what is wrong), the latter checked in forked children;
 * mc_tool_fail's exit statuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mc/log.h"
#include "mc/tool.h"
#include "tap.h"

static const char *o_master;
static bool o_json, o_force;
static uint64_t o_keep;
static int ran_argc;

static int
run_show(int argc, char **argv)
{
	(void)argv;
	ran_argc = argc;
	return 0;
}

static const struct mc_opt opts[] = {
	{ "where", 'w', "ADDR", "MC_TEST_MASTER", "master", mc_set_str, &o_master },
	{ "json", 0, NULL, NULL, "json", mc_set_flag, &o_json },
	{ 0 },
};

static const struct mc_opt show_opts[] = {
	{ "force", 0, NULL, NULL, "force", mc_set_flag, &o_force },
	{ 0 },
};

static const struct mc_opt ls_opts[] = {
	{ "keep", 0, "N", NULL, "keep", mc_set_u64, &o_keep },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ .name = "show",
	  .args = "KEY",
	  .help = "show one",
	  .min_args = 1,
	  .max_args = 1,
	  .run = run_show,
	  .opts = show_opts },
	{ .name = "ls",
	  .args = "[DIR]",
	  .help = "list",
	  .max_args = 1,
	  .run = run_show,
	  .opts = ls_opts },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-test",
	.globals = "[-w ADDR]",
	.summary = "test tool",
	.opts = opts,
	.cmds = cmds,
};

static const struct mc_tool_cmd single_cmd = { .args = "[--json]", .run = run_show };

static const struct mc_tool single = {
	.prog = "mc-test",
	.opts = opts,
	.single = &single_cmd,
};

static const struct mc_tool *under_test = &tool;

/*
 * Run fn(arg) in a child with its stderr captured into errbuf; the
 * child's exit status (fn exits), or -1.
 */
static int
in_child(void (*fn)(const void *arg), const void *arg, char *errbuf, size_t cap)
{
	int p[2], status = -1;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 2);
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	/* stderr arrives in several writes: read to the end */
	while (got < cap - 1 && (n = read(p[0], errbuf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	errbuf[got] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
parse_args(const void *arg)
{
	const char *const *args = arg;
	char *argv[16];
	char **av = argv;
	int argc = 0;

	while (argc < 15 && args[argc] != NULL) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	mc_tool_parse(under_test, &argc, &av);
}

/* Run mc_tool_parse on args in a child; its exit status and stderr. */
static int
child(const char *const *args, char *errbuf, size_t cap)
{
	return in_child(parse_args, args, errbuf, cap);
}

static void
fail_with(const void *arg)
{
	mc_tool_fail(arg, "frob", "thing");
}

/* mc_tool_fail in a child: the exit status for an error of code and msg. */
static int
fail_status(int code, const char *msg, char *errbuf, size_t cap)
{
	struct mc_err e;

	mc_err_set(&e, code, "%s", msg);
	return in_child(fail_with, &e, errbuf, cap);
}

int
main(void)
{
	char *argv[] = { "mc-test", "-w", "a:1", "show", "k", "--json", NULL };
	char **av = argv;
	int argc = 6;
	char err[512];
	const struct mc_tool_cmd *cmd;

	mc_log_init("mc-test", 0);
	setenv("MC_TEST_MASTER", "env:2", 1);
	cmd = mc_tool_parse(&tool, &argc, &av);
	TAP_OK(cmd == &cmds[0] && argc == 1 && strcmp(av[0], "k") == 0,
	       "tool: the command and its one positional argument are found");
	TAP_OK(o_master != NULL && strcmp(o_master, "a:1") == 0,
	       "tool: a flag before the command beats the environment on the second pass");
	TAP_OK(o_json, "tool: an option after the command is parsed");

	TAP_OK(child((const char *const[]){ "mc-test", NULL }, err, sizeof(err)) == 64 &&
		       strstr(err, "missing command"),
	       "tool: no command exits 64 saying so");
	TAP_OK(child((const char *const[]){ "mc-test", "nope", NULL }, err, sizeof(err)) == 64 &&
		       strstr(err, "unknown command 'nope'"),
	       "tool: an unknown command exits 64 naming it");
	TAP_OK(child((const char *const[]){ "mc-test", "show", NULL }, err, sizeof(err)) == 64 &&
		       strstr(err, "show: missing KEY") &&
		       strstr(err, "usage: mc-test [-w ADDR] show KEY"),
	       "tool: a missing argument is named after the usage line");
	TAP_OK(child((const char *const[]){ "mc-test", "ls", "a", "b", NULL }, err, sizeof(err)) ==
			       64 &&
		       strstr(err, "unexpected argument 'b'"),
	       "tool: an extra argument exits 64 naming it");
	TAP_OK(child((const char *const[]){ "mc-test", "ls", NULL }, err, sizeof(err)) == 0,
	       "tool: optional arguments may be left out");

	/* a command's own options: after it, before it, and not for another */
	{
		char *a2[] = { "mc-test", "show", "--force", "k", NULL };
		char *a3[] = { "mc-test", "--keep", "3", "ls", NULL };

		av = a2;
		argc = 4;
		cmd = mc_tool_parse(&tool, &argc, &av);
		TAP_OK(cmd == &cmds[0] && o_force && argc == 1,
		       "tool: a command's own option after it is parsed");
		av = a3;
		argc = 4;
		cmd = mc_tool_parse(&tool, &argc, &av);
		TAP_OK(cmd == &cmds[1] && o_keep == 3 && argc == 0,
		       "tool: a command's own option may come before it");
	}
	TAP_OK(child((const char *const[]){ "mc-test", "ls", "--force", NULL }, err, sizeof(err)) ==
			       64 &&
		       strstr(err, "option '--force' belongs to 'show'"),
	       "tool: another command's option exits 64 naming its owner");
	TAP_OK(child((const char *const[]){ "mc-test", "--force", "ls", NULL }, err, sizeof(err)) ==
			       64 &&
		       strstr(err, "belongs to 'show'"),
	       "tool: ... also when given before the command");
	TAP_OK(child((const char *const[]){ "mc-test", "ls", "--keep", "x", NULL }, err,
		     sizeof(err)) == 64 &&
		       strstr(err, "invalid --keep 'x'"),
	       "tool: a bad value of a command's option names it");

	under_test = &single;
	TAP_OK(child((const char *const[]){ "mc-test", "--json", NULL }, err, sizeof(err)) == 0,
	       "tool: a tool without commands parses its options");
	TAP_OK(child((const char *const[]){ "mc-test", "stray", NULL }, err, sizeof(err)) == 64 &&
		       strstr(err, "unexpected argument 'stray'") &&
		       strstr(err, "usage: mc-test [--json]"),
	       "tool: ... and refuses an argument it takes none of");

	TAP_OK(fail_status(MC_ERR_NOT_FOUND, "x", err, sizeof(err)) == 1 &&
		       strstr(err, "mc-test: cannot frob 'thing': not found"),
	       "fail: not found is status 1, in plain words");
	TAP_OK(fail_status(MC_ERR_UNAVAILABLE, "cannot connect to a:1: connection refused", err,
			   sizeof(err)) == 69 &&
		       strstr(err, "mc-test: cannot connect to a:1: connection refused"),
	       "fail: a sentence of its own is kept, unavailable is 69");
	TAP_OK(fail_status(MC_ERR_SYSTEM, "disk full", err, sizeof(err)) == 1,
	       "fail: an OS call that failed is a failed operation (1)");
	TAP_OK(fail_status(MC_ERR_INVALID, "unknown method 'frob'", err, sizeof(err)) == 69 &&
		       strstr(err, "does not offer it"),
	       "fail: a master without the method lacks the service (69)");
	TAP_OK(fail_status(MC_ERR_INVALID, "hello to master a:1 failed: unknown method 'hello'",
			   err, sizeof(err)) == 69 &&
		       strstr(err, "does not offer it (not a master, or an older one)") &&
		       strstr(err, "unknown method 'hello'"),
	       "fail: ... also when the answer comes wrapped, as hello to a peer's address does");
	TAP_OK(fail_status(MC_ERR_INVALID, "unknown tier 'floppy'", err, sizeof(err)) == 64,
	       "fail: any other invalid answer is still a usage error (64)");
	TAP_OK(fail_status(MC_ERR_PROTO, "bad", err, sizeof(err)) == 65, "fail: bad data is 65");
	return tap_done();
}
