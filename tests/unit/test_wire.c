/*
 * The wire pre-pass and the msgpack-rpc codec: truncation, lying
 * lengths, depth, random bytes, message shapes and the map helpers.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mc/wire.h"
#include "tap.h"

#define MIB (1u << 20)

static int
check(const void *buf, size_t len, size_t max, size_t *ml)
{
	const char *why = NULL;
	size_t dummy;

	return mc_wire_check(buf, len, max, ml ? ml : &dummy, &why);
}

/* A realistic request: put_start with every kind of field. */
static void
pack_sample(msgpack_sbuffer *sb)
{
	msgpack_packer pk;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	mc_pack_request(&pk, 42, "put_start");
	msgpack_pack_map(&pk, 9);
	mc_pack_kv_str(&pk, "key", "layer0/block17");
	mc_pack_kv_u64(&pk, "size", 1u << 20);
	mc_pack_kv_i64(&pk, "delta", -12345);
	mc_pack_kv_bool(&pk, "hard_pin", true);
	mc_pack_kv_double(&pk, "ratio", 0.25);
	mc_pack_kv_strn(&pk, "bytes", "a\0b", 3);
	mc_pack_kv_u64(&pk, "checksum", UINT64_MAX);
	mc_pack_key(&pk, "ids");
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_uint16(&pk, 300);
	msgpack_pack_uint32(&pk, 70000);
	mc_pack_key(&pk, "nothing");
	msgpack_pack_nil(&pk);
}

static void
test_truncation(void)
{
	msgpack_sbuffer sb;
	size_t i, ml = 0;
	int all_more = 1;
	char *longer;

	pack_sample(&sb);
	for (i = 0; i < sb.size; i++)
		if (check(sb.data, i, MIB, NULL) != MC_WIRE_MORE)
			all_more = 0;
	TAP_OK(all_more, "check: every truncated prefix of a request is MORE");
	TAP_OK(check(sb.data, sb.size, MIB, &ml) == MC_WIRE_WHOLE && ml == sb.size,
	       "check: the whole request is WHOLE with its exact length");
	TAP_OK(check(sb.data, sb.size, sb.size, &ml) == MC_WIRE_WHOLE,
	       "check: a message of exactly max_size bytes is accepted");
	TAP_OK(check(sb.data, sb.size, sb.size - 1, NULL) == MC_WIRE_BAD,
	       "check: a message one byte over max_size is BAD");

	longer = malloc(sb.size + 10);
	if (longer != NULL) {
		memcpy(longer, sb.data, sb.size);
		memset(longer + sb.size, 0xc1, 10);
		TAP_OK(check(longer, sb.size + 10, MIB, &ml) == MC_WIRE_WHOLE && ml == sb.size,
		       "check: bytes after the message (bulk) are not part "
		       "of it");
		free(longer);
	}
	TAP_OK(check("", 0, MIB, NULL) == MC_WIRE_MORE, "check: an empty buffer is MORE");
	msgpack_sbuffer_destroy(&sb);
}

