/*
 * Status codes, their wire names and the caller-owned error buffer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mc/err.h"

/*
 * Indexed by enum mc_status; the names travel on the wire, so they are
 * append-only like the enum itself.
 */
static const char *const status_names[MC_STATUS_COUNT] = {
	[MC_OK] = "ok",
	[MC_ERR_NOT_FOUND] = "not_found",
	[MC_ERR_EXISTS] = "exists",
	[MC_ERR_NO_SPACE] = "no_space",
	[MC_ERR_LEASED] = "leased",
	[MC_ERR_INVALID] = "invalid",
	[MC_ERR_BUSY] = "busy",
	[MC_ERR_VERSION] = "version",
	[MC_ERR_CHECKSUM] = "checksum",
	[MC_ERR_UNAVAILABLE] = "unavailable",
	[MC_ERR_PROTO] = "proto",
	[MC_ERR_TOO_LARGE] = "too_large",
	[MC_ERR_QUOTA] = "quota",
	[MC_ERR_DENIED] = "denied",
	[MC_ERR_TIMEOUT] = "timeout",
	[MC_ERR_SYSTEM] = "system",
	[MC_ERR_INTERNAL] = "internal",
	[MC_ERR_PERMISSION] = "permission",
	[MC_ERR_TOO_FEW_PEERS] = "too_few_peers",
};

int
mc_err_vset(struct mc_err *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL)
		return -1;
	err->code = code;
	if (fmt == NULL) {
		err->msg[0] = '\0';
		return -1;
	}
	/* Truncation is fine: the message is for people, not for parsing. */
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return -1;
}

int
mc_err_set(struct mc_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mc_err_vset(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

int
mc_err_errno(struct mc_err *err, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;
	size_t n;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	mc_err_vset(err, MC_ERR_SYSTEM, fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	/*
	 * strerror() capitalises ("No such file"); the project voice is
	 * lowercase, so fold the first letter of the reason.
	 */
	if (n < sizeof(err->msg) - 1)
		snprintf(err->msg + n, sizeof(err->msg) - n, "%s%s", n ? ": " : "",
			 mc_strerror(saved));
	errno = saved;
	return -1;
}

char *
mc_lower_reason(char *buf, size_t cap, const char *reason)
{
	if (cap == 0)
		return buf;
	snprintf(buf, cap, "%s", reason != NULL ? reason : "unknown error");
	if (buf[0] >= 'A' && buf[0] <= 'Z')
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

const char *
mc_strerror(int e)
{
	static _Thread_local char buf[128];
	char tmp[128];

	/* the GNU strerror_r returns its message, maybe not in tmp */
	return mc_lower_reason(buf, sizeof(buf), strerror_r(e, tmp, sizeof(tmp)));
}

void
mc_err_clear(struct mc_err *err)
{
	if (err == NULL)
		return;
	err->code = MC_OK;
	err->msg[0] = '\0';
}

const char *
mc_status_name(int code)
{
	if (code < 0 || code >= MC_STATUS_COUNT)
		return "unknown";
	return status_names[code];
}

int
mc_status_from_name(const char *name, size_t len)
{
	int i;

	if (name == NULL)
		return MC_ERR_INTERNAL;
	for (i = 0; i < MC_STATUS_COUNT; i++) {
		const char *s = status_names[i];

		if (strlen(s) == len && memcmp(s, name, len) == 0)
			return i;
	}
	return MC_ERR_INTERNAL;
}

int
mc_status_exit_code(int code)
{
	switch (code) {
	case MC_OK:
		return MC_EXIT_OK;
	case MC_ERR_INVALID:
		return MC_EXIT_USAGE;
	case MC_ERR_PROTO:
	case MC_ERR_CHECKSUM:
		return MC_EXIT_DATAERR;
	case MC_ERR_UNAVAILABLE:
	case MC_ERR_TIMEOUT:
	case MC_ERR_TOO_FEW_PEERS:
		return MC_EXIT_UNAVAILABLE;
	case MC_ERR_INTERNAL:
	case MC_ERR_SYSTEM:
		return MC_EXIT_SOFTWARE;
	case MC_ERR_PERMISSION:
		return MC_EXIT_NOPERM;
	default:
		return MC_EXIT_FAIL;
	}
}
