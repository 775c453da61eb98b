/*
 * Status codes and the error buffer every libmc call fills.
 *
 * Library functions return 0 / -1 (or a pointer / NULL) and describe a
 * failure in a struct mc_err owned by the caller. They never print and
 * never exit. On the wire a status travels as its name ("not_found"),
 * so new codes never break old readers.
 */
#ifndef MC_ERR_H
#define MC_ERR_H

#include <stdarg.h>
#include <stddef.h>

/*
 * libmc is built with -fvisibility=hidden: the functions of the installed
 * headers are the only ones libmc.so exports (libmc/libmc.map lists them).
 */
#pragma GCC visibility push(default)

enum mc_status {
	MC_OK = 0,
	MC_ERR_NOT_FOUND,   /* key, peer or replica does not exist */
	MC_ERR_EXISTS,	    /* key already exists (put of an existing key) */
	MC_ERR_NO_SPACE,    /* placement or allocation failed for capacity */
	MC_ERR_LEASED,	    /* object holds a read lease; use force */
	MC_ERR_INVALID,	    /* bad argument or request field */
	MC_ERR_BUSY,	    /* object is being written or moved */
	MC_ERR_VERSION,	    /* stale or mismatched version */
	MC_ERR_CHECKSUM,    /* bytes do not match the recorded checksum */
	MC_ERR_UNAVAILABLE, /* cannot reach a daemon, or it went away */
	MC_ERR_PROTO,	    /* malformed or unexpected message */
	MC_ERR_TOO_LARGE,   /* message, object or buffer over a limit */
	MC_ERR_QUOTA,	    /* tenant quota exceeded */
	MC_ERR_DENIED,	    /* not allowed (token, tenant, disabled feature) */
	MC_ERR_TIMEOUT,	    /* a deadline passed */
	MC_ERR_SYSTEM,	    /* an OS call failed; msg says which */
	MC_ERR_INTERNAL,    /* a bug: an invariant did not hold */
	MC_ERR_PERMISSION,  /* the caller's role may not make this call, or sent no valid token */
	/* fewer live peers (able to hold the object) than the copies asked for */
	MC_ERR_TOO_FEW_PEERS,
	MC_STATUS_COUNT
};

#define MC_ERR_MSG_MAX 256

struct mc_err {
	int code; /* enum mc_status */
	char msg[MC_ERR_MSG_MAX];
};

/* Fill err (if non-NULL) and return -1, so callers can `return mc_err_set(...)`. */
int mc_err_set(struct mc_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int mc_err_vset(struct mc_err *err, int code, const char *fmt, va_list ap);
/* Set from errno: "<what>: strerror(errno)", code MC_ERR_SYSTEM. */
int mc_err_errno(struct mc_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mc_err_clear(struct mc_err *err);
/*
 * Copy an OS reason (strerror, gai_strerror) into buf with its first
 * letter folded to lowercase, the project's voice; returns buf.
 */
char *mc_lower_reason(char *buf, size_t cap, const char *reason);
/*
 * strerror(e) in the project's voice ("no such file or directory"), in a
 * buffer of the calling thread's that the next call reuses.
 */
const char *mc_strerror(int e);

/* "not_found", "no_space", ...; "unknown" for an out-of-range code. */
const char *mc_status_name(int code);
/* Inverse of mc_status_name; MC_ERR_INTERNAL for an unknown name. */
int mc_status_from_name(const char *name, size_t len);

/*
 * Map a status to the process exit code of DESIGN.md section 8:
 * 0 ok, 1 operation failed, 64 usage, 65 bad data, 69 unavailable (too few
 * peers too), 70 internal, 77 permission denied.
 */
int mc_status_exit_code(int code);

#define MC_EXIT_OK 0
#define MC_EXIT_FAIL 1
#define MC_EXIT_USAGE 64
#define MC_EXIT_DATAERR 65
#define MC_EXIT_UNAVAILABLE 69
#define MC_EXIT_SOFTWARE 70
#define MC_EXIT_NOPERM 77

#pragma GCC visibility pop

#endif
