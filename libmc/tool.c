/*
 * The frame every tool runs in (mc/tool.h): options, a command, its
 * arguments with the options again; the master connection of the
 * commands that need one; failures turned into one line and a status.
 *
 * Parsing takes two passes of mc_opt_parse. The first reads up to the
 * command with the global options; the commands' own options are in its
 * table too, hidden, and only recorded (they may be given before the
 * command, as they always could in the tools that had them global). The
 * second reads the command's arguments with its own options, the global
 * ones again, and every other command's options, hidden and recorded,
 * so that one given to the wrong command is refused naming its owner.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/io.h"
#include "mc/tool.h"

#define DEFAULT_TIMEOUT_MS 30000
/* How the dispatcher (libmc/conn.c) answers a method it does not serve. */
#define UNKNOWN_METHOD "unknown method '"
#define NOT_OFFERED "does not offer it (not a master, or an older one)"

/* What -m, -t, --timeout and --stall-timeout said; the client they made. */
static struct {
	const char *master, *tenant;
	uint64_t timeout_ms; /* 0: not given */
	uint64_t stall_ms;   /* 0: not given (the client's default) */
	const char *token_file;
	char token[256]; /* read from token_file */
	uint64_t default_timeout_ms;
	struct mc_client *client;
	const struct mc_tool *tool;
	const struct mc_tool_cmd *cmd; /* the command running */
} st;

static char timeout_help[96];

static const struct mc_opt master_opts[] = {
	{ "master", 'm', "ADDR", "MC_MASTER", "master address (default 127.0.0.1:7300)", mc_set_str,
	  &st.master },
	{ "tenant", 't', "STR", "MC_TENANT", "tenant to speak for (default \"default\")",
	  mc_set_str, &st.tenant },
	{ "token-file", 0, "FILE", NULL, "send the token in FILE on hello (instead of $MC_TOKEN)",
	  mc_set_str, &st.token_file },
	{ "timeout", 0, "DURATION", NULL, timeout_help, mc_set_duration, &st.timeout_ms },
	{ "stall-timeout", 0, "DURATION", "MC_STALL_TIMEOUT",
	  "give up a peer that moves no byte of a get or put for this long, and read the next "
	  "replica (default 5s)",
	  mc_set_duration, &st.stall_ms },
	{ 0 },
};

/* A command's option given where it was only recorded. */
struct given {
	const char *name;  /* the long name, as the table has it */
	const char *value; /* NULL for a flag */
};

static struct {
	struct given *v;
	size_t n, cap;
} rec;

static int
record(const char *value, void *target, char *why)
{
	const struct mc_opt *o = target;

	(void)why;
	if (rec.n == rec.cap) {
		size_t cap = rec.cap ? rec.cap * 2 : 8;
		struct given *v = realloc(rec.v, cap * sizeof(*v));

		if (v == NULL)
			mc_die(MC_EXIT_SOFTWARE, "out of memory");
		rec.v = v;
		rec.cap = cap;
	}
	rec.v[rec.n].name = o->name;
	rec.v[rec.n].value = value;
	rec.n++;
	return 0;
}

static size_t
count(const struct mc_opt *o)
{
	size_t n = 0;

	while (o != NULL && o[n].name != NULL)
		n++;
	return n;
}

static bool
any_master(const struct mc_tool *t)
{
	size_t i;

	if (t->single != NULL)
		return t->single->flags & MC_TOOL_MASTER;
	for (i = 0; t->cmds[i].name != NULL; i++)
		if (t->cmds[i].flags & MC_TOOL_MASTER)
			return true;
	return false;
}

static const struct mc_opt *
find(const struct mc_opt *tab, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(tab[i].name, name) == 0)
			return &tab[i];
	return NULL;
}

/* A growing option table; entries after n are zero (the terminator). */
struct table {
	struct mc_opt *o;
	size_t n, cap;
};

