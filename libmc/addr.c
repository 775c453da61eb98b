/*
 * Socket addresses: parse "host:port", "[v6]:port" and "unix:/path",
 * listen on them and connect to them.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mc/addr.h"
#include "mc/clock.h"

#define UNIX_PREFIX "unix:"
#define UNIX_PREFIX_LEN (sizeof(UNIX_PREFIX) - 1)

static int
parse_unix(const char *path, struct mc_addr *out, struct mc_err *err)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&out->ss;
	size_t n = strlen(path);

	if (n == 0)
		return mc_err_set(err, MC_ERR_INVALID, "empty socket path");
	/* sun_path must also hold the terminating NUL. */
	if (n >= sizeof(sun->sun_path))
		return mc_err_set(err, MC_ERR_INVALID, "socket path longer than %zu bytes",
				  sizeof(sun->sun_path) - 1);
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, n + 1);
	out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	out->is_unix = 1;
	snprintf(out->text, sizeof(out->text), "%s%s", UNIX_PREFIX, path);
	return 0;
}

/* Copy a libc reason ("Connection refused") in the project's lowercase voice. */
/* Decimal 0..65535, digits only; -1 otherwise. */
static long
parse_port(const char *p)
{
	long v = 0;

	if (*p == '\0')
		return -1;
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
		if (v > 65535)
			return -1;
	}
	return v;
}

int
mc_addr_parse(const char *s, struct mc_addr *out, struct mc_err *err)
{
	char host[MC_ADDR_MAX], serv[8];
	const char *colon, *hs, *he;
	struct addrinfo hints, *res = NULL;
	size_t hlen;
	long port;
	int rc, v6 = 0;

	if (s == NULL || out == NULL)
		return mc_err_set(err, MC_ERR_INVALID, "no address given");
	memset(out, 0, sizeof(*out));
	if (strlen(s) >= MC_ADDR_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "address longer than %d bytes",
				  MC_ADDR_MAX - 1);
	if (strncmp(s, UNIX_PREFIX, UNIX_PREFIX_LEN) == 0)
		return parse_unix(s + UNIX_PREFIX_LEN, out, err);

	if (s[0] == '[') {
		hs = s + 1;
		he = strchr(hs, ']');
		if (he == NULL)
			return mc_err_set(err, MC_ERR_INVALID, "missing ']'");
		if (he[1] != ':')
			return mc_err_set(err, MC_ERR_INVALID, "missing port");
		colon = he + 1;
		v6 = 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return mc_err_set(err, MC_ERR_INVALID,
					  "missing port (want host:port or unix:/path)");
		hs = s;
		he = colon;
		/* A bare IPv6 literal would make the port ambiguous. */
		if (memchr(hs, ':', (size_t)(he - hs)) != NULL)
			return mc_err_set(err, MC_ERR_INVALID,
					  "put an IPv6 host in brackets, as [::1]:7300");
	}
	hlen = (size_t)(he - hs);
	if (hlen == 0)
		return mc_err_set(err, MC_ERR_INVALID, "missing host");
	port = parse_port(colon + 1);
	if (port < 0)
		return mc_err_set(err, MC_ERR_INVALID, "port must be a number from 0 to 65535");
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	snprintf(serv, sizeof(serv), "%u", (unsigned)port & 0xffffu);

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = v6 ? AF_INET6 : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, serv, &hints, &res);
	if (rc != 0 || res == NULL) {
		/*
		 * A name that does not resolve is a service out of reach (the
		 * resolver, or a host not there yet), not a malformed address:
		 * the syntax was checked above.
		 */
		int code = MC_ERR_UNAVAILABLE;
		char why[128];

		if (res != NULL)
			freeaddrinfo(res);
		mc_lower_reason(why, sizeof(why),
				rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return mc_err_set(err, code, "cannot resolve '%s': %s", host, why);
	}
	if (res->ai_addrlen > sizeof(out->ss)) {
		freeaddrinfo(res);
		return mc_err_set(err, MC_ERR_INTERNAL, "cannot resolve '%s': address too long",
				  host);
	}
	memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	out->is_unix = 0;
	freeaddrinfo(res);
	/* Cannot truncate: the input, port included, fit in MC_ADDR_MAX. */
	if (snprintf(out->text, sizeof(out->text), v6 ? "[%s]:%ld" : "%s:%ld", host, port) >=
	    (int)sizeof(out->text))
		return mc_err_set(err, MC_ERR_INVALID, "address longer than %d bytes",
				  MC_ADDR_MAX - 1);
	return 0;
}

