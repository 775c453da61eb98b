/*
 * mc-softpin-check: protocol steps of the soft-pin suite and benchmark
 * that mc-cli and mc-rpc cannot take on their own (replica id arrays,
 * thousands of pinned writes, a cleanup cycle timed right after the
 * fake clock moves). A write is put_start, OBJ_SIZE zero bytes to each
 * replica's peer with its grant, then put_end: the master completes
 * only replicas whose peer confirmed the bytes.
 *
 *   mc-softpin-check [--tenant T] ADDR pin PREFIX FIRST COUNT KEY_LEN ACTION
 *                                   [STEP [DUE DUE_TTL_MS]]
 *       upsert COUNT keys PREFIX-i (mc-bench's names, padded with '.' to
 *       KEY_LEN; 0: no padding), i = FIRST, FIRST+STEP, ..., 4 KiB each,
 *       with ACTION: enable:TTL_MS or disable. With enable, the first DUE
 *       of them get DUE_TTL_MS instead. Prints "pinned=N".
 *   ... ADDR reenable KEY COUNT TTL_MS
 *       COUNT same-size upserts of KEY, each with enable and TTL_MS + i
 *       (so every one commits a new deadline). Prints "upserts=N".
 *   ... ADDR end KEY VERSION ID...       put_end of just those replicas
 *   ... ADDR revoke KEY VERSION ID...    put_revoke of just those replicas
 *   ... ADDR batch KEY...
 *       the batch read forms: batch_get_replica_list and batch_exist of
 *       the KEYs (absent keys are fine). Prints "items=N".
 *   ... ADDR expire CLOCK_FILE ADVANCE_MS
 *       51 idle softpin_expire calls (timed), then move the
 *       MC_FAKE_CLOCK file forward (0: leave it) and run softpin_expire at
 *       once (before the 100 ms sweep can), timed; cycle_ns is the
 *       master's own measure of the cycle. Prints "expired=N
 *       us=T idle_median_us=I".
 *   ... ADDR scan PREFIX ROUNDS
 *       time `list {prefix, limit 1}` ROUNDS times: the master walks every
 *       object of the store to collect the matches. Prints
 *       "min_us=A median_us=B".
 *   ... ADDR rtt ROUNDS
 *       the same for softpin_stats, a call that does no work: the round
 *       trip to subtract. Prints "min_us=A median_us=B".
 *
 * Exit status: 0 ok, 1 a call failed, 64 usage, 69 cannot connect.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mc/addr.h"
#include "mc/bulk.h"
#include "mc/dataplane.h"
#include "mc/err.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/wire.h"

#define PROG "mc-softpin-check"
#define KEY_CAP 256
#define OBJ_SIZE 4096
/* writes in flight on the connection at once (pipelined) */
#define PIPE_DEPTH 256
#define MAX_IDS 64
/* peers written to: a connection each, kept for the whole run */
#define MAX_PEERS 16

struct put_args {
	const char *key;
	bool disable; /* soft_pin disable instead of enable with ttl_ms */
	uint64_t ttl_ms;
};

struct end_args {
	const char *key;
	uint64_t version;
	const uint64_t *ids;
	int n_ids; /* -1: no replica_ids field */
};

struct list_args {
	const char *prefix;
};

/* Packs one request's params map. */
typedef void (*pack_fn)(msgpack_packer *pk, void *arg);

static int64_t
send_with(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg, struct mc_err *err)
{
	fn(mc_rpcc_begin(r, method), arg);
	return mc_rpcc_send(r, NULL, 0, err);
}

static int
call_with(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg, struct mc_msg *resp,
	  struct mc_err *err)
{
	fn(mc_rpcc_begin(r, method), arg);
	return mc_rpcc_call(r, resp, err);
}

static void
pack_hello(msgpack_packer *pk, void *arg)
{
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "tenant", arg);
}

