/*
 * Option parsing from one table (see mc/opt.h).
 *
 * Precedence is flags > environment > config file > defaults, and the
 * simplest way to get it right is to apply the sources in the opposite
 * order and let later writes win. argv is scanned first (it names the
 * config file and may ask for --help), but its values are only recorded
 * then; they are applied last.
 *
 * Unlike the rest of libmc this module prints and exits: a usage error
 * has nowhere better to go than stderr and exit status 64, and every
 * program wants exactly that.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/opt.h"
#include "mc/parse.h"
#include "mc/proto.h"

#define WHY_MAX 200
#define DEFAULT_VERSION MC_VERSION

enum { VAL_HELP = 1, VAL_VERSION, VAL_LIST, VAL_LONG_BASE = 256 };

struct pending {
	const struct mc_opt *o;
	const char *value;
};

static const struct {
	const char *name;
	int val;
	const char *help;
} builtins[] = {
	{ "help", VAL_HELP, "show this help and exit" },
	{ "version", VAL_VERSION, "print the version and exit" },
	{ "list-options", VAL_LIST, "list options and commands for completions, then exit" },
};

#define NBUILTINS (sizeof(builtins) / sizeof(builtins[0]))

static size_t
count_opts(const struct mc_opt_spec *spec)
{
	size_t n = 0;

	while (spec->opts != NULL && spec->opts[n].name != NULL)
		n++;
	return n;
}

/* -h is --help unless a program claims it for something else. */
static bool
help_has_h(const struct mc_opt_spec *spec)
{
	size_t i, n = count_opts(spec);

	for (i = 0; i < n; i++)
		if (spec->opts[i].short_name == 'h')
			return false;
	return true;
}

static const struct mc_opt *
find_by_name(const struct mc_opt_spec *spec, const char *name, size_t len)
{
	size_t i, n = count_opts(spec);

	for (i = 0; i < n; i++)
		if (strlen(spec->opts[i].name) == len &&
		    strncmp(spec->opts[i].name, name, len) == 0)
			return &spec->opts[i];
	return NULL;
}

static const struct mc_opt *
find_by_val(const struct mc_opt_spec *spec, int val)
{
	size_t i, n = count_opts(spec);

	for (i = 0; i < n; i++) {
		int v = spec->opts[i].short_name ? (unsigned char)spec->opts[i].short_name
						 : VAL_LONG_BASE + (int)i;

		if (v == val)
			return &spec->opts[i];
	}
	return NULL;
}

static void usage_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
usage_die(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mc_die(MC_EXIT_USAGE, "%s", msg);
}

/*
 * Run the option's setter; where is "" for argv, "FILE:LINE: " for a
 * config file, and label is "--name" or the environment variable.
 */
static void
apply_value(const struct mc_opt *o, const char *value, const char *where, const char *label)
{
	char why[WHY_MAX + 56] = "";

	if (o->set == NULL)
		return;
	if (o->set(value, o->target, why) == 0)
		return;
	why[WHY_MAX - 1] = '\0';
	usage_die("%sinvalid %s '%s': %s", where, label, value != NULL ? value : "",
		  why[0] != '\0' ? why : "bad value");
}

/* A flag from the environment or a config file carries a yes/no value. */
static void
apply_flag_text(const struct mc_opt *o, const char *value, const char *where, const char *label)
{
	struct mc_err err = { 0 };
	bool on;

	if (mc_parse_bool(value, &on, &err) < 0)
		usage_die("%sinvalid %s '%s': %s", where, label, value, err.msg);
	if (on)
		apply_value(o, NULL, where, label);
	else if (o->set == mc_set_flag && o->target != NULL)
		*(bool *)o->target = false;
}

static char *
trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/*
 * Setters such as mc_set_str keep the pointer, so config values must
 * live as long as the program. They stay on a list rooted in a static
 * so that they remain reachable (and leak checkers stay quiet).
 */
struct kept {
	struct kept *next;
	char text[];
};

static struct kept *kept_strings;