/* Add o unless an option of its name is in tb or also (may be NULL). */
static void
add(struct table *tb, const struct mc_opt *o, bool recorded, bool env, const struct table *also)
{
	struct mc_opt *e;

	if (find(tb->o, tb->n, o->name) != NULL ||
	    (also != NULL && find(also->o, also->n, o->name) != NULL))
		return;
	if (tb->n + 1 >= tb->cap) {
		size_t cap = tb->cap ? tb->cap * 2 : 32;
		struct mc_opt *v = realloc(tb->o, cap * sizeof(*v));

		if (v == NULL)
			mc_die(MC_EXIT_SOFTWARE, "out of memory");
		tb->o = v;
		tb->cap = cap;
	}
	e = &tb->o[tb->n++];
	*e = *o;
	if (!env)
		e->env = NULL;
	if (recorded) {
		/* recorded by name; short names stay with the real entries */
		e->short_name = 0;
		e->set = record;
		e->target = (void *)o;
	}
	memset(&tb->o[tb->n], 0, sizeof(tb->o[tb->n]));
}

static void
add_all(struct table *tb, const struct mc_opt *o, bool recorded, bool env, const struct table *also)
{
	size_t i;

	for (i = 0; o != NULL && o[i].name != NULL; i++)
		add(tb, &o[i], recorded, env, also);
}

/* The global options: the tool's, then the master's when a command needs them. */
static void
add_globals(struct table *tb, const struct mc_tool *t, bool env)
{
	add_all(tb, t->opts, false, env, NULL);
	if (any_master(t))
		add_all(tb, master_opts, false, env, NULL);
}

/*
 * The global options whose long name the command's own options take
 * (mc-cli evict --tenant scopes the round), hidden, for their short name:
 * -t still says whom the tool speaks for. The command's entry comes first,
 * so the long name stays the command's.
 */
static void
add_shadowed(struct table *hidden, const struct mc_tool *t, const struct mc_tool_cmd *cmd)
{
	const struct mc_opt *lists[] = { t->opts, any_master(t) ? master_opts : NULL };
	size_t n = count(cmd->opts);

	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		for (size_t i = 0; lists[l] != NULL && lists[l][i].name != NULL; i++)
			if (lists[l][i].short_name != 0 && find(cmd->opts, n, lists[l][i].name))
				add(hidden, &lists[l][i], false, false, NULL);
}

/* The commands' options but skip's, recorded, none named as one in shown. */
static void
add_recorded(struct table *tb, const struct mc_tool *t, const struct mc_tool_cmd *skip,
	     const struct table *shown)
{
	size_t i;

	for (i = 0; t->cmds != NULL && t->cmds[i].name != NULL; i++)
		if (&t->cmds[i] != skip)
			add_all(tb, t->cmds[i].opts, true, false, shown);
}

/* The first command, other than cmd, that has an option of this name. */
static const char *
owner_of(const struct mc_tool *t, const char *name)
{
	size_t i;

	for (i = 0; t->cmds[i].name != NULL; i++)
		if (find(t->cmds[i].opts, count(t->cmds[i].opts), name) != NULL)
			return t->cmds[i].name;
	return "?";
}

void
mc_tool_usage_fail(const struct mc_tool *t, const struct mc_tool_cmd *cmd, const char *msg)
{
	if (cmd->name == NULL) {
		mc_complain("%s", msg);
		fprintf(stderr, "usage: %s %s\n", t->prog, cmd->args);
	} else {
		mc_complain("%s: %s", cmd->name, msg);
		fprintf(stderr, "usage: %s %s %s%s%s\n", t->prog, t->globals, cmd->name,
			*cmd->args ? " " : "", cmd->args);
	}
	exit(MC_EXIT_USAGE);
}

static void __attribute__((noreturn)) try_help(const struct mc_tool *t)
{
	fprintf(stderr, "try '%s --help'\n", t->prog);
	exit(MC_EXIT_USAGE);
}

/* Apply what the first pass recorded to cmd's own options. */
static void
apply_recorded(const struct mc_tool *t, const struct mc_tool_cmd *cmd)
{
	size_t i, n = count(cmd->opts);
	char msg[320], why[201];

	for (i = 0; i < rec.n; i++) {
		const struct mc_opt *o = find(cmd->opts, n, rec.v[i].name);

		if (o == NULL) {
			snprintf(msg, sizeof(msg), "option '--%s' belongs to '%s'", rec.v[i].name,
				 owner_of(t, rec.v[i].name));
			mc_tool_usage_fail(t, cmd, msg);
		}
		why[0] = '\0';
		if (o->set(rec.v[i].value, o->target, why) < 0) {
			snprintf(msg, sizeof(msg), "invalid --%s '%.64s': %s", o->name,
				 rec.v[i].value ? rec.v[i].value : "", why);
			mc_tool_usage_fail(t, cmd, msg);
		}
	}
	rec.n = 0;
}