static void
test_lying_counts(void)
{
	static const unsigned char arr32[] = { 0xdd, 0xff, 0x00, 0x00, 0x00 };
	static const unsigned char str32[] = { 0xdb, 0xff, 0xff, 0xff, 0xff };
	static const unsigned char map32[] = { 0xdf, 0xff, 0xff, 0xff, 0xff };
	static const unsigned char bin32[] = { 0xc6, 0xff, 0xff, 0xff, 0xff };
	static const unsigned char ext32[] = { 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const unsigned char str8[] = { 0xd9, 0xc8, 'a', 'b' };
	/* array of 3 whose first element is a 100-byte str, max 64 */
	static const unsigned char nested[] = { 0x93, 0xd9, 0x64, 'x' };
	size_t maxes[] = { 16, 4096, MIB, 16 * MIB, 1u << 30 };
	struct mc_msg m;
	struct mc_err err;
	size_t i;
	int ok = 1;

	for (i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++)
		if (check(arr32, sizeof(arr32), maxes[i], NULL) != MC_WIRE_BAD)
			ok = 0;
	TAP_OK(ok, "check: 'dd ff 00 00 00' (array32 of 4278190080) is BAD, "
		   "never MORE, for any sane max_size");
	{
		struct mallinfo2 before = mallinfo2(), after;
		int v1 = check(arr32, sizeof(arr32), 1u << 30, NULL);
		int v2 = check(map32, sizeof(map32), 1u << 30, NULL);

		after = mallinfo2();
		TAP_OK(v1 == MC_WIRE_BAD && v2 == MC_WIRE_BAD &&
			       after.uordblks == before.uordblks && after.hblkhd == before.hblkhd,
		       "check: lying counts are judged without allocating");
	}
	TAP_OK(check(str32, sizeof(str32), 16 * MIB, NULL) == MC_WIRE_BAD,
	       "check: str32 declaring 4 GiB is BAD at once");
	TAP_OK(check(map32, sizeof(map32), 16 * MIB, NULL) == MC_WIRE_BAD,
	       "check: map32 with a huge count is BAD at once");
	TAP_OK(check(bin32, sizeof(bin32), 16 * MIB, NULL) == MC_WIRE_BAD,
	       "check: bin32 declaring 4 GiB is BAD at once");
	TAP_OK(check(ext32, sizeof(ext32), 16 * MIB, NULL) == MC_WIRE_BAD,
	       "check: ext32 declaring 4 GiB is BAD at once");
	TAP_OK(check(str8, sizeof(str8), 64, NULL) == MC_WIRE_BAD,
	       "check: a str8 of 200 bytes under a 64-byte limit is BAD");
	TAP_OK(check(str8, sizeof(str8), 4096, NULL) == MC_WIRE_MORE,
	       "check: the same str8 under a 4 KiB limit is MORE");
	TAP_OK(check(nested, sizeof(nested), 64, NULL) == MC_WIRE_BAD,
	       "check: a nested str that cannot fit with its siblings is BAD");
	TAP_OK(check(arr32, 3, 16 * MIB, NULL) == MC_WIRE_MORE,
	       "check: a partial array32 header is MORE");
	TAP_OK(mc_msg_decode(&m, arr32, sizeof(arr32), &err) == -1 && err.code == MC_ERR_PROTO,
	       "decode: the lying array32 is refused as proto");
	mc_msg_release(&m);
}

static void
test_depth(void)
{
	unsigned char buf[MC_WIRE_MAX_DEPTH + 4];
	msgpack_unpacked u;
	size_t ml = 0, off = 0;

	memset(buf, 0x91, sizeof(buf));
	buf[MC_WIRE_MAX_DEPTH] = 0xc0;
	TAP_OK(check(buf, MC_WIRE_MAX_DEPTH + 1, MIB, &ml) == MC_WIRE_WHOLE &&
		       ml == MC_WIRE_MAX_DEPTH + 1,
	       "check: 32 nested arrays are accepted");
	msgpack_unpacked_init(&u);
	TAP_OK(msgpack_unpack_next(&u, (const char *)buf, ml, &off) == MSGPACK_UNPACK_SUCCESS,
	       "check: msgpack-c unpacks what the depth cap lets through");
	msgpack_unpacked_destroy(&u);
	memset(buf, 0x91, sizeof(buf));
	buf[MC_WIRE_MAX_DEPTH + 1] = 0xc0;
	TAP_OK(check(buf, MC_WIRE_MAX_DEPTH + 2, MIB, NULL) == MC_WIRE_BAD,
	       "check: 33 nested arrays are BAD");
	memset(buf, 0x91, sizeof(buf));
	buf[MC_WIRE_MAX_DEPTH] = 0x90;
	TAP_OK(check(buf, MC_WIRE_MAX_DEPTH + 1, MIB, NULL) == MC_WIRE_BAD,
	       "check: an empty array at depth 33 is BAD");
	memset(buf, 0x81, sizeof(buf));
	TAP_OK(check(buf, 10, MIB, NULL) == MC_WIRE_MORE,
	       "check: nested maps still arriving are MORE");
	memset(buf, 0x91, sizeof(buf));
	TAP_OK(check(buf, sizeof(buf), MIB, NULL) == MC_WIRE_BAD,
	       "check: deep nesting is BAD before the rest arrives");
}

/* A request whose params nest `depth` containers deep in total. */
static size_t
deep_request(unsigned char *b, int depth)
{
	size_t n = 0;
	int i;

	b[n++] = 0x94; /* [0, 1, "m", {"x": [[...]]}] */
	b[n++] = 0x00;
	b[n++] = 0x01;
	b[n++] = 0xa1;
	b[n++] = 'm';
	b[n++] = 0x81;
	b[n++] = 0xa1;
	b[n++] = 'x';
	for (i = 2; i < depth; i++)
		b[n++] = 0x91;
	b[n++] = 0xc0;
	return n;
}

static void
test_decode_depth(void)
{
	unsigned char b[64];
	struct mc_msg m;
	struct mc_err err;
	size_t n;

	n = deep_request(b, MC_WIRE_MAX_DEPTH);
	TAP_OK(mc_msg_decode(&m, b, n, &err) == 0 && m.body != NULL,
	       "decode: a request nested exactly 32 deep decodes");
	mc_msg_release(&m);
	n = deep_request(b, MC_WIRE_MAX_DEPTH + 1);
	TAP_OK(mc_msg_decode(&m, b, n, &err) == -1 && err.code == MC_ERR_PROTO,
	       "decode: a request nested 33 deep is refused");
}

static void
test_invalid_byte(void)
{
	static const unsigned char c1[] = { 0xc1 };
	static const unsigned char inner[] = { 0x92, 0x01, 0xc1 };
	const char *why = NULL;
	size_t ml;

	TAP_OK(mc_wire_check(c1, 1, MIB, &ml, &why) == MC_WIRE_BAD && why != NULL,
	       "check: 0xc1 is BAD with a reason");
	TAP_OK(check(inner, sizeof(inner), MIB, NULL) == MC_WIRE_BAD,
	       "check: 0xc1 inside an array is BAD");
}

static void
test_all_types(void)
{
	/*
	 * [nil,false,true,5,-3,u8,u16,u32,u64,i8,i16,i32,i64,f32,f64,
	 *  fixstr,str8,bin8,fixext1,fixext16,ext8,{}] as hand-made bytes
	 */
	static const unsigned char b[] = {
		0xdc, 0x00, 0x16, 0xc0, 0xc2, 0xc3, 0x05, 0xfd, 0xcc, 0xff, 0xcd, 0x01, 0x00, 0xce,
		0,    0,    1,	  0,	0xcf, 0,    0,	  0,	0,    0,    0,	  1,	0,    0xd0,
		0x80, 0xd1, 0x80, 0x00, 0xd2, 0x80, 0,	  0,	0,    0xd3, 0x80, 0,	0,    0,
		0,    0,    0,	  0,	0xca, 0x3f, 0x80, 0,	0,    0xcb, 0x3f, 0xf0, 0,    0,
		0,    0,    0,	  0,	0xa2, 'h',  'i',  0xd9, 0x01, 'x',  0xc4, 0x02, 0x00, 0x01,
		0xd4, 0x01, 0x02, 0xd8, 0x01, 0,    0,	  0,	0,    0,    0,	  0,	0,    0,
		0,    0,    0,	  0,	0,    0,    0,	  0xc7, 0x02, 0x05, 0xaa, 0xbb, 0x80
	};
	msgpack_unpacked u;
	size_t ml = 0, off = 0;
	size_t i;
	int ok = 1;

	TAP_OK(check(b, sizeof(b), MIB, &ml) == MC_WIRE_WHOLE && ml == sizeof(b),
	       "check: every msgpack type is walked to its exact end");
	for (i = 0; i < sizeof(b); i++)
		if (check(b, i, MIB, NULL) != MC_WIRE_MORE)
			ok = 0;
	TAP_OK(ok, "check: every prefix of the all-types array is MORE");
	msgpack_unpacked_init(&u);
	TAP_OK(msgpack_unpack_next(&u, (const char *)b, sizeof(b), &off) ==
			       MSGPACK_UNPACK_SUCCESS &&
		       off == sizeof(b),
	       "check: agrees with msgpack-c on the all-types array");
	msgpack_unpacked_destroy(&u);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t
rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717u) >> 32);
}