static const char *
keep_string(const char *s)
{
	size_t n = strlen(s) + 1;
	struct kept *k = malloc(sizeof(*k) + n);

	if (k == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	memcpy(k->text, s, n);
	k->next = kept_strings;
	kept_strings = k;
	return k->text;
}

static void
apply_config(const struct mc_opt_spec *spec, const char *path)
{
	char *line = NULL, where[PATH_MAX + 32], label[128];
	size_t cap = 0;
	unsigned lineno = 0;
	FILE *f;

	f = fopen(path, "r");
	if (f == NULL)
		usage_die("cannot read config '%s': %s", path, mc_strerror(errno));
	while (getline(&line, &cap, f) >= 0) {
		const struct mc_opt *o;
		char *name, *value = NULL, *eq;
		const char *copy;

		lineno++;
		name = trim(line);
		if (*name == '\0' || *name == '#')
			continue;
		snprintf(where, sizeof(where), "%s:%u: ", path, lineno);
		eq = strchr(name, '=');
		if (eq != NULL) {
			size_t vlen;

			*eq = '\0';
			value = trim(eq + 1);
			name = trim(name);
			vlen = strlen(value);
			/* "name = "a value"" keeps leading or trailing blanks */
			if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
				value[vlen - 1] = '\0';
				value++;
			}
		}
		o = find_by_name(spec, name, strlen(name));
		if (o == NULL || strcmp(name, "config") == 0)
			usage_die("%sunknown option '%s'", where, name);
		snprintf(label, sizeof(label), "--%s", o->name);
		if (value == NULL) {
			/* a bare name turns a flag on */
			if (o->arg != NULL)
				usage_die("%soption '--%s' needs a value", where, o->name);
			apply_value(o, NULL, where, label);
			continue;
		}
		if (o->arg == NULL) {
			apply_flag_text(o, value, where, label);
			continue;
		}
		copy = keep_string(value);
		apply_value(o, copy, where, label);
	}
	free(line);
	fclose(f);
}

static void
apply_env(const struct mc_opt_spec *spec)
{
	size_t i, n = count_opts(spec);

	for (i = 0; i < n; i++) {
		const struct mc_opt *o = &spec->opts[i];
		const char *v;

		if (o->env == NULL || strcmp(o->name, "config") == 0)
			continue;
		v = getenv(o->env);
		if (v == NULL || *v == '\0')
			continue;
		if (o->arg == NULL)
			apply_flag_text(o, v, "", o->env);
		else
			apply_value(o, v, "", o->env);
	}
}

static void
print_version(const struct mc_opt_spec *spec)
{
	const char *v = spec->version != NULL ? spec->version : DEFAULT_VERSION;

	/* accept both "VERSION" and "PROG VERSION" */
	if (strchr(v, ' ') != NULL)
		printf("%s\n", v);
	else
		printf("%s %s\n", mc_prog(), v);
}

int
mc_opt_kind_len(const char *arg)
{
	return (int)strcspn(arg, "|");
}

void
mc_opt_list_line(const struct mc_opt *o, const char *cmd)
{
	const char *arg = o->arg != NULL ? o->arg : "-";
	int kind = mc_opt_kind_len(arg);

	printf("--%s\t%.*s\t%s", o->name, kind, arg, o->help != NULL ? o->help : "");
	if (cmd != NULL)
		printf("\t%s", cmd);
	if (o->short_name != 0)
		printf("\tshort=%c", o->short_name);
	if (arg[kind] == '|')
		printf("\tvalues=%s", arg + kind + 1);
	putchar('\n');
}

static void
list_options(const struct mc_opt_spec *spec)
{
	size_t i, n = count_opts(spec);

	for (i = 0; i < n; i++)
		mc_opt_list_line(&spec->opts[i], NULL);
	for (i = 0; i < NBUILTINS; i++)
		printf("--%s\t-\t%s\n", builtins[i].name, builtins[i].help);
	for (i = 0; spec->cmds != NULL && spec->cmds[i].name != NULL; i++)
		printf("cmd\t%s\t%s\n", spec->cmds[i].name,
		       spec->cmds[i].help != NULL ? spec->cmds[i].help : "");
}

