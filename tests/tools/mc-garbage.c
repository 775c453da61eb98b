/*
 * mc-garbage: hostile traffic for the robustness suites.
 *
 * Connects COUNT times to ADDR and sends one bad message per connection:
 * random bytes, msgpack-ish prefixes, lying counts (dd ff 00 00 00),
 * huge str32/bin32 headers, deep nesting, broken msgpack-rpc envelopes,
 * well-shaped requests whose fields all have the wrong type, truncated
 * requests and bulk lengths that are never backed by bytes. After each
 * message it half-closes and waits (bounded) for the server to close.
 * The same --seed always produces the same traffic.
 *
 * With --probe METHOD one well-behaved connection stays open for the
 * whole run and must still be answered at the end: garbage may close
 * only its own connection. --isolation checks that directly: a malformed
 * message on a fresh connection, and one after a good request, must each
 * make the server close that connection (without our half-close), while
 * the probe connection keeps working. --hold N opens N idle connections
 * at once (a flood past --max-conns or the fd limit), keeps them for
 * --hold-ms, then closes them. With --stall K each of them first sends
 * the first K bytes of a request, a header that never completes; with
 * --request METHOD each is answered one request first, then idles.
 * --until-closed holds them until the server closed every one (within
 * --max-ms) instead, and --from IP connects them from that local address
 * over TCP, so that they are another client's than the test's own.
 *
 * Exit status: 0 the server survived, 1 it did not (a connect failed
 * mid-run, a connection was left open, the probe went unanswered, or the
 * time budget ran out), 64 usage, 69 the first connect failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>
#include <xxhash.h>

#include "mc/addr.h"
#include "mc/err.h"

#define PROG "mc-garbage"
#define OUT_MAX (1u << 20)

struct opts {
	uint64_t seed;
	uint64_t count;
	int timeout_ms;
	uint64_t max_ms;
	const char *probe;
	bool isolation;
	bool dry_run;
	uint64_t hold;
	uint64_t hold_ms;
	uint64_t stall;
	const char *request;
	bool until_closed;
	const char *from;
	const char *addr;
};

struct stats {
	uint64_t sent;
	uint64_t closed;   /* the server closed after our half-close */
	uint64_t hung;	   /* still open when timeout_ms ran out */
	uint64_t send_err; /* the server closed before taking it all */
};

/* ---- deterministic randomness (splitmix64) ---- */

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Uniform-enough in [0, n), n > 0. */
static uint64_t
rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* ---- the outgoing message, built by hand so it can be wrong ---- */

static uint8_t out[OUT_MAX];
static size_t out_len;

static void
put_bytes(const void *p, size_t n)
{
	/* Garbage that overflows the buffer is simply cut: still garbage. */
	if (n > OUT_MAX - out_len)
		n = OUT_MAX - out_len;
	memcpy(out + out_len, p, n);
	out_len += n;
}

static void
put_u8(uint8_t b)
{
	put_bytes(&b, 1);
}

static void
put_be(uint64_t v, int nbytes)
{
	int i;

	for (i = nbytes - 1; i >= 0; i--)
		put_u8((uint8_t)(v >> (8 * i)));
}

static void
put_random(size_t n)
{
	while (n-- > 0)
		put_u8((uint8_t)rnd());
}

static void
mp_uint(uint64_t v)
{
	if (v < 128) {
		put_u8((uint8_t)v);
	} else if (v <= UINT8_MAX) {
		put_u8(0xcc);
		put_be(v, 1);
	} else if (v <= UINT16_MAX) {
		put_u8(0xcd);
		put_be(v, 2);
	} else if (v <= UINT32_MAX) {
		put_u8(0xce);
		put_be(v, 4);
	} else {
		put_u8(0xcf);
		put_be(v, 8);
	}
}

/* A negative integer, -1 .. -2^63. */
static void
mp_neg(int64_t v)
{
	if (v >= -32) {
		put_u8((uint8_t)(int8_t)v);
	} else {
		put_u8(0xd3);
		put_be((uint64_t)v, 8);
	}
}

static void
mp_str_header(uint64_t n)
{
	if (n < 32) {
		put_u8((uint8_t)(0xa0 | n));
	} else if (n <= UINT8_MAX) {
		put_u8(0xd9);
		put_be(n, 1);
	} else if (n <= UINT16_MAX) {
		put_u8(0xda);
		put_be(n, 2);
	} else {
		put_u8(0xdb);
		put_be(n, 4);
	}
}