static void
pack_put_start(msgpack_packer *pk, void *arg)
{
	const struct put_args *a = arg;

	msgpack_pack_map(pk, a->disable ? 6 : 7);
	mc_pack_kv_str(pk, "key", a->key);
	mc_pack_kv_u64(pk, "size", OBJ_SIZE);
	mc_pack_kv_u64(pk, "replicas", 1);
	mc_pack_kv_u64(pk, "checksum", 1);
	mc_pack_kv_bool(pk, "upsert", true);
	if (a->disable) {
		mc_pack_kv_str(pk, "soft_pin", "disable");
		return;
	}
	mc_pack_kv_str(pk, "soft_pin", "enable");
	mc_pack_kv_u64(pk, "soft_pin_ttl_ms", a->ttl_ms);
}

static void
pack_end(msgpack_packer *pk, void *arg)
{
	const struct end_args *a = arg;

	msgpack_pack_map(pk, a->n_ids >= 0 ? 3 : 2);
	mc_pack_kv_str(pk, "key", a->key);
	mc_pack_kv_u64(pk, "version", a->version);
	if (a->n_ids < 0)
		return;
	mc_pack_key(pk, "replica_ids");
	msgpack_pack_array(pk, (size_t)a->n_ids);
	for (int i = 0; i < a->n_ids; i++)
		msgpack_pack_uint64(pk, a->ids[i]);
}

static void
pack_empty(msgpack_packer *pk, void *arg)
{
	(void)arg;
	msgpack_pack_map(pk, 0);
}

static void
pack_list(msgpack_packer *pk, void *arg)
{
	const struct list_args *a = arg;

	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "prefix", a->prefix);
	mc_pack_kv_u64(pk, "limit", 1);
}

struct keys_args {
	char **keys;
	int n;
};

static void
pack_keys(msgpack_packer *pk, void *arg)
{
	const struct keys_args *a = arg;

	msgpack_pack_map(pk, 1);
	mc_pack_key(pk, "keys");
	msgpack_pack_array(pk, (size_t)a->n);
	for (int i = 0; i < a->n; i++)
		mc_pack_cstr(pk, a->keys[i]);
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* mc-bench's key names: PREFIX-i, padded with '.' to key_len. */
static void
make_key(char *buf, size_t cap, const char *prefix, uint64_t i, uint64_t key_len)
{
	int n = snprintf(buf, cap, "%s-%" PRIu64, prefix, i);
	size_t want = key_len < cap ? (size_t)key_len : cap - 1;

	if (n > 0 && (size_t)n < want) {
		memset(buf + n, '.', want - (size_t)n);
		buf[want] = '\0';
	}
}

static int
fail_call(const char *what, const char *key, const struct mc_err *err)
{
	fprintf(stderr, "%s: %s '%s': %s: %s\n", PROG, what, key ? key : "",
		mc_status_name(err->code), err->msg);
	return err->code == MC_ERR_UNAVAILABLE ? MC_EXIT_UNAVAILABLE : MC_EXIT_FAIL;
}

/* Receive one response; 0 with resp filled, else -1 with err. */
static int
recv_ok(struct mc_rpcc *r, struct mc_msg *resp, struct mc_err *err)
{
	if (mc_rpcc_recv(r, resp, err) < 0)
		return -1;
	if (mc_msg_error(resp, err) < 0) {
		mc_msg_release(resp);
		return -1;
	}
	return 0;
}

/* ---- the bytes of a write ---- */

static const char *tenant_name = "default"; /* --tenant, for the data plane */

static struct {
	char addr[MC_ADDR_MAX];
	struct mc_rpcc *r;
} peers[MAX_PEERS];
static int npeers;

/* The data-plane connection to addr, opened on first use; NULL with err. */
static struct mc_rpcc *
peer_conn(const char *addr, size_t len, struct mc_err *err)
{
	for (int i = 0; i < npeers; i++)
		if (strlen(peers[i].addr) == len && memcmp(peers[i].addr, addr, len) == 0)
			return peers[i].r;
	if (npeers == MAX_PEERS || len >= MC_ADDR_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "more than %d peers, or a bad address", MAX_PEERS);
		return NULL;
	}
	memcpy(peers[npeers].addr, addr, len);
	peers[npeers].addr[len] = '\0';
	peers[npeers].r = mc_rpcc_connect(peers[npeers].addr, 60000, err);
	return peers[npeers].r != NULL ? peers[npeers++].r : NULL;
}

