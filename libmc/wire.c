/*
 * The wire codec: a bounds-checked walk over raw msgpack that runs before
 * msgpack-c ever sees the bytes, the msgpack-rpc shape check, and small
 * helpers to pack and read messages.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mc/wire.h"

/* ---- the pre-pass ---- */

static uint64_t
load_be(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * How one msgpack type byte is laid out. A header is `hdr` bytes long
 * (type byte included); `lenb` of them, right after the type byte, give a
 * big-endian length or count. kind says what that number means.
 */
enum tok_kind {
	TOK_FIXED,  /* the whole object is hdr bytes */
	TOK_BYTES,  /* str/bin/ext: hdr + length bytes */
	TOK_ARRAY,  /* count elements follow */
	TOK_MAP,    /* count key/value pairs follow */
	TOK_INVALID /* 0xc1, never used */
};

struct tok {
	enum tok_kind kind;
	size_t hdr;
	size_t lenb; /* bytes of length/count after the type byte */
	uint64_t n;  /* inline length/count (fix* forms) when lenb == 0 */
};

static struct tok
classify(unsigned char b)
{
	struct tok t = { TOK_FIXED, 1, 0, 0 };

	if (b <= 0x7f || b >= 0xe0)
		return t; /* positive and negative fixint */
	if (b <= 0x8f)
		return (struct tok){ TOK_MAP, 1, 0, b & 0x0fu };
	if (b <= 0x9f)
		return (struct tok){ TOK_ARRAY, 1, 0, b & 0x0fu };
	if (b <= 0xbf)
		return (struct tok){ TOK_BYTES, 1, 0, b & 0x1fu };
	switch (b) {
	case 0xc0: /* nil */
	case 0xc2: /* false */
	case 0xc3: /* true */
		return t;
	case 0xc4:
		return (struct tok){ TOK_BYTES, 2, 1, 0 }; /* bin8 */
	case 0xc5:
		return (struct tok){ TOK_BYTES, 3, 2, 0 }; /* bin16 */
	case 0xc6:
		return (struct tok){ TOK_BYTES, 5, 4, 0 }; /* bin32 */
	/* ext: the length, then one type byte that is part of the header */
	case 0xc7:
		return (struct tok){ TOK_BYTES, 3, 1, 0 }; /* ext8 */
	case 0xc8:
		return (struct tok){ TOK_BYTES, 4, 2, 0 }; /* ext16 */
	case 0xc9:
		return (struct tok){ TOK_BYTES, 6, 4, 0 }; /* ext32 */
	case 0xca:
		return (struct tok){ TOK_FIXED, 5, 0, 0 }; /* float32 */
	case 0xcb:
		return (struct tok){ TOK_FIXED, 9, 0, 0 }; /* float64 */
	case 0xcc:
		return (struct tok){ TOK_FIXED, 2, 0, 0 }; /* uint8 */
	case 0xcd:
		return (struct tok){ TOK_FIXED, 3, 0, 0 }; /* uint16 */
	case 0xce:
		return (struct tok){ TOK_FIXED, 5, 0, 0 }; /* uint32 */
	case 0xcf:
		return (struct tok){ TOK_FIXED, 9, 0, 0 }; /* uint64 */
	case 0xd0:
		return (struct tok){ TOK_FIXED, 2, 0, 0 }; /* int8 */
	case 0xd1:
		return (struct tok){ TOK_FIXED, 3, 0, 0 }; /* int16 */
	case 0xd2:
		return (struct tok){ TOK_FIXED, 5, 0, 0 }; /* int32 */
	case 0xd3:
		return (struct tok){ TOK_FIXED, 9, 0, 0 }; /* int64 */
	/* fixext N: type byte, ext type byte, N data bytes */
	case 0xd4:
		return (struct tok){ TOK_FIXED, 3, 0, 0 };
	case 0xd5:
		return (struct tok){ TOK_FIXED, 4, 0, 0 };
	case 0xd6:
		return (struct tok){ TOK_FIXED, 6, 0, 0 };
	case 0xd7:
		return (struct tok){ TOK_FIXED, 10, 0, 0 };
	case 0xd8:
		return (struct tok){ TOK_FIXED, 18, 0, 0 };
	case 0xd9:
		return (struct tok){ TOK_BYTES, 2, 1, 0 }; /* str8 */
	case 0xda:
		return (struct tok){ TOK_BYTES, 3, 2, 0 }; /* str16 */
	case 0xdb:
		return (struct tok){ TOK_BYTES, 5, 4, 0 }; /* str32 */
	case 0xdc:
		return (struct tok){ TOK_ARRAY, 3, 2, 0 }; /* array16 */
	case 0xdd:
		return (struct tok){ TOK_ARRAY, 5, 4, 0 }; /* array32 */
	case 0xde:
		return (struct tok){ TOK_MAP, 3, 2, 0 }; /* map16 */
	case 0xdf:
		return (struct tok){ TOK_MAP, 5, 4, 0 }; /* map32 */
	default:
		return (struct tok){ TOK_INVALID, 1, 0, 0 };
	}
}

static int
bad(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return MC_WIRE_BAD;
}

/*
 * Walk one object without allocating. stack[] holds, for each open
 * container, how many elements it still owes; `pending` is their sum.
 * Every owed element needs at least one more byte, so pos + pending is a
 * lower bound on the message size: the moment it passes max_size the
 * verdict is BAD, before waiting for bytes that a liar never sends.
 * pos + pending never exceeds max_size past a check, so no sum overflows.
 */
int
mc_wire_check(const void *buf, size_t len, size_t max_size, size_t *msg_len, const char **why)
{
	const unsigned char *p = buf;
	uint64_t stack[MC_WIRE_MAX_DEPTH + 1];
	uint64_t pending = 1, need, elems = 0;
	size_t pos = 0;
	int sp = 0; /* open containers; stack[0] is the top-level slot */

	if (p == NULL && len > 0)
		return bad(why, "no buffer");
	stack[0] = 1;
	for (;;) {
		struct tok t;
		uint64_t n;

		while (sp > 0 && stack[sp] == 0)
			sp--;
		if (stack[sp] == 0)
			break; /* the top-level object is complete */
		stack[sp]--;
		pending--;

		/* The type byte itself. */
		if ((uint64_t)pos + 1 + pending > max_size)
			return bad(why, "message larger than the maximum size");
		if (pos >= len)
			return MC_WIRE_MORE;
		t = classify(p[pos]);
		if (t.kind == TOK_INVALID)
			return bad(why, "invalid msgpack type byte 0xc1");

		/* The rest of the header, length bytes included. */
		if ((uint64_t)pos + t.hdr + pending > max_size)
			return bad(why, "message larger than the maximum size");
		if (len - pos < t.hdr)
			return MC_WIRE_MORE;
		n = t.lenb ? load_be(p + pos + 1, t.lenb) : t.n;

		switch (t.kind) {
		case TOK_FIXED:
			pos += t.hdr;
			break;
		case TOK_BYTES:
			/* n <= 2^32 and pos + hdr + pending <= max_size. */
			need = (uint64_t)pos + t.hdr + n;
			if (need + pending > max_size)
				return bad(why, "declared length exceeds the "
						"maximum message size");
			if (need > len)
				return MC_WIRE_MORE;
			pos = (size_t)need;
			break;
		case TOK_ARRAY:
		case TOK_MAP:
			if (t.kind == TOK_MAP)
				n *= 2;
			if (sp >= MC_WIRE_MAX_DEPTH)
				return bad(why, "nesting deeper than the limit");
			if ((uint64_t)pos + t.hdr + pending + n > max_size)
				return bad(why, "declared count exceeds the "
						"maximum message size");
			/*
			 * msgpack-c spends a msgpack_object (24 bytes) on
			 * every element: cap their total so that decoding
			 * one message costs bounded memory.
			 */
			elems += n;
			if (elems > MC_WIRE_MAX_ELEMS)
				return bad(why, "more elements than the limit");
			pos += t.hdr;
			stack[++sp] = n;
			pending += n;
			break;
		case TOK_INVALID:
			return bad(why, "invalid msgpack type byte");
		}
	}
	if (msg_len != NULL)
		*msg_len = pos;
	return MC_WIRE_WHOLE;
}

/* ---- decoding ---- */

static bool
is_uint(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
}

static bool
is_map_or_nil(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_MAP || o->type == MSGPACK_OBJECT_NIL;
}

static const msgpack_object *
map_or_null(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_MAP ? o : NULL;
}

static int
decode_shape(struct mc_msg *m, struct mc_err *err)
{
	const msgpack_object *root = &m->unpacked.data, *v;
	const msgpack_object *len;
	uint32_t size;

	if (root->type != MSGPACK_OBJECT_ARRAY)
		return mc_err_set(err, MC_ERR_PROTO, "message is not an array");
	v = root->via.array.ptr;
	size = root->via.array.size;
	if (size < 3 || !is_uint(&v[0]))
		return mc_err_set(err, MC_ERR_PROTO, "message is not a msgpack-rpc array");
	switch (v[0].via.u64) {
	case MC_MSG_REQUEST:
	case MC_MSG_RESPONSE:
		if (size != 4)
			return mc_err_set(err, MC_ERR_PROTO, "%s has %" PRIu32 " elements, want 4",
					  v[0].via.u64 ? "response" : "request", size);
		if (!is_uint(&v[1]) || v[1].via.u64 > UINT32_MAX)
			return mc_err_set(err, MC_ERR_PROTO,
					  "message id is not a 32-bit unsigned "
					  "integer");
		m->id = (uint32_t)v[1].via.u64;
		if (v[0].via.u64 == MC_MSG_RESPONSE) {
			if (!is_map_or_nil(&v[2]) || !is_map_or_nil(&v[3]))
				return mc_err_set(err, MC_ERR_PROTO,
						  "response error and result "
						  "must be maps or nil");
			m->type = MC_MSG_RESPONSE;
			m->error = map_or_null(&v[2]);
			m->body = map_or_null(&v[3]);
			break;
		}
		m->type = MC_MSG_REQUEST;
		v++; /* method and params sit one slot later than in notify */
		     /* fallthrough */
	case MC_MSG_NOTIFY:
		if (v == root->via.array.ptr) {
			if (size != 3)
				return mc_err_set(err, MC_ERR_PROTO,
						  "notification has %" PRIu32 " elements, want 3",
						  size);
			m->type = MC_MSG_NOTIFY;
		}
		if (v[1].type != MSGPACK_OBJECT_STR || v[1].via.str.size == 0)
			return mc_err_set(err, MC_ERR_PROTO, "method is not a non-empty string");
		if (!is_map_or_nil(&v[2]))
			return mc_err_set(err, MC_ERR_PROTO, "params must be a map or nil");
		m->method = v[1].via.str.ptr;
		m->method_len = v[1].via.str.size;
		m->body = map_or_null(&v[2]);
		break;
	default:
		return mc_err_set(err, MC_ERR_PROTO, "unknown message type %" PRIu64, v[0].via.u64);
	}
	/*
	 * A "len" the reader cannot use would desynchronise the stream (the
	 * bulk bytes would be parsed as the next message), so refuse it.
	 */
	len = mc_map_get(m->body, "len");
	if (len != NULL && len->type != MSGPACK_OBJECT_NIL) {
		if (!is_uint(len))
			return mc_err_set(err, MC_ERR_PROTO,
					  "field 'len' is not an unsigned "
					  "integer");
		m->has_bulk = true;
		m->bulk_len = len->via.u64;
	}
	return 0;
}

static void
msg_reset(struct mc_msg *m)
{
	memset(m, 0, sizeof(*m));
	msgpack_unpacked_init(&m->unpacked);
}

int
mc_msg_decode(struct mc_msg *m, const void *buf, size_t len, struct mc_err *err)
{
	const char *why = "truncated message";
	size_t ml = 0, off = 0;
	msgpack_zone *zone;
	char *copy;
	int v;

	if (m == NULL)
		return mc_err_set(err, MC_ERR_INTERNAL, "no message to decode into");
	msg_reset(m);
	v = mc_wire_check(buf, len, len, &ml, &why);
	if (v != MC_WIRE_WHOLE)
		return mc_err_set(err, MC_ERR_PROTO, "malformed message: %s", why);
	if (ml != len)
		return mc_err_set(err, MC_ERR_PROTO, "malformed message: %zu trailing bytes",
				  len - ml);
	/*
	 * msgpack-c points strings into the input. Decode a private copy
	 * kept in the message's own zone, so the caller may drop or reuse
	 * its buffer at once; sizing the first chunk for the copy plus the
	 * usual chunk keeps a small message to a single allocation.
	 */
	zone = msgpack_zone_new(len + MSGPACK_ZONE_CHUNK_SIZE);
	if (zone == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "cannot decode message: out of memory");
	m->unpacked.zone = zone;
	copy = msgpack_zone_malloc_no_align(zone, len ? len : 1);
	if (copy == NULL) {
		mc_err_set(err, MC_ERR_NO_SPACE, "cannot decode message: out of memory");
		goto fail;
	}
	memcpy(copy, buf, len);
	if (msgpack_unpack(copy, len, &off, zone, &m->unpacked.data) != MSGPACK_UNPACK_SUCCESS ||
	    off != len) {
		mc_err_set(err, MC_ERR_PROTO, "malformed message: unpack failed");
		goto fail;
	}
	if (decode_shape(m, err) < 0)
		goto fail;
	return 0;
fail:
	mc_msg_release(m);
	return -1;
}

void
mc_msg_release(struct mc_msg *m)
{
	if (m == NULL)
		return;
	msgpack_unpacked_destroy(&m->unpacked);
	msg_reset(m);
}

int
mc_msg_error(const struct mc_msg *m, struct mc_err *err)
{
	const char *code = NULL, *msg = NULL;
	size_t code_len = 0, msg_len = 0;
	int status;

	if (m == NULL || m->type != MC_MSG_RESPONSE || m->error == NULL)
		return 0;
	if (mc_map_str(m->error, "code", &code, &code_len, NULL) != 1)
		return mc_err_set(err, MC_ERR_PROTO, "malformed error in response: no code");
	if (mc_map_str(m->error, "msg", &msg, &msg_len, NULL) != 1) {
		msg = "";
		msg_len = 0;
	}
	status = mc_status_from_name(code, code_len);
	/* An error map must mean failure, whatever the peer put in it. */
	if (status == MC_OK)
		status = MC_ERR_PROTO;
	if (msg_len > MC_ERR_MSG_MAX)
		msg_len = MC_ERR_MSG_MAX;
	if (msg_len == 0)
		return mc_err_set(err, status, "%.*s", code_len > 64 ? 64 : (int)code_len, code);
	return mc_err_set(err, status, "%.*s", (int)msg_len, msg);
}

/* ---- packing ---- */

void
mc_pack_request(msgpack_packer *pk, uint32_t id, const char *method)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, MC_MSG_REQUEST);
	msgpack_pack_uint32(pk, id);
	mc_pack_cstr(pk, method);
}