/* --list-options: after the program's own lines, each command's options. */
static void
list_cmd_opts(void)
{
	const struct mc_tool *t = st.tool;
	size_t i, j;

	for (i = 0; t->cmds[i].name != NULL; i++)
		for (j = 0; j < count(t->cmds[i].opts); j++)
			mc_opt_list_line(&t->cmds[i].opts[j], t->cmds[i].name);
}

/* --help: after the program's own text, each command's options. */
static void
help_cmd_opts(void)
{
	const struct mc_tool *t = st.tool;
	bool any = false;
	char left[128];
	size_t i, j;

	for (i = 0; t->cmds[i].name != NULL; i++)
		for (j = 0; j < count(t->cmds[i].opts); j++) {
			const struct mc_opt *o = &t->cmds[i].opts[j];

			if (!any)
				printf("\ncommand options:\n");
			any = true;
			snprintf(left, sizeof(left), "%s --%s%s%.*s", t->cmds[i].name, o->name,
				 o->arg ? " " : "", o->arg ? mc_opt_kind_len(o->arg) : 0,
				 o->arg ? o->arg : "");
			if (strlen(left) > 26)
				printf("  %s\n  %28s%s\n", left, "", o->help);
			else
				printf("  %-26s  %s\n", left, o->help);
		}
}

/*
 * Whether argv asks for opt (one of its spellings) before any command:
 * the whole program's help or list, which then ends with the commands'.
 */
static bool
asks_before_cmd(const struct mc_tool *t, int argc, char **argv, const char *opt, const char *alt)
{
	int i;
	size_t j;

	for (i = 1; i < argc; i++) {
		for (j = 0; t->cmds[j].name != NULL; j++)
			if (strcmp(t->cmds[j].name, argv[i]) == 0)
				return false;
		if (strcmp(argv[i], opt) == 0 || (alt != NULL && strcmp(argv[i], alt) == 0))
			return true;
	}
	return false;
}

/* The positional arguments: as many as the command takes. */
static void
check_args(const struct mc_tool *t, const struct mc_tool_cmd *cmd, int npos, char **pos)
{
	char msg[160];

	if ((unsigned)npos < cmd->min_args) {
		/* name the first missing argument as the usage line does */
		const char *a = cmd->args;
		size_t w;

		for (int k = 0; k < npos && *a; k++) {
			a += strcspn(a, " ");
			a += strspn(a, " ");
		}
		a += strspn(a, "[");
		w = strcspn(a, " ]");
		snprintf(msg, sizeof(msg), "missing %.*s", (int)(w < 40 ? w : 40), a);
		mc_tool_usage_fail(t, cmd, msg);
	}
	if ((unsigned)npos > cmd->max_args) {
		snprintf(msg, sizeof(msg), "unexpected argument '%.100s'", pos[cmd->max_args]);
		mc_tool_usage_fail(t, cmd, msg);
	}
}

static void
set_defaults(const struct mc_tool *t)
{
	char d[32];

	st.tool = t;
	st.default_timeout_ms = t->timeout_ms ? t->timeout_ms : DEFAULT_TIMEOUT_MS;
	snprintf(timeout_help, sizeof(timeout_help),
		 "timeout of each call to the master (default %s)",
		 mc_fmt_duration_ms(st.default_timeout_ms, d, sizeof(d)));
}

/* A tool without commands: its options and its arguments in one pass. */
static const struct mc_tool_cmd *
parse_single(const struct mc_tool *t, int *argc, char ***argv)
{
	static struct table tb; /* static: reachable when the parse exits */
	struct mc_opt_spec spec = { 0 };
	char usage[512];
	int first;

	add_all(&tb, t->single->opts, false, true, NULL);
	add_globals(&tb, t, true);
	snprintf(usage, sizeof(usage), "%s %s", t->prog, t->single->args);
	spec.usage = usage;
	spec.summary = t->summary;
	spec.opts = tb.o;
	spec.version = MC_VERSION;
	first = mc_opt_parse(&spec, *argc, *argv);
	*argc -= first;
	*argv += first;
	check_args(t, t->single, *argc, *argv);
	return t->single;
}

