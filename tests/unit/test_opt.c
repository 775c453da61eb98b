/* Unit tests for the option table parser (libmc/opt.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mc/log.h"
#include "mc/opt.h"
#include "mc/proto.h"
#include "tap.h"

static const char *o_listen, *o_config, *o_mode;
static uint64_t o_dram, o_ttl;
static bool o_verbose;
static int o_count;

static const struct mc_opt opts[] = {
	{ "listen", 'l', "ADDR", "TEST_LISTEN", "address to listen on", mc_set_str, &o_listen },
	{ "dram", 0, "SIZE", "TEST_DRAM", "DRAM arena size", mc_set_size, &o_dram },
	{ "ttl", 0, "DURATION", NULL, "lease ttl", mc_set_duration, &o_ttl },
	{ "verbose", 'v', NULL, "TEST_VERBOSE", "say more", mc_set_flag, &o_verbose },
	{ "count", 'n', "N", NULL, "how many", mc_set_int, &o_count },
	{ "config", 'c', "FILE", "TEST_CONFIG", "read options from FILE", mc_set_str, &o_config },
	{ "mode", 0, MC_ARG_ONE_OF("MODE", "fast|slow"), NULL, "how to go", mc_set_str, &o_mode },
	{ 0 },
};

static const struct mc_cmd cmds[] = {
	{ "put", "store an object" },
	{ "get", "fetch an object" },
	{ 0 },
};

static const struct mc_opt_spec spec = {
	.usage = "test_opt [OPTIONS]",
	.summary = "exercise the option parser",
	.opts = opts,
	.version = MC_VERSION,
};

static const struct mc_opt_spec spec_cmds = {
	.usage = "test_opt [OPTIONS] CMD [ARGS]",
	.summary = "exercise the option parser with commands",
	.opts = opts,
	.cmds = cmds,
	.version = MC_VERSION,
};

static void
reset(void)
{
	o_listen = "default";
	o_config = NULL;
	o_dram = 1;
	o_ttl = 0;
	o_verbose = false;
	o_count = 0;
	unsetenv("TEST_LISTEN");
	unsetenv("TEST_DRAM");
	unsetenv("TEST_VERBOSE");
	unsetenv("TEST_CONFIG");
}

static int
parse(const struct mc_opt_spec *s, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return mc_opt_parse(s, argc, argv);
}

static char *
write_file(const char *text)
{
	static char paths[8][64];
	static int next;
	char *path = paths[next++ % 8];
	FILE *f;
	int fd;

	snprintf(path, 64, "/tmp/test_opt.XXXXXX");
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL)
		return NULL;
	fputs(text, f);
	fclose(f);
	return path;
}

static char *
slurp(FILE *f)
{
	static char buf[3][8192];
	static int next;
	char *b = buf[next++ % 3];
	size_t n;

	rewind(f);
	n = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[n] = '\0';
	return b;
}

/* Run mc_opt_parse in a child; collect its exit status, stdout and stderr. */
struct child {
	int status;
	char *out;
	char *err;
};

static struct child
run_child(const struct mc_opt_spec *s, char **argv)
{
	struct child c = { -1, "", "" };
	FILE *out = tmpfile(), *err = tmpfile();
	pid_t pid;
	int st;

	if (out == NULL || err == NULL)
		return c;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		parse(s, argv);
		fflush(stdout);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return c;
	c.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	c.out = slurp(out);
	c.err = slurp(err);
	fclose(out);
	fclose(err);
	return c;
}

/* A descriptor's number as an option value. */
static const char *
fd_text(int fd, char *buf, size_t cap)
{
	snprintf(buf, cap, "%d", fd);
	return buf;
}

