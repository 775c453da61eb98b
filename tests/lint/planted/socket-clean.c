/*
 * Planted for tests/cli/sockets.bats: what reads like a socket call and
 * is none. A comment may say send(fd, p, n, 0) or recv(fd,
 * and writev(fd, v, 2) on a line of its own.
 */
#include <stdio.h>

struct ops {
	int (*send)(void *item);
	int (*recv)(void *item);
};

int mc_dp_send(void *item);

static int
run(const struct ops *ops, struct ops w, void *item)
{
	const char *s = "send(fd, p, n, 0)"; // recv(fd, buf, n, 0)

	puts(s);
	if (ops->send(item) < 0 || w.recv(item) < 0) /* sendmsg(fd, &m, 0) */
		return -1;
	return mc_dp_send(item) + 'r' + '\'';
}