static void
test_fuzz(void)
{
	unsigned char buf[96];
	msgpack_sbuffer sb;
	size_t ml, len, i;
	int overrun = 0, disagree = 0, n, v;

	for (n = 0; n < 100000; n++) {
		len = rng() % sizeof(buf);
		for (i = 0; i < len; i++) {
			uint32_t r = rng();

			/* bias toward headers so containers get deep */
			buf[i] = (r & 0x300) == 0 ? (unsigned char)(0x90 | (r & 3))
						  : (unsigned char)r;
		}
		ml = SIZE_MAX;
		v = mc_wire_check(buf, len, 1 + rng() % 256, &ml, NULL);
		if (v == MC_WIRE_WHOLE) {
			struct mc_msg m;
			msgpack_unpacked u;
			size_t off = 0;

			if (ml > len || ml == 0)
				overrun++;
			msgpack_unpacked_init(&u);
			if (msgpack_unpack_next(&u, (const char *)buf, ml, &off) !=
				    MSGPACK_UNPACK_SUCCESS ||
			    off != ml)
				disagree++;
			msgpack_unpacked_destroy(&u);
			if (mc_msg_decode(&m, buf, ml, NULL) == 0)
				mc_msg_release(&m);
		}
	}
	TAP_OK(overrun == 0, "fuzz: 100k random inputs never report a length beyond the input");
	TAP_OK(disagree == 0, "fuzz: whatever check accepts, msgpack-c unpacks to the same end");

	pack_sample(&sb);
	overrun = 0;
	for (n = 0; n < 20000; n++) {
		unsigned char *c = malloc(sb.size);

		if (c == NULL)
			break;
		memcpy(c, sb.data, sb.size);
		c[rng() % sb.size] = (unsigned char)rng();
		len = rng() % (sb.size + 1);
		v = mc_wire_check(c, len, MIB, &ml, NULL);
		if (v == MC_WIRE_WHOLE && ml > len)
			overrun++;
		if (v == MC_WIRE_WHOLE) {
			struct mc_msg m;

			if (mc_msg_decode(&m, c, ml, NULL) == 0)
				mc_msg_release(&m);
		}
		free(c);
	}
	TAP_OK(overrun == 0, "fuzz: mutated requests never overrun");
	msgpack_sbuffer_destroy(&sb);
}