void
mc_pack_notify(msgpack_packer *pk, const char *method)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint8(pk, MC_MSG_NOTIFY);
	mc_pack_cstr(pk, method);
}

void
mc_pack_response_ok(msgpack_packer *pk, uint32_t id)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, MC_MSG_RESPONSE);
	msgpack_pack_uint32(pk, id);
	msgpack_pack_nil(pk);
}

void
mc_pack_response_err(msgpack_packer *pk, uint32_t id, int code, const char *msg)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, MC_MSG_RESPONSE);
	msgpack_pack_uint32(pk, id);
	msgpack_pack_map(pk, 2);
	mc_pack_kv_str(pk, "code", mc_status_name(code));
	mc_pack_kv_str(pk, "msg", msg != NULL ? msg : "");
	msgpack_pack_nil(pk);
}

void
mc_pack_kv_double(msgpack_packer *pk, const char *k, double v)
{
	mc_pack_cstr(pk, k);
	msgpack_pack_double(pk, v);
}

/* ---- reading maps ---- */

static bool
str_is(const msgpack_object *o, const char *s, size_t n)
{
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       (n == 0 || memcmp(o->via.str.ptr, s, n) == 0);
}

bool
mc_obj_streq(const msgpack_object *o, const char *s)
{
	return o != NULL && s != NULL && str_is(o, s, strlen(s));
}

