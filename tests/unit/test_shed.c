/*
 * Unit tests for the listener's shedding of strangers (libmc/listener.c,
 * mc_conn_limits.max_unvouched), driven on one thread so that what the
 * loop has read is exact: past the cap, the stranger shed is one that
 * has said nothing unread, not an older one whose request waits to be
 * read (it may vouch for itself, as a granted read under a flood of
 * strangers does); with every candidate's request unread, the oldest.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "mc/conn.h"
#include "mc/log.h"
#include "mc/rpcc.h"
#include "mc/wire.h"
#include "tap.h"

static struct event_base *base;

/* "vouch": the caller proves who it is, as an authenticated hello does. */
static void
h_vouch(struct mc_req *req)
{
	mc_conn_vouch(req->conn);
	mc_reply_ok_empty(req);
}

static const struct mc_method methods[] = {
	{ "vouch", h_vouch, 0 },
	{ NULL, NULL, 0 },
};

/* A silent client: connected, nothing sent. */
static int
silent(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether the server closed fd (it reads as the end of the stream). */
static bool
closed_by_server(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;

	return poll(&p, 1, 0) == 1 && recv(fd, &b, 1, MSG_DONTWAIT) == 0;
}

/* A client whose "vouch" request is in the socket before the server accepts it. */
static struct mc_rpcc *
speaker(const char *addr)
{
	struct mc_err err;
	struct mc_rpcc *r = mc_rpcc_connect(addr, 2000, &err);

	if (r == NULL)
		return NULL;
	msgpack_pack_map(mc_rpcc_begin(r, "vouch"), 0);
	if (mc_rpcc_send(r, NULL, 0, &err) < 0 || mc_rpcc_flush(r, &err) < 0) {
		mc_rpcc_close(r);
		return NULL;
	}
	return r;
}

/* Whether r's request was answered, without an error. */
static bool
answered(struct mc_rpcc *r)
{
	struct mc_msg m;
	struct mc_err err;
	bool ok;

	if (mc_rpcc_recv(r, &m, &err) < 0)
		return false;
	ok = mc_msg_error(&m, &err) == 0;
	mc_msg_release(&m);
	return ok;
}

static void
spin(void)
{
	for (int i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

int
main(void)
{
	char path[64], addr[80];
	struct mc_conn_limits lim = { 0 };
	struct mc_conn_ops ops = { 0 };
	struct mc_registry *reg;
	struct mc_server *srv;
	struct mc_addr a, bound;
	struct mc_rpcc *r;
	struct mc_err err;
	int s1, s2;

	mc_log_set_level(MC_LOG_ERROR);
	snprintf(path, sizeof(path), "/tmp/mc-test-shed-%d.sock", (int)getpid());
	snprintf(addr, sizeof(addr), "unix:%s", path);
	unlink(path);
	base = event_base_new();
	reg = mc_registry_new(NULL, &err);
	mc_conn_limits_daemon(&lim);
	lim.hello_timeout_ms = 60000;
	lim.max_unvouched = 2;
	ops.methods = reg;
	TAP_OK(base != NULL && reg != NULL && mc_registry_add(reg, methods, &err) == 0 &&
		       mc_addr_parse(addr, &a, &err) == 0 &&
		       (srv = mc_server_new(base, &a, &ops, &lim, &bound, &err)) != NULL,
	       "a server that holds 2 strangers at most");

	/* the oldest stranger has a request waiting; two silent ones come after it */
	r = speaker(addr);
	s1 = silent(path);
	s2 = silent(path);
	TAP_OK(r != NULL && s1 >= 0 && s2 >= 0, "three clients in the backlog");
	spin();
	TAP_OK(closed_by_server(s1) && !closed_by_server(s2),
	       "the third sheds the oldest silent stranger, not the older one with a request");
	TAP_OK(answered(r), "the one with a request is read, vouched for and answered");

	/* three speakers at once: the silent one goes, then the oldest speaker */
	struct mc_rpcc *r2 = speaker(addr), *r3 = speaker(addr), *r4 = speaker(addr);

	spin();
	TAP_OK(closed_by_server(s2), "the silent stranger goes before any speaker");
	TAP_OK(r2 != NULL && !answered(r2),
	       "with every stranger's request unread, the oldest goes");
	TAP_OK(r3 != NULL && r4 != NULL && answered(r3) && answered(r4),
	       "the newer speakers are served");

	close(s1);
	close(s2);
	mc_rpcc_close(r);
	mc_rpcc_close(r2);
	mc_rpcc_close(r3);
	mc_rpcc_close(r4);
	spin();
	mc_server_free(srv);
	mc_registry_free(reg);
	event_base_free(base);
	unlink(path);
	return tap_done();
}