/* Pack one message with pk prepared by the caller's callback. */
typedef void (*packfn)(msgpack_packer *pk);

static int
decode_packed(packfn fn, struct mc_msg *m, struct mc_err *err)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	fn(&pk);
	rc = mc_msg_decode(m, sb.data, sb.size, err);
	/* The buffer goes now: the message must not point into it. */
	memset(sb.data, 0xc1, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

static void
p_short_request(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_uint8(pk, 1);
	mc_pack_cstr(pk, "get");
}

static void
p_big_id(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_uint64(pk, (uint64_t)UINT32_MAX + 1);
	mc_pack_cstr(pk, "get");
	msgpack_pack_nil(pk);
}

static void
p_max_id(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_uint32(pk, UINT32_MAX);
	mc_pack_cstr(pk, "get");
	msgpack_pack_nil(pk);
}

static void
p_int_method(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_uint8(pk, 1);
	msgpack_pack_uint8(pk, 7);
	msgpack_pack_nil(pk);
}

static void
p_array_params(msgpack_packer *pk)
{
	mc_pack_request(pk, 1, "get");
	msgpack_pack_array(pk, 1);
	msgpack_pack_uint8(pk, 1);
}

static void
p_bad_type(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint8(pk, 3);
	mc_pack_cstr(pk, "x");
	msgpack_pack_nil(pk);
}

static void
p_not_array(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 0);
}

static void
p_notify_arity(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 2);
	mc_pack_cstr(pk, "event");
	msgpack_pack_nil(pk);
	msgpack_pack_nil(pk);
}

static void
p_resp_str_error(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 1);
	msgpack_pack_uint8(pk, 1);
	mc_pack_cstr(pk, "oops");
	msgpack_pack_nil(pk);
}