static void
test_set_fd(void)
{
	char why[201], n[16];
	int p[2], i = -1;

	if (pipe(p) != 0) {
		TAP_OK(0, "setter: fd: a pipe to test with");
		return;
	}
	TAP_OK(mc_set_fd(fd_text(p[1], n, sizeof(n)), &i, why) == 0 && i == p[1],
	       "setter: fd takes a descriptor open for writing");
	TAP_OK(mc_set_fd(fd_text(p[0], n, sizeof(n)), &i, why) == -1 &&
		       strcmp(why, "not open for writing") == 0,
	       "setter: fd refuses one open only for reading");
	close(p[0]);
	close(p[1]);
	TAP_OK(mc_set_fd(fd_text(p[1], n, sizeof(n)), &i, why) == -1 &&
		       strcmp(why, "not an open file descriptor") == 0,
	       "setter: fd refuses one that is not open");
}

static void
test_set_name(void)
{
	char why[201], v[MC_NAME_MAX + 2];
	const char *s = NULL;

	memset(v, 'h', sizeof(v) - 1);
	v[sizeof(v) - 1] = '\0';
	TAP_OK(mc_set_name(v, &s, why) == -1 && s == NULL && strstr(why, "129 characters") &&
		       strstr(why, "wire limit of 128"),
	       "setter: name refuses one over the wire limit, saying both lengths");
	v[MC_NAME_MAX] = '\0';
	TAP_OK(mc_set_name(v, &s, why) == 0 && s == v, "setter: name takes one at the limit");
	TAP_OK(mc_set_name("", &s, why) == -1 && strstr(why, "empty"),
	       "setter: name refuses an empty one");
}

static void
test_setters(void)
{
	char why[256];
	uint64_t u = 0;
	int i = 0;
	double d = 0;
	bool b = false;
	const char *s = NULL;

	TAP_OK(mc_set_size("64KiB", &u, why) == 0 && u == 65536, "setter: size parses units");
	why[0] = '\0';
	TAP_OK(mc_set_size("10X", &u, why) == -1 && strcmp(why, "unknown unit 'X'") == 0,
	       "setter: size failure says why");
	TAP_OK(mc_set_duration("1.5s", &u, why) == 0 && u == 1500, "setter: duration in ms");
	TAP_OK(mc_set_duration("5y", &u, why) == -1 && strstr(why, "unknown unit") != NULL,
	       "setter: bad duration says why");
	TAP_OK(mc_set_u64("42", &u, why) == 0 && u == 42, "setter: u64");
	TAP_OK(mc_set_int("-7", &i, why) == 0 && i == -7, "setter: int accepts negatives");
	TAP_OK(mc_set_int("3000000000", &i, why) == -1 && strstr(why, "range") != NULL,
	       "setter: int rejects values past INT_MAX");
	TAP_OK(mc_set_int("4x", &i, why) == -1 && mc_set_int("", &i, why) == -1,
	       "setter: int rejects junk and empty");
	TAP_OK(mc_set_double("0.5", &d, why) == 0 && d == 0.5, "setter: double");
	TAP_OK(mc_set_flag(NULL, &b, why) == 0 && b, "setter: flag sets true");
	TAP_OK(mc_set_flag("off", &b, why) == 0 && !b, "setter: flag with a value parses a bool");
	TAP_OK(mc_set_str("x", &s, why) == 0 && strcmp(s, "x") == 0,
	       "setter: str keeps the pointer");
	TAP_OK(mc_set_positive_int("5", &i, why) == 0 && i == 5 &&
		       mc_set_positive_int("0", &i, why) == -1 && strstr(why, "at least 1"),
	       "setter: positive int refuses zero");
	TAP_OK(mc_set_count("0", &i, why) == 0 && i == 0 && mc_set_count("7", &i, why) == 0 &&
		       i == 7 && mc_set_count("-1", &i, why) == -1 && strstr(why, "0 or more"),
	       "setter: count takes zero, refuses negatives");
	TAP_OK(mc_set_fd("-1", &i, why) == -1, "setter: fd refuses negative numbers");
	test_set_fd();
	test_set_name();
	TAP_OK(mc_set_log_level("warn", NULL, why) == 0 &&
		       mc_set_log_level("loud", NULL, why) == -1 && strstr(why, "debug"),
	       "setter: log level names the levels it accepts");
	mc_set_log_level("info", NULL, why);
}

