/*
 * Address parsing, listening and connecting over TCP and unix sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mc/addr.h"
#include "tap.h"

static int
port_of(const struct mc_addr *a)
{
	if (a->ss.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
	if (a->ss.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
	return -1;
}

static void
test_parse_good(void)
{
	struct mc_addr a;
	struct mc_err err;

	TAP_OK(mc_addr_parse("127.0.0.1:7300", &a, &err) == 0 && a.ss.ss_family == AF_INET &&
		       port_of(&a) == 7300 && !a.is_unix && strcmp(a.text, "127.0.0.1:7300") == 0,
	       "parse: ipv4 host:port");
	TAP_OK(mc_addr_parse("[::1]:7301", &a, &err) == 0 && a.ss.ss_family == AF_INET6 &&
		       port_of(&a) == 7301 && strcmp(a.text, "[::1]:7301") == 0,
	       "parse: bracketed ipv6 literal");
	TAP_OK(mc_addr_parse("localhost:80", &a, &err) == 0 && port_of(&a) == 80,
	       "parse: a name is resolved");
	TAP_OK(mc_addr_parse("127.0.0.1:0", &a, &err) == 0 && port_of(&a) == 0,
	       "parse: port 0 is allowed (kernel picks)");
	TAP_OK(mc_addr_parse("127.0.0.1:65535", &a, &err) == 0 && port_of(&a) == 65535,
	       "parse: port 65535 is the top of the range");
	TAP_OK(mc_addr_parse("unix:/tmp/mc.sock", &a, &err) == 0 && a.is_unix &&
		       a.ss.ss_family == AF_UNIX &&
		       strcmp(((struct sockaddr_un *)&a.ss)->sun_path, "/tmp/mc.sock") == 0 &&
		       strcmp(a.text, "unix:/tmp/mc.sock") == 0,
	       "parse: unix:/path");
}

static void
test_parse_bad(void)
{
	static const char *const bad[] = {
		"",
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:65536",
		"127.0.0.1:-1",
		"127.0.0.1:7x",
		"127.0.0.1:99999999999999999999",
		":7300",
		"unix:",
		"[::1]7300",
		"[::1",
		"::1:7300",
		"[]:1",
	};
	char longpath[200];
	struct mc_addr a;
	struct mc_err err;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mc_err_clear(&err);
		TAP_OK(mc_addr_parse(bad[i], &a, &err) == -1 && err.code == MC_ERR_INVALID &&
			       err.msg[0] != '\0',
		       "parse: '%s' is refused as invalid with a reason", bad[i]);
	}
	mc_err_clear(&err);
	TAP_OK(mc_addr_parse("nosuchhost.invalid:7300", &a, &err) == -1 &&
		       err.code == MC_ERR_UNAVAILABLE &&
		       strstr(err.msg, "cannot resolve 'nosuchhost.invalid'") != NULL,
	       "parse: a well-formed name that does not resolve is unavailable, not invalid: %s",
	       err.msg);
	memset(longpath, 'p', sizeof(longpath));
	memcpy(longpath, "unix:/", 6);
	longpath[sizeof(longpath) - 1] = '\0';
	TAP_OK(mc_addr_parse(longpath, &a, &err) == -1 && strstr(err.msg, "longer") != NULL,
	       "parse: a unix path longer than sun_path is refused");
	TAP_OK(mc_addr_parse(NULL, &a, &err) == -1, "parse: NULL is refused");
}

static void
test_tcp(void)
{
	struct mc_addr a, bound, gone;
	struct mc_err err;
	int lfd, cfd, sfd, one = 0, fl;
	socklen_t ol = sizeof(one);
	char buf[4];

	if (mc_addr_parse("127.0.0.1:0", &a, &err) < 0) {
		TAP_OK(0, "tcp: parse failed: %s", err.msg);
		return;
	}
	lfd = mc_addr_listen(&a, 16, &bound, &err);
	TAP_OK(lfd >= 0 && port_of(&bound) > 0 && strncmp(bound.text, "127.0.0.1:", 10) == 0 &&
		       strcmp(bound.text + 10, "0") != 0,
	       "listen: 127.0.0.1:0 returns the real port in bound");
	if (lfd < 0)
		return;
	fl = fcntl(lfd, F_GETFL);
	TAP_OK((fl & O_NONBLOCK) && (fcntl(lfd, F_GETFD) & FD_CLOEXEC),
	       "listen: socket is non-blocking and close-on-exec");
	cfd = mc_addr_connect(&bound, 1000, &err);
	TAP_OK(cfd >= 0, "connect: reaches the bound port");
	if (cfd >= 0) {
		fl = fcntl(cfd, F_GETFL);
		getsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, &ol);
		TAP_OK(!(fl & O_NONBLOCK) && one && (fcntl(cfd, F_GETFD) & FD_CLOEXEC),
		       "connect: socket is blocking again, TCP_NODELAY, cloexec");
		usleep(10000);
		sfd = accept(lfd, NULL, NULL);
		TAP_OK(sfd >= 0 && write(cfd, "ping", 4) == 4 && read(sfd, buf, 4) == 4 &&
			       memcmp(buf, "ping", 4) == 0,
		       "connect: bytes flow to the accepted socket");
		if (sfd >= 0)
			close(sfd);
		close(cfd);
	}
	gone = bound;
	close(lfd);
	mc_err_clear(&err);
	TAP_OK(mc_addr_connect(&gone, 1000, &err) == -1 && err.code == MC_ERR_UNAVAILABLE &&
		       strstr(err.msg, "cannot connect to 127.0.0.1:") == err.msg &&
		       strstr(err.msg, ": connection refused") != NULL,
	       "connect: a closed port says 'cannot connect to ADDR: "
	       "connection refused' (%s)",
	       err.msg);
}

static void
test_unix(void)
{
	char path[64], spec[80], buf[4];
	struct mc_addr a, bound;
	struct mc_err err;
	struct stat st;
	int lfd, lfd2, cfd, sfd, fd;

	snprintf(path, sizeof(path), "/tmp/mc-test-addr-%ld.sock", (long)getpid());
	snprintf(spec, sizeof(spec), "unix:%s", path);
	unlink(path);
	if (mc_addr_parse(spec, &a, &err) < 0) {
		TAP_OK(0, "unix: parse failed: %s", err.msg);
		return;
	}
	lfd = mc_addr_listen(&a, 16, &bound, &err);
	TAP_OK(lfd >= 0 && bound.is_unix && strcmp(bound.text, spec) == 0,
	       "unix: listen binds the path and reports it");
	if (lfd < 0)
		return;
	cfd = mc_addr_connect(&a, 1000, &err);
	sfd = accept(lfd, NULL, NULL);
	TAP_OK(cfd >= 0 && sfd >= 0 && write(cfd, "pong", 4) == 4 && read(sfd, buf, 4) == 4 &&
		       memcmp(buf, "pong", 4) == 0,
	       "unix: connect and exchange bytes");
	if (sfd >= 0)
		close(sfd);
	if (cfd >= 0)
		close(cfd);

	lfd2 = mc_addr_listen(&a, 16, NULL, &err);
	TAP_OK(lfd2 == -1 && err.code == MC_ERR_BUSY && stat(path, &st) == 0,
	       "unix: a live listener's socket is not stolen");
	if (lfd2 >= 0)
		close(lfd2);

	close(lfd); /* the socket file stays behind: stale */
	TAP_OK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode),
	       "unix: a closed listener leaves a stale socket file");
	lfd = mc_addr_listen(&a, 16, NULL, &err);
	TAP_OK(lfd >= 0, "unix: a stale socket file is replaced");
	if (lfd >= 0)
		close(lfd);
	unlink(path);

	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd >= 0)
		close(fd);
	mc_err_clear(&err);
	TAP_OK(mc_addr_listen(&a, 16, NULL, &err) == -1 && stat(path, &st) == 0 &&
		       S_ISREG(st.st_mode),
	       "unix: a regular file at the path is never removed (%s)", err.msg);
	unlink(path);
	TAP_OK(mc_addr_connect(&a, 1000, &err) == -1 && err.code == MC_ERR_UNAVAILABLE,
	       "unix: connecting to a missing socket is unavailable");
}