static void
print_opt_line(char short_name, const char *name, const char *arg, const char *help,
	       const char *env)
{
	int kind = arg != NULL ? mc_opt_kind_len(arg) : 0;
	char left[128];
	int len;

	if (short_name)
		len = snprintf(left, sizeof(left), "-%c, --%s%s%.*s", short_name, name,
			       arg != NULL ? " " : "", kind, arg != NULL ? arg : "");
	else
		len = snprintf(left, sizeof(left), "    --%s%s%.*s", name, arg != NULL ? " " : "",
			       kind, arg != NULL ? arg : "");
	if (len > 26)
		printf("  %s\n  %28s", left, "");
	else
		printf("  %-26s  ", left);
	printf("%s", help != NULL ? help : "");
	if (env != NULL)
		printf(" (env %s)", env);
	printf("\n");
}

void
mc_opt_usage(const struct mc_opt_spec *spec)
{
	size_t i, n = count_opts(spec);
	bool h = help_has_h(spec);

	printf("usage: %s\n", spec->usage != NULL ? spec->usage : mc_prog());
	if (spec->summary != NULL)
		printf("%s\n", spec->summary);
	printf("\noptions:\n");
	for (i = 0; i < n; i++) {
		const struct mc_opt *o = &spec->opts[i];

		print_opt_line(o->short_name, o->name, o->arg, o->help, o->env);
	}
	for (i = 0; i < NBUILTINS; i++)
		print_opt_line(i == 0 && h ? 'h' : 0, builtins[i].name, NULL, builtins[i].help,
			       NULL);
	if (spec->cmds != NULL && spec->cmds[0].name != NULL) {
		printf("\ncommands:\n");
		for (i = 0; spec->cmds[i].name != NULL; i++)
			printf("  %-14s  %s\n", spec->cmds[i].name,
			       spec->cmds[i].help != NULL ? spec->cmds[i].help : "");
	}
}

static void
unknown_option(const char *text)
{
	mc_complain("unknown option '%s'", text);
	fprintf(stderr, "try '%s --help'\n", mc_prog());
	exit(MC_EXIT_USAGE);
}

/*
 * The tables of the parse in progress hang off a static rather than the
 * stack, so that a usage error or --help, which exit from deep inside
 * the parse, leaves them reachable instead of leaked.
 */
static struct {
	struct option *longs;
	char *shorts;
	struct pending *pend;
	struct mc_opt *all; /* opts then hidden, when there are hidden ones */
} cur;