void
mc_addr_format(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN];

	if (buf == NULL || cap == 0)
		return;
	buf[0] = '\0';
	if (sa == NULL || len < (socklen_t)sizeof(sa_family_t)) {
		snprintf(buf, cap, "?");
		return;
	}
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, cap, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, cap, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else if (sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *sun = (const struct sockaddr_un *)sa;
		size_t off = offsetof(struct sockaddr_un, sun_path);
		size_t n = len > off ? (size_t)len - off : 0;

		if (n > sizeof(sun->sun_path))
			n = sizeof(sun->sun_path);
		/* sun_path need not be NUL-terminated when it is full. */
		n = strnlen(sun->sun_path, n);
		snprintf(buf, cap, "%s%.*s", UNIX_PREFIX, (int)n, sun->sun_path);
	} else {
		snprintf(buf, cap, "?");
	}
}

int
mc_addr_canonical(const char *s, char *out, size_t cap, struct mc_err *err)
{
	struct mc_addr a;

	if (mc_addr_parse(s, &a, err) != 0)
		return -1;
	if (!a.is_unix && a.ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a.ss;

		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			struct sockaddr_in in;

			memset(&in, 0, sizeof(in));
			in.sin_family = AF_INET;
			in.sin_port = in6->sin6_port;
			memcpy(&in.sin_addr, &in6->sin6_addr.s6_addr[12], 4);
			memcpy(&a.ss, &in, sizeof(in));
			a.len = sizeof(in);
		}
	}
	if (!a.is_unix)
		mc_addr_format((const struct sockaddr *)&a.ss, a.len, a.text, sizeof(a.text));
	if (cap == 0 || strlen(a.text) >= cap)
		return mc_err_set(err, MC_ERR_INVALID, "address longer than %zu bytes",
				  cap > 0 ? cap - 1 : 0);
	memcpy(out, a.text, strlen(a.text) + 1);
	return 0;
}

/*
 * A socket file left by a daemon that died is stale; one a live daemon
 * still accepts on is not, and must not be stolen. Anything that is not
 * a socket is never removed.
 */
static int
clear_stale_socket(const struct mc_addr *a, struct mc_err *err)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)&a->ss;
	struct stat st;
	int fd, rc, e;

	if (lstat(sun->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : mc_err_errno(err, "cannot listen on %s", a->text);
	if (!S_ISSOCK(st.st_mode))
		return mc_err_set(err, MC_ERR_INVALID,
				  "cannot listen on %s: file exists and is not a socket", a->text);
	/* Non-blocking, so a live listener with a full backlog cannot hang us. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mc_err_errno(err, "cannot listen on %s: socket", a->text);
	rc = connect(fd, (const struct sockaddr *)&a->ss, a->len);
	e = errno;
	close(fd);
	if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
		return mc_err_set(err, MC_ERR_BUSY,
				  "cannot listen on %s: another process is listening there",
				  a->text);
	if (e != ECONNREFUSED && e != ENOENT) {
		errno = e;
		return mc_err_errno(err, "cannot listen on %s", a->text);
	}
	if (unlink(sun->sun_path) < 0 && errno != ENOENT)
		return mc_err_errno(err, "cannot remove stale socket %s", a->text);
	return 0;
}

int
mc_addr_listen(const struct mc_addr *a, int backlog, struct mc_addr *bound, struct mc_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1;

	if (a == NULL || a->len == 0)
		return mc_err_set(err, MC_ERR_INVALID, "cannot listen: no address");
	if (a->is_unix && clear_stale_socket(a, err) < 0)
		return -1;
	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		mc_err_errno(err, "cannot listen on %s: socket", a->text);
		goto fail;
	}
	if (!a->is_unix && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		mc_err_errno(err, "cannot listen on %s: SO_REUSEADDR", a->text);
		goto fail;
	}
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
		mc_err_errno(err, "cannot listen on %s", a->text);
		goto fail;
	}
	if (listen(fd, backlog > 0 ? backlog : SOMAXCONN) < 0) {
		mc_err_errno(err, "cannot listen on %s", a->text);
		goto fail;
	}
	if (bound != NULL) {
		memset(&ss, 0, sizeof(ss));
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
			mc_err_errno(err, "cannot listen on %s: getsockname", a->text);
			goto fail;
		}
		if (a->is_unix) {
			/* Keep the path as given; the kernel may shorten len. */
			if (bound != a)
				*bound = *a;
		} else {
			memset(bound, 0, sizeof(*bound));
			memcpy(&bound->ss, &ss, sl);
			bound->len = sl;
			bound->is_unix = 0;
			mc_addr_format((struct sockaddr *)&ss, sl, bound->text,
				       sizeof(bound->text));
		}
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static int
set_blocking(int fd, int blocking)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	fl = blocking ? fl & ~O_NONBLOCK : fl | O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl);
}