const struct mc_tool_cmd *
mc_tool_parse(const struct mc_tool *t, int *argc, char ***argv)
{
	/* static: reachable when the parse exits */
	static struct table globals, again, hidden;
	struct mc_opt_spec spec = { 0 };
	const struct mc_tool_cmd *cmd = NULL;
	struct mc_cmd *list;
	char usage[256];
	size_t i, n;
	int first, rest;

	set_defaults(t);
	if (t->single != NULL)
		return parse_single(t, argc, argv);
	for (n = 0; t->cmds[n].name != NULL; n++)
		;
	if (!(list = calloc(n + 1, sizeof(*list))))
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	for (i = 0; i < n; i++) {
		list[i].name = t->cmds[i].name;
		list[i].help = t->cmds[i].help;
	}
	globals.n = again.n = hidden.n = rec.n = 0;
	add_globals(&globals, t, true);
	add_recorded(&hidden, t, NULL, &globals);
	snprintf(usage, sizeof(usage), "%s %s COMMAND [ARGS] [OPTIONS]", t->prog, t->globals);
	spec.usage = usage;
	spec.summary = t->summary;
	spec.opts = globals.o;
	spec.hidden = hidden.o;
	spec.cmds = list;
	spec.version = MC_VERSION;
	/* mc_opt_parse prints the global list and exits; the commands' lines follow */
	if (asks_before_cmd(t, *argc, *argv, "--list-options", NULL))
		atexit(list_cmd_opts);
	if (asks_before_cmd(t, *argc, *argv, "--help", "-h"))
		atexit(help_cmd_opts);
	first = mc_opt_parse(&spec, *argc, *argv);
	if (first >= *argc) {
		mc_complain("missing command");
		try_help(t);
	}
	for (i = 0; i < n && cmd == NULL; i++)
		if (strcmp(t->cmds[i].name, (*argv)[first]) == 0)
			cmd = &t->cmds[i];
	free(list);
	if (cmd == NULL) {
		mc_complain("unknown command '%s'", (*argv)[first]);
		try_help(t);
	}
	apply_recorded(t, cmd);

	/*
	 * The command's own arguments: its options, the global ones again
	 * but not the environment, and the other commands' to name them.
	 */
	add_all(&again, cmd->opts, false, false, NULL);
	add_globals(&again, t, false);
	hidden.n = 0;
	if (hidden.o != NULL)
		memset(&hidden.o[0], 0, sizeof(hidden.o[0])); /* empty until added to */
	add_shadowed(&hidden, t, cmd);
	add_recorded(&hidden, t, cmd, &again);
	snprintf(usage, sizeof(usage), "%s %s %s%s%s [OPTIONS]", t->prog, t->globals, cmd->name,
		 *cmd->args ? " " : "", cmd->args);
	spec.summary = cmd->help;
	spec.opts = again.o;
	spec.hidden = hidden.o;
	spec.cmds = NULL;
	rest = mc_opt_parse(&spec, *argc - first, *argv + first);
	apply_recorded(t, cmd);
	*argv += first + rest;
	*argc = *argc - first - rest;
	check_args(t, cmd, *argc, *argv);
	return cmd;
}

/* ---- the master ---- */

const char *
mc_tool_master_addr(void)
{
	if (st.master != NULL && *st.master)
		return st.master;
	return MC_DEFAULT_MASTER;
}

const char *
mc_tool_tenant(void)
{
	const char *t = st.tenant;

	if (t == NULL || !*t)
		t = getenv("MC_TENANT");
	return t != NULL && *t ? t : MC_DEFAULT_TENANT;
}