static void
test_format(void)
{
	struct sockaddr_in6 in6;
	struct sockaddr_un sun;
	char buf[MC_ADDR_MAX];

	memset(&in6, 0, sizeof(in6));
	in6.sin6_family = AF_INET6;
	in6.sin6_port = htons(9);
	in6.sin6_addr.s6_addr[15] = 1;
	mc_addr_format((struct sockaddr *)&in6, sizeof(in6), buf, sizeof(buf));
	TAP_OK(strcmp(buf, "[::1]:9") == 0, "format: ipv6 in brackets");
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memset(sun.sun_path, 'x', sizeof(sun.sun_path));
	mc_addr_format((struct sockaddr *)&sun, sizeof(sun), buf, sizeof(buf));
	TAP_OK(strlen(buf) == 5 + sizeof(sun.sun_path),
	       "format: an unterminated sun_path is bounded by its size");
	mc_addr_format((struct sockaddr *)&sun, 2, buf, 4);
	TAP_OK(strcmp(buf, "uni") == 0, "format: output is truncated to the buffer");
}

static void
test_is_local(void)
{
	static const struct {
		const char *addr;
		int local;
	} cases[] = {
		{ "127.0.0.1:7300", 1 },      { "127.255.0.9:1", 1 },
		{ "[::1]:7300", 1 },	      { "[::ffff:127.0.0.1]:1", 1 },
		{ "unix:/tmp/x.sock", 1 },    { "0.0.0.0:0", 0 },
		{ "10.255.255.1:1", 0 },      { "[::]:7300", 0 },
		{ "[::ffff:10.0.0.1]:1", 0 },
	};
	struct mc_addr a;
	struct mc_err err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		TAP_OK(mc_addr_parse(cases[i].addr, &a, &err) == 0 &&
			       mc_addr_is_local(&a) == cases[i].local,
		       "is_local: %s is %s", cases[i].addr, cases[i].local ? "local" : "not local");
	TAP_OK(mc_addr_check_local("--listen", "127.0.0.1:1", "X", &err) == 0 &&
		       mc_addr_check_local("--http", NULL, "X", &err) == 0,
	       "check_local: a loopback or absent address passes");
	TAP_OK(mc_addr_check_local("--listen", "0.0.0.0:0", "--insecure", &err) == -1 &&
		       strcmp(err.msg, "refusing --listen 0.0.0.0:0 without authentication: "
				       "give --insecure") == 0,
	       "check_local: an open one is refused, naming flag, address and remedy (%s)",
	       err.msg);
}

