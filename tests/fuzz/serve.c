/*
 * In-process requests for the daemon fuzzers (serve.h).
 */
#include <errno.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve.h"

/* Loop turns before a connection still open is closed from outside. */
#define SERVE_TURNS 1000

/*
 * The connection being served and the operations it was given: the
 * daemon's, with on_close wrapped to notice the end. One at a time; the
 * daemon keeps its own data on the connection, so these are not there.
 */
static struct mc_conn *serving;
static struct mc_conn_ops daemon_ops, wrapped_ops;
static bool closed;

const struct mc_method *
fuzz_pick(const struct mc_registry *const *regs, size_t nregs, uint8_t byte, size_t *which)
{
	size_t total = 0, i;

	for (i = 0; i < nregs; i++)
		total += mc_registry_count(regs[i]);
	if (total == 0)
		return NULL;
	i = byte % total;
	for (*which = 0; i >= mc_registry_count(regs[*which]); (*which)++)
		i -= mc_registry_count(regs[*which]);
	return mc_registry_at(regs[*which], i);
}

static void
on_close(struct mc_conn *c, void *ctx)
{
	if (daemon_ops.on_close != NULL)
		daemon_ops.on_close(c, ctx);
	if (c == serving)
		closed = true;
}

/*
 * Write what fits of buf: nobody reads the other end until the loop
 * runs, and an input larger than the socket's buffer is cut there.
 */
static void
send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

void
fuzz_serve(struct event_base *base, const struct mc_conn_ops *ops, const char *method,
	   const uint8_t *params, size_t len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct mc_conn *c;
	struct mc_err err;
	char sink[4096];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	daemon_ops = *ops;
	wrapped_ops = *ops;
	wrapped_ops.on_close = on_close;
	closed = false;
	if ((serving = c = mc_conn_new(base, sv[0], &wrapped_ops, NULL, &err)) == NULL)
		abort();
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_int(&pk, 0);
	msgpack_pack_uint32(&pk, 1);
	msgpack_pack_str_with_body(&pk, method, strlen(method));
	send_all(sv[1], sb.data, sb.size);
	send_all(sv[1], params, len);
	msgpack_sbuffer_destroy(&sb);
	shutdown(sv[1], SHUT_WR);
	for (int turn = 0; turn < SERVE_TURNS && !closed; turn++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		while (recv(sv[1], sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
	if (!closed)
		mc_conn_close(c, false);
	/* a close from outside finishes on the loop */
	for (int turn = 0; turn < SERVE_TURNS && !closed; turn++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	serving = NULL;
	close(sv[1]);
}