/* A write queued on a peer connection, whose answer is still to read. */
struct sent_write {
	struct mc_rpcc *r;
};

/*
 * Queue OBJ_SIZE zero bytes of key at version to every replica of a
 * put_start answer, each with its grant; append the connections to
 * sent (cap entries, *n used). -1 with err.
 */
static int
write_replicas(const msgpack_object *answer, const char *key, uint64_t version,
	       struct sent_write *sent, size_t cap, size_t *n, struct mc_err *err)
{
	static const char zero[OBJ_SIZE];
	const msgpack_object_array *reps = mc_map_array(answer, "replicas");
	struct mc_bulk_src src = mc_bulk_src_mem(zero, OBJ_SIZE);

	for (uint32_t i = 0; reps != NULL && i < reps->size; i++) {
		const msgpack_object *rep = &reps->ptr[i];
		const char *addr, *tier, *grant;
		size_t alen, tlen, glen;
		struct mc_rpcc *r;

		if (mc_map_str(rep, "addr", &addr, &alen, err) != 1 ||
		    mc_map_str(rep, "tier", &tier, &tlen, err) != 1 ||
		    mc_map_str(rep, "grant", &grant, &glen, err) != 1)
			return mc_err_set(err, MC_ERR_PROTO,
					  "a replica without addr, tier or grant");
		if (*n == cap)
			return mc_err_set(err, MC_ERR_INVALID, "too many replicas");
		if ((r = peer_conn(addr, alen, err)) == NULL)
			return -1;
		char tier_name[16];
		snprintf(tier_name, sizeof(tier_name), "%.*s", (int)tlen, tier);
		struct mc_dp_obj o = { .tenant = tenant_name,
				       .key = key,
				       .klen = strlen(key),
				       .version = version,
				       .len = OBJ_SIZE,
				       .grant = grant,
				       .glen = glen };
		if (mc_dp_write_send(r, &o, tier_name, &src, err) < 0)
			return -1;
		sent[(*n)++].r = r;
	}
	return 0;
}

/* Flush every peer connection, then read the n answers of sent in order. */
static int
writes_done(struct sent_write *sent, size_t n, struct mc_err *err)
{
	struct mc_err refused;

	for (int i = 0; i < npeers; i++)
		if (mc_rpcc_flush(peers[i].r, err) < 0)
			return -1;
	for (size_t i = 0; i < n; i++) {
		if (mc_dp_write_recv(sent[i].r, &refused, err) < 0)
			return -1;
		if (refused.code != MC_OK) {
			*err = refused;
			return -1;
		}
	}
	return 0;
}

/*
 * Pipelined upserts: up to PIPE_DEPTH put_starts on the wire, then their
 * put_ends. Keys of one batch are distinct, so none is busy.
 */
