/*
 * Unit tests for the peer's data plane (cmd/mc-peer/dataplane.c) over a
 * tier kept in a file: a peer with a DRAM and an SSD medium serves a
 * real connection on its own thread (with --fault-inject, so requests
 * need no grant), and a client writes into the SSD tier through its
 * descriptor sink and reads back through its sendfile source, with and
 * without a checksum sent, corrupts a byte there, meets the SSD
 * medium's write fault, and stalls mid-bulk past --write-timeout.
 */
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/dataplane.h"
#include "mc/fault.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/rpcc.h"

#include "peer.h"
#include "tap.h"

#define SSD_BYTES (8u << 20)

static char dir[64] = "/tmp/test_peer_dataplane.XXXXXX";
static struct peer p;
static struct mc_registry *reg;
static struct mc_server *server;
static char addr[300];

static int
keep(void *arg, uint64_t off, const struct medium_meta *meta)
{
	(void)arg;
	(void)off;
	(void)meta;
	return 0;
}

static void *
serve(void *arg)
{
	(void)arg;
	event_base_loop(p.base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

static void
start(void)
{
	struct mc_conn_ops ops = { .ctx = &p };
	struct mc_addr a, bound;
	struct mc_err err;
	char path[128];

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "unix:%s/sock", dir);
	evthread_use_pthreads();
	if ((p.base = event_base_new()) == NULL)
		abort();
	p.media[MC_TIER_DRAM] =
		medium_open(MC_TIER_DRAM, &(struct medium_conf){ .size = 4u << 20 }, &err);
	p.media[MC_TIER_SSD] = medium_open(
		MC_TIER_SSD, &(struct medium_conf){ .size = SSD_BYTES, .path = dir }, &err);
	if (!p.media[MC_TIER_DRAM] || !p.media[MC_TIER_SSD] ||
	    medium_recover(p.media[MC_TIER_SSD], keep, NULL, &err) < 0 ||
	    pindex_init(&p.index, p.media, &err) != 0) {
		fprintf(stderr, "test_peer_dataplane: %s\n", err.msg);
		abort();
	}
	pool_init(&p.pool, &p.index);
	p.host = "test";
	p.ready_fd = -1;
	p.fault_inject = true;
	/* long enough for every span of a live writer, short enough to wait for */
	p.write_timeout_ms = 300;
	if ((reg = mc_registry_new(NULL, &err)) == NULL ||
	    mc_registry_add(reg, peer_data_methods, &err) != 0)
		abort();
	ops.methods = reg;
	if (mc_addr_parse(path, &a, &err) < 0 ||
	    (server = mc_server_new(p.base, &a, &ops, NULL, &bound, &err)) == NULL) {
		fprintf(stderr, "test_peer_dataplane: %s\n", err.msg);
		abort();
	}
	snprintf(addr, sizeof(addr), "%s", bound.text);
}

static void
fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 13 + seed + (i >> 10));
}

/* Write b as version 1 of key on tier, with its checksum or none; the refusal's code. */
static int
write_raw(struct mc_rpcc *r, const char *key, const char *tier, const void *b, size_t len,
	  bool with_checksum, struct mc_err *refused)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "write");
	struct mc_msg resp;
	struct mc_err err;

	msgpack_pack_map(pk, 4 + with_checksum);
	mc_pack_kv_str(pk, "key", key);
	mc_pack_kv_u64(pk, "version", 1);
	mc_pack_kv_u64(pk, "len", len);
	mc_pack_kv_str(pk, "tier", tier);
	if (with_checksum)
		mc_pack_kv_u64(pk, "checksum", mc_checksum(b, len));
	if (mc_rpcc_send(r, b, len, &err) < 0 || mc_rpcc_flush(r, &err) < 0 ||
	    mc_rpcc_recv(r, &resp, &err) < 0) {
		*refused = err;
		return -1;
	}
	refused->code = MC_OK;
	refused->msg[0] = '\0';
	mc_msg_error(&resp, refused);
	mc_msg_release(&resp);
	return refused->code;
}

/* Read key into got (len bytes); the checksum the peer answered with, in *sum. */
static int
read_raw(struct mc_rpcc *r, const char *key, void *got, size_t len, uint64_t *sum)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "read");
	struct mc_msg resp;
	struct mc_err err;
	int rc;

	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "key", key);
	if (mc_rpcc_call(r, &resp, &err) < 0)
		return -1;
	rc = resp.has_bulk && resp.bulk_len == len &&
			     mc_map_u64(resp.body, "checksum", sum, &err) == 1
		     ? 0
		     : -1;
	if (resp.has_bulk && mc_rpcc_read_bulk(r, got, resp.bulk_len, &err) < 0)
		rc = -1;
	mc_msg_release(&resp);
	return rc;
}

static int
corrupt(struct mc_rpcc *r, const char *key, uint64_t offset)
{
	msgpack_packer *pk = mc_rpcc_begin(r, "corrupt");
	struct mc_msg resp;
	struct mc_err err;

	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "key", key);
	mc_pack_kv_u64(pk, "offset", offset);
	if (mc_rpcc_call(r, &resp, &err) < 0)
		return -1;
	mc_msg_release(&resp);
	return 0;
}

