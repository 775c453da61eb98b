/*
 * mc-cli: the client side of mc for people and scripts.
 *
 * main parses the global options (up to the command), then the command's
 * own options together with the global ones again (so `mc-cli get k
 * --json` works), checks the positional arguments and runs the command.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mc/log.h"

#define VERSION MC_VERSION

struct cli cli;

static const struct mc_opt global_opts[] = {
	{ "master", 'm', "ADDR", "MC_MASTER", "master address (default 127.0.0.1:7300)", mc_set_str,
	  &cli.master },
	{ "tenant", 't', "STR", "MC_TENANT", "tenant to speak for (default \"default\")",
	  mc_set_str, &cli.tenant },
	{ "json", 0, NULL, NULL, "print records as JSON, one object per line", mc_set_flag,
	  &cli.json },
	{ "timeout", 0, "DURATION", NULL, "timeout of each call (default 30s)", mc_set_duration,
	  &cli.timeout_ms },
	{ 0 },
};

static const struct cli_cmd cmds[] = {
	{ "put", "KEY [FILE|-]", "store FILE (default stdin) under KEY", cli_put_opts, 1, 2,
	  cli_put },
	{ "get", "KEY", "write the bytes of KEY to stdout (or to -o FILE)", cli_get_opts, 1, 1,
	  cli_get },
	{ "rm", "KEY|--prefix P", "remove KEY, or every key under a prefix", cli_rm_opts, 0, 1,
	  cli_rm },
	{ "exist", "KEY", "exit 0 when KEY is present, 1 when absent", cli_none_opts, 1, 1,
	  cli_exist },
	{ "ls", "[PREFIX]", "list the keys (under PREFIX), one per line", cli_none_opts, 0, 1,
	  cli_ls },
	{ "stat", "[KEY]", "show an object and its replicas, or cluster stats", cli_none_opts, 0, 1,
	  cli_stat },
	{ "peers", "", "list the peers with their capacity and use", cli_none_opts, 0, 0,
	  cli_peers },
	{ "corrupt", "PEER_ADDR KEY [OFFSET]",
	  "flip one byte of a peer's copy (peers run with --fault-inject)", cli_none_opts, 2, 3,
	  cli_corrupt },
	{ "candidates", "", "write the candidate view of evictable copies (eviction stage 1)",
	  cli_candidates_opts, 0, 0, cli_candidates },
	{ "evict", "--plan FILE|--target SIZE",
	  "execute a plan, or have the master run an eviction round (eviction stage 3)",
	  cli_evict_opts, 0, 0, cli_evict },
	{ 0 },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]) - 1)

static size_t
count_opts(const struct mc_opt *o)
{
	size_t n = 0;

	while (o[n].name)
		n++;
	return n;
}

/* The lines --list-options adds for each command's options, for completions. */
static void
list_cmd_opts(void)
{
	size_t i, j;

	for (i = 0; i < NCMDS; i++)
		for (j = 0; cmds[i].opts[j].name; j++)
			printf("--%s\t%s\t%s\t%s\n", cmds[i].opts[j].name,
			       cmds[i].opts[j].arg ? cmds[i].opts[j].arg : "-",
			       cmds[i].opts[j].help, cmds[i].name);
}

static const struct cli_cmd *
find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

/* --list-options before any command asks for the whole program's list. */
static bool
wants_list(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (find_cmd(argv[i]))
			return false;
		if (strcmp(argv[i], "--list-options") == 0)
			return true;
	}
	return false;
}

/* The nth word of a command's argument synopsis, brackets stripped. */
static void
arg_name(const char *args, unsigned nth, char *buf, size_t cap)
{
	const char *p = args;
	size_t n;

	while (nth--) {
		p += strcspn(p, " ");
		p += strspn(p, " ");
	}
	p += strspn(p, "[");
	n = strcspn(p, " ]");
	snprintf(buf, cap, "%.*s", (int)n, p);
}

static void
usage_fail(const struct cli_cmd *cmd, const char *msg)
{
	mc_complain("%s: %s", cmd->name, msg);
	fprintf(stderr, "usage: mc-cli %s %s [OPTIONS]\n", cmd->name, cmd->args);
	exit(MC_EXIT_USAGE);
}