static int
cmd_pin(struct mc_rpcc *r, char **argv, int argc)
{
	uint64_t first, count, key_len, ttl = 0, step = 1, due = 0, due_ttl = 0;
	uint64_t done = 0;
	static char keys[PIPE_DEPTH][KEY_CAP];
	static struct sent_write sent[PIPE_DEPTH * MC_REPLICAS_MAX];
	uint64_t versions[PIPE_DEPTH];
	size_t nsent;
	bool disable = strcmp(argc > 4 ? argv[4] : "", "disable") == 0;
	struct mc_err err;
	struct mc_msg resp;

	if ((argc != 5 && argc != 6 && argc != 8) || mc_parse_u64(argv[1], &first, NULL) < 0 ||
	    mc_parse_u64(argv[2], &count, NULL) < 0 || mc_parse_u64(argv[3], &key_len, NULL) < 0 ||
	    (!disable &&
	     (strncmp(argv[4], "enable:", 7) != 0 || mc_parse_u64(argv[4] + 7, &ttl, NULL) < 0)) ||
	    (argc >= 6 && (mc_parse_u64(argv[5], &step, NULL) < 0 || step == 0)) ||
	    (argc == 8 && (mc_parse_u64(argv[6], &due, NULL) < 0 ||
			   mc_parse_u64(argv[7], &due_ttl, NULL) < 0))) {
		fprintf(stderr,
			"%s: pin PREFIX FIRST COUNT KEY_LEN enable:TTL_MS|disable "
			"[STEP [DUE DUE_TTL_MS]]\n",
			PROG);
		return MC_EXIT_USAGE;
	}
	while (done < count) {
		size_t n = count - done < PIPE_DEPTH ? (size_t)(count - done) : PIPE_DEPTH;

		for (size_t k = 0; k < n; k++) {
			uint64_t idx = done + k;
			struct put_args a = { keys[k], disable, idx < due ? due_ttl : ttl };

			make_key(keys[k], KEY_CAP, argv[0], first + idx * step, key_len);
			if (send_with(r, "put_start", pack_put_start, &a, &err) < 0)
				return fail_call("put_start", keys[k], &err);
		}
		if (mc_rpcc_flush(r, &err) < 0)
			return fail_call("put_start", NULL, &err);
		nsent = 0;
		for (size_t k = 0; k < n; k++) {
			if (recv_ok(r, &resp, &err) < 0)
				return fail_call("put_start", keys[k], &err);
			versions[k] = 0;
			if (mc_map_u64(resp.body, "version", &versions[k], &err) != 1) {
				mc_msg_release(&resp);
				fprintf(stderr, "%s: put_start '%s': no version\n", PROG, keys[k]);
				return MC_EXIT_FAIL;
			}
			if (write_replicas(resp.body, keys[k], versions[k], sent,
					   sizeof(sent) / sizeof(sent[0]), &nsent, &err) < 0) {
				mc_msg_release(&resp);
				return fail_call("write", keys[k], &err);
			}
			mc_msg_release(&resp);
		}
		if (writes_done(sent, nsent, &err) < 0)
			return fail_call("write", NULL, &err);
		for (size_t k = 0; k < n; k++) {
			struct end_args a = { keys[k], versions[k], NULL, -1 };

			if (send_with(r, "put_end", pack_end, &a, &err) < 0)
				return fail_call("put_end", keys[k], &err);
		}
		if (mc_rpcc_flush(r, &err) < 0)
			return fail_call("put_end", NULL, &err);
		for (size_t k = 0; k < n; k++) {
			if (recv_ok(r, &resp, &err) < 0)
				return fail_call("put_end", keys[k], &err);
			mc_msg_release(&resp);
		}
		done += n;
	}
	printf("pinned=%" PRIu64 "\n", done);
	return MC_EXIT_OK;
}

static int
cmd_reenable(struct mc_rpcc *r, char **argv, int argc)
{
	uint64_t count, ttl, version = 0;
	struct mc_err err;
	struct mc_msg resp;

	if (argc != 3 || mc_parse_u64(argv[1], &count, NULL) < 0 ||
	    mc_parse_u64(argv[2], &ttl, NULL) < 0) {
		fprintf(stderr, "%s: reenable KEY COUNT TTL_MS\n", PROG);
		return MC_EXIT_USAGE;
	}
	for (uint64_t i = 0; i < count; i++) {
		struct put_args a = { argv[0], false, ttl + i };

		if (call_with(r, "put_start", pack_put_start, &a, &resp, &err) < 0)
			return fail_call("put_start", argv[0], &err);
		if (mc_map_u64(resp.body, "version", &version, &err) != 1) {
			mc_msg_release(&resp);
			fprintf(stderr, "%s: put_start '%s': no version\n", PROG, argv[0]);
			return MC_EXIT_FAIL;
		}
		struct sent_write sent[MC_REPLICAS_MAX];
		size_t nsent = 0;
		if (write_replicas(resp.body, argv[0], version, sent, MC_REPLICAS_MAX, &nsent,
				   &err) < 0 ||
		    writes_done(sent, nsent, &err) < 0) {
			mc_msg_release(&resp);
			return fail_call("write", argv[0], &err);
		}
		mc_msg_release(&resp);
		struct end_args e = { argv[0], version, NULL, -1 };
		if (call_with(r, "put_end", pack_end, &e, &resp, &err) < 0)
			return fail_call("put_end", argv[0], &err);
		mc_msg_release(&resp);
	}
	printf("upserts=%" PRIu64 "\n", count);
	return MC_EXIT_OK;
}