static void
mp_str(const char *s)
{
	size_t n = strlen(s);

	mp_str_header(n);
	put_bytes(s, n);
}

static void
mp_array(uint64_t n)
{
	if (n < 16) {
		put_u8((uint8_t)(0x90 | n));
	} else if (n <= UINT16_MAX) {
		put_u8(0xdc);
		put_be(n, 2);
	} else {
		put_u8(0xdd);
		put_be(n, 4);
	}
}

static void
mp_map(uint64_t n)
{
	if (n < 16) {
		put_u8((uint8_t)(0x80 | n));
	} else if (n <= UINT16_MAX) {
		put_u8(0xde);
		put_be(n, 2);
	} else {
		put_u8(0xdf);
		put_be(n, 4);
	}
}

/* ---- the protocol's methods and the type each field expects ---- */

enum ftype { T_STR, T_UINT, T_BOOL, T_ARRAY };

struct field {
	const char *name;
	enum ftype type;
};

struct method {
	const char *name;
	struct field fields[8];
};

static const struct method methods[] = {
	{ "hello",
	  { { "tenant", T_STR }, { "token", T_STR }, { "host", T_STR }, { "domain", T_STR } } },
	{ "put_start",
	  { { "key", T_STR },
	    { "size", T_UINT },
	    { "replicas", T_UINT },
	    { "type", T_STR },
	    { "group", T_STR },
	    { "hard_pin", T_BOOL },
	    { "checksum", T_UINT },
	    { "upsert", T_BOOL } } },
	{ "put_end", { { "key", T_STR }, { "version", T_UINT }, { "replica_ids", T_ARRAY } } },
	{ "put_revoke", { { "key", T_STR }, { "version", T_UINT }, { "replica_ids", T_ARRAY } } },
	{ "get_replica_list", { { "key", T_STR } } },
	{ "batch_get_replica_list", { { "keys", T_ARRAY } } },
	{ "exist", { { "key", T_STR } } },
	{ "batch_exist", { { "keys", T_ARRAY } } },
	{ "remove", { { "key", T_STR }, { "force", T_BOOL } } },
	{ "batch_remove", { { "keys", T_ARRAY }, { "force", T_BOOL } } },
	{ "remove_prefix", { { "prefix", T_STR }, { "force", T_BOOL } } },
	{ "list", { { "prefix", T_STR }, { "limit", T_UINT }, { "after", T_STR } } },
	{ "stat", { { "key", T_STR } } },
	{ "stats", { { NULL, T_STR } } },
	{ "peers", { { NULL, T_STR } } },
	{ "peer_register",
	  { { "addr", T_STR },
	    { "host", T_STR },
	    { "domain", T_STR },
	    { "evict_mode", T_STR },
	    { "tiers", T_ARRAY } } },
	{ "peer_heartbeat", { { "peer_id", T_UINT }, { "tiers", T_ARRAY } } },
	{ "peer_unregister", { { "peer_id", T_UINT } } },
	{ "write_ack",
	  { { "peer_id", T_UINT },
	    { "tenant", T_STR },
	    { "key", T_STR },
	    { "version", T_UINT },
	    { "size", T_UINT } } },
	{ "write",
	  { { "tenant", T_STR },
	    { "key", T_STR },
	    { "version", T_UINT },
	    { "len", T_UINT },
	    { "checksum", T_UINT },
	    { "tier", T_STR },
	    { "grant", T_STR } } },
	{ "read",
	  { { "tenant", T_STR },
	    { "key", T_STR },
	    { "version", T_UINT },
	    { "size", T_UINT },
	    { "grant", T_STR } } },
	{ "drop", { { "tenant", T_STR }, { "key", T_STR }, { "version", T_UINT } } },
	{ "peer_stats", { { NULL, T_STR } } },
	{ "corrupt", { { "tenant", T_STR }, { "key", T_STR }, { "offset", T_UINT } } },
};

#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