void
mc_tool_client_opts(struct mc_client_opts *o)
{
	uint64_t ms = st.timeout_ms ? st.timeout_ms : st.default_timeout_ms;

	*o = (struct mc_client_opts)MC_CLIENT_OPTS_INIT;
	o->master = st.master;
	o->tenant = st.tenant;
	o->timeout_ms = ms > INT_MAX ? INT_MAX : (int)ms;
	o->stall_timeout_ms = st.stall_ms > INT_MAX ? INT_MAX : (int)st.stall_ms;
	if (st.token_file != NULL) {
		char why[MC_ERR_MSG_MAX];

		if (st.token[0] == '\0' &&
		    mc_read_secret(st.token_file, st.token, sizeof(st.token), why) != 0)
			mc_die(MC_EXIT_USAGE, "invalid --token-file: %s", why);
		o->token = st.token;
	}
}

/*
 * Connected on first use, not before the command runs: a command checks
 * its own input first (a bad plan file is refused with the master down).
 */
struct mc_client *
mc_tool_client(void)
{
	struct mc_client_opts o;
	struct mc_err err = { 0 };

	if (st.client != NULL)
		return st.client;
	if (st.cmd == NULL || !(st.cmd->flags & MC_TOOL_MASTER))
		MC_BUG("%s: a command without MC_TOOL_MASTER asked for the master", mc_prog());
	mc_tool_client_opts(&o);
	st.client = mc_client_new(&o, &err);
	if (st.client == NULL)
		mc_tool_fail(&err, "connect to the master", NULL);
	return st.client;
}

struct mc_rpcc *
mc_tool_master(void)
{
	struct mc_rpcc *r = mc_client_master(mc_tool_client());

	if (r == NULL)
		mc_die(MC_EXIT_UNAVAILABLE, "cannot reach the master at %s", mc_tool_master_addr());
	return r;
}

void
mc_tool_fail(const struct mc_err *err, const char *verb, const char *what)
{
	const char *plain = NULL;
	int code = mc_status_exit_code(err->code);

	switch (err->code) {
	case MC_ERR_NOT_FOUND:
		plain = "not found";
		break;
	case MC_ERR_EXISTS:
		plain = "already exists (use --upsert to replace it)";
		break;
	case MC_ERR_LEASED:
		plain = "leased (use --force)";
		break;
	case MC_ERR_BUSY:
		plain = "busy";
		break;
	case MC_ERR_SYSTEM:
		/* an OS call that failed here (a write, a read) is a failed operation */
		code = MC_EXIT_FAIL;
		break;
	case MC_ERR_INVALID:
		/*
		 * The service is missing, the command line was fine. The
		 * dispatcher's answer may come wrapped in what was being
		 * done ("hello to master X failed: unknown method 'hello'",
		 * a peer's address given as the master's), so it is looked
		 * for anywhere in the message.
		 */
		if (strstr(err->msg, UNKNOWN_METHOD) != NULL) {
			if (what != NULL)
				mc_die(MC_EXIT_UNAVAILABLE, "cannot %s '%s': %s %s: %s", verb, what,
				       mc_tool_master_addr(), NOT_OFFERED, err->msg);
			mc_die(MC_EXIT_UNAVAILABLE, "cannot %s: %s %s: %s", verb,
			       mc_tool_master_addr(), NOT_OFFERED, err->msg);
		}
		break;
	}
	if (code == MC_EXIT_OK)
		code = MC_EXIT_SOFTWARE;
	if (plain != NULL && what != NULL)
		mc_die(code, "cannot %s '%s': %s", verb, what, plain);
	if (strncmp(err->msg, "cannot ", 7) == 0)
		mc_die(code, "%s", err->msg);
	if (what != NULL)
		mc_die(code, "cannot %s '%s': %s", verb, what, err->msg);
	mc_die(code, "cannot %s: %s", verb, err->msg);
}

int
mc_tool_main(const struct mc_tool *t, int argc, char **argv)
{
	const struct mc_tool_cmd *cmd;
	int rc;

	mc_log_init(t->prog, 0);
	cmd = mc_tool_parse(t, &argc, &argv);
	st.cmd = cmd;
	if (st.timeout_ms == 0 && cmd->timeout_ms != 0)
		st.default_timeout_ms = cmd->timeout_ms;
	rc = cmd->run(argc, argv);
	mc_client_free(st.client);
	st.client = NULL;
	return rc;
}