/* put_end or put_revoke of the listed replica ids only. */
static int
cmd_end(struct mc_rpcc *r, const char *method, char **argv, int argc)
{
	uint64_t ids[MAX_IDS];
	struct end_args a = { argv[0], 0, ids, 0 };
	struct mc_err err;
	struct mc_msg resp;

	if (argc < 3 || argc - 2 > MAX_IDS || mc_parse_u64(argv[1], &a.version, NULL) < 0) {
		fprintf(stderr, "%s: %s KEY VERSION ID...\n", PROG, method);
		return MC_EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		if (mc_parse_u64(argv[i], &ids[a.n_ids++], NULL) < 0) {
			fprintf(stderr, "%s: invalid replica id '%s'\n", PROG, argv[i]);
			return MC_EXIT_USAGE;
		}
	}
	if (call_with(r, method, pack_end, &a, &resp, &err) < 0)
		return fail_call(method, argv[0], &err);
	mc_msg_release(&resp);
	return MC_EXIT_OK;
}

static int
cmd_batch(struct mc_rpcc *r, char **argv, int argc)
{
	struct keys_args a = { argv, argc };
	const char *methods[] = { "batch_get_replica_list", "batch_exist" };
	struct mc_err err;
	struct mc_msg resp;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (call_with(r, methods[i], pack_keys, &a, &resp, &err) < 0)
			return fail_call(methods[i], NULL, &err);
		mc_msg_release(&resp);
	}
	printf("items=%d\n", argc);
	return MC_EXIT_OK;
}