static int
run_cmd(const struct cli_cmd *cmd, int argc, char **argv)
{
	size_t nc = count_opts(cmd->opts), ng = count_opts(global_opts), i;
	struct mc_opt_spec spec = { 0 };
	struct mc_opt *merged;
	char usage[256], msg[160];
	unsigned npos;
	int first;

	merged = calloc(nc + ng + 1, sizeof(*merged));
	if (!merged)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	memcpy(merged, cmd->opts, nc * sizeof(*merged));
	memcpy(merged + nc, global_opts, ng * sizeof(*merged));
	/* the environment was applied once already, before the command */
	for (i = nc; i < nc + ng; i++)
		merged[i].env = NULL;
	snprintf(usage, sizeof(usage), "mc-cli [OPTIONS] %s %s [OPTIONS]", cmd->name, cmd->args);
	spec.usage = usage;
	spec.summary = cmd->help;
	spec.opts = merged;
	spec.version = VERSION;
	first = mc_opt_parse(&spec, argc, argv);
	free(merged);

	npos = (unsigned)(argc - first);
	if (npos < cmd->min_args) {
		char name[64];

		arg_name(cmd->args, npos, name, sizeof(name));
		snprintf(msg, sizeof(msg), "missing %s", name);
		usage_fail(cmd, msg);
	}
	if (npos > cmd->max_args) {
		snprintf(msg, sizeof(msg), "unexpected argument '%.100s'",
			 argv[first + (int)cmd->max_args]);
		usage_fail(cmd, msg);
	}
	return cmd->run((int)npos, argv + first);
}

int
main(int argc, char **argv)
{
	struct mc_cmd list[NCMDS + 1];
	struct mc_opt_spec spec = { 0 };
	const struct cli_cmd *cmd;
	size_t i;
	int first, rc;

	mc_log_init("mc-cli", 0);
	memset(list, 0, sizeof(list));
	for (i = 0; i < NCMDS; i++) {
		list[i].name = cmds[i].name;
		list[i].help = cmds[i].help;
	}
	spec.usage = "mc-cli [-m ADDR] [-t TENANT] [--json] [--timeout D] COMMAND [ARGS]";
	spec.summary = "store and fetch objects in an mc cluster";
	spec.opts = global_opts;
	spec.cmds = list;
	spec.version = VERSION;
	/* mc_opt_parse prints the global list and exits; the commands' lines follow */
	if (wants_list(argc, argv))
		atexit(list_cmd_opts);
	first = mc_opt_parse(&spec, argc, argv);
	if (first >= argc) {
		mc_complain("missing command");
		fprintf(stderr, "try 'mc-cli --help'\n");
		return MC_EXIT_USAGE;
	}
	cmd = find_cmd(argv[first]);
	if (!cmd) {
		mc_complain("unknown command '%s'", argv[first]);
		fprintf(stderr, "try 'mc-cli --help'\n");
		return MC_EXIT_USAGE;
	}
	if (cli.timeout_ms > INT_MAX)
		cli.timeout_ms = INT_MAX;
	rc = run_cmd(cmd, argc - first, argv + first);
	mc_client_free(cli.client);
	return rc;
}

struct mc_client *
cli_client(void)
{
	struct mc_client_opts o = { 0 };
	struct mc_err err = { 0 };

	if (cli.client)
		return cli.client;
	o.master = cli.master;
	o.tenant = cli.tenant;
	o.timeout_ms = (int)cli.timeout_ms;
	cli.client = mc_client_new(&o, &err);
	if (!cli.client)
		mc_die(mc_status_exit_code(err.code), "%s", err.msg);
	return cli.client;
}

const char *
cli_tenant(void)
{
	const char *t = cli.tenant;

	if (!t || !*t)
		t = getenv("MC_TENANT");
	return t && *t ? t : "default";
}

void
cli_fail(const struct mc_err *err, const char *verb, const char *what)
{
	const char *plain = NULL;
	int code = mc_status_exit_code(err->code);

	/* the common outcomes read best as plain words */
	switch (err->code) {
	case MC_ERR_NOT_FOUND:
		plain = "not found";
		break;
	case MC_ERR_EXISTS:
		plain = "already exists";
		break;
	case MC_ERR_LEASED:
		plain = "leased (use --force)";
		break;
	case MC_ERR_BUSY:
		plain = "busy";
		break;
	}
	if (code == MC_EXIT_OK)
		code = MC_EXIT_SOFTWARE;
	if (plain && what)
		mc_die(code, "cannot %s '%s': %s", verb, what, plain);
	if (!what || strncmp(err->msg, "cannot ", 7) == 0)
		mc_die(code, "%s", err->msg);
	mc_die(code, "cannot %s '%s': %s", verb, what, err->msg);
}