/* A small value of any msgpack type (nesting bounded by depth). */
static void
mp_any(int depth)
{
	uint64_t n;

	switch (rnd_below(depth > 0 ? 11 : 9)) {
	case 0:
		put_u8(0xc0);
		break;
	case 1:
		put_u8(rnd_below(2) ? 0xc3 : 0xc2);
		break;
	case 2:
		mp_uint(rnd() >> rnd_below(64));
		break;
	case 3:
		mp_neg(-(int64_t)(rnd_below(INT64_MAX) + 1));
		break;
	case 4:
		put_u8(0xcb);
		put_random(8);
		break;
	case 5:
		n = rnd_below(40);
		mp_str_header(n);
		put_random(n);
		break;
	case 6:
		n = rnd_below(40);
		put_u8(0xc4);
		put_be(n, 1);
		put_random(n);
		break;
	case 7:
		/* fixext 1..16 */
		put_u8((uint8_t)(0xd4 + rnd_below(5)));
		put_u8((uint8_t)rnd());
		put_random(16);
		break;
	case 8:
		mp_str("garbage");
		break;
	case 9:
		n = rnd_below(4);
		mp_array(n);
		while (n-- > 0)
			mp_any(depth - 1);
		break;
	default:
		n = rnd_below(4);
		mp_map(n);
		while (n-- > 0) {
			mp_any(0);
			mp_any(depth - 1);
		}
		break;
	}
}