/* Rewrite the fake clock file by a rename, as the bats helpers do. */
static int
advance_clock(const char *path, uint64_t ms)
{
	char buf[64], tmp[4096];
	ssize_t n;
	uint64_t now;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (mc_parse_u64(buf, &now, NULL) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%" PRIu64 "\n", now + ms);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

static int cmp_u64(const void *a, const void *b);

/*
 * Idle cycles first (nothing due yet): they warm the connection and the
 * master's caches, and give the cost of a cycle with nothing to do.
 */
#define IDLE_ROUNDS 51

static int
cmd_expire(struct mc_rpcc *r, char **argv, int argc)
{
	uint64_t adv, expired = 0, cycle_ns = 0, t0, t1, idle[IDLE_ROUNDS];
	struct mc_err err;
	struct mc_msg resp;

	if (argc != 2 || mc_parse_u64(argv[1], &adv, NULL) < 0) {
		fprintf(stderr, "%s: expire CLOCK_FILE ADVANCE_MS\n", PROG);
		return MC_EXIT_USAGE;
	}
	for (int i = 0; i < IDLE_ROUNDS; i++) {
		t0 = now_us();
		if (call_with(r, "softpin_expire", pack_empty, NULL, &resp, &err) < 0)
			return fail_call("softpin_expire", NULL, &err);
		idle[i] = now_us() - t0;
		mc_msg_release(&resp);
	}
	qsort(idle, IDLE_ROUNDS, sizeof(idle[0]), cmp_u64);
	if (adv > 0 && advance_clock(argv[0], adv) < 0) {
		fprintf(stderr, "%s: cannot advance clock '%s': %s\n", PROG, argv[0],
			mc_strerror(errno));
		return MC_EXIT_FAIL;
	}
	t0 = now_us();
	if (call_with(r, "softpin_expire", pack_empty, NULL, &resp, &err) < 0)
		return fail_call("softpin_expire", NULL, &err);
	t1 = now_us();
	(void)mc_map_u64(resp.body, "expired", &expired, &err);
	(void)mc_map_u64(resp.body, "cycle_ns", &cycle_ns, &err);
	mc_msg_release(&resp);
	printf("expired=%" PRIu64 " us=%" PRIu64 " idle_median_us=%" PRIu64 " cycle_ns=%" PRIu64
	       "\n",
	       expired, t1 - t0, idle[IDLE_ROUNDS / 2], cycle_ns);
	return MC_EXIT_OK;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Time rounds calls of method; print the fastest and the median. */
static int
time_calls(struct mc_rpcc *r, const char *method, pack_fn fn, void *arg, uint64_t rounds)
{
	struct mc_err err;
	struct mc_msg resp;
	uint64_t *t = calloc(rounds, sizeof(*t));

	if (t == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return MC_EXIT_SOFTWARE;
	}
	for (uint64_t i = 0; i < rounds; i++) {
		uint64_t t0 = now_us();

		if (call_with(r, method, fn, arg, &resp, &err) < 0) {
			free(t);
			return fail_call(method, NULL, &err);
		}
		t[i] = now_us() - t0;
		mc_msg_release(&resp);
	}
	qsort(t, rounds, sizeof(*t), cmp_u64);
	printf("min_us=%" PRIu64 " median_us=%" PRIu64 "\n", t[0], t[rounds / 2]);
	free(t);
	return MC_EXIT_OK;
}

static int
cmd_scan(struct mc_rpcc *r, char **argv, int argc)
{
	uint64_t rounds;
	struct list_args a;

	if (argc != 2 || mc_parse_u64(argv[1], &rounds, NULL) < 0 || rounds == 0 || rounds > 1000) {
		fprintf(stderr, "%s: scan PREFIX ROUNDS (1..1000)\n", PROG);
		return MC_EXIT_USAGE;
	}
	a.prefix = argv[0];
	return time_calls(r, "list", pack_list, &a, rounds);
}

/* The round trip of a call that does no work: softpin_stats. */
static int
cmd_rtt(struct mc_rpcc *r, char **argv, int argc)
{
	uint64_t rounds;

	if (argc != 1 || mc_parse_u64(argv[0], &rounds, NULL) < 0 || rounds == 0 ||
	    rounds > 100000) {
		fprintf(stderr, "%s: rtt ROUNDS (1..100000)\n", PROG);
		return MC_EXIT_USAGE;
	}
	return time_calls(r, "softpin_stats", pack_empty, NULL, rounds);
}

int
main(int argc, char **argv)
{
	const char *tenant = NULL, *cmd;
	struct mc_rpcc *r;
	struct mc_err err;
	struct mc_msg resp;
	int i = 1, rc;

	if (argc > 2 && strcmp(argv[1], "--tenant") == 0) {
		tenant = argv[2];
		tenant_name = tenant;
		i = 3;
	}
	if (argc - i < 2) {
		fprintf(stderr,
			"usage: %s [--tenant T] ADDR pin|reenable|end|revoke|batch|\n"
			"expire|scan|rtt "
			"ARGS...\n",
			PROG);
		return MC_EXIT_USAGE;
	}
	cmd = argv[i + 1];
	r = mc_rpcc_connect(argv[i], 60000, &err);
	if (r == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err.msg);
		return MC_EXIT_UNAVAILABLE;
	}
	if (tenant != NULL) {
		if (call_with(r, "hello", pack_hello, (void *)tenant, &resp, &err) < 0) {
			mc_rpcc_close(r);
			return fail_call("hello", tenant, &err);
		}
		mc_msg_release(&resp);
	}
	char **av = argv + i + 2;
	int ac = argc - i - 2;
	if (strcmp(cmd, "pin") == 0 && ac >= 1)
		rc = cmd_pin(r, av, ac);
	else if (strcmp(cmd, "reenable") == 0 && ac >= 1)
		rc = cmd_reenable(r, av, ac);
	else if ((strcmp(cmd, "end") == 0 || strcmp(cmd, "revoke") == 0) && ac >= 1)
		rc = cmd_end(r, strcmp(cmd, "end") == 0 ? "put_end" : "put_revoke", av, ac);
	else if (strcmp(cmd, "batch") == 0 && ac >= 1)
		rc = cmd_batch(r, av, ac);
	else if (strcmp(cmd, "expire") == 0 && ac >= 1)
		rc = cmd_expire(r, av, ac);
	else if (strcmp(cmd, "rtt") == 0 && ac >= 1)
		rc = cmd_rtt(r, av, ac);
	else if (strcmp(cmd, "scan") == 0 && ac >= 1)
		rc = cmd_scan(r, av, ac);
	else {
		fprintf(stderr, "%s: unknown command '%s' or missing arguments\n", PROG, cmd);
		rc = MC_EXIT_USAGE;
	}
	mc_rpcc_close(r);
	return rc;
}
