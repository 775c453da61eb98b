/*
 * Command-line options from one table per program, so that --help,
 * --list-options (which the completions are generated from) and parsing
 * cannot drift apart.
 *
 * Precedence: flags beat environment beats config file beats defaults.
 * A table entry may name an environment variable; --config FILE (when the
 * table has a "config" entry) reads "name = value" lines, '#' comments,
 * where name is a long option name without dashes.
 *
 * --list-options prints one line per option: "--name\tARG\thelp" where
 * ARG is the argument's kind (ADDR, SIZE, DURATION, FILE, DIR, PATH, N,
 * STR, ..., or "-" for a flag), and for programs with subcommands one
 * line per command: "cmd\tNAME\thelp". A command's option adds
 * "\tCMD" (mc/tool.h). Then, when they apply, tagged fields the
 * completions use: "\tshort=X" for an option with a short name -X, and
 * "\tvalues=A|B|C" for one that takes one of a few words. FILE, DIR and
 * PATH (either) arguments complete as paths.
 */
#ifndef MC_OPT_H
#define MC_OPT_H

#include <stdbool.h>
#include <stdint.h>

struct mc_opt {
	const char *name; /* long name, without "--" */
	char short_name;  /* 0 for none */
	const char *arg;  /* argument kind (or MC_ARG_ONE_OF), or NULL for a flag */
	const char *env;  /* environment variable consulted, or NULL */
	const char *help;
	/*
	 * Apply a value (NULL for a flag). Return 0, or -1 after filling
	 * why (up to 200 bytes) with what was wrong with the value; the
	 * parser then prints "PROG: invalid --NAME 'VALUE': WHY" and exits 64.
	 */
	int (*set)(const char *value, void *target, char *why);
	void *target;
};

/*
 * The arg of an option whose value is one of a few words: its kind, then
 * the words, MC_ARG_ONE_OF("MODE", "local|master"). --help shows the
 * kind, --list-options adds the words (values=local|master) for the
 * completions to offer. A value outside them is still the setter's to
 * judge (enable:TTL is a soft-pin action too).
 */
#define MC_ARG_ONE_OF(kind, words) kind "|" words

struct mc_cmd {
	const char *name;
	const char *help;
};

struct mc_opt_spec {
	const char *usage;	   /* "mc-master [OPTIONS]" */
	const char *summary;	   /* one line */
	const struct mc_opt *opts; /* terminated by {0} */
	const struct mc_cmd *cmds; /* NULL, or terminated by {0} */
	const char *version;	   /* printed by --version */
	/*
	 * Options parsed like opts but left out of --help and
	 * --list-options (mc/tool.h records other commands' options so);
	 * NULL or terminated by {0}.
	 */
	const struct mc_opt *hidden;
};

/*
 * Parse argv per spec (handles --help, --version, --list-options itself,
 * exiting 0). Returns the index of the first non-option argument. Stops at
 * the first non-option when spec->cmds is set (the command), so commands
 * can take their own options. Unknown options and bad values exit 64,
 * naming the flag.
 */
int mc_opt_parse(const struct mc_opt_spec *spec, int argc, char **argv);
/* Print the --help text to stdout. */
void mc_opt_usage(const struct mc_opt_spec *spec);
/* Print o's --list-options line; cmd names the command it belongs to, or NULL. */
void mc_opt_list_line(const struct mc_opt *o, const char *cmd);
/* The length of the kind at the start of an option's arg (without its words). */
int mc_opt_kind_len(const char *arg);

/* Ready-made setters for mc_opt.set. target points to the named type. */
int mc_set_str(const char *v, void *target, char *why);		      /* const char * */
int mc_set_flag(const char *v, void *target, char *why);	      /* bool, set true */
int mc_set_size(const char *v, void *target, char *why);	      /* uint64_t bytes */
int mc_set_duration(const char *v, void *target, char *why);	      /* uint64_t ms */
int mc_set_u64(const char *v, void *target, char *why);		      /* uint64_t */
int mc_set_int(const char *v, void *target, char *why);		      /* int */
int mc_set_double(const char *v, void *target, char *why);	      /* double */
int mc_set_positive_int(const char *v, void *target, char *why);      /* int, at least 1 */
int mc_set_positive_duration(const char *v, void *target, char *why); /* uint64_t ms, not 0 */
int mc_set_positive_size(const char *v, void *target, char *why);     /* uint64_t bytes, not 0 */
/* double, a rate a second: more than 0, at most 1e9 */
int mc_set_rate(const char *v, void *target, char *why);
int mc_set_count(const char *v, void *target, char *why); /* int, 0 or more */
int mc_set_fd(const char *v, void *target, char *why);	  /* int, an fd open for writing */
/* struct mc_amount (mc/parse.h): a size, or a percentage "20%". */
int mc_set_amount(const char *v, void *target, char *why);
/* const char *, 1 to MC_NAME_MAX bytes: a name the wire carries (host, domain). */
int mc_set_name(const char *v, void *target, char *why);
/* Sets the process's log level (target unused): debug, info, warn, error. */
int mc_set_log_level(const char *v, void *target, char *why);
/* The values mc_set_log_level takes, for mc_opt.values. */
#define MC_LOG_LEVELS "debug|info|warn|error"

#endif