static int
connect_failed(struct mc_err *err, const struct mc_addr *a, int e)
{
	/* An OS error here means "nobody there": the service is unavailable. */
	return mc_err_set(err, MC_ERR_UNAVAILABLE, "cannot connect to %s: %s", a->text,
			  mc_strerror(e));
}

/* Milliseconds left before deadline_ns, or -1 for "no deadline". */
static int
left_ms(uint64_t deadline_ns)
{
	uint64_t now;

	if (deadline_ns == 0)
		return -1;
	now = mc_mono_ns();
	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999) / 1000000);
}

int
mc_addr_connect(const struct mc_addr *a, int timeout_ms, struct mc_err *err)
{
	uint64_t deadline = 0;
	int fd, rc, e = 0, one = 1;
	socklen_t el = sizeof(e);

	if (a == NULL || a->len == 0)
		return mc_err_set(err, MC_ERR_INVALID, "cannot connect: no address");
	if (timeout_ms > 0)
		deadline = mc_mono_ns() + (uint64_t)timeout_ms * 1000000u;
	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mc_err_errno(err, "cannot connect to %s: socket", a->text);
	for (;;) {
		rc = connect(fd, (const struct sockaddr *)&a->ss, a->len);
		if (rc == 0 || errno != EINTR)
			break;
	}
	/*
	 * A unix socket with a full backlog answers EAGAIN instead of
	 * EINPROGRESS and cannot be polled for completion: retry it.
	 */
	while (rc < 0 && a->is_unix && errno == EAGAIN) {
		struct timespec ts = { 0, 5 * 1000000L };
		int left = left_ms(deadline);

		if (left == 0) {
			mc_err_set(err, MC_ERR_TIMEOUT, "cannot connect to %s: timed out", a->text);
			goto fail;
		}
		nanosleep(&ts, NULL);
		rc = connect(fd, (const struct sockaddr *)&a->ss, a->len);
	}
	if (rc < 0 && errno != EINPROGRESS) {
		connect_failed(err, a, errno);
		goto fail;
	}
	if (rc < 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		for (;;) {
			rc = poll(&p, 1, left_ms(deadline));
			if (rc > 0)
				break;
			if (rc == 0) {
				mc_err_set(err, MC_ERR_TIMEOUT, "cannot connect to %s: timed out",
					   a->text);
				goto fail;
			}
			if (errno != EINTR) {
				mc_err_errno(err, "cannot connect to %s: poll", a->text);
				goto fail;
			}
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0) {
			mc_err_errno(err, "cannot connect to %s", a->text);
			goto fail;
		}
		if (e != 0) {
			connect_failed(err, a, e);
			goto fail;
		}
	}
	if (!a->is_unix && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		mc_err_errno(err, "cannot connect to %s: TCP_NODELAY", a->text);
		goto fail;
	}
	if (set_blocking(fd, 1) < 0) {
		mc_err_errno(err, "cannot connect to %s: fcntl", a->text);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int
mc_addr_is_local(const struct mc_addr *a)
{
	if (a->is_unix)
		return 1;
	if (a->ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&a->ss;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (a->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->ss;
		const uint8_t *b = in6->sin6_addr.s6_addr;

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return 1;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127;
	}
	return 0;
}

int
mc_addr_check_local(const char *flag, const char *addr, const char *remedy, struct mc_err *err)
{
	struct mc_addr a;

	if (addr == NULL || mc_addr_parse(addr, &a, err) != 0 || mc_addr_is_local(&a))
		return 0;
	return mc_err_set(err, MC_ERR_INVALID, "refusing %s %s without authentication: give %s",
			  flag, addr, remedy);
}