/* A value whose type is certainly not t (and never a usable one). */
static void
mp_wrong(enum ftype t)
{
	for (;;) {
		size_t mark = out_len;
		uint8_t b;

		mp_any(2);
		b = out[mark];
		bool is_uint = b <= 0x7f || (b >= 0xcc && b <= 0xcf);
		bool is_str = (b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb);
		bool is_bool = b == 0xc2 || b == 0xc3;
		bool is_array = (b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd;

		if ((t == T_UINT && !is_uint) || (t == T_STR && !is_str) ||
		    (t == T_BOOL && !is_bool) || (t == T_ARRAY && !is_array))
			return;
		out_len = mark;
		if (t == T_ARRAY && rnd_below(2)) {
			/* right container, wrong elements: keys of ints, tiers of strs */
			mp_array(3);
			mp_uint(rnd_below(1000));
			mp_str("x");
			put_u8(0xc0);
			return;
		}
	}
}

/* A right-typed value (only ever sent truncated or with an unbacked bulk). */
static void
mp_right(enum ftype t)
{
	switch (t) {
	case T_STR:
		mp_str("garbage-key");
		break;
	case T_UINT:
		mp_uint(1 + rnd_below(1000));
		break;
	case T_BOOL:
		put_u8(0xc2);
		break;
	case T_ARRAY:
		mp_array(1);
		mp_str("garbage-key");
		break;
	}
}

static size_t
nfields(const struct method *m)
{
	size_t n = 0;

	while (n < 8 && m->fields[n].name != NULL)
		n++;
	return n;
}

static void
request_head(const char *method)
{
	mp_array(4);
	put_u8(0);
	mp_uint(rnd_below(1u << 31));
	mp_str(method);
}

/* [0, id, method, {every field wrong-typed}] */
static void
gen_wrong_types(void)
{
	const struct method *m = &methods[rnd_below(N_METHODS)];
	size_t i, n = nfields(m);

	request_head(m->name);
	if (n == 0) {
		mp_map(1);
		mp_str("unexpected");
		mp_any(2);
		return;
	}
	mp_map(n);
	for (i = 0; i < n; i++) {
		mp_str(m->fields[i].name);
		mp_wrong(m->fields[i].type);
	}
}

/* A right-typed request cut short: the server must wait, then see EOF. */
static void
gen_truncated(void)
{
	const struct method *m = &methods[rnd_below(N_METHODS)];
	size_t i, n = nfields(m);

	request_head(m->name);
	mp_map(n);
	for (i = 0; i < n; i++) {
		mp_str(m->fields[i].name);
		mp_right(m->fields[i].type);
	}
	if (out_len > 1)
		out_len = 1 + rnd_below(out_len - 1);
}

/* A bulk announced by "len" and never (fully) sent. */
static void
gen_bulk_lie(void)
{
	static const char *const ms[] = { "write", "stats", "exist", "peer_stats", "hello" };
	uint64_t len;

	switch (rnd_below(3)) {
	case 0:
		len = UINT64_MAX - rnd_below(16);
		break;
	case 1:
		len = (uint64_t)1 << (40 + rnd_below(20));
		break;
	default:
		len = 100 + rnd_below(100000);
		break;
	}
	request_head(ms[rnd_below(sizeof(ms) / sizeof(ms[0]))]);
	mp_map(5);
	mp_str("tenant");
	mp_str("garbage");
	mp_str("key");
	mp_str("garbage-bulk");
	mp_str("version");
	mp_uint(1);
	mp_str("checksum");
	mp_uint(rnd());
	mp_str("len");
	mp_uint(len);
	/* fewer bytes than announced, always */
	put_random(rnd_below(len < 64 ? len : 64));
}

static void
gen_lying_count(void)
{
	static const uint8_t heads[][8] = {
		{ 5, 0xdd, 0xff, 0x00, 0x00, 0x00 },
		{ 5, 0xdf, 0xff, 0xff, 0xff, 0xff },
		{ 3, 0xdc, 0xff, 0xff },
		{ 3, 0xde, 0xff, 0xff },
		{ 5, 0xc6, 0x7f, 0xff, 0xff, 0xff },
		{ 5, 0xdb, 0xff, 0xff, 0xff, 0xff },
		{ 5, 0xdd, 0x00, 0x00, 0x00, 0x10 },
		{ 5, 0xc9, 0x7f, 0xff, 0xff, 0xff },
		{ 3, 0xda, 0xff, 0xff },
		{ 2, 0x9f, 0x9f },
	};
	const uint8_t *h = heads[rnd_below(sizeof(heads) / sizeof(heads[0]))];

	if (rnd_below(2)) {
		/* inside an otherwise proper request */
		request_head("stats");
	}
	put_bytes(h + 1, h[0]);
	put_random(rnd_below(17));
}

static void
gen_huge_str(void)
{
	uint8_t tag = rnd_below(2) ? 0xdb : 0xc6;

	switch (rnd_below(3)) {
	case 0:
		/* as the method name */
		mp_array(4);
		put_u8(0);
		mp_uint(1);
		break;
	case 1:
		/* as a field name */
		request_head("get_replica_list");
		mp_map(1);
		break;
	default:
		/* as a field value */
		request_head("exist");
		mp_map(1);
		mp_str("key");
		break;
	}
	put_u8(tag);
	put_be(0x7fffffffu - rnd_below(1u << 20), 4);
	put_random(rnd_below(256));
}

static void
gen_deep(void)
{
	uint64_t depth = 33 + rnd_below(rnd_below(8) ? 2000 : 200000);
	uint64_t i;

	if (rnd_below(2))
		request_head("stats");
	for (i = 0; i < depth && out_len < OUT_MAX - 4; i++) {
		if (i % 3 == 2) {
			mp_map(1);
			mp_str("k");
		} else {
			mp_array(1);
		}
	}
	put_u8(0xc0);
}

static void
gen_bad_envelope(void)
{
	switch (rnd_below(10)) {
	case 0: /* id of the wrong type, method not a string */
		mp_array(4);
		put_u8(0);
		mp_str("id");
		mp_uint(5);
		mp_map(0);
		break;
	case 1: /* unknown message type */
		mp_array(4);
		mp_uint(3 + rnd_below(200));
		mp_uint(1);
		mp_str("stats");
		mp_map(0);
		break;
	case 2: /* too short */
		mp_array(3);
		put_u8(0);
		mp_uint(1);
		mp_str("stats");
		break;
	case 3: /* a response sent to a server */
		mp_array(4);
		put_u8(1);
		mp_uint(1);
		put_u8(0xc0);
		mp_map(0);
		break;
	case 4: /* a notification with nonsense params */
		mp_array(3);
		put_u8(2);
		mp_str("drop");
		mp_map(1);
		mp_str("items");
		mp_any(2);
		break;
	case 5: /* params not a map */
		request_head("stats");
		mp_array(2);
		mp_uint(1);
		mp_uint(2);
		break;
	case 6: /* negative and oversized ids */
		mp_array(4);
		put_u8(0);
		if (rnd_below(2))
			mp_neg(-1);
		else
			mp_uint(UINT64_MAX);
		mp_str("stats");
		mp_map(0);
		break;
	case 7: /* a map instead of the array */
		mp_map(2);
		mp_str("method");
		mp_str("stats");
		mp_str("params");
		mp_map(0);
		break;
	case 8: /* the never-used byte inside a request */
		request_head("stats");
		mp_map(1);
		mp_str("x");
		put_u8(0xc1);
		break;
	default: /* an empty method name and a long unknown one */
		request_head(rnd_below(2) ? "" : "no_such_method_at_all_in_any_version");
		mp_map(0);
		break;
	}
}

static void
gen_prefix(void)
{
	static const uint8_t tags[] = { 0x94, 0x93, 0x9f, 0xdc, 0xdd, 0x8f, 0xde, 0xdf,
					0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb, 0xc7, 0xc8,
					0xc9, 0xd4, 0xd8, 0xcf, 0xd3, 0xbf };

	put_u8(tags[rnd_below(sizeof(tags))]);
	put_random(rnd_below(65));
}

/* Fill out[] with one bad message. */
static void
generate(void)
{
	out_len = 0;
	switch (rnd_below(10)) {
	case 0:
		put_random(1 + rnd_below(4096));
		break;
	case 1:
		gen_prefix();
		break;
	case 2:
		gen_lying_count();
		break;
	case 3:
		gen_huge_str();
		break;
	case 4:
		gen_deep();
		break;
	case 5:
	case 6:
		gen_wrong_types();
		break;
	case 7:
		gen_truncated();
		break;
	case 8:
		gen_bulk_lie();
		break;
	default:
		gen_bad_envelope();
		break;
	}
}

/* ---- sockets ---- */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int
dial(const struct mc_addr *a, int timeout_ms, struct mc_err *err)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int fd = mc_addr_connect(a, timeout_ms, err);

	if (fd < 0)
		return -1;
	/* a server that stops reading must not stall the whole run */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Send all of buf; -1 when the server closed or stopped reading. */
static int
send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Read and discard until EOF (1), or until timeout_ms pass (0).
 * A reset counts as closed.
 */
static int
wait_closed(int fd, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	char buf[65536];

	for (;;) {
		uint64_t now = now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int rc;

		if (now >= deadline)
			return 0;
		rc = poll(&p, 1, (int)(deadline - now));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return 0;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return 1;
	}
}

/*
 * Send [0, id, method, {}] and wait for one whole msgpack-rpc response
 * to it (an error response counts: the server is answering). 0 or -1.
 */
static int
probe(int fd, const char *method, uint32_t id, int timeout_ms)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacker up;
	msgpack_unpacked res;
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int rc = -1;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint8(&pk, 0);
	msgpack_pack_uint32(&pk, id);
	msgpack_pack_str(&pk, strlen(method));
	msgpack_pack_str_body(&pk, method, strlen(method));
	msgpack_pack_map(&pk, 0);
	if (send_all(fd, sb.data, sb.size) < 0) {
		msgpack_sbuffer_destroy(&sb);
		return -1;
	}
	msgpack_sbuffer_destroy(&sb);
	if (!msgpack_unpacker_init(&up, 4096))
		return -1;
	msgpack_unpacked_init(&res);
	for (;;) {
		uint64_t now = now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int ur;

		ur = msgpack_unpacker_next(&up, &res);
		if (ur == MSGPACK_UNPACK_SUCCESS) {
			const msgpack_object *o = &res.data;

			if (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 4 &&
			    o->via.array.ptr[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
			    o->via.array.ptr[0].via.u64 == 1 &&
			    o->via.array.ptr[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
			    o->via.array.ptr[1].via.u64 == id)
				rc = 0;
			break;
		}
		if (ur != MSGPACK_UNPACK_CONTINUE || now >= deadline)
			break;
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			break;
		if (!msgpack_unpacker_reserve_buffer(&up, 65536))
			break;
		n = recv(fd, msgpack_unpacker_buffer(&up), 65536, 0);
		if (n <= 0)
			break;
		msgpack_unpacker_buffer_consumed(&up, (size_t)n);
	}
	msgpack_unpacked_destroy(&res);
	msgpack_unpacker_destroy(&up);
	return rc;
}

/* ---- the two modes ---- */

static int
run_garbage(const struct opts *o, const struct mc_addr *a, struct stats *st)
{
	uint64_t start = now_ms(), i;
	struct mc_err err;

	for (i = 0; i < o->count; i++) {
		int fd;

		if (now_ms() - start > o->max_ms) {
			fprintf(stderr,
				"%s: time budget of %" PRIu64 " ms ran out after %" PRIu64
				" messages\n",
				PROG, o->max_ms, i);
			return -1;
		}
		generate();
		fd = dial(a, o->timeout_ms, &err);
		if (fd < 0) {
			fprintf(stderr, "%s: message %" PRIu64 ": %s\n", PROG, i, err.msg);
			return -1;
		}
		st->sent++;
		if (send_all(fd, out, out_len) < 0)
			st->send_err++;
		shutdown(fd, SHUT_WR);
		if (wait_closed(fd, o->timeout_ms))
			st->closed++;
		else
			st->hung++;
		close(fd);
	}
	return 0;
}

/* A malformed message on fd must make the server close fd by itself. */
static int
expect_closed(int fd, const void *msg, size_t len, const char *what, int timeout_ms)
{
	if (send_all(fd, msg, len) == 0 && !wait_closed(fd, timeout_ms)) {
		fprintf(stderr, "%s: the server kept the connection open after %s\n", PROG, what);
		return -1;
	}
	return 0;
}

static int
run_isolation(const struct opts *o, const struct mc_addr *a)
{
	static const uint8_t lying[] = { 0xdd, 0xff, 0x00, 0x00, 0x00 };
	static const uint8_t never_used[] = { 0xc1 };
	const char *method = o->probe != NULL ? o->probe : "stats";
	struct mc_err err;
	int fd, rc = 0;

	fd = dial(a, o->timeout_ms, &err);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", PROG, err.msg);
		return -1;
	}
	if (expect_closed(fd, lying, sizeof(lying), "'dd ff 00 00 00'", o->timeout_ms) < 0)
		rc = -1;
	close(fd);

	fd = dial(a, o->timeout_ms, &err);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", PROG, err.msg);
		return -1;
	}
	if (probe(fd, method, 7, o->timeout_ms) < 0) {
		fprintf(stderr, "%s: no answer to '%s' on a fresh connection\n", PROG, method);
		rc = -1;
	} else if (expect_closed(fd, never_used, sizeof(never_used),
				 "a 0xc1 byte following a good request", o->timeout_ms) < 0) {
		rc = -1;
	}
	close(fd);
	return rc;
}

