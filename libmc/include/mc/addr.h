/*
 * Addresses: "host:port" (IPv4/IPv6 literal or name; "[::1]:7300") or
 * "unix:/path". Port 0 asks the kernel for a free port.
 */
#ifndef MC_ADDR_H
#define MC_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

#include "mc/err.h"

#define MC_ADDR_MAX 256
#define MC_DEFAULT_MASTER "127.0.0.1:7300"

struct mc_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	int is_unix;
	char text[MC_ADDR_MAX]; /* as given (normalised) */
};

/*
 * "host:port", "[v6]:port" or "unix:/path" into out, the host resolved.
 * -1 with err: MC_ERR_INVALID for a malformed address, MC_ERR_UNAVAILABLE
 * for a host name that does not resolve (the address was well formed).
 */
int mc_addr_parse(const char *s, struct mc_addr *out, struct mc_err *err);
/*
 * Non-blocking, close-on-exec listening socket with SO_REUSEADDR
 * (a stale unix socket file is unlinked first). *bound gets the real
 * address, e.g. the port the kernel picked for port 0.
 */
int mc_addr_listen(const struct mc_addr *a, int backlog, struct mc_addr *bound, struct mc_err *err);
/* Blocking connect with a timeout (ms, 0 = none); TCP_NODELAY set. Returns fd. */
int mc_addr_connect(const struct mc_addr *a, int timeout_ms, struct mc_err *err);
/*
 * 1 when only this machine can reach a: a unix socket, 127.0.0.0/8 or
 * ::1 (or ::ffff:127.x). What the daemons serve without authentication.
 */
int mc_addr_is_local(const struct mc_addr *a);
/*
 * A daemon serving unauthenticated: 0 when addr, the value of flag
 * (NULL: not given), is unparsable (the caller's own check names that)
 * or local; -1 with err "refusing FLAG ADDR without authentication:
 * give REMEDY" when others could reach it.
 */
int mc_addr_check_local(const char *flag, const char *addr, const char *remedy, struct mc_err *err);
/*
 * The one spelling of the address s names, into out (cap bytes): the
 * host resolved and printed numerically (127.0.0.01, 0x7f.0.0.1 and
 * 2130706433 are all 127.0.0.1; an IPv4-mapped IPv6 address is its
 * IPv4 one; IPv6 as RFC 5952 writes it), the port without leading
 * zeros; a unix path as given. What two addresses are compared by, so
 * that an alias is the address it aliases. -1 with err as mc_addr_parse.
 */
int mc_addr_canonical(const char *s, char *out, size_t cap, struct mc_err *err);
/* Render a sockaddr as "host:port" or "unix:/path". */
void mc_addr_format(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap);

#endif
