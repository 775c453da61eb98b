/*
 * mc_tool_parse: options before and after the command, positional
 * argument counts, and the usage errors (exit 64, message naming what is
 * wrong), the latter checked in forked children.
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
static bool o_json;
static int ran_argc;

static int
run_show(int argc, char **argv)
{
	(void)argv;
	ran_argc = argc;
	return 0;
}

static const struct mc_opt opts[] = {
	{ "master", 'm', "ADDR", "MC_TEST_MASTER", "master", mc_set_str, &o_master },
	{ "json", 0, NULL, NULL, "json", mc_set_flag, &o_json },
	{ 0 },
};

static const struct mc_tool_cmd cmds[] = {
	{ "show", "KEY", "show one", 1, 1, run_show },
	{ "ls", "[DIR]", "list", 0, 1, run_show },
	{ 0 },
};

static const struct mc_tool tool = {
	.prog = "mc-test",
	.globals = "[-m ADDR]",
	.summary = "test tool",
	.version = "0.1.0",
	.opts = opts,
	.cmds = cmds,
};

/* Run mc_tool_parse on args in a child; its exit status and stderr. */
static int
child(const char *const *args, char *errbuf, size_t cap)
{
	int p[2], status = -1;
	pid_t pid;
	ssize_t n;

	if (pipe(p) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *argv[16];
		int argc = 0;

		close(p[0]);
		dup2(p[1], 2);
		while (argc < 15 && args[argc] != NULL) {
			argv[argc] = (char *)args[argc];
			argc++;
		}
		argv[argc] = NULL;
		char **av = argv;
		mc_tool_parse(&tool, &argc, &av);
		_exit(0);
	}
	close(p[1]);
	/* stderr arrives in several writes: read to the end */
	size_t got = 0;
	while (got < cap - 1 && (n = read(p[0], errbuf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	errbuf[got] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int
main(void)
{
	char *argv[] = { "mc-test", "-m", "a:1", "show", "k", "--json", NULL };
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
		       strstr(err, "usage: mc-test [-m ADDR] show KEY"),
	       "tool: a missing argument is named after the usage line");
	TAP_OK(child((const char *const[]){ "mc-test", "ls", "a", "b", NULL }, err, sizeof(err)) ==
			       64 &&
		       strstr(err, "unexpected argument 'b'"),
	       "tool: an extra argument exits 64 naming it");
	TAP_OK(child((const char *const[]){ "mc-test", "ls", NULL }, err, sizeof(err)) == 0,
	       "tool: optional arguments may be left out");
	return tap_done();
}
