/*
 * Logging to stderr in one voice: "PROG: message" for errors people
 * read, and "TIME PROG[pid] LEVEL message" lines for daemons.
 */
#ifndef MC_LOG_H
#define MC_LOG_H

enum mc_log_level { MC_LOG_DEBUG, MC_LOG_INFO, MC_LOG_WARN, MC_LOG_ERROR };

/* Program name used as prefix; set once from main (basename of argv[0]). */
void mc_log_init(const char *prog, int daemon_format);
const char *mc_prog(void);
void mc_log_set_level(int level);
/* Whether a line of level would be written now. */
int mc_log_enabled(int level);
/* Parse "debug|info|warn|error"; -1 when unknown. */
int mc_log_level_parse(const char *s);

void mc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define mc_debug(...) mc_log(MC_LOG_DEBUG, __VA_ARGS__)
#define mc_info(...) mc_log(MC_LOG_INFO, __VA_ARGS__)
#define mc_warn(...) mc_log(MC_LOG_WARN, __VA_ARGS__)
#define mc_error(...) mc_log(MC_LOG_ERROR, __VA_ARGS__)

/* "PROG: message\n" on stderr, git's voice; for tools. */
void mc_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* mc_complain then exit(code). */
void mc_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/*
 * A daemon is serving on addr: say so on stderr ("PROG: listening on
 * ADDR") and, when ready_fd >= 0, write "ADDR\n" to it and close it, so
 * a script can wait for the line instead of sleeping. A daemon that is
 * ready only later (a peer, once the master knows it) says the first
 * part with mc_complain and the second with mc_ready_fd_write.
 */
void mc_announce_ready(int ready_fd, const char *addr);
void mc_ready_fd_write(int ready_fd, const char *addr);

/* Broken invariant: log file:line and abort. Never for bad input. */
#define MC_BUG(...) mc_bug(__FILE__, __LINE__, __VA_ARGS__)
void mc_bug(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

#endif