static void
p_neg_id(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_int8(pk, -1);
	mc_pack_cstr(pk, "get");
	msgpack_pack_nil(pk);
}

static void
p_bulk_request(msgpack_packer *pk)
{
	mc_pack_request(pk, 9, "write");
	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "key", "k");
	mc_pack_kv_u64(pk, "len", 1048576);
}

static void
p_bulk_response(msgpack_packer *pk)
{
	mc_pack_response_ok(pk, 9);
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "len", 0);
}

static void
p_bad_len(msgpack_packer *pk)
{
	mc_pack_request(pk, 9, "write");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_i64(pk, "len", -5);
}

static void
p_no_bulk(msgpack_packer *pk)
{
	mc_pack_request(pk, 9, "read");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "key", "k");
}

static void
p_notify(msgpack_packer *pk)
{
	mc_pack_notify(pk, "heartbeat");
	msgpack_pack_nil(pk);
}

static void
p_error(msgpack_packer *pk)
{
	mc_pack_response_err(pk, 77, MC_ERR_NOT_FOUND, "no key 'abc'");
}

static void
test_shapes(void)
{
	struct mc_msg m;
	struct mc_err err;

	TAP_OK(decode_packed(p_short_request, &m, &err) == -1 && err.code == MC_ERR_PROTO,
	       "decode: a request with 3 elements is refused");
	TAP_OK(decode_packed(p_big_id, &m, &err) == -1,
	       "decode: an id above UINT32_MAX is refused");
	TAP_OK(decode_packed(p_neg_id, &m, &err) == -1, "decode: a negative id is refused");
	TAP_OK(decode_packed(p_max_id, &m, &err) == 0 && m.id == UINT32_MAX && m.body == NULL,
	       "decode: id UINT32_MAX and nil params are accepted");
	mc_msg_release(&m);
	TAP_OK(decode_packed(p_int_method, &m, &err) == -1,
	       "decode: a method that is not a string is refused");
	TAP_OK(decode_packed(p_array_params, &m, &err) == -1,
	       "decode: params that are an array are refused");
	TAP_OK(decode_packed(p_bad_type, &m, &err) == -1, "decode: message type 3 is refused");
	TAP_OK(decode_packed(p_not_array, &m, &err) == -1,
	       "decode: a message that is not an array is refused");
	TAP_OK(decode_packed(p_notify_arity, &m, &err) == -1,
	       "decode: a notification with 4 elements is refused");
	TAP_OK(decode_packed(p_resp_str_error, &m, &err) == -1,
	       "decode: a response whose error is a string is refused");
	mc_msg_release(&m);
	mc_msg_release(&m);
	TAP_OK(m.body == NULL && m.method == NULL, "release: is idempotent and clears the message");

	TAP_OK(decode_packed(p_bulk_request, &m, &err) == 0 && m.has_bulk &&
		       m.bulk_len == 1048576 && m.type == MC_MSG_REQUEST && m.id == 9 &&
		       m.method_len == 5 && memcmp(m.method, "write", 5) == 0,
	       "decode: a request with len has a bulk of that size");
	mc_msg_release(&m);
	TAP_OK(decode_packed(p_bulk_response, &m, &err) == 0 && m.has_bulk && m.bulk_len == 0 &&
		       m.type == MC_MSG_RESPONSE && m.error == NULL && mc_msg_error(&m, &err) == 0,
	       "decode: a response result with len 0 has an empty bulk");
	mc_msg_release(&m);
	TAP_OK(decode_packed(p_no_bulk, &m, &err) == 0 && !m.has_bulk,
	       "decode: a request without len has no bulk");
	mc_msg_release(&m);
	TAP_OK(decode_packed(p_bad_len, &m, &err) == -1,
	       "decode: a negative len is refused rather than misframed");
	TAP_OK(decode_packed(p_notify, &m, &err) == 0 && m.type == MC_MSG_NOTIFY &&
		       m.method_len == 9 && memcmp(m.method, "heartbeat", 9) == 0,
	       "decode: a notification carries its method");
	mc_msg_release(&m);
	TAP_OK(decode_packed(p_error, &m, &err) == 0 && m.error != NULL && m.id == 77,
	       "decode: an error response carries its error map");
	mc_err_clear(&err);
	TAP_OK(mc_msg_error(&m, &err) == -1 && err.code == MC_ERR_NOT_FOUND &&
		       strcmp(err.msg, "no key 'abc'") == 0,
	       "mc_msg_error: fills code and msg from the error map");
	mc_msg_release(&m);
}