static void
test_parse_basic(void)
{
	char *argv1[] = { "test_opt", "--listen", "1.2.3.4:5", "--dram=2GiB", "-v",    "-n",
			  "3",	      "file1",	  "--ttl",     "30s",	      "file2", NULL };
	char *argv2[] = { "test_opt", "-n", "2", "put", "--bogus", "key", NULL };
	int idx;

	reset();
	idx = parse(&spec, argv1);
	TAP_OK(strcmp(o_listen, "1.2.3.4:5") == 0 && o_dram == (2ULL << 30) && o_verbose &&
		       o_count == 3 && o_ttl == 30000,
	       "parse: long, long=value, short and short-with-value options apply");
	TAP_OK(idx == 9 && strcmp(argv1[idx], "file1") == 0 && strcmp(argv1[idx + 1], "file2") == 0,
	       "parse: operands are gathered after the options");
	reset();
	idx = parse(&spec_cmds, argv2);
	TAP_OK(idx == 3 && strcmp(argv2[idx], "put") == 0 && o_count == 2,
	       "parse: with commands, parsing stops at the command");
	reset();
	idx = parse(&spec, (char *[]){ "test_opt", NULL });
	TAP_OK(idx == 1 && strcmp(o_listen, "default") == 0 && o_dram == 1,
	       "parse: defaults stay when nothing is given");
}

static void
test_precedence(void)
{
	char *cfg = write_file("# a comment\n\n  dram = 1GiB\nlisten=from-config\n"
			       "verbose = yes\nttl = \"10m\"\n");
	int idx;

	reset();
	idx = parse(&spec, (char *[]){ "test_opt", "--config", cfg, NULL });
	TAP_OK(idx == 3 && o_dram == (1ULL << 30) && strcmp(o_listen, "from-config") == 0 &&
		       o_verbose && o_ttl == 600000 && o_config != NULL,
	       "config: values, comments, blanks and quotes are read");
	reset();
	setenv("TEST_DRAM", "2GiB", 1);
	parse(&spec, (char *[]){ "test_opt", "--config", cfg, NULL });
	TAP_OK(o_dram == (2ULL << 30) && strcmp(o_listen, "from-config") == 0,
	       "precedence: environment beats the config file");
	reset();
	setenv("TEST_DRAM", "2GiB", 1);
	parse(&spec, (char *[]){ "test_opt", "--dram", "3GiB", "--config", cfg, NULL });
	TAP_OK(o_dram == (3ULL << 30), "precedence: a flag beats environment and config file");
	reset();
	setenv("TEST_CONFIG", cfg, 1);
	parse(&spec, (char *[]){ "test_opt", NULL });
	TAP_OK(o_dram == (1ULL << 30), "config: the file may be named by the environment");
	reset();
	setenv("TEST_VERBOSE", "false", 1);
	parse(&spec, (char *[]){ "test_opt", "-c", cfg, NULL });
	TAP_OK(!o_verbose, "precedence: an environment 'false' turns off a config flag");
	reset();
	setenv("TEST_LISTEN", "from-env", 1);
	parse(&spec, (char *[]){ "test_opt", NULL });
	TAP_OK(strcmp(o_listen, "from-env") == 0, "env: fallback applies without a flag");
	reset();
	unlink(cfg);
}

