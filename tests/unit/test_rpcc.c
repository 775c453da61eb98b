/*
 * Unit tests for the stall watch of libmc/rpcc.c (mc_rpcc_watch_stall):
 * a watched connection fails once no byte moved for its stall timeout,
 * whether nothing came or a bulk stopped half-way, and a transfer that
 * keeps moving for longer than that does not fail. The far end is a raw
 * unix socket played by the test (a writer thread paces the slow one).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "mc/clock.h"
#include "mc/rpcc.h"
#include "tap.h"

#define STALL_MS 200
#define TICK_MS (STALL_MS / 4)
#define BULK 4096

static char sock_path[108];
static int lfd = -1;

static void
listen_unix(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sock_path, sizeof(sock_path), "/tmp/mc-test-rpcc.%d.sock", (int)getpid());
	unlink(sock_path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0) {
		perror("listen");
		exit(1);
	}
}

/* A watched (stall_ms > 0) or plain connection to the test's socket, and its far end. */
static struct mc_rpcc *
connect_pair(uint64_t stall_ms, int *far)
{
	char addr[128];
	struct mc_err err = { 0 };
	struct mc_rpcc *r;

	snprintf(addr, sizeof(addr), "unix:%s", sock_path);
	r = mc_rpcc_connect(addr, TICK_MS, &err);
	if (r == NULL) {
		fprintf(stderr, "connect: %s\n", err.msg);
		exit(1);
	}
	mc_rpcc_watch_stall(r, stall_ms);
	*far = accept(lfd, NULL, NULL);
	if (*far < 0) {
		perror("accept");
		exit(1);
	}
	return r;
}

/* Queue and flush one request, as a read of the data plane is. */
static void
ask(struct mc_rpcc *r)
{
	struct mc_err err = { 0 };

	msgpack_pack_map(mc_rpcc_begin(r, "read"), 0);
	if (mc_rpcc_send(r, NULL, 0, &err) < 0 || mc_rpcc_flush(r, &err) < 0) {
		fprintf(stderr, "ask: %s\n", err.msg);
		exit(1);
	}
}

/* The far end's answer to request 1: a result announcing a bulk of len bytes. */
static void
answer_head(int far, uint64_t len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, 1);
	msgpack_pack_uint32(&pk, 1);
	msgpack_pack_nil(&pk);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "len", 3);
	msgpack_pack_uint64(&pk, len);
	if (write(far, sb.data, sb.size) != (ssize_t)sb.size) {
		perror("write");
		exit(1);
	}
	msgpack_sbuffer_destroy(&sb);
}

static void
test_silent_peer(void)
{
	struct mc_err err = { 0 };
	struct mc_msg m;
	struct mc_rpcc *r;
	uint64_t t0, ms;
	int far;

	r = connect_pair(STALL_MS, &far);
	ask(r);
	t0 = mc_mono_ms();
	TAP_OK(mc_rpcc_recv(r, &m, &err) < 0 && err.code == MC_ERR_TIMEOUT,
	       "stall: a peer that sends nothing fails the wait with timeout");
	ms = mc_mono_ms() - t0;
	TAP_OK(ms >= STALL_MS && ms < STALL_MS + 3 * TICK_MS,
	       "stall: after the stall timeout, not one tick (%llu ms)", (unsigned long long)ms);
	TAP_OK(strstr(err.msg, "stalled, no byte for 200 ms") != NULL,
	       "stall: the error says so: %s", err.msg);
	mc_rpcc_close(r);
	close(far);
}

static void
test_bulk_stops_half_way(void)
{
	static char half[BULK / 2], buf[BULK];
	struct mc_err err = { 0 };
	struct mc_msg m;
	struct mc_rpcc *r;
	uint64_t t0, ms;
	int far, rc;

	r = connect_pair(STALL_MS, &far);
	ask(r);
	answer_head(far, BULK);
	if (write(far, half, sizeof(half)) != (ssize_t)sizeof(half))
		exit(1);
	rc = mc_rpcc_recv(r, &m, &err);
	TAP_OK(rc == 0 && m.has_bulk && m.bulk_len == BULK, "stall: the answer's head arrives");
	if (rc == 0)
		mc_msg_release(&m);
	t0 = mc_mono_ms();
	TAP_OK(mc_rpcc_read_bulk(r, buf, BULK, &err) < 0 && err.code == MC_ERR_TIMEOUT,
	       "stall: a bulk that stops half-way fails with timeout");
	ms = mc_mono_ms() - t0;
	TAP_OK(ms >= STALL_MS && ms < STALL_MS + 3 * TICK_MS,
	       "stall: after the stall timeout since its last byte (%llu ms)",
	       (unsigned long long)ms);
	mc_rpcc_close(r);
	close(far);
}

struct trickle {
	int fd;
	int chunks;
};

/*
 * The bulk a chunk at a time, two ticks apart: longer than one wait of
 * the connection, shorter than its stall timeout.
 */
static void *
trickle(void *arg)
{
	struct trickle *t = arg;
	static char chunk[BULK / 4];
	struct timespec gap = { 0, 2 * TICK_MS * 1000000L };

	for (int i = 0; i < t->chunks; i++) {
		nanosleep(&gap, NULL);
		if (write(t->fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			break;
	}
	return NULL;
}

static void
test_slow_transfer_is_no_stall(void)
{
	static char buf[BULK];
	struct trickle t = { .chunks = 4 };
	struct mc_err err = { 0 };
	struct mc_msg m;
	struct mc_rpcc *r;
	pthread_t th;
	uint64_t t0, ms;
	int rc;

	r = connect_pair(STALL_MS, &t.fd);
	ask(r);
	answer_head(t.fd, BULK);
	rc = mc_rpcc_recv(r, &m, &err);
	if (rc == 0)
		mc_msg_release(&m);
	t0 = mc_mono_ms();
	pthread_create(&th, NULL, trickle, &t);
	rc = mc_rpcc_read_bulk(r, buf, BULK, &err);
	ms = mc_mono_ms() - t0;
	pthread_join(th, NULL);
	TAP_OK(rc == 0, "stall: a bulk that keeps moving arrives whole: %s", err.msg);
	TAP_OK(ms >= STALL_MS, "stall: though it took longer than the stall timeout (%llu ms)",
	       (unsigned long long)ms);
	mc_rpcc_close(r);
	close(t.fd);
}

static void
test_unwatched_waits_one_timeout(void)
{
	struct mc_err err = { 0 };
	struct mc_msg m;
	struct mc_rpcc *r;
	int far;

	r = connect_pair(0, &far);
	ask(r);
	TAP_OK(mc_rpcc_recv(r, &m, &err) < 0 && err.code == MC_ERR_TIMEOUT &&
		       strstr(err.msg, "timed out after 50 ms") != NULL,
	       "unwatched: one wait of the connect timeout fails it: %s", err.msg);
	mc_rpcc_close(r);
	close(far);
}

int
main(void)
{
	/* a trickle to a connection that failed is an EPIPE, not a death */
	signal(SIGPIPE, SIG_IGN);
	listen_unix();
	test_silent_peer();
	test_bulk_stops_half_way();
	test_slow_transfer_is_no_stall();
	test_unwatched_waits_one_timeout();
	close(lfd);
	unlink(sock_path);
	return tap_done();
}