/* Every decoder looks fields up here: the name is measured once, not once
 * per entry of the map. */
const msgpack_object *
mc_map_get(const msgpack_object *map, const char *key)
{
	size_t n;
	uint32_t i;

	if (map == NULL || key == NULL || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	n = strlen(key);
	for (i = 0; i < map->via.map.size; i++) {
		const msgpack_object_kv *kv = &map->via.map.ptr[i];

		if (str_is(&kv->key, key, n))
			return &kv->val;
	}
	return NULL;
}

/*
 * A nil value counts as absent: writers may send nil for "not set", and
 * treating it as a type error would reject harmless messages.
 */
static const msgpack_object *
field(const msgpack_object *map, const char *key)
{
	const msgpack_object *o = mc_map_get(map, key);

	return o != NULL && o->type != MSGPACK_OBJECT_NIL ? o : NULL;
}

static int
wrong_type(struct mc_err *err, const char *key, const char *want)
{
	return mc_err_set(err, MC_ERR_INVALID, "field '%s' must be %s", key, want);
}

int
mc_map_u64(const msgpack_object *map, const char *key, uint64_t *out, struct mc_err *err)
{
	const msgpack_object *o = field(map, key);

	if (o == NULL)
		return 0;
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return wrong_type(err, key, "an unsigned integer");
	if (out != NULL)
		*out = o->via.u64;
	return 1;
}

int
mc_map_i64(const msgpack_object *map, const char *key, int64_t *out, struct mc_err *err)
{
	const msgpack_object *o = field(map, key);

	if (o == NULL)
		return 0;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		if (out != NULL)
			*out = o->via.i64;
		return 1;
	}
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return wrong_type(err, key, "an integer");
	if (o->via.u64 > INT64_MAX)
		return wrong_type(err, key, "an integer below 2^63");
	if (out != NULL)
		*out = (int64_t)o->via.u64;
	return 1;
}

