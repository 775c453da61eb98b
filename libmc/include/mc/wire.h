/*
 * The wire codec: one msgpack object per message, checked before it is
 * decoded, plus small helpers to build and read the msgpack-rpc shapes.
 *
 * Messages follow msgpack-rpc:
 *   request       [0, id, method, params]
 *   response      [1, id, error, result]
 *   notification  [2, method, params]
 * params, result and error are maps with string keys; readers ignore
 * fields they do not know. error is nil or {"code": STATUS_NAME,
 * "msg": text}. When params (of a request or notification) or result
 * (of a response) holds the field "len", exactly that many raw bytes
 * follow the msgpack object on the stream: the bulk payload.
 *
 * Nothing is trusted: mc_wire_check() walks the bytes without allocating
 * and accepts a message only when all of it is present within max_size,
 * every declared string/bin/ext length and array/map count is backed by
 * bytes actually present (each element needs at least one byte), and
 * nesting stays within MC_WIRE_MAX_DEPTH. Only then may msgpack-c unpack
 * it, so a hostile header can never make it allocate.
 */
#ifndef MC_WIRE_H
#define MC_WIRE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mc/err.h"

#define MC_WIRE_MAX_DEPTH 32
/* Array elements plus map keys and values in one message (decode memory). */
#define MC_WIRE_MAX_ELEMS (1u << 20)
#define MC_WIRE_DEFAULT_MAX_MSG (16u << 20) /* 16 MiB of msgpack (bulk not counted) */

enum mc_msg_type { MC_MSG_REQUEST = 0, MC_MSG_RESPONSE = 1, MC_MSG_NOTIFY = 2 };

enum mc_wire_verdict {
	MC_WIRE_BAD = -1,  /* malformed, oversized or too deep: close the stream */
	MC_WIRE_MORE = 0,  /* not all there yet (and not over max_size) */
	MC_WIRE_WHOLE = 1, /* one whole message of *msg_len bytes at buf */
};

/*
 * Check the first msgpack object in buf[0..len). On MC_WIRE_WHOLE,
 * *msg_len is its size; on MC_WIRE_BAD, *why says what was wrong
 * (a static string). A message is BAD as soon as it is known to need
 * more than max_size bytes, even if those bytes have not arrived.
 */
int mc_wire_check(const void *buf, size_t len, size_t max_size, size_t *msg_len, const char **why);

/*
 * A decoded message. Pointers point into the unpacked zone (and strings
 * are NOT NUL-terminated); they die with mc_msg_release(). Copy what you keep.
 */
struct mc_msg {
	int type; /* enum mc_msg_type */
	uint32_t id;
	const char *method; /* request/notify */
	size_t method_len;
	const msgpack_object *body;  /* params or result (a map), or NULL */
	const msgpack_object *error; /* response error map, or NULL when ok */
	bool has_bulk;
	uint64_t bulk_len; /* "len" in body when has_bulk */
	msgpack_unpacked unpacked;
};

/*
 * Check then decode exactly one message occupying buf[0..len) (len from
 * mc_wire_check) and validate the msgpack-rpc shape. -1 with err on a
 * message that is not a well-formed request/response/notification.
 */
int mc_msg_decode(struct mc_msg *m, const void *buf, size_t len, struct mc_err *err);
void mc_msg_release(struct mc_msg *m);
/* For a response: fill err from the error map (code/msg) and return -1; 0 when ok. */
int mc_msg_error(const struct mc_msg *m, struct mc_err *err);

/* ---- building messages (over a msgpack_sbuffer-backed packer) ---- */

/* Begin [0, id, method, <caller packs params map>]. */
void mc_pack_request(msgpack_packer *pk, uint32_t id, const char *method);
/* Begin [2, method, <caller packs params map>]. */
void mc_pack_notify(msgpack_packer *pk, const char *method);
/* Begin [1, id, nil, <caller packs result map>]. */
void mc_pack_response_ok(msgpack_packer *pk, uint32_t id);
/* Whole [1, id, {"code":..., "msg":...}, nil]. */
void mc_pack_response_err(msgpack_packer *pk, uint32_t id, int code, const char *msg);

/*
 * Field packing runs for every field of every reply, so these are inline:
 * with a literal name the compiler folds strlen, and a short string goes
 * out in one write (header and body together) instead of two.
 */
static inline void
mc_pack_strn(msgpack_packer *pk, const char *s, size_t len)
{
	if (len < 32) {
		char b[32];

		b[0] = (char)(0xa0 | len); /* fixstr */
		memcpy(b + 1, s, len);
		pk->callback(pk->data, b, len + 1);
		return;
	}
	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, s, len);
}

/* NULL packs nil. */
static inline void
mc_pack_cstr(msgpack_packer *pk, const char *s)
{
	if (s == NULL)
		msgpack_pack_nil(pk);
	else
		mc_pack_strn(pk, s, strlen(s));
}

/* Map entries: key then value. mc_pack_key packs just the key. */
static inline void
mc_pack_key(msgpack_packer *pk, const char *k)
{
	mc_pack_cstr(pk, k);
}

static inline void
mc_pack_kv_str(msgpack_packer *pk, const char *k, const char *v)
{
	mc_pack_key(pk, k);
	mc_pack_cstr(pk, v);
}

static inline void
mc_pack_kv_strn(msgpack_packer *pk, const char *k, const char *v, size_t len)
{
	mc_pack_key(pk, k);
	mc_pack_strn(pk, v, len);
}

static inline void
mc_pack_kv_u64(msgpack_packer *pk, const char *k, uint64_t v)
{
	mc_pack_key(pk, k);
	msgpack_pack_uint64(pk, v);
}

static inline void
mc_pack_kv_i64(msgpack_packer *pk, const char *k, int64_t v)
{
	mc_pack_key(pk, k);
	msgpack_pack_int64(pk, v);
}

static inline void
mc_pack_kv_bool(msgpack_packer *pk, const char *k, bool v)
{
	mc_pack_key(pk, k);
	if (v)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

void mc_pack_kv_double(msgpack_packer *pk, const char *k, double v);

/* ---- reading maps (all tolerate map == NULL or a non-map: "absent") ---- */

const msgpack_object *mc_map_get(const msgpack_object *map, const char *key);
/*
 * Typed getters: 1 found and typed right, 0 absent (out untouched),
 * -1 present with the wrong type (err says which field).
 */
int mc_map_u64(const msgpack_object *map, const char *key, uint64_t *out, struct mc_err *err);
int mc_map_i64(const msgpack_object *map, const char *key, int64_t *out, struct mc_err *err);
int mc_map_bool(const msgpack_object *map, const char *key, bool *out, struct mc_err *err);
int mc_map_double(const msgpack_object *map, const char *key, double *out, struct mc_err *err);
/* Strings: pointer into the message (not NUL-terminated) and length. */
int mc_map_str(const msgpack_object *map, const char *key, const char **s, size_t *len,
	       struct mc_err *err);
/* Copy a string field into buf (NUL-terminated); -1 if longer than cap-1. */
int mc_map_strcpy(const msgpack_object *map, const char *key, char *buf, size_t cap,
		  struct mc_err *err);
/* Array field: pointer to its msgpack_object array, or NULL. */
const msgpack_object_array *mc_map_array(const msgpack_object *map, const char *key);
/* Whether a msgpack str object equals a C string. */
bool mc_obj_streq(const msgpack_object *o, const char *s);

#endif
