/* Planted for tests/cli/sockets.bats: a module that writes to its socket itself. */
#include <sys/socket.h>

static int
reply(int fd, const char *p, size_t n)
{
	return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}