static void
test_maps(void)
{
	msgpack_sbuffer sb;
	struct mc_msg m;
	struct mc_err err;
	const msgpack_object_array *ids;
	const char *s;
	size_t slen;
	uint64_t u = 7;
	int64_t i = 0;
	bool b = false;
	double d = 0;
	char small[4], big[64];
	int rc;

	pack_sample(&sb);
	rc = mc_msg_decode(&m, sb.data, sb.size, &err);
	msgpack_sbuffer_destroy(&sb);
	TAP_OK(rc == 0 && m.type == MC_MSG_REQUEST && m.id == 42 && m.method_len == 9 &&
		       memcmp(m.method, "put_start", 9) == 0,
	       "pack: a request round-trips through decode");
	if (rc != 0)
		return;
	TAP_OK(mc_map_u64(m.body, "size", &u, &err) == 1 && u == 1u << 20,
	       "map: u64 reads an unsigned field");
	TAP_OK(mc_map_u64(m.body, "checksum", &u, &err) == 1 && u == UINT64_MAX,
	       "map: u64 keeps all 64 bits");
	TAP_OK(mc_map_i64(m.body, "delta", &i, &err) == 1 && i == -12345,
	       "map: i64 reads a negative field");
	TAP_OK(mc_map_i64(m.body, "checksum", &i, &err) == -1,
	       "map: i64 refuses an unsigned value above INT64_MAX");
	TAP_OK(mc_map_bool(m.body, "hard_pin", &b, &err) == 1 && b, "map: bool reads a boolean");
	TAP_OK(mc_map_double(m.body, "ratio", &d, &err) == 1 && d == 0.25,
	       "map: double reads a float");
	TAP_OK(mc_map_double(m.body, "size", &d, &err) == 1 && d == (double)(1u << 20),
	       "map: double accepts an integer");
	TAP_OK(mc_map_str(m.body, "bytes", &s, &slen, &err) == 1 && slen == 3 &&
		       memcmp(s, "a\0b", 3) == 0,
	       "map: str returns bytes with embedded NUL and their length");
	TAP_OK(mc_map_strcpy(m.body, "key", big, sizeof(big), &err) == 1 &&
		       strcmp(big, "layer0/block17") == 0,
	       "map: strcpy copies and terminates");
	memcpy(small, "zzz", 4);
	TAP_OK(mc_map_strcpy(m.body, "key", small, sizeof(small), &err) == -1 &&
		       err.code == MC_ERR_TOO_LARGE,
	       "map: strcpy refuses a string longer than the buffer");
	TAP_OK(mc_map_strcpy(m.body, "bytes", big, sizeof(big), &err) == -1,
	       "map: strcpy refuses a string with an embedded NUL");
	ids = mc_map_array(m.body, "ids");
	TAP_OK(ids != NULL && ids->size == 3 && ids->ptr[2].via.u64 == 70000,
	       "map: array returns the array field");
	TAP_OK(mc_map_array(m.body, "key") == NULL, "map: array of a non-array field is NULL");

	u = 7;
	TAP_OK(mc_map_u64(m.body, "absent", &u, &err) == 0 && u == 7,
	       "map: an absent field is 0 and leaves out untouched");
	TAP_OK(mc_map_u64(m.body, "nothing", &u, &err) == 0 && u == 7,
	       "map: a nil field counts as absent");
	mc_err_clear(&err);
	TAP_OK(mc_map_u64(m.body, "key", &u, &err) == -1 && err.code == MC_ERR_INVALID &&
		       strstr(err.msg, "key") && u == 7,
	       "map: u64 of a string is -1 and names the field");
	TAP_OK(mc_map_u64(m.body, "delta", &u, &err) == -1,
	       "map: u64 of a negative integer is a type error");
	TAP_OK(mc_map_bool(m.body, "size", &b, &err) == -1,
	       "map: bool of an integer is a type error");
	TAP_OK(mc_map_str(m.body, "size", &s, &slen, &err) == -1,
	       "map: str of an integer is a type error");
	TAP_OK(mc_map_double(m.body, "key", &d, &err) == -1,
	       "map: double of a string is a type error");
	TAP_OK(mc_map_get(NULL, "key") == NULL && mc_map_u64(NULL, "key", &u, &err) == 0 &&
		       mc_map_str(NULL, "key", &s, &slen, &err) == 0 &&
		       mc_map_array(NULL, "ids") == NULL,
	       "map: a NULL map reads as empty");
	TAP_OK(mc_map_get(&m.unpacked.data, "key") == NULL &&
		       mc_map_u64(&m.unpacked.data, "key", &u, &err) == 0,
	       "map: a non-map object reads as empty");
	TAP_OK(mc_obj_streq(mc_map_get(m.body, "key"), "layer0/block17") &&
		       !mc_obj_streq(mc_map_get(m.body, "key"), "layer0") &&
		       !mc_obj_streq(mc_map_get(m.body, "size"), "x") && !mc_obj_streq(NULL, "x"),
	       "streq: compares length and bytes, false for non-strings");
	mc_msg_release(&m);
}