int
mc_map_bool(const msgpack_object *map, const char *key, bool *out, struct mc_err *err)
{
	const msgpack_object *o = field(map, key);

	if (o == NULL)
		return 0;
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return wrong_type(err, key, "a boolean");
	if (out != NULL)
		*out = o->via.boolean;
	return 1;
}

int
mc_map_double(const msgpack_object *map, const char *key, double *out, struct mc_err *err)
{
	const msgpack_object *o = field(map, key);
	double v;

	if (o == NULL)
		return 0;
	/* Integers are accepted: many writers pack 2.0 as 2. */
	switch (o->type) {
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		v = o->via.f64;
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		v = (double)o->via.u64;
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		v = (double)o->via.i64;
		break;
	default:
		return wrong_type(err, key, "a number");
	}
	if (out != NULL)
		*out = v;
	return 1;
}

int
mc_map_str(const msgpack_object *map, const char *key, const char **s, size_t *len,
	   struct mc_err *err)
{
	const msgpack_object *o = field(map, key);

	if (o == NULL)
		return 0;
	/* Keys are byte strings; accept bin from writers that say so. */
	if (o->type == MSGPACK_OBJECT_STR) {
		if (s != NULL)
			*s = o->via.str.ptr;
		if (len != NULL)
			*len = o->via.str.size;
		return 1;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		if (s != NULL)
			*s = o->via.bin.ptr;
		if (len != NULL)
			*len = o->via.bin.size;
		return 1;
	}
	return wrong_type(err, key, "a string");
}

int
mc_map_strcpy(const msgpack_object *map, const char *key, char *buf, size_t cap, struct mc_err *err)
{
	const char *s;
	size_t n;
	int rc;

	rc = mc_map_str(map, key, &s, &n, err);
	if (rc <= 0)
		return rc;
	if (buf == NULL || cap == 0 || n > cap - 1)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "field '%s' is longer than %zu bytes", key,
				  cap ? cap - 1 : 0);
	/* A C string cannot carry a NUL; truncating silently would alias. */
	if (n > 0 && memchr(s, '\0', n) != NULL)
		return mc_err_set(err, MC_ERR_INVALID, "field '%s' contains a NUL byte", key);
	if (n > 0)
		memcpy(buf, s, n);
	buf[n] = '\0';
	return 1;
}

const msgpack_object_array *
mc_map_array(const msgpack_object *map, const char *key)
{
	const msgpack_object *o = mc_map_get(map, key);

	if (o == NULL || o->type != MSGPACK_OBJECT_ARRAY)
		return NULL;
	return &o->via.array;
}