static void
test_exit_paths(void)
{
	char *bad = write_file("dram = 1G\n\nbogus = 3\n");
	char *badval = write_file("# x\ndram = 12Q\n");
	struct child c;
	char want[512];

	reset();
	c = run_child(&spec, (char *[]){ "test_opt", "--bogus", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "test_opt: unknown option '--bogus'\n") != NULL &&
		       strstr(c.err, "try 'test_opt --help'") != NULL,
	       "exit: unknown long option exits 64 and names it");
	c = run_child(&spec, (char *[]){ "test_opt", "--bogus=1", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "unknown option '--bogus'") != NULL,
	       "exit: unknown option with a value is named without the value");
	c = run_child(&spec, (char *[]){ "test_opt", "-z", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "unknown option '-z'") != NULL,
	       "exit: unknown short option exits 64");
	c = run_child(&spec, (char *[]){ "test_opt", "--dram", "10X", NULL });
	TAP_OK(c.status == 64 &&
		       strcmp(c.err, "test_opt: invalid --dram '10X': unknown unit 'X'\n") == 0,
	       "exit: bad value exits 64 with flag, value and reason");
	c = run_child(&spec, (char *[]){ "test_opt", "--dram", NULL });
	TAP_OK(c.status == 64 && strcmp(c.err, "test_opt: option '--dram' needs a value\n") == 0,
	       "exit: missing value exits 64");
	c = run_child(&spec, (char *[]){ "test_opt", "-n", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "option '--count' needs a value") != NULL,
	       "exit: missing value of a short option names the long option");
	c = run_child(&spec, (char *[]){ "test_opt", "--verbose=yes", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "option '--verbose' takes no value") != NULL,
	       "exit: a value given to a flag exits 64");
	c = run_child(&spec, (char *[]){ "test_opt", "--config", bad, NULL });
	snprintf(want, sizeof(want), "test_opt: %s:3: unknown option 'bogus'\n", bad);
	TAP_OK(c.status == 64 && strcmp(c.err, want) == 0,
	       "exit: unknown name in a config file names file and line");
	c = run_child(&spec, (char *[]){ "test_opt", "--config", badval, NULL });
	snprintf(want, sizeof(want), "%s:2: invalid --dram '12Q'", badval);
	TAP_OK(c.status == 64 && strstr(c.err, want) != NULL,
	       "exit: bad value in a config file names file and line");
	c = run_child(&spec, (char *[]){ "test_opt", "--config", "/nonexistent/x.conf", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "cannot read config '/nonexistent/x.conf'") != NULL,
	       "exit: missing config file exits 64");
	setenv("TEST_DRAM", "lots", 1);
	c = run_child(&spec, (char *[]){ "test_opt", NULL });
	TAP_OK(c.status == 64 && strstr(c.err, "invalid TEST_DRAM 'lots'") != NULL,
	       "exit: bad environment value names the variable");
	unsetenv("TEST_DRAM");
	c = run_child(&spec, (char *[]){ "test_opt", "--version", NULL });
	TAP_OK(c.status == 0 && strcmp(c.out, "test_opt " MC_VERSION "\n") == 0,
	       "--version prints 'PROG VERSION' and exits 0");
	c = run_child(&spec, (char *[]){ "test_opt", "--help", NULL });
	TAP_OK(c.status == 0 && strstr(c.out, "usage: test_opt [OPTIONS]") != NULL &&
		       strstr(c.out, "--dram SIZE") != NULL &&
		       strstr(c.out, "-l, --listen ADDR") != NULL &&
		       strstr(c.out, "(env TEST_LISTEN)") != NULL &&
		       strstr(c.out, "--mode MODE ") != NULL && strstr(c.out, "fast|slow") == NULL,
	       "--help prints usage with options (the kind, not the words) and exits 0");
	c = run_child(&spec_cmds, (char *[]){ "test_opt", "-h", NULL });
	TAP_OK(c.status == 0 && strstr(c.out, "commands:") != NULL && strstr(c.out, "put") != NULL,
	       "-h lists commands too");
	c = run_child(&spec_cmds, (char *[]){ "test_opt", "--list-options", NULL });
	TAP_OK(c.status == 0 && strstr(c.out, "--dram\tSIZE\tDRAM arena size\n") != NULL &&
		       strstr(c.out, "--verbose\t-\tsay more\tshort=v\n") != NULL &&
		       strstr(c.out, "--mode\tMODE\thow to go\tvalues=fast|slow\n") != NULL &&
		       strstr(c.out, "--help\t-\t") != NULL &&
		       strstr(c.out, "cmd\tput\tstore an object\n") != NULL &&
		       strstr(c.out, "cmd\tget\tfetch an object\n") != NULL,
	       "--list-options prints one tab-separated line per option and command");
	unlink(bad);
	unlink(badval);
}

int
main(void)
{
	mc_log_init("test_opt", 0);
	test_setters();
	test_parse_basic();
	test_precedence();
	test_exit_paths();
	return tap_done();
}