/* Whether done(), polled every 10 ms, came true within ms. */
static bool
within(int ms, bool (*done)(void))
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	for (int waited = 0; waited < ms; waited += 10) {
		if (done())
			return true;
		nanosleep(&tick, NULL);
	}
	return done();
}

static uint64_t stall_base;

static bool
stall_held(void)
{
	return medium_used(p.media[MC_TIER_SSD]) > stall_base;
}

static bool
stall_freed(void)
{
	return medium_used(p.media[MC_TIER_SSD]) == stall_base && p.st.writes_abandoned == 1;
}

/* A writer that announces a megabyte for the ssd tier, sends 1000 bytes and stops. */
static void
test_stall(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char part[1000];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char c;
	int fd;

	stall_base = medium_used(p.media[MC_TIER_SSD]);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	mc_pack_request(&pk, 1, "write");
	msgpack_pack_map(&pk, 4);
	mc_pack_kv_str(&pk, "key", "stalled");
	mc_pack_kv_u64(&pk, "version", 1);
	mc_pack_kv_u64(&pk, "len", 1u << 20);
	mc_pack_kv_str(&pk, "tier", "ssd");
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, sb.data, sb.size) != (ssize_t)sb.size ||
	    write(fd, part, sizeof(part)) != (ssize_t)sizeof(part))
		abort();
	msgpack_sbuffer_destroy(&sb);
	TAP_OK(within(5000, stall_held), "stall: the write holds its space in the file");
	TAP_OK(within(10000, stall_freed),
	       "stall: past --write-timeout the writer is dropped and its space comes back");
	TAP_OK(read(fd, &c, 1) == 0, "stall: its connection is closed");
	close(fd);
}

int
main(void)
{
	size_t len = (1u << 20) + 4097;
	unsigned char *b = malloc(len), *got = malloc(len);
	struct medium *ssd;
	struct medium_io io;
	struct mc_err err, refused;
	struct mc_rpcc *r;
	pthread_t th;
	uint64_t sum = 0, used;

	mc_log_set_level(MC_LOG_ERROR);
	start();
	ssd = p.media[MC_TIER_SSD];
	if (pthread_create(&th, NULL, serve, NULL) != 0 ||
	    (r = mc_rpcc_connect(addr, 5000, &err)) == NULL)
		abort();
	fill(b, len, 1);

	TAP_OK(write_raw(r, "k1", "ssd", b, len, true, &refused) == 0,
	       "write: a copy lands in the ssd tier (%s)", refused.msg);
	medium_io(ssd, &io);
	TAP_OK(medium_used(ssd) > len && medium_used(p.media[MC_TIER_DRAM]) == 0 &&
		       io.writes == 1 && io.write_bytes == len,
	       "write: through the ssd medium's sink, none of it in dram");
	memset(got, 0, len);
	TAP_OK(read_raw(r, "k1", got, len, &sum) == 0 && memcmp(got, b, len) == 0 &&
		       sum == mc_checksum(b, len),
	       "read: the copy comes back from the file whole, with its checksum");
	medium_io(ssd, &io);
	TAP_OK(io.reads == 1 && io.read_bytes == len, "read: through the ssd medium's source");

	fill(b, len, 2);
	TAP_OK(write_raw(r, "k2", "ssd", b, len, false, &refused) == 0 &&
		       read_raw(r, "k2", got, len, &sum) == 0 && sum == mc_checksum(b, len),
	       "write: without a checksum, the bytes are hashed as they land in the file");

	TAP_OK(corrupt(r, "k2", 77) == 0 && read_raw(r, "k2", got, len, &sum) == 0 &&
		       got[77] == (b[77] ^ 0xff) && memcmp(got + 78, b + 78, len - 78) == 0 &&
		       sum == mc_checksum(b, len),
	       "corrupt: one byte of the copy in the file flips, its checksum stays");

	used = medium_used(ssd);
	setenv("MC_FAULT", "ssd.write:always", 1);
	mc_fault_reset();
	TAP_OK(write_raw(r, "k3", "ssd", b, 1000, true, &refused) == MC_ERR_SYSTEM &&
		       strstr(refused.msg, "ssd.write") != NULL,
	       "fault ssd.write: the write is refused (%s)", refused.msg);
	TAP_OK(medium_used(ssd) == used, "fault ssd.write: and its space is given back");
	unsetenv("MC_FAULT");
	mc_fault_reset();

	fill(b, len, 3);
	TAP_OK(write_raw(r, "k4", "dram", b, len, false, &refused) == 0 &&
		       read_raw(r, "k4", got, len, &sum) == 0 && memcmp(got, b, len) == 0 &&
		       sum == mc_checksum(b, len) && medium_used(ssd) == used,
	       "dram: a write and a read as before, nothing on ssd");

	test_stall();

	mc_rpcc_close(r);
	event_base_loopbreak(p.base);
	pthread_join(th, NULL);
	mc_server_free(server);
	mc_registry_free(reg);
	pindex_destroy(&p.index);
	for (int t = 0; t < MC_TIER_COUNT; t++)
		medium_close(p.media[t]);
	event_base_free(p.base);
	snprintf((char *)got, len, "%s/extents", dir);
	unlink((char *)got);
	snprintf((char *)got, len, "%s/sock", dir);
	unlink((char *)got);
	rmdir(dir);
	free(b);
	free(got);
	return tap_done();
}