static void
test_canonical(void)
{
	static const struct {
		const char *in, *want;
	} same[] = {
		{ "127.0.0.1:7300", "127.0.0.1:7300" },
		{ "127.0.0.01:7300", "127.0.0.1:7300" },
		{ "0x7f.0.0.1:7300", "127.0.0.1:7300" },
		{ "2130706433:7300", "127.0.0.1:7300" },
		{ "127.0.0.1:07300", "127.0.0.1:7300" },
		{ "[::ffff:127.0.0.1]:7300", "127.0.0.1:7300" },
		{ "[0:0:0:0:0:0:0:1]:7300", "[::1]:7300" },
		{ "[2001:DB8:0:0:0:0:0:1]:80", "[2001:db8::1]:80" },
		{ "unix:/tmp/mc.sock", "unix:/tmp/mc.sock" },
	};
	char out[MC_ADDR_MAX];
	struct mc_err err;

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		TAP_OK(mc_addr_canonical(same[i].in, out, sizeof(out), &err) == 0 &&
			       strcmp(out, same[i].want) == 0,
		       "canonical: %s is %s (got %s)", same[i].in, same[i].want, out);
	TAP_OK(mc_addr_canonical("localhost:7300", out, sizeof(out), &err) == 0 &&
		       (strcmp(out, "127.0.0.1:7300") == 0 || strcmp(out, "[::1]:7300") == 0),
	       "canonical: a name is its resolved address (got %s)", out);
	TAP_OK(mc_addr_canonical("127.0.0.1", out, sizeof(out), &err) == -1 &&
		       err.code == MC_ERR_INVALID,
	       "canonical: a malformed address is refused as parse refuses it");
	TAP_OK(mc_addr_canonical("127.0.0.1:7300", out, 8, &err) == -1 &&
		       err.code == MC_ERR_INVALID,
	       "canonical: an address longer than the buffer is refused, not cut");
}

int
main(void)
{
	test_parse_good();
	test_parse_bad();
	test_tcp();
	test_unix();
	test_format();
	test_is_local();
	test_canonical();
	return tap_done();
}