/* spec with its hidden options appended to opts, in *full. */
static const struct mc_opt_spec *
with_hidden(const struct mc_opt_spec *spec, struct mc_opt_spec *full)
{
	struct mc_opt_spec h = { .opts = spec->hidden };
	size_t n = count_opts(spec), m = count_opts(&h);

	if (m == 0)
		return spec;
	free(cur.all);
	cur.all = calloc(n + m + 1, sizeof(*cur.all));
	if (cur.all == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	memcpy(cur.all, spec->opts, n * sizeof(*cur.all));
	memcpy(cur.all + n, spec->hidden, m * sizeof(*cur.all));
	*full = *spec;
	full->opts = cur.all;
	full->hidden = NULL;
	return full;
}

int
mc_opt_parse(const struct mc_opt_spec *shown, int argc, char **argv)
{
	struct mc_opt_spec full;
	const struct mc_opt_spec *spec = with_hidden(shown, &full);
	size_t i, n = count_opts(spec), np = 0, so = 0;
	struct option *longs = NULL;
	struct pending *pend = NULL;
	const char *config = NULL;
	const struct mc_opt *config_opt;
	char *shorts = NULL;
	int c;

	longs = cur.longs = calloc(n + NBUILTINS + 1, sizeof(*longs));
	shorts = cur.shorts = malloc(2 * n + 8);
	pend = cur.pend = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*pend));
	if (longs == NULL || shorts == NULL || pend == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	/* "+" stops at the command; ":" reports a missing value as ':' */
	if (spec->cmds != NULL)
		shorts[so++] = '+';
	shorts[so++] = ':';
	if (help_has_h(spec))
		shorts[so++] = 'h';
	for (i = 0; i < n; i++) {
		const struct mc_opt *o = &spec->opts[i];

		longs[i].name = o->name;
		longs[i].has_arg = o->arg != NULL ? required_argument : no_argument;
		longs[i].val =
			o->short_name ? (unsigned char)o->short_name : VAL_LONG_BASE + (int)i;
		if (o->short_name) {
			shorts[so++] = o->short_name;
			if (o->arg != NULL)
				shorts[so++] = ':';
		}
	}
	shorts[so] = '\0';
	for (i = 0; i < NBUILTINS; i++) {
		longs[n + i].name = builtins[i].name;
		longs[n + i].val = builtins[i].val;
	}

	/* optind = 0 makes glibc start over, so parsing twice works */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		const struct mc_opt *o;

		if (c == VAL_HELP || (c == 'h' && help_has_h(spec))) {
			mc_opt_usage(shown);
			exit(MC_EXIT_OK);
		}
		if (c == VAL_VERSION) {
			print_version(spec);
			exit(MC_EXIT_OK);
		}
		if (c == VAL_LIST) {
			list_options(shown);
			exit(MC_EXIT_OK);
		}
		if (c == ':') {
			o = find_by_val(spec, optopt);
			usage_die("option '--%s' needs a value", o != NULL ? o->name : "?");
		}
		if (c == '?') {
			char text[128];
			const char *arg = argv[optind - 1];

			o = optopt != 0 ? find_by_val(spec, optopt) : NULL;
			if (o != NULL)
				usage_die("option '--%s' takes no value", o->name);
			for (i = 0; i < NBUILTINS; i++)
				if (optopt == builtins[i].val)
					usage_die("option '--%s' takes no value", builtins[i].name);
			if (optopt != 0 && optopt < VAL_LONG_BASE)
				snprintf(text, sizeof(text), "-%c", optopt);
			else
				snprintf(text, sizeof(text), "%.*s", (int)strcspn(arg, "="), arg);
			unknown_option(text);
		}
		o = find_by_val(spec, c);
		if (o == NULL)
			mc_die(MC_EXIT_SOFTWARE, "option table is inconsistent at '%c'", c);
		pend[np].o = o;
		pend[np].value = o->arg != NULL ? optarg : NULL;
		np++;
		if (strcmp(o->name, "config") == 0)
			config = optarg;
	}

	config_opt = find_by_name(spec, "config", 6);
	if (config == NULL && config_opt != NULL && config_opt->env != NULL) {
		config = getenv(config_opt->env);
		if (config != NULL && *config == '\0')
			config = NULL;
		if (config != NULL)
			apply_value(config_opt, config, "", config_opt->env);
	}
	if (config != NULL && config_opt != NULL && config_opt->arg != NULL)
		apply_config(spec, config);
	apply_env(spec);
	for (i = 0; i < np; i++) {
		char label[128];

		snprintf(label, sizeof(label), "--%s", pend[i].o->name);
		apply_value(pend[i].o, pend[i].value, "", label);
	}
	free(longs);
	free(shorts);
	free(pend);
	free(cur.all);
	memset(&cur, 0, sizeof(cur));
	return optind;
}

static int
why_from(char *why, const struct mc_err *err)
{
	snprintf(why, WHY_MAX, "%.*s", WHY_MAX - 1, err->msg);
	return -1;
}

int
mc_set_str(const char *v, void *target, char *why)
{
	(void)why;
	*(const char **)target = v;
	return 0;
}

int
mc_set_flag(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };
	bool on = true;

	if (v != NULL && mc_parse_bool(v, &on, &err) < 0)
		return why_from(why, &err);
	*(bool *)target = on;
	return 0;
}

int
mc_set_size(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };

	if (mc_parse_size(v, target, &err) < 0)
		return why_from(why, &err);
	return 0;
}

int
mc_set_duration(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };

	if (mc_parse_duration_ms(v, target, &err) < 0)
		return why_from(why, &err);
	return 0;
}