/*
 * Generate without sending and print a digest of the traffic, so a test
 * can check that a seed always means the same bytes.
 */
static int
dry_run(const struct opts *o)
{
	uint64_t i, total = 0, digest = 0;

	rng_state = o->seed;
	for (i = 0; i < o->count; i++) {
		generate();
		total += out_len;
		digest = XXH3_64bits_withSeed(out, out_len, digest);
	}
	printf("%s: seed %" PRIu64 ": %" PRIu64 " messages, %" PRIu64 " bytes, digest %016" PRIx64
	       "\n",
	       PROG, o->seed, o->count, total, digest);
	return 0;
}

/* dial, from a given local IPv4 address. */
static int
dial_from(const struct mc_addr *a, const char *from, int timeout_ms, struct mc_err *err)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	struct sockaddr_in src = { .sin_family = AF_INET };
	int fd;

	if (a->ss.ss_family != AF_INET || inet_pton(AF_INET, from, &src.sin_addr) != 1) {
		mc_err_set(err, MC_ERR_INVALID, "--from needs an IPv4 address and a TCP server");
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
		mc_err_errno(err, "cannot connect from %s to %s", from, a->text);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The first n bytes of a well-formed request: a header still on its way. */
static int
send_stall(int fd, uint64_t n)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint8(&pk, 0);
	msgpack_pack_uint32(&pk, 1);
	msgpack_pack_str(&pk, 5);
	msgpack_pack_str_body(&pk, "stats", 5);
	msgpack_pack_map(&pk, 0);
	rc = send_all(fd, sb.data, n < sb.size - 1 ? (size_t)n : sb.size - 1);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/*
 * Wait until the server closed every connection in fds, at most max_ms;
 * returns how many it closed.
 */
static uint64_t
wait_all_closed(int *fds, uint64_t n, uint64_t max_ms)
{
	uint64_t deadline = now_ms() + max_ms, closed = 0, i;
	struct pollfd *p = calloc(n, sizeof(*p));
	char buf[4096];

	if (p == NULL)
		return 0;
	for (i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	while (closed < n) {
		uint64_t now = now_ms();

		if (now >= deadline)
			break;
		if (poll(p, (nfds_t)n, (int)(deadline - now)) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			ssize_t r;

			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			r = recv(p[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)))
				continue;
			p[i].fd = -1; /* poll skips it from now on */
			closed++;
		}
	}
	free(p);
	return closed;
}

/*
 * A connection flood: open up to o->hold idle connections (stopping at
 * the first that fails: the server's cap or our own fd limit), keep them
 * for hold_ms, then close them all. The server must survive it, keep
 * answering the connections it already had, and serve again afterwards.
 */
static int
run_hold(const struct opts *o, const struct mc_addr *a)
{
	uint64_t n = 0, open_ok = 0, answered = 0;
	struct mc_err err;
	int *fds = calloc(o->hold, sizeof(*fds));

	if (fds == NULL) {
		fprintf(stderr, "%s: out of memory for %" PRIu64 " connections\n", PROG, o->hold);
		return -1;
	}
	for (n = 0; n < o->hold; n++) {
		fds[n] = o->from != NULL ? dial_from(a, o->from, o->timeout_ms, &err)
					 : dial(a, o->timeout_ms, &err);
		if (fds[n] < 0)
			break;
		open_ok++;
		/* a connection the server refused fails here: it is closed already */
		if (o->stall > 0)
			(void)send_stall(fds[n], o->stall);
		else if (o->request != NULL && probe(fds[n], o->request, 1, o->timeout_ms) == 0)
			answered++;
	}
	if (o->from != NULL && open_ok == 0)
		fprintf(stderr, "%s: %s\n", PROG, err.msg);
	if (o->until_closed) {
		uint64_t closed = wait_all_closed(fds, open_ok, o->max_ms);

		for (n = 0; n < open_ok; n++)
			close(fds[n]);
		free(fds);
		if (o->request != NULL)
			printf("%s: %s: %" PRIu64 " of %" PRIu64 " connections answered '%s'\n",
			       PROG, o->addr, answered, open_ok, o->request);
		printf("%s: %s: %" PRIu64 " of %" PRIu64 " connections closed by the server\n",
		       PROG, o->addr, closed, open_ok);
		return closed == open_ok && open_ok == o->hold ? 0 : -1;
	}
	if (o->hold_ms > 0) {
		struct timespec ts = { (time_t)(o->hold_ms / 1000),
				       (long)(o->hold_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	for (n = 0; n < open_ok; n++)
		close(fds[n]);
	free(fds);
	printf("%s: %s: held %" PRIu64 " of %" PRIu64 " connections for %" PRIu64 " ms\n", PROG,
	       o->addr, open_ok, o->hold, o->hold_ms);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--seed N] [--count N] [--timeout-ms N] [--max-ms N]\n"
		"                  [--probe METHOD] [--isolation]\n"
		"                  [--hold N [--hold-ms MS] [--stall K | --request METHOD]\n"
		"                   [--until-closed] [--from IP]] ADDR\n"
		"       %s --dry-run [--seed N] [--count N]\n",
		PROG, PROG);
}

static int
parse_u64(const char *flag, const char *v, uint64_t *out)
{
	char *end;

	errno = 0;
	if (v == NULL || *v == '\0' || *v == '-')
		goto bad;
	*out = strtoull(v, &end, 10);
	if (errno != 0 || *end != '\0')
		goto bad;
	return 0;
bad:
	fprintf(stderr, "%s: invalid %s '%s': not a number\n", PROG, flag, v ? v : "");
	return -1;
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t t;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "--hold") == 0) {
			if (parse_u64(a, v, &o->hold) < 0)
				return -1;
			if (o->hold > 100000) {
				fprintf(stderr, "%s: invalid --hold '%s': more than 100000\n", PROG,
					v);
				return -1;
			}
			i++;
		} else if (strcmp(a, "--hold-ms") == 0) {
			if (parse_u64(a, v, &o->hold_ms) < 0)
				return -1;
			i++;
		} else if (strcmp(a, "--stall") == 0) {
			if (parse_u64(a, v, &o->stall) < 0)
				return -1;
			i++;
		} else if (strcmp(a, "--request") == 0 || strcmp(a, "--from") == 0) {
			if (v == NULL) {
				fprintf(stderr, "%s: %s needs a value\n", PROG, a);
				return -1;
			}
			*(strcmp(a, "--from") == 0 ? &o->from : &o->request) = v;
			i++;
		} else if (strcmp(a, "--until-closed") == 0) {
			o->until_closed = true;
		} else if (strcmp(a, "--dry-run") == 0) {
			o->dry_run = true;
		} else if (strcmp(a, "--isolation") == 0) {
			o->isolation = true;
		} else if (strcmp(a, "--seed") == 0) {
			if (parse_u64(a, v, &o->seed) < 0)
				return -1;
			i++;
		} else if (strcmp(a, "--count") == 0) {
			if (parse_u64(a, v, &o->count) < 0)
				return -1;
			i++;
		} else if (strcmp(a, "--max-ms") == 0) {
			if (parse_u64(a, v, &o->max_ms) < 0)
				return -1;
			i++;
		} else if (strcmp(a, "--timeout-ms") == 0) {
			if (parse_u64(a, v, &t) < 0)
				return -1;
			if (t == 0 || t > 600000) {
				fprintf(stderr, "%s: invalid --timeout-ms '%s': not in 1..600000\n",
					PROG, v);
				return -1;
			}
			o->timeout_ms = (int)t;
			i++;
		} else if (strcmp(a, "--probe") == 0) {
			if (v == NULL) {
				fprintf(stderr, "%s: --probe needs a METHOD\n", PROG);
				return -1;
			}
			o->probe = v;
			i++;
		} else if (a[0] == '-' && a[1] == '-') {
			fprintf(stderr, "%s: unknown option '%s'\n", PROG, a);
			return -1;
		} else if (o->addr == NULL) {
			o->addr = a;
		} else {
			fprintf(stderr, "%s: unexpected argument '%s'\n", PROG, a);
			return -1;
		}
	}
	if (o->addr == NULL && !o->dry_run) {
		usage(stderr);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o = { .seed = 1, .count = 1000, .timeout_ms = 2000, .max_ms = 60000 };
	struct stats st = { 0 };
	struct mc_addr a;
	struct mc_err err;
	int keeper = -1, rc = 0;

	if (parse_args(argc, argv, &o) < 0)
		return MC_EXIT_USAGE;
	if (o.dry_run)
		return dry_run(&o);
	if (mc_addr_parse(o.addr, &a, &err) < 0) {
		fprintf(stderr, "%s: %s\n", PROG, err.msg);
		return MC_EXIT_USAGE;
	}
	rng_state = o.seed;

	/* The well-behaved connection that must outlive all the garbage. */
	if (o.probe != NULL) {
		keeper = dial(&a, o.timeout_ms, &err);
		if (keeper < 0) {
			fprintf(stderr, "%s: %s\n", PROG, err.msg);
			return MC_EXIT_UNAVAILABLE;
		}
		if (probe(keeper, o.probe, 1, o.timeout_ms) < 0) {
			fprintf(stderr, "%s: no answer to '%s' from %s before any garbage\n", PROG,
				o.probe, o.addr);
			close(keeper);
			return MC_EXIT_UNAVAILABLE;
		}
	}

	if (o.hold > 0) {
		if (run_hold(&o, &a) < 0)
			rc = 1;
	} else if (o.isolation) {
		if (run_isolation(&o, &a) < 0)
			rc = 1;
	} else {
		if (run_garbage(&o, &a, &st) < 0)
			rc = 1;
		printf("%s: %s: %" PRIu64 " messages, %" PRIu64 " closed by the server, %" PRIu64
		       " left open, %" PRIu64 " cut short\n",
		       PROG, o.addr, st.sent, st.closed, st.hung, st.send_err);
		if (st.hung > 0) {
			fprintf(stderr, "%s: %" PRIu64 " connections still open %d ms after EOF\n",
				PROG, st.hung, o.timeout_ms);
			rc = 1;
		}
	}

	if (keeper >= 0) {
		if (probe(keeper, o.probe, 2, o.timeout_ms) < 0) {
			fprintf(stderr, "%s: the probe connection to %s went unanswered\n", PROG,
				o.addr);
			rc = 1;
		} else {
			printf("%s: probe '%s' still answered\n", PROG, o.probe);
		}
		close(keeper);
	}
	return rc;
}