static void
test_hostile_map(void)
{
	/* request params map {1: "x", "k": <str with len 1>} */
	static const unsigned char b[] = { 0x94, 0x00, 0x01, 0xa1, 'g',	 0x82, 0x01,
					   0xa1, 'x',  0xa1, 'k',  0xa1, 'v' };
	struct mc_msg m;
	struct mc_err err;
	const char *s;
	size_t n;

	TAP_OK(mc_msg_decode(&m, b, sizeof(b), &err) == 0 &&
		       mc_map_str(m.body, "k", &s, &n, &err) == 1 && n == 1 && s[0] == 'v',
	       "map: non-string keys are skipped, not misread");
	mc_msg_release(&m);
	TAP_OK(mc_msg_decode(&m, b, sizeof(b) - 1, &err) == -1,
	       "decode: a truncated message is refused");
	TAP_OK(mc_msg_decode(&m, b, sizeof(b) + 0, &err) == 0,
	       "decode: the same message decodes again after release");
	mc_msg_release(&m);
}

/* An array of n nils: dd + 4-byte count + n times 0xc0. */
static unsigned char *
nil_array(uint32_t n, size_t *len)
{
	unsigned char *b = malloc(5 + (size_t)n);

	if (b == NULL)
		return NULL;
	b[0] = 0xdd;
	b[1] = (unsigned char)(n >> 24);
	b[2] = (unsigned char)(n >> 16);
	b[3] = (unsigned char)(n >> 8);
	b[4] = (unsigned char)n;
	memset(b + 5, 0xc0, n);
	*len = 5 + (size_t)n;
	return b;
}

static void
test_element_cap(void)
{
	size_t len, msg_len = 0;
	const char *why = NULL;
	unsigned char *b = nil_array(MC_WIRE_MAX_ELEMS, &len);

	TAP_OK(b && mc_wire_check(b, len, 16u << 20, &msg_len, &why) == MC_WIRE_WHOLE &&
		       msg_len == len,
	       "wire: an array of exactly MC_WIRE_MAX_ELEMS elements is accepted");
	free(b);
	b = nil_array(MC_WIRE_MAX_ELEMS + 1, &len);
	TAP_OK(b && mc_wire_check(b, len, 16u << 20, &msg_len, &why) == MC_WIRE_BAD,
	       "wire: one element over MC_WIRE_MAX_ELEMS is refused before decoding");
	free(b);
}

int
main(void)
{
	test_truncation();
	test_lying_counts();
	test_depth();
	test_decode_depth();
	test_invalid_byte();
	test_all_types();
	test_fuzz();
	test_shapes();
	test_maps();
	test_hostile_map();
	test_element_cap();
	return tap_done();
}