int
mc_set_u64(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };

	if (mc_parse_u64(v, target, &err) < 0)
		return why_from(why, &err);
	return 0;
}

int
mc_set_int(const char *v, void *target, char *why)
{
	char *end;
	long l;

	if (v == NULL || *v == '\0') {
		snprintf(why, WHY_MAX, "empty value");
		return -1;
	}
	errno = 0;
	l = strtol(v, &end, 10);
	if (end == v || *end != '\0' || v[0] == ' ' || v[0] == '\t') {
		snprintf(why, WHY_MAX, "not a whole number");
		return -1;
	}
	if (errno == ERANGE || l > INT_MAX || l < INT_MIN) {
		snprintf(why, WHY_MAX, "out of range");
		return -1;
	}
	*(int *)target = (int)l;
	return 0;
}

int
mc_set_count(const char *v, void *target, char *why)
{
	if (mc_set_int(v, target, why) != 0)
		return -1;
	if (*(int *)target < 0) {
		snprintf(why, WHY_MAX, "must be 0 or more");
		return -1;
	}
	return 0;
}

int
mc_set_double(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };

	if (mc_parse_double(v, target, &err) < 0)
		return why_from(why, &err);
	return 0;
}

int
mc_set_positive_int(const char *v, void *target, char *why)
{
	if (mc_set_int(v, target, why) != 0)
		return -1;
	if (*(int *)target <= 0) {
		snprintf(why, 200, "must be at least 1");
		return -1;
	}
	return 0;
}

/* rc of a setter that filled the uint64_t at target, or -1 with why when it set 0. */
static int
nonzero(int rc, const void *target, char *why)
{
	if (rc == 0 && *(const uint64_t *)target == 0) {
		snprintf(why, 200, "must be more than zero");
		return -1;
	}
	return rc;
}

int
mc_set_positive_duration(const char *v, void *target, char *why)
{
	return nonzero(mc_set_duration(v, target, why), target, why);
}

int
mc_set_positive_size(const char *v, void *target, char *why)
{
	return nonzero(mc_set_size(v, target, why), target, why);
}

int
mc_set_rate(const char *v, void *target, char *why)
{
	if (mc_set_double(v, target, why) != 0)
		return -1;
	if (!(*(double *)target > 0) || *(double *)target > 1e9) {
		snprintf(why, 200, "must be more than 0 a second, at most 1e9");
		return -1;
	}
	return 0;
}

int
mc_set_fd(const char *v, void *target, char *why)
{
	int flags;

	if (mc_set_int(v, target, why) != 0)
		return -1;
	if (*(int *)target < 0) {
		snprintf(why, 200, "must be a file descriptor number");
		return -1;
	}
	/*
	 * Checked now, while the program can still refuse to start: written
	 * to only once it serves, a bad descriptor would leave whoever waits
	 * on it waiting, with nothing but a warning in a log.
	 */
	flags = fcntl(*(int *)target, F_GETFL);
	if (flags < 0) {
		snprintf(why, 200, "not an open file descriptor");
		return -1;
	}
	if ((flags & O_ACCMODE) == O_RDONLY) {
		snprintf(why, 200, "not open for writing");
		return -1;
	}
	return 0;
}

int
mc_set_amount(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };

	if (mc_parse_amount(v, target, &err) < 0)
		return why_from(why, &err);
	return 0;
}

int
mc_set_name(const char *v, void *target, char *why)
{
	size_t len = strlen(v);

	if (len == 0) {
		snprintf(why, 200, "must not be empty");
		return -1;
	}
	/* refused here, or the far end refuses every message that carries it */
	if (len > MC_NAME_MAX) {
		snprintf(why, 200, "%zu characters, over the wire limit of %d", len, MC_NAME_MAX);
		return -1;
	}
	*(const char **)target = v;
	return 0;
}

int
mc_set_log_level(const char *v, void *target, char *why)
{
	int level = mc_log_level_parse(v);

	(void)target;
	if (level < 0) {
		snprintf(why, 200, "not one of debug, info, warn, error");
		return -1;
	}
	mc_log_set_level(level);
	return 0;
}
